#!/usr/bin/env bash
# Policy end to end on a three-node lab, in both datastore modes (tier lab on
# etcd, lab-kdd on Kubernetes) and for each family (BT_LAB_FAMILY: IPv4, an
# IPv6-only lab, a dual-stack one where both grids must hold): each policy below is applied with lab apply,
# the probe matrix must become exactly the expected grid, and after lab delete
# everything is reachable again. Kubernetes NetworkPolicy with a pod selector
# and a named port; with a namespace selector, and egress to a namespace AND
# pod selector; Calico GlobalNetworkPolicy selecting a namespace, with a
# namespaceSelector in a rule and a final Deny. (Service-account selectors
# on Kubernetes: tests/kube/felix_kdd.sh; on etcd: tests/netns/felix_policy_sa.sh.)
. "$(dirname "$0")/../lib/common.sh"
LAB_PREFIX=lq
. "$(dirname "$0")/../lib/lab.sh"

cat >"$BT_DIR/topo.yaml" <<YAML
name: $LAB
subnets: [{name: a, cidr: 192.168.100.0/24}]
ipPools: [{cidr: 10.244.0.0/16, blockSize: 26}]
nodes: [{name: node1, subnet: a}, {name: node2, subnet: a}, {name: node3, subnet: a}]
namespaces:
  - {name: a, labels: {team: a}}
  - {name: b, labels: {team: b}}
  - {name: c, labels: {team: c}}
pods:
  - {namespace: a, name: cli, node: node2, labels: {app: client}, ports: [{name: http, containerPort: 80}]}
  - {namespace: a, name: web, node: node1, labels: {app: web}, ports: [{name: http, containerPort: 80}]}
  - {namespace: b, name: cli, node: node1, labels: {app: client}, ports: [{name: http, containerPort: 80}]}
  - {namespace: b, name: web, node: node2, labels: {app: web}, ports: [{name: http, containerPort: 80}]}
  - {namespace: c, name: cli, node: node3, labels: {app: client}, ports: [{name: http, containerPort: 80}]}
YAML
lab up "$BT_DIR/topo.yaml" --timeout 40 >/dev/null || bt_fail "lab up failed"

# The grid with runs of spaces squeezed (column widths are the table's business).
# (lab_grid and lab_want: a grid per family with BT_LAB_FAMILY=6 or dual)
grid() { lab_grid --ports 80; }
want() { lab_want "TCP/80 a/cli a/web b/cli b/web c/cli" "$@"; }
all_open=$(want "a/cli . . . . ." "a/web . . . . ." "b/cli . . . . ." "b/web . . . . ." \
	"c/cli . . . . .")
# until_grid NAME WANT: the grid becomes WANT within 15 s (felix applies within ms; BGP is up)
until_grid() {
	local deadline=$((SECONDS + 15)) got
	until got=$(grid) && [ "$got" = "$2" ]; do
		[ $SECONDS -lt $deadline ] || bt_expect_eq "$1" "$2" "$got"
		sleep 0.3
	done
	bt_log "$1: ok"
}
# case NAME FILE WANT: applied, the grid is WANT; deleted, everything is open again
case_of() {
	lab apply "$LAB" -f "$2" >/dev/null || bt_fail "$1: lab apply failed"
	until_grid "$1" "$3"
	lab delete "$LAB" -f "$2" >/dev/null || bt_fail "$1: lab delete failed"
	until_grid "$1, deleted" "$all_open"
}

until_grid "no policy" "$all_open"

# 1. Ingress to a's web only from pods labelled app=client of its own namespace, on the
#    named port "http". A pod's connection to its own address never leaves it.
cat >"$BT_DIR/p1.yaml" <<'YAML'
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web-from-clients, namespace: a}
spec:
  podSelector: {matchLabels: {app: web}}
  policyTypes: [Ingress]
  ingress: [{from: [{podSelector: {matchLabels: {app: client}}}], ports: [{port: http}]}]
YAML
case_of "pod selector and named port" "$BT_DIR/p1.yaml" "$(want \
	"a/cli . . . . ." \
	"a/web . . . . ." \
	"b/cli . X . . ." \
	"b/web . X . . ." \
	"c/cli . X . . .")"

# 2. b's web takes connections from team a's namespace only; b's client may connect only
#    to team a's web (namespace AND pod selector in one peer).
cat >"$BT_DIR/p2.yaml" <<'YAML'
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web-from-team-a, namespace: b}
spec:
  podSelector: {matchLabels: {app: web}}
  ingress: [{from: [{namespaceSelector: {matchLabels: {team: a}}}]}]
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: client-to-team-a-web, namespace: b}
spec:
  podSelector: {matchLabels: {app: client}}
  policyTypes: [Egress]
  egress:
  - to: [{namespaceSelector: {matchLabels: {team: a}}, podSelector: {matchLabels: {app: web}}}]
YAML
case_of "namespace selectors, ingress and egress" "$BT_DIR/p2.yaml" "$(want \
	"a/cli . . . . ." \
	"a/web . . . . ." \
	"b/cli X . . X X" \
	"b/web . . . . ." \
	"c/cli . . . X .")"

# 3. Calico: namespace c is isolated: nothing gets in, and it may only go to team a.
cat >"$BT_DIR/p3.yaml" <<'YAML'
apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: isolate-team-c}
spec:
  order: 10
  namespaceSelector: team == 'c'
  types: [Ingress, Egress]
  ingress: [{action: Deny}]
  egress:
  - {action: Allow, destination: {namespaceSelector: team == 'a'}}
  - {action: Deny}
YAML
case_of "Calico namespace isolation" "$BT_DIR/p3.yaml" "$(want \
	"a/cli . . . . X" \
	"a/web . . . . X" \
	"b/cli . . . . X" \
	"b/web . . . . X" \
	"c/cli . . X X .")"

lab_leaves_nothing
bt_pass
