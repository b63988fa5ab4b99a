/*
 * The FelixConfiguration fields Brindle accepts and stores without acting on
 * them (include/brindle/core/model_felix.h): their field-table entries, for
 * model_kinds.c only. Types and enumerations as Calico's v3 API has them.
 */
#ifndef BRINDLE_MODEL_FELIX_FIELDS_H
#define BRINDLE_MODEL_FELIX_FIELDS_H

static const struct model_field felix_health_override_fields[] = {
	MF("name", MF_STRING, struct br_felix_health_override, name, .flags = MF_REQUIRED),
	MF("timeout", MF_CUSTOM, struct br_felix_health_override, timeout,
	   .codec = &model_codec_duration),
};
static MODEL_STRUCT(felix_health_override_desc, struct br_felix_health_override,
		    felix_health_override_fields);

static const struct model_field felix_table_range_fields[] = {
	MF("min", MF_INT, struct br_felix_table_range, min, .min = 1, .max = UINT32_MAX,
	   .flags = MF_EMIT_EMPTY),
	MF("max", MF_INT, struct br_felix_table_range, max, .min = 1, .max = UINT32_MAX,
	   .flags = MF_EMIT_EMPTY),
};
static MODEL_STRUCT(felix_table_range_desc, struct br_felix_table_range, felix_table_range_fields);

#define CT(json, member) MF(json, MF_STRING, struct br_felix_ct_timeouts, member)
static const struct model_field felix_ct_timeouts_fields[] = {
	CT("creationGracePeriod", creation_grace_period),
	CT("tcpSynSent", tcp_syn_sent),
	CT("tcpEstablished", tcp_established),
	CT("tcpFinsSeen", tcp_fins_seen),
	CT("tcpResetSeen", tcp_reset_seen),
	CT("udpTimeout", udp_timeout),
	CT("genericTimeout", generic_timeout),
	CT("icmpTimeout", icmp_timeout),
};
#undef CT
static MODEL_STRUCT(felix_ct_timeouts_desc, struct br_felix_ct_timeouts, felix_ct_timeouts_fields);

