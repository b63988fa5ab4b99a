/* CRDs from the model: Calico's names, structural schemas, the YAML that is shipped. */
#include "harness.h"

#include <brindle/core/json.h>
#include <brindle/core/model_crd.h>
#include <brindle/core/yaml.h>

#include <stdio.h>
#include <string.h>

/* Calico's CRDs for the kinds the model has (docs/crds.md); every other kind has none. */
static const struct {
	enum br_kind_id id;
	const char *kind, *plural;
	bool namespaced;
} calico_crds[] = {
	{ KIND_IPPOOL, "IPPool", "ippools", false },
	{ KIND_BGPCONFIGURATION, "BGPConfiguration", "bgpconfigurations", false },
	{ KIND_BGPPEER, "BGPPeer", "bgppeers", false },
	{ KIND_FELIXCONFIGURATION, "FelixConfiguration", "felixconfigurations", false },
	{ KIND_NETWORKPOLICY, "NetworkPolicy", "networkpolicies", true },
	{ KIND_GLOBALNETWORKPOLICY, "GlobalNetworkPolicy", "globalnetworkpolicies", false },
	{ KIND_NETWORKSET, "NetworkSet", "networksets", true },
	{ KIND_GLOBALNETWORKSET, "GlobalNetworkSet", "globalnetworksets", false },
	{ KIND_HOSTENDPOINT, "HostEndpoint", "hostendpoints", false },
	{ KIND_IPAMCONFIGURATION, "IPAMConfig", "ipamconfigs", false },
	{ KIND_BLOCKAFFINITY, "BlockAffinity", "blockaffinities", false },
	{ KIND_IPAMBLOCK, "IPAMBlock", "ipamblocks", false },
	{ KIND_IPAMHANDLE, "IPAMHandle", "ipamhandles", false },
	{ KIND_TIER, "Tier", "tiers", false },
	{ KIND_IPRESERVATION, "IPReservation", "ipreservations", false },
	{ KIND_BGPFILTER, "BGPFilter", "bgpfilters", false },
	{ KIND_KUBECONTROLLERSCONFIGURATION, "KubeControllersConfiguration",
	  "kubecontrollersconfigurations", false },
	{ KIND_CALICONODESTATUS, "CalicoNodeStatus", "caliconodestatuses", false },
	{ KIND_STAGEDNETWORKPOLICY, "StagedNetworkPolicy", "stagednetworkpolicies", true },
	{ KIND_STAGEDGLOBALNETWORKPOLICY, "StagedGlobalNetworkPolicy",
	  "stagedglobalnetworkpolicies", false },
	{ KIND_STAGEDK8SNETWORKPOLICY, "StagedKubernetesNetworkPolicy",
	  "stagedkubernetesnetworkpolicies", true },
	{ KIND_CLUSTERINFORMATION, "ClusterInformation", "clusterinformations", false },
};

static void test_calico_names(void **state)
{
	(void)state;
	size_t found = 0;
	for (size_t i = 0; i < KIND_COUNT; i++) {
		const struct br_kind *k = model_kind((enum br_kind_id)i);
		bool want = false;
		for (size_t j = 0; j < ARRAY_SIZE(calico_crds); j++) {
			if (calico_crds[j].id != k->id)
				continue;
			want = true;
			assert_non_null(k->crd_kind);
			assert_string_equal(k->crd_kind, calico_crds[j].kind);
			assert_string_equal(k->crd_plural, calico_crds[j].plural);
			assert_int_equal(k->namespaced, calico_crds[j].namespaced);
			found++;
		}
		if (!want) {
			if (k->crd_kind || k->crd_plural)
				fail_msg("%s must not be a CRD", k->kind);
			struct arena *a = arena_new();
			assert_null(model_crd(a, k));
			assert_null(model_crd_schema(a, k));
			arena_free(a);
		}
	}
	assert_int_equal(found, ARRAY_SIZE(calico_crds));
	assert_null(model_kind(KIND_NODE)->crd_kind);
	assert_null(model_kind(KIND_PROFILE)->crd_kind);
	assert_null(model_kind(KIND_WORKLOADENDPOINT)->crd_kind);
	assert_null(model_kind(KIND_K8S_NETWORKPOLICY)->crd_kind);
}

