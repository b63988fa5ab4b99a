#!/usr/bin/env bash
# A lab on Kubernetes runs deploy/brindle-node.yaml as a kubelet would
# (ctl/lab_kubelet.c): each node's processes are the DaemonSet's containers
# with its commands and environment and the brindle-node ServiceAccount's
# token where a kubelet mounts it; install-cni put the plugin, a kubeconfig
# of the brindle-cni account and the conflist on the node's host, and the
# lab's pods were networked through them; nothing of it reached the
# machine's own files or mounts. Then brindle-controllers, run from the
# Deployment with the lab's brindle-config: a pod deleted without a CNI DEL
# loses its address after the grace period, a node deleted outright its
# addresses and block at once.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/kube.sh"

LAB_PREFIX=ld
BT_LAB_DATASTORE=kubernetes
. "$(dirname "$0")/../lib/lab.sh"

cat >"$BT_DIR/topo.yaml" <<YAML
name: $LAB
encapsulation: VXLAN
subnets: [{name: a, cidr: 192.168.100.0/24}]
ipPools: [{cidr: 10.244.0.0/16, blockSize: 26}]
nodes: [{name: node1, subnet: a}, {name: node2, subnet: a}]
namespaces: [{name: x}]
pods:
  - {namespace: x, name: a, node: node1}
  - {namespace: x, name: b, node: node1}
  - {namespace: x, name: c, node: node2}
brindleConfig: {BRINDLE_IPAM_GC_INTERVAL: "1", BRINDLE_IPAM_LEAK_GRACE: "4"}
YAML

# mounts of the machine where the lab could have made some (other tests may add their own elsewhere)
lab_mounts() {
	awk -v s="$STATE" '{ m = $5 } m == s || index(m, s "/") == 1 ||
		m ~ "^/(etc/cni|opt/cni|var/lib/brindle|var/log/brindle|run/brindle|run/secrets|var/run/secrets|host|lib/modules|run/xtables.lock)(/|$)" { print m }' /proc/self/mountinfo
}
mounts_before=$(lab_mounts)
had_opt_cni=$([ -e /opt/cni ] && echo yes || echo no)
lab up "$BT_DIR/topo.yaml" --timeout 60 >/dev/null || bt_fail "lab up failed"

