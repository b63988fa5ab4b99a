#include "calc.h"
#include "notices.h"
#include "policy.h"

#include <brindle/core/hash.h>
#include <brindle/sys/log.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What routing needs of a BlockAffinity. */
struct caff {
	bool confirmed;
	struct br_cidr cidr;
	char name[]; /* "10.244.1.0-26" */
};

/* A node's addresses of one family. */
struct cfam {
	bool has_ip, has_vtep;
	struct br_cidr ip; /* spec.bgp.ipv4Address, ipv6Address */
	struct br_ip vtep; /* spec.ipv4VXLANTunnelAddr, ipv6VXLANTunnelAddr */
	uint8_t mac[6];	   /* spec.vxlanTunnelMACAddr(V6), or derived from the name */
};

/*
 * What routing knows of a node: a few addresses of its Node resource (not the
 * whole resource) and its block affinities, in one record.
 */
struct cnode {
	bool exists; /* the Node resource is known */
	bool has_ipip;
	struct cfam fam[2]; /* IPv4, IPv6 (FAM) */
	struct br_ip ipip;  /* spec.bgp.ipv4IPIPTunnelAddr */
	struct caff **affs;
	uint32_t n_affs, cap_affs;
};

/* The index of @family in struct cnode's fam. */
#define FAM(family) ((family) == AF_INET6)

struct calc {
	char *nodename;
	struct felix_config cfg;
	struct hmap nodes; /* name → struct cnode * */
	struct hmap pools; /* name → struct br_ippool * */
	struct hmap weps;  /* "ns/name" → struct br_workloadendpoint * (this node's only) */
	/* Other nodes' endpoints with a network wider than a host route: whether felix takes
	 * them depends on the configuration, so they are kept ("ns/name" → endpoint). */
	struct hmap wide;
	struct hmap refused; /* "ns/name" of endpoints felix refuses (see calc_wep_refused) */
	bool relog_refusals; /* an update of the endpoint: say again why it is refused */
	struct notices notices; /* for the daemon to log (calc_drain_notices) */
	struct br_felixconfig *fc_global, *fc_node;
	unsigned fc_generation;
	size_t local_weps;
	struct desired desired;
	struct pol *pol;  /* IPv4 policy */
	struct pol *pol6; /* IPv6 policy; NULL unless calc_new was asked for it */
};

struct calc *calc_new(const char *nodename, bool ipv6)
{
	struct calc *c = xcalloc(1, sizeof(*c));
	c->nodename = xstrdup(nodename);
	felix_config_defaults(&c->cfg);
	desired_init(&c->desired);
	c->pol = pol_new(nodename, AF_INET);
	if (ipv6)
		c->pol6 = pol_new(nodename, AF_INET6);
	return c;
}

/* Both families' policy cores read the update (neither keeps its object): true when it was
 * about policy alone. */
static bool pol_update_all(struct calc *c, const struct ds_update *u)
{
	if (c->pol6)
		pol_update(c->pol6, u);
	return pol_update(c->pol, u);
}

static void free_felixconfig(struct br_felixconfig *fc)
{
	if (fc)
		model_free(&fc->o);
}

static void free_objects(struct hmap *m)
{
	for (struct hmap_iter it = hmap_iter(m); hmap_next(&it);)
		model_free(it.value);
	hmap_clear(m);
}

void calc_free(struct calc *c)
{
	if (!c)
		return;
	for (struct hmap_iter it = hmap_iter(&c->nodes); hmap_next(&it);) {
		struct cnode *n = it.value;
		for (size_t i = 0; i < n->n_affs; i++)
			free(n->affs[i]);
		free(n->affs);
		free(n);
	}
	hmap_clear(&c->nodes);
	free_objects(&c->pools);
	free_objects(&c->weps);
	free_objects(&c->wide);
	hmap_clear(&c->refused);
	free_felixconfig(c->fc_global);
	free_felixconfig(c->fc_node);
	desired_free(&c->desired);
	pol_free(c->pol);
	pol_free(c->pol6);
	free(c->nodename);
	notices_free(&c->notices);
	free(c);
}

struct desired *calc_desired(struct calc *c)
{
	return &c->desired;
}

const struct br_felixconfig *calc_felixconfig(const struct calc *c, bool node)
{
	return node ? c->fc_node : c->fc_global;
}

