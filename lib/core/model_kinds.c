/*
 * The kinds Brindle stores: the kind table, and the Calico kinds' field tables
 * (Go struct field order of the upstream APIs, which is the canonical encoding
 * order), apiserver-style defaults, and the checks that span fields. The
 * Kubernetes kinds' tables are in model_kinds_k8s.c, field-level validators in
 * model_validate.c, the error context in model_ctx.c; the engine that walks
 * these tables (model_desc.c) reads them only through the kind table.
 */
#include "model_internal.h"
#include "model_felix_fields.h"

#include <brindle/core/net.h>

#include <ctype.h>
#include <inttypes.h>
#include <stdlib.h>
#include <stdio.h>
#include <strings.h>

#define E(...) ((const char *const[]){ __VA_ARGS__, NULL })

static bool one_of(const char *s, const char *const *set)
{
	for (; *set; set++)
		if (streq(s, *set))
			return true;
	return false;
}

/* --- Calico rules ------------------------------------------------------------------------ */

static const struct model_field icmp_fields[] = {
	MF("type", MF_OPT_INT, struct br_icmp, type, .min = 0, .max = 254),
	MF("code", MF_OPT_INT, struct br_icmp, code, .min = 0, .max = 255),
};

static void check_icmp(struct model_ctx *c, const void *obj)
{
	const struct br_icmp *i = obj;
	if (i->code.set && !i->type.set)
		model_err_at(c, "code", "requires type to be set");
}
static MODEL_STRUCT(icmp_desc, struct br_icmp, icmp_fields, .check = check_icmp);

static const struct model_field sa_fields[] = {
	MF_L("names", MF_STRLIST, struct br_sa_match, names, n_names,
	     .check_item = model_check_dns_subdomain_item),
	MF("selector", MF_STRING, struct br_sa_match, selector, .check = model_check_selector),
};
static MODEL_STRUCT(sa_desc, struct br_sa_match, sa_fields);

static const struct model_field svc_fields[] = {
	MF("name", MF_STRING, struct br_svc_match, name, .flags = MF_REQUIRED),
	MF("namespace", MF_STRING, struct br_svc_match, namespace, .check = model_check_dns_label),
};
static MODEL_STRUCT(svc_desc, struct br_svc_match, svc_fields);

static const struct model_field entity_fields[] = {
	MF_L("nets", MF_STRLIST, struct br_entity_rule, nets, n_nets,
	     .check_item = model_check_net_item),
	MF_L("notNets", MF_STRLIST, struct br_entity_rule, not_nets, n_not_nets,
	     .check_item = model_check_net_item),
	MF("selector", MF_STRING, struct br_entity_rule, selector, .check = model_check_selector),
	MF("notSelector", MF_STRING, struct br_entity_rule, not_selector,
	   .check = model_check_selector),
	MF("namespaceSelector", MF_STRING, struct br_entity_rule, namespace_selector,
	   .check = model_check_selector),
	MF("ports", MF_CUSTOM, struct br_entity_rule, ports, .codec = &model_codec_port_list),
	MF("notPorts", MF_CUSTOM, struct br_entity_rule, not_ports,
	   .codec = &model_codec_port_list),
	MF("serviceAccounts", MF_PTR, struct br_entity_rule, service_accounts, .sub = &sa_desc),
	MF("services", MF_PTR, struct br_entity_rule, services, .sub = &svc_desc),
};
static MODEL_STRUCT(entity_desc, struct br_entity_rule, entity_fields);

static const struct model_field rule_meta_fields[] = {
	MF("annotations", MF_MAP, struct br_rule_meta, annotations),
};
static MODEL_STRUCT(rule_meta_desc, struct br_rule_meta, rule_meta_fields);

static bool proto_has_ports(const struct br_protocol *p)
{
	return p->set &&
	       (p->number == 6 || p->number == 17 || p->number == 132 || p->number == 136);
}

static bool proto_is_icmp(const struct br_protocol *p)
{
	return p->set && (p->number == 1 || p->number == 58);
}

static void check_entity_family(struct model_ctx *c, const char *side, const char *field,
				const char *const *nets, size_t n, int64_t version)
{
	for (size_t i = 0; i < n; i++) {
		struct br_cidr cidr;
		if (cidr_parse(nets[i], true, &cidr) < 0)
			continue;
		int fam = version == 4 ? AF_INET : AF_INET6;
		if (cidr.ip.family != fam) {
			size_t m = model_push(c, side);
			model_push(c, field);
			model_push_index(c, i);
			model_err(c,
				  "\"%s\" is not an IPv%" PRId64 " network (ipVersion is %" PRId64
				  ")",
				  nets[i], version, version);
			model_pop(c, m);
		}
	}
}

static void check_entity_ports(struct model_ctx *c, const struct br_rule *r, const char *side,
			       const struct br_entity_rule *e)
{
	static const char *const names[] = { "ports", "notPorts" };
	const struct br_port_list *lists[] = { &e->ports, &e->not_ports };
	for (size_t k = 0; k < 2; k++) {
		if (!lists[k]->n || proto_has_ports(&r->protocol))
			continue;
		/* As Calico: without a protocol, named ports are allowed (an endpoint's named
		 * port carries its protocol); numbers and ranges need one. */
		bool all_named = true;
		for (size_t i = 0; i < lists[k]->n; i++)
			all_named &= lists[k]->v[i].name != NULL && lists[k]->v[i].name[0];
		if (!r->protocol.set && all_named)
			continue;
		size_t m = model_push(c, side);
		model_err_at(c, names[k],
			     r->protocol.set ? "requires protocol TCP, UDP, SCTP or UDPLite"
					     : "a port number or range requires protocol TCP, UDP, "
					       "SCTP or UDPLite (named ports do not)");
		model_pop(c, m);
	}
}

static void check_rule(struct model_ctx *c, const void *obj)
{
	const struct br_rule *r = obj;
	check_entity_ports(c, r, "source", &r->source);
	check_entity_ports(c, r, "destination", &r->destination);
	if (r->icmp && !proto_is_icmp(&r->protocol))
		model_err_at(c, "icmp", "requires protocol ICMP or ICMPv6");
	if (r->not_icmp && !proto_is_icmp(&r->protocol))
		model_err_at(c, "notICMP", "requires protocol ICMP or ICMPv6");
	if (r->ip_version.set) {
		int64_t v = r->ip_version.v;
		if (v != 4 && v != 6) {
			model_err_at(c, "ipVersion", "must be 4 or 6");
			return;
		}
		if (r->protocol.set &&
		    ((v == 4 && r->protocol.number == 58) || (v == 6 && r->protocol.number == 1)))
			model_err_at(c, "protocol", "%s does not match ipVersion %" PRId64,
				     r->protocol.name ? r->protocol.name : "protocol", v);
		check_entity_family(c, "source", "nets", r->source.nets, r->source.n_nets, v);
		check_entity_family(c, "source", "notNets", r->source.not_nets,
				    r->source.n_not_nets, v);
		check_entity_family(c, "destination", "nets", r->destination.nets,
				    r->destination.n_nets, v);
		check_entity_family(c, "destination", "notNets", r->destination.not_nets,
				    r->destination.n_not_nets, v);
	}
}

/*
 * Calico's `http` match (methods, paths) needs an L7 proxy in the path (its
 * application layer policy), which Brindle does not have. Enforcing the rest of
 * such a rule would allow more than the user wrote, so a user's policy with it
 * is refused, and one found stored fails closed (felix).
 */
static bool http_decode(struct model_ctx *c, const struct jv *v, void *field)
{
	(void)v;
	if (c->stored) {
		/* Stored by another writer (kubectl, Calico): kept as a mark, so that felix fails
		 * the policy closed rather than dropping it (and its denies) as undecodable. */
		*(bool *)field = true;
		return true;
	}
	model_err(c, "matching HTTP requests needs an L7 proxy, which Brindle does not have; "
		     "the policy is refused rather than enforced without this match");
	return false;
}

static struct jv *http_encode(struct arena *a, const void *field)
{
	(void)a;
	(void)field;
	return NULL;
}

/* In the CRD, so that the apiserver keeps the field and the refusal is Brindle's. */
static struct jv *http_schema(struct arena *a)
{
	struct jv *s = jv_object(a);
	jv_add(a, s, "type", jv_string(a, "object"));
	jv_add(a, s, "x-kubernetes-preserve-unknown-fields", jv_bool(a, true));
	return s;
}

static const struct model_codec http_codec = { http_decode, http_encode, http_schema };

