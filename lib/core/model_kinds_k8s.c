/*
 * The Kubernetes kinds Brindle stores (NetworkPolicy of networking.k8s.io,
 * Namespace, Service, EndpointSlice): their field tables in the upstream Go
 * struct field order, the apiserver's defaults and the checks that span
 * fields. Their entries in the kind table are in model_kinds.c.
 */
#include "model_internal.h"

#include <brindle/core/net.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#define E(...) ((const char *const[]){ __VA_ARGS__, NULL })

/* --- Kubernetes label selectors --------------------------------------------------- */

static void check_label_req(struct model_ctx *c, const void *obj)
{
	const struct br_label_req *r = obj;
	if (!r->op)
		return;
	bool set_op = streq(r->op, "In") || streq(r->op, "NotIn");
	if (set_op && r->n_values == 0)
		model_err_at(c, "values", "must be non-empty for operator %s", r->op);
	if (!set_op && r->n_values > 0)
		model_err_at(c, "values", "must be empty for operator %s", r->op);
}

static const struct model_field label_req_fields[] = {
	MF("key", MF_STRING, struct br_label_req, key, .flags = MF_REQUIRED),
	MF("operator", MF_STRING, struct br_label_req, op, .flags = MF_REQUIRED,
	   .enum_values = E("In", "NotIn", "Exists", "DoesNotExist")),
	MF_L("values", MF_STRLIST, struct br_label_req, values, n_values,
	     .check_item = model_check_label_value_item),
};

static void check_label_req_key(struct model_ctx *c, const void *obj)
{
	const struct br_label_req *r = obj;
	if (r->key && *r->key) {
		size_t m = model_push(c, "key");
		model_check_label_key_item(c, r->key);
		model_pop(c, m);
	}
	check_label_req(c, obj);
}

static MODEL_STRUCT(label_req_desc, struct br_label_req, label_req_fields,
		    .check = check_label_req_key);

static const struct model_field label_selector_fields[] = {
	MF("matchLabels", MF_MAP, struct br_label_selector, match_labels,
	   .check = model_check_label_map),
	MF_L("matchExpressions", MF_LIST, struct br_label_selector, exprs, n_exprs,
	     .sub = &label_req_desc),
};
static MODEL_STRUCT(label_selector_desc, struct br_label_selector, label_selector_fields);

/* --- Kubernetes NetworkPolicy ---------------------------------------------------------- */

static void default_k8s_port(struct model_ctx *c, void *obj)
{
	struct br_k8s_np_port *p = obj;
	if (!p->protocol)
		p->protocol = "TCP";
}

static void check_k8s_port(struct model_ctx *c, const void *obj)
{
	const struct br_k8s_np_port *p = obj;
	const char *why;
	if (p->port.type == IOS_INT && (p->port.i < 1 || p->port.i > 65535))
		model_err_at(c, "port", "%" PRId64 " is out of range (1-65535)", p->port.i);
	if (p->port.type == IOS_STRING && !model_valid_port_name(p->port.s, &why))
		model_err_at(c, "port", "\"%s\": %s", p->port.s, why);
	if (!p->end_port.set)
		return;
	if (p->port.type == IOS_NONE)
		model_err_at(c, "endPort", "requires port to be set");
	else if (p->port.type == IOS_STRING)
		model_err_at(c, "endPort", "requires a numeric port, not the port name \"%s\"",
			     p->port.s);
	else if (p->end_port.v < p->port.i)
		model_err_at(c, "endPort", "must be >= port (%" PRId64 ")", p->port.i);
}

static const struct model_field k8s_port_fields[] = {
	MF("protocol", MF_STRING, struct br_k8s_np_port, protocol,
	   .enum_values = E("TCP", "UDP", "SCTP")),
	MF("port", MF_CUSTOM, struct br_k8s_np_port, port, .codec = &model_codec_int_or_string),
	MF("endPort", MF_OPT_INT, struct br_k8s_np_port, end_port, .min = 1, .max = 65535),
};
static MODEL_STRUCT(k8s_port_desc, struct br_k8s_np_port, k8s_port_fields,
		    .defaults = default_k8s_port, .check = check_k8s_port);

