/*
 * lab ns, lab pod and lab exec: changing a running lab. Namespaces live in
 * the lab's datastore only (v1 Namespace; the product adds
 * kubernetes.io/metadata.name; on Kubernetes, the API's Namespaces). Pods added here are made
 * exactly like the topology's (lab_pod_start: brindle-cni ADD, brindle-probe) and recorded in
 * <dir>/pods; pod delete is a real brindle-cni DEL, so the WorkloadEndpoint
 * goes and IPAM releases the address. Pod labels are the WorkloadEndpoint's
 * labels, as a CNI plugin's pod controller keeps them (on Kubernetes the
 * Pod's labels, which felix reads through its WorkloadEndpoint).
 */
#include "lab.h"
#include <brindle/sys/install.h>
#include <brindle/sys/clock.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* "k=v" sets, "k-" removes; false (with a message) on anything else. */
static bool apply_label_args(struct arena *a, struct br_labels *labels, char **args, int n,
			     const char *what)
{
	for (int i = 0; i < n; i++) {
		const char *s = args[i], *eq = strchr(s, '=');
		size_t len = strlen(s);
		if (!eq && len > 1 && s[len - 1] == '-') {
			labels_del(labels, arena_strndup(a, s, len - 1));
			continue;
		}
		if (!eq || eq == s) {
			ctl_error("%s: \"%s\" is not k=v (set) or k- (remove)", what, s);
			return false;
		}
		labels_set(a, labels, arena_strndup(a, s, (size_t)(eq - s)), eq + 1);
	}
	return true;
}

static bool reserved_key(const struct br_labels *before, const struct br_labels *after,
			 const char *prefix, const char *what)
{
	for (int pass = 0; pass < 2; pass++) {
		const struct br_labels *x = pass ? after : before, *y = pass ? before : after;
		for (size_t i = 0; i < x->n; i++) {
			const char *k = x->v[i].key;
			bool ours = str_has_prefix(k, prefix) ||
				    streq(k, "kubernetes.io/metadata.name");
			const char *v = labels_get(y, k);
			if (ours && (!v || !streq(v, x->v[i].value))) {
				ctl_error("%s: label %s is set by the product, not by hand", what,
					  k);
				return true;
			}
		}
	}
	return false;
}

static int open_lab(struct lab *l, const char *name)
{
	lab_init(l, name);
	if (!lab_name_valid(name)) {
		ctl_error("\"%s\" is not a lab name", name);
		return -EINVAL;
	}
	return lab_load(l);
}

/* lab ns add NAME NS [k=v ...] | lab ns label NAME NS k=v ... [k-] */
int lab_cmd_ns(struct ctl *c, int argc, char **argv)
{
	(void)c;
	if (argc < 4 || (!streq(argv[1], "add") && !streq(argv[1], "label")) ||
	    (streq(argv[1], "label") && argc < 5)) {
		ctl_error("usage: brindlectl lab ns add NAME NS [k=v ...] | lab ns label NAME NS "
			  "k=v ... [k-]");
		return CTL_USAGE;
	}
	bool add = streq(argv[1], "add");
	const char *ns = argv[3];
	if (!lab_dns_label(ns, 63)) {
		ctl_error("namespace \"%s\": lower case letters, digits and '-', at most 63", ns);
		return CTL_USAGE;
	}
	struct lab l;
	struct ctl lc;
	int r = CTL_FAIL;
	if (open_lab(&l, argv[2]) < 0) {
		lab_free(&l);
		return CTL_FAIL;
	}
	struct ds *d = lab_ds(&l, &lc);
	const struct br_kind *k = model_kind(KIND_NAMESPACE);
	bool kube = l.topo->kubernetes;
	struct br_object *o = NULL;
	if (!d)
		goto out;
	int g = ds_get(d, k, NULL, ns, &o);
	if (add && g == 0) {
		ctl_error("namespace %s already exists in lab %s", ns, l.name);
		goto out;
	}
	if (!add && g < 0) {
		ctl_error("lab %s has no namespace %s%s", l.name, ns,
			  g == -ENOENT ? "" : ds_last_error(d));
		goto out;
	}
	if (add && g != -ENOENT) {
		ctl_error("namespace %s: %s", ns, ds_last_error(d));
		goto out;
	}
	if (add)
		o = model_new(k, NULL, ns);
	struct br_labels before = labels_copy(o->arena, &o->meta.labels);
	if (add)
		labels_set(o->arena, &o->meta.labels, "kubernetes.io/metadata.name", ns);
	if (!apply_label_args(o->arena, &o->meta.labels, argv + 4, argc - 4, "lab ns") ||
	    (!add && reserved_key(&before, &o->meta.labels, "\x01", "lab ns label")))
		goto out;
	if (add && labels_get(&o->meta.labels, "kubernetes.io/metadata.name") &&
	    !streq(labels_get(&o->meta.labels, "kubernetes.io/metadata.name"), ns)) {
		ctl_error("lab ns add: kubernetes.io/metadata.name is set by the product");
		goto out;
	}
	if (kube) {
		/* a Namespace of the API, written as the cluster's administrator */
		labels_del(&o->meta.labels, "kubernetes.io/metadata.name");
		if (lab_kube_namespace(&l, ns, &o->meta.labels, add) < 0)
			goto out;
	} else if ((add ? ds_create(d, o) : ds_update(d, o)) < 0) {
		ctl_error("namespace %s: %s", ns, ds_last_error(d));
		goto out;
	}
	printf("namespace %s %s\n", ns, add ? "created" : "labeled");
	r = CTL_OK;
out:
	model_free(o);
	if (d)
		lab_ctl_close(&lc);
	lab_free(&l);
	return r;
}

