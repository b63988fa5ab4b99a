/*
 * felix's reconcilers against the recording kernel: what they write, that a
 * second apply and a restarted felix write nothing, that foreign objects
 * stay, the CNI grace period, late interfaces, partial failures, and IPIP
 * on a kernel without it.
 */
#include "harness.h"

#include "calc/calc.h"
#include "calc/policy.h"
#include "dataplane/dataplane.h"

#include <brindle/sys/ipset.h>
#include <brindle/sys/ipt.h>
#include <brindle/core/json.h>
#include <brindle/sys/nl.h>
#include <brindle/sys/sysctl.h>
#include <brindle/testing/ipset_record.h>
#include <brindle/testing/ipt_record.h>
#include <brindle/testing/nl_record.h>
#include <brindle/testing/sysctl_record.h>

#include <errno.h>
#include <linux/rtnetlink.h>
#include <stdio.h>
#include <stdlib.h>

static struct br_object *obj(const char *yaml)
{
	struct br_object **objs;
	size_t n;
	struct model_errors errs = { 0 };
	if (model_read("t", yaml, strlen(yaml), NULL, &objs, &n, &errs) < 0)
		fail_msg("bad input: %s", errs.v[0]);
	struct br_object *o = objs[0];
	free(objs);
	return o;
}

static struct br_object *affinity(const char *node, const char *cidr)
{
	char buf[512];
	snprintf(buf, sizeof(buf),
		 "{\"apiVersion\":\"projectcalico.org/v3\",\"kind\":\"BlockAffinity\","
		 "\"metadata\":{\"name\":\"x\"},\"spec\":{\"node\":\"%s\",\"cidr\":\"%s\","
		 "\"state\":\"confirmed\"}}",
		 node, cidr);
	struct arena *a = arena_new();
	struct jv *doc;
	assert_int_equal(json_parse(a, buf, strlen(buf), &doc, NULL), 0);
	struct model_errors errs = { 0 };
	struct br_object *o = model_decode_kind(model_kind(KIND_BLOCKAFFINITY), doc, &errs);
	arena_free(a);
	return o;
}

static void put(struct calc *c, struct br_object *o, const char *scope, const char *name)
{
	struct ds_update u = { .kind = o->kind, .scope = scope, .name = name, .obj = o };
	calc_update(c, &u);
}

struct fixture {
	struct nl *nl;
	struct sysctl *sys;
	struct calc *calc;
	struct felix_config cfg;
};

static void add_link(struct fixture *f, const char *name, bool up)
{
	struct nl_batch *b = nl_batch_new();
	struct nl_link l;
	nl_link_init(&l);
	snprintf(l.name, sizeof(l.name), "%s", name);
	snprintf(l.kind, sizeof(l.kind), "veth");
	l.flags = up ? IFF_UP : 0;
	nl_batch_link(b, NL_ADD, &l);
	assert_int_equal(nl_apply(f->nl, b, NULL), 0);
	nl_batch_free(b);
	const char *dirs[] = { "net/ipv4/conf", "net/ipv4/conf", "net/ipv4/conf", "net/ipv4/neigh",
			       "net/ipv6/conf" };
	const char *names[] = { "proxy_arp", "forwarding", "route_localnet", "proxy_delay",
				"accept_ra" };
	const char *initial[] = { "0", "0", "0", "80", "1" };
	for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
		char path[128];
		snprintf(path, sizeof(path), "%s/%s/%s", dirs[i], name, names[i]);
		sysctl_record_set(f->sys, path, initial[i]);
	}
}

static int ifindex(struct fixture *f, const char *name)
{
	struct nl_link_list links = { 0 };
	assert_int_equal(nl_dump_links(f->nl, &links), 0);
	const struct nl_link *l = nl_link_by_name(&links, name);
	int idx = l ? l->ifindex : 0;
	nl_link_list_free(&links);
	return idx;
}

static void raw(struct fixture *f, enum nl_op op, const struct nl_route *r)
{
	struct nl_batch *b = nl_batch_new();
	nl_batch_route(b, op, r);
	assert_int_equal(nl_apply(f->nl, b, NULL), 0);
	nl_batch_free(b);
}

static struct fixture *fixture(void)
{
	struct fixture *f = xcalloc(1, sizeof(*f));
	f->nl = nl_open_recording();
	f->sys = sysctl_open_recording();
	felix_config_defaults(&f->cfg);
	f->calc = calc_new("node1", false);
	calc_set_config(f->calc, &f->cfg);
	/* The host's uplink holds the node address. */
	add_link(f, "eth0", true);
	struct nl_batch *b = nl_batch_new();
	struct nl_addr a = { .ifindex = ifindex(f, "eth0") };
	assert_int_equal(cidr_parse("192.168.100.11/24", false, &a.addr), 0);
	nl_batch_addr(b, NL_ADD, &a);
	assert_int_equal(nl_apply(f->nl, b, NULL), 0);
	nl_batch_free(b);
	nl_record_clear_log(f->nl);
	return f;
}

static void fixture_free(struct fixture *f)
{
	calc_free(f->calc);
	sysctl_close(f->sys);
	nl_close(f->nl);
	free(f);
}

