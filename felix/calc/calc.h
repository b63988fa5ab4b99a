/*
 * felix's calculation core for routing: from the datastore's resources to
 * this node's desired dataplane (struct desired). Pure: updates in,
 * desired-state changes out, no system calls. Each update recomputes only
 * what depends on it:
 *   WorkloadEndpoint of this node   → its /32 routes, neighbours, interface
 *   BlockAffinity of this node      → a blackhole for the block (not for /32 blocks)
 *   BlockAffinity of another node   → a VXLAN or IPIP route per the block's pool
 *   Node (another)                  → its VTEP (neighbour + FDB) and its blocks' routes
 *   Node (this), IPPool, config     → everything that depends on them
 * Plain (unencapsulated) routes to other nodes' blocks are BIRD's, not ours.
 */
#ifndef FELIX_CALC_H
#define FELIX_CALC_H

#include "config.h"
#include "desired.h"

#include <brindle/sys/ds.h>

struct calc;

/* With @ipv6, a policy core for IPv6 too (FELIX_IPV6SUPPORT): calc_policy6. */
struct calc *calc_new(const char *nodename, bool ipv6);
void calc_free(struct calc *c);

/* Take one datastore update (the object's ownership passes to the calc). */
void calc_update(struct calc *c, const struct ds_update *u);
/* New configuration (from FelixConfiguration and the environment). */
void calc_set_config(struct calc *c, const struct felix_config *cfg);

struct desired *calc_desired(struct calc *c);

/* The FelixConfiguration resources ("default", "node.<this node>"), for config layering. */
const struct br_felixconfig *calc_felixconfig(const struct calc *c, bool node);
/* Bumped whenever a FelixConfiguration that applies to this node changes. */
unsigned calc_felixconfig_generation(const struct calc *c);

/* The policy cores, fed by calc_update (see policy.h): IPv4's, and IPv6's (NULL without). */
struct pol *calc_policy(struct calc *c);
struct pol *calc_policy6(struct calc *c);

/*
 * The trust gate for a WorkloadEndpoint (@local: of this node). An endpoint is
 * refused when, on this node, its interface is not a workload interface (the
 * configured prefixes; never the loopback or felix's tunnels), or when any
 * of its networks is wider than the configured minimum prefix length (a host
 * route by default) — wherever it lives, since its networks also fill the ip
 * sets of other nodes' policies. A refused endpoint is treated as absent and
 * logged; @why says why. Pure.
 */
bool calc_wep_refused(const struct felix_config *cfg, const struct br_workloadendpoint *w,
		      bool local, char *why, size_t size);

/*
 * What the calculation (routing and policy) has to say since the last drain,
 * in order: @fn sees each notice (logged by the daemon, checked by tests).
 */
struct notice;
void calc_drain_notices(struct calc *c, void (*fn)(void *ctx, const struct notice *n), void *ctx);

/* Counts, for metrics and tests. */
size_t calc_local_endpoints(const struct calc *c);
/* Nodes with a Node resource (Calico's felix_cluster_num_hosts). */
size_t calc_nodes(const struct calc *c);

/*
 * The MAC Brindle gives a node's VXLAN device of @family (vxlan.calico,
 * vxlan-v6.calico) when its Node resource names none: derived from the node
 * name, so every node computes the same one.
 */
void calc_vtep_mac(const char *nodename, int family, uint8_t mac[6]);

#endif
