#!/usr/bin/env bash
# felix in a node namespace while its etcd is rebuilt from scratch with the
# same configuration (same cluster ID) and re-populated past the revision
# felix had seen: the case of issue 22 where felix kept 119 stale blackholes,
# never programmed the new affinities and stayed ready. felix must notice the
# store is not the one it watched, relist, remove every stale blackhole,
# program the new ones, say why in its log and count it in a metric.
. "$(dirname "$0")/../lib/common.sh"

FELIX=$BT_BUILD_DIR/felix/brindle-felix
bt_start_etcd
ETCD_PID=${bt_pids[-1]}
bt_netns node1
NODE=$BT_PREFIX-node1

populate() { # populate FIRST_BLOCK N: node1 and N affinities from 10.244.FIRST.0/26
	"$BRINDLECTL" apply -f - >/dev/null <<'YAML'
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pool}
spec: {cidr: 10.244.0.0/16}
---
apiVersion: projectcalico.org/v3
kind: Node
metadata: {name: node1}
spec: {}
YAML
	local i
	for i in $(seq "$1" $(($1 + $2 - 1))); do
		bt_affinity node1 "10.244.$i.0/26"
	done
}
blackholes() { ip -n "$NODE" route show type blackhole proto 80 | awk '{print $2}' | sort -V; }
expected() { for i in $(seq "$1" $(($1 + $2 - 1))); do echo "10.244.$i.0/26"; done; }

populate 1 30
bt_run_bg felix ip netns exec "$NODE" env NODENAME=node1 FELIX_PROMETHEUSMETRICSENABLED=true \
	BRINDLE_ETCD_ENDPOINTS="$BRINDLE_ETCD_ENDPOINTS" "$FELIX"
FELIX_PID=${bt_pids[-1]}
bt_wait_for 20 "felix ready" bt_http_ok "$NODE" http://localhost:9099/readiness
bt_wait_for 10 "30 blackholes" test "$(blackholes | wc -l)" = 30

store_rev() {
	curl -sf --unix-socket "$BT_ETCD_SOCK" -X POST http://localhost/v3/kv/range \
		-d '{"key":"AA=="}' | sed -n 's/.*"revision":"\([0-9]*\)".*/\1/p'
}
resyncs() {
	ip netns exec "$NODE" curl -sf --max-time 2 http://localhost:9091/metrics |
		awk '/^felix_datastore_resyncs_total\{/ {s += $2} END {print s + 0}'
}

# rebuild FIRST N: stop etcd, wipe its data, start it again with the same
# flags, and write other affinities (FIRST.. FIRST+N), with enough writes to
# pass the revision felix had seen: resuming its watch above that revision it
# would see only the last affinity.
rebuild() {
	local old_rev rev
	old_rev=$(store_rev)
	kill "$ETCD_PID"
	for _ in $(seq 100); do kill -0 "$ETCD_PID" 2>/dev/null || break; sleep 0.1; done
	rm -rf "$BT_DIR/etcd"
	bt_start_etcd
	ETCD_PID=${bt_pids[-1]}
	populate "$1" "$2"
	while [ "$(store_rev)" -le $((old_rev + 3)) ]; do
		bt_etcd_put /calico/resources/v3/projectcalico.org/filler "{}"
	done
	bt_affinity node1 "10.244.$(($1 + $2)).0/26"
	bt_log "old store at revision $old_rev, new store at $(store_rev)"
}

converge() { # converge FIRST N WHAT
	local deadline=$((SECONDS + 30))
	until [ "$(blackholes)" = "$(expected "$1" "$2")" ]; do
		[ $SECONDS -lt $deadline ] ||
			bt_fail "$3: felix did not converge; blackholes: $(blackholes | tr '\n' ' ')"
		sleep 0.2
	done
	bt_wait_for 20 "felix ready ($3)" bt_http_ok "$NODE" http://localhost:9099/readiness
}

# 1. felix reconnects while the new store is still young (below what it saw).
before=$(resyncs)
rebuild 101 5
converge 101 6 "rebuilt, reconnected early"
[ "$(resyncs)" -gt "$before" ] || bt_fail "no resync counted after the first rebuild"

# 2. felix is frozen through the rebuild (a partition, a paused VM): when it
#    comes back the new store is already past the revision it resumes from,
#    and only the check of the store on reconnecting can tell.
before=$(resyncs)
kill -STOP "$FELIX_PID"
rebuild 201 8
kill -CONT "$FELIX_PID"
converge 201 9 "rebuilt while felix was frozen"
[ "$(resyncs)" -gt "$before" ] || bt_fail "no resync counted after the second rebuild"

grep -q "resync" "$BT_DIR/felix.log" || bt_fail "the resyncs were not logged"
grep "resync" "$BT_DIR/felix.log" | sed 's/^/    /' >&2
bt_pass
