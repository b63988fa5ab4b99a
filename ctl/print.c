/*
 * Output: kubectl-like tables (columns per kind, -o wide for more), YAML,
 * JSON, and resource references ("ippool.projectcalico.org/default-pool").
 */
#include "ctl.h"

#include <brindle/core/json.h>
#include <brindle/core/yaml.h>

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int ctl_parse_output(const char *s, enum ctl_output *out)
{
	static const struct {
		const char *name;
		enum ctl_output out;
	} formats[] = { { "yaml", OUT_YAML },
			{ "json", OUT_JSON },
			{ "wide", OUT_WIDE },
			{ "name", OUT_NAME },
			{ "table", OUT_TABLE } };
	for (size_t i = 0; i < ARRAY_SIZE(formats); i++)
		if (streq(s, formats[i].name)) {
			*out = formats[i].out;
			return 0;
		}
	return -1;
}

const char *ctl_kind_ref(const struct br_kind *k, char *buf, size_t size)
{
	char lower[64];
	size_t i;
	for (i = 0; k->kind[i] && i < sizeof(lower) - 1; i++)
		lower[i] = (char)(k->kind[i] >= 'A' && k->kind[i] <= 'Z' ? k->kind[i] + 32
									 : k->kind[i]);
	lower[i] = '\0';
	if (*k->group)
		snprintf(buf, size, "%s.%s", lower, k->group);
	else
		snprintf(buf, size, "%s", lower);
	return buf;
}

const char *ctl_resource_ref(const struct br_object *o, char *buf, size_t size)
{
	char k[128];
	snprintf(buf, size, "%s/%s", ctl_kind_ref(o->kind, k, sizeof(k)), o->meta.name);
	return buf;
}

/* --- tables ------------------------------------------------------------------------------ */

struct column {
	const char *header;
	bool wide_only;
	/* Writes the cell for @o into @sb. */
	void (*cell)(const struct br_object *o, struct strbuf *sb);
};

static void join(struct strbuf *sb, const char *const *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		sb_addf(sb, "%s%s", i ? "," : "", v[i]);
}

static void cell_labels(const struct br_labels *l, struct strbuf *sb)
{
	for (size_t i = 0; i < l->n; i++)
		sb_addf(sb, "%s%s=%s", i ? "," : "", l->v[i].key, l->v[i].value);
}

static void age(const struct br_object *o, struct strbuf *sb)
{
	struct tm tm = { 0 };
	const char *ts = o->meta.creation_timestamp;
	if (!ts || !strptime(ts, "%Y-%m-%dT%H:%M:%SZ", &tm)) {
		sb_adds(sb, "<unknown>");
		return;
	}
	long d = (long)difftime(time(NULL), timegm(&tm));
	if (d < 0)
		d = 0;
	if (d < 120)
		sb_addf(sb, "%lds", d);
	else if (d < 7200)
		sb_addf(sb, "%ldm", d / 60);
	else if (d < 172800)
		sb_addf(sb, "%ldh", d / 3600);
	else
		sb_addf(sb, "%ldd", d / 86400);
}

static void name(const struct br_object *o, struct strbuf *sb)
{
	sb_adds(sb, o->meta.name);
}

#define SPEC(type, o) (&((const type *)(o))->spec)

static void node_asn(const struct br_object *o, struct strbuf *sb)
{
	const struct br_node_spec *s = SPEC(struct br_node, o);
	if (s->bgp && s->bgp->as_number.set)
		sb_addf(sb, "%" PRIu32, s->bgp->as_number.v);
	else
		sb_adds(sb, "(64512)");
}
static void node_ipv4(const struct br_object *o, struct strbuf *sb)
{
	const struct br_node_spec *s = SPEC(struct br_node, o);
	sb_adds(sb, s->bgp && s->bgp->ipv4_address ? s->bgp->ipv4_address : "");
}
static void node_ipv6(const struct br_object *o, struct strbuf *sb)
{
	const struct br_node_spec *s = SPEC(struct br_node, o);
	sb_adds(sb, s->bgp && s->bgp->ipv6_address ? s->bgp->ipv6_address : "");
}
static void node_rr(const struct br_object *o, struct strbuf *sb)
{
	const struct br_node_spec *s = SPEC(struct br_node, o);
	sb_adds(sb, s->bgp && s->bgp->route_reflector_cluster_id
			    ? s->bgp->route_reflector_cluster_id
			    : "");
}
static void node_vxlan(const struct br_object *o, struct strbuf *sb)
{
	const struct br_node_spec *s = SPEC(struct br_node, o);
	sb_adds(sb, s->ipv4_vxlan_tunnel_addr ? s->ipv4_vxlan_tunnel_addr : "");
}

