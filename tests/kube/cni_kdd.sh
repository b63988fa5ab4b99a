#!/usr/bin/env bash
# brindle-cni on the Kubernetes datastore, invoked as a kubelet's runtime
# invokes it, under the brindle-cni ClusterRole (deploy/rbac/brindle-cni.yaml),
# against the real kube-apiserver. The control plane's namespace stands in for
# the node's host, others for the pods. Checks:
#  - ADD reads the pod, assigns from IPAM's CRDs, sets up the veth, and writes
#    the pod's podIP, podIPs and containerID annotations; the endpoint read
#    back through brindlectl has them; CHECK passes;
#  - Calico's annotations: the pod's ipv4pools, its namespace's ipv4pools,
#    the pod's ipAddrs (a fixed address); a bad annotation fails naming it and
#    assigns nothing;
#  - a pod or a namespace the API does not know fails the ADD, and nothing is
#    assigned or set up;
#  - DEL releases by handle (the IPAMHandle goes, the annotations say
#    released) and is idempotent;
#  - 30 ADDs at once: 30 distinct addresses, 30 handles; 30 DELs leave none.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/kube.sh"

CNI_DIR=$BT_BUILD_DIR/cni
kube_test_plane
kube_brindle_cni "$K"
CNICFG=$KUBE_CNICFG
actl() {
	ip netns exec "$NS" "$BRINDLECTL" --datastore kubernetes --kubeconfig "$K/admin.kubeconfig" "$@"
}

kc apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Node
metadata: {name: node-a, labels: {rack: r1}}
---
apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: v1
kind: Namespace
metadata:
  name: pinned
  annotations: {cni.projectcalico.org/ipv4pools: '["pool-c"]'}
YAML
actl apply -f - >/dev/null <<'YAML'
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pool-a}
spec: {cidr: 10.244.0.0/24, blockSize: 26}
---
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pool-b}
spec: {cidr: 10.245.0.0/24, blockSize: 26, nodeSelector: "rack == 'r1'"}
---
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pool-c}
spec: {cidr: 10.246.0.0/24, blockSize: 26}
YAML

# pod NAMESPACE NAME [ANNOTATIONS-JSON]: a pod scheduled on node-a (no kubelet runs it).
pod() {
	kc create -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: {name: $2, namespace: $1, annotations: ${3:-{\}}, labels: {app: $2}}
spec:
  nodeName: node-a
  containers: [{name: c, image: registry.invalid/none}]
YAML
}
annotation() { # annotation NAMESPACE POD KEY
	kc -n "$1" get pod "$2" -o go-template="{{index .metadata.annotations \"$3\"}}"
}

conf() {
	cat <<JSON
{"cniVersion": "1.0.0", "name": "k8s-pod-network", "type": "brindle-cni", "nodename": "node-a",
 "datastore_type": "kubernetes", "kubernetes": {"kubeconfig": "$CNICFG"},
 "log_file_path": "$BT_DIR/cni.log", "log_level": "debug",
 "ipam": {"type": "brindle-ipam", "ipam_lock_file": "$BT_DIR/ipam.lock"${IPAM_EXTRA:+, $IPAM_EXTRA}}}
JSON
}

# cni COMMAND CONTAINER PODNS NAMESPACE POD: output in $out, status in $rc
cni() {
	set +e
	out=$(conf | ip netns exec "$NS" env CNI_COMMAND="$1" CNI_CONTAINERID="$2" \
		CNI_NETNS="/var/run/netns/$3" CNI_IFNAME=eth0 CNI_PATH="$CNI_DIR" \
		CNI_ARGS="IgnoreUnknown=1;K8S_POD_NAMESPACE=$4;K8S_POD_NAME=$5" \
		"$CNI_DIR/brindle-cni")
	rc=$?
	set -e
}
new_pod_ns() {
	ip netns add "$1"
	bt_netns+=("$1")
}
cid() { printf '%s' "$1" | sha256sum | cut -c1-64; }
handles() { kc get ipamhandles -o name | wc -l; }
veth_of() { echo "cali$(printf '%s' "$1.$2" | sha1sum | cut -c1-11)"; }

