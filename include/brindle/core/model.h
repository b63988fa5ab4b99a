/*
 * The resource model: typed structs for every kind Brindle stores, decoded
 * from JSON/YAML documents, defaulted as the Kubernetes apiserver and Calico's
 * would, validated, and encoded to one canonical JSON form (stable field
 * order) for storage.
 *
 * Every resource is a struct that starts with `struct br_object` and owns one
 * arena holding all of its strings and arrays: model_free() releases it all.
 * Decoding and validation are driven by field tables (lib/model_kinds.c), so
 * error paths are uniform: "spec.ingress[0].ports[1].endPort: must be >= port (80)".
 */
#ifndef BRINDLE_MODEL_H
#define BRINDLE_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <brindle/core/arena.h>
#include <brindle/core/jv.h>
#include <brindle/core/labels.h>
#include <brindle/core/strbuf.h>

/* Optional scalars: set == false means absent. */
struct opt_bool {
	bool set, v;
};
struct opt_int {
	bool set;
	int64_t v;
};
struct opt_float {
	bool set;
	double v;
};

/* Kubernetes IntOrString (a NetworkPolicy port). */
struct br_int_or_string {
	enum {
		IOS_NONE,
		IOS_INT,
		IOS_STRING
	} type;
	int64_t i;
	const char *s;
};

/* Calico numorstring.Protocol: a name (canonical case) or a number 1-255. */
struct br_protocol {
	bool set;
	uint8_t number;	  /* the IP protocol number, also for names */
	const char *name; /* "TCP", "UDP", "ICMP", "ICMPv6", "SCTP", "UDPLite"; NULL for numbers */
};

/* Calico numorstring.Port: a number, a range "a:b", or a port name. */
struct br_port {
	uint16_t min, max; /* 0 when named */
	const char *name;
};

struct br_port_list {
	struct br_port *v;
	size_t n;
};

/* An AS number, written plain (64512) or dotted (1.10 = 1*65536+10). */
struct opt_asn {
	bool set;
	uint32_t v;
};

/* A Go-style duration ("90s", "1m30s"); text kept as written. */
struct br_duration {
	const char *text;
	int64_t ms;
};

/* --- metadata -------------------------------------------------------- */

struct br_meta {
	const char *name;
	const char *namespace;
	const char *uid;
	const char *resource_version;
	struct opt_int generation;
	const char *creation_timestamp;
	struct br_labels labels;
	struct br_labels annotations;
};

struct br_kind;

struct br_object {
	const struct br_kind *kind;
	struct arena *arena;
	int64_t revision; /* datastore mod revision; 0 when not read from one */
	struct br_meta meta;
};

/* --- Calico rules (NetworkPolicy, GlobalNetworkPolicy, Profile) ---------- */

struct br_icmp {
	struct opt_int type;
	struct opt_int code;
};

struct br_sa_match {
	const char **names;
	size_t n_names;
	const char *selector;
};

struct br_svc_match {
	const char *name;
	const char *namespace;
};

struct br_entity_rule {
	const char **nets;
	size_t n_nets;
	const char **not_nets;
	size_t n_not_nets;
	const char *selector;
	const char *not_selector;
	const char *namespace_selector;
	struct br_port_list ports;
	struct br_port_list not_ports;
	struct br_sa_match *service_accounts;
	struct br_svc_match *services;
};

struct br_rule_meta {
	struct br_labels annotations;
};

struct br_rule {
	const char *action; /* Allow, Deny, Log, Pass */
	bool has_http;	    /* an `http` match: never stored, the policy is refused */
	struct br_protocol protocol;
	struct br_protocol not_protocol;
	struct br_icmp *icmp;
	struct br_icmp *not_icmp;
	struct opt_int ip_version;
	struct br_entity_rule source;
	struct br_entity_rule destination;
	struct br_rule_meta *metadata;
};

/* NetworkPolicy and GlobalNetworkPolicy (the latter adds the last four fields). */
struct br_policy_spec {
	struct opt_float order;
	const char *tier;
	const char *selector;
	const char **types; /* "Ingress", "Egress" */
	size_t n_types;
	struct br_rule *ingress;
	size_t n_ingress;
	struct br_rule *egress;
	size_t n_egress;
	const char *service_account_selector;
	const char **performance_hints; /* AssumeNeededOnEveryNode */
	size_t n_performance_hints;
	const char *staged_action; /* the staged kinds: Set (default), Delete, Learn, Ignore */
	const char *namespace_selector;
	bool do_not_track;
	bool pre_dnat;
	bool apply_on_forward;
};

