#!/usr/bin/env bash
# brindle-node cleanup on a node felix has programmed (a pod with a policy,
# a VXLAN pool, a remote node's block; IPv6 policy too) next to state that is
# not Brindle's: an iptables chain and rules in built-in chains of filter and
# nat, an ip6tables rule, an ip set, a static route, a device. After felix stops, cleanup removes every
# rule, chain and set of Brindle's, its routes and vxlan.calico, and leaves
# the rest exactly as it was, and the CNI files install-cni wrote (not another
# network's); a second cleanup finds nothing and succeeds.
. "$(dirname "$0")/../lib/common.sh"

FELIX=$BT_BUILD_DIR/felix/brindle-felix
NODEBIN=$BT_BUILD_DIR/node/brindle-node
bt_start_etcd
bt_netns node1
bt_netns far
N1=$BT_PREFIX-node1
ip -n "$N1" link add eth0 type veth peer name eth0 netns "$BT_PREFIX-far"
ip -n "$N1" addr add 192.168.100.11/24 dev eth0
ip -n "$N1" link set eth0 up
ip -n "$N1" route add default via 192.168.100.12
ip netns exec "$N1" sysctl -qw net.ipv4.ip_forward=1

# What is not Brindle's, made first (in the legacy tables, where felix's libiptc writes).
in_n1() { ip netns exec "$N1" "$@"; }
in_n1 iptables-legacy -N FOREIGN
in_n1 iptables-legacy -A FOREIGN -s 198.51.100.0/24 -j DROP
in_n1 iptables-legacy -A INPUT -j FOREIGN
in_n1 iptables-legacy -A FORWARD -s 203.0.113.7 -j ACCEPT
in_n1 iptables-legacy -t nat -A POSTROUTING -s 198.51.100.0/24 -j MASQUERADE
in_n1 ip6tables-legacy -A FORWARD -s 2001:db8:77::/48 -j ACCEPT
in_n1 ipset create foreign-set hash:ip
in_n1 ipset add foreign-set 198.51.100.9
in_n1 ip route add 203.0.113.0/24 via 192.168.100.12 proto static
in_n1 ip link add foreign0 type veth peer name foreign1
foreign() {
	{
		in_n1 iptables-legacy-save | grep -E 'FOREIGN|198\.51|203\.0\.113' || true
		in_n1 ip6tables-legacy-save | grep -E '2001:db8:77' || true
		in_n1 ipset list -n | grep -v '^cali' || true
		in_n1 ip route show | grep -v 'proto 80' || true
		in_n1 ip -o link show | awk '{print $2}' | grep -vE '^(vxlan\.calico|cali)' || true
	} | sort
}
before=$(foreign)

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
---
apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: web}
spec:
  selector: app == 'a'
  ingress: [{action: Allow, source: {selector: role == 'client'}}]
YAML
bt_affinity node1 10.244.1.0/26
bt_affinity node2 10.244.2.0/26
bt_pod "$N1" default a 10.244.1.10
bt_wep node1 default a 10.244.1.10 "$BT_POD_MAC"
bt_run_bg felix ip netns exec "$N1" env NODENAME=node1 FELIX_IPV6SUPPORT=true \
	BRINDLE_ETCD_ENDPOINTS="$BRINDLE_ETCD_ENDPOINTS" "$FELIX"
bt_wait_for 20 "felix ready" bt_http_ok "$N1" http://localhost:9099/readiness
bt_wait_for 20 "felix's chains, sets, routes and device" bash -c "
	ip netns exec $N1 iptables-legacy-save | grep -q ':cali-' &&
	ip netns exec $N1 ip6tables-legacy-save | grep -q ':cali-' &&
	ip netns exec $N1 ipset list -n | grep -q '^cali4' &&
	ip netns exec $N1 ipset list -n | grep -q '^cali6' &&
	ip -n $N1 route show proto 80 | grep -q vxlan.calico"
bt_log "felix programmed: $(in_n1 iptables-legacy-save | grep -c cali) iptables lines, \
$(in_n1 ipset list -n | grep -c '^cali4') sets, $(ip -n "$N1" route show proto 80 | wc -l) routes"

# Uninstall: felix stops, then cleanup.
kill "${bt_pids[-1]}"
bt_wait_for 10 "felix to stop" bash -c "! kill -0 ${bt_pids[-1]} 2>/dev/null"
# what install-cni put on the host, beside another network's plugin and configuration
mkdir -p "$BT_DIR/host/bin" "$BT_DIR/host/net.d"
touch "$BT_DIR/host/bin/"{brindle-cni,brindle-ipam,loopback} "$BT_DIR/host/net.d/"{10-brindle.conflist,brindle-kubeconfig,99-other.conflist}
# what the nftables backend would have left (a node that ran both in turn), beside someone's table
in_n1 nft -f - <<'NFT'
table ip brindle-filter { chain cali-x { counter accept; }; }
table ip brindle-nat { chain POSTROUTING { type nat hook postrouting priority 100; }; }
table ip someone { chain c { counter; }; }
table ip6 brindle-filter { chain cali-x { counter accept; }; }
table ip6 someone6 { chain c { counter; }; }
NFT
in_n1 env CNI_BIN_DIR="$BT_DIR/host/bin" CNI_NET_DIR="$BT_DIR/host/net.d" "$NODEBIN" cleanup >"$BT_DIR/cleanup.log" 2>&1 ||
	bt_fail "cleanup failed: $(cat "$BT_DIR/cleanup.log")"
bt_expect_eq "the CNI files install-cni wrote are gone, the others stay" "99-other.conflist loopback" \
	"$(ls "$BT_DIR/host/bin" "$BT_DIR/host/net.d" | grep -v '^/\|^$' | sort | tr '\n' ' ' | sed 's/ $//')"
bt_expect_eq "no iptables line of Brindle's" "" "$(in_n1 iptables-legacy-save | grep -i cali || true)"
bt_expect_eq "no ip6tables line of Brindle's" "" "$(in_n1 ip6tables-legacy-save | grep -i cali || true)"
bt_expect_eq "no ip set of Brindle's" "" "$(in_n1 ipset list -n | grep '^cali' || true)"
bt_expect_eq "no nftables table of Brindle's (ip, ip6), someone's stay" "ip someone ip6 someone6" \
	"$(in_n1 nft list tables | awk '{print $2, $3}' | xargs)"
bt_expect_eq "no route of Brindle's" "" "$(ip -n "$N1" route show proto 80)"
bt_expect_eq "no vxlan.calico" "" "$(ip -n "$N1" link show vxlan.calico 2>/dev/null || true)"
bt_expect_eq "what is not Brindle's is as it was" "$before" "$(foreign)"
# The pod's own veth is its CNI DEL's business.
ip -n "$N1" link show "$(bt_cali default a)" >/dev/null || bt_fail "cleanup took the pod's veth"

in_n1 "$NODEBIN" cleanup >"$BT_DIR/cleanup2.log" 2>&1 || bt_fail "a second cleanup failed: $(cat "$BT_DIR/cleanup2.log")"
bt_expect_contains "and found nothing" "removed 0 rules from built-in chains and 0 chains" "$(cat "$BT_DIR/cleanup2.log")"
bt_expect_eq "still as it was" "$before" "$(foreign)"
bt_pass
