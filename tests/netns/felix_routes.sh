#!/usr/bin/env bash
# felix in a node namespace with three pods: routes, neighbours and interface
# settings appear; deleting an endpoint removes exactly its route; a route of
# another protocol on a cali* interface is left alone; a restart changes
# nothing in the kernel and a ping flood across it loses nothing.
. "$(dirname "$0")/../lib/common.sh"

FELIX=$BT_BUILD_DIR/felix/brindle-felix
bt_start_etcd
bt_netns node1
bt_netns peer
NODE=$BT_PREFIX-node1
ip -n "$NODE" link add eth0 type veth peer name eth0 netns "$BT_PREFIX-peer"
ip -n "$NODE" addr add 192.168.100.11/24 dev eth0
ip -n "$NODE" link set eth0 up
ip -n "$BT_PREFIX-peer" addr add 192.168.100.1/24 dev eth0
ip -n "$BT_PREFIX-peer" link set eth0 up
# Like any real node: a default route. Proxy ARP answers pods' requests for
# 169.254.1.1 only when the node has a route to it through another interface.
ip -n "$NODE" route add default via 192.168.100.1
ip netns exec "$NODE" sysctl -qw net.ipv4.ip_forward=1

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
bt_affinity node1 10.244.1.0/26
declare -A MAC
for i in 1 2 3; do
	bt_pod "$NODE" default "pod$i" "10.244.1.1$i"
	MAC[$i]=$BT_POD_MAC
	bt_wep node1 default "pod$i" "10.244.1.1$i" "${MAC[$i]}"
done
CALI1=$(bt_cali default pod1) CALI2=$(bt_cali default pod2) CALI3=$(bt_cali default pod3)

start_felix() {
	bt_run_bg "felix$1" ip netns exec "$NODE" env NODENAME=node1 \
		BRINDLE_ETCD_ENDPOINTS="$BRINDLE_ETCD_ENDPOINTS" FELIX_ROUTEREFRESHINTERVAL=2 \
		FELIX_PROMETHEUSMETRICSENABLED=true "$FELIX"
	FELIX_PID=${bt_pids[-1]}
	bt_wait_for 20 "felix ready" bt_http_ok "$NODE" http://localhost:9099/readiness
}
start_felix 1

# Routes, neighbours and settings of the contract.
routes=$(ip -n "$NODE" route show proto 80)
for i in 1 2 3; do
	c=$(bt_cali default "pod$i")
	bt_expect_contains "route pod$i" "10.244.1.1$i dev $c scope link" "$routes"
	n=$(ip -n "$NODE" neigh show 10.244.1.1$i dev "$c")
	bt_expect_contains "neighbour pod$i" "lladdr ${MAC[$i]} PERMANENT" "$n"
	for s in "conf/$c/proxy_arp=1" "conf/$c/forwarding=1" "conf/$c/route_localnet=1" \
		"neigh/$c/proxy_delay=0"; do
		got=$(ip netns exec "$NODE" sysctl -n "net/ipv4/${s%=*}" | tr -d ' ')
		bt_expect_eq "sysctl ${s%=*}" "${s#*=}" "$got"
	done
	bt_expect_eq "accept_ra $c" 0 "$(ip netns exec "$NODE" sysctl -n "net/ipv6/conf/$c/accept_ra")"
done
bt_expect_contains "blackhole for the block" "blackhole 10.244.1.0/26" "$routes"

# Real packets: pod to pod through the node, answered by proxy ARP for 169.254.1.1.
ip netns exec "$BT_PREFIX-default-pod1" ping -c 2 -W 2 10.244.1.12 >/dev/null ||
	bt_fail "pod1 cannot reach pod2"

# Health and metrics.
metrics=$(ip netns exec "$NODE" curl -sf http://localhost:9091/metrics)
bt_expect_contains "routes metric" "felix_routes 4" "$metrics"
bt_expect_contains "local endpoints metric" "felix_local_endpoints 3" "$metrics"

# A route of another protocol on a cali* interface is left alone, through resyncs.
ip -n "$NODE" route add 10.99.0.1/32 dev "$CALI3" proto static
sleep 5 # two resyncs at FELIX_ROUTEREFRESHINTERVAL=2
bt_expect_contains "foreign route kept" "10.99.0.1 dev $CALI3 proto static" \
	"$(ip -n "$NODE" route show 10.99.0.1)"

# Deleting an endpoint removes exactly its route and neighbour.
before=$(ip -n "$NODE" route show proto 80 | sort)
"$BRINDLECTL" delete wep node1-k8s-pod3-eth0 >/dev/null
bt_wait_for 10 "pod3's route to go" \
	bash -c "! ip -n $NODE route show proto 80 | grep -q '10.244.1.13 '"
after=$(ip -n "$NODE" route show proto 80 | sort)
bt_expect_eq "only pod3's route removed" "$(grep -v '10.244.1.13 ' <<<"$before")" "$after"
bt_expect_eq "pod3's neighbour removed" "" "$(ip -n "$NODE" neigh show 10.244.1.13 dev "$CALI3" nud permanent)"
bt_expect_contains "foreign route still kept" "10.99.0.1 dev $CALI3 proto static" \
	"$(ip -n "$NODE" route show 10.99.0.1)"

# Restart: nothing in the kernel changes, and no packet is lost.
state() {
	{
		ip -n "$NODE" route show table all
		ip -n "$NODE" neigh show nud permanent
		ip -n "$NODE" -d link show
		ip netns exec "$NODE" sysctl -a 2>/dev/null | grep -E "cali[0-9a-f]+\.(proxy_arp|forwarding|route_localnet|proxy_delay|accept_ra)"
	} | grep -v -E 'ifb|used [0-9]'
}
state_before=$(state)
ip netns exec "$BT_PREFIX-default-pod1" ping -i 0.005 -c 1500 -W 1 10.244.1.12 >"$BT_DIR/flood.log" 2>&1 &
flood=$!
sleep 1
kill -TERM "$FELIX_PID"
wait "$FELIX_PID" || bt_fail "felix did not exit cleanly on SIGTERM"
start_felix 2
wait $flood || true
bt_expect_contains "flood across the restart loses nothing" " 0% packet loss" "$(cat "$BT_DIR/flood.log")"
sleep 3 # a resync of the new felix happens too
bt_expect_eq "kernel state identical across the restart" "$state_before" "$(state)"
grep -q "route .* programmed\|removed" "$BT_DIR/felix2.log" &&
	bt_fail "the restarted felix changed something: $(grep -E 'programmed|removed' "$BT_DIR/felix2.log")"
bt_pass
