/*
 * iptables rules, entry -> text: entries printed exactly as
 * iptables-legacy-save prints them (see ipt_rule_internal.h); the rule ids
 * read from either form; the set-name tables both directions use.
 */
#include "ipt_rule_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *proto_name(uint16_t num)
{
	for (size_t i = 0; i < ARRAY_SIZE(protocols); i++)
		if (protocols[i].num == num)
			return protocols[i].name;
	return NULL;
}

const char *ipt_proto_name(uint8_t num)
{
	return proto_name(num);
}

/* --- set tables -------------------------------------------------------------------- */

static int table_index_of(void *ctx, const char *name, uint16_t *index)
{
	struct ipt_set_table *t = ctx;
	size_t i;
	for (i = 0; i < t->n; i++)
		if (strcmp(t->names[i], name) == 0)
			break;
	if (i == t->n) {
		if (strlen(name) > IPT_SET_NAME_MAX || t->n >= UINT16_MAX)
			return -ENOENT;
		GROW(t->names, t->cap, t->n + 1);
		snprintf(t->names[t->n++], sizeof(t->names[0]), "%s", name);
	}
	*index = (uint16_t)i;
	return 0;
}

static int table_name_of(void *ctx, uint16_t index, char *name)
{
	struct ipt_set_table *t = ctx;
	if (index >= t->n)
		return -ENOENT;
	memcpy(name, t->names[index], IPT_SET_NAME_MAX + 1);
	return 0;
}

void ipt_set_table_init(struct ipt_set_table *t)
{
	memset(t, 0, sizeof(*t));
	t->sets.index_of = table_index_of;
	t->sets.name_of = table_name_of;
	t->sets.ctx = t;
}

void ipt_set_table_free(struct ipt_set_table *t)
{
	if (!t)
		return;
	free(t->names);
	t->names = NULL;
	t->n = t->cap = 0;
}

/* iptables-save's rate units, largest first. */
static const struct {
	const char *name;
	uint32_t mult;
} rates[] = {
	{ "day", XT_LIMIT_SCALE * 24 * 60 * 60 },
	{ "hour", XT_LIMIT_SCALE * 60 * 60 },
	{ "min", XT_LIMIT_SCALE * 60 },
	{ "sec", XT_LIMIT_SCALE },
};

/* --- formatting ------------------------------------------------------------------- */

/* As xtables_save_string: bare when only [-_0-9a-zA-Z], else quoted with \ before " \ '. */
static void put_string(struct strbuf *out, const char *s)
{
	static const char bare[] =
		"_-0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
	size_t n = strspn(s, bare);
	sb_addc(out, ' ');
	if (n > 0 && s[n] == 0) {
		sb_adds(out, s);
		return;
	}
	sb_addc(out, '"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\' || *s == '\'')
			sb_addc(out, '\\');
		sb_addc(out, *s);
	}
	sb_addc(out, '"');
}

static void put_ip(struct strbuf *out, const char *opt, struct in_addr a, struct in_addr m,
		   bool inv)
{
	if (!a.s_addr && !m.s_addr && !inv)
		return;
	uint32_t ip = ntohl(a.s_addr), hm = ntohl(m.s_addr);
	sb_addf(out, "%s %s %u.%u.%u.%u", inv ? " !" : "", opt, ip >> 24, (ip >> 16) & 0xff,
		(ip >> 8) & 0xff, ip & 0xff);
	int len = -1;
	for (int i = 0; i <= 32; i++)
		if (hm == (i ? ~0u << (32 - i) : 0u))
			len = i;
	if (len >= 0)
		sb_addf(out, "/%d", len);
	else
		sb_addf(out, "/%u.%u.%u.%u", hm >> 24, (hm >> 16) & 0xff, (hm >> 8) & 0xff,
			hm & 0xff);
}

static void put_ip6(struct strbuf *out, const char *opt, const struct in6_addr *a,
		    const struct in6_addr *m, bool inv)
{
	static const struct in6_addr zero;
	if (!memcmp(a, &zero, sizeof(zero)) && !memcmp(m, &zero, sizeof(zero)) && !inv)
		return;
	char text[INET6_ADDRSTRLEN];
	inet_ntop(AF_INET6, a, text, sizeof(text));
	sb_addf(out, "%s %s %s", inv ? " !" : "", opt, text);
	/* the prefix length when the mask is one, else the mask */
	int len = 0;
	while (len < 128 && (m->s6_addr[len / 8] & (0x80u >> (len % 8))))
		len++;
	bool contiguous = true;
	for (int b = len; b < 128 && contiguous; b++)
		contiguous = !(m->s6_addr[b / 8] & (0x80u >> (b % 8)));
	if (contiguous) {
		sb_addf(out, "/%d", len);
	} else {
		inet_ntop(AF_INET6, m, text, sizeof(text));
		sb_addf(out, "/%s", text);
	}
}

