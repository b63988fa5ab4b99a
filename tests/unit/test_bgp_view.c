/*
 * The BGP view with plain data: who peers with whom and how (self-avoidance,
 * passive side, route-reflector flags, mesh membership, deduplication,
 * reverse peerings, ports, families), which prefixes are originated, and
 * that the result does not depend on input order.
 */
#include "harness.h"

#include "bgp_view.h"

#include <brindle/core/yaml.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

struct world {
	struct br_object **objs;
	size_t n;
	struct bgp_input in;
	const void **arrays[7];
};

static void collect(struct world *w, enum br_kind_id id, const void ***arr, size_t *n)
{
	*arr = xcalloc(w->n + 1, sizeof(void *));
	*n = 0;
	for (size_t i = 0; i < w->n; i++)
		if (w->objs[i]->kind->id == id)
			(*arr)[(*n)++] = w->objs[i];
}

/* Resources from YAML (block affinities allowed), optionally in reverse order. */
static struct world *world_new(const char *yaml, bool reversed)
{
	struct world *w = xcalloc(1, sizeof(*w));
	struct arena *a = arena_new();
	struct jv **docs;
	size_t ndocs;
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	if (yaml_parse_all(a, yaml, strlen(yaml), &docs, &ndocs, &err) < 0)
		fail_msg("%s", sb_str(&err));
	w->objs = xcalloc(ndocs + 1, sizeof(*w->objs));
	for (size_t i = 0; i < ndocs; i++) {
		struct model_errors errs = { 0 };
		const struct jv *doc = docs[reversed ? ndocs - 1 - i : i];
		if (!doc)
			continue;
		struct br_object *o = model_decode(doc, true, &errs);
		if (!o)
			fail_msg("bad test input: %s", errs.v[0]);
		w->objs[w->n++] = o;
	}
	arena_free(a);
	sb_free(&err);
	collect(w, KIND_NODE, (const void ***)&w->in.nodes, &w->in.n_nodes);
	collect(w, KIND_BGPCONFIGURATION, (const void ***)&w->in.configs, &w->in.n_configs);
	collect(w, KIND_BGPPEER, (const void ***)&w->in.peers, &w->in.n_peers);
	collect(w, KIND_IPPOOL, (const void ***)&w->in.pools, &w->in.n_pools);
	collect(w, KIND_BLOCKAFFINITY, (const void ***)&w->in.affinities, &w->in.n_affinities);
	collect(w, KIND_SERVICE, (const void ***)&w->in.services, &w->in.n_services);
	collect(w, KIND_ENDPOINTSLICE, (const void ***)&w->in.slices, &w->in.n_slices);
	return w;
}

static void world_free(struct world *w)
{
	free((void *)w->in.nodes);
	free((void *)w->in.configs);
	free((void *)w->in.peers);
	free((void *)w->in.pools);
	free((void *)w->in.affinities);
	free((void *)w->in.services);
	free((void *)w->in.slices);
	model_free_all(w->objs, w->n);
	free(w);
}

static struct bgp_view *view_of(struct world *w, const char *node)
{
	struct bgp_view *v;
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	w->in.node_name = node;
	if (bgp_view_build(&w->in, &v, &err) < 0)
		fail_msg("view of %s: %s", node, sb_str(&err));
	sb_free(&err);
	return v;
}

static const struct bgp_session *session(const struct bgp_view *v, int f, const char *name)
{
	for (size_t i = 0; i < v->fam[f].n_sessions; i++)
		if (streq(v->fam[f].sessions[i].name, name))
			return &v->fam[f].sessions[i];
	return NULL;
}

static const char *names(const struct bgp_view *v, int f)
{
	static char buf[2048];
	buf[0] = '\0';
	for (size_t i = 0; i < v->fam[f].n_sessions; i++)
		snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "%s%s", i ? " " : "",
			 v->fam[f].sessions[i].name);
	return buf;
}

static const char *statics(const struct bgp_view *v, int f)
{
	static char buf[2048];
	buf[0] = '\0';
	for (size_t i = 0; i < v->fam[f].n_statics; i++)
		snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "%s%s", i ? " " : "",
			 v->fam[f].statics[i].cidr);
	return buf;
}

