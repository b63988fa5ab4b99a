/*
 * The lab as the kubelet of a lab on Kubernetes (docs/lab.md): each node runs
 * the pod of the DaemonSet in deploy/brindle-node.yaml, and the lab runs the
 * Deployment brindle-controllers, as a kubelet would run them from the
 * manifests a user applies, with no image and no container runtime:
 *
 * - the containers' commands and arguments, the init containers first, each
 *   to completion, then the others; a program of Brindle's named in a
 *   command is the one the lab runs (its build or install), others (BIRD, sh)
 *   are the machine's;
 * - their environment exactly: the pod's env and envFrom (the ConfigMap of
 *   the same file, with the topology's brindleConfig on top; fieldRef
 *   spec.nodeName), the in-cluster API address a kubelet gives
 *   (KUBERNETES_SERVICE_HOST/PORT: the API server itself, there is no
 *   kube-proxy), and the sanitizers' options of the lab's own environment;
 * - the pod's ServiceAccount: a token from the TokenRequest API mounted
 *   where a kubelet mounts it, with the cluster's CA and the namespace;
 * - the volumes at their mount paths (lab_view.c): a hostPath that may be
 *   created (DirectoryOrCreate, FileOrCreate, or of no type and missing on
 *   the machine) is the node's own, under <dir>/<node>/host; another
 *   hostPath is the machine's (/lib/modules); an
 *   emptyDir is the pod's, under <dir>/<node>/pods/<pod>/volumes. Beyond its
 *   volumes a container has its own /run and /var, as an image gives.
 *
 * A hostNetwork pod runs in its node's network namespace; the controllers'
 * pod, which is not, in the fabric's, next to the API server. The kubelet's
 * probes are not played; a container that exits is started again a second
 * later (restartPolicy Always), an init container is not.
 */
#include "lab.h"

#include <brindle/core/cni.h>
#include <brindle/core/json.h>
#include <brindle/core/jv.h>
#include <brindle/core/util.h>
#include <brindle/core/yaml.h>
#include <brindle/paths.h>
#include <brindle/sys/install.h>
#include <brindle/sys/strbuf_file.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SA_MOUNT "/var/run/secrets/kubernetes.io/serviceaccount"

/* The manifests, read once per command. */
struct lab_manifest {
	const char *path;
	const struct jv *config; /* the ConfigMap brindle-config's data */
	const struct jv *daemonset, *deployment;
	const char *api_host, *api_port;
};

static const struct jv *find_doc(struct jv **docs, size_t n, const char *kind, const char *name)
{
	for (size_t i = 0; i < n; i++) {
		const struct jv *d = docs[i];
		if (d && streq(jv_as_string(jv_get(d, "kind")) ?: "", kind) &&
		    streq(jv_as_string(jv_get(jv_get(d, "metadata"), "name")) ?: "", name))
			return d;
	}
	return NULL;
}

/* One KEY=value of the control plane's state file (scripts/kube-testenv). */
static const char *state_value(struct lab *l, const char *text, const char *key)
{
	size_t kl = strlen(key);
	for (const char *s = text; s && *s; s = strchr(s, '\n') ? strchr(s, '\n') + 1 : NULL)
		if (strncmp(s, key, kl) == 0 && s[kl] == '=')
			return arena_strndup(l->a, s + kl + 1, strcspn(s + kl + 1, "\n"));
	return NULL;
}

static struct lab_manifest *manifest(struct lab *l)
{
	if (l->manifest)
		return l->manifest;
	struct lab_manifest *m = arena_alloc(l->a, sizeof(*m));
	m->path = lab_file(
		l->a, "deploy/brindle-node.yaml",
		arena_printf(l->a, "%s/brindle/brindle-node.yaml", BRINDLE_INSTALL_DATADIR), R_OK);
	struct strbuf text = STRBUF_INIT, err = STRBUF_INIT, state = STRBUF_INIT;
	sb_init(&text);
	sb_init(&err);
	sb_init(&state);
	struct jv **docs = NULL;
	size_t n = 0;
	bool ok = false;
	const char *state_file = arena_printf(l->a, "%s/kube/state", l->dir);
	if (sb_read_file(&text, m->path) < 0 ||
	    yaml_parse_all(l->a, text.buf, text.len, &docs, &n, &err) < 0) {
		ctl_error("%s: %s", m->path, err.len ? sb_str(&err) : "cannot be read");
	} else if (!(m->daemonset = find_doc(docs, n, "DaemonSet", "brindle-node")) ||
		   !(m->deployment = find_doc(docs, n, "Deployment", "brindle-controllers"))) {
		ctl_error("%s: no DaemonSet brindle-node or no Deployment brindle-controllers",
			  m->path);
	} else if (sb_read_file(&state, state_file) < 0 ||
		   !(m->api_host = state_value(l, sb_str(&state), "API_ADDR")) ||
		   !(m->api_port = state_value(l, sb_str(&state), "API_PORT"))) {
		ctl_error("%s: no API_ADDR and API_PORT of the control plane", state_file);
	} else {
		const struct jv *cm = find_doc(docs, n, "ConfigMap", "brindle-config");
		m->config = cm ? jv_get(cm, "data") : NULL;
		ok = true;
	}
	sb_free(&text);
	sb_free(&err);
	sb_free(&state);
	if (ok)
		l->manifest = m;
	return ok ? m : NULL;
}

