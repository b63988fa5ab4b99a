/*
 * Links: a cache of the kernel's interfaces (kept current by dumps and link
 * notifications), and the tunnel devices felix owns by name: vxlan.calico
 * (created, recreated when its parameters differ, deleted when no pool wants
 * VXLAN) and tunl0 (the kernel's IPIP fallback device: felix sets its MTU and
 * address; on a kernel without IPIP it reports that once and carries on).
 */
#include "dataplane_internal.h"

#include <errno.h>
#include <linux/rtnetlink.h>
#include <stdio.h>
#include <stdlib.h>

void links_clear(struct dataplane *dp)
{
	for (struct hmap_iter it = hmap_iter(&dp->links_by_name); hmap_next(&it);)
		free(it.value);
	hmap_clear(&dp->links_by_name);
	hmap_clear(&dp->links_by_index);
}

const struct nl_link *link_named(const struct dataplane *dp, const char *name)
{
	return hmap_get(&dp->links_by_name, name);
}

const struct nl_link *link_indexed(const struct dataplane *dp, int ifindex)
{
	char k[16];
	snprintf(k, sizeof(k), "%d", ifindex);
	return hmap_get(&dp->links_by_index, k);
}

void links_del(struct dataplane *dp, int ifindex)
{
	char k[16];
	snprintf(k, sizeof(k), "%d", ifindex);
	struct nl_link *l = hmap_del(&dp->links_by_index, k);
	if (!l)
		return;
	hmap_del(&dp->links_by_name, l->name);
	free(l);
}

void links_put(struct dataplane *dp, const struct nl_link *l)
{
	const struct nl_link *old = link_indexed(dp, l->ifindex);
	if (old)
		links_del(dp, l->ifindex);
	/* A rename leaves a stale entry under the old index's name only if indexes differ. */
	const struct nl_link *same_name = link_named(dp, l->name);
	if (same_name)
		links_del(dp, same_name->ifindex);
	struct nl_link *copy = xmalloc(sizeof(*copy));
	*copy = *l;
	char k[16];
	snprintf(k, sizeof(k), "%d", l->ifindex);
	hmap_put(&dp->links_by_name, copy->name, copy);
	hmap_put(&dp->links_by_index, k, copy);
}

static bool link_local6(const struct br_cidr *c)
{
	return c->ip.family == AF_INET6 && c->ip.a[0] == 0xfe && (c->ip.a[1] & 0xc0) == 0x80;
}

int addrs_dump(struct dataplane *dp)
{
	struct nl_addr_list addrs = { 0 };
	int r = nl_dump_addrs(dp->nl, AF_UNSPEC, &addrs);
	if (r == 0) {
		hmap_clear(&dp->addressed);
		for (size_t i = 0; i < addrs.n; i++) {
			char k[16];
			if (link_local6(&addrs.v[i].addr))
				continue;
			snprintf(k, sizeof(k), "%d", addrs.v[i].ifindex);
			hmap_put(&dp->addressed, k, (void *)1);
		}
		dp->addrs_stale = false;
	}
	nl_addr_list_free(&addrs);
	return r;
}

bool host_iface(const struct dataplane *dp, const char *ifname, char *why, size_t size)
{
	const struct nl_link *l = link_named(dp, ifname);
	char k[16];
	if (iface_reserved(ifname)) {
		snprintf(why, size, "%s is the loopback or a tunnel device of felix's", ifname);
		return true;
	}
	if (!l)
		return false;
	snprintf(k, sizeof(k), "%d", l->ifindex);
	if (l->flags & IFF_LOOPBACK) {
		snprintf(why, size, "%s is a loopback interface", ifname);
		return true;
	}
	if (hmap_has(&dp->addressed, k)) {
		snprintf(why, size, "%s holds a host address (a workload's host side holds none)",
			 ifname);
		return true;
	}
	return false;
}

int links_dump(struct dataplane *dp)
{
	struct nl_link_list list = { 0 };
	int r = nl_dump_links(dp->nl, &list);
	if (r < 0) {
		nl_link_list_free(&list);
		return r;
	}
	links_clear(dp);
	for (size_t i = 0; i < list.n; i++)
		links_put(dp, &list.v[i]);
	nl_link_list_free(&list);
	return 0;
}

/* Apply one small batch now (tunnel devices are needed before routes through them). */
static int apply_now(struct dataplane *dp, struct nl_batch *b, const char *what)
{
	int errs[8] = { 0 };
	int r = nl_apply(dp->nl, b, nl_batch_count(b) <= 8 ? errs : NULL);
	if (r < 0) {
		dp_error(dp, DP_ERR_NETLINK, "%s: %s", what, strerror(-r));
		return r;
	}
	int first = 0;
	for (size_t i = 0; i < nl_batch_count(b) && i < 8; i++)
		if (errs[i]) {
			dp_error(dp, DP_ERR_TUNNEL, "%s: %s: %s", what, nl_batch_describe(b, i),
				 strerror(-errs[i]));
			if (!first)
				first = errs[i];
		} else {
			dp->status.writes++;
		}
	nl_batch_reset(b);
	return first;
}

