/*
 * The datastore front: configuration from the environment, the backend
 * chosen from the table in ds_backends.c, dispatch to it, and the semantics
 * above every backend (apply, stamping new resources).
 */
#include "ds_internal.h"

#include <brindle/core/json.h>
#include <brindle/core/model.h>
#include <brindle/core/net.h>
#include <brindle/sys/etcd.h>
#include <brindle/sys/log.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

const char *ds_last_error(const struct ds *d)
{
	return sb_str(&d->err);
}

static void free_endpoints(struct ds_config_storage *storage)
{
	for (size_t i = 0; i < storage->n; i++)
		free(storage->endpoints[i]);
	free(storage->endpoints);
	storage->endpoints = NULL;
	storage->n = 0;
}

int ds_config_set_endpoints(struct ds_config *cfg, struct ds_config_storage *storage,
			    const char *list, struct strbuf *err)
{
	char **eps;
	size_t n;
	if (etcd_parse_endpoints(list, &eps, &n) < 0) {
		if (err)
			sb_addf(err, "invalid etcd endpoints \"%s\"", list);
		return -EINVAL;
	}
	free_endpoints(storage);
	storage->endpoints = eps;
	storage->n = n;
	cfg->etcd_endpoints = (const char *const *)eps;
	cfg->n_etcd_endpoints = n;
	return 0;
}

void ds_config_free_storage(struct ds_config_storage *storage)
{
	free_endpoints(storage);
}

static const char *env(const char *name)
{
	const char *v = getenv(name);
	return v && *v ? v : NULL;
}

int ds_config_from_env(struct ds_config *cfg, struct ds_config_storage *storage, struct strbuf *err)
{
	static const char *const type_vars[] = { "BRINDLE_DATASTORE_TYPE", "DATASTORE_TYPE",
						 "CALICO_DATASTORE_TYPE" };
	const char *from = NULL; /* NULL: the caller's (a flag) */
	for (size_t i = 0; !cfg->type && i < ARRAY_SIZE(type_vars); i++) {
		cfg->type = env(type_vars[i]);
		from = type_vars[i];
	}
	if (!cfg->type)
		cfg->type = "etcdv3";
	const char *grace = env("BRINDLE_DATASTORE_GRACE");
	if (!cfg->outage_grace_ms && grace) {
		if (duration_or_seconds_parse(grace, &cfg->outage_grace_ms) < 0) {
			if (err)
				sb_addf(err,
					"BRINDLE_DATASTORE_GRACE: \"%.40s\" is not a duration "
					"(30s, "
					"1m) or a number of seconds",
					grace);
			return -EINVAL;
		}
	} else if (!grace && !cfg->outage_grace_ms) {
		cfg->outage_grace_ms = DS_OUTAGE_GRACE_DEFAULT_MS;
	}
	if (streq(cfg->type, "kubernetes")) {
		/* Else kube_conn_load reads KUBECONFIG's list (merged), then in-cluster. */
		if (!cfg->kubeconfig)
			cfg->kubeconfig = env("BRINDLE_KUBECONFIG");
		return 0;
	}
	if (!streq(cfg->type, "etcdv3")) {
		if (err)
			sb_addf(err,
				"datastore type \"%s\"%s%s%s is not supported: etcdv3 or "
				"kubernetes",
				cfg->type, from ? " (from " : "", from ? from : "",
				from ? ")" : "");
		return -EINVAL;
	}
	if (!cfg->n_etcd_endpoints) {
		const char *eps = env("BRINDLE_ETCD_ENDPOINTS");
		int r = ds_config_set_endpoints(cfg, storage, eps ? eps : "http://127.0.0.1:2379",
						err);
		if (r < 0)
			return r;
	}
	if (!cfg->etcd_ca_file)
		cfg->etcd_ca_file = env("BRINDLE_ETCD_CA_CERT_FILE");
	if (!cfg->etcd_cert_file)
		cfg->etcd_cert_file = env("BRINDLE_ETCD_CERT_FILE");
	if (!cfg->etcd_key_file)
		cfg->etcd_key_file = env("BRINDLE_ETCD_KEY_FILE");
	return 0;
}

