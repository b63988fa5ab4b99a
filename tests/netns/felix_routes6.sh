#!/usr/bin/env bash
# felix's IPv6 routes: a dual-stack pod wired as the CNI plugin wires it gets its /128 route on
# its cali* veth beside its /32, the node's IPv6 block a blackhole beside its IPv4 one; the node
# reaches the pod over IPv6; a restart changes nothing; a route deleted by hand is put back;
# deleting the endpoint and the affinity removes exactly what they made.
. "$(dirname "$0")/../lib/common.sh"

FELIX=$BT_BUILD_DIR/felix/brindle-felix
bt_start_etcd
bt_netns node1
bt_netns peer
NODE=$BT_PREFIX-node1
ip -n "$NODE" link add eth0 type veth peer name eth0 netns "$BT_PREFIX-peer"
ip -n "$NODE" addr add 192.168.100.11/24 dev eth0
ip -n "$NODE" addr add fd00:99::11/64 dev eth0 nodad
ip -n "$NODE" link set eth0 up
ip -n "$NODE" link set lo up
ip -n "$BT_PREFIX-peer" link set eth0 up
ip -n "$NODE" route add default via 192.168.100.1

"$BRINDLECTL" apply -f - >/dev/null <<'YAML'
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pool4}
spec: {cidr: 10.244.0.0/16}
---
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pool6}
spec: {cidr: 'fd00:30::/120'}
---
apiVersion: projectcalico.org/v3
kind: Node
metadata: {name: node1}
spec: {bgp: {ipv4Address: 192.168.100.11/24, ipv6Address: 'fd00:99::11/64'}}
YAML
bt_affinity node1 10.244.1.0/26
bt_affinity node1 fd00:30::/122

# The pod, as brindle-cni leaves it (tests/netns/cni_dual_stack.sh checks the plugin's part).
bt_pod "$NODE" default pod1 10.244.1.11
POD=$BT_PREFIX-default-pod1 CALI=$(bt_cali default pod1)
ip -n "$POD" addr add fd00:30::11/128 dev eth0 nodad
ip -n "$NODE" addr add fe80::ecee:eeff:feee:eeee/64 dev "$CALI" nodad 2>/dev/null || true
ip -n "$POD" -6 route add default via fe80::ecee:eeff:feee:eeee dev eth0 onlink
"$BRINDLECTL" apply -f - >/dev/null <<YAML
apiVersion: projectcalico.org/v3
kind: WorkloadEndpoint
metadata: {name: node1-k8s-pod1-eth0, namespace: default, labels: {app: pod1}}
spec: {node: node1, orchestrator: k8s, pod: pod1, endpoint: eth0, interfaceName: $CALI,
  mac: '$BT_POD_MAC', ipNetworks: [10.244.1.11/32, 'fd00:30::11/128'], profiles: [kns.default]}
YAML

start_felix() { # start_felix N IPV6SUPPORT
	bt_run_bg "felix$1" ip netns exec "$NODE" env NODENAME=node1 FELIX_IPV6SUPPORT="$2" \
		BRINDLE_ETCD_ENDPOINTS="$BRINDLE_ETCD_ENDPOINTS" FELIX_ROUTEREFRESHINTERVAL=2 "$FELIX"
	FELIX_PID=${bt_pids[-1]}
	bt_wait_for 20 "felix ready" bt_http_ok "$NODE" http://localhost:9099/readiness
}
stop_felix() {
	kill "$FELIX_PID"
	wait "$FELIX_PID" 2>/dev/null || true
}
routes6() { ip -n "$NODE" -6 route show proto 80; }

# Off by default (as Calico's): no IPv6 route to pods, and no IPv6 rules.
start_felix 0 false
bt_wait_for 10 "the pod's IPv4 route" bash -c "ip -n '$NODE' -4 route show proto 80 | grep -q '^10.244.1.11 dev $CALI'"
bt_expect_eq "no IPv6 route without ipv6Support" "" "$(routes6)"
bt_expect_eq "no ip6tables chains without ipv6Support" 0 \
	"$(ip netns exec "$NODE" ip6tables-legacy-save | grep -c '^:cali-' || true)"
