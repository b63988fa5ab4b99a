# Shared by bench/lab_*.sh: a lab of examples/three-node.yaml under a name
# unique to this run (so labs of parallel runs never meet), removed on exit
# whatever happens; pod addresses and probes straight from the pods'
# namespaces; medians. Source it; needs root and a release build.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(dirname "$here")
build=${BRINDLE_BUILD_DIR:-$src/build/release}
ctl=$build/ctl/brindlectl
probe=$build/lab/brindle-probe
state_base=${BRINDLE_LAB_STATE_DIR:-/run/brindle-lab}
[ "$(id -u)" -eq 0 ] || { echo "run as root (labs are network namespaces)" >&2; exit 1; }
if [ ! -x "$ctl" ] || [ ! -x "$probe" ]; then
	echo "no build in $build: ./scripts/build release" >&2
	exit 1
fi

work=$(mktemp -d /tmp/brindle-bench-lab-XXXXXX)
labs_made=()
bench_cleanup() {
	local rc=$? l
	set +e
	for l in "${labs_made[@]}"; do
		[ -d "$state_base/$l" ] && "$ctl" lab down "$l" >/dev/null 2>&1
	done
	rm -rf "$work"
	exit $rc
}
trap bench_cleanup EXIT
trap 'exit 130' INT TERM

# A copy of examples/three-node.yaml named $1 (at most 24 characters).
lab_topology() {
	sed "s/^name: demo\$/name: $1/" "$src/examples/three-node.yaml" >"$work/$1.yaml"
	grep -q "^name: $1\$" "$work/$1.yaml" || { echo "could not rename the example" >&2; exit 1; }
	echo "$work/$1.yaml"
}

# lab up, recorded for cleanup before it starts.
lab_up() { # NAME FILE [flags]
	local name=$1
	shift
	labs_made+=("$name")
	"$ctl" lab up "$@" >/dev/null
}

now() { echo "$EPOCHREALTIME"; }
ms_since() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f", (b - a) * 1000 }'; }

# "ip netns" of a pod of lab $1 ("ns/pod node ip netns" lines in its state).
pod_field() { # LAB NS/POD FIELD(2=node 3=ip 4=netns)
	awk -v p="$2" -v f="$3" '$1 == p { print $f }' "$state_base/$1/pods"
}

# One TCP probe from inside a namespace: exit 0 allowed, else denied.
probe_tcp() { # NETNS IP PORT TIMEOUT_MS
	nsenter --net="/run/netns/$1" "$probe" tcp "$2" "$3" --timeout "$4" >/dev/null 2>&1
}

# Every pod reaches every pod on TCP 80 (lab matrix, JSON).
all_allowed() {
	local out
	out=$("$ctl" lab matrix "$1" --ports 80 --timeout-ms 300 -o json) || return 1
	[ "$(grep -o '"result":"allowed"' <<<"$out" | wc -l)" -eq 36 ]
}

median() { sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.0f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
