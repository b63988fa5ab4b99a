/*
 * The neighbours writer: neighbours and FDB entries. Ours: permanent
 * neighbours carrying protocol 80 (pod MACs on workload interfaces, remote
 * VTEPs on vxlan.calico and vxlan-v6.calico), and every permanent FDB entry on
 * those two devices.
 * FDB entries are planned before neighbours, both in one netlink batch.
 *
 * The mirrors hold no allocations per entry: a key names the interface and
 * address (and, for FDB, the MAC), so the value needs at most the MAC, which
 * fits in the pointer. At tens of thousands of VTEPs this matters.
 */
#include "dataplane/links.h"
#include <brindle/sys/clock.h>

#include <errno.h>
#include <linux/neighbour.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RETRY_MS 1000

/* A write in the batch, so its result can update the mirror. */
struct neigh_op {
	enum desired_kind kind; /* DESIRED_NEIGH or DESIRED_FDB */
	enum nl_op op;
	char key[128];
	char why[160];
	struct nl_neigh neigh;
};

struct neighs {
	struct dp_writer w;
	struct nl *nl;
	const struct links *links;
	struct hmap neighs;  /* "ifname|ip" → MAC packed in the pointer */
	struct hmap fdbs;    /* "ifname|mac|dst" → (void *)1: the key says it all */
	struct hmap waiting; /* ifname → struct hmap * of "<kind>:<key>" waiting for it */
	struct hmap retry[2];
	struct nl_batch *batch;
	struct neigh_op *ops;
	size_t n_ops, ops_cap;
	uint64_t retry_at;
};

static struct neighs *neighs_of(struct dp_writer *w)
{
	return (struct neighs *)w;
}

/* The mirror and retry set of @kind. */
static struct hmap *mirror_of(struct neighs *n, enum desired_kind kind)
{
	return kind == DESIRED_FDB ? &n->fdbs : &n->neighs;
}

static struct hmap *retry_of(struct neighs *n, enum desired_kind kind)
{
	return &n->retry[kind == DESIRED_FDB];
}

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

static void mac_str(const uint8_t *m, char *buf)
{
	snprintf(buf, 18, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
}

/* The desired-state key of a kernel entry (as calc/desired.c makes them). */
static bool neigh_key(const struct neighs *n, const struct nl_neigh *e, char *key, size_t size)
{
	const struct nl_link *l = links_indexed(n->links, e->ifindex);
	char ip[IP_STRLEN], mac[18];
	if (!l)
		return false;
	if (e->family == AF_BRIDGE) {
		mac_str(e->lladdr, mac);
		snprintf(key, size, "%s|%s|%s", l->name, mac, ip_str(&e->dst, ip));
	} else {
		snprintf(key, size, "%s|%s", l->name, ip_str(&e->dst, ip));
	}
	return true;
}

/* The kernel entry a key stands for ("ifname|ip" or "ifname|mac|dst"). */
static bool from_key(const struct neighs *n, enum desired_kind kind, const char *key,
		     const void *value, struct nl_neigh *out)
{
	char buf[128];
	snprintf(buf, sizeof(buf), "%s", key);
	char *bar = strchr(buf, '|');
	if (!bar)
		return false;
	*bar = '\0';
	const struct nl_link *l = links_named(n->links, buf);
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
		out->protocol = NL_PROTO_BRINDLE;
		if (value != NOT_PERMANENT)
			unpack(value, out->lladdr);
	}
	if (ip_parse(ip, &out->dst) < 0)
		return false;
	if (kind != DESIRED_FDB)
		out->family = (uint8_t)out->dst.family;
	return true;
}

static void clear_waiting(struct neighs *n)
{
	for (struct hmap_iter it = hmap_iter(&n->waiting); hmap_next(&it);) {
		hmap_clear(it.value);
		free(it.value);
	}
	hmap_clear(&n->waiting);
}

