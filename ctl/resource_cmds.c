/*
 * apply, create, replace, get and delete. Every input file is read and
 * validated completely before anything is written: one bad document anywhere
 * means no write and a non-zero exit.
 */
#include "ctl.h"
#include <brindle/sys/strbuf_file.h>

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct objlist {
	struct br_object **v;
	size_t n, cap;
};

static void objlist_free(struct objlist *l)
{
	model_free_all(l->v, l->n);
	l->v = NULL;
	l->n = l->cap = 0;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static bool manifest_name(const char *name)
{
	return str_has_suffix(name, ".yaml") || str_has_suffix(name, ".yml") ||
	       str_has_suffix(name, ".json");
}

static void read_one(const char *path, const char *ns, struct objlist *out,
		     struct model_errors *errs)
{
	struct strbuf text = STRBUF_INIT;
	sb_init(&text);
	int r = sb_read_file_max(&text, path, MODEL_MAX_INPUT);
	if (r == -EFBIG) {
		model_errors_add(errs,
				 "%s: larger than %u MiB, the most brindlectl reads from one "
				 "file or stream: nothing applied",
				 streq(path, "-") ? "standard input" : path, MODEL_MAX_INPUT >> 20);
		sb_free(&text);
		return;
	}
	if (r < 0) {
		model_errors_add(errs, "%s: %s", streq(path, "-") ? "standard input" : path,
				 strerror(-r));
		sb_free(&text);
		return;
	}
	struct br_object **objs;
	size_t n;
	const char *source = streq(path, "-") ? "<stdin>" : path;
	if (model_read(source, text.buf, text.len, ns, &objs, &n, errs) == 0) {
		for (size_t i = 0; i < n; i++) {
			GROW(out->v, out->cap, out->n + 1);
			out->v[out->n++] = objs[i];
		}
		free(objs);
	}
	sb_free(&text);
}

/* A file, "-" for stdin, or a directory's *.yaml, *.yml and *.json in name order. */
static void read_path(const char *path, const char *ns, struct objlist *out,
		      struct model_errors *errs)
{
	struct stat st;
	if (!streq(path, "-") && stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		DIR *d = opendir(path);
		if (!d) {
			model_errors_add(errs, "%s: %s", path, strerror(errno));
			return;
		}
		char **names = NULL;
		size_t n = 0, cap = 0;
		struct dirent *de;
		while ((de = readdir(d)))
			if (de->d_name[0] != '.' && manifest_name(de->d_name)) {
				GROW(names, cap, n + 1);
				names[n++] = xstrdup(de->d_name);
			}
		closedir(d);
		qsort(names, n, sizeof(char *), name_cmp);
		for (size_t i = 0; i < n; i++) {
			struct strbuf p = STRBUF_INIT;
			sb_init(&p);
			sb_addf(&p, "%s/%s", path, names[i]);
			read_one(p.buf, ns, out, errs);
			sb_free(&p);
			free(names[i]);
		}
		free(names);
		return;
	}
	read_one(path, ns, out, errs);
}

/* The flags of apply, create, replace, get and delete, by their index in each table:
 * -f and -n first in all, then get's own or delete's own. */
enum {
	F_FILENAME,
	F_NAMESPACE,
	F_OUTPUT,
	F_ALL_NAMESPACES,
	F_IGNORE_NOT_FOUND = F_OUTPUT,
};

#define FLAG_FILENAME                                                                             \
	{                                                                                         \
		"--filename", "-f", "FILE",                                                       \
			"a file, - for standard input, or a directory of *.yaml, *.yml, *.json; " \
			"repeatable"                                                              \
	}
#define FLAG_NAMESPACE                                                         \
	{                                                                      \
		"--namespace", "-n", "NS",                                     \
			"namespace of namespaced kinds not given in the file " \
			"(default: default)"                                   \
	}

const struct ctl_flag ctl_apply_flags[] = {
	[F_FILENAME] = FLAG_FILENAME,
	[F_NAMESPACE] = FLAG_NAMESPACE,
	{ 0 },
};

const struct ctl_flag ctl_get_flags[] = {
	[F_FILENAME] = FLAG_FILENAME,
	[F_NAMESPACE] = FLAG_NAMESPACE,
	[F_OUTPUT] = { "--output", "-o", "FORMAT", "yaml, json, wide or name (default: a table)" },
	[F_ALL_NAMESPACES] = { "--all-namespaces", "-A", NULL, "every namespace" },
	{ 0 },
};

const struct ctl_flag ctl_delete_flags[] = {
	[F_FILENAME] = FLAG_FILENAME,
	[F_NAMESPACE] = FLAG_NAMESPACE,
	[F_IGNORE_NOT_FOUND] = { "--ignore-not-found", NULL, NULL,
				 "a resource that does not exist is not an error" },
	{ 0 },
};

struct file_opts {
	struct ctl_parsed p;
	const char **files;
	size_t n_files;
	const char *ns;
	enum ctl_output out;
	bool all_namespaces;
	bool ignore_not_found;
	char **positional;
	size_t n_positional;
};

static int parse_opts(const char *cmd, int argc, char **argv, struct file_opts *o, bool allow_pos,
		      const struct ctl_flag *flags)
{
	if (ctl_parse(cmd, flags, argc, argv, 1, &o->p) != CTL_OK)
		return -1;
	o->files = o->p.all[F_FILENAME];
	o->n_files = o->p.n[F_FILENAME];
	o->ns = o->p.value[F_NAMESPACE];
	o->positional = o->p.pos;
	o->n_positional = o->p.n_pos;
	o->out = OUT_TABLE;
	if (flags == ctl_get_flags) {
		o->all_namespaces = o->p.value[F_ALL_NAMESPACES] != NULL;
		const char *v = o->p.value[F_OUTPUT];
		if (v && ctl_parse_output(v, &o->out) < 0) {
			ctl_error("unknown output format \"%s\" (yaml, json, wide or name)", v);
			return -1;
		}
	}
	if (flags == ctl_delete_flags)
		o->ignore_not_found = o->p.value[F_IGNORE_NOT_FOUND] != NULL;
	if (!allow_pos && o->n_positional) {
		ctl_error("%s: unexpected argument \"%s\" (resources come from -f FILE)", cmd,
			  o->positional[0]);
		return -1;
	}
	return 0;
}

static void free_opts(struct file_opts *o)
{
	ctl_parsed_free(&o->p);
}

/* Read every -f input; on any error print them all and return -1. */
static int read_inputs(const struct file_opts *o, struct objlist *objs)
{
	struct model_errors errs = { 0 };
	for (size_t i = 0; i < o->n_files; i++)
		read_path(o->files[i], o->ns, objs, &errs);
	if (errs.n) {
		for (size_t i = 0; i < errs.n; i++)
			fprintf(stderr, "%s\n", errs.v[i]);
		ctl_error("%zu problem%s in the input; nothing was written", errs.n,
			  errs.n == 1 ? "" : "s");
		model_errors_clear(&errs);
		objlist_free(objs);
		return -1;
	}
	for (size_t i = 0; i < objs->n; i++)
		for (size_t j = 0; j < i; j++)
			if (objs->v[i]->kind == objs->v[j]->kind &&
			    streq(objs->v[i]->meta.name, objs->v[j]->meta.name) &&
			    streq(objs->v[i]->meta.namespace, objs->v[j]->meta.namespace)) {
				char ref[256];
				ctl_error("%s appears more than once in the input; nothing was "
					  "written",
					  ctl_resource_ref(objs->v[i], ref, sizeof(ref)));
				objlist_free(objs);
				return -1;
			}
	return 0;
}

enum write_mode {
	W_APPLY,
	W_CREATE,
	W_REPLACE
};

/*
 * On Kubernetes an endpoint is its pod: the datastore writes only the CNI
 * plugin's annotations of it, which brindlectl must not fake. Refused with
 * who writes what.
 */
static bool refuse_endpoint_write(struct ds *d, const struct br_kind *k, const char *ref)
{
	if (k->id != KIND_WORKLOADENDPOINT || !ds_kube_client(d))
		return false;
	ctl_error("%s: on the Kubernetes datastore workload endpoints are derived from Pods and "
		  "read-only (the kubelet and the CNI plugin write the pod)",
		  ref);
	return true;
}

static const char *outcome_word(enum ds_apply_outcome w)
{
	return w == DS_APPLY_CREATED	  ? "created"
	       : w == DS_APPLY_CONFIGURED ? "configured"
					  : "unchanged";
}

/* What a failed apply left: the objects written and those not, by reference. */
static void report_partial(struct objlist *objs, const bool *written)
{
	struct strbuf yes = STRBUF_INIT, no = STRBUF_INIT;
	sb_init(&yes);
	sb_init(&no);
	for (size_t i = 0; i < objs->n; i++) {
		char ref[256];
		struct strbuf *sb = written[i] ? &yes : &no;
		sb_addf(sb, "%s%s", sb->len ? ", " : "",
			ctl_resource_ref(objs->v[i], ref, sizeof(ref)));
	}
	if (!yes.len)
		ctl_error("nothing was written");
	else
		ctl_error("written: %s; not written: %s", sb_str(&yes),
			  no.len ? sb_str(&no) : "none");
	sb_free(&yes);
	sb_free(&no);
}

/*
 * apply, all or nothing. Every document is valid already (read_inputs). On
 * etcd the objects land in transactions of DS_APPLY_BATCH (all of them in
 * one when there are no more). On the Kubernetes API, which has no
 * transaction of several objects, every write is first sent as a dry run
 * (the API server validates and admits it, and stores nothing), and only
 * then for real; if a real write still fails, what was written is said.
 */
/* One line on standard error per object with what Brindle stores but does not act on. */
static void warn_no_effect(const struct objlist *objs)
{
	struct strbuf sb = STRBUF_INIT;
	sb_init(&sb);
	for (size_t i = 0; i < objs->n; i++) {
		sb_reset(&sb);
		if (!model_no_effect(objs->v[i], &sb))
			continue;
		char ref[256];
		fprintf(stderr,
			"Warning: %s: accepted, no effect in Brindle: %s (docs/resources.md)\n",
			ctl_resource_ref(objs->v[i], ref, sizeof(ref)), sb_str(&sb));
	}
	sb_free(&sb);
}

static int apply_all(struct ds *d, struct objlist *objs)
{
	warn_no_effect(objs);
	for (size_t i = 0; i < objs->n; i++) {
		char ref[256];
		if (refuse_endpoint_write(d, objs->v[i]->kind,
					  ctl_resource_ref(objs->v[i], ref, sizeof(ref)))) {
			ctl_error("nothing was written");
			return CTL_FAIL;
		}
	}
	bool *written = xcalloc(objs->n ? objs->n : 1, sizeof(bool));
	int ret = CTL_OK;
	if (ds_has_transactions(d)) {
		enum ds_apply_outcome *what = xcalloc(objs->n ? objs->n : 1, sizeof(*what));
		int r = ds_apply_all(d, objs->v, objs->n, what);
		for (size_t i = 0; i < objs->n; i++) {
			char ref[256];
			written[i] = what[i] != DS_APPLY_NOT_WRITTEN;
			if (written[i])
				printf("%s %s\n", ctl_resource_ref(objs->v[i], ref, sizeof(ref)),
				       outcome_word(what[i]));
		}
		if (r < 0) {
			ctl_error("%s", ds_last_error(d));
			report_partial(objs, written);
			ret = CTL_FAIL;
		}
		free(what);
		free(written);
		return ret;
	}
	/* No transactions: the rules that span objects (IP pools), then a dry run of every
	 * write, before anything is written. */
	if (ds_check_pools(d, objs->v, objs->n) < 0) {
		ctl_error("%s", ds_last_error(d));
		ctl_error("nothing was written");
		free(written);
		return CTL_FAIL;
	}
	bool dry = ds_set_dry_run(d, true) == 0;
	for (size_t i = 0; dry && i < objs->n; i++) {
		bool created, changed;
		char ref[256];
		if (ds_apply(d, objs->v[i], &created, &changed) < 0) {
			ctl_error("%s: %s", ctl_resource_ref(objs->v[i], ref, sizeof(ref)),
				  ds_last_error(d));
			ret = CTL_FAIL;
		}
	}
	if (dry && ds_set_dry_run(d, false) < 0)
		ret = CTL_FAIL;
	if (ret != CTL_OK) {
		ctl_error("the API server refuses the writes above (dry run): nothing was written");
		free(written);
		return ret;
	}
	for (size_t i = 0; i < objs->n; i++) {
		bool created = false, changed = false;
		char ref[256];
		ctl_resource_ref(objs->v[i], ref, sizeof(ref));
		if (ds_apply(d, objs->v[i], &created, &changed) < 0) {
			ctl_error("%s: %s", ref, ds_last_error(d));
			report_partial(objs, written);
			ret = CTL_FAIL;
			break;
		}
		written[i] = true;
		printf("%s %s\n", ref, created ? "created" : changed ? "configured" : "unchanged");
	}
	free(written);
	return ret;
}

static int write_cmd(struct ctl *c, int argc, char **argv, enum write_mode mode)
{
	static const char *const names[] = { "apply", "create", "replace" };
	struct file_opts o = { 0 };
	struct objlist objs = { 0 };
	int ret = CTL_USAGE;
	if (parse_opts(names[mode], argc, argv, &o, false, ctl_apply_flags) < 0)
		goto out;
	if (!o.n_files) {
		ctl_error("%s needs -f FILE (or -f - for standard input)", names[mode]);
		goto out;
	}
	ret = CTL_FAIL;
	if (read_inputs(&o, &objs) < 0)
		goto out;
	struct ds *d = ctl_ds(c);
	if (!d)
		goto out;
	if (mode == W_APPLY && !c->cluster_write) {
		ret = apply_all(d, &objs);
		goto out;
	}
	ret = CTL_OK;
	warn_no_effect(&objs);
	for (size_t i = 0; i < objs.n; i++) {
		struct br_object *obj = objs.v[i];
		char ref[256];
		const char *what_cluster = NULL;
		ctl_resource_ref(obj, ref, sizeof(ref));
		if (refuse_endpoint_write(d, obj->kind, ref)) {
			ret = CTL_FAIL;
			continue;
		}
		int r = c->cluster_write ? c->cluster_write(c, obj->kind, ds_scope(obj),
							    obj->meta.name, obj, &what_cluster)
					 : 1;
		const char *what = what_cluster;
		if (r <= 0) {
			if (r < 0)
				ret = CTL_FAIL;
			else
				printf("%s %s\n", ref, what);
			continue;
		}
		if (mode == W_APPLY) {
			bool created = false, changed = false;
			r = ds_apply(d, obj, &created, &changed);
			what = created ? "created" : changed ? "configured" : "unchanged";
		} else if (mode == W_CREATE) {
			r = ds_create(d, obj);
			what = "created";
		} else {
			struct br_object *cur;
			r = ds_get(d, obj->kind, ds_scope(obj), obj->meta.name, &cur);
			if (r == 0) {
				/* A resourceVersion in the file makes the replace conditional. */
				int64_t want =
					obj->meta.resource_version
						? strtoll(obj->meta.resource_version, NULL, 10)
						: cur->revision;
				obj->revision = want;
				obj->meta.uid = arena_strdup(obj->arena, cur->meta.uid);
				obj->meta.creation_timestamp =
					arena_strdup(obj->arena, cur->meta.creation_timestamp);
				model_free(cur);
				r = ds_update(d, obj);
			}
			what = "replaced";
		}
		if (r < 0) {
			ctl_error("%s: %s", ref, ds_last_error(d));
			ret = CTL_FAIL;
			continue;
		}
		printf("%s %s\n", ref, what);
	}
out:
	objlist_free(&objs);
	free_opts(&o);
	return ret;
}

int cmd_apply(struct ctl *c, int argc, char **argv)
{
	return write_cmd(c, argc, argv, W_APPLY);
}

int cmd_create(struct ctl *c, int argc, char **argv)
{
	return write_cmd(c, argc, argv, W_CREATE);
}

int cmd_replace(struct ctl *c, int argc, char **argv)
{
	return write_cmd(c, argc, argv, W_REPLACE);
}

static const struct br_kind *kind_arg(const char *name)
{
	const struct br_kind *k = model_kind_by_name(name);
	if (!k)
		ctl_error("unknown resource kind \"%s\"", name);
	return k;
}

int cmd_get(struct ctl *c, int argc, char **argv)
{
	struct file_opts o = { 0 };
	struct objlist in = { 0 }, found = { 0 };
	int ret = CTL_USAGE;
	bool single = false;
	if (parse_opts("get", argc, argv, &o, true, ctl_get_flags) < 0)
		goto out;
	if (o.n_files && o.n_positional) {
		ctl_error("get takes either -f FILE or KIND [NAME...], not both");
		goto out;
	}
	if (!o.n_files && !o.n_positional) {
		ctl_error("get needs a kind (get KIND [NAME...]) or -f FILE");
		goto out;
	}
	ret = CTL_FAIL;
	if (o.n_files && read_inputs(&o, &in) < 0)
		goto out;
	struct ds *d = ctl_ds(c);
	if (!d)
		goto out;
	ret = CTL_OK;
	if (o.n_files) {
		for (size_t i = 0; i < in.n; i++) {
			struct br_object *cur;
			if (ds_get(d, in.v[i]->kind, ds_scope(in.v[i]), in.v[i]->meta.name, &cur) <
			    0) {
				ctl_error("%s", ds_last_error(d));
				ret = CTL_FAIL;
				continue;
			}
			GROW(found.v, found.cap, found.n + 1);
			found.v[found.n++] = cur;
		}
		single = in.n == 1;
	} else {
		const struct br_kind *k = kind_arg(o.positional[0]);
		if (!k) {
			ret = CTL_USAGE;
			goto out;
		}
		const char *scope = NULL;
		if (k->namespaced)
			scope = o.all_namespaces ? NULL : (o.ns ? o.ns : "default");
		if (o.n_positional == 1) {
			struct br_object **objs;
			size_t n;
			if (ds_list(d, k, scope, &objs, &n) < 0) {
				ctl_error("%s", ds_last_error(d));
				ret = CTL_FAIL;
				goto out;
			}
			found.v = objs;
			found.n = found.cap = n;
			if (n == 0 && o.out != OUT_YAML && o.out != OUT_JSON) {
				if (scope)
					fprintf(stderr, "No resources found in %s namespace.\n",
						scope);
				else
					fprintf(stderr, "No resources found.\n");
			}
		} else {
			for (size_t i = 1; i < o.n_positional; i++) {
				struct br_object *cur;
				if (ds_get(d, k, scope, o.positional[i], &cur) < 0) {
					ctl_error("%s", ds_last_error(d));
					ret = CTL_FAIL;
					continue;
				}
				GROW(found.v, found.cap, found.n + 1);
				found.v[found.n++] = cur;
			}
			single = o.n_positional == 2;
		}
	}
	/* One named resource prints as itself; anything else as a List. */
	if (found.n || !single)
		ctl_print(stdout, found.v, found.n, o.out, o.all_namespaces, !single);
out:
	objlist_free(&in);
	objlist_free(&found);
	free_opts(&o);
	return ret;
}

int cmd_delete(struct ctl *c, int argc, char **argv)
{
	struct file_opts o = { 0 };
	struct objlist in = { 0 };
	int ret = CTL_USAGE;
	if (parse_opts("delete", argc, argv, &o, true, ctl_delete_flags) < 0)
		goto out;
	if (o.n_files && o.n_positional) {
		ctl_error("delete takes either -f FILE or KIND NAME..., not both");
		goto out;
	}
	if (!o.n_files && o.n_positional < 2) {
		ctl_error("delete needs KIND NAME... or -f FILE");
		goto out;
	}
	ret = CTL_FAIL;
	if (o.n_files && read_inputs(&o, &in) < 0)
		goto out;
	const struct br_kind *k = NULL;
	if (!o.n_files) {
		k = kind_arg(o.positional[0]);
		if (!k) {
			ret = CTL_USAGE;
			goto out;
		}
		if (k->internal) {
			ctl_error("%s is IPAM bookkeeping; use brindlectl ipam", k->kind);
			goto out;
		}
	}
	struct ds *d = ctl_ds(c);
	if (!d)
		goto out;
	ret = CTL_OK;
	size_t n = o.n_files ? in.n : o.n_positional - 1;
	for (size_t i = 0; i < n; i++) {
		const struct br_kind *kk = o.n_files ? in.v[i]->kind : k;
		const char *name = o.n_files ? in.v[i]->meta.name : o.positional[i + 1];
		const char *scope = o.n_files ? ds_scope(in.v[i])
					      : (kk->namespaced ? (o.ns ? o.ns : "default") : NULL);
		char kref[128];
		ctl_kind_ref(kk, kref, sizeof(kref));
		if (refuse_endpoint_write(d, kk, kref)) {
			ret = CTL_FAIL;
			continue;
		}
		/* the cluster's own object (a lab on Kubernetes), else the datastore's */
		const char *what = NULL, *why = NULL;
		int r = c->cluster_write ? c->cluster_write(c, kk, scope, name, NULL, &what) : 1;
		if (r == 1) {
			r = ds_delete(d, kk, scope, name, 0);
			why = r < 0 ? ds_last_error(d) : NULL;
		} else if (r == -ENOENT) {
			why = "not found";
		}
		if (r == -ENOENT && o.ignore_not_found)
			continue;
		if (r < 0) {
			if (why) /* else cluster_write said why */
				ctl_error("%s \"%s\": %s", kref, name, why);
			ret = CTL_FAIL;
			continue;
		}
		printf("%s \"%s\" deleted\n", kref, name);
	}
out:
	objlist_free(&in);
	free_opts(&o);
	return ret;
}