static const char *str_at(const struct jv *v, const char *a, const char *b, const char *c)
{
	const char *keys[] = { a, b, c };
	for (size_t i = 0; i < 3 && keys[i] && v; i++)
		v = jv_get(v, keys[i]);
	return v ? jv_as_string(v) : NULL;
}

/*
 * The apiserver's structural rules, as far as our schemas use the vocabulary:
 * every node under properties, additionalProperties and items has a type, or
 * is int-or-string (then anyOf holds only bare types); required names
 * properties; only known keywords.
 */
static void check_structural(const struct jv *s, const char *path)
{
	static const char *const known[] = { "type",
					     "properties",
					     "required",
					     "items",
					     "additionalProperties",
					     "enum",
					     "pattern",
					     "minimum",
					     "maximum",
					     "nullable",
					     "anyOf",
					     "x-kubernetes-int-or-string",
					     "x-kubernetes-preserve-unknown-fields" };
	if (!s || s->type != JV_OBJECT)
		fail_msg("%s: not a schema", path);
	for (size_t i = 0; i < s->obj.n; i++) {
		bool ok = false;
		for (size_t k = 0; k < ARRAY_SIZE(known); k++)
			ok |= strcmp(s->obj.members[i].key, known[k]) == 0;
		if (!ok)
			fail_msg("%s: unexpected keyword %s", path, s->obj.members[i].key);
	}
	const char *type = jv_as_string(jv_get(s, "type"));
	const struct jv *ios = jv_get(s, "x-kubernetes-int-or-string");
	bool b;
	if (ios && jv_as_bool(ios, &b) && b) {
		if (type)
			fail_msg("%s: int-or-string with a type", path);
		const struct jv *any = jv_get(s, "anyOf");
		assert_non_null(any);
		assert_int_equal(any->arr.n, 2);
		for (size_t i = 0; i < any->arr.n; i++)
			assert_int_equal(any->arr.items[i]->obj.n, 1);
		return;
	}
	if (!type || !*type)
		fail_msg("%s: no type", path);
	if (jv_get(s, "anyOf"))
		fail_msg("%s: anyOf outside int-or-string", path);
	char sub[1024];
	const struct jv *props = jv_get(s, "properties");
	if (props) {
		assert_string_equal(type, "object");
		for (size_t i = 0; i < props->obj.n; i++) {
			snprintf(sub, sizeof(sub), "%s.%s", path, props->obj.members[i].key);
			check_structural(props->obj.members[i].value, sub);
		}
	}
	const struct jv *req = jv_get(s, "required");
	for (size_t i = 0; req && i < req->arr.n; i++)
		if (!props || !jv_get(props, jv_as_string(req->arr.items[i])))
			fail_msg("%s: required %s is not a property", path,
				 jv_as_string(req->arr.items[i]));
	const struct jv *addl = jv_get(s, "additionalProperties");
	if (addl) {
		assert_string_equal(type, "object");
		assert_null(props);
		snprintf(sub, sizeof(sub), "%s{}", path);
		check_structural(addl, sub);
	}
	const struct jv *items = jv_get(s, "items");
	if (strcmp(type, "array") == 0) {
		assert_non_null(items);
		snprintf(sub, sizeof(sub), "%s[]", path);
		check_structural(items, sub);
	} else {
		assert_null(items);
	}
}