unsigned calc_felixconfig_generation(const struct calc *c)
{
	return c->fc_generation;
}

struct pol *calc_policy(struct calc *c)
{
	return c->pol;
}

struct pol *calc_policy6(struct calc *c)
{
	return c->pol6;
}

size_t calc_local_endpoints(const struct calc *c)
{
	return c->local_weps;
}

size_t calc_nodes(const struct calc *c)
{
	return c->nodes.n;
}

void calc_vtep_mac(const char *nodename, int family, uint8_t mac[6])
{
	uint8_t d[32];
	if (family == AF_INET6) {
		/* another device, another MAC: the name with "-v6" (as Calico derives its own) */
		char v6[300]; /* a node name is at most 253 characters */
		int len = snprintf(v6, sizeof(v6), "%s-v6", nodename);
		hash_digest(HASH_SHA1, v6, (size_t)MIN(len, (int)sizeof(v6) - 1), d);
	} else {
		hash_digest(HASH_SHA1, nodename, strlen(nodename), d);
	}
	memcpy(mac, d, 6);
	mac[0] = (uint8_t)((mac[0] & 0xfe) | 0x02); /* unicast, locally administered */
}

static bool parse_mac(const char *s, uint8_t mac[6])
{
	unsigned v[6];
	if (!s || sscanf(s, "%x:%x:%x:%x:%x:%x", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]) != 6)
		return false;
	for (int i = 0; i < 6; i++)
		mac[i] = (uint8_t)v[i];
	return true;
}

/* --- facts about nodes ------------------------------------------------------------------ */

static void cnode_fill(struct cnode *cn, const struct br_node *n)
{
	const struct br_node_bgp *bgp = n->spec.bgp;
	cn->exists = true;
	const char *ip[2] = { bgp ? bgp->ipv4_address : NULL, bgp ? bgp->ipv6_address : NULL };
	const char *vtep[2] = { n->spec.ipv4_vxlan_tunnel_addr, n->spec.ipv6_vxlan_tunnel_addr };
	const char *mac[2] = { n->spec.vxlan_tunnel_mac_addr, n->spec.vxlan_tunnel_mac_addr_v6 };
	for (int f = 0; f < 2; f++) {
		struct cfam *cf = &cn->fam[f];
		int family = f ? AF_INET6 : AF_INET;
		cf->has_ip = ip[f] && cidr_parse(ip[f], true, &cf->ip) == 0 &&
			     cf->ip.ip.family == family;
		cf->has_vtep =
			vtep[f] && ip_parse(vtep[f], &cf->vtep) == 0 && cf->vtep.family == family;
		if (!parse_mac(mac[f], cf->mac))
			calc_vtep_mac(n->o.meta.name, family, cf->mac);
	}
	cn->has_ipip = bgp && bgp->ipv4_ipip_tunnel_addr &&
		       ip_parse(bgp->ipv4_ipip_tunnel_addr, &cn->ipip) == 0;
}

/* The node's record if its Node resource is known. */
static const struct cnode *node_get(const struct calc *c, const char *name)
{
	const struct cnode *n = name ? hmap_get(&c->nodes, name) : NULL;
	return n && n->exists ? n : NULL;
}

static struct cnode *node_record(struct calc *c, const char *name)
{
	struct cnode *n = hmap_get(&c->nodes, name);
	if (!n) {
		n = xcalloc(1, sizeof(*n));
		hmap_put(&c->nodes, name, n);
	}
	return n;
}

/* Drop a record that holds nothing any more. */
static void node_release(struct calc *c, const char *name)
{
	struct cnode *n = hmap_get(&c->nodes, name);
	if (n && !n->exists && !n->n_affs) {
		hmap_del(&c->nodes, name);
		free(n->affs);
		free(n);
	}
}

/* Is @other's address of family index @f in this node's subnet of that family? */
static bool same_subnet(const struct calc *c, const struct cnode *other, int f)
{
	const struct cnode *me = node_get(c, c->nodename);
	if (!me || !me->fam[f].has_ip || !other || !other->fam[f].has_ip)
		return false;
	struct br_cidr mine = me->fam[f].ip;
	cidr_mask(&mine);
	return cidr_contains_ip(&mine, &other->fam[f].ip.ip);
}