static void wait_for_link(struct neighs *n, const char *ifname, enum desired_kind kind,
			  const char *key)
{
	struct hmap *keys = hmap_get(&n->waiting, ifname);
	if (!keys) {
		keys = xcalloc(1, sizeof(*keys));
		hmap_put(&n->waiting, ifname, keys);
	}
	char tagged[160];
	snprintf(tagged, sizeof(tagged), "%d:%s", (int)kind, key);
	hmap_put(keys, tagged, (void *)1);
}

/* --- read --------------------------------------------------------------------------------- */

/* One dump, retried while the kernel's tables change under it. */
static int dump(struct neighs *n, int family, int ifindex, struct nl_neigh_list *list)
{
	int r, tries = 0;
	do
		r = nl_dump_neighs(n->nl, family, ifindex, list);
	while (r == -EINTR && ++tries < DP_DUMP_TRIES);
	return r;
}

static int neighs_read(struct dp_writer *w, const struct dp_input *in)
{
	struct neighs *n = neighs_of(w);
	struct nl_neigh_list list = { 0 };
	hmap_clear(&n->neighs);
	hmap_clear(&n->fdbs);
	char key[128];
	int r = 0;
	/* IPv6 ones only where felix handles IPv6 (a kernel without it has none) */
	for (int f = 0; f < (in->cfg->ipv6_support ? 2 : 1); f++) {
		if ((r = dump(n, f ? AF_INET6 : AF_INET, 0, &list)) < 0)
			goto out;
		for (size_t i = 0; i < list.n; i++) {
			const struct nl_neigh *e = &list.v[i];
			if (e->protocol != NL_PROTO_BRINDLE || !neigh_key(n, e, key, sizeof(key)))
				continue;
			hmap_put(&n->neighs, key,
				 (e->state & NUD_PERMANENT) && e->has_lladdr ? pack(e->lladdr)
									     : NOT_PERMANENT);
		}
	}
	static const char *const devs[] = { VXLAN_DEV, VXLAN6_DEV };
	for (size_t d = 0; d < ARRAY_SIZE(devs); d++) {
		const struct nl_link *vx = links_named(n->links, devs[d]);
		if (!vx)
			continue;
		if ((r = dump(n, AF_BRIDGE, vx->ifindex, &list)) < 0)
			goto out;
		for (size_t i = 0; i < list.n; i++) {
			const struct nl_neigh *e = &list.v[i];
			if ((e->state & NUD_PERMANENT) && e->dst.family &&
			    neigh_key(n, e, key, sizeof(key)))
				hmap_put(&n->fdbs, key, (void *)1);
		}
	}
	/* Everything that might differ: every key wanted and every key the kernel has. */
	clear_waiting(n);
	enum desired_kind kinds[] = { DESIRED_NEIGH, DESIRED_FDB };
	for (int k = 0; k < 2; k++) {
		desired_mark_all_dirty(in->routing, kinds[k]);
		for (struct hmap_iter it = hmap_iter(mirror_of(n, kinds[k])); hmap_next(&it);)
			desired_mark_dirty(in->routing, kinds[k], it.key);
	}
out:
	nl_neigh_list_free(&list);
	if (r < 0)
		dp_report_error(w->report, DP_ERR_DUMP, "reading the kernel's neighbours: %s",
				strerror(-r));
	return r;
}

/* --- plan --------------------------------------------------------------------------------- */

static struct neigh_op *add_op(struct neighs *n, enum desired_kind kind, enum nl_op op,
			       const char *key, const char *why)
{
	GROW(n->ops, n->ops_cap, n->n_ops + 1);
	struct neigh_op *o = &n->ops[n->n_ops++];
	memset(o, 0, sizeof(*o));
	o->kind = kind;
	o->op = op;
	snprintf(o->key, sizeof(o->key), "%s", key);
	snprintf(o->why, sizeof(o->why), "%s", why ? why : "");
	return o;
}