#define NODE(name, ip, extra)                                                             \
	"---\napiVersion: projectcalico.org/v3\nkind: Node\nmetadata: {name: " name "}\n" \
	"spec: {bgp: {ipv4Address: " ip extra "}}\n"
#define LNODE(name, labels, ip, extra)                                              \
	"---\napiVersion: projectcalico.org/v3\nkind: Node\nmetadata: {name: " name \
	", labels: " labels "}\nspec: {bgp: {ipv4Address: " ip extra "}}\n"
#define BGPCONF(name, spec)                                                                     \
	"---\napiVersion: projectcalico.org/v3\nkind: BGPConfiguration\nmetadata: {name: " name \
	"}\nspec: " spec "\n"
#define PEER(name, spec)                                                               \
	"---\napiVersion: projectcalico.org/v3\nkind: BGPPeer\nmetadata: {name: " name \
	"}\nspec: " spec "\n"

static void test_mesh_passive_and_self(void **state)
{
	/* Lexical, not numeric: "10.0.0.9" > "10.0.0.10". */
	struct world *w =
		world_new(NODE("a", "10.0.0.9/24", "") NODE("b", "10.0.0.10/24", "")
				  NODE("c", "10.0.0.100/24", "") NODE("twin", "10.0.0.9/24", ""),
			  false);
	struct bgp_view *v = view_of(w, "a");
	/* "twin" shares a's address: no session to ourselves. */
	assert_string_equal(names(v, BGP_V4), "Mesh_10_0_0_10 Mesh_10_0_0_100");
	assert_false(session(v, BGP_V4, "Mesh_10_0_0_10")->passive);
	assert_false(session(v, BGP_V4, "Mesh_10_0_0_100")->passive);
	const struct bgp_session *s = session(v, BGP_V4, "Mesh_10_0_0_10");
	assert_true(s->ibgp);
	assert_string_equal(s->source_address, "10.0.0.9");
	assert_string_equal(s->peer_node, "b");
	assert_string_equal(v->router_id, "10.0.0.9");
	assert_int_equal(v->as, BGP_DEFAULT_AS);
	bgp_view_free(v);
	v = view_of(w, "b");
	assert_true(session(v, BGP_V4, "Mesh_10_0_0_9")->passive);
	assert_true(session(v, BGP_V4, "Mesh_10_0_0_100")->passive);
	bgp_view_free(v);
	world_free(w);
}

static void test_route_reflectors(void **state)
{
	const char *yaml = LNODE("rr1", "{rr: 'yes'}", "10.0.0.2/24",
				 ", routeReflectorClusterID: 1.1.1.1")
		LNODE("rr2", "{rr: 'yes'}", "10.0.0.3/24", ", routeReflectorClusterID: 1.1.1.1")
			LNODE("rr3", "{rr: 'yes'}", "10.0.0.4/24",
			      ", routeReflectorClusterID: 2.2.2.2") NODE("a", "10.0.0.11/24", "")
				NODE("b", "10.0.0.12/24", "") PEER(
					"to-rr", "{nodeSelector: all(), peerSelector: rr == 'yes'}")
					PEER("ext", "{peerIP: 192.0.2.1, asNumber: 65000}");
	struct world *w = world_new(yaml, false);
	struct bgp_view *v = view_of(w, "rr1");
	/* A reflector is not in the mesh: only peerings. */
	assert_string_equal(names(v, BGP_V4), "Global_192_0_2_1 Node_10_0_0_11 Node_10_0_0_12 "
					      "Node_10_0_0_3 Node_10_0_0_4");
	const struct bgp_session *s = session(v, BGP_V4, "Node_10_0_0_11");
	assert_true(s->rr_client);
	assert_string_equal(s->rr_cluster_id, "1.1.1.1");
	assert_string_equal(s->origin, "bgppeer to-rr (reverse)");
	assert_false(session(v, BGP_V4, "Node_10_0_0_3")->rr_client);	 /* same cluster */
	assert_true(session(v, BGP_V4, "Node_10_0_0_4")->rr_client);	 /* another cluster */
	assert_false(session(v, BGP_V4, "Global_192_0_2_1")->rr_client); /* eBGP: never */
	bgp_view_free(v);

	/* A client meshes with the other non-reflector and peers with all reflectors. */
	v = view_of(w, "a");
	assert_string_equal(names(v, BGP_V4), "Global_192_0_2_1 Mesh_10_0_0_12 Node_10_0_0_2 "
					      "Node_10_0_0_3 Node_10_0_0_4");
	assert_false(session(v, BGP_V4, "Node_10_0_0_2")->rr_client);
	bgp_view_free(v);
	world_free(w);
}

