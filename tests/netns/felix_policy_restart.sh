#!/usr/bin/env bash
# Coexistence and restart: kube-proxy-like chains and rules in filter and nat
# survive every apply and a restart byte for byte; with 200 endpoints and 50
# policies a restarted felix changes nothing (iptables-legacy-save and ipset
# save are identical) and an established TCP connection lives through it.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/policy.sh"

PT_NO_FELIX=1 pt_node
# Somebody else's rules, first.
ip netns exec "$NODE" sh -e <<'SH'
for t in filter nat; do
	iptables-legacy -t $t -N KUBE-SERVICES
	iptables-legacy -t $t -A KUBE-SERVICES -d 10.96.0.1/32 -p tcp -m comment --comment "default/kubernetes:https" -m tcp --dport 443 -j RETURN
done
iptables-legacy -t filter -I INPUT -m conntrack --ctstate NEW -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
iptables-legacy -t filter -I FORWARD -m conntrack --ctstate NEW -j KUBE-SERVICES
iptables-legacy -t filter -A FORWARD -m comment --comment "docker-ish" -j ACCEPT
iptables-legacy -t filter -I OUTPUT -j KUBE-SERVICES
iptables-legacy -t nat -I PREROUTING -j KUBE-SERVICES
iptables-legacy -t nat -I OUTPUT -j KUBE-SERVICES
iptables-legacy -t nat -A POSTROUTING -m mark --mark 0x4000/0x4000 -j MASQUERADE
SH
FOREIGN=$(pt_foreign)

# 200 endpoints (2 of them real pods), 50 policies.
pt_scale_cluster
pt_pod r server 10.244.1.10 "app: server"
pt_pod r client 10.244.1.11 "role: client"
pt_apply <<'YAML'
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: server, namespace: r}
spec:
  podSelector: {matchLabels: {app: server}}
  ingress: [{from: [{podSelector: {matchLabels: {role: client}}}], ports: [{port: 80}]}]
YAML
pt_start_felix
pt_allowed r client 10.244.1.10 80
pt_denied r client 10.244.1.10 443
pt_settled
bt_expect_eq "foreign rules after the first apply" "$FOREIGN" "$(pt_foreign)"
chains=$(pt_save -t filter | grep -c '^:cali-')
[ "$chains" -gt 400 ] || bt_fail "expected the chains of 200 endpoints, found $chains"

# Everybody else writes too: our rules stay, theirs stay.
ip netns exec "$NODE" iptables-legacy -t filter -A KUBE-SERVICES -d 10.96.0.10/32 -p udp -m udp --dport 53 -j RETURN
FOREIGN=$(pt_foreign)
pt_apply <<'YAML'
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: p1, namespace: r}
spec:
  podSelector: {matchLabels: {app: app1}}
  ingress: [{ports: [{port: 9090}]}]
YAML
pt_settled
sleep 2.5 # and a refresh
bt_expect_eq "foreign rules after more applies" "$FOREIGN" "$(pt_foreign)"

# Restart under an established connection.
SAVE=$(pt_save | sed 's/\[[0-9]*:[0-9]*\]//')
SETS=$(ip netns exec "$NODE" ipset save | sort)
ip netns exec "$BT_PREFIX-r-client" "$PROBE" hold 10.244.1.10 80 --seconds 8 --interval 50 \
	>"$BT_DIR/hold.out" 2>&1 &
HOLD=$!
sleep 1
pt_stop_felix
sleep 1
pt_start_felix
pt_settled
wait "$HOLD" || bt_fail "the established connection broke across the restart: $(cat "$BT_DIR/hold.out")"
bt_expect_eq "iptables-legacy-save after the restart" "$SAVE" "$(pt_save | sed 's/\[[0-9]*:[0-9]*\]//')"
bt_expect_eq "ipset save after the restart" "$SETS" "$(ip netns exec "$NODE" ipset save | sort)"
commits=$(bt_metric "$NODE" http://localhost:9091/metrics 'felix_iptables_commits_total{table="filter"}')
bt_expect_eq "no commit by the restarted felix" 0 "$commits"
bt_expect_eq "foreign rules after the restart" "$FOREIGN" "$(pt_foreign)"
bt_log "restart: $(cat "$BT_DIR/hold.out"), no change in the kernel"

# Someone deletes our hooks: they come back at the next check.
ip netns exec "$NODE" iptables-legacy -t filter -D FORWARD "$(ip netns exec "$NODE" iptables-legacy -t filter -L FORWARD --line-numbers | awk '/cali-FORWARD/ {print $1; exit}')"
bt_wait_for 10 "the FORWARD hook restored" sh -c "ip netns exec '$NODE' iptables-legacy -S FORWARD | grep -q -- '-j cali-FORWARD'"
bt_expect_eq "foreign rules after the repair" "$FOREIGN" "$(pt_foreign)"
bt_pass