/* Accepted, stored, no effect (docs/felix.md). */
#define FELIX_NO_EFFECT_FIELDS                                                                     \
	MF("useInternalDataplaneDriver", MF_OPT_BOOL, struct br_felixconfig_spec,                  \
	   more.use_internal_dataplane_driver),                                                    \
		MF("dataplaneDriver", MF_STRING, struct br_felixconfig_spec,                       \
		   more.dataplane_driver),                                                         \
		MF("dataplaneWatchdogTimeout", MF_CUSTOM, struct br_felixconfig_spec,              \
		   more.dataplane_watchdog_timeout, .codec = &model_codec_duration),               \
		MF("ipv6Support", MF_OPT_BOOL, struct br_felixconfig_spec, more.ipv6_support),     \
		MF("interfaceRefreshInterval", MF_CUSTOM, struct br_felixconfig_spec,              \
		   more.interface_refresh_interval, .codec = &model_codec_duration),               \
		MF("iptablesPostWriteCheckInterval", MF_CUSTOM, struct br_felixconfig_spec,        \
		   more.iptables_post_write_check_interval, .codec = &model_codec_duration),       \
		MF("iptablesLockFilePath", MF_STRING, struct br_felixconfig_spec,                  \
		   more.iptables_lock_file_path),                                                  \
		MF("iptablesLockTimeout", MF_CUSTOM, struct br_felixconfig_spec,                   \
		   more.iptables_lock_timeout, .codec = &model_codec_duration),                    \
		MF("iptablesLockProbeInterval", MF_CUSTOM, struct br_felixconfig_spec,             \
		   more.iptables_lock_probe_interval, .codec = &model_codec_duration),             \
		MF("featureDetectOverride", MF_STRING, struct br_felixconfig_spec,                 \
		   more.feature_detect_override),                                                  \
		MF("featureGates", MF_STRING, struct br_felixconfig_spec, more.feature_gates),     \
		MF("maxIpsetSize", MF_OPT_INT, struct br_felixconfig_spec, more.max_ipset_size),   \
		MF("xdpRefreshInterval", MF_CUSTOM, struct br_felixconfig_spec,                    \
		   more.xdp_refresh_interval, .codec = &model_codec_duration),                     \
		MF("netlinkTimeout", MF_CUSTOM, struct br_felixconfig_spec, more.netlink_timeout,  \
		   .codec = &model_codec_duration),                                                \
		MF("metadataAddr", MF_STRING, struct br_felixconfig_spec, more.metadata_addr),     \
		MF("metadataPort", MF_OPT_INT, struct br_felixconfig_spec, more.metadata_port),    \
		MF("openstackRegion", MF_STRING, struct br_felixconfig_spec,                       \
		   more.openstack_region),                                                         \
		MF("iptablesFilterAllowAction", MF_STRING, struct br_felixconfig_spec,             \
		   more.iptables_filter_allow_action),                                             \
		MF("iptablesMangleAllowAction", MF_STRING, struct br_felixconfig_spec,             \
		   more.iptables_mangle_allow_action),                                             \
		MF("iptablesFilterDenyAction", MF_STRING, struct br_felixconfig_spec,              \
		   more.iptables_filter_deny_action),                                              \
		MF("logFilePath", MF_STRING, struct br_felixconfig_spec, more.log_file_path),      \
		MF("logSeverityFile", MF_STRING, struct br_felixconfig_spec,                       \
		   more.log_severity_file),                                                        \
		MF("logSeveritySys", MF_STRING, struct br_felixconfig_spec,                        \
		   more.log_severity_sys),                                                         \
		MF("logDebugFilenameRegex", MF_STRING, struct br_felixconfig_spec,                 \
		   more.log_debug_filename_regex),                                                 \
		MF("vxlanMTUV6", MF_OPT_INT, struct br_felixconfig_spec, more.vxlan_mtuv6,         \
		   .min = 0, .max = 65535),                                                        \
		MF("allowVXLANPacketsFromWorkloads", MF_OPT_BOOL, struct br_felixconfig_spec,      \
		   more.allow_vxlan_packets_from_workloads),                                       \
		MF("allowIPIPPacketsFromWorkloads", MF_OPT_BOOL, struct br_felixconfig_spec,       \
		   more.allow_ipip_packets_from_workloads),                                        \
		MF("reportingInterval", MF_CUSTOM, struct br_felixconfig_spec,                     \
		   more.reporting_interval, .codec = &model_codec_duration),                       \
		MF("reportingTTL", MF_CUSTOM, struct br_felixconfig_spec, more.reporting_ttl,      \
		   .codec = &model_codec_duration),                                                \
		MF("endpointReportingEnabled", MF_OPT_BOOL, struct br_felixconfig_spec,            \
		   more.endpoint_reporting_enabled),                                               \
		MF("endpointReportingDelay", MF_CUSTOM, struct br_felixconfig_spec,                \
		   more.endpoint_reporting_delay, .codec = &model_codec_duration),                 \
		MF("endpointStatusPathPrefix", MF_STRING, struct br_felixconfig_spec,              \
		   more.endpoint_status_path_prefix),                                              \
		MF("disableConntrackInvalidCheck", MF_OPT_BOOL, struct br_felixconfig_spec,        \
		   more.disable_conntrack_invalid_check),                                          \
		MF_L("healthTimeoutOverrides", MF_LIST, struct br_felixconfig_spec,                \
		     more.health_timeout_overrides, more.n_health_timeout_overrides,               \
		     .sub = &felix_health_override_desc),                                          \
		MF("prometheusGoMetricsEnabled", MF_OPT_BOOL, struct br_felixconfig_spec,          \
		   more.prometheus_go_metrics_enabled),                                            \
		MF("prometheusProcessMetricsEnabled", MF_OPT_BOOL, struct br_felixconfig_spec,     \
		   more.prometheus_process_metrics_enabled),                                       \
		MF("prometheusWireGuardMetricsEnabled", MF_OPT_BOOL, struct br_felixconfig_spec,   \
		   more.prometheus_wire_guard_metrics_enabled),                                    \
		MF("kubeNodePortRanges", MF_CUSTOM, struct br_felixconfig_spec,                    \
		   more.kube_node_port_ranges, .codec = &model_codec_port_list),                   \
		MF("policySyncPathPrefix", MF_STRING, struct br_felixconfig_spec,                  \
		   more.policy_sync_path_prefix),                                                  \
		MF("usageReportingEnabled", MF_OPT_BOOL, struct br_felixconfig_spec,               \
		   more.usage_reporting_enabled),                                                  \
		MF("usageReportingInitialDelay", MF_CUSTOM, struct br_felixconfig_spec,            \
		   more.usage_reporting_initial_delay, .codec = &model_codec_duration),            \
		MF("usageReportingInterval", MF_CUSTOM, struct br_felixconfig_spec,                \
		   more.usage_reporting_interval, .codec = &model_codec_duration),                 \
		MF("natPortRange", MF_CUSTOM, struct br_felixconfig_spec, more.nat_port_range,     \
		   .codec = &model_codec_int_or_string),                                           \
		MF("natOutgoingAddress", MF_STRING, struct br_felixconfig_spec,                    \
		   more.nat_outgoing_address),                                                     \
		MF("natOutgoingExclusions", MF_STRING, struct br_felixconfig_spec,                 \
		   more.nat_outgoing_exclusions,                                                   \
		   .enum_values = E("IPPoolsOnly", "IPPoolsAndHostIPs")),                          \
		MF("deviceRouteSourceAddress", MF_STRING, struct br_felixconfig_spec,              \
		   more.device_route_source_address),                                              \
		MF("deviceRouteSourceAddressIPv6", MF_STRING, struct br_felixconfig_spec,          \
		   more.device_route_source_address_i_pv6),                                        \
		MF("programClusterRoutes", MF_STRING, struct br_felixconfig_spec,                  \
		   more.program_cluster_routes),                                                   \
		MF("ipForwarding", MF_STRING, struct br_felixconfig_spec, more.ip_forwarding,      \
		   .enum_values = E("Enabled", "Disabled")),                                       \
		MF_L("externalNodesList", MF_STRLIST, struct br_felixconfig_spec,                  \
		     more.external_nodes_list, more.n_external_nodes_list),                        \
		MF("debugMemoryProfilePath", MF_STRING, struct br_felixconfig_spec,                \
		   more.debug_memory_profile_path),                                                \
		MF("debugDisableLogDropping", MF_OPT_BOOL, struct br_felixconfig_spec,             \
		   more.debug_disable_log_dropping),                                               \
		MF("debugSimulateCalcGraphHangAfter", MF_CUSTOM, struct br_felixconfig_spec,       \
		   more.debug_simulate_calc_graph_hang_after, .codec = &model_codec_duration),     \
		MF("debugSimulateDataplaneHangAfter", MF_CUSTOM, struct br_felixconfig_spec,       \
		   more.debug_simulate_dataplane_hang_after, .codec = &model_codec_duration),      \
		MF("debugSimulateDataplaneApplyDelay", MF_CUSTOM, struct br_felixconfig_spec,      \
		   more.debug_simulate_dataplane_apply_delay, .codec = &model_codec_duration),     \
		MF("debugHost", MF_STRING, struct br_felixconfig_spec, more.debug_host),           \
		MF("debugPort", MF_OPT_INT, struct br_felixconfig_spec, more.debug_port),          \
		MF("iptablesNATOutgoingInterfaceFilter", MF_STRING, struct br_felixconfig_spec,    \
		   more.iptables_nat_outgoing_interface_filter),                                   \
		MF("sidecarAccelerationEnabled", MF_OPT_BOOL, struct br_felixconfig_spec,          \
		   more.sidecar_acceleration_enabled),                                             \
		MF("xdpEnabled", MF_OPT_BOOL, struct br_felixconfig_spec, more.xdp_enabled),       \
		MF("genericXDPEnabled", MF_OPT_BOOL, struct br_felixconfig_spec,                   \
		   more.generic_xdp_enabled),                                                      \
		MF("nftablesRefreshInterval", MF_CUSTOM, struct br_felixconfig_spec,               \
		   more.nftables_refresh_interval, .codec = &model_codec_duration),                \
		MF("nftablesFilterAllowAction", MF_STRING, struct br_felixconfig_spec,             \
		   more.nftables_filter_allow_action),                                             \
		MF("nftablesMangleAllowAction", MF_STRING, struct br_felixconfig_spec,             \
		   more.nftables_mangle_allow_action),                                             \
		MF("nftablesFilterDenyAction", MF_STRING, struct br_felixconfig_spec,              \
		   more.nftables_filter_deny_action),                                              \
		MF("nftablesMarkMask", MF_OPT_INT, struct br_felixconfig_spec,                     \
		   more.nftables_mark_mask, .min = 0, .max = UINT32_MAX),                          \
		MF("bpfEnabled", MF_OPT_BOOL, struct br_felixconfig_spec, more.bpf_enabled),       \
		MF("bpfDisableUnprivileged", MF_OPT_BOOL, struct br_felixconfig_spec,              \
		   more.bpf_disable_unprivileged),                                                 \
		MF("bpfLogLevel", MF_STRING, struct br_felixconfig_spec, more.bpf_log_level),      \
		MF("bpfConntrackLogLevel", MF_STRING, struct br_felixconfig_spec,                  \
		   more.bpf_conntrack_log_level, .enum_values = E("Off", "Debug")),                \
		MF("bpfConntrackMode", MF_STRING, struct br_felixconfig_spec,                      \
		   more.bpf_conntrack_mode, .enum_values = E("Auto", "Userspace", "BPFProgram")),  \
		MF("bpfConntrackTimeouts", MF_PTR, struct br_felixconfig_spec,                     \
		   more.bpf_conntrack_timeouts, .sub = &felix_ct_timeouts_desc),                   \
		MF("bpfLogFilters", MF_MAP, struct br_felixconfig_spec, more.bpf_log_filters),     \
		MF("bpfCTLBLogFilter", MF_STRING, struct br_felixconfig_spec,                      \
		   more.bpf_ctlb_log_filter),                                                      \
		MF("bpfDataIfacePattern", MF_STRING, struct br_felixconfig_spec,                   \
		   more.bpf_data_iface_pattern),                                                   \
		MF("bpfL3IfacePattern", MF_STRING, struct br_felixconfig_spec,                     \
		   more.bpf_l3_iface_pattern),                                                     \
		MF("bpfConnectTimeLoadBalancingEnabled", MF_OPT_BOOL, struct br_felixconfig_spec,  \
		   more.bpf_connect_time_load_balancing_enabled),                                  \
		MF("bpfConnectTimeLoadBalancing", MF_STRING, struct br_felixconfig_spec,           \
		   more.bpf_connect_time_load_balancing,                                           \
		   .enum_values = E("TCP", "Enabled", "Disabled")),                                \
		MF("bpfHostNetworkedNATWithoutCTLB", MF_STRING, struct br_felixconfig_spec,        \
		   more.bpf_host_networked_nat_without_ctlb,                                       \
		   .enum_values = E("Enabled", "Disabled")),                                       \
		MF("bpfExternalServiceMode", MF_STRING, struct br_felixconfig_spec,                \
		   more.bpf_external_service_mode),                                                \
		MF_L("bpfDSROptoutCIDRs", MF_STRLIST, struct br_felixconfig_spec,                  \
		     more.bpf_dsr_optout_cid_rs, more.n_bpf_dsr_optout_cid_rs,                     \
		     .check_item = model_check_cidr_item),                                         \
		MF("bpfExtToServiceConnmark", MF_OPT_INT, struct br_felixconfig_spec,              \
		   more.bpf_ext_to_service_connmark),                                              \
		MF("bpfKubeProxyIptablesCleanupEnabled", MF_OPT_BOOL, struct br_felixconfig_spec,  \
		   more.bpf_kube_proxy_iptables_cleanup_enabled),                                  \
		MF("bpfKubeProxyMinSyncPeriod", MF_CUSTOM, struct br_felixconfig_spec,             \
		   more.bpf_kube_proxy_min_sync_period, .codec = &model_codec_duration),           \
		MF("bpfKubeProxyEndpointSlicesEnabled", MF_OPT_BOOL, struct br_felixconfig_spec,   \
		   more.bpf_kube_proxy_endpoint_slices_enabled),                                   \
		MF("bpfPSNATPorts", MF_CUSTOM, struct br_felixconfig_spec, more.bpf_psnat_ports,   \
		   .codec = &model_codec_int_or_string),                                           \
		MF("bpfMapSizeNATFrontend", MF_OPT_INT, struct br_felixconfig_spec,                \
		   more.bpf_map_size_nat_frontend),                                                \
		MF("bpfMapSizeNATBackend", MF_OPT_INT, struct br_felixconfig_spec,                 \
		   more.bpf_map_size_nat_backend),                                                 \
		MF("bpfMapSizeNATAffinity", MF_OPT_INT, struct br_felixconfig_spec,                \
		   more.bpf_map_size_nat_affinity),                                                \
		MF("bpfMapSizeRoute", MF_OPT_INT, struct br_felixconfig_spec,                      \
		   more.bpf_map_size_route),                                                       \
		MF("bpfMapSizeConntrack", MF_OPT_INT, struct br_felixconfig_spec,                  \
		   more.bpf_map_size_conntrack),                                                   \
		MF("bpfMapSizePerCpuConntrack", MF_OPT_INT, struct br_felixconfig_spec,            \
		   more.bpf_map_size_per_cpu_conntrack),                                           \
		MF("bpfMapSizeConntrackScaling", MF_STRING, struct br_felixconfig_spec,            \
		   more.bpf_map_size_conntrack_scaling),                                           \
		MF("bpfMapSizeConntrackCleanupQueue", MF_OPT_INT, struct br_felixconfig_spec,      \
		   more.bpf_map_size_conntrack_cleanup_queue),                                     \
		MF("bpfMapSizeIPSets", MF_OPT_INT, struct br_felixconfig_spec,                     \
		   more.bpf_map_size_ip_sets),                                                     \
		MF("bpfMapSizeIfState", MF_OPT_INT, struct br_felixconfig_spec,                    \
		   more.bpf_map_size_if_state),                                                    \
		MF("bpfHostConntrackBypass", MF_OPT_BOOL, struct br_felixconfig_spec,              \
		   more.bpf_host_conntrack_bypass),                                                \
		MF("bpfEnforceRPF", MF_STRING, struct br_felixconfig_spec, more.bpf_enforce_rpf),  \
		MF("bpfPolicyDebugEnabled", MF_OPT_BOOL, struct br_felixconfig_spec,               \
		   more.bpf_policy_debug_enabled),                                                 \
		MF_L("bpfForceTrackPacketsFromIfaces", MF_STRLIST, struct br_felixconfig_spec,     \
		     more.bpf_force_track_packets_from_ifaces,                                     \
		     more.n_bpf_force_track_packets_from_ifaces),                                  \
		MF("bpfDisableGROForIfaces", MF_STRING, struct br_felixconfig_spec,                \
		   more.bpf_disable_gro_for_ifaces),                                               \
		MF_L("bpfExcludeCIDRsFromNAT", MF_STRLIST, struct br_felixconfig_spec,             \
		     more.bpf_exclude_cid_rs_from_nat, more.n_bpf_exclude_cid_rs_from_nat,         \
		     .check_item = model_check_cidr_item),                                         \
		MF("bpfExportBufferSizeMB", MF_OPT_INT, struct br_felixconfig_spec,                \
		   more.bpf_export_buffer_size_mb),                                                \
		MF("cgroupV2Path", MF_STRING, struct br_felixconfig_spec, more.cgroup_v2_path),    \
		MF("flowLogsPolicyEvaluationMode", MF_STRING, struct br_felixconfig_spec,          \
		   more.flow_logs_policy_evaluation_mode, .enum_values = E("None", "Continuous")), \
		MF("bpfRedirectToPeer", MF_STRING, struct br_felixconfig_spec,                     \
		   more.bpf_redirect_to_peer),                                                     \
		MF("bpfAttachType", MF_STRING, struct br_felixconfig_spec, more.bpf_attach_type,   \
		   .enum_values = E("TC", "TCX")),                                                 \
		MF("flowLogsFlushInterval", MF_CUSTOM, struct br_felixconfig_spec,                 \
		   more.flow_logs_flush_interval, .codec = &model_codec_duration),                 \
		MF("flowLogsCollectorDebugTrace", MF_OPT_BOOL, struct br_felixconfig_spec,         \
		   more.flow_logs_collector_debug_trace),                                          \
		MF("flowLogsGoldmaneServer", MF_STRING, struct br_felixconfig_spec,                \
		   more.flow_logs_goldmane_server),                                                \
		MF("flowLogsLocalReporter", MF_STRING, struct br_felixconfig_spec,                 \
		   more.flow_logs_local_reporter),                                                 \
		MF("bpfProfiling", MF_STRING, struct br_felixconfig_spec, more.bpf_profiling),     \
		MF("routeSource", MF_STRING, struct br_felixconfig_spec, more.route_source),       \
		MF_L("routeTableRanges", MF_LIST, struct br_felixconfig_spec,                      \
		     more.route_table_ranges, more.n_route_table_ranges,                           \
		     .sub = &felix_table_range_desc),                                              \
		MF("routeTableRange", MF_PTR, struct br_felixconfig_spec, more.route_table_range,  \
		   .sub = &felix_table_range_desc),                                                \
		MF("routeSyncDisabled", MF_OPT_BOOL, struct br_felixconfig_spec,                   \
		   more.route_sync_disabled),                                                      \
		MF("wireguardEnabled", MF_OPT_BOOL, struct br_felixconfig_spec,                    \
		   more.wireguard_enabled),                                                        \
		MF("wireguardEnabledV6", MF_OPT_BOOL, struct br_felixconfig_spec,                  \
		   more.wireguard_enabled_v6),                                                     \
		MF("wireguardThreadingEnabled", MF_OPT_BOOL, struct br_felixconfig_spec,           \
		   more.wireguard_threading_enabled),                                              \
		MF("wireguardListeningPort", MF_OPT_INT, struct br_felixconfig_spec,               \
		   more.wireguard_listening_port),                                                 \
		MF("wireguardListeningPortV6", MF_OPT_INT, struct br_felixconfig_spec,             \
		   more.wireguard_listening_port_v6),                                              \
		MF("wireguardRoutingRulePriority", MF_OPT_INT, struct br_felixconfig_spec,         \
		   more.wireguard_routing_rule_priority),                                          \
		MF("wireguardInterfaceName", MF_STRING, struct br_felixconfig_spec,                \
		   more.wireguard_interface_name),                                                 \
		MF("wireguardInterfaceNameV6", MF_STRING, struct br_felixconfig_spec,              \
		   more.wireguard_interface_name_v6),                                              \
		MF("wireguardMTU", MF_OPT_INT, struct br_felixconfig_spec, more.wireguard_mtu),    \
		MF("wireguardMTUV6", MF_OPT_INT, struct br_felixconfig_spec,                       \
		   more.wireguard_mtuv6),                                                          \
		MF("wireguardHostEncryptionEnabled", MF_OPT_BOOL, struct br_felixconfig_spec,      \
		   more.wireguard_host_encryption_enabled),                                        \
		MF("wireguardKeepAlive", MF_CUSTOM, struct br_felixconfig_spec,                    \
		   more.wireguard_keep_alive, .codec = &model_codec_duration),                     \
		MF("awsSrcDstCheck", MF_STRING, struct br_felixconfig_spec,                        \
		   more.aws_src_dst_check, .enum_values = E("DoNothing", "Enable", "Disable")),    \
		MF("serviceLoopPrevention", MF_STRING, struct br_felixconfig_spec,                 \
		   more.service_loop_prevention, .enum_values = E("Drop", "Reject", "Disabled")),  \
		MF("workloadSourceSpoofing", MF_STRING, struct br_felixconfig_spec,                \
		   more.workload_source_spoofing, .enum_values = E("Disabled", "Any")),            \
		MF("mtuIfacePattern", MF_STRING, struct br_felixconfig_spec,                       \
		   more.mtu_iface_pattern),                                                        \
		MF("floatingIPs", MF_STRING, struct br_felixconfig_spec, more.floating_i_ps,       \
		   .enum_values = E("Enabled", "Disabled")),                                       \
		MF("windowsManageFirewallRules", MF_STRING, struct br_felixconfig_spec,            \
		   more.windows_manage_firewall_rules, .enum_values = E("Enabled", "Disabled")),   \
		MF("goGCThreshold", MF_OPT_INT, struct br_felixconfig_spec, more.go_gc_threshold), \
		MF("goMemoryLimitMB", MF_OPT_INT, struct br_felixconfig_spec,                      \
		   more.go_memory_limit_mb),                                                       \
		MF("goMaxProcs", MF_OPT_INT, struct br_felixconfig_spec, more.go_max_procs),       \
		MF("requireMTUFile", MF_OPT_BOOL, struct br_felixconfig_spec,                      \
		   more.require_mtu_file)

#endif
