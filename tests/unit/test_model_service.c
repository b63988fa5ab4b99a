/*
 * Kubernetes Service (v1) and EndpointSlice (discovery.k8s.io/v1) in the
 * resource model: the apiserver's defaults, validation, the EndpointSlice's
 * top-level fields, and the canonical round trip.
 */
#include "harness.h"

#include <brindle/core/model.h>

#include <stdio.h>
#include <stdlib.h>

static struct br_object **read_ok(const char *text, size_t *n)
{
	struct br_object **objs;
	struct model_errors errs = { 0 };
	if (model_read("test.yaml", text, strlen(text), NULL, &objs, n, &errs) < 0) {
		for (size_t i = 0; i < errs.n; i++)
			print_error("%s\n", errs.v[i]);
		fail_msg("unexpected errors reading:\n%s", text);
	}
	model_errors_clear(&errs);
	return objs;
}

static char *first_error(const char *text)
{
	struct br_object **objs;
	size_t n;
	struct model_errors errs = { 0 };
	if (model_read("test.yaml", text, strlen(text), NULL, &objs, &n, &errs) == 0) {
		model_free_all(objs, n);
		return NULL;
	}
	char *e = xstrdup(errs.n ? errs.v[0] : "(no message)");
	model_errors_clear(&errs);
	return e;
}

static char *canonical(const struct br_object *o)
{
	struct strbuf sb = STRBUF_INIT;
	sb_init(&sb);
	model_to_json(o, &sb);
	return sb_detach(&sb);
}

static const char *const lb_service =
	"apiVersion: v1\n"
	"kind: Service\n"
	"metadata: {name: web, namespace: shop}\n"
	"spec:\n"
	"  type: LoadBalancer\n"
	"  externalTrafficPolicy: Local\n"
	"  clusterIP: 10.96.0.10\n"
	"  externalIPs: [192.0.2.10]\n"
	"  selector: {app: web}\n"
	"  ports:\n"
	"  - {name: http, port: 80, targetPort: 8080, nodePort: 30080}\n"
	"  - {name: https, port: 443}\n"
	"status:\n"
	"  loadBalancer:\n"
	"    ingress:\n"
	"    - ip: 198.51.100.7\n";

static void test_service_defaults(void **state)
{
	size_t n;
	struct br_object **objs = read_ok(lb_service, &n);
	const struct br_service *s = (const void *)objs[0];
	assert_string_equal(s->o.kind->kind, "Service");
	assert_string_equal(s->spec.type, "LoadBalancer");
	assert_string_equal(s->spec.session_affinity, "None");
	assert_string_equal(s->spec.internal_traffic_policy, "Cluster");
	assert_string_equal(s->spec.ports[0].protocol, "TCP");
	assert_int_equal(s->spec.ports[0].target_port.i, 8080);
	assert_int_equal(s->spec.ports[1].target_port.i, 443);
	assert_int_equal(s->spec.n_cluster_ips, 1);
	assert_string_equal(s->spec.cluster_ips[0], "10.96.0.10");
	assert_string_equal(s->spec.ip_families[0], "IPv4");
	assert_string_equal(s->spec.ip_family_policy, "SingleStack");
	assert_true(s->spec.allocate_load_balancer_node_ports.v);
	assert_string_equal(s->status.load_balancer.ingress[0].ip, "198.51.100.7");
	model_free_all(objs, n);

	objs = read_ok("apiVersion: v1\nkind: Service\nmetadata: {name: np}\n"
		       "spec: {type: NodePort, clusterIP: 'fd00:96::5', sessionAffinity: ClientIP,"
		       " ports: [{port: 53, protocol: UDP}]}\n",
		       &n);
	s = (const void *)objs[0];
	assert_string_equal(s->o.meta.namespace, "default");
	assert_string_equal(s->spec.external_traffic_policy, "Cluster");
	assert_string_equal(s->spec.ip_families[0], "IPv6");
	assert_int_equal(s->spec.session_affinity_config->client_ip->timeout_seconds.v, 10800);
	model_free_all(objs, n);
}

static void test_slice_top_level_fields(void **state)
{
	size_t n;
	struct br_object **objs = read_ok("apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\n"
					  "metadata: {name: web-abc, namespace: shop, labels:"
					  " {kubernetes.io/service-name: web}}\n"
					  "addressType: IPv4\n"
					  "ports: [{name: http, port: 8080}]\n"
					  "endpoints:\n"
					  "- addresses: [10.244.1.5]\n"
					  "  conditions: {ready: true}\n"
					  "  nodeName: node-a\n"
					  "- addresses: [10.244.2.7]\n"
					  "  nodeName: node-b\n",
					  &n);
	const struct br_endpointslice *e = (const void *)objs[0];
	assert_string_equal(e->spec.address_type, "IPv4");
	assert_int_equal(e->spec.n_endpoints, 2);
	assert_true(e->spec.endpoints[0].conditions.ready.set);
	assert_false(e->spec.endpoints[1].conditions.ready.set);
	assert_string_equal(e->spec.endpoints[1].node_name, "node-b");
	assert_string_equal(e->spec.ports[0].protocol, "TCP");
	assert_string_equal(labels_get(&e->o.meta.labels, K8S_SERVICE_NAME_LABEL), "web");

	/* The canonical form keeps the fields at the top, and reads back the same. */
	char *j = canonical(objs[0]);
	assert_non_null(strstr(j, "\"metadata\":{"));
	assert_null(strstr(j, "\"spec\""));
	assert_non_null(strstr(j, ",\"addressType\":\"IPv4\",\"endpoints\":["));
	size_t n2;
	struct br_object **again = read_ok(j, &n2);
	assert_true(model_equal(objs[0], again[0]));
	free(j);
	model_free_all(again, n2);
	model_free_all(objs, n);
}

