#!/usr/bin/env bash
# What a failed brindle-cni ADD may change (security review, "Trust
# boundaries"): nothing when the request is invalid, and only what it created
# itself when it fails late. Written as the attacks:
#  (a) a second ADD into a running pod's namespace with an invalid pod name,
#      namespace or interface name is refused before IPAM and the dataplane:
#      no datastore write at all, no interface, the pod's routes unchanged;
#  (b) a second ADD into a pod that already has a default route (our own via
#      eth0, the Multus-secondary case, or a foreign one; or just a
#      169.254.1.1 route) is refused before anything is created;
#  (c) an ADD that fails after the dataplane (the WorkloadEndpoint cannot be
#      written: a corrupt record under its key) removes its veth and gives
#      back only the addresses it allocated, not one its handle already held;
#  (d) CNI_NETNS that is a regular file, a directory, a FIFO (which used to
#      block the plugin), another kind of namespace or a missing path is
#      refused with a clear code and allocates nothing.
# "Nothing changed" is checked as: the same etcd revision (no write of any
# kind), and the same links, IPv4 addresses and routes in the host's and the
# pods' namespaces. BT_ATTACKS="b d" runs only some of the attacks.
. "$(dirname "$0")/../lib/common.sh"

CNI_DIR=$BT_BUILD_DIR/cni
HOST=${BT_PREFIX}host
bt_start_etcd
ip netns add "$HOST"
bt_netns+=("$HOST")
ip -n "$HOST" link set lo up

"$BRINDLECTL" apply -f - >/dev/null <<'EOF'
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pods}
spec: {cidr: 10.244.0.0/24, blockSize: 26}
EOF

conf() { # conf NETWORK [extra top-level JSON members]
	cat <<EOF
{"cniVersion": "1.0.0", "name": "$1", "type": "brindle-cni", "nodename": "node-a",
 "log_file_path": "$BT_DIR/cni.log", "log_level": "debug",
 "ipam": {"type": "brindle-ipam", "ipam_lock_file": "$BT_DIR/ipam.lock"}${2:+, $2}}
EOF
}

# cni PLUGIN COMMAND CONTAINER NETNS IFNAME CNI_ARGS; config on stdin; output in $out,
# status in $rc. Bounded: a plugin that blocks is a failure, not a hung test.
cni() {
	local plugin=$1 cmd=$2 cid=$3 netns=$4 ifname=$5 args=$6
	set +e
	out=$(ip netns exec "$HOST" timeout 30 env CNI_COMMAND="$cmd" CNI_CONTAINERID="$cid" \
		CNI_NETNS="$netns" CNI_IFNAME="$ifname" CNI_ARGS="$args" CNI_PATH="$CNI_DIR" \
		"$CNI_DIR/$plugin")
	rc=$?
	set -e
	[ "$rc" -ne 124 ] || bt_fail "$plugin $cmd did not finish within 30 s"
}

new_pod_ns() {
	ip netns add "$1"
	bt_netns+=("$1")
	ip -n "$1" link set lo up
}

etcd_post() { curl -s --max-time 5 --unix-socket "$BT_ETCD_SOCK" -X POST "http://localhost/v3/kv/$1" -d "$2"; }
# The store's revision: any write of any key moves it.
etcd_rev() { etcd_post range '{"key":"AA=="}' | sed -n 's/.*"header":{[^}]*"revision":"\([0-9]*\)".*/\1/p'; }
etcd_get() { # the value of KEY, or nothing
	etcd_post range "{\"key\":\"$(printf '%s' "$1" | base64 -w0)\"}" |
		sed -n 's/.*"value":"\([^"]*\)".*/\1/p' | base64 -d
}
HANDLES=/calico/ipam/v2/handle
WEPS=/calico/resources/v3/projectcalico.org/workloadendpoints

# Everything an ADD could touch: the datastore's revision, and links, addresses and
# routes of the host's namespace and of the namespaces given.
snapshot() {
	echo "etcd revision $(etcd_rev)"
	local ns
	for ns in "$HOST" "$@"; do
		echo "== $ns"
		ip -n "$ns" -o link show | awk -F': ' '{print "link", $1, $2}'
		# IPv4 only: IPv6 link-local addresses come and go on their own.
		ip -4 -n "$ns" -o addr show | awk '{print "addr", $2, $3, $4}'
		ip -4 -n "$ns" route show table all
	done
}

# expect_refused WHAT CODE MESSAGE BEFORE NS...: the last call failed with CODE and
# MESSAGE, and the snapshot of NS... is still BEFORE.
expect_refused() {
	local what=$1 code=$2 msg=$3 before=$4
	shift 4
	[ "$rc" -ne 0 ] || bt_fail "$what: ADD succeeded: $out"
	bt_expect_contains "$what: error code" "\"code\":$code," "$out"
	bt_expect_contains "$what: error message" "$msg" "$out"
	bt_expect_eq "$what: nothing changed" "$before" "$(snapshot "$@")"
}

