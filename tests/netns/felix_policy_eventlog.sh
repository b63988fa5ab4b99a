#!/usr/bin/env bash
# The connection event log: a connection denied by a policy is written as a
# JSON line naming the policy and rule; an allowed one too when asked for;
# the end-of-policies drop names the endpoint.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/policy.sh"

LOG=$BT_DIR/events.log
pt_node FELIX_POLICYEVENTLOGENABLED=true FELIX_POLICYEVENTLOGALLOWED=true \
	FELIX_POLICYEVENTLOGFILE="$LOG"
pt_ns e ""
pt_pod e server 10.244.1.10 "app: server"
pt_pod e client 10.244.1.11 "role: client"
pt_apply <<'YAML'
apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata: {name: guard, namespace: e}
spec:
  selector: app == 'server'
  ingress:
  - {action: Deny, protocol: TCP, destination: {ports: [443]}}
  - {action: Allow, protocol: TCP, destination: {ports: [80]}}
YAML
pt_denied e client 10.244.1.10 443
pt_allowed e client 10.244.1.10 80
pt_denied e client 10.244.1.10 8080
bt_wait_for 10 "a deny event" grep -q '"verdict":"deny".*"dport":443' "$LOG"
deny=$(grep '"verdict":"deny".*"dport":443' "$LOG" | head -1)
bt_log "$deny"
for want in '"verdict":"deny"' '"direction":"ingress"' '"protocol":"tcp"' '"src":"10.244.1.11"' \
	'"dst":"10.244.1.10"' '"policy":"np/e/guard"' '"rule":0' '"endpoint":"WorkloadEndpoint e/node1-k8s-server-eth0"'; do
	bt_expect_contains "deny event" "$want" "$deny"
done
bt_wait_for 10 "an allow event" grep -q '"verdict":"allow","direction":"ingress".*"dport":80' "$LOG"
bt_expect_contains "allow event" '"policy":"np/e/guard","rule":1' \
	"$(grep '"verdict":"allow","direction":"ingress".*"dport":80' "$LOG" | head -1)"
# the client's own egress is allowed by its namespace's profile
bt_expect_contains "profile allow" '"profile":"pr/kns.e"' \
	"$(grep '"verdict":"allow","direction":"egress".*"dport":80' "$LOG" | head -1)"
bt_wait_for 10 "the end-of-policies drop" grep -q '"verdict":"deny".*"dport":8080' "$LOG"
bt_expect_contains "no policy allowed" '"reason":"policies applied and none allowed"' \
	"$(grep '"verdict":"deny".*"dport":8080' "$LOG" | head -1)"
# A flood is rate-limited: 100 attempts at once write far fewer lines. Each logging rule
# (the deny for 443, the client's allowed egress) passes at most a burst of 20 and then
# 10 a second, so the bound grows with how long the flood took on a busy machine.
before=$(wc -l <"$LOG")
t0=$(date +%s%N)
tries=()
for _ in $(seq 100); do
	pt_try "$BT_PREFIX-e-client" 10.244.1.10 443 &
	tries+=($!)
done 2>/dev/null
wait "${tries[@]}" || true
sleep 1
after=$(wc -l <"$LOG")
secs=$((($(date +%s%N) - t0 + 999999999) / 1000000000))
bound=$((2 * (20 + 10 * secs)))
[ $bound -lt 200 ] || bound=199
bt_log "the flood took ${secs} s and wrote $((after - before)) lines (at most $bound)"
[ $((after - before)) -le $bound ] || bt_fail "the event log wrote $((after - before)) lines for a flood (more than $bound)"
bt_pass
