/*
 * The datastore layer against a real etcd: typed CRUD with compare-and-swap,
 * apply semantics, and the list+watch syncer across an etcd restart and a
 * compaction (re-list with delete synthesis), and the migration lock.
 */
#include "harness.h"
#include "etcd_harness.h"

#include <brindle/sys/ds.h>
#include <brindle/sys/etcd.h>
#include <brindle/core/hmap.h>
#include <brindle/sys/loop.h>
#include <brindle/sys/clock.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static struct etcd_proc *proc;

static struct ds *open_ds(void)
{
	const char *ep = etcd_proc_endpoint(proc);
	struct ds_config cfg = {
		.type = "etcdv3", .etcd_endpoints = &ep, .n_etcd_endpoints = 1, .timeout_ms = 3000
	};
	struct ds *d;
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	if (ds_open(&cfg, &d, &err) < 0)
		fail_msg("ds_open: %s", sb_str(&err));
	sb_free(&err);
	return d;
}

static struct br_object *parse1(const char *yaml)
{
	struct br_object **objs;
	size_t n;
	struct model_errors errs = { 0 };
	if (model_read("t", yaml, strlen(yaml), NULL, &objs, &n, &errs) < 0 || n != 1)
		fail_msg("bad test input: %s", errs.n ? errs.v[0] : "count");
	struct br_object *o = objs[0];
	free(objs);
	return o;
}

static struct br_object *ns_obj(const char *name, const char *team)
{
	char buf[256];
	snprintf(buf, sizeof(buf),
		 "apiVersion: v1\nkind: Namespace\nmetadata: {name: %s, labels: {team: %s}}\n",
		 name, team);
	return parse1(buf);
}

static struct br_object *np_obj(const char *ns, const char *name)
{
	char buf[512];
	snprintf(buf, sizeof(buf),
		 "apiVersion: projectcalico.org/v3\nkind: NetworkPolicy\n"
		 "metadata: {name: %s, namespace: %s}\nspec: {selector: all()}\n",
		 name, ns);
	return parse1(buf);
}

static int setup(void **state)
{
	return etcd_proc_start(NULL, &proc) < 0 ? -1 : 0;
}

static int teardown(void **state)
{
	etcd_proc_destroy(proc);
	return 0;
}

static void test_crud(void **state)
{
	struct ds *d = open_ds();
	const struct br_kind *NS = model_kind(KIND_NAMESPACE);
	struct br_object *a = ns_obj("crud-a", "x");
	assert_int_equal(ds_create(d, a), 0);
	assert_true(a->revision > 0);
	assert_non_null(a->meta.uid);
	assert_non_null(a->meta.creation_timestamp);

	struct br_object *b = ns_obj("crud-a", "y");
	assert_int_equal(ds_create(d, b), -EEXIST);
	assert_non_null(strstr(ds_last_error(d), "already exists"));

	struct br_object *got;
	assert_int_equal(ds_get(d, NS, NULL, "crud-a", &got), 0);
	assert_int_equal(got->revision, a->revision);
	assert_string_equal(got->meta.uid, a->meta.uid);
	assert_string_equal(labels_get(&got->meta.labels, "team"), "x");
	char rv[32];
	snprintf(rv, sizeof(rv), "%ld", (long)a->revision);
	assert_string_equal(got->meta.resource_version, rv);

	/* An update against a stale revision is refused, the current one succeeds. */
	labels_set(got->arena, &got->meta.labels, "team", "z");
	int64_t stale = got->revision;
	assert_int_equal(ds_update(d, got), 0);
	assert_true(got->revision > stale);
	b->revision = stale;
	assert_int_equal(ds_update(d, b), -ECANCELED);
	assert_int_equal(ds_delete(d, NS, NULL, "crud-a", stale), -ECANCELED);
	assert_int_equal(ds_delete(d, NS, NULL, "crud-a", got->revision), 0);
	model_free(a);
	assert_int_equal(ds_get(d, NS, NULL, "crud-a", &a), -ENOENT);
	assert_int_equal(ds_delete(d, NS, NULL, "crud-a", 0), -ENOENT);
	b->revision = 5;
	assert_int_equal(ds_update(d, b), -ENOENT);
	model_free(got);
	model_free(b);
	ds_close(d);
}

