#!/usr/bin/env bash
# IPv6 in the same BIRD: a dual-stack node and an IPv6-only node (router ID
# made from its name) mesh over IPv6 and install each other's IPv6 blocks;
# node status lists the session under IPv6.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/confd.sh"

bt_start_etcd
"$BRINDLECTL" apply -f - >/dev/null <<'YAML'
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: v6}
spec: {cidr: "fd00:244::/48"}
---
apiVersion: projectcalico.org/v3
kind: Node
metadata: {name: node-1}
spec: {bgp: {ipv4Address: 10.99.0.11/24, ipv6Address: "fd00:99::11/64"}}
---
apiVersion: projectcalico.org/v3
kind: Node
metadata: {name: node-2}
spec: {bgp: {ipv6Address: "fd00:99::12/64"}}
YAML
confd_affinity node-1 fd00:244::/122
confd_affinity node-2 fd00:244::40/122
confd_switch
confd_node node-1 10.99.0.11/24
confd_node node-2 10.99.0.12/24
ip -n $(confd_ns node-1) addr add fd00:99::11/64 dev eth0 nodad
ip -n $(confd_ns node-2) addr add fd00:99::12/64 dev eth0 nodad
confd_start node-1
confd_start node-2
confd_bird node-1
confd_bird node-2
bt_wait_for 60 "the IPv6 mesh session to be Established" confd_all_established node-2 1
for pair in "node-1 fd00:244::40/122 fd00:99::12" "node-2 fd00:244::/122 fd00:99::11"; do
	set -- $pair
	bt_wait_for 30 "$1 to install $2" \
		sh -c "ip -6 -n $(confd_ns "$1") route show $2 | grep -q 'via $3 dev eth0 proto bird metric 32'"
done
out=$(confd_birdc node-2 show status)
bt_expect_contains "router ID of the IPv6-only node" "Router ID is 85.196.53.22" "$out"
out=$("$BRINDLECTL" node status --bird-socket "$BT_DIR/node-2/bird.ctl")
bt_expect_contains "node status, IPv4" "No IPv4 peers found." "$out"
bt_expect_contains "node status, IPv6" "| fd00:99::11  | node-to-node mesh | up    |" "$out"
confd_stop_all
bt_pass
