#!/usr/bin/env bash
# brindlectl datastore migrate, from a real etcd into the real kube-apiserver:
# an etcd holding what a cluster holds (pools, policies with rules, BGP peers
# and configuration, Felix configuration, sets, a host endpoint, and IPAM
# blocks, affinities and handles made by the real brindle-ipam) is locked,
# exported and imported, and every kind reads back the same from both
# datastores (but for uid, resourceVersion and creationTimestamp). Also:
#  - an unlocked store is not exported; the lock refuses brindle-ipam's ADD and
#    brindlectl's writes with the lock's message, and unlock lets them through;
#  - an import that fails part way (an identity without IPAM rights) says what
#    was imported and what was not; --force imports the rest;
#  - a second import is refused and changes nothing;
#  - a Node's BGP settings are named in a warning with the annotations to set.
# etcd listens on a unix socket, reachable from the control plane's namespace
# where brindlectl talks to Kubernetes.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/kube.sh"

bt_start_etcd
kube_test_plane
kc create namespace shop >/dev/null
kc apply -f "$BT_SOURCE_DIR/deploy/rbac/brindlectl.yaml" >/dev/null
ALICE=$(kube_testenv user "$K" alice)
kc create clusterrolebinding alice-brindle --clusterrole brindle-ctl-admin --user alice >/dev/null

ectl() { "$BRINDLECTL" --datastore etcdv3 "$@"; }
kctl() {
	ip netns exec "$NS" "$BRINDLECTL" --datastore kubernetes \
		--kubeconfig "$K/admin.kubeconfig" "$@"
}
IPAM=${BRINDLE_IPAM:-$BT_BUILD_DIR/cni/brindle-ipam}
# ipam_add NODE CONTAINER: brindle-ipam's ADD on etcd; prints its whole answer.
ipam_add() {
	printf '{"cniVersion": "1.0.0", "name": "t", "nodename": "%s", "log_file_path": "",
 "ipam": {"type": "brindle-ipam", "ipam_lock_file": ""}}' "$1" |
		CNI_COMMAND=ADD CNI_CONTAINERID="$2" CNI_PATH=/nonexistent "$IPAM" 2>>"$BT_DIR/ipam.log"
}

# --- what a cluster on etcd holds ---------------------------------------------------------------
ectl apply -f - >/dev/null <<'YAML'
apiVersion: projectcalico.org/v3
kind: Node
metadata: {name: node-a}
spec: {bgp: {ipv4Address: 192.168.1.10/24, asNumber: 64513}}
---
apiVersion: projectcalico.org/v3
kind: Node
metadata: {name: node-b}
spec: {}
---
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pods, labels: {team: net}}
spec: {cidr: 10.244.0.0/16, blockSize: 26, vxlanMode: CrossSubnet, natOutgoing: true}
---
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: spare}
spec: {cidr: 10.245.0.0/24, blockSize: 28, disabled: true, nodeSelector: "rack == 'b'"}
---
apiVersion: projectcalico.org/v3
kind: IPAMConfiguration
metadata: {name: default}
spec: {strictAffinity: false, maxBlocksPerHost: 4}
---
apiVersion: projectcalico.org/v3
kind: BGPConfiguration
metadata: {name: default}
spec: {asNumber: 64512, nodeToNodeMeshEnabled: false, logSeverityScreen: Info,
       serviceClusterIPs: [{cidr: 10.96.0.0/12}]}
---
apiVersion: projectcalico.org/v3
kind: BGPPeer
metadata: {name: tor-1}
spec: {peerIP: 192.168.100.1, asNumber: 64512, nodeSelector: "rack == 'a'"}
---
apiVersion: projectcalico.org/v3
kind: BGPPeer
metadata: {name: node-a-rr}
spec: {node: node-a, peerIP: 192.168.1.1, asNumber: 64600, keepOriginalNextHop: true}
---
apiVersion: projectcalico.org/v3
kind: FelixConfiguration
metadata: {name: default}
spec: {logSeverityScreen: Info, routeRefreshInterval: 30s, vxlanEnabled: true,
       failsafeInboundHostPorts: [{protocol: TCP, port: 22}]}
