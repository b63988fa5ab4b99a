#!/usr/bin/env bash
# brindlectl apply on etcd is all or nothing: the objects of one apply land in
# one transaction (in transactions of 100 when there are more). Shown with an
# etcd that refuses the transaction (--max-txn-ops 3: five objects are more
# operations than it takes): none of the five is written, and the error says
# so; one object alone is written. Then, on an etcd with its defaults, 250
# objects (three transactions) are created, and applied again unchanged.
. "$(dirname "$0")/../lib/common.sh"

ctl() { "$BRINDLECTL" "$@"; }
dir=$BT_DIR/etcd
mkdir -p "$dir"
bt_run_bg etcd env -C "$dir" etcd --name bt --data-dir "$dir/data" --max-txn-ops 3 \
	--listen-client-urls unix://etcd.sock:0 --advertise-client-urls unix://etcd.sock:0 \
	--listen-peer-urls unix://peer.sock:0 --initial-advertise-peer-urls unix://peer.sock:0 \
	--initial-cluster bt=unix://peer.sock:0 --log-level error --logger zap --log-outputs stderr
export BRINDLE_DATASTORE_TYPE=etcdv3 BRINDLE_ETCD_ENDPOINTS="unix:$dir/etcd.sock:0"
bt_wait_for 20 "etcd to serve" curl -sf --unix-socket "$dir/etcd.sock:0" \
	-X POST http://localhost/v3/kv/range -d '{"key":"AA=="}'

sets() { # sets FIRST LAST: GlobalNetworkSets set-FIRST..set-LAST
	local i
	for i in $(seq "$1" "$2"); do
		printf -- '---\napiVersion: projectcalico.org/v3\nkind: GlobalNetworkSet\n'
		printf 'metadata: {name: set-%d}\nspec: {nets: [10.%d.%d.0/24]}\n' "$i" $((i / 250)) $((i % 250))
	done
}
sets 1 5 >"$BT_DIR/five.yaml"
if err=$(ctl apply -f "$BT_DIR/five.yaml" 2>&1); then
	bt_fail "etcd took a transaction over its --max-txn-ops: $err"
fi
bt_expect_contains "the datastore's refusal said" "too many operations in txn request" "$err"
bt_expect_contains "nothing was written, said" "nothing was written" "$err"
bt_expect_eq "none of the five stored" "" "$(ctl get globalnetworksets -o name 2>/dev/null)"
out=$(sets 1 1 | ctl apply -f -)
bt_expect_eq "one object alone" "globalnetworkset.projectcalico.org/set-1 created" "$out"

# Defaults: 250 objects in three transactions.
kill "${bt_pids[-1]}"
wait "${bt_pids[-1]}" 2>/dev/null || true
rm -rf "$dir"
bt_start_etcd
sets 1 250 >"$BT_DIR/many.yaml"
out=$(ctl apply -f "$BT_DIR/many.yaml")
bt_expect_eq "250 created" 250 "$(grep -c ' created$' <<<"$out")"
bt_expect_eq "250 stored" 250 "$(ctl get globalnetworksets -o name | wc -l)"
out=$(ctl apply -f "$BT_DIR/many.yaml")
bt_expect_eq "250 unchanged" 250 "$(grep -c ' unchanged$' <<<"$out")"
bt_pass
