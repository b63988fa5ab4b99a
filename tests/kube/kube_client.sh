#!/usr/bin/env bash
# Brindle's Kubernetes API client (lib/sys/kube_client.c) against the real
# kube-apiserver: requests and their errors, pagination, watches (see
# tests/kube/kube_client_check.c), with an admin identity and one without
# grants, the control plane in a private namespace.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/kube.sh"

kube_test_plane --no-crds
kube_testenv user "$K" nobody >/dev/null
# The admin kubeconfig's server and files (kube-testenv writes file paths).
kcfg() { sed -n "s/^ *$2: *//p" "$1" | head -1; }
server=$(kcfg "$K/admin.kubeconfig" server)
bt_log "API server $server"
ip netns exec "$NS" env KUBE_SERVER="$server" \
	KUBE_ETCD_URL="http://127.0.0.1:$(kube_state "$K" ETCD_PORT)" \
	KUBE_CA="$(kcfg "$K/admin.kubeconfig" certificate-authority)" \
	KUBE_CERT="$(kcfg "$K/admin.kubeconfig" client-certificate)" \
	KUBE_KEY="$(kcfg "$K/admin.kubeconfig" client-key)" \
	KUBE_NOBODY_CERT="$(kcfg "$K/nobody.kubeconfig" client-certificate)" \
	KUBE_NOBODY_KEY="$(kcfg "$K/nobody.kubeconfig" client-key)" \
	"$BT_BUILD_DIR/tests/kube_client_check" || bt_fail "kube_client_check failed"
bt_pass
