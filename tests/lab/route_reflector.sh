#!/usr/bin/env bash
# examples/route-reflector.yaml: the mesh off, every node has exactly one BGP
# session, to the reflector rr1 (which has one per node); every node learns
# every other node's block from rr1 with the owner as next hop; every pod
# reaches every pod. With BT_LAB_FAMILY=6 or dual the same over IPv6 sessions
# (and IPv4 ones beside them: a session of each family per node).
. "$(dirname "$0")/../lib/common.sh"
LAB_PREFIX=lf
. "$(dirname "$0")/../lib/lab.sh"

lab_example route-reflector.yaml "$BT_DIR/topo.yaml"
lab up "$BT_DIR/topo.yaml" --timeout 40 >/dev/null || bt_fail "lab up failed"
status=$(lab status "$LAB") || bt_fail "not ready: $status"
birdc_() { birdc -s "$STATE/$1/bird.ctl" "${@:2}"; }
# BIRD's name of the session to ADDRESS (the naming contract: '.' and ':' become '_')
session() { local a=${1//./_}; echo "Node_${a//:/_}"; }
nf=$(echo $LAB_FAMILIES | wc -w) # a session per family (BT_LAB_FAMILY)
bt_expect_contains "rr1 has a session per node" "ready      $((3 * nf))/$((3 * nf)) Established" \
	"$(printf '%s\n' "$status" | grep '^rr1 ')"
want_sessions=$(for f in $LAB_FAMILIES; do echo "$(session "$(lab_node_addr "$f" rr1)") Established"; done | sort)
for n in node1 node2 node3; do
	sessions=$(birdc_ $n show protocols | awk '$2 == "BGP" { print $1, $6 }' | sort)
	bt_expect_eq "$n's only BGP sessions are to the reflector" "$want_sessions" "$sessions"
done

# every_block_via_rr: each node has each other node's block of each family from rr1, next hop
# the owner
every_block_via_rr() {
	local f n m block rr
	for f in $LAB_FAMILIES; do
		rr=$(lab_node_addr "$f" rr1)
		for n in node1 node2 node3; do
			for m in node1 node2 node3; do
				[ $n = $m ] && continue
				block=$(lab exec "$LAB" $m -- ip "-$f" route show type blackhole | awk '{print $2; exit}')
				[ -n "$block" ] || return 1
				birdc_ $n show route "$block" | grep -q "\[$(session "$rr") .* from $rr\]" || return 1
				lab exec "$LAB" $n -- ip "-$f" route show "$block" |
					grep -q "via $(lab_node_addr "$f" $m) dev eth0 proto bird" || return 1
			done
		done
	done
}
bt_wait_for 20 "every block reflected by rr1 with its owner as next hop" every_block_via_rr
bt_log "routes propagate through the reflector only"

bt_expect_eq "every pod reaches every pod" "$(lab_want "TCP/80 x/a x/b x/c" "x/a . . ." "x/b . . ." "x/c . . .")" \
	"$(lab_grid)"

lab_leaves_nothing
bt_pass
