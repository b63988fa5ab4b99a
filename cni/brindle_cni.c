/*
 * brindle-cni: the CNI plugin. ADD assigns an address (brindle-ipam's
 * library, in process), builds the dataplane (dataplane.c) and writes the
 * WorkloadEndpoint; DEL undoes what belongs to this container ID and nothing
 * else; CHECK verifies all of it.
 *
 * What is ours on DEL: the handle "<network>.<containerID>" (so IPAM never
 * frees another container's address), the pod interface inside CNI_NETNS
 * (which takes its host end along), and the WorkloadEndpoint and host
 * interface only when the endpoint names this container ID: a newer sandbox
 * of the same pod keeps both.
 *
 * ADD checks everything it can before it touches IPAM or the dataplane: the
 * names from the request, the WorkloadEndpoint it would write (decoded and
 * validated with placeholder addresses), CNI_NETNS (plugin_start), and that
 * the container has no interface CNI_IFNAME, default route or 169.254.1.1
 * route yet. A failure after that undoes only what this ADD created: its veth
 * and the addresses it added to the handle. What an interrupted ADD of the
 * same container left (killed after its veth, before its endpoint) is taken
 * back by the next ADD: the veth removed, the handle's address reused.
 */
#include "plugin.h"

#include <brindle/core/json.h>
#include <brindle/sys/log.h>
#include <brindle/sys/clock.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

struct names {
	char host_if[16];
	const char *wep;
};

static void names_of(struct plugin *p, struct names *n)
{
	cni_host_veth_name(p->id.namespace, p->id.pod, n->host_if);
	n->wep = cni_wep_name(p->a, p->node, p->id.orchestrator, p->id.pod, p->ifname);
}

static struct jv *str(struct arena *a, const char *s)
{
	return jv_string(a, s);
}

/* The endpoint as a document, decoded by the model so it is validated like any resource. */
static struct br_object *build_wep(struct plugin *p, const struct names *n, const struct br_ip *ips,
				   size_t n_ips, const char *pod_mac, struct strbuf *err)
{
	const struct cni_conf *c = p->conf;
	struct arena *a = arena_new();
	struct jv *doc = jv_object(a), *meta = jv_object(a), *spec = jv_object(a);
	struct jv *labels = jv_object(a);
	jv_add(a, doc, "apiVersion", str(a, "projectcalico.org/v3"));
	jv_add(a, doc, "kind", str(a, "WorkloadEndpoint"));
	jv_add(a, meta, "name", str(a, n->wep));
	jv_add(a, meta, "namespace", str(a, p->id.namespace));
	struct br_labels all = labels_copy(a, &c->labels);
	labels_set(a, &all, "projectcalico.org/namespace", p->id.namespace);
	labels_set(a, &all, "projectcalico.org/orchestrator", p->id.orchestrator);
	for (size_t i = 0; i < all.n; i++)
		jv_add(a, labels, all.v[i].key, str(a, all.v[i].value));
	jv_add(a, meta, "labels", labels);
	jv_add(a, doc, "metadata", meta);
	jv_add(a, spec, "orchestrator", str(a, p->id.orchestrator));
	if (streq(p->id.orchestrator, "cni"))
		jv_add(a, spec, "workload", str(a, p->container_id));
	jv_add(a, spec, "node", str(a, p->node));
	jv_add(a, spec, "containerID", str(a, p->container_id));
	jv_add(a, spec, "pod", str(a, p->id.pod));
	jv_add(a, spec, "endpoint", str(a, p->ifname));
	struct jv *nets = jv_array(a);
	for (size_t i = 0; i < n_ips; i++) {
		char ip[IP_STRLEN];
		jv_push(a, nets,
			jv_string(a,
				  arena_printf(a, "%s/%u", ip_str(&ips[i], ip), ip_bits(&ips[i]))));
	}
	jv_add(a, spec, "ipNetworks", nets);
	struct jv *profiles = jv_array(a);
	jv_push(a, profiles, jv_string(a, arena_printf(a, "kns.%s", p->id.namespace)));
	jv_add(a, spec, "profiles", profiles);
	jv_add(a, spec, "interfaceName", str(a, n->host_if));
	jv_add(a, spec, "mac", str(a, pod_mac));
	if (c->n_ports) {
		struct jv *ports = jv_array(a);
		for (size_t i = 0; i < c->n_ports; i++) {
			struct jv *o = jv_object(a);
			jv_add(a, o, "name", str(a, c->ports[i].name));
			if (c->ports[i].protocol)
				jv_add(a, o, "protocol", str(a, c->ports[i].protocol));
			jv_add(a, o, "port", jv_int(a, c->ports[i].port));
			jv_push(a, ports, o);
		}
		jv_add(a, spec, "ports", ports);
	}
	jv_add(a, doc, "spec", spec);
	struct model_errors errs = { 0 };
	struct br_object *o = model_decode(doc, false, &errs);
	if (!o)
		for (size_t i = 0; i < errs.n; i++)
			sb_addf(err, "%s%s", i ? "; " : "", errs.v[i]);
	model_errors_clear(&errs);
	arena_free(a);
	return o;
}

