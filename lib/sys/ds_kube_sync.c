/*
 * The syncer of the Kubernetes datastore: per kind one or more API
 * collections ("sources"), each listed in pages and then watched from the
 * list's resourceVersion with bookmarks, all from the daemon's loop.
 *
 *   Calico kinds        their CRs (kdd_crd_decode)
 *   Kubernetes kinds    the API's objects (kdd_decode)
 *   Node                core Nodes (kdd_node_to_calico)
 *   WorkloadEndpoint    Pods (kdd_pod_to_wep: hostNetwork and unscheduled
 *                       pods are none; finished pods have no addresses)
 *   Profile             Namespaces (kns.<ns>) and ServiceAccounts (ksa.<ns>.<sa>)
 *
 * Each source remembers, per API object, what it delivered (identity and a
 * digest of the object), so a relist delivers only differences: changed and
 * new objects, and deletions of what is gone. A watch that the server ends
 * (its timeout) resumes from the last resourceVersion seen (bookmarks keep
 * it fresh); 410 Gone lists again (reason "compacted"); other failures retry
 * with backoff and jitter, and after 5 at one version list again. The
 * syncer is in sync once every source has listed and every watch is up;
 * a watch down for longer than 5 s makes it WAIT_FOR_DATASTORE with the
 * reason. Objects that cannot be mapped are reported once (as an update
 * with an error) and treated as absent.
 */
#include "ds_internal.h"

#include <brindle/core/hash.h>
#include <brindle/core/hmap.h>
#include <brindle/core/json.h>
#include <brindle/core/kdd_crd.h>
#include <brindle/core/kdd_map.h>
#include <brindle/core/kube_codec.h>
#include <brindle/sys/clock.h>
#include <brindle/sys/kube_client.h>
#include <brindle/sys/kube_conn.h>
#include <brindle/sys/log.h>
#include <brindle/sys/loop.h>

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define WATCH_GRACE_MS	     5000
#define WATCH_TIMEOUT_S	     300 /* the server ends a watch after this; it resumes */
#define BACKOFF_MIN_MS	     250
#define BACKOFF_MAX_MS	     10000
#define FAILURES_BEFORE_LIST 5

enum src_map {
	MAP_CRD,
	MAP_NATIVE,
	MAP_POD,
	MAP_NODE,
	MAP_NS_PROFILE,
	MAP_SA_PROFILE,
};

/* What a source delivered for one API object. */
struct entry {
	char *scope, *name; /* the delivered identity; name NULL when nothing is delivered */
	uint64_t digest;
	char *error; /* the error last reported for it */
	bool seen;   /* in the list under way */
};

struct ksync;

struct ksrc {
	struct ksync *s;
	const struct br_kind *k;
	const char *scope; /* deliver only this namespace / node (NULL: all) */
	enum src_map map;
	char *path;
	char *what; /* for messages: "pods" */
	struct hmap entries;
	struct kube_list_op *list;
	struct kube_watch *watch;
	struct loop_timer *retry;
	struct strbuf rv, down_why;
	uint64_t backoff_ms, down_since;
	unsigned failures;
	bool listed, watching, down, relist;
};

struct ksync {
	struct ds_syncer base;
	struct ds *d;
	struct kube_client *c;
	struct loop *l;
	struct ds_syncer_ops ops;
	void *ctx;
	struct ksrc *srcs;
	size_t n;
	enum ds_sync_status status;
	struct strbuf why;
	struct loop_timer *grace, *tick;
};

static void update_status(struct ksync *s);
static void src_list(struct ksrc *src);
static void src_watch(struct ksrc *src);
static void watch_up(struct ksrc *src);

static uint64_t jitter(uint64_t ms)
{
	return ms + (uint64_t)(rand() % (int)(ms / 4 + 1));
}

/* --- delivery --- */

static void deliver(struct ksrc *src, const char *scope, const char *name, struct br_object *obj,
		    const char *error)
{
	struct ds_update u = {
		.kind = src->k, .scope = scope, .name = name, .obj = obj, .error = error
	};
	src->s->ops.update(src->s->ctx, &u);
}

static void entry_free(struct entry *e)
{
	if (!e)
		return;
	free(e->scope);
	free(e->name);
	free(e->error);
	free(e);
}

static bool str_eq(const char *a, const char *b)
{
	return (!a && !b) || (a && b && streq(a, b));
}

