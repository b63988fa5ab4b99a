/*
 * The etcd v3 datastore backend. Keys follow Calico's layout:
 *   /calico/resources/v3/projectcalico.org/<plural>/[<namespace>/]<name>
 *   /calico/resources/v3/networking.k8s.io/networkpolicies/<namespace>/<name>
 *   /calico/resources/v3/core/namespaces/<name>
 *   /calico/ipam/v2/assignment/ipv4/block/<a.b.c.d-len>
 *   /calico/ipam/v2/host/<node>/ipv4/block/<a.b.c.d-len>
 *   /calico/ipam/v2/handle/<handle id>
 * Values are the canonical JSON of the resource without resourceVersion,
 * which is the key's mod revision on every read. Creates compare the key's
 * create revision with 0, updates and conditional deletes its mod revision.
 */
#include "ds_internal.h"

#include <brindle/sys/etcd.h>
#include <brindle/core/hmap.h>
#include <brindle/core/json.h>
#include <brindle/sys/loop.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

struct etcd_ds {
	struct etcd *e;
};

static const struct ds_backend_ops ds_etcd_ops;

static struct etcd *etcd_of(struct ds *d)
{
	return ((struct etcd_ds *)d->priv)->e;
}

/* --- keys ------------------------------------------------------------------------- */

static const char *family_of(const char *name)
{
	return strchr(name, ':') ? "ipv6" : "ipv4";
}

static void kind_prefix(const struct br_kind *k, struct strbuf *out)
{
	switch (k->id) {
	case KIND_BLOCKAFFINITY:
		sb_adds(out, "/calico/ipam/v2/host/");
		return;
	case KIND_IPAMBLOCK:
		sb_adds(out, "/calico/ipam/v2/assignment/");
		return;
	case KIND_IPAMHANDLE:
		sb_adds(out, "/calico/ipam/v2/handle/");
		return;
	default:
		sb_addf(out, "/calico/resources/v3/%s/%s/", *k->group ? k->group : "core",
			k->plural);
	}
}

/* A name or scope must be one path segment. */
static bool segment_ok(const char *s)
{
	return s && *s && !strchr(s, '/');
}

static int key_for(const struct br_kind *k, const char *scope, const char *name, struct strbuf *out)
{
	if (!segment_ok(name))
		return -EINVAL;
	kind_prefix(k, out);
	switch (k->id) {
	case KIND_BLOCKAFFINITY:
		if (!segment_ok(scope))
			return -EINVAL;
		sb_addf(out, "%s/%s/block/%s", scope, family_of(name), name);
		return 0;
	case KIND_IPAMBLOCK:
		sb_addf(out, "%s/block/%s", family_of(name), name);
		return 0;
	default:
		if (k->namespaced) {
			if (!segment_ok(scope))
				return -EINVAL;
			sb_addf(out, "%s/", scope);
		}
		sb_adds(out, name);
		return 0;
	}
}

static const char *scope_of(const struct br_object *o)
{
	if (o->kind->id == KIND_BLOCKAFFINITY)
		return ((const struct br_blockaffinity *)o)->spec.node;
	return o->kind->namespaced ? o->meta.namespace : NULL;
}

static char *ds_etcd_key(const struct br_object *o)
{
	struct strbuf sb = STRBUF_INIT;
	sb_init(&sb);
	if (key_for(o->kind, scope_of(o), o->meta.name, &sb) < 0) {
		sb_free(&sb);
		return NULL;
	}
	return sb_detach(&sb);
}

/* Split a key under the kind's prefix into scope and name (pointers into @buf). */
static int parse_key(const struct br_kind *k, const char *key, char *buf, size_t size,
		     const char **scope, const char **name)
{
	struct strbuf p = STRBUF_INIT;
	sb_init(&p);
	kind_prefix(k, &p);
	bool under = str_has_prefix(key, sb_str(&p));
	size_t plen = p.len;
	sb_free(&p);
	if (!under || strlen(key + plen) >= size)
		return -EINVAL;
	strcpy(buf, key + plen);
	char *parts[6];
	size_t n = 0;
	for (char *s = buf; n < ARRAY_SIZE(parts);) {
		parts[n++] = s;
		char *slash = strchr(s, '/');
		if (!slash)
			break;
		*slash = '\0';
		s = slash + 1;
	}
	for (size_t i = 0; i < n; i++)
		if (!*parts[i])
			return -EINVAL;
	*scope = NULL;
	switch (k->id) {
	case KIND_BLOCKAFFINITY: /* <node>/<fam>/block/<name> */
		if (n != 4 || strcmp(parts[2], "block"))
			return -EINVAL;
		*scope = parts[0];
		*name = parts[3];
		return 0;
	case KIND_IPAMBLOCK: /* <fam>/block/<name> */
		if (n != 3 || strcmp(parts[1], "block"))
			return -EINVAL;
		*name = parts[2];
		return 0;
	default:
		if (k->namespaced) {
			if (n != 2)
				return -EINVAL;
			*scope = parts[0];
			*name = parts[1];
			return 0;
		}
		if (n != 1)
			return -EINVAL;
		*name = parts[0];
		return 0;
	}
}

