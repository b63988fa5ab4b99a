/*
 * What the calculation has to tell the operator (an endpoint refused, an
 * interface claimed twice, a setting it cannot use): the pure core does not
 * log, it queues notices, and the daemon drains and logs them once per loop
 * turn. Bounded: past NOTICES_MAX queued, new ones are counted, not kept.
 */
#ifndef FELIX_CALC_NOTICES_H
#define FELIX_CALC_NOTICES_H

#include <brindle/core/util.h>

#include <stddef.h>

#define NOTICES_MAX 1000

enum notice_level {
	NOTICE_INFO,
	NOTICE_WARNING,
	NOTICE_ERROR,
};

struct notice {
	enum notice_level level;
	char *text;
};

struct notices {
	struct notice *v;
	size_t n, cap;
	size_t dropped; /* not kept since the last drain: the queue was full */
};

void notice_add(struct notices *q, enum notice_level level, const char *fmt, ...) printf_like(3, 4);
/* Hand every queued notice to @fn (in order) and empty the queue. */
void notices_drain(struct notices *q, void (*fn)(void *ctx, const struct notice *n), void *ctx);
/* Frees what the queue holds (it can be used again). */
void notices_free(struct notices *q);

#endif
