/*
 * The routes writer: felix's IPv4 and IPv6 routes in the main table,
 * recognised by protocol 80. The mirror holds what the kernel has of ours; a route of ours
 * that nobody wants is deleted, except that a route on a workload interface
 * felix never wanted (the CNI plugin's, for an endpoint felix has not heard
 * of yet) survives a grace period first. Routes of other protocols are never
 * touched: a new route is added, not replaced, so one in its place makes the
 * add fail; one read of the table then says whose it is (ours: adopted; not
 * ours: left alone, reported once, looked at again at the next read-back).
 */
#include "dataplane/links.h"
#include <brindle/sys/clock.h>

#include <errno.h>
#include <linux/rtnetlink.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RETRY_MS 1000

/* Values of the foreign map: a route not ours holds the key. */
#define FOREIGN_WAITING ((void *)1) /* until the next read-back */
#define FOREIGN_RETRY	((void *)2) /* tried again; reported only if that changes */

/*
 * A route of ours as the kernel has it, keyed by its destination, plus
 * "#<metric>" when the metric is not 0 (felix never writes one, so such a
 * route is swept). Table and protocol are always main and 80 (dumps filter
 * on them), so only the rest is kept: this is per route, and there are
 * thousands.
 */
struct mirror_route {
	int oif;
	struct br_ip gw;
	uint8_t type, scope;
	bool onlink;
	bool known;	     /* desired at some point: no grace when it goes */
	uint16_t mtu;	     /* set by someone else: rewritten */
	uint64_t first_seen; /* unknown routes: when first seen */
};

/* A write in the batch, so its result can update the mirror. */
struct route_op {
	enum nl_op op;
	char key[CIDR_STRLEN + 12];
	char why[160];
	struct nl_route route;
};

struct routes {
	struct dp_writer w;
	struct nl *nl;
	const struct links *links;
	struct hmap mirror;    /* key → struct mirror_route * */
	struct hmap waiting;   /* ifname → struct hmap * of route keys waiting for it */
	struct hmap retry;     /* keys to plan again → (void *)1 */
	struct hmap graceful;  /* keys in their grace period */
	struct hmap conflicts; /* keys whose add found a route there (this apply) */
	struct hmap foreign;   /* keys held by a route that is not ours (reported once) */
	struct nl_batch *batch;
	struct route_op *ops;
	size_t n_ops, ops_cap;
	uint64_t grace_ends, retry_at;
};

static struct routes *routes_of(struct dp_writer *w)
{
	return (struct routes *)w;
}

static void mirror_clear(struct hmap *m)
{
	for (struct hmap_iter it = hmap_iter(m); hmap_next(&it);)
		free(it.value);
	hmap_clear(m);
}

/* The interface a route goes out of; none for a blackhole (IPv6's say "lo"). */
static int route_oif(const struct nl_route *r)
{
	return r->type == RTN_BLACKHOLE ? 0 : r->oif;
}

static void mirror_set(struct mirror_route *m, const struct nl_route *r)
{
	m->oif = route_oif(r);
	m->gw = r->gw;
	m->type = r->type;
	m->scope = r->scope;
	m->onlink = r->onlink;
	m->mtu = (uint16_t)MIN(r->mtu, 65535u);
}

#define ROUTE_KEY_LEN (CIDR_STRLEN + 12)

/*
 * The metric the kernel gives an IPv6 route written without one: felix's (and the
 * CNI plugin's) IPv6 routes carry it, and it counts as none.
 */
#define IP6_DEFAULT_METRIC 1024

/* A route's key in the mirror: its destination, "#<metric>" after it when not 0. */
static void route_key(const struct nl_route *r, char key[ROUTE_KEY_LEN])
{
	char c[CIDR_STRLEN];
	if (r->priority && !(r->dst.ip.family == AF_INET6 && r->priority == IP6_DEFAULT_METRIC))
		snprintf(key, ROUTE_KEY_LEN, "%s#%u", cidr_str(&r->dst, c), r->priority);
	else
		snprintf(key, ROUTE_KEY_LEN, "%s", cidr_str(&r->dst, c));
}