/* --- values ------------------------------------------------------------------------ */

static void encode_value(struct br_object *o, struct strbuf *out)
{
	/* resourceVersion is the mod revision, never stored. */
	const char *rv = o->meta.resource_version;
	o->meta.resource_version = NULL;
	model_to_json(o, out);
	o->meta.resource_version = rv;
}

static struct br_object *decode_value(struct ds *d, const struct br_kind *k,
				      const struct etcd_kv *kv, struct strbuf *why)
{
	struct arena *a = arena_new();
	struct strbuf perr = STRBUF_INIT;
	struct jv *doc;
	struct br_object *o = NULL;
	sb_init(&perr);
	if (json_parse(a, kv->value, kv->value_len, &doc, &perr) < 0) {
		sb_addf(why, "%s: %s", kv->key, sb_str(&perr));
	} else {
		struct model_errors errs = { 0 };
		o = model_decode_kind(k, doc, &errs);
		if (!o)
			sb_addf(why, "%s: %s", kv->key, errs.n ? errs.v[0] : "does not decode");
		model_errors_clear(&errs);
	}
	sb_free(&perr);
	arena_free(a);
	if (!o)
		return NULL;
	/* The key is the identity; a value that claims another is corrupt. */
	char buf[512];
	const char *scope, *name;
	if (parse_key(k, kv->key, buf, sizeof(buf), &scope, &name) < 0 ||
	    !streq(name, o->meta.name) || (scope && !streq(scope, scope_of(o)))) {
		sb_addf(why, "%s: holds %s %s, which belongs under another key", kv->key, k->kind,
			o->meta.name);
		model_free(o);
		return NULL;
	}
	o->revision = kv->mod_revision;
	o->meta.resource_version = arena_printf(o->arena, "%" PRId64, kv->mod_revision);
	return o;
}

static int ds_etcd_fail(struct ds *d, int r, const char *what)
{
	return ds_fail(d, r, "%s: %s", what, etcd_last_error(etcd_of(d)));
}

/* --- CRUD ----------------------------------------------------------------------------- */

static int e_get(struct ds *d, const struct br_kind *k, const char *scope, const char *name,
		 struct br_object **out)
{
	struct strbuf key = STRBUF_INIT;
	sb_init(&key);
	int r = key_for(k, scope, name, &key);
	if (r < 0) {
		sb_free(&key);
		return ds_fail(d, r, "%s: invalid name or %s", k->kind,
			       k->namespaced ? "namespace" : "scope");
	}
	struct etcd_kv kv = { 0 };
	r = etcd_get(etcd_of(d), sb_str(&key), &kv);
	if (r == -ENOENT)
		r = ds_fail(d, -ENOENT, "%s \"%s\" not found", k->kind, name);
	else if (r < 0)
		r = ds_etcd_fail(d, r, "get");
	if (r == 0) {
		struct strbuf why = STRBUF_INIT;
		sb_init(&why);
		*out = decode_value(d, k, &kv, &why);
		if (!*out)
			r = ds_fail(d, -EINVAL, "%s", sb_str(&why));
		sb_free(&why);
	}
	etcd_kv_clear(&kv);
	sb_free(&key);
	return r;
}

static void list_prefix(const struct br_kind *k, const char *scope, struct strbuf *out)
{
	kind_prefix(k, out);
	if (scope && (k->namespaced || k->id == KIND_BLOCKAFFINITY))
		sb_addf(out, "%s/", scope);
}