/* The most specific pool containing @block. */
static const struct br_ippool *pool_of(const struct calc *c, const struct br_cidr *block)
{
	const struct br_ippool *best = NULL;
	unsigned best_len = 0;
	for (struct hmap_iter it = hmap_iter(&c->pools); hmap_next(&it);) {
		const struct br_ippool *p = it.value;
		struct br_cidr pc;
		if (cidr_parse(p->spec.cidr, false, &pc) < 0 || !cidr_contains(&pc, block))
			continue;
		if (!best || pc.len > best_len ||
		    (pc.len == best_len && strcmp(p->o.meta.name, best->o.meta.name) < 0)) {
			best = p;
			best_len = pc.len;
		}
	}
	return best;
}

static bool mode_on(const char *mode, bool cross_subnet_applies)
{
	if (!mode || strcmp(mode, "Never") == 0)
		return false;
	if (strcmp(mode, "CrossSubnet") == 0)
		return cross_subnet_applies;
	return true;
}

/* --- contributions ---------------------------------------------------------------------- */

/* @n strings one after the other into @buf, cut to @size (this runs per update: no printf). */
static void join(char *buf, size_t size, const char *const *parts, size_t n)
{
	size_t at = 0;
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(parts[i]);
		if (len > size - 1 - at)
			len = size - 1 - at;
		memcpy(buf + at, parts[i], len);
		at += len;
	}
	buf[at] = '\0';
}

/* "wep default/a", "block node1/10.244.1.0-26": who wants an item, for logs. */
static void owner_name(char *buf, size_t size, const char *what, const char *a, const char *b)
{
	const char *parts[] = { what, " ", a, b ? "/" : "", b ? b : "" };
	join(buf, size, parts, ARRAY_SIZE(parts));
}

/* --- what an endpoint may claim -------------------------------------------------------- */

bool calc_wep_refused(const struct felix_config *cfg, const struct br_workloadendpoint *w,
		      bool local, char *why, size_t size)
{
	const char *ifname = w->spec.interface_name ? w->spec.interface_name : "";
	if (local && iface_reserved(ifname)) {
		snprintf(why, size, "interface %s is the host's, not a workload's", ifname);
		return true;
	}
	if (local && !felix_is_workload_iface(cfg, ifname)) {
		char prefixes[FELIX_MAX_PREFIXES * 17] = "";
		for (size_t i = 0; i < cfg->n_prefixes; i++)
			snprintf(prefixes + strlen(prefixes), sizeof(prefixes) - strlen(prefixes),
				 "%s%s", i ? "," : "", cfg->prefixes[i]);
		snprintf(why, size,
			 "interface \"%s\" does not start with a workload prefix (%s; "
			 "interfacePrefix)",
			 ifname, prefixes);
		return true;
	}
	for (size_t i = 0; i < w->spec.n_ip_networks; i++) {
		struct br_cidr net;
		if (cidr_parse(w->spec.ip_networks[i], true, &net) < 0)
			continue; /* the model refused it already; nothing is made of it */
		bool v4 = net.ip.family == AF_INET;
		unsigned min = v4 ? cfg->wep_min_prefix_v4 : cfg->wep_min_prefix_v6;
		if (net.len == 0 || net.len < min) {
			snprintf(why, size,
				 "ipNetworks[%zu] %s is wider than /%u (%s; a workload's networks "
				 "are its own addresses)",
				 i, w->spec.ip_networks[i], min,
				 v4 ? "workloadIPv4MinPrefixLength"
				    : "workloadIPv6MinPrefixLength");
			return true;
		}
	}
	return false;
}

/* Does any of @w's networks depend on the allowed prefix length? */
static bool wep_is_wide(const struct br_workloadendpoint *w)
{
	for (size_t i = 0; i < w->spec.n_ip_networks; i++) {
		struct br_cidr net;
		if (cidr_parse(w->spec.ip_networks[i], true, &net) == 0 &&
		    net.len < ip_bits(&net.ip))
			return true;
	}
	return false;
}

/*
 * Whether felix takes @w (NULL: deleted) under the current configuration;
 * a refusal is a notice when it starts, naming the endpoint and the reason.
 */
