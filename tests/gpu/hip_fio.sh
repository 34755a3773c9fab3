#!/usr/bin/env bash
# fio with gpu=hip against the HIP runtime double: bounce reads and writes
# through "GPU" memory with verify=crc32c (files, a loop device, threads and
# processes, two devices), and every bad input a HIP user can hit.
. "$(dirname "$0")/../lib.sh"

use_hip_double
export HIPDOUBLE_DELAY_US=50

# what the processes of the last run left behind (their final report lines
# that are not clean); "no report" when no process reported
left_behind() {
	local final
	final=$(hip_report "$HIPDOUBLE_REPORT")
	[ -n "$final" ] || { echo "no report"; return; }
	echo "$final" | grep -v "live_allocs=0 live_streams=0 live_events=0 live_host_regs=0"
}
no_leaks() {
	local left
	left=$(left_behind)
	if [ -z "$left" ]; then
		pass "$1: nothing left behind, $(hip_report "$HIPDOUBLE_REPORT" |
			grep -o ' copies=[0-9]*' | awk -F= '{ n += $2 } END { print n }') copies"
	else
		fail "$1: left behind: $left"
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
grep -q "transfer=bounce gpu_sync=1 (host fixed buffer + async GPU copies: DMA; gpu_copy=auto: gpu=hip has no copy kernel yet)" \
	"$TMPD/read-verify-1m-qd8.out" && pass "bounce path with GPU copies announced, by DMA" ||
	fail "bounce path with GPU copies announced, by DMA"
no_leaks read-verify-1m-qd8
# gpu_copy=kernel: HIP has no copy kernel, so DMA, said once, no launches
run_ok randwrite-gpu-copy-kernel --name=w "${common[@]}" --rw=randwrite --bs=4k \
	--iodepth=16 --thread --gpu_copy=kernel --size=4m
out=$TMPD/randwrite-gpu-copy-kernel.out
[ "$(grep -c 'gpu_copy=kernel: gpu=hip has no copy kernel yet' "$out")" -eq 1 ] &&
	grep -q '), 0 kernel launches and 0 passes to the resident kernel' "$out" &&
	pass "gpu_copy=kernel on HIP: DMA, said once, 0 kernel launches, 0 passes" ||
	fail "gpu_copy=kernel on HIP: $(grep '^dmabuf_uring' "$out")"
no_leaks randwrite-gpu-copy-kernel
if dbr_fio --name=bad "${common[@]}" --rw=read --gpu_copy=bogus >"$TMPD/bogus.out" 2>&1; then
	fail "gpu_copy=bogus accepted"
else
	grep -q "failed parsing gpu_copy=bogus" "$TMPD/bogus.out" &&
		pass "gpu_copy=bogus: fio refuses it and lists auto, dma, kernel" ||
		fail "gpu_copy=bogus: $(head -3 "$TMPD/bogus.out")"
fi
# gpu_watch_cq=1: HIP has no resident kernel to watch the CQ; said once, passes as
# before, the ring keeps DEFER_TASKRUN
run_ok randread-gpu-watch-cq --name=w --filename="$f" --size=4m --gpu=hip \
	--transfer=bounce --direct=1 --rw=randread --bs=4k --iodepth=16 --thread \
	--numjobs=2 --gpu_watch_cq=1
out=$TMPD/randread-gpu-watch-cq.out
[ "$(grep -c 'gpu_watch_cq=1: no resident copy kernel of this process takes this job' "$out")" -eq 1 ] &&
	grep -q 'ring SINGLE_ISSUER|DEFER_TASKRUN' "$out" &&
	! grep -q "reads copied by the resident kernel" "$out" &&
	pass "gpu_watch_cq=1 on HIP: said once, reads' copies in passes, the ring unchanged" ||
	fail "gpu_watch_cq=1 on HIP: $(grep '^dmabuf_uring' "$out")"
no_leaks randread-gpu-watch-cq
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

# verify checks fio's host buffers: with gpu_sync=0 they do not carry what
# moves through GPU memory, so every block would fail. Refused at start.
run_refused verify-gpu-sync-0 "gpu_sync=0 with verify: .*; set gpu_sync=1 \(or leave gpu_sync=auto\), or drop verify" \
	--name=w "${common[@]}" --rw=write --bs=64k --iodepth=4 --thread --gpu_sync=0