/* The full route a mirror entry stands for. */
static bool mirror_route_of(const char *key, const struct mirror_route *m, struct nl_route *r)
{
	memset(r, 0, sizeof(*r));
	char dst[CIDR_STRLEN + 12];
	snprintf(dst, sizeof(dst), "%s", key);
	char *hash = strchr(dst, '#');
	if (hash) {
		*hash = '\0';
		r->priority = (uint32_t)strtoul(hash + 1, NULL, 10);
	}
	if (cidr_parse(dst, false, &r->dst) < 0)
		return false;
	r->family = r->dst.ip.family;
	r->protocol = NL_PROTO_BRINDLE;
	r->table = RT_TABLE_MAIN;
	r->oif = m->oif;
	r->gw = m->gw;
	r->type = m->type;
	r->scope = m->scope;
	r->onlink = m->onlink;
	r->mtu = m->mtu;
	return true;
}

static void clear_waiting(struct routes *rt)
{
	for (struct hmap_iter it = hmap_iter(&rt->waiting); hmap_next(&it);) {
		hmap_clear(it.value);
		free(it.value);
	}
	hmap_clear(&rt->waiting);
}

static void wait_for_link(struct routes *rt, const char *ifname, const char *key)
{
	struct hmap *keys = hmap_get(&rt->waiting, ifname);
	if (!keys) {
		keys = xcalloc(1, sizeof(*keys));
		hmap_put(&rt->waiting, ifname, keys);
	}
	hmap_put(keys, key, (void *)1);
}

/* "blackhole 10.0.0.0/26", "10.244.2.0/26 via 10.244.2.1 dev vxlan.calico onlink" */
static void describe(const struct routes *rt, const struct nl_route *r, struct strbuf *sb)
{
	char c[CIDR_STRLEN], ip[IP_STRLEN];
	if (r->type == RTN_BLACKHOLE)
		sb_adds(sb, "blackhole ");
	sb_adds(sb, cidr_str(&r->dst, c));
	if (r->gw.family)
		sb_addf(sb, " via %s", ip_str(&r->gw, ip));
	const struct nl_link *l = r->oif ? links_indexed(rt->links, r->oif) : NULL;
	if (l)
		sb_addf(sb, " dev %s", l->name);
	if (r->onlink)
		sb_adds(sb, " onlink");
}

/* --- read --------------------------------------------------------------------------------- */

/* The main table's routes of both families (of @protocol, when not 0) into @out. */
static int dump_main(struct routes *rt, uint8_t protocol, struct nl_route_list *out)
{
	static const uint8_t families[] = { AF_INET, AF_INET6 };
	struct nl_route_list one = { 0 };
	int r = 0;
	out->n = 0;
	for (size_t k = 0; k < ARRAY_SIZE(families) && r == 0; k++) {
		struct nl_route_filter f = { .family = families[k],
					     .table = RT_TABLE_MAIN,
					     .protocol = protocol };
		int tries = 0;
		do
			r = nl_dump_routes(rt->nl, &f, &one);
		while (r == -EINTR && ++tries < DP_DUMP_TRIES);
		/* a host without IPv6 has no IPv6 routes to read */
		if (r == -EAFNOSUPPORT && families[k] == AF_INET6) {
			r = 0;
			one.n = 0;
		}
		if (r == 0 && one.n) {
			GROW(out->v, out->cap, out->n + one.n);
			memcpy(out->v + out->n, one.v, one.n * sizeof(*one.v));
			out->n += one.n;
		}
	}
	nl_route_list_free(&one);
	return r;
}

