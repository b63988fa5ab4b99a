#include <brindle/core/labels.h>

#include <stdlib.h>
#include <string.h>

static size_t find(const struct br_labels *l, const char *key, bool *found)
{
	size_t lo = 0, hi = l->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strcmp(l->v[mid].key, key);
		if (c == 0) {
			*found = true;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = false;
	return lo;
}

const char *labels_get(const struct br_labels *l, const char *key)
{
	bool found;
	size_t i = find(l, key, &found);
	return found ? l->v[i].value : NULL;
}

bool labels_has(const struct br_labels *l, const char *key)
{
	return labels_get(l, key) != NULL;
}

void labels_set(struct arena *a, struct br_labels *l, const char *key, const char *value)
{
	bool found;
	size_t i = find(l, key, &found);
	if (found) {
		l->v[i].value = arena_strdup(a, value);
		return;
	}
	struct br_kv *v = arena_alloc(a, sizeof(*v) * (l->n + 1));
	if (i)
		memcpy(v, l->v, sizeof(*v) * i);
	v[i].key = arena_strdup(a, key);
	v[i].value = arena_strdup(a, value);
	if (l->n > i)
		memcpy(v + i + 1, l->v + i, sizeof(*v) * (l->n - i));
	l->v = v;
	l->n++;
}

void labels_del(struct br_labels *l, const char *key)
{
	bool found;
	size_t i = find(l, key, &found);
	if (!found)
		return;
	memmove(l->v + i, l->v + i + 1, sizeof(*l->v) * (l->n - i - 1));
	l->n--;
}

struct br_labels labels_copy(struct arena *a, const struct br_labels *l)
{
	struct br_labels c = { .n = l->n };
	c.v = arena_alloc(a, sizeof(*c.v) * (l->n ? l->n : 1));
	for (size_t i = 0; i < l->n; i++) {
		c.v[i].key = arena_strdup(a, l->v[i].key);
		c.v[i].value = arena_strdup(a, l->v[i].value);
	}
	return c;
}

bool labels_equal(const struct br_labels *x, const struct br_labels *y)
{
	if (x->n != y->n)
		return false;
	for (size_t i = 0; i < x->n; i++)
		if (strcmp(x->v[i].key, y->v[i].key) || strcmp(x->v[i].value, y->v[i].value))
			return false;
	return true;
}
