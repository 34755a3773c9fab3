#!/usr/bin/env bash
# The copy kernel's PTX (gpu/copy/kcopy_ptx.h), as the engine hands it to the
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
[ "$signal" = "atom.global.add.u32,[],1; st.global.u32[],0; membar.sys; st.volatile.global.u64[],;" ] &&
	pass "a fencing launch: count the block, the last resets the count, fences at system scope, then writes the ticket" ||
	fail "the ticket write's order: $signal"
# the module is shared by every stream on the device: each counts in its own
# slot (the last parameter), never in one counter for all
slot=$(grep -cE 'ld\.param\.u32[[:space:]]+%r16, \[dbr_kcopy_slot\];|mul\.wide\.u32[[:space:]]+%rd13, %r16, 4;|(atom\.global\.add\.u32|st\.global\.u32)[[:space:]].*\[%rd12\]' "$TMPD/kcopy.ptx")
[ "$slot" -eq 4 ] && ! grep -qE '\[dbr_kcopy_count\]' "$TMPD/kcopy.ptx" &&
	pass "the count is the stream's slot of dbr_kcopy_count[], by the slot parameter" ||
	fail "the count is not indexed by the stream's slot ($slot of 4 lines)"
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
# The resident kernel (gpu/copy/kring_ptx.h, made from gpu/copy/kring.cu): through
# ptxas too, with the orders its protocol rests on, and the same as
# gpu/copy/kring-ptx makes it now where nvcc is here.
"$check" ptx kring >"$TMPD/kring.ptx" || die "gpu_check ptx kring failed"
grep -q '^\.visible \.entry dbr_kring($' "$TMPD/kring.ptx" && pass "entry dbr_kring" ||
	fail "no entry dbr_kring in the resident kernel's PTX"
grep -q '^\.version 7\.0$' "$TMPD/kring.ptx" && grep -q '^\.target sm_70$' "$TMPD/kring.ptx" &&
	pass "resident kernel: PTX ISA 7.0, sm_70, as the launch kernel" ||
	fail "resident kernel: $(grep -E '^\.(version|target)' "$TMPD/kring.ptx" | paste -sd' ')"
