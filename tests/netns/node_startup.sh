#!/usr/bin/env bash
# brindle-node startup on etcd, in a namespace shaped like a node: docker0,
# a veth and a cali device before two NICs, a third NIC down. The address
# each IP_AUTODETECTION_METHOD finds; the stored address kept while IP is
# unset; the Node created, then updated without losing what a user set; the
# default pool from CALICO_IPV4POOL_*, and from CALICO_IPV6POOL_* on a node
# with IPv6; a duplicate address refused; a VXLAN tunnel address of each
# family allocated while a pool of that family needs it and released when
# none does, with the pod MTU following; bad settings refused naming the setting,
# changing nothing.
. "$(dirname "$0")/../lib/common.sh"

NODEBIN=$BT_BUILD_DIR/node/brindle-node
bt_start_etcd
bt_netns n
bt_netns far
NS=$BT_PREFIX-n
in_ns() { ip netns exec "$NS" "$@"; }
# the host's devices, made in its namespace: veths whose other ends are elsewhere
i=0
for dev in docker0:172.17.0.1/16 ens3:10.0.0.11/24 ens4:192.168.1.11/24 eth9:192.168.50.2/24; do
	in_ns ip link add "${dev%%:*}" type veth peer name "p$((i++))" netns "$BT_PREFIX-far"
	in_ns ip addr add "${dev#*:}" dev "${dev%%:*}"
done
in_ns ip link add veth0 type veth peer name cali12345
in_ns ip addr add 169.254.1.1/32 dev veth0
for dev in docker0 veth0 cali12345 ens3 ens4; do in_ns ip link set "$dev" up; done
in_ns ip link set ens4 mtu 1480 # the smallest host NIC sets the pod MTU; eth9 stays down
for dev in docker0:fd00:17::1/64 ens3:fd00:3::11/64 ens4:fd00:4::11/64; do
	in_ns ip addr add "${dev#*:}" dev "${dev%%:*}" nodad
done

# startup NODE [VAR=VALUE...]: one run in the namespace; its log in $BT_DIR/startup.log
startup() {
	local node=$1
	shift
	in_ns env -i PATH="$PATH" BRINDLE_ETCD_ENDPOINTS="$BRINDLE_ETCD_ENDPOINTS" NODENAME="$node" \
		BRINDLE_NODENAME_FILE="$BT_DIR/nodename.$node" BRINDLE_MTU_FILE="$BT_DIR/mtu.$node" \
		CALICO_IPV4POOL_CIDR=10.244.0.0/16 "$@" "$NODEBIN" startup >"$BT_DIR/startup.log" 2>&1
}
field() { # NODE JSONPATH-ish jq filter
	"$BRINDLECTL" get node "$1" -o json | jq -r "$2 // \"\""
}
addr() { field "$1" .spec.bgp.ipv4Address; }
addr6() { field "$1" .spec.bgp.ipv6Address; }

# --- first start: first-found, the Node, the default pool, the files ----------------------------
startup n1 || bt_fail "startup failed: $(cat "$BT_DIR/startup.log")"
bt_expect_eq "first-found skips docker0, the veth, cali and takes ens3" "10.0.0.11/24" "$(addr n1)"
pool=$("$BRINDLECTL" get ippool default-ipv4-ippool -o json)
bt_expect_eq "the default pool's CIDR" "10.244.0.0/16" "$(jq -r .spec.cidr <<<"$pool")"
bt_expect_eq "its block size" "26" "$(jq -r .spec.blockSize <<<"$pool")"
bt_expect_eq "its NAT" "true" "$(jq -r .spec.natOutgoing <<<"$pool")"
bt_expect_eq "the pod MTU: the smallest host NIC, no encapsulation" "1480" "$(cat "$BT_DIR/mtu.n1")"
bt_expect_eq "the nodename file" "n1" "$(cat "$BT_DIR/nodename.n1")"
# a host without the files' directory yet (no DaemonSet volume made it): made
startup n1 BRINDLE_MTU_FILE="$BT_DIR/new/var-lib-brindle/mtu" || bt_fail "startup without the directory: $(cat "$BT_DIR/startup.log")"
bt_expect_eq "the MTU file in a directory startup made" "1480" "$(cat "$BT_DIR/new/var-lib-brindle/mtu")"

