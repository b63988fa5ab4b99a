/*
 * nftables rules from felix's rule text (pure). The rule language stays the
 * iptables-save subset of <brindle/core/ipt_rule.h>: ipt_rule_parse turns it
 * into the kernel's entry, and this module translates that entry into the
 * nf_tables expressions the nft backend writes (lib/sys/nft_kernel.c turns
 * them into netlink with libnftnl). One parser, two backends: what a rule
 * means cannot differ between them.
 *
 * The expressions mirror nf_tables' own (linux/netfilter/nf_tables.h):
 * loads into registers (payload, meta, ct, fib), then comparisons, bit
 * operations, ranges and set lookups on them, then the statements (log,
 * limit, mark, masquerade, reject) and the verdict. Registers are the 32-bit
 * ones (NFT_REG32_00 + n); a concatenation (a named port's address, protocol
 * and port) takes consecutive ones, each item padded to 4 bytes, as nft does.
 *
 * The matches and targets of the subset, as nftables writes them:
 *   -s/-d CIDR         ip saddr/daddr, ip6 saddr/daddr (payload, bitwise for a prefix, cmp)
 *   -i/-o IFACE[+]     meta iifname/oifname (cmp on the name, or its prefix for "+")
 *   -p PROTO           meta l4proto
 *   -m comment         the rule's comment (user data), not an expression
 *   -m mark            meta mark & mask == value
 *   -m conntrack       ct state & states != 0 (== 0 with "!")
 *   -m set             lookup of ip saddr/daddr, or of saddr|daddr . l4proto . th sport|dport
 *                      for a two-dimension set (named ports), in the set of the same name
 *   -m multiport       th sport/dport: cmp for one port, range for one range, else a
 *                      lookup in the rule's own anonymous interval set
 *   -m icmp, -m icmp6  icmp type (and code), icmpv6 type (and code)
 *   -m addrtype        fib saddr/daddr type (with the output interface for --limit-iface-out)
 *   -m limit           limit rate N/second burst B packets
 *   -j ACCEPT|DROP|RETURN|CHAIN, -g CHAIN   the verdict
 *   -j MARK --set-xmark V/M                 meta mark set (mark & ~M) ^ V
 *   -j MASQUERADE [--random-fully]          masquerade
 *   -j NFLOG                                log group N prefix P (snaplen, threshold)
 *   -j LOG                                  log prefix P level L
 *   -j REJECT --reject-with ...             reject (icmp or icmpv6 type, or tcp reset)
 * Rules of either family: an IPv6 rule (ip6tables' text, AF_INET6) becomes the
 * same expressions with IPv6 addresses, for a table of the ip6 family.
 * Every rule counts what matched it (a counter before its statements), as an
 * iptables rule does: `nft list` shows them as iptables -v would.
 */
#ifndef BRINDLE_CORE_NFT_RULE_H
#define BRINDLE_CORE_NFT_RULE_H

#include <brindle/core/ipt_rule.h>
#include <brindle/core/strbuf.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

enum nftx_kind {
	NFTX_PAYLOAD,  /* reg <- packet[base + a .. + len] */
	NFTX_META,     /* reg <- meta key a */
	NFTX_META_SET, /* meta key a <- reg */
	NFTX_CT,       /* reg <- ct key a */
	NFTX_FIB,      /* reg <- fib result b with flags a */
	NFTX_CMP,      /* reg op d1 (len bytes) */
	NFTX_BITWISE,  /* reg <- (reg & d1) ^ d2 (len bytes) */
	NFTX_RANGE,    /* reg op [d1, d2] (len bytes; op EQ or NEQ) */
	NFTX_LOOKUP,   /* reg (len bytes) in set str ("" the rule's anonymous set); a: invert;
			* b: a verdict map (its element's verdict is the rule's) */
	NFTX_IMM,      /* verdict; str: the chain of a jump or goto */
	NFTX_LOG,      /* a: group (NFLOG) or level (LOG); b: snaplen; c: threshold; str */
	NFTX_LIMIT,    /* a: rate, b: unit (seconds), c: burst */
	NFTX_MASQ,     /* a: flags */
	NFTX_REJECT,   /* a: type, b: code */
	NFTX_COUNTER,  /* packets and bytes, as every iptables rule has them */
};

struct nftx {
	uint8_t kind; /* enum nftx_kind */
	uint8_t reg;  /* the register loaded (loads) or read (the rest), NFT_REG32_00 + n */
	uint8_t op;   /* NFTX_CMP, NFTX_RANGE: enum nft_cmp_ops / nft_range_ops */
	uint8_t len;  /* bytes compared, masked, looked up or loaded */
	uint32_t a, b, c;
	int32_t verdict; /* NFTX_IMM: NF_ACCEPT, NF_DROP, NFT_RETURN, NFT_JUMP, NFT_GOTO */
	uint8_t d1[16], d2[16];
	bool log_group; /* NFTX_LOG: NFLOG (a group) rather than LOG (a level) */
	char str[65];
};