struct br_networkpolicy {
	struct br_object o;
	struct br_policy_spec spec;
};

struct br_nets_spec {
	const char **nets;
	size_t n_nets;
};

struct br_networkset {
	struct br_object o;
	struct br_nets_spec spec;
};

struct br_profile_spec {
	struct br_rule *ingress;
	size_t n_ingress;
	struct br_rule *egress;
	size_t n_egress;
	struct br_labels labels_to_apply;
};

struct br_profile {
	struct br_object o;
	struct br_profile_spec spec;
};

/* --- Kubernetes NetworkPolicy (networking.k8s.io/v1) ---------------------- */

struct br_k8s_np_port {
	const char *protocol; /* defaulted to TCP */
	struct br_int_or_string port;
	struct opt_int end_port;
};

struct br_ip_block {
	const char *cidr;
	const char **except;
	size_t n_except;
};

struct br_k8s_np_peer {
	struct br_label_selector *pod_selector;
	struct br_label_selector *namespace_selector;
	struct br_ip_block *ip_block;
};

struct br_k8s_np_rule {
	struct br_k8s_np_peer *peers; /* "from" (ingress) or "to" (egress) */
	size_t n_peers;
	struct br_k8s_np_port *ports;
	size_t n_ports;
};

struct br_k8s_np_spec {
	struct br_label_selector pod_selector;
	struct br_k8s_np_rule *ingress;
	size_t n_ingress;
	struct br_k8s_np_rule *egress;
	size_t n_egress;
	const char **policy_types;
	size_t n_policy_types;
	const char *staged_action; /* StagedKubernetesNetworkPolicy */
};

struct br_k8s_networkpolicy {
	struct br_object o;
	struct br_k8s_np_spec spec;
};

/* --- Kubernetes Namespace (v1) ---------------------------------------- */

struct br_namespace_spec {
	const char **finalizers;
	size_t n_finalizers;
};

struct br_namespace_status {
	const char *phase;
};

struct br_namespace {
	struct br_object o;
	struct br_namespace_spec spec;
	struct br_namespace_status status;
};

/* --- Kubernetes Service (v1) and EndpointSlice (discovery.k8s.io/v1) ------- */

/*
 * What confd needs to advertise service addresses over BGP. Nothing allocates
 * cluster IPs here: a Service carries the clusterIP its writer gave it.
 */
struct br_service_port {
	const char *name;
	const char *protocol; /* TCP (default), UDP, SCTP */
	const char *app_protocol;
	int64_t port;
	struct br_int_or_string target_port; /* defaulted to port */
	int64_t node_port;
};

struct br_client_ip_config {
	struct opt_int timeout_seconds;
};

struct br_session_affinity_config {
	struct br_client_ip_config *client_ip;
};

struct br_service_spec {
	struct br_service_port *ports;
	size_t n_ports;
	struct br_labels selector;
	const char *cluster_ip; /* an address, "None" (headless) or empty */
	const char **cluster_ips;
	size_t n_cluster_ips;
	const char *type; /* ClusterIP (default), NodePort, LoadBalancer, ExternalName */
	const char **external_ips;
	size_t n_external_ips;
	const char *session_affinity; /* None (default), ClientIP */
	const char *load_balancer_ip;
	const char **load_balancer_source_ranges;
	size_t n_load_balancer_source_ranges;
	const char *external_name;
	const char *external_traffic_policy; /* Cluster, Local */
	int64_t health_check_node_port;
	bool publish_not_ready_addresses;
	struct br_session_affinity_config *session_affinity_config;
	const char **ip_families; /* IPv4, IPv6 */
	size_t n_ip_families;
	const char *ip_family_policy; /* SingleStack, PreferDualStack, RequireDualStack */
	struct opt_bool allocate_load_balancer_node_ports;
	const char *load_balancer_class;
	const char *internal_traffic_policy; /* Cluster, Local */
	const char *traffic_distribution;
};

struct br_port_status {
	int64_t port;
	const char *protocol;
	const char *error;
};

