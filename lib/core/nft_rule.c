/*
 * Rule text -> nf_tables expressions (see <brindle/core/nft_rule.h>): the
 * text is parsed by ipt_rule_parse into the kernel's xtables entry, and the
 * entry is walked here, match by match, into expressions. Pure.
 */
#include "ipt_rule_internal.h"

#include <brindle/core/nft_rule.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter_ipv4/ip_tables.h>

/* ICMP codes (netinet/ip_icmp.h would clash with the kernel headers). */
#define ICMP_DEST_UNREACH 3

struct tx {
	int af;
	struct nft_rule_ir *r;
	struct strbuf *err;
	int rc;
};

static void bad(struct tx *t, const char *fmt, ...) printf_like(2, 3);
static void bad(struct tx *t, const char *fmt, ...)
{
	if (t->rc)
		return;
	va_list ap;
	va_start(ap, fmt);
	sb_vaddf(t->err, fmt, ap);
	va_end(ap);
	t->rc = -EINVAL;
}

static struct nftx *add(struct tx *t, enum nftx_kind kind, uint8_t reg)
{
	if (t->r->n == NFT_RULE_MAX_EXPRS) {
		bad(t, "more than %d nftables expressions", NFT_RULE_MAX_EXPRS);
		static struct nftx sink;
		return memset(&sink, 0, sizeof(sink));
	}
	struct nftx *x = &t->r->x[t->r->n++];
	memset(x, 0, sizeof(*x));
	x->kind = (uint8_t)kind;
	x->reg = reg;
	return x;
}

static void load_payload(struct tx *t, uint8_t reg, uint32_t base, uint32_t off, uint8_t len)
{
	struct nftx *x = add(t, NFTX_PAYLOAD, reg);
	x->a = base;
	x->b = off;
	x->len = len;
}

static void load_meta(struct tx *t, uint8_t reg, uint32_t key, uint8_t len)
{
	struct nftx *x = add(t, NFTX_META, reg);
	x->a = key;
	x->len = len;
}

static void cmp(struct tx *t, uint8_t reg, bool neq, const void *data, uint8_t len)
{
	struct nftx *x = add(t, NFTX_CMP, reg);
	x->op = neq ? NFT_CMP_NEQ : NFT_CMP_EQ;
	x->len = len;
	memcpy(x->d1, data, len);
}

static void bitwise(struct tx *t, uint8_t reg, const void *mask, const void * xor, uint8_t len)
{
	struct nftx *x = add(t, NFTX_BITWISE, reg);
	x->len = len;
	memcpy(x->d1, mask, len);
	memcpy(x->d2, xor, len);
}

static void u32_host(uint8_t *out, uint32_t v)
{
	memcpy(out, &v, 4);
}

/* --- the ip part -------------------------------------------------------------------- */

/*
 * Where the source and destination addresses are in the network header: IPv4's after 12 bytes
 * (version to checksum); IPv6's after 8 (version, class and flow label, payload length, next
 * header, hop limit), the destination 16 bytes further.
 */
static uint32_t saddr_off(int af)
{
	return af == AF_INET6 ? 8 : 12;
}

static uint32_t daddr_off(int af)
{
	return af == AF_INET6 ? 24 : 16;
}

/* An address match: @a and its mask @m, @len bytes each (network order). */
static void addr(struct tx *t, uint32_t off, const uint8_t *a, const uint8_t *m, uint8_t len,
		 bool inv)
{
	static const uint8_t zero[16],
		ones[16] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
			     0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	if (memcmp(m, zero, len) == 0)
		return;
	load_payload(t, NFT_REG_1, NFT_PAYLOAD_NETWORK_HEADER, off, len);
	if (memcmp(m, ones, len) != 0)
		bitwise(t, NFT_REG_1, m, zero, len);
	uint8_t v[16];
	for (uint8_t i = 0; i < len; i++)
		v[i] = a[i] & m[i];
	cmp(t, NFT_REG_1, inv, v, len);
}

