#!/usr/bin/env bash
# From `brindlectl lab pod add` to the new pod reachable from a pod on
# another node, on examples/three-node.yaml: RUNS times (default 10) a pod
# x/bench-N is added on node1 serving TCP 80
# (`lab pod add NAME x/bench-N --node node1 --serve tcp:80`), then probed
# (TCP 80) from y/b on node2 every INTERVAL_MS (default 20) with a
# TIMEOUT_MS (default 50) handshake timeout until allowed, at most 10 s. The
# figure is the start of the first probe that got through (an upper bound).
# Also printed: when `lab pod add` returned. Medians; goal < 1 s.
#
# Needs `brindlectl lab pod add` (issue 7, being built on this branch); it
# says so and exits 77 when the build has no such command.
#
#   sudo bench/lab_pod_add.sh [RUNS] (uses $BRINDLE_BUILD_DIR, default build/release)
. "$(dirname "$0")/lab_lib.sh"
runs=${1:-10}
interval=${INTERVAL_MS:-20}
timeout=${TIMEOUT_MS:-50}
probe_out=$("$ctl" lab pod add 2>&1 || true)
if grep -q 'unknown command' <<<"$probe_out"; then
	echo "$ctl has no 'lab pod add' yet (issue 7, item 2): nothing measured" >&2
	exit 77
fi
name=bpa$$
topo=$(lab_topology "$name")
lab_up "$name" "$topo" --timeout 60
from_ns=$(pod_field "$name" y/b 4)
sleep_s=$(awk -v m="$interval" 'BEGIN { printf "%.3f", m / 1000 }')

add_ms=() reach_ms=()
for ((r = 1; r <= runs; r++)); do
	pod=x/bench-$r
	t0=$(now)
	"$ctl" lab pod add "$name" "$pod" --node node1 --serve tcp:80 >/dev/null
	t1=$(now)
	ip=$(pod_field "$name" "$pod" 3)
	[ -n "$ip" ] || { echo "$pod: no address in $state_base/$name/pods" >&2; exit 1; }
	ok=0
	while awk -v a="$t0" -v n="$(now)" 'BEGIN { exit !(n - a < 10) }'; do
		start=$(now)
		if probe_tcp "$from_ns" "$ip" 80 "$timeout"; then
			ok=1
			break
		fi
		sleep "$sleep_s"
	done
	[ $ok -eq 1 ] || { echo "$pod ($ip) not reachable from y/b within 10 s" >&2; exit 1; }
	add_ms+=("$(ms_since "$t0" "$t1")")
	reach_ms+=("$(ms_since "$t0" "$start")")
	printf 'run %d: lab pod add returned after %d ms, %s reachable from y/b (node2) after %d ms\n' \
		"$r" "${add_ms[-1]}" "$pod" "${reach_ms[-1]}"
done
printf 'median of %d (probe every %d ms, timeout %d ms): pod add returned %d ms, reachable from another node %d ms (goal < 1000 ms)\n' \
	"$runs" "$interval" "$timeout" "$(printf '%s\n' "${add_ms[@]}" | median)" \
	"$(printf '%s\n' "${reach_ms[@]}" | median)"
