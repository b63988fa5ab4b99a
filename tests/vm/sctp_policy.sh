#!/usr/bin/env bash
# SCTP policy end to end, in the VM tier's guest (scripts/vm-run: Debian's kernel, which has
# SCTP sockets): pods serve SCTP on ports 80, 81 (named "assoc"), 82 and 90, and TCP on 80;
# every probe below is a real SCTP association (brindle-probe sctp) and none is skipped.
# Kubernetes NetworkPolicies on the server x/web, each applied, the grid exactly the expected
# one, then deleted and open again:
#  1. allow SCTP/80 only: 81, 82, 90 denied; TCP/80 (another protocol, same port) denied too;
#  2. deny: an ingress policy with no rules isolates it on every SCTP port;
#  3. a named port: allow "assoc" (SCTP 81) only;
#  4. a port range: SCTP 80 with endPort 82 allows 80, 81 and 82, not 90;
#  and egress: the client x/cli allowed SCTP/90 only, to any pod.
. "$(dirname "$0")/../lib/common.sh"
LAB_PREFIX=ls
. "$(dirname "$0")/../lib/lab.sh"
[ -n "${BRINDLE_IN_VM:-}" ] || bt_fail "runs inside scripts/vm-run (the vm tier); this kernel has no SCTP sockets"
"$BT_BUILD_DIR/lab/brindle-probe" sctp-available || bt_fail "no SCTP sockets in the guest's kernel"

ports='[{name: http, containerPort: 80, protocol: TCP}, {name: sctp80, containerPort: 80, protocol: SCTP},
           {name: assoc, containerPort: 81, protocol: SCTP}, {name: sctp82, containerPort: 82, protocol: SCTP},
           {name: sctp90, containerPort: 90, protocol: SCTP}]'
cat >"$BT_DIR/topo.yaml" <<YAML
name: $LAB
asNumber: 64512
nodeToNodeMesh: true
encapsulation: None
subnets: [{name: a, cidr: 192.168.100.0/24}]
ipPools: [{cidr: 10.244.0.0/16, blockSize: 26, natOutgoing: false}]
nodes:
  - {name: node1, subnet: a}
  - {name: node2, subnet: a}
namespaces: [{name: x, labels: {ns: x}}]
pods:
  - {namespace: x, name: web, node: node1, labels: {app: web}, ports: $ports}
  - {namespace: x, name: cli, node: node2, labels: {app: cli}, ports: $ports}
YAML
lab up "$BT_DIR/topo.yaml" --timeout 240 >/dev/null || bt_fail "lab up failed"

# x/cli -> x/web on one protocol and port: allowed or denied (never skipped here)
verdict() { lab probe "$LAB" --from x/cli --to x/web --proto "$1" --port "$2" -o json | sed 's/.*"result":"\([a-z]*\)".*/\1/'; }
row() { echo "$(verdict sctp 80) $(verdict sctp 81) $(verdict sctp 82) $(verdict sctp 90) $(verdict tcp 80)"; }
open='allowed allowed allowed allowed allowed'
case_of() {
	lab apply "$LAB" -f "$2" >/dev/null || bt_fail "$1: lab apply failed"
	lab_until_equal 30 "$1 (SCTP 80 81 82 90, TCP 80)" "$3" row
	lab delete "$LAB" -f "$2" >/dev/null || bt_fail "$1: lab delete failed"
	lab_until_equal 30 "$1, deleted" "$open" row
}
lab_until_equal 30 "no policy" "$open" row
grid=$(lab matrix "$LAB" --protos sctp --ports 80)
bt_expect_contains "the matrix probes SCTP" "SCTP/80" "$grid"
printf '%s\n' "$grid" | grep -v 'skipped$' | grep -q -E '(^| )-( |$)' && bt_fail "a skipped SCTP probe in the matrix: $grid"

policy() { # NAME SELECTOR-LABEL TYPE RULE-YAML
	cat <<YAML
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: $1, namespace: x}
spec:
  podSelector: {matchLabels: {app: $2}}
  policyTypes: [$3]
$4
YAML
}
policy allow-80 web Ingress '  ingress: [{ports: [{protocol: SCTP, port: 80}]}]' >"$BT_DIR/p1.yaml"
case_of "1. SCTP/80 only" "$BT_DIR/p1.yaml" "allowed denied denied denied denied"
policy deny web Ingress '' >"$BT_DIR/p2.yaml"
case_of "2. no ingress rule" "$BT_DIR/p2.yaml" "denied denied denied denied denied"
policy named web Ingress '  ingress: [{ports: [{protocol: SCTP, port: assoc}]}]' >"$BT_DIR/p3.yaml"
case_of "3. the named port assoc" "$BT_DIR/p3.yaml" "denied allowed denied denied denied"
policy range web Ingress '  ingress: [{ports: [{protocol: SCTP, port: 80, endPort: 82}]}]' >"$BT_DIR/p4.yaml"
case_of "4. SCTP 80-82" "$BT_DIR/p4.yaml" "allowed allowed allowed denied denied"
policy egress cli Egress '  egress: [{ports: [{protocol: SCTP, port: 90}]}]' >"$BT_DIR/p5.yaml"
case_of "5. egress SCTP/90 only" "$BT_DIR/p5.yaml" "denied denied denied allowed denied"

lab_leaves_nothing
bt_pass