static void iface(struct tx *t, uint32_t key, const char *name, const unsigned char *mask, bool inv)
{
	if (!name[0])
		return;
	/* The mask covers the name and its NUL, or only the part before a '+'. */
	size_t n = 0;
	while (n < IFNAMSIZ && mask[n])
		n++;
	char buf[IFNAMSIZ] = { 0 };
	memcpy(buf, name, n < strlen(name) ? n : strlen(name));
	bool wildcard = n <= strlen(name);
	load_meta(t, NFT_REG_1, key, IFNAMSIZ);
	cmp(t, NFT_REG_1, inv, buf, wildcard ? (uint8_t)n : IFNAMSIZ);
}

static void proto(struct tx *t, uint16_t proto, bool inv)
{
	if (proto) {
		uint8_t p = (uint8_t)proto;
		load_meta(t, NFT_REG_1, NFT_META_L4PROTO, 1);
		cmp(t, NFT_REG_1, inv, &p, 1);
	}
}

static void ip_part(struct tx *t, const struct ipt_ip *ip)
{
	addr(t, saddr_off(AF_INET), (const void *)&ip->src, (const void *)&ip->smsk, 4,
	     ip->invflags & IPT_INV_SRCIP);
	addr(t, daddr_off(AF_INET), (const void *)&ip->dst, (const void *)&ip->dmsk, 4,
	     ip->invflags & IPT_INV_DSTIP);
	iface(t, NFT_META_IIFNAME, ip->iniface, ip->iniface_mask, ip->invflags & IPT_INV_VIA_IN);
	iface(t, NFT_META_OIFNAME, ip->outiface, ip->outiface_mask, ip->invflags & IPT_INV_VIA_OUT);
	proto(t, ip->proto, ip->invflags & XT_INV_PROTO);
}

static void ip6_part(struct tx *t, const struct ip6t_ip6 *ip)
{
	addr(t, saddr_off(AF_INET6), ip->src.s6_addr, ip->smsk.s6_addr, 16,
	     ip->invflags & IP6T_INV_SRCIP);
	addr(t, daddr_off(AF_INET6), ip->dst.s6_addr, ip->dmsk.s6_addr, 16,
	     ip->invflags & IP6T_INV_DSTIP);
	iface(t, NFT_META_IIFNAME, ip->iniface, ip->iniface_mask, ip->invflags & IP6T_INV_VIA_IN);
	iface(t, NFT_META_OIFNAME, ip->outiface, ip->outiface_mask,
	      ip->invflags & IP6T_INV_VIA_OUT);
	if (ip->flags & IP6T_F_PROTO)
		proto(t, ip->proto, ip->invflags & IP6T_INV_PROTO);
}

/* --- matches ------------------------------------------------------------------------ */

static void comment(struct tx *t, const char *text)
{
	struct nft_rule_ir *r = t->r;
	size_t have = strlen(r->comment);
	snprintf(r->comment + have, sizeof(r->comment) - have, "%s%s", have ? "; " : "", text);
	if (!r->id[0])
		id_from_comment(text, strlen(text), r->id);
}

static void mark(struct tx *t, const struct xt_mark_mtinfo1 *m)
{
	load_meta(t, NFT_REG_1, NFT_META_MARK, 4);
	uint8_t v[4], mask[4], zero[4] = { 0 };
	if (m->mask != 0xffffffffu) {
		u32_host(mask, m->mask);
		bitwise(t, NFT_REG_1, mask, zero, 4);
	}
	u32_host(v, m->mark & m->mask);
	cmp(t, NFT_REG_1, m->invert, v, 4);
}

static void ctstate(struct tx *t, const struct xt_conntrack_mtinfo3 *c)
{
	if (c->match_flags != XT_CONNTRACK_STATE || (c->invert_flags & ~XT_CONNTRACK_STATE)) {
		bad(t, "conntrack: only --ctstate");
		return;
	}
	if (c->state_mask & (XT_CONNTRACK_STATE_SNAT | XT_CONNTRACK_STATE_DNAT)) {
		bad(t, "conntrack: the SNAT and DNAT states are ct status in nftables, "
		       "which the nft backend does not write");
		return;
	}
	/* nftables' ct state bits are xtables' (invalid 1, the ctinfo bits, untracked 64). */
	uint8_t mask[4], zero[4] = { 0 };
	u32_host(mask, c->state_mask);
	struct nftx *x = add(t, NFTX_CT, NFT_REG_1);
	x->a = NFT_CT_STATE;
	x->len = 4;
	bitwise(t, NFT_REG_1, mask, zero, 4);
	cmp(t, NFT_REG_1, !(c->invert_flags & XT_CONNTRACK_STATE), zero, 4);
}

