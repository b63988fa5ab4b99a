/*
 * lab up, down and status. A lab is built in this order, each step recorded
 * in the state directory before it is taken (lab_proc.c): the state
 * directory itself (its creation is what makes a second `lab up` of the same
 * name fail without changing anything), etcd on a unix socket in it, the
 * resources from the topology, the fabric namespace (a bridge per subnet
 * holding the subnet's gateway, forwarding between them), per node a
 * namespace with its uplink, default route and sysctls running
 * brindle-confd, BIRD and brindle-felix, then the pods through brindle-cni
 * each running brindle-probe. Then a bounded wait until everything is ready.
 */
#include "lab.h"

#include <brindle/core/json.h>
#include <brindle/sys/clock.h>
#include <brindle/sys/strbuf_file.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int fail_io(const char *what, const struct strbuf *out)
{
	ctl_error("%s: %s", what, out ? sb_str(out) : "failed");
	return -EIO;
}

/* ip/sysctl commands that must work; the command line is the message on failure. */
static int must(const char *fmt, ...) printf_like(1, 2);
static int must(const char *fmt, ...)
{
	struct strbuf line = STRBUF_INIT, out = STRBUF_INIT;
	sb_init(&line);
	sb_init(&out);
	va_list ap;
	va_start(ap, fmt);
	sb_vaddf(&line, fmt, ap);
	va_end(ap);
	int r = lab_runf(&out, "%s", sb_str(&line));
	if (r != 0) {
		ctl_error("%s: %s", sb_str(&line), sb_str(&out));
		r = -EIO;
	}
	sb_free(&line);
	sb_free(&out);
	return r;
}

/* The client configuration of the lab's datastore, as @who on Kubernetes. */
static int lab_ds_config(struct lab *l, struct ctl *c, const char *who)
{
	*c = (struct ctl){ 0 };
	if (l->topo && l->topo->kubernetes) {
		c->cfg.type = "kubernetes";
		c->cfg.kubeconfig = lab_kubeconfig(l, who);
		return lab_kube_enter(l);
	}
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	c->cfg.type = "etcdv3";
	int r = ds_config_set_endpoints(&c->cfg, &c->storage, l->endpoints, &err);
	if (r < 0)
		ctl_error("%s", sb_str(&err));
	sb_free(&err);
	return r;
}

int lab_ctl_cmd(struct lab *l, int (*fn)(struct ctl *, int, char **), int argc, char **argv,
		bool quiet)
{
	struct ctl c;
	if (lab_ds_config(l, &c, "brindlectl") < 0)
		return CTL_FAIL;
	if (l->topo->kubernetes) {
		c.cluster_write = lab_kube_cluster_write;
		c.cluster_arg = l;
	}
	int saved = -1;
	if (quiet) {
		fflush(stdout);
		saved = dup(1);
		int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
		if (devnull >= 0) {
			dup2(devnull, 1);
			close(devnull);
		}
	}
	int r = fn(&c, argc, argv);
	if (saved >= 0) {
		fflush(stdout);
		dup2(saved, 1);
		close(saved);
	}
	ds_close(c.ds);
	ds_config_free_storage(&c.storage);
	return r;
}

/* The lab's datastore as @who on Kubernetes (lab_kubeconfig); on etcd @who is ignored. */
static struct ds *lab_ds_as(struct lab *l, struct ctl *c, const char *who)
{
	return lab_ds_config(l, c, who) < 0 ? NULL : ctl_ds(c);
}

struct ds *lab_ds(struct lab *l, struct ctl *c)
{
	return lab_ds_as(l, c, "brindlectl");
}

void lab_ctl_close(struct ctl *c)
{
	ds_close(c->ds);
	c->ds = NULL;
	ds_config_free_storage(&c->storage);
}

static const char *ipstr(struct arena *a, const struct br_ip *ip)
{
	char buf[IP_STRLEN];
	return arena_strdup(a, ip_str(ip, buf));
}

/* The topology's resources (lab_resources_yaml), written with brindlectl apply. */
static int write_resources(struct lab *l)
{
	struct strbuf sb = STRBUF_INIT;
	sb_init(&sb);
	lab_resources_yaml(l->topo, &sb);
	const char *path = arena_printf(l->a, "%s/resources.yaml", l->dir);
	FILE *f = fopen(path, "we");
	int r = -EIO;
	if (f) {
		fputs(sb_str(&sb), f);
		r = fclose(f) == 0 ? 0 : -EIO;
	}
	sb_free(&sb);
	if (r < 0)
		return fail_io(path, NULL);
	char *argv[] = { "apply", "-f", (char *)path, NULL };
	return lab_ctl_cmd(l, cmd_apply, 3, argv, true) == CTL_OK ? 0 : -EIO;
}

static int start_etcd(struct lab *l)
{
	const char *dir = arena_printf(l->a, "%s/etcd", l->dir);
	if (mkdir(dir, 0700) < 0)
		return fail_io(dir, NULL);
	const char *cname = arena_printf(l->a, "lab-%s", l->name);
	const char *cluster = arena_printf(l->a, "%s=unix://peer.sock:0", cname);
	/* etcd makes its unix sockets in its working directory: env -C */
	char *argv[] = { "env",
			 "-C",
			 (char *)dir,
			 "etcd",
			 "--name",
			 (char *)cname,
			 "--data-dir",
			 arena_printf(l->a, "%s/data", dir),
			 "--listen-client-urls",
			 "unix://etcd.sock:0",
			 "--advertise-client-urls",
			 "unix://etcd.sock:0",
			 "--listen-peer-urls",
			 "unix://peer.sock:0",
			 "--initial-advertise-peer-urls",
			 "unix://peer.sock:0",
			 "--initial-cluster",
			 (char *)cluster,
			 "--log-level",
			 "error",
			 "--logger",
			 "zap",
			 "--log-outputs",
			 "stderr",
			 NULL };
	int r = lab_spawn(l, NULL, "etcd", argv);
	if (r < 0)
		return fail_io("starting etcd", NULL);
	char *probe[] = { "curl",
			  "-sf",
			  "--unix-socket",
			  (char *)l->etcd_sock,
			  "-X",
			  "POST",
			  "--max-time",
			  "1",
			  "http://localhost/v3/kv/range",
			  "-d",
			  "{\"key\":\"AA==\"}",
			  NULL };
	/* a bound, not a wait: etcd answers in about a second, and took over 20 s under
	 * emulation beside other tests (tests/vm) */
	uint64_t deadline = now_ms() + 60000;
	while (lab_run(NULL, probe, NULL, NULL) != 0) {
		if (now_ms() > deadline) {
			ctl_error("etcd did not answer within 60 s (log: %s/etcd.log)", l->dir);
			return -ETIMEDOUT;
		}
		usleep(100000);
	}
	return 0;
}

