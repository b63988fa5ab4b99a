/*
 * The links writer: a mirror of the kernel's interfaces (by name and by
 * index) and of those holding a host address, kept current by read-backs and
 * link notifications; the tunnel devices felix owns by name, vxlan.calico and
 * vxlan-v6.calico (created, recreated when their parameters differ, deleted
 * when no pool of their family wants VXLAN) and tunl0 (the kernel's IPIP
 * fallback device: felix sets its MTU and address; on a kernel without IPIP
 * it reports that once and carries on); and the settings of workload
 * interfaces (proxy_arp, forwarding, route_localnet, proxy_delay, accept_ra),
 * set once an interface is up and never on a host interface.
 */
#include "dataplane/links.h"
#include <brindle/sys/clock.h>

#include <errno.h>
#include <linux/rtnetlink.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RETRY_MS 1000

struct links {
	struct dp_writer w;
	struct nl *nl;
	struct sysctl *sys;
	struct hmap by_name;   /* name → struct nl_link * */
	struct hmap by_index;  /* "%d" → struct nl_link * (same objects) */
	struct hmap addressed; /* "%d" ifindex → (void *)1: holds a host address */
	bool addrs_stale;      /* an address changed: read them again before planning */
	struct hmap waiting;   /* workload interfaces not up yet → (void *)1 */
	struct hmap retry;     /* workload interfaces to look at again → (void *)1 */
	struct hmap touched;   /* interfaces whose settings someone changed → (void *)1 */
	bool tunnel_changed;   /* a tunnel device changed or went: reconcile them */
	bool ipip_reported;
	/* planned this turn */
	bool tunnels;
	char **ifaces;
	size_t n_ifaces;
	uint64_t retry_at;
};

static struct links *links_of(struct dp_writer *w)
{
	return (struct links *)w;
}

/* --- the mirror --------------------------------------------------------------------------- */

static void links_clear(struct links *l)
{
	for (struct hmap_iter it = hmap_iter(&l->by_name); hmap_next(&it);)
		free(it.value);
	hmap_clear(&l->by_name);
	hmap_clear(&l->by_index);
}

const struct nl_link *links_named(const struct links *l, const char *name)
{
	return hmap_get(&l->by_name, name);
}

const struct nl_link *links_indexed(const struct links *l, int ifindex)
{
	char k[16];
	snprintf(k, sizeof(k), "%d", ifindex);
	return hmap_get(&l->by_index, k);
}

static void links_del(struct links *l, int ifindex)
{
	char k[16];
	snprintf(k, sizeof(k), "%d", ifindex);
	struct nl_link *old = hmap_del(&l->by_index, k);
	if (!old)
		return;
	hmap_del(&l->by_name, old->name);
	free(old);
}

static void links_put(struct links *l, const struct nl_link *link)
{
	if (links_indexed(l, link->ifindex))
		links_del(l, link->ifindex);
	/* A rename leaves a stale entry under the old index's name only if indexes differ. */
	const struct nl_link *same_name = links_named(l, link->name);
	if (same_name)
		links_del(l, same_name->ifindex);
	struct nl_link *copy = xmalloc(sizeof(*copy));
	*copy = *link;
	char k[16];
	snprintf(k, sizeof(k), "%d", link->ifindex);
	hmap_put(&l->by_name, copy->name, copy);
	hmap_put(&l->by_index, k, copy);
}

static int links_dump(struct links *l)
{
	struct nl_link_list list = { 0 };
	int r, tries = 0;
	do
		r = nl_dump_links(l->nl, &list);
	while (r == -EINTR && ++tries < DP_DUMP_TRIES);
	if (r < 0) {
		nl_link_list_free(&list);
		return r;
	}
	links_clear(l);
	for (size_t i = 0; i < list.n; i++)
		links_put(l, &list.v[i]);
	nl_link_list_free(&list);
	return 0;
}

static bool link_local6(const struct br_cidr *c)
{
	return c->ip.family == AF_INET6 && c->ip.a[0] == 0xfe && (c->ip.a[1] & 0xc0) == 0x80;
}

