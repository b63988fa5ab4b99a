#!/usr/bin/env bash
# Connecting to the Kubernetes API (lib/sys/kube_conn.c, lib/core/kubeconfig.c)
# against the real kube-apiserver, with tests/kube/kube_conn_probe: a client
# certificate from files (admin.kubeconfig) and the same inline as -data
# (nothing written to disk), tls-server-name, a ServiceAccount token, a
# tokenFile rewritten between two requests of one agent (the new identity is
# used), in-cluster configuration (BRINDLE_KUBE_SA_DIR and
# KUBERNETES_SERVICE_HOST/PORT), insecure-skip-tls-verify; and the failures a
# user meets: a wrong CA, a wrong server name, a context that is not there, an
# unknown token, an exec plugin, nothing configured.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/kube.sh"

PROBE_BIN=$BT_BUILD_DIR/tests/kube_conn_probe
[ -x "$PROBE_BIN" ] || bt_fail "$PROBE_BIN is not built"
bt_netns cp
NS=$BT_PREFIX-cp
kube_up "$BT_DIR/cp" "$NS"
K=$BT_DIR/cp
PORT=$(kube_state "$K" API_PORT)
# The probe, in the control plane's namespace, with nothing of the caller's environment
# choosing the connection but what a step passes.
probe() {
	ip netns exec "$NS" env -u KUBECONFIG -u KUBERNETES_SERVICE_HOST -u KUBERNETES_SERVICE_PORT \
		-u BRINDLE_KUBE_SA_DIR "$@"
}
P=$PROBE_BIN
D=$BT_DIR/conf
mkdir -p "$D"

# 1. admin.kubeconfig: a client certificate and a CA, as files.
out=$(probe "$P" --kubeconfig "$K/admin.kubeconfig" /version /api/v1/namespaces whoami)
bt_expect_contains "the source" "source: kubeconfig $K/admin.kubeconfig (context brindle-testenv)" "$out"
bt_expect_contains "the server" "server: https://127.0.0.1:$PORT" "$out"
bt_expect_contains "the default namespace" "namespace: default" "$out"
bt_expect_contains "the version" "GET /version -> 200 " "$out"
bt_expect_contains "the version's number" "$KUBE_VERSION" "$out"
bt_expect_contains "namespaces" "GET /api/v1/namespaces -> 200 " "$out"
bt_expect_contains "the identity" "whoami -> admin" "$out"

# 2. The same credentials inline (base64 PEM), in a kubeconfig in another directory; the
# server verified as kubernetes.default.svc, a name of its certificate but not the URL's.
b64() { base64 -w0 "$1"; }
cat >"$D/inline.kubeconfig" <<YAML
apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: https://127.0.0.1:$PORT/
    certificate-authority-data: $(b64 "$K/pki/ca.crt")
    tls-server-name: kubernetes.default.svc
users:
- name: admin
  user:
    client-certificate-data: $(b64 "$K/pki/admin.crt")
    client-key-data: $(b64 "$K/pki/admin.key")
contexts:
- {name: inline, context: {cluster: test, user: admin, namespace: kube-system}}
current-context: inline
YAML
out=$(probe "$P" --kubeconfig "$D/inline.kubeconfig" /version /api/v1/namespaces/kube-system whoami)
bt_expect_contains "inline: the namespace" "namespace: kube-system" "$out"
bt_expect_contains "inline: the version" "GET /version -> 200 " "$out"
bt_expect_contains "inline: a namespace" "GET /api/v1/namespaces/kube-system -> 200 " "$out"
bt_expect_contains "inline: the identity" "whoami -> admin" "$out"
# A name the certificate does not carry fails verification: the name is really used.
sed 's/tls-server-name: kubernetes.default.svc/tls-server-name: elsewhere.example/' \
	"$D/inline.kubeconfig" >"$D/wrong-name.kubeconfig"
if out=$(probe "$P" --kubeconfig "$D/wrong-name.kubeconfig" /version); then
	bt_fail "a server name the certificate lacks was accepted: $out"
fi
bt_expect_contains "the wrong name's error" "/version: error: SSL: no alternative certificate subject name matches target host name 'elsewhere.example'" "$out"

# 3. A ServiceAccount token, with a grant to list namespaces; a second one without.
kc create serviceaccount reader >/dev/null
kc create serviceaccount nobody >/dev/null
kc create clusterrole ns-reader --verb get,list --resource namespaces >/dev/null
kc create clusterrolebinding reader-ns --clusterrole ns-reader --serviceaccount default:reader >/dev/null
TOKEN_KC=$(kube_testenv token "$K" default reader 600)
out=$(probe "$P" --kubeconfig "$TOKEN_KC" /api/v1/namespaces whoami)
bt_expect_contains "token: namespaces" "GET /api/v1/namespaces -> 200 " "$out"
bt_expect_contains "token: the identity" "whoami -> system:serviceaccount:default:reader" "$out"

# 4. tokenFile (relative to the kubeconfig), rewritten between two requests of one agent:
# the second request goes as the new token's ServiceAccount.
kc -n default create token reader --duration 600s >"$D/token"
kc -n default create token nobody --duration 600s >"$D/token.next"
cat >"$D/token-file.kubeconfig" <<YAML
clusters: [{name: c, cluster: {server: 'https://127.0.0.1:$PORT', certificate-authority: ../cp/pki/ca.crt}}]
users: [{name: u, user: {tokenFile: token}}]
contexts: [{name: rotating, context: {cluster: c, user: u}}]
current-context: rotating
YAML
bt_run_bg rotation ip netns exec "$NS" "$P" --kubeconfig "$D/token-file.kubeconfig" \
	whoami /api/v1/namespaces "wait:$D/rotated" whoami /api/v1/namespaces
