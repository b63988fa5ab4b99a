/*
 * The runtime's side of a CNI call, shared by brindle-cni and brindle-ipam:
 * environment and stdin in, exactly one document on stdout, exit status 0
 * or 1. Logs go to the configuration's log file (and errors also to stderr,
 * which runtimes show), never to stdout.
 */
#include "plugin.h"

#include <brindle/core/kdd_map.h>
#include <brindle/core/kube_codec.h>
#include <brindle/sys/clock.h>
#include <brindle/sys/kube_client.h>
#include <brindle/sys/log.h>
#include <brindle/sys/strbuf_file.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *env(const char *name)
{
	const char *v = getenv(name);
	return v && *v ? v : NULL;
}

static void write_all(int fd, const char *s, size_t n)
{
	while (n) {
		ssize_t w = write(fd, s, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		s += w;
		n -= (size_t)w;
	}
}

static void plugin_unlock(struct plugin *p);

static void plugin_cleanup(struct plugin *p)
{
	plugin_unlock(p);
	if (p->netns_fd >= 0)
		close(p->netns_fd);
	p->netns_fd = -1;
	ds_close(p->ds);
	p->ds = NULL;
	ds_config_free_storage(&p->storage);
	cni_conf_free(p->conf);
	p->conf = NULL;
	arena_free(p->a);
	p->a = NULL;
	if (p->log_fd > 2)
		close(p->log_fd);
}

/* Text from the request may hold anything: stderr gets it on one line, other than ASCII escaped. */
static void print_escaped(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '\n')
			fputs("\\n", f);
		else if (ch < 0x20 || ch >= 0x7f)
			fprintf(f, "\\x%02x", ch);
		else
			fputc(ch, f);
	}
}

void plugin_fail(struct plugin *p, int code, const char *msg, const char *details)
{
	struct strbuf out = STRBUF_INIT;
	sb_init(&out);
	cni_error_write(&out, p->version, code, msg, details);
	write_all(1, out.buf, out.len);
	log_error("%s %s: %s%s%s (code %d)", p->prog,
		  p->cmd == CMD_ADD	? "ADD"
		  : p->cmd == CMD_DEL	? "DEL"
		  : p->cmd == CMD_CHECK ? "CHECK"
					: "VERSION",
		  msg, details && *details ? ": " : "", details ? details : "", code);
	if (p->log_fd > 2) {
		/* Runtimes show stderr to the operator. */
		fprintf(stderr, "%s: ", p->prog);
		print_escaped(stderr, msg);
		if (details && *details) {
			fputs(": ", stderr);
			print_escaped(stderr, details);
		}
		fputc('\n', stderr);
	}
	sb_free(&out);
	plugin_cleanup(p);
	exit(1);
}

void plugin_succeed(struct plugin *p, const char *doc)
{
	if (doc)
		write_all(1, doc, strlen(doc));
	plugin_cleanup(p);
	exit(0);
}

/* mkdir -p of @path's directory. */
static void make_parent(const char *path)
{
	char *d = xstrdup(path);
	for (char *s = d + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		mkdir(d, 0755);
		*s = '/';
	}
	free(d);
}

static void open_log(struct plugin *p)
{
	const struct cni_conf *c = p->conf;
	int level = log_parse_level(c->log_level ? c->log_level : "info");
	const char *path = c->log_file_path ? c->log_file_path : CNI_DEFAULT_LOG_FILE;
	p->log_fd = 2;
	if (*path) {
		make_parent(path);
		int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
		if (fd >= 0)
			p->log_fd = fd;
	}
	log_init(p->prog, level < 0 ? LOG_INFO : (enum log_level)level, LOG_TEXT, p->log_fd);
}

static enum plugin_cmd parse_cmd(struct plugin *p, const char *s)
{
	if (streq(s, "ADD"))
		return CMD_ADD;
	if (streq(s, "DEL"))
		return CMD_DEL;
	if (streq(s, "CHECK"))
		return CMD_CHECK;
	if (streq(s, "VERSION"))
		return CMD_VERSION;
	plugin_fail(p, CNI_ERR_INVALID_ENV, "CNI_COMMAND must be ADD, DEL, CHECK or VERSION",
		    s ? s : "(unset)");
}

