/*
 * felix's policy core over plain data: policies, namespaces and endpoints in;
 * chains and ip set members out. What each rule looks like exactly is the
 * golden tests' business; these check the semantics and the incremental
 * behaviour.
 */
#include "harness.h"

#include "calc/eventlog.h"
#include "calc/policy_internal.h"

#include <brindle/core/arena.h>
#include <brindle/core/json.h>

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

/* What the writers do with the dirty marks once they applied them. */
static void clear_dirty(void)
{
	struct pol_desired *d = pol_desired(P);
	for (int t = 0; t < PT_TABLES; t++)
		d->tables[t].dirty = false;
	hmap_clear(&d->dirty_sets);
	hmap_clear(&d->dirty_members);
}

static void del(enum br_kind_id k, const char *ns, const char *name)
{
	struct ds_update u = { .kind = model_kind(k), .scope = ns, .name = name };
	pol_update(P, &u);
}

static void pod(const char *ns, const char *name, const char *node, const char *iface,
		const char *ip, const char *labels, const char *ports)
{
	char buf[2048];
	int n = snprintf(buf, sizeof(buf),
			 "apiVersion: projectcalico.org/v3\nkind: WorkloadEndpoint\n"
			 "metadata:\n  name: %s\n  namespace: %s\n  labels: "
			 "{%s%sprojectcalico.org/namespace: "
			 "%s, projectcalico.org/orchestrator: k8s}\n"
			 "spec:\n  orchestrator: k8s\n  node: %s\n  pod: %s\n  endpoint: eth0\n"
			 "  interfaceName: %s\n  ipNetworks: [%s/32]\n  profiles: [kns.%s]\n%s%s\n",
			 name, ns, labels, labels[0] ? ", " : "", ns, node, name, iface, ip, ns,
			 ports ? "  ports: " : "", ports ? ports : "");
	assert_true(n > 0 && (size_t)n < sizeof(buf));
	apply(buf);
}

static void ns(const char *name, const char *labels)
{
	char buf[512];
	/* the length checked: a cut document would test something else (and gcc says so) */
	int n = snprintf(buf, sizeof(buf),
			 "apiVersion: v1\nkind: Namespace\nmetadata: {name: %s, labels: {%s}}\n",
			 name, labels);
	assert_true(n > 0 && (size_t)n < sizeof(buf));
	apply(buf);
}

static const struct pchain *chain(const char *name)
{
	pol_flush(P);
	return hmap_get(&pol_desired(P)->tables[PT_FILTER].chains, name);
}