static void pool_cidr(const struct br_object *o, struct strbuf *sb)
{
	sb_adds(sb, SPEC(struct br_ippool, o)->cidr);
}
static void pool_selector(const struct br_object *o, struct strbuf *sb)
{
	sb_adds(sb, SPEC(struct br_ippool, o)->node_selector);
}
static void pool_blocksize(const struct br_object *o, struct strbuf *sb)
{
	sb_addf(sb, "%" PRId64, SPEC(struct br_ippool, o)->block_size.v);
}
static void pool_ipip(const struct br_object *o, struct strbuf *sb)
{
	sb_adds(sb, SPEC(struct br_ippool, o)->ipip_mode);
}
static void pool_vxlan(const struct br_object *o, struct strbuf *sb)
{
	sb_adds(sb, SPEC(struct br_ippool, o)->vxlan_mode);
}
static void pool_nat(const struct br_object *o, struct strbuf *sb)
{
	sb_adds(sb, SPEC(struct br_ippool, o)->nat_outgoing ? "true" : "false");
}
static void pool_disabled(const struct br_object *o, struct strbuf *sb)
{
	sb_adds(sb, SPEC(struct br_ippool, o)->disabled ? "true" : "false");
}

static void bgpc_log(const struct br_object *o, struct strbuf *sb)
{
	const char *l = SPEC(struct br_bgpconfig, o)->log_severity_screen;
	sb_adds(sb, l ? l : "");
}
static void bgpc_mesh(const struct br_object *o, struct strbuf *sb)
{
	const struct opt_bool *m = &SPEC(struct br_bgpconfig, o)->node_to_node_mesh_enabled;
	sb_adds(sb, m->set ? (m->v ? "true" : "false") : "");
}
static void bgpc_asn(const struct br_object *o, struct strbuf *sb)
{
	const struct opt_asn *a = &SPEC(struct br_bgpconfig, o)->as_number;
	if (a->set)
		sb_addf(sb, "%" PRIu32, a->v);
}

static void peer_ip(const struct br_object *o, struct strbuf *sb)
{
	const struct br_bgppeer_spec *s = SPEC(struct br_bgppeer, o);
	if (s->peer_ip)
		sb_adds(sb, s->peer_ip);
	else if (s->peer_selector)
		sb_addf(sb, "(%s)", s->peer_selector);
}
static void peer_node(const struct br_object *o, struct strbuf *sb)
{
	const struct br_bgppeer_spec *s = SPEC(struct br_bgppeer, o);
	sb_adds(sb, s->node ? s->node : s->node_selector ? s->node_selector : "(global)");
}
static void peer_asn(const struct br_object *o, struct strbuf *sb)
{
	const struct br_bgppeer_spec *s = SPEC(struct br_bgppeer, o);
	if (s->as_number.set)
		sb_addf(sb, "%" PRIu32, s->as_number.v);
}

static void pol_order(const struct br_object *o, struct strbuf *sb)
{
	const struct opt_float *ord = &SPEC(struct br_networkpolicy, o)->order;
	if (ord->set)
		sb_addf(sb, "%g", ord->v);
}
static void pol_selector(const struct br_object *o, struct strbuf *sb)
{
	const char *s = SPEC(struct br_networkpolicy, o)->selector;
	sb_adds(sb, s && *s ? s : "all()");
}
static void pol_types(const struct br_object *o, struct strbuf *sb)
{
	const struct br_policy_spec *s = SPEC(struct br_networkpolicy, o);
	join(sb, s->types, s->n_types);
}