static int e_list(struct ds *d, const struct br_kind *k, const char *scope, struct br_object ***out,
		  size_t *n)
{
	struct strbuf prefix = STRBUF_INIT;
	sb_init(&prefix);
	list_prefix(k, scope, &prefix);
	struct etcd_range range = { 0 };
	int r = etcd_list(etcd_of(d), sb_str(&prefix), 0, 0, &range);
	sb_free(&prefix);
	if (r < 0)
		return ds_etcd_fail(d, r, "list");
	struct br_object **objs = xcalloc(range.n ? range.n : 1, sizeof(*objs));
	size_t m = 0;
	struct strbuf why = STRBUF_INIT;
	sb_init(&why);
	for (size_t i = 0; i < range.n; i++) {
		struct br_object *o = decode_value(d, k, &range.kvs[i], &why);
		if (!o) {
			r = ds_fail(d, -EINVAL, "%s", sb_str(&why));
			break;
		}
		objs[m++] = o;
	}
	sb_free(&why);
	etcd_range_clear(&range);
	if (r < 0) {
		model_free_all(objs, m);
		return r;
	}
	*out = objs;
	*n = m;
	return 0;
}

/* Which failure: the key is gone, or it changed. */
static int cas_failure(struct ds *d, const struct etcd_txn_result *res, const char *what,
		       const char *name)
{
	if (res->n && !res->found[0])
		return ds_fail(d, -ENOENT, "%s \"%s\" not found", what, name);
	return ds_fail(d, -ECANCELED,
		       "%s \"%s\" was modified by someone else; read it again and retry", what,
		       name);
}

/*
 * Write @o if its key's @target revision is @revision: create revision 0 for a
 * create, the mod revision that was read for an update.
 */
static int put_if(struct ds *d, struct br_object *o, enum etcd_cmp_target target, int64_t revision)
{
	bool create = target == ETCD_CMP_CREATE;
	char *key = ds_etcd_key(o);
	if (!key)
		return ds_fail(d, -EINVAL, "%s: invalid name or scope", o->kind->kind);
	struct strbuf val = STRBUF_INIT;
	sb_init(&val);
	encode_value(o, &val);
	struct etcd_cmp cmp = {
		.key = key, .target = target, .result = ETCD_CMP_EQUAL, .revision = revision
	};
	struct etcd_op put = {
		.type = ETCD_OP_PUT, .key = key, .value = val.buf, .value_len = val.len
	};
	struct etcd_op get = { .type = ETCD_OP_GET, .key = key };
	struct etcd_txn_result res = { 0 };
	int r = etcd_txn(etcd_of(d), &cmp, 1, &put, 1, &get, 1, &res);
	if (r < 0)
		r = ds_etcd_fail(d, r, create ? "create" : "update");
	else if (!res.succeeded && create)
		r = ds_fail(d, -EEXIST, "%s \"%s\" already exists", o->kind->kind, o->meta.name);
	else if (!res.succeeded)
		r = cas_failure(d, &res, o->kind->kind, o->meta.name);
	else {
		o->revision = res.revision;
		o->meta.resource_version = arena_printf(o->arena, "%" PRId64, res.revision);
	}
	etcd_txn_result_clear(&res);
	sb_free(&val);
	free(key);
	return r;
}

static int e_create(struct ds *d, struct br_object *o)
{
	return put_if(d, o, ETCD_CMP_CREATE, 0);
}

static int e_update(struct ds *d, struct br_object *o)
{
	return put_if(d, o, ETCD_CMP_MOD, o->revision);
}

static int e_del(struct ds *d, const struct br_kind *k, const char *scope, const char *name,
		 int64_t revision)
{
	struct strbuf key = STRBUF_INIT;
	sb_init(&key);
	int r = key_for(k, scope, name, &key);
	if (r < 0) {
		sb_free(&key);
		return ds_fail(d, r, "%s: invalid name or scope", k->kind);
	}
	if (revision > 0) {
		struct etcd_cmp cmp = { .key = key.buf,
					.target = ETCD_CMP_MOD,
					.result = ETCD_CMP_EQUAL,
					.revision = revision };
		struct etcd_op del = { .type = ETCD_OP_DELETE, .key = key.buf };
		struct etcd_op get = { .type = ETCD_OP_GET, .key = key.buf };
		struct etcd_txn_result res = { 0 };
		r = etcd_txn(etcd_of(d), &cmp, 1, &del, 1, &get, 1, &res);
		if (r < 0)
			r = ds_etcd_fail(d, r, "delete");
		else if (!res.succeeded)
			r = cas_failure(d, &res, k->kind, name);
		etcd_txn_result_clear(&res);
	} else {
		bool deleted = false;
		r = etcd_delete(etcd_of(d), key.buf, &deleted, NULL);
		if (r < 0)
			r = ds_etcd_fail(d, r, "delete");
		else if (!deleted)
			r = ds_fail(d, -ENOENT, "%s \"%s\" not found", k->kind, name);
	}
	sb_free(&key);
	return r;
}