/* CNI_NETNS must be a network namespace; it stays open so that it cannot change under us. */
static void open_netns(struct plugin *p)
{
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	int r = dp_netns_open(p->netns, &p->netns_fd, &err);
	if (r < 0) {
		char *details = arena_strdup(p->a, sb_str(&err));
		sb_free(&err);
		if (r == -ENOENT || r == -ENOTDIR)
			plugin_fail(p, CNI_ERR_UNKNOWN_CONTAINER,
				    "the container's network namespace does not exist", p->netns);
		plugin_fail(p, r == -EINVAL ? CNI_ERR_INVALID_ENV : CNI_ERR_IO, "invalid CNI_NETNS",
			    details);
	}
	sb_free(&err);
}

/* The first line of @path ("" or unreadable: NULL), in the plugin's arena. */
static const char *plugin_file_line(struct plugin *p, const char *path);

void plugin_start(struct plugin *p, const char *prog, int argc, char **argv)
{
	memset(p, 0, sizeof(*p));
	p->started_ns = now_ns();
	p->prog = prog;
	p->lock_fd = -1;
	p->netns_fd = -1;
	p->log_fd = 2;
	p->a = arena_new();
	/* Until a log file is known, errors go to stderr only at error level. */
	log_init(prog, LOG_ERROR, LOG_TEXT, 2);
	if (argc > 1 && (streq(argv[1], "-v") || streq(argv[1], "--version"))) {
		printf("%s (Brindle) CNI spec %s\n", prog, CNI_LATEST_VERSION);
		plugin_succeed(p, NULL);
	}
	p->cmd = parse_cmd(p, env("CNI_COMMAND"));

	struct strbuf in = STRBUF_INIT, err = STRBUF_INIT;
	sb_init(&in);
	sb_init(&err);
	int r = sb_read_fd(&in, 0);
	if (r < 0) {
		sb_free(&in);
		sb_free(&err);
		plugin_fail(p, CNI_ERR_IO, "cannot read the network configuration", strerror(-r));
	}
	if (p->cmd == CMD_VERSION) {
		/* The runtime may send {"cniVersion": ...} or nothing. */
		struct cni_conf *c = NULL;
		int code;
		const char *v = CNI_LATEST_VERSION;
		if (in.len && cni_conf_parse(in.buf, in.len, &c, &code, &err) == 0)
			v = c->cni_version;
		sb_reset(&err);
		cni_version_write(&err, v);
		cni_conf_free(c);
		sb_free(&in);
		char *doc = sb_detach(&err);
		write_all(1, doc, strlen(doc));
		free(doc);
		plugin_succeed(p, NULL);
	}
	int code = 0;
	r = cni_conf_parse(in.buf, in.len, &p->conf, &code, &err);
	sb_free(&in);
	if (r < 0) {
		char *why = sb_detach(&err);
		char *details = arena_strdup(p->a, why);
		free(why);
		plugin_fail(p, code, "invalid network configuration", details);
	}
	p->version = p->conf->cni_version;
	open_log(p);

	p->container_id = env("CNI_CONTAINERID");
	p->netns = env("CNI_NETNS");
	p->ifname = env("CNI_IFNAME");
	if (!cni_container_id_valid(p->container_id))
		plugin_fail(p, CNI_ERR_INVALID_ENV,
			    "CNI_CONTAINERID must be set (letters, digits, '-', '_', '.')",
			    p->container_id);
	if (p->ifname && !cni_ifname_valid(p->ifname))
		plugin_fail(
			p, CNI_ERR_INVALID_ENV,
			"CNI_IFNAME is not a valid interface name (1-15 letters, digits, '-', '_' "
			"and '.'; not \".\" or \"..\")",
			p->ifname);
	/* An IPAM plugin never enters the namespace. */
	bool needs_ns = (p->cmd == CMD_ADD || p->cmd == CMD_CHECK) && streq(prog, "brindle-cni");
	if (needs_ns && (!p->netns || !p->ifname))
		plugin_fail(p, CNI_ERR_INVALID_ENV, "CNI_NETNS and CNI_IFNAME must be set", NULL);
	if (needs_ns)
		open_netns(p);
	if (!p->ifname)
		p->ifname = "eth0";
	if (cni_args_parse(p->a, env("CNI_ARGS"), &p->args, &err) < 0) {
		char *why = sb_detach(&err);
		char *details = arena_strdup(p->a, why);
		free(why);
		plugin_fail(p, CNI_ERR_INVALID_ENV, "invalid CNI_ARGS", details);
	}
	sb_free(&err);
	cni_identity(p->a, &p->args, p->container_id, &p->id);

	const char *node = p->conf->nodename ? p->conf->nodename : env("NODENAME");
	if (!node) /* what brindle-node startup found */
		node = plugin_file_line(p, p->conf->nodename_file ? p->conf->nodename_file
								  : "/var/lib/brindle/nodename");
	if (node)
		snprintf(p->node, sizeof(p->node), "%s", node);
	else if (gethostname(p->node, sizeof(p->node) - 1) < 0)
		plugin_fail(p, CNI_ERR_INVALID_CONFIG, "no nodename and no hostname", NULL);
	p->handle = cni_handle_id(p->a, p->conf->name, p->container_id);
	log_debug("%s container %s netns %s ifname %s node %s", env("CNI_COMMAND"), p->container_id,
		  p->netns ? p->netns : "", p->ifname, p->node);
}

