/*
 * The ip sets of the policy core: a record per set a rendered rule asked for
 * (named by a hash of what it holds, so equal sets are one), active while a
 * desired chain uses it, and the members of every active set kept up to date
 * as endpoints, labels and pools change.
 *
 * Set membership is a pure function of (endpoint, its profiles' labels, set):
 * an update retracts what the old state contributed and asserts what the new
 * state contributes, so nothing per endpoint needs remembering. A label index
 * makes that cost what can match: every effective label → the endpoints
 * carrying it, and → the active selector sets that require it.
 */
#include "policy_internal.h"

#include <brindle/core/hash.h>
#include <brindle/core/util.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- bags and the label index ------------------------------------------------------------ */

static void pvec_add(struct pvec *pv, void *x)
{
	if (pv->n == pv->cap) {
		pv->cap = pv->cap ? pv->cap * 2 : 4;
		pv->v = xrealloc(pv->v, sizeof(*pv->v) * pv->cap);
	}
	pv->v[pv->n++] = x;
}

static void pvec_del(struct pvec *pv, const void *x)
{
	for (size_t i = pv->n; i-- > 0;)
		if (pv->v[i] == x) {
			pv->v[i] = pv->v[--pv->n];
			return;
		}
}

static void index_key(struct strbuf *b, const char *key, const char *value)
{
	sb_reset(b);
	sb_adds(b, key);
	sb_addc(b, '\x1f');
	sb_adds(b, value);
}

static struct pvec *index_bucket(struct hmap *index, const char *key, bool create)
{
	struct pvec *pv = hmap_get(index, key);
	if (!pv && create) {
		pv = xcalloc(1, sizeof(*pv));
		hmap_put(index, key, pv);
	}
	return pv;
}

static void index_drop(struct hmap *index, const char *key, const void *x)
{
	struct pvec *pv = hmap_get(index, key);
	if (!pv)
		return;
	pvec_del(pv, x);
	if (!pv->n) {
		hmap_del(index, key);
		free(pv->v);
		free(pv);
	}
}

/* --- members ------------------------------------------------------------------------------ */

/* @member joined (@was false) or left set @set; the first mark since the writer took them
 * keeps what it was then. */
static void mark_member(struct pol *p, const char *set, const char *member, bool was)
{
	char key[128];
	snprintf(key, sizeof(key), "%s\n%s", set, member);
	pol_mark(&p->d.dirty_members, key, was);
}

static void member_add(struct pol *p, struct psetrec *s, const char *m)
{
	uintptr_t n = (uintptr_t)hmap_get(&s->out->members, m);
	hmap_put(&s->out->members, m, (void *)(n + 1));
	if (n == 0)
		mark_member(p, s->name, m, false);
}

static void member_del(struct pol *p, struct psetrec *s, const char *m)
{
	uintptr_t n = (uintptr_t)hmap_get(&s->out->members, m);
	if (n == 0)
		return;
	if (n == 1) {
		hmap_del(&s->out->members, m);
		mark_member(p, s->name, m, true);
	} else {
		hmap_put(&s->out->members, m, (void *)(n - 1));
	}
}

static const char *proto_word(uint8_t proto)
{
	switch (proto) {
	case 6:
		return "tcp";
	case 17:
		return "udp";
	case 132:
		return "sctp";
	case 136:
		return "udplite";
	}
	return NULL;
}

typedef void member_fn(struct pol *, struct psetrec *, const char *);

/* What @e contributes to active set @s: calls @fn for each member. */
static void contributions(struct pol *p, const struct pep *e, struct psetrec *s, member_fn *fn)
{
	switch (s->kind) {
	case PSET_SEL:
		if (!e->n_addrs || !endpoint_matches(p, e, s->sel))
			return;
		for (uint32_t i = 0; i < e->n_addrs; i++)
			fn(p, s, e->addrs[i]);
		return;
	case PSET_NAMED: {
		if (!e->n_ports || !e->n_addrs || !endpoint_matches(p, e, s->sel))
			return;
		/* A rule without a protocol matches the named port in whatever protocol the
		 * endpoint declares it (Calico allows named ports without a protocol). */
		for (uint32_t k = 0; k < e->n_ports; k++) {
			if ((s->proto && e->ports[k].proto != s->proto) ||
			    !streq(e->ports[k].name, s->port_name))
				continue;
			const char *pw = proto_word(e->ports[k].proto);
			if (!pw)
				continue;
			for (uint32_t i = 0; i < e->n_addrs; i++) {
				char m[CIDR_STRLEN + 16];
				if (strchr(e->addrs[i], '/'))
					continue; /* hash:ip,port takes hosts only */
				snprintf(m, sizeof(m), "%s,%s:%u", e->addrs[i], pw,
					 e->ports[k].port);
				fn(p, s, m);
			}
		}
		return;
	}
	case PSET_NETS:
		return;
	}
}

