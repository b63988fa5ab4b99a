/*
 * Calico kinds as custom resources: what is written, what reads back, and
 * CRs as Calico itself writes them (metadata in an annotation, IPAM names
 * derived from CIDRs and handles, 3.30's "default." policy names).
 */
#include "harness.h"

#include <brindle/core/json.h>
#include <brindle/core/kdd_crd.h>
#include <brindle/core/yaml.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct br_object *read_one(const char *yaml)
{
	struct br_object **objs;
	size_t n;
	struct model_errors errs = { 0 };
	if (model_read("test", yaml, strlen(yaml), NULL, &objs, &n, &errs) < 0 || n != 1)
		fail_msg("model_read: %s", errs.n ? errs.v[0] : "not one object");
	model_errors_clear(&errs);
	struct br_object *o = objs[0];
	free(objs);
	return o;
}

/* An IPAM kind, which files may not hold. */
static struct br_object *read_internal(const char *yaml)
{
	struct arena *a = arena_new();
	struct jv **docs;
	size_t n;
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	if (yaml_parse_all(a, yaml, strlen(yaml), &docs, &n, &err) < 0 || n != 1)
		fail_msg("yaml: %s", sb_str(&err));
	sb_free(&err);
	struct model_errors errs = { 0 };
	struct br_object *o = model_decode(docs[0], true, &errs);
	if (!o)
		fail_msg("decode: %s", errs.n ? errs.v[0] : "?");
	model_errors_clear(&errs);
	arena_free(a);
	return o;
}

static struct jv *parse(struct arena *a, const char *text)
{
	struct jv *v;
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	if (json_parse(a, text, strlen(text), &v, &err) < 0)
		fail_msg("json: %s", sb_str(&err));
	sb_free(&err);
	return v;
}

static const char *str_at(const struct jv *v, const char *a, const char *b, const char *c)
{
	v = jv_get(v, a);
	if (v && b)
		v = jv_get(v, b);
	if (v && c)
		v = jv_get(v, c);
	return v ? jv_as_string(v) : NULL;
}

/* Encode, then decode what was encoded as if the server had answered it. */
static struct br_object *round_trip(struct arena *a, const struct br_object *o, struct jv **crp)
{
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	struct jv *cr = kdd_crd_encode(a, o, false, &err);
	if (!cr)
		fail_msg("encode: %s", sb_str(&err));
	sb_free(&err);
	/* What the server adds. */
	struct jv *md = jv_get(cr, "metadata");
	jv_add(a, md, "resourceVersion", jv_string(a, "4711"));
	jv_add(a, md, "uid", jv_string(a, "0b1d2b4e-8f0c-4a51-9a8f-3f3c3d2c1b0a"));
	jv_add(a, md, "generation", jv_int(a, 1));
	struct model_errors errs = { 0 };
	struct br_object *back = kdd_crd_decode(o->kind, cr, &errs);
	if (!back)
		fail_msg("decode: %s", errs.n ? errs.v[0] : "?");
	model_errors_clear(&errs);
	if (crp)
		*crp = cr;
	return back;
}