/* The API object's key in a source: "<namespace>/<name>". */
static void api_key(const struct jv *obj, struct strbuf *out)
{
	sb_reset(out);
	sb_addf(out, "%s/%s", kube_meta_str(obj, "namespace"), kube_meta_str(obj, "name"));
}

/*
 * Map an API object to what the source delivers: 1 and *out, 0 when it maps
 * to nothing (a hostNetwork pod), or -EINVAL with the reason in @err.
 */
static int map_obj(struct ksrc *src, const struct jv *obj, struct br_object **out,
		   struct strbuf *err)
{
	struct model_errors errs = { 0 }, warns = { 0 };
	int r = 0;
	*out = NULL;
	switch (src->map) {
	case MAP_CRD:
		*out = kdd_crd_decode(src->k, obj, &errs);
		r = *out ? 1 : -EINVAL;
		break;
	case MAP_NATIVE:
		r = kdd_decode(src->k, obj, out, &errs) < 0 ? -EINVAL : 1;
		break;
	case MAP_POD: {
		enum kdd_pod_state st;
		struct br_workloadendpoint *w = NULL;
		r = kdd_pod_to_wep(obj, &st, &w, &errs) < 0 ? -EINVAL : st == KDD_POD_SKIP ? 0 : 1;
		*out = w ? &w->o : NULL;
		break;
	}
	case MAP_NODE: {
		struct br_node *n = NULL;
		r = kdd_node_to_calico(obj, &n, &errs, &warns) < 0 ? -EINVAL : 1;
		*out = n ? &n->o : NULL;
		break;
	}
	case MAP_NS_PROFILE:
	case MAP_SA_PROFILE: {
		struct br_profile *p = NULL;
		r = (src->map == MAP_NS_PROFILE
			     ? kdd_namespace_to_profile(obj, &p, &errs, &warns)
			     : kdd_serviceaccount_to_profile(obj, &p, &errs, &warns)) < 0
			    ? -EINVAL
			    : 1;
		*out = p ? &p->o : NULL;
		break;
	}
	}
	if (r < 0)
		sb_addf(err, "%s", errs.n ? errs.v[0] : "cannot be mapped");
	else if (r == 1 && !*out)
		r = 0;
	if (r == 1 && src->scope && !str_eq(ds_scope(*out), src->scope)) {
		model_free(*out);
		*out = NULL;
		r = 0;
	}
	model_errors_clear(&errs);
	model_errors_clear(&warns);
	return r;
}

static uint64_t digest_of(const struct br_object *o)
{
	struct strbuf sb = STRBUF_INIT;
	sb_init(&sb);
	model_to_json(o, &sb);
	uint64_t h = hash_fnv1a64(sb.buf, sb.len);
	sb_free(&sb);
	return h ? h : 1;
}

/* Withdraws what @e delivered. */
static void withdraw(struct ksrc *src, struct entry *e)
{
	if (e->name) {
		deliver(src, e->scope, e->name, NULL, NULL);
		free(e->scope);
		free(e->name);
		e->scope = e->name = NULL;
		e->digest = 0;
	}
}

/* An API object added or changed (@deleted: removed). */
static void apply_obj(struct ksrc *src, const struct jv *obj, bool deleted)
{
	struct strbuf key = STRBUF_INIT, err = STRBUF_INIT;
	sb_init(&key);
	sb_init(&err);
	api_key(obj, &key);
	struct entry *e = hmap_get(&src->entries, sb_str(&key));
	if (deleted) {
		if (e) {
			withdraw(src, e);
			entry_free(hmap_del(&src->entries, sb_str(&key)));
		}
		goto out;
	}
	if (!e) {
		e = xcalloc(1, sizeof(*e));
		hmap_put(&src->entries, sb_str(&key), e);
	}
	e->seen = true;
	struct br_object *o;
	int r = map_obj(src, obj, &o, &err);
	if (r < 0) {
		/* Reported once per distinct error; what it delivered before is withdrawn. */
		if (!e->error || !streq(e->error, sb_str(&err))) {
			free(e->error);
			e->error = xstrdup(sb_str(&err));
			struct strbuf line = STRBUF_INIT;
			sb_init(&line);
			sb_addf(&line, "%s %s: %s", src->what, sb_str(&key), sb_str(&err));
			withdraw(src, e);
			deliver(src, NULL, sb_str(&key), NULL, sb_str(&line));
			sb_free(&line);
		} else {
			withdraw(src, e);
		}
		goto out;
	}
	free(e->error);
	e->error = NULL;
	if (r == 0) {
		withdraw(src, e);
		goto out;
	}
	const char *scope = ds_scope(o);
	/* Another identity (a pod moved to another node): withdraw the old one first. */
	if (e->name && (!streq(e->name, o->meta.name) || !str_eq(e->scope, scope)))
		withdraw(src, e);
	uint64_t dg = digest_of(o);
	if (e->name && e->digest == dg) {
		model_free(o);
		goto out;
	}
	if (!e->name) {
		e->name = xstrdup(o->meta.name);
		e->scope = scope ? xstrdup(scope) : NULL;
	}
	e->digest = dg;
	deliver(src, e->scope, e->name, o, NULL);
out:
	sb_free(&key);
	sb_free(&err);
}

