/* rtnetlink encode/parse round trips, and batches against the recording backend. */
#include "harness.h"

#include <brindle/sys/nl.h>
#include <brindle/testing/nl_record.h>

#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>
#include <stdio.h>
#include <stdlib.h>

static const struct nlmsghdr *msg(const struct nl_batch *b, size_t i)
{
	size_t len, off = 0;
	const uint8_t *d = nl_batch_data(b, &len);
	for (size_t k = 0; k < i; k++)
		off += ((const struct nlmsghdr *)(d + off))->nlmsg_len;
	return (const struct nlmsghdr *)(d + off);
}

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

static void
test_route_roundtrip(void **state)
{
	struct nl_batch *b = nl_batch_new();
	struct nl_route in[] = {
		{ .protocol = 80,
		  .scope = RT_SCOPE_LINK,
		  .type = RTN_UNICAST,
		  .table = 254,
		  .dst = parse_cidr("10.244.1.7/32"),
		  .oif = 9 },
		{ .protocol = 80,
		  .type = RTN_BLACKHOLE,
		  .table = 254,
		  .dst = parse_cidr("10.244.1.0/26") },
		{ .protocol = 80,
		  .type = RTN_UNICAST,
		  .table = 1000,
		  .dst = parse_cidr("10.244.2.0/26"),
		  .gw = IP("10.244.2.0"),
		  .oif = 3,
		  .onlink = true,
		  .priority = 1024,
		  .mtu = 1450 },
		{ .protocol = 80,
		  .type = RTN_UNICAST,
		  .table = 254,
		  .dst = parse_cidr("fd00:1::/122"),
		  .gw = IP("fe80::1"),
		  .oif = 4 },
	};
	for (size_t i = 0; i < ARRAY_SIZE(in); i++)
		nl_batch_route(b, NL_REPLACE, &in[i]);
	assert_int_equal(nl_batch_count(b), ARRAY_SIZE(in));
	for (size_t i = 0; i < ARRAY_SIZE(in); i++) {
		struct nl_route out;
		const struct nlmsghdr *h = msg(b, i);
		assert_int_equal(h->nlmsg_type, RTM_NEWROUTE);
		assert_true(h->nlmsg_flags & NLM_F_REPLACE);
		assert_int_equal(nl_parse_route(h, &out), 0);
		in[i].family = in[i].dst.ip.family;
		assert_true(nl_route_equal(&in[i], &out));
	}
	assert_string_equal(nl_batch_describe(b, 2), "route replace 10.244.2.0/26 via 10.244.2.0 "
						     "dev #3 table 1000 proto 80 onlink metric "
						     "1024 mtu 1450");
	nl_batch_free(b);
}