static void plan_key(struct neighs *n, struct desired *d, enum desired_kind kind, const char *key)
{
	const struct desired_item *w = desired_get(d, kind, key);
	struct hmap *mirror = mirror_of(n, kind);
	const void *m = hmap_get(mirror, key);
	if (w) {
		const char *ifname = kind == DESIRED_FDB ? w->fdb.ifname : w->neigh.ifname;
		const struct nl_link *l = links_named(n->links, ifname);
		if (!l) {
			wait_for_link(n, ifname, kind, key);
			return;
		}
		if (kind == DESIRED_NEIGH && !streq(ifname, VXLAN_DEV) &&
		    !streq(ifname, VXLAN6_DEV) &&
		    links_refuse_host_iface(n->links, d, kind, key, ifname))
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
			want.family = (uint8_t)w->neigh.ip.family;
			want.protocol = NL_PROTO_BRINDLE;
			want.dst = w->neigh.ip;
			memcpy(want.lladdr, w->neigh.mac, 6);
		}
		struct neigh_op *op = add_op(n, kind, NL_REPLACE, key, desired_why(d, kind, key));
		op->neigh = want;
		nl_batch_neigh(n->batch, NL_REPLACE, &want);
		return;
	}
	if (!m)
		return;
	struct nl_neigh gone;
	if (!from_key(n, kind, key, m, &gone)) {
		hmap_del(mirror, key); /* its interface went: so did the entry */
		return;
	}
	struct neigh_op *op = add_op(n, kind, NL_DEL, key, "no longer wanted");
	op->neigh = gone;
	nl_batch_neigh(n->batch, NL_DEL, &gone);
}

/* The keys of @kind that are dirty or to be retried, then both cleared. */
static void plan_kind(struct neighs *n, struct desired *d, enum desired_kind kind)
{
	struct hmap *sets[] = { &d->dirty[kind], retry_of(n, kind) };
	size_t cap = sets[0]->n + sets[1]->n;
	char **keys = xmalloc(sizeof(char *) * (cap ? cap : 1));
	size_t count = 0;
	for (int s = 0; s < 2; s++)
		for (struct hmap_iter it = hmap_iter(sets[s]); hmap_next(&it);)
			if (s == 0 || !hmap_has(sets[0], it.key))
				keys[count++] = xstrdup(it.key);
	desired_clear_dirty(d, kind);
	hmap_clear(sets[1]);
	for (size_t i = 0; i < count; i++) {
		plan_key(n, d, kind, keys[i]);
		free(keys[i]);
	}
	free(keys);
}

static int neighs_plan(struct dp_writer *w, const struct dp_input *in)
{
	struct neighs *n = neighs_of(w);
	nl_batch_reset(n->batch);
	n->n_ops = 0;
	plan_kind(n, in->routing, DESIRED_FDB);
	plan_kind(n, in->routing, DESIRED_NEIGH);
	return 0;
}

/* --- apply -------------------------------------------------------------------------------- */

/* Fold one write's result into the mirror; false when it failed. */
static bool done(struct neighs *n, const struct neigh_op *op, int err)
{
	struct dp_report *rep = n->w.report;
	struct hmap *mirror = mirror_of(n, op->kind);
	const char *what = op->kind == DESIRED_FDB ? "FDB entry" : "neighbour";
	if (err == 0 || (op->op == NL_DEL && err == -ENOENT)) {
		if (op->op == NL_DEL) {
			hmap_del(mirror, op->key);
			dp_report_change(rep, "%s %s removed (%s)", what, op->key, op->why);
		} else {
			hmap_put(mirror, op->key,
				 op->kind == DESIRED_FDB ? (void *)1 : pack(op->neigh.lladdr));
			dp_report_change(rep, "%s %s programmed (%s)", what, op->key, op->why);
		}
		return true;
	}
	dp_report_error(rep, DP_ERR_NETLINK, "%s %s %s (%s): %s", what,
			op->op == NL_DEL ? "delete" : "replace", op->key, op->why, strerror(-err));
	hmap_put(retry_of(n, op->kind), op->key, (void *)1);
	return false;
}

