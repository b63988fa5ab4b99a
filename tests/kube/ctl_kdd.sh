#!/usr/bin/env bash
# brindlectl with --datastore kubernetes against the real kube-apiserver,
# Brindle's CRDs installed and least-privilege identities (deploy/rbac/
# brindlectl.yaml): an admin applies projectcalico.org/v3 YAML, which lands
# in crd.projectcalico.org/v1 custom resources as Calico stores them; a
# read-only user reads them back and is refused writes; apply is idempotent,
# replace with a stale resourceVersion is a conflict, bad input changes
# nothing, a CR written the way Calico writes it reads back, delete removes.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/kube.sh"

kube_test_plane
kube_brindlectl_users
kc create namespace shop >/dev/null


cat >"$BT_DIR/resources.yaml" <<'YAML'
apiVersion: projectcalico.org/v3
kind: IPPool
metadata:
  name: pool-a
  labels: {team: net}
spec: {cidr: 10.244.0.0/16, blockSize: 26, ipipMode: Never, vxlanMode: CrossSubnet, natOutgoing: true}
---
apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: deny-egress-metadata}
spec:
  order: 10
  selector: all()
  types: [Egress]
  egress:
  - action: Deny
    protocol: TCP
    destination: {nets: [169.254.169.254/32], ports: [80]}
  - action: Allow
---
apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata: {name: allow-web, namespace: shop}
spec:
  selector: app == 'web'
  ingress:
  - action: Allow
    protocol: TCP
    source: {selector: role == 'frontend'}
    destination: {ports: [8080]}
---
apiVersion: projectcalico.org/v3
kind: BGPPeer
metadata: {name: tor-1}
spec: {peerIP: 192.168.100.1, asNumber: 64512}
---
apiVersion: projectcalico.org/v3
kind: FelixConfiguration
metadata: {name: default}
spec: {logSeverityScreen: Info, routeRefreshInterval: 30s}
YAML

out=$(bctl "$ALICE" apply -f "$BT_DIR/resources.yaml")
bt_expect_contains "apply creates" "ippool.projectcalico.org/pool-a created" "$out"
bt_expect_contains "apply creates the namespaced policy" "allow-web created" "$out"

# Stored as Calico stores them: crd.projectcalico.org/v1, spec as is, metadata annotated.
cr=$(kc get ippools.crd.projectcalico.org pool-a -o json)
bt_expect_contains "the CR's spec" '"cidr": "10.244.0.0/16"' "$cr"
bt_expect_contains "the metadata annotation" '"projectcalico.org/metadata"' "$cr"
bt_expect_contains "the labels in it" 'team' "$cr"
bt_expect_eq "the namespaced policy's CR" "allow-web" \
	"$(kc -n shop get networkpolicies.crd.projectcalico.org -o jsonpath='{.items[*].metadata.name}')"

# The read-only identity reads; its writes are refused, with the reason.
got=$(bctl "$BOB" get ippool pool-a -o yaml)
bt_expect_contains "get as read-only" "cidr: 10.244.0.0/16" "$got"
bt_expect_contains "labels read back" "team: net" "$got"
bt_expect_contains "revision read back" "resourceVersion:" "$got"
got=$(bctl "$BOB" get globalnetworkpolicies -o yaml)
bt_expect_contains "the GNP's rule" "169.254.169.254/32" "$got"
got=$(bctl "$BOB" get networkpolicies -n shop -o yaml)
bt_expect_contains "the namespaced policy" "role == 'frontend'" "$got"
if err=$(bctl "$BOB" delete ippool pool-a 2>&1); then
	bt_fail "a read-only identity deleted a pool"
fi
bt_expect_contains "the refusal says why" "forbidden" "$err"
kc get ippools.crd.projectcalico.org pool-a >/dev/null || bt_fail "the pool is gone after a refused delete"

# apply again: nothing written.
rv1=$(kc get ippools.crd.projectcalico.org pool-a -o jsonpath='{.metadata.resourceVersion}')
out=$(bctl "$ALICE" apply -f "$BT_DIR/resources.yaml")
bt_expect_contains "apply again" "ippool.projectcalico.org/pool-a unchanged" "$out"
bt_expect_eq "no write when unchanged" "$rv1" \
	"$(kc get ippools.crd.projectcalico.org pool-a -o jsonpath='{.metadata.resourceVersion}')"
