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
bt_start_etcd
ip netns add "$HOST"
bt_netns+=("$HOST")
ip -n "$HOST" link set lo up
# A node has an uplink and a default route (proxy ARP and ptp's gateway need one).
ip -n "$HOST" link add up0 type veth peer name up1
ip -n "$HOST" addr add 192.0.2.1/24 dev up0
ip -n "$HOST" link set up0 up
ip -n "$HOST" link set up1 up
ip -n "$HOST" route add default via 192.0.2.254 dev up0

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
PTP_CONF=$(
	cat <<EOF
{"cniVersion": "1.0.0", "name": "ptpbench", "type": "ptp", "ipMasq": false, "mtu": 1500,
 "ipam": {"type": "host-local", "subnet": "10.250.0.0/16", "dataDir": "$BT_DIR/host-local",
          "routes": [{"dst": "0.0.0.0/0"}]}}
EOF
)

# run PLUGINDIR PLUGIN CONF COMMAND POD IFNAME: prints the milliseconds it took
run() {
	local dir=$1 plugin=$2 conf=$3 cmd=$4 i=$5 ifname=$6 t0 t1
	t0=$EPOCHREALTIME
	ip netns exec "$HOST" env CNI_COMMAND="$cmd" CNI_CONTAINERID="bench$i" \
		CNI_NETNS="/var/run/netns/${BT_PREFIX}p$i" CNI_IFNAME="$ifname" \
		CNI_ARGS="IgnoreUnknown=1;K8S_POD_NAMESPACE=bench;K8S_POD_NAME=pod-$i" CNI_PATH="$dir" \
		"$dir/$plugin" <<<"$conf" >"$BT_DIR/out" 2>>"$BT_DIR/stderr.log" ||
		bt_fail "$plugin $cmd pod $i: $(cat "$BT_DIR/out")"
	t1=$EPOCHREALTIME
	echo $(((${t1/./} - ${t0/./}) / 1000))
}

for i in $(seq 1 "$PODS"); do
	ip netns add "${BT_PREFIX}p$i"
	bt_netns+=("${BT_PREFIX}p$i")
done
: >"$BT_DIR/brindle.ms"
: >"$BT_DIR/ptp.ms"
# Warm both (page cache, first etcd connection, first block claim).
ip netns add "${BT_PREFIX}p0"
bt_netns+=("${BT_PREFIX}p0")
run "$BRINDLE_BUILD_DIR/cni" brindle-cni "$BRINDLE_CONF" ADD 0 eth0 >/dev/null
run /usr/lib/cni ptp "$PTP_CONF" ADD 0 eth1 >/dev/null
for i in $(seq 1 "$PODS"); do
	run "$BRINDLE_BUILD_DIR/cni" brindle-cni "$BRINDLE_CONF" ADD "$i" eth0 >>"$BT_DIR/brindle.ms"
	run /usr/lib/cni ptp "$PTP_CONF" ADD "$i" eth1 >>"$BT_DIR/ptp.ms"
done
: >"$BT_DIR/brindle-del.ms"
for i in $(seq 0 "$PODS"); do
	run "$BRINDLE_BUILD_DIR/cni" brindle-cni "$BRINDLE_CONF" DEL "$i" eth0 >>"$BT_DIR/brindle-del.ms"
	run /usr/lib/cni ptp "$PTP_CONF" DEL "$i" eth1 >/dev/null
done

pct() { # pct FILE P: the P-th percentile (nearest rank)
	local n
	n=$(wc -l <"$1")
	sort -n "$1" | sed -n "$(((n * $2 + 99) / 100))p"
}
b50=$(pct "$BT_DIR/brindle.ms" 50)
b99=$(pct "$BT_DIR/brindle.ms" 99)
p50=$(pct "$BT_DIR/ptp.ms" 50)
p99=$(pct "$BT_DIR/ptp.ms" 99)
d50=$(pct "$BT_DIR/brindle-del.ms" 50)
ratio=$(awk -v a="$b50" -v b="$p50" 'BEGIN { printf "%.2f", b ? a / b : 0 }')
echo "CNI ADD latency over $PODS sequential pods (ms)"
printf '%-28s %6s %6s\n' plugin p50 p99
printf '%-28s %6s %6s\n' "brindle-cni + brindle-ipam" "$b50" "$b99"
printf '%-28s %6s %6s\n' "ptp + host-local" "$p50" "$p99"
echo "ratio brindle/ptp at p50: $ratio (goal <= 1.5)"
echo "brindle-cni DEL p50: $d50 ms"
bt_pass