static void nets(const struct br_object *o, struct strbuf *sb)
{
	const struct br_nets_spec *s = SPEC(struct br_networkset, o);
	join(sb, s->nets, s->n_nets);
}
static void labels(const struct br_object *o, struct strbuf *sb)
{
	cell_labels(&o->meta.labels, sb);
}

static void hep_node(const struct br_object *o, struct strbuf *sb)
{
	sb_adds(sb, SPEC(struct br_hostendpoint, o)->node);
}
static void hep_iface(const struct br_object *o, struct strbuf *sb)
{
	const char *i = SPEC(struct br_hostendpoint, o)->interface_name;
	sb_adds(sb, i ? i : "");
}
static void hep_ips(const struct br_object *o, struct strbuf *sb)
{
	const struct br_hep_spec *s = SPEC(struct br_hostendpoint, o);
	join(sb, s->expected_ips, s->n_expected_ips);
}

static void prof_labels(const struct br_object *o, struct strbuf *sb)
{
	cell_labels(&SPEC(struct br_profile, o)->labels_to_apply, sb);
}

static void wep_workload(const struct br_object *o, struct strbuf *sb)
{
	const struct br_wep_spec *s = SPEC(struct br_workloadendpoint, o);
	sb_adds(sb, s->pod ? s->pod : s->workload ? s->workload : o->meta.name);
}
static void wep_node(const struct br_object *o, struct strbuf *sb)
{
	const char *n = SPEC(struct br_workloadendpoint, o)->node;
	sb_adds(sb, n ? n : "");
}
static void wep_nets(const struct br_object *o, struct strbuf *sb)
{
	const struct br_wep_spec *s = SPEC(struct br_workloadendpoint, o);
	join(sb, s->ip_networks, s->n_ip_networks);
}
static void wep_iface(const struct br_object *o, struct strbuf *sb)
{
	sb_adds(sb, SPEC(struct br_workloadendpoint, o)->interface_name);
}

static void ipamc_strict(const struct br_object *o, struct strbuf *sb)
{
	sb_adds(sb, SPEC(struct br_ipamconfig, o)->strict_affinity ? "true" : "false");
}
static void ipamc_max(const struct br_object *o, struct strbuf *sb)
{
	const struct opt_int *m = &SPEC(struct br_ipamconfig, o)->max_blocks_per_host;
	sb_addf(sb, "%" PRId64, m->set ? m->v : 0);
}

static void tier_order(const struct br_object *o, struct strbuf *sb)
{
	const struct opt_float *ord = &SPEC(struct br_tier, o)->order;
	if (ord->set)
		sb_addf(sb, "%g", ord->v);
}
static void tier_action(const struct br_object *o, struct strbuf *sb)
{
	sb_adds(sb, SPEC(struct br_tier, o)->default_action);
}
static void pol_tier(const struct br_object *o, struct strbuf *sb)
{
	sb_adds(sb, SPEC(struct br_networkpolicy, o)->tier);
}
static void pol_staged(const struct br_object *o, struct strbuf *sb)
{
	const char *a = SPEC(struct br_networkpolicy, o)->staged_action;
	sb_adds(sb, a ? a : "Set");
}
static void sknp_staged(const struct br_object *o, struct strbuf *sb)
{
	const char *a = SPEC(struct br_k8s_networkpolicy, o)->staged_action;
	sb_adds(sb, a ? a : "Set");
}
static void ipres_cidrs(const struct br_object *o, struct strbuf *sb)
{
	const struct br_ipreservation_spec *s = SPEC(struct br_ipreservation, o);
	for (size_t i = 0; i < s->n_reserved_cidrs; i++)
		sb_addf(sb, "%s%s", i ? "," : "", s->reserved_cidrs[i]);
}
static void filter_rules(const struct br_object *o, struct strbuf *sb)
{
	const struct br_bgpfilter_spec *s = SPEC(struct br_bgpfilter, o);
	sb_addf(sb, "%zu/%zu/%zu/%zu", s->n_export_v4, s->n_import_v4, s->n_export_v6,
		s->n_import_v6);
}
static void cns_node(const struct br_object *o, struct strbuf *sb)
{
	sb_adds(sb, SPEC(struct br_caliconodestatus, o)->node);
}
static void cns_updated(const struct br_object *o, struct strbuf *sb)
{
	const char *t = ((const struct br_caliconodestatus *)o)->status.last_updated;
	sb_adds(sb, t ? t : "-");
}