static const struct model_field rule_fields[] = {
	MF("action", MF_STRING, struct br_rule, action, .flags = MF_REQUIRED,
	   .enum_values = E("Allow", "Deny", "Log", "Pass")),
	MF("ipVersion", MF_OPT_INT, struct br_rule, ip_version),
	MF("protocol", MF_CUSTOM, struct br_rule, protocol, .codec = &model_codec_protocol),
	MF("icmp", MF_PTR, struct br_rule, icmp, .sub = &icmp_desc),
	MF("notProtocol", MF_CUSTOM, struct br_rule, not_protocol, .codec = &model_codec_protocol),
	MF("notICMP", MF_PTR, struct br_rule, not_icmp, .sub = &icmp_desc),
	MF("source", MF_STRUCT, struct br_rule, source, .sub = &entity_desc),
	MF("destination", MF_STRUCT, struct br_rule, destination, .sub = &entity_desc),
	MF("metadata", MF_PTR, struct br_rule, metadata, .sub = &rule_meta_desc),
	MF("http", MF_CUSTOM, struct br_rule, has_http, .codec = &http_codec),
};
static MODEL_STRUCT(rule_desc, struct br_rule, rule_fields, .check = check_rule);

/* --- Calico NetworkPolicy / GlobalNetworkPolicy ------------------------------------------ */

/* Calico's defaulting of types: Ingress when there are ingress rules or no rules at
 * all, Egress when there are egress rules. */
static void default_policy(struct model_ctx *c, void *obj)
{
	struct br_policy_spec *s = obj;
	if (!s->tier)
		s->tier = "default";
	if (s->n_types)
		return;
	bool in = s->n_ingress || !s->n_egress, eg = s->n_egress;
	if (in && eg)
		s->types = model_strlist(c->a, 2, "Ingress", "Egress");
	else
		s->types = model_strlist(c->a, 1, in ? "Ingress" : "Egress");
	s->n_types = in && eg ? 2 : 1;
}

static void check_performance_hint(struct model_ctx *c, const char *s)
{
	if (!streq(s, "AssumeNeededOnEveryNode"))
		model_err(c, "\"%s\" is not a performance hint (AssumeNeededOnEveryNode)", s);
}

static void check_policy(struct model_ctx *c, const void *obj)
{
	const struct br_policy_spec *s = obj;
	const char *why;
	if (s->tier && !valid_dns_label(s->tier, &why))
		model_err_at(c, "tier", "\"%s\" is not a tier name: %s", s->tier, why);
	model_check_no_dups(c, "types", s->types, s->n_types);
	if (s->pre_dnat && s->do_not_track)
		model_err_at(c, "preDNAT", "cannot be combined with doNotTrack");
	if ((s->pre_dnat || s->do_not_track) && !s->apply_on_forward)
		model_err_at(c, s->pre_dnat ? "preDNAT" : "doNotTrack",
			     "requires applyOnForward: true");
	if (s->pre_dnat && s->n_egress)
		model_err_at(c, "preDNAT", "a preDNAT policy cannot have egress rules");
}

#define POLICY_COMMON_FIELDS                                                                   \
	MF("tier", MF_STRING, struct br_policy_spec, tier),                                    \
		MF("order", MF_OPT_FLOAT, struct br_policy_spec, order),                       \
		MF("selector", MF_STRING, struct br_policy_spec, selector,                     \
		   .check = model_check_selector),                                             \
		MF("serviceAccountSelector", MF_STRING, struct br_policy_spec,                 \
		   service_account_selector, .check = model_check_selector),                   \
		MF_L("types", MF_STRLIST, struct br_policy_spec, types, n_types,               \
		     .check_item = model_check_policy_type_item),                              \
		MF_L("ingress", MF_LIST, struct br_policy_spec, ingress, n_ingress,            \
		     .sub = &rule_desc),                                                       \
		MF_L("egress", MF_LIST, struct br_policy_spec, egress, n_egress,               \
		     .sub = &rule_desc),                                                       \
		MF_L("performanceHints", MF_STRLIST, struct br_policy_spec, performance_hints, \
		     n_performance_hints, .check_item = check_performance_hint)
#define STAGED_ACTION_FIELD(st) \
	MF("stagedAction", MF_STRING, st, staged_action, .enum_values = MODEL_STAGED_ACTIONS)

static const struct model_field np_fields[] = { POLICY_COMMON_FIELDS };
static MODEL_STRUCT(np_desc, struct br_policy_spec, np_fields, .defaults = default_policy,
		    .check = check_policy);

/* What a GlobalNetworkPolicy (and its staged kind) has besides. */
#define GLOBAL_POLICY_FIELDS                                                          \
	MF("namespaceSelector", MF_STRING, struct br_policy_spec, namespace_selector, \
	   .check = model_check_selector),                                            \
		MF("doNotTrack", MF_BOOL, struct br_policy_spec, do_not_track),       \
		MF("preDNAT", MF_BOOL, struct br_policy_spec, pre_dnat),              \
		MF("applyOnForward", MF_BOOL, struct br_policy_spec, apply_on_forward)

static const struct model_field gnp_fields[] = { POLICY_COMMON_FIELDS, GLOBAL_POLICY_FIELDS };
static MODEL_STRUCT(gnp_desc, struct br_policy_spec, gnp_fields, .defaults = default_policy,
		    .check = check_policy);

/* A staged Delete names the policy it would delete: no spec but its tier (Calico's rule). */
static void check_staged_policy(struct model_ctx *c, const void *obj)
{
	const struct br_policy_spec *s = obj;
	check_policy(c, obj);
	if (!s->staged_action || !streq(s->staged_action, "Delete"))
		return;
	if (s->n_ingress || s->n_egress || (s->selector && *s->selector) || s->order.set ||
	    (s->service_account_selector && *s->service_account_selector) ||
	    (s->namespace_selector && *s->namespace_selector) || s->do_not_track || s->pre_dnat ||
	    s->apply_on_forward || s->n_performance_hints)
		model_err_at(c, "stagedAction",
			     "with Delete, the spec holds nothing but tier (and types)");
}

/* The staged kinds: the same spec and a stagedAction (what applying it would do). */
static const struct model_field snp_fields[] = {
	POLICY_COMMON_FIELDS,
	STAGED_ACTION_FIELD(struct br_policy_spec),
};
static MODEL_STRUCT(snp_desc, struct br_policy_spec, snp_fields, .defaults = default_policy,
		    .check = check_staged_policy);

static const struct model_field sgnp_fields[] = {
	POLICY_COMMON_FIELDS,
	GLOBAL_POLICY_FIELDS,
	STAGED_ACTION_FIELD(struct br_policy_spec),
};
static MODEL_STRUCT(sgnp_desc, struct br_policy_spec, sgnp_fields, .defaults = default_policy,
		    .check = check_staged_policy);

static const struct model_field nets_fields[] = {
	MF_L("nets", MF_STRLIST, struct br_nets_spec, nets, n_nets,
	     .check_item = model_check_net_item),
};
static MODEL_STRUCT(nets_desc, struct br_nets_spec, nets_fields);

static void check_profile(struct model_ctx *c, const void *obj)
{
	const struct br_profile_spec *s = obj;
	const struct br_rule *lists[] = { s->ingress, s->egress };
	const size_t ns[] = { s->n_ingress, s->n_egress };
	const char *names[] = { "ingress", "egress" };
	for (size_t k = 0; k < 2; k++)
		for (size_t i = 0; i < ns[k]; i++)
			if (streq(lists[k][i].action, "Pass")) {
				size_t m = model_push(c, names[k]);
				model_push_index(c, i);
				model_err_at(c, "action", "Pass is not allowed in profiles");
				model_pop(c, m);
			}
}

static const struct model_field profile_fields[] = {
	MF_L("ingress", MF_LIST, struct br_profile_spec, ingress, n_ingress, .sub = &rule_desc),
	MF_L("egress", MF_LIST, struct br_profile_spec, egress, n_egress, .sub = &rule_desc),
	MF("labelsToApply", MF_MAP, struct br_profile_spec, labels_to_apply,
	   .check = model_check_label_map),
};
static MODEL_STRUCT(profile_desc, struct br_profile_spec, profile_fields, .check = check_profile);

/* --- endpoints --------------------------------------------------------------------------- */

static void default_endpoint_port(struct model_ctx *c, void *obj)
{
	struct br_endpoint_port *p = obj;
	if (!p->protocol)
		p->protocol = "TCP";
}

