#!/usr/bin/env bash
# brindle-node install-cni as the DaemonSet's init container runs it: inside
# "the pod" (the brindle-node ServiceAccount's token, the cluster's CA and
# address as a pod has them), against the real kube-apiserver with the
# shipped manifests. The plugins land in the bin directory, a kubeconfig
# for the brindle-cni account (from the TokenRequest API: it is that
# account, with that account's rights only) and the network configuration
# pointing at it; a token for any other account is refused; a bad
# CNI_NETWORK_CONFIG writes nothing; --watch writes fresh tokens; a second
# run leaves identical binaries alone.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/kube.sh"

NODEBIN=$BT_BUILD_DIR/node/brindle-node
kube_test_plane --no-crds
kc apply -k "$BT_SOURCE_DIR/deploy" >/dev/null
mkdir -p "$BT_DIR/bin" "$BT_DIR/net.d"
kube_sa_dir "$BT_DIR/sa" brindle-node

install_cni() {
	ip netns exec "$NS" env -i PATH="$PATH" BRINDLE_KUBE_SA_DIR="$BT_DIR/sa" \
		KUBERNETES_SERVICE_HOST="$(kube_state "$K" API_ADDR)" \
		KUBERNETES_SERVICE_PORT="$(kube_state "$K" API_PORT)" \
		CNI_BIN_DIR="$BT_DIR/bin" CNI_NET_DIR="$BT_DIR/net.d" BRINDLE_CNI_SRC_DIR="$BT_BUILD_DIR/cni" \
		"$@"
}
install_cni "$NODEBIN" install-cni >"$BT_DIR/install.log" 2>&1 || bt_fail "install-cni: $(cat "$BT_DIR/install.log")"
for p in brindle-cni brindle-ipam; do
	cmp -s "$BT_BUILD_DIR/cni/$p" "$BT_DIR/bin/$p" || bt_fail "$p was not installed as built"
	[ -x "$BT_DIR/bin/$p" ] || bt_fail "$p is not executable"
done
conf=$BT_DIR/net.d/10-brindle.conflist
bt_expect_eq "the conflist names the kubeconfig as the host sees it" "/etc/cni/net.d/brindle-kubeconfig" \
	"$(jq -r '.plugins[0].kubernetes.kubeconfig' "$conf")"
bt_expect_eq "and the Kubernetes datastore" "kubernetes" "$(jq -r '.plugins[0].datastore_type' "$conf")"
kcfg=$BT_DIR/net.d/brindle-kubeconfig
bt_expect_eq "the kubeconfig is private" "600" "$(stat -c %a "$kcfg")"
as_cni() { ip netns exec "$NS" "$KUBE_BIN/kubectl" --kubeconfig "$kcfg" "$@"; }
bt_expect_eq "it is the brindle-cni account" "system:serviceaccount:kube-system:brindle-cni" \
	"$(as_cni auth whoami -o jsonpath='{.status.userInfo.username}')"
bt_expect_eq "which may patch a pod's status" "yes" "$(as_cni auth can-i patch pods --subresource=status)"
bt_expect_eq "and not list pods" "no" "$(as_cni auth can-i list pods || true)"

bt_expect_eq "without FELIX_IPV6SUPPORT, no word that felix polices IPv6" "null" \
	"$(jq -r '.plugins[0].felix_ipv6_support' "$conf")"

# felix polices IPv6 (FELIX_IPV6SUPPORT from the same ConfigMap): brindle-cni's entry says so, and
# only that entry; a configuration that says otherwise itself is left as it says.
install_cni FELIX_IPV6SUPPORT=True "$NODEBIN" install-cni >"$BT_DIR/v6.log" 2>&1 ||
	bt_fail "install-cni with FELIX_IPV6SUPPORT: $(cat "$BT_DIR/v6.log")"
bt_expect_eq "brindle-cni's entry says felix polices IPv6" "true" "$(jq -r '.plugins[0].felix_ipv6_support' "$conf")"
bt_expect_eq "portmap's does not" "null" "$(jq -r '.plugins[1].felix_ipv6_support' "$conf")"
bt_expect_eq "the rest as it was" "/etc/cni/net.d/brindle-kubeconfig" \
	"$(jq -r '.plugins[0].kubernetes.kubeconfig' "$conf")"
install_cni FELIX_IPV6SUPPORT=true CNI_NETWORK_CONFIG='{"name": "n", "plugins": [{"type": "brindle-cni", "felix_ipv6_support": false}]}' \
	"$NODEBIN" install-cni >"$BT_DIR/v6.log" 2>&1 || bt_fail "install-cni: $(cat "$BT_DIR/v6.log")"
bt_expect_eq "a configuration's own word stays" "false" "$(jq -r '.plugins[0].felix_ipv6_support' "$conf")"
install_cni "$NODEBIN" install-cni >"$BT_DIR/install.log" 2>&1 || bt_fail "install-cni: $(cat "$BT_DIR/install.log")"

# A token for another account: refused (the role names brindle-cni only); nothing written.
mkdir -p "$BT_DIR/other"
if install_cni CNI_NET_DIR="$BT_DIR/other" BRINDLE_CNI_SERVICEACCOUNT=brindle-controllers \
	"$NODEBIN" install-cni >"$BT_DIR/other.log" 2>&1; then
	bt_fail "a token for brindle-controllers was handed out"
fi
bt_expect_contains "the refusal is named" "ServiceAccount kube-system/brindle-controllers" "$(cat "$BT_DIR/other.log")"
bt_expect_eq "and no configuration written" "" "$(ls "$BT_DIR/other")"

# A bad configuration template: named, and the one in place stays.
before=$(cat "$conf")
if install_cni CNI_NETWORK_CONFIG='{"name": "x", "plugins": [' "$NODEBIN" install-cni >"$BT_DIR/bad.log" 2>&1; then
	bt_fail "a broken CNI_NETWORK_CONFIG was written"
fi
bt_expect_contains "the bad template is named" "CNI_NETWORK_CONFIG is not a JSON object" "$(cat "$BT_DIR/bad.log")"
bt_expect_eq "the configuration in place stays" "$before" "$(cat "$conf")"

# A second run: binaries unchanged, not rewritten.
install_cni "$NODEBIN" install-cni >"$BT_DIR/again.log" 2>&1 || bt_fail "again: $(cat "$BT_DIR/again.log")"
case "$(cat "$BT_DIR/again.log")" in *installed*) bt_fail "identical binaries rewritten" ;; esac

# --watch: fresh tokens.
token() { sed -n 's/^    token: //p' "$kcfg"; }
t1=$(token)
bt_run_bg watch ip netns exec "$NS" env -i PATH="$PATH" BRINDLE_KUBE_SA_DIR="$BT_DIR/sa" \
	KUBERNETES_SERVICE_HOST="$(kube_state "$K" API_ADDR)" KUBERNETES_SERVICE_PORT="$(kube_state "$K" API_PORT)" \
	CNI_BIN_DIR="$BT_DIR/bin" CNI_NET_DIR="$BT_DIR/net.d" BRINDLE_CNI_SRC_DIR="$BT_BUILD_DIR/cni" \
	BRINDLE_CNI_TOKEN_REFRESH=1 "$NODEBIN" install-cni --watch
new_token() { [ -n "$(token)" ] && [ "$(token)" != "$t1" ]; }
bt_wait_for 10 "a fresh token" new_token
bt_expect_eq "the fresh one works" "system:serviceaccount:kube-system:brindle-cni" \
	"$(as_cni auth whoami -o jsonpath='{.status.userInfo.username}')"
bt_pass