static bool parse_port(struct arena *a, const char *s, bool named, struct lab_port *p,
		       const char *flag)
{
	char *copy = arena_strdup(a, s), *parts[3];
	size_t n = 0;
	for (char *save = NULL, *t = strtok_r(copy, ":", &save); t && n < 3;
	     t = strtok_r(NULL, ":", &save))
		parts[n++] = t;
	size_t want = named ? 3 : 2;
	char *end;
	unsigned long v = n == want ? strtoul(parts[want - 1], &end, 10) : 0;
	if (n != want || *end || v == 0 || v > 65535 ||
	    !lab_proto_parse(parts[want - 2], &p->proto) ||
	    (named && (strlen(parts[0]) > 15 || !lab_dns_label(parts[0], 15)))) {
		ctl_error("%s \"%s\": want %sPROTO:PORT (PROTO tcp, udp or sctp in any case, PORT "
			  "1-65535%s)",
			  flag, s, named ? "NAME:" : "",
			  named ? ", NAME a DNS label of at most 15" : "");
		return false;
	}
	p->name = named ? parts[0] : NULL;
	p->port = (uint16_t)v;
	return true;
}

static struct lab_pod_state *find_pod(struct lab_pod_state *pods, size_t n, const char *ref)
{
	for (size_t i = 0; i < n; i++)
		if (streq(pods[i].ref, ref))
			return &pods[i];
	return NULL;
}

/* "ns/pod" split into its two DNS labels. */
static bool split_ref(struct arena *a, const char *ref, const char **ns, const char **pod)
{
	const char *slash = strchr(ref, '/');
	if (!slash || !lab_dns_label(slash + 1, 63)) {
		ctl_error("\"%s\" is not NS/POD", ref);
		return false;
	}
	*ns = arena_strndup(a, ref, (size_t)(slash - ref));
	*pod = slash + 1;
	if (!lab_dns_label(*ns, 63)) {
		ctl_error("\"%s\" is not NS/POD", ref);
		return false;
	}
	return true;
}

enum {
	POD_NODE,
	POD_IP,
	POD_LABELS,
	POD_PORT,
	POD_SERVE,
	POD_HOST_NETWORK
};
const struct ctl_flag lab_pod_add_flags[] = {
	[POD_NODE] = { "--node", NULL, "NODE", "the node the pod runs on (required)" },
	[POD_IP] = { "--ip", NULL, "ADDRESS",
		     "its address, in one of the lab's pools (default: IPAM chooses)" },
	[POD_LABELS] = { "--labels", NULL, "k=v,...", "its labels; repeatable" },
	[POD_PORT] = { "--port", NULL, "name:proto:port", "a named container port; repeatable" },
	[POD_SERVE] = { "--serve", NULL, "proto:port", "a port it answers on; repeatable" },
	[POD_HOST_NETWORK] = { "--host-network", NULL, NULL,
			       "in the node's network namespace, with the node's address" },
	{ 0 },
};