static void test_ippool(void **state)
{
	struct arena *a = arena_new();
	struct br_object *o =
		read_one("apiVersion: projectcalico.org/v3\nkind: IPPool\n"
			 "metadata: {name: pool-1, labels: {team: net, "
			 "projectcalico.org/owner: ops}, annotations: {note: x}}\n"
			 "spec: {cidr: 10.244.0.0/16, blockSize: 26, ipipMode: Always, "
			 "natOutgoing: true}\n");
	struct jv *cr;
	struct br_object *back = round_trip(a, o, &cr);
	assert_string_equal(str_at(cr, "apiVersion", NULL, NULL), "crd.projectcalico.org/v1");
	assert_string_equal(str_at(cr, "kind", NULL, NULL), "IPPool");
	assert_string_equal(str_at(cr, "metadata", "name", NULL), "pool-1");
	assert_string_equal(str_at(cr, "spec", "cidr", NULL), "10.244.0.0/16");
	/* Calico's keys are on the CR too; the rest only in the metadata annotation. */
	assert_string_equal(str_at(cr, "metadata", "labels", "projectcalico.org/owner"), "ops");
	assert_null(jv_get(jv_get(jv_get(cr, "metadata"), "labels"), "team"));
	const char *ann = str_at(cr, "metadata", "annotations", KDD_METADATA_ANNOTATION);
	assert_non_null(ann);
	assert_non_null(strstr(ann, "\"team\":\"net\""));
	assert_null(strstr(ann, "\"name\"")); /* not for IPPools */
	assert_true(model_same_content(o, back));
	assert_string_equal(back->meta.name, "pool-1");
	assert_int_equal(back->revision, 4711);
	assert_string_equal(back->meta.resource_version, "4711");
	assert_string_equal(back->meta.uid, "0b1d2b4e-8f0c-4a51-9a8f-3f3c3d2c1b0a");
	model_free(back);

	/* For an update, the precondition. */
	o->meta.resource_version = "99";
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	cr = kdd_crd_encode(a, o, true, &err);
	assert_string_equal(str_at(cr, "metadata", "resourceVersion", NULL), "99");
	sb_free(&err);
	model_free(o);
	arena_free(a);
	(void)state;
}

static void test_namespaced_policy(void **state)
{
	struct arena *a = arena_new();
	struct br_object *o = read_one(
		"apiVersion: projectcalico.org/v3\nkind: NetworkPolicy\n"
		"metadata: {name: allow-web, namespace: shop}\n"
		"spec: {selector: app == 'web', types: [Ingress], ingress: [{action: Allow, "
		"protocol: TCP, destination: {ports: [80, 'http']}}]}\n");
	struct jv *cr;
	struct br_object *back = round_trip(a, o, &cr);
	assert_string_equal(str_at(cr, "metadata", "namespace", NULL), "shop");
	/* Policies keep their v3 name in the annotation too. */
	assert_non_null(strstr(str_at(cr, "metadata", "annotations", KDD_METADATA_ANNOTATION),
			       "\"name\":\"allow-web\""));
	assert_true(model_same_content(o, back));
	assert_string_equal(back->meta.namespace, "shop");
	model_free(back);
	model_free(o);
	arena_free(a);
	(void)state;
}

