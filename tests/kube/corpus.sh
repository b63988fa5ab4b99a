#!/usr/bin/env bash
# The manifest corpus (tests/data/calico-v3/*.yaml: every field of the kinds
# Brindle added for Calico's whole v3 API) applied with brindlectl to a real
# etcd and to the real kube-apiserver (under the brindle-ctl-admin role of
# deploy/rbac/brindlectl.yaml): every document is created, reads back the same
# from both datastores, and what `get -o yaml` prints (a List) re-applies
# unchanged; a typed list (kind: TierList, what calicoctl prints) applies too.
# And Calico's IP pool rules: cidr and blockSize immutable, no overlapping pools.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/kube.sh"

bt_start_etcd
kube_test_plane
kc create namespace prod >/dev/null
kc apply -f "$BT_SOURCE_DIR/deploy/rbac/brindlectl.yaml" >/dev/null
ALICE=$(kube_testenv user "$K" alice)
kc create clusterrolebinding alice-brindle --clusterrole brindle-ctl-admin --user alice >/dev/null

ectl() { "$BRINDLECTL" --datastore etcdv3 "$@"; }
kctl() { ip netns exec "$NS" "$BRINDLECTL" --datastore kubernetes --kubeconfig "$ALICE" "$@"; }
cat "$BT_SOURCE_DIR"/tests/data/calico-v3/new-kinds.yaml <(echo ---) \
	"$BT_SOURCE_DIR"/tests/data/calico-v3/felixconfiguration.yaml >"$BT_DIR/corpus.yaml"
CORPUS=$BT_DIR/corpus.yaml
KINDS="tiers ipreservations bgpfilters kubecontrollersconfigurations caliconodestatuses
	stagednetworkpolicies stagedglobalnetworkpolicies stagedkubernetesnetworkpolicies
	felixconfigurations clusterinformations"
ndocs=$(grep -c '^kind: ' "$CORPUS")
normalise() { grep -vE '^ *(uid|resourceVersion|creationTimestamp): '; }

for ds in ectl kctl; do
	out=$($ds apply -f "$CORPUS" 2>"$BT_DIR/warnings")
	bt_expect_eq "$ds: every document created" "$ndocs" "$(grep -c ' created$' <<<"$out")"
	# What Brindle stores but does not act on is said, one line per resource.
	w=$(cat "$BT_DIR/warnings")
	bt_expect_contains "$ds: no-effect fields named" \
		"Warning: felixconfiguration.projectcalico.org/default: accepted, no effect in Brindle: spec.wireguardEnabled (Brindle has no WireGuard: traffic between nodes is NOT encrypted)" "$w"
	bt_expect_contains "$ds: staged actions not previewed said" \
		"stagedglobalnetworkpolicy.projectcalico.org/deny-egress: accepted, no effect in Brindle: spec.stagedAction (Learn and Ignore are stored, not previewed; Set and Delete are)" "$w"
	case "$w" in *db-lockdown*) bt_fail "$ds: a staged policy that is previewed was warned about" ;; esac
	case "$w" in *tier.projectcalico.org*) bt_fail "$ds: a Tier (which has effect) was warned about" ;; esac
	: >"$BT_DIR/$ds.yaml"
	for kind in $KINDS; do
		y=$($ds get "$kind" -A -o yaml)
		grep -q '^    name: ' <<<"$y" || bt_fail "$ds: no $kind read back: $y"
		printf '%s\n---\n' "$y" >>"$BT_DIR/$ds.yaml"
	done
	# What get prints re-applies, and changes nothing.
	out=$($ds apply -f "$BT_DIR/$ds.yaml")
	bt_expect_eq "$ds: get's output re-applies unchanged" "$ndocs" \
		"$(grep -c ' unchanged$' <<<"$out")"
	bt_expect_eq "$ds: nothing but unchanged" "" "$(grep -v ' unchanged$' <<<"$out" || true)"
done

for kind in $KINDS; do
	bt_expect_eq "$kind the same on both datastores" \
		"$(ectl get "$kind" -A -o yaml | normalise)" "$(kctl get "$kind" -A -o yaml | normalise)"
done
bt_expect_contains "the CRs are Calico's" "tier.crd.projectcalico.org/security" \
	"$(kc get tiers.crd.projectcalico.org -o name)"

# The typed list calicoctl prints, with items that leave out apiVersion and kind.
for ds in ectl kctl; do
	out=$($ds apply -f - <<'YAML'
apiVersion: projectcalico.org/v3
kind: TierList
metadata: {resourceVersion: "1"}
items:
- metadata: {name: platform}
  spec: {order: 200}
YAML
)
	bt_expect_eq "$ds: a TierList applies" "tier.projectcalico.org/platform created" "$out"
	y=$($ds get tier platform -o yaml)
	bt_expect_contains "$ds: the order given" "order: 200" "$y"
	bt_expect_contains "$ds: Calico's default action" "defaultAction: Deny" "$y"
done
# refused WHAT ERROR: applying standard input with $ds fails, saying ERROR.
refused() {
	local err
	if err=$($ds apply -f - 2>&1); then bt_fail "$1: accepted"; fi
	bt_expect_contains "$1" "$2" "$err"
}

# Calico's rules for IP pools, which protect IPAM on a live cluster, on both datastores: an
# existing pool's cidr and blockSize cannot change; a pool may not overlap another, stored or in
# the same file; and a refused file writes nothing.
for ds in ectl kctl; do
	$ds apply -f - >/dev/null <<'YAML'
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pool-a}
spec: {cidr: 10.50.0.0/16, blockSize: 26}
YAML
	refused "$ds: cidr is immutable" \
		"IPPool pool-a: spec.cidr cannot be changed (10.50.0.0/16 to 10.51.0.0/16)" <<'YAML'
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pool-a}
spec: {cidr: 10.51.0.0/16, blockSize: 26}
YAML
	refused "$ds: blockSize is immutable" \
		"IPPool pool-a: spec.blockSize cannot be changed (26 to 28)" <<'YAML'
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pool-a}
spec: {cidr: 10.50.0.0/16, blockSize: 28}
YAML
	refused "$ds: overlap refused" \
		"IPPool pool-b: spec.cidr 10.50.128.0/17 overlaps IPPool pool-a (10.50.0.0/16)" <<'YAML'
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pool-b}
spec: {cidr: 10.50.128.0/17}
YAML
	refused "$ds: overlap within a file refused" \
		"IPPool pool-d: spec.cidr 10.60.7.0/24 overlaps IPPool pool-c (10.60.0.0/16)" <<'YAML'
- {apiVersion: projectcalico.org/v3, kind: IPPool, metadata: {name: pool-c}, spec: {cidr: 10.60.0.0/16}}
- {apiVersion: projectcalico.org/v3, kind: IPPool, metadata: {name: pool-d}, spec: {cidr: 10.60.7.0/24}}
YAML
	bt_expect_eq "$ds: nothing of the refused file written" "" \
		"$($ds get ippools -o name | grep -E 'pool-[bcd]' || true)"
	# A change that keeps cidr and blockSize is fine.
	out=$($ds apply -f - <<'YAML'
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pool-a}
spec: {cidr: 10.50.0.0/16, blockSize: 26, natOutgoing: true, disabled: true}
YAML
)
	bt_expect_eq "$ds: other fields change" "ippool.projectcalico.org/pool-a configured" "$out"
done
bt_pass
