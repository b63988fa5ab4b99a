/*
 * iptables and ip6tables (the legacy tables, in the kernel's own layout) for
 * the rules felix writes.
 *
 * A rule is text in iptables-save syntax: what follows "-A <chain> " in
 * `iptables-legacy-save` (`ip6tables-legacy-save`) output, e.g.
 *
 *   -i cali+ -m comment --comment "cali:0123456789abcdef" -m mark --mark 0x10000/0x10000 -j RETURN
 *
 * restricted to the options and extensions Brindle uses (below), always
 * written the way iptables-save prints them, so that what felix renders and
 * what `iptables-legacy-save` shows after the write are the same string.
 * This header is the pure part: lib/core/ipt_rule_parse.c parses that text
 * into the kernel's entry layout and lib/core/ipt_rule_format.c formats an
 * entry back to text. The tables themselves are <brindle/sys/ipt.h>.
 *
 * The subset, in the order iptables-save prints it (each option may be
 * preceded by "! " to negate it where iptables allows):
 */
/* clang-format off */
/*
 *   -s CIDR  -d CIDR  -i IFACE[+]  -o IFACE[+]  -p PROTO (name or number)
 *   -m comment --comment "TEXT"                   (quoted as iptables-save quotes)
 *   -m mark [!] --mark 0xV/0xM                    (0xV alone when the mask is 0xffffffff)
 *   -m conntrack [!] --ctstate S[,S...]           (INVALID NEW ESTABLISHED RELATED UNTRACKED SNAT DNAT)
 *   -m set [!] --match-set NAME DIRS              (DIRS: src | dst | src,dst | dst,dst | ...)
 *   -m multiport [!] --sports|--dports P[,P|P:Q...]   (at most 15 slots, a range takes 2)
 *   -m icmp [!] --icmp-type T[/C] | any           (IPv4, after -p icmp)
 *   -m icmp6 [!] --icmpv6-type T[/C]              (IPv6, after -p ipv6-icmp)
 *   -m addrtype [!] --src-type T [!] --dst-type T [--limit-iface-out]
 *   -m limit --limit N/sec|min|hour|day [--limit-burst B]   (B = 5 is not printed)
 *   -j ACCEPT | DROP | RETURN | CHAIN    -g CHAIN
 *   -j MARK --set-xmark 0xV/0xM
 *   -j MASQUERADE [--random-fully]
 *   -j NFLOG [--nflog-prefix "P"] [--nflog-group N] [--nflog-threshold N]
 *   -j LOG --log-prefix "P" [--log-level N]      (level 4 is not printed)
 *   -j REJECT --reject-with icmp-port-unreachable | tcp-reset | ...   (IPv6: icmp6-...)
 */
/* clang-format on */
/*
 * Anything else is refused by the parser with a message naming the token.
 * Addresses are of the family the rule is parsed for (AF_INET: iptables,
 * AF_INET6: ip6tables); the entries are struct ipt_entry or struct ip6t_entry
 * with the same matches and targets after them.
 *
 * Rules are identified, as Felix does, by their first comment: "cali:" and
 * 16 characters; a rule without one in a built-in chain is foreign and never
 * touched. Chains named cali-* are ours.
 */
#ifndef BRINDLE_CORE_IPT_RULE_H
#define BRINDLE_CORE_IPT_RULE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h> /* AF_INET, AF_INET6 */
#include <brindle/core/strbuf.h>
#include <brindle/core/util.h>

/* iptables chain names: 28 characters at most (the kernel's 29 with the NUL). */
#define IPT_CHAIN_MAX 28
#define IPT_ID_PREFIX "cali:"
#define IPT_ID_LEN 21 /* "cali:" + 16 */

/* --- pure: text <-> kernel entry ------------------------------------------------ */

/* ip set names: 31 characters at most (the kernel's IPSET_MAXNAMELEN with the NUL). */
#define IPT_SET_NAME_MAX 31

/*
 * `-m set` entries hold the kernel's index of the set, not its name, so
 * parsing and formatting them needs a resolver: the kernel backend asks the
 * kernel, tests and the recording backend use an ipt_set_table. A NULL
 * resolver refuses set matches when parsing and formats them with the index
 * ("#3").
 */
struct ipt_sets {
	/* The index of set @name; -ENOENT when there is no such set. */
	int (*index_of)(void *ctx, const char *name, uint16_t *index);
	/* The name of the set at @index into @name (IPT_SET_NAME_MAX + 1 bytes); -ENOENT. */
	int (*name_of)(void *ctx, uint16_t index, char *name);
	void *ctx;
};

/* A pure resolver: a set's index is its place in the order names were first asked for. */
struct ipt_set_table {
	struct ipt_sets sets;
	char (*names)[IPT_SET_NAME_MAX + 1];
	size_t n, cap;
};

void ipt_set_table_init(struct ipt_set_table *t);
void ipt_set_table_free(struct ipt_set_table *t);

/*
 * Parse @text (one rule, iptables-save syntax of the subset above) for family
 * @af (AF_INET or AF_INET6) into the kernel's layout: a struct ipt_entry (or
 * struct ip6t_entry) followed by its matches and target,
 * allocated with malloc, in *out (*len bytes), with the match and target
 * revisions iptables 1.8.9 picks on a current kernel. A verdict, jump or
 * goto is a standard target holding the verdict's or the chain's name (the
 * backend turns it into the verdict or the offset). On error returns -EINVAL and writes
 * `token 7 ("--foo"): unknown option of mark` style text to @err (tokens
 * count from 1).
 */
int ipt_rule_parse(int af, const char *text, const struct ipt_sets *sets, void **out, size_t *len,
		   struct strbuf *err) must_check;

/*
 * Format an entry back to the same text, appending to @out. @jump_target is
 * the target's name ("ACCEPT", a chain, "MARK") for entries as the kernel
 * hands them out, whose standard targets carry
 * a verdict rather than a name; NULL for entries from ipt_rule_parse.
 * Options outside the subset come out as "-m NAME (unsupported)" (or
 * "-j NAME (unsupported)") so foreign rules can still be logged.
 */
void ipt_rule_format(int af, const void *entry, const char *jump_target,
		     const struct ipt_sets *sets, struct strbuf *out);

/*
 * The rule's id: the first comment starting "cali:" with at least 16 more
 * characters, cut to IPT_ID_LEN, copied into @id (IPT_ID_LEN + 1 bytes);
 * false when it has none. For text that parses, the text and the entry forms
 * give the same id (text that does not parse may still yield one when it
 * opens with its comment).
 */
bool ipt_rule_text_id(const char *text, char *id);
/* How iptables-save names protocol @num ("tcp", "ipencap"); NULL when it prints the number. */
const char *ipt_proto_name(uint8_t num);
bool ipt_rule_entry_id(int af, const void *entry, char *id);

/*
 * A name new_chain accepts: 1..IPT_CHAIN_MAX characters, no blanks, quotes or
 * backslashes, not starting with '-' or '!', and not a verdict or a target
 * of the subset ("ACCEPT", "MARK", ...), which a jump could not tell apart.
 */
bool ipt_chain_name_valid(const char *name);

#endif