static void put_iface(struct strbuf *out, char letter, const char *name, const unsigned char *mask,
		      bool inv)
{
	if (!mask[0])
		return;
	sb_addf(out, "%s -%c ", inv ? " !" : "", letter);
	for (int i = 0; i < IFNAMSIZ; i++) {
		if (mask[i]) {
			if (name[i])
				sb_addc(out, name[i]);
		} else {
			if (name[i - 1])
				sb_addc(out, '+');
			break;
		}
	}
}

static bool sized(const struct xt_entry_match *m, size_t data)
{
	return m->u.match_size == MATCH_HDR + XT_ALIGN(data);
}

static void put_addr_types(struct strbuf *out, uint16_t types)
{
	const char *sep = " ";
	for (size_t i = 0; i < ARRAY_SIZE(addr_types); i++)
		if (types & (1u << i)) {
			sb_addf(out, "%s%s", sep, addr_types[i]);
			sep = ",";
		}
}

static void put_rate(struct strbuf *out, uint32_t period)
{
	size_t i;
	for (i = 1; i < ARRAY_SIZE(rates); ++i)
		if (period > rates[i].mult || rates[i].mult / period < rates[i].mult % period)
			break;
	sb_addf(out, " %u/%s", rates[i - 1].mult / period, rates[i - 1].name);
}

