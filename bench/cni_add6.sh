#!/usr/bin/env bash
# CNI ADD latency by address family: the same sequential pods through brindle-cni and
# brindle-ipam (a private etcd on a unix socket) with an IPv4 pool only, an IPv6 pool only, and
# dual-stack (one address of each), interleaved pod by pod in one run so that the machine's
# speed is the same for all three. Prints p50 and p99 of each and the ratios to IPv4 (the IPv6
# issue's goal: IPv6 within 1.2x of IPv4). Everything happens inside namespaces the benchmark
# creates; nothing is left behind.
#
#   bench/cni_add6.sh [BUILD_DIR]     (default build/release; run scripts/build release)
#   PODS=200 bench/cni_add6.sh        more pods per family
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export BRINDLE_BUILD_DIR=$(cd "${1:-$ROOT/build/release}" && pwd)
export BRINDLE_SOURCE_DIR=$ROOT
[ -x "$BRINDLE_BUILD_DIR/cni/brindle-cni" ] || {
	echo "no brindle-cni in $BRINDLE_BUILD_DIR (run scripts/build release)" >&2
	exit 2
}
. "$ROOT/tests/lib/common.sh"
PODS=${PODS:-100}
HOST=${BT_PREFIX}bench
. "$ROOT/bench/cni_lib.sh"
cni_bench_node "$HOST"
ip netns exec "$HOST" sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1
# No felix here, so no policy for IPv6 either: the plugin is told that is known.
export BRINDLE_IPV6_WITHOUT_POLICY=1

"$BRINDLECTL" apply -f - >/dev/null <<'EOF'
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: bench4}
spec: {cidr: 10.249.0.0/16, blockSize: 26}
---
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: bench6}
spec: {cidr: 'fd00:249::/112', blockSize: 122}
EOF
conf() { # conf IPAM-MEMBERS
	cat <<EOF
{"cniVersion": "1.0.0", "name": "bench", "type": "brindle-cni", "nodename": "bench-node",
 "log_file_path": "$BT_DIR/cni.log", "log_level": "${CNI_BENCH_LOG:-info}",
 "ipam": {"type": "brindle-ipam", "ipam_lock_file": "$BT_DIR/ipam.lock", $1}}
EOF
}
declare -A CONF=(
	[ipv4]=$(conf '"assign_ipv4": "true", "assign_ipv6": "false"')
	[ipv6]=$(conf '"assign_ipv4": "false", "assign_ipv6": "true"')
	[dual]=$(conf '"assign_ipv4": "true", "assign_ipv6": "true"')
)
# Pods of each family get numbers of their own: IPv4 from 0, IPv6 from 1000, dual from 2000.
declare -A BASE=([ipv4]=0 [ipv6]=1000 [dual]=2000)
FAMILIES=(ipv4 ipv6 dual)
for f in "${FAMILIES[@]}"; do
	cni_bench_pods "${BASE[$f]}" $((BASE[$f] + PODS))
	: >"$BT_DIR/$f.ms"
done
# Warm-up: pod 0 of each (page cache, the first connection, each pool's first block claim).
for f in "${FAMILIES[@]}"; do
	cni_bench_run "$HOST" "$CNI_BENCH_BIN" brindle-cni "${CONF[$f]}" ADD "${BASE[$f]}" eth0 >/dev/null
done
for i in $(seq 1 "$PODS"); do
	for f in "${FAMILIES[@]}"; do
		cni_bench_run "$HOST" "$CNI_BENCH_BIN" brindle-cni "${CONF[$f]}" ADD \
			$((BASE[$f] + i)) eth0 "$BT_DIR/out.$f" >>"$BT_DIR/$f.ms"
	done
done
# The last pod of each has the addresses its family asked for.
grep -q '"10\.249\.' "$BT_DIR/out.ipv4" && ! grep -q 'fd00:249' "$BT_DIR/out.ipv4" ||
	bt_fail "the IPv4 pod's result: $(cat "$BT_DIR/out.ipv4")"
grep -q 'fd00:249' "$BT_DIR/out.ipv6" && ! grep -q '"10\.249\.' "$BT_DIR/out.ipv6" ||
	bt_fail "the IPv6 pod's result: $(cat "$BT_DIR/out.ipv6")"
grep -q 'fd00:249' "$BT_DIR/out.dual" && grep -q '"10\.249\.' "$BT_DIR/out.dual" ||
	bt_fail "the dual-stack pod's result: $(cat "$BT_DIR/out.dual")"
for f in "${FAMILIES[@]}"; do
	for i in $(seq 0 "$PODS"); do
		cni_bench_run "$HOST" "$CNI_BENCH_BIN" brindle-cni "${CONF[$f]}" DEL \
			$((BASE[$f] + i)) eth0 >/dev/null
	done
done

v4=$(cni_bench_pct "$BT_DIR/ipv4.ms" 50)
echo "CNI ADD latency by family, $PODS sequential pods each, interleaved (ms)"
printf '%-28s %6s %6s %10s\n' pods p50 p99 "p50 / IPv4"
for f in "${FAMILIES[@]}"; do
	p50=$(cni_bench_pct "$BT_DIR/$f.ms" 50)
	printf '%-28s %6s %6s %10s\n' "$f" "$p50" "$(cni_bench_pct "$BT_DIR/$f.ms" 99)" \
		"$(awk -v a="$p50" -v b="$v4" 'BEGIN { printf "%.2f", b ? a / b : 0 }')"
done
echo "goal: IPv6 <= 1.2x IPv4"
bt_pass
