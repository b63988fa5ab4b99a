/*
 * Selector ASTs: builders that keep every tree canonical, the canonical text
 * form, evaluation, and the derived selectors (key prefixing, Kubernetes label
 * selectors). Parsing lives in sel_parse.c.
 *
 * Every node is malloc'ed and owned by its parent; sel_free frees a whole tree.
 * Trees are canonical by construction (see sel_internal.h), so two selectors
 * are equivalent in the sense of sel.h exactly when their trees are equal.
 * Evaluation never allocates.
 */
#include "sel_internal.h"

#include <stdlib.h>
#include <string.h>

#define NAMESPACE_LABEL "projectcalico.org/namespace"

static struct sel *node_new(enum sel_kind kind)
{
	struct sel *s = xcalloc(1, sizeof(*s));
	s->kind = kind;
	return s;
}

void sel_free(struct sel *s)
{
	if (!s)
		return;
	free(s->key);
	free(s->value);
	for (size_t i = 0; s->values && i < s->n; i++)
		free(s->values[i]);
	free(s->values);
	for (size_t i = 0; s->kids && i < s->n; i++)
		sel_free(s->kids[i]);
	free(s->kids);
	free(s);
}

/* Frees a junction node but not its children (they were moved elsewhere). */
static void free_shell(struct sel *s)
{
	free(s->kids);
	free(s);
}

struct sel *sel_leaf(enum sel_kind kind, const char *key, const char *value)
{
	struct sel *s = node_new(kind);
	if (key)
		s->key = xstrdup(key);
	if (value)
		s->value = xstrdup(value);
	return s;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

struct sel *sel_set(enum sel_kind kind, const char *key, const char *const *values, size_t n)
{
	struct sel *s = node_new(kind);
	s->key = xstrdup(key);
	s->values = xcalloc(n, sizeof(*s->values));
	for (size_t i = 0; i < n; i++)
		s->values[i] = xstrdup(values[i]);
	if (n > 1)
		qsort(s->values, n, sizeof(*s->values), cmp_str);
	size_t out = 0;
	for (size_t i = 0; i < n; i++) {
		if (out && strcmp(s->values[out - 1], s->values[i]) == 0)
			free(s->values[i]);
		else
			s->values[out++] = s->values[i];
	}
	s->n = out;
	return s;
}

struct sel *sel_negate(struct sel *s)
{
	struct sel *kid;

	switch (s->kind) {
	case SEL_EQ:
		s->kind = SEL_NEQ;
		return s;
	case SEL_NEQ:
		s->kind = SEL_EQ;
		return s;
	case SEL_IN:
		s->kind = SEL_NOT_IN;
		return s;
	case SEL_NOT_IN:
		s->kind = SEL_IN;
		return s;
	case SEL_NOT:
		kid = s->kids[0];
		s->n = 0;
		free_shell(s);
		return kid;
	default:
		kid = s;
		s = node_new(SEL_NOT);
		s->kids = xmalloc(sizeof(*s->kids));
		s->kids[0] = kid;
		s->n = 1;
		return s;
	}
}

struct keyed {
	char *text;
	struct sel *s;
};

static int cmp_keyed(const void *a, const void *b)
{
	return strcmp(((const struct keyed *)a)->text, ((const struct keyed *)b)->text);
}

struct sel *sel_junction(enum sel_kind kind, struct sel **kids, size_t n)
{
	struct keyed *v = NULL;
	size_t nv = 0, cap = 0;
	bool absorbed = false;

	for (size_t i = 0; i < n; i++) {
		struct sel *k = kids[i];
		if (k->kind == kind) {
			GROW(v, cap, nv + k->n);
			for (size_t j = 0; j < k->n; j++)
				v[nv++].s = k->kids[j];
			free_shell(k);
		} else if (k->kind == SEL_ALL) {
			absorbed |= kind == SEL_OR;
			sel_free(k);
		} else {
			GROW(v, cap, nv + 1);
			v[nv++].s = k;
		}
	}
	if (absorbed || nv == 0) {
		for (size_t i = 0; i < nv; i++)
			sel_free(v[i].s);
		free(v);
		return node_new(SEL_ALL);
	}
	if (nv == 1) {
		struct sel *only = v[0].s;
		free(v);
		return only;
	}

	for (size_t i = 0; i < nv; i++)
		v[i].text = sel_canonical(v[i].s);
	qsort(v, nv, sizeof(*v), cmp_keyed);