static void set_match(struct tx *t, const struct xt_set_info_match_v4 *s,
		      const struct ipt_set_table *names)
{
	const struct xt_set_info *ms = &s->match_set;
	if (ms->dim < 1 || ms->dim > 2 || ms->index >= names->n) {
		bad(t, "set: one or two dimensions");
		return;
	}
	bool src0 = ms->flags & (1 << 1);
	uint32_t off = src0 ? saddr_off(t->af) : daddr_off(t->af);
	uint8_t alen = (uint8_t)nft_addr_len(t->af);
	struct nftx *x;
	if (ms->dim == 1) {
		load_payload(t, NFT_REG_1, NFT_PAYLOAD_NETWORK_HEADER, off, alen);
		x = add(t, NFTX_LOOKUP, NFT_REG_1);
		x->len = (uint8_t)nft_set_key_len(t->af, NFT_SET_ADDRS);
	} else {
		/* address . protocol . port in consecutive 32-bit registers (the address takes
		 * four for IPv6), each item padded to a register */
		bool src1 = ms->flags & (1 << 2);
		uint8_t next = (uint8_t)(NFT_REG32_00 + alen / 4);
		load_payload(t, NFT_REG32_00, NFT_PAYLOAD_NETWORK_HEADER, off, alen);
		load_meta(t, next, NFT_META_L4PROTO, 1);
		load_payload(t, (uint8_t)(next + 1), NFT_PAYLOAD_TRANSPORT_HEADER, src1 ? 0 : 2, 2);
		x = add(t, NFTX_LOOKUP, NFT_REG32_00);
		x->len = (uint8_t)nft_set_key_len(t->af, NFT_SET_PORTS);
	}
	x->a = (ms->flags & IPSET_INV_MATCH) ? NFT_LOOKUP_F_INV : 0;
	nft_set_name(names->names[ms->index], x->str);
}

static void multiport(struct tx *t, const struct xt_multiport_v1 *mp)
{
	if (mp->flags > XT_MULTIPORT_DESTINATION || mp->count == 0 || mp->count > XT_MULTI_PORTS) {
		bad(t, "multiport: --sports or --dports, 1-15 ports");
		return;
	}
	struct nft_anon_set set = { .n = 0 };
	for (unsigned i = 0; i < mp->count; i++) {
		set.lo[set.n] = mp->ports[i];
		set.hi[set.n] = mp->pflags[i] && i + 1 < mp->count ? mp->ports[++i] : mp->ports[i];
		set.n++;
	}
	uint32_t off = mp->flags == XT_MULTIPORT_SOURCE ? 0 : 2;
	load_payload(t, NFT_REG_1, NFT_PAYLOAD_TRANSPORT_HEADER, off, 2);
	if (set.n == 1 && set.lo[0] == set.hi[0]) {
		uint16_t be = htons(set.lo[0]);
		cmp(t, NFT_REG_1, mp->invert, &be, 2);
	} else if (set.n == 1) {
		struct nftx *x = add(t, NFTX_RANGE, NFT_REG_1);
		x->op = mp->invert ? NFT_RANGE_NEQ : NFT_RANGE_EQ;
		x->len = 2;
		uint16_t lo = htons(set.lo[0]), hi = htons(set.hi[0]);
		memcpy(x->d1, &lo, 2);
		memcpy(x->d2, &hi, 2);
	} else {
		if (t->r->has_anon) {
			bad(t, "multiport: one list per rule");
			return;
		}
		t->r->anon = set;
		t->r->has_anon = true;
		struct nftx *x = add(t, NFTX_LOOKUP, NFT_REG_1);
		x->len = 2;
		x->a = mp->invert ? NFT_LOOKUP_F_INV : 0;
	}
}

