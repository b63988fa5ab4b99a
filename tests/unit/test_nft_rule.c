/*
 * Rule text -> nf_tables expressions (lib/core/nft_rule.c), in the debug form
 * nft --debug=netlink prints. What the kernel and nft make of them is the
 * netns test's business (tests/netns/nft_backend.sh); these pin the
 * translation of each construct of the subset.
 */
#include "harness.h"
#include "nft_elems.h"

#include <brindle/core/nft_rule.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *debug_form_af(int af, const char *text, struct nft_rule_ir *ir)
{
	struct strbuf err = STRBUF_INIT, out = STRBUF_INIT;
	sb_init(&err);
	sb_init(&out);
	if (nft_rule_from_text(af, text, ir, &err) < 0)
		fail_msg("%s: %s", text, sb_str(&err));
	sb_free(&err);
	nft_rule_format(ir, &out);
	return sb_detach(&out);
}

static char *debug_form(const char *text, struct nft_rule_ir *ir)
{
	return debug_form_af(AF_INET, text, ir);
}

static const struct {
	const char *text, *want;
} cases[] = {
	{ "-j ACCEPT", "[ counter ] [ immediate reg 0 accept ]" },
	{ "-g cali-fw-x", "[ counter ] [ immediate reg 0 goto -> cali-fw-x ]" },
	{ "-j cali-pi-a", "[ counter ] [ immediate reg 0 jump -> cali-pi-a ]" },
	/* addresses: a host is a compare, a prefix masks first; in network order */
	{ "-s 10.0.0.1/32 -j DROP",
	  "[ payload load 4b @ network header + 12 => reg 1 ] [ cmp eq reg 1 0x0100000a ] "
	  "[ counter ] [ immediate reg 0 drop ]" },
	{ "! -d 10.1.0.0/16 -j RETURN",
	  "[ payload load 4b @ network header + 16 => reg 1 ] [ bitwise reg 1 = ( reg 1 & "
	  "0x0000ffff ) ^ 0x00000000 ] [ cmp neq reg 1 0x0000010a ] [ counter ] [ immediate reg 0 "
	  "return ]" },
	/* interfaces: a name compares all 16 bytes, a wildcard its prefix */
	{ "-i cali+ -o eth0 -j ACCEPT",
	  "[ meta load iifname => reg 1 ] [ cmp eq reg 1 0x696c6163 ] [ meta load oifname => "
	  "reg 1 ] [ cmp eq reg 1 0x30687465 0x00000000 0x00000000 0x00000000 ] "
	  "[ counter ] [ immediate reg 0 accept ]" },
	{ "! -p udp -j ACCEPT", "[ meta load l4proto => reg 1 ] [ cmp neq reg 1 0x00000011 ] "
				"[ counter ] [ immediate reg 0 accept ]" },
	/* the comment is user data; the mark a masked compare in host order */
	{ "-m comment --comment \"cali:0123456789abcdef\" -m mark --mark 0x10000/0x10000 -j RETURN",
	  "[ meta load mark => reg 1 ] [ bitwise reg 1 = ( reg 1 & 0x00010000 ) ^ 0x00000000 ] "
	  "[ cmp eq reg 1 0x00010000 ] [ counter ] [ immediate reg 0 return ]" },
	{ "-m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT",
	  "[ ct load state => reg 1 ] [ bitwise reg 1 = ( reg 1 & 0x00000006 ) ^ 0x00000000 ] "
	  "[ cmp neq reg 1 0x00000000 ] [ counter ] [ immediate reg 0 accept ]" },
	{ "-m conntrack ! --ctstate INVALID -j ACCEPT",
	  "[ ct load state => reg 1 ] [ bitwise reg 1 = ( reg 1 & 0x00000001 ) ^ 0x00000000 ] "
	  "[ cmp eq reg 1 0x00000000 ] [ counter ] [ immediate reg 0 accept ]" },
	/* sets: an address, or address . protocol . port in 32-bit registers */
	{ "-m set --match-set cali40s:abc src -j ACCEPT",
	  "[ payload load 4b @ network header + 12 => reg 1 ] [ lookup reg 1 set cali40s_abc ] "
	  "[ counter ] [ immediate reg 0 accept ]" },
	{ "-m set ! --match-set cali40n:x dst,dst -j DROP",
	  "[ payload load 4b @ network header + 16 => reg 8 ] [ meta load l4proto => reg 9 ] "
	  "[ payload load 2b @ transport header + 2 => reg 10 ] [ lookup reg 8 set cali40n_x "
	  "0x1 ] [ counter ] [ immediate reg 0 drop ]" },
	/* ports: one, a range, a list (the rule's anonymous set) */
	{ "-p tcp -m multiport --dports 80 -j ACCEPT",
	  "[ meta load l4proto => reg 1 ] [ cmp eq reg 1 0x00000006 ] [ payload load 2b @ "
	  "transport header + 2 => reg 1 ] [ cmp eq reg 1 0x00005000 ] [ counter ] [ immediate reg "
	  "0 accept "
	  "]" },
	{ "-p udp -m multiport ! --sports 1000:2000 -j ACCEPT",
	  "[ meta load l4proto => reg 1 ] [ cmp eq reg 1 0x00000011 ] [ payload load 2b @ "
	  "transport header + 0 => reg 1 ] [ range neq reg 1 0x0000e803 0x0000d007 ] "
	  "[ counter ] [ immediate reg 0 accept ]" },
	{ "-p tcp -m multiport --dports 80,443,8000:8080 -j ACCEPT",
	  "[ meta load l4proto => reg 1 ] [ cmp eq reg 1 0x00000006 ] [ payload load 2b @ "
	  "transport header + 2 => reg 1 ] [ lookup reg 1 set (anonymous) ] "
	  "[ counter ] [ immediate reg 0 accept ]" },
	{ "-p icmp -m icmp --icmp-type 8 -j ACCEPT",
	  "[ meta load l4proto => reg 1 ] [ cmp eq reg 1 0x00000001 ] [ payload load 1b @ "
	  "transport header + 0 => reg 1 ] [ cmp eq reg 1 0x00000008 ] [ counter ] [ immediate reg "
	  "0 accept "
	  "]" },
	{ "-p icmp -m icmp ! --icmp-type 3/4 -j ACCEPT",
	  "[ meta load l4proto => reg 1 ] [ cmp eq reg 1 0x00000001 ] [ payload load 2b @ "
	  "transport header + 0 => reg 1 ] [ cmp neq reg 1 0x00000403 ] [ counter ] [ immediate "
	  "reg 0 accept "
	  "]" },
	{ "-m addrtype ! --src-type LOCAL --limit-iface-out -j ACCEPT",
	  "[ fib saddr . oif type => reg 1 ] [ cmp neq reg 1 0x00000002 ] "
	  "[ counter ] [ immediate reg 0 accept ]" },
	/* statements */
	{ "-m limit --limit 10/sec --limit-burst 20 -j NFLOG --nflog-prefix \"Di:e:cali1\" "
	  "--nflog-group 1",
	  "[ limit rate 10/second burst 20 type packets ] [ counter ] [ log prefix Di:e:cali1 "
	  "group 1 snaplen "
	  "0 "
	  "qthreshold 0 ]" },
	{ "-j MARK --set-xmark 0x0/0x30000", "[ counter ] [ meta load mark => reg 1 ] [ bitwise "
					     "reg 1 = ( reg 1 & 0xfffcffff ) ^ 0x00000000 ] "
					     "[ meta set mark with reg 1 ]" },
	{ "-j MASQUERADE --random-fully", "[ counter ] [ masq flags 0x10 ]" },
	{ "-j LOG --log-prefix \"calico-packet: \" --log-level 5",
	  "[ counter ] [ log prefix calico-packet:  level 5 ]" },
	{ "-p tcp -j REJECT --reject-with tcp-reset",
	  "[ meta load l4proto => reg 1 ] [ cmp eq reg 1 0x00000006 ] [ counter ] [ reject type 1 "
	  "code 0 ]" },
};

