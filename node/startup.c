/*
 * brindle-node startup: what calico-node's startup does before the daemons
 * run, on either datastore (docs/install.md). In order, each step only
 * after the one before succeeded:
 *   1. the node's name: NODENAME, else the nodename file an earlier start
 *      wrote, else HOSTNAME (lower case), else the host name;
 *   2. its IPv4 address: IP=<address>[/len] | autodetect | none; unset, the
 *      address already stored is kept, else autodetected with
 *      IP_AUTODETECTION_METHOD (lib/core/autodetect.c); refused when another
 *      Node has it (DISABLE_NODE_IP_CHECK=true allows it). Its IPv6 address
 *      the same way with IP6 and IP6_AUTODETECTION_METHOD, except that IP6
 *      unset and nothing stored is none (as calico-node: IPv6 when asked);
 *   3. the Node: created on etcd when missing (on Kubernetes the kubelet
 *      registers it: it must exist), its BGP address and AS (AS=) set, every
 *      other field left as the user set it;
 *   4. the default pool default-ipv4-ippool from CALICO_IPV4POOL_CIDR (and
 *      _BLOCK_SIZE, _IPIP, _VXLAN, _NAT_OUTGOING, _NODE_SELECTOR) when there is
 *      no IPv4 pool at all and NO_DEFAULT_POOLS is not true; on a node with an
 *      IPv6 address, default-ipv6-ippool from CALICO_IPV6POOL_* (_CIDR unset: a
 *      random unique local /48, as calico-node) when there is no IPv6 pool;
 *   5. its tunnel addresses: an IPIP, a VXLAN and an IPv6 VXLAN address from
 *      IPAM (handles ipip-tunnel-addr-<node>, vxlan-tunnel-addr-<node>,
 *      vxlan-v6-tunnel-addr-<node>) while the node has an address of the
 *      tunnel's family and an enabled pool of that family that selects the node
 *      uses the encapsulation, released when none does;
 *   6. the pod MTU (CNI_MTU, else ad_pod_mtu) into the MTU file, and the name into the
 *      nodename file, for brindle-cni and the next start.
 */
#include "node.h"

#include <brindle/core/autodetect.h>
#include <brindle/core/json.h>
#include <brindle/core/sel.h>
#include <brindle/sys/ipam.h>
#include <brindle/sys/log.h>
#include <brindle/sys/nl.h>
#include <brindle/sys/strbuf_file.h>

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <net/if.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static bool env_true(const char *name)
{
	const char *v = node_env_or(name, "false");
	return !strcasecmp(v, "true") || streq(v, "1");
}

