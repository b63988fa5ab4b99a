/*
 * The etcd client against a real etcd: unary calls, paging, transactions,
 * leases, compaction, watches (ordering, resume across a restart, compaction),
 * failover, TLS and timeouts. Every wait is bounded.
 */
#include "harness.h"
#include "etcd_harness.h"

#include <brindle/sys/etcd.h>
#include <brindle/sys/loop.h>
#include <brindle/sys/clock.h>

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

static struct etcd_proc *shared_etcd;

static int group_setup(void **state)
{
	int r = etcd_proc_start(NULL, &shared_etcd);
	if (r < 0)
		fprintf(stderr, "cannot start etcd: %s\n", strerror(-r));
	return r < 0 ? -1 : 0;
}

static int group_teardown(void **state)
{
	etcd_proc_destroy(shared_etcd);
	shared_etcd = NULL;
	return 0;
}

static struct etcd *client_for(const char *const *eps, size_t n, long timeout_ms, const char *ca,
			       const char *cert, const char *key)
{
	struct etcd_config cfg = {
		.endpoints = eps,
		.n_endpoints = n,
		.ca_file = ca,
		.cert_file = cert,
		.key_file = key,
		.timeout_ms = timeout_ms,
		.connect_timeout_ms = 500,
	};
	struct etcd *e;
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	int r = etcd_new(&cfg, &e, &err);
	if (r < 0)
		fail_msg("etcd_new: %s", sb_str(&err));
	sb_free(&err);
	return e;
}

static struct etcd *shared_client(void)
{
	const char *ep = etcd_proc_endpoint(shared_etcd);
	return client_for(&ep, 1, 5000, NULL, NULL, NULL);
}

static void put_str(struct etcd *e, const char *key, const char *value, int64_t *rev)
{
	int r = etcd_put(e, key, value, strlen(value), 0, rev);
	if (r < 0)
		fail_msg("put %s: %s: %s", key, strerror(-r), etcd_last_error(e));
}

/* --- unary calls --- */

static void test_get_put_delete(void **state)
{
	struct etcd *e = shared_client();
	int64_t r1, r2;
	put_str(e, "/crud/a", "one", &r1);
	put_str(e, "/crud/a", "two", &r2);
	assert_true(r2 > r1);

	struct etcd_kv kv;
	assert_int_equal(etcd_get(e, "/crud/a", &kv), 0);
	assert_string_equal(kv.key, "/crud/a");
	assert_int_equal(kv.key_len, 7);
	assert_string_equal(kv.value, "two");
	assert_int_equal(kv.value_len, 3);
	assert_int_equal(kv.create_revision, r1);
	assert_int_equal(kv.mod_revision, r2);
	assert_int_equal(kv.version, 2);
	assert_int_equal(kv.lease, 0);
	etcd_kv_clear(&kv);

	/* Values are bytes. */
	const char bin[] = { 'x', 0, (char)0xff, 'y' };
	assert_int_equal(etcd_put(e, "/crud/bin", bin, sizeof(bin), 0, NULL), 0);
	assert_int_equal(etcd_get(e, "/crud/bin", &kv), 0);
	assert_int_equal(kv.value_len, sizeof(bin));
	assert_memory_equal(kv.value, bin, sizeof(bin));
	etcd_kv_clear(&kv);
	assert_int_equal(etcd_put(e, "/crud/empty", NULL, 0, 0, NULL), 0);
	assert_int_equal(etcd_get(e, "/crud/empty", &kv), 0);
	assert_int_equal(kv.value_len, 0);
	assert_string_equal(kv.value, "");
	etcd_kv_clear(&kv);

	assert_int_equal(etcd_get(e, "/crud/missing", &kv), -ENOENT);

	bool deleted = false;
	int64_t rd;
	assert_int_equal(etcd_delete(e, "/crud/a", &deleted, &rd), 0);
	assert_true(deleted);
	assert_true(rd > r2);
	assert_int_equal(etcd_get(e, "/crud/a", &kv), -ENOENT);
	assert_int_equal(etcd_delete(e, "/crud/a", &deleted, NULL), 0);
	assert_false(deleted);
	etcd_free(e);
}

struct writer {
	const char *endpoint;
	int n;
	int64_t revs[64];
	atomic_int done;
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	struct etcd *e = client_for(&w->endpoint, 1, 5000, NULL, NULL, NULL);
	for (int i = 0; i < w->n; i++) {
		char key[64];
		snprintf(key, sizeof(key), "/list/w%02d", i);
		if (etcd_put(e, key, "w", 1, 0, &w->revs[i]) < 0)
			w->revs[i] = -1;
		usleep(2000);
	}
	etcd_free(e);
	atomic_store(&w->done, 1);
	return NULL;
}

