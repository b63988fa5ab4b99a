/*
 * felix's calculation core for policy: from policies, profiles, namespaces,
 * endpoints and network sets to this node's desired iptables chains and ip
 * sets. Pure: datastore updates in, rule text and set members out.
 *
 * What is computed, and when:
 *   - which policies apply to each local endpoint (workload or host), in
 *     order; re-evaluated for one endpoint when it changes, for one policy
 *     against the local endpoints when it changes;
 *   - each policy's and profile's chains, rendered once per change;
 *   - the endpoint chains, dispatch chains and the static chains;
 *   - only chains reachable from the hooks are in the desired tables, and
 *     only ip sets that a desired chain uses are active;
 *   - an active set's members: the addresses of every endpoint or network set
 *     in the cluster its selector matches (or the endpoints' named ports, or
 *     a CIDR list), kept up to date as endpoints and labels change.
 * pol_flush() does the rendering that updates queued, so a burst of updates
 * costs one render.
 *
 * Fail closed: a policy that cannot be rendered turns every endpoint it
 * selects into drop-all (in the directions it applies to), and is reported in
 * pol_errors(); a workload interface felix does not know is dropped by the
 * dispatch chains.
 */
#ifndef FELIX_POLICY_H
#define FELIX_POLICY_H

#include "config.h"

#include <brindle/sys/ds.h>
#include <brindle/core/hmap.h>
#include <brindle/sys/ipset.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum pt_table {
	PT_FILTER,
	PT_NAT,
	PT_TABLES
};

const char *pt_table_name(enum pt_table t);

/* A rendered chain: rule texts as iptables-save prints them (after "-A <name> "). */
struct pchain {
	char name[32];
	char **rules;
	uint32_t n;
};

/* Our rules in a built-in chain: inserted at the top, or appended. */
struct phook {
	const char *chain; /* "FORWARD" */
	char **insert;	   /* in order, from position 0 */
	uint32_t n_insert;
	char **append; /* in order, at the end */
	uint32_t n_append;
};

struct ptable {
	struct hmap chains; /* name → struct pchain * (only reachable ones) */
	struct phook hooks[5];
	size_t n_hooks;
	bool dirty; /* something changed since the iptables writer took the mark */
};

/*
 * What a mark of pol_desired's dirty_* maps says: whether the thing marked (a set member, a
 * chain, a dispatch map or one of its elements) was there when first marked since the writer
 * took the marks. It may be so again by now.
 */
#define PMARK_WAS_NOT ((void *)1)
#define PMARK_WAS     ((void *)2)

/* An active ip set: what the kernel should hold. */
struct pset {
	struct ips_info info;
	struct hmap members; /* canonical member → (void *)count */
};

/*
 * Interface dispatch as a verdict map (pol_set_dispatch_maps: the nftables backend). Chain
 * @root of the filter table holds what follows the lookup (the drop of an unknown interface,
 * or nothing); the writer puts the lookup in front of it: a packet whose input (output, @oif)
 * interface is a key of @ifaces goes to that key's chain ("cali-fw-cali1234"), in one step
 * whatever the number of endpoints.
 */
struct pmap {
	char root[32];
	bool oif;
	struct hmap ifaces; /* interface -> chain (owned) */
};

/*
 * What the kernel should hold. The dirty marks say what changed since the
 * writers took them (each writer clears the marks of its kind as it plans).
 */
struct pol_desired {
	struct ptable tables[PT_TABLES];
	struct hmap sets;	   /* name → struct pset * (active only) */
	struct hmap dirty_sets;	   /* name → (void *)1: created, removed or membership changed */
	/* "set\nmember" → PMARK_WAS or PMARK_WAS_NOT (so a writer keeping no members knows
	 * whether it is in the kernel's set) */
	struct hmap dirty_members;
	/* per table: chains put with other rules, made or deleted, and hooks changed: name →
	 * PMARK_WAS or PMARK_WAS_NOT (the nftables writer writes only those, and knows from this
	 * what the kernel has without a copy of its own; the iptables writer compares whole
	 * tables) */
	struct hmap dirty_chains[PT_TABLES];
	/* dispatch maps (empty unless pol_set_dispatch_maps), and what changed in them:
	 * "root\niface" for an element, "root" for a map made or gone; each → PMARK_WAS or
	 * PMARK_WAS_NOT */
	struct hmap maps; /* root -> struct pmap * */
	struct hmap dirty_maps;
};

struct pol;

/*
 * A core for family @af: AF_INET renders iptables rules and cali40 sets from the IPv4
 * addresses, networks and pools; AF_INET6 ip6tables rules and cali60 sets from the IPv6 ones.
 */
struct pol *pol_new(const char *nodename, int af);
void pol_free(struct pol *p);
void pol_set_config(struct pol *p, const struct felix_config *cfg);
/* Dispatch through verdict maps (the nftables backend) rather than trees of chains. */
void pol_set_dispatch_maps(struct pol *p, bool on);

/*
 * Take one datastore update. The core reads the object and keeps none of it
 * (the caller still owns it, so the cores of both families read one object).
 * Returns true when the update was about policy alone, false when the caller
 * has more to do with it (WorkloadEndpoints, IP pools and the kinds policy
 * does not read).
 */
bool pol_update(struct pol *p, const struct ds_update *u);

/* What the policy core has to say (notices.h), for the daemon to log. */
struct notices;
struct notices *pol_notices(struct pol *p);

/* Render what the updates since the last flush changed. */
void pol_flush(struct pol *p);
struct pol_desired *pol_desired(struct pol *p);

/* Policies that cannot be rendered: "GlobalNetworkPolicy x: services match not supported". */
size_t pol_n_errors(const struct pol *p);
const char *pol_error(const struct pol *p, size_t i);

/* For the event log: what an NFLOG prefix stands for ("np/ns/name ingress rule 2"). */
const char *pol_describe_prefix(const struct pol *p, const char *prefix);

/* The endpoint on local interface @iface ("WorkloadEndpoint ns/name"), or NULL. */
const char *pol_endpoint_of_iface(const struct pol *p, const char *iface);

/* Counts, for metrics and tests. */
struct pol_stats {
	size_t policies, profiles, endpoints, local_endpoints, netsets;
	size_t active_policies, active_sets, members, chains, rules;
	size_t table_chains[PT_TABLES], table_rules[PT_TABLES]; /* per table; chains, rules: all */
};
void pol_stats(const struct pol *p, struct pol_stats *out);

#endif