# --- IP unset keeps what is stored; IP=autodetect looks again -------------------------------------
startup n1 IP_AUTODETECTION_METHOD=interface=ens4 || bt_fail "startup: $(cat "$BT_DIR/startup.log")"
bt_expect_eq "IP unset: the stored address stays" "10.0.0.11/24" "$(addr n1)"
for case in "interface=ens4|192.168.1.11/24" "skip-interface=ens3|192.168.1.11/24" \
	"cidr=192.168.0.0/16|192.168.1.11/24" "can-reach=10.0.0.1|10.0.0.11/24" \
	"interface=eth9|192.168.50.2/24"; do
	startup n1 IP=autodetect IP_AUTODETECTION_METHOD="${case%%|*}" ||
		bt_fail "${case%%|*}: $(cat "$BT_DIR/startup.log")"
	bt_expect_eq "IP_AUTODETECTION_METHOD=${case%%|*}" "${case#*|}" "$(addr n1)"
done
startup n1 IP=10.0.0.11 || bt_fail "IP=10.0.0.11: $(cat "$BT_DIR/startup.log")"
bt_expect_eq "IP without a length takes its interface's" "10.0.0.11/24" "$(addr n1)"

# --- IPv6: none unless asked (IP6), then as IPv4 -------------------------------------------------
bt_expect_eq "IP6 unset, nothing stored: no IPv6 address" "" "$(addr6 n1)"
startup n1 IP6=autodetect || bt_fail "IP6=autodetect: $(cat "$BT_DIR/startup.log")"
bt_expect_eq "IPv6 first-found skips docker0 and takes ens3's" "fd00:3::11/64" "$(addr6 n1)"
bt_expect_eq "the IPv4 address stays" "10.0.0.11/24" "$(addr n1)"
startup n1 IP6_AUTODETECTION_METHOD=interface=ens4 || bt_fail "$(cat "$BT_DIR/startup.log")"
bt_expect_eq "IP6 unset: the stored IPv6 address stays" "fd00:3::11/64" "$(addr6 n1)"
for case in "interface=ens4|fd00:4::11/64" "cidr=fd00:4::/32|fd00:4::11/64" \
	"can-reach=fd00:3::1|fd00:3::11/64" "skip-interface=ens3|fd00:4::11/64"; do
	startup n1 IP6=autodetect IP6_AUTODETECTION_METHOD="${case%%|*}" ||
		bt_fail "IPv6 ${case%%|*}: $(cat "$BT_DIR/startup.log")"
	bt_expect_eq "IP6_AUTODETECTION_METHOD=${case%%|*}" "${case#*|}" "$(addr6 n1)"
done
startup n1 IP6=fd00:3::11 || bt_fail "IP6=fd00:3::11: $(cat "$BT_DIR/startup.log")"
bt_expect_eq "IP6 without a length takes its interface's" "fd00:3::11/64" "$(addr6 n1)"
if startup n2 IP=none IP6=fd00:3::11/64; then bt_fail "a second node took n1's IPv6 address"; fi
bt_expect_contains "the IPv6 refusal names the owner" "fd00:3::11/64 is already Node n1's" \
	"$(cat "$BT_DIR/startup.log")"
if startup n1 IP6=10.0.0.11; then bt_fail "an IPv4 address was taken as IP6"; fi
bt_expect_contains "the bad IP6 is named" "IP6=10.0.0.11: not an IPv6 address" "$(cat "$BT_DIR/startup.log")"
bt_expect_eq "and the IPv6 address is as it was" "fd00:3::11/64" "$(addr6 n1)"

# --- a node with IPv6 gets the default IPv6 pool; its VXLAN tunnel address follows the pool -------------
pool6=$("$BRINDLECTL" get ippool default-ipv6-ippool -o json)
cidr6=$(jq -r .spec.cidr <<<"$pool6")
[[ $cidr6 =~ ^fd[0-9a-f]{2}:[0-9a-f]{1,4}:[0-9a-f]{1,4}::/48$ ]] ||
	bt_fail "CALICO_IPV6POOL_CIDR unset: not a random unique local /48: $cidr6"
bt_expect_eq "the IPv6 pool's block size" "122" "$(jq -r .spec.blockSize <<<"$pool6")"
bt_expect_eq "no NAT for IPv6 unless asked" "false" "$(jq -r ".spec.natOutgoing // false" <<<"$pool6")"
bt_expect_eq "no IPv6 tunnel address: the pool is not encapsulated" "" "$(field n1 .spec.ipv6VXLANTunnelAddr)"
"$BRINDLECTL" delete ippool default-ipv6-ippool >/dev/null
startup n1 CALICO_IPV6POOL_CIDR=fd00:10:244::/48 CALICO_IPV6POOL_VXLAN=always ||
	bt_fail "CALICO_IPV6POOL_*: $(cat "$BT_DIR/startup.log")"
