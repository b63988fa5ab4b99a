/*
 * The desired tables of the policy core: every chain felix wants, rendered
 * from the records (a policy's and a profile's chains, a local endpoint's,
 * the interface dispatch trees, the static chains and nat), and our rules in
 * the built-in chains. A chain put into a table takes the ip sets its rules
 * name; one taken out releases them. Pure.
 */
#include "policy_internal.h"

#include <brindle/sys/ipt.h>
#include <brindle/core/util.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- the tables --------------------------------------------------------------------------- */

static bool same_rules(const struct pchain *a, const struct pchain *b)
{
	if (a->n != b->n)
		return false;
	for (size_t i = 0; i < a->n; i++)
		if (!streq(a->rules[i], b->rules[i]))
			return false;
	return true;
}

/* Put @c into table @t (replacing one of the same name), taking its sets. */
static void chains_put(struct pol *p, enum pt_table t, struct pchain *c)
{
	sets_chain_refs(p, c, +1);
	struct pchain *old = hmap_put(&p->d.tables[t].chains, c->name, c);
	if (!old || !same_rules(old, c))
		pol_mark(&p->d.dirty_chains[t], c->name, old != NULL);
	if (old) {
		sets_chain_refs(p, old, -1);
		pchain_free(old);
	}
	p->d.tables[t].dirty = true;
}

void chains_del(struct pol *p, enum pt_table t, const char *name)
{
	struct pchain *old = hmap_del(&p->d.tables[t].chains, name);
	if (!old)
		return;
	pol_mark(&p->d.dirty_chains[t], name, true);
	sets_chain_refs(p, old, -1);
	pchain_free(old);
	p->d.tables[t].dirty = true;
}

/* --- policy and profile chains ------------------------------------------------------------ */

void chains_render_policy(struct pol *p, struct pentry *pe, int dir)
{
	struct chain_builder b;
	cb_start(&b, pe->chain[dir]);
	if (pe->p->error)
		render_fail_closed(&b, pe->p->error);
	else
		render_policy_rules(&b, &p->rc, pe->p, dir == 0);
	chains_put(p, PT_FILTER, cb_finish(&b));
}

/*
 * A policy as the staged preview runs it: its rules log and mark what they would do and
 * return. One that cannot be rendered would deny everything (it fails closed when enforced).
 */
void chains_render_preview(struct pol *p, struct pentry *pe, int dir)
{
	struct chain_builder b;
	cb_start(&b, pe->vchain[dir]);
	struct render_ctx rc = p->rc;
	rc.preview = true;
	if (pe->p->error) {
		char h[13], prefix[64];
		policy_log_hash(pe->p->id, h);
		snprintf(prefix, sizeof(prefix), "D%c:w:%s:-1", dir == 0 ? 'i' : 'o', h);
		render_event_log(&b, dir == 0, prefix);
		cb_target(&b, "-j MARK --set-xmark 0x%x/0x%x", p->marks.scratch0,
			  p->marks.scratch0);
		cb_emit(&b);
	} else {
		render_policy_rules(&b, &rc, pe->p, dir == 0);
	}
	chains_put(p, PT_FILTER, cb_finish(&b));
}

void chains_render_profile(struct pol *p, struct pprof *pr, int dir)
{
	struct chain_builder b;
	cb_start(&b, pr->chain[dir]);
	const struct ppolicy *pp = prof_effective(pr);
	if (!pp) {
		char why[300];
		snprintf(why, sizeof(why), "Profile %s does not exist", pr->name);
		render_fail_closed(&b, why);
	} else if (pp->error) {
		render_fail_closed(&b, pp->error);
	} else {
		render_policy_rules(&b, &p->rc, pp, dir == 0);
	}
	chains_put(p, PT_FILTER, cb_finish(&b));
}

/* --- endpoint chains ---------------------------------------------------------------------- */

/*
 * The staged preview of an endpoint's new connections, before its policies: the previewed
 * tiers (plocal.view) run on the preview chains, each from clear marks; a policy runs while
 * none before it in its tier decided; a tier whose default action is Deny logs what none
 * would allow or pass ("D<d>:x:<iface>:<tier hash>"). The marks are cleared after it, so
 * the policies in force decide alone.
 */
