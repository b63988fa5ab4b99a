/*
 * The pure half of the HTTP client: endpoint URLs and the response reader
 * (framing, keep-alive, limits), with every response also fed one byte at a
 * time and split at every point.
 */
#include "harness.h"

#include <brindle/http_client.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

struct collected {
	struct strbuf body;
	int fail_after; /* the body callback fails once this many bytes arrived (0: never) */
};

static int collect(void *ctx, const char *p, size_t n)
{
	struct collected *c = ctx;
	sb_add(&c->body, p, n);
	if (c->fail_after && c->body.len >= (size_t)c->fail_after)
		return -ECANCELED;
	return 0;
}

/* Feeds @text in pieces of @step bytes; returns the first error, else 0. *used: total consumed. */
static int feed_steps(struct http_reader *r, const char *text, size_t len, size_t step,
		      size_t *used)
{
	size_t off = 0;
	*used = 0;
	while (off < len && !http_reader_done(r)) {
		size_t n = MIN(step, len - off), u;
		int e = http_reader_feed(r, text + off, n, &u, NULL);
		if (e < 0)
			return e;
		assert_true(u <= n);
		off += u;
		*used += u;
		if (u < n)
			break;
	}
	return 0;
}

/* @text split at every point (and byte by byte) gives @body and @status. */
static void expect_response(const char *text, int status, const char *body, bool keep_alive)
{
	size_t len = strlen(text);
	for (size_t cut = 0; cut <= len; cut++) {
		for (int mode = 0; mode < (cut ? 1 : 2); mode++) {
			struct http_reader *r = http_reader_new(1 << 20, NULL, NULL);
			size_t used = 0, u;
			if (mode == 0) {
				assert_int_equal(http_reader_feed(r, text, cut, &u, NULL), 0);
				used = u;
				if (!http_reader_done(r)) {
					assert_int_equal(http_reader_feed(r, text + cut, len - cut,
									  &u, NULL),
							 0);
					used += u;
				}
			} else {
				assert_int_equal(feed_steps(r, text, len, 1, &used), 0);
			}
			assert_true(http_reader_done(r));
			assert_int_equal(used, len);
			assert_int_equal(http_reader_status(r), status);
			assert_int_equal(http_reader_body(r)->len, strlen(body));
			assert_memory_equal(http_reader_body(r)->buf, body, strlen(body));
			assert_int_equal(http_reader_keep_alive(r), keep_alive);
			http_reader_free(r);
		}
	}
}

static void test_framing(void **state)
{
	expect_response("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
			"Content-Length: 13\r\n\r\n{\"header\":{}}",
			200, "{\"header\":{}}", true);
	expect_response("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
			"5\r\nhello\r\n1;ext=1\r\n \r\n5\r\nworld\r\n0\r\nTrailer: x\r\n\r\n",
			200, "hello world", true);
	expect_response("HTTP/1.1 400 Bad Request\r\nContent-Length: 2\r\n"
			"Connection: close\r\n\r\n{}",
			400, "{}", false);
	expect_response("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", 200, "", false);
	expect_response("HTTP/1.1 204 No Content\r\n\r\n", 204, "", true);
	/* An interim 100 Continue is skipped. */
	expect_response(
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx", 200,
		"x", true);
}

static void test_keep_alive_boundary(void **state)
{
	/* Two responses in one read: the reader stops after the first. */
	const char *two =
		"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\na"
		"HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nb\r\n0\r\n\r\n";
	struct http_reader *r = http_reader_new(0, NULL, NULL);
	size_t used;
	assert_int_equal(http_reader_feed(r, two, strlen(two), &used, NULL), 0);
	assert_true(http_reader_done(r));
	assert_int_equal(http_reader_status(r), 200);
	assert_string_equal(http_reader_body(r)->buf, "a");
	size_t first = strlen("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\na");
	assert_int_equal(used, first);
	/* Done: more bytes are not taken. */
	size_t again;
	assert_int_equal(http_reader_feed(r, two + used, 5, &again, NULL), 0);
	assert_int_equal(again, 0);
	http_reader_reset(r);
	assert_false(http_reader_started(r));
	assert_int_equal(http_reader_feed(r, two + used, strlen(two) - used, &again, NULL), 0);
	assert_int_equal(again, strlen(two) - used);
	assert_int_equal(http_reader_status(r), 201);
	assert_string_equal(http_reader_body(r)->buf, "b");
	http_reader_free(r);
}