static void check_sorted_unique(const struct etcd_range *r)
{
	for (size_t i = 1; i < r->n; i++)
		assert_true(strcmp(r->kvs[i - 1].key, r->kvs[i].key) < 0);
}

static void test_list_pages(void **state)
{
	struct etcd *e = shared_client();
	for (int i = 0; i < 7; i++) {
		char key[32], val[32];
		snprintf(key, sizeof(key), "/list/k%d", i);
		snprintf(val, sizeof(val), "v%d", i);
		put_str(e, key, val, NULL);
	}
	put_str(e, "/lisu", "outside", NULL);
	put_str(e, "/list", "the prefix itself", NULL);
	int64_t r0;
	put_str(e, "/other", "x", &r0);

	struct etcd_range res;
	assert_int_equal(etcd_list(e, "/list/", 0, 2, &res), 0);
	assert_int_equal(res.n, 7);
	assert_true(res.revision >= r0);
	check_sorted_unique(&res);
	for (size_t i = 0; i < res.n; i++) {
		char key[32], val[32];
		snprintf(key, sizeof(key), "/list/k%zu", i);
		snprintf(val, sizeof(val), "v%zu", i);
		assert_string_equal(res.kvs[i].key, key);
		assert_string_equal(res.kvs[i].value, val);
	}
	etcd_range_clear(&res);

	/*
	 * Pages at one revision while another client writes under the prefix:
	 * each list holds exactly the keys that existed at its revision.
	 */
	struct writer w = { .endpoint = etcd_proc_endpoint(shared_etcd), .n = 40 };
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, writer_main, &w), 0);
	struct {
		int64_t rev;
		size_t n;
	} seen[400];
	size_t n_seen = 0;
	while (!atomic_load(&w.done) && n_seen < ARRAY_SIZE(seen)) {
		assert_int_equal(etcd_list(e, "/list/", 0, 2, &res), 0);
		check_sorted_unique(&res);
		for (size_t i = 0; i < res.n; i++)
			assert_true(res.kvs[i].mod_revision <= res.revision);
		seen[n_seen].rev = res.revision;
		seen[n_seen].n = res.n;
		n_seen++;
		etcd_range_clear(&res);
	}
	pthread_join(th, NULL);
	size_t distinct = 0;
	for (size_t s = 0; s < n_seen; s++) {
		size_t want = 7;
		for (int i = 0; i < w.n; i++) {
			assert_true(w.revs[i] > 0);
			if (w.revs[i] <= seen[s].rev)
				want++;
		}
		assert_int_equal(seen[s].n, want);
		if (s && seen[s].n != seen[s - 1].n)
			distinct++;
	}
	assert_true(distinct > 0); /* the writes really happened while listing */

	/* An explicit old revision: later keys do not appear. */
	assert_int_equal(etcd_list(e, "/list/", r0, 3, &res), 0);
	assert_int_equal(res.n, 7);
	assert_int_equal(res.revision, r0);
	etcd_range_clear(&res);

	/* Everything, with an empty prefix. */
	assert_int_equal(etcd_list(e, "", 0, 5, &res), 0);
	assert_true(res.n >= 7 + 40 + 3);
	check_sorted_unique(&res);
	etcd_range_clear(&res);
	etcd_free(e);
}

/* --- transactions --- */

static void test_txn_create_if_absent(void **state)
{
	struct etcd *e = shared_client();
	struct etcd_cmp cmp = { .key = "/txn/create",
				.target = ETCD_CMP_VERSION,
				.result = ETCD_CMP_EQUAL,
				.revision = 0 };
	struct etcd_op put = {
		.type = ETCD_OP_PUT, .key = "/txn/create", .value = "first", .value_len = 5
	};
	struct etcd_op get = { .type = ETCD_OP_GET, .key = "/txn/create" };
	struct etcd_txn_result res;
	assert_int_equal(etcd_txn(e, &cmp, 1, &put, 1, &get, 1, &res), 0);
	assert_true(res.succeeded);
	assert_int_equal(res.n, 1);
	assert_false(res.found[0]);
	int64_t created = res.revision;
	etcd_txn_result_clear(&res);

	put.value = "second";
	put.value_len = 6;
	assert_int_equal(etcd_txn(e, &cmp, 1, &put, 1, &get, 1, &res), 0);
	assert_false(res.succeeded);
	assert_int_equal(res.n, 1);
	assert_true(res.found[0]);
	assert_string_equal(res.kvs[0].value, "first");
	assert_int_equal(res.kvs[0].mod_revision, created);
	etcd_txn_result_clear(&res);
	etcd_free(e);
}