/*
 * IPv6 rules (ip6tables' text), for the ip6 family's tables: 16-byte addresses 8 and 24 bytes
 * into the header, sets keyed on them (a named port's address takes registers 8-11, its
 * protocol and port 12 and 13), ICMPv6, and ip6tables' REJECT codes.
 */
static const struct {
	const char *text, *want;
} cases6[] = {
	{ "-s fd00::1/128 -j DROP",
	  "[ payload load 16b @ network header + 8 => reg 1 ] [ cmp eq reg 1 0x000000fd "
	  "0x00000000 0x00000000 0x01000000 ] [ counter ] [ immediate reg 0 drop ]" },
	{ "! -d fd00:10::/64 -j RETURN",
	  "[ payload load 16b @ network header + 24 => reg 1 ] [ bitwise reg 1 = ( reg 1 & "
	  "0xffffffff 0xffffffff 0x00000000 0x00000000 ) ^ 0x00000000 0x00000000 0x00000000 "
	  "0x00000000 ] [ cmp neq reg 1 0x100000fd 0x00000000 0x00000000 0x00000000 ] "
	  "[ counter ] [ immediate reg 0 return ]" },
	{ "-m set --match-set cali60s:abc src -j ACCEPT",
	  "[ payload load 16b @ network header + 8 => reg 1 ] [ lookup reg 1 set cali60s_abc ] "
	  "[ counter ] [ immediate reg 0 accept ]" },
	{ "-m set ! --match-set cali60n:x dst,dst -j DROP",
	  "[ payload load 16b @ network header + 24 => reg 8 ] [ meta load l4proto => reg 12 ] "
	  "[ payload load 2b @ transport header + 2 => reg 13 ] [ lookup reg 8 set cali60n_x "
	  "0x1 ] [ counter ] [ immediate reg 0 drop ]" },
	{ "-p ipv6-icmp -m icmp6 --icmpv6-type 128 -j ACCEPT",
	  "[ meta load l4proto => reg 1 ] [ cmp eq reg 1 0x0000003a ] [ payload load 1b @ "
	  "transport header + 0 => reg 1 ] [ cmp eq reg 1 0x00000080 ] [ counter ] [ immediate "
	  "reg 0 accept ]" },
	{ "-p ipv6-icmp -m icmp6 ! --icmpv6-type 1/4 -j ACCEPT",
	  "[ meta load l4proto => reg 1 ] [ cmp eq reg 1 0x0000003a ] [ payload load 2b @ "
	  "transport header + 0 => reg 1 ] [ cmp neq reg 1 0x00000401 ] [ counter ] [ immediate "
	  "reg 0 accept ]" },
	{ "-i cali+ -p tcp -j ACCEPT",
	  "[ meta load iifname => reg 1 ] [ cmp eq reg 1 0x696c6163 ] [ meta load l4proto => "
	  "reg 1 ] [ cmp eq reg 1 0x00000006 ] [ counter ] [ immediate reg 0 accept ]" },
	/* REJECT: ICMPv6 destination unreachable, code from --reject-with; or a reset */
	{ "-j REJECT", "[ counter ] [ reject type 0 code 4 ]" },
	{ "-j REJECT --reject-with icmp6-adm-prohibited", "[ counter ] [ reject type 0 code 1 ]" },
	{ "-p tcp -j REJECT --reject-with tcp-reset",
	  "[ meta load l4proto => reg 1 ] [ cmp eq reg 1 0x00000006 ] [ counter ] [ reject type 1 "
	  "code 0 ]" },
	{ "-j MASQUERADE --random-fully", "[ counter ] [ masq flags 0x10 ]" },
};