/* --- outages -------------------------------------------------------------------------------- */

void ds_outage_init(struct ds_outage *o, uint64_t grace_ms)
{
	*o = (struct ds_outage){ .grace_ms = grace_ms, .status = DS_RESYNC };
}

void ds_outage_status(struct ds_outage *o, enum ds_sync_status st, const char *why, uint64_t now_ms)
{
	snprintf(o->why, sizeof(o->why), "%s", why ? why : "");
	enum ds_sync_status was = o->status;
	o->status = st;
	if (st == DS_IN_SYNC) {
		if (o->since_ms)
			log_info("datastore: in sync again after an outage of %.1f s",
				 (double)(now_ms - o->since_ms) / 1e3);
		o->since_ms = 0;
		o->ever_in_sync = true;
		return;
	}
	if (!o->ever_in_sync) {
		if (st != was)
			log_debug("datastore: %s: %s",
				  st == DS_WAIT_FOR_DATASTORE ? "waiting" : "listing", o->why);
		return;
	}
	if (o->since_ms) {
		log_debug("datastore: still out of sync (%s): %s",
			  st == DS_WAIT_FOR_DATASTORE ? "unreachable" : "listing again", o->why);
		return;
	}
	o->since_ms = now_ms ? now_ms : 1;
	log_warn("datastore: %s: %s; everything programmed stays as it is; not ready if this "
		 "lasts %.0f s",
		 st == DS_WAIT_FOR_DATASTORE ? "unreachable" : "listing again", o->why,
		 (double)o->grace_ms / 1e3);
}

bool ds_outage_ok(const struct ds_outage *o, uint64_t now_ms)
{
	if (o->status == DS_IN_SYNC)
		return true;
	return o->since_ms && now_ms - o->since_ms < o->grace_ms;
}

uint64_t ds_outage_ms(const struct ds_outage *o, uint64_t now_ms)
{
	return o->since_ms && now_ms > o->since_ms ? now_ms - o->since_ms : 0;
}

void ds_outage_describe(const struct ds_outage *o, uint64_t now_ms, struct strbuf *out)
{
	if (o->status == DS_IN_SYNC)
		return;
	const char *sep = o->why[0] ? ": " : "";
	if (!o->since_ms) {
		sb_addf(out, "datastore: %s%s%s",
			o->status == DS_WAIT_FOR_DATASTORE ? "waiting for the datastore"
							   : "not in sync yet",
			sep, o->why);
		return;
	}
	const char *what = o->status == DS_WAIT_FOR_DATASTORE ? "unreachable" : "listing again";
	double secs = (double)ds_outage_ms(o, now_ms) / 1e3;
	if (ds_outage_ok(o, now_ms))
		sb_addf(out, "datastore: %s for %.0f s (not ready after %.0f s)%s%s", what, secs,
			(double)o->grace_ms / 1e3, sep, o->why);
	else
		sb_addf(out, "datastore: %s for %.0f s%s%s", what, secs, sep, o->why);
}

int ds_open(const struct ds_config *cfg, struct ds **out, struct strbuf *err)
{
	struct ds *d = xcalloc(1, sizeof(*d));
	sb_init(&d->err);
	int r = -EINVAL;
	const struct ds_backend *b = ds_backend_find(cfg->type ? cfg->type : "etcdv3");
	if (b) {
		d->type = b->type;
		r = b->open(cfg, d, err);
	} else if (err)
		sb_addf(err, "datastore type \"%s\" is not supported", cfg->type);
	if (r < 0) {
		sb_free(&d->err);
		free(d);
		return r;
	}
	*out = d;
	return 0;
}

void ds_close(struct ds *d)
{
	if (!d)
		return;
	d->ops->close(d);
	sb_free(&d->err);
	free(d);
}

int ds_get(struct ds *d, const struct br_kind *k, const char *scope, const char *name,
	   struct br_object **out)
{
	return d->ops->get(d, k, scope, name, out);
}

