/*
 * The Kubernetes API as datastore (BRINDLE_DATASTORE_TYPE=kubernetes):
 * Calico kinds as custom resources in crd.projectcalico.org/v1 (converted by
 * lib/core/kdd_crd.c), with the API server's optimistic concurrency:
 *
 *   create   POST; 409 AlreadyExists is -EEXIST
 *   update   PUT with the resourceVersion read; 409 Conflict is -ECANCELED
 *   delete   DELETE, with a resourceVersion precondition when one is given
 *   list     paginated GET (limit/continue), sorted by scope then name
 *
 * The Kubernetes kinds the model knows (networking.k8s.io/v1 NetworkPolicy,
 * Namespace, Service, EndpointSlice) are the API's own objects, read
 * through kdd_decode (which drops what the model does not know); of those
 * only NetworkPolicy is written here (the others belong to kubectl and their
 * controllers: a write from the model's subset would drop their other fields).
 *
 * The kinds Kubernetes derives (lib/core/kdd_map.c maps them, as the syncer
 * ds_kube_sync.c does) are read from their sources:
 *
 *   Node              core Nodes; an update writes the BGP, tunnel and
 *                     WireGuard fields as the Node's annotations (a merge
 *                     patch of nodes/<n>/status, as calico-node writes them)
 *   WorkloadEndpoint  Pods; the name <node>-k8s-<pod>-eth0 gives the pod; a
 *                     hostNetwork or unscheduled pod is none. A write sets
 *                     the CNI plugin's annotations of the pod (wep_patch)
 *   Profile           Namespaces (kns.<ns>) and ServiceAccounts (ksa.<ns>.<sa>)
 *
 * Their other writes fail with a message saying who writes them.
 *
 * The API has no transactions of several objects: ds_write_seq writes them
 * one by one, and IPAM orders its writes as Calico does (lib/sys/ipam.c).
 */
#include "ds_internal.h"

#include <brindle/core/json.h>
#include <brindle/core/kdd_crd.h>
#include <brindle/core/kdd_map.h>
#include <brindle/core/kube_codec.h>
#include <brindle/core/labels.h>
#include <brindle/sys/kube_client.h>
#include <brindle/sys/kube_conn.h>

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

struct kds {
	struct kube_conn conn;
	struct kube_client *client;
	long timeout_ms;
};

/* A Kubernetes kind the API serves itself (not a Calico kind). */
static bool is_native(const struct br_kind *k)
{
	return !streq(k->group, "projectcalico.org");
}

/* A kind Kubernetes derives from its own objects (no CRD). */
static bool is_derived(const struct br_kind *k)
{
	return k->id == KIND_NODE || k->id == KIND_WORKLOADENDPOINT || k->id == KIND_PROFILE;
}

static struct kube_client *client_of(struct ds *d)
{
	return ((struct kds *)d->priv)->client;
}

static int kube_fail(struct ds *d, int r, const char *what)
{
	return ds_fail(d, r, "%s: %s", what, kube_last_error(client_of(d)));
}

/* The path of (@k, @scope, @name) (@name NULL: the collection); -EOPNOTSUPP when not served. */
static int path_for_as(struct ds *d, const struct br_kind *k, const char *scope, const char *name,
		       bool legacy, struct strbuf *out);

static int path_for(struct ds *d, const struct br_kind *k, const char *scope, const char *name,
		    struct strbuf *out)
{
	return path_for_as(d, k, scope, name, false, out);
}

/*
 * Calico 3.30 and 3.31 stored a default-tier policy "x" as "default.x"; 3.32
 * and Brindle store "x". A policy not found under its name is looked for
 * under the old one.
 */
static bool has_legacy_name(const struct br_kind *k, const char *name)
{
	return (k->id == KIND_NETWORKPOLICY || k->id == KIND_GLOBALNETWORKPOLICY) && name &&
	       strncmp(name, "default.", 8) != 0;
}

/* A name that is one path segment (names from the command line are not checked yet). */
static bool plain_name(const char *s)
{
	return *s && !streq(s, ".") && !streq(s, "..") && !strpbrk(s, "/?#%");
}

/*
 * Where a derived kind is read: a Node's core Node, an endpoint's Pod (from
 * its name), a Profile's Namespace (kns.) or ServiceAccount (ksa.); for the
 * Profile collection, the ServiceAccounts when @accounts. A name that cannot
 * be one is -ENOENT, saying what the names are.
 */
