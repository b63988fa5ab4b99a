#!/usr/bin/env bash
# felix before its datastore exists writes nothing (stale routes of ours stay,
# readiness says why); once in sync it sweeps them; a burst of 20 endpoints
# written in one etcd transaction costs exactly one apply. Calico's metric names
# say the same (felix_resync_state, felix_active_local_endpoints, ...).
. "$(dirname "$0")/../lib/common.sh"

FELIX=$BT_BUILD_DIR/felix/brindle-felix
bt_netns node1
bt_netns peer
NODE=$BT_PREFIX-node1
ip -n "$NODE" link add eth0 type veth peer name eth0 netns "$BT_PREFIX-peer"
ip -n "$NODE" addr add 192.168.100.11/24 dev eth0
ip -n "$NODE" link set eth0 up
ip -n "$BT_PREFIX-peer" link set eth0 up
ip -n "$NODE" route add blackhole 10.250.0.0/26 proto 80

# etcd's socket will be here once it runs; felix starts first.
export BRINDLE_ETCD_ENDPOINTS="unix:$BT_DIR/etcd/etcd.sock:0"
bt_run_bg felix ip netns exec "$NODE" env NODENAME=node1 BRINDLE_ETCD_ENDPOINTS="$BRINDLE_ETCD_ENDPOINTS" \
	FELIX_PROMETHEUSMETRICSENABLED=true "$FELIX"
bt_wait_for 10 "felix's health endpoint" ip netns exec "$NODE" curl -s -o /dev/null http://localhost:9099/liveness
sleep 2
not_ready=$(ip netns exec "$NODE" curl -s -w ' %{http_code}' http://localhost:9099/readiness)
bt_expect_contains "not ready while the datastore is away" "datastore: waiting for the datastore" "$not_ready"
bt_expect_contains "readiness code" " 503" "$not_ready"
M=http://localhost:9091/metrics
# Calico's names for the dashboards made for Calico's felix
bt_expect_eq "felix_resync_state: waiting for the datastore" 1 "$(bt_metric "$NODE" $M felix_resync_state)"
bt_expect_contains "nothing written before sync" "blackhole 10.250.0.0/26" "$(ip -n "$NODE" route show proto 80)"

bt_start_etcd
"$BRINDLECTL" apply -f - >/dev/null <<'YAML'
apiVersion: projectcalico.org/v3
kind: Node
metadata: {name: node1}
spec: {bgp: {ipv4Address: 192.168.100.11/24}}
YAML
bt_wait_for 20 "felix ready" bt_http_ok "$NODE" http://localhost:9099/readiness
bt_wait_for 5 "the stale route swept after sync" \
	bash -c "! ip -n $NODE route show proto 80 | grep -q 10.250.0.0"

# A burst: 20 interfaces, then their 20 endpoints in one transaction.
for i in $(seq 10 29); do
	ip -n "$NODE" link add "calib$i" type veth peer name "pb$i"
	ip -n "$NODE" link set "calib$i" up
done
sleep 1 # let the interface notifications settle
before=$(bt_metric "$NODE" $M felix_apply_seconds_count)
args=()
for i in $(seq 10 29); do
	args+=("/calico/resources/v3/projectcalico.org/workloadendpoints/default/w$i"
		"{\"apiVersion\":\"projectcalico.org/v3\",\"kind\":\"WorkloadEndpoint\",\"metadata\":{\"name\":\"w$i\",\"namespace\":\"default\"},\"spec\":{\"node\":\"node1\",\"interfaceName\":\"calib$i\",\"ipNetworks\":[\"10.244.1.$i/32\"]}}")
done
bt_etcd_txn_puts "${args[@]}"
bt_wait_for 10 "20 routes" bash -c "[ \$(ip -n $NODE route show proto 80 | grep -c calib) -eq 20 ]"
sleep 0.5
after=$(bt_metric "$NODE" $M felix_apply_seconds_count)
bt_expect_eq "a burst of 20 updates costs one apply" 1 $((after - before))
bt_expect_eq "datastore events counted" 21 "$(bt_metric "$NODE" $M felix_datastore_events_total)"
bt_expect_eq "felix_resync_state: in sync" 3 "$(bt_metric "$NODE" $M felix_resync_state)"
bt_expect_eq "felix_resyncs_started: the first list" 1 "$(bt_metric "$NODE" $M felix_resyncs_started)"
bt_expect_eq "felix_active_local_endpoints" 20 "$(bt_metric "$NODE" $M felix_active_local_endpoints)"
bt_expect_eq "felix_cluster_num_hosts" 1 "$(bt_metric "$NODE" $M felix_cluster_num_hosts)"
bt_expect_eq "felix_int_dataplane_failures" 0 "$(bt_metric "$NODE" $M felix_int_dataplane_failures)"
bt_expect_eq "felix_int_dataplane_apply_time_seconds counts the applies" \
	"$(bt_metric "$NODE" $M felix_apply_seconds_count)" "$(bt_metric "$NODE" $M felix_int_dataplane_apply_time_seconds_count)"
median=$(bt_metric "$NODE" $M 'felix_int_dataplane_apply_time_seconds{quantile="0.5"}')
awk -v m="$median" 'BEGIN { exit !(m > 0 && m < 5) }' || bt_fail "the median apply time is $median s"
bt_expect_eq "felix_calc_graph_update_time_seconds: one per datastore event" 21 \
	"$(bt_metric "$NODE" $M felix_calc_graph_update_time_seconds_count)"
# the chains per table, Calico's labels; no policy: felix's own chains only
filter_chains=$(bt_metric "$NODE" $M 'felix_iptables_chains{ip_version="4",table="filter"}')
[ "$filter_chains" -gt 0 ] || bt_fail "felix_iptables_chains for filter is $filter_chains"
case "${FELIX_IPTABLESBACKEND:-}" in
[Nn][Ff][Tt]) # the nft backend: its cali- chains (the hooks are base chains of their own)
	listed=$(ip netns exec "$NODE" nft list table ip brindle-filter | grep -c '^	chain cali-') ;;
*) listed=$(ip netns exec "$NODE" iptables-legacy-save -t filter | grep -c '^:cali-') ;;
esac
bt_expect_eq "filter's chains in the per-table count as the kernel lists them" "$listed" \
	"$filter_chains"
bt_pass