static void test_structural(void **state)
{
	(void)state;
	struct arena *a = arena_new();
	for (size_t j = 0; j < ARRAY_SIZE(calico_crds); j++) {
		const struct br_kind *k = model_kind(calico_crds[j].id);
		const struct jv *crd = model_crd(a, k);
		assert_non_null(crd);
		assert_string_equal(str_at(crd, "apiVersion", NULL, NULL),
				    "apiextensions.k8s.io/v1");
		assert_string_equal(str_at(crd, "kind", NULL, NULL), "CustomResourceDefinition");
		char name[128];
		snprintf(name, sizeof(name), "%s.crd.projectcalico.org", k->crd_plural);
		assert_string_equal(str_at(crd, "metadata", "name", NULL), name);
		const struct jv *spec = jv_get(crd, "spec");
		assert_string_equal(str_at(spec, "group", NULL, NULL), MODEL_CRD_GROUP);
		assert_string_equal(str_at(spec, "scope", NULL, NULL),
				    k->namespaced ? "Namespaced" : "Cluster");
		assert_string_equal(str_at(spec, "names", "kind", NULL), k->crd_kind);
		assert_string_equal(str_at(spec, "names", "plural", NULL), k->crd_plural);
		char list[64];
		snprintf(list, sizeof(list), "%sList", k->crd_kind);
		assert_string_equal(str_at(spec, "names", "listKind", NULL), list);
		const struct jv *versions = jv_get(spec, "versions");
		assert_int_equal(versions->arr.n, 1);
		const struct jv *v1 = versions->arr.items[0];
		assert_string_equal(str_at(v1, "name", NULL, NULL), "v1");
		bool served = false, storage = false;
		assert_true(jv_as_bool(jv_get(v1, "served"), &served) && served);
		assert_true(jv_as_bool(jv_get(v1, "storage"), &storage) && storage);
		const struct jv *schema = jv_get(jv_get(v1, "schema"), "openAPIV3Schema");
		assert_true(jv_equal(schema, model_crd_schema(a, k)));
		check_structural(schema, k->crd_kind);
		/* metadata is the apiserver's: only its type. */
		const struct jv *meta = jv_get(jv_get(schema, "properties"), "metadata");
		assert_int_equal(meta->obj.n, 1);
		assert_string_equal(str_at(meta, "type", NULL, NULL), "object");
	}
	arena_free(a);
}

/* The schema node at a dotted path of properties ("[]" steps into items, "@kw" reads a
 * keyword). */
static const struct jv *node_at(struct arena *a, enum br_kind_id id, const char *path)
{
	const struct jv *s = model_crd_schema(a, model_kind(id));
	char buf[256];
	snprintf(buf, sizeof(buf), "%s", path);
	for (char *save, *p = strtok_r(buf, ".", &save); p && s; p = strtok_r(NULL, ".", &save)) {
		if (strcmp(p, "[]") == 0)
			s = jv_get(s, "items");
		else if (*p == '@')
			s = jv_get(s, p + 1);
		else
			s = jv_get(jv_get(s, "properties"), p);
	}
	if (!s)
		fail_msg("no schema at %s", path);
	return s;
}

