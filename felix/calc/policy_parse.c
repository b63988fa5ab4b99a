/*
 * Policies and profiles as the renderer needs them: selectors composed with
 * their namespace and service account, ports split into numeric ranges and
 * names, nets parsed and reduced to one family (the one the policy is parsed
 * for: each family's tables are rendered from a parse of their own), and
 * Kubernetes NetworkPolicy turned into allow rules the way Calico converts it. Anything that cannot
 * be expressed sets ->error: the policy then fails closed.
 */
#include "policy_internal.h"

#include <brindle/core/util.h>

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NS_LABEL   "projectcalico.org/namespace"
#define ORCH_LABEL "projectcalico.org/orchestrator"
#define SA_LABEL   "projectcalico.org/serviceaccount"

const char *ppolicy_id(struct arena *a, enum pkind kind, const char *ns, const char *name)
{
	switch (kind) {
	case PK_NP:
		return arena_printf(a, "np/%s/%s", ns, name);
	case PK_KNP:
		return arena_printf(a, "knp/%s/%s", ns, name);
	case PK_GNP:
		return arena_printf(a, "gnp/%s", name);
	case PK_SNP:
		return arena_printf(a, "snp/%s/%s", ns, name);
	case PK_SKNP:
		return arena_printf(a, "sknp/%s/%s", ns, name);
	case PK_SGNP:
		return arena_printf(a, "sgnp/%s", name);
	case PK_PROFILE:
		break;
	}
	return arena_printf(a, "pr/%s", name);
}

static struct ppolicy *ppolicy_new(int af, enum pkind kind, const char *ns, const char *name)
{
	struct ppolicy *p = xcalloc(1, sizeof(*p));
	p->a = arena_new();
	p->af = af;
	p->kind = kind;
	p->ns = ns ? arena_strdup(p->a, ns) : NULL;
	p->id = ppolicy_id(p->a, kind, ns, name);
	switch (kind) {
	case PK_NP:
		p->display = arena_printf(p->a, "NetworkPolicy %s/%s", ns, name);
		break;
	case PK_KNP:
		p->display = arena_printf(p->a, "KubernetesNetworkPolicy %s/%s", ns, name);
		break;
	case PK_GNP:
		p->display = arena_printf(p->a, "GlobalNetworkPolicy %s", name);
		break;
	case PK_PROFILE:
		p->display = arena_printf(p->a, "Profile %s", name);
		break;
	case PK_SNP:
		p->display = arena_printf(p->a, "StagedNetworkPolicy %s/%s", ns, name);
		break;
	case PK_SKNP:
		p->display = arena_printf(p->a, "StagedKubernetesNetworkPolicy %s/%s", ns, name);
		break;
	case PK_SGNP:
		p->display = arena_printf(p->a, "StagedGlobalNetworkPolicy %s", name);
		break;
	}
	p->order = INFINITY;
	return p;
}

