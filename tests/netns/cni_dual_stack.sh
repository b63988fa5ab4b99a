#!/usr/bin/env bash
# brindle-cni with IPv6: a dual-stack ADD (ipam.assign_ipv6, Calico's string spelling), an
# IPv6-only one, and the rule that a pod gets both families or neither. Checks the /128 in the
# pod without duplicate detection, its default route via the host veth's link-local
# fe80::ecee:eeff:feee:eeee, the host's /128 route with protocol 80, the result and the
# WorkloadEndpoint, pods reaching each other over both families through the host, CHECK, and
# DEL leaving nothing. A test namespace stands in for the host.
. "$(dirname "$0")/../lib/common.sh"

CNI_DIR=$BT_BUILD_DIR/cni
HOST=${BT_PREFIX}host
bt_start_etcd
ip netns add "$HOST"
bt_netns+=("$HOST")
ip -n "$HOST" link set lo up
# What felix and the node's set-up do on a real node: forward both families.
ip netns exec "$HOST" sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1
# IPv4's gateway is proxy ARP, which answers for 169.254.1.1 only when the host routes it
# elsewhere: an uplink with a default route, as a node has. (IPv6's gateway is the host
# veth's own link-local address: it needs none.)
ip -n "$HOST" link add up0 type veth peer name up1
ip -n "$HOST" addr add 192.0.2.1/24 dev up0
ip -n "$HOST" link set up0 up
ip -n "$HOST" link set up1 up
ip -n "$HOST" route add default via 192.0.2.254 dev up0

"$BRINDLECTL" apply -f - >/dev/null <<'EOF'
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pods4}
spec: {cidr: 10.244.0.0/24, blockSize: 26}
---
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pods6}
spec: {cidr: 'fd00:10::/120'}
EOF

conf() { # conf IPAM-MEMBERS
	cat <<EOF
{"cniVersion": "1.0.0", "name": "testnet", "type": "brindle-cni", "nodename": "node-a",
 "log_file_path": "$BT_DIR/cni.log", "log_level": "debug",
 "ipam": {"type": "brindle-ipam", "ipam_lock_file": "$BT_DIR/ipam.lock", $1}}
EOF
}
DUAL='"assign_ipv4": "true", "assign_ipv6": "true"'

cni() { # cni COMMAND CONTAINER NETNS POD; config on stdin; output in $out, status in $rc
	set +e
	out=$(ip netns exec "$HOST" env CNI_COMMAND="$1" CNI_CONTAINERID="$2" \
		CNI_NETNS="/var/run/netns/$3" CNI_IFNAME=eth0 CNI_PATH="$CNI_DIR" \
		CNI_ARGS="K8S_POD_NAMESPACE=shop;K8S_POD_NAME=$4" "$CNI_DIR/brindle-cni")
	rc=$?
	set -e
}
new_pod_ns() {
	ip netns add "$1"
	bt_netns+=("$1")
}
veth_of() { echo "cali$(printf '%s' "shop.$1" | sha1sum | cut -c1-11)"; }
handles() { "$BRINDLECTL" get ipamhandles 2>/dev/null | grep -c 'testnet\.' || true; }

# --- refused unless accepted: the plugin cannot tell whether the node's felix polices IPv6 ----------
new_pod_ns "${BT_PREFIX}p0"
cni ADD c0 "${BT_PREFIX}p0" web-0 < <(conf "$DUAL")
[ "$rc" -ne 0 ] || bt_fail "an IPv6 ADD without BRINDLE_IPV6_WITHOUT_POLICY=1 succeeded: $out"
bt_expect_contains "the refusal says why" "IPv6 pods need felix's ipv6Support" "$out"
bt_expect_contains "with CNI's code for an unsupported field" '"code":2,' "$out"
bt_expect_eq "nothing assigned by the refused ADD" 0 "$(handles)"
export BRINDLE_IPV6_WITHOUT_POLICY=1

# --- dual stack ----------------------------------------------------------------------------------
for i in 1 2; do
	new_pod_ns "${BT_PREFIX}p$i"
	cni ADD "c$i" "${BT_PREFIX}p$i" "web-$i" < <(conf "$DUAL")
	[ "$rc" -eq 0 ] || bt_fail "dual-stack ADD $i failed: $out"
	eval "ADD$i=\$out"
done
P1=${BT_PREFIX}p1 P2=${BT_PREFIX}p2 V1=$(veth_of web-1) V2=$(veth_of web-2)
bt_expect_contains "result: the IPv4 address" '{"address":"10.244.0.0/32","gateway":"169.254.1.1","interface":1}' "$ADD1"
bt_expect_contains "result: the IPv6 address and its gateway" \
	'{"address":"fd00:10::/128","gateway":"fe80::ecee:eeff:feee:eeee","interface":1}' "$ADD1"
bt_expect_contains "result: a default route per family" \
	'"routes":[{"dst":"0.0.0.0/0","gw":"169.254.1.1"},{"dst":"::/0","gw":"fe80::ecee:eeff:feee:eeee"}]' "$ADD1"
bt_expect_contains "the second pod's IPv6 address" '"address":"fd00:10::1/128"' "$ADD2"

# Pod side: the /128, usable at once (no duplicate detection), the default route via the gateway.
a6=$(ip -n "$P1" -6 -o addr show dev eth0 scope global)
bt_expect_contains "pod IPv6 address" "inet6 fd00:10::/128" "$a6"
case $a6 in *tentative*) bt_fail "the pod's IPv6 address waits for duplicate detection: $a6" ;; esac
bt_expect_contains "pod IPv6 default route" "default via fe80::ecee:eeff:feee:eeee dev eth0" \
	"$(ip -n "$P1" -6 route show)"