static void test_dedup_order(void **state)
{
	const char *yaml = NODE("a", "10.0.0.11/24", "") NODE("b", "10.0.0.12/24", "")
		/* Same address and port as the mesh session: the mesh wins. */
		PEER("a1-all-nodes", "{peerSelector: all()}")
		/* Node-specific duplicate of a global peer: dropped. */
		PEER("b-global", "{peerIP: 192.0.2.1, asNumber: 65000, ttlSecurity: 2}")
			PEER("a-node", "{node: a, peerIP: '192.0.2.1:179', asNumber: 65000}")
		/* Another port is another peer. */
		PEER("c-port", "{node: a, peerIP: '192.0.2.1:1179', asNumber: 65000}");
	struct world *w = world_new(yaml, false);
	struct bgp_view *v = view_of(w, "a");
	assert_string_equal(names(v, BGP_V4),
			    "Global_192_0_2_1 Mesh_10_0_0_12 Node_192_0_2_1_port_1179");
	assert_int_equal(session(v, BGP_V4, "Global_192_0_2_1")->ttl_security, 2);
	assert_string_equal(session(v, BGP_V4, "Mesh_10_0_0_12")->origin, "node-to-node mesh");
	assert_int_equal(session(v, BGP_V4, "Node_192_0_2_1_port_1179")->port, 1179);
	bgp_view_free(v);
	world_free(w);
}

static void test_reverse_and_ports(void **state)
{
	const char *yaml = BGPCONF("default", "{nodeToNodeMeshEnabled: false, listenPort: 1790}")
		BGPCONF("node.b", "{listenPort: 1791}")
			LNODE("a", "{side: left}", "10.0.0.11/24", "")
				LNODE("b", "{side: right}", "10.0.0.12/24", "")
					NODE("c", "10.0.0.13/24", ", asNumber: 65003")
		/* By address: a Brindle node, so its listen port and a reverse peering. */
		PEER("a-to-b", "{node: a, peerIP: 10.0.0.12, asNumber: 64512, maxRestartTime: 1m}")
		/* Wrong AS for c: no reverse, and the port is not c's. */
		PEER("a-to-c", "{node: a, peerIP: 10.0.0.13, asNumber: 64999}")
		/* Manual: no reverse on b. */
		PEER("c-to-b",
		     "{node: c, peerIP: 10.0.0.12, asNumber: 64512, reversePeering: Manual}");
	struct world *w = world_new(yaml, false);
	struct bgp_view *v = view_of(w, "a");
	assert_string_equal(names(v, BGP_V4), "Node_10_0_0_12_port_1791 Node_10_0_0_13");
	assert_int_equal(session(v, BGP_V4, "Node_10_0_0_13")->port, 0);
	assert_false(session(v, BGP_V4, "Node_10_0_0_13")->ibgp);
	bgp_view_free(v);
	v = view_of(w, "b");
	assert_string_equal(names(v, BGP_V4), "Node_10_0_0_11_port_1790");
	const struct bgp_session *s = session(v, BGP_V4, "Node_10_0_0_11_port_1790");
	assert_string_equal(s->origin, "bgppeer a-to-b (reverse)");
	assert_int_equal(s->restart_time_s, 60);
	assert_false(s->passive); /* Node_ sessions never wait */
	assert_int_equal(v->listen_port, 1791);
	bgp_view_free(v);
	v = view_of(w, "c");
	assert_string_equal(names(v, BGP_V4), "Node_10_0_0_12_port_1791");
	bgp_view_free(v);
	world_free(w);
}

