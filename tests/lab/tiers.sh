#!/usr/bin/env bash
# Tiers end to end on a three-node lab, in both datastore modes (lab on etcd, lab-kdd on
# Kubernetes) and for each family (BT_LAB_FAMILY, as tests/lab/policy.sh). A "security" tier (order 100, Deny) gates the prod namespace: traffic from prod
# and from the monitoring namespace is passed on to the default tier, anything else is
# dropped at the end of the tier. In the default tier a Kubernetes NetworkPolicy lets only
# prod/web reach prod/db. Then the tier's defaultAction becomes Pass (dev reaches web, whose
# default tier has no policy, but not db), staged policies change nothing but are previewed
# in the event log (would-deny, would-allow), and with the Tier and its policies gone
# everything is open again.
. "$(dirname "$0")/../lib/common.sh"
LAB_PREFIX=lt
. "$(dirname "$0")/../lib/lab.sh"

cat >"$BT_DIR/topo.yaml" <<YAML
name: $LAB
subnets: [{name: a, cidr: 192.168.100.0/24}]
ipPools: [{cidr: 10.244.0.0/16, blockSize: 26}]
nodes: [{name: node1, subnet: a}, {name: node2, subnet: a}, {name: node3, subnet: a}]
namespaces:
  - {name: dev}
  - {name: mon}
  - {name: prod}
pods:
  - {namespace: dev, name: cli, node: node1, labels: {app: client}, ports: [{name: http, containerPort: 80}]}
  - {namespace: mon, name: probe, node: node2, labels: {app: probe}, ports: [{name: http, containerPort: 80}]}
  - {namespace: prod, name: web, node: node3, labels: {app: web}, ports: [{name: http, containerPort: 80}]}
  - {namespace: prod, name: db, node: node1, labels: {app: db}, ports: [{name: http, containerPort: 80}]}
YAML
lab up "$BT_DIR/topo.yaml" --timeout 40 >/dev/null || bt_fail "lab up failed"

PODS="dev/cli mon/probe prod/web prod/db"
# (lab_grid and lab_want: a grid per family with BT_LAB_FAMILY=6 or dual)
grid() { lab_grid --ports 80; }
want() { lab_want "TCP/80 $PODS" "$@"; }
all_open=$(want "dev/cli . . . ." "mon/probe . . . ." "prod/web . . . ." "prod/db . . . .")
lab_until_equal 20 "no policy" "$all_open" grid

cat >"$BT_DIR/tiers.yaml" <<'YAML'
apiVersion: projectcalico.org/v3
kind: Tier
metadata: {name: security}
spec: {order: 100}
---
apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: prod-gate}
spec:
  tier: security
  selector: projectcalico.org/namespace == 'prod'
  types: [Ingress]
  ingress:
  - action: Pass
    source:
      namespaceSelector: kubernetes.io/metadata.name in {'prod', 'mon'}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: db-from-web, namespace: prod}
spec:
  podSelector: {matchLabels: {app: db}}
  ingress:
  - from: [{podSelector: {matchLabels: {app: web}}}]
YAML
lab apply "$LAB" -f "$BT_DIR/tiers.yaml" >/dev/null || bt_fail "lab apply failed"
# Rows are sources, columns destinations.
lab_until_equal 20 "security tier (Deny) and the default tier" "$(want \
	"dev/cli . . X X" \
	"mon/probe . . . X" \
	"prod/web . . . ." \
	"prod/db . . . .")" grid

# The tier's default action Pass: what the gate does not pass goes on to the default tier too.
lab apply "$LAB" -f - >/dev/null <<'YAML' || bt_fail "lab apply failed"
apiVersion: projectcalico.org/v3
kind: Tier
metadata: {name: security}
spec: {order: 100, defaultAction: Pass}
YAML
lab_until_equal 20 "security tier (Pass)" "$(want \
	"dev/cli . . . X" \
	"mon/probe . . . X" \
	"prod/web . . . ." \
	"prod/db . . . .")" grid

# Staged policies are never enforced; with the event log on they are previewed. A staged
# deny-all for prod/web in the security tier, and a staged version of db-from-web (the
# Kubernetes policy in force) that also admits the monitoring namespace: the grid does not
# change, while the event logs of web's node (node3) and db's (node1) say what would happen.
lab apply "$LAB" -f - >/dev/null <<'YAML' || bt_fail "lab apply failed"
apiVersion: projectcalico.org/v3
kind: FelixConfiguration
metadata: {name: node.node1}
spec: {policyEventLogEnabled: true}
---
apiVersion: projectcalico.org/v3
kind: FelixConfiguration
metadata: {name: node.node3}
spec: {policyEventLogEnabled: true}
YAML
cat >"$BT_DIR/staged.yaml" <<'YAML'
apiVersion: projectcalico.org/v3
kind: StagedGlobalNetworkPolicy
metadata: {name: deny-all}
spec: {tier: security, order: 1, selector: app == 'web', ingress: [{action: Deny}]}
---
apiVersion: projectcalico.org/v3
kind: StagedKubernetesNetworkPolicy
metadata: {name: db-from-web, namespace: prod}
spec:
  podSelector: {matchLabels: {app: db}}
  ingress:
  - from: [{podSelector: {matchLabels: {app: web}}}]
  - from: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: mon}}}]
YAML
lab apply "$LAB" -f "$BT_DIR/staged.yaml" >/dev/null || bt_fail "lab apply failed"
verdict() { lab probe "$LAB" --from "$1" --to "$2" --proto tcp --port 80 -o json | sed 's/.*"result":"\([a-z]*\)".*/\1/'; }
# previewed: probe (so that there is a new connection), then look for the line
previewed() {
	verdict "$1" "$2" >/dev/null
	grep -E "$4" "$STATE/$3/policy-events.log" 2>/dev/null | grep -q '"dport":80'
}
lab_until 20 "mon/probe -> prod/web: would be denied by the staged deny-all (node3's log)" \
	previewed mon/probe prod/web node3 '"verdict":"would-deny".*"policy":"sgnp/deny-all","rule":0'
lab_until 20 "mon/probe -> prod/db: would be allowed by the staged db-from-web (node1's log)" \
	previewed mon/probe prod/db node1 '"verdict":"would-allow".*"policy":"sknp/prod/db-from-web","rule":1'
lab_until 20 "dev/cli -> prod/db: would be denied at the end of the default tier (node1's log)" \
	previewed dev/cli prod/db node1 '"verdict":"would-deny".*"tier":"default"'
bt_log "previews: $(grep -c '"verdict":"would-' "$STATE/node1/policy-events.log") lines on node1, $(grep -c '"verdict":"would-' "$STATE/node3/policy-events.log") on node3; e.g. $(grep -m1 '"verdict":"would-deny"' "$STATE/node3/policy-events.log")"
bt_expect_eq "the staged policies enforce nothing" "$(want \
	"dev/cli . . . X" \
	"mon/probe . . . X" \
	"prod/web . . . ." \
	"prod/db . . . .")" "$(grid)"
# the policies in force still log what they decide: mon/probe -> prod/db is denied
lab_until 20 "mon/probe -> prod/db denied in force (node1's log)" \
	previewed mon/probe prod/db node1 '"verdict":"deny",'

lab delete "$LAB" -f "$BT_DIR/staged.yaml" >/dev/null || bt_fail "lab delete failed"
lab delete "$LAB" -f "$BT_DIR/tiers.yaml" >/dev/null || bt_fail "lab delete failed"
lab_until_equal 20 "all deleted" "$all_open" grid
bt_pass