static int check_cases(int af, const char *const *text, const char *const *want, size_t n,
		       size_t stride)
{
	int failures = 0;
	for (size_t i = 0; i < n; i++) {
		const char *t = *(const char *const *)((const char *)text + i * stride);
		const char *w = *(const char *const *)((const char *)want + i * stride);
		struct nft_rule_ir ir;
		char *got = debug_form_af(af, t, &ir);
		if (strcmp(got, w) != 0) {
			print_error("%s\n  want: %s\n   got: %s\n", t, w, got);
			failures++;
		}
		free(got);
	}
	return failures;
}

static void test_translations(void **state)
{
	assert_int_equal(check_cases(AF_INET, &cases[0].text, &cases[0].want, ARRAY_SIZE(cases),
				     sizeof(cases[0])),
			 0);
	assert_int_equal(check_cases(AF_INET6, &cases6[0].text, &cases6[0].want, ARRAY_SIZE(cases6),
				     sizeof(cases6[0])),
			 0);
	(void)state;
}

/* The comments become the rule's user data, its id first; a multiport list its anonymous set. */
static void test_comment_and_anonymous_set(void **state)
{
	struct nft_rule_ir ir;
	free(debug_form("-p tcp -m comment --comment \"cali:0123456789abcdef\" -m comment "
			"--comment \"Allow DNS\" -m multiport --dports 53,5353:5354 -j ACCEPT",
			&ir));
	assert_string_equal(ir.id, "cali:0123456789abcdef");
	assert_string_equal(ir.comment, "cali:0123456789abcdef; Allow DNS");
	assert_true(ir.has_anon);
	assert_int_equal(ir.anon.n, 2);
	assert_int_equal(ir.anon.lo[0], 53);
	assert_int_equal(ir.anon.hi[0], 53);
	assert_int_equal(ir.anon.lo[1], 5353);
	assert_int_equal(ir.anon.hi[1], 5354);
	(void)state;
}

