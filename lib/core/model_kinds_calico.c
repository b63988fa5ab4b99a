/*
 * The rest of Calico's projectcalico.org/v3 API: Tier, IPReservation,
 * BGPFilter, KubeControllersConfiguration and CalicoNodeStatus, with Calico's
 * field names, defaults and validation (its api/pkg/apis/projectcalico/v3
 * types and libcalico-go's validator). The kind table is model_kinds.c's;
 * docs/resources.md says what Brindle does with each field.
 */
#include <brindle/core/arena.h>
#include <brindle/core/net.h>
#include <brindle/core/util.h>
#include <ctype.h>
#include <inttypes.h>
#include <string.h>
#include <sys/socket.h>

#include "model_internal.h"

#define E(...) ((const char *const[]){ __VA_ARGS__, NULL })

/* --- Tier ------------------------------------------------------------------------------ */

static const struct model_field tier_fields[] = {
	MF("order", MF_OPT_FLOAT, struct br_tier_spec, order),
	MF("defaultAction", MF_STRING, struct br_tier_spec, default_action,
	   .enum_values = E("Deny", "Pass")),
};

/* Calico's orders for the tiers it knows (api's tier.go); others default to none (last). */
void model_default_tier(struct model_ctx *c, struct br_object *o)
{
	(void)c;
	struct br_tier *t = (struct br_tier *)o;
	if (!t->spec.default_action)
		t->spec.default_action = "Deny";
	if (t->spec.order.set || !o->meta.name)
		return;
	if (streq(o->meta.name, "default"))
		t->spec.order = (struct opt_float){ true, MODEL_TIER_DEFAULT_ORDER };
	else if (streq(o->meta.name, "kube-admin"))
		t->spec.order = (struct opt_float){ true, 1000 };
	else if (streq(o->meta.name, "kube-baseline"))
		t->spec.order = (struct opt_float){ true, 10000000 };
}

void model_check_tier(struct model_ctx *c, const struct br_object *o)
{
	const struct br_tier *t = (const struct br_tier *)o;
	/* A tier's name is a policy name's prefix ("<tier>.<policy>"), so no dots. */
	if (o->meta.name && strchr(o->meta.name, '.'))
		model_err_at(c, "metadata.name", "a tier's name cannot contain '.'");
	if (o->meta.name && streq(o->meta.name, "default")) {
		if (!t->spec.order.set || t->spec.order.v != MODEL_TIER_DEFAULT_ORDER)
			model_err_at(c, "spec.order", "the default tier's order is fixed at %d",
				     (int)MODEL_TIER_DEFAULT_ORDER);
	}
}

MODEL_STRUCT(model_tier_desc, struct br_tier_spec, tier_fields);

/* --- IPReservation --------------------------------------------------------------------- */

static const struct model_field ipres_fields[] = {
	MF_L("reservedCIDRs", MF_STRLIST, struct br_ipreservation_spec, reserved_cidrs,
	     n_reserved_cidrs, .check_item = model_check_net_item),
};
MODEL_STRUCT(model_ipreservation_desc, struct br_ipreservation_spec, ipres_fields);

/* --- BGPFilter ------------------------------------------------------------------------- */

static void check_prefix_length(struct model_ctx *c, const struct br_prefix_length *p, int max)
{
	const struct opt_int *v[] = { &p->min, &p->max };
	static const char *const names[] = { "min", "max" };
	for (size_t i = 0; i < 2; i++)
		if (v[i]->set && (v[i]->v < 0 || v[i]->v > max))
			model_err_at(c, names[i], "must be between 0 and %d", max);
	if (p->min.set && p->max.set && p->min.v > p->max.v)
		model_err_at(c, "min", "must not be greater than max (%" PRId64 ")", p->max.v);
}

