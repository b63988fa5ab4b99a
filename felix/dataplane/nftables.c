/*
 * The nftables writer: the same desired tables and ip sets as the iptables
 * and ip sets writers, written into nf_tables tables of Brindle's own
 * ("brindle-filter", "brindle-nat", family ip), in one atomic batch per
 * apply. Each table's hooks (what the iptables writer puts into INPUT,
 * FORWARD, ...) are base chains of the same names on those hooks, at
 * iptables' priorities; the sets a table's rules look up live in that table.
 * Nothing outside these tables is read or written.
 *
 * A read dumps both tables: each chain is compared with the wanted one by a signature of its
 * rules' ids, each map element by element, each set by element, at the turn after the read.
 * Between reads the writer keeps only the sets (struct mset, nft_sets.h) and trusts the
 * calculation's marks for the rest: a chain or map element is marked when it is made, goes
 * or is rendered with other rules (an endpoint's chains are made again when it changes), and
 * each mark says whether it was in the table before, which is all a write needs. A chain
 * that differs is flushed and appended again whole in the same batch, so a change costs what
 * the chain holds, not what the table does; set members join and leave element by element.
 * Check compares the ruleset's generation with the one felix's last commit left; anyone else's
 * commit since, or a failed commit (the marks were taken), has the next turn read back.
 */
#include "dataplane/nft_sets.h"
#include "dataplane/writer.h"

#include <brindle/core/hash.h>
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

/*
 * A chain as a read found it: a signature of its rules' ids in order, as the value of the
 * table's map of chains (no allocation of its own: there are thousands). A chain whose
 * signature differs from the wanted one is flushed and written again whole. 0 stands for "not
 * known to be anything wanted": a chain with a rule that has no id (someone else's) never
 * matches.
 */
struct sig {
	struct strbuf ids;
	bool unknown;
};

static void sig_start(struct sig *s)
{
	sb_reset(&s->ids);
	s->unknown = false;
}

static void sig_add(struct sig *s, const char *id)
{
	if (!id[0])
		s->unknown = true;
	sb_adds(&s->ids, id);
	sb_addc(&s->ids, '\n');
}

/* The first 63 bits of the ids' SHA-256, with the low bit set (never 0); 0 when unknown. */
static uint64_t sig_end(const struct sig *s)
{
	if (s->unknown)
		return 0;
	uint8_t d[32];
	hash_digest(HASH_SHA256, s->ids.buf, s->ids.len, d);
	uint64_t v;
	memcpy(&v, d, sizeof(v));
	return v | 1;
}

/* A dispatch map: interface -> the chain its packets go to. */
struct mmap {
	struct hmap ifaces; /* iface -> chain (owned) */
};

struct mtable {
	bool exists;
	struct msets sets;
	/* what a read found, until the turn after it has compared them */
	struct hmap chains; /* name -> signature of its rules (struct sig) */
	struct hmap maps;   /* name -> struct mmap */
	struct hmap odd;    /* sets with names longer than felix's: someone else's, deleted */
};

static void mmap_free(struct mmap *mm)
{
	if (mm) {
		for (struct hmap_iter it = hmap_iter(&mm->ifaces); hmap_next(&it);)
			free(it.value);
		hmap_clear(&mm->ifaces);
		free(mm);
	}
}

static void mtable_clear(struct mtable *m)
{
	for (struct hmap_iter it = hmap_iter(&m->maps); hmap_next(&it);)
		mmap_free(it.value);
	hmap_clear(&m->maps);
	msets_clear(&m->sets);
	hmap_clear(&m->chains);
	hmap_clear(&m->odd);
	m->exists = false;
}

static void mtable_load(int af, struct mtable *m, const struct nft_table_state *ts, struct sig *sg)
{
	mtable_clear(m);
	m->exists = ts->exists;
	for (size_t i = 0; i < ts->n_chains; i++) {
		const struct nft_chain_state *cs = &ts->chains[i];
		sig_start(sg);
		for (size_t k = 0; k < cs->n; k++)
			sig_add(sg, cs->rules[k].id);
		hmap_put(&m->chains, cs->name, (void *)(uintptr_t)sig_end(sg));
	}
	for (size_t i = 0; i < ts->n_sets; i++) {
		const struct nft_set_state *ss = &ts->sets[i];
		if (strlen(ss->name) > IPT_SET_NAME_MAX) {
			hmap_put(&m->odd, ss->name, (void *)1);
			continue;
		}
		struct mset *s = msets_add(&m->sets, ss->name);
		s->kind = ss->kind;
		mset_set_elems(af, s, ss->elems, ss->n);
	}
	for (size_t i = 0; i < ts->n_maps; i++) {
		const struct nft_map_state *ms = &ts->maps[i];
		struct mmap *mm = xcalloc(1, sizeof(*mm));
		for (size_t k = 0; k < ms->n; k++)
			hmap_put(&mm->ifaces, ms->elems[k].iface, xstrdup(ms->elems[k].chain));
		hmap_put(&m->maps, ms->name, mm);
	}
}

