/*
 * The BGP view (see bgp_view.h for the rules). Everything is computed for
 * one node, in one arena, from sorted copies of the input so the result does
 * not depend on the order the datastore delivered things in.
 */
#include "bgp_view.h"

#include <brindle/core/hmap.h>
#include <brindle/core/net.h>
#include <brindle/core/sel.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#define EXCLUDE_LB_LABEL "node.kubernetes.io/exclude-from-external-load-balancers"

struct node_info {
	const struct br_node *n;
	const char *name;
	bool has[2];
	struct br_ip ip[2];
	const char *ip_str[2];
	const char *subnet[2];
	uint32_t as;
	const char *cluster_id; /* NULL when not a route reflector */
	int listen_port;	/* 0: 179 */
};

struct svec {
	struct bgp_session *v;
	size_t n, cap;
};

struct builder {
	const struct bgp_input *in;
	struct bgp_view *v;
	struct arena *a;
	struct node_info *nodes; /* sorted by name */
	size_t n_nodes;
	struct node_info *me;
	struct hmap node_by_ip; /* canonical address → node_info */
	const struct br_bgpconfig *global, *mine;
	struct hmap configs; /* name → config */
	uint32_t global_as;
	struct svec sessions[2];
	struct hmap seen[2]; /* "address port" → session index, for dedup */
	size_t n_problems, cap_problems;
	const char **problem_v;
	const struct br_bgppeer **peers; /* sorted by name */
};

static void problem(struct builder *b, const char *fmt, ...) printf_like(2, 3);
static void problem(struct builder *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = arena_vprintf(b->a, fmt, ap);
	va_end(ap);
	GROW(b->problem_v, b->cap_problems, b->n_problems + 1);
	b->problem_v[b->n_problems++] = s;
}

static int family_of(const struct br_ip *ip)
{
	return ip->family == AF_INET6 ? BGP_V6 : BGP_V4;
}

static const char *const family_names[] = { "IPv4", "IPv6" };

/* --- nodes and configuration ------------------------------------------------------------ */

static int cmp_node_info(const void *x, const void *y)
{
	return strcmp(((const struct node_info *)x)->name, ((const struct node_info *)y)->name);
}

static const struct br_bgpconfig *config_named(struct builder *b, const char *name)
{
	return hmap_get(&b->configs, name);
}

static int node_listen_port(struct builder *b, const char *node)
{
	char key[300];
	snprintf(key, sizeof(key), "node.%s", node);
	const struct br_bgpconfig *c = config_named(b, key);
	if (c && c->spec.listen_port.set)
		return (int)c->spec.listen_port.v;
	if (b->global && b->global->spec.listen_port.set)
		return (int)b->global->spec.listen_port.v;
	return 0;
}

static void address_of(struct builder *b, struct node_info *ni, int f, const char *text)
{
	struct br_cidr c;
	if (!text || !*text)
		return;
	if (cidr_parse(text, true, &c) < 0 || family_of(&c.ip) != f) {
		problem(b, "node %s: %s address \"%s\" is not usable", ni->name, family_names[f],
			text);
		return;
	}
	char buf[CIDR_STRLEN];
	ni->has[f] = true;
	ni->ip[f] = c.ip;
	ni->ip_str[f] = arena_strdup(b->a, ip_str(&c.ip, buf));
	cidr_mask(&c);
	ni->subnet[f] = arena_strdup(b->a, cidr_str(&c, buf));
}

static void load_nodes(struct builder *b)
{
	const struct bgp_input *in = b->in;
	b->nodes = arena_new_array(b->a, struct node_info, in->n_nodes ? in->n_nodes : 1);
	for (size_t i = 0; i < in->n_nodes; i++) {
		const struct br_node *n = in->nodes[i];
		struct node_info *ni = &b->nodes[b->n_nodes++];
		ni->n = n;
		ni->name = n->o.meta.name;
		const struct br_node_bgp *bgp = n->spec.bgp;
		ni->as = bgp && bgp->as_number.set ? bgp->as_number.v : b->global_as;
		if (bgp) {
			address_of(b, ni, BGP_V4, bgp->ipv4_address);
			address_of(b, ni, BGP_V6, bgp->ipv6_address);
			if (bgp->route_reflector_cluster_id && *bgp->route_reflector_cluster_id)
				ni->cluster_id = bgp->route_reflector_cluster_id;
		}
		ni->listen_port = node_listen_port(b, ni->name);
	}
	qsort(b->nodes, b->n_nodes, sizeof(*b->nodes), cmp_node_info);
	for (size_t i = 0; i < b->n_nodes; i++) {
		struct node_info *ni = &b->nodes[i];
		if (streq(ni->name, in->node_name))
			b->me = ni;
		for (int f = 0; f < 2; f++)
			if (ni->has[f] && !hmap_has(&b->node_by_ip, ni->ip_str[f]))
				hmap_put(&b->node_by_ip, ni->ip_str[f], ni);
	}
}

static bool node_selected(const struct node_info *ni, const struct sel *s)
{
	struct sel_labels l = sel_labels_of(&ni->n->o.meta.labels);
	return sel_eval(s, &l);
}

/* --- sessions ---------------------------------------------------------------------------- */

static const char *peer_key(char buf[80], const struct br_ip *ip, uint16_t port)
{
	char a[IP_STRLEN];
	snprintf(buf, 80, "%s %u", ip_str(ip, a), port ? port : 179);
	return buf;
}