# --- the DaemonSet's containers -----------------------------------------------------------------------
# a container's process: the child of the supervisor the lab records (which restarts it)
pid_of() {
	local s
	s=$(awk -v l="$1" '$3 == l {print $1}' "$STATE/pids")
	[ -n "$s" ] && awk '{print $1}' "/proc/$s/task/$s/children" 2>/dev/null
}
# the subject of a ServiceAccount token (its JWT's payload)
subject() {
	local p
	p=$(cut -d. -f2 <"$1" | tr '_-' '/+')
	while [ $((${#p} % 4)) -ne 0 ]; do p="$p="; done
	printf '%s' "$p" | base64 -d | python3 -c 'import json,sys; print(json.load(sys.stdin)["sub"])'
}
manifest=$BT_SOURCE_DIR/deploy/brindle-node.yaml
for c in felix confd bird cni-token; do
	pid=$(pid_of "node1-$c")
	[ -n "$pid" ] && kill -0 "$pid" || bt_fail "node1's container $c is not running"
done
cmd() { tr '\0' ' ' <"/proc/$(pid_of "node1-$1")/cmdline"; }
bt_expect_contains "felix is the lab's brindle-felix" "/felix/brindle-felix" "$(cmd felix)"
bt_expect_contains "confd with the manifest's arguments" \
	"brindle-confd --output-dir /var/run/brindle/bird --bird-socket /var/run/brindle/bird/bird.ctl" "$(cmd confd)"
bt_expect_contains "BIRD as the manifest starts it" "bird -f -c /var/run/brindle/bird/bird.conf" "$(cmd bird)"
bt_expect_contains "the token sidecar" "brindle-node install-cni --watch" "$(cmd cni-token)"
fpid=$(pid_of node1-felix)
env_of() { tr '\0' '\n' <"/proc/$fpid/environ" | sort; }
api="KUBERNETES_SERVICE_HOST=$(kube_state "$STATE/kube" API_ADDR)"
bt_expect_contains "felix: the API as a kubelet gives it" "$api" "$(env_of)"
for kv in BRINDLE_DATASTORE_TYPE=kubernetes NODENAME=node1 FELIX_DEFAULTENDPOINTTOHOSTACTION=Accept; do
	bt_expect_contains "felix: $kv from the manifest" "$kv" "$(env_of)"
done
if env_of | grep -q KUBECONFIG; then bt_fail "felix has a kubeconfig: $(env_of | grep KUBECONFIG)"; fi
root=/proc/$fpid/root
# (/var/run is a link to /run, which would resolve against the test's own root)
sa=$root/run/secrets/kubernetes.io/serviceaccount
bt_expect_eq "felix's token" "system:serviceaccount:kube-system:brindle-node" "$(subject "$sa/token")"
bt_expect_eq "its namespace" "kube-system" "$(cat "$sa/namespace")"
grep -q ' /var/lib/brindle ro[, ]' "/proc/$fpid/mountinfo" || bt_fail "felix's /var/lib/brindle is not read-only"
[ -e "$root/var/log/brindle" ] || bt_fail "felix has no /var/log/brindle"
[ ! -e "$root/run/brindle-lab" ] || bt_fail "felix sees the lab's state (its /run is the machine's)"

# --- what install-cni and startup left on node1's host ---------------------------------------------
host=$STATE/node1/host
for f in opt/cni/bin/brindle-cni opt/cni/bin/brindle-ipam; do
	[ -x "$host/$f" ] || bt_fail "install-cni did not install /$f"
done
conflist=$host/etc/cni/net.d/10-brindle.conflist
bt_expect_contains "the conflist names the plugin's kubeconfig" "/etc/cni/net.d/brindle-kubeconfig" "$(cat "$conflist")"
sed -n 's/^    token: //p' "$host/etc/cni/net.d/brindle-kubeconfig" >"$BT_DIR/cni.token"
bt_expect_eq "the plugin's own account" "system:serviceaccount:kube-system:brindle-cni" "$(subject "$BT_DIR/cni.token")"
bt_expect_eq "startup wrote the node's name" node1 "$(cat "$host/var/lib/brindle/nodename")"
bt_expect_eq "and the pods' MTU (VXLAN: 50 less)" 1450 "$(cat "$host/var/lib/brindle/mtu")"
bt_expect_contains "the plugin logged to the host's /var/log/brindle/cni" "ADD" "$(cat "$host/var/log/brindle/cni/cni.log")"
bt_expect_contains "pod x/a networked by it, with the MTU" "mtu 1450" "$(lab exec "$LAB" x/a -- ip link show eth0)"

# --- the machine untouched ---------------------------------------------------------------------------
if [ "$had_opt_cni" = no ] && [ -e /opt/cni ]; then bt_fail "the lab made /opt/cni on the machine"; fi
bt_expect_eq "no mount of the lab's on the machine" "$mounts_before" "$(lab_mounts)"

# --- brindle-controllers from the Deployment ---------------------------------------------------------
cpid=$(pid_of controllers-controllers)
[ -n "$cpid" ] && kill -0 "$cpid" || bt_fail "brindle-controllers is not running"
bt_expect_eq "its token" "system:serviceaccount:kube-system:brindle-controllers" \
	"$(subject "/proc/$cpid/root/run/secrets/kubernetes.io/serviceaccount/token")"
bt_expect_contains "the interval from brindle-config" "IPAM GC every 1 s, grace 4 s" "$(cat "$STATE/controllers-controllers.log")"
KUBE_NETNS=lab-$LAB-fabric
kc() { kube_kubectl "$STATE/kube/admin.kubeconfig" "$@"; }
handles() { kc get ipamhandles.crd.projectcalico.org -o name | sed 's|.*/||' | sort | tr '\n' ' '; }
h_a=k8s-pod-network.lab-$LAB-x-a h_b=k8s-pod-network.lab-$LAB-x-b h_c=k8s-pod-network.lab-$LAB-x-c
all="$h_a $h_b $h_c vxlan-tunnel-addr-node1 vxlan-tunnel-addr-node2 "
bt_expect_eq "pods and tunnels hold addresses" "$all" "$(handles)"

# a pod deleted without a CNI DEL: its address goes after the grace period, not before
kc -n x delete pod a --grace-period=0 --force >/dev/null 2>&1
t0=$SECONDS
released() { [[ "$(handles)" != *"$1"* ]]; }
bt_wait_for 30 "x/a's address to be released" released "$h_a"
[ $((SECONDS - t0)) -ge 3 ] || bt_fail "released after $((SECONDS - t0)) s, within the 4 s grace period"
bt_log "a pod deleted without CNI DEL: its address released after $((SECONDS - t0)) s"

# a node deleted outright: its pod's address, its tunnel address and its block at once
kc delete node node2 >/dev/null
kc -n x delete pod c --grace-period=0 --force >/dev/null 2>&1
t0=$SECONDS
only_node1() { [ "$(handles)" = "$h_b vxlan-tunnel-addr-node1 " ]; }
bt_wait_for 10 "node2's addresses to be released" only_node1
no_node2_block() { ! kc get blockaffinities.crd.projectcalico.org -o yaml | grep -q 'node: node2'; }
bt_wait_for 10 "node2's block affinity to go" no_node2_block
bt_log "a node deleted outright: its addresses and block released after $((SECONDS - t0)) s"
events=$(kc get events -A --field-selector reason=IPAMAddressReleased -o jsonpath='{range .items[*]}{.involvedObject.kind}/{.involvedObject.name}{"\n"}{end}')
for o in Pod/a Pod/c Node/node2; do
	bt_expect_contains "an event about $o" "$o" "$events"
done

lab_leaves_nothing
bt_pass