static void test_txn_update_if_unchanged(void **state)
{
	struct etcd *e = shared_client();
	int64_t rev;
	put_str(e, "/txn/cas", "v1", &rev);
	struct etcd_cmp cmp = {
		.key = "/txn/cas", .target = ETCD_CMP_MOD, .result = ETCD_CMP_EQUAL, .revision = rev
	};
	struct etcd_op put = {
		.type = ETCD_OP_PUT, .key = "/txn/cas", .value = "v2", .value_len = 2
	};
	struct etcd_op get = { .type = ETCD_OP_GET, .key = "/txn/cas" };
	struct etcd_txn_result res;
	assert_int_equal(etcd_txn(e, &cmp, 1, &put, 1, &get, 1, &res), 0);
	assert_true(res.succeeded);
	int64_t rev2 = res.revision;
	etcd_txn_result_clear(&res);

	/* Someone else's write happened since @rev: conflict, and we see theirs. */
	put.value = "v3";
	assert_int_equal(etcd_txn(e, &cmp, 1, &put, 1, &get, 1, &res), 0);
	assert_false(res.succeeded);
	assert_true(res.found[0]);
	assert_string_equal(res.kvs[0].value, "v2");
	assert_int_equal(res.kvs[0].mod_revision, rev2);
	etcd_txn_result_clear(&res);

	/* Value comparison. */
	struct etcd_cmp vcmp = { .key = "/txn/cas",
				 .target = ETCD_CMP_VALUE,
				 .result = ETCD_CMP_EQUAL,
				 .value = "v2",
				 .value_len = 2 };
	assert_int_equal(etcd_txn(e, &vcmp, 1, &put, 1, NULL, 0, &res), 0);
	assert_true(res.succeeded);
	etcd_txn_result_clear(&res);
	assert_int_equal(etcd_txn(e, &vcmp, 1, &put, 1, NULL, 0, &res), 0);
	assert_false(res.succeeded);
	assert_int_equal(res.n, 0);
	etcd_txn_result_clear(&res);
	etcd_free(e);
}

static void test_txn_get_ops(void **state)
{
	struct etcd *e = shared_client();
	put_str(e, "/txn/get/a", "A", NULL);
	put_str(e, "/txn/get/gone", "G", NULL);
	struct etcd_op ops[] = {
		{ .type = ETCD_OP_GET, .key = "/txn/get/a" },
		{ .type = ETCD_OP_GET, .key = "/txn/get/none" },
		{ .type = ETCD_OP_PUT, .key = "/txn/get/b", .value = "B", .value_len = 1 },
		{ .type = ETCD_OP_DELETE, .key = "/txn/get/gone" },
		{ .type = ETCD_OP_GET, .key = "/txn/get/b" },
	};
	struct etcd_txn_result res;
	assert_int_equal(etcd_txn(e, NULL, 0, ops, ARRAY_SIZE(ops), NULL, 0, &res), 0);
	assert_true(res.succeeded);
	assert_int_equal(res.n, ARRAY_SIZE(ops));
	assert_true(res.found[0]);
	assert_string_equal(res.kvs[0].value, "A");
	assert_false(res.found[1]);
	assert_null(res.kvs[1].key);
	assert_false(res.found[2]);
	assert_false(res.found[3]);
	assert_true(res.found[4]); /* ops see the earlier ops of the same txn */
	assert_string_equal(res.kvs[4].value, "B");
	assert_int_equal(res.kvs[4].mod_revision, res.revision);
	etcd_txn_result_clear(&res);
	struct etcd_kv kv;
	assert_int_equal(etcd_get(e, "/txn/get/gone", &kv), -ENOENT);
	etcd_free(e);
}

/* --- leases --- */

static void test_lease(void **state)
{
	struct etcd *e = shared_client();
	int64_t id, ttl;
	assert_int_equal(etcd_lease_grant(e, 30, &id, &ttl), 0);
	assert_true(id != 0);
	assert_int_equal(ttl, 30);
	assert_int_equal(etcd_put(e, "/lease/held", "x", 1, id, NULL), 0);
	struct etcd_kv kv;
	assert_int_equal(etcd_get(e, "/lease/held", &kv), 0);
	assert_int_equal(kv.lease, id);
	etcd_kv_clear(&kv);
	int64_t left;
	assert_int_equal(etcd_lease_keepalive(e, id, &left), 0);
	assert_true(left > 0 && left <= 30);

	assert_int_equal(etcd_lease_revoke(e, id), 0);
	assert_int_equal(etcd_get(e, "/lease/held", &kv), -ENOENT);
	assert_int_equal(etcd_lease_keepalive(e, id, &left), 0);
	assert_int_equal(left, 0);
	assert_int_equal(etcd_lease_revoke(e, id), -ENOENT);

	/* Expiry: a key on a short lease goes away by itself. */
	assert_int_equal(etcd_lease_grant(e, 1, &id, &ttl), 0);
	assert_int_equal(etcd_put(e, "/lease/short", "x", 1, id, NULL), 0);
	uint64_t deadline = now_ms() + 8000;
	int r;
	while ((r = etcd_get(e, "/lease/short", &kv)) == 0 && now_ms() < deadline) {
		etcd_kv_clear(&kv);
		usleep(100 * 1000);
	}
	assert_int_equal(r, -ENOENT);
	assert_int_equal(etcd_lease_keepalive(e, id, &left), 0);
	assert_int_equal(left, 0);

	/* A put on an unknown lease is an etcd error, not a transport one. */
	assert_int_equal(etcd_put(e, "/lease/bad", "x", 1, id, NULL), -ENOENT);
	assert_non_null(strstr(etcd_last_error(e), "lease"));
	etcd_free(e);
}

