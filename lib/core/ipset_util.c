/*
 * ip sets, the pure part: type names, members in `ipset save` form, batches
 * of operations and their ipset-restore text, lists, and the calls that
 * dispatch to a backend. No system calls; the backends are
 * lib/ipset_kernel.c (libipset) and lib/ipset_record.c (simulated).
 */
#include "ipset_internal.h"

#include <brindle/core/arena.h>

#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/netfilter.h>
#include <linux/netfilter/ipset/ip_set.h>
#include <linux/netfilter/nfnetlink.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>

static const char *const type_names[] = {
	[IPS_HASH_NET] = "hash:net",
	[IPS_HASH_IP] = "hash:ip",
	[IPS_HASH_IP_PORT] = "hash:ip,port",
};

const char *ips_type_name(enum ips_type t)
{
	return (unsigned)t < ARRAY_SIZE(type_names) ? type_names[t] : NULL;
}

int ips_type_parse(const char *s, enum ips_type *out)
{
	for (size_t i = 0; s && i < ARRAY_SIZE(type_names); i++)
		if (strcmp(s, type_names[i]) == 0) {
			*out = (enum ips_type)i;
			return 0;
		}
	return -EINVAL;
}

bool ips_info_same_header(const struct ips_info *a, const struct ips_info *b)
{
	return a->type == b->type && a->family == b->family && ips_maxelem(a) == ips_maxelem(b);
}

int ips_name_check(const char *name)
{
	if (!name || !*name)
		return -EINVAL;
	size_t n = 0;
	for (const unsigned char *p = (const unsigned char *)name; *p; p++, n++)
		if (*p <= ' ' || *p == 0x7f)
			return -EINVAL;
	return n > IPS_NAME_MAX ? -ENAMETOOLONG : 0;
}

int ips_info_check(const struct ips_info *info)
{
	int r = ips_name_check(info->name);
	if (r < 0)
		return r;
	if (!ips_type_name(info->type) || (info->family != AF_INET && info->family != AF_INET6))
		return -EINVAL;
	return 0;
}

/* --- members ---------------------------------------------------------------------- */

static const struct {
	const char *name;
	uint8_t number;
} protocols[] = {
	{ "tcp", IPPROTO_TCP },
	{ "udp", IPPROTO_UDP },
	{ "sctp", IPPROTO_SCTP },
	{ "udplite", IPPROTO_UDPLITE },
};

