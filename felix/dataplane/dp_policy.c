/*
 * felix's ip set and iptables writers (see dp_policy.h).
 */
#include "dp_policy.h"

#include <brindle/log.h>
#include <brindle/util.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OUR_SET_PREFIX	 "cali4"
#define OUR_CHAIN_PREFIX "cali-"
#define RETRY_MIN_MS	 100
#define RETRY_MAX_MS	 10000

struct kset {
	enum ips_type type;
};

struct dp_policy {
	struct ipt *ipt;
	struct ips *ips;
	struct dp_policy_status st;
	/* ip sets */
	struct hmap ksets; /* name → struct kset *: ours, as the kernel has them */
	bool sets_resync;
	uint64_t sets_next_refresh;
	struct hmap doomed; /* sets to destroy once no rule uses them → (void *)1 */
	struct ips_batch *batch;
	/* iptables */
	bool tables_resync[PT_TABLES];
	uint64_t tables_next_refresh;
	uint64_t retry_at, retry_ms;
};

struct dp_policy *dp_policy_new(struct ipt *ipt, struct ips *ips)
{
	struct dp_policy *dp = xcalloc(1, sizeof(*dp));
	dp->ipt = ipt;
	dp->ips = ips;
	dp->batch = ips_batch_new();
	dp_policy_request_resync(dp);
	return dp;
}

static void ksets_clear(struct dp_policy *dp)
{
	for (struct hmap_iter it = hmap_iter(&dp->ksets); hmap_next(&it);)
		free(it.value);
	hmap_clear(&dp->ksets);
}

void dp_policy_free(struct dp_policy *dp)
{
	if (!dp)
		return;
	ksets_clear(dp);
	hmap_clear(&dp->doomed);
	ips_batch_free(dp->batch);
	free(dp);
}

void dp_policy_request_resync(struct dp_policy *dp)
{
	dp->sets_resync = true;
	for (int t = 0; t < PT_TABLES; t++)
		dp->tables_resync[t] = true;
}

const struct dp_policy_status *dp_policy_status(const struct dp_policy *dp)
{
	return &dp->st;
}

uint64_t dp_policy_next_deadline(const struct dp_policy *dp)
{
	uint64_t t = 0;
	uint64_t cands[] = { dp->retry_at, dp->sets_next_refresh, dp->tables_next_refresh };
	for (size_t i = 0; i < ARRAY_SIZE(cands); i++)
		if (cands[i] && (!t || cands[i] < t))
			t = cands[i];
	return t;
}

