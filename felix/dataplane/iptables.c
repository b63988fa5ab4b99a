/*
 * The iptables writer: one session per table that needs one, so one
 * commit per table per apply. Ours: chains named cali-*, and the rules whose
 * first comment is "cali:..." in the built-in chains; everything else, in
 * every table and chain, is left as it is.
 *
 * The kernel hands a table out whole at the start of every session, so that is this
 * writer's read-back: read marks every table to be compared at its next
 * turn (at the start, every FELIX_IPTABLESREFRESHINTERVAL, after a failure),
 * plan picks the tables that changed or are to be compared, and apply runs a
 * session for each: read the table, edit what differs (rules compared by id,
 * position by position), commit. A session without an edit writes nothing.
 * Between sessions, check compares digests of each table (ipt_fingerprint)
 * with those the last session left, so a rule someone else removed is
 * compared, and put back, at the next turn.
 */
#include "dataplane/writer.h"

#include <brindle/sys/ipt.h>
#include <brindle/sys/clock.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OUR_CHAIN_PREFIX "cali-"

/* --- the writer --------------------------------------------------------------------------- */

struct iptables {
	struct dp_writer w;
	struct ipt *ipt; /* iptables or ip6tables, as the writer's family */
	int af;
	bool compare[PT_TABLES]; /* compare even if nothing changed (after a read) */
	bool planned[PT_TABLES];
	/* Each table's digests as felix last left it, for check: the header's (known from
	 * every session) and the rules' (taken at the first full check after it). */
	uint64_t head[PT_TABLES], rules[PT_TABLES];
	bool head_known[PT_TABLES], rules_known[PT_TABLES];
	unsigned checks;
	bool drifted[PT_TABLES]; /* check saw it change: the next sync says what it put back */
};

static struct iptables *iptables_of(struct dp_writer *w)
{
	return (struct iptables *)w;
}

static const char *tool(const struct iptables *x)
{
	return x->af == AF_INET6 ? "ip6tables" : "iptables";
}

/* The wanted state of the writer's family. */
static struct pol_desired *wanted(const struct iptables *x, const struct dp_input *in)
{
	return x->af == AF_INET6 ? in->policy6 : in->policy;
}

/* A failure: counted, logged, and the policy dataplane's problem until it works again. */
static void failed(struct iptables *x, const char *fmt, ...) printf_like(2, 3);
static void failed(struct iptables *x, const char *fmt, ...)
{
	struct dp_status *st = &x->w.report->status;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(st->policy_problem, sizeof(st->policy_problem), fmt, ap);
	va_end(ap);
	dp_report_error(x->w.report, DP_ERR_IPTABLES, "%s", st->policy_problem);
}

/* The edits of one session: counted, and the first error kept (nothing is then written). */
struct session {
	struct ipt *t;
	const char *tool; /* "iptables", "ip6tables" */
	size_t writes;
	int err;
	char what[300];
};

static void note(struct session *s, int r, const char *fmt, ...) printf_like(3, 4);
static void note(struct session *s, int r, const char *fmt, ...)
{
	if (r >= 0) {
		s->writes++;
		return;
	}
	if (s->err)
		return;
	s->err = r;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(s->what, sizeof(s->what), fmt, ap);
	va_end(ap);
}

static bool same_id(const char *rule, const char *kid)
{
	char id[IPT_ID_LEN + 1];
	return ipt_rule_text_id(rule, id) && streq(id, kid);
}

/*
 * Is the kernel's rule (@kid, @ktarget) the one @rule says? Its id, which
 * hashes the whole rule, and its target, which the backend names for every rule
 * without decoding the rest: so a rule someone rewrote in place with its
 * comment kept but its verdict changed (a DROP made an ACCEPT) is replaced.
 * The target in our text is the word after its last -j or -g (what follows
 * is the target's options).
 */
static bool same_rule(const char *rule, const char *kid, const char *ktarget)
{
	if (!same_id(rule, kid))
		return false;
	const char *t = NULL;
	for (const char *p = rule; (p = strstr(p, " -")); p++)
		if ((p[2] == 'j' || p[2] == 'g') && p[3] == ' ')
			t = p + 4;
	if (!t)
		return !ktarget || !*ktarget;
	size_t n = strcspn(t, " ");
	return ktarget && strlen(ktarget) == n && memcmp(t, ktarget, n) == 0;
}

/* Make kernel chain @k (NULL: just created, empty) hold @c's rules. */
static void sync_chain(struct session *s, const struct pchain *c, const struct ipt_chain_state *k)
{
	uint32_t n_old = k ? (uint32_t)k->n : 0;
	for (uint32_t i = 0; i < c->n; i++) {
		if (i < n_old) {
			if (!same_rule(c->rules[i], k->ids[i], k->targets[i]))
				note(s, ipt_replace(s->t, c->name, i, c->rules[i]),
				     "replacing rule %u of %s", i, c->name);
		} else {
			note(s, ipt_append(s->t, c->name, c->rules[i]), "appending to %s",
			     c->name);
		}
	}
	for (uint32_t i = n_old; i > c->n; i--)
		note(s, ipt_delete(s->t, c->name, c->n), "deleting from %s", c->name);
}

