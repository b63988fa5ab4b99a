/*
 * Which policies and profiles apply to which local endpoint, in order, and
 * the references that keep their chains in the tables: a policy's chain of a
 * direction exists while some local endpoint's chain of that direction jumps
 * to it. A policy or profile that changes marks the local endpoints it
 * applies to (before and after) for rendering; pol_flush renders them. Pure.
 */
#include "policy_internal.h"

#include <brindle/core/util.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- profiles ----------------------------------------------------------------------------- */

struct pprof *applicable_profile(struct pol *p, const char *name)
{
	struct pprof *pr = hmap_get(&p->profiles, name);
	if (pr)
		return pr;
	pr = xcalloc(1, sizeof(*pr));
	pr->name = xstrdup(name);
	cb_chain_name(pr->chain[0], "cali-pri-", name);
	cb_chain_name(pr->chain[1], "cali-pro-", name);
	/*
	 * A namespace's profile exists with the namespace; until its resource is seen, a default.
	 * A service account's profile carries only labels; until a Profile resource gives them,
	 * one without rules or labels (its pcsa. labels then match nothing).
	 */
	if (str_has_prefix(name, "kns."))
		pr->implicit_p = ppolicy_from_namespace(name + 4, NULL);
	else if (str_has_prefix(name, "ksa."))
		pr->implicit_p = ppolicy_empty_profile(name);
	hmap_put(&p->profiles, name, pr);
	return pr;
}

void applicable_profile_release(struct pol *p, struct pprof *pr)
{
	if (pr->users || pr->explicit_p || pr->ns_known || pr->refs[0] || pr->refs[1])
		return;
	hmap_del(&p->profiles, pr->name);
	ppolicy_free(pr->implicit_p);
	free(pr->name);
	free(pr);
}

/* --- references to policy and profile chains ---------------------------------------------- */

static void pentry_ref(struct pol *p, struct pentry *pe, int dir, int delta)
{
	if (delta > 0) {
		if (pe->refs[dir]++ == 0)
			chains_render_policy(p, pe, dir);
	} else if (--pe->refs[dir] == 0) {
		chains_del(p, PT_FILTER, pe->chain[dir]);
	}
}

/* The same for a policy's preview chain. */
static void pentry_vref(struct pol *p, struct pentry *pe, int dir, int delta)
{
	if (delta > 0) {
		if (pe->vrefs[dir]++ == 0)
			chains_render_preview(p, pe, dir);
	} else if (--pe->vrefs[dir] == 0) {
		chains_del(p, PT_FILTER, pe->vchain[dir]);
	}
}

static void pprof_ref(struct pol *p, struct pprof *pr, int dir, int delta)
{
	if (delta > 0) {
		if (pr->refs[dir]++ == 0)
			chains_render_profile(p, pr, dir);
	} else if (--pr->refs[dir] == 0) {
		chains_del(p, PT_FILTER, pr->chain[dir]);
	}
}

/* --- changes ------------------------------------------------------------------------------ */

void applicable_mark_local(struct pol *p, const struct pep *e)
{
	if (e && e->local)
		hmap_put(&p->dirty_eps, e->key, (void *)1);
}

static bool policy_applies(const struct pol *p, const struct ppolicy *pp, const struct pep *e)
{
	return pp && pp->selector && endpoint_matches(p, e, pp->selector);
}

/* Mark the local endpoints a policy applies to (before or after a change). */
static void mark_applicable(struct pol *p, const struct ppolicy *pp)
{
	if (!pp)
		return;
	for (struct hmap_iter it = hmap_iter(&p->locals); hmap_next(&it);)
		if (policy_applies(p, pp, it.value))
			applicable_mark_local(p, it.value);
}

/* A staged policy changes the preview of the endpoints its enforced counterpart applies to. */
static void mark_target(struct pol *p, const struct ppolicy *pp)
{
	const struct pentry *t = pp && pp->target ? hmap_get(&p->policies, pp->target) : NULL;
	if (t)
		mark_applicable(p, t->p);
}

static void note_log_hash(struct pol *p, const struct ppolicy *pp)
{
	if (!pp)
		return;
	char h[13];
	policy_log_hash(pp->id, h);
	free(hmap_put(&p->log_hashes, h, xstrdup(pp->id)));
}

