#!/usr/bin/env bash
# brindlectl against a real etcd: apply/get/create/replace/delete, defaults,
# all-or-nothing validation of multi-document files, output formats, TLS.
. "$(dirname "$0")/../lib/common.sh"

bt_start_etcd
ctl() { "$BRINDLECTL" "$@"; }
D=$BT_DIR

# --- The Kubernetes docs example: apply, then read it back with defaults. ---
cat >"$D/np.yaml" <<'YAML'
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: test-network-policy
  namespace: default
spec:
  podSelector:
    matchLabels:
      role: db
  policyTypes:
  - Ingress
  - Egress
  ingress:
  - from:
    - ipBlock:
        cidr: 172.17.0.0/16
        except:
        - 172.17.1.0/24
    - namespaceSelector:
        matchLabels:
          project: myproject
    - podSelector:
        matchLabels:
          role: frontend
    ports:
    - protocol: TCP
      port: 6379
  egress:
  - to:
    - ipBlock:
        cidr: 10.0.0.0/24
    ports:
    - protocol: TCP
      port: 5978
YAML
out=$(ctl apply -f "$D/np.yaml")
bt_expect_eq "apply creates" "networkpolicy.networking.k8s.io/test-network-policy created" "$out"
out=$(ctl apply -f "$D/np.yaml")
bt_expect_eq "apply again" "networkpolicy.networking.k8s.io/test-network-policy unchanged" "$out"

# Server-set metadata aside, get returns exactly what was applied.
strip_meta() { grep -v -E '^  (uid|resourceVersion|creationTimestamp):'; }
got=$(ctl get -f "$D/np.yaml" -o yaml | strip_meta)
want='apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: test-network-policy
  namespace: default
spec:
  podSelector:
    matchLabels:
      role: db
  ingress:
  - ports:
    - protocol: TCP
      port: 6379
    from:
    - ipBlock:
        cidr: 172.17.0.0/16
        except:
        - 172.17.1.0/24
    - namespaceSelector:
        matchLabels:
          project: myproject
    - podSelector:
        matchLabels:
          role: frontend
  egress:
  - ports:
    - protocol: TCP
      port: 5978
    to:
    - ipBlock:
        cidr: 10.0.0.0/24
  policyTypes:
  - Ingress
  - Egress'
bt_expect_eq "get -f -o yaml" "$want" "$got"
meta=$(ctl get networkpolicy.networking.k8s.io test-network-policy -o yaml)
bt_expect_contains "uid set" "  uid: " "$meta"
bt_expect_contains "creationTimestamp set" "  creationTimestamp: " "$meta"

# Without policyTypes and protocol, both come back filled in.
# (each "- protocol: TCP" item becomes "- port: N": the dash moves to port)
sed -e '/policyTypes:/,/- Egress/d' -e '/- protocol: TCP/{N;s/- protocol: TCP\n      port:/- port:/}' \
	-e 's/test-network-policy/defaulted/' "$D/np.yaml" >"$D/np-bare.yaml"
grep -q -e policyTypes -e protocol "$D/np-bare.yaml" && bt_fail "sed left policyTypes or protocol in"
ctl apply -f "$D/np-bare.yaml" >/dev/null
got=$(ctl get -f "$D/np-bare.yaml" -o json)
bt_expect_contains "policyTypes defaulted" '"policyTypes": [
      "Ingress",
      "Egress"
    ]' "$got"
[ "$(grep -c '"protocol": "TCP"' <<<"$got")" = 2 ] || bt_fail "protocol not defaulted: $got"

# --- One bad document: nothing written, the error names file, document, field. ---
cat >"$D/bad.yaml" <<'YAML'
apiVersion: v1
kind: Namespace
metadata: {name: should-not-exist}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: also-not}
spec:
  ingress:
  - ports:
    - port: 80
      endPort: 79
YAML
if err=$(ctl apply -f "$D/bad.yaml" 2>&1); then bt_fail "bad file accepted: $err"; fi
bt_expect_contains "error names file, document and field" \
	"$D/bad.yaml: document 2: spec.ingress[0].ports[0].endPort: must be >= port (80)" "$err"
bt_expect_contains "says nothing was written" "nothing was written" "$err"
# An endless stream is refused after 64 MiB, in bounded memory (issue 16: it grew until killed).
if err=$(head -c 80M /dev/zero | ctl apply -f - 2>&1); then bt_fail "an endless stream accepted"; fi
bt_expect_contains "a stream's limit" "standard input: larger than 64 MiB" "$err"
if ctl get namespace should-not-exist >/dev/null 2>&1; then bt_fail "first document was written"; fi

