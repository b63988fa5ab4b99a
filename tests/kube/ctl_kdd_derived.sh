#!/usr/bin/env bash
# brindlectl's reads of the kinds Kubernetes derives, on the Kubernetes
# datastore, against the real kube-apiserver and as the least-privilege
# identities of deploy/rbac/brindlectl.yaml: core Nodes with Calico's
# annotations read back as Calico Nodes, Pods as WorkloadEndpoints with
# Calico's names (a hostNetwork or unscheduled pod is none), Namespaces and
# ServiceAccounts as Profiles kns./ksa.; writes of endpoints and profiles are
# refused saying why; an admin sets a Node's BGP fields (its annotations);
# ipam show and check read the IPAM CRs with the endpoints, ipam release
# repairs them under brindle-ctl-ipam; node status needs
# no datastore.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/kube.sh"

kube_test_plane
kube_brindlectl_users

# refused WHAT WANT CMD...: CMD fails, saying WANT.
refused() {
	local what=$1 want=$2 err
	shift 2
	if err=$("$@" 2>&1); then
		bt_fail "$what succeeded"
	fi
	bt_expect_contains "$what: refused" "$want" "$err"
}

# Nodes as the kubelet and calico-node leave them: labels, BGP annotations.
kc apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Node
metadata:
  name: node1
  labels: {rack: r1}
  annotations:
    projectcalico.org/IPv4Address: 192.168.100.11/24
    projectcalico.org/ASNumber: "64512"
    projectcalico.org/IPv4VXLANTunnelAddr: 10.244.7.1
---
apiVersion: v1
kind: Node
metadata:
  name: ip-10-0-0-2
  annotations: {projectcalico.org/IPv4Address: 10.0.0.2/24}
YAML
kc create namespace shop >/dev/null
kc label namespace shop team=web >/dev/null
bt_wait_for 30 "the default ServiceAccount" kc -n shop get serviceaccount default
kc -n shop create serviceaccount robot >/dev/null
kc -n shop label serviceaccount robot role=bot >/dev/null
kc apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: web-0, namespace: shop, labels: {app: web}}
spec:
  nodeName: ip-10-0-0-2
  serviceAccountName: robot
  containers: [{name: c, image: registry.invalid/none, ports: [{name: http, containerPort: 80}]}]
---
apiVersion: v1
kind: Pod
metadata: {name: agent, namespace: shop, labels: {app: agent}}
spec:
  nodeName: node1
  hostNetwork: true
  containers: [{name: c, image: registry.invalid/none}]
---
apiVersion: v1
kind: Pod
metadata: {name: pending, namespace: shop, labels: {app: web}}
spec:
  containers: [{name: c, image: registry.invalid/none}]
YAML
kc -n shop patch pod web-0 --subresource status --type merge \
	-p '{"status":{"phase":"Running","podIP":"10.244.1.1","podIPs":[{"ip":"10.244.1.1"}]}}' >/dev/null

# Nodes, read-only.
got=$(bctl "$BOB" get nodes)
bt_expect_contains "both nodes listed" "ip-10-0-0-2" "$got"
bt_expect_contains "node1 listed" "node1" "$got"
got=$(bctl "$BOB" get node node1 -o yaml)
bt_expect_contains "the BGP address" "ipv4Address: 192.168.100.11/24" "$got"
bt_expect_contains "the AS number" "asNumber: 64512" "$got"
bt_expect_contains "the VXLAN tunnel address" "ipv4VXLANTunnelAddr: 10.244.7.1" "$got"
bt_expect_contains "the node's labels" "rack: r1" "$got"
bt_expect_contains "the node's orchestrator" "orchestrator: k8s" "$got"
refused "get of a node that does not exist" 'Node "node9" not found' bctl "$BOB" get node node9

# WorkloadEndpoints: only the scheduled pod on the pod network, with Calico's name.
WEP=ip--10--0--0--2-k8s-web--0-eth0
got=$(bctl "$BOB" get workloadendpoints -n shop -o yaml)
bt_expect_eq "one endpoint in shop" 1 "$(grep -c 'kind: WorkloadEndpoint' <<<"$got")"
bt_expect_contains "its name" "name: $WEP" "$got"
got=$(bctl "$BOB" get workloadendpoints -A)
bt_expect_contains "listed in all namespaces" "web-0" "$got"
[[ $got != *agent* && $got != *pending* ]] || bt_fail "a hostNetwork or unscheduled pod listed: $got"
got=$(bctl "$BOB" get workloadendpoint "$WEP" -n shop -o yaml)
bt_expect_contains "the pod's labels" "app: web" "$got"
bt_expect_contains "the namespace label" "projectcalico.org/namespace: shop" "$got"
bt_expect_contains "the service account label" "projectcalico.org/serviceaccount: robot" "$got"
bt_expect_contains "the namespace's profile" "kns.shop" "$got"
bt_expect_contains "the service account's profile" "ksa.shop.robot" "$got"
bt_expect_contains "the pod's address" "10.244.1.1/32" "$got"
bt_expect_contains "the named port" "name: http" "$got"
bt_expect_contains "the node" "node: ip-10-0-0-2" "$got"
refused "get of a hostNetwork pod" "not found" \
	bctl "$BOB" get workloadendpoint node1-k8s-agent-eth0 -n shop
