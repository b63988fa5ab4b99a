/*
 * felix's policy core: datastore updates in, the desired tables and ip sets
 * out (policy.h). This file takes the updates and owns the endpoints' life
 * cycle; pol_flush renders what they changed. The work is in the modules of
 * policy_internal.h.
 */
#include "policy_internal.h"

#include <brindle/sys/log.h>
#include <brindle/core/util.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *pt_table_name(enum pt_table t)
{
	return t == PT_NAT ? "nat" : "filter";
}

/* --- endpoints ---------------------------------------------------------------------------- */

static void pep_free(struct pol *p, struct pep *e)
{
	if (!e)
		return;
	for (uint32_t i = 0; i < e->n_profiles; i++) {
		struct pprof *pr = hmap_get(&p->profiles, e->profiles[i]);
		if (pr) {
			pr->users--;
			applicable_profile_release(p, pr);
		}
	}
	if (e->local)
		applicable_release_local(p, e);
	endpoint_free(p, e);
}

/* Replace the record under @key with @e (NULL: delete). */
static void pep_replace(struct pol *p, const char *key, struct pep *e)
{
	struct pep *old = hmap_get(&p->eps, key);
	bool owner = old && old->local && hmap_get(&p->locals, old->local->iface) == old;
	if (old) {
		sets_endpoint_leave(p, old);
		if (owner) {
			hmap_del(&p->locals, old->local->iface);
			hmap_put(&p->dirty_ifaces, old->local->iface, (void *)1);
			p->n_local_heps -= old->kind == PEP_HEP;
		}
	}
	if (e) {
		for (uint32_t i = 0; i < e->n_profiles; i++)
			applicable_profile(p, e->profiles[i])->users++;
		hmap_put(&p->eps, key, e);
		e->key = hmap_key(&p->eps, key);
		sets_endpoint_enter(p, e);
		if (e->local) {
			struct pep *clash = hmap_get(&p->locals, e->local->iface);
			if (clash && clash != old)
				notice_add(&p->notices, NOTICE_WARNING,
					   "interface %s claimed by %s and %s; using %s",
					   e->local->iface, clash->key, e->key, e->key);
			if (clash && clash != old)
				p->n_local_heps -= clash->kind == PEP_HEP;
			hmap_put(&p->locals, e->local->iface, e);
			p->n_local_heps += e->kind == PEP_HEP;
			hmap_put(&p->dirty_ifaces, e->local->iface, (void *)1);
			hmap_put(&p->dirty_eps, key, (void *)1);
		}
	}
	if (old && old->local && !e)
		hmap_del(&p->dirty_eps, key);
	if (old && old->local && !owner)
		/* another endpoint took the interface: the chains of its name are that one's */
		for (int i = 0; i < 3; i++)
			old->local->chain[i][0] = '\0';
	pep_free(p, old);
	if (!e)
		hmap_del(&p->eps, key); /* after: old->key is the map's copy */
}

/* --- updates ---------------------------------------------------------------------------------- */

#define SA_LABEL "projectcalico.org/serviceaccount"

static bool is_inherited_key(const char *key)
{
	return str_has_prefix(key, "pcns.") || str_has_prefix(key, "pcsa.");
}

/*
 * The labels a workload's selectors see, as Calico's syncer gives them to
 * its felix: none of the pcns./pcsa. keys its namespace and service account
 * lend it (a workload may not claim another namespace's or account's
 * labels), and projectcalico.org/serviceaccount from serviceAccountName.
 * Returns @own itself when nothing changes, else labels in @a (made on use).
 */
static const struct br_labels *wep_labels(const struct br_workloadendpoint *w, struct arena **a,
					  struct br_labels *buf)
{
	const struct br_labels *own = &w->o.meta.labels;
	const char *sa = w->spec.service_account_name;
	const char *had = labels_get(own, SA_LABEL);
	bool change = sa && sa[0] && !(had && streq(had, sa));
	for (size_t i = 0; i < own->n && !change; i++)
		change = is_inherited_key(own->v[i].key);
	if (!change)
		return own;
	*a = arena_new();
	*buf = labels_copy(*a, own);
	for (size_t i = 0; i < buf->n;) {
		if (is_inherited_key(buf->v[i].key))
			labels_del(buf, buf->v[i].key);
		else
			i++;
	}
	if (sa && sa[0])
		labels_set(*a, buf, SA_LABEL, sa);
	return buf;
}