stop_felix
start_felix 1 true
bt_expect_contains "IPv6 policy said at start" "IPv6 policy (ip6tables, or nftables' ip6 tables)" "$(cat "$BT_DIR/felix1.log")"

bt_wait_for 10 "the pod's /128 route" bash -c "ip -n '$NODE' -6 route show proto 80 | grep -q '^fd00:30::11 dev $CALI'"
r6=$(routes6)
bt_expect_contains "the node's IPv6 block is a blackhole" "blackhole fd00:30::/122" "$r6"
bt_expect_contains "the pod's IPv4 route beside it" "10.244.1.11 dev $CALI scope link" \
	"$(ip -n "$NODE" -4 route show proto 80)"
bt_expect_eq "felix's IPv6 routes, nothing else" 2 "$(routes6 | wc -l)"
bt_wait_for 10 "the node reaches the pod over IPv6" ip netns exec "$NODE" ping -6 -c1 -W1 fd00:30::11

# A restart recognises every route (IPv6's carry the kernel's metric 1024) and changes nothing.
before=$(routes6)
stop_felix
start_felix 2 true
sleep 3
bt_expect_eq "IPv6 routes identical across the restart" "$before" "$(routes6)"
if grep -E "route .* (programmed|removed)" "$BT_DIR/felix2.log"; then
	bt_fail "the restarted felix rewrote routes"
fi

# Someone deletes the pod's route: felix puts it back.
ip -n "$NODE" -6 route del fd00:30::11/128
bt_wait_for 10 "the deleted /128 route put back" bash -c "ip -n '$NODE' -6 route show proto 80 | grep -q '^fd00:30::11 dev $CALI'"

# ipv6Support from a FelixConfiguration, the environment silent: felix knows it only once the
# first list is in, before it writes anything; it lists the datastore again with an IPv6 policy
# core, and programs ip6tables as when the environment says it.
stop_felix
ip netns exec "$NODE" sh -c 'for t in filter nat; do ip6tables-legacy -t $t -F; ip6tables-legacy -t $t -X; done'
"$BRINDLECTL" apply -f - >/dev/null <<'YAML'
apiVersion: projectcalico.org/v3
kind: FelixConfiguration
metadata: {name: default}
spec: {ipv6Support: true}
YAML
bt_run_bg felix3 ip netns exec "$NODE" env NODENAME=node1 \
	BRINDLE_ETCD_ENDPOINTS="$BRINDLE_ETCD_ENDPOINTS" FELIX_ROUTEREFRESHINTERVAL=2 "$FELIX"
FELIX_PID=${bt_pids[-1]}
bt_wait_for 20 "felix ready" bt_http_ok "$NODE" http://localhost:9099/readiness
bt_expect_contains "felix listed again for IPv6" "listing the datastore again for the IPv6 policy" \
	"$(cat "$BT_DIR/felix3.log")"
bt_wait_for 10 "ip6tables programmed" bash -c "ip netns exec '$NODE' ip6tables-legacy-save -t filter | grep -q '^:cali-FORWARD'"
bt_wait_for 10 "the /128 route" bash -c "ip -n '$NODE' -6 route show proto 80 | grep -q '^fd00:30::11 dev $CALI'"

# The endpoint and the affinity go: exactly their routes go with them.
"$BRINDLECTL" delete workloadendpoint node1-k8s-pod1-eth0 -n default >/dev/null
bt_wait_for 10 "the /128 route removed" bash -c "! ip -n '$NODE' -6 route show proto 80 | grep -q '^fd00:30::11'"
bt_etcd_del "/calico/ipam/v2/host/node1/ipv6/block/fd00:30::-122"
bt_wait_for 10 "the IPv6 blackhole removed" bash -c "[ -z \"\$(ip -n '$NODE' -6 route show proto 80)\" ]"
bt_expect_contains "the IPv4 blackhole stays" "blackhole 10.244.1.0/26" "$(ip -n "$NODE" -4 route show proto 80)"
bt_pass
