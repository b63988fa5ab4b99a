#!/usr/bin/env bash
# felix reaches etcd over TCP across a link that is cut (packets dropped, no
# reset: a dead peer, not a closed one) for 25 s. felix must notice within
# seconds, not after ~55 s of default keep-alive, stay ready through the
# grace period (BRINDLE_DATASTORE_GRACE, 6 s here) with the outage in its
# readiness text and felix_datastore_outage_seconds, then turn 503 with the
# reason and felix_in_sync 0; when the link heals it resumes, delivers what
# changed meanwhile and is ready again. One log line at the loss, one at the
# recovery.
. "$(dirname "$0")/../lib/common.sh"

FELIX=$BT_BUILD_DIR/felix/brindle-felix
bt_netns etcd
bt_netns node1
ETCD_NS=$BT_PREFIX-etcd NODE=$BT_PREFIX-node1
ip -n "$ETCD_NS" link add eth0 type veth peer name eth0 netns "$NODE"
ip -n "$ETCD_NS" addr add 192.168.200.1/24 dev eth0
ip -n "$ETCD_NS" link set eth0 up
ip -n "$NODE" addr add 192.168.200.2/24 dev eth0
ip -n "$NODE" link set eth0 up

# etcd in its namespace: TCP for felix, a unix socket for the test's own writes.
dir=$BT_DIR/etcd
mkdir -p "$dir"
bt_run_bg etcd ip netns exec "$ETCD_NS" env -C "$dir" etcd --name bt --data-dir "$dir/data" \
	--listen-client-urls http://192.168.200.1:2379,unix://etcd.sock:0 \
	--advertise-client-urls http://192.168.200.1:2379 \
	--listen-peer-urls unix://peer.sock:0 --initial-advertise-peer-urls unix://peer.sock:0 \
	--initial-cluster bt=unix://peer.sock:0 --log-level error --logger zap --log-outputs stderr
BT_ETCD_SOCK=$dir/etcd.sock:0
export BRINDLE_DATASTORE_TYPE=etcdv3 BRINDLE_ETCD_ENDPOINTS="unix:$BT_ETCD_SOCK"
bt_wait_for 20 "etcd to serve" curl -sf --unix-socket "$BT_ETCD_SOCK" \
	-X POST http://localhost/v3/kv/range -d '{"key":"AA=="}'

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
bt_affinity node1 10.244.1.0/26

bt_run_bg felix ip netns exec "$NODE" env NODENAME=node1 FELIX_PROMETHEUSMETRICSENABLED=true \
	BRINDLE_ETCD_ENDPOINTS=http://192.168.200.1:2379 BRINDLE_DATASTORE_GRACE=6s "$FELIX"
bt_wait_for 20 "felix ready" bt_http_ok "$NODE" http://localhost:9099/readiness
in_sync() { bt_metric "$NODE" http://localhost:9091/metrics felix_in_sync; }
not_ready() { ! bt_http_ok "$NODE" http://localhost:9099/readiness; }
bt_expect_eq "in sync before the cut" 1 "$(in_sync)"

cut() { # cut -I|-D: drop everything between etcd and the node, both ways
	ip netns exec "$ETCD_NS" iptables -w "$1" INPUT -s 192.168.200.2 -j DROP
	ip netns exec "$ETCD_NS" iptables -w "$1" OUTPUT -d 192.168.200.2 -j DROP
}
outage() { bt_metric "$NODE" http://localhost:9091/metrics felix_datastore_outage_seconds; }
readiness() { ip netns exec "$NODE" curl -s --max-time 2 http://localhost:9099/readiness || true; }
in_outage() { [ "$(outage)" != 0 ]; }
cut -I
t0=$SECONDS
bt_wait_for 20 "felix to notice the cut" in_outage
noticed=$((SECONDS - t0))
body=$(readiness)
bt_expect_contains "still ready in the grace period" "ready" "$(printf '%s' "$body" | tail -1)"
bt_expect_contains "readiness tells the outage" "(not ready after 6 s)" "$body"
bt_expect_eq "in sync (for readiness) in the grace period" 1 "$(in_sync)"
bt_wait_for 15 "readiness 503 after the grace period" not_ready
body=$(readiness)
bt_expect_contains "readiness says why" "datastore: unreachable for" "$body"
bt_expect_eq "in sync during the cut" 0 "$(in_sync)"
bt_log "cut noticed after ${noticed}s, not ready after $((SECONDS - t0))s: $(printf '%s' "$body" | head -1)"

# A change while felix cannot see it.
bt_affinity node1 10.244.2.0/26
while [ $((SECONDS - t0)) -lt 25 ]; do sleep 1; done
not_ready || bt_fail "felix turned ready while the link was still cut"

cut -D
t1=$SECONDS
bt_wait_for 30 "felix ready after the link healed" bt_http_ok "$NODE" http://localhost:9099/readiness
bt_wait_for 10 "the change made during the cut" \
	sh -c "ip -n '$NODE' route show type blackhole | grep -q 10.244.2.0/26"
bt_expect_eq "in sync after the cut" 1 "$(in_sync)"
bt_expect_eq "no outage after the cut" 0 "$(outage)"
bt_log "ready again $((SECONDS - t1))s after the link healed"
log=$BT_DIR/felix.log
bt_expect_eq "one log line at the loss" 1 "$(grep -c 'datastore: unreachable' "$log")"
bt_expect_eq "one log line at the recovery" 1 "$(grep -c 'in sync again after an outage' "$log")"
bt_pass