static void check_ip_block(struct model_ctx *c, const void *obj)
{
	const struct br_ip_block *b = obj;
	struct br_cidr outer, inner;
	if (!b->cidr || cidr_parse(b->cidr, false, &outer) < 0)
		return;
	for (size_t i = 0; i < b->n_except; i++) {
		if (cidr_parse(b->except[i], false, &inner) < 0)
			continue;
		size_t m = model_push(c, "except");
		model_push_index(c, i);
		if (!cidr_contains(&outer, &inner) || inner.len == outer.len)
			model_err(c, "\"%s\" must be a strict subset of cidr %s", b->except[i],
				  b->cidr);
		model_pop(c, m);
	}
}

static const struct model_field ip_block_fields[] = {
	MF("cidr", MF_STRING, struct br_ip_block, cidr, .flags = MF_REQUIRED,
	   .check = model_check_cidr),
	MF_L("except", MF_STRLIST, struct br_ip_block, except, n_except,
	     .check_item = model_check_cidr_item),
};
static MODEL_STRUCT(ip_block_desc, struct br_ip_block, ip_block_fields, .check = check_ip_block);

static void check_k8s_peer(struct model_ctx *c, const void *obj)
{
	const struct br_k8s_np_peer *p = obj;
	if (!p->pod_selector && !p->namespace_selector && !p->ip_block)
		model_err(c, "must specify podSelector, namespaceSelector or ipBlock");
	else if (p->ip_block && (p->pod_selector || p->namespace_selector))
		model_err(c, "ipBlock cannot be combined with podSelector or namespaceSelector");
}

static const struct model_field k8s_peer_fields[] = {
	MF("podSelector", MF_PTR, struct br_k8s_np_peer, pod_selector, .sub = &label_selector_desc),
	MF("namespaceSelector", MF_PTR, struct br_k8s_np_peer, namespace_selector,
	   .sub = &label_selector_desc),
	MF("ipBlock", MF_PTR, struct br_k8s_np_peer, ip_block, .sub = &ip_block_desc),
};
static MODEL_STRUCT(k8s_peer_desc, struct br_k8s_np_peer, k8s_peer_fields, .check = check_k8s_peer);

static const struct model_field k8s_ingress_fields[] = {
	MF_L("ports", MF_LIST, struct br_k8s_np_rule, ports, n_ports, .sub = &k8s_port_desc),
	MF_L("from", MF_LIST, struct br_k8s_np_rule, peers, n_peers, .sub = &k8s_peer_desc),
};
static MODEL_STRUCT(k8s_ingress_desc, struct br_k8s_np_rule, k8s_ingress_fields);

static const struct model_field k8s_egress_fields[] = {
	MF_L("ports", MF_LIST, struct br_k8s_np_rule, ports, n_ports, .sub = &k8s_port_desc),
	MF_L("to", MF_LIST, struct br_k8s_np_rule, peers, n_peers, .sub = &k8s_peer_desc),
};
static MODEL_STRUCT(k8s_egress_desc, struct br_k8s_np_rule, k8s_egress_fields);

/* policyTypes: Ingress always, Egress when there are egress rules. */
static void default_k8s_np(struct model_ctx *c, void *obj)
{
	struct br_k8s_np_spec *s = obj;
	if (s->n_policy_types)
		return;
	if (s->n_egress) {
		s->policy_types = model_strlist(c->a, 2, "Ingress", "Egress");
		s->n_policy_types = 2;
	} else {
		s->policy_types = model_strlist(c->a, 1, "Ingress");
		s->n_policy_types = 1;
	}
}

static void check_k8s_np(struct model_ctx *c, const void *obj)
{
	const struct br_k8s_np_spec *s = obj;
	model_check_no_dups(c, "policyTypes", s->policy_types, s->n_policy_types);
}

#define K8S_NP_FIELDS                                                                \
	MF("podSelector", MF_STRUCT, struct br_k8s_np_spec, pod_selector,            \
	   .sub = &label_selector_desc, .flags = MF_EMIT_EMPTY),                     \
		MF_L("ingress", MF_LIST, struct br_k8s_np_spec, ingress, n_ingress,  \
		     .sub = &k8s_ingress_desc),                                      \
		MF_L("egress", MF_LIST, struct br_k8s_np_spec, egress, n_egress,     \
		     .sub = &k8s_egress_desc),                                       \
		MF_L("policyTypes", MF_STRLIST, struct br_k8s_np_spec, policy_types, \
		     n_policy_types, .check_item = model_check_policy_type_item)

