/*
 * The nftables writer: the same desired tables and ip sets as the iptables
 * and ip sets writers, written into nf_tables tables of Brindle's own
 * ("brindle-filter", "brindle-nat", family ip), in one atomic batch per
 * apply. Each table's hooks (what the iptables writer puts into INPUT,
 * FORWARD, ...) are base chains of the same names on those hooks, at
 * iptables' priorities; the sets a table's rules look up live in that table.
 * Nothing outside these tables is read or written.
 *
 * Read dumps both tables into a mirror: chains with their rules' ids and
 * handles, sets with their elements. Between reads the mirror is trusted: a
 * turn compares the desired chains with it by rule id (a chain that differs
 * keeps the rules before the first difference and has the rest deleted by
 * handle and appended again, so a change costs what the chain holds, not
 * what the table does), and the sets the calculation marked dirty by
 * element. The commit echoes every added rule, so the mirror learns the new
 * handles without a read. Check compares the ruleset's generation with the
 * one felix's last commit left; when someone else committed since, the next
 * turn reads back (kube-proxy's commits cost felix a read, not a write).
 */
#include "dataplane/writer.h"

#include <brindle/sys/nft.h>
#include <brindle/sys/rules_cleanup.h>
#include <brindle/sys/clock.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/netfilter.h>

/* --- the mirror ------------------------------------------------------------------------ */

struct mrule {
	char id[IPT_ID_LEN + 1];
	uint64_t handle;
};

struct mchain {
	bool base;
	struct mrule *rules;
	size_t n, cap;
};

struct mset {
	enum nft_set_kind kind;
	struct nft_elem *elems;
	size_t n;
};

struct mtable {
	bool exists;
	struct hmap chains; /* name -> struct mchain */
	struct hmap sets;   /* name -> struct mset */
};

static void mchain_free(struct mchain *c)
{
	if (c) {
		free(c->rules);
		free(c);
	}
}

static void mset_free(struct mset *s)
{
	if (s) {
		free(s->elems);
		free(s);
	}
}

static void mtable_clear(struct mtable *m)
{
	for (struct hmap_iter it = hmap_iter(&m->chains); hmap_next(&it);)
		mchain_free(it.value);
	for (struct hmap_iter it = hmap_iter(&m->sets); hmap_next(&it);)
		mset_free(it.value);
	hmap_clear(&m->chains);
	hmap_clear(&m->sets);
	m->exists = false;
}

static void mtable_load(struct mtable *m, const struct nft_table_state *ts)
{
	mtable_clear(m);
	m->exists = ts->exists;
	for (size_t i = 0; i < ts->n_chains; i++) {
		const struct nft_chain_state *cs = &ts->chains[i];
		struct mchain *c = xcalloc(1, sizeof(*c));
		c->base = cs->base;
		c->n = c->cap = cs->n;
		c->rules = xcalloc(cs->n + 1, sizeof(*c->rules));
		for (size_t k = 0; k < cs->n; k++) {
			memcpy(c->rules[k].id, cs->rules[k].id, sizeof(c->rules[k].id));
			c->rules[k].handle = cs->rules[k].handle;
		}
		hmap_put(&m->chains, cs->name, c);
	}
	for (size_t i = 0; i < ts->n_sets; i++) {
		const struct nft_set_state *ss = &ts->sets[i];
		struct mset *s = xcalloc(1, sizeof(*s));
		s->kind = ss->kind;
		s->n = ss->n;
		s->elems = xcalloc(ss->n + 1, sizeof(*s->elems));
		memcpy(s->elems, ss->elems, ss->n * sizeof(*s->elems));
		hmap_put(&m->sets, ss->name, s);
	}
}

/* --- the writer ------------------------------------------------------------------------ */

struct nftables {
	struct dp_writer w;
	struct nft *nft;
	struct mtable m[PT_TABLES];
	bool compare[PT_TABLES]; /* every chain and set compared at the next turn */
	bool known_gen;
	uint32_t gen; /* the generation felix's last commit or read left */
	bool drifted;
	/* the turn being planned */
	struct nft_batch *batch;
	size_t writes, set_writes;
	char problem[300];
	int err;
	/* added rules: where their handles go once committed */
	struct pending {
		enum pt_table t;
		char *chain;
		size_t index, slot;
	} * pend;
	size_t n_pend, cap_pend;
};

static struct nftables *nft_of(struct dp_writer *w)
{
	return (struct nftables *)w;
}