static int addrs_dump(struct links *l)
{
	struct nl_addr_list addrs = { 0 };
	int r, tries = 0;
	do
		r = nl_dump_addrs(l->nl, AF_UNSPEC, &addrs);
	while (r == -EINTR && ++tries < DP_DUMP_TRIES);
	if (r == 0) {
		hmap_clear(&l->addressed);
		for (size_t i = 0; i < addrs.n; i++) {
			char k[16];
			if (link_local6(&addrs.v[i].addr))
				continue;
			snprintf(k, sizeof(k), "%d", addrs.v[i].ifindex);
			hmap_put(&l->addressed, k, (void *)1);
		}
		l->addrs_stale = false;
	}
	nl_addr_list_free(&addrs);
	return r;
}

void links_addrs_changed(struct links *l)
{
	l->addrs_stale = true;
}

bool links_settings_changed(struct links *l, const struct nl_netconf *nc)
{
	const struct nl_link *link = links_indexed(l, nc->ifindex);
	if (!link || (nc->forwarding != 0 && nc->proxy_neigh != 0))
		return false;
	hmap_put(&l->retry, link->name, (void *)1);
	hmap_put(&l->touched, link->name, (void *)1);
	return true;
}

/* Is @ifname a host interface (links.h)? @why says which. */
static bool host_iface(const struct links *l, const char *ifname, char *why, size_t size)
{
	const struct nl_link *link = links_named(l, ifname);
	char k[16];
	if (iface_reserved(ifname)) {
		snprintf(why, size, "%s is the loopback or a tunnel device of felix's", ifname);
		return true;
	}
	if (!link)
		return false;
	snprintf(k, sizeof(k), "%d", link->ifindex);
	if (link->flags & IFF_LOOPBACK) {
		snprintf(why, size, "%s is a loopback interface", ifname);
		return true;
	}
	if (hmap_has(&l->addressed, k)) {
		snprintf(why, size, "%s holds a host address (a workload's host side holds none)",
			 ifname);
		return true;
	}
	return false;
}

bool links_refuse_host_iface(const struct links *l, const struct desired *d, enum desired_kind kind,
			     const char *key, const char *ifname)
{
	char why[160];
	if (!host_iface(l, ifname, why, sizeof(why)))
		return false;
	dp_report_error(l->w.report, DP_ERR_REFUSED, "refused: %s wants %s %s, but %s",
			desired_why(d, kind, key),
			kind == DESIRED_IFACE	? "the workload settings of"
			: kind == DESIRED_ROUTE ? "route"
						: "neighbour",
			key, why);
	return true;
}

/* --- tunnel devices ----------------------------------------------------------------------- */

/* Apply one small batch now (tunnel devices are needed before routes through them). */
static int apply_now(struct links *l, struct nl_batch *b, const char *what)
{
	struct dp_report *rep = l->w.report;
	int errs[8] = { 0 };
	int r = nl_apply(l->nl, b, nl_batch_count(b) <= 8 ? errs : NULL);
	if (r < 0) {
		dp_report_error(rep, DP_ERR_NETLINK, "%s: %s", what, strerror(-r));
		return r;
	}
	int first = 0;
	for (size_t i = 0; i < nl_batch_count(b) && i < 8; i++)
		if (errs[i]) {
			dp_report_error(rep, DP_ERR_TUNNEL, "%s: %s: %s", what,
					nl_batch_describe(b, i), strerror(-errs[i]));
			if (!first)
				first = errs[i];
		} else {
			rep->status.writes++;
		}
	nl_batch_reset(b);
	return first;
}

/* The interface holding @ip, and its MTU. */
static const struct nl_link *link_with_addr(struct links *l, const struct br_ip *ip)
{
	struct nl_addr_list addrs = { 0 };
	const struct nl_link *found = NULL;
	if (nl_dump_addrs(l->nl, ip->family, &addrs) == 0)
		for (size_t i = 0; i < addrs.n && !found; i++)
			if (ip_equal(&addrs.v[i].addr.ip, ip))
				found = links_indexed(l, addrs.v[i].ifindex);
	nl_addr_list_free(&addrs);
	return found;
}

/*
 * Exactly @want (or nothing, when its len is 0) as the device's only address of
 * @family; the kernel's own IPv6 link-local address stays.
 */
