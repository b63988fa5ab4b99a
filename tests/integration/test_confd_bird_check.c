/*
 * No resource the model accepts can make confd render a configuration that
 * BIRD refuses (the trust review: one bad community in a BGPConfiguration
 * stopped every node that used it). Random clusters of Nodes, BGPConfigurations,
 * BGPPeers and IPPools are drawn from values at and beyond every limit (AS
 * numbers, durations, ports, TTLs, communities, CIDRs, interface patterns,
 * passwords); whatever the model accepts is rendered for a node and checked
 * with the real `bird -p -c`. Reproducible: a fixed seed per round, printed
 * with the offending cluster on a failure.
 */
#include "harness.h"

#include "bgp_view.h"
#include "output.h"
#include "render.h"

#include <brindle/core/yaml.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define ROUNDS 400

static uint64_t rng;

static uint32_t rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng % n);
}

#define PICK(a) ((a)[rnd(ARRAY_SIZE(a))])

static const char *const asns[] = { "64512",	  "65000",	 "1",	 "0",
				    "4294967295", "4294967296",	 "1.10", "65535.65535",
				    "65536.1",	  "99999999999", "64513" };
static const char *const durations[] = { "0s",	   "1s",     "3s",    "90s",	  "120s",
					 "1h",	   "1000h",  "100ms", "4095s",	  "4096s",
					 "65535s", "65536s", "1m30s", "2562047h", "-1s" };
static const char *const v4s[] = { "10.99.0.1",	      "10.99.0.12", "192.0.2.1", "0.0.0.0",
				   "255.255.255.255", "127.0.0.1",  "224.0.0.5", "10.99.0.11" };
static const char *const v6s[] = { "fd00::1", "fd00:99::12", "::", "::1", "ff02::1", "fe80::1" };
static const char *const peer_ips[] = { "10.99.0.1",	 "10.99.0.1:1790", "192.0.2.7:65535",
					"[fd00::7]:179", "fd00::7",	   "10.99.0.12",
					"0.0.0.0",	 "10.99.0.1:0",	   "[fd00::9]:1" };
static const char *const cidrs[] = { "10.244.0.0/16",  "10.96.0.0/12", "0.0.0.0/0",
				     "10.244.1.0/26",  "192.0.2.0/24", "fd00:244::/48",
				     "::/0",	       "10.1.2.3/32",  "fd00::1/128",
				     "203.0.113.0/25", "10.244.0.0/8", "198.51.100.7/31" };
static const char *const communities[] = {
	"65000:100",	  "0:0",      "65535:65535", "65536:1", "99999999999:1", "4294967295:1:1",
	"4294967296:1:1", "65000:1;", "1:2:3:4",     "a:b",	"65000:100:200", "named-one"
};
static const char *const patterns[] = {
	"eth*",	 "docker0",  "a\"b",  "x y", "*",
	"tap\\", "ens[0-9]", "cali*", "a}b", "very-long-interface-pattern"
};
static const char *const passwords[] = {
	"s3cret",
	"with space",
	"a\"b",
	"line\nbreak",
	"\x01ctl",
	"back\\slash",
	"",
	"kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk",
	"kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk",
	"{{mustache}}",
	"'; protocol static x { }; #",
};
static const char *const selectors[] = { "all()", "rr == 'true'", "has(rack)", "!all()",
					 "rack in {'a', 'b'}" };