/* The first rule of @c containing @needle, or NULL. */
static const char *rule_with(const struct pchain *c, const char *needle)
{
	for (uint32_t i = 0; c && i < c->n; i++)
		if (strstr(c->rules[i], needle))
			return c->rules[i];
	return NULL;
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

/* The members of the set a rule containing @needle matches on (its first --match-set). */
static char *members_of_rule(const char *needle, const char *which)
{
	char *rules = all_rules();
	const char *r = strstr(rules, needle);
	if (!r)
		fail_msg("no rule with %s in:\n%s", needle, rules);
	const char *eol = strchr(r, '\n');
	char name[40] = "", dirs[40];
	for (const char *ms = r; (ms = strstr(ms, "--match-set ")) && ms < eol; ms += 12) {
		if (sscanf(ms + 12, "%39s %39s", name, dirs) == 2 && (!which || streq(dirs, which)))
			break;
		name[0] = '\0';
	}
	if (!name[0])
		fail_msg("no set matched %s in the rule with %s", which ? which : "", needle);
	free(rules);
	const struct pset *s = hmap_get(&pol_desired(P)->sets, name);
	if (!s)
		fail_msg("set %s is not active", name);
	const char *v[256];
	size_t n = 0;
	for (struct hmap_iter it = hmap_iter(&s->members); hmap_next(&it);)
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

#define assert_members(needle, which, want)                       \
	do {                                                      \
		char *got_ = members_of_rule(needle, which);      \
		assert_string_equal(got_, want);                  \
		free(got_);                                       \
	} while (0)

/* --- Kubernetes NetworkPolicy ------------------------------------------------------------- */

static void cluster(void)
{
	ns("a", "team: a");
	ns("b", "team: b");
	pod("a", "db", "node-a", "calidb000000001", "10.0.0.1", "role: db", NULL);
	pod("a", "x1", "node-b", "calix1000000001", "10.0.1.1", "role: x", NULL);
	pod("a", "y1", "node-b", "caliy1000000001", "10.0.1.2", "role: y", NULL);
	pod("b", "x2", "node-b", "calix2000000002", "10.0.2.1", "role: x", NULL);
	pod("b", "y2", "node-b", "caliy2000000002", "10.0.2.2", "role: y", NULL);
}

static void test_k8s_peer_and_vs_or(void **state)
{
	cluster();
	/* One peer with both selectors: pods with role=x in namespaces with team=b. */
	apply("apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\n"
	      "metadata: {name: and, namespace: a}\n"
	      "spec:\n  podSelector: {matchLabels: {role: db}}\n"
	      "  ingress:\n  - from:\n    - namespaceSelector: {matchLabels: {team: b}}\n"
	      "      podSelector: {matchLabels: {role: x}}\n");
	assert_members("KubernetesNetworkPolicy a/and", NULL, "10.0.2.1");
	del(KIND_K8S_NETWORKPOLICY, "a", "and");
	/* Two peers: any pod in team=b namespaces, or role=x pods of the policy's namespace. */
	apply("apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\n"
	      "metadata: {name: or, namespace: a}\n"
	      "spec:\n  podSelector: {matchLabels: {role: db}}\n"
	      "  ingress:\n  - from:\n    - namespaceSelector: {matchLabels: {team: b}}\n"
	      "    - podSelector: {matchLabels: {role: x}}\n");
	char *rules = all_rules();
	assert_null(strstr(rules, "KubernetesNetworkPolicy a/and"));
	free(rules);
	assert_members("KubernetesNetworkPolicy a/or", NULL, "10.0.2.1 10.0.2.2");
	/* the second rule of the policy chain pair */
	const struct pchain *c = NULL;
	const struct hmap *m = &pol_desired(P)->tables[PT_FILTER].chains;
	for (struct hmap_iter it = hmap_iter(m); hmap_next(&it);)
		if (rule_with(it.value, "a/or"))
			c = it.value;
	assert_non_null(c);
	assert_int_equal(c->n, 4); /* two allow rules, each with its return */
	char name[40];
	sscanf(strstr(c->rules[2], "--match-set ") + 12, "%39s", name);
	const struct pset *s = hmap_get(&pol_desired(P)->sets, name);
	assert_non_null(s);
	assert_int_equal(s->members.n, 1);
	assert_true(hmap_has(&s->members, "10.0.1.1"));
}

static void test_k8s_default_deny_and_allow_all(void **state)
{
	cluster();
	/* default deny ingress: an empty podSelector, no rules */
	apply("apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\n"
	      "metadata: {name: deny, namespace: a}\nspec: {podSelector: {}}\n");
	const struct pchain *tw = chain("cali-tw-calidb000000001");
	assert_non_null(tw);
	assert_non_null(rule_with(tw, "Drop if no policies passed packet"));
	/* egress is not isolated: the profile allows */
	const struct pchain *fw = chain("cali-fw-calidb000000001");
	assert_null(rule_with(fw, "Drop if no policies passed packet"));
	/* allow all ingress: an empty rule */
	apply("apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\n"
	      "metadata: {name: all, namespace: a}\nspec:\n  podSelector: {}\n  ingress: [{}]\n");
	char *rules = all_rules();
	/* the allow-all rule has no match besides its comments */
	const char *r = strstr(rules, "KubernetesNetworkPolicy a/all");
	assert_non_null(r);
	const char *eol = strchr(r, '\n');
	char line[512];
	snprintf(line, sizeof(line), "%.*s", (int)(eol - r), r);
	assert_null(strstr(line, "--match-set"));
	assert_null(strstr(line, " -s "));
	assert_non_null(strstr(line, "-j MARK --set-xmark 0x10000/0x10000"));
	free(rules);
	/* egress default deny with policyTypes */
	apply("apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\n"
	      "metadata: {name: deny-egress, namespace: a}\n"
	      "spec: {podSelector: {}, policyTypes: [Egress]}\n");
	fw = chain("cali-fw-calidb000000001");
	assert_non_null(rule_with(fw, "Drop if no policies passed packet"));
}

static void test_k8s_named_port_per_pod(void **state)
{
	ns("a", "team: a");
	pod("a", "web1", "node-a", "caliweb00000001", "10.0.0.1", "app: web",
	    "[{name: http, protocol: TCP, port: 8080}]");
	pod("a", "web2", "node-b", "caliweb00000002", "10.0.0.2", "app: web",
	    "[{name: http, protocol: TCP, port: 9090}, {name: dns, protocol: UDP, port: 53}]");
	/* same name, other protocol: not a match for TCP "http" */
	pod("a", "web3", "node-b", "caliweb00000003", "10.0.0.3", "app: web",
	    "[{name: http, protocol: UDP, port: 8081}]");
	pod("a", "other", "node-b", "calioth00000001", "10.0.0.4", "app: other",
	    "[{name: http, protocol: TCP, port: 80}]");
	apply("apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\n"
	      "metadata: {name: named, namespace: a}\n"
	      "spec:\n  podSelector: {matchLabels: {app: web}}\n"
	      "  ingress:\n  - ports: [{port: http}]\n");
	/* resolved over the pods the policy selects, each with its own number */
	assert_members("KubernetesNetworkPolicy a/named", "dst,dst",
		       "10.0.0.1,tcp:8080 10.0.0.2,tcp:9090");
	/* a renumbered port follows */
	pod("a", "web1", "node-a", "caliweb00000001", "10.0.0.1", "app: web",
	    "[{name: http, protocol: TCP, port: 8000}]");
	assert_members("KubernetesNetworkPolicy a/named", "dst,dst",
		       "10.0.0.1,tcp:8000 10.0.0.2,tcp:9090");
}

/* Calico allows a named port without a protocol: it matches the name in whatever
 * protocol each endpoint declares it. */
static void test_calico_named_port_any_protocol(void **state)
{
	ns("a", "team: a");
	pod("a", "web1", "node-a", "caliweb00000001", "10.0.0.1", "app: web",
	    "[{name: svc, protocol: TCP, port: 8080}]");
	pod("a", "web2", "node-b", "caliweb00000002", "10.0.0.2", "app: web",
	    "[{name: svc, protocol: UDP, port: 5353}, {name: other, protocol: TCP, port: 1}]");
	apply("apiVersion: projectcalico.org/v3\nkind: NetworkPolicy\n"
	      "metadata: {name: anyproto, namespace: a}\n"
	      "spec:\n  selector: app == 'web'\n"
	      "  ingress:\n  - action: Allow\n    destination: {ports: [svc]}\n");
	assert_members("NetworkPolicy a/anyproto", "dst,dst",
		       "10.0.0.1,tcp:8080 10.0.0.2,udp:5353");
	/* and with a protocol, only that protocol's port of the name */
	apply("apiVersion: projectcalico.org/v3\nkind: NetworkPolicy\n"
	      "metadata: {name: anyproto, namespace: a}\n"
	      "spec:\n  selector: app == 'web'\n"
	      "  ingress:\n  - action: Allow\n    protocol: UDP\n    destination: {ports: "
	      "[svc]}\n");
	assert_members("NetworkPolicy a/anyproto", "dst,dst", "10.0.0.2,udp:5353");
}

/* The index of the first rule of @c at or after @from containing @needle; fails if none. */
static uint32_t rule_at(const struct pchain *c, uint32_t from, const char *needle)
{
	assert_non_null(c);
	for (uint32_t i = from; i < c->n; i++)
		if (strstr(c->rules[i], needle))
			return i;
	fail_msg("no rule with \"%s\" from %u", needle, from);
	return 0;
}

static const char *pol_chain(const char *id)
{
	const struct pentry *pe = hmap_get(&P->policies, id);
	assert_non_null(pe);
	return pe->chain[0];
}

/*
 * Tiers as Calico lays them out: tiers by order, each starting with the pass
 * mark clear and ending (default action Deny) with a drop of what none of its
 * policies accepted or passed; a Pass tier hands that on. A Tier resource that
 * changes order or action re-renders the endpoints; without one, a tier is last
 * and Deny, and the default tier sits at 1,000,000.
 */
static void test_tiers(void **state)
{
	cluster();
	apply("apiVersion: projectcalico.org/v3\nkind: Tier\nmetadata: {name: security}\n"
	      "spec: {order: 100}\n---\n"
	      "apiVersion: projectcalico.org/v3\nkind: GlobalNetworkPolicy\n"
	      "metadata: {name: sec-pass}\n"
	      "spec: {tier: security, order: 1, selector: role == 'db',\n"
	      "       ingress: [{action: Pass, source: {selector: role == 'x'}}]}\n---\n"
	      "apiVersion: projectcalico.org/v3\nkind: GlobalNetworkPolicy\n"
	      "metadata: {name: sec-deny}\n"
	      "spec: {tier: security, order: 2, selector: role == 'db',\n"
	      "       ingress: [{action: Deny, source: {selector: role == 'y'}}]}\n---\n"
	      "apiVersion: projectcalico.org/v3\nkind: NetworkPolicy\n"
	      "metadata: {name: app, namespace: a}\n"
	      "spec: {order: 1, selector: role == 'db', ingress: [{action: Allow}]}\n");
	const struct pchain *c = chain("cali-tw-calidb000000001");
	char sec_pass[40], sec_deny[40], app[40];
	snprintf(sec_pass, sizeof(sec_pass), "-j %s", pol_chain("gnp/sec-pass"));
	snprintf(sec_deny, sizeof(sec_deny), "-j %s", pol_chain("gnp/sec-deny"));
	snprintf(app, sizeof(app), "-j %s", pol_chain("np/a/app"));
	uint32_t i = rule_at(c, 0, sec_pass);
	i = rule_at(c, i + 1, sec_deny);
	i = rule_at(c, i + 1, "End of tier security: drop if no policies passed packet");
	assert_non_null(strstr(c->rules[i], "-j DROP"));
	i = rule_at(c, i + 1, "Start of tier default");
	assert_non_null(strstr(c->rules[i], "-j MARK --set-xmark 0x0/"));
	i = rule_at(c, i + 1, app);
	i = rule_at(c, i + 1, "Drop if no policies passed packet");
	rule_at(c, i + 1, "Drop if no profiles matched");

	/* defaultAction Pass: no end-of-tier drop for security */
	apply("apiVersion: projectcalico.org/v3\nkind: Tier\nmetadata: {name: security}\n"
	      "spec: {order: 100, defaultAction: Pass}\n");
	c = chain("cali-tw-calidb000000001");
	assert_null(rule_with(c, "End of tier security"));
	assert_non_null(rule_with(c, "Start of tier default"));

	/* ordered after the default tier */
	apply("apiVersion: projectcalico.org/v3\nkind: Tier\nmetadata: {name: security}\n"
	      "spec: {order: 2000000}\n");
	c = chain("cali-tw-calidb000000001");
	i = rule_at(c, 0, app);
	i = rule_at(c, i + 1, "Drop if no policies passed packet");
	i = rule_at(c, i + 1, "Start of tier security");
	i = rule_at(c, i + 1, sec_pass);
	rule_at(c, i + 1, "End of tier security");

	/* the Tier deleted: last, and Deny */
	del(KIND_TIER, NULL, "security");
	c = chain("cali-tw-calidb000000001");
	i = rule_at(c, 0, app);
	i = rule_at(c, i + 1, sec_pass);
	rule_at(c, i + 1, "End of tier security");
}

/* A policy with an http match found stored (kubectl wrote it): the endpoints it selects fail
 * closed rather than the policy, and its denies, being dropped as undecodable. */
static void test_stored_http_match_fails_closed(void **state)
{
	cluster();
	const char *json =
		"{\"apiVersion\":\"projectcalico.org/v3\",\"kind\":\"GlobalNetworkPolicy\","
		"\"metadata\":{\"name\":\"l7\"},\"spec\":{\"selector\":\"role == 'db'\","
		"\"ingress\":[{\"action\":\"Deny\",\"http\":{\"methods\":[\"POST\"]}},"
		"{\"action\":\"Allow\"}]}}";
	struct arena *a = arena_new();
	struct jv *doc;
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	assert_int_equal(json_parse(a, json, strlen(json), &doc, &err), 0);
	struct model_errors errs = { 0 };
	struct br_object *o = model_decode_kind(model_kind(KIND_GLOBALNETWORKPOLICY), doc, &errs);
	assert_non_null(o);
	struct ds_update u = { .kind = o->kind, .name = "l7", .obj = o };
	assert_true(pol_update(P, &u));
	model_free(o);
	const struct pchain *c = chain("cali-tw-calidb000000001");
	const char *r = rule_with(c, "Fail closed: ");
	assert_non_null(r);
	assert_non_null(strstr(r, "an http match needs an L7 proxy"));
	assert_non_null(strstr(r, "-j DROP"));
	sb_free(&err);
	arena_free(a);
}

static void test_k8s_endport_and_ipblock(void **state)
{
	cluster();
	apply("apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\n"
	      "metadata: {name: range, namespace: a}\n"
	      "spec:\n  podSelector: {matchLabels: {role: db}}\n  policyTypes: [Egress]\n"
	      "  egress:\n  - to: [{ipBlock: {cidr: 10.0.0.0/24}}]\n"
	      "    ports: [{protocol: TCP, port: 32000, endPort: 32768}]\n");
	char *rules = all_rules();
	assert_non_null(strstr(rules, "-d 10.0.0.0/24 -p tcp"));
	assert_non_null(strstr(rules, "-m multiport --dports 32000:32768"));
	free(rules);
}

static void test_k8s_namespace_expressions(void **state)
{
	ns("frontend", "tier: frontend");
	ns("backend", "tier: backend");
	ns("db", "tier: db");
	pod("frontend", "f", "node-b", "califront000001", "10.0.5.1", "app: f", NULL);
	pod("backend", "b", "node-b", "caliback0000001", "10.0.5.2", "app: b", NULL);
	pod("db", "d", "node-a", "calidb000000009", "10.0.5.3", "app: d", NULL);
	apply("apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\n"
	      "metadata: {name: nsexpr, namespace: db}\n"
	      "spec:\n  podSelector: {}\n"
	      "  ingress:\n  - from:\n    - namespaceSelector:\n        matchExpressions:\n"
	      "        - {key: tier, operator: In, values: [frontend, backend]}\n");
	assert_members("KubernetesNetworkPolicy db/nsexpr", NULL, "10.0.5.1 10.0.5.2");
	/* a namespace's labels change: its pods follow */
	ns("backend", "tier: legacy");
	assert_members("KubernetesNetworkPolicy db/nsexpr", NULL, "10.0.5.1");
	ns("db", "tier: backend");
	assert_members("KubernetesNetworkPolicy db/nsexpr", NULL, "10.0.5.1 10.0.5.3");
}

/* --- Calico policy -------------------------------------------------------------------------- */

static void test_calico_order_and_actions(void **state)
{
	cluster();
	apply("apiVersion: projectcalico.org/v3\nkind: NetworkPolicy\n"
	      "metadata: {name: allow, namespace: a}\n"
	      "spec:\n  order: 20\n  selector: role == 'db'\n"
	      "  ingress: [{action: Allow}]\n");
	apply("apiVersion: projectcalico.org/v3\nkind: NetworkPolicy\n"
	      "metadata: {name: deny, namespace: a}\n"
	      "spec:\n  order: 10\n  selector: role == 'db'\n"
	      "  ingress:\n  - action: Deny\n    source: {selector: role == 'x'}\n"
	      "  - action: Log\n    protocol: TCP\n    destination: {ports: [22]}\n"
	      "  - action: Pass\n    source: {nets: [192.168.0.0/16]}\n");
	apply("apiVersion: projectcalico.org/v3\nkind: GlobalNetworkPolicy\n"
	      "metadata: {name: last}\n"
	      "spec:\n  selector: all()\n  ingress: [{action: Allow, protocol: ICMP, icmp: {type: "
	      "8}}]\n");
	const struct pchain *tw = chain("cali-tw-calidb000000001");
	/* order 10 before order 20 before the GNP without order */
	int at_deny = -1, at_allow = -1, at_last = -1;
	const struct hmap *m = &pol_desired(P)->tables[PT_FILTER].chains;
	for (uint32_t i = 0; i < tw->n; i++) {
		for (struct hmap_iter it = hmap_iter(m); hmap_next(&it);) {
			const struct pchain *c = it.value;
			char jump[64];
			snprintf(jump, sizeof(jump), "-j %s", c->name);
			if (!strstr(tw->rules[i], jump) || !str_has_suffix(tw->rules[i], c->name))
				continue;
			if (rule_with(c, "NetworkPolicy a/deny"))
				at_deny = (int)i;
			else if (rule_with(c, "NetworkPolicy a/allow"))
				at_allow = (int)i;
			else if (rule_with(c, "GlobalNetworkPolicy last"))
				at_last = (int)i;
		}
	}
	assert_true(at_deny >= 0 && at_allow > at_deny && at_last > at_allow);
	char *rules = all_rules();
	assert_non_null(strstr(rules, "-j DROP"));
	assert_non_null(strstr(rules, "-p tcp -m comment"));
	assert_non_null(strstr(rules, "-m multiport --dports 22 -j LOG --log-prefix \"calico-packet: \" "
				      "--log-level 5"));
	assert_non_null(strstr(rules, "-s 192.168.0.0/16 -m comment"));
	assert_non_null(strstr(rules, "-j MARK --set-xmark 0x20000/0x20000"));
	assert_non_null(strstr(rules, "-p icmp -m comment"));
	assert_non_null(strstr(rules, "-m icmp --icmp-type 8 -j MARK"));
	free(rules);
}

static void test_calico_negations_and_netsets(void **state)
{
	cluster();
	apply("apiVersion: projectcalico.org/v3\nkind: GlobalNetworkSet\n"
	      "metadata: {name: partners, labels: {kind: partner}}\n"
	      "spec: {nets: [198.51.100.0/24, 203.0.113.7/32]}\n");
	apply("apiVersion: projectcalico.org/v3\nkind: NetworkSet\n"
	      "metadata: {name: office, namespace: a, labels: {kind: partner}}\n"
	      "spec: {nets: [192.0.2.0/25]}\n");
	apply("apiVersion: projectcalico.org/v3\nkind: GlobalNetworkPolicy\n"
	      "metadata: {name: partners}\n"
	      "spec:\n  selector: role == 'db'\n  ingress:\n"
	      "  - action: Allow\n    protocol: TCP\n"
	      "    source: {selector: kind == 'partner', notNets: [198.51.100.128/25]}\n"
	      "    destination: {notPorts: [23, '100:200']}\n");
	/* the global policy's selector reaches namespaced network sets too */
	assert_members("GlobalNetworkPolicy partners", NULL,
		       "192.0.2.0/25 198.51.100.0/24 203.0.113.7");
	char *rules = all_rules();
	assert_non_null(strstr(rules, "! -s 198.51.100.128/25 -p tcp"));
	assert_non_null(strstr(rules, "-m multiport ! --dports 23,100:200"));
	free(rules);
	/* a network set goes: its nets go */
	del(KIND_GLOBALNETWORKSET, NULL, "partners");
	assert_members("GlobalNetworkPolicy partners", NULL, "192.0.2.0/25");
	/* everything: hash:net holds no /0, so its two halves (beside the other members) */
	apply("apiVersion: projectcalico.org/v3\nkind: GlobalNetworkSet\n"
	      "metadata: {name: all, labels: {kind: partner}}\n"
	      "spec: {nets: [0.0.0.0/0, '::/0']}\n");
	assert_members("GlobalNetworkPolicy partners", NULL, "0.0.0.0/1 128.0.0.0/1 192.0.2.0/25");
}

static void test_profile_and_namespace_labels(void **state)
{
	ns("a", "team: a");
	pod("a", "db", "node-a", "calidb000000001", "10.0.0.1", "role: db", NULL);
	pod("a", "x", "node-b", "calix0000000001", "10.0.0.2", "role: x", NULL);
	apply("apiVersion: projectcalico.org/v3\nkind: GlobalNetworkPolicy\n"
	      "metadata: {name: by-ns}\n"
	      "spec:\n  selector: role == 'db'\n"
	      "  ingress: [{action: Allow, source: {namespaceSelector: team == 'a'}}]\n");
	assert_members("GlobalNetworkPolicy by-ns", NULL, "10.0.0.1 10.0.0.2");
	ns("a", "team: z");
	assert_members("GlobalNetworkPolicy by-ns", NULL, "");
}

static void test_fail_closed(void **state)
{
	cluster();
	apply("apiVersion: projectcalico.org/v3\nkind: GlobalNetworkPolicy\n"
	      "metadata: {name: svc}\n"
	      "spec:\n  selector: role == 'db'\n"
	      "  egress: [{action: Allow, destination: {services: {name: kubernetes, namespace: "
	      "default}}}]\n");
	const struct pchain *fw = chain("cali-fw-calidb000000001");
	const char *r = rule_with(fw, "Fail closed");
	assert_non_null(r);
	assert_non_null(strstr(r, "GlobalNetworkPolicy svc"));
	assert_true(str_has_suffix(r, "-j DROP"));
	/* nothing after the drop */
	assert_string_equal(fw->rules[fw->n - 1], r);
	assert_int_equal(pol_n_errors(P), 1);
	assert_non_null(strstr(pol_error(P, 0), "GlobalNetworkPolicy svc"));
	/* ingress is not affected: the policy has only egress */
	const struct pchain *tw = chain("cali-tw-calidb000000001");
	assert_null(rule_with(tw, "Fail closed"));
	/* the policy goes: so does the drop */
	del(KIND_GLOBALNETWORKPOLICY, NULL, "svc");
	fw = chain("cali-fw-calidb000000001");
	assert_null(rule_with(fw, "Fail closed"));
	assert_int_equal(pol_n_errors(P), 0);
}

static void test_missing_profile_fails_closed(void **state)
{
	apply("apiVersion: projectcalico.org/v3\nkind: WorkloadEndpoint\n"
	      "metadata: {name: w, namespace: a}\n"
	      "spec: {node: node-a, pod: w, endpoint: eth0, orchestrator: k8s, interfaceName: "
	      "caliw0000000001, ipNetworks: [10.0.0.9/32], profiles: [nosuch]}\n");
	const struct pchain *tw = chain("cali-tw-caliw0000000001");
	assert_non_null(rule_with(tw, "Fail closed"));
	assert_int_equal(pol_n_errors(P), 1);
	assert_non_null(strstr(pol_error(P, 0), "Profile nosuch"));
}

static void test_incremental_sets_and_cleanup(void **state)
{
	cluster();
	pol_flush(P);
	clear_dirty();
	apply("apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\n"
	      "metadata: {name: p, namespace: a}\n"
	      "spec:\n  podSelector: {matchLabels: {role: db}}\n"
	      "  ingress: [{from: [{podSelector: {matchLabels: {role: x}}}]}]\n");
	pol_flush(P);
	struct pol_desired *d = pol_desired(P);
	assert_int_equal(d->sets.n, 1);
	assert_int_equal(d->dirty_sets.n, 1);
	assert_true(d->tables[PT_FILTER].dirty);
	clear_dirty();
	/* a pod's labels change: one member delta, no chain change */
	pod("a", "y1", "node-b", "caliy1000000001", "10.0.1.2", "role: x", NULL);
	pol_flush(P);
	assert_int_equal(d->dirty_sets.n, 0);
	assert_int_equal(d->dirty_members.n, 1);
	assert_false(d->tables[PT_FILTER].dirty);
	clear_dirty();
	/* nothing new: nothing dirty */
	pol_flush(P);
	assert_int_equal(d->dirty_members.n, 0);
	assert_false(d->tables[PT_FILTER].dirty);
	/* the policy goes: its chains and its set go */
	del(KIND_K8S_NETWORKPOLICY, "a", "p");
	pol_flush(P);
	assert_int_equal(d->sets.n, 0);
	assert_int_equal(d->dirty_sets.n, 1);
	char *rules = all_rules();
	assert_null(strstr(rules, "a/p"));
	free(rules);
	/* the local pod goes: its chains go, the dispatch forgets it */
	del(KIND_WORKLOADENDPOINT, "a", "db");
	assert_null(chain("cali-tw-calidb000000001"));
	assert_null(chain("cali-fw-calidb000000001"));
	assert_null(rule_with(chain("cali-to-wl-dispatch"), "calidb000000001"));
	assert_non_null(rule_with(chain("cali-to-wl-dispatch"), "Unknown interface"));
}

/*
 * The marks a writer that keeps no copy of its tables relies on: a chain, member or map element
 * is marked only when it changed, and each mark says whether it was there before.
 */
static void test_marks_say_what_was(void **state)
{
	struct pol_desired *d = pol_desired(P);
	pol_set_dispatch_maps(P, true);
	cluster();
	apply("apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\n"
	      "metadata: {name: p, namespace: a}\n"
	      "spec:\n  podSelector: {matchLabels: {role: db}}\n"
	      "  ingress: [{from: [{podSelector: {matchLabels: {role: x}}}]}]\n");
	pol_flush(P);
	clear_dirty();
	hmap_clear(&d->dirty_chains[PT_FILTER]);
	hmap_clear(&d->dirty_maps);
	/* the same policy again: its chains rendered again, the same rules: nothing marked */
	apply("apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\n"
	      "metadata: {name: p, namespace: a}\n"
	      "spec:\n  podSelector: {matchLabels: {role: db}}\n"
	      "  ingress: [{from: [{podSelector: {matchLabels: {role: x}}}]}]\n");
	pol_flush(P);
	assert_int_equal(d->dirty_chains[PT_FILTER].n, 0);
	/* the same endpoint again: its chains are made again (marked, as there before); its
	 * map elements stay as they were */
	pod("a", "db", "node-a", "calidb000000001", "10.0.0.1", "role: db", NULL);
	pol_flush(P);
	assert_ptr_equal(hmap_get(&d->dirty_chains[PT_FILTER], "cali-tw-calidb000000001"),
			 PMARK_WAS);
	assert_int_equal(d->dirty_maps.n, 0);
	hmap_clear(&d->dirty_chains[PT_FILTER]);
	clear_dirty();
	/* a pod joins the set, then leaves and joins again before the writer looks: marked as
	 * not a member before */
	pod("a", "x9", "node-b", "calix9000000001", "10.0.1.9", "role: x", NULL);
	pod("a", "x9", "node-b", "calix9000000001", "10.0.1.9", "role: y", NULL);
	pod("a", "x9", "node-b", "calix9000000001", "10.0.1.9", "role: x", NULL);
	pol_flush(P);
	assert_int_equal(d->dirty_members.n, 1);
	struct hmap_iter it = hmap_iter(&d->dirty_members);
	assert_true(hmap_next(&it));
	assert_ptr_equal(it.value, PMARK_WAS_NOT);
	clear_dirty();
	/* it leaves: was a member */
	del(KIND_WORKLOADENDPOINT, "a", "x9");
	pol_flush(P);
	it = hmap_iter(&d->dirty_members);
	assert_true(hmap_next(&it));
	assert_ptr_equal(it.value, PMARK_WAS);
	/* a local endpoint comes: its chains and map elements were not there; it goes: they were */
	pod("a", "n1", "node-a", "calin1000000001", "10.0.0.9", "", NULL);
	pol_flush(P);
	assert_ptr_equal(hmap_get(&d->dirty_chains[PT_FILTER], "cali-tw-calin1000000001"),
			 PMARK_WAS_NOT);
	assert_ptr_equal(hmap_get(&d->dirty_maps, "cali-to-wl-dispatch\ncalin1000000001"),
			 PMARK_WAS_NOT);
	hmap_clear(&d->dirty_chains[PT_FILTER]);
	hmap_clear(&d->dirty_maps);
	del(KIND_WORKLOADENDPOINT, "a", "n1");
	pol_flush(P);
	assert_ptr_equal(hmap_get(&d->dirty_chains[PT_FILTER], "cali-tw-calin1000000001"),
			 PMARK_WAS);
	assert_ptr_equal(hmap_get(&d->dirty_maps, "cali-to-wl-dispatch\ncalin1000000001"),
			 PMARK_WAS);
	/* two endpoints claim one interface; the one that lost it goes: the interface's chains
	 * stay (they are the other one's), and so does its map element */
	pod("a", "c1", "node-a", "calic1000000001", "10.0.0.10", "", NULL);
	assert_non_null(chain("cali-tw-calic1000000001")); /* c1's, rendered */
	pod("a", "c2", "node-a", "calic1000000001", "10.0.0.11", "", NULL);
	assert_non_null(chain("cali-tw-calic1000000001")); /* c2's now */
	del(KIND_WORKLOADENDPOINT, "a", "c1");
	assert_non_null(chain("cali-tw-calic1000000001"));
	assert_non_null(chain("cali-fw-calic1000000001"));
	const struct pmap *out = hmap_get(&d->maps, "cali-to-wl-dispatch");
	assert_string_equal(hmap_get(&out->ifaces, "calic1000000001"), "cali-tw-calic1000000001");
	(void)state;
}

static void test_host_endpoint_failsafe(void **state)
{
	apply("apiVersion: projectcalico.org/v3\nkind: HostEndpoint\n"
	      "metadata: {name: node-a-eth0, labels: {host: a}}\n"
	      "spec: {node: node-a, interfaceName: eth0, expectedIPs: [192.168.1.10]}\n");
	apply("apiVersion: projectcalico.org/v3\nkind: GlobalNetworkPolicy\n"
	      "metadata: {name: hosts}\n"
	      "spec:\n  selector: host == 'a'\n  ingress: [{action: Allow, protocol: TCP, "
	      "destination: {ports: [80]}}]\n");
	const struct pchain *fh = chain("cali-fh-eth0");
	assert_non_null(fh);
	assert_non_null(rule_with(fh, "-j cali-failsafe-in"));
	assert_non_null(rule_with(fh, "Drop if no policies passed packet"));
	const struct pchain *fs = chain("cali-failsafe-in");
	assert_non_null(rule_with(fs, "-p tcp -m comment"));
	assert_non_null(rule_with(fs, "--dports 22 -j ACCEPT"));
	assert_non_null(rule_with(fs, "--dports 6443 -j ACCEPT"));
	assert_non_null(rule_with(fs, "-p udp"));
	assert_non_null(rule_with(chain("cali-failsafe-out"), "--dports 2379 -j ACCEPT"));
	assert_non_null(rule_with(chain("cali-INPUT"), "-j cali-from-host-endpoint"));
	assert_non_null(rule_with(chain("cali-from-host-endpoint"), "-i eth0"));
	/* a host endpoint's addresses are members of sets like any endpoint's */
	apply("apiVersion: projectcalico.org/v3\nkind: GlobalNetworkPolicy\n"
	      "metadata: {name: from-hosts}\n"
	      "spec:\n  selector: host == 'a'\n  egress: [{action: Allow, destination: {selector: "
	      "has(host)}}]\n");
	assert_members("GlobalNetworkPolicy from-hosts", NULL, "192.168.1.10");
}

static void test_nat_outgoing(void **state)
{
	apply("apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: p1}\n"
	      "spec: {cidr: 10.244.0.0/16, natOutgoing: true}\n");
	apply("apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: p2}\n"
	      "spec: {cidr: 10.245.0.0/16}\n");
	pol_flush(P);
	const struct pchain *c =
		hmap_get(&pol_desired(P)->tables[PT_NAT].chains, "cali-nat-outgoing");
	assert_non_null(c);
	assert_int_equal(c->n, 1);
	assert_non_null(strstr(c->rules[0], "-m set --match-set cali40masq-ipam-pools src -m set ! "
					    "--match-set cali40all-ipam-pools dst -j MASQUERADE"));
	const struct pset *all = hmap_get(&pol_desired(P)->sets, "cali40all-ipam-pools");
	const struct pset *masq = hmap_get(&pol_desired(P)->sets, "cali40masq-ipam-pools");
	assert_non_null(all);
	assert_non_null(masq);
	assert_int_equal(all->members.n, 2);
	assert_int_equal(masq->members.n, 1);
	assert_true(hmap_has(&masq->members, "10.244.0.0/16"));
	/* no pool masquerades: the rule and the sets go */
	apply("apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: p1}\n"
	      "spec: {cidr: 10.244.0.0/16}\n");
	pol_flush(P);
	c = hmap_get(&pol_desired(P)->tables[PT_NAT].chains, "cali-nat-outgoing");
	assert_int_equal(c->n, 0);
	assert_null(hmap_get(&pol_desired(P)->sets, "cali40all-ipam-pools"));
}

static void test_dispatch_tree(void **state)
{
	ns("a", "");
	char name[32], iface[32], ip[32];
	for (int i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "p%d", i);
		snprintf(iface, sizeof(iface), "cali%x%010d", i % 16, i);
		snprintf(ip, sizeof(ip), "10.1.0.%d", i + 1);
		pod("a", name, "node-a", iface, ip, "", NULL);
	}
	const struct pchain *root = chain("cali-from-wl-dispatch");
	/* 16 children by the fifth character, and the drop */
	assert_int_equal(root->n, 17);
	const struct pchain *child = chain("cali-from-wl-dispatch-3");
	assert_non_null(child);
	assert_non_null(rule_with(child, "-i cali30000000003 -m comment"));
	assert_non_null(rule_with(child, "-g cali-fw-cali30000000003"));
	assert_non_null(rule_with(child, "Unknown interface"));
	assert_non_null(rule_with(root, "-i cali3+ -m comment"));

	/*
	 * Endpoints come and go a bin at a time (a bin emptied, one down to a single
	 * interface, a new bin, a single one grown into a bin): the trees kept
	 * incrementally are the ones made from scratch for the endpoints left.
	 */
	static const int gone[] = { 3, 19, 35, 4, 20 };
	for (size_t i = 0; i < ARRAY_SIZE(gone); i++) {
		snprintf(name, sizeof(name), "p%d", gone[i]);
		del(KIND_WORKLOADENDPOINT, "a", name);
	}
	pol_flush(P);
	pod("a", "q1", "node-a", "calizz00000001", "10.1.1.1", "", NULL);
	pod("a", "q2", "node-a", "calizz00000002", "10.1.1.2", "", NULL);
	pod("a", "q3", "node-a", "cali40000000099", "10.1.1.3", "", NULL);
	pol_flush(P);
	struct pol *incremental = P;
	P = pol_new("node-a", AF_INET);
	struct felix_config cfg;
	felix_config_defaults(&cfg);
	pol_set_config(P, &cfg);
	ns("a", "");
	for (int i = 0; i < 40; i++) {
		bool kept = true;
		for (size_t k = 0; k < ARRAY_SIZE(gone); k++)
			kept &= gone[k] != i;
		if (!kept)
			continue;
		snprintf(name, sizeof(name), "p%d", i);
		snprintf(iface, sizeof(iface), "cali%x%010d", i % 16, i);
		snprintf(ip, sizeof(ip), "10.1.0.%d", i + 1);
		pod("a", name, "node-a", iface, ip, "", NULL);
	}
	pod("a", "q1", "node-a", "calizz00000001", "10.1.1.1", "", NULL);
	pod("a", "q2", "node-a", "calizz00000002", "10.1.1.2", "", NULL);
	pod("a", "q3", "node-a", "cali40000000099", "10.1.1.3", "", NULL);
	pol_flush(P);
	const struct hmap *want = &pol_desired(P)->tables[PT_FILTER].chains;
	const struct hmap *have = &pol_desired(incremental)->tables[PT_FILTER].chains;
	size_t trees = 0;
	for (struct hmap_iter it = hmap_iter(want); hmap_next(&it);) {
		if (!strstr(it.key, "dispatch"))
			continue;
		const struct pchain *w = it.value, *h = hmap_get(have, it.key);
		assert_non_null(h);
		assert_int_equal(h->n, w->n);
		for (uint32_t i = 0; i < w->n; i++)
			assert_string_equal(h->rules[i], w->rules[i]);
		trees++;
	}
	for (struct hmap_iter it = hmap_iter(have); hmap_next(&it);)
		if (strstr(it.key, "dispatch"))
			assert_non_null(hmap_get(want, it.key));
	assert_true(trees > 4);
	pol_free(incremental);
}

/*
 * Dispatch through verdict maps (the nftables backend): no tree, the root holds the drop, the
 * map an element per interface; an endpoint coming or going marks its element alone; back to
 * trees, the maps go.
 */
static void test_dispatch_maps(void **state)
{
	ns("a", "");
	pod("a", "p1", "node-a", "cali1111", "10.1.0.1", "", NULL);
	pod("a", "p2", "node-a", "cali2222", "10.1.0.2", "", NULL);
	assert_int_equal(chain("cali-from-wl-dispatch")->n, 3); /* the tree: two and the drop */
	struct pol_desired *d = pol_desired(P);
	pol_set_dispatch_maps(P, true);
	const struct pchain *root = chain("cali-from-wl-dispatch");
	assert_int_equal(root->n, 1);
	assert_non_null(rule_with(root, "Unknown interface"));
	assert_int_equal(d->maps.n, 2);
	const struct pmap *in = hmap_get(&d->maps, "cali-from-wl-dispatch");
	const struct pmap *out = hmap_get(&d->maps, "cali-to-wl-dispatch");
	assert_false(in->oif);
	assert_true(out->oif);
	assert_string_equal(hmap_get(&in->ifaces, "cali1111"), "cali-fw-cali1111");
	assert_string_equal(hmap_get(&out->ifaces, "cali2222"), "cali-tw-cali2222");
	assert_true(hmap_has(&d->dirty_maps, "cali-from-wl-dispatch"));
	hmap_clear(&d->dirty_maps);
	hmap_clear(&d->dirty_chains[PT_FILTER]);
	/* one pod goes, one comes: their elements alone, the root untouched */
	del(KIND_WORKLOADENDPOINT, "a", "p1");
	pod("a", "p3", "node-a", "cali3333", "10.1.0.3", "", NULL);
	pol_flush(P);
	assert_int_equal(d->dirty_maps.n, 4);
	assert_true(hmap_has(&d->dirty_maps, "cali-from-wl-dispatch\ncali1111"));
	assert_true(hmap_has(&d->dirty_maps, "cali-to-wl-dispatch\ncali3333"));
	assert_false(hmap_has(&d->dirty_chains[PT_FILTER], "cali-from-wl-dispatch"));
	assert_null(hmap_get(&in->ifaces, "cali1111"));
	assert_int_equal(in->ifaces.n, 2);
	/* a host endpoint: its maps, without the drop (other interfaces go on to the rest) */
	apply("apiVersion: projectcalico.org/v3\nkind: HostEndpoint\n"
	      "metadata: {name: node-a-eth0}\n"
	      "spec: {node: node-a, interfaceName: eth0, expectedIPs: [192.168.1.10]}\n");
	assert_int_equal(chain("cali-from-host-endpoint")->n, 0);
	const struct pmap *fh = hmap_get(&d->maps, "cali-from-host-endpoint");
	assert_non_null(fh);
	assert_string_equal(hmap_get(&fh->ifaces, "eth0"), "cali-fh-eth0");
	/* trees again: the maps go, marked */
	hmap_clear(&d->dirty_maps);
	pol_set_dispatch_maps(P, false);
	assert_true(chain("cali-from-wl-dispatch")->n > 1);
	assert_int_equal(d->maps.n, 0);
	assert_int_equal(d->dirty_maps.n, 4);
	(void)state;
}

static void test_endpoint_to_host_action(void **state)
{
	struct felix_config cfg;
	felix_config_defaults(&cfg);
	snprintf(cfg.endpoint_to_host_action, sizeof(cfg.endpoint_to_host_action), "Accept");
	pol_set_config(P, &cfg);
	assert_non_null(rule_with(chain("cali-wl-to-host"), "-j ACCEPT"));
	snprintf(cfg.endpoint_to_host_action, sizeof(cfg.endpoint_to_host_action), "Return");
	pol_set_config(P, &cfg);
	assert_non_null(rule_with(chain("cali-wl-to-host"), "-j RETURN"));
}

/* felix's defaults, with the event log on or off. */
static void set_event_log(bool on)
{
	struct felix_config cfg;
	felix_config_defaults(&cfg);
	cfg.event_log_enabled = on;
	pol_set_config(P, &cfg);
}

static void test_event_log_rules(void **state)
{
	set_event_log(true);
	cluster();
	apply("apiVersion: projectcalico.org/v3\nkind: NetworkPolicy\n"
	      "metadata: {name: deny, namespace: a}\n"
	      "spec:\n  selector: role == 'db'\n  ingress: [{action: Deny, protocol: TCP}]\n");
	char *rules = all_rules();
	const char *r = strstr(rules, "-j NFLOG --nflog-prefix \"Di:p:");
	assert_non_null(r);
	char prefix[64];
	sscanf(r + strlen("-j NFLOG --nflog-prefix \""), "%63[^\"]", prefix);
	assert_string_equal(pol_describe_prefix(P, prefix), "np/a/deny");
	assert_non_null(strstr(rules, "-m limit --limit 10/sec --limit-burst 20 -j NFLOG"));
	assert_non_null(strstr(rules, "\"Di:e:calidb000000001\" --nflog-group 1"));
	assert_non_null(strstr(rules, "\"Do:n:calidb000000001\" --nflog-group 2"));
	free(rules);
	assert_string_equal(pol_endpoint_of_iface(P, "calidb000000001"),
			    "WorkloadEndpoint a/db");
}

/* The event log line for an NFLOG @prefix, as felix writes it. */
static char *event_line(const char *prefix)
{
	struct nflog_event ev = { .proto = 6, .sport = 40000, .dport = 5432 };
	snprintf(ev.prefix, sizeof(ev.prefix), "%s", prefix);
	ev.icmp_type = ev.icmp_code = -1;
	struct strbuf sb = STRBUF_INIT;
	sb_init(&sb);
	eventlog_format(P, &ev, "calix1000000001", "calidb000000001", 1700000000000000ull, &sb);
	return sb_detach(&sb);
}

/* The NFLOG prefix of the first rule containing @needle in chain @name ("" when none). */
static void prefix_in(const char *name, const char *needle, char out[64])
{
	const char *r = rule_with(chain(name), needle);
	out[0] = '\0';
	if (r && strstr(r, "--nflog-prefix \""))
		sscanf(strstr(r, "--nflog-prefix \"") + 16, "%63[^\"]", out);
}

/*
 * Staged policies: previewed in the event log before the policies in force, never enforced.
 * A staged policy stands in for the enforced one of its name (stagedAction Set) or removes it
 * (Delete); the preview chains log and mark, never drop or accept; no event log, no preview.
 */
static void test_staged_preview(void **state)
{
	set_event_log(true);
	cluster();
	apply("apiVersion: projectcalico.org/v3\nkind: NetworkPolicy\n"
	      "metadata: {name: gate, namespace: a}\n"
	      "spec:\n  selector: role == 'db'\n  ingress: [{action: Allow, source: {selector: "
	      "role == 'x'}}]\n");
	const char *tw = "cali-tw-calidb000000001";
	assert_null(rule_with(chain(tw), "Staged preview"));
	/* the same name, staged: x denied, y allowed */
	apply("apiVersion: projectcalico.org/v3\nkind: StagedNetworkPolicy\n"
	      "metadata: {name: gate, namespace: a}\n"
	      "spec:\n  selector: role == 'db'\n  ingress:\n"
	      "  - {action: Deny, source: {selector: role == 'x'}}\n"
	      "  - {action: Allow, source: {selector: role == 'y'}}\n");
	const struct pchain *c = chain(tw);
	uint32_t start = rule_at(c, 0, "Staged preview: tier default");
	uint32_t jump = rule_at(c, start, "-j cali-vi-snp/a/gate");
	uint32_t end = rule_at(c, jump, "End of staged preview");
	assert_true(start < jump && jump < end && end < rule_at(c, end, "-j cali-pi-np/a/gate"));
	/* the enforced policy it replaces is not in the preview; it is still in force */
	assert_null(rule_with(c, "cali-vi-np/a/gate"));
	assert_null(chain("cali-vi-np/a/gate"));
	const struct pchain *v = chain("cali-vi-snp/a/gate");
	assert_non_null(v);
	for (uint32_t i = 0; i < v->n; i++)
		assert_true(!strstr(v->rules[i], "-j DROP") && !strstr(v->rules[i], "-j ACCEPT"));
	assert_non_null(strstr(c->rules[end], "-j MARK --set-xmark 0x0/0x"));
	/* what the event log says of the preview's rules and of the tier's end */
	char pf[64];
	prefix_in("cali-vi-snp/a/gate", "-j NFLOG", pf);
	assert_true(str_has_prefix(pf, "Di:w:"));
	char *line = event_line(pf);
	assert_non_null(strstr(line, "\"verdict\":\"would-deny\",\"direction\":\"ingress\""));
	assert_non_null(strstr(line, "\"policy\":\"snp/a/gate\",\"rule\":0,"
				     "\"reason\":\"staged preview: policy rule\""));
	free(line);
	prefix_in(tw, "Di:x:", pf);
	assert_string_equal(pol_describe_prefix(P, pf), "tier/default");
	line = event_line(pf);
	assert_non_null(strstr(line, "\"verdict\":\"would-deny\""));
	assert_non_null(strstr(line, "\"interface\":\"calidb000000001\",\"endpoint\":"
				     "\"WorkloadEndpoint a/db\",\"tier\":\"default\""));
	free(line);
	line = event_line("Pi:w:AAAAAAAAAAAA:3");
	assert_non_null(strstr(line, "\"verdict\":\"would-pass\""));
	free(line);
	line = event_line("Pi:p:AAAAAAAAAAAA:3"); /* a pass is never logged in force */
	assert_non_null(strstr(line, "\"verdict\":\"unknown\""));
	free(line);
	/* Delete: the tier would have no policy for db (it is skipped): nothing to preview */
	apply("apiVersion: projectcalico.org/v3\nkind: StagedNetworkPolicy\n"
	      "metadata: {name: gate, namespace: a}\nspec: {stagedAction: Delete}\n");
	assert_null(rule_with(chain(tw), "Staged preview"));
	assert_null(chain("cali-vi-snp/a/gate"));
	/* a staged policy beside the enforced one: both in the preview, in order */
	del(KIND_STAGEDNETWORKPOLICY, "a", "gate");
	apply("apiVersion: projectcalico.org/v3\nkind: StagedGlobalNetworkPolicy\n"
	      "metadata: {name: first}\n"
	      "spec:\n  order: 1\n  selector: all()\n  ingress: [{action: Pass}]\n");
	c = chain(tw);
	jump = rule_at(c, 0, "-j cali-vi-sgnp/first");
	assert_true(jump < rule_at(c, jump, "-j cali-vi-np/a/gate"));
	assert_true(rule_at(c, 0, "-j cali-pi-np/a/gate") < c->n);
	/* Learn is not previewed; without the event log there is no preview */
	apply("apiVersion: projectcalico.org/v3\nkind: StagedGlobalNetworkPolicy\n"
	      "metadata: {name: first}\nspec: {stagedAction: Learn, selector: all()}\n");
	assert_null(rule_with(chain(tw), "Staged preview"));
	apply("apiVersion: projectcalico.org/v3\nkind: StagedGlobalNetworkPolicy\n"
	      "metadata: {name: first}\nspec: {selector: all(), ingress: [{action: Pass}]}\n");
	assert_non_null(rule_with(chain(tw), "Staged preview"));
	set_event_log(false);
	assert_null(rule_with(chain(tw), "Staged preview"));
	assert_null(chain("cali-vi-sgnp/first"));
	del(KIND_STAGEDGLOBALNETWORKPOLICY, NULL, "first");
	pol_flush(P);
	assert_null(hmap_get(&P->policies, "sgnp/first"));
}

/* --- the label index against brute force ---------------------------------------------------- */

static unsigned rnd_state = 12345;
static unsigned rnd(unsigned n)
{
	rnd_state = rnd_state * 1103515245u + 12345u;
	return (rnd_state >> 16) % n;
}

static void count_member(struct hmap *want, const char *m)
{
	hmap_put(want, m, (void *)((uintptr_t)hmap_get(want, m) + 1));
}

/* What endpoint @e contributes to set @s, found the slow way: its selector evaluated on it. */
static void expected_members(const struct pep *e, const struct psetrec *s, struct hmap *want)
{
	if (!e->n_addrs || !endpoint_matches(P, e, s->sel))
		return;
	if (s->kind == PSET_SEL) {
		for (uint32_t i = 0; i < e->n_addrs; i++)
			count_member(want, e->addrs[i]);
		return;
	}
	const char *proto = s->proto == 6 ? "tcp" : s->proto == 17 ? "udp" : "sctp";
	for (uint32_t k = 0; k < e->n_ports; k++) {
		if (e->ports[k].proto != s->proto || strcmp(e->ports[k].name, s->port_name) != 0)
			continue;
		for (uint32_t i = 0; i < e->n_addrs; i++) {
			char m[64];
			if (strchr(e->addrs[i], '/'))
				continue;
			snprintf(m, sizeof(m), "%s,%s:%u", e->addrs[i], proto, e->ports[k].port);
			count_member(want, m);
		}
	}
}

/*
 * Every active selector set's members recomputed from scratch (every endpoint
 * against every set, without the label index) and compared with the
 * incrementally kept ones, counts included.
 */
static void verify(int step)
{
	pol_flush(P);
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	for (size_t i = 0; i < P->n_active; i++) {
		const struct psetrec *s = P->active[i];
		if (s->is_static || s->kind == PSET_NETS)
			continue;
		struct hmap want = HMAP_INIT;
		for (struct hmap_iter it = hmap_iter(&P->eps); hmap_next(&it);)
			expected_members(it.value, s, &want);
		const struct hmap *have = &s->out->members;
		for (struct hmap_iter it = hmap_iter(&want); hmap_next(&it);)
			if (hmap_get(have, it.key) != it.value)
				sb_addf(&err, "%s: %s counted %zu, expected %zu\n", s->name, it.key,
					(size_t)(uintptr_t)hmap_get(have, it.key),
					(size_t)(uintptr_t)it.value);
		for (struct hmap_iter it = hmap_iter(have); hmap_next(&it);)
			if (!hmap_has(&want, it.key))
				sb_addf(&err, "%s: %s is a member but matches nothing\n", s->name,
					it.key);
		hmap_clear(&want);
	}
	if (err.len)
		fail_msg("step %d: sets differ from a full recomputation:\n%s", step, sb_str(&err));
	sb_free(&err);
}

static void random_policy(unsigned which, unsigned id, const char *n, const char *app)
{
	char buf[1024];
	switch (which) {
	case 0: /* K8s: required labels app, and pcns.team alone (from the profile) */
		snprintf(buf, sizeof(buf),
			 "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\n"
			 "metadata: {name: k%u, namespace: %s}\nspec:\n  podSelector: {}\n"
			 "  ingress:\n  - from:\n    - podSelector: {matchLabels: {app: %s}}\n"
			 "      namespaceSelector: {matchLabels: {team: a}}\n"
			 "    - namespaceSelector: {matchLabels: {team: b}}\n"
			 "    ports: [{port: http}, {port: 53, protocol: UDP}]\n",
			 id, n, app);
		break;
	case 1: /* Calico: selectors the index cannot serve */
		snprintf(buf, sizeof(buf),
			 "apiVersion: projectcalico.org/v3\nkind: NetworkPolicy\n"
			 "metadata: {name: c%u, namespace: %s}\nspec:\n  selector: all()\n"
			 "  ingress: [{action: Allow, source: {selector: \"app in {'%s', 'q'} || "
			 "has(role)\"}}, {action: Deny, source: {selector: app != 'x', "
			 "namespaceSelector: team != 'b'}}]\n",
			 id, n, app);
		break;
	default: /* Calico: only the endpoint's own label decides */
		snprintf(buf, sizeof(buf),
			 "apiVersion: projectcalico.org/v3\nkind: NetworkPolicy\n"
			 "metadata: {name: e%u, namespace: %s}\nspec:\n  selector: all()\n"
			 "  egress: [{action: Allow, protocol: TCP, destination: {selector: app == '%s', ports: "
			 "[http]}}]\n",
			 id, n, app);
	}
	apply(buf);
}

/*
 * Random pods, namespace labels and policies, with selectors the index can
 * serve (k == v, namespace labels through profiles) and ones it cannot (in,
 * has, !=, named ports): after every change each active set must hold exactly
 * what evaluating every endpoint against it gives.
 */
static void test_label_index_matches_full_scan(void **state)
{
	static const char *const nss[] = { "n0", "n1", "n2", "n3" };
	static const char *const apps[] = { "x", "y", "z" };
	static const char *const teams[] = { "a", "b", "" };
	char buf[1024];
	for (size_t i = 0; i < 4; i++)
		ns(nss[i], "team: a");
	for (int step = 0; step < 400; step++) {
		unsigned op = rnd(10), k = rnd(24);
		const char *n = nss[k % 4];
		char name[16], iface[16], ip[20], labels[64], ports[64];
		snprintf(name, sizeof(name), "p%u", k);
		if (op < 5) { /* a pod created or relabelled */
			snprintf(iface, sizeof(iface), "calip%010u", k);
			snprintf(ip, sizeof(ip), "10.1.0.%u", k + 1);
			snprintf(labels, sizeof(labels), "app: %s%s", apps[rnd(3)],
				 rnd(2) ? ", role: r" : "");
			snprintf(ports, sizeof(ports), "[{name: http, port: %u, protocol: TCP}]",
				 8000 + rnd(3));
			pod(n, name, rnd(2) ? "node-a" : "node-b", iface, ip, labels,
			    rnd(2) ? ports : NULL);
		} else if (op < 6) {
			del(KIND_WORKLOADENDPOINT, n, name);
		} else if (op < 8) { /* a namespace's labels change */
			const char *t = teams[rnd(3)];
			snprintf(buf, sizeof(buf), "%s%s", t[0] ? "team: " : "", t);
			ns(nss[rnd(4)], buf);
		} else if (op < 9) {
			unsigned which = rnd(3), id = rnd(6);
			random_policy(which, id, nss[id % 4], apps[rnd(3)]);
		} else {
			unsigned id = rnd(6);
			snprintf(name, sizeof(name), "%c%u", "kce"[rnd(3)], id);
			del(name[0] == 'k' ? KIND_K8S_NETWORKPOLICY : KIND_NETWORKPOLICY,
			    nss[id % 4], name);
		}
		verify(step);
	}
	struct pol_stats st;
	pol_stats(P, &st);
	assert_true(st.active_sets > 3); /* the test exercised sets at all */
}

int main(void)
{
#define WITH_POLICY(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		WITH_POLICY(test_k8s_peer_and_vs_or),
		WITH_POLICY(test_k8s_default_deny_and_allow_all),
		WITH_POLICY(test_k8s_named_port_per_pod),
		WITH_POLICY(test_calico_named_port_any_protocol),
		WITH_POLICY(test_tiers),
		WITH_POLICY(test_stored_http_match_fails_closed),
		WITH_POLICY(test_k8s_endport_and_ipblock),
		WITH_POLICY(test_k8s_namespace_expressions),
		WITH_POLICY(test_calico_order_and_actions),
		WITH_POLICY(test_calico_negations_and_netsets),
		WITH_POLICY(test_profile_and_namespace_labels),
		WITH_POLICY(test_fail_closed),
		WITH_POLICY(test_missing_profile_fails_closed),
		WITH_POLICY(test_incremental_sets_and_cleanup),
		WITH_POLICY(test_marks_say_what_was),
		WITH_POLICY(test_host_endpoint_failsafe),
		WITH_POLICY(test_nat_outgoing),
		WITH_POLICY(test_dispatch_tree),
		WITH_POLICY(test_dispatch_maps),
		WITH_POLICY(test_endpoint_to_host_action),
		WITH_POLICY(test_event_log_rules),
		WITH_POLICY(test_staged_preview),
		WITH_POLICY(test_label_index_matches_full_scan),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
