#!/usr/bin/env bash
# brindle-cni and brindle-ipam invoked exactly as a runtime invokes them
# (CNI_* environment, network configuration on stdin), with a test namespace
# standing in for the host and others for the pods. Checks ADD (namespace,
# interface, address, routes with protocol 80, sysctls, WorkloadEndpoint),
# CHECK (and that it notices damage), DEL (nothing left), DEL again, that a
# DEL never takes another container's endpoint or address, result formats of
# older spec versions, error documents, and the IPAM plugin on its own.
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

conf() { # conf VERSION [extra top-level JSON members]
	cat <<EOF
{"cniVersion": "$1", "name": "testnet", "type": "brindle-cni", "nodename": "node-a",
 "log_file_path": "$BT_DIR/cni.log", "log_level": "debug", "mtu": 1400,
 "ipam": {"type": "brindle-ipam", "ipam_lock_file": "$BT_DIR/ipam.lock"}${2:+, $2}}
EOF
}

# cni PLUGIN COMMAND CONTAINER NETNS [CNI_ARGS]; config on stdin; output in $out, status in $rc
cni() {
	local plugin=$1 cmd=$2 cid=$3 netns=$4 args=${5:-}
	set +e
	out=$(ip netns exec "$HOST" env CNI_COMMAND="$cmd" CNI_CONTAINERID="$cid" \
		CNI_NETNS="$netns" CNI_IFNAME=eth0 CNI_ARGS="$args" CNI_PATH="$CNI_DIR" \
		"$CNI_DIR/$plugin")
	rc=$?
	set -e
}

new_pod_ns() {
	ip netns add "$1"
	bt_netns+=("$1")
}

veth_of() { echo "cali$(printf '%s' "$1.$2" | sha1sum | cut -c1-11)"; }

etcd_count() { # number of keys under a prefix
	local k
	k=$(printf '%s' "$1" | base64 -w0)
	local end
	end=$(printf '%s' "${1%?}$(printf "\\$(printf '%03o' $(($(printf '%d' "'${1: -1}") + 1)))")" | base64 -w0)
	curl -s --unix-socket "$BT_ETCD_SOCK" -X POST http://localhost/v3/kv/range \
		-d "{\"key\":\"$k\",\"range_end\":\"$end\",\"count_only\":true}" |
		sed -n 's/.*"count":"\([0-9]*\)".*/\1/p' | grep . || echo 0
}

# Containers' handles: not the marker every block claim updates (IPAM_CLAIMS_MARKER).
handle_count() {
	echo $(($(etcd_count /calico/ipam/v2/handle/) - $(etcd_count /calico/ipam/v2/handle/brindle-block-claims)))
}

# --- ADD -----------------------------------------------------------------------------------
P1=${BT_PREFIX}p1
new_pod_ns "$P1"
C1=c1aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
ARGS1="IgnoreUnknown=1;K8S_POD_NAMESPACE=shop;K8S_POD_NAME=web-1;K8S_POD_INFRA_CONTAINER_ID=$C1"
cni brindle-cni ADD "$C1" "/var/run/netns/$P1" "$ARGS1" < <(conf 1.0.0 \
	'"args": {"cni": {"labels": [{"key": "app", "value": "web"}]},
	          "brindle": {"ports": [{"name": "http", "protocol": "TCP", "port": 8080}]}}')
[ "$rc" -eq 0 ] || bt_fail "ADD failed: $out"
ADD1=$out
VETH1=$(veth_of shop web-1)
bt_expect_contains "result names the host veth" "\"name\":\"$VETH1\",\"mac\":\"ee:ee:ee:ee:ee:ee\"" "$out"
bt_expect_contains "result has the pod address" '"address":"10.244.0.0/32"' "$out"
bt_expect_contains "result has the sandbox" "\"sandbox\":\"/var/run/netns/$P1\"" "$out"
bt_expect_contains "1.0.0 result without version" '"ips":[{"address"' "$out"

