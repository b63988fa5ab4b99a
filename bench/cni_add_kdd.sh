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
CNI_DIR=$BRINDLE_BUILD_DIR/cni

bt_netns cp
NS=$BT_PREFIX-cp
kube_up "$BT_DIR/cp" "$NS"
K=$BT_DIR/cp
kc() { kube_kubectl "$K/admin.kubeconfig" "$@"; }
kube_brindle_crds "$K"
kc apply -f "$BT_SOURCE_DIR/deploy/rbac/brindle-cni.yaml" >/dev/null
CNICFG=$(kube_testenv user "$K" brindle-cni)
kc create clusterrolebinding brindle-cni --clusterrole brindle-cni --user brindle-cni >/dev/null
ip netns exec "$NS" "$BRINDLECTL" --datastore kubernetes --kubeconfig "$K/admin.kubeconfig" \
	apply -f - >/dev/null <<'YAML'
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: bench}
spec: {cidr: 10.249.0.0/16, blockSize: 26}
YAML
# A node has an uplink and a default route (proxy ARP and ptp's gateway need one).
ip -n "$NS" link add up0 type veth peer name up1
ip -n "$NS" addr add 192.0.2.1/24 dev up0
ip -n "$NS" link set up0 up
ip -n "$NS" link set up1 up
ip -n "$NS" route add default via 192.0.2.254 dev up0
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
 "datastore_type": "kubernetes", "kubernetes": {"kubeconfig": "$CNICFG"},
 "log_file_path": "$BT_DIR/cni.log", "log_level": "${CNI_BENCH_LOG:-info}",
 "ipam": {"type": "brindle-ipam", "ipam_lock_file": "$BT_DIR/ipam.lock"}}
JSON
)
PTP_CONF=$(
	cat <<JSON
{"cniVersion": "1.0.0", "name": "ptpbench", "type": "ptp", "ipMasq": false, "mtu": 1500,
 "ipam": {"type": "host-local", "subnet": "10.250.0.0/16", "dataDir": "$BT_DIR/host-local",
          "routes": [{"dst": "0.0.0.0/0"}]}}
JSON
)

# run PLUGINDIR PLUGIN CONF COMMAND POD IFNAME: prints the milliseconds it took
run() {
	local dir=$1 plugin=$2 conf=$3 cmd=$4 i=$5 ifname=$6 t0 t1 out
	t0=$EPOCHREALTIME
	out=$(ip netns exec "$NS" env CNI_COMMAND="$cmd" CNI_CONTAINERID="bench$i" \
		CNI_NETNS="/var/run/netns/${BT_PREFIX}p$i" CNI_IFNAME="$ifname" \
		CNI_ARGS="IgnoreUnknown=1;K8S_POD_NAMESPACE=bench;K8S_POD_NAME=pod-$i" CNI_PATH="$dir" \
		"$dir/$plugin" <<<"$conf" 2>>"$BT_DIR/stderr.log") ||
		bt_fail "$plugin $cmd pod $i: $out"
	t1=$EPOCHREALTIME
	[ "$cmd" != ADD ] || [ "$plugin" != brindle-cni ] || echo "$out" >"$BT_DIR/add.$i"
	echo $(((${t1/./} - ${t0/./}) / 1000))
}
for i in $(seq 0 $((PODS + PARALLEL))); do
	ip netns add "${BT_PREFIX}p$i"
	bt_netns+=("${BT_PREFIX}p$i")
done
: >"$BT_DIR/brindle.ms"
: >"$BT_DIR/ptp.ms"
# Warm both (page cache, the first block claim).
run "$CNI_DIR" brindle-cni "$BRINDLE_CONF" ADD 0 eth0 >/dev/null
run /usr/lib/cni ptp "$PTP_CONF" ADD 0 eth1 >/dev/null
for i in $(seq 1 "$PODS"); do
	run "$CNI_DIR" brindle-cni "$BRINDLE_CONF" ADD "$i" eth0 >>"$BT_DIR/brindle.ms"
	run /usr/lib/cni ptp "$PTP_CONF" ADD "$i" eth1 >>"$BT_DIR/ptp.ms"
done

# Many at once on one node.
first=$((PODS + 1)) last=$((PODS + PARALLEL))
t0=$(date +%s%3N)
for i in $(seq $first $last); do
	run "$CNI_DIR" brindle-cni "$BRINDLE_CONF" ADD "$i" eth0 >"$BT_DIR/par.$i" &
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

: >"$BT_DIR/brindle-del.ms"
for i in $(seq 0 "$PODS"); do
	run "$CNI_DIR" brindle-cni "$BRINDLE_CONF" DEL "$i" eth0 >>"$BT_DIR/brindle-del.ms"
	run /usr/lib/cni ptp "$PTP_CONF" DEL "$i" eth1 >/dev/null
done
for i in $(seq $first $last); do
	run "$CNI_DIR" brindle-cni "$BRINDLE_CONF" DEL "$i" eth0 >/dev/null &
done
wait
left=$(kc get ipamhandles -o name | wc -l)
[ "$left" -eq 0 ] || bt_fail "$left handles left after every DEL"

pct() { # pct FILE P: the P-th percentile (nearest rank)
	local n
	n=$(wc -l <"$1")
	sort -n "$1" | sed -n "$(((n * $2 + 99) / 100))p"
}
b50=$(pct "$BT_DIR/brindle.ms" 50) b99=$(pct "$BT_DIR/brindle.ms" 99)
p50=$(pct "$BT_DIR/ptp.ms" 50) p99=$(pct "$BT_DIR/ptp.ms" 99)
d50=$(pct "$BT_DIR/brindle-del.ms" 50)
ratio=$(awk -v a="$b50" -v b="$p50" 'BEGIN { printf "%.2f", b ? a / b : 0 }')
echo "CNI ADD on the Kubernetes datastore, $PODS sequential pods (ms)"
printf '%-36s %6s %6s\n' plugin p50 p99
printf '%-36s %6s %6s\n' "brindle-cni + brindle-ipam (KDD)" "$b50" "$b99"
printf '%-36s %6s %6s\n' "ptp + host-local" "$p50" "$p99"
echo "ratio brindle/ptp at p50: $ratio; goal: brindle p50 < 50 ms"
echo "brindle-cni DEL p50: $d50 ms"
echo "$PARALLEL ADDs at once on one node: $distinct distinct addresses in $((t1 - t0)) ms, no handle left after their DELs"
bt_pass
