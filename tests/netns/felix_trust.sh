#!/usr/bin/env bash
# The node takeover of the trust review, as the attack: whoever can write one
# WorkloadEndpoint (every node holds the CNI plugin's datastore credentials)
# writes endpoints straight into etcd (no brindlectl validation) that name the
# node's uplink, claim the default route or a wide network, or claim an
# address the host routes itself. felix must refuse each with a log line
# naming the endpoint and change nothing on the node: the default route, the
# uplink's settings and neighbours, the host's own routes stay as they were,
# through resyncs and after the endpoints are deleted; the pod beside them
# keeps working.
. "$(dirname "$0")/../lib/common.sh"

FELIX=$BT_BUILD_DIR/felix/brindle-felix
bt_start_etcd
bt_netns node1
bt_netns peer
NODE=$BT_PREFIX-node1
PEER=$BT_PREFIX-peer
ip -n "$NODE" link add eth0 type veth peer name eth0 netns "$PEER"
ip -n "$NODE" addr add 192.168.100.11/24 dev eth0
ip -n "$NODE" link set eth0 up
ip -n "$PEER" addr add 192.168.100.1/24 dev eth0
ip -n "$PEER" link set eth0 up
ip -n "$PEER" route add 10.244.1.0/26 via 192.168.100.11
ip -n "$NODE" route add default via 192.168.100.1
ip netns exec "$NODE" sysctl -qw net.ipv4.ip_forward=1
# A host route of the node's own, where a pod address could be claimed.
ip -n "$NODE" route add 10.244.1.50/32 dev eth0 proto static

"$BRINDLECTL" apply -f - >/dev/null <<'YAML'
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pool}
spec: {cidr: 10.244.0.0/16}
---
apiVersion: projectcalico.org/v3
kind: Node
metadata: {name: node1}
spec: {bgp: {ipv4Address: 192.168.100.11/24}}
YAML
bt_pod "$NODE" default pod1 10.244.1.11
MAC1=$BT_POD_MAC
bt_wep node1 default pod1 10.244.1.11 "$MAC1"
CALI1=$(bt_cali default pod1)
bt_pod "$NODE" default pod2 10.244.1.12
CALI2=$(bt_cali default pod2)

bt_run_bg felix ip netns exec "$NODE" env NODENAME=node1 \
	BRINDLE_ETCD_ENDPOINTS="$BRINDLE_ETCD_ENDPOINTS" FELIX_ROUTEREFRESHINTERVAL=2 "$FELIX"
bt_wait_for 20 "felix ready" bt_http_ok "$NODE" http://localhost:9099/readiness
bt_wait_for 10 "pod1's route" sh -c "ip -n '$NODE' route show proto 80 | grep -q '10.244.1.11 dev $CALI1'"

# What must not change: everything about the host that is not a pod's.
host_state() {
	ip -n "$NODE" route show table main | grep -v "dev $CALI1" | grep -v 'proto 80'
	echo "--- routes of ours"
	ip -n "$NODE" route show table main proto 80
	echo "--- neighbours on eth0"
	ip -n "$NODE" neigh show dev eth0 nud permanent
	echo "--- eth0 settings"
	for s in ipv4/conf/eth0/proxy_arp ipv4/conf/eth0/route_localnet ipv4/conf/eth0/forwarding \
		ipv4/neigh/eth0/proxy_delay ipv6/conf/eth0/accept_ra ipv4/conf/lo/route_localnet; do
		echo "$s=$(ip netns exec "$NODE" sysctl -n "net/$s")"
	done
}
BEFORE=$(host_state)
bt_expect_contains "the node's default route" "default via 192.168.100.1 dev eth0" "$BEFORE"

