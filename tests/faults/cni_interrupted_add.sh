#!/usr/bin/env bash
# An ADD interrupted after the dataplane and before its WorkloadEndpoint (the
# runtime killed it, the node rebooted): the pod's veth, its routes and its
# address in the IPAM handle are left, with no endpoint. The state is made by
# a whole ADD whose endpoint is then removed. The next ADD for the same
# container takes them back: it succeeds, the old veth goes, the address is
# the handle's (no second one), and exactly one veth and one endpoint remain.
# An ADD for a container whose ADD completed is still refused (104). DEL then
# leaves nothing.
. "$(dirname "$0")/../lib/common.sh"

CNI_DIR=$BT_BUILD_DIR/cni
HOST=$BT_PREFIX-host
POD=$BT_PREFIX-pod
bt_start_etcd
bt_netns host
bt_netns pod
"$BRINDLECTL" apply -f - >/dev/null <<'EOF'
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pods}
spec: {cidr: 10.244.0.0/24, blockSize: 26}
EOF
conf() {
	cat <<EOF
{"cniVersion": "1.0.0", "name": "testnet", "type": "brindle-cni", "nodename": "node-a",
 "log_file_path": "$BT_DIR/cni.log", "log_level": "info",
 "ipam": {"type": "brindle-ipam", "ipam_lock_file": "$BT_DIR/ipam.lock"}}
EOF
}
cni() { # COMMAND: the plugin as the runtime runs it; output in $out, status in $rc
	set +e
	out=$(conf | ip netns exec "$HOST" env CNI_COMMAND="$1" CNI_CONTAINERID=c1aaaaaaaa \
		CNI_NETNS="/var/run/netns/$POD" CNI_IFNAME=eth0 \
		CNI_ARGS="K8S_POD_NAMESPACE=shop;K8S_POD_NAME=web-1" CNI_PATH="$CNI_DIR" \
		"$CNI_DIR/brindle-cni")
	rc=$?
	set -e
}
address() { sed -n 's/.*"address":"\([0-9.]*\)\/32".*/\1/p' <<<"$out"; }
in_use() { "$BRINDLECTL" ipam show | awk '$1 == "IP" && $2 == "Pool" {print $5}'; }
HOST_IF=$(bt_cali shop web-1)

cni ADD
[ "$rc" -eq 0 ] || bt_fail "the first ADD failed: $out"
first=$(address)
[ -n "$first" ] || bt_fail "no address in the first ADD's result: $out"
# The interruption: everything but the endpoint.
"$BRINDLECTL" delete workloadendpoint -n shop node--a-k8s-web--1-eth0 >/dev/null
old_index=$(ip -n "$POD" -o link show eth0 | cut -d: -f1)

cni ADD
[ "$rc" -eq 0 ] || bt_fail "the ADD after an interrupted one failed: $out"
bt_expect_eq "the same address (the handle's)" "$first" "$(address)"
bt_expect_contains "the leftovers were logged" "left by an interrupted ADD of this pod" \
	"$(cat "$BT_DIR/cni.log")"
new_index=$(ip -n "$POD" -o link show eth0 | cut -d: -f1)
[ "$new_index" != "$old_index" ] || bt_fail "the old eth0 was kept"
bt_expect_eq "one interface besides lo in the pod" 1 "$(ip -n "$POD" -o link show | grep -vc ': lo:')"
bt_expect_eq "one host interface of the pod" 1 "$(ip -n "$HOST" -o link show | grep -c "$HOST_IF")"
bt_expect_eq "one route to the pod" 1 "$(ip -n "$HOST" route show "$first" | grep -c "$HOST_IF")"
bt_expect_contains "the endpoint is back" "node--a-k8s-web--1-eth0" \
	"$("$BRINDLECTL" get workloadendpoints -n shop -o name 2>&1)"
bt_log "ipam show after the retried ADD: $("$BRINDLECTL" ipam show | tr '\n' '|')"
bt_expect_eq "one address in use" 1 "$(in_use)"
# A completed ADD is not taken for an interrupted one.
cni ADD
[ "$rc" -ne 0 ] || bt_fail "a second ADD over a completed one succeeded: $out"
bt_expect_contains "refused as a conflict" '"code":104' "$out"
bt_expect_eq "the pod's eth0 untouched" "$new_index" "$(ip -n "$POD" -o link show eth0 | cut -d: -f1)"

cni DEL
[ "$rc" -eq 0 ] || bt_fail "DEL failed: $out"
bt_expect_eq "no interface left in the pod" 0 "$(ip -n "$POD" -o link show | grep -vc ': lo:')"
bt_expect_eq "no host interface left" 0 "$(ip -n "$HOST" -o link show | grep -c "$HOST_IF" || true)"
bt_expect_eq "no address in use" 0 "$(in_use)"
bt_pass
