/* The resource model: decoding, defaults, validation messages, canonical encoding. */
#include "harness.h"

#include <brindle/core/json.h>
#include <brindle/core/model.h>
#include <brindle/core/yaml.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

/* Read @text as a file named "test.yaml"; returns the objects or fails the test. */
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

static char *canonical(const struct br_object *o)
{
	struct strbuf sb = STRBUF_INIT;
	sb_init(&sb);
	model_to_json(o, &sb);
	return sb_detach(&sb);
}

static char *first_error(const char *text)
{
	struct br_object **objs;
	size_t n;
	struct model_errors errs = { 0 };
	int r = model_read("test.yaml", text, strlen(text), NULL, &objs, &n, &errs);
	if (r == 0) {
		model_free_all(objs, n);
		return NULL;
	}
	assert_null(objs);
	assert_int_equal(n, 0);
	char *e = xstrdup(errs.n ? errs.v[0] : "(no message)");
	model_errors_clear(&errs);
	return e;
}

/* The Kubernetes documentation's example. */
static const char *const test_network_policy =
	"apiVersion: networking.k8s.io/v1\n"
	"kind: NetworkPolicy\n"
	"metadata:\n"
	"  name: test-network-policy\n"
	"  namespace: default\n"
	"spec:\n"
	"  podSelector:\n"
	"    matchLabels:\n"
	"      role: db\n"
	"  policyTypes:\n"
	"  - Ingress\n"
	"  - Egress\n"
	"  ingress:\n"
	"  - from:\n"
	"    - ipBlock:\n"
	"        cidr: 172.17.0.0/16\n"
	"        except:\n"
	"        - 172.17.1.0/24\n"
	"    - namespaceSelector:\n"
	"        matchLabels:\n"
	"          project: myproject\n"
	"    - podSelector:\n"
	"        matchLabels:\n"
	"          role: frontend\n"
	"    ports:\n"
	"    - protocol: TCP\n"
	"      port: 6379\n"
	"  egress:\n"
	"  - to:\n"
	"    - ipBlock:\n"
	"        cidr: 10.0.0.0/24\n"
	"    ports:\n"
	"    - protocol: TCP\n"
	"      port: 5978\n";

static void test_k8s_docs_example(void **state)
{
	size_t n;
	struct br_object **objs = read_ok(test_network_policy, &n);
	assert_int_equal(n, 1);
	assert_ptr_equal(objs[0]->kind, model_kind(KIND_K8S_NETWORKPOLICY));
	const struct br_k8s_networkpolicy *np = (const void *)objs[0];
	assert_string_equal(labels_get(&np->spec.pod_selector.match_labels, "role"), "db");
	assert_int_equal(np->spec.n_ingress, 1);
	assert_int_equal(np->spec.ingress[0].n_peers, 3);
	assert_string_equal(np->spec.ingress[0].peers[0].ip_block->except[0], "172.17.1.0/24");
	assert_int_equal(np->spec.ingress[0].ports[0].port.i, 6379);
	char *j = canonical(objs[0]);
	assert_string_equal(
		j, "{\"apiVersion\":\"networking.k8s.io/v1\",\"kind\":\"NetworkPolicy\","
		   "\"metadata\":{\"name\":\"test-network-policy\",\"namespace\":\"default\"},"
		   "\"spec\":{\"podSelector\":{\"matchLabels\":{\"role\":\"db\"}},"
		   "\"ingress\":[{\"ports\":[{\"protocol\":\"TCP\",\"port\":6379}],"
		   "\"from\":[{\"ipBlock\":{\"cidr\":\"172.17.0.0/16\",\"except\":[\"172.17.1.0/"
		   "24\"]}},{\"namespaceSelector\":{\"matchLabels\":{\"project\":\"myproject\"}}},"
		   "{\"podSelector\":{\"matchLabels\":{\"role\":\"frontend\"}}}]}],"
		   "\"egress\":[{\"ports\":[{\"protocol\":\"TCP\",\"port\":5978}],"
		   "\"to\":[{\"ipBlock\":{\"cidr\":\"10.0.0.0/24\"}}]}],"
		   "\"policyTypes\":[\"Ingress\",\"Egress\"]}}");
	free(j);
	model_free_all(objs, n);
}

static void test_k8s_defaults(void **state)
{
	/* No policyTypes, no protocol: both come back filled in. */
	size_t n;
	struct br_object **objs = read_ok("apiVersion: networking.k8s.io/v1\n"
					  "kind: NetworkPolicy\n"
					  "metadata: {name: p}\n"
					  "spec:\n"
					  "  podSelector: {}\n"
					  "  ingress:\n"
					  "  - ports: [{port: 80}]\n"
					  "---\n"
					  "apiVersion: networking.k8s.io/v1\n"
					  "kind: NetworkPolicy\n"
					  "metadata: {name: q, namespace: prod}\n"
					  "spec:\n"
					  "  egress: [{to: [{ipBlock: {cidr: 10.0.0.0/24}}]}]\n",
					  &n);
	assert_int_equal(n, 2);
	char *j = canonical(objs[0]);
	assert_string_equal(j, "{\"apiVersion\":\"networking.k8s.io/v1\",\"kind\":\"NetworkPolicy\","
			       "\"metadata\":{\"name\":\"p\",\"namespace\":\"default\"},"
			       "\"spec\":{\"podSelector\":{},\"ingress\":[{\"ports\":[{\"protocol\":"
			       "\"TCP\",\"port\":80}]}],\"policyTypes\":[\"Ingress\"]}}");
	free(j);
	const struct br_k8s_networkpolicy *q = (const void *)objs[1];
	assert_int_equal(q->spec.n_policy_types, 2);
	assert_string_equal(q->spec.policy_types[1], "Egress");
	assert_string_equal(q->o.meta.namespace, "prod");
	model_free_all(objs, n);
}

static void test_calico_policy_roundtrip(void **state)
{
	const char *text = "apiVersion: projectcalico.org/v3\n"
			   "kind: GlobalNetworkPolicy\n"
			   "metadata: {name: deny-web, labels: {team: net}}\n"
			   "spec:\n"
			   "  order: 100.5\n"
			   "  selector: role == 'web'\n"
			   "  ingress:\n"
			   "  - action: Deny\n"
			   "    protocol: tcp\n"
			   "    source: {nets: [10.0.0.0/8], notNets: [10.1.0.0/16]}\n"
			   "    destination: {ports: [80, '443', '8000:8080', http-alt]}\n"
			   "  - action: Allow\n"
			   "    protocol: ICMP\n"
			   "    icmp: {type: 8, code: 0}\n"
			   "  - action: Pass\n"
			   "    protocol: 17\n"
			   "  egress:\n"
			   "  - action: Log\n"
			   "  doNotTrack: false\n";
	size_t n;
	struct br_object **objs = read_ok(text, &n);
	const struct br_networkpolicy *p = (const void *)objs[0];
	assert_true(p->spec.order.set);
	assert_true(p->spec.order.v == 100.5);
	assert_string_equal(p->spec.ingress[0].protocol.name, "TCP");
	assert_int_equal(p->spec.ingress[0].protocol.number, 6);
	assert_int_equal(p->spec.ingress[0].destination.ports.n, 4);
	assert_int_equal(p->spec.ingress[0].destination.ports.v[2].min, 8000);
	assert_int_equal(p->spec.ingress[0].destination.ports.v[2].max, 8080);
	assert_string_equal(p->spec.ingress[0].destination.ports.v[3].name, "http-alt");
	assert_null(p->spec.ingress[2].protocol.name);
	assert_int_equal(p->spec.ingress[2].protocol.number, 17);
	char *j = canonical(objs[0]);
	assert_string_equal(
		j, "{\"apiVersion\":\"projectcalico.org/v3\",\"kind\":\"GlobalNetworkPolicy\","
		   "\"metadata\":{\"name\":\"deny-web\",\"labels\":{\"team\":\"net\"}},"
		   "\"spec\":{\"tier\":\"default\",\"order\":100.5,\"selector\":\"role == 'web'\","
		   "\"types\":[\"Ingress\",\"Egress\"],\"ingress\":[{\"action\":\"Deny\","
		   "\"protocol\":\"TCP\",\"source\":{\"nets\":[\"10.0.0.0/8\"],\"notNets\":"
		   "[\"10.1.0.0/16\"]},\"destination\":{\"ports\":[80,443,\"8000:8080\","
		   "\"http-alt\"]}},{\"action\":\"Allow\",\"protocol\":\"ICMP\",\"icmp\":{\"type\":"
		   "8,\"code\":0}},{\"action\":\"Pass\",\"protocol\":17}],\"egress\":[{\"action\":"
		   "\"Log\"}]}}");
	/* Canonical JSON reads back to the same resource. */
	size_t n2;
	struct br_object **again = read_ok(j, &n2);
	assert_true(model_equal(objs[0], again[0]));
	free(j);
	model_free_all(again, n2);
	model_free_all(objs, n);
}

