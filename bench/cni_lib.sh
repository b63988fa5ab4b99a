# What bench/cni_add.sh, cni_add6.sh and cni_add_kdd.sh share (source after tests/lib/common.sh):
#   cni_bench_node NS        a private etcd and the node namespace NS (with cni_bench_host)
#   cni_bench_host NS        the node's namespace gets an uplink and a default route
#                            (proxy ARP and ptp's gateway need one)
#   cni_bench_pods FIRST LAST  pod namespaces <prefix>pFIRST..pLAST
#   PTP_CONF                 the reference ptp + host-local configuration
#   cni_bench_run NS PLUGINDIR PLUGIN CONF COMMAND POD IFNAME [OUT]
#                            one call as a runtime makes it in NS; prints its milliseconds;
#                            its answer goes to OUT when given
#   cni_bench_sequential NS CONF PODS
#                            the warm-up pod 0 and pods 1..PODS, brindle-cni and ptp
#                            interleaved (ms in $BT_DIR/brindle.ms and ptp.ms)
#   cni_bench_report TITLE GOAL  p50/p99 of both, the ratio, brindle's DEL p50 (after
#                            cni_bench_del_sequential NS CONF PODS), each plugin's own CPU
CNI_BENCH_BIN=$BT_BUILD_DIR/cni

# cni_bench_node NS: a private etcd, and the node's namespace NS with its uplink.
cni_bench_node() {
	bt_start_etcd
	ip netns add "$1"
	bt_netns+=("$1")
	ip -n "$1" link set lo up
	cni_bench_host "$1"
}

cni_bench_host() {
	ip -n "$1" link add up0 type veth peer name up1
	ip -n "$1" addr add 192.0.2.1/24 dev up0
	ip -n "$1" link set up0 up
	ip -n "$1" link set up1 up
	ip -n "$1" route add default via 192.0.2.254 dev up0
}

cni_bench_pods() {
	local i
	for i in $(seq "$1" "$2"); do
		ip netns add "${BT_PREFIX}p$i"
		bt_netns+=("${BT_PREFIX}p$i")
	done
}

PTP_CONF=$(
	cat <<JSON
{"cniVersion": "1.0.0", "name": "ptpbench", "type": "ptp", "ipMasq": false, "mtu": 1500,
 "ipam": {"type": "host-local", "subnet": "10.250.0.0/16", "dataDir": "$BT_DIR/host-local",
          "routes": [{"dst": "0.0.0.0/0"}]}}
JSON
)

cni_bench_run() {
	local ns=$1 dir=$2 plugin=$3 conf=$4 cmd=$5 i=$6 ifname=$7 out=${8:-$BT_DIR/out.$6} t0 t1
	# the children's CPU before and after (`times` in this shell: a subshell would count its own)
	times >"$BT_DIR/times.0"
	t0=$EPOCHREALTIME
	ip netns exec "$ns" env CNI_COMMAND="$cmd" CNI_CONTAINERID="bench$i" \
		CNI_NETNS="/var/run/netns/${BT_PREFIX}p$i" CNI_IFNAME="$ifname" \
		CNI_ARGS="IgnoreUnknown=1;K8S_POD_NAMESPACE=bench;K8S_POD_NAME=pod-$i" CNI_PATH="$dir" \
		"$dir/$plugin" <<<"$conf" >"$out" 2>>"$BT_DIR/stderr.log" ||
		bt_fail "$plugin $cmd pod $i: $(cat "$out")"
	t1=$EPOCHREALTIME
	times >"$BT_DIR/times.1"
	# "0m0.123s 0m0.045s" (user, system) on the second line: milliseconds spent in between
	cat "$BT_DIR/times.0" "$BT_DIR/times.1" | awk -F'[ms ]+' 'FNR % 2 == 0 { c[++k] = ($1 + $3) * 60000 + ($2 + $4) * 1000 }
		END { printf "%d\n", c[2] - c[1] }' >>"$BT_DIR/$plugin-$cmd.cpums"
	echo $(((${t1/./} - ${t0/./}) / 1000))
}

cni_bench_sequential() {
	local ns=$1 conf=$2 pods=$3 i
	: >"$BT_DIR/brindle.ms"
	: >"$BT_DIR/ptp.ms"
	# Warm both (page cache, the first connection, the first block claim).
	cni_bench_run "$ns" "$CNI_BENCH_BIN" brindle-cni "$conf" ADD 0 eth0 >/dev/null
	cni_bench_run "$ns" /usr/lib/cni ptp "$PTP_CONF" ADD 0 eth1 "$BT_DIR/ptp.out" >/dev/null
	for i in $(seq 1 "$pods"); do
		cni_bench_run "$ns" "$CNI_BENCH_BIN" brindle-cni "$conf" ADD "$i" eth0 \
			>>"$BT_DIR/brindle.ms"
		cni_bench_run "$ns" /usr/lib/cni ptp "$PTP_CONF" ADD "$i" eth1 "$BT_DIR/ptp.out" \
			>>"$BT_DIR/ptp.ms"
	done
}

cni_bench_del_sequential() {
	local ns=$1 conf=$2 pods=$3 i
	: >"$BT_DIR/brindle-del.ms"
	for i in $(seq 0 "$pods"); do
		cni_bench_run "$ns" "$CNI_BENCH_BIN" brindle-cni "$conf" DEL "$i" eth0 \
			>>"$BT_DIR/brindle-del.ms"
		cni_bench_run "$ns" /usr/lib/cni ptp "$PTP_CONF" DEL "$i" eth1 "$BT_DIR/ptp.out" \
			>/dev/null
	done
}

cni_bench_pct() { # FILE P: the P-th percentile (nearest rank)
	local n
	n=$(wc -l <"$1")
	sort -n "$1" | sed -n "$(((n * $2 + 99) / 100))p"
}

cni_bench_report() {
	local b50 b99 p50 p99 d50
	b50=$(cni_bench_pct "$BT_DIR/brindle.ms" 50) b99=$(cni_bench_pct "$BT_DIR/brindle.ms" 99)
	p50=$(cni_bench_pct "$BT_DIR/ptp.ms" 50) p99=$(cni_bench_pct "$BT_DIR/ptp.ms" 99)
	d50=$(cni_bench_pct "$BT_DIR/brindle-del.ms" 50)
	echo "$1 (ms)"
	printf '%-36s %6s %6s\n' plugin p50 p99
	printf '%-36s %6s %6s\n' "brindle-cni + brindle-ipam" "$b50" "$b99"
	printf '%-36s %6s %6s\n' "ptp + host-local" "$p50" "$p99"
	echo "ratio brindle/ptp at p50: $(awk -v a="$b50" -v b="$p50" \
		'BEGIN { printf "%.2f", b ? a / b : 0 }'); goal: $2"
	echo "brindle-cni DEL p50: $d50 ms"
	# What the calls cost in CPU (user + system of the plugin, its children, and the ip netns
	# exec around it): the rest of their time is waiting, for the datastore above all.
	echo "CPU per ADD call, p50: brindle-cni $(cni_bench_pct "$BT_DIR/brindle-cni-ADD.cpums" 50) ms," \
		"ptp + host-local $(cni_bench_pct "$BT_DIR/ptp-ADD.cpums" 50) ms"
}