static int pod_add(struct lab *l, int argc, char **argv)
{
	const struct lab_topology *t = l->topo;
	struct lab_pod *p = arena_new_array(l->a, struct lab_pod, 1);
	if (!split_ref(l->a, argv[0], &p->namespace, &p->name))
		return CTL_USAGE;
	struct lab_port ports[64], serve[64];
	struct ctl_parsed pa;
	int r = ctl_parse("lab pod add", lab_pod_add_flags, argc, argv, 1, &pa);
	const char *node = pa.value[POD_NODE], *ip = pa.value[POD_IP];
	if (r == CTL_OK && pa.n_pos) {
		ctl_error("lab pod add: unexpected \"%s\"", pa.pos[0]);
		r = CTL_USAGE;
	}
	for (size_t j = 0; r == CTL_OK && j < pa.n[POD_LABELS]; j++) {
		const char *v = pa.all[POD_LABELS][j];
		char *copy = arena_strdup(l->a, v), *save = NULL, *kv[64];
		int n = 0;
		for (char *s = strtok_r(copy, ",", &save); s && n < 64;
		     s = strtok_r(NULL, ",", &save))
			kv[n++] = s;
		for (int i = 0; i < n && r == CTL_OK; i++)
			if (!strchr(kv[i], '=')) {
				ctl_error("--labels \"%s\": want k=v,...", v);
				r = CTL_USAGE;
			}
		if (r == CTL_OK && !apply_label_args(l->a, &p->labels, kv, n, "--labels"))
			r = CTL_USAGE;
	}
	for (size_t j = 0; r == CTL_OK && j < pa.n[POD_PORT]; j++) {
		if (p->n_ports == ARRAY_SIZE(ports) ||
		    !parse_port(l->a, pa.all[POD_PORT][j], true, &ports[p->n_ports], "--port"))
			r = CTL_USAGE;
		else
			p->n_ports++;
	}
	for (size_t j = 0; r == CTL_OK && j < pa.n[POD_SERVE]; j++) {
		if (p->n_serve == ARRAY_SIZE(serve) ||
		    !parse_port(l->a, pa.all[POD_SERVE][j], false, &serve[p->n_serve], "--serve"))
			r = CTL_USAGE;
		else
			p->n_serve++;
	}
	p->host_network = pa.value[POD_HOST_NETWORK] != NULL;
	ctl_parsed_free(&pa);
	if (r != CTL_OK)
		return r;
	p->ports = arena_memdup(l->a, ports, sizeof(ports[0]) * (p->n_ports + 1));
	p->serve = arena_memdup(l->a, serve, sizeof(serve[0]) * (p->n_serve + 1));
	if (!node) {
		ctl_error("lab pod add: --node is required");
		return CTL_USAGE;
	}
	size_t ni = t->n_nodes;
	for (size_t i = 0; i < t->n_nodes; i++)
		if (streq(t->nodes[i].name, node))
			ni = i;
	if (ni == t->n_nodes) {
		ctl_error("--node: lab %s has no node %s", t->name, node);
		return CTL_FAIL;
	}
	if (!t->nodes[ni].pods) {
		ctl_error("--node: node %s takes no pods (pods: false)", node);
		return CTL_FAIL;
	}
	p->node = ni;
	if (ip) {
		bool in_pool = false;
		if (p->host_network) {
			ctl_error("--ip: a host-network pod has its node's address");
			return CTL_USAGE;
		}
		int af = t->ipv4 ? AF_INET : AF_INET6; /* IPv6 in an IPv6-only lab */
		if (ip_parse(ip, &p->ip) < 0 || p->ip.family != af) {
			ctl_error("--ip: \"%s\" is not an %s address", ip,
				  af == AF_INET ? "IPv4" : "IPv6");
			return CTL_USAGE;
		}
		for (size_t i = 0; i < t->n_pools; i++)
			in_pool |= cidr_contains_ip(&t->pools[i].cidr, &p->ip);
		if (!in_pool) {
			ctl_error("--ip: %s is in none of the lab's IP pools", ip);
			return CTL_FAIL;
		}
		p->has_ip = true;
	}
	struct lab_pod_state *pods;
	size_t npods;
	if (lab_read_pods(l, &pods, &npods) < 0)
		return CTL_FAIL;
	if (find_pod(pods, npods, argv[0])) {
		ctl_error("lab %s already has a pod %s", t->name, argv[0]);
		return CTL_FAIL;
	}
	const char *netns = lab_ns_pod(l->a, t->name, p->namespace, p->name);
	struct stat st;
	if (!p->host_network && stat(arena_printf(l->a, "/run/netns/%s", netns), &st) == 0) {
		ctl_error("network namespace %s exists already (a node or pod of the same name)",
			  netns);
		return CTL_FAIL;
	}
	struct ctl lc;
	struct ds *d = lab_ds(l, &lc);
	struct br_object *o = NULL;
	int g = d ? ds_get(d, model_kind(KIND_NAMESPACE), NULL, p->namespace, &o) : -EIO;
	model_free(o);
	if (d)
		lab_ctl_close(&lc);
	if (g < 0) {
		if (g == -ENOENT)
			ctl_error("lab %s has no namespace %s (lab ns add %s %s)", t->name,
				  p->namespace, t->name, p->namespace);
		return CTL_FAIL;
	}
	struct lab_bins b;
	lab_find_bins(l->a, &b);
	if (lab_pod_start(l, &b, p) < 0) {
		/* nothing half made stays: the probe (if any), the namespace */
		lab_kill_log(l, arena_printf(l->a, "pod-%s-%s", p->namespace, p->name));
		if (!p->host_network) {
			struct strbuf out = STRBUF_INIT;
			sb_init(&out);
			(void)lab_runf(&out, "ip netns del %s", netns);
			sb_free(&out);
		}
		return CTL_FAIL;
	}
	if (lab_read_pods(l, &pods, &npods) < 0)
		return CTL_FAIL;
	struct lab_pod_state *ps = find_pod(pods, npods, argv[0]);
	uint64_t deadline = now_ms() + 10000;
	while (!ps || !lab_pod_serving(l, &b, ps)) {
		if (!ps || now_ms() > deadline) {
			ctl_error("pod %s does not serve on all its ports within 10 s (log: "
				  "%s/pod-%s-%s.log)",
				  argv[0], l->dir, p->namespace, p->name);
			return CTL_FAIL;
		}
		usleep(100000);
	}
	printf("pod %s on %s: %s%s%s\n", ps->ref, ps->node, ps->ip, ps->ip6 ? " " : "",
	       ps->ip6 ? ps->ip6 : "");
	return CTL_OK;
}

