#!/usr/bin/env bash
# A datastore change that renders a configuration BIRD rejects leaves the
# running configuration untouched: the files stay byte for byte, BIRD is not
# reconfigured and its sessions stay up; readiness says why, a metric counts
# it, the error is logged once. The fix goes through. The model keeps every
# resource within what BIRD takes (tests/integration/test_confd_bird_check),
# so what renders a bad configuration here is an operator's template that
# breaks only with some data (a keepalive longer than the hold time, for
# peers with a password); a template that does not render at all is refused
# the same way. And brindlectl refuses the keepalive that used to get through.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/confd.sh"

bt_start_etcd
cat >"$BT_DIR/cluster.yaml" <<'YAML'
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pods}
spec: {cidr: 10.244.0.0/16}
---
apiVersion: projectcalico.org/v3
kind: Node
metadata: {name: node-1}
spec: {bgp: {ipv4Address: 10.99.0.11/24}}
---
apiVersion: projectcalico.org/v3
kind: Node
metadata: {name: node-2}
spec: {bgp: {ipv4Address: 10.99.0.12/24}}
YAML
"$BRINDLECTL" apply -f "$BT_DIR/cluster.yaml" >/dev/null
confd_affinity node-2 10.244.2.0/26
confd_switch
mkdir -p "$BT_DIR/tpl" "$BT_DIR/secrets"
cp "$CONFD_TEMPLATES"/*.mustache "$BT_DIR/tpl/"
sed -i 's/^{{#password}}$/{{#password}}\n\tkeepalive time 300;/' "$BT_DIR/tpl/_session.mustache"
grep -q 'keepalive time 300' "$BT_DIR/tpl/_session.mustache" || bt_fail "template not changed"
printf 'peer-secret\n' >"$BT_DIR/secrets/router"
for i in 1 2; do
	confd_node "node-$i" "10.99.0.1$i/24"
done
confd_start node-1 --templates "$BT_DIR/tpl"
confd_start node-2
for i in 1 2; do
	confd_bird "node-$i"
done
bt_wait_for 60 "the mesh session to be Established" confd_all_established node-1 1
http() { ip netns exec "$(confd_ns node-1)" curl -s "http://127.0.0.1:9098/$1"; }
bt_wait_for 20 "node-1's confd to be ready" sh -c "ip netns exec $(confd_ns node-1) curl -sf http://127.0.0.1:9098/readiness"

sums() { (cd "$BT_DIR/node-1" && sha256sum bird*.conf); }
# confd's reloads of BIRD (not BIRD's reconfiguration time, which a late reload of an earlier
# configuration could move: issue 16's confd_mesh flake)
reloads() { http metrics | awk '$1 == "brindle_confd_bird_reloads_total{result=\"ok\"}" {print $2}'; }
before=$(sums)
reloads_before=$(reloads)
[ "${reloads_before:-0}" -ge 1 ] || bt_fail "no reload of BIRD counted yet: \"$reloads_before\""

# The model refuses a keepalive BIRD cannot take, with the field named.
if "$BRINDLECTL" apply -f - >/dev/null 2>"$BT_DIR/err" <<'YAML'; then
apiVersion: projectcalico.org/v3
kind: BGPPeer
metadata: {name: router}
spec: {node: node-1, peerIP: 10.99.0.1, asNumber: 65000, keepaliveTime: 5m}
YAML
	bt_fail "brindlectl took keepaliveTime: 5m"
fi
bt_expect_contains "the keepalive error" "spec.keepaliveTime: 5m is not a keepalive time" "$(cat "$BT_DIR/err")"

cat >"$BT_DIR/bad-peer.yaml" <<'YAML'
apiVersion: projectcalico.org/v3
kind: BGPPeer
metadata: {name: router}
spec: {node: node-1, peerIP: 10.99.0.1, asNumber: 65000, password: {file: router}}
YAML
"$BRINDLECTL" apply -f "$BT_DIR/bad-peer.yaml" >/dev/null
bt_wait_for 20 "readiness to report the rejected configuration" \
	sh -c "ip netns exec $(confd_ns node-1) curl -s http://127.0.0.1:9098/readiness | grep -q 'Keepalive time must be at most hold time'"
out=$(ip netns exec "$(confd_ns node-1)" curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:9098/readiness)
bt_expect_eq "readiness status" 503 "$out"
out=$(http metrics)
bt_expect_contains "rejections counted" "brindle_confd_config_rejected_total 1" "$out"
bt_expect_contains "config marked invalid" "brindle_confd_config_valid 0" "$out"

# Another change that still renders a rejected configuration: still one log line.
"$BRINDLECTL" apply -f - >/dev/null <<'YAML'
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: more-pods}
spec: {cidr: 10.245.0.0/16}
YAML
bt_wait_for 20 "the second rejection" sh -c "ip netns exec $(confd_ns node-1) curl -s http://127.0.0.1:9098/metrics | grep -q 'brindle_confd_config_rejected_total 2'"
bt_expect_eq "files untouched" "$before" "$(sums)"
bt_expect_eq "BIRD not reloaded" "$reloads_before" "$(reloads)"
confd_established node-1 Mesh_10_99_0_12 || bt_fail "the mesh session went down"
n=$(grep -c "BIRD rejects the rendered configuration" "$BT_DIR/node-1-confd.log")
bt_expect_eq "the error is logged once" 1 "$n"
out=$(find "$BT_DIR/node-1" -name '.stage-*')
bt_expect_eq "no staging directories left" "" "$out"

# The fix is installed and loaded.
sed -i 's/password: {file: router}/keepaliveTime: 20s/' "$BT_DIR/bad-peer.yaml"
"$BRINDLECTL" apply -f "$BT_DIR/bad-peer.yaml" >/dev/null
bt_wait_for 20 "node-1's confd to be ready again" sh -c "ip netns exec $(confd_ns node-1) curl -sf http://127.0.0.1:9098/readiness"
grep -q "keepalive time 20;" "$BT_DIR/node-1/bird_peers.conf" || bt_fail "the fixed peer is not in the configuration"
out=$(confd_birdc node-1 show protocols Node_10_99_0_1)
bt_expect_contains "BIRD runs the new configuration" "Node_10_99_0_1" "$out"
confd_established node-1 Mesh_10_99_0_12 || bt_fail "the mesh session went down"

# A template set that does not render: --once refuses and installs nothing.
mkdir "$BT_DIR/templates" "$BT_DIR/out"
cp "$CONFD_TEMPLATES"/*.mustache "$BT_DIR/templates/"
sed -i 's/{{router_id}}/{{router_ip}}/' "$BT_DIR/templates/bird.conf.mustache"
set +e
out=$(ip netns exec "$(confd_ns node-1)" "$CONFD" --once --node node-1 --output-dir "$BT_DIR/out" \
	--templates "$BT_DIR/templates" --bird-socket "$BT_DIR/out/none.ctl" --health-port 0 2>&1)
rc=$?
set -e
bt_expect_eq "--once with a broken template" 1 "$rc"
bt_expect_contains "the error names the template" 'bird.conf.mustache: line 6: "router_ip" is not defined' "$out"
bt_expect_eq "nothing installed" "" "$(ls "$BT_DIR/out")"
confd_stop_all
bt_pass