/* (endpoint_each_label's argument is an object pointer: these are what it points to) */
static member_fn *const do_add = member_add, *const do_del = member_del;

/* The active sets that require label key=value, for one endpoint. */
static void ep_label_sets(struct pol *p, const struct pep *e, const char *key, const char *value,
			  void *arg)
{
	index_key(&p->scratch, key, value);
	struct pvec *pv = hmap_get(&p->set_index, sb_str(&p->scratch));
	for (size_t i = 0; pv && i < pv->n; i++)
		contributions(p, e, pv->v[i], *(member_fn *const *)arg);
}

static void ep_index_add(struct pol *p, const struct pep *e, const char *key, const char *value,
			 void *arg)
{
	(void)arg;
	index_key(&p->scratch, key, value);
	pvec_add(index_bucket(&p->ep_index, sb_str(&p->scratch), true), (void *)e);
}

static void ep_index_del(struct pol *p, const struct pep *e, const char *key, const char *value,
			 void *arg)
{
	(void)arg;
	index_key(&p->scratch, key, value);
	index_drop(&p->ep_index, sb_str(&p->scratch), e);
}

void sets_endpoint_enter(struct pol *p, const struct pep *e)
{
	endpoint_each_label(p, e, ep_index_add, NULL);
	endpoint_each_label(p, e, ep_label_sets, (void *)&do_add);
	for (size_t i = 0; i < p->unindexed.n; i++)
		contributions(p, e, p->unindexed.v[i], member_add);
}

void sets_endpoint_leave(struct pol *p, const struct pep *e)
{
	endpoint_each_label(p, e, ep_label_sets, (void *)&do_del);
	for (size_t i = 0; i < p->unindexed.n; i++)
		contributions(p, e, p->unindexed.v[i], member_del);
	endpoint_each_label(p, e, ep_index_del, NULL);
}

/* --- set records -------------------------------------------------------------------------- */

/* The label a selector set is indexed under (in p->scratch), or false (unindexed). */
static bool set_index_key(struct pol *p, const struct psetrec *s)
{
	const char *k, *v;
	if (!s->sel || !sel_required_label(s->sel, &k, &v))
		return false;
	index_key(&p->scratch, k, v);
	return true;
}

const char *sets_all_pools(const struct pol *p)
{
	return p->af == AF_INET6 ? "cali60all-ipam-pools" : "cali40all-ipam-pools";
}

const char *sets_masq_pools(const struct pol *p)
{
	return p->af == AF_INET6 ? "cali60masq-ipam-pools" : "cali40masq-ipam-pools";
}

/* The static sets: pool CIDRs, and those of pools that masquerade (p->pools holds the pools
 * of the core's family). */
static void static_members(struct pol *p, struct psetrec *s, member_fn *fn)
{
	bool masq = streq(s->name, sets_masq_pools(p));
	for (struct hmap_iter it = hmap_iter(&p->pools); hmap_next(&it);) {
		const struct ppool *pp = it.value;
		if (masq && !pp->nat_outgoing)
			continue;
		char m[CIDR_STRLEN];
		endpoint_net_member(&pp->cidr, m);
		fn(p, s, m);
	}
}