static int routes_read(struct dp_writer *w, const struct dp_input *in)
{
	struct routes *rt = routes_of(w);
	struct nl_route_list list = { 0 };
	int r = dump_main(rt, NL_PROTO_BRINDLE, &list);
	if (r < 0) {
		nl_route_list_free(&list);
		dp_report_error(w->report, DP_ERR_DUMP, "reading the kernel's routes: %s",
				strerror(-r));
		return r;
	}
	w->report->status.resyncs++;
	struct hmap fresh = HMAP_INIT;
	for (size_t i = 0; i < list.n; i++) {
		char key[ROUTE_KEY_LEN];
		route_key(&list.v[i], key);
		struct mirror_route *old = hmap_get(&rt->mirror, key);
		struct mirror_route *m = xcalloc(1, sizeof(*m));
		mirror_set(m, &list.v[i]);
		m->known = (old && old->known) || desired_get(in->routing, DESIRED_ROUTE, key);
		m->first_seen = old ? old->first_seen : in->now_ms;
		free(hmap_put(&fresh, key, m));
	}
	nl_route_list_free(&list);
	mirror_clear(&rt->mirror);
	rt->mirror = fresh;
	clear_waiting(rt);
	hmap_clear(&rt->graceful);
	/* Routes left to another owner are tried again (and reported only if that changes). */
	for (struct hmap_iter it = hmap_iter(&rt->foreign); hmap_next(&it);)
		hmap_put(&rt->foreign, it.key, FOREIGN_RETRY);
	/* Everything that might differ: every route wanted and every route the kernel has. */
	desired_mark_all_dirty(in->routing, DESIRED_ROUTE);
	for (struct hmap_iter it = hmap_iter(&rt->mirror); hmap_next(&it);)
		desired_mark_dirty(in->routing, DESIRED_ROUTE, it.key);
	return 0;
}

/* --- plan --------------------------------------------------------------------------------- */

static struct route_op *add_op(struct routes *rt, enum nl_op op, const char *key, const char *why,
			       const struct nl_route *route)
{
	GROW(rt->ops, rt->ops_cap, rt->n_ops + 1);
	struct route_op *o = &rt->ops[rt->n_ops++];
	o->op = op;
	snprintf(o->key, sizeof(o->key), "%s", key);
	snprintf(o->why, sizeof(o->why), "%s", why ? why : "");
	o->route = *route;
	nl_batch_route(rt->batch, op, route);
	return o;
}

static bool on_workload_iface(const struct routes *rt, const struct nl_route *r,
			      const struct felix_config *cfg)
{
	const struct nl_link *l = r->oif ? links_indexed(rt->links, r->oif) : NULL;
	return l && felix_is_workload_iface(cfg, l->name);
}

static void plan_key(struct routes *rt, const struct dp_input *in, const char *key)
{
	struct desired *d = in->routing;
	const struct desired_item *w = desired_get(d, DESIRED_ROUTE, key);
	struct mirror_route *m = hmap_get(&rt->mirror, key);
	if (w) {
		const struct desired_route *dr = &w->route;
		bool v6 = dr->dst.ip.family == AF_INET6;
		struct nl_route want = {
			.family = dr->dst.ip.family,
			.protocol = NL_PROTO_BRINDLE,
			.table = RT_TABLE_MAIN,
			.type = dr->blackhole ? RTN_BLACKHOLE : RTN_UNICAST,
			/* IPv6 routes have no scope: the kernel keeps them all universe */
			.scope = dr->link_scope && !v6 ? RT_SCOPE_LINK : RT_SCOPE_UNIVERSE,
			.dst = dr->dst,
			.gw = dr->gw,
			.onlink = dr->onlink,
		};
		if (dr->ifname[0]) {
			const struct nl_link *l = links_named(rt->links, dr->ifname);
			if (!l || !(l->flags & IFF_UP)) {
				/* Programmed when the interface comes up. */
				wait_for_link(rt, dr->ifname, key);
				return;
			}
			if (dr->link_scope &&
			    links_refuse_host_iface(rt->links, d, DESIRED_ROUTE, key, dr->ifname))
				return;
			want.oif = l->ifindex;
		}
		if (hmap_get(&rt->foreign, key) == FOREIGN_WAITING)
			return; /* held by another owner: looked at again at the next read-back */
		struct nl_route have;
		if (m) {
			m->known = true;
			if (mirror_route_of(key, m, &have) && nl_route_equal(&have, &want))
				return;
		}
		/* Replace only a route of ours; anything else there makes the add fail. */
		add_op(rt, m ? NL_REPLACE : NL_ADD, key, desired_why(d, DESIRED_ROUTE, key), &want);
		return;
	}
	hmap_del(&rt->foreign, key);
	struct nl_route have;
	if (!m || !mirror_route_of(key, m, &have))
		return;
	if (!m->known && on_workload_iface(rt, &have, in->cfg)) {
		uint64_t until = m->first_seen + in->cfg->route_grace_ms;
		if (in->now_ms < until) {
			/* Probably the CNI plugin's, ahead of its endpoint: wait. */
			hmap_put(&rt->graceful, key, (void *)1);
			if (!rt->grace_ends || until < rt->grace_ends)
				rt->grace_ends = until;
			return;
		}
	}
	add_op(rt, NL_DEL, key, m->known ? "no longer wanted" : "not wanted by any endpoint",
	       &have);
}