static int pod_delete(struct lab *l, const char *ref)
{
	const char *ns, *pod;
	if (!split_ref(l->a, ref, &ns, &pod))
		return CTL_USAGE;
	struct lab_pod_state *pods, *ps;
	size_t npods;
	if (lab_read_pods(l, &pods, &npods) < 0)
		return CTL_FAIL;
	if (!(ps = find_pod(pods, npods, ref))) {
		ctl_error("lab %s has no pod %s", l->name, ref);
		return CTL_FAIL;
	}
	bool host = streq(ps->netns, lab_ns_node(l->a, l->name, ps->node));
	struct lab_bins b;
	lab_find_bins(l->a, &b);
	if (!host && lab_pod_cni_del(l, &b, ps, ns, pod) < 0)
		return CTL_FAIL;
	if (l->topo->kubernetes && lab_kube_pod_delete(l, ns, pod) < 0)
		return CTL_FAIL;
	lab_kill_log(l, arena_printf(l->a, "pod-%s-%s", ns, pod));
	struct strbuf out = STRBUF_INIT;
	sb_init(&out);
	int r = host ? 0 : lab_runf(&out, "ip netns del %s", ps->netns);
	if (r != 0)
		ctl_error("ip netns del %s: %s", ps->netns, sb_str(&out));
	sb_reset(&out);
	/* the external hosts' routes, as lab_pod_start made them */
	const char *ip6 = ps->ip6 ? ps->ip6 : strchr(ps->ip, ':') ? ps->ip : NULL;
	if (!host && l->topo->ipv4)
		(void)lab_runf(&out, "ip -n %s route del %s/32 table %d",
			       lab_ns_fabric(l->a, l->name), ps->ip, LAB_EXTERNAL_TABLE);
	if (!host && ip6)
		(void)lab_runf(&out, "ip -n %s -6 route del %s/128 table %d",
			       lab_ns_fabric(l->a, l->name), ip6, LAB_EXTERNAL_TABLE);
	sb_free(&out);
	if (lab_state_drop(l, "pods", arena_printf(l->a, "%s ", ref)) < 0) {
		ctl_error("%s/pods: could not be rewritten", l->dir);
		return CTL_FAIL;
	}
	printf("pod %s deleted\n", ref);
	return r == 0 ? CTL_OK : CTL_FAIL;
}

