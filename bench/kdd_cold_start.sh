#!/usr/bin/env bash
# felix on the Kubernetes datastore at scale (issue 14's performance goals),
# against the real kube-apiserver of scripts/kube-testenv, felix as the
# brindle-node ClusterRole allows, the release build.
#
#  1. Cold start: PODS pods (LOCAL of them on node1, the rest spread over
#     node2..nodeNODES), 50 namespaces, NODES Nodes, POLICIES policies (half
#     Kubernetes NetworkPolicies in the shape of bench/policy_scenario.h, half
#     Calico NetworkPolicy CRs with pod and namespace selectors). Time from
#     felix's start to "datastore: in sync", to the end of its first dataplane
#     apply, and to readiness 200; peak RSS (VmHWM). Baseline in the same run:
#     the same felix and the same objects on the etcd datastore (brindlectl
#     apply of the projectcalico.org/v3 equivalents into a private etcd).
#     Goals: programmed < 5 s, RSS < 40 MB.
#  2. Label latency: a remote pod's label toggled SAMPLES times (a PATCH with
#     the admin certificate), each until the ip set of a Calico policy's
#     source selector on node1 has (or has lost) its address; p50/p99 from
#     the start of the PATCH. Goal: p99 < 200 ms.
#  3. A burst: EVENTS label changes (role, which moves pods between the
#     policies' ip sets) written to pods as fast as the API server takes them,
#     then one marker change; felix's dataplane applies during the burst
#     (felix_apply_seconds_count) and the time until the marker is
#     programmed. Goal: one or a few applies, not EVENTS.
#
#   sudo bench/kdd_cold_start.sh [PODS [POLICIES [NODES]]]    (5000 500 100)
# Environment: ONLY=cold (only the cold start; BENCH_HOLD=SECONDS then keeps the
# control plane and its objects that long, for profiling felix against them), LOCAL (50), EVENTS (10000), SAMPLES (50), PARALLEL (16: curl's
# concurrent requests when writing objects), BRINDLE_BUILD_DIR (a release build;
# default build/release, built first).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "${BRINDLE_BUILD_DIR:-}" ]; then
	"$top/scripts/build" release >/dev/null
	export BRINDLE_BUILD_DIR=$top/build/release
fi
export BRINDLECTL=$BRINDLE_BUILD_DIR/ctl/brindlectl
. "$top/tests/lib/common.sh"
. "$top/tests/lib/kube.sh"
PODS=${1:-5000} POLICIES=${2:-500} NODES=${3:-100}
LOCAL=${LOCAL:-50} EVENTS=${EVENTS:-10000} SAMPLES=${SAMPLES:-50} PARALLEL=${PARALLEL:-16}
FELIX=$BT_BUILD_DIR/felix/brindle-felix
[ "$LOCAL" -le 250 ] || bt_fail "LOCAL must be <= 250"

ms() { date +%s%3N; }
say() { printf '%s\n' "$*" >&2; }

# --- The objects, in both forms -------------------------------------------
# Pod j: namespace ns((j%250)%50), labels app a(j%250), role r(j%20), named
# port http (TCP 8080), address 10.(64+j/65536).(j/256%256).(j%256), on node1
# when j < LOCAL, else on node(2 + j % (NODES-1)). Policy i (namespace
# ns((i%250)%50), selecting app a(i%250)): even i a Kubernetes NetworkPolicy
# (policy_scenario.h's), odd i a Calico NetworkPolicy admitting role r(i%20)
# of its namespace on TCP 80/443 and any pod of namespaces of team t(i%10).
G=$BT_DIR/gen
mkdir -p "$G/obj"
for j in $(seq 0 $((LOCAL - 1))); do
	echo "$j $(bt_cali "ns$(((j % 250) % 50))" "pod$j")"
