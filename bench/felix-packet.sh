#!/usr/bin/env bash
# Per-packet cost of policy: iperf3 throughput and ping latency between two
# pods on one node (TCP and ICMP allowed to the server pod by a Calico
# policy, so every packet walks felix's dispatch chains, both endpoints'
# chains and the policy's), with 10 local endpoints programmed, then with
# 250, each time next to 10,000 remote endpoints and 500 Kubernetes
# NetworkPolicies (bench/policy_scenario.h). Goal: within 5%.
# Phases alternate (10, 250, 10, 250, ...), each on a fresh node. BACKEND legacy (iptables,
# the default) or nft (nftables: dispatch through verdict maps).
#   sudo bench/felix-packet.sh [ROUNDS] [BACKEND]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)

if [ "${1:-}" = --phase ]; then
	LOCAL=$2 # endpoints besides the two pods
	[ "$3" = nft ] && export FELIX_IPTABLESBACKEND=NFT || export FELIX_IPTABLESBACKEND=Legacy
	export BRINDLE_BUILD_DIR=$top/build/release BRINDLECTL=$top/build/release/ctl/brindlectl
	. "$top/tests/lib/common.sh"
	. "$top/tests/lib/policy.sh"
	# production refresh intervals (the test helpers re-read every 2 s, which costs CPU here)
	pt_node FELIX_LOGSEVERITYSCREEN=warning FELIX_IPTABLESREFRESHINTERVAL=90 FELIX_IPSETSREFRESHINTERVAL=90 \
		FELIX_IPTABLESBACKEND="$FELIX_IPTABLESBACKEND"
	"$BT_BUILD_DIR/bench/bench_felix_populate" --ifaces "$LOCAL" |
		awk '{printf "link add %s type veth peer name p%d\nlink set %s up\n", $1, NR, $1}' \
			>"$BT_DIR/links"
	[ "$LOCAL" -eq 0 ] || ip -n "$NODE" -batch "$BT_DIR/links"
	"$BT_BUILD_DIR/bench/bench_felix_populate" 0 "$LOCAL" 10000 500
	pt_ns perf "team: perf"
	pt_pod perf client 10.244.1.10 "role: client"
	pt_pod perf server 10.244.1.11 "role: server"
	pt_apply <<'YAML'
apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata: {name: server, namespace: perf}
spec:
  selector: role == 'server'
  types: [Ingress]
  ingress:
  - {action: Allow, protocol: TCP, source: {selector: role == 'client'}, destination: {ports: [5201]}}
  - {action: Allow, protocol: ICMP, source: {selector: role == 'client'}}
YAML
	CLIENT=$BT_PREFIX-perf-client SERVER=$BT_PREFIX-perf-server
	bt_run_bg iperf3 ip netns exec "$SERVER" iperf3 -s -p 5201
	# (brindle-probe wants its own server's answer: a bare TCP handshake here)
	bt_wait_for 30 "client to reach the server" ip netns exec "$CLIENT" timeout 1 \
		bash -c 'exec 3<>/dev/tcp/10.244.1.11/5201'
	# every endpoint's chains are in: the policy's rules and the dispatch for all of them
	want=$((LOCAL + 2))
	programmed() { test "$(pt_chains cali-tw-)" = "$want"; }
	bt_wait_for 120 "felix to program $want endpoints" programmed
	if [ "$3" = nft ]; then
		rules=$(pt_nft | grep -c 'comment "cali:')
	else
		rules=$(ip netns exec "$NODE" iptables-legacy-save | grep -c '^-A')
	fi
	ip netns exec "$CLIENT" ping -q -c 20 -i 0.01 10.244.1.11 >/dev/null # warm up
	gbps=$(ip netns exec "$CLIENT" iperf3 -c 10.244.1.11 -p 5201 -t 4 -O 1 -f g |
		awk '/receiver/ {print $(NF-2)}')
	# the median of 1,000 echo round trips (an average follows the machine's other load)
	rtt=$(ip netns exec "$CLIENT" taskset -c 1 ping -c 2000 -i 0.001 10.244.1.11 |
		sed -n 's/.*time=\([0-9.]*\) ms/\1/p' | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')
	# rules a forwarded packet is matched against: every rule's packet counter, summed, over
	# the packets that entered FORWARD (the counters of the whole filter table, so INPUT
	# and OUTPUT rules count too; the node itself is quiet)
	if [ "$3" = nft ]; then
		walked=$(pt_nft | awk '
			/^\tchain FORWARD / {fwd = 1; next}
			/counter packets/ {
				n = $0; sub(/.*counter packets /, "", n); sub(/ .*/, "", n)
				if (fwd) {entered = n; fwd = 0}
				sum += n
			}
			END {printf "%.1f", entered ? sum / entered : 0}')
	else
		walked=$(ip netns exec "$NODE" iptables-legacy -t filter -L -v -x -n | awk '
			/^Chain FORWARD/ {fwd = 1; next}
			fwd && $1 ~ /^[0-9]+$/ {entered = $1; fwd = 0}
			$1 ~ /^[0-9]+$/ {sum += $1}
			END {printf "%.1f", entered ? sum / entered : 0}')
	fi
	echo "$((LOCAL + 2)) $rules $gbps $rtt $walked"
	exit 0
fi

ROUNDS=${1:-3} BACKEND=${2:-legacy}
"$top/scripts/build" release >/dev/null
printf 'Per-packet cost between two pods (release build, %s), %d rounds\n' "$BACKEND" "$ROUNDS"
printf '  %-8s %-10s %-12s %-14s %s\n' endpoints rules 'iperf3 Gb/s' 'ping median ms' 'rules/packet'
declare -A g r
for round in $(seq "$ROUNDS"); do
	for local in 8 248; do
		read -r eps rules gbps rtt walked < <("$0" --phase "$local" "$BACKEND" | tail -1)
		printf '  %-8s %-10s %-12s %-14s %s\n' "$eps" "$rules" "$gbps" "$rtt" "$walked"
		g[$eps]="${g[$eps]:-} $gbps" r[$eps]="${r[$eps]:-} $rtt"
	done
done
median() { tr ' ' '\n' | grep . | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
g10=$(echo "${g[10]}" | median) g250=$(echo "${g[250]}" | median)
r10=$(echo "${r[10]}" | median) r250=$(echo "${r[250]}" | median)
awk -v g10="$g10" -v g250="$g250" -v r10="$r10" -v r250="$r250" 'BEGIN {
	printf "Medians: 10 endpoints %s Gb/s, %s ms; 250 endpoints %s Gb/s (%.3fx), %s ms (%.3fx)\n",
		g10, r10, g250, g250 / g10, r250, r250 / r10 }'
