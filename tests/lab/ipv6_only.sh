#!/usr/bin/env bash
# An IPv6-only lab (examples/ipv6-only.yaml): three nodes with no IPv4 address,
# meshed over IPv6 BGP sessions only, pods with only an IPv6 address on
# different nodes. Every pod reaches every pod (across nodes only by BIRD's
# IPv6 routes); a NetworkPolicy, and one with an IPv6 ipBlock and except, give
# the grids they should; there are no IPv4 sessions, addresses or routes; what
# an IPv6-only topology cannot have is refused naming the field.
. "$(dirname "$0")/../lib/common.sh"

LAB_PREFIX=l6
. "$(dirname "$0")/../lib/lab.sh"

lab_example ipv6-only.yaml "$BT_DIR/topo.yaml"

# --- what an IPv6-only topology cannot have ---------------------------------------------------------
sed 's|cidr: "fd00:20:244::/48", blockSize: 122|cidr: 10.244.0.0/16|' "$BT_DIR/topo.yaml" >"$BT_DIR/bad.yaml"
lab_up_fails "$BT_DIR/bad.yaml" \
	"$BT_DIR/bad.yaml: subnets[0].cidr: is required: ipPools has an IPv4 pool, and node node1 runs pods"
sed 's|{name: node1, subnet: a}|{name: node1, subnet: a, ip: 192.168.1.1}|' "$BT_DIR/topo.yaml" >"$BT_DIR/bad.yaml"
lab_up_fails "$BT_DIR/bad.yaml" \
	"$BT_DIR/bad.yaml: nodes[0].ip: subnet a has no cidr (it is IPv6 only)"

# --- up: only IPv6 sessions, all Established ------------------------------------------------------------
start=$SECONDS
lab up "$BT_DIR/topo.yaml" --timeout 60 >/dev/null || bt_fail "lab up did not get ready within 60 s"
bt_log "lab up took $((SECONDS - start)) s"
status=$(lab status "$LAB") || bt_fail "lab status says not ready: $status"
for n in node1 node2 node3; do
	bt_expect_contains "status of $n: two peers, one family" "ready      2/2 Established" \
		"$(printf '%s\n' "$status" | grep "^$n ")"
done
bt_expect_contains "node1's address is IPv6" "fd00:200::2" "$(printf '%s\n' "$status" | grep '^node1 ')"
out=$(lab exec "$LAB" node1 -- brindlectl node status 2>&1) || bt_fail "node status on node1: $out"
bt_expect_contains "node status shows an IPv6 session" "fd00:200::3" "$out"
pod=$(printf '%s\n' "$status" | grep '^x/a ')
bt_expect_contains "a pod has an IPv6 address" "fd00:20:244:" "$pod"
[[ $pod =~ [0-9]+\.[0-9]+\.[0-9]+\.[0-9]+ ]] && bt_fail "a pod of an IPv6-only lab has an IPv4 address: $pod"
v4=$(lab exec "$LAB" node1 -- ip -4 addr show dev eth0)
[ -z "$v4" ] || bt_fail "node1's eth0 has an IPv4 address: $v4"
v4=$(lab exec "$LAB" node1 -- ip -4 route show proto bird)
[ -z "$v4" ] || bt_fail "node1 has IPv4 routes from BIRD: $v4"
routes=$(lab exec "$LAB" node1 -- ip -6 route show proto bird)
bt_expect_contains "node1 learned another node's IPv6 block" "fd00:20:244:" "$routes"

# --- every pod reaches every pod, by default over IPv6 ----------------------------------------------------
# (no --family: the matrix probes IPv6 unless told; lab_want's grids say IPv6)
LAB_FAMILIES=6
grid() { lab matrix "$LAB" --ports 80 -o table | sed 's/ *$//' | tr -s ' '; }
want() { lab_want "TCP/80 x/a x/b y/a y/b" "$@"; }
open=$(want "x/a . . . ." "x/b . . . ." "y/a . . . ." "y/b . . . .")
lab_until_equal 20 "every pod reaches every pod" "$open" grid
json=$(lab probe "$LAB" --from x/a --to y/a --proto tcp --port 80 -o json)
bt_expect_contains "a probe across nodes, IPv6 by default" '"family":6,"proto":"TCP","port":80,"result":"allowed"' "$json"
out=$(lab probe "$LAB" --from x/a --to y/a --proto tcp --port 80 --family 4 2>&1) &&
	bt_fail "an IPv4 probe in an IPv6-only lab was run: $out"
bt_expect_contains "an IPv4 probe is refused" "y/a has no IPv4 address" "$out"

# --- policy: a selector, then an IPv6 ipBlock with except ------------------------------------------------
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
lab_until_equal 20 "the policy's grid" "$(want "x/a . . . ." "x/b . . X X" "y/a . . . X" "y/b . . X .")" grid
lab delete "$LAB" -f "$BT_DIR/policy.yaml" >/dev/null || bt_fail "lab delete failed"
lab_until_equal 20 "open again" "$open" grid

# x/b's address, with every other address of the pool let in by an ipBlock, into namespace x
xb=$(printf '%s\n' "$status" | awk '$1 == "x/b" {print $2}')
[ -n "$xb" ] || bt_fail "no address for x/b in: $status"
cat >"$BT_DIR/ipblock.yaml" <<YAML
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: pool-but-x-b, namespace: x}
spec:
  podSelector: {}
  policyTypes: [Ingress]
  ingress:
  - from:
    - ipBlock: {cidr: "fd00:20:244::/48", except: ["$xb/128"]}
YAML
lab apply "$LAB" -f "$BT_DIR/ipblock.yaml" >/dev/null || bt_fail "lab apply of the ipBlock failed"
lab_until_equal 20 "the ipBlock's grid (x/b's address excepted)" \
	"$(want "x/a . . . ." "x/b X . . ." "y/a . . . ." "y/b . . . .")" grid

lab_leaves_nothing
bt_pass
