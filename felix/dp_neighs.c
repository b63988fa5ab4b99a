/*
 * Neighbours and FDB entries. Ours: permanent IPv4 neighbours carrying
 * protocol 80 (pod MACs on workload interfaces, remote VTEPs on
 * vxlan.calico), and every permanent FDB entry on vxlan.calico.
 */
#include "dataplane_internal.h"

#include <errno.h>
#include <linux/neighbour.h>
#include <stdio.h>
#include <stdlib.h>

void neighs_clear(struct dataplane *dp)
{
	for (struct hmap_iter it = hmap_iter(&dp->neighs); hmap_next(&it);)
		free(it.value);
	hmap_clear(&dp->neighs);
	for (struct hmap_iter it = hmap_iter(&dp->fdbs); hmap_next(&it);)
		free(it.value);
	hmap_clear(&dp->fdbs);
}

static void mac_str(const uint8_t *m, char *buf)
{
	snprintf(buf, 18, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
}

/* The desired-state key of a kernel entry (see dp_item_key). */
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
		struct nl_neigh *copy = xmalloc(sizeof(*copy));
		*copy = *n;
		free(hmap_put(&dp->neighs, key, copy));
	}
	const struct nl_link *vx = link_named(dp, VXLAN_DEV);
	if (vx) {
		r = nl_dump_neighs(dp->nl, AF_BRIDGE, vx->ifindex, &list);
		if (r < 0)
			goto out;
		for (size_t i = 0; i < list.n; i++) {
			const struct nl_neigh *n = &list.v[i];
			if (!(n->state & NUD_PERMANENT) || !n->dst.family ||
			    !neigh_key(dp, n, key, sizeof(key)))
				continue;
			struct nl_neigh *copy = xmalloc(sizeof(*copy));
			*copy = *n;
			free(hmap_put(&dp->fdbs, key, copy));
		}
	}
out:
	nl_neigh_list_free(&list);
	return r;
}

static bool same(const struct nl_neigh *a, const struct nl_neigh *b)
{
	return a->ifindex == b->ifindex && ip_equal(&a->dst, &b->dst) &&
	       memcmp(a->lladdr, b->lladdr, 6) == 0 && (a->state & NUD_PERMANENT) &&
	       (b->state & NUD_PERMANENT) && (a->family == AF_BRIDGE || a->protocol == b->protocol);
}

void neighs_plan(struct dataplane *dp, struct dp_desired *d, enum dp_kind kind, const char *key)
{
	const struct dp_item *w = dp_get(d, kind, key);
	struct hmap *mirror = kind == DP_FDB ? &dp->fdbs : &dp->neighs;
	const struct nl_neigh *m = hmap_get(mirror, key);
	if (w) {
		const char *ifname = kind == DP_FDB ? w->fdb.ifname : w->neigh.ifname;
		const struct nl_link *l = link_named(dp, ifname);
		if (!l) {
			dp_wait_for_link(dp, ifname, kind, key);
			return;
		}
		struct nl_neigh want = { .ifindex = l->ifindex,
					 .has_lladdr = true,
					 .state = NUD_PERMANENT };
		if (kind == DP_FDB) {
			want.family = AF_BRIDGE;
			want.flags = NTF_SELF;
			want.dst = w->fdb.dst;
			memcpy(want.lladdr, w->fdb.mac, 6);
		} else {
			want.family = AF_INET;
			want.protocol = NL_PROTO_BRINDLE;
			want.dst = w->neigh.ip;
			memcpy(want.lladdr, w->neigh.mac, 6);
		}
		if (m && same(m, &want))
			return;
		struct dp_op *op = dp_add_op(dp, kind, NL_REPLACE, key, w->why);
		op->neigh = want;
		nl_batch_neigh(dp->batch, NL_REPLACE, &want);
		return;
	}
	if (!m)
		return;
	struct dp_op *op = dp_add_op(dp, kind, NL_DEL, key, "no longer wanted");
	op->neigh = *m;
	nl_batch_neigh(dp->batch, NL_DEL, m);
}

void neighs_done(struct dataplane *dp, const struct dp_op *op, int err)
{
	struct hmap *mirror = op->kind == DP_FDB ? &dp->fdbs : &dp->neighs;
	const char *what = op->kind == DP_FDB ? "FDB entry" : "neighbour";
	if (err == 0 || (op->op == NL_DEL && err == -ENOENT)) {
		if (op->op == NL_DEL) {
			free(hmap_del(mirror, op->key));
			dp_changed(dp, "%s %s removed (%s)", what, op->key, op->why);
		} else {
			struct nl_neigh *copy = xmalloc(sizeof(*copy));
			*copy = op->neigh;
			free(hmap_put(mirror, op->key, copy));
			dp_changed(dp, "%s %s programmed (%s)", what, op->key, op->why);
		}
		return;
	}
	dp_error(dp, DP_ERR_NETLINK, "%s %s %s (%s): %s", what,
		 op->op == NL_DEL ? "delete" : "replace", op->key, op->why, strerror(-err));
	hmap_put(&dp->retry[op->kind], op->key, (void *)1);
}
