/*
 * HTTP responses through the reader the etcd client uses, fed in pieces
 * whose sizes the input picks (every split point is reachable): status line,
 * headers, Content-Length, chunked and close-delimited bodies, several
 * responses on one keep-alive stream, and the end of input. In stream mode
 * the body goes, as in a watch, through json_stream and the watch-message
 * decoder (newline-delimited JSON); otherwise it is collected under a small
 * limit. One mode parses the input as an endpoint URL instead.
 *
 * Input: a mode byte, a split-seed byte, then the bytes of the connection.
 * Nothing may crash, leak or read out of bounds, and the reader's promises
 * (no more consumed than given, limits kept) must hold.
 */
#include <brindle/etcd_codec.h>
#include <brindle/http_client.h>
#include <brindle/json.h>

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct stream {
	struct json_stream *js;
	int64_t next;
	size_t bytes;
};

static int on_message(void *ctx, struct jv *v, struct arena *a)
{
	struct stream *s = ctx;
	struct etcd_watch_msg m;
	if (etcd_decode_watch_msg(a, v, &m, NULL) == 0 && m.kind == ETCD_WATCH_MSG_EVENTS) {
		size_t first = etcd_events_first_new(m.events, m.n_events, s->next);
		if (first > m.n_events)
			abort();
		s->next = m.events[m.n_events - 1].kv.mod_revision + 1;
	}
	return 0;
}

static int on_body(void *ctx, const char *p, size_t n)
{
	struct stream *s = ctx;
	s->bytes += n;
	return json_stream_feed(s->js, p, n, NULL);
}

static void as_url(const char *text, size_t len)
{
	char *url = xmalloc(len + 1); /* not strndup: the input has no NUL to stop at */
	memcpy(url, text, len);
	url[len] = '\0';
	struct http_endpoint ep;
	if (http_endpoint_parse(url, NULL, &ep, NULL) == 0) {
		if (!ep.host[0] || !ep.port[0] || !ep.authority[0])
			abort();
		http_endpoint_clear(&ep);
	}
	free(url);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	uint8_t mode = data[0];
	uint32_t seed = data[1] * 2654435761u + 1;
	const char *text = (const char *)data + 2;
	size_t len = size - 2;
	if ((mode & 3) == 3) {
		as_url(text, len);
		return 0;
	}
	bool streaming = mode & 1;
	size_t limit = streaming ? 0 : (size_t)(mode >> 2) * 16; /* 0: none */
	struct stream s = { .js = json_stream_new(on_message, &s) };
	struct http_reader *r =
		streaming ? http_reader_new(0, on_body, &s) : http_reader_new(limit, NULL, NULL);
	size_t off = 0;
	int err = 0;
	unsigned responses = 0;
	while (off < len && err == 0) {
		seed = seed * 1103515245u + 12345u;
		size_t piece = 1 + (seed >> 16) % 64;
		piece = MIN(piece, len - off);
		size_t used;
		err = http_reader_feed(r, text + off, piece, &used, NULL);
		if (err == 0 && used > piece)
			abort();
		if (err < 0 && err != -EPROTO && err != -EMSGSIZE && !streaming)
			abort();
		if (err == 0)
			off += used;
		if (err == 0 && http_reader_done(r)) {
			int st = http_reader_status(r);
			if (st < 100 || st > 999)
				abort();
			if (limit && http_reader_body(r)->len > limit)
				abort();
			/* The next response of a keep-alive connection. */
			if (++responses > 64)
				break;
			http_reader_reset(r);
		}
	}
	if (err == 0) {
		int e = http_reader_eof(r, NULL);
		if (e != 0 && e != -ECONNRESET && e != -EPROTO && e != -EMSGSIZE && !streaming)
			abort();
	}
	if (limit && http_reader_body(r)->len > limit)
		abort();
	http_reader_free(r);
	json_stream_free(s.js);
	return 0;
}