static const char *table_name(enum pt_table t)
{
	return t == PT_NAT ? NFT_TABLE_NAT : NFT_TABLE_FILTER;
}

static void failed(struct nftables *x, const char *fmt, ...) printf_like(2, 3);
static void failed(struct nftables *x, const char *fmt, ...)
{
	struct dp_status *st = &x->w.report->status;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(st->policy_problem, sizeof(st->policy_problem), fmt, ap);
	va_end(ap);
	dp_report_error(x->w.report, DP_ERR_IPTABLES, "%s", st->policy_problem);
}

/* The first problem of a turn (nothing is then committed). */
static void problem(struct nftables *x, const char *fmt, ...) printf_like(2, 3);
static void problem(struct nftables *x, const char *fmt, ...)
{
	if (x->err)
		return;
	x->err = -EINVAL;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(x->problem, sizeof(x->problem), fmt, ap);
	va_end(ap);
}

/* Where the hooks go: the base chains' hooks and priorities, iptables' own. */
static bool hook_of(enum pt_table t, const char *chain, int *hook, int *prio)
{
	static const struct {
		const char *name;
		int hook, filter_prio, nat_prio;
	} hooks[] = {
		{ "PREROUTING", NF_INET_PRE_ROUTING, 0, -100 },
		{ "INPUT", NF_INET_LOCAL_IN, 0, 100 },
		{ "FORWARD", NF_INET_FORWARD, 0, 0 },
		{ "OUTPUT", NF_INET_LOCAL_OUT, 0, -100 },
		{ "POSTROUTING", NF_INET_POST_ROUTING, 0, 100 },
	};
	for (size_t i = 0; i < ARRAY_SIZE(hooks); i++)
		if (streq(hooks[i].name, chain)) {
			*hook = hooks[i].hook;
			*prio = t == PT_NAT ? hooks[i].nat_prio : hooks[i].filter_prio;
			return true;
		}
	return false;
}

/* --- read ------------------------------------------------------------------------------- */

static int nft_read_tables(struct dp_writer *w, const struct dp_input *in)
{
	struct nftables *x = nft_of(w);
	(void)in;
	uint32_t gen;
	int r = nft_generation(x->nft, &gen);
	for (int t = 0; t < PT_TABLES && r == 0; t++) {
		struct nft_table_state ts;
		r = nft_read(x->nft, table_name(t), &ts);
		if (r < 0)
			break;
		mtable_load(&x->m[t], &ts);
		nft_table_state_free(&ts);
		x->compare[t] = true;
	}
	if (r < 0) {
		failed(x, "nftables: reading Brindle's tables: %s", nft_last_error(x->nft));
		return r;
	}
	x->gen = gen;
	x->known_gen = true;
	return 0;
}

/* --- plan ------------------------------------------------------------------------------- */

/* The ids of a desired chain's rules (NULL-terminated strings in @ids). */
static bool rule_id_of(const char *rule, char *id)
{
	return ipt_rule_text_id(rule, id);
}

static void add_rule(struct nftables *x, enum pt_table t, const char *chain, size_t index,
		     const char *text)
{
	struct nft_rule_ir ir;
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	if (nft_rule_from_text(text, &ir, &err) < 0) {
		problem(x, "chain %s: rule \"%s\": %s", chain, text, sb_str(&err));
		sb_free(&err);
		return;
	}
	sb_free(&err);
	size_t slot = nft_batch_add_rule(x->batch, table_name(t), chain, &ir);
	GROW(x->pend, x->cap_pend, x->n_pend + 1);
	x->pend[x->n_pend++] =
		(struct pending){ .t = t, .chain = xstrdup(chain), .index = index, .slot = slot };
	x->writes++;
}

/*
 * Make mirror chain @mc (NULL: new, created here) hold @rules: the rules from the first that
 * differs on are deleted and appended again. The mirror is updated as planned; handles of the
 * appended rules come with the commit.
 */
