# Shared by the lab tests: source after common.sh. Gives each test its own
# lab name (LAB, unique per run so parallel runs never meet), lab(), a cleanup
# trap that keeps the lab's logs for the report and brings the lab down, and
# lab_leaves_nothing for the end.
LAB=${LAB_PREFIX:-l}$$
STATE=${BRINDLE_LAB_STATE_DIR:-/run/brindle-lab}/$LAB
lab() { "$BRINDLECTL" lab "$@"; }
# brindlectl against the lab's own etcd
labctl() { BRINDLE_ETCD_ENDPOINTS="unix:$STATE/etcd/etcd.sock:0" "$BRINDLECTL" "$@"; }

lab_cleanup() {
	local rc=$?
	set +e
	if [ -d "$STATE" ]; then
		for f in "$STATE"/*.log; do [ -f "$f" ] && cp "$f" "$BT_DIR/lab-$(basename "$f")"; done
		lab down "$LAB" >/dev/null 2>&1
	fi
	(exit $rc)
	bt_cleanup
}
trap lab_cleanup EXIT

# lab_until SECS WHAT CMD...: CMD until it succeeds, at most SECS.
lab_until() { bt_wait_for "$@"; }

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