done >"$G/ifaces"
awk -v pods="$PODS" -v pols="$POLICIES" -v nodes="$NODES" -v local_="$LOCAL" -v G="$G" '
function ip(j) { return sprintf("10.%d.%d.%d", 64 + int(j / 65536), int(j / 256) % 256, j % 256) }
function node(j) { return j < local_ ? 1 : 2 + j % (nodes - 1) }
function nodeip(i) { return sprintf("172.16.%d.%d", int(i / 250), i % 250 + 1) }
# obj FILE-STEM METHOD URL JSON: one request of the API side
function obj(stem, url, json, f) {
	f = G "/obj/" stem ".json"; print json > f; close(f)
	printf "url = \"%s\"\ndata-binary = \"@%s\"\n", url, f >> G "/" substr(stem, 1, index(stem, "-") - 1) ".curl"
}
BEGIN {
	v3 = G "/etcd.yaml"
	print "apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: pods}\nspec: {cidr: 10.64.0.0/10}" > v3
	for (i = 1; i <= nodes; i++) {
		obj("node-" i, "/api/v1/nodes", sprintf("{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"node%d\",\"annotations\":{\"projectcalico.org/IPv4Address\":\"%s/12\"}}}", i, nodeip(i)))
		printf "---\napiVersion: projectcalico.org/v3\nkind: Node\nmetadata: {name: node%d}\nspec: {bgp: {ipv4Address: %s/12}}\n", i, nodeip(i) > v3
	}
	for (i = 0; i < 50; i++) {
		obj("ns-" i, "/api/v1/namespaces", sprintf("{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"ns%d\",\"labels\":{\"team\":\"t%d\",\"env\":\"%s\"}}}", i, i % 10, i % 3 ? "prod" : "dev"))
		printf "---\napiVersion: v1\nkind: Namespace\nmetadata: {name: ns%d, labels: {team: t%d, env: %s}}\n", i, i % 10, i % 3 ? "prod" : "dev" > v3
	}
	while ((getline line < (G "/ifaces")) > 0) { split(line, a, " "); iface[a[1]] = a[2] }
	for (j = 0; j < pods; j++) {
		app = j % 250; ns = app % 50
		obj("pod-" j, "/api/v1/namespaces/ns" ns "/pods", sprintf("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"pod%d\",\"namespace\":\"ns%d\",\"labels\":{\"app\":\"a%d\",\"role\":\"r%d\"}},\"spec\":{\"nodeName\":\"node%d\",\"containers\":[{\"name\":\"c\",\"image\":\"registry.invalid/none\",\"ports\":[{\"name\":\"http\",\"containerPort\":8080}]}]}}", j, ns, app, j % 20, node(j)))
		obj("status-" j, "/api/v1/namespaces/ns" ns "/pods/pod" j "/status", sprintf("{\"status\":{\"phase\":\"Running\",\"podIP\":\"%s\",\"podIPs\":[{\"ip\":\"%s\"}]}}", ip(j), ip(j)))
		printf "---\napiVersion: projectcalico.org/v3\nkind: WorkloadEndpoint\nmetadata:\n  name: node%d-k8s-pod%d-eth0\n  namespace: ns%d\n  labels: {app: a%d, role: r%d, projectcalico.org/namespace: ns%d, projectcalico.org/orchestrator: k8s}\nspec: {node: node%d, orchestrator: k8s, pod: pod%d, endpoint: eth0, interfaceName: %s, ipNetworks: [\"%s/32\"], profiles: [kns.ns%d], ports: [{name: http, protocol: TCP, port: 8080}]}\n", node(j), j, ns, app, j % 20, ns, node(j), j, (j in iface) ? iface[j] : sprintf("cali%011d", j), ip(j), ns > v3
	}
	for (i = 0; i < pols; i++) {
		app = i % 250; ns = app % 50
		if (i % 2 == 0) {
			eg = i % 5 == 0 ? ",\"egress\":[{\"to\":[{\"ipBlock\":{\"cidr\":\"10.96.0.0/12\"}}]},{\"ports\":[{\"protocol\":\"UDP\",\"port\":53}]}],\"policyTypes\":[\"Ingress\",\"Egress\"]" : ""
			body = sprintf("{\"apiVersion\":\"networking.k8s.io/v1\",\"kind\":\"NetworkPolicy\",\"metadata\":{\"name\":\"p%d\",\"namespace\":\"ns%d\"},\"spec\":{\"podSelector\":{\"matchLabels\":{\"app\":\"a%d\"}},\"ingress\":[{\"from\":[{\"podSelector\":{\"matchLabels\":{\"role\":\"r%d\"}}},{\"namespaceSelector\":{\"matchLabels\":{\"team\":\"t%d\"}}},{\"ipBlock\":{\"cidr\":\"172.16.%d.0/24\",\"except\":[\"172.16.%d.128/25\"]}}],\"ports\":[{\"port\":80},{\"port\":443},{\"port\":\"http\"}]}]%s}}", i, ns, app, i % 20, i % 10, app, app, eg)
			obj("pol-" i, "/apis/networking.k8s.io/v1/namespaces/ns" ns "/networkpolicies", body)
			print "---\n" body > v3
		} else {
			spec = sprintf("{\"selector\":\"app == '"'"'a%d'"'"'\",\"types\":[\"Ingress\"],\"ingress\":[{\"action\":\"Allow\",\"protocol\":\"TCP\",\"source\":{\"selector\":\"role == '"'"'r%d'"'"'\"},\"destination\":{\"ports\":[80,443]}},{\"action\":\"Allow\",\"source\":{\"namespaceSelector\":\"team == '"'"'t%d'"'"'\"}}]}", app, i % 20, i % 10)
			obj("pol-" i, "/apis/crd.projectcalico.org/v1/namespaces/ns" ns "/networkpolicies", sprintf("{\"apiVersion\":\"crd.projectcalico.org/v1\",\"kind\":\"NetworkPolicy\",\"metadata\":{\"name\":\"cp%d\",\"namespace\":\"ns%d\"},\"spec\":%s}", i, ns, spec))
			printf "---\n{\"apiVersion\":\"projectcalico.org/v3\",\"kind\":\"NetworkPolicy\",\"metadata\":{\"name\":\"cp%d\",\"namespace\":\"ns%d\"},\"spec\":%s}\n", i, ns, spec > v3
		}
	}
}'

