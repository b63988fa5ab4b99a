#!/usr/bin/env bash
# brindle-controllers' IPAM garbage collection against the real
# kube-apiserver, as the brindle-controllers ClusterRole allows. Three pods
# get addresses through brindle-ipam and a node a VXLAN tunnel address
# through brindle-node startup; nothing is taken while their owners live. A
# pod deleted without a CNI DEL loses its address only after the grace
# period; a node deleted outright loses its tunnel address, its pod's
# address and its block at once; the metrics count each reason, Events name
# the pods and the node, and the readiness says the scans work.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/kube.sh"

CTRL=$BT_BUILD_DIR/controllers/brindle-controllers
NODEBIN=$BT_BUILD_DIR/node/brindle-node
CNI_DIR=$BT_BUILD_DIR/cni
kube_test_plane
kube_brindle_cni "$K"
kube_brindle_node "$K"
kube_brindle_controllers "$K"
CTRLCFG=$KUBE_CTRLCFG

kc apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Node
metadata: {name: n1}
---
apiVersion: v1
kind: Node
metadata: {name: n2}
---
apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: crd.projectcalico.org/v1
kind: IPPool
metadata: {name: pods}
spec: {cidr: 10.244.0.0/24, blockSize: 26, vxlanMode: Always, nodeSelector: all()}
YAML
for p in a:n1 b:n1 c:n2; do
	kc create -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: {name: ${p%%:*}, namespace: shop}
spec: {nodeName: ${p#*:}, containers: [{name: c, image: registry.invalid/none}]}
YAML
	ip netns exec "$NS" env CNI_COMMAND=ADD CNI_CONTAINERID="c-${p%%:*}" CNI_NETNS=/dev/null \
		CNI_IFNAME=eth0 CNI_ARGS="K8S_POD_NAMESPACE=shop;K8S_POD_NAME=${p%%:*}" CNI_PATH="$CNI_DIR" \
		"$CNI_DIR/brindle-ipam" >"$BT_DIR/add.${p%%:*}" 2>&1 <<JSON ||
{"cniVersion": "1.0.0", "name": "k8s-pod-network", "type": "brindle-cni", "nodename": "${p#*:}",
 "datastore_type": "kubernetes", "kubernetes": {"kubeconfig": "$KUBE_CNICFG"},
 "log_file_path": "$BT_DIR/cni.log", "ipam": {"type": "brindle-ipam", "ipam_lock_file": "$BT_DIR/ipam.lock"}}
JSON
		bt_fail "brindle-ipam ADD for ${p%%:*}: $(cat "$BT_DIR/add.${p%%:*}")"
done
ip netns exec "$NS" env BRINDLE_DATASTORE_TYPE=kubernetes BRINDLE_KUBECONFIG="$KUBE_NODECFG" \
	NODENAME=n2 IP=10.0.0.2/24 BRINDLE_NODENAME_FILE="$BT_DIR/nodename" BRINDLE_MTU_FILE="$BT_DIR/mtu" \
	"$NODEBIN" startup >"$BT_DIR/startup.log" 2>&1 || bt_fail "startup n2: $(cat "$BT_DIR/startup.log")"
handles() { kc get ipamhandles.crd.projectcalico.org -o name | sed 's|.*/||' | sort | tr '\n' ' '; }
bt_expect_eq "four holders" "k8s-pod-network.c-a k8s-pod-network.c-b k8s-pod-network.c-c vxlan-tunnel-addr-n2 " \
	"$(handles)"

PORT=$(ip netns exec "$NS" python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
bt_run_bg controllers ip netns exec "$NS" env BRINDLE_DATASTORE_TYPE=kubernetes \
	BRINDLE_KUBECONFIG="$CTRLCFG" BRINDLE_IPAM_GC_INTERVAL=1 BRINDLE_IPAM_LEAK_GRACE=4 \
	BRINDLE_CONTROLLERS_PORT="$PORT" "$CTRL"
bt_wait_for 20 "the controllers' readiness" bt_http_ok "$NS" "http://127.0.0.1:$PORT/readiness"
metric() { ip netns exec "$NS" curl -s "http://127.0.0.1:$PORT/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
two_scans() { [ "$(metric brindle_ipam_gc_scans_total)" -ge 2 ]; }
bt_wait_for 10 "a second scan" two_scans
bt_expect_eq "owners alive: nothing taken" "k8s-pod-network.c-a k8s-pod-network.c-b k8s-pod-network.c-c vxlan-tunnel-addr-n2 " \
	"$(handles)"

# A pod deleted without a CNI DEL: its address goes, after the grace period only.
kc -n shop delete pod a --grace-period=0 --force >/dev/null 2>&1
t0=$SECONDS
seen_a() { grep -q 'shop/a): pod-gone' "$BT_DIR/controllers.log"; }
bt_wait_for 10 "the controllers to see the leak" seen_a
bt_expect_contains "still held within the grace period" "k8s-pod-network.c-a" "$(handles)"
released() { h=$(handles) && [[ $h != *"$1"* ]]; }
bt_wait_for 20 "pod a's address to be released" released c-a
[ $((SECONDS - t0)) -ge 3 ] || bt_fail "released after $((SECONDS - t0)) s, within the 4 s grace period"
bt_expect_eq "the others stay" "k8s-pod-network.c-b k8s-pod-network.c-c vxlan-tunnel-addr-n2 " "$(handles)"

# A node deleted outright, with its pod: both addresses and its block go without waiting.
kc delete node n2 >/dev/null
kc -n shop delete pod c --grace-period=0 --force >/dev/null 2>&1
t0=$SECONDS
only_b() { [ "$(handles)" = "k8s-pod-network.c-b " ]; }
bt_wait_for 10 "n2's addresses to be released" only_b
[ $((SECONDS - t0)) -lt 4 ] || bt_fail "a deleted node's addresses waited for the grace period"
bt_expect_eq "only b's address is held" "k8s-pod-network.c-b " "$(handles)"
no_n2_affinity() { ! kc get blockaffinities.crd.projectcalico.org -o yaml | grep -q 'node: n2'; }
bt_wait_for 10 "n2's block and affinity to go" no_n2_affinity
bt_expect_eq "released: pod-gone" "2" "$(metric 'brindle_ipam_gc_released_total{reason="pod-gone"}')"
bt_expect_eq "released: tunnel-node-gone" "1" "$(metric 'brindle_ipam_gc_released_total{reason="tunnel-node-gone"}')"
bt_http_ok "$NS" "http://127.0.0.1:$PORT/readiness" || bt_fail "not ready after its scans"
# and Events say it, about the pods and the node
events() { kc get events -n "$1" --field-selector reason=IPAMAddressReleased -o jsonpath='{range .items[*]}{.involvedObject.kind}/{.involvedObject.name}: {.message}{"\n"}{end}'; }
bt_expect_contains "an event about pod a" "Pod/a: released 10.244.0.0 (handle k8s-pod-network.c-a): pod-gone" "$(events shop)"
bt_expect_contains "an event about pod c" "Pod/c: released" "$(events shop)"
bt_expect_contains "an event about node n2" "Node/n2: released" "$(events default)"
bt_pass