ROTATION_PID=${bt_pids[-1]}
bt_wait_for 20 "the first requests" grep -q "^GET /api/v1/namespaces" "$BT_DIR/rotation.log"
mv "$D/token.next" "$D/token" # as the kubelet does: a new file in its place
touch "$D/rotated"
wait "$ROTATION_PID" || bt_fail "the rotation probe failed: $(cat "$BT_DIR/rotation.log")"
log=$(cat "$BT_DIR/rotation.log")
bt_expect_eq "requests before and after the token rotated" \
	"source: kubeconfig $D/token-file.kubeconfig (context rotating)
server: https://127.0.0.1:$PORT
namespace: default
whoami -> system:serviceaccount:default:reader
GET /api/v1/namespaces -> 200
wait:$D/rotated -> there
whoami -> system:serviceaccount:default:nobody
GET /api/v1/namespaces -> 403" "$(sed -E 's/^(GET [^ ]+ -> [0-9]+) .*/\1/' <<<"$log")"
bt_expect_contains "the forbidden identity" 'User \"system:serviceaccount:default:nobody\" cannot list resource \"namespaces\"' "$log"

# 5. In-cluster: the ServiceAccount mount (BRINDLE_KUBE_SA_DIR in place of
# /var/run/secrets/kubernetes.io/serviceaccount) and the service's address.
SA=$BT_DIR/sa
mkdir -p "$SA"
kc -n default create token reader --duration 600s >"$SA/token"
cp "$K/pki/ca.crt" "$SA/ca.crt"
echo default >"$SA/namespace"
out=$(probe env BRINDLE_KUBE_SA_DIR="$SA" KUBERNETES_SERVICE_HOST=127.0.0.1 \
	KUBERNETES_SERVICE_PORT="$PORT" "$P" /api/v1/namespaces whoami)
bt_expect_contains "in-cluster: the source" "source: in-cluster" "$out"
bt_expect_contains "in-cluster: the server" "server: https://127.0.0.1:$PORT" "$out"
bt_expect_contains "in-cluster: namespaces" "GET /api/v1/namespaces -> 200 " "$out"
bt_expect_contains "in-cluster: the identity" "whoami -> system:serviceaccount:default:reader" "$out"
# KUBECONFIG, when one of its files exists, comes before in-cluster.
out=$(probe env KUBECONFIG="$D/missing:$TOKEN_KC" BRINDLE_KUBE_SA_DIR="$SA" \
	KUBERNETES_SERVICE_HOST=127.0.0.1 KUBERNETES_SERVICE_PORT="$PORT" "$P" whoami)
bt_expect_contains "KUBECONFIG before in-cluster" "source: kubeconfig $TOKEN_KC" "$out"

# 6. insecure-skip-tls-verify: no CA, and a token.
cat >"$D/insecure.kubeconfig" <<YAML
clusters: [{name: c, cluster: {server: 'https://127.0.0.1:$PORT', insecure-skip-tls-verify: true}}]
users: [{name: u, user: {tokenFile: $SA/token}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
YAML
out=$(probe "$P" --kubeconfig "$D/insecure.kubeconfig" whoami)
bt_expect_contains "insecure: the identity" "whoami -> system:serviceaccount:default:reader" "$out"

# 7. Failures. A CA that did not sign the server's certificate: a TLS error, no request.
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=other-ca \
	-keyout "$D/other-ca.key" -out "$D/other-ca.crt" 2>/dev/null
sed "s|certificate-authority: .*|certificate-authority: $D/other-ca.crt|" "$K/admin.kubeconfig" \
	>"$D/wrong-ca.kubeconfig"
if out=$(probe "$P" --kubeconfig "$D/wrong-ca.kubeconfig" /version); then
	bt_fail "a server was trusted through a CA that did not sign it: $out"
fi
bt_expect_contains "the wrong CA's error" "/version: error: SSL certificate problem: unable to get local issuer certificate" "$out"
# A current-context that is not in the file.
sed 's/^current-context: .*/current-context: staging/' "$K/admin.kubeconfig" >"$D/no-context.kubeconfig"
if out=$(probe "$P" --kubeconfig "$D/no-context.kubeconfig" /version); then
	bt_fail "a missing context was accepted: $out"
fi
bt_expect_eq "the missing context's error" \
	"error: kubeconfig $D/no-context.kubeconfig: context \"staging\" is not in contexts (it is current-context)" "$out"
out=$(probe "$P" --kubeconfig "$K/admin.kubeconfig" --context prod /version) || true
bt_expect_eq "an explicit context that is not there" \
	"error: kubeconfig $K/admin.kubeconfig: context \"prod\" is not in contexts" "$out"
# A token the apiserver does not know: an answer (401), not a transport error.
sed "s|^    token: .*|    token: not-a-token|" "$TOKEN_KC" >"$D/bad-token.kubeconfig"
out=$(probe "$P" --kubeconfig "$D/bad-token.kubeconfig" /api/v1/namespaces)
bt_expect_contains "an unknown token" "GET /api/v1/namespaces -> 401 " "$out"
# An exec plugin is refused by name, before any request.
cat >"$D/exec.kubeconfig" <<YAML
clusters: [{name: c, cluster: {server: 'https://127.0.0.1:$PORT', certificate-authority: $K/pki/ca.crt}}]
users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: get-token}}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
YAML
out=$(probe "$P" --kubeconfig "$D/exec.kubeconfig" /version) || true
bt_expect_contains "an exec plugin" "error: kubeconfig $D/exec.kubeconfig: users[0].user.exec: exec credential plugins are not supported" "$out"
# Nothing configured at all.
out=$(probe "$P" /version) || true
bt_expect_contains "nothing configured" "error: no Kubernetes API configured" "$out"
bt_pass
