/*
 * brindlectl datastore migrate: moving a cluster's data from etcd to the
 * Kubernetes datastore, as calicoctl's command of that name does.
 *
 *   lock     etcd: writes the migration lock; every write to the store is
 *            refused from then on (ds_set_locked: brindle-cni, brindle-ipam,
 *            brindlectl alike), so the export is the last word.
 *   export   etcd, locked: the kinds the Kubernetes datastore keeps as
 *            custom resources, IPAM included, as one YAML stream.
 *   import   Kubernetes: creates the export's objects, refusing a target that
 *            already holds any of those kinds unless --force.
 *   unlock   etcd: removes the lock (a rollback, or the end of the move).
 *
 * What is not migrated, and why, is said in the export's header and in
 * docs/datastore.md ("Migrating from etcd to Kubernetes").
 */
#include "ctl.h"

#include <brindle/core/yaml.h>
#include <brindle/sys/strbuf_file.h>

#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <time.h>

/* What moves, in the order it is exported and imported: configuration, policy, then IPAM. */
static const enum br_kind_id migrated[] = {
	KIND_IPPOOL,
	KIND_IPRESERVATION,
	KIND_IPAMCONFIGURATION,
	KIND_BGPCONFIGURATION,
	KIND_BGPFILTER,
	KIND_BGPPEER,
	KIND_FELIXCONFIGURATION,
	KIND_KUBECONTROLLERSCONFIGURATION,
	KIND_TIER,
	KIND_GLOBALNETWORKPOLICY,
	KIND_NETWORKPOLICY,
	KIND_STAGEDGLOBALNETWORKPOLICY,
	KIND_STAGEDNETWORKPOLICY,
	KIND_STAGEDK8SNETWORKPOLICY,
	KIND_GLOBALNETWORKSET,
	KIND_NETWORKSET,
	KIND_HOSTENDPOINT,
	KIND_CALICONODESTATUS,
	KIND_CLUSTERINFORMATION,
	KIND_IPAMBLOCK,
	KIND_BLOCKAFFINITY,
	KIND_IPAMHANDLE,
};

static const char *const not_migrated_note[] = {
	"Not exported, because on the Kubernetes datastore they are not stored by Brindle:",
	"  Node, WorkloadEndpoint and Profile are derived from Kubernetes' Nodes, Pods,",
	"  Namespaces and ServiceAccounts (a Node's BGP settings come from its",
	"  projectcalico.org/* annotations);",
	"  Namespace, Service, EndpointSlice and networking.k8s.io NetworkPolicy are",
	"  Kubernetes' own objects and live in the Kubernetes API already.",
};

static int migrated_index(const struct br_kind *k)
{
	for (size_t i = 0; i < ARRAY_SIZE(migrated); i++)
		if (migrated[i] == k->id)
			return (int)i;
	return -1;
}

static bool is_type(struct ctl *c, const char *type)
{
	return c->cfg.type && streq(c->cfg.type, type);
}

/* The datastore of @type, or NULL with the error said. */
static struct ds *ds_of_type(struct ctl *c, const char *cmd, const char *type, const char *why)
{
	struct ds *d = ctl_ds(c);
	if (d && !is_type(c, type)) {
		ctl_error("datastore migrate %s %s (--datastore %s); this is the %s datastore", cmd,
			  why, type, c->cfg.type);
		return NULL;
	}
	return d;
}

static int no_args(const char *cmd, int argc, char **argv)
{
	if (argc > 1) {
		ctl_error("datastore migrate %s: unexpected argument \"%s\"", cmd, argv[1]);
		return -1;
	}
	return 0;
}

static int cmd_lock(struct ctl *c, int argc, char **argv, bool lock)
{
	const char *cmd = lock ? "lock" : "unlock";
	if (no_args(cmd, argc, argv) < 0)
		return CTL_USAGE;
	struct ds *d = ds_of_type(c, cmd, "etcdv3", "works on the etcd datastore");
	if (!d)
		return CTL_FAIL;
	bool changed;
	if (ds_set_locked(d, lock, &changed) < 0) {
		ctl_error("%s", ds_last_error(d));
		return CTL_FAIL;
	}
	if (lock)
		printf("%s: writes to the etcd datastore are refused until brindlectl datastore "
		       "migrate unlock\n",
		       changed ? "Datastore locked" : "Datastore already locked");
	else
		printf("%s\n", changed ? "Datastore unlocked" : "Datastore was not locked");
	return CTL_OK;
}

