#!/usr/bin/env bash
# A lab shows a BGP failure as a cluster does. The fabric carries no pod
# routes for the nodes, so node2 reaches node1's pods only by the route
# node1's BIRD gave it. node1's BIRD killed and kept down (its supervisor
# stopped): node2 keeps the route through graceful restart (5 s here, the
# BGPConfiguration's nodeMeshMaxRestartTime), then drops it and x/b can no
# longer reach x/a; node1's BIRD started again: the route and the traffic
# come back.
. "$(dirname "$0")/../lib/common.sh"
LAB_PREFIX=lb
. "$(dirname "$0")/../lib/lab.sh"

cat >"$BT_DIR/topo.yaml" <<YAML
name: $LAB
subnets: [{name: a, cidr: 192.168.100.0/24}]
ipPools: [{cidr: 10.244.0.0/16, blockSize: 26, natOutgoing: false}]
nodes: [{name: node1, subnet: a}, {name: node2, subnet: a}]
namespaces: [{name: x}]
pods:
  - {namespace: x, name: a, node: node1, serve: [{protocol: TCP, port: 80}]}
  - {namespace: x, name: b, node: node2}
YAML
lab up "$BT_DIR/topo.yaml" --timeout 60 >/dev/null || bt_fail "lab up failed"
cat >"$BT_DIR/bgp.yaml" <<'YAML'
apiVersion: projectcalico.org/v3
kind: BGPConfiguration
metadata: {name: default}
spec: {nodeToNodeMeshEnabled: true, nodeMeshMaxRestartTime: 5s}
YAML
lab apply "$LAB" -f "$BT_DIR/bgp.yaml" >/dev/null || bt_fail "lab apply failed"
restart_time() { grep -rqs 'graceful restart time 5;' "$STATE/node2"; }
bt_wait_for 30 "node2's BIRD configured with a 5 s restart time" restart_time

verdict() { lab probe "$LAB" --from x/b --to x/a --proto tcp --port 80 --timeout-ms 300 -o json | sed 's/.*"result":"\([a-z]*\)".*/\1/'; }
reachable() { [ "$(verdict)" = allowed ]; }
unreachable() { [ "$(verdict)" != allowed ]; }
block=$(lab exec "$LAB" node1 -- ip -4 route show type blackhole | awk '{print $2; exit}')
route() { lab exec "$LAB" node2 -- ip -4 route show "$block" proto bird; }
bt_wait_for 30 "x/b reaches x/a" reachable
bt_expect_contains "node2's route to node1's block is BIRD's" "via 192.168.100" "$(route)"

sup=$(awk '$3 == "node1-bird" {print $1}' "$STATE/pids")
bird=$(awk '{print $1}' "/proc/$sup/task/$sup/children")
[ -n "$bird" ] || bt_fail "no BIRD under node1's supervisor"
kill -STOP "$sup" # the process manager is down too: BIRD stays dead
kill -9 "$bird"
t0=$SECONDS
no_route() { [ -z "$(route)" ]; }
bt_wait_for 60 "node2 to drop node1's block after graceful restart" no_route
bt_log "node2 dropped the route $((SECONDS - t0)) s after node1's BIRD died"
bt_wait_for 60 "x/a unreachable from x/b with node1's BIRD down" unreachable
bt_log "x/a unreachable $((SECONDS - t0)) s after node1's BIRD died"
bt_expect_eq "node2 has no route to node1's block" "" "$(route)"

kill -CONT "$sup" # BIRD is started again a second later
t1=$SECONDS
bt_wait_for 60 "x/b reaches x/a again" reachable
bt_log "reachable again $((SECONDS - t1)) s after BIRD's supervisor resumed"
bt_expect_contains "node2's route is back" "via 192.168.100" "$(route)"
lab_leaves_nothing
bt_pass
