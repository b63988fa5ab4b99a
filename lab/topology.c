/*
 * Topology files: YAML (or JSON) through the project's reader into a
 * validated struct lab_topology. Pure: no files, no kernel. Every problem is
 * collected (not only the first), each naming its field, so a user fixes a
 * file in one pass; any problem means no topology at all.
 */
#include "topology.h"

#include <brindle/core/json.h>
#include <brindle/core/yaml.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct pctx {
	struct arena *a;
	const char *source;
	struct strbuf *err;
	unsigned n_err;
};

static printf_like(3, 4) void perr(struct pctx *c, const char *path, const char *fmt, ...)
{
	va_list ap;
	sb_addf(c->err, "%s: %s: ", c->source, path);
	va_start(ap, fmt);
	sb_vaddf(c->err, fmt, ap);
	va_end(ap);
	sb_addc(c->err, '\n');
	c->n_err++;
}

static const char *sub(struct pctx *c, const char *path, const char *field)
{
	return path[0] ? arena_printf(c->a, "%s.%s", path, field) : field;
}

static const char *item(struct pctx *c, const char *path, size_t i)
{
	return arena_printf(c->a, "%s[%zu]", path, i);
}

/* Rejects members not in @allowed (NULL-terminated). */
static void check_fields(struct pctx *c, const struct jv *obj, const char *path,
			 const char *const *allowed)
{
	for (size_t i = 0; i < obj->obj.n; i++) {
		bool ok = false;
		for (const char *const *k = allowed; *k && !ok; k++)
			ok = streq(*k, obj->obj.members[i].key);
		if (!ok)
			perr(c, sub(c, path, obj->obj.members[i].key), "unknown field");
	}
}

static bool is_object(struct pctx *c, const struct jv *v, const char *path)
{
	if (v && v->type == JV_OBJECT)
		return true;
	perr(c, path, "must be a mapping");
	return false;
}

/* A list, or absent (0 items). NULL and an error when it is something else. */
static const struct jv *list_of(struct pctx *c, const struct jv *obj, const char *key,
				const char *path, bool *bad)
{
	const struct jv *v = jv_get(obj, key);
	*bad = false;
	if (!v || v->type == JV_NULL)
		return NULL;
	if (v->type != JV_ARRAY) {
		perr(c, sub(c, path, key), "must be a list");
		*bad = true;
		return NULL;
	}
	return v;
}

static const char *get_string(struct pctx *c, const struct jv *obj, const char *key,
			      const char *path, bool required)
{
	const struct jv *v = jv_get(obj, key);
	if (!v || v->type == JV_NULL) {
		if (required)
			perr(c, sub(c, path, key), "required");
		return NULL;
	}
	const char *s = jv_as_string(v);
	if (!s || v->type == JV_ARRAY || v->type == JV_OBJECT) {
		perr(c, sub(c, path, key), "must be a string");
		return NULL;
	}
	return s;
}

static bool get_bool(struct pctx *c, const struct jv *obj, const char *key, const char *path,
		     bool def)
{
	const struct jv *v = jv_get(obj, key);
	bool b = def;
	if (v && v->type != JV_NULL && !jv_as_bool(v, &b))
		perr(c, sub(c, path, key), "must be true or false");
	return b;
}

/* An integer in [lo, hi]; @def when absent; false (and an error) when bad. */
static bool get_int(struct pctx *c, const struct jv *obj, const char *key, const char *path,
		    int64_t lo, int64_t hi, bool required, int64_t def, int64_t *out)
{
	const struct jv *v = jv_get(obj, key);
	*out = def;
	if (!v || v->type == JV_NULL) {
		if (required) {
			perr(c, sub(c, path, key), "required");
			return false;
		}
		return true;
	}
	int64_t x;
	if (!jv_as_int64(v, &x)) {
		perr(c, sub(c, path, key), "must be an integer");
		return false;
	}
	if (x < lo || x > hi) {
		perr(c, sub(c, path, key), "%lld is out of range (%lld to %lld)", (long long)x,
		     (long long)lo, (long long)hi);
		return false;
	}
	*out = x;
	return true;
}

/* RFC 1123 label: what Kubernetes takes for namespace and pod names. */
static bool dns_label(const char *s, size_t max)
{
	size_t n = strlen(s);
	if (n == 0 || n > max || s[0] == '-' || s[n - 1] == '-')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
			return false;
	return true;
}

bool lab_api_ipv6(const struct lab_topology *t)
{
	for (size_t i = 0; i < t->n_nodes; i++)
		if (t->nodes[i].ip.family)
			return false;
	return t->n_nodes > 0;
}

bool lab_dns_label(const char *s, size_t max)
{
	return s && dns_label(s, max);
}

bool lab_name_valid(const char *name)
{
	return name && dns_label(name, LAB_NAME_MAX);
}

static const char *get_name(struct pctx *c, const struct jv *obj, const char *key, const char *path,
			    size_t max)
{
	const char *s = get_string(c, obj, key, path, true);
	if (s && !dns_label(s, max)) {
		perr(c, sub(c, path, key),
		     "\"%s\" must be lower case letters, digits and '-', at most %zu, starting "
		     "and ending with a letter or digit",
		     s, max);
		return NULL;
	}
	return s;
}

/* An address of family @af. */
static bool get_ip(struct pctx *c, const struct jv *obj, const char *key, const char *path, int af,
		   bool required, struct br_ip *out)
{
	const char *s = get_string(c, obj, key, path, required);
	if (!s)
		return false;
	struct br_ip ip;
	if (ip_parse(s, &ip) < 0 || ip.family != af) {
		perr(c, sub(c, path, key), "\"%s\" is not an %s address", s,
		     af == AF_INET6 ? "IPv6" : "IPv4");
		return false;
	}
	*out = ip;
	return true;
}

/* A prefix of family @af (AF_UNSPEC: either). */
static bool get_cidr(struct pctx *c, const struct jv *obj, const char *key, const char *path,
		     int af, bool required, struct br_cidr *out)
{
	const char *s = get_string(c, obj, key, path, required);
	if (!s)
		return false;
	struct br_cidr cidr;
	if (cidr_parse(s, false, &cidr) < 0 || (af && cidr.ip.family != af)) {
		perr(c, sub(c, path, key), "\"%s\" is not %s", s,
		     af == AF_INET    ? "an IPv4 prefix (a.b.c.d/n)"
		     : af == AF_INET6 ? "an IPv6 prefix (x::/n)"
				      : "an IPv4 or IPv6 prefix");
		return false;
	}
	if (!cidr_is_network(&cidr)) {
		perr(c, sub(c, path, key), "\"%s\" has host bits set", s);
		return false;
	}
	*out = cidr;
	return true;
}