static int derived_path(struct ds *d, const struct br_kind *k, const char *scope, const char *name,
			bool accounts, struct strbuf *out)
{
	struct arena *a = arena_new();
	const char *ns = NULL, *obj = NULL, *plural = NULL, *names = "";
	if (k->id == KIND_NODE) {
		plural = "nodes";
		obj = name;
	} else if (k->id == KIND_WORKLOADENDPOINT) {
		const char *node;
		plural = "pods";
		ns = scope && *scope ? scope : NULL;
		if (name && !kdd_wep_name_parse(a, name, &node, &obj))
			names = " (the endpoint of a pod is <node>-k8s-<pod>-eth0, each '-' "
				"doubled)";
	} else if (!name) {
		plural = accounts ? "serviceaccounts" : "namespaces";
	} else if (str_has_prefix(name, KDD_NS_PROFILE_PREFIX)) {
		plural = "namespaces";
		obj = name + strlen(KDD_NS_PROFILE_PREFIX);
	} else if (str_has_prefix(name, KDD_SA_PROFILE_PREFIX)) {
		const char *rest = name + strlen(KDD_SA_PROFILE_PREFIX), *dot = strchr(rest, '.');
		plural = "serviceaccounts";
		if (dot) {
			ns = arena_strndup(a, rest, (size_t)(dot - rest));
			obj = dot + 1;
		}
	}
	int r = 0;
	if (!name)
		kube_path(out, "v1", ns, plural, NULL);
	else if (k->id == KIND_WORKLOADENDPOINT && !ns)
		r = ds_fail(d, -EINVAL, "%s %s: no namespace", k->kind, name);
	else if (!plural || !obj || !plain_name(obj) || (ns && !plain_name(ns)))
		r = ds_fail(d, -ENOENT, "%s \"%s\" not found%s", k->kind, name,
			    k->id == KIND_PROFILE
				    ? " (on the Kubernetes datastore the profiles are "
				      "kns.<namespace> and ksa.<namespace>.<serviceaccount>)"
				    : names);
	else
		kube_path(out, "v1", ns, plural, obj);
	arena_free(a);
	return r;
}

/* The path, under the legacy name when @legacy. */
static int path_for_as(struct ds *d, const struct br_kind *k, const char *scope, const char *name,
		       bool legacy, struct strbuf *out)
{
	const char *crd_kind, *plural;
	if (is_derived(k))
		return derived_path(d, k, scope, name, false, out);
	if (is_native(k)) {
		const char *ns = k->namespaced ? scope : NULL;
		if (k->namespaced && name && (!ns || !*ns))
			return ds_fail(d, -EINVAL, "%s %s: no namespace", k->kind, name);
		kube_path(out, k->api_version, ns, k->plural, name);
		return 0;
	}
	if (!kdd_crd_names(k, &crd_kind, &plural))
		return ds_fail(d, -EOPNOTSUPP, "%s is not served by the Kubernetes datastore",
			       k->kind);
	const char *ns = k->namespaced ? scope : NULL;
	if (k->namespaced && name && (!ns || !*ns))
		return ds_fail(d, -EINVAL, "%s %s: no namespace", k->kind, name);
	struct strbuf crname = STRBUF_INIT, err = STRBUF_INIT;
	sb_init(&crname);
	sb_init(&err);
	int r = 0;
	if (legacy)
		sb_adds(&crname, "default.");
	if (name && kdd_crd_name(k, scope, name, &crname, &err) < 0)
		r = ds_fail(d, -EINVAL, "%s", sb_str(&err));
	else
		kube_path(out, MODEL_CRD_API_VERSION, ns, plural, name ? sb_str(&crname) : NULL);
	sb_free(&crname);
	sb_free(&err);
	return r;
}

/*
 * A derived kind from the Kubernetes object it comes from: 0 and *out (NULL
 * for a pod that is no endpoint), or -EINVAL with @errs. Warnings (values
 * ignored) are the syncer's to log; a reader just does without them.
 */
static int derive(const struct br_kind *k, const struct jv *obj, struct br_object **out,
		  struct model_errors *errs)
{
	struct model_errors warns = { 0 };
	int r;
	*out = NULL;
	if (k->id == KIND_NODE) {
		struct br_node *n = NULL;
		r = kdd_node_to_calico(obj, &n, errs, &warns);
		*out = n ? &n->o : NULL;
	} else if (k->id == KIND_WORKLOADENDPOINT) {
		enum kdd_pod_state st;
		struct br_workloadendpoint *w = NULL;
		r = kdd_pod_to_wep(obj, &st, &w, errs);
		*out = w ? &w->o : NULL;
	} else {
		/* A list's items carry no kind: a ServiceAccount is the namespaced one. */
		struct br_profile *p = NULL;
		r = *kube_meta_str(obj, "namespace")
			    ? kdd_serviceaccount_to_profile(obj, &p, errs, &warns)
			    : kdd_namespace_to_profile(obj, &p, errs, &warns);
		*out = p ? &p->o : NULL;
	}
	model_errors_clear(&warns);
	return r;
}