/* 1. */
static const char *node_name(struct arena *a, const struct node_env *e)
{
	const char *v = node_env_or("NODENAME", NULL);
	if (v)
		return v;
	struct strbuf sb = STRBUF_INIT;
	sb_init(&sb);
	if (sb_read_file(&sb, e->nodename_file) == 0) {
		while (sb.len && strchr(" \t\r\n", sb.buf[sb.len - 1]))
			sb_truncate(&sb, sb.len - 1);
		if (sb.len) {
			v = arena_strdup(a, sb_str(&sb));
			sb_free(&sb);
			return v;
		}
	}
	sb_free(&sb);
	char host[256] = "";
	v = node_env_or("HOSTNAME", NULL);
	if (!v && gethostname(host, sizeof(host) - 1) == 0)
		v = host;
	if (!v || !*v)
		return NULL;
	char *lower = arena_strdup(a, v);
	for (char *p = lower; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	return lower;
}

/* The host's interfaces and addresses, in ifindex order, for autodetect.h. */
struct host {
	struct nl_link_list links;
	struct nl_addr_list addrs;
	struct ad_iface *ifs;
	size_t n;
};

static void host_free(struct host *h)
{
	for (size_t i = 0; i < h->n; i++)
		free((void *)h->ifs[i].addrs);
	free(h->ifs);
	nl_link_list_free(&h->links);
	nl_addr_list_free(&h->addrs);
}

static int by_ifindex(const void *pa, const void *pb)
{
	const struct nl_link *a = pa, *b = pb;
	return (a->ifindex > b->ifindex) - (a->ifindex < b->ifindex);
}

static int host_read(struct host *h, struct strbuf *err)
{
	*h = (struct host){ 0 };
	struct nl *nl;
	int r = nl_open_kernel(&nl);
	bool opened = r == 0;
	/* -EINTR: the kernel says a table changed during the dump (interfaces coming up
	 * beside us): read it again, as felix does. */
	for (int tries = 0; r == 0; tries++) {
		r = nl_dump_links(nl, &h->links);
		if (r == 0)
			r = nl_dump_addrs(nl, AF_UNSPEC, &h->addrs);
		if (r != -EINTR || tries == 4)
			break;
		nl_link_list_free(&h->links);
		nl_addr_list_free(&h->addrs);
		*h = (struct host){ 0 };
		r = 0;
	}
	if (opened)
		nl_close(nl);
	if (r < 0) {
		sb_addf(err, "reading the host's interfaces: %s", strerror(-r));
		return r;
	}
	qsort(h->links.v, h->links.n, sizeof(*h->links.v), by_ifindex);
	h->ifs = xcalloc(h->links.n + 1, sizeof(*h->ifs));
	for (size_t i = 0; i < h->links.n; i++) {
		const struct nl_link *l = &h->links.v[i];
		struct br_cidr *v = xcalloc(h->addrs.n + 1, sizeof(*v));
		size_t k = 0;
		for (size_t j = 0; j < h->addrs.n; j++)
			if (h->addrs.v[j].ifindex == l->ifindex)
				v[k++] = h->addrs.v[j].addr;
		h->ifs[h->n++] = (struct ad_iface){
			.name = l->name, .up = (l->flags & IFF_UP) != 0, .addrs = v, .n_addrs = k
		};
	}
	return 0;
}

/* The source address of @family the kernel would use towards @target (no packet is sent). */
static int can_reach_source(const char *target, int family, struct br_ip *out, struct strbuf *err)
{
	struct addrinfo hints = { .ai_family = family, .ai_socktype = SOCK_DGRAM }, *res;
	int g = getaddrinfo(target, "80", &hints, &res);
	if (g != 0) {
		sb_addf(err, "can-reach=%s: %s", target, gai_strerror(g));
		return -ENOENT;
	}
	int fd = socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0), r = 0;
	struct sockaddr_storage sa;
	socklen_t len = sizeof(sa);
	if (fd < 0 || connect(fd, res->ai_addr, res->ai_addrlen) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &len) < 0) {
		r = -errno;
		sb_addf(err, "can-reach=%s: no route: %s", target, strerror(errno));
	} else {
		char buf[INET6_ADDRSTRLEN];
		const void *a = family == AF_INET6
					? (const void *)&((struct sockaddr_in6 *)&sa)->sin6_addr
					: (const void *)&((struct sockaddr_in *)&sa)->sin_addr;
		inet_ntop(family, a, buf, sizeof(buf));
		r = ip_parse(buf, out);
	}
	if (fd >= 0)
		close(fd);
	freeaddrinfo(res);
	return r;
}

/* kubernetes-internal-ip: the Node's InternalIP, with the prefix of the interface holding it. */
static int internal_ip(const struct br_node *n, const struct host *h, int family,
		       struct br_cidr *out, struct strbuf *err)
{
	for (size_t i = 0; n && i < n->spec.n_addresses; i++) {
		struct br_ip ip;
		if (!streq(n->spec.addresses[i].type ?: "", "InternalIP") ||
		    ip_parse(n->spec.addresses[i].address, &ip) < 0 || ip.family != family)
			continue;
		*out = (struct br_cidr){ .ip = ip, .len = (uint8_t)ip_bits(&ip) };
		for (size_t j = 0; j < h->n; j++)
			for (size_t k = 0; k < h->ifs[j].n_addrs; k++)
				if (ip_equal(&h->ifs[j].addrs[k].ip, &ip))
					*out = h->ifs[j].addrs[k];
		return 0;
	}
	sb_addf(err,
		"kubernetes-internal-ip: the Node has no %s InternalIP (on etcd there is no "
		"Kubernetes Node: use another method)",
		family == AF_INET6 ? "IPv6" : "IPv4");
	return -ENOENT;
}

