/*
 * The kernel rtnetlink backend against the real kernel. The test runs in a
 * network namespace of its own (unshare), so the machine's namespace is
 * never touched; a second namespace for a moved veth peer belongs to a child
 * process that exits with the test.
 */
#include "harness.h"

#include <brindle/sys/nl.h>

#include <errno.h>
#include <fcntl.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

static struct br_cidr parse_cidr(const char *s)
{
	struct br_cidr c;
	assert_int_equal(cidr_parse(s, true, &c), 0);
	return c;
}

static struct br_ip IP(const char *s) {
	struct br_ip ip;
	assert_int_equal(ip_parse(s, &ip), 0);
	return ip;
}

static int
ifindex_of(struct nl *nl, const char *name)
{
	struct nl_link_list links = { 0 };
	assert_int_equal(nl_dump_links(nl, &links), 0);
	const struct nl_link *l = nl_link_by_name(&links, name);
	int idx = l ? l->ifindex : 0;
	nl_link_list_free(&links);
	return idx;
}

static void apply_ok(struct nl *nl, struct nl_batch *b)
{
	int errs[64] = { 0 };
	int r = nl_apply(nl, b, nl_batch_count(b) <= 64 ? errs : NULL);
	if (r != 0) {
		for (size_t i = 0; i < nl_batch_count(b) && i < 64; i++)
			if (errs[i])
				print_error("%s: %s\n", nl_batch_describe(b, i),
					    strerror(-errs[i]));
		fail_msg("batch failed: %d", r);
	}
	nl_batch_reset(b);
}

static int setup(void **state)
{
	if (unshare(CLONE_NEWNET) < 0) {
		print_error("unshare(CLONE_NEWNET): %s (needs root)\n", strerror(errno));
		return -1;
	}
	return 0;
}