static void icmp(struct tx *t, const struct ipt_icmp *ic)
{
	if (ic->type == 0xff)
		return; /* any type: -p icmp says it all */
	bool any_code = ic->code[0] == 0 && ic->code[1] == 0xff;
	if (!any_code && ic->code[0] != ic->code[1]) {
		bad(t, "icmp: a code range");
		return;
	}
	uint8_t v[2] = { ic->type, ic->code[0] };
	uint8_t len = any_code ? 1 : 2;
	load_payload(t, NFT_REG_1, NFT_PAYLOAD_TRANSPORT_HEADER, 0, len);
	cmp(t, NFT_REG_1, ic->invflags & IPT_ICMP_INV, v, len);
}

static void addrtype(struct tx *t, const struct xt_addrtype_info_v1 *a)
{
	for (int side = 0; side < 2; side++) {
		uint16_t types = side == 0 ? a->source : a->dest;
		if (!types)
			continue;
		if (types & (types - 1)) {
			bad(t, "addrtype: one type per side");
			return;
		}
		uint32_t rtn = 0;
		while (!(types & (1u << rtn)))
			rtn++;
		struct nftx *x = add(t, NFTX_FIB, NFT_REG_1);
		x->a = side == 0 ? NFTA_FIB_F_SADDR : NFTA_FIB_F_DADDR;
		if (a->flags & XT_ADDRTYPE_LIMIT_IFACE_IN)
			x->a |= NFTA_FIB_F_IIF;
		if (a->flags & XT_ADDRTYPE_LIMIT_IFACE_OUT)
			x->a |= NFTA_FIB_F_OIF;
		x->b = NFT_FIB_RESULT_ADDRTYPE;
		x->len = 4;
		uint8_t v[4];
		u32_host(v, rtn);
		bool inv = a->flags &
			   (side == 0 ? XT_ADDRTYPE_INVERT_SOURCE : XT_ADDRTYPE_INVERT_DEST);
		cmp(t, NFT_REG_1, inv, v, 4);
	}
}

static void limit(struct tx *t, const struct xt_rateinfo *l)
{
	/* xtables' avg is the interval between packets in 1/10000 s (XT_LIMIT_SCALE) */
	if (l->avg == 0 || XT_LIMIT_SCALE % l->avg) {
		bad(t, "limit: a rate that is not a whole number a second");
		return;
	}
	struct nftx *x = add(t, NFTX_LIMIT, 0);
	x->a = XT_LIMIT_SCALE / l->avg;
	x->b = 1;
	x->c = l->burst;
}

static void match(struct tx *t, const struct xt_entry_match *m, const struct ipt_set_table *names)
{
	const char *name = m->u.user.name;
	const void *d = m->data;
	if (strcmp(name, "comment") == 0) {
		const struct xt_comment_info *c = d;
		char text[XT_MAX_COMMENT_LEN];
		snprintf(text, sizeof(text), "%.*s", XT_MAX_COMMENT_LEN - 1, c->comment);
		comment(t, text);
	} else if (strcmp(name, "mark") == 0) {
		mark(t, d);
	} else if (strcmp(name, "conntrack") == 0) {
		ctstate(t, d);
	} else if (strcmp(name, "set") == 0) {
		set_match(t, d, names);
	} else if (strcmp(name, "multiport") == 0) {
		multiport(t, d);
	} else if (strcmp(name, t->af == AF_INET6 ? "icmp6" : "icmp") == 0) {
		/* struct ip6t_icmp is struct ipt_icmp (type, code range, the same negation bit) */
		icmp(t, d);
	} else if (strcmp(name, "addrtype") == 0) {
		addrtype(t, d);
	} else if (strcmp(name, "limit") == 0) {
		limit(t, d);
	} else {
		bad(t, "match %s has no nftables translation", name);
	}
}

/* --- targets ------------------------------------------------------------------------ */

