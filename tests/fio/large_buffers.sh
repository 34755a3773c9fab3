#!/usr/bin/env bash
# A thread's buffer area over 1 GiB on the bounce path: io_uring caps an
# ordinary fixed buffer at 1 GiB per iovec, so the host buffer is registered
# as several, each holding whole io_u buffers (fio's own io_uring engine runs
# bs=8m iodepth=160). Written and verified with crc32c, sequential and random,
# on host memory and through the HIP double's "GPU" memory; one line says so,
# once per job. A single I/O too large for any registered buffer is refused.
. "$(dirname "$0")/../lib.sh"

f=$(scratch_file)
big=(--filename="$f" --size=1600m --bs=8m --iodepth=160 --direct=1
	--verify=crc32c --verify_fatal=1 --transfer=bounce)
said="registered as 2 fixed buffers of at most 1024 MiB \(io_uring's limit per buffer\), each holding whole io_u buffers"

run_ok bs8m-qd160-write-verify --name=big "${big[@]}" --rw=write --gpu=host
n=$(grep -cE "^dmabuf_uring: big: the 1282 MiB host buffer is $said" \
	"$TMPD/bs8m-qd160-write-verify.out")
[ "$n" -eq 1 ] && pass "bs8m-qd160: the split is said once" ||
	fail "bs8m-qd160: want one line saying the host buffer is split, got $n"

run_ok bs8m-qd160-randwrite-verify-2jobs --name=big "${big[@]}" \
	--rw=randwrite --gpu=host --numjobs=2 --thread --size=800m --offset_increment=800m
n=$(grep -cE "^dmabuf_uring: big: .*$said" "$TMPD/bs8m-qd160-randwrite-verify-2jobs.out")
[ "$n" -eq 1 ] && pass "two threads: the split is said once per job" ||
	fail "two threads: want one line saying the host buffer is split, got $n"

# through a GPU provider's staging area: copies into and out of "GPU" memory
if grep -q '^#define DBR_HAVE_HIP 1' "$BUILDDIR/config.h" &&
	[ -f "$BUILDDIR/tests/gpu/.libs/libamdhip64.so" ]; then
	LD_LIBRARY_PATH=$BUILDDIR/tests/gpu/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
		run_ok bs8m-qd160-hip-randwrite-verify --name=big "${big[@]}" \
		--rw=randwrite --gpu=hip --thread
else
	log "no HIP double in this build: the gpu=hip case is left out"
fi

# one I/O larger than a registered buffer can hold
run_refused bs-over-a-buffer "bs=1023 MiB: one I/O must fit a registered buffer, at most 1022 MiB; lower bs" \
	--name=bad --filename="$f" --size=2g --bs=1023m --iodepth=1 --rw=read \
	--gpu=host --transfer=bounce

finish