static void test_global_passive_only_towards_nodes(void **state)
{
	/* a global peer given by IP that is a node: the address rule, as the mesh's */
	const char *yaml = BGPCONF("default", "{nodeToNodeMeshEnabled: false}")
		NODE("a", "10.0.0.11/24", "") NODE("b", "10.0.0.12/24", "")
			PEER("b", "{peerIP: 10.0.0.12, asNumber: 64512}")
				PEER("router", "{peerIP: 10.0.0.200, asNumber: 65000}");
	struct world *w = world_new(yaml, false);
	struct bgp_view *v = view_of(w, "a");
	assert_true(session(v, BGP_V4, "Global_10_0_0_12")->passive);
	/* The router is not ours to coordinate with: always connect. */
	assert_false(session(v, BGP_V4, "Global_10_0_0_200")->passive);
	bgp_view_free(v);
	world_free(w);
	/* peers a peerSelector gives connect from both sides, as in Calico (issue 16) */
	yaml = BGPCONF("default", "{nodeToNodeMeshEnabled: false}") NODE("a", "10.0.0.11/24", "")
		NODE("b", "10.0.0.12/24", "") PEER("all", "{peerSelector: all()}");
	w = world_new(yaml, false);
	v = view_of(w, "a");
	assert_false(session(v, BGP_V4, "Global_10_0_0_12")->passive);
	bgp_view_free(v);
	v = view_of(w, "b");
	assert_false(session(v, BGP_V4, "Global_10_0_0_11")->passive);
	bgp_view_free(v);
	world_free(w);
}

static void test_families(void **state)
{
	const char *yaml =
		"---\napiVersion: projectcalico.org/v3\nkind: Node\nmetadata: {name: dual}\n"
		"spec: {bgp: {ipv4Address: 10.0.0.1/24, ipv6Address: 'fd00::1/64'}}\n"
		"---\napiVersion: projectcalico.org/v3\nkind: Node\nmetadata: {name: v6}\n"
		"spec: {bgp: {ipv6Address: 'fd00::2/64'}}\n" NODE("v4", "10.0.0.3/24", "")
			PEER("tor6", "{peerIP: 'fd00::fe', asNumber: 65000}");
	struct world *w = world_new(yaml, false);
	struct bgp_view *v = view_of(w, "dual");
	assert_string_equal(names(v, BGP_V4), "Mesh_10_0_0_3");
	assert_string_equal(names(v, BGP_V6), "Global_fd00__fe Mesh_fd00__2");
	assert_string_equal(v->fam[BGP_V6].subnet, "fd00::/64");
	bgp_view_free(v);
	v = view_of(w, "v6");
	assert_false(v->fam[BGP_V4].enabled);
	assert_string_equal(names(v, BGP_V6), "Global_fd00__fe Mesh_fd00__1");
	/* No IPv4 address: a router ID from the name, the same every time. */
	assert_string_equal(v->router_id, "155.74.81.109");
	bgp_view_free(v);
	world_free(w);
}

