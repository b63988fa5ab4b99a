/*
 * The pod's side of the dataplane contract (docs/architecture.md), written
 * through our rtnetlink layer: a veth whose host end (caliX, MAC
 * ee:ee:ee:ee:ee:ee, proxy ARP) answers for 169.254.1.1, the pod end in the
 * container's namespace with the /32 and the routes, and the host's
 * "<ip>/32 dev caliX scope link" route with protocol 80, which felix
 * recognises as ours. The plugin runs in the host namespace (whatever
 * namespace the runtime runs it in); the container's is reached through
 * CNI_NETNS.
 */
#include "plugin.h"

#include <brindle/nl.h>
#include <brindle/sysctl.h>

#include <errno.h>
#include <fcntl.h>
#include <linux/rtnetlink.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static const uint8_t host_mac[6] = { 0xee, 0xee, 0xee, 0xee, 0xee, 0xee };

static struct br_ip gateway(void)
{
	return ip4_from_u32(0xa9fe0101u); /* 169.254.1.1 */
}

static void mac_str(const uint8_t m[6], char out[18])
{
	snprintf(out, 18, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
}

/* Apply @b; on failure @err names the first failed message and its error. */
static int apply(struct nl *nl, struct nl_batch *b, struct strbuf *err)
{
	size_t n = nl_batch_count(b);
	int *errs = xcalloc(n ? n : 1, sizeof(*errs));
	int r = nl_apply(nl, b, errs);
	if (r < 0) {
		sb_addf(err, "netlink: %s", strerror(-r));
	} else if (r > 0) {
		for (size_t i = 0; i < n; i++)
			if (errs[i]) {
				sb_addf(err, "%s: %s", nl_batch_describe(b, i), strerror(-errs[i]));
				r = errs[i];
				break;
			}
	}
	free(errs);
	nl_batch_reset(b);
	return r;
}

/*
 * A dump the kernel interrupted (links or routes changed meanwhile, as when
 * many pods start at once) comes back as -EINTR: take it again.
 */
#define DUMP_RETRIES 20

static int dump_links(struct nl *nl, struct nl_link_list *out)
{
	int r = -EINTR;
	for (int i = 0; i < DUMP_RETRIES && r == -EINTR; i++)
		r = nl_dump_links(nl, out);
	return r;
}

static int dump_routes(struct nl *nl, const struct nl_route_filter *f, struct nl_route_list *out)
{
	int r = -EINTR;
	for (int i = 0; i < DUMP_RETRIES && r == -EINTR; i++)
		r = nl_dump_routes(nl, f, out);
	return r;
}

static int dump_addrs(struct nl *nl, struct nl_addr_list *out)
{
	int r = -EINTR;
	for (int i = 0; i < DUMP_RETRIES && r == -EINTR; i++)
		r = nl_dump_addrs(nl, AF_INET, out);
	return r;
}

static int find_link(struct nl *nl, const char *name, struct nl_link *out)
{
	struct nl_link_list links = { 0 };
	int r = dump_links(nl, &links);
	if (r < 0)
		return r;
	const struct nl_link *l = nl_link_by_name(&links, name);
	r = l ? 0 : -ENODEV;
	if (l)
		*out = *l;
	nl_link_list_free(&links);
	return r;
}

static int del_link(struct nl *nl, const char *name, struct strbuf *err)
{
	struct nl_link l;
	int r = find_link(nl, name, &l);
	if (r == -ENODEV)
		return 0;
	if (r < 0) {
		sb_addf(err, "listing links: %s", strerror(-r));
		return r;
	}
	struct nl_batch *b = nl_batch_new();
	struct nl_link del;
	nl_link_init(&del);
	del.ifindex = l.ifindex;
	nl_batch_link(b, NL_DEL, &del);
	r = apply(nl, b, err);
	nl_batch_free(b);
	return r == -ENODEV ? 0 : r;
}

static struct nl_route host_route(const struct br_ip *ip, int oif)
{
	struct nl_route r = { .family = AF_INET,
			      .protocol = NL_PROTO_BRINDLE,
			      .scope = RT_SCOPE_LINK,
			      .type = RTN_UNICAST,
			      .table = RT_TABLE_MAIN,
			      .oif = oif };
	r.dst.ip = *ip;
	r.dst.len = (uint8_t)ip_bits(ip);
	return r;
}

/* The route for @dst in the main table, if any. */
static int find_route(struct nl *nl, const struct br_cidr *dst, uint8_t protocol,
		      struct nl_route *out)
{
	struct nl_route_list routes = { 0 };
	struct nl_route_filter f = { .family = AF_INET,
				     .table = RT_TABLE_MAIN,
				     .protocol = protocol };
	int r = dump_routes(nl, &f, &routes);
	if (r < 0)
		return r;
	r = -ENOENT;
	for (size_t i = 0; i < routes.n; i++)
		if (cidr_cmp(&routes.v[i].dst, dst) == 0) {
			*out = routes.v[i];
			r = 0;
			break;
		}
	nl_route_list_free(&routes);
	return r;
}

static int pod_side(struct nl *pod, const struct dp_spec *s, char pod_mac[18], struct strbuf *err)
{
	struct nl_link l;
	int r = find_link(pod, s->ifname, &l);
	if (r < 0) {
		sb_addf(err, "%s did not appear in %s: %s", s->ifname, s->netns, strerror(-r));
		return r;
	}
	mac_str(l.mac, pod_mac);
	struct nl_batch *b = nl_batch_new();
	struct nl_link up;
	nl_link_init(&up);
	up.ifindex = l.ifindex;
	up.flags = IFF_UP;
	up.mtu = s->mtu;
	nl_batch_link(b, NL_SET, &up);
	for (size_t i = 0; i < s->n_ips; i++) {
		struct nl_addr a = { .ifindex = l.ifindex, .scope = RT_SCOPE_UNIVERSE };
		a.addr.ip = s->ips[i];
		a.addr.len = (uint8_t)ip_bits(&s->ips[i]);
		nl_batch_addr(b, NL_ADD, &a);
	}
	struct nl_route gw = { .family = AF_INET,
			       .protocol = RTPROT_BOOT,
			       .scope = RT_SCOPE_LINK,
			       .type = RTN_UNICAST,
			       .table = RT_TABLE_MAIN,
			       .oif = l.ifindex };
	gw.dst.ip = gateway();
	gw.dst.len = 32;
	nl_batch_route(b, NL_REPLACE, &gw);
	struct nl_route def = { .family = AF_INET,
				.protocol = RTPROT_BOOT,
				.scope = RT_SCOPE_UNIVERSE,
				.type = RTN_UNICAST,
				.table = RT_TABLE_MAIN,
				.oif = l.ifindex,
				.gw = gateway(),
				.onlink = true };
	def.dst.ip = ip4_from_u32(0);
	def.dst.len = 0;
	nl_batch_route(b, NL_REPLACE, &def);
	r = apply(pod, b, err);
	nl_batch_free(b);
	return r;
}

static int host_routes(struct nl *host, const struct dp_spec *s, int oif, struct strbuf *err)
{
	struct nl_batch *b = nl_batch_new();
	int r = 0;
	for (size_t i = 0; i < s->n_ips && r == 0; i++) {
		struct nl_route want = host_route(&s->ips[i], oif);
		nl_batch_route(b, NL_ADD, &want);
		struct strbuf why = STRBUF_INIT;
		sb_init(&why);
		r = apply(host, b, &why);
		if (r == -EEXIST) {
			/* Fine if it already leads to this pod; never take another's. */
			struct nl_route have;
			if (find_route(host, &want.dst, 0, &have) == 0 && have.oif == oif &&
			    have.gw.family == 0) {
				r = 0;
			} else {
				char c[CIDR_STRLEN];
				sb_addf(err,
					"a route for %s already exists on another interface "
					"(#%d); the address is in use on this host",
					cidr_str(&want.dst, c), have.oif);
			}
		} else if (r < 0) {
			sb_adds(err, sb_str(&why));
		}
		sb_free(&why);
	}
	nl_batch_free(b);
	return r;
}

int dp_setup(const struct dp_spec *s, char pod_mac[18], struct strbuf *err)
{
	struct nl *host = NULL, *pod = NULL;
	int nsfd = open(s->netns, O_RDONLY | O_CLOEXEC);
	if (nsfd < 0) {
		int e = errno;
		sb_addf(err, "cannot open the container's namespace %s: %s", s->netns, strerror(e));
		return -e;
	}
	int r = nl_open_kernel(&host);
	if (r == 0)
		r = nl_open_kernel_netns(s->netns, &pod);
	if (r < 0) {
		sb_addf(err, "netlink: %s", strerror(-r));
		goto out;
	}
	struct nl_link existing;
	if (find_link(pod, s->ifname, &existing) == 0) {
		sb_addf(err, "the container already has an interface %s", s->ifname);
		r = -EEXIST;
		goto out;
	}
	/* A previous sandbox of the same pod leaves a host interface of the same name. */
	if ((r = del_link(host, s->host_if, err)) < 0)
		goto out;

	struct nl_batch *b = nl_batch_new();
	struct nl_link veth;
	nl_link_init(&veth);
	snprintf(veth.name, sizeof(veth.name), "%s", s->host_if);
	snprintf(veth.kind, sizeof(veth.kind), "veth");
	snprintf(veth.peer_name, sizeof(veth.peer_name), "%s", s->ifname);
	veth.peer_netns_fd = nsfd;
	veth.mtu = s->mtu;
	memcpy(veth.mac, host_mac, 6);
	veth.has_mac = true;
	nl_batch_link(b, NL_ADD, &veth);
	r = apply(host, b, err);
	nl_batch_free(b);
	if (r < 0)
		goto out;

	struct nl_link hl;
	r = find_link(host, s->host_if, &hl);
	if (r == 0 && memcmp(hl.mac, host_mac, 6) != 0) {
		sb_addf(err, "%s did not take MAC %s", s->host_if, CNI_HOST_MAC);
		r = -EIO;
	}
	if (r < 0)
		goto undo;
	struct sysctl *sc = sysctl_open_kernel();
	int changed = 0;
	r = sysctl_workload_iface(sc, s->host_if, &changed);
	sysctl_close(sc);
	if (r < 0) {
		sb_addf(err, "sysctls of %s: %s", s->host_if, strerror(-r));
		goto undo;
	}
	b = nl_batch_new();
	struct nl_link up;
	nl_link_init(&up);
	up.ifindex = hl.ifindex;
	up.flags = IFF_UP;
	nl_batch_link(b, NL_SET, &up);
	r = apply(host, b, err);
	nl_batch_free(b);
	if (r == 0)
		r = pod_side(pod, s, pod_mac, err);
	if (r == 0)
		r = host_routes(host, s, hl.ifindex, err);
	if (r == 0)
		goto out;
undo:;
	struct strbuf ignored = STRBUF_INIT;
	sb_init(&ignored);
	if (del_link(host, s->host_if, &ignored) < 0) {
		/* Reported with the original error; nothing more to do here. */
	}
	sb_free(&ignored);
out:
	nl_close(pod);
	nl_close(host);
	close(nsfd);
	return r;
}

int dp_teardown(const char *netns, const char *ifname, const char *host_if, struct strbuf *err)
{
	int r = 0;
	if (netns && *netns && ifname && *ifname) {
		struct nl *pod;
		r = nl_open_kernel_netns(netns, &pod);
		if (r == -ENOENT || r == -EINVAL) {
			r = 0; /* the namespace is gone, and the veth with it */
		} else if (r < 0) {
			sb_addf(err, "cannot enter %s: %s", netns, strerror(-r));
			return r;
		} else {
			r = del_link(pod, ifname, err);
			nl_close(pod);
			if (r < 0)
				return r;
		}
	}
	if (host_if) {
		struct nl *host;
		r = nl_open_kernel(&host);
		if (r < 0) {
			sb_addf(err, "netlink: %s", strerror(-r));
			return r;
		}
		r = del_link(host, host_if, err);
		nl_close(host);
	}
	return r;
}

static int check_fail(struct strbuf *err, const char *fmt, ...) printf_like(2, 3);
static int check_fail(struct strbuf *err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	sb_vaddf(err, fmt, ap);
	va_end(ap);
	return -EIO;
}

static int check_pod(struct nl *pod, const struct dp_spec *s, struct strbuf *err)
{
	struct nl_link l;
	if (find_link(pod, s->ifname, &l) < 0)
		return check_fail(err, "the container has no interface %s", s->ifname);
	if (!(l.flags & IFF_UP))
		return check_fail(err, "%s in the container is down", s->ifname);
	struct nl_addr_list addrs = { 0 };
	int r = dump_addrs(pod, &addrs);
	if (r < 0)
		return check_fail(err, "listing the container's addresses: %s", strerror(-r));
	for (size_t i = 0; i < s->n_ips && r == 0; i++) {
		bool found = false;
		for (size_t k = 0; k < addrs.n; k++)
			found |= addrs.v[k].ifindex == l.ifindex &&
				 ip_equal(&addrs.v[k].addr.ip, &s->ips[i]) &&
				 addrs.v[k].addr.len == ip_bits(&s->ips[i]);
		char ip[IP_STRLEN];
		if (!found)
			r = check_fail(err, "%s in the container lacks %s/32", s->ifname,
				       ip_str(&s->ips[i], ip));
	}
	nl_addr_list_free(&addrs);
	if (r < 0)
		return r;
	struct br_cidr gwdst = { .ip = gateway(), .len = 32 }, def = { .ip = ip4_from_u32(0) };
	struct nl_route rt;
	if (find_route(pod, &gwdst, 0, &rt) < 0 || rt.oif != l.ifindex || rt.scope != RT_SCOPE_LINK)
		return check_fail(err, "the container lacks the route %s dev %s scope link",
				  CNI_GATEWAY, s->ifname);
	struct br_ip gw = gateway();
	if (find_route(pod, &def, 0, &rt) < 0 || rt.oif != l.ifindex || !ip_equal(&rt.gw, &gw))
		return check_fail(err, "the container's default route is not via %s dev %s",
				  CNI_GATEWAY, s->ifname);
	return 0;
}

int dp_check(const struct dp_spec *s, struct strbuf *err)
{
	struct nl *host = NULL, *pod = NULL;
	int r = nl_open_kernel(&host);
	if (r < 0)
		return check_fail(err, "netlink: %s", strerror(-r));
	r = nl_open_kernel_netns(s->netns, &pod);
	if (r < 0) {
		nl_close(host);
		return check_fail(err, "cannot enter %s: %s", s->netns, strerror(-r));
	}
	struct nl_link hl;
	if (find_link(host, s->host_if, &hl) < 0) {
		r = check_fail(err, "the host has no interface %s", s->host_if);
	} else if (strcmp(hl.kind, "veth") != 0 || memcmp(hl.mac, host_mac, 6) != 0 ||
		   !(hl.flags & IFF_UP)) {
		r = check_fail(err, "%s is not an up veth with MAC %s", s->host_if, CNI_HOST_MAC);
	} else {
		r = check_pod(pod, s, err);
	}
	for (size_t i = 0; i < s->n_ips && r == 0; i++) {
		struct nl_route want = host_route(&s->ips[i], hl.ifindex), have;
		char c[CIDR_STRLEN];
		if (find_route(host, &want.dst, NL_PROTO_BRINDLE, &have) < 0 ||
		    have.oif != hl.ifindex || have.scope != RT_SCOPE_LINK)
			r = check_fail(err,
				       "the host lacks the route %s dev %s scope link proto %d",
				       cidr_str(&want.dst, c), s->host_if, NL_PROTO_BRINDLE);
	}
	nl_close(pod);
	nl_close(host);
	return r;
}