static void sync_chain(struct nftables *x, enum pt_table t, const char *name, bool base,
		       char *const *rules, size_t n, const char *const *more, size_t n_more)
{
	struct mtable *m = &x->m[t];
	struct mchain *mc = hmap_get(&m->chains, name);
	if (!mc) {
		int hook = -1, prio = 0;
		if (base && !hook_of(t, name, &hook, &prio)) {
			problem(x, "no netfilter hook for %s", name);
			return;
		}
		nft_batch_add_chain(x->batch, table_name(t), name, hook, prio,
				    t == PT_NAT ? "nat" : "filter");
		mc = xcalloc(1, sizeof(*mc));
		mc->base = base;
		hmap_put(&m->chains, name, mc);
		x->writes++;
	}
	size_t total = n + n_more, k = 0;
	char id[IPT_ID_LEN + 1];
	for (; k < total && k < mc->n; k++) {
		const char *text = k < n ? rules[k] : more[k - n];
		if (!rule_id_of(text, id) || !streq(id, mc->rules[k].id))
			break;
	}
	if (k == total && k == mc->n)
		return;
	for (size_t i = k; i < mc->n; i++) {
		nft_batch_del_rule(x->batch, table_name(t), name, mc->rules[i].handle);
		x->writes++;
	}
	GROW(mc->rules, mc->cap, total + 1);
	mc->n = total;
	for (size_t i = k; i < total; i++) {
		const char *text = i < n ? rules[i] : more[i - n];
		if (!rule_id_of(text, mc->rules[i].id))
			mc->rules[i].id[0] = '\0';
		mc->rules[i].handle = 0;
		add_rule(x, t, name, i, text);
	}
}

/* The names of the sets a rule looks up ("--match-set NAME"), into @names. */
static void sets_of_rule(const char *rule, struct hmap *names)
{
	for (const char *p = rule; (p = strstr(p, "--match-set "));) {
		p += strlen("--match-set ");
		size_t n = strcspn(p, " ");
		char name[IPT_SET_NAME_MAX + 1];
		if (n > 0 && n <= IPT_SET_NAME_MAX) {
			memcpy(name, p, n);
			name[n] = '\0';
			hmap_put(names, name, (void *)1);
		}
	}
}

static enum nft_set_kind set_kind(const struct pset *s)
{
	return s->info.type == IPS_HASH_IP_PORT ? NFT_SET_PORTS : NFT_SET_ADDRS;
}

/* Set @name in table @t: created when missing, its elements made the desired ones. */
static void sync_set(struct nftables *x, enum pt_table t, const char *name, const struct pset *s,
		     bool compare)
{
	struct mtable *m = &x->m[t];
	struct mset *ms = hmap_get(&m->sets, name);
	enum nft_set_kind kind = set_kind(s);
	if (ms && ms->kind != kind) {
		problem(x, "set %s exists with another key; it is left for the next read", name);
		return;
	}
	if (!ms) {
		nft_batch_add_set(x->batch, table_name(t), name, kind);
		ms = xcalloc(1, sizeof(*ms));
		ms->kind = kind;
		hmap_put(&m->sets, name, ms);
		x->set_writes++;
	} else if (!compare) {
		return;
	}
	const char **members = xcalloc(s->members.n + 1, sizeof(*members));
	size_t nm = 0;
	for (struct hmap_iter it = hmap_iter(&s->members); hmap_next(&it);)
		members[nm++] = it.key;
	struct nft_elem *want;
	size_t nw, bad;
	nft_elems_from_members(kind, members, nm, &want, &nw, &bad);
	free(members);
	if (bad)
		log_warn("nftables: set %s: %zu member%s that do not parse left out", name, bad,
			 bad == 1 ? "" : "s");
	/* both sorted: what is only in the mirror goes, what is only wanted comes */
	struct nft_elem *del = xcalloc(ms->n + 1, sizeof(*del)),
			*add = xcalloc(nw + 1, sizeof(*add));
	size_t nd = 0, na = 0, i = 0, j = 0;
	while (i < ms->n || j < nw) {
		int c = i == ms->n ? 1 : j == nw ? -1 : nft_elem_cmp(&ms->elems[i], &want[j]);
		if (c < 0)
			del[nd++] = ms->elems[i++];
		else if (c > 0)
			add[na++] = want[j++];
		else
			i++, j++;
	}
	if (nd)
		nft_batch_elems(x->batch, table_name(t), name, kind, del, nd, false);
	if (na)
		nft_batch_elems(x->batch, table_name(t), name, kind, add, na, true);
	x->set_writes += nd + na;
	free(del);
	free(add);
	free(ms->elems);
	ms->elems = want;
	ms->n = nw;
}

static bool is_hook(const struct ptable *want, const char *name)
{
	for (size_t i = 0; i < want->n_hooks; i++)
		if (streq(want->hooks[i].chain, name))
			return true;
	return false;
}