static void set_activate(struct pol *p, struct psetrec *s)
{
	s->out = xcalloc(1, sizeof(*s->out));
	snprintf(s->out->info.name, sizeof(s->out->info.name), "%s", s->name);
	s->out->info.type = s->kind == PSET_NAMED ? IPS_HASH_IP_PORT : IPS_HASH_NET;
	s->out->info.family = (uint8_t)p->af;
	hmap_put(&p->d.sets, s->name, s->out);
	hmap_put(&p->d.dirty_sets, s->name, (void *)1);
	if (p->n_active == p->cap_active) {
		p->cap_active = p->cap_active ? p->cap_active * 2 : 16;
		p->active = xrealloc(p->active, sizeof(*p->active) * p->cap_active);
	}
	s->active_at = (uint32_t)p->n_active;
	p->active[p->n_active++] = s;
	if (s->is_static) {
		static_members(p, s, member_add);
		return;
	}
	if (s->kind == PSET_NETS) {
		for (uint32_t i = 0; i < s->n_nets; i++)
			member_add(p, s, s->nets[i]);
		return;
	}
	if (!set_index_key(p, s)) {
		pvec_add(&p->unindexed, s);
		for (struct hmap_iter it = hmap_iter(&p->eps); hmap_next(&it);)
			contributions(p, it.value, s, member_add);
		return;
	}
	pvec_add(index_bucket(&p->set_index, sb_str(&p->scratch), true), s);
	struct pvec *eps = hmap_get(&p->ep_index, sb_str(&p->scratch));
	for (size_t i = 0; eps && i < eps->n; i++)
		contributions(p, eps->v[i], s, member_add);
}

static void set_deactivate(struct pol *p, struct psetrec *s)
{
	hmap_del(&p->d.sets, s->name);
	hmap_put(&p->d.dirty_sets, s->name, (void *)1);
	hmap_clear(&s->out->members);
	free(s->out);
	s->out = NULL;
	if (s->kind != PSET_NETS && !s->is_static) {
		if (set_index_key(p, s))
			index_drop(&p->set_index, sb_str(&p->scratch), s);
		else
			pvec_del(&p->unindexed, s);
	}
	struct psetrec *last = p->active[--p->n_active];
	p->active[s->active_at] = last;
	last->active_at = s->active_at;
}