static void verdict(struct tx *t, int32_t v, const char *chain)
{
	struct nftx *x = add(t, NFTX_IMM, 0);
	x->verdict = v;
	if (chain)
		snprintf(x->str, sizeof(x->str), "%s", chain);
}

/*
 * REJECT (either family's, whose info is one number): a TCP reset, or the ICMP (ICMPv6)
 * destination unreachable of the code ipt_rule_internal.h's table gives.
 */
static void reject(struct tx *t, const struct ipt_reject_info *rj)
{
	size_t n;
	const struct reject_with *w = reject_table(t->af, &n);
	for (size_t i = 0; i < n; i++) {
		if (w[i].with != (int)rj->with)
			continue;
		struct nftx *x = add(t, NFTX_REJECT, 0);
		x->a = w[i].icmp_code < 0 ? NFT_REJECT_TCP_RST : NFT_REJECT_ICMP_UNREACH;
		x->b = w[i].icmp_code < 0 ? 0 : (uint32_t)w[i].icmp_code;
		return;
	}
	bad(t, "REJECT: --reject-with %u has no nftables translation", rj->with);
}

static void target(struct tx *t, const struct xt_entry_target *tg, bool go)
{
	const char *name = tg->u.user.name;
	const void *d = tg->data;
	if (strcmp(name, "ACCEPT") == 0) {
		verdict(t, NF_ACCEPT, NULL);
	} else if (strcmp(name, "DROP") == 0) {
		verdict(t, NF_DROP, NULL);
	} else if (strcmp(name, "RETURN") == 0) {
		verdict(t, NFT_RETURN, NULL);
	} else if (strcmp(name, "MARK") == 0) {
		const struct xt_mark_tginfo2 *k = d;
		uint8_t mask[4], xor[4];
		u32_host(mask, ~k->mask);
		u32_host(xor, k->mark);
		load_meta(t, NFT_REG_1, NFT_META_MARK, 4);
		bitwise(t, NFT_REG_1, mask, xor, 4);
		struct nftx *x = add(t, NFTX_META_SET, NFT_REG_1);
		x->a = NFT_META_MARK;
		x->len = 4;
	} else if (strcmp(name, "MASQUERADE") == 0) {
		struct nftx *x = add(t, NFTX_MASQ, 0);
		if (t->af == AF_INET6) {
			const struct nf_nat_range *m = d;
			x->a = m->flags & NF_NAT_RANGE_PROTO_RANDOM_FULLY;
		} else {
			const struct nf_nat_ipv4_multi_range_compat *m = d;
			x->a = m->range[0].flags & NF_NAT_RANGE_PROTO_RANDOM_FULLY;
		}
	} else if (strcmp(name, "NFLOG") == 0) {
		const struct xt_nflog_info *n = d;
		struct nftx *x = add(t, NFTX_LOG, 0);
		x->log_group = true;
		x->a = n->group;
		x->b = n->len;
		x->c = n->threshold;
		snprintf(x->str, sizeof(x->str), "%s", n->prefix);
	} else if (strcmp(name, "LOG") == 0) {
		const struct xt_log_info *l = d;
		struct nftx *x = add(t, NFTX_LOG, 0);
		x->a = l->level;
		snprintf(x->str, sizeof(x->str), "%s", l->prefix);
	} else if (strcmp(name, "REJECT") == 0) {
		/* struct ip6t_reject_info is struct ipt_reject_info (one number) */
		reject(t, d);
	} else {
		/* a chain: a jump, or a goto (-g) */
		verdict(t, go ? NFT_GOTO : NFT_JUMP, name);
	}
}

