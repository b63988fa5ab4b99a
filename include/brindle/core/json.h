/*
 * JSON in and out, over yajl. The only file that includes yajl headers is
 * lib/json_yajl.c.
 */
#ifndef BRINDLE_JSON_H
#define BRINDLE_JSON_H

#include <brindle/core/jv.h>
#include <brindle/core/strbuf.h>

/*
 * Parse every JSON value in @text (several may follow each other, as in a
 * stream of objects). On success stores the values in *docs (an arena array)
 * and returns 0. On a syntax error returns -EINVAL and writes
 * "line N: <problem>" to @err.
 */
int json_parse_all(struct arena *a, const char *text, size_t len, struct jv ***docs, size_t *ndocs,
		   struct strbuf *err) must_check;
/* Exactly one value. */
int json_parse(struct arena *a, const char *text, size_t len, struct jv **out,
	       struct strbuf *err) must_check;

/*
 * Incremental parsing of a stream of concatenated values (an etcd watch).
 * Each complete top-level value is handed to @cb together with an arena that
 * is reset after the callback returns. A negative return from @cb stops the
 * stream and is returned by json_stream_feed.
 */
struct json_stream;
typedef int (*json_value_fn)(void *ctx, struct jv *value, struct arena *a);
struct json_stream *json_stream_new(json_value_fn cb, void *ctx);
void json_stream_free(struct json_stream *js);
int json_stream_feed(struct json_stream *js, const char *buf, size_t len,
		     struct strbuf *err) must_check;

/* Serialise; objects keep their member order. */
void json_write(struct strbuf *out, const struct jv *v, bool pretty);
/* Append @s as a quoted JSON string. */
void json_write_string(struct strbuf *out, const char *s);

#endif