/* The ConfigMap's value of @key: the topology's brindleConfig, else the manifest's. */
static const char *config_value(struct lab *l, const struct lab_manifest *m, const char *key)
{
	const char *v = labels_get(&l->topo->brindle_config, key);
	return v ? v : jv_as_string(jv_get(m->config, key));
}

struct env {
	char **v;
	size_t n;
};

/* NAME=value, replacing an earlier NAME (a later env entry wins, as in Kubernetes). */
static void env_set(struct lab *l, struct env *e, const char *name, const char *value)
{
	size_t nl = strlen(name);
	char *kv = arena_printf(l->a, "%s=%s", name, value);
	for (size_t i = 0; i < e->n; i++)
		if (strncmp(e->v[i], name, nl) == 0 && e->v[i][nl] == '=') {
			e->v[i] = kv;
			return;
		}
	e->v[e->n++] = kv;
}

/*
 * A dual-stack lab's cni_network_config, as a user edits Calico's for dual stack: the
 * built-in configuration with assign_ipv6. (install-cni adds felix_ipv6_support, from
 * FELIX_IPV6SUPPORT.)
 */
static const char dual_stack_cni_config[] =
	CNI_DEFAULT_CONFLIST(", \"assign_ipv4\": \"true\", \"assign_ipv6\": \"true\"");
/* An IPv6-only lab's: IPv6 alone. */
static const char ipv6_only_cni_config[] =
	CNI_DEFAULT_CONFLIST(", \"assign_ipv4\": \"false\", \"assign_ipv6\": \"true\"");

