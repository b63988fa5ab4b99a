/*
 * Service accounts in felix's policy core: a policy's serviceAccountSelector
 * and a rule's serviceAccounts (names, selector, both), scoped by namespace
 * the way selectors are, over endpoints that carry the
 * projectcalico.org/serviceaccount label and inherit their service account's
 * labels (pcsa.*) from the profile ksa.<ns>.<sa>.
 */
#include "harness.h"

#include "calc/policy_internal.h"

#include <stdio.h>
#include <stdlib.h>

static struct pol *P;

static int setup(void **state)
{
	P = pol_new("node-a", AF_INET);
	struct felix_config cfg;
	felix_config_defaults(&cfg);
	pol_set_config(P, &cfg);
	return 0;
}

static int teardown(void **state)
{
	pol_free(P);
	P = NULL;
	return 0;
}

static void apply(const char *yaml)
{
	struct br_object **objs;
	size_t n;
	struct model_errors errs = { 0 };
	if (model_read("t", yaml, strlen(yaml), NULL, &objs, &n, &errs) < 0)
		fail_msg("bad input: %s", errs.v[0]);
	for (size_t i = 0; i < n; i++) {
		struct br_object *o = objs[i];
		struct ds_update u = { .kind = o->kind,
				       .scope = o->kind->namespaced ? o->meta.namespace : NULL,
				       .name = o->meta.name,
				       .obj = o };
		pol_update(P, &u);
		model_free(o);
	}
	free(objs);
}

static void del(enum br_kind_id k, const char *ns, const char *name)
{
	struct ds_update u = { .kind = model_kind(k), .scope = ns, .name = name };
	pol_update(P, &u);
}

static void ns(const char *name, const char *labels)
{
	char buf[512];
	snprintf(buf, sizeof(buf),
		 "apiVersion: v1\nkind: Namespace\nmetadata: {name: %s, labels: {%s}}\n", name,
		 labels);
	apply(buf);
}

/* A pod's endpoint as the Kubernetes datastore maps it; @sa NULL: no service account. */
static void pod(const char *ns, const char *name, const char *node, const char *iface,
		const char *ip, const char *sa)
{
	char buf[2048], salabel[128] = "", saprof[128] = "", saname[128] = "";
	if (sa) {
		snprintf(salabel, sizeof(salabel), ", projectcalico.org/serviceaccount: %s", sa);
		snprintf(saprof, sizeof(saprof), ", ksa.%s.%s", ns, sa);
		snprintf(saname, sizeof(saname), "  serviceAccountName: %s\n", sa);
	}
	snprintf(buf, sizeof(buf),
		 "apiVersion: projectcalico.org/v3\nkind: WorkloadEndpoint\n"
		 "metadata:\n  name: %s\n  namespace: %s\n  labels: {projectcalico.org/namespace: "
		 "%s, projectcalico.org/orchestrator: k8s%s}\n"
		 "spec:\n  orchestrator: k8s\n  node: %s\n  pod: %s\n  endpoint: eth0\n"
		 "  interfaceName: %s\n  ipNetworks: [%s/32]\n  profiles: [kns.%s%s]\n%s",
		 name, ns, ns, salabel, node, name, iface, ip, ns, saprof, saname);
	apply(buf);
}

/* The profile a ServiceAccount stands for, with its labels (@labels: "k: v, ..."). */
static void sa_profile(const char *ns, const char *sa, const char *labels)
{
	char buf[1024];
	snprintf(buf, sizeof(buf),
		 "apiVersion: projectcalico.org/v3\nkind: Profile\n"
		 "metadata: {name: ksa.%s.%s}\n"
		 "spec:\n  labelsToApply: {pcsa.projectcalico.org/name: %s%s%s}\n",
		 ns, sa, sa, labels[0] ? ", " : "", labels);
	apply(buf);
}