static const char *plugin_file_line(struct plugin *p, const char *path)
{
	FILE *f = *path ? fopen(path, "re") : NULL;
	char line[256];
	bool got = f && fgets(line, sizeof(line), f);
	if (f)
		fclose(f);
	if (!got)
		return NULL;
	line[strcspn(line, "\r\n")] = '\0';
	return line[0] ? arena_strdup(p->a, line) : NULL;
}

unsigned plugin_mtu(struct plugin *p)
{
	const struct cni_conf *c = p->conf;
	if (c->mtu)
		return (unsigned)c->mtu;
	const char *path = c->mtu_file ? c->mtu_file : "/var/lib/brindle/mtu";
	const char *text = plugin_file_line(p, path);
	char *end = NULL;
	long v = text ? strtol(text, &end, 10) : 0;
	if (text && (*end || v < 68 || v > 65535)) {
		log_warn("%s: \"%s\" is not an MTU (68-65535): the kernel's default is used", path,
			 text);
		return 0;
	}
	return (unsigned)v;
}

void plugin_open_ds(struct plugin *p)
{
	const struct cni_conf *c = p->conf;
	struct ds_config cfg = { .type = c->datastore_type,
				 .etcd_ca_file = c->etcd_ca_cert_file,
				 .etcd_cert_file = c->etcd_cert_file,
				 .etcd_key_file = c->etcd_key_file,
				 .kubeconfig = c->kubeconfig,
				 .timeout_ms = 5000 };
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	int r = 0;
	if (c->etcd_endpoints)
		r = ds_config_set_endpoints(&cfg, &p->storage, c->etcd_endpoints, &err);
	if (r == 0)
		r = ds_config_from_env(&cfg, &p->storage, &err);
	if (r == 0)
		r = ds_open(&cfg, &p->ds, &err);
	if (r < 0) {
		char *details = arena_strdup(p->a, sb_str(&err));
		sb_free(&err);
		plugin_fail(p, CNI_ERR_INVALID_CONFIG, "cannot use the datastore", details);
	}
	sb_free(&err);
}

int plugin_ipam_code(int r)
{
	switch (r) {
	case -ENOSPC:
	case -EADDRINUSE:
		return CNI_ERR_NO_ADDRESS;
	case -EINVAL:
		return CNI_ERR_INVALID_CONFIG;
	case -ETIMEDOUT:
	case -EAGAIN:
		return CNI_ERR_TRY_AGAIN;
	default:
		return CNI_ERR_DATASTORE;
	}
}

/* The host-wide IPAM lock (flock), around assign and release. */
static void plugin_lock(struct plugin *p)
{
	const char *path = p->conf->ipam_lock_file ? p->conf->ipam_lock_file : CNI_DEFAULT_LOCK;
	if (!*path || p->lock_fd >= 0)
		return;
	make_parent(path);
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		/* The lock only spares the datastore contention; CAS keeps us correct. */
		log_warn("cannot open the IPAM lock %s: %s; going on without it", path,
			 strerror(errno));
		return;
	}
	uint64_t deadline = now_ms() + 60000;
	while (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		if (errno != EWOULDBLOCK && errno != EINTR)
			break;
		if (now_ms() > deadline) {
			log_warn("IPAM lock %s still held after 60 s; going on without it", path);
			close(fd);
			return;
		}
		struct timespec ts = { 0, 5 * 1000000L };
		nanosleep(&ts, NULL);
	}
	p->lock_fd = fd;
}

