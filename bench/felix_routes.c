/*
 * felix's route programming, measured in a network namespace of its own:
 *
 *  1. Cold start: 10,000 pod routes over 500 workload interfaces, one
 *     endpoint per interface with 20 addresses. felix's calculation and its
 *     whole apply (read-back, plan, write, interface settings) next to the
 *     baselines that program the same routes and nothing else: one bare
 *     libmnl batch, and `ip -batch`. Goal: calculation + apply <= 1.5x the
 *     libmnl batch. For comparison with earlier figures, the calculation of
 *     10,000 endpoints of one address each (on as many interface names; not
 *     applied).
 *  2. One endpoint added with N routes already programmed: calc update plus
 *     apply, for N = 1,000 and 10,000 (the goal is < 5 ms, independent of N).
 *
 * Both families, alternating run by run: IPv4 (10.244.0.0/16, /32 routes) and
 * IPv6 (fd00:244::/96, /128 routes, felix with ipv6Support: the interfaces'
 * IPv6 settings too), and IPv6 against IPv4 (the IPv6 issue's goal: within
 * 1.2x). Each figure is the median of 5 runs; ratios are to the libmnl batch
 * of the same family and run. Run: sudo build/release/bench/bench_felix_routes
 */
#include "calc/calc.h"
#include "dataplane/dataplane.h"

#include <brindle/sys/log.h>
#include <brindle/sys/nl.h>
#include <brindle/sys/sysctl.h>
#include <brindle/sys/clock.h>

#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/rtnetlink.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define IFACES 500
#define ROUTES 10000
#define RUNS   5
/* Addresses per endpoint: ROUTES / IFACES, so each interface has one endpoint, as the CNI
 * plugin makes them. */
#define ADDRS (ROUTES / IFACES)

static double ms_since(uint64_t t0)
{
	return (double)(now_ns() - t0) / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, size_t n)
{
	qsort(v, n, sizeof(double), cmp_double);
	return v[n / 2];
}

static void sh(const char *cmd)
{
	if (system(cmd) != 0) {
		fprintf(stderr, "failed: %s\n", cmd);
		exit(1);
	}
}

static int ifindex_base;
/* The family under way: AF_INET or AF_INET6. */
static int af = AF_INET;

static void make_interfaces(void)
{
	FILE *f = fopen("/tmp/bench-links", "w");
	for (int i = 0; i < IFACES; i++)
		fprintf(f,
			"link add cali%011d type veth peer name peer%d\nlink set cali%011d up\n"
			"link set peer%d up\n",
			i, i, i, i);
	fclose(f);
	sh("ip -batch /tmp/bench-links");
	unlink("/tmp/bench-links");
	char name[32];
	snprintf(name, sizeof(name), "cali%011d", 0);
	ifindex_base = (int)if_nametoindex(name);
}

static struct br_ip pod_ip(int i)
{
	if (af == AF_INET)
		return ip4_from_u32(0x0af40000u + (uint32_t)i + 1); /* 10.244.0.1 + i */
	struct br_ip ip = { .family = AF_INET6, .a = { 0xfd, 0x00, 0x02, 0x44 } };
	uint32_t v = (uint32_t)i + 1; /* fd00:244::1 + i */
	for (int b = 0; b < 4; b++)
		ip.a[12 + b] = (uint8_t)(v >> (24 - 8 * b));
	return ip;
}

static unsigned host_len(void)
{
	return af == AF_INET6 ? 128 : 32;
}

static int iface_of(int i)
{
	return i % IFACES;
}

static void flush_routes(void)
{
	sh("ip -4 route flush proto 80 && ip -6 route flush proto 80");
}