static void cluster(struct fixture *f)
{
	put(f->calc,
	    obj("apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: p}\n"
		"spec: {cidr: 10.244.0.0/16, vxlanMode: Always}\n"),
	    NULL, "p");
	put(f->calc,
	    obj("apiVersion: projectcalico.org/v3\nkind: Node\nmetadata: {name: node1}\n"
		"spec: {bgp: {ipv4Address: 192.168.100.11/24}, ipv4VXLANTunnelAddr: 10.244.1.1}\n"),
	    NULL, "node1");
	put(f->calc,
	    obj("apiVersion: projectcalico.org/v3\nkind: Node\nmetadata: {name: node2}\n"
		"spec: {bgp: {ipv4Address: 192.168.100.12/24}, ipv4VXLANTunnelAddr: 10.244.2.1,"
		" vxlanTunnelMACAddr: '66:00:00:00:00:02'}\n"),
	    NULL, "node2");
	put(f->calc, affinity("node1", "10.244.1.0/26"), "node1", "10.244.1.0-26");
	put(f->calc, affinity("node2", "10.244.2.0/26"), "node2", "10.244.2.0-26");
	put(f->calc,
	    obj("apiVersion: projectcalico.org/v3\nkind: WorkloadEndpoint\n"
		"metadata: {name: a, namespace: default}\n"
		"spec: {node: node1, interfaceName: calia, ipNetworks: [10.244.1.7/32],"
		" mac: '0a:00:00:00:00:07'}\n"),
	    "default", "a");
}

/* The routing writers only: links, neighbours, routes. */
static struct dataplane *new_dataplane(struct fixture *f)
{
	struct dp_backends b = { .nl = f->nl, .sys = f->sys };
	return dataplane_new(&b);
}

static size_t log_count(struct fixture *f)
{
	return nl_record_count(f->nl);
}

static bool logged(struct fixture *f, const char *entry)
{
	for (size_t i = 0; i < nl_record_count(f->nl); i++)
		if (strcmp(nl_record_entry(f->nl, i), entry) == 0)
			return true;
	return false;
}

static void dump_log(struct fixture *f)
{
	for (size_t i = 0; i < nl_record_count(f->nl); i++)
		print_message("  %s\n", nl_record_entry(f->nl, i));
}

static void test_cold_start_and_idempotence(void **state)
{
	struct fixture *f = fixture();
	add_link(f, "calia", true);
	nl_record_clear_log(f->nl);
	cluster(f);
	struct dataplane *dp = new_dataplane(f);
	assert_int_equal(dataplane_apply(dp, calc_desired(f->calc), NULL, NULL, &f->cfg, 1000), 0);
	if (!logged(f, "route add 10.244.1.7/32 dev calia proto 80 scope link"))
		dump_log(f);
	assert_true(logged(f, "route add 10.244.1.7/32 dev calia proto 80 scope link"));
	assert_true(logged(f, "route add blackhole 10.244.1.0/26 proto 80"));
	assert_true(logged(f, "route add 10.244.2.0/26 via 10.244.2.1 dev vxlan.calico proto "
			      "80 onlink"));
	assert_true(logged(f, "neigh replace 0a:00:00:00:00:07 ip 10.244.1.7 dev calia permanent "
			      "proto 80"));
	assert_true(logged(f, "neigh replace 66:00:00:00:00:02 ip 10.244.2.1 dev vxlan.calico "
			      "permanent proto 80"));
	assert_true(logged(f, "neigh replace fdb 66:00:00:00:00:02 dst 192.168.100.12 dev "
			      "vxlan.calico permanent"));
	assert_true(logged(f, "addr add 10.244.1.1/32 dev vxlan.calico"));
	/* Interface settings of the contract, written once. */
	assert_int_equal(sysctl_record_count(f->sys), 5);
	const struct dp_status *st = dataplane_status(dp);
	assert_true(st->last_apply_ok);
	assert_int_equal(st->routes, 3);
	assert_int_equal(st->neighs, 2);
	assert_int_equal(st->fdbs, 1);

	/* Nothing changed: a second apply, and a full resync, write nothing. */
	size_t before = log_count(f);
	assert_int_equal(dataplane_apply(dp, calc_desired(f->calc), NULL, NULL, &f->cfg, 2000), 0);
	dataplane_request_resync(dp);
	assert_int_equal(dataplane_apply(dp, calc_desired(f->calc), NULL, NULL, &f->cfg, 3000), 0);
	assert_int_equal(log_count(f), before);
	assert_int_equal(sysctl_record_count(f->sys), 5);

	/* A restarted felix (fresh state, same kernel) writes nothing either. */
	dataplane_free(dp);
	calc_free(f->calc);
	f->calc = calc_new("node1", false);
	calc_set_config(f->calc, &f->cfg);
	cluster(f);
	dp = new_dataplane(f);
	assert_int_equal(dataplane_apply(dp, calc_desired(f->calc), NULL, NULL, &f->cfg, 4000), 0);
	if (log_count(f) != before) {
		for (size_t i = before; i < log_count(f); i++)
			print_message("unexpected: %s\n", nl_record_entry(f->nl, i));
		fail();
	}
	dataplane_free(dp);
	fixture_free(f);
}