/* Adds @s unless a session to the same address and port exists. */
static void add_session(struct builder *b, int f, const struct bgp_session *s)
{
	char key[80];
	if (hmap_has(&b->seen[f], peer_key(key, &s->ip, s->port)))
		return;
	struct svec *sv = &b->sessions[f];
	GROW(sv->v, sv->cap, sv->n + 1);
	sv->v[sv->n] = *s;
	hmap_put(&b->seen[f], key, (void *)(uintptr_t)(sv->n + 1));
	sv->n++;
}

static bool passive_towards(const char *mine, const char *peer)
{
	return strcmp(peer, mine) > 0;
}

static void add_mesh(struct builder *b)
{
	const struct br_bgpconfig_spec *g = b->global ? &b->global->spec : NULL;
	bool enabled = !g || !g->node_to_node_mesh_enabled.set || g->node_to_node_mesh_enabled.v;
	if (!enabled || b->me->cluster_id)
		return;
	const char *password = NULL;
	if (g && g->node_mesh_password) {
		struct strbuf err = STRBUF_INIT;
		sb_init(&err);
		int r = b->in->password
				? b->in->password(b->in->password_ctx, g->node_mesh_password, b->a,
						  &password, &err)
				: -ENOSYS;
		if (r < 0) {
			problem(b,
				"bgpconfiguration default: nodeMeshPassword cannot be read (%s); "
				"no mesh sessions until it can",
				err.len ? sb_str(&err) : "no password source");
			sb_free(&err);
			return;
		}
		sb_free(&err);
	}
	int64_t restart = g && g->node_mesh_max_restart_time.text
				  ? g->node_mesh_max_restart_time.ms / 1000
				  : 0;
	for (size_t i = 0; i < b->n_nodes; i++) {
		const struct node_info *p = &b->nodes[i];
		if (p->cluster_id)
			continue;
		for (int f = 0; f < 2; f++) {
			if (!b->me->has[f] || !p->has[f] || ip_equal(&p->ip[f], &b->me->ip[f]))
				continue;
			struct bgp_session s = {
				.type = BGP_PEER_MESH,
				.ip = p->ip[f],
				.peer_ip = p->ip_str[f],
				.port = (uint16_t)p->listen_port,
				.as = p->as,
				.local_as = b->me->as,
				.source_address = b->me->ip_str[f],
				.password = password,
				.restart_time_s = restart,
				.peer_node = p->name,
				.origin = "node-to-node mesh",
			};
			s.ibgp = s.as == s.local_as;
			s.passive = passive_towards(b->me->ip_str[f], s.peer_ip);
			s.strict_bind = b->v->bind_node_ip;
			bgp_session_name(BGP_PEER_MESH, &s.ip, 0, s.name);
			add_session(b, f, &s);
		}
	}
}

/* Session settings a BGPPeer gives, whichever way round it applies. */
static bool peer_settings(struct builder *b, const struct br_bgppeer *bp, int f,
			  struct bgp_session *s)
{
	const struct br_bgppeer_spec *p = &bp->spec;
	if (!streq(p->source_address, "None"))
		s->source_address = b->me->ip_str[f];
	if (p->max_restart_time.text)
		s->restart_time_s = p->max_restart_time.ms / 1000;
	if (p->keepalive_time.text)
		s->keepalive_time_s = MAX(p->keepalive_time.ms / 1000, 1);
	if (p->ttl_security.set)
		s->ttl_security = (int)p->ttl_security.v;
	if (p->num_allowed_local_as_numbers.set)
		s->allow_local_as = (int)p->num_allowed_local_as_numbers.v;
	if (streq(p->next_hop_mode, "Self"))
		s->next_hop = "self";
	else if (streq(p->next_hop_mode, "Keep"))
		s->next_hop = "keep";
	else if (p->keep_original_next_hop && !s->ibgp)
		s->next_hop = "keep";
	if (p->n_filters) {
		s->filters = arena_new_array(b->a, const struct br_bgpfilter *, p->n_filters);
		for (size_t i = 0; i < p->n_filters; i++) {
			const struct br_bgpfilter *found = NULL;
			for (size_t k = 0; k < b->in->n_filters && !found; k++)
				if (streq(b->in->filters[k]->o.meta.name, p->filters[i]))
					found = b->in->filters[k];
			if (!found) {
				/* Left out rather than run without a filter that may hold back
				 * routes: what it would let through is not known. */
				problem(b,
					"bgppeer %s: BGPFilter %s does not exist; no session to %s",
					bp->o.meta.name, p->filters[i], s->peer_ip);
				return false;
			}
			s->filters[s->n_filters++] = found;
		}
	}
	if (p->password) {
		struct strbuf err = STRBUF_INIT;
		sb_init(&err);
		int r = b->in->password ? b->in->password(b->in->password_ctx, p->password, b->a,
							  &s->password, &err)
					: -ENOSYS;
		if (r < 0) {
			problem(b, "bgppeer %s: password cannot be read (%s); no session to %s",
				bp->o.meta.name, err.len ? sb_str(&err) : "no password source",
				s->peer_ip);
			sb_free(&err);
			return false;
		}
		sb_free(&err);
	}
	return true;
}

/*
 * @address_rule: the smaller address waits for the other (passive), as Calico
 * does for mesh peers and global peers given by IP; never for peers a
 * peerSelector gives (Calico makes those active on both sides).
 */
