#!/usr/bin/env bash
# The source tree's layers, read from its #include "..." lines. From the
# bottom up: gpu/runtime (the GPU runtimes and their table of calls),
# gpu/copy (the copy stream and kernels over them), engine/core (the units
# that know nothing of fio), engine/fio (fio's glue), tools. A file may
# include headers of its own layer or of one below, never of one above; and
# between units (x.c with its x.h) no chain of includes comes back to where
# it started. A header that names no file of the tree (fio's, liburing's,
# config.h) is not ours and is left out.
# Needs neither fio nor a build: SRCDIR, else the tree above this script.
set -u

: "${SRCDIR:=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
LAYERS=(gpu/runtime gpu/copy engine/core engine/fio tools)

PASSED=0
FAILED=0
pass() { PASSED=$((PASSED + 1)); echo "ok - $*"; }
fail() { FAILED=$((FAILED + 1)); echo "not ok - $*"; }

# check ROOT: print one line per include of a higher layer, per header
# found twice and per cycle; exit status 1 when it printed any
check() {
	local root=$1 i d f h inc dir target bad=0
	local -A layer=() where=() edges=() state=()
	local -a files=()

	for i in "${!LAYERS[@]}"; do
		d=${LAYERS[i]}
		[ -d "$root/$d" ] || continue
		while IFS= read -r f; do
			f=${f#"$root"/}
			files+=("$f")
			layer[$f]=$i
			h=${f##*/}
			if [ -n "${where[$h]:-}" ]; then
				echo "$h is both ${where[$h]} and $f: an include of it is ambiguous"
				bad=1
			fi
			where[$h]=$f
		done < <(find "$root/$d" -maxdepth 1 -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' \) | sort)
	done
	for f in "${files[@]}"; do
		dir=${f%/*}
		while IFS= read -r inc; do
			# as the compiler looks: beside the file, then the -I folders
			if [ -n "${layer[$dir/$inc]:-}" ]; then
				target=$dir/$inc
			else
				target=${where[$inc]:-}
			fi
			[ -n "$target" ] || continue
			if [ "${layer[$target]}" -gt "${layer[$f]}" ]; then
				echo "$f (${LAYERS[${layer[$f]}]}) includes $inc of ${LAYERS[${layer[$target]}]}, a layer above it"
				bad=1
			fi
			[ "${target%.*}" = "${f%.*}" ] ||
				edges[${f%.*}]+=" ${target%.*}"
		done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$root/$f")
	done
	# depth first over the units: a unit met again while still open closes
	# a cycle, printed from where it was opened
	local -a path=()
	visit() {
		local u=$1 v j cyc
		state[$u]=open
		path+=("$u")
		for v in ${edges[$u]:-}; do
			if [ "${state[$v]:-}" = open ]; then
				cyc=
				for ((j = ${#path[@]} - 1; j >= 0; j--)); do
					cyc="${path[j]} -> $cyc"
					[ "${path[j]}" = "$v" ] && break
				done
				echo "include cycle: $cyc$v"
				bad=1
			elif [ -z "${state[$v]:-}" ]; then
				visit "$v"
			fi
		done
		unset 'path[${#path[@]}-1]'
		state[$u]=done
	}
	for f in "${files[@]}"; do
		[ -n "${state[${f%.*}]:-}" ] || visit "${f%.*}"
	done
	return $bad
}

# negative control: a tree with an include of a higher layer and a cycle
neg=$(mktemp -d "${TMPDIR:-/tmp}/dbr-layout.XXXXXX")
trap 'rm -rf "$neg"' EXIT
mkdir -p "$neg/gpu/runtime" "$neg/gpu/copy"
printf '#include "b.h"\n' >"$neg/gpu/copy/a.c"
printf '#include "a.h"\n#include <stdio.h>\n#include "fio.h"\n' >"$neg/gpu/copy/b.c"
touch "$neg/gpu/copy/a.h" "$neg/gpu/copy/b.h"
printf '#include "a.h"\n' >"$neg/gpu/runtime/r.h"
out=$(check "$neg")
if grep -q '^include cycle: gpu/copy/a -> gpu/copy/b -> gpu/copy/a$' <<<"$out" &&
   grep -q '^gpu/runtime/r.h (gpu/runtime) includes a.h of gpu/copy' <<<"$out" &&
   [ "$(wc -l <<<"$out")" -eq 2 ]; then
	pass "negative control: a cycle and an include of a higher layer are found"
else
	fail "negative control: expected one cycle and one include of a higher layer, got:"
	sed 's/^/    /' <<<"$out"
fi

for d in "${LAYERS[@]}"; do
	[ -d "$SRCDIR/$d" ] || fail "no folder $d in $SRCDIR"
done
if out=$(check "$SRCDIR"); then
	pass "$(printf '%s -> ' "${LAYERS[@]}" | sed 's/ -> $//'): no include of a higher layer, no include cycle"
else
	fail "the layers of $SRCDIR:"
	sed 's/^/    /' <<<"$out"
fi

echo "layout: $PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