static const char *const proto_names[] = { "TCP", "UDP", "SCTP" };

const char *lab_proto_name(enum lab_proto p)
{
	return proto_names[p];
}

bool lab_proto_parse(const char *s, enum lab_proto *out)
{
	for (size_t i = 0; i < ARRAY_SIZE(proto_names); i++)
		if (s && strcasecmp(s, proto_names[i]) == 0) {
			*out = (enum lab_proto)i;
			return true;
		}
	return false;
}

static const char *const encap_names[] = { "None", "VXLAN", "VXLANCrossSubnet", "IPIP",
					   "IPIPCrossSubnet" };

/* A map of strings (labels, settings) at @p. */
static void get_string_map(struct pctx *c, const struct jv *v, const char *p, struct br_labels *out)
{
	*out = (struct br_labels){ 0 };
	if (!v || v->type == JV_NULL)
		return;
	if (!is_object(c, v, p))
		return;
	for (size_t i = 0; i < v->obj.n; i++) {
		const struct jv_member *m = &v->obj.members[i];
		const char *val = jv_as_string(m->value);
		if (!m->key[0]) {
			perr(c, p, "empty key");
		} else if (!val || m->value->type == JV_ARRAY || m->value->type == JV_OBJECT ||
			   m->value->type == JV_NULL) {
			perr(c, sub(c, p, m->key), "must be a string");
		} else {
			labels_set(c->a, out, m->key, val);
		}
	}
}

static void get_labels(struct pctx *c, const struct jv *obj, const char *path,
		       struct br_labels *out)
{
	get_string_map(c, jv_get(obj, "labels"), sub(c, path, "labels"), out);
}

/* `serve: [{protocol, port}]` or `ports: [{name, containerPort, protocol}]`. */
static void get_ports(struct pctx *c, const struct jv *obj, const char *key, const char *path,
		      bool named, struct lab_port **out, size_t *n)
{
	bool bad;
	const struct jv *l = list_of(c, obj, key, path, &bad);
	*out = NULL;
	*n = 0;
	if (!l)
		return;
	static const char *const serve_fields[] = { "protocol", "port", NULL };
	static const char *const port_fields[] = { "name", "containerPort", "protocol", NULL };
	*out = arena_new_array(c->a, struct lab_port, l->arr.n);
	for (size_t i = 0; i < l->arr.n; i++) {
		const char *p = item(c, sub(c, path, key), i);
		const struct jv *e = l->arr.items[i];
		if (!is_object(c, e, p))
			continue;
		check_fields(c, e, p, named ? port_fields : serve_fields);
		struct lab_port port = { .proto = LAB_TCP };
		const char *proto = get_string(c, e, "protocol", p, false);
		if (proto && !lab_proto_parse(proto, &port.proto))
			perr(c, sub(c, p, "protocol"), "unknown protocol \"%s\" (TCP, UDP or SCTP)",
			     proto);
		int64_t num;
		if (get_int(c, e, named ? "containerPort" : "port", p, 1, 65535, true, 0, &num))
			port.port = (uint16_t)num;
		if (named) {
			port.name = get_string(c, e, "name", p, false);
			if (port.name && (strlen(port.name) > 15 || !dns_label(port.name, 15)))
				perr(c, sub(c, p, "name"),
				     "\"%s\" must be at most 15 lower case letters, digits and '-'",
				     port.name);
		}
		for (size_t j = 0; j < *n; j++)
			if ((*out)[j].port == port.port && (*out)[j].proto == port.proto)
				perr(c, p, "%s %u is given twice", lab_proto_name(port.proto),
				     port.port);
		(*out)[(*n)++] = port;
	}
}

/* Addresses the file assigns, with the field that assigns each (collisions). */
struct claim {
	struct br_ip ip;
	const char *path;
};

struct claims {
	struct claim *v;
	size_t n, cap;
};

static void claim(struct pctx *c, struct claims *cl, const struct br_ip *ip, const char *path)
{
	char buf[IP_STRLEN];
	for (size_t i = 0; i < cl->n; i++)
		if (ip_equal(&cl->v[i].ip, ip)) {
			perr(c, path, "address %s is also %s", ip_str(ip, buf), cl->v[i].path);
			return;
		}
	GROW(cl->v, cl->cap, cl->n + 1);
	cl->v[cl->n++] = (struct claim){ *ip, path };
}

static bool claimed(const struct claims *cl, const struct br_ip *ip)
{
	for (size_t i = 0; i < cl->n; i++)
		if (ip_equal(&cl->v[i].ip, ip))
			return true;
	return false;
}

static size_t find_subnet(const struct lab_topology *t, const char *name)
{
	for (size_t i = 0; i < t->n_subnets; i++)
		if (streq(t->subnets[i].name, name))
			return i;
	return SIZE_MAX;
}

/* The subnet a host address is in, and that it is a usable host address there. */
static void check_in_subnet(struct pctx *c, const struct lab_subnet *s, const struct br_ip *ip,
			    const char *path)
{
	char buf[IP_STRLEN], cb[CIDR_STRLEN];
	uint32_t net = ip4_u32(&s->cidr.ip), last = net | (0xffffffffu >> s->cidr.len);
	if (!cidr_contains_ip(&s->cidr, ip))
		perr(c, path, "%s is not in subnet %s (%s)", ip_str(ip, buf), s->name,
		     cidr_str(&s->cidr, cb));
	else if (ip4_u32(ip) == net || ip4_u32(ip) == last)
		perr(c, path, "%s is the network or broadcast address of subnet %s",
		     ip_str(ip, buf), s->name);
}

/* The first host address of @s nobody claimed. */
static bool pick_address(const struct lab_subnet *s, const struct claims *cl, struct br_ip *out)
{
	uint32_t net = ip4_u32(&s->cidr.ip), last = net | (0xffffffffu >> s->cidr.len);
	for (uint32_t a = net + 1; a < last; a++) {
		struct br_ip ip = ip4_from_u32(a);
		if (!claimed(cl, &ip)) {
			*out = ip;
			return true;
		}
	}
	return false;
}