/* A decimal number without sign or leading zeros, at most @max. */
static int parse_decimal(const char *s, size_t n, unsigned max, unsigned *out)
{
	if (n == 0 || n > 5 || (s[0] == '0' && n > 1))
		return -EINVAL;
	unsigned v = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	if (v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_proto(const char *s, size_t n, uint8_t *out)
{
	for (size_t i = 0; i < ARRAY_SIZE(protocols); i++)
		if (strlen(protocols[i].name) == n && memcmp(s, protocols[i].name, n) == 0) {
			*out = protocols[i].number;
			return 0;
		}
	unsigned v;
	if (parse_decimal(s, n, 255, &v) < 0)
		return -EINVAL;
	for (size_t i = 0; i < ARRAY_SIZE(protocols); i++)
		if (protocols[i].number == v) {
			*out = (uint8_t)v;
			return 0;
		}
	return -EINVAL;
}

static const char *proto_name(uint8_t number)
{
	for (size_t i = 0; i < ARRAY_SIZE(protocols); i++)
		if (protocols[i].number == number)
			return protocols[i].name;
	return "?";
}

static bool addr_is_zero(const struct br_ip *ip)
{
	for (unsigned i = 0; i < ip_bits(ip) / 8; i++)
		if (ip->a[i])
			return false;
	return true;
}

/* "ADDR" or "ADDR/LEN" of @family; a bare address is a full-length prefix. */
static int parse_addr(const char *s, size_t n, uint8_t family, struct br_cidr *out)
{
	char buf[CIDR_STRLEN];
	if (n == 0 || n >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, n);
	buf[n] = '\0';
	struct br_cidr c;
	if (cidr_parse(buf, true, &c) < 0 || c.ip.family != family)
		return -EINVAL;
	*out = c;
	return 0;
}

int ips_elem_parse(enum ips_type t, uint8_t family, const char *member, struct ips_elem *out)
{
	if (!member || (family != AF_INET && family != AF_INET6))
		return -EINVAL;
	size_t len = strnlen(member, IPS_MEMBER_MAX);
	if (len == IPS_MEMBER_MAX)
		return -EINVAL;
	struct ips_elem e = { 0 };
	struct br_cidr c;
	switch (t) {
	case IPS_HASH_NET:
		if (parse_addr(member, len, family, &c) < 0 || c.len == 0)
			return -EINVAL;
		cidr_mask(&c);
		e.ip = c.ip;
		e.cidr = c.len;
		break;
	case IPS_HASH_IP:
		if (parse_addr(member, len, family, &c) < 0 || c.len != ip_bits(&c.ip) ||
		    addr_is_zero(&c.ip))
			return -EINVAL;
		e.ip = c.ip;
		e.cidr = c.len;
		break;
	case IPS_HASH_IP_PORT: {
		const char *comma = memchr(member, ',', len);
		if (!comma || parse_addr(member, (size_t)(comma - member), family, &c) < 0 ||
		    c.len != ip_bits(&c.ip) || addr_is_zero(&c.ip))
			return -EINVAL;
		e.ip = c.ip;
		e.cidr = c.len;
		const char *p = comma + 1, *end = member + len;
		const char *colon = memchr(p, ':', (size_t)(end - p));
		e.proto = IPPROTO_TCP;
		if (colon) {
			if (parse_proto(p, (size_t)(colon - p), &e.proto) < 0)
				return -EINVAL;
			p = colon + 1;
		}
		unsigned port;
		if (parse_decimal(p, (size_t)(end - p), 65535, &port) < 0)
			return -EINVAL;
		e.port = (uint16_t)port;
		break;
	}
	default:
		return -EINVAL;
	}
	*out = e;
	return 0;
}

/* Decimal @v at @p; returns the end. */
static char *put_uint(char *p, unsigned v)
{
	char tmp[10];
	int n = 0;
	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n)
		*p++ = tmp[--n];
	return p;
}

/* inet_ntop's text, without its sprintf for IPv4 (lists format tens of thousands). */
static char *put_ip(char *p, const struct br_ip *ip)
{
	if (ip->family != AF_INET) {
		char buf[IP_STRLEN];
		size_t n = strlen(ip_str(ip, buf));
		memcpy(p, buf, n);
		return p + n;
	}
	for (int i = 0; i < 4; i++) {
		if (i)
			*p++ = '.';
		p = put_uint(p, ip->a[i]);
	}
	return p;
}

/* The canonical text of @e; @out has at least IPS_MEMBER_MAX bytes. */
static void ips_elem_format(enum ips_type t, const struct ips_elem *e, char *out)
{
	char *p = put_ip(out, &e->ip);
	if (t == IPS_HASH_NET && e->cidr < ip_bits(&e->ip)) {
		*p++ = '/';
		p = put_uint(p, e->cidr);
	} else if (t == IPS_HASH_IP_PORT) {
		const char *proto = proto_name(e->proto);
		size_t n = strlen(proto);
		*p++ = ',';
		memcpy(p, proto, n);
		p += n;
		*p++ = ':';
		p = put_uint(p, e->port);
	}
	*p = '\0';
}

int ips_member_canonical(enum ips_type t, uint8_t family, const char *member, char *out,
			 size_t size)
{
	struct ips_elem e;
	int r = ips_elem_parse(t, family, member, &e);
	if (r < 0)
		return r;
	char buf[IPS_MEMBER_MAX];
	ips_elem_format(t, &e, buf);
	size_t n = strlen(buf);
	if (n >= size)
		return -ENOSPC;
	memcpy(out, buf, n + 1);
	return 0;
}

/* --- lists ------------------------------------------------------------------------ */

/* Room for one more in an array whose capacity is implied by its count @n: 0, 8, 16, 32... */
static void *grow_pow2(void *v, size_t n, size_t elem)
{
	if (n != 0 && (n < 8 || (n & (n - 1)) != 0))
		return v;
	return xrealloc(v, (n ? n * 2 : 8) * elem);
}

struct ips_set *ips_list_push(struct ips_list *l, const struct ips_info *info)
{
	l->v = grow_pow2(l->v, l->n, sizeof(*l->v));
	struct ips_set *s = &l->v[l->n++];
	memset(s, 0, sizeof(*s));
	s->info = *info;
	return s;
}

void ips_set_push_member(struct ips_set *s, char *member)
{
	s->members = grow_pow2(s->members, s->n, sizeof(*s->members));
	s->members[s->n++] = member;
}

static int cmp_set(const void *a, const void *b)
{
	return strcmp(((const struct ips_set *)a)->info.name,
		      ((const struct ips_set *)b)->info.name);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sort sets by name and each set's members by strcmp. */
void ips_list_sort(struct ips_list *l)
{
	if (l->n > 1)
		qsort(l->v, l->n, sizeof(*l->v), cmp_set);
	for (size_t i = 0; i < l->n; i++)
		if (l->v[i].n > 1)
			qsort(l->v[i].members, l->v[i].n, sizeof(char *), cmp_str);
}

void ips_list_free(struct ips_list *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->n; i++) {
		for (size_t j = 0; j < l->v[i].n; j++)
			free(l->v[i].members[j]);
		free(l->v[i].members);
	}
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

static const char *family_name(uint8_t family)
{
	if (family == AF_INET)
		return "inet";
	return family == AF_INET6 ? "inet6" : "?";
}

/* --- batches ---------------------------------------------------------------------- */

struct ips_batch {
	struct ips_op *ops;
	size_t n, cap;
	struct arena *arena; /* names, members, infos */
	const char *last_set;
	struct strbuf desc;
};

struct ips_batch *ips_batch_new(void)
{
	struct ips_batch *b = xcalloc(1, sizeof(*b));
	b->arena = arena_new();
	sb_init(&b->desc);
	return b;
}

void ips_batch_free(struct ips_batch *b)
{
	if (!b)
		return;
	free(b->ops);
	arena_free(b->arena);
	sb_free(&b->desc);
	free(b);
}

void ips_batch_reset(struct ips_batch *b)
{
	b->n = 0;
	b->last_set = NULL;
	arena_reset(b->arena);
}

size_t ips_batch_count(const struct ips_batch *b)
{
	return b->n;
}

const struct ips_op *ips_batch_op(const struct ips_batch *b, size_t i)
{
	return i < b->n ? &b->ops[i] : NULL;
}

/* Runs of operations on one set share its name. */
static const char *set_name(struct ips_batch *b, const char *set)
{
	if (!set)
		set = "";
	if (!b->last_set || strcmp(b->last_set, set) != 0)
		b->last_set = arena_strdup(b->arena, set);
	return b->last_set;
}

static struct ips_op *push(struct ips_batch *b, enum ips_op_kind kind, const char *set)
{
	GROW(b->ops, b->cap, b->n + 1);
	struct ips_op *op = &b->ops[b->n++];
	*op = (struct ips_op){ .kind = kind, .set = set_name(b, set) };
	return op;
}

void ips_batch_create(struct ips_batch *b, const struct ips_info *info)
{
	struct ips_info *copy = arena_memdup(b->arena, info, sizeof(*info));
	copy->name[IPS_NAME_MAX] = '\0';
	push(b, IPS_OP_CREATE, copy->name)->info = copy;
}

void ips_batch_add(struct ips_batch *b, const char *set, const char *member)
{
	push(b, IPS_OP_ADD, set)->arg = arena_strdup(b->arena, member ? member : "");
}

void ips_batch_del(struct ips_batch *b, const char *set, const char *member)
{
	push(b, IPS_OP_DEL, set)->arg = arena_strdup(b->arena, member ? member : "");
}

void ips_batch_flush(struct ips_batch *b, const char *set)
{
	push(b, IPS_OP_FLUSH, set);
}

void ips_batch_swap(struct ips_batch *b, const char *set, const char *other)
{
	push(b, IPS_OP_SWAP, set)->arg = arena_strdup(b->arena, other ? other : "");
}

void ips_batch_destroy(struct ips_batch *b, const char *set)
{
	push(b, IPS_OP_DESTROY, set);
}

const char *ips_batch_describe(struct ips_batch *b, size_t i)
{
	sb_reset(&b->desc);
	if (i >= b->n)
		return "";
	const struct ips_op *op = &b->ops[i];
	switch (op->kind) {
	case IPS_OP_CREATE: {
		const char *type = ips_type_name(op->info->type);
		sb_addf(&b->desc, "create %s %s family %s maxelem %u", op->set, type ? type : "?",
			family_name(op->info->family), ips_maxelem(op->info));
		break;
	}
	case IPS_OP_ADD:
		sb_addf(&b->desc, "add %s %s", op->set, op->arg);
		break;
	case IPS_OP_DEL:
		sb_addf(&b->desc, "del %s %s", op->set, op->arg);
		break;
	case IPS_OP_FLUSH:
		sb_addf(&b->desc, "flush %s", op->set);
		break;
	case IPS_OP_SWAP:
		sb_addf(&b->desc, "swap %s %s", op->set, op->arg);
		break;
	case IPS_OP_DESTROY:
		sb_addf(&b->desc, "destroy %s", op->set);
		break;
	}
	return sb_str(&b->desc);
}

/* --- a set's header, as IPSET_CMD_LIST with IPSET_FLAG_LIST_HEADER answers ------------ */

static int header_attr_cb(const struct nlattr *a, void *data)
{
	const struct nlattr **tb = data;
	uint16_t type = mnl_attr_get_type(a);
	if (type <= IPSET_ATTR_CREATE_MAX)
		tb[type] = a;
	return MNL_CB_OK;
}

int ips_parse_header_msg(const struct nlmsghdr *h, const char *prefix, struct ips_list *out)
{
	const struct nlattr *tb[IPSET_ATTR_CREATE_MAX + 1] = { 0 };
	const struct nlattr *d[IPSET_ATTR_CREATE_MAX + 1] = { 0 };
	if (h->nlmsg_len < mnl_nlmsg_size(sizeof(struct nfgenmsg)) ||
	    mnl_attr_parse(h, sizeof(struct nfgenmsg), header_attr_cb, tb) < 0 ||
	    !tb[IPSET_ATTR_SETNAME] ||
	    mnl_attr_validate(tb[IPSET_ATTR_SETNAME], MNL_TYPE_NUL_STRING) < 0)
		return -EINVAL;
	const char *name = mnl_attr_get_str(tb[IPSET_ATTR_SETNAME]);
	if (!str_has_prefix(name, prefix) || strlen(name) > IPS_NAME_MAX)
		return 0;
	struct ips_info info = { .type = IPS_OTHER };
	snprintf(info.name, sizeof(info.name), "%s", name);
	if (tb[IPSET_ATTR_TYPENAME] &&
	    mnl_attr_validate(tb[IPSET_ATTR_TYPENAME], MNL_TYPE_NUL_STRING) == 0 &&
	    ips_type_parse(mnl_attr_get_str(tb[IPSET_ATTR_TYPENAME]), &info.type) < 0)
		info.type = IPS_OTHER;
	if (tb[IPSET_ATTR_FAMILY] && mnl_attr_validate(tb[IPSET_ATTR_FAMILY], MNL_TYPE_U8) == 0) {
		uint8_t f = mnl_attr_get_u8(tb[IPSET_ATTR_FAMILY]);
		info.family = f == NFPROTO_IPV4 ? AF_INET : f == NFPROTO_IPV6 ? AF_INET6 : 0;
	}
	size_t entries = SIZE_MAX; /* unknown until the kernel says (it does since Linux 4.15) */
	if (tb[IPSET_ATTR_DATA] && mnl_attr_validate(tb[IPSET_ATTR_DATA], MNL_TYPE_NESTED) == 0 &&
	    mnl_attr_parse_nested(tb[IPSET_ATTR_DATA], header_attr_cb, d) >= 0) {
		if (d[IPSET_ATTR_MAXELEM] &&
		    mnl_attr_validate(d[IPSET_ATTR_MAXELEM], MNL_TYPE_U32) == 0)
			info.maxelem = ntohl(mnl_attr_get_u32(d[IPSET_ATTR_MAXELEM]));
		if (d[IPSET_ATTR_ELEMENTS] &&
		    mnl_attr_validate(d[IPSET_ATTR_ELEMENTS], MNL_TYPE_U32) == 0)
			entries = ntohl(mnl_attr_get_u32(d[IPSET_ATTR_ELEMENTS]));
	}
	ips_list_push(out, &info)->entries = entries;
	return 1;
}

int ips_header_msg_cb(const struct nlmsghdr *h, void *data)
{
	const struct ips_header_ctx *c = data;
	/* A message without a set's name (the kernel sends none) is skipped like another set's. */
	int r = ips_parse_header_msg(h, c->prefix, c->out);
	(void)r;
	return MNL_CB_OK;
}