static void test_blocks_and_pools(void **state)
{
	const char *yaml = NODE("a", "10.0.0.11/24", "") NODE(
		"b", "10.0.0.12/24",
		"") "---\napiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: p}\n"
		    "spec: {cidr: 10.244.0.0/16, vxlanMode: CrossSubnet}\n"
		    "---\napiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: q}\n"
		    "spec: {cidr: 10.245.0.0/16, ipipMode: Always, disableBGPExport: true}\n"
		    "---\napiVersion: projectcalico.org/v3\nkind: BlockAffinity\nmetadata: {name: "
		    "x1}\n"
		    "spec: {node: a, cidr: 10.244.0.64/26, state: confirmed}\n"
		    "---\napiVersion: projectcalico.org/v3\nkind: BlockAffinity\nmetadata: {name: "
		    "x2}\n"
		    "spec: {node: a, cidr: 10.244.0.0/26, state: confirmed}\n"
		    "---\napiVersion: projectcalico.org/v3\nkind: BlockAffinity\nmetadata: {name: "
		    "x3}\n"
		    "spec: {node: a, cidr: 10.244.0.128/26, state: pending}\n"
		    "---\napiVersion: projectcalico.org/v3\nkind: BlockAffinity\nmetadata: {name: "
		    "x4}\n"
		    "spec: {node: a, cidr: 10.244.0.192/26, state: confirmed, deleted: true}\n"
		    "---\napiVersion: projectcalico.org/v3\nkind: BlockAffinity\nmetadata: {name: "
		    "x5}\n"
		    "spec: {node: b, cidr: 10.244.1.0/26, state: confirmed}\n";
	struct world *w = world_new(yaml, false);
	struct bgp_view *v = view_of(w, "a");
	const struct bgp_family_view *fv = &v->fam[BGP_V4];
	assert_int_equal(fv->n_blocks, 2);
	assert_string_equal(fv->blocks[0].cidr, "10.244.0.0/26");
	assert_string_equal(fv->blocks[1].cidr, "10.244.0.64/26");
	assert_string_equal(statics(v, BGP_V4), "10.244.0.0/26 10.244.0.64/26");
	assert_int_equal(fv->n_pools, 2);
	assert_int_equal(fv->pools[0].mode, BGP_POOL_CROSS_SUBNET);
	assert_true(fv->pools[0].export);
	assert_int_equal(fv->pools[1].mode, BGP_POOL_TUNNEL);
	assert_false(fv->pools[1].export);
	assert_string_equal(fv->subnet, "10.0.0.0/24");
	bgp_view_free(v);
	world_free(w);
}

#define SVC_CONF                                                                              \
	BGPCONF("default", "{serviceClusterIPs: [{cidr: 10.96.0.0/12}], serviceExternalIPs: " \
			   "[{cidr: 192.0.2.0/24}, {cidr: 198.51.100.7/32}], "                \
			   "serviceLoadBalancerIPs: [{cidr: 203.0.113.0/24}]}")

static void test_services(void **state)
{
	const char *yaml = SVC_CONF NODE("a", "10.0.0.11/24", "") NODE(
		"b", "10.0.0.12/24",
		"") "---\napiVersion: v1\nkind: Service\nmetadata: {name: local, namespace: ns}\n"
		    "spec: {type: LoadBalancer, externalTrafficPolicy: Local, clusterIP: 10.96.0.5,"
		    " externalIPs: [192.0.2.5, 172.16.0.1], ports: [{port: 80}]}\n"
		    "status: {loadBalancer: {ingress: [{ip: 203.0.113.5}, {hostname: "
		    "lb.example}]}}\n"
		    "---\napiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\n"
		    "metadata: {name: local-1, namespace: ns, labels: {kubernetes.io/service-name: "
		    "local}}\n"
		    "addressType: IPv4\nendpoints: [{addresses: [10.244.0.5], nodeName: a},"
		    " {addresses: [10.244.1.5], nodeName: b, conditions: {ready: false}}]\n"
		    /* The same name in another namespace must not count. */
		    "---\napiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\n"
		    "metadata: {name: local-1, namespace: other, labels: "
		    "{kubernetes.io/service-name: local}}\n"
		    "addressType: IPv4\nendpoints: [{addresses: [10.244.1.6], nodeName: b}]\n"
		    "---\napiVersion: v1\nkind: Service\nmetadata: {name: pinned, namespace: ns}\n"
		    "spec: {clusterIP: 10.96.0.6, externalIPs: [198.51.100.7], ports: [{port: "
		    "80}]}\n";
	struct world *w = world_new(yaml, false);
	struct bgp_view *v = view_of(w, "a");
	/* Ranges, the Local service's addresses, the single listed external IP. */
	assert_string_equal(statics(v, BGP_V4), "10.96.0.0/12 10.96.0.5/32 192.0.2.0/24 "
						"192.0.2.5/32 198.51.100.7/32 203.0.113.0/24 "
						"203.0.113.5/32");
	assert_int_equal(v->fam[BGP_V4].n_service_ranges, 4);
	bgp_view_free(v);
	v = view_of(w, "b");
	assert_string_equal(statics(v, BGP_V4),
			    "10.96.0.0/12 192.0.2.0/24 198.51.100.7/32 203.0.113.0/24");
	bgp_view_free(v);
	world_free(w);
}

