#!/usr/bin/env bash
# Switching felix's rule backend on a running lab: a default-deny NetworkPolicy enforced on
# iptables (legacy); FelixConfiguration nftablesMode: Enabled makes every felix restart onto
# nftables (the lab starts it again, as a DaemonSet would), the policy stays enforced, Brindle's
# nftables tables hold the rules and no cali- chain or cali40 set is left in iptables; back to
# Disabled, the other way round.
. "$(dirname "$0")/../lib/common.sh"
LAB_PREFIX=ls
. "$(dirname "$0")/../lib/lab.sh"
[ -z "${BRINDLE_LAB_RULE_BACKEND:-}" ] || bt_fail "this test chooses the backend itself"

cat >"$BT_DIR/topo.yaml" <<YAML
name: $LAB
ruleBackend: auto
subnets: [{name: a, cidr: 192.168.100.0/24}]
ipPools: [{cidr: 10.244.0.0/16, blockSize: 26}]
nodes: [{name: node1, subnet: a}, {name: node2, subnet: a}]
namespaces: [{name: x}, {name: y}]
pods:
  - {namespace: x, name: a, node: node1, ports: [{name: http, containerPort: 80}]}
  - {namespace: y, name: b, node: node2, ports: [{name: http, containerPort: 80}]}
YAML
lab up "$BT_DIR/topo.yaml" --timeout 60 >/dev/null || bt_fail "lab up failed"
verdict() { lab probe "$LAB" --from "$1" --to "$2" --proto tcp --port 80 -o json | sed 's/.*"result":"\([a-z]*\)".*/\1/'; }
lab apply "$LAB" -f - >/dev/null <<'YAML' || bt_fail "lab apply failed"
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: deny-all, namespace: y}
spec: {podSelector: {}, policyTypes: [Ingress]}
YAML
denied() { [ "$(verdict x/a y/b)" = denied ]; }
allowed() { [ "$(verdict y/b x/a)" = allowed ]; }
lab_until 20 "x/a -> y/b denied (iptables)" denied
on() { lab exec "$LAB" "$@"; }
legacy_rules() { on node2 -- iptables-legacy-save -t filter | grep -c '^:cali-' || true; }
nft_tables() { on node2 -- nft list tables | grep -c 'brindle-' || true; }
[ "$(legacy_rules)" -gt 0 ] || bt_fail "felix on node2 wrote no iptables chains"
bt_expect_eq "no nftables table of Brindle's yet" 0 "$(nft_tables)"

switch() { # Enabled | Disabled
	lab apply "$LAB" -f - >/dev/null <<YAML || bt_fail "lab apply failed"
apiVersion: projectcalico.org/v3
kind: FelixConfiguration
metadata: {name: default}
spec: {nftablesMode: $1}
YAML
}
switch Enabled
on_nft() { [ "$(nft_tables)" = 2 ] && [ "$(legacy_rules)" = 0 ]; }
bt_wait_for 30 "node2 on nftables, its iptables chains gone" on_nft
grep -q 'the rule backend changed from Auto to NFT; felix restarts to switch' "$STATE"/node2-felix.log ||
	bt_fail "felix did not say why it restarted: $(grep -h 'rule backend' "$STATE"/node2-felix.log)"
bt_expect_eq "no ip set of Brindle's left" 0 "$(on node2 -- ipset list -n | grep -c '^cali40' || true)"
lab_until 20 "x/a -> y/b still denied (nftables)" denied
lab_until 20 "y/b -> x/a allowed (nftables)" allowed
out=$(on node2 -- nft list table ip brindle-filter)
grep -q 'goto cali-tw-' <<<"$out" || bt_fail "no dispatch to workload chains in brindle-filter: $out"

switch Disabled
on_legacy() { [ "$(nft_tables)" = 0 ] && [ "$(legacy_rules)" -gt 0 ]; }
bt_wait_for 30 "node2 back on iptables, its nftables tables gone" on_legacy
lab_until 20 "x/a -> y/b still denied (iptables again)" denied
lab_until 20 "y/b -> x/a allowed (iptables again)" allowed
lab_leaves_nothing
bt_pass
