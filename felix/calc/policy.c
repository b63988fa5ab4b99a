/*
 * felix's policy core: the state that ties policies to endpoints and
 * endpoints to ip sets, and the chains of endpoints, dispatch and hooks. See
 * policy.h for the contract; policy_parse.c and policy_render.c do the
 * per-policy work.
 *
 * Set membership is a pure function of (endpoint, its profiles' labels,
 * set): an update retracts what the old state contributed and asserts what
 * the new state contributes, so nothing per endpoint needs remembering.
 */
#include "policy_internal.h"

#include <brindle/hash.h>
#include <brindle/ipt.h>
#include <brindle/log.h>
#include <brindle/util.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NS_LABEL   "projectcalico.org/namespace"
#define ORCH_LABEL "projectcalico.org/orchestrator"

const char *pt_table_name(enum pt_table t)
{
	return t == PT_NAT ? "nat" : "filter";
}

/* --- records --------------------------------------------------------------------------- */

struct pentry; /* a policy */
struct pprof;  /* a profile */

enum pep_kind {
	PEP_WEP,
	PEP_HEP,
	PEP_NETSET,
};

struct pport {
	const char *name;
	uint8_t proto;
	uint16_t port;
};

/* What a local endpoint needs beyond set membership. */
struct plocal {
	char iface[16];
	/* applicable policies, in order, per direction (0 ingress, 1 egress) */
	struct pentry **pol[2];
	uint32_t n_pol[2];
	struct pprof **prof; /* resolved at render time (refs taken) */
	uint32_t n_prof;
	char chain[3][32];     /* ingress, egress, anti-spoofing ("" when none) */
	const char **spoof_ok; /* allowSpoofedSourcePrefixes */
	uint32_t n_spoof_ok;
};

/*
 * Any endpoint or network set in the cluster, in one allocation: what set
 * membership and (for local endpoints) the endpoint chains need.
 */
struct pep {
	enum pep_kind kind;
	const char *key;
	const char *ns;		  /* NULL when not namespaced */
	const char *orchestrator; /* WEPs */
	struct br_labels labels;
	const char **profiles;
	uint32_t n_profiles;
	char (*addrs)[20]; /* canonical hash:net members */
	uint32_t n_addrs;
	struct pport *ports;
	uint32_t n_ports;
	struct plocal *local; /* NULL unless on this node */
};

struct pentry {
	struct ppolicy *p;
	uint32_t refs[2];  /* local endpoint chains that jump to it */
	char chain[2][32]; /* cali-pi-..., cali-po-... */
	bool dirty;
};

struct pprof {
	char *name;
	struct ppolicy *explicit_p; /* from a Profile resource */
	struct ppolicy *from_ns;    /* kns.<ns> from the Namespace (or a default) */
	bool ns_known;
	uint32_t refs[2];
	uint32_t users; /* endpoints that list it */
	char chain[2][32];
	bool dirty;
};

/* An ip set some rendered chain asked for. */
struct psetrec {
	char name[32];
	enum pset_kind kind;
	struct sel *sel;
	char *port_name;
	uint8_t proto;
	char **nets; /* NETS: canonical members */
	uint32_t n_nets;
	uint32_t refs;	    /* included chains using it */
	struct pset *out;   /* in the desired sets while refs > 0 */
	uint32_t active_at; /* index in pol->active while active */
	bool is_static;
};

/* A bag of pointers; order does not matter (swap-remove). */
struct pvec {
	void **v;
	size_t n, cap;
};

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

struct ppool {
	struct br_cidr cidr;
	bool nat_outgoing;
	bool disabled;
};

struct pol {
	char *nodename;
	struct felix_config cfg;
	struct pmarks marks;
	bool marks_ok;
	struct hmap policies; /* id → struct pentry */
	struct hmap profiles; /* name → struct pprof */
	struct hmap eps;      /* key → struct pep */
	struct hmap locals;   /* iface → struct pep (local endpoints) */
	struct hmap sets;     /* name → struct psetrec */
	struct psetrec **active;
	size_t n_active, cap_active;
	/*
	 * Label index, so that matching costs what can match rather than every
	 * endpoint times every set: "key\x1fvalue" of every effective label →
	 * the endpoints carrying it (struct pvec of struct pep *), and → the
	 * active selector sets that require it (struct pvec of struct psetrec *;
	 * sel_required_label). Active selector sets without such a label are in
	 * unindexed.
	 */
	struct hmap ep_index;
	struct hmap set_index;
	struct pvec unindexed;
	struct hmap *verify_want; /* pol_verify_sets */
	struct hmap pools;	  /* name → struct ppool */
	struct pol_desired d;
	struct hmap dirty_eps; /* key → (void *)1 */
	bool dirty_dispatch, dirty_static, dirty_all;
	/* rendering */
	struct pchain *rendering;
	struct render_ctx rc;
	char **errors;
	size_t n_errors;
	struct hmap log_hashes; /* NFLOG policy hash → id (owned copy) */
	struct hmap dispatch;	/* dispatch chains made last time → (void *)1 */
	bool had_heps;
	struct strbuf scratch;
};

/* --- labels of an endpoint, with what it inherits --------------------------------------- */

static const struct ppolicy *prof_effective(const struct pprof *pr)
{
	return pr->explicit_p ? pr->explicit_p : pr->from_ns;
}

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

static bool ep_matches(const struct pol *p, const struct pep *e, const struct sel *s)
{
	struct lctx c = { p, e };
	struct sel_labels l = { ep_label, &c };
	return sel_eval(s, &l);
}

/* --- label index ------------------------------------------------------------------------- */

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

/*
 * Calls @fn once per effective label of @e (the value ep_label gives for its
 * key): its own, the namespace and orchestrator ones, then its profiles'.
 */