/* What nftables cannot say, or the parser refuses, is an error naming why. */
static void test_refused(void **state)
{
	static const struct {
		const char *text, *err;
	} bad[] = {
		{ "-m conntrack --ctstate DNAT -j ACCEPT",
		  "conntrack: the SNAT and DNAT states are ct status in nftables, which the nft "
		  "backend does not write" },
		{ "-m addrtype --src-type LOCAL,UNICAST -j ACCEPT", "addrtype: one type per side" },
		{ "-m limit --limit 7/min -j ACCEPT",
		  "limit: a rate that is not a whole number a second" },
		{ "-m foo -j ACCEPT", "token 2 (\"foo\"): unknown match" },
	};
	/* the family decides what parses: an IPv4 address or ICMP is no IPv6 rule */
	static const struct {
		int af;
		const char *text;
	} wrong_family[] = {
		{ AF_INET6, "-s 10.0.0.1/32 -j DROP" },
		{ AF_INET6, "-p icmp -m icmp --icmp-type 8 -j ACCEPT" },
		{ AF_INET, "-s fd00::1/128 -j DROP" },
		{ AF_INET, "-p ipv6-icmp -m icmp6 --icmpv6-type 128 -j ACCEPT" },
		{ AF_UNIX, "-j ACCEPT" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(wrong_family); i++) {
		struct nft_rule_ir ir;
		struct strbuf err = STRBUF_INIT;
		sb_init(&err);
		assert_int_equal(
			nft_rule_from_text(wrong_family[i].af, wrong_family[i].text, &ir, &err),
			-EINVAL);
		assert_true(sb_str(&err)[0] != '\0');
		sb_free(&err);
	}
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		struct nft_rule_ir ir;
		struct strbuf err = STRBUF_INIT;
		sb_init(&err);
		assert_int_equal(nft_rule_from_text(AF_INET, bad[i].text, &ir, &err), -EINVAL);
		assert_string_equal(sb_str(&err), bad[i].err);
		assert_int_equal(ir.n, 0);
		sb_free(&err);
	}
	(void)state;
}

