/*
 * Kubernetes API answers: the input as a watch stream (split into two chunks
 * at a point the first byte picks, through json_stream and the event
 * decoder) and as one answer (a list page, a Status). Nothing may crash, leak
 * or read out of bounds.
 */
#include <brindle/core/json.h>
#include <brindle/core/kube_codec.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int on_event(void *ctx, struct jv *v, struct arena *a)
{
	(void)ctx;
	(void)a;
	struct kube_event e;
	struct strbuf msg = STRBUF_INIT;
	sb_init(&msg);
	if (kube_decode_event(v, &e, &msg) == 0) {
		if (!e.object || !e.resource_version)
			abort();
		if (e.type != KUBE_EVENT_ERROR && !*e.resource_version)
			abort();
		(void)strlen(kube_meta_str(e.object, "name"));
	}
	sb_free(&msg);
	return 0;
}

static void as_stream(const char *text, size_t len, size_t cut)
{
	struct json_stream *js = json_stream_new(on_event, NULL);
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
		struct kube_list_page p;
		if (kube_decode_list(v, &p, &err) == 0)
			for (size_t i = 0; i < p.n; i++)
				(void)strlen(kube_meta_str(p.items[i], "resourceVersion"));
		if (kube_status_errno(422, v, &err) >= 0)
			abort();
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
