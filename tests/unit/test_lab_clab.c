/*
 * brindlectl lab export-clab: the containerlab topology of
 * examples/three-node.yaml read back with our YAML reader (every node and
 * link present, names, image, addresses, pods on their nodes, the resources
 * a YAML stream of the right documents); two subnets give two bridges; what
 * the export cannot express is refused.
 */
#include "harness.h"

#include "clab.h"
#include "topology.h"

#include <brindle/core/jv.h>
#include <brindle/core/yaml.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

static struct lab_topology *parse(struct arena *a, const char *text)
{
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	struct lab_topology *t;
	int r = lab_topology_parse(a, "t.yaml", text, strlen(text), &t, &err);
	if (r < 0)
		fprintf(stderr, "%s", sb_str(&err));
	assert_int_equal(r, 0);
	sb_free(&err);
	return t;
}

/* The export of @t read back as one YAML document. */
static struct jv *export(struct arena *a, const struct lab_topology *t,
			 const struct lab_clab_options *o)
{
	struct strbuf out = STRBUF_INIT, err = STRBUF_INIT;
	sb_init(&out);
	sb_init(&err);
	int r = lab_clab_export(a, t, o, &out, &err);
	if (r < 0)
		fprintf(stderr, "%s\n", sb_str(&err));
	assert_int_equal(r, 0);
	struct jv **docs;
	size_t n;
	r = yaml_parse_all(a, out.buf, out.len, &docs, &n, &err);
	if (r < 0)
		fprintf(stderr, "%s\n%s", sb_str(&err), sb_str(&out));
	assert_int_equal(r, 0);
	assert_int_equal(n, 1);
	sb_free(&out);
	sb_free(&err);
	return docs[0];
}

static const char *str(const struct jv *obj, const char *key)
{
	const char *s = jv_as_string(jv_get(obj, key));
	if (!s)
		fail_msg("no string \"%s\"", key);
	return s;
}