/* CRs as Calico and as kubectl write them. */
static void test_foreign_crs(void **state)
{
	struct arena *a = arena_new();
	struct model_errors errs = { 0 };
	const struct br_kind *gnp = model_kind(KIND_GLOBALNETWORKPOLICY);
	/* Calico 3.30: default-tier policy stored as default.<name>, no name annotated. */
	struct br_object *o = kdd_crd_decode(
		gnp,
		parse(a, "{\"apiVersion\":\"crd.projectcalico.org/v1\",\"kind\":"
			 "\"GlobalNetworkPolicy\",\"metadata\":{\"name\":\"default.deny-all\","
			 "\"resourceVersion\":\"12\",\"annotations\":{\"projectcalico.org/"
			 "metadata\":\"{\\\"creationTimestamp\\\":null,\\\"labels\\\":{\\\"a\\\":"
			 "\\\"b\\\"}}\"},\"labels\":{\"projectcalico.org/tier\":\"default\"}},"
			 "\"spec\":{\"selector\":\"all()\",\"types\":[\"Ingress\"]}}"),
		&errs);
	if (!o)
		fail_msg("%s", errs.v[0]);
	assert_string_equal(o->meta.name, "deny-all");
	assert_int_equal(o->meta.labels.n, 2);
	assert_string_equal(labels_get(&o->meta.labels, "a"), "b");
	assert_string_equal(labels_get(&o->meta.labels, "projectcalico.org/tier"), "default");
	model_free(o);

	/* kubectl apply of a CR: no annotation, its own labels. */
	const struct br_kind *pool = model_kind(KIND_IPPOOL);
	o = kdd_crd_decode(pool,
			   parse(a,
				 "{\"metadata\":{\"name\":\"p\",\"resourceVersion\":\"3\","
				 "\"labels\":{\"x\":\"y\"}},\"spec\":{\"cidr\":\"10.9.0.0/16\"}}"),
			   &errs);
	if (!o)
		fail_msg("%s", errs.v[0]);
	assert_int_equal(o->meta.labels.n, 1);
	assert_int_equal(((struct br_ippool *)o)->spec.block_size.v, 26); /* defaulted */
	model_free(o);

	/* kubectl apply of a CalicoNodeStatus, then confd writes its status: kubectl's record of
	 * what it applied stays on the CR (else its next apply cannot prune). */
	const struct br_kind *cns = model_kind(KIND_CALICONODESTATUS);
	o = kdd_crd_decode(cns,
			   parse(a, "{\"metadata\":{\"name\":\"s\",\"resourceVersion\":\"3\","
				    "\"annotations\":{\"kubectl.kubernetes.io/last-applied-"
				    "configuration\":\"{}\",\"note\":\"n\"}},\"spec\":{\"node\":"
				    "\"n1\",\"classes\":[\"Agent\"]}}"),
			   &errs);
	if (!o)
		fail_msg("%s", errs.v[0]);
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	struct jv *cr = kdd_crd_encode(a, o, true, &err);
	assert_non_null(cr);
	sb_free(&err);
	const struct jv *ann = jv_get(jv_get(cr, "metadata"), "annotations");
	assert_string_equal(
		str_at(ann, "kubectl.kubernetes.io/last-applied-configuration", NULL, NULL), "{}");
	assert_null(jv_get(ann, "note")); /* in the metadata annotation, as any other */
	model_free(o);
	model_errors_clear(&errs);
	arena_free(a);
	(void)state;
}

static void test_ipam_names(void **state)
{
	struct arena *a = arena_new();
	struct strbuf n = STRBUF_INIT, err = STRBUF_INIT;
	sb_init(&n);
	sb_init(&err);
	assert_int_equal(kdd_crd_name(model_kind(KIND_IPAMBLOCK), NULL, "10.244.1.0-26", &n, &err),
			 0);
	assert_string_equal(sb_str(&n), "10-244-1-0-26");
	sb_reset(&n);
	assert_int_equal(kdd_crd_name(model_kind(KIND_IPAMBLOCK), NULL, "fd00::-122", &n, &err), 0);
	assert_string_equal(sb_str(&n), "fd00---122");
	sb_reset(&n);
	assert_int_equal(
		kdd_crd_name(model_kind(KIND_BLOCKAFFINITY), "node-a", "10.244.1.0-26", &n, &err),
		0);
	assert_string_equal(sb_str(&n), "node-a-10-244-1-0-26");
	sb_reset(&n);
	assert_int_equal(
		kdd_crd_name(model_kind(KIND_IPAMHANDLE), NULL, "K8s-Pod-Network.ABC", &n, &err),
		0);
	assert_string_equal(sb_str(&n), "k8s-pod-network.abc");
	char longname[300];
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	sb_reset(&n);
	assert_int_equal(kdd_crd_name(model_kind(KIND_IPAMHANDLE), NULL, longname, &n, &err),
			 -EINVAL);
	assert_non_null(strstr(sb_str(&err), "253"));

	/* Read back, names come from the spec. */
	struct br_object *o =
		read_internal("apiVersion: projectcalico.org/v3\nkind: BlockAffinity\n"
			      "metadata: {name: 10.244.1.0-26}\n"
			      "spec: {node: node-a, cidr: 10.244.1.0/26, state: confirmed}\n");
	struct jv *cr;
	struct br_object *back = round_trip(a, o, &cr);
	assert_string_equal(str_at(cr, "metadata", "name", NULL), "node-a-10-244-1-0-26");
	assert_string_equal(back->meta.name, "10.244.1.0-26");
	assert_string_equal(((struct br_blockaffinity *)back)->spec.node, "node-a");
	model_free(back);
	model_free(o);
	/* Its deleted is a string in the custom resource, as Calico's CRD has it ("" too). */
	o = read_internal("apiVersion: projectcalico.org/v3\nkind: BlockAffinity\n"
			  "metadata: {name: 10.244.1.0-26}\n"
			  "spec: {node: node-a, cidr: 10.244.1.0/26, state: pendingDeletion, "
			  "deleted: true}\n");
	back = round_trip(a, o, &cr);
	assert_string_equal(str_at(cr, "spec", "deleted", NULL), "true");
	assert_true(((struct br_blockaffinity *)back)->spec.deleted);
	model_free(back);
	model_free(o);
	struct model_errors errs = { 0 };
	back = kdd_crd_decode(model_kind(KIND_BLOCKAFFINITY),
			      parse(a, "{\"metadata\":{\"name\":\"node-a-10-244-1-0-26\"},"
				       "\"spec\":{\"node\":\"node-a\",\"cidr\":\"10.244.1.0/26\","
				       "\"state\":\"confirmed\",\"deleted\":\"\"}}"),
			      &errs);
	assert_non_null(back);
	assert_false(((struct br_blockaffinity *)back)->spec.deleted);
	model_free(back);
	o = read_internal("apiVersion: projectcalico.org/v3\nkind: IPAMHandle\n"
			  "metadata: {name: K8s-Pod-Network.ABC}\n"
			  "spec: {handleID: K8s-Pod-Network.ABC, block: {10.244.1.0/26: 1}}\n");
	back = round_trip(a, o, &cr);
	assert_string_equal(str_at(cr, "metadata", "name", NULL), "k8s-pod-network.abc");
	assert_string_equal(back->meta.name, "K8s-Pod-Network.ABC");
	model_free(back);
	model_free(o);
	sb_free(&n);
	sb_free(&err);
	arena_free(a);
	(void)state;
}

