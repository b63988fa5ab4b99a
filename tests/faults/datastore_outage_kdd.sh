#!/usr/bin/env bash
# The Kubernetes datastore's outage: the real kube-apiserver killed for ~25 s
# under felix and confd (with BIRD) on the brindle-node ClusterRole, then
# started again on the same etcd. As with etcd (datastore_outage.sh): the
# loss logged once, ready through the grace period (BRINDLE_DATASTORE_GRACE,
# 8 s here), then 503 with the reason and the in-sync metrics 0, nothing
# programmed changes (the pool's block blackhole, the pod's route, BIRD's
# configuration), and with the API server back both are ready again and log
# the recovery once.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/kube.sh"
. "$(dirname "$0")/../lib/outage.sh"

FELIX=$BT_BUILD_DIR/felix/brindle-felix
kube_test_plane
NODE=$NS
kube_brindle_node "$K"
kc apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Node
metadata:
  name: node1
  annotations: {projectcalico.org/IPv4Address: 192.168.100.11/24}
---
apiVersion: crd.projectcalico.org/v1
kind: IPPool
metadata: {name: pods}
spec: {cidr: 10.244.0.0/16, blockSize: 26}
---
apiVersion: crd.projectcalico.org/v1
kind: BlockAffinity
metadata: {name: node1-10-244-1-0-26}
spec: {node: node1, cidr: 10.244.1.0/26, state: confirmed, deleted: "false"}
YAML
# A pod scheduled here and Running, wired into the kernel as brindle-cni does.
bt_wait_for 30 "the default ServiceAccount" kc -n default get serviceaccount default
kc apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: a, namespace: default}
spec:
  nodeName: node1
  containers: [{name: c, image: registry.invalid/none}]
YAML
kc -n default patch pod a --subresource status --type merge \
	-p '{"status":{"phase":"Running","podIP":"10.244.1.2","podIPs":[{"ip":"10.244.1.2"}]}}' >/dev/null
bt_pod "$NODE" default a 10.244.1.2
IFACE=$(bt_cali default a)

export BRINDLE_DATASTORE_TYPE=kubernetes BRINDLE_KUBECONFIG=$KUBE_NODECFG BRINDLE_DATASTORE_GRACE=8s
bt_run_bg felix ip netns exec "$NODE" env NODENAME=node1 FELIX_PROMETHEUSMETRICSENABLED=true "$FELIX"
outage_confd_bird "$BT_DIR/node1"
both_in_outage() { felix_outage && confd_outage; }
bt_wait_for 30 "felix ready" felix_ready
bt_wait_for 30 "confd ready" confd_ready
bt_wait_for 10 "the pod's route" sh -c "ip -n '$NODE' route show 10.244.1.2 | grep -q $IFACE"
state() {
	ip -n "$NODE" route show proto 80
	cat "$BT_DIR/node1/bird.conf"
}
before=$(state)

pid=$(cat "$K/kube-apiserver.pid")
mapfile -d '' cmd <"/proc/$pid/cmdline"
kill -9 "$pid"
for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
t0=$SECONDS
bt_wait_for 20 "both to notice the API server gone" both_in_outage
bt_log "outage noticed after $((SECONDS - t0)) s"
felix_ready || bt_fail "felix not ready inside the grace period: $(http http://localhost:9099/readiness)"
confd_ready || bt_fail "confd not ready inside the grace period: $(http http://127.0.0.1:9098/readiness)"
bt_wait_for 15 "both not ready after the grace period" neither_ready
bt_log "not ready after $((SECONDS - t0)) s: $(http http://localhost:9099/readiness | head -1)"
bt_expect_contains "felix says why" "datastore: unreachable for" "$(http http://localhost:9099/readiness)"
bt_expect_contains "confd says why" "datastore: unreachable for" "$(http http://127.0.0.1:9098/readiness)"
bt_expect_eq "felix_in_sync" 0 "$(metric http://localhost:9091/metrics felix_in_sync)"
bt_expect_eq "brindle_confd_datastore_in_sync" 0 \
	"$(metric http://127.0.0.1:9098/metrics brindle_confd_datastore_in_sync)"
while [ $((SECONDS - t0)) -lt 25 ]; do sleep 1; done
bt_expect_eq "routes and BIRD's configuration during the outage" "$before" "$(state)"

ip netns exec "$NODE" setsid "${cmd[@]}" >>"$K/kube-apiserver.log" 2>&1 </dev/null &
echo $! >"$K/kube-apiserver.pid"
bt_pids+=($!)
t1=$SECONDS
bt_wait_for 90 "the API server back" kc get --raw /readyz
bt_wait_for 60 "felix ready again" felix_ready
bt_wait_for 60 "confd ready again" confd_ready
bt_log "ready again $((SECONDS - t1)) s after the API server was started"
bt_expect_eq "routes and BIRD's configuration after the outage" "$before" "$(state)"
for d in felix confd; do
	bt_expect_eq "$d: one line at the loss" 1 "$(grep -c 'datastore: unreachable' "$BT_DIR/$d.log")"
	bt_expect_eq "$d: one line at the recovery" 1 \
		"$(grep -c 'in sync again after an outage' "$BT_DIR/$d.log")"
done
bt_pass