static void finish_session(struct builder *b, struct bgp_session *s, int f, bool address_rule)
{
	s->ibgp = s->as == s->local_as;
	const char *peer_cluster = NULL;
	if (s->peer_node) {
		const struct node_info *pn = hmap_get(&b->node_by_ip, s->peer_ip);
		peer_cluster = pn ? pn->cluster_id : NULL;
	}
	if (s->ibgp && b->me->cluster_id && !streq(peer_cluster, b->me->cluster_id)) {
		s->rr_client = true;
		s->rr_cluster_id = b->me->cluster_id;
	}
	if (address_rule && s->type == BGP_PEER_GLOBAL && s->peer_node)
		s->passive = passive_towards(b->me->ip_str[f], s->peer_ip);
	if (b->v->bind_node_ip && s->source_address)
		s->strict_bind = true;
	bgp_session_name(s->type, &s->ip, s->port, s->name);
}

struct peer_ctx {
	const struct br_bgppeer *bp;
	struct sel *node_sel, *peer_sel;
	bool global;
};

/* Does the local side of @pc (node, nodeSelector, or every node) include @ni? */
static bool local_side_has(const struct peer_ctx *pc, const struct node_info *ni)
{
	const struct br_bgppeer_spec *p = &pc->bp->spec;
	if (pc->global)
		return true;
	if (p->node && *p->node)
		return streq(p->node, ni->name);
	return pc->node_sel && node_selected(ni, pc->node_sel);
}

/* Sessions this node has because a BGPPeer's local side selects it. */
static void add_forward(struct builder *b, const struct peer_ctx *pc)
{
	const struct br_bgppeer_spec *p = &pc->bp->spec;
	enum bgp_peer_type type = pc->global ? BGP_PEER_GLOBAL : BGP_PEER_NODE;
	char *origin = arena_printf(b->a, "bgppeer %s", pc->bp->o.meta.name);
	uint32_t local_as = p->local_as_number.set ? p->local_as_number.v : b->me->as;
	if (pc->peer_sel) {
		for (size_t i = 0; i < b->n_nodes; i++) {
			const struct node_info *n = &b->nodes[i];
			if (!node_selected(n, pc->peer_sel))
				continue;
			for (int f = 0; f < 2; f++) {
				if (!b->me->has[f] || !n->has[f] ||
				    ip_equal(&n->ip[f], &b->me->ip[f]))
					continue;
				struct bgp_session s = {
					.type = type,
					.ip = n->ip[f],
					.peer_ip = n->ip_str[f],
					.port = (uint16_t)n->listen_port,
					.as = n->as,
					.local_as = local_as,
					.peer_node = n->name,
					.origin = origin,
				};
				s.ibgp = s.as == s.local_as;
				if (!peer_settings(b, pc->bp, f, &s))
					continue;
				finish_session(b, &s, f, false);
				add_session(b, f, &s);
			}
		}
		return;
	}
	char addr[IP_STRLEN];
	uint16_t port;
	struct br_ip ip;
	if (peer_ip_parse(p->peer_ip, addr, &port) < 0 || ip_parse(addr, &ip) < 0) {
		problem(b, "bgppeer %s: peerIP \"%s\" does not parse", pc->bp->o.meta.name,
			p->peer_ip);
		return;
	}
	int f = family_of(&ip);
	if (!b->me->has[f] || ip_equal(&ip, &b->me->ip[f]))
		return;
	char canon[IP_STRLEN];
	const struct node_info *n = hmap_get(&b->node_by_ip, ip_str(&ip, canon));
	struct bgp_session s = {
		.type = type,
		.ip = ip,
		.peer_ip = arena_strdup(b->a, canon),
		.port = port,
		.as = p->as_number.v,
		.local_as = local_as,
		.peer_node = n ? n->name : NULL,
		.origin = origin,
	};
	/* A Brindle node listens where its configuration says. */
	if (n && !port && n->as == s.as)
		s.port = (uint16_t)n->listen_port;
	s.ibgp = s.as == s.local_as;
	if (!peer_settings(b, pc->bp, f, &s))
		return;
	finish_session(b, &s, f, true);
	add_session(b, f, &s);
}

/* Does the peer side of @pc select this node (so it owes the reverse peerings)? */
static bool peer_side_has_me(struct builder *b, const struct peer_ctx *pc, int *only_family)
{
	const struct br_bgppeer_spec *p = &pc->bp->spec;
	*only_family = -1;
	if (pc->peer_sel)
		return node_selected(b->me, pc->peer_sel);
	char addr[IP_STRLEN];
	uint16_t port;
	struct br_ip ip;
	if (peer_ip_parse(p->peer_ip, addr, &port) < 0 || ip_parse(addr, &ip) < 0)
		return false;
	int f = family_of(&ip);
	if (!b->me->has[f] || !ip_equal(&ip, &b->me->ip[f]) || p->as_number.v != b->me->as)
		return false;
	if (port && port != (b->me->listen_port ? b->me->listen_port : 179))
		return false;
	*only_family = f;
	return true;
}