# Pod side: eth0 with the /32, the gateway on-link, the default route via it.
pod_addr=$(ip -n "$P1" -4 -o addr show dev eth0 | awk '{print $4}')
bt_expect_eq "pod address" "10.244.0.0/32" "$pod_addr"
pod_routes=$(ip -n "$P1" -4 route show)
bt_expect_contains "pod default route" "default via 169.254.1.1 dev eth0 onlink" "$pod_routes"
bt_expect_contains "pod gateway route" "169.254.1.1 dev eth0 scope link" "$pod_routes"
bt_expect_contains "pod MTU" "mtu 1400" "$(ip -n "$P1" link show eth0)"
# Host side: caliX with MAC ee:..., the sysctls, the /32 route with protocol 80.
hl=$(ip -n "$HOST" link show "$VETH1")
bt_expect_contains "host veth MAC" "link/ether ee:ee:ee:ee:ee:ee" "$hl"
bt_expect_contains "host veth up" ",UP" "$hl"
host_route=$(ip -n "$HOST" -4 route show proto 80)
bt_expect_eq "host route" "10.244.0.0 dev $VETH1 scope link " "$host_route"
for s in "ipv4/conf/$VETH1/proxy_arp=1" "ipv4/conf/$VETH1/forwarding=1" \
	"ipv4/conf/$VETH1/route_localnet=1" "ipv4/neigh/$VETH1/proxy_delay=0"; do
	v=$(ip netns exec "$HOST" cat "/proc/sys/net/${s%=*}")
	bt_expect_eq "sysctl $s" "${s#*=}" "$v"
done
# The host routes into the pod and the pod reaches the host's proxy-ARP gateway.
# Proxy ARP answers for 169.254.1.1 only when the host routes it elsewhere: give the
# host an uplink with a default route, as a node has.
ip -n "$HOST" link add up0 type veth peer name up1
ip -n "$HOST" addr add 192.0.2.1/24 dev up0
ip -n "$HOST" link set up0 up
ip -n "$HOST" link set up1 up
ip -n "$HOST" route add default via 192.0.2.254 dev up0
ip netns exec "$P1" ping -c1 -W2 192.0.2.1 >/dev/null || bt_fail "pod cannot reach the host"

# The WorkloadEndpoint.
WEP1=node--a-k8s-web--1-eth0
wep=$("$BRINDLECTL" get workloadendpoint "$WEP1" -n shop -o json)
for want in "\"node\": \"node-a\"" "\"orchestrator\": \"k8s\"" "\"pod\": \"web-1\"" \
	"\"containerID\": \"$C1\"" "\"interfaceName\": \"$VETH1\"" "\"endpoint\": \"eth0\"" \
	"\"10.244.0.0/32\"" "\"kns.shop\"" "\"app\": \"web\"" \
	"\"projectcalico.org/namespace\": \"shop\"" "\"projectcalico.org/orchestrator\": \"k8s\"" \
	"\"name\": \"http\"" "\"port\": 8080"; do
	bt_expect_contains "WorkloadEndpoint has $want" "$want" "$wep"
done
pod_mac=$(ip -n "$P1" -o link show eth0 | sed -n 's/.*link\/ether \([0-9a-f:]*\).*/\1/p')
bt_expect_contains "WorkloadEndpoint MAC is the pod's" "\"mac\": \"$pod_mac\"" "$wep"

# --- CHECK -----------------------------------------------------------------------------------
PREV="\"prevResult\": $ADD1"
cni brindle-cni CHECK "$C1" "/var/run/netns/$P1" "$ARGS1" < <(conf 1.0.0 "$PREV")
[ "$rc" -eq 0 ] && [ -z "$out" ] || bt_fail "CHECK failed: $out"
ip -n "$HOST" route del 10.244.0.0/32 dev "$VETH1"
cni brindle-cni CHECK "$C1" "/var/run/netns/$P1" "$ARGS1" < <(conf 1.0.0 "$PREV")
[ "$rc" -ne 0 ] || bt_fail "CHECK passed without the host route"
bt_expect_contains "CHECK names the missing route" '"code":103' "$out"
bt_expect_contains "CHECK names the missing route" "proto 80" "$out"
ip -n "$HOST" route add 10.244.0.0/32 dev "$VETH1" scope link proto 80
cni brindle-cni CHECK "$C1" "/var/run/netns/$P1" "$ARGS1" < <(conf 0.3.1)
bt_expect_contains "CHECK before 0.4.0 is refused" '"code":1' "$out"

