/*
 * Inside felix's policy core. The modules, each using only those below it:
 *
 *   policy.c         the core: updates in, pol_flush, the endpoints' life cycle
 *   applicable.c     which policies and profiles apply to which local endpoint
 *   chains.c         the desired tables: policy, profile, endpoint, dispatch
 *                    and static chains, and the hooks
 *   sets.c           the ip sets chains use, and the label index that keeps
 *                    their members
 *   endpoint.c       endpoint records and their effective labels
 *   rules.c          the chain builder (rule ids) and the rules of a policy
 *   policy_parse.c   policies and profiles as the renderer needs them
 *
 * All of it is pure: data in, rule text and set members out.
 *
 * A core renders one address family (pol_new): the IPv4 core iptables rules
 * and cali40 sets, the IPv6 core ip6tables rules and cali60 sets. Addresses,
 * networks and rules of the other family are left out as they are parsed
 * (a rule whose networks are all of the other family matches nothing here).
 */
#ifndef FELIX_POLICY_INTERNAL_H
#define FELIX_POLICY_INTERNAL_H

#include "notices.h"
#include "policy.h"

#include <brindle/core/arena.h>
#include <brindle/core/net.h>
#include <brindle/core/sel.h>
#include <brindle/core/strbuf.h>

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
	/* the staged kinds: previewed in the event log, never enforced */
	PK_SNP,	 /* StagedNetworkPolicy */
	PK_SGNP, /* StagedGlobalNetworkPolicy */
	PK_SKNP, /* StagedKubernetesNetworkPolicy */
};

struct ppolicy {
	struct arena *a; /* everything below, except the selectors */
	int af;		 /* the family its networks and rules were kept for */
	enum pkind kind;
	const char *id;	     /* "np/ns/name", "gnp/name", "knp/ns/name", "pr/name" */
	const char *display; /* "NetworkPolicy ns/name", ... for comments and logs */
	const char *ns;	     /* NULL when global */
	double order;	     /* +inf when unset */
	const char *tier;    /* its tier's name ("default"); NULL for profiles */
	struct sel *selector;
	bool ingress, egress;
	struct prule *in, *out;
	uint32_t n_in, n_out;
	const char *error; /* set: cannot be rendered (fail closed) */
	/*
	 * Staged policies: the enforced policy's id it stands for ("np/ns/name"; NULL for the
	 * stagedActions Learn and Ignore, which are not previewed), and whether it previews
	 * that policy's deletion (stagedAction Delete: no selector, no rules).
	 */
	bool staged;
	bool staged_delete;
	const char *target;
	/* profiles only */
	struct br_labels labels; /* labelsToApply (kns.: pcns.-prefixed namespace labels) */
};

/* The id of a policy (arena-allocated): "np/ns/name". */
const char *ppolicy_id(struct arena *a, enum pkind kind, const char *ns, const char *name);

/*
 * Parse a resource of a policy kind for family @af (AF_INET, AF_INET6); never fails:
 * problems set ->error.
 */
struct ppolicy *ppolicy_from_np(int af, const struct br_networkpolicy *np, bool global);
struct ppolicy *ppolicy_from_knp(int af, const struct br_k8s_networkpolicy *knp);
/* The staged kinds (StagedNetworkPolicy, StagedGlobalNetworkPolicy; StagedKubernetes...). */
struct ppolicy *ppolicy_from_staged_np(int af, const struct br_networkpolicy *np, bool global);
struct ppolicy *ppolicy_from_staged_knp(int af, const struct br_k8s_networkpolicy *knp);
struct ppolicy *ppolicy_from_profile(int af, const struct br_profile *pr);
/* The profile a namespace stands for: kns.<ns>, allow-all, its labels as pcns.* */
struct ppolicy *ppolicy_from_namespace(const char *ns, const struct br_labels *labels);
/* A profile with neither rules nor labels: a service account's ksa.<ns>.<sa> until its Profile
 * resource is seen. */
struct ppolicy *ppolicy_empty_profile(const char *name);
void ppolicy_free(struct ppolicy *p);

/* A tier as felix orders and ends it. */
struct ptier {
	double order; /* +inf when unset */
	bool pass;    /* defaultAction Pass: what no policy decided goes on to the next tier */
};

/*
 * The tier @name: its Tier resource, else Calico's default for the name (the
 * default tier at MODEL_TIER_DEFAULT_ORDER, any other last), both Deny.
 */
struct ptier pol_tier(const struct pol *p, const char *name);
/* A Tier resource (NULL: deleted); every endpoint is rendered again. */
void tiers_update(struct pol *p, const char *name, const struct br_tier *t);
void tiers_free(struct pol *p);

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
	int af; /* AF_INET: iptables rules; AF_INET6: ip6tables rules */
	struct pmarks marks;
	/* Returns the set's name and records that the chain being rendered uses it. */
	const char *(*use_set)(void *ctx, const struct pset_ref *ref);
	void *ctx;
	bool event_log, event_log_allowed;
	/*
	 * Rendering a policy's preview chain: a rule that matches logs what it would do
	 * ("<V><d>:w:<hash>:<rule>") and marks it (allow: accept, deny: scratch0, pass: pass)
	 * and returns; nothing is dropped or accepted. Log rules are left out.
	 */
	bool preview;
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
/* A chain name: prefix + suffix, or prefix + "_" + hash when that is too long. */
void cb_chain_name(char out[32], const char *prefix, const char *suffix);