static void add_reverse(struct builder *b, const struct peer_ctx *pc)
{
	const struct br_bgppeer_spec *p = &pc->bp->spec;
	int only;
	if (streq(p->reverse_peering, "Manual") || !peer_side_has_me(b, pc, &only))
		return;
	char *origin = arena_printf(b->a, "bgppeer %s (reverse)", pc->bp->o.meta.name);
	for (size_t i = 0; i < b->n_nodes; i++) {
		const struct node_info *n = &b->nodes[i];
		if (n == b->me || !local_side_has(pc, n))
			continue;
		for (int f = 0; f < 2; f++) {
			if ((only >= 0 && f != only) || !b->me->has[f] || !n->has[f] ||
			    ip_equal(&n->ip[f], &b->me->ip[f]))
				continue;
			struct bgp_session s = {
				.type = BGP_PEER_NODE,
				.ip = n->ip[f],
				.peer_ip = n->ip_str[f],
				.port = (uint16_t)n->listen_port,
				/* The other side speaks with the BGPPeer's localASNumber, if any.
				 */
				.as = p->local_as_number.set ? p->local_as_number.v : n->as,
				.local_as = b->me->as,
				.peer_node = n->name,
				.origin = origin,
			};
			s.ibgp = s.as == s.local_as;
			if (!peer_settings(b, pc->bp, f, &s))
				continue;
			finish_session(b, &s, f, false);
			add_session(b, f, &s);
		}
	}
}

static int cmp_peer(const void *x, const void *y)
{
	const struct br_bgppeer *a = *(const struct br_bgppeer *const *)x;
	const struct br_bgppeer *c = *(const struct br_bgppeer *const *)y;
	return strcmp(a->o.meta.name, c->o.meta.name);
}

static void add_peers(struct builder *b)
{
	size_t n = b->in->n_peers;
	const struct br_bgppeer **sorted = arena_new_array(b->a, const struct br_bgppeer *, n + 1);
	if (n)
		memcpy(sorted, b->in->peers, n * sizeof(*sorted));
	qsort(sorted, n, sizeof(*sorted), cmp_peer);
	b->peers = sorted;
	struct peer_ctx *pcs = xcalloc(n + 1, sizeof(*pcs));
	for (size_t i = 0; i < n; i++) {
		const struct br_bgppeer_spec *p = &sorted[i]->spec;
		struct peer_ctx *pc = &pcs[i];
		pc->bp = sorted[i];
		bool has_node = p->node && *p->node;
		bool has_node_sel = p->node_selector && *p->node_selector;
		pc->global = !has_node && !has_node_sel;
		/* Neither peerIP nor peerSelector: a peer of no one (Calico accepts it). */
		if (!(p->peer_ip && *p->peer_ip) && !(p->peer_selector && *p->peer_selector)) {
			pc->bp = NULL;
			continue;
		}
		struct strbuf err = STRBUF_INIT;
		sb_init(&err);
		if ((has_node_sel && sel_parse(p->node_selector, &pc->node_sel, &err) < 0) ||
		    (p->peer_selector && *p->peer_selector &&
		     sel_parse(p->peer_selector, &pc->peer_sel, &err) < 0)) {
			problem(b, "bgppeer %s: %s", sorted[i]->o.meta.name, sb_str(&err));
			pc->bp = NULL;
		}
		sb_free(&err);
	}
	/* Global peers first, then node-specific ones, then reverse peerings: first wins. */
	for (int pass = 0; pass < 3; pass++) {
		for (size_t i = 0; i < n; i++) {
			struct peer_ctx *pc = &pcs[i];
			if (!pc->bp)
				continue;
			if (pass == 0 && pc->global)
				add_forward(b, pc);
			else if (pass == 1 && !pc->global && local_side_has(pc, b->me))
				add_forward(b, pc);
			else if (pass == 2)
				add_reverse(b, pc);
		}
	}
	for (size_t i = 0; i < n; i++) {
		sel_free(pcs[i].node_sel);
		sel_free(pcs[i].peer_sel);
	}
	free(pcs);
}

static int cmp_session(const void *x, const void *y)
{
	return strcmp(((const struct bgp_session *)x)->name, ((const struct bgp_session *)y)->name);
}

/* --- prefixes ---------------------------------------------------------------------------- */

struct cvec {
	struct br_cidr *v;
	const char **why;
	size_t n, cap, cap2;
};

static void cvec_add(struct cvec *c, const struct br_cidr *x, const char *why)
{
	GROW(c->v, c->cap, c->n + 1);
	GROW(c->why, c->cap2, c->n + 1);
	c->v[c->n] = *x;
	c->why[c->n++] = why;
}

/* Sorted, without duplicates (the first reason given for a prefix wins). */
static size_t cvec_sort_unique(struct cvec *c)
{
	/* Stable: sort indices, so the first reason survives. */
	size_t *idx = xcalloc(c->n + 1, sizeof(size_t));
	for (size_t i = 0; i < c->n; i++)
		idx[i] = i;
	for (size_t i = 1; i < c->n; i++) /* insertion sort keeps stability; lists are short */
		for (size_t j = i; j > 0; j--) {
			int d = cidr_cmp(&c->v[idx[j - 1]], &c->v[idx[j]]);
			if (d < 0 || (d == 0 && idx[j - 1] < idx[j]))
				break;
			size_t t = idx[j];
			idx[j] = idx[j - 1];
			idx[j - 1] = t;
		}
	struct br_cidr *v = xcalloc(c->n + 1, sizeof(*v));
	const char **why = xcalloc(c->n + 1, sizeof(char *));
	size_t k = 0;
	for (size_t i = 0; i < c->n; i++) {
		if (k && cidr_cmp(&v[k - 1], &c->v[idx[i]]) == 0)
			continue;
		v[k] = c->v[idx[i]];
		why[k++] = c->why[idx[i]];
	}
	free(idx);
	free(c->v);
	free(c->why);
	c->v = v;
	c->why = why;
	c->n = k;
	c->cap = c->cap2 = k + 1;
	return k;
}

static void cvec_free(struct cvec *c)
{
	free(c->v);
	free(c->why);
}