static bool is_ours(const char *id)
{
	return str_has_prefix(id, IPT_ID_PREFIX);
}

/* Our rules in a built-in chain: ours first (or last), the always-appended ones at the end. */
static void sync_hook(struct session *s, const struct phook *h, const struct ipt_chain_state *k)
{
	size_t n = k ? k->n : 0;
	bool ok = n >= h->n_insert + h->n_append;
	for (uint32_t i = 0; ok && i < h->n_insert; i++)
		ok = same_rule(h->insert[i], k->ids[i], k->targets[i]);
	for (uint32_t i = 0; ok && i < h->n_append; i++)
		ok = same_rule(h->append[i], k->ids[n - h->n_append + i],
			       k->targets[n - h->n_append + i]);
	for (size_t i = h->n_insert; ok && i + h->n_append < n; i++)
		ok = !is_ours(k->ids[i]);
	if (ok)
		return;
	log_info("%s: our rules in %s are missing or out of place; restoring them", s->tool,
		 h->chain);
	for (size_t i = n; i-- > 0;)
		if (is_ours(k->ids[i]))
			note(s, ipt_delete(s->t, h->chain, i), "deleting from %s", h->chain);
	for (uint32_t i = 0; i < h->n_insert; i++)
		note(s, ipt_insert(s->t, h->chain, i, h->insert[i]), "inserting into %s",
		     h->chain);
	for (uint32_t i = 0; i < h->n_append; i++)
		note(s, ipt_append(s->t, h->chain, h->append[i]), "appending to %s", h->chain);
}

/* Is @c a chain of ours that is no longer wanted? */
static bool unwanted(const struct ipt_chain_state *c, const struct ptable *want)
{
	return !c->builtin && str_has_prefix(c->name, OUR_CHAIN_PREFIX) &&
	       !hmap_has(&want->chains, c->name);
}

/* The table's header digest as this session left it; a table without one is not checked. */
static void remember(struct iptables *x, enum pt_table t)
{
	x->head_known[t] = ipt_fingerprint(x->ipt, pt_table_name(t), false, &x->head[t]) == 0;
	x->rules_known[t] = false;
}

static int cmp_chain_name(const void *a, const void *b)
{
	return strcmp((*(const struct pchain *const *)a)->name,
		      (*(const struct pchain *const *)b)->name);
}

static int sync_table(struct iptables *x, enum pt_table t, const struct ptable *want)
{
	struct dp_status *st = &x->w.report->status;
	struct ipt_table_state k = { 0 };
	const char *name = pt_table_name(t);
	uint64_t t0 = now_ns();
	x->head_known[t] = false;
	int r = ipt_begin(x->ipt, name, &k);
	if (r < 0) {
		failed(x, "%s %s: reading the table: %s%s%s", tool(x), name, strerror(-r),
		       ipt_last_error(x->ipt)[0] ? ": " : "", ipt_last_error(x->ipt));
		return r;
	}
	struct session s = { .t = x->ipt, .tool = tool(x) };
	/*
	 * Chains first, so every jump has its target; in name order, the order they take in the
	 * table, so the backend finds new rules already in place (it moves them otherwise).
	 */
	size_t n = 0;
	const struct pchain **order = xmalloc(sizeof(*order) * (want->chains.n + 1));
	for (struct hmap_iter it = hmap_iter(&want->chains); hmap_next(&it);)
		order[n++] = it.value;
	qsort(order, n, sizeof(*order), cmp_chain_name);
	for (size_t i = 0; i < n; i++)
		if (!ipt_table_state_chain(&k, order[i]->name))
			note(&s, ipt_new_chain(s.t, order[i]->name), "creating %s", order[i]->name);
	for (size_t i = 0; i < n; i++)
		sync_chain(&s, order[i], ipt_table_state_chain(&k, order[i]->name));
	free(order);
	for (size_t i = 0; i < want->n_hooks; i++)
		sync_hook(&s, &want->hooks[i], ipt_table_state_chain(&k, want->hooks[i].chain));
	/* Our chains that are not wanted: emptied, then removed (nothing of ours jumps to them
	 * now). */
	for (size_t i = 0; i < k.n; i++)
		if (unwanted(&k.chains[i], want) && k.chains[i].n)
			note(&s, ipt_flush_chain(s.t, k.chains[i].name), "flushing %s",
			     k.chains[i].name);
	for (size_t i = 0; i < k.n; i++)
		if (unwanted(&k.chains[i], want))
			note(&s, ipt_delete_chain(s.t, k.chains[i].name), "deleting %s",
			     k.chains[i].name);
	ipt_table_state_free(&k);
	if (s.err) {
		ipt_abort(x->ipt);
		failed(x, "%s %s: %s: %s%s%s (nothing written)", tool(x), name, s.what,
		       strerror(-s.err), ipt_last_error(x->ipt)[0] ? ": " : "",
		       ipt_last_error(x->ipt));
		return s.err;
	}
	if (!s.writes) {
		ipt_abort(x->ipt); /* nothing to write: no commit */
		x->drifted[t] = false;
		remember(x, t);
		return 0;
	}
	r = ipt_commit(x->ipt);
	double ms = (double)(now_ns() - t0) / 1e6;
	if (r < 0) {
		failed(x, "%s %s: commit: %s%s%s", tool(x), name, strerror(-r),
		       ipt_last_error(x->ipt)[0] ? ": " : "", ipt_last_error(x->ipt));
		return r;
	}
	st->commits[t]++;
	st->rule_writes += s.writes;
	remember(x, t);
	if (x->drifted[t]) {
		st->drift_repairs[DP_DRIFT_IPTABLES]++;
		log_warn("%s %s: someone else changed felix's rules; %zu change%s put them "
			 "back in %.1f ms",
			 tool(x), name, s.writes, s.writes == 1 ? "" : "s", ms);
	} else {
		log_info("%s %s: %zu change%s in %.1f ms", tool(x), name, s.writes,
			 s.writes == 1 ? "" : "s", ms);
	}
	x->drifted[t] = false;
	return 0;
}