static void ep_each_label(struct pol *p, const struct pep *e,
			  void (*fn)(struct pol *, const struct pep *, const char *, const char *,
				     void *),
			  void *arg)
{
	struct lctx c = { p, e };
	for (size_t i = 0; i < e->labels.n; i++)
		fn(p, e, e->labels.v[i].key, e->labels.v[i].value, arg);
	if (e->ns && ep_label(&c, NS_LABEL) == e->ns)
		fn(p, e, NS_LABEL, e->ns, arg);
	if (e->orchestrator && ep_label(&c, ORCH_LABEL) == e->orchestrator)
		fn(p, e, ORCH_LABEL, e->orchestrator, arg);
	for (uint32_t i = 0; i < e->n_profiles; i++) {
		const struct pprof *pr = hmap_get(&p->profiles, e->profiles[i]);
		const struct ppolicy *pp = pr ? prof_effective(pr) : NULL;
		if (!pp)
			continue;
		for (size_t k = 0; k < pp->labels.n; k++)
			if (ep_label(&c, pp->labels.v[k].key) == pp->labels.v[k].value)
				fn(p, e, pp->labels.v[k].key, pp->labels.v[k].value, arg);
	}
}

/* --- ip sets ------------------------------------------------------------------------------ */

static void mark_member(struct pol *p, const char *set, const char *member)
{
	char key[128];
	snprintf(key, sizeof(key), "%s\n%s", set, member);
	hmap_put(&p->d.dirty_members, key, (void *)1);
}

static void member_add(struct pol *p, struct psetrec *s, const char *m)
{
	uintptr_t n = (uintptr_t)hmap_get(&s->out->members, m);
	hmap_put(&s->out->members, m, (void *)(n + 1));
	if (n == 0)
		mark_member(p, s->name, m);
}