/* --- the writer ------------------------------------------------------------------------ */

struct nftables {
	struct dp_writer w;
	struct nft *nft;
	int af;
	uint64_t *commits;	 /* felix's nftables commits, all families' */
	uint64_t commits_at_gen; /* *commits when gen was taken */
	struct mtable m[PT_TABLES];
	bool compare[PT_TABLES]; /* a read was done: every chain and set compared at the next plan
				  */
	bool known_gen;
	uint32_t gen; /* the generation felix's last commit or read left */
	bool drifted;
	/* the turn being planned */
	struct nft_batch *batch;
	size_t writes, set_writes;
	char problem[300];
	int err;
	struct sig sg;	    /* scratch for chains' signatures */
	uint64_t empty_sig; /* a chain's with no rules */
};

static struct nftables *nft_of(struct dp_writer *w)
{
	return (struct nftables *)w;
}

/* For messages: which family's tables. */
static const char *fam(const struct nftables *x)
{
	return x->af == AF_INET6 ? "nftables (ip6)" : "nftables";
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
		mtable_load(x->af, &x->m[t], &ts, &x->sg);
		nft_table_state_free(&ts);
		x->compare[t] = true;
	}
	if (r < 0) {
		failed(x, "%s: reading Brindle's tables: %s", fam(x), nft_last_error(x->nft));
		return r;
	}
	x->gen = gen;
	x->commits_at_gen = *x->commits;
	x->known_gen = true;
	return 0;
}

/* --- plan ------------------------------------------------------------------------------- */

/* Rule @text (NULL: the dispatch lookup of map @map) appended to @chain. */
static void add_rule(struct nftables *x, enum pt_table t, const char *chain, const char *text,
		     const struct pmap *map)
{
	struct nft_rule_ir ir;
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	if (!text) {
		nft_rule_dispatch(&ir, map->oif, map->root);
	} else if (nft_rule_from_text(x->af, text, &ir, &err) < 0) {
		problem(x, "chain %s: rule \"%s\": %s", chain, text, sb_str(&err));
		sb_free(&err);
		return;
	}
	sb_free(&err);
	nft_batch_add_rule(x->batch, table_name(t), chain, &ir);
	x->writes++;
}

/*
 * A chain felix wants in the table: its rules (a hook's: inserted, then appended); a dispatch
 * map's chain has the map's lookup before them.
 */
struct wanted {
	bool base;
	const struct pmap *map;
	char *const *rules, *const *more;
	size_t n, n_more;
};

static size_t wanted_n(const struct wanted *w)
{
	return (w->map ? 1 : 0) + w->n + w->n_more;
}

/* Rule @k's text (NULL for the map's lookup), and its id into @id ("" when it has none). */
static const char *wanted_rule(const struct wanted *w, size_t k, char *id)
{
	if (w->map && k-- == 0) {
		snprintf(id, IPT_ID_LEN + 1, "%s",
			 w->map->oif ? NFT_DISPATCH_OIF_ID : NFT_DISPATCH_IIF_ID);
		return NULL;
	}
	const char *text = k < w->n ? w->rules[k] : w->more[k - w->n];
	if (!ipt_rule_text_id(text, id))
		id[0] = '\0';
	return text;
}

/* The signature of @w's rules (struct sig). */
static uint64_t wanted_sig(struct nftables *x, const struct wanted *w)
{
	char id[IPT_ID_LEN + 1];
	sig_start(&x->sg);
	for (size_t k = 0, total = wanted_n(w); k < total; k++) {
		wanted_rule(w, k, id);
		sig_add(&x->sg, id);
	}
	return sig_end(&x->sg);
}

/*
 * What the table had of a chain before this turn, as plan_table's list of chains to look at
 * keeps it: CHAIN_ABSENT, CHAIN_SOME (there, its rules unknown: written again), or its
 * signature (odd, never 1).
 */
#define CHAIN_ABSENT ((uint64_t)0)
#define CHAIN_SOME   ((uint64_t)2)

