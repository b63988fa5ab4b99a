/*
 * What every datastore backend and the front share: the last error's text
 * and the identity of a new resource. A leaf: it calls no other ds file.
 */
#include "ds_internal.h"
#include <brindle/sys/clock.h>

#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>
#include <time.h>

int ds_fail(struct ds *d, int ret, const char *fmt, ...)
{
	va_list ap;
	sb_reset(&d->err);
	va_start(ap, fmt);
	sb_vaddf(&d->err, fmt, ap);
	va_end(ap);
	return ret;
}

void ds_stamp_new(struct br_object *o)
{
	if (!o->meta.uid) {
		uint8_t b[16];
		if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b)) {
			uint64_t t = now_ns();
			memcpy(b, &t, 8);
			memcpy(b + 8, &o, sizeof(o) < 8 ? sizeof(o) : 8);
		}
		b[6] = (uint8_t)((b[6] & 0x0f) | 0x40); /* version 4 */
		b[8] = (uint8_t)((b[8] & 0x3f) | 0x80); /* RFC 4122 variant */
		o->meta.uid = arena_printf(
			o->arena,
			"%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
			b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11],
			b[12], b[13], b[14], b[15]);
	}
	if (!o->meta.creation_timestamp) {
		char ts[32];
		time_t now = time(NULL);
		struct tm tm;
		gmtime_r(&now, &tm);
		strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm);
		o->meta.creation_timestamp = arena_strdup(o->arena, ts);
	}
}

const char *ds_scope(const struct br_object *o)
{
	if (o->kind->id == KIND_BLOCKAFFINITY)
		return ((const struct br_blockaffinity *)o)->spec.node;
	return o->kind->namespaced ? o->meta.namespace : NULL;
}
