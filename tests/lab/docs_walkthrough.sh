#!/usr/bin/env bash
# The first hour, as a test: the brindlectl commands of the shell blocks of
# docs/README.md, lab.md, policy.md and bgp.md, run in reading order as a new
# user types them (the lab "demo" renamed for this run, files under examples/),
# each must succeed. Each page starts with no lab; a section that uses the lab
# after the page brought it down finds it up again, as a reader following from
# the quick start has it. Other
# shell lines (builds, installs, exports) are not run: docs_examples.sh checks
# the files they name. Ends with the lab down and nothing left.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/lab.sh"

lab_example three-node.yaml "$BT_DIR/three-node.yaml"

# The brindlectl lines of a page's sh blocks, and the "$ brindlectl lab" lines of its
# transcripts (other transcripts show a node's own commands, not the lab's): prompts and
# trailing comments dropped.
commands() {
	awk '/^```/ { if (code) code = 0; else { code = 1; lang = substr($0, 4) } next }
		code && (lang == "sh" || lang == "bash") { sub(/^\$ /, ""); print; next }
		code && /^\$ brindlectl lab / { sub(/^\$ /, ""); print }' "$1" |
		sed -e 's/[[:space:]]*#.*$//' | grep -E '^brindlectl ' || true
}

up=false
ran=0
for page in README.md lab.md policy.md bgp.md; do
	# Each page starts from no lab, as its first command (lab up) expects.
	if $up; then
		lab down "$LAB" >/dev/null || bt_fail "lab down failed"
		up=false
	fi
	while read -r -a words; do
		# the lab's name and the example files, as they are for this run
		for i in "${!words[@]}"; do
			case ${words[$i]} in
			demo) words[$i]=$LAB ;;
			examples/three-node.yaml) words[$i]=$BT_DIR/three-node.yaml ;;
			examples/*) words[$i]=$BT_SOURCE_DIR/${words[$i]} ;;
			*.clab.yml) words[$i]=$BT_DIR/${words[$i]} ;;
			esac
		done
		set -- "${words[@]:1}"
		if [ "$1" = lab ] && [ "$2" = up ]; then
			up=true
		elif [ "$1" = lab ] && [ "$2" = down ]; then
			up=false
		elif ! $up && { [ "$1" != lab ] || [ "$3" = "$LAB" ]; }; then
			bt_log "docs/$page: the lab again, for \"brindlectl $*\""
			lab up "$BT_DIR/three-node.yaml" >"$BT_DIR/out" 2>&1 ||
				bt_fail "lab up failed: $(cat "$BT_DIR/out")"
			up=true
		fi
		bt_log "docs/$page: brindlectl $*"
		if [ "$1" = lab ]; then
			lab "${@:2}" >"$BT_DIR/out" 2>&1 || bt_fail "docs/$page: \"brindlectl $*\" failed: $(cat "$BT_DIR/out")"
		else
			labctl "$@" >"$BT_DIR/out" 2>&1 || bt_fail "docs/$page: \"brindlectl $*\" failed: $(cat "$BT_DIR/out")"
		fi
		ran=$((ran + 1))
	done < <(commands "$BT_SOURCE_DIR/docs/$page")
done
[ "$ran" -ge 20 ] || bt_fail "only $ran commands found in the docs"
bt_log "$ran commands of the docs ran"
$up || lab up "$BT_DIR/three-node.yaml" >/dev/null
lab_leaves_nothing
bt_pass
