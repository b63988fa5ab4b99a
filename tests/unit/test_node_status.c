/* CalicoNodeStatus from BIRD's replies: the classes asked for, parsed as BIRD 2 prints them. */
#include "harness.h"

#include "node_status.h"

#include <brindle/core/arena.h>

#include <string.h>

static struct bird_reply *reply(struct arena *a, const char *text)
{
	struct bird_reply *r = arena_alloc(a, sizeof(*r));
	size_t used;
	assert_int_equal(bird_reply_parse(text, strlen(text), a, r, &used), 1);
	return r;
}

static void test_fill(void **state)
{
	(void)state;
	struct arena *a = arena_new();
	struct bird_reply *st = reply(a, "1000-BIRD 2.0.12\n"
					 "1011-Router ID is 192.168.100.11\n"
					 " Hostname is node1\n"
					 " Current server time is 2026-11-26 10:00:00.000\n"
					 " Last reboot on 2026-11-26 09:00:00.000\n"
					 " Last reconfiguration on 2026-11-26 09:01:00.000\n"
					 "0013 Daemon is up and running\n");
	struct bird_reply *pr = reply(
		a, "2002-Name       Proto      Table      State  Since         Info\n"
		   "1002-Mesh_192_168_100_12 BGP        ---        up     09:00:05.123  "
		   "Established   \n"
		   " Global_192_168_100_1_port_1790 BGP ---  start  09:00:06.000  Active        "
		   "Socket: Connection refused\n"
		   " Mesh_fd00_99__12 BGP        ---        up     09:00:05.123  Established   \n"
		   " brindle_kernel4 Kernel     master4    up     09:00:00.000  \n"
		   "0000 \n");
	struct bird_reply *rt = reply(
		a, "1007-Table master4:\n"
		   " 10.244.1.0/26        unicast [Mesh_192_168_100_12 09:00:05.123] * (100) [i]\n"
		   " \tvia 192.168.100.12 on eth0\n"
		   " 10.244.0.0/26        blackhole [brindle_static4 09:00:00.000] * (200)\n"
		   " 10.96.0.0/12         unicast [Global_192_168_100_1_port_1790 09:00:06.000] "
		   "(100) [AS65001i]\n"
		   " \tvia 192.168.100.1 on eth0\n"
		   "0000 \n");
	const char *classes[] = { "Agent", "BGP", "Routes" };
	struct br_cns_spec spec = { .node = "node1", .classes = classes, .n_classes = 3 };
	struct br_cns_status s;
	node_status_fill(a, &spec, st, pr, rt, "2026-11-26T10:00:00Z", &s);
	assert_string_equal(s.last_updated, "2026-11-26T10:00:00Z");
	assert_string_equal(s.agent.bird_v4.state, "Ready");
	assert_string_equal(s.agent.bird_v4.version, "2.0.12");
	assert_string_equal(s.agent.bird_v4.router_id, "192.168.100.11");
	assert_string_equal(s.agent.bird_v4.last_boot_time, "2026-11-26 09:00:00.000");
	assert_string_equal(s.agent.bird_v4.last_reconfiguration_time, "2026-11-26 09:01:00.000");
	assert_int_equal(s.bgp.established_v4, 1);
	assert_int_equal(s.bgp.not_established_v4, 1);
	assert_int_equal(s.bgp.established_v6, 1);
	assert_int_equal(s.bgp.n_peers_v4, 2);
	assert_string_equal(s.bgp.peers_v4[0].peer_ip, "192.168.100.12");
	assert_string_equal(s.bgp.peers_v4[0].type, "NodeMesh");
	assert_string_equal(s.bgp.peers_v4[0].state, "Established");
	assert_string_equal(s.bgp.peers_v4[1].peer_ip, "192.168.100.1");
	assert_string_equal(s.bgp.peers_v4[1].type, "GlobalPeer");
	assert_string_equal(s.bgp.peers_v4[1].state, "Active");
	assert_string_equal(s.bgp.peers_v6[0].peer_ip, "fd00:99::12");
	assert_int_equal(s.routes.n_routes_v4, 3);
	assert_string_equal(s.routes.routes_v4[0].destination, "10.244.1.0/26");
	assert_string_equal(s.routes.routes_v4[0].type, "FIB");
	assert_string_equal(s.routes.routes_v4[0].gateway, "192.168.100.12");
	assert_string_equal(s.routes.routes_v4[0].iface, "eth0");
	assert_string_equal(s.routes.routes_v4[0].learned_from.source_type, "NodeMesh");
	assert_string_equal(s.routes.routes_v4[0].learned_from.peer_ip, "192.168.100.12");
	assert_string_equal(s.routes.routes_v4[1].learned_from.source_type, "Static");
	assert_string_equal(s.routes.routes_v4[2].type, "RIB");
	assert_string_equal(s.routes.routes_v4[2].learned_from.source_type, "BGPPeer");

	/* Only what is asked; BIRD not answering: NotReady */
	const char *agent[] = { "Agent" };
	struct br_cns_spec only = { .node = "node1", .classes = agent, .n_classes = 1 };
	node_status_fill(a, &only, NULL, pr, rt, "2026-11-26T10:00:10Z", &s);
	assert_string_equal(s.agent.bird_v4.state, "NotReady");
	assert_int_equal(s.bgp.n_peers_v4, 0);
	assert_int_equal(s.routes.n_routes_v4, 0);
	arena_free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fill),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
