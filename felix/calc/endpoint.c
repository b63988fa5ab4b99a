/*
 * Endpoint records of the policy core: every WorkloadEndpoint, HostEndpoint
 * and network set of the cluster, in one allocation each (labels, profiles,
 * canonical addresses, named ports), and the labels a selector sees on one:
 * its own, then its namespace and orchestrator, then what its profiles apply.
 * The strings most endpoints share (label keys and values, namespaces,
 * profile and port names) are kept once, counted, in the core's string table.
 * Pure.
 */
#include "policy_internal.h"

#include <brindle/core/util.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NS_LABEL   "projectcalico.org/namespace"
#define ORCH_LABEL "projectcalico.org/orchestrator"

/* --- labels ------------------------------------------------------------------------------- */

struct lctx {
	const struct pol *p;
	const struct pep *e;
};

static const char *ep_label(const void *ctx, const char *key)
{
	const struct lctx *c = ctx;
	const struct pep *e = c->e;
	const char *v = labels_get(&e->labels, key);
	if (v)
		return v;
	if (e->ns && streq(key, NS_LABEL))
		return e->ns;
	if (e->orchestrator && streq(key, ORCH_LABEL))
		return e->orchestrator;
	for (uint32_t i = 0; i < e->n_profiles; i++) {
		const struct pprof *pr = hmap_get(&c->p->profiles, e->profiles[i]);
		const struct ppolicy *pp = pr ? prof_effective(pr) : NULL;
		if (pp && (v = labels_get(&pp->labels, key)))
			return v;
	}
	return NULL;
}

bool endpoint_matches(const struct pol *p, const struct pep *e, const struct sel *s)
{
	struct lctx c = { p, e };
	struct sel_labels l = { ep_label, &c };
	return sel_eval(s, &l);
}

void endpoint_each_label(struct pol *p, const struct pep *e, endpoint_label_fn *fn, void *arg)
{
	struct lctx c = { p, e };
	for (size_t i = 0; i < e->labels.n; i++)
		fn(p, e, e->labels.v[i].key, e->labels.v[i].value, arg);
	if (e->ns && !labels_get(&e->labels, NS_LABEL))
		fn(p, e, NS_LABEL, e->ns, arg);
	if (e->orchestrator && !labels_get(&e->labels, ORCH_LABEL))
		fn(p, e, ORCH_LABEL, e->orchestrator, arg);
	for (uint32_t i = 0; i < e->n_profiles; i++) {
		const struct pprof *pr = hmap_get(&p->profiles, e->profiles[i]);
		const struct ppolicy *pp = pr ? prof_effective(pr) : NULL;
		if (!pp)
			continue;
		/* (a profile's strings are its own: the same pointer is this profile's label) */
		for (size_t k = 0; k < pp->labels.n; k++)
			if (ep_label(&c, pp->labels.v[k].key) == pp->labels.v[k].value)
				fn(p, e, pp->labels.v[k].key, pp->labels.v[k].value, arg);
	}
}

void endpoint_net_member(const struct br_cidr *c, char out[CIDR_STRLEN])
{
	char ip[IP_STRLEN];
	ip_str(&c->ip, ip);
	if (c->len == ip_bits(&c->ip))
		snprintf(out, CIDR_STRLEN, "%s", ip);
	else
		snprintf(out, CIDR_STRLEN, "%s/%u", ip, c->len);
}

/* --- shared strings ----------------------------------------------------------------------- */

static const char *intern(struct pol *p, const char *s)
{
	if (!s)
		return NULL;
	uintptr_t n = (uintptr_t)hmap_get(&p->strings, s);
	hmap_put(&p->strings, s, (void *)(n + 1));
	return hmap_key(&p->strings, s);
}

static void release(struct pol *p, const char *s)
{
	if (!s)
		return;
	uintptr_t n = (uintptr_t)hmap_get(&p->strings, s);
	if (n > 1)
		hmap_put(&p->strings, s, (void *)(n - 1));
	else
		hmap_del(&p->strings, s); /* @s is the table's own copy: not used after */
}

/* --- records ------------------------------------------------------------------------------ */

/* A packer for one allocation: first measure, then copy. */
struct pack {
	char *base;
	size_t used, size;
};

static void *pk_alloc(struct pack *k, size_t n, size_t align)
{
	k->used = (k->used + align - 1) & ~(align - 1);
	void *r = k->base ? k->base + k->used : NULL;
	k->used += n;
	return r;
}

static const char *pk_str(struct pack *k, const char *s)
{
	if (!s)
		return NULL;
	size_t n = strlen(s) + 1;
	char *r = pk_alloc(k, n, 1);
	if (r)
		memcpy(r, s, n);
	return r;
}