struct br_lb_ingress {
	const char *ip;
	const char *hostname;
	const char *ip_mode; /* VIP, Proxy */
	struct br_port_status *ports;
	size_t n_ports;
};

struct br_lb_status {
	struct br_lb_ingress *ingress;
	size_t n_ingress;
};

struct br_condition {
	const char *type;
	const char *status;
	struct opt_int observed_generation;
	const char *last_transition_time;
	const char *reason;
	const char *message;
};

struct br_service_status {
	struct br_lb_status load_balancer;
	struct br_condition *conditions;
	size_t n_conditions;
};

struct br_service {
	struct br_object o;
	struct br_service_spec spec;
	struct br_service_status status;
};

struct br_endpoint_conditions {
	struct opt_bool ready; /* absent means ready */
	struct opt_bool serving;
	struct opt_bool terminating;
};

struct br_object_ref {
	const char *kind;
	const char *namespace;
	const char *name;
	const char *uid;
	const char *api_version;
	const char *resource_version;
	const char *field_path;
};

struct br_name_ref {
	const char *name;
};

struct br_endpoint_hints {
	struct br_name_ref *for_zones;
	size_t n_for_zones;
	struct br_name_ref *for_nodes;
	size_t n_for_nodes;
};

struct br_endpoint {
	const char **addresses;
	size_t n_addresses;
	struct br_endpoint_conditions conditions;
	const char *hostname;
	struct br_object_ref *target_ref;
	struct br_labels deprecated_topology;
	const char *node_name;
	const char *zone;
	struct br_endpoint_hints *hints;
};

struct br_slice_port {
	const char *name;
	const char *protocol; /* defaulted to TCP */
	struct opt_int port;
	const char *app_protocol;
};

/* An EndpointSlice has no "spec": these are top-level fields of the document. */
struct br_endpointslice_spec {
	const char *address_type; /* IPv4, IPv6, FQDN */
	struct br_endpoint *endpoints;
	size_t n_endpoints;
	struct br_slice_port *ports;
	size_t n_ports;
};

struct br_endpointslice {
	struct br_object o;
	struct br_endpointslice_spec spec;
};

/* The label that ties an EndpointSlice to its Service. */
#define K8S_SERVICE_NAME_LABEL "kubernetes.io/service-name"

/* --- Node, IPPool, BGP, Felix configuration --------------------------- */

struct br_node_bgp {
	const char *ipv4_address; /* "a.b.c.d/len" */
	const char *ipv6_address;
	const char *ipv4_ipip_tunnel_addr;
	struct opt_asn as_number;
	const char *route_reflector_cluster_id;
};

struct br_node_address {
	const char *address;
	const char *type;
};

struct br_orch_ref {
	const char *node_name;
	const char *orchestrator;
};

struct br_node_wireguard {
	const char *interface_ipv4_address;
	const char *interface_ipv6_address;
};

struct br_node_spec {
	struct br_node_bgp *bgp;
	const char *ipv4_vxlan_tunnel_addr;
	const char *vxlan_tunnel_mac_addr;
	const char *ipv6_vxlan_tunnel_addr;
	const char *vxlan_tunnel_mac_addr_v6;
	struct br_node_address *addresses;
	size_t n_addresses;
	struct br_orch_ref *orch_refs;
	size_t n_orch_refs;
	struct br_node_wireguard *wireguard;
};

struct br_node_status {
	const char *wireguard_public_key;
	const char **pod_cidrs;
	size_t n_pod_cidrs;
};

struct br_node {
	struct br_object o;
	struct br_node_spec spec;
	struct br_node_status status;
};

struct br_ippool_spec {
	const char *cidr;
	struct opt_int block_size;
	const char *ipip_mode;	/* Never, Always, CrossSubnet */
	const char *vxlan_mode; /* Never, Always, CrossSubnet */
	bool nat_outgoing;
	bool disabled;
	bool disable_bgp_export;
	const char *node_selector;
	const char **allowed_uses; /* Workload, Tunnel */
	size_t n_allowed_uses;
	const char *assignment_mode;	/* Automatic (default), Manual */
	const char *namespace_selector; /* pods of which namespaces may use it */
};

struct br_ippool {
	struct br_object o;
	struct br_ippool_spec spec;
};

struct br_cidr_entry {
	const char *cidr;
};

struct br_community {
	const char *name;
	const char *value;
};

