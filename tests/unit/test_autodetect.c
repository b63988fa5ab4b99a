/*
 * The node address autodetection methods (lib/core/autodetect.c) over a
 * host with the interfaces a Kubernetes node has: loopback, docker0, a veth,
 * cali* and tunnel devices before the real NICs, a down NIC, link-local
 * addresses. Each method picks what calico-node picks; bad methods are
 * refused naming the problem; the pod MTU follows the host NICs and the
 * encapsulation.
 */
#include "harness.h"

#include <brindle/core/autodetect.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

static struct br_cidr cidr(const char *s) {
	struct br_cidr c;
	assert_int_equal(cidr_parse(s, false, &c) == 0 || cidr_parse(s, true, &c) == 0, 1);
	return c;
}

/* lo, docker0, veth1, cali1, tunl0, eth0 (down), ens3, ens4, bond0.10 */
static struct br_cidr a_lo[1],
	a_docker[1], a_veth[1], a_cali[1], a_tunl[1], a_eth0[1], a_ens3[3], a_ens4[2], a_bond[1];
static struct ad_iface ifs[9];

static void host(void)
{
	a_lo[0] = cidr("127.0.0.1/8");
	a_docker[0] = cidr("172.17.0.1/16");
	a_veth[0] = cidr("169.254.1.1/32");
	a_cali[0] = cidr("10.244.0.1/32");
	a_tunl[0] = cidr("10.244.0.2/32");
	a_eth0[0] = cidr("192.168.50.2/24");
	a_ens3[0] = cidr("169.254.10.1/16"); /* link-local first: skipped */
	a_ens3[1] = cidr("10.0.0.11/24");
	a_ens3[2] = cidr("fd00::11/64");
	a_ens4[0] = cidr("192.168.1.11/24");
	a_ens4[1] = cidr("fe80::1/64");
	a_bond[0] = cidr("172.31.5.5/20");
	struct ad_iface v[] = {
		{ "lo", true, a_lo, 1 },	 { "docker0", true, a_docker, 1 },
		{ "veth1", true, a_veth, 1 },	 { "cali1234", true, a_cali, 1 },
		{ "tunl0", true, a_tunl, 1 },	 { "eth0", false, a_eth0, 1 },
		{ "ens3", true, a_ens3, 3 },	 { "ens4", true, a_ens4, 2 },
		{ "bond0.10", true, a_bond, 1 },
	};
	memcpy(ifs, v, sizeof(v));
}

/* The method's choice as "addr/len", or "error: ..." */
static void expect(const char *method, int family, const char *source, const char *want)
{
	struct ad_method m;
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	char got[256];
	if (ad_method_parse(method, family, &m, &err) < 0) {
		snprintf(got, sizeof(got), "error: %s", sb_str(&err));
	} else {
		struct br_ip src;
		struct br_cidr out;
		if (source)
			assert_int_equal(ip_parse(source, &src), 0);
		char buf[CIDR_STRLEN];
		if (ad_choose(&m, ifs, ARRAY_SIZE(ifs), family, source ? &src : NULL, &out, &err) <
		    0)
			snprintf(got, sizeof(got), "error: %s", sb_str(&err));
		else
			snprintf(got, sizeof(got), "%s", cidr_str(&out, buf));
		ad_method_free(&m);
	}
	sb_free(&err);
	if (!strstr(got, want)) {
		fprintf(stderr, "method %s: want \"%s\", got \"%s\"\n", method, want, got);
		fail();
	}
}