static void test_foreign_and_grace(void **state)
{
	struct fixture *f = fixture();
	add_link(f, "calia", true);
	add_link(f, "calib", true);
	int b = ifindex(f, "calib");
	/* A foreign route on a workload interface, and a CNI route felix does not know. */
	struct nl_route foreign = { .protocol = RTPROT_BOOT,
				    .scope = RT_SCOPE_LINK,
				    .oif = b,
				    .table = RT_TABLE_MAIN,
				    .type = RTN_UNICAST };
	assert_int_equal(cidr_parse("10.99.0.1/32", false, &foreign.dst), 0);
	struct nl_route cni = foreign;
	cni.protocol = 80;
	assert_int_equal(cidr_parse("10.244.1.8/32", false, &cni.dst), 0);
	/* Ours (protocol 80) with a metric felix never writes: swept, as its own key. */
	struct nl_route metric = { .protocol = 80, .type = RTN_BLACKHOLE, .table = RT_TABLE_MAIN,
				   .priority = 1024 };
	assert_int_equal(cidr_parse("10.244.1.0/26", false, &metric.dst), 0);
	raw(f, NL_ADD, &metric);
	/* And a stale route of ours on a non-workload device: removed at once. */
	struct nl_route stale = { .protocol = 80, .type = RTN_BLACKHOLE, .table = RT_TABLE_MAIN };
	assert_int_equal(cidr_parse("10.250.0.0/26", false, &stale.dst), 0);
	raw(f, NL_ADD, &foreign);
	raw(f, NL_ADD, &cni);
	raw(f, NL_ADD, &stale);
	nl_record_clear_log(f->nl);
	cluster(f);
	struct dataplane *dp = new_dataplane(f);
	assert_int_equal(dataplane_apply(dp, calc_desired(f->calc), NULL, NULL, &f->cfg, 1000), 0);
	assert_true(logged(f, "route del blackhole 10.250.0.0/26 proto 80"));
	assert_true(logged(f, "route del blackhole 10.244.1.0/26 proto 80 metric 1024"));
	assert_true(logged(f, "route add blackhole 10.244.1.0/26 proto 80"));
	assert_false(logged(f, "route del 10.244.1.8/32 dev calib proto 80 scope link"));
	assert_int_equal(dataplane_next_deadline(dp), 1000 + f->cfg.route_grace_ms);
	/* Inside the grace period it stays; the endpoint shows up: it is kept for good. */
	assert_int_equal(dataplane_apply(dp, calc_desired(f->calc), NULL, NULL, &f->cfg, 5000), 0);
	assert_false(logged(f, "route del 10.244.1.8/32 dev calib proto 80 scope link"));
	/* After the grace period, still unknown: removed. The foreign one never. */
	assert_int_equal(dataplane_apply(dp, calc_desired(f->calc), NULL, NULL, &f->cfg, 11001), 0);
	assert_true(logged(f, "route del 10.244.1.8/32 dev calib proto 80 scope link"));
	for (size_t i = 0; i < log_count(f); i++)
		assert_null(strstr(nl_record_entry(f->nl, i), "10.99.0.1"));
	dataplane_free(dp);
	fixture_free(f);
}

static void test_grace_ends_when_endpoint_arrives(void **state)
{
	struct fixture *f = fixture();
	add_link(f, "calia", true);
	struct nl_route cni = { .protocol = 80,
				.scope = RT_SCOPE_LINK,
				.type = RTN_UNICAST,
				.table = RT_TABLE_MAIN,
				.oif = ifindex(f, "calia") };
	assert_int_equal(cidr_parse("10.244.1.7/32", false, &cni.dst), 0);
	raw(f, NL_ADD, &cni);
	nl_record_clear_log(f->nl);
	struct dataplane *dp = new_dataplane(f);
	/* In sync, but the endpoint is not in the datastore yet. */
	assert_int_equal(dataplane_apply(dp, calc_desired(f->calc), NULL, NULL, &f->cfg, 1000), 0);
	assert_int_equal(log_count(f), 0);
	cluster(f); /* the endpoint arrives, wanting exactly the CNI's route */
	assert_int_equal(dataplane_apply(dp, calc_desired(f->calc), NULL, NULL, &f->cfg, 3000), 0);
	assert_false(logged(f, "route add 10.244.1.7/32 dev calia proto 80 scope link"));
	assert_int_equal(dataplane_apply(dp, calc_desired(f->calc), NULL, NULL, &f->cfg, 60000), 0);
	assert_false(logged(f, "route del 10.244.1.7/32 dev calia proto 80 scope link"));
	dataplane_free(dp);
	fixture_free(f);
}

static void test_interface_appears_later(void **state)
{
	struct fixture *f = fixture();
	cluster(f);
	struct dataplane *dp = new_dataplane(f);
	/* The endpoint is known before its veth exists: nothing to write yet, no error. */
	assert_int_equal(dataplane_apply(dp, calc_desired(f->calc), NULL, NULL, &f->cfg, 1000), 0);
	assert_false(logged(f, "route add 10.244.1.7/32 dev calia proto 80 scope link"));
	assert_true(dataplane_status(dp)->last_apply_ok);
	add_link(f, "calia", true);
	struct nl_link_list links = { 0 };
	assert_int_equal(nl_dump_links(f->nl, &links), 0);
	dataplane_on_link(dp, nl_link_by_name(&links, "calia"), false);
	nl_link_list_free(&links);
	assert_int_equal(dataplane_apply(dp, calc_desired(f->calc), NULL, NULL, &f->cfg, 1100), 0);
	assert_true(logged(f, "route add 10.244.1.7/32 dev calia proto 80 scope link"));
	assert_true(logged(f, "neigh replace 0a:00:00:00:00:07 ip 10.244.1.7 dev calia permanent "
			      "proto 80"));
	assert_int_equal(sysctl_record_count(f->sys), 5);
	dataplane_free(dp);
	fixture_free(f);
}

static void test_partial_failure_retried(void **state)
{
	struct fixture *f = fixture();
	add_link(f, "calia", true);
	cluster(f);
	struct dataplane *dp = new_dataplane(f);
	nl_record_fail_next(f->nl, "route add blackhole 10.244.1.0/26", -EPERM);
	assert_int_equal(dataplane_apply(dp, calc_desired(f->calc), NULL, NULL, &f->cfg, 1000),
			 -EIO);
	assert_false(dataplane_status(dp)->last_apply_ok);
	assert_int_equal(dataplane_status(dp)->errors[DP_ERR_NETLINK], 1);
	/* The rest went through; the failed one comes back at the next apply. */
	assert_true(logged(f, "route add 10.244.1.7/32 dev calia proto 80 scope link"));
	assert_false(logged(f, "route add blackhole 10.244.1.0/26 proto 80"));
	/* The routes writer reads everything back at its retry, after the first backoff. */
	assert_int_equal(dataplane_next_deadline(dp), 1100);
	assert_int_equal(dataplane_apply(dp, calc_desired(f->calc), NULL, NULL, &f->cfg, 1100), 0);
	assert_true(logged(f, "route add blackhole 10.244.1.0/26 proto 80"));
	assert_true(dataplane_status(dp)->last_apply_ok);
	dataplane_free(dp);
	fixture_free(f);
}

