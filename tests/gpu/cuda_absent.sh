#!/usr/bin/env bash
# gpu=cuda where the machine has no NVIDIA driver (the CI machine: toolkit
# headers, no libcuda.so.1, no GPU): fio must stop with one dmabuf_uring line
# naming the cause and the fix, and gpu_check must see a clean probe failure.
# Where libcuda.so.1 is present, run the provider checks on device 0 instead.
. "$(dirname "$0")/../lib.sh"

check=$BUILDDIR/tests/gpu/gpu_check
[ -x "$check" ] || die "gpu_check not built at $check"
f=$(scratch_file)
job=(--name=cuda --filename="$f" --size=4m --bs=64k --iodepth=4 --rw=read)

if ! grep -q '^#define DBR_HAVE_CUDA 1' "$BUILDDIR/config.h"; then
	run_refused cuda-not-built "gpu=cuda: this build of dmabuf_uring has no such provider" \
		"${job[@]}" --gpu=cuda --transfer=bounce
	finish
	exit
fi

if ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
	log "libcuda.so.1 is installed: checking the provider on device 0"
	if "$check" cuda -t 2 -m 8 >"$TMPD/check.out" 2>&1; then
		pass "gpu_check cuda: $(grep -c ': ok:' "$TMPD/check.out") threads ok"
	else
		rc=$?
		[ "$rc" -eq 77 ] && skip "$(cat "$TMPD/check.out")"
		fail "gpu_check cuda (exit $rc)"
	fi
	sed 's/^/    /' "$TMPD/check.out"
	run_ok cuda-bounce-verify "${job[@]}" --rw=randwrite --gpu=cuda \
		--transfer=bounce --verify=crc32c --direct=1 --thread
	finish
	exit
fi

# the CUDA toolkit's stub library where the driver's should be: cuInit
# answers 34, whose name the stub does not know; say it, and where to look
stub=
for d in /usr/local/cuda/lib64/stubs /usr/local/cuda/targets/*/lib/stubs; do
	[ -f "$d/libcuda.so" ] && stub=$d/libcuda.so && break
done
if [ -n "$stub" ] && grep -q '^#define DBR_HAVE_CUDA 1' "$BUILDDIR/config.h"; then
	mkdir -p "$TMPD/stub"
	ln -sf "$stub" "$TMPD/stub/libcuda.so.1"
	LD_LIBRARY_PATH=$TMPD/stub${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} run_refused cuda-stub-library \
		"gpu=cuda: cuInit: CUDA_ERROR_STUB_LIBRARY \(34\): the libcuda.so.1 loaded is the CUDA toolkit's stub, not the driver's.*use gpu=host" \
		"${job[@]}" --gpu=cuda --transfer=bounce
else
	log "SKIP cuda-stub-library: no CUDA toolkit stub library here, or built without CUDA"
fi
run_refused cuda-no-driver "gpu=cuda: libcuda\.so\.1 not found: install the NVIDIA driver.*use gpu=host" \
	"${job[@]}" --gpu=cuda --transfer=bounce
[ "$(grep -c '^dmabuf_uring: ' "$TMPD/cuda-no-driver.out")" -eq 1 ] &&
	pass "one dmabuf_uring line for the missing driver" ||
	fail "one dmabuf_uring line for the missing driver"
run_refused cuda-no-driver-fork "gpu=cuda: libcuda\.so\.1 not found" \
	"${job[@]}" --gpu=cuda --transfer=bounce --numjobs=2
run_refused cuda-no-driver-auto-xfer "gpu=cuda: libcuda\.so\.1 not found" \
	"${job[@]}" --gpu=cuda --transfer=auto --thread

rc=0
"$check" cuda >"$TMPD/probe.out" 2>&1 || rc=$?
if [ "$rc" -eq 77 ] && grep -q "probe: .*libcuda.so.1 not found" "$TMPD/probe.out"; then
	pass "gpu_check cuda: clean probe failure: $(cat "$TMPD/probe.out")"
else
	fail "gpu_check cuda: want exit 77 and the missing driver named (exit $rc)"
	cat "$TMPD/probe.out"
fi

# gpu=auto passes over the absent CUDA (and HIP) runtime to host memory
run_ok auto-falls-back-to-host "${job[@]}" --gpu=auto --transfer=bounce --thread
finish
