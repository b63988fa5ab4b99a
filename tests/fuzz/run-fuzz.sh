#!/usr/bin/env bash
# run-fuzz.sh BINARY CORPUS_DIR fuzz|replay
# fuzz:   a short libFuzzer session seeded from the corpus; new inputs go to a
#         temporary directory, so the tree stays clean. Crashes fail the test
#         and are kept in $BRINDLE_BUILD_DIR/fuzz-artifacts for reproduction.
# replay: run every corpus file once.
set -euo pipefail
bin=$1 corpus=$2 mode=$3
[ -d "$corpus" ] || { echo "no corpus at $corpus" >&2; exit 1; }
if [ "$mode" = replay ]; then
	exec "$bin" "$corpus"
fi
secs=${BRINDLE_FUZZ_SECONDS:-15}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
art=${BRINDLE_BUILD_DIR:-$work}/fuzz-artifacts/$(basename "$bin")
mkdir -p "$art"
"$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
	-artifact_prefix="$art/" "$work" "$corpus"
