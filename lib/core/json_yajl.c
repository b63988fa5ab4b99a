/*
 * yajl adapter: builds jv trees from yajl's callbacks, and writes jv trees
 * with yajl_gen. Numbers are kept as text so 64-bit revisions stay exact.
 */
#include <brindle/core/json.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <yajl/yajl_gen.h>
#include <yajl/yajl_parse.h>

#define MAX_DEPTH 256

struct builder {
	struct arena *a;
	struct jv *stack[MAX_DEPTH];
	const char *keys[MAX_DEPTH]; /* pending member key per open object */
	int depth;
	bool too_deep;
	bool nul; /* a string or key held \u0000: refused, not cut where C would stop reading */
	/* completed top-level values */
	json_value_fn cb;
	void *cb_ctx;
	int cb_err;
	struct jv **docs;
	size_t ndocs, cap;
};

static int emit(struct builder *b, struct jv *v)
{
	if (b->depth == 0) {
		if (b->cb) {
			int r = b->cb(b->cb_ctx, v, b->a);
			arena_reset(b->a);
			if (r < 0) {
				b->cb_err = r;
				return 0;
			}
			return 1;
		}
		GROW(b->docs, b->cap, b->ndocs + 1);
		b->docs[b->ndocs++] = v;
		return 1;
	}
	struct jv *top = b->stack[b->depth - 1];
	if (top->type == JV_ARRAY) {
		jv_push(b->a, top, v);
	} else {
		jv_add(b->a, top, b->keys[b->depth - 1], v);
		b->keys[b->depth - 1] = NULL;
	}
	return 1;
}

static int open_container(struct builder *b, struct jv *v)
{
	if (b->depth >= MAX_DEPTH) {
		b->too_deep = true;
		return 0;
	}
	/* Attach first, so the parent holds it when it closes. */
	if (b->depth > 0 && !emit(b, v))
		return 0;
	b->keys[b->depth] = NULL;
	b->stack[b->depth++] = v;
	return 1;
}

static int close_container(struct builder *b)
{
	struct jv *v = b->stack[--b->depth];
	if (b->depth == 0)
		return emit(b, v);
	return 1;
}

static int cb_null(void *ctx)
{
	struct builder *b = ctx;
	return emit(b, jv_null(b->a));
}

static int cb_boolean(void *ctx, int val)
{
	struct builder *b = ctx;
	return emit(b, jv_bool(b->a, val));
}

static int cb_number(void *ctx, const char *s, size_t len)
{
	struct builder *b = ctx;
	return emit(b, jv_number_text(b->a, s, len));
}

static int cb_string(void *ctx, const unsigned char *s, size_t len)
{
	struct builder *b = ctx;
	if (memchr(s, '\0', len)) {
		b->nul = true;
		return 0;
	}
	return emit(b, jv_stringn(b->a, (const char *)s, len));
}

static int cb_start_map(void *ctx)
{
	struct builder *b = ctx;
	return open_container(b, jv_object(b->a));
}

static int cb_map_key(void *ctx, const unsigned char *s, size_t len)
{
	struct builder *b = ctx;
	if (memchr(s, '\0', len)) {
		b->nul = true;
		return 0;
	}
	b->keys[b->depth - 1] = arena_strndup(b->a, (const char *)s, len);
	return 1;
}

static int cb_end(void *ctx)
{
	return close_container(ctx);
}

static int cb_start_array(void *ctx)
{
	struct builder *b = ctx;
	return open_container(b, jv_array(b->a));
}

static const yajl_callbacks callbacks = {
	.yajl_null = cb_null,
	.yajl_boolean = cb_boolean,
	.yajl_number = cb_number,
	.yajl_string = cb_string,
	.yajl_start_map = cb_start_map,
	.yajl_map_key = cb_map_key,
	.yajl_end_map = cb_end,
	.yajl_start_array = cb_start_array,
	.yajl_end_array = cb_end,
};

static unsigned line_at(const char *text, size_t off)
{
	unsigned line = 1;
	for (size_t i = 0; i < off; i++)
		if (text[i] == '\n')
			line++;
	return line;
}

/* yajl's short message without its "parse error: " prefix and newline. */
static void yajl_message(yajl_handle h, struct builder *b, const char *text, size_t len,
			 size_t consumed, struct strbuf *err)
{
	if (!err)
		return;
	sb_reset(err);
	if (text)
		sb_addf(err, "line %u: ", line_at(text, MIN(consumed, len)));
	if (b->too_deep) {
		sb_addf(err, "nesting deeper than %d levels", MAX_DEPTH);
		return;
	}
	if (b->nul) {
		sb_adds(err, "a string holds a NUL character (\\u0000)");
		return;
	}
	unsigned char *m = yajl_get_error(h, 0, NULL, 0);
	const char *s = (const char *)m;
	if (str_has_prefix(s, "parse error: "))
		s += strlen("parse error: ");
	else if (str_has_prefix(s, "lexical error: "))
		s += strlen("lexical error: ");
	size_t n = strlen(s);
	while (n && (s[n - 1] == '\n' || s[n - 1] == ' '))
		n--;
	sb_add(err, s, n);
	yajl_free_error(h, m);
}