/* Every chain of the filter table, concatenated (for searching). */
static char *all_rules(void)
{
	pol_flush(P);
	struct strbuf sb = STRBUF_INIT;
	sb_init(&sb);
	const struct hmap *m = &pol_desired(P)->tables[PT_FILTER].chains;
	for (struct hmap_iter it = hmap_iter(m); hmap_next(&it);) {
		const struct pchain *c = it.value;
		for (uint32_t i = 0; i < c->n; i++)
			sb_addf(&sb, "-A %s %s\n", c->name, c->rules[i]);
	}
	return sb_detach(&sb);
}

static const struct pchain *chain(const char *name)
{
	pol_flush(P);
	return hmap_get(&pol_desired(P)->tables[PT_FILTER].chains, name);
}

/* Does local endpoint @iface's ingress chain jump to the chain of the policy @display? */
static bool applies(const char *iface, const char *display)
{
	char name[32];
	snprintf(name, sizeof(name), "cali-tw-%s", iface);
	const struct pchain *tw = chain(name);
	if (!tw)
		fail_msg("no chain %s", name);
	const struct hmap *m = &pol_desired(P)->tables[PT_FILTER].chains;
	for (uint32_t i = 0; i < tw->n; i++) {
		for (struct hmap_iter it = hmap_iter(m); hmap_next(&it);) {
			const struct pchain *c = it.value;
			if (!str_has_suffix(tw->rules[i], c->name) || !c->n ||
			    !strstr(c->rules[0], display))
				continue;
			char jump[64];
			snprintf(jump, sizeof(jump), "-j %s", c->name);
			if (strstr(tw->rules[i], jump))
				return true;
		}
	}
	return false;
}

/* The members of the set the first rule containing @needle matches on. */
static char *members_of_rule(const char *needle)
{
	char *rules = all_rules();
	const char *r = strstr(rules, needle);
	if (!r)
		fail_msg("no rule with %s in:\n%s", needle, rules);
	const char *ms = strstr(r, "--match-set ");
	const char *eol = strchr(r, '\n');
	char name[40] = "";
	if (!ms || ms > eol || sscanf(ms + 12, "%39s", name) != 1)
		fail_msg("the rule with %s matches no set", needle);
	free(rules);
	const struct pset *s = hmap_get(&pol_desired(P)->sets, name);
	if (!s)
		fail_msg("set %s is not active", name);
	const char *v[64];
	size_t n = 0;
	for (struct hmap_iter it = hmap_iter(&s->members); hmap_next(&it) && n < 64;)
		v[n++] = it.key;
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && strcmp(v[j - 1], v[j]) > 0; j--) {
			const char *t = v[j];
			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	struct strbuf sb = STRBUF_INIT;
	sb_init(&sb);
	for (size_t i = 0; i < n; i++)
		sb_addf(&sb, "%s%s", i ? " " : "", v[i]);
	return sb_detach(&sb);
}

#define assert_members(needle, want)                  \
	do {                                          \
		char *got_ = members_of_rule(needle); \
		assert_string_equal(got_, want);      \
		free(got_);                           \
	} while (0)

/*
 * Namespaces a (team a) and b (team b). Local: a/db (service account db, tier back),
 * a/web1 (web, tier front), a/plain (none). Remote: a/job1 (batch: no Profile, so no labels),
 * b/web2 (web, tier front), b/adm2 (admin, tier ops), b/bare (none).
 */
static void cluster(void)
{
	ns("a", "team: a");
	ns("b", "team: b");
	sa_profile("a", "db", "pcsa.tier: back");
	sa_profile("a", "web", "pcsa.tier: front");
	sa_profile("b", "web", "pcsa.tier: front");
	sa_profile("b", "admin", "pcsa.tier: ops");
	pod("a", "db", "node-a", "calidb000000001", "10.0.0.1", "db");
	pod("a", "web1", "node-a", "caliweb00000001", "10.0.0.2", "web");
	pod("a", "plain", "node-a", "caliplain000001", "10.0.0.3", NULL);
	pod("a", "job1", "node-b", "calijob00000001", "10.0.1.1", "batch");
	pod("b", "web2", "node-b", "caliweb00000002", "10.0.2.1", "web");
	pod("b", "adm2", "node-b", "caliadm00000002", "10.0.2.2", "admin");
	pod("b", "bare", "node-b", "calibare0000002", "10.0.2.3", NULL);
}

