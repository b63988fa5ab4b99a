/*
 * Calico's selector language: parsing to an AST, a canonical text form, and
 * evaluation over label maps. Pure: no I/O, no logging.
 *
 * Grammar (precedence from loosest): a || b, a && b, !a, primary.
 *   primary: k == "v" | k != "v" | k in {"a", "b"} | k not in {...}
 *            | k contains "s" | k starts with "s" | k ends with "s"
 *            | has(k) | all() | global() | ( expr )
 * Label keys: [A-Za-z0-9_./-]+ (at most 512 chars). Strings in '...' or "...".
 * An empty (or all-whitespace) selector is all().
 *
 * Semantics: != and "not in" are true when the label is absent; ==, in,
 * contains, starts with, ends with are false when it is absent. global() is
 * true when the object has no label "projectcalico.org/namespace" (so it
 * selects non-namespaced things). all() is true.
 *
 * Strings have no escapes (as in Calico): a '...' string may hold " and a
 * "..." string may hold '. Also accepted, as Calico's tokenizer does: "notin",
 * "startswith", "endswith" as one word, empty sets {} and a trailing comma in a
 * set, whitespace between has/all/global and "(". Nesting of "(" is capped at
 * 100 levels.
 *
 * Canonical form: one spelling for equivalent selectors, used to name ip sets:
 * strings in double quotes, or in single quotes when the value contains a
 * double quote; single spaces around binary operators, "in" sets sorted (by
 * byte value) and deduplicated, && and || flattened with operands sorted and
 * deduplicated by their canonical text, !(k == v) printed as k != v,
 * !(k in {..}) as k not in {..}, !!x as x, all() dropped from && and
 * absorbing ||, parentheses only where needed (`a || b && c`,
 * `(a || b) && c`, `!(a && b)`, `!k contains "x"`). Every struct sel is kept
 * in this form, so sel_parse(sel_print(x)) prints identically.
 *
 * A value holding both quote kinds can only come from the constructors; it
 * prints in double quotes and that text does not parse back. Likewise a key
 * outside [A-Za-z0-9_./-] given to a constructor prints as is.
 */
#ifndef BRINDLE_SEL_H
#define BRINDLE_SEL_H

#include <stdbool.h>
#include <brindle/core/labels.h>
#include <brindle/core/strbuf.h>

struct sel; /* an immutable AST; owns its memory */

/*
 * Parse @text. On error returns -EINVAL, and writes a message to @err (if not
 * NULL) of the form: `position 7: expected "==", "!=", "in", ... after label "app"`
 * (position is a 0-based byte offset).
 */
int sel_parse(const char *text, struct sel **out, struct strbuf *err) must_check;
void sel_free(struct sel *s);
struct sel *sel_clone(const struct sel *s);

/* Appends the canonical form. */
void sel_print(const struct sel *s, struct strbuf *out);
/* Canonical form as a new string (caller frees). */
char *sel_canonical(const struct sel *s);
bool sel_equal(const struct sel *a, const struct sel *b);

/* Label lookup for evaluation: returns the value or NULL when absent. */
struct sel_labels {
	const char *(*get)(const void *ctx, const char *key);
	const void *ctx;
};
/* A sel_labels view of a plain label map. */
struct sel_labels sel_labels_of(const struct br_labels *l);
/* Never allocates. */
bool sel_eval(const struct sel *s, const struct sel_labels *labels);

/* Constructors (take ownership of sub-selectors). */
struct sel *sel_all(void);
struct sel *sel_global(void);
struct sel *sel_has(const char *key);
struct sel *sel_eq(const char *key, const char *value);
struct sel *sel_neq(const char *key, const char *value);
struct sel *sel_in(const char *key, const char *const *values, size_t n);
struct sel *sel_not_in(const char *key, const char *const *values, size_t n);
struct sel *sel_not(struct sel *s);
struct sel *sel_and(struct sel *a, struct sel *b);
struct sel *sel_or(struct sel *a, struct sel *b);

/* A copy with every label key prefixed (namespaceSelector → "pcns." keys). */
struct sel *sel_prefix_keys(const struct sel *s, const char *prefix);

/* True for all() (and things that reduce to it). */
bool sel_is_all(const struct sel *s);

/*
 * Labels the selector needs to have a given value to match, when there is a
 * single such requirement at the top level of a conjunction (k == "v"); used by
 * label indexes. Returns false when there is none. With several, the first in
 * canonical order. @key and @value point into @s.
 */
bool sel_required_label(const struct sel *s, const char **key, const char **value);

/*
 * A Kubernetes LabelSelector as the same AST: matchLabels k: v → k == "v";
 * In → in {...}; NotIn → not in {...} (which also matches objects without the
 * key); Exists → has(k); DoesNotExist → !has(k); all ANDed; empty → all().
 * The operator names must already be valid (the model validates them); an
 * unknown one becomes !all(), so a bad selector matches nothing.
 */
struct sel *sel_from_k8s(const struct br_label_selector *ls);

#endif
