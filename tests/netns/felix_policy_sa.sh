#!/usr/bin/env bash
# Service accounts in Calico policy, proven with real connections: a policy's
# serviceAccountSelector, a rule's serviceAccounts by names, by selector, both,
# with a namespaceSelector, in NetworkPolicy and GlobalNetworkPolicy; a service
# account's labels changing, a pod changing service account, a pod claiming a
# service account's labels, and a service account whose profile is missing.
# The profiles ksa.<ns>.<sa> are written to etcd the way the Kubernetes
# datastore derives them from ServiceAccounts.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/policy.sh"

pt_node
pt_ns c ""
pt_ns d "env: prod"

# pt_sa NS SA 'LABELS': the profile a ServiceAccount stands for.
pt_sa() {
	pt_apply <<YAML
apiVersion: projectcalico.org/v3
kind: Profile
metadata: {name: ksa.$1.$2}
spec: {labelsToApply: {pcsa.projectcalico.org/name: $2${3:+, }$3}}
YAML
}

pt_sa c server "pcsa.tier: back"
pt_sa c web "pcsa.tier: front"
pt_sa c batch "pcsa.tier: batch"
pt_sa d web "pcsa.tier: front"
pt_pod c server 10.244.1.10 "app: server" "" server
pt_pod c web 10.244.1.11 "" "" web
pt_pod c job 10.244.1.12 "" "" batch
pt_pod d web 10.244.1.13 "" "" web
pt_pod c plain 10.244.1.14 "" # as brindle-cni writes it: no service account, kns.c only
pt_pod c ghost 10.244.1.15 "" "" ghost # ksa.c.ghost exists nowhere

# --- without policy: the namespace's profile allows, a missing ksa profile denies nothing ------
pt_allowed c plain 10.244.1.10 80
pt_allowed c plain 10.244.1.15 80
pt_allowed c ghost 10.244.1.10 80
bt_log "profiles: ok"

# --- serviceAccountSelector, and a rule by names (scoped to the policy's namespace) ------------
pt_apply <<'YAML'
apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata: {name: back-from-web, namespace: c}
spec:
  serviceAccountSelector: tier == 'back'
  ingress: [{action: Allow, source: {serviceAccounts: {names: [web]}}}]
YAML
pt_allowed c web 10.244.1.10 80
pt_denied c job 10.244.1.10 80
pt_denied c plain 10.244.1.10 80
pt_denied d web 10.244.1.10 80 # web of namespace d: not this namespace's
pt_allowed c job 10.244.1.11 80 # the policy does not select web
"$BRINDLECTL" delete networkpolicy back-from-web -n c >/dev/null
bt_log "serviceAccountSelector, names: ok"

# --- a rule by selector, across namespaces; the service account's labels change ----------------
pt_apply <<'YAML'
apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata: {name: back-from-fronts, namespace: c}
spec:
  selector: app == 'server'
  ingress: [{action: Allow, source: {namespaceSelector: all(), serviceAccounts: {selector: tier == 'front'}}}]
YAML
pt_allowed c web 10.244.1.10 80
pt_allowed d web 10.244.1.10 80
pt_denied c job 10.244.1.10 80
pt_denied c ghost 10.244.1.10 80
pt_sa c batch "pcsa.tier: front"
pt_allowed c job 10.244.1.10 80
pt_sa c batch "pcsa.tier: batch"
pt_denied c job 10.244.1.10 80
# A pod cannot lend itself a service account's labels.
pt_label c job 10.244.1.12 "pcsa.tier: front" "" batch
pt_settled
pt_denied c job 10.244.1.10 80
# It changes service account: it is that account's now.
pt_label c job 10.244.1.12 "" "" web
pt_allowed c job 10.244.1.10 80
pt_label c job 10.244.1.12 "" "" batch
pt_denied c job 10.244.1.10 80
"$BRINDLECTL" delete networkpolicy back-from-fronts -n c >/dev/null
bt_log "serviceAccounts selector, labels and accounts changing: ok"

# --- GlobalNetworkPolicy: names and selector together, egress, with a namespaceSelector --------
pt_apply <<'YAML'
apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: webs-not-to-back}
spec:
  order: 10
  serviceAccountSelector: projectcalico.org/name == 'web'
  egress:
  - {action: Deny, destination: {serviceAccounts: {names: [server, batch], selector: tier == 'back'}}}
  - {action: Deny, destination: {namespaceSelector: env == 'prod', serviceAccounts: {names: [web]}}}
  - {action: Allow}
YAML
pt_denied c web 10.244.1.10 80   # server: named and tier back
pt_allowed c web 10.244.1.12 80  # batch: named, not tier back
pt_denied c web 10.244.1.13 80   # web in a prod namespace
pt_allowed c web 10.244.1.14 80  # no service account
pt_allowed c job 10.244.1.10 80  # the policy does not select batch
pt_allowed d web 10.244.1.14 80
"$BRINDLECTL" delete globalnetworkpolicy webs-not-to-back >/dev/null
bt_log "GlobalNetworkPolicy, names and selector: ok"

# --- the missing profile appears, and goes ---------------------------------------------------------
pt_apply <<'YAML'
apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: ghosts-closed}
spec:
  serviceAccountSelector: tier == 'ghost'
  types: [Ingress]
YAML
pt_settled
pt_allowed c plain 10.244.1.15 80
pt_sa c ghost "pcsa.tier: ghost"
pt_denied c plain 10.244.1.15 80
"$BRINDLECTL" delete profile ksa.c.ghost >/dev/null
pt_allowed c plain 10.244.1.15 80
bt_log "missing service account profile: ok"

bt_pass
