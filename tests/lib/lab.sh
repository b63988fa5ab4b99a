# Shared by the lab tests: source after common.sh. Gives each test its own
# lab name (LAB, unique per run so parallel runs never meet), lab(), a cleanup
# trap that keeps the lab's logs for the report and brings the lab down, and
# lab_leaves_nothing for the end.
LAB=${LAB_PREFIX:-l}$$
STATE=${BRINDLE_LAB_STATE_DIR:-/run/brindle-lab}/$LAB
#
# BT_LAB_DATASTORE=kubernetes (the lab-kdd tier) runs the same test on the
# Kubernetes datastore: `lab up FILE` builds FILE with `datastore: kubernetes`
# added, and labctl talks to the lab's API server as its brindlectl user.
LAB_DATASTORE=${BT_LAB_DATASTORE:-etcdv3}
#
# BT_LAB_FAMILY=6 or dual runs a test written for IPv4 on an IPv6-only or a dual-stack lab:
# `lab up FILE` turns the subnets' `cidr: 192.168.N.0/24` into `cidr6: "fd00:N::/64"` (or
# adds it beside) and the pool `{cidr: 10.244.0.0/16, blockSize: 26...}` into an IPv6 pool (or
# adds one), and lab_grid / lab_want give and expect a grid per family.
LAB_FAMILY=${BT_LAB_FAMILY:-4}
case $LAB_FAMILY in
4) LAB_FAMILIES=4 ;;
6) LAB_FAMILIES=6 ;;
dual) LAB_FAMILIES="4 6" ;;
*) bt_fail "BT_LAB_FAMILY=$LAB_FAMILY: 4, 6 or dual" ;;
esac
lab_family_rewrite() { # FILE: rewritten in place for LAB_FAMILY
	local subnet pool
	case $LAB_FAMILY in
	6)
		subnet='s#cidr: 192\.168\.([0-9]+)\.0/24#cidr6: "fd00:\1::/64"#g'
		pool='s#\{cidr: 10\.244\.0\.0/16, blockSize: 26[^}]*\}#{cidr: "fd00:10:244::/48", blockSize: 122}#'
		;;
	dual)
		subnet='s#cidr: (192\.168\.([0-9]+)\.0/24)#cidr: \1, cidr6: "fd00:\2::/64"#g'
		pool='s#\{cidr: 10\.244\.0\.0/16, blockSize: 26[^}]*\}#&, {cidr: "fd00:10:244::/48", blockSize: 122}#'
		;;
	*) return 0 ;;
	esac
	grep -q 'cidr: 192\.168\.' "$1" && grep -q '{cidr: 10\.244\.0\.0/16, blockSize: 26' "$1" ||
		bt_fail "BT_LAB_FAMILY=$LAB_FAMILY: $1 has no subnet or pool this rewrite knows"
	sed -E -i -e "$subnet" -e "$pool" "$1"
}
lab() {
	if [ "${1:-}" = up ] && [ -f "${2:-}" ] &&
		{ [ "$LAB_DATASTORE" = kubernetes ] || [ "$LAB_FAMILY" != 4 ]; }; then
		# rewritten where it is when the test made it (messages name the same file)
		local file=$2 out=$2
		shift 2
		case $file in "$BT_DIR"/*) ;; *) out=$BT_DIR/$(basename "$file") ;; esac
		{
			grep -v '^datastore:' "$file"
			[ "$LAB_DATASTORE" != kubernetes ] || echo "datastore: kubernetes"
		} >"$out.tmp"
		mv "$out.tmp" "$out"
		lab_family_rewrite "$out"
		"$BRINDLECTL" lab up "$out" "$@"
		return
	fi
	"$BRINDLECTL" lab "$@"
}
# lab_grid ARGS...: `lab matrix LAB ARGS -o table` for each family of the run, runs of spaces
# squeezed; lab_want HEADER ROW...: what lab_grid gives when the grid is ROW... ("IPv6 "
# before an IPv6 grid's HEADER).
lab_grid() {
	local f
	for f in $LAB_FAMILIES; do
		lab matrix "$LAB" "$@" --family "$f" -o table | sed 's/ *$//' | tr -s ' '
	done
}
# lab_node_addr FAMILY NODE: the node's address of FAMILY (4 or 6), from its uplink.
lab_node_addr() {
	lab exec "$LAB" "$2" -- ip "-$1" -o addr show dev eth0 scope global | awk '{sub("/.*", "", $4); print $4; exit}'
}
lab_want() {
	local f head=$1
	shift
	for f in $LAB_FAMILIES; do
		printf '%s\n' "$([ "$f" = 6 ] && printf 'IPv6 ')$head" "$@" "" ". allowed X denied - skipped"
	done
}
# lab_example EXAMPLE OUT: examples/EXAMPLE with this test's lab name, into OUT.
lab_example() {
	sed -E "0,/^name: .*/s//name: $LAB/" "$BT_SOURCE_DIR/examples/$1" >"$2"
	grep -q "^name: $LAB\$" "$2" || bt_fail "could not rename the lab of examples/$1"
}
# lab_up_fails FILE WANT: `lab up FILE` exits 1 saying WANT (a refused topology, a lab up twice).
lab_up_fails() {
	local out rc
	set +e
	out=$(lab up "$1" 2>&1)
	rc=$?
	set -e
	bt_expect_eq "lab up of $(basename "$1") fails" 1 "$rc"
	bt_expect_contains "lab up of $(basename "$1") says why" "$2" "$out"
}
# brindlectl against the lab's own datastore
labctl() {
	if [ "$LAB_DATASTORE" = kubernetes ]; then
		ip netns exec "lab-$LAB-fabric" env BRINDLE_DATASTORE_TYPE=kubernetes \
			BRINDLE_KUBECONFIG="$STATE/kube/brindlectl.kubeconfig" "$BRINDLECTL" "$@"
	else
		BRINDLE_ETCD_ENDPOINTS="unix:$STATE/etcd/etcd.sock:0" "$BRINDLECTL" "$@"
	fi
}

