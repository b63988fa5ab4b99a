#!/usr/bin/env bash
# brindlectl lab with examples/three-node.yaml: a bad topology builds
# nothing; lab up returns with every BGP session Established within 30 s;
# every pod reaches every pod; a default-deny policy with one allow rule
# gives exactly the expected grid, and deleting it opens everything again;
# a second lab up of the same lab changes nothing; lab down leaves no
# namespace, process or file of the lab.
. "$(dirname "$0")/../lib/common.sh"

LAB_PREFIX=lt
. "$(dirname "$0")/../lib/lab.sh"

lab_example three-node.yaml "$BT_DIR/topo.yaml"

# --- a bad file: the field is named, nothing is built ------------------------------------------
sed 's/{name: node3, subnet: a}/{name: node3, subnet: c}/' "$BT_DIR/topo.yaml" >"$BT_DIR/bad.yaml"
lab_up_fails "$BT_DIR/bad.yaml" "$BT_DIR/bad.yaml: nodes[2].subnet: unknown subnet \"c\""
[ ! -e "$STATE" ] || bt_fail "a bad file left $STATE"
[ -z "$(ip netns list | grep "^lab-$LAB-" || true)" ] || bt_fail "a bad file made namespaces"

# --- up: sessions Established within 30 s ---------------------------------------------------------
start=$SECONDS
lab up "$BT_DIR/topo.yaml" --timeout 30 >/dev/null || bt_fail "lab up did not get ready within 30 s"
bt_log "lab up took $((SECONDS - start)) s"
status=$(lab status "$LAB") || bt_fail "lab status says not ready: $status"
for n in node1 node2 node3; do
	bt_expect_contains "status of $n" "ready      2/2 Established" "$(printf '%s\n' "$status" | grep "^$n ")"
done
bt_expect_eq "six pods in the status" 6 "$(printf '%s\n' "$status" | grep -cE '^[xy]/[abc] ')"
if [ "$LAB_DATASTORE" = kubernetes ]; then
	# The pods are the API's: each Running with the address brindle-cni gave it, which
	# brindlectl reads back as the pod's WorkloadEndpoint.
	bt_expect_contains "the datastore in the status" "Datastore: kubernetes" "$status"
	weps=$(labctl get workloadendpoints -A -o wide)
	for ref in x/a x/b x/c y/a y/b y/c; do
		ip=$(printf '%s\n' "$status" | awk -v r="$ref" '$1 == r {print $2}')
		bt_expect_contains "$ref's endpoint has its address" "$ip/32" \
			"$(printf '%s\n' "$weps" | grep "^${ref%/*} .*${ref#*/}")"
	done
fi

lab_up_fails "$BT_DIR/topo.yaml" "is already up"
lab status "$LAB" >/dev/null || bt_fail "the second lab up changed the lab"
# A node's shell has the node's environment: brindlectl there needs no flags.
out=$(lab exec "$LAB" node1 -- brindlectl node status 2>&1) || bt_fail "node status on node1: $out"
bt_expect_contains "node status on node1 reads its BIRD" "Established" "$out"
out=$(lab exec "$LAB" node1 -- brindlectl get nodes -o name 2>&1) || bt_fail "get nodes on node1: $out"
bt_expect_contains "get on node1 reads the datastore" "node3" "$out"
# BIRD killed on node2: the lab's process manager (a kubelet's restart on Kubernetes) starts it
# again a second later, confd configures it again, and the sessions come back.
sup=$(awk '$3 == "node2-bird" {print $1}' "$STATE/pids")
bird=$(awk '{print $1}' "/proc/$sup/task/$sup/children")
[ -n "$bird" ] || bt_fail "no BIRD under node2's supervisor ($sup)"
kill -9 "$bird"
node2_back() {
	local b
	b=$(awk '{print $1}' "/proc/$sup/task/$sup/children" 2>/dev/null)
	[ -n "$b" ] && [ "$b" != "$bird" ] &&
		lab status "$LAB" 2>/dev/null | grep '^node2 ' | grep -q 'ready      2/2 Established'
}
bt_wait_for 60 "node2's BIRD started again, with its sessions" node2_back
bt_expect_contains "the restart logged" "starting it again in 1 s" "$(cat "$STATE/node2-bird.log")"

# --- every pod reaches every pod ----------------------------------------------------------------------
grid() { lab matrix "$LAB" --ports 80 -o table | sed 's/ *$//'; }
all_open=$(
	cat <<'GRID'
TCP/80  x/a  x/b  x/c  y/a  y/b  y/c
x/a     .    .    .    .    .    .
x/b     .    .    .    .    .    .
x/c     .    .    .    .    .    .
y/a     .    .    .    .    .    .
y/b     .    .    .    .    .    .
y/c     .    .    .    .    .    .

. allowed   X denied   - skipped
GRID
)
bt_expect_eq "every pod reaches every pod" "$all_open" "$(grid)"
json=$(lab matrix "$LAB" --from x/a --to y/c -o json)
bt_expect_eq "matrix JSON" '[{"from":"x/a","to":"y/c","family":4,"proto":"TCP","port":80,"result":"allowed","ms":' \
	"$(printf '%s' "$json" | sed 's/"ms":[0-9.]*}]$/"ms":/')"