/* Create the endpoint, or take over the one an earlier sandbox of the pod left. */
static int write_wep(struct plugin *p, struct br_object *o, struct strbuf *err)
{
	/* Usually new: try that first, it saves a read. */
	int r = ds_create(p->ds, o);
	for (int attempt = 0; r == -EEXIST && attempt < 10; attempt++) {
		struct br_object *cur;
		r = ds_get(p->ds, o->kind, o->meta.namespace, o->meta.name, &cur);
		if (r == -ENOENT) {
			r = ds_create(p->ds, o);
			continue;
		}
		if (r < 0)
			break;
		o->meta.uid = arena_strdup(o->arena, cur->meta.uid);
		o->meta.creation_timestamp = arena_strdup(o->arena, cur->meta.creation_timestamp);
		o->revision = cur->revision;
		model_free(cur);
		r = ds_update(p->ds, o);
		if (r == -ECANCELED || r == -ENOENT)
			r = -EEXIST; /* changed or gone under us: look again */
	}
	if (r == -EEXIST) {
		sb_adds(err, "the WorkloadEndpoint kept changing while being written");
		return -EAGAIN;
	}
	if (r < 0)
		sb_adds(err, ds_last_error(p->ds));
	return r;
}

/* Is there an endpoint of this container (a completed ADD)? When unsure, yes. */
static bool endpoint_complete(struct plugin *p, const struct names *n)
{
	struct br_object *o = NULL;
	int r = ds_get(p->ds, model_kind(KIND_WORKLOADENDPOINT), p->id.namespace, n->wep, &o);
	if (r == -ENOENT)
		return false;
	if (r < 0)
		return true;
	const struct br_workloadendpoint *wep = (const struct br_workloadendpoint *)o;
	bool mine = wep->spec.container_id && streq(wep->spec.container_id, p->container_id);
	model_free(o);
	return mine;
}

/*
 * Everything an ADD can check before it changes anything: the names from
 * CNI_ARGS and CNI_IFNAME, the WorkloadEndpoint it would write (with
 * placeholder addresses and MAC), and the container's namespace. Fails (and
 * exits) when something is wrong.
 */