bt_expect_contains "pod IPv4 default route" "default via 169.254.1.1 dev eth0 onlink" \
	"$(ip -n "$P1" -4 route show)"
# Host side: the gateway address on the veth, the /128 route with protocol 80.
bt_expect_contains "host veth link-local" "inet6 fe80::ecee:eeff:feee:eeee/64 scope link" \
	"$(ip -n "$HOST" -6 addr show dev "$V1")"
bt_expect_contains "host IPv6 route" "fd00:10:: dev $V1 proto 80" "$(ip -n "$HOST" -6 route show)"
bt_expect_contains "host IPv4 route" "10.244.0.0 dev $V1 proto 80" "$(ip -n "$HOST" -4 route show)"
bt_expect_eq "host veth IPv6 forwarding and proxy_ndp" "1 1" \
	"$(ip netns exec "$HOST" sysctl -n "net.ipv6.conf.$V1.forwarding" "net.ipv6.conf.$V1.proxy_ndp" | xargs)"
wep=$("$BRINDLECTL" get workloadendpoint -n shop -o yaml)
bt_expect_contains "endpoint lists the IPv6 network" "fd00:10::/128" "$wep"
bt_expect_contains "endpoint lists the IPv4 network" "10.244.0.0/32" "$wep"

# Pod to pod through the host, each family.
bt_wait_for 10 "pod 1 reaches pod 2 over IPv6" ip netns exec "$P1" ping -6 -c1 -W1 fd00:10::1
bt_wait_for 10 "pod 2 reaches pod 1 over IPv4" ip netns exec "$P2" ping -4 -c1 -W1 10.244.0.0

# CHECK with the ADD's result as prevResult, as the runtime sends it.
cni CHECK c1 "$P1" web-1 < <(conf "$DUAL" | jq -c --argjson prev "$ADD1" '. + {prevResult: $prev}')
[ "$rc" -eq 0 ] || bt_fail "CHECK of the dual-stack pod failed: $out"
ip -n "$P1" -6 route del default
cni CHECK c1 "$P1" web-1 < <(conf "$DUAL" | jq -c --argjson prev "$ADD1" '. + {prevResult: $prev}')
[ "$rc" -ne 0 ] || bt_fail "CHECK missed the pod's lost IPv6 default route"
bt_expect_contains "CHECK names the IPv6 route" "IPv6 default route is not via" "$out"

# --- IPv6 only -----------------------------------------------------------------------------------
new_pod_ns "${BT_PREFIX}p3"
cni ADD c3 "${BT_PREFIX}p3" web-3 < <(conf '"assign_ipv4": false, "assign_ipv6": true')
[ "$rc" -eq 0 ] || bt_fail "IPv6-only ADD failed: $out"
bt_expect_contains "IPv6-only result" '"ips":[{"address":"fd00:10::2/128"' "$out"
case $out in *0.0.0.0/0* | *10.244.*) bt_fail "an IPv6-only pod got IPv4: $out" ;; esac
bt_expect_eq "no IPv4 address in the IPv6-only pod" "" "$(ip -n "${BT_PREFIX}p3" -4 -o addr show dev eth0)"
bt_expect_eq "no IPv4 route in the IPv6-only pod" "" "$(ip -n "${BT_PREFIX}p3" -4 route show)"
bt_wait_for 10 "the IPv6-only pod reaches pod 2" ip netns exec "${BT_PREFIX}p3" ping -6 -c1 -W1 fd00:10::1

# --- both or neither -----------------------------------------------------------------------------
n=$(handles)
new_pod_ns "${BT_PREFIX}p4"
cni ADD c4 "${BT_PREFIX}p4" web-4 < <(conf "$DUAL"', "ipv6_pools": ["no-such-pool"]')
[ "$rc" -ne 0 ] || bt_fail "an ADD whose IPv6 pool does not exist succeeded: $out"
bt_expect_contains "the failed family named" "IPAM could not assign an IPv6 address" "$out"
bt_expect_eq "the IPv4 address given back with the handle" "$n" "$(handles)"
bt_expect_eq "no interface in the failed pod" "1" "$(ip -n "${BT_PREFIX}p4" -o link | wc -l)"

# --- DEL -----------------------------------------------------------------------------------------
cni DEL c1 "$P1" web-1 < <(conf "$DUAL")
[ "$rc" -eq 0 ] || bt_fail "DEL failed: $out"
bt_expect_eq "no host route left" "" "$(ip -n "$HOST" -6 route show | grep -F "dev $V1" || true)"
bt_expect_eq "the handle released" "$((n - 1))" "$(handles)"
# --- the plugin's environment not set, but the configuration says felix polices IPv6 ------------
# (as install-cni writes it where the ConfigMap felix reads has FELIX_IPV6SUPPORT)
unset BRINDLE_IPV6_WITHOUT_POLICY
before=$(handles)
policed() { conf "$DUAL" | sed 's|"nodename": "node-a",|& "felix_ipv6_support": true,|'; }
cni ADD c0 "${BT_PREFIX}p0" web-0 < <(policed)
[ "$rc" -eq 0 ] || bt_fail "an IPv6 ADD with felix_ipv6_support in the configuration failed: $out"
bt_expect_contains "and gave an IPv6 address" '"address":"fd00:10::' "$out"
cni DEL c0 "${BT_PREFIX}p0" web-0 < <(policed)
[ "$rc" -eq 0 ] || bt_fail "DEL: $out"
bt_expect_eq "given back" "$before" "$(handles)"

bt_pass
