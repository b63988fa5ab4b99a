/*
 * A string-keyed hash map (separate chaining, power-of-two buckets, load up
 * to 1). Keys are copied into the entries; values are opaque pointers the
 * caller owns. Entries are small on purpose: felix keeps tens of thousands.
 */
#ifndef BRINDLE_HMAP_H
#define BRINDLE_HMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hmap_entry {
	struct hmap_entry *next;
	void *value;
	char key[];
};

struct arena;

struct hmap {
	struct hmap_entry **buckets;
	size_t nbuckets; /* power of two, or 0 */
	size_t n;
	bool bulk;	     /* hmap_init_bulk */
	struct arena *arena; /* a bulk map's entries and buckets, or NULL */
};

#define HMAP_INIT \
	{         \
		0 \
	}

/*
 * A map that is filled, read and emptied whole, again and again (a calculation's marks of
 * what changed, a list's keys seen): its entries come from one arena that hmap_clear frees
 * at once, so a map of tens of thousands of entries leaves no holes among the longer-lived
 * blocks allocated beside it. hmap_del of an entry keeps its memory until hmap_clear. @m is
 * made an empty bulk map (whatever it held is not freed: call it on a new map); it stays one
 * through hmap_clear.
 */
void hmap_init_bulk(struct hmap *m);
void *hmap_get(const struct hmap *m, const char *key);
bool hmap_has(const struct hmap *m, const char *key);
/* The map's own copy of @key (stable until that entry is deleted), or NULL. */
const char *hmap_key(const struct hmap *m, const char *key);
/* Insert or replace; returns the previous value (or NULL). */
void *hmap_put(struct hmap *m, const char *key, void *value);
/* Remove; returns the value (or NULL). */
void *hmap_del(struct hmap *m, const char *key);
/* Frees the map's own memory (not the values). */
void hmap_clear(struct hmap *m);

/* Iteration: for (struct hmap_iter it = hmap_iter(m); hmap_next(&it);) use it.key, it.value.
 * Removing the current entry with hmap_del during iteration is allowed. */
struct hmap_iter {
	const struct hmap *m;
	size_t bucket;
	struct hmap_entry *next;
	const char *key;
	void *value;
};
struct hmap_iter hmap_iter(const struct hmap *m);
bool hmap_next(struct hmap_iter *it);

#endif