static bool wep_admit(struct calc *c, const char *key, const struct br_workloadendpoint *w,
		      bool local)
{
	char why[300];
	if (!w || !calc_wep_refused(&c->cfg, w, local, why, sizeof(why))) {
		if (hmap_del(&c->refused, key) && w)
			notice_add(&c->notices, NOTICE_INFO, "WorkloadEndpoint %s is accepted now",
				   key);
		return w != NULL;
	}
	if (!hmap_has(&c->refused, key) || c->relog_refusals)
		notice_add(&c->notices, NOTICE_ERROR,
			   "WorkloadEndpoint %s refused: %s; nothing of it is programmed (its "
			   "traffic is dropped)",
			   key, why);
	hmap_put(&c->refused, key, (void *)1);
	return false;
}

static void recompute_wep(struct calc *c, const char *key, const struct br_workloadendpoint *w)
{
	char owner[600];
	owner_name(owner, sizeof(owner), "wep", key, NULL);
	struct desired_item one[3], *items = one;
	size_t n = 0;
	if (w && hmap_has(&c->refused, key))
		w = NULL;
	if (w && w->spec.node && strcmp(w->spec.node, c->nodename) == 0 && w->spec.interface_name) {
		const char *ifname = w->spec.interface_name;
		uint8_t mac[6];
		bool has_mac = parse_mac(w->spec.mac, mac);
		/* A route and a neighbour per network, and the interface. */
		if (w->spec.n_ip_networks > 1)
			items = xmalloc(sizeof(*items) * (2 * w->spec.n_ip_networks + 1));
		for (size_t i = 0; i < w->spec.n_ip_networks; i++) {
			struct br_cidr net;
			if (cidr_parse(w->spec.ip_networks[i], true, &net) < 0 ||
			    (net.ip.family == AF_INET6 && !c->cfg.ipv6_support))
				continue;
			struct desired_item r = { .kind = DESIRED_ROUTE };
			r.route.dst = net;
			cidr_mask(&r.route.dst);
			snprintf(r.route.ifname, sizeof(r.route.ifname), "%s", ifname);
			r.route.link_scope = true;
			items[n++] = r;
			/* (IPv6 neighbours are left to neighbour discovery) */
			if (has_mac && net.ip.family == AF_INET && net.len == 32) {
				struct desired_item nb = { .kind = DESIRED_NEIGH };
				snprintf(nb.neigh.ifname, sizeof(nb.neigh.ifname), "%s", ifname);
				nb.neigh.ip = net.ip;
				memcpy(nb.neigh.mac, mac, 6);
				items[n++] = nb;
			}
		}
		struct desired_item ifc = { .kind = DESIRED_IFACE };
		snprintf(ifc.iface, sizeof(ifc.iface), "%s", ifname);
		items[n++] = ifc;
	}
	desired_set_owner(&c->desired, owner, DESIRED_WORKLOAD, items, n);
	if (items != one)
		free(items);
}

static void recompute_affinity(struct calc *c, const char *node, const char *name,
			       const struct caff *a)
{
	char owner[600];
	owner_name(owner, sizeof(owner), "block", node, name);
	struct desired_item it = { .kind = DESIRED_ROUTE };
	enum desired_class cls = DESIRED_BLACKHOLE;
	size_t n = 0;
	if (!a || !a->confirmed)
		goto out;
	struct br_cidr block = a->cidr;
	const struct br_ippool *pool = pool_of(c, &block);
	if (!pool)
		goto out;
	it.route.dst = block;
	if (block.ip.family == AF_INET6 && !c->cfg.ipv6_support)
		goto out; /* (config.h: ipv6_support) */
	if (strcmp(node, c->nodename) == 0) {
		/* Unallocated addresses of our own blocks go nowhere. */
		if (block.len < ip_bits(&block.ip)) {
			it.route.blackhole = true;
			n = 1;
		}
		goto out;
	}
	/* A block of a family travels over the underlay of that family: IPv6 blocks through
	 * vxlan-v6.calico (IPIP carries IPv4 only); otherwise BGP routes them. */
	int f = FAM(block.ip.family);
	const struct cnode *remote = node_get(c, node);
	if (!remote || !remote->fam[f].has_ip)
		goto out;
	bool cross = !same_subnet(c, remote, f);
	if (mode_on(pool->spec.vxlan_mode, cross) && remote->fam[f].has_vtep) {
		snprintf(it.route.ifname, sizeof(it.route.ifname), "%s",
			 f ? VXLAN6_DEV : VXLAN_DEV);
		it.route.gw = remote->fam[f].vtep;
		it.route.onlink = true;
		cls = DESIRED_VXLAN;
		n = 1;
	} else if (!f && mode_on(pool->spec.ipip_mode, cross)) {
		snprintf(it.route.ifname, sizeof(it.route.ifname), IPIP_DEV);
		it.route.gw = remote->fam[f].ip.ip;
		it.route.onlink = true;
		cls = DESIRED_IPIP;
		n = 1;
	}
out:
	desired_set_owner(&c->desired, owner, cls, &it, n);
}