static void failed(struct dp_policy *dp, uint64_t now_ms, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void failed(struct dp_policy *dp, uint64_t now_ms, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(dp->st.problem, sizeof(dp->st.problem), fmt, ap);
	va_end(ap);
	log_error("%s", dp->st.problem);
	dp->st.last_apply_ok = false;
	dp->retry_ms = dp->retry_ms ? dp->retry_ms * 2 : RETRY_MIN_MS;
	if (dp->retry_ms > RETRY_MAX_MS)
		dp->retry_ms = RETRY_MAX_MS;
	dp->retry_at = now_ms + dp->retry_ms;
}

/* --- ip sets ---------------------------------------------------------------------------- */

static void kset_put(struct dp_policy *dp, const char *name, enum ips_type type)
{
	struct kset *k = xcalloc(1, sizeof(*k));
	k->type = type;
	free(hmap_put(&dp->ksets, name, k));
}

static void create_filled(struct dp_policy *dp, const struct pset *s)
{
	ips_batch_create(dp->batch, &s->info);
	for (struct hmap_iter it = hmap_iter(&s->members); hmap_next(&it);)
		ips_batch_add(dp->batch, s->info.name, it.key);
}

/* Every set listed with its members: make them exactly what is desired. */
static int sets_full(struct dp_policy *dp, struct pol_desired *d)
{
	struct ips_list l = { 0 };
	int r = ips_list_sets(dp->ips, OUR_SET_PREFIX, &l);
	if (r < 0)
		return r;
	dp->st.resyncs++;
	ksets_clear(dp);
	struct hmap seen = HMAP_INIT;
	for (size_t i = 0; i < l.n; i++) {
		const struct ips_set *ks = &l.v[i];
		const struct pset *s = hmap_get(&d->sets, ks->info.name);
		kset_put(dp, ks->info.name, ks->info.type);
		if (!s) {
			hmap_put(&dp->doomed, ks->info.name, (void *)1);
			continue;
		}
		hmap_put(&seen, ks->info.name, (void *)1);
		if (ks->info.type != s->info.type) {
			/* Names encode what a set holds; a type change means an old writer. */
			log_warn("ip set %s is %s, wanted %s: recreating it", ks->info.name,
				 ips_type_name(ks->info.type), ips_type_name(s->info.type));
			ips_batch_destroy(dp->batch, ks->info.name);
			create_filled(dp, s);
			continue;
		}
		struct hmap have = HMAP_INIT;
		for (size_t m = 0; m < ks->n; m++) {
			hmap_put(&have, ks->members[m], (void *)1);
			if (!hmap_has(&s->members, ks->members[m]))
				ips_batch_del(dp->batch, ks->info.name, ks->members[m]);
		}
		for (struct hmap_iter it = hmap_iter(&s->members); hmap_next(&it);)
			if (!hmap_has(&have, it.key))
				ips_batch_add(dp->batch, ks->info.name, it.key);
		hmap_clear(&have);
	}
	for (struct hmap_iter it = hmap_iter(&d->sets); hmap_next(&it);) {
		if (hmap_has(&seen, it.key))
			continue;
		const struct pset *s = it.value;
		create_filled(dp, s);
		kset_put(dp, s->info.name, s->info.type);
		hmap_del(&dp->doomed, s->info.name);
	}
	hmap_clear(&seen);
	ips_list_free(&l);
	return 0;
}

/* What changed since the last apply. */
static void sets_delta(struct dp_policy *dp, struct pol_desired *d)
{
	struct hmap created = HMAP_INIT;
	for (struct hmap_iter it = hmap_iter(&d->dirty_sets); hmap_next(&it);) {
		const struct pset *s = hmap_get(&d->sets, it.key);
		bool have = hmap_has(&dp->ksets, it.key);
		if (s && !have) {
			create_filled(dp, s);
			kset_put(dp, it.key, s->info.type);
			hmap_put(&created, it.key, (void *)1);
			hmap_del(&dp->doomed, it.key);
		} else if (s) {
			hmap_del(&dp->doomed, it.key); /* wanted again before it went */
		} else if (have) {
			hmap_put(&dp->doomed, it.key, (void *)1);
		}
	}
	for (struct hmap_iter it = hmap_iter(&d->dirty_members); hmap_next(&it);) {
		const char *nl = strchr(it.key, '\n');
		if (!nl)
			continue;
		char name[IPS_NAME_MAX + 1];
		snprintf(name, sizeof(name), "%.*s", (int)(nl - it.key), it.key);
		const struct pset *s = hmap_get(&d->sets, name);
		if (!s || hmap_has(&created, name) || !hmap_has(&dp->ksets, name))
			continue;
		if (hmap_has(&s->members, nl + 1))
			ips_batch_add(dp->batch, name, nl + 1);
		else
			ips_batch_del(dp->batch, name, nl + 1);
	}
	hmap_clear(&created);
}

static int run_batch(struct dp_policy *dp, uint64_t now_ms)
{
	size_t n = ips_batch_count(dp->batch);
	if (!n)
		return 0;
	int *errs = xcalloc(n, sizeof(*errs));
	int r = ips_apply(dp->ips, dp->batch, errs);
	dp->st.set_writes += n;
	if (r != 0) {
		dp->st.ips_errors++;
		size_t first = 0;
		while (first < n && errs[first] == 0)
			first++;
		failed(dp, now_ms, "ip sets: %s%s%s", r < 0 ? strerror(-r) : "",
		       first < n ? ips_batch_describe(dp->batch, first) : "",
		       ips_last_error(dp->ips) ? ips_last_error(dp->ips) : "");
		dp->sets_resync = true;
		r = r < 0 ? r : -EIO;
	} else if (log_enabled(LOG_DEBUG)) {
		for (size_t i = 0; i < n; i++)
			log_debug("ipset %s", ips_batch_describe(dp->batch, i));
	}
	free(errs);
	ips_batch_reset(dp->batch);
	return r;
}

int dp_policy_apply_sets(struct dp_policy *dp, struct pol_desired *d,
			 const struct felix_config *cfg, uint64_t now_ms)
{
	if (dp->retry_at && now_ms < dp->retry_at) {
		/* Changes in between are not tracked: read everything back at the retry. */
		dp->sets_resync = true;
		return -EAGAIN;
	}
	ips_batch_reset(dp->batch);
	if (cfg->ipsets_refresh_ms && dp->sets_next_refresh && now_ms >= dp->sets_next_refresh)
		dp->sets_resync = true;
	int r;
	if (dp->sets_resync) {
		r = sets_full(dp, d);
		if (r < 0) {
			dp->st.ips_errors++;
			failed(dp, now_ms, "listing ip sets: %s", strerror(-r));
			return r;
		}
		dp->sets_resync = false;
		dp->sets_next_refresh = cfg->ipsets_refresh_ms ? now_ms + cfg->ipsets_refresh_ms : 0;
	} else {
		sets_delta(dp, d);
	}
	r = run_batch(dp, now_ms);
	dp->st.sets = d->sets.n;
	return r;
}

int dp_policy_cleanup(struct dp_policy *dp, struct pol_desired *d)
{
	ips_batch_reset(dp->batch);
	for (struct hmap_iter it = hmap_iter(&dp->doomed); hmap_next(&it);)
		if (!hmap_has(&d->sets, it.key))
			ips_batch_destroy(dp->batch, it.key);
	size_t n = ips_batch_count(dp->batch);
	if (!n)
		return 0;
	int *errs = xcalloc(n, sizeof(*errs));
	int r = ips_apply(dp->ips, dp->batch, errs);
	dp->st.set_writes += n;
	for (size_t i = 0; i < n; i++) {
		const char *desc = ips_batch_describe(dp->batch, i);
		const char *name = strchr(desc, ' ');
		if (!name)
			continue;
		name++;
		if (r >= 0 && errs[i] == 0) {
			free(hmap_del(&dp->ksets, name));
			hmap_del(&dp->doomed, name);
		} else {
			/* Still in use by a rule we could not remove yet: next time. */
			log_info("ip set %s not destroyed yet: %s", name,
				 strerror(r < 0 ? -r : -errs[i]));
		}
	}
	free(errs);
	ips_batch_reset(dp->batch);
	return 0;
}

/* --- iptables --------------------------------------------------------------------------- */

struct session {
	struct dp_policy *dp;
	struct ipt *t;
	size_t writes;
	int err;
	char what[300];
};

static void note(struct session *s, int r, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
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

/* Make kernel chain @k (NULL: just created, empty) hold @c's rules. */
static void sync_chain(struct session *s, const struct pchain *c, const struct ipt_chain_state *k)
{
	uint32_t n_old = k ? (uint32_t)k->n : 0;
	for (uint32_t i = 0; i < c->n; i++) {
		if (i < n_old) {
			if (!same_id(c->rules[i], k->ids[i]))
				note(s, s->t->ops->replace(s->t, c->name, i, c->rules[i]),
				     "replacing rule %u of %s", i, c->name);
		} else {
			note(s, s->t->ops->append(s->t, c->name, c->rules[i]), "appending to %s",
			     c->name);
		}
	}
	for (uint32_t i = n_old; i > c->n; i--)
		note(s, s->t->ops->delete(s->t, c->name, c->n), "deleting from %s", c->name);
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
		ok = same_id(h->insert[i], k->ids[i]);
	for (uint32_t i = 0; ok && i < h->n_append; i++)
		ok = same_id(h->append[i], k->ids[n - h->n_append + i]);
	for (size_t i = h->n_insert; ok && i + h->n_append < n; i++)
		ok = !is_ours(k->ids[i]);
	if (ok)
		return;
	log_info("iptables: our rules in %s are missing or out of place; restoring them",
		 h->chain);
	for (size_t i = n; i-- > 0;)
		if (is_ours(k->ids[i]))
			note(s, s->t->ops->delete(s->t, h->chain, i), "deleting from %s", h->chain);
	for (uint32_t i = 0; i < h->n_insert; i++)
		note(s, s->t->ops->insert(s->t, h->chain, i, h->insert[i]), "inserting into %s",
		     h->chain);
	for (uint32_t i = 0; i < h->n_append; i++)
		note(s, s->t->ops->append(s->t, h->chain, h->append[i]), "appending to %s",
		     h->chain);
}

static int sync_table(struct dp_policy *dp, enum pt_table t, const struct ptable *want,
		      uint64_t now_ms)
{
	struct ipt_table_state k = { 0 };
	const char *name = pt_table_name(t);
	uint64_t t0 = now_ns();
	int r = dp->ipt->ops->begin(dp->ipt, name, &k);
	if (r < 0) {
		dp->st.ipt_errors++;
		failed(dp, now_ms, "iptables %s: reading the table: %s%s%s", name, strerror(-r),
		       ipt_last_error(dp->ipt)[0] ? ": " : "", ipt_last_error(dp->ipt));
		return r;
	}
	struct session s = { .dp = dp, .t = dp->ipt };
	/* Chains first, so every jump has its target. */
	for (struct hmap_iter it = hmap_iter(&want->chains); hmap_next(&it);)
		if (!ipt_table_state_chain(&k, it.key))
			note(&s, s.t->ops->new_chain(s.t, it.key), "creating %s", (const char *)it.key);
	size_t rules = 0;
	for (struct hmap_iter it = hmap_iter(&want->chains); hmap_next(&it);) {
		const struct pchain *c = it.value;
		sync_chain(&s, c, ipt_table_state_chain(&k, c->name));
		rules += c->n;
	}
	for (size_t i = 0; i < want->n_hooks; i++)
		sync_hook(&s, &want->hooks[i], ipt_table_state_chain(&k, want->hooks[i].chain));
	/* Our chains that are not wanted: emptied, then removed (nothing of ours jumps to them now). */
	for (size_t i = 0; i < k.n; i++) {
		const struct ipt_chain_state *c = &k.chains[i];
		if (c->builtin || !str_has_prefix(c->name, OUR_CHAIN_PREFIX) ||
		    hmap_has(&want->chains, c->name))
			continue;
		if (c->n)
			note(&s, s.t->ops->flush_chain(s.t, c->name), "flushing %s", c->name);
	}
	for (size_t i = 0; i < k.n; i++) {
		const struct ipt_chain_state *c = &k.chains[i];
		if (c->builtin || !str_has_prefix(c->name, OUR_CHAIN_PREFIX) ||
		    hmap_has(&want->chains, c->name))
			continue;
		note(&s, s.t->ops->delete_chain(s.t, c->name), "deleting %s", c->name);
	}
	ipt_table_state_free(&k);
	if (s.err) {
		dp->ipt->ops->abort(dp->ipt);
		dp->st.ipt_errors++;
		failed(dp, now_ms, "iptables %s: %s: %s%s%s (nothing written)", name, s.what,
		       strerror(-s.err), ipt_last_error(dp->ipt)[0] ? ": " : "",
		       ipt_last_error(dp->ipt));
		return s.err;
	}
	if (!s.writes) {
		dp->ipt->ops->abort(dp->ipt); /* nothing to write: no commit */
		return 0;
	}
	r = dp->ipt->ops->commit(dp->ipt);
	double ms = (double)(now_ns() - t0) / 1e6;
	if (r < 0) {
		dp->st.ipt_errors++;
		failed(dp, now_ms, "iptables %s: commit: %s%s%s", name, strerror(-r),
		       ipt_last_error(dp->ipt)[0] ? ": " : "", ipt_last_error(dp->ipt));
		return r;
	}
	dp->st.commits[t]++;
	dp->st.rule_writes += s.writes;
	dp->st.last_commit_ms[t] = ms;
	dp->st.rules = rules;
	log_info("iptables %s: %zu change%s in %.1f ms", name, s.writes, s.writes == 1 ? "" : "s",
		 ms);
	return 0;
}

int dp_policy_apply_tables(struct dp_policy *dp, struct pol_desired *d,
			   const struct felix_config *cfg, uint64_t now_ms)
{
	if (dp->retry_at && now_ms < dp->retry_at) {
		for (int t = 0; t < PT_TABLES; t++)
			dp->tables_resync[t] = true;
		return -EAGAIN;
	}
	bool refresh = cfg->iptables_refresh_ms && dp->tables_next_refresh &&
		       now_ms >= dp->tables_next_refresh;
	int ret = 0;
	size_t chains = 0;
	for (int t = 0; t < PT_TABLES; t++) {
		struct ptable *want = &d->tables[t];
		chains += want->chains.n;
		if (!want->dirty && !dp->tables_resync[t] && !refresh)
			continue;
		int r = sync_table(dp, t, want, now_ms);
		if (r < 0) {
			ret = r;
			dp->tables_resync[t] = true;
			continue;
		}
		dp->tables_resync[t] = false;
	}
	if (refresh || !dp->tables_next_refresh)
		dp->tables_next_refresh = cfg->iptables_refresh_ms ? now_ms + cfg->iptables_refresh_ms
								   : 0;
	dp->st.chains = chains;
	if (ret == 0) {
		dp->st.last_apply_ok = true;
		dp->st.problem[0] = '\0';
		dp->retry_at = 0;
		dp->retry_ms = 0;
	}
	return ret;
}