static void test_policy_service_account_selector(void **state)
{
	cluster();
	apply("apiVersion: projectcalico.org/v3\nkind: NetworkPolicy\n"
	      "metadata: {name: back, namespace: a}\n"
	      "spec:\n  serviceAccountSelector: tier == 'back'\n"
	      "  ingress: [{action: Allow}]\n");
	assert_true(applies("calidb000000001", "NetworkPolicy a/back"));
	assert_false(applies("caliweb00000001", "NetworkPolicy a/back"));
	assert_false(applies("caliplain000001", "NetworkPolicy a/back"));
	/* ANDed with the policy's selector */
	apply("apiVersion: projectcalico.org/v3\nkind: NetworkPolicy\n"
	      "metadata: {name: back, namespace: a}\n"
	      "spec:\n  selector: projectcalico.org/serviceaccount == 'web'\n"
	      "  serviceAccountSelector: tier == 'back'\n  ingress: [{action: Allow}]\n");
	assert_false(applies("calidb000000001", "NetworkPolicy a/back"));
	assert_false(applies("caliweb00000001", "NetworkPolicy a/back"));
	del(KIND_NETWORKPOLICY, "a", "back");
	/* Global: over every namespace; the service account's name is a label too. */
	apply("apiVersion: projectcalico.org/v3\nkind: GlobalNetworkPolicy\n"
	      "metadata: {name: fronts}\n"
	      "spec:\n  serviceAccountSelector: projectcalico.org/name == 'web' || tier == 'back'\n"
	      "  ingress: [{action: Allow}]\n");
	assert_true(applies("calidb000000001", "GlobalNetworkPolicy fronts"));
	assert_true(applies("caliweb00000001", "GlobalNetworkPolicy fronts"));
	assert_false(applies("caliplain000001", "GlobalNetworkPolicy fronts"));
	/* all(): every endpoint with a service account */
	apply("apiVersion: projectcalico.org/v3\nkind: GlobalNetworkPolicy\n"
	      "metadata: {name: any-sa}\n"
	      "spec:\n  serviceAccountSelector: all()\n  ingress: [{action: Allow}]\n");
	assert_true(applies("calidb000000001", "GlobalNetworkPolicy any-sa"));
	assert_true(applies("caliweb00000001", "GlobalNetworkPolicy any-sa"));
	assert_false(applies("caliplain000001", "GlobalNetworkPolicy any-sa"));
	/* The service account's labels change: the policy follows. */
	sa_profile("a", "db", "pcsa.tier: middle");
	assert_false(applies("calidb000000001", "GlobalNetworkPolicy fronts"));
	sa_profile("a", "db", "pcsa.tier: back");
	assert_true(applies("calidb000000001", "GlobalNetworkPolicy fronts"));
	assert_int_equal(pol_n_errors(P), 0);
}