static void plugin_unlock(struct plugin *p)
{
	if (p->lock_fd >= 0) {
		close(p->lock_fd); /* releases the flock */
		p->lock_fd = -1;
	}
}

/* The addresses of @family among @ips, into @out. */
static size_t ips_of(const struct br_ip *ips, size_t n, int family, struct br_ip *out)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (ips[i].family == family)
			out[k++] = ips[i];
	return k;
}

/*
 * On the Kubernetes datastore the pod must exist (a runtime's ADD for a pod
 * the API does not know is an error, not an address for nobody), and its
 * Calico annotations (or its namespace's) choose fixed addresses or pools
 * over the network configuration's. The pod and its namespace are read with
 * IPAM's first round of reads (ipam_request.also): one round trip for all.
 */
struct pod_reads {
	struct plugin *p;
	struct ds_read rd[2]; /* the pod, its namespace */
	/* what the pod asks (NULL before the reads, or on etcd) and its namespace's labels */
	const struct kdd_pod_ipam *want;
	struct br_labels *ns_labels;
	struct br_ip ips[2][KDD_POD_MAX_IPS]; /* want's addresses by family (IPv4, IPv6) */
	size_t n_ips[2];
	/* why the pod's reads or annotations stop the ADD (code 0: they do not) */
	int code;
	const char *msg, *details;
};

/* What the pod asks of the request of one family: its addresses, else its pools. */
static void pod_apply(struct pod_reads *pr, struct ipam_request *req)
{
	const struct kdd_pod_ipam *want = pr->want;
	if (!want)
		return;
	struct plugin *p = pr->p;
	bool v6 = req->family == AF_INET6;
	req->namespace_labels = pr->ns_labels;
	if (want->n_ips) {
		req->ips = pr->ips[v6];
		req->n_ips = pr->n_ips[v6];
		req->pools = NULL;
		req->n_pools = 0;
		log_info("%s/%s: the %s addresses of its annotation cni.projectcalico.org/ipAddrs",
			 p->id.namespace, p->id.pod, v6 ? "IPv6" : "IPv4");
	} else if (v6 ? want->n_pools6 : want->n_pools) {
		req->pools = v6 ? want->pools6 : want->pools;
		req->n_pools = v6 ? want->n_pools6 : want->n_pools;
		log_info("%s pools from %s", v6 ? "IPv6" : "IPv4",
			 v6 ? want->pools6_from : want->pools_from);
	}
}

