/*
 * The syncer against a real etcd that fails the way an operator's does: the
 * cluster rebuilt from scratch (revision back to 1, or re-populated past the
 * revision the syncer had seen, with or without a new cluster ID), a restore
 * whose content differs at the same revision, a watch that must catch up
 * 80 MB, a kind of 70 MB, and a watch that stays down. After each, the
 * syncer's view must equal the store, and the resync must say why.
 *
 * Each test has its own etcd (rebuilding one wipes it).
 */
#include "harness.h"
#include "etcd_harness.h"

#include <brindle/sys/ds.h>
#include <brindle/sys/etcd.h>
#include <brindle/core/hmap.h>
#include <brindle/sys/loop.h>
#include <brindle/sys/clock.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

static struct etcd_proc *proc;

static int setup(void **state)
{
	return etcd_proc_start(NULL, &proc) < 0 ? -1 : 0;
}

static int teardown(void **state)
{
	etcd_proc_destroy(proc);
	proc = NULL;
	return 0;
}

static struct ds *open_ds(void)
{
	const char *ep = etcd_proc_endpoint(proc);
	struct ds_config cfg = {
		.type = "etcdv3", .etcd_endpoints = &ep, .n_etcd_endpoints = 1, .timeout_ms = 10000
	};
	struct ds *d;
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	if (ds_open(&cfg, &d, &err) < 0)
		fail_msg("ds_open: %s", sb_str(&err));
	sb_free(&err);
	return d;
}

static struct etcd *open_etcd(void)
{
	const char *ep = etcd_proc_endpoint(proc);
	struct etcd_config ec = { .endpoints = &ep, .n_endpoints = 1, .timeout_ms = 10000 };
	struct etcd *e;
	assert_int_equal(etcd_new(&ec, &e, NULL), 0);
	return e;
}

/* --- what the syncer delivered ---------------------------------------------------------- */

struct rec {
	struct hmap objs; /* "Kind/name" → the object's label "v" */
	size_t n_updates, n_deletes, n_in_sync;
	enum ds_sync_status status;
	char why[512];
	size_t n_resyncs;
	char reason[64], detail[768];
};

static void rec_update(void *ctx, const struct ds_update *u)
{
	struct rec *r = ctx;
	char key[256];
	snprintf(key, sizeof(key), "%s/%s", u->kind->kind, u->name);
	free(hmap_del(&r->objs, key));
	if (u->obj) {
		const char *v = labels_get(&u->obj->meta.labels, "v");
		hmap_put(&r->objs, key, xstrdup(v ? v : ""));
		model_free(u->obj);
		r->n_updates++;
	} else {
		r->n_deletes++;
	}
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
	snprintf(r->reason, sizeof(r->reason), "%s", reason);
	snprintf(r->detail, sizeof(r->detail), "%s", detail);
}

static const struct ds_syncer_ops rec_ops = { rec_update, rec_status, rec_resync };

static void rec_clear(struct rec *r)
{
	for (struct hmap_iter it = hmap_iter(&r->objs); hmap_next(&it);)
		free(it.value);
	hmap_clear(&r->objs);
}

