#!/usr/bin/env bash
# The docs cannot drift from the tool: every ```yaml block in docs/*.md is
# validated with brindlectl validate (resources; a block after the marker
# <!-- topology --> as a lab topology file, one after <!-- crd --> as the v3
# resource it stores; one after <!-- invalid --> must be refused; one after
# <!-- overlay --> is a kustomization, which the kube tier builds), every examples/*.yaml likewise, and every `-f PATH` in a ```sh
# block of docs/*.md names a file of the repository (or one the block itself
# writes). Needs no datastore.
. "$(dirname "$0")/../lib/common.sh"

failures=0
fail() {
	bt_log "FAIL: $*"
	failures=$((failures + 1))
}
SRC=$BT_SOURCE_DIR
cd "$SRC"
n_yaml=0
n_files=0

# --- YAML blocks: docs/<page>.md -> $BT_DIR/<page>-<line>.<marker>.yaml ----------------
for md in docs/*.md; do
	awk -v dir="$BT_DIR" -v page="$(basename "$md" .md)" '
		/^<!-- (invalid|topology|crd|overlay) -->$/ { marker = $2; next }
		/^```yaml$/ { out = sprintf("%s/%s-%d.%s.yaml", dir, page, NR + 1, marker ? marker : "resource"); inblock = 1; marker = ""; next }
		/^```/ { if (inblock) close(out); inblock = 0; marker = ""; next }
		inblock { print > out; next }
		/[^ \t]/ { marker = "" }
	' "$md"
done
for f in "$BT_DIR"/*.yaml; do
	[ -e "$f" ] || continue
	n_yaml=$((n_yaml + 1))
	where=$(basename "$f" | sed -E 's/^(.*)-([0-9]+)\.([a-z]+)\.yaml$/docs\/\1.md line \2/')
	case "$f" in
	*.invalid.yaml)
		if "$BRINDLECTL" validate -f "$f" >/dev/null 2>&1; then
			fail "$where: marked <!-- invalid --> but brindlectl accepts it"
		fi
		;;
	*.crd.yaml)
		# a custom resource is the v3 resource with another apiVersion (crds.md)
		sed 's#^apiVersion: crd.projectcalico.org/v1#apiVersion: projectcalico.org/v3#' "$f" >"$f.v3"
		out=$("$BRINDLECTL" validate -f "$f.v3" 2>&1) ||
			fail "$where: the custom resource example is refused:"$'\n'"$out"
		;;
	*.overlay.yaml)
		# a kustomize overlay: built and dry-run against the API server by tests/kube/manifests.sh
		grep -q '^kind: Kustomization$' "$f" || fail "$where: marked <!-- overlay --> but not a Kustomization"
		;;
	*.topology.yaml)
		out=$("$BRINDLECTL" validate --topology -f "$f" 2>&1) ||
			fail "$where: the lab topology example is refused:"$'\n'"$out"
		;;
	*)
		out=$("$BRINDLECTL" validate -f "$f" 2>&1) ||
			fail "$where: the YAML example is refused:"$'\n'"$out"
		;;
	esac
done

# --- examples/: topologies (they have nodes:) and resources -------------------------------
for f in examples/*.yaml; do
	n_yaml=$((n_yaml + 1))
	if grep -q '^nodes:' "$f"; then
		out=$("$BRINDLECTL" validate --topology -f "$f" 2>&1) || fail "$f:"$'\n'"$out"
	else
		out=$("$BRINDLECTL" validate -f "$f" 2>&1) || fail "$f:"$'\n'"$out"
	fi
done

# --- every -f PATH in a ```sh block names a file that exists --------------------------------
# Only brindlectl and kubectl command lines (bird's -f is a flag); a path the page itself writes
# (-o FILE, > FILE) counts as existing.
while IFS=$'\t' read -r md line path; do
	n_files=$((n_files + 1))
	case "$path" in
	-) continue ;;
	esac
	if [ ! -e "$path" ] && ! grep -qE "(-o|>) *$path( |$)" "$md"; then
		fail "$md line $line: -f $path: no such file in the repository (add it to examples/)"
	fi
done < <(for md in docs/*.md README.md examples/README.md; do
	awk -v md="$md" '
		/^```sh$/ { insh = 1; next }
		/^```/ { insh = 0; next }
		insh && /(brindlectl|kubectl)/ {
			line = $0
			sub(/#.*/, "", line)
			n = split(line, w, /[ \t]+/)
			for (i = 1; i < n; i++)
				if (w[i] == "-f" || w[i] == "--filename" || w[i] == "--file")
					printf "%s\t%d\t%s\n", md, NR, w[i + 1]
		}
	' "$md"
done)

[ "$n_yaml" -ge 15 ] || fail "only $n_yaml YAML examples found: is the extraction broken?"
[ "$failures" -eq 0 ] || bt_fail "$failures problem(s) in the docs' examples"
bt_log "$n_yaml YAML examples validated, $n_files -f paths checked"