static int ensure_address(struct links *l, struct nl_batch *b, int ifindex, int family,
			  const struct br_cidr *want, const char *dev)
{
	struct nl_addr_list addrs = { 0 };
	int r = nl_dump_addrs(l->nl, family, &addrs);
	if (r < 0)
		return r;
	bool have = false;
	for (size_t i = 0; i < addrs.n; i++) {
		if (addrs.v[i].ifindex != ifindex || link_local6(&addrs.v[i].addr))
			continue;
		if (want->len && cidr_cmp(&addrs.v[i].addr, want) == 0) {
			have = true;
			continue;
		}
		nl_batch_addr(b, NL_DEL, &addrs.v[i]);
		char c[CIDR_STRLEN];
		dp_report_change(l->w.report, "address %s removed from %s",
				 cidr_str(&addrs.v[i].addr, c), dev);
	}
	nl_addr_list_free(&addrs);
	if (want->len && !have) {
		struct nl_addr a = { .ifindex = ifindex,
				     .addr = *want,
				     .scope = RT_SCOPE_UNIVERSE };
		nl_batch_addr(b, NL_ADD, &a);
		char c[CIDR_STRLEN];
		dp_report_change(l->w.report, "address %s added to %s", cidr_str(want, c), dev);
	}
	return 0;
}

/* A VXLAN device: @dev is vxlan.calico (IPv4 over IPv4) or vxlan-v6.calico (IPv6 over IPv6). */
static int vxlan_reconcile(struct links *l, const struct desired_vxlan *vx, const char *dev)
{
	struct dp_report *rep = l->w.report;
	struct nl_batch *b = nl_batch_new();
	bool v6 = streq(dev, VXLAN6_DEV);
	const struct nl_link *cur = links_named(l, dev);
	int r = 0;
	char what[64]; /* for errors: what was being done to which device */
	if (!vx->wanted) {
		if (cur) {
			struct nl_link del;
			nl_link_init(&del);
			del.ifindex = cur->ifindex;
			nl_batch_link(b, NL_DEL, &del);
			dp_report_change(rep, "%s deleted: no IPv%d pool uses VXLAN", dev,
					 v6 ? 6 : 4);
			int ifindex = cur->ifindex;
			snprintf(what, sizeof(what), "deleting %s", dev);
			r = apply_now(l, b, what);
			if (r == 0)
				links_del(l, ifindex);
		}
		nl_batch_free(b);
		return r;
	}
	const struct nl_link *parent = link_with_addr(l, &vx->local);
	if (!parent) {
		char ip[IP_STRLEN];
		dp_report_error(rep, DP_ERR_TUNNEL, "%s: no interface has this node's address %s",
				dev, ip_str(&vx->local, ip));
		nl_batch_free(b);
		return -ENODEV;
	}
	/* the encapsulation's overhead: 50 bytes over IPv4, 70 over IPv6 (Calico's figures) */
	uint32_t over = v6 ? 70 : 50;
	uint32_t mtu = vx->mtu ? vx->mtu : (parent->mtu > over ? parent->mtu - over : 1500 - over);
	if (cur && (strcmp(cur->kind, "vxlan") || cur->vxlan_id != vx->vni ||
		    cur->vxlan_port != vx->port || !ip_equal(&cur->vxlan_local, &vx->local) ||
		    cur->vxlan_link != parent->ifindex || cur->vxlan_learning)) {
		/* Parameters of an existing VXLAN device cannot all be changed: remake it. */
		struct nl_link del;
		nl_link_init(&del);
		del.ifindex = cur->ifindex;
		nl_batch_link(b, NL_DEL, &del);
		dp_report_change(rep, "%s recreated: its VXLAN parameters differ", dev);
		int ifindex = cur->ifindex;
		snprintf(what, sizeof(what), "recreating %s", dev);
		if ((r = apply_now(l, b, what)) < 0)
			goto out;
		links_del(l, ifindex);
		cur = NULL;
	}
	struct nl_link want;
	nl_link_init(&want);
	snprintf(want.name, sizeof(want.name), "%s", dev);
	snprintf(want.kind, sizeof(want.kind), "vxlan");
	want.vxlan_id = vx->vni;
	want.vxlan_port = vx->port;
	want.vxlan_local = vx->local;
	want.vxlan_link = parent->ifindex;
	want.mtu = mtu;
	memcpy(want.mac, vx->mac, 6);
	want.has_mac = true;
	want.flags = IFF_UP;
	if (!cur) {
		nl_batch_link(b, NL_ADD, &want);
		dp_report_change(rep, "%s created (VNI %u, port %u, parent %s, MTU %u)", dev,
				 vx->vni, vx->port, parent->name, mtu);
	} else if (cur->mtu != mtu || memcmp(cur->mac, vx->mac, 6) || !(cur->flags & IFF_UP)) {
		want.ifindex = cur->ifindex;
		want.kind[0] = '\0';
		nl_batch_link(b, NL_SET, &want);
		dp_report_change(rep, "%s updated (MTU %u)", dev, mtu);
	}
	snprintf(what, sizeof(what), "setting up %s", dev);
	if (nl_batch_count(b) && (r = apply_now(l, b, what)) < 0)
		goto out;
	if ((r = links_dump(l)) < 0)
		goto out;
	cur = links_named(l, dev);
	if (!cur) {
		r = -ENODEV;
		goto out;
	}
	r = ensure_address(l, b, cur->ifindex, v6 ? AF_INET6 : AF_INET, &vx->addr, dev);
	snprintf(what, sizeof(what), "addressing %s", dev);
	if (r == 0 && nl_batch_count(b))
		r = apply_now(l, b, what);
out:
	nl_batch_free(b);
	return r;
}

