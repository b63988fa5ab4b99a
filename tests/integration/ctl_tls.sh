#!/usr/bin/env bash
# brindlectl's TLS flags and variables against an etcd that requires client certificates.
. "$(dirname "$0")/../lib/common.sh"

D=$BT_DIR/pki
mkdir -p "$D"
cd "$D"
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=bt-ca -keyout ca.key -out ca.crt 2>/dev/null
for who in server client; do
	openssl req -newkey rsa:2048 -nodes -subj "/CN=$who" -keyout $who.key -out $who.csr 2>/dev/null
	printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n' >$who.ext
	openssl x509 -req -in $who.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 1 \
		-extfile $who.ext -out $who.crt 2>/dev/null
done
cd - >/dev/null

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
cport=$(port)
pport=$(port)
bt_run_bg etcd etcd --name bt --data-dir "$BT_DIR/data" \
	--listen-client-urls "https://127.0.0.1:$cport" --advertise-client-urls "https://127.0.0.1:$cport" \
	--listen-peer-urls "http://127.0.0.1:$pport" --initial-advertise-peer-urls "http://127.0.0.1:$pport" \
	--initial-cluster "bt=http://127.0.0.1:$pport" --cert-file "$D/server.crt" --key-file "$D/server.key" \
	--trusted-ca-file "$D/ca.crt" --client-cert-auth --log-level error --logger zap --log-outputs stderr
bt_wait_for 20 "etcd with TLS" curl -sf --cacert "$D/ca.crt" --cert "$D/client.crt" --key "$D/client.key" \
	-X POST "https://127.0.0.1:$cport/v3/kv/range" -d '{"key":"AA=="}'

ctl() { "$BRINDLECTL" "$@"; }
printf 'apiVersion: v1\nkind: Namespace\nmetadata: {name: tls-ok}\n' >"$BT_DIR/ns.yaml"
out=$(ctl --etcd-endpoints "https://127.0.0.1:$cport" --etcd-ca-cert-file "$D/ca.crt" \
	--etcd-cert-file "$D/client.crt" --etcd-key-file "$D/client.key" apply -f "$BT_DIR/ns.yaml")
bt_expect_eq "apply over TLS with flags" "namespace/tls-ok created" "$out"
out=$(BRINDLE_ETCD_ENDPOINTS="https://127.0.0.1:$cport" BRINDLE_ETCD_CA_CERT_FILE=$D/ca.crt \
	BRINDLE_ETCD_CERT_FILE=$D/client.crt BRINDLE_ETCD_KEY_FILE=$D/client.key ctl get ns tls-ok)
bt_expect_contains "get over TLS with variables" "tls-ok" "$out"
if ctl --etcd-endpoints "https://127.0.0.1:$cport" --etcd-ca-cert-file "$D/ca.crt" get ns >/dev/null 2>&1; then
	bt_fail "no client certificate, but the call succeeded"
fi
bt_pass