static void test_field_schemas(void **state)
{
	(void)state;
	struct arena *a = arena_new();
	struct strbuf sb = STRBUF_INIT;
	sb_init(&sb);
#define EXPECT(id, path, json)                                               \
	do {                                                                 \
		sb_reset(&sb);                                               \
		json_write(&sb, node_at(a, id, path), false);                \
		if (strcmp(sb_str(&sb), json) != 0)                          \
			fail_msg("%s: %s, not %s", path, sb_str(&sb), json); \
	} while (0)
	EXPECT(KIND_IPPOOL, "spec.ipipMode",
	       "{\"type\":\"string\",\"enum\":[\"Never\",\"Always\",\"CrossSubnet\"]}");
	EXPECT(KIND_IPPOOL, "spec.blockSize", "{\"type\":\"integer\"}");
	EXPECT(KIND_IPPOOL, "spec.allowedUses",
	       "{\"type\":\"array\",\"items\":{\"type\":\"string\"}}");
	EXPECT(KIND_FELIXCONFIGURATION, "spec.logSeverityScreen",
	       "{\"type\":\"string\",\"pattern\":\"^(?i)(Debug|Info|Warning|Error|Fatal)$\"}");
	EXPECT(KIND_FELIXCONFIGURATION, "spec.healthPort",
	       "{\"type\":\"integer\",\"minimum\":1,\"maximum\":65535}");
	EXPECT(KIND_FELIXCONFIGURATION, "spec.routeRefreshInterval", "{\"type\":\"string\"}");
	EXPECT(KIND_FELIXCONFIGURATION, "spec.failsafeInboundHostPorts.[].port",
	       "{\"type\":\"integer\",\"minimum\":1,\"maximum\":65535}");
	EXPECT(KIND_GLOBALNETWORKPOLICY, "spec.order", "{\"type\":\"number\"}");
	EXPECT(KIND_GLOBALNETWORKPOLICY, "spec.ingress.[].protocol",
	       "{\"anyOf\":[{\"type\":\"integer\"},{\"type\":\"string\"}],"
	       "\"x-kubernetes-int-or-string\":true}");
	EXPECT(KIND_NETWORKPOLICY, "spec.egress.[].destination.notPorts.[]",
	       "{\"anyOf\":[{\"type\":\"integer\"},{\"type\":\"string\"}],"
	       "\"x-kubernetes-int-or-string\":true}");
	EXPECT(KIND_NETWORKPOLICY, "spec.ingress.[].metadata.annotations",
	       "{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"}}");
	EXPECT(KIND_BGPPEER, "spec.asNumber",
	       "{\"type\":\"integer\",\"minimum\":1,\"maximum\":4294967295}");
	EXPECT(KIND_IPAMBLOCK, "spec.allocations",
	       "{\"type\":\"array\",\"items\":{\"type\":\"integer\",\"nullable\":true}}");
	EXPECT(KIND_IPAMHANDLE, "spec.block",
	       "{\"type\":\"object\",\"additionalProperties\":{\"type\":\"integer\"}}");
	EXPECT(KIND_BLOCKAFFINITY, "spec.@required", "[\"node\",\"cidr\",\"state\"]");
	EXPECT(KIND_GLOBALNETWORKPOLICY, "spec.ingress.[].@required", "[\"action\"]");
	/* Kinds without a CRD are not described at all; Node is one. */
	assert_null(model_crd_schema(a, model_kind(KIND_NODE)));
#undef EXPECT
	sb_free(&sb);
	arena_free(a);
}

/* The YAML stream reads back as the documents it was written from. */
static void test_yaml_roundtrip(void **state)
{
	(void)state;
	struct strbuf out = STRBUF_INIT, err = STRBUF_INIT;
	sb_init(&out);
	sb_init(&err);
	model_crds_yaml(&out);
	assert_true(strncmp(out.buf, "# ", 2) == 0);
	assert_non_null(strstr(out.buf, "brindlectl manifests crds > deploy/crds.yaml"));
	struct arena *a = arena_new();
	struct jv **docs;
	size_t n;
	if (yaml_parse_all(a, out.buf, out.len, &docs, &n, &err) < 0)
		fail_msg("%s", sb_str(&err));
	size_t d = 0;
	for (size_t i = 0; i < n; i++) {
		if (!docs[i])
			continue;
		while (d < KIND_COUNT && !model_kind((enum br_kind_id)d)->crd_kind)
			d++;
		assert_true(d < KIND_COUNT);
		const struct jv *want = model_crd(a, model_kind((enum br_kind_id)d++));
		if (!jv_equal(docs[i], want))
			fail_msg("document %zu does not read back as %s", i + 1,
				 str_at(want, "metadata", "name", NULL));
	}
	while (d < KIND_COUNT && !model_kind((enum br_kind_id)d)->crd_kind)
		d++;
	assert_int_equal(d, KIND_COUNT);
	arena_free(a);
	sb_free(&out);
	sb_free(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_calico_names),
		cmocka_unit_test(test_structural),
		cmocka_unit_test(test_field_schemas),
		cmocka_unit_test(test_yaml_roundtrip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