static void check_add(struct plugin *p, const struct names *n, const struct dp_spec *s)
{
	const struct cni_conf *c = p->conf;
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	if (cni_identity_check(&p->id, p->ifname, &err) < 0) {
		char *details = arena_strdup(p->a, sb_str(&err));
		sb_free(&err);
		plugin_fail(p, CNI_ERR_INVALID_ENV, "invalid pod identity", details);
	}
	struct br_ip placeholder = ip4_from_u32(0xc0000201u); /* 192.0.2.1, TEST-NET-1 */
	struct br_object *wep = build_wep(p, n, c->n_ips ? c->ips : &placeholder,
					  c->n_ips ? c->n_ips : 1, "02:00:00:00:00:00", &err);
	if (!wep) {
		char *details = arena_strdup(p->a, sb_str(&err));
		sb_free(&err);
		plugin_fail(p, CNI_ERR_INVALID_CONFIG, "the WorkloadEndpoint would be invalid",
			    details);
	}
	model_free(wep);
	int r = dp_precheck(s, &err);
	if (r == -EALREADY && !endpoint_complete(p, n)) {
		/*
		 * The pod's veth, and no endpoint of this container: an ADD of it was
		 * interrupted (killed after the dataplane, before the endpoint). Its
		 * interface (and the routes on it) go; its address is in the handle,
		 * which IPAM gives back to this ADD.
		 */
		log_warn("ADD %s: %s in %s and %s were left by an interrupted ADD of this pod; "
			 "removing them",
			 p->container_id, p->ifname, p->netns, n->host_if);
		sb_reset(&err);
		r = dp_teardown(p->netns, p->ifname, NULL, &err);
		if (r == 0) {
			sb_reset(&err);
			r = dp_precheck(s, &err);
		}
	}
	if (r < 0) {
		char *details = arena_strdup(p->a, sb_str(&err));
		sb_free(&err);
		plugin_fail(p,
			    r == -EEXIST || r == -EALREADY ? CNI_ERR_CONFLICT : CNI_ERR_DATAPLANE,
			    "the container's network is not free for this interface", details);
	}
	sb_free(&err);
}

/*
 * After a failed ADD: remove what this call created (@made: the veth, when
 * dp_setup() succeeded) and give back the addresses it added to the handle.
 * What the handle already held (a retried ADD) stays until the runtime's DEL.
 */
static void undo_add(struct plugin *p, const struct dp_spec *s, const struct dp_made *made,
		     const struct plugin_added *added)
{
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	if (made && dp_undo(s, made, &err) < 0)
		log_warn("undoing the dataplane: %s", sb_str(&err));
	sb_reset(&err);
	if (plugin_unassign(p, added, &err) < 0)
		log_warn("releasing %s after a failed ADD: %s (the runtime's DEL will retry)",
			 p->handle, sb_str(&err));
	sb_free(&err);
}

static int dp_code(int r)
{
	switch (r) {
	case -EEXIST:
		return CNI_ERR_CONFLICT;
	case -ENOENT:
		return CNI_ERR_UNKNOWN_CONTAINER;
	default:
		return CNI_ERR_DATAPLANE;
	}
}

__attribute__((noreturn)) static void cmd_add(struct plugin *p)
{
	const struct cni_conf *c = p->conf;
	struct names n;
	names_of(p, &n);
	struct dp_spec s = { .host_if = n.host_if,
			     .netns = p->netns,
			     .netns_fd = p->netns_fd,
			     .ifname = p->ifname,
			     .mtu = plugin_mtu(p) };
	check_add(p, &n, &s);

	struct ipam_assigned ips;
	struct plugin_added added;
	uint64_t t0 = now_ns();
	plugin_assign(p, &ips, &added);
	uint64_t t1 = now_ns();

	s.ips = ips.ips;
	s.n_ips = ips.n;
	char pod_mac[18];
	struct dp_made made;
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	int r = dp_setup(&s, pod_mac, &made, &err);
	uint64_t t2 = now_ns();
	if (r < 0) {
		char *details = arena_strdup(p->a, sb_str(&err));
		sb_free(&err);
		undo_add(p, &s, NULL, &added);
		plugin_fail(p, dp_code(r), "cannot set up the pod's network", details);
	}
	struct br_object *wep = build_wep(p, &n, ips.ips, ips.n, pod_mac, &err);
	bool built = wep != NULL;
	r = built ? write_wep(p, wep, &err) : -EINVAL;
	model_free(wep);
	if (r < 0) {
		char *details = arena_strdup(p->a, sb_str(&err));
		sb_free(&err);
		undo_add(p, &s, &made, &added);
		plugin_fail(p,
			    !built			      ? CNI_ERR_INVALID_CONFIG
			    : r == -EAGAIN || r == -ETIMEDOUT ? CNI_ERR_TRY_AGAIN
							      : CNI_ERR_DATASTORE,
			    "cannot write the WorkloadEndpoint", details);
	}
	uint64_t t3 = now_ns();
	log_debug("ADD %s took %.1f ms: IPAM %.1f, dataplane %.1f, endpoint %.1f", p->container_id,
		  (double)(t3 - p->started_ns) / 1e6, (double)(t1 - t0) / 1e6,
		  (double)(t2 - t1) / 1e6, (double)(t3 - t2) / 1e6);
	log_info("ADD %s: %s in %s, host side %s, endpoint %s", p->container_id, p->ifname,
		 p->netns, n.host_if, n.wep);

	struct cni_result res = { .n_ifaces = 2, .ip_iface = 1, .gateway = true };
	snprintf(res.ifaces[0].name, sizeof(res.ifaces[0].name), "%s", n.host_if);
	snprintf(res.ifaces[0].mac, sizeof(res.ifaces[0].mac), "%s", CNI_HOST_MAC);
	snprintf(res.ifaces[1].name, sizeof(res.ifaces[1].name), "%s", p->ifname);
	snprintf(res.ifaces[1].mac, sizeof(res.ifaces[1].mac), "%s", pod_mac);
	res.ifaces[1].sandbox = p->netns;
	memcpy(res.ips, ips.ips, ips.n * sizeof(ips.ips[0]));
	res.n_ips = ips.n;
	sb_reset(&err);
	cni_result_write(&err, c->cni_version, &res);
	char *doc = arena_strdup(p->a, sb_str(&err));
	sb_free(&err);
	plugin_succeed(p, doc);
}

