/*
 * Mustache templates: a compiler from template text to a flat node array, and
 * a renderer that walks the array against a jv document.
 *
 * A compiled template owns one arena: a copy of the source (TEXT nodes point
 * into it), the tag names and the node array. A section node's body is the
 * index range (i, end); rendering skips to end afterwards. Nothing is
 * compiled while rendering, and partials are looked up already compiled, so
 * a recursive partial costs nothing to compile; at render time every section
 * and partial counts towards MUSTACHE_MAX_DEPTH, every node and list item
 * visited towards max_steps, every byte towards max_output.
 *
 * Standalone lines: a section, inverted, closing, comment, partial or
 * delimiter tag that is alone on its line (only blanks around it) takes the
 * whole line with it, blanks and line ending included.
 *
 * Partial indentation: the spec indents every line of a standalone partial's
 * template before rendering it. We get the same result at render time: a TEXT
 * node prints the current indentation before each line of the template it
 * begins, and a tag that begins a line gets an empty TEXT node in front of it
 * that does the same. Lines removed as standalone begin nothing.
 */
#include <brindle/core/mustache.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

enum node_kind {
	NODE_TEXT,
	NODE_VAR, /* {{name}}: HTML-escaped unless MUSTACHE_NO_ESCAPE */
	NODE_RAW, /* {{{name}}}, {{&name}} */
	NODE_SECTION,
	NODE_INVERTED,
	NODE_PARTIAL,
};

struct node {
	enum node_kind kind;
	bool starts_line; /* TEXT: its first byte begins a template line */
	bool standalone;  /* PARTIAL: the tag was alone on its line */
	unsigned line;
	const char *text; /* TEXT: the bytes; standalone PARTIAL: its indentation */
	size_t len;
	const char *name;  /* as written, blanks trimmed */
	const char **path; /* name split at '.'; npath is 0 for "." */
	size_t npath;
	size_t end; /* SECTION, INVERTED: index just after the body */
};

struct mustache {
	struct arena *a;
	struct node *nodes;
	size_t n;
};

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

static unsigned count_lines(const char *p, size_t n)
{
	const char *end = p + n;
	unsigned lines = 0;
	while ((p = memchr(p, '\n', (size_t)(end - p)))) {
		lines++;
		p++;
	}
	return lines;
}

/* Compiler */

struct parser {
	struct arena *a;
	const char *src;
	size_t len, pos;
	unsigned line;			 /* of src[pos] */
	const char *otag, *ctag, *ctag3; /* ctag3 closes {{{: "}" + ctag */
	size_t olen, clen;
	struct node *nodes;
	size_t n, cap;
	size_t open[MUSTACHE_MAX_DEPTH]; /* indexes of the open sections */
	size_t nopen;
	struct strbuf *err;
};

