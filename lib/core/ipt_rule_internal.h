/*
 * iptables rules: text in iptables-save syntax <-> the kernel's entry layout.
 * Pure: no sockets; only the kernel's uapi structures. Private to
 * lib/core/ipt_rule_tokens.c (text -> tokens), ipt_rule_parse.c (tokens ->
 * entry, rule ids of text) and ipt_rule_format.c (entry -> text, rule ids,
 * set-name tables): the layout constants, the name tables and the few
 * helpers both directions use.
 *
 * Owns the subset listed in brindle/ipt.h. The entries are laid out as
 * iptables 1.8.9 (legacy) builds them on a current kernel, with the same
 * revisions (mark 1, conntrack 3, set 4, multiport 1, addrtype 1, MARK 2,
 * the others 0), so that the kernel accepts them and iptables-legacy-save
 * prints our text back. The formatter follows iptables-save's printing
 * rules (quoting, masks, rates, the /etc/protocols names of Debian's
 * netbase) so that format(parse(text)) == text exactly when text is written
 * the way iptables-save writes it.
 */
#ifndef BRINDLE_IPT_RULE_INTERNAL_H
#define BRINDLE_IPT_RULE_INTERNAL_H

#include <brindle/sys/ipt.h>

#include <arpa/inet.h> /* before the kernel headers, which would define in_addr */
#include <string.h>

#include <linux/netfilter.h>
#include <linux/netfilter/nf_nat.h>
#include <linux/netfilter/x_tables.h>
#include <linux/netfilter/xt_LOG.h>
#include <linux/netfilter/xt_NFLOG.h>
#include <linux/netfilter/xt_addrtype.h>
#include <linux/netfilter/xt_comment.h>
#include <linux/netfilter/xt_conntrack.h>
#include <linux/netfilter/xt_limit.h>
#include <linux/netfilter/xt_mark.h>
#include <linux/netfilter/xt_multiport.h>
#include <linux/netfilter/xt_set.h>
#include <linux/netfilter_ipv4/ip_tables.h>
#include <linux/netfilter_ipv4/ipt_REJECT.h>
#include <linux/netfilter_ipv6/ip6_tables.h>
#include <linux/netfilter_ipv6/ip6t_REJECT.h>

#define MATCH_HDR	    XT_ALIGN(sizeof(struct xt_entry_match))
#define TARGET_HDR	    XT_ALIGN(sizeof(struct xt_entry_target))
#define STD_SIZE	    XT_ALIGN(sizeof(struct xt_standard_target))
#define LOG_LEVEL_DEFAULT   4
#define LIMIT_BURST_DEFAULT 5

/* --- tokens (ipt_rule_tokens.c) ------------------------------------------------------ */

struct ipt_tokens {
	char **v;
	size_t n, cap;
};

void ipt_tokens_free(struct ipt_tokens *t);
/*
 * Split as iptables-restore does: blanks separate, double quotes group and inside them a
 * backslash takes the next character literally. Control characters are refused (with their
 * offset in @err): iptables-save would print them raw, breaking lines.
 */
int ipt_tokenize(const char *text, struct ipt_tokens *out, struct strbuf *err);

/* An address or mask of either family, as the entries hold them. */
union ipt_addr {
	struct in_addr v4;
	struct in6_addr v6;
	uint8_t bytes[16];
};

/* The header's negation bits mean the same in both families. */
_Static_assert(IPT_INV_VIA_IN == IP6T_INV_VIA_IN && IPT_INV_VIA_OUT == IP6T_INV_VIA_OUT &&
		       IPT_INV_SRCIP == IP6T_INV_SRCIP && IPT_INV_DSTIP == IP6T_INV_DSTIP &&
		       IPT_INV_PROTO == IP6T_INV_PROTO && IPT_INV_FRAG == IP6T_INV_FRAG,
	       "IPv4 and IPv6 negation flags differ");

/* Where an entry's matches start: after struct ipt_entry or struct ip6t_entry. */
static inline size_t entry_header_size(int af)
{
	return af == AF_INET6 ? sizeof(struct ip6t_entry) : sizeof(struct ipt_entry);
}

/* --- name tables ------------------------------------------------------------------- */

/* What getprotobynumber() answers with Debian 12's netbase, which iptables-save prints. */
static const struct {
	uint8_t num;
	const char *name;
} protocols[] = {
	{ 1, "icmp" },	      { 2, "igmp" },
	{ 3, "ggp" },	      { 4, "ipencap" },
	{ 5, "st" },	      { 6, "tcp" },
	{ 8, "egp" },	      { 9, "igp" },
	{ 12, "pup" },	      { 17, "udp" },
	{ 20, "hmp" },	      { 22, "xns-idp" },
	{ 27, "rdp" },	      { 29, "iso-tp4" },
	{ 33, "dccp" },	      { 36, "xtp" },
	{ 37, "ddp" },	      { 38, "idpr-cmtp" },
	{ 41, "ipv6" },	      { 43, "ipv6-route" },
	{ 44, "ipv6-frag" },  { 45, "idrp" },
	{ 46, "rsvp" },	      { 47, "gre" },
	{ 50, "esp" },	      { 51, "ah" },
	{ 57, "skip" },	      { 58, "ipv6-icmp" },
	{ 59, "ipv6-nonxt" }, { 60, "ipv6-opts" },
	{ 73, "rspf" },	      { 81, "vmtp" },
	{ 88, "eigrp" },      { 89, "ospf" },
	{ 93, "ax.25" },      { 94, "ipip" },
	{ 97, "etherip" },    { 98, "encap" },
	{ 103, "pim" },	      { 108, "ipcomp" },
	{ 112, "vrrp" },      { 115, "l2tp" },
	{ 124, "isis" },      { 132, "sctp" },
	{ 133, "fc" },	      { 135, "mobility-header" },
	{ 136, "udplite" },   { 137, "mpls-in-ip" },
	{ 138, "manet" },     { 139, "hip" },
	{ 140, "shim6" },     { 141, "wesp" },
	{ 142, "rohc" },      { 143, "ethernet" },
};