/* --- compaction --- */

static void test_compaction(void **state)
{
	struct etcd *e = shared_client();
	int64_t r1, r2;
	put_str(e, "/compact/x", "v1", &r1);
	put_str(e, "/compact/x", "v2", &r2);
	struct etcd_range res;
	assert_int_equal(etcd_list(e, "/compact/", r1, 0, &res), 0);
	assert_string_equal(res.kvs[0].value, "v1");
	etcd_range_clear(&res);

	assert_int_equal(etcd_compact(e, r2), 0);
	assert_int_equal(etcd_list(e, "/compact/", r1, 0, &res), -ESTALE);
	assert_non_null(strstr(etcd_last_error(e), "compacted"));
	assert_int_equal(etcd_list(e, "/compact/", r2, 0, &res), 0);
	assert_string_equal(res.kvs[0].value, "v2");
	etcd_range_clear(&res);
	assert_int_equal(etcd_compact(e, r1), -ESTALE);
	/* A future revision is an error of its own: the store is behind what was asked. */
	int r = etcd_list(e, "/compact/", r2 + 1000000, 0, &res);
	assert_int_equal(r, -ERANGE);
	etcd_free(e);
}

/* --- watches --- */

struct rec_event {
	enum etcd_event_type type;
	char key[64];
	char value[64];
	int64_t mod;
};

struct rec {
	struct rec_event evs[128];
	size_t n;
	size_t batches;
	int64_t last_batch_rev;
	int ups, downs;
	char why[512];
	int64_t compacted;
	int resets;
	enum etcd_watch_reset_reason reset_reason;
	struct etcd_watch *w;
	size_t stop_after; /* etcd_watch_stop from inside the callback at this count */
	bool stop_on_compacted;
	bool stop_on_down;
};

static void rec_events(void *ctx, const struct etcd_event *evs, size_t n, int64_t revision)
{
	struct rec *r = ctx;
	assert_true(n > 0);
	for (size_t i = 0; i < n; i++) {
		assert_true(r->n < ARRAY_SIZE(r->evs));
		struct rec_event *e = &r->evs[r->n++];
		e->type = evs[i].type;
		snprintf(e->key, sizeof(e->key), "%s", evs[i].kv.key);
		snprintf(e->value, sizeof(e->value), "%s", evs[i].kv.value ? evs[i].kv.value : "");
		e->mod = evs[i].kv.mod_revision;
		assert_true(e->mod <= revision);
		if (r->n > 1)
			assert_true(r->evs[r->n - 2].mod <= e->mod);
	}
	r->batches++;
	r->last_batch_rev = revision;
	if (r->stop_after && r->n >= r->stop_after) {
		etcd_watch_stop(r->w);
		r->w = NULL;
	}
}

static void rec_reset(void *ctx, const struct etcd_watch_reset *rs)
{
	struct rec *r = ctx;
	r->resets++;
	r->reset_reason = rs->reason;
	if (rs->reason == ETCD_WATCH_COMPACTED)
		r->compacted = rs->revision;
	if (r->stop_on_compacted) {
		etcd_watch_stop(r->w);
		r->w = NULL;
	}
}

static void rec_state(void *ctx, bool up, const char *why)
{
	struct rec *r = ctx;
	if (up) {
		r->ups++;
	} else {
		r->downs++;
		snprintf(r->why, sizeof(r->why), "%s", why ? why : "");
		if (r->stop_on_down) {
			etcd_watch_stop(r->w);
			r->w = NULL;
		}
	}
}

static const struct etcd_watch_ops rec_ops = {
	.events = rec_events,
	.reset = rec_reset,
	.state = rec_state,
};

struct until {
	const struct rec *r;
	size_t n_events;
	int ups, downs;
	bool compacted;
};

