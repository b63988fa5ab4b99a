/*
 * The FelixConfiguration fields of Calico's v3 API that Brindle's felix
 * accepts, validates by type and stores, but does not act on (docs/felix.md
 * has the table of every field and what Brindle does with it). Part of
 * struct br_felixconfig_spec (its member "more"); the fields Brindle
 * implements are in that struct itself.
 */
#ifndef BRINDLE_MODEL_FELIX_H
#define BRINDLE_MODEL_FELIX_H

struct br_felix_health_override {
	const char *name;
	struct br_duration timeout;
};

struct br_felix_table_range {
	int64_t min, max;
};

/* "Auto" or a duration, per kind of connection (BPF dataplane) */
struct br_felix_ct_timeouts {
	const char *creation_grace_period, *tcp_syn_sent, *tcp_established, *tcp_fins_seen,
		*tcp_reset_seen, *udp_timeout, *generic_timeout, *icmp_timeout;
};

struct br_felix_more {
	struct opt_bool use_internal_dataplane_driver;
	const char *dataplane_driver;
	struct br_duration dataplane_watchdog_timeout;
	struct opt_bool ipv6_support;
	struct br_duration interface_refresh_interval;
	struct br_duration iptables_post_write_check_interval;
	const char *iptables_lock_file_path;
	struct br_duration iptables_lock_timeout;
	struct br_duration iptables_lock_probe_interval;
	const char *feature_detect_override;
	const char *feature_gates;
	struct opt_int max_ipset_size;
	struct br_duration xdp_refresh_interval;
	struct br_duration netlink_timeout;
	const char *metadata_addr;
	struct opt_int metadata_port;
	const char *openstack_region;
	const char *iptables_filter_allow_action;
	const char *iptables_mangle_allow_action;
	const char *iptables_filter_deny_action;
	const char *log_file_path;
	const char *log_severity_file;
	const char *log_severity_sys;
	const char *log_debug_filename_regex;
	struct opt_int vxlan_mtuv6;
	struct opt_bool allow_vxlan_packets_from_workloads;
	struct opt_bool allow_ipip_packets_from_workloads;
	struct br_duration reporting_interval;
	struct br_duration reporting_ttl;
	struct opt_bool endpoint_reporting_enabled;
	struct br_duration endpoint_reporting_delay;
	const char *endpoint_status_path_prefix;
	struct opt_bool disable_conntrack_invalid_check;
	struct br_felix_health_override *health_timeout_overrides;
	size_t n_health_timeout_overrides;
	struct opt_bool prometheus_go_metrics_enabled;
	struct opt_bool prometheus_process_metrics_enabled;
	struct opt_bool prometheus_wire_guard_metrics_enabled;
	struct br_port_list kube_node_port_ranges;
	const char *policy_sync_path_prefix;
	struct opt_bool usage_reporting_enabled;
	struct br_duration usage_reporting_initial_delay;
	struct br_duration usage_reporting_interval;
	struct br_int_or_string nat_port_range;
	const char *nat_outgoing_address;
	const char *nat_outgoing_exclusions;
	const char *device_route_source_address;
	const char *device_route_source_address_i_pv6;
	const char *program_cluster_routes;
	const char *ip_forwarding;
	const char **external_nodes_list;
	size_t n_external_nodes_list;
	const char *debug_memory_profile_path;
	struct opt_bool debug_disable_log_dropping;
	struct br_duration debug_simulate_calc_graph_hang_after;
	struct br_duration debug_simulate_dataplane_hang_after;
	struct br_duration debug_simulate_dataplane_apply_delay;
	const char *debug_host;
	struct opt_int debug_port;
	const char *iptables_nat_outgoing_interface_filter;
	struct opt_bool sidecar_acceleration_enabled;
	struct opt_bool xdp_enabled;
	struct opt_bool generic_xdp_enabled;
	struct br_duration nftables_refresh_interval;
	const char *nftables_filter_allow_action;
	const char *nftables_mangle_allow_action;
	const char *nftables_filter_deny_action;
	struct opt_int nftables_mark_mask;
	struct opt_bool bpf_enabled;
	struct opt_bool bpf_disable_unprivileged;
	const char *bpf_log_level;
	const char *bpf_conntrack_log_level;
	const char *bpf_conntrack_mode;
	struct br_felix_ct_timeouts *bpf_conntrack_timeouts;
	struct br_labels bpf_log_filters;
	const char *bpf_ctlb_log_filter;
	const char *bpf_data_iface_pattern;
	const char *bpf_l3_iface_pattern;
	struct opt_bool bpf_connect_time_load_balancing_enabled;
	const char *bpf_connect_time_load_balancing;
	const char *bpf_host_networked_nat_without_ctlb;
	const char *bpf_external_service_mode;
	const char **bpf_dsr_optout_cid_rs;
	size_t n_bpf_dsr_optout_cid_rs;
	struct opt_int bpf_ext_to_service_connmark;
	struct opt_bool bpf_kube_proxy_iptables_cleanup_enabled;
	struct br_duration bpf_kube_proxy_min_sync_period;
	struct opt_bool bpf_kube_proxy_endpoint_slices_enabled;
	struct br_int_or_string bpf_psnat_ports;
	struct opt_int bpf_map_size_nat_frontend;
	struct opt_int bpf_map_size_nat_backend;
	struct opt_int bpf_map_size_nat_affinity;
	struct opt_int bpf_map_size_route;
	struct opt_int bpf_map_size_conntrack;
	struct opt_int bpf_map_size_per_cpu_conntrack;
	const char *bpf_map_size_conntrack_scaling;
	struct opt_int bpf_map_size_conntrack_cleanup_queue;
	struct opt_int bpf_map_size_ip_sets;
	struct opt_int bpf_map_size_if_state;
	struct opt_bool bpf_host_conntrack_bypass;
	const char *bpf_enforce_rpf;
	struct opt_bool bpf_policy_debug_enabled;
	const char **bpf_force_track_packets_from_ifaces;
	size_t n_bpf_force_track_packets_from_ifaces;
	const char *bpf_disable_gro_for_ifaces;
	const char **bpf_exclude_cid_rs_from_nat;
	size_t n_bpf_exclude_cid_rs_from_nat;
	struct opt_int bpf_export_buffer_size_mb;
	const char *cgroup_v2_path;
	const char *flow_logs_policy_evaluation_mode;
	const char *bpf_redirect_to_peer;
	const char *bpf_attach_type;
	struct br_duration flow_logs_flush_interval;
	struct opt_bool flow_logs_collector_debug_trace;
	const char *flow_logs_goldmane_server;
	const char *flow_logs_local_reporter;
	const char *bpf_profiling;
	const char *route_source;
	struct br_felix_table_range *route_table_ranges;
	size_t n_route_table_ranges;
	struct br_felix_table_range *route_table_range;
	struct opt_bool route_sync_disabled;
	struct opt_bool wireguard_enabled;
	struct opt_bool wireguard_enabled_v6;
	struct opt_bool wireguard_threading_enabled;
	struct opt_int wireguard_listening_port;
	struct opt_int wireguard_listening_port_v6;
	struct opt_int wireguard_routing_rule_priority;
	const char *wireguard_interface_name;
	const char *wireguard_interface_name_v6;
	struct opt_int wireguard_mtu;
	struct opt_int wireguard_mtuv6;
	struct opt_bool wireguard_host_encryption_enabled;
	struct br_duration wireguard_keep_alive;
	const char *aws_src_dst_check;
	const char *service_loop_prevention;
	const char *workload_source_spoofing;
	const char *mtu_iface_pattern;
	const char *floating_i_ps;
	const char *windows_manage_firewall_rules;
	struct opt_int go_gc_threshold;
	struct opt_int go_memory_limit_mb;
	struct opt_int go_max_procs;
	struct opt_bool require_mtu_file;
};

#endif