static int pod_label(struct lab *l, const char *ref, char **args, int n)
{
	const char *ns, *pod;
	if (!split_ref(l->a, ref, &ns, &pod))
		return CTL_USAGE;
	struct lab_pod_state *pods;
	size_t npods;
	if (lab_read_pods(l, &pods, &npods) < 0)
		return CTL_FAIL;
	if (!find_pod(pods, npods, ref)) {
		ctl_error("lab %s has no pod %s", l->name, ref);
		return CTL_FAIL;
	}
	if (l->topo->kubernetes) {
		/* the Pod's own labels, which its WorkloadEndpoint follows */
		for (int i = 0; i < n; i++)
			if (str_has_prefix(args[i], "projectcalico.org/")) {
				ctl_error("lab pod label: label %.*s is set by the product, not by "
					  "hand",
					  (int)strcspn(args[i], "="), args[i]);
				return CTL_FAIL;
			}
		if (lab_kube_pod_label(l, ns, pod, args, n) < 0)
			return CTL_FAIL;
		printf("pod %s labeled\n", ref);
		return CTL_OK;
	}
	struct ctl lc;
	struct ds *d = lab_ds(l, &lc);
	if (!d)
		return CTL_FAIL;
	struct br_object **weps = NULL, *w = NULL;
	size_t nw = 0;
	int r = CTL_FAIL;
	if (ds_list(d, model_kind(KIND_WORKLOADENDPOINT), ns, &weps, &nw) < 0) {
		ctl_error("workload endpoints of %s: %s", ns, ds_last_error(d));
		goto out;
	}
	for (size_t i = 0; i < nw; i++)
		if (streq(((struct br_workloadendpoint *)weps[i])->spec.pod ?: "", pod))
			w = weps[i];
	if (!w) {
		ctl_error("pod %s has no WorkloadEndpoint (a host-network pod has no labels of its "
			  "own)",
			  ref);
		goto out;
	}
	struct br_labels before = labels_copy(w->arena, &w->meta.labels);
	if (!apply_label_args(w->arena, &w->meta.labels, args, n, "lab pod label") ||
	    reserved_key(&before, &w->meta.labels, "projectcalico.org/", "lab pod label"))
		goto out;
	if (ds_update(d, w) < 0) {
		ctl_error("pod %s: %s", ref, ds_last_error(d));
		goto out;
	}
	printf("pod %s labeled\n", ref);
	r = CTL_OK;
out:
	model_free_all(weps, nw);
	lab_ctl_close(&lc);
	return r;
}