static void test_link_neigh_addr_roundtrip(void **state)
{
	struct nl_batch *b = nl_batch_new();
	struct nl_link vx;
	nl_link_init(&vx);
	snprintf(vx.name, sizeof(vx.name), "vxlan.calico");
	snprintf(vx.kind, sizeof(vx.kind), "vxlan");
	vx.vxlan_id = 4096;
	vx.vxlan_port = 4789;
	vx.vxlan_local = IP("192.168.100.11");
	vx.vxlan_link = 2;
	vx.mtu = 1450;
	vx.flags = IFF_UP;
	uint8_t mac[6] = { 0x66, 0x01, 0x02, 0x03, 0x04, 0x05 };
	memcpy(vx.mac, mac, 6);
	vx.has_mac = true;
	nl_batch_link(b, NL_ADD, &vx);
	struct nl_neigh fdb = { .family = AF_BRIDGE,
				.ifindex = 7,
				.dst = IP("192.168.100.12"),
				.has_lladdr = true,
				.state = NUD_PERMANENT,
				.flags = NTF_SELF };
	memcpy(fdb.lladdr, mac, 6);
	nl_batch_neigh(b, NL_REPLACE, &fdb);
	struct nl_addr a = { .ifindex = 7, .addr = parse_cidr("10.244.0.1/32") };
	nl_batch_addr(b, NL_ADD, &a);

	struct nl_link l;
	assert_int_equal(nl_parse_link(msg(b, 0), &l), 0);
	assert_string_equal(l.name, "vxlan.calico");
	assert_string_equal(l.kind, "vxlan");
	assert_int_equal(l.vxlan_id, 4096);
	assert_int_equal(l.vxlan_port, 4789);
	assert_true(ip_equal(&l.vxlan_local, &vx.vxlan_local));
	assert_int_equal(l.vxlan_link, 2);
	assert_false(l.vxlan_learning);
	assert_int_equal(l.mtu, 1450);
	assert_memory_equal(l.mac, mac, 6);
	struct nl_neigh n;
	assert_int_equal(nl_parse_neigh(msg(b, 1), &n), 0);
	assert_int_equal(n.family, AF_BRIDGE);
	assert_true(ip_equal(&n.dst, &fdb.dst));
	assert_int_equal(n.flags, NTF_SELF);
	assert_int_equal(n.state, NUD_PERMANENT);
	struct nl_addr out;
	assert_int_equal(nl_parse_addr(msg(b, 2), &out), 0);
	assert_int_equal(out.ifindex, 7);
	assert_int_equal(cidr_cmp(&out.addr, &a.addr), 0);
	/* Sequence numbers are consecutive from the batch's base. */
	nl_batch_set_seq(b, 500);
	assert_int_equal(msg(b, 0)->nlmsg_seq, 500);
	assert_int_equal(msg(b, 2)->nlmsg_seq, 502);
	nl_batch_free(b);
}

static void test_parse_rejects_short(void **state)
{
	uint8_t buf[64] = { 0 };
	struct nlmsghdr *h = (struct nlmsghdr *)buf;
	h->nlmsg_len = sizeof(*h);
	struct nl_route r;
	struct nl_link l;
	struct nl_neigh n;
	struct nl_addr a;
	assert_int_equal(nl_parse_route(h, &r), -EINVAL);
	assert_int_equal(nl_parse_link(h, &l), -EINVAL);
	assert_int_equal(nl_parse_neigh(h, &n), -EINVAL);
	assert_int_equal(nl_parse_addr(h, &a), -EINVAL);
}

static int add_veth(struct nl *nl, const char *name, bool up)
{
	struct nl_batch *b = nl_batch_new();
	struct nl_link l;
	nl_link_init(&l);
	snprintf(l.name, sizeof(l.name), "%s", name);
	snprintf(l.kind, sizeof(l.kind), "veth");
	l.flags = up ? IFF_UP : 0;
	nl_batch_link(b, NL_ADD, &l);
	assert_int_equal(nl_apply(nl, b, NULL), 0);
	nl_batch_free(b);
	struct nl_link_list links = { 0 };
	assert_int_equal(nl_dump_links(nl, &links), 0);
	int idx = nl_link_by_name(&links, name)->ifindex;
	nl_link_list_free(&links);
	return idx;
}

