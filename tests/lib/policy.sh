# Policy tests' shared setup (source after common.sh): one node namespace
# with felix and a private etcd, an "outside" namespace on the node's uplink,
# pods as namespaces wired like the CNI plugin wires them, each running
# brindle-probe as its workload, and checks that make real connections.
#
#   pt_node [FELIX_ENV...]       the node, the outside, the pool, felix
#   pt_pod NS POD IP 'LABELS' ['PORTS'] [SA]  a pod serving TCP 80 443 5978 6379 8080 9090, UDP 53;
#                                IP "V4,V6" gives it an IPv6 address too, wired as brindle-cni
#                                wires one (default route via the host side's link-local);
#                                with SA, in that service account (its label, and the profile
#                                ksa.NS.SA after kns.NS, as the Kubernetes datastore maps a pod)
#   pt_label NS POD IP 'LABELS' ['PORTS'] [SA]  the same endpoint, relabelled
#   pt_ns NS 'LABELS'            a Namespace resource
#   pt_apply <<YAML              brindlectl apply -f -
#   pt_allowed FROM_NS FROM_POD IP PORT [tcp|udp]   eventually connects
#   pt_denied  FROM_NS FROM_POD IP PORT [tcp|udp]   eventually times out (dropped)
#   pt_settled                   felix has applied everything written so far
# Addresses: node 192.168.100.11 (eth0), outside 192.168.100.1 and 10.0.0.5,
# pods from 10.244.1.0/26.

FELIX=$BT_BUILD_DIR/felix/brindle-felix
NODE=$BT_PREFIX-node
OUT=$BT_PREFIX-out
PT_FELIX_ENV=()

# Before a pass: felix's nftables writer had no batch refused. A refused batch is repaired by
# the read after it, so a test's checks would pass anyway; the refusal is the bug.
bt_pass_check() {
	local refused
	refused=$(grep -h "(nothing written)" "$BT_DIR"/felix*.log 2>/dev/null || true)
	[ -z "$refused" ] || bt_fail "felix had a batch refused: $refused"
}

pt_node() {
	PT_FELIX_ENV=("$@")
	bt_start_etcd
	bt_netns node
	bt_netns out
	ip -n "$NODE" link add eth0 type veth peer name eth0 netns "$OUT"
	ip -n "$NODE" addr add 192.168.100.11/24 dev eth0
	ip -n "$NODE" link set eth0 up
	ip -n "$OUT" addr add 192.168.100.1/24 dev eth0
	ip -n "$OUT" addr add 10.0.0.5/24 dev lo
	ip -n "$OUT" addr add 10.0.1.5/24 dev lo
	ip -n "$OUT" link set eth0 up
	ip -n "$OUT" route add 10.244.0.0/16 via 192.168.100.11
	ip -n "$NODE" route add default via 192.168.100.1
	ip netns exec "$NODE" sysctl -qw net.ipv4.ip_forward=1
	"$BRINDLECTL" apply -f - >/dev/null <<'YAML'
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pool}
spec: {cidr: 10.244.0.0/16}
---
apiVersion: projectcalico.org/v3
kind: Node
metadata: {name: node1}
spec: {bgp: {ipv4Address: 192.168.100.11/24}}
YAML
	bt_affinity node1 10.244.1.0/26
	bt_affinity node1 10.244.1.64/26
	bt_affinity node1 10.244.2.0/24
	# The outside serves too: TCP 80 and the endPort range's edges, UDP 53.
	bt_run_bg out-probe ip netns exec "$OUT" "$PROBE" serve --tcp 80 --tcp 5978 --tcp 31999 \
		--tcp 32000 --tcp 32768 --tcp 32769 --udp 53
	[ "${PT_NO_FELIX:-0}" = 1 ] || pt_start_felix
}

# The pods' IPv6 pool, fd00:10:244::/48 (dual-stack pods: pt_pod NS NAME "V4,fd00:10:244:1::N").
pt_pool6() {
	"$BRINDLECTL" apply -f - >/dev/null <<'YAML'
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pool6}
spec: {cidr: "fd00:10:244::/48", blockSize: 122}
YAML
}

pt_start_felix() {
	bt_run_bg "felix-$SECONDS" ip netns exec "$NODE" env NODENAME=node1 \
		BRINDLE_ETCD_ENDPOINTS="$BRINDLE_ETCD_ENDPOINTS" FELIX_PROMETHEUSMETRICSENABLED=true \
		FELIX_IPTABLESREFRESHINTERVAL=2 FELIX_IPSETSREFRESHINTERVAL=2 \
		FELIX_DEFAULTENDPOINTTOHOSTACTION=Accept "${PT_FELIX_ENV[@]}" "$FELIX"
	FELIX_PID=${bt_pids[-1]}
	bt_wait_for 30 "felix ready" bt_http_ok "$NODE" http://localhost:9099/readiness
}