static const struct model_field endpoint_port_fields[] = {
	MF("name", MF_STRING, struct br_endpoint_port, name, .flags = MF_REQUIRED,
	   .check = model_check_port_name),
	MF("protocol", MF_STRING, struct br_endpoint_port, protocol, .flags = MF_NOCASE,
	   .enum_values = E("TCP", "UDP", "SCTP")),
	MF("port", MF_INT, struct br_endpoint_port, port, .flags = MF_REQUIRED, .min = 1,
	   .max = 65535),
	MF("hostPort", MF_INT, struct br_endpoint_port, host_port, .min = 0, .max = 65535),
	MF("hostIP", MF_STRING, struct br_endpoint_port, host_ip, .check = model_check_ip),
};
static MODEL_STRUCT(endpoint_port_desc, struct br_endpoint_port, endpoint_port_fields,
		    .defaults = default_endpoint_port);

/* A workload's port may be a mapped host port without a name (a Pod's hostPort), as in Calico. */
static const struct model_field wep_port_fields[] = {
	MF("name", MF_STRING, struct br_endpoint_port, name, .check = model_check_port_name),
	MF("protocol", MF_STRING, struct br_endpoint_port, protocol, .flags = MF_NOCASE,
	   .enum_values = E("TCP", "UDP", "SCTP")),
	MF("port", MF_INT, struct br_endpoint_port, port, .flags = MF_REQUIRED, .min = 1,
	   .max = 65535),
	MF("hostPort", MF_INT, struct br_endpoint_port, host_port, .min = 0, .max = 65535),
	MF("hostIP", MF_STRING, struct br_endpoint_port, host_ip, .check = model_check_ip),
};

static void check_wep_port(struct model_ctx *c, const void *obj)
{
	const struct br_endpoint_port *p = obj;
	if ((!p->name || !*p->name) && !p->host_port)
		model_err_at(c, "name", "required (unless hostPort is set)");
}
static MODEL_STRUCT(wep_port_desc, struct br_endpoint_port, wep_port_fields,
		    .defaults = default_endpoint_port, .check = check_wep_port);

static const struct model_field ip_nat_fields[] = {
	MF("internalIP", MF_STRING, struct br_ip_nat, internal_ip, .flags = MF_REQUIRED,
	   .check = model_check_ip),
	MF("externalIP", MF_STRING, struct br_ip_nat, external_ip, .flags = MF_REQUIRED,
	   .check = model_check_ip),
};
static MODEL_STRUCT(ip_nat_desc, struct br_ip_nat, ip_nat_fields);

static const struct model_field wep_fields[] = {
	MF("orchestrator", MF_STRING, struct br_wep_spec, orchestrator),
	MF("workload", MF_STRING, struct br_wep_spec, workload),
	MF("node", MF_STRING, struct br_wep_spec, node, .check = model_check_dns_subdomain),
	MF("containerID", MF_STRING, struct br_wep_spec, container_id),
	MF("pod", MF_STRING, struct br_wep_spec, pod),
	MF("endpoint", MF_STRING, struct br_wep_spec, endpoint),
	MF("serviceAccountName", MF_STRING, struct br_wep_spec, service_account_name),
	MF_L("ipNetworks", MF_STRLIST, struct br_wep_spec, ip_networks, n_ip_networks,
	     .check_item = model_check_wep_net_item),
	MF("ipv4Gateway", MF_STRING, struct br_wep_spec, ipv4_gateway, .check = model_check_ipv4),
	MF_L("ipNATs", MF_LIST, struct br_wep_spec, ip_nats, n_ip_nats, .sub = &ip_nat_desc),
	MF_L("profiles", MF_STRLIST, struct br_wep_spec, profiles, n_profiles,
	     .check_item = model_check_nonempty_item),
	MF("interfaceName", MF_STRING, struct br_wep_spec, interface_name, .flags = MF_REQUIRED,
	   .check = model_check_wep_iface),
	MF("mac", MF_STRING, struct br_wep_spec, mac, .check = model_check_mac),
	MF_L("ports", MF_LIST, struct br_wep_spec, ports, n_ports, .sub = &wep_port_desc),
	MF_L("allowSpoofedSourcePrefixes", MF_STRLIST, struct br_wep_spec,
	     allow_spoofed_source_prefixes, n_allow_spoofed_source_prefixes,
	     .check_item = model_check_cidr_item),
};
static MODEL_STRUCT(wep_desc, struct br_wep_spec, wep_fields);

static void check_hep(struct model_ctx *c, const void *obj)
{
	const struct br_hep_spec *s = obj;
	if ((!s->interface_name || !*s->interface_name) && !s->n_expected_ips)
		model_err(c, "one of interfaceName or expectedIPs is required");
}

static const struct model_field hep_fields[] = {
	MF("node", MF_STRING, struct br_hep_spec, node, .flags = MF_REQUIRED,
	   .check = model_check_dns_subdomain),
	MF("interfaceName", MF_STRING, struct br_hep_spec, interface_name),
	MF_L("expectedIPs", MF_STRLIST, struct br_hep_spec, expected_ips, n_expected_ips,
	     .check_item = model_check_ip_item),
	MF_L("profiles", MF_STRLIST, struct br_hep_spec, profiles, n_profiles,
	     .check_item = model_check_nonempty_item),
	MF_L("ports", MF_LIST, struct br_hep_spec, ports, n_ports, .sub = &endpoint_port_desc),
};

static void check_hep_iface(struct model_ctx *c, const void *obj)
{
	const struct br_hep_spec *s = obj;
	check_hep(c, obj);
	/* "*" is the all-interfaces host endpoint. */
	if (s->interface_name && *s->interface_name && !streq(s->interface_name, "*")) {
		size_t m = model_push(c, "interfaceName");
		model_check_iface_name(c, &s->interface_name);
		model_pop(c, m);
	}
}
static MODEL_STRUCT(hep_desc, struct br_hep_spec, hep_fields, .check = check_hep_iface);

/* --- Node ---------------------------------------------------------------------------------- */

static const struct model_field node_bgp_fields[] = {
	MF("ipv4Address", MF_STRING, struct br_node_bgp, ipv4_address,
	   .check = model_check_ipv4_cidr),
	MF("ipv6Address", MF_STRING, struct br_node_bgp, ipv6_address,
	   .check = model_check_ipv6_cidr),
	MF("ipv4IPIPTunnelAddr", MF_STRING, struct br_node_bgp, ipv4_ipip_tunnel_addr,
	   .check = model_check_ipv4),
	MF("asNumber", MF_CUSTOM, struct br_node_bgp, as_number, .codec = &model_codec_asn),
	MF("routeReflectorClusterID", MF_STRING, struct br_node_bgp, route_reflector_cluster_id,
	   .check = model_check_ipv4),
};
static MODEL_STRUCT(node_bgp_desc, struct br_node_bgp, node_bgp_fields);

static const struct model_field node_address_fields[] = {
	MF("address", MF_STRING, struct br_node_address, address, .flags = MF_REQUIRED),
	MF("type", MF_STRING, struct br_node_address, type),
};
static MODEL_STRUCT(node_address_desc, struct br_node_address, node_address_fields);

static const struct model_field orch_ref_fields[] = {
	MF("nodeName", MF_STRING, struct br_orch_ref, node_name),
	MF("orchestrator", MF_STRING, struct br_orch_ref, orchestrator, .flags = MF_REQUIRED),
};
static MODEL_STRUCT(orch_ref_desc, struct br_orch_ref, orch_ref_fields);

static const struct model_field node_wg_fields[] = {
	MF("interfaceIPv4Address", MF_STRING, struct br_node_wireguard, interface_ipv4_address,
	   .check = model_check_ipv4),
	MF("interfaceIPv6Address", MF_STRING, struct br_node_wireguard, interface_ipv6_address,
	   .check = model_check_ip),
};
static MODEL_STRUCT(node_wg_desc, struct br_node_wireguard, node_wg_fields);

static const struct model_field node_fields[] = {
	MF("bgp", MF_PTR, struct br_node_spec, bgp, .sub = &node_bgp_desc),
	MF("ipv4VXLANTunnelAddr", MF_STRING, struct br_node_spec, ipv4_vxlan_tunnel_addr,
	   .check = model_check_ipv4),
	MF("vxlanTunnelMACAddr", MF_STRING, struct br_node_spec, vxlan_tunnel_mac_addr,
	   .check = model_check_mac),
	MF("ipv6VXLANTunnelAddr", MF_STRING, struct br_node_spec, ipv6_vxlan_tunnel_addr,
	   .check = model_check_ip),
	MF("vxlanTunnelMACAddrV6", MF_STRING, struct br_node_spec, vxlan_tunnel_mac_addr_v6,
	   .check = model_check_mac),
	MF_L("addresses", MF_LIST, struct br_node_spec, addresses, n_addresses,
	     .sub = &node_address_desc),
	MF_L("orchRefs", MF_LIST, struct br_node_spec, orch_refs, n_orch_refs,
	     .sub = &orch_ref_desc),
	MF("wireguard", MF_PTR, struct br_node_spec, wireguard, .sub = &node_wg_desc),
};
static MODEL_STRUCT(node_desc, struct br_node_spec, node_fields);

