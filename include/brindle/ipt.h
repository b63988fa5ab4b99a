/*
 * iptables (the legacy tables, through libiptc) for the rules felix writes.
 *
 * A rule is text in iptables-save syntax: what follows "-A <chain> " in
 * `iptables-legacy-save` output, e.g.
 *
 *   -i cali+ -m comment --comment "cali:0123456789abcdef" -m mark --mark 0x10000/0x10000 -j RETURN
 *
 * restricted to the options and extensions Brindle uses (below), always
 * written the way iptables-save prints them, so that what felix renders and
 * what `iptables-legacy-save` shows after the write are the same string. The
 * pure part (lib/ipt_rule.c) parses that text into the kernel's entry layout
 * and formats an entry back to text; the kernel backend (lib/ipt_kernel.c,
 * the only file with libiptc headers) and a recording backend (lib/ipt_record.c,
 * a simulated set of tables for unit tests) sit behind one table of functions.
 *
 * The subset, in the order iptables-save prints it (each option may be
 * preceded by "! " to negate it where iptables allows):
 *   -s CIDR  -d CIDR  -i IFACE[+]  -o IFACE[+]  -p PROTO (name or number)
 *   -m comment --comment "TEXT"                 (quoted as iptables-save quotes)
 *   -m mark [!] --mark 0xV/0xM
 *   -m conntrack [!] --ctstate S[,S...]         (INVALID NEW ESTABLISHED RELATED UNTRACKED SNAT DNAT)
 *   -m set [!] --match-set NAME DIRS            (DIRS: src | dst | src,dst | dst,dst | ...)
 *   -m multiport [!] --sports|--dports P[,P|P:Q...]   (at most 15 slots, a range takes 2)
 *   -m icmp [!] --icmp-type T[/C] | any         (after -p icmp)
 *   -m addrtype [!] --src-type T [!] --dst-type T [--limit-iface-out]
 *   -m limit --limit N/sec|min|hour|day --limit-burst B
 *   -j ACCEPT | DROP | RETURN | CHAIN
 *   -g CHAIN
 *   -j MARK --set-xmark 0xV/0xM
 *   -j MASQUERADE [--random-fully]
 *   -j NFLOG [--nflog-prefix "P"] [--nflog-group N] [--nflog-threshold N]
 *   -j LOG --log-prefix "P" [--log-level N]
 *   -j REJECT --reject-with icmp-port-unreachable | tcp-reset | ...
 * Anything else is refused by the parser with a message naming the token.
 *
 * Rules are identified, as Felix does, by their first comment: "cali:" and
 * 16 characters; a rule without one in a built-in chain is foreign and never
 * touched. Chains named cali-* are ours.
 */
#ifndef BRINDLE_IPT_H
#define BRINDLE_IPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <brindle/strbuf.h>
#include <brindle/util.h>

/* iptables chain names: 28 characters at most (the kernel's 29 with the NUL). */
#define IPT_CHAIN_MAX 28
#define IPT_ID_PREFIX "cali:"
#define IPT_ID_LEN 21 /* "cali:" + 16 */

/* --- pure: text <-> kernel entry ------------------------------------------------ */

/*
 * Parse @text (one rule, iptables-save syntax of the subset above) into the
 * kernel's layout: a struct ipt_entry followed by its matches and target,
 * allocated with malloc, in *out (*len bytes). A jump or goto target names a
 * chain in @out's target, as libiptc expects for iptc_append_entry. On error
 * returns -EINVAL and writes "token 7 (--foo): unknown option" style text to
 * @err.
 */
int ipt_rule_parse(const char *text, void **out, size_t *len, struct strbuf *err) must_check;

/*
 * Format an entry (as libiptc hands them out, with the target's chain name
 * given separately when it is a jump) back to the same text. Options outside
 * the subset come out as "-m NAME (unsupported)" so foreign rules can still
 * be logged. Appends to @out.
 */
void ipt_rule_format(const void *entry, const char *jump_target, struct strbuf *out);

/* The rule's id ("cali:..."), copied into @id (IPT_ID_LEN + 1 bytes): false when it has none. */
bool ipt_rule_text_id(const char *text, char *id);

/* --- backends --------------------------------------------------------------------- */

/* One chain as read from the kernel: its rules' ids ("" for a rule without one). */
struct ipt_chain_state {
	char name[IPT_CHAIN_MAX + 1];
	bool builtin;
	char (*ids)[IPT_ID_LEN + 1];
	char **targets; /* each rule's target: "ACCEPT", a chain name, "MARK", ... */
	size_t n;
};

struct ipt_table_state {
	struct ipt_chain_state *chains;
	size_t n;
};

void ipt_table_state_free(struct ipt_table_state *t);
const struct ipt_chain_state *ipt_table_state_chain(const struct ipt_table_state *t,
						     const char *name);

struct ipt;

/*
 * A write session on one table ("filter", "nat", "mangle", "raw"): begin
 * takes the xtables lock (waiting at most the configured time) and reads the
 * table; the edits work on that copy, positions 0-based as read and as edited
 * so far; commit writes it in one replace and releases the lock; abort
 * releases without writing. Only one session at a time per struct ipt.
 * Errors: -EBUSY when the lock was not had in time, -ENOENT for an unknown
 * chain or position, -EEXIST for a chain that exists, -EINVAL for a rule that
 * does not parse (message in ipt_last_error), other negative errno from the
 * kernel.
 */
struct ipt_ops {
	int (*begin)(struct ipt *t, const char *table, struct ipt_table_state *out);
	int (*new_chain)(struct ipt *t, const char *chain);
	int (*flush_chain)(struct ipt *t, const char *chain);
	/* The chain must be empty and unreferenced. */
	int (*delete_chain)(struct ipt *t, const char *chain);
	int (*insert)(struct ipt *t, const char *chain, size_t pos, const char *rule);
	int (*append)(struct ipt *t, const char *chain, const char *rule);
	int (*replace)(struct ipt *t, const char *chain, size_t pos, const char *rule);
	int (*delete)(struct ipt *t, const char *chain, size_t pos);
	int (*commit)(struct ipt *t);
	void (*abort)(struct ipt *t);
	void (*close)(struct ipt *t);
};

struct ipt {
	const struct ipt_ops *ops;
	struct strbuf err;
};

/*
 * The kernel backend, in the caller's network namespace. @lock_path is the
 * xtables lock file (NULL: /run/xtables.lock, which iptables itself uses: it
 * is per filesystem, so felix, kube-proxy and the iptables commands of every
 * namespace on the machine share it); @lock_wait_ms bounds the wait for it.
 */
int ipt_open_kernel(const char *lock_path, unsigned lock_wait_ms, struct ipt **out) must_check;
/* The recording backend: empty built-in chains of the four tables, policy ACCEPT. */
struct ipt *ipt_open_recording(void);
void ipt_close(struct ipt *t);
const char *ipt_last_error(const struct ipt *t);

/* Recording backend only: the whole table as iptables-save would print it (for tests). */
void ipt_record_save(struct ipt *t, const char *table, struct strbuf *out);
/* Recording backend only: commits so far, per table name (for tests). */
unsigned ipt_record_commits(struct ipt *t, const char *table);

#endif