/* The settings of the node's address of one family. */
struct family_env {
	int family;
	const char *ip, *method, *name; /* IP, IP_AUTODETECTION_METHOD, "IPv4" */
	bool autodetect;		/* unset with nothing stored: autodetect (else none) */
};
static const struct family_env ENV4 = { AF_INET, "IP", "IP_AUTODETECTION_METHOD", "IPv4", true };
static const struct family_env ENV6 = { AF_INET6, "IP6", "IP6_AUTODETECTION_METHOD", "IPv6",
					false };

static const char *stored_address(const struct br_node *n, int family)
{
	if (!n || !n->spec.bgp)
		return NULL;
	return family == AF_INET6 ? n->spec.bgp->ipv6_address : n->spec.bgp->ipv4_address;
}

/* 2. The address of @f's family to store, or *none. */
static int node_address(struct node_run *s, const struct host *h, const struct br_node *cur,
			const struct family_env *f, struct br_cidr *out, bool *none)
{
	const char *ip = node_env_or(f->ip, NULL);
	const char *stored = stored_address(cur, f->family);
	*none = false;
	if ((ip && streq(ip, "none")) || (!ip && !stored && !f->autodetect)) {
		*none = true;
		return 0;
	}
	if (ip && !streq(ip, "autodetect")) {
		if (cidr_parse(ip, true, out) < 0 || out->ip.family != f->family) {
			sb_addf(&s->err, "%s=%s: not an %s address (or autodetect, none)", f->ip,
				ip, f->name);
			return -EINVAL;
		}
		if (!strchr(ip, '/')) /* the prefix of the interface that has it */
			for (size_t j = 0; j < h->n; j++)
				for (size_t k = 0; k < h->ifs[j].n_addrs; k++)
					if (ip_equal(&h->ifs[j].addrs[k].ip, &out->ip))
						out->len = h->ifs[j].addrs[k].len;
		return 0;
	}
	if (!ip && stored && cidr_parse(stored, true, out) == 0) {
		log_info("keeping the stored address %s (%s is not set)", stored, f->ip);
		return 0;
	}
	const char *method = node_env_or(f->method, "first-found");
	struct ad_method m;
	struct strbuf why = STRBUF_INIT;
	sb_init(&why);
	int r = ad_method_parse(method, f->family, &m, &why);
	if (r < 0) {
		sb_addf(&s->err, "%s: %s", f->method, sb_str(&why));
		sb_free(&why);
		return r;
	}
	struct br_ip source;
	if (m.kind == AD_K8S_INTERNAL_IP)
		r = internal_ip(cur, h, f->family, out, &why);
	else if (m.kind == AD_CAN_REACH &&
		 (r = can_reach_source(m.target, f->family, &source, &why)) == 0)
		r = ad_choose(&m, h->ifs, h->n, f->family, &source, out, &why);
	else if (m.kind != AD_CAN_REACH)
		r = ad_choose(&m, h->ifs, h->n, f->family, NULL, out, &why);
	ad_method_free(&m);
	if (r < 0)
		sb_addf(&s->err, "autodetecting the node's %s address (%s): %s", f->name, method,
			sb_str(&why));
	else
		log_info("autodetected %s with %s", cidr_str(out, (char[CIDR_STRLEN]){ 0 }),
			 method);
	sb_free(&why);
	return r;
}