static int build_fabric(struct lab *l)
{
	const struct lab_topology *t = l->topo;
	const char *fab = lab_ns_fabric(l->a, t->name);
	int r = lab_netns_add(l, fab);
	if (r < 0)
		return r;
	if ((r = must("ip netns exec %s sysctl -qw net.ipv4.ip_forward=1", fab)) < 0 ||
	    (t->ipv6 &&
	     (r = must("ip netns exec %s sysctl -qw net.ipv6.conf.all.forwarding=1", fab)) < 0))
		return r;
	for (size_t i = 0; i < t->n_subnets; i++) {
		const struct lab_subnet *s = &t->subnets[i];
		/*
		 * a fixed address: a bridge takes the lowest of its ports' otherwise, and
		 * each node joining changed it under the nodes' ARP caches (the API
		 * server on the gateway went dark for ~30 s)
		 */
		if ((r = must("ip -n %s link add br%zu address 02:62:72:00:00:%02zx type bridge",
			      fab, i, i + 1)) < 0 ||
		    (s->cidr.len && (r = must("ip -n %s addr add %s/%u dev br%zu", fab,
					      ipstr(l->a, &s->gateway), s->cidr.len, i)) < 0) ||
		    (r = must("ip -n %s link set br%zu up", fab, i)) < 0)
			return r;
		if (s->cidr6.len && (r = must("ip -n %s addr add %s/%u dev br%zu nodad", fab,
					      ipstr(l->a, &s->gateway6), s->cidr6.len, i)) < 0)
			return r;
	}
	return 0;
}

static void cni_conf(struct lab *l, struct strbuf *conf, const char *node, const struct lab_pod *p);
static const char *result_ip(struct lab *l, const char *json);

/*
 * The node's bootstrap, as the DaemonSet runs it before the daemons:
 * brindle-node startup in the node's namespace, as the node's identity
 * (docs/install.md). The node's address is autodetected (first-found finds
 * eth0) unless the Node already has one (written with the topology's
 * resources); the pools are the topology's; it allocates the node's tunnel
 * addresses when the encapsulation needs them.
 */
static int node_startup(struct lab *l, const struct lab_bins *b, const struct lab_node *n,
			const char *ep, const char *ep2, const char *dir)
{
	const char *ns = lab_ns_node(l->a, l->topo->name, n->name);
	char *argv[12];
	size_t k = 0;
	argv[k++] = "env";
	argv[k++] = (char *)ep;
	argv[k++] = (char *)ep2;
	argv[k++] = arena_printf(l->a, "NODENAME=%s", n->name);
	argv[k++] = "NO_DEFAULT_POOLS=true";
	argv[k++] = arena_printf(l->a, "BRINDLE_NODENAME_FILE=%s/nodename", dir);
	argv[k++] = arena_printf(l->a, "BRINDLE_MTU_FILE=%s/mtu", dir);
	if (!n->ip.family)
		argv[k++] = "IP=none"; /* an IPv6-only node: no IPv4 address to autodetect */
	argv[k++] = (char *)b->node;
	argv[k++] = "startup";
	argv[k] = NULL;
	struct strbuf out = STRBUF_INIT;
	sb_init(&out);
	int r = lab_run(ns, argv, NULL, &out);
	const char *log = arena_printf(l->a, "%s/%s-startup.log", l->dir, n->name);
	FILE *f = fopen(log, "we");
	if (f) {
		fputs(sb_str(&out), f);
		fclose(f);
	}
	if (r != 0)
		ctl_error("node %s: brindle-node startup failed (exit %d): %s", n->name, r,
			  sb_str(&out));
	sb_free(&out);
	return r == 0 ? 0 : -EIO;
}

static int start_probe(struct lab *l, const struct lab_bins *b, const struct lab_node *n,
		       const char *ns);

static int start_node(struct lab *l, const struct lab_bins *b, size_t i)
{
	const struct lab_topology *t = l->topo;
	const struct lab_node *n = &t->nodes[i];
	const struct lab_subnet *s = &t->subnets[n->subnet];
	const char *fab = lab_ns_fabric(l->a, t->name);
	const char *ns = lab_ns_node(l->a, t->name, n->name);
	int r = lab_netns_add(l, ns);
	if (r < 0)
		return r;
	/* the uplink is made inside the fabric and its peer moved straight into the node */
	if ((r = must("ip -n %s link add n%zu type veth peer name eth0 netns %s", fab, i, ns)) <
		    0 ||
	    (r = must("ip -n %s link set n%zu master br%zu up", fab, i, n->subnet)) < 0 ||
	    (n->ip.family && (r = must("ip -n %s addr add %s/%u dev eth0", ns, ipstr(l->a, &n->ip),
				       s->cidr.len)) < 0) ||
	    (r = must("ip -n %s link set eth0 up", ns)) < 0 ||
	    (n->ip.family && (r = must("ip -n %s route add default via %s dev eth0", ns,
				       ipstr(l->a, &s->gateway))) < 0) ||
	    (r = must("ip netns exec %s sysctl -qw net.ipv4.ip_forward=1", ns)) < 0 ||
	    (r = must("ip netns exec %s sysctl -qw net.ipv4.conf.all.rp_filter=0", ns)) < 0)
		return r;
	/* IPv6 beside it: the node's address and default route (felix turns forwarding on) */
	if (n->ip6.family && ((r = must("ip -n %s addr add %s/%u dev eth0 nodad", ns,
					ipstr(l->a, &n->ip6), s->cidr6.len)) < 0 ||
			      (r = must("ip -n %s -6 route add default via %s dev eth0", ns,
					ipstr(l->a, &s->gateway6))) < 0))
		return r;
	const char *dir = arena_printf(l->a, "%s/%s", l->dir, n->name);
	if (mkdir(dir, 0755) < 0)
		return fail_io(dir, NULL);
	/* on Kubernetes: the DaemonSet's pod, as a kubelet runs it */
	if (t->kubernetes && (r = lab_kubelet_node(l, b, n)) < 0)
		return r;
	if (t->kubernetes)
		return start_probe(l, b, n, ns);
	const char *ep = arena_printf(l->a, "BRINDLE_ETCD_ENDPOINTS=%s", l->endpoints);
	const char *ep2 = "BRINDLE_DATASTORE_TYPE=etcdv3";
	/* the bootstrap first, as the DaemonSet runs it */
	if ((r = node_startup(l, b, n, ep, ep2, dir)) < 0)
		return r;
	const char *sock = arena_printf(l->a, "%s/bird.ctl", dir);
	char *confd[] = { "env",
			  (char *)ep,
			  (char *)ep2,
			  (char *)b->confd,
			  "--node",
			  (char *)n->name,
			  "--output-dir",
			  (char *)dir,
			  "--bird-socket",
			  (char *)sock,
			  "--secrets-dir",
			  arena_printf(l->a, "%s/secrets", l->dir),
			  "--settle",
			  "50ms",
			  NULL };
	/* started again a second after they exit, as the node image's supervisor or a kubelet
	 * would: a felix killed under traffic comes back (tests/vm) */
	if ((r = lab_spawn_restarted(l, ns, arena_printf(l->a, "%s-confd", n->name), confd)) < 0)
		return fail_io("starting brindle-confd", NULL);
	char *felix[16] = {
		"env", (char *)ep, (char *)ep2, arena_printf(l->a, "NODENAME=%s", n->name),
		"FELIX_PROMETHEUSMETRICSENABLED=true", "FELIX_DEFAULTENDPOINTTOHOSTACTION=Accept",
		/* the event log stays with the lab (and goes with lab down) */
		arena_printf(l->a, "FELIX_POLICYEVENTLOGDIR=%s", dir),
		/* each node a host of its own: its own xtables lock, not the machine's */
		arena_printf(l->a, "FELIX_IPTABLESLOCKFILEPATH=%s/xtables.lock", dir)
	};
	size_t k = 8;
	/* what the topology says (else nothing: felix's own choice, and the
	 * FelixConfiguration's): the ruleBackend, IPv6 with an IPv6 pool */
	if (lab_rule_backend(l->topo))
		felix[k++] =
			arena_printf(l->a, "FELIX_IPTABLESBACKEND=%s", lab_rule_backend(l->topo));
	if (t->ipv6)
		felix[k++] = "FELIX_IPV6SUPPORT=true";
	felix[k++] = (char *)b->felix;
	if ((r = lab_spawn_restarted(l, ns, arena_printf(l->a, "%s-felix", n->name), felix)) < 0)
		return fail_io("starting brindle-felix", NULL);
	return start_probe(l, b, n, ns);
}

