#!/usr/bin/env bash
# From `brindlectl lab apply` of a policy to enforced everywhere, and from
# `lab delete` of it to open everywhere, on examples/three-node.yaml. The
# policy is a default deny of ingress for namespace y; its three pods sit on
# the three nodes, and each is probed (TCP 80) from a pod of namespace x on
# another node: x/a -> y/b, x/b -> y/c, x/c -> y/a. After `lab apply` starts,
# the pairs are probed together every INTERVAL_MS (default 20) with a
# TIMEOUT_MS (default 50) handshake timeout, straight from the source pod's
# namespace, until each is denied; the figure is the start of the first denied probe of
# the last pair to flip (an upper bound: the rules went in between the
# previous probe's start and that one). Then the same after `lab delete`
# until every pair is allowed again. RUNS cycles (default 10); medians.
# Every wait is bounded (10 s per flip).
#
#   sudo bench/lab_policy.sh [RUNS]  (uses $BRINDLE_BUILD_DIR, default build/release)
. "$(dirname "$0")/lab_lib.sh"
runs=${1:-10}
interval=${INTERVAL_MS:-20}
timeout=${TIMEOUT_MS:-50}
name=bp$$
topo=$(lab_topology "$name")
lab_up "$name" "$topo" --timeout 60
for ((i = 0; i < 100; i++)); do all_allowed "$name" && break; sleep 0.1; done
all_allowed "$name" || { echo "the lab's pods do not all reach each other" >&2; exit 1; }

cat >"$work/deny.yaml" <<'YAML'
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: default-deny, namespace: y}
spec: {podSelector: {}, policyTypes: [Ingress]}
YAML
pairs=("x/a y/b" "x/b y/c" "x/c y/a")
src_ns=() dst_ip=()
for p in "${pairs[@]}"; do
	read -r s d <<<"$p"
	src_ns+=("$(pod_field "$name" "$s" 4)")
	dst_ip+=("$(pod_field "$name" "$d" 3)")
	[ "$(pod_field "$name" "$s" 2)" != "$(pod_field "$name" "$d" 2)" ] ||
		{ echo "$s and $d are on the same node" >&2; exit 1; }
done

# Probe every pair until each gives $1 (allowed|denied); prints the ms from $2
# to the start of the probe at which the last pair flipped.
until_all() { # WANT T0
	local want=$1 t0=$2 k start last=0 deadline
	local -a done_=(0 0 0)
	deadline=$(awk -v t="$t0" 'BEGIN { printf "%.6f", t + 10 }')
	while :; do
		local pending=0
		# the pending pairs' probes at once, so one pair's timeout does not delay another's
		start=$(now)
		for k in 0 1 2; do
			[ "${done_[k]}" -eq 1 ] && continue
			{ if probe_tcp "${src_ns[k]}" "${dst_ip[k]}" 80 "$timeout"; then
				echo allowed; else echo denied; fi >"$work/probe-$k"; } &
		done
		wait
		for k in 0 1 2; do
			[ "${done_[k]}" -eq 1 ] && continue
			if [ "$(cat "$work/probe-$k")" = "$want" ]; then
				done_[k]=1
				last=$(ms_since "$t0" "$start")
			else
				pending=1
			fi
		done
		[ $pending -eq 0 ] && break
		if awk -v n="$(now)" -v d="$deadline" 'BEGIN { exit !(n > d) }'; then
			echo "not $want everywhere within 10 s" >&2
			return 1
		fi
		sleep "$(awk -v m="$interval" 'BEGIN { printf "%.3f", m / 1000 }')"
	done
	echo "$last"
}

deny_ms=() open_ms=() apply_ms=() delete_ms=()
for ((r = 1; r <= runs; r++)); do
	t0=$(now)
	"$ctl" lab apply "$name" -f "$work/deny.yaml" >/dev/null
	apply_ms+=("$(ms_since "$t0" "$(now)")")
	v=$(until_all denied "$t0") || exit 1
	deny_ms+=("$v")
	sleep 0.5
	t0=$(now)
	"$ctl" lab delete "$name" -f "$work/deny.yaml" >/dev/null
	delete_ms+=("$(ms_since "$t0" "$(now)")")
	v=$(until_all allowed "$t0") || exit 1
	open_ms+=("$v")
	printf 'run %d: apply returned %d ms, enforced everywhere %d ms; delete returned %d ms, open everywhere %d ms\n' \
		"$r" "${apply_ms[-1]}" "${deny_ms[-1]}" "${delete_ms[-1]}" "${open_ms[-1]}"
	sleep 0.5
done
printf 'median of %d (probe every %d ms, timeout %d ms): apply returned %d ms, enforced %d ms; delete returned %d ms, open %d ms (goal < 1000 ms)\n' \
	"$runs" "$interval" "$timeout" "$(printf '%s\n' "${apply_ms[@]}" | median)" \
	"$(printf '%s\n' "${deny_ms[@]}" | median)" "$(printf '%s\n' "${delete_ms[@]}" | median)" \
	"$(printf '%s\n' "${open_ms[@]}" | median)"