static void member_del(struct pol *p, struct psetrec *s, const char *m)
{
	uintptr_t n = (uintptr_t)hmap_get(&s->out->members, m);
	if (n == 0)
		return;
	if (n == 1) {
		hmap_del(&s->out->members, m);
		mark_member(p, s->name, m);
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

/* What @e contributes to active set @s: calls @fn for each member. */
static void contributions(struct pol *p, const struct pep *e, struct psetrec *s,
			  void (*fn)(struct pol *, struct psetrec *, const char *))
{
	switch (s->kind) {
	case PSET_SEL:
		if (!e->n_addrs || !ep_matches(p, e, s->sel))
			return;
		for (uint32_t i = 0; i < e->n_addrs; i++)
			fn(p, s, e->addrs[i]);
		return;
	case PSET_NAMED: {
		if (!e->n_ports || !e->n_addrs || !ep_matches(p, e, s->sel))
			return;
		const char *pw = proto_word(s->proto);
		for (uint32_t k = 0; pw && k < e->n_ports; k++) {
			if (e->ports[k].proto != s->proto || !streq(e->ports[k].name, s->port_name))
				continue;
			for (uint32_t i = 0; i < e->n_addrs; i++) {
				char m[64];
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

typedef void member_fn(struct pol *, struct psetrec *, const char *);
/* (ep_each_label's argument is an object pointer: these are what it points to) */
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

/* @e enters the sets it matches and the index (after any change to its labels). */
static void ep_assert(struct pol *p, const struct pep *e)
{
	ep_each_label(p, e, ep_index_add, NULL);
	ep_each_label(p, e, ep_label_sets, (void *)&do_add);
	for (size_t i = 0; i < p->unindexed.n; i++)
		contributions(p, e, p->unindexed.v[i], member_add);
}

/* The reverse of ep_assert, with the labels @e had then. */
static void ep_retract(struct pol *p, const struct pep *e)
{
	ep_each_label(p, e, ep_label_sets, (void *)&do_del);
	for (size_t i = 0; i < p->unindexed.n; i++)
		contributions(p, e, p->unindexed.v[i], member_del);
	ep_each_label(p, e, ep_index_del, NULL);
}

/* The label a selector set is indexed under, or false (unindexed). */
static bool set_index_key(struct pol *p, const struct psetrec *s)
{
	const char *k, *v;
	if (!s->sel || !sel_required_label(s->sel, &k, &v))
		return false;
	index_key(&p->scratch, k, v);
	return true;
}

static void static_members(struct pol *p, struct psetrec *s,
			   void (*fn)(struct pol *, struct psetrec *, const char *));

static void set_activate(struct pol *p, struct psetrec *s)
{
	s->out = xcalloc(1, sizeof(*s->out));
	snprintf(s->out->info.name, sizeof(s->out->info.name), "%s", s->name);
	s->out->info.type = s->kind == PSET_NAMED ? IPS_HASH_IP_PORT : IPS_HASH_NET;
	s->out->info.family = AF_INET;
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

/* Canonical hash:net member of an IPv4 network: a host without "/32". */
static void net_member(const struct br_cidr *c, char out[20])
{
	char ip[IP_STRLEN];
	ip_str(&c->ip, ip); /* IPv4: at most 15 characters */
	if (c->len == 32)
		snprintf(out, 20, "%.15s", ip);
	else
		snprintf(out, 20, "%.15s/%u", ip, c->len & 63u);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Set names are hashes of what the set holds, so equal sets share one. */
static struct psetrec *set_for(struct pol *p, const struct pset_ref *ref)
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
			char m[20];
			if (c.len == 0) {
				/* hash:net cannot hold /0: two halves */
				c.len = 1;
				net_member(&c, m);
				nets[n_nets++] = xstrdup(m);
				c.ip.a[0] = 128;
			}
			net_member(&c, m);
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
	snprintf(name, sizeof(name), "cali40%c:%.23s", prefix, h);
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

static const char *use_set_cb(void *ctx, const struct pset_ref *ref)
{
	/* The chain finds its sets again from its rules' "--match-set" options. */
	return set_for(ctx, ref)->name;
}

/* --- the desired tables --------------------------------------------------------------------- */

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

static void chain_ref_sets(struct pol *p, const struct pchain *c, int delta)
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

/* Put @c into @t's desired chains (replacing one of the same name), taking its sets. */
static void table_put(struct pol *p, enum pt_table t, struct pchain *c)
{
	chain_ref_sets(p, c, +1);
	struct pchain *old = hmap_put(&p->d.tables[t].chains, c->name, c);
	if (old) {
		chain_ref_sets(p, old, -1);
		pchain_free(old);
	}
	p->d.tables[t].dirty = true;
}

static void table_del(struct pol *p, enum pt_table t, const char *name)
{
	struct pchain *old = hmap_del(&p->d.tables[t].chains, name);
	if (!old)
		return;
	chain_ref_sets(p, old, -1);
	pchain_free(old);
	p->d.tables[t].dirty = true;
}

static void start(struct pol *p, struct chain_builder *b, const char *name)
{
	cb_start(b, name);
	p->rendering = b->c;
}

static struct pchain *finish(struct pol *p, struct chain_builder *b)
{
	p->rendering = NULL;
	return cb_finish(b);
}

/* --- policy and profile chains --------------------------------------------------------------- */

static void render_pentry(struct pol *p, struct pentry *pe, int dir)
{
	struct chain_builder b;
	start(p, &b, pe->chain[dir]);
	if (pe->p->error)
		render_fail_closed(&b, pe->p->error);
	else
		render_policy_rules(&b, &p->rc, pe->p, dir == 0);
	table_put(p, PT_FILTER, finish(p, &b));
}

static void pentry_ref(struct pol *p, struct pentry *pe, int dir, int delta)
{
	if (delta > 0) {
		if (pe->refs[dir]++ == 0)
			render_pentry(p, pe, dir);
	} else if (--pe->refs[dir] == 0) {
		table_del(p, PT_FILTER, pe->chain[dir]);
	}
}

static void render_pprof(struct pol *p, struct pprof *pr, int dir)
{
	struct chain_builder b;
	start(p, &b, pr->chain[dir]);
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
	table_put(p, PT_FILTER, finish(p, &b));
}

static void pprof_ref(struct pol *p, struct pprof *pr, int dir, int delta)
{
	if (delta > 0) {
		if (pr->refs[dir]++ == 0)
			render_pprof(p, pr, dir);
	} else if (--pr->refs[dir] == 0) {
		table_del(p, PT_FILTER, pr->chain[dir]);
	}
}

static struct pprof *prof_get(struct pol *p, const char *name)
{
	struct pprof *pr = hmap_get(&p->profiles, name);
	if (pr)
		return pr;
	pr = xcalloc(1, sizeof(*pr));
	pr->name = xstrdup(name);
	chain_name(pr->chain[0], "cali-pri-", name);
	chain_name(pr->chain[1], "cali-pro-", name);
	/* A namespace's profile exists with the namespace; until its resource is seen, a default.
	 */
	if (str_has_prefix(name, "kns."))
		pr->from_ns = ppolicy_from_namespace(name + 4, NULL);
	hmap_put(&p->profiles, name, pr);
	return pr;
}

static void prof_maybe_free(struct pol *p, struct pprof *pr)
{
	if (pr->users || pr->explicit_p || pr->ns_known || pr->refs[0] || pr->refs[1])
		return;
	hmap_del(&p->profiles, pr->name);
	ppolicy_free(pr->from_ns);
	free(pr->name);
	free(pr);
}

/* --- endpoints ------------------------------------------------------------------------------ */

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

struct pep_src {
	enum pep_kind kind;
	const char *key, *ns, *orchestrator, *iface;
	bool local;
	const struct br_labels *labels;
	const char *const *profiles;
	size_t n_profiles;
	const char *const *nets;
	size_t n_nets;
	const struct br_endpoint_port *ports;
	size_t n_ports;
	const char *const *spoof_ok;
	size_t n_spoof_ok;
};

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

static size_t addr_members(const char *const *nets, size_t n, char (*out)[20])
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		struct br_cidr c;
		if (cidr_parse(nets[i], true, &c) < 0 || c.ip.family != AF_INET)
			continue;
		cidr_mask(&c);
		if (c.len == 0) {
			c.len = 1;
			if (out)
				net_member(&c, out[k]);
			k++;
			c.ip.a[0] = 128;
		}
		if (out)
			net_member(&c, out[k]);
		k++;
	}
	return k;
}

static struct pep *pep_build(const struct pep_src *s)
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
		size_t na = addr_members(s->nets, s->n_nets, NULL);
		char(*addrs)[20] = pk_alloc(&k, 20 * na, 1);
		struct pport *ports = pk_alloc(&k, sizeof(*ports) * s->n_ports, 8);
		const char **spoof =
			s->local ? pk_alloc(&k, sizeof(*spoof) * s->n_spoof_ok, 8) : NULL;
		const char *key = pk_str(&k, s->key);
		const char *ns = pk_str(&k, s->ns);
		const char *orch = pk_str(&k, s->orchestrator);
		for (size_t i = 0; i < nl; i++) {
			const char *kk = pk_str(&k, s->labels->v[i].key);
			const char *vv = pk_str(&k, s->labels->v[i].value);
			if (fill)
				kv[i] = (struct br_kv){ kk, vv };
		}
		for (size_t i = 0; i < s->n_profiles; i++) {
			const char *pn = pk_str(&k, s->profiles[i]);
			if (fill)
				profs[i] = pn;
		}
		uint32_t np = 0;
		for (size_t i = 0; i < s->n_ports; i++) {
			uint8_t pr = port_proto(s->ports[i].protocol);
			if (!pr || !s->ports[i].name || !s->ports[i].name[0])
				continue;
			const char *pn = pk_str(&k, s->ports[i].name);
			if (fill)
				ports[np] = (struct pport){ pn, pr, (uint16_t)s->ports[i].port };
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
		e->key = key;
		e->ns = ns;
		e->orchestrator = orch;
		e->labels = (struct br_labels){ kv, nl };
		e->profiles = profs;
		e->n_profiles = (uint32_t)s->n_profiles;
		addr_members(s->nets, s->n_nets, addrs);
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

static void local_release(struct pol *p, struct pep *e);

static void pep_free(struct pol *p, struct pep *e)
{
	if (!e)
		return;
	for (uint32_t i = 0; i < e->n_profiles; i++) {
		struct pprof *pr = hmap_get(&p->profiles, e->profiles[i]);
		if (pr) {
			pr->users--;
			prof_maybe_free(p, pr);
		}
	}
	if (e->local)
		local_release(p, e);
	free(e);
}

static void mark_local_dirty(struct pol *p, const struct pep *e)
{
	if (e && e->local)
		hmap_put(&p->dirty_eps, e->key, (void *)1);
}

/* Replace the record under @key with @e (NULL: delete). */
static void pep_replace(struct pol *p, const char *key, struct pep *e)
{
	struct pep *old = hmap_get(&p->eps, key);
	if (old) {
		ep_retract(p, old);
		if (old->local && hmap_get(&p->locals, old->local->iface) == old) {
			hmap_del(&p->locals, old->local->iface);
			p->dirty_dispatch = true;
		}
	}
	if (e) {
		for (uint32_t i = 0; i < e->n_profiles; i++)
			prof_get(p, e->profiles[i])->users++;
		hmap_put(&p->eps, key, e);
		ep_assert(p, e);
		if (e->local) {
			struct pep *clash = hmap_get(&p->locals, e->local->iface);
			if (clash && clash != old)
				log_warn("interface %s claimed by %s and %s; using %s",
					 e->local->iface, clash->key, e->key, e->key);
			hmap_put(&p->locals, e->local->iface, e);
			p->dirty_dispatch = true;
			hmap_put(&p->dirty_eps, key, (void *)1);
		}
	} else {
		hmap_del(&p->eps, key);
	}
	if (old && old->local && !e)
		hmap_del(&p->dirty_eps, key);
	pep_free(p, old);
}

/* --- policies -------------------------------------------------------------------------------- */

static bool policy_applies(const struct pol *p, const struct ppolicy *pp, const struct pep *e)
{
	return pp && pp->selector && ep_matches(p, e, pp->selector);
}

/* Mark the local endpoints a policy applies to (before or after a change). */
static void mark_applicable(struct pol *p, const struct ppolicy *pp)
{
	if (!pp)
		return;
	for (struct hmap_iter it = hmap_iter(&p->locals); hmap_next(&it);)
		if (policy_applies(p, pp, it.value))
			mark_local_dirty(p, it.value);
}

static void note_log_hash(struct pol *p, const struct ppolicy *pp)
{
	if (!pp)
		return;
	char h[13];
	policy_log_hash(pp->id, h);
	free(hmap_put(&p->log_hashes, h, xstrdup(pp->id)));
}

static void policy_set(struct pol *p, const char *id, struct ppolicy *np)
{
	struct pentry *pe = hmap_get(&p->policies, id);
	if (!pe) {
		if (!np)
			return;
		pe = xcalloc(1, sizeof(*pe));
		chain_name(pe->chain[0], "cali-pi-", id);
		chain_name(pe->chain[1], "cali-po-", id);
		hmap_put(&p->policies, id, pe);
	}
	mark_applicable(p, pe->p);
	mark_applicable(p, np);
	ppolicy_free(pe->p);
	pe->p = np;
	/* Kept after a delete: the event log may still see packets it decided. */
	note_log_hash(p, np);
	pe->dirty = true;
	if (!np && !pe->refs[0] && !pe->refs[1]) {
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
			ep_assert(p, e);
			mark_local_dirty(p, e);
		} else {
			ep_retract(p, e);
		}
	}
}

static void profile_set(struct pol *p, const char *name, struct ppolicy *explicit_p,
			bool from_resource, const struct br_labels *ns_labels, bool ns_event,
			bool ns_deleted)
{
	struct pprof *pr = prof_get(p, name);
	profile_labels_changing(p, name, false);
	if (from_resource) {
		ppolicy_free(pr->explicit_p);
		pr->explicit_p = explicit_p;
		note_log_hash(p, explicit_p);
	}
	if (ns_event) {
		ppolicy_free(pr->from_ns);
		pr->from_ns = ppolicy_from_namespace(name + 4, ns_deleted ? NULL : ns_labels);
		pr->ns_known = !ns_deleted;
	}
	note_log_hash(p, pr->from_ns);
	pr->dirty = true;
	profile_labels_changing(p, name, true);
	prof_maybe_free(p, pr);
}

/* --- updates ---------------------------------------------------------------------------------- */

static void wep_update(struct pol *p, const char *key, const struct br_workloadendpoint *w)
{
	if (!w) {
		pep_replace(p, key, NULL);
		return;
	}
	const struct br_wep_spec *s = &w->spec;
	struct pep_src src = {
		.kind = PEP_WEP,
		.key = key,
		.ns = w->o.meta.namespace,
		.orchestrator = s->orchestrator,
		.iface = s->interface_name,
		.local = s->node && streq(s->node, p->nodename) && s->interface_name &&
			 s->interface_name[0],
		.labels = &w->o.meta.labels,
		.profiles = s->profiles,
		.n_profiles = s->n_profiles,
		.nets = s->ip_networks,
		.n_nets = s->n_ip_networks,
		.ports = s->ports,
		.n_ports = s->n_ports,
		.spoof_ok = s->allow_spoofed_source_prefixes,
		.n_spoof_ok = s->n_allow_spoofed_source_prefixes,
	};
	pep_replace(p, key, pep_build(&src));
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
		log_warn("HostEndpoint %s: Brindle enforces host endpoint policy on a named "
			 "interface only; this one has %s",
			 h->o.meta.name, s->interface_name ? "\"*\"" : "none");
		local = false;
	}
	struct pep_src src = {
		.kind = PEP_HEP,
		.key = key,
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
	pep_replace(p, key, pep_build(&src));
}

static void netset_update(struct pol *p, const char *key, const struct br_networkset *n)
{
	if (!n) {
		pep_replace(p, key, NULL);
		return;
	}
	struct pep_src src = {
		.kind = PEP_NETSET,
		.key = key,
		.ns = n->o.meta.namespace,
		.labels = &n->o.meta.labels,
		.nets = n->spec.nets,
		.n_nets = n->spec.n_nets,
	};
	pep_replace(p, key, pep_build(&src));
}

static void pool_update(struct pol *p, const char *name, const struct br_ippool *ip)
{
	struct ppool *old = hmap_del(&p->pools, name);
	free(old);
	if (ip) {
		struct ppool *pp = xcalloc(1, sizeof(*pp));
		if (cidr_parse(ip->spec.cidr, false, &pp->cidr) == 0 &&
		    pp->cidr.ip.family == AF_INET) {
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
		policy_set(p, id, u->obj ? ppolicy_from_np((const void *)u->obj, global) : NULL);
		arena_free(a);
		break;
	}
	case KIND_K8S_NETWORKPOLICY: {
		struct arena *a = arena_new();
		const char *id = ppolicy_id(a, PK_KNP, u->scope, u->name);
		policy_set(p, id, u->obj ? ppolicy_from_knp((const void *)u->obj) : NULL);
		arena_free(a);
		break;
	}
	case KIND_PROFILE:
		profile_set(p, u->name, u->obj ? ppolicy_from_profile((const void *)u->obj) : NULL,
			    true, NULL, false, false);
		break;
	case KIND_NAMESPACE: {
		char name[300];
		snprintf(name, sizeof(name), "kns.%s", u->name);
		const struct br_namespace *ns = (const void *)u->obj;
		profile_set(p, name, NULL, false, ns ? &ns->o.meta.labels : NULL, true, !ns);
		break;
	}
	default:
		return false;
	}
	model_free(u->obj);
	return true;
}

/* --- endpoint chains ------------------------------------------------------------------------ */

static int cmp_pentry(const void *a, const void *b)
{
	const struct pentry *x = *(struct pentry *const *)a, *y = *(struct pentry *const *)b;
	return ppolicy_cmp(x->p, y->p);
}

static void local_compute_policies(struct pol *p, struct pep *e, struct pentry ***pol, uint32_t *n)
{
	size_t cap = 0, k[2] = { 0, 0 };
	pol[0] = pol[1] = NULL;
	for (struct hmap_iter it = hmap_iter(&p->policies); hmap_next(&it);) {
		struct pentry *pe = it.value;
		const struct ppolicy *pp = pe->p;
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
			qsort(pol[d], k[d], sizeof(*pol[d]), cmp_pentry);
		n[d] = (uint32_t)k[d];
	}
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
	start(p, &b, name);
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
		cb_comment(&b, "Drop IPinIP encapped packets originating in workloads");
		cb_generic(&b, "-p %s", ipt_proto_name(4));
		cb_target(&b, "-j DROP");
		cb_emit(&b);
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
	char prefix[64];
	if (fail) {
		if (p->rc.event_log) {
			snprintf(prefix, sizeof(prefix), "D%c:f:%s", ingress ? 'i' : 'o',
				 lo->iface);
			cb_match(&b, "-m limit --limit 10/sec --limit-burst 20");
			struct strbuf t = STRBUF_INIT;
			sb_adds(&t, "-j NFLOG --nflog-prefix");
			ipt_quote(&t, prefix);
			sb_addf(&t, " --nflog-group %d", ingress ? 1 : 2);
			cb_target(&b, "%s", sb_str(&t));
			sb_free(&t);
			cb_emit(&b);
		}
		render_fail_closed(&b, fail);
		table_put(p, PT_FILTER, finish(p, &b));
		return;
	}
	for (uint32_t i = 0; i < lo->n_pol[dir]; i++) {
		struct pentry *pe = lo->pol[dir][i];
		cb_match(&b, "-m mark --mark 0x0/0x%x", m->pass);
		cb_target(&b, "-j %s", pe->chain[dir]);
		cb_emit(&b);
		cb_comment(&b, "Return if policy accepted");
		cb_match(&b, "-m mark --mark 0x%x/0x%x", m->accept, m->accept);
		cb_target(&b, "-j RETURN");
		cb_emit(&b);
	}
	if (lo->n_pol[dir]) {
		if (p->rc.event_log) {
			snprintf(prefix, sizeof(prefix), "D%c:e:%s", ingress ? 'i' : 'o',
				 lo->iface);
			cb_match(&b, "-m mark --mark 0x0/0x%x", m->pass);
			cb_match(&b, "-m limit --limit 10/sec --limit-burst 20");
			struct strbuf t = STRBUF_INIT;
			sb_adds(&t, "-j NFLOG --nflog-prefix");
			ipt_quote(&t, prefix);
			sb_addf(&t, " --nflog-group %d", ingress ? 1 : 2);
			cb_target(&b, "%s", sb_str(&t));
			sb_free(&t);
			cb_emit(&b);
		}
		cb_comment(&b, "Drop if no policies passed packet");
		cb_match(&b, "-m mark --mark 0x0/0x%x", m->pass);
		cb_target(&b, "-j DROP");
		cb_emit(&b);
	}
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
		cb_match(&b, "-m limit --limit 10/sec --limit-burst 20");
		struct strbuf t = STRBUF_INIT;
		sb_adds(&t, "-j NFLOG --nflog-prefix");
		ipt_quote(&t, prefix);
		sb_addf(&t, " --nflog-group %d", ingress ? 1 : 2);
		cb_target(&b, "%s", sb_str(&t));
		sb_free(&t);
		cb_emit(&b);
	}
	cb_comment(&b, "Drop if no profiles matched");
	cb_target(&b, "-j DROP");
	cb_emit(&b);
	table_put(p, PT_FILTER, finish(p, &b));
}

/* The anti-spoofing chain of a workload: its own addresses (and allowed prefixes) return. */
static void render_spoof(struct pol *p, struct pep *e)
{
	struct plocal *lo = e->local;
	snprintf(lo->chain[2], sizeof(lo->chain[2]), "cali-sm-%s", lo->iface);
	struct chain_builder b;
	start(p, &b, lo->chain[2]);
	for (uint32_t i = 0; i < e->n_addrs; i++) {
		cb_generic(&b, "-s %s%s", e->addrs[i], strchr(e->addrs[i], '/') ? "" : "/32");
		cb_target(&b, "-j RETURN");
		cb_emit(&b);
	}
	for (uint32_t i = 0; i < lo->n_spoof_ok; i++) {
		struct br_cidr c;
		if (cidr_parse(lo->spoof_ok[i], true, &c) < 0 || c.ip.family != AF_INET)
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
	table_put(p, PT_FILTER, finish(p, &b));
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
		for (uint32_t i = 0; i < lo->n_prof; i++)
			pprof_ref(p, lo->prof[i], d, -1);
	}
	for (uint32_t i = 0; i < lo->n_prof; i++)
		prof_maybe_free(p, lo->prof[i]);
	free(lo->prof);
	lo->prof = NULL;
	lo->n_prof = 0;
}

static void local_release(struct pol *p, struct pep *e)
{
	struct plocal *lo = e->local;
	local_unref(p, lo);
	for (int i = 0; i < 3; i++)
		if (lo->chain[i][0]) {
			table_del(p, PT_FILTER, lo->chain[i]);
			lo->chain[i][0] = '\0';
		}
}

static void render_local(struct pol *p, struct pep *e)
{
	struct plocal *lo = e->local;
	struct pentry **pol[2];
	uint32_t n[2];
	local_compute_policies(p, e, pol, n);
	/* New references first, so shared chains and sets do not flap. */
	for (int d = 0; d < 2; d++)
		for (uint32_t i = 0; i < n[d]; i++)
			pentry_ref(p, pol[d][i], d, +1);
	struct pprof **prof = e->n_profiles ? xcalloc(e->n_profiles, sizeof(*prof)) : NULL;
	for (uint32_t i = 0; i < e->n_profiles; i++) {
		prof[i] = prof_get(p, e->profiles[i]);
		pprof_ref(p, prof[i], 0, +1);
		pprof_ref(p, prof[i], 1, +1);
	}
	local_unref(p, lo);
	lo->pol[0] = pol[0];
	lo->pol[1] = pol[1];
	lo->n_pol[0] = n[0];
	lo->n_pol[1] = n[1];
	lo->prof = prof;
	lo->n_prof = e->n_profiles;
	char old_spoof[32];
	snprintf(old_spoof, sizeof(old_spoof), "%s", lo->chain[2]);
	lo->chain[2][0] = '\0';
	if (e->kind == PEP_WEP && e->n_addrs)
		render_spoof(p, e);
	else if (old_spoof[0])
		table_del(p, PT_FILTER, old_spoof);
	render_endpoint_dir(p, e, 0);
	render_endpoint_dir(p, e, 1);
}

/* --- dispatch and static chains ------------------------------------------------------------ */

static int cmp_cstr(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/*
 * A dispatch chain over interface names, as Felix builds it: names sorted,
 * their common prefix, then one level binned by the next character; a bin
 * of one goes straight to the endpoint's chain.
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
	struct chain_builder b;
	start(p, &b, root);
	size_t i = 0;
	while (i < n) {
		size_t j = i;
		while (j < n && n > 1 && names[j][common] == names[i][common])
			j++;
		if (j == i)
			j = i + 1;
		if (j - i == 1) {
			cb_generic(&b, "%s %s", opt, names[i]);
			cb_target(&b, "-g %s%s", target_prefix, names[i]);
			cb_emit(&b);
		} else {
			char child[32], pfx[20];
			snprintf(child, sizeof(child), "%s-%c", root, names[i][common]);
			snprintf(pfx, sizeof(pfx), "%.*s+", (int)(common + 1), names[i]);
			cb_generic(&b, "%s %s", opt, pfx);
			cb_target(&b, "-g %s", child);
			cb_emit(&b);
			struct chain_builder cbd;
			cb_start(&cbd, child);
			for (size_t k = i; k < j; k++) {
				cb_generic(&cbd, "%s %s", opt, names[k]);
				cb_target(&cbd, "-g %s%s", target_prefix, names[k]);
				cb_emit(&cbd);
			}
			if (drop_unknown) {
				cb_comment(&cbd, "Unknown interface");
				cb_target(&cbd, "-j DROP");
				cb_emit(&cbd);
			}
			table_put(p, PT_FILTER, cb_finish(&cbd));
			hmap_put(made, child, (void *)1);
		}
		i = j;
	}
	if (drop_unknown) {
		cb_comment(&b, "Unknown interface");
		cb_target(&b, "-j DROP");
		cb_emit(&b);
	}
	table_put(p, PT_FILTER, finish(p, &b));
	hmap_put(made, root, (void *)1);
}

static void render_dispatches(struct pol *p)
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
	render_dispatch(p, "cali-from-wl-dispatch", "-i", "cali-fw-", wl, nw, true, &made);
	render_dispatch(p, "cali-to-wl-dispatch", "-o", "cali-tw-", wl, nw, true, &made);
	if (nh) {
		render_dispatch(p, "cali-from-host-endpoint", "-i", "cali-fh-", hl, nh, false,
				&made);
		render_dispatch(p, "cali-to-host-endpoint", "-o", "cali-th-", hl, nh, false, &made);
	}
	for (struct hmap_iter it = hmap_iter(&p->dispatch); hmap_next(&it);)
		if (!hmap_has(&made, it.key))
			table_del(p, PT_FILTER, it.key);
	hmap_clear(&p->dispatch);
	p->dispatch = made;
	free(wl);
	free(hl);
}

static bool have_local_heps(const struct pol *p)
{
	for (struct hmap_iter it = hmap_iter(&p->locals); hmap_next(&it);)
		if (((const struct pep *)it.value)->kind == PEP_HEP)
			return true;
	return false;
}

static void failsafe_chain(struct pol *p, const char *name, const struct felix_failsafe *fs,
			   size_t n, bool in)
{
	struct chain_builder b;
	start(p, &b, name);
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
	table_put(p, PT_FILTER, finish(p, &b));
}

/* The static sets: pool CIDRs, and those of pools that masquerade. */
#define SET_ALL_POOLS  "cali40all-ipam-pools"
#define SET_MASQ_POOLS "cali40masq-ipam-pools"

static void static_members(struct pol *p, struct psetrec *s,
			   void (*fn)(struct pol *, struct psetrec *, const char *))
{
	bool masq = streq(s->name, SET_MASQ_POOLS);
	for (struct hmap_iter it = hmap_iter(&p->pools); hmap_next(&it);) {
		const struct ppool *pp = it.value;
		if (masq && !pp->nat_outgoing)
			continue;
		char m[20];
		net_member(&pp->cidr, m);
		fn(p, s, m);
	}
}

static struct psetrec *static_set(struct pol *p, const char *name)
{
	struct psetrec *s = hmap_get(&p->sets, name);
	if (!s) {
		s = xcalloc(1, sizeof(*s));
		snprintf(s->name, sizeof(s->name), "%s", name);
		s->kind = PSET_NETS;
		s->is_static = true;
		hmap_put(&p->sets, name, s);
	}
	return s;
}

/* Pools changed: bring active static sets to the new members. */
static void refresh_static_sets(struct pol *p)
{
	const char *names[] = { SET_ALL_POOLS, SET_MASQ_POOLS };
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
			char m[20];
			net_member(&pp->cidr, m);
			hmap_put(&want, m, (void *)1);
		}
		for (struct hmap_iter it = hmap_iter(&s->out->members); hmap_next(&it);)
			if (!hmap_has(&want, it.key)) {
				mark_member(p, s->name, it.key);
				hmap_del(&s->out->members, it.key);
			}
		for (struct hmap_iter it = hmap_iter(&want); hmap_next(&it);)
			if (!hmap_has(&s->out->members, it.key))
				member_add(p, s, it.key);
		hmap_clear(&want);
	}
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

static void render_static(struct pol *p)
{
	const struct pmarks *m = &p->marks;
	bool heps = have_local_heps(p);
	struct chain_builder b;
	/* filter cali-FORWARD */
	start(p, &b, "cali-FORWARD");
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
	table_put(p, PT_FILTER, finish(p, &b));
	/* filter cali-INPUT */
	start(p, &b, "cali-INPUT");
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
	table_put(p, PT_FILTER, finish(p, &b));
	/* filter cali-wl-to-host */
	start(p, &b, "cali-wl-to-host");
	cb_target(&b, "-j cali-from-wl-dispatch");
	cb_emit(&b);
	cb_comment(&b, "Configured DefaultEndpointToHostAction");
	const char *act = p->cfg.endpoint_to_host_action;
	cb_target(&b, "-j %s",
		  streq(act, "Accept")	 ? "ACCEPT"
		  : streq(act, "Return") ? "RETURN"
					 : "DROP");
	cb_emit(&b);
	table_put(p, PT_FILTER, finish(p, &b));
	/* filter cali-OUTPUT */
	start(p, &b, "cali-OUTPUT");
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
	table_put(p, PT_FILTER, finish(p, &b));
	if (heps) {
		failsafe_chain(p, "cali-failsafe-in", p->cfg.failsafe_in, p->cfg.n_failsafe_in,
			       true);
		failsafe_chain(p, "cali-failsafe-out", p->cfg.failsafe_out, p->cfg.n_failsafe_out,
			       false);
	} else {
		table_del(p, PT_FILTER, "cali-failsafe-in");
		table_del(p, PT_FILTER, "cali-failsafe-out");
	}
	/* nat: masquerade pod traffic leaving the pools of natOutgoing pools */
	bool masq = false;
	for (struct hmap_iter it = hmap_iter(&p->pools); hmap_next(&it);)
		masq |= ((const struct ppool *)it.value)->nat_outgoing;
	start(p, &b, "cali-POSTROUTING");
	cb_target(&b, "-j cali-nat-outgoing");
	cb_emit(&b);
	table_put(p, PT_NAT, finish(p, &b));
	start(p, &b, "cali-nat-outgoing");
	if (masq) {
		static_set(p, SET_MASQ_POOLS);
		static_set(p, SET_ALL_POOLS);
		cb_match(&b, "-m set --match-set " SET_MASQ_POOLS " src");
		cb_match(&b, "-m set ! --match-set " SET_ALL_POOLS " dst");
		cb_target(&b, "-j MASQUERADE --random-fully");
		cb_emit(&b);
	}
	table_put(p, PT_NAT, finish(p, &b));
	refresh_static_sets(p);
	/* hooks */
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
	for (int t = 0; t < PT_TABLES; t++)
		p->d.tables[t].dirty = true;
}

/* --- flush ------------------------------------------------------------------------------------ */

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
			mark_local_dirty(p, it.value);
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
		for (int d = 0; d < 2 && pe->p; d++)
			if (pe->refs[d])
				render_pentry(p, pe, d);
	}
	for (struct hmap_iter it = hmap_iter(&p->profiles); hmap_next(&it);) {
		struct pprof *pr = it.value;
		if (!pr->dirty)
			continue;
		pr->dirty = false;
		for (int d = 0; d < 2; d++)
			if (pr->refs[d])
				render_pprof(p, pr, d);
	}
	for (struct hmap_iter it = hmap_iter(&p->dirty_eps); hmap_next(&it);) {
		struct pep *e = hmap_get(&p->eps, it.key);
		if (e && e->local && hmap_get(&p->locals, e->local->iface) == e)
			render_local(p, e);
	}
	hmap_clear(&p->dirty_eps);
	/* Policies nobody references any more, deleted while referenced. */
	for (struct hmap_iter it = hmap_iter(&p->policies); hmap_next(&it);) {
		struct pentry *pe = it.value;
		if (!pe->p && !pe->refs[0] && !pe->refs[1]) {
			hmap_del(&p->policies, it.key);
			free(pe);
		}
	}
	if (p->dirty_dispatch || p->dirty_static) {
		bool heps = have_local_heps(p);
		if (heps != p->had_heps)
			p->dirty_static = true;
		p->had_heps = heps;
	}
	if (p->dirty_dispatch) {
		render_dispatches(p);
		p->dirty_dispatch = false;
	}
	if (p->dirty_static) {
		render_static(p);
		p->dirty_static = false;
	}
	/* Set records no chain uses: forget them. */
	for (struct hmap_iter it = hmap_iter(&p->sets); hmap_next(&it);) {
		struct psetrec *s = it.value;
		if (!s->refs && !s->is_static) {
			hmap_del(&p->sets, it.key);
			psetrec_free(s);
		}
	}
	collect_errors(p);
}

/* --- life cycle --------------------------------------------------------------------------------
 */

struct pol *pol_new(const char *nodename)
{
	struct pol *p = xcalloc(1, sizeof(*p));
	p->nodename = xstrdup(nodename);
	felix_config_defaults(&p->cfg);
	p->marks_ok = pmarks_from_mask(p->cfg.mark_mask, &p->marks) == 0;
	p->rc.cfg = &p->cfg;
	p->rc.marks = p->marks;
	p->rc.use_set = use_set_cb;
	p->rc.ctx = p;
	sb_init(&p->scratch);
	p->dirty_static = p->dirty_dispatch = true;
	return p;
}

void pol_set_config(struct pol *p, const struct felix_config *cfg)
{
	p->cfg = *cfg;
	p->marks_ok = pmarks_from_mask(p->cfg.mark_mask, &p->marks) == 0;
	if (!p->marks_ok)
		log_error("FELIX_IPTABLESMARKMASK 0x%x: needs at least 4 bits", p->cfg.mark_mask);
	p->rc.marks = p->marks;
	p->rc.event_log = cfg->event_log_enabled;
	p->rc.event_log_allowed = cfg->event_log_allowed;
	p->dirty_all = true;
}

void pol_free(struct pol *p)
{
	if (!p)
		return;
	for (struct hmap_iter it = hmap_iter(&p->eps); hmap_next(&it);) {
		struct pep *e = it.value;
		if (e->local) {
			for (int d = 0; d < 2; d++)
				free(e->local->pol[d]);
			free(e->local->prof);
		}
		free(e);
	}
	hmap_clear(&p->eps);
	hmap_clear(&p->locals);
	for (struct hmap_iter it = hmap_iter(&p->policies); hmap_next(&it);) {
		struct pentry *pe = it.value;
		ppolicy_free(pe->p);
		free(pe);
	}
	hmap_clear(&p->policies);
	for (struct hmap_iter it = hmap_iter(&p->profiles); hmap_next(&it);) {
		struct pprof *pr = it.value;
		ppolicy_free(pr->explicit_p);
		ppolicy_free(pr->from_ns);
		free(pr->name);
		free(pr);
	}
	hmap_clear(&p->profiles);
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
	for (struct hmap_iter it = hmap_iter(&p->pools); hmap_next(&it);)
		free(it.value);
	hmap_clear(&p->pools);
	for (int t = 0; t < PT_TABLES; t++) {
		for (struct hmap_iter it = hmap_iter(&p->d.tables[t].chains); hmap_next(&it);)
			pchain_free(it.value);
		hmap_clear(&p->d.tables[t].chains);
		hooks_free(&p->d.tables[t]);
	}
	hmap_clear(&p->d.sets);
	hmap_clear(&p->d.dirty_sets);
	hmap_clear(&p->d.dirty_members);
	hmap_clear(&p->dirty_eps);
	for (struct hmap_iter it = hmap_iter(&p->log_hashes); hmap_next(&it);)
		free(it.value);
	hmap_clear(&p->log_hashes);
	hmap_clear(&p->dispatch);
	for (size_t i = 0; i < p->n_errors; i++)
		free(p->errors[i]);
	free(p->errors);
	sb_free(&p->scratch);
	free(p->nodename);
	free(p);
}

struct pol_desired *pol_desired(struct pol *p)
{
	return &p->d;
}

void pol_clear_dirty(struct pol *p)
{
	for (int t = 0; t < PT_TABLES; t++)
		p->d.tables[t].dirty = false;
	hmap_clear(&p->d.dirty_sets);
	hmap_clear(&p->d.dirty_members);
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
	/* "Di:p:<hash>:<rule>": find the policy's id from its hash */
	if (strlen(prefix) < 5 || prefix[2] != ':' || (prefix[3] != 'p' && prefix[3] != 'r'))
		return NULL;
	char h[13];
	snprintf(h, sizeof(h), "%.12s", prefix + 5);
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
		out->chains += p->d.tables[t].chains.n;
		for (struct hmap_iter it = hmap_iter(&p->d.tables[t].chains); hmap_next(&it);)
			out->rules += ((const struct pchain *)it.value)->n;
	}
}

/* --- self-check (tests) -------------------------------------------------------------------- */

static void verify_add(struct pol *p, struct psetrec *s, const char *m)
{
	(void)s;
	struct hmap *want = p->verify_want;
	hmap_put(want, m, (void *)((uintptr_t)hmap_get(want, m) + 1));
}

int pol_verify_sets(struct pol *p, struct strbuf *err)
{
	int rc = 0;
	for (size_t i = 0; i < p->n_active; i++) {
		struct psetrec *s = p->active[i];
		if (s->is_static || s->kind == PSET_NETS)
			continue;
		struct hmap want = HMAP_INIT;
		p->verify_want = &want;
		for (struct hmap_iter it = hmap_iter(&p->eps); hmap_next(&it);)
			contributions(p, it.value, s, verify_add);
		p->verify_want = NULL;
		const struct hmap *have = &s->out->members;
		for (struct hmap_iter it = hmap_iter(&want); hmap_next(&it);)
			if (hmap_get(have, it.key) != it.value) {
				sb_addf(err, "%s: %s counted %zu, expected %zu\n", s->name, it.key,
					(size_t)(uintptr_t)hmap_get(have, it.key),
					(size_t)(uintptr_t)it.value);
				rc = -1;
			}
		for (struct hmap_iter it = hmap_iter(have); hmap_next(&it);)
			if (!hmap_has(&want, it.key)) {
				sb_addf(err, "%s: %s is a member but matches nothing\n", s->name,
					it.key);
				rc = -1;
			}
		hmap_clear(&want);
	}
	return rc;
}