/* Does a pool of family index @f use VXLAN (IPv6 ones only while felix handles IPv6)? */
static bool vxlan_wanted(const struct calc *c, int f)
{
	if (f && !c->cfg.ipv6_support)
		return false;
	for (struct hmap_iter it = hmap_iter(&c->pools); hmap_next(&it);) {
		const struct br_ippool *p = it.value;
		struct br_cidr pc;
		if (p->spec.vxlan_mode && strcmp(p->spec.vxlan_mode, "Never") != 0 &&
		    cidr_parse(p->spec.cidr, false, &pc) == 0 && FAM(pc.ip.family) == f)
			return true;
	}
	return false;
}

/* Another node's VTEPs: per family, its tunnel address's MAC and where that MAC lives. */
static void recompute_vtep(struct calc *c, const char *name, const struct cnode *n)
{
	char owner[600];
	owner_name(owner, sizeof(owner), "vtep", name, NULL);
	struct desired_item items[4];
	size_t count = 0;
	for (int f = 0; f < 2; f++) {
		if (!n || !n->exists || strcmp(name, c->nodename) == 0 || !vxlan_wanted(c, f) ||
		    !n->fam[f].has_vtep || !n->fam[f].has_ip)
			continue;
		const char *dev = f ? VXLAN6_DEV : VXLAN_DEV;
		struct desired_item nb = { .kind = DESIRED_NEIGH };
		snprintf(nb.neigh.ifname, sizeof(nb.neigh.ifname), "%s", dev);
		nb.neigh.ip = n->fam[f].vtep;
		memcpy(nb.neigh.mac, n->fam[f].mac, 6);
		struct desired_item fdb = { .kind = DESIRED_FDB };
		snprintf(fdb.fdb.ifname, sizeof(fdb.fdb.ifname), "%s", dev);
		memcpy(fdb.fdb.mac, n->fam[f].mac, 6);
		fdb.fdb.dst = n->fam[f].ip.ip;
		items[count++] = nb;
		items[count++] = fdb;
	}
	desired_set_owner(&c->desired, owner, DESIRED_VTEP, items, count);
}

/* This node's VXLAN device of family index @f (zeroed whole: it is compared with memcmp). */
static void vxlan_device(const struct calc *c, const struct cnode *me, int f,
			 struct desired_vxlan *vx)
{
	memset(vx, 0, sizeof(*vx));
	if (!vxlan_wanted(c, f) || !me || !me->fam[f].has_ip)
		return;
	vx->wanted = true;
	vx->vni = c->cfg.vxlan_vni;
	vx->port = c->cfg.vxlan_port;
	vx->mtu = f ? c->cfg.vxlan_mtu_v6 : c->cfg.vxlan_mtu;
	vx->local = me->fam[f].ip.ip;
	memcpy(vx->mac, me->fam[f].mac, 6);
	if (me->fam[f].has_vtep) {
		vx->addr.ip = me->fam[f].vtep;
		vx->addr.len = (uint8_t)ip_bits(&vx->addr.ip);
	}
}

