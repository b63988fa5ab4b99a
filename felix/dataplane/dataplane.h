/*
 * felix's kernel writers for routing: they read what the kernel has,
 * compare with the desired dataplane and write only the difference, in one
 * netlink batch per apply. What is ours: routes and neighbours with protocol
 * 80, everything on vxlan.calico, addresses on vxlan.calico and tunl0, and
 * the settings of workload interfaces. Anything else is left alone: a route
 * felix does not own is never replaced, and nothing of a workload's (route,
 * neighbour, settings) goes on a host interface (see host_iface).
 *
 * Between full read-backs (at start, every route refresh interval, after a
 * failure or a dropped notification) the writers trust a mirror of what they
 * wrote, so an apply costs in proportion to what changed, not to what exists.
 */
#ifndef FELIX_DATAPLANE_H
#define FELIX_DATAPLANE_H

#include "config.h"
#include "calc/desired.h"

#include <brindle/nl.h>
#include <brindle/sysctl.h>

enum dp_error_kind {
	DP_ERR_NETLINK, /* a write the kernel refused */
	DP_ERR_DUMP,	/* a read-back that failed */
	DP_ERR_SYSCTL,	/* an interface setting */
	DP_ERR_TUNNEL,	/* a tunnel device that cannot be made as wanted */
	DP_ERR_IPIP,	/* IPIP wanted, kernel cannot */
	DP_ERR_REFUSED, /* a workload item on a host interface, or a route felix does not own */
	DP_ERR_KINDS
};

struct dp_status {
	bool last_apply_ok;
	char problem[256]; /* why not ready, when something persistent is wrong */
	size_t routes, neighs, fdbs;
	uint64_t resyncs;
	uint64_t errors[DP_ERR_KINDS];
	uint64_t writes; /* netlink messages applied */
};

struct dataplane;

/* Takes ownership of neither @nl nor @sys. */
struct dataplane *dataplane_new(struct nl *nl, struct sysctl *sys);
void dataplane_free(struct dataplane *dp);

/* Read everything back from the kernel at the next apply. */
void dataplane_request_resync(struct dataplane *dp);
/* A link appeared, changed or went away (from a netlink monitor). */
void dataplane_on_link(struct dataplane *dp, const struct nl_link *l, bool deleted);
/* An address was added or removed (from a netlink monitor); true when it matters. */
bool dataplane_on_addr(struct dataplane *dp, const struct nl_addr *a);

/*
 * Make the kernel match @d (its dirty keys; everything after a resync).
 * Returns 0, or a negative errno when some writes failed (they are retried at
 * the next apply). @now_ms drives the grace period of unknown CNI routes.
 */
int dataplane_apply(struct dataplane *dp, struct desired *d, const struct felix_config *cfg,
		    uint64_t now_ms);
/* When an apply should run even without new data (a grace period ending, a retry): 0 = none. */
uint64_t dataplane_next_deadline(const struct dataplane *dp);
const struct dp_status *dataplane_status(const struct dataplane *dp);

#endif
