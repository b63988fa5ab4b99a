/*
 * The selector parser: recursive descent straight over the text (no separate
 * token list), building canonical nodes bottom-up through the builders in
 * sel_internal.h. Recursion happens only at "(", whose nesting is capped, so
 * hostile input cannot exhaust the stack; runs of "!" are folded in a loop.
 *
 * Accepted beyond the grammar in sel.h, as Calico's tokenizer does: "notin",
 * "startswith" and "endswith" written as one word, an empty set "{}", and a
 * trailing comma in a set. Errors name the first offending byte offset.
 */
#include "sel_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define SEL_MAX_DEPTH 100
#define SEL_MAX_KEY   512

struct parser {
	const char *text;
	size_t pos;
	int depth;
	struct strbuf *err;
};

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

static bool is_key_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '.' || c == '/' || c == '-';
}

static size_t skip_space_from(const struct parser *p, size_t pos)
{
	while (is_space(p->text[pos]))
		pos++;
	return pos;
}

static void skip_space(struct parser *p)
{
	p->pos = skip_space_from(p, p->pos);
}

static char cur(const struct parser *p)
{
	return p->text[p->pos];
}

static size_t word_len(const struct parser *p, size_t pos)
{
	size_t n = 0;
	while (is_key_char(p->text[pos + n]))
		n++;
	return n;
}

static bool word_is(const struct parser *p, size_t pos, size_t len, const char *word)
{
	return len == strlen(word) && memcmp(p->text + pos, word, len) == 0;
}

static bool at(const struct parser *p, const char *s)
{
	return strncmp(p->text + p->pos, s, strlen(s)) == 0;
}

static void *fail(struct parser *p, size_t pos, const char *fmt, ...) printf_like(3, 4);

/* Records the error and returns NULL, so that parse functions can return it. */
static void *fail(struct parser *p, size_t pos, const char *fmt, ...)
{
	va_list ap;

	if (!p->err)
		return NULL;
	sb_addf(p->err, "position %zu: ", pos);
	va_start(ap, fmt);
	sb_vaddf(p->err, fmt, ap);
	va_end(ap);
	return NULL;
}

/* For a place where nothing that starts here can fit. */
static void *fail_unexpected(struct parser *p, size_t pos)
{
	static const char *const pairs[] = { "&&", "||", "==", "!=" };
	unsigned char c = p->text[pos];

	if (!c)
		return fail(p, pos, "unexpected end of selector");
	if (c == '"' || c == '\'')
		return fail(p, pos, "unexpected string");
	for (size_t i = 0; i < ARRAY_SIZE(pairs); i++)
		if (strncmp(p->text + pos, pairs[i], 2) == 0)
			return fail(p, pos, "unexpected \"%s\"", pairs[i]);
	if (c > ' ' && c < 0x7f)
		return fail(p, pos, "unexpected \"%c\"", c);
	return fail(p, pos, "unexpected byte 0x%02x", c);
}

/* A label at the current position; NULL (and no error) when there is none. */
static char *parse_key(struct parser *p, bool *failed)
{
	size_t len = word_len(p, p->pos);
	char *key;

	*failed = false;
	if (!len)
		return NULL;
	if (len > SEL_MAX_KEY) {
		*failed = true;
		return fail(p, p->pos, "label longer than %d characters", SEL_MAX_KEY);
	}
	key = xstrndup(p->text + p->pos, len);
	p->pos += len;
	return key;
}

/* A quoted string at the current position, or NULL after recording an error. */
static char *parse_quoted(struct parser *p)
{
	char q = cur(p);
	const char *end = strchr(p->text + p->pos + 1, q);
	char *s;

	if (!end)
		return fail(p, p->pos, "unterminated string");
	s = xstrndup(p->text + p->pos + 1, end - (p->text + p->pos + 1));
	p->pos = end + 1 - p->text;
	return s;
}

static bool at_quote(const struct parser *p)
{
	return cur(p) == '"' || cur(p) == '\'';
}