/* An IPv6-only subnet's next free address: the prefix with host 1, 2, ... (::1 its gateway). */
static bool pick_address6(const struct lab_subnet *s, const struct claims *cl, struct br_ip *out)
{
	for (uint32_t host = 1; host < 0x10000; host++) {
		struct br_ip ip = s->cidr6.ip;
		ip.a[14] |= (uint8_t)(host >> 8);
		ip.a[15] |= (uint8_t)host;
		if (!claimed(cl, &ip)) {
			*out = ip;
			return true;
		}
	}
	return false;
}

/*
 * The IPv6 address of a node or BGP peer (object @e at @p) on subnet @s with IPv4 address
 * @ip (family 0: none): given as ip6, or the subnet's prefix with the IPv4 address's host
 * part (.11 -> ::b), or on an IPv6-only subnet its next free address; none when @s has no
 * cidr6. Callers place given and derived addresses before picked ones.
 */
static void place_ip6(struct pctx *c, struct claims *cl, const struct lab_subnet *s,
		      const struct jv *e, const char *p, const struct br_ip *ip, struct br_ip *ip6)
{
	if (!s->cidr6.len) {
		if (jv_get(e, "ip6"))
			perr(c, sub(c, p, "ip6"), "subnet %s has no cidr6", s->name);
		return;
	}
	if (jv_get(e, "ip6")) {
		if (!get_ip(c, e, "ip6", p, AF_INET6, false, ip6))
			return;
		if (!cidr_contains_ip(&s->cidr6, ip6))
			perr(c, sub(c, p, "ip6"), "is not in subnet %s's cidr6", s->name);
	} else if (ip->family) {
		uint32_t host = ip4_u32(ip) & (0xffffffffu >> s->cidr.len);
		*ip6 = s->cidr6.ip;
		for (int b = 0; b < 4; b++)
			ip6->a[12 + b] |= (uint8_t)(host >> (24 - 8 * b));
	} else if (!pick_address6(s, cl, ip6)) {
		perr(c, p, "subnet %s has no free address left", s->name);
		return;
	}
	claim(c, cl, ip6, sub(c, p, "ip6"));
}

static void parse_subnets(struct pctx *c, const struct jv *root, struct lab_topology *t,
			  struct claims *cl)
{
	static const char *const fields[] = {
		"name", "cidr", "gateway", "cidr6", "gateway6", NULL
	};
	bool bad;
	const struct jv *l = list_of(c, root, "subnets", "", &bad);
	if (!l || l->arr.n == 0) {
		if (!bad)
			perr(c, "subnets", "at least one subnet is required");
		return;
	}
	t->subnets = arena_new_array(c->a, struct lab_subnet, l->arr.n);
	for (size_t i = 0; i < l->arr.n; i++) {
		const char *p = item(c, "subnets", i);
		const struct jv *e = l->arr.items[i];
		if (!is_object(c, e, p))
			continue;
		check_fields(c, e, p, fields);
		struct lab_subnet s = { .name = get_name(c, e, "name", p, 63) };
		/* IPv4, IPv6 or both: an IPv6-only subnet has cidr6 alone */
		bool v6_only = !jv_get(e, "cidr") && jv_get(e, "cidr6");
		bool ok = !v6_only && get_cidr(c, e, "cidr", p, AF_INET, true, &s.cidr);
		if (s.name && find_subnet(t, s.name) != SIZE_MAX)
			perr(c, sub(c, p, "name"), "subnet \"%s\" is given twice", s.name);
		if (ok && s.cidr.len > 29) {
			perr(c, sub(c, p, "cidr"),
			     "/%u is too small for a lab subnet (at most /29)", s.cidr.len);
			ok = false;
		}
		for (size_t j = 0; ok && j < t->n_subnets; j++)
			if (t->subnets[j].cidr.len && cidr_overlaps(&t->subnets[j].cidr, &s.cidr))
				perr(c, sub(c, p, "cidr"), "overlaps subnet %s",
				     t->subnets[j].name ? t->subnets[j].name : "?");
		if (v6_only && jv_get(e, "gateway")) {
			perr(c, sub(c, p, "gateway"), "needs cidr");
		} else if (ok) {
			uint32_t last = ip4_u32(&s.cidr.ip) | (0xffffffffu >> s.cidr.len);
			s.gateway = ip4_from_u32(last - 1);
			if (jv_get(e, "gateway") &&
			    get_ip(c, e, "gateway", p, AF_INET, false, &s.gateway))
				check_in_subnet(c, &s, &s.gateway, sub(c, p, "gateway"));
			claim(c, cl, &s.gateway, sub(c, p, "gateway"));
		} else {
			s.cidr = (struct br_cidr){ 0 };
		}
		if (jv_get(e, "cidr6") && get_cidr(c, e, "cidr6", p, AF_INET6, true, &s.cidr6)) {
			if (s.cidr6.len < 64 || s.cidr6.len > 120) {
				perr(c, sub(c, p, "cidr6"),
				     "/%u: a lab subnet's IPv6 prefix is /64 to /120", s.cidr6.len);
				s.cidr6 = (struct br_cidr){ 0 };
			}
			for (size_t j = 0; s.cidr6.len && j < t->n_subnets; j++)
				if (t->subnets[j].cidr6.len &&
				    cidr_overlaps(&t->subnets[j].cidr6, &s.cidr6))
					perr(c, sub(c, p, "cidr6"), "overlaps subnet %s",
					     t->subnets[j].name ? t->subnets[j].name : "?");
		}
		if (s.cidr6.len) {
			/* the prefix with the IPv4 gateway's host part (.254 -> ::fe), as nodes */
			uint32_t host =
				s.cidr.len ? ip4_u32(&s.gateway) & (0xffffffffu >> s.cidr.len) : 1;
			s.gateway6 = s.cidr6.ip;
			for (int b = 0; b < 4; b++)
				s.gateway6.a[12 + b] |= (uint8_t)(host >> (24 - 8 * b));
			if (get_ip(c, e, "gateway6", p, AF_INET6, false, &s.gateway6) &&
			    !cidr_contains_ip(&s.cidr6, &s.gateway6))
				perr(c, sub(c, p, "gateway6"), "is not in cidr6");
			claim(c, cl, &s.gateway6, sub(c, p, "gateway6"));
		} else if (jv_get(e, "gateway6")) {
			perr(c, sub(c, p, "gateway6"), "needs cidr6");
		}
		t->subnets[t->n_subnets++] = s;
	}
}

