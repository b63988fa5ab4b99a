#!/usr/bin/env bash
# brindlectl with Kubernetes Services and EndpointSlices in etcd: apply, the
# stored keys, tables, defaults, and a status change that apply must write.
. "$(dirname "$0")/../lib/common.sh"

bt_start_etcd
ctl() { "$BRINDLECTL" "$@"; }
D=$BT_DIR

cat >"$D/svc.yaml" <<'YAML'
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec:
  type: LoadBalancer
  externalTrafficPolicy: Local
  clusterIP: 10.96.0.10
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: 8080, nodePort: 30080}]
status:
  loadBalancer:
    ingress: [{ip: 203.0.113.7}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: web-abc12
  namespace: shop
  labels: {kubernetes.io/service-name: web}
addressType: IPv4
ports: [{name: http, port: 8080}]
endpoints:
- addresses: [10.244.1.5]
  nodeName: node-1
- addresses: [10.244.2.6]
  nodeName: node-2
  conditions: {ready: false}
YAML
out=$(ctl apply -f "$D/svc.yaml")
bt_expect_eq "apply" "service/web created
endpointslice.discovery.k8s.io/web-abc12 created" "$out"

for k in /calico/resources/v3/core/services/shop/web \
	/calico/resources/v3/discovery.k8s.io/endpointslices/shop/web-abc12; do
	out=$(curl -sf --unix-socket "$BT_ETCD_SOCK" -X POST http://localhost/v3/kv/range \
		-d "{\"key\":\"$(printf %s "$k" | base64 -w0)\",\"count_only\":true}")
	bt_expect_contains "stored under $k" '"count":"1"' "$out"
done

# AGE changes from one call to the next: compare the rest of one listing.
out=$(ctl get svc -n shop | sed -E 's/[[:space:]]+(AGE|[0-9]+[smhd])$//')
bt_expect_eq "service table" "NAME   TYPE           CLUSTER-IP   EXTERNAL-IP   PORT(S)
web    LoadBalancer   10.96.0.10   203.0.113.7   80:30080/TCP" "$out"
out=$(ctl get endpointslices -A -o wide)
bt_expect_contains "slice table" "shop        web-abc12   IPv4          8080    10.244.1.5" "$out"
bt_expect_contains "slice nodes" "node-1,node-2" "$out"

# Defaults filled in, and the slice's fields at the top of the document.
out=$(ctl get endpointslice web-abc12 -n shop -o yaml)
bt_expect_contains "slice yaml" "addressType: IPv4" "$out"
bt_expect_contains "slice port protocol" "protocol: TCP" "$out"
out=$(ctl get service web -n shop -o json)
bt_expect_contains "sessionAffinity default" '"sessionAffinity": "None"' "$out"

# A new load-balancer address is a change even though the spec is the same.
sed -i 's/203.0.113.7/203.0.113.8/' "$D/svc.yaml"
out=$(ctl apply -f "$D/svc.yaml")
bt_expect_eq "apply status change" "service/web configured
endpointslice.discovery.k8s.io/web-abc12 unchanged" "$out"

# Validation happens before anything is written.
cat >"$D/bad.yaml" <<'YAML'
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: bad, namespace: shop}
addressType: IPv6
endpoints: [{addresses: [10.0.0.1]}]
YAML
set +e
out=$(ctl apply -f "$D/bad.yaml" 2>&1)
rc=$?
set -e
bt_expect_eq "bad slice exit code" 1 "$rc"
bt_expect_contains "bad slice message" 'endpoints[0].addresses[0]: "10.0.0.1" is not an IPv6 address' "$out"

out=$(ctl delete svc web -n shop)
bt_expect_eq "delete" 'service "web" deleted' "$out"
bt_pass