static const struct model_field node_status_fields[] = {
	MF("wireguardPublicKey", MF_STRING, struct br_node_status, wireguard_public_key),
	MF_L("podCIDRs", MF_STRLIST, struct br_node_status, pod_cidrs, n_pod_cidrs,
	     .check_item = model_check_cidr_item),
};
static MODEL_STRUCT(node_status_desc, struct br_node_status, node_status_fields);

/* --- IPPool ---------------------------------------------------------------------------------- */

static void default_ippool(struct model_ctx *c, void *obj)
{
	struct br_ippool_spec *s = obj;
	struct br_cidr cidr;
	bool v6 = false;
	if (s->cidr && cidr_parse(s->cidr, false, &cidr) == 0) {
		/* Stored as the network address, as Calico does. */
		char buf[CIDR_STRLEN];
		cidr_mask(&cidr);
		s->cidr = arena_strdup(c->a, cidr_str(&cidr, buf));
		v6 = cidr.ip.family == AF_INET6;
	}
	if (!s->block_size.set)
		s->block_size = (struct opt_int){ true, v6 ? 122 : 26 };
	if (!s->ipip_mode)
		s->ipip_mode = "Never";
	if (!s->vxlan_mode)
		s->vxlan_mode = "Never";
	if (!s->node_selector)
		s->node_selector = "all()";
	if (!s->assignment_mode)
		s->assignment_mode = "Automatic";
	if (!s->n_allowed_uses) {
		s->allowed_uses = model_strlist(c->a, 2, "Workload", "Tunnel");
		s->n_allowed_uses = 2;
	}
}

static void check_allowed_use(struct model_ctx *c, const char *s)
{
	if (!one_of(s, E("Workload", "Tunnel", "LoadBalancer")))
		model_err(c, "\"%s\" is not one of Workload, Tunnel or LoadBalancer", s);
}

static void check_ippool(struct model_ctx *c, const void *obj)
{
	const struct br_ippool_spec *s = obj;
	struct br_cidr cidr;
	if (!s->cidr || cidr_parse(s->cidr, false, &cidr) < 0)
		return;
	bool v6 = cidr.ip.family == AF_INET6;
	int64_t bs = s->block_size.v;
	int64_t lo = v6 ? 116 : 20, hi = v6 ? 128 : 32;
	if (bs < lo || bs > hi)
		model_err_at(c, "blockSize",
			     "%" PRId64 " is out of range for IPv%d pools (%" PRId64 "-%" PRId64
			     ")",
			     bs, v6 ? 6 : 4, lo, hi);
	else if (cidr.len > bs)
		model_err_at(c, "cidr", "prefix /%u is smaller than one block (/%" PRId64 ")",
			     cidr.len, bs);
	bool ipip = s->ipip_mode && !streq(s->ipip_mode, "Never");
	bool vxlan = s->vxlan_mode && !streq(s->vxlan_mode, "Never");
	if (ipip && vxlan)
		model_err(c, "ipipMode and vxlanMode cannot both be enabled");
	if (ipip && v6)
		model_err_at(c, "ipipMode", "IPIP is not supported for IPv6 pools");
	model_check_no_dups(c, "allowedUses", s->allowed_uses, s->n_allowed_uses);
}

static const struct model_field ippool_fields[] = {
	MF("cidr", MF_STRING, struct br_ippool_spec, cidr, .flags = MF_REQUIRED,
	   .check = model_check_cidr),
	MF("vxlanMode", MF_STRING, struct br_ippool_spec, vxlan_mode,
	   .enum_values = E("Never", "Always", "CrossSubnet")),
	MF("ipipMode", MF_STRING, struct br_ippool_spec, ipip_mode,
	   .enum_values = E("Never", "Always", "CrossSubnet")),
	MF("natOutgoing", MF_BOOL, struct br_ippool_spec, nat_outgoing),
	MF("disabled", MF_BOOL, struct br_ippool_spec, disabled),
	MF("disableBGPExport", MF_BOOL, struct br_ippool_spec, disable_bgp_export),
	MF("blockSize", MF_OPT_INT, struct br_ippool_spec, block_size),
	MF("nodeSelector", MF_STRING, struct br_ippool_spec, node_selector,
	   .check = model_check_selector),
	MF_L("allowedUses", MF_STRLIST, struct br_ippool_spec, allowed_uses, n_allowed_uses,
	     .check_item = check_allowed_use),
	MF("assignmentMode", MF_STRING, struct br_ippool_spec, assignment_mode,
	   .enum_values = E("Automatic", "Manual")),
	MF("namespaceSelector", MF_STRING, struct br_ippool_spec, namespace_selector,
	   .check = model_check_selector),
};
static MODEL_STRUCT(ippool_desc, struct br_ippool_spec, ippool_fields, .defaults = default_ippool,
		    .check = check_ippool);

/* --- BGP ------------------------------------------------------------------------------------- */

/* An entry without a cidr is accepted and advertises nothing, as in Calico. */
static const struct model_field cidr_entry_fields[] = {
	MF("cidr", MF_STRING, struct br_cidr_entry, cidr, .check = model_check_cidr),
};
static MODEL_STRUCT(cidr_entry_desc, struct br_cidr_entry, cidr_entry_fields);

/*
 * "aa:nn" (standard, 16-bit parts) or "aa:nn:mm" (large, 32-bit parts): what
 * BIRD takes as (aa,nn) and (aa,nn,mm). Anything else would make the rendered
 * configuration fail its check, and with it every node using the resource.
 */
bool community_valid(const char *s)
{
	size_t parts = 1, digits = 0;
	bool ok = true;
	for (const char *p = s; ok && *p; p++) {
		if (*p == ':') {
			ok = digits > 0;
			parts++;
			digits = 0;
		} else {
			ok = isdigit((unsigned char)*p) && ++digits <= 10;
		}
	}
	ok = ok && digits > 0 && (parts == 2 || parts == 3);
	for (const char *p = s; ok && *p; p = strchr(p, ':') ? strchr(p, ':') + 1 : "") {
		unsigned long long v = strtoull(p, NULL, 10);
		ok = v <= (parts == 2 ? 65535ull : 4294967295ull);
	}
	return ok;
}

static void check_community_value(struct model_ctx *c, const void *field)
{
	const char *s = *(const char *const *)field;
	if (!community_valid(s))
		model_err(c,
			  "\"%s\" is not a community: aa:nn with parts up to 65535, or a large "
			  "community aa:nn:mm with parts up to 4294967295",
			  s);
}

static const struct model_field community_fields[] = {
	MF("name", MF_STRING, struct br_community, name, .flags = MF_REQUIRED),
	MF("value", MF_STRING, struct br_community, value, .flags = MF_REQUIRED,
	   .check = check_community_value),
};
static MODEL_STRUCT(community_desc, struct br_community, community_fields);

static const struct model_field prefix_adv_fields[] = {
	MF("cidr", MF_STRING, struct br_prefix_adv, cidr, .flags = MF_REQUIRED,
	   .check = model_check_cidr),
	MF_L("communities", MF_STRLIST, struct br_prefix_adv, communities, n_communities,
	     .check_item = model_check_nonempty_item),
};
static MODEL_STRUCT(prefix_adv_desc, struct br_prefix_adv, prefix_adv_fields);

static const struct model_field secret_ref_fields[] = {
	MF("name", MF_STRING, struct br_secret_key_ref, name, .flags = MF_REQUIRED,
	   .check = model_check_dns_subdomain),
	MF("key", MF_STRING, struct br_secret_key_ref, key, .flags = MF_REQUIRED),
};
static MODEL_STRUCT(secret_ref_desc, struct br_secret_key_ref, secret_ref_fields);

static void check_password(struct model_ctx *c, const void *obj)
{
	const struct br_bgp_password *p = obj;
	int n = !!p->secret_key_ref + !!(p->file && *p->file) + !!(p->env && *p->env);
	if (n != 1)
		model_err(c, "exactly one of secretKeyRef, file or env is required");
}