static void test_bad_crs(void **state)
{
	struct arena *a = arena_new();
	struct model_errors errs = { 0 };
	const struct br_kind *pool = model_kind(KIND_IPPOOL);
	static const struct {
		const char *cr, *want;
	} bad[] = {
		{ "{\"metadata\":{\"name\":\"p\",\"annotations\":{\"projectcalico.org/metadata\":"
		  "\"{nope\"}},\"spec\":{\"cidr\":\"10.0.0.0/16\"}}",
		  "ippools/p: metadata.annotations[projectcalico.org/metadata]: not a JSON "
		  "object" },
		{ "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"cidr\":\"10.0.0.0/16\","
		  "\"blockSize\":\"x\"}}",
		  "ippools/p: spec.blockSize" },
		{ "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"cidr\":\"10.0.0.300/16\"}}",
		  "ippools/p: spec.cidr" },
		{ "{\"metadata\":{\"name\":\"p\",\"resourceVersion\":\"abc\"},"
		  "\"spec\":{\"cidr\":\"10.0.0.0/16\"}}",
		  "ippools/p: metadata.resourceVersion \"abc\" is not a number" },
		{ "{\"metadata\":{},\"spec\":{}}",
		  "ippools: a custom resource without metadata.name" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		struct br_object *o = kdd_crd_decode(pool, parse(a, bad[i].cr), &errs);
		if (o)
			fail_msg("accepted %s", bad[i].cr);
		assert_true(errs.n >= 1);
		if (!strstr(errs.v[0], bad[i].want))
			fail_msg("error \"%s\" lacks \"%s\"", errs.v[0], bad[i].want);
		model_errors_clear(&errs);
	}
	/* Not a CR kind. */
	assert_null(kdd_crd_decode(model_kind(KIND_WORKLOADENDPOINT), parse(a, "{}"), &errs));
	model_errors_clear(&errs);
	arena_free(a);
	(void)state;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ippool),	    cmocka_unit_test(test_namespaced_policy),
		cmocka_unit_test(test_foreign_crs), cmocka_unit_test(test_ipam_names),
		cmocka_unit_test(test_bad_crs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