/* The object in @cr (NULL: a pod that is no endpoint), or -EINVAL with the errors. */
static int decode(struct ds *d, const struct br_kind *k, const struct jv *cr,
		  struct br_object **out)
{
	struct model_errors errs = { 0 };
	if (is_derived(k)) {
		if (derive(k, cr, out, &errs) < 0)
			*out = NULL;
		else if (!*out)
			return 0;
	} else if (is_native(k)) {
		if (kdd_decode(k, cr, out, &errs) < 0)
			*out = NULL;
	} else {
		*out = kdd_crd_decode(k, cr, &errs);
	}
	int r = *out ? 0 : ds_fail(d, -EINVAL, "%s", errs.n ? errs.v[0] : "does not decode");
	model_errors_clear(&errs);
	return r;
}

static void set_cr_name(struct arena *a, struct jv *cr, const char *name);

/*
 * After @r, the answer of @method on (@k, @scope, @name): a policy not found is
 * tried again under its legacy name (has_legacy_name). @cr, when given, is
 * the body, renamed to match and written to @body; else @body is sent as it
 * is (NULL: none). Returns the request's result, or @r when not retried.
 */
static int retry_legacy(struct ds *d, int r, const struct br_kind *k, const char *scope,
			const char *name, const char *method, struct arena *a, struct jv *cr,
			struct strbuf *body, struct jv **answer)
{
	if (r != -ENOENT || !has_legacy_name(k, name))
		return r;
	struct strbuf path = STRBUF_INIT;
	sb_init(&path);
	r = path_for_as(d, k, scope, name, true, &path);
	if (r == 0 && cr) {
		set_cr_name(a, cr, arena_printf(a, "default.%s", name));
		sb_reset(body);
		json_write(body, cr, false);
	}
	if (r == 0 && d->dry_run && !streq(method, "GET"))
		sb_adds(&path, "?dryRun=All");
	if (r == 0)
		r = kube_request(client_of(d), method, sb_str(&path), NULL, body, answer);
	sb_free(&path);
	return r;
}

/* A get's answer: @r from the request (@why its reason), @v the object read. */
static int get_answer(struct ds *d, const struct br_kind *k, const char *scope, const char *name,
		      int r, const char *why, const struct jv *v, struct br_object **out)
{
	*out = NULL;
	if (r == -ENOENT)
		return ds_fail(d, -ENOENT, "%s \"%s\" not found", k->kind, name);
	if (r < 0)
		return ds_fail(d, r, "get: %s", why);
	r = decode(d, k, v, out);
	/*
	 * A BlockAffinity is found by node and CIDR: one of another node is not it.
	 * A pod is an endpoint only when scheduled, on the node its name says.
	 */
	if (r == 0 && (!*out ||
		       (k->id == KIND_BLOCKAFFINITY && scope &&
			!streq(((struct br_blockaffinity *)*out)->spec.node, scope)) ||
		       (k->id == KIND_WORKLOADENDPOINT && !streq((*out)->meta.name, name)))) {
		model_free(*out);
		*out = NULL;
		r = ds_fail(d, -ENOENT, "%s \"%s\" not found", k->kind, name);
	}
	return r;
}

static int k_get(struct ds *d, const struct br_kind *k, const char *scope, const char *name,
		 struct br_object **out)
{
	struct strbuf path = STRBUF_INIT;
	sb_init(&path);
	int r = path_for(d, k, scope, name, &path);
	struct jv *v = NULL;
	if (r == 0) {
		r = kube_request(client_of(d), "GET", sb_str(&path), NULL, NULL, &v);
		r = retry_legacy(d, r, k, scope, name, "GET", NULL, NULL, NULL, &v);
		r = get_answer(d, k, scope, name, r, kube_last_error(client_of(d)), v, out);
	}
	sb_free(&path);
	return r;
}

struct list_ctx {
	struct ds *d;
	const struct br_kind *k;
	const char *scope;
	struct br_object **objs;
	size_t n, cap;
	size_t base; /* objs[base..n) came from the collection being listed */
	int err;
};

