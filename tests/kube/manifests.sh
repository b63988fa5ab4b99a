#!/usr/bin/env bash
# The shipped manifests against the real kube-apiserver: the kustomize base
# (deploy/kustomization.yaml: CRDs, ClusterRoles, ServiceAccounts and their
# bindings) passes a server-side dry run and then applies; kubectl auth can-i
# as each component's ServiceAccount grants exactly what the component uses
# (the reads its syncers make, the writes it does) and denies the rest:
# no Secrets, no pod or node writes beyond the status annotations, no
# policy writes. The overlay docs/install.md shows builds with the image and
# settings it names and passes a dry run, and so does deploy/uninstall.yaml.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/kube.sh"

kube_test_plane --no-crds
kc apply --dry-run=server -k "$BT_SOURCE_DIR/deploy" >"$BT_DIR/dry-run.out" 2>&1 ||
	bt_fail "the base fails a server-side dry run: $(cat "$BT_DIR/dry-run.out")"
kc apply -k "$BT_SOURCE_DIR/deploy" >"$BT_DIR/apply.out" 2>&1 ||
	bt_fail "the base does not apply: $(cat "$BT_DIR/apply.out")"
bt_expect_contains "the CRDs are in it" "customresourcedefinition.apiextensions.k8s.io/ipamblocks.crd.projectcalico.org" \
	"$(cat "$BT_DIR/apply.out")"

# can ACCOUNT yes|no VERB RESOURCE [--subresource=S]
checked=0
can() {
	local sa=$1 want=$2
	shift 2
	local got
	got=$(kc auth can-i "$@" --as="system:serviceaccount:kube-system:$sa" 2>/dev/null || true)
	[ "$got" = "$want" ] || bt_fail "$sa: can-i $* is \"$got\", want \"$want\""
	checked=$((checked + 1))
}
crd() { echo "$1.crd.projectcalico.org"; }

# brindle-node: felix's and confd's syncers, and what brindle-node startup writes.
for r in pods nodes namespaces serviceaccounts services; do
	can brindle-node yes list "$r"
	can brindle-node yes watch "$r"
done
can brindle-node yes list endpointslices.discovery.k8s.io
can brindle-node yes watch networkpolicies.networking.k8s.io
for r in ippools bgpconfigurations bgppeers felixconfigurations networkpolicies \
	globalnetworkpolicies networksets globalnetworksets hostendpoints ipamconfigs; do
	can brindle-node yes list "$(crd "$r")"
done
can brindle-node yes create "$(crd ippools)"
can brindle-node no update "$(crd ippools)"
can brindle-node no delete "$(crd ippools)"
for r in ipamblocks blockaffinities ipamhandles; do
	can brindle-node yes update "$(crd "$r")"
done
can brindle-node yes patch nodes --subresource=status
# install-cni: a token for the CNI plugin's account, and for no other
can brindle-node yes create serviceaccounts/brindle-cni --subresource=token -n kube-system
can brindle-node no create serviceaccounts/brindle-controllers --subresource=token -n kube-system
can brindle-node no patch nodes
can brindle-node no delete nodes
can brindle-node no create pods
can brindle-node no patch pods --subresource=status
can brindle-node no create "$(crd globalnetworkpolicies)"
can brindle-node no create networkpolicies.networking.k8s.io

# brindle-cni: one pod's ADD and DEL.
can brindle-cni yes get pods
can brindle-cni yes get namespaces
can brindle-cni yes get nodes
can brindle-cni yes patch pods --subresource=status
can brindle-cni no list pods
can brindle-cni no patch pods
can brindle-cni no delete pods
can brindle-cni yes create "$(crd ipamhandles)"
can brindle-cni yes delete "$(crd ipamblocks)"
can brindle-cni yes get "$(crd ippools)"
can brindle-cni no create "$(crd ippools)"
can brindle-cni no patch nodes --subresource=status

# brindle-controllers: reads pods and nodes, releases IPAM.
can brindle-controllers yes list pods
can brindle-controllers yes list nodes
can brindle-controllers yes delete "$(crd ipamhandles)"
can brindle-controllers yes update "$(crd ipamblocks)"
can brindle-controllers yes create events
can brindle-node no create events
can brindle-controllers no delete pods
can brindle-controllers no delete nodes
can brindle-controllers no patch nodes --subresource=status
can brindle-controllers no create "$(crd ippools)"

# No component reads Secrets, or anything in another group it does not use.
for sa in brindle-node brindle-cni brindle-controllers; do
	can "$sa" no get secrets
	can "$sa" no list secrets -n kube-system
	can "$sa" no list configmaps
	can "$sa" no create deployments.apps
done
bt_log "$checked permissions checked"

# The overlay of docs/install.md ("In short"), as written there, next to a copy of deploy/:
# the image and the settings it changes, and the server accepts the result.
mkdir -p "$BT_DIR/site/my-brindle"
ln -s "$BT_SOURCE_DIR/deploy" "$BT_DIR/site/deploy"
awk '/<!-- overlay -->/ {f=1; next} f && /^```yaml/ {p=1; next} p && /^```/ {exit} p' \
	"$BT_SOURCE_DIR/docs/install.md" >"$BT_DIR/site/my-brindle/kustomization.yaml"
[ -s "$BT_DIR/site/my-brindle/kustomization.yaml" ] || bt_fail "no overlay found in docs/install.md"
kc kustomize "$BT_DIR/site/my-brindle" >"$BT_DIR/overlay.yaml" 2>&1 || bt_fail "the docs' overlay: $(cat "$BT_DIR/overlay.yaml")"
bt_expect_eq "every container runs the overlay's image" "REGISTRY/brindle-node:0.1.0" \
	"$(grep 'image:' "$BT_DIR/overlay.yaml" | sed 's/.*image: //' | sort -u)"
for kv in "CALICO_IPV4POOL_CIDR: 10.244.0.0/16" "CALICO_IPV4POOL_VXLAN: Never" "IP_AUTODETECTION_METHOD: interface=eth0"; do
	bt_expect_contains "the overlay sets $kv" "  $kv" "$(cat "$BT_DIR/overlay.yaml")"
done
kc apply --dry-run=server -k "$BT_DIR/site/my-brindle" >"$BT_DIR/overlay-dry-run.out" 2>&1 ||
	bt_fail "the docs' overlay fails a server-side dry run: $(cat "$BT_DIR/overlay-dry-run.out")"
# and the uninstall DaemonSet
kc apply --dry-run=server -f "$BT_SOURCE_DIR/deploy/uninstall.yaml" >"$BT_DIR/uninstall.out" 2>&1 ||
	bt_fail "deploy/uninstall.yaml fails a server-side dry run: $(cat "$BT_DIR/uninstall.out")"
bt_pass