static void test_endpoint_deleted(void **state)
{
	struct fixture *f = fixture();
	add_link(f, "calia", true);
	cluster(f);
	struct dataplane *dp = new_dataplane(f);
	assert_int_equal(dataplane_apply(dp, calc_desired(f->calc), NULL, NULL, &f->cfg, 1000), 0);
	nl_record_clear_log(f->nl);
	struct ds_update u = { .kind = model_kind(KIND_WORKLOADENDPOINT),
			       .scope = "default",
			       .name = "a" };
	calc_update(f->calc, &u);
	assert_int_equal(dataplane_apply(dp, calc_desired(f->calc), NULL, NULL, &f->cfg, 1100), 0);
	/* Exactly its route and neighbour; nothing else, and no grace for a known route. */
	assert_int_equal(log_count(f), 2);
	assert_true(logged(f, "route del 10.244.1.7/32 dev calia proto 80 scope link"));
	assert_true(logged(f, "neigh del 0a:00:00:00:00:07 ip 10.244.1.7 dev calia permanent"));
	dataplane_free(dp);
	fixture_free(f);
}

static void test_ipip_without_kernel_support(void **state)
{
	struct fixture *f = fixture();
	add_link(f, "calia", true);
	cluster(f);
	put(f->calc,
	    obj("apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: legacy}\n"
		"spec: {cidr: 10.10.0.0/16, ipipMode: Always}\n"),
	    NULL, "legacy");
	put(f->calc, affinity("node2", "10.10.2.0/26"), "node2", "10.10.2.0-26");
	struct dataplane *dp = new_dataplane(f);
	/* The recording kernel, like this machine's, cannot make tunl0. */
	assert_int_equal(dataplane_apply(dp, calc_desired(f->calc), NULL, NULL, &f->cfg, 1000), 0);
	const struct dp_status *st = dataplane_status(dp);
	assert_int_equal(st->errors[DP_ERR_IPIP], 1);
	assert_non_null(strstr(st->problem, "IPIP unavailable: IP pool legacy"));
	/* Everything else is programmed. */
	assert_true(logged(f, "route add 10.244.1.7/32 dev calia proto 80 scope link"));
	assert_true(logged(f, "route add 10.244.2.0/26 via 10.244.2.1 dev vxlan.calico proto "
			      "80 onlink"));
	/* Reported once, not at every resync. */
	dataplane_request_resync(dp);
	assert_int_equal(dataplane_apply(dp, calc_desired(f->calc), NULL, NULL, &f->cfg, 2000), 0);
	assert_int_equal(st->errors[DP_ERR_IPIP], 1);
	assert_non_null(strstr(st->problem, "IPIP unavailable"));
	dataplane_free(dp);
	fixture_free(f);
}

static void test_ipip_on_a_kernel_with_it(void **state)
{
	struct fixture *f = fixture();
	nl_record_allow_ipip(f->nl);
	put(f->calc,
	    obj("apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: p}\n"
		"spec: {cidr: 10.10.0.0/16, ipipMode: CrossSubnet}\n"),
	    NULL, "p");
	put(f->calc,
	    obj("apiVersion: projectcalico.org/v3\nkind: Node\nmetadata: {name: node1}\n"
		"spec: {bgp: {ipv4Address: 192.168.100.11/24, ipv4IPIPTunnelAddr: 10.10.1.1}}\n"),
	    NULL, "node1");
	put(f->calc,
	    obj("apiVersion: projectcalico.org/v3\nkind: Node\nmetadata: {name: node2}\n"
		"spec: {bgp: {ipv4Address: 192.168.100.12/24}}\n"),
	    NULL, "node2");
	put(f->calc,
	    obj("apiVersion: projectcalico.org/v3\nkind: Node\nmetadata: {name: node3}\n"
		"spec: {bgp: {ipv4Address: 192.168.200.13/24}}\n"),
	    NULL, "node3");
	put(f->calc, affinity("node1", "10.10.1.0/26"), "node1", "10.10.1.0-26");
	put(f->calc, affinity("node2", "10.10.2.0/26"), "node2", "10.10.2.0-26");
	put(f->calc, affinity("node3", "10.10.3.0/26"), "node3", "10.10.3.0-26");
	struct dataplane *dp = new_dataplane(f);
	assert_int_equal(dataplane_apply(dp, calc_desired(f->calc), NULL, NULL, &f->cfg, 1000), 0);
	/* The device, its MTU (host 1500 - 20) and address, and the cross-subnet route only. */
	assert_true(logged(f, "link add tunl0 type ipip up"));
	assert_true(logged(f, "link set tunl0 mtu 1480 up"));
	assert_true(logged(f, "addr add 10.10.1.1/32 dev tunl0"));
	assert_true(logged(f, "route add 10.10.3.0/26 via 192.168.200.13 dev tunl0 proto 80 "
			      "onlink"));
	assert_false(logged(f, "route add 10.10.2.0/26 via 192.168.100.12 dev tunl0 proto 80 "
			       "onlink"));
	assert_true(logged(f, "route add blackhole 10.10.1.0/26 proto 80"));
	assert_string_equal(dataplane_status(dp)->problem, "");
	assert_int_equal(dataplane_status(dp)->errors[DP_ERR_IPIP], 0);
	/* Idempotent, restart included. */
	size_t before = log_count(f);
	dataplane_request_resync(dp);
	assert_int_equal(dataplane_apply(dp, calc_desired(f->calc), NULL, NULL, &f->cfg, 2000), 0);
	assert_int_equal(log_count(f), before);
	/* The pool no longer wants IPIP: the address goes, the route goes, tunl0 stays. */
	put(f->calc,
	    obj("apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: p}\n"
		"spec: {cidr: 10.10.0.0/16}\n"),
	    NULL, "p");
	assert_int_equal(dataplane_apply(dp, calc_desired(f->calc), NULL, NULL, &f->cfg, 3000), 0);
	assert_true(logged(f, "addr del 10.10.1.1/32 dev tunl0"));
	assert_true(logged(f, "route del 10.10.3.0/26 via 192.168.200.13 dev tunl0 proto 80 onlink"));
	assert_false(logged(f, "link del tunl0"));
	dataplane_free(dp);
	fixture_free(f);
}