/* One world as a YAML stream, into @out. */
static void draw_world(struct strbuf *out)
{
	size_t nodes = 2 + rnd(3);
	for (size_t i = 0; i < nodes; i++) {
		sb_addf(out,
			"---\napiVersion: projectcalico.org/v3\nkind: Node\n"
			"metadata: {name: node-%zu, labels: {rr: '%s', rack: %s}}\nspec:\n  bgp:\n",
			i + 1, rnd(3) ? "false" : "true", rnd(2) ? "a" : "b");
		if (i == 0 || rnd(4))
			sb_addf(out, "    ipv4Address: 10.99.0.%zu/24\n", 11 + i);
		if (rnd(3) == 0)
			sb_addf(out, "    ipv6Address: fd00:99::%zu/64\n", 11 + i);
		if (rnd(3) == 0)
			sb_addf(out, "    asNumber: '%s'\n", PICK(asns));
		if (rnd(4) == 0)
			sb_addf(out, "    routeReflectorClusterID: '%s'\n", PICK(v4s));
	}
	size_t configs = rnd(3);
	for (size_t i = 0; i < configs; i++) {
		sb_addf(out,
			"---\napiVersion: projectcalico.org/v3\nkind: BGPConfiguration\n"
			"metadata: {name: %s}\nspec:\n",
			i == 0 ? "default" : "node.node-1");
		if (rnd(2))
			sb_addf(out, "  asNumber: '%s'\n", PICK(asns));
		if (rnd(2))
			sb_addf(out, "  nodeToNodeMeshEnabled: %s\n", rnd(2) ? "true" : "false");
		if (rnd(3) == 0)
			sb_addf(out, "  listenPort: %u\n", rnd(2) ? 179 : 1 + rnd(65535));
		if (rnd(3) == 0)
			sb_addf(out, "  nodeMeshMaxRestartTime: '%s'\n", PICK(durations));
		if (rnd(3) == 0)
			sb_addf(out, "  bindMode: %s\n", rnd(2) ? "NodeIP" : "None");
		if (rnd(3) == 0)
			sb_addf(out, "  logSeverityScreen: %s\n", rnd(2) ? "Debug" : "Info");
		if (rnd(2)) {
			sb_adds(out, "  communities:\n");
			for (size_t k = 0, n = 1 + rnd(3); k < n; k++)
				sb_addf(out, "  - {name: named-%zu, value: '%s'}\n", k,
					PICK(communities));
			sb_adds(out, "  prefixAdvertisements:\n");
			for (size_t k = 0, n = 1 + rnd(3); k < n; k++) {
				const char *c = PICK(communities);
				sb_addf(out, "  - {cidr: '%s', communities: ['%s', named-0]}\n",
					PICK(cidrs), streq(c, "named-one") ? "named-1" : c);
			}
		}
		const char *svc[] = { "serviceClusterIPs", "serviceExternalIPs",
				      "serviceLoadBalancerIPs" };
		for (size_t k = 0; k < 3; k++)
			if (rnd(3) == 0)
				sb_addf(out, "  %s: [{cidr: '%s'}]\n", svc[k], PICK(cidrs));
		if (rnd(3) == 0)
			sb_addf(out, "  ignoredInterfaces: ['%s', '%s']\n", PICK(patterns),
				PICK(patterns));
		if (rnd(3) == 0)
			sb_addf(out, "  nodeMeshPassword: {secretKeyRef: {name: s, key: k%u}}\n",
				rnd(ARRAY_SIZE(passwords)));
	}
	size_t peers = rnd(4);
	for (size_t i = 0; i < peers; i++) {
		sb_addf(out,
			"---\napiVersion: projectcalico.org/v3\nkind: BGPPeer\n"
			"metadata: {name: peer-%zu}\nspec:\n",
			i);
		if (rnd(4) == 0)
			sb_addf(out, "  peerSelector: \"%s\"\n", PICK(selectors));
		else
			sb_addf(out, "  peerIP: '%s'\n  asNumber: '%s'\n", PICK(peer_ips),
				PICK(asns));
		if (rnd(2))
			sb_addf(out, "  node: node-1\n");
		else if (rnd(2))
			sb_addf(out, "  nodeSelector: \"%s\"\n", PICK(selectors));
		if (rnd(3) == 0)
			sb_addf(out, "  keepaliveTime: '%s'\n", PICK(durations));
		if (rnd(3) == 0)
			sb_addf(out, "  maxRestartTime: '%s'\n", PICK(durations));
		if (rnd(3) == 0)
			sb_addf(out, "  ttlSecurity: %u\n", rnd(300));
		if (rnd(3) == 0)
			sb_addf(out, "  numAllowedLocalASNumbers: %u\n", rnd(12));
		if (rnd(3) == 0)
			sb_addf(out, "  localASNumber: '%s'\n", PICK(asns));
		if (rnd(3) == 0)
			sb_addf(out, "  sourceAddress: %s\n", rnd(2) ? "UseNodeIP" : "None");
		if (rnd(3) == 0)
			sb_addf(out, "  nextHopMode: %s\n", rnd(2) ? "Self" : "Keep");
		if (rnd(3) == 0)
			sb_addf(out, "  keepOriginalNextHop: true\n");
		if (rnd(3) == 0)
			sb_addf(out, "  reachableBy: '%s'\n", rnd(2) ? PICK(v4s) : PICK(v6s));
		if (rnd(3) == 0)
			sb_addf(out, "  reversePeering: %s\n", rnd(2) ? "Manual" : "Auto");
		if (rnd(2))
			sb_addf(out, "  password: {secretKeyRef: {name: s, key: k%u}}\n",
				rnd(ARRAY_SIZE(passwords)));
	}
	size_t pools = 1 + rnd(3);
	for (size_t i = 0; i < pools; i++) {
		sb_addf(out,
			"---\napiVersion: projectcalico.org/v3\nkind: IPPool\n"
			"metadata: {name: pool-%zu}\nspec: {cidr: '%s'",
			i, PICK(cidrs));
		if (rnd(2))
			sb_addf(out, ", vxlanMode: %s", rnd(2) ? "Always" : "CrossSubnet");
		if (rnd(3) == 0)
			sb_addf(out, ", ipipMode: CrossSubnet");
		if (rnd(3) == 0)
			sb_addf(out, ", disableBGPExport: true");
		if (rnd(3) == 0)
			sb_addf(out, ", blockSize: %u", rnd(130));
		sb_adds(out, "}\n");
	}
}

/* Passwords of the world: secret "s", key "k<n>" is passwords[n]. */
static int world_password(void *ctx, const struct br_bgp_password *p, struct arena *a,
			  const char **out, struct strbuf *err)
{
	unsigned n;
	if (!p->secret_key_ref || sscanf(p->secret_key_ref->key, "k%u", &n) != 1 ||
	    n >= ARRAY_SIZE(passwords)) {
		sb_adds(err, "no such secret");
		return -ENOENT;
	}
	*out = arena_strdup(a, passwords[n]);
	return 0;
}