static void test_methods(void **state)
{
	(void)state;
	host();
	/* loopback, docker0, veth, cali, tunl skipped; eth0 is down; ens3's link-local passed */
	expect(NULL, AF_INET, NULL, "10.0.0.11/24");
	expect("first-found", AF_INET, NULL, "10.0.0.11/24");
	expect("first-found", AF_INET6, NULL, "fd00::11/64");
	expect("interface=ens4", AF_INET, NULL, "192.168.1.11/24");
	expect("interface=bond0\\.[0-9]+,ens9", AF_INET, NULL, "172.31.5.5/20");
	/* the whole name: "ens" alone matches nothing */
	expect("interface=ens", AF_INET, NULL, "error: IPv4: no interface whose name matches");
	/* interface= takes what the user names, down or a container bridge alike */
	expect("interface=eth0", AF_INET, NULL, "192.168.50.2/24");
	expect("skip-interface=ens3", AF_INET, NULL, "192.168.1.11/24");
	expect("skip-interface=ens.*,bond.*", AF_INET, NULL, "error: IPv4: no interface");
	expect("cidr=192.168.0.0/16", AF_INET, NULL, "192.168.1.11/24");
	expect("cidr=10.9.0.0/16, 172.16.0.0/12", AF_INET, NULL, "172.17.0.1/16");
	expect("cidr=fd00::/8", AF_INET6, NULL, "fd00::11/64");
	expect("can-reach=192.168.1.1", AF_INET, "192.168.1.11", "192.168.1.11/24");
	expect("can-reach=8.8.8.8", AF_INET, "203.0.113.9", "error: IPv4: the address the kernel");
	expect("first-found", AF_INET6, NULL, "fd00::11/64");
}

static void test_refused(void **state)
{
	(void)state;
	host();
	expect("nearest", AF_INET, NULL, "error: unknown method \"nearest\"");
	expect("interface=", AF_INET, NULL, "error: interface=: the list is empty");
	expect("interface=ens(", AF_INET, NULL, "is not a regular expression");
	/* what would make regcomp's memory grow exponentially (found by the fuzzer) */
	expect("interface=e*?+++++++++++++++++", AF_INET, NULL, "has too many repetitions");
	expect("cidr=10.0.0.1/8", AF_INET, NULL, "error: cidr=: \"10.0.0.1/8\" is not an IPv4");
	expect("cidr=fd00::/8", AF_INET, NULL, "is not an IPv4 network");
	expect("can-reach=", AF_INET, NULL, "can-reach= needs one address");
	struct ad_method m;
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	assert_int_equal(ad_method_parse("kubernetes-internal-ip", AF_INET, &m, &err), 0);
	assert_int_equal(m.kind, AD_K8S_INTERNAL_IP);
	struct br_cidr out;
	assert_int_equal(ad_choose(&m, ifs, ARRAY_SIZE(ifs), AF_INET, NULL, &out, &err), -EINVAL);
	sb_free(&err);
}

static void test_skipped(void **state)
{
	(void)state;
	const char *skip[] = { "lo",	       "docker0",   "cali0abc",	 "tunl0",
			       "vxlan.calico", "veth9",	    "br-1a2b",	 "podman0",
			       "cni0",	       "flannel.1", "kube-ipvs0" };
	const char *keep[] = { "eth0", "ens3", "bond0", "enp0s31f6", "wlan0", "lo0x", "bridge0" };
	for (size_t i = 0; i < ARRAY_SIZE(skip); i++)
		assert_true(ad_skipped(skip[i]));
	for (size_t i = 0; i < ARRAY_SIZE(keep); i++)
		assert_false(ad_skipped(keep[i]));
}

static void test_mtu(void **state)
{
	(void)state;
	struct ad_link_mtu links[] = {
		{ "lo", true, 65536 },	  { "docker0", true, 1500 }, { "ens3", true, 9000 },
		{ "enp0s8", true, 1450 }, { "eth1", false, 1200 },   { "cali1", true, 1400 },
	};
	/* the smallest up host NIC: enp0s8 (eth1 is down; lo, docker0, cali1 are no NICs) */
	assert_int_equal(ad_pod_mtu(links, ARRAY_SIZE(links), 0), 1450);
	assert_int_equal(ad_pod_mtu(links, ARRAY_SIZE(links), AD_ENCAP_IPIP), 1430);
	assert_int_equal(ad_pod_mtu(links, ARRAY_SIZE(links), AD_ENCAP_VXLAN), 1400);
	assert_int_equal(ad_pod_mtu(links, ARRAY_SIZE(links), AD_ENCAP_IPIP | AD_ENCAP_VXLAN),
			 1400);
	assert_int_equal(ad_pod_mtu(links, ARRAY_SIZE(links), AD_ENCAP_VXLAN | AD_ENCAP_VXLAN6),
			 1380);
	/* no NIC at all: Calico's 1460 */
	assert_int_equal(ad_pod_mtu(links, 2, AD_ENCAP_VXLAN), 1410);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_methods),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_skipped),
		cmocka_unit_test(test_mtu),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