static void check_filter_rule(struct model_ctx *c, const struct br_bgpfilter_rule *r, int family)
{
	int bits = family == AF_INET ? 32 : 128;
	struct br_cidr cidr;
	if (r->cidr && cidr_parse(r->cidr, false, &cidr) == 0 && cidr.ip.family != family)
		model_err_at(c, "cidr", "\"%s\" is not an IPv%d network", r->cidr,
			     family == AF_INET ? 4 : 6);
	if (!!r->cidr != !!r->match_operator)
		model_err_at(c, r->cidr ? "matchOperator" : "cidr",
			     "cidr and matchOperator go together");
	if (r->prefix_length) {
		if (!r->cidr)
			model_err_at(c, "prefixLength", "requires cidr");
		size_t m = model_push(c, "prefixLength");
		check_prefix_length(c, r->prefix_length, bits);
		if (r->cidr && cidr_parse(r->cidr, false, &cidr) == 0 &&
		    r->prefix_length->min.set && r->prefix_length->min.v < cidr.len)
			model_err_at(c, "min", "must not be less than the cidr's length (%d)",
				     cidr.len);
		model_pop(c, m);
	}
}

static void check_filter_v4(struct model_ctx *c, const void *obj)
{
	check_filter_rule(c, obj, AF_INET);
}

static void check_filter_v6(struct model_ctx *c, const void *obj)
{
	check_filter_rule(c, obj, AF_INET6);
}

static const struct model_field prefix_length_fields[] = {
	MF("min", MF_OPT_INT, struct br_prefix_length, min),
	MF("max", MF_OPT_INT, struct br_prefix_length, max),
};
static MODEL_STRUCT(prefix_length_desc, struct br_prefix_length, prefix_length_fields);

/* BIRD's interface patterns: a name with '*' wildcards, nothing that would break out of "...". */
static void check_filter_iface(struct model_ctx *c, const void *field)
{
	const char *s = *(const char *const *)field;
	for (const char *p = s; *p; p++)
		if (!(isalnum((unsigned char)*p) || strchr("*._-:@", *p))) {
			model_err(c, "\"%s\" is not an interface name or pattern", s);
			return;
		}
}

#define FILTER_RULE_FIELDS                                                                      \
	MF("cidr", MF_STRING, struct br_bgpfilter_rule, cidr, .check = model_check_cidr),       \
		MF("matchOperator", MF_STRING, struct br_bgpfilter_rule, match_operator,        \
		   .enum_values = E("Equal", "NotEqual", "In", "NotIn")),                       \
		MF("prefixLength", MF_PTR, struct br_bgpfilter_rule, prefix_length,             \
		   .sub = &prefix_length_desc),                                                 \
		MF("source", MF_STRING, struct br_bgpfilter_rule, source,                       \
		   .enum_values = E("RemotePeers")),                                            \
		MF("interface", MF_STRING, struct br_bgpfilter_rule, iface,                     \
		   .check = check_filter_iface),                                                \
		MF("action", MF_STRING, struct br_bgpfilter_rule, action, .flags = MF_REQUIRED, \
		   .enum_values = E("Accept", "Reject"))

static const struct model_field filter_rule_fields[] = { FILTER_RULE_FIELDS };
static MODEL_STRUCT(filter_rule_v4_desc, struct br_bgpfilter_rule, filter_rule_fields,
		    .check = check_filter_v4);
static MODEL_STRUCT(filter_rule_v6_desc, struct br_bgpfilter_rule, filter_rule_fields,
		    .check = check_filter_v6);

static const struct model_field bgpfilter_fields[] = {
	MF_L("exportV4", MF_LIST, struct br_bgpfilter_spec, export_v4, n_export_v4,
	     .sub = &filter_rule_v4_desc),
	MF_L("importV4", MF_LIST, struct br_bgpfilter_spec, import_v4, n_import_v4,
	     .sub = &filter_rule_v4_desc),
	MF_L("exportV6", MF_LIST, struct br_bgpfilter_spec, export_v6, n_export_v6,
	     .sub = &filter_rule_v6_desc),
	MF_L("importV6", MF_LIST, struct br_bgpfilter_spec, import_v6, n_import_v6,
	     .sub = &filter_rule_v6_desc),
};
MODEL_STRUCT(model_bgpfilter_desc, struct br_bgpfilter_spec, bgpfilter_fields);