static int list_item(void *ctx, const struct jv *cr)
{
	struct list_ctx *lc = ctx;
	struct br_object *o;
	int r = decode(lc->d, lc->k, cr, &o);
	if (r < 0 || !o)
		return r;
	if (lc->k->id == KIND_BLOCKAFFINITY && lc->scope &&
	    !streq(((struct br_blockaffinity *)o)->spec.node, lc->scope)) {
		model_free(o);
		return 0;
	}
	if (lc->n == lc->cap) {
		lc->cap = lc->cap ? lc->cap * 2 : 16;
		lc->objs = xrealloc(lc->objs, lc->cap * sizeof(*lc->objs));
	}
	lc->objs[lc->n++] = o;
	return 0;
}

static void list_restart(void *ctx)
{
	struct list_ctx *lc = ctx;
	for (size_t i = lc->base; i < lc->n; i++)
		model_free(lc->objs[i]);
	lc->n = lc->base;
}

/* One collection's objects into @lc. */
static int list_path(struct list_ctx *lc, const char *path)
{
	lc->base = lc->n;
	int r = kube_list(client_of(lc->d), path, 0, list_item, list_restart, lc, NULL);
	/* A decode failure has set the error already. */
	if (r < 0 && r != -EINVAL)
		r = kube_fail(lc->d, r, "list");
	return r;
}

static int by_scope_name(const void *pa, const void *pb)
{
	const struct br_object *a = *(struct br_object *const *)pa;
	const struct br_object *b = *(struct br_object *const *)pb;
	const char *sa = ds_scope(a) ? ds_scope(a) : "", *sb = ds_scope(b) ? ds_scope(b) : "";
	int c = strcmp(sa, sb);
	return c ? c : strcmp(a->meta.name, b->meta.name);
}

/* A list's objects, sorted by scope and name, handed over (never NULL). */
static void list_finish(struct list_ctx *lc, struct br_object ***out, size_t *n)
{
	if (lc->n > 1)
		qsort(lc->objs, lc->n, sizeof(*lc->objs), by_scope_name);
	*out = lc->objs ? lc->objs : xcalloc(1, sizeof(*lc->objs));
	*n = lc->n;
}

static int k_list(struct ds *d, const struct br_kind *k, const char *scope, struct br_object ***out,
		  size_t *n)
{
	struct strbuf path = STRBUF_INIT;
	sb_init(&path);
	int r = path_for(d, k, k->namespaced ? scope : NULL, NULL, &path);
	struct list_ctx lc = { .d = d, .k = k, .scope = scope };
	if (r == 0)
		r = list_path(&lc, sb_str(&path));
	/* Profiles come from Namespaces, then ServiceAccounts. */
	if (r == 0 && k->id == KIND_PROFILE) {
		sb_reset(&path);
		r = derived_path(d, k, NULL, NULL, true, &path);
		if (r == 0)
			r = list_path(&lc, sb_str(&path));
	}
	sb_free(&path);
	if (r < 0) {
		model_free_all(lc.objs, lc.n);
		return r;
	}
	list_finish(&lc, out, n);
	return 0;
}

/*
 * Gets and lists at once, multiplexed: one round trip for all of them. What
 * needs more than one request (a list with a second page, a Profile list, a
 * get under the legacy name) is read again on its own afterwards; what
 * failed, failed. A document of no kind of ours (ds_read.path) is a GET.
 */