# A retried ADD (same container) keeps the address; the interface is already there.
cni brindle-cni ADD "$C1" "/var/run/netns/$P1" "$ARGS1" < <(conf 1.0.0)
bt_expect_contains "second ADD refused" "already has an interface eth0" "$out"
bt_expect_eq "address kept after a refused ADD" 1 "$(handle_count)"

# --- another sandbox of the same pod; DEL of the old one keeps the new one's things ----------
P2=${BT_PREFIX}p2
new_pod_ns "$P2"
C2=c2bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb
ARGS2="K8S_POD_NAMESPACE=shop;K8S_POD_NAME=web-1"
cni brindle-cni ADD "$C2" "/var/run/netns/$P2" "$ARGS2" < <(conf 1.0.0)
[ "$rc" -eq 0 ] || bt_fail "ADD of the new sandbox failed: $out"
bt_expect_contains "new sandbox gets its own address" '"address":"10.244.0.1/32"' "$out"
# The stale host veth was replaced, taking the old sandbox's eth0 with it.
bt_expect_eq "old sandbox lost its interface" "" "$(ip -n "$P1" -o link show eth0 2>/dev/null || true)"
cni brindle-cni DEL "$C1" "/var/run/netns/$P1" "$ARGS1" < <(conf 1.0.0)
[ "$rc" -eq 0 ] || bt_fail "DEL of the old sandbox failed: $out"
wep=$("$BRINDLECTL" get workloadendpoint "$WEP1" -n shop -o json)
bt_expect_contains "the new sandbox keeps its endpoint" "\"containerID\": \"$C2\"" "$wep"
bt_expect_contains "the new sandbox keeps its veth" "ee:ee:ee:ee:ee:ee" "$(ip -n "$HOST" link show "$VETH1")"
bt_expect_eq "the new sandbox keeps its route" "10.244.0.1 dev $VETH1 scope link " \
	"$(ip -n "$HOST" -4 route show proto 80)"
bt_expect_eq "only the old handle was released" 1 "$(handle_count)"
cni brindle-cni CHECK "$C2" "/var/run/netns/$P2" "$ARGS2" < <(conf 1.0.0)
[ "$rc" -eq 0 ] || bt_fail "CHECK of the new sandbox failed: $out"

# --- DEL, and DEL again ----------------------------------------------------------------------
cni brindle-cni DEL "$C2" "/var/run/netns/$P2" "$ARGS2" < <(conf 1.0.0)
[ "$rc" -eq 0 ] && [ -z "$out" ] || bt_fail "DEL failed: $out"
bt_expect_eq "no pod interface" "" "$(ip -n "$P2" -o link show eth0 2>/dev/null || true)"
bt_expect_eq "no host veth" "" "$(ip -n "$HOST" -o link show | grep cali || true)"
bt_expect_eq "no host route" "" "$(ip -n "$HOST" -4 route show proto 80)"
bt_expect_eq "no endpoint" 0 "$(etcd_count /calico/resources/v3/projectcalico.org/workloadendpoints/)"
bt_expect_eq "no handle" 0 "$(handle_count)"
cni brindle-cni DEL "$C2" "/var/run/netns/$P2" "$ARGS2" < <(conf 1.0.0)
[ "$rc" -eq 0 ] || bt_fail "second DEL failed: $out"
cni brindle-cni DEL "$C2" "" "$ARGS2" < <(conf 1.0.0)
[ "$rc" -eq 0 ] || bt_fail "DEL without a namespace failed: $out"