static void render_preview(struct pol *p, struct chain_builder *b, const struct plocal *lo, int dir)
{
	const struct pmarks *m = &p->marks;
	uint32_t all = m->accept | m->pass | m->scratch0;
	for (uint32_t i = 0; i < lo->n_view[dir];) {
		const char *tier = lo->view[dir][i]->p->tier;
		char text[128];
		snprintf(text, sizeof(text), "Staged preview: tier %s", tier);
		cb_comment(b, text);
		cb_target(b, "-j MARK --set-xmark 0x0/0x%x", all);
		cb_emit(b);
		for (; i < lo->n_view[dir] && streq(lo->view[dir][i]->p->tier, tier); i++) {
			cb_match(b, "-m mark --mark 0x0/0x%x", all);
			cb_target(b, "-j %s", lo->view[dir][i]->vchain[dir]);
			cb_emit(b);
		}
		if (pol_tier(p, tier).pass)
			continue;
		char id[80], h[13], prefix[64];
		snprintf(id, sizeof(id), "tier/%s", tier);
		policy_log_hash(id, h);
		free(hmap_put(&p->log_hashes, h, xstrdup(id)));
		snprintf(prefix, sizeof(prefix), "D%c:x:%s:%s", dir == 0 ? 'i' : 'o', lo->iface, h);
		cb_match(b, "-m mark --mark 0x0/0x%x", all);
		render_event_log(b, dir == 0, prefix);
	}
	cb_comment(b, "End of staged preview");
	cb_target(b, "-j MARK --set-xmark 0x0/0x%x", all);
	cb_emit(b);
}

static void render_endpoint_dir(struct pol *p, struct pep *e, int dir)
{
	struct plocal *lo = e->local;
	const struct pmarks *m = &p->marks;
	bool hep = e->kind == PEP_HEP;
	bool ingress = dir == 0;
	char name[32];
	snprintf(name, sizeof(name), "%s%s",
		 hep ? (ingress ? "cali-fh-" : "cali-th-") : (ingress ? "cali-tw-" : "cali-fw-"),
		 lo->iface);
	snprintf(lo->chain[dir], sizeof(lo->chain[dir]), "%s", name);
	struct chain_builder b;
	cb_start(&b, name);
	if (!ingress && lo->chain[2][0]) {
		/* the anti-spoofing chain returns for allowed sources, drops the rest */
		cb_target(&b, "-j %s", lo->chain[2]);
		cb_emit(&b);
	}
	cb_match(&b, "-m conntrack --ctstate RELATED,ESTABLISHED");
	cb_target(&b, "-j ACCEPT");
	cb_emit(&b);
	cb_match(&b, "-m conntrack --ctstate INVALID");
	cb_target(&b, "-j DROP");
	cb_emit(&b);
	cb_target(&b, "-j MARK --set-xmark 0x0/0x%x", m->accept | m->pass);
	cb_emit(&b);
	if (hep) {
		cb_target(&b, "-j %s", ingress ? "cali-failsafe-in" : "cali-failsafe-out");
		cb_emit(&b);
	} else if (!ingress) {
		/* workloads may not send encapsulated traffic of their own */
		cb_comment(&b, "Drop VXLAN encapped packets originating in workloads");
		cb_generic(&b, "-p udp");
		cb_match(&b, "-m multiport --dports %u", p->cfg.vxlan_port);
		cb_target(&b, "-j DROP");
		cb_emit(&b);
		if (p->af == AF_INET) { /* IPIP carries IPv4 */
			cb_comment(&b, "Drop IPinIP encapped packets originating in workloads");
			cb_generic(&b, "-p %s", ipt_proto_name(4));
			cb_target(&b, "-j DROP");
			cb_emit(&b);
		}
	}
	const char *fail = NULL;
	for (uint32_t i = 0; i < lo->n_pol[dir] && !fail; i++)
		fail = lo->pol[dir][i]->p->error;
	for (uint32_t i = 0; i < lo->n_prof && !fail; i++) {
		const struct ppolicy *pp = prof_effective(lo->prof[i]);
		if (!pp)
			fail = "a profile it uses does not exist";
		else
			fail = pp->error;
	}
	if (lo->n_view[dir])
		render_preview(p, &b, lo, dir);
	char prefix[64];
	if (fail) {
		if (p->rc.event_log) {
			snprintf(prefix, sizeof(prefix), "D%c:f:%s", ingress ? 'i' : 'o',
				 lo->iface);
			render_event_log(&b, ingress, prefix);
		}
		render_fail_closed(&b, fail);
		chains_put(p, PT_FILTER, cb_finish(&b));
		return;
	}
	/*
	 * The policies tier by tier (Calico's layout): each tier starts with the pass mark clear;
	 * a policy runs while no earlier one of its tier passed; an accept returns; a tier whose
	 * default action is Deny drops what none of its policies accepted or passed, one whose
	 * default is Pass hands it on. After the last tier, the profiles.
	 */
	for (uint32_t i = 0; i < lo->n_pol[dir];) {
		const char *tier = lo->pol[dir][i]->p->tier;
		char text[128];
		if (i > 0) {
			snprintf(text, sizeof(text), "Start of tier %s", tier);
			cb_comment(&b, text);
			cb_target(&b, "-j MARK --set-xmark 0x0/0x%x", m->pass);
			cb_emit(&b);
		}
		for (; i < lo->n_pol[dir] && streq(lo->pol[dir][i]->p->tier, tier); i++) {
			struct pentry *pe = lo->pol[dir][i];
			cb_match(&b, "-m mark --mark 0x0/0x%x", m->pass);
			cb_target(&b, "-j %s", pe->chain[dir]);
			cb_emit(&b);
			cb_comment(&b, "Return if policy accepted");
			cb_match(&b, "-m mark --mark 0x%x/0x%x", m->accept, m->accept);
			cb_target(&b, "-j RETURN");
			cb_emit(&b);
		}
		if (pol_tier(p, tier).pass)
			continue;
		if (p->rc.event_log) {
			snprintf(prefix, sizeof(prefix), "D%c:e:%s", ingress ? 'i' : 'o',
				 lo->iface);
			cb_match(&b, "-m mark --mark 0x0/0x%x", m->pass);
			render_event_log(&b, ingress, prefix);
		}
		if (streq(tier, "default"))
			cb_comment(&b, "Drop if no policies passed packet");
		else {
			snprintf(text, sizeof(text),
				 "End of tier %s: drop if no policies passed packet", tier);
			cb_comment(&b, text);
		}
		cb_match(&b, "-m mark --mark 0x0/0x%x", m->pass);
		cb_target(&b, "-j DROP");
		cb_emit(&b);
	}
	/* A packet passed on by the last tier goes to the profiles with the pass mark still set,
	 * which the profiles' chains do not look at. */
	for (uint32_t i = 0; i < lo->n_prof; i++) {
		cb_target(&b, "-j %s", lo->prof[i]->chain[dir]);
		cb_emit(&b);
		cb_comment(&b, "Return if profile accepted");
		cb_match(&b, "-m mark --mark 0x%x/0x%x", m->accept, m->accept);
		cb_target(&b, "-j RETURN");
		cb_emit(&b);
	}
	if (p->rc.event_log) {
		snprintf(prefix, sizeof(prefix), "D%c:n:%s", ingress ? 'i' : 'o', lo->iface);
		render_event_log(&b, ingress, prefix);
	}
	cb_comment(&b, "Drop if no profiles matched");
	cb_target(&b, "-j DROP");
	cb_emit(&b);
	chains_put(p, PT_FILTER, cb_finish(&b));
}

