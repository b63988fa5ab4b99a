/*
 * The pure parts of the etcd client: endpoint lists, prefix ranges, and
 * decoding the JSON gateway's answers (samples taken from etcd 3.4).
 */
#include "harness.h"

#include <brindle/sys/etcd.h>
#include <brindle/core/etcd_codec.h>
#include <brindle/core/json.h>

#include <errno.h>
#include <stdlib.h>

static void free_list(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static void test_parse_endpoints(void **state)
{
	char **v;
	size_t n;
	assert_int_equal(etcd_parse_endpoints(" http://10.0.0.1:2379, https://etcd:2379 ,"
					      "unix:/run/etcd.sock,unix:///x/y:0",
					      &v, &n),
			 0);
	assert_int_equal(n, 4);
	assert_string_equal(v[0], "http://10.0.0.1:2379");
	assert_string_equal(v[1], "https://etcd:2379");
	assert_string_equal(v[2], "unix:/run/etcd.sock");
	assert_string_equal(v[3], "unix:///x/y:0");
	free_list(v, n);

	assert_int_equal(etcd_parse_endpoints("http://one:2379", &v, &n), 0);
	assert_int_equal(n, 1);
	free_list(v, n);

	static const char *const bad[] = {
		"",	     "   ",	     "http://a:1,,http://b:1", "http://a:1,", ",http://a:1",
		"ftp://a:1", "a:2379",	     "10.0.0.1:2379",	       "http://",     "unix:",
		"https:// ", "http://a b:1",
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		v = NULL;
		if (etcd_parse_endpoints(bad[i], &v, &n) != -EINVAL)
			fail_msg("accepted \"%s\"", bad[i]);
		assert_null(v);
	}
	assert_int_equal(etcd_parse_endpoints(NULL, &v, &n), -EINVAL);
}

static void check_endpoint(const char *s, const char *url, const char *path)
{
	struct etcd_endpoint ep;
	assert_int_equal(etcd_endpoint_parse(s, &ep, NULL), 0);
	assert_string_equal(ep.url, url);
	if (path)
		assert_string_equal(ep.unix_path, path);
	else
		assert_null(ep.unix_path);
	etcd_endpoint_clear(&ep);
}

static void test_endpoint(void **state)
{
	check_endpoint("http://127.0.0.1:2379", "http://127.0.0.1:2379", NULL);
	check_endpoint("https://etcd:2379/", "https://etcd:2379", NULL);
	check_endpoint("unix:/tmp/d/etcd.sock:0", "http://localhost", "/tmp/d/etcd.sock:0");
	check_endpoint("unix:///tmp/d/etcd.sock:0", "http://localhost", "/tmp/d/etcd.sock:0");
	check_endpoint("unix://etcd.sock:0", "http://localhost", "etcd.sock:0");
	check_endpoint("unixs:/tmp/s", "https://localhost", "/tmp/s");

	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	struct etcd_endpoint ep;
	assert_int_equal(etcd_endpoint_parse("gopher://x", &ep, &err), -EINVAL);
	assert_non_null(strstr(sb_str(&err), "gopher://x"));
	sb_free(&err);

	/* etcd_new refuses what the parser refuses. */
	const char *eps[] = { "http://ok:1", "nonsense" };
	struct etcd_config cfg = { .endpoints = eps, .n_endpoints = 2 };
	struct etcd *e = NULL;
	sb_init(&err);
	assert_int_equal(etcd_new(&cfg, &e, &err), -EINVAL);
	assert_null(e);
	assert_non_null(strstr(sb_str(&err), "nonsense"));
	sb_free(&err);
	cfg.n_endpoints = 0;
	assert_int_equal(etcd_new(&cfg, &e, NULL), -EINVAL);

	/* A good config does not connect. */
	cfg.n_endpoints = 1;
	assert_int_equal(etcd_new(&cfg, &e, NULL), 0);
	assert_string_equal(etcd_last_error(e), "");
	etcd_free(e);
	etcd_free(NULL);
}

static void check_range(const char *prefix, const char *key, size_t key_len, const char *end,
			size_t end_len)
{
	struct arena *a = arena_new();
	char *k, *e;
	size_t kl, el;
	etcd_prefix_range(a, prefix, &k, &kl, &e, &el);
	assert_int_equal(kl, key_len);
	assert_memory_equal(k, key, key_len);
	assert_int_equal(el, end_len);
	assert_memory_equal(e, end, end_len);
	arena_free(a);
}

static void test_prefix_range(void **state)
{
	check_range("/calico/", "/calico/", 8, "/calico0", 8);
	check_range("a", "a", 1, "b", 1);
	check_range("", "\0", 1, "\0", 1);
	check_range("a\xff", "a\xff", 2, "b", 1);
	check_range("\xff\xff", "\xff\xff", 2, "\0", 1);
}

static struct jv *parse(struct arena *a, const char *text)
{
	struct jv *v;
	struct strbuf err = STRBUF_INIT;
	if (json_parse(a, text, strlen(text), &v, &err) < 0)
		fail_msg("json: %s", sb_str(&err));
	sb_free(&err);
	return v;
}

static void test_int64(void **state)
{
	struct arena *a = arena_new();
	struct jv *v = parse(a, "{\"s\":\"3\",\"n\":42,\"big\":\"9223372036854775807\","
				"\"neg\":\"-5\",\"x\":\"x\",\"l\":[],\"f\":\"1.5\",\"e\":\"\","
				"\"over\":\"9223372036854775808\",\"z\":null}");
	int64_t i;
	assert_int_equal(etcd_decode_int64(jv_get(v, "s"), &i), 0);
	assert_int_equal(i, 3);
	assert_int_equal(etcd_decode_int64(jv_get(v, "n"), &i), 0);
	assert_int_equal(i, 42);
	assert_int_equal(etcd_decode_int64(jv_get(v, "big"), &i), 0);
	assert_int_equal(i, INT64_MAX);
	assert_int_equal(etcd_decode_int64(jv_get(v, "neg"), &i), 0);
	assert_int_equal(i, -5);
	assert_int_equal(etcd_decode_int64(jv_get(v, "absent"), &i), 0);
	assert_int_equal(i, 0);
	assert_int_equal(etcd_decode_int64(jv_get(v, "z"), &i), 0);
	assert_int_equal(i, 0);
	static const char *const bad[] = { "x", "l", "f", "e", "over" };
	for (size_t k = 0; k < ARRAY_SIZE(bad); k++)
		assert_int_equal(etcd_decode_int64(jv_get(v, bad[k]), &i), -EPROTO);
	arena_free(a);
}

#define HEADER                                                              \
	"\"header\":{\"cluster_id\":\"8625344958863561880\",\"member_id\":" \
	"\"14332145401352075586\","                                         \
	"\"revision\":\"7\",\"raft_term\":\"2\"}"

static void test_decode_range(void **state)
{
	struct arena *a = arena_new();
	struct etcd_range_page p;
	/* foo=bar and a key with a binary value "x\0y" */
	struct jv *v = parse(a, "{" HEADER ",\"kvs\":[{\"key\":\"Zm9v\",\"create_revision\":\"2\","
				"\"mod_revision\":\"5\",\"version\":\"2\",\"value\":\"YmFy\"},"
				"{\"key\":\"Zm9w\",\"value\":\"eAB5\",\"lease\":\"99\"}],"
				"\"more\":true,\"count\":\"10\"}");
	assert_int_equal(etcd_decode_range(a, v, &p, NULL), 0);
	assert_int_equal(p.revision, 7);
	assert_true(p.more);
	assert_int_equal(p.count, 10);
	assert_int_equal(p.n, 2);
	assert_string_equal(p.kvs[0].key, "foo");
	assert_int_equal(p.kvs[0].key_len, 3);
	assert_string_equal(p.kvs[0].value, "bar");
	assert_int_equal(p.kvs[0].create_revision, 2);
	assert_int_equal(p.kvs[0].mod_revision, 5);
	assert_int_equal(p.kvs[0].version, 2);
	assert_int_equal(p.kvs[1].value_len, 3);
	assert_memory_equal(p.kvs[1].value, "x\0y", 3);
	assert_int_equal(p.kvs[1].lease, 99);

	/* Nothing found: no kvs, no more, no count. */
	v = parse(a, "{" HEADER "}");
	assert_int_equal(etcd_decode_range(a, v, &p, NULL), 0);
	assert_int_equal(p.n, 0);
	assert_false(p.more);

	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	static const char *const bad[] = {
		"[]",
		"{\"kvs\":{}}",
		"{\"kvs\":[1]}",
		"{\"kvs\":[{\"key\":\"!!!\"}]}",
		"{\"kvs\":[{\"key\":\"Zm9v\",\"mod_revision\":\"x\"}]}",
		"{\"header\":[]}",
		"{\"more\":\"yes\"}",
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		if (etcd_decode_range(a, parse(a, bad[i]), &p, &err) != -EPROTO)
			fail_msg("accepted %s", bad[i]);
		assert_true(err.len > 0);
	}
	sb_free(&err);
	arena_free(a);
}

static void test_decode_error(void **state)
{
	struct arena *a = arena_new();
	struct strbuf msg = STRBUF_INIT;
	sb_init(&msg);
	assert_int_equal(
		etcd_decode_error(parse(a, "{\"error\":\"etcdserver: mvcc: required revision has "
					   "been compacted\",\"message\":\"etcdserver: mvcc: "
					   "required revision has been compacted\",\"code\":11}"),
				  &msg),
		-ESTALE);
	assert_string_equal(sb_str(&msg), "etcdserver: mvcc: required revision has been compacted");
	assert_int_equal(
		etcd_decode_error(parse(a, "{\"error\":\"etcdserver: mvcc: required revision is a "
					   "future revision\",\"code\":11}"),
				  &msg),
		-ERANGE);
	assert_int_equal(etcd_decode_error(parse(a, "{\"error\":\"etcdserver: requested lease not "
						    "found\",\"code\":5}"),
					   &msg),
			 -ENOENT);
	/* The streaming gateway's shape. */
	assert_int_equal(
		etcd_decode_error(parse(a, "{\"error\":{\"grpc_code\":14,\"http_code\":503,"
					   "\"message\":\"unavailable\"}}"),
				  &msg),
		-EIO);
	assert_string_equal(sb_str(&msg), "unavailable");
	assert_int_equal(etcd_decode_error(parse(a, "{" HEADER "}"), &msg), -EPROTO);
	assert_int_equal(etcd_decode_error(parse(a, "{\"error\":3}"), &msg), -EPROTO);
	assert_int_equal(etcd_decode_error(parse(a, "\"error\""), &msg), -EPROTO);
	sb_free(&msg);
	arena_free(a);
}

static void test_decode_txn_delete_lease(void **state)
{
	struct arena *a = arena_new();
	struct etcd_txn_decoded t;
	struct jv *v =
		parse(a, "{" HEADER ",\"succeeded\":true,\"responses\":["
			 "{\"response_put\":{\"header\":{\"revision\":\"3\"}}},"
			 "{\"response_range\":{\"header\":{\"revision\":\"3\"},\"kvs\":[{\"key\":"
			 "\"bmV3\",\"create_revision\":\"3\",\"mod_revision\":\"3\",\"version\":"
			 "\"1\",\"value\":\"YmFy\"}],\"count\":\"1\"}},"
			 "{\"response_range\":{\"header\":{\"revision\":\"3\"}}},"
			 "{\"response_delete_range\":{\"header\":{\"revision\":\"3\"}}}]}");
	assert_int_equal(etcd_decode_txn(a, v, &t, NULL), 0);
	assert_true(t.succeeded);
	assert_int_equal(t.revision, 7);
	assert_int_equal(t.n, 4);
	assert_false(t.found[0]);
	assert_true(t.found[1]);
	assert_string_equal(t.kvs[1].key, "new");
	assert_string_equal(t.kvs[1].value, "bar");
	assert_false(t.found[2]);
	assert_false(t.found[3]);

	v = parse(a, "{" HEADER "}");
	assert_int_equal(etcd_decode_txn(a, v, &t, NULL), 0);
	assert_false(t.succeeded);
	assert_int_equal(t.n, 0);
	assert_int_equal(etcd_decode_txn(a, parse(a, "{\"responses\":[1]}"), &t, NULL), -EPROTO);

	int64_t d, rev;
	assert_int_equal(
		etcd_decode_delete(parse(a, "{" HEADER ",\"deleted\":\"1\"}"), &d, &rev, NULL), 0);
	assert_int_equal(d, 1);
	assert_int_equal(rev, 7);
	assert_int_equal(etcd_decode_delete(parse(a, "{" HEADER "}"), &d, &rev, NULL), 0);
	assert_int_equal(d, 0);

	int64_t id, ttl;
	assert_int_equal(
		etcd_decode_lease_grant(
			parse(a, "{" HEADER ",\"ID\":\"4126038334571854859\",\"TTL\":\"5\"}"), &id,
			&ttl, NULL),
		0);
	assert_int_equal(id, 4126038334571854859LL);
	assert_int_equal(ttl, 5);
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	assert_int_equal(etcd_decode_lease_grant(parse(a, "{\"error\":\"too many leases\"}"), &id,
						 &ttl, &err),
			 -EIO);
	assert_string_equal(sb_str(&err), "too many leases");
	sb_free(&err);
	assert_int_equal(etcd_decode_lease_grant(parse(a, "{" HEADER "}"), &id, &ttl, NULL),
			 -EPROTO);
	/* Keep-alive through the stream gateway; an expired lease has no TTL. */
	assert_int_equal(etcd_decode_lease_keepalive(
				 parse(a, "{\"result\":{" HEADER ",\"ID\":\"1\",\"TTL\":\"9\"}}"),
				 &id, &ttl, NULL),
			 0);
	assert_int_equal(id, 1);
	assert_int_equal(ttl, 9);
	assert_int_equal(
		etcd_decode_lease_keepalive(parse(a, "{\"result\":{" HEADER ",\"ID\":\"1\"}}"), &id,
					    &ttl, NULL),
		0);
	assert_int_equal(ttl, 0);
	assert_int_equal(etcd_decode_lease_keepalive(parse(a, "{\"result\":[]}"), &id, &ttl, NULL),
			 -EPROTO);
	arena_free(a);
}

static struct etcd_watch_msg watch_msg(struct arena *a, const char *text)
{
	struct etcd_watch_msg m;
	struct strbuf err = STRBUF_INIT;
	if (etcd_decode_watch_msg(a, parse(a, text), &m, &err) < 0)
		fail_msg("watch message: %s", sb_str(&err));
	sb_free(&err);
	return m;
}

static void test_decode_watch(void **state)
{
	struct arena *a = arena_new();
	struct etcd_watch_msg m = watch_msg(a, "{\"result\":{" HEADER ",\"created\":true}}");
	assert_int_equal(m.kind, ETCD_WATCH_MSG_CREATED);
	assert_int_equal(m.header_revision, 7);

	m = watch_msg(a, "{\"result\":{" HEADER ",\"events\":[{\"kv\":{\"key\":\"Zm9v\","
			 "\"create_revision\":\"2\",\"mod_revision\":\"5\",\"version\":\"2\","
			 "\"value\":\"YmF6\"}},{\"type\":\"DELETE\",\"kv\":{\"key\":\"bmV3\","
			 "\"mod_revision\":\"6\"}}]}}");
	assert_int_equal(m.kind, ETCD_WATCH_MSG_EVENTS);
	assert_int_equal(m.n_events, 2);
	assert_int_equal(m.events[0].type, ETCD_EVENT_PUT);
	assert_string_equal(m.events[0].kv.key, "foo");
	assert_string_equal(m.events[0].kv.value, "baz");
	assert_int_equal(m.events[0].kv.mod_revision, 5);
	assert_int_equal(m.events[1].type, ETCD_EVENT_DELETE);
	assert_string_equal(m.events[1].kv.key, "new");
	assert_int_equal(m.events[1].kv.value_len, 0);
	assert_int_equal(m.events[1].kv.mod_revision, 6);

	m = watch_msg(a, "{\"result\":{" HEADER "}}");
	assert_int_equal(m.kind, ETCD_WATCH_MSG_PROGRESS);
	assert_int_equal(m.header_revision, 7);

	m = watch_msg(a, "{\"result\":{\"header\":{\"cluster_id\":\"1\",\"raft_term\":\"2\"},"
			 "\"canceled\":true,\"compact_revision\":\"3\"}}");
	assert_int_equal(m.kind, ETCD_WATCH_MSG_CANCELED);
	assert_int_equal(m.compact_revision, 3);
	assert_string_equal(m.message, "");

	m = watch_msg(a, "{\"result\":{\"canceled\":true,\"cancel_reason\":\"no leader\"}}");
	assert_int_equal(m.kind, ETCD_WATCH_MSG_CANCELED);
	assert_int_equal(m.compact_revision, 0);
	assert_string_equal(m.message, "no leader");

	m = watch_msg(a,
		      "{\"error\":\"unexpected EOF\",\"message\":\"unexpected EOF\",\"code\":2}");
	assert_int_equal(m.kind, ETCD_WATCH_MSG_ERROR);
	assert_int_equal(m.error, -EIO);
	assert_string_equal(m.message, "unexpected EOF");

	static const char *const bad[] = {
		"[]",
		"{}",
		"{\"result\":1}",
		"{\"result\":{\"events\":{}}}",
		"{\"result\":{\"events\":[{\"type\":\"MOVE\",\"kv\":{}}]}}",
		"{\"result\":{\"events\":[{\"type\":\"PUT\"}]}}",
		"{\"result\":{\"events\":[{\"kv\":{\"key\":\"%%\"}}]}}",
		("{\"result\":{\"events\":[{\"kv\":{\"mod_revision\":\"5\"}},"
		 "{\"kv\":{\"mod_revision\":\"4\"}}]}}"),
		"{\"result\":{\"created\":\"maybe\"}}",
	};
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		if (etcd_decode_watch_msg(a, parse(a, bad[i]), &m, &err) != -EPROTO)
			fail_msg("accepted %s", bad[i]);
	}
	sb_free(&err);
	arena_free(a);
}