# --- The nodes: one namespace per datastore, node1's LOCAL interfaces in each
links() { awk '{printf "link add %s type veth peer name p%d\nlink set %s up\n", $2, NR, $2}' "$G/ifaces"; }
bt_netns kdd
bt_netns etcd
KNS=$BT_PREFIX-kdd ENS=$BT_PREFIX-etcd
for ns in "$KNS" "$ENS"; do
	links | ip -n "$ns" -batch -
	ip -n "$ns" link add eth0 type veth peer name eth1
	ip -n "$ns" addr add 172.16.0.1/12 dev eth0
	ip -n "$ns" link set eth0 up
	ip -n "$ns" link set eth1 up
done

rss() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status"; }
# log_ms LOGFILE PATTERN: epoch ms of the first log line containing PATTERN
log_ms() {
	local ts
	ts=$(grep -m1 -- "$2" "$1" | cut -d' ' -f1,2) || true
	[ -n "$ts" ] || { echo 0; return; }
	date -d "$ts" +%s%3N
}
# cold NAME NETNS ENV...: start felix, wait for readiness; writes to NAME.result
# "in-sync first-apply-end ready apply-ms hwm-kB rss-kB" (times in ms from the start)
cold() {
	local name=$1 ns=$2
	shift 2
	local t0 t1 pid
	t0=$(ms)
	bt_run_bg "$name" ip netns exec "$ns" env NODENAME=node1 FELIX_PROMETHEUSMETRICSENABLED=true "$@" "$FELIX"
	pid=${bt_pids[-1]}
	timeout 120 ip netns exec "$ns" sh -c \
		'until curl -sf -o /dev/null --max-time 1 http://localhost:9099/readiness; do sleep 0.02; done' ||
		bt_fail "$name: not ready within 120 s"
	t1=$(ms)
	bt_wait_for 30 "$name's first apply" grep -q "first apply after sync" "$BT_DIR/$name.log"
	[ "$(cat /proc/"$pid"/comm)" = brindle-felix ] || bt_fail "$name: pid $pid is not felix"
	local sync applied took
	sync=$(log_ms "$BT_DIR/$name.log" "datastore: in sync")
	applied=$(log_ms "$BT_DIR/$name.log" "first apply after sync")
	took=$(sed -n 's/.*first apply after sync took \([0-9.]*\) ms.*/\1/p' "$BT_DIR/$name.log" | head -1)
	echo "$((sync - t0)) $((applied - t0)) $((t1 - t0)) $took $(rss "$pid" VmHWM) $(rss "$pid" VmRSS)" >"$BT_DIR/$name.result"
}

# --- Baseline: etcd -------------------------------------------------------
bt_start_etcd
t=$(ms)
"$BRINDLECTL" apply -f "$G/etcd.yaml" >/dev/null
say "etcd: $(grep -c '^---' "$G/etcd.yaml") objects written in $(($(ms) - t)) ms (brindlectl apply)"
cold felix-etcd "$ENS" BRINDLE_DATASTORE_TYPE=etcdv3 BRINDLE_ETCD_ENDPOINTS="$BRINDLE_ETCD_ENDPOINTS"
read -r e_sync e_applied e_ready e_took e_hwm e_rss <"$BT_DIR/felix-etcd.result"
e_routes=$(ip -n "$ENS" route show proto 80 | wc -l)
e_rules=$(ip netns exec "$ENS" iptables-legacy-save | grep -c '^-A')
e_sets=$(ip netns exec "$ENS" ipset list -n | wc -l)
kill "${bt_pids[-1]}"

