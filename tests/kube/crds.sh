#!/usr/bin/env bash
# The shipped CRDs (deploy/crds.yaml, generated from the model) on the real
# kube-apiserver: kubectl applies them and every one becomes Established with
# Calico's names and scope (the apiserver takes only structural schemas).
# Users' own v3 manifests, converted as Calico's Kubernetes datastore stores
# them (crd.projectcalico.org/v1, same kind and name, spec as is; IPAMConfiguration
# is IPAMConfig), are accepted and read back with the spec unchanged. The
# schema does the apiserver's part of validation: a wrong type, an enum or
# pattern violation, a missing required field are refused naming the field;
# an unknown field is refused by strict field validation, and pruned when the
# client does not validate.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/kube.sh"

CRDS=$BT_SOURCE_DIR/deploy/crds.yaml
[ -s "$CRDS" ] || bt_fail "$CRDS is missing"

bt_netns cp
T0=$SECONDS
kube_up "$BT_DIR/cp" "$BT_PREFIX-cp"
bt_log "up in $((SECONDS - T0)) s"
K=$BT_DIR/cp

# Install and wait: a schema the apiserver finds non-structural is refused here.
kc apply -f "$CRDS" >"$BT_DIR/apply.log" 2>&1 || {
	cat "$BT_DIR/apply.log" >&2
	bt_fail "kubectl apply -f deploy/crds.yaml failed"
}
want=$(grep -c '^kind: CustomResourceDefinition$' "$CRDS")
bt_wait_for 60 "every CRD to be established" \
	kc wait --for condition=established --timeout=5s -f "$CRDS"
got=$(kc get crd -o name | grep -c '\.crd\.projectcalico\.org$')
bt_expect_eq "CRDs served in crd.projectcalico.org" "$want" "$got"
bt_expect_eq "IPAMConfiguration's CRD, as Calico names it" "IPAMConfig ipamconfig Cluster" \
	"$(kc get crd ipamconfigs.crd.projectcalico.org \
		-o jsonpath='{.spec.names.kind} {.spec.names.singular} {.spec.scope}')"
bt_expect_eq "NetworkPolicy is namespaced" Namespaced \
	"$(kc get crd networkpolicies.crd.projectcalico.org -o jsonpath='{.spec.scope}')"
bt_expect_eq "GlobalNetworkPolicy is cluster-wide" Cluster \
	"$(kc get crd globalnetworkpolicies.crd.projectcalico.org -o jsonpath='{.spec.scope}')"
for crd in $(kc get crd -o name | grep '\.crd\.projectcalico\.org$'); do
	bad=$(kc get "$crd" -o jsonpath='{.status.conditions[?(@.type=="NonStructuralSchema")].status}')
	[ -z "$bad" ] || bt_fail "$crd: NonStructuralSchema is $bad"
done
bt_log "$got CRDs established at $((SECONDS - T0)) s"

