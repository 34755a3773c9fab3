#!/usr/bin/env bash
# gpu/runtime/hip.c's real code against the HIP runtime double (host memory; dma-buf
# export through /dev/udmabuf where the kernel has it), without fio: copies
# through every marker, devices chosen as gpu_dev_ids does, export (ROCm >= 6
# and the ROCm 5 / ROCr path), failure injection, and nothing left behind.
. "$(dirname "$0")/../lib.sh"

check=$BUILDDIR/tests/gpu/gpu_check
libs=$BUILDDIR/tests/gpu/.libs
rocm5=$BUILDDIR/tests/gpu/rocm5/.libs
[ -x "$check" ] || die "gpu_check not built at $check"
grep -q '^#define DBR_HAVE_HIP 1' "$BUILDDIR/config.h" || skip "built --without-hip"
[ -f "$libs/libamdhip64.so" ] || die "the HIP double is not built ($libs/libamdhip64.so)"
report=$TMPD/report
have_udmabuf=0
[ -w /dev/udmabuf ] && have_udmabuf=1

# hipcheck NAME WANT-EXIT GREP-REGEX [ENV=...] -- gpu_check ARGS...
hipcheck() {
	local name=$1 want=$2 re=$3 rc=0 envs=()
	shift 3
	while [ "$1" != -- ]; do envs+=("$1"); shift; done
	shift
	: >"$report"
	env LD_LIBRARY_PATH="$libs" HIPDOUBLE_REPORT="$report" "${envs[@]}" \
		"$check" hip "$@" >"$TMPD/$name.out" 2>&1 || rc=$?
	if [ "$rc" -eq "$want" ] && grep -Eq "$re" "$TMPD/$name.out"; then
		pass "$name"
	else
		fail "$name: want exit $want and /$re/ (exit $rc)"
		sed 's/^/    /' "$TMPD/$name.out"
	fi
}

# no_leaks NAME: the double's final report shows nothing left behind
no_leaks() {
	if hip_report "$report" | grep -q "live_allocs=0 live_streams=0 live_events=0 live_host_regs=0"; then
		pass "$1: nothing left behind"
	else
		fail "$1: left behind: $(hip_report "$report")"
	fi
}

hipcheck copies-4-threads-2-devices 0 "thread 3: ok: 8 MiB on device 1, copies verified" \
	HIPDOUBLE_DEVICES=2 HIPDOUBLE_DELAY_US=300 -- -d 0:1 -t 4 -x skip
no_leaks copies-4-threads-2-devices
final=$(hip_report "$report")
grep -q " dev0=2 dev1=2" <<<"$final" && pass "2 allocations on each device" ||
	fail "allocations per device: $final"
grep -q "unpinned_copies=0" <<<"$final" && ! grep -q " copies=0 " <<<"$final" &&
	pass "every copy came from hipHostRegister'ed memory" ||
	fail "copies from memory that is not page-locked: $final"
grep -Eq "[1-9][0-9]* polls not ready" "$TMPD/copies-4-threads-2-devices.out" &&
	pass "copies are asynchronous: markers seen not ready" ||
	fail "no marker was ever seen not ready"
# 600 small copies a pass, both ways: by DMA here (HIP has no copy kernel)
hipcheck small-copies-gpu-copy-kernel 0 "thread 0: ok: .*copies by DMA; gpu_copy=kernel: gpu=hip has no copy kernel yet, 0 kernel launches" \
	-- -c kernel -x skip
no_leaks small-copies-gpu-copy-kernel

if [ "$have_udmabuf" = 1 ]; then
	hipcheck export-rocm6 0 "thread 0: ok: .*dma-buf fd [0-9]+: exp_name: udmabuf size: 8388608" -- -x require
	no_leaks export-rocm6
	env LD_LIBRARY_PATH="$rocm5" HIPDOUBLE_REPORT="$report" "$check" hip -x require \
		>"$TMPD/rocm5.out" 2>&1 && grep -q "exp_name: udmabuf" "$TMPD/rocm5.out" &&
		pass "export-rocm5: through hsa_amd_portable_export_dmabuf" ||
		{ fail "export-rocm5"; cat "$TMPD/rocm5.out"; }
