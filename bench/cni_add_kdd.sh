#!/usr/bin/env bash
# CNI ADD on the Kubernetes datastore (issue 14's goals), against the real
# kube-apiserver of scripts/kube-testenv, brindle-cni as the brindle-cni
# ClusterRole allows, the release build:
#  1. latency: PODS sequential pods through brindle-cni (reads the pod and its
#     namespace, assigns from IPAM's CRDs, sets up the veth, patches the pod),
#     interleaved pod by pod with the reference ptp + host-local plugins
#     (containernetworking-plugins in /usr/lib/cni) in one run; p50 and p99 of
#     each and brindle's ratio to ptp. Goal: p50 < 50 ms.
#  2. PARALLEL ADDs at once on one node (as a node starting many pods): no
#     address twice; then as many DELs at once: no handle left.
# The control plane's namespace is the node's host; nothing is left behind.
#
#   sudo bench/cni_add_kdd.sh [BUILD_DIR]      (default build/release, built first)
#   PODS=200 PARALLEL=50 bench/cni_add_kdd.sh
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
if [ -n "${1:-}" ]; then
	export BRINDLE_BUILD_DIR=$(cd "$1" && pwd)
elif [ -z "${BRINDLE_BUILD_DIR:-}" ]; then
	"$top/scripts/build" release >/dev/null
	export BRINDLE_BUILD_DIR=$top/build/release
fi
export BRINDLE_SOURCE_DIR=$top BRINDLECTL=$BRINDLE_BUILD_DIR/ctl/brindlectl
[ -x /usr/lib/cni/ptp ] && [ -x /usr/lib/cni/host-local ] || {
	echo "needs containernetworking-plugins (scripts/deps test)" >&2
	exit 2
}
. "$top/tests/lib/common.sh"
. "$top/tests/lib/kube.sh"
PODS=${PODS:-100} PARALLEL=${PARALLEL:-50}
. "$top/bench/cni_lib.sh"

kube_test_plane
kube_brindle_cni "$K"
ip netns exec "$NS" "$BRINDLECTL" --datastore kubernetes --kubeconfig "$K/admin.kubeconfig" \
	apply -f - >/dev/null <<'YAML'
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: bench}
spec: {cidr: 10.249.0.0/16, blockSize: 26}
YAML
cni_bench_host "$NS"
{
	echo "apiVersion: v1"
	echo "kind: List"
	echo "items:"
	echo "- {apiVersion: v1, kind: Node, metadata: {name: bench-node}}"
	echo "- {apiVersion: v1, kind: Namespace, metadata: {name: bench}}"
	for i in $(seq 0 $((PODS + PARALLEL))); do
		echo "- {apiVersion: v1, kind: Pod, metadata: {name: pod-$i, namespace: bench, labels: {app: bench}},"
		echo "   spec: {nodeName: bench-node, containers: [{name: c, image: registry.invalid/none}]}}"
	done
} >"$BT_DIR/objects.yaml"
kc create -f "$BT_DIR/objects.yaml" >/dev/null

BRINDLE_CONF=$(
	cat <<JSON
{"cniVersion": "1.0.0", "name": "k8s-pod-network", "type": "brindle-cni", "nodename": "bench-node",
 "datastore_type": "kubernetes", "kubernetes": {"kubeconfig": "$KUBE_CNICFG"},
 "log_file_path": "$BT_DIR/cni.log", "log_level": "${CNI_BENCH_LOG:-info}",
 "ipam": {"type": "brindle-ipam", "ipam_lock_file": "$BT_DIR/ipam.lock"}}
JSON
)
cni_bench_pods 0 $((PODS + PARALLEL))
cni_bench_sequential "$NS" "$BRINDLE_CONF" "$PODS"

# Many at once on one node.
first=$((PODS + 1)) last=$((PODS + PARALLEL))
t0=$(date +%s%3N)
for i in $(seq $first $last); do
	cni_bench_run "$NS" "$CNI_BENCH_BIN" brindle-cni "$BRINDLE_CONF" ADD "$i" eth0 \
		"$BT_DIR/add.$i" >/dev/null &
done
wait
t1=$(date +%s%3N)
for i in $(seq $first $last); do
	[ -s "$BT_DIR/add.$i" ] || bt_fail "parallel ADD $i gave no result"
	jq -r '.ips[0].address' "$BT_DIR/add.$i"
done | sort >"$BT_DIR/par.ips"
distinct=$(sort -u "$BT_DIR/par.ips" | wc -l)
[ "$distinct" -eq "$PARALLEL" ] || bt_fail "$PARALLEL parallel ADDs gave $distinct distinct addresses"
handles=$(kc get ipamhandles -o name | wc -l)
[ "$handles" -eq $((PODS + PARALLEL + 1)) ] || bt_fail "$handles handles for $((PODS + PARALLEL + 1)) pods"

cni_bench_del_sequential "$NS" "$BRINDLE_CONF" "$PODS"
for i in $(seq $first $last); do
	cni_bench_run "$NS" "$CNI_BENCH_BIN" brindle-cni "$BRINDLE_CONF" DEL "$i" eth0 >/dev/null &
done
wait
left=$(kc get ipamhandles -o name | wc -l)
[ "$left" -eq 0 ] || bt_fail "$left handles left after every DEL"

cni_bench_report "CNI ADD on the Kubernetes datastore, $PODS sequential pods" \
	"brindle p50 < 50 ms"
echo "$PARALLEL ADDs at once on one node: $distinct distinct addresses in $((t1 - t0)) ms, no handle left after their DELs"
bt_pass
