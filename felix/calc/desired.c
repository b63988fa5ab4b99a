#include "desired.h"

#include <brindle/core/util.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cand {
	const char *owner; /* the owner record's name: owners outlive their candidates */
	enum desired_class cls;
	struct desired_item item;
};

/* Candidates sorted, c[0] the winner. Nearly every key has one: it lives inline. */
struct entry {
	struct cand *c; /* &one, or a heap array once there are two */
	uint32_t n, cap;
	struct cand one;
};

/*
 * One allocation: n keys "<kind>:<key>", each NUL-terminated. The owner's name
 * is the owners map's own key (hmap_key), which candidates point to.
 */
struct owner {
	uint32_t n;
	char buf[];
};

static struct owner *owner_new(char keys[][132], size_t n)
{
	size_t len = 0;
	for (size_t i = 0; i < n; i++)
		len += strlen(keys[i]) + 1;
	struct owner *o = xmalloc(sizeof(*o) + len);
	o->n = (uint32_t)n;
	char *p = o->buf;
	for (size_t i = 0; i < n; i++)
		p = stpcpy(p, keys[i]) + 1;
	return o;
}

/* Iterate an owner's keys: for (k = owner_keys(o); i < o->n; k = next_key(k), i++) */
static const char *owner_keys(const struct owner *o)
{
	return o->buf;
}

static const char *next_key(const char *k)
{
	return k + strlen(k) + 1;
}

void desired_init(struct desired *d)
{
	memset(d, 0, sizeof(*d));
	for (int k = 0; k < DESIRED_KINDS; k++)
		hmap_init_bulk(&d->dirty[k]); /* marks, emptied whole by the writers */
}

static void free_entry(struct entry *e)
{
	if (e->c != &e->one)
		free(e->c);
	free(e);
}

void desired_free(struct desired *d)
{
	for (int k = 0; k < DESIRED_KINDS; k++) {
		for (struct hmap_iter it = hmap_iter(&d->entries[k]); hmap_next(&it);)
			free_entry(it.value);
		hmap_clear(&d->entries[k]);
		hmap_clear(&d->dirty[k]);
	}
	for (struct hmap_iter it = hmap_iter(&d->owners); hmap_next(&it);)
		free(it.value);
	hmap_clear(&d->owners);
}

