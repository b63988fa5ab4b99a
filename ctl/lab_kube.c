/*
 * A lab on the Kubernetes datastore (`datastore: kubernetes`, docs/lab.md).
 * The test control plane (scripts/kube-testenv: etcd, kube-apiserver,
 * kube-controller-manager) runs in the lab's fabric namespace on the first
 * subnet's gateway address (its IPv6 one in an IPv6-only lab), which every
 * node reaches through its default route. The lab plays the cluster's
 * administrator and kubelet: it installs Brindle's CRDs (generated from the
 * model, as deploy/crds.yaml) and ClusterRoles (deploy/rbac), registers the
 * nodes as Node objects and the namespaces and pods as API objects, and after
 * brindle-cni's ADD reports each pod Running with its address.
 *
 * Identities: the components run as the ServiceAccounts of deploy/rbac
 * (lab_kubelet.c gives each pod its token, install-cni the plugin its own),
 * lab apply/delete and the lab's datastore reads as the user "brindlectl"
 * (ClusterRole brindle-ctl-admin); only what the kubelet and a cluster
 * administrator do (Nodes, Namespaces, Pods, their status) is done as admin.
 * A grant missing from a shipped role fails the lab.
 *
 * brindlectl's own requests go out from the fabric namespace: a lab command
 * enters it once, before its first request (lab_kube_enter), and stays.
 */
#include "lab.h"

#include <brindle/core/json.h>
#include <brindle/core/model_crd.h>
#include <brindle/core/yaml.h>
#include <brindle/paths.h>
#include <brindle/sys/clock.h>
#include <brindle/sys/install.h>
#include <brindle/sys/kube_client.h>
#include <brindle/sys/strbuf_file.h>
#include <brindle/core/kdd_map.h>
#include <brindle/core/kube_codec.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *lab_kubeconfig(struct lab *l, const char *who)
{
	return arena_printf(l->a, "%s/kube/%s.kubeconfig", l->dir, who);
}

int lab_kube_enter(struct lab *l)
{
	static bool entered;
	if (!l->topo || !l->topo->kubernetes || entered)
		return 0;
	const char *path = arena_printf(l->a, "/run/netns/%s", lab_ns_fabric(l->a, l->name));
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int r = fd < 0 || setns(fd, CLONE_NEWNET) < 0 ? -errno : 0;
	if (fd >= 0)
		close(fd);
	if (r < 0)
		ctl_error("entering the lab's fabric namespace (%s), where its API server is: %s",
			  path, strerror(-r));
	entered = r == 0;
	return r;
}

/*
 * The lab administrator's client, on one connection opened on first use and
 * kept for the command (lab_free closes it). Not lab_ds_as: lab_up.c calls
 * this file, not the other way round.
 */
static struct kube_client *admin_client(struct lab *l)
{
	if (!l->admin) {
		if (lab_kube_enter(l) < 0)
			return NULL;
		l->admin = arena_alloc(l->a, sizeof(*l->admin));
		*l->admin = (struct ctl){ 0 };
		l->admin->cfg.type = "kubernetes";
		l->admin->cfg.kubeconfig = lab_kubeconfig(l, "admin");
	}
	struct ds *d = ctl_ds(l->admin);
	return d ? ds_kube_client(d) : NULL;
}

/*
 * One request as the lab's administrator; @what names it in the message on
 * failure, except for the error @expected (a negative errno, or 0).
 */
static int admin_request(struct lab *l, const char *method, const char *path, const char *ctype,
			 const struct strbuf *body, const char *what, int expected,
			 struct jv **out_copy)
{
	struct kube_client *kc = admin_client(l);
	struct jv *out = NULL;
	int r = kc ? kube_request(kc, method, path, ctype, body, &out) : -EIO;
	if (r < 0 && r != expected)
		ctl_error("%s: %s", what, kc ? kube_last_error(kc) : "no connection to the API");
	if (r == 0 && out_copy && out) {
		/* the answer lives in the client: keep a copy in the lab's arena */
		struct strbuf sb = STRBUF_INIT;
		sb_init(&sb);
		json_write(&sb, out, false);
		struct strbuf err = STRBUF_INIT;
		sb_init(&err);
		if (json_parse(l->a, sb.buf, sb.len, out_copy, &err) < 0)
			*out_copy = NULL;
		sb_free(&err);
		sb_free(&sb);
	}
	return r;
}

