#!/usr/bin/env bash
# A pod floods felix's metrics port (FELIX_PROMETHEUSMETRICSHOST=0.0.0.0, as
# deployments set it) with thousands of silent TCP connections while felix
# runs with 512 descriptors (security review, finding 4). First the pod holds
# its connections; then it reopens every one felix closes, once a second.
# Felix must hold few descriptors and little CPU (nothing to speak of while the
# connections are only held), answer liveness within 1 s and a scrape from the
# node, and still program a policy change into iptables during the flood.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/policy.sh"

command -v python3 >/dev/null || bt_fail "python3 is needed to open the flood's connections"

FLOOD=${BT_FLOOD:-3000}
FD_LIMIT=512

PT_NO_FELIX=1 pt_node
bt_run_bg felix ip netns exec "$NODE" prlimit --nofile=$FD_LIMIT:$FD_LIMIT env NODENAME=node1 \
	BRINDLE_ETCD_ENDPOINTS="$BRINDLE_ETCD_ENDPOINTS" FELIX_PROMETHEUSMETRICSENABLED=true \
	FELIX_PROMETHEUSMETRICSHOST=0.0.0.0 FELIX_DEFAULTENDPOINTTOHOSTACTION=Accept "$FELIX"
FELIX_PID=${bt_pids[-1]}
bt_wait_for 30 "felix ready" bt_http_ok "$NODE" http://localhost:9099/readiness
bt_expect_eq "the pid is felix's" brindle-felix "$(cat /proc/"$FELIX_PID"/comm)"
bt_expect_contains "felix runs with $FD_LIMIT descriptors" \
	"Max open files            $FD_LIMIT" "$(cat /proc/"$FELIX_PID"/limits)"

pt_ns flood "team: red"
pt_pod flood attacker 10.244.1.20 "app: attacker"
ATTACKER=$BT_PREFIX-flood-attacker
bt_wait_for 15 "the pod to reach the metrics port" bt_http_ok "$ATTACKER" \
	http://192.168.100.11:9091/metrics

fds() { find /proc/"$FELIX_PID"/fd -mindepth 1 -maxdepth 1 2>/dev/null | wc -l; }
# utime + stime, in clock ticks (the command name has no spaces).
cpu_ticks() { awk '{print $14 + $15}' /proc/"$FELIX_PID"/stat; }
TICKS=$(getconf CLK_TCK)
opened() { awk '{print $1}' "$BT_DIR/flood.status"; }

# measure WHAT: two seconds of felix; sets max_fds and ticks.
measure() {
	local t0 n
	t0=$(cpu_ticks)
	max_fds=0
	for _ in $(seq 10); do
		n=$(fds)
		[ "$n" -gt "$max_fds" ] && max_fds=$n
		sleep 0.2
	done
	ticks=$(($(cpu_ticks) - t0))
	bt_log "$1: up to $max_fds descriptors (limit $FD_LIMIT), $ticks ticks of CPU in 2 s" \
		"($TICKS a second)"
}

# Everything is checked, then the problems are reported together.
problems=()

measure "at rest"
idle_ticks=$ticks

# The flood: non-blocking connects, silent. Once $BT_DIR/flood.reconnect exists,
# every connection the server closed is reopened, once a second. Progress goes
# to a file.
cat >"$BT_DIR/flood.py" <<'PY'
import os, select, socket, sys, time
host, port, n, status = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
reconnect = os.path.join(os.path.dirname(status), "flood.reconnect")

def conn():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setblocking(False)
    s.connect_ex((host, port))
    return s

socks = {}
for _ in range(n):
    s = conn()
    socks[s.fileno()] = s
opened = n
while True:
    p = select.poll()
    for s in socks.values():
        p.register(s, select.POLLIN | select.POLLOUT)
    up = closed = 0
    for fd, ev in p.poll(0):
        if ev & (select.POLLIN | select.POLLHUP | select.POLLERR):
            closed += 1
            if os.path.exists(reconnect):
                socks.pop(fd).close()
                s = conn()
                socks[s.fileno()] = s
                opened += 1
        elif ev & select.POLLOUT:
            up += 1
    with open(status + ".tmp", "w") as f:
        f.write("%d opened: %d established and open, %d closed by the server, %d in handshake\n"
                % (opened, up, closed, len(socks) - up - closed))
    os.replace(status + ".tmp", status)
    time.sleep(1)