/* A cluster ID is a uint64 (often above INT64_MAX); the fragment flag of a watch message. */
static void test_header_and_fragment(void **state)
{
	struct arena *a = arena_new();
	struct etcd_header hd;
	assert_int_equal(
		etcd_decode_header(parse(a, "{\"header\":{\"cluster_id\":"
					    "\"14841639068965178418\",\"revision\":\"9\"}}"),
				   &hd),
		0);
	assert_true(hd.cluster_id == 14841639068965178418ull);
	assert_int_equal(hd.revision, 9);
	assert_int_equal(etcd_decode_header(parse(a, "{}"), &hd), 0);
	assert_true(hd.cluster_id == 0 && hd.revision == 0);
	assert_int_equal(etcd_decode_header(parse(a, "{\"header\":{\"cluster_id\":\"-1\"}}"), &hd),
			 -EPROTO);
	assert_int_equal(etcd_decode_header(parse(a, "{\"header\":{\"cluster_id\":\"1x\"}}"), &hd),
			 -EPROTO);
	assert_int_equal(
		etcd_decode_header(
			parse(a, "{\"header\":{\"cluster_id\":\"99999999999999999999\"}}"), &hd),
		-EPROTO);

	struct etcd_watch_msg m =
		watch_msg(a, "{\"result\":{" HEADER
			     ",\"fragment\":true,\"events\":[{\"kv\":{\"key\":\"Zm9v\","
			     "\"mod_revision\":\"5\"}}]}}");
	assert_true(m.fragment);
	assert_int_equal(m.n_events, 1);
	m = watch_msg(a, "{\"result\":{" HEADER "}}");
	assert_false(m.fragment);
	arena_free(a);
	(void)state;
}

