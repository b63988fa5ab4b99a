#!/usr/bin/env bash
# brindle-felix on the Kubernetes datastore, as the brindle-node ClusterRole
# allows (deploy/rbac/brindle-node.yaml), against the real kube-apiserver.
# The node is the control plane's own namespace; this test plays the kubelet
# (Pods are API objects whose status it patches, wired into the kernel the way
# brindle-cni does). Routes follow Pods; Kubernetes NetworkPolicies with pod
# and namespace selectors are enforced on real packets, and follow label
# changes; Calico policy by service account (a ServiceAccount's labels) admits only
# that account's pods; its watches share one HTTP/2 connection; a deleted or
# finished pod loses its route; with the API
# server unreachable readiness says why, and recovers; frozen through a change,
# an etcd compaction and an API server crash, it catches up without flapping.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/kube.sh"

FELIX=$BT_BUILD_DIR/felix/brindle-felix
bt_netns cp
bt_netns peer
NODE=$BT_PREFIX-cp
kube_up "$BT_DIR/cp" "$NODE"
K=$BT_DIR/cp

# The node's uplink, as any node has: proxy ARP answers pods only with a route out.
ip -n "$NODE" link add eth0 type veth peer name eth0 netns "$BT_PREFIX-peer"
ip -n "$NODE" addr add 192.168.100.11/24 dev eth0
ip -n "$NODE" link set eth0 up
ip -n "$BT_PREFIX-peer" addr add 192.168.100.1/24 dev eth0
ip -n "$BT_PREFIX-peer" link set eth0 up
ip -n "$NODE" route add default via 192.168.100.1
ip netns exec "$NODE" sysctl -qw net.ipv4.ip_forward=1

kube_brindle_crds "$K"
kube_brindle_node "$K"
NODECFG=$KUBE_NODECFG

kc apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Node
metadata:
  name: node1
  annotations: {projectcalico.org/IPv4Address: 192.168.100.11/24}
---
apiVersion: v1
kind: Namespace
metadata: {name: shop, labels: {env: prod}}
---
apiVersion: v1
kind: Namespace
metadata: {name: other, labels: {env: dev}}
---
apiVersion: crd.projectcalico.org/v1
kind: IPPool
metadata: {name: pool}
spec: {cidr: 10.244.0.0/16, blockSize: 26}
YAML

# pod NAMESPACE NAME IP LABEL: the API object, scheduled here and Running with
# its address, and its interfaces in the kernel.
pod() {
	kc apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: {name: $2, namespace: $1, labels: {app: $4}}
spec:
  nodeName: node1
  containers: [{name: c, image: registry.invalid/none, ports: [{name: http, containerPort: 80}]}]
YAML
	kc -n "$1" patch pod "$2" --subresource status --type merge \
		-p "{\"status\":{\"phase\":\"Running\",\"podIP\":\"$3\",\"podIPs\":[{\"ip\":\"$3\"}]}}" >/dev/null
	bt_pod "$NODE" "$1" "$2" "$3"
}
bt_wait_for 30 "the default ServiceAccounts" kc -n other get serviceaccount default
kc -n shop get serviceaccount default >/dev/null
pod shop web 10.244.1.11 web
pod shop client 10.244.1.12 client
pod other intruder 10.244.1.13 client

bt_run_bg felix ip netns exec "$NODE" env NODENAME=node1 BRINDLE_DATASTORE_TYPE=kubernetes BRINDLE_DATASTORE_GRACE=5s \
	BRINDLE_KUBECONFIG="$NODECFG" FELIX_PROMETHEUSMETRICSENABLED=true "$FELIX"
bt_wait_for 30 "felix ready" bt_http_ok "$NODE" http://localhost:9099/readiness
# Its watches (one per kind) share one HTTP/2 connection; lists go over a kept-alive
# HTTP/1.1 connection of their own. So felix holds two connections to the API server.
API_PORT=$(kube_state "$K" API_PORT)
# this test's felix: the one in its node's namespace (other tests run felix at the same time)
FELIX_PID=$(ip netns pids "$NODE" | xargs -r ps -o pid=,args= -p | awk -v f="$FELIX" '$2 == f {print $1; exit}')
conns=$(ip netns exec "$NODE" ss -tnpH state established "( dport = :$API_PORT )" |
	grep -c "pid=$FELIX_PID,") || true