PY
open0=$(cpu_ticks)
bt_run_bg flood ip netns exec "$ATTACKER" python3 "$BT_DIR/flood.py" 192.168.100.11 9091 \
	"$FLOOD" "$BT_DIR/flood.status"
bt_wait_for 30 "the flood's connections to be issued" test -s "$BT_DIR/flood.status"
sleep 1
bt_log "flood: $(cat "$BT_DIR/flood.status"); $(($(cpu_ticks) - open0)) ticks of CPU to take it"

# 1. The connections are held: felix holds few descriptors and is idle again.
measure "connections held"
[ "$max_fds" -le $((FD_LIMIT / 2)) ] ||
	problems+=("felix held $max_fds descriptors with the connections held (limit $FD_LIMIT)")
[ "$ticks" -le $((idle_ticks + TICKS / 10)) ] ||
	problems+=("felix used $ticks ticks of CPU in 2 s with the connections held ($idle_ticks at rest)")

# 2. Every connection closed is reopened: felix pays for the churn, within bounds.
touch "$BT_DIR/flood.reconnect"
sleep 2
n0=$(opened)
measure "connections reopened"
n=$(($(opened) - n0))
bt_log "the pod opened $n connections in about 2 s:" \
	"$((ticks * 1000000 / TICKS / (n > 0 ? n : 1))) us of felix's CPU each"
[ "$max_fds" -le $((FD_LIMIT / 2)) ] ||
	problems+=("felix held $max_fds descriptors with the connections reopened (limit $FD_LIMIT)")
# Under 40% of a core.
[ "$ticks" -le $((idle_ticks + TICKS * 2 * 4 / 10)) ] ||
	problems+=("felix used $ticks ticks of CPU in 2 s with the connections reopened ($idle_ticks at rest)")

# Liveness from the node, five times, each within 1 s; and a scrape.
worst=0 failed=0
for _ in $(seq 5); do
	if t=$(ip netns exec "$NODE" curl -sf -o /dev/null -w '%{time_total}' --max-time 1 \
		http://localhost:9099/liveness); then
		worst=$(awk -v a="$worst" -v b="$t" 'BEGIN {print (b > a) ? b : a}')
	else
		failed=$((failed + 1))
	fi
	sleep 0.2
done
bt_log "liveness: $((5 - failed)) of 5 probes answered within 1 s, the slowest in ${worst}s"
[ $failed -eq 0 ] || problems+=("$failed of 5 liveness probes got no answer within 1 s")
if t=$(ip netns exec "$NODE" curl -sf -o /dev/null -w '%{time_total}' --max-time 2 \
	http://localhost:9091/metrics); then
	bt_log "a scrape from the node answered in ${t}s"
else
	problems+=("a scrape from the node got no answer within 2 s")
fi

# A policy change is programmed while the flood goes on.
before=$(pt_save -t filter | grep -c '^:cali-pi-' || true)
bt_expect_eq "no policy chain before the policy" 0 "$before"
t_policy=$SECONDS
pt_apply <<'YAML'
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: quarantine, namespace: flood}
spec:
  podSelector: {matchLabels: {app: attacker}}
  policyTypes: [Ingress]
YAML
programmed=0
while [ $SECONDS -lt $((t_policy + 10)) ]; do
	if pt_save -t filter | grep -q '^:cali-pi-'; then
		programmed=1
		break
	fi
	sleep 0.2
done
if [ $programmed = 1 ]; then
	bt_log "policy programmed within $((SECONDS - t_policy)) s"
else
	problems+=("the policy was not programmed within 10 s")
fi
bt_log "flood at the end: $(cat "$BT_DIR/flood.status"); felix holds $(fds) descriptors"
kill -0 "$FELIX_PID" 2>/dev/null || problems+=("felix died")
[ ${#problems[@]} -eq 0 ] || bt_fail "$(printf '%s; ' "${problems[@]}")"
bt_pass