/* --- export ------------------------------------------------------------------------------ */

/* On Kubernetes a Node's BGP settings are its annotations: say which nodes need which. */
static void warn_node_bgp(struct ds *d)
{
	struct br_object **nodes;
	size_t n;
	if (ds_list(d, model_kind(KIND_NODE), NULL, &nodes, &n) < 0) {
		fprintf(stderr,
			"Warning: could not read the Nodes to check their BGP settings: %s\n",
			ds_last_error(d));
		return;
	}
	bool header = false;
	for (size_t i = 0; i < n; i++) {
		const struct br_node_bgp *bgp = ((struct br_node *)nodes[i])->spec.bgp;
		if (!bgp)
			continue;
		struct strbuf anns = STRBUF_INIT;
		sb_init(&anns);
		if (bgp->ipv4_address)
			sb_addf(&anns, " projectcalico.org/IPv4Address=%s", bgp->ipv4_address);
		if (bgp->ipv6_address)
			sb_addf(&anns, " projectcalico.org/IPv6Address=%s", bgp->ipv6_address);
		if (bgp->ipv4_ipip_tunnel_addr)
			sb_addf(&anns, " projectcalico.org/IPv4IPIPTunnelAddr=%s",
				bgp->ipv4_ipip_tunnel_addr);
		if (bgp->as_number.set)
			sb_addf(&anns, " projectcalico.org/ASNumber=%" PRIu32, bgp->as_number.v);
		if (bgp->route_reflector_cluster_id)
			sb_addf(&anns, " projectcalico.org/RouteReflectorClusterID=%s",
				bgp->route_reflector_cluster_id);
		if (anns.len) {
			if (!header)
				fprintf(stderr,
					"Warning: these Nodes have BGP settings (spec.bgp), which "
					"are not exported: on Kubernetes Brindle reads them from "
					"the "
					"Node's annotations. Set them with:\n");
			header = true;
			fprintf(stderr, "  kubectl annotate node %s%s\n", nodes[i]->meta.name,
				sb_str(&anns));
		}
		sb_free(&anns);
	}
	model_free_all(nodes, n);
}

static int cmd_export(struct ctl *c, int argc, char **argv)
{
	if (no_args("export", argc, argv) < 0)
		return CTL_USAGE;
	struct ds *d = ds_of_type(c, "export", "etcdv3", "reads the etcd datastore");
	if (!d)
		return CTL_FAIL;
	bool locked;
	if (ds_is_locked(d, &locked) < 0) {
		ctl_error("%s", ds_last_error(d));
		return CTL_FAIL;
	}
	if (!locked) {
		ctl_error("the datastore is not locked; run brindlectl datastore migrate lock "
			  "first, so that nothing changes after the export");
		return CTL_FAIL;
	}
	/* Everything is read before anything is printed: a failure prints no partial export. */
	struct br_object **objs[ARRAY_SIZE(migrated)] = { 0 };
	size_t n[ARRAY_SIZE(migrated)] = { 0 };
	int ret = CTL_OK;
	for (size_t i = 0; i < ARRAY_SIZE(migrated); i++)
		if (ds_list(d, model_kind(migrated[i]), NULL, &objs[i], &n[i]) < 0) {
			ctl_error("%s", ds_last_error(d));
			ret = CTL_FAIL;
			goto out;
		}

	char ts[32];
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm);
	struct strbuf sb = STRBUF_INIT;
	sb_init(&sb);
	sb_addf(&sb,
		"# Brindle datastore export from etcd, %s (brindlectl datastore migrate export).\n",
		ts);
	sb_adds(&sb, "# Import it with: brindlectl --datastore kubernetes datastore migrate import "
		     "-f FILE\n");
	for (size_t i = 0; i < ARRAY_SIZE(not_migrated_note); i++)
		sb_addf(&sb, "# %s\n", not_migrated_note[i]);
	struct arena *a = arena_new();
	for (size_t i = 0; i < ARRAY_SIZE(migrated); i++)
		for (size_t j = 0; j < n[i]; j++) {
			/* A revision of etcd means nothing to the target (and a create refuses it).
			 */
			objs[i][j]->meta.resource_version = NULL;
			sb_adds(&sb, "---\n");
			yaml_write(&sb, model_encode(a, objs[i][j]));
		}
	arena_free(a);
	fputs(sb_str(&sb), stdout);
	sb_free(&sb);
	for (size_t i = 0; i < ARRAY_SIZE(migrated); i++)
		if (n[i])
			fprintf(stderr, "%s: %zu exported\n", model_kind(migrated[i])->kind, n[i]);
	warn_node_bgp(d);