static uint8_t port_proto(const char *s)
{
	if (!s || streq(s, "TCP"))
		return 6;
	if (streq(s, "UDP"))
		return 17;
	if (streq(s, "SCTP"))
		return 132;
	return 0;
}

/*
 * The members of @nets in family @af, one string after another in @k (measured in pass 0,
 * written in pass 1); *first is the first of them (NULL when measuring). Their number.
 */
static size_t addr_members(struct pack *k, int af, const char *const *nets, size_t n,
			   const char **first)
{
	size_t count = 0;
	*first = NULL;
	for (size_t i = 0; i < n; i++) {
		struct br_cidr c;
		if (cidr_parse(nets[i], true, &c) < 0 || c.ip.family != af)
			continue;
		cidr_mask(&c);
		char m[CIDR_STRLEN];
		bool halves = c.len == 0; /* hash:net cannot hold /0: its two halves */
		if (halves)
			c.len = 1;
		for (int h = 0; h < (halves ? 2 : 1); h++) {
			if (h)
				c.ip.a[0] = 128;
			endpoint_net_member(&c, m);
			const char *s = pk_str(k, m);
			if (!count)
				*first = s;
			count++;
		}
	}
	return count;
}

struct pep *endpoint_build(struct pol *p, const struct pep_src *s)
{
	struct pack k = { 0 };
	struct pep *e = NULL;
	/* pass 0 measures (nothing is written), pass 1 fills one allocation */
	for (int pass = 0; pass < 2; pass++) {
		bool fill = pass == 1;
		if (fill)
			k = (struct pack){ xcalloc(1, k.used), 0, k.used };
		e = pk_alloc(&k, sizeof(*e), 8);
		struct plocal *lo = s->local ? pk_alloc(&k, sizeof(*lo), 8) : NULL;
		size_t nl = s->labels ? s->labels->n : 0;
		struct br_kv *kv = pk_alloc(&k, sizeof(*kv) * nl, 8);
		const char **profs = pk_alloc(&k, sizeof(*profs) * s->n_profiles, 8);
		/* the addresses' strings, then the array that points at them */
		const char *first;
		size_t na = addr_members(&k, p->af, s->nets, s->n_nets, &first);
		const char **addrs = pk_alloc(&k, sizeof(*addrs) * na, 8);
		for (size_t i = 0; fill && i < na; i++, first += strlen(first) + 1)
			addrs[i] = first;
		struct pport *ports = pk_alloc(&k, sizeof(*ports) * s->n_ports, 8);
		const char **spoof =
			s->local ? pk_alloc(&k, sizeof(*spoof) * s->n_spoof_ok, 8) : NULL;
		for (size_t i = 0; fill && i < nl; i++)
			kv[i] = (struct br_kv){ intern(p, s->labels->v[i].key),
						intern(p, s->labels->v[i].value) };
		for (size_t i = 0; fill && i < s->n_profiles; i++)
			profs[i] = intern(p, s->profiles[i]);
		uint32_t np = 0;
		for (size_t i = 0; i < s->n_ports; i++) {
			uint8_t pr = port_proto(s->ports[i].protocol);
			if (!pr || !s->ports[i].name || !s->ports[i].name[0])
				continue;
			if (fill)
				ports[np] = (struct pport){ intern(p, s->ports[i].name), pr,
							    (uint16_t)s->ports[i].port };
			np++;
		}
		for (size_t i = 0; s->local && i < s->n_spoof_ok; i++) {
			const char *sp = pk_str(&k, s->spoof_ok[i]);
			if (fill)
				spoof[i] = sp;
		}
		if (!fill)
			continue;
		e->kind = s->kind;
		e->ns = intern(p, s->ns);
		e->orchestrator = intern(p, s->orchestrator);
		e->labels = (struct br_labels){ kv, nl };
		e->profiles = profs;
		e->n_profiles = (uint32_t)s->n_profiles;
		e->addrs = addrs;
		e->n_addrs = (uint32_t)na;
		e->ports = ports;
		e->n_ports = np;
		if (lo) {
			snprintf(lo->iface, sizeof(lo->iface), "%s", s->iface ? s->iface : "");
			lo->spoof_ok = spoof;
			lo->n_spoof_ok = (uint32_t)s->n_spoof_ok;
			e->local = lo;
		}
	}
	return e;
}

void endpoint_free(struct pol *p, struct pep *e)
{
	for (size_t i = 0; i < e->labels.n; i++) {
		release(p, e->labels.v[i].key);
		release(p, e->labels.v[i].value);
	}
	for (uint32_t i = 0; i < e->n_profiles; i++)
		release(p, e->profiles[i]);
	for (uint32_t i = 0; i < e->n_ports; i++)
		release(p, e->ports[i].name);
	release(p, e->ns);
	release(p, e->orchestrator);
	free(e);
}