static void knp_selector(const struct br_object *o, struct strbuf *sb)
{
	const struct br_label_selector *ls = &SPEC(struct br_k8s_networkpolicy, o)->pod_selector;
	cell_labels(&ls->match_labels, sb);
	for (size_t i = 0; i < ls->n_exprs; i++)
		sb_addf(sb, "%s%s %s", sb->len ? "," : "", ls->exprs[i].key, ls->exprs[i].op);
	if (!sb->len)
		sb_adds(sb, "<none>");
}

static void ns_status(const struct br_object *o, struct strbuf *sb)
{
	const char *p = ((const struct br_namespace *)o)->status.phase;
	sb_adds(sb, p ? p : "Active");
}

static void aff_node(const struct br_object *o, struct strbuf *sb)
{
	sb_adds(sb, SPEC(struct br_blockaffinity, o)->node);
}
static void aff_cidr(const struct br_object *o, struct strbuf *sb)
{
	sb_adds(sb, SPEC(struct br_blockaffinity, o)->cidr);
}
static void aff_state(const struct br_object *o, struct strbuf *sb)
{
	sb_adds(sb, SPEC(struct br_blockaffinity, o)->state);
}
static void block_cidr(const struct br_object *o, struct strbuf *sb)
{
	sb_adds(sb, SPEC(struct br_ipamblock, o)->cidr);
}
static void block_affinity(const struct br_object *o, struct strbuf *sb)
{
	const char *a = SPEC(struct br_ipamblock, o)->affinity;
	sb_adds(sb, a ? a : "");
}
static void block_used(const struct br_object *o, struct strbuf *sb)
{
	const struct br_ipamblock_spec *s = SPEC(struct br_ipamblock, o);
	size_t used = 0;
	for (size_t i = 0; i < s->allocations.n; i++)
		used += s->allocations.v[i] >= 0;
	sb_addf(sb, "%zu/%zu", used, s->allocations.n);
}
static void handle_blocks(const struct br_object *o, struct strbuf *sb)
{
	const struct br_str_int_map *m = &SPEC(struct br_ipamhandle, o)->block;
	for (size_t i = 0; i < m->n; i++)
		sb_addf(sb, "%s%s=%" PRId64, i ? "," : "", m->v[i].key, m->v[i].value);
}

static void svc_type(const struct br_object *o, struct strbuf *sb)
{
	sb_adds(sb, SPEC(struct br_service, o)->type);
}
static void svc_cluster_ip(const struct br_object *o, struct strbuf *sb)
{
	const struct br_service_spec *s = SPEC(struct br_service, o);
	if (s->n_cluster_ips)
		join(sb, s->cluster_ips, s->n_cluster_ips);
	else
		sb_adds(sb, "<none>");
}
/* As kubectl shows it: externalIPs and load-balancer ingress, <pending> or <none>. */
static void svc_external_ip(const struct br_object *o, struct strbuf *sb)
{
	const struct br_service *svc = (const struct br_service *)o;
	const struct br_service_spec *s = &svc->spec;
	const struct br_lb_status *lb = &svc->status.load_balancer;
	join(sb, s->external_ips, s->n_external_ips);
	for (size_t i = 0; i < lb->n_ingress; i++) {
		const char *v = lb->ingress[i].ip ? lb->ingress[i].ip : lb->ingress[i].hostname;
		if (v)
			sb_addf(sb, "%s%s", sb->len ? "," : "", v);
	}
	if (!sb->len && streq(s->type, "ExternalName") && s->external_name)
		sb_adds(sb, s->external_name);
	if (!sb->len)
		sb_adds(sb, streq(s->type, "LoadBalancer") ? "<pending>" : "<none>");
}
static void svc_ports(const struct br_object *o, struct strbuf *sb)
{
	const struct br_service_spec *s = SPEC(struct br_service, o);
	for (size_t i = 0; i < s->n_ports; i++) {
		sb_addf(sb, "%s%" PRId64, i ? "," : "", s->ports[i].port);
		if (s->ports[i].node_port)
			sb_addf(sb, ":%" PRId64, s->ports[i].node_port);
		sb_addf(sb, "/%s", s->ports[i].protocol);
	}
	if (!sb->len)
		sb_adds(sb, "<none>");
}
static void svc_etp(const struct br_object *o, struct strbuf *sb)
{
	const char *p = SPEC(struct br_service, o)->external_traffic_policy;
	sb_adds(sb, p ? p : "");
}
static void svc_selector(const struct br_object *o, struct strbuf *sb)
{
	cell_labels(&SPEC(struct br_service, o)->selector, sb);
	if (!sb->len)
		sb_adds(sb, "<none>");
}