/* False when the match holds something outside the subset. */
static bool format_match(const struct xt_entry_match *m, const struct ipt_sets *sets,
			 struct strbuf *out)
{
	const char *name = m->u.user.name;
	uint8_t rev = m->u.user.revision;
	const void *d = m->data;
	if (strcmp(name, "comment") == 0 && rev == 0 && sized(m, sizeof(struct xt_comment_info))) {
		const struct xt_comment_info *c = d;
		char text[XT_MAX_COMMENT_LEN];
		snprintf(text, sizeof(text), "%.*s", XT_MAX_COMMENT_LEN - 1, c->comment);
		sb_adds(out, " -m comment --comment");
		put_string(out, text);
		return true;
	}
	if (strcmp(name, "mark") == 0 && rev == 1 && sized(m, sizeof(struct xt_mark_mtinfo1))) {
		const struct xt_mark_mtinfo1 *k = d;
		sb_addf(out, " -m mark%s --mark 0x%x", k->invert ? " !" : "", k->mark);
		if (k->mask != 0xffffffffu)
			sb_addf(out, "/0x%x", k->mask);
		return true;
	}
	if (strcmp(name, "conntrack") == 0 && rev == 3 &&
	    sized(m, sizeof(struct xt_conntrack_mtinfo3))) {
		const struct xt_conntrack_mtinfo3 *c = d;
		if (c->match_flags != XT_CONNTRACK_STATE || (c->invert_flags & ~XT_CONNTRACK_STATE))
			return false;
		sb_addf(out, " -m conntrack%s --ctstate",
			c->invert_flags & XT_CONNTRACK_STATE ? " !" : "");
		const char *sep = " ";
		for (size_t i = 0; i < ARRAY_SIZE(ct_states); i++)
			if (c->state_mask & ct_states[i].bit) {
				sb_addf(out, "%s%s", sep, ct_states[i].name);
				sep = ",";
			}
		return true;
	}
	if (strcmp(name, "set") == 0 && rev == 4 && sized(m, sizeof(struct xt_set_info_match_v4))) {
		const struct xt_set_info_match_v4 *s = d;
		const struct xt_set_info_match_v4 zero = { 0 };
		if (memcmp(&s->packets, &zero.packets, sizeof(s->packets)) ||
		    memcmp(&s->bytes, &zero.bytes, sizeof(s->bytes)) || s->flags ||
		    s->match_set.dim == 0 || s->match_set.dim > IPSET_DIM_MAX ||
		    (s->match_set.flags & ~(uint8_t)((2u << s->match_set.dim) - 1)))
			return false;
		char set[IPT_SET_NAME_MAX + 1];
		if (!sets || sets->name_of(sets->ctx, s->match_set.index, set) < 0)
			snprintf(set, sizeof(set), "#%u", s->match_set.index);
		sb_addf(out, " -m set%s --match-set %s",
			s->match_set.flags & IPSET_INV_MATCH ? " !" : "", set);
		for (int i = 1; i <= s->match_set.dim; i++)
			sb_addf(out, "%s%s", i == 1 ? " " : ",",
				s->match_set.flags & (1 << i) ? "src" : "dst");
		return true;
	}
	if (strcmp(name, "multiport") == 0 && rev == 1 &&
	    sized(m, sizeof(struct xt_multiport_v1))) {
		const struct xt_multiport_v1 *mp = d;
		if (mp->flags > XT_MULTIPORT_DESTINATION || mp->count > XT_MULTI_PORTS)
			return false;
		for (unsigned i = 0; i < mp->count; i++)
			if (mp->pflags[i] && (i + 1 >= mp->count || mp->pflags[i] > 1))
				return false;
		sb_addf(out, " -m multiport%s --%s ", mp->invert ? " !" : "",
			mp->flags == XT_MULTIPORT_SOURCE ? "sports" : "dports");
		for (unsigned i = 0; i < mp->count; i++) {
			sb_addf(out, "%s%u", i ? "," : "", mp->ports[i]);
			if (mp->pflags[i])
				sb_addf(out, ":%u", mp->ports[++i]);
		}
		return true;
	}
	if (strcmp(name, "icmp") == 0 && rev == 0 && sized(m, sizeof(struct ipt_icmp))) {
		const struct ipt_icmp *ic = d;
		if (ic->invflags & ~IPT_ICMP_INV)
			return false;
		sb_addf(out, " -m icmp%s --icmp-type", ic->invflags ? " !" : "");
		if (ic->type == 0xff) { /* as iptables-save: whatever the codes */
			sb_adds(out, " any");
		} else {
			sb_addf(out, " %u", ic->type);
			if (ic->code[0] != 0 || ic->code[1] != 0xff)
				sb_addf(out, "/%u", ic->code[0]);
		}
		return true;
	}
	if (strcmp(name, "icmp6") == 0 && rev == 0 && sized(m, sizeof(struct ip6t_icmp))) {
		const struct ip6t_icmp *ic = d;
		if (ic->invflags & ~IP6T_ICMP_INV)
			return false;
		sb_addf(out, " -m icmp6%s --icmpv6-type %u", ic->invflags ? " !" : "", ic->type);
		if (ic->code[0] != 0 || ic->code[1] != 0xff)
			sb_addf(out, "/%u", ic->code[0]);
		return true;
	}
	if (strcmp(name, "addrtype") == 0 && rev == 1 &&
	    sized(m, sizeof(struct xt_addrtype_info_v1))) {
		const struct xt_addrtype_info_v1 *a = d;
		sb_adds(out, " -m addrtype");
		if (a->source) {
			if (a->flags & XT_ADDRTYPE_INVERT_SOURCE)
				sb_adds(out, " !");
			sb_adds(out, " --src-type");
			put_addr_types(out, a->source);
		}
		if (a->dest) {
			if (a->flags & XT_ADDRTYPE_INVERT_DEST)
				sb_adds(out, " !");
			sb_adds(out, " --dst-type");
			put_addr_types(out, a->dest);
		}
		if (a->flags & XT_ADDRTYPE_LIMIT_IFACE_IN)
			sb_adds(out, " --limit-iface-in");
		if (a->flags & XT_ADDRTYPE_LIMIT_IFACE_OUT)
			sb_adds(out, " --limit-iface-out");
		return true;
	}
	if (strcmp(name, "limit") == 0 && rev == 0 && sized(m, sizeof(struct xt_rateinfo))) {
		const struct xt_rateinfo *l = d;
		if (l->avg == 0)
			return false;
		sb_adds(out, " -m limit --limit");
		put_rate(out, l->avg);
		if (l->burst != LIMIT_BURST_DEFAULT)
			sb_addf(out, " --limit-burst %u", l->burst);
		return true;
	}
	return false;
}

