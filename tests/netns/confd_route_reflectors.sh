#!/usr/bin/env bash
# Two route reflectors (one cluster ID) and four clients with the mesh off,
# each node with confd and BIRD in its own namespace: every session
# Established, reflectors mark clients as RR clients, each client's kernel
# gets the other clients' blocks with the owner as next hop, and the routes
# survive the loss of one reflector.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/confd.sh"

bt_start_etcd
nodes="rr-1 rr-2 c-1 c-2 c-3 c-4"
declare -A addr=([rr-1]=10.99.0.2 [rr-2]=10.99.0.3 [c-1]=10.99.0.21 [c-2]=10.99.0.22
	[c-3]=10.99.0.23 [c-4]=10.99.0.24)

{
	cat <<'YAML'
apiVersion: projectcalico.org/v3
kind: BGPConfiguration
metadata: {name: default}
spec: {nodeToNodeMeshEnabled: false, asNumber: 64512}
---
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pods}
spec: {cidr: 10.244.0.0/16}
---
apiVersion: projectcalico.org/v3
kind: BGPPeer
metadata: {name: peer-with-route-reflectors}
spec: {nodeSelector: all(), peerSelector: route-reflector == 'true'}
YAML
	for n in rr-1 rr-2; do
		printf -- '---\napiVersion: projectcalico.org/v3\nkind: Node\nmetadata: {name: %s, labels: {route-reflector: "true"}}\nspec: {bgp: {ipv4Address: %s/24, routeReflectorClusterID: 224.0.0.1}}\n' "$n" "${addr[$n]}"
	done
	for n in c-1 c-2 c-3 c-4; do
		printf -- '---\napiVersion: projectcalico.org/v3\nkind: Node\nmetadata: {name: %s}\nspec: {bgp: {ipv4Address: %s/24}}\n' "$n" "${addr[$n]}"
	done
} >"$BT_DIR/cluster.yaml"
"$BRINDLECTL" apply -f "$BT_DIR/cluster.yaml" >/dev/null
for i in 1 2 3 4; do
	confd_affinity "c-$i" "10.244.$i.0/26"
done

confd_switch
for n in $nodes; do
	confd_node "$n" "${addr[$n]}/24"
	confd_start "$n"
done
for n in $nodes; do
	confd_bird "$n"
done

for n in rr-1 rr-2; do
	bt_wait_for 60 "$n's five sessions to be Established" confd_all_established "$n" 5
done
for i in 1 2 3 4; do
	bt_wait_for 60 "c-$i's two sessions to be Established" confd_all_established "c-$i" 2
done
bt_log "2 reflectors x 4 clients Established"

# Reflectors reflect for clients, not for each other.
out=$(confd_birdc rr-1 show protocols all Node_10_99_0_21)
bt_expect_contains "rr-1 reflects for c-1" "route-reflector" "$out"
out=$(confd_birdc rr-1 show protocols all Node_10_99_0_3)
case $out in *route-reflector*) bt_fail "rr-1 treats rr-2 as a client" ;; esac

# Every client's kernel has the others' blocks, with the owner as next hop.
check_routes() {
	local i j
	for i in 1 2 3 4; do
		for j in 1 2 3 4; do
			[ "$i" = "$j" ] && continue
			confd_route "c-$i" "10.244.$j.0/26" | grep -q "via 10.99.0.2$j dev eth0 proto bird" ||
				return 1
		done
	done
}
bt_wait_for 30 "every client to learn the others' blocks" check_routes
ip -n "$(confd_ns c-4)" addr add 10.244.4.1/32 dev lo
ip netns exec "$(confd_ns c-1)" ping -c 1 -W 2 10.244.4.1 >/dev/null ||
	bt_fail "c-1 cannot reach 10.244.4.1 on c-4"

# One reflector is enough.
kill "${BIRD_PID[rr-1]}"
bt_wait_for 30 "c-1 to see rr-1 gone" sh -c "! birdc -s $BT_DIR/c-1/bird.ctl show protocols Node_10_99_0_2 | grep -q Established"
confd_affinity c-3 10.244.3.64/26
bt_wait_for 30 "c-1 to learn c-3's new block through rr-2" \
	sh -c "ip -n $(confd_ns c-1) route show 10.244.3.64/26 | grep -q 'via 10.99.0.23'"
check_routes || bt_fail "routes lost with one reflector down"
confd_stop_all
bt_pass