/* The rules of one direction of a policy or profile, into @b (which the caller started). */
void render_policy_rules(struct chain_builder *b, const struct render_ctx *rc,
			 const struct ppolicy *p, bool ingress);
/* The short form of a policy's id in NFLOG prefixes (12 characters). */
void policy_log_hash(const char *id, char out[13]);

/* A fail-closed chain body: drop everything, saying why. */
void render_fail_closed(struct chain_builder *b, const char *why);
/* An event log rule: NFLOG with @prefix (see eventlog.h), 10 a second, bursts of 20. */
void render_event_log(struct chain_builder *b, bool ingress, const char *prefix);

/* --- the core's records (policy.c owns them; the modules below read and update them) --- */

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
	/*
	 * The staged preview, per direction: the policies of each tier a staged policy
	 * changes for this endpoint, as they would be with the staged ones in force (staged
	 * policies in, the enforced ones they replace or delete out), in order.
	 */
	struct pentry **view[2];
	uint32_t n_view[2];
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
	const char *key;	  /* the eps map's own copy ("WorkloadEndpoint ns/name") */
	const char *ns;		  /* NULL when not namespaced */
	const char *orchestrator; /* WEPs */
	struct br_labels labels;
	const char **profiles;
	uint32_t n_profiles;
	const char **addrs; /* canonical hash:net members of the core's family */
	uint32_t n_addrs;
	struct pport *ports;
	uint32_t n_ports;
	struct plocal *local; /* NULL unless on this node */
};

struct pentry {
	struct ppolicy *p;
	uint32_t refs[2];  /* local endpoint chains that jump to it */
	char chain[2][32]; /* cali-pi-..., cali-po-... */
	uint32_t vrefs[2]; /* local endpoint previews that jump to its preview chain */
	char vchain[2][32]; /* cali-vi-..., cali-vo-... */
	bool dirty;
};

/* Mark @key in @marks (a dirty_* map of pol_desired); the first mark since the writer took
 * them keeps whether it was there then (@was). */
static inline void pol_mark(struct hmap *marks, const char *key, bool was)
{
	if (!hmap_has(marks, key))
		hmap_put(marks, key, was ? PMARK_WAS : PMARK_WAS_NOT);
}

static inline bool pentry_unused(const struct pentry *pe)
{
	return !pe->refs[0] && !pe->refs[1] && !pe->vrefs[0] && !pe->vrefs[1];
}

struct pprof {
	char *name;
	struct ppolicy *explicit_p; /* from a Profile resource */
	/* kns.<ns>: from the Namespace (or a default); ksa.<ns>.<sa>: ppolicy_empty_profile */
	struct ppolicy *implicit_p;
	bool ns_known;
	uint32_t refs[2];
	uint32_t users; /* endpoints that list it */
	char chain[2][32];
	bool dirty;
};

/* The profile's policy in force: the Profile resource's, else the implicit one. */
static inline const struct ppolicy *prof_effective(const struct pprof *pr)
{
	return pr->explicit_p ? pr->explicit_p : pr->implicit_p;
}

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

struct ppool {
	struct br_cidr cidr;
	bool nat_outgoing;
	bool disabled;
};

struct pol {
	char *nodename;
	int af; /* the family this core renders */
	struct felix_config cfg;
	struct pmarks marks;
	bool marks_ok;
	struct hmap policies; /* id → struct pentry */
	struct hmap profiles; /* name → struct pprof */
	struct hmap eps;      /* key → struct pep */
	struct hmap strings;  /* shared by endpoint records → (void *)users (endpoint.c) */
	struct hmap locals;   /* iface → struct pep (local endpoints) */
	struct notices notices; /* for the daemon to log */
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
	struct hmap pools; /* name → struct ppool */
	struct hmap tiers; /* name → struct ptier (the Tier resources) */
	struct pol_desired d;
	struct hmap dirty_eps; /* key → (void *)1 */
	bool dirty_dispatch, dirty_static, dirty_all;
	/* rendering */
	struct render_ctx rc;
	char **errors;
	size_t n_errors;
	struct hmap log_hashes; /* NFLOG policy hash → id (owned copy) */
	struct hmap dispatch;	/* dispatch chains made last time → what from (owned) */
	bool had_heps;
	bool dispatch_maps;	  /* pol_set_dispatch_maps */
	struct hmap dirty_ifaces; /* local interfaces that came, went or changed hands */
	size_t n_local_heps;	  /* host endpoints among the locals */
	struct strbuf scratch;
};

/* --- endpoint.c: endpoint records and their labels --------------------------------- */

