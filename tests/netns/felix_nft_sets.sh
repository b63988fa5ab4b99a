#!/usr/bin/env bash
# The nftables writer's sets, member by member, in both families: a network set's members
# join and leave between reads (refreshes set an hour apart, so only felix's own deltas are
# at work), one joining inside an existing interval (nftables' interval sets hold no overlap:
# the set is compared whole) and one beside it (added alone); what the kernel lists is the
# union of the members each time, and a restart changes nothing.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/policy.sh"

PT_NO_FELIX=1 pt_node FELIX_IPTABLESBACKEND=NFT FELIX_IPV6SUPPORT=true \
	FELIX_IPTABLESREFRESHINTERVAL=3600 FELIX_IPSETSREFRESHINTERVAL=3600
pt_pool6
pt_start_felix
pt_ns default ""
pt_pod default db 10.244.1.10,fd00:10:244:1::10 "role: db"

# Remote endpoints (node2's: no interface here) whose addresses join a selector's set:
#   remote NAME IPv4 IPv6 LABELS
remote() {
	pt_apply <<YAML
apiVersion: projectcalico.org/v3
kind: WorkloadEndpoint
metadata: {name: node2-k8s-$1-eth0, namespace: default, labels: {$4, projectcalico.org/namespace: default}}
spec: {node: node2, orchestrator: k8s, pod: $1, endpoint: eth0, interfaceName: cali$1,
  ipNetworks: [$2/32, '$3/128'], profiles: [kns.default]}
YAML
}
# nets: the GlobalNetworkSet's networks
netset() {
	pt_apply <<YAML
apiVersion: projectcalico.org/v3
kind: GlobalNetworkSet
metadata: {name: partners, labels: {role: partner}}
spec:
  nets: [$1]
YAML
}
netset '10.77.0.0/24, "fd00:77::/120"'
pt_apply <<'YAML'
apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: partners}
spec:
  selector: role == 'db'
  ingress: [{action: Allow, source: {selector: role == 'partner'}}, {action: Allow, source: {selector: role == 'web'}}]
YAML

# The elements of felix's set that holds NEEDLE in family FAMILY's table, on one line.
elements() {
	ip netns exec "$NODE" nft list table "$1" brindle-filter |
		awk '/^\tset / { s = "" } /^\tset /, /^\t}/ { s = s " " $0 } /^\t}/ && s ~ n { print s; s = "" }' n="$2" |
		sed -E 's/.*elements = \{ *//; s/ *\}.*//; s/[[:space:]]+/ /g'
}
# wait until the set holding NEEDLE lists exactly WANT
expect_elements() { # FAMILY NEEDLE WANT
	local got
	for _ in $(seq 100); do
		got=$(elements "$1" "$2")
		[ "$got" = "$3" ] && return 0
		sleep 0.1
	done
	bt_fail "$1 set with $2: elements \"$got\", wanted \"$3\""
}
expect_elements ip 10.77.0.0 "10.77.0.0/24"
expect_elements ip6 fd00:77:: "fd00:77::/120"
bt_log "first program: ok"

# A member inside an existing interval and one beside it, in each family.
netset '10.77.0.0/24, 10.77.0.5/32, 10.77.1.0/24, "fd00:77::/120", "fd00:77::5/128", "fd00:77:1::/120"'
expect_elements ip 10.77.1.0 "10.77.0.0/24, 10.77.1.0/24"
expect_elements ip6 fd00:77:1:: "fd00:77::/120, fd00:77:1::/120"
bt_log "members joining, inside and beside an interval: ok"

# The wide ones leave: the host inside comes back as an element of its own.
netset '10.77.0.5/32, 10.77.1.0/24, "fd00:77::5/128", "fd00:77:1::/120"'
expect_elements ip 10.77.1.0 "10.77.0.5, 10.77.1.0/24"
expect_elements ip6 fd00:77:1:: "fd00:77::5, fd00:77:1::/120"
bt_log "members leaving: ok"
# A set of single addresses (a selector's pods), whose elements felix does not keep: members
# join and leave by the calculation's marks; a network joining it has the set written whole,
# and from then on it is one whose elements felix keeps, until it is made again.
remote web1 10.78.0.1 fd00:78::1 "role: web"
remote web2 10.78.0.2 fd00:78::2 "role: web"
expect_elements ip 10.78.0. "10.78.0.1, 10.78.0.2"
expect_elements ip6 fd00:78:: "fd00:78::1, fd00:78::2"
remote web2 10.78.0.2 fd00:78::2 "role: other"
remote web3 10.78.0.3 fd00:78::3 "role: web"
expect_elements ip 10.78.0. "10.78.0.1, 10.78.0.3"
expect_elements ip6 fd00:78:: "fd00:78::1, fd00:78::3"
bt_log "addresses joining and leaving a selector's set: ok"
pt_apply <<'YAML'
apiVersion: projectcalico.org/v3
kind: GlobalNetworkSet
metadata: {name: webnets, labels: {role: web}}
spec:
  nets: [10.78.0.0/30, "fd00:78::/126", 10.78.9.0/24]
YAML
expect_elements ip 10.78.9.0 "10.78.0.0/30, 10.78.9.0/24"
expect_elements ip6 fd00:78:: "fd00:78::/126"
bt_log "a network joining it (the set written whole): ok"
"$BRINDLECTL" delete globalnetworkset webnets >/dev/null || bt_fail "deleting webnets"
remote web4 10.78.0.4 fd00:78::4 "role: web"
expect_elements ip 10.78.0. "10.78.0.1, 10.78.0.3, 10.78.0.4"
expect_elements ip6 fd00:78:: "fd00:78::1, fd00:78::3, fd00:78::4"
bt_log "the network leaving, another address joining: ok"
# ... each by felix's deltas as planned: no batch the kernel refused (an overlapping element
# would be, and felix would then read everything back and compare it whole)
failed=$(grep -h "nothing written" "$BT_DIR"/felix-*.log || true)
[ -z "$failed" ] || bt_fail "a batch failed: $failed"

# What felix's deltas left is what a felix reading it all afresh wants: a restart writes
# nothing.
before=$(ip netns exec "$NODE" nft list ruleset | sed -E 's/counter packets [0-9]+ bytes [0-9]+/counter/')
pt_stop_felix
pt_start_felix
pt_settled
after=$(ip netns exec "$NODE" nft list ruleset | sed -E 's/counter packets [0-9]+ bytes [0-9]+/counter/')
bt_expect_eq "the ruleset across a restart" "$before" "$after"
bt_log "restart: ok"
bt_pass