static const struct model_field k8s_np_fields[] = { K8S_NP_FIELDS };
MODEL_STRUCT(model_k8s_np_desc, struct br_k8s_np_spec, k8s_np_fields, .defaults = default_k8s_np,
	     .check = check_k8s_np);

/* StagedKubernetesNetworkPolicy (projectcalico.org/v3): a NetworkPolicy's spec and a stagedAction.
 */
static const struct model_field staged_k8s_np_fields[] = {
	K8S_NP_FIELDS,
	MF("stagedAction", MF_STRING, struct br_k8s_np_spec, staged_action,
	   .enum_values = MODEL_STAGED_ACTIONS),
};
MODEL_STRUCT(model_staged_k8s_np_desc, struct br_k8s_np_spec, staged_k8s_np_fields,
	     .defaults = default_k8s_np, .check = check_k8s_np);

/* --- Namespace -----------------------------------------------------------------------------------
 */

static const struct model_field ns_spec_fields[] = {
	MF_L("finalizers", MF_STRLIST, struct br_namespace_spec, finalizers, n_finalizers),
};
MODEL_STRUCT(model_ns_spec_desc, struct br_namespace_spec, ns_spec_fields);

static const struct model_field ns_status_fields[] = {
	MF("phase", MF_STRING, struct br_namespace_status, phase,
	   .enum_values = E("Active", "Terminating")),
};
MODEL_STRUCT(model_ns_status_desc, struct br_namespace_status, ns_status_fields);

/* The apiserver labels every namespace with its own name. */
void model_default_namespace(struct model_ctx *c, struct br_object *o)
{
	labels_set(c->a, &o->meta.labels, "kubernetes.io/metadata.name", o->meta.name);
}

/* --- Kubernetes Service and EndpointSlice ------------------------------------------------------
 */

static bool is_type(const struct br_service_spec *s, const char *t)
{
	return s->type && streq(s->type, t);
}

static void default_service_port(struct model_ctx *c, void *obj)
{
	struct br_service_port *p = obj;
	if (!p->protocol)
		p->protocol = "TCP";
	if (p->target_port.type == IOS_NONE)
		p->target_port = (struct br_int_or_string){ .type = IOS_INT, .i = p->port };
}

static void check_service_port(struct model_ctx *c, const void *obj)
{
	const struct br_service_port *p = obj;
	const char *why;
	if (p->target_port.type == IOS_INT && (p->target_port.i < 1 || p->target_port.i > 65535))
		model_err_at(c, "targetPort", "%" PRId64 " is out of range (1-65535)",
			     p->target_port.i);
	if (p->target_port.type == IOS_STRING && !model_valid_port_name(p->target_port.s, &why))
		model_err_at(c, "targetPort", "\"%s\": %s", p->target_port.s, why);
}

static const struct model_field service_port_fields[] = {
	MF("name", MF_STRING, struct br_service_port, name, .check = model_check_dns_label),
	MF("protocol", MF_STRING, struct br_service_port, protocol,
	   .enum_values = E("TCP", "UDP", "SCTP")),
	MF("appProtocol", MF_STRING, struct br_service_port, app_protocol),
	MF("port", MF_INT, struct br_service_port, port, .flags = MF_REQUIRED, .min = 1,
	   .max = 65535),
	MF("targetPort", MF_CUSTOM, struct br_service_port, target_port,
	   .codec = &model_codec_int_or_string),
	MF("nodePort", MF_INT, struct br_service_port, node_port, .min = 0, .max = 65535),
};
static MODEL_STRUCT(service_port_desc, struct br_service_port, service_port_fields,
		    .defaults = default_service_port, .check = check_service_port);

static const struct model_field client_ip_fields[] = {
	MF("timeoutSeconds", MF_OPT_INT, struct br_client_ip_config, timeout_seconds, .min = 1,
	   .max = 86400),
};
static MODEL_STRUCT(client_ip_desc, struct br_client_ip_config, client_ip_fields);

static const struct model_field affinity_config_fields[] = {
	MF("clientIP", MF_PTR, struct br_session_affinity_config, client_ip,
	   .sub = &client_ip_desc),
};
static MODEL_STRUCT(affinity_config_desc, struct br_session_affinity_config,
		    affinity_config_fields);