__attribute__((noreturn)) static void cmd_del(struct plugin *p)
{
	struct names n;
	names_of(p, &n);
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	bool ours = false;
	int r = -ECANCELED;
	/*
	 * Deleted at the revision read, so another sandbox's endpoint is never
	 * taken; read again when it changed (on Kubernetes the revision is the
	 * pod's, which the kubelet changes too).
	 */
	for (int attempt = 0; attempt < 5 && r == -ECANCELED; attempt++) {
		struct br_object *o = NULL;
		r = ds_get(p->ds, model_kind(KIND_WORKLOADENDPOINT), p->id.namespace, n.wep, &o);
		if (r < 0 && r != -ENOENT) {
			/* Unsure whose endpoint it is: refuse rather than guess. */
			char *details = arena_strdup(p->a, ds_last_error(p->ds));
			sb_free(&err);
			plugin_fail(p, CNI_ERR_DATASTORE, "cannot read the WorkloadEndpoint",
				    details);
		}
		const struct br_workloadendpoint *wep = (const struct br_workloadendpoint *)o;
		ours = wep && streq(wep->spec.container_id, p->container_id);
		if (wep && !ours)
			log_info("DEL %s: endpoint %s belongs to container %s; keeping it",
				 p->container_id, n.wep,
				 wep->spec.container_id ? wep->spec.container_id : "(none)");
		r = ours ? ds_delete(p->ds, o->kind, o->meta.namespace, o->meta.name, o->revision)
			 : 0;
		model_free(o);
	}
	if (r < 0 && r != -ENOENT) {
		char *details = arena_strdup(p->a, ds_last_error(p->ds));
		sb_free(&err);
		plugin_fail(p, r == -ECANCELED ? CNI_ERR_TRY_AGAIN : CNI_ERR_DATASTORE,
			    "cannot delete the WorkloadEndpoint", details);
	}
	r = dp_teardown(p->netns, p->ifname, ours ? n.host_if : NULL, &err);
	if (r < 0) {
		char *details = arena_strdup(p->a, sb_str(&err));
		sb_free(&err);
		plugin_fail(p, CNI_ERR_DATAPLANE, "cannot remove the pod's interface", details);
	}
	r = plugin_release(p, &err);
	if (r < 0) {
		char *details = arena_strdup(p->a, sb_str(&err));
		sb_free(&err);
		plugin_fail(p, plugin_ipam_code(r), "cannot release the pod's address", details);
	}
	sb_free(&err);
	log_info("DEL %s: done", p->container_id);
	plugin_succeed(p, NULL);
}

