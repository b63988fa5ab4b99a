#!/usr/bin/env bash
# examples/cross-subnet-vxlan.yaml: node3 is in another subnet. Every node
# got a VXLAN tunnel address from IPAM; pods on all nodes reach each other
# over TCP and UDP; node1 routes node2's block (same subnet) over eth0 and
# node3's through vxlan.calico, and only the cross-subnet probe makes
# vxlan.calico send packets.
. "$(dirname "$0")/../lib/common.sh"
LAB_PREFIX=lv
. "$(dirname "$0")/../lib/lab.sh"

lab_example cross-subnet-vxlan.yaml "$BT_DIR/topo.yaml"
lab up "$BT_DIR/topo.yaml" --timeout 40 >/dev/null || bt_fail "lab up failed"
status=$(lab status "$LAB") || bt_fail "not ready: $status"
node_ip() { printf '%s\n' "$status" | awk -v n="$1" '$1 == n { print $2 }'; }
bt_expect_eq "three VXLAN tunnel addresses" 3 "$(labctl get nodes -o yaml | grep -c 'ipv4VXLANTunnelAddr: 10\.244\.')"

# lab up waits for felix, BGP sessions and each pod serving; a route learnt over BGP may land
# in the kernel a moment later on a loaded machine (seen once in CI's VM), hence a bounded poll.
grid() { lab matrix "$LAB" | sed 's/ *$//' | tr -s ' '; }
lab_until_equal 30 "every pod reaches every pod, across subnets too" \
	"$(lab_open_grid TCP/80 UDP/53 -- x/a x/b x/c)" grid

block_of() { lab exec "$LAB" "$1" -- ip -4 route show type blackhole | awk '{print $2; exit}'; }
b2=$(block_of node2)
b3=$(block_of node3)
r2=$(lab exec "$LAB" node1 -- ip -4 route show "$b2")
r3=$(lab exec "$LAB" node1 -- ip -4 route show "$b3")
bt_expect_contains "same subnet: plain routing over eth0" "via $(node_ip node2) dev eth0" "$r2"
bt_expect_contains "other subnet: through the tunnel" "dev vxlan.calico" "$r3"
r1=$(lab exec "$LAB" node3 -- ip -4 route show "$(block_of node1)")
bt_expect_contains "and back from node3" "dev vxlan.calico" "$r1"

tx() { lab exec "$LAB" node1 -- cat /sys/class/net/vxlan.calico/statistics/tx_packets; }
before=$(tx)
for _ in 1 2 3; do lab probe "$LAB" --from x/a --to x/b --proto tcp --port 80 >/dev/null; done
bt_expect_eq "same-subnet traffic is not encapsulated" "$before" "$(tx)"
lab probe "$LAB" --from x/a --to x/c --proto tcp --port 80 >/dev/null
[ "$(tx)" -gt "$before" ] || bt_fail "cross-subnet traffic did not go through vxlan.calico"

lab_leaves_nothing
bt_pass