/* What the node's topology says it answers on, from the node itself. */
static int start_probe(struct lab *l, const struct lab_bins *b, const struct lab_node *n,
		       const char *ns)
{
	int r = 0;
	if (n->n_serve) {
		char **argv = arena_new_array(l->a, char *, 2 * n->n_serve + 3);
		size_t k = 0;
		argv[k++] = (char *)b->probe;
		argv[k++] = "serve";
		for (size_t j = 0; j < n->n_serve; j++) {
			if (lab_proto_skipped(n->serve[j].proto))
				continue; /* no SCTP sockets in this kernel */
			argv[k++] = (char *)lab_probe_flag(n->serve[j].proto);
			argv[k++] = arena_printf(l->a, "%u", n->serve[j].port);
		}
		if ((r = lab_spawn(l, ns, arena_printf(l->a, "%s-probe", n->name), argv)) < 0)
			return fail_io("starting brindle-probe", NULL);
	}
	return 0;
}

/* An external host: a namespace on the fabric with its address, routed to and from pods. */
static int start_external(struct lab *l, const struct lab_bins *b, size_t i)
{
	const struct lab_topology *t = l->topo;
	const struct lab_external *x = &t->externals[i];
	const char *fab = lab_ns_fabric(l->a, t->name);
	const char *ns = lab_ns_external(l->a, t->name, x->name);
	int r = lab_netns_add(l, ns);
	if (r < 0)
		return r;
	if ((r = must("ip -n %s link add x%zu type veth peer name eth0 netns %s", fab, i, ns)) <
		    0 ||
	    (r = must("ip -n %s link set x%zu up", fab, i)) < 0 ||
	    (r = must("ip -n %s link set eth0 up", ns)) < 0)
		return r;
	/*
	 * IPv4: a point-to-point link: the fabric answers ARP for everything it routes
	 * (proxy ARP), at once: the kernel's default proxy_delay holds each answer
	 * back up to 0.8 s, which made a host's first probes look like denials
	 */
	const char *ip = x->ip.family ? ipstr(l->a, &x->ip) : NULL;
	if (ip &&
	    ((r = must("ip netns exec %s sysctl -qw net.ipv4.conf.x%zu.proxy_arp=1", fab, i)) < 0 ||
	     (r = must("ip netns exec %s sysctl -qw net.ipv4.neigh.x%zu.proxy_delay=0", fab, i)) <
		     0 ||
	     (r = must("ip -n %s route add %s/32 dev x%zu", fab, ip, i)) < 0 ||
	     (r = must("ip -n %s rule add iif x%zu lookup %d pref 100", fab, i,
		       LAB_EXTERNAL_TABLE)) < 0 ||
	     (r = must("ip -n %s addr add %s/32 dev eth0", ns, ip)) < 0 ||
	     (r = must("ip -n %s route add default dev eth0", ns)) < 0))
		return r;
	/* IPv6: the host's default route is the fabric's link-local fe80::1 on the link
	 * (no proxy neighbour discovery for every address it routes) */
	const char *ip6 = x->ip6.family ? ipstr(l->a, &x->ip6) : NULL;
	if (ip6 && ((r = must("ip -n %s addr add fe80::1/64 dev x%zu nodad", fab, i)) < 0 ||
		    (r = must("ip -n %s -6 route add %s/128 dev x%zu", fab, ip6, i)) < 0 ||
		    (r = must("ip -n %s -6 rule add iif x%zu lookup %d pref 100", fab, i,
			      LAB_EXTERNAL_TABLE)) < 0 ||
		    (r = must("ip -n %s addr add %s/128 dev eth0 nodad", ns, ip6)) < 0 ||
		    (r = must("ip -n %s -6 route add default via fe80::1 dev eth0", ns)) < 0))
		return r;
	if (!x->n_serve)
		return 0;
	char **argv = arena_new_array(l->a, char *, 2 * x->n_serve + 3);
	size_t k = 0;
	argv[k++] = (char *)b->probe;
	argv[k++] = "serve";
	for (size_t j = 0; j < x->n_serve; j++) {
		if (lab_proto_skipped(x->serve[j].proto))
			continue; /* no SCTP sockets in this kernel */
		argv[k++] = (char *)lab_probe_flag(x->serve[j].proto);
		argv[k++] = arena_printf(l->a, "%u", x->serve[j].port);
	}
	if (lab_spawn(l, ns, arena_printf(l->a, "%s-probe", x->name), argv) < 0)
		return fail_io("starting brindle-probe", NULL);
	return 0;
}

/*
 * A third-party BGP router on a subnet: FRR's bgpd (no zebra: it learns
 * routes, it does not program them) peering eBGP with every node, a session
 * per family both have an address of, which peer with it through the
 * BGPPeers written in write_resources.
 */