static struct sel *parse_set(struct parser *p, enum sel_kind kind, const char *key, const char *op)
{
	char **values = NULL;
	size_t n = 0, cap = 0;
	struct sel *s = NULL;

	skip_space(p);
	if (cur(p) != '{')
		return fail(p, p->pos, "expected \"{\" after \"%s\"", op);
	p->pos++;
	for (;;) {
		skip_space(p);
		if (cur(p) == '}')
			break;
		if (!at_quote(p)) {
			fail(p, p->pos, "expected a quoted string or \"}\" in set");
			goto out;
		}
		GROW(values, cap, n + 1);
		values[n] = parse_quoted(p);
		if (!values[n])
			goto out;
		n++;
		skip_space(p);
		if (cur(p) == ',') {
			p->pos++;
			continue;
		}
		if (cur(p) != '}') {
			fail(p, p->pos, "expected \",\" or \"}\" in set");
			goto out;
		}
		break;
	}
	p->pos++;
	s = sel_set(kind, key, (const char *const *)values, n);
out:
	for (size_t i = 0; i < n; i++)
		free(values[i]);
	free(values);
	return s;
}

/* Matches "<first> <second>" (any spacing, including none); advances past it. */
static bool two_words(struct parser *p, size_t len, const char *first, const char *second)
{
	size_t q;

	if (!word_is(p, p->pos, len, first))
		return false;
	q = skip_space_from(p, p->pos + len);
	if (!word_is(p, q, word_len(p, q), second))
		return false;
	p->pos = q + strlen(second);
	return true;
}

static struct sel *parse_comparison(struct parser *p, const char *key, size_t key_len)
{
	size_t len;
	enum sel_kind kind;
	const char *op;
	char *value;
	struct sel *s;

	skip_space(p);
	len = word_len(p, p->pos);
	if (at(p, "==")) {
		kind = SEL_EQ, op = "==", p->pos += 2;
	} else if (at(p, "!=")) {
		kind = SEL_NEQ, op = "!=", p->pos += 2;
	} else if (word_is(p, p->pos, len, "in")) {
		kind = SEL_IN, op = "in", p->pos += len;
	} else if (word_is(p, p->pos, len, "notin")) {
		kind = SEL_NOT_IN, op = "not in", p->pos += len;
	} else if (two_words(p, len, "not", "in")) {
		kind = SEL_NOT_IN, op = "not in";
	} else if (word_is(p, p->pos, len, "contains")) {
		kind = SEL_CONTAINS, op = "contains", p->pos += len;
	} else if (word_is(p, p->pos, len, "startswith")) {
		kind = SEL_STARTS_WITH, op = "starts with", p->pos += len;
	} else if (two_words(p, len, "starts", "with")) {
		kind = SEL_STARTS_WITH, op = "starts with";
	} else if (word_is(p, p->pos, len, "endswith")) {
		kind = SEL_ENDS_WITH, op = "ends with", p->pos += len;
	} else if (two_words(p, len, "ends", "with")) {
		kind = SEL_ENDS_WITH, op = "ends with";
	} else {
		return fail(p, p->pos,
			    "expected \"==\", \"!=\", \"in\", \"not in\", \"contains\", "
			    "\"starts with\" or \"ends with\" after label \"%.*s\"",
			    (int)key_len, key);
	}

	if (kind == SEL_IN || kind == SEL_NOT_IN)
		return parse_set(p, kind, key, op);
	skip_space(p);
	if (!at_quote(p))
		return fail(p, p->pos, "expected a quoted string after \"%s\"", op);
	value = parse_quoted(p);
	if (!value)
		return NULL;
	s = sel_leaf(kind, key, value);
	free(value);
	return s;
}

/* has(k), all() or global(); the current position is just after "(". */
static struct sel *parse_call(struct parser *p, const char *name)
{
	struct sel *s;
	char *key = NULL;
	bool failed;