struct br_prefix_adv {
	const char *cidr;
	const char **communities;
	size_t n_communities;
};

struct br_secret_key_ref {
	const char *name;
	const char *key;
};

/* A BGP password: a Kubernetes-style secret reference, or (Brindle) a file or variable. */
struct br_bgp_password {
	struct br_secret_key_ref *secret_key_ref;
	const char *file;
	const char *env;
};

struct br_bgpconfig_spec {
	const char *log_severity_screen;
	struct opt_bool node_to_node_mesh_enabled;
	struct opt_asn as_number;
	struct br_cidr_entry *service_cluster_ips;
	size_t n_service_cluster_ips;
	struct br_cidr_entry *service_external_ips;
	size_t n_service_external_ips;
	struct br_cidr_entry *service_load_balancer_ips;
	size_t n_service_load_balancer_ips;
	struct opt_int listen_port;
	struct br_community *communities;
	size_t n_communities;
	struct br_prefix_adv *prefix_advertisements;
	size_t n_prefix_advertisements;
	const char *bind_mode;
	const char **ignored_interfaces;
	size_t n_ignored_interfaces;
	struct br_bgp_password *node_mesh_password;
	struct br_duration node_mesh_max_restart_time;
	const char *service_lb_aggregation; /* Enabled, Disabled: no effect */
	const char *local_workload_peering_ipv4, *local_workload_peering_ipv6; /* no effect */
};

struct br_bgpconfig {
	struct br_object o;
	struct br_bgpconfig_spec spec;
};

struct br_bgppeer_spec {
	const char *node;
	const char *peer_ip; /* "ip", "ip:port" or "[v6]:port" */
	struct opt_asn as_number;
	const char *node_selector;
	const char *peer_selector;
	bool keep_original_next_hop;
	const char *next_hop_mode; /* Auto, Self, Keep */
	struct br_bgp_password *password;
	const char *source_address; /* UseNodeIP, None */
	struct br_duration max_restart_time;
	struct br_duration keepalive_time;
	struct opt_int num_allowed_local_as_numbers;
	struct opt_int ttl_security;
	const char *reachable_by;
	struct opt_asn local_as_number;
	const char *reverse_peering; /* Auto, Manual */
	const char **filters;	     /* BGPFilter names, applied in order */
	size_t n_filters;
	const char *local_workload_selector;
};

struct br_bgppeer {
	struct br_object o;
	struct br_bgppeer_spec spec;
};

struct br_proto_port {
	const char *protocol; /* TCP, UDP */
	int64_t port;
	const char *net;
};

#include <brindle/core/model_felix.h>

struct br_felixconfig_spec {
	const char *log_severity_screen;
	const char *interface_prefix;
	const char *interface_exclude;
	struct opt_bool health_enabled;
	const char *health_host;
	struct opt_int health_port;
	struct opt_bool prometheus_metrics_enabled;
	struct opt_int prometheus_metrics_port;
	const char *prometheus_metrics_host;
	struct br_duration route_refresh_interval;
	struct br_duration iptables_refresh_interval;
	struct br_duration ipsets_refresh_interval;
	struct opt_int vxlan_mtu;
	struct opt_int ipip_mtu;
	struct opt_int vxlan_port;
	struct opt_int vxlan_vni;
	struct opt_bool vxlan_enabled;
	struct opt_bool ipip_enabled;
	struct opt_int iptables_mark_mask;
	const char *default_endpoint_to_host_action; /* Drop, Accept, Return */
	const char *chain_insert_mode;		     /* Insert, Append */
	const char *iptables_backend;		     /* Legacy, NFT, Auto: the rule backend */
	const char *nftables_mode;		     /* Enabled, Disabled, Auto */
	/* Present-but-empty ("[]") disables the failsafe ports; absent = defaults. */
	struct br_proto_port *failsafe_inbound_host_ports;
	size_t n_failsafe_inbound_host_ports;
	bool failsafe_inbound_host_ports_set;
	struct br_proto_port *failsafe_outbound_host_ports;
	size_t n_failsafe_outbound_host_ports;
	bool failsafe_outbound_host_ports_set;
	const char *log_prefix;
	struct opt_int device_route_protocol;
	struct opt_bool remove_external_routes;
	struct opt_bool policy_event_log_enabled;
	struct opt_bool policy_event_log_allowed;
	const char *policy_event_log_file;
	/* Brindle's own: the widest network a workload endpoint may claim */
	struct opt_int workload_ipv4_min_prefix_length;
	struct opt_int workload_ipv6_min_prefix_length;
	/* The rest of Calico's fields: accepted, stored, no effect (model_felix.h) */
	struct br_felix_more more;
};