pt_stop_felix() {
	kill "$FELIX_PID"
	for _ in $(seq 50); do kill -0 "$FELIX_PID" 2>/dev/null || return 0; sleep 0.1; done
	bt_fail "felix did not stop"
}

pt_ns() {
	"$BRINDLECTL" apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Namespace
metadata: {name: $1, labels: {$2}}
YAML
}

pt_apply() {
	"$BRINDLECTL" apply -f - >/dev/null || bt_fail "brindlectl apply failed"
}

pt_pod() {
	local ns=$1 pod=$2 ip=${3%%,*} ip6=""
	[ "$3" = "$ip" ] || ip6=${3#*,}
	bt_pod "$NODE" "$ns" "$pod" "$ip"
	if [ -n "$ip6" ]; then
		local podns="$BT_PREFIX-$ns-$pod" cali
		cali=$(bt_cali "$ns" "$pod")
		# (the kernel derives this link-local from the veth's MAC ee:ee:ee:ee:ee:ee too)
		ip -n "$NODE" addr replace fe80::ecee:eeff:feee:eeee/64 dev "$cali" nodad
		ip -n "$podns" addr add "$ip6/128" dev eth0 nodad
		ip -n "$podns" -6 route add default via fe80::ecee:eeff:feee:eeee dev eth0
	fi
	PT_MAC=$BT_POD_MAC pt_label "$@"
	bt_run_bg "probe-$ns-$pod" ip netns exec "$BT_PREFIX-$ns-$pod" "$PROBE" serve --tcp 80 \
		--tcp 443 --tcp 5978 --tcp 6379 --tcp 8080 --tcp 9090 --udp 53
}

# Write a pod's endpoint (pt_pod does; again to relabel it, same spec).
pt_label() {
	local ns=$1 pod=$2 ip=$3 labels=$4 ports=${5:-[]} sa=${6:-}
	local sa_label="" sa_spec="" profiles="kns.$ns" mac="" nets="${3%%,*}/32"
	[ "$ip" = "${ip%%,*}" ] || nets="$nets, '${ip#*,}/128'"
	if [ -n "$sa" ]; then
		sa_label=", projectcalico.org/serviceaccount: $sa"
		sa_spec=", serviceAccountName: $sa"
		profiles="kns.$ns, ksa.$ns.$sa"
	fi
	[ -z "${PT_MAC:-}" ] || mac=", mac: '$PT_MAC'"
	"$BRINDLECTL" apply -f - >/dev/null <<YAML
apiVersion: projectcalico.org/v3
kind: WorkloadEndpoint
metadata:
  name: node1-k8s-$pod-eth0
  namespace: $ns
  labels: {$labels${labels:+, }projectcalico.org/namespace: $ns, projectcalico.org/orchestrator: k8s$sa_label}
spec: {node: node1, orchestrator: k8s, pod: $pod, endpoint: eth0, ports: $ports$mac$sa_spec,
  interfaceName: $(bt_cali "$ns" "$pod"), ipNetworks: [$nets], profiles: [$profiles]}
YAML
}

# One attempt: 0 connected, 1 refused, 2 timed out (dropped).
pt_try() {
	local src=$1 ip=$2 port=$3 proto=${4:-tcp}
	ip netns exec "$src" "$PROBE" "$proto" "$ip" "$port" --timeout 700 >/dev/null 2>&1
}

# The source of a check: "out" (the outside), "node" (the node itself) or NS POD.
pt_src() {
	case $1 in
	out) echo "$OUT" ;;
	node) echo "$NODE" ;;
	*) echo "$BT_PREFIX-$1-$2" ;;
	esac
}

pt_allowed() {
	local src
	if [ "$1" = out ] || [ "$1" = node ]; then
		src=$(pt_src "$1")
		shift 1
	else
		src=$(pt_src "$1" "$2")
		shift 2
	fi
	local ip=$1 port=$2 proto=${3:-tcp} deadline=$((SECONDS + 15)) r=0
	while :; do
		pt_try "$src" "$ip" "$port" "$proto" && return 0
		[ $SECONDS -lt $deadline ] || {
			pt_dump_rules
			bt_fail "${src#"$BT_PREFIX"-} -> $ip:$port/$proto should connect"
		}
		sleep 0.2
	done
}

pt_denied() {
	local src
	if [ "$1" = out ] || [ "$1" = node ]; then
		src=$(pt_src "$1")
		shift 1
	else
		src=$(pt_src "$1" "$2")
		shift 2
	fi
	local ip=$1 port=$2 proto=${3:-tcp} deadline=$((SECONDS + 15)) r
	while :; do
		r=0
		pt_try "$src" "$ip" "$port" "$proto" || r=$?
		[ $r -eq 2 ] && return 0
		[ $SECONDS -lt $deadline ] || {
			pt_dump_rules
			bt_fail "${src#"$BT_PREFIX"-} -> $ip:$port/$proto should be dropped (probe said $r)"
		}
		sleep 0.2
	done
}