static void check_cluster_ip(struct model_ctx *c, const void *field)
{
	const char *s = *(const char *const *)field;
	struct br_ip ip;
	if (!streq(s, "None") && ip_parse(s, &ip) < 0)
		model_err(c, "\"%s\" is not an IP address or \"None\"", s);
}

static void check_cluster_ip_item(struct model_ctx *c, const char *s)
{
	check_cluster_ip(c, &s);
}

static void check_ip_family_item(struct model_ctx *c, const char *s)
{
	if (!streq(s, "IPv4") && !streq(s, "IPv6"))
		model_err(c, "\"%s\" is not one of IPv4 or IPv6", s);
}

/* The apiserver's defaults, except that nothing here allocates a cluster IP. */
static void default_service(struct model_ctx *c, void *obj)
{
	struct br_service_spec *s = obj;
	if (!s->type)
		s->type = "ClusterIP";
	if (is_type(s, "ExternalName"))
		return;
	if (!s->session_affinity)
		s->session_affinity = "None";
	if (streq(s->session_affinity, "ClientIP") && !s->session_affinity_config) {
		s->session_affinity_config = arena_alloc(c->a, sizeof(*s->session_affinity_config));
		s->session_affinity_config->client_ip =
			arena_alloc(c->a, sizeof(*s->session_affinity_config->client_ip));
		s->session_affinity_config->client_ip->timeout_seconds =
			(struct opt_int){ true, 10800 };
	}
	if ((is_type(s, "NodePort") || is_type(s, "LoadBalancer")) && !s->external_traffic_policy)
		s->external_traffic_policy = "Cluster";
	if (!s->internal_traffic_policy)
		s->internal_traffic_policy = "Cluster";
	if (is_type(s, "LoadBalancer") && !s->allocate_load_balancer_node_ports.set)
		s->allocate_load_balancer_node_ports = (struct opt_bool){ true, true };
	if (s->cluster_ip && *s->cluster_ip && !s->n_cluster_ips) {
		s->cluster_ips = model_strlist(c->a, 1, s->cluster_ip);
		s->n_cluster_ips = 1;
	}
	if (!s->n_ip_families && s->n_cluster_ips && !streq(s->cluster_ips[0], "None")) {
		s->ip_families = arena_alloc(c->a, sizeof(char *) * s->n_cluster_ips);
		for (size_t i = 0; i < s->n_cluster_ips; i++) {
			struct br_ip ip;
			if (ip_parse(s->cluster_ips[i], &ip) < 0)
				return; /* validation reports it */
			s->ip_families[s->n_ip_families++] =
				ip.family == AF_INET6 ? "IPv6" : "IPv4";
		}
	}
	if (!s->ip_family_policy && s->n_ip_families)
		s->ip_family_policy = s->n_ip_families > 1 ? "RequireDualStack" : "SingleStack";
}

static void check_service(struct model_ctx *c, const void *obj)
{
	const struct br_service_spec *s = obj;
	bool headless = streq(s->cluster_ip, "None");
	if (is_type(s, "ExternalName")) {
		const char *why;
		if (!s->external_name || !*s->external_name)
			model_err_at(c, "externalName", "required for type ExternalName");
		else if (!valid_dns_subdomain(s->external_name, &why))
			model_err_at(c, "externalName", "\"%s\" %s", s->external_name, why);
		if (s->cluster_ip && *s->cluster_ip)
			model_err_at(c, "clusterIP", "must be empty for type ExternalName");
	} else if (!s->n_ports && !headless) {
		model_err_at(c, "ports", "required");
	}
	if (s->n_cluster_ips) {
		if (s->cluster_ip && *s->cluster_ip && !streq(s->cluster_ip, s->cluster_ips[0]))
			model_err_at(c, "clusterIPs", "the first entry must equal clusterIP (%s)",
				     s->cluster_ip);
		if (s->n_cluster_ips > 2)
			model_err_at(c, "clusterIPs", "at most two addresses (one per family)");
		struct br_ip a, b;
		if (s->n_cluster_ips == 2 && ip_parse(s->cluster_ips[0], &a) == 0 &&
		    ip_parse(s->cluster_ips[1], &b) == 0 && a.family == b.family)
			model_err_at(c, "clusterIPs",
				     "the two addresses must be of different families");
	}
	for (size_t i = 0; i < s->n_ports; i++) {
		const struct br_service_port *p = &s->ports[i];
		size_t m = model_push(c, "ports");
		model_push_index(c, i);
		if (s->n_ports > 1 && (!p->name || !*p->name))
			model_err_at(c, "name", "required when there is more than one port");
		for (size_t j = 0; j < i && p->name && *p->name; j++)
			if (streq(p->name, s->ports[j].name))
				model_err_at(c, "name", "duplicate port name \"%s\"", p->name);
		if (p->node_port && !is_type(s, "NodePort") && !is_type(s, "LoadBalancer"))
			model_err_at(c, "nodePort", "only for type NodePort or LoadBalancer");
		model_pop(c, m);
	}
	if (s->external_traffic_policy && !is_type(s, "NodePort") && !is_type(s, "LoadBalancer") &&
	    !s->n_external_ips)
		model_err_at(c, "externalTrafficPolicy",
			     "only for type NodePort or LoadBalancer, or with externalIPs");
	if (s->load_balancer_ip && *s->load_balancer_ip && !is_type(s, "LoadBalancer"))
		model_err_at(c, "loadBalancerIP", "only for type LoadBalancer");
	model_check_no_dups(c, "ipFamilies", s->ip_families, s->n_ip_families);
}