	skip_space(p);
	if (strcmp(name, "has") == 0) {
		key = parse_key(p, &failed);
		if (!key)
			return failed ? NULL : fail(p, p->pos, "expected a label after \"has(\"");
		skip_space(p);
	}
	if (cur(p) != ')') {
		free(key);
		return fail(p, p->pos, "expected \")\" to close \"%s(\"", name);
	}
	p->pos++;
	if (key) {
		s = sel_leaf(SEL_HAS, key, NULL);
		free(key);
		return s;
	}
	return name[0] == 'a' ? sel_all() : sel_global();
}

static struct sel *parse_expr(struct parser *p, enum sel_kind kind);

static struct sel *parse_primary(struct parser *p)
{
	static const char *const calls[] = { "has", "all", "global" };
	size_t start, q;
	struct sel *s;
	char *key;
	bool failed;

	skip_space(p);
	start = p->pos;
	if (cur(p) == '(') {
		if (p->depth >= SEL_MAX_DEPTH)
			return fail(p, start, "selector nested too deeply");
		p->depth++;
		p->pos++;
		s = parse_expr(p, SEL_OR);
		p->depth--;
		if (!s)
			return NULL;
		skip_space(p);
		if (cur(p) != ')') {
			sel_free(s);
			return fail(
				p, p->pos,
				"expected \"&&\", \"||\" or \")\" to close \"(\" at position %zu",
				start);
		}
		p->pos++;
		return s;
	}

	key = parse_key(p, &failed);
	if (!key)
		return failed ? NULL : fail_unexpected(p, start);
	q = skip_space_from(p, p->pos);
	if (p->text[q] == '(') {
		for (size_t i = 0; i < ARRAY_SIZE(calls); i++) {
			if (strcmp(key, calls[i]) == 0) {
				p->pos = q + 1;
				s = parse_call(p, calls[i]);
				free(key);
				return s;
			}
		}
	}
	s = parse_comparison(p, key, p->pos - start);
	free(key);
	return s;
}

static struct sel *parse_unary(struct parser *p)
{
	bool negate = false;
	struct sel *s;

	for (;;) {
		skip_space(p);
		if (cur(p) != '!')
			break;
		if (at(p, "!="))
			return fail_unexpected(p, p->pos);
		negate = !negate;
		p->pos++;
	}
	s = parse_primary(p);
	return s && negate ? sel_negate(s) : s;
}

/* An || list of && lists (kind SEL_OR) or an && list of unary terms (SEL_AND). */
static struct sel *parse_expr(struct parser *p, enum sel_kind kind)
{
	const char *op = kind == SEL_OR ? "||" : "&&";
	struct sel **kids = NULL, *s;
	size_t n = 0, cap = 0;

	for (;;) {
		s = kind == SEL_OR ? parse_expr(p, SEL_AND) : parse_unary(p);
		if (!s)
			goto fail;
		GROW(kids, cap, n + 1);
		kids[n++] = s;
		skip_space(p);
		if (!at(p, op))
			break;
		p->pos += 2;
	}
	s = n == 1 ? kids[0] : sel_junction(kind, kids, n);
	free(kids);
	return s;
fail:
	for (size_t i = 0; i < n; i++)
		sel_free(kids[i]);
	free(kids);
	return NULL;
}

int sel_parse(const char *text, struct sel **out, struct strbuf *err)
{
	struct parser p = { .text = text, .err = err };
	struct sel *s;

	skip_space(&p);
	if (!cur(&p)) {
		*out = sel_all();
		return 0;
	}
	s = parse_expr(&p, SEL_OR);
	if (!s)
		return -EINVAL;
	skip_space(&p);
	if (cur(&p)) {
		sel_free(s);
		if (cur(&p) == ')')
			fail_unexpected(&p, p.pos);
		else
			fail(&p, p.pos, "expected \"&&\", \"||\" or end of selector");
		return -EINVAL;
	}
	*out = s;
	return 0;
}