/* Baseline 1: the same routes as one libmnl batch, nothing else. */
static double bare_mnl(void)
{
	struct mnl_socket *s = mnl_socket_open(NETLINK_ROUTE);
	mnl_socket_bind(s, 0, MNL_SOCKET_AUTOPID);
	int rcv = 8 << 20;
	setsockopt(mnl_socket_get_fd(s), SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv));
	static char buf[64 * 1024];
	char ifname[32];
	int oif[IFACES];
	for (int i = 0; i < IFACES; i++) {
		snprintf(ifname, sizeof(ifname), "cali%011d", i);
		oif[i] = (int)if_nametoindex(ifname);
	}
	uint64_t t0 = now_ns();
	uint32_t seq = 1;
	int i = 0;
	while (i < ROUTES) {
		struct mnl_nlmsg_batch *b = mnl_nlmsg_batch_start(buf, sizeof(buf));
		int sent = 0;
		/* Whole messages only: stop while there is surely room for one more. */
		for (; i < ROUTES && mnl_nlmsg_batch_size(b) + 256 < sizeof(buf); i++) {
			struct nlmsghdr *h = mnl_nlmsg_put_header(mnl_nlmsg_batch_current(b));
			h->nlmsg_type = RTM_NEWROUTE;
			h->nlmsg_flags = NLM_F_REQUEST | NLM_F_CREATE | NLM_F_REPLACE | NLM_F_ACK;
			h->nlmsg_seq = seq++;
			struct rtmsg *r = mnl_nlmsg_put_extra_header(h, sizeof(*r));
			r->rtm_family = (unsigned char)af;
			r->rtm_dst_len = (unsigned char)host_len();
			r->rtm_table = RT_TABLE_MAIN;
			r->rtm_protocol = 80;
			/* as felix writes them: IPv6 routes have no link scope */
			r->rtm_scope = af == AF_INET6 ? RT_SCOPE_UNIVERSE : RT_SCOPE_LINK;
			r->rtm_type = RTN_UNICAST;
			struct br_ip ip = pod_ip(i);
			mnl_attr_put(h, RTA_DST, host_len() / 8, ip.a);
			mnl_attr_put_u32(h, RTA_OIF, (uint32_t)oif[iface_of(i)]);
			sent++;
			mnl_nlmsg_batch_next(b);
		}
		mnl_socket_sendto(s, mnl_nlmsg_batch_head(b), mnl_nlmsg_batch_size(b));
		mnl_nlmsg_batch_stop(b);
		static char rbuf[256 * 1024];
		while (sent > 0) {
			ssize_t n = mnl_socket_recvfrom(s, rbuf, sizeof(rbuf));
			int left = (int)n;
			for (struct nlmsghdr *h = (struct nlmsghdr *)rbuf; mnl_nlmsg_ok(h, left);
			     h = mnl_nlmsg_next(h, &left))
				sent -= h->nlmsg_type == NLMSG_ERROR;
		}
	}
	double ms = ms_since(t0);
	mnl_socket_close(s);
	return ms;
}

/* Baseline 2: `ip -batch`, as an operator's script would. */
static double ip_batch(void)
{
	FILE *f = fopen("/tmp/bench-routes", "w");
	for (int i = 0; i < ROUTES; i++) {
		char ip[IP_STRLEN];
		struct br_ip a = pod_ip(i);
		fprintf(f, "route replace %s/%u dev cali%011d proto 80%s\n", ip_str(&a, ip),
			host_len(), iface_of(i), af == AF_INET6 ? "" : " scope link");
	}
	fclose(f);
	uint64_t t0 = now_ns();
	sh("ip -batch /tmp/bench-routes");
	double ms = ms_since(t0);
	unlink("/tmp/bench-routes");
	return ms;
}

/* Endpoint @e: pod<e> on interface @ifname, with @n addresses: pod_ip(e + IFACES * k). */
static struct br_object *make_wep_on(int e, const char *ifname, int n)
{
	char name[64], net[CIDR_STRLEN], ipbuf[IP_STRLEN];
	snprintf(name, sizeof(name), "pod%d", e);
	struct br_object *o = model_new(model_kind(KIND_WORKLOADENDPOINT), "default", name);
	struct br_workloadendpoint *w = (struct br_workloadendpoint *)o;
	w->spec.node = arena_strdup(o->arena, "node1");
	w->spec.interface_name = arena_strdup(o->arena, ifname);
	w->spec.ip_networks = arena_alloc(o->arena, sizeof(char *) * (size_t)n);
	for (int k = 0; k < n; k++) {
		struct br_ip a = pod_ip(e + IFACES * k);
		snprintf(net, sizeof(net), "%s/%u", ip_str(&a, ipbuf), host_len());
		w->spec.ip_networks[k] = arena_strdup(o->arena, net);
	}
	w->spec.n_ip_networks = (size_t)n;
	return o;
}

static void put(struct calc *c, struct br_object *o)
{
	struct ds_update u = {
		.kind = o->kind, .scope = "default", .name = o->meta.name, .obj = o
	};
	calc_update(c, &u);
}

/*
 * Endpoints [0, @n), one per interface (the routes pod_ip(0 .. n * ADDRS)),
 * built first; returns the time felix took to take them.
 */
static double feed(struct calc *c, int n)
{
	struct br_object **objs = xcalloc((size_t)n, sizeof(*objs));
	for (int e = 0; e < n; e++) {
		char iface[16];
		snprintf(iface, sizeof(iface), "cali%011d", e % IFACES);
		objs[e] = make_wep_on(e, iface, ADDRS);
	}
	uint64_t t0 = now_ns();
	for (int e = 0; e < n; e++)
		put(c, objs[e]);
	double ms = ms_since(t0);
	free(objs);
	return ms;
}

