#!/usr/bin/env bash
# The node image (scripts/image): built from Debian's packages and Brindle's
# release build into an OCI archive under 150 MB; its root filesystem, read
# from the archive's own layer, runs brindle-felix, brindle-confd, brindlectl,
# brindle-node and BIRD (podman run --rootfs, a podman storage of the
# test's own), has legacy iptables and runit; and its install-cni step,
# inside the test control plane's namespace with the brindle-node
# ServiceAccount's token, puts the plugins, their kubeconfig and the
# configuration into a host directory. Every program deploy/brindle-node.yaml
# starts (and its probes run) is in the image. A containerlab topology of
# `lab export-clab`, wired as containerlab wires it, runs from the image:
# etcd, the fabric and two nodes whose pods reach each other.

# podman's storage binds its overlay directory on itself, and does again whenever podman is
# asked anything, so unmounting at the end could lose the race (runs left such mounts under
# /tmp). In a mount namespace of the test's own, every mount goes with its last process.
if [ -z "${BT_IMAGE_MOUNTS:-}" ]; then
	BT_IMAGE_MOUNTS=private exec unshare --mount --propagation private bash "$0" "$@"
fi
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/kube.sh"

archive=$BT_DIR/brindle-node.oci.tar
"$BT_SOURCE_DIR/scripts/image" "$archive" >"$BT_DIR/image.log" 2>&1 ||
	bt_fail "scripts/image failed: $(tail -20 "$BT_DIR/image.log")"
bt_log "$(cat "$BT_DIR/image.log")"
mb=$(sed -n 's/.*(\([0-9]*\) MB uncompressed.*/\1/p' "$BT_DIR/image.log")
[ -n "$mb" ] && [ "$mb" -lt 150 ] || bt_fail "the image is ${mb:-?} MB uncompressed (goal < 150)"

# The root filesystem from the archive's layer: index -> manifest -> layer.
mkdir -p "$BT_DIR/oci" "$BT_DIR/rootfs"
tar -C "$BT_DIR/oci" -xf "$archive"
blob() { echo "$BT_DIR/oci/blobs/${1/://}"; }
manifest=$(blob "$(jq -r '.manifests[0].digest' "$BT_DIR/oci/index.json")")
layer=$(blob "$(jq -r '.layers[0].digest' "$manifest")")
tar -C "$BT_DIR/rootfs" -xf "$layer"
[ -x "$BT_DIR/rootfs/usr/sbin/brindle-felix" ] || bt_fail "no brindle-felix in the image"

export CONTAINERS_CONF=$BT_DIR/containers.conf
printf '[engine]\nevents_logger = "file"\nevents_logfile_path = "%s/events.log"\n' "$BT_DIR" >"$CONTAINERS_CONF"
pm() {
	podman --root "$BT_DIR/storage" --runroot "$BT_DIR/run" --tmpdir "$BT_DIR/tmp" \
		--runtime runc --cgroup-manager cgroupfs --events-backend file "$@"
}
mkdir -p "$BT_DIR/tmp"
# Whatever happens: no container, and none of podman's mounts under the test's directory.
image_cleanup() {
	local rc=$?
	set +e # every step, whatever the one before did
	pm rm -af -t 0 >/dev/null 2>&1
	# podman's storage mounts itself again when asked anything: until none is left
	local i
	for i in 1 2 3 4 5; do
		mounts=$(mount | awk -v d="$BT_DIR/" 'index($3, d) == 1 {print $3}' | sort -r)
		[ -n "$mounts" ] || break
		xargs -r umount -l <<<"$mounts"
		sleep 0.2
	done
	(exit $rc)
	bt_cleanup
}
trap image_cleanup EXIT
# limits this sandbox's runc may set (its default nofile is above what the machine allows)
limits=(--ulimit nofile=20000:20000 --ulimit nproc=1000:1000)
in_image() { pm run --rm "${limits[@]}" --network none --rootfs "$BT_DIR/rootfs" "$@"; }
bt_expect_contains "brindle-felix runs" "brindle-felix 0." "$(in_image /usr/sbin/brindle-felix --version 2>&1)"
bt_expect_contains "brindle-confd runs" "brindle-confd version 0." "$(in_image /usr/sbin/brindle-confd --version 2>&1)"
bt_expect_contains "brindlectl runs" "brindlectl version 0." "$(in_image /usr/bin/brindlectl version 2>&1)"
bt_expect_contains "brindle-node runs" "brindle-node 0." "$(in_image /usr/sbin/brindle-node version 2>&1)"
bt_expect_contains "BIRD 2 is there" "BIRD version 2." "$(in_image /usr/sbin/bird --version 2>&1)"
bt_expect_contains "iptables is the legacy one" "legacy" "$(in_image /usr/sbin/iptables --version 2>&1)"
[ -x "$BT_DIR/rootfs/usr/bin/runsvdir" ] || bt_fail "no runit (runsvdir) in the image"

