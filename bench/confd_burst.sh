#!/usr/bin/env bash
# confd under a burst of datastore events: how many times BIRD is reloaded.
# One node runs brindle-confd and BIRD in a namespace with a private etcd
# (the test library's helpers, so everything is cleaned up). Baseline, in the
# same run: a single event costs one reload. Then 1,000 events (brindlectl
# apply of 1,000 new Nodes, written one by one) must cost one reload too.
# Goal: one reload per burst.
#
#   bench/confd_burst.sh        (uses $BRINDLE_BUILD_DIR, default build/release)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export BRINDLE_SOURCE_DIR=${BRINDLE_SOURCE_DIR:-$(dirname "$here")}
export BRINDLE_BUILD_DIR=${BRINDLE_BUILD_DIR:-$BRINDLE_SOURCE_DIR/build/release}
. "$BRINDLE_SOURCE_DIR/tests/lib/common.sh"
. "$BRINDLE_SOURCE_DIR/tests/lib/confd.sh"
EVENTS=${EVENTS:-1000}

bt_start_etcd
"$BRINDLECTL" apply -f - >/dev/null <<'YAML'
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pods}
spec: {cidr: 10.244.0.0/16}
---
apiVersion: projectcalico.org/v3
kind: Node
metadata: {name: node-1}
spec: {bgp: {ipv4Address: 10.100.0.1/16}}
YAML
confd_switch
confd_node node-1 10.100.0.1/16
confd_start node-1
confd_bird node-1

metric() {
	ip netns exec "$(confd_ns node-1)" curl -sf http://127.0.0.1:9098/metrics |
		awk -v m="$1" '$1 == m { print $2 }'
}
reloads() { metric 'brindle_confd_bird_reloads_total{result="ok"}'; }
renders() { metric brindle_confd_renders_total; }
bt_wait_for 20 "the first reload" sh -c "[ \"\$(ip netns exec $(confd_ns node-1) curl -sf http://127.0.0.1:9098/metrics | awk '\$1 == \"brindle_confd_bird_reloads_total{result=\\\"ok\\\"}\" {print \$2}')\" = 1 ]"

# wait_quiet: until the reload count has not moved for 3 s; prints it.
wait_quiet() {
	local last now same=0
	last=$(reloads)
	while [ $same -lt 30 ]; do
		sleep 0.1
		now=$(reloads)
		if [ "$now" = "$last" ]; then same=$((same + 1)); else same=0 last=$now; fi
	done
	echo "$last"
}
ms() { date +%s%3N; }

# Baseline: one event.
r0=$(reloads)
t0=$(ms)
"$BRINDLECTL" apply -f - >/dev/null <<'YAML'
apiVersion: projectcalico.org/v3
kind: Node
metadata: {name: single}
spec: {bgp: {ipv4Address: 10.100.0.2/16}}
YAML
bt_wait_for 20 "the single event's reload" sh -c "[ \"\$(ip netns exec $(confd_ns node-1) curl -sf http://127.0.0.1:9098/metrics | awk '\$1 == \"brindle_confd_bird_reloads_total{result=\\\"ok\\\"}\" {print \$2}')\" != $r0 ]"
t1=$(ms)
r1=$(wait_quiet)

# The burst: EVENTS new nodes, each a datastore write of its own.
for i in $(seq 1 "$EVENTS"); do
	printf -- '---\napiVersion: projectcalico.org/v3\nkind: Node\nmetadata: {name: burst-%04d}\nspec: {bgp: {ipv4Address: 10.100.%d.%d/16}}\n' \
		"$i" $((i / 250 + 1)) $((i % 250 + 1))
done >"$BT_DIR/burst.yaml"
n0=$(renders)
t2=$(ms)
"$BRINDLECTL" apply -f "$BT_DIR/burst.yaml" >/dev/null
t3=$(ms)
r2=$(wait_quiet)
n1=$(renders)
sessions=$(confd_birdc node-1 show protocols | awk '$2 == "BGP"' | wc -l)

printf '\nconfd reloads under a burst (goal: one reload per burst)\n'
printf '%-44s %8s %10s\n' "case" "reloads" "time"
printf '%-44s %8d %8d ms  (event to reload)\n' "baseline: 1 event" $((r1 - r0)) $((t1 - t0))
printf '%-44s %8d %8d ms  (writing the burst)\n' "burst: $EVENTS events (new nodes), one by one" \
	$((r2 - r1)) $((t3 - t2))
printf '%-44s %8d\n' "  renders during the burst" $((n1 - n0))
printf '%-44s %8s\n' "  ratio reloads/baseline" "$(awk -v a=$((r2 - r1)) -v b=$((r1 - r0)) 'BEGIN { printf "%.2f", a / b }')"
printf '%-44s %8d\n' "  BGP sessions in BIRD afterwards" "$sessions"
[ $((r2 - r1)) -eq 1 ] || bt_log "more than one reload for the burst"
bt_pass