static int start_peer(struct lab *l, size_t i)
{
	const struct lab_topology *t = l->topo;
	const struct lab_bgp_peer *p = &t->peers[i];
	const struct lab_subnet *s = &t->subnets[p->subnet];
	const char *fab = lab_ns_fabric(l->a, t->name);
	const char *ns = lab_ns_external(l->a, t->name, p->name);
	const char *ip = p->ip.family ? ipstr(l->a, &p->ip) : NULL;
	const char *ip6 = p->ip6.family ? ipstr(l->a, &p->ip6) : NULL;
	int r = lab_netns_add(l, ns);
	if (r < 0)
		return r;
	if ((r = must("ip -n %s link add t%zu type veth peer name eth0 netns %s", fab, i, ns)) <
		    0 ||
	    (r = must("ip -n %s link set t%zu master br%zu up", fab, i, p->subnet)) < 0 ||
	    (r = must("ip -n %s link set eth0 up", ns)) < 0 ||
	    (ip && ((r = must("ip -n %s addr add %s/%u dev eth0", ns, ip, s->cidr.len)) < 0 ||
		    (r = must("ip -n %s route add default via %s dev eth0", ns,
			      ipstr(l->a, &s->gateway))) < 0)) ||
	    (ip6 &&
	     ((r = must("ip -n %s addr add %s/%u dev eth0 nodad", ns, ip6, s->cidr6.len)) < 0 ||
	      (r = must("ip -n %s -6 route add default via %s dev eth0", ns,
			ipstr(l->a, &s->gateway6))) < 0)))
		return r;
	const char *dir = arena_printf(l->a, "%s/%s", l->dir, p->name);
	const char *conf = arena_printf(l->a, "%s/bgpd.conf", dir);
	if (mkdir(dir, 0755) < 0)
		return fail_io(dir, NULL);
	struct strbuf sb = STRBUF_INIT;
	sb_init(&sb);
	/* an IPv6-only router still needs a 32-bit router id: one from the benchmarking range */
	sb_addf(&sb,
		"hostname %s\nrouter bgp %u\n bgp router-id %s\n no bgp ebgp-requires-policy\n"
		" no bgp default ipv4-unicast\n bgp bestpath as-path multipath-relax\n",
		p->name, p->as_number, ip ? ip : arena_printf(l->a, "198.18.0.%zu", i + 1));
	for (int f = 0; f < 2; f++) /* the neighbours: every node's address of each family */
		for (size_t j = 0; j < t->n_nodes && (f ? ip6 : ip); j++) {
			const struct br_ip *nip = f ? &t->nodes[j].ip6 : &t->nodes[j].ip;
			if (!nip->family)
				continue;
			sb_addf(&sb, " neighbor %s remote-as %u\n", ipstr(l->a, nip), t->as_number);
			if (t->nodes[j].subnet != p->subnet)
				sb_addf(&sb, " neighbor %s ebgp-multihop 4\n", ipstr(l->a, nip));
		}
	for (int f = 0; f < 2; f++) { /* each family over its own sessions */
		if (!(f ? ip6 : ip))
			continue;
		sb_addf(&sb, " address-family ipv%d unicast\n  maximum-paths 16\n", f ? 6 : 4);
		for (size_t j = 0; j < t->n_nodes; j++) {
			const struct br_ip *nip = f ? &t->nodes[j].ip6 : &t->nodes[j].ip;
			if (nip->family)
				sb_addf(&sb, "  neighbor %s activate\n", ipstr(l->a, nip));
		}
		sb_adds(&sb, " exit-address-family\n");
	}
	FILE *f = fopen(conf, "we");
	r = f && fputs(sb_str(&sb), f) >= 0 ? 0 : -EIO;
	if (f && fclose(f) != 0)
		r = -EIO;
	sb_free(&sb);
	if (r < 0)
		return fail_io(conf, NULL);
	/* bgpd runs as user frr and must own its directory */
	if ((r = must("chown -R frr:frr %s", dir)) < 0)
		return r;
	char *argv[] = { "/usr/lib/frr/bgpd",
			 "-f",
			 (char *)conf,
			 "-Z",
			 "-P",
			 "0",
			 "--vty_socket",
			 (char *)dir,
			 "-i",
			 arena_printf(l->a, "%s/bgpd.pid", dir),
			 "--log",
			 "stdout",
			 NULL };
	if (lab_spawn(l, ns, arena_printf(l->a, "%s-bgpd", p->name), argv) < 0)
		return fail_io("starting FRR's bgpd", NULL);
	return 0;
}

/* The last "[ERROR]" line of log @path (its message part) in @out; false when none. */
static bool last_error(const char *path, struct strbuf *out)
{
	struct strbuf text = STRBUF_INIT;
	sb_init(&text);
	const char *found = NULL;
	if (sb_read_file(&text, path) == 0)
		for (const char *p = strstr(sb_str(&text), "[ERROR] "); p;
		     p = strstr(p + 1, "[ERROR] "))
			found = p + strlen("[ERROR] ");
	if (found)
		sb_add(out, found, strcspn(found, "\n"));
	sb_free(&text);
	return found != NULL;
}

/* BIRD starts once confd has written a configuration BIRD accepted (bounded). */
static int start_birds(struct lab *l)
{
	const struct lab_topology *t = l->topo;
	uint64_t deadline = now_ms() + 30000;
	for (size_t i = 0; i < t->n_nodes; i++) {
		const char *dir = arena_printf(l->a, "%s/%s", l->dir, t->nodes[i].name);
		const char *conf = arena_printf(l->a, "%s/bird.conf", dir);
		struct stat st;
		while (stat(conf, &st) < 0 || st.st_size == 0) {
			if (now_ms() > deadline) {
				const char *log = arena_printf(l->a, "%s/%s-confd.log", l->dir,
							       t->nodes[i].name);
				struct strbuf why = STRBUF_INIT;
				sb_init(&why);
				bool known = last_error(log, &why);
				ctl_error("%s: brindle-confd wrote no bird.conf within 30 s%s%s "
					  "(log: "
					  "%s)",
					  t->nodes[i].name, known ? ": " : "", sb_str(&why), log);
				sb_free(&why);
				return -ETIMEDOUT;
			}
			usleep(100000);
		}
		char *bird[] = { "bird",       "-f", "-c",
				 (char *)conf, "-s", arena_printf(l->a, "%s/bird.ctl", dir),
				 NULL };
		/* BIRD killed comes back, as the node image's supervisor or a kubelet brings it */
		if (lab_spawn_restarted(l, lab_ns_node(l->a, t->name, t->nodes[i].name),
					arena_printf(l->a, "%s-bird", t->nodes[i].name), bird) < 0)
			return fail_io("starting bird", NULL);
	}
	return 0;
}