static bool reached(const struct until *u)
{
	return u->r->n >= u->n_events && u->r->ups >= u->ups && u->r->downs >= u->downs &&
	       (!u->compacted || u->r->compacted);
}

/* Drives the loop until @u holds; false at the deadline. */
static bool run_until(struct loop *l, const struct until *u, int timeout_ms)
{
	uint64_t deadline = now_ms() + (uint64_t)timeout_ms;
	while (!reached(u)) {
		uint64_t now = now_ms();
		if (now >= deadline)
			return false;
		assert_true(loop_run_once(l, (int)MIN(deadline - now, 50)) >= 0);
	}
	return true;
}

/* Drives the loop for @ms whatever happens. */
static void run_for(struct loop *l, int ms)
{
	uint64_t deadline = now_ms() + (uint64_t)ms;
	for (uint64_t now; (now = now_ms()) < deadline;)
		assert_true(loop_run_once(l, (int)(deadline - now)) >= 0);
}

static void assert_event(const struct rec *r, size_t i, enum etcd_event_type type, const char *key,
			 const char *value, int64_t mod)
{
	assert_true(i < r->n);
	assert_int_equal(r->evs[i].type, type);
	assert_string_equal(r->evs[i].key, key);
	if (value)
		assert_string_equal(r->evs[i].value, value);
	assert_int_equal(r->evs[i].mod, mod);
}

static void test_watch_puts_and_deletes(void **state)
{
	struct etcd *e = shared_client();
	struct loop *l = loop_new();
	int64_t start;
	put_str(e, "/watch/seed", "s", &start);
	struct rec rec = { 0 };
	assert_int_equal(etcd_watch_start(e, l, "/watch/", start + 1, 0, &rec_ops, &rec, &rec.w),
			 0);
	assert_int_equal(etcd_watch_next_revision(rec.w), start + 1);

	int64_t r[6];
	put_str(e, "/watch/a", "1", &r[0]);
	put_str(e, "/watchx", "outside", NULL);
	put_str(e, "/watch/b", "2", &r[1]);
	bool deleted;
	assert_int_equal(etcd_delete(e, "/watch/a", &deleted, &r[2]), 0);
	put_str(e, "/watch/a", "3", &r[3]);
	/* Two keys in one revision arrive together. */
	struct etcd_op ops[] = {
		{ .type = ETCD_OP_PUT, .key = "/watch/c", .value = "4", .value_len = 1 },
		{ .type = ETCD_OP_DELETE, .key = "/watch/b" },
	};
	struct etcd_txn_result tr;
	assert_int_equal(etcd_txn(e, NULL, 0, ops, 2, NULL, 0, &tr), 0);
	r[4] = tr.revision;
	etcd_txn_result_clear(&tr);

	struct until u = { .r = &rec, .n_events = 6, .ups = 1 };
	assert_true(run_until(l, &u, 10000));
	assert_int_equal(rec.n, 6);
	assert_event(&rec, 0, ETCD_EVENT_PUT, "/watch/a", "1", r[0]);
	assert_event(&rec, 1, ETCD_EVENT_PUT, "/watch/b", "2", r[1]);
	assert_event(&rec, 2, ETCD_EVENT_DELETE, "/watch/a", NULL, r[2]);
	assert_event(&rec, 3, ETCD_EVENT_PUT, "/watch/a", "3", r[3]);
	assert_event(&rec, 4, ETCD_EVENT_PUT, "/watch/c", "4", r[4]);
	assert_event(&rec, 5, ETCD_EVENT_DELETE, "/watch/b", NULL, r[4]);
	assert_int_equal(rec.last_batch_rev, r[4]);
	assert_int_equal(etcd_watch_next_revision(rec.w), r[4] + 1);
	assert_int_equal(rec.downs, 0);

	/* Stopping from inside the events callback. */
	rec.stop_after = rec.n + 1;
	put_str(e, "/watch/d", "5", NULL);
	put_str(e, "/watch/e", "6", NULL);
	u.n_events = rec.n + 1;
	assert_true(run_until(l, &u, 10000));
	assert_null(rec.w);
	size_t n = rec.n;
	run_for(l, 200);
	assert_int_equal(rec.n, n);

	/* "From now": only what happens after the watch exists. */
	struct rec now = { 0 };
	assert_int_equal(etcd_watch_start(e, l, "/watch/", 0, 0, &rec_ops, &now, &now.w), 0);
	assert_int_equal(etcd_watch_next_revision(now.w), 0);
	struct until up = { .r = &now, .ups = 1 };
	assert_true(run_until(l, &up, 10000));
	int64_t rf;
	put_str(e, "/watch/f", "7", &rf);
	up.n_events = 1;
	assert_true(run_until(l, &up, 10000));
	assert_event(&now, 0, ETCD_EVENT_PUT, "/watch/f", "7", rf);
	etcd_watch_stop(now.w);
	loop_free(l);
	etcd_free(e);
}