# --- ADD, CHECK -----------------------------------------------------------------------------
pod shop web-1
P1=${BT_PREFIX}p1
new_pod_ns "$P1"
C1=$(cid a1)
cni ADD "$C1" "$P1" shop web-1
[ "$rc" -eq 0 ] || bt_fail "ADD failed: $out"
bt_expect_contains "the address from pool-a" '"address":"10.244.0.0/32"' "$out"
bt_expect_eq "podIP annotation" 10.244.0.0/32 "$(annotation shop web-1 cni.projectcalico.org/podIP)"
bt_expect_eq "podIPs annotation" 10.244.0.0/32 "$(annotation shop web-1 cni.projectcalico.org/podIPs)"
bt_expect_eq "containerID annotation" "$C1" "$(annotation shop web-1 cni.projectcalico.org/containerID)"
bt_expect_eq "the handle" "k8s-pod-network.$C1" "$(kc get ipamhandle "k8s-pod-network.$C1" -o jsonpath='{.spec.handleID}')"
bt_expect_eq "the handle counts per block CIDR" '{"10.244.0.0/26":1}' "$(kc get ipamhandle "k8s-pod-network.$C1" -o jsonpath='{.spec.block}')"
bt_expect_eq "the block's affinity" "host:node-a" "$(kc get ipamblock 10-244-0-0-26 -o jsonpath='{.spec.affinity}')"
ip -n "$NS" link show "$(veth_of shop web-1)" >/dev/null || bt_fail "no host veth"
bt_expect_contains "the pod's route" "10.244.0.0 dev $(veth_of shop web-1)" "$(ip -n "$NS" route)"
got=$(actl get workloadendpoint -n shop -o yaml)
bt_expect_contains "the endpoint's address" "10.244.0.0/32" "$got"
bt_expect_contains "the endpoint's container" "containerID: $C1" "$got"
first=$out
# The node's first ADD claims its block from fresh lists: those the API server answers from its
# cache (resourceVersion=0, no wait after a write) only ever serve an address from a block the
# node already has (lib/sys/ipam.c).
crd_calls() { grep -n -o -E 'kube: [A-Z]+ /apis/crd.projectcalico.org/v1/(blockaffinities|ippools)[^:]*' "$BT_DIR/cni.log" | sed -n "$1,\$p"; }
calls=$(crd_calls 1)
line_of() { grep -F -- "$1" <<<"$calls" | head -1 | cut -d: -f1; }
cached=$(line_of 'GET /apis/crd.projectcalico.org/v1/blockaffinities?resourceVersion=0')
fresh=$(line_of 'GET /apis/crd.projectcalico.org/v1/blockaffinities?limit=500')
claim=$(line_of 'POST /apis/crd.projectcalico.org/v1/blockaffinities')
[ -n "$cached" ] && [ -n "$fresh" ] && [ -n "$claim" ] && [ "$cached" -lt "$fresh" ] &&
	[ "$fresh" -lt "$claim" ] || bt_fail "the claim was not decided from fresh lists: $calls"
# CHECK with the ADD's result as prevResult, as the runtime sends it.
out_check=$(conf | jq -c --argjson prev "$first" '. + {prevResult: $prev}')
set +e
ip netns exec "$NS" env CNI_COMMAND=CHECK CNI_CONTAINERID="$C1" CNI_NETNS="/var/run/netns/$P1" \
	CNI_IFNAME=eth0 CNI_PATH="$CNI_DIR" CNI_ARGS="K8S_POD_NAMESPACE=shop;K8S_POD_NAME=web-1" \
	"$CNI_DIR/brindle-cni" <<<"$out_check" >"$BT_DIR/check.out"
rc=$?
set -e
[ "$rc" -eq 0 ] || bt_fail "CHECK failed: $(cat "$BT_DIR/check.out")"

# --- Calico's IPAM annotations --------------------------------------------------------------
pod shop by-pool '{cni.projectcalico.org/ipv4pools: "[\"pool-b\"]"}'
new_pod_ns "${BT_PREFIX}p2"
cni ADD "$(cid b2)" "${BT_PREFIX}p2" shop by-pool
[ "$rc" -eq 0 ] || bt_fail "ADD with the pod's ipv4pools failed: $out"
bt_expect_contains "the pod's pool" '"address":"10.245.0.0/32"' "$out"

pod pinned in-ns
new_pod_ns "${BT_PREFIX}p3"
cni ADD "$(cid c3)" "${BT_PREFIX}p3" pinned in-ns
[ "$rc" -eq 0 ] || bt_fail "ADD with the namespace's ipv4pools failed: $out"
bt_expect_contains "the namespace's pool" '"address":"10.246.0.0/32"' "$out"

pod pinned own-pool '{cni.projectcalico.org/ipv4pools: "[\"10.244.0.0/24\"]"}'
new_pod_ns "${BT_PREFIX}p4"
log_mark=$(($(wc -l <"$BT_DIR/cni.log") + 1))
cni ADD "$(cid d4)" "${BT_PREFIX}p4" pinned own-pool
bt_expect_eq "an address from the node's block: cached lists only, no claim" \
	"GET /apis/crd.projectcalico.org/v1/ippools?resourceVersion=0 GET /apis/crd.projectcalico.org/v1/blockaffinities?resourceVersion=0" \
	"$(sed -n "$log_mark,\$p" "$BT_DIR/cni.log" | grep -o -E '(GET|POST|PUT) /apis/crd.projectcalico.org/v1/(blockaffinities|ippools)[^:]*' | tr '\n' ' ' | sed 's/ $//')"