	struct sel *s = node_new(kind);
	s->kids = xcalloc(nv, sizeof(*s->kids));
	for (size_t i = 0; i < nv; i++) {
		if (s->n && strcmp(v[i - 1].text, v[i].text) == 0)
			sel_free(v[i].s);
		else
			s->kids[s->n++] = v[i].s;
	}
	for (size_t i = 0; i < nv; i++)
		free(v[i].text);
	free(v);
	if (s->n == 1) {
		struct sel *only = s->kids[0];
		free_shell(s);
		return only;
	}
	return s;
}

struct sel *sel_clone(const struct sel *s)
{
	struct sel *c = node_new(s->kind);
	if (s->key)
		c->key = xstrdup(s->key);
	if (s->value)
		c->value = xstrdup(s->value);
	c->n = s->n;
	if (s->values) {
		c->values = xcalloc(s->n, sizeof(*c->values));
		for (size_t i = 0; i < s->n; i++)
			c->values[i] = xstrdup(s->values[i]);
	}
	if (s->kids) {
		c->kids = xcalloc(s->n, sizeof(*c->kids));
		for (size_t i = 0; i < s->n; i++)
			c->kids[i] = sel_clone(s->kids[i]);
	}
	return c;
}

/* Printing. */

enum {
	PREC_OR,
	PREC_AND,
	PREC_NOT
};

static void print_string(struct strbuf *out, const char *v)
{
	/*
	 * No escapes in the language: quote with the kind the value lacks. With
	 * both (only the constructors can make that) nothing parses back.
	 */
	char q = strchr(v, '"') && !strchr(v, '\'') ? '\'' : '"';
	sb_addc(out, q);
	sb_adds(out, v);
	sb_addc(out, q);
}

static void print_node(const struct sel *s, struct strbuf *out, int prec)
{
	static const char *const ops[] = {
		[SEL_EQ] = " == ",
		[SEL_NEQ] = " != ",
		[SEL_CONTAINS] = " contains ",
		[SEL_STARTS_WITH] = " starts with ",
		[SEL_ENDS_WITH] = " ends with ",
	};
	bool parens;

	switch (s->kind) {
	case SEL_ALL:
		sb_adds(out, "all()");
		break;
	case SEL_GLOBAL:
		sb_adds(out, "global()");
		break;
	case SEL_HAS:
		sb_addf(out, "has(%s)", s->key);
		break;
	case SEL_EQ:
	case SEL_NEQ:
	case SEL_CONTAINS:
	case SEL_STARTS_WITH:
	case SEL_ENDS_WITH:
		sb_adds(out, s->key);
		sb_adds(out, ops[s->kind]);
		print_string(out, s->value);
		break;
	case SEL_IN:
	case SEL_NOT_IN:
		sb_adds(out, s->key);
		sb_adds(out, s->kind == SEL_IN ? " in {" : " not in {");
		for (size_t i = 0; i < s->n; i++) {
			if (i)
				sb_adds(out, ", ");
			print_string(out, s->values[i]);
		}
		sb_addc(out, '}');
		break;
	case SEL_NOT:
		sb_addc(out, '!');
		print_node(s->kids[0], out, PREC_NOT);
		break;
	case SEL_AND:
	case SEL_OR:
		parens = s->kind == SEL_AND ? prec >= PREC_NOT : prec >= PREC_AND;
		if (parens)
			sb_addc(out, '(');
		for (size_t i = 0; i < s->n; i++) {
			if (i)
				sb_adds(out, s->kind == SEL_AND ? " && " : " || ");
			print_node(s->kids[i], out, s->kind == SEL_AND ? PREC_AND : PREC_OR);
		}
		if (parens)
			sb_addc(out, ')');
		break;
	}
}

void sel_print(const struct sel *s, struct strbuf *out)
{
	print_node(s, out, PREC_OR);
}

char *sel_canonical(const struct sel *s)
{
	struct strbuf sb = STRBUF_INIT;
	sb_init(&sb);
	sel_print(s, &sb);
	return sb_detach(&sb);
}

bool sel_equal(const struct sel *a, const struct sel *b)
{
	if (a->kind != b->kind || a->n != b->n || !streq(a->key, b->key) ||
	    !streq(a->value, b->value))
		return false;
	for (size_t i = 0; a->values && i < a->n; i++)
		if (strcmp(a->values[i], b->values[i]) != 0)
			return false;
	for (size_t i = 0; a->kids && i < a->n; i++)
		if (!sel_equal(a->kids[i], b->kids[i]))
			return false;
	return true;
}

/* Evaluation. */

static const char *get_label(const void *ctx, const char *key)
{
	return labels_get(ctx, key);
}

struct sel_labels sel_labels_of(const struct br_labels *l)
{
	return (struct sel_labels){ .get = get_label, .ctx = l };
}

static bool in_set(const struct sel *s, const char *v)
{
	return bsearch(&v, s->values, s->n, sizeof(*s->values), cmp_str) != NULL;
}

bool sel_eval(const struct sel *s, const struct sel_labels *labels)
{
	const char *v = s->key ? labels->get(labels->ctx, s->key) : NULL;

	switch (s->kind) {
	case SEL_ALL:
		return true;
	case SEL_GLOBAL:
		return !labels->get(labels->ctx, NAMESPACE_LABEL);
	case SEL_HAS:
		return v;
	case SEL_EQ:
		return v && strcmp(v, s->value) == 0;
	case SEL_NEQ:
		return !v || strcmp(v, s->value) != 0;
	case SEL_IN:
		return v && in_set(s, v);
	case SEL_NOT_IN:
		return !v || !in_set(s, v);
	case SEL_CONTAINS:
		return v && strstr(v, s->value);
	case SEL_STARTS_WITH:
		return v && str_has_prefix(v, s->value);
	case SEL_ENDS_WITH:
		return v && str_has_suffix(v, s->value);
	case SEL_NOT:
		return !sel_eval(s->kids[0], labels);
	case SEL_AND:
		for (size_t i = 0; i < s->n; i++)
			if (!sel_eval(s->kids[i], labels))
				return false;
		return true;
	case SEL_OR:
		for (size_t i = 0; i < s->n; i++)
			if (sel_eval(s->kids[i], labels))
				return true;
		return false;
	}
	return false;
}

/* Public constructors. */

struct sel *sel_all(void)
{
	return node_new(SEL_ALL);
}

struct sel *sel_global(void)
{
	return node_new(SEL_GLOBAL);
}

struct sel *sel_has(const char *key)
{
	return sel_leaf(SEL_HAS, key, NULL);
}

struct sel *sel_eq(const char *key, const char *value)
{
	return sel_leaf(SEL_EQ, key, value);
}

struct sel *sel_neq(const char *key, const char *value)
{
	return sel_leaf(SEL_NEQ, key, value);
}

struct sel *sel_in(const char *key, const char *const *values, size_t n)
{
	return sel_set(SEL_IN, key, values, n);
}

struct sel *sel_not_in(const char *key, const char *const *values, size_t n)
{
	return sel_set(SEL_NOT_IN, key, values, n);
}

struct sel *sel_not(struct sel *s)
{
	return sel_negate(s);
}

struct sel *sel_and(struct sel *a, struct sel *b)
{
	struct sel *kids[] = { a, b };
	return sel_junction(SEL_AND, kids, 2);
}

struct sel *sel_or(struct sel *a, struct sel *b)
{
	struct sel *kids[] = { a, b };
	return sel_junction(SEL_OR, kids, 2);
}

/* Derived selectors. */

static struct sel *prefixed(const struct sel *s, const char *prefix)
{
	struct sel *r;
	char *key;