static int k_read_many(struct ds *d, struct ds_read *rd, size_t n)
{
	struct kube_req *kr = xcalloc(n + 1, sizeof(*kr));
	struct strbuf *paths = xcalloc(n + 1, sizeof(*paths));
	bool *again = xcalloc(n + 1, sizeof(*again));
	size_t m = 0;
	size_t *at = xcalloc(n + 1, sizeof(*at)); /* rd[i]'s request, or n when none */
	for (size_t i = 0; i < n; i++) {
		const struct br_kind *k = rd[i].kind;
		rd[i] = (struct ds_read){ .kind = k,
					  .path = rd[i].path,
					  .arena = rd[i].arena,
					  .scope = rd[i].scope,
					  .name = rd[i].name,
					  .cached = rd[i].cached };
		sb_init(&paths[i]);
		at[i] = n;
		if (!k) {
			at[i] = m;
			kr[m++] = (struct kube_req){ .method = "GET", .path = rd[i].path };
			continue;
		}
		if (!rd[i].name && k->id == KIND_PROFILE) {
			again[i] = true;
			continue;
		}
		rd[i].err = path_for(d, k, rd[i].name || k->namespaced ? rd[i].scope : NULL,
				     rd[i].name, &paths[i]);
		if (rd[i].err < 0)
			continue;
		if (!rd[i].name) /* from the cache: whole, never paged */
			sb_adds(&paths[i], strchr(sb_str(&paths[i]), '?') ? "&" : "?");
		if (!rd[i].name)
			sb_adds(&paths[i], rd[i].cached ? "resourceVersion=0" : "limit=500");
		at[i] = m;
		kr[m++] = (struct kube_req){ .method = "GET", .path = sb_str(&paths[i]) };
	}
	if (m)
		(void)kube_request_many(client_of(d), kr, m);
	for (size_t i = 0; i < n; i++) {
		if (at[i] == n)
			continue;
		const struct kube_req *q = &kr[at[i]];
		const struct br_kind *k = rd[i].kind;
		if (!k) {
			rd[i].err = q->err;
			if (q->err == 0 && q->out)
				rd[i].doc = jv_copy(rd[i].arena, q->out);
			else
				rd[i].error = arena_strdup(rd[i].arena, q->error ? q->error : "");
			continue;
		}
		if (rd[i].name) {
			if (q->err == -ENOENT && has_legacy_name(k, rd[i].name))
				again[i] = true;
			else
				rd[i].err = get_answer(d, k, rd[i].scope, rd[i].name, q->err,
						       q->error, q->out, &rd[i].obj);
			continue;
		}
		/* A failed list fails (read again it would only fail again, as late). */
		if (q->err < 0) {
			rd[i].err = ds_fail(d, q->err, "list: %s", q->error);
			continue;
		}
		/* More pages (or an answer without items): the whole list on its own. */
		const struct jv *items = jv_get(q->out, "items");
		if (!items || items->type != JV_ARRAY || *kube_meta_str(q->out, "continue")) {
			again[i] = true;
			continue;
		}
		struct list_ctx lc = { .d = d, .k = k, .scope = rd[i].scope };
		for (size_t j = 0; j < items->arr.n && rd[i].err == 0; j++)
			rd[i].err = list_item(&lc, items->arr.items[j]);
		if (rd[i].err < 0) {
			model_free_all(lc.objs, lc.n);
			continue;
		}
		list_finish(&lc, &rd[i].objs, &rd[i].n);
	}
	/* The client's answers are gone from here on. */
	int first = 0;
	for (size_t i = 0; i < n; i++) {
		if (again[i])
			rd[i].err =
				rd[i].name
					? k_get(d, rd[i].kind, rd[i].scope, rd[i].name, &rd[i].obj)
					: k_list(d, rd[i].kind, rd[i].scope, &rd[i].objs, &rd[i].n);
		if (rd[i].err < 0 && !first)
			first = rd[i].err;
		sb_free(&paths[i]);
	}
	free(kr);
	free(paths);
	free(again);
	free(at);
	return first;
}

/* After a write: the revision, uid and creation time the server gave. */
static void take_meta(struct br_object *o, const struct jv *answer)
{
	const char *rv = kube_meta_str(answer, "resourceVersion");
	if (kdd_revision(rv, &o->revision) == 0)
		o->meta.resource_version = arena_strdup(o->arena, rv);
	const char *uid = kube_meta_str(answer, "uid");
	const char *ts = kube_meta_str(answer, "creationTimestamp");
	if (*uid)
		o->meta.uid = arena_strdup(o->arena, uid);
	if (*ts)
		o->meta.creation_timestamp = arena_strdup(o->arena, ts);
}

/* Renames the CR in @cr (a legacy policy name). */
static void set_cr_name(struct arena *a, struct jv *cr, const char *name)
{
	struct jv *md = (struct jv *)jv_get(cr, "metadata");
	for (size_t i = 0; md && md->type == JV_OBJECT && i < md->obj.n; i++)
		if (streq(md->obj.members[i].key, "name"))
			md->obj.members[i].value = jv_string(a, name);
}

