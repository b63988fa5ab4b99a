#!/usr/bin/env bash
# The route-reflector recipe of docs/install.md, step by step on a lab on
# Kubernetes with the full mesh: a node labelled and given a cluster ID with
# kubectl, deploy/route-reflector/peers.yaml applied with brindlectl, then the
# mesh turned off in the existing BGPConfiguration. Every other node ends
# with one session, to the reflector; every pod reaches every pod; pings
# between pods on two client nodes lose nothing while the mesh goes.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/kube.sh"

LAB_PREFIX=lr
BT_LAB_DATASTORE=kubernetes
. "$(dirname "$0")/../lib/lab.sh"

cat >"$BT_DIR/topo.yaml" <<YAML
name: $LAB
nodeToNodeMesh: true
subnets: [{name: a, cidr: 192.168.100.0/24}]
ipPools: [{cidr: 10.244.0.0/16, blockSize: 26}]
nodes:
  - {name: node1, subnet: a, pods: false}
  - {name: node2, subnet: a}
  - {name: node3, subnet: a}
  - {name: node4, subnet: a}
namespaces: [{name: x}]
pods:
  - {namespace: x, name: a, node: node2, ports: [{name: http, containerPort: 80}]}
  - {namespace: x, name: b, node: node3, ports: [{name: http, containerPort: 80}]}
  - {namespace: x, name: c, node: node4, ports: [{name: http, containerPort: 80}]}
YAML
lab up "$BT_DIR/topo.yaml" --timeout 60 >/dev/null || bt_fail "lab up failed"
status=$(lab status "$LAB") || bt_fail "not ready: $status"
node_ip() { printf '%s\n' "$status" | awk -v n="$1" '$1 == n { print $2 }'; }
rr=$(node_ip node1)
KUBE_NETNS=lab-$LAB-fabric
kc() { kube_kubectl "$STATE/kube/admin.kubeconfig" "$@"; }
sessions() { birdc -s "$STATE/$1/bird.ctl" show protocols | awk '$2 == "BGP" { print $1, $6 }' | sort | tr '\n' ' '; }
bt_expect_eq "node2 starts in the mesh" "$(for n in node1 node3 node4; do printf 'Mesh_%s Established ' "$(node_ip $n | tr . _)"; done)" "$(sessions node2)"

# 1. the reflector: a label for the peer selector, a cluster ID
kc label node node1 route-reflector=true >/dev/null
kc annotate node node1 projectcalico.org/RouteReflectorClusterID=244.0.0.1 >/dev/null
bt_expect_contains "brindlectl sees the reflector" "244.0.0.1" "$(labctl get node node1 -o yaml)"
# 2. every node peers with the reflectors
labctl apply -f "$BT_SOURCE_DIR/deploy/route-reflector/peers.yaml" >/dev/null
# 3. until the sessions to the reflector are up
to_rr() { local n; for n in node2 node3 node4; do [[ "$(sessions $n)" == *"Node_${rr//./_} Established"* ]] || return 1; done; }
bt_wait_for 30 "every node's session to the reflector" to_rr

# 4. the mesh off, in the BGPConfiguration the cluster has, under pings between two client nodes
ip_c=$(printf '%s\n' "$status" | awk '$1 == "x/c" { print $2 }')
lab exec "$LAB" x/a -- ping -q -i 0.01 -c 600 -W 1 "$ip_c" >"$BT_DIR/ping.out" 2>&1 &
ping_pid=$!
sleep 1
labctl get bgpconfiguration default -o yaml | sed 's/nodeToNodeMeshEnabled: true/nodeToNodeMeshEnabled: false/' >"$BT_DIR/bgp.yaml"
grep -q "nodeToNodeMeshEnabled: false" "$BT_DIR/bgp.yaml" || bt_fail "no mesh setting to turn off: $(cat "$BT_DIR/bgp.yaml")"
labctl apply -f "$BT_DIR/bgp.yaml" >/dev/null
only_rr() { local n; for n in node2 node3 node4; do [ "$(sessions $n)" = "Node_${rr//./_} Established " ] || return 1; done; }
bt_wait_for 30 "every client node's only session to be the reflector's" only_rr
wait $ping_pid || true
loss=$(sed -n 's/.* \([0-9.]*\)% packet loss.*/\1/p' "$BT_DIR/ping.out")
bt_expect_eq "no ping lost while the mesh went ($(grep packets "$BT_DIR/ping.out"))" 0 "$loss"
bt_log "the mesh off under pings every 10 ms: $(grep packets "$BT_DIR/ping.out")"
bt_expect_eq "the reflector has a session per node" \
	"$(for n in node2 node3 node4; do printf 'Node_%s Established ' "$(node_ip $n | tr . _)"; done)" "$(sessions node1)"

all_open=$(
	cat <<'GRID'
TCP/80  x/a  x/b  x/c
x/a     .    .    .
x/b     .    .    .
x/c     .    .    .

. allowed   X denied   - skipped
GRID
)
bt_expect_eq "every pod reaches every pod" "$all_open" "$(lab matrix "$LAB" | sed 's/ *$//')"
lab_leaves_nothing
bt_pass