/* Pages learn their size from the bytes per key of the last one. */
static void test_page_size(void **state)
{
	assert_int_equal(etcd_page_size_next(500, 0, 0), 500);
	assert_int_equal(etcd_page_size_next(500, 500, 500 * 100),
			 500); /* small keys: the key cap */
	assert_int_equal(etcd_page_size_next(500, 10, 10 * 1024 * 1024), 8); /* 1 MiB each: 8 fit */
	assert_int_equal(etcd_page_size_next(500, 1, 100u * 1024 * 1024), 1); /* never below 1 */
	assert_int_equal(etcd_page_size_shrink(500), 31);
	assert_int_equal(etcd_page_size_shrink(8), 1);
	assert_int_equal(etcd_page_size_shrink(1), 0); /* a single key too large: give up */
	(void)state;
}

static void test_events_first_new(void **state)
{
	struct etcd_event evs[4] = { 0 };
	int64_t revs[] = { 5, 6, 6, 8 };
	for (size_t i = 0; i < ARRAY_SIZE(revs); i++)
		evs[i].kv.mod_revision = revs[i];
	assert_int_equal(etcd_events_first_new(evs, 4, 0), 0);
	assert_int_equal(etcd_events_first_new(evs, 4, 5), 0);
	assert_int_equal(etcd_events_first_new(evs, 4, 6), 1);
	assert_int_equal(etcd_events_first_new(evs, 4, 7), 3);
	assert_int_equal(etcd_events_first_new(evs, 4, 8), 3);
	assert_int_equal(etcd_events_first_new(evs, 4, 9), 4);
	assert_int_equal(etcd_events_first_new(evs, 0, 1), 0);
}