static void mac_str(const uint8_t *m, char *buf)
{
	snprintf(buf, 18, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
}

/* The key an item is stored under ("10.0.0.1/32", "cali1|10.0.0.1", ...): @size >= 128. */
static void item_key(const struct desired_item *it, char *buf, size_t size)
{
	char a[CIDR_STRLEN], m[18];
	switch (it->kind) {
	case DESIRED_ROUTE:
		cidr_str(&it->route.dst, buf); /* the common case: no copy */
		return;
	case DESIRED_NEIGH:
		snprintf(buf, size, "%s|%s", it->neigh.ifname, ip_str(&it->neigh.ip, a));
		return;
	case DESIRED_FDB:
		mac_str(it->fdb.mac, m);
		snprintf(buf, size, "%s|%s|%s", it->fdb.ifname, m, ip_str(&it->fdb.dst, a));
		return;
	case DESIRED_IFACE:
	default:
		snprintf(buf, size, "%s", it->iface);
		return;
	}
}

static bool item_equal(const struct desired_item *a, const struct desired_item *b)
{
	if (a->kind != b->kind)
		return false;
	switch (a->kind) {
	case DESIRED_ROUTE:
		return cidr_cmp(&a->route.dst, &b->route.dst) == 0 &&
		       strcmp(a->route.ifname, b->route.ifname) == 0 &&
		       ip_cmp(&a->route.gw, &b->route.gw) == 0 &&
		       a->route.onlink == b->route.onlink &&
		       a->route.blackhole == b->route.blackhole &&
		       a->route.link_scope == b->route.link_scope;
	case DESIRED_NEIGH:
		return strcmp(a->neigh.ifname, b->neigh.ifname) == 0 &&
		       ip_equal(&a->neigh.ip, &b->neigh.ip) &&
		       memcmp(a->neigh.mac, b->neigh.mac, 6) == 0;
	case DESIRED_FDB:
		return strcmp(a->fdb.ifname, b->fdb.ifname) == 0 &&
		       memcmp(a->fdb.mac, b->fdb.mac, 6) == 0 && ip_equal(&a->fdb.dst, &b->fdb.dst);
	default:
		return strcmp(a->iface, b->iface) == 0;
	}
}

static int cand_cmp(const struct cand *a, const struct cand *b)
{
	if (a->cls != b->cls)
		return a->cls < b->cls ? -1 : 1;
	return strcmp(a->owner, b->owner);
}

static void mark(struct desired *d, enum desired_kind kind, const char *key)
{
	if (!hmap_has(&d->dirty[kind], key))
		hmap_put(&d->dirty[kind], key, (void *)1);
}

/* Remove @owner's candidate from the entry at @key; mark dirty if the winner changed. */
static void retract(struct desired *d, enum desired_kind kind, const char *key, const char *owner)
{
	struct entry *e = hmap_get(&d->entries[kind], key);
	if (!e)
		return;
	for (size_t i = 0; i < e->n; i++) {
		if (e->c[i].owner != owner)
			continue;
		bool was_winner = i == 0;
		bool same_as_next =
			was_winner && e->n > 1 && item_equal(&e->c[0].item, &e->c[1].item);
		memmove(&e->c[i], &e->c[i + 1], sizeof(e->c[0]) * (e->n - i - 1));
		e->n--;
		if (e->n == 0) {
			free_entry(hmap_del(&d->entries[kind], key));
			mark(d, kind, key);
		} else if (was_winner && !same_as_next) {
			mark(d, kind, key);
		}
		return;
	}
}

static void contribute(struct desired *d, const char *key, const char *owner,
		       enum desired_class cls, const struct desired_item *item)
{
	enum desired_kind kind = item->kind;
	struct entry *e = hmap_get(&d->entries[kind], key);
	if (!e) {
		e = xcalloc(1, sizeof(*e));
		e->c = &e->one;
		e->cap = 1;
		hmap_put(&d->entries[kind], key, e);
	}
	struct cand c = { .owner = owner, .cls = cls, .item = *item };
	size_t pos = 0;
	while (pos < e->n && cand_cmp(&e->c[pos], &c) < 0)
		pos++;
	if (e->n == e->cap) {
		struct cand *more = xmalloc(sizeof(*more) * e->cap * 2);
		memcpy(more, e->c, sizeof(*more) * e->n);
		if (e->c != &e->one)
			free(e->c);
		e->c = more;
		e->cap *= 2;
	}
	memmove(&e->c[pos + 1], &e->c[pos], sizeof(e->c[0]) * (e->n - pos));
	e->c[pos] = c;
	e->n++;
	if (pos == 0 && (e->n == 1 || !item_equal(&e->c[0].item, &e->c[1].item)))
		mark(d, kind, key);
}

void desired_set_owner(struct desired *d, const char *owner, enum desired_class cls,
		       const struct desired_item *items, size_t n)
{
	struct owner *o = hmap_get(&d->owners, owner);
	const char *name = o ? hmap_key(&d->owners, owner) : NULL;
	char key[128];
	/* Unchanged contributions are the common case on resync: leave them be. */
	if (o && o->n == n) {
		bool same = true;
		for (size_t i = 0; same && i < n; i++) {
			item_key(&items[i], key, sizeof(key));
			const struct entry *e = hmap_get(&d->entries[items[i].kind], key);
			same = false;
			for (size_t j = 0; e && j < e->n; j++)
				if (e->c[j].owner == name)
					same = e->c[j].cls == cls &&
					       item_equal(&e->c[j].item, &items[i]);
		}
		if (same)
			return;
	}
	if (o) {
		const char *k = owner_keys(o);
		for (uint32_t i = 0; i < o->n; i++, k = next_key(k))
			retract(d, (enum desired_kind)(k[0] - '0'), k + 2, name);
		hmap_del(&d->owners, owner);
		free(o);
	}
	if (n == 0)
		return;
	/* "<kind>:<key>", as the owner record keeps them */
	char(*tagged)[132] = xmalloc(sizeof(*tagged) * n);
	for (size_t i = 0; i < n; i++) {
		tagged[i][0] = (char)('0' + items[i].kind);
		tagged[i][1] = ':';
		item_key(&items[i], tagged[i] + 2, sizeof(tagged[i]) - 2);
	}
	o = owner_new(tagged, n);
	hmap_put(&d->owners, owner, o);
	name = hmap_key(&d->owners, owner);
	for (size_t i = 0; i < n; i++) {
		contribute(d, tagged[i] + 2, name, cls, &items[i]);
	}
	free(tagged);
}

static const struct desired_item *entry_winner(const struct entry *e)
{
	return e->n ? &e->c[0].item : NULL;
}

const struct desired_item *desired_get(const struct desired *d, enum desired_kind kind,
				       const char *key)
{
	const struct entry *e = hmap_get(&d->entries[kind], key);
	return e ? entry_winner(e) : NULL;
}

const char *desired_why(const struct desired *d, enum desired_kind kind, const char *key)
{
	const struct entry *e = hmap_get(&d->entries[kind], key);
	return e && e->n ? e->c[0].owner : "";
}

void desired_mark_all_dirty(struct desired *d, enum desired_kind kind)
{
	for (struct hmap_iter it = hmap_iter(&d->entries[kind]); hmap_next(&it);)
		mark(d, kind, it.key);
}

void desired_mark_dirty(struct desired *d, enum desired_kind kind, const char *key)
{
	mark(d, kind, key);
}

void desired_clear_dirty(struct desired *d, enum desired_kind kind)
{
	hmap_clear(&d->dirty[kind]);
}