static void eps_type(const struct br_object *o, struct strbuf *sb)
{
	sb_adds(sb, SPEC(struct br_endpointslice, o)->address_type);
}
static void eps_ports(const struct br_object *o, struct strbuf *sb)
{
	const struct br_endpointslice_spec *s = SPEC(struct br_endpointslice, o);
	for (size_t i = 0; i < s->n_ports; i++)
		if (s->ports[i].port.set)
			sb_addf(sb, "%s%" PRId64, sb->len ? "," : "", s->ports[i].port.v);
	if (!sb->len)
		sb_adds(sb, "<unset>");
}
/* Addresses of ready endpoints, then "+ N more..." as kubectl abbreviates. */
static void eps_endpoints(const struct br_object *o, struct strbuf *sb)
{
	const struct br_endpointslice_spec *s = SPEC(struct br_endpointslice, o);
	size_t shown = 0, total = 0;
	for (size_t i = 0; i < s->n_endpoints; i++) {
		const struct br_endpoint *e = &s->endpoints[i];
		if (e->conditions.ready.set && !e->conditions.ready.v)
			continue;
		for (size_t j = 0; j < e->n_addresses; j++, total++)
			if (shown < 3) {
				sb_addf(sb, "%s%s", shown ? "," : "", e->addresses[j]);
				shown++;
			}
	}
	if (total > shown)
		sb_addf(sb, " + %zu more...", total - shown);
	if (!sb->len)
		sb_adds(sb, "<none>");
}
static void eps_nodes(const struct br_object *o, struct strbuf *sb)
{
	const struct br_endpointslice_spec *s = SPEC(struct br_endpointslice, o);
	for (size_t i = 0; i < s->n_endpoints; i++)
		if (s->endpoints[i].node_name)
			sb_addf(sb, "%s%s", sb->len ? "," : "", s->endpoints[i].node_name);
}

#define COLS(...) ((const struct column[]){ __VA_ARGS__, { 0 } })
#define C(h, f)             \
	{                   \
		h, false, f \
	}
#define W(h, f)            \
	{                  \
		h, true, f \
	}