# A bad file among good ones stops all of them.
cat >"$D/good.yaml" <<'YAML'
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pool-a}
spec: {cidr: 10.244.0.0/16}
YAML
if ctl apply -f "$D/good.yaml" -f "$D/bad.yaml" >/dev/null 2>&1; then bt_fail "accepted"; fi
if ctl get ippool pool-a >/dev/null 2>&1; then bt_fail "good file written despite a bad one"; fi

# --- create / replace / delete ---
bt_expect_eq "create" "ippool.projectcalico.org/pool-a created" "$(ctl create -f "$D/good.yaml")"
if err=$(ctl create -f "$D/good.yaml" 2>&1); then bt_fail "create of existing succeeded"; fi
bt_expect_contains "create conflict" 'IPPool "pool-a" already exists' "$err"
# (a pool's cidr cannot change, as in Calico: change what may)
sed 's/cidr: 10.244.0.0\/16}/cidr: 10.244.0.0\/16, natOutgoing: true}/' "$D/good.yaml" >"$D/good2.yaml"
bt_expect_eq "replace" "ippool.projectcalico.org/pool-a replaced" "$(ctl replace -f "$D/good2.yaml")"
bt_expect_eq "apply changed" "ippool.projectcalico.org/pool-a configured" "$(ctl apply -f "$D/good.yaml")"
# A stale resourceVersion makes replace fail.
old=$(ctl get ippool pool-a -o yaml | sed -n 's/^  resourceVersion: "\{0,1\}\([0-9]*\)"\{0,1\}$/\1/p')
[ -n "$old" ] || bt_fail "no resourceVersion in get output"
ctl apply -f "$D/good2.yaml" >/dev/null
sed "s/name: pool-a}/name: pool-a, resourceVersion: \"$old\"}/" "$D/good.yaml" >"$D/stale.yaml"
if err=$(ctl replace -f "$D/stale.yaml" 2>&1); then bt_fail "stale replace succeeded"; fi
bt_expect_contains "stale replace" "modified by someone else" "$err"

# Tables
out=$(ctl get ippools)
bt_expect_eq "ippool table" "NAME     CIDR            SELECTOR
pool-a   10.244.0.0/16   all()" "$out"
out=$(ctl get ippools -o wide)
bt_expect_contains "wide columns" "BLOCKSIZE   IPIP    VXLAN   NATOUTGOING   DISABLED" "$out"

# Namespaces, -n, -A, stdin, JSON
printf '%s' '{"apiVersion":"projectcalico.org/v3","kind":"NetworkPolicy","metadata":{"name":"cp"},"spec":{"selector":"app == '"'"'web'"'"'","ingress":[{"action":"Allow"}]}}' |
	ctl apply -n prod -f - >/dev/null
out=$(ctl get networkpolicy -n prod)
bt_expect_contains "calico np in prod" "cp     " "$out"
out=$(ctl get networkpolicy 2>&1)
bt_expect_contains "default ns empty" "No resources found in default namespace." "$out"
out=$(ctl get networkpolicies.networking.k8s.io -A)
bt_expect_contains "-A shows namespace column" "NAMESPACE   NAME" "$out"
bt_expect_contains "-A lists k8s policies" "default     test-network-policy" "$out"

# delete
bt_expect_eq "delete by name" 'ippool.projectcalico.org "pool-a" deleted' "$(ctl delete ippool pool-a)"
if err=$(ctl delete ippool pool-a 2>&1); then bt_fail "delete of missing succeeded"; fi
bt_expect_contains "delete missing" 'not found' "$err"
ctl delete ippool pool-a --ignore-not-found
bt_expect_eq "delete -f" 'networkpolicy.networking.k8s.io "test-network-policy" deleted' \
	"$(ctl delete -f "$D/np.yaml")"
bt_expect_eq "delete -n" 'networkpolicy.projectcalico.org "cp" deleted' "$(ctl delete np cp -n prod)"

# Usage errors exit 2, unknown kinds are named.
set +e
ctl get frobnicators >/dev/null 2>"$D/err"
rc=$?
set -e
bt_expect_eq "unknown kind exit code" 2 "$rc"
bt_expect_contains "unknown kind" 'unknown resource kind "frobnicators"' "$(cat "$D/err")"
bt_expect_contains "version" "brindlectl version" "$(ctl version)"
bt_expect_contains "version names the transport" "transport: libcurl/" "$(ctl version)"

# Unreachable datastore: a clear error, non-zero exit, bounded time.
start=$SECONDS
if err=$(BRINDLE_ETCD_ENDPOINTS=unix:$D/nothing-here ctl get ippools 2>&1); then
	bt_fail "get against no etcd succeeded"
fi
[ $((SECONDS - start)) -lt 15 ] || bt_fail "unreachable datastore took too long"
bt_expect_contains "unreachable" "Error:" "$err"

bt_pass