static void recompute_tunnels(struct calc *c)
{
	struct desired_ipip ip = { 0 };
	const struct cnode *me = node_get(c, c->nodename);
	struct desired_vxlan vx, vx6;
	vxlan_device(c, me, 0, &vx);
	vxlan_device(c, me, 1, &vx6);
	for (struct hmap_iter it = hmap_iter(&c->pools); hmap_next(&it);) {
		const struct br_ippool *p = it.value;
		if (p->spec.ipip_mode && strcmp(p->spec.ipip_mode, "Never") != 0 &&
		    (!ip.wanted || strcmp(p->o.meta.name, ip.wanted_by) < 0)) {
			ip.wanted = true;
			snprintf(ip.wanted_by, sizeof(ip.wanted_by), "%s", p->o.meta.name);
		}
	}
	if (ip.wanted) {
		ip.mtu = c->cfg.ipip_mtu;
		if (me && me->fam[0].has_ip)
			ip.local = me->fam[0].ip.ip;
		if (me && me->has_ipip) {
			ip.addr.ip = me->ipip;
			ip.addr.len = 32;
		}
	}
	if (memcmp(&vx, &c->desired.vxlan, sizeof(vx)) != 0 ||
	    memcmp(&vx6, &c->desired.vxlan6, sizeof(vx6)) != 0 ||
	    memcmp(&ip, &c->desired.ipip, sizeof(ip)) != 0) {
		c->desired.vxlan = vx;
		c->desired.vxlan6 = vx6;
		c->desired.ipip = ip;
		c->desired.tunnels_dirty = true;
	}
}

static void recompute_node_blocks(struct calc *c, const char *node)
{
	const struct cnode *n = hmap_get(&c->nodes, node);
	for (size_t i = 0; n && i < n->n_affs; i++)
		recompute_affinity(c, node, n->affs[i]->name, n->affs[i]);
}

static void recompute_all(struct calc *c)
{
	for (struct hmap_iter it = hmap_iter(&c->nodes); hmap_next(&it);) {
		recompute_node_blocks(c, it.key);
		recompute_vtep(c, it.key, it.value);
	}
	recompute_tunnels(c);
}

/* --- updates ---------------------------------------------------------------------------- */

/* Store @obj under @key in @m, freeing what was there. */
static void store(struct hmap *m, const char *key, struct br_object *obj)
{
	struct br_object *old = obj ? hmap_put(m, key, obj) : hmap_del(m, key);
	model_free(old);
}

/*
 * An endpoint, through the gate: policy and routing see it only when felix
 * takes it (calc_wep_refused), otherwise as deleted, so a refused endpoint
 * of this node has no routes, no interface settings and no chains (the
 * dispatch chains drop its traffic), and a refused remote one is in no ip set.
 */
static void wep_update(struct calc *c, const char *key, const struct ds_update *u)
{
	const struct br_workloadendpoint *w = (const void *)u->obj;
	bool is_local = w && w->spec.node && strcmp(w->spec.node, c->nodename) == 0;
	c->relog_refusals = true;
	bool admit = wep_admit(c, key, w, is_local);
	c->relog_refusals = false;
	struct ds_update gated = *u;
	if (!admit)
		gated.obj = NULL;
	pol_update_all(c, &gated);
	/* Routing needs this node's endpoints only; policy kept what it needs of others. */
	bool was_local = hmap_has(&c->weps, key);
	store(&c->wide, key, NULL);
	if (is_local) {
		store(&c->weps, key, u->obj);
	} else {
		store(&c->weps, key, NULL);
		if (w && wep_is_wide(w))
			store(&c->wide, key, u->obj);
		else
			model_free(u->obj);
		w = NULL;
	}
	c->local_weps += (size_t)is_local - (size_t)was_local;
	if (is_local || was_local)
		recompute_wep(c, key, w);
}

/* After a configuration change: endpoints whose admission changed, in or out. */
static void readmit_weps(struct calc *c)
{
	struct hmap *maps[] = { &c->weps, &c->wide };
	for (int m = 0; m < 2; m++)
		for (struct hmap_iter it = hmap_iter(maps[m]); hmap_next(&it);) {
			const struct br_workloadendpoint *w = it.value;
			bool was = !hmap_has(&c->refused, it.key);
			if (wep_admit(c, it.key, w, m == 0) == was)
				continue;
			const char *slash = strchr(it.key, '/');
			char scope[256];
			snprintf(scope, sizeof(scope), "%.*s", slash ? (int)(slash - it.key) : 0,
				 it.key);
			struct ds_update u = { .kind = model_kind(KIND_WORKLOADENDPOINT),
					       .scope = slash ? scope : NULL,
					       .name = slash ? slash + 1 : it.key,
					       .obj = was ? NULL : (struct br_object *)&w->o };
			pol_update_all(c, &u);
			if (m == 0)
				recompute_wep(c, it.key, w);
		}
}