# --- The Kubernetes datastore ---------------------------------------------
kube_up "$BT_DIR/cp" "$KNS"
K=$BT_DIR/cp
kc apply -f "$top/deploy/crds.yaml" >/dev/null
kc apply -f "$top/deploy/rbac/brindle-node.yaml" >/dev/null
bt_wait_for 60 "the CRDs" kc wait --for condition=established --timeout=2s \
	crd/networkpolicies.crd.projectcalico.org crd/ippools.crd.projectcalico.org
NODECFG=$(kube_testenv user "$K" brindle-node)
kc create clusterrolebinding brindle-node --clusterrole brindle-node --user brindle-node >/dev/null
kc apply -f - >/dev/null <<'YAML'
apiVersion: crd.projectcalico.org/v1
kind: IPPool
metadata: {name: pods}
spec: {cidr: 10.64.0.0/10, blockSize: 26}
YAML
API="https://127.0.0.1:$(kube_state "$K" API_PORT)"
# api FILE METHOD [CONTENT-TYPE]: the requests of FILE (url + data-binary
# lines), PARALLEL at a time over kept-alive connections; fails on any error.
api() {
	local cfg=$BT_DIR/$(basename "$1").cfg
	awk -v api="$API" -v pki="$K/pki" -v m="$2" -v ct="${3:-application/json}" '
		/^url = / { if (n++) print "next"; sub(/"/, "\"" api); print
			printf "request = \"%s\"\ncacert = \"%s/ca.crt\"\ncert = \"%s/admin.crt\"\nkey = \"%s/admin.key\"\n", m, pki, pki, pki
			printf "header = \"Content-Type: %s\"\noutput = \"/dev/null\"\nwrite-out = \"%%{http_code}\\n\"\nsilent\n", ct
			next }
		{ print }' "$1" >"$cfg"
	local codes
	codes=$(ip netns exec "$KNS" curl -s --parallel --parallel-immediate --parallel-max "$PARALLEL" -K "$cfg" 2>/dev/null |
		sort | uniq -c | tr '\n' ' ')
	case "$codes" in
	*" 200 "* | *" 201 "*) [ "$(echo "$codes" | wc -w)" = 2 ] || bt_fail "$(basename "$1"): HTTP codes $codes" ;;
	*) bt_fail "$(basename "$1"): HTTP codes $codes" ;;
	esac
}
t=$(ms)
api "$G/node.curl" POST
api "$G/ns.curl" POST
bt_wait_for 60 "the namespaces' default ServiceAccounts" \
	sh -c "[ \$(ip netns exec $KNS $KUBE_BIN/kubectl --kubeconfig $K/admin.kubeconfig get serviceaccounts -A --no-headers | grep -c '^ns[0-9]* *default ') = 50 ]"
t1=$(ms)
api "$G/pod.curl" POST
t2=$(ms)
api "$G/status.curl" PATCH application/merge-patch+json
t3=$(ms)
api "$G/pol.curl" POST
t4=$(ms)
say "kubernetes: $NODES nodes + 50 namespaces in $((t1 - t)) ms, $PODS pods in $((t2 - t1)) ms," \
	"their status in $((t3 - t2)) ms, $POLICIES policies in $((t4 - t3)) ms (curl, $PARALLEL in parallel)"

cold felix-kdd "$KNS" BRINDLE_DATASTORE_TYPE=kubernetes BRINDLE_KUBECONFIG="$NODECFG"
read -r k_sync k_applied k_ready k_took k_hwm k_rss <"$BT_DIR/felix-kdd.result"
k_routes=$(ip -n "$KNS" route show proto 80 | wc -l)
k_rules=$(ip netns exec "$KNS" iptables-legacy-save | grep -c '^-A')
k_sets=$(ip netns exec "$KNS" ipset list -n | wc -l)

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }
printf '\nfelix cold start, %d pods (%d local) on %d nodes, 50 namespaces, %d policies (release build)\n' \
	"$PODS" "$LOCAL" "$NODES" "$POLICIES"