static void wep_update(struct pol *p, const char *key, const struct br_workloadendpoint *w)
{
	if (!w) {
		pep_replace(p, key, NULL);
		return;
	}
	const struct br_wep_spec *s = &w->spec;
	struct arena *a = NULL;
	struct br_labels buf;
	struct pep_src src = {
		.kind = PEP_WEP,
		.ns = w->o.meta.namespace,
		.orchestrator = s->orchestrator,
		.iface = s->interface_name,
		.local = s->node && streq(s->node, p->nodename) && s->interface_name &&
			 s->interface_name[0],
		.labels = wep_labels(w, &a, &buf),
		.profiles = s->profiles,
		.n_profiles = s->n_profiles,
		.nets = s->ip_networks,
		.n_nets = s->n_ip_networks,
		.ports = s->ports,
		.n_ports = s->n_ports,
		.spoof_ok = s->allow_spoofed_source_prefixes,
		.n_spoof_ok = s->n_allow_spoofed_source_prefixes,
	};
	pep_replace(p, key, endpoint_build(p, &src));
	arena_free(a);
}

static void hep_update(struct pol *p, const char *key, const struct br_hostendpoint *h)
{
	if (!h) {
		pep_replace(p, key, NULL);
		return;
	}
	const struct br_hep_spec *s = &h->spec;
	bool local = s->node && streq(s->node, p->nodename);
	if (local &&
	    (!s->interface_name || !s->interface_name[0] || streq(s->interface_name, "*"))) {
		notice_add(&p->notices, NOTICE_WARNING,
			   "HostEndpoint %s: Brindle enforces host endpoint policy on a named "
			   "interface only; this one has %s",
			   h->o.meta.name, s->interface_name ? "\"*\"" : "none");
		local = false;
	}
	struct pep_src src = {
		.kind = PEP_HEP,
		.iface = s->interface_name,
		.local = local,
		.labels = &h->o.meta.labels,
		.profiles = s->profiles,
		.n_profiles = s->n_profiles,
		.nets = s->expected_ips,
		.n_nets = s->n_expected_ips,
		.ports = s->ports,
		.n_ports = s->n_ports,
	};
	pep_replace(p, key, endpoint_build(p, &src));
}

static void netset_update(struct pol *p, const char *key, const struct br_networkset *n)
{
	if (!n) {
		pep_replace(p, key, NULL);
		return;
	}
	struct pep_src src = {
		.kind = PEP_NETSET,
		.ns = n->o.meta.namespace,
		.labels = &n->o.meta.labels,
		.nets = n->spec.nets,
		.n_nets = n->spec.n_nets,
	};
	pep_replace(p, key, endpoint_build(p, &src));
}

static void pool_update(struct pol *p, const char *name, const struct br_ippool *ip)
{
	struct ppool *old = hmap_del(&p->pools, name);
	free(old);
	if (ip) {
		struct ppool *pp = xcalloc(1, sizeof(*pp));
		if (cidr_parse(ip->spec.cidr, false, &pp->cidr) == 0 &&
		    pp->cidr.ip.family == p->af) {
			cidr_mask(&pp->cidr);
			pp->nat_outgoing = ip->spec.nat_outgoing;
			pp->disabled = ip->spec.disabled;
			hmap_put(&p->pools, name, pp);
		} else {
			free(pp);
		}
	}
	p->dirty_static = true;
}