refused "get of the pod's endpoint on another node" "not found" \
	bctl "$BOB" get workloadendpoint node1-k8s-web--0-eth0 -n shop
refused "get by a name that is no endpoint's" "<node>-k8s-<pod>-eth0" \
	bctl "$BOB" get workloadendpoint web-0 -n shop

# Profiles from the namespace and its service accounts.
got=$(bctl "$BOB" get profiles)
for p in kns.shop kns.default ksa.shop.robot ksa.shop.default; do
	bt_expect_contains "profile $p listed" "$p" "$got"
done
got=$(bctl "$BOB" get profile kns.shop -o yaml)
bt_expect_contains "the namespace's labels to apply" "pcns.team: web" "$got"
bt_expect_contains "the namespace's name to apply" "pcns.projectcalico.org/name: shop" "$got"
got=$(bctl "$BOB" get profile ksa.shop.robot -o yaml)
bt_expect_contains "the service account's labels to apply" "pcsa.role: bot" "$got"
refused "get of a profile Kubernetes cannot derive" "kns.<namespace>" \
	bctl "$BOB" get profile my-profile

# Writes of derived kinds: refused, saying who writes them; nothing changes.
bctl "$BOB" get workloadendpoint "$WEP" -n shop -o yaml >"$BT_DIR/wep.yaml"
sed -i 's/app: web/app: changed/' "$BT_DIR/wep.yaml"
refused "apply of an endpoint" "derived from Pods and read-only" \
	bctl "$ALICE" apply -f "$BT_DIR/wep.yaml"
refused "delete of an endpoint" "derived from Pods and read-only" \
	bctl "$ALICE" delete workloadendpoint "$WEP" -n shop
bt_expect_eq "the pod unchanged" web "$(kc -n shop get pod web-0 -o jsonpath='{.metadata.labels.app}')"
refused "create of a profile" "kubectl label namespace" bctl "$ALICE" apply -f - <<'YAML'
apiVersion: projectcalico.org/v3
kind: Profile
metadata: {name: my-profile}
spec: {labelsToApply: {a: b}}
YAML
refused "delete of a profile" "derived from Namespaces" bctl "$ALICE" delete profile kns.shop
refused "delete of a node" "kubectl delete node node1" bctl "$ALICE" delete node node1
refused "create of a node" "the kubelet registers it" bctl "$ALICE" apply -f - <<'YAML'
apiVersion: projectcalico.org/v3
kind: Node
metadata: {name: node7}
spec: {bgp: {ipv4Address: 10.0.0.7/24}}
YAML

# A Node's BGP fields are its annotations: an admin sets and clears them.
cat >"$BT_DIR/node1.yaml" <<'YAML'
apiVersion: projectcalico.org/v3
kind: Node
metadata: {name: node1}
spec:
  bgp: {ipv4Address: 192.168.100.21/24, routeReflectorClusterID: 224.0.0.1}
YAML
refused "a read-only identity's node update" "forbidden" bctl "$BOB" apply -f "$BT_DIR/node1.yaml"
out=$(bctl "$ALICE" apply -f "$BT_DIR/node1.yaml")
bt_expect_contains "the node configured" "node1 configured" "$out"
ann() { kc get node node1 -o "jsonpath={.metadata.annotations.projectcalico\.org/$1}"; }
bt_expect_eq "the new address" 192.168.100.21/24 "$(ann IPv4Address)"
bt_expect_eq "the cluster ID" 224.0.0.1 "$(ann RouteReflectorClusterID)"
bt_expect_eq "the AS number cleared" "" "$(ann ASNumber)"
bt_expect_eq "the VXLAN address cleared" "" "$(ann IPv4VXLANTunnelAddr)"
bt_expect_eq "the node's labels kept" r1 "$(kc get node node1 -o jsonpath='{.metadata.labels.rack}')"
got=$(bctl "$BOB" get node node1 -o yaml)
bt_expect_contains "read back" "ipv4Address: 192.168.100.21/24" "$got"
out=$(bctl "$ALICE" apply -f "$BT_DIR/node1.yaml")
bt_expect_contains "applied again: unchanged" "node1 unchanged" "$out"
# replace at a stale resourceVersion: a conflict.
rv=$(kc get node node1 -o jsonpath='{.metadata.resourceVersion}')
kc annotate node node1 projectcalico.org/ASNumber=64999 >/dev/null
cat >"$BT_DIR/stale.yaml" <<YAML
apiVersion: projectcalico.org/v3
kind: Node
metadata: {name: node1, resourceVersion: "$rv"}
spec: {bgp: {ipv4Address: 192.168.100.31/24}}
YAML
refused "a node replaced at a stale version" "modified by someone else" \
	bctl "$ALICE" replace -f "$BT_DIR/stale.yaml"