static void test_every_kind_roundtrips(void **state)
{
	static const char *const docs[] = {
		"apiVersion: projectcalico.org/v3\nkind: Node\nmetadata: {name: node1}\n"
		"spec: {bgp: {ipv4Address: 192.168.100.11/24, asNumber: 1.10,"
		" routeReflectorClusterID: 224.0.0.1}, ipv4VXLANTunnelAddr: 10.244.0.1,"
		" vxlanTunnelMACAddr: '66:aa:bb:cc:dd:ee', orchRefs: [{nodeName: node1,"
		" orchestrator: k8s}]}\n",
		"apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: p}\n"
		"spec: {cidr: 10.244.0.0/16, vxlanMode: CrossSubnet, natOutgoing: true}\n",
		"apiVersion: projectcalico.org/v3\nkind: BGPConfiguration\nmetadata: {name: default}\n"
		"spec: {asNumber: 64512, nodeToNodeMeshEnabled: false, serviceClusterIPs:"
		" [{cidr: 10.96.0.0/12}], listenPort: 1790, communities: [{name: c1, value:"
		" '65000:100'}], prefixAdvertisements: [{cidr: 10.244.0.0/16, communities: [c1,"
		" '1:2:3']}], nodeMeshMaxRestartTime: 2m}\n",
		"apiVersion: projectcalico.org/v3\nkind: BGPPeer\nmetadata: {name: tor}\n"
		"spec: {peerIP: '192.168.100.1:1179', asNumber: 65001, nodeSelector: rack ==\n"
		" 'a', password: {env: TOR_PASSWORD}, ttlSecurity: 1, maxRestartTime: 90s}\n",
		"apiVersion: projectcalico.org/v3\nkind: FelixConfiguration\nmetadata: {name: default}\n"
		"spec: {logSeverityScreen: info, iptablesMarkMask: 0xffff0000, routeRefreshInterval:"
		" 30s, defaultEndpointToHostAction: ACCEPT, failsafeInboundHostPorts: []}\n",
		"apiVersion: projectcalico.org/v3\nkind: NetworkPolicy\nmetadata: {name: a, namespace:"
		" x}\nspec: {selector: all(), egress: [{action: Allow, destination: {selector:"
		" app == 'db', namespaceSelector: has(team)}}]}\n",
		"apiVersion: projectcalico.org/v3\nkind: NetworkSet\nmetadata: {name: s, namespace: x,"
		" labels: {role: ext}}\nspec: {nets: [203.0.113.0/24, 198.51.100.7]}\n",
		"apiVersion: projectcalico.org/v3\nkind: GlobalNetworkSet\nmetadata: {name: g}\n"
		"spec: {nets: ['2001:db8::/32']}\n",
		"apiVersion: projectcalico.org/v3\nkind: HostEndpoint\nmetadata: {name: h}\n"
		"spec: {node: node1, interfaceName: eth0, expectedIPs: [192.168.100.11], ports:"
		" [{name: ssh, port: 22, protocol: tcp}]}\n",
		"apiVersion: projectcalico.org/v3\nkind: Profile\nmetadata: {name: kns.x}\n"
		"spec: {ingress: [{action: Allow}], egress: [{action: Allow}], labelsToApply:"
		" {pcns.team: a}}\n",
		"apiVersion: projectcalico.org/v3\nkind: WorkloadEndpoint\nmetadata: {name:"
		" node1-k8s-a-eth0, namespace: x, labels: {app: a}}\nspec: {orchestrator: k8s, node:"
		" node1, pod: a, endpoint: eth0, containerID: abc, interfaceName: cali0123456789a,"
		" mac: 'ee:ee:ee:ee:ee:ee', ipNetworks: [10.244.1.10/32], profiles: [kns.x], ports:"
		" [{name: http, port: 80}]}\n",
		"apiVersion: projectcalico.org/v3\nkind: IPAMConfiguration\nmetadata: {name: default}\n"
		"spec: {strictAffinity: true, maxBlocksPerHost: 4}\n",
		"apiVersion: v1\nkind: Namespace\nmetadata: {name: x, labels: {team: a}}\n",
	};
	for (size_t i = 0; i < ARRAY_SIZE(docs); i++) {
		size_t n, n2;
		struct br_object **objs = read_ok(docs[i], &n);
		char *j = canonical(objs[0]);
		struct br_object **again = read_ok(j, &n2);
		char *j2 = canonical(again[0]);
		assert_string_equal(j, j2);
		assert_true(model_equal(objs[0], again[0]));
		free(j);
		free(j2);
		model_free_all(objs, n);
		model_free_all(again, n2);
	}
}

static void test_defaults(void **state)
{
	size_t n;
	struct br_object **objs =
		read_ok("apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: p}\n"
			"spec: {cidr: 10.244.7.9/16}\n---\n"
			"apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: q}\n"
			"spec: {cidr: 'fd00::/48'}\n---\n"
			"apiVersion: v1\nkind: Namespace\nmetadata: {name: prod}\n---\n"
			"apiVersion: projectcalico.org/v3\nkind: NetworkPolicy\nmetadata: {name: e}\n"
			"spec: {egress: [{action: Allow}]}\n---\n"
			"apiVersion: projectcalico.org/v3\nkind: FelixConfiguration\n"
			"metadata: {name: default}\nspec: {defaultEndpointToHostAction: ACCEPT}\n",
			&n);
	assert_int_equal(n, 5);
	const struct br_ippool *p = (const void *)objs[0];
	assert_string_equal(p->spec.cidr, "10.244.0.0/16");
	assert_int_equal(p->spec.block_size.v, 26);
	assert_string_equal(p->spec.ipip_mode, "Never");
	assert_string_equal(p->spec.vxlan_mode, "Never");
	assert_string_equal(p->spec.node_selector, "all()");
	assert_int_equal(p->spec.n_allowed_uses, 2);
	const struct br_ippool *q = (const void *)objs[1];
	assert_int_equal(q->spec.block_size.v, 122);
	assert_string_equal(labels_get(&objs[2]->meta.labels, "kubernetes.io/metadata.name"),
			    "prod");
	const struct br_networkpolicy *e = (const void *)objs[3];
	assert_int_equal(e->spec.n_types, 1);
	assert_string_equal(e->spec.types[0], "Egress");
	assert_string_equal(e->o.meta.namespace, "default");
	const struct br_felixconfig *f = (const void *)objs[4];
	assert_string_equal(f->spec.default_endpoint_to_host_action, "Accept");
	model_free_all(objs, n);
}