void calc_update(struct calc *c, const struct ds_update *u)
{
	char key[512];
	const char *parts[] = { u->scope ? u->scope : "", u->scope ? "/" : "", u->name };
	join(key, sizeof(key), parts, ARRAY_SIZE(parts));
	if (u->kind->id == KIND_WORKLOADENDPOINT) {
		wep_update(c, key, u);
		return;
	}
	/* Policy reads every update it cares about; the kinds that are only policy's end there. */
	if (pol_update_all(c, u)) {
		model_free(u->obj);
		return;
	}
	switch (u->kind->id) {
	case KIND_BLOCKAFFINITY: {
		/* Affinities are scoped by node: the key's scope is the node. */
		const struct br_blockaffinity *ba = (const void *)u->obj;
		const char *node = u->scope ? u->scope : (ba ? ba->spec.node : "");
		struct cnode *n = node_record(c, node);
		size_t at = n->n_affs;
		for (size_t i = 0; i < n->n_affs; i++)
			if (strcmp(n->affs[i]->name, u->name) == 0)
				at = i;
		if (at < n->n_affs) {
			free(n->affs[at]);
			n->affs[at] = n->affs[--n->n_affs];
		}
		struct caff *a = NULL;
		if (ba) {
			a = xcalloc(1, sizeof(*a) + strlen(u->name) + 1);
			strcpy(a->name, u->name);
			a->confirmed = !ba->spec.deleted &&
				       strcmp(ba->spec.state, "confirmed") == 0 &&
				       cidr_parse(ba->spec.cidr, false, &a->cidr) == 0;
			/* Most nodes have one block: grow from one, not eight. */
			if (n->n_affs == n->cap_affs) {
				n->cap_affs = n->cap_affs ? n->cap_affs * 2 : 1;
				n->affs = xrealloc(n->affs, sizeof(*n->affs) * n->cap_affs);
			}
			n->affs[n->n_affs++] = a;
		}
		model_free(u->obj);
		recompute_affinity(c, node, u->name, a);
		node_release(c, node);
		return;
	}
	case KIND_NODE: {
		struct cnode *n = node_record(c, key);
		struct caff **affs = n->affs;
		uint32_t n_affs = n->n_affs, cap = n->cap_affs;
		memset(n, 0, sizeof(*n));
		n->affs = affs;
		n->n_affs = n_affs;
		n->cap_affs = cap;
		if (u->obj)
			cnode_fill(n, (const struct br_node *)u->obj);
		model_free(u->obj);
		if (strcmp(key, c->nodename) == 0) {
			recompute_all(c); /* our subnet and tunnel addresses */
		} else {
			recompute_vtep(c, key, node_get(c, key));
			recompute_node_blocks(c, key);
		}
		node_release(c, key);
		return;
	}
	case KIND_IPPOOL:
		store(&c->pools, key, u->obj);
		recompute_all(c);
		return;
	case KIND_FELIXCONFIGURATION: {
		char mine[300];
		snprintf(mine, sizeof(mine), "node.%s", c->nodename);
		struct br_felixconfig **slot = strcmp(key, "default") == 0 ? &c->fc_global
					       : strcmp(key, mine) == 0	   ? &c->fc_node
									   : NULL;
		if (slot) {
			free_felixconfig(*slot);
			*slot = (struct br_felixconfig *)u->obj;
			c->fc_generation++;
		} else {
			model_free(u->obj);
		}
		return;
	}
	default:
		model_free(u->obj);
		return;
	}
}

void calc_set_config(struct calc *c, const struct felix_config *cfg)
{
	c->cfg = *cfg;
	pol_set_config(c->pol, cfg);
	if (c->pol6)
		pol_set_config(c->pol6, cfg);
	readmit_weps(c);
	recompute_all(c);
}

static void drop_notice(void *ctx, const struct notice *n)
{
	(void)ctx;
	(void)n;
}

void calc_drain_notices(struct calc *c, void (*fn)(void *ctx, const struct notice *n), void *ctx)
{
	notices_drain(&c->notices, fn, ctx);
	notices_drain(pol_notices(c->pol), fn, ctx);
	/* The IPv6 core's say the same about the same objects: the IPv4 core's are enough. */
	if (c->pol6)
		notices_drain(pol_notices(c->pol6), drop_notice, NULL);
}
