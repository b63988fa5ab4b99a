/*
 * Neighbours and FDB entries. Ours: permanent IPv4 neighbours carrying
 * protocol 80 (pod MACs on workload interfaces, remote VTEPs on
 * vxlan.calico), and every permanent FDB entry on vxlan.calico.
 *
 * The mirrors hold no allocations per entry: a key names the interface and
 * address (and, for FDB, the MAC), so the value needs at most the MAC, which
 * fits in the pointer. At tens of thousands of VTEPs this matters.
 */
#include "dataplane_internal.h"

#include <errno.h>
#include <linux/neighbour.h>
#include <stdio.h>
#include <stdlib.h>

/* Mirror values: bit 0 "present and permanent", bits 8-55 the MAC. */
static void *pack(const uint8_t mac[6])
{
	uint64_t v = 1;
	for (int i = 0; i < 6; i++)
		v |= (uint64_t)mac[i] << (8 + 8 * i);
	return (void *)(uintptr_t)v;
}

static void unpack(const void *p, uint8_t mac[6])
{
	uint64_t v = (uint64_t)(uintptr_t)p;
	for (int i = 0; i < 6; i++)
		mac[i] = (uint8_t)(v >> (8 + 8 * i));
}

/* A kernel entry that is ours but not permanent: rewrite it. */
#define NOT_PERMANENT ((void *)(uintptr_t)2)

void neighs_clear(struct dataplane *dp)
{
	hmap_clear(&dp->neighs);
	hmap_clear(&dp->fdbs);
}

static void mac_str(const uint8_t *m, char *buf)
{
	snprintf(buf, 18, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
}

/* The desired-state key of a kernel entry (see desired.c, item_key). */
static bool neigh_key(const struct dataplane *dp, const struct nl_neigh *n, char *key, size_t size)
{
	const struct nl_link *l = link_indexed(dp, n->ifindex);
	char ip[IP_STRLEN], mac[18];
	if (!l)
		return false;
	if (n->family == AF_BRIDGE) {
		mac_str(n->lladdr, mac);
		snprintf(key, size, "%s|%s|%s", l->name, mac, ip_str(&n->dst, ip));
	} else {
		snprintf(key, size, "%s|%s", l->name, ip_str(&n->dst, ip));
	}
	return true;
}

/* The kernel entry a key stands for ("ifname|ip" or "ifname|mac|dst"). */
static bool from_key(const struct dataplane *dp, enum desired_kind kind, const char *key,
		     const void *value, struct nl_neigh *out)
{
	char buf[128];
	snprintf(buf, sizeof(buf), "%s", key);
	char *bar = strchr(buf, '|');
	if (!bar)
		return false;
	*bar = '\0';
	const struct nl_link *l = link_named(dp, buf);
	if (!l)
		return false;
	memset(out, 0, sizeof(*out));
	out->ifindex = l->ifindex;
	out->has_lladdr = true;
	out->state = NUD_PERMANENT;
	const char *ip = bar + 1;
	if (kind == DESIRED_FDB) {
		unsigned m[6];
		if (sscanf(ip, "%x:%x:%x:%x:%x:%x", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5]) !=
			    6 ||
		    !(ip = strchr(ip, '|')))
			return false;
		ip++;
		for (int i = 0; i < 6; i++)
			out->lladdr[i] = (uint8_t)m[i];
		out->family = AF_BRIDGE;
		out->flags = NTF_SELF;
	} else {
		out->family = AF_INET;
		out->protocol = NL_PROTO_BRINDLE;
		if (value != NOT_PERMANENT)
			unpack(value, out->lladdr);
	}
	return ip_parse(ip, &out->dst) == 0;
}

