/*
 * Routes: felix's IPv4 routes in the main table, recognised by protocol 80.
 * The mirror holds what the kernel has of ours; a route of ours that nobody
 * wants is deleted, except that a route on a workload interface felix never
 * wanted (the CNI plugin's, for an endpoint felix has not heard of yet)
 * survives a grace period first. Routes of other protocols are never touched.
 */
#include "dataplane_internal.h"

#include <errno.h>
#include <linux/rtnetlink.h>
#include <stdio.h>
#include <stdlib.h>

void routes_clear(struct dataplane *dp)
{
	for (struct hmap_iter it = hmap_iter(&dp->routes); hmap_next(&it);)
		free(it.value);
	hmap_clear(&dp->routes);
}

static void mirror_set(struct mirror_route *m, const struct nl_route *r)
{
	m->oif = r->oif;
	m->gw = r->gw;
	m->type = r->type;
	m->scope = r->scope;
	m->onlink = r->onlink;
	m->mtu = (uint16_t)MIN(r->mtu, 65535u);
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
	r->family = AF_INET;
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

int routes_dump(struct dataplane *dp, const struct desired *d, uint64_t now)
{
	struct nl_route_list list = { 0 };
	struct nl_route_filter f = { .family = AF_INET,
				     .table = RT_TABLE_MAIN,
				     .protocol = NL_PROTO_BRINDLE };
	int r = nl_dump_routes(dp->nl, &f, &list);
	if (r < 0) {
		nl_route_list_free(&list);
		return r;
	}
	struct hmap fresh = HMAP_INIT;
	for (size_t i = 0; i < list.n; i++) {
		char key[CIDR_STRLEN + 12], c[CIDR_STRLEN];
		if (list.v[i].priority)
			snprintf(key, sizeof(key), "%s#%u", cidr_str(&list.v[i].dst, c),
				 list.v[i].priority);
		else
			snprintf(key, sizeof(key), "%s", cidr_str(&list.v[i].dst, c));
		struct mirror_route *old = hmap_get(&dp->routes, key);
		struct mirror_route *m = xcalloc(1, sizeof(*m));
		mirror_set(m, &list.v[i]);
		m->known = (old && old->known) || desired_get(d, DESIRED_ROUTE, key) != NULL;
		m->first_seen = old ? old->first_seen : now;
		free(hmap_put(&fresh, key, m));
	}
	nl_route_list_free(&list);
	routes_clear(dp);
	dp->routes = fresh;
	return 0;
}

static bool on_workload_iface(const struct dataplane *dp, const struct nl_route *r,
			      const struct felix_config *cfg)
{
	const struct nl_link *l = r->oif ? link_indexed(dp, r->oif) : NULL;
	return l && felix_is_workload_iface(cfg, l->name);
}

void routes_plan(struct dataplane *dp, struct desired *d, const char *key, uint64_t now,
		 const struct felix_config *cfg)
{
	const struct desired_item *w = desired_get(d, DESIRED_ROUTE, key);
	struct mirror_route *m = hmap_get(&dp->routes, key);
	if (w) {
		const struct desired_route *dr = &w->route;
		struct nl_route want = {
			.family = AF_INET,
			.protocol = NL_PROTO_BRINDLE,
			.table = RT_TABLE_MAIN,
			.type = dr->blackhole ? RTN_BLACKHOLE : RTN_UNICAST,
			.scope = dr->link_scope ? RT_SCOPE_LINK : RT_SCOPE_UNIVERSE,
			.dst = dr->dst,
			.gw = dr->gw,
			.onlink = dr->onlink,
		};
		if (dr->ifname[0]) {
			const struct nl_link *l = link_named(dp, dr->ifname);
			if (!l || !(l->flags & IFF_UP)) {
				/* Programmed when the interface comes up. */
				dp_wait_for_link(dp, dr->ifname, DESIRED_ROUTE, key);
				return;
			}
			if (dr->link_scope &&
			    dp_refuse_host_iface(dp, d, DESIRED_ROUTE, key, dr->ifname))
				return;
			want.oif = l->ifindex;
		}
		if (hmap_get(&dp->foreign, key) == FOREIGN_WAITING)
			return; /* held by another owner: looked at again at the next resync */
		struct nl_route have;
		if (m) {
			m->known = true;
			if (mirror_route_of(key, m, &have) && nl_route_equal(&have, &want))
				return;
		}
		/* Replace only a route of ours; anything else there makes the add fail. */
		enum nl_op op_kind = m ? NL_REPLACE : NL_ADD;
		struct dp_op *op = dp_add_op(dp, DESIRED_ROUTE, op_kind, key,
					     desired_why(d, DESIRED_ROUTE, key));
		op->route = want;
		nl_batch_route(dp->batch, op_kind, &want);
		return;
	}
	hmap_del(&dp->foreign, key);
	struct nl_route have;
	if (!m || !mirror_route_of(key, m, &have))
		return;
	if (!m->known && on_workload_iface(dp, &have, cfg)) {
		uint64_t until = m->first_seen + cfg->route_grace_ms;
		if (now < until) {
			/* Probably the CNI plugin's, ahead of its endpoint: wait. */
			hmap_put(&dp->graceful, key, (void *)1);
			if (!dp->next_deadline || until < dp->next_deadline)
				dp->next_deadline = until;
			return;
		}
	}
	struct dp_op *op = dp_add_op(dp, DESIRED_ROUTE, NL_DEL, key,
				     m->known ? "no longer wanted" : "not wanted by any endpoint");
	op->route = have;
	nl_batch_route(dp->batch, NL_DEL, &have);
}

static void describe(const struct dataplane *dp, const struct nl_route *r, struct strbuf *sb)
{
	char c[CIDR_STRLEN], ip[IP_STRLEN];
	if (r->type == RTN_BLACKHOLE)
		sb_adds(sb, "blackhole ");
	sb_adds(sb, cidr_str(&r->dst, c));
	if (r->gw.family)
		sb_addf(sb, " via %s", ip_str(&r->gw, ip));
	const struct nl_link *l = r->oif ? link_indexed(dp, r->oif) : NULL;
	if (l)
		sb_addf(sb, " dev %s", l->name);
	if (r->onlink)
		sb_adds(sb, " onlink");
}

void routes_done(struct dataplane *dp, const struct dp_op *op, int err)
{
	struct strbuf sb = STRBUF_INIT;
	sb_init(&sb);
	describe(dp, &op->route, &sb);
	hmap_del(&dp->graceful, op->key);
	if (err == 0 || (op->op == NL_DEL && err == -ESRCH)) {
		if (hmap_del(&dp->foreign, op->key))
			log_info("route %s: programmed now that the kernel's other route is gone",
				 op->key);
		if (op->op == NL_DEL) {
			free(hmap_del(&dp->routes, op->key));
			dp_changed(dp, "route %s removed (%s)", sb.buf, op->why);
		} else {
			struct mirror_route *m = xcalloc(1, sizeof(*m));
			mirror_set(m, &op->route);
			m->known = true;
			free(hmap_put(&dp->routes, op->key, m));
			dp_changed(dp, "route %s programmed (%s)", sb.buf, op->why);
		}
	} else if (op->op == NL_ADD && err == -EEXIST) {
		/* Not in our mirror: the CNI plugin's (ours), or someone else's. */
		hmap_put(&dp->conflicts, op->key, (void *)1);
	} else if (err == -ENODEV || err == -ENETDOWN) {
		/* The interface went away between read-back and write. */
		const struct nl_link *l = link_indexed(dp, op->route.oif);
		if (l)
			dp_wait_for_link(dp, l->name, DESIRED_ROUTE, op->key);
		hmap_put(&dp->retry[DESIRED_ROUTE], op->key, (void *)1);
	} else {
		dp_error(dp, DP_ERR_NETLINK, "route %s %s (%s): %s",
			 op->op == NL_DEL   ? "delete"
			 : op->op == NL_ADD ? "add"
					    : "replace",
			 sb.buf, op->why, strerror(-err));
		hmap_put(&dp->retry[DESIRED_ROUTE], op->key, (void *)1);
	}
	sb_free(&sb);
}

/*
 * Routes an add found taken: one read of the main table says whose. Ours (a
 * CNI plugin's route felix had not seen yet) join the mirror and are planned
 * again; anyone else's are left alone, logged once, and looked at again at
 * the next resync.
 */
void routes_resolve_conflicts(struct dataplane *dp, struct desired *d)
{
	if (!dp->conflicts.n)
		return;
	struct nl_route_list list = { 0 };
	struct nl_route_filter f = { .family = AF_INET, .table = RT_TABLE_MAIN };
	int r = nl_dump_routes(dp->nl, &f, &list);
	if (r < 0) {
		dp_error(dp, DP_ERR_DUMP, "reading the main routing table: %s", strerror(-r));
		nl_route_list_free(&list);
		for (struct hmap_iter it = hmap_iter(&dp->conflicts); hmap_next(&it);)
			hmap_put(&dp->retry[DESIRED_ROUTE], it.key, (void *)1);
		hmap_clear(&dp->conflicts);
		return;
	}
	for (struct hmap_iter it = hmap_iter(&dp->conflicts); hmap_next(&it);) {
		const struct nl_route *found = NULL;
		for (size_t i = 0; i < list.n && !found; i++) {
			char c[CIDR_STRLEN];
			if (!list.v[i].priority && streq(cidr_str(&list.v[i].dst, c), it.key))
				found = &list.v[i];
		}
		if (!found || found->protocol == NL_PROTO_BRINDLE) {
			if (found) {
				struct mirror_route *m = xcalloc(1, sizeof(*m));
				mirror_set(m, found);
				m->known = true;
				m->first_seen = 0;
				free(hmap_put(&dp->routes, it.key, m));
			}
			hmap_put(&dp->retry[DESIRED_ROUTE], it.key, (void *)1);
			continue;
		}
		bool reported = hmap_has(&dp->foreign, it.key);
		hmap_put(&dp->foreign, it.key, FOREIGN_WAITING);
		if (reported)
			continue;
		struct strbuf sb = STRBUF_INIT;
		sb_init(&sb);
		describe(dp, found, &sb);
		dp_error(
			dp, DP_ERR_REFUSED,
			"refused: %s wants route %s, but the kernel has %s with protocol %u, which "
			"is not felix's (%u); it is left alone",
			desired_why(d, DESIRED_ROUTE, it.key), it.key, sb.buf, found->protocol,
			NL_PROTO_BRINDLE);
		sb_free(&sb);
	}
	hmap_clear(&dp->conflicts);
	nl_route_list_free(&list);
}