static bool sysctl_written(struct fixture *f, const char *prefix)
{
	for (size_t i = 0; i < sysctl_record_count(f->sys); i++)
		if (strncmp(sysctl_record_entry(f->sys, i), prefix, strlen(prefix)) == 0)
			return true;
	return false;
}

static bool kernel_has_route(struct fixture *f, const char *dst, int protocol)
{
	struct nl_route_list list = { 0 };
	struct nl_route_filter flt = { .family = AF_INET, .table = RT_TABLE_MAIN };
	assert_int_equal(nl_dump_routes(f->nl, &flt, &list), 0);
	bool found = false;
	for (size_t i = 0; i < list.n; i++) {
		char c[CIDR_STRLEN];
		found |= strcmp(cidr_str(&list.v[i].dst, c), dst) == 0 &&
			 list.v[i].protocol == protocol;
	}
	nl_route_list_free(&list);
	return found;
}

/*
 * The dataplane's own guard, whatever calc lets through: nothing of a
 * workload goes on an interface holding a host address (here a "cali"
 * interface that really is the host's, as a hostile interfacePrefix or a
 * confused operator would make it), and a route felix does not own is never
 * replaced, while a CNI route (ours) found by a failed add is adopted.
 */
static void test_host_interfaces_and_foreign_routes(void **state)
{
	struct fixture *f = fixture();
	add_link(f, "calia", true);
	add_link(f, "calih", true);
	add_link(f, "calib", true);
	struct nl_batch *b = nl_batch_new();
	struct nl_addr a = { .ifindex = ifindex(f, "calih") };
	assert_int_equal(cidr_parse("10.50.0.1/24", false, &a.addr), 0);
	nl_batch_addr(b, NL_ADD, &a);
	assert_int_equal(nl_apply(f->nl, b, NULL), 0);
	nl_batch_free(b);
	/* The host's own route to the address endpoint "a" claims (protocol boot). */
	struct nl_route host = { .protocol = RTPROT_BOOT,
				 .scope = RT_SCOPE_LINK,
				 .oif = ifindex(f, "eth0"),
				 .table = RT_TABLE_MAIN,
				 .type = RTN_UNICAST };
	assert_int_equal(cidr_parse("10.244.1.7/32", false, &host.dst), 0);
	raw(f, NL_ADD, &host);
	cluster(f);
	put(f->calc,
	    obj("apiVersion: projectcalico.org/v3\nkind: WorkloadEndpoint\n"
		"metadata: {name: h, namespace: default}\n"
		"spec: {node: node1, interfaceName: calih, ipNetworks: [10.244.1.9/32],"
		" mac: '0a:00:00:00:00:09'}\n"),
	    "default", "h");
	nl_record_clear_log(f->nl);
	struct dataplane *dp = new_dataplane(f);
	assert_int_equal(dataplane_apply(dp, calc_desired(f->calc), NULL, NULL, &f->cfg, 1000), 0);
	dump_log(f);
	/* calih: no route, no neighbour, no settings. */
	for (size_t i = 0; i < log_count(f); i++)
		assert_null(strstr(nl_record_entry(f->nl, i), "10.244.1.9"));
	assert_false(sysctl_written(f, "net/ipv4/conf/calih/"));
	assert_true(sysctl_written(f, "net/ipv4/conf/calia/"));
	assert_int_equal(dataplane_status(dp)->errors[DP_ERR_REFUSED], 4); /* 3 + the route below */
	/* 10.244.1.7/32: tried as an add (the recording kernel logs only what succeeds),
	 * refused by the kernel, left to its owner. */
	assert_false(logged(f, "route replace 10.244.1.7/32 dev calia proto 80 scope link"));
	assert_true(kernel_has_route(f, "10.244.1.7/32", RTPROT_BOOT));
	assert_false(kernel_has_route(f, "10.244.1.7/32", 80));
	/* Not tried again at every apply, but at the next resync. */
	nl_record_clear_log(f->nl);
	desired_mark_all_dirty(calc_desired(f->calc), DESIRED_ROUTE);
	assert_int_equal(dataplane_apply(dp, calc_desired(f->calc), NULL, NULL, &f->cfg, 2000), 0);
	/* calih's route is looked at (and refused) again; 10.244.1.7/32 is not tried. */
	assert_int_equal(dataplane_status(dp)->errors[DP_ERR_REFUSED], 5);
	/* Once its owner removes it, felix's route goes in. */
	raw(f, NL_DEL, &host);
	dataplane_request_resync(dp);
	assert_int_equal(dataplane_apply(dp, calc_desired(f->calc), NULL, NULL, &f->cfg, 3000), 0);
	assert_true(kernel_has_route(f, "10.244.1.7/32", 80));

	/* A CNI route for an endpoint felix has not seen: the add finds it, felix adopts it. */
	struct nl_route cni = { .protocol = 80,
				.scope = RT_SCOPE_LINK,
				.oif = ifindex(f, "calib"),
				.table = RT_TABLE_MAIN,
				.type = RTN_UNICAST };
	assert_int_equal(cidr_parse("10.244.1.8/32", false, &cni.dst), 0);
	raw(f, NL_ADD, &cni);
	put(f->calc,
	    obj("apiVersion: projectcalico.org/v3\nkind: WorkloadEndpoint\n"
		"metadata: {name: b, namespace: default}\n"
		"spec: {node: node1, interfaceName: calib, ipNetworks: [10.244.1.8/32]}\n"),
	    "default", "b");
	uint64_t refused = dataplane_status(dp)->errors[DP_ERR_REFUSED];
	nl_record_clear_log(f->nl);
	assert_int_equal(dataplane_apply(dp, calc_desired(f->calc), NULL, NULL, &f->cfg, 4000), 0);
	assert_int_equal(dataplane_status(dp)->errors[DP_ERR_REFUSED], refused);
	assert_int_equal(dataplane_apply(dp, calc_desired(f->calc), NULL, NULL, &f->cfg, 5000), 0);
	assert_true(kernel_has_route(f, "10.244.1.8/32", 80));
	/* Identical to what felix wants: nothing more is written. */
	assert_false(logged(f, "route replace 10.244.1.8/32 dev calib proto 80 scope link"));
	dataplane_free(dp);
	fixture_free(f);
}