struct br_felixconfig {
	struct br_object o;
	struct br_felixconfig_spec spec;
};

/* --- endpoints ---------------------------------------------------------- */

struct br_endpoint_port {
	const char *name;
	const char *protocol; /* TCP, UDP, SCTP (defaulted to TCP) */
	int64_t port;
	int64_t host_port;
	const char *host_ip;
};

struct br_ip_nat {
	const char *internal_ip;
	const char *external_ip;
};

struct br_wep_spec {
	const char *orchestrator;
	const char *workload;
	const char *node;
	const char *container_id;
	const char *pod;
	const char *endpoint;
	const char *service_account_name;
	const char **ip_networks;
	size_t n_ip_networks;
	const char *ipv4_gateway;
	struct br_ip_nat *ip_nats;
	size_t n_ip_nats;
	const char **profiles;
	size_t n_profiles;
	const char *interface_name;
	const char *mac;
	struct br_endpoint_port *ports;
	size_t n_ports;
	const char **allow_spoofed_source_prefixes;
	size_t n_allow_spoofed_source_prefixes;
};

struct br_workloadendpoint {
	struct br_object o;
	struct br_wep_spec spec;
};

struct br_hep_spec {
	const char *node;
	const char *interface_name;
	const char **expected_ips;
	size_t n_expected_ips;
	const char **profiles;
	size_t n_profiles;
	struct br_endpoint_port *ports;
	size_t n_ports;
};

struct br_hostendpoint {
	struct br_object o;
	struct br_hep_spec spec;
};

/* --- IPAM ---------------------------------------------------------------- */

struct br_ipamconfig_spec {
	bool strict_affinity;
	struct opt_int max_blocks_per_host;
	struct opt_bool auto_allocate_blocks;
	const char *kubevirt_vm_address_persistence; /* Enabled, Disabled */
};

struct br_ipamconfig {
	struct br_object o;
	struct br_ipamconfig_spec spec;
};

/* Internal bookkeeping kinds, stored under /calico/ipam/v2/ (not accepted from files). */
struct br_blockaffinity_spec {
	const char *node;
	const char *cidr;
	const char *state; /* pending, confirmed, pendingDeletion */
	bool deleted;
};

struct br_blockaffinity {
	struct br_object o;
	struct br_blockaffinity_spec spec;
};

struct br_ipam_attr {
	const char *handle_id;
	struct br_labels secondary;
};

struct br_int_list {
	int64_t *v; /* -1 for null entries */
	size_t n;
};

struct br_str_int_map {
	struct {
		const char *key;
		int64_t value;
	} * v;
	size_t n;
};

struct br_ipamblock_spec {
	const char *cidr;
	const char *affinity; /* "host:<node>" or NULL */
	bool strict_affinity;
	struct br_int_list allocations; /* per ordinal: index into attributes, or -1 */
	struct br_int_list unallocated; /* free ordinals, FIFO */
	struct br_ipam_attr *attributes;
	size_t n_attributes;
	int64_t sequence_number;
	const char *affinity_claim_time;
	struct br_str_int_map sequence_number_for_allocation;
	bool deleted;
};

struct br_ipamblock {
	struct br_object o;
	struct br_ipamblock_spec spec;
};

struct br_ipamhandle_spec {
	const char *handle_id;
	struct br_str_int_map block; /* block CIDR → addresses held */
	bool deleted;
};

struct br_ipamhandle {
	struct br_object o;
	struct br_ipamhandle_spec spec;
};

/* --- the rest of Calico's v3 API (model_kinds_calico.c) --------------------- */

/* Calico's order for the default tier (policies with no tier). */
#define MODEL_TIER_DEFAULT_ORDER 1000000.0

struct br_tier_spec {
	struct opt_float order;	    /* unset: after every tier with an order */
	const char *default_action; /* Deny (default) or Pass */
};

struct br_tier {
	struct br_object o;
	struct br_tier_spec spec;
};

struct br_ipreservation_spec {
	const char **reserved_cidrs; /* CIDRs or bare addresses IPAM never hands out */
	size_t n_reserved_cidrs;
};

