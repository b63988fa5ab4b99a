/*
 * Removing what is Brindle's from a rule backend, and nothing else: what
 * brindle-node cleanup does on uninstall, and what felix does to the backend
 * it does not use once the one it uses is programmed (a switch between
 * iptables and nftables leaves no rules of the old one behind).
 *   iptables  in raw, mangle, nat and filter, of iptables and then ip6tables:
 *             the rules in built-in chains whose comment id starts "cali:",
 *             then every chain named "cali-*" (flushed, then deleted), one
 *             commit per table;
 *   ip sets   every set named "cali4*" or "cali6*" (after the rules that use them);
 *   nftables  Brindle's own tables (brindle-filter, brindle-nat).
 * Each returns 0 or a negative errno, and logs what it did.
 */
#ifndef BRINDLE_SYS_RULES_CLEANUP_H
#define BRINDLE_SYS_RULES_CLEANUP_H

#include <brindle/core/util.h>

#include <stddef.h>

/* The nftables tables of Brindle's rule backend. */
#define NFT_TABLE_FILTER "brindle-filter"
#define NFT_TABLE_NAT	 "brindle-nat"

/* @lock_path: the xtables lock (NULL: the default). */
int cleanup_iptables(const char *lock_path) must_check;
int cleanup_ipsets(void) must_check;
int cleanup_nftables(void) must_check;

#endif
