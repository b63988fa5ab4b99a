#!/usr/bin/env bash
# BGP peers and external hosts over IPv6. In a dual-stack rack, FRR's bgpd
# (the ToR) has a session of each family with every node (a BGPPeer per
# address: tor1 and tor1-v6) and learns every node's IPv4 blocks over IPv4
# and its IPv6 blocks over IPv6, each from its own node. An external host with
# an address of each family reaches pods and is reached by them over both,
# without NAT: an ipBlock of its IPv6 /128 alone lets it in over IPv6 and not
# over IPv4. Then an IPv6-only rack: the ToR on IPv6 alone, an IPv6 host.
. "$(dirname "$0")/../lib/common.sh"
LAB_PREFIX=lt
. "$(dirname "$0")/../lib/lab.sh"

cat >"$BT_DIR/topo.yaml" <<YAML
name: $LAB
asNumber: 64512
subnets: [{name: rack1, cidr: 192.168.100.0/24, cidr6: "fd00:100::/64"}]
ipPools: [{cidr: 10.244.0.0/16, blockSize: 26, natOutgoing: false}, {cidr: "fd00:10:244::/48", blockSize: 122}]
nodes: [{name: node1, subnet: rack1}, {name: node2, subnet: rack1}]
bgpPeers: [{name: tor1, kind: frr, asNumber: 65001, subnet: rack1}]
externalHosts: [{name: client, ip: 203.0.113.10, ip6: "fd00:203::10", serve: [{protocol: TCP, port: 8080}]}]
namespaces: [{name: shop}]
pods:
  - {namespace: shop, name: web, node: node2, labels: {app: web}, ports: [{name: http, containerPort: 80}]}
  - {namespace: shop, name: db, node: node1, labels: {app: db}, ports: [{name: sql, containerPort: 5432}]}
YAML
lab up "$BT_DIR/topo.yaml" --timeout 60 >/dev/null || bt_fail "lab up failed"
status=$(lab status "$LAB") || bt_fail "not ready: $status"
for n in node1 node2; do
	# the other node and the ToR, each over both families
	bt_expect_contains "status of $n" "ready      4/4 Established" "$(printf '%s\n' "$status" | grep "^$n ")"
done
bt_expect_eq "a BGPPeer per address of the ToR" "tor1 tor1-v6" "$(labctl get bgppeers -o name | sed 's/.*\///' | sort | tr '\n' ' ' | sed 's/ $//')"

# expect_paths FAMILY PREFIX "HOP...": FRR's next hops for PREFIX are exactly HOP... (20 s)
expect_paths() { lab_expect_frr_paths tor1 "$@"; }
for n in node1 node2; do
	b4=$(lab exec "$LAB" $n -- ip -4 route show type blackhole | awk 'NR == 1 {print $2}')
	b6=$(lab exec "$LAB" $n -- ip -6 route show type blackhole | awk 'NR == 1 {print $2}')
	[ -n "$b4" ] && [ -n "$b6" ] || bt_fail "$n lacks a block of each family: '$b4' '$b6'"
	expect_paths 4 "$b4" "$(lab_node_addr 4 $n)"
	expect_paths 6 "$b6" "$(lab_node_addr 6 $n)"
done
bt_log "FRR learnt each node's blocks of both families, each from that node, over that family"

# --- the external host, over both families ------------------------------------------------------------
verdict() { lab probe "$LAB" --from "$1" --to "$2" --proto tcp --port "$3" "${@:4}" -o json | sed 's/.*"result":"\([a-z]*\)".*/\1/'; }
bt_expect_eq "a pod reaches the host's IPv6 address" allowed "$(verdict shop/db ip:fd00:203::10 8080)"
bt_expect_contains "ip:ADDRESS probes that address's family" '"family":6' \
	"$(lab probe "$LAB" --from shop/db --to ip:fd00:203::10 --proto tcp --port 8080 -o json)"
bt_expect_eq "and its IPv4 one" allowed "$(verdict shop/db ip:203.0.113.10 8080)"
bt_expect_eq "the host reaches a pod over IPv6" allowed "$(verdict ip:fd00:203::10 shop/web 80 --family 6)"
bt_expect_eq "and over IPv4" allowed "$(verdict ip:203.0.113.10 shop/web 80 --family 4)"
cat >"$BT_DIR/policy.yaml" <<'YAML'
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web-from-client6, namespace: shop}
spec:
  podSelector: {matchLabels: {app: web}}
  ingress: [{from: [{ipBlock: {cidr: "fd00:203::10/128"}}]}]
YAML
lab apply "$LAB" -f "$BT_DIR/policy.yaml" >/dev/null
bt_wait_for 10 "the policy to keep shop/db out over IPv6" test "$(verdict shop/db shop/web 80 --family 6)" = denied
bt_expect_eq "the host's own IPv6 address gets in (no NAT)" allowed "$(verdict ip:fd00:203::10 shop/web 80 --family 6)"
bt_expect_eq "its IPv4 address is not in the ipBlock" denied "$(verdict ip:203.0.113.10 shop/web 80 --family 4)"
lab_leaves_nothing

# --- IPv6 only: the ToR and the host on IPv6 alone ------------------------------------------------------
cat >"$BT_DIR/v6.yaml" <<YAML
name: $LAB
asNumber: 64512
subnets: [{name: rack1, cidr6: "fd00:200::/64"}]
ipPools: [{cidr: "fd00:20:244::/48", blockSize: 122}]
nodes: [{name: node1, subnet: rack1}, {name: node2, subnet: rack1}]
bgpPeers: [{name: tor1, kind: frr, asNumber: 65001, subnet: rack1}]
externalHosts: [{name: client, ip6: "fd00:203::10", serve: [{protocol: TCP, port: 8080}]}]
namespaces: [{name: shop}]
pods: [{namespace: shop, name: web, node: node2, ports: [{name: http, containerPort: 80}]}]
YAML
lab up "$BT_DIR/v6.yaml" --timeout 60 >/dev/null || bt_fail "lab up (IPv6 only) failed"
status=$(lab status "$LAB") || bt_fail "not ready: $status"
bt_expect_contains "IPv6 only: node1 has two IPv6 sessions" "ready      2/2 Established" "$(printf '%s\n' "$status" | grep "^node1 ")"
b6=$(lab exec "$LAB" node2 -- ip -6 route show type blackhole | awk 'NR == 1 {print $2}')
expect_paths 6 "$b6" "$(lab_node_addr 6 node2)"
bt_expect_eq "the IPv6 host reaches the pod" allowed "$(verdict ip:fd00:203::10 shop/web 80)"
bt_expect_eq "and the pod the host" allowed "$(verdict shop/web ip:fd00:203::10 8080)"
lab_leaves_nothing
bt_pass
