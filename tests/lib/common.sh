# Shared by Brindle's shell tests (integration, netns, lab). Source it first:
#   . "$(dirname "$0")/../lib/common.sh"
# It gives each test a private temporary directory and name prefix, a cleanup
# trap that runs even when the test fails (processes, namespaces, files), a
# private etcd, bounded waits and small assertions. Nothing here touches the
# root network namespace.
set -euo pipefail

BT_NAME=$(basename "${BASH_SOURCE[1]:-$0}" .sh)
BT_DIR=$(mktemp -d "/tmp/brindle-test-${BT_NAME}-XXXXXX")
# Short, unique prefix for namespaces and links (interface names are 15 chars max).
BT_PREFIX="bt$(printf '%04x' $(($$ % 65536)))"
BT_SOURCE_DIR=${BRINDLE_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
BT_BUILD_DIR=${BRINDLE_BUILD_DIR:-$BT_SOURCE_DIR/build/test}
BRINDLECTL=${BRINDLECTL:-$BT_BUILD_DIR/ctl/brindlectl}
PROBE=${BRINDLE_PROBE:-$BT_BUILD_DIR/lab/brindle-probe}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# BT_TRACE=1 prints every command; BT_KEEP=1 keeps $BT_DIR (logs, etcd data).
[ "${BT_TRACE:-0}" = 1 ] && set -x

bt_pids=()
bt_netns=()
bt_failed=0

bt_log() { printf '[%s] %s\n' "$BT_NAME" "$*" >&2; }

bt_cleanup() {
	local rc=$?
	set +e
	for pid in "${bt_pids[@]}"; do
		kill "$pid" 2>/dev/null
	done
	for pid in "${bt_pids[@]}"; do
		for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	done
	for ns in "${bt_netns[@]}"; do
		# Processes left in the namespace die with it.
		ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null
		ip netns del "$ns" 2>/dev/null
	done
	if [ $rc -ne 0 ] || [ $bt_failed -ne 0 ]; then
		bt_log "FAILED; logs:"
		for f in "$BT_DIR"/*.log; do
			[ -f "$f" ] || continue
			echo "----- $f (last 40 lines)" >&2
			tail -n 40 "$f" >&2
		done
	fi
	if [ "${BT_KEEP:-0}" = 1 ]; then
		bt_log "kept $BT_DIR"
	else
		rm -rf "$BT_DIR"
	fi
	[ $bt_failed -ne 0 ] && exit 1
	exit $rc
}
trap bt_cleanup EXIT
trap 'exit 130' INT TERM

bt_fail() {
	bt_log "FAIL: $*"
	bt_failed=1
	exit 1
}

# bt_run_bg NAME CMD...: start a background process that dies with this shell.
bt_run_bg() {
	local name=$1
	shift
	setpriv --pdeathsig KILL -- "$@" >"$BT_DIR/$name.log" 2>&1 &
	bt_pids+=($!)
}

# bt_wait_for SECONDS DESCRIPTION CMD...: poll CMD every 0.1 s until it succeeds.
bt_wait_for() {
	local secs=$1 what=$2
	shift 2
	local deadline=$((SECONDS + secs))
	while ! "$@" >/dev/null 2>&1; do
		[ $SECONDS -lt $deadline ] || bt_fail "timed out after ${secs}s waiting for $what"
		sleep 0.1
	done
}

# bt_start_etcd: a private etcd on a unix socket; exports BRINDLE_ETCD_ENDPOINTS.
bt_start_etcd() {
	local dir=$BT_DIR/etcd
	mkdir -p "$dir"
	# etcd creates its unix sockets in its working directory.
	bt_run_bg etcd env -C "$dir" etcd --name bt --data-dir "$dir/data" \
		--listen-client-urls unix://etcd.sock:0 --advertise-client-urls unix://etcd.sock:0 \
		--listen-peer-urls unix://peer.sock:0 --initial-advertise-peer-urls unix://peer.sock:0 \
		--initial-cluster bt=unix://peer.sock:0 --log-level error --logger zap \
		--log-outputs stderr
	BT_ETCD_SOCK=$dir/etcd.sock:0
	export BRINDLE_DATASTORE_TYPE=etcdv3
	export BRINDLE_ETCD_ENDPOINTS="unix:$BT_ETCD_SOCK"
	bt_wait_for 20 "etcd to serve" curl -sf --unix-socket "$BT_ETCD_SOCK" \
		-X POST http://localhost/v3/kv/range -d '{"key":"AA=="}'
}

# bt_expect_eq WHAT EXPECTED ACTUAL
bt_expect_eq() {
	if [ "$2" != "$3" ]; then
		bt_log "FAIL: $1"
		diff <(printf '%s\n' "$2") <(printf '%s\n' "$3") >&2 || true
		bt_fail "$1"
	fi
}

# bt_expect_contains WHAT NEEDLE HAYSTACK
bt_expect_contains() {
	case "$3" in
	*"$2"*) ;;
	*) bt_fail "$1: expected to find '$2' in: $3" ;;
	esac
}

# bt_pass: the test passed (after bt_pass_check, when a library defines one).
bt_pass() {
	if declare -F bt_pass_check >/dev/null; then bt_pass_check; fi
	bt_log "PASS"
}

# bt_netns NAME: create network namespace "$BT_PREFIX-NAME" (loopback up), removed at exit.
bt_netns() {
	local ns="$BT_PREFIX-$1"
	ip netns add "$ns"
	bt_netns+=("$ns")
	ip -n "$ns" link set lo up
}

# bt_cali NAMESPACE POD: the host-side veth name of the dataplane contract.
bt_cali() {
	printf 'cali%s' "$(printf '%s.%s' "$1" "$2" | sha1sum | cut -c1-11)"
}

# bt_etcd_put KEY VALUE: write a raw key (IPAM bookkeeping that brindlectl will not take).
bt_etcd_put() {
	local k v
	k=$(printf '%s' "$1" | base64 -w0)
	v=$(printf '%s' "$2" | base64 -w0)
	curl -sf --unix-socket "$BT_ETCD_SOCK" -X POST http://localhost/v3/kv/put \
		-d "{\"key\":\"$k\",\"value\":\"$v\"}" >/dev/null
}

bt_etcd_del() {
	local k
	k=$(printf '%s' "$1" | base64 -w0)
	curl -sf --unix-socket "$BT_ETCD_SOCK" -X POST http://localhost/v3/kv/deleterange \
		-d "{\"key\":\"$k\"}" >/dev/null
}

# bt_affinity NODE CIDR: a confirmed block affinity, as IPAM writes it.
bt_affinity() {
	local name=${2/\//-} family=ipv4
	case $2 in *:*) family=ipv6 ;; esac
	bt_etcd_put "/calico/ipam/v2/host/$1/$family/block/$name" \
		"{\"apiVersion\":\"projectcalico.org/v3\",\"kind\":\"BlockAffinity\",\"metadata\":{\"name\":\"$name\"},\"spec\":{\"node\":\"$1\",\"cidr\":\"$2\",\"state\":\"confirmed\"}}"
}

# bt_pod NODE_NS NAMESPACE POD IP: a pod namespace wired as the CNI plugin does it:
# host veth cali<hash> (MAC ee:ee:ee:ee:ee:ee) in NODE_NS, eth0 with IP/32 and a
# default route via 169.254.1.1 in "$BT_PREFIX-NAMESPACE-POD". Sets BT_POD_MAC.
# (Not in $(...): the namespace must be registered in this shell for cleanup.)
bt_pod() {
	local node=$1 ns=$2 pod=$3 ip=$4
	local cali
	cali=$(bt_cali "$ns" "$pod")
	bt_netns "$ns-$pod"
	local podns="$BT_PREFIX-$ns-$pod"
	ip -n "$node" link add "$cali" type veth peer name eth0 netns "$podns"
	ip -n "$node" link set "$cali" address ee:ee:ee:ee:ee:ee up
	ip -n "$podns" addr add "$ip/32" dev eth0
	ip -n "$podns" link set eth0 up
	ip -n "$podns" route add 169.254.1.1 dev eth0 scope link
	ip -n "$podns" route add default via 169.254.1.1 dev eth0 onlink
	BT_POD_MAC=$(ip -n "$podns" link show eth0 | awk '/link\/ether/ {print $2}')
}

# bt_wep NODE NAMESPACE POD IP MAC: its WorkloadEndpoint, through brindlectl.
bt_wep() {
	local node=$1 ns=$2 pod=$3 ip=$4 mac=$5
	"$BRINDLECTL" apply -f - >/dev/null <<YAML
apiVersion: projectcalico.org/v3
kind: WorkloadEndpoint
metadata: {name: $node-k8s-$pod-eth0, namespace: $ns, labels: {app: $pod}}
spec: {node: $node, orchestrator: k8s, pod: $pod, endpoint: eth0,
  interfaceName: $(bt_cali "$ns" "$pod"), mac: '$mac', ipNetworks: [$ip/32], profiles: [kns.$ns]}
YAML
}

# bt_http_ok NS URL: GET answers 200 (run inside a namespace).
bt_http_ok() {
	ip netns exec "$1" curl -sf -o /dev/null --max-time 2 "$2"
}

# bt_etcd_txn_puts KEY VALUE [KEY VALUE...]: several puts in one transaction (one revision).
bt_etcd_txn_puts() {
	local ops="" k v
	while [ $# -ge 2 ]; do
		k=$(printf '%s' "$1" | base64 -w0)
		v=$(printf '%s' "$2" | base64 -w0)
		ops="$ops${ops:+,}{\"request_put\":{\"key\":\"$k\",\"value\":\"$v\"}}"
		shift 2
	done
	curl -sf --unix-socket "$BT_ETCD_SOCK" -X POST http://localhost/v3/kv/txn \
		-d "{\"success\":[$ops]}" >/dev/null
}

# bt_metric NS URL NAME: the value of an unlabelled Prometheus sample (0 when absent).
bt_metric() {
	ip netns exec "$1" curl -sf --max-time 2 "$2" | awk -v n="$3" '$1 == n {print $2; f=1} END {if (!f) print 0}'
}