static void parse_pools(struct pctx *c, const struct jv *root, struct lab_topology *t)
{
	static const char *const fields[] = { "cidr", "blockSize", "natOutgoing", NULL };
	bool bad;
	const struct jv *l = list_of(c, root, "ipPools", "", &bad);
	if (!l || l->arr.n == 0) {
		if (!bad)
			perr(c, "ipPools", "at least one IP pool is required");
		return;
	}
	t->pools = arena_new_array(c->a, struct lab_pool, l->arr.n);
	for (size_t i = 0; i < l->arr.n; i++) {
		const char *p = item(c, "ipPools", i);
		const struct jv *e = l->arr.items[i];
		if (!is_object(c, e, p))
			continue;
		check_fields(c, e, p, fields);
		struct lab_pool pool = { 0 };
		int64_t bs;
		bool ok = get_cidr(c, e, "cidr", p, AF_UNSPEC, true, &pool.cidr);
		bool v6 = ok && pool.cidr.ip.family == AF_INET6;
		t->ipv6 |= v6;
		t->ipv4 |= ok && !v6;
		if (get_int(c, e, "blockSize", p, v6 ? 116 : 20, v6 ? 128 : 32, false,
			    v6 ? 122 : 26, &bs)) {
			pool.block_size = (unsigned)bs;
			if (ok && bs < pool.cidr.len)
				perr(c, sub(c, p, "blockSize"),
				     "%lld is larger than the pool itself (/%u)", (long long)bs,
				     pool.cidr.len);
		}
		pool.nat_outgoing = get_bool(c, e, "natOutgoing", p, false);
		for (size_t j = 0; ok && j < t->n_subnets; j++)
			if ((t->subnets[j].cidr.len &&
			     cidr_overlaps(&t->subnets[j].cidr, &pool.cidr)) ||
			    (t->subnets[j].cidr6.len &&
			     cidr_overlaps(&t->subnets[j].cidr6, &pool.cidr)))
				perr(c, sub(c, p, "cidr"), "overlaps subnet %s",
				     t->subnets[j].name);
		for (size_t j = 0; ok && j < t->n_pools; j++)
			if (t->pools[j].cidr.len && cidr_overlaps(&t->pools[j].cidr, &pool.cidr))
				perr(c, sub(c, p, "cidr"), "overlaps ipPools[%zu]", j);
		if (!ok)
			pool.cidr = (struct br_cidr){ 0 };
		t->pools[t->n_pools++] = pool;
	}
}

static size_t subnet_ref(struct pctx *c, const struct lab_topology *t, const struct jv *e,
			 const char *p)
{
	const char *s = get_string(c, e, "subnet", p, true);
	if (!s)
		return SIZE_MAX;
	size_t i = find_subnet(t, s);
	if (i == SIZE_MAX)
		perr(c, sub(c, p, "subnet"), "unknown subnet \"%s\"", s);
	else if (!t->subnets[i].cidr.len && !t->subnets[i].cidr6.len)
		i = SIZE_MAX; /* already reported */
	return i;
}

/* Explicit addresses first (so automatic ones never take them), then the rest in order. */
static void parse_nodes(struct pctx *c, const struct jv *root, struct lab_topology *t,
			struct claims *cl)
{
	static const char *const fields[] = {
		"name", "subnet", "ip", "ip6", "routeReflectorClusterID", "pods", "serve", NULL
	};
	bool bad;
	const struct jv *l = list_of(c, root, "nodes", "", &bad);
	if (!l || l->arr.n == 0) {
		if (!bad)
			perr(c, "nodes", "at least one node is required");
		return;
	}
	t->nodes = arena_new_array(c->a, struct lab_node, l->arr.n);
	bool *automatic = arena_new_array(c->a, bool, l->arr.n);
	for (size_t i = 0; i < l->arr.n; i++) {
		const char *p = item(c, "nodes", i);
		const struct jv *e = l->arr.items[i];
		struct lab_node *n = &t->nodes[t->n_nodes++];
		n->subnet = SIZE_MAX;
		if (!is_object(c, e, p))
			continue;
		check_fields(c, e, p, fields);
		n->name = get_name(c, e, "name", p, 63);
		for (size_t j = 0; n->name && j + 1 < t->n_nodes; j++)
			if (streq(t->nodes[j].name, n->name))
				perr(c, sub(c, p, "name"), "node \"%s\" is given twice", n->name);
		n->subnet = subnet_ref(c, t, e, p);
		n->pods = get_bool(c, e, "pods", p, true);
		get_ports(c, e, "serve", p, false, &n->serve, &n->n_serve);
		const char *rr = get_string(c, e, "routeReflectorClusterID", p, false);
		struct br_ip rrip;
		if (rr && (ip_parse(rr, &rrip) < 0 || rrip.family != AF_INET))
			perr(c, sub(c, p, "routeReflectorClusterID"),
			     "\"%s\" is not an IPv4 address", rr);
		n->rr_cluster_id = rr;
		bool v4 = n->subnet != SIZE_MAX && t->subnets[n->subnet].cidr.len;
		if (jv_get(e, "ip") && n->subnet != SIZE_MAX && !v4) {
			perr(c, sub(c, p, "ip"), "subnet %s has no cidr (it is IPv6 only)",
			     t->subnets[n->subnet].name);
		} else if (jv_get(e, "ip")) {
			if (get_ip(c, e, "ip", p, AF_INET, true, &n->ip) && n->subnet != SIZE_MAX) {
				check_in_subnet(c, &t->subnets[n->subnet], &n->ip, sub(c, p, "ip"));
				claim(c, cl, &n->ip, sub(c, p, "ip"));
			}
		} else {
			automatic[i] = v4;
		}
	}
	for (size_t i = 0; i < t->n_nodes; i++) {
		struct lab_node *n = &t->nodes[i];
		if (!automatic[i] || n->subnet == SIZE_MAX)
			continue;
		const char *p = item(c, "nodes", i);
		if (!pick_address(&t->subnets[n->subnet], cl, &n->ip))
			perr(c, p, "subnet %s has no free address left",
			     t->subnets[n->subnet].name);
		else
			claim(c, cl, &n->ip, sub(c, p, "ip"));
	}
	/* IPv6: given or derived first, then picked, so a pick never takes a given address */
	for (int pass = 0; pass < 2 && l; pass++)
		for (size_t i = 0; i < t->n_nodes; i++) {
			struct lab_node *n = &t->nodes[i];
			const struct jv *e = l->arr.items[i];
			if (n->subnet != SIZE_MAX && e->type == JV_OBJECT &&
			    (!jv_get(e, "ip6") && !n->ip.family) == (pass == 1))
				place_ip6(c, cl, &t->subnets[n->subnet], e, item(c, "nodes", i),
					  &n->ip, &n->ip6);
		}
}