static void test_recording_kernel(void **state)
{
	struct nl *nl = nl_open_recording();
	int up = add_veth(nl, "cali1", true), down = add_veth(nl, "cali2", false);
	struct nl_batch *b = nl_batch_new();
	struct nl_route r1 = { .protocol = 80,
			       .scope = RT_SCOPE_LINK,
			       .type = RTN_UNICAST,
			       .dst = parse_cidr("10.0.0.1/32"),
			       .oif = up };
	struct nl_route r2 = r1, r3 = r1,
			bh = { .protocol = 80,
			       .type = RTN_BLACKHOLE,
			       .dst = parse_cidr("10.0.0.0/26") };
	r2.dst = parse_cidr("10.0.0.2/32");
	r2.oif = down; /* ENETDOWN */
	r3.dst = parse_cidr("10.0.0.3/32");
	r3.oif = 99; /* ENODEV */
	nl_batch_route(b, NL_ADD, &r1);
	nl_batch_route(b, NL_ADD, &r2);
	nl_batch_route(b, NL_ADD, &r3);
	nl_batch_route(b, NL_ADD, &bh);
	nl_batch_route(b, NL_ADD, &r1); /* EEXIST */
	int errs[5];
	assert_int_equal(nl_apply(nl, b, errs), 3);
	assert_int_equal(errs[0], 0);
	assert_int_equal(errs[1], -ENETDOWN);
	assert_int_equal(errs[2], -ENODEV);
	assert_int_equal(errs[3], 0);
	assert_int_equal(errs[4], -EEXIST);
	/* The log shows what was applied, with names. */
	assert_string_equal(nl_record_entry(nl, 2),
			    "route add 10.0.0.1/32 dev cali1 proto 80 scope link");
	assert_string_equal(nl_record_entry(nl, 3), "route add blackhole 10.0.0.0/26 proto 80");

	/* Dumps filter by protocol; a foreign route stays out of ours. */
	nl_batch_reset(b);
	struct nl_route foreign = r1;
	foreign.dst = parse_cidr("10.0.0.9/32");
	foreign.protocol = RTPROT_BOOT;
	nl_batch_route(b, NL_ADD, &foreign);
	assert_int_equal(nl_apply(nl, b, NULL), 0);
	struct nl_route_list routes = { 0 };
	struct nl_route_filter f = { .protocol = 80 };
	assert_int_equal(nl_dump_routes(nl, &f, &routes), 0);
	assert_int_equal(routes.n, 2);
	assert_int_equal(nl_dump_routes(nl, NULL, &routes), 0);
	assert_int_equal(routes.n, 3);
	nl_route_list_free(&routes);

	/* Replace, delete, a failure injected into one message of a batch. */
	nl_batch_reset(b);
	struct nl_route moved = r1;
	moved.type = RTN_BLACKHOLE;
	moved.oif = 0;
	moved.scope = 0;
	nl_batch_route(b, NL_REPLACE, &moved);
	nl_batch_route(b, NL_DEL, &bh);
	nl_batch_route(b, NL_DEL, &bh);
	nl_record_fail_next(nl, "10.0.0.9", -EPERM);
	nl_batch_route(b, NL_DEL, &foreign);
	assert_int_equal(nl_apply(nl, b, errs), 2);
	assert_int_equal(errs[0], 0);
	assert_int_equal(errs[1], 0);
	assert_int_equal(errs[2], -ESRCH);
	assert_int_equal(errs[3], -EPERM);

	/* Deleting a link takes its routes and neighbours with it. */
	nl_batch_reset(b);
	struct nl_neigh n = { .family = AF_INET,
			      .ifindex = up,
			      .dst = IP("10.0.0.1"),
			      .has_lladdr = true,
			      .state = NUD_PERMANENT,
			      .protocol = 80 };
	nl_batch_neigh(b, NL_REPLACE, &n);
	assert_int_equal(nl_apply(nl, b, NULL), 0);
	struct nl_neigh_list neighs = { 0 };
	assert_int_equal(nl_dump_neighs(nl, AF_INET, up, &neighs), 0);
	assert_int_equal(neighs.n, 1);
	assert_int_equal(neighs.v[0].protocol, 80);
	nl_batch_reset(b);
	struct nl_link gone;
	nl_link_init(&gone);
	gone.ifindex = up;
	nl_batch_link(b, NL_DEL, &gone);
	assert_int_equal(nl_apply(nl, b, NULL), 0);
	assert_int_equal(nl_dump_neighs(nl, AF_INET, 0, &neighs), 0);
	assert_int_equal(neighs.n, 0);
	nl_neigh_list_free(&neighs);
	nl_batch_free(b);
	nl_close(nl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_route_roundtrip),
		cmocka_unit_test(test_link_neigh_addr_roundtrip),
		cmocka_unit_test(test_parse_rejects_short),
		cmocka_unit_test(test_recording_kernel),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