int ds_list(struct ds *d, const struct br_kind *k, const char *scope, struct br_object ***out,
	    size_t *n)
{
	return d->ops->list(d, k, scope, out, n);
}

int ds_read_many(struct ds *d, struct ds_read *r, size_t n)
{
	if (d->ops->read_many)
		return d->ops->read_many(d, r, n);
	int first = 0;
	for (size_t i = 0; i < n; i++) {
		r[i].obj = NULL;
		r[i].objs = NULL;
		r[i].n = 0;
		r[i].err = !r[i].kind  ? -EOPNOTSUPP
			   : r[i].name ? ds_get(d, r[i].kind, r[i].scope, r[i].name, &r[i].obj)
				       : ds_list(d, r[i].kind, r[i].scope, &r[i].objs, &r[i].n);
		if (r[i].err < 0 && !first)
			first = r[i].err;
	}
	return first;
}

/*
 * What Calico refuses of a write of IP pools, because either would corrupt
 * IPAM on a live cluster: changing an existing pool's cidr or blockSize (its
 * blocks were carved with them), and a pool that overlaps another (two pools
 * would hand out the same addresses).
 */
void ds_keep_pools(struct ds *d, bool keep)
{
	d->keep_pools = keep;
}

int ds_check_pools(struct ds *d, struct br_object *const *objs, size_t n)
{
	size_t npools = 0;
	if (d->keep_pools)
		return 0;
	for (size_t i = 0; i < n; i++)
		npools += objs[i]->kind->id == KIND_IPPOOL;
	if (!npools)
		return 0;
	struct br_object **cur = NULL;
	size_t ncur = 0;
	int r = ds_list(d, model_kind(KIND_IPPOOL), NULL, &cur, &ncur);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n && r == 0; i++) {
		if (objs[i]->kind->id != KIND_IPPOOL)
			continue;
		const struct br_ippool *p = (const struct br_ippool *)objs[i];
		struct br_cidr pc;
		if (cidr_parse(p->spec.cidr, false, &pc) < 0)
			continue; /* the model refused it already */
		for (size_t j = 0; j < ncur + i && r == 0; j++) {
			const struct br_ippool *q =
				(const struct br_ippool *)(j < ncur ? cur[j] : objs[j - ncur]);
			if (j >= ncur && q->o.kind->id != KIND_IPPOOL)
				continue;
			bool same = streq(q->o.meta.name, p->o.meta.name);
			if (same && j < ncur && !streq(q->spec.cidr, p->spec.cidr))
				r = ds_fail(
					d, -EINVAL,
					"IPPool %s: spec.cidr cannot be changed (%s to %s): its "
					"blocks were carved from it; create a new pool, disable "
					"this one and delete it once its addresses are released",
					p->o.meta.name, q->spec.cidr, p->spec.cidr);
			else if (same && j < ncur && q->spec.block_size.v != p->spec.block_size.v)
				r = ds_fail(
					d, -EINVAL,
					"IPPool %s: spec.blockSize cannot be changed (%" PRId64
					" to %" PRId64 "): its blocks were carved with it; create "
					"a new pool instead",
					p->o.meta.name, q->spec.block_size.v, p->spec.block_size.v);
			struct br_cidr qc;
			if (r == 0 && !same && cidr_parse(q->spec.cidr, false, &qc) == 0 &&
			    cidr_overlaps(&pc, &qc))
				r = ds_fail(d, -EINVAL,
					    "IPPool %s: spec.cidr %s overlaps IPPool %s (%s)",
					    p->o.meta.name, p->spec.cidr, q->o.meta.name,
					    q->spec.cidr);
		}
	}
	model_free_all(cur, ncur);
	return r;
}

int ds_create(struct ds *d, struct br_object *o)
{
	int r = ds_check_pools(d, &o, 1);
	if (r < 0)
		return r;
	ds_stamp_new(o);
	return d->ops->create(d, o);
}

