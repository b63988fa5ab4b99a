#!/usr/bin/env bash
# VXLAN for IPv6 (examples/dual-stack-vxlan.yaml): node3 is in another subnet
# of both families. Every node got an IPv4 and an IPv6 VXLAN tunnel address
# from IPAM; pods reach each other over both families; node1 routes node2's
# IPv6 block (same subnet) over eth0 and node3's through vxlan-v6.calico (IPv6
# in IPv6, MTU 70 below eth0's), and only the cross-subnet IPv6 probe makes
# vxlan-v6.calico send; deleted, felix makes it again with what is on it; a
# NetworkPolicy holds across the tunnel. Then an IPv6-only lab in VXLAN: every
# block of another node through vxlan-v6.calico, no vxlan.calico at all; and
# IPIP, IPv4 only, refused for it.
. "$(dirname "$0")/../lib/common.sh"
LAB_PREFIX=lw
. "$(dirname "$0")/../lib/lab.sh"

lab_example dual-stack-vxlan.yaml "$BT_DIR/topo.yaml"
lab up "$BT_DIR/topo.yaml" --timeout 60 >/dev/null || bt_fail "lab up failed"
status=$(lab status "$LAB") || bt_fail "not ready: $status"
nodes=$(labctl get nodes -o yaml)
bt_expect_eq "three IPv6 VXLAN tunnel addresses" 3 \
	"$(printf '%s\n' "$nodes" | grep -c "ipv6VXLANTunnelAddr: .*fd00:10:244:")"
bt_expect_eq "and three IPv4 ones" 3 "$(printf '%s\n' "$nodes" | grep -c 'ipv4VXLANTunnelAddr: 10\.244\.')"
bt_expect_contains "held by Calico's handle" "vxlan-v6-tunnel-addr-node1" "$(labctl get ipamhandles -o name)"

# --- every pod reaches every pod over both families, across subnets too --------------------------
LAB_FAMILIES="4 6" # (a grid per family: lab_grid, lab_open_grid)
lab_until_equal 30 "every pod reaches every pod over IPv4 and over IPv6" \
	"$(lab_open_grid TCP/80 UDP/53 -- x/a x/b x/c)" lab_grid

# --- which way IPv6 goes ------------------------------------------------------------------------------
block6_of() { lab exec "$LAB" "$1" -- ip -6 route show type blackhole | awk '{print $2; exit}'; }
r2=$(lab exec "$LAB" node1 -- ip -6 route show "$(block6_of node2)")
r3=$(lab exec "$LAB" node1 -- ip -6 route show "$(block6_of node3)")
bt_expect_contains "same subnet: plain routing over eth0" "dev eth0" "$r2"
bt_expect_contains "other subnet: through the IPv6 tunnel" "dev vxlan-v6.calico" "$r3"
# a node's ipv6VXLANTunnelAddr, from its Node resource
vtep6_of() { printf '%s\n' "$nodes" | awk -v n="name: $1" '$0 ~ n"$" {f=1} f && /ipv6VXLANTunnelAddr/ {gsub(/[" '"'"']/, "", $2); print $2; exit}'; }
vtep3=$(vtep6_of node3)
bt_expect_contains "via node3's IPv6 tunnel address" "via $vtep3" "$r3"
r1=$(lab exec "$LAB" node3 -- ip -6 route show "$(block6_of node1)")
bt_expect_contains "and back from node3" "dev vxlan-v6.calico" "$r1"
dev=$(lab exec "$LAB" node1 -- ip -d link show vxlan-v6.calico)
bt_expect_contains "the device: VNI, IPv6 underlay, no learning" "vxlan id 4096 local fd00:100::" "$dev"
bt_expect_contains "on port 4789" "dstport 4789" "$dev"
bt_expect_contains "without learning" "nolearning" "$dev"
bt_expect_contains "MTU: eth0's less 70" "mtu 1430" "$dev"
bt_expect_contains "its address is the node's tunnel address" "inet6 $(vtep6_of node1)/128 " \
	"$(lab exec "$LAB" node1 -- ip -6 addr show dev vxlan-v6.calico scope global)"