/* The other Node that has @ip as its BGP address, if any. */
static const char *ip_owner(struct node_run *s, const struct br_ip *ip)
{
	struct br_object **v;
	size_t n;
	if (ds_list(s->ds, model_kind(KIND_NODE), NULL, &v, &n) < 0)
		return NULL;
	const char *owner = NULL;
	for (size_t i = 0; i < n && !owner; i++) {
		const struct br_node *o = (const struct br_node *)v[i];
		struct br_cidr c;
		const char *addr = stored_address(o, ip->family);
		if (!streq(o->o.meta.name, s->name) && addr && cidr_parse(addr, true, &c) == 0 &&
		    ip_equal(&c.ip, ip))
			owner = arena_strdup(s->a, o->o.meta.name);
	}
	model_free_all(v, n);
	return owner;
}

/* 3. The Node with its address (and AS), everything else as it was; *node_out its state. */
static int write_node(struct node_run *s, const struct host *h, struct br_node **node_out)
{
	struct br_object *cur = NULL;
	int r = ds_get(s->ds, model_kind(KIND_NODE), NULL, s->name, &cur);
	if (r < 0 && r != -ENOENT) {
		sb_addf(&s->err, "reading Node %s: %s", s->name, ds_last_error(s->ds));
		return r;
	}
	if (r == -ENOENT && s->kube) {
		sb_addf(&s->err,
			"Node %s does not exist: on Kubernetes the kubelet registers it (is "
			"NODENAME "
			"the Kubernetes node name?)",
			s->name);
		return -ENOENT;
	}
	struct br_node *n =
		(struct br_node *)(cur ? cur : model_new(model_kind(KIND_NODE), NULL, s->name));
	/* the IPv4 address, then the IPv6 one */
	const struct family_env *fams[2] = { &ENV4, &ENV6 };
	struct br_cidr addr[2];
	bool none[2] = { true, true };
	r = 0;
	for (int k = 0; k < 2 && r == 0; k++) {
		r = node_address(s, h, cur ? n : NULL, fams[k], &addr[k], &none[k]);
		const char *owner = r == 0 && !none[k] ? ip_owner(s, &addr[k].ip) : NULL;
		if (owner && !env_true("DISABLE_NODE_IP_CHECK")) {
			sb_addf(&s->err,
				"the address %s is already Node %s's: two nodes with one BGP "
				"address break both (DISABLE_NODE_IP_CHECK=true allows it)",
				cidr_str(&addr[k], (char[CIDR_STRLEN]){ 0 }), owner);
			r = -EADDRINUSE;
		}
	}
	const char *as = node_env_or("AS", NULL);
	char *end = NULL;
	unsigned long asn = as ? strtoul(as, &end, 10) : 0;
	if (r == 0 && as && (*end || asn == 0 || asn > UINT32_MAX)) {
		sb_addf(&s->err, "AS=%s: not an AS number (1-4294967295)", as);
		r = -EINVAL;
	}
	if (r < 0) {
		model_free(&n->o);
		return r;
	}
	struct br_object *before = model_clone(&n->o);
	if (!none[0] || !none[1] || as) {
		if (!n->spec.bgp)
			n->spec.bgp = arena_alloc(n->o.arena, sizeof(*n->spec.bgp));
		if (!none[0])
			n->spec.bgp->ipv4_address = arena_strdup(
				n->o.arena, cidr_str(&addr[0], (char[CIDR_STRLEN]){ 0 }));
		if (!none[1])
			n->spec.bgp->ipv6_address = arena_strdup(
				n->o.arena, cidr_str(&addr[1], (char[CIDR_STRLEN]){ 0 }));
		if (as)
			n->spec.bgp->as_number =
				(struct opt_asn){ .set = true, .v = (uint32_t)asn };
	}
	if (!cur)
		r = ds_create(s->ds, &n->o);
	else if (!model_same_content(before, &n->o))
		r = ds_update(s->ds, &n->o);
	if (r < 0)
		sb_addf(&s->err, "writing Node %s: %s", s->name, ds_last_error(s->ds));
	else
		log_info("Node %s: %s, BGP address %s, IPv6 %s", s->name,
			 !cur				     ? "created"
			 : model_same_content(before, &n->o) ? "unchanged"
							     : "updated",
			 none[0] ? "none" : n->spec.bgp->ipv4_address,
			 none[1] ? "none" : n->spec.bgp->ipv6_address);
	model_free(before);
	if (r < 0) {
		model_free(&n->o);
		return r;
	}
	*node_out = n;
	return 0;
}

