#!/usr/bin/env bash
# Kubernetes NetworkPolicy, proven with real connections between pods on a
# node running felix: the examples of the Kubernetes documentation
# (test-network-policy, the AND and OR forms of "from", default deny and
# allow all for ingress and egress, endPort, a namespaceSelector with
# matchExpressions) and SCTP (rules only: this kernel has no SCTP sockets).
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/policy.sh"

pt_node

# --- test-network-policy -------------------------------------------------------------------
pt_ns default ""
pt_ns myproject "project: myproject"
pt_pod default db 10.244.1.10 "role: db"
pt_pod default frontend 10.244.1.11 "role: frontend"
pt_pod default other 10.244.1.12 "role: other"
pt_pod myproject any 10.244.1.13 "app: any"
# Before any policy everything is open.
pt_allowed default other 10.244.1.10 80
pt_apply <<'YAML'
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: test-network-policy, namespace: default}
spec:
  podSelector: {matchLabels: {role: db}}
  policyTypes: [Ingress, Egress]
  ingress:
  - from:
    - ipBlock: {cidr: 172.17.0.0/16, except: [172.17.1.0/24]}
    - namespaceSelector: {matchLabels: {project: myproject}}
    - podSelector: {matchLabels: {role: frontend}}
    ports:
    - {protocol: TCP, port: 6379}
  egress:
  - to:
    - ipBlock: {cidr: 10.0.0.0/24}
    ports:
    - {protocol: TCP, port: 5978}
YAML
pt_allowed default frontend 10.244.1.10 6379
pt_denied default frontend 10.244.1.10 80
pt_denied default other 10.244.1.10 6379
pt_allowed myproject any 10.244.1.10 6379
# From outside the cluster: the ipBlock, less its exception.
ip -n "$OUT" addr add 172.17.0.5/32 dev lo
ip -n "$OUT" addr add 172.17.1.5/32 dev lo
ip -n "$OUT" route replace 10.244.1.10/32 via 192.168.100.11 src 172.17.0.5
pt_allowed out 10.244.1.10 6379
ip -n "$OUT" route replace 10.244.1.10/32 via 192.168.100.11 src 172.17.1.5
pt_denied out 10.244.1.10 6379
ip -n "$OUT" route del 10.244.1.10/32
# Egress of db: only 10.0.0.0/24 on TCP 5978.
pt_allowed default db 10.0.0.5 5978
pt_denied default db 10.0.0.5 80
pt_denied default db 10.0.1.5 5978
# The pods the policy does not select are not isolated.
pt_allowed default other 10.244.1.11 80
pt_allowed default other 10.0.1.5 80
bt_log "test-network-policy: ok"

# --- AND versus OR in "from" --------------------------------------------------------------
pt_ns t ""
pt_ns alice "user: alice"
pt_ns bob "user: bob"
pt_pod t target 10.244.1.20 "app: target"
pt_pod t client 10.244.1.21 "role: client"
pt_pod alice client 10.244.1.22 "role: client"
pt_pod alice other 10.244.1.23 "role: other"
pt_pod bob other 10.244.1.24 "role: other"
pt_apply <<'YAML'
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: and, namespace: t}
spec:
  podSelector: {matchLabels: {app: target}}
  ingress:
  - from:
    - namespaceSelector: {matchLabels: {user: alice}}
      podSelector: {matchLabels: {role: client}}
YAML
pt_allowed alice client 10.244.1.20 80
pt_denied alice other 10.244.1.20 80
pt_denied t client 10.244.1.20 80
"$BRINDLECTL" delete networkpolicy.networking.k8s.io and -n t >/dev/null
pt_apply <<'YAML'
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: or, namespace: t}
spec:
  podSelector: {matchLabels: {app: target}}
  ingress:
  - from:
    - namespaceSelector: {matchLabels: {user: alice}}
    - podSelector: {matchLabels: {role: client}}
YAML
pt_allowed alice client 10.244.1.20 80
pt_allowed alice other 10.244.1.20 80
pt_allowed t client 10.244.1.20 80
pt_denied bob other 10.244.1.20 80
bt_log "AND and OR: ok"