static void test_rule_service_account_names(void **state)
{
	cluster();
	/* namespaced: names of the policy's namespace only */
	apply("apiVersion: projectcalico.org/v3\nkind: NetworkPolicy\n"
	      "metadata: {name: by-name, namespace: a}\n"
	      "spec:\n  selector: projectcalico.org/serviceaccount == 'db'\n"
	      "  ingress: [{action: Allow, source: {serviceAccounts: {names: [web, batch]}}}]\n");
	assert_members("NetworkPolicy a/by-name", "10.0.0.2 10.0.1.1");
	/* with a namespaceSelector: those namespaces instead */
	apply("apiVersion: projectcalico.org/v3\nkind: NetworkPolicy\n"
	      "metadata: {name: by-name, namespace: a}\n"
	      "spec:\n  selector: projectcalico.org/serviceaccount == 'db'\n"
	      "  ingress:\n  - action: Allow\n"
	      "    source: {namespaceSelector: team == 'b', serviceAccounts: {names: [web, "
	      "batch]}}\n");
	assert_members("NetworkPolicy a/by-name", "10.0.2.1");
	del(KIND_NETWORKPOLICY, "a", "by-name");
	/* global: every namespace */
	apply("apiVersion: projectcalico.org/v3\nkind: GlobalNetworkPolicy\n"
	      "metadata: {name: by-name}\n"
	      "spec:\n  selector: projectcalico.org/serviceaccount == 'db'\n"
	      "  ingress: [{action: Allow, source: {serviceAccounts: {names: [web]}}}]\n");
	assert_members("GlobalNetworkPolicy by-name", "10.0.0.2 10.0.2.1");
	/* ANDed with the rule's selector */
	apply("apiVersion: projectcalico.org/v3\nkind: GlobalNetworkPolicy\n"
	      "metadata: {name: by-name}\n"
	      "spec:\n  selector: projectcalico.org/serviceaccount == 'db'\n"
	      "  ingress: [{action: Allow, source: {selector: projectcalico.org/namespace == 'b', "
	      "serviceAccounts: {names: [web, admin]}}}]\n");
	assert_members("GlobalNetworkPolicy by-name", "10.0.2.1 10.0.2.2");
	assert_int_equal(pol_n_errors(P), 0);
}

static void test_rule_service_account_selector(void **state)
{
	cluster();
	apply("apiVersion: projectcalico.org/v3\nkind: NetworkPolicy\n"
	      "metadata: {name: fronts, namespace: a}\n"
	      "spec:\n  selector: projectcalico.org/serviceaccount == 'db'\n"
	      "  ingress: [{action: Allow, source: {serviceAccounts: {selector: tier == "
	      "'front'}}}]\n");
	assert_members("NetworkPolicy a/fronts", "10.0.0.2");
	/* namespaceSelector all(): every namespace */
	apply("apiVersion: projectcalico.org/v3\nkind: NetworkPolicy\n"
	      "metadata: {name: fronts, namespace: a}\n"
	      "spec:\n  selector: projectcalico.org/serviceaccount == 'db'\n"
	      "  ingress: [{action: Allow, source: {namespaceSelector: all(), serviceAccounts: "
	      "{selector: tier == 'front'}}}]\n");
	assert_members("NetworkPolicy a/fronts", "10.0.0.2 10.0.2.1");
	del(KIND_NETWORKPOLICY, "a", "fronts");
	/* global, egress; a rule's all() is every endpoint, as Calico converts it (unlike a
	 * policy's serviceAccountSelector: all()) */
	apply("apiVersion: projectcalico.org/v3\nkind: GlobalNetworkPolicy\n"
	      "metadata: {name: to-any-sa}\n"
	      "spec:\n  selector: projectcalico.org/serviceaccount == 'db'\n"
	      "  egress: [{action: Allow, destination: {serviceAccounts: {selector: all()}}}]\n");
	assert_members("GlobalNetworkPolicy to-any-sa",
		       "10.0.0.1 10.0.0.2 10.0.0.3 10.0.1.1 10.0.2.1 10.0.2.2 10.0.2.3");
	/* in a namespaced policy, its namespace's */
	apply("apiVersion: projectcalico.org/v3\nkind: NetworkPolicy\n"
	      "metadata: {name: any-in-a, namespace: a}\n"
	      "spec:\n  selector: projectcalico.org/serviceaccount == 'db'\n"
	      "  egress: [{action: Allow, destination: {serviceAccounts: {names: [web, batch], "
	      "selector: all()}}}]\n");
	assert_members("NetworkPolicy a/any-in-a", "10.0.0.2 10.0.1.1");
	/* negated, and a label the service account without a Profile does not have */
	apply("apiVersion: projectcalico.org/v3\nkind: GlobalNetworkPolicy\n"
	      "metadata: {name: not-ops}\n"
	      "spec:\n  selector: projectcalico.org/serviceaccount == 'db'\n"
	      "  egress: [{action: Allow, destination: {serviceAccounts: {selector: tier != "
	      "'ops'}}}]\n");
	/* != matches what lacks the label: job1 (no Profile) and the pods without any */
	assert_members("GlobalNetworkPolicy not-ops",
		       "10.0.0.1 10.0.0.2 10.0.0.3 10.0.1.1 10.0.2.1 10.0.2.3");
	assert_int_equal(pol_n_errors(P), 0);
}

