/*
 * The desired dataplane: keyed tables of routes, neighbours, FDB entries and
 * workload interfaces, plus the tunnel devices. Several owners (a workload
 * endpoint, a block affinity, a remote VTEP) may claim the same key; the
 * candidate with the lowest class, then owner name, wins, so the result does
 * not depend on the order updates arrived in. Every change of a winner marks
 * its key dirty; the reconcilers drain the dirty keys. Pure data structure.
 */
#ifndef FELIX_DESIRED_H
#define FELIX_DESIRED_H

#include <brindle/hmap.h>
#include <brindle/net.h>

#include <net/if.h>
#include <stdbool.h>
#include <stdint.h>

enum dp_kind {
	DP_ROUTE,
	DP_NEIGH,
	DP_FDB,
	DP_IFACE,
	DP_KINDS
};

/* Lower wins when two owners want the same key. */
enum dp_class {
	DP_CLASS_WORKLOAD = 0,
	DP_CLASS_VXLAN = 1,
	DP_CLASS_IPIP = 2,
	DP_CLASS_BLACKHOLE = 3,
	DP_CLASS_VTEP = 4,
};

struct dp_route {
	struct br_cidr dst;
	char ifname[IFNAMSIZ]; /* "" for a blackhole */
	struct br_ip gw;       /* family 0: none */
	bool onlink;
	bool blackhole;
	bool link_scope;
};

struct dp_neigh {
	char ifname[IFNAMSIZ];
	struct br_ip ip;
	uint8_t mac[6];
};

struct dp_fdb {
	char ifname[IFNAMSIZ];
	uint8_t mac[6];
	struct br_ip dst;
};

struct dp_item {
	enum dp_kind kind;
	union {
		struct dp_route route;
		struct dp_neigh neigh;
		struct dp_fdb fdb;
		char iface[IFNAMSIZ];
	};
};

struct dp_vxlan {
	bool wanted;
	uint32_t vni;
	uint16_t port;
	uint32_t mtu; /* 0: derive from the parent interface */
	struct br_ip local;
	uint8_t mac[6];
	struct br_cidr addr; /* len 0: none */
};

struct dp_ipip {
	bool wanted;
	uint32_t mtu;	    /* 0: derive from the host */
	struct br_ip local; /* this node's address: its interface gives the host MTU */
	struct br_cidr addr;
	char wanted_by[64]; /* a pool that asks for IPIP, for messages */
};

struct dp_desired {
	struct hmap entries[DP_KINDS]; /* key → struct dp_entry */
	struct hmap owners;	       /* owner → struct dp_owner */
	struct hmap dirty[DP_KINDS];   /* key → (void *)1 */
	struct dp_vxlan vxlan;
	struct dp_ipip ipip;
	bool tunnels_dirty;
};

void dp_init(struct dp_desired *d);
void dp_free(struct dp_desired *d);

/* The key an item is stored under ("10.0.0.1/32", "cali1|10.0.0.1", ...). */
void dp_item_key(const struct dp_item *it, char *buf, size_t size);
bool dp_item_equal(const struct dp_item *a, const struct dp_item *b);

/* Replace everything @owner contributes with @items (n may be 0: retract). */
void dp_set_owner(struct dp_desired *d, const char *owner, enum dp_class cls,
		  const struct dp_item *items, size_t n);

/* The winning item for @key, or NULL. */
const struct dp_item *dp_get(const struct dp_desired *d, enum dp_kind kind, const char *key);
/* Who wants the winning item ("wep default/a", "block node1/10.0.0.0-26"), for logs. */
const char *dp_why(const struct dp_desired *d, enum dp_kind kind, const char *key);
size_t dp_count(const struct dp_desired *d, enum dp_kind kind);

/* Iterate winners of a kind: for (it = hmap_iter(&d->entries[k]); hmap_next(&it);)
 * dp_entry_winner(it.value) */
const struct dp_item *dp_entry_winner(const void *entry);

void dp_mark_all_dirty(struct dp_desired *d, enum dp_kind kind);
void dp_mark_dirty(struct dp_desired *d, enum dp_kind kind, const char *key);
void dp_clear_dirty(struct dp_desired *d, enum dp_kind kind);

#endif