static int e_write_all(struct ds *d, struct ds_write *w, size_t n)
{
	struct etcd_cmp *cmps = xcalloc(n ? n : 1, sizeof(*cmps));
	struct etcd_op *ops = xcalloc(n ? n : 1, sizeof(*ops));
	struct strbuf *vals = xcalloc(n ? n : 1, sizeof(*vals));
	char **keys = xcalloc(n ? n : 1, sizeof(*keys));
	int r = 0;
	for (size_t i = 0; i < n && r == 0; i++) {
		struct br_object *o = w[i].obj;
		keys[i] = ds_etcd_key(o);
		sb_init(&vals[i]);
		if (!keys[i]) {
			r = ds_fail(d, -EINVAL, "%s: invalid name or scope", o->kind->kind);
			break;
		}
		bool create = w[i].op == DS_WRITE_CREATE;
		cmps[i] = (struct etcd_cmp){ .key = keys[i],
					     .target = create ? ETCD_CMP_CREATE : ETCD_CMP_MOD,
					     .result = ETCD_CMP_EQUAL,
					     .revision = create ? 0 : o->revision };
		if (w[i].op == DS_WRITE_DELETE) {
			ops[i] = (struct etcd_op){ .type = ETCD_OP_DELETE, .key = keys[i] };
		} else {
			encode_value(o, &vals[i]);
			ops[i] = (struct etcd_op){ .type = ETCD_OP_PUT,
						   .key = keys[i],
						   .value = vals[i].buf,
						   .value_len = vals[i].len };
		}
	}
	if (r == 0) {
		struct etcd_txn_result res = { 0 };
		r = etcd_txn(etcd_of(d), cmps, n, ops, n, NULL, 0, &res);
		if (r < 0) {
			r = ds_etcd_fail(d, r, "transaction");
		} else if (!res.succeeded) {
			r = ds_fail(
				d, -ECANCELED,
				"%zu objects changed by someone else; read them again and retry",
				n);
		} else {
			for (size_t i = 0; i < n; i++) {
				if (w[i].op == DS_WRITE_DELETE)
					continue;
				w[i].obj->revision = res.revision;
				w[i].obj->meta.resource_version =
					arena_printf(w[i].obj->arena, "%" PRId64, res.revision);
			}
		}
		etcd_txn_result_clear(&res);
	}
	for (size_t i = 0; i < n; i++) {
		sb_free(&vals[i]);
		free(keys[i]);
	}
	free(vals);
	free(keys);
	free(ops);
	free(cmps);
	return r;
}

/* --- the syncer -------------------------------------------------------------------------- */

struct esync;

struct esync_kind {
	struct esync *s;
	const struct br_kind *k;
	char *scope;
	char *prefix;
	bool listed;
	struct etcd_list_op *listing; /* the list in flight */
	struct hmap seen;	      /* cache keys the list in flight has shown */
	struct etcd_watch *watch;
	struct hmap cache; /* key without the prefix → mod revision (pointer-sized) */
};

struct esync {
	struct ds_syncer base;
	struct ds *d;
	struct loop *l;
	struct esync_kind *kinds;
	size_t n;
	const struct ds_syncer_ops *ops;
	void *ctx;
	enum ds_sync_status status;
	struct loop_timer *timer;
	uint64_t backoff_ms;
};

static void set_status(struct esync *s, enum ds_sync_status st)
{
	if (s->status == st)
		return;
	s->status = st;
	s->ops->status(s->ctx, st);
}

/* The cache keys by what follows the prefix: thousands of copies of it add up. */
static const char *rel_key(const struct esync_kind *sk, const char *key)
{
	size_t n = strlen(sk->prefix);
	return strncmp(key, sk->prefix, n) == 0 ? key + n : NULL;
}