static void test_links_routes_neighs(void **state)
{
	struct nl *nl;
	assert_int_equal(nl_open_kernel(&nl), 0);
	struct nl_batch *b = nl_batch_new();
	struct nl_link lo;
	nl_link_init(&lo);
	lo.ifindex = 1;
	lo.flags = IFF_UP;
	nl_batch_link(b, NL_SET, &lo);

	struct nl_link veth;
	nl_link_init(&veth);
	snprintf(veth.name, sizeof(veth.name), "cali0a");
	snprintf(veth.kind, sizeof(veth.kind), "veth");
	snprintf(veth.peer_name, sizeof(veth.peer_name), "peer0a");
	veth.flags = IFF_UP;
	uint8_t ee[6] = { 0xee, 0xee, 0xee, 0xee, 0xee, 0xee };
	memcpy(veth.mac, ee, 6);
	veth.has_mac = true;
	nl_batch_link(b, NL_ADD, &veth);
	apply_ok(nl, b);
	int cali = ifindex_of(nl, "cali0a"), peer = ifindex_of(nl, "peer0a");
	assert_true(cali > 0 && peer > 0);

	struct nl_link up;
	nl_link_init(&up);
	up.ifindex = peer;
	up.flags = IFF_UP;
	nl_batch_link(b, NL_SET, &up);
	struct nl_addr a = { .ifindex = peer, .addr = parse_cidr("192.168.100.11/24") };
	nl_batch_addr(b, NL_ADD, &a);
	apply_ok(nl, b);

	struct nl_link vx;
	nl_link_init(&vx);
	snprintf(vx.name, sizeof(vx.name), "vxlan.calico");
	snprintf(vx.kind, sizeof(vx.kind), "vxlan");
	vx.vxlan_id = 4096;
	vx.vxlan_port = 4789;
	vx.vxlan_local = IP("192.168.100.11");
	vx.vxlan_link = peer;
	vx.mtu = 1450;
	vx.flags = IFF_UP;
	nl_batch_link(b, NL_ADD, &vx);
	apply_ok(nl, b);

	struct nl_link_list links = { 0 };
	assert_int_equal(nl_dump_links(nl, &links), 0);
	const struct nl_link *got = nl_link_by_name(&links, "vxlan.calico");
	assert_non_null(got);
	assert_string_equal(got->kind, "vxlan");
	assert_int_equal(got->vxlan_id, 4096);
	assert_int_equal(got->vxlan_port, 4789);
	assert_int_equal(got->vxlan_link, peer);
	assert_false(got->vxlan_learning);
	assert_int_equal(got->mtu, 1450);
	int vxi = got->ifindex;
	got = nl_link_by_name(&links, "cali0a");
	assert_string_equal(got->kind, "veth");
	assert_memory_equal(got->mac, ee, 6);
	assert_true(got->flags & IFF_UP);
	nl_link_list_free(&links);

	/* Routes: ours (protocol 80), and a foreign one the filtered dump leaves out. */
	struct nl_route pod = { .protocol = 80,
				.scope = RT_SCOPE_LINK,
				.type = RTN_UNICAST,
				.table = RT_TABLE_MAIN,
				.dst = parse_cidr("10.244.1.7/32"),
				.oif = cali };
	struct nl_route bh = { .protocol = 80,
			       .type = RTN_BLACKHOLE,
			       .table = RT_TABLE_MAIN,
			       .dst = parse_cidr("10.244.1.0/26") };
	struct nl_route tun = { .protocol = 80,
				.type = RTN_UNICAST,
				.table = RT_TABLE_MAIN,
				.dst = parse_cidr("10.244.2.0/26"),
				.gw = IP("10.244.2.0"),
				.oif = vxi,
				.onlink = true };
	struct nl_route foreign = pod;
	foreign.dst = parse_cidr("10.244.1.8/32");
	foreign.protocol = RTPROT_BOOT;
	nl_batch_route(b, NL_REPLACE, &pod);
	nl_batch_route(b, NL_REPLACE, &bh);
	nl_batch_route(b, NL_REPLACE, &tun);
	nl_batch_route(b, NL_ADD, &foreign);
	apply_ok(nl, b);
	struct nl_route_list routes = { 0 };
	struct nl_route_filter f = { .family = AF_INET, .table = RT_TABLE_MAIN, .protocol = 80 };
	assert_int_equal(nl_dump_routes(nl, &f, &routes), 0);
	assert_int_equal(routes.n, 3);
	bool seen_tun = false;
	for (size_t i = 0; i < routes.n; i++) {
		pod.family = bh.family = tun.family = AF_INET;
		if (nl_route_same_key(&routes.v[i], &tun)) {
			assert_true(routes.v[i].onlink);
			assert_true(ip_equal(&routes.v[i].gw, &tun.gw));
			seen_tun = true;
		}
	}
	assert_true(seen_tun);

	/* One bad message fails alone; the rest of the batch is applied. */
	struct nl_route bad = pod;
	bad.dst = parse_cidr("10.244.1.9/32");
	bad.oif = 999;
	struct nl_route ok = pod;
	ok.dst = parse_cidr("10.244.1.10/32");
	nl_batch_route(b, NL_ADD, &bad);
	nl_batch_route(b, NL_ADD, &ok);
	nl_batch_route(b, NL_ADD, &pod); /* exists */
	int errs[3];
	assert_int_equal(nl_apply(nl, b, errs), 2);
	assert_int_equal(errs[0], -ENODEV);
	assert_int_equal(errs[1], 0);
	assert_int_equal(errs[2], -EEXIST);
	nl_batch_reset(b);

	/* A permanent neighbour carrying our protocol, and an FDB entry on the VTEP. */
	struct nl_neigh n = { .family = AF_INET,
			      .ifindex = cali,
			      .dst = IP("10.244.1.7"),
			      .has_lladdr = true,
			      .state = NUD_PERMANENT,
			      .protocol = 80 };
	uint8_t podmac[6] = { 0x0a, 0x58, 0x0a, 0xf4, 0x01, 0x07 };
	memcpy(n.lladdr, podmac, 6);
	struct nl_neigh fdb = { .family = AF_BRIDGE,
				.ifindex = vxi,
				.dst = IP("192.168.100.12"),
				.has_lladdr = true,
				.state = NUD_PERMANENT,
				.flags = NTF_SELF };
	memcpy(fdb.lladdr, podmac, 6);
	nl_batch_neigh(b, NL_REPLACE, &n);
	nl_batch_neigh(b, NL_REPLACE, &fdb);
	apply_ok(nl, b);
	struct nl_neigh_list neighs = { 0 };
	assert_int_equal(nl_dump_neighs(nl, AF_INET, cali, &neighs), 0);
	assert_int_equal(neighs.n, 1);
	assert_int_equal(neighs.v[0].protocol, 80);
	assert_true(neighs.v[0].state & NUD_PERMANENT);
	assert_memory_equal(neighs.v[0].lladdr, podmac, 6);
	assert_int_equal(nl_dump_neighs(nl, AF_BRIDGE, vxi, &neighs), 0);
	bool found = false;
	for (size_t i = 0; i < neighs.n; i++)
		found |= ip_equal(&neighs.v[i].dst, &fdb.dst) &&
			 memcmp(neighs.v[i].lladdr, podmac, 6) == 0;
	assert_true(found);

	/* Deleting ours leaves the foreign route. */
	nl_batch_route(b, NL_DEL, &pod);
	nl_batch_route(b, NL_DEL, &ok);
	apply_ok(nl, b);
	struct nl_route_filter any = { .family = AF_INET, .table = RT_TABLE_MAIN };
	assert_int_equal(nl_dump_routes(nl, &any, &routes), 0);
	found = false;
	for (size_t i = 0; i < routes.n; i++)
		found |= routes.v[i].protocol == RTPROT_BOOT &&
			 cidr_cmp(&routes.v[i].dst, &foreign.dst) == 0;
	assert_true(found);

	nl_neigh_list_free(&neighs);
	nl_route_list_free(&routes);
	nl_batch_free(b);
	nl_close(nl);
}