/* A watch stream cut at every byte still yields the same messages. */
struct collected {
	int kinds[8];
	size_t n;
};

static int collect(void *ctx, struct jv *v, struct arena *a)
{
	struct collected *c = ctx;
	struct etcd_watch_msg m;
	if (etcd_decode_watch_msg(a, v, &m, NULL) < 0)
		return -EPROTO;
	if (c->n < ARRAY_SIZE(c->kinds))
		c->kinds[c->n++] = (int)m.kind;
	return 0;
}

static void test_watch_stream_chunks(void **state)
{
	const char *stream =
		"{\"result\":{" HEADER ",\"created\":true}}\n"
		"{\"result\":{" HEADER ",\"events\":[{\"kv\":{\"key\":\"Zm9v\",\"mod_revision\":"
		"\"7\",\"value\":\"YmF6\"}}]}}\n"
		"{\"result\":{" HEADER "}}\n";
	size_t len = strlen(stream);
	for (size_t cut = 0; cut <= len; cut++) {
		struct collected c = { 0 };
		struct json_stream *js = json_stream_new(collect, &c);
		assert_int_equal(json_stream_feed(js, stream, cut, NULL), 0);
		assert_int_equal(json_stream_feed(js, stream + cut, len - cut, NULL), 0);
		json_stream_free(js);
		assert_int_equal(c.n, 3);
		assert_int_equal(c.kinds[0], ETCD_WATCH_MSG_CREATED);
		assert_int_equal(c.kinds[1], ETCD_WATCH_MSG_EVENTS);
		assert_int_equal(c.kinds[2], ETCD_WATCH_MSG_PROGRESS);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_endpoints),
		cmocka_unit_test(test_endpoint),
		cmocka_unit_test(test_prefix_range),
		cmocka_unit_test(test_int64),
		cmocka_unit_test(test_decode_range),
		cmocka_unit_test(test_decode_error),
		cmocka_unit_test(test_decode_txn_delete_lease),
		cmocka_unit_test(test_decode_watch),
		cmocka_unit_test(test_header_and_fragment),
		cmocka_unit_test(test_page_size),
		cmocka_unit_test(test_events_first_new),
		cmocka_unit_test(test_watch_stream_chunks),
	};
	return cmocka_run_group_tests_name("etcd_parse", tests, NULL, NULL);
}
