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
# system-scope fences: one after the copy loop, for device -> host blocks
# only (GPU scope for the others), and one before a fencing launch's last
# block writes the ticket into the host word
fences=$(grep -c 'membar\.sys' "$TMPD/kcopy.ptx")
fence=$(sed -n '/^\$Ldone:/,/^\$Lret:/p' "$TMPD/kcopy.ptx" | grep -m2 'membar\.' | tr -d ' \t' | paste -sd' ')
[ "$fences" -eq 2 ] && [ "$fence" = "@%p3membar.sys; @!%p3membar.gl;" ] &&
	pass "after the loop: a system-scope fence for scatters, a GPU-scope one for gathers" ||
	fail "after the loop: $fences membar.sys in the PTX, then: ${fence:-none}"
signal=$(sed -n '/^\$Ldone:/,/^\$Lret:/p' "$TMPD/kcopy.ptx" |
	grep -E 'atom\.global\.add|st\.global\.u32|membar\.sys;|st\.volatile\.global\.u64' |
	grep -v '@' | tr -d ' \t' | sed 's/[%][a-z0-9]*//g' | paste -sd' ')
[ "$signal" = "atom.global.add.u32,[dbr_kcopy_count],1; st.global.u32[dbr_kcopy_count],0; membar.sys; st.volatile.global.u64[],;" ] &&
	pass "a fencing launch: count the block, the last resets the count, fences at system scope, then writes the ticket" ||
	fail "the ticket write's order: $signal"
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