# v3 YAML → the v1 custom resource Calico's KDD stores: other kinds are not CRDs.
CRD_KINDS="IPPool BGPConfiguration BGPPeer FelixConfiguration NetworkPolicy GlobalNetworkPolicy
NetworkSet GlobalNetworkSet HostEndpoint IPAMConfiguration BlockAffinity IPAMBlock IPAMHandle"
# $2 prefixes every name, so that the fixtures' objects (each file has its "default"
# BGPConfiguration) can all be stored at once.
to_v1() {
	awk -v kinds="$CRD_KINDS" -v prefix="$2" '
		BEGIN { n = split(kinds, k, /[ \n]+/); for (i = 1; i <= n; i++) crd[k[i]] = 1 }
		function flush() {
			if (v3 && keep)
				printf "---\n%s", doc
			doc = ""; v3 = 0; keep = 0
		}
		/^---/ { flush(); next }
		{
			line = $0
			if (line ~ /^apiVersion: projectcalico\.org\/v3[ \t]*$/) {
				line = "apiVersion: crd.projectcalico.org/v1"; v3 = 1
			}
			if (line ~ /^kind: /) {
				kind = line; sub(/^kind: /, "", kind); sub(/[ \t]+$/, "", kind)
				if (kind in crd) keep = 1
				if (kind == "IPAMConfiguration") line = "kind: IPAMConfig"
			}
			if (line ~ /^metadata:/) meta = 1
			else if (line ~ /^[^ #]/) meta = 0
			if (line ~ /^metadata: \{name: / || (meta && line ~ /^  name: /))
				sub(/name: /, "name: " prefix, line)
			doc = doc line "\n"
		}
		END { flush() }' "$1"
}

# "kind/name spec" lines of kubectl -o json output (objects one after another, or a List),
# the spec as canonical JSON.
specs() {
	python3 -c '
import json, sys
text, dec, pos, items = sys.stdin.read(), json.JSONDecoder(), 0, []
while text[pos:].strip():
    pos += len(text[pos:]) - len(text[pos:].lstrip())
    d, pos = dec.raw_decode(text, pos)
    items += d["items"] if d.get("kind") == "List" else [d]
for o in items:
    print("%s/%s %s" % (o["kind"], o["metadata"]["name"],
                         json.dumps(o.get("spec"), sort_keys=True)))' | sort
}

FIXTURES=$(ls "$BT_SOURCE_DIR"/tests/golden/felix/*.yaml "$BT_SOURCE_DIR"/tests/golden/confd/*.yaml \
	"$BT_SOURCE_DIR"/tests/fuzz/corpus/model/{felix,gnp,multi}.yaml)
ALL=$BT_DIR/fixtures-v1.yaml
nfiles=0
for f in $FIXTURES; do
	nfiles=$((nfiles + 1))
	to_v1 "$f" "f$nfiles-"
done >"$ALL"
for ns in $(grep -o '^  namespace: [a-z0-9-]*\|namespace: [a-z0-9-]*[,}]' "$ALL" |
	sed 's/.*namespace: //; s/[,}]$//' | sort -u); do
	kc get namespace "$ns" >/dev/null 2>&1 || kc create namespace "$ns" >/dev/null
done
# The apiserver's answer is what it stored; compare it with what kubectl sent.
if ! kc create -o json -f "$ALL" >"$BT_DIR/stored.json" 2>"$BT_DIR/create.err"; then
	cat "$BT_DIR/create.err" >&2
	bt_fail "the apiserver refused users' manifests as v1 custom resources"
fi
specs <"$BT_DIR/stored.json" >"$BT_DIR/stored"
kc create --dry-run=client -o json -f "$ALL" | specs >"$BT_DIR/sent"
if ! diff -u "$BT_DIR/sent" "$BT_DIR/stored" >"$BT_DIR/diff"; then
	cat "$BT_DIR/diff" >&2
	bt_fail "a spec did not come back as it was written (pruned?)"
fi
declare -A seen_kinds=()
for kind in $(cut -d/ -f1 "$BT_DIR/sent"); do seen_kinds[$kind]=1; done
nobjs=$(wc -l <"$BT_DIR/sent")
bt_log "at $((SECONDS - T0)) s: $nobjs objects of ${#seen_kinds[@]} kinds from $nfiles users' manifest files stored unchanged: ${!seen_kinds[*]}"
[ "${#seen_kinds[@]}" -ge 9 ] || bt_fail "the fixtures cover only ${!seen_kinds[*]}"

# Brindle's own IPAM objects and the IPAMConfig singleton, as the model encodes them.
kc create -f - >/dev/null <<'YAML'
apiVersion: crd.projectcalico.org/v1
kind: IPAMConfig
metadata: {name: default}
spec: {strictAffinity: false, autoAllocateBlocks: true, maxBlocksPerHost: 0}
---
apiVersion: crd.projectcalico.org/v1
kind: IPAMBlock
metadata: {name: 10-244-1-0-30}
spec:
  cidr: 10.244.1.0/30
  affinity: host:node-a
  allocations: [0, null, 1, null]
  unallocated: [1, 3]
  attributes:
  - {handle_id: k8s-pod-network.c0ffee, secondary: {namespace: shop, node: node-a, pod: web}}
  - {handle_id: vxlan-tunnel-addr-node-a}
  sequenceNumber: 1700000000000000001
---
apiVersion: crd.projectcalico.org/v1
kind: IPAMHandle
metadata: {name: k8s-pod-network.c0ffee}
spec: {handleID: k8s-pod-network.c0ffee, block: {10.244.1.0/30: 1}}
YAML
bt_expect_eq "an IPAM block keeps its free ordinals (nullable)" '[0,null,1,null]' \
	"$(kc get ipamblocks 10-244-1-0-30 -o jsonpath='{.spec.allocations}')"
bt_expect_eq "a 64-bit sequence number" 1700000000000000001 \
	"$(kc get ipamblocks 10-244-1-0-30 -o jsonpath='{.spec.sequenceNumber}')"
bt_expect_eq "a handle's block counts" '{"10.244.1.0/30":1}' \
	"$(kc get ipamhandles k8s-pod-network.c0ffee -o jsonpath='{.spec.block}')"

# refused DOC FIELD WANT...: the apiserver refuses DOC, naming FIELD and each WANT.
refused() {
	local what=$1 field=$2
	shift 2
	if kc create -f - >/dev/null 2>"$BT_DIR/err"; then
		bt_fail "the apiserver accepted $what"
	fi
	bt_expect_contains "$what: the field" "$field" "$(cat "$BT_DIR/err")"
	local w
	for w in "$@"; do
		bt_expect_contains "$what: the reason" "$w" "$(cat "$BT_DIR/err")"
	done
}

refused "a block size that is not an integer" "spec.blockSize" 'Invalid value: "string"' \
	<<'YAML'
apiVersion: crd.projectcalico.org/v1
kind: IPPool
metadata: {name: bad-type}
spec: {cidr: 10.9.0.0/16, blockSize: "x"}
YAML
refused "an encapsulation mode out of its enum" "spec.ipipMode" "Unsupported value" \
	'"CrossSubnet"' <<'YAML'
apiVersion: crd.projectcalico.org/v1
kind: IPPool
metadata: {name: bad-enum}
spec: {cidr: 10.9.0.0/16, ipipMode: Sometimes}
YAML
refused "a rule action out of its enum, deep in a policy" "spec.ingress[0].action" \
	"Unsupported value" <<'YAML'
apiVersion: crd.projectcalico.org/v1
kind: GlobalNetworkPolicy
metadata: {name: bad-action}
spec:
  selector: all()
  ingress: [{action: Maybe}]
YAML
refused "a port that is neither a number nor a name" "spec.ingress[0].destination.ports[0]" \
	<<'YAML'
apiVersion: crd.projectcalico.org/v1
kind: NetworkPolicy
metadata: {name: bad-port, namespace: default}
spec:
  ingress: [{action: Allow, protocol: TCP, destination: {ports: [true]}}]
YAML
refused "a rule without its required action" "spec.egress[0].action" "Required value" <<'YAML'
apiVersion: crd.projectcalico.org/v1
kind: GlobalNetworkPolicy
metadata: {name: no-action}
spec:
  egress: [{protocol: UDP}]
YAML
refused "a pool without a CIDR" "spec.cidr" "Required value" <<'YAML'
apiVersion: crd.projectcalico.org/v1
kind: IPPool
metadata: {name: no-cidr}
spec: {natOutgoing: true}
YAML
refused "a log level Felix does not know" "spec.logSeverityScreen" <<'YAML'
apiVersion: crd.projectcalico.org/v1
kind: FelixConfiguration
metadata: {name: default}
spec: {logSeverityScreen: Verbose}
YAML
refused "a port out of range" "spec.healthPort" "65535" <<'YAML'
apiVersion: crd.projectcalico.org/v1
kind: FelixConfiguration
metadata: {name: default}
spec: {healthPort: 70000}
YAML
refused "an AS number as text" "spec.asNumber" <<'YAML'
apiVersion: crd.projectcalico.org/v1
kind: BGPPeer
metadata: {name: bad-asn}
spec: {peerIP: 192.0.2.1, asNumber: "six"}
YAML
refused "a node name that is a list" "spec.node" <<'YAML'
apiVersion: crd.projectcalico.org/v1
kind: HostEndpoint
metadata: {name: bad-node}
spec: {node: [a, b], interfaceName: eth0}
YAML
refused "a map of strings with a list in it" "spec.ingress[0].metadata.annotations.owner" <<'YAML'
apiVersion: crd.projectcalico.org/v1
kind: GlobalNetworkPolicy
metadata: {name: bad-annotation}
spec:
  ingress: [{action: Allow, metadata: {annotations: {owner: [a, b]}}}]
YAML

# Unknown fields: strict field validation (kubectl's default) names them...
UNKNOWN='apiVersion: crd.projectcalico.org/v1
kind: IPPool
metadata: {name: extra}
spec:
  cidr: 10.10.0.0/16
  natOutgoing: true
  floatingIPs: Enabled
  allowedUses: [Workload]
  nodeSelector: all()'
if kc create -f - >/dev/null 2>"$BT_DIR/err" <<<"$UNKNOWN"; then
	bt_fail "strict field validation accepted spec.floatingIPs"
fi
bt_expect_contains "strict validation names the unknown field" 'unknown field "spec.floatingIPs"' \
	"$(cat "$BT_DIR/err")"
# ...and without it the apiserver prunes them; the known fields stay.
kc create --validate=false -f - >/dev/null <<<"$UNKNOWN"
kc create --validate=false -f - >/dev/null <<'YAML'
apiVersion: crd.projectcalico.org/v1
kind: GlobalNetworkPolicy
metadata: {name: extra}
spec:
  selector: all()
  ingress:
  - action: Allow
    source: {nets: [10.0.0.0/8], tier2: yes}
    https: {methods: [GET]}
YAML
bt_expect_eq "the pool read back" '{"allowedUses":["Workload"],"cidr":"10.10.0.0/16","natOutgoing":true,"nodeSelector":"all()"}' \
	"$(kc get ippools extra -o json | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["spec"], sort_keys=True, separators=(",", ":")))')"
bt_expect_eq "the policy read back" '{"ingress":[{"action":"Allow","source":{"nets":["10.0.0.0/8"]}}],"selector":"all()"}' \
	"$(kc get globalnetworkpolicies extra -o json | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["spec"], sort_keys=True, separators=(",", ":")))')"

# Calico's http match is in the schema, so the apiserver keeps it: Brindle sees it, refuses it
# from users, and fails a stored one closed (felix), rather than never knowing it was there.
kc create -f - >/dev/null <<'YAML'
apiVersion: crd.projectcalico.org/v1
kind: GlobalNetworkPolicy
metadata: {name: l7}
spec:
  selector: all()
  ingress:
  - action: Deny
    http: {methods: [POST]}
YAML
bt_expect_eq "the http match kept" '[{"action":"Deny","http":{"methods":["POST"]}}]' \
	"$(kc get globalnetworkpolicies l7 -o json | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["spec"]["ingress"], sort_keys=True, separators=(",", ":")))')"

bt_log "checks done at $((SECONDS - T0)) s"
kube_down "$K"
bt_pass