printf '  %-34s %10s %10s %6s\n' "" "etcd" "kubernetes" "ratio"
row() { printf '  %-34s %10s %10s %6s\n' "$1" "$2" "$3" "$(ratio "$3" "$2")"; }
row "in sync (ms from start)" "$e_sync" "$k_sync"
row "first apply done (ms from start)" "$e_applied" "$k_applied"
row "  of which the apply (ms)" "$e_took" "$k_took"
row "readiness 200 (ms from start)" "$e_ready" "$k_ready"
row "peak RSS, VmHWM (kB)" "$e_hwm" "$k_hwm"
row "RSS when ready (kB)" "$e_rss" "$k_rss"
row "routes" "$e_routes" "$k_routes"
row "iptables rules" "$e_rules" "$k_rules"
row "ip sets" "$e_sets" "$k_sets"
printf '  goals: programmed < 5000 ms, RSS < 40960 kB\n'

if [ "${ONLY:-}" = cold ]; then
	[ -z "${BENCH_HOLD:-}" ] || { echo "holding: $BT_DIR $KNS $NODECFG" >&2; sleep "$BENCH_HOLD"; }
	bt_pass
	exit 0
fi

# --- Label latency --------------------------------------------------------
metric() {
	ip netns exec "$KNS" curl -sf --max-time 2 http://localhost:9091/metrics | awk -v m="$1" '$1 == m { print $2 }'
}
X=$LOCAL # the first remote pod
XNS=ns$(((X % 250) % 50))
XIP=$(printf '10.%d.%d.%d' $((64 + X / 65536)) $((X / 256 % 256)) $((X % 256)))
kc apply -f - >/dev/null <<'YAML'
apiVersion: crd.projectcalico.org/v1
kind: NetworkPolicy
metadata: {name: bench-probe, namespace: ns0}
spec:
  selector: app == 'a0'
  types: [Ingress]
  ingress: [{action: Allow, source: {selector: probe == 'yes', namespaceSelector: all()}}]
YAML
label() { # label POD-NAMESPACE POD JSON-LABELS: a merge patch, as fast as curl goes
	ip netns exec "$KNS" curl -sf -o /dev/null --cacert "$K/pki/ca.crt" --cert "$K/pki/admin.crt" \
		--key "$K/pki/admin.key" -X PATCH -H 'Content-Type: application/merge-patch+json' \
		-d "{\"metadata\":{\"labels\":$3}}" "$API/api/v1/namespaces/$1/pods/$2"
}
label "$XNS" "pod$X" '{"probe":"yes"}'
# The probe's ip set: the one whose only member is X.
probe_set() {
	ip netns exec "$KNS" ipset list | awk -v ip="$XIP" '
		/^Name:/ { name = $2; n = 0; m = 0; inm = 0; next }
		/^Members:/ { inm = 1; next }
		inm && NF { n++; if ($1 == ip) m = 1 }
		inm && !NF { if (n == 1 && m) print name; inm = 0 }
		END { if (inm && n == 1 && m) print name }'
}
SET=""
for _ in $(seq 100); do
	SET=$(probe_set | head -1)
	[ -n "$SET" ] && break
	sleep 0.1
done
[ -n "$SET" ] || { ip netns exec "$KNS" ipset list | awk -v ip="$XIP" '/^Name:/ { n = $2 } $1 == ip { print n }' >&2; bt_fail "no ip set holds only $XIP after labelling pod$X probe=yes"; }
# Samples, in the node's namespace (one shell: the polling costs one ipset per try).
ip netns exec "$KNS" bash -s "$SAMPLES" "$SET" "$XIP" "$API/api/v1/namespaces/$XNS/pods/pod$X" \
	"$K/pki" >"$BT_DIR/latency" <<'SH'