void applicable_policy_set(struct pol *p, const char *id, struct ppolicy *np)
{
	struct pentry *pe = hmap_get(&p->policies, id);
	if (!pe) {
		if (!np)
			return;
		pe = xcalloc(1, sizeof(*pe));
		cb_chain_name(pe->chain[0], "cali-pi-", id);
		cb_chain_name(pe->chain[1], "cali-po-", id);
		cb_chain_name(pe->vchain[0], "cali-vi-", id);
		cb_chain_name(pe->vchain[1], "cali-vo-", id);
		hmap_put(&p->policies, id, pe);
	}
	mark_applicable(p, pe->p);
	mark_applicable(p, np);
	mark_target(p, pe->p);
	mark_target(p, np);
	ppolicy_free(pe->p);
	pe->p = np;
	/* Kept after a delete: the event log may still see packets it decided. */
	note_log_hash(p, np);
	pe->dirty = true;
	if (!np && pentry_unused(pe)) {
		hmap_del(&p->policies, id);
		free(pe);
	}
}

/* Endpoints that inherit from @pr: their set membership and policies depend on its labels. */
static void profile_labels_changing(struct pol *p, const char *name, bool after)
{
	for (struct hmap_iter it = hmap_iter(&p->eps); hmap_next(&it);) {
		struct pep *e = it.value;
		bool uses = false;
		for (uint32_t i = 0; i < e->n_profiles && !uses; i++)
			uses = streq(e->profiles[i], name);
		if (!uses)
			continue;
		if (after) {
			sets_endpoint_enter(p, e);
			applicable_mark_local(p, e);
		} else {
			sets_endpoint_leave(p, e);
		}
	}
}

void applicable_profile_set(struct pol *p, const char *name, struct ppolicy *explicit_p,
			    bool from_resource, const struct br_labels *ns_labels, bool ns_event,
			    bool ns_deleted)
{
	struct pprof *pr = applicable_profile(p, name);
	profile_labels_changing(p, name, false);
	if (from_resource) {
		ppolicy_free(pr->explicit_p);
		pr->explicit_p = explicit_p;
		note_log_hash(p, explicit_p);
	}
	if (ns_event) {
		ppolicy_free(pr->implicit_p);
		pr->implicit_p = ppolicy_from_namespace(name + 4, ns_deleted ? NULL : ns_labels);
		pr->ns_known = !ns_deleted;
	}
	note_log_hash(p, pr->implicit_p);
	pr->dirty = true;
	profile_labels_changing(p, name, true);
	applicable_profile_release(p, pr);
}

/* --- local endpoints ---------------------------------------------------------------------- */

/* Tiers by order (then name), and within a tier the policies by order, then id. */
static int cmp_pentry(const void *a, const void *b, void *ctx)
{
	const struct pol *p = ctx;
	const struct pentry *x = *(struct pentry *const *)a, *y = *(struct pentry *const *)b;
	if (!streq(x->p->tier, y->p->tier)) {
		double ox = pol_tier(p, x->p->tier).order, oy = pol_tier(p, y->p->tier).order;
		if (ox != oy)
			return ox < oy ? -1 : 1;
		return strcmp(x->p->tier, y->p->tier);
	}
	return ppolicy_cmp(x->p, y->p);
}

/* A growable list of policy entries. */
struct plist {
	struct pentry **v;
	uint32_t n, cap;
};

static void plist_add(struct plist *l, struct pentry *pe)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 8;
		l->v = xrealloc(l->v, sizeof(*l->v) * l->cap);
	}
	l->v[l->n++] = pe;
}

static bool tier_in(const struct plist *l, const char *tier)
{
	for (uint32_t i = 0; i < l->n; i++)
		if (streq(l->v[i]->p->tier, tier))
			return true;
	return false;
}

/* Is enforced policy @id replaced or deleted by a staged policy in @st? */
static bool staged_replaces(const struct plist *st, const char *id)
{
	for (uint32_t i = 0; i < st->n; i++)
		if (streq(st->v[i]->p->target, id))
			return true;
	return false;
}

/*
 * The staged preview of @e in direction @d (see plocal.view): @pol its enforced policies, @st
 * every previewed staged policy. A tier is previewed when a staged policy applies to @e in it
 * or replaces or deletes one of its policies that does; it then holds its enforced policies
 * less those replaced, and the staged ones that apply (stagedAction Set).
 */
static void local_compute_view(struct pol *p, struct pep *e, int d, struct pentry **pol, uint32_t n,
			       const struct plist *st, struct pentry ***view, uint32_t *n_view)
{
	struct plist tiers = { 0 }, v = { 0 };
	for (uint32_t i = 0; i < st->n; i++) {
		const struct ppolicy *sp = st->v[i]->p;
		if ((d == 0 ? sp->ingress : sp->egress) && policy_applies(p, sp, e)) {
			plist_add(&tiers, st->v[i]);
			plist_add(&v, st->v[i]);
		}
	}
	for (uint32_t i = 0; i < n; i++)
		if (staged_replaces(st, pol[i]->p->id) && !tier_in(&tiers, pol[i]->p->tier))
			plist_add(&tiers, pol[i]);
	for (uint32_t i = 0; i < n && tiers.n; i++)
		if (tier_in(&tiers, pol[i]->p->tier) && !staged_replaces(st, pol[i]->p->id))
			plist_add(&v, pol[i]);
	if (v.n > 1)
		qsort_r(v.v, v.n, sizeof(*v.v), cmp_pentry, p);
	free(tiers.v);
	*view = v.v;
	*n_view = v.n;
}