/* 0, or a negative errno; a kernel without IPIP is reported (once) but is not an error. */
static int ipip_reconcile(struct links *l, const struct desired_ipip *ip)
{
	struct dp_report *rep = l->w.report;
	struct nl_batch *b = nl_batch_new();
	const struct nl_link *cur = links_named(l, IPIP_DEV);
	int r = 0;
	if (!ip->wanted) {
		l->ipip_reported = false;
		/* tunl0 cannot be deleted; strip what felix put on it. */
		struct br_cidr none = { 0 };
		if (cur &&
		    (r = ensure_address(l, b, cur->ifindex, AF_INET, &none, IPIP_DEV)) == 0 &&
		    nl_batch_count(b))
			r = apply_now(l, b, "clearing " IPIP_DEV);
		nl_batch_free(b);
		return r;
	}
	if (!cur) {
		struct nl_link mk;
		nl_link_init(&mk);
		snprintf(mk.name, sizeof(mk.name), IPIP_DEV);
		snprintf(mk.kind, sizeof(mk.kind), "ipip");
		mk.flags = IFF_UP;
		nl_batch_link(b, NL_ADD, &mk);
		int errs[1] = { 0 };
		r = nl_apply(l->nl, b, errs);
		nl_batch_reset(b);
		if (r != 0 || errs[0] != 0) {
			int e = r < 0 ? r : errs[0];
			/* Once: it stays true until the pool or the kernel changes. */
			if (!l->ipip_reported)
				dp_report_error(
					rep, DP_ERR_IPIP,
					"IP pool %s asks for IPIP, but this kernel cannot make %s "
					"(%s; CONFIG_NET_IPIP): routes through it are not "
					"programmed; everything else is",
					ip->wanted_by, IPIP_DEV, strerror(-e));
			l->ipip_reported = true;
			snprintf(rep->status.problem, sizeof(rep->status.problem),
				 "IPIP unavailable: IP pool %s asks for IPIP but the kernel has no "
				 "ipip support",
				 ip->wanted_by);
			nl_batch_free(b);
			return 0;
		}
		dp_report_change(rep, "%s created", IPIP_DEV);
		if ((r = links_dump(l)) < 0 || !(cur = links_named(l, IPIP_DEV))) {
			nl_batch_free(b);
			return r < 0 ? r : -ENODEV;
		}
	}
	uint32_t mtu = ip->mtu;
	if (!mtu) {
		const struct nl_link *host =
			ip->local.family ? link_with_addr(l, &ip->local) : NULL;
		mtu = host && host->mtu > 20 ? host->mtu - 20 : 1480;
	}
	if (cur->mtu != mtu || !(cur->flags & IFF_UP)) {
		struct nl_link set;
		nl_link_init(&set);
		set.ifindex = cur->ifindex;
		set.mtu = mtu;
		set.flags = IFF_UP;
		nl_batch_link(b, NL_SET, &set);
		dp_report_change(rep, "%s set up (MTU %u)", IPIP_DEV, mtu);
	}
	if ((r = ensure_address(l, b, cur->ifindex, AF_INET, &ip->addr, IPIP_DEV)) == 0 &&
	    nl_batch_count(b))
		r = apply_now(l, b, "setting up " IPIP_DEV);
	if (r == 0)
		r = links_dump(l);
	l->ipip_reported = false;
	nl_batch_free(b);
	return r;
}