/* Who writes a derived kind, for the refusal of a write through the datastore. */
static int derived_write(struct ds *d, const struct br_kind *k, const char *name, bool del)
{
	if (k->id == KIND_NODE && del)
		return ds_fail(d, -EOPNOTSUPP,
			       "on the Kubernetes datastore a Node is the Kubernetes Node of that "
			       "name: kubectl delete node %s",
			       name);
	if (k->id == KIND_NODE)
		return ds_fail(d, -EOPNOTSUPP,
			       "on the Kubernetes datastore a Node is the Kubernetes Node of that "
			       "name (the kubelet registers it); brindlectl only sets an existing "
			       "Node's BGP, tunnel and WireGuard fields");
	return ds_fail(d, -EOPNOTSUPP,
		       "on the Kubernetes datastore profiles are derived from Namespaces "
		       "(kns.<namespace>) and ServiceAccounts (ksa.<namespace>.<serviceaccount>) "
		       "and read-only: change their labels with kubectl label "
		       "namespace|serviceaccount");
}

/*
 * A Node's BGP, tunnel and WireGuard fields are annotations of the core Node,
 * set and cleared by one merge patch of nodes/<n>/status (as calico-node
 * writes them, so the role needs no write of the Node's spec), at the
 * revision read. Its labels are the Node's own: a change is refused, naming
 * kubectl label. Addresses, orchRefs and status are derived: not written.
 */
static int node_update(struct ds *d, struct br_node *n)
{
	struct br_object *o = &n->o, *cur = NULL;
	struct strbuf path = STRBUF_INIT, body = STRBUF_INIT;
	sb_init(&path);
	sb_init(&body);
	struct arena *a = arena_new();
	int r = k_get(d, o->kind, NULL, o->meta.name, &cur);
	if (r == 0 && o->meta.labels.n && !labels_equal(&o->meta.labels, &cur->meta.labels))
		r = ds_fail(d, -EOPNOTSUPP,
			    "on the Kubernetes datastore a Node's labels are the Kubernetes Node's "
			    "(kubectl label node %s KEY=VALUE); brindlectl only sets a Node's BGP, "
			    "tunnel and WireGuard fields",
			    o->meta.name);
	struct jv *answer = NULL;
	if (r == 0) {
		struct jv *patch = jv_object(a), *md = jv_object(a);
		jv_add(a, md, "annotations", kdd_node_annotations(a, n));
		const char *rv = o->meta.resource_version;
		if ((!rv || !*rv) && o->revision > 0)
			rv = arena_printf(a, "%" PRId64, o->revision);
		if (rv && *rv)
			jv_add(a, md, "resourceVersion", jv_string(a, rv));
		jv_add(a, patch, "metadata", md);
		json_write(&body, patch, false);
		kube_path(&path, "v1", NULL, "nodes", o->meta.name);
		sb_adds(&path, "/status");
		r = kube_request(client_of(d), "PATCH", sb_str(&path),
				 "application/merge-patch+json", &body, &answer);
		if (r == -ECANCELED)
			r = ds_fail(
				d, -ECANCELED,
				"Node \"%s\" was modified by someone else; read it again and retry",
				o->meta.name);
		else if (r == -ENOENT)
			r = ds_fail(d, -ENOENT, "Node \"%s\" not found", o->meta.name);
		else if (r < 0)
			r = kube_fail(d, r, "update");
		else
			take_meta(o, answer);
	}
	model_free(cur);
	arena_free(a);
	sb_free(&path);
	sb_free(&body);
	return r;
}

/*
 * A WorkloadEndpoint written on Kubernetes is what the CNI plugin tells of
 * the pod: its addresses and container ID as Calico's annotations
 * (cni.projectcalico.org/podIP, /podIPs, /containerID), in one merge patch
 * of pods/<pod>/status (as Calico's plugin writes them, so its role needs no
 * write of the pod itself). The rest of the endpoint is the pod's own. A
 * create takes over what an earlier sandbox of the pod left; an update, and
 * a delete (@w NULL: the addresses set to "", Calico's "released"), are at
 * the revision read (the pod's resourceVersion). A pod that does not exist
 * is -ENOENT.
 */