static void test_roundtrip_and_status_counts(void **state)
{
	size_t n, n2;
	struct br_object **objs = read_ok(lb_service, &n);
	char *j = canonical(objs[0]);
	struct br_object **again = read_ok(j, &n2);
	char *j2 = canonical(again[0]);
	assert_string_equal(j, j2);
	assert_true(model_same_content(objs[0], again[0]));
	/* A new load-balancer address is a change, though the spec is the same. */
	struct br_service *s = (void *)again[0];
	s->status.load_balancer.ingress[0].ip = "198.51.100.8";
	assert_false(model_same_content(objs[0], again[0]));
	free(j);
	free(j2);
	model_free_all(again, n2);
	model_free_all(objs, n);
}

static void test_kind_names(void **state)
{
	assert_ptr_equal(model_kind_by_name("svc"), model_kind(KIND_SERVICE));
	assert_ptr_equal(model_kind_by_name("services"), model_kind(KIND_SERVICE));
	assert_ptr_equal(model_kind_by_name("endpointslice"), model_kind(KIND_ENDPOINTSLICE));
	assert_ptr_equal(model_kind_by_name("endpointslices.discovery.k8s.io"),
			 model_kind(KIND_ENDPOINTSLICE));
}

#define SVC "apiVersion: v1\nkind: Service\nmetadata: {name: s}\n"
#define EPS "apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {name: e}\n"
#define D1  "test.yaml: document 1: "

static const struct {
	const char *text, *error;
} bad[] = {
	{ SVC "spec: {clusterIP: 10.0.0.1}\n", D1 "spec.ports: required" },
	{ "apiVersion: v1\nkind: Service\nmetadata: {name: 9s}\nspec: {clusterIP: None}\n",
	  D1 "metadata.name: \"9s\" must start with a lower case letter" },
	{ SVC "spec: {clusterIP: 10.0.0.300, ports: [{port: 80}]}\n",
	  D1 "spec.clusterIP: \"10.0.0.300\" is not an IP address or \"None\"" },
	{ SVC "spec: {type: Cluster, ports: [{port: 80}]}\n",
	  D1 "spec.type: \"Cluster\" is not one of ClusterIP, NodePort, LoadBalancer or "
	     "ExternalName" },
	{ SVC "spec: {externalTrafficPolicy: Local, ports: [{port: 80}]}\n",
	  D1 "spec.externalTrafficPolicy: only for type NodePort or LoadBalancer, or with "
	     "externalIPs" },
	{ SVC "spec: {ports: [{port: 80}, {port: 81}]}\n",
	  D1 "spec.ports[0].name: required when there is more than one port" },
	{ SVC "spec: {ports: [{name: a, port: 80}, {name: a, port: 81}]}\n",
	  D1 "spec.ports[1].name: duplicate port name \"a\"" },
	{ SVC "spec: {ports: [{port: 80, targetPort: 0}]}\n",
	  D1 "spec.ports[0].targetPort: 0 is out of range (1-65535)" },
	{ SVC "spec: {ports: [{port: 80, nodePort: 30000}]}\n",
	  D1 "spec.ports[0].nodePort: only for type NodePort or LoadBalancer" },
	{ SVC "spec: {type: ExternalName}\n",
	  D1 "spec.externalName: required for type ExternalName" },
	{ SVC "spec: {clusterIP: 10.0.0.1, clusterIPs: [10.0.0.2], ports: [{port: 80}]}\n",
	  D1 "spec.clusterIPs: the first entry must equal clusterIP (10.0.0.1)" },
	{ SVC "spec: {ports: [{port: 80}], loadBalancerIP: 1.2.3.4}\n",
	  D1 "spec.loadBalancerIP: only for type LoadBalancer" },
	{ SVC "spec: {ports: [{port: 80}]}\nstatus: {loadBalancer: {ingress: [{ip: x}]}}\n",
	  D1 "status.loadBalancer.ingress[0].ip: \"x\" is not a valid IP address" },
	{ EPS "endpoints: []\n", D1 "addressType: required" },
	{ EPS "addressType: IPv6\nendpoints: [{addresses: [10.0.0.1]}]\n",
	  D1 "endpoints[0].addresses[0]: \"10.0.0.1\" is not an IPv6 address" },
	{ EPS "addressType: IPv4\nendpoints: [{addresses: [10.0.0.1], nodeName: Node_A}]\n",
	  D1 "endpoints[0].nodeName: \"Node_A\" must consist of lower case letters, digits, '-' "
	     "and '.', and start and end with a letter or digit" },
	{ EPS "addressType: IPv4\nspec: {}\n", D1 "spec: unknown field" },
	{ EPS "addressType: IPv4\nendpoints: [{conditions: {ready: true}}]\n",
	  D1 "endpoints[0].addresses: required" },
};

static void test_bad_inputs(void **state)
{
	int failures = 0;
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		char *e = first_error(bad[i].text);
		if (!e || strcmp(e, bad[i].error) != 0) {
			print_error("case %zu:\n%s\n  want: %s\n   got: %s\n", i, bad[i].text,
				    bad[i].error, e ? e : "(accepted)");
			failures++;
		}
		free(e);
	}
	assert_int_equal(failures, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_service_defaults),
		cmocka_unit_test(test_slice_top_level_fields),
		cmocka_unit_test(test_roundtrip_and_status_counts),
		cmocka_unit_test(test_kind_names),
		cmocka_unit_test(test_bad_inputs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