static void add_ports_json(struct strbuf *sb, const struct lab_pod *p)
{
	sb_adds(sb, "[");
	for (size_t i = 0, k = 0; i < p->n_ports; i++) {
		if (!p->ports[i].name)
			continue;
		sb_addf(sb, "%s{\"name\":", k++ ? "," : "");
		json_write_string(sb, p->ports[i].name);
		sb_addf(sb, ",\"protocol\":\"%s\",\"port\":%u}", lab_proto_name(p->ports[i].proto),
			p->ports[i].port);
	}
	sb_adds(sb, "]");
}

/*
 * The pod's addresses from a CNI result ("ips":[{"address":"10.244.0.5/32"...}]): the first
 * one, or of a dual-stack pod "IPV4,IPV6" (what the lab's pods file records).
 */
static const char *result_ip(struct lab *l, const char *json)
{
	struct jv *doc;
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	const char *v4 = NULL, *v6 = NULL;
	if (json_parse(l->a, json, strlen(json), &doc, &err) == 0) {
		const struct jv *ips = jv_get(doc, "ips");
		for (size_t i = 0; ips && ips->type == JV_ARRAY && i < ips->arr.n; i++) {
			const char *addr = jv_as_string(jv_get(ips->arr.items[i], "address"));
			if (!addr)
				continue;
			const char *ip = arena_strndup(l->a, addr, strcspn(addr, "/"));
			if (strchr(ip, ':') && !v6)
				v6 = ip;
			else if (!strchr(ip, ':') && !v4)
				v4 = ip;
		}
	}
	sb_free(&err);
	if (v4 && v6)
		return arena_printf(l->a, "%s,%s", v4, v6);
	return v4 ? v4 : v6;
}

/*
 * The network configuration brindle-cni reads on stdin (ADD and DEL alike).
 * On etcd the pod's labels, fixed address and named ports come in its args;
 * on Kubernetes brindle-cni reads them from the Pod (lab_kube_pod_create) and
 * the configuration is the one install-cni wrote on the node (empty when
 * there is none: said).
 */
static void cni_conf(struct lab *l, struct strbuf *conf, const char *node, const struct lab_pod *p)
{
	if (l->topo->kubernetes) {
		lab_kubelet_cni_conf(l, node, conf);
		return;
	}
	sb_addf(conf,
		"{\"cniVersion\":\"1.0.0\",\"name\":\"k8s-pod-network\",\"type\":\"brindle-"
		"cni\",\"nodename\":\"%s\",\"log_file_path\":\"%s/cni.log\",\"ipam\":{\"type\":"
		"\"brindle-ipam\",\"ipam_lock_file\":\"%s/ipam.lock\"%s%s}",
		node, l->dir, l->dir, l->topo->ipv6 ? ",\"assign_ipv6\":\"true\"" : "",
		l->topo->ipv4 ? "" : ",\"assign_ipv4\":\"false\"");
	sb_addf(conf, ",\"etcd_endpoints\":\"%s\"", l->endpoints);
	if (!p) {
		sb_adds(conf, "}\n");
		return;
	}
	sb_adds(conf, ",\"args\":{\"cni\":{\"labels\":[");
	for (size_t i = 0; i < p->labels.n; i++) {
		sb_addf(conf, "%s{\"key\":", i ? "," : "");
		json_write_string(conf, p->labels.v[i].key);
		sb_adds(conf, ",\"value\":");
		json_write_string(conf, p->labels.v[i].value);
		sb_adds(conf, "}");
	}
	sb_adds(conf, "]");
	if (p->has_ip)
		sb_addf(conf, ",\"ips\":[\"%s\"]", ipstr(l->a, &p->ip));
	sb_adds(conf, "},\"brindle\":{\"ports\":");
	add_ports_json(conf, p);
	sb_adds(conf, "}}}\n");
}

/* brindle-cni as a runtime calls it, in the node's namespace. */
static int run_cni(struct lab *l, const struct lab_bins *b, const char *cmd, const char *node,
		   const char *netns, const char *ns, const char *pod, const char *conf,
		   struct strbuf *out)
{
	char *argv[] = { "env", arena_printf(l->a, "CNI_COMMAND=%s", cmd),
			 arena_printf(l->a, "CNI_CONTAINERID=%s", netns),
			 arena_printf(l->a, "CNI_NETNS=/var/run/netns/%s", netns),
			 "CNI_IFNAME=eth0",
			 arena_printf(l->a,
				      "CNI_ARGS=K8S_POD_NAMESPACE=%s;K8S_POD_NAME=%s;"
				      "K8S_POD_INFRA_CONTAINER_ID=%s",
				      ns, pod, netns),
			 arena_printf(l->a, "CNI_PATH=%s", b->cni_dir),
			 /* a dual-stack lab's felix polices IPv6 (ipv6Support, either backend);
			  * on Kubernetes install-cni's configuration says so */
			 l->topo->ipv6 && !l->topo->kubernetes ? "BRINDLE_IPV6_WITHOUT_POLICY=1"
							       : "BRINDLE_IPV6_WITHOUT_POLICY=",
			 (char *)b->cni, NULL };
	struct lab_exec x = { .ns = lab_ns_node(l->a, l->topo->name, node) };
	if (l->topo->kubernetes) {
		/* what install-cni put on the node's host, run there */
		argv[6] = "CNI_PATH=/opt/cni/bin";
		argv[8] = "/opt/cni/bin/brindle-cni";
		if (!conf[0] || !(x.view = lab_kubelet_host_view(l, node)))
			return -EIO;
	}
	return lab_run_exec(&x, argv, conf, out);
}

/* "name:PROTO:port,..." of what a pod answers on (declared ports, then serve entries). */
static const char *ports_field(struct lab *l, const struct lab_pod *p)
{
	struct strbuf sb = STRBUF_INIT;
	sb_init(&sb);
	for (size_t pass = 0; pass < 2; pass++) {
		const struct lab_port *v = pass ? p->serve : p->ports;
		size_t nv = pass ? p->n_serve : p->n_ports;
		for (size_t j = 0; j < nv; j++)
			sb_addf(&sb, "%s%s:%s:%u", sb.len ? "," : "",
				v[j].name && v[j].name[0] ? v[j].name : "-",
				lab_proto_name(v[j].proto), v[j].port);
	}
	const char *r = arena_strdup(l->a, sb.len ? sb_str(&sb) : "-");
	sb_free(&sb);
	return r;
}