#define RUN_UNTIL(l, ms, cond)                                               \
	do {                                                                 \
		uint64_t deadline_ = now_ms() + (ms);                        \
		while (!(cond)) {                                            \
			if (now_ms() > deadline_)                            \
				fail_msg("timed out waiting for %s", #cond); \
			assert_true(loop_run_once(l, 50) >= 0);              \
		}                                                            \
	} while (0)

static void run_for(struct loop *l, int ms)
{
	uint64_t end = now_ms() + (uint64_t)ms;
	while (now_ms() < end)
		assert_true(loop_run_once(l, 50) >= 0);
}

static void put_ns(struct ds *d, const char *name, const char *v)
{
	char yaml[256];
	snprintf(yaml, sizeof(yaml),
		 "apiVersion: v1\nkind: Namespace\nmetadata: {name: %s, labels: {v: \"%s\"}}\n",
		 name, v);
	struct br_object **objs;
	size_t n;
	struct model_errors errs = { 0 };
	assert_int_equal(model_read("t", yaml, strlen(yaml), NULL, &objs, &n, &errs), 0);
	bool created, changed;
	assert_int_equal(ds_apply(d, objs[0], &created, &changed), 0);
	model_free_all(objs, n);
}

/* The syncer's namespaces are exactly the store's, labels included. */
static void assert_view_is_store(struct rec *r)
{
	struct ds *d = open_ds();
	struct br_object **objs;
	size_t n;
	assert_int_equal(ds_list(d, model_kind(KIND_NAMESPACE), NULL, &objs, &n), 0);
	size_t ours = 0;
	for (struct hmap_iter it = hmap_iter(&r->objs); hmap_next(&it);)
		ours += strncmp(it.key, "Namespace/", 10) == 0;
	for (size_t i = 0; i < n; i++) {
		char key[256];
		snprintf(key, sizeof(key), "Namespace/%s", objs[i]->meta.name);
		const char *have = hmap_get(&r->objs, key);
		const char *want = labels_get(&objs[i]->meta.labels, "v");
		if (!have || !streq(have, want ? want : ""))
			fail_msg("%s: the syncer has %s, the store %s", key,
				 have ? have : "nothing", want ? want : "");
	}
	if (ours != n)
		fail_msg("the syncer has %zu namespaces, the store %zu", ours, n);
	model_free_all(objs, n);
	ds_close(d);
}

struct fixture {
	struct ds *d, *w;
	struct loop *l;
	struct ds_syncer *s;
	struct rec r;
};

static void start(struct fixture *f)
{
	memset(f, 0, sizeof(*f));
	f->d = open_ds();
	f->w = open_ds();
	f->l = loop_new();
	static const struct ds_watch_spec specs[] = { { KIND_NAMESPACE, NULL },
						      { KIND_IPPOOL, NULL } };
	f->r.status = DS_RESYNC;
	assert_int_equal(
		ds_syncer_start(f->d, f->l, specs, ARRAY_SIZE(specs), &rec_ops, &f->r, &f->s), 0);
}

static void finish(struct fixture *f)
{
	ds_syncer_stop(f->s);
	rec_clear(&f->r);
	loop_free(f->l);
	ds_close(f->d);
	ds_close(f->w);
}

/* Namespaces old-0..old-(n-1); the store's revision is then above n. */
static void populate(struct ds *w, const char *prefix, int n, const char *v)
{
	for (int i = 0; i < n; i++) {
		char name[64];
		snprintf(name, sizeof(name), "%s-%d", prefix, i);
		put_ns(w, name, v);
	}
}

static int64_t store_revision(void)
{
	struct etcd *e = open_etcd();
	struct etcd_range res = { 0 };
	assert_int_equal(etcd_list(e, "/nothing/", 0, 0, &res), 0);
	int64_t rev = res.revision;
	etcd_range_clear(&res);
	etcd_free(e);
	return rev;
}

/* --- a rebuilt store -------------------------------------------------------------------- */

/*
 * The store comes back empty (revision 1) while the syncer watches: its
 * watch meets a store below what it delivered, and the syncer re-lists.
 */
static void test_rebuilt_store_behind(void **state)
{
	struct fixture f;
	start(&f);
	populate(f.w, "old", 40, "1");
	RUN_UNTIL(f.l, 10000, f.r.status == DS_IN_SYNC && f.r.objs.n == 40);
	assert_int_equal(f.r.n_resyncs, 0);

	assert_int_equal(etcd_proc_rebuild(proc, NULL), 0);
	RUN_UNTIL(f.l, 15000, f.r.n_resyncs > 0 && f.r.status == DS_IN_SYNC);
	assert_string_equal(f.r.reason, DS_RESYNC_BEHIND);
	assert_non_null(strstr(f.r.detail, "rebuilt or restored"));
	assert_int_equal(f.r.objs.n, 0); /* every old namespace deleted */

	/* Re-populated: the new store's content arrives, nothing of the old stays. */
	populate(f.w, "new", 5, "2");
	RUN_UNTIL(f.l, 10000, f.r.objs.n == 5);
	assert_view_is_store(&f.r);
	assert_int_equal(f.r.n_resyncs, 1); /* one cause, logged once */
	finish(&f);
}

/*
 * Rebuilt and re-populated past the revision the syncer had seen before its
 * watch could reconnect, with other names: nothing in the stream contradicts
 * the cache; the check after the reconnect (key count and first key at the
 * resumed revision) finds another store.
 */
static void test_rebuilt_store_repopulated(void **state)
{
	struct fixture f;
	start(&f);
	populate(f.w, "old", 40, "1");
	RUN_UNTIL(f.l, 10000, f.r.status == DS_IN_SYNC && f.r.objs.n == 40);
	int64_t seen = store_revision();

	/* The syncer's loop does not run: it cannot notice until all of this is done. */
	assert_int_equal(etcd_proc_rebuild(proc, NULL), 0);
	populate(f.w, "new", 50, "2");
	assert_true(store_revision() > seen);

	RUN_UNTIL(f.l, 15000, f.r.n_resyncs > 0 && f.r.status == DS_IN_SYNC);
	assert_string_equal(f.r.reason, DS_RESYNC_STORE_CHANGED);
	assert_non_null(strstr(f.r.detail, "rebuilt or restored"));
	run_for(f.l, 300);
	assert_int_equal(f.r.objs.n, 50);
	assert_view_is_store(&f.r);
	finish(&f);
}

/*
 * Rebuilt and re-populated with the same names: the stream shows creates of
 * keys the syncer holds, which one store's history cannot have.
 */
static void test_rebuilt_store_same_names(void **state)
{
	struct fixture f;
	start(&f);
	populate(f.w, "ns", 30, "1");
	RUN_UNTIL(f.l, 10000, f.r.status == DS_IN_SYNC && f.r.objs.n == 30);

	assert_int_equal(etcd_proc_rebuild(proc, NULL), 0);
	populate(f.w, "other", 10, "2"); /* past the revision seen ... */
	populate(f.w, "ns", 30, "3");	 /* ... then the same names again */

	RUN_UNTIL(f.l, 15000, f.r.n_resyncs > 0 && f.r.status == DS_IN_SYNC);
	assert_string_equal(f.r.reason, DS_RESYNC_STORE_CHANGED);
	run_for(f.l, 300);
	assert_int_equal(f.r.objs.n, 40);
	assert_view_is_store(&f.r);
	finish(&f);
}

/* Rebuilt as another cluster (another ID): the watch's first answer says so. */
static void test_rebuilt_store_new_cluster(void **state)
{
	struct fixture f;
	start(&f);
	populate(f.w, "old", 20, "1");
	RUN_UNTIL(f.l, 10000, f.r.status == DS_IN_SYNC && f.r.objs.n == 20);

	assert_int_equal(etcd_proc_rebuild(proc, "brindle-other-cluster"), 0);
	populate(f.w, "new", 30, "2");

	RUN_UNTIL(f.l, 15000, f.r.n_resyncs > 0 && f.r.status == DS_IN_SYNC);
	assert_string_equal(f.r.reason, DS_RESYNC_CLUSTER_CHANGED);
	assert_non_null(strstr(f.r.detail, "cluster ID changed"));
	run_for(f.l, 300);
	assert_view_is_store(&f.r);
	finish(&f);
}

/*
 * A restore whose history matches the syncer's revision for revision, but
 * whose last write differs in content: the same key at the same mod revision
 * with another value. A re-list (forced here by compaction) must deliver it:
 * it compares content, not only revisions.
 */
static void test_relist_compares_content(void **state)
{
	struct fixture f;
	start(&f);
	populate(f.w, "ns", 10, "1");
	put_ns(f.w, "last", "confirmed");
	RUN_UNTIL(f.l, 10000, f.r.status == DS_IN_SYNC && f.r.objs.n == 11);
	int64_t seen = store_revision();

	/* The same writes in the same order, but the last one says "pending". */
	assert_int_equal(etcd_proc_rebuild(proc, NULL), 0);
	populate(f.w, "ns", 10, "1");
	put_ns(f.w, "last", "pending");
	assert_int_equal(store_revision(), seen);
	/* Move on and compact past the syncer's watch, so it has to re-list. */
	struct etcd *e = open_etcd();
	int64_t rev;
	assert_int_equal(etcd_put(e, "/unrelated/a", "x", 1, 0, &rev), 0);
	assert_int_equal(etcd_put(e, "/unrelated/b", "x", 1, 0, &rev), 0);
	assert_int_equal(etcd_compact(e, rev), 0);
	etcd_free(e);

	RUN_UNTIL(f.l, 15000, f.r.n_resyncs > 0 && f.r.status == DS_IN_SYNC);
	assert_string_equal(f.r.reason, DS_RESYNC_COMPACTED);
	RUN_UNTIL(f.l, 5000, streq(hmap_get(&f.r.objs, "Namespace/last"), "pending"));
	assert_view_is_store(&f.r);
	finish(&f);
}

/* --- the watch's connection ------------------------------------------------------------- */

/*
 * A watch that stays down makes the syncer not in sync after the grace
 * period, with the reason; back up, it resumes without a re-list.
 */
static void test_watch_down_not_in_sync(void **state)
{
	struct fixture f;
	start(&f);
	populate(f.w, "ns", 3, "1");
	RUN_UNTIL(f.l, 10000, f.r.status == DS_IN_SYNC && f.r.objs.n == 3);
	size_t updates = f.r.n_updates;

	assert_int_equal(etcd_proc_stop(proc), 0);
	uint64_t t0 = now_ms();
	run_for(f.l, 3000);
	assert_int_equal(f.r.status, DS_IN_SYNC); /* within the grace period */
	RUN_UNTIL(f.l, 10000, f.r.status == DS_WAIT_FOR_DATASTORE);
	uint64_t took = now_ms() - t0;
	assert_true(took >= 4900 && took < 8000);
	assert_non_null(strstr(f.r.why, "the watch of namespaces is down"));
	assert_non_null(ds_syncer_why(f.s));

	assert_int_equal(etcd_proc_restart(proc), 0);
	put_ns(f.w, "ns-after", "2");
	RUN_UNTIL(f.l, 15000, f.r.status == DS_IN_SYNC && f.r.objs.n == 4);
	assert_null(ds_syncer_why(f.s));
	run_for(f.l, 500);
	assert_int_equal(f.r.n_resyncs, 0);	      /* resumed, not re-listed */
	assert_int_equal(f.r.n_updates, updates + 1); /* only the new one */
	finish(&f);
}

/* --- sizes ------------------------------------------------------------------------------ */

#define BIG_BYTES (1000 * 1000)

/* A GlobalNetworkSet of about BIG_BYTES: 200 KB of annotation, the rest addresses. */
static void put_big(struct etcd *e, const char *name, char fill)
{
	struct strbuf v = STRBUF_INIT;
	sb_init(&v);
	sb_addf(&v,
		"{\"apiVersion\":\"projectcalico.org/v3\",\"kind\":\"GlobalNetworkSet\","
		"\"metadata\":{\"name\":\"%s\",\"labels\":{\"v\":\"%c\"},\"annotations\":{\"bulk\":"
		"\"",
		name, fill);
	for (size_t i = 0; i < 200 * 1000; i++)
		sb_addc(&v, fill);
	sb_adds(&v, "\"}},\"spec\":{\"nets\":[");
	for (unsigned i = 0; v.len < BIG_BYTES; i++)
		sb_addf(&v, "%s\"10.%u.%u.%u/32\"", i ? "," : "", (i >> 16) & 255, (i >> 8) & 255,
			i & 255);
	sb_adds(&v, "]}}");
	char key[256];
	snprintf(key, sizeof(key), "/calico/resources/v3/projectcalico.org/globalnetworksets/%s",
		 name);
	assert_int_equal(etcd_put(e, key, v.buf, v.len, 0, NULL), 0);
	sb_free(&v);
}

struct big_rec {
	size_t n, errors;
	enum ds_sync_status status;
	size_t resyncs;
};

static void big_update(void *ctx, const struct ds_update *u)
{
	struct big_rec *r = ctx;
	if (u->error && !r->errors++)
		fprintf(stderr, "%s\n", u->error);
	if (u->obj) {
		r->n++;
		model_free(u->obj);
	}
}

static void big_status(void *ctx, enum ds_sync_status st, const char *why)
{
	((struct big_rec *)ctx)->status = st;
}

static void big_resync(void *ctx, const char *reason, const char *detail)
{
	((struct big_rec *)ctx)->resyncs++;
}

static const struct ds_syncer_ops big_ops = { big_update, big_status, big_resync };

/* 70 objects of 1 MB in one kind: 70 MB, more than one answer may carry. */
static void test_big_kind(void **state)
{
	struct etcd *e = open_etcd();
	for (int i = 0; i < 70; i++) {
		char name[32];
		snprintf(name, sizeof(name), "big-%02d", i);
		put_big(e, name, 'a');
	}
	struct ds *d = open_ds();
	struct loop *l = loop_new();
	struct big_rec r = { .status = DS_RESYNC };
	struct ds_watch_spec spec = { KIND_GLOBALNETWORKSET, NULL };
	struct ds_syncer *s;
	assert_int_equal(ds_syncer_start(d, l, &spec, 1, &big_ops, &r, &s), 0);
	RUN_UNTIL(l, 60000, r.status == DS_IN_SYNC);
	assert_int_equal(r.n, 70);
	assert_int_equal(r.errors, 0);
	/* The blocking list (brindlectl's) pages by bytes the same way. */
	struct br_object **objs;
	size_t n;
	assert_int_equal(ds_list(d, model_kind(KIND_GLOBALNETWORKSET), NULL, &objs, &n), 0);
	assert_int_equal(n, 70);
	model_free_all(objs, n);
	ds_syncer_stop(s);
	loop_free(l);
	ds_close(d);
	etcd_free(e);
}

/*
 * 80 MB of changes while the watch is away: etcd resends them as one
 * response, which the watch asks to have in fragments; every change arrives,
 * without a re-list.
 */
static void test_big_backlog(void **state)
{
	struct ds *d = open_ds();
	struct loop *l = loop_new();
	struct big_rec r = { .status = DS_RESYNC };
	struct ds_watch_spec spec = { KIND_GLOBALNETWORKSET, NULL };
	struct ds_syncer *s;
	assert_int_equal(ds_syncer_start(d, l, &spec, 1, &big_ops, &r, &s), 0);
	RUN_UNTIL(l, 10000, r.status == DS_IN_SYNC);

	/* The watch's connection breaks; the loop does not run while the store moves on. */
	assert_int_equal(etcd_proc_restart(proc), 0);
	struct etcd *e = open_etcd();
	for (int i = 0; i < 80; i++) {
		char name[32];
		snprintf(name, sizeof(name), "backlog-%02d", i);
		put_big(e, name, 'b');
	}
	etcd_free(e);
	RUN_UNTIL(l, 60000, r.n == 80);
	assert_int_equal(r.resyncs, 0);
	assert_int_equal(r.errors, 0);
	RUN_UNTIL(l, 10000, r.status == DS_IN_SYNC);
	ds_syncer_stop(s);
	loop_free(l);
	ds_close(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_rebuilt_store_behind, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rebuilt_store_repopulated, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rebuilt_store_same_names, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rebuilt_store_new_cluster, setup, teardown),
		cmocka_unit_test_setup_teardown(test_relist_compares_content, setup, teardown),
		cmocka_unit_test_setup_teardown(test_watch_down_not_in_sync, setup, teardown),
		cmocka_unit_test_setup_teardown(test_big_kind, setup, teardown),
		cmocka_unit_test_setup_teardown(test_big_backlog, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