sed -i 's/natOutgoing: true/natOutgoing: false/' "$BT_DIR/resources.yaml"
out=$(bctl "$ALICE" apply -f "$BT_DIR/resources.yaml")
bt_expect_contains "apply a change" "ippool.projectcalico.org/pool-a configured" "$out"
# (false is the default: the canonical form leaves it out)
[ "$(kc get ippools.crd.projectcalico.org pool-a -o jsonpath='{.spec.natOutgoing}')" != true ] ||
	bt_fail "the change was not stored"

# replace at a stale resourceVersion: a conflict, nothing written.
cat >"$BT_DIR/stale.yaml" <<YAML
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pool-a, resourceVersion: "$rv1"}
spec: {cidr: 10.244.0.0/16, blockSize: 26, natOutgoing: true}
YAML
if err=$(bctl "$ALICE" replace -f "$BT_DIR/stale.yaml" 2>&1); then
	bt_fail "replace at a stale resourceVersion succeeded"
fi
bt_expect_contains "the conflict says so" "modified by someone else" "$err"

# Bad input: the error names the file, document and field; nothing stored.
cat >"$BT_DIR/bad.yaml" <<'YAML'
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pool-b}
spec: {cidr: 10.300.0.0/16}
YAML
if err=$(bctl "$ALICE" apply -f "$BT_DIR/bad.yaml" 2>&1); then
	bt_fail "an invalid pool was applied"
fi
bt_expect_contains "bad input named" "bad.yaml: document 1: spec.cidr" "$err"
if kc get ippools.crd.projectcalico.org pool-b >/dev/null 2>&1; then
	bt_fail "an invalid pool was stored"
fi

# All or nothing (issue 16): a set whose last object the API server refuses (a policy in a
# namespace that does not exist: valid to brindlectl, not to the API) writes none of them:
# every write goes as a dry run first.
cat >"$BT_DIR/partial.yaml" <<'YAML'
apiVersion: projectcalico.org/v3
kind: GlobalNetworkSet
metadata: {name: first-of-three}
spec: {nets: [192.0.2.0/24]}
---
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pool-c}
spec: {cidr: 10.77.0.0/16}
---
apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata: {name: p, namespace: no-such-namespace}
spec: {selector: all()}
YAML
if err=$(bctl "$ALICE" apply -f "$BT_DIR/partial.yaml" 2>&1); then
	bt_fail "a set with an object the API server refuses was applied: $err"
fi
bt_expect_contains "the refused object named" "networkpolicy.projectcalico.org/p: create" "$err"
bt_expect_contains "the API server's reason" 'namespaces "no-such-namespace" not found' "$err"
bt_expect_contains "says nothing was written" "nothing was written" "$err"
for cr in globalnetworksets.crd.projectcalico.org/first-of-three ippools.crd.projectcalico.org/pool-c; do
	if kc get "$cr" >/dev/null 2>&1; then
		bt_fail "$cr was written though its set was refused"
	fi
done
out=$(sed '/^---$/,$!d' "$BT_DIR/partial.yaml" | sed '1d' | sed '/^---$/,$d' | bctl "$ALICE" apply -f -)
bt_expect_contains "a valid object alone is applied" "created" "$out"

# A CR as Calico 3.30 writes it (default-tier name prefix, metadata annotation).
kc apply -f - >/dev/null <<'YAML'
apiVersion: crd.projectcalico.org/v1
kind: GlobalNetworkPolicy
metadata:
  name: default.allow-dns
  annotations:
    projectcalico.org/metadata: '{"creationTimestamp":null,"labels":{"owner":"platform"}}'
spec:
  selector: all()
  types: [Egress]
  egress:
  - {action: Allow, protocol: UDP, destination: {ports: [53]}}
YAML
got=$(bctl "$BOB" get globalnetworkpolicy allow-dns -o yaml)
bt_expect_contains "Calico's CR read back" "owner: platform" "$got"
# ... and changed and deleted under its stored name.
bctl "$ALICE" apply -f - >/dev/null <<'YAML'
apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: allow-dns, labels: {owner: platform}}
spec:
  selector: all()
  types: [Egress]
  egress:
  - {action: Allow, protocol: UDP, destination: {ports: [53, 5353]}}