# The install step, from the image, against the real API server as brindle-node.
kube_test_plane --no-crds
kc apply -k "$BT_SOURCE_DIR/deploy" >/dev/null
mkdir -p "$BT_DIR/host/opt/cni/bin" "$BT_DIR/host/etc/cni/net.d"
kube_sa_dir "$BT_DIR/sa" brindle-node
# podman started in the control plane's namespace; --network host is that namespace
nsenter --net="/var/run/netns/$NS" podman --root "$BT_DIR/storage" --runroot "$BT_DIR/run" \
	--tmpdir "$BT_DIR/tmp" --runtime runc --cgroup-manager cgroupfs --events-backend file \
	run --rm "${limits[@]}" --network host -v "$BT_DIR/host:/host" \
	-v "$BT_DIR/sa:/var/run/secrets/kubernetes.io/serviceaccount:ro" \
	-e KUBERNETES_SERVICE_HOST="$(kube_state "$K" API_ADDR)" \
	-e KUBERNETES_SERVICE_PORT="$(kube_state "$K" API_PORT)" \
	--rootfs "$BT_DIR/rootfs" /usr/sbin/brindle-node install-cni >"$BT_DIR/install.log" 2>&1 ||
	bt_fail "install-cni from the image: $(cat "$BT_DIR/install.log")"
for p in brindle-cni brindle-ipam; do
	[ -x "$BT_DIR/host/opt/cni/bin/$p" ] || bt_fail "install-cni put no $p on the host"