int lab_kube_token(struct lab *l, const char *ns, const char *sa, const char **token)
{
	struct strbuf body = STRBUF_INIT, path = STRBUF_INIT;
	sb_init(&body);
	sb_init(&path);
	sb_adds(&body, "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"TokenRequest\","
		       "\"spec\":{\"expirationSeconds\":86400}}");
	kube_path(&path, "v1", ns, "serviceaccounts", sa);
	sb_adds(&path, "/token");
	struct jv *out = NULL;
	int r = admin_request(l, "POST", sb_str(&path), NULL, &body,
			      arena_printf(l->a, "a token for ServiceAccount %s/%s", ns, sa), 0,
			      &out);
	*token = r == 0 ? jv_as_string(jv_get(jv_get(out, "status"), "token")) : NULL;
	if (r == 0 && !*token) {
		ctl_error("a token for ServiceAccount %s/%s: the answer has no status.token", ns,
			  sa);
		r = -EPROTO;
	}
	sb_free(&body);
	sb_free(&path);
	return r;
}

static int post_json(struct lab *l, const char *path, const struct jv *doc, const char *what,
		     bool exists_ok)
{
	struct strbuf body = STRBUF_INIT;
	sb_init(&body);
	json_write(&body, doc, false);
	int r = admin_request(l, "POST", path, NULL, &body, what, exists_ok ? -EEXIST : 0, NULL);
	sb_free(&body);
	return r == -EEXIST && exists_ok ? 0 : r;
}

static int merge_patch(struct lab *l, const char *path, const struct strbuf *body, const char *what)
{
	return admin_request(l, "PATCH", path, "application/merge-patch+json", body, what, 0, NULL);
}