static const char *cidr_text(struct builder *b, const struct br_cidr *c)
{
	char buf[CIDR_STRLEN];
	return arena_strdup(b->a, cidr_str(c, buf));
}

static void load_blocks(struct builder *b, int f, struct cvec *statics)
{
	struct bgp_family_view *fv = &b->v->fam[f];
	struct cvec blocks = { 0 };
	for (size_t i = 0; i < b->in->n_affinities; i++) {
		const struct br_blockaffinity_spec *s = &b->in->affinities[i]->spec;
		struct br_cidr c;
		if (!streq(s->node, b->me->name) || !streq(s->state, "confirmed") || s->deleted ||
		    cidr_parse(s->cidr, false, &c) < 0 || family_of(&c.ip) != f)
			continue;
		cidr_mask(&c);
		cvec_add(&blocks, &c, "block");
	}
	cvec_sort_unique(&blocks);
	fv->blocks = arena_new_array(b->a, struct bgp_block, blocks.n + 1);
	for (size_t i = 0; i < blocks.n; i++) {
		struct bgp_block *bl = &fv->blocks[fv->n_blocks++];
		bl->cidr = cidr_text(b, &blocks.v[i]);
		cvec_add(statics, &blocks.v[i], "block");
	}
	cvec_free(&blocks);
}

static int cmp_pool(const void *x, const void *y)
{
	const struct bgp_pool *p = x, *q = y;
	struct br_cidr a, c;
	if (cidr_parse(p->cidr, false, &a) < 0 || cidr_parse(q->cidr, false, &c) < 0)
		return 0;
	int d = cidr_cmp(&a, &c);
	return d ? d : strcmp(p->name, q->name);
}

static enum bgp_pool_mode pool_mode(const struct br_ippool_spec *s)
{
	if (streq(s->ipip_mode, "Always") || streq(s->vxlan_mode, "Always"))
		return BGP_POOL_TUNNEL;
	if (streq(s->ipip_mode, "CrossSubnet") || streq(s->vxlan_mode, "CrossSubnet"))
		return BGP_POOL_CROSS_SUBNET;
	return BGP_POOL_PLAIN;
}

static void load_pools(struct builder *b, int f)
{
	struct bgp_family_view *fv = &b->v->fam[f];
	fv->pools = arena_new_array(b->a, struct bgp_pool, b->in->n_pools + 1);
	for (size_t i = 0; i < b->in->n_pools; i++) {
		const struct br_ippool *p = b->in->pools[i];
		struct br_cidr c;
		if (cidr_parse(p->spec.cidr, false, &c) < 0 || family_of(&c.ip) != f)
			continue;
		cidr_mask(&c);
		fv->pools[fv->n_pools++] = (struct bgp_pool){
			.cidr = cidr_text(b, &c),
			.name = p->o.meta.name,
			.mode = pool_mode(&p->spec),
			.export = !p->spec.disable_bgp_export,
		};
	}
	qsort(fv->pools, fv->n_pools, sizeof(*fv->pools), cmp_pool);
	/* Two pools with one CIDR (the datastore does not forbid it): the first name wins. */
	size_t k = 0;
	for (size_t i = 0; i < fv->n_pools; i++) {
		if (k && streq(fv->pools[k - 1].cidr, fv->pools[i].cidr)) {
			problem(b, "ippool %s: same CIDR %s as ippool %s; ignored",
				fv->pools[i].name, fv->pools[i].cidr, fv->pools[k - 1].name);
			continue;
		}
		fv->pools[k++] = fv->pools[i];
	}
	fv->n_pools = k;
}

/* --- services ----------------------------------------------------------------------------- */

enum svc_kind {
	SVC_CLUSTER,
	SVC_EXTERNAL,
	SVC_LB
};

struct svc_ranges {
	struct br_cidr *v[3];
	size_t n[3];
};

static void load_ranges(struct builder *b, int f, struct svc_ranges *r, struct cvec *statics)
{
	if (!b->global)
		return;
	const struct br_bgpconfig_spec *g = &b->global->spec;
	const struct br_cidr_entry *lists[3] = { g->service_cluster_ips, g->service_external_ips,
						 g->service_load_balancer_ips };
	size_t counts[3] = { g->n_service_cluster_ips, g->n_service_external_ips,
			     g->n_service_load_balancer_ips };
	static const char *const whys[3] = { "service cluster IPs", "service external IPs",
					     "service load-balancer IPs" };
	struct bgp_family_view *fv = &b->v->fam[f];
	bool excluded = labels_has(&b->me->n->o.meta.labels, EXCLUDE_LB_LABEL);
	struct cvec all = { 0 };
	for (int k = 0; k < 3; k++) {
		r->v[k] = arena_new_array(b->a, struct br_cidr, counts[k] + 1);
		for (size_t i = 0; i < counts[k]; i++) {
			struct br_cidr c;
			/* an entry without a cidr says nothing (Calico accepts and ignores it) */
			if (!lists[k][i].cidr || cidr_parse(lists[k][i].cidr, false, &c) < 0 ||
			    family_of(&c.ip) != f)
				continue;
			cidr_mask(&c);
			r->v[k][r->n[k]++] = c;
			cvec_add(&all, &c, whys[k]);
			/* A single address of the external/LB lists is advertised per service. */
			bool single = c.len == ip_bits(&c.ip) && k != SVC_CLUSTER;
			if (!single && !excluded)
				cvec_add(statics, &c, whys[k]);
		}
	}
	cvec_sort_unique(&all);
	fv->service_ranges = arena_new_array(b->a, const char *, all.n + 1);
	for (size_t i = 0; i < all.n; i++)
		fv->service_ranges[fv->n_service_ranges++] = cidr_text(b, &all.v[i]);
	cvec_free(&all);
}