int neighs_dump(struct dataplane *dp)
{
	struct nl_neigh_list list = { 0 };
	int r = nl_dump_neighs(dp->nl, AF_INET, 0, &list);
	if (r < 0)
		goto out;
	neighs_clear(dp);
	char key[128];
	for (size_t i = 0; i < list.n; i++) {
		const struct nl_neigh *n = &list.v[i];
		if (n->protocol != NL_PROTO_BRINDLE || !neigh_key(dp, n, key, sizeof(key)))
			continue;
		hmap_put(&dp->neighs, key,
			 (n->state & NUD_PERMANENT) && n->has_lladdr ? pack(n->lladdr)
								     : NOT_PERMANENT);
	}
	const struct nl_link *vx = link_named(dp, VXLAN_DEV);
	if (vx) {
		r = nl_dump_neighs(dp->nl, AF_BRIDGE, vx->ifindex, &list);
		if (r < 0)
			goto out;
		for (size_t i = 0; i < list.n; i++) {
			const struct nl_neigh *n = &list.v[i];
			if ((n->state & NUD_PERMANENT) && n->dst.family &&
			    neigh_key(dp, n, key, sizeof(key)))
				hmap_put(&dp->fdbs, key, (void *)1);
		}
	}
out:
	nl_neigh_list_free(&list);
	return r;
}

void neighs_plan(struct dataplane *dp, struct desired *d, enum desired_kind kind, const char *key)
{
	const struct desired_item *w = desired_get(d, kind, key);
	struct hmap *mirror = kind == DESIRED_FDB ? &dp->fdbs : &dp->neighs;
	const void *m = hmap_get(mirror, key);
	if (w) {
		const char *ifname = kind == DESIRED_FDB ? w->fdb.ifname : w->neigh.ifname;
		const struct nl_link *l = link_named(dp, ifname);
		if (!l) {
			dp_wait_for_link(dp, ifname, kind, key);
			return;
		}
		if (kind == DESIRED_NEIGH && !streq(ifname, VXLAN_DEV) &&
		    dp_refuse_host_iface(dp, d, kind, key, ifname))
			return;
		struct nl_neigh want = { .ifindex = l->ifindex,
					 .has_lladdr = true,
					 .state = NUD_PERMANENT };
		if (kind == DESIRED_FDB) {
			/* The key names MAC and destination: present means right. */
			if (m)
				return;
			want.family = AF_BRIDGE;
			want.flags = NTF_SELF;
			want.dst = w->fdb.dst;
			memcpy(want.lladdr, w->fdb.mac, 6);
		} else {
			uint8_t have[6];
			if (m && m != NOT_PERMANENT) {
				unpack(m, have);
				if (memcmp(have, w->neigh.mac, 6) == 0)
					return;
			}
			want.family = AF_INET;
			want.protocol = NL_PROTO_BRINDLE;
			want.dst = w->neigh.ip;
			memcpy(want.lladdr, w->neigh.mac, 6);
		}
		struct dp_op *op = dp_add_op(dp, kind, NL_REPLACE, key, desired_why(d, kind, key));
		op->neigh = want;
		nl_batch_neigh(dp->batch, NL_REPLACE, &want);
		return;
	}
	if (!m)
		return;
	struct nl_neigh gone;
	if (!from_key(dp, kind, key, m, &gone)) {
		hmap_del(mirror, key); /* its interface went: so did the entry */
		return;
	}
	struct dp_op *op = dp_add_op(dp, kind, NL_DEL, key, "no longer wanted");
	op->neigh = gone;
	nl_batch_neigh(dp->batch, NL_DEL, &gone);
}

void neighs_done(struct dataplane *dp, const struct dp_op *op, int err)
{
	struct hmap *mirror = op->kind == DESIRED_FDB ? &dp->fdbs : &dp->neighs;
	const char *what = op->kind == DESIRED_FDB ? "FDB entry" : "neighbour";
	if (err == 0 || (op->op == NL_DEL && err == -ENOENT)) {
		if (op->op == NL_DEL) {
			hmap_del(mirror, op->key);
			dp_changed(dp, "%s %s removed (%s)", what, op->key, op->why);
		} else {
			hmap_put(mirror, op->key,
				 op->kind == DESIRED_FDB ? (void *)1 : pack(op->neigh.lladdr));
			dp_changed(dp, "%s %s programmed (%s)", what, op->key, op->why);
		}
		return;
	}
	dp_error(dp, DP_ERR_NETLINK, "%s %s %s (%s): %s", what,
		 op->op == NL_DEL ? "delete" : "replace", op->key, op->why, strerror(-err));
	hmap_put(&dp->retry[op->kind], op->key, (void *)1);
}
