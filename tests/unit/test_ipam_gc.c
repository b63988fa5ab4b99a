/*
 * The IPAM garbage collector's decision (lib/core/ipam_gc.c): one block
 * holding an address for each case — a live pod, a pod without addresses
 * yet, a deleted pod, a pod now on another node, a pod whose addresses no
 * longer include this one, pods on a deleted node (there, and gone), tunnel addresses of a
 * live and of a deleted node, and an address with no owner to judge. Only
 * the leaks come out, with their reasons, and node_gone where their node is.
 */
#include "harness.h"

#include <brindle/core/ipam_gc.h>
#include <brindle/sys/ipam.h>

#include <string.h>

static struct br_ip assign(struct br_ipamblock *b, const char *handle, const char *ns,
			   const char *pod, const char *node, const char *type)
{
	struct br_labels attrs = { 0 };
	if (ns)
		labels_set(b->o.arena, &attrs, IPAM_ATTR_NAMESPACE, ns);
	if (pod)
		labels_set(b->o.arena, &attrs, IPAM_ATTR_POD, pod);
	if (node)
		labels_set(b->o.arena, &attrs, IPAM_ATTR_NODE, node);
	if (type)
		labels_set(b->o.arena, &attrs, "type", type);
	struct br_ip ip;
	assert_int_equal(ipam_block_assign(b, handle, &attrs, NULL, &ip), 0);
	return ip;
}

static void test_scan(void **state)
{
	(void)state;
	struct br_ipamblock *b =
		(struct br_ipamblock *)model_new(model_kind(KIND_IPAMBLOCK), NULL, "10-244-0-0-26");
	struct br_cidr cidr;
	assert_int_equal(cidr_parse("10.244.0.0/26", false, &cidr), 0);
	ipam_block_init(b, &cidr, "n1", false);
	struct br_ip live = assign(b, "k8s-pod-network.c1", "shop", "web", "n1", NULL);
	assign(b, "k8s-pod-network.c2", "shop", "starting", "n1", NULL);
	struct br_ip gone = assign(b, "k8s-pod-network.c3", "shop", "deleted", "n1", NULL);
	struct br_ip moved = assign(b, "k8s-pod-network.c4", "shop", "moved", "n1", NULL);
	struct br_ip stale = assign(b, "k8s-pod-network.c5", "shop", "readded", "n1", NULL);
	assign(b, "k8s-pod-network.c6", "shop", "ondead", "n9", NULL);
	struct br_ip dead = assign(b, "k8s-pod-network.c7", "shop", "gonedead", "n9", NULL);
	assign(b, "vxlan-tunnel-addr-n1", NULL, NULL, "n1", "vxlanTunnelAddress");
	struct br_ip tdead = assign(b, "ipip-tunnel-addr-n9", NULL, NULL, NULL, NULL);
	assign(b, "manual", NULL, NULL, NULL, NULL);

	struct br_ip other;
	assert_int_equal(ip_parse("10.244.5.5", &other), 0);
	const struct gc_pod pods[] = {
		{ "shop", "web", "n1", &live, 1 },   { "shop", "starting", "n1", NULL, 0 },
		{ "shop", "moved", "n2", NULL, 0 },  { "shop", "readded", "n1", &other, 1 },
		{ "shop", "ondead", "n9", NULL, 0 },
	};
	const char *const nodes[] = { "n2", "n1" };
	struct br_ipamblock *blocks[] = { b };
	struct gc_input in = { blocks, 1, pods, ARRAY_SIZE(pods), nodes, ARRAY_SIZE(nodes) };
	struct arena *a = arena_new();
	struct gc_leak *v;
	size_t n;
	ipam_gc_scan(a, &in, &v, &n);
	assert_int_equal(n, 5);
	struct {
		struct br_ip ip;
		const char *handle, *owner, *why;
		bool node_gone;
	} want[] = {
		{ gone, "k8s-pod-network.c3", "shop/deleted", "pod-gone", false },
		{ moved, "k8s-pod-network.c4", "shop/moved", "pod-moved", false },
		{ stale, "k8s-pod-network.c5", "shop/readded", "ip-not-pod", false },
		/* a pod still there on a deleted node keeps its address (the pod GC
		 * deletes it); one gone from a deleted node is released at once */
		{ dead, "k8s-pod-network.c7", "shop/gonedead", "pod-gone", true },
		{ tdead, "ipip-tunnel-addr-n9", "n9", "tunnel-node-gone", true },
	};
	for (size_t i = 0; i < n; i++) {
		assert_true(ip_equal(&v[i].ip, &want[i].ip));
		assert_string_equal(v[i].handle, want[i].handle);
		assert_string_equal(v[i].owner, want[i].owner);
		if (want[i].why)
			assert_string_equal(ipam_gc_reason(v[i].why), want[i].why);
		assert_int_equal(v[i].node_gone, want[i].node_gone);
	}
	arena_free(a);
	model_free(&b->o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scan),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
