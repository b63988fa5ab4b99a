/* Interface sysctls: the recording backend's logic, and the kernel's files in a namespace of our
 * own. */
#include "harness.h"

#include <brindle/sys/nl.h>
#include <brindle/sys/sysctl.h>
#include <brindle/testing/sysctl_record.h>

#include <errno.h>
#include <sched.h>
#include <stdio.h>

static void test_recording(void **state)
{
	struct sysctl *s = sysctl_open_recording();
	sysctl_record_set(s, "net/ipv4/conf/cali1/proxy_arp", "0");
	sysctl_record_set(s, "net/ipv4/conf/cali1/forwarding", "1");
	sysctl_record_set(s, "net/ipv4/conf/cali1/route_localnet", "0");
	sysctl_record_set(s, "net/ipv4/neigh/cali1/proxy_delay", "80");
	int changed;
	/* IPv6 absent: not an error; only differing values are written. */
	assert_int_equal(sysctl_workload_iface(s, "cali1", false, &changed), 0);
	assert_int_equal(changed, 3);
	assert_int_equal(sysctl_record_count(s), 3);
	assert_string_equal(sysctl_record_entry(s, 0), "net/ipv4/conf/cali1/proxy_arp=1");
	assert_int_equal(sysctl_workload_iface(s, "cali1", false, &changed), 0);
	assert_int_equal(changed, 0);
	assert_int_equal(sysctl_workload_iface(s, "cali9", false, &changed), -ENOENT);
	sysctl_close(s);
}

static void test_kernel(void **state)
{
	/* A namespace of our own, with one veth whose settings we change. */
	assert_int_equal(unshare(CLONE_NEWNET), 0);
	struct nl *nl;
	assert_int_equal(nl_open_kernel(&nl), 0);
	struct nl_batch *b = nl_batch_new();
	struct nl_link l;
	nl_link_init(&l);
	snprintf(l.name, sizeof(l.name), "cali5");
	snprintf(l.kind, sizeof(l.kind), "veth");
	snprintf(l.peer_name, sizeof(l.peer_name), "peer5");
	nl_batch_link(b, NL_ADD, &l);
	assert_int_equal(nl_apply(nl, b, NULL), 0);
	struct sysctl *s = sysctl_open_kernel();
	int changed;
	assert_int_equal(sysctl_workload_iface(s, "cali5", false, &changed), 0);
	assert_true(changed >= 3);
	char v[16];
	assert_int_equal(sysctl_read(s, "net/ipv4/conf/cali5/proxy_arp", v, sizeof(v)), 0);
	assert_string_equal(v, "1");
	assert_int_equal(sysctl_read(s, "net/ipv4/neigh/cali5/proxy_delay", v, sizeof(v)), 0);
	assert_string_equal(v, "0");
	assert_int_equal(sysctl_workload_iface(s, "cali5", false, &changed), 0);
	assert_int_equal(changed, 0);
	/* An IPv6 workload's: IPv6 forwarding and proxy_ndp on the veth too. */
	assert_int_equal(sysctl_workload_iface(s, "cali5", true, &changed), 0);
	assert_int_equal(changed, 2);
	assert_int_equal(sysctl_read(s, "net/ipv6/conf/cali5/proxy_ndp", v, sizeof(v)), 0);
	assert_string_equal(v, "1");
	assert_int_equal(sysctl_read(s, "net/ipv6/conf/cali5/forwarding", v, sizeof(v)), 0);
	assert_string_equal(v, "1");
	/* The node's forwarding: IPv4's, then IPv6's as well. */
	assert_int_equal(sysctl_forwarding(s, false, &changed), 0);
	assert_int_equal(sysctl_read(s, "net/ipv4/ip_forward", v, sizeof(v)), 0);
	assert_string_equal(v, "1");
	assert_int_equal(sysctl_forwarding(s, true, &changed), 0);
	assert_int_equal(changed, 1);
	assert_int_equal(sysctl_read(s, "net/ipv6/conf/all/forwarding", v, sizeof(v)), 0);
	assert_string_equal(v, "1");
	assert_int_equal(sysctl_forwarding(s, true, &changed), 0);
	assert_int_equal(changed, 0);
	assert_int_equal(sysctl_workload_iface(s, "nosuch", false, &changed), -ENOENT);
	sysctl_close(s);
	nl_batch_free(b);
	nl_close(nl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_recording),
		cmocka_unit_test(test_kernel),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
