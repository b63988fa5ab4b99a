#!/usr/bin/env bash
# brindle-ipam under Debian's ptp and bridge (containernetworking-plugins), as
# a runtime runs them (CNI_PATH holding both): what docs/cni.md says about
# them stays true. brindle-ipam answers a /32 without a gateway, Brindle's
# routed model; ptp needs a subnet route to replace and a gateway, so its ADD
# fails (and its cleanup releases the address), bridge connects the pod
# without a route. Neither leaves an address assigned after DEL.
. "$(dirname "$0")/../lib/common.sh"

CNI_DIR=$BT_BUILD_DIR/cni
PLUGINS=/usr/lib/cni
[ -x "$PLUGINS/ptp" ] || bt_fail "no $PLUGINS/ptp: install containernetworking-plugins (scripts/deps)"
HOST=${BT_PREFIX}host
POD=${BT_PREFIX}pod
bt_start_etcd
for ns in "$HOST" "$POD"; do
	ip netns add "$ns"
	bt_netns+=("$ns")
	ip -n "$ns" link set lo up
done

"$BRINDLECTL" apply -f - >/dev/null <<'EOF'
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pods}
spec: {cidr: 10.244.0.0/24, blockSize: 26}
EOF

conf() { # conf TYPE [extra members]
	echo '{"cniVersion": "1.0.0", "name": "other", "type": "'"$1"'", "nodename": "node-a",
 "log_file_path": "'"$BT_DIR"'/ipam.log", "ipam": {"type": "brindle-ipam", "ipam_lock_file": ""}'"${2:+, $2}"'}'
}
cni() { # cni PLUGIN COMMAND [extra members]; output in $out, status in $rc
	set +e
	out=$(ip netns exec "$HOST" env CNI_COMMAND="$2" CNI_CONTAINERID="$1-1" \
		CNI_NETNS="/var/run/netns/$POD" CNI_IFNAME=eth0 CNI_PATH="$CNI_DIR:$PLUGINS" \
		"$PLUGINS/$1" <<<"$(conf "$1" "${3:-}")")
	rc=$?
	set -e
}
handle() { # handle NAME: the IPAM handle's key in etcd, if it exists
	curl -s --unix-socket "$BT_ETCD_SOCK" -X POST http://localhost/v3/kv/range \
		-d "{\"key\":\"$(printf '/calico/ipam/v2/handle/%s' "$1" | base64 -w0)\",\"keys_only\":true}" |
		grep -o '"count":"[0-9]*"' || true
}

# --- ptp: fails on the /32, releases the address ---------------------------------------------------
cni ptp ADD
bt_expect_eq "ptp ADD with brindle-ipam fails" 1 "$rc"
bt_expect_contains "on the /32's missing subnet route" "failed to delete route" "$out"
bt_expect_eq "ptp's cleanup released the address" "" "$(handle other.ptp-1)"
cni ptp DEL
[ "$rc" -eq 0 ] || bt_fail "ptp DEL failed: $out"

# --- bridge: the pod gets its address and no route ----------------------------------------------------
cni bridge ADD '"bridge": "'"${BT_PREFIX}"'br", "isGateway": true'
[ "$rc" -eq 0 ] || bt_fail "bridge ADD with brindle-ipam failed: $out"
addr=$(printf '%s' "$out" | tr -d ' \n' | sed -n 's/.*"address":"\([0-9./]*\)".*/\1/p')
case "$addr" in 10.244.0.*/32) ;; *) bt_fail "bridge: not a /32 of the pool: $out" ;; esac
bt_expect_eq "bridge: the pod's address" "$addr" \
	"$(ip -n "$POD" -4 -o addr show dev eth0 | awk '{print $4}')"
bt_expect_eq "bridge: the pod has no route" "" "$(ip -n "$POD" -4 route show)"
bt_expect_eq "brindle-ipam holds the address" '"count":"1"' "$(handle other.bridge-1)"
cni bridge DEL '"bridge": "'"${BT_PREFIX}"'br", "isGateway": true'
[ "$rc" -eq 0 ] || bt_fail "bridge DEL failed: $out"
bt_expect_eq "bridge DEL released the address" "" "$(handle other.bridge-1)"
bt_pass