static const struct model_field service_fields[] = {
	MF_L("ports", MF_LIST, struct br_service_spec, ports, n_ports, .sub = &service_port_desc),
	MF("selector", MF_MAP, struct br_service_spec, selector, .check = model_check_label_map),
	MF("clusterIP", MF_STRING, struct br_service_spec, cluster_ip, .check = check_cluster_ip),
	MF_L("clusterIPs", MF_STRLIST, struct br_service_spec, cluster_ips, n_cluster_ips,
	     .check_item = check_cluster_ip_item),
	MF("type", MF_STRING, struct br_service_spec, type,
	   .enum_values = E("ClusterIP", "NodePort", "LoadBalancer", "ExternalName")),
	MF_L("externalIPs", MF_STRLIST, struct br_service_spec, external_ips, n_external_ips,
	     .check_item = model_check_ip_item),
	MF("sessionAffinity", MF_STRING, struct br_service_spec, session_affinity,
	   .enum_values = E("None", "ClientIP")),
	MF("loadBalancerIP", MF_STRING, struct br_service_spec, load_balancer_ip,
	   .check = model_check_ip),
	MF_L("loadBalancerSourceRanges", MF_STRLIST, struct br_service_spec,
	     load_balancer_source_ranges, n_load_balancer_source_ranges,
	     .check_item = model_check_cidr_item),
	MF("externalName", MF_STRING, struct br_service_spec, external_name),
	MF("externalTrafficPolicy", MF_STRING, struct br_service_spec, external_traffic_policy,
	   .enum_values = E("Cluster", "Local")),
	MF("healthCheckNodePort", MF_INT, struct br_service_spec, health_check_node_port, .min = 0,
	   .max = 65535),
	MF("publishNotReadyAddresses", MF_BOOL, struct br_service_spec,
	   publish_not_ready_addresses),
	MF("sessionAffinityConfig", MF_PTR, struct br_service_spec, session_affinity_config,
	   .sub = &affinity_config_desc),
	MF_L("ipFamilies", MF_STRLIST, struct br_service_spec, ip_families, n_ip_families,
	     .check_item = check_ip_family_item),
	MF("ipFamilyPolicy", MF_STRING, struct br_service_spec, ip_family_policy,
	   .enum_values = E("SingleStack", "PreferDualStack", "RequireDualStack")),
	MF("allocateLoadBalancerNodePorts", MF_OPT_BOOL, struct br_service_spec,
	   allocate_load_balancer_node_ports),
	MF("loadBalancerClass", MF_STRING, struct br_service_spec, load_balancer_class),
	MF("internalTrafficPolicy", MF_STRING, struct br_service_spec, internal_traffic_policy,
	   .enum_values = E("Cluster", "Local")),
	MF("trafficDistribution", MF_STRING, struct br_service_spec, traffic_distribution),
};
MODEL_STRUCT(model_service_desc, struct br_service_spec, service_fields,
	     .defaults = default_service, .check = check_service);