int ds_update(struct ds *d, struct br_object *o)
{
	int r = ds_check_pools(d, &o, 1);
	if (r < 0)
		return r;
	return d->ops->update(d, o);
}

int ds_apply(struct ds *d, struct br_object *o, bool *created, bool *changed)
{
	const char *scope = ds_scope(o);
	for (int attempt = 0; attempt < 10; attempt++) {
		struct br_object *cur = NULL;
		int r = ds_get(d, o->kind, scope, o->meta.name, &cur);
		if (r == -ENOENT) {
			r = ds_create(d, o);
			if (r == -EEXIST)
				continue; /* lost a race with another creator */
			if (r == 0) {
				*created = true;
				*changed = true;
			}
			return r;
		}
		if (r < 0)
			return r;
		/* Keep the identity of what is stored; the user's copy may not carry it. */
		o->meta.uid = arena_strdup(o->arena, cur->meta.uid);
		o->meta.creation_timestamp = arena_strdup(o->arena, cur->meta.creation_timestamp);
		o->revision = cur->revision;
		bool same = d->ops->same_content ? d->ops->same_content(cur, o)
						 : model_same_content(cur, o);
		model_free(cur);
		*created = false;
		if (same) {
			*changed = false;
			return 0;
		}
		r = ds_update(d, o);
		if (r == -ECANCELED || r == -ENOENT)
			continue; /* changed under us: read again */
		if (r == 0)
			*changed = true;
		return r;
	}
	return ds_fail(d, -ECANCELED, "%s %s kept changing while being applied", o->kind->kind,
		       o->meta.name);
}

int ds_set_dry_run(struct ds *d, bool on)
{
	if (on && !streq(d->type, "kubernetes"))
		return ds_fail(d, -EOPNOTSUPP, "the %s datastore has no dry run", d->type);
	d->dry_run = on;
	return 0;
}

/* One batch of ds_apply_all: read, decide, write together. */
static int apply_batch(struct ds *d, struct br_object **objs, size_t n, enum ds_apply_outcome *what)
{
	struct ds_write *w = xcalloc(n ? n : 1, sizeof(*w));
	int r = -ECANCELED;
	for (int attempt = 0; attempt < 10 && (r == -ECANCELED || r == -EEXIST); attempt++) {
		size_t m = 0;
		r = 0;
		for (size_t i = 0; i < n && r == 0; i++) {
			struct br_object *o = objs[i], *cur = NULL;
			r = ds_get(d, o->kind, ds_scope(o), o->meta.name, &cur);
			if (r == -ENOENT) {
				w[m++] = (struct ds_write){ DS_WRITE_CREATE, o };
				what[i] = DS_APPLY_CREATED;
				r = 0;
				continue;
			}
			if (r < 0)
				break;
			/* Keep the identity of what is stored; the user's copy may not carry it. */
			o->meta.uid = arena_strdup(o->arena, cur->meta.uid);
			o->meta.creation_timestamp =
				arena_strdup(o->arena, cur->meta.creation_timestamp);
			o->revision = cur->revision;
			bool same = d->ops->same_content ? d->ops->same_content(cur, o)
							 : model_same_content(cur, o);
			model_free(cur);
			what[i] = same ? DS_APPLY_UNCHANGED : DS_APPLY_CONFIGURED;
			if (!same)
				w[m++] = (struct ds_write){ DS_WRITE_UPDATE, o };
		}
		if (r == 0 && m)
			r = ds_write_seq(d, w, m, NULL);
	}
	if (r < 0)
		for (size_t i = 0; i < n; i++)
			what[i] = DS_APPLY_NOT_WRITTEN;
	free(w);
	return r;
}

/* An object's size as stored (its JSON), near enough for batching. */
static size_t stored_size(const struct br_object *o)
{
	struct arena *a = arena_new();
	struct strbuf sb = STRBUF_INIT;
	sb_init(&sb);
	json_write(&sb, model_encode(a, o), false);
	size_t n = sb.len;
	sb_free(&sb);
	arena_free(a);
	return n;
}