/* A multiport list as an anonymous set of port intervals (inet_service, host order). */
struct nft_anon_set {
	uint16_t lo[15], hi[15]; /* at most 15 (xt_multiport's slots) */
	size_t n;
};

#define NFT_RULE_MAX_EXPRS 40

/* One rule as expressions, its comment and the sets it looks up. */
struct nft_rule_ir {
	struct nftx x[NFT_RULE_MAX_EXPRS];
	size_t n;
	struct nft_anon_set anon;
	bool has_anon;
	/* The comments, joined by "; " (the first is the rule's id when it has one): the rule's
	 * user data, as nft keeps a comment. */
	char comment[256];
	char id[IPT_ID_LEN + 1]; /* "" when none */
};

enum nft_set_kind {
	NFT_SET_ADDRS, /* intervals of ipv4_addr (ipv6_addr) */
	NFT_SET_PORTS, /* ipv4_addr (ipv6_addr) . inet_proto . inet_service */
};

/* Address bytes of family @af (AF_INET or AF_INET6): 4 or 16. */
static inline unsigned nft_addr_len(int af)
{
	return af == AF_INET6 ? 16 : 4;
}

/*
 * Key bytes of a named set of @kind in family @af: an address (one dimension), or address .
 * protocol . port, each item padded to 4 bytes as nft does (12 bytes for IPv4, 24 for IPv6).
 */
static inline unsigned nft_set_key_len(int af, enum nft_set_kind kind)
{
	return nft_addr_len(af) + (kind == NFT_SET_PORTS ? 8 : 0);
}

/*
 * A set element: an interval [lo, hi] of addresses, or a named port (its address in lo).
 * Addresses in network order, an IPv4 one in the first 4 bytes and the rest zero, so that
 * memcmp orders them as numbers.
 */
struct nft_elem {
	uint8_t lo[16], hi[16]; /* interval sets; a port set's address in lo */
	uint16_t port;		/* port sets, host order */
	uint8_t proto;
};

int nft_elem_cmp(const struct nft_elem *a, const struct nft_elem *b);

/*
 * The nftables name of ip set @ipset ("cali40s:abc" -> "cali40s_abc"): nft's parser reads no
 * ':' in a name, and an operator must be able to say `nft list set ip brindle-filter NAME`.
 * @out holds IPT_SET_NAME_MAX + 1 bytes.
 */
void nft_set_name(const char *ipset, char *out);

/*
 * The elements of a set from ip set members as felix keeps them ("10.0.0.1",
 * "10.0.0.0/24"; "10.0.0.1,tcp:80" for @kind NFT_SET_PORTS), sorted, and for
 * address sets overlapping members joined: nftables' interval sets hold no
 * overlapping intervals (adjacent ones they do). Members that do not parse are
 * skipped and counted in *bad; *merged says whether any were joined (else
 * each element is one member, and a member can be added or removed alone).
 * *out is malloc'd (caller frees).
 */
void nft_elems_from_members(int af, enum nft_set_kind kind, const char *const *members, size_t n,
			    struct nft_elem **out, size_t *n_out, size_t *bad, bool *merged);
/* One member of family @af as an element; false when it does not parse. */
bool nft_elem_from_member(int af, enum nft_set_kind kind, const char *member, struct nft_elem *out);

/*
 * Translate @text (a rule of the subset, of family @af) into @out. Set
 * matches name their set; a set match with two dimensions is a lookup of a
 * NFT_SET_PORTS key, one dimension of a NFT_SET_ADDRS key. On error returns
 * -EINVAL with the reason in @err (ipt_rule_parse's messages, or what
 * nftables cannot express).
 */
int nft_rule_from_text(int af, const char *text, struct nft_rule_ir *out,
		       struct strbuf *err) must_check;

/*
 * Interface dispatch through a verdict map: `iifname vmap @MAP` (`oifname` for @oif), whose
 * elements send each interface name to its endpoint's chain. The rule's id is one of the two
 * below, so that a chain holding it is recognised as a map's by its first rule.
 */
#define NFT_DISPATCH_IIF_ID "cali:dispatch-iifname"
#define NFT_DISPATCH_OIF_ID "cali:dispatch-oifname"
void nft_rule_dispatch(struct nft_rule_ir *out, bool oif, const char *map);

/*
 * The rule in nft's syntax, as `nft list` shows it (for logs, tests and
 * docs): "iifname "cali*" meta mark & 0x00010000 == 0x00010000 return".
 */
void nft_rule_format(const struct nft_rule_ir *r, struct strbuf *out);

#endif