static int wep_patch(struct ds *d, const char *ns, const char *name, struct br_workloadendpoint *w,
		     int64_t revision)
{
	struct strbuf path = STRBUF_INIT, body = STRBUF_INIT;
	sb_init(&path);
	sb_init(&body);
	struct arena *a = arena_new();
	const struct br_kind *k = model_kind(KIND_WORKLOADENDPOINT);
	int r = derived_path(d, k, ns, name, false, &path);
	struct jv *answer = NULL;
	if (r == 0) {
		struct jv *patch = jv_object(a), *md = jv_object(a), *ann = jv_object(a);
		struct strbuf ips = STRBUF_INIT;
		sb_init(&ips);
		for (size_t i = 0; w && i < w->spec.n_ip_networks; i++)
			sb_addf(&ips, "%s%s", i ? "," : "", w->spec.ip_networks[i]);
		const char *first = w && w->spec.n_ip_networks ? w->spec.ip_networks[0] : "";
		jv_add(a, ann, "cni.projectcalico.org/podIP", jv_string(a, first));
		jv_add(a, ann, "cni.projectcalico.org/podIPs", jv_string(a, sb_str(&ips)));
		if (w && w->spec.container_id)
			jv_add(a, ann, "cni.projectcalico.org/containerID",
			       jv_string(a, w->spec.container_id));
		sb_free(&ips);
		jv_add(a, md, "annotations", ann);
		if (revision > 0)
			jv_add(a, md, "resourceVersion",
			       jv_string(a, arena_printf(a, "%" PRId64, revision)));
		jv_add(a, patch, "metadata", md);
		json_write(&body, patch, false);
		sb_adds(&path, "/status");
		r = kube_request(client_of(d), "PATCH", sb_str(&path),
				 "application/merge-patch+json", &body, &answer);
		if (r == -ECANCELED)
			r = ds_fail(d, -ECANCELED,
				    "the pod of WorkloadEndpoint \"%s\" was modified by someone "
				    "else; read it again and retry",
				    name);
		else if (r == -ENOENT)
			r = ds_fail(d, -ENOENT, "the pod of WorkloadEndpoint %s/%s does not exist",
				    ns ? ns : "", name);
		else if (r < 0)
			r = kube_fail(d, r, w ? "write the pod's addresses" : "release the pod's addresses");
		else if (w)
			take_meta(&w->o, answer);
	}
	arena_free(a);
	sb_free(&path);
	sb_free(&body);
	return r;
}

/* A Node is unchanged when what node_update writes is: its annotations (and labels, if given). */
static bool k_same_content(const struct br_object *cur, const struct br_object *o)
{
	if (o->kind->id != KIND_NODE)
		return model_same_content(cur, o);
	struct arena *a = arena_new();
	bool same = jv_equal(kdd_node_annotations(a, (const struct br_node *)cur),
			     kdd_node_annotations(a, (const struct br_node *)o)) &&
		    (!o->meta.labels.n || labels_equal(&cur->meta.labels, &o->meta.labels));
	arena_free(a);
	return same;
}

static int write_obj(struct ds *d, struct br_object *o, bool create)
{
	/* Patches of the Node and the Pod: not sent in a dry run (ds_set_dry_run). */
	if (d->dry_run && (o->kind->id == KIND_NODE || o->kind->id == KIND_WORKLOADENDPOINT ||
			   is_derived(o->kind)))
		return 0;
	if (o->kind->id == KIND_NODE && !create)
		return node_update(d, (struct br_node *)o);
	if (o->kind->id == KIND_WORKLOADENDPOINT)
		return wep_patch(d, o->meta.namespace, o->meta.name, (struct br_workloadendpoint *)o,
				 create ? 0 : o->revision);
	if (is_derived(o->kind))
		return derived_write(d, o->kind, o->meta.name, false);
	const struct br_kind *k = o->kind;
	struct strbuf path = STRBUF_INIT, body = STRBUF_INIT, err = STRBUF_INIT;
	sb_init(&path);
	sb_init(&body);
	sb_init(&err);
	int r = path_for(d, k, ds_scope(o), create ? NULL : o->meta.name, &path);
	struct arena *a = arena_new();
	struct jv *cr = NULL;
	if (r == 0 && is_native(k) && k->id != KIND_K8S_NETWORKPOLICY)
		r = ds_fail(
			d, -EOPNOTSUPP,
			"%s is written with kubectl on the Kubernetes datastore, not brindlectl",
			k->kind);
	if (r == 0 && is_native(k)) {
		cr = kdd_native_encode(a, o, !create);
		json_write(&body, cr, false);
	} else if (r == 0) {
		cr = kdd_crd_encode(a, o, !create, &err);
		if (!cr)
			r = ds_fail(d, -EINVAL, "%s", sb_str(&err));
		else
			json_write(&body, cr, false);
	}
	struct jv *answer = NULL;
	if (r == 0 && d->dry_run)
		sb_adds(&path, "?dryRun=All");
	if (r == 0) {
		const char *method = create ? "POST" : "PUT";
		r = kube_request(client_of(d), method, sb_str(&path), NULL, &body, &answer);
		if (!create)
			r = retry_legacy(d, r, k, ds_scope(o), o->meta.name, method, a, cr, &body,
					 &answer);
		if (r == -EEXIST)
			r = ds_fail(d, -EEXIST, "%s \"%s\" already exists", k->kind, o->meta.name);
		else if (r == -ECANCELED)
			r = ds_fail(
				d, -ECANCELED,
				"%s \"%s\" was modified by someone else; read it again and retry",
				k->kind, o->meta.name);
		else if (r == -ENOENT && !create)
			r = ds_fail(d, -ENOENT, "%s \"%s\" not found", k->kind, o->meta.name);
		else if (r < 0)
			r = kube_fail(d, r, create ? "create" : "update");
		else if (!d->dry_run)
			take_meta(o, answer);
	}
	arena_free(a);
	sb_free(&path);
	sb_free(&body);
	sb_free(&err);
	return r;
}

