#!/usr/bin/env bash
# brindlectl ipam check and release against a real etcd, with brindle-ipam
# (the CNI IPAM plugin, which needs no namespace) making the allocations:
#  - overlapping pools and a changed blockSize hand out no address twice;
#  - brindle-ipam serving another plugin writes no endpoints: check does not
#    call its addresses leaks, and release frees one only with --force;
#  - an address brindle-cni assigned whose endpoint is gone is a leak that
#    release frees; a recent one, or one an endpoint has, is refused;
#  - what older versions or crashes leave behind (an address in two
#    overlapping blocks, an orphan block, a claim left pending by a removed
#    node) is reported, and release --empty-blocks repairs it.
# The stored state of the last part is written with etcdctl, as those
# versions would have left it.
. "$(dirname "$0")/../lib/common.sh"

bt_start_etcd
ctl() { "$BRINDLECTL" "$@"; }
IPAM=${BRINDLE_IPAM:-$BT_BUILD_DIR/cni/brindle-ipam}
kv() { ETCDCTL_API=3 etcdctl --endpoints "unix://$BT_ETCD_SOCK" "$@"; }
BLOCKS=/calico/ipam/v2/assignment/ipv4/block
HOSTS=/calico/ipam/v2/host

# ipam_add NODE CONTAINER [POOL]: brindle-ipam's ADD; prints the address.
ipam_add() {
	local pools=""
	[ -n "${3:-}" ] && pools=", \"ipv4_pools\": [\"$3\"]"
	printf '{"cniVersion": "1.0.0", "name": "t", "nodename": "%s", "log_file_path": "",
 "ipam": {"type": "brindle-ipam", "ipam_lock_file": ""%s}}' "$1" "$pools" |
		CNI_COMMAND=ADD CNI_CONTAINERID="$2" CNI_PATH=/nonexistent "$IPAM" 2>>"$BT_DIR/ipam.log" |
		sed -n 's/.*"address":"\([0-9.]*\)\/32".*/\1/p'
}

ctl apply -f - >/dev/null <<'EOF'
apiVersion: projectcalico.org/v3
kind: Node
metadata: {name: node-a}
spec: {}
---
apiVersion: projectcalico.org/v3
kind: Node
metadata: {name: node-b}
spec: {}
---
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: p26}
spec: {cidr: 10.250.0.0/24, blockSize: 26}
---
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: grow}
spec: {cidr: 10.251.0.0/24, blockSize: 26}
EOF

# --- overlapping pools, a changed blockSize: no address twice ------------------------------
# brindlectl refuses both (as Calico does), but a datastore may hold them (written before, or
# by hand): written here straight into etcd, as a copy of pool FROM named NAME with BLOCKSIZE.
raw_pool() {
	ctl get ippool "$1" -o json |
		jq -c --arg n "$2" --argjson bs "$3" \
			'del(.metadata.resourceVersion) | .metadata.name = $n | .spec.blockSize = $bs' \
			>"$BT_DIR/pool.json"
	kv put "/calico/resources/v3/projectcalico.org/ippools/$2" "$(cat "$BT_DIR/pool.json")" \
		>/dev/null
}
raw_pool p26 p28 28
bt_expect_contains "p28 overlaps p26" "blockSize: 28" "$(ctl get ippool p28 -o yaml)"
a=$(ipam_add node-a a1 p26)
b=$(ipam_add node-b b1 p28)
bt_expect_eq "node-a's address" 10.250.0.0 "$a"
bt_expect_eq "node-b's /28 clear of node-a's /26" 10.250.0.64 "$b"
x=$(ipam_add node-a a2 grow)
raw_pool grow grow 28
y=$(ipam_add node-b b2 grow)
bt_expect_eq "before the change" 10.251.0.0 "$x"
bt_expect_eq "after the change, clear of the /26" 10.251.0.64 "$y"

# --- brindle-ipam for another plugin: no endpoints, so no leaks and no release without --force
out=$(ctl ipam check) || bt_fail "ipam check called live addresses problems: $out"
bt_expect_contains "nothing wrong" "4 address(es) allocated; 0 problem(s) found." "$out"
bt_expect_contains "says what it cannot check" \
	"4 address(es) assigned by brindle-ipam for another plugin, which writes no endpoints (or by a brindle-cni that did not record its endpoint): not checked" "$out"
out=$(ctl ipam release --ip "$a" 2>&1) && bt_fail "released a live address without --force: $out"
bt_expect_contains "refusal says why" "which writes no endpoints, or by an older brindle-cni); use --force" "$out"
bt_expect_contains "still held" "10.250.0.0/26" "$(ctl ipam show --show-blocks | grep '1 (2%)')"

# --- brindle-cni's addresses: a leak once its endpoint is gone -------------------------------
# brindle-cni records the endpoint it writes ("endpoint") and the time; give node-a's
# address such attributes, assigned an hour ago, with no endpoint written.
then=$(($(date +%s) - 3600))
kv get --print-value-only "$BLOCKS/10.250.0.0-26" |
	jq -c --arg t "$then" '.spec.attributes[0].secondary += {"endpoint": "node--a-k8s-web-eth0",
		"namespace": "default", "timestamp": $t}' >"$BT_DIR/block.json"
kv put "$BLOCKS/10.250.0.0-26" "$(cat "$BT_DIR/block.json")" >/dev/null
out=$(ctl ipam check) && bt_fail "ipam check missed the leak: $out"
bt_expect_contains "leak reported" \
	"address 10.250.0.0 (handle t.a1) has no endpoint: endpoint default/node--a-k8s-web-eth0 of its container is gone" "$out"
