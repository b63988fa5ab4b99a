#!/usr/bin/env bash
# felix killed with SIGKILL under traffic (pings every 10 ms between two pods
# through policy) and started again 3 s later: the kernel keeps everything
# felix programmed, so not one ping is lost; the restarted felix reads the
# kernel back and finds nothing to write (no iptables commit, no route
# written); the kernel's state is the same before, during and after.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/policy.sh"

pt_node
pt_pod ns1 a 10.244.1.2 'app: a'
pt_pod ns1 b 10.244.1.3 'app: b'
pt_apply <<'YAML'
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: b-from-a, namespace: ns1}
spec:
  podSelector: {matchLabels: {app: b}}
  policyTypes: [Ingress]
  ingress:
  - from: [{podSelector: {matchLabels: {app: a}}}]
YAML
pt_allowed ns1 a 10.244.1.3 80
state() {
	ip -n "$NODE" route show
	ip -n "$NODE" neigh show nud permanent
	ip netns exec "$NODE" iptables-legacy-save | grep -v '^[#:]'
	ip netns exec "$NODE" ipset save
}
before=$(state)
ip netns exec "$BT_PREFIX-ns1-a" ping -i 0.01 -w 12 10.244.1.3 >"$BT_DIR/ping.out" 2>&1 &
PING=$!
sleep 1
kill -9 "$FELIX_PID"
sleep 3
bt_expect_eq "the kernel's state with felix dead" "$before" "$(state)"
pt_start_felix
M=http://localhost:9091/metrics
bt_expect_eq "no iptables commit by the restarted felix" 0 \
	"$(bt_metric "$NODE" $M 'felix_iptables_commits_total{table="filter"}')"
bt_expect_eq "no route or neighbour written by the restarted felix" 0 \
	"$(bt_metric "$NODE" $M felix_kernel_writes_total)"
wait "$PING" || true
summary=$(grep 'packets transmitted' "$BT_DIR/ping.out")
bt_log "ping: $summary"
bt_expect_contains "no ping lost" " 0% packet loss" "$summary"
bt_expect_eq "the kernel's state after the restart" "$before" "$(state)"
bt_pass