static const struct column *const kind_columns[KIND_COUNT] = {
	[KIND_NODE] = COLS(C("NAME", name), C("ASN", node_asn), C("IPV4", node_ipv4),
			   C("IPV6", node_ipv6), W("RR-CLUSTER-ID", node_rr),
			   W("VXLAN-ADDR", node_vxlan)),
	[KIND_IPPOOL] =
		COLS(C("NAME", name), C("CIDR", pool_cidr), C("SELECTOR", pool_selector),
		     W("BLOCKSIZE", pool_blocksize), W("IPIP", pool_ipip), W("VXLAN", pool_vxlan),
		     W("NATOUTGOING", pool_nat), W("DISABLED", pool_disabled)),
	[KIND_BGPCONFIGURATION] = COLS(C("NAME", name), C("LOGSEVERITY", bgpc_log),
				       C("MESHENABLED", bgpc_mesh), C("ASNUMBER", bgpc_asn)),
	[KIND_BGPPEER] = COLS(C("NAME", name), C("PEERIP", peer_ip), C("NODE", peer_node),
			      C("ASN", peer_asn)),
	[KIND_FELIXCONFIGURATION] = COLS(C("NAME", name), C("AGE", age)),
	[KIND_NETWORKPOLICY] = COLS(C("NAME", name), C("ORDER", pol_order),
				    C("SELECTOR", pol_selector), W("TYPES", pol_types)),
	[KIND_GLOBALNETWORKPOLICY] = COLS(C("NAME", name), C("ORDER", pol_order),
					  C("SELECTOR", pol_selector), W("TYPES", pol_types)),
	[KIND_NETWORKSET] = COLS(C("NAME", name), C("LABELS", labels), W("NETS", nets)),
	[KIND_GLOBALNETWORKSET] = COLS(C("NAME", name), C("LABELS", labels), W("NETS", nets)),
	[KIND_HOSTENDPOINT] = COLS(C("NAME", name), C("NODE", hep_node), C("INTERFACE", hep_iface),
				   C("EXPECTED-IPS", hep_ips)),
	[KIND_PROFILE] = COLS(C("NAME", name), C("LABELS", prof_labels)),
	[KIND_WORKLOADENDPOINT] =
		COLS(C("WORKLOAD", wep_workload), C("NODE", wep_node), C("NETWORKS", wep_nets),
		     C("INTERFACE", wep_iface), W("NAME", name)),
	[KIND_IPAMCONFIGURATION] = COLS(C("NAME", name), C("STRICTAFFINITY", ipamc_strict),
					C("MAXBLOCKSPERHOST", ipamc_max)),
	[KIND_K8S_NETWORKPOLICY] =
		COLS(C("NAME", name), C("POD-SELECTOR", knp_selector), C("AGE", age)),
	[KIND_NAMESPACE] =
		COLS(C("NAME", name), C("STATUS", ns_status), C("AGE", age), W("LABELS", labels)),
	[KIND_SERVICE] =
		COLS(C("NAME", name), C("TYPE", svc_type), C("CLUSTER-IP", svc_cluster_ip),
		     C("EXTERNAL-IP", svc_external_ip), C("PORT(S)", svc_ports), C("AGE", age),
		     W("EXTERNAL-TRAFFIC-POLICY", svc_etp), W("SELECTOR", svc_selector)),
	[KIND_ENDPOINTSLICE] =
		COLS(C("NAME", name), C("ADDRESSTYPE", eps_type), C("PORTS", eps_ports),
		     C("ENDPOINTS", eps_endpoints), C("AGE", age), W("NODES", eps_nodes)),
	[KIND_BLOCKAFFINITY] =
		COLS(C("NODE", aff_node), C("CIDR", aff_cidr), C("STATE", aff_state)),
	[KIND_IPAMBLOCK] =
		COLS(C("CIDR", block_cidr), C("AFFINITY", block_affinity), C("IN-USE", block_used)),
	[KIND_IPAMHANDLE] = COLS(C("NAME", name), C("BLOCKS", handle_blocks)),
	[KIND_TIER] =
		COLS(C("NAME", name), C("ORDER", tier_order), C("DEFAULTACTION", tier_action)),
	[KIND_IPRESERVATION] = COLS(C("NAME", name), C("RESERVEDCIDRS", ipres_cidrs)),
	[KIND_BGPFILTER] =
		COLS(C("NAME", name), C("EXPORTV4/IMPORTV4/EXPORTV6/IMPORTV6", filter_rules)),
	[KIND_KUBECONTROLLERSCONFIGURATION] = COLS(C("NAME", name), C("AGE", age)),
	[KIND_CALICONODESTATUS] =
		COLS(C("NAME", name), C("NODE", cns_node), C("LASTUPDATED", cns_updated)),
	[KIND_STAGEDNETWORKPOLICY] =
		COLS(C("NAME", name), C("TIER", pol_tier), C("ORDER", pol_order),
		     C("STAGEDACTION", pol_staged), C("SELECTOR", pol_selector)),
	[KIND_STAGEDGLOBALNETWORKPOLICY] =
		COLS(C("NAME", name), C("TIER", pol_tier), C("ORDER", pol_order),
		     C("STAGEDACTION", pol_staged), C("SELECTOR", pol_selector)),
	[KIND_CLUSTERINFORMATION] = COLS(C("NAME", name), C("AGE", age)),
	[KIND_STAGEDK8SNETWORKPOLICY] = COLS(C("NAME", name), C("POD-SELECTOR", knp_selector),
					     C("STAGEDACTION", sknp_staged), C("AGE", age)),
};