static int routes_plan(struct dp_writer *w, const struct dp_input *in)
{
	struct routes *rt = routes_of(w);
	struct desired *d = in->routing;
	nl_batch_reset(rt->batch);
	rt->n_ops = 0;
	rt->grace_ends = 0;
	/* Keys whose grace period may have ended. */
	for (struct hmap_iter it = hmap_iter(&rt->graceful); hmap_next(&it);)
		hmap_put(&rt->retry, it.key, (void *)1);
	hmap_clear(&rt->graceful);
	struct hmap *sets[] = { &d->dirty[DESIRED_ROUTE], &rt->retry };
	size_t cap = sets[0]->n + sets[1]->n;
	char **keys = xmalloc(sizeof(char *) * (cap ? cap : 1));
	size_t count = 0;
	for (int s = 0; s < 2; s++)
		for (struct hmap_iter it = hmap_iter(sets[s]); hmap_next(&it);)
			if (s == 0 || !hmap_has(sets[0], it.key))
				keys[count++] = xstrdup(it.key);
	desired_clear_dirty(d, DESIRED_ROUTE);
	hmap_clear(&rt->retry);
	for (size_t i = 0; i < count; i++) {
		plan_key(rt, in, keys[i]);
		free(keys[i]);
	}
	free(keys);
	return 0;
}

/* --- apply -------------------------------------------------------------------------------- */

/* Fold one write's result into the mirror; false when it failed. */
static bool done(struct routes *rt, const struct route_op *op, int err)
{
	struct dp_report *rep = rt->w.report;
	struct strbuf sb = STRBUF_INIT;
	bool ok = true;
	sb_init(&sb);
	describe(rt, &op->route, &sb);
	hmap_del(&rt->graceful, op->key);
	if (err == 0 || (op->op == NL_DEL && err == -ESRCH)) {
		if (hmap_del(&rt->foreign, op->key))
			log_info("route %s: programmed now that the kernel's other route is gone",
				 op->key);
		if (op->op == NL_DEL) {
			free(hmap_del(&rt->mirror, op->key));
			dp_report_change(rep, "route %s removed (%s)", sb.buf, op->why);
		} else {
			struct mirror_route *m = xcalloc(1, sizeof(*m));
			mirror_set(m, &op->route);
			m->known = true;
			free(hmap_put(&rt->mirror, op->key, m));
			dp_report_change(rep, "route %s programmed (%s)", sb.buf, op->why);
		}
	} else if (op->op == NL_ADD && err == -EEXIST) {
		/* Not in our mirror: the CNI plugin's (ours), or someone else's. */
		hmap_put(&rt->conflicts, op->key, (void *)1);
	} else if (err == -ENODEV || err == -ENETDOWN) {
		/* The interface went away between read-back and write. */
		const struct nl_link *l = links_indexed(rt->links, op->route.oif);
		if (l)
			wait_for_link(rt, l->name, op->key);
		hmap_put(&rt->retry, op->key, (void *)1);
	} else {
		dp_report_error(rep, DP_ERR_NETLINK, "route %s %s (%s): %s",
				op->op == NL_DEL   ? "delete"
				: op->op == NL_ADD ? "add"
						   : "replace",
				sb.buf, op->why, strerror(-err));
		hmap_put(&rt->retry, op->key, (void *)1);
		ok = false;
	}
	sb_free(&sb);
	return ok;
}

