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
	assert_int_equal(sysctl_workload_iface(s, "cali1", &changed), 0);
	assert_int_equal(changed, 3);
	assert_int_equal(sysctl_record_count(s), 3);
	assert_string_equal(sysctl_record_entry(s, 0), "net/ipv4/conf/cali1/proxy_arp=1");
	assert_int_equal(sysctl_workload_iface(s, "cali1", &changed), 0);
	assert_int_equal(changed, 0);
	assert_int_equal(sysctl_workload_iface(s, "cali9", &changed), -ENOENT);
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
	assert_int_equal(sysctl_workload_iface(s, "cali5", &changed), 0);
	assert_true(changed >= 3);
	char v[16];
	assert_int_equal(sysctl_read(s, "net/ipv4/conf/cali5/proxy_arp", v, sizeof(v)), 0);
	assert_string_equal(v, "1");
	assert_int_equal(sysctl_read(s, "net/ipv4/neigh/cali5/proxy_delay", v, sizeof(v)), 0);
	assert_string_equal(v, "0");
	assert_int_equal(sysctl_workload_iface(s, "cali5", &changed), 0);
	assert_int_equal(changed, 0);
	assert_int_equal(sysctl_workload_iface(s, "nosuch", &changed), -ENOENT);
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
