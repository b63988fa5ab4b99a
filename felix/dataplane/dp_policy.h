/*
 * felix's kernel writers for policy: ip sets and the iptables tables. They
 * make the kernel match the policy core's desired state (policy.h), in the
 * order that never leaves a rule pointing at a missing set:
 *
 *   1. dp_policy_apply_sets:    sets created and filled, members changed
 *   2. dp_policy_apply_tables:  one commit per table that needs one
 *   3. (routes)
 *   4. dp_policy_cleanup:       sets no rule uses any more destroyed
 *
 * What is ours: chains named cali-*, rules whose first comment is "cali:...",
 * sets named cali40*. Everything else, in every table and chain, is left as
 * it is. Tables are read back at every commit (libiptc reads the whole table
 * anyway), so a rule someone else removed or a hook someone deleted comes
 * back at the next check: every FELIX_IPTABLESREFRESHINTERVAL, or the next
 * change. Sets are listed in full at start, after a failure and every
 * FELIX_IPSETSREFRESHINTERVAL; between those, changes go in as deltas.
 */
#ifndef FELIX_DP_POLICY_H
#define FELIX_DP_POLICY_H

#include "config.h"
#include "calc/policy.h"

#include <brindle/ipset.h>
#include <brindle/ipt.h>

struct dp_policy_status {
	bool last_apply_ok;
	char problem[256];
	uint64_t commits[PT_TABLES];  /* table commits done */
	uint64_t rule_writes;	      /* rules inserted, replaced or deleted */
	uint64_t set_writes;	      /* set operations applied */
	uint64_t ipt_errors, ips_errors;
	uint64_t resyncs;
	size_t sets, chains, rules; /* what the kernel holds of ours, after the last apply */
	double last_commit_ms[PT_TABLES];
};

struct dp_policy;

/* Takes ownership of neither backend. */
struct dp_policy *dp_policy_new(struct ipt *ipt, struct ips *ips);
void dp_policy_free(struct dp_policy *dp);

/* Read everything back at the next apply. */
void dp_policy_request_resync(struct dp_policy *dp);

int dp_policy_apply_sets(struct dp_policy *dp, struct pol_desired *d,
			 const struct felix_config *cfg, uint64_t now_ms);
int dp_policy_apply_tables(struct dp_policy *dp, struct pol_desired *d,
			   const struct felix_config *cfg, uint64_t now_ms);
int dp_policy_cleanup(struct dp_policy *dp, struct pol_desired *d);

/* When the next check is due (a refresh, a retry); 0 = none. */
uint64_t dp_policy_next_deadline(const struct dp_policy *dp);
const struct dp_policy_status *dp_policy_status(const struct dp_policy *dp);

#endif