/* The routes an add found taken: one read of the main table says whose. */
static int resolve_conflicts(struct routes *rt, const struct desired *d)
{
	struct dp_report *rep = rt->w.report;
	if (!rt->conflicts.n)
		return 0;
	struct nl_route_list list = { 0 };
	int r = dump_main(rt, 0, &list);
	if (r < 0) {
		dp_report_error(rep, DP_ERR_DUMP, "reading the main routing table: %s",
				strerror(-r));
		nl_route_list_free(&list);
		for (struct hmap_iter it = hmap_iter(&rt->conflicts); hmap_next(&it);)
			hmap_put(&rt->retry, it.key, (void *)1);
		hmap_clear(&rt->conflicts);
		return r;
	}
	for (struct hmap_iter it = hmap_iter(&rt->conflicts); hmap_next(&it);) {
		const struct nl_route *found = NULL;
		for (size_t i = 0; i < list.n && !found; i++) {
			char key[ROUTE_KEY_LEN];
			route_key(&list.v[i], key);
			if (streq(key, it.key))
				found = &list.v[i];
		}
		if (!found || found->protocol == NL_PROTO_BRINDLE) {
			/* Ours (a CNI plugin's route felix had not seen yet): adopted. */
			if (found) {
				struct mirror_route *m = xcalloc(1, sizeof(*m));
				mirror_set(m, found);
				m->known = true;
				m->first_seen = 0;
				free(hmap_put(&rt->mirror, it.key, m));
			}
			hmap_put(&rt->retry, it.key, (void *)1);
			continue;
		}
		bool reported = hmap_has(&rt->foreign, it.key);
		hmap_put(&rt->foreign, it.key, FOREIGN_WAITING);
		if (reported)
			continue;
		struct strbuf sb = STRBUF_INIT;
		sb_init(&sb);
		describe(rt, found, &sb);
		dp_report_error(rep, DP_ERR_REFUSED,
				"refused: %s wants route %s, but the kernel has %s with protocol "
				"%u, which is not felix's (%u); it is left alone",
				desired_why(d, DESIRED_ROUTE, it.key), it.key, sb.buf,
				found->protocol, NL_PROTO_BRINDLE);
		sb_free(&sb);
	}
	hmap_clear(&rt->conflicts);
	nl_route_list_free(&list);
	return 0;
}

static int routes_apply(struct dp_writer *w, const struct dp_input *in)
{
	struct routes *rt = routes_of(w);
	struct dp_report *rep = w->report;
	int ret = 0;
	if (rt->n_ops) {
		int *errs = xcalloc(rt->n_ops, sizeof(int));
		int r = nl_apply(rt->nl, rt->batch, errs);
		if (r < 0) {
			/* Nothing is known about what got through: read everything back. */
			dp_report_error(rep, DP_ERR_NETLINK, "sending %zu route changes: %s",
					rt->n_ops, strerror(-r));
			ret = r;
		} else {
			for (size_t i = 0; i < rt->n_ops; i++) {
				if (!errs[i])
					rep->status.writes++;
				if (!done(rt, &rt->ops[i], errs[i]))
					ret = -EIO;
			}
		}
		free(errs);
		int r2 = resolve_conflicts(rt, in->routing);
		if (r2 < 0 && !ret)
			ret = r2;
	}
	/* A cold start plans thousands of writes; do not keep that much for good. */
	if (rt->ops_cap > 1024) {
		free(rt->ops);
		rt->ops = NULL;
		rt->ops_cap = 0;
	}
	rt->n_ops = 0;
	nl_batch_reset(rt->batch);
	rt->retry_at = rt->retry.n ? in->now_ms + RETRY_MS : 0;
	rep->status.routes = rt->mirror.n;
	return ret;
}

/* --- links -------------------------------------------------------------------------------- */

