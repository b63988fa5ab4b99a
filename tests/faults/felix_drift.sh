#!/usr/bin/env bash
# Someone else changes what felix programmed: a pod's route deleted, a
# cali-tw-* chain flushed (policy bypassed: a denied pod gets through), a
# member removed from an ip set (an allowed pod is cut off), a workload
# interface's proxy_arp turned off. Felix's refresh intervals are set to
# 5 minutes here, so what puts each back is the netlink event (routes,
# settings) or the 1 s drift check (iptables digest, ip set sizes), not a
# full read. Each is back within a generous bound (the goal, < 2 s, is
# measured by bench/felix-drift.sh), traffic is as policy says again, and
# felix_dataplane_drift_repairs_total counts it by kind.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/policy.sh"

pt_node FELIX_ROUTEREFRESHINTERVAL=300 FELIX_IPTABLESREFRESHINTERVAL=300 \
	FELIX_IPSETSREFRESHINTERVAL=300
pt_pod ns1 a 10.244.1.2 'app: a'
pt_pod ns1 b 10.244.1.3 'app: b'
pt_pod ns1 c 10.244.1.4 'app: c'
pt_apply <<'YAML'
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: b-from-a, namespace: ns1}
spec:
  podSelector: {matchLabels: {app: b}}
  policyTypes: [Ingress]
  ingress:
  - from: [{podSelector: {matchLabels: {app: a}}}]
    ports: [{port: 80}]
YAML
pt_allowed ns1 a 10.244.1.3 80
pt_denied ns1 c 10.244.1.3 80

drift() { bt_metric "$NODE" http://localhost:9091/metrics "felix_dataplane_drift_repairs_total{kind=\"$1\"}"; }
# repaired WHAT BOUND_S CHECK...: poll CHECK every 50 ms; log and return the time it took.
repaired() {
	local what=$1 bound=$2 t0 ms
	shift 2
	t0=$(date +%s%N)
	while ! "$@" >/dev/null 2>&1; do
		ms=$((($(date +%s%N) - t0) / 1000000))
		[ "$ms" -lt $((bound * 1000)) ] || bt_fail "$what: not repaired within ${bound}s"
		sleep 0.05
	done
	ms=$((($(date +%s%N) - t0) / 1000000))
	bt_log "$what: repaired in ${ms} ms"
}
nodex() { ip netns exec "$NODE" "$@"; }
B_IF=$(bt_cali ns1 b)

# 1. A pod's route deleted.
before=$(drift route)
nodex ip route del 10.244.1.3/32
repaired "route deleted" 5 sh -c "ip -n '$NODE' route show 10.244.1.3/32 proto 80 | grep -q $B_IF"
pt_allowed ns1 a 10.244.1.3 80
bt_expect_eq "route repairs counted" $((before + 1)) "$(drift route)"

# 2. b's to-workload chain flushed: c gets through until it is back.
before=$(drift iptables)
chain=cali-tw-$B_IF
rules=$(nodex iptables-legacy -S "$chain" | wc -l)
[ "$rules" -gt 2 ] || bt_fail "$chain has no rules: $(nodex iptables-legacy -S "$chain")"
nodex iptables-legacy -w -F "$chain"
repaired "chain $chain flushed" 5 sh -c "[ \$(ip netns exec '$NODE' iptables-legacy -S '$chain' | wc -l) -eq $rules ]"
pt_denied ns1 c 10.244.1.3 80
pt_allowed ns1 a 10.244.1.3 80
bt_expect_eq "iptables repairs counted" $((before + 1)) "$(drift iptables)"

# 3. a's address removed from the set b's rule admits it by.
before=$(drift ipset)
set=$(nodex ipset save | awk '$1 == "add" && $3 == "10.244.1.2" {print $2}' | head -1)
[ -n "$set" ] || bt_fail "no ip set holds 10.244.1.2: $(nodex ipset save | head -20)"
nodex ipset del "$set" 10.244.1.2
repaired "member of $set removed" 5 sh -c "ip netns exec '$NODE' ipset test '$set' 10.244.1.2"
pt_allowed ns1 a 10.244.1.3 80
bt_expect_eq "ip set repairs counted" $((before + 1)) "$(drift ipset)"

# 4. A workload interface's proxy_arp turned off.
before=$(drift sysctl)
nodex sysctl -qw "net.ipv4.conf.$B_IF.proxy_arp=0"
repaired "proxy_arp turned off" 5 sh -c "[ \$(ip netns exec '$NODE' cat /proc/sys/net/ipv4/conf/$B_IF/proxy_arp) = 1 ]"
bt_expect_eq "setting repairs counted" $((before + 1)) "$(drift sysctl)"

# Nothing else was written meanwhile: felix's own writes are not taken for someone else's.
sleep 3
for kind in route iptables ipset sysctl; do
	bt_expect_eq "$kind repairs after a quiet while" 1 "$(drift $kind)"
done
bt_pass
