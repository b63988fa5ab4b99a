/*
 * The nftables writer's record of a table's sets (nftables.c): what it keeps of them between
 * reads. Pure: no system call; the writer decides what to write from it.
 */
#ifndef BRINDLE_FELIX_NFT_SETS_H
#define BRINDLE_FELIX_NFT_SETS_H

#include <brindle/core/ipt_rule.h>
#include <brindle/core/nft_rule.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * A set as the mirror keeps it. A set whose elements are each one address (a selector's pods)
 * or one named port keeps none of them: its members join and leave element by element from
 * the calculation's marks, which say whether each was a member before. A set with networks
 * among its members keeps its elements, packed (each its key bytes in network order, so that
 * memcmp orders them as nft_elem_cmp does: an interval's lo and hi, 8 bytes for IPv4 and 32
 * for IPv6; a named port's address, protocol and port, 7 or 19) and sorted: a network's
 * interval may overlap others, which only the elements tell.
 */
struct mset {
	char name[IPT_SET_NAME_MAX + 1]; /* nftables' */
	enum nft_set_kind kind;
	uint8_t stride; /* bytes per element */
	bool hosts;	/* each element one member and one address: no elements kept */
	bool exact;	/* each element one member (none merged): members join and leave alone */
	uint8_t *keys;	/* the kept elements (none for hosts) */
	size_t n;	/* how many */
};

/*
 * A table's sets, sorted by name in one array: one block, not two small ones per set, which
 * would be scattered among a full program's freed pages and keep them in felix's memory.
 * A record's address holds until the next insert or remove.
 */
struct msets {
	struct mset *v;
	size_t n, cap;
};

/* The record of set @name, or NULL. */
struct mset *msets_get(const struct msets *s, const char *name);
/* A new record for @name (not there yet), zeroed. */
struct mset *msets_add(struct msets *s, const char *name);
/* @name's record gone, with its elements (none: nothing). */
void msets_del(struct msets *s, const char *name);
/* Shrunk to its records once a plan has added them (doubling leaves up to half unused). */
void msets_fit(struct msets *s);
void msets_clear(struct msets *s);
/* Bytes a packed element of a set of @kind takes in family @af. */
uint8_t mset_stride(int af, enum nft_set_kind kind);
/* @e packed into @out (mset_stride bytes), and back. */
void mset_pack(int af, enum nft_set_kind kind, const struct nft_elem *e, uint8_t *out);
void mset_unpack(int af, enum nft_set_kind kind, const uint8_t *in, struct nft_elem *e);
/* Where packed @key is in @ms's kept elements: its index, or -(where it would go) - 1. */
int mset_find(const struct mset *ms, const uint8_t *key);
/* Whether @e is one address (a named port's always is). */
bool mset_is_host(int af, enum nft_set_kind kind, const struct nft_elem *e);
/* Mirror set @ms's elements made @v's (sorted), packed. */
void mset_set_elems(int af, struct mset *ms, const struct nft_elem *v, size_t n);
/* Mirror set @ms's kept elements: @del's removed, then @add's added, kept sorted. */
void mset_edit(int af, struct mset *ms, const struct nft_elem *del, size_t nd,
	       const struct nft_elem *add, size_t na);

#endif
