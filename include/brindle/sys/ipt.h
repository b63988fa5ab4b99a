/*
 * iptables tables with a kernel: the kernel backend (lib/sys/ipt_kernel.c,
 * the kernel's own calls on a table edited in place by <brindle/core/ipt_blob.h>)
 * and a recording backend
 * (<brindle/testing/ipt_record.h>, a simulated set of tables for unit tests)
 * behind one table of functions. Rules are text (<brindle/core/ipt_rule.h>).
 */
#ifndef BRINDLE_SYS_IPT_H
#define BRINDLE_SYS_IPT_H

#include <brindle/core/ipt_rule.h>

/* --- backends --------------------------------------------------------------------- */

struct arena;

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
	struct arena *mem; /* owns the ids, targets and their strings */
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
 * table, chain or position or a jump to a missing chain, -EEXIST for a chain
 * that exists, -EMLINK / -ENOTEMPTY for deleting a referenced / non-empty
 * chain, -EINVAL for a rule that does not parse, a bad chain name or an edit
 * outside a session, -EINPROGRESS for a second begin, other negative errno
 * from the kernel (commit: -ELOOP for jumps that loop); the message is in
 * ipt_last_error. A failed edit leaves the session open and unchanged; a
 * failed commit ends it.
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
	/*
	 * A digest of @table as it is now, for noticing someone else's change
	 * between sessions (no lock, nothing parsed; works outside a session).
	 * With @rules, of every rule, packet and byte counters left out: equal
	 * digests, same rules. Without, of the table's header only (its size,
	 * number of entries, where each built-in chain starts): it changes when
	 * a rule or chain is added or removed or a rule changes size, not when a
	 * rule is rewritten in place to the same size, and costs microseconds
	 * where the full digest costs what the kernel's copy of the table does.
	 */
	int (*fingerprint)(struct ipt *t, const char *table, bool rules, uint64_t *out);
	void (*close)(struct ipt *t);
};

struct ipt {
	const struct ipt_ops *ops;
	struct strbuf err;
	const struct ipt_sets *sets;
};

/*
 * Typed calls on a handle (what callers use; the table is the backends'). One
 * session per table: begin reads the table's state, the edits are staged,
 * commit writes them at once (abort drops them).
 */
static inline must_check int ipt_begin(struct ipt *t, const char *table,
				       struct ipt_table_state *out)
{
	return t->ops->begin(t, table, out);
}
static inline must_check int ipt_new_chain(struct ipt *t, const char *chain)
{
	return t->ops->new_chain(t, chain);
}
static inline must_check int ipt_flush_chain(struct ipt *t, const char *chain)
{
	return t->ops->flush_chain(t, chain);
}
static inline must_check int ipt_delete_chain(struct ipt *t, const char *chain)
{
	return t->ops->delete_chain(t, chain);
}
static inline must_check int ipt_insert(struct ipt *t, const char *chain, size_t pos,
					const char *rule)
{
	return t->ops->insert(t, chain, pos, rule);
}
static inline must_check int ipt_append(struct ipt *t, const char *chain, const char *rule)
{
	return t->ops->append(t, chain, rule);
}
static inline must_check int ipt_replace(struct ipt *t, const char *chain, size_t pos,
					 const char *rule)
{
	return t->ops->replace(t, chain, pos, rule);
}
static inline must_check int ipt_delete(struct ipt *t, const char *chain, size_t pos)
{
	int (*remove)(struct ipt *, const char *, size_t) = t->ops->delete;
	return remove(t, chain, pos);
}
static inline must_check int ipt_commit(struct ipt *t)
{
	return t->ops->commit(t);
}
static inline void ipt_abort(struct ipt *t)
{
	t->ops->abort(t);
}
static inline must_check int ipt_fingerprint(struct ipt *t, const char *table, bool rules,
					     uint64_t *out)
{
	return t->ops->fingerprint(t, table, rules, out);
}

/*
 * The kernel backend, in the caller's network namespace: iptables for @af
 * AF_INET, ip6tables for AF_INET6 (rules parsed as that family's;
 * -EAFNOSUPPORT for another). @lock_path is the xtables lock file (NULL:
 * /run/xtables.lock, which iptables and ip6tables use: it is per filesystem,
 * so felix, kube-proxy and the iptables commands of every namespace on the
 * machine share it); @lock_wait_ms bounds the wait for it.
 */
int ipt_open_kernel(int af, const char *lock_path, unsigned lock_wait_ms,
		    struct ipt **out) must_check;
void ipt_close(struct ipt *t);
const char *ipt_last_error(const struct ipt *t);

#endif