static void test_three_node(void **state)
{
	struct strbuf text = STRBUF_INIT;
	test_read_source_file("examples/three-node.yaml", &text);
	struct arena *a = arena_new();
	struct lab_topology *t = parse(a, text.buf);
	struct jv *doc = export(a, t, NULL);

	assert_string_equal(str(doc, "name"), "demo");
	const struct jv *mgmt = jv_get(doc, "mgmt");
	assert_string_equal(str(mgmt, "network"), "brindle-demo");
	assert_string_equal(str(mgmt, "ipv4-subnet"), LAB_CLAB_MGMT_SUBNET);
	const struct jv *nodes = jv_get(jv_get(doc, "topology"), "nodes");
	assert_non_null(nodes);
	assert_int_equal(nodes->type, JV_OBJECT);
	static const char *const names[] = { "etcd", "fabric", "node1", "node2", "node3" };
	assert_int_equal(nodes->obj.n, ARRAY_SIZE(names));
	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		const struct jv *n = jv_get(nodes, names[i]);
		assert_non_null(n);
		assert_string_equal(str(n, "kind"), "linux");
		assert_string_equal(str(n, "image"), LAB_CLAB_IMAGE);
		assert_string_equal(str(n, "entrypoint"), LAB_CLAB_ENTRYPOINT);
		for (size_t j = 0; j < i; j++)
			assert_string_not_equal(str(n, "mgmt-ipv4"),
						str(jv_get(nodes, names[j]), "mgmt-ipv4"));
	}
	const struct jv *etcd = jv_get(jv_get(nodes, "etcd"), "env");
	assert_string_equal(str(etcd, "BRINDLE_ROLE"), "etcd");
	assert_string_equal(str(etcd, "BRINDLE_ETCD_LISTEN"), "http://172.31.254.2:2379");
	assert_string_equal(str(jv_get(jv_get(nodes, "fabric"), "env"), "BRINDLE_BRIDGES"),
			    "br0 192.168.100.254/24 n0 n1 n2");

	/* the resources: a YAML stream of the documents lab up applies */
	const char *res = str(etcd, "BRINDLE_RESOURCES");
	struct jv **docs;
	size_t ndocs;
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	assert_int_equal(yaml_parse_all(a, res, strlen(res), &docs, &ndocs, &err), 0);
	assert_int_equal(ndocs, 7); /* BGPConfiguration, IPPool, 3 Nodes, 2 Namespaces */
	assert_string_equal(str(docs[0], "kind"), "BGPConfiguration");
	assert_string_equal(str(docs[1], "kind"), "IPPool");
	assert_string_equal(str(jv_get(docs[4], "metadata"), "name"), "node3");
	assert_string_equal(str(docs[6], "kind"), "Namespace");

	const char *pods[] = { "x/a - pod=a http:TCP:80 -; y/a - pod=a http:TCP:80 -",
			       "x/b - pod=b http:TCP:80 -; y/b - pod=b http:TCP:80 -",
			       "x/c - pod=c http:TCP:80 -; y/c - pod=c http:TCP:80 -" };
	const struct jv *links = jv_get(jv_get(doc, "topology"), "links");
	assert_non_null(links);
	assert_int_equal(links->arr.n, 3);
	for (size_t i = 0; i < 3; i++) {
		char name[16], want[32];
		snprintf(name, sizeof(name), "node%zu", i + 1);
		const struct jv *env = jv_get(jv_get(nodes, name), "env");
		assert_string_equal(str(env, "BRINDLE_ROLE"), "node");
		assert_string_equal(str(env, "NODENAME"), name);
		snprintf(want, sizeof(want), "192.168.100.%zu/24", i + 1);
		assert_string_equal(str(env, "BRINDLE_ADDRESS"), want);
		assert_string_equal(str(env, "BRINDLE_GATEWAY"), "192.168.100.254");
		assert_string_equal(str(env, "BRINDLE_ETCD_ENDPOINTS"), "http://172.31.254.2:2379");
		assert_string_equal(str(env, "BRINDLE_PODS"), pods[i]);
		assert_string_equal(str(env, "BRINDLE_SERVE"), "-");
		/* a quoted "true", as containerlab's env wants strings */
		assert_string_equal(str(env, "FELIX_PROMETHEUSMETRICSENABLED"), "true");

		const struct jv *ends = jv_get(links->arr.items[i], "endpoints");
		assert_int_equal(ends->arr.n, 2);
		snprintf(want, sizeof(want), "%s:eth1", name);
		assert_string_equal(jv_as_string(ends->arr.items[0]), want);
		snprintf(want, sizeof(want), "fabric:n%zu", i);
		assert_string_equal(jv_as_string(ends->arr.items[1]), want);
	}
	sb_free(&err);
	sb_free(&text);
	arena_free(a);
}

static const char *const two_subnets =
	"name: two\n"
	"subnets: [{name: a, cidr: 192.168.100.0/24}, {name: b, cidr: 192.168.200.0/24}]\n"
	"ipPools: [{cidr: 10.244.0.0/16}]\n"
	"nodes:\n"
	"  - {name: node1, subnet: a, serve: [{protocol: TCP, port: 8080}]}\n"
	"  - {name: node2, subnet: a, ip: 192.168.100.12}\n"
	"  - {name: node3, subnet: b}\n"
	"  - {name: rr1, subnet: a, routeReflectorClusterID: 224.0.0.1, pods: false}\n"
	"namespaces: [{name: x, labels: {ns: x}}]\n"
	"pods:\n"
	"  - {namespace: x, name: a, node: node1, labels: {pod: a, tier: web}, ip: 10.244.1.10,\n"
	"     ports: [{name: serve-80-tcp, containerPort: 80, protocol: TCP}],\n"
	"     serve: [{protocol: UDP, port: 81}]}\n"
	"  - {namespace: x, name: h, node: node3, hostNetwork: true,\n"
	"     serve: [{protocol: TCP, port: 9000}]}\n";

