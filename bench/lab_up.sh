#!/usr/bin/env bash
# Time from `brindlectl lab up examples/three-node.yaml` to a working
# cluster: (a) lab up returns (it waits for every felix ready, every BGP
# session Established and every pod serving from inside itself); (b) the
# full 6×6 matrix on TCP 80 is all allowed (polled every 100 ms, at most
# 30 s). RUNS times (default 3), each lab under a new name; median.
#
#   sudo bench/lab_up.sh [RUNS]      (uses $BRINDLE_BUILD_DIR, default build/release)
. "$(dirname "$0")/lab_lib.sh"
runs=${1:-3}

up_ms=() all_ms=()
for ((r = 1; r <= runs; r++)); do
	name=bu$$r$r
	topo=$(lab_topology "$name")
	t0=$(now)
	lab_up "$name" "$topo" --timeout 60
	t1=$(now)
	ok=0
	for ((i = 0; i < 300; i++)); do
		if all_allowed "$name"; then
			ok=1
			break
		fi
		sleep 0.1
	done
	t2=$(now)
	[ $ok -eq 1 ] || { echo "run $r: the matrix was not all allowed within 30 s" >&2; exit 1; }
	up_ms+=("$(ms_since "$t0" "$t1")")
	all_ms+=("$(ms_since "$t0" "$t2")")
	printf 'run %d: lab up returned after %d ms, every pod reaches every pod after %d ms\n' \
		"$r" "${up_ms[-1]}" "${all_ms[-1]}"
	"$ctl" lab down "$name" >/dev/null
done
printf 'median of %d: lab up %d ms (sessions Established, pods serving), all reachable %d ms\n' \
	"$runs" "$(printf '%s\n' "${up_ms[@]}" | median)" "$(printf '%s\n' "${all_ms[@]}" | median)"