static void plan_table(struct nftables *x, enum pt_table t, const struct pol_desired *d,
		       const struct hmap *changed_sets)
{
	const struct ptable *want = &d->tables[t];
	struct mtable *m = &x->m[t];
	bool compare = x->compare[t];
	if (!m->exists) {
		nft_batch_add_table(x->batch, table_name(t));
		m->exists = true;
		x->writes++;
	}
	/* the sets its rules look up: made and filled before the rules */
	struct hmap used = HMAP_INIT;
	for (struct hmap_iter it = hmap_iter(&want->chains); hmap_next(&it);) {
		const struct pchain *c = it.value;
		for (uint32_t i = 0; i < c->n; i++)
			sets_of_rule(c->rules[i], &used);
	}
	for (size_t i = 0; i < want->n_hooks; i++) {
		const struct phook *h = &want->hooks[i];
		for (uint32_t k = 0; k < h->n_insert; k++)
			sets_of_rule(h->insert[k], &used);
		for (uint32_t k = 0; k < h->n_append; k++)
			sets_of_rule(h->append[k], &used);
	}
	for (struct hmap_iter it = hmap_iter(&used); hmap_next(&it);) {
		const struct pset *s = hmap_get(&d->sets, it.key);
		if (!s) {
			problem(x, "a rule looks up set %s, which is not desired", it.key);
			continue;
		}
		sync_set(x, t, it.key, s, compare || hmap_has(changed_sets, it.key));
	}
	/* chains: the new ones exist before any rule jumps to them */
	for (struct hmap_iter it = hmap_iter(&want->chains); hmap_next(&it);)
		if (!hmap_has(&m->chains, it.key)) {
			nft_batch_add_chain(x->batch, table_name(t), it.key, -1, 0, NULL);
			struct mchain *mc = xcalloc(1, sizeof(*mc));
			hmap_put(&m->chains, it.key, mc);
			x->writes++;
		}
	if (compare || want->dirty) {
		for (struct hmap_iter it = hmap_iter(&want->chains); hmap_next(&it);) {
			const struct pchain *c = it.value;
			sync_chain(x, t, c->name, false, c->rules, c->n, NULL, 0);
		}
		for (size_t i = 0; i < want->n_hooks; i++) {
			const struct phook *h = &want->hooks[i];
			sync_chain(x, t, h->chain, true, h->insert, h->n_insert,
				   (const char *const *)h->append, h->n_append);
		}
		/* chains of ours no longer wanted: emptied, then deleted */
		struct hmap gone = HMAP_INIT;
		for (struct hmap_iter it = hmap_iter(&m->chains); hmap_next(&it);)
			if (!hmap_has(&want->chains, it.key) && !is_hook(want, it.key))
				hmap_put(&gone, it.key, (void *)1);
		for (struct hmap_iter it = hmap_iter(&gone); hmap_next(&it);) {
			struct mchain *mc = hmap_get(&m->chains, it.key);
			if (mc->n)
				nft_batch_flush_chain(x->batch, table_name(t), it.key);
		}
		for (struct hmap_iter it = hmap_iter(&gone); hmap_next(&it);) {
			nft_batch_del_chain(x->batch, table_name(t), it.key);
			mchain_free(hmap_del(&m->chains, it.key));
			x->writes++;
		}
		hmap_clear(&gone);
	}
	/* sets no rule of the table looks up any more: after the rules that did */
	struct hmap unused = HMAP_INIT;
	for (struct hmap_iter it = hmap_iter(&m->sets); hmap_next(&it);)
		if (!hmap_has(&used, it.key))
			hmap_put(&unused, it.key, (void *)1);
	for (struct hmap_iter it = hmap_iter(&unused); hmap_next(&it);) {
		nft_batch_del_set(x->batch, table_name(t), it.key);
		mset_free(hmap_del(&m->sets, it.key));
		x->set_writes++;
	}
	hmap_clear(&unused);
	hmap_clear(&used);
}

static void clear_pending(struct nftables *x)
{
	for (size_t i = 0; i < x->n_pend; i++)
		free(x->pend[i].chain);
	x->n_pend = 0;
}