/* `kube-testenv ARGS...` (found next to brindlectl), its output in @out. */
static int testenv(struct lab *l, struct strbuf *out, char *const args[])
{
	const char *prog = lab_file(
		l->a, "scripts/kube-testenv",
		arena_printf(l->a, "%s/brindle/kube-testenv", BRINDLE_INSTALL_LIBEXECDIR), X_OK);
	char *argv[16];
	size_t n = 0;
	argv[n++] = (char *)prog;
	for (size_t i = 0; args[i] && n < ARRAY_SIZE(argv) - 1; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	return lab_run(NULL, argv, NULL, out);
}

/* Every CRD of the model, then a bounded wait until the API serves each. */
static int install_crds(struct lab *l)
{
	struct arena *a = arena_new();
	const char **names = arena_new_array(a, const char *, KIND_COUNT);
	size_t n = 0;
	int r = 0;
	for (size_t i = 0; i < KIND_COUNT && r == 0; i++) {
		struct jv *crd = model_crd(a, model_kind((enum br_kind_id)i));
		if (!crd)
			continue;
		names[n++] = jv_as_string(jv_get(jv_get(crd, "metadata"), "name"));
		r = post_json(l, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd,
			      arena_printf(a, "creating CRD %s", names[n - 1]), false);
	}
	uint64_t deadline = now_ms() + 30000;
	for (size_t i = 0; i < n && r == 0;) {
		struct jv *crd = NULL;
		const char *path = arena_printf(
			a, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/%s", names[i]);
		r = admin_request(l, "GET", path, NULL, NULL, names[i], 0, &crd);
		bool established = false;
		const struct jv *conds = jv_get(jv_get(crd, "status"), "conditions");
		for (size_t j = 0; conds && conds->type == JV_ARRAY && j < conds->arr.n; j++) {
			const struct jv *c = conds->arr.items[j];
			established |=
				streq(jv_as_string(jv_get(c, "type")) ?: "", "Established") &&
				streq(jv_as_string(jv_get(c, "status")) ?: "", "True");
		}
		if (established) {
			i++;
		} else if (r == 0 && now_ms() > deadline) {
			ctl_error("CRD %s not established within 30 s", names[i]);
			r = -ETIMEDOUT;
		} else if (r == 0) {
			usleep(100000);
		}
	}
	arena_free(a);
	return r;
}

/*
 * deploy/rbac as `kubectl apply -k deploy/` installs it: the ClusterRoles, the
 * components' ServiceAccounts and their bindings. The lab's operator, user
 * "brindlectl" with a client certificate, is bound to brindle-ctl-admin.
 */
static int install_rbac(struct lab *l)
{
	static const char *const files[] = { "brindle-node.yaml", "brindle-cni.yaml",
					     "brindle-controllers.yaml", "brindlectl.yaml",
					     "service-accounts.yaml" };
	const char *dir =
		lab_file(l->a, "deploy/rbac",
			 arena_printf(l->a, "%s/brindle/rbac", BRINDLE_INSTALL_DATADIR), R_OK);
	int r = 0;
	for (size_t i = 0; i < ARRAY_SIZE(files) && r == 0; i++) {
		const char *path = arena_printf(l->a, "%s/%s", dir, files[i]);
		struct strbuf text = STRBUF_INIT, err = STRBUF_INIT;
		sb_init(&text);
		sb_init(&err);
		struct jv **docs = NULL;
		size_t nd = 0;
		if (sb_read_file(&text, path) < 0 ||
		    yaml_parse_all(l->a, text.buf, text.len, &docs, &nd, &err) < 0) {
			ctl_error("%s: %s", path, err.len ? sb_str(&err) : "cannot be read");
			r = -EIO;
		}
		for (size_t j = 0; j < nd && r == 0; j++) {
			const char *kind = docs[j] ? jv_as_string(jv_get(docs[j], "kind")) : NULL;
			const char *ns =
				jv_as_string(jv_get(jv_get(docs[j], "metadata"), "namespace"));
			const char *to = NULL;
			if (kind && streq(kind, "ClusterRole"))
				to = "/apis/rbac.authorization.k8s.io/v1/clusterroles";
			else if (kind && streq(kind, "ClusterRoleBinding"))
				to = "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings";
			else if (kind && ns && streq(kind, "ServiceAccount"))
				to = arena_printf(l->a, "/api/v1/namespaces/%s/serviceaccounts",
						  ns);
			if (!to) {
				ctl_error("%s: document %zu: ClusterRoles, ClusterRoleBindings and "
					  "ServiceAccounts with a namespace are expected",
					  path, j + 1);
				r = -EINVAL;
			} else {
				r = post_json(l, to, docs[j], path, false);
			}
		}
		sb_free(&text);
		sb_free(&err);
	}
	struct strbuf out = STRBUF_INIT;
	sb_init(&out);
	char *args[] = { "user", arena_printf(l->a, "%s/kube", l->dir), "brindlectl", NULL };
	if (r == 0 && testenv(l, &out, args) != 0) {
		ctl_error("a client certificate for brindlectl: %s", sb_str(&out));
		r = -EIO;
	}
	sb_reset(&out);
	sb_adds(&out, "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":"
		      "\"ClusterRoleBinding\",\"metadata\":{\"name\":\"brindlectl\"},\"roleRef\":{"
		      "\"apiGroup\":\"rbac.authorization.k8s.io\",\"kind\":\"ClusterRole\","
		      "\"name\":\"brindle-ctl-admin\"},\"subjects\":[{\"apiGroup\":"
		      "\"rbac.authorization.k8s.io\",\"kind\":\"User\",\"name\":\"brindlectl\"}]}");
	if (r == 0)
		r = admin_request(l, "POST",
				  "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", NULL,
				  &out, "binding the lab's user brindlectl", 0, NULL);
	sb_free(&out);
	return r;
}

int lab_kube_namespace(struct lab *l, const char *name, const struct br_labels *labels, bool create)
{
	struct strbuf body = STRBUF_INIT, path = STRBUF_INIT;
	sb_init(&body);
	sb_init(&path);
	sb_adds(&body, "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":");
	json_write_string(&body, name);
	sb_adds(&body, ",\"labels\":");
	lab_labels_json(&body, labels);
	sb_adds(&body, "}}");
	const char *what = arena_printf(l->a, "namespace %s", name);
	int r;
	if (create) {
		r = admin_request(l, "POST", "/api/v1/namespaces", NULL, &body, what, -EEXIST,
				  NULL);
		if (r != -EEXIST)
			goto out;
	}
	/* an existing namespace ("default"): its labels replaced by these */
	struct jv *cur = NULL;
	kube_path(&path, "v1", NULL, "namespaces", name);
	r = admin_request(l, "GET", sb_str(&path), NULL, NULL, what, 0, &cur);
	if (r < 0)
		goto out;
	sb_reset(&body);
	sb_adds(&body, "{\"metadata\":{\"labels\":{");
	const struct jv *old = jv_get(jv_get(cur, "metadata"), "labels");
	size_t k = 0;
	for (size_t i = 0; old && old->type == JV_OBJECT && i < old->obj.n; i++)
		if (!labels_get(labels, old->obj.members[i].key)) {
			sb_adds(&body, k++ ? "," : "");
			json_write_string(&body, old->obj.members[i].key);
			sb_adds(&body, ":null");
		}
	for (size_t i = 0; i < labels->n; i++) {
		sb_adds(&body, k++ ? "," : "");
		json_write_string(&body, labels->v[i].key);
		sb_adds(&body, ":");
		json_write_string(&body, labels->v[i].value);
	}
	sb_adds(&body, "}}}");
	r = merge_patch(l, sb_str(&path), &body, what);
out:
	sb_free(&body);
	sb_free(&path);
	return r;
}

int lab_kube_up(struct lab *l)
{
	const struct lab_topology *t = l->topo;
	/* on the first subnet's gateway, of the family the nodes have (lab_api_ipv6) */
	char gw[IP_STRLEN];
	ip_str(lab_api_ipv6(t) ? &t->subnets[0].gateway6 : &t->subnets[0].gateway, gw);
	struct strbuf out = STRBUF_INIT;
	sb_init(&out);
	char *check[] = { "check", NULL };
	char *up[] = { "up",	  arena_printf(l->a, "%s/kube", l->dir),
		       "--netns", (char *)lab_ns_fabric(l->a, t->name),
		       "--addr",  gw,
		       NULL };
	int r = 0;
	if (testenv(l, &out, check) != 0 || (sb_reset(&out), testenv(l, &out, up)) != 0) {
		ctl_error("the lab's Kubernetes control plane did not start: %s", sb_str(&out));
		r = -EIO;
	}
	sb_free(&out);
	if (r == 0 && (r = lab_kube_enter(l)) == 0 && (r = install_crds(l)) == 0)
		r = install_rbac(l);
	/* the nodes as the kubelet registers them, with the labels the topology gives */
	for (size_t i = 0; i < t->n_nodes && r == 0; i++) {
		struct strbuf body = STRBUF_INIT;
		sb_init(&body);
		sb_adds(&body, "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":");
		json_write_string(&body, t->nodes[i].name);
		if (t->nodes[i].rr_cluster_id)
			sb_adds(&body, ",\"labels\":{\"route-reflector\":\"true\"}");
		sb_adds(&body, "}}");
		r = admin_request(l, "POST", "/api/v1/nodes", NULL, &body,
				  arena_printf(l->a, "node %s", t->nodes[i].name), 0, NULL);
		sb_free(&body);
	}
	for (size_t i = 0; i < t->n_namespaces && r == 0; i++)
		r = lab_kube_namespace(l, t->namespaces[i].name, &t->namespaces[i].labels, true);
	return r;
}

/*
 * The pod as an API object, scheduled on its node: labels, named container
 * ports, Calico's ipAddrs annotation for a fixed address. The namespace's
 * "default" ServiceAccount, which admission requires, comes from the
 * controller manager a moment after the namespace: a refusal for its lack is
 * retried (bounded).
 */
int lab_kube_pod_create(struct lab *l, const struct lab_pod *p)
{
	const struct lab_topology *t = l->topo;
	char ip[IP_STRLEN];
	struct strbuf body = STRBUF_INIT, path = STRBUF_INIT;
	sb_init(&body);
	sb_init(&path);
	sb_adds(&body, "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":");
	json_write_string(&body, p->name);
	sb_adds(&body, ",\"labels\":");
	lab_labels_json(&body, &p->labels);
	if (p->has_ip)
		sb_addf(&body,
			",\"annotations\":{\"cni.projectcalico.org/ipAddrs\":\"[\\\"%s\\\"]\"}",
			ip_str(&p->ip, ip));
	sb_adds(&body, "},\"spec\":{\"nodeName\":");
	json_write_string(&body, t->nodes[p->node].name);
	if (p->host_network)
		sb_adds(&body, ",\"hostNetwork\":true");
	sb_adds(&body,
		",\"containers\":[{\"name\":\"probe\",\"image\":\"brindle-probe\",\"ports\":[");
	for (size_t i = 0, k = 0; i < p->n_ports; i++) {
		if (!p->ports[i].name)
			continue;
		sb_addf(&body, "%s{\"name\":", k++ ? "," : "");
		json_write_string(&body, p->ports[i].name);
		sb_addf(&body, ",\"protocol\":\"%s\",\"containerPort\":%u}",
			lab_proto_name(p->ports[i].proto), p->ports[i].port);
	}
	sb_adds(&body, "]}]}}");
	kube_path(&path, "v1", p->namespace, "pods", NULL);
	const char *what = arena_printf(l->a, "pod %s/%s", p->namespace, p->name);
	uint64_t deadline = now_ms() + 30000;
	struct kube_client *kc = admin_client(l);
	int r = -EIO;
	while (kc) {
		r = kube_request(kc, "POST", sb_str(&path), NULL, &body, NULL);
		if (r == -EACCES && strstr(kube_last_error(kc), "service account") &&
		    now_ms() < deadline) {
			usleep(100000);
			continue;
		}
		if (r < 0)
			ctl_error("%s: %s", what, kube_last_error(kc));
		break;
	}
	sb_free(&body);
	sb_free(&path);
	return r;
}

/* What the kubelet reports once the pod's sandbox is up: Running, with its address. */
int lab_kube_pod_running(struct lab *l, const struct lab_pod *p, const char *ip)
{
	char host[IP_STRLEN];
	ip_str(&l->topo->nodes[p->node].ip, host);
	struct strbuf body = STRBUF_INIT, path = STRBUF_INIT;
	sb_init(&body);
	sb_init(&path);
	/* a dual-stack pod's "IPV4,IPV6": podIP the first, podIPs both (as a kubelet reports) */
	int first = (int)strcspn(ip, ",");
	sb_addf(&body,
		"{\"status\":{\"phase\":\"Running\",\"hostIP\":\"%s\",\"podIP\":\"%.*s\","
		"\"podIPs\":[{\"ip\":\"%.*s\"}",
		host, first, ip, first, ip);
	if (ip[first])
		sb_addf(&body, ",{\"ip\":\"%s\"}", ip + first + 1);
	sb_adds(&body, "],\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}");
	kube_path(&path, "v1", p->namespace, "pods", p->name);
	sb_adds(&path, "/status");
	int r = merge_patch(l, sb_str(&path), &body,
			    arena_printf(l->a, "pod %s/%s status", p->namespace, p->name));
	sb_free(&body);
	sb_free(&path);
	return r;
}

/* Gone at once: no kubelet confirms a graceful deletion. */
int lab_kube_pod_delete(struct lab *l, const char *ns, const char *pod)
{
	struct strbuf path = STRBUF_INIT;
	sb_init(&path);
	kube_path(&path, "v1", ns, "pods", pod);
	sb_adds(&path, "?gracePeriodSeconds=0");
	int r = admin_request(l, "DELETE", sb_str(&path), NULL, NULL,
			      arena_printf(l->a, "deleting pod %s/%s", ns, pod), -ENOENT, NULL);
	sb_free(&path);
	return r == -ENOENT ? 0 : r;
}

/* The pod's own labels set ("k=v") or removed ("k-") with one merge patch. */
int lab_kube_pod_label(struct lab *l, const char *ns, const char *pod, char **args, int n)
{
	struct strbuf body = STRBUF_INIT, path = STRBUF_INIT;
	sb_init(&body);
	sb_init(&path);
	sb_adds(&body, "{\"metadata\":{\"labels\":{");
	int r = 0;
	for (int i = 0; i < n && r == 0; i++) {
		const char *s = args[i], *eq = strchr(s, '=');
		size_t len = strlen(s);
		sb_adds(&body, i ? "," : "");
		if (!eq && len > 1 && s[len - 1] == '-') {
			json_write_string(&body, arena_strndup(l->a, s, len - 1));
			sb_adds(&body, ":null");
		} else if (eq && eq != s) {
			json_write_string(&body, arena_strndup(l->a, s, (size_t)(eq - s)));
			sb_adds(&body, ":");
			json_write_string(&body, eq + 1);
		} else {
			ctl_error("lab pod label: \"%s\" is not k=v (set) or k- (remove)", s);
			r = -EINVAL;
		}
	}
	sb_adds(&body, "}}}");
	kube_path(&path, "v1", ns, "pods", pod);
	if (r == 0)
		r = merge_patch(l, sb_str(&path), &body, arena_printf(l->a, "pod %s/%s", ns, pod));
	sb_free(&body);
	sb_free(&path);
	return r;
}

/*
 * brindlectl's apply and delete on a lab on Kubernetes (ctl.h's
 * cluster_write): a Namespace, Service, EndpointSlice or ServiceAccount is the
 * cluster's own object, which brindlectl refuses to write there; the lab, as
 * the cluster's administrator, creates it or replaces it at the revision it
 * reads (as kubectl apply), or deletes it. Everything else is the
 * datastore's.
 */
int lab_kube_cluster_write(struct ctl *c, const struct br_kind *k, const char *ns, const char *name,
			   struct br_object *o, const char **what)
{
	struct lab *l = c->cluster_arg;
	if (!streq(k->group, "") && !streq(k->group, "discovery.k8s.io"))
		return 1;
	struct strbuf path = STRBUF_INIT, body = STRBUF_INIT;
	sb_init(&path);
	sb_init(&body);
	const char *ref =
		arena_printf(l->a, "%s %s%s%s", k->kind, ns ? ns : "", ns ? "/" : "", name);
	int r;
	if (!o) {
		kube_path(&path, k->api_version, ns, k->plural, name);
		r = admin_request(l, "DELETE", sb_str(&path), NULL, NULL, ref, -ENOENT, NULL);
		*what = "deleted";
		goto out;
	}
	struct arena *a = arena_new();
	json_write(&body, kdd_native_encode(a, o, false), false);
	kube_path(&path, k->api_version, ns, k->plural, NULL);
	r = admin_request(l, "POST", sb_str(&path), NULL, &body, ref, -EEXIST, NULL);
	*what = "created";
	if (r == -EEXIST) {
		/* a replace at the revision the server has now */
		struct jv *cur = NULL;
		sb_adds(&path, "/");
		sb_adds(&path, name);
		r = admin_request(l, "GET", sb_str(&path), NULL, NULL, ref, 0, &cur);
		const char *rv = jv_as_string(jv_get(jv_get(cur, "metadata"), "resourceVersion"));
		if (r == 0 && rv) {
			o->meta.resource_version = arena_strdup(o->arena, rv);
			sb_reset(&body);
			json_write(&body, kdd_native_encode(a, o, true), false);
			r = admin_request(l, "PUT", sb_str(&path), NULL, &body, ref, 0, NULL);
			*what = "configured";
		}
	}
	arena_free(a);
out:
	sb_free(&path);
	sb_free(&body);
	return r;
}