bt_expect_eq "nothing written" 192.168.100.21/24 "$(ann IPv4Address)"
cat >"$BT_DIR/labels.yaml" <<'YAML'
apiVersion: projectcalico.org/v3
kind: Node
metadata: {name: node1, labels: {rack: r2}}
spec: {bgp: {ipv4Address: 192.168.100.21/24}}
YAML
refused "a node's labels changed" "kubectl label node node1" \
	bctl "$ALICE" apply -f "$BT_DIR/labels.yaml"
bt_expect_eq "the label unchanged" r1 "$(kc get node node1 -o jsonpath='{.metadata.labels.rack}')"

# ipam show and check: the IPAM CRs (as Calico writes them: the affinity's deleted a
# string, the block's per-allocation sequence numbers), with the endpoints and nodes
# derived above.
bctl "$ALICE" apply -f - >/dev/null <<'YAML'
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pool-a}
spec: {cidr: 10.244.0.0/16, blockSize: 30}
YAML
kc create -f - >/dev/null <<'YAML'
apiVersion: crd.projectcalico.org/v1
kind: IPAMBlock
metadata: {name: 10-244-1-0-30}
spec:
  cidr: 10.244.1.0/30
  affinity: host:ip-10-0-0-2
  allocations: [null, 0, null, null]
  unallocated: [0, 2, 3]
  sequenceNumber: 7
  sequenceNumberForAllocation: {"1": 6}
  affinityClaimTime: "2026-01-02T03:04:05Z"
  attributes:
  - {handle_id: k8s-pod-network.c0ffee, secondary: {namespace: shop, node: ip-10-0-0-2, pod: web-0}}
---
apiVersion: crd.projectcalico.org/v1
kind: BlockAffinity
metadata: {name: ip-10-0-0-2-10-244-1-0-30}
spec: {node: ip-10-0-0-2, cidr: 10.244.1.0/30, state: confirmed, deleted: "false"}
---
apiVersion: crd.projectcalico.org/v1
kind: IPAMHandle
metadata: {name: k8s-pod-network.c0ffee}
spec: {handleID: k8s-pod-network.c0ffee, block: {10.244.1.0/30: 1}}
YAML
got=$(bctl "$BOB" ipam show --show-blocks)
bt_expect_contains "the pool" "10.244.0.0/16" "$got"
bt_expect_contains "the block" "10.244.1.0/30" "$got"
got=$(bctl "$BOB" ipam check 2>&1) || bt_fail "ipam check found problems: $got"
bt_expect_contains "ipam check" "1 address(es) allocated; 0 problem(s) found." "$got"

# ipam release: only with brindle-ctl-ipam; an address in use only with --force.
refused "release by a read-only identity" "forbidden" \
	bctl "$BOB" ipam release --ip 10.244.1.1 --force
CAROL=$(kube_testenv user "$K" carol)
kc create clusterrolebinding carol-brindle --clusterrole brindle-ctl-admin --user carol >/dev/null
kc create clusterrolebinding carol-ipam --clusterrole brindle-ctl-ipam --user carol >/dev/null
refused "release of an address in use" "use --force" bctl "$CAROL" ipam release --ip 10.244.1.1
bctl "$CAROL" ipam release --ip 10.244.1.1 --force >/dev/null ||
	bt_fail "ipam release --force failed"
bt_expect_eq "the address freed" "[null,null,null,null]" \
	"$(kc get ipamblock 10-244-1-0-30 -o jsonpath='{.spec.allocations}')"
bt_expect_eq "Calico's fields of the block kept" '{"1":6} 2026-01-02T03:04:05Z' \
	"$(kc get ipamblock 10-244-1-0-30 -o jsonpath='{.spec.sequenceNumberForAllocation} {.spec.affinityClaimTime}')"
if kc get ipamhandle k8s-pod-network.c0ffee >/dev/null 2>&1; then
	bt_fail "the handle outlived its last address"
fi
bctl "$CAROL" ipam release --empty-blocks --grace 0 >/dev/null ||
	bt_fail "ipam release --empty-blocks failed"
bctl "$CAROL" ipam release --empty-blocks --grace 0 >/dev/null ||
	bt_fail "ipam release --empty-blocks failed"
if kc get ipamblock 10-244-1-0-30 >/dev/null 2>&1; then
	bt_fail "the empty block outlived ipam release --empty-blocks"
fi

# node status reads BIRD's socket, not the datastore.
refused "node status without BIRD" "BIRD) is not running" \
	bctl "$BOB" node status --bird-socket "$BT_DIR/no-bird.ctl"
bt_pass