/*
 * A random unique local /48 (RFC 4193), Calico's IPv6 pool when CALICO_IPV6POOL_CIDR is
 * unset; "" (refused by the model, naming the field) in the unlikely case the kernel gives
 * no random bytes.
 */
static const char *random_ula(struct node_run *s)
{
	uint8_t r[5];
	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
		return "";
	return arena_printf(s->a, "fd%02x:%02x%02x:%02x%02x::/48", r[0], r[1], r[2], r[3], r[4]);
}

/* The setting CALICO_IPV4POOL_@key, or CALICO_IPV6POOL_@key. */
static const char *pool_env(struct node_run *s, bool v6, const char *key)
{
	return arena_printf(s->a, "CALICO_IPV%dPOOL_%s", v6 ? 6 : 4, key);
}

/* 4. The default pool of @family, from CALICO_IPV4POOL_* or CALICO_IPV6POOL_*. */
static int default_pool(struct node_run *s, int family)
{
	bool v6 = family == AF_INET6;
	const char *name = v6 ? "default-ipv6-ippool" : "default-ipv4-ippool";
	struct br_object **pools;
	size_t n;
	if (ds_list(s->ds, model_kind(KIND_IPPOOL), NULL, &pools, &n) < 0) {
		sb_addf(&s->err, "listing IP pools: %s", ds_last_error(s->ds));
		return -EIO;
	}
	bool have = false;
	for (size_t i = 0; i < n; i++) {
		struct br_cidr c;
		const char *cidr = ((const struct br_ippool *)pools[i])->spec.cidr;
		have |= cidr && cidr_parse(cidr, false, &c) == 0 && c.ip.family == family;
	}
	model_free_all(pools, n);
	if (have || env_true("NO_DEFAULT_POOLS"))
		return 0;
	/* The document the user's settings make, decoded and checked like any other. */
	struct strbuf doc = STRBUF_INIT;
	sb_init(&doc);
	const char *block = node_env_or(pool_env(s, v6, "BLOCK_SIZE"), v6 ? "122" : "26");
	sb_addf(&doc,
		"{\"apiVersion\":\"projectcalico.org/v3\",\"kind\":\"IPPool\",\"metadata\":"
		"{\"name\":\"%s\"},\"spec\":{\"cidr\":",
		name);
	/* (the random IPv6 prefix only when none is given) */
	const char *cidr = node_env_or(pool_env(s, v6, "CIDR"), NULL);
	json_write_string(&doc, cidr ? cidr : v6 ? random_ula(s) : "192.168.0.0/16");
	sb_adds(&doc, ",\"blockSize\":");
	if (strspn(block, "0123456789") == strlen(block) && strlen(block) < 4)
		sb_adds(&doc, block);
	else
		json_write_string(&doc, block); /* refused by the model, naming the field */
	static const char *const modes[][2] = { { "VXLAN", "vxlanMode" }, { "IPIP", "ipipMode" } };
	for (size_t i = 0; i < (v6 ? 1 : 2); i++) { /* IPIP carries IPv4 only */
		const char *v = node_env_or(pool_env(s, v6, i ? "IPIP" : "VXLAN"), "Never");
		/* Calico's manifests say Always, CrossSubnet, Never, and "off" for Never */
		if (!strcasecmp(v, "off") || !strcasecmp(v, "never"))
			v = "Never";
		else if (!strcasecmp(v, "always"))
			v = "Always";
		else if (!strcasecmp(v, "crosssubnet"))
			v = "CrossSubnet";
		sb_addf(&doc, ",\"%s\":", modes[i][1]);
		json_write_string(&doc, v);
	}
	/* NAT outgoing: by default for IPv4 pools, not for IPv6 ones (as Calico) */
	const char *nat = getenv(pool_env(s, v6, "NAT_OUTGOING"));
	sb_addf(&doc, ",\"natOutgoing\":%s,\"nodeSelector\":",
		env_true(pool_env(s, v6, "NAT_OUTGOING")) || (!nat && !v6) ? "true" : "false");
	json_write_string(&doc, node_env_or(pool_env(s, v6, "NODE_SELECTOR"), "all()"));
	sb_adds(&doc, "}}");
	struct jv *v;
	struct model_errors errs = { 0 };
	struct br_object *pool = NULL;
	int r = json_parse(s->a, doc.buf, doc.len, &v, &s->err);
	if (r == 0 && !(pool = model_decode(v, false, &errs))) {
		sb_addf(&s->err, "the default pool from %s*:", pool_env(s, v6, ""));
		for (size_t i = 0; i < errs.n; i++)
			sb_addf(&s->err, " %s", errs.v[i]);
		r = -EINVAL;
	}
	model_errors_clear(&errs);
	sb_free(&doc);
	if (r == 0 && (r = ds_create(s->ds, pool)) < 0 && r != -EEXIST)
		sb_addf(&s->err, "creating the default pool %s: %s", name, ds_last_error(s->ds));
	else if (r == 0)
		log_info("created IPPool %s (%s)", name, ((struct br_ippool *)pool)->spec.cidr);
	model_free(pool);
	return r == -EEXIST ? 0 : r; /* another node's startup made it first */
}