# The slots' first lines polled with relaxed loads at system scope, an
# acquire fence after a line found posted, stop read with acquire; after a
# round the block meets, and one system-scope fence (cumulative: every
# thread's stores are ordered before it by the barrier) comes before the
# ticket and tail (ring offsets 136 and 128) tell the host. The compiler
# lays the tail's store out where it likes, so the check follows branches:
# every way into the tail's block leaves from after the fence.
acq=$(grep -c 'ld\.acquire\.sys\.global\.u64' "$TMPD/kring.ptx")
rlx=$(grep -c 'ld\.relaxed\.sys\.global\.u64' "$TMPD/kring.ptx")
afence=$(grep -c 'fence\.acq_rel\.sys;' "$TMPD/kring.ptx")
end=$(awk '
	/^\$L__BB[0-9_]+:$/ { label = substr($1, 1, length($1) - 1); last_label = NR }
	/bar\.sync/ { bar = NR }
	/membar\.sys;/ { fence = NR }
	/add\.s64.*, 136;$/ { t_reg = $2; sub(",", "", t_reg); t_add = NR }
	/add\.s64.*, 128;$/ { l_reg = $2; sub(",", "", l_reg); l_add = NR; l_label = label }
	/st\.relaxed\.sys\.global\.u64/ {
		if (NR == t_add + 1 && index($0, "[" t_reg "]")) ticket = NR
		if (NR == l_add + 1 && index($0, "[" l_reg "]")) { tail = NR; tail_label = l_label; tail_label_line = last_label }
	}
	{ line[NR] = $0 }
	END {
		if (!ticket || !tail) { print "no ticket or tail store"; exit }
		if (ticket < fence || fence < bar) { print "ticket store not after the barrier and fence"; exit }
		# the block holding the tail store: reached only from after the fence
		if (tail_label_line > 1 && line[tail_label_line - 1] !~ /bra/ && tail_label_line - 1 < fence) {
			print "the tail block is fallen into before the fence"; exit
		}
		for (i = 1; i <= NR; i++)
			if (line[i] ~ ("bra(\\.uni)?[ \t]+\\" tail_label ";") && i < fence) {
				print "a branch into the tail block before the fence (line " i ")"; exit
			}
		print "ok"
	}' "$TMPD/kring.ptx")
[ "$acq" -ge 1 ] && [ "$rlx" -ge 1 ] && [ "$afence" -ge 1 ] && [ "$end" = ok ] &&
	pass "resident kernel: slots polled relaxed ($rlx), acquire fence after ($afence), stop acquired ($acq); a round ends at the barrier, one system-scope fence, then the ticket and tail" ||
	fail "resident kernel: $rlx relaxed loads, $afence acquire fences, $acq acquire loads; the round's end: $end"
grep -q 'ld\.global\.cv\.v4\.u32' "$TMPD/kring.ptx" &&
	pass "resident kernel: host memory read around the caches (ld.global.cv)" ||
	fail "resident kernel: no ld.global.cv.v4 for host memory"
for arch in sm_80 sm_90; do
	if "$ptxas" -arch=$arch -v "$TMPD/kring.ptx" -o "$TMPD/kring-$arch.cubin" \
		>"$TMPD/ptxas-kring-$arch.out" 2>&1; then
		pass "resident kernel, ptxas -arch=$arch: $(grep -m1 -o 'Used [0-9]* registers' "$TMPD/ptxas-kring-$arch.out")"
	else
		fail "resident kernel, ptxas -arch=$arch:"
		sed 's/^/    /' "$TMPD/ptxas-kring-$arch.out"
	fi
done
nvcc=$(dirname "$ptxas")/nvcc
made=$(sed -n 's/.* with nvcc \([0-9.]*\)\.$/\1/p' "$SRCDIR/gpu/copy/kring_ptx.h")
have=$([ -x "$nvcc" ] && "$nvcc" --version | sed -n 's/.*release [0-9.]*, V\([0-9.]*\).*/\1/p')
if [ -n "$have" ] && [ "$have" != "$made" ]; then
	echo "# nvcc $have here, $made made gpu/copy/kring_ptx.h: not compared with gpu/copy/kring.cu"
elif [ -x "$nvcc" ] && NVCC=$nvcc "$SRCDIR/gpu/copy/kring-ptx" --stdout >"$TMPD/kring_ptx.h" 2>"$TMPD/kring-ptx.err"; then
	cmp -s "$TMPD/kring_ptx.h" "$SRCDIR/gpu/copy/kring_ptx.h" &&
		pass "gpu/copy/kring_ptx.h is what gpu/copy/kring-ptx makes of gpu/copy/kring.cu" ||
		fail "gpu/copy/kring_ptx.h is stale: run gpu/copy/kring-ptx ($(diff "$SRCDIR/gpu/copy/kring_ptx.h" "$TMPD/kring_ptx.h" | wc -l) lines differ)"
else
	echo "# no nvcc beside ptxas: gpu/copy/kring_ptx.h not compared with gpu/copy/kring.cu"
fi
# the diagnostic build (gpu-proof rounds loads it through DBR_KRING_PTX):
# the same entry, the GPU's clock read, and it assembles
if [ -x "$nvcc" ] && NVCC=$nvcc "$SRCDIR/gpu/copy/kring-ptx" --stats >"$TMPD/kring-stats.ptx" 2>"$TMPD/kring-stats.err"; then
	if grep -q '^\.visible \.entry dbr_kring($' "$TMPD/kring-stats.ptx" &&
		grep -q 'globaltimer' "$TMPD/kring-stats.ptx" &&
		"$ptxas" -arch=sm_90 "$TMPD/kring-stats.ptx" -o "$TMPD/kring-stats.cubin" \
			>"$TMPD/ptxas-kring-stats.out" 2>&1; then
		pass "gpu/copy/kring-ptx --stats: dbr_kring, timed by %globaltimer, assembles for sm_90"
	else
		fail "gpu/copy/kring-ptx --stats: no entry, no clock read, or ptxas refused it"
		sed 's/^/    /' "$TMPD/ptxas-kring-stats.out" 2>/dev/null
	fi
elif [ -x "$nvcc" ]; then
	fail "gpu/copy/kring-ptx --stats failed: $(head -3 "$TMPD/kring-stats.err")"
else
	echo "# no nvcc beside ptxas: the diagnostic build not made"
fi
finish