# --- a running pod ----------------------------------------------------------------------------
P1=${BT_PREFIX}p1
new_pod_ns "$P1"
C1=c1aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
ARGS1="IgnoreUnknown=1;K8S_POD_NAMESPACE=shop;K8S_POD_NAME=web-1;K8S_POD_INFRA_CONTAINER_ID=$C1"
cni brindle-cni ADD "$C1" "/var/run/netns/$P1" eth0 "$ARGS1" < <(conf testnet)
[ "$rc" -eq 0 ] || bt_fail "first ADD failed: $out"
bt_expect_contains "the pod's default route" "default via 169.254.1.1 dev eth0 onlink" \
	"$(ip -n "$P1" -4 route show)"

# --- (a) invalid identities into the running pod: refused before IPAM -------------------------
attack_a() {
	BEFORE=$(snapshot "$P1")
	# (Another network name, as Multus gives a secondary network: a handle of its own.)
	for bad in $'web-1\nx' 'Web 1' 'web_1' "-web" "$(printf 'a%.0s' {1..254})"; do
		cni brindle-cni ADD "$C1" "/var/run/netns/$P1" eth1 \
			"K8S_POD_NAMESPACE=shop;K8S_POD_NAME=$bad" < <(conf othernet)
		expect_refused "(a) K8S_POD_NAME ${bad:0:20}" 4 "K8S_POD_NAME" "$BEFORE" "$P1"
	done
	bt_expect_eq "(a) no handle for the refused ADDs" "" "$(etcd_get "$HANDLES/othernet.$C1")"
	for bad in 'Shop' 'sh.op' $'shop\n'; do
		cni brindle-cni ADD "$C1" "/var/run/netns/$P1" eth1 \
			"K8S_POD_NAMESPACE=$bad;K8S_POD_NAME=web-2" < <(conf othernet)
		expect_refused "(a) K8S_POD_NAMESPACE $bad" 4 "K8S_POD_NAMESPACE" "$BEFORE" "$P1"
	done
	# Interface names the kernel would refuse, or that cannot name an endpoint.
	for bad in '..' '.' 'eth_1' 'Eth1' 'abcdefghijklmnop'; do
		cni brindle-cni ADD "$C1" "/var/run/netns/$P1" "$bad" "$ARGS1" < <(conf othernet)
		expect_refused "(a) CNI_IFNAME $bad" 4 "CNI_IFNAME" "$BEFORE" "$P1"
	done
	# A label or port the WorkloadEndpoint cannot carry: the configuration is invalid.
	cni brindle-cni ADD "$C1" "/var/run/netns/$P1" eth1 "K8S_POD_NAMESPACE=shop;K8S_POD_NAME=web-2" \
		< <(conf othernet '"args": {"brindle": {"ports": [{"name": "HTTP!", "port": 80}]}}')
	expect_refused "(a) bad port name" 7 "ports" "$BEFORE" "$P1"
	cni brindle-cni ADD "$C1" "/var/run/netns/$P1" eth1 "K8S_POD_NAMESPACE=shop;K8S_POD_NAME=web-2" \
		< <(conf othernet '"args": {"cni": {"labels": [{"key": "app", "value": "-x-"}]}}')
	expect_refused "(a) bad label value" 7 "labels" "$BEFORE" "$P1"
}

