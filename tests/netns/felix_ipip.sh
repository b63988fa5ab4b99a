#!/usr/bin/env bash
# An IP pool asking for IPIP on this kernel, which has no ipip: one clear
# error in the log, readiness and a metric; everything else is programmed.
. "$(dirname "$0")/../lib/common.sh"

FELIX=$BT_BUILD_DIR/felix/brindle-felix
bt_start_etcd
bt_netns node1
bt_netns node2
N1=$BT_PREFIX-node1
ip -n "$N1" link add eth0 type veth peer name eth0 netns "$BT_PREFIX-node2"
ip -n "$N1" addr add 192.168.100.11/24 dev eth0
ip -n "$N1" link set eth0 up
# Only where the kernel really lacks ipip is this the test it says it is.
if ip -n "$N1" link add tunl9 type ipip 2>/dev/null; then
	ip -n "$N1" link del tunl9
	bt_log "this kernel has ipip; the no-ipip case is covered by the unit tests"
	bt_pass
	exit 0
fi

"$BRINDLECTL" apply -f - >/dev/null <<'YAML'
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: legacy-ipip}
spec: {cidr: 10.10.0.0/16, ipipMode: Always}
---
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: main}
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
bt_affinity node2 10.10.2.0/26
bt_run_bg felix ip netns exec "$N1" env NODENAME=node1 BRINDLE_ETCD_ENDPOINTS="$BRINDLE_ETCD_ENDPOINTS" \
	FELIX_ROUTEREFRESHINTERVAL=1 FELIX_PROMETHEUSMETRICSENABLED=true "$FELIX"
bt_wait_for 20 "felix programmed the VXLAN route" \
	bash -c "ip -n $N1 route show proto 80 | grep -q '10.244.2.0/26 via 10.244.2.1 dev vxlan.calico'"
sleep 3 # several resyncs at a 1 s refresh interval

ready=$(ip netns exec "$N1" curl -s -w ' %{http_code}' http://localhost:9099/readiness)
bt_expect_contains "readiness names the problem" \
	"IPIP unavailable: IP pool legacy-ipip asks for IPIP but the kernel has no ipip support" "$ready"
bt_expect_contains "readiness code" " 503" "$ready"
metrics=$(ip netns exec "$N1" curl -sf http://localhost:9091/metrics)
bt_expect_contains "error metric" 'felix_errors_total{kind="ipip"} 1' "$metrics"
bt_expect_eq "logged once, not at every resync" 1 "$(grep -c 'asks for IPIP' "$BT_DIR/felix.log")"
routes=$(ip -n "$N1" route show proto 80)
bt_expect_contains "own block still blackholed" "blackhole 10.244.1.0/26" "$routes"
case "$routes" in *10.10.2.0*) bt_fail "a route for the IPIP pool appeared: $routes" ;; esac
bt_pass
