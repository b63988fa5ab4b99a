/*
 * Topology files of brindlectl lab: the issue's example parses with its
 * defaults (addresses chosen, gateways), and each kind of bad input is
 * refused with the file and the field named.
 */
#include "harness.h"

#include "topology.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

static const char *const issue_example =
	"name: demo\n"
	"asNumber: 64512\n"
	"nodeToNodeMesh: true\n"
	"encapsulation: None\n"
	"subnets: [{name: a, cidr: 192.168.100.0/24}, {name: b, cidr: 192.168.200.0/24}]\n"
	"ipPools: [{cidr: 10.244.0.0/16, blockSize: 26, natOutgoing: false}]\n"
	"nodes:\n"
	"  - {name: node1, subnet: a}\n"
	"  - {name: node2, subnet: a, ip: 192.168.100.12}\n"
	"  - {name: node3, subnet: b}\n"
	"  - {name: rr1, subnet: a, routeReflectorClusterID: 224.0.0.1, pods: false}\n"
	"externalHosts: [{name: ext1, ip: 203.0.113.10}]\n"
	"bgpPeers: [{name: tor1, kind: frr, asNumber: 65001, subnet: a}]\n"
	"namespaces: [{name: x, labels: {ns: x}}]\n"
	"pods:\n"
	"  - {namespace: x, name: a, node: node1, labels: {pod: a}, ip: 10.244.1.10,\n"
	"     ports: [{name: serve-80-tcp, containerPort: 80, protocol: TCP}],\n"
	"     serve: [{protocol: UDP, port: 81}], hostNetwork: false}\n";

static const char *ipstr(const struct br_ip *ip)
{
	static char buf[4][IP_STRLEN];
	static int k;
	return ip_str(ip, buf[k++ % 4]);
}

/* @text parsed as demo.yaml into @a, which must succeed (else its errors are printed). */
static struct lab_topology *parse_ok(struct arena *a, const char *text)
{
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	struct lab_topology *t = NULL;
	int r = lab_topology_parse(a, "demo.yaml", text, strlen(text), &t, &err);
	if (r < 0)
		fprintf(stderr, "%s", sb_str(&err));
	sb_free(&err);
	assert_int_equal(r, 0);
	return t;
}

static void test_issue_example(void **state)
{
	struct arena *a = arena_new();
	struct lab_topology *t = parse_ok(a, issue_example);
	assert_string_equal(t->name, "demo");
	assert_int_equal(t->as_number, 64512);
	assert_true(t->node_mesh);
	assert_int_equal(t->encap, LAB_ENCAP_NONE);
	assert_false(t->kubernetes); /* etcdv3 unless the file says otherwise */
	assert_null(t->rule_backend); /* felix's own choice unless the file says */
	assert_int_equal(t->n_subnets, 2);
	assert_string_equal(ipstr(&t->subnets[0].gateway), "192.168.100.254");
	assert_string_equal(ipstr(&t->subnets[1].gateway), "192.168.200.254");
	assert_int_equal(t->n_pools, 1);
	assert_int_equal(t->pools[0].block_size, 26);
	assert_int_equal(t->n_nodes, 4);
	/* node2's explicit address is never handed out to the others */
	assert_string_equal(ipstr(&t->nodes[0].ip), "192.168.100.1");
	assert_string_equal(ipstr(&t->nodes[1].ip), "192.168.100.12");
	assert_string_equal(ipstr(&t->nodes[2].ip), "192.168.200.1");
	assert_string_equal(ipstr(&t->nodes[3].ip), "192.168.100.2");
	assert_string_equal(t->nodes[3].rr_cluster_id, "224.0.0.1");
	assert_false(t->nodes[3].pods);
	assert_true(t->nodes[0].pods);
	assert_int_equal(t->n_externals, 1);
	assert_int_equal(t->n_peers, 1);
	assert_string_equal(ipstr(&t->peers[0].ip), "192.168.100.3");
	assert_int_equal(t->n_pods, 1);
	const struct lab_pod *p = &t->pods[0];
	assert_int_equal(p->node, 0);
	assert_true(p->has_ip);
	assert_string_equal(ipstr(&p->ip), "10.244.1.10");
	assert_int_equal(p->n_ports, 1);
	assert_string_equal(p->ports[0].name, "serve-80-tcp");
	assert_int_equal(p->ports[0].port, 80);
	assert_int_equal(p->n_serve, 1);
	assert_int_equal(p->serve[0].proto, LAB_UDP);
	assert_int_equal(p->serve[0].port, 81);
	assert_string_equal(labels_get(&p->labels, "pod"), "a");
	assert_string_equal(labels_get(&t->namespaces[0].labels, "ns"), "x");
	assert_string_equal(lab_ns_pod(a, t->name, "x", "a"), "lab-demo-x-a");
	assert_string_equal(lab_ns_node(a, t->name, "node1"), "lab-demo-node1");
	arena_free(a);
}

