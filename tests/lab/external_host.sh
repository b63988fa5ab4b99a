#!/usr/bin/env bash
# An external host on the lab's fabric answers a pod's very first probe at
# once: the fabric proxies ARP for it without the kernel's default delay (up
# to 0.8 s, which made short --timeout-ms probes report false denials), and
# the reverse direction too.
. "$(dirname "$0")/../lib/common.sh"
LAB_PREFIX=le
. "$(dirname "$0")/../lib/lab.sh"

cat >"$BT_DIR/topo.yaml" <<YAML
name: $LAB
subnets: [{name: a, cidr: 192.168.100.0/24}]
ipPools: [{cidr: 10.244.0.0/16, blockSize: 26, natOutgoing: false}]
nodes: [{name: node1, subnet: a}, {name: node2, subnet: a}]
externalHosts: [{name: ext1, ip: 203.0.113.10, serve: [{protocol: TCP, port: 8080}]}]
namespaces: [{name: x}]
pods:
  - {namespace: x, name: a, node: node1}
  - {namespace: x, name: b, node: node2}
YAML
lab up "$BT_DIR/topo.yaml" --timeout 30 >/dev/null || bt_fail "lab up failed"
# The first probe from each pod, with a timeout well under 0.8 s.
for p in x/a x/b; do
	out=$(lab probe "$LAB" --from "$p" --to ip:203.0.113.10 --proto tcp --port 8080 \
		--timeout-ms 300 -o json)
	bt_expect_contains "$p's first probe to the external host" '"result":"allowed"' "$out"
	bt_log "$p -> ext1: $out"
done
lab_leaves_nothing
bt_pass
