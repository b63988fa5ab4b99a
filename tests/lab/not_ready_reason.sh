#!/usr/bin/env bash
# A lab that cannot come up says why, in felix's own words: an IPIP lab on a
# kernel without ipip names the missing module instead of "felix not ready"
# (on a kernel with ipip it comes up). lab status shows the same reason. A BIRD
# configuration BIRD refuses is named with confd's error.
. "$(dirname "$0")/../lib/common.sh"
LAB_PREFIX=lr
. "$(dirname "$0")/../lib/lab.sh"

cat >"$BT_DIR/topo.yaml" <<YAML
name: $LAB
encapsulation: IPIP
subnets: [{name: a, cidr: 192.168.100.0/24}]
ipPools: [{cidr: 10.244.0.0/16, blockSize: 26}]
nodes: [{name: node1, subnet: a}]
YAML
# Does this kernel make ipip tunnels? Asked in a namespace of our own.
bt_netns probe
if ip -n "$BT_PREFIX-probe" link add t0 type ipip local 192.0.2.1 2>/dev/null; then
	lab up "$BT_DIR/topo.yaml" --timeout 30 >/dev/null || bt_fail "an IPIP lab failed where ipip works"
	bt_log "this kernel has ipip: the lab came up"
else
	set +e
	out=$(lab up "$BT_DIR/topo.yaml" --timeout 10 --keep-on-failure 2>&1)
	rc=$?
	set -e
	[ $rc -ne 0 ] || bt_fail "an IPIP lab came up without ipip"
	bt_expect_contains "the reason, from felix" "IPIP unavailable" "$out"
	bt_expect_contains "naming the pool" "pool-0 asks for IPIP" "$out"
	out=$(lab status "$LAB" 2>&1 || true)
	bt_expect_contains "lab status gives the reason" "felix: dataplane: IPIP unavailable" "$out"
fi
lab_leaves_nothing

# A BIRD configuration BIRD refuses (here from a broken template): lab up names
# confd's error, BIRD's own words, not only where its log is.
cp -r "$BT_SOURCE_DIR/bgp-templates" "$BT_DIR/templates"
echo "this is not a bird statement;" >>"$BT_DIR/templates/bird.conf.mustache"
cat >"$BT_DIR/plain.yaml" <<YAML
name: $LAB
subnets: [{name: a, cidr: 192.168.100.0/24}]
ipPools: [{cidr: 10.244.0.0/16, blockSize: 26}]
nodes: [{name: node1, subnet: a}]
YAML
set +e
out=$(BRINDLE_CONFD_TEMPLATES=$BT_DIR/templates lab up "$BT_DIR/plain.yaml" 2>&1)
rc=$?
set -e
[ $rc -ne 0 ] || bt_fail "a lab came up with a BIRD configuration BIRD refuses"
bt_expect_contains "confd's error named" "node1: brindle-confd wrote no bird.conf within 30 s: " "$out"
bt_expect_contains "in BIRD's words" "syntax error" "$out"
[ ! -e "$STATE" ] || bt_fail "a failed lab up left $STATE"
bt_pass