out=$(lab probe "$LAB" --from x/b --to y/a --proto SCTP --port 80 -o json)
bt_expect_contains "SCTP is skipped" '"proto":"SCTP","port":80,"result":"skipped"' "$out"

# --- default deny in y, allowed only from x/a ------------------------------------------------------
cat >"$BT_DIR/policy.yaml" <<'YAML'
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: default-deny, namespace: y}
spec: {podSelector: {}, policyTypes: [Ingress]}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: from-x-a, namespace: y}
spec:
  podSelector: {}
  ingress:
  - from:
    - namespaceSelector: {matchLabels: {ns: x}}
      podSelector: {matchLabels: {pod: a}}
YAML
lab apply "$LAB" -f "$BT_DIR/policy.yaml" >/dev/null || bt_fail "lab apply failed"
# A pod's connection to its own address never leaves the pod: y/a -> y/a stays allowed.
isolated=$(
	cat <<'GRID'
TCP/80  x/a  x/b  x/c  y/a  y/b  y/c
x/a     .    .    .    .    .    .
x/b     .    .    .    X    X    X
x/c     .    .    .    X    X    X
y/a     .    .    .    .    X    X
y/b     .    .    .    X    .    X
y/c     .    .    .    X    X    .

. allowed   X denied   - skipped
GRID
)
grid_is() { [ "$(grid)" = "$1" ]; }
deadline=$((SECONDS + 15))
until grid_is "$isolated"; do
	[ $SECONDS -lt $deadline ] || bt_expect_eq "grid under the policy" "$isolated" "$(grid)"
	sleep 0.5
done
bt_log "policy grid: ok"

lab delete "$LAB" -f "$BT_DIR/policy.yaml" >/dev/null || bt_fail "lab delete failed"
deadline=$((SECONDS + 15))
until grid_is "$all_open"; do
	[ $SECONDS -lt $deadline ] || bt_expect_eq "grid after deleting the policy" "$all_open" "$(grid)"
	sleep 0.5
done
bt_log "policy deleted: everything reachable again"

# --- CalicoNodeStatus: node1's confd writes what its BIRD says ----------------------------------------
labctl apply -f - >/dev/null <<'YAML' || bt_fail "applying a CalicoNodeStatus failed"
apiVersion: projectcalico.org/v3
kind: CalicoNodeStatus
metadata: {name: node1-status}
spec: {node: node1, classes: [Agent, BGP, Routes], updatePeriodSeconds: 2}
YAML
cns() { labctl get caliconodestatus node1-status -o yaml; }
cns_ready() { cns | grep -q "numberEstablishedV4: 2"; }
bt_wait_for 20 "node1's CalicoNodeStatus to show its two mesh peers" cns_ready
y=$(cns)
bt_expect_contains "BIRD ready" "state: Ready" "$y"
bt_expect_contains "BIRD's version" "version: 2." "$y"
bt_expect_contains "a mesh peer" "type: NodeMesh" "$y"
bt_expect_contains "established" "state: Established" "$y"
bt_expect_contains "a route learned from the mesh" "sourceType: NodeMesh" "$y"
bt_expect_contains "shown in a table" "node1-status" "$(labctl get caliconodestatuses)"
first=$(cns | sed -n 's/^  lastUpdated: //p')
[ -n "$first" ] || bt_fail "no status.lastUpdated in: $y"
rewritten() { [ "$(cns | sed -n 's/^  lastUpdated: //p')" != "$first" ]; }
bt_wait_for 10 "the status to be written again (every updatePeriodSeconds)" rewritten
bt_log "CalicoNodeStatus: ok"

# --- down leaves nothing ---------------------------------------------------------------------------------
pids=$(awk '{print $1}' "$STATE/pids")
lab down "$LAB" >/dev/null || bt_fail "lab down failed"
[ ! -e "$STATE" ] || bt_fail "lab down left $STATE"
left=$(ip netns list | grep "^lab-$LAB-" || true)
[ -z "$left" ] || bt_fail "lab down left namespaces: $left"
for p in $pids; do
	if kill -0 "$p" 2>/dev/null && grep -q "$LAB" "/proc/$p/cmdline" 2>/dev/null; then
		bt_fail "lab down left process $p: $(tr '\0' ' ' <"/proc/$p/cmdline")"
	fi
done
if pgrep -f "brindle-lab/$LAB/" >/dev/null; then
	bt_fail "lab down left processes: $(pgrep -af "brindle-lab/$LAB/")"
fi
bt_pass
