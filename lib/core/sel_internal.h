/*
 * The selector AST shared by lib/sel.c (nodes, canonical form, printing,
 * evaluation) and lib/sel_parse.c (the parser). Not a public header.
 *
 * Invariant: every struct sel reachable from outside lib/sel*.c is canonical
 * (see sel.h). The builders below keep it: they take canonical children and
 * return a canonical node, so a tree is canonicalised bottom-up as it is built.
 */
#ifndef BRINDLE_SEL_INTERNAL_H
#define BRINDLE_SEL_INTERNAL_H

#include <brindle/core/sel.h>

enum sel_kind {
	SEL_ALL,
	SEL_GLOBAL,
	SEL_HAS,	 /* key */
	SEL_EQ,		 /* key, value */
	SEL_NEQ,	 /* key, value */
	SEL_IN,		 /* key, values[n] (sorted by strcmp, unique) */
	SEL_NOT_IN,	 /* key, values[n] */
	SEL_CONTAINS,	 /* key, value */
	SEL_STARTS_WITH, /* key, value */
	SEL_ENDS_WITH,	 /* key, value */
	SEL_NOT,	 /* kids[0]; never EQ, NEQ, IN, NOT_IN or NOT */
	SEL_AND,	 /* kids[n], n >= 2, sorted and unique by canonical text, no AND/ALL */
	SEL_OR,		 /* kids[n], n >= 2, sorted and unique by canonical text, no OR/ALL */
};

struct sel {
	enum sel_kind kind;
	char *key;
	char *value;
	char **values;
	struct sel **kids;
	size_t n; /* entries in values or kids */
};

/* A leaf: has, ==, !=, contains, starts with, ends with. Copies the strings. */
struct sel *sel_leaf(enum sel_kind kind, const char *key, const char *value);
/* in / not in; copies the strings, sorts and deduplicates them. */
struct sel *sel_set(enum sel_kind kind, const char *key, const char *const *values, size_t n);
/* !s with negations folded; takes ownership of @s. */
struct sel *sel_negate(struct sel *s);
/*
 * SEL_AND or SEL_OR over @kids[0..n); takes ownership of every kid (not of
 * the array). Flattens, drops/absorbs all(), sorts and deduplicates; n == 0
 * gives all().
 */
struct sel *sel_junction(enum sel_kind kind, struct sel **kids, size_t n);

#endif