/* --- listing --- */

static int on_list_item(void *ctx, const struct jv *obj)
{
	apply_obj(ctx, obj, false);
	return 0;
}

static void on_list_restart(void *ctx)
{
	struct ksrc *src = ctx;
	for (struct hmap_iter it = hmap_iter(&src->entries); hmap_next(&it);)
		((struct entry *)it.value)->seen = false;
}

static void src_retry_later(struct ksrc *src)
{
	src->backoff_ms =
		src->backoff_ms ? MIN(src->backoff_ms * 2, BACKOFF_MAX_MS) : BACKOFF_MIN_MS;
	loop_timer_arm(src->retry, jitter(src->backoff_ms), 0);
}

static void on_list_done(void *ctx, int err, const char *rv, const char *why)
{
	struct ksrc *src = ctx;
	src->list = NULL;
	if (err) {
		sb_reset(&src->down_why);
		sb_addf(&src->down_why, "listing %s: %s", src->what, why);
		if (!src->down) {
			src->down = true;
			src->down_since = now_ms();
		}
		log_warn("datastore: %s", sb_str(&src->down_why));
		src->relist = true;
		src_retry_later(src);
		update_status(src->s);
		return;
	}
	/* What the list did not see is gone. */
	for (struct hmap_iter it = hmap_iter(&src->entries); hmap_next(&it);) {
		struct entry *e = it.value;
		if (!e->seen) {
			withdraw(src, e);
			entry_free(hmap_del(&src->entries, it.key));
		}
	}
	sb_reset(&src->rv);
	sb_adds(&src->rv, rv);
	src->listed = true;
	src->relist = false;
	src->failures = 0;
	src_watch(src);
	update_status(src->s);
}

static void src_list(struct ksrc *src)
{
	kube_watch_stop(src->watch);
	src->watch = NULL;
	src->watching = false;
	on_list_restart(src);
	int r = kube_list_start(src->s->c, src->path, 0, on_list_item, on_list_restart,
				on_list_done, src, &src->list);
	if (r < 0) {
		sb_reset(&src->down_why);
		sb_addf(&src->down_why, "listing %s: %s", src->what, kube_last_error(src->s->c));
		src->relist = true;
		src_retry_later(src);
		update_status(src->s);
	}
}

/* --- watching --- */

static void on_event(void *ctx, const struct kube_event *e)
{
	struct ksrc *src = ctx;
	if (*e->resource_version) {
		sb_reset(&src->rv);
		sb_adds(&src->rv, e->resource_version);
	}
	watch_up(src);
	if (e->type == KUBE_EVENT_BOOKMARK)
		return;
	apply_obj(src, e->object, e->type == KUBE_EVENT_DELETED);
}

static void on_ended(void *ctx, int err, const char *why)
{
	struct ksrc *src = ctx;
	kube_watch_stop(src->watch);
	src->watch = NULL;
	src->watching = false;
	if (err == 0) {
		/* The server's timeout: go on from where it was. */
		src->failures = 0;
		src_watch(src);
		return;
	}
	if (err == -ESTALE) {
		/* (the daemon logs it, with its metric) */
		if (src->s->ops.resync)
			src->s->ops.resync(src->s->ctx, DS_RESYNC_COMPACTED, why);
		src->relist = true;
		src_list(src);
		update_status(src->s);
		return;
	}
	if (!src->down) {
		src->down = true;
		src->down_since = now_ms();
	}
	sb_reset(&src->down_why);
	sb_addf(&src->down_why, "the watch of %s is down: %s", src->what, why);
	if (++src->failures >= FAILURES_BEFORE_LIST)
		src->relist = true;
	src_retry_later(src);
	update_status(src->s);
}