static void parse_externals(struct pctx *c, const struct jv *root, struct lab_topology *t,
			    struct claims *cl)
{
	static const char *const fields[] = { "name", "ip", "ip6", "serve", NULL };
	bool bad;
	const struct jv *l = list_of(c, root, "externalHosts", "", &bad);
	if (!l)
		return;
	t->externals = arena_new_array(c->a, struct lab_external, l->arr.n);
	for (size_t i = 0; i < l->arr.n; i++) {
		const char *p = item(c, "externalHosts", i);
		const struct jv *e = l->arr.items[i];
		struct lab_external *x = &t->externals[t->n_externals++];
		if (!is_object(c, e, p))
			continue;
		check_fields(c, e, p, fields);
		x->name = get_name(c, e, "name", p, 63);
		for (size_t j = 0; x->name && j + 1 < t->n_externals; j++)
			if (streq(t->externals[j].name, x->name))
				perr(c, sub(c, p, "name"), "external host \"%s\" is given twice",
				     x->name);
		get_ports(c, e, "serve", p, false, &x->serve, &x->n_serve);
		if (!jv_get(e, "ip") && !jv_get(e, "ip6")) {
			perr(c, p, "needs an address: ip (IPv4), ip6 (IPv6) or both");
			continue;
		}
		/* an address of each family, outside every subnet and pool */
		for (int f = 0; f < 2; f++) {
			const char *key = f ? "ip6" : "ip";
			struct br_ip *ip = f ? &x->ip6 : &x->ip;
			if (!jv_get(e, key) ||
			    !get_ip(c, e, key, p, f ? AF_INET6 : AF_INET, true, ip))
				continue;
			char buf[IP_STRLEN];
			for (size_t j = 0; j < t->n_subnets; j++) {
				const struct br_cidr *sc =
					f ? &t->subnets[j].cidr6 : &t->subnets[j].cidr;
				if (sc->len && cidr_contains_ip(sc, ip))
					perr(c, sub(c, p, key),
					     "%s is in subnet %s: external hosts are outside every "
					     "subnet (the fabric routes to them)",
					     ip_str(ip, buf), t->subnets[j].name);
			}
			for (size_t j = 0; j < t->n_pools; j++)
				if (t->pools[j].cidr.len && cidr_contains_ip(&t->pools[j].cidr, ip))
					perr(c, sub(c, p, key), "%s is in ipPools[%zu]",
					     ip_str(ip, buf), j);
			claim(c, cl, ip, sub(c, p, key));
		}
	}
}

static void parse_peers(struct pctx *c, const struct jv *root, struct lab_topology *t,
			struct claims *cl)
{
	static const char *const fields[] = { "name", "kind", "asNumber", "subnet",
					      "ip",   "ip6",  NULL };
	bool bad;
	const struct jv *l = list_of(c, root, "bgpPeers", "", &bad);
	if (!l)
		return;
	t->peers = arena_new_array(c->a, struct lab_bgp_peer, l->arr.n);
	bool *automatic = arena_new_array(c->a, bool, l->arr.n);
	for (size_t i = 0; i < l->arr.n; i++) {
		const char *p = item(c, "bgpPeers", i);
		const struct jv *e = l->arr.items[i];
		struct lab_bgp_peer *b = &t->peers[t->n_peers++];
		b->subnet = SIZE_MAX;
		if (!is_object(c, e, p))
			continue;
		check_fields(c, e, p, fields);
		b->name = get_name(c, e, "name", p, 63);
		b->kind = get_string(c, e, "kind", p, true);
		if (b->kind && !streq(b->kind, "frr") && !streq(b->kind, "gobgp"))
			perr(c, sub(c, p, "kind"), "unknown kind \"%s\" (frr or gobgp)", b->kind);
		int64_t as;
		if (get_int(c, e, "asNumber", p, 1, UINT32_MAX, true, 0, &as))
			b->as_number = (uint32_t)as;
		b->subnet = subnet_ref(c, t, e, p);
		bool v4 = b->subnet != SIZE_MAX && t->subnets[b->subnet].cidr.len;
		if (jv_get(e, "ip") && b->subnet != SIZE_MAX && !v4) {
			perr(c, sub(c, p, "ip"), "subnet %s has no cidr (it is IPv6 only)",
			     t->subnets[b->subnet].name);
		} else if (jv_get(e, "ip")) {
			if (get_ip(c, e, "ip", p, AF_INET, true, &b->ip) && b->subnet != SIZE_MAX) {
				check_in_subnet(c, &t->subnets[b->subnet], &b->ip, sub(c, p, "ip"));
				claim(c, cl, &b->ip, sub(c, p, "ip"));
			}
		} else {
			automatic[i] = v4;
		}
	}
	for (size_t i = 0; i < t->n_peers; i++) {
		struct lab_bgp_peer *b = &t->peers[i];
		if (!automatic[i] || b->subnet == SIZE_MAX)
			continue;
		const char *p = item(c, "bgpPeers", i);
		if (!pick_address(&t->subnets[b->subnet], cl, &b->ip))
			perr(c, p, "subnet %s has no free address left",
			     t->subnets[b->subnet].name);
		else
			claim(c, cl, &b->ip, sub(c, p, "ip"));
	}
	/* IPv6 on a subnet with a cidr6, as for nodes: given, derived or picked */
	for (int pass = 0; pass < 2 && l; pass++)
		for (size_t i = 0; i < t->n_peers; i++) {
			struct lab_bgp_peer *b = &t->peers[i];
			const struct jv *e = l->arr.items[i];
			if (b->subnet != SIZE_MAX && e->type == JV_OBJECT &&
			    (!jv_get(e, "ip6") && !b->ip.family) == (pass == 1))
				place_ip6(c, cl, &t->subnets[b->subnet], e, item(c, "bgpPeers", i),
					  &b->ip, &b->ip6);
		}
}