bool pol_update(struct pol *p, const struct ds_update *u)
{
	char key[600];
	snprintf(key, sizeof(key), "%s %s%s%s", u->kind->kind, u->scope ? u->scope : "",
		 u->scope ? "/" : "", u->name);
	switch (u->kind->id) {
	case KIND_WORKLOADENDPOINT:
		wep_update(p, key, (const void *)u->obj);
		return false;
	case KIND_IPPOOL:
		pool_update(p, u->name, (const void *)u->obj);
		return false;
	case KIND_TIER:
		tiers_update(p, u->name, (const void *)u->obj);
		break;
	case KIND_HOSTENDPOINT:
		hep_update(p, key, (const void *)u->obj);
		break;
	case KIND_NETWORKSET:
	case KIND_GLOBALNETWORKSET:
		netset_update(p, key, (const void *)u->obj);
		break;
	case KIND_NETWORKPOLICY:
	case KIND_GLOBALNETWORKPOLICY: {
		bool global = u->kind->id == KIND_GLOBALNETWORKPOLICY;
		struct arena *a = arena_new();
		const char *id = ppolicy_id(a, global ? PK_GNP : PK_NP, u->scope, u->name);
		applicable_policy_set(p, id,
				      u->obj ? ppolicy_from_np(p->af, (const void *)u->obj, global)
					     : NULL);
		arena_free(a);
		break;
	}
	case KIND_K8S_NETWORKPOLICY: {
		struct arena *a = arena_new();
		const char *id = ppolicy_id(a, PK_KNP, u->scope, u->name);
		applicable_policy_set(
			p, id, u->obj ? ppolicy_from_knp(p->af, (const void *)u->obj) : NULL);
		arena_free(a);
		break;
	}
	case KIND_STAGEDNETWORKPOLICY:
	case KIND_STAGEDGLOBALNETWORKPOLICY: {
		bool global = u->kind->id == KIND_STAGEDGLOBALNETWORKPOLICY;
		struct arena *a = arena_new();
		const char *id = ppolicy_id(a, global ? PK_SGNP : PK_SNP, u->scope, u->name);
		applicable_policy_set(
			p, id,
			u->obj ? ppolicy_from_staged_np(p->af, (const void *)u->obj, global)
			       : NULL);
		arena_free(a);
		break;
	}
	case KIND_STAGEDK8SNETWORKPOLICY: {
		struct arena *a = arena_new();
		const char *id = ppolicy_id(a, PK_SKNP, u->scope, u->name);
		applicable_policy_set(p, id,
				      u->obj ? ppolicy_from_staged_knp(p->af, (const void *)u->obj)
					     : NULL);
		arena_free(a);
		break;
	}
	case KIND_PROFILE:
		applicable_profile_set(p, u->name,
				       u->obj ? ppolicy_from_profile(p->af, (const void *)u->obj)
					      : NULL,
				       true, NULL, false, false);
		break;
	case KIND_NAMESPACE: {
		char name[300];
		snprintf(name, sizeof(name), "kns.%s", u->name);
		const struct br_namespace *ns = (const void *)u->obj;
		applicable_profile_set(p, name, NULL, false, ns ? &ns->o.meta.labels : NULL, true,
				       !ns);
		break;
	}
	default:
		return false;
	}
	return true;
}

/* --- flush ------------------------------------------------------------------------------------ */

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void collect_errors(struct pol *p)
{
	for (size_t i = 0; i < p->n_errors; i++)
		free(p->errors[i]);
	p->n_errors = 0;
	size_t cap = p->policies.n + p->profiles.n + 1;
	p->errors = xrealloc(p->errors, sizeof(*p->errors) * cap);
	for (struct hmap_iter it = hmap_iter(&p->policies); hmap_next(&it);) {
		const struct pentry *pe = it.value;
		if (pe->p && pe->p->error)
			p->errors[p->n_errors++] = xstrdup(pe->p->error);
	}
	for (struct hmap_iter it = hmap_iter(&p->profiles); hmap_next(&it);) {
		const struct pprof *pr = it.value;
		const struct ppolicy *pp = prof_effective(pr);
		if (pp && pp->error)
			p->errors[p->n_errors++] = xstrdup(pp->error);
		else if (!pp && pr->users) {
			char why[300];
			snprintf(why, sizeof(why),
				 "Profile %s does not exist (endpoints that use it "
				 "are denied)",
				 pr->name);
			p->errors[p->n_errors++] = xstrdup(why);
		}
	}
	qsort(p->errors, p->n_errors, sizeof(*p->errors), cmp_str);
}