static void test_two_subnets(void **state)
{
	struct arena *a = arena_new();
	struct lab_clab_options o = { .image = "registry.example/brindle:1",
				      .mgmt_subnet = "10.99.0.0/26" };
	struct jv *doc = export(a, parse(a, two_subnets), &o);
	const struct jv *nodes = jv_get(jv_get(doc, "topology"), "nodes");
	assert_int_equal(nodes->obj.n, 6);
	assert_string_equal(str(jv_get(nodes, "rr1"), "image"), "registry.example/brindle:1");
	assert_string_equal(str(jv_get(nodes, "etcd"), "mgmt-ipv4"), "10.99.0.2");
	assert_string_equal(str(jv_get(nodes, "rr1"), "mgmt-ipv4"), "10.99.0.13");
	assert_string_equal(str(jv_get(jv_get(nodes, "fabric"), "env"), "BRINDLE_BRIDGES"),
			    "br0 192.168.100.254/24 n0 n1 n3; br1 192.168.200.254/24 n2");
	const struct jv *n1 = jv_get(jv_get(nodes, "node1"), "env");
	assert_string_equal(str(n1, "BRINDLE_SERVE"), "TCP:8080");
	assert_string_equal(str(n1, "BRINDLE_PODS"),
			    "x/a 10.244.1.10 pod=a,tier=web serve-80-tcp:TCP:80 UDP:81");
	assert_string_equal(str(jv_get(jv_get(nodes, "node3"), "env"), "BRINDLE_PODS"),
			    "x/h host - - TCP:9000");
	assert_string_equal(str(jv_get(jv_get(nodes, "rr1"), "env"), "BRINDLE_PODS"), "");
	const char *res = str(jv_get(jv_get(nodes, "etcd"), "env"), "BRINDLE_RESOURCES");
	assert_non_null(strstr(res, "routeReflectorClusterID: 224.0.0.1"));
	assert_int_equal(jv_get(jv_get(doc, "topology"), "links")->arr.n, 4);
	arena_free(a);
}

static void expect_refused(const char *yaml, const char *mgmt, const char *want)
{
	struct arena *a = arena_new();
	struct strbuf out = STRBUF_INIT, err = STRBUF_INIT;
	sb_init(&out);
	sb_init(&err);
	struct lab_clab_options o = { .mgmt_subnet = mgmt };
	assert_int_equal(lab_clab_export(a, parse(a, yaml), &o, &out, &err), -EINVAL);
	if (!strstr(sb_str(&err), want))
		fail_msg("error \"%s\" lacks \"%s\"", sb_str(&err), want);
	assert_int_equal(out.len, 0);
	sb_free(&out);
	sb_free(&err);
	arena_free(a);
}

static void test_refused(void **state)
{
	static const char *const base = "name: r\nsubnets: [{name: a, cidr: 192.168.1.0/24}]\n"
					"ipPools: [{cidr: 10.244.0.0/16}]\n";
	char buf[512];
	snprintf(buf, sizeof(buf), "%snodes: [{name: n1, subnet: a}]\n", base);
	expect_refused(buf, "172.31.254.1/24", "is not an IPv4 network");
	expect_refused(buf, "fd00::/64", "is not an IPv4 network");
	snprintf(buf, sizeof(buf), "%snodes: [{name: n1, subnet: a}, {name: n2, subnet: a}]\n",
		 base);
	expect_refused(buf, "172.31.254.0/29", "has no room for 2 nodes");
	snprintf(buf, sizeof(buf), "%snodes: [{name: etcd, subnet: a}]\n", base);
	expect_refused(buf, NULL, "\"etcd\" is the name of a node the export adds");
	snprintf(buf, sizeof(buf),
		 "%snodes: [{name: n1, subnet: a}]\nexternalHosts: [{name: e, ip: 203.0.113.1}]\n",
		 base);
	expect_refused(buf, NULL, "externalHosts are not exported yet");
	snprintf(buf, sizeof(buf), "%snodes: [{name: n1, subnet: a}]\ndatastore: kubernetes\n",
		 base);
	expect_refused(buf, NULL, "datastore: kubernetes is not exported yet");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_three_node),
		cmocka_unit_test(test_two_subnets),
		cmocka_unit_test(test_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