/* The interface holding @ip, and its MTU. */
static const struct nl_link *link_with_addr(struct dataplane *dp, const struct br_ip *ip)
{
	struct nl_addr_list addrs = { 0 };
	const struct nl_link *found = NULL;
	if (nl_dump_addrs(dp->nl, ip->family, &addrs) == 0)
		for (size_t i = 0; i < addrs.n && !found; i++)
			if (ip_equal(&addrs.v[i].addr.ip, ip))
				found = link_indexed(dp, addrs.v[i].ifindex);
	nl_addr_list_free(&addrs);
	return found;
}

/* Exactly @want (or nothing, when its len is 0) as the device's only address. */
static int ensure_address(struct dataplane *dp, struct nl_batch *b, int ifindex,
			  const struct br_cidr *want, const char *dev)
{
	struct nl_addr_list addrs = { 0 };
	int r = nl_dump_addrs(dp->nl, AF_INET, &addrs);
	if (r < 0)
		return r;
	bool have = false;
	for (size_t i = 0; i < addrs.n; i++) {
		if (addrs.v[i].ifindex != ifindex)
			continue;
		if (want->len && cidr_cmp(&addrs.v[i].addr, want) == 0) {
			have = true;
			continue;
		}
		nl_batch_addr(b, NL_DEL, &addrs.v[i]);
		char c[CIDR_STRLEN];
		dp_changed(dp, "address %s removed from %s", cidr_str(&addrs.v[i].addr, c), dev);
	}
	nl_addr_list_free(&addrs);
	if (want->len && !have) {
		struct nl_addr a = { .ifindex = ifindex,
				     .addr = *want,
				     .scope = RT_SCOPE_UNIVERSE };
		nl_batch_addr(b, NL_ADD, &a);
		char c[CIDR_STRLEN];
		dp_changed(dp, "address %s added to %s", cidr_str(want, c), dev);
	}
	return 0;
}

static int vxlan_reconcile(struct dataplane *dp, const struct desired_vxlan *vx,
			   const struct felix_config *cfg)
{
	struct nl_batch *b = nl_batch_new();
	const struct nl_link *cur = link_named(dp, VXLAN_DEV);
	int r = 0;
	if (!vx->wanted) {
		if (cur) {
			struct nl_link del;
			nl_link_init(&del);
			del.ifindex = cur->ifindex;
			nl_batch_link(b, NL_DEL, &del);
			dp_changed(dp, "%s deleted: no IP pool uses VXLAN", VXLAN_DEV);
			int ifindex = cur->ifindex;
			r = apply_now(dp, b, "deleting " VXLAN_DEV);
			if (r == 0)
				links_del(dp, ifindex);
		}
		nl_batch_free(b);
		return r;
	}
	const struct nl_link *parent = link_with_addr(dp, &vx->local);
	if (!parent) {
		char ip[IP_STRLEN];
		dp_error(dp, DP_ERR_TUNNEL, "%s: no interface has this node's address %s",
			 VXLAN_DEV, ip_str(&vx->local, ip));
		nl_batch_free(b);
		return -ENODEV;
	}
	uint32_t mtu = vx->mtu ? vx->mtu : (parent->mtu > 50 ? parent->mtu - 50 : 1450);
	if (cur && (strcmp(cur->kind, "vxlan") || cur->vxlan_id != vx->vni ||
		    cur->vxlan_port != vx->port || !ip_equal(&cur->vxlan_local, &vx->local) ||
		    cur->vxlan_link != parent->ifindex || cur->vxlan_learning)) {
		/* Parameters of an existing VXLAN device cannot all be changed: remake it. */
		struct nl_link del;
		nl_link_init(&del);
		del.ifindex = cur->ifindex;
		nl_batch_link(b, NL_DEL, &del);
		dp_changed(dp, "%s recreated: its VXLAN parameters differ", VXLAN_DEV);
		int ifindex = cur->ifindex;
		if ((r = apply_now(dp, b, "recreating " VXLAN_DEV)) < 0)
			goto out;
		links_del(dp, ifindex);
		cur = NULL;
	}
	struct nl_link want;
	nl_link_init(&want);
	snprintf(want.name, sizeof(want.name), VXLAN_DEV);
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
		dp_changed(dp, "%s created (VNI %u, port %u, parent %s, MTU %u)", VXLAN_DEV,
			   vx->vni, vx->port, parent->name, mtu);
	} else if (cur->mtu != mtu || memcmp(cur->mac, vx->mac, 6) || !(cur->flags & IFF_UP)) {
		want.ifindex = cur->ifindex;
		want.kind[0] = '\0';
		nl_batch_link(b, NL_SET, &want);
		dp_changed(dp, "%s updated (MTU %u)", VXLAN_DEV, mtu);
	}
	if (nl_batch_count(b) && (r = apply_now(dp, b, "setting up " VXLAN_DEV)) < 0)
		goto out;
	if ((r = links_dump(dp)) < 0)
		goto out;
	cur = link_named(dp, VXLAN_DEV);
	if (!cur) {
		r = -ENODEV;
		goto out;
	}
	if ((r = ensure_address(dp, b, cur->ifindex, &vx->addr, VXLAN_DEV)) == 0 &&
	    nl_batch_count(b))
		r = apply_now(dp, b, "addressing " VXLAN_DEV);