static void test_big_batch(void **state)
{
	struct nl *nl;
	assert_int_equal(nl_open_kernel(&nl), 0);
	int cali = ifindex_of(nl, "cali0a");
	assert_true(cali > 0);
	struct nl_batch *b = nl_batch_new();
	for (uint32_t i = 0; i < 5000; i++) {
		struct nl_route r = { .protocol = 80,
				      .scope = RT_SCOPE_LINK,
				      .type = RTN_UNICAST,
				      .table = 100,
				      .oif = cali };
		r.dst.ip = ip4_from_u32(0x0a640000u + i);
		r.dst.len = 32;
		nl_batch_route(b, NL_REPLACE, &r);
	}
	assert_int_equal(nl_apply(nl, b, NULL), 0);
	struct nl_route_list routes = { 0 };
	struct nl_route_filter f = { .family = AF_INET, .table = 100, .protocol = 80 };
	assert_int_equal(nl_dump_routes(nl, &f, &routes), 0);
	assert_int_equal(routes.n, 5000);
	nl_route_list_free(&routes);
	nl_batch_free(b);
	nl_close(nl);
}

static void test_other_namespace(void **state)
{
	/* A child holds a second namespace; a veth peer moves into it. */
	int pipefd[2];
	assert_int_equal(pipe(pipefd), 0);
	pid_t child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (unshare(CLONE_NEWNET) < 0)
			_exit(1);
		ssize_t w = write(pipefd[1], "x", 1);
		(void)w;
		pause();
		_exit(0);
	}
	char c;
	assert_int_equal(read(pipefd[0], &c, 1), 1);
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/ns/net", child);
	int nsfd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(nsfd >= 0);

	struct nl *here, *there;
	assert_int_equal(nl_open_kernel(&here), 0);
	assert_int_equal(nl_open_kernel_netns(path, &there), 0);
	struct nl_batch *b = nl_batch_new();
	struct nl_link veth;
	nl_link_init(&veth);
	snprintf(veth.name, sizeof(veth.name), "cali0b");
	snprintf(veth.kind, sizeof(veth.kind), "veth");
	snprintf(veth.peer_name, sizeof(veth.peer_name), "eth0");
	veth.peer_netns_fd = nsfd;
	nl_batch_link(b, NL_ADD, &veth);
	assert_int_equal(nl_apply(here, b, NULL), 0);
	assert_true(ifindex_of(here, "cali0b") > 0);
	assert_int_equal(ifindex_of(here, "eth0"), 0);
	assert_true(ifindex_of(there, "eth0") > 0);
	assert_int_equal(ifindex_of(there, "cali0b"), 0);
	nl_batch_free(b);
	nl_close(here);
	nl_close(there);
	close(nsfd);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	close(pipefd[0]);
	close(pipefd[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_links_routes_neighs),
		cmocka_unit_test(test_big_batch),
		cmocka_unit_test(test_other_namespace),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