static void psetrec_free(struct psetrec *s)
{
	sel_free(s->sel);
	free(s->port_name);
	for (uint32_t i = 0; i < s->n_nets; i++)
		free(s->nets[i]);
	free(s->nets);
	free(s);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

struct psetrec *sets_for(struct pol *p, const struct pset_ref *ref)
{
	struct strbuf *id = &p->scratch;
	sb_reset(id);
	char **nets = NULL;
	uint32_t n_nets = 0;
	char prefix = 's';
	switch (ref->kind) {
	case PSET_SEL:
		sb_adds(id, "s:");
		sel_print(ref->sel, id);
		break;
	case PSET_NAMED:
		prefix = 'n';
		sb_adds(id, "n:");
		sel_print(ref->sel, id);
		sb_addf(id, "|%u|%s", ref->named->proto, ref->named->name);
		break;
	case PSET_NETS:
		prefix = 'c';
		nets = xcalloc(ref->n_nets * 2 + 1, sizeof(*nets));
		for (uint32_t i = 0; i < ref->n_nets; i++) {
			struct br_cidr c = ref->nets[i];
			char m[CIDR_STRLEN];
			if (c.len == 0) {
				/* hash:net cannot hold /0: two halves */
				c.len = 1;
				endpoint_net_member(&c, m);
				nets[n_nets++] = xstrdup(m);
				c.ip.a[0] = 128;
			}
			endpoint_net_member(&c, m);
			nets[n_nets++] = xstrdup(m);
		}
		qsort(nets, n_nets, sizeof(*nets), cmp_str);
		sb_adds(id, "c:");
		for (uint32_t i = 0; i < n_nets; i++)
			sb_addf(id, "%s,", nets[i]);
		break;
	}
	char h[32], name[32];
	hash_b64url(HASH_SHA224, sb_str(id), h, 23);
	snprintf(name, sizeof(name), "cali%c0%c:%.23s", p->af == AF_INET6 ? '6' : '4', prefix, h);
	struct psetrec *s = hmap_get(&p->sets, name);
	if (s) {
		for (uint32_t i = 0; i < n_nets; i++)
			free(nets[i]);
		free(nets);
		return s;
	}
	s = xcalloc(1, sizeof(*s));
	snprintf(s->name, sizeof(s->name), "%s", name);
	s->kind = ref->kind;
	if (ref->sel)
		s->sel = sel_clone(ref->sel);
	if (ref->named) {
		s->port_name = xstrdup(ref->named->name);
		s->proto = ref->named->proto;
	}
	s->nets = nets;
	s->n_nets = n_nets;
	hmap_put(&p->sets, name, s);
	return s;
}

/* The set names a chain uses: found from its rules' "--match-set NAME" options. */
static size_t chain_sets(const struct pchain *c, char (*out)[32], size_t max)
{
	size_t n = 0;
	for (uint32_t i = 0; i < c->n; i++) {
		const char *r = c->rules[i];
		while ((r = strstr(r, "--match-set ")) != NULL) {
			r += strlen("--match-set ");
			size_t len = strcspn(r, " ");
			if (len >= 32)
				continue;
			char name[32];
			memcpy(name, r, len);
			name[len] = '\0';
			bool seen = false;
			for (size_t k = 0; k < n && !seen; k++)
				seen = streq(out[k], name);
			if (!seen && n < max)
				snprintf(out[n++], 32, "%s", name);
		}
	}
	return n;
}

void sets_chain_refs(struct pol *p, const struct pchain *c, int delta)
{
	char names[256][32];
	size_t n = chain_sets(c, names, 256);
	for (size_t i = 0; i < n; i++) {
		struct psetrec *s = hmap_get(&p->sets, names[i]);
		if (!s)
			continue;
		if (delta > 0) {
			if (s->refs++ == 0)
				set_activate(p, s);
		} else if (s->refs && --s->refs == 0) {
			set_deactivate(p, s);
		}
	}
}

void sets_static(struct pol *p, const char *name)
{
	struct psetrec *s = hmap_get(&p->sets, name);
	if (!s) {
		s = xcalloc(1, sizeof(*s));
		snprintf(s->name, sizeof(s->name), "%s", name);
		s->kind = PSET_NETS;
		s->is_static = true;
		hmap_put(&p->sets, name, s);
	}
}

void sets_pools_changed(struct pol *p)
{
	const char *names[] = { sets_all_pools(p), sets_masq_pools(p) };
	for (size_t i = 0; i < 2; i++) {
		struct psetrec *s = hmap_get(&p->sets, names[i]);
		if (!s || !s->out)
			continue;
		struct hmap want = HMAP_INIT;
		bool masq = i == 1;
		for (struct hmap_iter it = hmap_iter(&p->pools); hmap_next(&it);) {
			const struct ppool *pp = it.value;
			if (masq && !pp->nat_outgoing)
				continue;
			char m[CIDR_STRLEN];
			endpoint_net_member(&pp->cidr, m);
			hmap_put(&want, m, (void *)1);
		}
		for (struct hmap_iter it = hmap_iter(&s->out->members); hmap_next(&it);)
			if (!hmap_has(&want, it.key)) {
				mark_member(p, s->name, it.key, true);
				hmap_del(&s->out->members, it.key);
			}
		for (struct hmap_iter it = hmap_iter(&want); hmap_next(&it);)
			if (!hmap_has(&s->out->members, it.key))
				member_add(p, s, it.key);
		hmap_clear(&want);
	}
}

void sets_forget_unused(struct pol *p)
{
	for (struct hmap_iter it = hmap_iter(&p->sets); hmap_next(&it);) {
		struct psetrec *s = it.value;
		if (!s->refs && !s->is_static) {
			hmap_del(&p->sets, it.key);
			psetrec_free(s);
		}
	}
}

void sets_free(struct pol *p)
{
	for (struct hmap_iter it = hmap_iter(&p->sets); hmap_next(&it);) {
		struct psetrec *s = it.value;
		if (s->out) {
			hmap_clear(&s->out->members);
			free(s->out);
		}
		psetrec_free(s);
	}
	hmap_clear(&p->sets);
	free(p->active);
	for (int i = 0; i < 2; i++) {
		struct hmap *index = i ? &p->set_index : &p->ep_index;
		for (struct hmap_iter it = hmap_iter(index); hmap_next(&it);) {
			struct pvec *pv = it.value;
			free(pv->v);
			free(pv);
		}
		hmap_clear(index);
	}
	free(p->unindexed.v);
	hmap_clear(&p->d.sets);
	hmap_clear(&p->d.dirty_sets);
	hmap_clear(&p->d.dirty_members);
	for (int t = 0; t < PT_TABLES; t++)
		hmap_clear(&p->d.dirty_chains[t]);
}