static int tunnels_reconcile(struct links *l, struct desired *d)
{
	struct dp_status *st = &l->w.report->status;
	st->problem[0] = '\0';
	int r1 = vxlan_reconcile(l, &d->vxlan, VXLAN_DEV);
	if (r1 < 0)
		snprintf(st->problem, sizeof(st->problem), "%s could not be set up", VXLAN_DEV);
	int r6 = vxlan_reconcile(l, &d->vxlan6, VXLAN6_DEV);
	if (r6 < 0)
		snprintf(st->problem, sizeof(st->problem), "%s%s could not be set up",
			 r1 < 0 ? VXLAN_DEV " and " : "", VXLAN6_DEV);
	if (r1 >= 0)
		r1 = r6;
	int r2 = ipip_reconcile(l, &d->ipip);
	/* Routes, neighbours and FDB entries on the devices follow them. */
	desired_mark_all_dirty(d, DESIRED_ROUTE);
	desired_mark_all_dirty(d, DESIRED_NEIGH);
	desired_mark_all_dirty(d, DESIRED_FDB);
	return r1 < 0 ? r1 : r2;
}

/* --- workload interface settings ---------------------------------------------------------- */

/* 0, or a negative errno when its settings could not be written. */
static int iface_settings(struct links *l, struct desired *d, bool ipv6, const char *name)
{
	if (!desired_get(d, DESIRED_IFACE, name))
		return 0;
	const struct nl_link *link = links_named(l, name);
	if (!link || !(link->flags & IFF_UP)) {
		hmap_put(&l->waiting, name, (void *)1);
		return 0;
	}
	if (links_refuse_host_iface(l, d, DESIRED_IFACE, name, name))
		return 0;
	int changed = 0;
	int r = sysctl_workload_iface(l->sys, name, ipv6, &changed);
	if (r < 0) {
		dp_report_error(l->w.report, DP_ERR_SYSCTL, "settings of %s: %s", name,
				strerror(-r));
		hmap_put(&l->retry, name, (void *)1);
		return r;
	}
	bool touched = hmap_del(&l->touched, name) != NULL;
	if (changed && touched) {
		l->w.report->status.drift_repairs[DP_DRIFT_SYSCTL]++;
		log_warn("interface %s: %d setting%s changed by someone else, put back", name,
			 changed, changed == 1 ? "" : "s");
	} else if (changed) {
		dp_report_change(l->w.report,
				 "interface %s: %d setting%s changed (proxy_arp, forwarding, "
				 "route_localnet, proxy_delay, accept_ra)",
				 name, changed, changed == 1 ? "" : "s");
	}
	return 0;
}

/* --- the writer --------------------------------------------------------------------------- */

static int links_read(struct dp_writer *w, const struct dp_input *in)
{
	struct links *l = links_of(w);
	int r;
	if ((r = links_dump(l)) < 0 || (r = addrs_dump(l)) < 0) {
		dp_report_error(w->report, DP_ERR_DUMP, "reading the kernel's links: %s",
				strerror(-r));
		return r;
	}
	hmap_clear(&l->waiting);
	in->routing->tunnels_dirty = true;
	desired_mark_all_dirty(in->routing, DESIRED_IFACE);
	/* The node forwards (Calico's ipForwarding): looked at with every read, so a change by
	 * someone else is put back within the refresh interval. */
	int changed = 0;
	if (!streq(in->cfg->ip_forwarding, "Disabled") &&
	    (r = sysctl_forwarding(l->sys, in->cfg->ipv6_support, &changed)) < 0)
		dp_report_error(w->report, DP_ERR_SYSCTL, "forwarding: %s", strerror(-r));
	else if (changed)
		dp_report_change(w->report, "forwarding turned on (net.ipv4.ip_forward%s)",
				 in->cfg->ipv6_support ? ", net.ipv6.conf.all.forwarding" : "");
	return 0;
}