---
apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: deny-metadata}
spec:
  order: 10
  selector: all()
  types: [Egress]
  egress:
  - action: Deny
    protocol: TCP
    destination: {nets: [169.254.169.254/32], ports: [80, "8000:8080"]}
  - action: Allow
---
apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata: {name: allow-web, namespace: shop, labels: {app: web}}
spec:
  selector: app == 'web'
  types: [Ingress]
  ingress:
  - action: Allow
    protocol: TCP
    source: {selector: role == 'frontend', namespaceSelector: all()}
    destination: {ports: [8080]}
  - action: Allow
    protocol: ICMP
    icmp: {type: 8}
---
apiVersion: projectcalico.org/v3
kind: GlobalNetworkSet
metadata: {name: office, labels: {zone: office}}
spec: {nets: [203.0.113.0/24]}
---
apiVersion: projectcalico.org/v3
kind: NetworkSet
metadata: {name: partners, namespace: shop}
spec: {nets: [198.51.100.0/28]}
---
apiVersion: projectcalico.org/v3
kind: HostEndpoint
metadata: {name: node-a-eth0, labels: {host: node-a}}
spec: {node: node-a, interfaceName: eth0, expectedIPs: [192.168.1.10]}
YAML
for c in a1 a2 a3; do ipam_add node-a "$c" >/dev/null; done
ipam_add node-b b1 >/dev/null
bt_expect_eq "IPAM blocks made" 2 "$(ectl get ipamblocks -o name | wc -l)"
# (and brindle-ipam's own handle of block claims)
bt_expect_eq "IPAM handles made" 5 "$(ectl get ipamhandles -o name | wc -l)"

# --- export needs the lock; the lock stops the writers ------------------------------------------
if err=$(ectl datastore migrate export 2>&1 >/dev/null); then
	bt_fail "an unlocked datastore was exported"
fi
bt_expect_contains "export refused unlocked" "the datastore is not locked" "$err"
out=$(ectl datastore migrate lock)
bt_expect_contains "locked" "Datastore locked" "$out"
bt_expect_contains "locked again" "already locked" "$(ectl datastore migrate lock)"
LOCKED="the datastore is locked for migration (brindlectl datastore migrate unlock)"
if out=$(ipam_add node-b b2); then
	bt_fail "brindle-ipam assigned an address while locked: $out"
fi
bt_expect_contains "brindle-ipam refused with the lock's message" "$LOCKED" "$out"
if err=$(ectl delete ippool spare 2>&1); then
	bt_fail "brindlectl deleted a pool while locked"
fi
bt_expect_contains "brindlectl refused" "$LOCKED" "$err"
bt_expect_eq "no handle added" 5 "$(ectl get ipamhandles -o name | wc -l)"

ectl datastore migrate export >"$BT_DIR/export.yaml" 2>"$BT_DIR/export.err"
exp=$(cat "$BT_DIR/export.yaml")
bt_expect_contains "the header says what is not exported" \
	"#   Node, WorkloadEndpoint and Profile are derived from Kubernetes' Nodes, Pods," "$exp"
bt_expect_contains "IPAM exported" "kind: IPAMBlock" "$exp"
if grep -q "^kind: Node$\|resourceVersion:" "$BT_DIR/export.yaml"; then
	bt_fail "the export holds Nodes or etcd revisions"
fi
warn=$(cat "$BT_DIR/export.err")
bt_expect_contains "Node BGP warning" \
	"kubectl annotate node node-a projectcalico.org/IPv4Address=192.168.1.10/24 projectcalico.org/ASNumber=64513" \
	"$warn"
case "$warn" in *node-b*) bt_fail "a node without BGP settings was named: $warn" ;; esac
bt_expect_contains "counts" "IPAMHandle: 5 exported" "$warn"

# --- import ---------------------------------------------------------------------------------------
if err=$(ectl datastore migrate import -f "$BT_DIR/export.yaml" 2>&1); then
	bt_fail "imported into etcd"
fi
bt_expect_contains "import is for Kubernetes" "writes into the Kubernetes datastore" "$err"
# An identity that may write the Calico kinds but not IPAM (brindle-ctl-admin) gets as far as
# the first IPAM object; the report says what was imported and what was not.
if err=$(ip netns exec "$NS" "$BRINDLECTL" --datastore kubernetes --kubeconfig "$ALICE" \
	datastore migrate import -f "$BT_DIR/export.yaml" 2>&1); then
	bt_fail "an identity without IPAM rights imported IPAM"
