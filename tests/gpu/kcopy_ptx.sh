#!/usr/bin/env bash
# The copy kernel's PTX (gpu/kcopy_ptx.h), as the engine hands it to the
# driver, through NVIDIA's PTX assembler for Ampere and Hopper, so a syntax
# error never first shows on a GPU machine; a corrupted copy must fail.
# ptxas: $PTXAS, else on PATH, else $CUDA_HOME/bin or /usr/local/cuda/bin.
. "$(dirname "$0")/../lib.sh"

check=$BUILDDIR/tests/gpu/gpu_check
[ -x "$check" ] || die "gpu_check not built at $check"
ptxas=${PTXAS:-$(command -v ptxas || true)}
for d in "${CUDA_HOME:-}" /usr/local/cuda; do
	[ -n "$ptxas" ] && break
	[ -n "$d" ] && [ -x "$d/bin/ptxas" ] && ptxas=$d/bin/ptxas
done
[ -n "$ptxas" ] || skip "no ptxas (the CUDA toolkit's PTX assembler): set PTXAS or CUDA_HOME"

"$check" ptx >"$TMPD/kcopy.ptx" || die "gpu_check ptx failed"
grep -q "^\.visible \.entry dbr_kcopy($" "$TMPD/kcopy.ptx" && pass "entry dbr_kcopy" ||
	fail "no entry dbr_kcopy in the PTX"
# one system-scope fence, after the copy loop, for device -> host blocks only
fences=$(grep -c 'membar\.sys' "$TMPD/kcopy.ptx")
fence=$(sed -n '/^\$Ldone:/,/ret;/p' "$TMPD/kcopy.ptx" | grep 'membar\.sys' | tr -d ' \t')
[ "$fences" -eq 1 ] && [ "$fence" = "@%p3membar.sys;" ] &&
	pass "one system-scope fence after the loop, predicated on the direction bit" ||
	fail "membar.sys: $fences in the PTX, after the loop: ${fence:-none}"
for arch in sm_80 sm_90; do
	if "$ptxas" -arch=$arch -v "$TMPD/kcopy.ptx" -o "$TMPD/kcopy-$arch.cubin" \
		>"$TMPD/ptxas-$arch.out" 2>&1; then
		pass "ptxas -arch=$arch: $(grep -m1 -o 'Used [0-9]* registers' "$TMPD/ptxas-$arch.out")"
	else
		fail "ptxas -arch=$arch:"
		sed 's/^/    /' "$TMPD/ptxas-$arch.out"
	fi
done
sed 's/ld\.global\.v4\.u32/ld.global.v5.u32/' "$TMPD/kcopy.ptx" >"$TMPD/bad.ptx"
if "$ptxas" -arch=sm_90 "$TMPD/bad.ptx" -o "$TMPD/bad.cubin" >"$TMPD/bad.out" 2>&1; then
	fail "negative control: ptxas took a corrupted kernel"
else
	pass "negative control: a corrupted kernel is refused ($(head -1 "$TMPD/bad.out" | cut -c1-80))"
fi
finish