# Policy takes effect after felix applied it; checks poll anyway, this makes
# "still allowed" checks meaningful: wait until felix is idle again.
pt_settled() {
	local before after
	before=$(bt_metric "$NODE" http://localhost:9091/metrics felix_datastore_events_total)
	sleep 0.5
	after=$(bt_metric "$NODE" http://localhost:9091/metrics felix_datastore_events_total)
	while [ "$before" != "$after" ]; do
		before=$after
		sleep 0.5
		after=$(bt_metric "$NODE" http://localhost:9091/metrics felix_datastore_events_total)
	done
	sleep 0.3
}

# Our rules and chains, and everybody else's, as the kernel has them.
pt_save() { ip netns exec "$NODE" iptables-legacy-save "$@" | grep -v '^#'; }

# The rule backend under test: nft when FELIX_IPTABLESBACKEND is NFT (the netns-nft tier runs
# these tests so), else legacy. The helpers below read felix's filter rules in either.
pt_backend() {
	case "${FELIX_IPTABLESBACKEND:-}" in
	[Nn][Ff][Tt]) echo nft ;;
	*) echo legacy ;;
	esac
}
# What the node's kernel holds when a check fails, for the test's logs.
pt_dump_rules() {
	{
		ip netns exec "$NODE" iptables-legacy-save -c
		ip netns exec "$NODE" ipset list
		ip netns exec "$NODE" nft list ruleset
	} >"$BT_DIR/z-rules-at-failure.log" 2>&1
}
# felix's filter table as nft lists it (nft backend)
pt_nft() { ip netns exec "$NODE" nft list table ip brindle-filter 2>/dev/null; }
# pt_chains PREFIX_RE: how many of felix's filter chains have names starting so
pt_chains() {
	if [ "$(pt_backend)" = nft ]; then
		pt_nft | grep -c "^	chain $1" || true
	else
		pt_save -t filter | grep -c "^:$1" || true
	fi
}
# pt_sets: how many of felix's sets there are (in any of its tables)
pt_sets() {
	if [ "$(pt_backend)" = nft ]; then
		for t in brindle-filter brindle-nat; do
			ip netns exec "$NODE" nft list table ip "$t" 2>/dev/null
		done | grep -c '^	set cali40' || true
	else
		ip netns exec "$NODE" ipset list -n | grep -c '^cali40' || true
	fi
}
# pt_packets LEGACY_ERE NFT_ERE: the packets counted by felix's filter rules that match
pt_packets() {
	if [ "$(pt_backend)" = nft ]; then
		pt_nft | grep -E -- "$2" | sed -n 's/.*counter packets \([0-9]*\) .*/\1/p' |
			awk '{n += $1} END {print n + 0}'
	else
		pt_save -c -t filter | grep -E -- "$1" |
			awk '{split($1, a, /[\[:]/); n += a[2]} END {print n + 0}'
	fi
}
# pt_has_rule LEGACY_ERE NFT_ERE: does one of felix's filter rules match
pt_has_rule() { # (the listing is read whole: grep -q would cut the pipe under pipefail)
	local rules
	if [ "$(pt_backend)" = nft ]; then
		rules=$(pt_nft)
		grep -qE -- "$2" <<<"$rules"
	else
		rules=$(pt_save -t filter)
		grep -qE -- "$1" <<<"$rules"
	fi
}
pt_foreign() { pt_save | grep -v -e 'cali:' -e '^:cali-' | sed 's/\[[0-9]*:[0-9]*\]//'; }

# Namespace r with 198 WorkloadEndpoints of this node (no interfaces: only their rules) and 50
# Kubernetes NetworkPolicies over them: the scale of the restart and coexistence tests.
pt_scale_cluster() {
	pt_ns r "team: r"
{
	for i in $(seq 1 198); do
		cat <<YAML
---
apiVersion: projectcalico.org/v3
kind: WorkloadEndpoint
metadata:
  name: node1-k8s-w$i-eth0
  namespace: r
  labels: {app: app$((i % 25)), tier: t$((i % 5)), projectcalico.org/namespace: r, projectcalico.org/orchestrator: k8s}
spec: {node: node1, orchestrator: k8s, pod: w$i, endpoint: eth0, interfaceName: caliw$(printf '%010d' "$i"),
  ipNetworks: [10.244.2.$i/32], profiles: [kns.r],
  ports: [{name: http, protocol: TCP, port: 80}]}
YAML
	done
	for i in $(seq 1 50); do
		cat <<YAML
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: p$i, namespace: r}
spec:
  podSelector: {matchLabels: {app: app$((i % 25))}}
  ingress:
  - from: [{podSelector: {matchLabels: {tier: t$((i % 5))}}}, {ipBlock: {cidr: 172.16.$i.0/24}}]
    ports: [{port: http}, {port: 8080}, {protocol: UDP, port: 53}]
YAML
	done
} | pt_apply
}