static void print_table(FILE *f, struct br_object *const *objs, size_t n, bool wide, bool all_ns)
{
	if (!n)
		return;
	/* Objects of different kinds (get -f) print as one table per kind, in order. */
	size_t start = 0;
	while (start < n) {
		const struct br_kind *k = objs[start]->kind;
		size_t end = start;
		while (end < n && objs[end]->kind == k)
			end++;
		const struct column *cols = kind_columns[k->id];
		bool ns_col = k->namespaced && all_ns;
		size_t ncols = 0;
		for (const struct column *c = cols; c->header; c++)
			ncols++;
		size_t rows = end - start;
		char **cells = xcalloc((rows + 1) * (ncols + 1), sizeof(char *));
		size_t *width = xcalloc(ncols + 1, sizeof(size_t));
		size_t nc = 0;
		if (ns_col)
			cells[nc++] = xstrdup("NAMESPACE");
		for (size_t j = 0; j < ncols; j++)
			if (wide || !cols[j].wide_only)
				cells[nc++] = xstrdup(cols[j].header);
		for (size_t r = 0; r < rows; r++) {
			const struct br_object *o = objs[start + r];
			size_t ci = 0;
			if (ns_col)
				cells[(r + 1) * nc + ci++] = xstrdup(model_ns(o));
			for (size_t j = 0; j < ncols; j++) {
				if (!wide && cols[j].wide_only)
					continue;
				struct strbuf sb = STRBUF_INIT;
				sb_init(&sb);
				cols[j].cell(o, &sb);
				cells[(r + 1) * nc + ci++] = sb_detach(&sb);
			}
		}
		for (size_t r = 0; r <= rows; r++)
			for (size_t j = 0; j < nc; j++)
				width[j] = MAX(width[j], strlen(cells[r * nc + j]));
		for (size_t r = 0; r <= rows; r++) {
			for (size_t j = 0; j < nc; j++) {
				const char *cell = cells[r * nc + j];
				if (j + 1 < nc)
					fprintf(f, "%-*s   ", (int)width[j], cell);
				else
					fprintf(f, "%s", cell);
			}
			fputc('\n', f);
		}
		for (size_t i = 0; i < (rows + 1) * nc; i++)
			free(cells[i]);
		free(cells);
		free(width);
		start = end;
		if (start < n)
			fputc('\n', f);
	}
}

void ctl_print(FILE *f, struct br_object *const *objs, size_t n, enum ctl_output out,
	       bool all_namespaces, bool as_list)
{
	if (out == OUT_TABLE || out == OUT_WIDE) {
		print_table(f, objs, n, out == OUT_WIDE, all_namespaces);
		return;
	}
	if (out == OUT_NAME) {
		for (size_t i = 0; i < n; i++) {
			char ref[256];
			fprintf(f, "%s\n", ctl_resource_ref(objs[i], ref, sizeof(ref)));
		}
		return;
	}
	struct arena *a = arena_new();
	struct jv *doc;
	if (as_list || n != 1) {
		doc = jv_object(a);
		jv_add(a, doc, "apiVersion", jv_string(a, "v1"));
		jv_add(a, doc, "kind", jv_string(a, "List"));
		struct jv *items = jv_array(a);
		for (size_t i = 0; i < n; i++)
			jv_push(a, items, model_encode(a, objs[i]));
		jv_add(a, doc, "items", items);
	} else {
		doc = model_encode(a, objs[0]);
	}
	struct strbuf sb = STRBUF_INIT;
	sb_init(&sb);
	if (out == OUT_YAML)
		yaml_write(&sb, doc);
	else
		json_write(&sb, doc, true);
	fputs(sb_str(&sb), f);
	sb_free(&sb);
	arena_free(a);
}