static void test_watch_progress(void **state)
{
	struct etcd *e = shared_client();
	struct loop *l = loop_new();
	struct rec rec = { 0 };
	assert_int_equal(etcd_watch_start(e, l, "/progress/", 0, 0, &rec_ops, &rec, &rec.w), 0);
	struct until u = { .r = &rec, .ups = 1 };
	assert_true(run_until(l, &u, 10000));
	int64_t rev;
	put_str(e, "/elsewhere", "1", NULL);
	put_str(e, "/elsewhere", "2", &rev);
	/* Progress notifications (every 500 ms here) move past writes elsewhere. */
	uint64_t deadline = now_ms() + 5000;
	while (etcd_watch_next_revision(rec.w) <= rev && now_ms() < deadline)
		assert_true(loop_run_once(l, 50) >= 0);
	assert_int_equal(etcd_watch_next_revision(rec.w), rev + 1);
	assert_int_equal(rec.n, 0);
	assert_int_equal(rec.batches, 0);
	etcd_watch_stop(rec.w);
	loop_free(l);
	etcd_free(e);
}

static void test_watch_compacted(void **state)
{
	struct etcd *e = shared_client();
	struct loop *l = loop_new();
	int64_t r1, r2;
	put_str(e, "/wcompact/a", "1", &r1);
	put_str(e, "/wcompact/a", "2", &r2);
	int r = etcd_compact(e, r2);
	assert_true(r == 0 || r == -ESTALE); /* another test may have compacted further */
	struct rec rec = { 0 };
	assert_int_equal(etcd_watch_start(e, l, "/wcompact/", r1, 0, &rec_ops, &rec, &rec.w), 0);
	struct until u = { .r = &rec, .compacted = true };
	assert_true(run_until(l, &u, 10000));
	assert_true(rec.compacted >= r2);
	assert_int_equal(rec.n, 0);
	/* Stopped: no reconnect, no more callbacks. */
	put_str(e, "/wcompact/a", "3", NULL);
	run_for(l, 300);
	assert_int_equal(rec.n, 0);
	assert_int_equal(rec.downs, 0);
	etcd_watch_stop(rec.w);

	/* Stopping from inside compacted(). */
	struct rec inside = { .stop_on_compacted = true };
	assert_int_equal(etcd_watch_start(e, l, "/wcompact/", r1, 0, &rec_ops, &inside, &inside.w),
			 0);
	struct until ui = { .r = &inside, .compacted = true };
	assert_true(run_until(l, &ui, 10000));
	assert_null(inside.w);
	run_for(l, 100);
	loop_free(l);
	etcd_free(e);
}

static void test_watch_survives_restart(void **state)
{
	struct etcd_proc *p;
	assert_int_equal(etcd_proc_start(NULL, &p), 0);
	const char *ep = etcd_proc_endpoint(p);
	struct etcd *e = client_for(&ep, 1, 3000, NULL, NULL, NULL);
	struct loop *l = loop_new();
	int64_t start;
	put_str(e, "/r/seed", "s", &start);
	struct rec rec = { 0 };
	assert_int_equal(etcd_watch_start(e, l, "/r/", start + 1, 0, &rec_ops, &rec, &rec.w), 0);

	int64_t rev[6];
	put_str(e, "/r/1", "before", &rev[0]);
	put_str(e, "/r/2", "before", &rev[1]);
	struct until u = { .r = &rec, .n_events = 2, .ups = 1 };
	assert_true(run_until(l, &u, 10000));

	assert_int_equal(etcd_proc_stop(p), 0);
	u.downs = 1;
	assert_true(run_until(l, &u, 10000));
	assert_int_equal(rec.ups, 1);
	/* Let it fail a few reconnects against the dead socket. */
	run_for(l, 400);
	assert_int_equal(rec.downs, 1);

	/*
	 * Back up. The loop does not run until after these writes, so the
	 * watch cannot have reconnected yet: they happen "while it is down".
	 */
	assert_int_equal(etcd_proc_restart(p), 0);
	struct etcd *other = client_for(&ep, 1, 3000, NULL, NULL, NULL);
	put_str(other, "/r/3", "down", &rev[2]);
	bool deleted;
	assert_int_equal(etcd_delete(other, "/r/1", &deleted, &rev[3]), 0);
	assert_true(deleted);
	etcd_free(other);

	u.n_events = 4;
	u.ups = 2;
	assert_true(run_until(l, &u, 15000));
	put_str(e, "/r/4", "after", &rev[4]);
	u.n_events = 5;
	assert_true(run_until(l, &u, 10000));
	run_for(l, 200);

	assert_int_equal(rec.n, 5);
	assert_event(&rec, 0, ETCD_EVENT_PUT, "/r/1", "before", rev[0]);
	assert_event(&rec, 1, ETCD_EVENT_PUT, "/r/2", "before", rev[1]);
	assert_event(&rec, 2, ETCD_EVENT_PUT, "/r/3", "down", rev[2]);
	assert_event(&rec, 3, ETCD_EVENT_DELETE, "/r/1", NULL, rev[3]);
	assert_event(&rec, 4, ETCD_EVENT_PUT, "/r/4", "after", rev[4]);
	assert_int_equal(etcd_watch_next_revision(rec.w), rev[4] + 1);
	assert_int_equal(rec.ups, 2);
	assert_int_equal(rec.downs, 1);
	assert_true(rec.why[0] != '\0');

	/* A unary call after the restart reconnects by itself. */
	struct etcd_kv kv;
	assert_int_equal(etcd_get(e, "/r/3", &kv), 0);
	etcd_kv_clear(&kv);

	etcd_watch_stop(rec.w);
	loop_free(l);
	etcd_free(e);
	etcd_proc_destroy(p);
}