static void test_eof(void **state)
{
	struct http_reader *r = http_reader_new(0, NULL, NULL);
	size_t used;
	/* Nothing at all. */
	assert_int_equal(http_reader_eof(r, NULL), -ECONNRESET);
	/* A body that runs to the close. */
	http_reader_reset(r);
	const char *to_close = "HTTP/1.1 200 OK\r\n\r\nall of it";
	assert_int_equal(http_reader_feed(r, to_close, strlen(to_close), &used, NULL), 0);
	assert_false(http_reader_done(r));
	assert_int_equal(http_reader_eof(r, NULL), 0);
	assert_true(http_reader_done(r));
	assert_false(http_reader_keep_alive(r));
	assert_string_equal(http_reader_body(r)->buf, "all of it");
	/* Cut short: Content-Length, chunked, headers. */
	static const char *const cut[] = {
		"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n",
		"HTTP/1.1 200 OK\r\nContent-Le",
		"HTTP/1.",
	};
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	for (size_t i = 0; i < ARRAY_SIZE(cut); i++) {
		http_reader_reset(r);
		assert_int_equal(http_reader_feed(r, cut[i], strlen(cut[i]), &used, NULL), 0);
		assert_int_equal(http_reader_eof(r, &err), -ECONNRESET);
		assert_true(err.len > 0);
	}
	sb_free(&err);
	http_reader_free(r);
}

static void test_malformed(void **state)
{
	static const char *const bad[] = {
		"SSH-2.0-OpenSSH_9.2\r\n",
		"HTTP/1.1 2000 OK\r\n\r\n",
		"HTTP/1.1 006 OK\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
		"HTTP/1.1 200 OK\r\nBad Header\r\n\r\n",
		"HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\nConnection: upgrade\r\n\r\n",
	};
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		struct http_reader *r = http_reader_new(0, NULL, NULL);
		size_t used;
		sb_reset(&err);
		int e = http_reader_feed(r, bad[i], strlen(bad[i]), &used, &err);
		if (e == 0)
			fail_msg("accepted: %s", bad[i]);
		assert_int_equal(e, -EPROTO);
		assert_true(err.len > 0);
		/* Dead until reset. */
		assert_int_equal(http_reader_feed(r, "x", 1, &used, NULL), -EPROTO);
		http_reader_free(r);
	}
	sb_free(&err);
}

