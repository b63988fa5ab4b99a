#!/usr/bin/env bash
# Route ownership between BIRD and felix, live. node-1 holds routes as felix
# would write them (protocol 80): the blackhole of its own block, a pod route
# on a cali interface, a VXLAN-style route for a tunnelled pool, the tunnel
# route of a CrossSubnet block in another subnet, and a pod borrowed from
# node-2's block. BIRD must install only plain BGP routes (including
# CrossSubnet blocks in the same subnet), never touch the protocol-80
# routes (also across a reload and a BIRD restart), advertise the borrowed
# pod as a /32 and keep node-1's own pods inside the block's aggregate.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/confd.sh"

bt_start_etcd
cat >"$BT_DIR/cluster.yaml" <<'YAML'
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: plain}
spec: {cidr: 10.244.0.0/16}
---
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: vxlan}
spec: {cidr: 10.245.0.0/16, vxlanMode: Always}
---
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: cross}
spec: {cidr: 10.246.0.0/16, vxlanMode: CrossSubnet}
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
spec: {bgp: {ipv4Address: 10.98.0.13/24}}
YAML
"$BRINDLECTL" apply -f "$BT_DIR/cluster.yaml" >/dev/null
for i in 1 2 3; do
	for p in 244 245 246; do
		confd_affinity "node-$i" "10.$p.$i.0/26"
	done
done

confd_switch
confd_node node-1 10.99.0.11/24
confd_node node-2 10.99.0.12/24
confd_node node-3 10.98.0.13/24
# node-3 is in another subnet on the same wire: reachable, but "cross-subnet".
for i in 1 2; do ip -n "$(confd_ns "node-$i")" route add 10.98.0.0/24 dev eth0; done
ip -n "$(confd_ns node-3)" route add 10.99.0.0/24 dev eth0

# felix's routes on node-1 (protocol 80).
n1=$(confd_ns node-1)
ip -n "$n1" link add cali0a1b2c3d4e type veth peer name pod0
ip -n "$n1" link set cali0a1b2c3d4e up
ip -n "$n1" link set pod0 up
ip -n "$n1" route add blackhole 10.244.1.0/26 proto 80
ip -n "$n1" route add 10.244.1.5/32 dev cali0a1b2c3d4e proto 80 scope link
ip -n "$n1" route add 10.244.2.77/32 dev cali0a1b2c3d4e proto 80 scope link # borrowed
ip -n "$n1" route add 10.245.2.0/26 via 10.99.0.12 dev eth0 proto 80 onlink
ip -n "$n1" route add 10.246.3.0/26 via 10.98.0.13 dev eth0 proto 80 onlink
felix_routes() { ip -n "$n1" route show proto 80 | sort; }
before=$(felix_routes)

for i in 1 2 3; do confd_start "node-$i"; done
for i in 1 2 3; do confd_bird "node-$i"; done
for i in 1 2 3; do
	bt_wait_for 60 "node-$i's mesh to be Established" confd_all_established "node-$i" 2
done

bird_route() { ip -n "$(confd_ns "$1")" route show "$2" proto bird; }
has_bird_route() { bird_route "$1" "$2" | grep -q "$3"; }
bt_wait_for 30 "node-1 to install node-2's plain block" has_bird_route node-1 10.244.2.0/26 "via 10.99.0.12"
bt_wait_for 30 "node-1 to install node-3's plain block" has_bird_route node-1 10.244.3.0/26 "via 10.98.0.13"
bt_wait_for 30 "node-1 to install node-2's CrossSubnet block (same subnet)" \
	has_bird_route node-1 10.246.2.0/26 "via 10.99.0.12"
bt_wait_for 30 "node-2 to install the pod borrowed by node-1" has_bird_route node-2 10.244.2.77 "via 10.99.0.11"

# BGP did bring the tunnelled blocks (BIRD knows them) but the kernel filter kept them out.
out=$(confd_birdc node-1 show route 10.245.2.0/26 protocol Mesh_10_99_0_12)
bt_expect_contains "BIRD learned the VXLAN block over BGP" "10.245.2.0/26" "$out"
for p in 10.245.2.0/26 10.245.3.0/26 10.246.3.0/26 10.244.1.0/26; do
	bt_expect_eq "no BIRD route for $p on node-1" "" "$(bird_route node-1 $p)"
done
bt_expect_eq "node-1's own pod stays inside the aggregate" "" "$(bird_route node-2 10.244.1.5)"
bt_expect_eq "felix's routes untouched" "$before" "$(felix_routes)"

# A change (and so a reload), then a BIRD restart: still untouched.
confd_affinity node-2 10.244.2.64/26
bt_wait_for 30 "node-1 to learn the new block" has_bird_route node-1 10.244.2.64/26 "via 10.99.0.12"
bt_expect_eq "felix's routes untouched after a reload" "$before" "$(felix_routes)"
kill "${BIRD_PID[node-1]}"
bt_wait_for 20 "node-1's BIRD to stop" sh -c "! kill -0 ${BIRD_PID[node-1]} 2>/dev/null"
bt_expect_eq "felix's routes untouched by BIRD's shutdown" "$before" "$(felix_routes)"
confd_bird node-1
bt_wait_for 60 "node-1's mesh to be Established again" confd_all_established node-1 2
bt_wait_for 30 "node-1 to install node-2's block again" has_bird_route node-1 10.244.2.0/26 "via 10.99.0.12"
bt_expect_eq "felix's routes untouched after a restart" "$before" "$(felix_routes)"
confd_stop_all
bt_pass