set -eu
samples=$1 set=$2 ip=$3 url=$4 pki=$5
us() { echo "${EPOCHREALTIME/./}"; }
for i in $(seq "$samples"); do
	if [ $((i % 2)) = 1 ]; then v=no; want=1; else v=yes; want=0; fi
	t0=$(us)
	curl -sf -o /dev/null --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" \
		-X PATCH -H 'Content-Type: application/merge-patch+json' \
		-d "{\"metadata\":{\"labels\":{\"probe\":\"$v\"}}}" "$url"
	t1=$(us)
	deadline=$((t0 + 10000000))
	while :; do
		rc=0; ipset test "$set" "$ip" 2>/dev/null || rc=1
		[ "$rc" = "$want" ] && break
		[ "$(us)" -lt "$deadline" ] || { echo "timeout"; exit 1; }
	done
	t2=$(us)
	echo "$(((t2 - t0) / 1000)).$(((t2 - t0) % 1000 / 100)) $(((t1 - t0) / 1000))"
	sleep 0.2
done
SH
grep -q timeout "$BT_DIR/latency" && bt_fail "a label change was not programmed within 10 s"
pct() { sort -n | awk -v p="$1" '{ v[NR] = $1 } END { i = int((NR * p + 99) / 100); if (i < 1) i = 1; print v[i] }'; }
printf '\nremote pod label change to ip set updated, %d samples (ms, from the start of the PATCH)\n' "$SAMPLES"
printf '  p50 %s  p99 %s  max %s   (the PATCH itself, curl with a new TLS connection: p50 %s)\n' \
	"$(cut -d' ' -f1 "$BT_DIR/latency" | pct 50)" "$(cut -d' ' -f1 "$BT_DIR/latency" | pct 99)" \
	"$(cut -d' ' -f1 "$BT_DIR/latency" | pct 100)" "$(cut -d' ' -f2 "$BT_DIR/latency" | pct 50)"
printf '  goal: p99 < 200 ms\n'

# --- A burst --------------------------------------------------------------
# burst SHIFT PAUSED: EVENTS role changes (role r((j + SHIFT + round) % 20)),
# then the marker (pod X into the probe's set). PAUSED=1: felix is stopped
# (SIGSTOP) while they are written and continued after the marker, so that all
# of them reach it at once; times then count from the SIGCONT.
FPID=${bt_pids[-1]}
[ "$(cat /proc/"$FPID"/comm)" = brindle-felix ] || bt_fail "pid $FPID is not felix"
burst() {
	local shift=$1 paused=$2 a0 e0 t0 t1 t2 tw a1 e1 n
	label "$XNS" "pod$X" '{"probe":"no"}'
	bt_wait_for 10 "the marker out of the probe's set" sh -c "! ip netns exec $KNS ipset test $SET $XIP"
	for k in $(seq 0 $((EVENTS - 1))); do
		echo "$((k % PODS)) $((k / PODS + 1 + shift))"
	done | awk -v G="$G" -v x="$X" -v s="$shift" '$1 != x {
		j = $1; f = G "/obj/burst" s "-" NR ".json"
		printf "{\"metadata\":{\"labels\":{\"role\":\"r%d\"}}}\n", (j + $2) % 20 > f; close(f)
		printf "url = \"/api/v1/namespaces/ns%d/pods/pod%d\"\ndata-binary = \"@%s\"\n", (j % 250) % 50, j, f
	}' >"$G/burst$shift.curl"
	n=$(grep -c '^url' "$G/burst$shift.curl")
	sleep 2
	a0=$(metric felix_apply_seconds_count)
	e0=$(metric felix_datastore_events_total)
	[ "$paused" = 1 ] && kill -STOP "$FPID"
	t0=$(ms)
	api "$G/burst$shift.curl" PATCH application/merge-patch+json
	t1=$(ms)
	label "$XNS" "pod$X" '{"probe":"yes"}'
	tw=$((t1 - t0))
	if [ "$paused" = 1 ]; then
		kill -CONT "$FPID"
		t0=$(ms)
	fi
	bt_wait_for 120 "the marker after the burst" ip netns exec "$KNS" ipset test "$SET" "$XIP"
	t2=$(ms)
	sleep 2
	a1=$(metric felix_apply_seconds_count)
	e1=$(metric felix_datastore_events_total)
	if [ "$paused" = 1 ]; then
		printf '\na burst of %d pod label changes (+1 marker) reaching felix at once (stopped while written, %d ms)\n' \
			"$n" "$tw"
		printf '  from SIGCONT until the marker was programmed: %d ms\n' $((t2 - t0))
	else
		printf '\na burst of %d pod label changes (+1 marker) as the API server takes them (%d requests at a time)\n' \
			"$n" "$PARALLEL"
		printf '  writing it: %d ms; until the marker was programmed: %d ms from the first write, %d ms after the last\n' \
			$((t1 - t0)) $((t2 - t0)) $((t2 - t1))
	fi
	printf '  datastore events felix took: %s; dataplane applies: %s (baseline: one change, one apply)\n' \
		"$(awk -v a="$e0" -v b="$e1" 'BEGIN { print b - a }')" "$(awk -v a="$a0" -v b="$a1" 'BEGIN { print b - a }')"
}
burst 0 0
burst 2 1
grep -i "error" "$BT_DIR/felix-kdd.log" | head -5 >&2 || true
bt_pass