[ "$conns" -ge 1 ] || bt_fail "no connection of felix (pid $FELIX_PID) to the API server found"
[ "$conns" -le 2 ] || bt_fail "felix holds $conns connections to the API server, not 2 at most: the watches do not share one"
bt_log "felix's connections to the API server: $conns"
for p in "shop web 10.244.1.11" "shop client 10.244.1.12" "other intruder 10.244.1.13"; do
	set -- $p
	bt_wait_for 10 "the route of $1/$2" \
		sh -c "ip -n '$NODE' route show proto 80 | grep -q '^$3 dev $(bt_cali "$1" "$2")'"
done

reach() { # reach FROM_NS FROM_POD IP: one ping answered
	ip netns exec "$BT_PREFIX-$1-$2" ping -c 1 -W 1 "$3" >/dev/null 2>&1
}
reach shop client 10.244.1.11 || bt_fail "client cannot reach web without policy"
reach other intruder 10.244.1.11 || bt_fail "intruder cannot reach web without policy"

# Only pods labelled app=client in the same namespace may reach web.
kc apply -f - >/dev/null <<'YAML'
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web-from-clients, namespace: shop}
spec:
  podSelector: {matchLabels: {app: web}}
  ingress: [{from: [{podSelector: {matchLabels: {app: client}}}]}]
YAML
not_reach() { ! reach "$@"; }
bt_wait_for 10 "the policy to stop the other namespace" not_reach other intruder 10.244.1.11
reach shop client 10.244.1.12 || true
reach shop client 10.244.1.11 || bt_fail "the policy blocks the client it allows"

# A namespace selector lets env=dev in.
kc apply -f - >/dev/null <<'YAML'
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web-from-dev, namespace: shop}
spec:
  podSelector: {matchLabels: {app: web}}
  ingress: [{from: [{namespaceSelector: {matchLabels: {env: dev}}}]}]
YAML
bt_wait_for 10 "the namespace selector to admit the dev namespace" reach other intruder 10.244.1.11

# Labels change on the API objects: the rules follow.
kc label namespace other env=qa --overwrite >/dev/null
bt_wait_for 10 "the namespace's new label to shut it out" not_reach other intruder 10.244.1.11
kc -n shop label pod client app=nobody --overwrite >/dev/null
bt_wait_for 10 "the client's new label to shut it out" not_reach shop client 10.244.1.11

# Calico policy by service account: a ServiceAccount's labels (profile
# ksa.other.robot) let its pods in, and only them.
kc apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: ServiceAccount
metadata: {name: robot, namespace: other, labels: {role: robot}}
---
apiVersion: crd.projectcalico.org/v1
kind: NetworkPolicy
metadata: {name: web-from-robots, namespace: shop}
spec:
  selector: app == 'web'
  types: [Ingress]
  ingress:
  - action: Allow
    source: {serviceAccounts: {selector: role == 'robot'}, namespaceSelector: all()}
YAML
kc apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: bot, namespace: other, labels: {app: bot}}
spec:
  nodeName: node1
  serviceAccountName: robot
  containers: [{name: c, image: registry.invalid/none}]
YAML
kc -n other patch pod bot --subresource status --type merge \
	-p '{"status":{"phase":"Running","podIP":"10.244.1.14","podIPs":[{"ip":"10.244.1.14"}]}}' >/dev/null
bt_pod "$NODE" other bot 10.244.1.14
bt_wait_for 10 "the robot's pod to reach web by its service account" reach other bot 10.244.1.11
not_reach other intruder 10.244.1.11 || bt_fail "the service-account policy let another account in"
kc -n other label serviceaccount robot role=retired --overwrite >/dev/null
bt_wait_for 10 "the service account's new label to shut it out" not_reach other bot 10.244.1.11