pool6=$("$BRINDLECTL" get ippool default-ipv6-ippool -o json)
bt_expect_eq "CALICO_IPV6POOL_CIDR" "fd00:10:244::/48" "$(jq -r .spec.cidr <<<"$pool6")"
bt_expect_eq "CALICO_IPV6POOL_VXLAN" "Always" "$(jq -r .spec.vxlanMode <<<"$pool6")"
vx6=$(field n1 .spec.ipv6VXLANTunnelAddr)
[[ $vx6 == fd00:10:244:* ]] || bt_fail "no IPv6 VXLAN tunnel address from the pool: \"$vx6\""
bt_expect_contains "held by Calico's IPv6 handle" "vxlan-v6-tunnel-addr-n1" "$("$BRINDLECTL" get ipamhandles -o name)"
bt_expect_eq "no IPv4 tunnel address: no IPv4 pool uses VXLAN" "" "$(field n1 .spec.ipv4VXLANTunnelAddr)"
bt_expect_eq "the pod MTU makes room for VXLAN over IPv6" "1410" "$(cat "$BT_DIR/mtu.n1")"
startup n1 || bt_fail "startup again: $(cat "$BT_DIR/startup.log")"
bt_expect_eq "a second start keeps it" "$vx6" "$(field n1 .spec.ipv6VXLANTunnelAddr)"
"$BRINDLECTL" apply -f - >/dev/null <<'YAML'
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: default-ipv6-ippool}
spec: {cidr: "fd00:10:244::/48", blockSize: 122, vxlanMode: Never}
YAML
startup n1 || bt_fail "startup, IPv6 pool unencapsulated: $(cat "$BT_DIR/startup.log")"
bt_expect_eq "no IPv6 pool needs VXLAN: released" "" "$(field n1 .spec.ipv6VXLANTunnelAddr)"
case "$("$BRINDLECTL" get ipamhandles -o name)" in
*vxlan-v6-tunnel-addr-n1*) bt_fail "the IPv6 VXLAN handle is left" ;;
esac
bt_expect_eq "the pod MTU without encapsulation" "1480" "$(cat "$BT_DIR/mtu.n1")"
"$BRINDLECTL" delete ippool default-ipv6-ippool >/dev/null

# --- what a user set survives a start --------------------------------------------------------------
"$BRINDLECTL" apply -f - >/dev/null <<'YAML'
apiVersion: projectcalico.org/v3
kind: Node
metadata: {name: n1, labels: {rack: r1}}
spec: {bgp: {ipv4Address: 10.0.0.11/24, routeReflectorClusterID: 224.0.0.1, asNumber: 64600}}
YAML
startup n1 || bt_fail "startup: $(cat "$BT_DIR/startup.log")"
bt_expect_eq "the reflector cluster stays" "224.0.0.1" "$(field n1 .spec.bgp.routeReflectorClusterID)"
bt_expect_eq "the AS stays" "64600" "$(field n1 .spec.bgp.asNumber)"
bt_expect_eq "the labels stay" "r1" "$(field n1 .metadata.labels.rack)"
startup n1 AS=64700 || bt_fail "AS=64700: $(cat "$BT_DIR/startup.log")"
bt_expect_eq "AS= sets it" "64700" "$(field n1 .spec.bgp.asNumber)"

# --- one address, one node --------------------------------------------------------------------------
if startup n2 IP=10.0.0.11/24; then bt_fail "a second node took n1's address"; fi
bt_expect_contains "the refusal names the owner" "already Node n1's" "$(cat "$BT_DIR/startup.log")"
bt_expect_eq "and n2 was not written" "" "$("$BRINDLECTL" get node n2 -o name 2>/dev/null || true)"
startup n2 IP=10.0.0.11/24 DISABLE_NODE_IP_CHECK=true || bt_fail "$(cat "$BT_DIR/startup.log")"
"$BRINDLECTL" delete node n2 >/dev/null
startup n3 IP=none || bt_fail "IP=none: $(cat "$BT_DIR/startup.log")"
bt_expect_eq "IP=none: a Node without an address" "" "$(addr n3)"
"$BRINDLECTL" delete node n3 >/dev/null