int nft_rule_from_text(int af, const char *text, struct nft_rule_ir *out, struct strbuf *err)
{
	memset(out, 0, sizeof(*out));
	if (af != AF_INET && af != AF_INET6) {
		sb_addf(err, "address family %d: neither IPv4 nor IPv6", af);
		return -EINVAL;
	}
	struct ipt_set_table names;
	ipt_set_table_init(&names);
	void *entry = NULL;
	size_t len;
	int r = ipt_rule_parse(af, text, &names.sets, &entry, &len, err);
	if (r < 0) {
		ipt_set_table_free(&names);
		return r;
	}
	struct tx t = { .af = af, .r = out, .err = err };
	size_t first, target_off;
	bool go;
	if (af == AF_INET6) {
		const struct ip6t_entry *e = entry;
		ip6_part(&t, &e->ipv6);
		first = sizeof(*e);
		target_off = e->target_offset;
		go = e->ipv6.flags & IP6T_F_GOTO;
	} else {
		const struct ipt_entry *e = entry;
		ip_part(&t, &e->ip);
		first = sizeof(*e);
		target_off = e->target_offset;
		go = e->ip.flags & IPT_F_GOTO;
	}
	for (size_t off = first; off < target_off && !t.rc;) {
		const struct xt_entry_match *m = (const void *)((const char *)entry + off);
		match(&t, m, &names);
		off += m->u.match_size;
	}
	if (!t.rc) {
		add(&t, NFTX_COUNTER, 0);
		target(&t, (const void *)((const char *)entry + target_off), go);
	}
	free(entry);
	ipt_set_table_free(&names);
	if (t.rc)
		memset(out, 0, sizeof(*out));
	return t.rc;
}

void nft_rule_dispatch(struct nft_rule_ir *out, bool oif, const char *map)
{
	memset(out, 0, sizeof(*out));
	struct strbuf err = STRBUF_INIT;
	struct tx t = { .af = AF_INET, .r = out, .err = &err };
	const char *id = oif ? NFT_DISPATCH_OIF_ID : NFT_DISPATCH_IIF_ID;
	comment(&t, id);
	add(&t, NFTX_COUNTER, 0);
	load_meta(&t, NFT_REG_1, oif ? NFT_META_OIFNAME : NFT_META_IIFNAME, IFNAMSIZ);
	struct nftx *x = add(&t, NFTX_LOOKUP, NFT_REG_1);
	x->len = IFNAMSIZ;
	x->b = 1; /* the verdict register: a verdict map */
	snprintf(x->str, sizeof(x->str), "%s", map);
	sb_free(&err);
}

/* --- the debug form ------------------------------------------------------------------------ */

/* As nft --debug=netlink and libnftnl print expressions: "[ cmp eq reg 1 0x0000000a ]". */
static void put_reg(struct strbuf *out, uint8_t reg)
{
	sb_addf(out, "reg %u", reg);
}

static void put_data(struct strbuf *out, const uint8_t *d, uint8_t len)
{
	for (uint8_t i = 0; i < len; i += 4) {
		uint32_t w = 0;
		memcpy(&w, d + i, len - i < 4 ? (size_t)(len - i) : 4);
		sb_addf(out, " 0x%08x", w);
	}
}

static const char *cmp_op(uint8_t op)
{
	static const char *const ops[] = { "eq", "neq", "lt", "lte", "gt", "gte" };
	return op < ARRAY_SIZE(ops) ? ops[op] : "?";
}

static const char *meta_key(uint32_t key)
{
	switch (key) {
	case NFT_META_MARK:
		return "mark";
	case NFT_META_IIFNAME:
		return "iifname";
	case NFT_META_OIFNAME:
		return "oifname";
	case NFT_META_L4PROTO:
		return "l4proto";
	}
	return "?";
}

static const char *verdict_name(int32_t v)
{
	switch (v) {
	case NF_ACCEPT:
		return "accept";
	case NF_DROP:
		return "drop";
	case NFT_RETURN:
		return "return";
	case NFT_JUMP:
		return "jump";
	case NFT_GOTO:
		return "goto";
	}
	return "?";
}

