#!/usr/bin/env bash
# confd's part of the trust review, as the attacks: a BGPPeer written straight
# into etcd (no brindlectl validation) names a password file anywhere on the
# node, a symbolic link out of the secrets directory, a FIFO, or a variable of
# confd's own environment holding a datastore credential; a BGPConfiguration
# carries communities BIRD cannot parse; a password file holds more than a
# TCP MD5 key can. Each is refused with a log line naming the resource, no
# secret reaches bird_peers.conf, confd stays live and stops on SIGTERM, and
# the rendered configuration always passes BIRD's check: the legitimate
# peers (a file in the secrets directory, a Kubernetes-style mounted Secret,
# an allowed variable) get their sessions, with MD5 that BIRD accepts.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/confd.sh"

bt_start_etcd
SEC=$BT_DIR/secrets
mkdir -p "$SEC/peers" "$SEC/bgp-secrets/..2026_11_25_00_00_00.1"
printf 'file-secret\n' >"$SEC/peers/tor"
# A Secret volume as the kubelet mounts it: key -> ..data/key, ..data -> a timestamped dir.
printf 'mounted-secret' >"$SEC/bgp-secrets/..2026_11_25_00_00_00.1/tor2"
ln -s ..2026_11_25_00_00_00.1 "$SEC/bgp-secrets/..data"
ln -s ..data/tor2 "$SEC/bgp-secrets/tor2"
printf 'OUTSIDE-SECRET-VALUE\n' >"$BT_DIR/outside-secret"
ln -s "$BT_DIR/outside-secret" "$SEC/link"
mkfifo "$SEC/fifo"
head -c 300 /dev/zero | tr '\0' 'x' >"$SEC/long"

"$BRINDLECTL" apply -f - >/dev/null <<'YAML'
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pods}
spec: {cidr: 10.244.0.0/16}
---
apiVersion: projectcalico.org/v3
kind: Node
metadata: {name: node-1}
spec: {bgp: {ipv4Address: 10.99.0.11/24}}
YAML
confd_switch
confd_node node-1 10.99.0.11/24
# A datastore credential in confd's environment, and an allowed password variable.
export BRINDLE_ETCD_PASSWORD_FOR_TEST="ETCD-CREDENTIAL-VALUE"
export BRINDLE_BGP_PASSWORD_TOR3="env-secret"
confd_start node-1
confd_bird node-1
conf() { cat "$BT_DIR/node-1/bird_peers.conf"; }
confd_log() { cat "$BT_DIR/node-1-confd.log"; }
expect_logged() {
	bt_wait_for 10 "confd to log: $1" grep -qF -- "$1" "$BT_DIR/node-1-confd.log"
}
# peer NAME IP PASSWORD-JSON: a BGPPeer as an attacker with etcd credentials writes it.
peer() {
	bt_etcd_put "/calico/resources/v3/projectcalico.org/bgppeers/$1" \
		"{\"apiVersion\":\"projectcalico.org/v3\",\"kind\":\"BGPPeer\",\"metadata\":{\"name\":\"$1\"},\"spec\":{\"node\":\"node-1\",\"peerIP\":\"$2\",\"asNumber\":65001,\"password\":$3}}"
}

# The legitimate ones.
peer good-file 10.99.0.21 '{"file":"peers/tor"}'
peer good-abs 10.99.0.22 "{\"file\":\"$SEC/peers/tor\"}"
peer good-mounted 10.99.0.23 '{"secretKeyRef":{"name":"bgp-secrets","key":"tor2"}}'
peer good-env 10.99.0.24 '{"env":"BRINDLE_BGP_PASSWORD_TOR3"}'
# The attacks.
peer evil-machine-id 10.99.0.31 '{"file":"/etc/machine-id"}'
peer evil-link 10.99.0.32 '{"file":"link"}'
peer evil-dotdot 10.99.0.33 '{"file":"peers/../../outside-secret"}'
peer evil-env 10.99.0.34 '{"env":"BRINDLE_ETCD_PASSWORD_FOR_TEST"}'
peer evil-fifo 10.99.0.35 '{"file":"fifo"}'
peer evil-long 10.99.0.36 '{"file":"long"}'