static void test_limits(void **state)
{
	struct strbuf big = STRBUF_INIT;
	sb_init(&big);
	sb_adds(&big, "HTTP/1.1 200 OK\r\n");
	while (big.len < HTTP_MAX_HEADER_BYTES + 100)
		sb_adds(&big, "X-Filler: 0123456789abcdef0123456789abcdef\r\n");
	sb_adds(&big, "Content-Length: 0\r\n\r\n");
	struct http_reader *r = http_reader_new(100, NULL, NULL);
	size_t used;
	assert_int_equal(feed_steps(r, big.buf, big.len, 4096, &used), -EMSGSIZE);

	/* A Content-Length over the limit fails at the headers, before the body. */
	http_reader_reset(r);
	const char *cl = "HTTP/1.1 200 OK\r\nContent-Length: 101\r\n\r\n";
	assert_int_equal(http_reader_feed(r, cl, strlen(cl), &used, NULL), -EMSGSIZE);
	http_reader_reset(r);
	cl = "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n";
	assert_int_equal(http_reader_feed(r, cl, strlen(cl), &used, NULL), 0);

	/* A chunked body is counted as it comes. */
	http_reader_reset(r);
	sb_reset(&big);
	sb_adds(&big, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
	for (int i = 0; i < 11; i++)
		sb_adds(&big, "a\r\n0123456789\r\n");
	assert_int_equal(http_reader_feed(r, big.buf, big.len, &used, NULL), -EMSGSIZE);
	http_reader_free(r);
	sb_free(&big);
}

static void test_stream_callback(void **state)
{
	/* A watch-like stream, split at every point: the callback sees the de-chunked bytes. */
	const char *text = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
			   "Transfer-Encoding: chunked\r\n\r\n"
			   "1b\r\n{\"result\":{\"created\":true}}\r\n"
			   "1\r\n\n\r\n"
			   "13\r\n{\"result\":{\"x\":1}}\n\r\n";
	const char *want = "{\"result\":{\"created\":true}}\n{\"result\":{\"x\":1}}\n";
	size_t len = strlen(text);
	for (size_t cut = 0; cut <= len; cut++) {
		struct collected c = { 0 };
		sb_init(&c.body);
		struct http_reader *r = http_reader_new(0, collect, &c);
		size_t u;
		assert_int_equal(http_reader_feed(r, text, cut, &u, NULL), 0);
		assert_int_equal(u, cut);
		assert_int_equal(http_reader_feed(r, text + cut, len - cut, &u, NULL), 0);
		assert_false(http_reader_done(r)); /* the stream goes on */
		assert_string_equal(c.body.buf, want);
		assert_int_equal(http_reader_body(r)->len, 0);
		http_reader_free(r);
		sb_free(&c.body);
	}
	/* The callback's error stops the reader and comes back. */
	struct collected c = { .fail_after = 5 };
	sb_init(&c.body);
	struct http_reader *r = http_reader_new(0, collect, &c);
	size_t u;
	assert_int_equal(http_reader_feed(r, text, len, &u, NULL), -ECANCELED);
	http_reader_free(r);
	sb_free(&c.body);
}

static void test_endpoints(void **state)
{
	struct http_endpoint ep;
	assert_int_equal(http_endpoint_parse("http://127.0.0.1:2379", NULL, &ep, NULL), 0);
	assert_string_equal(ep.host, "127.0.0.1");
	assert_string_equal(ep.port, "2379");
	assert_string_equal(ep.authority, "127.0.0.1:2379");
	assert_string_equal(ep.prefix, "");
	assert_null(ep.unix_path);
	assert_false(ep.tls);
	http_endpoint_clear(&ep);

	assert_int_equal(http_endpoint_parse("HTTPS://[::1]:2379/base/", NULL, &ep, NULL), 0);
	assert_string_equal(ep.host, "::1");
	assert_string_equal(ep.authority, "[::1]:2379");
	assert_string_equal(ep.prefix, "/base");
	assert_true(ep.tls);
	http_endpoint_clear(&ep);

	assert_int_equal(http_endpoint_parse("https://etcd.example", NULL, &ep, NULL), 0);
	assert_string_equal(ep.port, "443");
	assert_string_equal(ep.authority, "etcd.example");
	http_endpoint_clear(&ep);

	/* What etcd_endpoint_parse makes of unix:PATH. */
	assert_int_equal(http_endpoint_parse("http://localhost", "/run/etcd.sock:0", &ep, NULL), 0);
	assert_string_equal(ep.host, "localhost");
	assert_string_equal(ep.port, "80");
	assert_string_equal(ep.unix_path, "/run/etcd.sock:0");
	http_endpoint_clear(&ep);

	static const char *const bad[] = {
		"",
		"http://",
		"ftp://host",
		"http://user@host:1",
		"http://host:0",
		"http://host:99999",
		"http://host/?q=1",
		"host:2379",
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		struct strbuf err = STRBUF_INIT;
		sb_init(&err);
		if (http_endpoint_parse(bad[i], NULL, &ep, &err) == 0)
			fail_msg("accepted %s", bad[i]);
		assert_true(err.len > 0);
		sb_free(&err);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_framing),	  cmocka_unit_test(test_keep_alive_boundary),
		cmocka_unit_test(test_eof),	  cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_limits),	  cmocka_unit_test(test_stream_callback),
		cmocka_unit_test(test_endpoints),
	};
	return cmocka_run_group_tests_name("http_client", tests, NULL, NULL);
}