static uint64_t chain_had(const struct nftables *x, enum pt_table t, const struct pol_desired *d,
			  const char *name)
{
	if (x->compare[t]) {
		if (!hmap_has(&x->m[t].chains, name))
			return CHAIN_ABSENT;
		uint64_t sig = (uintptr_t)hmap_get(&x->m[t].chains, name);
		return sig ? sig : CHAIN_SOME;
	}
	/* between reads: marked chains are written (a policy's only when its rules changed) */
	return hmap_get(&d->dirty_chains[t], name) == PMARK_WAS ? CHAIN_SOME : CHAIN_ABSENT;
}

/*
 * Make chain @name, which had @had (made by plan_table when absent), hold @w's rules: when
 * they differ, the chain is flushed and its rules appended again, in the same batch (atomic:
 * a packet sees the old chain or the new one). A change costs what the chain holds, not what
 * the table does.
 */
static void sync_chain(struct nftables *x, enum pt_table t, const char *name,
		       const struct wanted *w, uint64_t had)
{
	uint64_t want = wanted_sig(x, w);
	if (want && want == had)
		return;
	if (had != CHAIN_ABSENT && had != x->empty_sig) {
		nft_batch_flush_chain(x->batch, table_name(t), name);
		x->writes++;
	}
	char id[IPT_ID_LEN + 1];
	for (size_t i = 0, total = wanted_n(w); i < total; i++)
		add_rule(x, t, name, wanted_rule(w, i, id), w->map);
}

/* The sets a rule looks up ("--match-set NAME"), into @names: nftables name -> the ip set's. */
static void sets_of_rule(const char *rule, struct hmap *names)
{
	for (const char *p = rule; (p = strstr(p, "--match-set "));) {
		p += strlen("--match-set ");
		size_t n = strcspn(p, " ");
		char name[IPT_SET_NAME_MAX + 1];
		if (n > 0 && n <= IPT_SET_NAME_MAX) {
			memcpy(name, p, n);
			name[n] = '\0';
			char nft[IPT_SET_NAME_MAX + 1];
			nft_set_name(name, nft);
			if (!hmap_has(names, nft))
				hmap_put(names, nft, xstrdup(name));
		}
	}
}

static void free_names(struct hmap *names)
{
	for (struct hmap_iter it = hmap_iter(names); hmap_next(&it);)
		free(it.value);
	hmap_clear(names);
}

static enum nft_set_kind set_kind(const struct pset *s)
{
	return s->info.type == IPS_HASH_IP_PORT ? NFT_SET_PORTS : NFT_SET_ADDRS;
}

/* The members of a set that joined or left since the last turn, and whether each was one. */
struct mchange {
	const char *member;
	bool was;
};

struct mlist {
	struct mchange *v;
	size_t n, cap;
};

/*
 * Set @name in table @t made to hold what @s wants, whole: created when missing; else
 * compared with the elements the mirror keeps (a read keeps every set's), or, for a set that
 * keeps none (hosts), flushed and filled again in the same batch.
 */