static bool format_target(int af, const struct xt_entry_target *t, struct strbuf *out)
{
	const char *name = t->u.user.name;
	const void *d = t->data;
	uint8_t rev = t->u.user.revision;
	size_t size = t->u.target_size;
#define TSIZED(type) (size == TARGET_HDR + XT_ALIGN(sizeof(type)))
	if (strcmp(name, "MARK") == 0 && rev == 2 && TSIZED(struct xt_mark_tginfo2)) {
		const struct xt_mark_tginfo2 *k = d;
		sb_addf(out, " -j MARK --set-xmark 0x%x/0x%x", k->mark, k->mask);
		return true;
	}
	if (strcmp(name, "MASQUERADE") == 0 && rev == 0 && af == AF_INET6 &&
	    TSIZED(struct nf_nat_range)) {
		const struct nf_nat_range *r = d;
		if (r->flags & ~NF_NAT_RANGE_PROTO_RANDOM_FULLY)
			return false;
		sb_adds(out, " -j MASQUERADE");
		if (r->flags & NF_NAT_RANGE_PROTO_RANDOM_FULLY)
			sb_adds(out, " --random-fully");
		return true;
	}
	if (strcmp(name, "MASQUERADE") == 0 && rev == 0 && af == AF_INET &&
	    TSIZED(struct nf_nat_ipv4_multi_range_compat)) {
		const struct nf_nat_ipv4_multi_range_compat *r = d;
		if (r->rangesize != 1 || (r->range[0].flags & ~NF_NAT_RANGE_PROTO_RANDOM_FULLY))
			return false;
		sb_adds(out, " -j MASQUERADE");
		if (r->range[0].flags & NF_NAT_RANGE_PROTO_RANDOM_FULLY)
			sb_adds(out, " --random-fully");
		return true;
	}
	if (strcmp(name, "NFLOG") == 0 && rev == 0 && TSIZED(struct xt_nflog_info)) {
		const struct xt_nflog_info *n = d;
		char prefix[sizeof(n->prefix)];
		if (n->flags || n->len)
			return false;
		snprintf(prefix, sizeof(prefix), "%.*s", (int)sizeof(prefix) - 1, n->prefix);
		sb_adds(out, " -j NFLOG");
		if (prefix[0]) {
			sb_adds(out, " --nflog-prefix");
			put_string(out, prefix);
		}
		if (n->group)
			sb_addf(out, " --nflog-group %u", n->group);
		if (n->threshold != XT_NFLOG_DEFAULT_THRESHOLD)
			sb_addf(out, " --nflog-threshold %u", n->threshold);
		return true;
	}
	if (strcmp(name, "LOG") == 0 && rev == 0 && TSIZED(struct xt_log_info)) {
		const struct xt_log_info *l = d;
		char prefix[sizeof(l->prefix)];
		if (l->logflags || l->level > 7)
			return false;
		snprintf(prefix, sizeof(prefix), "%.*s", (int)sizeof(prefix) - 1, l->prefix);
		sb_adds(out, " -j LOG");
		if (prefix[0]) {
			sb_adds(out, " --log-prefix");
			put_string(out, prefix);
		}
		if (l->level != LOG_LEVEL_DEFAULT)
			sb_addf(out, " --log-level %u", l->level);
		return true;
	}
	if (strcmp(name, "REJECT") == 0 && rev == 0 && TSIZED(struct ipt_reject_info)) {
		const struct ipt_reject_info *r =
			d; /* struct ip6t_reject_info has the same layout */
		const char *with = reject_name(af, (int)r->with);
		if (with)
			sb_addf(out, " -j REJECT --reject-with %s", with);
		return with != NULL;
	}
#undef TSIZED
	return false;
}

const char *ipt_verdict_name(int v)
{
	switch (v) {
	case -NF_ACCEPT - 1:
		return "ACCEPT";
	case -NF_DROP - 1:
		return "DROP";
	case XT_RETURN:
		return "RETURN";
	default:
		return NULL;
	}
}

/* The parts of an entry's header the text shows, from either family's entry. */
struct entry_view {
	uint16_t proto, target_offset, next_offset;
	uint8_t invflags;
	bool go, frag;
	const char *iniface, *outiface;
	const unsigned char *iniface_mask, *outiface_mask;
};

static void view_entry(int af, const void *entry, struct entry_view *v)
{
	/* the same fields under the same names in both families' headers */
#define VIEW(e, ip, goto_flag, frag_)                                               \
	(struct entry_view)                                                         \
	{                                                                           \
		.proto = ip->proto, .target_offset = e->target_offset,              \
		.next_offset = e->next_offset, .invflags = ip->invflags,            \
		.go = ip->flags & goto_flag, .frag = frag_, .iniface = ip->iniface, \
		.outiface = ip->outiface, .iniface_mask = ip->iniface_mask,         \
		.outiface_mask = ip->outiface_mask                                  \
	}
	if (af == AF_INET6) {
		const struct ip6t_entry *e = entry;
		const struct ip6t_ip6 *ip = &e->ipv6;
		*v = VIEW(e, ip, IP6T_F_GOTO, false);
	} else {
		const struct ipt_entry *e = entry;
		const struct ipt_ip *ip = &e->ip;
		*v = VIEW(e, ip, IPT_F_GOTO, ip->flags & IPT_F_FRAG);
	}
#undef VIEW
}