static void test_rule_service_account_names_and_selector(void **state)
{
	cluster();
	apply("apiVersion: projectcalico.org/v3\nkind: GlobalNetworkPolicy\n"
	      "metadata: {name: both}\n"
	      "spec:\n  selector: projectcalico.org/serviceaccount == 'db'\n"
	      "  ingress: [{action: Allow, source: {serviceAccounts: {names: [web, admin], "
	      "selector: tier == 'ops'}}}]\n");
	assert_members("GlobalNetworkPolicy both", "10.0.2.2");
	apply("apiVersion: projectcalico.org/v3\nkind: NetworkPolicy\n"
	      "metadata: {name: both, namespace: b}\n"
	      "spec:\n  ingress: [{action: Allow, source: {serviceAccounts: {names: [web, admin], "
	      "selector: tier == 'front'}}}]\n");
	apply("apiVersion: projectcalico.org/v3\nkind: NetworkPolicy\n"
	      "metadata: {name: both-a, namespace: a}\n"
	      "spec:\n  ingress: [{action: Allow, source: {namespaceSelector: \"team in {'a', "
	      "'b'}\", "
	      "serviceAccounts: {names: [web, admin], selector: tier == 'front'}}}]\n");
	assert_members("NetworkPolicy a/both-a", "10.0.0.2 10.0.2.1");
	/* destination side too, with notSelector in the same entity */
	apply("apiVersion: projectcalico.org/v3\nkind: NetworkPolicy\n"
	      "metadata: {name: both-a, namespace: a}\n"
	      "spec:\n  egress: [{action: Deny, destination: {namespaceSelector: all(), "
	      "notSelector: projectcalico.org/namespace == 'a', serviceAccounts: {names: [web, "
	      "admin], selector: has(tier)}}}]\n");
	/* (the notSelector is a set of its own, matched negated) */
	assert_members("NetworkPolicy a/both-a", "10.0.0.2 10.0.2.1 10.0.2.2");
	char *rules = all_rules();
	assert_non_null(strstr(rules, "-m set ! --match-set"));
	free(rules);
	assert_int_equal(pol_n_errors(P), 0);
}