static const struct kube_watch_ops watch_ops = { on_event, on_ended };

static void src_watch(struct ksrc *src)
{
	int r = kube_watch_start(src->s->c, src->path, sb_str(&src->rv), WATCH_TIMEOUT_S,
				 &watch_ops, src, &src->watch);
	if (r < 0) {
		on_ended(src, r, kube_last_error(src->s->c));
		return;
	}
	src->watching = true;
	/* Up only once the server answers (watch_up): a connect may hang. */
	if (src->down)
		loop_timer_arm(src->s->tick, 250, 0);
}

/* A watch that came back: its server answered. */
static void watch_up(struct ksrc *src)
{
	if (!src->down)
		return;
	src->down = false;
	src->backoff_ms = 0;
	src->failures = 0;
	sb_reset(&src->down_why);
	update_status(src->s);
}

/* While a watch is down: has its new attempt been answered yet? */
static void on_tick(struct loop *l, struct loop_timer *t, void *ctx)
{
	(void)l;
	(void)t;
	struct ksync *s = ctx;
	bool again = false;
	for (size_t i = 0; i < s->n; i++) {
		struct ksrc *src = &s->srcs[i];
		if (!src->down)
			continue;
		if (kube_watch_established(src->watch))
			watch_up(src);
		else
			again = true;
	}
	if (again)
		loop_timer_arm(s->tick, 250, 0);
}

static void on_retry(struct loop *l, struct loop_timer *t, void *ctx)
{
	(void)l;
	(void)t;
	struct ksrc *src = ctx;
	if (src->relist || !src->listed)
		src_list(src);
	else
		src_watch(src);
	update_status(src->s);
}

/* --- status --- */

static void update_status(struct ksync *s)
{
	enum ds_sync_status st = DS_IN_SYNC;
	struct strbuf why = STRBUF_INIT;
	sb_init(&why);
	uint64_t now = now_ms(), next = 0;
	for (size_t i = 0; i < s->n && st == DS_IN_SYNC; i++) {
		struct ksrc *src = &s->srcs[i];
		if (!src->listed) {
			st = src->down_why.len ? DS_WAIT_FOR_DATASTORE : DS_RESYNC;
			if (src->down_why.len)
				sb_adds(&why, sb_str(&src->down_why));
			else
				sb_addf(&why, "listing %s", src->what);
		}
	}
	for (size_t i = 0; i < s->n && st == DS_IN_SYNC; i++) {
		struct ksrc *src = &s->srcs[i];
		if (!src->down)
			continue;
		if (now - src->down_since >= WATCH_GRACE_MS) {
			st = DS_WAIT_FOR_DATASTORE;
			sb_adds(&why, sb_str(&src->down_why));
		} else if (!next || src->down_since + WATCH_GRACE_MS < next) {
			next = src->down_since + WATCH_GRACE_MS;
		}
	}
	if (st == DS_IN_SYNC && next)
		loop_timer_arm(s->grace, next - now + 1, 0);
	bool changed = st != s->status;
	s->status = st;
	sb_reset(&s->why);
	sb_adds(&s->why, sb_str(&why));
	sb_free(&why);
	if (changed)
		s->ops.status(s->ctx, st, st == DS_IN_SYNC ? NULL : sb_str(&s->why));
}

static void on_grace(struct loop *l, struct loop_timer *t, void *ctx)
{
	(void)l;
	(void)t;
	update_status(ctx);
}

/* --- sources of each kind --- */

static void add_src(struct ksync *s, const struct br_kind *k, const char *scope, enum src_map map,
		    const char *group_version, const char *plural)
{
	struct ksrc *src = &s->srcs[s->n++];
	memset(src, 0, sizeof(*src));
	src->s = s;
	src->k = k;
	src->scope = scope;
	src->map = map;
	struct strbuf p = STRBUF_INIT;
	sb_init(&p);
	/* A namespaced kind scoped to one namespace lists only it. */
	const char *ns = k->namespaced && k->id != KIND_WORKLOADENDPOINT ? scope : NULL;
	kube_path(&p, group_version, ns, plural, NULL);
	src->path = sb_detach(&p);
	src->what = xstrdup(plural);
	sb_init(&src->rv);
	sb_init(&src->down_why);
	src->retry = loop_timer_new(s->l, on_retry, src);
}

