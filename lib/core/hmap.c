#include <brindle/core/arena.h>
#include <brindle/core/hmap.h>
#include <brindle/core/util.h>

#include <stdlib.h>
#include <string.h>

/* FNV-1a, then a final mix so low bits are usable as the bucket index. */
static uint64_t hmap_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ull;
	}
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	return h;
}

static struct hmap_entry *find(const struct hmap *m, const char *key, uint64_t h)
{
	if (!m->nbuckets)
		return NULL;
	for (struct hmap_entry *e = m->buckets[h & (m->nbuckets - 1)]; e; e = e->next)
		if (strcmp(e->key, key) == 0)
			return e;
	return NULL;
}

void *hmap_get(const struct hmap *m, const char *key)
{
	struct hmap_entry *e = find(m, key, hmap_hash(key));
	return e ? e->value : NULL;
}

const char *hmap_key(const struct hmap *m, const char *key)
{
	struct hmap_entry *e = find(m, key, hmap_hash(key));
	return e ? e->key : NULL;
}

bool hmap_has(const struct hmap *m, const char *key)
{
	return find(m, key, hmap_hash(key)) != NULL;
}

void hmap_init_bulk(struct hmap *m)
{
	*m = (struct hmap){ .bulk = true };
}

/* Zeroed memory for @m's entries and buckets: from its arena if it is a bulk map. release
 * gives it back (a bulk map's goes only at hmap_clear, with the arena). */
static void *alloc(struct hmap *m, size_t n)
{
	if (!m->bulk)
		return xcalloc(1, n);
	if (!m->arena)
		m->arena = arena_new();
	return arena_alloc(m->arena, n);
}

static void release(const struct hmap *m, void *p)
{
	if (!m->bulk)
		free(p);
}

static void rehash(struct hmap *m, size_t nb)
{
	struct hmap_entry **b = alloc(m, nb * sizeof(*b));
	for (size_t i = 0; i < m->nbuckets; i++) {
		struct hmap_entry *e = m->buckets[i];
		while (e) {
			struct hmap_entry *next = e->next;
			uint64_t h = hmap_hash(e->key); /* not stored: entries stay small */
			e->next = b[h & (nb - 1)];
			b[h & (nb - 1)] = e;
			e = next;
		}
	}
	release(m, m->buckets);
	m->buckets = b;
	m->nbuckets = nb;
}

void *hmap_put(struct hmap *m, const char *key, void *value)
{
	uint64_t h = hmap_hash(key);
	struct hmap_entry *e = find(m, key, h);
	if (e) {
		void *old = e->value;
		e->value = value;
		return old;
	}
	if (m->n + 1 > m->nbuckets)
		rehash(m, m->nbuckets ? m->nbuckets * 2 : 16);
	size_t kl = strlen(key);
	e = alloc(m, sizeof(*e) + kl + 1);
	memcpy(e->key, key, kl + 1);
	e->value = value;
	e->next = m->buckets[h & (m->nbuckets - 1)];
	m->buckets[h & (m->nbuckets - 1)] = e;
	m->n++;
	return NULL;
}

void *hmap_del(struct hmap *m, const char *key)
{
	if (!m->nbuckets)
		return NULL;
	uint64_t h = hmap_hash(key);
	struct hmap_entry **pp = &m->buckets[h & (m->nbuckets - 1)];
	for (; *pp; pp = &(*pp)->next) {
		struct hmap_entry *e = *pp;
		if (strcmp(e->key, key) == 0) {
			*pp = e->next;
			void *v = e->value;
			release(m, e);
			m->n--;
			return v;
		}
	}
	return NULL;
}

void hmap_clear(struct hmap *m)
{
	if (m->bulk) {
		arena_free(m->arena);
		hmap_init_bulk(m);
		return;
	}
	for (size_t i = 0; i < m->nbuckets; i++) {
		struct hmap_entry *e = m->buckets[i];
		while (e) {
			struct hmap_entry *next = e->next;
			free(e);
			e = next;
		}
	}
	free(m->buckets);
	m->buckets = NULL;
	m->nbuckets = m->n = 0;
}

struct hmap_iter hmap_iter(const struct hmap *m)
{
	return (struct hmap_iter){ .m = m };
}

bool hmap_next(struct hmap_iter *it)
{
	struct hmap_entry *e = it->next;
	while (!e) {
		if (it->bucket >= it->m->nbuckets)
			return false;
		e = it->m->buckets[it->bucket++];
	}
	it->next = e->next; /* taken now, so the caller may delete e */
	it->key = e->key;
	it->value = e->value;
	return true;
}