/* --- KubeControllersConfiguration -------------------------------------------------------- */

#define ENABLED_DISABLED E("Enabled", "Disabled")

static const struct model_field kcc_period_fields[] = {
	MF("reconcilerPeriod", MF_CUSTOM, struct br_kcc_period, reconciler_period,
	   .codec = &model_codec_duration),
};
static MODEL_STRUCT(kcc_period_desc, struct br_kcc_period, kcc_period_fields);

static const struct model_field kcc_template_fields[] = {
	MF("generateName", MF_STRING, struct br_kcc_hep_template, generate_name,
	   .check = model_check_dns_label),
	MF_L("interfaceCIDRs", MF_STRLIST, struct br_kcc_hep_template, interface_cidrs,
	     n_interface_cidrs, .check_item = model_check_cidr_item),
	/* a regular expression over interface names (Calico's), not a label selector */
	MF("interfaceSelector", MF_STRING, struct br_kcc_hep_template, interface_selector),
	MF("labels", MF_MAP, struct br_kcc_hep_template, labels, .check = model_check_label_map),
	MF("nodeSelector", MF_STRING, struct br_kcc_hep_template, node_selector,
	   .check = model_check_selector),
};
static MODEL_STRUCT(kcc_template_desc, struct br_kcc_hep_template, kcc_template_fields);

static const struct model_field kcc_hep_fields[] = {
	MF("autoCreate", MF_STRING, struct br_kcc_hep, auto_create,
	   .enum_values = ENABLED_DISABLED),
	MF("createDefaultHostEndpoint", MF_STRING, struct br_kcc_hep, create_default_host_endpoint,
	   .enum_values = ENABLED_DISABLED),
	MF_L("templates", MF_LIST, struct br_kcc_hep, templates, n_templates,
	     .sub = &kcc_template_desc),
};
static MODEL_STRUCT(kcc_hep_desc, struct br_kcc_hep, kcc_hep_fields);

static const struct model_field kcc_node_fields[] = {
	MF("reconcilerPeriod", MF_CUSTOM, struct br_kcc_node, reconciler_period,
	   .codec = &model_codec_duration),
	MF("syncLabels", MF_STRING, struct br_kcc_node, sync_labels,
	   .enum_values = ENABLED_DISABLED),
	MF("hostEndpoint", MF_PTR, struct br_kcc_node, host_endpoint, .sub = &kcc_hep_desc),
	MF("leakGracePeriod", MF_CUSTOM, struct br_kcc_node, leak_grace_period,
	   .codec = &model_codec_duration),
};
static MODEL_STRUCT(kcc_node_desc, struct br_kcc_node, kcc_node_fields);

static const struct model_field kcc_lb_fields[] = {
	MF("assignIPs", MF_STRING, struct br_kcc_lb, assign_ips,
	   .enum_values = E("AllServices", "RequestedServicesOnly")),
};
static MODEL_STRUCT(kcc_lb_desc, struct br_kcc_lb, kcc_lb_fields);

static const struct model_field kcc_controllers_fields[] = {
	MF("node", MF_PTR, struct br_kcc_controllers, node, .sub = &kcc_node_desc),
	MF("policy", MF_PTR, struct br_kcc_controllers, policy, .sub = &kcc_period_desc),
	MF("workloadEndpoint", MF_PTR, struct br_kcc_controllers, workload_endpoint,
	   .sub = &kcc_period_desc),
	MF("serviceAccount", MF_PTR, struct br_kcc_controllers, service_account,
	   .sub = &kcc_period_desc),
	MF("namespace", MF_PTR, struct br_kcc_controllers, namespace, .sub = &kcc_period_desc),
	MF("loadBalancer", MF_PTR, struct br_kcc_controllers, load_balancer, .sub = &kcc_lb_desc),
};
static MODEL_STRUCT(kcc_controllers_desc, struct br_kcc_controllers, kcc_controllers_fields);