# --- a plain runtime (no K8S_POD_*), an older result format, a requested address -------------
P3=${BT_PREFIX}p3
new_pod_ns "$P3"
C3=podman0123
cni brindle-cni ADD "$C3" "/var/run/netns/$P3" "" < <(conf 0.3.1 '"args": {"cni": {"ips": ["10.244.0.77"]}}')
[ "$rc" -eq 0 ] || bt_fail "ADD (0.3.1) failed: $out"
bt_expect_contains "0.3.1 result has versioned ips" '"version":"4","address":"10.244.0.77/32"' "$out"
bt_expect_contains "container ID stands in for the pod" "$(veth_of default "$C3")" "$out"
wep=$("$BRINDLECTL" get workloadendpoint "node--a-cni-$C3-eth0" -n default -o json)
bt_expect_contains "plain runtime endpoint" "\"orchestrator\": \"cni\"" "$wep"
P4=${BT_PREFIX}p4
new_pod_ns "$P4"
cni brindle-cni ADD c4 "/var/run/netns/$P4" "" < <(conf 0.2.0 '"args": {"cni": {"ips": ["10.244.0.77"]}}')
bt_expect_contains "a taken address is refused" '"code":101' "$out"
bt_expect_contains "a taken address is refused" "already in use" "$out"
bt_expect_eq "refused ADD leaves no interface" "" "$(ip -n "$P4" -o link show eth0 2>/dev/null || true)"
cni brindle-cni ADD c4 "/var/run/netns/$P4" "" < <(conf 0.2.0)
bt_expect_contains "0.2.0 result, the address free longest first" '"ip4":{"ip":"10.244.0.2/32","gateway":"169.254.1.1"' "$out"
cni brindle-cni DEL c4 "/var/run/netns/$P4" "" < <(conf 0.2.0)
cni brindle-cni DEL "$C3" "/var/run/netns/$P3" "" < <(conf 0.3.1)
[ "$rc" -eq 0 ] || bt_fail "DEL (0.3.1) failed: $out"
bt_expect_eq "nothing left" "0 0" "$(handle_count) $(etcd_count /calico/resources/v3/projectcalico.org/workloadendpoints/)"

# --- errors as CNI error documents ---------------------------------------------------------
cni brindle-cni ADD "" "/var/run/netns/$P3" "" < <(conf 1.0.0)
bt_expect_contains "missing container ID" '"code":4' "$out"
cni brindle-cni ADD c5 "/var/run/netns/$P3" "" <<<'{"cniVersion": "1.0.0", "name": '
bt_expect_contains "bad JSON" '"code":6' "$out"
cni brindle-cni ADD c5 "/var/run/netns/$P3" "" <<<'{"cniVersion": "9.9.9", "name": "x"}'
bt_expect_contains "unknown version" '"code":1' "$out"
cni brindle-cni ADD c5 "/var/run/netns/$P3" "" < <(conf 1.0.0 '"args": {"cni": {"ips": ["10.9.9.9"]}}')
bt_expect_contains "address outside the pools" "in no IP pool" "$out"
cni brindle-cni ADD c6 "/var/run/netns/${BT_PREFIX}nope" "" < <(conf 1.0.0)
bt_expect_contains "missing namespace" '"code":3' "$out"
bt_expect_eq "no handle after failures" 0 "$(handle_count)"
cni brindle-cni VERSION x "" "" <<<'{"cniVersion": "0.4.0"}'
bt_expect_contains "VERSION" '"supportedVersions":["0.1.0","0.2.0","0.3.0","0.3.1","0.4.0","1.0.0"]' "$out"

# --- the IPAM plugin on its own ----------------------------------------------------------------
ipam_conf='{"cniVersion": "1.0.0", "name": "other", "type": "ptp", "nodename": "node-b",
 "log_file_path": "'$BT_DIR'/ipam.log", "ipam": {"type": "brindle-ipam", "ipam_lock_file": ""}}'
cni brindle-ipam ADD ipam1 "" "" <<<"$ipam_conf"
[ "$rc" -eq 0 ] || bt_fail "brindle-ipam ADD failed: $out"
# node-b claims the third block: the requested address above claimed the second for node-a.
bt_expect_contains "IPAM result" '"ips":[{"address":"10.244.0.128/32"}]' "$out"
cni brindle-ipam ADD ipam1 "" "" <<<"$ipam_conf"
bt_expect_contains "IPAM ADD again: same address" '"address":"10.244.0.128/32"' "$out"
cni brindle-ipam CHECK ipam1 "" "" <<<"${ipam_conf%\}}, \"prevResult\": $out}"
[ "$rc" -eq 0 ] || bt_fail "brindle-ipam CHECK failed: $out"
cni brindle-ipam DEL ipam1 "" "" <<<"$ipam_conf"
[ "$rc" -eq 0 ] || bt_fail "brindle-ipam DEL failed: $out"
bt_expect_eq "IPAM DEL released it" 0 "$(handle_count)"
cni brindle-ipam CHECK ipam1 "" "" <<<"$ipam_conf"
bt_expect_contains "IPAM CHECK after DEL" '"code":103' "$out"