int lab_pod_start(struct lab *l, const struct lab_bins *b, const struct lab_pod *p)
{
	const struct lab_topology *t = l->topo;
	const struct lab_node *n = &t->nodes[p->node];
	const char *ns = lab_ns_node(l->a, t->name, n->name), *ip;
	int r;
	if (t->kubernetes && (r = lab_kube_pod_create(l, p)) < 0)
		return r;
	if (p->host_network) {
		ip = ipstr(l->a, n->ip.family ? &n->ip : &n->ip6);
	} else {
		ns = lab_ns_pod(l->a, t->name, p->namespace, p->name);
		if ((r = lab_netns_add(l, ns)) < 0)
			return r;
		struct strbuf conf = STRBUF_INIT, out = STRBUF_INIT;
		sb_init(&conf);
		sb_init(&out);
		cni_conf(l, &conf, n->name, p);
		r = run_cni(l, b, "ADD", n->name, ns, p->namespace, p->name, sb_str(&conf), &out);
		ip = r == 0 ? result_ip(l, sb_str(&out)) : NULL;
		if (!ip)
			ctl_error("pod %s/%s: brindle-cni ADD failed (exit %d): %s", p->namespace,
				  p->name, r, sb_str(&out));
		sb_free(&conf);
		sb_free(&out);
		if (!ip)
			return -EIO;
		/*
		 * External hosts reach pods by a table of their own (an edge router's
		 * static routes); the nodes' traffic through the fabric finds no pod
		 * route, so between nodes only BGP carries pods' routes: a dead BIRD
		 * shows once graceful restart runs out.
		 */
		if (t->ipv4 && (r = must("ip -n %s route replace %.*s/32 via %s dev br%zu table %d",
					 lab_ns_fabric(l->a, t->name), (int)strcspn(ip, ","), ip,
					 ipstr(l->a, &n->ip), n->subnet, LAB_EXTERNAL_TABLE)) < 0)
			return r;
		/* (the IPv6 address: after the comma of a dual-stack pod's, or its only one) */
		const char *ip6 = strchr(ip, ',') ? strchr(ip, ',') + 1 : t->ipv4 ? NULL : ip;
		if (ip6 && n->ip6.family &&
		    (r = must("ip -n %s -6 route replace %s/128 via %s dev br%zu table %d",
			      lab_ns_fabric(l->a, t->name), ip6, ipstr(l->a, &n->ip6), n->subnet,
			      LAB_EXTERNAL_TABLE)) < 0)
			return r;
	}
	if (t->kubernetes && (r = lab_kube_pod_running(l, p, ip)) < 0)
		return r;
	size_t nargs = 2 * (p->n_ports + p->n_serve) + 3, k = 0;
	char **argv = arena_new_array(l->a, char *, nargs);
	argv[k++] = (char *)b->probe;
	argv[k++] = "serve";
	for (size_t pass = 0; pass < 2; pass++) {
		const struct lab_port *v = pass ? p->serve : p->ports;
		size_t nv = pass ? p->n_serve : p->n_ports;
		for (size_t j = 0; j < nv; j++) {
			bool dup = false;
			for (size_t m = 0; m < (pass ? p->n_ports : j); m++)
				dup |= p->ports[m].port == v[j].port &&
				       p->ports[m].proto == v[j].proto;
			if (lab_proto_skipped(v[j].proto) || dup)
				continue; /* a port twice, or no SCTP sockets in this kernel */
			argv[k++] = (char *)lab_probe_flag(v[j].proto);
			argv[k++] = arena_printf(l->a, "%u", v[j].port);
		}
	}
	if (lab_spawn(l, ns, arena_printf(l->a, "pod-%s-%s", p->namespace, p->name), argv) < 0)
		return fail_io("starting brindle-probe", NULL);
	return lab_state_append(l, "pods", "%s/%s %s %s %s %s\n", p->namespace, p->name, n->name,
				ip, ns, ports_field(l, p));
}

int lab_pod_cni_del(struct lab *l, const struct lab_bins *b, const struct lab_pod_state *ps,
		    const char *ns, const char *pod)
{
	struct strbuf conf = STRBUF_INIT, out = STRBUF_INIT;
	sb_init(&conf);
	sb_init(&out);
	cni_conf(l, &conf, ps->node, NULL);
	int r = run_cni(l, b, "DEL", ps->node, ps->netns, ns, pod, sb_str(&conf), &out);
	if (r != 0)
		ctl_error("pod %s: brindle-cni DEL failed (exit %d): %s", ps->ref, r, sb_str(&out));
	sb_free(&conf);
	sb_free(&out);
	return r == 0 ? 0 : -EIO;
}

/* BIRD's BGP sessions on a node: how many, how many Established; -1 when BIRD does not answer. */
static int bgp_sessions(struct lab *l, const char *node, int *established, struct strbuf *down)
{
	const char *sock = arena_printf(l->a, "%s/%s/bird.ctl", l->dir, node);
	char *argv[] = { "birdc", "-s", (char *)sock, "show", "protocols", NULL };
	struct strbuf out = STRBUF_INIT;
	sb_init(&out);
	int total = -1;
	*established = 0;
	if (lab_run(NULL, argv, NULL, &out) == 0) {
		total = 0;
		char *save = NULL;
		for (char *line = strtok_r(out.buf, "\n", &save); line;
		     line = strtok_r(NULL, "\n", &save)) {
			char name[128], proto[32], table[32], state[32], since[64], info[64] = "";
			if (sscanf(line, "%127s %31s %31s %31s %63s %63s", name, proto, table,
				   state, since, info) < 5 ||
			    !streq(proto, "BGP"))
				continue;
			total++;
			if (streq(info, "Established"))
				(*established)++;
			else if (down)
				sb_addf(down, " %s:%s", name, info[0] ? info : state);
		}
	}
	sb_free(&out);
	return total;
}

/* BGP sessions a node must have before it counts as up (at least; all configured must be up). */
static int expected_sessions(const struct lab_topology *t, const struct lab_node *n)
{
	int k = (int)t->n_peers; /* every node peers with every bgpPeers entry */
	for (size_t i = 0; i < t->n_nodes; i++) {
		const struct lab_node *o = &t->nodes[i];
		/* a reflector with everyone; a client with the reflectors, and in a mesh with
		 * the other clients too */
		bool peers = o != n && (n->rr_cluster_id || o->rr_cluster_id || t->node_mesh);
		if (peers) /* one session per family both have */
			k += (n->ip.family && o->ip.family) + (n->ip6.family && o->ip6.family);
	}
	return k;
}