static bool ips_logged(struct ips *ips, const char *prefix)
{
	for (size_t i = 0; i < ips_record_count(ips); i++)
		if (strncmp(ips_record_entry(ips, i), prefix, strlen(prefix)) == 0)
			return true;
	return false;
}

/*
 * The policy writers under the same contract as the routing ones, against
 * the recording iptables and ip sets: sets before the rules naming them, one
 * commit per table, nothing written again (a resync, a restart), a set
 * destroyed once no rule uses it, and a failure's backoff.
 */
static void test_policy_writers(void **state)
{
	struct fixture *f = fixture();
	put(f->calc,
	    obj("apiVersion: projectcalico.org/v3\nkind: GlobalNetworkPolicy\n"
		"metadata: {name: db}\nspec:\n  selector: app == 'web'\n"
		"  ingress: [{action: Allow, source: {selector: role == 'db'}}]\n"),
	    NULL, "db");
	put(f->calc,
	    obj("apiVersion: projectcalico.org/v3\nkind: WorkloadEndpoint\n"
		"metadata: {name: a, namespace: default, labels: {app: web}}\n"
		"spec: {node: node1, interfaceName: calia, ipNetworks: [10.244.1.7/32]}\n"),
	    "default", "a");
	put(f->calc,
	    obj("apiVersion: projectcalico.org/v3\nkind: WorkloadEndpoint\n"
		"metadata: {name: b, namespace: default, labels: {role: db}}\n"
		"spec: {node: node2, interfaceName: calib, ipNetworks: [10.244.2.9/32]}\n"),
	    "default", "b");
	struct pol *pol = calc_policy(f->calc);
	struct ipt *ipt = ipt_open_recording();
	struct ips *ips = ips_open_recording();
	struct dp_backends b = { .ipt = ipt, .ips = ips };
	struct dataplane *dp = dataplane_new(&b);
	pol_flush(pol);
	assert_int_equal(dataplane_apply(dp, NULL, pol_desired(pol), NULL, &f->cfg, 1000), 0);
	assert_true(ips_logged(ips, "create cali40s:"));
	assert_true(ips_logged(ips, "add cali40s:"));
	assert_int_equal(ipt_record_commits(ipt, "filter"), 1);
	assert_int_equal(ipt_record_commits(ipt, "nat"), 1);
	struct strbuf save = STRBUF_INIT;
	sb_init(&save);
	ipt_record_save(ipt, "filter", &save);
	assert_non_null(strstr(sb_str(&save), ":cali-tw-calia"));
	assert_non_null(strstr(sb_str(&save), "-A FORWARD -m comment --comment \"cali:"));
	const struct dp_status *st = dataplane_status(dp);
	assert_int_equal(st->commits[PT_FILTER], 1);
	assert_true(st->last_apply_ok);

	/* Nothing changed: no write, after a resync either, nor from a restarted felix. */
	size_t sets_before = ips_record_count(ips);
	pol_flush(pol);
	assert_int_equal(dataplane_apply(dp, NULL, pol_desired(pol), NULL, &f->cfg, 2000), 0);
	dataplane_request_resync(dp);
	assert_int_equal(dataplane_apply(dp, NULL, pol_desired(pol), NULL, &f->cfg, 3000), 0);
	dataplane_free(dp);
	dp = dataplane_new(&b);
	assert_int_equal(dataplane_apply(dp, NULL, pol_desired(pol), NULL, &f->cfg, 4000), 0);
	assert_int_equal(ips_record_count(ips), sets_before);
	assert_int_equal(ipt_record_commits(ipt, "filter"), 1);
	assert_int_equal(ipt_record_commits(ipt, "nat"), 1);

	/* A failed write: the writer reads everything back after its backoff, and the
	 * rules naming what it could not write wait for it. */
	put(f->calc,
	    obj("apiVersion: projectcalico.org/v3\nkind: WorkloadEndpoint\n"
		"metadata: {name: c, namespace: default, labels: {role: db}}\n"
		"spec: {node: node2, interfaceName: calic, ipNetworks: [10.244.2.10/32]}\n"),
	    "default", "c");
	put(f->calc,
	    obj("apiVersion: projectcalico.org/v3\nkind: GlobalNetworkPolicy\n"
		"metadata: {name: db}\nspec:\n  selector: app == 'web'\n"
		"  ingress: [{action: Allow, source: {selector: role == 'db'}},"
		" {action: Allow, source: {nets: [192.0.2.0/24, 198.51.100.0/24]}}]\n"),
	    NULL, "db");
	ips_record_fail_next(ips, "create cali40c:", -ENOMEM);
	pol_flush(pol);
	assert_int_equal(dataplane_apply(dp, NULL, pol_desired(pol), NULL, &f->cfg, 5000), -EIO);
	st = dataplane_status(dp);
	assert_int_equal(st->errors[DP_ERR_IPSET], 1);
	assert_non_null(strstr(st->policy_problem, "ip sets"));
	assert_int_equal(ipt_record_commits(ipt, "filter"), 1); /* the rules waited */
	assert_int_equal(dataplane_next_deadline(dp), 5100);
	assert_int_equal(dataplane_apply(dp, NULL, pol_desired(pol), NULL, &f->cfg, 5050), -EIO);
	assert_int_equal(dataplane_apply(dp, NULL, pol_desired(pol), NULL, &f->cfg, 5100), 0);
	assert_true(ips_logged(ips, "add cali40s:"));
	assert_true(ips_logged(ips, "create cali40c:"));
	assert_int_equal(ipt_record_commits(ipt, "filter"), 2);
	assert_string_equal(st->policy_problem, "");

	/* The policy goes: its rules first, then (same apply) its sets. */
	struct ds_update del = { .kind = model_kind(KIND_GLOBALNETWORKPOLICY), .name = "db" };
	calc_update(f->calc, &del);
	ips_record_clear_log(ips);
	pol_flush(pol);
	assert_int_equal(dataplane_apply(dp, NULL, pol_desired(pol), NULL, &f->cfg, 6000), 0);
	assert_int_equal(ipt_record_commits(ipt, "filter"), 3);
	assert_true(ips_logged(ips, "destroy cali40s:"));
	assert_true(ips_logged(ips, "destroy cali40c:"));
	sb_reset(&save);
	ipt_record_save(ipt, "filter", &save);
	assert_null(strstr(sb_str(&save), "cali40s:"));
	sb_free(&save);
	dataplane_free(dp);
	ipt_close(ipt);
	ips_close(ips);
	fixture_free(f);
}