void ipt_rule_format(int af, const void *entry, const char *jump_target,
		     const struct ipt_sets *sets, struct strbuf *out)
{
	struct entry_view ip;
	view_entry(af, entry, &ip);
	size_t start = out->len, head = entry_header_size(af);
	if (af == AF_INET6) {
		const struct ip6t_ip6 *h = &((const struct ip6t_entry *)entry)->ipv6;
		put_ip6(out, "-s", &h->src, &h->smsk, ip.invflags & IPT_INV_SRCIP);
		put_ip6(out, "-d", &h->dst, &h->dmsk, ip.invflags & IPT_INV_DSTIP);
	} else {
		const struct ipt_ip *h = &((const struct ipt_entry *)entry)->ip;
		put_ip(out, "-s", h->src, h->smsk, ip.invflags & IPT_INV_SRCIP);
		put_ip(out, "-d", h->dst, h->dmsk, ip.invflags & IPT_INV_DSTIP);
	}
	put_iface(out, 'i', ip.iniface, ip.iniface_mask, ip.invflags & IPT_INV_VIA_IN);
	put_iface(out, 'o', ip.outiface, ip.outiface_mask, ip.invflags & IPT_INV_VIA_OUT);
	if (ip.proto) {
		const char *pn = proto_name(ip.proto);
		sb_addf(out, "%s -p ", ip.invflags & IPT_INV_PROTO ? " !" : "");
		if (pn)
			sb_adds(out, pn);
		else
			sb_addf(out, "%u", ip.proto);
	}
	if (ip.frag)
		sb_addf(out, "%s -f (unsupported)", ip.invflags & IPT_INV_FRAG ? " !" : "");

	const char *e = entry;
	size_t toff = ip.target_offset, next = ip.next_offset;
	if (toff < head || toff > next)
		toff = next = head;
	for (size_t off = head; off + MATCH_HDR <= toff;) {
		const struct xt_entry_match *m = (const void *)(e + off);
		if (m->u.match_size < MATCH_HDR || off + m->u.match_size > toff)
			break;
		struct xt_entry_match hdr = *m;
		hdr.u.user.name[sizeof(hdr.u.user.name) - 1] = 0;
		if (!format_match(m, sets, out))
			sb_addf(out, " -m %s (unsupported)", hdr.u.user.name);
		off += m->u.match_size;
	}

	if (toff + TARGET_HDR <= next) {
		const struct xt_entry_target *t = (const void *)(e + toff);
		char name[XT_EXTENSION_MAXNAMELEN];
		snprintf(name, sizeof(name), "%.*s", XT_EXTENSION_MAXNAMELEN - 1, t->u.user.name);
		const char *dash = ip.go ? "-g" : "-j";
		bool standard_size = t->u.target_size == STD_SIZE;
		if (is_module_target(name)) {
			if (!format_target(af, t, out))
				sb_addf(out, " -j %s (unsupported)", name);
		} else if (name[0] == 0 && standard_size) {
			const char *v = jump_target;
			if (!v || !*v)
				v = ipt_verdict_name(
					((const struct xt_standard_target *)t)->verdict);
			if (v && *v)
				sb_addf(out, " %s %s", dash, v);
		} else if (standard_size && !jump_target) {
			sb_addf(out, " %s %s", dash, name); /* from ipt_rule_parse */
		} else if (name[0]) {
			sb_addf(out, " -j %s (unsupported)", name);
		}
	}
	/* iptables-save's line starts with "-A CHAIN"; ours without it, so no leading blank. */
	if (out->len > start && out->buf[start] == ' ') {
		memmove(out->buf + start, out->buf + start + 1, out->len - start);
		out->len--;
	}
}

/* --- ids ----------------------------------------------------------------------------- */

bool ipt_rule_entry_id(int af, const void *entry, char *id)
{
	struct entry_view v;
	view_entry(af, entry, &v);
	const char *e = entry;
	for (size_t off = entry_header_size(af); off + MATCH_HDR <= v.target_offset;) {
		const struct xt_entry_match *m = (const void *)(e + off);
		if (m->u.match_size < MATCH_HDR || off + m->u.match_size > v.target_offset)
			break;
		if (strcmp(m->u.user.name, "comment") == 0 &&
		    sized(m, sizeof(struct xt_comment_info))) {
			const struct xt_comment_info *c = (const void *)m->data;
			if (id_from_comment(c->comment, strnlen(c->comment, XT_MAX_COMMENT_LEN),
					    id))
				return true;
		}
		off += m->u.match_size;
	}
	return false;
}