/* What an endpoint record is built from (a WorkloadEndpoint, HostEndpoint or network set). */
struct pep_src {
	enum pep_kind kind;
	const char *ns, *orchestrator, *iface;
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

/* The record for @s, in one allocation (its local part's arrays are not in it); its key is
 * set when it goes into the eps map. */
struct pep *endpoint_build(struct pol *p, const struct pep_src *s);
/* The record goes, and its hold on the shared strings. */
void endpoint_free(struct pol *p, struct pep *e);
/* Does @e, with the labels it inherits from its namespace and profiles, match @s? */
bool endpoint_matches(const struct pol *p, const struct pep *e, const struct sel *s);
/*
 * Calls @fn once per effective label of @e (the value a selector sees for its
 * key): its own, the namespace and orchestrator ones, then its profiles'.
 */
typedef void endpoint_label_fn(struct pol *p, const struct pep *e, const char *key,
			       const char *value, void *arg);
void endpoint_each_label(struct pol *p, const struct pep *e, endpoint_label_fn *fn, void *arg);
/* The canonical hash:net member of a network: a host without "/32" ("/128"). */
void endpoint_net_member(const struct br_cidr *c, char out[CIDR_STRLEN]);

/* --- sets.c: the ip sets chains use, and their members ------------------------------ */

/* The set a rule asks for (made on first use; names are hashes of what a set holds). */
struct psetrec *sets_for(struct pol *p, const struct pset_ref *ref);
/* A chain enters (+1) or leaves (-1) the desired tables: the sets its rules name. */
void sets_chain_refs(struct pol *p, const struct pchain *c, int delta);
/* @e enters the sets it matches and the label index (after any change to its labels). */
void sets_endpoint_enter(struct pol *p, const struct pep *e);
/* The reverse of sets_endpoint_enter, with the labels @e had then. */
void sets_endpoint_leave(struct pol *p, const struct pep *e);
/* The static sets' names (pool CIDRs, and those of natOutgoing pools) in @p's family:
 * "cali40all-ipam-pools", "cali40masq-ipam-pools" (cali60... for IPv6). */
const char *sets_all_pools(const struct pol *p);
const char *sets_masq_pools(const struct pol *p);
/* The record of a static set (sets_all_pools, sets_masq_pools). */
void sets_static(struct pol *p, const char *name);
/* Pools changed: bring the active static sets to the new members. */
void sets_pools_changed(struct pol *p);
/* Forget set records no chain uses. */
void sets_forget_unused(struct pol *p);
void sets_free(struct pol *p);

/* --- chains.c: the desired tables ----------------------------------------------------- */

/* Take chain @name out of table @t, releasing its sets. */
void chains_del(struct pol *p, enum pt_table t, const char *name);
/* A policy's or profile's chain of direction @dir (0 ingress, 1 egress). */
void chains_render_policy(struct pol *p, struct pentry *pe, int dir);
/* A policy's preview chain (see render_ctx.preview). */
void chains_render_preview(struct pol *p, struct pentry *pe, int dir);
void chains_render_profile(struct pol *p, struct pprof *pr, int dir);
/* A local endpoint's chains, from the policies and profiles in its record. */
void chains_render_endpoint(struct pol *p, struct pep *e);
/* Its chains out of the tables. */
void chains_drop_endpoint(struct pol *p, struct plocal *lo);
/* The interface dispatch chains, over every local endpoint. */
void chains_render_dispatch(struct pol *p);
/* The dispatch maps brought up to date for the interfaces in p->dirty_ifaces alone. */
void chains_update_dispatch_maps(struct pol *p);
/* The static chains (cali-FORWARD, cali-INPUT, ..., nat) and the hooks in built-in chains. */
void chains_render_static(struct pol *p);
/* Are there local host endpoints (the static chains then send traffic through them)? */
bool chains_have_local_heps(const struct pol *p);
void chains_free(struct pol *p);

/* --- applicable.c: which policies and profiles apply to which local endpoint ---------- */

/* The profile record @name (made on first use). */
struct pprof *applicable_profile(struct pol *p, const char *name);
/* Drop the profile record when nothing holds it any more. */
void applicable_profile_release(struct pol *p, struct pprof *pr);
/* A local endpoint's chains need rendering (a NULL or remote @e is ignored). */
void applicable_mark_local(struct pol *p, const struct pep *e);
/* A policy changed (@np NULL: deleted; ownership passes). */
void applicable_policy_set(struct pol *p, const char *id, struct ppolicy *np);
/* A profile changed: from a Profile resource (@explicit_p, ownership passes), or from its
 * namespace (@ns_labels; @ns_deleted when the namespace went). */
void applicable_profile_set(struct pol *p, const char *name, struct ppolicy *explicit_p,
			    bool from_resource, const struct br_labels *ns_labels, bool ns_event,
			    bool ns_deleted);
/* Work out the policies and profiles of local endpoint @e and render its chains. */
void applicable_render_local(struct pol *p, struct pep *e);
/* @e's local part goes: its references and its chains. */
void applicable_release_local(struct pol *p, struct pep *e);

#endif
