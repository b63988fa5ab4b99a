/* Shared by felix/dataplane.c and its per-object files. */
#ifndef FELIX_DATAPLANE_INTERNAL_H
#define FELIX_DATAPLANE_INTERNAL_H

#include "dataplane.h"

#include <brindle/hmap.h>
#include <brindle/log.h>

#define VXLAN_DEV "vxlan.calico"
#define FOREIGN_WAITING ((void *)1)
#define FOREIGN_RETRY	((void *)2)
#define IPIP_DEV  "tunl0"

/* A write in the batch, so its result can update the mirrors. */
struct dp_op {
	enum desired_kind kind;
	enum nl_op op;
	char key[128];
	char why[160];
	union {
		struct nl_route route;
		struct nl_neigh neigh;
	};
};

/*
 * A route of ours as the kernel has it, keyed by its destination, plus
 * "#<metric>" when the metric is not 0 (felix never writes one, so such a
 * route is swept). Table and protocol are always main and 80 (dumps filter
 * on them), so only the rest is kept: this is per route, and there are
 * thousands.
 */
struct mirror_route {
	int oif;
	struct br_ip gw;
	uint8_t type, scope;
	bool onlink;
	bool known;	     /* desired at some point: no grace when it goes */
	uint16_t mtu;	     /* set by someone else: rewritten */
	uint64_t first_seen; /* unknown routes: when first seen */
};

struct dataplane {
	struct nl *nl;
	struct sysctl *sys;
	struct hmap links_by_name;  /* name → struct nl_link * */
	struct hmap links_by_index; /* "%d" → struct nl_link * (same objects) */
	struct hmap routes;	    /* dst → struct mirror_route * */
	struct hmap neighs;	    /* "ifname|ip" → MAC packed in the pointer (dp_neighs.c) */
	struct hmap fdbs;	    /* "ifname|mac|dst" → (void *)1: the key says it all */
	struct hmap pending;	    /* ifname → struct hmap * of "<kind>:<key>" waiting for it */
	struct hmap addressed;	    /* "%d" ifindex → (void *)1: holds a host address */
	bool addrs_stale;	    /* an address changed: read them again before planning */
	struct hmap retry[DESIRED_KINDS];
	struct hmap graceful; /* route keys in their grace period */
	struct hmap conflicts; /* route keys whose add found a route there (this apply) */
	struct hmap foreign;   /* route keys held by a route that is not ours (reported once):
				* FOREIGN_WAITING until the next resync, then FOREIGN_RETRY */
	bool resync_needed;
	bool tunnels_failed;
	bool ipip_reported;
	uint64_t next_deadline;
	struct nl_batch *batch;
	struct dp_op *ops;
	size_t n_ops, ops_cap;
	struct dp_status status;
	struct ratelimit error_rl;
};

/* dp_links.c */
void links_clear(struct dataplane *dp);
int links_dump(struct dataplane *dp);
const struct nl_link *link_named(const struct dataplane *dp, const char *name);
const struct nl_link *link_indexed(const struct dataplane *dp, int ifindex);
void links_put(struct dataplane *dp, const struct nl_link *l);
void links_del(struct dataplane *dp, int ifindex);
int tunnels_reconcile(struct dataplane *dp, struct desired *d, const struct felix_config *cfg);
int addrs_dump(struct dataplane *dp);
/*
 * Is @ifname a host interface, which no workload item may touch (the
 * loopback, felix's own devices, or one holding an address other than an
 * IPv6 link-local one — workload veths hold none)? @why says which. A missing
 * interface is not one.
 */
bool host_iface(const struct dataplane *dp, const char *ifname, char *why, size_t size);

/* dp_routes.c */
void routes_clear(struct dataplane *dp);
int routes_dump(struct dataplane *dp, const struct desired *d, uint64_t now);
void routes_plan(struct dataplane *dp, struct desired *d, const char *key, uint64_t now,
		 const struct felix_config *cfg);
void routes_done(struct dataplane *dp, const struct dp_op *op, int err);
void routes_resolve_conflicts(struct dataplane *dp, struct desired *d);

/* dp_neighs.c */
void neighs_clear(struct dataplane *dp);
int neighs_dump(struct dataplane *dp);
void neighs_plan(struct dataplane *dp, struct desired *d, enum desired_kind kind, const char *key);
void neighs_done(struct dataplane *dp, const struct dp_op *op, int err);

/* dataplane.c */
struct dp_op *dp_add_op(struct dataplane *dp, enum desired_kind kind, enum nl_op op,
			const char *key, const char *why);
void dp_wait_for_link(struct dataplane *dp, const char *ifname, enum desired_kind kind,
		      const char *key);
/* Refuse (and log) a workload item on a host interface: true when refused. */
bool dp_refuse_host_iface(struct dataplane *dp, struct desired *d, enum desired_kind kind,
			  const char *key, const char *ifname);
void dp_error(struct dataplane *dp, enum dp_error_kind kind, const char *fmt, ...)
	printf_like(3, 4);
void dp_changed(struct dataplane *dp, const char *fmt, ...) printf_like(2, 3);

#endif
