#!/usr/bin/env bash
# felix's memory at scale: 250 local endpoints and 5,000 remote nodes over
# VXLAN (5,000 routes, VTEP neighbours and FDB entries), against a private
# etcd, felix in a node namespace of its own. Reports VmRSS and VmHWM once
# felix is ready, next to an idle felix (empty datastore) of the same run.
# With REMOTE and POLICIES, the endpoints are the policy benchmark's cluster
# (bench/policy_scenario.h): LOCAL on this node, REMOTE elsewhere, POLICIES
# Kubernetes NetworkPolicies, all programmed as chains and ip sets.
#   sudo bench/felix-rss.sh [NODES] [LOCAL] [REMOTE POLICIES]
#   sudo bench/felix-rss.sh 5000 250 10000 500   # the policy issue's scale
# FELIX_WRAP runs the scaled felix under a tool, e.g. FELIX_WRAP="heaptrack -o /tmp/felix"
# (its RSS figures then include the tool's own).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
# BRINDLE_BUILD_DIR: a release build to measure (default: build/release, built first).
if [ -z "${BRINDLE_BUILD_DIR:-}" ]; then
	"$top/scripts/build" release >/dev/null
	export BRINDLE_BUILD_DIR=$top/build/release
fi
export BRINDLECTL=$BRINDLE_BUILD_DIR/ctl/brindlectl
. "$top/tests/lib/common.sh"
NODES=${1:-5000} LOCAL=${2:-250} REMOTE=${3:-} POLICIES=${4:-}

FELIX=$BT_BUILD_DIR/felix/brindle-felix

bt_netns node1
NODE=$BT_PREFIX-node1
bt_netns peer
ip -n "$NODE" link add eth0 type veth peer name eth0 netns "$BT_PREFIX-peer"
ip -n "$NODE" addr add 172.16.0.1/12 dev eth0
ip -n "$NODE" link set eth0 up
if [ -n "$REMOTE" ]; then
	"$BT_BUILD_DIR/bench/bench_felix_populate" --ifaces "$LOCAL"
else
	for i in $(seq 0 $((LOCAL - 1))); do printf 'cali%011d\n' "$i"; done
fi | awk '{printf "link add %s type veth peer name p%d\nlink set %s up\n", $1, NR, $1}' >"$BT_DIR/links"
ip -n "$NODE" -batch "$BT_DIR/links"

rss() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status"; }
run_felix() { # NAME [WRAPPER...]: start, wait until ready, print RSS and high-water mark in kB
	local name=$1
	shift
	bt_run_bg "$name" ip netns exec "$NODE" env NODENAME=node1 \
		BRINDLE_ETCD_ENDPOINTS="$BRINDLE_ETCD_ENDPOINTS" FELIX_LOGSEVERITYSCREEN=warning "$@" "$FELIX"
	local pid=${bt_pids[-1]} fpid
	bt_wait_for 120 "felix ready" bt_http_ok "$NODE" http://localhost:9099/readiness
	sleep 1
	fpid=$(pgrep -P "$pid" -f brindle-felix || pgrep -f "^$FELIX" | tail -1)
	local ready="$(rss "$fpid" VmRSS) $(rss "$fpid" VmHWM)" later=-
	if [ "$name" = felix-scale ] && [ -n "$REMOTE" ]; then
		later=$(one_change "$fpid")
	fi
	echo "$ready $later"
	kill "$fpid"
	wait "$pid" 2>/dev/null || true
}

# One later change (a NetworkPolicy added): felix's high-water mark, reset just before
# (clear_refs 5), once felix has written it: the change's own peak.
one_change() {
	cat >"$BT_DIR/change.yaml" <<'YAML'
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: rss-one-change, namespace: ns0}
spec:
  podSelector: {matchLabels: {app: a0}}
  ingress: [{ports: [{port: 4242, protocol: TCP}]}]