int json_parse_all(struct arena *a, const char *text, size_t len, struct jv ***docs, size_t *ndocs,
		   struct strbuf *err)
{
	struct builder b = { .a = a };
	yajl_handle h = yajl_alloc(&callbacks, NULL, &b);
	yajl_config(h, yajl_allow_multiple_values, 1);
	int ret = 0;
	yajl_status st = yajl_parse(h, (const unsigned char *)text, len);
	if (st == yajl_status_ok)
		st = yajl_complete_parse(h);
	if (st != yajl_status_ok) {
		yajl_message(h, &b, text, len, yajl_get_bytes_consumed(h), err);
		ret = -EINVAL;
	}
	yajl_free(h);
	if (ret == 0) {
		*docs = arena_memdup(a, b.docs, sizeof(struct jv *) * b.ndocs);
		*ndocs = b.ndocs;
	}
	free(b.docs);
	return ret;
}

int json_parse(struct arena *a, const char *text, size_t len, struct jv **out, struct strbuf *err)
{
	struct jv **docs;
	size_t n;
	int r = json_parse_all(a, text, len, &docs, &n, err);
	if (r < 0)
		return r;
	if (n != 1) {
		if (err) {
			sb_reset(err);
			sb_addf(err, n == 0 ? "no JSON value" : "more than one JSON value");
		}
		return -EINVAL;
	}
	*out = docs[0];
	return 0;
}

struct json_stream {
	yajl_handle h;
	struct builder b;
};

struct json_stream *json_stream_new(json_value_fn cb, void *ctx)
{
	struct json_stream *js = xcalloc(1, sizeof(*js));
	js->b.a = arena_new();
	js->b.cb = cb;
	js->b.cb_ctx = ctx;
	js->h = yajl_alloc(&callbacks, NULL, &js->b);
	yajl_config(js->h, yajl_allow_multiple_values, 1);
	yajl_config(js->h, yajl_allow_partial_values, 1);
	return js;
}

void json_stream_free(struct json_stream *js)
{
	if (!js)
		return;
	yajl_free(js->h);
	arena_free(js->b.a);
	free(js->b.docs);
	free(js);
}

int json_stream_feed(struct json_stream *js, const char *buf, size_t len, struct strbuf *err)
{
	yajl_status st = yajl_parse(js->h, (const unsigned char *)buf, len);
	if (js->b.cb_err)
		return js->b.cb_err;
	if (st != yajl_status_ok) {
		yajl_message(js->h, &js->b, NULL, 0, 0, err);
		return -EINVAL;
	}
	return 0;
}

/* JSON's number grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)? */
static bool json_number_ok(const char *s)
{
	const char *p = s;
	if (*p == '-')
		p++;
	if (*p == '0')
		p++;
	else if (*p >= '1' && *p <= '9')
		while (*p >= '0' && *p <= '9')
			p++;
	else
		return false;
	if (*p == '.') {
		p++;
		if (!(*p >= '0' && *p <= '9'))
			return false;
		while (*p >= '0' && *p <= '9')
			p++;
	}
	if (*p == 'e' || *p == 'E') {
		p++;
		if (*p == '+' || *p == '-')
			p++;
		if (!(*p >= '0' && *p <= '9'))
			return false;
		while (*p >= '0' && *p <= '9')
			p++;
	}
	return *p == '\0';
}

static void gen_number(yajl_gen g, const struct jv *v)
{
	if (json_number_ok(v->s.text)) {
		yajl_gen_number(g, v->s.text, v->s.len);
		return;
	}
	char buf[64];
	double d = strtod(v->s.text, NULL);
	int n = snprintf(buf, sizeof(buf), "%.17g", d);
	yajl_gen_number(g, buf, (size_t)n);
}

static void gen_value(yajl_gen g, const struct jv *v)
{
	switch (v->type) {
	case JV_NULL:
		yajl_gen_null(g);
		break;
	case JV_BOOL:
		yajl_gen_bool(g, v->s.text[0] == 't');
		break;
	case JV_NUMBER:
		gen_number(g, v);
		break;
	case JV_STRING:
		yajl_gen_string(g, (const unsigned char *)v->s.text, v->s.len);
		break;
	case JV_ARRAY:
		yajl_gen_array_open(g);
		for (size_t i = 0; i < v->arr.n; i++)
			gen_value(g, v->arr.items[i]);
		yajl_gen_array_close(g);
		break;
	case JV_OBJECT:
		yajl_gen_map_open(g);
		for (size_t i = 0; i < v->obj.n; i++) {
			const char *k = v->obj.members[i].key;
			yajl_gen_string(g, (const unsigned char *)k, strlen(k));
			gen_value(g, v->obj.members[i].value);
		}
		yajl_gen_map_close(g);
		break;
	}
}

static void gen_print(void *ctx, const char *s, size_t len)
{
	sb_add(ctx, s, len);
}

void json_write(struct strbuf *out, const struct jv *v, bool pretty)
{
	yajl_gen g = yajl_gen_alloc(NULL);
	yajl_gen_config(g, yajl_gen_beautify, pretty ? 1 : 0);
	yajl_gen_config(g, yajl_gen_indent_string, "  ");
	yajl_gen_config(g, yajl_gen_print_callback, gen_print, out);
	gen_value(g, v);
	yajl_gen_free(g);
	if (pretty && out->len && out->buf[out->len - 1] != '\n')
		sb_addc(out, '\n');
}

void json_write_string(struct strbuf *out, const char *s)
{
	yajl_gen g = yajl_gen_alloc(NULL);
	yajl_gen_config(g, yajl_gen_print_callback, gen_print, out);
	yajl_gen_string(g, (const unsigned char *)s, strlen(s));
	yajl_gen_free(g);
}