# --- (b) a pod that already has a network ------------------------------------------------------
attack_b() {
	BEFORE=$(snapshot "$P1")
	# The Multus-secondary case: the same container, pod and arguments, another interface.
	cni brindle-cni ADD "$C1" "/var/run/netns/$P1" eth1 "$ARGS1" < <(conf othernet)
	expect_refused "(b) second network" 104 \
		"the container already has a default route via 169.254.1.1 dev eth0" "$BEFORE" "$P1"
	bt_expect_eq "(b) no handle" "" "$(etcd_get "$HANDLES/othernet.$C1")"
	# Another pod's arguments into the running pod's namespace.
	cni brindle-cni ADD c1other "/var/run/netns/$P1" eth1 "K8S_POD_NAMESPACE=shop;K8S_POD_NAME=web-9" \
		< <(conf testnet)
	expect_refused "(b) another pod into this namespace" 104 "already has a default route" \
		"$BEFORE" "$P1"
	# The same interface again is refused as before, also before IPAM.
	cni brindle-cni ADD "$C1" "/var/run/netns/$P1" eth0 "$ARGS1" < <(conf othernet)
	expect_refused "(b) the same interface" 104 "already has an interface eth0" "$BEFORE" "$P1"
	# Without its routes the pod is still connected by its veth: "replacing the stale host
	# interface" of the same pod name must not take the live one (and eth0 with it).
	ip -n "$P1" route del default
	ip -n "$P1" route del 169.254.1.1
	local bare
	bare=$(snapshot "$P1")
	cni brindle-cni ADD "$C1" "/var/run/netns/$P1" eth1 "$ARGS1" < <(conf othernet)
	expect_refused "(b) the pod's own veth" 104 \
		"the host interface $(bt_cali shop web-1) already connects this container (as eth0)" \
		"$bare" "$P1"
	ip -n "$P1" route add 169.254.1.1 dev eth0 scope link
	ip -n "$P1" route add default via 169.254.1.1 dev eth0 onlink
	bt_expect_eq "(b) the pod is as before" "$BEFORE" "$(snapshot "$P1")"

	# A namespace whose default route (or only a 169.254.1.1 route) is someone else's.
	P2=${BT_PREFIX}p2
	P2PEER=${BT_PREFIX}p2x
	new_pod_ns "$P2"
	new_pod_ns "$P2PEER"
	ip -n "$P2" link add net0 type veth peer name net0 netns "$P2PEER"
	ip -n "$P2" addr add 192.0.2.2/24 dev net0
	ip -n "$P2" link set net0 up
	ip -n "$P2" route add default via 192.0.2.1 dev net0 metric 100
	BEFORE2=$(snapshot "$P2")
	cni brindle-cni ADD c2 "/var/run/netns/$P2" eth0 "K8S_POD_NAMESPACE=shop;K8S_POD_NAME=web-2" \
		< <(conf testnet)
	expect_refused "(b) foreign default route" 104 \
		"already has a default route via 192.0.2.1 dev net0" "$BEFORE2" "$P2"
	ip -n "$P2" route del default
	ip -n "$P2" route add 169.254.1.1 dev net0 scope link
	BEFORE2=$(snapshot "$P2")
	cni brindle-cni ADD c2 "/var/run/netns/$P2" eth0 "K8S_POD_NAMESPACE=shop;K8S_POD_NAME=web-2" \
		< <(conf testnet)
	expect_refused "(b) foreign 169.254.1.1 route" 104 \
		"already has a route to 169.254.1.1 dev net0" "$BEFORE2" "$P2"
	# Without them the same ADD works (the checks are not simply refusing everything).
	ip -n "$P2" route del 169.254.1.1
	cni brindle-cni ADD c2 "/var/run/netns/$P2" eth0 "K8S_POD_NAMESPACE=shop;K8S_POD_NAME=web-2" \
		< <(conf testnet)
	[ "$rc" -eq 0 ] || bt_fail "(b) ADD next to a foreign interface failed: $out"
	bt_expect_contains "(b) the foreign interface stays" "192.0.2.2/24" "$(ip -n "$P2" -o addr show dev net0)"
	cni brindle-cni DEL c2 "/var/run/netns/$P2" eth0 "K8S_POD_NAMESPACE=shop;K8S_POD_NAME=web-2" \
		< <(conf testnet)
	[ "$rc" -eq 0 ] || bt_fail "(b) DEL failed: $out"
	bt_expect_contains "(b) DEL leaves the foreign interface" "192.0.2.2/24" \
		"$(ip -n "$P2" -o addr show dev net0)"
}

