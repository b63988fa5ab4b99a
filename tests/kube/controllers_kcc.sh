#!/usr/bin/env bash
# brindle-controllers takes its settings from Calico's KubeControllersConfiguration
# "default", against the real kube-apiserver under the brindle-controllers role:
# controllers.node's reconcilerPeriod and leakGracePeriod are its scan interval and
# grace period (a pod deleted without a CNI DEL loses its address only after that
# grace), the settings in force are written back into status.runningConfig, the
# environment wins over the resource (and is named in status.environmentVars), and
# without controllers.node IPAM garbage collection is off, as in Calico.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/kube.sh"

CTRL=$BT_BUILD_DIR/controllers/brindle-controllers
CNI_DIR=$BT_BUILD_DIR/cni
kube_test_plane
kube_brindle_cni "$K"
kube_brindle_controllers "$K"
CTRLCFG=$KUBE_CTRLCFG
kc apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Node
metadata: {name: n1}
---
apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: crd.projectcalico.org/v1
kind: IPPool
metadata: {name: pods}
spec: {cidr: 10.244.0.0/24, blockSize: 26, nodeSelector: all()}
---
apiVersion: crd.projectcalico.org/v1
kind: KubeControllersConfiguration
metadata: {name: default}
spec:
  controllers:
    node: {reconcilerPeriod: 1s, leakGracePeriod: 3s}
---
apiVersion: v1
kind: Pod
metadata: {name: a, namespace: shop}
spec: {nodeName: n1, containers: [{name: c, image: registry.invalid/none}]}
YAML
ip netns exec "$NS" env CNI_COMMAND=ADD CNI_CONTAINERID=c-a CNI_NETNS=/dev/null \
	CNI_IFNAME=eth0 CNI_ARGS="K8S_POD_NAMESPACE=shop;K8S_POD_NAME=a" CNI_PATH="$CNI_DIR" \
	"$CNI_DIR/brindle-ipam" >"$BT_DIR/add.a" 2>&1 <<JSON ||
{"cniVersion": "1.0.0", "name": "k8s-pod-network", "type": "brindle-cni", "nodename": "n1",
 "datastore_type": "kubernetes", "kubernetes": {"kubeconfig": "$KUBE_CNICFG"},
 "log_file_path": "$BT_DIR/cni.log", "ipam": {"type": "brindle-ipam", "ipam_lock_file": "$BT_DIR/ipam.lock"}}
JSON
	bt_fail "brindle-ipam ADD: $(cat "$BT_DIR/add.a")"
handles() { kc get ipamhandles.crd.projectcalico.org -o name | sed 's|.*/||' | sort | tr '\n' ' '; }
bt_expect_eq "the pod's address" "k8s-pod-network.c-a " "$(handles)"

bt_run_bg controllers ip netns exec "$NS" env BRINDLE_DATASTORE_TYPE=kubernetes \
	BRINDLE_KUBECONFIG="$CTRLCFG" BRINDLE_CONTROLLERS_PORT=0 "$CTRL"
said() { grep -q "$1" "$BT_DIR/controllers.log"; }
bt_wait_for 10 "the resource's settings in force" said \
	"KubeControllersConfiguration default: IPAM GC every 1 s, grace 3 s"
running() { kc get kubecontrollersconfigurations.crd.projectcalico.org default -o json |
	python3 -c 'import json,sys; d=json.load(sys.stdin); print(json.dumps(d.get("status",{}).get("runningConfig",{}).get("controllers",{}).get("node",{}), sort_keys=True))'; }
has_running() { [ "$(running)" = '{"leakGracePeriod": "3s", "reconcilerPeriod": "1s"}' ]; }
bt_wait_for 10 "status.runningConfig" has_running

# The pod deleted without a CNI DEL: its address goes after the resource's grace (3 s).
kc -n shop delete pod a --grace-period=0 --force >/dev/null 2>&1
t0=$SECONDS
gone() { [ -z "$(handles | tr -d ' ')" ]; }
bt_wait_for 15 "the leaked address to be released" gone
[ $((SECONDS - t0)) -ge 3 ] || bt_fail "released after $((SECONDS - t0)) s, before the 3 s grace"
bt_log "released after $((SECONDS - t0)) s (grace 3 s, scans every 1 s)"

# Without controllers.node: off, as in Calico. (replace, not apply: brindle-controllers' status
# writes keep no kubectl last-applied annotation, so apply could not remove a field)
kc get kubecontrollersconfigurations.crd.projectcalico.org default -o json |
	python3 -c 'import json,sys; d=json.load(sys.stdin); d["spec"]={"controllers":{}}; print(json.dumps(d))' |
	kc replace -f - >/dev/null
bt_wait_for 10 "garbage collection off" said "has no controllers.node: IPAM garbage collection is off"
kill "${bt_pids[-1]}" 2>/dev/null || true

# The environment wins, and is named.
kc apply -f - >/dev/null <<'YAML'
apiVersion: crd.projectcalico.org/v1
kind: KubeControllersConfiguration
metadata: {name: default}
spec: {controllers: {node: {leakGracePeriod: 3s}}}
YAML
ip netns exec "$NS" env BRINDLE_DATASTORE_TYPE=kubernetes BRINDLE_KUBECONFIG="$CTRLCFG" \
	BRINDLE_IPAM_LEAK_GRACE=60 "$CTRL" --once >"$BT_DIR/once.log" 2>&1 || bt_fail "--once: $(cat "$BT_DIR/once.log")"
bt_expect_contains "the variable's grace" "grace 60 s" "$(cat "$BT_DIR/once.log")"
bt_expect_contains "named in status.environmentVars" '"BRINDLE_IPAM_LEAK_GRACE": "60"' \
	"$(kc get kubecontrollersconfigurations.crd.projectcalico.org default -o json)"
bt_pass
