#!/usr/bin/env bash
# brindle-node startup on the Kubernetes datastore, as the brindle-node
# ClusterRole allows, against the real kube-apiserver: a node the kubelet
# has not registered is an error, not a Node made up; the address from the
# Node's InternalIP (kubernetes-internal-ip) with its interface's length,
# written as Calico's annotation; the default pool created as a CR; a VXLAN
# tunnel address from the IPAM CRs, as an annotation, released when the pool
# no longer uses VXLAN; nothing but what startup writes changes on the Node.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/kube.sh"

NODEBIN=$BT_BUILD_DIR/node/brindle-node
kube_test_plane
kube_brindle_node "$K"
bt_netns far
ip -n "$NS" link add ens3 type veth peer name p0 netns "$BT_PREFIX-far"
ip -n "$NS" addr add 10.0.0.11/24 dev ens3
ip -n "$NS" link set ens3 up

startup() {
	local node=$1
	shift
	ip netns exec "$NS" env -i PATH="$PATH" BRINDLE_DATASTORE_TYPE=kubernetes \
		BRINDLE_KUBECONFIG="$KUBE_NODECFG" NODENAME="$node" \
		BRINDLE_NODENAME_FILE="$BT_DIR/nodename" BRINDLE_MTU_FILE="$BT_DIR/mtu" \
		CALICO_IPV4POOL_CIDR=10.244.0.0/16 "$@" "$NODEBIN" startup >"$BT_DIR/startup.log" 2>&1
}
ann() { kc get node "$1" -o json | jq -r ".metadata.annotations[\"projectcalico.org/$2\"] // \"\""; }

if startup node1; then bt_fail "startup made up a Node the kubelet never registered"; fi
bt_expect_contains "it says who registers Nodes" "Node node1 does not exist: on Kubernetes the kubelet registers it" \
	"$(cat "$BT_DIR/startup.log")"
bt_expect_eq "and wrote no Node" "" "$(kc get nodes -o name)"

# The kubelet's registration: labels and the InternalIP in the status.
kc apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Node
metadata: {name: node1, labels: {kubernetes.io/hostname: node1}}
YAML
kc patch node node1 --subresource=status --type=merge \
	-p '{"status":{"addresses":[{"type":"InternalIP","address":"10.0.0.11"},{"type":"Hostname","address":"node1"}]}}' >/dev/null
spec_before=$(kc get node node1 -o json | jq -c '{spec, labels: .metadata.labels}')

startup node1 IP=autodetect IP_AUTODETECTION_METHOD=kubernetes-internal-ip ||
	bt_fail "startup failed: $(cat "$BT_DIR/startup.log")"
bt_expect_eq "the InternalIP with its interface's length" "10.0.0.11/24" "$(ann node1 IPv4Address)"
bt_expect_eq "the default pool, a CR" "10.244.0.0/16" \
	"$(kc get ippools.crd.projectcalico.org default-ipv4-ippool -o jsonpath='{.spec.cidr}')"
bt_expect_eq "the pod MTU (ens3's 1500, no encapsulation)" "1500" "$(cat "$BT_DIR/mtu")"
bt_expect_eq "the Node's spec and labels untouched" "$spec_before" \
	"$(kc get node node1 -o json | jq -c '{spec, labels: .metadata.labels}')"

kc patch ippools.crd.projectcalico.org default-ipv4-ippool --type=merge -p '{"spec":{"vxlanMode":"Always"}}' >/dev/null
startup node1 || bt_fail "startup with a VXLAN pool: $(cat "$BT_DIR/startup.log")"
vx=$(ann node1 IPv4VXLANTunnelAddr)
[[ $vx == 10.244.* ]] || bt_fail "no VXLAN tunnel address annotation: \"$vx\""
bt_expect_eq "held by Calico's handle" "ipamhandle.crd.projectcalico.org/vxlan-tunnel-addr-node1" \
	"$(kc get ipamhandles.crd.projectcalico.org -o name)"
bt_expect_eq "IP unset: the stored address stays" "10.0.0.11/24" "$(ann node1 IPv4Address)"
bt_expect_eq "the pod MTU makes room for VXLAN" "1450" "$(cat "$BT_DIR/mtu")"

kc patch ippools.crd.projectcalico.org default-ipv4-ippool --type=merge -p '{"spec":{"vxlanMode":"Never"}}' >/dev/null
startup node1 || bt_fail "startup without VXLAN: $(cat "$BT_DIR/startup.log")"
bt_expect_eq "released: no annotation" "" "$(ann node1 IPv4VXLANTunnelAddr)"
bt_expect_eq "and no handle" "" "$(kc get ipamhandles.crd.projectcalico.org -o name)"
bt_pass