static const char *const addr_types[] = { "UNSPEC",   "UNICAST",   "LOCAL",	"BROADCAST",
					  "ANYCAST",  "MULTICAST", "BLACKHOLE", "UNREACHABLE",
					  "PROHIBIT", "THROW",	   "NAT",	"XRESOLVE" };

/* In the order iptables-save prints them. */
static const struct {
	const char *name;
	uint16_t bit;
} ct_states[] = {
	{ "INVALID", XT_CONNTRACK_STATE_INVALID },
	{ "NEW", XT_CONNTRACK_STATE_BIT(IP_CT_NEW) },
	{ "RELATED", XT_CONNTRACK_STATE_BIT(IP_CT_RELATED) },
	{ "ESTABLISHED", XT_CONNTRACK_STATE_BIT(IP_CT_ESTABLISHED) },
	{ "UNTRACKED", XT_CONNTRACK_STATE_UNTRACKED },
	{ "SNAT", XT_CONNTRACK_STATE_SNAT },
	{ "DNAT", XT_CONNTRACK_STATE_DNAT },
};

/*
 * REJECT's types: the name, xtables' number, and the code of the ICMP (ICMPv6) destination
 * unreachable it sends, as nftables' reject takes it (-1: a TCP reset).
 */
static const struct reject_with {
	const char *name;
	int with;
	int icmp_code;
} reject_withs[] = {
	{ "icmp-net-unreachable", IPT_ICMP_NET_UNREACHABLE, 0 },
	{ "icmp-host-unreachable", IPT_ICMP_HOST_UNREACHABLE, 1 },
	{ "icmp-port-unreachable", IPT_ICMP_PORT_UNREACHABLE, 3 },
	{ "icmp-proto-unreachable", IPT_ICMP_PROT_UNREACHABLE, 2 },
	{ "icmp-net-prohibited", IPT_ICMP_NET_PROHIBITED, 9 },
	{ "icmp-host-prohibited", IPT_ICMP_HOST_PROHIBITED, 10 },
	{ "tcp-reset", IPT_TCP_RESET, -1 },
	{ "icmp-admin-prohibited", IPT_ICMP_ADMIN_PROHIBITED, 13 },
}, reject_withs6[] = {
	{ "icmp6-no-route", IP6T_ICMP6_NO_ROUTE, 0 },
	{ "icmp6-adm-prohibited", IP6T_ICMP6_ADM_PROHIBITED, 1 },
	{ "icmp6-addr-unreachable", IP6T_ICMP6_ADDR_UNREACH, 3 },
	{ "icmp6-port-unreachable", IP6T_ICMP6_PORT_UNREACH, 4 },
	{ "tcp-reset", IP6T_TCP_RESET, -1 },
	{ "icmp6-policy-fail", IP6T_ICMP6_POLICY_FAIL, 5 },
	{ "icmp6-reject-route", IP6T_ICMP6_REJECT_ROUTE, 6 },
};

/* REJECT's types of family @af: its table, and *n its length. */
static inline const struct reject_with *reject_table(int af, size_t *n)
{
	*n = af == AF_INET6 ? ARRAY_SIZE(reject_withs6) : ARRAY_SIZE(reject_withs);
	return af == AF_INET6 ? reject_withs6 : reject_withs;
}

/* REJECT's --reject-with @name in family @af; -1 when it has no such type. */
static inline int reject_with(int af, const char *name)
{
	size_t n;
	const struct reject_with *t = reject_table(af, &n);
	for (size_t k = 0; k < n; k++)
		if (strcmp(t[k].name, name) == 0)
			return t[k].with;
	return -1;
}

/* The name iptables-save (ip6tables-save) prints for type @with, or NULL. */
static inline const char *reject_name(int af, int with)
{
	size_t n;
	const struct reject_with *t = reject_table(af, &n);
	for (size_t k = 0; k < n; k++)
		if (t[k].with == with)
			return t[k].name;
	return NULL;
}

/* Targets that are extensions (the others are verdicts or chains). */
static const char *const module_targets[] = { "MARK", "MASQUERADE", "NFLOG", "LOG", "REJECT" };

static inline bool is_module_target(const char *s)
{
	for (size_t i = 0; i < ARRAY_SIZE(module_targets); i++)
		if (strcmp(module_targets[i], s) == 0)
			return true;
	return false;
}

/* A standard target's verdict as a rule of the subset names it (ACCEPT, DROP, RETURN), or NULL. */
const char *ipt_verdict_name(int v);

/* The rule id at the start of a comment (IPT_ID_PREFIX...), if there is one. */
static inline bool id_from_comment(const char *c, size_t n, char *id)
{
	if (n < IPT_ID_LEN || strncmp(c, IPT_ID_PREFIX, strlen(IPT_ID_PREFIX)) != 0)
		return false;
	memcpy(id, c, IPT_ID_LEN);
	id[IPT_ID_LEN] = 0;
	return true;
}

#endif