# A deleted pod loses its route.
# (no kubelet confirms a graceful deletion: force it, as a node that is gone would need)
kc -n other delete pod intruder --grace-period=0 --force >/dev/null 2>&1
bt_wait_for 10 "the deleted pod's route to go" \
	sh -c "! ip -n '$NODE' route show proto 80 | grep -q '^10.244.1.13 '"
# A finished pod keeps its API object but loses its route (and policy).
kc -n shop patch pod client --subresource status --type merge -p '{"status":{"phase":"Succeeded"}}' >/dev/null
bt_wait_for 10 "the finished pod's route to go" \
	sh -c "! ip -n '$NODE' route show proto 80 | grep -q '^10.244.1.12 '"

# The API server unreachable (its port dropped in the mangle table, which felix
# does not manage; no reset): not ready, with the reason, within keep-alive
# plus the watch's grace (5 s) plus the outage grace (BRINDLE_DATASTORE_GRACE,
# 5 s here); ready again once it is back.
port=$(kube_state "$K" API_PORT)
cut() {
	ip netns exec "$NODE" iptables -w -t mangle "$1" OUTPUT -p tcp --dport "$port" -j DROP
	ip netns exec "$NODE" iptables -w -t mangle "$1" OUTPUT -p tcp --sport "$port" -j DROP
}
not_ready() { ! bt_http_ok "$NODE" http://localhost:9099/readiness; }
cut -I
t0=$SECONDS


bt_wait_for 40 "readiness 503 with the API unreachable" not_ready
body=$(ip netns exec "$NODE" curl -s --max-time 2 http://localhost:9099/readiness || true)
bt_log "not ready after $((SECONDS - t0))s: $body"
bt_expect_contains "readiness says why" "datastore: unreachable for" "$body"
cut -D
bt_wait_for 40 "ready again" bt_http_ok "$NODE" http://localhost:9099/readiness
# felix is frozen (a paused node) while a ServiceAccount changes, etcd
# compacts and the API server is killed and restarted: when it resumes, its
# watches get 410 Gone (too old resource version), it lists again and
# delivers only differences: it gets the change and removes and re-adds no
# route.
kill -STOP "$FELIX_PID"
kc -n other label serviceaccount robot role=robot --overwrite >/dev/null
etcd="http://127.0.0.1:$(kube_state "$K" ETCD_PORT)"
rev=$(ip netns exec "$NODE" curl -sf -X POST "$etcd/v3/kv/range" -d '{"key":"AA=="}' |
	sed -n 's/.*"revision":"\([0-9]*\)".*/\1/p')
ip netns exec "$NODE" curl -sf -X POST "$etcd/v3/kv/compaction" \
	-d "{\"revision\":\"$rev\",\"physical\":true}" >/dev/null || bt_fail "etcd did not compact"
pid=$(cat "$K/kube-apiserver.pid")
mapfile -d '' cmd <"/proc/$pid/cmdline"
kill -9 "$pid" # as the OOM killer would (a graceful stop can take a minute)
for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
ip netns exec "$NODE" setsid "${cmd[@]}" >>"$K/kube-apiserver.log" 2>&1 </dev/null &
echo $! >"$K/kube-apiserver.pid"
bt_pids+=($!)
bt_wait_for 90 "the API server back" kc get --raw /readyz
kill -CONT "$FELIX_PID"
bt_wait_for 30 "the change made while felix was frozen" reach other bot 10.244.1.11
bt_wait_for 30 "felix ready after the restart" bt_http_ok "$NODE" http://localhost:9099/readiness
if grep -q "route 10.244.1.11/32 .* removed" "$BT_DIR/felix.log"; then
	bt_fail "a relist removed a route it should have kept"
fi
# (watches that were quiet come back later, each with its own 410 and relist)
sleep 12
bt_wait_for 60 "felix ready at the end" bt_http_ok "$NODE" http://localhost:9099/readiness
if grep -q "route 10.244.1.11/32 .* removed" "$BT_DIR/felix.log"; then
	bt_fail "a relist removed a route it should have kept"
fi
bt_log "after the restart: $(grep -c 'resync (compacted)' "$BT_DIR/felix.log" || true) relists (410 Gone), no route flapped"
bt_pass
