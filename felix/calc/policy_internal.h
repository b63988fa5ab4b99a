/*
 * Inside felix's policy core: parsed policies and rules (policy_parse.c), the
 * rule renderer (policy_render.c) and the state that ties them to endpoints
 * (policy.c).
 */
#ifndef FELIX_POLICY_INTERNAL_H
#define FELIX_POLICY_INTERNAL_H

#include "policy.h"

#include <brindle/arena.h>
#include <brindle/net.h>
#include <brindle/sel.h>
#include <brindle/strbuf.h>

enum pact {
	PACT_ALLOW,
	PACT_DENY,
	PACT_LOG,
	PACT_PASS,
};

struct prange {
	uint16_t min, max;
};

/* A named port, resolved per endpoint into an ip,port set. */
struct pnamed {
	const char *name;
	uint8_t proto; /* the rule's protocol */
};

struct pentity {
	struct sel *sel;     /* composed with the namespace part; NULL: any */
	struct sel *not_sel; /* NULL: none */
	struct br_cidr *nets, *not_nets;
	uint32_t n_nets, n_not_nets;
	struct prange *ports, *not_ports;
	uint32_t n_ports, n_not_ports;
	struct pnamed *named, *not_named;
	uint32_t n_named, n_not_named;
	/* Which selector a named port is looked up over (the entity's own, or the policy's for
	 * the destination of an ingress rule): set by the parser. */
	struct sel *named_sel;
};

struct prule {
	enum pact action;
	int index; /* position in the policy's ingress or egress list */
	uint8_t proto, not_proto; /* 0: none */
	bool has_icmp, has_not_icmp;
	int icmp_type, icmp_code, not_icmp_type, not_icmp_code; /* code -1: any */
	struct pentity src, dst;
};

enum pkind {
	PK_NP,	/* projectcalico.org/v3 NetworkPolicy */
	PK_GNP, /* GlobalNetworkPolicy */
	PK_KNP, /* networking.k8s.io/v1 NetworkPolicy */
	PK_PROFILE,
};

struct ppolicy {
	struct arena *a; /* everything below, except the selectors */
	enum pkind kind;
	const char *id;	     /* "np/ns/name", "gnp/name", "knp/ns/name", "pr/name" */
	const char *display; /* "NetworkPolicy ns/name", ... for comments and logs */
	const char *ns;	     /* NULL when global */
	double order;	     /* +inf when unset */
	struct sel *selector;
	bool ingress, egress;
	struct prule *in, *out;
	uint32_t n_in, n_out;
	const char *error; /* set: cannot be rendered (fail closed) */
	/* profiles only */
	struct br_labels labels; /* labelsToApply (kns.: pcns.-prefixed namespace labels) */
};

/* The id of a policy (arena-allocated): "np/ns/name". */
const char *ppolicy_id(struct arena *a, enum pkind kind, const char *ns, const char *name);

/* Parse a resource of a policy kind into *out; never fails: problems set ->error. */
struct ppolicy *ppolicy_from_np(const struct br_networkpolicy *np, bool global);
struct ppolicy *ppolicy_from_knp(const struct br_k8s_networkpolicy *knp);
struct ppolicy *ppolicy_from_profile(const struct br_profile *pr);
/* The profile a namespace stands for: kns.<ns>, allow-all, its labels as pcns.* */
struct ppolicy *ppolicy_from_namespace(const char *ns, const struct br_labels *labels);
void ppolicy_free(struct ppolicy *p);

/* Order for the policies of an endpoint: order, then id. */
int ppolicy_cmp(const struct ppolicy *a, const struct ppolicy *b);

/* --- rendering --------------------------------------------------------------------- */

/* Mark bits, from the configured mask. */
struct pmarks {
	uint32_t accept, pass, scratch0, scratch1, all;
};
int pmarks_from_mask(uint32_t mask, struct pmarks *out);

/* Interface the renderer uses to turn a set description into a set name (and take a reference). */
enum pset_kind {
	PSET_SEL,   /* hash:net of the addresses of what a selector matches */
	PSET_NAMED, /* hash:ip,port of a named port over what a selector matches */
	PSET_NETS,  /* hash:net of a CIDR list */
};

struct pset_ref {
	enum pset_kind kind;
	const struct sel *sel; /* SEL, NAMED */
	const struct pnamed *named;
	const struct br_cidr *nets; /* NETS */
	uint32_t n_nets;
};

struct render_ctx {
	const struct felix_config *cfg;
	struct pmarks marks;
	/* Returns the set's name and records that the chain being rendered uses it. */
	const char *(*use_set)(void *ctx, const struct pset_ref *ref);
	void *ctx;
	bool event_log, event_log_allowed;
};

/* A chain being built: rule texts with their ids. */
struct chain_builder {
	struct pchain *c;
	uint32_t cap;
	uint8_t prev[28]; /* the previous rule's hash (chained ids) */
	struct strbuf generic, matches, target;
};

void cb_start(struct chain_builder *b, const char *name);
/* The chain (caller owns). */
struct pchain *cb_finish(struct chain_builder *b);
void pchain_free(struct pchain *c);

/* Rule assembly: generic options, then matches, then the target; cb_emit adds the id. */
void cb_generic(struct chain_builder *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cb_match(struct chain_builder *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cb_comment(struct chain_builder *b, const char *text);
void cb_target(struct chain_builder *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cb_emit(struct chain_builder *b);
/* Append @s as iptables-save quotes a string (leading space included). */
void ipt_quote(struct strbuf *out, const char *s);

/* A chain name: prefix + suffix, or prefix + "_" + hash when that is too long. */
void chain_name(char out[32], const char *prefix, const char *suffix);

/* The rules of one direction of a policy or profile, into @b (which the caller started). */
void render_policy_rules(struct chain_builder *b, const struct render_ctx *rc,
			 const struct ppolicy *p, bool ingress);
/* The short form of a policy's id in NFLOG prefixes (12 characters). */
void policy_log_hash(const char *id, char out[13]);

/* A fail-closed chain body: drop everything, saying why. */
void render_fail_closed(struct chain_builder *b, const char *why);

#endif
