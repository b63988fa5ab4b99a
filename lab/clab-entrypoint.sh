#!/usr/bin/env bash
# lab/clab-entrypoint.sh: the entrypoint of the Brindle node image
# (scripts/image; installed as /usr/libexec/brindle/clab-entrypoint) in a
# containerlab topology written by
# `brindlectl lab export-clab` (docs/lab.md, "containerlab"). It plays the
# part `brindlectl lab up` plays for one namespace of a lab, configured by the
# environment variables the export sets (see lab/clab.c):
#
#   BRINDLE_ROLE=etcd    etcd on BRINDLE_ETCD_LISTEN; then BRINDLE_RESOURCES
#                        (Node, IPPool, BGPConfiguration, Namespace) applied
#   BRINDLE_ROLE=fabric  a bridge per subnet holding its gateway
#                        (BRINDLE_BRIDGES "brI GW/LEN IFACE...; ..."), forwarding on
#   BRINDLE_ROLE=node    BRINDLE_ADDRESS on eth1, default route via
#                        BRINDLE_GATEWAY, node sysctls; brindle-node
#                        startup (as a lab node starts); brindle-confd,
#                        brindle-felix, BIRD once confd wrote its config;
#                        brindle-probe on BRINDLE_SERVE; the pods of
#                        BRINDLE_PODS made with brindle-cni as a runtime does
#
# Every wait is bounded; when a daemon exits the container exits with it.
set -euo pipefail

role=${BRINDLE_ROLE:-}
# the CNI plugins: where the image installs them, else where runtimes look
cni_dir=/usr/lib/cni
[ -x "$cni_dir/brindle-cni" ] || cni_dir=/opt/cni/bin
say() { echo "brindle-node[$role]: $*" >&2; }
die() {
	say "$*"
	exit 1
}

# containerlab attaches the links after the container starts; CLAB_INTFS says how many.
wait_links() {
	local want=${CLAB_INTFS:-0} i have dev
	for ((i = 0; i < 600; i++)); do
		have=0
		for dev in /sys/class/net/*; do
			case ${dev##*/} in lo | eth0) ;; *) have=$((have + 1)) ;; esac
		done
		[ "$have" -ge "$want" ] && return 0
		sleep 0.1
	done
	die "only $have of $want links appeared within 60 s"
}

wait_for() { # SECONDS WHAT CMD...
	local secs=$1 what=$2 i
	shift 2
	for ((i = 0; i < secs * 10; i++)); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	die "$what: not within $secs s"
}

# Every started daemon is a child; the first to exit ends the container.
supervise() {
	local rc=0
	wait -n || rc=$?
	die "a daemon exited (status $rc); see the container's log"
}

split() { # "a; b; c" -> one per line
	tr ';' '\n' <<<"$1" | sed 's/^ *//; s/ *$//' | grep -v '^$' || true
}

