#!/usr/bin/env bash
# A top-of-rack router (FRR's bgpd) peers eBGP with three nodes that also
# mesh among themselves. It learns each node's blocks from that node only, a
# service range from every node, and the /32 of an externalTrafficPolicy:
# Local service only from the node with a ready endpoint, following the
# endpoint when it moves. The nodes keep service routes out of their kernels.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/confd.sh"

bt_start_etcd
cat >"$BT_DIR/cluster.yaml" <<'YAML'
apiVersion: projectcalico.org/v3
kind: BGPConfiguration
metadata: {name: default}
spec:
  asNumber: 64512
  serviceClusterIPs: [{cidr: 10.96.0.0/12}]
  serviceExternalIPs: [{cidr: 192.0.2.0/24}]
---
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pods}
spec: {cidr: 10.244.0.0/16}
---
apiVersion: projectcalico.org/v3
kind: BGPPeer
metadata: {name: tor}
spec: {peerIP: 10.99.0.1, asNumber: 65000}
---
apiVersion: projectcalico.org/v3
kind: Node
metadata: {name: node-1}
spec: {bgp: {ipv4Address: 10.99.0.11/24}}
---
apiVersion: projectcalico.org/v3
kind: Node
metadata: {name: node-2}
spec: {bgp: {ipv4Address: 10.99.0.12/24}}
---
apiVersion: projectcalico.org/v3
kind: Node
metadata: {name: node-3}
spec: {bgp: {ipv4Address: 10.99.0.13/24}}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec:
  clusterIP: 10.96.0.10
  externalIPs: [192.0.2.10]
  externalTrafficPolicy: Local
  ports: [{port: 80}]
YAML
slice() {
	cat <<YAML
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: web-1, namespace: shop, labels: {kubernetes.io/service-name: web}}
addressType: IPv4
endpoints:
- {addresses: [10.244.$1.5], nodeName: node-$1}
- {addresses: [10.244.$2.5], nodeName: node-$2, conditions: {ready: false}}
YAML
}
"$BRINDLECTL" apply -f "$BT_DIR/cluster.yaml" >/dev/null
slice 2 3 | "$BRINDLECTL" apply -f - >/dev/null
for i in 1 2 3; do
	confd_affinity "node-$i" "10.244.$i.0/26"
done

confd_switch
confd_frr tor 10.99.0.1/24 "hostname tor
router bgp 65000
 bgp router-id 10.99.0.1
 no bgp ebgp-requires-policy
 bgp bestpath as-path multipath-relax
 neighbor 10.99.0.11 remote-as 64512
 neighbor 10.99.0.12 remote-as 64512
 neighbor 10.99.0.13 remote-as 64512
 address-family ipv4 unicast
  maximum-paths 8
 exit-address-family"
for i in 1 2 3; do
	confd_node "node-$i" "10.99.0.1$i/24"
	confd_start "node-$i"
done
for i in 1 2 3; do
	confd_bird "node-$i"
done
for i in 1 2 3; do
	bt_wait_for 60 "node-$i's mesh and ToR sessions to be Established" \
		confd_all_established "node-$i" 3
done
bt_log "ToR and mesh sessions Established"

# expect_paths PREFIX WANT: FRR has PREFIX exactly from these next hops.
expect_paths() {
	local want got
	want=$(printf '%s\n' $2 | sort)
	for _ in $(seq 100); do
		got=$(confd_frr_paths tor "$1")
		[ "$got" = "$want" ] && return 0
		sleep 0.2
	done
	bt_expect_eq "FRR's next hops for $1" "$want" "$got"
}
for i in 1 2 3; do
	expect_paths "10.244.$i.0/26" "10.99.0.1$i"
done
expect_paths 10.96.0.0/12 "10.99.0.11 10.99.0.12 10.99.0.13"
expect_paths 192.0.2.0/24 "10.99.0.11 10.99.0.12 10.99.0.13"
expect_paths 192.0.2.10/32 10.99.0.12
expect_paths 10.96.0.10/32 10.99.0.12
bt_log "ToR has every block from its owner, ranges from all, the Local /32s from node-2"

# The endpoint moves to node-3: so do the /32s.
slice 3 2 | "$BRINDLECTL" apply -f - >/dev/null
expect_paths 192.0.2.10/32 10.99.0.13
expect_paths 10.96.0.10/32 10.99.0.13

# No endpoint anywhere: only the ranges remain.
"$BRINDLECTL" delete endpointslice web-1 -n shop >/dev/null
expect_paths 192.0.2.10/32 ""
expect_paths 192.0.2.0/24 "10.99.0.11 10.99.0.12 10.99.0.13"

# Service addresses never reach a node's kernel (kube-proxy's business).
for i in 1 2 3; do
	out=$(ip -n "$(confd_ns "node-$i")" route show | grep -E '^(10\.96\.|192\.0\.2\.)' || true)
	bt_expect_eq "no service routes in node-$i's kernel" "" "$out"
done
out=$("$BRINDLECTL" node status --bird-socket "$BT_DIR/node-1/bird.ctl")
bt_expect_contains "node status shows the ToR" "| 10.99.0.1    | global            | up    |" "$out"
confd_stop_all
bt_pass