static void test_example_file(void **state)
{
	struct strbuf text = STRBUF_INIT, err = STRBUF_INIT;
	sb_init(&err);
	test_read_source_file("examples/three-node.yaml", &text);
	struct arena *a = arena_new();
	struct lab_topology *t;
	int r = lab_topology_parse(a, "three-node.yaml", text.buf, text.len, &t, &err);
	if (r < 0)
		fprintf(stderr, "%s", sb_str(&err));
	assert_int_equal(r, 0);
	assert_int_equal(t->n_nodes, 3);
	assert_int_equal(t->n_pods, 6);
	arena_free(a);
	sb_free(&text);
	sb_free(&err);
}

/* @yaml must fail, and the error text must contain @want. */
static void expect_error(const char *yaml, const char *want)
{
	struct arena *a = arena_new();
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	struct lab_topology *t = NULL;
	int r = lab_topology_parse(a, "demo.yaml", yaml, strlen(yaml), &t, &err);
	if (r != -EINVAL || !strstr(sb_str(&err), want)) {
		fprintf(stderr, "input:\n%s\nwanted: %s\ngot (%d): %s\n", yaml, want, r,
			sb_str(&err));
		fail();
	}
	assert_null(t);
	sb_free(&err);
	arena_free(a);
}

#define BASE                                             \
	"name: demo\n"                                   \
	"subnets: [{name: a, cidr: 192.168.100.0/24}]\n" \
	"ipPools: [{cidr: 10.244.0.0/16}]\n"

/* datastore: kubernetes is read; etcdv3 is the default and may be said. */
static void test_datastore(void **state)
{
	(void)state;
	static const char *const files[] = { BASE "nodes: [{name: n1, subnet: a}]\n"
						  "datastore: kubernetes\n",
					     BASE "nodes: [{name: n1, subnet: a}]\n"
						  "datastore: etcdv3\n" };
	for (size_t i = 0; i < 2; i++) {
		struct arena *a = arena_new();
		struct strbuf err = STRBUF_INIT;
		sb_init(&err);
		struct lab_topology *t = NULL;
		assert_int_equal(
			lab_topology_parse(a, "demo.yaml", files[i], strlen(files[i]), &t, &err),
			0);
		assert_int_equal(t->kubernetes, i == 0);
		sb_free(&err);
		arena_free(a);
	}
}

