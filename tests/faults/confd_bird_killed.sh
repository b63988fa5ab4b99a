#!/usr/bin/env bash
# BIRD killed under confd, twice a node in a mesh: confd notices at once (its
# watch on BIRD's control socket closes), reports not ready with the reason
# and logs it once; the peer's session goes down; when BIRD is started again
# (here the test plays the process manager: the lab's or the kubelet's), confd
# logs its return once, configures it again, is ready, and the session is
# Established again with the routes back.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/confd.sh"

bt_start_etcd
"$BRINDLECTL" apply -f - >/dev/null <<'YAML'
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pods}
spec: {cidr: 10.244.0.0/16}
---
apiVersion: projectcalico.org/v3
kind: Node
metadata: {name: node-1}
spec: {bgp: {ipv4Address: 10.99.0.11/24}}
---
apiVersion: projectcalico.org/v3
kind: Node
metadata: {name: node-2}
spec: {bgp: {ipv4Address: 10.99.0.12/24}}
YAML
confd_affinity node-1 10.244.1.0/26
confd_affinity node-2 10.244.2.0/26
confd_switch
confd_node node-1 10.99.0.11/24
confd_node node-2 10.99.0.12/24
confd_start node-1
confd_start node-2
confd_bird node-1
confd_bird node-2
bt_wait_for 60 "the mesh session" confd_all_established node-1 1

N1=$(confd_ns node-1)
readiness() { ip netns exec "$N1" curl -s --max-time 2 http://127.0.0.1:9098/readiness || true; }
ready() { ip netns exec "$N1" curl -sf --max-time 2 http://127.0.0.1:9098/readiness >/dev/null; }
not_ready() { ! ready; }
bt_wait_for 20 "node-1's confd ready" ready
learned() { ip -n "$(confd_ns node-2)" route show 10.244.1.0/26 | grep -q 'proto bird'; }
bt_wait_for 30 "node-2 to learn node-1's block" learned
session_down() { ! confd_all_established node-2 1; }

for round in 1 2; do
	kill -9 "${BIRD_PID[node-1]}"
	t0=$(date +%s%N)
	bt_wait_for 5 "confd to report BIRD gone (round $round)" not_ready
	bt_log "round $round: not ready $((($(date +%s%N) - t0) / 1000000)) ms after BIRD was killed"
	bt_expect_contains "readiness says why" "BIRD is not running" "$(readiness)"
	bt_wait_for 30 "node-2's session to drop" session_down
	# The process manager starts it again, from the files confd left.
	confd_bird node-1
	t0=$(date +%s%N)
	bt_wait_for 10 "confd ready with BIRD back (round $round)" ready
	bt_log "round $round: ready $((($(date +%s%N) - t0) / 1000000)) ms after BIRD answered"
	bt_wait_for 60 "the mesh session again (round $round)" confd_all_established node-1 1
	bt_wait_for 30 "node-2 to learn node-1's block again" learned
done
log=$BT_DIR/node-1-confd.log
bt_expect_eq "one line per loss" 2 "$(grep -c 'BIRD is not running' "$log")"
bt_expect_eq "one line per return" 2 "$(grep -c 'BIRD is back' "$log")"
reloads=$(ip netns exec "$N1" curl -s http://127.0.0.1:9098/metrics |
	awk '$1 == "brindle_confd_bird_reloads_total{result=\"ok\"}" {print $2}')
[ "${reloads:-0}" -ge 3 ] || bt_fail "BIRD was not configured again on its returns: $reloads ok reloads"
bt_pass
