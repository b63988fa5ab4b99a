#!/usr/bin/env bash
# The install docs/README.md describes, from this test's build tree: cmake
# --install into a temporary prefix, then a two-node lab from that prefix
# only (PATH without the build tree or the prefix: brindlectl finds
# brindle-felix, brindle-confd, brindle-cni, brindle-ipam and brindle-probe
# beside itself, confd its templates), a pod on each node reaching the other,
# lab down leaving nothing; and brindle-confd --once from the prefix
# rendering with the prefix's templates.
. "$(dirname "$0")/../lib/common.sh"

PREFIX=$BT_DIR/prefix
cmake --install "$BT_BUILD_DIR" --prefix "$PREFIX" >"$BT_DIR/install.log" 2>&1 ||
	bt_fail "cmake --install failed: $(tail -5 "$BT_DIR/install.log")"
for f in bin/brindlectl bin/brindle-probe sbin/brindle-felix sbin/brindle-confd \
	lib/cni/brindle-cni lib/cni/brindle-ipam; do
	[ -x "$PREFIX/$f" ] || bt_fail "cmake --install did not install $f"
done
for f in share/brindle/bgp-templates/bird.conf.mustache share/brindle/cni/10-brindle.conflist; do
	[ -f "$PREFIX/$f" ] || bt_fail "cmake --install did not install $f"
done

BRINDLECTL=$PREFIX/bin/brindlectl
export PATH=/usr/local/sbin:/usr/sbin:/sbin:/usr/local/bin:/usr/bin:/bin
unset BRINDLE_CONFD_TEMPLATES
LAB_PREFIX=li
. "$(dirname "$0")/../lib/lab.sh"

cat >"$BT_DIR/topo.yaml" <<YAML
name: $LAB
subnets: [{name: a, cidr: 192.168.100.0/24}]
ipPools: [{cidr: 10.244.0.0/16, blockSize: 26}]
nodes: [{name: node1, subnet: a}, {name: node2, subnet: a}]
namespaces: [{name: x}]
pods:
  - {namespace: x, name: a, node: node1, ports: [{name: http, containerPort: 80}]}
  - {namespace: x, name: b, node: node2, ports: [{name: http, containerPort: 80}]}
YAML
out=$(lab up "$BT_DIR/topo.yaml" --timeout 60 2>&1) || bt_fail "lab up from the prefix failed: $out"

# Every process of the lab is the prefix's.
seen=0
while read -r pid _ name; do
	exe=$(readlink "/proc/$pid/exe" 2>/dev/null || true)
	cmd=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null || true)
	case "$name" in
	*-felix | *-confd | pod-*)
		seen=$((seen + 1))
		case "$exe $cmd" in
		*"$PREFIX/"*) ;;
		*) bt_fail "lab process $name does not run from the prefix: $exe $cmd" ;;
		esac
		case "$exe $cmd" in *"$BT_BUILD_DIR/"*) bt_fail "$name runs from the build tree: $cmd" ;; esac
		;;
	esac
done <"$STATE/pids"
bt_expect_eq "felix, confd and the pods' probes seen" 6 "$seen"
grep -q "templates $PREFIX/share/brindle/bgp-templates" "$STATE/node1-confd.log" ||
	bt_fail "the lab's confd did not use the prefix's templates: $(head -3 "$STATE/node1-confd.log")"

verdict=$(lab probe "$LAB" --from x/a --to x/b --proto tcp --port 80 -o json)
bt_expect_contains "a pod on node1 reaches a pod on node2" '"result":"allowed"' "$verdict"

# brindle-confd --once from the prefix, without --templates, against the lab's etcd.
mkdir "$BT_DIR/confd-out"
set +e
out=$(BRINDLE_ETCD_ENDPOINTS="unix:$STATE/etcd/etcd.sock:0" timeout 30 \
	"$PREFIX/sbin/brindle-confd" --once --node node1 --output-dir "$BT_DIR/confd-out" \
	--bird-socket "$BT_DIR/no-bird.ctl" --health-port 0 2>&1)
set -e
bt_expect_contains "confd --once names the prefix's templates" \
	"templates $PREFIX/share/brindle/bgp-templates" "$out"
[ -s "$BT_DIR/confd-out/bird.conf" ] || bt_fail "confd --once rendered no bird.conf: $out"
# Without them it says which flag to use.
mv "$PREFIX/share/brindle/bgp-templates" "$PREFIX/share/brindle/moved"
set +e
out=$("$PREFIX/sbin/brindle-confd" --once --node node1 --output-dir "$BT_DIR/confd-out" \
	--health-port 0 2>&1)
set -e
bt_expect_contains "a missing template directory names --templates" "--templates DIR" "$out"

lab_leaves_nothing
bt_pass