YAML
	echo 5 >"/proc/$1/clear_refs"
	"$BRINDLECTL" apply -f "$BT_DIR/change.yaml" >/dev/null
	bt_wait_for 60 "the change written" bash -c \
		"ip netns exec $NODE iptables-legacy-save -t filter 2>/dev/null | grep -q 4242 ||
		 ip netns exec $NODE nft list ruleset 2>/dev/null | grep -q 4242"
	sleep 1
	rss "$1" VmHWM
}

bt_start_etcd
read -r idle_rss idle_hwm _ < <(run_felix felix-idle)
start=$SECONDS
"$BT_BUILD_DIR/bench/bench_felix_populate" "$NODES" "$LOCAL" $REMOTE $POLICIES
echo "datastore populated in $((SECONDS - start)) s" >&2
# shellcheck disable=SC2086 # FELIX_WRAP is a command line
read -r rss hwm later < <(run_felix felix-scale ${FELIX_WRAP:-})
routes=$(ip -n "$NODE" route show proto 80 | wc -l)
fdbs=$(bridge -n "$NODE" fdb show dev vxlan.calico | grep -c permanent || true)
printf 'felix memory (release build)\n'
printf '  %-52s %7s kB RSS  %7s kB peak\n' "idle (empty datastore, baseline)" "$idle_rss" "$idle_hwm"
what="$LOCAL local endpoints, $NODES remote VXLAN nodes"
[ -n "$REMOTE" ] && what="$what, $REMOTE remote endpoints, $POLICIES policies"
printf '  %-52s %7s kB RSS  %7s kB peak\n' "$what" "$rss" "$hwm"
[ "$later" != - ] && printf '  %-52s %7s kB peak\n' "peak of one later NetworkPolicy (high-water mark reset)" "$later"
printf '  (felix programmed %s routes and %s FDB entries' "$routes" "$fdbs"
if [ -n "$REMOTE" ]; then
	printf ', %s iptables rules, %s ip sets' \
		"$(ip netns exec "$NODE" iptables-legacy-save | grep -c '^-A')" \
		"$(ip netns exec "$NODE" ipset list -n | wc -l)"
fi
printf ')\n' 

# The baseline for the table's share of the peak: the same rules and sets, as felix left
# them, loaded into a fresh namespace by the standard tool (iptables-legacy-restore or
# nft -f), whose own peak RSS is what building that table costs outside felix.
if [ -n "$REMOTE" ]; then
	bt_netns replay
	REPLAY=$BT_PREFIX-replay
	if [ "${FELIX_IPTABLESBACKEND:-}" = NFT ]; then
		ip netns exec "$NODE" nft list ruleset >"$BT_DIR/rules"
		tool="nft -f"
	else
		ip netns exec "$NODE" ipset save >"$BT_DIR/sets"
		ip netns exec "$REPLAY" ipset restore <"$BT_DIR/sets"
		{
			ip netns exec "$NODE" iptables-legacy-save -t filter
			ip netns exec "$NODE" iptables-legacy-save -t nat
		} >"$BT_DIR/rules"
		tool="iptables-legacy-restore"
	fi
	peak=$(ip netns exec "$REPLAY" /usr/bin/time -f %M $tool "$BT_DIR/rules" 2>&1 >/dev/null | tail -1)
	idle=$(ip netns exec "$REPLAY" /usr/bin/time -f %M $tool /dev/null 2>&1 >/dev/null | tail -1)
	if [ "${FELIX_IPTABLESBACKEND:-}" = NFT ]; then
		loaded="$(ip netns exec "$REPLAY" nft list ruleset | wc -l) lines of ruleset"
	else
		loaded="$(ip netns exec "$REPLAY" iptables-legacy-save | grep -c '^-A') rules"
	fi
	printf '  %-52s %7s kB peak (%s kB of it the tool at rest; %s loaded)\n' \
		"the same table loaded by $tool" "$peak" "$idle" "$loaded"
fi