/* A password file: a path inside confd's secrets directory (confd checks where it leads). */
static void check_password_file(struct model_ctx *c, const void *field)
{
	const char *s = *(const char *const *)field;
	bool ok = *s && strlen(s) <= 255;
	for (const char *p = s; ok && *p; p++)
		ok = (unsigned char)*p >= 0x20 && *p != 0x7f;
	for (const char *p = s; ok && p; p = strchr(p, '/') ? strchr(p, '/') + 1 : NULL)
		ok = !(p[0] == '.' && p[1] == '.' && (p[2] == '/' || !p[2]));
	if (!ok)
		model_err(c,
			  "\"%s\" is not a password file path (printable, no \"..\"; confd reads "
			  "only files inside its secrets directory)",
			  s);
}

static void check_env_name(struct model_ctx *c, const void *field)
{
	const char *s = *(const char *const *)field;
	bool ok = *s && strlen(s) <= 128 && !isdigit((unsigned char)*s);
	for (const char *p = s; ok && *p; p++)
		ok = isalnum((unsigned char)*p) || *p == '_';
	if (!ok)
		model_err(c, "\"%s\" is not an environment variable name ([A-Za-z_][A-Za-z0-9_]*)",
			  s);
}

static const struct model_field password_fields[] = {
	MF("secretKeyRef", MF_PTR, struct br_bgp_password, secret_key_ref, .sub = &secret_ref_desc),
	MF("file", MF_STRING, struct br_bgp_password, file, .check = check_password_file),
	MF("env", MF_STRING, struct br_bgp_password, env, .check = check_env_name),
};
static MODEL_STRUCT(password_desc, struct br_bgp_password, password_fields,
		    .check = check_password);

static const char *const log_levels[] = { "Debug", "Info", "Warning", "Error", "Fatal", NULL };

/*
 * BGP times as BIRD and the protocol take them: a graceful restart time fits
 * the capability's 12 bits (RFC 4724: at most 4095 s); a keepalive is 1 s to
 * half of BIRD's hold time (240 s), or BIRD refuses or warns.
 */
static void check_restart_time(struct model_ctx *c, const void *field)
{
	const struct br_duration *d = field;
	if (d->text && (d->ms < 0 || d->ms > 4095 * 1000ll))
		model_err(c, "%s is not a graceful restart time from 0s to 4095s (BGP's limit)",
			  d->text);
}

static void check_keepalive_time(struct model_ctx *c, const void *field)
{
	const struct br_duration *d = field;
	if (d->text && (d->ms <= 0 || d->ms > 120 * 1000ll))
		model_err(c,
			  "%s is not a keepalive time from 1s to 120s (half of BIRD's hold time)",
			  d->text);
}

static const struct model_field bgpconfig_fields[] = {
	MF("logSeverityScreen", MF_STRING, struct br_bgpconfig_spec, log_severity_screen,
	   .flags = MF_NOCASE, .enum_values = log_levels),
	MF("nodeToNodeMeshEnabled", MF_OPT_BOOL, struct br_bgpconfig_spec,
	   node_to_node_mesh_enabled),
	MF("asNumber", MF_CUSTOM, struct br_bgpconfig_spec, as_number, .codec = &model_codec_asn),
	MF_L("serviceLoadBalancerIPs", MF_LIST, struct br_bgpconfig_spec, service_load_balancer_ips,
	     n_service_load_balancer_ips, .sub = &cidr_entry_desc),
	MF_L("serviceExternalIPs", MF_LIST, struct br_bgpconfig_spec, service_external_ips,
	     n_service_external_ips, .sub = &cidr_entry_desc),
	MF_L("serviceClusterIPs", MF_LIST, struct br_bgpconfig_spec, service_cluster_ips,
	     n_service_cluster_ips, .sub = &cidr_entry_desc),
	MF("listenPort", MF_OPT_INT, struct br_bgpconfig_spec, listen_port, .min = 1, .max = 65535),
	MF_L("communities", MF_LIST, struct br_bgpconfig_spec, communities, n_communities,
	     .sub = &community_desc),
	MF_L("prefixAdvertisements", MF_LIST, struct br_bgpconfig_spec, prefix_advertisements,
	     n_prefix_advertisements, .sub = &prefix_adv_desc),
	MF("bindMode", MF_STRING, struct br_bgpconfig_spec, bind_mode,
	   .enum_values = E("None", "NodeIP")),
	MF_L("ignoredInterfaces", MF_STRLIST, struct br_bgpconfig_spec, ignored_interfaces,
	     n_ignored_interfaces, .check_item = model_check_nonempty_item),
	MF("nodeMeshPassword", MF_PTR, struct br_bgpconfig_spec, node_mesh_password,
	   .sub = &password_desc),
	MF("nodeMeshMaxRestartTime", MF_CUSTOM, struct br_bgpconfig_spec,
	   node_mesh_max_restart_time, .codec = &model_codec_duration, .check = check_restart_time),
	MF("serviceLoadBalancerAggregation", MF_STRING, struct br_bgpconfig_spec,
	   service_lb_aggregation, .enum_values = E("Enabled", "Disabled")),
	MF("localWorkloadPeeringIPV4", MF_STRING, struct br_bgpconfig_spec,
	   local_workload_peering_ipv4, .check = model_check_ipv4),
	MF("localWorkloadPeeringIPV6", MF_STRING, struct br_bgpconfig_spec,
	   local_workload_peering_ipv6, .check = model_check_ip),
};

static void check_bgpconfig_spec(struct model_ctx *c, const void *obj)
{
	const struct br_bgpconfig_spec *s = obj;
	/* Communities named in prefixAdvertisements must be defined or literal. */
	for (size_t i = 0; i < s->n_prefix_advertisements; i++) {
		const struct br_prefix_adv *pa = &s->prefix_advertisements[i];
		for (size_t j = 0; j < pa->n_communities; j++) {
			const char *name = pa->communities[j];
			bool literal = strchr(name, ':') != NULL;
			bool known = literal && community_valid(name);
			for (size_t k = 0; !literal && !known && k < s->n_communities; k++)
				known = streq(s->communities[k].name, name);
			if (!known) {
				size_t m = model_push(c, "prefixAdvertisements");
				model_push_index(c, i);
				model_push(c, "communities");
				model_push_index(c, j);
				if (literal)
					check_community_value(c, &name);
				else
					model_err(c,
						  "community \"%s\" is not defined in communities",
						  name);
				model_pop(c, m);
			}
		}
	}
}
static MODEL_STRUCT(bgpconfig_desc, struct br_bgpconfig_spec, bgpconfig_fields,
		    .check = check_bgpconfig_spec);

static void check_bgppeer(struct model_ctx *c, const void *obj)
{
	const struct br_bgppeer_spec *s = obj;
	bool node = s->node && *s->node, node_sel = s->node_selector && *s->node_selector;
	bool peer_ip = s->peer_ip && *s->peer_ip, peer_sel = s->peer_selector && *s->peer_selector;
	if (node && node_sel)
		model_err(c, "node and nodeSelector cannot both be set");
	if (peer_ip && peer_sel)
		model_err(c, "peerIP and peerSelector cannot both be set");
	/* Neither peerIP nor peerSelector is not an error (Calico has no such rule): the peer
	 * selects no one, or only local workloads (localWorkloadSelector). */
	if (peer_ip && !s->as_number.set)
		model_err_at(c, "asNumber", "required with peerIP");
}

static const struct model_field bgppeer_fields[] = {
	MF("node", MF_STRING, struct br_bgppeer_spec, node, .check = model_check_dns_subdomain),
	MF("peerIP", MF_STRING, struct br_bgppeer_spec, peer_ip, .check = model_check_peer_ip),
	MF("asNumber", MF_CUSTOM, struct br_bgppeer_spec, as_number, .codec = &model_codec_asn),
	MF("nodeSelector", MF_STRING, struct br_bgppeer_spec, node_selector,
	   .check = model_check_selector),
	MF("peerSelector", MF_STRING, struct br_bgppeer_spec, peer_selector,
	   .check = model_check_selector),
	MF("keepOriginalNextHop", MF_BOOL, struct br_bgppeer_spec, keep_original_next_hop),
	MF("nextHopMode", MF_STRING, struct br_bgppeer_spec, next_hop_mode,
	   .enum_values = E("Auto", "Self", "Keep")),
	MF("password", MF_PTR, struct br_bgppeer_spec, password, .sub = &password_desc),
	MF("sourceAddress", MF_STRING, struct br_bgppeer_spec, source_address,
	   .enum_values = E("UseNodeIP", "None")),
	MF("maxRestartTime", MF_CUSTOM, struct br_bgppeer_spec, max_restart_time,
	   .codec = &model_codec_duration, .check = check_restart_time),
	MF("numAllowedLocalASNumbers", MF_OPT_INT, struct br_bgppeer_spec,
	   num_allowed_local_as_numbers, .min = 1, .max = 10),
	MF("ttlSecurity", MF_OPT_INT, struct br_bgppeer_spec, ttl_security, .min = 1, .max = 255),
	MF("keepaliveTime", MF_CUSTOM, struct br_bgppeer_spec, keepalive_time,
	   .codec = &model_codec_duration, .check = check_keepalive_time),
	MF("reachableBy", MF_STRING, struct br_bgppeer_spec, reachable_by, .check = model_check_ip),
	MF("localASNumber", MF_CUSTOM, struct br_bgppeer_spec, local_as_number,
	   .codec = &model_codec_asn),
	MF("reversePeering", MF_STRING, struct br_bgppeer_spec, reverse_peering,
	   .enum_values = E("Auto", "Manual")),
	MF_L("filters", MF_STRLIST, struct br_bgppeer_spec, filters, n_filters,
	     .check_item = model_check_dns_subdomain_item),
	MF("localWorkloadSelector", MF_STRING, struct br_bgppeer_spec, local_workload_selector,
	   .check = model_check_selector),
};
static MODEL_STRUCT(bgppeer_desc, struct br_bgppeer_spec, bgppeer_fields, .check = check_bgppeer);