static void test_endpoint_changes_service_account(void **state)
{
	cluster();
	apply("apiVersion: projectcalico.org/v3\nkind: GlobalNetworkPolicy\n"
	      "metadata: {name: fronts}\n"
	      "spec:\n  selector: projectcalico.org/serviceaccount == 'db'\n"
	      "  ingress: [{action: Allow, source: {serviceAccounts: {selector: tier == "
	      "'front'}}}]\n");
	apply("apiVersion: projectcalico.org/v3\nkind: GlobalNetworkPolicy\n"
	      "metadata: {name: batch}\n"
	      "spec:\n  selector: projectcalico.org/serviceaccount == 'db'\n"
	      "  egress: [{action: Allow, destination: {serviceAccounts: {names: [batch]}}}]\n");
	assert_members("GlobalNetworkPolicy fronts\" -m set", "10.0.0.2 10.0.2.1");
	assert_members("GlobalNetworkPolicy batch\" -m set", "10.0.1.1");
	/* a remote pod moves to the web service account: in; the rule by its old name loses it */
	pod("a", "job1", "node-b", "calijob00000001", "10.0.1.1", "web");
	assert_members("GlobalNetworkPolicy fronts\" -m set", "10.0.0.2 10.0.1.1 10.0.2.1");
	assert_members("GlobalNetworkPolicy batch\" -m set", "");
	/* a local pod moves from web to db: out of the source set, and the policy now applies */
	assert_false(applies("caliweb00000001", "GlobalNetworkPolicy fronts"));
	pod("a", "web1", "node-a", "caliweb00000001", "10.0.0.2", "db");
	assert_members("GlobalNetworkPolicy fronts\" -m set", "10.0.1.1 10.0.2.1");
	assert_true(applies("caliweb00000001", "GlobalNetworkPolicy fronts"));
	/* the service account's Profile goes: its labels go, the endpoints stay usable */
	del(KIND_PROFILE, NULL, "ksa.b.web");
	assert_members("GlobalNetworkPolicy fronts\" -m set", "10.0.1.1");
	/* and loses its service account altogether */
	pod("a", "job1", "node-b", "calijob00000001", "10.0.1.1", NULL);
	assert_members("GlobalNetworkPolicy fronts\" -m set", "");
	assert_int_equal(pol_n_errors(P), 0);
}

/*
 * A service account whose Profile felix has not seen (etcd holds none unless someone writes
 * it) is a profile without rules or labels: the endpoint keeps working, its namespace's
 * profile decides. Any other missing profile still fails closed.
 */
static void test_missing_service_account_profile(void **state)
{
	ns("a", "");
	pod("a", "ghost", "node-a", "calighost000001", "10.0.0.9", "ghost");
	const struct pchain *tw = chain("cali-tw-calighost000001");
	assert_non_null(tw);
	char *rules = all_rules();
	assert_null(strstr(rules, "Fail closed"));
	free(rules);
	assert_int_equal(pol_n_errors(P), 0);
	/* the namespace's profile allows, the service account's is empty and returns */
	const struct pchain *kns = chain("cali-pri-kns.a");
	const struct pchain *ksa = chain("cali-pri-ksa.a.ghost");
	assert_non_null(kns);
	assert_non_null(ksa);
	assert_int_equal(ksa->n, 0);
	/* once its Profile appears, its rules and labels count */
	apply("apiVersion: projectcalico.org/v3\nkind: Profile\n"
	      "metadata: {name: ksa.a.ghost}\n"
	      "spec:\n  labelsToApply: {pcsa.tier: x}\n  ingress: [{action: Deny}]\n");
	ksa = chain("cali-pri-ksa.a.ghost");
	assert_non_null(ksa);
	assert_true(ksa->n > 0);
	apply("apiVersion: projectcalico.org/v3\nkind: GlobalNetworkPolicy\n"
	      "metadata: {name: x}\n"
	      "spec:\n  serviceAccountSelector: tier == 'x'\n  ingress: [{action: Allow}]\n");
	assert_true(applies("calighost000001", "GlobalNetworkPolicy x"));
	/* and go with it: still not fail-closed */
	del(KIND_PROFILE, NULL, "ksa.a.ghost");
	assert_false(applies("calighost000001", "GlobalNetworkPolicy x"));
	assert_int_equal(chain("cali-pri-ksa.a.ghost")->n, 0);
	rules = all_rules();
	assert_null(strstr(rules, "Fail closed"));
	free(rules);
	/* an endpoint of the etcd datastore lists only its namespace's profile: unchanged */
	pod("a", "old", "node-a", "caliold00000001", "10.0.0.10", NULL);
	assert_non_null(chain("cali-tw-caliold00000001"));
	assert_int_equal(pol_n_errors(P), 0);
}

