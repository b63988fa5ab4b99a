/*
 * libyaml adapter. Reading resolves plain scalars the way Kubernetes' YAML
 * reader does for JSON-shaped data (null, booleans, integers, floats, else
 * string) and keeps their text; anchors and aliases are supported, complex
 * keys and duplicate keys are errors. Writing goes through libyaml's emitter.
 */
#include <brindle/core/yaml.h>

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <yaml.h>

#define MAX_DEPTH 256

struct anchor {
	const char *name;
	struct jv *node;
};

struct yreader {
	struct arena *a;
	struct strbuf *err;
	unsigned doc;
	struct jv *stack[MAX_DEPTH];
	const char *keys[MAX_DEPTH];
	bool want_key[MAX_DEPTH];
	const char *anchor_of[MAX_DEPTH];
	int depth;
	struct jv *root;
	struct anchor *anchors;
	size_t nanchors, anchors_cap;
};

static int fail(struct yreader *r, unsigned line, const char *fmt, const char *arg)
	printf_like(3, 0);
static int fail(struct yreader *r, unsigned line, const char *fmt, const char *arg)
{
	if (r->err) {
		sb_reset(r->err);
		sb_addf(r->err, "document %u: line %u: ", r->doc, line);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
		sb_addf(r->err, fmt, arg);
#pragma GCC diagnostic pop
	}
	return -EINVAL;
}

static bool all_match(const char *s, int (*pred)(int))
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!pred((unsigned char)*s))
			return false;
	return true;
}

static int is_octal(int c)
{
	return c >= '0' && c <= '7';
}

static bool looks_float(const char *s)
{
	const char *p = s;
	if (*p == '-' || *p == '+')
		p++;
	bool digits = false, dot = false;
	while (isdigit((unsigned char)*p)) {
		p++;
		digits = true;
	}
	if (*p == '.') {
		dot = true;
		p++;
		while (isdigit((unsigned char)*p)) {
			p++;
			digits = true;
		}
	}
	if (!digits)
		return false;
	if (*p == 'e' || *p == 'E') {
		p++;
		if (*p == '-' || *p == '+')
			p++;
		if (!isdigit((unsigned char)*p))
			return false;
		while (isdigit((unsigned char)*p))
			p++;
		return *p == '\0';
	}
	return *p == '\0' && dot;
}

/* YAML 1.2 core schema resolution of a plain scalar. */
static struct jv *resolve_plain(struct arena *a, const char *s, size_t len)
{
	struct jv *v;
	if (len == 0 || streq(s, "~") || streq(s, "null") || streq(s, "Null") ||
	    streq(s, "NULL")) {
		v = jv_null(a);
	} else if (streq(s, "true") || streq(s, "True") || streq(s, "TRUE")) {
		v = jv_bool(a, true);
	} else if (streq(s, "false") || streq(s, "False") || streq(s, "FALSE")) {
		v = jv_bool(a, false);
	} else {
		const char *d = (s[0] == '-' || s[0] == '+') ? s + 1 : s;
		bool neg = s[0] == '-';
		errno = 0;
		if (all_match(d, isdigit)) {
			char *end;
			unsigned long long u = strtoull(d, &end, 10);
			if (errno == 0 && (!neg || u <= (unsigned long long)INT64_MAX + 1)) {
				/* Normalise "+5" and "007" to JSON number text. */
				v = neg ? jv_int(a, -(int64_t)(u - 1) - 1) : jv_uint(a, u);
			} else {
				v = jv_number_text(a, s, len);
			}
		} else if (str_has_prefix(d, "0x") && all_match(d + 2, isxdigit)) {
			unsigned long long u = strtoull(d + 2, NULL, 16);
			v = neg ? jv_int(a, -(int64_t)u) : jv_uint(a, u);
		} else if (str_has_prefix(d, "0o") && all_match(d + 2, is_octal)) {
			unsigned long long u = strtoull(d + 2, NULL, 8);
			v = neg ? jv_int(a, -(int64_t)u) : jv_uint(a, u);
		} else if (looks_float(s)) {
			v = jv_number_text(a, s, len);
		} else {
			v = jv_stringn(a, s, len);
		}
	}
	/* Keep the user's spelling for string targets. */
	v->src = arena_strndup(a, s, len);
	v->plain = true;
	return v;
}