struct felix_times {
	double calc, apply, sysctl_part;
};

static struct felix_times felix_cold(void)
{
	struct felix_times t = { 0 };
	struct nl *nl;
	if (nl_open_kernel(&nl) < 0)
		exit(1);
	struct sysctl *sys = sysctl_open_kernel();
	struct felix_config cfg;
	felix_config_defaults(&cfg);
	cfg.ipv6_support = af == AF_INET6;
	struct calc *c = calc_new("node1", false); /* routes only: no policy core for IPv6 */
	calc_set_config(c, &cfg);
	t.calc = feed(c, IFACES);
	struct dp_backends b = { .nl = nl, .sys = sys };
	struct dataplane *dp = dataplane_new(&b);
	uint64_t t0 = now_ns();
	if (dataplane_apply(dp, calc_desired(c), NULL, NULL, &cfg, now_ms()) < 0 ||
	    dataplane_status(dp)->routes != ROUTES) {
		fprintf(stderr, "felix apply failed (%zu routes)\n", dataplane_status(dp)->routes);
		exit(1);
	}
	t.apply = ms_since(t0);
	/* The interface settings part of it, measured on its own. */
	t0 = now_ns();
	int changed;
	for (int i = 0; i < IFACES; i++) {
		char name[16];
		snprintf(name, sizeof(name), "cali%011d", i);
		if (sysctl_workload_iface(sys, name, af == AF_INET6, &changed) < 0)
			exit(1);
	}
	t.sysctl_part = ms_since(t0); /* already right: reads only */
	dataplane_free(dp);
	calc_free(c);
	sysctl_close(sys);
	nl_close(nl);
	return t;
}

static void reset_sysctls(void)
{
	FILE *f = fopen("/tmp/bench-sysctl", "w");
	for (int i = 0; i < IFACES; i++)
		fprintf(f,
			"net.ipv4.conf.cali%011d.proxy_arp=0\nnet.ipv6.conf.cali%011d.proxy_ndp="
			"0\n",
			i, i);
	fclose(f);
	sh("sysctl -q -p /tmp/bench-sysctl >/dev/null");
	unlink("/tmp/bench-sysctl");
}

/*
 * The calculation alone for 10,000 endpoints of one address each, on as many
 * interface names (the shape earlier versions of this benchmark measured).
 */
static double felix_calc_single(void)
{
	struct felix_config cfg;
	felix_config_defaults(&cfg);
	cfg.ipv6_support = af == AF_INET6;
	struct calc *c = calc_new("node1", false); /* routes only: no policy core for IPv6 */
	calc_set_config(c, &cfg);
	struct br_object **objs = xcalloc(ROUTES, sizeof(*objs));
	for (int e = 0; e < ROUTES; e++) {
		char iface[16];
		snprintf(iface, sizeof(iface), "cali%011d", e);
		objs[e] = make_wep_on(e, iface, 1);
	}
	uint64_t t0 = now_ns();
	for (int e = 0; e < ROUTES; e++)
		put(c, objs[e]);
	double ms = ms_since(t0);
	free(objs);
	calc_free(c);
	return ms;
}

/* One endpoint more with @n routes programmed: calc update + apply, median of RUNS. */
static double felix_add_one(int n)
{
	struct nl *nl;
	if (nl_open_kernel(&nl) < 0)
		exit(1);
	struct sysctl *sys = sysctl_open_kernel();
	struct felix_config cfg;
	felix_config_defaults(&cfg);
	cfg.ipv6_support = af == AF_INET6;
	struct calc *c = calc_new("node1", false); /* routes only: no policy core for IPv6 */
	calc_set_config(c, &cfg);
	feed(c, n / ADDRS);
	struct dp_backends b = { .nl = nl, .sys = sys };
	struct dataplane *dp = dataplane_new(&b);
	if (dataplane_apply(dp, calc_desired(c), NULL, NULL, &cfg, now_ms()) < 0)
		exit(1);
	double v[RUNS];
	for (int r = 0; r < RUNS; r++) {
		/* A new pod brings a new veth (made by the CNI plugin before the endpoint
		 * reaches felix; announced by the link monitor): not timed. */
		char iface[16], cmd[128];
		snprintf(iface, sizeof(iface), "calinew%05d", r);
		snprintf(cmd, sizeof(cmd),
			 "ip link add %s type veth peer name pnew%d && ip link set %s up", iface, r,
			 iface);
		sh(cmd);
		struct nl_link_list links = { 0 };
		if (nl_dump_links(nl, &links) < 0)
			exit(1);
		dataplane_on_link(dp, nl_link_by_name(&links, iface), false);
		nl_link_list_free(&links);
		/* one address, beyond every other endpoint's */
		struct br_object *o = make_wep_on(ROUTES + r, iface, 1);
		uint64_t t0 = now_ns();
		put(c, o);
		if (dataplane_apply(dp, calc_desired(c), NULL, NULL, &cfg, now_ms()) < 0)
			exit(1);
		v[r] = ms_since(t0);
	}
	if (dataplane_status(dp)->routes != (size_t)(n + RUNS))
		exit(1);
	dataplane_free(dp);
	calc_free(c);
	sysctl_close(sys);
	nl_close(nl);
	flush_routes();
	for (int r = 0; r < RUNS; r++) {
		char cmd[64];
		snprintf(cmd, sizeof(cmd), "ip link del calinew%05d", r);
		sh(cmd);
	}
	return median(v, RUNS);
}

