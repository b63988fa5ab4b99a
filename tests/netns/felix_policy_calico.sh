#!/usr/bin/env bash
# Calico policy, proven with real connections: order, Deny before Allow, Pass
# (to the profiles), Log (its rule counts the packets), GlobalNetworkPolicy,
# network sets by labels, ICMP, negated matches.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/policy.sh"

pt_node
pt_ns c ""
pt_ns d "env: prod"
pt_pod c server 10.244.1.10 "app: server"
pt_pod c bad 10.244.1.11 "role: bad"
pt_pod c good 10.244.1.12 "role: good"
pt_pod d prod 10.244.1.13 "role: good"

# --- order: the lower order decides first ----------------------------------------------------
pt_apply <<'YAML'
apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata: {name: deny-bad, namespace: c}
spec:
  order: 10
  selector: app == 'server'
  ingress: [{action: Deny, source: {selector: role == 'bad'}}]
---
apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata: {name: allow-all, namespace: c}
spec:
  order: 20
  selector: app == 'server'
  ingress: [{action: Allow}]
YAML
pt_denied c bad 10.244.1.10 80
pt_allowed c good 10.244.1.10 80
# The deny policy moves after the allow: the allow decides.
pt_apply <<'YAML'
apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata: {name: deny-bad, namespace: c}
spec:
  order: 30
  selector: app == 'server'
  ingress: [{action: Deny, source: {selector: role == 'bad'}}]
YAML
pt_allowed c bad 10.244.1.10 80
"$BRINDLECTL" delete networkpolicy deny-bad allow-all -n c >/dev/null
# Within one policy, rules in order: Deny before Allow.
pt_apply <<'YAML'
apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata: {name: one, namespace: c}
spec:
  selector: app == 'server'
  ingress:
  - {action: Deny, source: {selector: role == 'bad'}}
  - {action: Allow}
YAML
pt_denied c bad 10.244.1.10 80
pt_allowed c good 10.244.1.10 80
"$BRINDLECTL" delete networkpolicy one -n c >/dev/null
bt_log "order, Deny before Allow: ok"

# --- Pass: skips the remaining policies, the profile decides ---------------------------------
pt_apply <<'YAML'
apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata: {name: pass-good, namespace: c}
spec:
  order: 10
  selector: app == 'server'
  ingress: [{action: Pass, source: {selector: role == 'good'}}]
---
apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata: {name: isolate, namespace: c}
spec:
  order: 20
  selector: app == 'server'
  types: [Ingress]
YAML
pt_allowed c good 10.244.1.10 80
pt_denied c bad 10.244.1.10 80
"$BRINDLECTL" delete networkpolicy pass-good isolate -n c >/dev/null
bt_log "Pass: ok"

# --- Log: logs and goes on ----------------------------------------------------------------------
pt_apply <<'YAML'
apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata: {name: log-then-allow, namespace: c}
spec:
  selector: app == 'server'
  ingress:
  - {action: Log, protocol: TCP, destination: {ports: [443]}}
  - {action: Allow}
YAML
# the Log rule in the kernel first: a connection made on the rules before would count nothing
bt_wait_for 10 "the Log rule in the kernel" pt_has_rule '-j LOG --log-prefix "calico-packet: "' \
	'log prefix "calico-packet: "'
pt_allowed c good 10.244.1.10 443
logged=$(pt_packets '-j LOG --log-prefix "calico-packet: "' 'log prefix "calico-packet: "')
[ "$logged" -gt 0 ] || bt_fail "the Log rule counted no packets"
"$BRINDLECTL" delete networkpolicy log-then-allow -n c >/dev/null
bt_log "Log: ok ($logged packets)"

# --- GlobalNetworkPolicy across namespaces, with a namespaceSelector --------------------------
pt_apply <<'YAML'
apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: no-8080-in-prod}
spec:
  order: 5
  selector: role == 'good'
  namespaceSelector: env == 'prod'
  ingress:
  - {action: Deny, protocol: TCP, destination: {ports: [8080]}}
  - {action: Allow}
YAML
pt_denied c server 10.244.1.13 8080
pt_allowed c server 10.244.1.13 80
pt_allowed c server 10.244.1.12 8080 # namespace c is not prod
"$BRINDLECTL" delete globalnetworkpolicy no-8080-in-prod >/dev/null
bt_log "GlobalNetworkPolicy: ok"

# --- network sets by labels ------------------------------------------------------------------------
pt_apply <<'YAML'
apiVersion: projectcalico.org/v3
kind: GlobalNetworkSet
metadata: {name: outside, labels: {zone: outside}}
spec: {nets: [192.168.100.1/32]}
---
apiVersion: projectcalico.org/v3
kind: NetworkSet
metadata: {name: friends, namespace: c, labels: {zone: friends}}
spec: {nets: [10.244.1.12/32]}
---
apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata: {name: from-sets, namespace: c}
spec:
  selector: app == 'server'
  ingress:
  - {action: Allow, source: {selector: zone == 'outside', namespaceSelector: global()}}
  - {action: Allow, source: {selector: zone == 'friends'}}
YAML
pt_allowed out 10.244.1.10 80
pt_allowed c good 10.244.1.10 80
pt_denied c bad 10.244.1.10 80
# The set changes: the policy follows without any policy change.
pt_apply <<'YAML'
apiVersion: projectcalico.org/v3
kind: NetworkSet
metadata: {name: friends, namespace: c, labels: {zone: friends}}
spec: {nets: [10.244.1.11/32]}
YAML
pt_allowed c bad 10.244.1.10 80
pt_denied c good 10.244.1.10 80
"$BRINDLECTL" delete networkpolicy from-sets -n c >/dev/null
bt_log "network sets: ok"

# --- ICMP and negations -----------------------------------------------------------------------------
pt_apply <<'YAML'
apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata: {name: ping-only, namespace: c}
spec:
  selector: app == 'server'
  ingress:
  - {action: Allow, protocol: ICMP, icmp: {type: 8}}
  - {action: Allow, protocol: TCP, source: {notSelector: role == 'bad'}, destination: {notPorts: [80]}}
YAML
pt_settled
bt_wait_for 15 "ping allowed" ip netns exec "$BT_PREFIX-c-bad" ping -c 1 -W 1 10.244.1.10
pt_denied c bad 10.244.1.10 443
pt_allowed c good 10.244.1.10 443
pt_denied c good 10.244.1.10 80
pt_denied c good 10.244.1.10 53 udp
bt_log "ICMP and negations: ok"

bt_pass