static int attach(struct yreader *r, struct jv *v, unsigned line)
{
	if (r->depth == 0) {
		r->root = v;
		return 0;
	}
	struct jv *top = r->stack[r->depth - 1];
	if (top->type == JV_ARRAY) {
		jv_push(r->a, top, v);
		return 0;
	}
	if (r->want_key[r->depth - 1]) {
		if (v->type == JV_ARRAY || v->type == JV_OBJECT)
			return fail(r, line, "%s", "mapping keys must be scalars");
		const char *key = v->s.text;
		if (jv_get(top, key))
			return fail(r, line, "duplicate key \"%s\"", key);
		r->keys[r->depth - 1] = key;
		r->want_key[r->depth - 1] = false;
		return 0;
	}
	jv_add(r->a, top, r->keys[r->depth - 1], v);
	r->want_key[r->depth - 1] = true;
	return 0;
}

static void remember(struct yreader *r, const yaml_char_t *anchor, struct jv *v)
{
	if (!anchor)
		return;
	GROW(r->anchors, r->anchors_cap, r->nanchors + 1);
	r->anchors[r->nanchors].name = arena_strdup(r->a, (const char *)anchor);
	r->anchors[r->nanchors].node = v;
	r->nanchors++;
}

static struct jv *lookup(struct yreader *r, const char *name)
{
	for (size_t i = r->nanchors; i-- > 0;)
		if (streq(r->anchors[i].name, name))
			return r->anchors[i].node;
	return NULL;
}

static int on_event(struct yreader *r, yaml_event_t *ev)
{
	unsigned line = (unsigned)ev->start_mark.line + 1;
	struct jv *v;
	switch (ev->type) {
	case YAML_SCALAR_EVENT: {
		const char *s = (const char *)ev->data.scalar.value;
		size_t len = ev->data.scalar.length;
		if (strlen(s) != len)
			return fail(r, line, "%s", "NUL character in scalar");
		const char *tag = (const char *)ev->data.scalar.tag;
		if (ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
		    !(tag && streq(tag, YAML_STR_TAG)))
			v = resolve_plain(r->a, s, len);
		else
			v = jv_stringn(r->a, s, len);
		v->line = line;
		remember(r, ev->data.scalar.anchor, v);
		return attach(r, v, line);
	}
	case YAML_SEQUENCE_START_EVENT:
	case YAML_MAPPING_START_EVENT: {
		if (r->depth > 0 && r->stack[r->depth - 1]->type == JV_OBJECT &&
		    r->want_key[r->depth - 1])
			return fail(r, line, "%s", "mapping keys must be scalars");
		if (r->depth >= MAX_DEPTH)
			return fail(r, line, "nesting deeper than %s levels", "256");
		bool map = ev->type == YAML_MAPPING_START_EVENT;
		v = map ? jv_object(r->a) : jv_array(r->a);
		v->line = line;
		const yaml_char_t *anchor = map ? ev->data.mapping_start.anchor
						: ev->data.sequence_start.anchor;
		r->anchor_of[r->depth] = anchor ? arena_strdup(r->a, (const char *)anchor) : NULL;
		r->want_key[r->depth] = true;
		r->keys[r->depth] = NULL;
		r->stack[r->depth++] = v;
		return 0;
	}
	case YAML_SEQUENCE_END_EVENT:
	case YAML_MAPPING_END_EVENT:
		v = r->stack[--r->depth];
		remember(r, (const yaml_char_t *)r->anchor_of[r->depth], v);
		return attach(r, v, line);
	case YAML_ALIAS_EVENT:
		v = lookup(r, (const char *)ev->data.alias.anchor);
		if (!v)
			return fail(r, line, "unknown alias \"%s\"", (const char *)ev->data.alias.anchor);
		return attach(r, v, line);
	default:
		return 0;
	}
}

int yaml_parse_all(struct arena *a, const char *text, size_t len, struct jv ***docs,
		   size_t *ndocs, struct strbuf *err)
{
	struct yreader r = { .a = a, .err = err };
	struct jv **out = NULL;
	size_t n = 0, cap = 0;
	int ret = 0;
	yaml_parser_t p;
	yaml_parser_initialize(&p);
	yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
	for (bool done = false; !done && ret == 0;) {
		yaml_event_t ev;
		if (!yaml_parser_parse(&p, &ev)) {
			if (err) {
				sb_reset(err);
				sb_addf(err, "document %u: line %zu: %s", r.doc ? r.doc : 1,
					p.problem_mark.line + 1, p.problem ? p.problem : "syntax error");
				if (p.context)
					sb_addf(err, " %s", p.context);
			}
			ret = -EINVAL;
			break;
		}
		switch (ev.type) {
		case YAML_DOCUMENT_START_EVENT:
			r.doc++;
			r.root = NULL;
			r.nanchors = 0;
			break;
		case YAML_DOCUMENT_END_EVENT:
			GROW(out, cap, n + 1);
			/* An empty document ("---" alone) reads as a null scalar. */
			out[n++] = (r.root && r.root->type == JV_NULL) ? NULL : r.root;
			break;
		case YAML_STREAM_END_EVENT:
			done = true;
			break;
		default:
			ret = on_event(&r, &ev);
			break;
		}
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&p);
	free(r.anchors);
	if (ret == 0) {
		*docs = arena_memdup(a, out, sizeof(struct jv *) * n);
		*ndocs = n;
	}
	free(out);
	return ret;
}