/* felix's readiness; when not ready, its reasons (the body of the 503) in @why. */
static bool felix_ready(struct lab *l, const char *node, struct strbuf *why)
{
	char *argv[] = { "curl",
			 "-s",
			 "-w",
			 "\n%{http_code}",
			 "--max-time",
			 "1",
			 "http://localhost:9099/readiness",
			 NULL };
	struct strbuf out = STRBUF_INIT;
	sb_init(&out);
	int r = lab_run(lab_ns_node(l->a, l->topo->name, node), argv, NULL, &out);
	const char *body = sb_str(&out);
	const char *code = strrchr(body, '\n');
	bool ready = r == 0 && code && streq(code + 1, "200");
	sb_reset(why);
	if (!ready && code && code > body) {
		/* "datastore: ...\ndataplane: ...": one line, for the report */
		for (const char *p = body; p < code; p++)
			sb_addc(why, *p == '\n' ? ';' : *p);
		while (why->len && (why->buf[why->len - 1] == ';' || why->buf[why->len - 1] == ' '))
			sb_truncate(why, why->len - 1);
	}
	sb_free(&out);
	return ready;
}

bool lab_pod_serving(struct lab *l, const struct lab_bins *b, const struct lab_pod_state *ps)
{
	for (size_t j = 0; j < ps->n_ports; j++) {
		if (lab_proto_skipped(ps->ports[j].proto))
			continue;
		char port[8];
		snprintf(port, sizeof(port), "%u", ps->ports[j].port);
		char *argv[] = { (char *)b->probe,
				 (char *)lab_probe_cmd(ps->ports[j].proto),
				 (char *)ps->ip,
				 port,
				 "--timeout",
				 "300",
				 NULL };
		if (lab_run(ps->netns, argv, NULL, NULL) != 0)
			return false;
	}
	return true;
}

/* Until every node is ready and every pod serves, at most @secs; else say what is not. */
static int wait_ready(struct lab *l, const struct lab_bins *b, int secs)
{
	const struct lab_topology *t = l->topo;
	struct lab_pod_state *pods;
	size_t npods;
	if (lab_read_pods(l, &pods, &npods) < 0)
		return -EIO;
	uint64_t deadline = now_ms() + (uint64_t)secs * 1000;
	struct strbuf why = STRBUF_INIT;
	sb_init(&why);
	for (;;) {
		sb_reset(&why);
		for (size_t i = 0; i < t->n_nodes; i++) {
			const struct lab_node *n = &t->nodes[i];
			struct strbuf fwhy = STRBUF_INIT;
			sb_init(&fwhy);
			if (!felix_ready(l, n->name, &fwhy))
				sb_addf(&why, "  node %s: felix not ready%s%s\n", n->name,
					fwhy.len ? ": " : " (no answer on :9099)", sb_str(&fwhy));
			sb_free(&fwhy);
			struct strbuf down = STRBUF_INIT;
			sb_init(&down);
			int est, total = bgp_sessions(l, n->name, &est, &down);
			int want = expected_sessions(t, n);
			if (total < 0)
				sb_addf(&why, "  node %s: BIRD does not answer\n", n->name);
			else if (total < want || est < total)
				sb_addf(&why, "  node %s: %d of %d BGP sessions Established%s\n",
					n->name, est, MAX(total, want), sb_str(&down));
			sb_free(&down);
		}
		for (size_t j = 0; j < npods && !why.len; j++)
			if (!lab_pod_serving(l, b, &pods[j]))
				sb_addf(&why, "  pod %s: not serving on all its ports\n",
					pods[j].ref);
		if (!why.len)
			break;
		if (now_ms() > deadline) {
			ctl_error("lab %s not ready after %d s:\n%s", t->name, secs, sb_str(&why));
			sb_free(&why);
			return -ETIMEDOUT;
		}
		usleep(250000);
	}
	sb_free(&why);
	return 0;
}

static int build(struct lab *l, const char *file, const char *text, int timeout)
{
	const struct lab_topology *t = l->topo;
	struct lab_bins b;
	lab_find_bins(l->a, &b);
	const char *copy = arena_printf(l->a, "%s/topology.yaml", l->dir);
	FILE *f = fopen(copy, "we");
	if (!f || fputs(text, f) < 0 || fclose(f) != 0)
		return fail_io(copy, NULL);
	int r;
	if (t->kubernetes) {
		/* the API server listens in the fabric: the fabric first */
		if ((r = build_fabric(l)) < 0 || (r = lab_kube_up(l)) < 0 ||
		    (r = write_resources(l)) < 0)
			return r;
	} else if ((r = start_etcd(l)) < 0 || (r = write_resources(l)) < 0 ||
		   (r = build_fabric(l)) < 0) {
		return r;
	}
	/* where the views of a lab on Kubernetes are built (lab_view.c) */
	const char *root = arena_printf(l->a, "%s/root", l->dir);
	if (t->kubernetes && mkdir(root, 0755) < 0)
		return fail_io(root, NULL);
	for (size_t i = 0; i < t->n_nodes; i++)
		if ((r = start_node(l, &b, i)) < 0)
			return r;
	if (t->kubernetes && (r = lab_kubelet_controllers(l, &b)) < 0)
		return r;
	for (size_t i = 0; i < t->n_externals; i++)
		if ((r = start_external(l, &b, i)) < 0)
			return r;
	for (size_t i = 0; i < t->n_peers; i++)
		if ((r = start_peer(l, i)) < 0)
			return r;
	/* on Kubernetes BIRD is a container of the DaemonSet */
	if (!t->kubernetes && (r = start_birds(l)) < 0)
		return r;
	for (size_t i = 0; i < t->n_pods; i++)
		if ((r = lab_pod_start(l, &b, &t->pods[i])) < 0)
			return r;
	(void)file;
	return wait_ready(l, &b, timeout);
}

enum {
	UP_TIMEOUT,
	UP_KEEP
};
const struct ctl_flag lab_up_flags[] = {
	[UP_TIMEOUT] = { "--timeout", NULL, "SECONDS",
			 "wait this long for every node and pod to be ready (default 60)" },
	[UP_KEEP] = { "--keep-on-failure", NULL, NULL,
		      "leave a lab that failed to come up in place, to look at it" },
	{ 0 },
};