# --- what brindle-node startup wrote: the node's name and the pods' MTU -----------------------------
echo node-c >"$BT_DIR/nodename"
echo 1380 >"$BT_DIR/mtu"
PF1=${BT_PREFIX}pf1
new_pod_ns "$PF1"
files_conf='{"cniVersion": "1.0.0", "name": "testnet", "type": "brindle-cni",
 "log_file_path": "'$BT_DIR'/cni.log", "mtu_file": "'$BT_DIR'/mtu", "nodename_file": "'$BT_DIR'/nodename",
 "ipam": {"type": "brindle-ipam", "ipam_lock_file": "'$BT_DIR'/ipam.lock"}}'
cni brindle-cni ADD c4 "/var/run/netns/$PF1" "K8S_POD_NAMESPACE=shop;K8S_POD_NAME=files" <<<"$files_conf"
[ "$rc" -eq 0 ] || bt_fail "ADD with the node's files failed: $out"
bt_expect_contains "the MTU file's MTU" "mtu 1380" "$(ip -n "$PF1" link show eth0)"
bt_expect_contains "the nodename file's node" "node--c-k8s-files-eth0" "$("$BRINDLECTL" get wep -n shop -o name)"
echo 9 >"$BT_DIR/mtu"
PF2=${BT_PREFIX}pf2
new_pod_ns "$PF2"
cni brindle-cni ADD c5 "/var/run/netns/$PF2" "K8S_POD_NAMESPACE=shop;K8S_POD_NAME=files2" <<<"$files_conf"
[ "$rc" -eq 0 ] || bt_fail "ADD with a bad MTU file failed: $out"
bt_expect_contains "a bad MTU file: the kernel's default" "mtu 1500" "$(ip -n "$PF2" link show eth0)"
grep -q '"9" is not an MTU' "$BT_DIR/cni.log" || bt_fail "the bad MTU file is not logged"
for c in c4:PF1 c5:PF2; do
	p=${c#*:}
	cni brindle-cni DEL "${c%%:*}" "/var/run/netns/${!p}" "K8S_POD_NAMESPACE=shop" <<<"$files_conf"
	[ "$rc" -eq 0 ] || bt_fail "DEL ${c%%:*} failed: $out"
done

# --- IPReservation: the plugin never hands out a reserved address ---------------------------------
# A pool of its own: reserve its first ten addresses but one, and one more; the ADD gets the tenth.
PR1=${BT_PREFIX}pr1
new_pod_ns "$PR1"
"$BRINDLECTL" apply -f - >/dev/null <<'EOF'
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: reserved}
spec: {cidr: 10.248.0.0/24, blockSize: 26}
---
apiVersion: projectcalico.org/v3
kind: IPReservation
metadata: {name: gateways}
spec: {reservedCIDRs: [10.248.0.0/29, 10.248.0.8, 10.248.0.10]}
EOF
res_conf='{"cniVersion": "1.0.0", "name": "testnet", "type": "brindle-cni", "nodename": "node-d",
 "log_file_path": "'$BT_DIR'/cni.log",
 "ipam": {"type": "brindle-ipam", "ipam_lock_file": "'$BT_DIR'/ipam.lock", "ipv4_pools": ["reserved"]}}'
cni brindle-cni ADD c6 "/var/run/netns/$PR1" "K8S_POD_NAMESPACE=shop;K8S_POD_NAME=reserved" <<<"$res_conf"
[ "$rc" -eq 0 ] || bt_fail "ADD with a reservation failed: $out"
bt_expect_contains "the first unreserved address" '"address":"10.248.0.9/32"' "$out"
cni brindle-cni DEL c6 "/var/run/netns/$PR1" "K8S_POD_NAMESPACE=shop" <<<"$res_conf"
[ "$rc" -eq 0 ] || bt_fail "DEL c6 failed: $out"

grep -q "ADD $C1" "$BT_DIR/cni.log" || bt_fail "the log file has no ADD line"
bt_pass
