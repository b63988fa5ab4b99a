#!/usr/bin/env bash
# Three nodes in a full mesh, each with brindle-confd and BIRD in its own
# namespace and one etcd for all: every session reaches Established, each
# kernel gets the other nodes' blocks from BIRD (and not its own), packets
# follow those routes, and brindlectl node status reads the sessions back.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/confd.sh"

bt_start_etcd
ctl() { "$BRINDLECTL" "$@"; }

cat >"$BT_DIR/cluster.yaml" <<'YAML'
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pods}
spec: {cidr: 10.244.0.0/16}
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
YAML
ctl apply -f "$BT_DIR/cluster.yaml" >/dev/null
for i in 1 2 3; do
	confd_affinity "node-$i" "10.244.$i.0/26"
done

confd_switch
for i in 1 2 3; do
	confd_node "node-$i" "10.99.0.1$i/24"
	confd_start "node-$i"
done
for i in 1 2 3; do
	confd_bird "node-$i"
done

for i in 1 2 3; do
	bt_wait_for 60 "node-$i's two mesh sessions to be Established" confd_all_established "node-$i" 2
done
bt_log "mesh Established on all three nodes"

# Each kernel has the others' blocks, from BIRD, via their owners, and not its own.
for i in 1 2 3; do
	for j in 1 2 3; do
		if [ "$i" = "$j" ]; then
			out=$(confd_route "node-$i" "10.244.$j.0/26")
			bt_expect_eq "node-$i has no BIRD route for its own block" "" "$out"
			continue
		fi
		bt_wait_for 30 "node-$i to learn 10.244.$j.0/26" \
			sh -c "ip -n $(confd_ns "node-$i") route show 10.244.$j.0/26 | grep -q ."
		out=$(confd_route "node-$i" "10.244.$j.0/26")
		bt_expect_contains "route on node-$i" "via 10.99.0.1$j dev eth0 proto bird metric 32" "$out"
	done
done

# Real packets: an address in node-2's block answers node-1 through BIRD's route.
ip -n "$(confd_ns node-2)" addr add 10.244.2.1/32 dev lo
ip netns exec "$(confd_ns node-1)" ping -c 1 -W 2 10.244.2.1 >/dev/null ||
	bt_fail "node-1 cannot reach 10.244.2.1 on node-2"

# A block added later appears everywhere without restarting anything.
confd_affinity node-3 10.244.3.64/26
bt_wait_for 30 "node-1 to learn node-3's new block" \
	sh -c "ip -n $(confd_ns node-1) route show 10.244.3.64/26 | grep -q 'via 10.99.0.13'"

# node status reads the table back; the readiness check passes.
out=$("$BRINDLECTL" node status --bird-socket "$BT_DIR/node-1/bird.ctl")
bt_expect_contains "node status" "| 10.99.0.12   | node-to-node mesh | up    |" "$out"
bt_expect_contains "node status" "Established" "$out"
"$BRINDLECTL" node status --bird-socket "$BT_DIR/node-1/bird.ctl" --ready >/dev/null ||
	bt_fail "readiness check failed with every mesh session up"

# Take node-3's BIRD away: node-1 is no longer ready, and says which peer.
kill "${BIRD_PID[node-3]}"
bt_wait_for 30 "node-1 to notice node-3 is gone" \
	sh -c "! birdc -s $BT_DIR/node-1/bird.ctl show protocols Mesh_10_99_0_13 | grep -q Established"
set +e
out=$("$BRINDLECTL" node status --bird-socket "$BT_DIR/node-1/bird.ctl" --ready 2>&1)
rc=$?
set -e
bt_expect_eq "readiness exit code with a peer down" 1 "$rc"
bt_expect_contains "readiness message" "BGP not established with 10.99.0.13" "$out"
confd_stop_all
bt_pass