static size_t find_namespace(const struct lab_topology *t, const char *name)
{
	for (size_t i = 0; i < t->n_namespaces; i++)
		if (streq(t->namespaces[i].name, name))
			return i;
	return SIZE_MAX;
}

static void parse_namespaces(struct pctx *c, const struct jv *root, struct lab_topology *t)
{
	static const char *const fields[] = { "name", "labels", NULL };
	bool bad;
	const struct jv *l = list_of(c, root, "namespaces", "", &bad);
	if (!l)
		return;
	t->namespaces = arena_new_array(c->a, struct lab_namespace, l->arr.n);
	for (size_t i = 0; i < l->arr.n; i++) {
		const char *p = item(c, "namespaces", i);
		const struct jv *e = l->arr.items[i];
		if (!is_object(c, e, p))
			continue;
		check_fields(c, e, p, fields);
		struct lab_namespace ns = { .name = get_name(c, e, "name", p, 63) };
		if (ns.name && find_namespace(t, ns.name) != SIZE_MAX)
			perr(c, sub(c, p, "name"), "namespace \"%s\" is given twice", ns.name);
		get_labels(c, e, p, &ns.labels);
		t->namespaces[t->n_namespaces++] = ns;
	}
}

static void parse_pods(struct pctx *c, const struct jv *root, struct lab_topology *t,
		       struct claims *cl)
{
	static const char *const fields[] = { "namespace", "name",  "node",	   "labels", "ip",
					      "ports",	   "serve", "hostNetwork", NULL };
	bool bad;
	const struct jv *l = list_of(c, root, "pods", "", &bad);
	if (!l)
		return;
	t->pods = arena_new_array(c->a, struct lab_pod, l->arr.n);
	char buf[IP_STRLEN];
	for (size_t i = 0; i < l->arr.n; i++) {
		const char *p = item(c, "pods", i);
		const struct jv *e = l->arr.items[i];
		struct lab_pod *pod = &t->pods[t->n_pods++];
		pod->node = SIZE_MAX;
		if (!is_object(c, e, p))
			continue;
		check_fields(c, e, p, fields);
		pod->namespace = get_name(c, e, "namespace", p, 63);
		pod->name = get_name(c, e, "name", p, 63);
		if (pod->namespace && find_namespace(t, pod->namespace) == SIZE_MAX)
			perr(c, sub(c, p, "namespace"),
			     "unknown namespace \"%s\" (declare it under namespaces)",
			     pod->namespace);
		for (size_t j = 0; pod->name && pod->namespace && j + 1 < t->n_pods; j++)
			if (streq(t->pods[j].name, pod->name) &&
			    streq(t->pods[j].namespace, pod->namespace))
				perr(c, p, "pod %s/%s is given twice", pod->namespace, pod->name);
		const char *node = get_string(c, e, "node", p, true);
		for (size_t j = 0; node && j < t->n_nodes; j++)
			if (streq(t->nodes[j].name, node))
				pod->node = j;
		if (node && pod->node == SIZE_MAX)
			perr(c, sub(c, p, "node"), "unknown node \"%s\"", node);
		else if (node && !t->nodes[pod->node].pods)
			perr(c, sub(c, p, "node"), "node %s takes no pods (pods: false)", node);
		get_labels(c, e, p, &pod->labels);
		get_ports(c, e, "ports", p, true, &pod->ports, &pod->n_ports);
		get_ports(c, e, "serve", p, false, &pod->serve, &pod->n_serve);
		pod->host_network = get_bool(c, e, "hostNetwork", p, false);
		if (!jv_get(e, "ip"))
			continue;
		if (pod->host_network) {
			perr(c, sub(c, p, "ip"), "a hostNetwork pod has its node's address");
			continue;
		}
		/* its pool's family: IPv4 (IPv6 in an IPv6-only lab) */
		if (!get_ip(c, e, "ip", p, t->ipv4 ? AF_INET : AF_INET6, true, &pod->ip))
			continue;
		pod->has_ip = true;
		bool in_pool = false;
		for (size_t j = 0; j < t->n_pools; j++)
			in_pool |= t->pools[j].cidr.len &&
				   cidr_contains_ip(&t->pools[j].cidr, &pod->ip);
		if (!in_pool)
			perr(c, sub(c, p, "ip"), "%s is in no IP pool", ip_str(&pod->ip, buf));
		claim(c, cl, &pod->ip, sub(c, p, "ip"));
	}
}

const char *lab_ns_fabric(struct arena *a, const char *lab)
{
	return arena_printf(a, "lab-%s-fabric", lab);
}

const char *lab_ns_node(struct arena *a, const char *lab, const char *node)
{
	return arena_printf(a, "lab-%s-%s", lab, node);
}

const char *lab_ns_pod(struct arena *a, const char *lab, const char *ns, const char *pod)
{
	return arena_printf(a, "lab-%s-%s-%s", lab, ns, pod);
}

const char *lab_ns_external(struct arena *a, const char *lab, const char *host)
{
	return arena_printf(a, "lab-%s-%s", lab, host);
}

/* Every network namespace name of the lab is distinct (a pod "x/a" and a node "x-a" are not). */
static void check_ns_names(struct pctx *c, const struct lab_topology *t)
{
	size_t cap = 1 + t->n_nodes + t->n_externals + t->n_peers + t->n_pods, n = 0;
	const char **names = arena_new_array(c->a, const char *, cap);
	const char **paths = arena_new_array(c->a, const char *, cap);
	names[n] = lab_ns_fabric(c->a, t->name);
	paths[n++] = "the fabric";
	for (size_t i = 0; i < t->n_nodes; i++)
		if (t->nodes[i].name) {
			names[n] = lab_ns_node(c->a, t->name, t->nodes[i].name);
			paths[n++] = item(c, "nodes", i);
		}
	for (size_t i = 0; i < t->n_externals; i++)
		if (t->externals[i].name) {
			names[n] = lab_ns_external(c->a, t->name, t->externals[i].name);
			paths[n++] = item(c, "externalHosts", i);
		}
	for (size_t i = 0; i < t->n_peers; i++)
		if (t->peers[i].name) {
			names[n] = lab_ns_external(c->a, t->name, t->peers[i].name);
			paths[n++] = item(c, "bgpPeers", i);
		}
	for (size_t i = 0; i < t->n_pods; i++)
		if (t->pods[i].name && t->pods[i].namespace) {
			names[n] = lab_ns_pod(c->a, t->name, t->pods[i].namespace, t->pods[i].name);
			paths[n++] = item(c, "pods", i);
		}
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < i; j++)
			if (streq(names[i], names[j])) {
				perr(c, paths[i], "its network namespace %s would be that of %s",
				     names[i], paths[j]);
				break;
			}
}