fdb=$(lab exec "$LAB" node1 -- bridge fdb show dev vxlan-v6.calico)
bt_expect_contains "node3's VTEP in the FDB, behind its IPv6 address" "dst fd00:200::" "$fdb"
neigh=$(lab exec "$LAB" node1 -- ip -6 neigh show dev vxlan-v6.calico)
bt_expect_contains "node3's tunnel address, permanent" "$vtep3 lladdr" "$neigh"

tx() { lab exec "$LAB" node1 -- cat "/sys/class/net/$1/statistics/tx_packets"; }
before=$(tx vxlan-v6.calico)
before4=$(tx vxlan.calico)
for _ in 1 2 3; do lab probe "$LAB" --from x/a --to x/b --proto tcp --port 80 --family 6 >/dev/null; done
bt_expect_eq "same-subnet IPv6 traffic is not encapsulated" "$before" "$(tx vxlan-v6.calico)"
lab probe "$LAB" --from x/a --to x/c --proto tcp --port 80 --family 6 >/dev/null
[ "$(tx vxlan-v6.calico)" -gt "$before" ] || bt_fail "cross-subnet IPv6 traffic did not go through vxlan-v6.calico"
bt_expect_eq "IPv6 does not take the IPv4 tunnel" "$before4" "$(tx vxlan.calico)"
# someone deletes the device: felix makes it again, with its neighbours, FDB entries and routes
lab exec "$LAB" node1 -- ip link del vxlan-v6.calico
back() { lab exec "$LAB" node1 -- ip -6 route show "$(block6_of node3)" | grep -o "dev vxlan-v6.calico"; }
lab_until_equal 15 "vxlan-v6.calico deleted by someone: made again, routes with it" "dev vxlan-v6.calico" back
bt_expect_contains "and node3's FDB entry" "dst fd00:200::" "$(lab exec "$LAB" node1 -- bridge fdb show dev vxlan-v6.calico)"

# --- policy across the tunnel ----------------------------------------------------------------------
cat >"$BT_DIR/policy.yaml" <<'YAML'
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: c-from-a, namespace: x}
spec:
  podSelector: {matchLabels: {pod: c}}
  policyTypes: [Ingress]
  ingress:
  - from: [{podSelector: {matchLabels: {pod: a}}}]
YAML
lab apply "$LAB" -f "$BT_DIR/policy.yaml" >/dev/null || bt_fail "lab apply failed"
probe6() { lab probe "$LAB" --from "$1" --to x/c --proto tcp --port 80 --family 6 -o json | grep -o '"result":"[a-z]*"'; }
b_to_c() { probe6 x/b; }
lab_until_equal 20 "x/b is denied x/c over IPv6, across the tunnel" '"result":"denied"' b_to_c
bt_expect_eq "x/a is still allowed" '"result":"allowed"' "$(probe6 x/a)"
lab_leaves_nothing

# --- IPv6 only, in VXLAN -----------------------------------------------------------------------------------
lab_example ipv6-only.yaml "$BT_DIR/v6.yaml"
sed -i 's/^encapsulation: None/encapsulation: IPIP/' "$BT_DIR/v6.yaml"
lab_up_fails "$BT_DIR/v6.yaml" \
	"$BT_DIR/v6.yaml: encapsulation: IPIP carries IPv4 only, and the lab has no IPv4 pool"
sed -i 's/^encapsulation: IPIP/encapsulation: VXLAN/' "$BT_DIR/v6.yaml"
lab up "$BT_DIR/v6.yaml" --timeout 60 >/dev/null || bt_fail "lab up (IPv6 only, VXLAN) failed"
LAB_FAMILIES=6
grid() { lab_grid --ports 80; }
lab_until_equal 30 "IPv6 only in VXLAN: every pod reaches every pod" \
	"$(lab_open_grid TCP/80 -- x/a x/b y/a y/b)" grid
r=$(lab exec "$LAB" node1 -- ip -6 route show "$(block6_of node2)")
bt_expect_contains "Always: the same subnet too goes through the tunnel" "dev vxlan-v6.calico" "$r"
links=$(lab exec "$LAB" node1 -- ip -o link show)
case $links in *vxlan.calico*) bt_fail "an IPv6-only node has vxlan.calico: $links" ;; esac
lab_leaves_nothing
bt_pass