else
	hipcheck export-no-udmabuf 0 "export refused: Operation not supported \(hipMemGetHandleForAddressRange\(DmaBuf\): hipErrorNotSupported\)" -- -x refuse
	no_leaks export-no-udmabuf
	: >"$report"
	env LD_LIBRARY_PATH="$rocm5" "$check" hip -x refuse >"$TMPD/rocm5.out" 2>&1 &&
		grep -q "export refused: .*hsa_amd_portable_export_dmabuf: status 0x1000" "$TMPD/rocm5.out" &&
		pass "export-rocm5-no-udmabuf: the ROCr path fails cleanly too" ||
		{ fail "export-rocm5-no-udmabuf"; cat "$TMPD/rocm5.out"; }
fi
# the memory type hipPointerGetAttributes gives, which the p2p job line
# names: VRAM, or host memory said plainly (ROCm 5 numbers the types apart)
hipcheck memory-type-vram 0 "thread 0: ok: .*(memory: |; )VRAM \(hipMemoryTypeDevice\)" -- -x try
hipcheck memory-type-host 0 "thread 0: ok: .*host memory \(hipMemoryTypeHost\): the NVMe controller DMAs into system memory, not into the GPU" \
	HIPDOUBLE_MEMTYPE=host -- -x try
env LD_LIBRARY_PATH="$rocm5" "$check" hip -x try >"$TMPD/rocm5-type.out" 2>&1 &&
	grep -Eq "thread 0: ok: .*VRAM \(hipMemoryTypeDevice\)" "$TMPD/rocm5-type.out" &&
	pass "memory-type-rocm5: ROCm 5's numbering read as ROCm 5's" ||
	{ fail "memory-type-rocm5"; cat "$TMPD/rocm5-type.out"; }
hipcheck export-refused-by-runtime 0 "export refused: .*hipErrorNotSupported" \
	HIPDOUBLE_EXPORT=none -- -x refuse
no_leaks export-refused-by-runtime

# every acquisition failing in turn: a clean error and nothing held
hipcheck fail-malloc 0 "failed: Cannot allocate memory \(hipMalloc: hipErrorOutOfMemory\)" \
	HIPDOUBLE_FAIL=malloc -- -f
no_leaks fail-malloc
hipcheck fail-hostregister 0 "hipHostRegister of the host buffer.*hipErrorOutOfMemory" \
	HIPDOUBLE_FAIL=hostregister -- -f
no_leaks fail-hostregister
hipcheck fail-stream 0 "hipStreamCreateWithFlags: hipErrorOutOfMemory" \
	HIPDOUBLE_FAIL=stream -- -f
no_leaks fail-stream
hipcheck fail-event 0 "hipEventCreateWithFlags: hipErrorOutOfMemory" \
	HIPDOUBLE_FAIL=event -- -f
no_leaks fail-event
hipcheck fail-copy 1 "copies failed in the round trip: Invalid argument \(hipMemcpyHtoDAsync: hipErrorInvalidValue\)" \
	HIPDOUBLE_FAIL=copy -- -x skip
no_leaks fail-copy

hipcheck dev-out-of-range 1 "alloc 8 MiB on device 2 failed: No such device \(device 2 does not exist \(2 visible\)\)" \
	HIPDOUBLE_DEVICES=2 -- -d 2
hipcheck no-device 77 "probe: No such device: the HIP runtime sees no AMD GPU" HIPDOUBLE_DEVICES=0 --
hipcheck init-error 77 "probe: .*hipGetDeviceCount: hipErrorNotInitialized" HIPDOUBLE_FAIL=init --
rc=0
env -u LD_LIBRARY_PATH "$check" hip >"$TMPD/none.out" 2>&1 || rc=$?
[ "$rc" -eq 77 ] && grep -q "libamdhip64.so not found: install ROCm" "$TMPD/none.out" &&
	pass "no runtime: $(cat "$TMPD/none.out")" ||
	{ fail "no runtime: want exit 77 (exit $rc)"; cat "$TMPD/none.out"; }
finish