static void fail(struct ppolicy *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(struct ppolicy *p, const char *fmt, ...)
{
	if (p->error)
		return; /* the first problem is the one reported */
	va_list ap;
	va_start(ap, fmt);
	const char *why = arena_vprintf(p->a, fmt, ap);
	va_end(ap);
	p->error = arena_printf(p->a, "%s: %s", p->display, why);
}

static void entity_free(struct pentity *e)
{
	sel_free(e->sel);
	sel_free(e->not_sel);
	sel_free(e->named_sel);
}

void ppolicy_free(struct ppolicy *p)
{
	if (!p)
		return;
	for (uint32_t i = 0; i < p->n_in; i++) {
		entity_free(&p->in[i].src);
		entity_free(&p->in[i].dst);
	}
	for (uint32_t i = 0; i < p->n_out; i++) {
		entity_free(&p->out[i].src);
		entity_free(&p->out[i].dst);
	}
	sel_free(p->selector);
	arena_free(p->a);
	free(p);
}

int ppolicy_cmp(const struct ppolicy *a, const struct ppolicy *b)
{
	if (a->order < b->order)
		return -1;
	if (a->order > b->order)
		return 1;
	return strcmp(a->id, b->id);
}

/* --- selectors ------------------------------------------------------------------------ */

static struct sel *parse_sel(struct ppolicy *p, const char *what, const char *text)
{
	struct sel *s = NULL;
	struct strbuf err = STRBUF_INIT;
	if (sel_parse(text, &s, &err) < 0) {
		fail(p, "%s: %s", what, sb_str(&err));
		s = sel_not(sel_all()); /* matches nothing */
	}
	sb_free(&err);
	return s;
}

/*
 * A namespace selector over endpoints: their namespace's labels are theirs
 * with the "pcns." prefix; all() means every namespaced thing.
 */
static struct sel *ns_sel_of(struct sel *s)
{
	if (sel_is_all(s)) {
		sel_free(s);
		return sel_has(NS_LABEL);
	}
	struct sel *r = sel_prefix_keys(s, "pcns.");
	sel_free(s);
	return r;
}

/*
 * A service-account selector over endpoints: their service account's labels
 * are the ones its profile ksa.<ns>.<sa> applies, with the "pcsa." prefix.
 * As Calico converts them: a policy's all() means every endpoint that has a
 * service account; a rule's all() stays all() (its namespace part still
 * scopes it).
 */
static struct sel *sa_sel_of(struct sel *s, bool policy_level)
{
	if (policy_level && sel_is_all(s)) {
		sel_free(s);
		return sel_has(SA_LABEL);
	}
	struct sel *r = sel_prefix_keys(s, "pcsa.");
	sel_free(s);
	return r;
}

static struct sel *and_opt(struct sel *a, struct sel *b)
{
	if (!a)
		return b;
	if (!b)
		return a;
	return sel_and(a, b);
}

/* --- Calico rules --------------------------------------------------------------------- */

/* The namespace part of an entity of a rule in a policy of namespace @ns (NULL: global). */
static struct sel *entity_ns_part(struct ppolicy *p, const struct br_entity_rule *e)
{
	if (e->namespace_selector)
		return ns_sel_of(parse_sel(p, "namespaceSelector", e->namespace_selector));
	if (p->ns)
		return sel_eq(NS_LABEL, p->ns);
	return NULL;
}

/* The networks of @in in the policy's family into @out; *n_other counts the others. */
static void parse_nets(struct ppolicy *p, const char *const *in, size_t n, struct br_cidr **out,
		       uint32_t *n_out, size_t *n_other)
{
	*out = NULL;
	*n_out = 0;
	*n_other = 0;
	if (!n)
		return;
	*out = arena_alloc(p->a, sizeof(**out) * n);
	for (size_t i = 0; i < n; i++) {
		struct br_cidr c;
		if (cidr_parse(in[i], true, &c) < 0) {
			fail(p, "\"%s\" is not a network", in[i]);
			continue;
		}
		if (c.ip.family != p->af) {
			(*n_other)++;
			continue;
		}
		cidr_mask(&c);
		(*out)[(*n_out)++] = c;
	}
}

static void parse_ports(struct ppolicy *p, const struct br_port_list *l, uint8_t proto,
			struct prange **ranges, uint32_t *n_ranges, struct pnamed **named,
			uint32_t *n_named)
{
	*ranges = NULL;
	*named = NULL;
	*n_ranges = *n_named = 0;
	if (!l->n)
		return;
	*ranges = arena_alloc(p->a, sizeof(**ranges) * l->n);
	*named = arena_alloc(p->a, sizeof(**named) * l->n);
	for (size_t i = 0; i < l->n; i++) {
		const struct br_port *pt = &l->v[i];
		if (pt->name && pt->name[0])
			(*named)[(*n_named)++] =
				(struct pnamed){ arena_strdup(p->a, pt->name), proto };
		else
			(*ranges)[(*n_ranges)++] = (struct prange){ pt->min, pt->max };
	}
}

/* Fill @out from a Calico entity; false when the rule cannot match the policy's family. */
static bool parse_entity(struct ppolicy *p, const struct br_entity_rule *e, uint8_t proto,
			 struct pentity *out)
{
	memset(out, 0, sizeof(*out));
	if (e->services) {
		fail(p, "a rule matches services, which Brindle does not support");
		return false;
	}
	struct sel *sa = NULL;
	const struct br_sa_match *sam = e->service_accounts;
	if (sam && sam->n_names)
		sa = sel_in(SA_LABEL, sam->names, sam->n_names);
	if (sam && sam->selector && sam->selector[0])
		sa = and_opt(sa, sa_sel_of(parse_sel(p, "serviceAccounts.selector", sam->selector),
					   false));
	if (e->selector || e->namespace_selector || sa) {
		struct sel *s = e->selector ? parse_sel(p, "selector", e->selector) : NULL;
		out->sel = and_opt(and_opt(entity_ns_part(p, e), sa), s);
		if (!out->sel)
			out->sel = sel_all();
	}
	if (e->not_selector)
		out->not_sel = and_opt(entity_ns_part(p, e),
				       parse_sel(p, "notSelector", e->not_selector));
	size_t other = 0, not_other = 0;
	parse_nets(p, e->nets, e->n_nets, &out->nets, &out->n_nets, &other);
	parse_nets(p, e->not_nets, e->n_not_nets, &out->not_nets, &out->n_not_nets, &not_other);
	parse_ports(p, &e->ports, proto, &out->ports, &out->n_ports, &out->named, &out->n_named);
	parse_ports(p, &e->not_ports, proto, &out->not_ports, &out->n_not_ports, &out->not_named,
		    &out->n_not_named);
	/* Only networks of the other family: the rule cannot match this one's traffic. */
	return !(e->n_nets && !out->n_nets && other);
}

static void entity_clear(struct pentity *e)
{
	entity_free(e);
	memset(e, 0, sizeof(*e));
}

/*
 * Named ports are resolved over a selector: for the local side of a rule (the
 * destination of an ingress rule, the source of an egress rule) the policy's
 * own selector narrows it, since only its endpoints reach this chain.
 */
static void set_named_sels(struct ppolicy *p, struct prule *r, bool ingress)
{
	struct pentity *local = ingress ? &r->dst : &r->src;
	struct pentity *remote = ingress ? &r->src : &r->dst;
	if (local->n_named || local->n_not_named) {
		struct sel *s = p->selector ? sel_clone(p->selector) : NULL;
		if (local->sel)
			s = and_opt(s, sel_clone(local->sel));
		local->named_sel = s ? s : sel_all();
	}
	if (remote->n_named || remote->n_not_named)
		remote->named_sel = remote->sel ? sel_clone(remote->sel) : sel_all();
}

static bool parse_rule(struct ppolicy *p, const struct br_rule *in, int index, bool ingress,
		       struct prule *out)
{
	memset(out, 0, sizeof(*out));
	out->index = index;
	if (in->ip_version.set && in->ip_version.v != (p->af == AF_INET6 ? 6 : 4))
		return false;
	if (streq(in->action, "Allow"))
		out->action = PACT_ALLOW;
	else if (streq(in->action, "Deny"))
		out->action = PACT_DENY;
	else if (streq(in->action, "Log"))
		out->action = PACT_LOG;
	else if (streq(in->action, "Pass"))
		out->action = PACT_PASS;
	else
		fail(p, "unknown action \"%s\"", in->action);
	if (in->protocol.set) {
		/* ICMP is IPv4's, ICMPv6 IPv6's: the other family's rules leave it out */
		if (in->protocol.number == (p->af == AF_INET6 ? 1 : 58))
			return false;
		out->proto = in->protocol.number;
	}
	if (in->not_protocol.set)
		out->not_proto = in->not_protocol.number;
	if (in->icmp) {
		out->has_icmp = true;
		out->icmp_type = in->icmp->type.set ? (int)in->icmp->type.v : -1;
		out->icmp_code = in->icmp->code.set ? (int)in->icmp->code.v : -1;
	}
	if (in->not_icmp) {
		out->has_not_icmp = true;
		out->not_icmp_type = in->not_icmp->type.set ? (int)in->not_icmp->type.v : -1;
		out->not_icmp_code = in->not_icmp->code.set ? (int)in->not_icmp->code.v : -1;
	}
	bool ok = parse_entity(p, &in->source, out->proto, &out->src);
	ok = parse_entity(p, &in->destination, out->proto, &out->dst) && ok;
	if (!ok) {
		entity_clear(&out->src);
		entity_clear(&out->dst);
		return false;
	}
	set_named_sels(p, out, ingress);
	return true;
}

static void parse_rules(struct ppolicy *p, const struct br_rule *in, size_t n, bool ingress)
{
	struct prule *v = n ? arena_alloc(p->a, sizeof(*v) * n) : NULL;
	uint32_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (parse_rule(p, &in[i], (int)i, ingress, &v[k]))
			k++;
	if (ingress) {
		p->in = v;
		p->n_in = k;
	} else {
		p->out = v;
		p->n_out = k;
	}
}

static struct ppolicy *from_np(int af, const struct br_networkpolicy *np, enum pkind kind)
{
	const struct br_policy_spec *s = &np->spec;
	bool global = kind == PK_GNP || kind == PK_SGNP;
	struct ppolicy *p =
		ppolicy_new(af, kind, global ? NULL : np->o.meta.namespace, np->o.meta.name);
	if (s->order.set)
		p->order = s->order.v;
	p->tier = arena_strdup(p->a, s->tier && *s->tier ? s->tier : "default");
	for (size_t i = 0; i < s->n_ingress + s->n_egress; i++)
		if ((i < s->n_ingress ? &s->ingress[i] : &s->egress[i - s->n_ingress])->has_http)
			fail(p,
			     "%s rule %zu: an http match needs an L7 proxy, which Brindle does not "
			     "have (endpoints it applies to are denied)",
			     i < s->n_ingress ? "ingress" : "egress",
			     i < s->n_ingress ? i : i - s->n_ingress);
	if (s->do_not_track || s->pre_dnat || s->apply_on_forward)
		fail(p, "%s is not supported",
		     s->do_not_track ? "doNotTrack"
		     : s->pre_dnat   ? "preDNAT"
				     : "applyOnForward");
	struct sel *sel = parse_sel(p, "selector", s->selector ? s->selector : "");
	if (!global)
		sel = sel_and(sel, sel_eq(NS_LABEL, p->ns));
	else if (s->namespace_selector && s->namespace_selector[0])
		sel = sel_and(sel, ns_sel_of(parse_sel(p, "namespaceSelector",
						       s->namespace_selector)));
	if (s->service_account_selector && s->service_account_selector[0])
		sel = sel_and(sel, sa_sel_of(parse_sel(p, "serviceAccountSelector",
						       s->service_account_selector),
					     true));
	p->selector = sel;
	for (size_t i = 0; i < s->n_types; i++) {
		if (streq(s->types[i], "Ingress"))
			p->ingress = true;
		else if (streq(s->types[i], "Egress"))
			p->egress = true;
	}
	parse_rules(p, s->ingress, s->n_ingress, true);
	parse_rules(p, s->egress, s->n_egress, false);
	return p;
}

struct ppolicy *ppolicy_from_np(int af, const struct br_networkpolicy *np, bool global)
{
	return from_np(af, np, global ? PK_GNP : PK_NP);
}

/*
 * What a staged policy previews, from its stagedAction: Set (the default) the
 * policy as written, in place of the enforced one of the same name; Delete
 * that policy gone; Learn and Ignore nothing (Calico's policy recommendation
 * uses them).
 */
static struct ppolicy *staged(struct ppolicy *p, const struct br_object *o, const char *action,
			      enum pkind enforced)
{
	p->staged = true;
	bool learn = action && (streq(action, "Learn") || streq(action, "Ignore"));
	p->staged_delete = action && streq(action, "Delete");
	if (!learn)
		p->target = ppolicy_id(p->a, enforced, p->ns, o->meta.name);
	if (learn || p->staged_delete) {
		sel_free(p->selector);
		p->selector = NULL; /* applies to no endpoint itself */
	}
	return p;
}

struct ppolicy *ppolicy_from_staged_np(int af, const struct br_networkpolicy *np, bool global)
{
	return staged(from_np(af, np, global ? PK_SGNP : PK_SNP), &np->o, np->spec.staged_action,
		      global ? PK_GNP : PK_NP);
}

struct ppolicy *ppolicy_from_profile(int af, const struct br_profile *pr)
{
	struct ppolicy *p = ppolicy_new(af, PK_PROFILE, NULL, pr->o.meta.name);
	p->ingress = p->egress = true;
	p->labels = labels_copy(p->a, &pr->spec.labels_to_apply);
	parse_rules(p, pr->spec.ingress, pr->spec.n_ingress, true);
	parse_rules(p, pr->spec.egress, pr->spec.n_egress, false);
	return p;
}

struct ppolicy *ppolicy_empty_profile(const char *name)
{
	struct ppolicy *p = ppolicy_new(AF_UNSPEC, PK_PROFILE, NULL, name); /* no rules */
	p->ingress = p->egress = true;
	return p;
}

struct ppolicy *ppolicy_from_namespace(const char *ns, const struct br_labels *labels)
{
	char name[300];
	snprintf(name, sizeof(name), "kns.%s", ns);
	struct ppolicy *p = ppolicy_new(AF_UNSPEC, PK_PROFILE, NULL, name); /* allow all */
	p->ingress = p->egress = true;
	for (size_t i = 0; labels && i < labels->n; i++) {
		char *k = arena_printf(p->a, "pcns.%s", labels->v[i].key);
		labels_set(p->a, &p->labels, k, labels->v[i].value);
	}
	labels_set(p->a, &p->labels, "pcns.projectcalico.org/name", ns);
	if (!labels_has(&p->labels, "pcns.kubernetes.io/metadata.name"))
		labels_set(p->a, &p->labels, "pcns.kubernetes.io/metadata.name", ns);
	p->in = arena_alloc(p->a, sizeof(*p->in));
	p->out = arena_alloc(p->a, sizeof(*p->out));
	memset(p->in, 0, sizeof(*p->in));
	memset(p->out, 0, sizeof(*p->out));
	p->in[0].action = p->out[0].action = PACT_ALLOW;
	p->n_in = p->n_out = 1;
	return p;
}

/* --- Kubernetes NetworkPolicy ------------------------------------------------------------ */

static uint8_t k8s_proto(const char *s)
{
	if (!s || streq(s, "TCP"))
		return 6;
	if (streq(s, "UDP"))
		return 17;
	if (streq(s, "SCTP"))
		return 132;
	return 0;
}

/* The ports of one protocol in a Kubernetes rule. */
struct kgroup {
	uint8_t proto; /* 0: no ports given (any protocol) */
	bool any_port;
	struct prange *ranges;
	uint32_t n_ranges;
	struct pnamed *named;
	uint32_t n_named;
};

static size_t k8s_groups(struct ppolicy *p, const struct br_k8s_np_rule *r, struct kgroup *g)
{
	if (!r->n_ports) {
		memset(&g[0], 0, sizeof(g[0]));
		g[0].any_port = true;
		return 1;
	}
	size_t n = 0;
	for (size_t i = 0; i < r->n_ports; i++) {
		const struct br_k8s_np_port *pt = &r->ports[i];
		uint8_t proto = k8s_proto(pt->protocol);
		if (!proto) {
			fail(p, "protocol \"%s\" is not supported", pt->protocol);
			continue;
		}
		size_t k = 0;
		while (k < n && g[k].proto != proto)
			k++;
		if (k == n) {
			memset(&g[n], 0, sizeof(g[n]));
			g[n].proto = proto;
			g[n].ranges = arena_alloc(p->a, sizeof(*g[n].ranges) * r->n_ports);
			g[n].named = arena_alloc(p->a, sizeof(*g[n].named) * r->n_ports);
			n++;
		}
		struct kgroup *kg = &g[k];
		switch (pt->port.type) {
		case IOS_NONE:
			kg->any_port = true;
			break;
		case IOS_INT: {
			uint16_t lo = (uint16_t)pt->port.i;
			uint16_t hi = pt->end_port.set ? (uint16_t)pt->end_port.v : lo;
			kg->ranges[kg->n_ranges++] = (struct prange){ lo, hi };
			break;
		}
		case IOS_STRING:
			kg->named[kg->n_named++] =
				(struct pnamed){ arena_strdup(p->a, pt->port.s), proto };
			break;
		}
	}
	for (size_t k = 0; k < n; k++)
		if (g[k].any_port)
			g[k].n_ranges = g[k].n_named = 0;
	return n;
}

static struct sel *k8s_ns_sel(const struct br_label_selector *ls)
{
	return ns_sel_of(sel_from_k8s(ls));
}

/* The peer of a Kubernetes rule as an entity (@peer NULL: anything). */
static void k8s_peer(struct ppolicy *p, const struct br_k8s_np_peer *peer, struct pentity *e)
{
	memset(e, 0, sizeof(*e));
	if (!peer)
		return;
	if (peer->ip_block) {
		size_t other = 0, not_other = 0;
		const char *cidr = peer->ip_block->cidr;
		parse_nets(p, &cidr, 1, &e->nets, &e->n_nets, &other);
		parse_nets(p, peer->ip_block->except, peer->ip_block->n_except, &e->not_nets,
			   &e->n_not_nets, &not_other);
		return;
	}
	struct sel *s = sel_eq(ORCH_LABEL, "k8s");
	if (peer->pod_selector)
		s = sel_and(s, sel_from_k8s(peer->pod_selector));
	if (peer->namespace_selector)
		s = sel_and(s, k8s_ns_sel(peer->namespace_selector));
	else
		s = sel_and(s, sel_eq(NS_LABEL, p->ns));
	e->sel = s;
}

static struct sel *clone_opt(const struct sel *s)
{
	return s ? sel_clone(s) : NULL;
}

static void k8s_rules(struct ppolicy *p, const struct br_k8s_np_rule *rules, size_t n,
		      bool ingress)
{
	size_t total = 0;
	for (size_t i = 0; i < n; i++)
		total += (rules[i].n_peers ? rules[i].n_peers : 1) *
			 (rules[i].n_ports ? rules[i].n_ports : 1);
	struct prule *v = total ? arena_alloc(p->a, sizeof(*v) * total) : NULL;
	uint32_t k = 0;
	for (size_t i = 0; i < n; i++) {
		const struct br_k8s_np_rule *r = &rules[i];
		struct kgroup *g = arena_alloc(p->a, sizeof(*g) * (r->n_ports ? r->n_ports : 1));
		size_t ng = k8s_groups(p, r, g);
		size_t npeers = r->n_peers ? r->n_peers : 1;
		for (size_t j = 0; j < npeers; j++) {
			struct pentity peer;
			k8s_peer(p, r->n_peers ? &r->peers[j] : NULL, &peer);
			/* A peer whose ipBlock is of the other family matches nothing here. */
			bool skip = r->n_peers && r->peers[j].ip_block && !peer.n_nets;
			for (size_t q = 0; q < ng && !skip; q++) {
				struct prule *pr = &v[k++];
				memset(pr, 0, sizeof(*pr));
				pr->action = PACT_ALLOW;
				pr->index = (int)i;
				pr->proto = g[q].proto;
				struct pentity *remote = ingress ? &pr->src : &pr->dst;
				struct pentity *ports = &pr->dst;
				*remote = peer;
				remote->sel = clone_opt(peer.sel);
				ports->ports = g[q].ranges;
				ports->n_ports = g[q].n_ranges;
				ports->named = g[q].named;
				ports->n_named = g[q].n_named;
				set_named_sels(p, pr, ingress);
			}
			sel_free(peer.sel);
		}
	}
	if (ingress) {
		p->in = v;
		p->n_in = k;
	} else {
		p->out = v;
		p->n_out = k;
	}
}

static struct ppolicy *from_knp(int af, const struct br_k8s_networkpolicy *knp, enum pkind kind)
{
	const struct br_k8s_np_spec *s = &knp->spec;
	struct ppolicy *p = ppolicy_new(af, kind, knp->o.meta.namespace, knp->o.meta.name);
	p->order = 1000; /* in the default tier, as Calico places them */
	p->tier = "default";
	p->selector = sel_and(sel_and(sel_eq(ORCH_LABEL, "k8s"), sel_from_k8s(&s->pod_selector)),
			      sel_eq(NS_LABEL, p->ns));
	for (size_t i = 0; i < s->n_policy_types; i++) {
		if (streq(s->policy_types[i], "Ingress"))
			p->ingress = true;
		else if (streq(s->policy_types[i], "Egress"))
			p->egress = true;
	}
	if (p->ingress)
		k8s_rules(p, s->ingress, s->n_ingress, true);
	if (p->egress)
		k8s_rules(p, s->egress, s->n_egress, false);
	return p;
}

struct ppolicy *ppolicy_from_knp(int af, const struct br_k8s_networkpolicy *knp)
{
	return from_knp(af, knp, PK_KNP);
}

struct ppolicy *ppolicy_from_staged_knp(int af, const struct br_k8s_networkpolicy *knp)
{
	return staged(from_knp(af, knp, PK_SKNP), &knp->o, knp->spec.staged_action, PK_KNP);
}
