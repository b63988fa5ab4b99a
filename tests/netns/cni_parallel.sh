#!/usr/bin/env bash
# Two nodes' worth of pods at once: 50 ADDs in parallel, split over two node
# namespaces (each node with its own IPAM lock, as separate hosts have), give
# 50 distinct addresses from blocks claimed by the right nodes; brindlectl
# ipam show/check/release see the same; 50 parallel DELs leave nothing; empty
# blocks go after their grace period. Then a pool that fills up: borrowing
# from another node's block, and refusal once StrictAffinity is on.
. "$(dirname "$0")/../lib/common.sh"

CNI_DIR=$BT_BUILD_DIR/cni
N=50
bt_start_etcd
ctl() { "$BRINDLECTL" "$@"; }

for node in a b; do
	ns=${BT_PREFIX}n$node
	ip netns add "$ns"
	bt_netns+=("$ns")
	ip -n "$ns" link set lo up
done
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
metadata: {name: many}
spec: {cidr: 10.246.0.0/24, blockSize: 28}
---
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: tiny}
spec: {cidr: 10.247.0.0/29, blockSize: 30}
EOF

conf() { # conf NODE POOL
	cat <<EOF
{"cniVersion": "1.0.0", "name": "par", "type": "brindle-cni", "nodename": "node-$1",
 "log_file_path": "$BT_DIR/cni-$1.log",
 "ipam": {"type": "brindle-ipam", "ipv4_pools": ["$2"], "ipam_lock_file": "$BT_DIR/lock-$1"}}
EOF
}

node_of() { [ $(($1 % 2)) -eq 0 ] && echo a || echo b; }

# run_cni CMD I POOL: one invocation for pod I on its node, output in $BT_DIR/out.CMD.I
run_cni() {
	local cmd=$1 i=$2 pool=$3 node
	node=$(node_of "$i")
	conf "$node" "$pool" | ip netns exec "${BT_PREFIX}n$node" env CNI_COMMAND="$cmd" \
		CNI_CONTAINERID="ctr$i" CNI_NETNS="/var/run/netns/${BT_PREFIX}p$i" CNI_IFNAME=eth0 \
		CNI_ARGS="K8S_POD_NAMESPACE=par;K8S_POD_NAME=pod-$i" CNI_PATH="$CNI_DIR" \
		"$CNI_DIR/brindle-cni" >"$BT_DIR/out.$cmd.$i" 2>>"$BT_DIR/stderr.log"
}

for i in $(seq 0 $((N - 1))); do
	ip netns add "${BT_PREFIX}p$i"
	bt_netns+=("${BT_PREFIX}p$i")
done

# --- 50 ADDs at once -------------------------------------------------------------------------
start=$SECONDS
pids=()
for i in $(seq 0 $((N - 1))); do
	run_cni ADD "$i" many &
	pids+=($!)
done
failed=0
for p in "${pids[@]}"; do wait "$p" || failed=$((failed + 1)); done
[ $failed -eq 0 ] || bt_fail "$failed ADDs failed: $(cat "$BT_DIR"/out.ADD.* | grep code | head -3)"
bt_log "$N parallel ADDs took $((SECONDS - start)) s"

declare -A owner
for i in $(seq 0 $((N - 1))); do
	ipaddr=$(sed -n 's/.*"address":"\([0-9.]*\)\/32".*/\1/p' "$BT_DIR/out.ADD.$i")
	[ -n "$ipaddr" ] || bt_fail "pod $i: no address in $(cat "$BT_DIR/out.ADD.$i")"
	[ -z "${owner[$ipaddr]:-}" ] || bt_fail "$ipaddr handed to pods ${owner[$ipaddr]} and $i"
	owner[$ipaddr]=$i
	got=$(ip -n "${BT_PREFIX}p$i" -4 -o addr show dev eth0 | awk '{print $4}')
	bt_expect_eq "pod $i address" "$ipaddr/32" "$got"
done
bt_expect_eq "distinct addresses" $N ${#owner[@]}

# Every address lies in a block its own node claimed (ipam show --show-blocks).
blocks=$(ctl ipam show --show-blocks)
for ipaddr in "${!owner[@]}"; do
	i=${owner[$ipaddr]}
	IFS=. read -r o1 o2 o3 o4 <<<"$ipaddr"
	block="$o1.$o2.$o3.$((o4 / 16 * 16))/28"
	row=$(echo "$blocks" | awk -v b="$block" '$1 == "Block" && $2 == b')
	bt_expect_contains "block of $ipaddr (pod $i)" "node-$(node_of "$i")" "$row"
done
bt_expect_contains "pool usage" "10.246.0.0/24   256         50 (20%)" "$(ctl ipam show)"
for node in a b; do
	bt_expect_eq "host routes on node-$node" $((N / 2)) \
		"$(ip -n "${BT_PREFIX}n$node" -4 route show proto 80 | wc -l)"
done
out=$(ctl ipam check) || bt_fail "ipam check found problems: $out"
bt_expect_contains "ipam check" "50 address(es) allocated; 0 problem(s) found." "$out"

# brindle-ipam serving another plugin writes no endpoint: its address is no leak to
# check, and release frees it only with --force.
other=$(echo '{"cniVersion": "1.0.0", "name": "par", "nodename": "node-a", "log_file_path": "",
 "ipam": {"type": "brindle-ipam", "ipv4_pools": ["many"], "ipam_lock_file": ""}}' |
	CNI_COMMAND=ADD CNI_CONTAINERID=other CNI_PATH="$CNI_DIR" "$CNI_DIR/brindle-ipam" |
	sed -n 's/.*"address":"\([0-9.]*\)\/32".*/\1/p')