static void test_list_scopes(void **state)
{
	struct ds *d = open_ds();
	const char *names[][2] = { { "b", "p2" }, { "a", "p1" }, { "a", "p3" }, { "ab", "p0" } };
	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		struct br_object *o = np_obj(names[i][0], names[i][1]);
		assert_int_equal(ds_create(d, o), 0);
		model_free(o);
	}
	struct br_object **objs;
	size_t n;
	const struct br_kind *NP = model_kind(KIND_NETWORKPOLICY);
	assert_int_equal(ds_list(d, NP, "a", &objs, &n), 0);
	assert_int_equal(n, 2); /* "ab" is another namespace, not a prefix match */
	assert_string_equal(objs[0]->meta.name, "p1");
	assert_string_equal(objs[1]->meta.name, "p3");
	model_free_all(objs, n);
	assert_int_equal(ds_list(d, NP, NULL, &objs, &n), 0);
	assert_int_equal(n, 4);
	assert_string_equal(objs[0]->meta.namespace, "a");
	assert_string_equal(objs[2]->meta.namespace, "ab");
	assert_string_equal(objs[3]->meta.namespace, "b");
	model_free_all(objs, n);
	/* The Kubernetes kind of the same name lives elsewhere. */
	assert_int_equal(ds_list(d, model_kind(KIND_K8S_NETWORKPOLICY), NULL, &objs, &n), 0);
	assert_int_equal(n, 0);
	free(objs);
	ds_close(d);
}

static void test_apply(void **state)
{
	struct ds *d = open_ds();
	bool created, changed;
	struct br_object *o = ns_obj("apply-a", "x");
	assert_int_equal(ds_apply(d, o, &created, &changed), 0);
	assert_true(created && changed);
	char *uid = xstrdup(o->meta.uid);
	int64_t rev = o->revision;
	model_free(o);

	o = ns_obj("apply-a", "x");
	assert_int_equal(ds_apply(d, o, &created, &changed), 0);
	assert_false(created || changed);
	assert_int_equal(o->revision, rev); /* nothing written */
	model_free(o);

	o = ns_obj("apply-a", "y");
	assert_int_equal(ds_apply(d, o, &created, &changed), 0);
	assert_true(!created && changed);
	assert_string_equal(o->meta.uid, uid); /* identity kept */
	model_free(o);
	free(uid);
	ds_close(d);
}

static void test_corrupt_value(void **state)
{
	/* A value someone wrote by hand that does not decode is reported, not trusted. */
	const char *ep = etcd_proc_endpoint(proc);
	struct etcd_config ec = { .endpoints = &ep, .n_endpoints = 1 };
	struct etcd *e;
	assert_int_equal(etcd_new(&ec, &e, NULL), 0);
	const char *bad = "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":"
			  "{\"name\":\"other\"}}";
	assert_int_equal(etcd_put(e, "/calico/resources/v3/core/namespaces/corrupt", bad,
				  strlen(bad), 0, NULL),
			 0);
	struct ds *d = open_ds();
	struct br_object *o;
	assert_int_equal(ds_get(d, model_kind(KIND_NAMESPACE), NULL, "corrupt", &o), -EINVAL);
	assert_non_null(strstr(ds_last_error(d), "belongs under another key"));
	bool deleted;
	assert_int_equal(
		etcd_delete(e, "/calico/resources/v3/core/namespaces/corrupt", &deleted, NULL), 0);
	etcd_free(e);
	ds_close(d);
}

/* --- syncer --------------------------------------------------------------------------- */

struct rec {
	struct hmap objs; /* "kind/scope/name" → label "v" of the object */
	size_t n_updates;
	size_t n_deletes;
	size_t n_in_sync;
	enum ds_sync_status status;
	char why[512]; /* of the last status */
	char last[256];
	size_t n_resyncs;
	char resync_reason[64], resync_detail[768];
};

static void rec_update(void *ctx, const struct ds_update *u)
{
	struct rec *r = ctx;
	char key[256];
	snprintf(key, sizeof(key), "%s/%s/%s", u->kind->kind, u->scope ? u->scope : "", u->name);
	free(hmap_del(&r->objs, key));
	if (u->obj) {
		const char *v = labels_get(&u->obj->meta.labels, "team");
		hmap_put(&r->objs, key, xstrdup(v ? v : ""));
		model_free(u->obj);
		r->n_updates++;
	} else {
		r->n_deletes++;
	}
	int n = snprintf(r->last, sizeof(r->last), "%s %s", u->obj ? "put" : "del", key);
	assert_true(n > 0 && (size_t)n < sizeof(r->last));
}

static void rec_status(void *ctx, enum ds_sync_status st, const char *why)
{
	struct rec *r = ctx;
	r->status = st;
	snprintf(r->why, sizeof(r->why), "%s", why ? why : "");
	if (st == DS_IN_SYNC)
		r->n_in_sync++;
}

