/*
 * The pod's side of the dataplane contract (docs/architecture.md), written
 * through our rtnetlink layer: a veth whose host end (caliX, MAC
 * ee:ee:ee:ee:ee:ee, proxy ARP) answers for 169.254.1.1, the pod end in the
 * container's namespace with the /32 and the routes, and the host's
 * "<ip>/32 dev caliX scope link" route with protocol 80, which felix
 * recognises as ours. An IPv6 address is a /128 (no duplicate detection: the
 * link has two ends, both ours) whose default route goes via the host end's
 * link-local address fe80::ecee:eeff:feee:eeee (its MAC's, written by us so
 * that it does not depend on the host's address generation mode), with the
 * host's "<ip>/128 dev caliX" route. The plugin runs in the host namespace (whatever
 * namespace the runtime runs it in); the container's is reached through
 * CNI_NETNS, opened once and checked to be a network namespace.
 *
 * What is ours in the container: only the interface CNI_IFNAME this ADD
 * created and what hangs on it. A container that already has that
 * interface, a default route or a route to 169.254.1.1 is refused before
 * anything is created (routes are added, never replaced), so a failed ADD
 * cannot take the container's existing network with it.
 */
#include "plugin.h"

#include <brindle/sys/nl.h>
#include <brindle/sys/sysctl.h>

#include <errno.h>
#include <fcntl.h>
#include <linux/nsfs.h>
#include <linux/rtnetlink.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

static const uint8_t host_mac[6] = { 0xee, 0xee, 0xee, 0xee, 0xee, 0xee };

static struct br_ip gateway(void)
{
	return ip4_from_u32(0xa9fe0101u); /* 169.254.1.1 */
}

static struct br_ip gateway6(void)
{
	struct br_ip ip;
	int r = ip_parse(CNI_GATEWAY6, &ip);
	(void)r; /* a constant */
	return ip;
}

