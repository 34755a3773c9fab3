#!/usr/bin/env bash
# fio with this engine on a regular file, verify=crc32c over a matrix of
# workloads, block sizes and queue depths, on the host fixed-buffer path
# (gpu=host transfer=bounce), O_DIRECT and buffered; plus cross-engine
# checks: data written by this engine verifies with fio's io_uring engine,
# and the other way round.
. "$(dirname "$0")/../lib.sh"

f=$(scratch_file)
common=(--name=v --filename="$f" --size=16m --gpu=host --transfer=bounce
	--verify=crc32c --verify_fatal=1)

# name rw bs iodepth direct
while read -r name rw bs qd direct; do
	run_ok "$name" "${common[@]}" --rw="$rw" --bs="$bs" --iodepth="$qd" \
		--direct="$direct"
done <<'CASES'
seqwrite-4k-qd1-direct       write      4k        1    1
randwrite-4k-qd32-direct     randwrite  4k        32   1
randwrite-64k-qd128-direct   randwrite  64k       128  1
seqwrite-1m-qd8-direct       write      1m        8    1
randwrite-4k-qd16-buffered   randwrite  4k        16   0
randrw-4k-qd32-direct        randrw     4k        32   1
CASES

run_ok randrw-bsrange-qd16 "${common[@]}" --rw=randrw --bsrange=4k-128k \
	--iodepth=16 --direct=1
run_ok batching-qd64 "${common[@]}" --rw=randwrite --bs=4k --iodepth=64 \
	--iodepth_batch_submit=16 --iodepth_batch_complete_min=8 \
	--iodepth_batch_complete_max=32 --direct=1
run_ok transfer-auto "${common[@]}" --rw=randwrite --bs=8k --iodepth=8 \
	--transfer=auto --direct=1

# a separate read pass over what the engine wrote: the read path, checked
# against the headers fio wrote, in another process
run_ok write-then-verify-only-read "${common[@]}" --rw=write --bs=16k --iodepth=16 --direct=1
run_ok verify-only-read-pass "${common[@]}" --rw=write --bs=16k --iodepth=16 --direct=1 \
	--verify_only=1

# cross-engine: our writes read back by fio's io_uring engine, and back
g=$(scratch_file cross)
run_ok cross-write-dbr --name=x --filename="$g" --size=8m --rw=randwrite \
	--bs=4k --iodepth=32 --direct=1 --gpu=host --transfer=bounce --verify=crc32c \
	--do_verify=0 --randseed=7
if run_fio --name=x --filename="$g" --size=8m --rw=randwrite --bs=4k --iodepth=32 \
	--direct=1 --ioengine=io_uring --verify=crc32c --verify_only=1 --randseed=7 \
	>"$TMPD/cross-read.out" 2>&1 && ! grep -q "err= *[1-9]" "$TMPD/cross-read.out"; then
	pass "fio's io_uring engine verifies data written by dmabuf_uring"
else
	fail "fio's io_uring engine verifies data written by dmabuf_uring"
	tail -20 "$TMPD/cross-read.out"
fi

h=$(scratch_file cross2)
run_fio --name=y --filename="$h" --size=8m --rw=randwrite --bs=8k --iodepth=16 \
	--direct=1 --ioengine=io_uring --verify=crc32c --do_verify=0 --randseed=9 \
	>"$TMPD/cross2-write.out" 2>&1 || die "fio's io_uring engine failed to write"
run_ok cross-read-dbr-verifies-io_uring-writes --name=y --filename="$h" --size=8m \
	--rw=randwrite --bs=8k --iodepth=16 --direct=1 --gpu=host --transfer=bounce \
	--verify=crc32c --verify_only=1 --randseed=9

# negative control: the verify above must be able to fail. Corrupt one
# block of what was written and the read-back has to report it.
printf 'garbage' | dd of="$h" bs=1 seek=$((3 * 8192 + 100)) conv=notrunc status=none
if dbr_fio --name=y --filename="$h" --size=8m --rw=randwrite --bs=8k --iodepth=16 \
	--direct=1 --gpu=host --transfer=bounce --verify=crc32c --verify_only=1 \
	--randseed=9 >"$TMPD/corrupt.out" 2>&1; then
	fail "a corrupted block goes unnoticed"
else
	grep -q "verify: bad header\|crc32c: verify failed\|bad magic\|verify failed" "$TMPD/corrupt.out" &&
		pass "a corrupted block is reported by verify" ||
		{ fail "corrupted block: fio failed without a verify error"; tail -10 "$TMPD/corrupt.out"; }
fi

finish