static const struct model_field port_status_fields[] = {
	MF("port", MF_INT, struct br_port_status, port, .flags = MF_REQUIRED, .min = 1,
	   .max = 65535),
	MF("protocol", MF_STRING, struct br_port_status, protocol, .flags = MF_REQUIRED,
	   .enum_values = E("TCP", "UDP", "SCTP")),
	MF("error", MF_STRING, struct br_port_status, error),
};
static MODEL_STRUCT(port_status_desc, struct br_port_status, port_status_fields);

static const struct model_field lb_ingress_fields[] = {
	MF("ip", MF_STRING, struct br_lb_ingress, ip, .check = model_check_ip),
	MF("hostname", MF_STRING, struct br_lb_ingress, hostname),
	MF("ipMode", MF_STRING, struct br_lb_ingress, ip_mode, .enum_values = E("VIP", "Proxy")),
	MF_L("ports", MF_LIST, struct br_lb_ingress, ports, n_ports, .sub = &port_status_desc),
};
static MODEL_STRUCT(lb_ingress_desc, struct br_lb_ingress, lb_ingress_fields);

static const struct model_field lb_status_fields[] = {
	MF_L("ingress", MF_LIST, struct br_lb_status, ingress, n_ingress, .sub = &lb_ingress_desc),
};
static MODEL_STRUCT(lb_status_desc, struct br_lb_status, lb_status_fields);

static const struct model_field condition_fields[] = {
	MF("type", MF_STRING, struct br_condition, type, .flags = MF_REQUIRED),
	MF("status", MF_STRING, struct br_condition, status, .flags = MF_REQUIRED,
	   .enum_values = E("True", "False", "Unknown")),
	MF("observedGeneration", MF_OPT_INT, struct br_condition, observed_generation),
	MF("lastTransitionTime", MF_STRING, struct br_condition, last_transition_time),
	MF("reason", MF_STRING, struct br_condition, reason),
	MF("message", MF_STRING, struct br_condition, message),
};
static MODEL_STRUCT(condition_desc, struct br_condition, condition_fields);

static const struct model_field service_status_fields[] = {
	MF("loadBalancer", MF_STRUCT, struct br_service_status, load_balancer,
	   .sub = &lb_status_desc),
	MF_L("conditions", MF_LIST, struct br_service_status, conditions, n_conditions,
	     .sub = &condition_desc),
};
MODEL_STRUCT(model_service_status_desc, struct br_service_status, service_status_fields);

/* Service names are DNS-1035 labels: a letter first. */
void model_check_service_name(struct model_ctx *c, const struct br_object *o)
{
	const char *n = o->meta.name;
	if (n && *n && !(n[0] >= 'a' && n[0] <= 'z'))
		model_err_at(c, "metadata.name", "\"%s\" must start with a lower case letter", n);
}

static const struct model_field endpoint_conditions_fields[] = {
	MF("ready", MF_OPT_BOOL, struct br_endpoint_conditions, ready),
	MF("serving", MF_OPT_BOOL, struct br_endpoint_conditions, serving),
	MF("terminating", MF_OPT_BOOL, struct br_endpoint_conditions, terminating),
};
static MODEL_STRUCT(endpoint_conditions_desc, struct br_endpoint_conditions,
		    endpoint_conditions_fields);

static const struct model_field object_ref_fields[] = {
	MF("kind", MF_STRING, struct br_object_ref, kind),
	MF("namespace", MF_STRING, struct br_object_ref, namespace),
	MF("name", MF_STRING, struct br_object_ref, name),
	MF("uid", MF_STRING, struct br_object_ref, uid),
	MF("apiVersion", MF_STRING, struct br_object_ref, api_version),
	MF("resourceVersion", MF_STRING, struct br_object_ref, resource_version),
	MF("fieldPath", MF_STRING, struct br_object_ref, field_path),
};
static MODEL_STRUCT(object_ref_desc, struct br_object_ref, object_ref_fields);

static const struct model_field name_ref_fields[] = {
	MF("name", MF_STRING, struct br_name_ref, name, .flags = MF_REQUIRED),
};
static MODEL_STRUCT(name_ref_desc, struct br_name_ref, name_ref_fields);

