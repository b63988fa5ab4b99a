#!/usr/bin/env bash
# examples/route-reflector.yaml: the mesh off, every node has exactly one BGP
# session, to the reflector rr1 (which has one per node); every node learns
# every other node's block from rr1 with the owner as next hop; every pod
# reaches every pod.
. "$(dirname "$0")/../lib/common.sh"
LAB_PREFIX=lf
. "$(dirname "$0")/../lib/lab.sh"

lab_example route-reflector.yaml "$BT_DIR/topo.yaml"
lab up "$BT_DIR/topo.yaml" --timeout 40 >/dev/null || bt_fail "lab up failed"
status=$(lab status "$LAB") || bt_fail "not ready: $status"
node_ip() { printf '%s\n' "$status" | awk -v n="$1" '$1 == n { print $2 }'; }
rr=$(node_ip rr1)
rr_=${rr//./_}
birdc_() { birdc -s "$STATE/$1/bird.ctl" "${@:2}"; }

bt_expect_contains "rr1 has a session per node" "ready      3/3 Established" "$(printf '%s\n' "$status" | grep '^rr1 ')"
for n in node1 node2 node3; do
	sessions=$(birdc_ $n show protocols | awk '$2 == "BGP" { print $1, $6 }')
	bt_expect_eq "$n's only BGP session is to the reflector" "Node_${rr_} Established" "$sessions"
done

# every_block_via_rr: each node has each other node's block from rr1, next hop the owner
every_block_via_rr() {
	local n m block
	for n in node1 node2 node3; do
		for m in node1 node2 node3; do
			[ $n = $m ] && continue
			block=$(lab exec "$LAB" $m -- ip -4 route show type blackhole | awk '{print $2; exit}')
			[ -n "$block" ] || return 1
			birdc_ $n show route "$block" | grep -q "\[Node_${rr_} .* from $rr\]" || return 1
			lab exec "$LAB" $n -- ip -4 route show "$block" | grep -q "via $(node_ip $m) dev eth0 proto bird" || return 1
		done
	done
}
bt_wait_for 20 "every block reflected by rr1 with its owner as next hop" every_block_via_rr
bt_log "routes propagate through the reflector only"

all_open=$(
	cat <<'GRID'
TCP/80  x/a  x/b  x/c
x/a     .    .    .
x/b     .    .    .
x/c     .    .    .

. allowed   X denied   - skipped
GRID
)
bt_expect_eq "every pod reaches every pod" "$all_open" "$(lab matrix "$LAB" | sed 's/ *$//')"

lab_leaves_nothing
bt_pass
