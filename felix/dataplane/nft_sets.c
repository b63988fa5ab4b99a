#include "dataplane/nft_sets.h"

#include <brindle/core/util.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Where @name is in @s: its index, or -(where it would go) - 1. */
static long msets_at(const struct msets *s, const char *name)
{
	size_t lo = 0, hi = s->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strcmp(s->v[mid].name, name);
		if (c == 0)
			return (long)mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -(long)lo - 1;
}

struct mset *msets_get(const struct msets *s, const char *name)
{
	long at = msets_at(s, name);
	return at >= 0 ? &s->v[at] : NULL;
}

struct mset *msets_add(struct msets *s, const char *name)
{
	size_t pos = (size_t)(-msets_at(s, name) - 1);
	GROW(s->v, s->cap, s->n + 1);
	memmove(&s->v[pos + 1], &s->v[pos], (s->n - pos) * sizeof(*s->v));
	s->n++;
	struct mset *ms = &s->v[pos];
	memset(ms, 0, sizeof(*ms));
	snprintf(ms->name, sizeof(ms->name), "%s", name);
	return ms;
}

void msets_del(struct msets *s, const char *name)
{
	long at = msets_at(s, name);
	if (at < 0)
		return;
	free(s->v[at].keys);
	memmove(&s->v[at], &s->v[at + 1], (s->n - (size_t)at - 1) * sizeof(*s->v));
	s->n--;
}

void msets_fit(struct msets *s)
{
	if (s->cap > s->n + s->n / 4 + 8) {
		s->cap = s->n + 1;
		s->v = xrealloc(s->v, s->cap * sizeof(*s->v));
	}
}

void msets_clear(struct msets *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i].keys);
	free(s->v);
	*s = (struct msets){ 0 };
}

uint8_t mset_stride(int af, enum nft_set_kind kind)
{
	unsigned a = nft_addr_len(af);
	return (uint8_t)(kind == NFT_SET_PORTS ? a + 3 : 2 * a);
}

void mset_pack(int af, enum nft_set_kind kind, const struct nft_elem *e, uint8_t *out)
{
	unsigned a = nft_addr_len(af);
	memcpy(out, e->lo, a);
	if (kind == NFT_SET_PORTS) {
		out[a] = e->proto;
		out[a + 1] = (uint8_t)(e->port >> 8);
		out[a + 2] = (uint8_t)e->port;
	} else {
		memcpy(out + a, e->hi, a);
	}
}

void mset_unpack(int af, enum nft_set_kind kind, const uint8_t *in, struct nft_elem *e)
{
	unsigned a = nft_addr_len(af);
	memset(e, 0, sizeof(*e));
	memcpy(e->lo, in, a);
	if (kind == NFT_SET_PORTS) {
		e->proto = in[a];
		e->port = (uint16_t)(in[a + 1] << 8 | in[a + 2]);
	} else {
		memcpy(e->hi, in + a, a);
	}
}

bool mset_is_host(int af, enum nft_set_kind kind, const struct nft_elem *e)
{
	return kind == NFT_SET_PORTS || memcmp(e->lo, e->hi, nft_addr_len(af)) == 0;
}

void mset_set_elems(int af, struct mset *ms, const struct nft_elem *v, size_t n)
{
	free(ms->keys);
	ms->stride = mset_stride(af, ms->kind);
	ms->keys = xcalloc(n + 1, ms->stride);
	for (size_t i = 0; i < n; i++)
		mset_pack(af, ms->kind, &v[i], ms->keys + i * ms->stride);
	ms->n = n;
	ms->hosts = false;
}

int mset_find(const struct mset *ms, const uint8_t *key)
{
	size_t lo = 0, hi = ms->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = memcmp(ms->keys + mid * ms->stride, key, ms->stride);
		if (c == 0)
			return (int)mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -(int)lo - 1;
}

void mset_edit(int af, struct mset *ms, const struct nft_elem *del, size_t nd,
	       const struct nft_elem *add, size_t na)
{
	size_t st = ms->stride;
	uint8_t key[32];
	for (size_t i = 0; i < nd; i++) {
		mset_pack(af, ms->kind, &del[i], key);
		int at = mset_find(ms, key);
		if (at >= 0) {
			memmove(ms->keys + (size_t)at * st, ms->keys + ((size_t)at + 1) * st,
				(ms->n - (size_t)at - 1) * st);
			ms->n--;
		}
	}
	if (!na)
		return;
	ms->keys = xrealloc(ms->keys, (ms->n + na + 1) * st);
	for (size_t i = 0; i < na; i++) {
		mset_pack(af, ms->kind, &add[i], key);
		int at = mset_find(ms, key);
		if (at >= 0)
			continue;
		size_t pos = (size_t)(-at - 1);
		memmove(ms->keys + (pos + 1) * st, ms->keys + pos * st, (ms->n - pos) * st);
		memcpy(ms->keys + pos * st, key, st);
		ms->n++;
	}
}
