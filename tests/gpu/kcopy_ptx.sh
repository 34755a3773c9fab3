#!/usr/bin/env bash
# The copy kernels' PTX (gpu/kcopy_ptx.h), as the engine hands it to the
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
for e in dbr_gather dbr_scatter; do
	grep -q "^\.visible \.entry $e($" "$TMPD/kcopy.ptx" && pass "entry $e" ||
		fail "no entry $e in the PTX"
done
# membar.sys once, in dbr_scatter, after its copy loop
fences=$(awk '/\.entry/ { e = $3 } /membar\.sys/ { print e }' "$TMPD/kcopy.ptx")
[ "$fences" = "dbr_scatter(" ] && pass "one system-scope fence, in dbr_scatter" ||
	fail "membar.sys in: ${fences:-none}"
for arch in sm_80 sm_90; do
	if "$ptxas" -arch=$arch -v "$TMPD/kcopy.ptx" -o "$TMPD/kcopy-$arch.cubin" \
		>"$TMPD/ptxas-$arch.out" 2>&1; then
		pass "ptxas -arch=$arch: $(grep -c 'Compiling entry' "$TMPD/ptxas-$arch.out") entries, $(grep -m1 -o 'Used [0-9]* registers' "$TMPD/ptxas-$arch.out")"
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
