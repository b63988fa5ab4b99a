/* The calculation's notices (notices.h): a bounded queue of texts. */
#include "notices.h"

#include <brindle/core/strbuf.h>

#include <stdarg.h>
#include <stdlib.h>

void notice_add(struct notices *q, enum notice_level level, const char *fmt, ...)
{
	if (q->n >= NOTICES_MAX) {
		q->dropped++;
		return;
	}
	struct strbuf sb = STRBUF_INIT;
	sb_init(&sb);
	va_list ap;
	va_start(ap, fmt);
	sb_vaddf(&sb, fmt, ap);
	va_end(ap);
	GROW(q->v, q->cap, q->n + 1);
	q->v[q->n++] = (struct notice){ .level = level, .text = sb_detach(&sb) };
}

static void notices_clear(struct notices *q);

void notices_drain(struct notices *q, void (*fn)(void *ctx, const struct notice *n), void *ctx)
{
	for (size_t i = 0; i < q->n; i++)
		fn(ctx, &q->v[i]);
	if (q->dropped) {
		struct notice more = { .level = NOTICE_WARNING };
		struct strbuf sb = STRBUF_INIT;
		sb_init(&sb);
		sb_addf(&sb, "%zu more notices were not kept (at most %d between two loop turns)",
			q->dropped, NOTICES_MAX);
		more.text = sb.buf;
		fn(ctx, &more);
		sb_free(&sb);
	}
	notices_clear(q);
}

static void notices_clear(struct notices *q)
{
	for (size_t i = 0; i < q->n; i++)
		free(q->v[i].text);
	q->n = 0;
	q->dropped = 0;
}

void notices_free(struct notices *q)
{
	notices_clear(q);
	free(q->v);
	q->v = NULL;
	q->cap = 0;
}