/* The tunnel addresses a node may hold (Calico's handles and IPAM attribute types). */
enum tunnel {
	TUN_IPIP,
	TUN_VXLAN,
	TUN_VXLAN6
};
static const struct {
	const char *what, *handle, *type;
	int family;
} tunnels[] = {
	[TUN_IPIP] = { "IPIP", "ipip", "ipipTunnelAddress", AF_INET },
	[TUN_VXLAN] = { "VXLAN", "vxlan", "vxlanTunnelAddress", AF_INET },
	[TUN_VXLAN6] = { "IPv6 VXLAN", "vxlan-v6", "vxlanV6TunnelAddress", AF_INET6 },
};

/* Pools of the tunnel's family that are enabled, select the node and use its encapsulation. */
static size_t pools_using(struct node_run *s, const struct br_node *n, enum tunnel t,
			  struct br_object **pools, size_t np, const char **names)
{
	size_t k = 0;
	struct sel_labels labels = sel_labels_of(&n->o.meta.labels);
	for (size_t i = 0; i < np; i++) {
		const struct br_ippool *p = (const struct br_ippool *)pools[i];
		const char *mode = t == TUN_IPIP ? p->spec.ipip_mode : p->spec.vxlan_mode;
		struct br_cidr c;
		if (p->spec.disabled || !mode || streq(mode, "Never") ||
		    cidr_parse(p->spec.cidr, false, &c) < 0 || c.ip.family != tunnels[t].family)
			continue;
		struct sel *sel = NULL;
		struct strbuf err = STRBUF_INIT;
		sb_init(&err);
		const char *text = p->spec.node_selector && *p->spec.node_selector
					   ? p->spec.node_selector
					   : "all()";
		if (sel_parse(text, &sel, &err) == 0 && sel_eval(sel, &labels))
			names[k++] = arena_strdup(s->a, p->o.meta.name);
		sel_free(sel);
		sb_free(&err);
	}
	return k;
}

