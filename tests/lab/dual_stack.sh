#!/usr/bin/env bash
# A dual-stack lab (examples/dual-stack.yaml): three nodes meshed over IPv4
# and IPv6 BGP sessions, pods with an address of each family on different
# nodes. Every pod reaches every pod over both families (IPv6 across nodes
# only by BIRD's IPv6 routes); a NetworkPolicy gives the same grid over both;
# node status shows the IPv6 sessions; a topology with an IPv6 pool but no
# IPv6 prefix on a pod node is refused naming the field.
. "$(dirname "$0")/../lib/common.sh"

LAB_PREFIX=ld
. "$(dirname "$0")/../lib/lab.sh"

lab_example dual-stack.yaml "$BT_DIR/topo.yaml"

# --- what a dual-stack topology needs ---------------------------------------------------------------
sed 's|, cidr6: "fd00:100::/64"||' "$BT_DIR/topo.yaml" >"$BT_DIR/bad.yaml"
lab_up_fails "$BT_DIR/bad.yaml" \
	"$BT_DIR/bad.yaml: subnets[0].cidr6: is required: ipPools has an IPv6 pool"

# --- up: both families' sessions Established ------------------------------------------------------
start=$SECONDS
lab up "$BT_DIR/topo.yaml" --timeout 60 >/dev/null || bt_fail "lab up did not get ready within 60 s"
bt_log "lab up took $((SECONDS - start)) s"
status=$(lab status "$LAB") || bt_fail "lab status says not ready: $status"
for n in node1 node2 node3; do
	bt_expect_contains "status of $n: two peers, two families" "ready      4/4 Established" \
		"$(printf '%s\n' "$status" | grep "^$n ")"
done
out=$(lab exec "$LAB" node1 -- brindlectl node status 2>&1) || bt_fail "node status on node1: $out"
bt_expect_contains "node status shows the IPv6 sessions" "fd00:100::2" "$out"
bt_expect_contains "a pod has both addresses" "fd00:10:244:" "$(printf '%s\n' "$status" | grep '^x/a ')"

# --- every pod reaches every pod, over both families --------------------------------------------------
LAB_FAMILIES="4 6" # (a grid per family: lab_grid, lab_want)
grid() { lab_grid --ports 80; }
want() { lab_want "TCP/80 x/a x/b y/a y/b" "$@"; }
open=$(want "x/a . . . ." "x/b . . . ." "y/a . . . ." "y/b . . . .")
lab_until_equal 20 "every pod reaches every pod over IPv4 and over IPv6" "$open" grid
json=$(lab probe "$LAB" --from x/a --to y/a --proto tcp --port 80 --family 6 -o json)
bt_expect_contains "an IPv6 probe across nodes" '"family":6,"proto":"TCP","port":80,"result":"allowed"' "$json"

# --- one policy, both families ------------------------------------------------------------------------
cat >"$BT_DIR/policy.yaml" <<'YAML'
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: from-x-a, namespace: y}
spec:
  podSelector: {}
  policyTypes: [Ingress]
  ingress:
  - from:
    - namespaceSelector: {matchLabels: {ns: x}}
      podSelector: {matchLabels: {pod: a}}
YAML
lab apply "$LAB" -f "$BT_DIR/policy.yaml" >/dev/null || bt_fail "lab apply failed"
lab_until_equal 20 "the policy's grid, the same over IPv4 and IPv6" \
	"$(want "x/a . . . ." "x/b . . X X" "y/a . . . X" "y/b . . X .")" grid
lab delete "$LAB" -f "$BT_DIR/policy.yaml" >/dev/null || bt_fail "lab delete failed"
lab_until_equal 20 "open again over both" "$open" grid

lab_leaves_nothing
bt_pass
