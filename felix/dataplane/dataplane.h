/*
 * felix's dataplane: the kernel writers, one per kind of kernel object, and
 * the order they run in (writer.h says how each works). Each apply makes the
 * kernel match the desired state: what the calculation marked dirty, and
 * everything after a read-back. What is ours:
 *
 *   links      vxlan.calico (made, remade, deleted), tunl0's MTU and address,
 *              the settings of workload interfaces
 *   neighbours permanent IPv4 neighbours with protocol 80 (pod MACs, remote
 *              VTEPs), permanent FDB entries on vxlan.calico
 *   routes     IPv4 routes in the main table with protocol 80
 *   ip sets    sets named cali40*
 *   iptables   chains named cali-*, and rules whose first comment is "cali:"
 *              in the built-in chains
 *
 * Anything else is left alone: a route felix does not own is never replaced,
 * nothing of a workload's goes on a host interface, foreign rules and chains
 * keep their place. Someone else's change to what is ours is put back: routes
 * and interface settings as the kernel announces the change (netlink
 * events), iptables tables and ip sets at the next cheap check (a digest of
 * each table, the size of each set; FELIX_DRIFTCHECKINTERVAL, 1 s), and
 * everything at the refresh intervals by a full read.
 */
#ifndef FELIX_DATAPLANE_H
#define FELIX_DATAPLANE_H

#include "calc/policy.h"
#include "config.h"

#include <brindle/core/util.h>
#include <brindle/sys/clock.h>

#include <stdbool.h>
#include <stdint.h>

struct desired;
struct nl_addr;
struct nl_link;
struct nl_route;
struct nl_netconf;

enum dp_error_kind {
	DP_ERR_NETLINK,	 /* a write the kernel refused */
	DP_ERR_DUMP,	 /* a read-back that failed */
	DP_ERR_SYSCTL,	 /* an interface setting */
	DP_ERR_TUNNEL,	 /* a tunnel device that cannot be made as wanted */
	DP_ERR_IPIP,	 /* IPIP wanted, kernel cannot */
	DP_ERR_REFUSED,	 /* a workload item on a host interface, or a route felix does not own */
	DP_ERR_IPTABLES, /* reading or committing a table */
	DP_ERR_IPSET,	 /* listing or writing ip sets */
	DP_ERR_KINDS
};

/* What someone else changed and felix put back (felix_dataplane_drift_repairs_total). */
enum dp_drift_kind {
	DP_DRIFT_ROUTE,	   /* a route of ours deleted or changed */
	DP_DRIFT_SYSCTL,   /* a workload interface's setting */
	DP_DRIFT_IPTABLES, /* a rule or chain of ours */
	DP_DRIFT_IPSET,	   /* a member of one of our sets */
	DP_DRIFT_KINDS
};

struct dp_status {
	bool last_apply_ok;
	char problem[256];	     /* routing: why not ready (a tunnel device, no IPIP) */
	char policy_problem[256];    /* ip sets and iptables: the last failure, until they work */
	size_t routes, neighs, fdbs; /* what the kernel holds of ours, after the last apply */
	uint64_t resyncs;	     /* full read-backs of the routes */
	uint64_t errors[DP_ERR_KINDS];
	uint64_t writes;	     /* netlink messages applied */
	uint64_t commits[PT_TABLES]; /* iptables table commits */
	uint64_t rule_writes;	     /* rules inserted, replaced or deleted */
	uint64_t set_writes;	     /* ip set operations applied */
	double rule_commit_ms;	     /* the last nftables commit: the kernel's share of an apply */
	uint64_t drift_repairs[DP_DRIFT_KINDS];
};

/* The kernel's interfaces: a writer whose backend is NULL is left out. None is owned. */
struct dp_backends {
	struct nl *nl; /* links, neighbours, routes (with sys) */
	struct sysctl *sys;
	struct ipt *ipt;  /* iptables */
	struct ipt *ipt6; /* ip6tables (NULL: no IPv6 policy) */
	struct ips *ips; /* ip sets */
	struct nft *nft; /* nftables: rules and sets, instead of ipt and ips */
	struct nft *nft6; /* nftables' ip6 tables (NULL: no IPv6 policy) */
};

struct dataplane;

struct dataplane *dataplane_new(const struct dp_backends *b);
/* The rule backend, once chosen (felix chooses it when in sync: the FelixConfiguration says);
 * @b's ipt, ips and nft only. Until then the policy writers are absent. */
void dataplane_set_rule_backend(struct dataplane *dp, const struct dp_backends *b);
void dataplane_free(struct dataplane *dp);

/* Read everything back from the kernel at the next apply. */
void dataplane_request_resync(struct dataplane *dp);
/* A link appeared, changed or went away (from a netlink monitor). */
void dataplane_on_link(struct dataplane *dp, const struct nl_link *l, bool deleted);
/* An address was added or removed (from a netlink monitor); true when it matters. */
bool dataplane_on_addr(struct dataplane *dp, const struct nl_addr *a);
/* A route was added, changed or deleted (from a netlink monitor); true: apply soon. */
bool dataplane_on_route(struct dataplane *dp, const struct nl_route *r, bool deleted,
			uint64_t now_ms);
/* An interface's IPv4 settings changed (RTM_NEWNETCONF); true: apply soon. */
bool dataplane_on_netconf(struct dataplane *dp, const struct nl_netconf *nc);
/*
 * The cheap checks for what the kernel tells no one about (iptables tables,
 * ip set sizes), on felix's drift-check timer; true when a writer found
 * something changed and wants an apply.
 */
bool dataplane_check(struct dataplane *dp);

/*
 * Make the kernel match @routing and @policy (NULL when there are no writers
 * for it), in the order that never leaves a rule naming a missing set: ip
 * sets made and filled, iptables, neighbours, routes, then sets no rule uses
 * destroyed. Returns 0, or -EIO when a writer failed or waits for its retry
 * (dataplane_next_deadline).
 */
/* @policy6: IPv6's (NULL: none); written by the ip6tables writers when the backends have one. */
int dataplane_apply(struct dataplane *dp, struct desired *routing, struct pol_desired *policy,
		    struct pol_desired *policy6, const struct felix_config *cfg,
		    uint64_t now_ms) must_check;
/* When an apply should run even without new data (a retry, a refresh, a grace period): 0 = none. */
uint64_t dataplane_next_deadline(const struct dataplane *dp);
const struct dp_status *dataplane_status(const struct dataplane *dp);

#endif
