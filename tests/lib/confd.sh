# Helpers for confd's namespace tests; source after common.sh.
#   confd_switch                 a namespace with a bridge the nodes plug into
#   confd_node NAME ADDR/LEN     a node namespace on the bridge, with lo up
#   confd_start NAME [ARGS...]   brindle-confd for node NAME, in its namespace
#   confd_bird NAME              BIRD in the node's namespace, once confd wrote bird.conf
#   confd_affinity NODE CIDR [STATE]   a block affinity, written to etcd
#   confd_birdc NAME CMD...      birdc against the node's BIRD
# Files live in $BT_DIR/<name>/; logs in $BT_DIR/<name>-{confd,bird}.log.

CONFD=${CONFD:-$BT_BUILD_DIR/confd/brindle-confd}
CONFD_TEMPLATES=${CONFD_TEMPLATES:-$BT_SOURCE_DIR/bgp-templates}

declare -A CONFD_PID=() BIRD_PID=()

confd_ns() { echo "$BT_PREFIX-$1"; }

confd_switch() {
	local sw
	sw=$(confd_ns sw)
	ip netns add "$sw"
	bt_netns+=("$sw")
	ip -n "$sw" link add br0 type bridge
	ip -n "$sw" link set br0 up
	ip -n "$sw" link set lo up
}

# confd_node NAME ADDR/LEN: veth "eth0" in the node, its peer on the switch's bridge.
confd_node() {
	local name=$1 addr=$2 ns sw
	ns=$(confd_ns "$name")
	sw=$(confd_ns sw)
	ip netns add "$ns"
	bt_netns+=("$ns")
	ip -n "$ns" link set lo up
	ip link add "${BT_PREFIX}${name}" netns "$sw" type veth peer name eth0 netns "$ns"
	ip -n "$sw" link set "${BT_PREFIX}${name}" master br0 up
	ip -n "$ns" addr add "$addr" dev eth0
	ip -n "$ns" link set eth0 up
	mkdir -p "$BT_DIR/$name"
}

confd_start() {
	local name=$1
	shift
	bt_run_bg "$name-confd" ip netns exec "$(confd_ns "$name")" "$CONFD" --node "$name" \
		--output-dir "$BT_DIR/$name" --templates "$CONFD_TEMPLATES" \
		--bird-socket "$BT_DIR/$name/bird.ctl" --secrets-dir "$BT_DIR/secrets" \
		--settle 50ms "$@"
	CONFD_PID[$name]=${bt_pids[-1]}
}

confd_bird() {
	local name=$1
	bt_wait_for 20 "confd to write $name's bird.conf" test -s "$BT_DIR/$name/bird.conf"
	bt_run_bg "$name-bird" ip netns exec "$(confd_ns "$name")" bird -f \
		-c "$BT_DIR/$name/bird.conf" -s "$BT_DIR/$name/bird.ctl"
	BIRD_PID[$name]=${bt_pids[-1]}
	bt_wait_for 20 "BIRD on $name to answer" birdc -s "$BT_DIR/$name/bird.ctl" show status
}

confd_birdc() {
	local name=$1
	shift
	birdc -s "$BT_DIR/$name/bird.ctl" "$@"
}

# etcd's JSON gateway wants keys and values in base64.
confd_etcd_put() {
	local key value
	key=$(printf '%s' "$1" | base64 -w0)
	value=$(printf '%s' "$2" | base64 -w0)
	curl -sf --unix-socket "$BT_ETCD_SOCK" -X POST http://localhost/v3/kv/put \
		-d "{\"key\":\"$key\",\"value\":\"$value\"}" >/dev/null
}

confd_affinity() {
	local node=$1 cidr=$2 state=${3:-confirmed} name fam=ipv4
	name=${cidr/\//-}
	case $cidr in *:*) fam=ipv6 ;; esac
	confd_etcd_put "/calico/ipam/v2/host/$node/$fam/block/$name" \
		"{\"apiVersion\":\"projectcalico.org/v3\",\"kind\":\"BlockAffinity\",\"metadata\":{\"name\":\"$name\"},\"spec\":{\"node\":\"$node\",\"cidr\":\"$cidr\",\"state\":\"$state\"}}"
}

# confd_session_state NAME SESSION: BIRD's BGP state of a session ("Established", ...).
confd_session_state() {
	confd_birdc "$1" show protocols "$2" | awk -v s="$2" '$1 == s { print $6 }'
}

confd_established() {
	[ "$(confd_session_state "$1" "$2")" = Established ]
}

# confd_all_established NAME COUNT: BIRD on NAME has COUNT BGP sessions, all Established.
confd_all_established() {
	local out
	out=$(confd_birdc "$1" show protocols | awk '$2 == "BGP"')
	[ "$(printf '%s\n' "$out" | grep -c .)" -eq "$2" ] || return 1
	! printf '%s\n' "$out" | grep -qv Established
}

# confd_route NAME PREFIX: the kernel route for PREFIX in NAME's namespace.
confd_route() {
	ip -n "$(confd_ns "$1")" route show "$2"
}

# confd_frr NAME ADDR/LEN CONFIG: FRR's bgpd (no zebra) as a router on the switch.
confd_frr() {
	local name=$1 addr=$2 config=$3 dir=$BT_DIR/$1
	confd_node "$name" "$addr"
	chmod o+x "$BT_DIR" # bgpd runs as frr and must reach its directory
	chown frr:frr "$dir"
	printf '%s\n' "$config" >"$dir/bgpd.conf"
	chown frr:frr "$dir/bgpd.conf"
	bt_run_bg "$name-bgpd" ip netns exec "$(confd_ns "$name")" /usr/lib/frr/bgpd \
		-f "$dir/bgpd.conf" -Z -P 0 --vty_socket "$dir" -i "$dir/bgpd.pid" --log stdout
	bt_wait_for 20 "bgpd on $name to answer" test -S "$dir/bgpd.vty"
}

# confd_vtysh NAME CMD: one vtysh command against NAME's bgpd.
confd_vtysh() {
	ip netns exec "$(confd_ns "$1")" vtysh --vty_socket "$BT_DIR/$1" -d bgpd -c "$2"
}

# confd_frr_paths NAME PREFIX: the next hops FRR has for PREFIX, sorted, one per line.
confd_frr_paths() {
	confd_vtysh "$1" "show ip bgp $2" 2>/dev/null |
		awk '$2 == "from" && $1 ~ /^[0-9.]+$/ { print $1 }' | sort
}

# confd_stop_all: stop every confd started here and fail if one did not exit
# cleanly (a sanitizer report, a leak, a non-zero status).
confd_stop_all() {
	local name pid rc
	for name in "${!CONFD_PID[@]}"; do
		pid=${CONFD_PID[$name]}
		kill -TERM "$pid" 2>/dev/null || bt_fail "confd of $name is not running"
		rc=0
		wait "$pid" || rc=$?
		[ $rc -eq 0 ] || bt_fail "confd of $name exited with status $rc"
		if grep -qE 'Sanitizer|runtime error' "$BT_DIR/$name-confd.log"; then
			bt_fail "confd of $name: sanitizer report in its log"
		fi
	done
}