static void deliver_kv(struct esync_kind *sk, const struct etcd_kv *kv)
{
	struct ds_update u = { .kind = sk->k };
	char buf[512];
	const char *rel = rel_key(sk, kv->key);
	if (!rel || parse_key(sk->k, kv->key, buf, sizeof(buf), &u.scope, &u.name) < 0)
		return; /* not one of ours */
	intptr_t rev = (intptr_t)hmap_get(&sk->cache, rel);
	if (rev == (intptr_t)kv->mod_revision)
		return; /* already delivered */
	struct strbuf why = STRBUF_INIT;
	sb_init(&why);
	u.obj = decode_value(sk->s->d, sk->k, kv, &why);
	if (!u.obj)
		u.error = sb_str(&why);
	hmap_put(&sk->cache, rel, (void *)(intptr_t)kv->mod_revision);
	sk->s->ops->update(sk->s->ctx, &u);
	sb_free(&why);
}

/* @rel: a cache key (the part after the prefix). */
static void deliver_delete(struct esync_kind *sk, const char *rel)
{
	struct ds_update u = { .kind = sk->k };
	char buf[512], full[512];
	if (!hmap_has(&sk->cache, rel))
		return;
	/* Parse first: @rel may be the cache's own copy, freed by hmap_del. */
	snprintf(full, sizeof(full), "%s%s", sk->prefix, rel);
	int r = parse_key(sk->k, full, buf, sizeof(buf), &u.scope, &u.name);
	hmap_del(&sk->cache, rel);
	if (r < 0)
		return;
	sk->s->ops->update(sk->s->ctx, &u);
}

static void on_watch_events(void *ctx, const struct etcd_event *evs, size_t n, int64_t revision)
{
	struct esync_kind *sk = ctx;
	for (size_t i = 0; i < n; i++) {
		if (evs[i].type == ETCD_EVENT_PUT)
			deliver_kv(sk, &evs[i].kv);
		else if (rel_key(sk, evs[i].kv.key))
			deliver_delete(sk, rel_key(sk, evs[i].kv.key));
	}
}

static void on_watch_compacted(void *ctx, int64_t compact_revision)
{
	struct esync_kind *sk = ctx;
	/* Re-list from the loop, not from inside the watch's callback. */
	sk->listed = false;
	set_status(sk->s, DS_RESYNC);
	loop_timer_arm(sk->s->timer, 1, 0);
}

static void on_watch_state(void *ctx, bool connected, const char *why)
{
	(void)ctx;
	(void)connected;
	(void)why;
}

static const struct etcd_watch_ops watch_ops = {
	.events = on_watch_events,
	.compacted = on_watch_compacted,
	.state = on_watch_state,
};

static void sync_next(struct esync *s);

static int deliver_page(void *ctx, const struct etcd_kv *kvs, size_t n)
{
	struct esync_kind *sk = ctx;
	for (size_t i = 0; i < n; i++) {
		const char *rel = rel_key(sk, kvs[i].key);
		if (rel)
			hmap_put(&sk->seen, rel, (void *)1);
		deliver_kv(sk, &kvs[i]);
	}
	return 0;
}

static void sync_failed(struct esync *s)
{
	set_status(s, DS_WAIT_FOR_DATASTORE);
	s->backoff_ms = s->backoff_ms ? MIN(s->backoff_ms * 2, 5000) : 250;
	loop_timer_arm(s->timer, s->backoff_ms, 0);
}

/*
 * A kind's list ended: deliver the deletes of whatever it no longer has,
 * watch from its revision, and go on with the next kind.
 */
static void list_done(void *ctx, int err, int64_t revision)
{
	struct esync_kind *sk = ctx;
	struct esync *s = sk->s;
	struct ds *d = s->d;
	sk->listing = NULL;
	if (err < 0) {
		hmap_clear(&sk->seen);
		(void)ds_etcd_fail(d, err, "list");
		sync_failed(s);
		return;
	}
	for (struct hmap_iter it = hmap_iter(&sk->cache); hmap_next(&it);)
		if (!hmap_has(&sk->seen, it.key))
			deliver_delete(sk, it.key);
	hmap_clear(&sk->seen);
	etcd_watch_stop(sk->watch);
	sk->watch = NULL;
	int r = etcd_watch_start(etcd_of(d), s->l, sk->prefix, revision + 1, &watch_ops, sk,
				 &sk->watch);
	if (r < 0) {
		(void)ds_etcd_fail(d, r, "watch");
		sync_failed(s);
		return;
	}
	sk->listed = true;
	sync_next(s);
}

