#!/usr/bin/env bash
# Two nodes on one L2 segment, an IP pool with vxlanMode Always, a pod on each:
# the pod on node1 reaches the pod on node2 through the VXLAN routes, VTEP
# neighbours and FDB entries felix installed, and the packets really cross
# vxlan.calico. Then vxlanMode Never: felix removes its tunnel and routes.
. "$(dirname "$0")/../lib/common.sh"

FELIX=$BT_BUILD_DIR/felix/brindle-felix
bt_start_etcd
bt_netns node1
bt_netns node2
N1=$BT_PREFIX-node1 N2=$BT_PREFIX-node2
ip -n "$N1" link add eth0 type veth peer name eth0 netns "$N2"
ip -n "$N1" addr add 192.168.100.11/24 dev eth0
ip -n "$N2" addr add 192.168.100.12/24 dev eth0
for n in "$N1" "$N2"; do
	ip -n "$n" link set eth0 up
	ip netns exec "$n" sysctl -qw net.ipv4.ip_forward=1
	# A default route (to the other node) so proxy ARP answers pods for 169.254.1.1.
done
ip -n "$N1" route add default via 192.168.100.12
ip -n "$N2" route add default via 192.168.100.11

"$BRINDLECTL" apply -f - >/dev/null <<'YAML'
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pool}
spec: {cidr: 10.244.0.0/16, vxlanMode: Always}
---
apiVersion: projectcalico.org/v3
kind: Node
metadata: {name: node1}
spec: {bgp: {ipv4Address: 192.168.100.11/24}, ipv4VXLANTunnelAddr: 10.244.1.1}
---
apiVersion: projectcalico.org/v3
kind: Node
metadata: {name: node2}
spec: {bgp: {ipv4Address: 192.168.100.12/24}, ipv4VXLANTunnelAddr: 10.244.2.1}
YAML
bt_affinity node1 10.244.1.0/26
bt_affinity node2 10.244.2.0/26
bt_pod "$N1" default a 10.244.1.10
mac_a=$BT_POD_MAC
bt_pod "$N2" default b 10.244.2.10
mac_b=$BT_POD_MAC
bt_wep node1 default a 10.244.1.10 "$mac_a"
bt_wep node2 default b 10.244.2.10 "$mac_b"

for n in 1 2; do
	bt_run_bg "felix$n" ip netns exec "$BT_PREFIX-node$n" env NODENAME="node$n" \
		BRINDLE_ETCD_ENDPOINTS="$BRINDLE_ETCD_ENDPOINTS" "$FELIX"
done
for n in 1 2; do
	bt_wait_for 20 "felix on node$n ready" bt_http_ok "$BT_PREFIX-node$n" http://localhost:9099/readiness
done

# What felix installed on node1.
dev=$(ip -n "$N1" -d link show vxlan.calico)
bt_expect_contains "vxlan device" "vxlan id 4096" "$dev"
bt_expect_contains "vxlan port" "dstport 4789" "$dev"
bt_expect_contains "vxlan local" "local 192.168.100.11 dev eth0" "$dev"
bt_expect_contains "vxlan learning off" "nolearning" "$dev"
bt_expect_contains "vxlan MTU" "mtu 1450" "$dev"
bt_expect_contains "tunnel address" "inet 10.244.1.1/32" "$(ip -n "$N1" addr show vxlan.calico)"
bt_expect_contains "route to node2's block" \
	"10.244.2.0/26 via 10.244.2.1 dev vxlan.calico onlink" "$(ip -n "$N1" route show proto 80)"
vtep_mac=$(ip -n "$N2" link show vxlan.calico | awk '/link\/ether/ {print $2}')
bt_expect_contains "VTEP neighbour" "10.244.2.1 lladdr $vtep_mac PERMANENT proto 80" \
	"$(ip -n "$N1" neigh show dev vxlan.calico)"
bt_expect_contains "FDB entry" "$vtep_mac dst 192.168.100.12 self permanent" \
	"$(bridge -n "$N1" fdb show dev vxlan.calico)"

# Real packets, through the tunnel.
tx() { ip -n "$N1" -s link show vxlan.calico | awk '/TX:/ {getline; print $2}'; }
before=$(tx)
ip netns exec "$BT_PREFIX-default-a" ping -c 3 -W 2 10.244.2.10 >/dev/null ||
	bt_fail "pod a on node1 cannot reach pod b on node2"
after=$(tx)
[ "$after" -ge $((before + 3)) ] || bt_fail "packets did not cross vxlan.calico ($before -> $after)"
# No more VXLAN: felix takes its device and routes away; the blackhole stays.
"$BRINDLECTL" apply -f - >/dev/null <<'YAML'
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pool}
spec: {cidr: 10.244.0.0/16, vxlanMode: Never}
YAML
bt_wait_for 10 "vxlan.calico to go" bash -c "! ip -n $N1 link show vxlan.calico >/dev/null 2>&1"
routes=$(ip -n "$N1" route show proto 80)
bt_expect_contains "blackhole stays" "blackhole 10.244.1.0/26" "$routes"
case "$routes" in *10.244.2.0/26*) bt_fail "tunnel route left behind: $routes" ;; esac
bt_pass