/* Set members as felix keeps them -> elements: address sets as a union of intervals. */
static void test_elements(void **state)
{
	const char *const addrs[] = { "10.0.0.5",    "10.0.0.0/24", "10.0.1.0/24", "10.0.3.0/24",
				      "192.168.0.1", "not-an-ip",   "10.0.2.0/24", "0.0.0.0/0x" };
	struct nft_elem *e;
	size_t n, bad;
	bool merged;
	nft_elems_from_members(AF_INET, NFT_SET_ADDRS, addrs, ARRAY_SIZE(addrs), &e, &n, &bad,
			       &merged);
	assert_int_equal(bad, 2);
	/* 10.0.0.5 inside 10.0.0.0/24 is joined to it; adjacent /24s stay apart (nftables keeps
	 * adjacent intervals, so each member stays one element where none overlap) */
	assert_true(merged);
	assert_int_equal(n, 5);
	assert_int_equal(elem_addr4(e[0].lo), 0x0a000000);
	assert_int_equal(elem_addr4(e[0].hi), 0x0a0000ff);
	assert_int_equal(elem_addr4(e[1].lo), 0x0a000100);
	assert_int_equal(elem_addr4(e[3].hi), 0x0a0003ff);
	assert_int_equal(elem_addr4(e[4].lo), 0xc0a80001);
	assert_int_equal(elem_addr4(e[4].hi), 0xc0a80001);
	free(e);
	const char *const hosts[] = { "10.0.0.2", "10.0.0.1", "10.0.0.3" };
	nft_elems_from_members(AF_INET, NFT_SET_ADDRS, hosts, 3, &e, &n, &bad, &merged);
	assert_false(merged);
	assert_int_equal(n, 3);
	free(e);
	const char *const all[] = { "0.0.0.0/0", "10.0.0.1" };
	nft_elems_from_members(AF_INET, NFT_SET_ADDRS, all, 2, &e, &n, &bad, &merged);
	assert_int_equal(n, 1);
	assert_int_equal(elem_addr4(e[0].lo), 0);
	assert_int_equal(elem_addr4(e[0].hi), 0xffffffff);
	free(e);
	const char *const ports[] = { "10.0.0.2,udp:53", "10.0.0.1,tcp:80", "10.0.0.1,tcp:80",
				      "10.0.0.0/24,tcp:80", "10.0.0.1,icmp:1" };
	nft_elems_from_members(AF_INET, NFT_SET_PORTS, ports, ARRAY_SIZE(ports), &e, &n, &bad,
			       &merged);
	assert_int_equal(bad, 2);
	assert_int_equal(n, 2);
	assert_int_equal(elem_addr4(e[0].lo), 0x0a000001);
	assert_int_equal(e[0].proto, 6);
	assert_int_equal(e[0].port, 80);
	assert_int_equal(e[1].proto, 17);
	free(e);
	(void)state;
}

/* IPv6 members: 16-byte intervals, merged as IPv4's; ::/0 runs to the top. */
static void test_elements6(void **state)
{
	static const uint8_t fd00[16] = { 0xfd },
			     top[16] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
					 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	const char *const addrs[] = { "fd00::5",     "fd00::/120", "fd00::100/120",
				      "fd00::1/129", "10.0.0.1",   "fd00::200" };
	struct nft_elem *e;
	size_t n, bad;
	bool merged;
	nft_elems_from_members(AF_INET6, NFT_SET_ADDRS, addrs, ARRAY_SIZE(addrs), &e, &n, &bad,
			       &merged);
	assert_int_equal(bad, 2); /* a /129, and an IPv4 address */
	assert_true(merged);	  /* fd00::5 is inside fd00::/120 */
	assert_int_equal(n, 3);
	assert_memory_equal(e[0].lo, fd00, 16);
	uint8_t want[16] = { 0xfd };
	want[15] = 0xff;
	assert_memory_equal(e[0].hi, want, 16); /* fd00::ff */
	want[14] = 0x01;
	assert_memory_equal(e[1].hi, want, 16); /* fd00::1ff */
	want[14] = 0x02;
	want[15] = 0x00;
	assert_memory_equal(e[2].lo, want, 16); /* fd00::200 */
	assert_memory_equal(e[2].hi, want, 16);
	free(e);
	const char *const all[] = { "::/0", "fd00::1" };
	nft_elems_from_members(AF_INET6, NFT_SET_ADDRS, all, 2, &e, &n, &bad, &merged);
	assert_int_equal(n, 1);
	static const uint8_t zero[16];
	assert_memory_equal(e[0].lo, zero, 16);
	assert_memory_equal(e[0].hi, top, 16);
	free(e);
	const char *const ports[] = { "fd00::1,tcp:80", "fd00::/64,tcp:80", "10.0.0.1,tcp:80" };
	nft_elems_from_members(AF_INET6, NFT_SET_PORTS, ports, 3, &e, &n, &bad, &merged);
	assert_int_equal(bad, 2);
	assert_int_equal(n, 1);
	want[14] = 0;
	want[15] = 1;
	assert_memory_equal(e[0].lo, want, 16);
	assert_int_equal(e[0].proto, 6);
	assert_int_equal(e[0].port, 80);
	free(e);
	(void)state;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_translations),
		cmocka_unit_test(test_comment_and_anonymous_set),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_elements),
		cmocka_unit_test(test_elements6),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
