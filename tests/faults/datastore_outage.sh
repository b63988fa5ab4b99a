#!/usr/bin/env bash
# etcd stopped (killed) for ~25 s under a node with felix, confd and BIRD, a
# ping running between two pods, then started again on the same data:
#   - both daemons log the loss once and stay ready through the grace period
#     (BRINDLE_DATASTORE_GRACE, 8 s here), saying so in their readiness text
#     and in *_datastore_outage_seconds;
#   - past it, both answer 503 with the reason, and felix_in_sync and
#     brindle_confd_datastore_in_sync are 0;
#   - nothing they programmed changes meanwhile (routes, rules, sets, BIRD's
#     configuration) and not one ping is lost;
#   - with etcd back, both are ready again and log the recovery once.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/policy.sh"
. "$(dirname "$0")/../lib/outage.sh"

export BRINDLE_DATASTORE_GRACE=8s
pt_node
pt_pod ns1 a 10.244.1.2 'app: a'
pt_pod ns1 b 10.244.1.3 'app: b'
pt_allowed ns1 a 10.244.1.3 80
ETCD_PID=${bt_pids[0]}

outage_confd_bird "$BT_DIR/bird"
bt_wait_for 20 "confd ready" confd_ready
state() {
	ip -n "$NODE" route show
	ip netns exec "$NODE" iptables-legacy-save | grep -v '^[#:]'
	ip netns exec "$NODE" ipset save
	cat "$BT_DIR/bird/bird.conf"
}
before=$(state)
ip netns exec "$BT_PREFIX-ns1-a" ping -i 0.05 -w 60 10.244.1.3 >"$BT_DIR/ping.out" 2>&1 &
PING=$!
sleep 1

kill -9 "$ETCD_PID"
t0=$SECONDS
bt_wait_for 10 "felix to notice etcd gone" felix_outage
bt_wait_for 10 "confd to notice etcd gone" confd_outage
bt_log "outage noticed after $((SECONDS - t0)) s"
felix_ready || bt_fail "felix not ready inside the grace period: $(http http://localhost:9099/readiness)"
confd_ready || bt_fail "confd not ready inside the grace period: $(http http://127.0.0.1:9098/readiness)"
bt_expect_contains "felix says it is in the grace period" "(not ready after 8 s)" \
	"$(http http://localhost:9099/readiness)"
bt_wait_for 15 "both not ready after the grace period" neither_ready
bt_log "not ready after $((SECONDS - t0)) s"
bt_expect_contains "felix says why" "datastore: unreachable for" "$(http http://localhost:9099/readiness)"
bt_expect_contains "confd says why" "datastore: unreachable for" "$(http http://127.0.0.1:9098/readiness)"
bt_expect_eq "felix_in_sync" 0 "$(metric http://localhost:9091/metrics felix_in_sync)"
bt_expect_eq "felix_resync_state" 1 "$(metric http://localhost:9091/metrics felix_resync_state)"
bt_expect_eq "brindle_confd_datastore_in_sync" 0 \
	"$(metric http://127.0.0.1:9098/metrics brindle_confd_datastore_in_sync)"
while [ $((SECONDS - t0)) -lt 25 ]; do sleep 1; done
bt_expect_eq "kernel state and BIRD's configuration during the outage" "$before" "$(state)"

rm -f "$BT_DIR/etcd/etcd.sock:0" "$BT_DIR/etcd/peer.sock:0" # a killed etcd leaves its sockets
bt_start_etcd
t1=$SECONDS
bt_wait_for 30 "felix ready again" felix_ready
bt_wait_for 30 "confd ready again" confd_ready
bt_log "ready again $((SECONDS - t1)) s after etcd came back"
kill -INT "$PING" 2>/dev/null || true
wait "$PING" || true
summary=$(grep 'packets transmitted' "$BT_DIR/ping.out")
bt_log "ping: $summary"
bt_expect_contains "no ping lost" " 0% packet loss" "$summary"
bt_expect_eq "kernel state after the outage" "$before" "$(state)"
for log in "$BT_DIR"/felix-*.log "$BT_DIR/confd.log"; do
	d=$(basename "$log" .log)
	bt_expect_eq "$d: one line at the loss" 1 "$(grep -c 'datastore: unreachable' "$log")"
	bt_expect_eq "$d: one line at the recovery" 1 "$(grep -c 'in sync again after an outage' "$log")"
done
bt_pass