	switch (s->kind) {
	case SEL_ALL:
	case SEL_GLOBAL:
		return node_new(s->kind);
	case SEL_NOT:
		return sel_negate(prefixed(s->kids[0], prefix));
	case SEL_AND:
	case SEL_OR: {
		struct sel **kids = xcalloc(s->n, sizeof(*kids));
		for (size_t i = 0; i < s->n; i++)
			kids[i] = prefixed(s->kids[i], prefix);
		/* Prefixing can change the canonical order, so sort again. */
		r = sel_junction(s->kind, kids, s->n);
		free(kids);
		return r;
	}
	default:
		break;
	}
	key = xmalloc(strlen(prefix) + strlen(s->key) + 1);
	strcpy(stpcpy(key, prefix), s->key);
	if (s->kind == SEL_IN || s->kind == SEL_NOT_IN)
		r = sel_set(s->kind, key, (const char *const *)s->values, s->n);
	else
		r = sel_leaf(s->kind, key, s->value);
	free(key);
	return r;
}

struct sel *sel_prefix_keys(const struct sel *s, const char *prefix)
{
	return prefixed(s, prefix);
}

bool sel_is_all(const struct sel *s)
{
	return s->kind == SEL_ALL;
}

bool sel_required_label(const struct sel *s, const char **key, const char **value)
{
	const struct sel *found = NULL;

	if (s->kind == SEL_EQ) {
		found = s;
	} else if (s->kind == SEL_AND) {
		for (size_t i = 0; i < s->n && !found; i++)
			if (s->kids[i]->kind == SEL_EQ)
				found = s->kids[i];
	}
	if (!found)
		return false;
	*key = found->key;
	*value = found->value;
	return true;
}

struct sel *sel_from_k8s(const struct br_label_selector *ls)
{
	size_t n = ls->match_labels.n + ls->n_exprs, k = 0;
	struct sel **kids = xcalloc(n, sizeof(*kids));

	for (size_t i = 0; i < ls->match_labels.n; i++)
		kids[k++] = sel_eq(ls->match_labels.v[i].key, ls->match_labels.v[i].value);
	for (size_t i = 0; i < ls->n_exprs; i++) {
		const struct br_label_req *r = &ls->exprs[i];
		const char *const *values = (const char *const *)r->values;
		if (streq(r->op, "In"))
			kids[k++] = sel_in(r->key, values, r->n_values);
		else if (streq(r->op, "NotIn"))
			kids[k++] = sel_not_in(r->key, values, r->n_values);
		else if (streq(r->op, "Exists"))
			kids[k++] = sel_has(r->key);
		else if (streq(r->op, "DoesNotExist"))
			kids[k++] = sel_not(sel_has(r->key));
		else /* unvalidated operator: match nothing rather than too much */
			kids[k++] = sel_not(sel_all());
	}
	struct sel *s = sel_junction(SEL_AND, kids, k);
	free(kids);
	return s;
}
