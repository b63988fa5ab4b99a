#!/usr/bin/env bash
# bench/felix-loop-stall.sh [RUNS]
# The longest run of one event-loop handler in a release felix during a watch
# reconnect storm (etcd killed and restarted five times in a row), from the
# scenario of tests/netns/felix_loop_nonblocking.sh, RUNS times (default 3).
# Baseline: a blocking datastore call stalls the loop for its whole timeout
# (5 s); goal: every handler under 1 ms. Run as root after ./scripts/build release.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
build=${BRINDLE_BUILD_DIR:-$PWD/build/release}
[ -x "$build/felix/brindle-felix" ] || { echo "build first: ./scripts/build release" >&2; exit 1; }
out=$(mktemp)
trap 'rm -f "$out"' EXIT
figures=()
for i in $(seq "$runs"); do
	BRINDLE_BUILD_DIR=$build BRINDLE_STALL_LIMIT_MS=1 BRINDLE_STALL_OUT=$out \
		bash tests/netns/felix_loop_nonblocking.sh >/dev/null 2>&1 || true
	figures+=("$(awk '{ printf "%.3f", $1 * 1000 }' "$out")")
	echo "run $i: longest handler ${figures[-1]} ms"
done
printf '%s\n' "${figures[@]}" | sort -n | awk '{ v[NR] = $1 } END { printf "median %.3f ms, worst %.3f ms (goal < 1 ms; a blocking call: 5000 ms)\n", v[int((NR + 1) / 2)], v[NR] }'