# --- (c) a late failure: the WorkloadEndpoint cannot be written --------------------------------
attack_c() {
	# A record under the endpoint's key that does not decode: the ADD finds it only when writing,
	# after IPAM and the dataplane.
	P3=${BT_PREFIX}p3
	new_pod_ns "$P3"
	C3=c3cccccccc
	ARGS3="K8S_POD_NAMESPACE=shop;K8S_POD_NAME=web-3"
	bt_etcd_put "$WEPS/shop/node--a-k8s-web--3-eth0" '{"corrupt": '
	# An earlier ADD of this container got as far as IPAM (then the runtime killed it): its
	# handle holds 10.244.0.50. This ADD asks for that address and one more.
	cni brindle-ipam ADD "$C3" "" eth0 "" < <(conf testnet '"args": {"cni": {"ips": ["10.244.0.50"]}}')
	[ "$rc" -eq 0 ] || bt_fail "(c) IPAM ADD failed: $out"
	HANDLE3_BEFORE=$(etcd_get "$HANDLES/testnet.$C3")
	BEFORE3=$(snapshot "$P1" "$P3")
	cni brindle-cni ADD "$C3" "/var/run/netns/$P3" eth0 "$ARGS3" \
		< <(conf testnet '"args": {"cni": {"ips": ["10.244.0.50", "10.244.0.51"]}}')
	[ "$rc" -ne 0 ] || bt_fail "(c) ADD succeeded over a corrupt endpoint record: $out"
	bt_expect_contains "(c) error code" '"code":100,' "$out"
	bt_expect_contains "(c) error message" "cannot write the WorkloadEndpoint" "$out"
	# Compare without the revision: IPAM did write, and gave back.
	bt_expect_eq "(c) the dataplane is as before" "$(sed 1d <<<"$BEFORE3")" \
		"$(snapshot "$P1" "$P3" | sed 1d)"
	HANDLE3=$(etcd_get "$HANDLES/testnet.$C3")
	bt_expect_contains "(c) the handle still holds the earlier address" '"block":{"10.244.0.0/26":1}' "$HANDLE3"
	bt_expect_eq "(c) the handle is as before the ADD" \
		"$(sed 's/"resourceVersion":"[0-9]*",\?//' <<<"$HANDLE3_BEFORE")" \
		"$(sed 's/"resourceVersion":"[0-9]*",\?//' <<<"$HANDLE3")"
	cni brindle-ipam CHECK "$C3" "" eth0 "" < <(conf testnet \
		'"prevResult": {"cniVersion": "1.0.0", "ips": [{"address": "10.244.0.50/32"}]}')
	[ "$rc" -eq 0 ] || bt_fail "(c) the earlier address was released: $out"
	# 10.244.0.51 is free again: another container can have it.
	cni brindle-ipam ADD c3probe "" eth0 "" < <(conf testnet '"args": {"cni": {"ips": ["10.244.0.51"]}}')
	bt_expect_contains "(c) the new address was given back" '"address":"10.244.0.51/32"' "$out"
	cni brindle-ipam DEL c3probe "" eth0 "" < <(conf testnet)
	# The corrupt record is left for an operator: it is not this ADD's.
	bt_expect_eq "(c) the record is untouched" '{"corrupt": ' "$(etcd_get "$WEPS/shop/node--a-k8s-web--3-eth0")"
	# The same with a fresh handle: everything goes, the handle too.
	cni brindle-cni ADD c3fresh "/var/run/netns/$P3" eth0 "$ARGS3" < <(conf testnet)
	bt_expect_contains "(c) fresh: error code" '"code":100,' "$out"
	bt_expect_eq "(c) fresh: no handle" "" "$(etcd_get "$HANDLES/testnet.c3fresh")"
	bt_expect_eq "(c) fresh: the dataplane is as before" "$(sed 1d <<<"$BEFORE3")" \
		"$(snapshot "$P1" "$P3" | sed 1d)"
	bt_etcd_del "$WEPS/shop/node--a-k8s-web--3-eth0"
	cni brindle-ipam DEL "$C3" "" eth0 "" < <(conf testnet)
}

# --- (d) CNI_NETNS that is not a network namespace ---------------------------------------------
attack_d() {
	ARGS4="K8S_POD_NAMESPACE=shop;K8S_POD_NAME=web-4"
	: >"$BT_DIR/regular-file"
	mkfifo "$BT_DIR/fifo"
	BEFORE=$(snapshot "$P1")
	for bad in "$BT_DIR/regular-file" "$BT_DIR" "$BT_DIR/fifo" /proc/self/ns/uts /dev/null; do
		cni brindle-cni ADD c4 "$bad" eth0 "$ARGS4" < <(conf testnet)
		expect_refused "(d) CNI_NETNS $bad" 4 "is not a network namespace" "$BEFORE" "$P1"
	done
	cni brindle-cni ADD c4 "$BT_DIR/nothing-here" eth0 "$ARGS4" < <(conf testnet)
	expect_refused "(d) CNI_NETNS missing" 3 "does not exist" "$BEFORE" "$P1"
	bt_expect_eq "(d) no handle" "" "$(etcd_get "$HANDLES/testnet.c4")"
	# DEL does not open them either (a FIFO used to block it): nothing of ours is there.
	for bad in "$BT_DIR/fifo" "$BT_DIR/regular-file"; do
		cni brindle-cni DEL c4 "$bad" eth0 "$ARGS4" < <(conf testnet)
		[ "$rc" -eq 0 ] || bt_fail "(d) DEL with CNI_NETNS $bad failed: $out"
	done
}

for attack in ${BT_ATTACKS:-a b c d}; do
	"attack_$attack"
done

# The running pod is whole: CHECK agrees.
cni brindle-cni CHECK "$C1" "/var/run/netns/$P1" eth0 "$ARGS1" < <(conf testnet)
[ "$rc" -eq 0 ] || bt_fail "CHECK of the running pod failed: $out"
bt_pass
