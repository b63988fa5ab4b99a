#!/usr/bin/env bash
# The event log of the trust review, as the attack: a FelixConfiguration
# (anyone who can write one resource) pointed policyEventLogFile anywhere, and
# felix created the directory and appended lines partly chosen by pods, as
# root, following symbolic links. Now the log stays in the directory the
# operator's environment names (FELIX_POLICYEVENTLOGDIR): a path elsewhere is
# refused with a log line, a symbolic link or a FIFO there is refused without
# hanging felix, and the file felix makes is 0640 in a 0750 directory.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/policy.sh"

LOGDIR=$BT_DIR/logs # felix makes it
pt_node FELIX_POLICYEVENTLOGDIR="$LOGDIR"
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
felix_log() { cat "$BT_DIR"/felix-*.log; }
# evlog FILE: turn the event log on, writing to FILE, through the datastore.
evlog() {
	pt_apply <<YAML
apiVersion: projectcalico.org/v3
kind: FelixConfiguration
metadata: {name: default}
spec: {policyEventLogEnabled: true, policyEventLogFile: '$1'}
YAML
}
deny_one() { pt_denied e client 10.244.1.10 443; }

# 1. A path outside the directory: refused, the default name in the directory is used.
mkdir -p "$BT_DIR/outside"
evlog "$BT_DIR/outside/pwned.log"
bt_wait_for 10 "felix to refuse the path" sh -c \
	"cat '$BT_DIR'/felix-*.log | grep -q 'outside the event log directory'"
# felix says it refused the path before its event log is open again: denied until logged
deny_logged() { deny_one && grep -q '"dport":443' "$LOGDIR/policy-events.log"; }
bt_wait_for 10 "the deny event in the directory" deny_logged
[ ! -e "$BT_DIR/outside/pwned.log" ] || bt_fail "felix wrote outside its directory"
bt_expect_eq "the log file's mode" 640 "$(stat -c %a "$LOGDIR/policy-events.log")"
bt_expect_eq "the log directory's mode" 750 "$(stat -c %a "$LOGDIR")"

# 2. A symbolic link in the directory, to a file elsewhere: not followed.
echo "precious" >"$BT_DIR/victim"
ln -s "$BT_DIR/victim" "$LOGDIR/link.log"
evlog link.log
bt_wait_for 10 "the new log file in use" sh -c \
	"cat '$BT_DIR'/felix-*.log | grep -q 'connections to $LOGDIR/link.log'"
deny_one
bt_wait_for 10 "felix to refuse the link" sh -c \
	"cat '$BT_DIR'/felix-*.log | grep -q 'link.log: it is a symbolic link'"
bt_expect_eq "the link's target" "precious" "$(cat "$BT_DIR/victim")"

# 3. A FIFO: felix must not block on it.
mkfifo "$LOGDIR/fifo.log"
evlog fifo.log
bt_wait_for 10 "the FIFO in use" sh -c \
	"cat '$BT_DIR'/felix-*.log | grep -q 'connections to $LOGDIR/fifo.log'"
deny_one
bt_wait_for 10 "felix to refuse the FIFO" sh -c \
	"cat '$BT_DIR'/felix-*.log | grep -q 'fifo.log: it is not a regular file'"
bt_wait_for 5 "felix alive" bt_http_ok "$NODE" http://localhost:9099/liveness
pt_allowed e client 10.244.1.10 80 # and still programming and enforcing
bt_pass
