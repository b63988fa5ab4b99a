#!/usr/bin/env bash
# A real container runtime: podman with its CNI backend runs a busybox
# container on a Brindle network. podman runs CNI plugins in its own network
# namespace, so podman itself runs inside a test namespace (entered with
# nsenter --net) that stands in for
# the node: the host-side veth and route land there, never in the machine's.
# Checks the container's /32 and default route from inside, the endpoint and
# the host route, then that removing the container releases the address.
. "$(dirname "$0")/../lib/common.sh"

for tool in podman runc busybox; do
	command -v "$tool" >/dev/null || bt_fail "$tool is not installed (scripts/deps test)"
done
CNI_DIR=$BT_BUILD_DIR/cni
HOST=${BT_PREFIX}node
NET=brindle-${BT_PREFIX}
CTR=${BT_PREFIX}ctr
bt_start_etcd
ip netns add "$HOST"
bt_netns+=("$HOST")
ip -n "$HOST" link set lo up

"$BRINDLECTL" apply -f - >/dev/null <<'EOF'
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: podman-pool}
spec: {cidr: 10.245.0.0/24, blockSize: 28}
EOF

# A busybox root filesystem: no image registry involved.
ROOTFS=$BT_DIR/rootfs
mkdir -p "$ROOTFS"/{bin,proc,sys,dev,etc,tmp}
cp "$(command -v busybox)" "$ROOTFS/bin/busybox"
for applet in $(busybox --list); do
	[ -e "$ROOTFS/bin/$applet" ] || ln -s busybox "$ROOTFS/bin/$applet"
done
echo "root:x:0:0:root:/:/bin/sh" >"$ROOTFS/etc/passwd"

# The network, and a containers.conf that finds our plugins (and the
# reference loopback plugin podman adds on its own).
mkdir -p "$BT_DIR/cni.d"
cat >"$BT_DIR/cni.d/$NET.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "$NET",
  "plugins": [
    {
      "type": "brindle-cni",
      "nodename": "podman-node",
      "log_level": "debug",
      "log_file_path": "$BT_DIR/cni.log",
      "etcd_endpoints": "$BRINDLE_ETCD_ENDPOINTS",
      "ipam": {"type": "brindle-ipam", "ipam_lock_file": "$BT_DIR/ipam.lock"}
    }
  ]
}
EOF
cat >"$BT_DIR/containers.conf" <<EOF
[network]
cni_plugin_dirs = ["$CNI_DIR", "/usr/lib/cni"]
network_config_dir = "$BT_DIR/cni.d"
[engine]
events_logger = "file"
events_logfile_path = "$BT_DIR/events.log"
EOF
export CONTAINERS_CONF=$BT_DIR/containers.conf

# nsenter, not "ip netns exec": the latter remounts /sys, hiding the cgroup
# mounts runc needs. Only the network namespace changes.
pm() {
	nsenter --net="/var/run/netns/$HOST" podman --root "$BT_DIR/storage" --runroot "$BT_DIR/run" \
		--tmpdir "$BT_DIR/tmp" --runtime runc --cgroup-manager cgroupfs \
		--network-backend cni --cni-config-dir "$BT_DIR/cni.d" --events-backend file "$@"
}
# Remove the container even when the test fails half-way. libcni keeps its
# result cache in /var/lib/cni (not configurable through podman): remove our
# network's entries, and the directories if this test created them.
[ -d /var/lib/cni ] && had_cni_cache=1 || had_cni_cache=0
pm_cleanup() {
	pm rm -f -t 0 "$CTR" >/dev/null 2>&1 || true
	rm -f /var/lib/cni/results/"$NET"-* 2>/dev/null
	if [ $had_cni_cache -eq 0 ]; then
		rmdir /var/lib/cni/results /var/lib/cni 2>/dev/null || true
	fi
}
trap 'rc=$?; pm_cleanup; (exit $rc); bt_cleanup' EXIT

# --rootfs makes the first argument the root filesystem: every flag goes before it.
pm run -d --name "$CTR" --ulimit nofile=20000:20000 --ulimit nproc=1000:1000 \
	--network "$NET" --rootfs "$ROOTFS" /bin/sleep 600 >"$BT_DIR/run.log" 2>&1 ||
	bt_fail "podman run failed: $(cat "$BT_DIR/run.log")"

addr=$(pm exec "$CTR" ip -4 -o addr show dev eth0 | awk '{print $4}')
case "$addr" in
10.245.0.*/32) ;;
*) bt_fail "container address: expected a /32 from 10.245.0.0/24, got '$addr'" ;;
esac
ip=${addr%/32}
routes=$(pm exec "$CTR" ip -4 route show)
bt_expect_contains "container default route" "default via 169.254.1.1 dev eth0" "$routes"
bt_expect_contains "container gateway route" "169.254.1.1 dev eth0 scope link" "$routes"
bt_expect_contains "podman reports the address" "$ip" \
	"$(pm inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' "$CTR")"

# The node's side, in the node's namespace.
host_route=$(ip -n "$HOST" -4 route show proto 80)
bt_expect_contains "host route with protocol 80" "$ip dev cali" "$host_route"
veth=$(echo "$host_route" | awk '{print $3}')
bt_expect_contains "host veth MAC" "ee:ee:ee:ee:ee:ee" "$(ip -n "$HOST" link show "$veth")"
cid=$(pm inspect -f '{{.Id}}' "$CTR")
wep=$("$BRINDLECTL" get workloadendpoint -n default -o json)
bt_expect_contains "endpoint of the container" "\"containerID\": \"$cid\"" "$wep"
bt_expect_contains "endpoint address" "\"$ip/32\"" "$wep"
bt_expect_contains "endpoint interface" "\"interfaceName\": \"$veth\"" "$wep"
# Nothing of this reached the machine's own namespace.
ip -4 route show proto 80 | grep -q . && bt_fail "a protocol-80 route appeared in the root namespace"
ip link show "$veth" >/dev/null 2>&1 && bt_fail "$veth appeared in the root namespace"

pm rm -f -t 0 "$CTR" >/dev/null
bt_expect_eq "host route gone" "" "$(ip -n "$HOST" -4 route show proto 80)"
bt_expect_eq "veth gone" "" "$(ip -n "$HOST" -o link show | grep cali || true)"
out=$("$BRINDLECTL" get workloadendpoint -n default -o name)
bt_expect_eq "endpoint gone" "" "$out"
# The address is free again: ipam release finds nothing to release.
out=$("$BRINDLECTL" ipam release --ip "$ip" 2>&1 || true)
bt_expect_contains "address released" "not assigned" "$out"
grep -q "DEL $cid: done" "$BT_DIR/cni.log" || bt_fail "no DEL in the plugin's log"
bt_pass