static int nft_plan(struct dp_writer *w, const struct dp_input *in)
{
	struct nftables *x = nft_of(w);
	struct pol_desired *d = in->policy;
	bool any = false;
	for (int t = 0; t < PT_TABLES; t++)
		any |= x->compare[t] || d->tables[t].dirty;
	any |= d->dirty_sets.n > 0 || d->dirty_members.n > 0;
	nft_batch_free(x->batch);
	x->batch = NULL;
	clear_pending(x);
	x->writes = x->set_writes = 0;
	x->err = 0;
	x->problem[0] = '\0';
	if (!any)
		return 0;
	x->batch = nft_batch_new(x->nft);
	/* the sets to compare: made or removed (dirty_sets), or with a member changed
	 * (dirty_members: "set\nmember") */
	struct hmap changed = HMAP_INIT;
	for (struct hmap_iter it = hmap_iter(&d->dirty_sets); hmap_next(&it);)
		hmap_put(&changed, it.key, (void *)1);
	for (struct hmap_iter it = hmap_iter(&d->dirty_members); hmap_next(&it);) {
		const char *nl = strchr(it.key, '\n');
		char name[IPT_SET_NAME_MAX + 1];
		if (nl && (size_t)(nl - it.key) <= IPT_SET_NAME_MAX) {
			snprintf(name, sizeof(name), "%.*s", (int)(nl - it.key), it.key);
			hmap_put(&changed, name, (void *)1);
		}
	}
	for (int t = 0; t < PT_TABLES; t++)
		plan_table(x, t, d, &changed);
	hmap_clear(&changed);
	for (int t = 0; t < PT_TABLES; t++)
		d->tables[t].dirty = false;
	hmap_clear(&d->dirty_sets);
	hmap_clear(&d->dirty_members);
	return 0;
}

/* --- apply ------------------------------------------------------------------------------ */

static int nft_apply(struct dp_writer *w, const struct dp_input *in)
{
	struct nftables *x = nft_of(w);
	struct dp_status *st = &x->w.report->status;
	(void)in;
	if (!x->batch)
		return 0;
	if (x->err) {
		/* the mirror holds what was planned, not what is: read it back next time */
		failed(x, "nftables: %s (nothing written)", x->problem);
		return x->err;
	}
	size_t edits = nft_batch_size(x->batch);
	if (!edits)
		return 0;
	uint64_t t0 = now_ns();
	int r = nft_batch_commit(x->batch);
	double ms = (double)(now_ns() - t0) / 1e6;
	if (r < 0) {
		failed(x, "nftables: %s (nothing written)", nft_last_error(x->nft));
		return r;
	}
	for (size_t i = 0; i < x->n_pend; i++) {
		const struct pending *p = &x->pend[i];
		struct mchain *mc = hmap_get(&x->m[p->t].chains, p->chain);
		if (mc && p->index < mc->n)
			mc->rules[p->index].handle = nft_batch_rule_handle(x->batch, p->slot);
	}
	for (int t = 0; t < PT_TABLES; t++)
		x->compare[t] = false;
	st->commits[PT_FILTER]++;
	st->rule_writes += x->writes;
	st->set_writes += x->set_writes;
	x->known_gen = nft_generation(x->nft, &x->gen) == 0;
	if (x->drifted) {
		st->drift_repairs[DP_DRIFT_IPTABLES]++;
		log_warn(
			"nftables: someone else changed Brindle's tables; %zu edit%s put them back "
			"in %.1f ms",
			edits, edits == 1 ? "" : "s", ms);
	} else {
		log_info("nftables: %zu edit%s in one batch in %.1f ms", edits,
			 edits == 1 ? "" : "s", ms);
	}
	x->drifted = false;
	return 0;
}

/*
 * Someone's commit since felix's last look (kube-proxy's, the host firewall's, or a change
 * to Brindle's tables): the generation moved. Read back at the next turn.
 */
static enum dp_check nft_check(struct dp_writer *w)
{
	struct nftables *x = nft_of(w);
	uint32_t gen;
	if (!x->known_gen || nft_generation(x->nft, &gen) < 0 || gen == x->gen)
		return DP_CHECK_SAME;
	log_debug("nftables: the ruleset changed since felix's last look; reading it back");
	x->drifted = true;
	return DP_CHECK_READ;
}

static void nft_free_writer(struct dp_writer *w)
{
	struct nftables *x = nft_of(w);
	for (int t = 0; t < PT_TABLES; t++)
		mtable_clear(&x->m[t]);
	nft_batch_free(x->batch);
	clear_pending(x);
	free(x->pend);
	free(x);
}

static const struct dp_writer_ops nftables_ops = {
	.name = "nftables",
	.read = nft_read_tables,
	.plan = nft_plan,
	.apply = nft_apply,
	.check = nft_check,
	.free = nft_free_writer,
};

struct dp_writer *nftables_new(struct dp_report *r, struct nft *nft)
{
	struct nftables *x = xcalloc(1, sizeof(*x));
	x->w.ops = &nftables_ops;
	x->w.report = r;
	x->nft = nft;
	return &x->w;
}