[ -n "$other" ] || bt_fail "brindle-ipam assigned nothing"
out=$(ctl ipam check --grace 0) || bt_fail "ipam check called brindle-ipam's address a leak: $out"
bt_expect_contains "not checked" "1 address(es) assigned by brindle-ipam for another plugin" "$out"
out=$(ctl ipam release --ip "$other" 2>&1) && bt_fail "released brindle-ipam's address: $out"
bt_expect_contains "refused without --force" "writes no endpoints" "$out"
out=$(ctl ipam release --ip "$other" --force)
bt_expect_contains "released with --force" "Released $other (handle par.other)" "$out"

# A leak: pod 1's endpoint deleted while its address stays (its DEL never ran).
leak=$(sed -n 's/.*"address":"\([0-9.]*\)\/32".*/\1/p' "$BT_DIR/out.ADD.1")
ctl delete workloadendpoint -n par node--b-k8s-pod--1-eth0 >/dev/null
out=$(ctl ipam check) || bt_fail "a leak younger than the grace period reported: $out"
bt_expect_contains "too recent to tell" "1 address(es) without an endpoint yet" "$out"
out=$(ctl ipam check --grace 0) && bt_fail "ipam check missed the leak"
bt_expect_contains "leak reported" "address $leak (handle par.ctr1) has no endpoint" "$out"
live=$(sed -n 's/.*"address":"\([0-9.]*\)\/32".*/\1/p' "$BT_DIR/out.ADD.0")
out=$(ctl ipam release --ip "$live" --grace 0 2>&1) && bt_fail "released an address in use"
bt_expect_contains "release refuses a live address" "use --force" "$out"
out=$(ctl ipam release --ip "$leak" 2>&1) && bt_fail "released a leak within its grace period"
bt_expect_contains "release waits for the grace period" "may not be written yet" "$out"
out=$(ctl ipam release --ip "$leak" --grace 0)
bt_expect_contains "release the leak" "Released $leak (handle par.ctr1)" "$out"
ctl ipam check --grace 0 >/dev/null || bt_fail "ipam check still unhappy after the release"

# --- 50 DELs at once -------------------------------------------------------------------------
pids=()
for i in $(seq 0 $((N - 1))); do
	run_cni DEL "$i" many &
	pids+=($!)
done
failed=0
for p in "${pids[@]}"; do wait "$p" || failed=$((failed + 1)); done
[ $failed -eq 0 ] || bt_fail "$failed DELs failed: $(cat "$BT_DIR"/out.DEL.* | head -3)"
bt_expect_contains "nothing in use" "10.246.0.0/24   256         0 (0%)" "$(ctl ipam show)"
bt_expect_eq "no endpoints" "" "$(ctl get workloadendpoints -A -o name)"
for node in a b; do
	bt_expect_eq "no routes on node-$node" "" "$(ip -n "${BT_PREFIX}n$node" -4 route show proto 80)"
	bt_expect_eq "no veths on node-$node" "" \
		"$(ip -n "${BT_PREFIX}n$node" -o link show | grep cali || true)"
done
# The emptied blocks still belong to their nodes until the grace period is over.
bt_expect_contains "blocks kept within the grace period" "node-a" "$(ctl ipam show --show-blocks)"
out=$(ctl ipam release --empty-blocks --grace 0)
bt_expect_contains "empty blocks released" "empty block(s)" "$out"
bt_expect_eq "no blocks left" "" "$(ctl ipam show --show-blocks | awk '$1 == "Block"')"

# --- a full pool: borrow, then refuse with StrictAffinity -----------------------------------
# Pool "tiny" has two blocks of four. node-a (even pods) fills its block.
for i in 0 2 4 6; do run_cni ADD $i tiny || bt_fail "tiny ADD $i: $(cat "$BT_DIR/out.ADD.$i")"; done
run_cni ADD 1 tiny || bt_fail "tiny ADD 1: $(cat "$BT_DIR/out.ADD.1")"
bt_expect_contains "node-b claims the second block" '"address":"10.247.0.4/32"' "$(cat "$BT_DIR/out.ADD.1")"
run_cni ADD 8 tiny || bt_fail "borrowing ADD: $(cat "$BT_DIR/out.ADD.8")"
bt_expect_contains "node-a borrows from node-b's block" '"address":"10.247.0.5/32"' \
	"$(cat "$BT_DIR/out.ADD.8")"
bt_expect_contains "the block stays node-b's" "node-b" \
	"$(ctl ipam show --show-blocks | awk '$2 == "10.247.0.4/30"')"
ctl apply -f - >/dev/null <<'EOF'
apiVersion: projectcalico.org/v3
kind: IPAMConfiguration
metadata: {name: default}
spec: {strictAffinity: true}
EOF
run_cni ADD 10 tiny && bt_fail "StrictAffinity did not refuse"
bt_expect_contains "refused with StrictAffinity" '"code":101' "$(cat "$BT_DIR/out.ADD.10")"
bt_expect_contains "refusal says why" "StrictAffinity" "$(cat "$BT_DIR/out.ADD.10")"
bt_expect_eq "refused pod has no interface" "" \
	"$(ip -n "${BT_PREFIX}p10" -o link show eth0 2>/dev/null || true)"
for i in 0 1 2 4 6 8 10; do run_cni DEL $i tiny || bt_fail "DEL $i: $(cat "$BT_DIR/out.DEL.$i")"; done
bt_expect_contains "tiny pool empty" "10.247.0.0/29   8           0 (0%)" "$(ctl ipam show)"
bt_pass
