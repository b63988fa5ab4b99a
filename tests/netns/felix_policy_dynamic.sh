#!/usr/bin/env bash
# Policy follows the datastore without restarting anything: pods created
# after the policy, a pod's labels changing, a namespace's labels changing,
# a policy updated and deleted.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/policy.sh"

pt_node
FIRST_PID=$FELIX_PID
pt_ns dyn "team: blue"
pt_ns peer "team: red"
# The policy first, the pods after.
pt_apply <<'YAML'
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: clients-only, namespace: dyn}
spec:
  podSelector: {matchLabels: {app: server}}
  ingress:
  - from: [{podSelector: {matchLabels: {role: client}}}]
    ports: [{port: 80}]
YAML
pt_settled
pt_pod dyn server 10.244.1.10 "app: server"
pt_pod dyn client 10.244.1.11 "role: client"
pt_pod dyn stranger 10.244.1.12 "role: stranger"
pt_pod peer red 10.244.1.13 "role: client"
pt_allowed dyn client 10.244.1.10 80
pt_denied dyn client 10.244.1.10 443
pt_denied dyn stranger 10.244.1.10 80
pt_denied peer red 10.244.1.10 80
bt_log "pods after the policy: ok"

# A pod's labels change both ways.
pt_label dyn stranger 10.244.1.12 "role: client"
pt_allowed dyn stranger 10.244.1.10 80
pt_label dyn client 10.244.1.11 "role: retired"
pt_denied dyn client 10.244.1.10 80
bt_log "pod labels: ok"

# A namespace's labels: a policy that admits namespaces by label.
pt_apply <<'YAML'
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: from-blue-teams, namespace: dyn}
spec:
  podSelector: {matchLabels: {app: server}}
  ingress:
  - from: [{namespaceSelector: {matchLabels: {team: blue}}}]
    ports: [{port: 443}]
YAML
pt_allowed dyn client 10.244.1.10 443
pt_denied peer red 10.244.1.10 443
pt_ns peer "team: blue"
pt_allowed peer red 10.244.1.10 443
pt_ns dyn "team: green"
pt_denied dyn client 10.244.1.10 443
bt_log "namespace labels: ok"

# The policy changes its port, then goes.
pt_apply <<'YAML'
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: clients-only, namespace: dyn}
spec:
  podSelector: {matchLabels: {app: server}}
  ingress:
  - from: [{podSelector: {matchLabels: {role: client}}}]
    ports: [{port: 8080}]
YAML
pt_allowed dyn stranger 10.244.1.10 8080
pt_denied dyn stranger 10.244.1.10 80
"$BRINDLECTL" delete netpol clients-only from-blue-teams -n dyn >/dev/null
pt_allowed dyn client 10.244.1.10 80
pt_allowed peer red 10.244.1.10 80
bt_log "policy update and delete: ok"

# Nothing was restarted, and what felix no longer needs is gone.
kill -0 "$FIRST_PID" || bt_fail "felix restarted"
[ "$FELIX_PID" = "$FIRST_PID" ] || bt_fail "felix restarted"
pt_settled
sets=$(pt_sets)
bt_expect_eq "no ip sets left once no policy uses them" 0 "$sets"
pi=$(pt_chains 'cali-p[io]-')
bt_expect_eq "no policy chains left" 0 "$pi"
bt_pass