[ "$rc" -eq 0 ] || bt_fail "ADD with a pool CIDR failed: $out"
bt_expect_contains "the pod's pool over its namespace's" '"address":"10.244.0.1/32"' "$out"

# The next ADD from the same block: the pod, its namespace, IPAM's lists and the block the last
# ADD used (the hint kept in the IPAM lock file) all in one round; the block not read again.
pod pinned own-pool-2 '{cni.projectcalico.org/ipv4pools: "[\"10.244.0.0/24\"]"}'
new_pod_ns "${BT_PREFIX}p4b"
log_mark=$(($(wc -l <"$BT_DIR/cni.log") + 1))
cni ADD "$(cid d4b)" "${BT_PREFIX}p4b" pinned own-pool-2
[ "$rc" -eq 0 ] || bt_fail "the second ADD from the node's block failed: $out"
bt_expect_contains "the next address of the block" '"address":"10.244.0.2/32"' "$out"
reads=$(sed -n "$log_mark,\$p" "$BT_DIR/cni.log" | grep -o -E 'kube: GET [^ ]*: [^(]*(\(at once with others\))?' | sed -E 's/: (ok|No such file or directory) in [0-9.]+ ms ?/ /')
first_round=$(grep -c 'at once' <<<"$reads" || true)
bt_expect_eq "the first round's reads (handle, pools, affinities, reservations, hinted block, pod, namespace)" 7 "$first_round"
for want in /api/v1/namespaces/pinned/pods/own-pool-2 /api/v1/namespaces/pinned \
	/apis/crd.projectcalico.org/v1/ipamblocks/10-244-0-0-26; do
	grep -q -F -x "kube: GET $want (at once with others)" <<<"$reads" ||
		bt_fail "$want was not read in the first round: $reads"
done
bt_expect_eq "GETs of the block" 1 "$(grep -c -F 'ipamblocks/10-244-0-0-26' <<<"$reads" || true)"

pod shop fixed '{cni.projectcalico.org/ipAddrs: "[\"10.246.0.77\"]"}'
new_pod_ns "${BT_PREFIX}p5"
cni ADD "$(cid e5)" "${BT_PREFIX}p5" shop fixed
[ "$rc" -eq 0 ] || bt_fail "ADD with ipAddrs failed: $out"
bt_expect_contains "the fixed address" '"address":"10.246.0.77/32"' "$out"

n_handles=$(handles)
pod shop bad '{cni.projectcalico.org/ipAddrs: "10.246.0.78"}'
new_pod_ns "${BT_PREFIX}p6"
cni ADD "$(cid f6)" "${BT_PREFIX}p6" shop bad
[ "$rc" -ne 0 ] || bt_fail "ADD with a bad ipAddrs annotation succeeded: $out"
bt_expect_contains "the bad annotation named" 'pod shop/bad: metadata.annotations[cni.projectcalico.org/ipAddrs]: not a JSON list' "$out"
pod shop no-pool '{cni.projectcalico.org/ipv4pools: "[\"pool-z\"]"}'
cni ADD "$(cid f7)" "${BT_PREFIX}p6" shop no-pool
[ "$rc" -ne 0 ] || bt_fail "ADD from a pool that does not exist succeeded: $out"
bt_expect_contains "the unknown pool named" 'IP pool \"pool-z\" does not exist' "$out"

# --- pods and namespaces the API does not know ------------------------------------------------
cni ADD "$(cid f8)" "${BT_PREFIX}p6" shop ghost
[ "$rc" -ne 0 ] || bt_fail "ADD for a pod that does not exist succeeded: $out"
bt_expect_contains "the missing pod named" 'pod shop/ghost: does not exist' "$out"
cni ADD "$(cid f9)" "${BT_PREFIX}p6" nowhere ghost
[ "$rc" -ne 0 ] || bt_fail "ADD in a namespace that does not exist succeeded: $out"
bt_expect_eq "nothing assigned by the failed ADDs" "$n_handles" "$(handles)"
bt_expect_eq "no interface in the failed pods' namespace" "1" "$(ip -n "${BT_PREFIX}p6" -o link | wc -l)"

