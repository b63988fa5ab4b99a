#!/usr/bin/env bash
# lab ns and lab pod on a running lab: a namespace added with labels; a pod
# added on one node is reachable from a pod on another at once; policy
# follows a pod label change (lab pod label) both ways; lab pod delete is a
# real CNI DEL: the WorkloadEndpoint goes, the address is released (a new
# pod can take it) and nothing of the pod is left; lab exec runs in a pod.
. "$(dirname "$0")/../lib/common.sh"
LAB_PREFIX=lp
. "$(dirname "$0")/../lib/lab.sh"

cat >"$BT_DIR/topo.yaml" <<YAML
name: $LAB
subnets: [{name: a, cidr: 192.168.100.0/24}]
ipPools: [{cidr: 10.244.0.0/16, blockSize: 26}]
nodes: [{name: node1, subnet: a}, {name: node2, subnet: a}]
namespaces: [{name: x, labels: {ns: x}}]
pods:
  - {namespace: x, name: a, node: node1, ports: [{name: http, containerPort: 80}]}
YAML
lab up "$BT_DIR/topo.yaml" --timeout 30 >/dev/null || bt_fail "lab up failed"

# --- namespaces --------------------------------------------------------------------------------
lab ns add "$LAB" z team=blue >/dev/null || bt_fail "lab ns add failed"
set +e
out=$(lab ns add "$LAB" z 2>&1)
rc=$?
set -e
bt_expect_eq "adding a namespace twice fails" 1 "$rc"
bt_expect_contains "and says why" "namespace z already exists" "$out"
lab ns label "$LAB" z team=red env=dev >/dev/null || bt_fail "lab ns label failed"
lab ns label "$LAB" z env- >/dev/null || bt_fail "lab ns label k- failed"
ns=$(labctl get namespace z -o json)
bt_expect_contains "the product's namespace label" '"kubernetes.io/metadata.name": "z"' "$ns"
bt_expect_contains "label changed" '"team": "red"' "$ns"
case "$ns" in *'"env"'*) bt_fail "env- did not remove the label: $ns" ;; esac

# --- pod add: reachable from another node ---------------------------------------------------------
set +e
out=$(lab pod add "$LAB" z/d --node node9 2>&1)
rc=$?
set -e
bt_expect_eq "pod add on an unknown node fails" 1 "$rc"
bt_expect_contains "and names the flag" "--node: lab $LAB has no node node9" "$out"
out=$(lab pod add "$LAB" z/d --node node2 --ip 10.244.7.7 --labels app=web,tier=fe \
	--port http:Tcp:80 --serve udp:81 --port metrics:TCP:9000) || bt_fail "lab pod add failed: $out"
bt_expect_eq "pod add says where" "pod z/d on node2: 10.244.7.7" "$out"
# pod add returns once the pod serves; node1 learns its new block's route over BGP a moment
# later on a loaded machine (seen once on the Kubernetes datastore): a bounded poll, logged
new_pod() { lab matrix "$LAB" --from x/a --to z/d -o json | sed 's/,"ms":[0-9.]*}/}/g'; }
lab_until_equal 10 "x/a on node1 reaches the new pod on node2 on everything it serves" \
	'[{"from":"x/a","to":"z/d","family":4,"proto":"TCP","port":80,"result":"allowed"},
 {"from":"x/a","to":"z/d","family":4,"proto":"TCP","port":9000,"result":"allowed"},
 {"from":"x/a","to":"z/d","family":4,"proto":"UDP","port":81,"result":"allowed"}]' new_pod
wep=$(labctl get wep -n z -o json)
bt_expect_contains "WorkloadEndpoint labels" '"app": "web"' "$wep"
bt_expect_contains "WorkloadEndpoint named port" '"name": "metrics"' "$wep"
lab pod add "$LAB" x/h --node node1 --host-network --serve tcp:8081 >/dev/null ||
	bt_fail "host-network pod add failed"
verdict() { lab probe "$LAB" --from "$1" --to "$2" --proto tcp --port "$3" -o json | sed 's/.*"result":"\([a-z]*\)".*/\1/'; }
bt_expect_eq "a host-network pod serves on its node's address" allowed "$(verdict z/d x/h 8081)"

# --- policy follows labels --------------------------------------------------------------------------
cat >"$BT_DIR/policy.yaml" <<'YAML'
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web, namespace: z}
spec:
  podSelector: {matchLabels: {app: web}}
  ingress:
  - from:
    - namespaceSelector: {matchLabels: {ns: x}}
      podSelector: {matchLabels: {role: client}}
YAML
lab apply "$LAB" -f "$BT_DIR/policy.yaml" >/dev/null
lab_until 10 "the policy to deny x/a" test "$(verdict x/a z/d 80)" = denied
# The connection event log of a lab node lives in the lab's state directory.
lab apply "$LAB" -f - >/dev/null <<'YAML'
apiVersion: projectcalico.org/v3
kind: FelixConfiguration
metadata: {name: node.node2}
spec: {policyEventLogEnabled: true}
YAML
logged() { verdict x/a z/d 80 >/dev/null; grep -q '"verdict":"deny"' "$STATE/node2/policy-events.log"; }
lab_until 10 "the denial in node2's event log in the lab's state" logged
start=$SECONDS
lab pod label "$LAB" x/a role=client >/dev/null || bt_fail "lab pod label failed"
lab_until 10 "x/a labelled role=client to be allowed" test "$(verdict x/a z/d 80)" = allowed
lab pod label "$LAB" x/a role- >/dev/null
lab_until 10 "x/a unlabelled to be denied again" test "$(verdict x/a z/d 80)" = denied
lab pod label "$LAB" z/d app- >/dev/null
lab_until 10 "z/d out of the policy's selector to be open" test "$(verdict x/a z/d 80)" = allowed
bt_log "policy followed the labels ($((SECONDS - start)) s)"
set +e
out=$(lab pod label "$LAB" z/d projectcalico.org/namespace=q 2>&1)
rc=$?
set -e
bt_expect_eq "the product's labels stay" 1 "$rc"

# --- exec -------------------------------------------------------------------------------------------
bt_expect_contains "lab exec runs in the pod" "10.244.7.7/32" "$(lab exec "$LAB" z/d -- ip -4 -o addr show dev eth0)"
set +e
lab exec "$LAB" node1 -- sh -c 'exit 3'
rc=$?
set -e
bt_expect_eq "lab exec passes the exit status on" 3 "$rc"

# --- pod delete: a real CNI DEL ------------------------------------------------------------------------
lab pod delete "$LAB" z/d >/dev/null || bt_fail "lab pod delete failed"
bt_expect_eq "the WorkloadEndpoint is gone" "" "$(labctl get wep -n z -o name)"
[ -z "$(ip netns list | grep "^lab-$LAB-z-d" || true)" ] || bt_fail "the pod's namespace is left"
set +e
out=$(lab probe "$LAB" --from x/a --to z/d --proto tcp --port 80 2>&1)
rc=$?
set -e
bt_expect_eq "a deleted pod is no endpoint" 1 "$rc"
lab pod delete "$LAB" x/h >/dev/null || bt_fail "deleting the host-network pod failed"
# the address went back to IPAM: another pod can have it
out=$(lab pod add "$LAB" z/e --node node1 --ip 10.244.7.7 --port http:tcp:80) ||
	bt_fail "the deleted pod's address was not released: $out"
bt_expect_eq "x/a reaches the pod with the reused address" allowed "$(verdict x/a z/e 80)"

lab_leaves_nothing
bt_pass