# fio's buffer options decide what a write carries; with them GPU memory is
# kept in step (gpu_sync=auto -> 1), so their data reaches the file.
# blocks FILE BS HEX: "<blocks> <distinct> <blocks equal to the pattern>"
blocks() {
	python3 - "$@" <<'PY'
import sys
path, bs, pat = sys.argv[1], int(sys.argv[2]), bytes.fromhex(sys.argv[3])
d = open(path, 'rb').read()
blks = [d[i:i + bs] for i in range(0, len(d), bs)]
p = (pat * (bs // len(pat) + 1))[:bs]
print(len(blks), len(set(blks)), sum(b == p for b in blks))
PY
}
bo=(--size=1m --bs=4k --iodepth=4 --gpu=hip --transfer=bounce --thread)
pf=$TMPD/pattern.bin
run_ok pattern-write --name=pw --filename="$pf" "${bo[@]}" --rw=write \
	--buffer_pattern=0xdeadbeef
if [ "$(od -A n -t x1 -N 8 "$pf" | tr -d ' ')" = deadbeefdeadbeef ] &&
   [ "$(blocks "$pf" 4096 deadbeef)" = "256 1 256" ]; then
	pass "buffer_pattern=0xdeadbeef is on every block of the file"
else
	fail "buffer_pattern, rw=write: $(blocks "$pf" 4096 deadbeef) (blocks distinct pattern); $(od -A d -t x1 -N 16 "$pf" | head -1)"
fi
grep -q "gpu_sync=auto -> 1: buffer_pattern" "$TMPD/pattern-write.out" &&
	pass "gpu_sync=auto -> 1 is announced with the option that asked for it" ||
	fail "gpu_sync=auto -> 1 not announced: $(grep '^dmabuf_uring' "$TMPD/pattern-write.out")"
# reads in between bring the file's data into GPU memory: every write must
# still carry the pattern
head -c 1M /dev/zero >"$pf"
run_ok pattern-rw --name=prw --filename="$pf" "${bo[@]}" --rw=rw \
	--buffer_pattern=0xdeadbeef
writes=$(grep -o 'issued rwts: total=[0-9]*,[0-9]*' "$TMPD/pattern-rw.out" | cut -d, -f2)
got=$(blocks "$pf" 4096 deadbeef)
[ "${got##* }" = "${writes:-none}" ] && [ "$writes" -gt 0 ] &&
	pass "buffer_pattern, rw=rw: all $writes written blocks carry the pattern" ||
	fail "buffer_pattern, rw=rw: ${got##* } of $writes written blocks carry the pattern"
# refill_buffers: new data for every write, so no two blocks alike
rf=$TMPD/refill.bin
run_ok refill-write --name=rf --filename="$rf" "${bo[@]}" --rw=write --refill_buffers=1
got=$(blocks "$rf" 4096 00)
[ "$(echo "$got" | cut -d' ' -f1-2)" = "256 256" ] &&
	pass "refill_buffers: 256 distinct blocks of 256" ||
	fail "refill_buffers: $(echo "$got" | cut -d' ' -f2) distinct blocks of 256"
# gpu_sync=0 keeps its promise of no copies, and says what that costs
run_ok pattern-gpu-sync-0 --name=p0 --filename="$pf" "${bo[@]}" --rw=write \
	--buffer_pattern=0xdeadbeef --gpu_sync=0
grep -q "^dmabuf_uring: p0: gpu_sync=0: buffer_pattern has no effect" "$TMPD/pattern-gpu-sync-0.out" &&
	pass "gpu_sync=0 says that buffer_pattern has no effect" ||
	fail "gpu_sync=0 with buffer_pattern: no line saying why it has no effect"
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

# fork mode with gpu_owner=0: every job process loads the runtime on its
# own, and leaves through _exit: its report must still arrive, and show a
# leak (through the GPU owner, the default: tests/gpu/hip_owner.sh)
run_ok processes-2 --name=p "${per_job[@]}" --rw=randwrite --bs=16k --iodepth=8 \
	--numjobs=2 --gpu_owner=0
n=$(hip_report "$HIPDOUBLE_REPORT" | wc -l)
[ "$n" -eq 2 ] && pass "processes-2: both job processes reported" ||
	fail "processes-2: $n job processes reported, want 2"
no_leaks processes-2
HIPDOUBLE_LEAK=free run_ok processes-2-leak --name=p "${per_job[@]}" --rw=randwrite \
	--bs=16k --iodepth=8 --numjobs=2 --gpu_owner=0
left=$(left_behind)
[ "$(echo "$left" | grep -c 'live_allocs=1 ')" -eq 2 ] &&
	pass "a leak injected in fork mode (hipFree frees nothing) is caught in both processes" ||
	fail "an injected leak in fork mode went unseen: ${left:-nothing left behind}"
: >"$HIPDOUBLE_REPORT"
# the same through the GPU owner: its one report holds both processes' memory
HIPDOUBLE_LEAK=free run_ok processes-2-leak-owner --name=p "${per_job[@]}" \
	--rw=randwrite --bs=16k --iodepth=8 --numjobs=2
left=$(left_behind)
[ "$(echo "$left" | grep -c 'live_allocs=2 ')" -eq 1 ] &&
	pass "the same leak through the GPU owner is caught in its one report" ||
	fail "a leak through the GPU owner went unseen: ${left:-nothing left behind}"
: >"$HIPDOUBLE_REPORT"

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
# 0:1:2 on 2 devices, 3 threads: only thread 2's entry is missing, and the
# whole job stops before any I/O (the double's report: no allocation made)
: >"$HIPDOUBLE_REPORT"
HIPDOUBLE_DEVICES=2 run_refused dev-id-third-thread \
	"gpu_dev_ids=0:1:2: device 2 does not exist, gpu=hip sees 2 devices \(0\.\.1\); fix gpu_dev_ids" \
	"${base[@]}" --gpu_dev_ids=0:1:2 --numjobs=3 --time_based --runtime=20
n=$(grep -c '^dmabuf_uring: ' "$TMPD/dev-id-third-thread.out")
if [ "$n" -eq 1 ] && ! grep -q "per GPU" "$TMPD/dev-id-third-thread.out" &&
   ! grep -q " dev[0-9]*=[1-9]" "$HIPDOUBLE_REPORT" 2>/dev/null; then
	pass "dev-id-third-thread: one line, no thread allocated or ran"
else
	fail "dev-id-third-thread: $n lines; $(grep -m2 'per GPU\|allocs' "$TMPD/dev-id-third-thread.out" "$HIPDOUBLE_REPORT" 2>/dev/null)"
fi
HIPDOUBLE_DEVICES=0 run_refused no-device "gpu=hip: the HIP runtime sees no AMD GPU.*use gpu=host" \
	"${base[@]}"
# the GPU out of memory: the call, and what the job asked and what to lower
HIPDOUBLE_FAIL=malloc run_refused alloc-failure \
	"gpu=hip: allocating [0-9]+ MiB on device 0 failed: hipMalloc: hipErrorOutOfMemory; that is one thread's buffer \(iodepth 4 x max bs 4 KiB.*; lower iodepth, bs or numjobs, or spread the threads over more GPUs with gpu_dev_ids" \
	"${base[@]}"
HIPDOUBLE_FAIL=malloc HIPDOUBLE_DEVICES=2 run_refused alloc-failure-numjobs \
	"hipMalloc: hipErrorOutOfMemory; .*, and 2 threads of this job use device [01]: 4 MiB in all; lower iodepth" \
	"${base[@]}" --numjobs=4 --gpu_dev_ids=0:1
n=$(grep -c '^dmabuf_uring: ' "$TMPD/alloc-failure.out")
[ "$n" -eq 1 ] && pass "alloc-failure: one dmabuf_uring line" ||
	fail "alloc-failure: $n dmabuf_uring lines, want one"
HIPDOUBLE_FAIL=hostregister run_refused hostregister-failure \
	"gpu=hip: allocating [0-9]+ MiB on device 0 failed: hipHostRegister of the host buffer" "${base[@]}"
grep -q "lower iodepth" "$TMPD/hostregister-failure.out" &&
	fail "hostregister-failure: the locked-memory limit blamed on the GPU's memory"
# the copy stream's calls failing with ENOMEM keep their words
HIPDOUBLE_FAIL=stream run_refused stream-failure \
	"gpu=hip: setting up the copy stream on device 0 failed: hipStreamCreateWithFlags: hipErrorOutOfMemory" \
	"${base[@]}"
HIPDOUBLE_FAIL=event run_refused event-failure \
	"gpu=hip: setting up the copy stream on device 0 failed: hipEventCreateWithFlags: hipErrorOutOfMemory" \
	"${base[@]}"
no_leaks failures
LD_LIBRARY_PATH= run_refused no-runtime \
	"gpu=hip: libamdhip64\.so not found: install ROCm's HIP runtime.*use gpu=host" "${base[@]}"
run_refused p2p-refused "transfer=p2p cannot run: .*Use transfer=bounce" \
	"${base[@]}" --transfer=p2p --direct=1
finish