int lab_cmd_up(struct ctl *c, int argc, char **argv)
{
	int timeout = 60;
	struct ctl_parsed p;
	int pr = ctl_parse("lab up", lab_up_flags, argc, argv, 1, &p);
	const char *v = p.value[UP_TIMEOUT], *file = p.n_pos ? p.pos[0] : NULL;
	bool keep = p.value[UP_KEEP] != NULL;
	if (pr == CTL_OK && v && ((timeout = atoi(v)) <= 0 || timeout > 3600)) {
		ctl_error("--timeout: \"%s\" is not a number of seconds (1-3600)", v);
		pr = CTL_USAGE;
	}
	if (pr == CTL_OK && p.n_pos > 1) {
		ctl_error("lab up: one topology file only");
		pr = CTL_USAGE;
	}
	ctl_parsed_free(&p);
	if (pr != CTL_OK)
		return pr;
	if (!file) {
		ctl_error("usage: brindlectl lab up FILE [--timeout SECONDS] [--keep-on-failure]");
		return CTL_USAGE;
	}
	struct strbuf text = STRBUF_INIT, err = STRBUF_INIT;
	sb_init(&text);
	sb_init(&err);
	struct arena *pa = arena_new();
	struct lab_topology *t;
	int r = sb_read_file(&text, file);
	if (r < 0) {
		ctl_error("%s: %s", file, strerror(-r));
		goto bad;
	}
	if (lab_topology_parse(pa, file, text.buf, text.len, &t, &err) < 0) {
		fprintf(stderr, "%s", sb_str(&err));
		ctl_error("%s is not a valid topology; nothing was built", file);
		goto bad;
	}
	for (size_t i = 0; i < t->n_peers; i++)
		if (!streq(t->peers[i].kind, "frr")) {
			ctl_error("%s: bgpPeers[%zu].kind: \"%s\" is not implemented yet (frr is); "
				  "nothing was built",
				  file, i, t->peers[i].kind);
			goto bad;
		}
	struct lab l;
	lab_init(&l, t->name);
	l.topo = t;
	if (mkdir(lab_state_base(), 0755) < 0 && errno != EEXIST) {
		ctl_error("%s: %s", lab_state_base(), strerror(errno));
		lab_free(&l);
		goto bad;
	}
	if (mkdir(l.dir, 0755) < 0) {
		if (errno == EEXIST)
			ctl_error("lab \"%s\" is already up (state in %s); nothing was changed "
				  "(brindlectl lab down %s removes it)",
				  t->name, l.dir, t->name);
		else
			ctl_error("%s: %s", l.dir, strerror(errno));
		lab_free(&l);
		goto bad;
	}
	r = build(&l, file, sb_str(&text), timeout);
	if (r < 0) {
		if (keep) {
			fprintf(stderr, "kept for debugging: logs in %s; brindlectl lab down %s\n",
				l.dir, t->name);
		} else {
			fprintf(stderr, "removing the lab (--keep-on-failure keeps it)\n");
			lab_teardown(&l);
		}
	} else {
		printf("lab %s is up: %zu nodes, %zu pods (state in %s)\n", t->name, t->n_nodes,
		       t->n_pods, l.dir);
	}
	lab_free(&l);
	arena_free(pa);
	sb_free(&text);
	sb_free(&err);
	return r < 0 ? CTL_FAIL : CTL_OK;
bad:
	arena_free(pa);
	sb_free(&text);
	sb_free(&err);
	return CTL_FAIL;
}

static int one_name(int argc, char **argv, const char *usage, const char **name)
{
	if (argc != 2 || argv[1][0] == '-') {
		ctl_error("usage: brindlectl lab %s", usage);
		return CTL_USAGE;
	}
	if (!lab_name_valid(argv[1])) {
		ctl_error("\"%s\" is not a lab name", argv[1]);
		return CTL_USAGE;
	}
	*name = argv[1];
	return CTL_OK;
}

int lab_cmd_down(struct ctl *c, int argc, char **argv)
{
	const char *name;
	int r = one_name(argc, argv, "down NAME", &name);
	if (r != CTL_OK)
		return r;
	struct lab l;
	lab_init(&l, name);
	struct stat st;
	if (stat(l.dir, &st) < 0) {
		ctl_error("no lab \"%s\" on this machine (nothing in %s)", name, l.dir);
		lab_free(&l);
		return CTL_FAIL;
	}
	lab_teardown(&l);
	r = stat(l.dir, &st) == 0 ? CTL_FAIL : CTL_OK;
	if (r == CTL_OK)
		printf("lab %s is down\n", name);
	else
		ctl_error("could not remove %s", l.dir);
	lab_free(&l);
	return r;
}

int lab_cmd_status(struct ctl *c, int argc, char **argv)
{
	const char *name;
	int r = one_name(argc, argv, "status NAME", &name);
	if (r != CTL_OK)
		return r;
	struct lab l;
	lab_init(&l, name);
	if (lab_load(&l) < 0) {
		lab_free(&l);
		return CTL_FAIL;
	}
	const struct lab_topology *t = l.topo;
	bool all = true;
	printf("%-16s %-16s %-10s %s\n", "NODE", "ADDRESS", "FELIX", "BGP SESSIONS");
	for (size_t i = 0; i < t->n_nodes; i++) {
		const struct lab_node *n = &t->nodes[i];
		struct strbuf down = STRBUF_INIT;
		sb_init(&down);
		int est, total = bgp_sessions(&l, n->name, &est, &down);
		struct strbuf fwhy = STRBUF_INIT;
		sb_init(&fwhy);
		bool ready = felix_ready(&l, n->name, &fwhy);
		all &= ready && total >= expected_sessions(t, n) && est == total;
		char sessions[64];
		if (total < 0)
			snprintf(sessions, sizeof(sessions), "BIRD does not answer");
		else
			snprintf(sessions, sizeof(sessions), "%d/%d Established", est, total);
		printf("%-16s %-16s %-10s %s%s\n", n->name,
		       ipstr(l.a, n->ip.family ? &n->ip : &n->ip6), ready ? "ready" : "not ready",
		       sessions, sb_str(&down));
		if (fwhy.len)
			printf("%-16s felix: %s\n", "", sb_str(&fwhy));
		sb_free(&fwhy);
		sb_free(&down);
	}
	struct lab_pod_state *pods;
	size_t npods;
	if (lab_read_pods(&l, &pods, &npods) == 0 && npods) {
		printf("\n%-24s %-16s %s\n", "POD", "IP", "NODE");
		for (size_t i = 0; i < npods; i++)
			printf("%-24s %-16s %s%s%s\n", pods[i].ref, pods[i].ip, pods[i].node,
			       pods[i].ip6 ? "  " : "", pods[i].ip6 ? pods[i].ip6 : "");
	}
	/* how to reach the lab's datastore with brindlectl itself */
	if (t->kubernetes)
		printf("\nDatastore: kubernetes; its API server listens in the fabric namespace:\n"
		       "  ip netns exec %s env BRINDLE_DATASTORE_TYPE=kubernetes "
		       "KUBECONFIG=%s brindlectl ...\n",
		       lab_ns_fabric(l.a, t->name), lab_kubeconfig(&l, "brindlectl"));
	else
		printf("\nDatastore: BRINDLE_ETCD_ENDPOINTS=%s\n", l.endpoints);
	lab_free(&l);
	return all ? CTL_OK : CTL_FAIL;
}