/*
 * A workload cannot lend itself its namespace's or service account's labels, and its service
 * account is the one its spec names (as Calico's syncer hands endpoints to its felix).
 */
static void test_endpoint_cannot_claim_inherited_labels(void **state)
{
	cluster();
	apply("apiVersion: projectcalico.org/v3\nkind: WorkloadEndpoint\n"
	      "metadata:\n  name: liar\n  namespace: a\n"
	      "  labels: {pcsa.tier: front, pcns.team: b, projectcalico.org/serviceaccount: web}\n"
	      "spec: {node: node-b, pod: liar, endpoint: eth0, orchestrator: k8s, "
	      "interfaceName: caliliar0000001, ipNetworks: [10.0.1.7/32], profiles: [kns.a, "
	      "ksa.a.batch], serviceAccountName: batch}\n");
	apply("apiVersion: projectcalico.org/v3\nkind: GlobalNetworkPolicy\n"
	      "metadata: {name: fronts}\n"
	      "spec:\n  selector: projectcalico.org/serviceaccount == 'db'\n"
	      "  ingress: [{action: Allow, source: {serviceAccounts: {selector: tier == "
	      "'front'}}}]\n");
	assert_members("GlobalNetworkPolicy fronts", "10.0.0.2 10.0.2.1");
	apply("apiVersion: projectcalico.org/v3\nkind: GlobalNetworkPolicy\n"
	      "metadata: {name: fronts}\n"
	      "spec:\n  selector: projectcalico.org/serviceaccount == 'db'\n"
	      "  ingress: [{action: Allow, source: {namespaceSelector: team == 'b'}}]\n");
	assert_members("GlobalNetworkPolicy fronts", "10.0.2.1 10.0.2.2 10.0.2.3");
	apply("apiVersion: projectcalico.org/v3\nkind: GlobalNetworkPolicy\n"
	      "metadata: {name: fronts}\n"
	      "spec:\n  selector: projectcalico.org/serviceaccount == 'db'\n"
	      "  ingress: [{action: Allow, source: {serviceAccounts: {names: [batch]}}}]\n");
	assert_members("GlobalNetworkPolicy fronts", "10.0.1.1 10.0.1.7");
	/* serviceAccountName alone gives the label (Kubernetes leaves out names of 63 or more) */
	apply("apiVersion: projectcalico.org/v3\nkind: WorkloadEndpoint\n"
	      "metadata:\n  name: liar\n  namespace: a\n"
	      "spec: {node: node-b, pod: liar, endpoint: eth0, orchestrator: k8s, "
	      "interfaceName: caliliar0000001, ipNetworks: [10.0.1.7/32], profiles: [kns.a, "
	      "ksa.a.web], serviceAccountName: web}\n");
	assert_members("GlobalNetworkPolicy fronts", "10.0.1.1");
	apply("apiVersion: projectcalico.org/v3\nkind: GlobalNetworkPolicy\n"
	      "metadata: {name: fronts}\n"
	      "spec:\n  selector: projectcalico.org/serviceaccount == 'db'\n"
	      "  ingress: [{action: Allow, source: {serviceAccounts: {selector: tier == "
	      "'front'}}}]\n");
	assert_members("GlobalNetworkPolicy fronts", "10.0.0.2 10.0.1.7 10.0.2.1");
	assert_int_equal(pol_n_errors(P), 0);
}

int main(void)
{
#define WITH_POLICY(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		WITH_POLICY(test_policy_service_account_selector),
		WITH_POLICY(test_rule_service_account_names),
		WITH_POLICY(test_rule_service_account_selector),
		WITH_POLICY(test_rule_service_account_names_and_selector),
		WITH_POLICY(test_endpoint_changes_service_account),
		WITH_POLICY(test_missing_service_account_profile),
		WITH_POLICY(test_endpoint_cannot_claim_inherited_labels),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