static int pod_prepare(void *ctx, const struct ds_read *rd, size_t n, struct ipam_request *req)
{
	struct pod_reads *pr = ctx;
	struct plugin *p = pr->p;
	(void)n;
	for (size_t i = 0; i < 2; i++) {
		int r = rd[i].err;
		if (r == 0)
			continue;
		const char *what = i ? arena_printf(p->a, "namespace %s", p->id.namespace)
				     : arena_printf(p->a, "pod %s/%s", p->id.namespace, p->id.pod);
		pr->code = r == -ENOENT				   ? CNI_ERR_UNKNOWN_CONTAINER
			   : r == -ETIMEDOUT || r == -ECONNREFUSED ? CNI_ERR_TRY_AGAIN
								   : CNI_ERR_DATASTORE;
		pr->msg = "cannot read the pod from the Kubernetes API";
		pr->details = arena_printf(p->a, "%s: %s", what,
					   r == -ENOENT ? "does not exist" : rd[i].error);
		return r;
	}
	const struct jv *pod = rd[0].doc, *ns = rd[1].doc;
	struct kdd_pod_ipam *want = arena_alloc(p->a, sizeof(*want));
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	int r = kdd_pod_ipam(p->a, pod, ns, want, &err);
	if (r < 0) {
		pr->code = CNI_ERR_INVALID_CONFIG;
		pr->msg = "the pod's IPAM annotations cannot be used";
		pr->details = arena_strdup(p->a, sb_str(&err));
		sb_free(&err);
		return r;
	}
	sb_free(&err);
	/* Fixed addresses: one or more of each family the network assigns, none of another. */
	pr->n_ips[0] = ips_of(want->ips, want->n_ips, AF_INET, pr->ips[0]);
	pr->n_ips[1] = ips_of(want->ips, want->n_ips, AF_INET6, pr->ips[1]);
	const struct cni_conf *c = p->conf;
	for (int v6 = 0; want->n_ips && v6 < 2; v6++) {
		bool assigned = v6 ? c->assign_ipv6 : c->assign_ipv4;
		if (assigned == (pr->n_ips[v6] > 0))
			continue;
		pr->code = CNI_ERR_INVALID_CONFIG;
		pr->msg = "the pod's IPAM annotations cannot be used";
		pr->details = arena_printf(
			p->a, "pod %s/%s: metadata.annotations[cni.projectcalico.org/ipAddrs]: %s",
			p->id.namespace, p->id.pod,
			assigned ? (v6 ? "no IPv6 address, and the network assigns IPv6"
				       : "no IPv4 address, and the network assigns IPv4")
				 : (v6 ? "an IPv6 address, and the network assigns no IPv6"
				       : "an IPv4 address, and the network assigns no IPv4"));
		return -EINVAL;
	}
	/* For pools with a namespaceSelector. */
	struct br_labels *nsl = arena_alloc(p->a, sizeof(*nsl));
	const struct jv *labels = jv_get(jv_get(ns, "metadata"), "labels");
	for (size_t i = 0; labels && labels->type == JV_OBJECT && i < labels->obj.n; i++) {
		const char *v = jv_as_string(labels->obj.members[i].value);
		if (v)
			labels_set(p->a, nsl, labels->obj.members[i].key, v);
	}
	pr->ns_labels = nsl;
	pr->want = want;
	pod_apply(pr, req);
	return 0;
}

static void pod_reads_init(struct plugin *p, struct pod_reads *pr, struct ipam_request *req)
{
	*pr = (struct pod_reads){ .p = p };
	if (!ds_kube_client(p->ds))
		return;
	if (!streq(p->id.orchestrator, "k8s"))
		plugin_fail(p, CNI_ERR_INVALID_ENV,
			    "on the Kubernetes datastore CNI_ARGS must name the pod",
			    "K8S_POD_NAMESPACE and K8S_POD_NAME");
	struct strbuf path = STRBUF_INIT;
	sb_init(&path);
	kube_path(&path, "v1", p->id.namespace, "pods", p->id.pod);
	pr->rd[0] = (struct ds_read){ .path = arena_strdup(p->a, sb_str(&path)), .arena = p->a };
	sb_reset(&path);
	kube_path(&path, "v1", NULL, "namespaces", p->id.namespace);
	pr->rd[1] = (struct ds_read){ .path = arena_strdup(p->a, sb_str(&path)), .arena = p->a };
	sb_free(&path);
	req->also = pr->rd;
	req->n_also = 2;
	req->prepare = pod_prepare;
	req->prepare_ctx = pr;
}

/*
 * The block this node's last assignment came from (ipam_request.block_hint),
 * kept in the IPAM lock file as "<node> <block>": the file is the host's and
 * read and written under its lock. "" when there is none for @node.
 */
static void hint_read(struct plugin *p, char *out, size_t len)
{
	char buf[512];
	out[0] = 0;
	ssize_t n = p->lock_fd >= 0 ? pread(p->lock_fd, buf, sizeof(buf) - 1, 0) : -1;
	if (n <= 0)
		return;
	buf[n] = 0;
	char *sp = strchr(buf, ' '), *nl = strchr(buf, '\n');
	if (!sp || !nl || nl < sp)
		return;
	*sp = *nl = 0;
	if (streq(buf, p->node) && strlen(sp + 1) < len)
		snprintf(out, len, "%s", sp + 1);
}

static void hint_write(struct plugin *p, const char *block)
{
	char buf[512];
	int n = snprintf(buf, sizeof(buf), "%s %s\n", p->node, block);
	if (p->lock_fd < 0 || n < 0 || (size_t)n >= sizeof(buf))
		return;
	/* Only a hint: a failed write costs the next ADD one read. */
	if (pwrite(p->lock_fd, buf, (size_t)n, 0) != n || ftruncate(p->lock_fd, n) < 0)
		log_debug("cannot keep the block hint in the IPAM lock file: %s", strerror(errno));
}

