#!/usr/bin/env bash
# The nftables backend beside others: kube-proxy's nftables table and iptables-nft's rules
# (which make felix's Auto choose nftables) survive every apply and a restart byte for byte,
# felix's own tables being brindle-filter and brindle-nat; a run's leftovers on the other
# backend (a cali- chain, a hook rule, an ip set of iptables-legacy) are removed once the
# nftables rules are in; with 200 endpoints and 50 policies a restarted felix commits nothing
# and an established TCP connection lives through it; a rule of felix's that someone deletes
# comes back.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/policy.sh"

PT_NO_FELIX=1 pt_node FELIX_IPTABLESBACKEND=Auto
# What a run on the legacy backend left.
ip netns exec "$NODE" sh -e <<'SH'
iptables-legacy -N cali-FORWARD
iptables-legacy -A FORWARD -m comment --comment "cali:AAAAAAAAAAAAAAAA" -j cali-FORWARD
iptables-legacy -A FORWARD -m comment --comment "someone else's" -j ACCEPT
ipset create cali40s:stale hash:net
SH
# kube-proxy in its nftables mode, and iptables-nft (Docker's way).
ip netns exec "$NODE" nft -f - <<'NFT'
table ip kube-proxy {
	chain filter-forward {
		type filter hook forward priority -110; policy accept;
		ct state invalid drop
	}
	chain services {
		ip daddr 10.96.0.1 tcp dport 443 counter return
	}
}
NFT
ip netns exec "$NODE" iptables-nft -A FORWARD -m comment --comment "docker-ish" -j ACCEPT
ip netns exec "$NODE" iptables-nft -t nat -A POSTROUTING -m mark --mark 0x4000/0x4000 -j MASQUERADE
# everything but felix's tables, counters left out
strip() { sed -E 's/counter packets [0-9]+ bytes [0-9]+/counter/'; }
foreign() {
	ip netns exec "$NODE" nft list ruleset | strip |
		awk '/^table / { skip = ($3 ~ /^brindle-/) } !skip'
}
ours() {
	for t in brindle-filter brindle-nat; do ip netns exec "$NODE" nft list table ip "$t"; done | strip
}
FOREIGN=$(foreign)
LEGACY_FOREIGN=$(pt_save -t filter | grep -v -e 'cali:' -e '^:cali-' | sed 's/\[[0-9]*:[0-9]*\]//')

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
grep -q 'rule backend: nftables (detected; configured Auto)' "$BT_DIR"/felix-*.log ||
	bt_fail "felix did not choose nftables beside kube-proxy's table: $(grep 'rule backend' "$BT_DIR"/felix-*.log)"
FELIX_IPTABLESBACKEND=NFT # for the policy helpers
pt_allowed r client 10.244.1.10 80
pt_denied r client 10.244.1.10 443
pt_settled
bt_expect_eq "foreign tables after the first apply" "$FOREIGN" "$(foreign)"
chains=$(pt_chains cali-)
[ "$chains" -gt 400 ] || bt_fail "expected the chains of 200 endpoints, found $chains"
# interface dispatch: one verdict map lookup per direction, an element per local interface
for m in cali-from-wl-dispatch:cali-fw- cali-to-wl-dispatch:cali-tw-; do
	map=$(ip netns exec "$NODE" nft list map ip brindle-filter "${m%%:*}")
	n=$(grep -o "\"cali[^\"]*\" : goto ${m#*:}cali" <<<"$map" | wc -l)
	[ "$n" -ge 200 ] || bt_fail "map ${m%%:*}: $n interfaces, want every local one: $map"
done
disp=$(ip netns exec "$NODE" nft list chain ip brindle-filter cali-from-wl-dispatch)
grep -q 'iifname vmap @cali-from-wl-dispatch' <<<"$disp" || bt_fail "no map lookup: $disp"
bt_expect_eq "rules of the dispatch chain (the lookup, the drop)" 2 "$(grep -c 'comment "cali:' <<<"$disp")"
bt_expect_eq "felix's tables, and no other of its" "brindle-filter brindle-nat" \
	"$(ip netns exec "$NODE" nft list tables | awk '$3 ~ /^brindle-/ {print $3}' | sort | xargs)"
# the legacy leftovers: gone once the nftables rules were in; someone else's rule stays
left() { pt_save | grep -c -e 'cali:' -e '^:cali-' || true; }
bt_wait_for 10 "the legacy backend's leftovers removed" test "$(left)" = 0
bt_expect_eq "iptables-legacy: someone else's rules stay" "$LEGACY_FOREIGN" \
	"$(pt_save -t filter | sed 's/\[[0-9]*:[0-9]*\]//')"
bt_expect_eq "no ip set of felix's left" 0 "$(ip netns exec "$NODE" ipset list -n | grep -c '^cali40' || true)"

# Everybody else writes too: our rules stay, theirs stay.
ip netns exec "$NODE" nft add rule ip kube-proxy services ip daddr 10.96.0.10 udp dport 53 counter return
ip netns exec "$NODE" iptables-nft -A FORWARD -m comment --comment "late" -j ACCEPT
FOREIGN=$(foreign)
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
bt_expect_eq "foreign tables after more applies" "$FOREIGN" "$(foreign)"
pt_allowed r client 10.244.1.10 80

# Restart under an established connection: nothing written.
SAVE=$(ours)
ip netns exec "$BT_PREFIX-r-client" "$PROBE" hold 10.244.1.10 80 --seconds 8 --interval 50 \
	>"$BT_DIR/hold.out" 2>&1 &
HOLD=$!
sleep 1
pt_stop_felix
sleep 1
pt_start_felix
pt_settled
wait "$HOLD" || bt_fail "the established connection broke across the restart: $(cat "$BT_DIR/hold.out")"
bt_expect_eq "felix's tables after the restart" "$SAVE" "$(ours)"
commits=$(bt_metric "$NODE" http://localhost:9091/metrics 'felix_iptables_commits_total{table="filter"}')
bt_expect_eq "no commit by the restarted felix" 0 "$commits"
bt_expect_eq "foreign tables after the restart" "$FOREIGN" "$(foreign)"
bt_log "restart: $(cat "$BT_DIR/hold.out"), no change in the kernel"

# Someone deletes our hook: it comes back at the next check.
handle=$(ip netns exec "$NODE" nft -a list chain ip brindle-filter FORWARD |
	sed -n 's/.*jump cali-FORWARD .*# handle \([0-9]*\)$/\1/p')
[ -n "$handle" ] || bt_fail "no jump to cali-FORWARD in brindle-filter FORWARD"
ip netns exec "$NODE" nft delete rule ip brindle-filter FORWARD handle "$handle"
hooked() {
	local c
	c=$(ip netns exec "$NODE" nft list chain ip brindle-filter FORWARD)
	grep -q 'jump cali-FORWARD' <<<"$c"
}
bt_wait_for 10 "the FORWARD hook restored" hooked
bt_expect_eq "foreign tables after the repair" "$FOREIGN" "$(foreign)"
pt_allowed r client 10.244.1.10 80
bt_pass