lab_cleanup() {
	local rc=$?
	set +e
	if [ -d "$STATE" ]; then
		for f in "$STATE"/*.log; do [ -f "$f" ] && cp "$f" "$BT_DIR/lab-$(basename "$f")"; done
		# the lab tests on nftables (BRINDLE_LAB_RULE_BACKEND=nft): felix ran on it, or the
		# test tested the other backend
		if [ $rc -eq 0 ] && [ "${BRINDLE_LAB_RULE_BACKEND:-}" = nft ] &&
			! grep -qs 'rule backend: nftables' "$STATE"/*.log; then
			echo "[$BT_NAME] FAIL: felix did not run on nftables ($(grep -hs 'rule backend' "$STATE"/*.log | head -1))" >&2
			rc=1
		fi
		if [ $rc -ne 0 ] || [ "${bt_failed:-0}" -ne 0 ]; then
			# what the nodes hold at the failure: felix's own account, then the kernel's
			local ns
			for ns in $(ip netns list | awk -v p="lab-$LAB-" 'index($1, p) == 1 {print $1}'); do
				ip netns exec "$ns" curl -s --max-time 2 http://127.0.0.1:9091/metrics 2>/dev/null |
					grep -E '^felix_(in_sync|resync_state|apply_seconds_count|datastore_events_total|loop_longest|errors_total|int_dataplane_failures)' \
						>"$BT_DIR/z-$ns-felix-metrics.log"
				[ -s "$BT_DIR/z-$ns-felix-metrics.log" ] || rm -f "$BT_DIR/z-$ns-felix-metrics.log"
			done
			labctl get workloadendpoints -A -o yaml 2>&1 | grep -E '^  (name|namespace):|^    [a-z].*: ' \
				>"$BT_DIR/z-endpoints.log"
		fi
		lab down "$LAB" >/dev/null 2>&1
	fi
	(exit $rc)
	bt_cleanup
}
trap lab_cleanup EXIT

# lab_until SECS WHAT CMD...: CMD until it succeeds, at most SECS.
lab_until() { bt_wait_for "$@"; }

# lab_open_grid PROTO/PORT... -- POD...: `lab matrix` when every pod reaches every pod, runs
# of spaces squeezed (compare with `lab matrix ... | sed 's/ *$//' | tr -s ' '`, or with
# lab_grid): a matrix per family of LAB_FAMILIES, an IPv6 one's headers saying so.
lab_open_grid() {
	local protos=() pods=() p q f
	while [ $# -gt 0 ] && [ "$1" != -- ]; do protos+=("$1") && shift; done
	shift
	pods=("$@")
	for f in $LAB_FAMILIES; do
		for p in "${protos[@]}"; do
			echo "$([ "$f" = 6 ] && printf 'IPv6 ')$p ${pods[*]}"
			for q in "${pods[@]}"; do echo "$q$(printf ' .%.0s' "${pods[@]}")"; done
			echo
		done
		echo ". allowed X denied - skipped"
	done
}

# lab_frr_paths PEER FAMILY PREFIX: the next hops FRR's bgpd on PEER has for PREFIX in the
# IPv4 or IPv6 (FAMILY 4 or 6) unicast table, sorted, one per line.
lab_frr_paths() {
	lab exec "$LAB" "$1" -- vtysh --vty_socket "$STATE/$1" -d bgpd -c "show bgp ipv$2 unicast $3" 2>/dev/null |
		awk '$2 == "from" && $1 ~ /^[0-9a-f.:]+$/ { print $1 }' | sort
}
# lab_expect_frr_paths PEER FAMILY PREFIX "HOP...": lab_frr_paths is exactly HOP... within 20 s.
lab_expect_frr_paths() {
	local want got deadline=$((SECONDS + 20))
	# shellcheck disable=SC2086 # the hops are words
	want=$(printf '%s\n' $4 | sort)
	while :; do
		got=$(lab_frr_paths "$1" "$2" "$3")
		[ "$got" = "$want" ] && return 0
		[ $SECONDS -lt $deadline ] || bt_expect_eq "FRR's next hops for $3" "$want" "$got"
		sleep 0.2
	done
}

# lab_until_equal SECS WHAT WANT FUNC: FUNC's output is WANT within SECS (polled), else a failure
# showing both. A first answer that differs is logged (what converged late, and how).
lab_until_equal() {
	local deadline=$((SECONDS + $1)) start=$SECONDS what=$2 want=$3 got first=1
	shift 3
	until got=$("$@") && [ "$got" = "$want" ]; do
		[ $SECONDS -lt $deadline ] || bt_expect_eq "$what" "$want" "$got"
		if [ $first = 1 ]; then
			first=0
			bt_log "$what: not yet; first answer:"
			diff <(printf '%s\n' "$want") <(printf '%s\n' "$got") >&2 || true
		fi
		sleep 0.3
	done
	bt_log "$what: ok$([ $first = 1 ] || echo " after $((SECONDS - start)) s")"
}

lab_leaves_nothing() {
	local pids
	pids=$(awk '{print $1}' "$STATE/pids")
	lab down "$LAB" >/dev/null || bt_fail "lab down failed"
	[ ! -e "$STATE" ] || bt_fail "lab down left $STATE"
	local left
	left=$(ip netns list | grep "^lab-$LAB-" || true)
	[ -z "$left" ] || bt_fail "lab down left namespaces: $left"
	for p in $pids; do
		if kill -0 "$p" 2>/dev/null && grep -q "$LAB" "/proc/$p/cmdline" 2>/dev/null; then
			bt_fail "lab down left process $p: $(tr '\0' ' ' <"/proc/$p/cmdline")"
		fi
	done
}