/* The anti-spoofing chain of a workload: its own addresses (and allowed prefixes) return. */
static void render_spoof(struct pol *p, struct pep *e)
{
	struct plocal *lo = e->local;
	snprintf(lo->chain[2], sizeof(lo->chain[2]), "cali-sm-%s", lo->iface);
	struct chain_builder b;
	cb_start(&b, lo->chain[2]);
	for (uint32_t i = 0; i < e->n_addrs; i++) {
		cb_generic(&b, "-s %s%s", e->addrs[i],
			   strchr(e->addrs[i], '/') ? ""
			   : p->af == AF_INET6	    ? "/128"
						    : "/32");
		cb_target(&b, "-j RETURN");
		cb_emit(&b);
	}
	for (uint32_t i = 0; i < lo->n_spoof_ok; i++) {
		struct br_cidr c;
		if (cidr_parse(lo->spoof_ok[i], true, &c) < 0 || c.ip.family != p->af)
			continue;
		cidr_mask(&c);
		char cs[CIDR_STRLEN];
		cb_generic(&b, "-s %s", cidr_str(&c, cs));
		cb_target(&b, "-j RETURN");
		cb_emit(&b);
	}
	cb_comment(&b, "Drop packets from unexpected source addresses");
	cb_target(&b, "-j DROP");
	cb_emit(&b);
	chains_put(p, PT_FILTER, cb_finish(&b));
}