static int iptables_read(struct dp_writer *w, const struct dp_input *in)
{
	struct iptables *x = iptables_of(w);
	for (int t = 0; t < PT_TABLES; t++)
		x->compare[t] = true;
	return 0;
}

static int iptables_plan(struct dp_writer *w, const struct dp_input *in)
{
	struct iptables *x = iptables_of(w);
	struct pol_desired *d = wanted(x, in);
	for (int t = 0; t < PT_TABLES; t++) {
		x->planned[t] = d->tables[t].dirty || x->compare[t];
		d->tables[t].dirty = false;
		hmap_clear(&d->dirty_chains[t]); /* tables are compared whole */
	}
	return 0;
}

static int iptables_apply(struct dp_writer *w, const struct dp_input *in)
{
	struct iptables *x = iptables_of(w);
	int ret = 0;
	for (int t = 0; t < PT_TABLES; t++) {
		if (!x->planned[t])
			continue;
		int r = sync_table(x, t, &wanted(x, in)->tables[t]);
		if (r < 0) {
			ret = r;
			continue;
		}
		x->compare[t] = false;
	}
	return ret;
}

/*
 * Each table's header digest against the one felix left, at every check
 * (microseconds: a rule or chain added, removed or resized shows); every
 * FULL_CHECK_EVERY checks, the digest of every rule too (as costly as the
 * kernel's copy of the table, ~15 ms at 7,600 rules), which shows a rule
 * rewritten in place. Any change shows, felix's or not (kube-proxy rewrites
 * its own chains): a changed table is compared at the next turn, which
 * writes only if something of felix's differs.
 */
#define FULL_CHECK_EVERY 30

static bool table_changed(struct iptables *x, enum pt_table t, bool full)
{
	const char *name = pt_table_name(t);
	uint64_t now;
	if (ipt_fingerprint(x->ipt, name, false, &now) < 0)
		return false; /* the next session reports it */
	if (now != x->head[t])
		return true;
	if (!full)
		return false;
	if (ipt_fingerprint(x->ipt, name, true, &now) < 0)
		return false;
	if (!x->rules_known[t]) {
		x->rules[t] = now; /* the first full look since felix's session: the baseline */
		x->rules_known[t] = true;
		return false;
	}
	return now != x->rules[t];
}

static enum dp_check iptables_check(struct dp_writer *w)
{
	struct iptables *x = iptables_of(w);
	enum dp_check verdict = DP_CHECK_SAME;
	bool full = ++x->checks % FULL_CHECK_EVERY == 0;
	for (int t = 0; t < PT_TABLES; t++) {
		if (!x->head_known[t] || !table_changed(x, t, full))
			continue;
		log_debug("%s %s: changed since felix's last look; comparing it", tool(x),
			  pt_table_name(t));
		x->head_known[t] = false;
		x->compare[t] = true;
		x->drifted[t] = true;
		verdict = DP_CHECK_TURN;
	}
	return verdict;
}

static void iptables_free(struct dp_writer *w)
{
	free(w);
}

static const struct dp_writer_ops iptables_ops = {
	.name = "iptables",
	.read = iptables_read,
	.plan = iptables_plan,
	.apply = iptables_apply,
	.check = iptables_check,
	.free = iptables_free,
};

struct dp_writer *iptables_new(struct dp_report *r, struct ipt *ipt, int af)
{
	struct iptables *x = xcalloc(1, sizeof(*x));
	x->af = af;
	x->w.ops = &iptables_ops;
	x->w.report = r;
	x->ipt = ipt;
	return &x->w;
}