/* IPv4 pools need IPv4 subnets; with IPv6 pools alone the lab is IPv6 only: what that needs. */
static void check_families(struct pctx *c, const struct lab_topology *t)
{
	for (size_t i = 0; i < t->n_nodes && t->ipv4; i++) {
		const struct lab_node *n = &t->nodes[i];
		if (n->pods && n->subnet != SIZE_MAX && !t->subnets[n->subnet].cidr.len)
			perr(c, sub(c, item(c, "subnets", n->subnet), "cidr"),
			     "is required: ipPools has an IPv4 pool, and node %s runs pods (subnet "
			     "%s)",
			     n->name, t->subnets[n->subnet].name);
	}
	/* on Kubernetes every node reaches the API server on the first subnet's gateway: over
	 * IPv4 when they all have an IPv4 address, over IPv6 when none has */
	size_t n4 = 0, n6 = 0;
	for (size_t i = 0; i < t->n_nodes; i++) {
		n4 += t->nodes[i].ip.family != 0;
		n6 += t->nodes[i].ip6.family != 0;
	}
	if (t->kubernetes && n4 && n4 < t->n_nodes)
		perr(c, "nodes",
		     "on datastore kubernetes the nodes are all IPv4 (and reach the API server "
		     "over IPv4) or all IPv6 only, not a mix: %zu of %zu have an IPv4 address",
		     n4, t->n_nodes);
	else if (t->kubernetes && !n4 && t->n_subnets && !t->subnets[0].cidr6.len)
		perr(c, "subnets[0].cidr6",
		     "is required: the nodes are IPv6 only and reach the API server on this "
		     "subnet's gateway6");
	else if (t->kubernetes && !n4 && n6 < t->n_nodes)
		perr(c, "nodes", "on datastore kubernetes every node needs an address");
	if (t->ipv6 && !t->ipv4 &&
	    (t->encap == LAB_ENCAP_IPIP || t->encap == LAB_ENCAP_IPIP_CROSS_SUBNET))
		perr(c, "encapsulation",
		     "IPIP carries IPv4 only, and the lab has no IPv4 pool (None, VXLAN or "
		     "VXLANCrossSubnet)");
	/* an external host's address of a family the pods do not have would reach nothing */
	for (size_t i = 0; i < t->n_externals; i++) {
		const struct lab_external *x = &t->externals[i];
		if (x->ip.family && !t->ipv4)
			perr(c, sub(c, item(c, "externalHosts", i), "ip"),
			     "is IPv4, and ipPools has no IPv4 pool: pods could not reach it (ip6 "
			     "gives it an IPv6 address)");
		if (x->ip6.family && !t->ipv6)
			perr(c, sub(c, item(c, "externalHosts", i), "ip6"),
			     "is IPv6, and ipPools has no IPv6 pool: pods could not reach it");
	}
}

/* An IPv6 pool makes the lab dual-stack: what that needs of the rest. */
static void check_ipv6(struct pctx *c, const struct lab_topology *t)
{
	for (size_t i = 0; i < t->n_nodes; i++) {
		const struct lab_node *n = &t->nodes[i];
		if (n->pods && n->subnet != SIZE_MAX && !t->subnets[n->subnet].cidr6.len)
			perr(c, sub(c, item(c, "subnets", n->subnet), "cidr6"),
			     "is required: ipPools has an IPv6 pool, and node %s runs pods (subnet "
			     "%s)",
			     n->name, t->subnets[n->subnet].name);
	}
}

int lab_topology_parse(struct arena *a, const char *source, const char *text, size_t len,
		       struct lab_topology **out, struct strbuf *err)
{
	static const char *const fields[] = { "name",	       "asNumber",	"nodeToNodeMesh",
					      "encapsulation", "subnets",	"ipPools",
					      "nodes",	       "externalHosts", "bgpPeers",
					      "namespaces",    "pods",		"datastore",
					      "brindleConfig", "ruleBackend",	NULL };
	struct pctx c = { .a = a, .source = source, .err = err };
	struct jv **docs;
	size_t ndocs;
	struct strbuf perr_sb = STRBUF_INIT;
	sb_init(&perr_sb);
	if (yaml_parse_all(a, text, len, &docs, &ndocs, &perr_sb) < 0) {
		sb_addf(err, "%s: %s\n", source, sb_str(&perr_sb));
		sb_free(&perr_sb);
		return -EINVAL;
	}
	sb_free(&perr_sb);
	size_t real = 0;
	const struct jv *root = NULL;
	for (size_t i = 0; i < ndocs; i++)
		if (docs[i]) {
			real++;
			root = docs[i];
		}
	if (real != 1) {
		sb_addf(err, "%s: a topology file holds exactly one document (found %zu)\n", source,
			real);
		return -EINVAL;
	}
	if (root->type != JV_OBJECT) {
		sb_addf(err, "%s: the document must be a mapping\n", source);
		return -EINVAL;
	}
	struct lab_topology *t = arena_alloc(a, sizeof(*t));
	struct claims cl = { 0 };
	check_fields(&c, root, "", fields);
	t->name = get_string(&c, root, "name", "", true);
	if (t->name && !lab_name_valid(t->name)) {
		perr(&c, "name",
		     "\"%s\" must be lower case letters, digits and '-', at most %d, starting and "
		     "ending with a letter or digit",
		     t->name, LAB_NAME_MAX);
		t->name = NULL;
	}
	int64_t as;
	if (get_int(&c, root, "asNumber", "", 1, UINT32_MAX, false, 64512, &as))
		t->as_number = (uint32_t)as;
	t->node_mesh = get_bool(&c, root, "nodeToNodeMesh", "", true);
	const char *encap = get_string(&c, root, "encapsulation", "", false);
	t->encap = LAB_ENCAP_NONE;
	if (encap) {
		size_t i = 0;
		while (i < ARRAY_SIZE(encap_names) && !streq(encap_names[i], encap))
			i++;
		if (i == ARRAY_SIZE(encap_names))
			perr(&c, "encapsulation",
			     "unknown encapsulation \"%s\" (None, VXLAN, VXLANCrossSubnet, IPIP or "
			     "IPIPCrossSubnet)",
			     encap);
		else
			t->encap = (enum lab_encap)i;
	}
	const char *rb = get_string(&c, root, "ruleBackend", "", false);
	if (rb && (streq(rb, "legacy") || streq(rb, "nft") || streq(rb, "auto")))
		t->rule_backend = streq(rb, "nft")	? "NFT"
				  : streq(rb, "legacy") ? "Legacy"
							: "Auto";
	else if (rb)
		perr(&c, "ruleBackend", "unknown rule backend \"%s\" (legacy, nft or auto)", rb);
	const char *ds = get_string(&c, root, "datastore", "", false);
	if (ds && streq(ds, "kubernetes"))
		t->kubernetes = true;
	else if (ds && !streq(ds, "etcdv3"))
		perr(&c, "datastore", "unknown datastore \"%s\" (etcdv3 or kubernetes)", ds);
	get_string_map(&c, jv_get(root, "brindleConfig"), "brindleConfig", &t->brindle_config);
	if (t->brindle_config.n && !t->kubernetes)
		perr(&c, "brindleConfig", "is for a lab with datastore: kubernetes");
	parse_subnets(&c, root, t, &cl);
	parse_pools(&c, root, t);
	parse_nodes(&c, root, t, &cl);
	parse_externals(&c, root, t, &cl);
	parse_peers(&c, root, t, &cl);
	parse_namespaces(&c, root, t);
	parse_pods(&c, root, t, &cl);
	if (t->ipv6)
		check_ipv6(&c, t);
	check_families(&c, t);
	if (t->name)
		check_ns_names(&c, t);
	free(cl.v);
	if (c.n_err)
		return -EINVAL;
	*out = t;
	return 0;
}

