#!/usr/bin/env bash
# brindle-confd and BIRD on the Kubernetes datastore, as the brindle-node
# ClusterRole allows, against the real kube-apiserver and its endpoint-slice
# controller. The node is the control plane's namespace. BGP addresses come
# from Calico's Node annotations (the mesh peer to node2), the cluster's BGP
# settings and pools from CRs, and an externalTrafficPolicy: Local Service's
# /32 is advertised from node1 only while node1 holds a ready endpoint (the
# controller's EndpointSlice follows the Pod's Ready condition). BIRD loads
# each configuration; readiness says so.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/kube.sh"

CONFD=$BT_BUILD_DIR/confd/brindle-confd
bt_netns cp
bt_netns peer
NODE=$BT_PREFIX-cp
kube_up "$BT_DIR/cp" "$NODE"
K=$BT_DIR/cp
ip -n "$NODE" link add eth0 type veth peer name eth0 netns "$BT_PREFIX-peer"
ip -n "$NODE" addr add 192.168.100.11/24 dev eth0
ip -n "$NODE" link set eth0 up

kube_brindle_crds "$K"
kube_brindle_node "$K"
NODECFG=$KUBE_NODECFG

kc apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Node
metadata:
  name: node1
  annotations: {projectcalico.org/IPv4Address: 192.168.100.11/24, projectcalico.org/ASNumber: "64512"}
---
apiVersion: v1
kind: Node
metadata:
  name: node2
  annotations: {projectcalico.org/IPv4Address: 192.168.100.12/24}
---
apiVersion: crd.projectcalico.org/v1
kind: BGPConfiguration
metadata: {name: default}
spec:
  asNumber: 64512
  serviceClusterIPs: [{cidr: 10.96.0.0/16}]
  serviceExternalIPs: [{cidr: 192.0.2.0/24}]
---
apiVersion: crd.projectcalico.org/v1
kind: IPPool
metadata: {name: pods}
spec: {cidr: 10.244.0.0/16, blockSize: 26}
---
apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec:
  type: NodePort
  selector: {app: web}
  externalIPs: [192.0.2.10]
  externalTrafficPolicy: Local
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: v1
kind: Pod
metadata: {name: web-0, namespace: shop, labels: {app: web}}
spec:
  nodeName: node1
  containers: [{name: c, image: registry.invalid/none, ports: [{containerPort: 8080}]}]
YAML
ready() { # ready True|False: the pod's Ready condition, as a kubelet reports it
	kc -n shop patch pod web-0 --subresource status --type merge -p "{\"status\":{\"phase\":\"Running\",
	 \"podIP\":\"10.244.1.5\",\"podIPs\":[{\"ip\":\"10.244.1.5\"}],
	 \"conditions\":[{\"type\":\"Ready\",\"status\":\"$1\"}]}}" >/dev/null
}
ready True

mkdir -p "$BT_DIR/node1"
bt_run_bg confd ip netns exec "$NODE" env BRINDLE_DATASTORE_TYPE=kubernetes \
	BRINDLE_KUBECONFIG="$NODECFG" "$CONFD" --node node1 --output-dir "$BT_DIR/node1" \
	--templates "$BT_SOURCE_DIR/bgp-templates" --bird-socket "$BT_DIR/node1/bird.ctl" \
	--secrets-dir "$BT_DIR/secrets" --settle 50ms
bt_wait_for 30 "confd to write bird.conf" test -s "$BT_DIR/node1/bird.conf"
bt_run_bg bird ip netns exec "$NODE" bird -f -c "$BT_DIR/node1/bird.conf" -s "$BT_DIR/node1/bird.ctl"
bt_wait_for 20 "BIRD to answer" birdc -s "$BT_DIR/node1/bird.ctl" show status
ready_ok() { ip netns exec "$NODE" curl -sf -o /dev/null --max-time 2 http://127.0.0.1:9098/readiness; }
bt_wait_for 30 "confd ready" ready_ok

# (grep on the files, not `cat | grep -q`: with pipefail, grep's early exit
# makes cat fail on a broken pipe and a match read as a miss)
has() { grep -qF -- "$1" "$BT_DIR/node1"/bird*.conf; }
bt_wait_for 10 "the mesh peer from node2's annotation" has "192.168.100.12"
bt_wait_for 10 "the service cluster range" has "route 10.96.0.0/16 blackhole"
bt_wait_for 30 "the Local service's /32 while node1 has a ready endpoint" \
	has "route 192.0.2.10/32 blackhole"
slice_nodes() {
	kc -n shop get endpointslices -l kubernetes.io/service-name=web \
		-o jsonpath='{.items[*].endpoints[*].nodeName}'
}
[ "$(slice_nodes)" = node1 ] || bt_fail "the controller's slices name: $(slice_nodes)"

ready False
nohas() { ! has "$1"; }
bt_wait_for 30 "the /32 withdrawn once the endpoint is not ready" nohas "route 192.0.2.10/32"
has "route 10.96.0.0/16 blackhole" || bt_fail "the cluster range went with the endpoint"
bt_wait_for 20 "confd ready with BIRD's new configuration" ready_ok
birdc -s "$BT_DIR/node1/bird.ctl" show protocols | grep -q "BGP" || bt_fail "BIRD has no BGP session configured"
bt_pass