void chains_render_endpoint(struct pol *p, struct pep *e)
{
	struct plocal *lo = e->local;
	char old_spoof[32];
	snprintf(old_spoof, sizeof(old_spoof), "%s", lo->chain[2]);
	lo->chain[2][0] = '\0';
	if (e->kind == PEP_WEP && e->n_addrs)
		render_spoof(p, e);
	else if (old_spoof[0])
		chains_del(p, PT_FILTER, old_spoof);
	render_endpoint_dir(p, e, 0);
	render_endpoint_dir(p, e, 1);
}

void chains_drop_endpoint(struct pol *p, struct plocal *lo)
{
	for (int i = 0; i < 3; i++)
		if (lo->chain[i][0]) {
			chains_del(p, PT_FILTER, lo->chain[i]);
			lo->chain[i][0] = '\0';
		}
}

/* --- dispatch and static chains ----------------------------------------------------------- */

static int cmp_cstr(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* One entry of a dispatch chain: an interface, or a bin of names sharing a prefix. */
struct bin {
	size_t from, to; /* names[from, to) */
	char child[32];	 /* the bin's chain, "" for a single interface */
	char prefix[20]; /* "cali1+" */
};

/*
 * Was chain @name made from the same @sig last time (and still there)? Then
 * rendering it again would give the same rules: a local endpoint added or
 * removed changes one bin of each tree, not the others.
 */
static bool dispatch_unchanged(struct pol *p, const char *name, const char *sig)
{
	const char *had = hmap_get(&p->dispatch, name);
	return had && streq(had, sig) && hmap_has(&p->d.tables[PT_FILTER].chains, name);
}

/*
 * A dispatch chain over interface names, as Felix builds it: names sorted,
 * their common prefix, then one level binned by the next character; a bin
 * of one goes straight to the endpoint's chain. @made gets each chain's name
 * and what it was made from.
 */
static void render_dispatch(struct pol *p, const char *root, const char *opt,
			    const char *target_prefix, const char **names, size_t n,
			    bool drop_unknown, struct hmap *made)
{
	qsort(names, n, sizeof(*names), cmp_cstr);
	size_t common = n ? strlen(names[0]) : 0;
	for (size_t i = 1; i < n; i++) {
		size_t k = 0;
		while (k < common && names[i][k] == names[0][k])
			k++;
		common = k;
	}
	if (n > 1 && common == strlen(names[0]))
		common--; /* a name that is a prefix of another: bin on its last character */
	struct bin *bins = xcalloc(n + 1, sizeof(*bins));
	size_t nb = 0;
	for (size_t i = 0; i < n;) {
		size_t j = i;
		while (j < n && n > 1 && names[j][common] == names[i][common])
			j++;
		if (j == i)
			j = i + 1;
		struct bin *bn = &bins[nb++];
		bn->from = i;
		bn->to = j;
		if (j - i > 1) {
			snprintf(bn->child, sizeof(bn->child), "%s-%c", root, names[i][common]);
			snprintf(bn->prefix, sizeof(bn->prefix), "%.*s+", (int)(common + 1),
				 names[i]);
		}
		i = j;
	}
	struct strbuf sig = STRBUF_INIT, root_sig = STRBUF_INIT;
	sb_init(&sig);
	sb_init(&root_sig);
	sb_addf(&root_sig, "%d", drop_unknown);
	for (size_t k = 0; k < nb; k++) {
		const struct bin *bn = &bins[k];
		if (!bn->child[0]) {
			sb_addf(&root_sig, " %s", names[bn->from]);
			continue;
		}
		sb_addf(&root_sig, " %s:%s", bn->prefix, bn->child);
		sb_reset(&sig);
		sb_addf(&sig, "%d", drop_unknown);
		for (size_t i = bn->from; i < bn->to; i++)
			sb_addf(&sig, " %s", names[i]);
		hmap_put(made, bn->child, xstrdup(sb_str(&sig)));
		if (dispatch_unchanged(p, bn->child, sb_str(&sig)))
			continue;
		struct chain_builder b;
		cb_start(&b, bn->child);
		for (size_t i = bn->from; i < bn->to; i++) {
			cb_generic(&b, "%s %s", opt, names[i]);
			cb_target(&b, "-g %s%s", target_prefix, names[i]);
			cb_emit(&b);
		}
		if (drop_unknown) {
			cb_comment(&b, "Unknown interface");
			cb_target(&b, "-j DROP");
			cb_emit(&b);
		}
		chains_put(p, PT_FILTER, cb_finish(&b));
	}
	hmap_put(made, root, xstrdup(sb_str(&root_sig)));
	if (!dispatch_unchanged(p, root, sb_str(&root_sig))) {
		struct chain_builder b;
		cb_start(&b, root);
		for (size_t k = 0; k < nb; k++) {
			const struct bin *bn = &bins[k];
			if (bn->child[0]) {
				cb_generic(&b, "%s %s", opt, bn->prefix);
				cb_target(&b, "-g %s", bn->child);
			} else {
				cb_generic(&b, "%s %s", opt, names[bn->from]);
				cb_target(&b, "-g %s%s", target_prefix, names[bn->from]);
			}
			cb_emit(&b);
		}
		if (drop_unknown) {
			cb_comment(&b, "Unknown interface");
			cb_target(&b, "-j DROP");
			cb_emit(&b);
		}
		chains_put(p, PT_FILTER, cb_finish(&b));
	}
	sb_free(&sig);
	sb_free(&root_sig);
	free(bins);
}

/* Map @m's element for @iface made to go to @prefix@iface (@prefix NULL: no element). */
static void map_set(struct pol *p, struct pmap *m, const char *iface, const char *prefix)
{
	char target[32], key[64];
	const char *had = hmap_get(&m->ifaces, iface);
	if (prefix)
		snprintf(target, sizeof(target), "%s%s", prefix, iface);
	if (prefix ? had && streq(had, target) : !had)
		return;
	if (prefix)
		free(hmap_put(&m->ifaces, iface, xstrdup(target)));
	else
		free(hmap_del(&m->ifaces, iface));
	snprintf(key, sizeof(key), "%s\n%s", m->root, iface);
	pol_mark(&p->d.dirty_maps, key, had);
}

/*
 * Dispatch as a verdict map: @root's map made to send each of @names to its chain, the
 * elements that change marked; chain @root holds what follows the lookup.
 */
static void render_dispatch_map(struct pol *p, const char *root, bool oif,
				const char *target_prefix, const char **names, size_t n,
				bool drop_unknown, struct hmap *made)
{
	struct pmap *m = hmap_get(&p->d.maps, root);
	if (!m) {
		m = xcalloc(1, sizeof(*m));
		snprintf(m->root, sizeof(m->root), "%s", root);
		m->oif = oif;
		hmap_put(&p->d.maps, m->root, m);
		pol_mark(&p->d.dirty_maps, root, false);
	}
	struct hmap now = HMAP_INIT;
	for (size_t i = 0; i < n; i++) {
		hmap_put(&now, names[i], (void *)1);
		map_set(p, m, names[i], target_prefix);
	}
	if (m->ifaces.n > n) {
		char **gone = xcalloc(m->ifaces.n - n + 1, sizeof(*gone));
		size_t ng = 0;
		for (struct hmap_iter it = hmap_iter(&m->ifaces); hmap_next(&it);)
			if (!hmap_has(&now, it.key))
				gone[ng++] = xstrdup(it.key);
		for (size_t i = 0; i < ng; i++) {
			map_set(p, m, gone[i], NULL);
			free(gone[i]);
		}
		free(gone);
	}
	hmap_clear(&now);
	const char *sig = drop_unknown ? "map 1" : "map 0";
	hmap_put(made, root, xstrdup(sig));
	if (dispatch_unchanged(p, root, sig))
		return;
	struct chain_builder b;
	cb_start(&b, root);
	if (drop_unknown) {
		cb_comment(&b, "Unknown interface");
		cb_target(&b, "-j DROP");
		cb_emit(&b);
	}
	chains_put(p, PT_FILTER, cb_finish(&b));
}

static void pmap_free(struct pmap *m)
{
	for (struct hmap_iter it = hmap_iter(&m->ifaces); hmap_next(&it);)
		free(it.value);
	hmap_clear(&m->ifaces);
	free(m);
}

/* The four dispatches: a workload's or host endpoint's interface, in or out, to its chain. An
 * unknown workload interface is dropped; other traffic goes on past the host dispatch. */
static const struct dispatch_root {
	const char *root, *prefix;
	bool oif, hep;
} dispatch_roots[] = {
	{ "cali-from-wl-dispatch", "cali-fw-", false, false },
	{ "cali-to-wl-dispatch", "cali-tw-", true, false },
	{ "cali-from-host-endpoint", "cali-fh-", false, true },
	{ "cali-to-host-endpoint", "cali-th-", true, true },
};

/* Forget what the dispatch chains were made from. */
static void dispatch_clear(struct hmap *m)
{
	for (struct hmap_iter it = hmap_iter(m); hmap_next(&it);)
		free(it.value);
	hmap_clear(m);
}

void chains_render_dispatch(struct pol *p)
{
	size_t n = p->locals.n;
	const char **wl = xcalloc(n + 1, sizeof(*wl));
	const char **hl = xcalloc(n + 1, sizeof(*hl));
	size_t nw = 0, nh = 0;
	for (struct hmap_iter it = hmap_iter(&p->locals); hmap_next(&it);) {
		const struct pep *e = it.value;
		if (e->kind == PEP_HEP)
			hl[nh++] = e->local->iface;
		else
			wl[nw++] = e->local->iface;
	}
	struct hmap made = HMAP_INIT;
	for (size_t i = 0; i < ARRAY_SIZE(dispatch_roots); i++) {
		const struct dispatch_root *d = &dispatch_roots[i];
		const char **names = d->hep ? hl : wl;
		size_t nn = d->hep ? nh : nw;
		if (d->hep && !nh)
			continue; /* no host endpoint: no host dispatch */
		if (p->dispatch_maps)
			render_dispatch_map(p, d->root, d->oif, d->prefix, names, nn, !d->hep,
					    &made);
		else
			render_dispatch(p, d->root, d->oif ? "-o" : "-i", d->prefix, names, nn,
					!d->hep, &made);
	}
	for (struct hmap_iter it = hmap_iter(&p->dispatch); hmap_next(&it);)
		if (!hmap_has(&made, it.key))
			chains_del(p, PT_FILTER, it.key);
	/* maps no longer made (host endpoints gone, or trees again) */
	const char *gone[4];
	size_t ng = 0;
	for (struct hmap_iter it = hmap_iter(&p->d.maps); hmap_next(&it);)
		if ((!p->dispatch_maps || !hmap_has(&made, it.key)) && ng < ARRAY_SIZE(gone))
			gone[ng++] = it.key;
	for (size_t i = 0; i < ng; i++) {
		pol_mark(&p->d.dirty_maps, gone[i], true);
		pmap_free(hmap_del(&p->d.maps, gone[i]));
	}
	dispatch_clear(&p->dispatch);
	p->dispatch = made;
	free(wl);
	free(hl);
}

void chains_update_dispatch_maps(struct pol *p)
{
	for (struct hmap_iter it = hmap_iter(&p->dirty_ifaces); hmap_next(&it);) {
		const struct pep *e = hmap_get(&p->locals, it.key);
		for (size_t i = 0; i < ARRAY_SIZE(dispatch_roots); i++) {
			const struct dispatch_root *d = &dispatch_roots[i];
			struct pmap *m = hmap_get(&p->d.maps, d->root);
			if (m)
				map_set(p, m, it.key,
					e && (e->kind == PEP_HEP) == d->hep ? d->prefix : NULL);
		}
	}
}

bool chains_have_local_heps(const struct pol *p)
{
	return p->n_local_heps > 0;
}

static void failsafe_chain(struct pol *p, const char *name, const struct felix_failsafe *fs,
			   size_t n, bool in)
{
	struct chain_builder b;
	cb_start(&b, name);
	for (size_t i = 0; i < n; i++) {
		if (fs[i].net[0])
			cb_generic(&b, "%s %s", in ? "-s" : "-d", fs[i].net);
		cb_generic(&b, "-p %s",
			   streq(fs[i].protocol, "UDP")	   ? "udp"
			   : streq(fs[i].protocol, "SCTP") ? "sctp"
							   : "tcp");
		cb_match(&b, "-m multiport --dports %u", fs[i].port);
		cb_target(&b, "-j ACCEPT");
		cb_emit(&b);
	}
	chains_put(p, PT_FILTER, cb_finish(&b));
}

static char **dup_rules(const struct pchain *c, uint32_t *n)
{
	*n = c->n;
	char **v = xcalloc(c->n + 1, sizeof(*v));
	for (uint32_t i = 0; i < c->n; i++)
		v[i] = xstrdup(c->rules[i]);
	return v;
}

static void hooks_free(struct ptable *t)
{
	for (size_t h = 0; h < t->n_hooks; h++) {
		struct phook *k = &t->hooks[h];
		for (uint32_t i = 0; i < k->n_insert; i++)
			free(k->insert[i]);
		for (uint32_t i = 0; i < k->n_append; i++)
			free(k->append[i]);
		free(k->insert);
		free(k->append);
	}
	t->n_hooks = 0;
}

/* Our rules in a built-in chain; @append_always go at its end whatever the insert mode. */
static void set_hook(struct pol *p, enum pt_table t, const char *chain, const char *jump,
		     const char *append_always)
{
	struct ptable *tb = &p->d.tables[t];
	struct phook *k = &tb->hooks[tb->n_hooks++];
	memset(k, 0, sizeof(*k));
	k->chain = chain;
	bool append = streq(p->cfg.chain_insert_mode, "Append");
	struct chain_builder b;
	cb_start(&b, chain);
	struct chain_builder a;
	char aname[40];
	snprintf(aname, sizeof(aname), "%s*appends*", chain);
	cb_start(&a, aname);
	struct chain_builder *jb = append ? &a : &b;
	if (jump) {
		cb_target(jb, "-j %s", jump);
		cb_emit(jb);
	}
	if (append_always) {
		cb_comment(&a, "Policy explicitly accepted packet.");
		cb_match(&a, "-m mark --mark 0x%x/0x%x", p->marks.accept, p->marks.accept);
		cb_target(&a, "%s", append_always);
		cb_emit(&a);
	}
	struct pchain *ci = cb_finish(&b), *ca = cb_finish(&a);
	k->insert = dup_rules(ci, &k->n_insert);
	k->append = dup_rules(ca, &k->n_append);
	pchain_free(ci);
	pchain_free(ca);
}

void chains_render_static(struct pol *p)
{
	const struct pmarks *m = &p->marks;
	bool heps = chains_have_local_heps(p);
	struct chain_builder b;
	/* filter cali-FORWARD */
	cb_start(&b, "cali-FORWARD");
	cb_comment(&b, "Start of forwarding: clear our marks");
	cb_target(&b, "-j MARK --set-xmark 0x0/0x%x", m->all);
	cb_emit(&b);
	for (size_t i = 0; i < p->cfg.n_prefixes; i++) {
		cb_generic(&b, "-i %s+", p->cfg.prefixes[i]);
		cb_target(&b, "-j cali-from-wl-dispatch");
		cb_emit(&b);
		cb_generic(&b, "-o %s+", p->cfg.prefixes[i]);
		cb_target(&b, "-j cali-to-wl-dispatch");
		cb_emit(&b);
	}
	chains_put(p, PT_FILTER, cb_finish(&b));
	/* filter cali-INPUT */
	cb_start(&b, "cali-INPUT");
	for (size_t i = 0; i < p->cfg.n_prefixes; i++) {
		cb_generic(&b, "-i %s+", p->cfg.prefixes[i]);
		cb_target(&b, "-g cali-wl-to-host");
		cb_emit(&b);
	}
	if (heps) {
		cb_target(&b, "-j MARK --set-xmark 0x0/0x%x", m->all);
		cb_emit(&b);
		cb_target(&b, "-j cali-from-host-endpoint");
		cb_emit(&b);
		cb_comment(&b, "Host endpoint policy accepted packet.");
		cb_match(&b, "-m mark --mark 0x%x/0x%x", m->accept, m->accept);
		cb_target(&b, "-j ACCEPT");
		cb_emit(&b);
	}
	chains_put(p, PT_FILTER, cb_finish(&b));
	/* filter cali-wl-to-host */
	cb_start(&b, "cali-wl-to-host");
	if (p->af == AF_INET6) {
		/* A workload finds its gateway by neighbour discovery and joins its multicast
		 * groups by MLD: no policy may stop that (MLD 130-132, router solicitation
		 * 133, neighbour solicitation and advertisement 135-136). */
		static const int nd_types[] = { 130, 131, 132, 133, 135, 136 };
		for (size_t i = 0; i < ARRAY_SIZE(nd_types); i++) {
			if (i == 0)
				cb_comment(&b, "IPv6 neighbour discovery and MLD: always allowed");
			cb_generic(&b, "-p %s", ipt_proto_name(58));
			cb_match(&b, "-m icmp6 --icmpv6-type %d", nd_types[i]);
			cb_target(&b, "-j ACCEPT");
			cb_emit(&b);
		}
	}
	cb_target(&b, "-j cali-from-wl-dispatch");
	cb_emit(&b);
	cb_comment(&b, "Configured DefaultEndpointToHostAction");
	const char *act = p->cfg.endpoint_to_host_action;
	cb_target(&b, "-j %s",
		  streq(act, "Accept")	 ? "ACCEPT"
		  : streq(act, "Return") ? "RETURN"
					 : "DROP");
	cb_emit(&b);
	chains_put(p, PT_FILTER, cb_finish(&b));
	/* filter cali-OUTPUT */
	cb_start(&b, "cali-OUTPUT");
	for (size_t i = 0; i < p->cfg.n_prefixes; i++) {
		cb_comment(&b, "From the host to its workloads: always allowed");
		cb_generic(&b, "-o %s+", p->cfg.prefixes[i]);
		cb_target(&b, "-j RETURN");
		cb_emit(&b);
	}
	if (heps) {
		cb_target(&b, "-j MARK --set-xmark 0x0/0x%x", m->all);
		cb_emit(&b);
		cb_target(&b, "-j cali-to-host-endpoint");
		cb_emit(&b);
		cb_comment(&b, "Host endpoint policy accepted packet.");
		cb_match(&b, "-m mark --mark 0x%x/0x%x", m->accept, m->accept);
		cb_target(&b, "-j ACCEPT");
		cb_emit(&b);
	}
	chains_put(p, PT_FILTER, cb_finish(&b));
	if (heps) {
		failsafe_chain(p, "cali-failsafe-in", p->cfg.failsafe_in, p->cfg.n_failsafe_in,
			       true);
		failsafe_chain(p, "cali-failsafe-out", p->cfg.failsafe_out, p->cfg.n_failsafe_out,
			       false);
	} else {
		chains_del(p, PT_FILTER, "cali-failsafe-in");
		chains_del(p, PT_FILTER, "cali-failsafe-out");
	}
	/* nat: masquerade pod traffic leaving the pools of natOutgoing pools */
	bool masq = false;
	for (struct hmap_iter it = hmap_iter(&p->pools); hmap_next(&it);)
		masq |= ((const struct ppool *)it.value)->nat_outgoing;
	cb_start(&b, "cali-POSTROUTING");
	cb_target(&b, "-j cali-nat-outgoing");
	cb_emit(&b);
	chains_put(p, PT_NAT, cb_finish(&b));
	cb_start(&b, "cali-nat-outgoing");
	if (masq) {
		sets_static(p, sets_masq_pools(p));
		sets_static(p, sets_all_pools(p));
		cb_match(&b, "-m set --match-set %s src", sets_masq_pools(p));
		cb_match(&b, "-m set ! --match-set %s dst", sets_all_pools(p));
		cb_target(&b, "-j MASQUERADE --random-fully");
		cb_emit(&b);
	}
	chains_put(p, PT_NAT, cb_finish(&b));
	sets_pools_changed(p);
	/* hooks (the same ones each time: there were some unless this is the first render) */
	bool had_hooks = p->d.tables[PT_FILTER].n_hooks > 0;
	for (int t = 0; t < PT_TABLES; t++)
		hooks_free(&p->d.tables[t]);
	set_hook(p, PT_FILTER, "INPUT", "cali-INPUT", NULL);
	set_hook(p, PT_FILTER, "FORWARD", "cali-FORWARD", "-j ACCEPT");
	set_hook(p, PT_FILTER, "OUTPUT", "cali-OUTPUT", NULL);
	/* nat POSTROUTING: appended, so kube-proxy's rules run first (as Felix does) */
	struct ptable *nat = &p->d.tables[PT_NAT];
	struct phook *k = &nat->hooks[nat->n_hooks++];
	memset(k, 0, sizeof(*k));
	k->chain = "POSTROUTING";
	cb_start(&b, "POSTROUTING*appends*");
	cb_target(&b, "-j cali-POSTROUTING");
	cb_emit(&b);
	struct pchain *c = cb_finish(&b);
	k->append = dup_rules(c, &k->n_append);
	pchain_free(c);
	for (int t = 0; t < PT_TABLES; t++) {
		p->d.tables[t].dirty = true;
		for (size_t h = 0; h < p->d.tables[t].n_hooks; h++)
			pol_mark(&p->d.dirty_chains[t], p->d.tables[t].hooks[h].chain, had_hooks);
	}
}

void chains_free(struct pol *p)
{
	for (int t = 0; t < PT_TABLES; t++) {
		for (struct hmap_iter it = hmap_iter(&p->d.tables[t].chains); hmap_next(&it);)
			pchain_free(it.value);
		hmap_clear(&p->d.tables[t].chains);
		hooks_free(&p->d.tables[t]);
	}
	dispatch_clear(&p->dispatch);
	for (struct hmap_iter it = hmap_iter(&p->d.maps); hmap_next(&it);)
		pmap_free(it.value);
	hmap_clear(&p->d.maps);
	hmap_clear(&p->d.dirty_maps);
}
