#!/usr/bin/env bash
# The test control plane (scripts/kube-testenv) inside a private namespace:
# the real kube-apiserver, kube-controller-manager and etcd come up and are
# ready; kubectl creates a Namespace, a Pod (Pending: there is no kubelet), a
# networking.k8s.io/v1 NetworkPolicy and a CustomResourceDefinition with an
# object of it, and a watch opened before sees each; the controller manager
# gives the namespace its default ServiceAccount; an identity without a grant
# is refused (403) until an RBAC grant lets it in, both as a client
# certificate and as a ServiceAccount token; down leaves nothing behind.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/kube.sh"

bt_netns cp
kube_up "$BT_DIR/cp" "$BT_PREFIX-cp"
K=$BT_DIR/cp

bt_expect_contains "the server's version" "$KUBE_VERSION" "$(kc version -o json)"
bt_wait_for 30 "the default namespace" kc get namespace default

# A watch, opened before anything is created, through the API's own watch.
bt_run_bg watch ip netns exec "$BT_PREFIX-cp" "$KUBE_BIN/kubectl" \
	--kubeconfig "$K/admin.kubeconfig" get pods \
	-A --watch-only -o name --request-timeout=0
WATCH_PID=${bt_pids[-1]}
bt_run_bg watch-policies ip netns exec "$BT_PREFIX-cp" "$KUBE_BIN/kubectl" \
	--kubeconfig "$K/admin.kubeconfig" get networkpolicies.networking.k8s.io \
	-A --watch-only -o name --request-timeout=0
POLICIES_PID=${bt_pids[-1]}
kc apply -f - >/dev/null <<'YAML'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.brindle.dev}
spec:
  group: example.brindle.dev
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer, minimum: 1}
YAML
bt_wait_for 30 "the CRD to be established" \
	kc wait --for condition=established --timeout=1s crd/widgets.example.brindle.dev
# The watch above started before the CRD existed; start one for widgets now.
bt_run_bg watch-widgets ip netns exec "$BT_PREFIX-cp" "$KUBE_BIN/kubectl" \
	--kubeconfig "$K/admin.kubeconfig" get widgets.example.brindle.dev -A --watch -o name \
	--request-timeout=0
WIDGETS_PID=${bt_pids[-1]}
kc create namespace shop >/dev/null
kc apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: shop, labels: {app: web}}
spec:
  containers: [{name: web, image: registry.invalid/web:1}]
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web-ingress, namespace: shop}
spec:
  podSelector: {matchLabels: {app: web}}
  ingress: [{ports: [{port: 80}]}]
---
apiVersion: example.brindle.dev/v1
kind: Widget
metadata: {name: w1, namespace: shop}
spec: {size: 3}
YAML
bt_wait_for 20 "the watch to see the pod" grep -qx 'pod/web' "$BT_DIR/watch.log"
bt_wait_for 20 "the watch to see the policy" grep -q 'networkpolicy.*/web-ingress' "$BT_DIR/watch-policies.log"
bt_wait_for 20 "the widget watch to see the widget" grep -q 'widget.*/w1' "$BT_DIR/watch-widgets.log"
bt_expect_eq "the pod waits for a kubelet" Pending "$(kc -n shop get pod web -o jsonpath='{.status.phase}')"
# CRD validation is the apiserver's: a widget of size 0 is refused.
if kc apply -f - >/dev/null 2>"$BT_DIR/err" <<'YAML'; then
apiVersion: example.brindle.dev/v1
kind: Widget
metadata: {name: w0, namespace: shop}
spec: {size: 0}
YAML
	bt_fail "the apiserver accepted a widget its schema refuses"
fi
bt_expect_contains "the schema's error" "spec.size" "$(cat "$BT_DIR/err")"
# The controller manager runs: the namespace gets its default ServiceAccount.
bt_wait_for 30 "shop's default ServiceAccount" kc -n shop get serviceaccount default

# Least privilege: an identity without a grant gets 403, then exactly what it is granted.
ALICE=$(kube_testenv user "$K" alice developers)
if kube_kubectl "$ALICE" -n shop get pods >/dev/null 2>"$BT_DIR/err"; then
	bt_fail "alice listed pods without a grant"
fi
bt_expect_contains "alice is forbidden" 'User "alice" cannot list resource "pods"' "$(cat "$BT_DIR/err")"
code=$(ip netns exec "$BT_PREFIX-cp" curl -s -o /dev/null -w '%{http_code}' --cacert "$K/pki/ca.crt" \
	--cert "$K/pki/user-alice.crt" --key "$K/pki/user-alice.key" \
	"https://127.0.0.1:$(kube_state "$K" API_PORT)/api/v1/namespaces/shop/pods")
bt_expect_eq "the HTTP status" 403 "$code"
kc -n shop create role pod-reader --verb get,list,watch --resource pods >/dev/null
kc -n shop create rolebinding developers-read --role pod-reader --group developers >/dev/null
bt_wait_for 10 "alice's grant" kube_kubectl "$ALICE" -n shop get pods web
if kube_kubectl "$ALICE" -n default get pods >/dev/null 2>&1; then
	bt_fail "alice's grant reaches beyond its namespace"
fi

kc -n shop create serviceaccount agent >/dev/null
AGENT=$(kube_testenv token "$K" shop agent 600)
if kube_kubectl "$AGENT" get nodes >/dev/null 2>"$BT_DIR/err"; then
	bt_fail "a ServiceAccount listed nodes without a grant"
fi
bt_expect_contains "the agent is forbidden" \
	'User "system:serviceaccount:shop:agent" cannot list resource "nodes"' "$(cat "$BT_DIR/err")"
kc create clusterrole node-reader --verb get,list --resource nodes >/dev/null
kc create clusterrolebinding agent-nodes --clusterrole node-reader --serviceaccount shop:agent >/dev/null
bt_wait_for 10 "the agent's grant" kube_kubectl "$AGENT" get nodes

# Down: no process of the control plane and no file of it is left.
kill "$WATCH_PID" "$POLICIES_PID" "$WIDGETS_PID" 2>/dev/null || true
wait "$WATCH_PID" "$POLICIES_PID" "$WIDGETS_PID" 2>/dev/null || true
pids=$(cat "$K"/*.pid)
kube_down "$K"
for p in $pids; do
	! kill -0 "$p" 2>/dev/null || bt_fail "process $p of the control plane is still running"
done
[ ! -e "$K" ] || bt_fail "$K is still there: $(ls -A "$K")"
[ -z "$(ip netns pids "$BT_PREFIX-cp")" ] || bt_fail "processes left in the namespace"
bt_pass