static void test_errors(void **state)
{
	expect_error(BASE "nodes: [{name: n1, subnet: a}, {name: n2, subnet: a}, {name: n3, "
			  "subnet: c}]\n",
		     "demo.yaml: nodes[2].subnet: unknown subnet \"c\"");
	expect_error(BASE "nodes: [{name: n1, subnet: a, color: red}]\n",
		     "demo.yaml: nodes[0].color: unknown field");
	expect_error(BASE "nodes: [{name: n1, subnet: a}]\nextra: 1\n",
		     "demo.yaml: extra: unknown field");
	expect_error("subnets: [{name: a, cidr: 192.168.100.0/24}]\n"
		     "ipPools: [{cidr: 10.244.0.0/16}]\nnodes: [{name: n1, subnet: a}]\n",
		     "demo.yaml: name: required");
	expect_error("name: Demo_1\n", "demo.yaml: name: \"Demo_1\" must be");
	expect_error(BASE "nodes: [{name: n1, subnet: a, ip: 192.168.101.1}]\n",
		     "demo.yaml: nodes[0].ip: 192.168.101.1 is not in subnet a");
	expect_error(BASE "nodes: [{name: n1, subnet: a, ip: 192.168.100.254}]\n",
		     "demo.yaml: nodes[0].ip: address 192.168.100.254 is also subnets[0].gateway");
	expect_error(BASE "nodes: [{name: n1, subnet: a, ip: 192.168.100.5}, {name: n2, subnet: a, "
			  "ip: 192.168.100.5}]\n",
		     "demo.yaml: nodes[1].ip: address 192.168.100.5 is also nodes[0].ip");
	expect_error(BASE "nodes: [{name: n1, subnet: a}, {name: n1, subnet: a}]\n",
		     "demo.yaml: nodes[1].name: node \"n1\" is given twice");
	expect_error(BASE "nodes: []\n", "demo.yaml: nodes: at least one node is required");
	expect_error("name: demo\nsubnets: [{name: a, cidr: 192.168.100.1/24}]\n",
		     "demo.yaml: subnets[0].cidr: \"192.168.100.1/24\" has host bits set");
	expect_error("name: demo\nsubnets: [{name: a, cidr: 10.0.0.0/8}]\n"
		     "ipPools: [{cidr: 10.244.0.0/16}]\n",
		     "demo.yaml: ipPools[0].cidr: overlaps subnet a");
	expect_error("name: demo\nsubnets: [{name: a, cidr: 192.168.100.0/24}]\n"
		     "ipPools: [{cidr: 10.244.0.0/16, blockSize: 19}]\n",
		     "demo.yaml: ipPools[0].blockSize: 19 is out of range (20 to 32)");
	expect_error(BASE "nodes: [{name: n1, subnet: a}]\nencapsulation: GRE\n",
		     "demo.yaml: encapsulation: unknown encapsulation \"GRE\"");
	expect_error(BASE "nodes: [{name: n1, subnet: a}]\nruleBackend: ebpf\n",
		     "demo.yaml: ruleBackend: unknown rule backend \"ebpf\" (legacy, nft or auto)");
	expect_error(BASE "nodes: [{name: n1, subnet: a}]\ndatastore: consul\n",
		     "demo.yaml: datastore: unknown datastore \"consul\" (etcdv3 or kubernetes)");
	expect_error(BASE "nodes: [{name: n1, subnet: a}]\n"
			  "pods: [{namespace: x, name: p, node: n1}]\n",
		     "demo.yaml: pods[0].namespace: unknown namespace \"x\"");
	expect_error(BASE "nodes: [{name: n1, subnet: a}]\nnamespaces: [{name: x}]\n"
			  "pods: [{namespace: x, name: p, node: n2}]\n",
		     "demo.yaml: pods[0].node: unknown node \"n2\"");
	expect_error(BASE "nodes: [{name: n1, subnet: a, pods: false}]\nnamespaces: [{name: x}]\n"
			  "pods: [{namespace: x, name: p, node: n1}]\n",
		     "demo.yaml: pods[0].node: node n1 takes no pods");
	expect_error(BASE "nodes: [{name: n1, subnet: a}]\nnamespaces: [{name: x}]\n"
			  "pods: [{namespace: x, name: p, node: n1, ip: 10.1.0.1}]\n",
		     "demo.yaml: pods[0].ip: 10.1.0.1 is in no IP pool");
	expect_error(BASE "nodes: [{name: n1, subnet: a}]\nnamespaces: [{name: x}]\n"
			  "pods: [{namespace: x, name: p, node: n1, ip: 10.244.0.1},\n"
			  "       {namespace: x, name: q, node: n1, ip: 10.244.0.1}]\n",
		     "demo.yaml: pods[1].ip: address 10.244.0.1 is also pods[0].ip");
	expect_error(BASE "nodes: [{name: n1, subnet: a}]\nnamespaces: [{name: x}]\n"
			  "pods: [{namespace: x, name: p, node: n1,\n"
			  "        ports: [{name: http, containerPort: 80, protocol: ICMP}]}]\n",
		     "demo.yaml: pods[0].ports[0].protocol: unknown protocol \"ICMP\"");
	expect_error(BASE "nodes: [{name: n1, subnet: a}]\nnamespaces: [{name: x}]\n"
			  "pods: [{namespace: x, name: p, node: n1, serve: [{protocol: udp, "
			  "port: 70000}]}]\n",
		     "demo.yaml: pods[0].serve[0].port: 70000 is out of range (1 to 65535)");
	expect_error(BASE "nodes: [{name: x-a, subnet: a}]\nnamespaces: [{name: x}]\n"
			  "pods: [{namespace: x, name: a, node: x-a}]\n",
		     "demo.yaml: pods[0]: its network namespace lab-demo-x-a would be that of "
		     "nodes[0]");
	expect_error(BASE "nodes: [{name: n1, subnet: a}]\n"
			  "externalHosts: [{name: e, ip: 192.168.100.9}]\n",
		     "demo.yaml: externalHosts[0].ip: 192.168.100.9 is in subnet a");
	expect_error(BASE "nodes: [{name: n1, subnet: a}]\n"
			  "bgpPeers: [{name: t, kind: bird, asNumber: 65001, subnet: a}]\n",
		     "demo.yaml: bgpPeers[0].kind: unknown kind \"bird\"");
	expect_error(BASE "nodes: {name: n1}\n", "demo.yaml: nodes: must be a list");
	expect_error("name: [demo\n", "demo.yaml: ");
	expect_error("- 1\n", "demo.yaml: the document must be a mapping");
	expect_error("name: a\n---\nname: b\n", "exactly one document");
	/* every problem at once, not only the first */
	expect_error(BASE "nodes: [{name: n1, subnet: b}, {name: n2, subnet: c}]\n",
		     "nodes[0].subnet: unknown subnet \"b\"\ndemo.yaml: nodes[1].subnet: "
		     "unknown subnet \"c\"");
}