/* --- failover, TLS, timeouts --- */

static void test_failover(void **state)
{
	char dead_unix[256];
	snprintf(dead_unix, sizeof(dead_unix), "unix:%s/no-such.sock", etcd_proc_dir(shared_etcd));
	int closed_port = 0;
	{
		/* A loopback port nobody listens on: bound, then closed. */
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		struct sockaddr_in sa = { .sin_family = AF_INET,
					  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		socklen_t len = sizeof(sa);
		assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
		assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
		closed_port = ntohs(sa.sin_port);
		close(fd);
	}
	char dead_tcp[64];
	snprintf(dead_tcp, sizeof(dead_tcp), "http://127.0.0.1:%d", closed_port);
	const char *eps[] = { dead_unix, dead_tcp, etcd_proc_endpoint(shared_etcd) };
	struct etcd *e = client_for(eps, 3, 5000, NULL, NULL, NULL);
	int64_t rev;
	put_str(e, "/failover/a", "x", &rev);
	struct etcd_kv kv;
	assert_int_equal(etcd_get(e, "/failover/a", &kv), 0);
	etcd_kv_clear(&kv);

	/* A watch also moves on from the dead endpoints. */
	const char *weps[] = { dead_unix, etcd_proc_endpoint(shared_etcd) };
	struct etcd *we = client_for(weps, 2, 5000, NULL, NULL, NULL);
	struct loop *l = loop_new();
	struct rec rec = { 0 };
	assert_int_equal(etcd_watch_start(we, l, "/failover/", rev, 0, &rec_ops, &rec, &rec.w), 0);
	struct until u = { .r = &rec, .n_events = 1, .ups = 1 };
	assert_true(run_until(l, &u, 10000));
	assert_event(&rec, 0, ETCD_EVENT_PUT, "/failover/a", "x", rev);
	assert_int_equal(rec.downs, 1); /* the dead first endpoint */
	etcd_watch_stop(rec.w);

	/* Stopping from inside state(false): no retry happens afterwards. */
	struct etcd *de = client_for(weps, 1, 5000, NULL, NULL, NULL);
	struct rec down = { .stop_on_down = true };
	assert_int_equal(etcd_watch_start(de, l, "/failover/", rev, 0, &rec_ops, &down, &down.w),
			 0);
	struct until ud = { .r = &down, .downs = 1 };
	assert_true(run_until(l, &ud, 5000));
	assert_null(down.w);
	run_for(l, 300);
	assert_int_equal(down.downs, 1);
	etcd_free(de);
	loop_free(l);
	etcd_free(we);

	/* Nothing reachable: refused, quickly. */
	const char *none[] = { dead_unix, dead_tcp };
	struct etcd *d = client_for(none, 2, 5000, NULL, NULL, NULL);
	uint64_t t0 = now_ms();
	assert_int_equal(etcd_get(d, "/failover/a", &kv), -ECONNREFUSED);
	assert_true(now_ms() - t0 < 2000);
	assert_true(strlen(etcd_last_error(d)) > 0);
	etcd_free(d);
	etcd_free(e);
}

static void test_tcp(void **state)
{
	struct etcd_proc_opts opts = { .tcp = true };
	struct etcd_proc *p;
	assert_int_equal(etcd_proc_start(&opts, &p), 0);
	const char *ep = etcd_proc_endpoint(p);
	assert_true(str_has_prefix(ep, "http://127.0.0.1:"));
	struct etcd *e = client_for(&ep, 1, 3000, NULL, NULL, NULL);
	put_str(e, "/tcp", "ok", NULL);
	struct etcd_kv kv;
	assert_int_equal(etcd_get(e, "/tcp", &kv), 0);
	assert_string_equal(kv.value, "ok");
	etcd_kv_clear(&kv);
	etcd_free(e);
	etcd_proc_destroy(p);
}

static void test_tls(void **state)
{
	struct etcd_proc_opts opts = { .tls = true };
	struct etcd_proc *p;
	assert_int_equal(etcd_proc_start(&opts, &p), 0);
	const char *ep = etcd_proc_endpoint(p);
	assert_true(str_has_prefix(ep, "https://127.0.0.1:"));
	struct etcd *e =
		client_for(&ep, 1, 3000, etcd_proc_ca(p), etcd_proc_cert(p), etcd_proc_key(p));
	int64_t rev;
	put_str(e, "/tls/a", "secret", &rev);
	struct etcd_kv kv;
	assert_int_equal(etcd_get(e, "/tls/a", &kv), 0);
	assert_string_equal(kv.value, "secret");
	etcd_kv_clear(&kv);

	/* A watch over TLS. */
	struct loop *l = loop_new();
	struct rec rec = { 0 };
	assert_int_equal(etcd_watch_start(e, l, "/tls/", rev, 0, &rec_ops, &rec, &rec.w), 0);
	struct until u = { .r = &rec, .n_events = 1, .ups = 1 };
	assert_true(run_until(l, &u, 10000));
	assert_event(&rec, 0, ETCD_EVENT_PUT, "/tls/a", "secret", rev);
	etcd_watch_stop(rec.w);
	loop_free(l);
	etcd_free(e);

	/* No client certificate: etcd refuses us. */
	struct etcd *anon = client_for(&ep, 1, 3000, etcd_proc_ca(p), NULL, NULL);
	int r = etcd_get(anon, "/tls/a", &kv);
	assert_true(r < 0);
	assert_true(r == -ECONNREFUSED || r == -ECONNRESET);
	assert_true(strlen(etcd_last_error(anon)) > 0);
	etcd_free(anon);

	/* No CA: we refuse etcd's certificate. */
	struct etcd *untrusting =
		client_for(&ep, 1, 3000, NULL, etcd_proc_cert(p), etcd_proc_key(p));
	assert_int_equal(etcd_get(untrusting, "/tls/a", &kv), -ECONNREFUSED);
	etcd_free(untrusting);
	etcd_proc_destroy(p);
}

static void test_unresponsive_endpoint(void **state)
{
	/* Accepts connections (the kernel does) but never answers. */
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(fd, 16), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	char ep[64];
	snprintf(ep, sizeof(ep), "http://127.0.0.1:%d", ntohs(sa.sin_port));
	const char *eps[] = { ep };
	struct etcd *e = client_for(eps, 1, 600, NULL, NULL, NULL);

	uint64_t t0 = now_ms();
	struct etcd_kv kv;
	assert_int_equal(etcd_get(e, "/x", &kv), -ETIMEDOUT);
	uint64_t took = now_ms() - t0;
	assert_true(took >= 500);
	assert_true(took < 2000);
	assert_int_equal(etcd_put(e, "/x", "y", 1, 0, NULL), -ETIMEDOUT);

	/* A watch gives up on it after the same timeout and says so. */
	struct loop *l = loop_new();
	struct rec rec = { 0 };
	assert_int_equal(etcd_watch_start(e, l, "/x", 1, 0, &rec_ops, &rec, &rec.w), 0);
	struct until u = { .r = &rec, .downs = 1 };
	t0 = now_ms();
	assert_true(run_until(l, &u, 5000));
	assert_true(now_ms() - t0 < 2000);
	assert_non_null(strstr(rec.why, "no answer"));
	etcd_watch_stop(rec.w);
	loop_free(l);
	etcd_free(e);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_get_put_delete),
		cmocka_unit_test(test_list_pages),
		cmocka_unit_test(test_txn_create_if_absent),
		cmocka_unit_test(test_txn_update_if_unchanged),
		cmocka_unit_test(test_txn_get_ops),
		cmocka_unit_test(test_lease),
		cmocka_unit_test(test_compaction),
		cmocka_unit_test(test_watch_puts_and_deletes),
		cmocka_unit_test(test_watch_progress),
		cmocka_unit_test(test_watch_compacted),
		cmocka_unit_test(test_watch_survives_restart),
		cmocka_unit_test(test_failover),
		cmocka_unit_test(test_tcp),
		cmocka_unit_test(test_tls),
		cmocka_unit_test(test_unresponsive_endpoint),
	};
	return cmocka_run_group_tests_name("etcd", tests, group_setup, group_teardown);
}