/* Would a YAML reader take this string for something other than a string? */
static bool needs_quotes(const char *s)
{
	static const char *const special[] = { "y", "Y", "n", "N", "yes", "Yes", "YES", "no",
					      "No", "NO", "on", "On", "ON", "off", "Off", "OFF",
					      ".inf", ".Inf", ".nan", ".NaN", "-.inf" };
	if (*s == '\0')
		return true;
	/* YAML 1.1 readers take 2026-11-22... for a timestamp. */
	if (isdigit((unsigned char)s[0]) && isdigit((unsigned char)s[1]) &&
	    isdigit((unsigned char)s[2]) && isdigit((unsigned char)s[3]) && s[4] == '-')
		return true;
	struct arena *a = arena_new();
	struct jv *v = resolve_plain(a, s, strlen(s));
	bool q = v->type != JV_STRING;
	arena_free(a);
	for (size_t i = 0; !q && i < ARRAY_SIZE(special); i++)
		q = streq(s, special[i]);
	return q;
}

static int emit_write(void *ctx, unsigned char *buf, size_t size)
{
	sb_add(ctx, buf, size);
	return 1;
}

static void emit_node(yaml_emitter_t *e, const struct jv *v)
{
	yaml_event_t ev;
	switch (v->type) {
	case JV_ARRAY:
		yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_SEQUENCE_STYLE);
		yaml_emitter_emit(e, &ev);
		for (size_t i = 0; i < v->arr.n; i++)
			emit_node(e, v->arr.items[i]);
		yaml_sequence_end_event_initialize(&ev);
		yaml_emitter_emit(e, &ev);
		return;
	case JV_OBJECT:
		yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1,
						    v->obj.n ? YAML_BLOCK_MAPPING_STYLE
							     : YAML_FLOW_MAPPING_STYLE);
		yaml_emitter_emit(e, &ev);
		for (size_t i = 0; i < v->obj.n; i++) {
			const char *k = v->obj.members[i].key;
			yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)k,
						     (int)strlen(k), 1, 1,
						     needs_quotes(k) ? YAML_DOUBLE_QUOTED_SCALAR_STYLE
								     : YAML_ANY_SCALAR_STYLE);
			yaml_emitter_emit(e, &ev);
			emit_node(e, v->obj.members[i].value);
		}
		yaml_mapping_end_event_initialize(&ev);
		yaml_emitter_emit(e, &ev);
		return;
	case JV_STRING:
		yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)v->s.text, (int)v->s.len,
					     1, 1,
					     needs_quotes(v->s.text) ? YAML_DOUBLE_QUOTED_SCALAR_STYLE
								     : YAML_ANY_SCALAR_STYLE);
		yaml_emitter_emit(e, &ev);
		return;
	default:
		yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)v->s.text, (int)v->s.len,
					     1, 1, YAML_PLAIN_SCALAR_STYLE);
		yaml_emitter_emit(e, &ev);
		return;
	}
}

void yaml_write(struct strbuf *out, const struct jv *v)
{
	yaml_emitter_t e;
	yaml_event_t ev;
	yaml_emitter_initialize(&e);
	yaml_emitter_set_output(&e, emit_write, out);
	yaml_emitter_set_unicode(&e, 1);
	yaml_emitter_set_width(&e, -1);
	yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING);
	yaml_emitter_emit(&e, &ev);
	yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1);
	yaml_emitter_emit(&e, &ev);
	emit_node(&e, v);
	yaml_document_end_event_initialize(&ev, 1);
	yaml_emitter_emit(&e, &ev);
	yaml_stream_end_event_initialize(&ev);
	yaml_emitter_emit(&e, &ev);
	yaml_emitter_delete(&e);
}