out:
	for (size_t i = 0; i < ARRAY_SIZE(migrated); i++)
		model_free_all(objs[i], n[i]);
	return ret;
}

/* --- import ------------------------------------------------------------------------------ */

struct objs {
	struct br_object **v;
	size_t n;
};

/* The export's objects (IPAM kinds admitted), in the file's order; -1 with the errors said. */
static int read_export(const char *path, struct objs *out)
{
	const char *source = streq(path, "-") ? "<stdin>" : path;
	struct strbuf text = STRBUF_INIT;
	sb_init(&text);
	struct model_errors errs = { 0 };
	int r = sb_read_file_max(&text, path, MODEL_MAX_INPUT);
	if (r == -EFBIG)
		model_errors_add(&errs,
				 "%s: larger than %u MiB, the most brindlectl reads from one "
				 "file or stream",
				 source, MODEL_MAX_INPUT >> 20);
	else if (r < 0)
		model_errors_add(&errs, "%s: %s", source, strerror(-r));
	else if (model_read_internal(source, text.buf, text.len, NULL, &out->v, &out->n, &errs) ==
		 0)
		for (size_t i = 0; i < out->n; i++)
			if (migrated_index(out->v[i]->kind) < 0) {
				char ref[256];
				model_errors_add(&errs,
						 "%s: %s: %s is not imported (Brindle does not "
						 "store it on the Kubernetes datastore)",
						 source,
						 ctl_resource_ref(out->v[i], ref, sizeof(ref)),
						 out->v[i]->kind->kind);
			}
	sb_free(&text);
	if (!errs.n)
		return 0;
	for (size_t i = 0; i < errs.n; i++)
		fprintf(stderr, "%s\n", errs.v[i]);
	ctl_error("%zu problem%s in the export; nothing was imported", errs.n,
		  errs.n == 1 ? "" : "s");
	model_errors_clear(&errs);
	model_free_all(out->v, out->n);
	*out = (struct objs){ 0 };
	return -1;
}

/* What the target holds already of the migrated kinds, "IPPool 2, BGPPeer 1"; -1 on failure. */
static int existing(struct ds *d, struct strbuf *held)
{
	for (size_t i = 0; i < ARRAY_SIZE(migrated); i++) {
		struct br_object **objs;
		size_t n;
		if (ds_list(d, model_kind(migrated[i]), NULL, &objs, &n) < 0) {
			ctl_error("cannot check what the target holds: %s", ds_last_error(d));
			return -1;
		}
		if (n)
			sb_addf(held, "%s%s %zu", held->len ? ", " : "",
				model_kind(migrated[i])->kind, n);
		model_free_all(objs, n);
	}
	return 0;
}

static void counts(FILE *f, const char *what, const size_t *n)
{
	for (size_t i = 0; i < ARRAY_SIZE(migrated); i++)
		if (n[i])
			fprintf(f, "%s: %zu %s\n", model_kind(migrated[i])->kind, n[i], what);
}

enum {
	IMPORT_FILENAME,
	IMPORT_FORCE
};
static const struct ctl_flag import_flags[] = {
	[IMPORT_FILENAME] = { "--filename", "-f", "FILE", "the export; - for standard input" },
	[IMPORT_FORCE] = { "--force", NULL, NULL,
			   "import into a datastore that holds Brindle resources already, "
			   "replacing those of the same name" },
	{ 0 },
};