static void sync_set(struct nftables *x, enum pt_table t, const char *name, const struct pset *s)
{
	struct mtable *m = &x->m[t];
	struct mset *ms = msets_get(&m->sets, name);
	enum nft_set_kind kind = set_kind(s);
	if (ms && ms->kind != kind) {
		problem(x, "set %s exists with another key; it is left for the next read", name);
		return;
	}
	if (!ms) {
		nft_batch_add_set(x->batch, table_name(t), name, kind);
		ms = msets_add(&m->sets, name);
		ms->kind = kind;
		ms->stride = mset_stride(x->af, kind);
		x->set_writes++;
	}
	const char **members = xcalloc(s->members.n + 1, sizeof(*members));
	size_t nm = 0;
	for (struct hmap_iter it = hmap_iter(&s->members); hmap_next(&it);)
		members[nm++] = it.key;
	struct nft_elem *want;
	size_t nw, bad;
	bool merged;
	nft_elems_from_members(x->af, kind, members, nm, &want, &nw, &bad, &merged);
	free(members);
	if (bad)
		log_warn("%s: set %s: %zu member%s that do not parse left out", fam(x), name, bad,
			 bad == 1 ? "" : "s");
	bool hosts = !merged;
	for (size_t k = 0; k < nw && hosts; k++)
		hosts = mset_is_host(x->af, kind, &want[k]);
	/* the wanted elements packed once: compared with the mirror's, then kept (unless hosts) */
	uint8_t st = mset_stride(x->af, kind);
	uint8_t *keys = xcalloc(nw + 1, st);
	for (size_t k = 0; k < nw; k++)
		mset_pack(x->af, kind, &want[k], keys + k * st);
	if (ms->hosts) {
		nft_batch_flush_set(x->batch, table_name(t), name);
		if (nw)
			nft_batch_elems(x->batch, table_name(t), name, kind, want, nw, true);
		x->set_writes += 1 + nw;
	} else {
		/* both sorted: what is only in the mirror goes, what is only wanted comes */
		struct nft_elem *del = xcalloc(ms->n + 1, sizeof(*del)),
				*add = xcalloc(nw + 1, sizeof(*add));
		size_t nd = 0, na = 0, i = 0, j = 0;
		while (i < ms->n || j < nw) {
			int c = i == ms->n ? 1
				: j == nw  ? -1
					   : memcmp(ms->keys + i * st, keys + j * st, st);
			if (c < 0)
				mset_unpack(x->af, kind, ms->keys + i++ * st, &del[nd++]);
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
	}
	free(ms->keys);
	ms->keys = NULL;
	ms->n = 0;
	if (hosts) {
		free(keys);
	} else {
		ms->keys = keys;
		ms->n = nw;
	}
	ms->hosts = hosts;
	ms->exact = !merged;
	free(want);
}

/*
 * The changed members of @s, element by element: what joined is added, what left deleted. A
 * set that keeps no elements (hosts) goes by the marks' "was a member"; one that keeps them by
 * its elements. False (nothing queued) when a network joins a hosts set, a joining member
 * would overlap an element, or an element stands for several members (merged): then the whole
 * set is written instead.
 */
static bool sync_members(struct nftables *x, enum pt_table t, const char *name, struct mset *ms,
			 const struct pset *s, const struct mlist *ml)
{
	if (!ms->exact)
		return false;
	struct nft_elem *add = xcalloc(ml->n + 1, sizeof(*add)),
			*del = xcalloc(ml->n + 1, sizeof(*del));
	size_t na = 0, nd = 0;
	bool ok = true;
	unsigned alen = nft_addr_len(x->af);
	uint8_t key[32];
	for (size_t i = 0; i < ml->n && ok; i++) {
		struct nft_elem e;
		bool want = hmap_has(&s->members, ml->v[i].member);
		if (!nft_elem_from_member(x->af, ms->kind, ml->v[i].member, &e))
			continue;
		if (ms->hosts) {
			if (want == ml->v[i].was)
				continue; /* joined and left again (or the other way) since */
			if (!mset_is_host(x->af, ms->kind, &e))
				ok = false;
			else if (want)
				add[na++] = e;
			else
				del[nd++] = e;
			continue;
		}
		mset_pack(x->af, ms->kind, &e, key);
		int at = mset_find(ms, key);
		if (want && at < 0) {
			size_t pos = (size_t)(-at - 1);
			/* an interval set: the one before must end before e, the one after start
			 * after it (a key is lo then hi) */
			const uint8_t *prev = pos > 0 ? ms->keys + (pos - 1) * ms->stride : NULL,
				      *next = pos < ms->n ? ms->keys + pos * ms->stride : NULL;
			if (ms->kind == NFT_SET_ADDRS &&
			    ((prev && memcmp(prev + alen, e.lo, alen) >= 0) ||
			     (next && memcmp(next, e.hi, alen) <= 0)))
				ok = false; /* overlaps: the whole set is compared */
			else
				add[na++] = e;
		} else if (!want && at >= 0) {
			del[nd++] = e;
		}
	}
	if (ok) {
		if (nd)
			nft_batch_elems(x->batch, table_name(t), name, ms->kind, del, nd, false);
		if (na)
			nft_batch_elems(x->batch, table_name(t), name, ms->kind, add, na, true);
		x->set_writes += nd + na;
		if (!ms->hosts)
			mset_edit(x->af, ms, del, nd, add, na);
	}
	free(add);
	free(del);
	return ok;
}

/*
 * The dispatch maps of table @t, in three steps of the batch: maps made (before the rules that
 * look them up), elements added and removed (after their chains are made, before they are
 * deleted), maps no longer wanted deleted (after the rules that looked them up). After a read
 * every map and element is compared with what the read found; between reads only what the
 * calculation marked ("root": a map made or gone, then written whole; "root\niface": an
 * element), each mark saying whether it was there before.
 */
enum maps_step {
	MAPS_MAKE,
	MAPS_ELEMS,
	MAPS_DROP
};

struct map_edits {
	struct nft_map_elem *v;
	size_t n, cap;
};

static void map_edit(struct map_edits *e, const char *iface, const char *chain)
{
	GROW(e->v, e->cap, e->n + 1);
	struct nft_map_elem *me = &e->v[e->n++];
	memset(me, 0, sizeof(*me));
	snprintf(me->iface, sizeof(me->iface), "%s", iface);
	snprintf(me->chain, sizeof(me->chain), "%s", chain ? chain : "");
}

/* Whether map @root was in table @t before this turn. */
static bool map_had(const struct nftables *x, enum pt_table t, const struct pol_desired *d,
		    const char *root)
{
	if (x->compare[t])
		return hmap_has(&x->m[t].maps, root);
	const void *mark = hmap_get(&d->dirty_maps, root);
	return mark ? mark == PMARK_WAS : hmap_has(&d->maps, root);
}

/* @iface's element of map @pm queued into @add, if the chain it goes to is wanted. */
static void map_add(struct nftables *x, enum pt_table t, const struct pol_desired *d,
		    const struct pmap *pm, const char *iface, const char *chain,
		    struct map_edits *add)
{
	if (!hmap_has(&d->tables[t].chains, chain)) {
		problem(x, "dispatch map %s: %s goes to chain %s, which is not wanted", pm->root,
			iface, chain);
		return;
	}
	map_edit(add, iface, chain);
}

static void map_elems(struct nftables *x, enum pt_table t, const struct pol_desired *d,
		      const struct pmap *pm, bool had)
{
	struct map_edits del = { 0 }, add = { 0 };
	const char *name = pm->root;
	bool compare = x->compare[t];
	if (compare) {
		/* the read's elements against the wanted ones */
		const struct mmap *mm = hmap_get(&x->m[t].maps, name);
		for (struct hmap_iter it = mm ? hmap_iter(&mm->ifaces) : (struct hmap_iter){ 0 };
		     mm && hmap_next(&it);) {
			const char *want = hmap_get(&pm->ifaces, it.key);
			if (!want || !streq(want, it.value))
				map_edit(&del, it.key, NULL);
		}
		for (struct hmap_iter it = hmap_iter(&pm->ifaces); hmap_next(&it);) {
			const char *have = mm ? hmap_get(&mm->ifaces, it.key) : NULL;
			if (!have || !streq(have, it.value))
				map_add(x, t, d, pm, it.key, it.value, &add);
		}
	} else if (!had || hmap_has(&d->dirty_maps, name)) {
		/* made, or made again: whole */
		if (had) {
			nft_batch_flush_set(x->batch, table_name(t), name);
			x->writes++;
		}
		for (struct hmap_iter it = hmap_iter(&pm->ifaces); hmap_next(&it);)
			map_add(x, t, d, pm, it.key, it.value, &add);
	} else {
		/* the elements marked */
		size_t len = strlen(name);
		for (struct hmap_iter it = hmap_iter(&d->dirty_maps); hmap_next(&it);) {
			if (strncmp(it.key, name, len) != 0 || it.key[len] != '\n')
				continue;
			const char *iface = it.key + len + 1;
			const char *want = hmap_get(&pm->ifaces, iface);
			if (it.value == PMARK_WAS)
				map_edit(&del, iface, NULL);
			if (want)
				map_add(x, t, d, pm, iface, want, &add);
		}
	}
	if (del.n)
		nft_batch_ifmap_elems(x->batch, table_name(t), name, del.v, del.n, false);
	if (add.n)
		nft_batch_ifmap_elems(x->batch, table_name(t), name, add.v, add.n, true);
	x->writes += del.n + add.n;
	free(del.v);
	free(add.v);
}

static void plan_maps(struct nftables *x, enum pt_table t, const struct pol_desired *d,
		      enum maps_step step)
{
	/* the maps to look at: every one after a read, else those with a mark */
	struct hmap roots = HMAP_INIT;
	if (x->compare[t]) {
		for (struct hmap_iter it = hmap_iter(&d->maps); hmap_next(&it);)
			hmap_put(&roots, it.key, (void *)1);
		for (struct hmap_iter it = hmap_iter(&x->m[t].maps); hmap_next(&it);)
			hmap_put(&roots, it.key, (void *)1);
	} else {
		for (struct hmap_iter it = hmap_iter(&d->dirty_maps); hmap_next(&it);) {
			char root[64];
			snprintf(root, sizeof(root), "%.*s", (int)strcspn(it.key, "\n"), it.key);
			hmap_put(&roots, root, (void *)1);
		}
	}
	for (struct hmap_iter it = hmap_iter(&roots); hmap_next(&it);) {
		const struct pmap *pm = hmap_get(&d->maps, it.key);
		bool had = map_had(x, t, d, it.key);
		if (step == MAPS_MAKE && pm && !had) {
			nft_batch_add_ifmap(x->batch, table_name(t), it.key);
			x->writes++;
		} else if (step == MAPS_ELEMS && pm) {
			map_elems(x, t, d, pm, had);
		} else if (step == MAPS_ELEMS && had) {
			/* going: its elements before the chains they go to */
			nft_batch_flush_set(x->batch, table_name(t), it.key);
			x->writes++;
		} else if (step == MAPS_DROP && !pm && had) {
			nft_batch_del_set(x->batch, table_name(t), it.key);
			x->writes++;
		}
	}
	hmap_clear(&roots);
}

static const struct phook *hook_named(const struct ptable *want, const char *name)
{
	for (size_t i = 0; i < want->n_hooks; i++)
		if (streq(want->hooks[i].chain, name))
			return &want->hooks[i];
	return NULL;
}

static bool wanted_chain(const struct ptable *want, const struct hmap *maps, const char *name,
			 struct wanted *w)
{
	const struct pchain *c = hmap_get(&want->chains, name);
	const struct phook *h = c ? NULL : hook_named(want, name);
	if (!c && !h)
		return false;
	*w = c ? (struct wanted){ .map = maps ? hmap_get(maps, name) : NULL,
				  .rules = c->rules,
				  .n = c->n }
	       : (struct wanted){ .base = true,
				  .rules = h->insert,
				  .n = h->n_insert,
				  .more = h->append,
				  .n_more = h->n_append };
	return true;
}

/*
 * Table @t made what @d wants, in the batch: every chain and set after a read (compare), else
 * the chains the calculation marked (dirty_chains) and the sets it marked. The order within
 * the batch: sets made and filled, new chains, rules (each differing chain's, whole), chains no
 * longer wanted emptied and deleted, sets no longer wanted deleted. Between reads a set goes
 * when the calculation no longer wants it (nothing wanted looks it up then); a read's compare
 * also removes the sets no chain of this table looks up.
 */
static void plan_table(struct nftables *x, enum pt_table t, const struct pol_desired *d,
		       const struct hmap *whole_sets, const struct hmap *member_sets)
{
	const struct ptable *want = &d->tables[t];
	const struct hmap *maps = t == PT_FILTER ? &d->maps : NULL;
	struct mtable *m = &x->m[t];
	bool compare = x->compare[t];
	if (!m->exists) {
		nft_batch_add_table(x->batch, table_name(t));
		m->exists = true;
		x->writes++;
	}
	/* the chains to look at, each with what the table had of it (chain_had) */
	struct hmap todo = HMAP_INIT;
	if (compare) {
		for (struct hmap_iter it = hmap_iter(&want->chains); hmap_next(&it);)
			hmap_put(&todo, it.key, (void *)1);
		for (size_t i = 0; i < want->n_hooks; i++)
			hmap_put(&todo, want->hooks[i].chain, (void *)1);
		for (struct hmap_iter it = hmap_iter(&m->chains); hmap_next(&it);)
			hmap_put(&todo, it.key, (void *)1);
	} else {
		for (struct hmap_iter it = hmap_iter(&d->dirty_chains[t]); hmap_next(&it);)
			hmap_put(&todo, it.key, (void *)1);
	}
	for (struct hmap_iter it = hmap_iter(&todo); hmap_next(&it);)
		hmap_put(&todo, it.key, (void *)(uintptr_t)chain_had(x, t, d, it.key));
	/* 1. the chains made, and the sets their rules look up made and filled, before any rule */
	struct hmap names = HMAP_INIT; /* nftables name -> ip set name, of the todo chains */
	for (struct hmap_iter it = hmap_iter(&todo); hmap_next(&it);) {
		struct wanted w;
		if (!wanted_chain(want, maps, it.key, &w))
			continue;
		if ((uintptr_t)it.value == CHAIN_ABSENT) {
			/* made now, so that every rule of the batch finds its jumps' targets */
			int hook = -1, prio = 0;
			if (w.base && !hook_of(t, it.key, &hook, &prio)) {
				problem(x, "no netfilter hook for %s", (const char *)it.key);
				continue;
			}
			nft_batch_add_chain(x->batch, table_name(t), it.key, hook, prio,
					    t == PT_NAT ? "nat" : "filter");
			x->writes++;
		}
		for (size_t i = 0; i < w.n; i++)
			sets_of_rule(w.rules[i], &names);
		for (size_t i = 0; i < w.n_more; i++)
			sets_of_rule(w.more[i], &names);
	}
	/* the sets: made and filled when new to the table; compared after a read; else brought
	 * up to date as the calculation marked them */
	struct hmap done = HMAP_INIT, changed = HMAP_INIT; /* changed: nftables -> ip set name */
	for (struct hmap_iter it = hmap_iter(&names); hmap_next(&it);) {
		const struct pset *s = hmap_get(&d->sets, it.value);
		if (!s) {
			problem(x, "a rule looks up set %s, which is not desired", (char *)it.value);
		} else if (compare || !msets_get(&m->sets, it.key)) {
			sync_set(x, t, it.key, s);
			hmap_put(&done, it.key, (void *)1);
		}
	}
	if (!compare)
		for (int k = 0; k < 2; k++)
			for (struct hmap_iter it = hmap_iter(k ? member_sets : whole_sets);
			     hmap_next(&it);) {
				char nft[IPT_SET_NAME_MAX + 1];
				nft_set_name(it.key, nft);
				if (msets_get(&m->sets, nft) && !hmap_has(&done, nft))
					hmap_put(&changed, nft, (void *)it.key);
			}
	hmap_clear(&done);
	struct hmap doomed = HMAP_INIT; /* sets to delete once no rule looks them up */
	for (struct hmap_iter it = hmap_iter(&changed); hmap_next(&it);) {
		struct mset *ms = msets_get(&m->sets, it.key);
		const char *ipset = it.value;
		const struct pset *s = hmap_get(&d->sets, ipset);
		if (!s) {
			hmap_put(&doomed, it.key, (void *)1);
			continue;
		}
		const struct mlist *ml = hmap_get(member_sets, ipset);
		if (hmap_has(whole_sets, ipset) || (ml && !sync_members(x, t, it.key, ms, s, ml)))
			sync_set(x, t, it.key, s);
	}
	hmap_clear(&changed);
	if (compare) {
		for (size_t i = 0; i < m->sets.n; i++)
			if (!hmap_has(&names, m->sets.v[i].name))
				hmap_put(&doomed, m->sets.v[i].name, (void *)1);
		for (struct hmap_iter it = hmap_iter(&m->odd); hmap_next(&it);)
			hmap_put(&doomed, it.key, (void *)1);
	}
	free_names(&names);
	/* the dispatch maps, before the rules that look them up */
	if (maps)
		plan_maps(x, t, d, MAPS_MAKE);
	/* 2. rules, chain by chain */
	for (struct hmap_iter it = hmap_iter(&todo); hmap_next(&it);) {
		struct wanted w;
		if (wanted_chain(want, maps, it.key, &w))
			sync_chain(x, t, it.key, &w, (uintptr_t)it.value);
	}
	/* the maps' elements: added once their chains are there, removed before they go */
	if (maps)
		plan_maps(x, t, d, MAPS_ELEMS);
	/* 3. chains no longer wanted: emptied, then deleted (nothing wanted jumps to them now) */
	for (struct hmap_iter it = hmap_iter(&todo); hmap_next(&it);) {
		struct wanted w;
		uint64_t had = (uintptr_t)it.value;
		if (had == CHAIN_ABSENT || wanted_chain(want, maps, it.key, &w))
			continue;
		if (had != x->empty_sig)
			nft_batch_flush_chain(x->batch, table_name(t), it.key);
	}
	for (struct hmap_iter it = hmap_iter(&todo); hmap_next(&it);) {
		struct wanted w;
		if ((uintptr_t)it.value == CHAIN_ABSENT || wanted_chain(want, maps, it.key, &w))
			continue;
		nft_batch_del_chain(x->batch, table_name(t), it.key);
		x->writes++;
	}
	hmap_clear(&todo);
	/* 4. sets no longer wanted: after the rules that looked them up */
	for (struct hmap_iter it = hmap_iter(&doomed); hmap_next(&it);) {
		nft_batch_del_set(x->batch, table_name(t), it.key);
		msets_del(&m->sets, it.key);
		x->set_writes++;
	}
	hmap_clear(&doomed);
	if (maps)
		plan_maps(x, t, d, MAPS_DROP);
	/* what a read found of the chains and maps served this compare; from now on the
	 * calculation's marks say what the table has of them (a failed apply reads again) */
	if (compare) {
		x->compare[t] = false;
		hmap_clear(&m->chains);
		hmap_clear(&m->odd);
		for (struct hmap_iter it = hmap_iter(&m->maps); hmap_next(&it);)
			mmap_free(it.value);
		hmap_clear(&m->maps);
	}
}

static int nft_plan(struct dp_writer *w, const struct dp_input *in)
{
	struct nftables *x = nft_of(w);
	struct pol_desired *d = x->af == AF_INET6 ? in->policy6 : in->policy;
	bool any = false;
	for (int t = 0; t < PT_TABLES; t++)
		any |= x->compare[t] || d->tables[t].dirty;
	any |= d->dirty_sets.n > 0 || d->dirty_members.n > 0 || d->dirty_maps.n > 0;
	for (int t = 0; t < PT_TABLES; t++)
		any |= d->dirty_chains[t].n > 0;
	nft_batch_free(x->batch);
	x->batch = NULL;
	x->writes = x->set_writes = 0;
	x->err = 0;
	x->problem[0] = '\0';
	if (!any)
		return 0;
	x->batch = nft_batch_new(x->nft);
	/* the sets to write whole (made or removed: dirty_sets), and those with members
	 * joining or leaving (dirty_members: "set\nmember", whether it was one before), with
	 * those members */
	struct hmap members = HMAP_INIT;
	for (struct hmap_iter it = hmap_iter(&d->dirty_members); hmap_next(&it);) {
		const char *nl = strchr(it.key, '\n');
		char name[IPT_SET_NAME_MAX + 1];
		if (!nl || (size_t)(nl - it.key) > IPT_SET_NAME_MAX)
			continue;
		snprintf(name, sizeof(name), "%.*s", (int)(nl - it.key), it.key);
		struct mlist *ml = hmap_get(&members, name);
		if (!ml) {
			ml = xcalloc(1, sizeof(*ml));
			hmap_put(&members, name, ml);
		}
		GROW(ml->v, ml->cap, ml->n + 1);
		ml->v[ml->n++] = (struct mchange){ .member = nl + 1, .was = it.value == PMARK_WAS };
	}
	for (int t = 0; t < PT_TABLES; t++)
		plan_table(x, t, d, &d->dirty_sets, &members);
	for (struct hmap_iter it = hmap_iter(&members); hmap_next(&it);) {
		struct mlist *ml = it.value;
		free(ml->v);
		free(ml);
	}
	hmap_clear(&members);
	for (int t = 0; t < PT_TABLES; t++) {
		d->tables[t].dirty = false;
		hmap_clear(&d->dirty_chains[t]);
		msets_fit(&x->m[t].sets);
	}
	hmap_clear(&d->dirty_sets);
	hmap_clear(&d->dirty_members);
	hmap_clear(&d->dirty_maps);
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
		failed(x, "%s: %s (nothing written)", fam(x), x->problem);
		return x->err;
	}
	size_t edits = nft_batch_size(x->batch);
	if (!edits)
		return 0;
	uint64_t t0 = now_ns();
	int r = nft_batch_commit(x->batch);
	double ms = (double)(now_ns() - t0) / 1e6;
	if (r < 0) {
		failed(x, "%s: %s (nothing written)", fam(x), nft_last_error(x->nft));
		return r;
	}
	/* the batch's pages go now, not at the next plan */
	nft_batch_free(x->batch);
	x->batch = NULL;
	st->commits[PT_FILTER]++;
	st->rule_commit_ms = ms;
	st->rule_writes += x->writes;
	st->set_writes += x->set_writes;
	x->known_gen = nft_generation(x->nft, &x->gen) == 0;
	x->commits_at_gen = ++*x->commits;
	if (x->drifted) {
		st->drift_repairs[DP_DRIFT_IPTABLES]++;
		log_warn("%s: someone else changed Brindle's tables; %zu edit%s put them back "
			 "in %.1f ms",
			 fam(x), edits, edits == 1 ? "" : "s", ms);
	} else {
		log_info("%s: %zu edit%s in one batch in %.1f ms", fam(x), edits,
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
	/* felix's other family's commits since: one generation each */
	uint32_t ours = (uint32_t)(*x->commits - x->commits_at_gen);
	if (!x->known_gen || nft_generation(x->nft, &gen) < 0 || gen == x->gen + ours)
		return DP_CHECK_SAME;
	log_debug("%s: the ruleset changed since felix's last look; reading it back", fam(x));
	x->drifted = true;
	return DP_CHECK_READ;
}

static void nft_free_writer(struct dp_writer *w)
{
	struct nftables *x = nft_of(w);
	for (int t = 0; t < PT_TABLES; t++)
		mtable_clear(&x->m[t]);
	nft_batch_free(x->batch);
	sb_free(&x->sg.ids);
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

struct dp_writer *nftables_new(struct dp_report *r, struct nft *nft, int af, uint64_t *commits)
{
	struct nftables *x = xcalloc(1, sizeof(*x));
	x->w.ops = &nftables_ops;
	x->w.report = r;
	x->nft = nft;
	x->af = af;
	x->commits = commits;
	sb_init(&x->sg.ids);
	sig_start(&x->sg);
	x->empty_sig = sig_end(&x->sg);
	for (int t = 0; t < PT_TABLES; t++) { /* a read's findings, dropped whole at its compare */
		hmap_init_bulk(&x->m[t].chains);
		hmap_init_bulk(&x->m[t].odd);
	}
	return &x->w;
}