static int k_create(struct ds *d, struct br_object *o)
{
	return write_obj(d, o, true);
}

static int k_update(struct ds *d, struct br_object *o)
{
	return write_obj(d, o, false);
}

static int k_del(struct ds *d, const struct br_kind *k, const char *scope, const char *name,
		 int64_t revision)
{
	if (k->id == KIND_WORKLOADENDPOINT)
		return wep_patch(d, scope, name, NULL, revision);
	if (is_derived(k))
		return derived_write(d, k, name, true);
	struct strbuf path = STRBUF_INIT, body = STRBUF_INIT;
	sb_init(&path);
	sb_init(&body);
	int r = path_for(d, k, scope, name, &path);
	if (r == 0) {
		if (revision > 0)
			sb_addf(&body,
				"{\"apiVersion\":\"v1\",\"kind\":\"DeleteOptions\","
				"\"preconditions\":{\"resourceVersion\":\"%" PRId64 "\"}}",
				revision);
		r = kube_request(client_of(d), "DELETE", sb_str(&path), NULL,
				 revision > 0 ? &body : NULL, NULL);
		r = retry_legacy(d, r, k, scope, name, "DELETE", NULL, NULL,
				 revision > 0 ? &body : NULL, NULL);
		if (r == -ENOENT)
			r = ds_fail(d, -ENOENT, "%s \"%s\" not found", k->kind, name);
		else if (r == -ECANCELED)
			r = ds_fail(
				d, -ECANCELED,
				"%s \"%s\" was modified by someone else; read it again and retry",
				k->kind, name);
		else if (r < 0)
			r = kube_fail(d, r, "delete");
	}
	sb_free(&path);
	sb_free(&body);
	return r;
}

static const struct ds_backend_ops ds_kube_ops;

struct kube_client *ds_kube_client(struct ds *d)
{
	return d->ops == &ds_kube_ops ? client_of(d) : NULL;
}

static int k_syncer_start(struct ds *d, struct loop *l, const struct ds_watch_spec *specs, size_t n,
			  const struct ds_syncer_ops *ops, void *ctx, struct ds_syncer **out)
{
	struct kds *s = d->priv;
	return ds_kube_syncer_start(d, s->conn.server, &s->conn.auth, s->timeout_ms, l, specs, n,
				    ops, ctx, &ds_kube_ops, out);
}

static void k_close(struct ds *d)
{
	struct kds *s = d->priv;
	kube_client_free(s->client);
	kube_conn_free(&s->conn);
	free(s);
}

static const struct ds_backend_ops ds_kube_ops = {
	.close = k_close,
	.get = k_get,
	.list = k_list,
	.read_many = k_read_many,
	.create = k_create,
	.update = k_update,
	.del = k_del,
	.same_content = k_same_content,
	.syncer_start = k_syncer_start,
	.syncer_stop = ds_kube_syncer_stop,
	.syncer_status = ds_kube_syncer_status,
	.syncer_why = ds_kube_syncer_why,
};

int ds_kube_open(const struct ds_config *cfg, struct ds *d, struct strbuf *err)
{
	struct kds *s = xcalloc(1, sizeof(*s));
	int r = kube_conn_load_context(cfg->kubeconfig, cfg->kube_context, &s->conn, err);
	if (r == 0) {
		r = kube_client_new(NULL, s->conn.server, &s->conn.auth, cfg->timeout_ms,
				    &s->client, err);
		if (r < 0)
			kube_conn_free(&s->conn);
	}
	if (r < 0) {
		free(s);
		return r;
	}
	s->timeout_ms = cfg->timeout_ms;
	d->ops = &ds_kube_ops;
	d->priv = s;
	return 0;
}