/* Dual stack: IPv6 prefixes beside the IPv4 ones, addresses derived, the resources. */
static void test_dual_stack(void **state)
{
	static const char text[] =
		"name: demo\n"
		"subnets: [{name: a, cidr: 192.168.100.0/24, cidr6: 'fd00:100::/64'}]\n"
		"ipPools: [{cidr: 10.244.0.0/16}, {cidr: 'fd00:10:244::/48'}]\n"
		"nodes: [{name: n1, subnet: a}, {name: n2, subnet: a, ip: 192.168.100.12},\n"
		"        {name: n3, subnet: a, ip6: 'fd00:100::99'}]\n";
	struct arena *a = arena_new();
	struct lab_topology *t = parse_ok(a, text);
	assert_true(t->ipv6);
	assert_string_equal(ipstr(&t->subnets[0].gateway6), "fd00:100::fe");
	/* the IPv4 address's host part: .1 -> ::1, .12 -> ::c; or as given */
	assert_string_equal(ipstr(&t->nodes[0].ip6), "fd00:100::1");
	assert_string_equal(ipstr(&t->nodes[1].ip6), "fd00:100::c");
	assert_string_equal(ipstr(&t->nodes[2].ip6), "fd00:100::99");
	assert_int_equal(t->pools[1].block_size, 122); /* Calico's IPv6 default */
	struct strbuf y = STRBUF_INIT;
	sb_init(&y);
	lab_resources_yaml(t, &y);
	assert_non_null(strstr(sb_str(&y), "ipv6Address: 'fd00:100::c/64'"));
	assert_non_null(strstr(sb_str(&y), "cidr: 'fd00:10:244::/48', blockSize: 122"));
	sb_free(&y);
	arena_free(a);
	/* what it needs, named */
	expect_error("name: demo\nsubnets: [{name: a, cidr: 192.168.100.0/24}]\n"
		     "ipPools: [{cidr: 'fd00:10::/48'}]\nnodes: [{name: n1, subnet: a}]\n",
		     "demo.yaml: subnets[0].cidr6: is required: ipPools has an IPv6 pool, and node "
		     "n1 runs pods (subnet a)");
	expect_error("name: demo\nsubnets: [{name: a, cidr: 192.168.100.0/24, cidr6: "
		     "'fd00:100::/48'}]\n",
		     "demo.yaml: subnets[0].cidr6: /48: a lab subnet's IPv6 prefix is /64 to /120");
	expect_error("name: demo\nsubnets: [{name: a, cidr: 192.168.100.0/24, cidr6: "
		     "10.0.0.0/8}]\n",
		     "demo.yaml: subnets[0].cidr6: \"10.0.0.0/8\" is not an IPv6 prefix (x::/n)");
	expect_error("name: demo\nsubnets: [{name: a, cidr: 192.168.100.0/24}]\n"
		     "ipPools: [{cidr: 10.244.0.0/16}]\nnodes: [{name: n1, subnet: a, ip6: "
		     "'fd00::1'}]\n",
		     "demo.yaml: nodes[0].ip6: subnet a has no cidr6");
	expect_error("name: demo\nsubnets: [{name: a, cidr: 192.168.100.0/24, cidr6: "
		     "'fd00:100::/64'}]\nipPools: [{cidr: 'fd00:10::/48', blockSize: 64}]\n",
		     "demo.yaml: ipPools[0].blockSize: 64 is out of range (116 to 128)");
}

