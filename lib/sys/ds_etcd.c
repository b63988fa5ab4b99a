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
 * Every write also compares DS_ETCD_LOCK_KEY's create revision with 0 in the
 * same transaction: while the migration lock is there, writes fail (-EROFS).
 */
#include "ds_internal.h"

#include <brindle/sys/etcd.h>
#include <brindle/core/hash.h>
#include <brindle/core/hmap.h>
#include <brindle/sys/clock.h>
#include <brindle/core/json.h>
#include <brindle/sys/loop.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

struct etcd_ds {
	struct etcd *e;
};

static const struct ds_backend_ops ds_etcd_ops;
static void e_syncer_stop(struct ds_syncer *base);

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

static char *ds_etcd_key(const struct br_object *o)
{
	struct strbuf sb = STRBUF_INIT;
	sb_init(&sb);
	if (key_for(o->kind, ds_scope(o), o->meta.name, &sb) < 0) {
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
	    !streq(name, o->meta.name) || (scope && !streq(scope, ds_scope(o)))) {
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

/* --- the migration lock ------------------------------------------------------------------ */

/* The comparison every write carries: the lock key is absent. */
static const struct etcd_cmp unlocked_cmp = {
	.key = DS_ETCD_LOCK_KEY, .target = ETCD_CMP_CREATE, .result = ETCD_CMP_EQUAL, .revision = 0
};
static const struct etcd_op get_lock = { .type = ETCD_OP_GET, .key = DS_ETCD_LOCK_KEY };

/* A failed write whose failure branch read the lock key as its op @i: locked? */
static bool failed_on_lock(const struct etcd_txn_result *res, size_t i)
{
	return res->n > i && res->found[i];
}

static int locked_failure(struct ds *d)
{
	return ds_fail(d, -EROFS, DS_LOCKED_MESSAGE);
}

static int e_set_locked(struct ds *d, bool locked, bool *changed)
{
	if (!locked) {
		bool deleted = false;
		int r = etcd_delete(etcd_of(d), DS_ETCD_LOCK_KEY, &deleted, NULL);
		if (r < 0)
			return ds_etcd_fail(d, r, "unlock");
		*changed = deleted;
		return 0;
	}
	char value[96], ts[32];
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm);
	snprintf(value, sizeof(value), "{\"lockedAt\":\"%s\"}", ts);
	struct etcd_op put = { .type = ETCD_OP_PUT,
			       .key = DS_ETCD_LOCK_KEY,
			       .value = value,
			       .value_len = strlen(value) };
	struct etcd_txn_result res = { 0 };
	int r = etcd_txn(etcd_of(d), &unlocked_cmp, 1, &put, 1, NULL, 0, &res);
	if (r < 0)
		r = ds_etcd_fail(d, r, "lock");
	else
		*changed = res.succeeded;
	etcd_txn_result_clear(&res);
	return r;
}

static int e_is_locked(struct ds *d, bool *locked)
{
	struct etcd_kv kv = { 0 };
	int r = etcd_get(etcd_of(d), DS_ETCD_LOCK_KEY, &kv);
	etcd_kv_clear(&kv);
	if (r == -ENOENT) {
		*locked = false;
		return 0;
	}
	if (r < 0)
		return ds_etcd_fail(d, r, "read the migration lock");
	*locked = true;
	return 0;
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
	struct etcd_cmp cmps[] = {
		{ .key = key, .target = target, .result = ETCD_CMP_EQUAL, .revision = revision },
		unlocked_cmp,
	};
	struct etcd_op put = {
		.type = ETCD_OP_PUT, .key = key, .value = val.buf, .value_len = val.len
	};
	struct etcd_op gets[] = { { .type = ETCD_OP_GET, .key = key }, get_lock };
	struct etcd_txn_result res = { 0 };
	int r = etcd_txn(etcd_of(d), cmps, ARRAY_SIZE(cmps), &put, 1, gets, ARRAY_SIZE(gets), &res);
	if (r < 0)
		r = ds_etcd_fail(d, r, create ? "create" : "update");
	else if (!res.succeeded && failed_on_lock(&res, 1))
		r = locked_failure(d);
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
	/* Unconditional: the key must exist (create revision above 0), like a plain delete. */
	struct etcd_cmp cmps[] = {
		{ .key = key.buf,
		  .target = revision > 0 ? ETCD_CMP_MOD : ETCD_CMP_CREATE,
		  .result = revision > 0 ? ETCD_CMP_EQUAL : ETCD_CMP_GREATER,
		  .revision = revision > 0 ? revision : 0 },
		unlocked_cmp,
	};
	struct etcd_op del = { .type = ETCD_OP_DELETE, .key = key.buf };
	struct etcd_op gets[] = { { .type = ETCD_OP_GET, .key = key.buf }, get_lock };
	struct etcd_txn_result res = { 0 };
	r = etcd_txn(etcd_of(d), cmps, ARRAY_SIZE(cmps), &del, 1, gets, ARRAY_SIZE(gets), &res);
	if (r < 0)
		r = ds_etcd_fail(d, r, "delete");
	else if (!res.succeeded && failed_on_lock(&res, 1))
		r = locked_failure(d);
	else if (!res.succeeded)
		r = cas_failure(d, &res, k->kind, name);
	etcd_txn_result_clear(&res);
	sb_free(&key);
	return r;
}

static int e_write_all(struct ds *d, struct ds_write *w, size_t n)
{
	struct etcd_cmp *cmps = xcalloc(n + 1, sizeof(*cmps));
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
		cmps[n] = unlocked_cmp;
		r = etcd_txn(etcd_of(d), cmps, n + 1, ops, n, &get_lock, 1, &res);
		if (r < 0) {
			r = ds_etcd_fail(d, r, "transaction");
		} else if (!res.succeeded && failed_on_lock(&res, 0)) {
			r = locked_failure(d);
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

/*
 * One list+watch per kind. The syncer keeps, per key, what it delivered: the
 * key's create and mod revisions and a fingerprint of its value. That cache
 * makes a re-list deliver only differences (content compared, not only the
 * revision), and lets the syncer check that the store it watches is the one
 * it listed:
 *  - every list: the same cluster ID, a revision no lower than any seen (a
 *    linearizable read never goes back in one store);
 *  - every watch: etcd_watch ends it when the store goes below a delivered
 *    revision or another cluster answers;
 *  - every event: a create of a key it holds, an update or delete of a key
 *    it does not hold, or an update whose create revision differs, cannot
 *    happen in the history it follows;
 *  - every reconnect of a watch: the key count and first key at the
 *    revision the watch resumed from must be what the cache held then (a
 *    store rebuilt and re-populated past that revision fails this).
 * A failed check re-lists every kind; a compacted or oversized watch re-lists
 * its kind. A watch down for longer than WATCH_GRACE_MS, or a list that
 * fails, makes the syncer not in sync, with the reason.
 */

#define WATCH_GRACE_MS	   5000
#define RESYNC_BACKOFF_MAX 5000
#define RESYNC_QUIET_MS	   10000 /* resyncs closer together than this back off */

struct cached {
	int64_t create_rev, mod_rev;
	uint64_t digest; /* of the stored value */
	bool ours;	 /* the key names an object of the kind (else skipped, but counted) */
};

struct esync;

/* What the cache held when a watch reconnected, checked against the store. */
struct probe {
	struct etcd_list_op *op;
	int64_t revision; /* the last revision delivered before the reconnect */
	size_t count;
	char *first; /* the smallest cache key, NULL when empty */
	int64_t first_create, first_mod;
	bool first_ok; /* the store's first key matched */
};

struct esync_kind {
	struct esync *s;
	const struct br_kind *k;
	char *scope;
	char *prefix;
	bool listed;
	struct etcd_list_op *listing; /* the list in flight */
	struct hmap seen;	      /* cache keys the list in flight has shown */
	struct etcd_watch *watch;
	bool watch_down;     /* its watch lost its connection */
	bool watch_was_up;   /* and had been up, so the next "up" is a reconnect */
	uint64_t down_since; /* when it went down (ms) */
	struct strbuf down_why;
	struct probe probe;
	struct hmap cache; /* key without the prefix → struct cached */
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
	struct strbuf why;	  /* why not in sync */
	struct strbuf list_error; /* while lists fail */
	struct loop_timer *timer; /* the next list */
	struct loop_timer *grace; /* a watch's grace period ends */
	uint64_t backoff_ms;
	uint64_t last_resync_ms;
	const char *pending; /* the reason of the resync under way (logged once) */
	/* The store the cache came from (forgotten when it changed). */
	uint64_t cluster_id;
	int64_t revision; /* the highest revision a list has seen */
};

static struct etcd *etcd_of_sync(struct esync *s)
{
	return etcd_of(s->d);
}

static void cache_clear(struct hmap *cache)
{
	for (struct hmap_iter it = hmap_iter(cache); hmap_next(&it);)
		free(it.value);
	hmap_clear(cache);
}

static void probe_clear(struct probe *p)
{
	etcd_list_cancel(p->op);
	free(p->first);
	memset(p, 0, sizeof(*p));
}

/* The status follows the kinds: every kind listed and watching, or why not. */
static void update_status(struct esync *s)
{
	enum ds_sync_status st = DS_IN_SYNC;
	struct strbuf why = STRBUF_INIT;
	sb_init(&why);
	uint64_t now = now_ms(), next_grace = 0;
	if (s->list_error.len) {
		st = DS_WAIT_FOR_DATASTORE;
		sb_adds(&why, sb_str(&s->list_error));
	}
	for (size_t i = 0; i < s->n && st == DS_IN_SYNC; i++) {
		const struct esync_kind *sk = &s->kinds[i];
		if (!sk->listed) {
			st = DS_RESYNC;
			sb_addf(&why, "listing %s", sk->k->plural);
		}
	}
	for (size_t i = 0; i < s->n && st == DS_IN_SYNC; i++) {
		const struct esync_kind *sk = &s->kinds[i];
		if (!sk->watch_down)
			continue;
		if (now - sk->down_since >= WATCH_GRACE_MS) {
			st = DS_WAIT_FOR_DATASTORE;
			sb_addf(&why, "the watch of %s is down: %s", sk->k->plural,
				sb_str(&sk->down_why));
		} else if (!next_grace || sk->down_since + WATCH_GRACE_MS < next_grace) {
			next_grace = sk->down_since + WATCH_GRACE_MS;
		}
	}
	if (st == DS_IN_SYNC && next_grace)
		loop_timer_arm(s->grace, next_grace - now + 1, 0);
	bool changed = st != s->status;
	s->status = st;
	sb_reset(&s->why);
	sb_adds(&s->why, sb_str(&why));
	sb_free(&why);
	if (changed)
		s->ops->status(s->ctx, st, st == DS_IN_SYNC ? NULL : sb_str(&s->why));
}

static void grace_ended(struct loop *l, struct loop_timer *t, void *ctx)
{
	update_status(ctx);
}

/* Stop what a kind has in flight; its cache stays, for the differences. */
static void kind_unlist(struct esync_kind *sk)
{
	etcd_list_cancel(sk->listing);
	sk->listing = NULL;
	hmap_clear(&sk->seen);
	etcd_watch_stop(sk->watch);
	sk->watch = NULL;
	probe_clear(&sk->probe);
	sk->listed = false;
	sk->watch_down = false;
	sk->watch_was_up = false;
}

/*
 * Re-list @only, or every kind (@only NULL: the store is not the one the
 * cache came from, so its identity is forgotten too). Logged once per cause.
 */
static void begin_resync(struct esync *s, struct esync_kind *only, const char *reason,
			 const char *detail)
{
	if (!s->pending || strcmp(s->pending, reason) != 0) {
		s->pending = reason;
		if (s->ops->resync)
			s->ops->resync(s->ctx, reason, detail);
	}
	if (only) {
		kind_unlist(only);
	} else {
		for (size_t i = 0; i < s->n; i++)
			kind_unlist(&s->kinds[i]);
		s->cluster_id = 0;
		s->revision = 0;
	}
	/* Resyncs in quick succession (a store that keeps failing a check) back off. */
	uint64_t now = now_ms();
	if (s->last_resync_ms && now - s->last_resync_ms < RESYNC_QUIET_MS)
		s->backoff_ms = s->backoff_ms ? MIN(s->backoff_ms * 2, RESYNC_BACKOFF_MAX) : 250;
	s->last_resync_ms = now;
	update_status(s);
	loop_timer_arm(s->timer, s->backoff_ms ? s->backoff_ms : 1, 0);
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
	if (!rel)
		return;
	uint64_t digest = hash_fnv1a64(kv->value, kv->value_len);
	struct cached *c = hmap_get(&sk->cache, rel);
	if (c && c->mod_rev == kv->mod_revision && c->create_rev == kv->create_revision &&
	    c->digest == digest)
		return; /* delivered already */
	if (!c) {
		c = xcalloc(1, sizeof(*c));
		hmap_put(&sk->cache, rel, c);
	}
	c->create_rev = kv->create_revision;
	c->mod_rev = kv->mod_revision;
	c->digest = digest;
	c->ours = parse_key(sk->k, kv->key, buf, sizeof(buf), &u.scope, &u.name) == 0;
	if (!c->ours)
		return; /* not a key of the kind: counted, never delivered */
	struct strbuf why = STRBUF_INIT;
	sb_init(&why);
	u.obj = decode_value(sk->s->d, sk->k, kv, &why);
	if (!u.obj)
		u.error = sb_str(&why);
	sk->s->ops->update(sk->s->ctx, &u);
	sb_free(&why);
}

/* @rel: a cache key (the part after the prefix). */
static void deliver_delete(struct esync_kind *sk, const char *rel)
{
	struct ds_update u = { .kind = sk->k };
	char buf[512], full[512];
	struct cached *c = hmap_get(&sk->cache, rel);
	if (!c)
		return;
	bool ours = c->ours;
	/* Parse first: @rel may be the cache's own copy, freed by hmap_del. */
	snprintf(full, sizeof(full), "%s%s", sk->prefix, rel);
	int r = parse_key(sk->k, full, buf, sizeof(buf), &u.scope, &u.name);
	free(hmap_del(&sk->cache, rel));
	if (r < 0 || !ours)
		return;
	sk->s->ops->update(sk->s->ctx, &u);
}

/* Whether @ev can follow the cache in one store's history (see above). */
static bool event_fits(const struct esync_kind *sk, const struct etcd_event *ev)
{
	const char *rel = rel_key(sk, ev->kv.key);
	if (!rel)
		return true;
	const struct cached *c = hmap_get(&sk->cache, rel);
	if (ev->type == ETCD_EVENT_DELETE)
		return c != NULL;
	if (ev->kv.version == 1)
		return c == NULL;
	return c && c->create_rev == ev->kv.create_revision;
}

static void on_watch_events(void *ctx, const struct etcd_event *evs, size_t n, int64_t revision)
{
	struct esync_kind *sk = ctx;
	for (size_t i = 0; i < n; i++) {
		if (!event_fits(sk, &evs[i])) {
			char detail[768];
			snprintf(detail, sizeof(detail),
				 "%s of %s at revision %" PRId64
				 " does not follow from what was listed and watched; the store was "
				 "rebuilt or restored",
				 evs[i].type == ETCD_EVENT_DELETE ? "a delete"
				 : evs[i].kv.version == 1	  ? "a create"
								  : "an update",
				 evs[i].kv.key, evs[i].kv.mod_revision);
			begin_resync(sk->s, NULL, DS_RESYNC_STORE_CHANGED, detail);
			return;
		}
		if (evs[i].type == ETCD_EVENT_PUT)
			deliver_kv(sk, &evs[i].kv);
		else
			deliver_delete(sk, rel_key(sk, evs[i].kv.key));
	}
}

static void on_watch_reset(void *ctx, const struct etcd_watch_reset *r)
{
	struct esync_kind *sk = ctx;
	/* A compacted or oversized catch-up: this kind re-lists. A different store: all do. */
	switch (r->reason) {
	case ETCD_WATCH_COMPACTED:
		begin_resync(sk->s, sk, DS_RESYNC_COMPACTED, r->why);
		break;
	case ETCD_WATCH_TOO_LARGE:
		begin_resync(sk->s, sk, DS_RESYNC_MESSAGE_TOO_LARGE, r->why);
		break;
	case ETCD_WATCH_BEHIND:
		begin_resync(sk->s, NULL, DS_RESYNC_BEHIND, r->why);
		break;
	case ETCD_WATCH_CLUSTER_CHANGED:
		begin_resync(sk->s, NULL, DS_RESYNC_CLUSTER_CHANGED, r->why);
		break;
	}
}

/* --- the check after a reconnect --- */

static int probe_page(void *ctx, const struct etcd_kv *kvs, size_t n)
{
	struct esync_kind *sk = ctx;
	struct probe *p = &sk->probe;
	const char *rel = rel_key(sk, kvs[0].key);
	p->first_ok = p->first && rel && streq(rel, p->first) &&
		      kvs[0].create_revision == p->first_create &&
		      kvs[0].mod_revision == p->first_mod;
	return ETCD_LIST_STOP;
}

static void probe_done(void *ctx, int err, const struct etcd_list_end *end)
{
	struct esync_kind *sk = ctx;
	struct esync *s = sk->s;
	struct probe *p = &sk->probe;
	p->op = NULL;
	char detail[768];
	if (err == -ESTALE) {
		/* Compacted meanwhile: the resumed watch meets the same and re-lists. */
	} else if (err == -ERANGE) {
		snprintf(detail, sizeof(detail),
			 "%s: the store has no revision %" PRId64 " any more (rebuilt or restored)",
			 sk->k->plural, p->revision);
		begin_resync(s, NULL, DS_RESYNC_BEHIND, detail);
		return;
	} else if (err < 0) {
		snprintf(detail, sizeof(detail),
			 "%s: cannot check the store after the watch reconnected: %s",
			 sk->k->plural, etcd_last_error(etcd_of_sync(s)));
		begin_resync(s, sk, DS_RESYNC_STORE_CHANGED, detail);
		return;
	} else if (s->cluster_id && end->hdr.cluster_id && end->hdr.cluster_id != s->cluster_id) {
		snprintf(detail, sizeof(detail), "cluster ID changed from %" PRIx64 " to %" PRIx64,
			 s->cluster_id, end->hdr.cluster_id);
		begin_resync(s, NULL, DS_RESYNC_CLUSTER_CHANGED, detail);
		return;
	} else if ((size_t)end->count != p->count || (p->count && !p->first_ok)) {
		snprintf(detail, sizeof(detail),
			 "at revision %" PRId64 " the store holds %" PRId64
			 " keys of %s, the watched view held %zu%s; the store was rebuilt or "
			 "restored",
			 p->revision, end->count, sk->k->plural, p->count,
			 (size_t)end->count == p->count ? " with another first key" : "");
		begin_resync(s, NULL, DS_RESYNC_STORE_CHANGED, detail);
		return;
	}
	probe_clear(p);
}

/*
 * The watch of @sk reconnected, resuming after @revision: snapshot what the
 * cache held at that revision (events after it are not applied yet) and ask
 * the store for the same.
 */
static void probe_start(struct esync_kind *sk, int64_t revision)
{
	struct probe *p = &sk->probe;
	probe_clear(p);
	if (revision <= 0)
		return;
	p->revision = revision;
	p->count = sk->cache.n;
	for (struct hmap_iter it = hmap_iter(&sk->cache); hmap_next(&it);) {
		if (p->first && strcmp(it.key, p->first) >= 0)
			continue;
		free(p->first);
		p->first = xstrdup(it.key);
		const struct cached *c = it.value;
		p->first_create = c->create_rev;
		p->first_mod = c->mod_rev;
	}
	int r = etcd_list_start(etcd_of_sync(sk->s), sk->s->l, sk->prefix, revision, 1, probe_page,
				probe_done, sk, &p->op);
	if (r < 0) {
		p->op = NULL;
		probe_done(sk, r, NULL);
	}
}

static void on_watch_state(void *ctx, bool connected, const char *why)
{
	struct esync_kind *sk = ctx;
	if (!connected) {
		sk->watch_down = true;
		sk->down_since = now_ms();
		sb_reset(&sk->down_why);
		sb_adds(&sk->down_why, why ? why : "connection lost");
		update_status(sk->s);
		return;
	}
	bool reconnect = sk->watch_was_up;
	sk->watch_was_up = true;
	sk->watch_down = false;
	if (reconnect)
		probe_start(sk, etcd_watch_next_revision(sk->watch) - 1);
	update_status(sk->s);
}

static const struct etcd_watch_ops watch_ops = {
	.events = on_watch_events,
	.reset = on_watch_reset,
	.state = on_watch_state,
};

/* --- listing --- */

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
	s->backoff_ms = s->backoff_ms ? MIN(s->backoff_ms * 2, RESYNC_BACKOFF_MAX) : 250;
	update_status(s);
	loop_timer_arm(s->timer, s->backoff_ms, 0);
}

/*
 * A kind's list ended: check it comes from the store the cache came from,
 * deliver the deletes of whatever it no longer has, watch from its revision,
 * and go on with the next kind.
 */
static void list_done(void *ctx, int err, const struct etcd_list_end *end)
{
	struct esync_kind *sk = ctx;
	struct esync *s = sk->s;
	char detail[768];
	sk->listing = NULL;
	if (err < 0) {
		hmap_clear(&sk->seen);
		sb_reset(&s->list_error);
		sb_addf(&s->list_error, "listing %s: %s", sk->k->plural,
			etcd_last_error(etcd_of_sync(s)));
		(void)ds_etcd_fail(s->d, err, "list");
		sync_failed(s);
		return;
	}
	sb_reset(&s->list_error);
	if (s->cluster_id && end->hdr.cluster_id && end->hdr.cluster_id != s->cluster_id) {
		hmap_clear(&sk->seen);
		snprintf(detail, sizeof(detail), "cluster ID changed from %" PRIx64 " to %" PRIx64,
			 s->cluster_id, end->hdr.cluster_id);
		begin_resync(s, NULL, DS_RESYNC_CLUSTER_CHANGED, detail);
		return;
	}
	if (end->hdr.revision < s->revision) {
		hmap_clear(&sk->seen);
		snprintf(detail, sizeof(detail),
			 "%s listed at revision %" PRId64 ", below revision %" PRId64
			 " seen before; the store was rebuilt or restored",
			 sk->k->plural, end->hdr.revision, s->revision);
		begin_resync(s, NULL, DS_RESYNC_BEHIND, detail);
		return;
	}
	if (end->hdr.cluster_id)
		s->cluster_id = end->hdr.cluster_id;
	s->revision = end->hdr.revision;
	for (struct hmap_iter it = hmap_iter(&sk->cache); hmap_next(&it);)
		if (!hmap_has(&sk->seen, it.key))
			deliver_delete(sk, it.key);
	hmap_clear(&sk->seen);
	etcd_watch_stop(sk->watch);
	sk->watch = NULL;
	int r = etcd_watch_start(etcd_of_sync(s), s->l, sk->prefix, end->hdr.revision + 1,
				 s->cluster_id, &watch_ops, sk, &sk->watch);
	if (r < 0) {
		sb_addf(&s->list_error, "watching %s: %s", sk->k->plural, strerror(-r));
		(void)ds_etcd_fail(s->d, r, "watch");
		sync_failed(s);
		return;
	}
	sk->listed = true;
	sk->watch_down = false;
	sk->watch_was_up = false;
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
		int r = etcd_list_start(etcd_of_sync(s), s->l, sk->prefix, 0, 0, deliver_page,
					list_done, sk, &sk->listing);
		if (r < 0) {
			sk->listing = NULL;
			sb_reset(&s->list_error);
			sb_addf(&s->list_error, "listing %s: %s", sk->k->plural,
				etcd_last_error(etcd_of_sync(s)));
			(void)ds_etcd_fail(s->d, r, "list");
			sync_failed(s);
		}
		return;
	}
	s->backoff_ms = 0;
	s->pending = NULL;
	update_status(s);
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
	sb_init(&s->why);
	sb_init(&s->list_error);
	sb_adds(&s->why, "listing");
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
		sb_init(&sk->down_why);
		hmap_init_bulk(&sk->seen);
	}
	s->timer = loop_timer_new(l, sync_pending, s);
	s->grace = loop_timer_new(l, grace_ended, s);
	if (!s->timer || !s->grace) {
		ops->status(ctx, DS_WAIT_FOR_DATASTORE, "cannot create a timer");
		e_syncer_stop(&s->base);
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
		struct esync_kind *sk = &s->kinds[i];
		kind_unlist(sk);
		cache_clear(&sk->cache);
		sb_free(&sk->down_why);
		free(sk->scope);
		free(sk->prefix);
	}
	loop_timer_free(s->timer);
	loop_timer_free(s->grace);
	free(s->kinds);
	sb_free(&s->why);
	sb_free(&s->list_error);
	etcd_loop_release(etcd_of_sync(s));
	free(s);
}

static enum ds_sync_status e_syncer_status(const struct ds_syncer *base)
{
	return container_of(base, const struct esync, base)->status;
}

static const char *e_syncer_why(const struct ds_syncer *base)
{
	const struct esync *s = container_of(base, const struct esync, base);
	return s->status == DS_IN_SYNC ? NULL : sb_str(&s->why);
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
	.set_locked = e_set_locked,
	.is_locked = e_is_locked,
	.syncer_start = e_syncer_start,
	.syncer_stop = e_syncer_stop,
	.syncer_status = e_syncer_status,
	.syncer_why = e_syncer_why,
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