__attribute__((noreturn)) static void cmd_check(struct plugin *p)
{
	const struct cni_conf *c = p->conf;
	if (cni_version_cmp(c->cni_version, "0.4.0") < 0)
		plugin_fail(p, CNI_ERR_INCOMPATIBLE_VERSION,
			    "CHECK needs cniVersion 0.4.0 or later", c->cni_version);
	struct names n;
	names_of(p, &n);
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	struct br_ip held[CNI_MAX_IPS];
	size_t nh = 0;
	int r = ipam_handle_ips(p->ds, p->handle, held, CNI_MAX_IPS, &nh, &err);
	if (r < 0) {
		char *details = arena_strdup(p->a, sb_str(&err));
		sb_free(&err);
		plugin_fail(p, plugin_ipam_code(r), "cannot read the pod's addresses", details);
	}
	if (!nh)
		plugin_fail(p, CNI_ERR_CHECK, "IPAM holds no address for this container",
			    p->handle);
	for (size_t i = 0; i < c->n_prev_ips; i++) {
		bool found = false;
		for (size_t k = 0; k < nh; k++)
			found |= ip_equal(&c->prev_ips[i], &held[k]);
		char ip[IP_STRLEN];
		if (!found)
			plugin_fail(p, CNI_ERR_CHECK,
				    "prevResult has an address IPAM does not hold",
				    arena_strdup(p->a, ip_str(&c->prev_ips[i], ip)));
	}
	struct br_object *o;
	r = ds_get(p->ds, model_kind(KIND_WORKLOADENDPOINT), p->id.namespace, n.wep, &o);
	if (r < 0)
		plugin_fail(p, r == -ENOENT ? CNI_ERR_CHECK : CNI_ERR_DATASTORE,
			    "cannot read the WorkloadEndpoint",
			    arena_strdup(p->a, ds_last_error(p->ds)));
	const struct br_workloadendpoint *wep = (const struct br_workloadendpoint *)o;
	const char *problem = NULL;
	if (!streq(wep->spec.container_id, p->container_id))
		problem = "the WorkloadEndpoint belongs to another container";
	else if (!streq(wep->spec.interface_name, n.host_if))
		problem = "the WorkloadEndpoint names another interface";
	else if (wep->spec.n_ip_networks != nh)
		problem = "the WorkloadEndpoint's addresses differ from IPAM's";
	for (size_t i = 0; !problem && i < wep->spec.n_ip_networks; i++) {
		struct br_cidr cidr;
		if (cidr_parse(wep->spec.ip_networks[i], true, &cidr) < 0 ||
		    !ip_equal(&cidr.ip, &held[i]))
			problem = "the WorkloadEndpoint's addresses differ from IPAM's";
	}
	model_free(o);
	if (problem)
		plugin_fail(p, CNI_ERR_CHECK, problem, n.wep);
	struct dp_spec s = { .host_if = n.host_if,
			     .netns = p->netns,
			     .netns_fd = p->netns_fd,
			     .ifname = p->ifname,
			     .ips = held,
			     .n_ips = nh };
	if (dp_check(&s, &err) < 0) {
		char *details = arena_strdup(p->a, sb_str(&err));
		sb_free(&err);
		plugin_fail(p, CNI_ERR_CHECK, "the pod's network is not as it was set up", details);
	}
	sb_free(&err);
	plugin_succeed(p, NULL);
}

int main(int argc, char **argv)
{
	struct plugin p;
	plugin_start(&p, "brindle-cni", argc, argv);
	const char *ipam = p.conf->ipam_type;
	if (!ipam || !streq(ipam, "brindle-ipam"))
		plugin_fail(&p, CNI_ERR_INVALID_CONFIG, "ipam.type must be brindle-ipam",
			    ipam ? ipam : "(unset)");
	plugin_open_ds(&p);
	switch (p.cmd) {
	case CMD_ADD:
		cmd_add(&p);
	case CMD_DEL:
		cmd_del(&p);
	case CMD_CHECK:
		cmd_check(&p);
	default:
		plugin_fail(&p, CNI_ERR_INVALID_ENV, "unexpected command", NULL);
	}
}