void pol_flush(struct pol *p)
{
	if (p->dirty_all) {
		for (struct hmap_iter it = hmap_iter(&p->locals); hmap_next(&it);)
			applicable_mark_local(p, it.value);
		for (struct hmap_iter it = hmap_iter(&p->policies); hmap_next(&it);)
			((struct pentry *)it.value)->dirty = true;
		for (struct hmap_iter it = hmap_iter(&p->profiles); hmap_next(&it);)
			((struct pprof *)it.value)->dirty = true;
		p->dirty_static = p->dirty_dispatch = true;
		p->dirty_all = false;
	}
	/* Policies and profiles first: endpoints then see their current chains. */
	for (struct hmap_iter it = hmap_iter(&p->policies); hmap_next(&it);) {
		struct pentry *pe = it.value;
		if (!pe->dirty)
			continue;
		pe->dirty = false;
		for (int d = 0; d < 2 && pe->p; d++) {
			if (pe->refs[d])
				chains_render_policy(p, pe, d);
			if (pe->vrefs[d])
				chains_render_preview(p, pe, d);
		}
	}
	for (struct hmap_iter it = hmap_iter(&p->profiles); hmap_next(&it);) {
		struct pprof *pr = it.value;
		if (!pr->dirty)
			continue;
		pr->dirty = false;
		for (int d = 0; d < 2; d++)
			if (pr->refs[d])
				chains_render_profile(p, pr, d);
	}
	for (struct hmap_iter it = hmap_iter(&p->dirty_eps); hmap_next(&it);) {
		struct pep *e = hmap_get(&p->eps, it.key);
		if (e && e->local && hmap_get(&p->locals, e->local->iface) == e)
			applicable_render_local(p, e);
	}
	hmap_clear(&p->dirty_eps);
	/* Policies nobody references any more, deleted while referenced. */
	for (struct hmap_iter it = hmap_iter(&p->policies); hmap_next(&it);) {
		struct pentry *pe = it.value;
		if (!pe->p && pentry_unused(pe)) {
			hmap_del(&p->policies, it.key);
			free(pe);
		}
	}
	if (p->dirty_dispatch || p->dirty_static || p->dirty_ifaces.n) {
		bool heps = chains_have_local_heps(p);
		/* host endpoints came or went: their static rules and dispatch with them */
		if (heps != p->had_heps)
			p->dirty_static = p->dirty_dispatch = true;
		p->had_heps = heps;
	}
	/* Trees are rendered again (a bin at a time); maps take the interfaces that changed. */
	if (p->dirty_dispatch || (p->dirty_ifaces.n && !p->dispatch_maps))
		chains_render_dispatch(p);
	else if (p->dirty_ifaces.n)
		chains_update_dispatch_maps(p);
	p->dirty_dispatch = false;
	hmap_clear(&p->dirty_ifaces);
	if (p->dirty_static) {
		chains_render_static(p);
		p->dirty_static = false;
	}
	sets_forget_unused(p);
	collect_errors(p);
}

static const char *use_set(void *ctx, const struct pset_ref *ref)
{
	/* The chain finds its sets again from its rules' "--match-set" options. */
	return sets_for(ctx, ref)->name;
}

/* --- life cycle ------------------------------------------------------------------------- */

struct pol *pol_new(const char *nodename, int af)
{
	struct pol *p = xcalloc(1, sizeof(*p));
	p->nodename = xstrdup(nodename);
	p->af = af == AF_INET6 ? AF_INET6 : AF_INET;
	p->rc.af = p->af;
	felix_config_defaults(&p->cfg);
	p->marks_ok = pmarks_from_mask(p->cfg.mark_mask, &p->marks) == 0;
	p->rc.cfg = &p->cfg;
	p->rc.marks = p->marks;
	p->rc.use_set = use_set;
	p->rc.ctx = p;
	sb_init(&p->scratch);
	p->dirty_static = p->dirty_dispatch = true;
	/* the marks of what changed: filled by a calculation, emptied whole by the writers */
	hmap_init_bulk(&p->dirty_eps);
	hmap_init_bulk(&p->dirty_ifaces);
	hmap_init_bulk(&p->d.dirty_sets);
	hmap_init_bulk(&p->d.dirty_members);
	for (int t = 0; t < PT_TABLES; t++)
		hmap_init_bulk(&p->d.dirty_chains[t]);
	hmap_init_bulk(&p->d.dirty_maps);
	return p;
}

void pol_set_config(struct pol *p, const struct felix_config *cfg)
{
	p->cfg = *cfg;
	p->marks_ok = pmarks_from_mask(p->cfg.mark_mask, &p->marks) == 0;
	if (!p->marks_ok)
		notice_add(&p->notices, NOTICE_ERROR,
			   "FELIX_IPTABLESMARKMASK 0x%x: needs at least 4 bits", p->cfg.mark_mask);
	p->rc.marks = p->marks;
	p->rc.event_log = cfg->event_log_enabled;
	p->rc.event_log_allowed = cfg->event_log_allowed;
	p->dirty_all = true;
}

void pol_set_dispatch_maps(struct pol *p, bool on)
{
	if (p->dispatch_maps != on)
		p->dirty_dispatch = true;
	p->dispatch_maps = on;
}

