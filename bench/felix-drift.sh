#!/usr/bin/env bash
# felix's drift repair (issue 16): at the policy scale (250 local endpoints,
# 10,000 remote, 500 policies; bench/policy_scenario.h), how long until
# someone else's change is put back, and what the checks cost while idle.
#   (1) idle CPU over WINDOW seconds, one felix with the 1 s drift check and
#       one with FELIX_DRIFTCHECKINTERVAL=0 (the baseline), same datastore,
#       same kernel state, same run; goal: < 1% of a core with the checks.
#   (2) repair times, ROUNDS each, with the refresh intervals at 5 minutes so
#       only events and checks repair: a local pod's route deleted, its
#       cali-tw-* chain flushed, a member removed from an ip set, its
#       proxy_arp turned off. Polled every 10 ms; goal < 2 s each.
#   sudo bench/felix-drift.sh [ROUNDS [WINDOW]]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "${BRINDLE_BUILD_DIR:-}" ]; then
	"$top/scripts/build" release >/dev/null
	export BRINDLE_BUILD_DIR=$top/build/release
fi
export BRINDLECTL=$BRINDLE_BUILD_DIR/ctl/brindlectl
. "$top/tests/lib/common.sh"
ROUNDS=${1:-5} WINDOW=${2:-30}
NODES=41 LOCAL=250 REMOTE=10000 POLICIES=500
FELIX=$BT_BUILD_DIR/felix/brindle-felix

bt_netns node1
NODE=$BT_PREFIX-node1
bt_netns peer
ip -n "$NODE" link add eth0 type veth peer name eth0 netns "$BT_PREFIX-peer"
ip -n "$NODE" addr add 172.16.0.1/12 dev eth0
ip -n "$NODE" link set eth0 up
"$BT_BUILD_DIR/bench/bench_felix_populate" --ifaces "$LOCAL" |
	awk '{printf "link add %s type veth peer name p%d\nlink set %s up\n", $1, NR, $1}' >"$BT_DIR/links"
ip -n "$NODE" -batch "$BT_DIR/links"
bt_start_etcd
"$BT_BUILD_DIR/bench/bench_felix_populate" "$NODES" "$LOCAL" "$REMOTE" "$POLICIES"

FPID=
start_felix() { # NAME ENV...: start, wait until ready; FPID is felix's own pid
	local name=$1
	shift
	bt_run_bg "$name" ip netns exec "$NODE" env NODENAME=node1 \
		BRINDLE_ETCD_ENDPOINTS="$BRINDLE_ETCD_ENDPOINTS" FELIX_LOGSEVERITYSCREEN=warning \
		FELIX_PROMETHEUSMETRICSENABLED=true "$@" "$FELIX"
	local pid=${bt_pids[-1]}
	bt_wait_for 180 "felix ready" bt_http_ok "$NODE" http://localhost:9099/readiness
	FPID=$(pgrep -P "$pid" -f brindle-felix || pgrep -f "^$FELIX" | tail -1)
}
stop_felix() {
	kill "$FPID"
	for _ in $(seq 100); do kill -0 "$FPID" 2>/dev/null || return 0; sleep 0.1; done
}
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
idle_cpu() { # percent of one core over WINDOW seconds, after 5 s to settle
	sleep 5
	local t0 t1
	t0=$(ticks "$FPID")
	sleep "$WINDOW"
	t1=$(ticks "$FPID")
	awk -v d=$((t1 - t0)) -v hz="$(getconf CLK_TCK)" -v w="$WINDOW" \
		'BEGIN {printf "%.2f", 100 * d / hz / w}'
}

start_felix felix-nocheck FELIX_DRIFTCHECKINTERVAL=0
base=$(idle_cpu)
stop_felix
start_felix felix-drift FELIX_ROUTEREFRESHINTERVAL=300 FELIX_IPTABLESREFRESHINTERVAL=300 \
	FELIX_IPSETSREFRESHINTERVAL=300
with=$(idle_cpu)

nodex() { ip netns exec "$NODE" "$@"; }
# time_ms BREAK FIXED: run BREAK, then poll FIXED every 10 ms (at most 10 s); prints ms
time_ms() {
	local t0 now
	eval "$1"
	t0=$(date +%s%N)
	while ! eval "$2" >/dev/null 2>&1; do
		now=$(date +%s%N)
		[ $(((now - t0) / 1000000)) -lt 10000 ] || { echo 10000; return; }
		sleep 0.01
	done
	echo $((($(date +%s%N) - t0) / 1000000))
}
stats() { sort -n | awk '{v[NR] = $1} END {printf "median %5d ms   max %5d ms", v[int((NR + 1) / 2)], v[NR]}'; }

route=$(nodex ip route show proto 80 | awk '$2 == "dev" && $3 ~ /^cali/ && !f {print $1, $3; f = 1}')
read -r dst ifc <<<"$route"
chain=cali-tw-$ifc
rules=$(nodex iptables-legacy -S "$chain" | wc -l)
member=$(nodex ipset save | awk '$1 == "add" && $2 ~ /^cali40s:/ && $3 ~ /^[0-9.]+$/ && !f {print $2, $3; f = 1}')
read -r set addr <<<"$member"
declare -A took
for _ in $(seq "$ROUNDS"); do
	took[route]+="$(time_ms "nodex ip route del $dst" "nodex ip route show $dst proto 80 | grep -q $ifc") "
	took[chain]+="$(time_ms "nodex iptables-legacy -w -F $chain" "[ \$(nodex iptables-legacy -S $chain | wc -l) -eq $rules ]") "
	took[ipset]+="$(time_ms "nodex ipset del $set $addr" "nodex ipset test $set $addr") "
	took[sysctl]+="$(time_ms "nodex sysctl -qw net.ipv4.conf.$ifc.proxy_arp=0" "[ \$(nodex cat /proc/sys/net/ipv4/conf/$ifc/proxy_arp) = 1 ]") "
	sleep 1
done
printf 'felix drift repair (release build; %d local / %d remote endpoints, %d policies;\n' \
	"$LOCAL" "$REMOTE" "$POLICIES"
printf '  %s iptables rules, %s ip sets)\n' "$(nodex iptables-legacy-save | grep -c '^-A')" \
	"$(nodex ipset list -n | wc -l)"
printf '  idle CPU over %d s: %s%% of a core with the 1 s checks; %s%% without (baseline)\n' \
	"$WINDOW" "$with" "$base"
for k in route chain ipset sysctl; do
	printf '  %-28s %s   (%d rounds)\n' "$k" "$(tr ' ' '\n' <<<"${took[$k]}" | grep . | stats)" \
		"$ROUNDS"
done
printf '  felix_dataplane_drift_repairs_total: %s\n' "$(nodex curl -s http://localhost:9091/metrics |
	awk '/^felix_dataplane_drift_repairs_total/ {printf "%s=%s ", $1, $2}')"
stop_felix