/* --- FelixConfiguration ------------------------------------------------------------------------
 */

static void default_proto_port(struct model_ctx *c, void *obj)
{
	struct br_proto_port *p = obj;
	if (!p->protocol)
		p->protocol = "TCP";
}

static const struct model_field proto_port_fields[] = {
	MF("protocol", MF_STRING, struct br_proto_port, protocol, .flags = MF_NOCASE,
	   .enum_values = E("TCP", "UDP", "SCTP")),
	MF("port", MF_INT, struct br_proto_port, port, .flags = MF_REQUIRED, .min = 1,
	   .max = 65535),
	MF("net", MF_STRING, struct br_proto_port, net, .check = model_check_cidr),
};
static MODEL_STRUCT(proto_port_desc, struct br_proto_port, proto_port_fields,
		    .defaults = default_proto_port);

static void check_iface_prefix(struct model_ctx *c, const void *field)
{
	const char *s = *(const char *const *)field;
	bool ok = *s != '\0';
	for (const char *p = s; ok && *p; p++)
		ok = isalnum((unsigned char)*p) || *p == ',' || *p == '-' || *p == '_' || *p == '.';
	if (!ok || strlen(s) > 64)
		model_err(c, "\"%s\" is not a comma-separated list of interface name prefixes", s);
}

/* Where a health or metrics server listens: an IPv4 address, "localhost", or "" for all. */
static void check_listen_host(struct model_ctx *c, const void *field)
{
	const char *s = *(const char *const *)field;
	struct br_ip ip;
	if (*s && !streq(s, "localhost") && (ip_parse(s, &ip) < 0 || ip.family != AF_INET))
		model_err(c, "\"%s\" is not an IPv4 address, localhost or empty (all addresses)",
			  s);
}

/*
 * The event log: a file name in felix's event log directory, or an absolute
 * path (felix accepts it only inside that directory), or "-" (standard output).
 */
static void check_event_log_file(struct model_ctx *c, const void *field)
{
	const char *s = *(const char *const *)field;
	bool ok = *s && strlen(s) <= 255 && !streq(s, ".") && !streq(s, "..") &&
		  !str_has_suffix(s, "/") && !strstr(s, "/../") && !str_has_suffix(s, "/..") &&
		  !strstr(s, "/./");
	for (const char *p = s; ok && *p; p++)
		ok = (unsigned char)*p >= 0x20 && *p != 0x7f;
	if (ok && strchr(s, '/') && s[0] != '/')
		ok = false;
	if (!ok)
		model_err(c,
			  "\"%s\" is not a file name or an absolute path of a file (felix writes "
			  "the event log only in its event log directory)",
			  s);
}

static void check_mark_mask(struct model_ctx *c, const void *field)
{
	const struct opt_int *m = field;
	if (m->v < 0 || m->v > 0xffffffffll)
		model_err(c, "must be a 32-bit mask");
	else if (__builtin_popcountll((unsigned long long)m->v) < 5)
		model_err(c, "0x%" PRIx64 " leaves fewer than 5 mark bits for Brindle", m->v);
}

static const struct model_field felixconfig_fields[] = {
	MF("logSeverityScreen", MF_STRING, struct br_felixconfig_spec, log_severity_screen,
	   .flags = MF_NOCASE, .enum_values = log_levels),
	MF("interfacePrefix", MF_STRING, struct br_felixconfig_spec, interface_prefix,
	   .check = check_iface_prefix),
	MF("interfaceExclude", MF_STRING, struct br_felixconfig_spec, interface_exclude),
	MF("healthEnabled", MF_OPT_BOOL, struct br_felixconfig_spec, health_enabled),
	MF("healthHost", MF_STRING, struct br_felixconfig_spec, health_host,
	   .check = check_listen_host),
	MF("healthPort", MF_OPT_INT, struct br_felixconfig_spec, health_port, .min = 1,
	   .max = 65535),
	MF("prometheusMetricsEnabled", MF_OPT_BOOL, struct br_felixconfig_spec,
	   prometheus_metrics_enabled),
	MF("prometheusMetricsPort", MF_OPT_INT, struct br_felixconfig_spec, prometheus_metrics_port,
	   .min = 1, .max = 65535),
	MF("prometheusMetricsHost", MF_STRING, struct br_felixconfig_spec, prometheus_metrics_host,
	   .check = check_listen_host),
	MF("routeRefreshInterval", MF_CUSTOM, struct br_felixconfig_spec, route_refresh_interval,
	   .codec = &model_codec_duration),
	MF("iptablesRefreshInterval", MF_CUSTOM, struct br_felixconfig_spec,
	   iptables_refresh_interval, .codec = &model_codec_duration),
	MF("ipsetsRefreshInterval", MF_CUSTOM, struct br_felixconfig_spec, ipsets_refresh_interval,
	   .codec = &model_codec_duration),
	MF("vxlanMTU", MF_OPT_INT, struct br_felixconfig_spec, vxlan_mtu, .min = 0, .max = 65535),
	MF("ipipMTU", MF_OPT_INT, struct br_felixconfig_spec, ipip_mtu, .min = 0, .max = 65535),
	MF("vxlanPort", MF_OPT_INT, struct br_felixconfig_spec, vxlan_port, .min = 1, .max = 65535),
	MF("vxlanVNI", MF_OPT_INT, struct br_felixconfig_spec, vxlan_vni, .min = 1,
	   .max = 16777215),
	MF("vxlanEnabled", MF_OPT_BOOL, struct br_felixconfig_spec, vxlan_enabled),
	MF("ipipEnabled", MF_OPT_BOOL, struct br_felixconfig_spec, ipip_enabled),
	MF("iptablesMarkMask", MF_OPT_INT, struct br_felixconfig_spec, iptables_mark_mask,
	   .check = check_mark_mask),
	MF("defaultEndpointToHostAction", MF_STRING, struct br_felixconfig_spec,
	   default_endpoint_to_host_action, .flags = MF_NOCASE,
	   .enum_values = E("Drop", "Accept", "Return")),
	MF("chainInsertMode", MF_STRING, struct br_felixconfig_spec, chain_insert_mode,
	   .flags = MF_NOCASE, .enum_values = E("Insert", "Append")),
	MF("iptablesBackend", MF_STRING, struct br_felixconfig_spec, iptables_backend,
	   .enum_values = E("Legacy", "NFT", "Auto")),
	MF("nftablesMode", MF_STRING, struct br_felixconfig_spec, nftables_mode,
	   .enum_values = E("Enabled", "Disabled", "Auto")),
	{ .name = "failsafeInboundHostPorts",
	  .type = MF_LIST,
	  .off = offsetof(struct br_felixconfig_spec, failsafe_inbound_host_ports),
	  .count_off = offsetof(struct br_felixconfig_spec, n_failsafe_inbound_host_ports),
	  .present_off = offsetof(struct br_felixconfig_spec, failsafe_inbound_host_ports_set),
	  .sub = &proto_port_desc },
	{ .name = "failsafeOutboundHostPorts",
	  .type = MF_LIST,
	  .off = offsetof(struct br_felixconfig_spec, failsafe_outbound_host_ports),
	  .count_off = offsetof(struct br_felixconfig_spec, n_failsafe_outbound_host_ports),
	  .present_off = offsetof(struct br_felixconfig_spec, failsafe_outbound_host_ports_set),
	  .sub = &proto_port_desc },
	MF("logPrefix", MF_STRING, struct br_felixconfig_spec, log_prefix),
	MF("deviceRouteProtocol", MF_OPT_INT, struct br_felixconfig_spec, device_route_protocol,
	   .min = 1, .max = 255),
	MF("removeExternalRoutes", MF_OPT_BOOL, struct br_felixconfig_spec, remove_external_routes),
	/* Brindle's own: the connection event log (docs/policy.md) */
	MF("policyEventLogEnabled", MF_OPT_BOOL, struct br_felixconfig_spec,
	   policy_event_log_enabled),
	MF("policyEventLogAllowed", MF_OPT_BOOL, struct br_felixconfig_spec,
	   policy_event_log_allowed),
	MF("policyEventLogFile", MF_STRING, struct br_felixconfig_spec, policy_event_log_file,
	   .check = check_event_log_file),
	/* Brindle's own: how wide a workload endpoint's networks may be (docs/security.md) */
	MF("workloadIPv4MinPrefixLength", MF_OPT_INT, struct br_felixconfig_spec,
	   workload_ipv4_min_prefix_length, .min = 1, .max = 32),
	MF("workloadIPv6MinPrefixLength", MF_OPT_INT, struct br_felixconfig_spec,
	   workload_ipv6_min_prefix_length, .min = 1, .max = 128),
	FELIX_NO_EFFECT_FIELDS,
};
static MODEL_STRUCT(felixconfig_desc, struct br_felixconfig_spec, felixconfig_fields);