/* The configured entry of @kind holding @ip; *exact when it is that one address. */
static bool in_ranges(const struct svc_ranges *r, enum svc_kind kind, const struct br_ip *ip,
		      bool *exact)
{
	bool found = false;
	*exact = false;
	for (size_t i = 0; i < r->n[kind]; i++) {
		if (!cidr_contains_ip(&r->v[kind][i], ip))
			continue;
		found = true;
		if (r->v[kind][i].len == ip_bits(ip))
			*exact = true;
	}
	return found;
}

static int cmp_service(const void *x, const void *y)
{
	const struct br_object *a = *(const struct br_object *const *)x;
	const struct br_object *c = *(const struct br_object *const *)y;
	int d = strcmp(model_ns(a), model_ns(c));
	return d ? d : strcmp(a->meta.name, c->meta.name);
}

/* "<ns>/<service> <family>" for services with a ready endpoint on this node. */
static void index_local_endpoints(struct builder *b, struct hmap *local)
{
	for (size_t i = 0; i < b->in->n_slices; i++) {
		const struct br_endpointslice *es = b->in->slices[i];
		const char *svc = labels_get(&es->o.meta.labels, K8S_SERVICE_NAME_LABEL);
		int f = streq(es->spec.address_type, "IPv4")   ? BGP_V4
			: streq(es->spec.address_type, "IPv6") ? BGP_V6
							       : -1;
		if (!svc || f < 0)
			continue;
		for (size_t j = 0; j < es->spec.n_endpoints; j++) {
			const struct br_endpoint *e = &es->spec.endpoints[j];
			bool ready = !e->conditions.ready.set || e->conditions.ready.v;
			if (ready && e->n_addresses && streq(e->node_name, b->me->name)) {
				char key[600];
				snprintf(key, sizeof(key), "%s/%s %d", model_ns(&es->o), svc, f);
				hmap_put(local, key, (void *)1);
				break;
			}
		}
	}
}

static void add_service_ip(struct builder *b, int f, const struct svc_ranges *r,
			   const struct br_service *svc, enum svc_kind kind, const char *text,
			   bool local_ready, struct cvec *statics)
{
	struct br_ip ip;
	bool exact;
	if (!text || ip_parse(text, &ip) < 0 || family_of(&ip) != f ||
	    !in_ranges(r, kind, &ip, &exact))
		return;
	bool local = streq(svc->spec.external_traffic_policy, "Local");
	/* Local: only where an endpoint is ready. Cluster: a listed single address, everywhere. */
	if (local ? !local_ready : !(exact && kind != SVC_CLUSTER))
		return;
	struct br_cidr c = { .ip = ip, .len = (uint8_t)ip_bits(&ip) };
	cvec_add(statics, &c,
		 arena_printf(b->a, "service %s/%s", model_ns(&svc->o), svc->o.meta.name));
}

static void load_services(struct builder *b, int f, const struct svc_ranges *r,
			  struct cvec *statics)
{
	if (labels_has(&b->me->n->o.meta.labels, EXCLUDE_LB_LABEL))
		return;
	size_t n = b->in->n_services;
	const struct br_service **sorted = arena_new_array(b->a, const struct br_service *, n + 1);
	if (n)
		memcpy(sorted, b->in->services, n * sizeof(*sorted));
	qsort(sorted, n, sizeof(*sorted), cmp_service);
	struct hmap local = HMAP_INIT;
	index_local_endpoints(b, &local);
	for (size_t i = 0; i < n; i++) {
		const struct br_service *svc = sorted[i];
		const struct br_service_spec *s = &svc->spec;
		if (streq(s->type, "ExternalName") || streq(s->cluster_ip, "None"))
			continue;
		char key[600];
		snprintf(key, sizeof(key), "%s/%s %d", model_ns(&svc->o), svc->o.meta.name, f);
		bool ready = hmap_has(&local, key);
		bool is_local = streq(s->external_traffic_policy, "Local");
		for (size_t j = 0; is_local && j < s->n_cluster_ips; j++)
			add_service_ip(b, f, r, svc, SVC_CLUSTER, s->cluster_ips[j], ready,
				       statics);
		for (size_t j = 0; j < s->n_external_ips; j++)
			add_service_ip(b, f, r, svc, SVC_EXTERNAL, s->external_ips[j], ready,
				       statics);
		if (streq(s->type, "LoadBalancer")) {
			add_service_ip(b, f, r, svc, SVC_LB, s->load_balancer_ip, ready, statics);
			const struct br_lb_status *lb = &svc->status.load_balancer;
			for (size_t j = 0; j < lb->n_ingress; j++)
				add_service_ip(b, f, r, svc, SVC_LB, lb->ingress[j].ip, ready,
					       statics);
		}
	}
	hmap_clear(&local);
}

/* --- communities ---------------------------------------------------------------------------- */