/* The container's environment as a kubelet gives it; NULL on what the lab cannot give. */
static char **container_env(struct lab *l, const struct lab_manifest *m, const struct jv *ctr,
			    const char *node, const char *what)
{
	const struct jv *from = jv_get(ctr, "envFrom"), *env = jv_get(ctr, "env");
	size_t cap = 16 + (from && from->type == JV_ARRAY && m->config ? m->config->obj.n : 0) +
		     l->topo->brindle_config.n + (env && env->type == JV_ARRAY ? env->arr.n : 0);
	struct env e = { arena_new_array(l->a, char *, cap + 1), 0 };
	env_set(l, &e, "PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
	env_set(l, &e, "HOSTNAME", node);
	env_set(l, &e, "KUBERNETES_SERVICE_HOST", m->api_host);
	env_set(l, &e, "KUBERNETES_SERVICE_PORT", m->api_port);
	static const char *const passed[] = { "ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS" };
	for (size_t i = 0; i < ARRAY_SIZE(passed); i++)
		if (getenv(passed[i]))
			env_set(l, &e, passed[i], getenv(passed[i]));
	for (size_t i = 0; from && from->type == JV_ARRAY && i < from->arr.n; i++) {
		const char *cm =
			jv_as_string(jv_get(jv_get(from->arr.items[i], "configMapRef"), "name"));
		if (!cm || !streq(cm, "brindle-config")) {
			ctl_error("%s: envFrom[%zu]: only the ConfigMap brindle-config is known to "
				  "the lab",
				  what, i);
			return NULL;
		}
		for (size_t j = 0;
		     m->config && m->config->type == JV_OBJECT && j < m->config->obj.n; j++)
			env_set(l, &e, m->config->obj.members[j].key,
				config_value(l, m, m->config->obj.members[j].key));
		for (size_t j = 0; j < l->topo->brindle_config.n; j++)
			env_set(l, &e, l->topo->brindle_config.v[j].key,
				l->topo->brindle_config.v[j].value);
		if (lab_rule_backend(l->topo)) /* the topology's ruleBackend, for felix */
			env_set(l, &e, "FELIX_IPTABLESBACKEND", lab_rule_backend(l->topo));
		if (l->topo->ipv6) { /* dual stack, as Calico's manifests say it */
			env_set(l, &e, "FELIX_IPV6SUPPORT", "true");
			env_set(l, &e, "CNI_NETWORK_CONFIG",
				l->topo->ipv4 ? dual_stack_cni_config : ipv6_only_cni_config);
		}
		if (lab_api_ipv6(l->topo)) /* IPv6-only nodes: no IPv4 address to detect */
			env_set(l, &e, "IP", "none");
	}
	for (size_t i = 0; env && env->type == JV_ARRAY && i < env->arr.n; i++) {
		const struct jv *x = env->arr.items[i];
		const char *name = jv_as_string(jv_get(x, "name"));
		const char *value = jv_as_string(jv_get(x, "value"));
		const struct jv *vf = jv_get(x, "valueFrom");
		const char *field = jv_as_string(jv_get(jv_get(vf, "fieldRef"), "fieldPath"));
		const struct jv *key = jv_get(vf, "configMapKeyRef");
		if (vf && field && streq(field, "spec.nodeName"))
			value = node;
		else if (vf && key &&
			 streq(jv_as_string(jv_get(key, "name")) ?: "", "brindle-config"))
			value = config_value(l, m, jv_as_string(jv_get(key, "key")) ?: "");
		else if (vf)
			value = NULL;
		if (!name || !value) {
			ctl_error("%s: env[%zu]%s%s: the lab gives a value, spec.nodeName or a key "
				  "of "
				  "brindle-config only",
				  what, i, name ? " " : "", name ? name : "");
			return NULL;
		}
		env_set(l, &e, name, value);
	}
	e.v[e.n] = NULL;
	return e.v;
}

/* The pod's ServiceAccount as a kubelet mounts it: token, ca.crt, namespace. */
static const char *service_account(struct lab *l, const char *pod_dir, const char *ns,
				   const char *sa)
{
	const char *dir = arena_printf(l->a, "%s/serviceaccount", pod_dir);
	const char *token = NULL;
	struct strbuf ca = STRBUF_INIT;
	sb_init(&ca);
	const char *ca_file = arena_printf(l->a, "%s/kube/pki/ca.crt", l->dir);
	int r = lab_kube_token(l, ns, sa, &token);
	if (r == 0 && (r = sb_read_file(&ca, ca_file)) < 0)
		ctl_error("%s: %s", ca_file, strerror(-r));
	const char *files[][2] = { { "token", token },
				   { "ca.crt", sb_str(&ca) },
				   { "namespace", ns } };
	for (size_t i = 0; i < ARRAY_SIZE(files) && r == 0; i++) {
		const char *path = arena_printf(l->a, "%s/%s", dir, files[i][0]);
		if ((r = lab_write_file(path, files[i][1], i == 0 ? 0600 : 0644)) < 0)
			ctl_error("%s: %s", path, strerror(-r));
	}
	sb_free(&ca);
	return r == 0 ? dir : NULL;
}

static bool creates(const struct jv *host_path)
{
	const char *type = jv_as_string(jv_get(host_path, "type")) ?: "";
	return streq(type, "DirectoryOrCreate") || streq(type, "FileOrCreate");
}

/* Where a hostPath volume is: the node's own (made when missing) or the machine's. */
static const char *host_path(struct lab *l, const char *node_dir, const struct jv *hp)
{
	const char *path = jv_as_string(jv_get(hp, "path"));
	if (!path || path[0] != '/')
		return NULL;
	/* of no type: checked by nobody, made by the runtime when missing (a node's own here) */
	const char *type = jv_as_string(jv_get(hp, "type"));
	if (!creates(hp) && (type && *type ? true : access(path, F_OK) == 0))
		return path;
	const char *own = arena_printf(l->a, "%s/host%s", node_dir, path);
	bool file = type && streq(type, "FileOrCreate");
	if (lab_mkdirs(file ? arena_strndup(l->a, own, (size_t)(strrchr(own, '/') - own)) : own) <
	    0)
		return NULL;
	if (file && access(own, F_OK) < 0 && lab_write_file(own, "", 0644) < 0)
		return NULL;
	return own;
}

/* The view of @what built on the lab's root directory; NULL with the reason said. */
static const struct lab_view_plan *plan_view(struct lab *l, const struct lab_view_mount *vm,
					     size_t n, const char *what)
{
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	const struct lab_view *v =
		&(struct lab_view){ arena_printf(l->a, "%s/root", l->dir), vm, n };
	const struct lab_view_plan *plan = lab_view_plan(l->a, v, &err);
	if (!plan)
		ctl_error("%s: its files: %s", what, sb_str(&err));
	sb_free(&err);
	return plan;
}

/* A container's view: its own /run and /var, its volumes, the ServiceAccount. */
static const struct lab_view_plan *container_view(struct lab *l, const struct jv *spec,
						  const struct jv *ctr, const char *node_dir,
						  const char *pod_dir, const char *sa_dir,
						  const char *what)
{
	const struct jv *mounts = jv_get(ctr, "volumeMounts"), *vols = jv_get(spec, "volumes");
	size_t nm = mounts && mounts->type == JV_ARRAY ? mounts->arr.n : 0, k = 0;
	struct lab_view_mount *vm = arena_new_array(l->a, struct lab_view_mount, nm + 4);
	vm[k++] = (struct lab_view_mount){ .at = "/run" };
	vm[k++] = (struct lab_view_mount){ .at = "/var" };
	vm[k++] = (struct lab_view_mount){ .at = "/var/run", .link = "/run" };
	for (size_t i = 0; i < nm; i++) {
		const struct jv *mt = mounts->arr.items[i];
		const char *name = jv_as_string(jv_get(mt, "name"));
		const char *at = jv_as_string(jv_get(mt, "mountPath"));
		const struct jv *vol = NULL;
		for (size_t j = 0; name && vols && vols->type == JV_ARRAY && j < vols->arr.n; j++)
			if (streq(jv_as_string(jv_get(vols->arr.items[j], "name")) ?: "", name))
				vol = vols->arr.items[j];
		const struct jv *hp = jv_get(vol, "hostPath");
		const char *src = NULL;
		if (hp)
			src = host_path(l, node_dir, hp);
		else if (vol && jv_get(vol, "emptyDir")) {
			src = arena_printf(l->a, "%s/volumes/%s", pod_dir, name);
			if (lab_mkdirs(src) < 0)
				src = NULL;
		}
		bool ro = false;
		jv_as_bool(jv_get(mt, "readOnly"), &ro);
		if (!src || !at || at[0] != '/') {
			ctl_error("%s: volumeMounts[%zu]%s%s: the lab gives hostPath and emptyDir "
				  "volumes at absolute paths only",
				  what, i, name ? " " : "", name ? name : "");
			return NULL;
		}
		vm[k++] = (struct lab_view_mount){ .src = src,
						   .at = at,
						   .read_only = ro,
						   .lab_owned = str_has_prefix(src, l->dir) };
	}
	vm[k++] = (struct lab_view_mount){
		.src = sa_dir, .at = SA_MOUNT, .read_only = true, .lab_owned = true
	};
	return plan_view(l, vm, k, what);
}

/* The command with a program of Brindle's replaced by the lab's. */
static char **container_argv(struct lab *l, const struct lab_bins *b, const struct jv *ctr,
			     const char *what)
{
	const struct jv *cmd = jv_get(ctr, "command"), *args = jv_get(ctr, "args");
	size_t nc = cmd && cmd->type == JV_ARRAY ? cmd->arr.n : 0;
	size_t na = args && args->type == JV_ARRAY ? args->arr.n : 0;
	if (!nc) {
		ctl_error("%s: no command (the lab has no image to take one from)", what);
		return NULL;
	}
	char **argv = arena_new_array(l->a, char *, nc + na + 1);
	for (size_t i = 0; i < nc + na; i++) {
		const char *s = jv_as_string(i < nc ? cmd->arr.items[i] : args->arr.items[i - nc]);
		if (!s) {
			ctl_error("%s: command and args are strings", what);
			return NULL;
		}
		argv[i] = (char *)s;
	}
	static const struct {
		const char *name;
		size_t off;
	} own[] = {
		{ "brindle-felix", offsetof(struct lab_bins, felix) },
		{ "brindle-confd", offsetof(struct lab_bins, confd) },
		{ "brindle-node", offsetof(struct lab_bins, node) },
		{ "brindle-controllers", offsetof(struct lab_bins, controllers) },
	};
	const char *base = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
	for (size_t i = 0; i < ARRAY_SIZE(own); i++)
		if (streq(base, own[i].name))
			argv[0] = *(char **)((char *)b + own[i].off);
	return argv;
}

/* A pod of a manifest's template: init containers to completion, then the others. */
static int run_pod(struct lab *l, const struct lab_bins *b, const struct lab_manifest *m,
		   const struct jv *workload, const char *node, const char *netns,
		   const char *node_dir)
{
	const struct jv *spec = jv_get(jv_get(jv_get(workload, "spec"), "template"), "spec");
	const char *kind = jv_as_string(jv_get(workload, "kind"));
	const char *name = jv_as_string(jv_get(jv_get(workload, "metadata"), "name"));
	const char *ns =
		jv_as_string(jv_get(jv_get(workload, "metadata"), "namespace")) ?: "default";
	const char *sa = jv_as_string(jv_get(spec, "serviceAccountName")) ?: "default";
	const char *pod_dir = arena_printf(l->a, "%s/pods/%s", node_dir, name);
	if (lab_mkdirs(pod_dir) < 0)
		return -EIO;
	const char *sa_dir = service_account(l, pod_dir, ns, sa);
	if (!sa_dir)
		return -EIO;
	for (int init = 1; init >= 0; init--) {
		const struct jv *list = jv_get(spec, init ? "initContainers" : "containers");
		for (size_t i = 0; list && list->type == JV_ARRAY && i < list->arr.n; i++) {
			const struct jv *ctr = list->arr.items[i];
			const char *cname = jv_as_string(jv_get(ctr, "name")) ?: "?";
			const char *what = arena_printf(l->a, "%s %s (%s), container %s", kind,
							name, m->path, cname);
			/* a container that exits is started again (restartPolicy Always); an init
			 * container runs once, to completion */
			struct lab_exec x = { .ns = netns, .restart = !init };
			char **argv = container_argv(l, b, ctr, what);
			if (!argv || !(x.envp = container_env(l, m, ctr, node, what)) ||
			    !(x.view = container_view(l, spec, ctr, node_dir, pod_dir, sa_dir,
						      what)))
				return -EINVAL;
			const char *log = arena_printf(l->a, "%s-%s", node, cname);
			if (!init) {
				if (lab_spawn_exec(l, &x, log, argv) < 0) {
					ctl_error("%s: cannot be started", what);
					return -EIO;
				}
				continue;
			}
			struct strbuf out = STRBUF_INIT;
			sb_init(&out);
			int r = lab_run_exec(&x, argv, NULL, &out);
			const char *path = arena_printf(l->a, "%s/%s.log", l->dir, log);
			int w = lab_write_file(path, sb_str(&out), 0644);
			if (w < 0)
				ctl_error("%s: %s", path, strerror(-w));
			if (r != 0)
				ctl_error("node %s: init container %s failed (exit %d): %s", node,
					  cname, r, sb_str(&out));
			sb_free(&out);
			if (r != 0)
				return -EIO;
		}
	}
	return 0;
}

int lab_kubelet_node(struct lab *l, const struct lab_bins *b, const struct lab_node *n)
{
	const struct lab_manifest *m = manifest(l);
	if (!m)
		return -EINVAL;
	const char *node_dir = arena_printf(l->a, "%s/%s", l->dir, n->name);
	int r = run_pod(l, b, m, m->daemonset, n->name, lab_ns_node(l->a, l->topo->name, n->name),
			node_dir);
	/* the lab's names of a node's files, the same in both datastore modes */
	if (r == 0 && (symlink("pods/brindle-node/volumes/bird/bird.ctl",
			       arena_printf(l->a, "%s/bird.ctl", node_dir)) < 0 ||
		       symlink("host/var/log/brindle/policy-events.log",
			       arena_printf(l->a, "%s/policy-events.log", node_dir)) < 0))
		r = lab_fail_errno(node_dir);
	return r;
}

int lab_kubelet_controllers(struct lab *l, const struct lab_bins *b)
{
	const struct lab_manifest *m = manifest(l);
	if (!m)
		return -EINVAL;
	const char *dir = arena_printf(l->a, "%s/controllers", l->dir);
	if (lab_mkdirs(dir) < 0)
		return -EIO;
	return run_pod(l, b, m, m->deployment, "controllers", lab_ns_fabric(l->a, l->topo->name),
		       dir);
}

/*
 * A runtime's view of a node's host, for its CNI plugin: the machine's files
 * with the node's own /run (the pods' network namespaces still the
 * machine's) and the node's own of every hostPath the DaemonSet creates (the
 * plugin, its configuration and kubeconfig, the node's name and MTU).
 */
const struct lab_view_plan *lab_kubelet_host_view(struct lab *l, const char *node)
{
	const struct lab_manifest *m = manifest(l);
	if (!m)
		return NULL;
	const char *node_dir = arena_printf(l->a, "%s/%s", l->dir, node);
	const struct jv *vols =
		jv_get(jv_get(jv_get(jv_get(m->daemonset, "spec"), "template"), "spec"), "volumes");
	size_t nv = vols && vols->type == JV_ARRAY ? vols->arr.n : 0, k = 0;
	struct lab_view_mount *vm = arena_new_array(l->a, struct lab_view_mount, nv + 2);
	const char *run = arena_printf(l->a, "%s/host/run", node_dir);
	if (lab_mkdirs(run) < 0)
		return NULL;
	vm[k++] = (struct lab_view_mount){ .src = run, .at = "/run", .lab_owned = true };
	vm[k++] = (struct lab_view_mount){ .src = "/run/netns", .at = "/run/netns" };
	for (size_t i = 0; i < nv; i++) {
		const struct jv *hp = jv_get(vols->arr.items[i], "hostPath");
		const char *path = jv_as_string(jv_get(hp, "path"));
		if (!hp || !creates(hp) || !path || str_has_prefix(path, "/run/"))
			continue;
		const char *src = host_path(l, node_dir, hp);
		if (!src)
			return NULL;
		vm[k++] = (struct lab_view_mount){ .src = src, .at = path, .lab_owned = true };
	}
	return plan_view(l, vm, k, arena_printf(l->a, "node %s, the host", node));
}

/*
 * The network configuration a runtime hands the node's first plugin: the
 * first file of the node's /etc/cni/net.d in name order (as containerd and
 * CRI-O choose), its first plugin with the list's cniVersion and name. The
 * lab runs that plugin only (the others, portmap, are not the lab's).
 */
void lab_kubelet_cni_conf(struct lab *l, const char *node, struct strbuf *conf)
{
	const char *dir = arena_printf(l->a, "%s/%s/host/etc/cni/net.d", l->dir, node);
	struct dirent **names = NULL;
	int n = scandir(dir, &names, NULL, alphasort);
	const char *file = NULL;
	for (int i = 0; i < n; i++) {
		const char *e = names[i]->d_name;
		if (!file && (str_has_suffix(e, ".conflist") || str_has_suffix(e, ".conf") ||
			      str_has_suffix(e, ".json")))
			file = arena_printf(l->a, "%s/%s", dir, e);
		free(names[i]);
	}
	free(names);
	struct strbuf text = STRBUF_INIT, err = STRBUF_INIT;
	sb_init(&text);
	sb_init(&err);
	struct jv *doc = NULL;
	if (!file) {
		ctl_error("node %s: no CNI configuration in %s (did install-cni run?)", node, dir);
	} else if (sb_read_file(&text, file) < 0 ||
		   json_parse(l->a, text.buf, text.len, &doc, &err) < 0) {
		ctl_error("%s: %s", file, err.len ? sb_str(&err) : "cannot be read");
	} else {
		const struct jv *plugins = jv_get(doc, "plugins");
		const struct jv *first = plugins && plugins->type == JV_ARRAY && plugins->arr.n
						 ? plugins->arr.items[0]
						 : doc;
		struct jv *out = jv_object(l->a);
		jv_add(l->a, out, "cniVersion", jv_get(doc, "cniVersion") ?: jv_string(l->a, ""));
		jv_add(l->a, out, "name", jv_get(doc, "name") ?: jv_string(l->a, ""));
		for (size_t i = 0; first->type == JV_OBJECT && i < first->obj.n; i++)
			if (!streq(first->obj.members[i].key, "cniVersion") &&
			    !streq(first->obj.members[i].key, "name"))
				jv_add(l->a, out, first->obj.members[i].key,
				       first->obj.members[i].value);
		json_write(conf, out, false);
	}
	sb_free(&text);
	sb_free(&err);
}