/* lab pod add|delete|label NAME NS/POD ... */
int lab_cmd_pod(struct ctl *c, int argc, char **argv)
{
	(void)c;
	const char *sub = argc > 1 ? argv[1] : "";
	bool ok = (streq(sub, "add") && argc >= 4) || (streq(sub, "delete") && argc == 4) ||
		  (streq(sub, "label") && argc >= 5);
	if (!ok) {
		ctl_error("usage: brindlectl lab pod add NAME NS/POD --node N [--ip A] [--labels "
			  "k=v,...] [--port name:proto:port]... [--serve proto:port]... "
			  "[--host-network] | pod delete NAME NS/POD | pod label NAME NS/POD k=v "
			  "... [k-]");
		return CTL_USAGE;
	}
	struct lab l;
	if (open_lab(&l, argv[2]) < 0) {
		lab_free(&l);
		return CTL_FAIL;
	}
	int r = streq(sub, "add")      ? pod_add(&l, argc - 3, argv + 3)
		: streq(sub, "delete") ? pod_delete(&l, argv[3])
				       : pod_label(&l, argv[3], argv + 4, argc - 4);
	lab_free(&l);
	return r;
}

/* lab exec NAME TARGET -- CMD...: CMD in the target's network namespace, its exit status ours. */
int lab_cmd_exec(struct ctl *c, int argc, char **argv)
{
	(void)c;
	if (argc < 5 || !streq(argv[3], "--")) {
		ctl_error("usage: brindlectl lab exec NAME TARGET -- CMD... (TARGET a node, NS/POD "
			  "or an external host)");
		return CTL_USAGE;
	}
	struct lab l;
	if (open_lab(&l, argv[1]) < 0) {
		lab_free(&l);
		return CTL_FAIL;
	}
	const struct lab_topology *t = l.topo;
	const char *target = argv[2], *netns = NULL;
	bool node = false;
	if (strchr(target, '/')) {
		struct lab_pod_state *pods, *ps;
		size_t npods;
		if (lab_read_pods(&l, &pods, &npods) == 0 && (ps = find_pod(pods, npods, target)))
			netns = ps->netns;
	} else {
		for (size_t i = 0; i < t->n_nodes; i++)
			if (streq(t->nodes[i].name, target)) {
				netns = lab_ns_node(l.a, t->name, target);
				node = true;
			}
		for (size_t i = 0; i < t->n_externals; i++)
			if (streq(t->externals[i].name, target))
				netns = lab_ns_external(l.a, t->name, target);
		for (size_t i = 0; i < t->n_peers; i++)
			if (streq(t->peers[i].name, target))
				netns = lab_ns_external(l.a, t->name, target);
	}
	if (!netns) {
		ctl_error("lab %s has no node, pod, external host or BGP peer \"%s\"", t->name,
			  target);
		lab_free(&l);
		return CTL_FAIL;
	}
	/*
	 * On a node, what a node's shell has: the datastore's endpoints (the
	 * admin's kubeconfig on Kubernetes), this BIRD's socket, NODENAME, and
	 * this brindlectl first in PATH, so `brindlectl node status` and
	 * `brindlectl get` work without flags.
	 */
	if (node) {
		setenv("NODENAME", target, 1);
		setenv("BRINDLE_BIRD_SOCKET", arena_printf(l.a, "%s/%s/bird.ctl", l.dir, target),
		       1);
		if (t->kubernetes) {
			setenv("BRINDLE_DATASTORE_TYPE", "kubernetes", 1);
			setenv("BRINDLE_KUBECONFIG", lab_kubeconfig(&l, "admin"), 1);
			unsetenv("BRINDLE_ETCD_ENDPOINTS");
		} else {
			setenv("BRINDLE_DATASTORE_TYPE", "etcdv3", 1);
			setenv("BRINDLE_ETCD_ENDPOINTS", l.endpoints, 1);
		}
		const char *path = getenv("PATH");
		setenv("PATH",
		       arena_printf(l.a, "%s:%s", install_exe_dir(l.a),
				    path ? path : "/usr/bin:/bin"),
		       1);
	}
	/* ip netns exec also mounts the namespace's own /sys */
	char **full = arena_new_array(l.a, char *, (size_t)argc + 1);
	int k = 0;
	full[k++] = "ip";
	full[k++] = "netns";
	full[k++] = "exec";
	full[k++] = (char *)netns;
	for (int i = 4; i < argc; i++)
		full[k++] = argv[i];
	fflush(NULL);
	execvp("ip", full);
	ctl_error("ip netns exec: %s", strerror(errno));
	lab_free(&l);
	return 127;
}
