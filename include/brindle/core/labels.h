/*
 * Label maps and Kubernetes label selectors: the data types shared by the
 * resource model, the selector engine and the calculation cores.
 */
#ifndef BRINDLE_LABELS_H
#define BRINDLE_LABELS_H

#include <stdbool.h>
#include <stddef.h>
#include <brindle/core/arena.h>

struct br_kv {
	const char *key;
	const char *value;
};

/* Kept sorted by key, keys unique. */
struct br_labels {
	struct br_kv *v;
	size_t n;
};

const char *labels_get(const struct br_labels *l, const char *key);
bool labels_has(const struct br_labels *l, const char *key);
/* Insert or replace; strings are copied into @a. */
void labels_set(struct arena *a, struct br_labels *l, const char *key, const char *value);
void labels_del(struct br_labels *l, const char *key);
struct br_labels labels_copy(struct arena *a, const struct br_labels *l);
bool labels_equal(const struct br_labels *x, const struct br_labels *y);

/* A Kubernetes LabelSelector requirement: In, NotIn, Exists, DoesNotExist. */
struct br_label_req {
	const char *key;
	const char *op;
	const char **values;
	size_t n_values;
};

struct br_label_selector {
	struct br_labels match_labels;
	struct br_label_req *exprs;
	size_t n_exprs;
};

#endif