static const struct model_field endpoint_hints_fields[] = {
	MF_L("forZones", MF_LIST, struct br_endpoint_hints, for_zones, n_for_zones,
	     .sub = &name_ref_desc),
	MF_L("forNodes", MF_LIST, struct br_endpoint_hints, for_nodes, n_for_nodes,
	     .sub = &name_ref_desc),
};
static MODEL_STRUCT(endpoint_hints_desc, struct br_endpoint_hints, endpoint_hints_fields);

static const struct model_field endpoint_fields[] = {
	MF_L("addresses", MF_STRLIST, struct br_endpoint, addresses, n_addresses,
	     .flags = MF_REQUIRED),
	MF("conditions", MF_STRUCT, struct br_endpoint, conditions,
	   .sub = &endpoint_conditions_desc),
	MF("hostname", MF_STRING, struct br_endpoint, hostname, .check = model_check_dns_label),
	MF("targetRef", MF_PTR, struct br_endpoint, target_ref, .sub = &object_ref_desc),
	MF("deprecatedTopology", MF_MAP, struct br_endpoint, deprecated_topology),
	MF("nodeName", MF_STRING, struct br_endpoint, node_name,
	   .check = model_check_dns_subdomain),
	MF("zone", MF_STRING, struct br_endpoint, zone),
	MF("hints", MF_PTR, struct br_endpoint, hints, .sub = &endpoint_hints_desc),
};
static MODEL_STRUCT(endpoint_desc, struct br_endpoint, endpoint_fields);

static void default_slice_port(struct model_ctx *c, void *obj)
{
	struct br_slice_port *p = obj;
	if (!p->protocol)
		p->protocol = "TCP";
}

static const struct model_field slice_port_fields[] = {
	MF("name", MF_STRING, struct br_slice_port, name),
	MF("protocol", MF_STRING, struct br_slice_port, protocol,
	   .enum_values = E("TCP", "UDP", "SCTP")),
	MF("port", MF_OPT_INT, struct br_slice_port, port, .min = 1, .max = 65535),
	MF("appProtocol", MF_STRING, struct br_slice_port, app_protocol),
};
static MODEL_STRUCT(slice_port_desc, struct br_slice_port, slice_port_fields,
		    .defaults = default_slice_port);

/* Addresses must be of the slice's address type; at most 100 per endpoint. */
static void check_endpointslice(struct model_ctx *c, const void *obj)
{
	const struct br_endpointslice_spec *s = obj;
	if (s->n_endpoints > 1000)
		model_err_at(c, "endpoints", "at most 1000 endpoints in one slice");
	if (s->n_ports > 100)
		model_err_at(c, "ports", "at most 100 ports in one slice");
	if (!s->address_type)
		return;
	int fam = streq(s->address_type, "IPv4")   ? AF_INET
		  : streq(s->address_type, "IPv6") ? AF_INET6
						   : 0;
	for (size_t i = 0; i < s->n_endpoints; i++) {
		const struct br_endpoint *e = &s->endpoints[i];
		size_t m = model_push(c, "endpoints");
		model_push_index(c, i);
		if (e->n_addresses > 100)
			model_err_at(c, "addresses", "at most 100 addresses");
		for (size_t j = 0; j < e->n_addresses; j++) {
			size_t mj = model_push(c, "addresses");
			model_push_index(c, j);
			struct br_ip ip;
			const char *why;
			if (fam && (ip_parse(e->addresses[j], &ip) < 0 || ip.family != fam))
				model_err(c, "\"%s\" is not an %s address", e->addresses[j],
					  s->address_type);
			else if (!fam && !valid_dns_subdomain(e->addresses[j], &why))
				model_err(c, "\"%s\" %s", e->addresses[j], why);
			model_pop(c, mj);
		}
		model_pop(c, m);
	}
}

static const struct model_field endpointslice_fields[] = {
	MF("addressType", MF_STRING, struct br_endpointslice_spec, address_type,
	   .flags = MF_REQUIRED, .enum_values = E("IPv4", "IPv6", "FQDN")),
	MF_L("endpoints", MF_LIST, struct br_endpointslice_spec, endpoints, n_endpoints,
	     .sub = &endpoint_desc, .flags = MF_EMIT_EMPTY),
	MF_L("ports", MF_LIST, struct br_endpointslice_spec, ports, n_ports,
	     .sub = &slice_port_desc),
};
MODEL_STRUCT(model_endpointslice_desc, struct br_endpointslice_spec, endpointslice_fields,
	     .check = check_endpointslice);