void nft_rule_format(const struct nft_rule_ir *r, struct strbuf *out)
{
	for (size_t i = 0; i < r->n; i++) {
		const struct nftx *x = &r->x[i];
		sb_adds(out, i ? " [ " : "[ ");
		switch (x->kind) {
		case NFTX_PAYLOAD:
			sb_addf(out, "payload load %ub @ %s header + %u => ", x->len,
				x->a == NFT_PAYLOAD_NETWORK_HEADER ? "network" : "transport", x->b);
			put_reg(out, x->reg);
			break;
		case NFTX_META:
			sb_addf(out, "meta load %s => ", meta_key(x->a));
			put_reg(out, x->reg);
			break;
		case NFTX_META_SET:
			sb_addf(out, "meta set %s with ", meta_key(x->a));
			put_reg(out, x->reg);
			break;
		case NFTX_CT:
			sb_adds(out, "ct load state => ");
			put_reg(out, x->reg);
			break;
		case NFTX_FIB:
			sb_addf(out, "fib %s%s%s type => ",
				x->a & NFTA_FIB_F_SADDR ? "saddr" : "daddr",
				x->a & NFTA_FIB_F_IIF ? " . iif" : "",
				x->a & NFTA_FIB_F_OIF ? " . oif" : "");
			put_reg(out, x->reg);
			break;
		case NFTX_CMP:
			sb_addf(out, "cmp %s ", cmp_op(x->op));
			put_reg(out, x->reg);
			put_data(out, x->d1, x->len);
			break;
		case NFTX_BITWISE:
			sb_adds(out, "bitwise ");
			put_reg(out, x->reg);
			sb_adds(out, " = ( ");
			put_reg(out, x->reg);
			sb_adds(out, " &");
			put_data(out, x->d1, x->len);
			sb_adds(out, " ) ^");
			put_data(out, x->d2, x->len);
			break;
		case NFTX_RANGE:
			sb_addf(out, "range %s ", x->op == NFT_RANGE_EQ ? "eq" : "neq");
			put_reg(out, x->reg);
			put_data(out, x->d1, x->len);
			put_data(out, x->d2, x->len);
			break;
		case NFTX_LOOKUP:
			sb_adds(out, "lookup ");
			put_reg(out, x->reg);
			sb_addf(out, " set %s", x->str[0] ? x->str : "(anonymous)");
			if (x->b)
				sb_adds(out, " dreg 0");
			if (x->a & NFT_LOOKUP_F_INV)
				sb_adds(out, " 0x1");
			break;
		case NFTX_IMM:
			sb_addf(out, "immediate reg 0 %s", verdict_name(x->verdict));
			if (x->str[0])
				sb_addf(out, " -> %s", x->str);
			break;
		case NFTX_LOG:
			if (x->log_group)
				sb_addf(out, "log prefix %s group %u snaplen %u qthreshold %u",
					x->str, x->a, x->b, x->c);
			else
				sb_addf(out, "log prefix %s level %u", x->str, x->a);
			break;
		case NFTX_LIMIT:
			sb_addf(out, "limit rate %u/second burst %u type packets", x->a, x->c);
			break;
		case NFTX_MASQ:
			sb_addf(out, "masq%s", x->a ? " flags 0x10" : "");
			break;
		case NFTX_REJECT:
			sb_addf(out, "reject type %u code %u", x->a, x->b);
			break;
		case NFTX_COUNTER:
			sb_adds(out, "counter");
			break;
		}
		sb_adds(out, " ]");
	}
}

/* --- set elements ------------------------------------------------------------------------ */

void nft_set_name(const char *ipset, char *out)
{
	size_t i = 0;
	for (; ipset[i] && i < IPT_SET_NAME_MAX; i++)
		out[i] = ipset[i] == ':' ? '_' : ipset[i];
	out[i] = '\0';
}

int nft_elem_cmp(const struct nft_elem *a, const struct nft_elem *b)
{
	int c = memcmp(a->lo, b->lo, sizeof(a->lo));
	if (!c)
		c = memcmp(a->hi, b->hi, sizeof(a->hi));
	if (c)
		return c < 0 ? -1 : 1;
	if (a->proto != b->proto)
		return a->proto < b->proto ? -1 : 1;
	return a->port < b->port ? -1 : a->port > b->port;
}

static int cmp_elems(const void *a, const void *b)
{
	return nft_elem_cmp(a, b);
}

