/*
 * The desired dataplane: keyed tables of routes, neighbours, FDB entries and
 * workload interfaces, plus the tunnel devices. Several owners (a workload
 * endpoint, a block affinity, a remote VTEP) may claim the same key; the
 * candidate with the lowest class, then owner name, wins, so the result does
 * not depend on the order updates arrived in. Every change of a winner marks
 * its key dirty; the writers of the dataplane take the dirty keys of their
 * kind. Pure data structure.
 */
#ifndef FELIX_DESIRED_H
#define FELIX_DESIRED_H

#include <brindle/core/devices.h>
#include <brindle/core/hmap.h>
#include <brindle/core/net.h>

#include <net/if.h>
#include <stdbool.h>
#include <stdint.h>

enum desired_kind {
	DESIRED_ROUTE,
	DESIRED_NEIGH,
	DESIRED_FDB,
	DESIRED_IFACE,
	DESIRED_KINDS
};

/* Lower wins when two owners want the same key. */
enum desired_class {
	DESIRED_WORKLOAD = 0,
	DESIRED_VXLAN = 1,
	DESIRED_IPIP = 2,
	DESIRED_BLACKHOLE = 3,
	DESIRED_VTEP = 4,
};

struct desired_route {
	struct br_cidr dst;
	char ifname[IFNAMSIZ]; /* "" for a blackhole */
	struct br_ip gw;       /* family 0: none */
	bool onlink;
	bool blackhole;
	bool link_scope;
};

struct desired_neigh {
	char ifname[IFNAMSIZ];
	struct br_ip ip;
	uint8_t mac[6];
};

struct desired_fdb {
	char ifname[IFNAMSIZ];
	uint8_t mac[6];
	struct br_ip dst;
};

struct desired_item {
	enum desired_kind kind;
	union {
		struct desired_route route;
		struct desired_neigh neigh;
		struct desired_fdb fdb;
		char iface[IFNAMSIZ];
	};
};

/* One VXLAN device: vxlan.calico carries IPv4 over IPv4, vxlan-v6.calico IPv6 over IPv6. */
struct desired_vxlan {
	bool wanted;
	uint32_t vni;
	uint16_t port;
	uint32_t mtu;	    /* 0: derive from the parent interface */
	struct br_ip local; /* this node's address, of the device's family */
	uint8_t mac[6];
	struct br_cidr addr; /* len 0: none */
};

struct desired_ipip {
	bool wanted;
	uint32_t mtu;	    /* 0: derive from the host */
	struct br_ip local; /* this node's address: its interface gives the host MTU */
	struct br_cidr addr;
	char wanted_by[64]; /* a pool that asks for IPIP, for messages */
};

struct desired {
	struct hmap entries[DESIRED_KINDS]; /* key → struct entry */
	struct hmap owners;		    /* owner → struct owner */
	struct hmap dirty[DESIRED_KINDS];   /* key → (void *)1 */
	struct desired_vxlan vxlan, vxlan6;
	struct desired_ipip ipip;
	bool tunnels_dirty;
};

void desired_init(struct desired *d);
void desired_free(struct desired *d);

/* Replace everything @owner contributes with @items (n may be 0: retract). */
void desired_set_owner(struct desired *d, const char *owner, enum desired_class cls,
		       const struct desired_item *items, size_t n);

/* The winning item for @key, or NULL. */
const struct desired_item *desired_get(const struct desired *d, enum desired_kind kind,
				       const char *key);
/* Who wants the winning item ("wep default/a", "block node1/10.0.0.0-26"), for logs. */
const char *desired_why(const struct desired *d, enum desired_kind kind, const char *key);

void desired_mark_all_dirty(struct desired *d, enum desired_kind kind);
void desired_mark_dirty(struct desired *d, enum desired_kind kind, const char *key);
void desired_clear_dirty(struct desired *d, enum desired_kind kind);

#endif