/* IPv6 only: a subnet with cidr6 alone, nodes without IPv4, an IPv6 pool alone. */
static void test_ipv6_only(void **state)
{
	static const char text[] =
		"name: demo\n"
		"subnets: [{name: a, cidr6: 'fd00:200::/64'}]\n"
		"ipPools: [{cidr: 'fd00:20:244::/48'}]\n"
		"nodes: [{name: n1, subnet: a}, {name: n2, subnet: a, ip6: 'fd00:200::2'},\n"
		"        {name: n3, subnet: a}]\n"
		"namespaces: [{name: x}]\n"
		"pods: [{namespace: x, name: a, node: n1, ip: 'fd00:20:244::5'}]\n";
	struct arena *a = arena_new();
	struct lab_topology *t = parse_ok(a, text);
	assert_true(t->ipv6);
	assert_false(t->ipv4);
	assert_int_equal(t->subnets[0].cidr.len, 0);
	assert_string_equal(ipstr(&t->subnets[0].gateway6), "fd00:200::1");
	/* no IPv4; IPv6 from ::2 up, around the one given */
	assert_int_equal(t->nodes[0].ip.family, 0);
	assert_string_equal(ipstr(&t->nodes[0].ip6), "fd00:200::3");
	assert_string_equal(ipstr(&t->nodes[1].ip6), "fd00:200::2");
	assert_string_equal(ipstr(&t->nodes[2].ip6), "fd00:200::4");
	assert_string_equal(ipstr(&t->pods[0].ip), "fd00:20:244::5");
	struct strbuf y = STRBUF_INIT;
	sb_init(&y);
	lab_resources_yaml(t, &y);
	assert_non_null(strstr(sb_str(&y), "spec: {bgp: {ipv6Address: 'fd00:200::3/64'}}"));
	assert_null(strstr(sb_str(&y), "ipv4Address"));
	sb_free(&y);
	arena_free(a);
	/* what it cannot have, named */
	expect_error("name: demo\nsubnets: [{name: a, cidr6: 'fd00:200::/64'}]\n"
		     "ipPools: [{cidr: 10.244.0.0/16}]\nnodes: [{name: n1, subnet: a}]\n",
		     "demo.yaml: subnets[0].cidr: is required: ipPools has an IPv4 pool, and node "
		     "n1 runs pods (subnet a)");
	expect_error("name: demo\nsubnets: [{name: a, cidr6: 'fd00:200::/64'}]\n"
		     "ipPools: [{cidr: 'fd00:20::/48'}]\nnodes: [{name: n1, subnet: a, ip: "
		     "10.0.0.1}]\n",
		     "demo.yaml: nodes[0].ip: subnet a has no cidr (it is IPv6 only)");
	expect_error("name: demo\nsubnets: [{name: a, cidr6: 'fd00:200::/64', gateway: "
		     "10.0.0.1}]\n",
		     "demo.yaml: subnets[0].gateway: needs cidr");
	expect_error("name: demo\nsubnets: [{name: a, cidr6: 'fd00:200::/64'}]\n"
		     "ipPools: [{cidr: 'fd00:20::/48'}]\nnodes: [{name: n1, subnet: a}]\n"
		     "bgpPeers: [{name: tor, kind: frr, asNumber: 65000, subnet: a, ip: "
		     "10.0.0.9}]\n",
		     "demo.yaml: bgpPeers[0].ip: subnet a has no cidr (it is IPv6 only)");
	expect_error("name: demo\nsubnets: [{name: a, cidr6: 'fd00:200::/64'}]\n"
		     "ipPools: [{cidr: 'fd00:20::/48'}]\nnodes: [{name: n1, subnet: a}]\n"
		     "externalHosts: [{name: web, ip: 203.0.113.10}]\n",
		     "demo.yaml: externalHosts[0].ip: is IPv4, and ipPools has no IPv4 pool");
	expect_error("name: demo\nsubnets: [{name: a, cidr6: 'fd00:200::/64'}]\n"
		     "ipPools: [{cidr: 'fd00:20::/48'}]\nnodes: [{name: n1, subnet: a}]\n"
		     "externalHosts: [{name: web, ip6: 'fd00:200::99'}]\n",
		     "demo.yaml: externalHosts[0].ip6: fd00:200::99 is in subnet a: external hosts "
		     "are outside every subnet");
	expect_error(
		"name: demo\nsubnets: [{name: a, cidr: 192.168.100.0/24}]\n"
		"ipPools: [{cidr: 10.244.0.0/16}]\nnodes: [{name: n1, subnet: a}]\n"
		"externalHosts: [{name: web}]\n",
		"demo.yaml: externalHosts[0]: needs an address: ip (IPv4), ip6 (IPv6) or both");
	expect_error("name: demo\nsubnets: [{name: a, cidr: 192.168.100.0/24}]\n"
		     "ipPools: [{cidr: 10.244.0.0/16}]\nnodes: [{name: n1, subnet: a}]\n"
		     "externalHosts: [{name: web, ip6: 'fd00:99::1'}]\n",
		     "demo.yaml: externalHosts[0].ip6: is IPv6, and ipPools has no IPv6 pool");
	expect_error("name: demo\nsubnets: [{name: a}]\n", "demo.yaml: subnets[0].cidr: required");
	/* on Kubernetes the nodes reach the API server over one family: all IPv4 or none */
	expect_error(
		"name: demo\ndatastore: kubernetes\nsubnets: [{name: a, cidr6: "
		"'fd00:200::/64'}, {name: b, cidr: 192.168.100.0/24, cidr6: 'fd00:100::/64'}]\n"
		"ipPools: [{cidr: 'fd00:20::/48'}]\nnodes: [{name: n1, subnet: a}, {name: n2, "
		"subnet: b}]\n",
		"demo.yaml: nodes: on datastore kubernetes the nodes are all IPv4 (and reach "
		"the API server over IPv4) or all IPv6 only, not a mix: 1 of 2 have an IPv4 "
		"address");
	static const char kdd[] =
		"name: demo\ndatastore: kubernetes\n"
		"subnets: [{name: a, cidr6: 'fd00:200::/64'}]\n"
		"ipPools: [{cidr: 'fd00:20::/48'}]\nnodes: [{name: n1, subnet: a}]\n";
	a = arena_new();
	assert_true(lab_api_ipv6(parse_ok(a, kdd))); /* the API server on fd00:200::1 */
	arena_free(a);
}