static const struct model_field kcc_fields[] = {
	MF("logSeverityScreen", MF_STRING, struct br_kcc_spec, log_severity_screen,
	   .flags = MF_NOCASE, .enum_values = E("Debug", "Info", "Warning", "Error", "Fatal")),
	MF("healthChecks", MF_STRING, struct br_kcc_spec, health_checks,
	   .enum_values = ENABLED_DISABLED),
	MF("etcdV3CompactionPeriod", MF_CUSTOM, struct br_kcc_spec, etcd_v3_compaction_period,
	   .codec = &model_codec_duration),
	MF("prometheusMetricsPort", MF_OPT_INT, struct br_kcc_spec, prometheus_metrics_port,
	   .min = 0, .max = 65535),
	MF("controllers", MF_STRUCT, struct br_kcc_spec, controllers, .sub = &kcc_controllers_desc,
	   .flags = MF_EMIT_EMPTY),
	MF("debugProfilePort", MF_OPT_INT, struct br_kcc_spec, debug_profile_port, .min = 0,
	   .max = 65535),
};
MODEL_STRUCT(model_kcc_desc, struct br_kcc_spec, kcc_fields);

static const struct model_field kcc_status_fields[] = {
	MF("runningConfig", MF_STRUCT, struct br_kcc_status, running_config,
	   .sub = &model_kcc_desc),
	MF("environmentVars", MF_MAP, struct br_kcc_status, environment_vars),
};
MODEL_STRUCT(model_kcc_status_desc, struct br_kcc_status, kcc_status_fields);

/* --- ClusterInformation ---------------------------------------------------------------- */

/* Calico's record of its installation (written by calico-node; a user may apply one). */
static const struct model_field clusterinfo_fields[] = {
	MF("clusterGUID", MF_STRING, struct br_clusterinfo_spec, cluster_guid),
	MF("clusterType", MF_STRING, struct br_clusterinfo_spec, cluster_type),
	MF("calicoVersion", MF_STRING, struct br_clusterinfo_spec, calico_version),
	MF("datastoreReady", MF_OPT_BOOL, struct br_clusterinfo_spec, datastore_ready),
	MF("variant", MF_STRING, struct br_clusterinfo_spec, variant),
};
MODEL_STRUCT(model_clusterinfo_desc, struct br_clusterinfo_spec, clusterinfo_fields);

/* --- CalicoNodeStatus ----------------------------------------------------------------- */

static void check_cns_class(struct model_ctx *c, const char *s)
{
	if (!streq(s, "Agent") && !streq(s, "BGP") && !streq(s, "Routes"))
		model_err(c, "\"%s\" is not one of Agent, BGP, Routes", s);
}

static const struct model_field cns_fields[] = {
	MF("node", MF_STRING, struct br_cns_spec, node, .check = model_check_dns_subdomain),
	MF_L("classes", MF_STRLIST, struct br_cns_spec, classes, n_classes,
	     .check_item = check_cns_class),
	MF("updatePeriodSeconds", MF_OPT_INT, struct br_cns_spec, update_period_seconds, .min = 0,
	   .max = UINT32_MAX),
};

static void check_cns(struct model_ctx *c, const void *obj)
{
	const struct br_cns_spec *s = obj;
	model_check_no_dups(c, "classes", s->classes, s->n_classes);
}

static void default_cns(struct model_ctx *c, void *obj)
{
	(void)c;
	struct br_cns_spec *s = obj;
	if (!s->update_period_seconds.set)
		s->update_period_seconds = (struct opt_int){ true, 10 };
}

MODEL_STRUCT(model_cns_desc, struct br_cns_spec, cns_fields, .defaults = default_cns,
	     .check = check_cns);

static const struct model_field cns_daemon_fields[] = {
	MF("state", MF_STRING, struct br_cns_daemon, state, .enum_values = E("Ready", "NotReady")),
	MF("version", MF_STRING, struct br_cns_daemon, version),
	MF("routerID", MF_STRING, struct br_cns_daemon, router_id),
	MF("lastBootTime", MF_STRING, struct br_cns_daemon, last_boot_time),
	MF("lastReconfigurationTime", MF_STRING, struct br_cns_daemon, last_reconfiguration_time),
};
static MODEL_STRUCT(cns_daemon_desc, struct br_cns_daemon, cns_daemon_fields);