/* 5. One tunnel address: kept, allocated, moved or released; the Node written when it changed. */
static int tunnel_addr(struct node_run *s, struct br_node *n, enum tunnel t,
		       struct br_object **pools, size_t np, bool *used)
{
	const char **names = arena_new_array(s->a, const char *, np + 1);
	/* a tunnel carries its family over the node's address of that family: none, no tunnel */
	const struct br_node_bgp *bgp = n->spec.bgp;
	bool underlay =
		bgp && (tunnels[t].family == AF_INET6 ? bgp->ipv6_address : bgp->ipv4_address);
	size_t k = underlay ? pools_using(s, n, t, pools, np, names) : 0;
	*used = k > 0;
	const char **field = t == TUN_VXLAN    ? &n->spec.ipv4_vxlan_tunnel_addr
			     : t == TUN_VXLAN6 ? &n->spec.ipv6_vxlan_tunnel_addr
			     : n->spec.bgp     ? &n->spec.bgp->ipv4_ipip_tunnel_addr
					       : NULL;
	const char *have = field ? *field : NULL;
	const char *handle = arena_printf(s->a, "%s-tunnel-addr-%s", tunnels[t].handle, s->name);
	/* kept while it lies in a pool that still needs it */
	struct br_ip ip;
	bool keep = false;
	for (size_t i = 0; have && i < np && ip_parse(have, &ip) == 0; i++)
		for (size_t j = 0; j < k; j++) {
			struct br_cidr c;
			const struct br_ippool *p = (const struct br_ippool *)pools[i];
			keep |= streq(p->o.meta.name, names[j]) &&
				cidr_parse(p->spec.cidr, false, &c) == 0 &&
				cidr_contains_ip(&c, &ip);
		}
	if (keep || (!have && !k))
		return 0;
	int64_t now = time(NULL);
	size_t released = 0;
	int r = ipam_release_handle(s->ds, handle, now, 0, &released, &s->err);
	if (r < 0)
		return r;
	const char *addr = NULL;
	if (k) {
		struct br_labels attrs = { 0 };
		labels_set(s->a, &attrs, IPAM_ATTR_NODE, s->name);
		labels_set(s->a, &attrs, "type", tunnels[t].type);
		struct ipam_request req = { .handle = handle,
					    .node = s->name,
					    .family = tunnels[t].family,
					    .pools = names,
					    .n_pools = k,
					    .secondary = &attrs,
					    .now = now };
		struct ipam_assigned got;
		if ((r = ipam_assign(s->ds, &req, &got, &s->err)) < 0)
			return r;
		addr = arena_strdup(n->o.arena, ip_str(&got.ips[0], (char[IP_STRLEN]){ 0 }));
	}
	if (t != TUN_IPIP) {
		*field = addr;
	} else {
		if (!n->spec.bgp)
			n->spec.bgp = arena_alloc(n->o.arena, sizeof(*n->spec.bgp));
		n->spec.bgp->ipv4_ipip_tunnel_addr = addr;
	}
	if ((r = ds_update(s->ds, &n->o)) < 0) {
		sb_addf(&s->err, "writing Node %s's %s tunnel address: %s", s->name,
			tunnels[t].what, ds_last_error(s->ds));
		return r;
	}
	log_info("%s tunnel address: %s", tunnels[t].what,
		 addr ? addr : "released (no pool uses it for this node)");
	return 0;
}