static void load_communities(struct builder *b, int f)
{
	const struct br_bgpconfig *src = NULL;
	if (b->mine && b->mine->spec.n_prefix_advertisements)
		src = b->mine;
	else if (b->global && b->global->spec.n_prefix_advertisements)
		src = b->global;
	if (!src)
		return;
	const struct br_bgpconfig_spec *s = &src->spec;
	struct bgp_family_view *fv = &b->v->fam[f];
	fv->communities =
		arena_new_array(b->a, struct bgp_community_set, s->n_prefix_advertisements + 1);
	for (size_t i = 0; i < s->n_prefix_advertisements; i++) {
		const struct br_prefix_adv *pa = &s->prefix_advertisements[i];
		struct br_cidr c;
		if (cidr_parse(pa->cidr, false, &c) < 0 || family_of(&c.ip) != f)
			continue;
		cidr_mask(&c);
		struct bgp_community_set *cs = &fv->communities[fv->n_communities++];
		cs->cidr = cidr_text(b, &c);
		cs->standard = arena_new_array(b->a, const char *, pa->n_communities + 1);
		cs->large = arena_new_array(b->a, const char *, pa->n_communities + 1);
		for (size_t j = 0; j < pa->n_communities; j++) {
			const char *value = pa->communities[j];
			for (size_t k = 0; !strchr(value, ':') && k < s->n_communities; k++)
				if (streq(s->communities[k].name, value))
					value = s->communities[k].value;
			if (!strchr(value, ':')) {
				problem(b, "bgpconfiguration %s: community \"%s\" is not defined",
					src->o.meta.name, value);
				continue;
			}
			unsigned long p[3] = { 0 };
			size_t np = 0;
			for (const char *q = value; np < 3 && *q;) {
				char *end;
				p[np++] = strtoul(q, &end, 10);
				q = *end == ':' ? end + 1 : end;
			}
			if (np == 2)
				cs->standard[cs->n_standard++] =
					arena_printf(b->a, "(%lu,%lu)", p[0], p[1]);
			else
				cs->large[cs->n_large++] =
					arena_printf(b->a, "(%lu,%lu,%lu)", p[0], p[1], p[2]);
		}
	}
}

/* --- reachableBy ------------------------------------------------------------------------------ */

static void load_reach(struct builder *b, int f)
{
	struct bgp_family_view *fv = &b->v->fam[f];
	fv->reach = arena_new_array(b->a, struct bgp_reach, b->in->n_peers + 1);
	for (size_t i = 0; i < fv->n_sessions; i++) {
		const struct bgp_session *s = &fv->sessions[i];
		if (s->type == BGP_PEER_MESH)
			continue;
		/* The BGPPeer that made it; reachableBy needs a gateway of the same family. */
		for (size_t j = 0; j < b->in->n_peers; j++) {
			const struct br_bgppeer *bp = b->peers[j];
			char addr[IP_STRLEN];
			uint16_t port;
			struct br_ip ip, gw;
			if (!bp->spec.reachable_by || !bp->spec.peer_ip ||
			    peer_ip_parse(bp->spec.peer_ip, addr, &port) < 0 ||
			    ip_parse(addr, &ip) < 0 || !ip_equal(&ip, &s->ip))
				continue;
			if (ip_parse(bp->spec.reachable_by, &gw) < 0 || family_of(&gw) != f) {
				problem(b, "bgppeer %s: reachableBy %s is not an %s address",
					bp->o.meta.name, bp->spec.reachable_by, family_names[f]);
				continue;
			}
			bool dup = false;
			const char *cidr = arena_printf(b->a, "%s/%u", s->peer_ip, ip_bits(&ip));
			for (size_t k = 0; k < fv->n_reach; k++)
				dup |= streq(fv->reach[k].cidr, cidr);
			if (!dup && fv->n_reach < b->in->n_peers)
				fv->reach[fv->n_reach++] =
					(struct bgp_reach){ .cidr = cidr,
							    .via = bp->spec.reachable_by };
		}
	}
}

/* --- the whole view ------------------------------------------------------------------------------
 */

/* An IPv4 router ID for a node without an IPv4 address: FNV-1a of its name. */
static const char *hashed_router_id(struct arena *a, const char *name)
{
	uint32_t h = 2166136261u;
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 16777619u;
	if (!h)
		h = 1;
	if ((h >> 24) > 223) /* keep clear of multicast and reserved-looking IDs */
		h -= 32u << 24;
	return arena_printf(a, "%u.%u.%u.%u", h >> 24, (h >> 16) & 255, (h >> 8) & 255, h & 255);
}

static const char *log_level(const struct builder *b)
{
	const char *l = NULL;
	if (b->mine && b->mine->spec.log_severity_screen)
		l = b->mine->spec.log_severity_screen;
	else if (b->global && b->global->spec.log_severity_screen)
		l = b->global->spec.log_severity_screen;
	if (!l || streq(l, "Info"))
		return "info";
	return streq(l, "Debug") ? "debug" : "none";
}

static bool bad_interface_pattern(const char *s)
{
	return strpbrk(s, "\"\n\r\\") != NULL;
}

static void load_globals(struct builder *b)
{
	struct bgp_view *v = b->v;
	v->as = b->me->as;
	v->listen_port = b->me->listen_port;
	v->log_level = log_level(b);
	const char *bind = b->mine && b->mine->spec.bind_mode ? b->mine->spec.bind_mode
			   : b->global			      ? b->global->spec.bind_mode
							      : NULL;
	v->bind_node_ip = streq(bind, "NodeIP");
	const struct br_bgpconfig *ic =
		b->mine && b->mine->spec.n_ignored_interfaces ? b->mine : b->global;
	if (ic && ic->spec.n_ignored_interfaces) {
		v->ignored_interfaces =
			arena_new_array(b->a, const char *, ic->spec.n_ignored_interfaces);
		for (size_t i = 0; i < ic->spec.n_ignored_interfaces; i++) {
			const char *s = ic->spec.ignored_interfaces[i];
			if (bad_interface_pattern(s))
				problem(b,
					"bgpconfiguration %s: ignored interface \"%s\" cannot be "
					"written in BIRD's syntax",
					ic->o.meta.name, s);
			else
				v->ignored_interfaces[v->n_ignored_interfaces++] = s;
		}
	}
	v->router_id =
		b->me->has[BGP_V4] ? b->me->ip_str[BGP_V4] : hashed_router_id(b->a, b->me->name);
}

