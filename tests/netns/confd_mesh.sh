#!/usr/bin/env bash
# Three nodes in a full mesh, each with brindle-confd and BIRD in its own
# namespace and one etcd for all: every session reaches Established, each
# kernel gets the other nodes' blocks from BIRD (and not its own), packets
# follow those routes, and brindlectl node status reads the sessions back.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/confd.sh"

bt_start_etcd
ctl() { "$BRINDLECTL" "$@"; }

cat >"$BT_DIR/cluster.yaml" <<'YAML'
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pods}
spec: {cidr: 10.244.0.0/16}
---
apiVersion: projectcalico.org/v3
kind: Node
metadata: {name: node-1}
spec: {bgp: {ipv4Address: 10.99.0.11/24}}
---
apiVersion: projectcalico.org/v3
kind: Node
metadata: {name: node-2}
spec: {bgp: {ipv4Address: 10.99.0.12/24}}
---
apiVersion: projectcalico.org/v3
kind: Node
metadata: {name: node-3}
spec: {bgp: {ipv4Address: 10.99.0.13/24}}
YAML
ctl apply -f "$BT_DIR/cluster.yaml" >/dev/null
for i in 1 2 3; do
	confd_affinity "node-$i" "10.244.$i.0/26"
done

confd_switch
for i in 1 2 3; do
	confd_node "node-$i" "10.99.0.1$i/24"
done
# node-1 waits a little longer for bursts to settle (the burst check below).
confd_start node-1 --settle 300ms
confd_start node-2
confd_start node-3
for i in 1 2 3; do
	confd_bird "node-$i"
done

for i in 1 2 3; do
	bt_wait_for 60 "node-$i's two mesh sessions to be Established" confd_all_established "node-$i" 2
done
bt_log "mesh Established on all three nodes"

# Each kernel has the others' blocks, from BIRD, via their owners, and not its own.
for i in 1 2 3; do
	for j in 1 2 3; do
		if [ "$i" = "$j" ]; then
			out=$(confd_route "node-$i" "10.244.$j.0/26")
			bt_expect_eq "node-$i has no BIRD route for its own block" "" "$out"
			continue
		fi
		bt_wait_for 30 "node-$i to learn 10.244.$j.0/26" \
			sh -c "ip -n $(confd_ns "node-$i") route show 10.244.$j.0/26 | grep -q ."
		out=$(confd_route "node-$i" "10.244.$j.0/26")
		bt_expect_contains "route on node-$i" "via 10.99.0.1$j dev eth0 proto bird metric 32" "$out"
	done
done

# Real packets: an address in node-2's block answers node-1 through BIRD's route.
ip -n "$(confd_ns node-2)" addr add 10.244.2.1/32 dev lo
ip netns exec "$(confd_ns node-1)" ping -c 1 -W 2 10.244.2.1 >/dev/null ||
	bt_fail "node-1 cannot reach 10.244.2.1 on node-2"

# A block added later appears everywhere without restarting anything.
confd_affinity node-3 10.244.3.64/26
bt_wait_for 30 "node-1 to learn node-3's new block" \
	sh -c "ip -n $(confd_ns node-1) route show 10.244.3.64/26 | grep -q 'via 10.99.0.13'"

# A change that does not change the configuration renders but does not reload BIRD;
# a burst of changes reloads it once.
metric() {
	ip netns exec "$(confd_ns node-1)" curl -sf http://127.0.0.1:9098/metrics |
		awk -v m="$1" '$1 == m { print $2 }'
}
reloads() { metric 'brindle_confd_bird_reloads_total{result="ok"}'; }
# No reload of an earlier change may still be on its way: confd is ready only once BIRD has
# loaded what it last wrote (BIRD's "Last reconfiguration" time raced with that reload).
bt_wait_for 20 "node-1's confd to have BIRD load its last configuration" \
	bt_http_ok "$(confd_ns node-1)" http://127.0.0.1:9098/readiness
renders=$(metric brindle_confd_renders_total)
r0=$(reloads)
[ "${r0:-0}" -ge 1 ] || bt_fail "no reload of BIRD counted yet: \"$r0\""
conf0=$(cat "$BT_DIR/node-1/bird.conf")
"$BRINDLECTL" apply -f - >/dev/null <<'YAML'
apiVersion: projectcalico.org/v3
kind: Node
metadata: {name: node-2, labels: {rack: b}}
spec: {bgp: {ipv4Address: 10.99.0.12/24}}
YAML
bt_wait_for 20 "node-1's confd to render the label change" \
	sh -c "[ \"\$(ip netns exec $(confd_ns node-1) curl -sf http://127.0.0.1:9098/metrics | awk '\$1 == \"brindle_confd_renders_total\" {print \$2}')\" -gt $renders ]"
bt_expect_eq "no reload for an unchanged configuration" "$r0" "$(reloads)"
bt_expect_eq "the configuration not rewritten" "$conf0" "$(cat "$BT_DIR/node-1/bird.conf")"
for k in $(seq 0 49); do
	printf -- '---\napiVersion: projectcalico.org/v3\nkind: Node\nmetadata: {name: extra-%d}\nspec: {bgp: {ipv4Address: 10.99.1.%d/24}}\n' "$k" $((k + 1))
done | "$BRINDLECTL" apply -f - >/dev/null
bt_wait_for 30 "node-1 to configure the 50 new mesh peers" \
	sh -c "[ \$(birdc -s $BT_DIR/node-1/bird.ctl show protocols | grep -c '^Mesh_') -eq 52 ]"
sleep 1
bt_expect_eq "one reload for a burst of 50 changes" $((r0 + 1)) "$(reloads)"
"$BRINDLECTL" delete -f - >/dev/null < <(for k in $(seq 0 49); do
	printf -- '---\napiVersion: projectcalico.org/v3\nkind: Node\nmetadata: {name: extra-%d}\n' "$k"
done)
bt_wait_for 30 "node-1 to drop them again" \
	sh -c "[ \$(birdc -s $BT_DIR/node-1/bird.ctl show protocols | grep -c '^Mesh_') -eq 2 ]"

# node status reads the table back; the readiness check passes.
out=$("$BRINDLECTL" node status --bird-socket "$BT_DIR/node-1/bird.ctl")
bt_expect_contains "node status" "| 10.99.0.12   | node-to-node mesh | up    |" "$out"
bt_expect_contains "node status" "Established" "$out"
"$BRINDLECTL" node status --bird-socket "$BT_DIR/node-1/bird.ctl" --ready >/dev/null ||
	bt_fail "readiness check failed with every mesh session up"

# Take node-3's BIRD away: node-1 is no longer ready, and says which peer.
kill "${BIRD_PID[node-3]}"
bt_wait_for 30 "node-1 to notice node-3 is gone" \
	sh -c "! birdc -s $BT_DIR/node-1/bird.ctl show protocols Mesh_10_99_0_13 | grep -q Established"
set +e
out=$("$BRINDLECTL" node status --bird-socket "$BT_DIR/node-1/bird.ctl" --ready 2>&1)
rc=$?
set -e
bt_expect_eq "readiness exit code with a peer down" 1 "$rc"
bt_expect_contains "readiness message" "BGP not established with 10.99.0.13" "$out"
confd_stop_all
bt_pass