done
# Every program the manifests start is in the image, with the tools their probes use.
cat "$BT_SOURCE_DIR/deploy/brindle-node.yaml" - "$BT_SOURCE_DIR/deploy/uninstall.yaml" <<<"---" |
	kc apply --dry-run=client -o json -f - |
	jq -r '.items[] | select(.kind == "DaemonSet" or .kind == "Deployment") | .spec.template.spec |
		((.initContainers // []) + .containers)[] |
		.command[0], (.livenessProbe.exec.command[0] // empty)' | sort -u >"$BT_DIR/commands"
[ "$(wc -l <"$BT_DIR/commands")" -ge 5 ] || bt_fail "found too few commands in the manifests: $(cat "$BT_DIR/commands")"
while read -r cmd; do
	[ -x "$BT_DIR/rootfs$cmd" ] || bt_fail "the manifests run $cmd, which the image does not have"
done <"$BT_DIR/commands"
bt_log "the manifests' programs are in the image: $(tr '\n' ' ' <"$BT_DIR/commands")"
bt_expect_eq "the configuration on the host" "kubernetes" \
	"$(jq -r '.plugins[0].datastore_type' "$BT_DIR/host/etc/cni/net.d/10-brindle.conflist")"
bt_expect_eq "the plugin's kubeconfig is brindle-cni's" "system:serviceaccount:kube-system:brindle-cni" \
	"$(ip netns exec "$NS" "$KUBE_BIN/kubectl" --kubeconfig "$BT_DIR/host/etc/cni/net.d/brindle-kubeconfig" \
		auth whoami -o jsonpath='{.status.userInfo.username}')"

# --- containerlab: a topology of `lab export-clab` run from the image ------------------------------
# There is no Docker or containerlab here: the test wires the exported topology as containerlab
# does (a network namespace per node, eth0 on the management network, a veth per link, CLAB_INTFS,
# the node's env and entrypoint) and runs each node from the image's root filesystem, each
# with its own writable copy (an overlay, ":O"), as each container has.
cat >"$BT_DIR/clab-topo.yaml" <<YAML
name: clab
subnets: [{name: a, cidr: 192.168.100.0/24}]
ipPools: [{cidr: 10.244.0.0/16, blockSize: 26}]
nodes: [{name: node1, subnet: a}, {name: node2, subnet: a}]
namespaces: [{name: x}]
pods:
  - {namespace: x, name: a, node: node1, ports: [{name: http, containerPort: 80}]}
  - {namespace: x, name: b, node: node2, ports: [{name: http, containerPort: 80}]}
YAML
"$BRINDLECTL" lab export-clab --file "$BT_DIR/clab-topo.yaml" -o "$BT_DIR/clab.yml"
bt_expect_contains "the export runs the image scripts/image tagged" \
	"$(sed -n 's/^scripts\/image: \([^ ]*\) in .*/\1/p' "$BT_DIR/image.log")" "$(grep -m1 'image:' "$BT_DIR/clab.yml")"
/usr/bin/python3 - "$BT_DIR/clab.yml" >"$BT_DIR/clab.sh" <<'PYEOF2'
import shlex, sys, yaml
t = yaml.safe_load(open(sys.argv[1]))
nodes, links = t["topology"]["nodes"], t["topology"]["links"]
intfs = {name: 0 for name in nodes}
for l in links:
    for e in l["endpoints"]:
        intfs[e.split(":")[0]] += 1
plen = t["mgmt"]["ipv4-subnet"].split("/")[1]
for name, n in nodes.items():
    env = " ".join(shlex.quote("%s=%s" % kv) for kv in n.get("env", {}).items())
    print("clab_netns %s %s/%s" % (name, n["mgmt-ipv4"], plen))
    print("clab_env[%s]=%s" % (name, shlex.quote(env)))
    print("clab_entry[%s]=%s intfs[%s]=%d" % (name, shlex.quote(n["entrypoint"]), name, intfs[name]))
for l in links:
    print("clab_link %s %s" % tuple(l["endpoints"]))
PYEOF2
declare -A clab_env clab_entry intfs
bt_netns mgmt
ip -n "$BT_PREFIX-mgmt" link add mgmt type bridge
ip -n "$BT_PREFIX-mgmt" link set mgmt up
m=0
clab_netns() { # NAME MGMT-ADDRESS: the node's namespace, eth0 on the management bridge
	bt_netns "c-$1"
	ip -n "$BT_PREFIX-mgmt" link add "m$m" type veth peer name eth0 netns "$BT_PREFIX-c-$1"
	ip -n "$BT_PREFIX-mgmt" link set "m$m" master mgmt up
	ip -n "$BT_PREFIX-c-$1" addr add "$2" dev eth0
	ip -n "$BT_PREFIX-c-$1" link set eth0 up
	m=$((m + 1))
}
clab_link() { # A:IF B:IF
	ip -n "$BT_PREFIX-c-${1%%:*}" link add "${1#*:}" type veth peer name "${2#*:}" netns "$BT_PREFIX-c-${2%%:*}"
}
. "$BT_DIR/clab.sh"
for name in "${!clab_env[@]}"; do
	eval "envs=(${clab_env[$name]})"
	args=()
	for kv in "${envs[@]}"; do args+=(-e "$kv"); done
	nsenter --net="/var/run/netns/$BT_PREFIX-c-$name" podman --root "$BT_DIR/storage" --runroot "$BT_DIR/run" \
		--tmpdir "$BT_DIR/tmp" --runtime runc --cgroup-manager cgroupfs --events-backend file \
		run -d --name "clab-$name" --privileged "${limits[@]}" --network host -e CLAB_INTFS="${intfs[$name]}" \
		"${args[@]}" --rootfs "$BT_DIR/rootfs:O" "${clab_entry[$name]}" >/dev/null ||
		bt_fail "node $name of the export did not start"
done
# until CMD succeeds, at most SECS; the logs of every node kept when it does not
clab_wait() {
	local deadline=$((SECONDS + $1)) c
	shift
	until "$@" >/dev/null 2>&1; do
		[ $SECONDS -lt $deadline ] && { sleep 0.2; continue; }
		for c in etcd fabric node1 node2; do pm logs "clab-$c" >"$BT_DIR/clab-$c.log" 2>&1; done
		pm exec clab-node1 birdc -s /run/brindle/bird/bird.ctl show protocols all >"$BT_DIR/clab-node1-bird.log" 2>&1
		return 1
	done
}
up() { pm logs "clab-$1" 2>&1 | grep -q "node $1 up"; }
for n in node1 node2; do
	clab_wait 120 up $n || bt_fail "$n of the export is not up within 120 s"
done
established() { pm exec clab-node1 birdc -s /run/brindle/bird/bird.ctl show protocols | grep -q 'Mesh_.*Established'; }
clab_wait 60 established || bt_fail "node1's BGP session to node2 is not Established within 60 s"
ip_b=$(pm exec clab-node2 cat /var/log/brindle/cni-pod-x-b.json | jq -r '.ips[0].address' | cut -d/ -f1)
reach() { pm exec clab-node1 ip netns exec pod-x-a brindle-probe tcp "$ip_b" 80 --timeout 1000; }
clab_wait 30 reach || bt_fail "pod x/a on node1 does not reach x/b ($ip_b) on node2"
bt_log "an exported containerlab topology runs from the image: BGP up, pods on two nodes reach each other"
bt_pass