/* "10.0.0.0/24" or "10.0.0.1" ("fd00::/64", "fd00::1" for AF_INET6) into [lo, hi]. */
static bool parse_net(int af, const char *s, size_t len, struct nft_elem *e)
{
	char buf[INET6_ADDRSTRLEN + 4];
	if (len >= sizeof(buf))
		return false;
	memcpy(buf, s, len);
	buf[len] = '\0';
	unsigned alen = nft_addr_len(af), prefix = alen * 8;
	char *slash = strchr(buf, '/');
	if (slash) {
		char *end;
		unsigned long v = strtoul(slash + 1, &end, 10);
		if (*end || end == slash + 1 || slash[1] == '-' || v > alen * 8)
			return false;
		prefix = (unsigned)v;
		*slash = '\0';
	}
	uint8_t a[16] = { 0 };
	if (inet_pton(af, buf, a) != 1)
		return false;
	for (unsigned i = 0; i < alen; i++) {
		unsigned bits = prefix > i * 8 ? prefix - i * 8 : 0;
		uint8_t mask = bits >= 8 ? 0xff : (uint8_t)(0xff << (8 - bits));
		e->lo[i] = a[i] & mask;
		e->hi[i] = e->lo[i] | (uint8_t)~mask;
	}
	return true;
}

/* "10.0.0.1,tcp:80" ("fd00::1,tcp:80") */
static bool parse_port_member(int af, const char *s, struct nft_elem *e)
{
	const char *comma = strchr(s, ',');
	if (!comma || !parse_net(af, s, (size_t)(comma - s), e) ||
	    memcmp(e->lo, e->hi, sizeof(e->lo)) != 0)
		return false;
	const char *colon = strchr(comma + 1, ':');
	if (!colon)
		return false;
	size_t pl = (size_t)(colon - comma - 1);
	static const struct {
		const char *name;
		uint8_t num;
	} protos[] = { { "tcp", 6 }, { "udp", 17 }, { "sctp", 132 }, { "udplite", 136 } };
	e->proto = 0;
	for (size_t i = 0; i < ARRAY_SIZE(protos); i++)
		if (strlen(protos[i].name) == pl && strncmp(comma + 1, protos[i].name, pl) == 0)
			e->proto = protos[i].num;
	char *end;
	unsigned long port = strtoul(colon + 1, &end, 10);
	if (!e->proto || *end || end == colon + 1 || colon[1] == '-' || port > 65535)
		return false;
	e->port = (uint16_t)port;
	memset(e->hi, 0, sizeof(e->hi));
	return true;
}

bool nft_elem_from_member(int af, enum nft_set_kind kind, const char *member, struct nft_elem *out)
{
	memset(out, 0, sizeof(*out));
	if (af != AF_INET && af != AF_INET6)
		return false;
	return kind == NFT_SET_PORTS ? parse_port_member(af, member, out)
				     : parse_net(af, member, strlen(member), out);
}

void nft_elems_from_members(int af, enum nft_set_kind kind, const char *const *members, size_t n,
			    struct nft_elem **out, size_t *n_out, size_t *bad, bool *merged)
{
	struct nft_elem *v = xcalloc(n + 1, sizeof(*v));
	size_t k = 0;
	*bad = 0;
	*merged = false;
	for (size_t i = 0; i < n; i++) {
		if (nft_elem_from_member(af, kind, members[i], &v[k]))
			k++;
		else
			(*bad)++;
	}
	qsort(v, k, sizeof(*v), cmp_elems);
	size_t m = 0;
	for (size_t i = 0; i < k; i++) {
		if (m && kind == NFT_SET_PORTS && nft_elem_cmp(&v[m - 1], &v[i]) == 0)
			continue;
		/* overlapping intervals become one (a duplicate member too) */
		struct nft_elem *last = m ? &v[m - 1] : NULL;
		if (last && kind == NFT_SET_ADDRS && memcmp(v[i].lo, last->hi, 16) <= 0) {
			if (memcmp(v[i].hi, last->hi, 16) > 0)
				memcpy(last->hi, v[i].hi, 16);
			*merged = true;
			continue;
		}
		v[m++] = v[i];
	}
	*out = v;
	*n_out = m;
}