/* The route of ours for 10.244.1.7/32 as the kernel has it (or as an event says it). */
static bool our_route(struct fixture *f, const char *dst, struct nl_route *out)
{
	struct nl_route_list list = { 0 };
	struct nl_route_filter flt = { .family = AF_INET, .table = RT_TABLE_MAIN };
	assert_int_equal(nl_dump_routes(f->nl, &flt, &list), 0);
	bool found = false;
	for (size_t i = 0; i < list.n && !found; i++) {
		char c[CIDR_STRLEN];
		if (strcmp(cidr_str(&list.v[i].dst, c), dst) == 0 &&
		    list.v[i].protocol == NL_PROTO_BRINDLE) {
			*out = list.v[i];
			found = true;
		}
	}
	nl_route_list_free(&list);
	return found;
}

/*
 * Someone else's changes between reads: a route of ours deleted (the
 * netlink event says so; felix's own writes come back as events too and are
 * not taken for it), a chain of ours flushed (the table digest differs), a
 * member removed from a set of ours (the set's size differs). Each is put
 * back at the next apply and counted by kind; with nothing changed, the
 * checks find nothing.
 */
static void test_drift(void **state)
{
	struct fixture *f = fixture();
	add_link(f, "calia", true);
	cluster(f);
	put(f->calc,
	    obj("apiVersion: projectcalico.org/v3\nkind: GlobalNetworkPolicy\n"
		"metadata: {name: db}\nspec:\n  selector: all()\n"
		"  ingress: [{action: Allow, source: {nets: [192.0.2.0/24, 198.51.100.0/24]}}]\n"),
	    NULL, "db");
	struct pol *pol = calc_policy(f->calc);
	struct ipt *ipt = ipt_open_recording();
	struct ips *ips = ips_open_recording();
	struct dp_backends b = { .nl = f->nl, .sys = f->sys, .ipt = ipt, .ips = ips };
	struct dataplane *dp = dataplane_new(&b);
	pol_flush(pol);
	assert_int_equal(
		dataplane_apply(dp, calc_desired(f->calc), pol_desired(pol), NULL, &f->cfg, 1000),
		0);
	const struct dp_status *st = dataplane_status(dp);
	assert_false(dataplane_check(dp));

	/* Routes: the echo of felix's own add is nothing; a delete by someone else is. */
	struct nl_route r;
	assert_true(our_route(f, "10.244.1.7/32", &r));
	assert_false(dataplane_on_route(dp, &r, false, 1100));
	raw(f, NL_DEL, &r);
	assert_true(dataplane_on_route(dp, &r, true, 1100));
	nl_record_clear_log(f->nl);
	assert_int_equal(
		dataplane_apply(dp, calc_desired(f->calc), pol_desired(pol), NULL, &f->cfg, 1200),
		0);
	if (!logged(f, "route add 10.244.1.7/32 dev calia proto 80 scope link"))
		dump_log(f);
	assert_true(logged(f, "route add 10.244.1.7/32 dev calia proto 80 scope link"));
	assert_int_equal(st->drift_repairs[DP_DRIFT_ROUTE], 1);
	/* ...whose echo is nothing again. */
	assert_true(our_route(f, "10.244.1.7/32", &r));
	assert_false(dataplane_on_route(dp, &r, false, 1300));
	/* A route that is not ours, where felix has none: nothing. */
	struct nl_route other = r;
	other.protocol = 4;
	assert_int_equal(cidr_parse("10.9.0.0/24", false, &other.dst), 0);
	assert_false(dataplane_on_route(dp, &other, false, 1300));

	/* vxlan.calico deleted by someone else: made again at the next turn. */
	struct nl_link vx;
	nl_link_init(&vx);
	snprintf(vx.name, sizeof(vx.name), "vxlan.calico");
	vx.ifindex = ifindex(f, "vxlan.calico");
	assert_true(vx.ifindex > 0);
	struct nl_batch *del = nl_batch_new();
	nl_batch_link(del, NL_DEL, &vx);
	assert_int_equal(nl_apply(f->nl, del, NULL), 0);
	nl_batch_free(del);
	assert_int_equal(ifindex(f, "vxlan.calico"), 0);
	dataplane_on_link(dp, &vx, true);
	nl_record_clear_log(f->nl);
	assert_int_equal(
		dataplane_apply(dp, calc_desired(f->calc), pol_desired(pol), NULL, &f->cfg, 1350),
		0);
	assert_true(ifindex(f, "vxlan.calico") > 0);

	/* iptables: a chain of ours flushed. */
	unsigned commits = ipt_record_commits(ipt, "filter");
	struct ipt_table_state k = { 0 };
	assert_int_equal(ipt_begin(ipt, "filter", &k), 0);
	ipt_table_state_free(&k);
	assert_int_equal(ipt_flush_chain(ipt, "cali-tw-calia"), 0);
	assert_int_equal(ipt_commit(ipt), 0);
	assert_true(dataplane_check(dp));
	pol_flush(pol);
	assert_int_equal(
		dataplane_apply(dp, calc_desired(f->calc), pol_desired(pol), NULL, &f->cfg, 1400),
		0);
	assert_int_equal(ipt_record_commits(ipt, "filter"), commits + 2);
	assert_int_equal(st->drift_repairs[DP_DRIFT_IPTABLES], 1);
	assert_false(dataplane_check(dp));

	/* A rule rewritten in place (a drop made an accept, same size): the full digest, taken
	 * every 30th check, shows it within 60. */
	for (int i = 0; i < 30; i++)
		assert_false(dataplane_check(dp));
	struct strbuf save = STRBUF_INIT;
	sb_init(&save);
	ipt_record_save(ipt, "filter", &save);
	size_t pos = 0;
	char rule[512] = "";
	for (const char *line = sb_str(&save); line && *line; line = strchr(line, '\n') + 1) {
		if (strncmp(line, "-A cali-tw-calia ", 17) != 0)
			continue;
		const char *end = strchr(line, '\n');
		if (strstr(line, " -j DROP") && strstr(line, " -j DROP") < end) {
			snprintf(rule, sizeof(rule), "%.*s", (int)(end - line - 17), line + 17);
			break;
		}
		pos++;
	}
	sb_free(&save);
	char *drop = strstr(rule, " -j DROP");
	assert_non_null(drop);
	memcpy(drop, " -j ACCEPT", strlen(" -j ACCEPT") + 1);
	assert_int_equal(ipt_begin(ipt, "filter", &k), 0);
	ipt_table_state_free(&k);
	assert_int_equal(ipt_replace(ipt, "cali-tw-calia", pos, rule), 0);
	assert_int_equal(ipt_commit(ipt), 0);
	int checks = 1;
	while (!dataplane_check(dp) && checks < 60)
		checks++;
	assert_true(checks < 60);
	pol_flush(pol);
	assert_int_equal(
		dataplane_apply(dp, calc_desired(f->calc), pol_desired(pol), NULL, &f->cfg, 1450),
		0);
	assert_int_equal(st->drift_repairs[DP_DRIFT_IPTABLES], 2);

	/* ip sets: a member removed. */
	size_t before = ips_record_count(ips);
	struct ips_batch *sdel = ips_batch_new();
	struct ips_list l = { 0 };
	assert_int_equal(ips_list_sets(ips, "cali40", &l), 0);
	assert_true(l.n >= 1 && l.v[0].n >= 1);
	ips_batch_del(sdel, l.v[0].info.name, l.v[0].members[0]);
	assert_int_equal(ips_apply(ips, sdel, NULL), 0);
	ips_batch_free(sdel);
	assert_true(dataplane_check(dp));
	pol_flush(pol);
	assert_int_equal(
		dataplane_apply(dp, calc_desired(f->calc), pol_desired(pol), NULL, &f->cfg, 1500),
		0);
	assert_int_equal(st->drift_repairs[DP_DRIFT_IPSET], 1);
	assert_int_equal(ips_record_count(ips), before + 2); /* the del, and felix's add */
	struct ips_list again = { 0 };
	assert_int_equal(ips_list_sets(ips, "cali40", &again), 0);
	assert_int_equal(again.v[0].n, l.v[0].n);
	ips_list_free(&again);
	ips_list_free(&l);
	assert_false(dataplane_check(dp));

	dataplane_free(dp);
	ipt_close(ipt);
	ips_close(ips);
	fixture_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cold_start_and_idempotence),
		cmocka_unit_test(test_foreign_and_grace),
		cmocka_unit_test(test_host_interfaces_and_foreign_routes),
		cmocka_unit_test(test_grace_ends_when_endpoint_arrives),
		cmocka_unit_test(test_interface_appears_later),
		cmocka_unit_test(test_partial_failure_retried),
		cmocka_unit_test(test_endpoint_deleted),
		cmocka_unit_test(test_ipip_without_kernel_support),
		cmocka_unit_test(test_ipip_on_a_kernel_with_it),
		cmocka_unit_test(test_policy_writers),
		cmocka_unit_test(test_drift),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