# --- tunnel addresses follow the pools -----------------------------------------------------------
"$BRINDLECTL" apply -f - >/dev/null <<'YAML'
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: default-ipv4-ippool}
spec: {cidr: 10.244.0.0/16, blockSize: 26, natOutgoing: true, vxlanMode: Always}
YAML
startup n1 || bt_fail "startup with a VXLAN pool: $(cat "$BT_DIR/startup.log")"
vx=$(field n1 .spec.ipv4VXLANTunnelAddr)
[[ $vx == 10.244.* ]] || bt_fail "no VXLAN tunnel address from the pool: \"$vx\""
bt_expect_contains "held by Calico's handle" "vxlan-tunnel-addr-n1" "$("$BRINDLECTL" get ipamhandles -o name)"
bt_expect_eq "the pod MTU makes room for VXLAN" "1430" "$(cat "$BT_DIR/mtu.n1")"
startup n1 || bt_fail "startup again: $(cat "$BT_DIR/startup.log")"
bt_expect_eq "a second start keeps the address" "$vx" "$(field n1 .spec.ipv4VXLANTunnelAddr)"
"$BRINDLECTL" apply -f - >/dev/null <<'YAML'
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: default-ipv4-ippool}
spec: {cidr: 10.244.0.0/16, blockSize: 26, natOutgoing: true, vxlanMode: Never, ipipMode: Always}
YAML
startup n1 || bt_fail "startup with an IPIP pool: $(cat "$BT_DIR/startup.log")"
bt_expect_eq "no pool needs VXLAN: released" "" "$(field n1 .spec.ipv4VXLANTunnelAddr)"
ipip=$(field n1 .spec.bgp.ipv4IPIPTunnelAddr)
[[ $ipip == 10.244.* ]] || bt_fail "no IPIP tunnel address: \"$ipip\""
handles=$("$BRINDLECTL" get ipamhandles -o name)
case "$handles" in *vxlan-tunnel-addr-n1*) bt_fail "the VXLAN handle is left: $handles" ;; esac
bt_expect_eq "the pod MTU for IPIP" "1460" "$(cat "$BT_DIR/mtu.n1")"
startup n1 CNI_MTU=1400 || bt_fail "CNI_MTU: $(cat "$BT_DIR/startup.log")"
bt_expect_eq "CNI_MTU sets the pod MTU" "1400" "$(cat "$BT_DIR/mtu.n1")"

# --- bad settings change nothing -----------------------------------------------------------------
before=$("$BRINDLECTL" get node n1 -o json)
if startup n1 IP=autodetect IP_AUTODETECTION_METHOD=nearest; then bt_fail "a bad method was taken"; fi
bt_expect_contains "the bad method is named" "IP_AUTODETECTION_METHOD: unknown method \"nearest\"" \
	"$(cat "$BT_DIR/startup.log")"
if startup n1 IP=10.0.0.300; then bt_fail "a bad IP was taken"; fi
bt_expect_contains "the bad IP is named" "IP=10.0.0.300: not an IPv4 address" "$(cat "$BT_DIR/startup.log")"
echo 1400 >"$BT_DIR/mtu.n1"
if startup n1 CNI_MTU=9x; then bt_fail "a bad CNI_MTU was taken"; fi
bt_expect_contains "the bad MTU is named" 'CNI_MTU: "9x" is not an MTU' "$(cat "$BT_DIR/startup.log")"
bt_expect_eq "and the MTU file is as it was" 1400 "$(cat "$BT_DIR/mtu.n1")"
bt_expect_eq "the Node is as it was" "$before" "$("$BRINDLECTL" get node n1 -o json)"
"$BRINDLECTL" delete ippool default-ipv4-ippool >/dev/null
if startup n1 CALICO_IPV4POOL_BLOCK_SIZE=33; then bt_fail "blockSize 33 was taken"; fi
bt_expect_contains "the bad block size is named" "CALICO_IPV4POOL_*: spec.blockSize" "$(cat "$BT_DIR/startup.log")"
bt_expect_eq "and no pool was made" "" "$("$BRINDLECTL" get ippools -o name)"
startup n1 NO_DEFAULT_POOLS=true || bt_fail "NO_DEFAULT_POOLS: $(cat "$BT_DIR/startup.log")"
bt_expect_eq "NO_DEFAULT_POOLS=true: none" "" "$("$BRINDLECTL" get ippools -o name)"
bt_pass
