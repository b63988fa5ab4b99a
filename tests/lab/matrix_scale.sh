#!/usr/bin/env bash
# A 9-pod matrix over 2 ports x 2 protocols (324 probes) finishes in under
# 15 s even when almost everything is denied (default deny in every
# namespace: each denied probe waits out its whole timeout), and its grid is
# exactly the diagonal. Probes run concurrently: one at a time this would
# take over 5 minutes.
. "$(dirname "$0")/../lib/common.sh"
LAB_PREFIX=lm
. "$(dirname "$0")/../lib/lab.sh"

{
	cat <<YAML
name: $LAB
subnets: [{name: a, cidr: 192.168.100.0/24}]
ipPools: [{cidr: 10.244.0.0/16, blockSize: 26}]
nodes: [{name: node1, subnet: a}, {name: node2, subnet: a}, {name: node3, subnet: a}]
namespaces: [{name: p}, {name: q}, {name: r}]
pods:
YAML
	i=0
	for ns in p q r; do
		for pod in a b c; do
			i=$((i + 1))
			echo "  - {namespace: $ns, name: $pod, node: node$(((i - 1) % 3 + 1)), ports: [{name: t80, containerPort: 80}, {name: t81, containerPort: 81}], serve: [{protocol: udp, port: 80}, {protocol: udp, port: 81}]}"
		done
	done
} >"$BT_DIR/topo.yaml"
lab up "$BT_DIR/topo.yaml" --timeout 60 >/dev/null || bt_fail "lab up failed"

for ns in p q r; do
	printf -- '---\napiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: deny, namespace: %s}\nspec: {podSelector: {}, policyTypes: [Ingress]}\n' $ns
done >"$BT_DIR/deny.yaml"
lab apply "$LAB" -f "$BT_DIR/deny.yaml" >/dev/null
verdict() { lab probe "$LAB" --from "$1" --to "$2" --proto tcp --port 80 -o json | sed 's/.*"result":"\([a-z]*\)".*/\1/'; }
for ns in p q r; do
	bt_wait_for 15 "default deny in $ns" test "$(verdict p/a $ns/c)" = denied
done

start=$(date +%s%N)
json=$(lab matrix "$LAB" --ports 80,81 --protos tcp,udp -o json)
ms=$((($(date +%s%N) - start) / 1000000))
bt_log "324 probes, 288 of them denied: $ms ms"
bt_expect_eq "324 probes" 324 "$(printf '%s\n' "$json" | grep -c '"result"')"
bt_expect_eq "only each pod to itself is allowed" 36 "$(printf '%s\n' "$json" | grep -c '"result":"allowed"')"
bt_expect_eq "the rest denied" 288 "$(printf '%s\n' "$json" | grep -c '"result":"denied"')"
[ "$ms" -lt 15000 ] || bt_fail "the matrix took $ms ms (goal: under 15 s)"

lab_leaves_nothing
bt_pass