# --- default deny and allow all ------------------------------------------------------------
pt_ns dd ""
pt_pod dd a 10.244.1.30 "app: a"
pt_pod dd b 10.244.1.31 "app: b"
pt_apply <<'YAML'
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: default-deny-ingress, namespace: dd}
spec: {podSelector: {}, policyTypes: [Ingress]}
YAML
# every pod of the namespace denies all ingress, even from its own namespace
pt_denied dd a 10.244.1.31 80
pt_denied dd b 10.244.1.30 80
pt_denied t client 10.244.1.30 80
pt_denied t client 10.244.1.31 53 udp
# egress is not isolated
pt_allowed dd a 10.0.0.5 80
pt_apply <<'YAML'
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: allow-all-ingress, namespace: dd}
spec:
  podSelector: {}
  ingress: [{}]
  policyTypes: [Ingress]
YAML
pt_allowed dd b 10.244.1.30 80
pt_allowed t client 10.244.1.31 53 udp
pt_apply <<'YAML'
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: default-deny-egress, namespace: dd}
spec: {podSelector: {}, policyTypes: [Egress]}
YAML
pt_denied dd a 10.0.0.5 80
pt_denied dd a 10.244.1.20 80
pt_apply <<'YAML'
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: allow-all-egress, namespace: dd}
spec:
  podSelector: {}
  egress: [{}]
  policyTypes: [Egress]
YAML
pt_allowed dd a 10.0.0.5 80
"$BRINDLECTL" delete networkpolicy.networking.k8s.io allow-all-ingress allow-all-egress -n dd >/dev/null
pt_denied dd a 10.0.0.5 80
pt_denied t client 10.244.1.30 80
bt_log "default deny and allow all: ok"

# --- endPort ----------------------------------------------------------------------------------
pt_ns ep ""
pt_pod ep p 10.244.1.40 "app: p"
pt_apply <<'YAML'
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: multi-port-egress, namespace: ep}
spec:
  podSelector: {matchLabels: {app: p}}
  policyTypes: [Egress]
  egress:
  - to: [{ipBlock: {cidr: 10.0.0.0/24}}]
    ports: [{protocol: TCP, port: 32000, endPort: 32768}]
YAML
pt_allowed ep p 10.0.0.5 32000
pt_allowed ep p 10.0.0.5 32768
pt_denied ep p 10.0.0.5 31999
pt_denied ep p 10.0.0.5 32769
bt_log "endPort: ok"

# --- namespaceSelector with matchExpressions ----------------------------------------------------
pt_ns svc ""
pt_ns frontend "namespace: frontend"
pt_ns backend "namespace: backend"
pt_ns elsewhere "namespace: elsewhere"
pt_pod svc api 10.244.1.50 "app: api"
pt_pod frontend f 10.244.1.51 "app: f"
pt_pod backend b 10.244.1.52 "app: b"
pt_pod elsewhere e 10.244.1.53 "app: e"
pt_apply <<'YAML'
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: from-tiers, namespace: svc}
spec:
  podSelector: {}
  ingress:
  - from:
    - namespaceSelector:
        matchExpressions:
        - {key: namespace, operator: In, values: [frontend, backend]}
YAML
pt_allowed frontend f 10.244.1.50 80
pt_allowed backend b 10.244.1.50 80
pt_denied elsewhere e 10.244.1.50 80
bt_log "matchExpressions: ok"

# --- SCTP: rules only -----------------------------------------------------------------------------
pt_apply <<'YAML'
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: sctp, namespace: svc}
spec:
  podSelector: {matchLabels: {app: api}}
  ingress:
  - ports: [{protocol: SCTP, port: 5000}]
YAML
bt_wait_for 15 "an SCTP rule in the kernel" pt_has_rule '-p sctp .*--dports 5000 ' \
	'sctp dport 5000 '
bt_log "SCTP: rules present; connections skipped (this kernel has no SCTP sockets)"

bt_pass