static const struct model_field cns_peer_fields[] = {
	MF("peerIP", MF_STRING, struct br_cns_peer, peer_ip),
	MF("type", MF_STRING, struct br_cns_peer, type,
	   .enum_values = E("NodeMesh", "NodePeer", "GlobalPeer")),
	MF("state", MF_STRING, struct br_cns_peer, state,
	   .enum_values = E("Idle", "Connect", "Active", "OpenSent", "OpenConfirm", "Established",
			    "Close")),
	MF("since", MF_STRING, struct br_cns_peer, since),
};
static MODEL_STRUCT(cns_peer_desc, struct br_cns_peer, cns_peer_fields);

static const struct model_field cns_learned_fields[] = {
	MF("sourceType", MF_STRING, struct br_cns_learned, source_type,
	   .enum_values = E("Kernel", "Static", "Direct", "NodeMesh", "BGPPeer")),
	MF("peerIP", MF_STRING, struct br_cns_learned, peer_ip),
};
static MODEL_STRUCT(cns_learned_desc, struct br_cns_learned, cns_learned_fields);

static const struct model_field cns_route_fields[] = {
	MF("type", MF_STRING, struct br_cns_route, type, .enum_values = E("FIB", "RIB")),
	MF("destination", MF_STRING, struct br_cns_route, destination),
	MF("gateway", MF_STRING, struct br_cns_route, gateway),
	MF("interface", MF_STRING, struct br_cns_route, iface),
	MF("learnedFrom", MF_STRUCT, struct br_cns_route, learned_from, .sub = &cns_learned_desc),
};
static MODEL_STRUCT(cns_route_desc, struct br_cns_route, cns_route_fields);

static const struct model_field cns_agent_fields[] = {
	MF("birdV4", MF_STRUCT, struct br_cns_agent, bird_v4, .sub = &cns_daemon_desc),
	MF("birdV6", MF_STRUCT, struct br_cns_agent, bird_v6, .sub = &cns_daemon_desc),
};
static MODEL_STRUCT(cns_agent_desc, struct br_cns_agent, cns_agent_fields);

static const struct model_field cns_bgp_fields[] = {
	MF("numberEstablishedV4", MF_INT, struct br_cns_bgp, established_v4),
	MF("numberNotEstablishedV4", MF_INT, struct br_cns_bgp, not_established_v4),
	MF("numberEstablishedV6", MF_INT, struct br_cns_bgp, established_v6),
	MF("numberNotEstablishedV6", MF_INT, struct br_cns_bgp, not_established_v6),
	MF_L("peersV4", MF_LIST, struct br_cns_bgp, peers_v4, n_peers_v4, .sub = &cns_peer_desc),
	MF_L("peersV6", MF_LIST, struct br_cns_bgp, peers_v6, n_peers_v6, .sub = &cns_peer_desc),
};
static MODEL_STRUCT(cns_bgp_desc, struct br_cns_bgp, cns_bgp_fields);

static const struct model_field cns_routes_fields[] = {
	MF_L("routesV4", MF_LIST, struct br_cns_routes, routes_v4, n_routes_v4,
	     .sub = &cns_route_desc),
	MF_L("routesV6", MF_LIST, struct br_cns_routes, routes_v6, n_routes_v6,
	     .sub = &cns_route_desc),
};
static MODEL_STRUCT(cns_routes_desc, struct br_cns_routes, cns_routes_fields);

static const struct model_field cns_status_fields[] = {
	MF("lastUpdated", MF_STRING, struct br_cns_status, last_updated),
	MF("agent", MF_STRUCT, struct br_cns_status, agent, .sub = &cns_agent_desc),
	MF("bgp", MF_STRUCT, struct br_cns_status, bgp, .sub = &cns_bgp_desc),
	MF("routes", MF_STRUCT, struct br_cns_status, routes, .sub = &cns_routes_desc),
};
MODEL_STRUCT(model_cns_status_desc, struct br_cns_status, cns_status_fields);