struct figures {
	double mnl[RUNS], ipb[RUNS], fcalc[RUNS], fapply[RUNS], fsys[RUNS], ftotal[RUNS];
	double fsingle[RUNS];
	double m, ft, add[2];
};

static void cold_run(int r, struct figures *g)
{
	g->mnl[r] = bare_mnl();
	flush_routes();
	g->ipb[r] = ip_batch();
	flush_routes();
	reset_sysctls();
	struct felix_times t = felix_cold();
	g->fcalc[r] = t.calc;
	g->fapply[r] = t.apply;
	g->fsys[r] = t.sysctl_part;
	g->ftotal[r] = t.calc + t.apply;
	flush_routes();
	g->fsingle[r] = felix_calc_single();
}

static void report(const char *family, struct figures *g)
{
	double m = median(g->mnl, RUNS), ib = median(g->ipb, RUNS), fa = median(g->fapply, RUNS);
	double ft = median(g->ftotal, RUNS);
	g->m = m;
	g->ft = ft;
	printf("%s cold start: %d routes over %d interfaces (median of %d)\n", family, ROUTES,
	       IFACES, RUNS);
	printf("  %-44s %8.1f ms  1.00x\n", "bare libmnl batch (baseline)", m);
	printf("  %-44s %8.1f ms  %.2fx\n", "ip -batch", ib, ib / m);
	printf("  %-44s %8.1f ms  %.2fx\n", "felix apply (read-back, plan, write, settings)", fa,
	       fa / m);
	printf("  %-44s %8.1f ms\n", "  of which: settings of 500 interfaces, re-read",
	       median(g->fsys, RUNS));
	printf("  %-44s %8.1f ms\n", "felix calc of 500 endpoints (before apply)",
	       median(g->fcalc, RUNS));
	printf("  %-44s %8.1f ms  %.2fx  (goal <= 1.5x)\n", "felix calc + apply", ft, ft / m);
	printf("  %-44s %8.1f ms\n", "felix calc of 10,000 one-address endpoints",
	       median(g->fsingle, RUNS));
	printf("One endpoint added on a new interface, time to route programmed and interface\n"
	       "settings written (calc + apply; median of %d)\n",
	       RUNS);
	int ns[] = { 1000, 10000 };
	for (size_t i = 0; i < ARRAY_SIZE(ns); i++) {
		g->add[i] = felix_add_one(ns[i]);
		printf("  with %5d present: %.3f ms\n", ns[i], g->add[i]);
	}
	printf("\n");
}

int main(void)
{
	if (unshare(CLONE_NEWNET) < 0) {
		perror("unshare (run as root)");
		return 1;
	}
	log_init("bench", LOG_WARNING, LOG_TEXT, 2);
	sh("ip link set lo up");
	make_interfaces();
	const char *fam = getenv("BENCH_FAMILY"); /* 4, 6, or both (unset) */
	bool v4 = !fam || strcmp(fam, "6") != 0, v6 = !fam || strcmp(fam, "4") != 0;
	static struct figures g4, g6;
	/* the families run by run, alternating, so that a slow minute falls on both */
	for (int r = 0; r < RUNS; r++) {
		if (v4) {
			af = AF_INET;
			cold_run(r, &g4);
		}
		if (v6) {
			af = AF_INET6;
			cold_run(r, &g6);
		}
	}
	if (v4) {
		af = AF_INET;
		report("IPv4", &g4);
	}
	if (v6) {
		af = AF_INET6;
		report("IPv6", &g6);
	}
	if (!v4 || !v6)
		return 0;
	printf("IPv6 against IPv4, same run (goal: within 1.2x)\n");
	printf("  %-44s %8.2fx\n", "cold start, felix calc + apply", g6.ft / g4.ft);
	printf("  %-44s %8.2fx\n", "  (the bare libmnl batches)", g6.m / g4.m);
	printf("  %-44s %8.2fx\n", "one endpoint added, 10,000 present", g6.add[1] / g4.add[1]);
	return 0;
}