/* An entry without a cidr is accepted and says nothing, as in Calico (issue 16). */
static void test_service_entry_without_cidr(void **state)
{
	const char *yaml =
		BGPCONF("default", "{serviceClusterIPs: [{}, {cidr: 10.96.0.0/12}], "
				   "serviceExternalIPs: [{}]}") NODE("a", "10.0.0.11/24", "");
	struct world *w = world_new(yaml, false);
	struct bgp_view *v = view_of(w, "a");
	assert_string_equal(statics(v, BGP_V4), "10.96.0.0/12");
	assert_int_equal(v->fam[BGP_V4].n_service_ranges, 1);
	bgp_view_free(v);
	world_free(w);
	(void)state;
}

static void test_order_does_not_matter(void **state)
{
	const char *yaml = SVC_CONF LNODE("rr", "{rr: 'y'}", "10.0.0.2/24",
					  ", routeReflectorClusterID: 1.1.1.1")
		NODE("a", "10.0.0.11/24", "") NODE("b", "10.0.0.12/24", "")
			NODE("c", "10.0.0.13/24", "") PEER("p1", "{peerSelector: rr == 'y'}")
				PEER("p2", "{peerIP: 192.0.2.1, asNumber: 1}")
					PEER("p3", "{node: a, peerIP: 192.0.2.1, asNumber: "
						   "2}") "---\napiVersion: "
							 "projectcalico.org/v3\nkind: "
							 "IPPool\nmetadata: {name: z}\n"
							 "spec: {cidr: 10.244.0.0/16}\n"
							 "---\napiVersion: "
							 "projectcalico.org/v3\nkind: "
							 "IPPool\nmetadata: {name: y}\n"
							 "spec: {cidr: 10.243.0.0/16}\n";
	struct world *w1 = world_new(yaml, false), *w2 = world_new(yaml, true);
	static const char *const nodes[] = { "rr", "a", "b" };
	for (size_t i = 0; i < ARRAY_SIZE(nodes); i++) {
		struct bgp_view *v1 = view_of(w1, nodes[i]), *v2 = view_of(w2, nodes[i]);
		struct arena *a = arena_new();
		assert_true(jv_equal(bgp_view_data(v1, a), bgp_view_data(v2, a)));
		arena_free(a);
		bgp_view_free(v1);
		bgp_view_free(v2);
	}
	world_free(w1);
	world_free(w2);
}

static void test_errors_and_problems(void **state)
{
	struct world *w = world_new(
		NODE("a", "10.0.0.11/24", "") PEER(
			"pw", "{peerIP: 192.0.2.1, asNumber: 1, password: "
			      "{env: BRINDLE_TEST_UNSET}}") "---\napiVersion: "
							    "projectcalico.org/v3\nkind: Node\n"
							    "metadata: {name: nobgp}\nspec: {}\n",
		false);
	struct bgp_view *v;
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	w->in.node_name = "missing";
	assert_int_equal(bgp_view_build(&w->in, &v, &err), -ENOENT);
	assert_string_equal(sb_str(&err), "node missing is not in the datastore");
	sb_reset(&err);
	w->in.node_name = "nobgp";
	assert_int_equal(bgp_view_build(&w->in, &v, &err), -ENODATA);
	/* No password source at all: the session is left out and said so. */
	v = view_of(w, "a");
	assert_int_equal(v->fam[BGP_V4].n_sessions, 0);
	assert_int_equal(v->n_problems, 1);
	assert_string_equal(v->problems[0], "bgppeer pw: password cannot be read (no password "
					    "source); no session to 192.0.2.1");
	bgp_view_free(v);
	sb_free(&err);
	world_free(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mesh_passive_and_self),
		cmocka_unit_test(test_route_reflectors),
		cmocka_unit_test(test_dedup_order),
		cmocka_unit_test(test_reverse_and_ports),
		cmocka_unit_test(test_global_passive_only_towards_nodes),
		cmocka_unit_test(test_families),
		cmocka_unit_test(test_blocks_and_pools),
		cmocka_unit_test(test_services),
		cmocka_unit_test(test_service_entry_without_cidr),
		cmocka_unit_test(test_order_does_not_matter),
		cmocka_unit_test(test_errors_and_problems),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
