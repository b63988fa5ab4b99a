#!/usr/bin/env bash
# The test control plane listening on a routed address (kube-testenv up --addr),
# as a lab puts it for its nodes: kubectl and brindlectl in another network
# namespace reach the API server through a veth, its certificate valid for that
# address; an address the namespace does not have is refused at once, saying so.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/kube.sh"

bt_netns cp
bt_netns node
CP=$BT_PREFIX-cp NODE=$BT_PREFIX-node
ip -n "$CP" link add k0 type veth peer name k0 netns "$NODE"
ip -n "$CP" addr add 10.99.0.1/24 dev k0
ip -n "$NODE" addr add 10.99.0.2/24 dev k0
ip -n "$CP" link set k0 up
ip -n "$NODE" link set k0 up

if out=$(kube_testenv up "$BT_DIR/nowhere" --netns "$CP" --addr 10.99.0.9 2>&1); then
	bt_fail "a control plane came up on an address its namespace does not have"
fi
bt_expect_contains "the missing address named" "cannot bind 10.99.0.9 in $CP" "$out"

kube_up "$BT_DIR/cp" "$CP" --addr 10.99.0.1
K=$BT_DIR/cp
bt_expect_contains "the kubeconfig names the address" "server: https://10.99.0.1:" \
	"$(cat "$K/admin.kubeconfig")"
kube_brindle_crds "$K"
# From the other namespace: kubectl, then brindlectl (libcurl, our kubeconfig reader).
got=$(ip netns exec "$NODE" "$KUBE_BIN/kubectl" --kubeconfig "$K/admin.kubeconfig" get namespace default -o name)
bt_expect_eq "kubectl from the node" "namespace/default" "$got"
nctl() { ip netns exec "$NODE" "$BRINDLECTL" --datastore kubernetes --kubeconfig "$K/admin.kubeconfig" "$@"; }
nctl apply -f - >/dev/null <<'YAML'
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: remote}
spec: {cidr: 10.245.0.0/16}
YAML
bt_expect_contains "brindlectl from the node" "10.245.0.0/16" "$(nctl get ippool remote -o yaml)"
bt_pass