/* List the next kind that needs it (one at a time, in order), or report in sync. */
static void sync_next(struct esync *s)
{
	for (size_t i = 0; i < s->n; i++) {
		struct esync_kind *sk = &s->kinds[i];
		if (sk->listed)
			continue;
		if (sk->listing)
			return;
		if (s->status == DS_WAIT_FOR_DATASTORE)
			set_status(s, DS_RESYNC);
		int r = etcd_list_start(etcd_of(s->d), s->l, sk->prefix, 0, 0, deliver_page,
					list_done, sk, &sk->listing);
		if (r < 0) {
			sk->listing = NULL;
			(void)ds_etcd_fail(s->d, r, "list");
			sync_failed(s);
		}
		return;
	}
	s->backoff_ms = 0;
	set_status(s, DS_IN_SYNC);
}

static void sync_pending(struct loop *l, struct loop_timer *t, void *ctx)
{
	sync_next(ctx);
}

static int e_syncer_start(struct ds *d, struct loop *l, const struct ds_watch_spec *specs, size_t n,
			  const struct ds_syncer_ops *ops, void *ctx, struct ds_syncer **out)
{
	struct esync *s = xcalloc(1, sizeof(*s));
	s->base.ops = &ds_etcd_ops;
	s->d = d;
	s->l = l;
	s->ops = ops;
	s->ctx = ctx;
	s->status = DS_RESYNC;
	s->kinds = xcalloc(n ? n : 1, sizeof(*s->kinds));
	s->n = n;
	for (size_t i = 0; i < n; i++) {
		struct esync_kind *sk = &s->kinds[i];
		struct strbuf p = STRBUF_INIT;
		sb_init(&p);
		sk->s = s;
		sk->k = model_kind(specs[i].kind);
		sk->scope = specs[i].scope ? xstrdup(specs[i].scope) : NULL;
		list_prefix(sk->k, sk->scope, &p);
		sk->prefix = sb_detach(&p);
	}
	s->timer = loop_timer_new(l, sync_pending, s);
	if (!s->timer) {
		ops->status(ctx, DS_WAIT_FOR_DATASTORE);
		free(s->kinds);
		free(s);
		return ds_fail(d, -ENOMEM, "cannot create a timer");
	}
	loop_timer_arm(s->timer, 1, 0);
	*out = &s->base;
	return 0;
}

static void e_syncer_stop(struct ds_syncer *base)
{
	struct esync *s = container_of(base, struct esync, base);
	for (size_t i = 0; i < s->n; i++) {
		etcd_list_cancel(s->kinds[i].listing);
		hmap_clear(&s->kinds[i].seen);
		etcd_watch_stop(s->kinds[i].watch);
		hmap_clear(&s->kinds[i].cache);
		free(s->kinds[i].scope);
		free(s->kinds[i].prefix);
	}
	loop_timer_free(s->timer);
	free(s->kinds);
	etcd_loop_release(etcd_of(s->d));
	free(s);
}

static enum ds_sync_status e_syncer_status(const struct ds_syncer *base)
{
	return container_of(base, const struct esync, base)->status;
}

static void e_close(struct ds *d)
{
	struct etcd_ds *ed = d->priv;
	etcd_free(ed->e);
	free(ed);
}

static const struct ds_backend_ops ds_etcd_ops = {
	.close = e_close,
	.get = e_get,
	.list = e_list,
	.create = e_create,
	.update = e_update,
	.del = e_del,
	.write_all = e_write_all,
	.syncer_start = e_syncer_start,
	.syncer_stop = e_syncer_stop,
	.syncer_status = e_syncer_status,
};

int ds_etcd_open(const struct ds_config *cfg, struct ds *d, struct strbuf *err)
{
	struct etcd_config ec = {
		.endpoints = cfg->etcd_endpoints,
		.n_endpoints = cfg->n_etcd_endpoints,
		.ca_file = cfg->etcd_ca_file,
		.cert_file = cfg->etcd_cert_file,
		.key_file = cfg->etcd_key_file,
		.timeout_ms = cfg->timeout_ms,
	};
	struct etcd_ds *ed = xcalloc(1, sizeof(*ed));
	int r = etcd_new(&ec, &ed->e, err);
	if (r < 0) {
		free(ed);
		return r;
	}
	d->ops = &ds_etcd_ops;
	d->priv = ed;
	return 0;
}
