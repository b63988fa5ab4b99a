#!/usr/bin/env bash
# A host endpoint on the node's uplink with a policy that denies everything:
# the failsafe ports stay open both ways (SSH in, etcd and DNS out), the
# rest is dropped; removing the policy's deny opens it again.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/policy.sh"

pt_node
# Servers on the node itself (22 is failsafe inbound, 8080 is not) and outside (2379 is failsafe
# outbound, 80 is not).
bt_run_bg node-probe ip netns exec "$NODE" "$PROBE" serve --tcp 22 --tcp 8080
bt_run_bg out-etcd ip netns exec "$OUT" "$PROBE" serve --tcp 2379
pt_allowed out 192.168.100.11 8080
pt_apply <<'YAML'
apiVersion: projectcalico.org/v3
kind: HostEndpoint
metadata: {name: node1-eth0, labels: {host: node1}}
spec: {node: node1, interfaceName: eth0, expectedIPs: [192.168.100.11]}
---
apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: lock-down}
spec:
  selector: host == 'node1'
  types: [Ingress, Egress]
  ingress: [{action: Deny}]
  egress: [{action: Deny}]
YAML
pt_denied out 192.168.100.11 8080
pt_allowed out 192.168.100.11 22
pt_allowed node 192.168.100.1 2379
pt_denied node 192.168.100.1 80
bt_log "failsafe ports open, the rest denied"
# Pods are not host endpoints: their traffic is forwarded, not policed here.
pt_ns h ""
pt_pod h p 10.244.1.60 "app: p"
pt_allowed out 10.244.1.60 80
# An allow for 8080 opens it.
pt_apply <<'YAML'
apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: lock-down}
spec:
  selector: host == 'node1'
  types: [Ingress, Egress]
  ingress: [{action: Allow, protocol: TCP, destination: {ports: [8080]}}]
  egress: [{action: Allow, protocol: TCP, destination: {ports: [80]}}]
YAML
pt_allowed out 192.168.100.11 8080
pt_allowed node 192.168.100.1 80
bt_pass