int ds_apply_all(struct ds *d, struct br_object **objs, size_t n, enum ds_apply_outcome *what)
{
	if (!ds_has_transactions(d))
		return ds_fail(d, -EOPNOTSUPP, "the %s datastore has no transactions", d->type);
	for (size_t i = 0; i < n; i++)
		what[i] = DS_APPLY_NOT_WRITTEN;
	for (size_t i = 0; i < n;) {
		/* At most DS_APPLY_BATCH objects and DS_APPLY_BATCH_BYTES (etcd takes 1.5 MiB a
		 * request), one object at least. */
		size_t m = 0, bytes = 0;
		while (i + m < n && m < DS_APPLY_BATCH) {
			size_t b = stored_size(objs[i + m]);
			if (m && bytes + b > DS_APPLY_BATCH_BYTES)
				break;
			bytes += b;
			m++;
		}
		int r = apply_batch(d, objs + i, m, what + i);
		if (r < 0)
			return r;
		i += m;
	}
	return 0;
}

int ds_delete(struct ds *d, const struct br_kind *k, const char *scope, const char *name,
	      int64_t revision)
{
	return d->ops->del(d, k, scope, name, revision);
}

int ds_write_seq(struct ds *d, struct ds_write *w, size_t n, size_t *done)
{
	size_t ok = 0;
	int r = 0;
	struct br_object **objs = xcalloc(n ? n : 1, sizeof(*objs));
	size_t nw = 0;
	for (size_t i = 0; i < n; i++)
		if (w[i].op == DS_WRITE_CREATE || w[i].op == DS_WRITE_UPDATE)
			objs[nw++] = w[i].obj;
	r = ds_check_pools(d, objs, nw);
	free(objs);
	if (r < 0) {
		if (done)
			*done = 0;
		return r;
	}
	for (size_t i = 0; i < n; i++)
		if (w[i].op == DS_WRITE_CREATE)
			ds_stamp_new(w[i].obj);
	if (d->ops->write_all) {
		r = d->ops->write_all(d, w, n);
		ok = r == 0 ? n : 0;
	} else {
		for (; ok < n; ok++) {
			struct br_object *o = w[ok].obj;
			switch (w[ok].op) {
			case DS_WRITE_CREATE:
				r = d->ops->create(d, o);
				break;
			case DS_WRITE_UPDATE:
				r = d->ops->update(d, o);
				break;
			case DS_WRITE_DELETE:
				r = d->ops->del(d, o->kind, ds_scope(o), o->meta.name, o->revision);
				break;
			}
			if (r < 0)
				break;
		}
	}
	if (done)
		*done = ok;
	return r;
}

bool ds_has_transactions(const struct ds *d)
{
	return d->ops->write_all != NULL;
}

static int no_lock(struct ds *d)
{
	return ds_fail(d, -EOPNOTSUPP,
		       "the %s datastore has no migration lock (only etcd is migrated from)",
		       d->type);
}

int ds_set_locked(struct ds *d, bool locked, bool *changed)
{
	bool ch = false;
	int r = d->ops->set_locked ? d->ops->set_locked(d, locked, &ch) : no_lock(d);
	if (r == 0 && changed)
		*changed = ch;
	return r;
}

int ds_is_locked(struct ds *d, bool *locked)
{
	return d->ops->is_locked ? d->ops->is_locked(d, locked) : no_lock(d);
}

int ds_syncer_start(struct ds *d, struct loop *l, const struct ds_watch_spec *specs, size_t n,
		    const struct ds_syncer_ops *ops, void *ctx, struct ds_syncer **out)
{
	return d->ops->syncer_start(d, l, specs, n, ops, ctx, out);
}

void ds_syncer_stop(struct ds_syncer *s)
{
	if (s)
		s->ops->syncer_stop(s);
}

enum ds_sync_status ds_syncer_status(const struct ds_syncer *s)
{
	return s->ops->syncer_status(s);
}

const char *ds_syncer_why(const struct ds_syncer *s)
{
	return s->ops->syncer_why(s);
}
