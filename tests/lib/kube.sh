# The Kubernetes test control plane for shell tests (source after common.sh):
# scripts/kube-testenv's servers, which ./scripts/test builds before the tiers
# run. A test of the kube tier fails (never skips) when they are not built.
#   kube_up DIR [NETNS [ARGS...]]  a control plane in DIR (inside NETNS if given; ARGS go
#                                to kube-testenv up, e.g. --addr), ready
#   kube_down DIR                stop it; nothing is left
#   kube_kubectl KUBECONFIG ARGS...   kubectl against it (in its namespace)
#   kube_testenv ARGS...         scripts/kube-testenv itself
#   kube_state DIR NAME          a value of DIR/state (API_PORT, ...)
#   kube_brindle_crds DIR        Brindle's CRDs (deploy/crds.yaml) applied, every one established
#   kube_test_plane [--no-crds]  the usual start of a test: namespace "cp" (NS) with a control
#                                plane in $BT_DIR/cp (K), Brindle's CRDs unless --no-crds;
#                                kc runs kubectl as its admin
#   kube_sa_dir DIR SA           a pod's ServiceAccount mount (token, CA, namespace) of
#                                kube-system/SA, in DIR
#   kube_brindlectl_users        brindlectl's roles (deploy/rbac/brindlectl.yaml): ALICE the
#                                kubeconfig of an admin, BOB of a read-only user;
#                                bctl KUBECONFIG ARGS... runs brindlectl with one, in NS
#   kube_brindle_node DIR        the brindle-node ClusterRole bound to a user of that name;
#                                sets KUBE_NODECFG to its kubeconfig
#   kube_brindle_cni DIR         the same for brindle-cni (deploy/rbac/brindle-cni.yaml);
#                                sets KUBE_CNICFG
#   kube_brindle_controllers DIR the same for brindle-controllers; sets KUBE_CTRLCFG
# Sets KUBE_BIN, KUBE_VERSION, ETCD_VERSION.

KUBE_TESTENV=$BT_SOURCE_DIR/scripts/kube-testenv
kube_vars=$("$KUBE_TESTENV" check) || bt_fail "the kube tier cannot run (see above)"
eval "$kube_vars"
KUBE_NETNS=""

kube_testenv() { "$KUBE_TESTENV" "$@"; }

kube_state() { sed -n "s/^$2=//p" "$1/state"; }

kube_up() {
	local dir=$1
	KUBE_NETNS=${2:-}
	shift $(($# < 2 ? $# : 2))
	if ! "$KUBE_TESTENV" up "$dir" ${KUBE_NETNS:+--netns "$KUBE_NETNS"} "$@" 2>"$BT_DIR/kube-up.log"; then
		cat "$BT_DIR/kube-up.log" >&2
		bt_fail "the control plane did not come up"
	fi
	# The servers die with the test whatever happens (the namespace's cleanup kills them too).
	local f
	for f in "$dir"/*.pid; do
		bt_pids+=("$(cat "$f")")
	done
	# Their logs stay in $BT_DIR for a failure's report.
	ln -sf "$dir/kube-apiserver.log" "$BT_DIR/kube-apiserver.log"
	ln -sf "$dir/kube-controller-manager.log" "$BT_DIR/kube-controller-manager.log"
}

kube_down() { "$KUBE_TESTENV" down "$1"; }

kube_kubectl() {
	local kubeconfig=$1
	shift
	if [ -n "$KUBE_NETNS" ]; then
		ip netns exec "$KUBE_NETNS" "$KUBE_BIN/kubectl" --kubeconfig "$kubeconfig" "$@"
	else
		"$KUBE_BIN/kubectl" --kubeconfig "$kubeconfig" "$@"
	fi
}

kube_brindle_crds() {
	local crds=$BT_SOURCE_DIR/deploy/crds.yaml
	kube_kubectl "$1/admin.kubeconfig" apply -f "$crds" >/dev/null
	bt_wait_for 60 "Brindle's CRDs to be established" \
		kube_kubectl "$1/admin.kubeconfig" wait --for condition=established --timeout=10s -f "$crds"
}

kube_brindle_node() {
	kube_kubectl "$1/admin.kubeconfig" apply -f "$BT_SOURCE_DIR/deploy/rbac/brindle-node.yaml" >/dev/null
	KUBE_NODECFG=$(kube_testenv user "$1" brindle-node)
	kube_kubectl "$1/admin.kubeconfig" create clusterrolebinding brindle-node \
		--clusterrole brindle-node --user brindle-node >/dev/null
}

kube_brindle_cni() {
	kube_kubectl "$1/admin.kubeconfig" apply -f "$BT_SOURCE_DIR/deploy/rbac/brindle-cni.yaml" >/dev/null
	KUBE_CNICFG=$(kube_testenv user "$1" brindle-cni)
	kube_kubectl "$1/admin.kubeconfig" create clusterrolebinding brindle-cni \
		--clusterrole brindle-cni --user brindle-cni >/dev/null
}

kube_brindle_controllers() {
	kube_kubectl "$1/admin.kubeconfig" apply -f "$BT_SOURCE_DIR/deploy/rbac/brindle-controllers.yaml" \
		>/dev/null
	KUBE_CTRLCFG=$(kube_testenv user "$1" brindle-controllers)
	kube_kubectl "$1/admin.kubeconfig" create clusterrolebinding brindle-controllers \
		--clusterrole brindle-controllers --user brindle-controllers >/dev/null
}

# kube_sa_dir DIR SA: what a pod of ServiceAccount kube-system/SA finds mounted (a token,
# the cluster's CA, the namespace), in DIR.
kube_sa_dir() {
	mkdir -p "$1"
	kc -n kube-system create token "$2" >"$1/token"
	cp "$K/pki/ca.crt" "$1/ca.crt"
	echo kube-system >"$1/namespace"
}

kube_test_plane() {
	bt_netns cp
	NS=$BT_PREFIX-cp
	kube_up "$BT_DIR/cp" "$NS"
	K=$BT_DIR/cp
	[ "${1:-}" = --no-crds ] || kube_brindle_crds "$K"
}
kc() { kube_kubectl "$K/admin.kubeconfig" "$@"; }

kube_brindlectl_users() {
	kc apply -f "$BT_SOURCE_DIR/deploy/rbac/brindlectl.yaml" >/dev/null
	ALICE=$(kube_testenv user "$K" alice)
	BOB=$(kube_testenv user "$K" bob)
	kc create clusterrolebinding alice-brindle --clusterrole brindle-ctl-admin --user alice >/dev/null
	kc create clusterrolebinding bob-brindle --clusterrole brindle-ctl-readonly --user bob >/dev/null
}
bctl() {
	local cfg=$1
	shift
	ip netns exec "$NS" "$BRINDLECTL" --datastore kubernetes --kubeconfig "$cfg" "$@"
}
