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
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

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
	rm -rf "$BT_DIR"
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

bt_pass() { bt_log "PASS"; }
