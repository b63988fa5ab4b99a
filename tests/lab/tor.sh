#!/usr/bin/env bash
# examples/tor-peering.yaml: FRR's bgpd as a top-of-rack router learns every
# node's blocks, each from its own node only; a BGPFilter on its BGPPeer
# holds one block back until removed; after the example's service
# file the externalTrafficPolicy: Local service's /32s come only from the
# node with its endpoint, the ranges from every node. The external host
# reaches pods and a node's serve port and is reached by pods, without NAT
# (a policy allowing only its address lets it in and keeps pods out).
. "$(dirname "$0")/../lib/common.sh"
LAB_PREFIX=lr
. "$(dirname "$0")/../lib/lab.sh"

lab_example tor-peering.yaml "$BT_DIR/topo.yaml"
lab up "$BT_DIR/topo.yaml" --timeout 40 >/dev/null || bt_fail "lab up failed"
status=$(lab status "$LAB") || bt_fail "not ready: $status"
for n in node1 node2 node3; do
	# the two other nodes and the ToR
	bt_expect_contains "status of $n" "ready      3/3 Established" "$(printf '%s\n' "$status" | grep "^$n ")"
done

# expect_paths PREFIX "HOP...": FRR's next hops for PREFIX are exactly HOP... (within 20 s)
expect_paths() { lab_expect_frr_paths tor1 4 "$1" "$2"; }
node_ip() { lab status "$LAB" | awk -v n="$1" '$1 == n { print $2 }'; }
nblocks=0
for n in node1 node2 node3; do
	ip=$(node_ip $n)
	# a node's blocks are its blackhole routes (every node has a pod, so a block)
	blocks=$(lab exec "$LAB" $n -- ip -4 route show type blackhole | awk '{print $2}')
	[ -n "$blocks" ] || bt_fail "$n has no block"
	for b in $blocks; do
		expect_paths "$b" "$ip"
		nblocks=$((nblocks + 1))
	done
done
bt_log "FRR learnt all $nblocks blocks, each from its own node"

# --- a BGPFilter on the ToR's BGPPeer: it stops learning the filtered prefix -----------------------
b1=$(lab exec "$LAB" node1 -- ip -4 route show type blackhole | awk 'NR == 1 {print $2}')
b2=$(lab exec "$LAB" node2 -- ip -4 route show type blackhole | awk 'NR == 1 {print $2}')
peer=$(labctl get bgppeers -o name | head -1)
peer=${peer##*/}
[ -n "$peer" ] || bt_fail "no BGPPeer for the ToR"
labctl apply -f - >/dev/null <<YAML || bt_fail "applying the BGPFilter failed"
apiVersion: projectcalico.org/v3
kind: BGPFilter
metadata: {name: hold-back}
spec:
  exportV4:
  - {action: Reject, matchOperator: Equal, cidr: $b1}
YAML
labctl get bgppeer "$peer" -o json | jq '.spec.filters = ["hold-back"] |
	del(.metadata.resourceVersion, .metadata.uid, .metadata.creationTimestamp)' >"$BT_DIR/peer.json"
labctl apply -f "$BT_DIR/peer.json" >/dev/null || bt_fail "adding the filter to the peer failed"
expect_paths "$b1" ""
expect_paths "$b2" "$(node_ip node2)"
bt_log "with BGPFilter hold-back, the ToR no longer learns $b1 (and still learns $b2)"
jq 'del(.spec.filters)' "$BT_DIR/peer.json" | labctl apply -f - >/dev/null || bt_fail "removing the filter failed"
expect_paths "$b1" "$(node_ip node1)"
bt_log "without it, $b1 is back"

lab apply "$LAB" -f "$BT_SOURCE_DIR/examples/tor-peering-service.yaml" >/dev/null || bt_fail "applying the service failed"
all="$(node_ip node1) $(node_ip node2) $(node_ip node3)"
expect_paths 10.96.0.0/12 "$all"
expect_paths 192.0.2.0/24 "$all"
expect_paths 192.0.2.10/32 "$(node_ip node2)"
expect_paths 10.96.0.10/32 "$(node_ip node2)"
bt_log "the Local service's /32s come only from node2, the ranges from every node"

# --- the external host ---------------------------------------------------------------------------
verdict() { lab probe "$LAB" --from "$1" --to "$2" --proto tcp --port "$3" -o json | sed 's/.*"result":"\([a-z]*\)".*/\1/'; }
bt_expect_eq "a pod reaches the external host" allowed "$(verdict shop/db ip:203.0.113.10 8080)"
bt_expect_eq "the external host reaches a pod" allowed "$(verdict ip:203.0.113.10 shop/web 80)"
bt_expect_eq "the external host reaches node1's serve port" allowed "$(verdict ip:203.0.113.10 node:node1 9100)"
cat >"$BT_DIR/policy.yaml" <<'YAML'
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web-from-client, namespace: shop}
spec:
  podSelector: {matchLabels: {app: web}}
  ingress: [{from: [{ipBlock: {cidr: 203.0.113.10/32}}]}]
YAML
lab apply "$LAB" -f "$BT_DIR/policy.yaml" >/dev/null
bt_wait_for 10 "the policy to keep shop/db out" test "$(verdict shop/db shop/web 80)" = denied
bt_expect_eq "the external host's own address reaches the pod (no NAT)" allowed \
	"$(verdict ip:203.0.113.10 shop/web 80)"
out=$(lab probe "$LAB" --from ip:203.0.113.10 --to shop/web --proto tcp --port 80 -o json)
bt_expect_contains "ip: endpoints echoed as given" '{"from":"ip:203.0.113.10","to":"shop/web"' "$out"

lab_leaves_nothing
bt_pass