# While an endpoint has it, it is not released.
ctl apply -f - >/dev/null <<'EOF'
apiVersion: projectcalico.org/v3
kind: WorkloadEndpoint
metadata: {name: node--a-k8s-other-eth0, namespace: default}
spec: {node: node-a, orchestrator: k8s, pod: other, endpoint: eth0, containerID: zz,
       interfaceName: cali0, ipNetworks: [10.250.0.0/32]}
EOF
out=$(ctl ipam release --ip "$a" 2>&1) && bt_fail "released an address an endpoint has: $out"
bt_expect_contains "live endpoint named" "used by endpoint default/node--a-k8s-other-eth0" "$out"
ctl delete workloadendpoint -n default node--a-k8s-other-eth0 >/dev/null
# Within the grace period the ADD may still be writing its endpoint.
out=$(ctl ipam release --ip "$a" --grace 7200 2>&1) && bt_fail "released a recent address: $out"
bt_expect_contains "too recent" "its endpoint may not be written yet; use --force" "$out"
out=$(ctl ipam release --ip "$a")
bt_expect_eq "the leak released" "Released 10.250.0.0 (handle t.a1)" "$out"

# --- what older versions left: overlapping blocks, an address twice, an orphan, a stale claim --
a=$(ipam_add node-a a3 p26)
# Released addresses go to the back of the block's free list (FIFO reuse).
bt_expect_eq "node-a's next address" 10.250.0.1 "$a"
# A /28 of node-b inside node-a's /26, holding 10.250.0.1 too.
kv get --print-value-only "$BLOCKS/10.250.0.0-26" |
	jq -c '.metadata.name = "10.250.0.0-28" | .spec.cidr = "10.250.0.0/28"
		| .spec.affinity = "host:node-b" | .spec.allocations |= .[:16]
		| .spec.unallocated |= map(select(. < 16)) | .spec.attributes[0].handle_id = "t.dup"' \
	>"$BT_DIR/dup.json"
kv put "$BLOCKS/10.250.0.0-28" "$(cat "$BT_DIR/dup.json")" >/dev/null
kv get --print-value-only "$HOSTS/node-a/ipv4/block/10.250.0.0-26" |
	jq -c '.metadata.name = "10.250.0.0-28" | .spec.node = "node-b"
		| .spec.cidr = "10.250.0.0/28"' >"$BT_DIR/aff.json"
kv put "$HOSTS/node-b/ipv4/block/10.250.0.0-28" "$(cat "$BT_DIR/aff.json")" >/dev/null
# node-b's affinity for its /28 at 10.250.0.64 lost (the block is an orphan now).
kv del "$HOSTS/node-b/ipv4/block/10.250.0.64-28" >/dev/null
# A claim left pending by a node that is gone.
kv get --print-value-only "$HOSTS/node-a/ipv4/block/10.250.0.0-26" |
	jq -c '.metadata.name = "10.250.0.192-26" | .spec.node = "node-gone"
		| .spec.cidr = "10.250.0.192/26" | .spec.state = "pending"' >"$BT_DIR/pending.json"
kv put "$HOSTS/node-gone/ipv4/block/10.250.0.192-26" "$(cat "$BT_DIR/pending.json")" >/dev/null

out=$(ctl ipam check) && bt_fail "ipam check found nothing: $out"
bt_expect_contains "overlap" "blocks 10.250.0.0/26 and 10.250.0.0/28 overlap" "$out"
bt_expect_contains "twice" \
	"address 10.250.0.1 is assigned twice: in block 10.250.0.0/26 (handle t.a3) and in block 10.250.0.0/28 (handle t.dup)" "$out"
bt_expect_contains "orphan" \
	"block 10.250.0.64/28 belongs to node node-b, which has no affinity for it (an orphan)" "$out"
bt_expect_contains "stale claim" \
	"affinity of node node-gone for 10.250.0.192/26 is pending: an interrupted claim (no block) (stale: the node does not exist" "$out"

# Repairs: the duplicate by hand (both are brindle-ipam's: --force), then the sweep.
out=$(ctl ipam release --ip "$a" --force)
bt_expect_contains "one holder released" "Released $a (handle t.a3)" "$out"
bt_expect_contains "the other holder released" "Released $a (handle t.dup)" "$out"
out=$(ctl ipam release --ip "$b" --force)
bt_expect_contains "orphan emptied" "Released $b (handle t.b1)" "$out"
out=$(ctl ipam release --empty-blocks)
# The empty /28 and /26 that overlap go at once, the empty orphan goes, the claim is settled.
bt_expect_eq "sweep" "Released 2 empty block(s) and 1 orphan block(s); settled 1 pending claim(s)" "$out"
bt_expect_eq "stale claim gone" "" "$(kv get --keys-only --prefix "$HOSTS/node-gone/")"
out=$(ctl ipam check) || bt_fail "ipam check still unhappy: $out"
bt_expect_contains "all repaired" "0 problem(s) found." "$out"
bt_expect_eq "no overlap left" "" "$(kv get --keys-only "$BLOCKS/10.250.0.0-28")"
# An IPv6 pool holds 2^80 addresses: counted exactly, not wrapped around 2^64.
ctl apply -f - >/dev/null <<'EOF'
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: v6}
spec: {cidr: "fd00:10::/48", blockSize: 122}
EOF
out=$(ctl ipam show)
bt_expect_contains "an IPv6 pool's size" "1208925819614629174706176" "$out"
case $out in *18446744073709551615*) bt_fail "a total wrapped at 2^64: $out" ;; esac
bt_pass