static int cmd_import(struct ctl *c, int argc, char **argv)
{
	struct ctl_parsed p;
	int pr = ctl_parse("datastore migrate import", import_flags, argc, argv, 1, &p);
	const char *file = p.value[IMPORT_FILENAME];
	bool force = p.value[IMPORT_FORCE] != NULL;
	if (pr == CTL_OK && p.n_pos) {
		ctl_error("datastore migrate import: unexpected argument \"%s\"", p.pos[0]);
		pr = CTL_USAGE;
	}
	ctl_parsed_free(&p);
	if (pr != CTL_OK)
		return pr;
	if (!file) {
		ctl_error("datastore migrate import needs -f FILE (an export; - for standard "
			  "input)");
		return CTL_USAGE;
	}
	struct objs in = { 0 };
	if (read_export(file, &in) < 0)
		return CTL_FAIL;
	int ret = CTL_FAIL;
	for (size_t i = 0; i < in.n; i++)
		for (size_t j = 0; j < i; j++)
			if (in.v[i]->kind == in.v[j]->kind &&
			    streq(in.v[i]->meta.name, in.v[j]->meta.name) &&
			    streq(model_ns(in.v[i]), model_ns(in.v[j]))) {
				char ref[256];
				ctl_error("%s appears more than once in the export; nothing was "
					  "imported",
					  ctl_resource_ref(in.v[i], ref, sizeof(ref)));
				goto out;
			}
	struct ds *d =
		ds_of_type(c, "import", "kubernetes", "writes into the Kubernetes datastore");
	if (!d)
		goto out;
	struct strbuf held = STRBUF_INIT;
	sb_init(&held);
	int r = existing(d, &held);
	if (r == 0 && held.len && !force) {
		ctl_error("the Kubernetes datastore already holds Brindle resources (%s); nothing "
			  "was imported. Import into an empty datastore, or use --force to add the "
			  "export to them (objects of the same name are replaced by the export's)",
			  sb_str(&held));
		r = -1;
	}
	sb_free(&held);
	if (r < 0)
		goto out;

	/* The pools as the old datastore holds them, overlapping or not: IPAM's blocks
	 * were carved from them. */
	ds_keep_pools(d, true);
	size_t done[ARRAY_SIZE(migrated)] = { 0 }, left[ARRAY_SIZE(migrated)] = { 0 };
	size_t i;
	for (i = 0; i < in.n; i++) {
		struct br_object *o = in.v[i];
		o->meta.resource_version = NULL;
		o->revision = 0;
		bool created = true, changed = true;
		r = force ? ds_apply(d, o, &created, &changed) : ds_create(d, o);
		if (r < 0) {
			char ref[256];
			ctl_error("%s: %s", ctl_resource_ref(o, ref, sizeof(ref)),
				  ds_last_error(d));
			break;
		}
		done[migrated_index(o->kind)]++;
	}
	if (i < in.n) {
		for (size_t j = i; j < in.n; j++)
			left[migrated_index(in.v[j]->kind)]++;
		fprintf(stderr, "Imported before the failure (%zu object%s):\n", i,
			i == 1 ? "" : "s");
		counts(stderr, "imported", done);
		char ref[256];
		fprintf(stderr, "Not imported (%zu object%s, from %s on):\n", in.n - i,
			in.n - i == 1 ? "" : "s", ctl_resource_ref(in.v[i], ref, sizeof(ref)));
		counts(stderr, "not imported", left);
		fprintf(stderr, "Fix the cause and import again with --force (what was imported "
				"is then left as it is).\n");
		goto out;
	}
	counts(stdout, "imported", done);
	printf("Imported %zu object%s into the Kubernetes datastore.\n", in.n,
	       in.n == 1 ? "" : "s");
	ret = CTL_OK;
out:
	model_free_all(in.v, in.n);
	return ret;
}

/* --- the commands ------------------------------------------------------------------------ */

static int cmd_lock_on(struct ctl *c, int argc, char **argv)
{
	return cmd_lock(c, argc, argv, true);
}

static int cmd_unlock(struct ctl *c, int argc, char **argv)
{
	return cmd_lock(c, argc, argv, false);
}

static const struct ctl_cmd migrate_cmds[] = {
	{ "lock", NULL, "etcd: refuse every write to the datastore from now on", NULL, NULL,
	  cmd_lock_on },
	{ "export", NULL, "etcd (locked): print the data to move as YAML", NULL, NULL, cmd_export },
	{ "import", NULL, "kubernetes: create the export's objects", import_flags, NULL,
	  cmd_import },
	{ "unlock", NULL, "etcd: allow writes again", NULL, NULL, cmd_unlock },
	{ 0 },
};

const struct ctl_cmd ctl_datastore_cmds[] = {
	{ "migrate", NULL,
	  "move the cluster's data from the etcd datastore to the Kubernetes datastore "
	  "(docs/datastore.md)",
	  NULL, migrate_cmds, NULL },
	{ 0 },
};