/* BGP peers and external hosts with IPv6: a session per family, a host per address. */
static void test_ipv6_peers_and_hosts(void **state)
{
	static const char dual[] =
		"name: demo\n"
		"subnets: [{name: a, cidr: 192.168.100.0/24, cidr6: 'fd00:100::/64'}]\n"
		"ipPools: [{cidr: 10.244.0.0/16}, {cidr: 'fd00:10:244::/48'}]\n"
		"nodes: [{name: n1, subnet: a}]\n"
		"bgpPeers: [{name: tor, kind: frr, asNumber: 65001, subnet: a}]\n"
		"externalHosts: [{name: web, ip: 203.0.113.10, ip6: 'fd00:203::10'}]\n";
	static const char v6only[] =
		"name: demo\n"
		"subnets: [{name: a, cidr6: 'fd00:200::/64'}]\n"
		"ipPools: [{cidr: 'fd00:20:244::/48'}]\n"
		"nodes: [{name: n1, subnet: a}, {name: n2, subnet: a}]\n"
		"bgpPeers: [{name: tor, kind: frr, asNumber: 65001, subnet: a}]\n"
		"externalHosts: [{name: web, ip6: 'fd00:203::10'}]\n";
	const char *texts[] = { dual, v6only };
	for (int i = 0; i < 2; i++) {
		struct arena *a = arena_new();
		struct lab_topology *t = parse_ok(a, texts[i]);
		struct strbuf y = STRBUF_INIT;
		sb_init(&y);
		lab_resources_yaml(t, &y);
		if (i == 0) {
			/* n1 took .1, the peer .2; its IPv6 address from that host part: ::2 */
			assert_string_equal(ipstr(&t->peers[0].ip), "192.168.100.2");
			assert_string_equal(ipstr(&t->peers[0].ip6), "fd00:100::2");
			assert_string_equal(ipstr(&t->externals[0].ip6), "fd00:203::10");
			assert_non_null(strstr(sb_str(&y), "metadata: {name: tor}\nspec: {peerIP: "
							   "'192.168.100.2', asNumber: 65001}"));
			assert_non_null(strstr(sb_str(&y),
					       "metadata: {name: tor-v6}\nspec: {peerIP: "
					       "'fd00:100::2', asNumber: 65001}"));
		} else {
			/* picked after the nodes; its one BGPPeer is the IPv6 one */
			assert_int_equal(t->peers[0].ip.family, 0);
			assert_string_equal(ipstr(&t->peers[0].ip6), "fd00:200::4");
			assert_int_equal(t->externals[0].ip.family, 0);
			assert_non_null(strstr(sb_str(&y), "metadata: {name: tor}\nspec: {peerIP: "
							   "'fd00:200::4', asNumber: 65001}"));
			assert_null(strstr(sb_str(&y), "tor-v6"));
		}
		sb_free(&y);
		arena_free(a);
	}
}

static void test_protocols(void **state)
{
	enum lab_proto p;
	assert_true(lab_proto_parse("tcp", &p));
	assert_int_equal(p, LAB_TCP);
	assert_true(lab_proto_parse("Udp", &p));
	assert_int_equal(p, LAB_UDP);
	assert_true(lab_proto_parse("SCTP", &p));
	assert_int_equal(p, LAB_SCTP);
	assert_false(lab_proto_parse("icmp", &p));
	assert_true(lab_name_valid("demo-1"));
	assert_false(lab_name_valid("-demo"));
	assert_false(lab_name_valid("a-name-much-too-long-for-a-lab"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_issue_example), cmocka_unit_test(test_example_file),
		cmocka_unit_test(test_errors),	      cmocka_unit_test(test_datastore),
		cmocka_unit_test(test_protocols),     cmocka_unit_test(test_dual_stack),
		cmocka_unit_test(test_ipv6_only),     cmocka_unit_test(test_ipv6_peers_and_hosts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