struct br_ipreservation {
	struct br_object o;
	struct br_ipreservation_spec spec;
};

struct br_prefix_length {
	struct opt_int min, max;
};

struct br_bgpfilter_rule {
	const char *cidr;
	const char *match_operator; /* Equal, NotEqual, In, NotIn */
	struct br_prefix_length *prefix_length;
	const char *source; /* RemotePeers */
	const char *iface;  /* interface glob */
	const char *action; /* Accept, Reject */
};

struct br_bgpfilter_spec {
	struct br_bgpfilter_rule *export_v4, *import_v4, *export_v6, *import_v6;
	size_t n_export_v4, n_import_v4, n_export_v6, n_import_v6;
};

struct br_bgpfilter {
	struct br_object o;
	struct br_bgpfilter_spec spec;
};

struct br_kcc_period {
	struct br_duration reconciler_period;
};

struct br_kcc_hep_template {
	const char *generate_name;
	const char **interface_cidrs;
	size_t n_interface_cidrs;
	const char *interface_selector;
	struct br_labels labels;
	const char *node_selector;
};

struct br_kcc_node {
	struct br_duration reconciler_period;
	const char *sync_labels; /* Enabled, Disabled */
	struct br_kcc_hep {
		const char *auto_create; /* Enabled, Disabled */
		const char *create_default_host_endpoint;
		struct br_kcc_hep_template *templates;
		size_t n_templates;
	} * host_endpoint;
	struct br_duration leak_grace_period;
};

struct br_kcc_spec {
	const char *log_severity_screen;
	const char *health_checks; /* Enabled, Disabled */
	struct br_duration etcd_v3_compaction_period;
	struct opt_int prometheus_metrics_port;
	struct opt_int debug_profile_port;
	struct br_kcc_controllers {
		struct br_kcc_node *node;
		struct br_kcc_period *policy, *workload_endpoint, *service_account, *namespace;
		struct br_kcc_lb {
			const char *assign_ips; /* AllServices, RequestedServicesOnly */
		} * load_balancer;
	} controllers;
};

struct br_kcc_status {
	struct br_kcc_spec running_config;
	struct br_labels environment_vars;
};

struct br_kubecontrollersconfig {
	struct br_object o;
	struct br_kcc_spec spec;
	struct br_kcc_status status;
};

struct br_cns_spec {
	const char *node;
	const char **classes; /* Agent, BGP, Routes */
	size_t n_classes;
	struct opt_int update_period_seconds;
};

struct br_cns_daemon {
	const char *state; /* Ready, NotReady */
	const char *version;
	const char *router_id;
	const char *last_boot_time;
	const char *last_reconfiguration_time;
};

struct br_cns_peer {
	const char *peer_ip;
	const char *type;  /* NodeMesh, NodePeer, GlobalPeer */
	const char *state; /* Idle, Connect, Active, OpenSent, OpenConfirm, Established, Close */
	const char *since;
};

struct br_cns_route {
	const char *type; /* FIB, RIB */
	const char *destination;
	const char *gateway;
	const char *iface;
	struct br_cns_learned {
		const char *source_type; /* Kernel, Static, Direct, NodeMesh, BGPPeer */
		const char *peer_ip;
	} learned_from;
};

struct br_cns_agent {
	struct br_cns_daemon bird_v4, bird_v6;
};

struct br_cns_bgp {
	int64_t established_v4, not_established_v4, established_v6, not_established_v6;
	struct br_cns_peer *peers_v4, *peers_v6;
	size_t n_peers_v4, n_peers_v6;
};

struct br_cns_routes {
	struct br_cns_route *routes_v4, *routes_v6;
	size_t n_routes_v4, n_routes_v6;
};

struct br_cns_status {
	const char *last_updated;
	struct br_cns_agent agent;
	struct br_cns_bgp bgp;
	struct br_cns_routes routes;
};

struct br_clusterinfo_spec {
	const char *cluster_guid;
	const char *cluster_type;
	const char *calico_version;
	struct opt_bool datastore_ready;
	const char *variant;
};

struct br_clusterinfo {
	struct br_object o;
	struct br_clusterinfo_spec spec;
};

struct br_caliconodestatus {
	struct br_object o;
	struct br_cns_spec spec;
	struct br_cns_status status;
};