static bool has_family(const struct dp_spec *s, int family)
{
	for (size_t i = 0; i < s->n_ips; i++)
		if (s->ips[i].family == family)
			return true;
	return false;
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

static int dump_addrs(struct nl *nl, uint8_t family, struct nl_addr_list *out)
{
	int r = -EINTR;
	for (int i = 0; i < DUMP_RETRIES && r == -EINTR; i++)
		r = nl_dump_addrs(nl, family, out);
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

/* Delete link @ifindex if it is still the one named @name. */
static int del_link_index(struct nl *nl, int ifindex, const char *name, struct strbuf *err)
{
	struct nl_link_list links = { 0 };
	int r = dump_links(nl, &links);
	if (r < 0) {
		sb_addf(err, "listing links: %s", strerror(-r));
		return r;
	}
	const struct nl_link *l = nl_link_by_index(&links, ifindex);
	if (l && !streq(l->name, name)) {
		sb_addf(err, "interface #%d is now %s, not %s; leaving it", ifindex, l->name, name);
		r = -ESTALE;
	} else if (l) {
		struct nl_batch *b = nl_batch_new();
		struct nl_link del;
		nl_link_init(&del);
		del.ifindex = ifindex;
		nl_batch_link(b, NL_DEL, &del);
		r = apply(nl, b, err);
		nl_batch_free(b);
		if (r == -ENODEV)
			r = 0;
	}
	nl_link_list_free(&links);
	return r;
}

/* Netlink in the container's namespace, entered through the descriptor we checked. */
static int open_pod(const struct dp_spec *s, struct nl **pod, struct strbuf *err)
{
	char path[64];
	if (s->netns_fd >= 0)
		snprintf(path, sizeof(path), "/proc/self/fd/%d", s->netns_fd);
	int r = nl_open_kernel_netns(s->netns_fd >= 0 ? path : s->netns, pod);
	if (r < 0)
		sb_addf(err, "cannot enter %s: %s", s->netns, strerror(-r));
	return r;
}

int dp_netns_open(const char *path, int *out, struct strbuf *err)
{
	struct stat st;
	if (stat(path, &st) < 0) {
		int e = errno;
		if (e == ENOENT || e == ENOTDIR)
			sb_addf(err, "%s does not exist", path);
		else
			sb_addf(err, "%s: %s", path, strerror(e));
		return -e;
	}
	/* A namespace file is a regular file; a FIFO would block open(), a device could act. */
	if (!S_ISREG(st.st_mode)) {
		sb_addf(err, "%s is not a network namespace (not a namespace file)", path);
		return -EINVAL;
	}
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		int e = errno;
		sb_addf(err, "cannot open %s: %s", path, strerror(e));
		return -e;
	}
	int type = ioctl(fd, NS_GET_NSTYPE);
	if (type != CLONE_NEWNET) {
		sb_addf(err, "%s is not a network namespace%s", path,
			type < 0 ? " (not a namespace file)" : " (another kind of namespace)");
		close(fd);
		return -EINVAL;
	}
	*out = fd;
	return 0;
}

static void route_str(const struct nl_route *rt, const struct nl_link_list *links,
		      struct strbuf *out)
{
	char ip[IP_STRLEN];
	if (rt->type != RTN_UNICAST)
		sb_addf(out, " of type %u", rt->type);
	if (rt->gw.family)
		sb_addf(out, " via %s", ip_str(&rt->gw, ip));
	if (rt->oif) {
		const struct nl_link *l = nl_link_by_index(links, rt->oif);
		if (l)
			sb_addf(out, " dev %s", l->name);
		else
			sb_addf(out, " dev #%d", rt->oif);
	}
}

/* A default route of the family of @routes, or IPv4's route to the gateway. */
static int route_conflicts(const struct nl_route_list *routes, const struct nl_link_list *links,
			   const struct dp_spec *s, struct strbuf *err)
{
	struct br_ip gw = gateway();
	for (size_t i = 0; i < routes->n; i++) {
		const struct nl_route *rt = &routes->v[i];
		if (rt->table != RT_TABLE_MAIN)
			continue;
		if (rt->dst.len == 0) {
			sb_adds(err, rt->dst.ip.family == AF_INET6
					     ? "the container already has an IPv6 default route"
					     : "the container already has a default route");
		} else if (rt->dst.ip.family == AF_INET && rt->dst.len == 32 &&
			   ip_equal(&rt->dst.ip, &gw)) {
			sb_adds(err, "the container already has a route to " CNI_GATEWAY);
		} else {
			continue;
		}
		route_str(rt, links, err);
		sb_addf(err,
			"; brindle-cni connects a pod's only (default) network and does not "
			"replace its routes, so it cannot add %s as a second network",
			s->ifname);
		return -EEXIST;
	}
	return 0;
}

/*
 * What dp_setup would add must not be there yet: the interface, a default or
 * gateway route; and the host interface it replaces must not be the one that
 * connects this very container (a veth pair whose ends name each other).
 */
static int pod_conflicts(struct nl *host, struct nl *pod, const struct dp_spec *s,
			 struct strbuf *err)
{
	struct nl_link_list links = { 0 };
	struct nl_route_list routes = { 0 };
	struct nl_route_filter f = { .family = AF_INET, .table = RT_TABLE_MAIN };
	int r = dump_links(pod, &links);
	if (r < 0) {
		sb_addf(err, "listing the container's interfaces: %s", strerror(-r));
		return r;
	}
	/* CNI_IFNAME joined to this pod's host interface: a veth this plugin made for the pod. */
	struct nl_link host_end;
	const struct nl_link *mine = nl_link_by_name(&links, s->ifname);
	if (mine) {
		bool pair = find_link(host, s->host_if, &host_end) == 0 &&
			    streq(host_end.kind, "veth") && streq(mine->kind, "veth") &&
			    mine->parent == host_end.ifindex && host_end.parent == mine->ifindex;
		sb_addf(err, "the container already has an interface %s%s%s", s->ifname,
			pair ? ", joined to this pod's host interface " : "",
			pair ? s->host_if : "");
		r = pair ? -EALREADY : -EEXIST;
		goto out;
	}
	/* IPv4's routes, and IPv6's when the pod gets an IPv6 address */
	for (int fam = 0; fam < 2 && r == 0; fam++) {
		if (fam && !has_family(s, AF_INET6))
			break;
		f.family = fam ? AF_INET6 : AF_INET;
		r = dump_routes(pod, &f, &routes);
		if (r < 0) {
			sb_addf(err, "listing the container's routes: %s", strerror(-r));
			goto out;
		}
		r = route_conflicts(&routes, &links, s, err);
		nl_route_list_free(&routes);
	}
	if (r < 0)
		goto out;
	struct nl_link old;
	if (find_link(host, s->host_if, &old) == 0 && streq(old.kind, "veth")) {
		for (size_t i = 0; i < links.n; i++) {
			const struct nl_link *l = &links.v[i];
			if (!streq(l->kind, "veth") || l->parent != old.ifindex ||
			    old.parent != l->ifindex)
				continue;
			sb_addf(err,
				"the host interface %s already connects this container (as %s)",
				s->host_if, l->name);
			r = -EEXIST;
			goto out;
		}
	}
out:
	nl_route_list_free(&routes);
	nl_link_list_free(&links);
	return r;
}

int dp_precheck(const struct dp_spec *s, struct strbuf *err)
{
	struct nl *host = NULL, *pod = NULL;
	int r = nl_open_kernel(&host);
	if (r < 0)
		sb_addf(err, "netlink: %s", strerror(-r));
	else
		r = open_pod(s, &pod, err);
	if (r == 0)
		r = pod_conflicts(host, pod, s, err);
	nl_close(pod);
	nl_close(host);
	return r;
}

static struct nl_route host_route(const struct br_ip *ip, int oif)
{
	/* (IPv6 routes have no scope: the kernel keeps them all universe) */
	struct nl_route r = { .family = ip->family,
			      .protocol = NL_PROTO_BRINDLE,
			      .scope = ip->family == AF_INET6 ? RT_SCOPE_UNIVERSE : RT_SCOPE_LINK,
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
	struct nl_route_filter f = { .family = dst->ip.family,
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

/* The pod's default route of @gw's family, via @gw on the link (no on-link prefix needed). */
static struct nl_route default_via(struct br_ip gw, int oif)
{
	struct nl_route r = { .family = gw.family,
			      .protocol = RTPROT_BOOT,
			      .scope = RT_SCOPE_UNIVERSE,
			      .type = RTN_UNICAST,
			      .table = RT_TABLE_MAIN,
			      .oif = oif,
			      .gw = gw,
			      .onlink = true };
	r.dst.ip = (struct br_ip){ .family = gw.family };
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
		if (s->ips[i].family == AF_INET6)
			a.flags = IFA_F_NODAD; /* usable at once: no one else is on the link */
		nl_batch_addr(b, NL_ADD, &a);
	}
	if (has_family(s, AF_INET6)) {
		struct nl_route def6 = default_via(gateway6(), l.ifindex);
		nl_batch_route(b, NL_ADD, &def6);
	}
	if (has_family(s, AF_INET)) {
		struct nl_route gw = { .family = AF_INET,
				       .protocol = RTPROT_BOOT,
				       .scope = RT_SCOPE_LINK,
				       .type = RTN_UNICAST,
				       .table = RT_TABLE_MAIN,
				       .oif = l.ifindex };
		gw.dst.ip = gateway();
		gw.dst.len = 32;
		/* Added, never replaced: a route the container has is not ours to take. */
		nl_batch_route(b, NL_ADD, &gw);
		struct nl_route def = default_via(gateway(), l.ifindex);
		nl_batch_route(b, NL_ADD, &def);
	}
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

int dp_setup(const struct dp_spec *s, char pod_mac[18], struct dp_made *made, struct strbuf *err)
{
	struct nl *host = NULL, *pod = NULL;
	int host_ifindex = 0;
	bool created = false;
	int r = nl_open_kernel(&host);
	if (r < 0) {
		sb_addf(err, "netlink: %s", strerror(-r));
		goto out;
	}
	if ((r = open_pod(s, &pod, err)) < 0)
		goto out;
	/* Again here: the container may have changed since dp_precheck(). */
	if ((r = pod_conflicts(host, pod, s, err)) < 0)
		goto out;
	/* A previous sandbox of the same pod leaves a host interface of the same name. */
	if ((r = del_link(host, s->host_if, err)) < 0)
		goto out;

	struct nl_batch *b = nl_batch_new();
	struct nl_link veth;
	nl_link_init(&veth);
	snprintf(veth.name, sizeof(veth.name), "%s", s->host_if);
	snprintf(veth.kind, sizeof(veth.kind), "veth");
	snprintf(veth.peer_name, sizeof(veth.peer_name), "%s", s->ifname);
	veth.peer_netns_fd = s->netns_fd;
	veth.mtu = s->mtu;
	memcpy(veth.mac, host_mac, 6);
	veth.has_mac = true;
	nl_batch_link(b, NL_ADD, &veth);
	r = apply(host, b, err);
	nl_batch_free(b);
	if (r < 0)
		goto out; /* nothing created */
	created = true;

	struct nl_link hl;
	r = find_link(host, s->host_if, &hl);
	if (r == 0)
		host_ifindex = hl.ifindex;
	if (r == 0 && memcmp(hl.mac, host_mac, 6) != 0) {
		sb_addf(err, "%s did not take MAC %s", s->host_if, CNI_HOST_MAC);
		r = -EIO;
	}
	if (r < 0)
		goto out;
	struct sysctl *sc = sysctl_open_kernel();
	int changed = 0;
	r = sysctl_workload_iface(sc, s->host_if, has_family(s, AF_INET6), &changed);
	sysctl_close(sc);
	if (r < 0) {
		sb_addf(err, "sysctls of %s: %s", s->host_if, strerror(-r));
		goto out;
	}
	b = nl_batch_new();
	if (has_family(s, AF_INET6)) {
		/* the pods' IPv6 gateway, whatever the host's address generation mode */
		struct nl_addr ll = { .ifindex = hl.ifindex,
				      .scope = RT_SCOPE_LINK,
				      .flags = IFA_F_NODAD,
				      .addr = { .ip = gateway6(), .len = 64 } };
		nl_batch_addr(b, NL_ADD, &ll);
	}
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
out:
	if (r < 0 && created) {
		/* Only the veth this call made (its pod end and routes go with it). */
		struct strbuf ignored = STRBUF_INIT;
		sb_init(&ignored);
		int u = host_ifindex ? del_link_index(host, host_ifindex, s->host_if, &ignored)
				     : del_link(host, s->host_if, &ignored);
		(void)u; /* reported with the original error; nothing more to do here */
		sb_free(&ignored);
	}
	if (r == 0)
		made->host_ifindex = host_ifindex;
	nl_close(pod);
	nl_close(host);
	return r;
}

int dp_undo(const struct dp_spec *s, const struct dp_made *made, struct strbuf *err)
{
	struct nl *host;
	int r = nl_open_kernel(&host);
	if (r < 0) {
		sb_addf(err, "netlink: %s", strerror(-r));
		return r;
	}
	r = del_link_index(host, made->host_ifindex, s->host_if, err);
	nl_close(host);
	return r;
}

int dp_teardown(const char *netns, const char *ifname, const char *host_if, struct strbuf *err)
{
	int r = 0;
	if (netns && *netns && ifname && *ifname) {
		struct dp_spec s = { .netns = netns, .netns_fd = -1 };
		struct strbuf why = STRBUF_INIT;
		sb_init(&why);
		struct nl *pod = NULL;
		r = dp_netns_open(netns, &s.netns_fd, &why);
		if (r == -ENOENT || r == -ENOTDIR || r == -EINVAL) {
			/* Gone, and the veth with it; or no namespace, which no ADD used. */
			r = 0;
		} else if (r < 0) {
			sb_adds(err, sb_str(&why));
		} else if ((r = open_pod(&s, &pod, err)) == 0) {
			r = del_link(pod, ifname, err);
			nl_close(pod);
		}
		sb_free(&why);
		if (s.netns_fd >= 0)
			close(s.netns_fd);
		if (r < 0)
			return r;
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
	int r = dump_addrs(pod, AF_UNSPEC, &addrs);
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
			r = check_fail(err, "%s in the container lacks %s/%u", s->ifname,
				       ip_str(&s->ips[i], ip), ip_bits(&s->ips[i]));
	}
	nl_addr_list_free(&addrs);
	if (r < 0)
		return r;
	struct nl_route rt;
	if (has_family(s, AF_INET6)) {
		struct br_cidr def6 = { .ip = { .family = AF_INET6 } };
		struct br_ip gw6 = gateway6();
		if (find_route(pod, &def6, 0, &rt) < 0 || rt.oif != l.ifindex ||
		    !ip_equal(&rt.gw, &gw6))
			return check_fail(err,
					  "the container's IPv6 default route is not via %s dev %s",
					  CNI_GATEWAY6, s->ifname);
	}
	if (!has_family(s, AF_INET))
		return 0;
	struct br_cidr gwdst = { .ip = gateway(), .len = 32 }, def = { .ip = ip4_from_u32(0) };
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
	if (open_pod(s, &pod, err) < 0) {
		nl_close(host);
		return -EIO;
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
		    have.oif != hl.ifindex || have.scope != want.scope)
			r = check_fail(err,
				       "the host lacks the route %s dev %s scope link proto %d",
				       cidr_str(&want.dst, c), s->host_if, NL_PROTO_BRINDLE);
	}
	nl_close(pod);
	nl_close(host);
	return r;
}
