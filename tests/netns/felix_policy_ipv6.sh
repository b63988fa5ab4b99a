#!/usr/bin/env bash
# IPv6 policy, proven with real connections between dual-stack pods on a node
# running felix with ipv6Support (iptables backend: ip6tables and cali60 ip
# sets; in tier nft the nftables backend: Brindle's tables of the ip6
# family): the same policy enforced for both families, ipBlock with an IPv6
# CIDR and except, IPv6-only rules, ICMPv6 rules, neighbour discovery never
# blocked, and the connection event log of an IPv6 denial.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/policy.sh"

LOG=$BT_DIR/events.log
PT_NO_FELIX=1 pt_node FELIX_IPV6SUPPORT=true FELIX_IPTABLESBACKEND="${FELIX_IPTABLESBACKEND:-Legacy}" \
	FELIX_POLICYEVENTLOGENABLED=true FELIX_POLICYEVENTLOGFILE="$LOG"
# The node and the outside over IPv6 too; the pods' IPv6 pool routed to the node.
ip -n "$NODE" addr add fd00:192:168:100::11/64 dev eth0 nodad
ip -n "$OUT" addr add fd00:192:168:100::1/64 dev eth0 nodad
ip -n "$OUT" addr add fd00:99::5/128 dev lo
ip -n "$OUT" addr add fd00:99:1::5/128 dev lo
ip -n "$OUT" addr add fd00:77::5/128 dev lo
ip -n "$OUT" -6 route add fd00:10:244::/48 via fd00:192:168:100::11
ip -n "$NODE" -6 route add default via fd00:192:168:100::1
ip netns exec "$NODE" sysctl -qw net.ipv6.conf.all.forwarding=1
pt_pool6
pt_start_felix

pt_ns default ""
pt_ns prod "env: prod"
pt_pod default db 10.244.1.10,fd00:10:244:1::10 "role: db"
pt_pod default web 10.244.1.11,fd00:10:244:1::11 "role: web"
pt_pod default other 10.244.1.12,fd00:10:244:1::12 "role: other"
pt_pod prod api 10.244.1.13,fd00:10:244:1::13 "app: api"

# Open before any policy, over both families.
pt_allowed default other fd00:10:244:1::10 80
pt_allowed default other 10.244.1.10 80
pt_allowed out fd00:10:244:1::10 80
bt_log "open before policy: ok"

# --- one policy, both families --------------------------------------------------------------
pt_apply <<'YAML'
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: db, namespace: default}
spec:
  podSelector: {matchLabels: {role: db}}
  policyTypes: [Ingress]
  ingress:
  - from:
    - podSelector: {matchLabels: {role: web}}
    - namespaceSelector: {matchLabels: {env: prod}}
    - ipBlock: {cidr: "fd00:99::/32", except: ["fd00:99:1::/48"]}
    ports:
    - {protocol: TCP, port: 6379}
YAML
pt_allowed default web fd00:10:244:1::10 6379
pt_allowed default web 10.244.1.10 6379
pt_denied default web fd00:10:244:1::10 80
pt_denied default other fd00:10:244:1::10 6379
pt_denied default other 10.244.1.10 6379
pt_allowed prod api fd00:10:244:1::10 6379
# From outside: the IPv6 ipBlock, less its exception; nothing else outside.
ip -n "$OUT" -6 route replace fd00:10:244:1::10/128 via fd00:192:168:100::11 src fd00:99::5
pt_allowed out fd00:10:244:1::10 6379
ip -n "$OUT" -6 route replace fd00:10:244:1::10/128 via fd00:192:168:100::11 src fd00:99:1::5
pt_denied out fd00:10:244:1::10 6379
ip -n "$OUT" -6 route replace fd00:10:244:1::10/128 via fd00:192:168:100::11 src fd00:77::5
pt_denied out fd00:10:244:1::10 6379
ip -n "$OUT" -6 route del fd00:10:244:1::10/128
# the IPv6 ipBlock admits no IPv4 source
pt_denied out 10.244.1.10 6379
# pods the policy does not select stay open
pt_allowed default other fd00:10:244:1::11 80
bt_log "NetworkPolicy over both families: ok"
# The event log reads IPv6 packets too: the denial of other -> db over IPv6, with its addresses.
pt_denied default other fd00:10:244:1::10 6379
deny6() { grep '"verdict":"deny".*"src":"fd00:10:244:1::12".*"dst":"fd00:10:244:1::10".*"dport":6379' "$LOG"; }
bt_wait_for 10 "an IPv6 deny event" deny6
bt_expect_contains "the IPv6 denial names the endpoint" \
	'"endpoint":"WorkloadEndpoint default/node1-k8s-db-eth0"' "$(deny6 | head -1)"