static void free_planned(struct links *l)
{
	for (size_t i = 0; i < l->n_ifaces; i++)
		free(l->ifaces[i]);
	free(l->ifaces);
	l->ifaces = NULL;
	l->n_ifaces = 0;
}

static int links_plan(struct dp_writer *w, const struct dp_input *in)
{
	struct links *l = links_of(w);
	struct desired *d = in->routing;
	if (l->addrs_stale) {
		int r = addrs_dump(l);
		if (r < 0) {
			dp_report_error(w->report, DP_ERR_DUMP,
					"reading the kernel's addresses: %s", strerror(-r));
			return r;
		}
	}
	l->tunnels = d->tunnels_dirty || l->tunnel_changed;
	d->tunnels_dirty = false;
	l->tunnel_changed = false;
	free_planned(l);
	struct hmap *sets[] = { &d->dirty[DESIRED_IFACE], &l->retry };
	l->ifaces = xmalloc(sizeof(char *) * (sets[0]->n + sets[1]->n + 1));
	for (int s = 0; s < 2; s++)
		for (struct hmap_iter it = hmap_iter(sets[s]); hmap_next(&it);)
			if (s == 0 || !hmap_has(sets[0], it.key))
				l->ifaces[l->n_ifaces++] = xstrdup(it.key);
	desired_clear_dirty(d, DESIRED_IFACE);
	hmap_clear(&l->retry);
	return 0;
}

static int links_apply(struct dp_writer *w, const struct dp_input *in)
{
	struct links *l = links_of(w);
	int ret = 0;
	if (l->tunnels)
		ret = tunnels_reconcile(l, in->routing);
	for (size_t i = 0; i < l->n_ifaces; i++) {
		int r = iface_settings(l, in->routing, in->cfg->ipv6_support, l->ifaces[i]);
		if (r < 0 && !ret)
			ret = r;
	}
	hmap_clear(&l->touched); /* what the turn did not look at was not ours */
	free_planned(l);
	l->retry_at = l->retry.n ? in->now_ms + RETRY_MS : 0;
	return ret;
}

static void links_link_changed(struct dp_writer *w, const struct nl_link *link, bool deleted)
{
	struct links *l = links_of(w);
	/* Felix's own devices, deleted or changed by someone else (or by felix: then the
	 * reconcile finds nothing to do), are made what they should be at the next turn. */
	if (streq(link->name, VXLAN_DEV) || streq(link->name, VXLAN6_DEV) ||
	    streq(link->name, IPIP_DEV))
		l->tunnel_changed = true;
	if (deleted) {
		links_del(l, link->ifindex);
		return;
	}
	const struct nl_link *old = links_indexed(l, link->ifindex);
	bool was_up = old && (old->flags & IFF_UP);
	links_put(l, link);
	if (!(link->flags & IFF_UP))
		return;
	if (hmap_del(&l->waiting, link->name) || !was_up)
		hmap_put(&l->retry, link->name, (void *)1);
}

static uint64_t links_deadline(const struct dp_writer *w)
{
	return ((const struct links *)w)->retry_at;
}

static void links_free(struct dp_writer *w)
{
	struct links *l = links_of(w);
	links_clear(l);
	hmap_clear(&l->addressed);
	hmap_clear(&l->waiting);
	hmap_clear(&l->retry);
	hmap_clear(&l->touched);
	free_planned(l);
	free(l);
}

static const struct dp_writer_ops links_ops = {
	.name = "links",
	.read = links_read,
	.plan = links_plan,
	.apply = links_apply,
	.link_changed = links_link_changed,
	.deadline = links_deadline,
	.free = links_free,
};

struct links *links_new(struct dp_report *r, struct nl *nl, struct sysctl *sys)
{
	struct links *l = xcalloc(1, sizeof(*l));
	l->w.ops = &links_ops;
	l->w.report = r;
	l->nl = nl;
	l->sys = sys;
	return l;
}

struct dp_writer *links_writer(struct links *l)
{
	return &l->w;
}