/* --- IPAM ------------------------------------------------------------------------------------- */

static const struct model_field ipamconfig_fields[] = {
	MF("strictAffinity", MF_BOOL, struct br_ipamconfig_spec, strict_affinity),
	MF("maxBlocksPerHost", MF_OPT_INT, struct br_ipamconfig_spec, max_blocks_per_host, .min = 0,
	   .max = 1000000),
	MF("autoAllocateBlocks", MF_OPT_BOOL, struct br_ipamconfig_spec, auto_allocate_blocks),
	MF("kubeVirtVMAddressPersistence", MF_STRING, struct br_ipamconfig_spec,
	   kubevirt_vm_address_persistence, .enum_values = E("Enabled", "Disabled")),
};
static MODEL_STRUCT(ipamconfig_desc, struct br_ipamconfig_spec, ipamconfig_fields);

static const struct model_field affinity_fields[] = {
	MF("node", MF_STRING, struct br_blockaffinity_spec, node, .flags = MF_REQUIRED),
	MF("cidr", MF_STRING, struct br_blockaffinity_spec, cidr, .flags = MF_REQUIRED,
	   .check = model_check_cidr),
	MF("state", MF_STRING, struct br_blockaffinity_spec, state, .flags = MF_REQUIRED,
	   .enum_values = E("pending", "confirmed", "pendingDeletion")),
	MF("deleted", MF_BOOL, struct br_blockaffinity_spec, deleted, .flags = MF_CRD_STRING),
};
static MODEL_STRUCT(affinity_desc, struct br_blockaffinity_spec, affinity_fields);

static const struct model_field ipam_attr_fields[] = {
	MF("handle_id", MF_STRING, struct br_ipam_attr, handle_id),
	MF("secondary", MF_MAP, struct br_ipam_attr, secondary),
};
static MODEL_STRUCT(ipam_attr_desc, struct br_ipam_attr, ipam_attr_fields);

static const struct model_field ipamblock_fields[] = {
	MF("cidr", MF_STRING, struct br_ipamblock_spec, cidr, .flags = MF_REQUIRED,
	   .check = model_check_cidr),
	MF("affinity", MF_STRING, struct br_ipamblock_spec, affinity),
	MF("strictAffinity", MF_BOOL, struct br_ipamblock_spec, strict_affinity),
	MF("allocations", MF_CUSTOM, struct br_ipamblock_spec, allocations,
	   .codec = &model_codec_int_list),
	MF("unallocated", MF_CUSTOM, struct br_ipamblock_spec, unallocated,
	   .codec = &model_codec_int_list),
	MF_L("attributes", MF_LIST, struct br_ipamblock_spec, attributes, n_attributes,
	     .sub = &ipam_attr_desc),
	MF("sequenceNumber", MF_INT, struct br_ipamblock_spec, sequence_number),
	/* Calico's, kept as they are: who claimed the block when, and per-ordinal sequence numbers.
	 */
	MF("affinityClaimTime", MF_STRING, struct br_ipamblock_spec, affinity_claim_time),
	MF("sequenceNumberForAllocation", MF_CUSTOM, struct br_ipamblock_spec,
	   sequence_number_for_allocation, .codec = &model_codec_str_int_map),
	MF("deleted", MF_BOOL, struct br_ipamblock_spec, deleted),
};
static MODEL_STRUCT(ipamblock_desc, struct br_ipamblock_spec, ipamblock_fields);

static const struct model_field ipamhandle_fields[] = {
	MF("handleID", MF_STRING, struct br_ipamhandle_spec, handle_id, .flags = MF_REQUIRED),
	MF("block", MF_CUSTOM, struct br_ipamhandle_spec, block, .codec = &model_codec_str_int_map),
	MF("deleted", MF_BOOL, struct br_ipamhandle_spec, deleted),
};
static MODEL_STRUCT(ipamhandle_desc, struct br_ipamhandle_spec, ipamhandle_fields);

/* --- kind-level rules ------------------------------------------------------------------------- */

/* FelixConfiguration and BGPConfiguration: "default" or "node.<node name>". */
static void check_config_name(struct model_ctx *c, const struct br_object *o)
{
	const char *n = o->meta.name, *why;
	if (!streq(n, "default") &&
	    !(str_has_prefix(n, "node.") && valid_dns_subdomain(n + 5, &why)))
		model_err_at(c, "metadata.name", "must be \"default\" or \"node.<node name>\"");
}

static void check_bgpconfig(struct model_ctx *c, const struct br_object *o)
{
	const struct br_bgpconfig *b = (const struct br_bgpconfig *)o;
	check_config_name(c, o);
	if (streq(o->meta.name, "default"))
		return;
	const struct {
		const char *field;
		bool set;
	} global_only[] = {
		{ "nodeToNodeMeshEnabled", b->spec.node_to_node_mesh_enabled.set },
		{ "asNumber", b->spec.as_number.set },
		{ "serviceClusterIPs", b->spec.n_service_cluster_ips > 0 },
		{ "serviceExternalIPs", b->spec.n_service_external_ips > 0 },
		{ "serviceLoadBalancerIPs", b->spec.n_service_load_balancer_ips > 0 },
		{ "nodeMeshPassword", b->spec.node_mesh_password != NULL },
		{ "nodeMeshMaxRestartTime", b->spec.node_mesh_max_restart_time.text != NULL },
	};
	for (size_t i = 0; i < ARRAY_SIZE(global_only); i++)
		if (global_only[i].set)
			model_err_at(c, arena_printf(c->a, "spec.%s", global_only[i].field),
				     "can only be set in the default BGPConfiguration");
}

static void check_singleton_default(struct model_ctx *c, const struct br_object *o)
{
	if (!streq(o->meta.name, "default"))
		model_err_at(c, "metadata.name", "must be \"default\"");
}

/* --- the kind table -----------------------------------------------------------------------------
 */

#define CALICO_V3    "projectcalico.org/v3"
#define CALICO_GROUP "projectcalico.org"
/* Calico's CRD in crd.projectcalico.org/v1 (docs/crds.md). */
#define CRD(k, p) .crd_kind = k, .crd_plural = p
#define KIND(idv, kindname, apiv, grp, plu, ns, type, specdesc, ...) \
	[idv] = { .id = idv,                                         \
		  .kind = kindname,                                  \
		  .api_version = apiv,                               \
		  .group = grp,                                      \
		  .plural = plu,                                     \
		  .namespaced = ns,                                  \
		  .size = sizeof(type),                              \
		  .spec_off = offsetof(type, spec),                  \
		  .spec = specdesc,                                  \
		  __VA_ARGS__ }

