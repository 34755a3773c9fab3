#!/usr/bin/env bash
# fio with gpu=hip against the HIP runtime double: bounce reads and writes
# through "GPU" memory with verify=crc32c (files, a loop device, threads and
# processes, two devices), and every bad input a HIP user can hit.
. "$(dirname "$0")/../lib.sh"

libs=$BUILDDIR/tests/gpu/.libs
grep -q '^#define DBR_HAVE_HIP 1' "$BUILDDIR/config.h" || skip "built --without-hip"
[ -f "$libs/libamdhip64.so" ] || die "the HIP double is not built ($libs/libamdhip64.so)"
export LD_LIBRARY_PATH=$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export HIPDOUBLE_REPORT=$TMPD/report
export HIPDOUBLE_DELAY_US=50

no_leaks() {
	if [ -s "$HIPDOUBLE_REPORT" ] &&
	   ! grep -v "live_allocs=0 live_streams=0 live_events=0 live_host_regs=0" "$HIPDOUBLE_REPORT" | grep -q .; then
		pass "$1: nothing left behind, $(grep -o 'copies=[0-9]*' "$HIPDOUBLE_REPORT" | head -1) copies"
	else
		fail "$1: left behind: $(cat "$HIPDOUBLE_REPORT" 2>/dev/null)"
	fi
	grep -q "unpinned_copies=[1-9]" "$HIPDOUBLE_REPORT" &&
		fail "$1: copies from memory that is not page-locked"
	: >"$HIPDOUBLE_REPORT"
}

f=$(scratch_file)
common=(--filename="$f" --size=16m --gpu=hip --transfer=bounce
	--verify=crc32c --verify_fatal=1 --direct=1)

: >"$HIPDOUBLE_REPORT"
run_ok randwrite-verify-qd16 --name=w "${common[@]}" --rw=randwrite --bs=64k \
	--iodepth=16 --thread
no_leaks randwrite-verify-qd16
run_ok seqwrite-1m-qd8 --name=w "${common[@]}" --rw=write --bs=1m --iodepth=8 \
	--thread --do_verify=0
no_leaks seqwrite-1m-qd8
# reads into GPU memory (host buffer, then an async copy to the device), the
# data checked after it came back from the device
run_ok read-verify-1m-qd8 --name=w "${common[@]}" --rw=read --bs=1m --iodepth=8 \
	--thread --verify_only=1
grep -q "transfer=bounce gpu_sync=1 (host fixed buffer + async GPU copies)" \
	"$TMPD/read-verify-1m-qd8.out" && pass "bounce path with GPU copies announced" ||
	fail "bounce path with GPU copies announced"
no_leaks read-verify-1m-qd8
run_ok randrw-bsrange-qd32 --name=w "${common[@]}" --rw=randrw --bsrange=4k-128k \
	--iodepth=32 --thread
no_leaks randrw-bsrange-qd32
# without verify: no gpu_sync copies, just the bounce ones
run_ok randread-no-verify --name=r --filename="$f" --size=16m --gpu=hip \
	--transfer=bounce --direct=1 --rw=randread --bs=16k --iodepth=32 --thread \
	--time_based --runtime=1
no_leaks randread-no-verify

# negative control: data really passes through "GPU" memory, so a corrupted
# copy into it must make verify fail
if HIPDOUBLE_CORRUPT=5 dbr_fio --name=w "${common[@]}" --rw=read --bs=1m --iodepth=8 \
	--thread --verify_only=1 >"$TMPD/corrupt.out" 2>&1; then
	fail "a corrupted host->GPU copy goes unnoticed"
else
	grep -q "verify: bad\|crc32c: verify failed\|verify failed" "$TMPD/corrupt.out" &&
		pass "a corrupted host->GPU copy is caught by verify" ||
		{ fail "corrupted copy: fio failed without a verify error"; tail -10 "$TMPD/corrupt.out"; }
fi
: >"$HIPDOUBLE_REPORT"

# two devices, four threads: thread i on device i mod 2
: >"$HIPDOUBLE_REPORT"
# (a file per job: verify needs each job to own its blocks)
per_job=(--directory="$TMPD" --filename_format='job.$jobnum' --size=8m --gpu=hip
	--transfer=bounce --verify=crc32c --verify_fatal=1 --direct=1)
HIPDOUBLE_DEVICES=2 run_ok two-devices-4-threads --name=m "${per_job[@]}" \
	--rw=randwrite --bs=32k --iodepth=8 --numjobs=4 --gpu_dev_ids=0:1 --thread
grep -q " dev0=2 dev1=2" "$HIPDOUBLE_REPORT" && pass "2 threads' memory on each device" ||
	fail "allocations per device: $(cat "$HIPDOUBLE_REPORT")"
no_leaks two-devices-4-threads

# fork mode: every job process loads the runtime on its own
run_ok processes-2 --name=p "${per_job[@]}" --rw=randwrite --bs=16k --iodepth=8 \
	--numjobs=2

if [ "$(id -u)" -eq 0 ] && dev=$(loop_dev 32M); then
	run_ok loop-randwrite-verify --name=l --filename="$dev" --size=32m --gpu=hip \
		--transfer=bounce --verify=crc32c --verify_fatal=1 --direct=1 \
		--rw=randwrite --bs=8k --iodepth=32 --thread
	no_leaks loop-randwrite-verify
else
	log "no loop device (needs root): loop case not run"
fi

# bad input
base=(--name=bad --filename="$f" --size=4m --bs=4k --iodepth=4 --rw=randread
	--gpu=hip --transfer=bounce --thread)
HIPDOUBLE_DEVICES=2 run_refused dev-id-out-of-range \
	"gpu_dev_ids=0:2: device 2 does not exist, gpu=hip sees 2 devices \(0\.\.1\); fix gpu_dev_ids" \
	"${base[@]}" --gpu_dev_ids=0:2 --numjobs=3
HIPDOUBLE_DEVICES=0 run_refused no-device "gpu=hip: the HIP runtime sees no AMD GPU.*use gpu=host" \
	"${base[@]}"
HIPDOUBLE_FAIL=malloc run_refused alloc-failure \
	"gpu=hip: allocating [0-9]+ MiB on device 0 failed: hipMalloc: hipErrorOutOfMemory" "${base[@]}"
n=$(grep -c '^dmabuf_uring: ' "$TMPD/alloc-failure.out")
[ "$n" -eq 1 ] && pass "alloc-failure: one dmabuf_uring line" ||
	fail "alloc-failure: $n dmabuf_uring lines, want one"
HIPDOUBLE_FAIL=hostregister run_refused hostregister-failure \
	"gpu=hip: allocating [0-9]+ MiB on device 0 failed: hipHostRegister of the host buffer" "${base[@]}"
no_leaks failures
LD_LIBRARY_PATH= run_refused no-runtime \
	"gpu=hip: libamdhip64\.so not found: install ROCm's HIP runtime.*use gpu=host" "${base[@]}"
run_refused p2p-refused "transfer=p2p cannot run: .*Use transfer=bounce" \
	"${base[@]}" --transfer=p2p --direct=1
finish