/* --- kinds ---------------------------------------------------------------- */

enum br_kind_id {
	KIND_NODE,
	KIND_IPPOOL,
	KIND_BGPCONFIGURATION,
	KIND_BGPPEER,
	KIND_FELIXCONFIGURATION,
	KIND_NETWORKPOLICY,
	KIND_GLOBALNETWORKPOLICY,
	KIND_NETWORKSET,
	KIND_GLOBALNETWORKSET,
	KIND_HOSTENDPOINT,
	KIND_PROFILE,
	KIND_WORKLOADENDPOINT,
	KIND_IPAMCONFIGURATION,
	KIND_K8S_NETWORKPOLICY,
	KIND_NAMESPACE,
	KIND_SERVICE,
	KIND_ENDPOINTSLICE,
	KIND_BLOCKAFFINITY,
	KIND_IPAMBLOCK,
	KIND_IPAMHANDLE,
	KIND_TIER,
	KIND_IPRESERVATION,
	KIND_BGPFILTER,
	KIND_KUBECONTROLLERSCONFIGURATION,
	KIND_CALICONODESTATUS,
	KIND_STAGEDNETWORKPOLICY,
	KIND_STAGEDGLOBALNETWORKPOLICY,
	KIND_STAGEDK8SNETWORKPOLICY,
	KIND_CLUSTERINFORMATION,
	KIND_COUNT
};

struct model_struct;
struct model_ctx;

struct br_kind {
	enum br_kind_id id;
	const char *kind;	    /* "IPPool" */
	const char *api_version;    /* "projectcalico.org/v3" */
	const char *group;	    /* "projectcalico.org", "networking.k8s.io", "" (core) */
	const char *plural;	    /* "ippools" */
	/*
	 * Calico's CustomResourceDefinition for this kind in crd.projectcalico.org/v1
	 * (the Kubernetes datastore): its kind and plural ("IPAMConfig", "ipamconfigs").
	 * NULL for kinds that are not CRDs there (Node, Profile, WorkloadEndpoint are
	 * derived from Kubernetes objects; the Kubernetes kinds are built in).
	 */
	const char *crd_kind;
	const char *crd_plural;
	const char *const *aliases; /* more CLI names (short names), NULL-terminated */
	bool namespaced;
	bool internal; /* IPAM bookkeeping: never read from users' files */
	bool spec_inline; /* the spec's fields sit at the top of the document (EndpointSlice) */
	size_t size;
	size_t spec_off;
	const struct model_struct *spec;
	size_t status_off;
	const struct model_struct *status;
	/* Kind-level defaulting and checks (metadata rules, cross-section rules). */
	void (*defaults)(struct model_ctx *c, struct br_object *o);
	void (*check)(struct model_ctx *c, const struct br_object *o);
};

const struct br_kind *model_kind(enum br_kind_id id);
/*
 * By a name users type (case-insensitive): kind, plural, short names, and
 * "<plural|kind>.<group>" for the qualified form (networkpolicy.networking.k8s.io).
 * Bare "networkpolicy" is Calico's (as calicoctl reads it); kubectl's short
 * name "netpol" is Kubernetes'.
 */
const struct br_kind *model_kind_by_name(const char *name);

#define model_spec(o) ((void *)((char *)(o) + (o)->kind->spec_off))

/* --- decoding, encoding ------------------------------------------------- */

/* Error messages, each "path: message" (decoding) or complete (reading files). */
struct model_errors {
	char **v;
	size_t n;
};

void model_errors_clear(struct model_errors *e);
void model_errors_add(struct model_errors *e, const char *fmt, ...) printf_like(2, 3);

/*
 * Decode one resource document: check apiVersion/kind, decode and reject
 * unknown fields, apply defaults, validate. Returns NULL and appends errors
 * when anything is wrong. @allow_internal admits the IPAM bookkeeping kinds.
 */
struct br_object *model_decode(const struct jv *doc, bool allow_internal,
			       struct model_errors *errs);
/* Decode a stored value of a known kind (the datastore's side). */
struct br_object *model_decode_kind(const struct br_kind *k, const struct jv *doc,
				    struct model_errors *errs);