static void local_compute_policies(struct pol *p, struct pep *e, struct pentry ***pol, uint32_t *n,
				   struct pentry ***view, uint32_t *n_view)
{
	size_t cap = 0, k[2] = { 0, 0 };
	struct plist st = { 0 };
	pol[0] = pol[1] = NULL;
	for (struct hmap_iter it = hmap_iter(&p->policies); hmap_next(&it);) {
		struct pentry *pe = it.value;
		const struct ppolicy *pp = pe->p;
		if (pp && pp->staged) {
			if (pp->target)
				plist_add(&st, pe);
			continue;
		}
		if (!policy_applies(p, pp, e))
			continue;
		if (k[0] + k[1] + 2 > cap) {
			cap = cap ? cap * 2 : 8;
			pol[0] = xrealloc(pol[0], sizeof(**pol) * cap);
			pol[1] = xrealloc(pol[1], sizeof(**pol) * cap);
		}
		if (pp->ingress)
			pol[0][k[0]++] = pe;
		if (pp->egress)
			pol[1][k[1]++] = pe;
	}
	for (int d = 0; d < 2; d++) {
		if (k[d] > 1)
			qsort_r(pol[d], k[d], sizeof(*pol[d]), cmp_pentry, p);
		n[d] = (uint32_t)k[d];
		view[d] = NULL;
		n_view[d] = 0;
		/* The preview is written to the event log only: without it, nothing to render. */
		if (st.n && p->rc.event_log)
			local_compute_view(p, e, d, pol[d], n[d], &st, &view[d], &n_view[d]);
	}
	free(st.v);
}

/* Drop what the endpoint's chains referenced. */
static void local_unref(struct pol *p, struct plocal *lo)
{
	for (int d = 0; d < 2; d++) {
		for (uint32_t i = 0; i < lo->n_pol[d]; i++)
			pentry_ref(p, lo->pol[d][i], d, -1);
		free(lo->pol[d]);
		lo->pol[d] = NULL;
		lo->n_pol[d] = 0;
		for (uint32_t i = 0; i < lo->n_view[d]; i++)
			pentry_vref(p, lo->view[d][i], d, -1);
		free(lo->view[d]);
		lo->view[d] = NULL;
		lo->n_view[d] = 0;
		for (uint32_t i = 0; i < lo->n_prof; i++)
			pprof_ref(p, lo->prof[i], d, -1);
	}
	for (uint32_t i = 0; i < lo->n_prof; i++)
		applicable_profile_release(p, lo->prof[i]);
	free(lo->prof);
	lo->prof = NULL;
	lo->n_prof = 0;
}

void applicable_release_local(struct pol *p, struct pep *e)
{
	local_unref(p, e->local);
	chains_drop_endpoint(p, e->local);
}

void applicable_render_local(struct pol *p, struct pep *e)
{
	struct plocal *lo = e->local;
	struct pentry **pol[2], **view[2];
	uint32_t n[2], n_view[2];
	local_compute_policies(p, e, pol, n, view, n_view);
	/* New references first, so shared chains and sets do not flap. */
	for (int d = 0; d < 2; d++) {
		for (uint32_t i = 0; i < n[d]; i++)
			pentry_ref(p, pol[d][i], d, +1);
		for (uint32_t i = 0; i < n_view[d]; i++)
			pentry_vref(p, view[d][i], d, +1);
	}
	struct pprof **prof = e->n_profiles ? xcalloc(e->n_profiles, sizeof(*prof)) : NULL;
	for (uint32_t i = 0; i < e->n_profiles; i++) {
		prof[i] = applicable_profile(p, e->profiles[i]);
		pprof_ref(p, prof[i], 0, +1);
		pprof_ref(p, prof[i], 1, +1);
	}
	local_unref(p, lo);
	lo->pol[0] = pol[0];
	lo->pol[1] = pol[1];
	lo->n_pol[0] = n[0];
	lo->n_pol[1] = n[1];
	for (int d = 0; d < 2; d++) {
		lo->view[d] = view[d];
		lo->n_view[d] = n_view[d];
	}
	lo->prof = prof;
	lo->n_prof = e->n_profiles;
	chains_render_endpoint(p, e);
}