/* --- the datastore resources a topology implies ------------------------------------------- */

void lab_labels_json(struct strbuf *sb, const struct br_labels *labels)
{
	sb_adds(sb, "{");
	for (size_t i = 0; i < labels->n; i++) {
		sb_adds(sb, i ? ", " : "");
		json_write_string(sb, labels->v[i].key);
		sb_adds(sb, ": ");
		json_write_string(sb, labels->v[i].value);
	}
	sb_adds(sb, "}");
}

void lab_resources_yaml(const struct lab_topology *t, struct strbuf *sb)
{
	static const char *const vxlan[] = { "Never", "Always", "CrossSubnet", "Never", "Never" };
	static const char *const ipip[] = { "Never", "Never", "Never", "Always", "CrossSubnet" };
	char b1[CIDR_STRLEN], b2[IP_STRLEN];
	sb_addf(sb,
		"apiVersion: projectcalico.org/v3\nkind: BGPConfiguration\n"
		"metadata: {name: default}\nspec: {asNumber: %u, nodeToNodeMeshEnabled: %s}\n",
		t->as_number, t->node_mesh ? "true" : "false");
	for (size_t i = 0; i < t->n_pools; i++)
		sb_addf(sb,
			"---\napiVersion: projectcalico.org/v3\nkind: IPPool\n"
			"metadata: {name: pool-%zu}\nspec: {cidr: '%s', blockSize: %u, "
			"natOutgoing: "
			"%s, vxlanMode: %s, ipipMode: %s}\n",
			i, cidr_str(&t->pools[i].cidr, b1), t->pools[i].block_size,
			t->pools[i].nat_outgoing ? "true" : "false",
			vxlan[t->encap], /* VXLAN for both families (vxlan-v6.calico) */
			t->pools[i].cidr.ip.family == AF_INET6 ? "Never" : ipip[t->encap]);
	for (size_t i = 0; i < t->n_nodes; i++) {
		const struct lab_node *n = &t->nodes[i];
		sb_addf(sb,
			"---\napiVersion: projectcalico.org/v3\nkind: Node\nmetadata: {name: "
			"%s%s}\n"
			"spec: {bgp: {",
			n->name, n->rr_cluster_id ? ", labels: {route-reflector: \"true\"}" : "");
		if (n->ip.family)
			sb_addf(sb, "ipv4Address: %s/%u", ip_str(&n->ip, b2),
				t->subnets[n->subnet].cidr.len);
		if (n->ip6.family)
			sb_addf(sb, "%sipv6Address: '%s/%u'", n->ip.family ? ", " : "",
				ip_str(&n->ip6, b2), t->subnets[n->subnet].cidr6.len);
		if (n->rr_cluster_id)
			sb_addf(sb, ", routeReflectorClusterID: %s", n->rr_cluster_id);
		sb_adds(sb, "}}\n");
	}
	/* every node peers with the reflectors (docs/bgp.md), the reflectors among themselves */
	for (size_t i = 0; i < t->n_nodes; i++)
		if (t->nodes[i].rr_cluster_id) {
			sb_adds(sb, "---\napiVersion: projectcalico.org/v3\nkind: BGPPeer\n"
				    "metadata: {name: peer-with-route-reflectors}\n"
				    "spec: {nodeSelector: all(), peerSelector: route-reflector == "
				    "'true'}\n");
			break;
		}
	/* a BGPPeer per address: <name> for IPv4 (or IPv6 alone), <name>-v6 for IPv6 beside it */
	for (size_t i = 0; i < t->n_peers; i++)
		for (int f = 0; f < 2; f++) {
			const struct lab_bgp_peer *p = &t->peers[i];
			const struct br_ip *ip = f ? &p->ip6 : &p->ip;
			if (ip->family)
				sb_addf(sb,
					"---\napiVersion: projectcalico.org/v3\nkind: BGPPeer\n"
					"metadata: {name: %s%s}\nspec: {peerIP: '%s', asNumber: "
					"%u}\n",
					p->name, f && p->ip.family ? "-v6" : "", ip_str(ip, b2),
					p->as_number);
		}
	/* on Kubernetes namespaces are the API's own objects, made by the lab as an administrator
	 */
	for (size_t i = 0; i < t->n_namespaces && !t->kubernetes; i++) {
		sb_addf(sb, "---\napiVersion: v1\nkind: Namespace\nmetadata: {name: %s, labels: ",
			t->namespaces[i].name);
		lab_labels_json(sb, &t->namespaces[i].labels);
		sb_adds(sb, "}\n");
	}
}
