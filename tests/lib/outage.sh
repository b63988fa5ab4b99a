# The fault tier's datastore outages (tests/faults/datastore_outage*.sh), on a
# node namespace $NODE where felix already runs; source after common.sh.
#   outage_confd_bird DIR    brindle-confd for node1 and, once it wrote bird.conf, BIRD, in
#                            $NODE, files in DIR
#   felix_ready, confd_ready, neither_ready   readiness answers 200 (neither: both 503)
#   felix_outage, confd_outage   *_datastore_outage_seconds is not 0
#   http URL                 the body of a GET in $NODE
#   metric URL NAME          a sample (bt_metric in $NODE)

outage_confd_bird() {
	local dir=$1
	mkdir -p "$dir"
	bt_run_bg confd ip netns exec "$NODE" "$BT_BUILD_DIR/confd/brindle-confd" --node node1 \
		--output-dir "$dir" --templates "$BT_SOURCE_DIR/bgp-templates" \
		--bird-socket "$dir/bird.ctl" --secrets-dir "$BT_DIR/secrets" --settle 50ms
	bt_wait_for 30 "confd to write bird.conf" test -s "$dir/bird.conf"
	bt_run_bg bird ip netns exec "$NODE" bird -f -c "$dir/bird.conf" -s "$dir/bird.ctl"
}

http() { ip netns exec "$NODE" curl -s --max-time 2 "$@" || true; }
felix_ready() { ip netns exec "$NODE" curl -sf --max-time 2 http://localhost:9099/readiness >/dev/null; }
confd_ready() { ip netns exec "$NODE" curl -sf --max-time 2 http://127.0.0.1:9098/readiness >/dev/null; }
neither_ready() { ! felix_ready && ! confd_ready; }
metric() { bt_metric "$NODE" "$1" "$2"; }
felix_outage() { [ "$(metric http://localhost:9091/metrics felix_datastore_outage_seconds)" != 0 ]; }
confd_outage() { [ "$(metric http://127.0.0.1:9098/metrics brindle_confd_datastore_outage_seconds)" != 0 ]; }
