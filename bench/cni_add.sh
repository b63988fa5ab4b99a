#!/usr/bin/env bash
# CNI ADD latency: 100 sequential pods through brindle-cni (in-process
# brindle-ipam, a private etcd on a unix socket), and the same 100 pods
# through the reference ptp + host-local plugins (containernetworking-plugins
# in /usr/lib/cni), interleaved pod by pod in one run. Prints p50 and p99 of
# each and brindle's ratio to ptp. Everything happens inside namespaces the
# benchmark creates; nothing is left behind.
#
#   bench/cni_add.sh [BUILD_DIR]     (default build/release; run scripts/build release)
#   PODS=200 bench/cni_add.sh        more pods
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export BRINDLE_BUILD_DIR=$(cd "${1:-$ROOT/build/release}" && pwd)
export BRINDLE_SOURCE_DIR=$ROOT
[ -x "$BRINDLE_BUILD_DIR/cni/brindle-cni" ] || {
	echo "no brindle-cni in $BRINDLE_BUILD_DIR (run scripts/build release)" >&2
	exit 2
}
[ -x /usr/lib/cni/ptp ] && [ -x /usr/lib/cni/host-local ] || {
	echo "needs containernetworking-plugins (scripts/deps test)" >&2
	exit 2
}
. "$ROOT/tests/lib/common.sh"
PODS=${PODS:-100}
HOST=${BT_PREFIX}bench
. "$ROOT/bench/cni_lib.sh"
cni_bench_node "$HOST"

"$BRINDLECTL" apply -f - >/dev/null <<'EOF'
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: bench}
spec: {cidr: 10.249.0.0/16, blockSize: 26}
EOF
BRINDLE_CONF=$(
	cat <<EOF
{"cniVersion": "1.0.0", "name": "bench", "type": "brindle-cni", "nodename": "bench-node",
 "log_file_path": "$BT_DIR/cni.log", "log_level": "${CNI_BENCH_LOG:-info}",
 "ipam": {"type": "brindle-ipam", "ipam_lock_file": "$BT_DIR/ipam.lock"}}
EOF
)
cni_bench_pods 0 "$PODS"
cni_bench_sequential "$HOST" "$BRINDLE_CONF" "$PODS"
cni_bench_del_sequential "$HOST" "$BRINDLE_CONF" "$PODS"
cni_bench_report "CNI ADD latency over $PODS sequential pods" "<= 1.5"
bt_pass