static void routes_link_changed(struct dp_writer *w, const struct nl_link *l, bool deleted)
{
	struct routes *rt = routes_of(w);
	if (deleted) {
		/* The kernel dropped its routes with it. */
		for (struct hmap_iter it = hmap_iter(&rt->mirror); hmap_next(&it);) {
			struct mirror_route *m = it.value;
			if (m->oif == l->ifindex) {
				hmap_put(&rt->retry, it.key, (void *)1);
				free(hmap_del(&rt->mirror, it.key));
			}
		}
		return;
	}
	if (!(l->flags & IFF_UP))
		return;
	/* Whatever waited for it is planned again at the next apply. */
	struct hmap *keys = hmap_del(&rt->waiting, l->name);
	if (!keys)
		return;
	for (struct hmap_iter it = hmap_iter(keys); hmap_next(&it);)
		hmap_put(&rt->retry, it.key, (void *)1);
	hmap_clear(keys);
	free(keys);
}

/* --- route events ------------------------------------------------------------------------- */

/*
 * The kernel's word on a route. Felix's own writes come back this way, and
 * the mirror already holds their result, so an event that agrees with the
 * mirror is an echo. One that does not, for a key of ours: someone deleted,
 * replaced or added it; the mirror takes the kernel's word and the key is
 * planned again at the next turn.
 */
static bool routes_route_changed(struct dp_writer *w, const struct nl_route *r, bool deleted,
				 uint64_t now_ms)
{
	struct routes *rt = routes_of(w);
	if ((r->family != AF_INET && r->family != AF_INET6) || r->table != RT_TABLE_MAIN)
		return false;
	char key[ROUTE_KEY_LEN];
	route_key(r, key);
	struct mirror_route *m = hmap_get(&rt->mirror, key);
	bool ours = r->protocol == NL_PROTO_BRINDLE;
	if (!ours && !m)
		return false; /* someone else's route where we have none */
	if (m && ours) {
		struct nl_route have;
		bool same = mirror_route_of(key, m, &have) && have.oif == route_oif(r) &&
			    have.type == r->type && have.mtu == r->mtu &&
			    ip_equal(&have.gw, &r->gw);
		if (same && !deleted)
			return false; /* an echo of our own add or replace */
	} else if (!m && deleted) {
		return false; /* an echo of our own delete */
	}
	if (m) {
		bool known = m->known;
		free(hmap_del(&rt->mirror, key));
		if (known) {
			rt->w.report->status.drift_repairs[DP_DRIFT_ROUTE]++;
			log_warn("route %s: %s by someone else; felix puts its own back", key,
				 deleted ? "deleted" : "replaced");
		}
	}
	if (ours && !deleted) {
		/* Ours by protocol (the CNI plugin's, or written by hand): judged as a read would.
		 */
		struct mirror_route *n = xcalloc(1, sizeof(*n));
		mirror_set(n, r);
		n->first_seen = now_ms;
		free(hmap_put(&rt->mirror, key, n));
	}
	hmap_put(&rt->retry, key, (void *)1);
	return true;
}

static uint64_t routes_deadline(const struct dp_writer *w)
{
	const struct routes *rt = (const struct routes *)w;
	if (!rt->grace_ends || (rt->retry_at && rt->retry_at < rt->grace_ends))
		return rt->retry_at;
	return rt->grace_ends;
}

static void routes_free(struct dp_writer *w)
{
	struct routes *rt = routes_of(w);
	mirror_clear(&rt->mirror);
	clear_waiting(rt);
	hmap_clear(&rt->retry);
	hmap_clear(&rt->graceful);
	hmap_clear(&rt->conflicts);
	hmap_clear(&rt->foreign);
	nl_batch_free(rt->batch);
	free(rt->ops);
	free(rt);
}

static const struct dp_writer_ops routes_ops = {
	.name = "routes",
	.read = routes_read,
	.plan = routes_plan,
	.apply = routes_apply,
	.link_changed = routes_link_changed,
	.route_changed = routes_route_changed,
	.deadline = routes_deadline,
	.free = routes_free,
};

struct dp_writer *routes_new(struct dp_report *r, struct nl *nl, const struct links *links)
{
	struct routes *rt = xcalloc(1, sizeof(*rt));
	rt->w.ops = &routes_ops;
	rt->w.report = r;
	rt->nl = nl;
	rt->links = links;
	rt->batch = nl_batch_new();
	return &rt->w;
}