/*
 * One assignment per family the network assigns (IPv4, IPv6 or both), under
 * one handle: both or neither. The pod's reads go with the first.
 */
void plugin_assign(struct plugin *p, struct ipam_assigned *out, struct plugin_added *added)
{
	const struct cni_conf *c = p->conf;
	/*
	 * Felix polices IPv6 only with ipv6Support (off by default), which the plugin
	 * cannot see (felix's environment may set it): on a node without it an IPv6
	 * pod would be open to every peer whatever its policies say. Only where it is
	 * policed (or need not be: a lab, a test) and said so: in the configuration
	 * (felix_ipv6_support, which install-cni writes from the ConfigMap felix
	 * reads), or in the plugin's environment.
	 */
	const char *unpoliced = getenv("BRINDLE_IPV6_WITHOUT_POLICY");
	if (c->assign_ipv6 && !c->felix_ipv6_support && !(unpoliced && streq(unpoliced, "1")))
		plugin_fail(
			p, CNI_ERR_UNSUPPORTED_FIELD,
			"ipam.assign_ipv6: IPv6 pods need felix's ipv6Support",
			"felix polices IPv6 only with ipv6Support (FELIX_IPV6SUPPORT, off by "
			"default), which the plugin cannot see, and without it an IPv6 address "
			"would bypass the pod's network policies; where felix runs with "
			"ipv6Support, set felix_ipv6_support in the network configuration "
			"(install-cni does when FELIX_IPV6SUPPORT is true in brindle-config) or "
			"BRINDLE_IPV6_WITHOUT_POLICY=1 in the plugin's environment");
	struct br_labels secondary = { 0 };
	int64_t now = time(NULL);
	labels_set(p->a, &secondary, IPAM_ATTR_NAMESPACE, p->id.namespace);
	labels_set(p->a, &secondary, IPAM_ATTR_POD, p->id.pod);
	labels_set(p->a, &secondary, IPAM_ATTR_NODE, p->node);
	labels_set(p->a, &secondary, IPAM_ATTR_TIMESTAMP, arena_printf(p->a, "%" PRId64, now));
	/*
	 * brindle-cni writes an endpoint for the address: ipam check and release
	 * tell a leak by it. brindle-ipam serving another plugin writes none.
	 */
	if (streq(p->prog, "brindle-cni"))
		labels_set(p->a, &secondary, IPAM_ATTR_ENDPOINT,
			   cni_wep_name(p->a, p->node, p->id.orchestrator, p->id.pod, p->ifname));
	struct ipam_request req[2];
	struct br_ip asked[2][CNI_MAX_IPS];
	size_t nf = 0;
	for (int v6 = 0; v6 < 2; v6++) {
		if (!(v6 ? c->assign_ipv6 : c->assign_ipv4))
			continue;
		int family = v6 ? AF_INET6 : AF_INET;
		req[nf] = (struct ipam_request){
			.handle = p->handle,
			.node = p->node,
			.family = family,
			.pools = v6 ? c->ipv6_pools : c->ipv4_pools,
			.n_pools = v6 ? c->n_ipv6_pools : c->n_ipv4_pools,
			.ips = asked[nf],
			.n_ips = ips_of(c->ips, c->n_ips, family, asked[nf]),
			.secondary = &secondary,
			.now = now,
			.timeout_ms = c->ipam_timeout_s ? c->ipam_timeout_s * 1000 : 0
		};
		nf++;
	}
	struct pod_reads pr;
	pod_reads_init(p, &pr, &req[0]);
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	plugin_lock(p);
	char hint[IPAM_BLOCK_NAME_LEN];
	hint_read(p, hint, sizeof(hint));
	req[0].block_hint = hint;
	*out = (struct ipam_assigned){ .reused = true };
	struct plugin_added add = { .new_handle = true };
	int r = 0;
	size_t k;
	for (k = 0; k < nf && r == 0; k++) {
		struct ipam_assigned one;
		if (k)
			pod_apply(&pr, &req[k]);
		r = ipam_assign(p->ds, &req[k], &one, &err);
		if (r < 0)
			break;
		if (k == 0 && one.block[0] && !streq(one.block, hint))
			hint_write(p, one.block);
		/* what the handle held before, so that a failed ADD gives back only what it added
		 */
		add.new_handle &= one.held == 0;
		for (size_t i = 0; i < one.n && out->n < IPAM_MAX_IPS; i++) {
			if (i >= one.held && add.n < CNI_MAX_IPS)
				add.ips[add.n++] = one.ips[i];
			out->ips[out->n++] = one.ips[i];
		}
		out->reused &= one.reused;
		if (!out->pool[0])
			memcpy(out->pool, one.pool, sizeof(out->pool));
	}
	plugin_unlock(p);
	if (r < 0 && k > 0) {
		/* both or neither: the first family's address goes back */
		struct strbuf why = STRBUF_INIT;
		sb_init(&why);
		if (plugin_unassign(p, &add, &why) < 0)
			log_warn("releasing %s after the %s assignment failed: %s "
				 "(the runtime's DEL will retry)",
				 p->handle, req[k].family == AF_INET6 ? "IPv6" : "IPv4",
				 sb_str(&why));
		sb_free(&why);
	}
	if (r < 0 && pr.code) {
		sb_free(&err);
		plugin_fail(p, pr.code, pr.msg, pr.details);
	}
	if (r < 0) {
		char *details = arena_strdup(p->a, sb_str(&err));
		sb_free(&err);
		plugin_fail(p, plugin_ipam_code(r),
			    nf > 1 ? (req[k].family == AF_INET6
					      ? "IPAM could not assign an IPv6 address"
					      : "IPAM could not assign an IPv4 address")
				   : "IPAM could not assign an address",
			    details);
	}
	sb_free(&err);
	if (added)
		*added = add;
	for (size_t i = 0; i < out->n; i++) {
		char ip[IP_STRLEN];
		log_info("%s: %s %s for %s/%s on %s", p->handle, out->reused ? "kept" : "assigned",
			 ip_str(&out->ips[i], ip), p->id.namespace, p->id.pod, p->node);
	}
}