static int add_kind(struct ksync *s, const struct ds_watch_spec *spec)
{
	const struct br_kind *k = model_kind(spec->kind);
	const char *crd_kind, *plural;
	switch (k->id) {
	case KIND_NODE:
		add_src(s, k, spec->scope, MAP_NODE, "v1", "nodes");
		return 0;
	case KIND_WORKLOADENDPOINT:
		add_src(s, k, spec->scope, MAP_POD, "v1", "pods");
		return 0;
	case KIND_PROFILE:
		add_src(s, k, spec->scope, MAP_NS_PROFILE, "v1", "namespaces");
		add_src(s, k, spec->scope, MAP_SA_PROFILE, "v1", "serviceaccounts");
		return 0;
	default:
		break;
	}
	if (!streq(k->group, "projectcalico.org")) {
		add_src(s, k, spec->scope, MAP_NATIVE, k->api_version, k->plural);
		return 0;
	}
	if (!kdd_crd_names(k, &crd_kind, &plural))
		return ds_fail(s->d, -EOPNOTSUPP,
			       "%s cannot be watched on the Kubernetes datastore", k->kind);
	add_src(s, k, spec->scope, MAP_CRD, MODEL_CRD_API_VERSION, plural);
	return 0;
}

static void src_free(struct ksrc *src)
{
	kube_list_cancel(src->list);
	kube_watch_stop(src->watch);
	loop_timer_free(src->retry);
	for (struct hmap_iter it = hmap_iter(&src->entries); hmap_next(&it);)
		entry_free(it.value);
	hmap_clear(&src->entries);
	sb_free(&src->rv);
	sb_free(&src->down_why);
	free(src->path);
	free(src->what);
}

static void ks_stop(struct ds_syncer *base)
{
	struct ksync *s = (struct ksync *)base;
	for (size_t i = 0; i < s->n; i++)
		src_free(&s->srcs[i]);
	free(s->srcs);
	loop_timer_free(s->grace);
	loop_timer_free(s->tick);
	kube_client_free(s->c);
	sb_free(&s->why);
	free(s);
}

static enum ds_sync_status ks_status(const struct ds_syncer *base)
{
	return ((const struct ksync *)base)->status;
}

static const char *ks_why(const struct ds_syncer *base)
{
	const struct ksync *s = (const struct ksync *)base;
	return s->status == DS_IN_SYNC ? NULL : sb_str(&s->why);
}

int ds_kube_syncer_start(struct ds *d, const char *server, const struct http_auth *auth,
			 long timeout_ms, struct loop *l, const struct ds_watch_spec *specs,
			 size_t n, const struct ds_syncer_ops *ops, void *ctx,
			 const struct ds_backend_ops *backend, struct ds_syncer **out)
{
	struct ksync *s = xcalloc(1, sizeof(*s));
	s->base.ops = backend;
	s->d = d;
	s->l = l;
	s->ops = *ops;
	s->ctx = ctx;
	s->status = DS_RESYNC;
	sb_init(&s->why);
	/* Profiles take two sources. */
	s->srcs = xcalloc(2 * n + 1, sizeof(*s->srcs));
	s->grace = loop_timer_new(l, on_grace, s);
	s->tick = loop_timer_new(l, on_tick, s);
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	/* A client of its own, driven by the loop: its watches share one HTTP/2 connection. */
	int r = kube_client_new(l, server, auth, timeout_ms, &s->c, &err);
	if (r < 0)
		r = ds_fail(d, r, "%s", sb_str(&err));
	sb_free(&err);
	for (size_t i = 0; i < n && r == 0; i++)
		r = add_kind(s, &specs[i]);
	if (r < 0) {
		ks_stop(&s->base);
		return r;
	}
	for (size_t i = 0; i < s->n; i++)
		src_list(&s->srcs[i]);
	*out = &s->base;
	return 0;
}

void ds_kube_syncer_stop(struct ds_syncer *s)
{
	ks_stop(s);
}

enum ds_sync_status ds_kube_syncer_status(const struct ds_syncer *s)
{
	return ks_status(s);
}

const char *ds_kube_syncer_why(const struct ds_syncer *s)
{
	return ks_why(s);
}