static int neighs_apply(struct dp_writer *w, const struct dp_input *in)
{
	struct neighs *n = neighs_of(w);
	struct dp_report *rep = w->report;
	int ret = 0;
	if (n->n_ops) {
		int *errs = xcalloc(n->n_ops, sizeof(int));
		int r = nl_apply(n->nl, n->batch, errs);
		if (r < 0) {
			/* Nothing is known about what got through: read everything back. */
			dp_report_error(rep, DP_ERR_NETLINK, "sending %zu neighbour changes: %s",
					n->n_ops, strerror(-r));
			ret = r;
		} else {
			for (size_t i = 0; i < n->n_ops; i++) {
				if (!errs[i])
					rep->status.writes++;
				if (!done(n, &n->ops[i], errs[i]))
					ret = -EIO;
			}
		}
		free(errs);
	}
	/* A cold start plans thousands of writes; do not keep that much for good. */
	if (n->ops_cap > 1024) {
		free(n->ops);
		n->ops = NULL;
		n->ops_cap = 0;
	}
	n->n_ops = 0;
	nl_batch_reset(n->batch);
	n->retry_at = n->retry[0].n || n->retry[1].n ? in->now_ms + RETRY_MS : 0;
	rep->status.neighs = n->neighs.n;
	rep->status.fdbs = n->fdbs.n;
	return ret;
}

/* --- links -------------------------------------------------------------------------------- */

static void neighs_link_changed(struct dp_writer *w, const struct nl_link *l, bool deleted)
{
	struct neighs *n = neighs_of(w);
	if (deleted) {
		/* The kernel dropped them with it. Keys start with the interface's name. */
		size_t len = strlen(l->name);
		enum desired_kind kinds[] = { DESIRED_NEIGH, DESIRED_FDB };
		for (int k = 0; k < 2; k++) {
			struct hmap *mirror = mirror_of(n, kinds[k]);
			for (struct hmap_iter it = hmap_iter(mirror); hmap_next(&it);)
				if (strncmp(it.key, l->name, len) == 0 && it.key[len] == '|') {
					hmap_put(retry_of(n, kinds[k]), it.key, (void *)1);
					hmap_del(mirror, it.key);
				}
		}
		return;
	}
	if (!(l->flags & IFF_UP))
		return;
	/* Whatever waited for it is planned again at the next apply. */
	struct hmap *keys = hmap_del(&n->waiting, l->name);
	if (!keys)
		return;
	for (struct hmap_iter it = hmap_iter(keys); hmap_next(&it);)
		hmap_put(retry_of(n, (enum desired_kind)(it.key[0] - '0')), it.key + 2, (void *)1);
	hmap_clear(keys);
	free(keys);
}

static uint64_t neighs_deadline(const struct dp_writer *w)
{
	return ((const struct neighs *)w)->retry_at;
}

static void neighs_free(struct dp_writer *w)
{
	struct neighs *n = neighs_of(w);
	hmap_clear(&n->neighs);
	hmap_clear(&n->fdbs);
	clear_waiting(n);
	hmap_clear(&n->retry[0]);
	hmap_clear(&n->retry[1]);
	nl_batch_free(n->batch);
	free(n->ops);
	free(n);
}

static const struct dp_writer_ops neighs_ops = {
	.name = "neighbours",
	.read = neighs_read,
	.plan = neighs_plan,
	.apply = neighs_apply,
	.link_changed = neighs_link_changed,
	.deadline = neighs_deadline,
	.free = neighs_free,
};

struct dp_writer *neighs_new(struct dp_report *r, struct nl *nl, const struct links *links)
{
	struct neighs *n = xcalloc(1, sizeof(*n));
	n->w.ops = &neighs_ops;
	n->w.report = r;
	n->nl = nl;
	n->links = links;
	n->batch = nl_batch_new();
	return &n->w;
}