# --- dual stack: the pod's ipv6pools, fixed addresses of both families ----------------------------
actl apply -f - >/dev/null <<'YAML'
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pool-6}
spec: {cidr: 'fd00:20::/120'}
---
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pool-6b}
spec: {cidr: 'fd00:21::/120'}
YAML
export IPAM_EXTRA='"assign_ipv4": "true", "assign_ipv6": "true"' BRINDLE_IPV6_WITHOUT_POLICY=1
pod shop dual '{cni.projectcalico.org/ipv6pools: "[\"pool-6b\"]"}'
new_pod_ns "${BT_PREFIX}p7"
cni ADD "$(cid g7)" "${BT_PREFIX}p7" shop dual
[ "$rc" -eq 0 ] || bt_fail "dual-stack ADD failed: $out"
bt_expect_contains "the IPv6 address from the pod's ipv6pools" '"address":"fd00:21::/128"' "$out"
ips=$(annotation shop dual cni.projectcalico.org/podIPs)
bt_expect_contains "podIPs has the IPv6 address" "fd00:21::/128" "$ips"
bt_expect_contains "podIPs has an IPv4 address" "/32," "$ips"
pod shop dual-fixed '{cni.projectcalico.org/ipAddrs: "[\"10.246.0.88\", \"fd00:20::88\"]"}'
new_pod_ns "${BT_PREFIX}p8"
cni ADD "$(cid g8)" "${BT_PREFIX}p8" shop dual-fixed
[ "$rc" -eq 0 ] || bt_fail "dual-stack ADD of fixed addresses failed: $out"
bt_expect_eq "both fixed addresses" "10.246.0.88/32,fd00:20::88/128" \
	"$(annotation shop dual-fixed cni.projectcalico.org/podIPs)"
n_handles=$(handles)
pod shop half-fixed '{cni.projectcalico.org/ipAddrs: "[\"10.246.0.89\"]"}'
new_pod_ns "${BT_PREFIX}p9"
cni ADD "$(cid g9)" "${BT_PREFIX}p9" shop half-fixed
[ "$rc" -ne 0 ] || bt_fail "a dual-stack ADD with only an IPv4 fixed address succeeded: $out"
bt_expect_contains "the missing family named" "no IPv6 address, and the network assigns IPv6" "$out"
bt_expect_eq "nothing assigned by the refused ADD" "$n_handles" "$(handles)"
unset IPAM_EXTRA BRINDLE_IPV6_WITHOUT_POLICY

# --- DEL ----------------------------------------------------------------------------------------
cni DEL "$C1" "$P1" shop web-1 </dev/null
[ "$rc" -eq 0 ] || bt_fail "DEL failed: $out"
if kc get ipamhandle "k8s-pod-network.$C1" >/dev/null 2>&1; then
	bt_fail "the handle outlived DEL"
fi
bt_expect_eq "podIP says released" "" "$(annotation shop web-1 cni.projectcalico.org/podIP)"
if ip -n "$NS" link show "$(veth_of shop web-1)" >/dev/null 2>&1; then
	bt_fail "the host veth outlived DEL"
fi
cni DEL "$C1" "$P1" shop web-1
[ "$rc" -eq 0 ] || bt_fail "a second DEL failed: $out"
kc -n shop delete pod web-1 --wait=false >/dev/null
cni DEL "$C1" "$P1" shop web-1
[ "$rc" -eq 0 ] || bt_fail "DEL of a deleted pod failed: $out"

# --- many at once -------------------------------------------------------------------------------
N=30
kc create namespace many >/dev/null
for i in $(seq 1 $N); do
	pod many "p$i"
	new_pod_ns "${BT_PREFIX}m$i"
done
before=$(handles)
for i in $(seq 1 $N); do
	(cni ADD "$(cid "m$i")" "${BT_PREFIX}m$i" many "p$i"
	 echo "$rc $out" >"$BT_DIR/add.$i") &
done
wait
ips=()
for i in $(seq 1 $N); do
	read -r code doc <"$BT_DIR/add.$i"
	[ "$code" -eq 0 ] || bt_fail "parallel ADD $i failed: $doc"
	ips+=("$(jq -r '.ips[0].address' <<<"$doc")")
done
bt_expect_eq "distinct addresses" "$N" "$(printf '%s\n' "${ips[@]}" | sort -u | wc -l)"
bt_expect_eq "one handle each" "$((before + N))" "$(handles)"
for i in $(seq 1 $N); do
	(cni DEL "$(cid "m$i")" "${BT_PREFIX}m$i" many "p$i" </dev/null
	 echo "$rc $out" >"$BT_DIR/del.$i") &
done
wait
for i in $(seq 1 $N); do
	read -r code doc <"$BT_DIR/del.$i"
	[ "$code" -eq 0 ] || bt_fail "parallel DEL $i failed: $doc"
done
bt_expect_eq "no handle leaked" "$before" "$(handles)"
got=$(actl ipam check 2>&1) || bt_fail "ipam check found problems: $got"
bt_pass