expect_logged "bgppeer evil-machine-id: password cannot be read (/etc/machine-id is not inside the secrets directory"
expect_logged "bgppeer evil-link: password cannot be read ($SEC/link leads outside the secrets directory"
expect_logged "evil-dotdot"
expect_logged "bgppeer evil-env: password cannot be read (environment variable BRINDLE_ETCD_PASSWORD_FOR_TEST is not allowed"
expect_logged "bgppeer evil-fifo: password cannot be read ($SEC/fifo: not a regular file"
expect_logged "the password for 10.99.0.36 cannot be used: it is longer than 80 bytes"
bt_wait_for 10 "the good sessions rendered" sh -c "grep -c 'password \"' '$BT_DIR/node-1/bird_peers.conf' | grep -qx 4"

out=$(conf)
for secret in "$(cat /etc/machine-id 2>/dev/null || echo no-machine-id)" OUTSIDE-SECRET-VALUE \
	ETCD-CREDENTIAL-VALUE xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx; do
	case "$out" in *"$secret"*) bt_fail "a secret confd must not read reached bird_peers.conf" ;; esac
done
for p in 10_99_0_31 10_99_0_32 10_99_0_33 10_99_0_34 10_99_0_35 10_99_0_36; do
	case "$out" in *"_$p "*) bt_fail "session to $p rendered" ;; esac
done
bt_expect_contains "file password" 'password "file-secret"' "$out"
bt_expect_contains "mounted secret" 'password "mounted-secret"' "$out"
bt_expect_contains "allowed variable" 'password "env-secret"' "$out"
# BIRD took it: the good sessions exist (with MD5 keys the kernel accepts).
bt_wait_for 20 "BIRD to run the new peers" sh -c \
	"birdc -s '$BT_DIR/node-1/bird.ctl' show protocols | grep -q Node_10_99_0_24"
bird -p -c "$BT_DIR/node-1/bird.conf" || bt_fail "the rendered configuration fails BIRD's check"
bt_wait_for 5 "confd live" sh -c "ip netns exec $(confd_ns node-1) curl -sf --max-time 1 http://127.0.0.1:9098/liveness"

# Communities BIRD cannot parse: refused by brindlectl, skipped by confd when
# written raw; the configuration keeps passing BIRD's check.
for bad in '99999999999:1' '65000:1;' '1:2:3:4' '70000:1'; do
	if "$BRINDLECTL" apply -f - >/dev/null 2>"$BT_DIR/apply.err" <<YAML; then
apiVersion: projectcalico.org/v3
kind: BGPConfiguration
metadata: {name: default}
spec:
  prefixAdvertisements: [{cidr: 10.244.0.0/16, communities: ['$bad']}]
YAML
		bt_fail "brindlectl accepted community $bad"
	fi
	bt_expect_contains "the error for $bad" "is not a community" "$(cat "$BT_DIR/apply.err")"
done
bt_etcd_put /calico/resources/v3/projectcalico.org/bgpconfigurations/default \
	'{"apiVersion":"projectcalico.org/v3","kind":"BGPConfiguration","metadata":{"name":"default"},"spec":{"prefixAdvertisements":[{"cidr":"10.244.0.0/16","communities":["99999999999:1"]}]}}'
expect_logged "99999999999:1"
sleep 1
bird -p -c "$BT_DIR/node-1/bird.conf" || bt_fail "the configuration fails BIRD's check"
confd_birdc node-1 configure check | grep -q 'Configuration OK' ||
	bt_fail "BIRD's running configuration does not check"

# SIGTERM is honoured at once (a FIFO used to hold confd until it was written).
pid=${CONFD_PID[node-1]}
kill -TERM "$pid"
for _ in $(seq 30); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$pid" 2>/dev/null && bt_fail "confd did not stop within 3 s of SIGTERM"
bt_pass