YAML
bt_expect_contains "updated in place" "5353" \
	"$(kc get globalnetworkpolicies.crd.projectcalico.org default.allow-dns -o json)"
bctl "$ALICE" delete globalnetworkpolicy allow-dns >/dev/null
if kc get globalnetworkpolicies.crd.projectcalico.org default.allow-dns >/dev/null 2>&1; then
	bt_fail "Calico's policy survived its delete"
fi

# Kubernetes' own NetworkPolicy: stored as the API's object, read back pruned of
# what the model does not know (managedFields, ...); Namespaces read.
bctl "$ALICE" apply -f - >/dev/null <<'YAML'
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: db-from-api, namespace: shop}
spec:
  podSelector: {matchLabels: {app: db}}
  ingress:
  - from: [{podSelector: {matchLabels: {app: api}}}]
    ports: [{protocol: TCP, port: 5432}]
YAML
bt_expect_eq "the Kubernetes policy" "5432" \
	"$(kc -n shop get networkpolicy db-from-api -o jsonpath='{.spec.ingress[0].ports[0].port}')"
got=$(bctl "$BOB" get networkpolicy.networking.k8s.io -n shop -o yaml)
bt_expect_contains "read back" "app: api" "$got"
got=$(bctl "$BOB" get namespaces -o yaml)
bt_expect_contains "namespaces read" "name: shop" "$got"
bctl "$ALICE" delete networkpolicy.networking.k8s.io db-from-api -n shop >/dev/null
if kc -n shop get networkpolicy db-from-api >/dev/null 2>&1; then
	bt_fail "the Kubernetes policy survived its delete"
fi
if err=$(bctl "$ALICE" apply -f - 2>&1 <<'YAML'
apiVersion: v1
kind: Namespace
metadata: {name: other}
YAML
); then
	bt_fail "brindlectl wrote a Namespace"
fi
bt_expect_contains "namespaces are kubectl's" "written with kubectl" "$err"

# (The kinds derived from Kubernetes objects: tests/kube/ctl_kdd_derived.sh.)

# delete.
bctl "$ALICE" delete ippool pool-a >/dev/null
bctl "$ALICE" delete networkpolicy allow-web -n shop >/dev/null
if kc get ippools.crd.projectcalico.org pool-a >/dev/null 2>&1; then
	bt_fail "the pool survived its delete"
fi
if err=$(bctl "$BOB" get ippool pool-a 2>&1); then
	bt_fail "a deleted pool was found"
fi
bt_expect_contains "not found" 'IPPool "pool-a" not found' "$err"

# KUBECONFIG's list merged as kubectl merges it, and --context: a personal file
# with its own context for bob, the cluster from the admin's file after it.
cat >"$BT_DIR/mine.kubeconfig" <<YAML
apiVersion: v1
kind: Config
users:
- name: bob
  user: {client-certificate: $K/pki/user-bob.crt, client-key: $K/pki/user-bob.key}
contexts:
- name: as-bob
  context: {cluster: brindle-testenv, user: bob}
current-context: as-bob
YAML
mctl() {
	ip netns exec "$NS" env KUBECONFIG="$BT_DIR/missing:$BT_DIR/mine.kubeconfig:$ALICE" \
		"$BRINDLECTL" --datastore kubernetes "$@"
}
mctl get ippools >/dev/null || bt_fail "brindlectl with a merged KUBECONFIG could not read"
refused_merged=$(mctl apply -f - 2>&1 <<'YAML' || true
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pool-m}
spec: {cidr: 10.251.0.0/16}
YAML
)
bt_expect_contains "the merged file's current-context is bob's" 'User "bob" cannot create' "$refused_merged"
mctl --context brindle-testenv apply -f - >/dev/null <<'YAML' || bt_fail "--context did not select alice's context"
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pool-m}
spec: {cidr: 10.251.0.0/16}
YAML
err=$(mctl --context nowhere get ippools 2>&1) && bt_fail "an unknown context was used"
bt_expect_contains "an unknown context named" 'context "nowhere" is not in contexts of any file' "$err"
bt_pass