serve_args() { # "TCP:80,UDP:81" -> --tcp 80 --udp 81 (SCTP skipped)
	local spec=$1 item
	[ "$spec" = - ] && return 0
	for item in ${spec//,/ }; do
		local port=${item##*:} proto=${item%:*}
		proto=${proto##*:}
		case ${proto^^} in
		TCP) printf -- '--tcp %s ' "$port" ;;
		UDP) printf -- '--udp %s ' "$port" ;;
		esac
	done
}

role_etcd() {
	: "${BRINDLE_ETCD_LISTEN:?}"
	mkdir -p /var/lib/brindle /etc/brindle
	etcd --name brindle --data-dir /var/lib/brindle/etcd \
		--listen-client-urls "$BRINDLE_ETCD_LISTEN,http://127.0.0.1:2379" \
		--advertise-client-urls "$BRINDLE_ETCD_LISTEN" --log-level error &
	wait_for 30 "etcd answering" curl -sf --max-time 1 http://127.0.0.1:2379/health
	printf '%s\n' "${BRINDLE_RESOURCES:-}" >/etc/brindle/resources.yaml
	BRINDLE_ETCD_ENDPOINTS=http://127.0.0.1:2379 brindlectl apply -f /etc/brindle/resources.yaml
	say "etcd up, resources applied"
	supervise
}

role_fabric() {
	wait_links
	sysctl -qw net.ipv4.ip_forward=1
	local name cidr ifs i
	while read -r name cidr ifs; do
		ip link add "$name" type bridge
		ip addr add "$cidr" dev "$name"
		ip link set "$name" up
		for i in $ifs; do ip link set "$i" master "$name" up; done
	done < <(split "${BRINDLE_BRIDGES:-}")
	say "bridges up"
	sleep infinity &
	supervise
}

# One pod: a network namespace, brindle-cni ADD as a runtime calls it, brindle-probe serving.
add_pod() { # NS/POD IP LABELS PORTS SERVE
	local ref=$1 ip=$2 labels=$3 ports=$4 serve=$5
	local ns=${ref%/*} pod=${ref#*/} netns="pod-${ref/\//-}" kv item first=1
	if [ "$ip" = host ]; then
		# shellcheck disable=SC2046
		brindle-probe serve $(serve_args "$ports") $(serve_args "$serve") &
		return 0
	fi
	local conf="{\"cniVersion\":\"1.0.0\",\"name\":\"k8s-pod-network\",\"type\":\"brindle-cni\""
	conf+=",\"nodename\":\"$NODENAME\",\"etcd_endpoints\":\"$BRINDLE_ETCD_ENDPOINTS\""
	conf+=",\"ipam\":{\"type\":\"brindle-ipam\"},\"args\":{\"cni\":{\"labels\":["
	if [ "$labels" != - ]; then
		for kv in ${labels//,/ }; do
			[ $first -eq 1 ] || conf+=","
			first=0
			conf+="{\"key\":\"${kv%%=*}\",\"value\":\"${kv#*=}\"}"
		done
	fi
	conf+="]"
	[ "$ip" = - ] || conf+=",\"ips\":[\"$ip\"]"
	conf+="},\"brindle\":{\"ports\":["
	first=1
	if [ "$ports" != - ]; then
		for item in ${ports//,/ }; do
			IFS=: read -r pname pproto pport <<<"$item"
			[ "$pname" = - ] && continue
			[ $first -eq 1 ] || conf+=","
			first=0
			conf+="{\"name\":\"$pname\",\"protocol\":\"${pproto^^}\",\"port\":$pport}"
		done
	fi
	conf+="]}}}"
	ip netns add "$netns"
	ip -n "$netns" link set lo up
	local i
	for ((i = 0; i < 60; i++)); do
		if CNI_COMMAND=ADD CNI_CONTAINERID="$netns" CNI_NETNS="/var/run/netns/$netns" \
			CNI_IFNAME=eth0 CNI_PATH="$cni_dir" \
			CNI_ARGS="K8S_POD_NAMESPACE=$ns;K8S_POD_NAME=$pod;K8S_POD_INFRA_CONTAINER_ID=$netns" \
			"$cni_dir/brindle-cni" <<<"$conf" >"/var/log/brindle/cni-$netns.json"; then
			# shellcheck disable=SC2046
			ip netns exec "$netns" brindle-probe serve $(serve_args "$ports") \
				$(serve_args "$serve") &
			say "pod $ref up"
			return 0
		fi
		sleep 1
	done
	die "pod $ref: brindle-cni ADD failed for 60 s (/var/log/brindle/cni-$netns.json)"
}

role_node() {
	: "${NODENAME:?}" "${BRINDLE_ETCD_ENDPOINTS:?}" "${BRINDLE_ADDRESS:?}" "${BRINDLE_GATEWAY:?}"
	export NODENAME BRINDLE_ETCD_ENDPOINTS
	wait_links
	ip addr add "$BRINDLE_ADDRESS" dev eth1
	ip link set eth1 up
	# containerlab's management network keeps its own connected route (etcd is reached there)
	ip route replace default via "$BRINDLE_GATEWAY" dev eth1
	sysctl -qw net.ipv4.ip_forward=1 net.ipv4.conf.all.rp_filter=0
	local dir=/run/brindle/bird
	mkdir -p "$dir" /var/log/brindle /etc/brindle/secrets
	# the bootstrap, as every lab node starts, once the etcd node has written this node's
	# resource (its address; the pools are the topology's)
	wait_for 60 "the Node $NODENAME in etcd" brindlectl get node "$NODENAME"
	NO_DEFAULT_POOLS=true brindle-node startup || die "brindle-node startup failed"
	brindle-confd --node "$NODENAME" --output-dir "$dir" \
		--bird-socket "$dir/bird.ctl" --secrets-dir /etc/brindle/secrets --settle 50ms &
	brindle-felix &
	wait_for 60 "brindle-confd writing bird.conf" test -s "$dir/bird.conf"
	bird -f -c "$dir/bird.conf" -s "$dir/bird.ctl" &
	if [ "${BRINDLE_SERVE:--}" != - ]; then
		# shellcheck disable=SC2046
		brindle-probe serve $(serve_args "$BRINDLE_SERVE") &
	fi
	wait_for 60 "felix ready" curl -sf --max-time 1 http://localhost:9099/readiness
	local line
	while read -r line; do
		# shellcheck disable=SC2086
		add_pod $line
	done < <(split "${BRINDLE_PODS:-}")
	say "node $NODENAME up"
	supervise
}

case $role in
etcd) role_etcd ;;
fabric) role_fabric ;;
node) role_node ;;
*) die "BRINDLE_ROLE must be etcd, fabric or node (written by brindlectl lab export-clab)" ;;
esac
