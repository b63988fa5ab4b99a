/*
 * nf_tables, for the nft backend: Brindle's own tables in the ip family (ip6
 * for IPv6), read back and written in atomic batches over one netlink socket
 * (libnftnl and libmnl; lib/sys/nft_kernel.c). Only tables whose names the
 * caller gives are ever read or written: kube-proxy's, the host firewall's
 * and iptables-nft's are never touched.
 *
 * Rules are <brindle/core/nft_rule.h> expressions; a rule's identity is its
 * comment's id ("cali:..."), kept in the rule's user data as nft keeps a
 * comment, and its handle, which the kernel gives. Sets hold either address
 * intervals (an ip set of addresses and networks: the union of its members,
 * as nftables interval sets cannot overlap) or address . protocol . port
 * triples (named ports).
 */
#ifndef BRINDLE_SYS_NFT_H
#define BRINDLE_SYS_NFT_H

#include <brindle/core/nft_rule.h>
#include <brindle/core/strbuf.h>
#include <brindle/core/util.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NFT_NAME_MAX 255 /* table, chain and set names (the kernel's 256 with the NUL) */

struct nft_rule_state {
	uint64_t handle;
	char id[IPT_ID_LEN + 1]; /* "" for a rule without one */
};

struct nft_chain_state {
	char *name;
	bool base; /* hooked: a base chain */
	struct nft_rule_state *rules;
	size_t n;
};

struct nft_set_state {
	char *name;
	enum nft_set_kind kind;
	struct nft_elem *elems; /* sorted (nft_elem_cmp) */
	size_t n;
};

/* An element of an interface dispatch map: packets of @iface go to chain @chain. */
struct nft_map_elem {
	char iface[16]; /* IFNAMSIZ */
	char chain[32];
};

struct nft_map_state {
	char *name;
	struct nft_map_elem *elems; /* sorted by iface */
	size_t n;
};

struct nft_table_state {
	bool exists;
	struct nft_map_state *maps; /* verdict maps keyed on interface names */
	size_t n_maps;
	struct nft_chain_state *chains;
	size_t n_chains;
	struct nft_set_state *sets;
	size_t n_sets;
};

void nft_table_state_free(struct nft_table_state *t);
const struct nft_chain_state *nft_table_state_chain(const struct nft_table_state *t,
						    const char *name);
const struct nft_set_state *nft_table_state_set(const struct nft_table_state *t, const char *name);

struct nft;

/*
 * A socket for nf_tables in the current network namespace, for the tables of family @af:
 * AF_INET (nftables' ip family) or AF_INET6 (ip6). Every read and batch of the handle is in
 * that family, and its rules and set elements are of that family's addresses.
 */
int nft_open(int af, struct nft **out) must_check;
void nft_close(struct nft *n);
const char *nft_last_error(const struct nft *n);

/*
 * Table @table of the handle's family as it is: its chains with their rules'
 * handles and ids in order, its sets with their elements. A table that does
 * not exist reads as !exists (not an error).
 */
int nft_read(struct nft *n, const char *table, struct nft_table_state *out) must_check;
/* Whether @table exists and how many chains it has: its chains only, not its rules or sets (a
 * cheap look at someone else's table). */
int nft_table_chains(struct nft *n, const char *table, bool *exists, size_t *chains) must_check;

/*
 * The ruleset's generation: it changes with every commit by anyone, so equal
 * generations mean nothing changed (a cheap check between reads).
 */
int nft_generation(struct nft *n, uint32_t *out) must_check;

/* --- one atomic batch ------------------------------------------------------------------ */

struct nft_batch;

struct nft_batch *nft_batch_new(struct nft *n);
void nft_batch_free(struct nft_batch *b);
/* Edits, queued; errors (an expression that cannot be built) are kept and end the commit. */
void nft_batch_add_table(struct nft_batch *b, const char *table);
void nft_batch_del_table(struct nft_batch *b, const char *table);
/*
 * A chain: a regular one (@hook < 0), or a base chain of @type ("filter",
 * "nat") on netfilter hook @hook (NF_INET_*) at @prio, policy accept.
 */
void nft_batch_add_chain(struct nft_batch *b, const char *table, const char *chain, int hook,
			 int prio, const char *type);
void nft_batch_del_chain(struct nft_batch *b, const char *table, const char *chain);
/* Append @r to @chain (its handle: by nft_read after the commit). */
void nft_batch_add_rule(struct nft_batch *b, const char *table, const char *chain,
			const struct nft_rule_ir *r);
/* Every rule of @chain. */
void nft_batch_flush_chain(struct nft_batch *b, const char *table, const char *chain);
void nft_batch_del_rule(struct nft_batch *b, const char *table, const char *chain, uint64_t handle);
void nft_batch_add_set(struct nft_batch *b, const char *table, const char *set,
		       enum nft_set_kind kind);
void nft_batch_del_set(struct nft_batch *b, const char *table, const char *set);
/* Every element of @set. */
void nft_batch_flush_set(struct nft_batch *b, const char *table, const char *set);
/* Add or remove elements (@add false) of a set of @kind. */
void nft_batch_elems(struct nft_batch *b, const char *table, const char *set,
		     enum nft_set_kind kind, const struct nft_elem *e, size_t n, bool add);
/* A verdict map from interface names to chains (its elements "goto CHAIN"; deleted as a set),
 * and its elements added or removed (removed by interface: the chain is not compared). */
void nft_batch_add_ifmap(struct nft_batch *b, const char *table, const char *map);
void nft_batch_ifmap_elems(struct nft_batch *b, const char *table, const char *map,
			   const struct nft_map_elem *e, size_t n, bool add);
size_t nft_batch_size(const struct nft_batch *b); /* edits queued */
/* Send the batch: all of it is applied, or none. 0, or a negative errno (nft_last_error). */
int nft_batch_commit(struct nft_batch *b) must_check;

#endif