void pol_free(struct pol *p)
{
	if (!p)
		return;
	for (struct hmap_iter it = hmap_iter(&p->eps); hmap_next(&it);) {
		struct pep *e = it.value;
		if (e->local) {
			for (int d = 0; d < 2; d++) {
				free(e->local->pol[d]);
				free(e->local->view[d]);
			}
			free(e->local->prof);
		}
		free(e);
	}
	hmap_clear(&p->eps);
	hmap_clear(&p->strings);
	hmap_clear(&p->locals);
	hmap_clear(&p->dirty_ifaces);
	for (struct hmap_iter it = hmap_iter(&p->policies); hmap_next(&it);) {
		struct pentry *pe = it.value;
		ppolicy_free(pe->p);
		free(pe);
	}
	hmap_clear(&p->policies);
	for (struct hmap_iter it = hmap_iter(&p->profiles); hmap_next(&it);) {
		struct pprof *pr = it.value;
		ppolicy_free(pr->explicit_p);
		ppolicy_free(pr->implicit_p);
		free(pr->name);
		free(pr);
	}
	hmap_clear(&p->profiles);
	for (struct hmap_iter it = hmap_iter(&p->pools); hmap_next(&it);)
		free(it.value);
	hmap_clear(&p->pools);
	tiers_free(p);
	chains_free(p);
	sets_free(p);
	hmap_clear(&p->dirty_eps);
	for (struct hmap_iter it = hmap_iter(&p->log_hashes); hmap_next(&it);)
		free(it.value);
	hmap_clear(&p->log_hashes);
	for (size_t i = 0; i < p->n_errors; i++)
		free(p->errors[i]);
	free(p->errors);
	sb_free(&p->scratch);
	free(p->nodename);
	notices_free(&p->notices);
	free(p);
}

struct pol_desired *pol_desired(struct pol *p)
{
	return &p->d;
}

size_t pol_n_errors(const struct pol *p)
{
	return p->n_errors;
}

const char *pol_error(const struct pol *p, size_t i)
{
	return i < p->n_errors ? p->errors[i] : NULL;
}

const char *pol_describe_prefix(const struct pol *p, const char *prefix)
{
	/* "Di:p:<hash>:<rule>" (also r, w): find the policy's id from its hash; "Di:x:<iface>:
	 * <hash>": the tier's ("tier/<name>") */
	if (strlen(prefix) < 5 || prefix[2] != ':' || !strchr("prwx", prefix[3]))
		return NULL;
	const char *h0 = prefix + 5;
	if (prefix[3] == 'x') {
		h0 = strchr(prefix + 5, ':');
		if (!h0)
			return NULL;
		h0++;
	}
	char h[13];
	snprintf(h, sizeof(h), "%.12s", h0);
	return hmap_get(&p->log_hashes, h);
}

const char *pol_endpoint_of_iface(const struct pol *p, const char *iface)
{
	const struct pep *e = hmap_get(&p->locals, iface);
	return e ? e->key : NULL;
}

void pol_stats(const struct pol *p, struct pol_stats *out)
{
	memset(out, 0, sizeof(*out));
	out->policies = p->policies.n;
	out->profiles = p->profiles.n;
	for (struct hmap_iter it = hmap_iter(&p->eps); hmap_next(&it);) {
		const struct pep *e = it.value;
		if (e->kind == PEP_NETSET)
			out->netsets++;
		else
			out->endpoints++;
	}
	out->local_endpoints = p->locals.n;
	for (struct hmap_iter it = hmap_iter(&p->policies); hmap_next(&it);) {
		const struct pentry *pe = it.value;
		out->active_policies += pe->refs[0] || pe->refs[1];
	}
	out->active_sets = p->d.sets.n;
	for (struct hmap_iter it = hmap_iter(&p->d.sets); hmap_next(&it);)
		out->members += ((const struct pset *)it.value)->members.n;
	for (int t = 0; t < PT_TABLES; t++) {
		out->table_chains[t] = p->d.tables[t].chains.n;
		for (struct hmap_iter it = hmap_iter(&p->d.tables[t].chains); hmap_next(&it);)
			out->table_rules[t] += ((const struct pchain *)it.value)->n;
		out->chains += out->table_chains[t];
		out->rules += out->table_rules[t];
	}
}

struct notices *pol_notices(struct pol *p)
{
	return &p->notices;
}