#define COLLECT(kind_id, type, arr, cnt)                            \
	do {                                                        \
		arr = xcalloc(n + 1, sizeof(*arr));                 \
		for (size_t i = 0; i < n; i++)                      \
			if (objs[i]->kind->id == kind_id)           \
				arr[cnt++] = (const type *)objs[i]; \
	} while (0)

static void test_random_clusters_pass_birds_check(void **state)
{
	struct render_templates *t;
	struct strbuf err = STRBUF_INIT, world = STRBUF_INIT;
	sb_init(&err);
	sb_init(&world);
	if (templates_load(test_source_path("bgp-templates"), &t, &err) < 0)
		fail_msg("%s", sb_str(&err));
	char dir[] = "/tmp/brindle-birdcheck-XXXXXX";
	assert_non_null(mkdtemp(dir));
	size_t docs_taken = 0, docs_refused = 0, sessions = 0, problems = 0;
	for (unsigned round = 0; round < ROUNDS; round++) {
		rng = 0x9e3779b97f4a7c15ull * (round + 1);
		sb_reset(&world);
		draw_world(&world);
		/* What the model takes, document by document (a refused one is left out). */
		struct arena *ya = arena_new();
		struct jv **docs;
		size_t ndocs;
		if (yaml_parse_all(ya, world.buf, world.len, &docs, &ndocs, &err) < 0) {
			FILE *f = fopen("/tmp/brindle-birdcheck-world.yaml", "w");
			if (f) {
				fputs(world.buf, f);
				fclose(f);
			}
			fail_msg("round %u: the generator wrote bad YAML (/tmp/brindle-birdcheck-"
				 "world.yaml): %s",
				 round, sb_str(&err));
		}
		struct br_object **objs = xcalloc(ndocs + 1, sizeof(*objs));
		size_t n = 0;
		for (size_t i = 0; i < ndocs; i++) {
			struct model_errors errs = { 0 };
			struct br_object *o = docs[i] ? model_decode(docs[i], true, &errs) : NULL;
			if (o)
				objs[n++] = o;
			docs_taken += o != NULL;
			docs_refused += o == NULL && docs[i];
			model_errors_clear(&errs);
		}
		struct bgp_input in = { .node_name = "node-1", .password = world_password };
		const struct br_node **nodes;
		const struct br_bgpconfig **configs;
		const struct br_bgppeer **peers;
		const struct br_ippool **pools;
		COLLECT(KIND_NODE, struct br_node, nodes, in.n_nodes);
		COLLECT(KIND_BGPCONFIGURATION, struct br_bgpconfig, configs, in.n_configs);
		COLLECT(KIND_BGPPEER, struct br_bgppeer, peers, in.n_peers);
		COLLECT(KIND_IPPOOL, struct br_ippool, pools, in.n_pools);
		in.nodes = nodes;
		in.configs = configs;
		in.peers = peers;
		in.pools = pools;
		struct bgp_view *v;
		sb_reset(&err);
		if (bgp_view_build(&in, &v, &err) == 0) {
			struct arena *a = arena_new();
			struct render_output out;
			if (render_config(t, bgp_view_data(v, a), &out, &err) < 0)
				fail_msg("round %u: %s\n%s", round, sb_str(&err), world.buf);
			for (size_t i = 0; i < out.n; i++) {
				char path[512];
				snprintf(path, sizeof(path), "%s/%s", dir, out.files[i].name);
				FILE *f = fopen(path, "w");
				assert_non_null(f);
				fwrite(out.files[i].text.buf, 1, out.files[i].text.len, f);
				fclose(f);
			}
			char main_path[512];
			snprintf(main_path, sizeof(main_path), "%s/%s", dir, RENDER_MAIN_FILE);
			sb_reset(&err);
			if (bird_check("bird", main_path, 10000, &err) < 0)
				fail_msg("round %u: BIRD refuses what confd rendered from "
					 "resources the model accepted: %s\nresources:\n%s",
					 round, sb_str(&err), world.buf);
			for (int f = 0; f < 2; f++)
				sessions += v->fam[f].n_sessions;
			problems += v->n_problems;
			render_output_clear(&out);
			arena_free(a);
			bgp_view_free(v);
		}
		free((void *)nodes);
		free((void *)configs);
		free((void *)peers);
		free((void *)pools);
		model_free_all(objs, n);
		arena_free(ya);
	}
	print_message("%d clusters: %zu resources taken, %zu refused by the model, %zu sessions "
		      "rendered, %zu left out by the view; every configuration passed bird -p\n",
		      ROUNDS, docs_taken, docs_refused, sessions, problems);
	/* The generator must reach both sides of the limits. */
	assert_true(docs_refused > 50);
	assert_true(sessions > 200);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
	render_templates_free(t);
	sb_free(&err);
	sb_free(&world);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random_clusters_pass_birds_check),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