# wep NAME IFACE NETWORKS: a raw endpoint, as an attacker with etcd credentials writes it.
wep() {
	bt_etcd_put "/calico/resources/v3/projectcalico.org/workloadendpoints/default/$1" \
		"{\"apiVersion\":\"projectcalico.org/v3\",\"kind\":\"WorkloadEndpoint\",\"metadata\":{\"name\":\"$1\",\"namespace\":\"default\",\"labels\":{\"app\":\"evil\"}},\"spec\":{\"node\":\"node1\",\"orchestrator\":\"k8s\",\"pod\":\"evil\",\"endpoint\":\"eth0\",\"interfaceName\":\"$2\",\"mac\":\"0a:00:00:00:00:66\",\"ipNetworks\":[$3],\"profiles\":[\"kns.default\"]}}"
}
felix_log() { cat "$BT_DIR/felix.log"; }
expect_logged() {
	bt_wait_for 10 "felix to log: $2" sh -c "grep -F -- '$2' '$BT_DIR/felix.log' | grep -qF -- '$1'"
}

# 1. The review's takeover: the uplink and the default route.
wep evil-default eth0 '"0.0.0.0/0"'
expect_logged evil-default "default route"
# 2. The uplink with a host route (the gateway's address).
wep evil-uplink eth0 '"192.168.100.1/32"'
expect_logged default/evil-uplink 'interface "eth0" does not start with a workload prefix'
# 3. A pod's own interface with the default route, and with half the Internet.
wep evil-pod-default "$CALI2" '"0.0.0.0/0"'
expect_logged evil-pod-default "default route"
wep evil-pod-wide "$CALI2" '"10.244.1.12/32","0.0.0.0/1"'
expect_logged default/evil-pod-wide "0.0.0.0/1 is wider than /32"
# 4. felix's own devices and the loopback, under any name rules.
wep evil-lo lo '"10.244.1.60/32"'
expect_logged evil-lo "host interface felix owns"
# 5. An address the host routes itself (metric 0, protocol static).
wep evil-hostroute "$CALI2" '"10.244.1.50/32"'
expect_logged "10.244.1.50/32" "it is left alone"
sleep 5 # two resyncs (FELIX_ROUTEREFRESHINTERVAL=2)
bt_expect_eq "host state with the attacks in place" "$BEFORE" "$(host_state)"
bt_expect_eq "the taken route reported once, not at every resync" 1 \
	"$(grep -c 'evil-hostroute wants route' "$BT_DIR/felix.log")"
# The pod beside them still works: it reaches the node and the peer.
ip netns exec "$BT_PREFIX-default-pod1" ping -c 2 -W 2 192.168.100.1 >/dev/null ||
	bt_fail "pod1 cannot reach the peer"

# 6. Someone widens the workload prefixes to cover the uplink: the dataplane
#    still refuses an interface that holds a host address. (Policy then treats
#    eth0 as a workload interface and drops its forwarded traffic: whoever
#    writes FelixConfiguration decides policy; docs/security.md says so.)
"$BRINDLECTL" apply -f - >/dev/null <<'YAML'
apiVersion: projectcalico.org/v3
kind: FelixConfiguration
metadata: {name: default}
spec: {interfacePrefix: "cali,eth"}
YAML
wep evil-prefix eth0 '"192.168.100.1/32"'
expect_logged "wep default/evil-prefix" "eth0 holds a host address"
sleep 3
bt_expect_eq "host state with a prefix that covers eth0" "$BEFORE" "$(host_state)"

# Gone again: nothing was left behind either.
for w in evil-default evil-uplink evil-pod-default evil-pod-wide evil-lo evil-hostroute \
	evil-prefix; do
	bt_etcd_del "/calico/resources/v3/projectcalico.org/workloadendpoints/default/$w"
done
"$BRINDLECTL" delete felixconfiguration default >/dev/null
sleep 3
bt_expect_eq "host state after the attacks" "$BEFORE" "$(host_state)"
bt_expect_contains "the host's route stays its own" "10.244.1.50 dev eth0 proto static" \
	"$(ip -n "$NODE" route show 10.244.1.50)"
ip netns exec "$BT_PREFIX-default-pod1" ping -c 1 -W 2 192.168.100.1 >/dev/null ||
	bt_fail "pod1 cannot reach the peer afterwards"
# (on nftables: no batch refused on the way, e.g. an interface's chains deleted while the
# endpoint that still claims it is there)
refused=$(grep -h "(nothing written)" "$BT_DIR"/felix*.log || true)
[ -z "$refused" ] || bt_fail "felix had a batch refused: $refused"
bt_pass