out:
	nl_batch_free(b);
	return r;
}

static int ipip_reconcile(struct dataplane *dp, const struct desired_ipip *ip,
			  const struct felix_config *cfg)
{
	struct nl_batch *b = nl_batch_new();
	const struct nl_link *cur = link_named(dp, IPIP_DEV);
	int r = 0;
	if (!ip->wanted) {
		dp->ipip_reported = false;
		/* tunl0 cannot be deleted; strip what felix put on it. */
		struct br_cidr none = { 0 };
		if (cur && (r = ensure_address(dp, b, cur->ifindex, &none, IPIP_DEV)) == 0 &&
		    nl_batch_count(b))
			r = apply_now(dp, b, "clearing " IPIP_DEV);
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
		r = nl_apply(dp->nl, b, errs);
		nl_batch_reset(b);
		if (r != 0) {
			int e = r < 0 ? r : errs[0];
			/* Once: it stays true until the pool or the kernel changes. */
			if (!dp->ipip_reported)
				dp_error(dp, DP_ERR_IPIP,
					 "IP pool %s asks for IPIP, but this kernel cannot make %s "
					 "(%s; CONFIG_NET_IPIP): routes through it are not "
					 "programmed; everything else is",
					 ip->wanted_by, IPIP_DEV, strerror(-e));
			dp->ipip_reported = true;
			snprintf(dp->status.problem, sizeof(dp->status.problem),
				 "IPIP unavailable: IP pool %s asks for IPIP but the kernel has no "
				 "ipip support",
				 ip->wanted_by);
			nl_batch_free(b);
			return e;
		}
		dp_changed(dp, "%s created", IPIP_DEV);
		if ((r = links_dump(dp)) < 0 || !(cur = link_named(dp, IPIP_DEV))) {
			nl_batch_free(b);
			return r < 0 ? r : -ENODEV;
		}
	}
	uint32_t mtu = ip->mtu;
	if (!mtu) {
		const struct nl_link *host =
			ip->local.family ? link_with_addr(dp, &ip->local) : NULL;
		mtu = host && host->mtu > 20 ? host->mtu - 20 : 1480;
	}
	if (cur->mtu != mtu || !(cur->flags & IFF_UP)) {
		struct nl_link set;
		nl_link_init(&set);
		set.ifindex = cur->ifindex;
		set.mtu = mtu;
		set.flags = IFF_UP;
		nl_batch_link(b, NL_SET, &set);
		dp_changed(dp, "%s set up (MTU %u)", IPIP_DEV, mtu);
	}
	if ((r = ensure_address(dp, b, cur->ifindex, &ip->addr, IPIP_DEV)) == 0 &&
	    nl_batch_count(b))
		r = apply_now(dp, b, "setting up " IPIP_DEV);
	if (r == 0)
		r = links_dump(dp);
	dp->ipip_reported = false;
	nl_batch_free(b);
	return r;
}

int tunnels_reconcile(struct dataplane *dp, struct desired *d, const struct felix_config *cfg)
{
	dp->status.problem[0] = '\0';
	int r1 = vxlan_reconcile(dp, &d->vxlan, cfg);
	if (r1 < 0)
		snprintf(dp->status.problem, sizeof(dp->status.problem), "%s could not be set up",
			 VXLAN_DEV);
	int r2 = ipip_reconcile(dp, &d->ipip, cfg);
	/* Routes, neighbours and FDB entries on the devices follow them. */
	desired_mark_all_dirty(d, DESIRED_ROUTE);
	desired_mark_all_dirty(d, DESIRED_NEIGH);
	desired_mark_all_dirty(d, DESIRED_FDB);
	return r1 < 0 ? r1 : r2;
}