int node_startup(const struct node_env *e)
{
	struct node_run s = { .env = e, .a = arena_new() };
	sb_init(&s.err);
	struct host h = { 0 };
	struct br_node *n = NULL;
	struct br_object **pools = NULL;
	size_t np = 0;
	int r = -EINVAL;
	if (!(s.name = node_name(s.a, e))) {
		sb_adds(&s.err, "no node name: set NODENAME");
		goto out;
	}
	/* the pods' MTU as the user gives it (Calico's veth_mtu), 0 or unset: detected */
	const char *mtu_v = node_env_or("CNI_MTU", "0");
	char *end;
	unsigned long set_mtu = strtoul(mtu_v, &end, 10);
	if (*end || !*mtu_v || mtu_v[0] == '-' || (set_mtu && (set_mtu < 68 || set_mtu > 65535))) {
		sb_addf(&s.err, "CNI_MTU: \"%.32s\" is not an MTU (68-65535, or 0 to detect it)",
			mtu_v);
		goto out;
	}
	struct ds_config cfg = { 0 };
	struct ds_config_storage st = { 0 };
	if ((r = ds_config_from_env(&cfg, &st, &s.err)) < 0 ||
	    (r = ds_open(&cfg, &s.ds, &s.err)) < 0) {
		ds_config_free_storage(&st);
		goto out;
	}
	ds_config_free_storage(&st);
	s.kube = ds_kube_client(s.ds) != NULL;
	log_info("node %s, %s datastore", s.name, s.kube ? "Kubernetes" : "etcd");
	if ((r = host_read(&h, &s.err)) < 0 || (r = write_node(&s, &h, &n)) < 0 ||
	    (r = default_pool(&s, AF_INET)) < 0 ||
	    /* an IPv6 pool only where IPv6 is asked for (IP6), as calico-node */
	    (n->spec.bgp && n->spec.bgp->ipv6_address && (r = default_pool(&s, AF_INET6)) < 0))
		goto out;
	if ((r = ds_list(s.ds, model_kind(KIND_IPPOOL), NULL, &pools, &np)) < 0) {
		sb_addf(&s.err, "listing IP pools: %s", ds_last_error(s.ds));
		goto out;
	}
	bool ipip, vxlan, vxlan6;
	if ((r = tunnel_addr(&s, n, TUN_IPIP, pools, np, &ipip)) < 0 ||
	    (r = tunnel_addr(&s, n, TUN_VXLAN, pools, np, &vxlan)) < 0 ||
	    (r = tunnel_addr(&s, n, TUN_VXLAN6, pools, np, &vxlan6)) < 0)
		goto out;
	struct ad_link_mtu *mtus = xcalloc(h.links.n + 1, sizeof(*mtus));
	for (size_t i = 0; i < h.links.n; i++)
		mtus[i] = (struct ad_link_mtu){ .name = h.links.v[i].name,
						.up = (h.links.v[i].flags & IFF_UP) != 0,
						.mtu = h.links.v[i].mtu };
	unsigned encaps = (ipip ? AD_ENCAP_IPIP : 0) | (vxlan ? AD_ENCAP_VXLAN : 0) |
			  (vxlan6 ? AD_ENCAP_VXLAN6 : 0);
	unsigned mtu = set_mtu ? (unsigned)set_mtu : ad_pod_mtu(mtus, h.links.n, encaps);
	free(mtus);
	char text[32];
	snprintf(text, sizeof(text), "%u\n", mtu);
	const char *name_line = arena_printf(s.a, "%s\n", s.name);
	if ((r = node_write_file(e->mtu_file, text, strlen(text), 0644)) < 0 ||
	    (r = node_write_file(e->nodename_file, name_line, strlen(name_line), 0644)) < 0)
		goto out;
	log_info("pod MTU %u (%s) in %s", mtu,
		 set_mtu  ? "CNI_MTU"
		 : vxlan6 ? "IPv6 VXLAN"
		 : vxlan  ? "VXLAN"
		 : ipip	  ? "IPIP"
			  : "no encapsulation",
		 e->mtu_file);
out:
	if (r < 0)
		log_error("startup failed: %s", s.err.len ? sb_str(&s.err) : strerror(-r));
	model_free_all(pools, np);
	model_free(n ? &n->o : NULL);
	host_free(&h);
	ds_close(s.ds);
	sb_free(&s.err);
	arena_free(s.a);
	return r;
}
