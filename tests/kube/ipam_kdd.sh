#!/usr/bin/env bash
# IPAM on the Kubernetes API: the whole of tests/integration/test_ipam_ds.c and
# test_ipam_repair.c (claims, retried ADDs, borrowing and StrictAffinity, requested addresses,
# empty blocks, 40 processes of two nodes allocating at once, 24 churning
# while the API server is stopped and started again, overlapping
# pools, orphans, every forced interleaving of a sweep and a claim and of two
# overlapping claims, interrupted claims) against the real kube-apiserver,
# with IPAM stored in Calico's CRDs. The API has no transactions, so this is
# Calico's write order and the claim that yields to an overlapping block
# (lib/sys/ipam.c), checked by the same invariants as on etcd.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/kube.sh"

kube_test_plane

for t in test_ipam_ds test_ipam_repair; do
	BRINDLE_TEST_KUBECONFIG=$K/admin.kubeconfig BRINDLE_TEST_KUBE_DIR=$K \
		timeout 600 ip netns exec "$NS" "$BT_BUILD_DIR/tests/$t" ||
		bt_fail "IPAM on the Kubernetes API failed: $t (output above)"
done
bt_pass