static int parse_error(struct parser *ps, unsigned line, const char *fmt, ...) printf_like(3, 4);
static int parse_error(struct parser *ps, unsigned line, const char *fmt, ...)
{
	if (ps->err) {
		va_list ap;
		sb_reset(ps->err);
		sb_addf(ps->err, "line %u: ", line);
		va_start(ap, fmt);
		sb_vaddf(ps->err, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static void add_node(struct parser *ps, const struct node *n)
{
	GROW(ps->nodes, ps->cap, ps->n + 1);
	ps->nodes[ps->n++] = *n;
}

static bool begins_line(const struct parser *ps, size_t pos)
{
	return pos == 0 || ps->src[pos - 1] == '\n';
}

/* Empty text at the start of a line is an indentation point, see the top. */
static void add_text(struct parser *ps, size_t from, size_t to, unsigned line)
{
	if (from == to && !begins_line(ps, from))
		return;
	struct node n = {
		.kind = NODE_TEXT,
		.starts_line = begins_line(ps, from),
		.line = line,
		.text = ps->src + from,
		.len = to - from,
	};
	add_node(ps, &n);
}

/* Fills n->name (and n->path when @split) from src[from, to). */
static int parse_name(struct parser *ps, struct node *n, size_t from, size_t to, bool split)
{
	const char *s = ps->src;
	while (from < to && is_space(s[from]))
		from++;
	while (to > from && is_space(s[to - 1]))
		to--;
	n->name = arena_strndup(ps->a, s + from, to - from);
	bool bad = from == to;
	for (size_t i = from; i < to; i++)
		bad |= is_space(s[i]);
	if (!bad && split && !streq(n->name, ".")) {
		n->npath = 1;
		for (size_t i = from; i < to; i++)
			n->npath += s[i] == '.';
		n->path = arena_new_array(ps->a, const char *, n->npath);
		size_t k = 0, start = from;
		for (size_t i = from; i <= to; i++) {
			if (i < to && s[i] != '.')
				continue;
			bad |= i == start;
			n->path[k++] = arena_strndup(ps->a, s + start, i - start);
			start = i + 1;
		}
	}
	if (bad)
		return parse_error(ps, n->line, "bad tag name \"%s\"", n->name);
	return 0;
}

/* {{=open close=}}: src[from, to) is what lies between "{{=" and "}}". */
static int set_delimiters(struct parser *ps, size_t tag, size_t tag_end, size_t from, size_t to,
			  unsigned line)
{
	const char *s = ps->src;
	size_t i = from, end = to > from && s[to - 1] == '=' ? to - 1 : from;
	while (i < end && is_space(s[i]))
		i++;
	size_t o = i;
	while (i < end && !is_space(s[i]))
		i++;
	size_t olen = i - o;
	while (i < end && is_space(s[i]))
		i++;
	size_t c = i;
	while (i < end && !is_space(s[i]))
		i++;
	size_t clen = i - c;
	while (i < end && is_space(s[i]))
		i++;
	if (end == from || !olen || !clen || i != end || memchr(s + o, '=', olen) ||
	    memchr(s + c, '=', clen))
		return parse_error(ps, line,
				   "bad delimiter change \"%.*s\": want two delimiters without "
				   "blanks or \"=\"",
				   (int)(tag_end - tag), s + tag);
	ps->otag = arena_strndup(ps->a, s + o, olen);
	ps->olen = olen;
	ps->ctag = arena_strndup(ps->a, s + c, clen);
	ps->clen = clen;
	ps->ctag3 = arena_printf(ps->a, "}%s", ps->ctag);
	return 0;
}

static int open_section(struct parser *ps, struct node *n)
{
	if (ps->nopen == MUSTACHE_MAX_DEPTH)
		return parse_error(ps, n->line, "sections nested deeper than %d levels",
				   MUSTACHE_MAX_DEPTH);
	ps->open[ps->nopen++] = ps->n;
	add_node(ps, n);
	return 0;
}

static int close_section(struct parser *ps, const struct node *n)
{
	if (!ps->nopen)
		return parse_error(ps, n->line, "closing tag \"%s\" has no open section", n->name);
	struct node *open = &ps->nodes[ps->open[ps->nopen - 1]];
	if (!streq(open->name, n->name))
		return parse_error(ps, n->line,
				   "closing tag \"%s\" does not match open section \"%s\"", n->name,
				   open->name);
	open->end = ps->n;
	ps->nopen--;
	return 0;
}

/* Parses the tag at src[tag] (an opening delimiter) and the text before it. */
static int parse_tag(struct parser *ps, size_t text_start, size_t tag)
{
	const char *s = ps->src;
	unsigned line = ps->line + count_lines(s + text_start, tag - text_start);
	size_t inner = tag + ps->olen;
	char sigil = s[inner]; /* src is NUL-terminated */
	bool triple = sigil == '{';
	const char *close_tag = triple ? ps->ctag3 : ps->ctag;
	size_t close_len = triple ? ps->clen + 1 : ps->clen;
	if (sigil && strchr("#^/!>=&{", sigil))
		inner++;
	const char *c = memmem(s + inner, ps->len - inner, close_tag, close_len);
	if (!c)
		return parse_error(ps, line, "\"%s%s\" has no matching \"%s\"", ps->otag,
				   triple ? "{" : "", close_tag);
	size_t close = (size_t)(c - s), tag_end = close + close_len;

	/* Standalone: blanks from the line's start, blanks up to its end. */
	size_t line_begin = tag, next = tag_end;
	bool standalone = false;
	if (sigil && strchr("#^/!>=", sigil)) {
		size_t b = tag, e = tag_end;
		while (b > text_start && is_blank(s[b - 1]))
			b--;
		while (e < ps->len && is_blank(s[e]))
			e++;
		if (begins_line(ps, b)) {
			if (e == ps->len || s[e] == '\n')
				standalone = true, next = e + (e < ps->len);
			else if (s[e] == '\r' && s[e + 1] == '\n')
				standalone = true, next = e + 2;
		}
		if (standalone)
			line_begin = b;
	}
	if (line_begin > text_start)
		add_text(ps, text_start, line_begin, ps->line);
	if (!standalone && begins_line(ps, tag))
		add_text(ps, tag, tag, line);

	struct node n = { .line = line };
	int r = 0;
	switch (sigil) {
	case '!':
		break;
	case '=':
		r = set_delimiters(ps, tag, tag_end, inner, close, line);
		break;
	case '#':
	case '^':
		n.kind = sigil == '#' ? NODE_SECTION : NODE_INVERTED;
		r = parse_name(ps, &n, inner, close, true);
		if (r == 0)
			r = open_section(ps, &n);
		break;
	case '/':
		r = parse_name(ps, &n, inner, close, false);
		if (r == 0)
			r = close_section(ps, &n);
		break;
	case '>':
		n.kind = NODE_PARTIAL;
		n.standalone = standalone;
		n.text = s + line_begin;
		n.len = tag - line_begin;
		r = parse_name(ps, &n, inner, close, false);
		if (r == 0)
			add_node(ps, &n);
		break;
	default:
		n.kind = sigil == '&' || triple ? NODE_RAW : NODE_VAR;
		r = parse_name(ps, &n, inner, close, true);
		if (r == 0)
			add_node(ps, &n);
		break;
	}
	ps->line += count_lines(s + text_start, next - text_start);
	ps->pos = next;
	return r;
}

static int parse(struct parser *ps)
{
	while (ps->pos < ps->len) {
		size_t start = ps->pos;
		const char *o = memmem(ps->src + start, ps->len - start, ps->otag, ps->olen);
		if (!o) {
			add_text(ps, start, ps->len, ps->line);
			break;
		}
		int r = parse_tag(ps, start, (size_t)(o - ps->src));
		if (r < 0)
			return r;
	}
	if (ps->nopen) {
		const struct node *n = &ps->nodes[ps->open[ps->nopen - 1]];
		return parse_error(ps, n->line, "section \"%s\" is not closed", n->name);
	}
	return 0;
}

int mustache_compile(const char *text, struct mustache **out, struct strbuf *err)
{
	struct parser ps = {
		.a = arena_new(),
		.line = 1,
		.otag = "{{",
		.ctag = "}}",
		.ctag3 = "}}}",
		.olen = 2,
		.clen = 2,
		.err = err,
	};
	ps.len = strlen(text);
	ps.src = arena_memdup(ps.a, text, ps.len + 1);
	int r = parse(&ps);
	if (r < 0) {
		free(ps.nodes);
		arena_free(ps.a);
		return r;
	}
	struct mustache *t = arena_alloc(ps.a, sizeof(*t));
	t->a = ps.a;
	t->n = ps.n;
	t->nodes = ps.n ? arena_memdup(ps.a, ps.nodes, ps.n * sizeof(*ps.nodes)) : NULL;
	free(ps.nodes);
	*out = t;
	return 0;
}

void mustache_free(struct mustache *t)
{
	if (t)
		arena_free(t->a);
}

/* Renderer */

struct render {
	const struct mustache_partials *partials;
	unsigned flags;
	struct strbuf *out, *err;
	size_t out_start, max_output;
	size_t steps, max_steps;
	unsigned depth;					/* sections and partials entered */
	const struct jv *stack[MUSTACHE_MAX_DEPTH + 1]; /* contexts, innermost last */
	size_t nstack;
	struct strbuf indent; /* indentation of the standalone partials entered */
	size_t indent_start;  /* the current one is indent.buf[indent_start..] */
	const char *partial;  /* innermost partial, NULL in the top template */
};

static int render_error(struct render *r, int code, unsigned line, const char *fmt, ...)
	printf_like(4, 5);
static int render_error(struct render *r, int code, unsigned line, const char *fmt, ...)
{
	if (r->err) {
		va_list ap;
		sb_reset(r->err);
		if (r->partial)
			sb_addf(r->err, "partial \"%s\": ", r->partial);
		sb_addf(r->err, "line %u: ", line);
		va_start(ap, fmt);
		sb_vaddf(r->err, fmt, ap);
		va_end(ap);
	}
	return code;
}

static int put(struct render *r, unsigned line, const char *p, size_t n)
{
	if (n > r->max_output - (r->out->len - r->out_start))
		return render_error(r, -EFBIG, line, "output larger than %zu bytes", r->max_output);
	sb_add(r->out, p, n);
	return 0;
}

static int put_escaped(struct render *r, unsigned line, const char *p, size_t n)
{
	size_t done = 0;
	for (size_t i = 0; i < n; i++) {
		const char *entity;
		switch (p[i]) {
		case '&':
			entity = "&amp;";
			break;
		case '"':
			entity = "&quot;";
			break;
		case '<':
			entity = "&lt;";
			break;
		case '>':
			entity = "&gt;";
			break;
		default:
			continue;
		}
		int err = put(r, line, p + done, i - done);
		if (err == 0)
			err = put(r, line, entity, strlen(entity));
		if (err)
			return err;
		done = i + 1;
	}
	return put(r, line, p + done, n - done);
}

static int step(struct render *r, unsigned line)
{
	if (++r->steps > r->max_steps)
		return render_error(r, -EFBIG, line, "more than %zu steps", r->max_steps);
	return 0;
}

static const struct jv *lookup(const struct render *r, const struct node *n)
{
	if (n->npath == 0)
		return r->nstack ? r->stack[r->nstack - 1] : NULL;
	const struct jv *v = NULL;
	for (size_t i = r->nstack; !v && i-- > 0;)
		v = jv_get(r->stack[i], n->path[0]);
	for (size_t k = 1; v && k < n->npath; k++)
		v = jv_get(v, n->path[k]);
	return v;
}

static int undefined(struct render *r, const struct node *n)
{
	if (!(r->flags & MUSTACHE_STRICT))
		return 0;
	return render_error(r, -ENOENT, n->line, "\"%s\" is not defined", n->name);
}

static bool truthy(const struct jv *v)
{
	bool b = false;
	if (!v)
		return false;
	switch (v->type) {
	case JV_NULL:
		return false;
	case JV_BOOL:
		return jv_as_bool(v, &b) && b;
	case JV_ARRAY:
		return v->arr.n > 0;
	default:
		return true;
	}
}

static int print_value(struct render *r, const struct node *n)
{
	static const char *const unprintable[] = {
		[JV_NULL] = "null",
		[JV_ARRAY] = "a list",
		[JV_OBJECT] = "an object",
	};
	const struct jv *v = lookup(r, n);
	if (!v)
		return undefined(r, n);
	switch (v->type) {
	case JV_NULL:
	case JV_ARRAY:
	case JV_OBJECT:
		if (!(r->flags & MUSTACHE_STRICT))
			return 0;
		return render_error(r, -EINVAL, n->line, "\"%s\" is %s, not a printable value",
				    n->name, unprintable[v->type]);
	default:
		if (n->kind == NODE_VAR && !(r->flags & MUSTACHE_NO_ESCAPE))
			return put_escaped(r, n->line, v->s.text, v->s.len);
		return put(r, n->line, v->s.text, v->s.len);
	}
}

static int render_text(struct render *r, const struct node *n)
{
	const char *indent = r->indent.buf + r->indent_start;
	size_t ilen = r->indent.len - r->indent_start;
	if (!ilen)
		return put(r, n->line, n->text, n->len);
	int err = n->starts_line ? put(r, n->line, indent, ilen) : 0;
	const char *p = n->text, *end = n->text + n->len;
	while (err == 0 && p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *q = nl ? nl + 1 : end;
		err = put(r, n->line, p, (size_t)(q - p));
		p = q;
		if (err == 0 && nl && p < end)
			err = put(r, n->line, indent, ilen);
	}
	return err;
}

static int enter(struct render *r, unsigned line)
{
	if (r->depth == MUSTACHE_MAX_DEPTH)
		return render_error(r, -ELOOP, line, "nested deeper than %d sections and partials",
				    MUSTACHE_MAX_DEPTH);
	r->depth++;
	return 0;
}

static int render_nodes(struct render *r, const struct node *nodes, size_t begin, size_t end);

/* The body of section nodes[i], with @ctx pushed when not NULL. */
static int render_body(struct render *r, const struct node *nodes, size_t i, const struct jv *ctx)
{
	int err = enter(r, nodes[i].line);
	if (err)
		return err;
	if (ctx)
		r->stack[r->nstack++] = ctx;
	err = render_nodes(r, nodes, i + 1, nodes[i].end);
	if (ctx)
		r->nstack--;
	r->depth--;
	return err;
}

static int render_section(struct render *r, const struct node *nodes, size_t i)
{
	const struct node *n = &nodes[i];
	const struct jv *v = lookup(r, n);
	if (!v) {
		int err = undefined(r, n);
		if (err)
			return err;
	}
	if (n->kind == NODE_INVERTED)
		return truthy(v) ? 0 : render_body(r, nodes, i, NULL);
	if (!truthy(v))
		return 0;
	if (v->type != JV_ARRAY)
		return render_body(r, nodes, i, v);
	for (size_t k = 0; k < v->arr.n; k++) {
		int err = step(r, n->line);
		if (err == 0)
			err = render_body(r, nodes, i, v->arr.items[k]);
		if (err)
			return err;
	}
	return 0;
}

static int render_partial(struct render *r, const struct node *n)
{
	const struct mustache_partials *p = r->partials;
	const struct mustache *t = p && p->lookup ? p->lookup(p->ctx, n->name) : NULL;
	if (!t) {
		if (!(r->flags & MUSTACHE_STRICT))
			return 0;
		return render_error(r, -ENOENT, n->line, "partial \"%s\" is not defined", n->name);
	}
	int err = enter(r, n->line);
	if (err)
		return err;
	size_t indent_len = r->indent.len, indent_start = r->indent_start;
	const char *partial = r->partial;
	if (n->standalone)
		sb_add(&r->indent, n->text, n->len);
	else
		r->indent_start = r->indent.len;
	r->partial = n->name;
	err = render_nodes(r, t->nodes, 0, t->n);
	r->partial = partial;
	sb_truncate(&r->indent, indent_len);
	r->indent_start = indent_start;
	r->depth--;
	return err;
}

static int render_nodes(struct render *r, const struct node *nodes, size_t begin, size_t end)
{
	for (size_t i = begin; i < end; i++) {
		const struct node *n = &nodes[i];
		int err = step(r, n->line);
		if (err)
			return err;
		switch (n->kind) {
		case NODE_TEXT:
			err = render_text(r, n);
			break;
		case NODE_VAR:
		case NODE_RAW:
			err = print_value(r, n);
			break;
		case NODE_SECTION:
		case NODE_INVERTED:
			err = render_section(r, nodes, i);
			i = n->end - 1;
			break;
		case NODE_PARTIAL:
			err = render_partial(r, n);
			break;
		}
		if (err)
			return err;
	}
	return 0;
}

int mustache_render(const struct mustache *t, const struct jv *data,
		    const struct mustache_partials *p, const struct mustache_opts *opts,
		    struct strbuf *out, struct strbuf *err)
{
	struct render r = {
		.partials = p,
		.flags = opts ? opts->flags : 0,
		.out = out,
		.err = err,
		.out_start = out->len,
		.max_output =
			opts && opts->max_output ? opts->max_output : MUSTACHE_DEFAULT_MAX_OUTPUT,
		.max_steps = opts && opts->max_steps ? opts->max_steps : MUSTACHE_DEFAULT_MAX_STEPS,
	};
	sb_init(&r.indent);
	if (data)
		r.stack[r.nstack++] = data;
	int ret = render_nodes(&r, t->nodes, 0, t->n);
	sb_free(&r.indent);
	if (ret < 0)
		sb_truncate(out, r.out_start);
	return ret;
}