static void test_list_and_json(void **state)
{
	size_t n;
	struct br_object **objs = read_ok(
		"{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":["
		"{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"a\"}},"
		"{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"b\"}}]}\n"
		"{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"c\"}}",
		&n);
	assert_int_equal(n, 3);
	assert_string_equal(objs[2]->meta.name, "c");
	model_free_all(objs, n);

	char *e = first_error("apiVersion: v1\nkind: List\nitems:\n"
			      "- {apiVersion: v1, kind: Namespace, metadata: {name: ok}}\n"
			      "- {apiVersion: v1, kind: Namespace, metadata: {name: Bad_Name}}\n");
	assert_string_equal(e, "test.yaml: document 1: items[1].metadata.name: \"Bad_Name\" must "
			       "consist of lower case letters, digits and '-', and start and end with "
			       "a letter or digit");
	free(e);
}

/* What calicoctl reads besides "kind: List": a YAML list of resources, and the
 * typed list `calicoctl get -o yaml` writes ("kind: IPPoolList"), whose items
 * may leave out apiVersion and kind as the Kubernetes API's typed lists do. */
static void test_list_forms(void **state)
{
	size_t n;
	struct br_object **objs =
		read_ok("- apiVersion: projectcalico.org/v3\n"
			"  kind: IPPool\n"
			"  metadata: {name: a}\n"
			"  spec: {cidr: 10.1.0.0/16}\n"
			"- {apiVersion: v1, kind: Namespace, metadata: {name: b}}\n"
			"---\n"
			"apiVersion: projectcalico.org/v3\n"
			"kind: IPPoolList\n"
			"metadata: {resourceVersion: \"12\"}\n"
			"items:\n"
			"- metadata: {name: c}\n"
			"  spec: {cidr: 10.2.0.0/16}\n"
			"- {apiVersion: projectcalico.org/v3, kind: IPPool, metadata: {name: d},"
			" spec: {cidr: 10.3.0.0/16}}\n",
			&n);
	assert_int_equal(n, 4);
	assert_ptr_equal(objs[0]->kind, model_kind(KIND_IPPOOL));
	assert_ptr_equal(objs[1]->kind, model_kind(KIND_NAMESPACE));
	assert_ptr_equal(objs[2]->kind, model_kind(KIND_IPPOOL));
	assert_string_equal(objs[2]->meta.name, "c");
	assert_string_equal(((struct br_ippool *)objs[3])->spec.cidr, "10.3.0.0/16");
	model_free_all(objs, n);

	char *e =
		first_error("- {apiVersion: v1, kind: Namespace, metadata: {name: ok}}\n"
			    "- {apiVersion: v1, kind: Namespace, metadata: {name: x}, spec: 1}\n");
	assert_string_equal(e, "test.yaml: document 1: [1].spec: must be an object, not a number");
	free(e);
	e = first_error("apiVersion: projectcalico.org/v3\nkind: IPPoolList\nitems:\n"
			"- {apiVersion: v1, kind: Namespace, metadata: {name: x}}\n");
	assert_string_equal(e, "test.yaml: document 1: items[0].kind: a IPPoolList holds IPPool, "
			       "not Namespace");
	free(e);
	e = first_error("apiVersion: projectcalico.org/v3\nkind: IPPoolList\nitems: 3\n");
	assert_string_equal(e, "test.yaml: document 1: items: must be a list");
	free(e);
	e = first_error("apiVersion: projectcalico.org/v3\nkind: FooList\nitems: []\n");
	assert_string_equal(e, "test.yaml: document 1: kind: unknown kind \"FooList\" "
			       "(apiVersion projectcalico.org/v3)");
	free(e);
}

/* The policy names Calico accepts (its validator's networkPolicyNameRegex and
 * globalNetworkPolicyNameRegex): no tier prefix needed, one allowed. */
static void test_policy_names(void **state)
{
	size_t n;
	struct br_object **objs = read_ok(
		"- {apiVersion: projectcalico.org/v3, kind: NetworkPolicy,"
		" metadata: {name: allow-dns, namespace: x}, spec: {tier: security}}\n"
		"- {apiVersion: projectcalico.org/v3, kind: NetworkPolicy,"
		" metadata: {name: security.allow-dns, namespace: x}, spec: {tier: security}}\n"
		"- {apiVersion: projectcalico.org/v3, kind: NetworkPolicy,"
		" metadata: {name: knp.default.a.b.c, namespace: x}}\n"
		"- {apiVersion: projectcalico.org/v3, kind: StagedNetworkPolicy,"
		" metadata: {name: ossg.default.sg-1, namespace: x}}\n"
		"- {apiVersion: projectcalico.org/v3, kind: GlobalNetworkPolicy,"
		" metadata: {name: 0-a}}\n"
		"- {apiVersion: projectcalico.org/v3, kind: StagedGlobalNetworkPolicy,"
		" metadata: {name: default.x}}\n"
		"- {apiVersion: networking.k8s.io/v1, kind: NetworkPolicy,"
		" metadata: {name: a.b.c, namespace: x}, spec: {podSelector: {}}}\n",
		&n);
	assert_int_equal(n, 7);
	model_free_all(objs, n);
	(void)state;
}

static void test_kind_names(void **state)
{
	assert_ptr_equal(model_kind_by_name("networkpolicy"), model_kind(KIND_NETWORKPOLICY));
	assert_ptr_equal(model_kind_by_name("NetworkPolicies"), model_kind(KIND_NETWORKPOLICY));
	assert_ptr_equal(model_kind_by_name("networkpolicy.projectcalico.org"),
			 model_kind(KIND_NETWORKPOLICY));
	assert_ptr_equal(model_kind_by_name("networkpolicy.networking.k8s.io"),
			 model_kind(KIND_K8S_NETWORKPOLICY));
	assert_ptr_equal(model_kind_by_name("networkpolicies.networking.k8s.io"),
			 model_kind(KIND_K8S_NETWORKPOLICY));
	assert_ptr_equal(model_kind_by_name("netpol"), model_kind(KIND_K8S_NETWORKPOLICY));
	assert_ptr_equal(model_kind_by_name("gnp"), model_kind(KIND_GLOBALNETWORKPOLICY));
	assert_ptr_equal(model_kind_by_name("ns"), model_kind(KIND_NAMESPACE));
	assert_ptr_equal(model_kind_by_name("ippools"), model_kind(KIND_IPPOOL));
	assert_ptr_equal(model_kind_by_name("bgpconfig"), model_kind(KIND_BGPCONFIGURATION));
	assert_ptr_equal(model_kind_by_name("wep"), model_kind(KIND_WORKLOADENDPOINT));
	assert_null(model_kind_by_name("deployment"));
	assert_null(model_kind_by_name("networkpolicy.example.com"));
}

struct bad {
	const char *text;
	const char *error;
};

#define NP_HEAD "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: p}\n"
#define CP_HEAD "apiVersion: projectcalico.org/v3\nkind: NetworkPolicy\nmetadata: {name: p}\n"
#define GNP_HEAD "apiVersion: projectcalico.org/v3\nkind: GlobalNetworkPolicy\nmetadata: {name: p}\n"
#define POOL_HEAD "apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: p}\n"
#define PEER_HEAD "apiVersion: projectcalico.org/v3\nkind: BGPPeer\nmetadata: {name: p}\n"
#define NODE_HEAD "apiVersion: projectcalico.org/v3\nkind: Node\nmetadata: {name: n}\n"
#define BGPC_HEAD "apiVersion: projectcalico.org/v3\nkind: BGPConfiguration\n"
#define FELIX_HEAD "apiVersion: projectcalico.org/v3\nkind: FelixConfiguration\n"
#define WEP_HEAD "apiVersion: projectcalico.org/v3\nkind: WorkloadEndpoint\nmetadata: {name: w}\n"
#define D1 "test.yaml: document 1: "

static const struct bad bad_inputs[] = {
	/* Control characters, anywhere the model stores a string (issue 16) */
	{ "apiVersion: v1\nkind: Namespace\nmetadata: {name: \"a\\x07b\"}\n",
	  D1 "metadata.name: must not hold control characters (byte 0x07 at offset 1)" },
	{ "{\"apiVersion\": \"v1\", \"kind\": \"Namespace\", \"metadata\": {\"name\": \"n\", "
	  "\"labels\": {\"a\": \"b\\u001bc\"}}}",
	  D1 "metadata.labels.a: must not hold control characters (byte 0x1b at offset 1)" },
	{ "apiVersion: v1\nkind: Namespace\nmetadata: {name: n, annotations: {\"k\\x01\": v}}\n", D1
	  "metadata.annotations.k\\x01: must not hold control characters (byte 0x01 at offset 1)" },
	{ POOL_HEAD "spec: {cidr: 10.0.0.0/16, nodeSelector: \"all()\\x7f\"}\n",
	  D1 "spec.nodeSelector: must not hold control characters (byte 0x7f at offset 5)" },
	/* Documents and kinds */
	{ "- a\n- b\n", D1 "[0]: must be an object with apiVersion and kind, not a string" },
	{ "kind: IPPool\nmetadata: {name: p}\n", D1 "apiVersion: required" },
	{ "apiVersion: projectcalico.org/v3\nmetadata: {name: p}\n", D1 "kind: required" },
	{ "apiVersion: projectcalico.org/v3\nkind: Deployment\n",
	  D1 "kind: unknown kind \"Deployment\" (apiVersion projectcalico.org/v3)" },
	{ "apiVersion: projectcalico.org/v2\nkind: IPPool\n",
	  D1 "apiVersion: IPPool is not served as projectcalico.org/v2" },
	{ "apiVersion: projectcalico.org/v3\nkind: IPAMBlock\nmetadata: {name: b}\n",
	  D1 "kind: unknown kind \"IPAMBlock\" (apiVersion projectcalico.org/v3)" },
	{ POOL_HEAD "spec: {cidr: 10.0.0.0/16}\nstatus: {}\n", D1 "status: unknown field" },
	{ POOL_HEAD "spec: {cidr: 10.0.0.0/16, natoutgoing: true}\n",
	  D1 "spec.natoutgoing: unknown field" },
	{ POOL_HEAD "spec: {cidr: 10.0.0.0/16}\nextra: 1\n", D1 "extra: unknown field" },
	{ "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"a\",\"name\":"
	  "\"b\"}}",
	  D1 "metadata.name: duplicate field" },
	/* Metadata */
	{ POOL_HEAD "spec: {cidr: 10.0.0.0/16}\n"
		    "metadata: {}\n",
	  "test.yaml: document 1: line 5: duplicate key \"metadata\"" },
	{ "apiVersion: projectcalico.org/v3\nkind: IPPool\nspec: {cidr: 10.0.0.0/16}\n",
	  D1 "metadata.name: required" },
	{ "apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: My_Pool}\n"
	  "spec: {cidr: 10.0.0.0/16}\n",
	  D1 "metadata.name: \"My_Pool\" must consist of lower case letters, digits, '-' and '.', "
	     "and start and end with a letter or digit" },
	{ "apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: p, namespace: x}\n"
	  "spec: {cidr: 10.0.0.0/16}\n",
	  D1 "metadata.namespace: must not be set: IPPool is not namespaced" },
	{ CP_HEAD "  namespace: Prod\n", "test.yaml: document 1: line 4: did not find expected key "
					 "while parsing a block mapping" },
	{ "apiVersion: v1\nkind: Namespace\nmetadata: {name: a, labels: {\"bad key\": x}}\n",
	  D1 "metadata.labels: key \"bad key\": name part must consist of letters, digits, '-', "
	     "'_' and '.', and start and end with a letter or digit" },
	{ "apiVersion: v1\nkind: Namespace\nmetadata: {name: a, labels: {Example.COM/x: y}}\n",
	  D1 "metadata.labels: key \"Example.COM/x\": prefix must be a DNS subdomain (lower case "
	     "letters, digits, '-' and '.')" },
	{ "apiVersion: v1\nkind: Namespace\nmetadata: {name: a, labels: {app: -web}}\n",
	  D1 "metadata.labels: value \"-web\" of app: must consist of letters, digits, '-', '_' "
	     "and '.', and start and end with a letter or digit" },
	{ "apiVersion: v1\nkind: Namespace\nmetadata: {name: a, labels: {app: [x]}}\n",
	  D1 "metadata.labels.app: must be a string, not a list" },
	{ "apiVersion: v1\nkind: Namespace\nmetadata: {name: a.b}\n",
	  D1 "metadata.name: \"a.b\" must consist of lower case letters, digits and '-', and start "
	     "and end with a letter or digit" },
	{ "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\nstatus: {phase: Gone}\n",
	  D1 "status.phase: \"Gone\" is not one of Active or Terminating" },
	/* Kubernetes NetworkPolicy */
	{ NP_HEAD
	  "spec:\n  ingress:\n  - ports:\n    - port: 80\n    - port: 81\n      endPort: 79\n",
	  D1 "spec.ingress[0].ports[1].endPort: must be >= port (81)" },
	{ NP_HEAD "spec: {egress: [{ports: [{endPort: 90}]}]}\n",
	  D1 "spec.egress[0].ports[0].endPort: requires port to be set" },
	{ NP_HEAD "spec: {egress: [{ports: [{port: http, endPort: 90}]}]}\n", D1
	  "spec.egress[0].ports[0].endPort: requires a numeric port, not the port name \"http\"" },
	{ NP_HEAD "spec: {ingress: [{ports: [{port: 70000}]}]}\n",
	  D1 "spec.ingress[0].ports[0].port: 70000 is out of range (1-65535)" },
	{ NP_HEAD "spec: {ingress: [{ports: [{port: 0}]}]}\n",
	  D1 "spec.ingress[0].ports[0].port: 0 is out of range (1-65535)" },
	{ NP_HEAD "spec: {ingress: [{ports: [{port: Web_Port}]}]}\n",
	  D1 "spec.ingress[0].ports[0].port: \"Web_Port\": a port name must be lower case letters, "
	     "digits and single '-' inside, with at least one letter" },
	{ NP_HEAD "spec: {ingress: [{ports: [{port: \"8080\"}]}]}\n",
	  D1 "spec.ingress[0].ports[0].port: \"8080\": a port name must be lower case letters, "
	     "digits and single '-' inside, with at least one letter" },
	{ NP_HEAD "spec: {ingress: [{ports: [{port: a-very-long-port-name}]}]}\n",
	  D1 "spec.ingress[0].ports[0].port: \"a-very-long-port-name\": a port name must be 1-15 "
	     "characters" },
	{ NP_HEAD "spec: {ingress: [{ports: [{protocol: ICMP, port: 1}]}]}\n",
	  D1 "spec.ingress[0].ports[0].protocol: \"ICMP\" is not one of TCP, UDP or SCTP" },
	{ NP_HEAD "spec: {ingress: [{ports: [{protocol: tcp}]}]}\n",
	  D1 "spec.ingress[0].ports[0].protocol: \"tcp\" is not one of TCP, UDP or SCTP" },
	{ NP_HEAD "spec: {ingress: [{ports: [{port: [80]}]}]}\n",
	  D1 "spec.ingress[0].ports[0].port: must be a port number or a port name" },
	{ NP_HEAD "spec: {ingress: [{ports: [{endPort: x, port: 1}]}]}\n",
	  D1 "spec.ingress[0].ports[0].endPort: must be an integer" },
	{ NP_HEAD "spec: {ingress: [{from: [{}]}]}\n",
	  D1 "spec.ingress[0].from[0]: must specify podSelector, namespaceSelector or ipBlock" },
	{ NP_HEAD "spec: {ingress: [{from: [{ipBlock: {cidr: 10.0.0.0/8}, podSelector: {}}]}]}\n",
	  D1 "spec.ingress[0].from[0]: ipBlock cannot be combined with podSelector or "
	     "namespaceSelector" },
	{ NP_HEAD "spec: {ingress: [{from: [{ipBlock: {cidr: 10.0.0.300/8}}]}]}\n",
	  D1 "spec.ingress[0].from[0].ipBlock.cidr: \"10.0.0.300/8\" is not a valid CIDR" },
	{ NP_HEAD "spec: {ingress: [{from: [{ipBlock: {cidr: 10.0.0.1}}]}]}\n",
	  D1 "spec.ingress[0].from[0].ipBlock.cidr: \"10.0.0.1\" is not a valid CIDR" },
	{ NP_HEAD "spec: {ingress: [{from: [{ipBlock: {except: [10.1.0.0/16]}}]}]}\n",
	  D1 "spec.ingress[0].from[0].ipBlock.cidr: required" },
	{ NP_HEAD
	  "spec: {ingress: [{from: [{ipBlock: {cidr: 10.0.0.0/16, except: [10.1.0.0/24]}}]}]}\n",
	  D1
	  "spec.ingress[0].from[0].ipBlock.except[0]: \"10.1.0.0/24\" must be a strict subset of "
	  "cidr 10.0.0.0/16" },
	{ NP_HEAD
	  "spec: {ingress: [{from: [{ipBlock: {cidr: 10.0.0.0/16, except: [10.0.0.0/16]}}]}]}\n",
	  D1
	  "spec.ingress[0].from[0].ipBlock.except[0]: \"10.0.0.0/16\" must be a strict subset of "
	  "cidr 10.0.0.0/16" },
	{ NP_HEAD "spec: {podSelector: {matchExpressions: [{key: app, operator: In}]}}\n",
	  D1 "spec.podSelector.matchExpressions[0].values: must be non-empty for operator In" },
	{ NP_HEAD
	  "spec: {podSelector: {matchExpressions: [{key: app, operator: Exists, values: [a]}]}}\n",
	  D1 "spec.podSelector.matchExpressions[0].values: must be empty for operator Exists" },
	{ NP_HEAD
	  "spec: {podSelector: {matchExpressions: [{key: app, operator: Equals, values: [a]}]}}\n",
	  D1 "spec.podSelector.matchExpressions[0].operator: \"Equals\" is not one of In, NotIn, "
	     "Exists or DoesNotExist" },
	{ NP_HEAD "spec: {podSelector: {matchExpressions: [{operator: Exists}]}}\n",
	  D1 "spec.podSelector.matchExpressions[0].key: required" },
	{ NP_HEAD "spec: {podSelector: {matchLabels: {role: \"db x\"}}}\n", D1
	  "spec.podSelector.matchLabels: value \"db x\" of role: must consist of letters, digits, "
	  "'-', '_' and '.', and start and end with a letter or digit" },
	{ NP_HEAD "spec: {policyTypes: [Ingress, Ingress]}\n",
	  D1 "spec.policyTypes[1]: duplicate value \"Ingress\"" },
	{ NP_HEAD "spec: {policyTypes: [Inbound]}\n",
	  D1 "spec.policyTypes[0]: \"Inbound\" is not one of Ingress or Egress" },
	{ NP_HEAD "spec: {ingress: {from: []}}\n", D1 "spec.ingress: must be a list" },
	{ NP_HEAD "spec: {podSelector: []}\n",
	  D1 "spec.podSelector: must be an object, not a list" },
	/* Calico policy */
	{ CP_HEAD "spec: {ingress: [{protocol: TCP}]}\n", D1 "spec.ingress[0].action: required" },
	{ CP_HEAD "spec: {ingress: [{action: allow}]}\n",
	  D1 "spec.ingress[0].action: \"allow\" is not one of Allow, Deny, Log or Pass" },
	{ CP_HEAD "spec: {ingress: [{action: Allow, protocol: QUIC}]}\n",
	  D1 "spec.ingress[0].protocol: \"QUIC\" is not a protocol (TCP, UDP, ICMP, ICMPv6, SCTP, "
	     "UDPLite or a number 1-255)" },
	{ CP_HEAD "spec: {ingress: [{action: Allow, protocol: 256}]}\n",
	  D1 "spec.ingress[0].protocol: protocol number 256 is out of range (1-255)" },
	{ CP_HEAD "spec: {ingress: [{action: Allow, destination: {ports: [80]}}]}\n",
	  D1 "spec.ingress[0].destination.ports: a port number or range requires protocol TCP, "
	     "UDP, SCTP or UDPLite (named ports do not)" },
	{ CP_HEAD
	  "spec: {ingress: [{action: Allow, protocol: ICMP, destination: {ports: [http]}}]}\n",
	  D1 "spec.ingress[0].destination.ports: requires protocol TCP, UDP, SCTP or UDPLite" },
	{ CP_HEAD "spec: {ingress: [{action: Allow, http: {methods: [GET]}}]}\n",
	  D1 "spec.ingress[0].http: matching HTTP requests needs an L7 proxy, which Brindle does "
	     "not have; the policy is refused rather than enforced without this match" },
	{ CP_HEAD "spec: {ingress: [{action: Allow, protocol: ICMP, source: {notPorts: [53]}}]}\n",
	  D1 "spec.ingress[0].source.notPorts: requires protocol TCP, UDP, SCTP or UDPLite" },
	{ CP_HEAD
	  "spec: {ingress: [{action: Allow, protocol: TCP, destination: {ports: ['90:80']}}]}\n",
	  D1 "spec.ingress[0].destination.ports[0]: port range \"90:80\" has its minimum above its "
	     "maximum" },
	{ CP_HEAD "spec: {ingress: [{action: Allow, protocol: TCP, destination: {ports: [0]}}]}\n",
	  D1 "spec.ingress[0].destination.ports[0]: port 0 is out of range (1-65535)" },
	{ CP_HEAD
	  "spec: {ingress: [{action: Allow, protocol: TCP, destination: {ports: ['1:99999']}}]}\n",
	  D1 "spec.ingress[0].destination.ports[0]: \"1:99999\" is not a valid port range (min:max "
	     "within 1-65535)" },
	{ CP_HEAD "spec: {ingress: [{action: Allow, protocol: TCP, icmp: {type: 8}}]}\n",
	  D1 "spec.ingress[0].icmp: requires protocol ICMP or ICMPv6" },
	{ CP_HEAD "spec: {ingress: [{action: Allow, protocol: ICMP, icmp: {code: 1}}]}\n",
	  D1 "spec.ingress[0].icmp.code: requires type to be set" },
	{ CP_HEAD "spec: {ingress: [{action: Allow, protocol: ICMP, icmp: {type: 255}}]}\n",
	  D1 "spec.ingress[0].icmp.type: 255 is out of range (0-254)" },
	{ CP_HEAD "spec: {ingress: [{action: Allow, ipVersion: 5}]}\n",
	  D1 "spec.ingress[0].ipVersion: must be 4 or 6" },
	{ CP_HEAD
	  "spec: {ingress: [{action: Allow, ipVersion: 6, source: {nets: [10.0.0.0/8]}}]}\n",
	  D1 "spec.ingress[0].source.nets[0]: \"10.0.0.0/8\" is not an IPv6 network (ipVersion is "
	     "6)" },
	{ CP_HEAD "spec: {ingress: [{action: Allow, source: {nets: [10.0.0.0/33]}}]}\n",
	  D1 "spec.ingress[0].source.nets[0]: \"10.0.0.0/33\" is not a valid IP address or CIDR" },
	{ CP_HEAD "spec: {selector: \"app = 'web'\"}\n",
	  D1 "spec.selector: invalid selector \"app = 'web'\": " },
	{ CP_HEAD "spec: {tier: sec.urity}\n", D1 "spec.tier: \"sec.urity\" is not a tier name: " },
	{ CP_HEAD "spec: {order: high}\n", D1 "spec.order: must be a number" },
	{ CP_HEAD "spec: {types: [Ingress], namespaceSelector: all()}\n",
	  D1 "spec.namespaceSelector: unknown field" },
	{ GNP_HEAD "spec: {preDNAT: true}\n", D1 "spec.preDNAT: requires applyOnForward: true" },
	{ GNP_HEAD "spec: {preDNAT: true, doNotTrack: true, applyOnForward: true}\n",
	  D1 "spec.preDNAT: cannot be combined with doNotTrack" },
	{ "apiVersion: projectcalico.org/v3\nkind: Profile\nmetadata: {name: x}\n"
	  "spec: {ingress: [{action: Pass}]}\n",
	  D1 "spec.ingress[0].action: Pass is not allowed in profiles" },
	/* IPPool */
	{ POOL_HEAD "spec: {}\n", D1 "spec.cidr: required" },
	{ POOL_HEAD "spec: {cidr: 10.0.0.0}\n", D1 "spec.cidr: \"10.0.0.0\" is not a valid CIDR" },
	{ POOL_HEAD "spec: {cidr: 10.0.0.0/16, blockSize: 19}\n",
	  D1 "spec.blockSize: 19 is out of range for IPv4 pools (20-32)" },
	{ POOL_HEAD "spec: {cidr: 10.0.0.0/28}\n",
	  D1 "spec.cidr: prefix /28 is smaller than one block (/26)" },
	{ POOL_HEAD "spec: {cidr: 10.0.0.0/16, ipipMode: Always, vxlanMode: Always}\n",
	  D1 "spec: ipipMode and vxlanMode cannot both be enabled" },
	{ POOL_HEAD "spec: {cidr: 10.0.0.0/16, vxlanMode: always}\n",
	  D1 "spec.vxlanMode: \"always\" is not one of Never, Always or CrossSubnet" },
	{ POOL_HEAD "spec: {cidr: 'fd00::/48', ipipMode: Always}\n",
	  D1 "spec.ipipMode: IPIP is not supported for IPv6 pools" },
	{ POOL_HEAD "spec: {cidr: 10.0.0.0/16, natOutgoing: maybe}\n",
	  D1 "spec.natOutgoing: must be true or false" },
	{ POOL_HEAD "spec: {cidr: 10.0.0.0/16, allowedUses: [Everything]}\n",
	  D1 "spec.allowedUses[0]: \"Everything\" is not one of Workload, Tunnel or LoadBalancer" },
	{ POOL_HEAD "spec: {cidr: 10.0.0.0/16, blockSize: 26.5}\n",
	  D1 "spec.blockSize: must be an integer" },
	/* Node, BGP */
	{ NODE_HEAD "spec: {bgp: {ipv4Address: 'fd00::1/64'}}\n", D1
	  "spec.bgp.ipv4Address: \"fd00::1/64\" is not a valid IPv4 address with prefix length" },
	{ NODE_HEAD "spec: {bgp: {asNumber: 70000.1}}\n",
	  D1 "spec.bgp.asNumber: \"70000.1\" is not an AS number (0-4294967295, or dotted "
	     "0-65535.0-65535)" },
	{ NODE_HEAD "spec: {bgp: {asNumber: 4294967296}}\n",
	  D1 "spec.bgp.asNumber: \"4294967296\" is not an AS number (0-4294967295, or dotted "
	     "0-65535.0-65535)" },
	{ NODE_HEAD "spec: {bgp: {asNumber: 0}}\n",
	  D1 "spec.bgp.asNumber: AS number 0 is reserved" },
	{ NODE_HEAD "spec: {bgp: {routeReflectorClusterID: abc}}\n",
	  D1 "spec.bgp.routeReflectorClusterID: \"abc\" is not a valid IPv4 address" },
	{ NODE_HEAD "spec: {vxlanTunnelMACAddr: 'ee:ee:ee'}\n",
	  D1 "spec.vxlanTunnelMACAddr: \"ee:ee:ee\" is not a valid MAC address" },
	{ PEER_HEAD "spec: {asNumber: 65000, peerIP: 10.0.0.1, peerSelector: all()}\n",
	  D1 "spec: peerIP and peerSelector cannot both be set" },
	{ "apiVersion: projectcalico.org/v3\nkind: StagedNetworkPolicy\nmetadata: {name: s}\n"
	  "spec: {stagedAction: Delete, selector: all()}\n",
	  D1 "spec.stagedAction: with Delete, the spec holds nothing but tier (and types)" },
	{ "apiVersion: projectcalico.org/v3\nkind: BGPFilter\nmetadata: {name: f}\n"
	  "spec: {exportV4: [{action: Accept, cidr: 'fd00::/8', matchOperator: In}]}\n",
	  D1 "spec.exportV4[0].cidr: \"fd00::/8\" is not an IPv4 network" },
	{ "apiVersion: projectcalico.org/v3\nkind: BGPFilter\nmetadata: {name: f}\n"
	  "spec: {importV4: [{action: Accept, cidr: 10.0.0.0/8}]}\n",
	  D1 "spec.importV4[0].matchOperator: cidr and matchOperator go together" },
	{ "apiVersion: projectcalico.org/v3\nkind: BGPFilter\nmetadata: {name: f}\n"
	  "spec: {importV4: [{action: Accept, cidr: 10.0.0.0/8, matchOperator: In,"
	  " prefixLength: {min: 4, max: 33}}]}\n",
	  D1 "spec.importV4[0].prefixLength.max: must be between 0 and 32" },
	{ "apiVersion: projectcalico.org/v3\nkind: BGPFilter\nmetadata: {name: f}\n"
	  "spec: {importV4: [{action: Accept, interface: 'eth0\"; reject'}]}\n",
	  D1 "spec.importV4[0].interface: \"eth0\"; reject\" is not an interface name or pattern" },
	{ "apiVersion: projectcalico.org/v3\nkind: Tier\nmetadata: {name: a.b}\n",
	  D1 "metadata.name: a tier's name cannot contain '.'" },
	/* Calico's policy names: a label, or two joined by one '.' (knp.default.* namespaced) */
	{ "apiVersion: projectcalico.org/v3\nkind: GlobalNetworkPolicy\nmetadata: {name: a.b.c}\n"
	  "spec: {selector: all()}\n",
	  D1 "metadata.name: \"a.b.c\": a policy's name is lower case letters, digits and '-' "
	     "(starting and ending with a letter or digit), or two such joined by one '.', as "
	     "Calico requires" },
	{ "apiVersion: projectcalico.org/v3\nkind: StagedNetworkPolicy\n"
	  "metadata: {name: sec.a.b, namespace: x}\nspec: {selector: all()}\n",
	  D1 "metadata.name: \"sec.a.b\": a policy's name is lower case letters, digits and '-' "
	     "(starting and ending with a letter or digit), or two such joined by one '.', or "
	     "\"knp.default.<name>\", as Calico requires" },
	{ "apiVersion: projectcalico.org/v3\nkind: GlobalNetworkPolicy\n"
	  "metadata: {name: knp.default.a}\nspec: {selector: all()}\n",
	  D1 "metadata.name: \"knp.default.a\": a policy's name is lower case letters, digits and "
	     "'-' (starting and ending with a letter or digit), or two such joined by one '.', as "
	     "Calico requires" },
	{ "apiVersion: projectcalico.org/v3\nkind: Tier\nmetadata: {name: default}\nspec: {order: "
	  "5}\n",
	  D1 "spec.order: the default tier's order is fixed at 1000000" },
	{ "apiVersion: projectcalico.org/v3\nkind: IPReservation\nmetadata: {name: r}\n"
	  "spec: {reservedCIDRs: [10.0.0.0/33]}\n",
	  D1 "spec.reservedCIDRs[0]: \"10.0.0.0/33\" is not a valid IP address or CIDR" },
	{ "apiVersion: projectcalico.org/v3\nkind: CalicoNodeStatus\nmetadata: {name: s}\n"
	  "spec: {node: n1, classes: [Agent, Peers]}\n",
	  D1 "spec.classes[1]: \"Peers\" is not one of Agent, BGP, Routes" },
	{ "apiVersion: projectcalico.org/v3\nkind: KubeControllersConfiguration\n"
	  "metadata: {name: other}\nspec: {controllers: {}}\n",
	  D1 "metadata.name: must be \"default\"" },
	{ PEER_HEAD "spec: {peerIP: 10.0.0.1}\n", D1 "spec.asNumber: required with peerIP" },
	{ PEER_HEAD "spec: {peerIP: '10.0.0.1:99999', asNumber: 65000}\n",
	  D1 "spec.peerIP: \"10.0.0.1:99999\" is not a valid peer address (IP, IP:port or "
	     "[IPv6]:port)" },
	{ PEER_HEAD "spec: {peerIP: 10.0.0.1, asNumber: 65000, node: a, nodeSelector: all()}\n",
	  D1 "spec: node and nodeSelector cannot both be set" },
	{ PEER_HEAD "spec: {peerSelector: all(), password: {file: /a, env: B}}\n",
	  D1 "spec.password: exactly one of secretKeyRef, file or env is required" },
	{ PEER_HEAD "spec: {peerSelector: all(), maxRestartTime: forever}\n",
	  D1 "spec.maxRestartTime: \"forever\" is not a duration (like 90s, 1m30s, 500ms)" },
	{ PEER_HEAD "spec: {peerSelector: all(), ttlSecurity: 0}\n",
	  D1 "spec.ttlSecurity: 0 is out of range (1-255)" },
	{ BGPC_HEAD "metadata: {name: node.a}\nspec: {asNumber: 65000}\n",
	  D1 "spec.asNumber: can only be set in the default BGPConfiguration" },
	{ BGPC_HEAD "metadata: {name: global}\nspec: {}\n",
	  D1 "metadata.name: must be \"default\" or \"node.<node name>\"" },
	{ BGPC_HEAD "metadata: {name: default}\nspec: {logSeverityScreen: chatty}\n", D1
	  "spec.logSeverityScreen: \"chatty\" is not one of Debug, Info, Warning, Error or Fatal" },
	{ BGPC_HEAD
	  "metadata: {name: default}\nspec: {communities: [{name: a, value: '1:2:3:4'}]}\n",
	  D1 "spec.communities[0].value: \"1:2:3:4\" is not a community: aa:nn with parts up to "
	     "65535, or a large community aa:nn:mm with parts up to 4294967295" },
	/* The trust review: values that reach BIRD within BIRD's limits. */
	{ BGPC_HEAD
	  "metadata: {name: default}\n"
	  "spec: {prefixAdvertisements: [{cidr: 10.0.0.0/8, communities: ['99999999999:1']}]}\n",
	  D1 "spec.prefixAdvertisements[0].communities[0]: \"99999999999:1\" is not a community: "
	     "aa:nn with parts up to 65535, or a large community aa:nn:mm with parts up to "
	     "4294967295" },
	{ BGPC_HEAD
	  "metadata: {name: default}\n"
	  "spec: {prefixAdvertisements: [{cidr: 10.0.0.0/8, communities: ['65000:1;']}]}\n",
	  D1 "spec.prefixAdvertisements[0].communities[0]: \"65000:1;\" is not a community: "
	     "aa:nn with parts up to 65535, or a large community aa:nn:mm with parts up to "
	     "4294967295" },
	{ PEER_HEAD "spec: {peerIP: 10.0.0.1, asNumber: 1, keepaliveTime: 5m}\n",
	  D1 "spec.keepaliveTime: 5m is not a keepalive time from 1s to 120s (half of BIRD's hold "
	     "time)" },
	{ PEER_HEAD "spec: {peerIP: 10.0.0.1, asNumber: 1, maxRestartTime: 2h}\n", D1
	  "spec.maxRestartTime: 2h is not a graceful restart time from 0s to 4095s (BGP's limit)" },
	{ PEER_HEAD "spec: {peerIP: 10.0.0.1, asNumber: 1, password: {file: '../../etc/shadow'}}\n",
	  D1 "spec.password.file: \"../../etc/shadow\" is not a password file path (printable, no "
	     "\"..\"; confd reads only files inside its secrets directory)" },
	{ PEER_HEAD "spec: {peerIP: 10.0.0.1, asNumber: 1, password: {env: 'A-B'}}\n",
	  D1 "spec.password.env: \"A-B\" is not an environment variable name "
	     "([A-Za-z_][A-Za-z0-9_]*)" },
	{ WEP_HEAD "spec: {interfaceName: eth0, ipNetworks: [0.0.0.0/0]}\n",
	  D1 "spec.ipNetworks[0]: \"0.0.0.0/0\" is a default route; a workload's networks are its "
	     "own addresses" },
	{ WEP_HEAD "spec: {interfaceName: tunl0, ipNetworks: [10.0.0.1/32]}\n", D1
	  "spec.interfaceName: \"tunl0\" is a host interface felix owns; a workload cannot claim "
	  "it" },
	{ FELIX_HEAD "metadata: {name: default}\nspec: {policyEventLogFile: 'logs/x.log'}\n",
	  D1 "spec.policyEventLogFile: \"logs/x.log\" is not a file name or an absolute path of a "
	     "file (felix writes the event log only in its event log directory)" },
	{ FELIX_HEAD "metadata: {name: default}\nspec: {prometheusMetricsHost: 'all'}\n",
	  D1 "spec.prometheusMetricsHost: \"all\" is not an IPv4 address, localhost or empty (all "
	     "addresses)" },
	{ BGPC_HEAD "metadata: {name: default}\n"
		    "spec: {prefixAdvertisements: [{cidr: 10.0.0.0/8, communities: [nope]}]}\n",
	  D1 "spec.prefixAdvertisements[0].communities[0]: community \"nope\" is not defined in "
	     "communities" },
	{ BGPC_HEAD "metadata: {name: default}\nspec: {serviceClusterIPs: [{cidr: x}]}\n",
	  D1 "spec.serviceClusterIPs[0].cidr: \"x\" is not a valid CIDR" },
	{ FELIX_HEAD "metadata: {name: default}\nspec: {iptablesMarkMask: 0xf}\n",
	  D1 "spec.iptablesMarkMask: 0xf leaves fewer than 5 mark bits for Brindle" },
	{ FELIX_HEAD "metadata: {name: default}\nspec: {defaultEndpointToHostAction: Reject}\n",
	  D1 "spec.defaultEndpointToHostAction: \"Reject\" is not one of Drop, Accept or Return" },
	{ FELIX_HEAD "metadata: {name: default}\nspec: {failsafeInboundHostPorts: [{port: 22, "
		     "protocol: ICMP}]}\n",
	  D1 "spec.failsafeInboundHostPorts[0].protocol: \"ICMP\" is not one of TCP, UDP or SCTP" },
	{ FELIX_HEAD "metadata: {name: default}\nspec: {interfacePrefix: 'cali veth'}\n",
	  D1 "spec.interfacePrefix: \"cali veth\" is not a comma-separated list of interface name "
	     "prefixes" },
	/* Endpoints */
	{ WEP_HEAD "spec: {node: n}\n", D1 "spec.interfaceName: required" },
	{ WEP_HEAD "spec: {interfaceName: cali0123456789abcdef}\n",
	  D1 "spec.interfaceName: \"cali0123456789abcdef\" is not a valid interface name (1-15 "
	     "characters, no '/', ':' or spaces)" },
	{ WEP_HEAD "spec: {interfaceName: cali1, ports: [{name: http}]}\n",
	  D1 "spec.ports[0].port: required" },
	{ WEP_HEAD "spec: {interfaceName: cali1, ipNetworks: [10.0.0.1/40]}\n",
	  D1 "spec.ipNetworks[0]: \"10.0.0.1/40\" is not a valid IP address or CIDR" },
	{ "apiVersion: projectcalico.org/v3\nkind: HostEndpoint\nmetadata: {name: h}\n"
	  "spec: {node: n}\n",
	  D1 "spec: one of interfaceName or expectedIPs is required" },
	{ "apiVersion: projectcalico.org/v3\nkind: IPAMConfiguration\nmetadata: {name: x}\nspec: "
	  "{}\n",
	  D1 "metadata.name: must be \"default\"" },
	/* Syntax */
	{ "apiVersion: v1\nkind: Namespace\nmetadata: {name: a\n",
	  "test.yaml: document 1: line 4: did not find expected ',' or '}' while parsing a flow "
	  "mapping" },
	{ "{\"apiVersion\": \"v1\",}", "test.yaml: line 1: invalid object key (must be a string)" },
	{ "---\n---\n", "test.yaml: no resources found" },
};

static void test_bad_inputs(void **state)
{
	int failures = 0;
	assert_true(ARRAY_SIZE(bad_inputs) >= 60);
	for (size_t i = 0; i < ARRAY_SIZE(bad_inputs); i++) {
		char *e = first_error(bad_inputs[i].text);
		const char *want = bad_inputs[i].error;
		/* An expectation ending in ": " checks the prefix (messages from sel_parse). */
		bool ok = e && (str_has_suffix(want, ": ") ? str_has_prefix(e, want)
							   : strcmp(e, want) == 0);
		if (!ok) {
			print_error("case %zu:\n%s\n  want: %s\n   got: %s\n", i, bad_inputs[i].text,
				    want, e ? e : "(accepted)");
			failures++;
		}
		free(e);
	}
	assert_int_equal(failures, 0);
}

/*
 * Input limits: a document over 1.5 MiB as JSON is refused and so is every
 * other document; a bad value is quoted to ~100 bytes, not echoed whole; an
 * annotation may hold newlines and tabs (only other control characters go).
 */
static void test_input_limits(void **state)
{
	struct strbuf big = STRBUF_INIT;
	sb_init(&big);
	sb_adds(&big, "apiVersion: v1\nkind: Namespace\nmetadata: {name: ok}\n---\n"
		      "apiVersion: v1\nkind: Namespace\nmetadata: {name: big, annotations: {a: \"");
	for (size_t i = 0; i < (2u << 20) / 64; i++)
		sb_adds(&big, "0123456789012345678901234567890123456789012345678901234567890123");
	sb_adds(&big, "\"}}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: ok2}\n");
	struct br_object **objs;
	size_t n;
	struct model_errors errs = { 0 };
	assert_int_equal(model_read("big.yaml", big.buf, big.len, NULL, &objs, &n, &errs), -EINVAL);
	assert_null(objs);
	assert_int_equal(errs.n, 1);
	assert_string_equal(errs.v[0],
			    "big.yaml: document 2: 2.0 MiB as JSON, over the 1.5 MiB one "
			    "resource may have (the Kubernetes API's limit)");
	model_errors_clear(&errs);

	sb_reset(&big);
	sb_adds(&big, "apiVersion: v1\nkind: Namespace\nmetadata: {name: n, labels: {a: \"");
	for (int i = 0; i < 100000; i++)
		sb_addc(&big, 'v');
	sb_adds(&big, "\"}}\n");
	assert_int_equal(model_read("l.yaml", big.buf, big.len, NULL, &objs, &n, &errs), -EINVAL);
	assert_int_equal(errs.n, 1);
	assert_true(strlen(errs.v[0]) < 250);
	assert_non_null(strstr(errs.v[0], "... (100000 bytes)"));
	model_errors_clear(&errs);
	sb_free(&big);

	const char *ok = "apiVersion: v1\nkind: Namespace\nmetadata: {name: n, annotations: "
			 "{note: \"line one\\nline two\\tend\"}}\n";
	assert_int_equal(model_read("ok.yaml", ok, strlen(ok), NULL, &objs, &n, &errs), 0);
	assert_int_equal(n, 1);
	model_free_all(objs, n);
}

static void test_second_document_error(void **state)
{
	/* One bad document: nothing is returned, the error names the document. */
	const char *text = "apiVersion: v1\nkind: Namespace\nmetadata: {name: ok}\n---\n" NP_HEAD
			   "spec:\n  ingress:\n  - ports:\n    - port: 80\n      endPort: 70\n";
	struct br_object **objs;
	size_t n;
	struct model_errors errs = { 0 };
	assert_int_equal(model_read("policy.yaml", text, strlen(text), NULL, &objs, &n, &errs), -EINVAL);
	assert_null(objs);
	assert_int_equal(errs.n, 1);
	assert_string_equal(errs.v[0],
			    "policy.yaml: document 2: spec.ingress[0].ports[0].endPort: must be >= "
			    "port (80)");
	model_errors_clear(&errs);
}

static void test_all_errors_reported(void **state)
{
	const char *text = POOL_HEAD "spec: {cidr: 10.0.0.0/16, foo: 1, bar: 2}\n";
	struct br_object **objs;
	size_t n;
	struct model_errors errs = { 0 };
	assert_int_equal(model_read("x.yaml", text, strlen(text), NULL, &objs, &n, &errs), -EINVAL);
	assert_int_equal(errs.n, 2);
	assert_string_equal(errs.v[1], "x.yaml: document 1: spec.bar: unknown field");
	model_errors_clear(&errs);
}

/* Every error of @text, in order, then NULL; fails the test if @text is accepted. */
static void expect_errors(const char *text, const char *const *want)
{
	struct br_object **objs;
	size_t n, k = 0;
	struct model_errors errs = { 0 };
	assert_int_equal(model_read("test.yaml", text, strlen(text), NULL, &objs, &n, &errs),
			 -EINVAL);
	for (; want[k]; k++) {
		if (k >= errs.n)
			fail_msg("missing error %zu: %s", k, want[k]);
		assert_string_equal(errs.v[k], want[k]);
	}
	if (errs.n != k)
		fail_msg("unexpected error: %s", errs.v[k]);
	model_errors_clear(&errs);
}

/* A field that fails to decode (asNumber: 0) used to hide every problem found by the checks
 * that follow decoding; now each field is reported once, and every field is. */
static void test_decode_error_hides_nothing(void **state)
{
	expect_errors(BGPC_HEAD
		      "metadata: {name: default}\n"
		      "spec: {asNumber: 0, listenPort: 0, logSeverityScreen: Loud, bogus: 1}\n",
		      (const char *const[]){
			      D1 "spec.asNumber: AS number 0 is reserved",
			      D1 "spec.bogus: unknown field",
			      D1 "spec.logSeverityScreen: \"Loud\" is not one of Debug, Info, "
				 "Warning, Error or Fatal",
			      D1 "spec.listenPort: 0 is out of range (1-65535)",
			      NULL,
		      });
	/* A required field that fails to decode is not also "required"; a list item that fails
	 * is not checked again; a bad name is reported once; the rule after a bad one is
	 * checked. */
	expect_errors("apiVersion: projectcalico.org/v3\nkind: GlobalNetworkPolicy\n"
		      "metadata: {name: [x]}\n"
		      "spec:\n  types: [Ingress, [x]]\n  ingress:\n"
		      "  - {action: Allow, protocol: TCPX}\n  - {action: Maybe}\n",
		      (const char *const[]){
			      D1 "metadata.name: must be a string, not a list",
			      D1 "spec.types[1]: must be a string, not a list",
			      D1 "spec.ingress[0].protocol: \"TCPX\" is not a protocol (TCP, UDP, "
				 "ICMP, ICMPv6, SCTP, UDPLite or a number 1-255)",
			      D1 "spec.ingress[1].action: \"Maybe\" is not one of Allow, Deny, "
				 "Log or Pass",
			      NULL,
		      });
	expect_errors(BGPC_HEAD "metadata: {}\nspec: {}\n",
		      (const char *const[]){ D1 "metadata.name: required", NULL });
	expect_errors(POOL_HEAD "spec: {cidr: [10.0.0.0/16], blockSize: x, vxlanMode: Often}\n",
		      (const char *const[]){
			      D1 "spec.cidr: must be a string, not a list",
			      D1 "spec.blockSize: must be an integer",
			      D1 "spec.vxlanMode: \"Often\" is not one of Never, Always or "
				 "CrossSubnet",
			      NULL,
		      });
}

static void test_clone_and_new(void **state)
{
	size_t n;
	struct br_object **objs = read_ok(test_network_policy, &n);
	struct br_object *c = model_clone(objs[0]);
	assert_true(model_equal(c, objs[0]));
	assert_true(model_same_content(c, objs[0]));
	model_free(c);
	struct br_object *pool = model_new(model_kind(KIND_IPPOOL), NULL, "x");
	const struct br_ippool *p = (const void *)pool;
	assert_string_equal(p->spec.ipip_mode, "Never");
	assert_null(pool->meta.namespace);
	model_free(pool);
	model_free_all(objs, n);
}

static void test_helpers(void **state)
{
	uint32_t asn;
	assert_int_equal(asn_parse("1.10", &asn), 0);
	assert_int_equal(asn, 65546);
	assert_int_equal(asn_parse("4294967295", &asn), 0);
	assert_int_not_equal(asn_parse("1.", &asn), 0);
	int64_t ms;
	assert_int_equal(duration_parse("1m30s", &ms), 0);
	assert_int_equal(ms, 90000);
	assert_int_equal(duration_parse("1.5h", &ms), 0);
	assert_int_equal(ms, 5400000);
	assert_int_equal(duration_parse("250ms", &ms), 0);
	assert_int_equal(ms, 250);
	assert_int_not_equal(duration_parse("10", &ms), 0);
	char ip[46];
	uint16_t port;
	assert_int_equal(peer_ip_parse("[fd00::1]:179", ip, &port), 0);
	assert_string_equal(ip, "fd00::1");
	assert_int_equal(port, 179);
	assert_int_equal(peer_ip_parse("fd00::1", ip, &port), 0);
	assert_int_equal(port, 0);
	assert_int_equal(peer_ip_parse("10.0.0.1:1790", ip, &port), 0);
	assert_int_equal(port, 1790);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_k8s_docs_example),
		cmocka_unit_test(test_k8s_defaults),
		cmocka_unit_test(test_calico_policy_roundtrip),
		cmocka_unit_test(test_every_kind_roundtrips),
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_list_and_json),
		cmocka_unit_test(test_list_forms),
		cmocka_unit_test(test_policy_names),
		cmocka_unit_test(test_kind_names),
		cmocka_unit_test(test_bad_inputs),
		cmocka_unit_test(test_second_document_error),
		cmocka_unit_test(test_input_limits),
		cmocka_unit_test(test_all_errors_reported),
		cmocka_unit_test(test_decode_error_hides_nothing),
		cmocka_unit_test(test_clone_and_new),
		cmocka_unit_test(test_helpers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