int plugin_unassign(struct plugin *p, const struct plugin_added *added, struct strbuf *err)
{
	if (!added->n)
		return 0; /* a retried ADD: the handle's addresses wait for the runtime's DEL */
	int64_t now = time(NULL);
	long timeout = p->conf->ipam_timeout_s ? p->conf->ipam_timeout_s * 1000 : 0;
	int r = 0;
	size_t n = 0;
	plugin_lock(p);
	if (added->new_handle) {
		r = ipam_release_handle(p->ds, p->handle, now, timeout, &n, err);
	} else {
		for (size_t i = 0; i < added->n && r == 0; i++) {
			r = ipam_release_ip(p->ds, &added->ips[i], p->handle, now, NULL, err);
			if (r == -ENOENT || r == -EBUSY)
				r = 0; /* already free, or no longer ours */
			else if (r == 0)
				n++;
		}
	}
	plugin_unlock(p);
	if (r == 0)
		log_info("%s: gave back %zu address(es) after a failed ADD%s", p->handle, n,
			 added->new_handle ? "" : "; the handle keeps what it held before");
	return r;
}

int plugin_release(struct plugin *p, struct strbuf *err)
{
	size_t n = 0, blocks = 0;
	int64_t now = time(NULL);
	long timeout = p->conf->ipam_timeout_s ? p->conf->ipam_timeout_s * 1000 : 0;
	plugin_lock(p);
	int r = ipam_release_handle(p->ds, p->handle, now, timeout, &n, err);
	if (r == 0) {
		struct strbuf sweep = STRBUF_INIT;
		sb_init(&sweep);
		/* Housekeeping: an error here must not fail the DEL. */
		struct ipam_sweep s = { .node = p->node,
					.by_node = true,
					.now = now,
					.grace_s = p->conf->empty_block_grace_s,
					.timeout_ms = timeout };
		struct ipam_swept done;
		if (ipam_release_empty_blocks(p->ds, &s, &done, &sweep) < 0)
			log_warn("releasing empty blocks of %s: %s", p->node, sb_str(&sweep));
		else
			blocks = done.empty + done.claims;
		sb_free(&sweep);
	}
	plugin_unlock(p);
	if (r == 0)
		log_info("%s: released %zu address(es)%s", p->handle, n,
			 blocks ? ", and empty blocks past their grace period or interrupted claims"
				: "");
	return r;
}