const struct br_kind model_kinds[KIND_COUNT] = {
	KIND(KIND_NODE, "Node", CALICO_V3, CALICO_GROUP, "nodes", false, struct br_node, &node_desc,
	     .aliases = E("no"), .status_off = offsetof(struct br_node, status),
	     .status = &node_status_desc),
	KIND(KIND_IPPOOL, "IPPool", CALICO_V3, CALICO_GROUP, "ippools", false, struct br_ippool,
	     &ippool_desc, .aliases = E("ipp", "pool", "pools"), CRD("IPPool", "ippools")),
	KIND(KIND_BGPCONFIGURATION, "BGPConfiguration", CALICO_V3, CALICO_GROUP,
	     "bgpconfigurations", false, struct br_bgpconfig, &bgpconfig_desc,
	     .aliases = E("bgpconfig", "bgpconfigs"), .check = check_bgpconfig,
	     CRD("BGPConfiguration", "bgpconfigurations")),
	KIND(KIND_BGPPEER, "BGPPeer", CALICO_V3, CALICO_GROUP, "bgppeers", false, struct br_bgppeer,
	     &bgppeer_desc, .aliases = E("bgpp"), CRD("BGPPeer", "bgppeers")),
	KIND(KIND_FELIXCONFIGURATION, "FelixConfiguration", CALICO_V3, CALICO_GROUP,
	     "felixconfigurations", false, struct br_felixconfig, &felixconfig_desc,
	     .aliases = E("felixconfig", "felixconfigs"), .check = check_config_name,
	     CRD("FelixConfiguration", "felixconfigurations")),
	KIND(KIND_NETWORKPOLICY, "NetworkPolicy", CALICO_V3, CALICO_GROUP, "networkpolicies", true,
	     struct br_networkpolicy, &np_desc, .aliases = E("np", "policy", "policies", "cnp"),
	     CRD("NetworkPolicy", "networkpolicies")),
	KIND(KIND_GLOBALNETWORKPOLICY, "GlobalNetworkPolicy", CALICO_V3, CALICO_GROUP,
	     "globalnetworkpolicies", false, struct br_networkpolicy, &gnp_desc,
	     .aliases = E("gnp"), CRD("GlobalNetworkPolicy", "globalnetworkpolicies")),
	KIND(KIND_NETWORKSET, "NetworkSet", CALICO_V3, CALICO_GROUP, "networksets", true,
	     struct br_networkset, &nets_desc, .aliases = E("netset", "netsets"),
	     CRD("NetworkSet", "networksets")),
	KIND(KIND_GLOBALNETWORKSET, "GlobalNetworkSet", CALICO_V3, CALICO_GROUP,
	     "globalnetworksets", false, struct br_networkset, &nets_desc,
	     .aliases = E("gns", "globalnetset"), CRD("GlobalNetworkSet", "globalnetworksets")),
	KIND(KIND_HOSTENDPOINT, "HostEndpoint", CALICO_V3, CALICO_GROUP, "hostendpoints", false,
	     struct br_hostendpoint, &hep_desc, .aliases = E("hep", "heps"),
	     CRD("HostEndpoint", "hostendpoints")),
	KIND(KIND_PROFILE, "Profile", CALICO_V3, CALICO_GROUP, "profiles", false, struct br_profile,
	     &profile_desc, .aliases = E("pro")),
	KIND(KIND_WORKLOADENDPOINT, "WorkloadEndpoint", CALICO_V3, CALICO_GROUP,
	     "workloadendpoints", true, struct br_workloadendpoint, &wep_desc,
	     .aliases = E("wep", "weps")),
	KIND(KIND_IPAMCONFIGURATION, "IPAMConfiguration", CALICO_V3, CALICO_GROUP,
	     "ipamconfigurations", false, struct br_ipamconfig, &ipamconfig_desc,
	     .aliases = E("ipamconfig"), .check = check_singleton_default,
	     CRD("IPAMConfig", "ipamconfigs")),
	KIND(KIND_K8S_NETWORKPOLICY, "NetworkPolicy", "networking.k8s.io/v1", "networking.k8s.io",
	     "networkpolicies", true, struct br_k8s_networkpolicy, &model_k8s_np_desc,
	     .aliases = E("netpol", "knp", "k8snetworkpolicy", "k8snetworkpolicies")),
	KIND(KIND_NAMESPACE, "Namespace", "v1", "", "namespaces", false, struct br_namespace,
	     &model_ns_spec_desc, .aliases = E("ns"),
	     .status_off = offsetof(struct br_namespace, status), .status = &model_ns_status_desc,
	     .defaults = model_default_namespace),
	KIND(KIND_SERVICE, "Service", "v1", "", "services", true, struct br_service,
	     &model_service_desc, .aliases = E("svc"),
	     .status_off = offsetof(struct br_service, status),
	     .status = &model_service_status_desc, .check = model_check_service_name),
	KIND(KIND_ENDPOINTSLICE, "EndpointSlice", "discovery.k8s.io/v1", "discovery.k8s.io",
	     "endpointslices", true, struct br_endpointslice, &model_endpointslice_desc,
	     .spec_inline = true),
	KIND(KIND_BLOCKAFFINITY, "BlockAffinity", CALICO_V3, CALICO_GROUP, "blockaffinities", false,
	     struct br_blockaffinity, &affinity_desc, .internal = true,
	     CRD("BlockAffinity", "blockaffinities")),
	KIND(KIND_IPAMBLOCK, "IPAMBlock", CALICO_V3, CALICO_GROUP, "ipamblocks", false,
	     struct br_ipamblock, &ipamblock_desc, .internal = true,
	     CRD("IPAMBlock", "ipamblocks")),
	KIND(KIND_IPAMHANDLE, "IPAMHandle", CALICO_V3, CALICO_GROUP, "ipamhandles", false,
	     struct br_ipamhandle, &ipamhandle_desc, .internal = true,
	     CRD("IPAMHandle", "ipamhandles")),
	KIND(KIND_TIER, "Tier", CALICO_V3, CALICO_GROUP, "tiers", false, struct br_tier,
	     &model_tier_desc, .defaults = model_default_tier, .check = model_check_tier,
	     CRD("Tier", "tiers")),
	KIND(KIND_IPRESERVATION, "IPReservation", CALICO_V3, CALICO_GROUP, "ipreservations", false,
	     struct br_ipreservation, &model_ipreservation_desc, .aliases = E("ipres"),
	     CRD("IPReservation", "ipreservations")),
	KIND(KIND_BGPFILTER, "BGPFilter", CALICO_V3, CALICO_GROUP, "bgpfilters", false,
	     struct br_bgpfilter, &model_bgpfilter_desc, CRD("BGPFilter", "bgpfilters")),
	KIND(KIND_KUBECONTROLLERSCONFIGURATION, "KubeControllersConfiguration", CALICO_V3,
	     CALICO_GROUP, "kubecontrollersconfigurations", false, struct br_kubecontrollersconfig,
	     &model_kcc_desc, .aliases = E("kcc", "kubecontrollersconfig"),
	     .status_off = offsetof(struct br_kubecontrollersconfig, status),
	     .status = &model_kcc_status_desc, .check = check_singleton_default,
	     CRD("KubeControllersConfiguration", "kubecontrollersconfigurations")),
	KIND(KIND_CALICONODESTATUS, "CalicoNodeStatus", CALICO_V3, CALICO_GROUP,
	     "caliconodestatuses", false, struct br_caliconodestatus, &model_cns_desc,
	     .aliases = E("caliconodestatus", "cns"),
	     .status_off = offsetof(struct br_caliconodestatus, status),
	     .status = &model_cns_status_desc, CRD("CalicoNodeStatus", "caliconodestatuses")),
	KIND(KIND_STAGEDNETWORKPOLICY, "StagedNetworkPolicy", CALICO_V3, CALICO_GROUP,
	     "stagednetworkpolicies", true, struct br_networkpolicy, &snp_desc, .aliases = E("snp"),
	     CRD("StagedNetworkPolicy", "stagednetworkpolicies")),
	KIND(KIND_STAGEDGLOBALNETWORKPOLICY, "StagedGlobalNetworkPolicy", CALICO_V3, CALICO_GROUP,
	     "stagedglobalnetworkpolicies", false, struct br_networkpolicy, &sgnp_desc,
	     .aliases = E("sgnp"), CRD("StagedGlobalNetworkPolicy", "stagedglobalnetworkpolicies")),
	KIND(KIND_STAGEDK8SNETWORKPOLICY, "StagedKubernetesNetworkPolicy", CALICO_V3, CALICO_GROUP,
	     "stagedkubernetesnetworkpolicies", true, struct br_k8s_networkpolicy,
	     &model_staged_k8s_np_desc, .aliases = E("sknp"),
	     CRD("StagedKubernetesNetworkPolicy", "stagedkubernetesnetworkpolicies")),
	KIND(KIND_CLUSTERINFORMATION, "ClusterInformation", CALICO_V3, CALICO_GROUP,
	     "clusterinformations", false, struct br_clusterinfo, &model_clusterinfo_desc,
	     .aliases = E("clusterinfo"), .check = check_singleton_default,
	     CRD("ClusterInformation", "clusterinformations")),
};