# The rules are where they belong: ip6tables (nftables: the ip6 family's brindle-filter) holds
# the IPv6 ones, with cali60 sets of IPv6 members; iptables (the ip family's table) the IPv4
# ones.
# rules6: felix's IPv6 rules and sets as the kernel lists them, counters left out.
rules6() {
	if [ "$(pt_backend)" = nft ]; then
		ip netns exec "$NODE" nft list table ip6 brindle-filter |
			sed 's/counter packets [0-9]* bytes [0-9]*/counter/'
	else
		ip netns exec "$NODE" ip6tables-legacy-save | grep -v '^#' | sed 's/\[[0-9]*:[0-9]*\]//'
	fi
}
if [ "$(pt_backend)" = nft ]; then
	bt_expect_contains "the ipBlock in the ip6 table" "ip6 saddr fd00:99::/32" "$(rules6)"
	grep -q "fd00:99::" <<<"$(ip netns exec "$NODE" nft list table ip brindle-filter)" &&
		bt_fail "an IPv6 CIDR in the ip table"
	bt_expect_contains "the web pod's IPv6 address in a cali60 set" "fd00:10:244:1::11" "$(rules6)"
	bt_expect_contains "cali60 sets are of IPv6 addresses" "type ipv6_addr" "$(rules6)"
	ip netns exec "$NODE" ip6tables-legacy-save | grep -q '^-A' && bt_fail "ip6tables written on nft"
else
	rules6=$(ip netns exec "$NODE" ip6tables-legacy-save -t filter)
	bt_expect_contains "the ipBlock in ip6tables" "-s fd00:99::/32" "$rules6"
	grep -q -- "-s fd00:99::/32" <<<"$(pt_save -t filter)" && bt_fail "an IPv6 CIDR in iptables"
	sets6=$(ip netns exec "$NODE" ipset list)
	bt_expect_contains "the web pod's IPv6 address in a cali60 set" "fd00:10:244:1::11" "$sets6"
	bt_expect_contains "cali60 sets are inet6" "Type: hash:net" "$sets6"
fi
bt_log "rules and sets per family: ok"

# --- egress, neighbour discovery -----------------------------------------------------------
pt_apply <<'YAML'
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web-egress, namespace: default}
spec:
  podSelector: {matchLabels: {role: web}}
  policyTypes: [Egress]
  egress:
  - to: [{ipBlock: {cidr: "fd00:99::/32"}}]
YAML
# The web pod forgets its gateway's link-layer address: egress policy must not stop neighbour
# discovery, or nothing it is allowed reaches anywhere.
ip -n "$BT_PREFIX-default-web" -6 neigh flush dev eth0
pt_allowed default web fd00:99::5 80
pt_denied default web fd00:77::5 80
pt_denied default web 10.0.0.5 80
pt_denied default web fd00:10:244:1::10 6379
bt_expect_contains "the web pod resolved its gateway" "fe80::ecee:eeff:feee:eeee" \
	"$(ip -n "$BT_PREFIX-default-web" -6 neigh show dev eth0)"
bt_log "egress and neighbour discovery: ok"

# --- Calico rules of one family, ICMPv6 --------------------------------------------------------
pt_apply <<'YAML'
apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata: {name: other-in, namespace: default}
spec:
  selector: role == 'other'
  types: [Ingress]
  ingress:
  - {action: Allow, protocol: ICMPv6, icmp: {type: 128}}
  - {action: Allow, protocol: TCP, ipVersion: 6, destination: {ports: [80]}}
  - {action: Allow, protocol: TCP, ipVersion: 4, destination: {ports: [443]}}
YAML
pt_allowed default db fd00:10:244:1::12 80
pt_denied default db 10.244.1.12 80
pt_allowed default db 10.244.1.12 443
pt_denied default db fd00:10:244:1::12 443
bt_wait_for 15 "ICMPv6 echo allowed" ip netns exec "$BT_PREFIX-default-db" ping -6 -c1 -W1 fd00:10:244:1::12
ip netns exec "$BT_PREFIX-default-db" ping -4 -c1 -W1 10.244.1.12 >/dev/null 2>&1 &&
	bt_fail "IPv4 ping allowed: the ICMPv6 rule must not admit ICMP"
bt_log "ipVersion and ICMPv6 rules: ok"

# --- the node itself: a restart changes nothing in the IPv6 rules ---------------------------------
before=$(rules6)
pt_stop_felix
pt_start_felix
pt_settled
after=$(rules6)
bt_expect_eq "the IPv6 rules identical across a restart" "$before" "$after"
pt_allowed prod api fd00:10:244:1::10 6379
pt_denied default other fd00:10:244:1::10 6379
bt_log "restart: ok"
