/*
 * etcd gateway responses: the input as a watch stream (split into two chunks
 * at a point the first byte picks, through json_stream and the watch-message
 * decoder) and as one unary answer (through every response decoder). Nothing
 * may crash, leak or read out of bounds.
 */
#include <brindle/core/etcd_codec.h>
#include <brindle/core/json.h>

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int on_message(void *ctx, struct jv *v, struct arena *a)
{
	struct etcd_watch_msg m;
	if (etcd_decode_watch_msg(a, v, &m, NULL) == 0 && m.kind == ETCD_WATCH_MSG_EVENTS) {
		int64_t *next = ctx;
		size_t first = etcd_events_first_new(m.events, m.n_events, *next);
		if (first > m.n_events)
			abort();
		for (size_t i = first; i < m.n_events; i++)
			if (m.events[i].kv.key[m.events[i].kv.key_len] != '\0' ||
			    m.events[i].kv.value[m.events[i].kv.value_len] != '\0')
				abort();
		*next = m.events[m.n_events - 1].kv.mod_revision + 1;
	}
	return 0;
}

static void as_stream(const char *text, size_t len, size_t cut)
{
	int64_t next = 0;
	struct json_stream *js = json_stream_new(on_message, &next);
	if (json_stream_feed(js, text, cut, NULL) == 0)
		(void)!json_stream_feed(js, text + cut, len - cut, NULL);
	json_stream_free(js);
}

static void as_answer(const char *text, size_t len)
{
	struct arena *a = arena_new();
	struct jv *v;
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	if (json_parse(a, text, len, &v, NULL) == 0) {
		struct etcd_range_page p;
		struct etcd_txn_decoded t;
		int64_t x, y;
		(void)!etcd_decode_error(v, &err);
		(void)!etcd_decode_range(a, v, &p, &err);
		(void)!etcd_decode_delete(v, &x, &y, &err);
		(void)!etcd_decode_txn(a, v, &t, &err);
		(void)!etcd_decode_lease_grant(v, &x, &y, &err);
		(void)!etcd_decode_lease_keepalive(v, &x, &y, &err);
	}
	sb_free(&err);
	arena_free(a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	size_t cut = data[0] % size;
	const char *text = (const char *)data + 1;
	size_t len = size - 1;
	as_stream(text, len, MIN(cut, len));
	as_answer(text, len);
	return 0;
}
