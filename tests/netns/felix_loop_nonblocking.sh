#!/usr/bin/env bash
# No network call blocks felix's event loop (libcurl driven by the loop):
#  1. its only etcd endpoint accepts connections and never answers: felix
#     answers /liveness within 100 ms all along, says on /readiness that it
#     waits for the datastore, and keeps retrying on its timers;
#  2. etcd stopped with SIGSTOP while felix starts: the same, and once etcd
#     continues felix syncs and is ready;
#  3. a watch reconnect storm (etcd killed and restarted five times in a
#     row): the longest run of any loop handler stays far below a blocking
#     call's seconds: under BRINDLE_STALL_LIMIT_MS (50 ms here, in the
#     sanitizer build; bench/felix-loop-stall.sh holds a release build to
#     the goal of 1 ms and records the figure).
. "$(dirname "$0")/../lib/common.sh"

FELIX=$BT_BUILD_DIR/felix/brindle-felix
bt_netns node
NODE=$BT_PREFIX-node
ip netns exec "$NODE" ip addr add 192.168.100.11/24 dev lo

# 1. A server that accepts and never answers (a hung etcd, a black-holed proxy).
cat >"$BT_DIR/silent.py" <<'PY'
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 23790))
s.listen(64)
held = []
while True:
    c, _ = s.accept()
    held.append(c)
    print("accepted", len(held), flush=True)
PY
bt_run_bg silent ip netns exec "$NODE" python3 "$BT_DIR/silent.py"
bt_wait_for 10 "the silent server" sh -c "ip netns exec $NODE ss -ltn | grep -q 23790"

start_felix() { # NAME ENDPOINTS
	bt_run_bg "$1" ip netns exec "$NODE" env NODENAME=node1 BRINDLE_ETCD_ENDPOINTS="$2" \
		FELIX_PROMETHEUSMETRICSENABLED=true "$FELIX"
	FELIX_PID=${bt_pids[-1]}
	bt_wait_for 10 "felix to serve liveness" bt_http_ok "$NODE" http://localhost:9099/liveness
}
stop_felix() {
	kill "$FELIX_PID"
	for _ in $(seq 50); do kill -0 "$FELIX_PID" 2>/dev/null || return 0; sleep 0.1; done
	bt_fail "felix did not stop"
}
# probe_liveness SECONDS: liveness answers in under 100 ms every 200 ms for SECONDS.
probe_liveness() {
	local end=$((SECONDS + $1)) worst=0 t
	while [ $SECONDS -lt $end ]; do
		t=$(ip netns exec "$NODE" curl -s -o /dev/null -w '%{time_total}' --max-time 1 \
			http://localhost:9099/liveness) || bt_fail "liveness did not answer"
		t=$(awk -v t="$t" 'BEGIN { printf "%d", t * 1000 }')
		[ "$t" -gt "$worst" ] && worst=$t
		sleep 0.2
	done
	bt_log "slowest liveness answer in $1 s: ${worst} ms"
	[ "$worst" -lt 100 ] || bt_fail "liveness took ${worst} ms"
}
metric() { bt_metric "$NODE" http://localhost:9091/metrics "$1"; }

start_felix felix-silent "http://127.0.0.1:23790"
probe_liveness 7 # longer than the datastore timeout (5 s): a blocking list would stall that long
out=$(ip netns exec "$NODE" curl -s http://localhost:9099/readiness)
bt_expect_contains "readiness names the datastore" "datastore" "$out"
accepted=$(grep -c accepted "$BT_DIR/silent.log")
[ "$accepted" -ge 2 ] || bt_fail "felix tried the datastore $accepted time(s) in 7 s: its retry timer did not run"
bt_log "felix opened $accepted connections to the silent server"
stop_felix

# 2. etcd stopped (SIGSTOP) while felix starts: the kernel accepts, nobody answers.
bt_start_etcd
ETCD_PID=${bt_pids[-1]}
"$BRINDLECTL" apply -f - >/dev/null <<'YAML'
apiVersion: projectcalico.org/v3
kind: Node
metadata: {name: node1}
spec: {bgp: {ipv4Address: 192.168.100.11/24}}
YAML
kill -STOP "$ETCD_PID"
start_felix felix-stopped "$BRINDLE_ETCD_ENDPOINTS"
probe_liveness 3
kill -CONT "$ETCD_PID"
bt_wait_for 30 "felix ready once etcd continues" bt_http_ok "$NODE" http://localhost:9099/readiness

# 3. A watch reconnect storm: every watch breaks and reconnects, five times in a row.
etcd_cmd=(env -C "$BT_DIR/etcd" etcd --name bt --data-dir "$BT_DIR/etcd/data"
	--listen-client-urls unix://etcd.sock:0 --advertise-client-urls unix://etcd.sock:0
	--listen-peer-urls unix://peer.sock:0 --initial-advertise-peer-urls unix://peer.sock:0
	--initial-cluster bt=unix://peer.sock:0 --log-level error --logger zap --log-outputs stderr)
sleep 11 # let the startup's handlers (the first list) leave the 10 s window
for i in 1 2 3 4 5; do
	kill -KILL "$ETCD_PID"
	wait "$ETCD_PID" 2>/dev/null || true
	sleep 0.3
	rm -f "$BT_DIR/etcd/etcd.sock:0" "$BT_DIR/etcd/peer.sock:0"
	bt_run_bg "etcd-$i" "${etcd_cmd[@]}"
	ETCD_PID=${bt_pids[-1]}
	bt_wait_for 20 "etcd back ($i)" curl -sf --unix-socket "$BT_ETCD_SOCK" \
		-X POST http://localhost/v3/kv/range -d '{"key":"AA=="}'
	sleep 0.5
done
bt_wait_for 30 "felix ready after the storm" bt_http_ok "$NODE" http://localhost:9099/readiness
stall=$(ip netns exec "$NODE" curl -sf http://localhost:9091/metrics |
	awk '$1 == "felix_loop_longest_handler_seconds{window=\"10s\"}" { print $2 }')
bt_log "longest loop handler during the storm: $(awk -v s="$stall" 'BEGIN { printf "%.3f ms", s * 1000 }')"
echo "$stall" >"${BRINDLE_STALL_OUT:-/dev/null}"
limit=${BRINDLE_STALL_LIMIT_MS:-50}
awk -v s="$stall" -v l="$limit" 'BEGIN { exit !(s != "" && s * 1000 < l) }' ||
	bt_fail "a loop handler ran for ${stall} s during the reconnect storm (want < $limit ms)"
stop_felix
bt_pass