static void rec_resync(void *ctx, const char *reason, const char *detail)
{
	struct rec *r = ctx;
	r->n_resyncs++;
	snprintf(r->resync_reason, sizeof(r->resync_reason), "%s", reason);
	snprintf(r->resync_detail, sizeof(r->resync_detail), "%s", detail);
}

static const struct ds_syncer_ops rec_ops = { rec_update, rec_status, rec_resync };

static void rec_clear(struct rec *r)
{
	for (struct hmap_iter it = hmap_iter(&r->objs); hmap_next(&it);)
		free(it.value);
	hmap_clear(&r->objs);
}

static const char *rec_team(struct rec *r, const char *name)
{
	char key[256];
	snprintf(key, sizeof(key), "Namespace//%s", name);
	return hmap_get(&r->objs, key);
}

/* Drive the loop until @cond holds, at most @ms. */
#define RUN_UNTIL(l, ms, cond)                                               \
	do {                                                                 \
		uint64_t deadline_ = now_ms() + (ms);                        \
		while (!(cond)) {                                            \
			if (now_ms() > deadline_)                            \
				fail_msg("timed out waiting for %s", #cond); \
			assert_true(loop_run_once(l, 50) >= 0);              \
		}                                                            \
	} while (0)

static void put_ns(struct ds *d, const char *name, const char *team)
{
	bool created, changed;
	struct br_object *o = ns_obj(name, team);
	assert_int_equal(ds_apply(d, o, &created, &changed), 0);
	model_free(o);
}

static void test_syncer(void **state)
{
	struct ds *d = open_ds();
	struct ds *w = open_ds(); /* a second writer */
	put_ns(w, "sync-a", "1");
	put_ns(w, "sync-b", "1");
	struct loop *l = loop_new();
	struct rec r = { 0 };
	struct ds_watch_spec specs[] = { { KIND_NAMESPACE, NULL }, { KIND_IPPOOL, NULL } };
	struct ds_syncer *s;
	assert_int_equal(ds_syncer_start(d, l, specs, 2, &rec_ops, &r, &s), 0);
	RUN_UNTIL(l, 5000, r.status == DS_IN_SYNC);
	/* Everything listed is delivered before in-sync. */
	assert_string_equal(rec_team(&r, "sync-a"), "1");
	assert_string_equal(rec_team(&r, "sync-b"), "1");

	/* Changes arrive in order. */
	put_ns(w, "sync-a", "2");
	assert_int_equal(ds_delete(w, model_kind(KIND_NAMESPACE), NULL, "sync-b", 0), 0);
	put_ns(w, "sync-c", "1");
	RUN_UNTIL(l, 5000, rec_team(&r, "sync-c") != NULL);
	assert_string_equal(rec_team(&r, "sync-a"), "2");
	assert_null(rec_team(&r, "sync-b"));

	/* etcd restarts; changes after it arrive exactly once. */
	size_t updates = r.n_updates;
	assert_int_equal(etcd_proc_restart(proc), 0);
	put_ns(w, "sync-d", "1");
	RUN_UNTIL(l, 15000, rec_team(&r, "sync-d") != NULL);
	loop_run_once(l, 300); /* anything repeated would arrive now */
	assert_int_equal(r.n_updates, updates + 1);
	assert_int_equal(r.n_in_sync, 1);

	/* Down long enough for the watch to back off; meanwhile the store changes and
	 * is compacted past the watch's revision. The syncer re-lists and delivers
	 * exactly the difference, the delete included. */
	assert_int_equal(etcd_proc_stop(proc), 0);
	for (int i = 0; i < 30; i++)
		loop_run_once(l, 100);
	assert_int_equal(etcd_proc_restart(proc), 0);
	const char *ep = etcd_proc_endpoint(proc);
	struct etcd_config ec = { .endpoints = &ep, .n_endpoints = 1 };
	struct etcd *e;
	assert_int_equal(etcd_new(&ec, &e, NULL), 0);
	put_ns(w, "sync-e", "1");
	assert_int_equal(ds_delete(w, model_kind(KIND_NAMESPACE), NULL, "sync-a", 0), 0);
	struct etcd_kv kv = { 0 };
	int64_t rev;
	assert_int_equal(etcd_put(e, "/unrelated", "x", 1, 0, &rev), 0);
	assert_int_equal(etcd_compact(e, rev), 0);
	etcd_free(e);
	etcd_kv_clear(&kv);
	size_t deletes = r.n_deletes;
	RUN_UNTIL(l, 15000, r.n_in_sync == 2 && rec_team(&r, "sync-e") != NULL);
	assert_null(rec_team(&r, "sync-a"));
	assert_int_equal(r.n_deletes, deletes + 1);
	assert_string_equal(rec_team(&r, "sync-c"), "1");
	assert_string_equal(rec_team(&r, "sync-d"), "1");

	ds_syncer_stop(s);
	rec_clear(&r);
	loop_free(l);
	ds_close(d);
	ds_close(w);
}

static void test_syncer_waits_for_datastore(void **state)
{
	/* Started with etcd down: reports it, then syncs when etcd comes. */
	assert_int_equal(etcd_proc_stop(proc), 0);
	struct ds *d = open_ds();
	struct loop *l = loop_new();
	struct rec r = { .status = DS_RESYNC };
	struct ds_watch_spec spec = { KIND_NAMESPACE, NULL };
	struct ds_syncer *s;
	assert_int_equal(ds_syncer_start(d, l, &spec, 1, &rec_ops, &r, &s), 0);
	RUN_UNTIL(l, 8000, r.status == DS_WAIT_FOR_DATASTORE);
	assert_int_equal(etcd_proc_restart(proc), 0);
	RUN_UNTIL(l, 15000, r.status == DS_IN_SYNC);
	assert_int_equal(ds_syncer_status(s), DS_IN_SYNC);
	ds_syncer_stop(s);
	rec_clear(&r);
	loop_free(l);
	ds_close(d);
}

/*
 * The migration lock: every kind of write is refused while it is there, with
 * the message the programs print; reads go on; unlocking lets writes through.
 */
static void test_migration_lock(void **state)
{
	struct ds *d = open_ds(), *other = open_ds();
	const struct br_kind *NS = model_kind(KIND_NAMESPACE);
	struct br_object *kept = ns_obj("lock-kept", "x"), *gone = ns_obj("lock-gone", "x");
	assert_int_equal(ds_create(d, kept), 0);
	assert_int_equal(ds_create(d, gone), 0);
	bool locked = true, changed = false;
	assert_int_equal(ds_is_locked(d, &locked), 0);
	assert_false(locked);

	assert_int_equal(ds_set_locked(d, true, &changed), 0);
	assert_true(changed);
	assert_int_equal(ds_set_locked(d, true, &changed), 0);
	assert_false(changed); /* already locked: nothing written */
	assert_int_equal(ds_is_locked(other, &locked), 0);
	assert_true(locked);

	/* Another client's writes, each path: create, update, apply, both deletes, a transaction.
	 */
	struct br_object *n = ns_obj("lock-new", "x");
	assert_int_equal(ds_create(other, n), -EROFS);
	assert_string_equal(ds_last_error(other), DS_LOCKED_MESSAGE);
	struct br_object *got;
	assert_int_equal(ds_get(other, NS, NULL, "lock-kept", &got), 0); /* reads go on */
	labels_set(got->arena, &got->meta.labels, "team", "y");
	assert_int_equal(ds_update(other, got), -EROFS);
	bool created;
	assert_int_equal(ds_apply(other, got, &created, &changed), -EROFS);
	assert_int_equal(ds_delete(other, NS, NULL, "lock-gone", 0), -EROFS);
	assert_int_equal(ds_delete(other, NS, NULL, "lock-gone", gone->revision), -EROFS);
	struct ds_write w[] = { { DS_WRITE_CREATE, n }, { DS_WRITE_UPDATE, got } };
	assert_int_equal(ds_write_seq(other, w, 2, NULL), -EROFS);
	assert_string_equal(ds_last_error(other), DS_LOCKED_MESSAGE);
	/* Not found is still not found, and nothing changed. */
	struct br_object *none;
	assert_int_equal(ds_get(other, NS, NULL, "lock-new", &none), -ENOENT);
	model_free(got);
	assert_int_equal(ds_get(other, NS, NULL, "lock-kept", &got), 0);
	assert_int_equal(got->revision, kept->revision);

	assert_int_equal(ds_set_locked(d, false, &changed), 0);
	assert_true(changed);
	assert_int_equal(ds_set_locked(d, false, &changed), 0);
	assert_false(changed);
	assert_int_equal(ds_create(other, n), 0);
	assert_int_equal(ds_delete(other, NS, NULL, "lock-gone", 0), 0);
	assert_int_equal(ds_delete(other, NS, NULL, "lock-gone", 0), -ENOENT);
	model_free(got);
	model_free(n);
	model_free(kept);
	model_free(gone);
	ds_close(other);
	ds_close(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_crud),
		cmocka_unit_test(test_list_scopes),
		cmocka_unit_test(test_apply),
		cmocka_unit_test(test_corrupt_value),
		cmocka_unit_test(test_syncer),
		cmocka_unit_test(test_syncer_waits_for_datastore),
		cmocka_unit_test(test_migration_lock),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