/*
 * Why BIRD cannot use @pw, or NULL. Its strings have no escapes, so '"' and
 * line breaks cannot be written (nor, here, any control character), and the
 * kernel takes TCP MD5 keys of at most 80 bytes (TCP_MD5SIG_MAXKEYLEN):
 * BIRD's check passes a longer one, and the session then never comes up.
 */
const char *bgp_password_problem(const char *pw)
{
	if (!*pw)
		return "it is empty";
	if (strlen(pw) > BGP_PASSWORD_MAX)
		return "it is longer than 80 bytes, the kernel's limit for a TCP MD5 key";
	for (const char *p = pw; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f || *p == '"')
			return "it holds '\"', a line break or another control character, which "
			       "BIRD's configuration cannot express";
	return NULL;
}

static void drop_unwritable_passwords(struct builder *b, int f)
{
	struct svec *sv = &b->sessions[f];
	size_t k = 0;
	for (size_t i = 0; i < sv->n; i++) {
		const char *pw = sv->v[i].password;
		const char *why = pw ? bgp_password_problem(pw) : NULL;
		if (why) {
			problem(b, "%s: the password for %s cannot be used: %s; no session",
				sv->v[i].origin, sv->v[i].peer_ip, why);
			continue;
		}
		sv->v[k++] = sv->v[i];
	}
	sv->n = k;
}

int bgp_view_build(const struct bgp_input *in, struct bgp_view **out, struct strbuf *err)
{
	struct builder b = { .in = in };
	struct arena *a = arena_new();
	b.a = a;
	b.v = arena_alloc(a, sizeof(*b.v));
	b.v->a = a;
	b.v->node_name = arena_strdup(a, in->node_name);
	for (size_t i = 0; i < in->n_configs; i++)
		hmap_put(&b.configs, in->configs[i]->o.meta.name, (void *)in->configs[i]);
	b.global = config_named(&b, "default");
	char mine[300];
	snprintf(mine, sizeof(mine), "node.%s", in->node_name);
	b.mine = config_named(&b, mine);
	b.global_as = b.global && b.global->spec.as_number.set ? b.global->spec.as_number.v
							       : BGP_DEFAULT_AS;
	load_nodes(&b);
	int ret = 0;
	if (!b.me) {
		sb_addf(err, "node %s is not in the datastore", in->node_name);
		ret = -ENOENT;
	} else if (!b.me->has[BGP_V4] && !b.me->has[BGP_V6]) {
		sb_addf(err, "node %s has no BGP address (spec.bgp.ipv4Address or ipv6Address)",
			in->node_name);
		ret = -ENODATA;
	}
	if (ret < 0)
		goto out;

	load_globals(&b);
	add_mesh(&b);
	add_peers(&b);
	for (int f = 0; f < 2; f++) {
		struct bgp_family_view *fv = &b.v->fam[f];
		fv->enabled = b.me->has[f];
		if (!fv->enabled)
			continue;
		fv->address = b.me->ip_str[f];
		fv->subnet = b.me->subnet[f];
		drop_unwritable_passwords(&b, f);
		struct svec *sv = &b.sessions[f];
		fv->sessions = arena_new_array(a, struct bgp_session, sv->n + 1);
		if (sv->n) {
			qsort(sv->v, sv->n, sizeof(*sv->v), cmp_session);
			memcpy(fv->sessions, sv->v, sv->n * sizeof(*sv->v));
		}
		fv->n_sessions = sv->n;
		bgp_filters_load(a, fv, f);

		struct cvec statics = { 0 };
		struct svc_ranges ranges = { 0 };
		load_blocks(&b, f, &statics);
		load_pools(&b, f);
		load_ranges(&b, f, &ranges, &statics);
		load_services(&b, f, &ranges, &statics);
		cvec_sort_unique(&statics);
		fv->statics = arena_new_array(a, struct bgp_static, statics.n + 1);
		for (size_t i = 0; i < statics.n; i++)
			fv->statics[fv->n_statics++] =
				(struct bgp_static){ .cidr = cidr_text(&b, &statics.v[i]),
						     .why = statics.why[i] };
		cvec_free(&statics);
		load_communities(&b, f);
		load_reach(&b, f);
	}
	b.v->problems = arena_new_array(a, const char *, b.n_problems + 1);
	if (b.n_problems)
		memcpy(b.v->problems, b.problem_v, b.n_problems * sizeof(char *));
	b.v->n_problems = b.n_problems;
out:
	for (int f = 0; f < 2; f++) {
		free(b.sessions[f].v);
		hmap_clear(&b.seen[f]);
	}
	free(b.problem_v);
	hmap_clear(&b.configs);
	hmap_clear(&b.node_by_ip);
	if (ret < 0) {
		arena_free(a);
		return ret;
	}
	*out = b.v;
	return 0;
}

void bgp_view_free(struct bgp_view *v)
{
	if (v)
		arena_free(v->a);
}