fi
bt_expect_contains "the failing object and why" "ipamblock.projectcalico.org/10.244.0.0-26: " "$err"
bt_expect_contains "forbidden" "forbidden" "$err"
bt_expect_contains "what was imported" "Imported before the failure (12 objects):" "$err"
bt_expect_contains "counted by kind" "BGPPeer: 2 imported" "$err"
bt_expect_contains "what was not" "Not imported (9 objects, from ipamblock.projectcalico.org/10.244.0.0-26 on):" "$err"
bt_expect_contains "counted by kind" "IPAMHandle: 5 not imported" "$err"
# The rest, by an identity that may: --force takes a target that holds some already.
if err=$(kctl datastore migrate import -f "$BT_DIR/export.yaml" 2>&1); then
	bt_fail "imported into a datastore holding resources without --force"
fi
out=$(kctl datastore migrate import --force -f "$BT_DIR/export.yaml")
bt_expect_contains "policies imported" "GlobalNetworkPolicy: 1 imported" "$out"
bt_expect_contains "blocks imported" "IPAMBlock: 2 imported" "$out"
bt_expect_contains "affinities imported" "BlockAffinity: 2 imported" "$out"
bt_expect_contains "total" "Imported 21 objects into the Kubernetes datastore." "$out"

# Every kind reads back the same from both datastores.
KINDS="ippools ipamconfigurations bgpconfigurations bgppeers felixconfigurations
	globalnetworkpolicies networkpolicies globalnetworksets networksets hostendpoints
	ipamblocks blockaffinities ipamhandles"
normalise() { grep -vE '^ *(uid|resourceVersion|creationTimestamp): '; }
for kind in $KINDS; do
	want=$(ectl get "$kind" -A -o yaml | normalise)
	got=$(kctl get "$kind" -A -o yaml | normalise)
	grep -q '^    name: ' <<<"$want" || bt_fail "$kind: nothing in etcd to compare: $want"
	bt_expect_eq "$kind the same on Kubernetes" "$want" "$got"
done
bt_expect_contains "the IPAM CRs are there" "10-244-" \
	"$(kc get ipamblocks.crd.projectcalico.org -o name)"

# A second import is refused and changes nothing.
snap() { for kind in $KINDS; do kctl get "$kind" -A -o yaml; done; }
before=$(snap)
if err=$(kctl datastore migrate import -f "$BT_DIR/export.yaml" 2>&1); then
	bt_fail "a second import was accepted"
fi
bt_expect_contains "refused, naming what is there" "already holds Brindle resources (IPPool 2" "$err"
bt_expect_eq "nothing changed" "$before" "$(snap)"
# --force again: everything is there and unchanged, so nothing is written.
out=$(kctl datastore migrate import --force -f "$BT_DIR/export.yaml")
bt_expect_contains "forced" "Imported 21 objects" "$out"
bt_expect_eq "unchanged objects are not rewritten" "$before" "$(snap)"

# The Kubernetes datastore has no lock and is not exported.
if err=$(kctl datastore migrate lock 2>&1); then
	bt_fail "locked the Kubernetes datastore"
fi
bt_expect_contains "lock is for etcd" "works on the etcd datastore" "$err"

# A bad export is refused whole, naming the document and field.
sed 's/blockSize: 26/blockSize: 99/' "$BT_DIR/export.yaml" >"$BT_DIR/bad.yaml"
if err=$(kctl datastore migrate import --force -f "$BT_DIR/bad.yaml" 2>&1); then
	bt_fail "a bad export was imported"
fi
bt_expect_contains "bad input named" "bad.yaml: document 1: spec.blockSize" "$err"

# --- unlock: the writers write again ----------------------------------------------------------------
bt_expect_contains "unlocked" "Datastore unlocked" "$(ectl datastore migrate unlock)"
out=$(ipam_add node-b b2)
bt_expect_contains "brindle-ipam assigns again" '"address":"10.244.' "$out"
bt_pass
