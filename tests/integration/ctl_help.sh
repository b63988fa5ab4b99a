#!/usr/bin/env bash
# brindlectl's help and docs/brindlectl.md (and docs/lab.md's table of lab commands) agree:
# walks every command of the help
# (brindlectl help PATH, the same as PATH --help and PATH -h), and checks that every command
# and flag it lists is in the doc's synopsis lines ("brindlectl PATH ..." in code blocks), and
# that every command and flag of those lines is in the help. Needs no datastore.
. "$(dirname "$0")/../lib/common.sh"

DOC=$BT_SOURCE_DIR/docs/brindlectl.md
ctl() { "$BRINDLECTL" "$@"; }

problems=()
problem() { problems+=("$*"); }
declare -A flags   # path -> " --long/-s --long ..." (each flag as long/short)
leaves=()          # paths a user runs
globals=""

# The flag names of a help text: the first column of the lines under a Flags heading.
help_flags() {
	awk '/^(Global flags|Flags)/ { on = 1; next } /^$/ { on = 0 } on && /^ +-/ {
		long = ""; short = ""
		for (i = 1; i <= NF; i++) {
			w = $i; sub(/,$/, "", w)
			if (w ~ /^--/) { long = w; break } else if (w ~ /^-/) short = w
		}
		print long (short ? "/" short : "") }'
}
help_subs() { awk '/^Commands:/ { on = 1; next } /^$/ { on = 0 } on { print $1 }'; }

walk() {
	local path="$*" out
	out=$(ctl help "$@") || bt_fail "brindlectl help $path exits $?"
	bt_expect_eq "brindlectl $path --help is its help" "$out" "$(ctl "$@" --help)"
	bt_expect_eq "brindlectl $path -h is its help" "$out" "$(ctl "$@" -h)"
	local subs
	subs=$(help_subs <<<"$out")
	if [ -z "$path" ]; then
		globals=" $(help_flags <<<"$out" | tr '\n' ' ')"
	elif [ -z "$subs" ]; then
		leaves+=("$path")
		flags[$path]=" $(help_flags <<<"$out" | tr '\n' ' ')"
	fi
	local s
	for s in $subs; do
		walk "$@" "$s"
	done
}
walk
[ ${#leaves[@]} -ge 25 ] || bt_fail "only ${#leaves[@]} commands found in the help: ${leaves[*]}"

# The doc's synopsis lines: "brindlectl ..." at the start of a line in a code block.
synopsis=$(awk '/^```/ { code = !code; next } code && /^brindlectl / { print }' "$DOC")

# Global flags: in the doc (its table of flags and variables).
for f in $globals; do
	grep -q -- "\`${f%%/*}\`" "$DOC" || problem "global flag ${f%%/*} is not in docs/brindlectl.md"
done

# Every command of the help has a synopsis line and its flags appear on its lines.
for p in "${leaves[@]}"; do
	lines=$(grep -E "^brindlectl +${p// / +}( |$)" <<<"$synopsis" || true)
	if [ -z "$lines" ]; then
		problem "docs/brindlectl.md has no synopsis line for \"brindlectl $p\""
		continue
	fi
	for f in ${flags[$p]}; do
		long=${f%%/*} short=
		[ "$long" != "$f" ] && short=${f#*/}
		grep -q -E -- "(^| |\[|\()($long|${short:-$long})( |=|\]|\)|$)" <<<"$lines" ||
			problem "docs/brindlectl.md: \"brindlectl $p\" does not show $long"
	done
done

# Every synopsis line names a command of the help and only flags the help lists for it.
is_leaf() {
	local l
	for l in "${leaves[@]}"; do [ "$l" = "$1" ] && return 0; done
	return 1
}
while read -r line; do
	# "datastore migrate lock|export|unlock": each alternative is a command
	read -ra words <<<"${line#brindlectl }"
	path=""
	for w in "${words[@]}"; do
		[[ $w =~ ^[a-z][a-z-]*(\|[a-z][a-z-]*)*$ ]] || break
		path="${path:+$path }$w"
	done
	for alt in $(tr '|' ' ' <<<"${path##* }"); do
		cand="${path% *}"
		[ "$cand" = "$path" ] && cand="" # a one-word path
		p="${cand:+$cand }$alt"
		# the longest prefix that is a command: "get ippools" is get
		while [ -n "$p" ] && ! is_leaf "$p"; do
			[ "$p" = "${p% *}" ] && p="" || p=${p% *}
		done
		[ -n "$p" ] || {
			problem "docs/brindlectl.md: \"$line\" is no command of brindlectl --help"
			continue
		}
		for w in "${words[@]}"; do
			w=${w#[\[\(]}
			w=${w%%[\]\)=]*}
			[[ $w =~ ^--?[a-zA-Z] ]] || continue
			[[ " ${flags[$p]} $globals " =~ [\ /]$w[\ /] ]] ||
				problem "docs/brindlectl.md: \"$line\": $w is not a flag of brindlectl $p"
		done
	done
done <<<"$synopsis"

# docs/lab.md's table of commands: a row per lab command of the help, showing each of its
# flags, and no flag the help does not list. Its first cells: "| `lab up FILE [--timeout S]`".
LABDOC=$BT_SOURCE_DIR/docs/lab.md
rows=$(grep -E '^\| `lab ' "$LABDOC" | cut -d'|' -f2)
for p in "${leaves[@]}"; do
	[[ $p == lab\ * ]] || continue
	row=$(grep -E -- "\`${p// / +}( |\`)" <<<"$rows" || true)
	if [ -z "$row" ]; then
		problem "docs/lab.md's table has no row for \"brindlectl $p\""
		continue
	fi
	for f in ${flags[$p]}; do
		long=${f%%/*} short=
		[ "$long" != "$f" ] && short=${f#*/}
		[ "$long" = --help ] && continue
		grep -q -E -- "(^| |\[|\()($long|${short:-$long})( |=|\]|\)|\`|$)" <<<"$row" ||
			problem "docs/lab.md: the row of \"$p\" does not show $long"
	done
	for w in $(grep -o -E -- '--[a-z][a-z-]*' <<<"$row" | sort -u); do
		[[ " ${flags[$p]} $globals " =~ [\ /]$w[\ /] ]] ||
			problem "docs/lab.md: the row of \"$p\" shows $w, which brindlectl $p does not take"
	done
done

if [ ${#problems[@]} -gt 0 ]; then
	printf '%s\n' "${problems[@]}" >&2
	bt_fail "${#problems[@]} disagreement(s) between brindlectl's help and docs/brindlectl.md or docs/lab.md"
fi

# Usage errors point to the help and exit 2.
rc=0
out=$(ctl apply --bogus 2>&1) || rc=$?
bt_expect_eq "unknown flag exits 2" 2 "$rc"
bt_expect_contains "unknown flag" "see brindlectl apply --help" "$out"
rc=0
out=$(ctl ipam nosuch 2>&1) || rc=$?
bt_expect_eq "unknown subcommand exits 2" 2 "$rc"
bt_expect_contains "unknown subcommand" "see brindlectl ipam --help" "$out"
rc=0
out=$(ctl help nosuch 2>&1) || rc=$?
bt_expect_eq "help of an unknown command exits 2" 2 "$rc"
# "--help" after "--" belongs to the command lab exec runs
out=$(ctl lab exec nosuchlab n1 -- ls --help 2>&1) || true
bt_expect_contains "lab exec passes --help on" "no lab" "$out"

bt_log "${#leaves[@]} commands checked against docs/brindlectl.md"
bt_pass
