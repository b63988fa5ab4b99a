/*
 * felix's configuration: environment variables (FELIX_<PARAM>, as Felix users
 * know them) override the FelixConfiguration resources ("node.<name>" over
 * "default"), which override built-in defaults. Computing it is pure: the
 * environment comes in as an array.
 */
#ifndef FELIX_CONFIG_H
#define FELIX_CONFIG_H

#include <brindle/core/model.h>
#include <brindle/sys/log.h>

#include <stdbool.h>
#include <stdint.h>

#define FELIX_MAX_PREFIXES 8

struct felix_failsafe {
	const char *protocol; /* "TCP", "UDP", "SCTP" */
	uint16_t port;
	char net[50]; /* CIDR, or "" for any */
};

struct felix_config {
	enum log_level log_severity;
	char prefixes[FELIX_MAX_PREFIXES][16]; /* workload interface name prefixes */
	size_t n_prefixes;
	bool health_enabled;
	char health_host[64];
	uint16_t health_port;
	bool metrics_enabled;
	char metrics_host[64];
	uint16_t metrics_port;
	uint64_t route_refresh_ms;
	uint64_t iptables_refresh_ms;
	uint64_t ipsets_refresh_ms;
	/* Cheap checks for someone else's change to iptables and ip sets; 0: off. */
	uint64_t drift_check_ms;
	uint32_t vxlan_mtu;    /* 0: host MTU - 50 */
	uint32_t vxlan_mtu_v6; /* vxlan-v6.calico; 0: host MTU - 70 */
	uint32_t ipip_mtu;  /* 0: host MTU - 20 */
	uint16_t vxlan_port;
	uint32_t vxlan_vni;
	uint32_t mark_mask;
	char endpoint_to_host_action[8]; /* Drop, Accept, Return */
	char chain_insert_mode[8];	 /* Insert, Append */
	char ip_forwarding[10]; /* Enabled (felix turns the node's forwarding on), Disabled */
	/*
	 * The rule backend: "Legacy" (the legacy iptables tables, and ip sets), "NFT"
	 * (Brindle's own nftables tables) or "Auto" (what the node already uses; decided
	 * at the first apply). nftablesMode Enabled (NFT) or Disabled (Legacy) decides, else
	 * iptablesBackend, as in Calico; each of the two from its FelixConfiguration field
	 * under its variable (FELIX_NFTABLESMODE, FELIX_IPTABLESBACKEND).
	 */
	char rule_backend[8];
	char iptables_backend[8]; /* the two settings, each from its sources (resolved above) */
	char nftables_mode[10];
	struct felix_failsafe failsafe_in[32];
	size_t n_failsafe_in;
	struct felix_failsafe failsafe_out[32];
	size_t n_failsafe_out;
	uint64_t route_grace_ms; /* CNI routes of endpoints not known yet */
	/*
	 * Coalescing datastore changes into one apply: apply once they have been
	 * quiet for apply_settle_ms, or apply_max_delay_ms after the first one
	 * not applied yet, whichever comes first (FELIX_APPLYSETTLE,
	 * FELIX_APPLYMAXDELAY; Brindle's, not Calico's).
	 */
	uint64_t apply_settle_ms;
	uint64_t apply_max_delay_ms;
	char log_prefix[24];	 /* of Log rules ("calico-packet") */
	/* the connection event log: a file in a directory only the environment sets */
	bool event_log_enabled;
	bool event_log_allowed;
	char event_log_dir[256];  /* FELIX_POLICYEVENTLOGDIR, default /var/log/brindle */
	char event_log_file[256]; /* a name in event_log_dir, or "-" for standard output */
	/* the xtables lock shared with the node's other iptables users (environment only) */
	char iptables_lock_path[256]; /* FELIX_IPTABLESLOCKFILEPATH, default /run/xtables.lock */
	/* the widest network a workload endpoint may claim, per family */
	uint8_t wep_min_prefix_v4; /* workloadIPv4MinPrefixLength, default 32 */
	uint8_t wep_min_prefix_v6; /* workloadIPv6MinPrefixLength, default 128 */
	/*
	 * ipv6Support (FELIX_IPV6SUPPORT): routes and blackholes for workloads' IPv6
	 * addresses, and IPv6 policy (ip6tables, or nftables' ip6 tables). Off by default,
	 * as Calico's manifests set it for IPv4 clusters: it doubles the rules felix writes.
	 */
	bool ipv6_support;
};

/* Built-in defaults. */
void felix_config_defaults(struct felix_config *c);

/*
 * Layer the sources: defaults, then @global (may be NULL), then @node (may be
 * NULL), then the FELIX_* variables in @env (NULL-terminated, like environ).
 * Bad environment values are reported in @errs ("FELIX_HEALTHPORT: ...") and
 * ignored, so the next source's value stands.
 */
void felix_config_compute(struct felix_config *c, const struct br_felixconfig *global,
			  const struct br_felixconfig *node, char *const *env,
			  struct model_errors *errs);

/* Is @ifname a workload interface (starts with a configured prefix)? */
bool felix_is_workload_iface(const struct felix_config *c, const char *ifname);

#define FELIX_EVENT_LOG_DIR  "/var/log/brindle"
#define FELIX_EVENT_LOG_NAME "policy-events.log"

#endif