/*
 * A copy of @doc, a document of kind @k, without the members the model does
 * not know (at any depth), as the apiserver prunes what its schema does not
 * list: what a Kubernetes API object (managedFields, ownerReferences, status
 * conditions, fields of newer Kubernetes versions) becomes before the strict
 * decoder. Known members are kept as they are, so values of the wrong type
 * still fail decoding. Shares unchanged nodes with @doc; allocates from @a.
 */
struct jv *model_prune(struct arena *a, const struct br_kind *k, const struct jv *doc);

/* A new, empty, defaulted resource of kind @k with name (and namespace). */
struct br_object *model_new(const struct br_kind *k, const char *ns, const char *name);
void model_free(struct br_object *o);
struct br_object *model_clone(const struct br_object *o);

/* The canonical document: apiVersion, kind, metadata, spec[, status]; empty fields omitted. */
struct jv *model_encode(struct arena *a, const struct br_object *o);
/* Canonical compact JSON (what is stored). */
void model_to_json(const struct br_object *o, struct strbuf *out);
bool model_equal(const struct br_object *a, const struct br_object *b);
/* Same spec (and labels/annotations): what "unchanged" means for apply. */
bool model_same_content(const struct br_object *a, const struct br_object *b);

/*
 * Input limits. One resource: 1.5 MiB as JSON, the most the Kubernetes API
 * (and etcd's default request limit) takes for one object. One file or
 * stream: 64 MiB, read no further (brindlectl, the lab).
 */
#define MODEL_MAX_DOCUMENT (3u << 19) /* 1.5 MiB */
#define MODEL_MAX_INPUT	   (64u << 20)

/*
 * Read a file's worth of resources (JSON or YAML, detected from the first
 * character; multi-document YAML; `kind: List`). Namespaced resources that
 * name no namespace get @default_ns ("default" when NULL). Errors are complete
 * lines: "<source>: document 2: spec.ingress[0].ports[1].endPort: must be >= port (80)".
 * A document over MODEL_MAX_DOCUMENT is an error; a string holding a control
 * character (other than tab, newline and carriage return) is an error naming
 * the field; an error quotes at most ~100 bytes of a bad value, escaped.
 * On any error no objects are returned (*objs NULL, *n 0) and -EINVAL.
 */
int model_read(const char *source, const char *text, size_t len, const char *default_ns,
	       struct br_object ***objs, size_t *n, struct model_errors *errs) must_check;
/* model_read that also admits the IPAM bookkeeping kinds (a datastore export). */
int model_read_internal(const char *source, const char *text, size_t len, const char *default_ns,
			struct br_object ***objs, size_t *n, struct model_errors *errs) must_check;
void model_free_all(struct br_object **objs, size_t n);

/*
 * What of @o Brindle stores but does not act on: "spec.x; spec.y (why)"
 * appended to @out, and how many. docs/resources.md lists the same.
 */
size_t model_no_effect(const struct br_object *o, struct strbuf *out);

/* --- helpers for consumers ------------------------------------------------ */

static inline const char *model_ns(const struct br_object *o)
{
	return o->meta.namespace ? o->meta.namespace : "";
}

/* A Go duration in milliseconds; -EINVAL when malformed. */
/*
 * Interface names no endpoint may claim, whatever felix's workload prefixes
 * are: the loopback and the tunnel devices felix owns.
 */
bool iface_reserved(const char *name);

/* RFC 1123 names as Kubernetes checks them; false with the reason in *why. */
bool valid_dns_label(const char *s, const char **why);
bool valid_dns_subdomain(const char *s, const char **why);
/* A label key ([prefix/]name) and a label value as Kubernetes checks them. */
bool valid_label_key(const char *s, const char **why);
bool valid_label_value(const char *s, const char **why);

/* A BGP community as BIRD takes it: "aa:nn" (16-bit parts) or large "aa:nn:mm" (32-bit). */
bool community_valid(const char *s);

int duration_parse(const char *s, int64_t *ms) must_check;
/* A setting given as a Go duration ("90s", "1m30s") or as whole seconds ("90"); -EINVAL else. */
int duration_or_seconds_parse(const char *s, uint64_t *ms) must_check;
/* Parse "1.10" or "64512"; -EINVAL when malformed. */
int asn_parse(const char *s, uint32_t *out) must_check;
/* "ip", "ip:port", "[v6]:port" → address and port (0 when none). */
int peer_ip_parse(const char *s, char ip[46], uint16_t *port) must_check;

#endif
