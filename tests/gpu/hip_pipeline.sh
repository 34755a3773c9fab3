#!/usr/bin/env bash
# The copy pipeline under fio, with the HIP double's slow and failing copies:
#  - ordering: with slow GPU->host copies, fsyncs reach the kernel after the
#    writes they cover, in the order fio's own io_uring engine submits them
#    (tracefs io_uring:io_uring_submit_req, this test's processes only);
#  - batching: copies of one pass go to the runtime in one
#    hipMemcpyBatchAsync, and one by one where the runtime lacks it (ROCm 5);
#  - copy failures: the I/O fails, and no buffer is reused while a copy on
#    it is still pending (the double checks each copy's source is unchanged
#    when it runs).
. "$(dirname "$0")/../lib.sh"

use_hip_double

f=$(scratch_file)
# the file's blocks differ from one another, so a torn copy shows
run_ok layout --name=lay --filename="$f" --size=8m --bs=1m --rw=write \
	--gpu=host --transfer=bounce --refill_buffers=1

# ---- ordering ----------------------------------------------------------------
# submit_order OUT FIO-ARGS...: opcodes of the SQEs this fio run submitted
submit_order() {
	local out=$1 rc=0
	shift
	submit_trace "$out.sqes" "$out.fio" "$@" || rc=$?
	cut -d' ' -f1 "$out.sqes" >"$out"
	return $rc
}

# queue_order LOG: fio's own record of the order it queued I/O (write_iolog),
# as the opcodes the kernel should see
queue_order() {
	awk '$3 == "write" {print "WRITE_FIXED"} $3 == "sync" {print "FSYNC"}
	     $3 == "datasync" {print "FSYNC"}
	     $3 == "sync_file_range" {print "SYNC_FILE_RANGE"}' "$1"
}

# same_order NAME ENGINE-ARGS...: the kernel saw fio's queue order. (Not a
# check for fio's io_uring engine: it answers FIO_Q_BUSY at times, and fio
# logs the requeued I/O again.)
same_order() {
	local name=$1 out=$TMPD/$1
	shift
	submit_order "$out" run_fio "${order_job[@]}" --write_iolog="$out.iolog" "$@" ||
		{ fail "$name: fio failed: $(tail -3 "$out.fio")"; return; }
	queue_order "$out.iolog" >"$out.queued"
	local w s
	w=$(grep -c WRITE_FIXED "$out")
	s=$(grep -c -E 'FSYNC|SYNC_FILE_RANGE' "$out")
	if [ "$s" -gt 0 ] && [ "$(grep -c WRITE_FIXED "$out.queued")" -eq "$w" ] &&
	   cmp -s "$out" "$out.queued"; then
		pass "$name: $w writes and $s syncs reach the kernel in the order fio queued them ($(head -4 "$out" | tr '\n' ' ')...)"
	else
		fail "$name: kernel saw $(head -6 "$out" | tr '\n' ' ')... ($w writes, $s syncs); fio queued $(head -6 "$out.queued" | tr '\n' ' ')..."
	fi
}

order_job=(--name=o --filename="$f" --size=256k --bs=4k --rw=write --iodepth=8
	--fsync=2 --direct=1 --thread)
if trace_ok; then
	HIPDOUBLE_DELAY_US=3000 same_order slow-gpu-copies \
		--ioengine="external:$ENGINE" --gpu=hip --transfer=bounce
	HIPDOUBLE_DELAY_US=1000 same_order slow-gpu-copies-fdatasync \
		--ioengine="external:$ENGINE" --gpu=hip --transfer=bounce \
		--fsync=0 --fdatasync=3 --rw=randwrite
	if control_fails slow-gpu-copies-sync_file_range "${order_job[@]}" \
		--fsync=0 --sync_file_range=write:3; then
		not_judged slow-gpu-copies-sync_file_range
	else
		HIPDOUBLE_DELAY_US=1000 same_order slow-gpu-copies-sync_file_range \
			--ioengine="external:$ENGINE" --gpu=hip --transfer=bounce \
			--fsync=0 --sync_file_range=write:3
	fi
else
	log "SKIP ordering: tracefs io_uring events not available (needs root and tracefs)"
fi

# ---- batching --------------------------------------------------------------
# calls_of OUT: "copies calls merged" from the engine's end-of-job line
calls_of() {
	sed -n 's/.* \([0-9]*\) GPU copies in \([0-9]*\) runtime calls (\([0-9]*\) merged.*/\1 \2 \3/p' "$1" | head -1
}
batch_job=(--name=b --filename="$f" --size=8m --bs=4k --rw=randread --iodepth=32
	--direct=1 --thread --gpu=hip --transfer=bounce --number_ios=4096)
run_ok batched "${batch_job[@]}"
read -r copies calls merged <<<"$(calls_of "$TMPD/batched.out")"
if [ -n "${calls:-}" ] && [ "$copies" -ge 2048 ] && [ "$calls" -lt "$copies" ]; then
	pass "4k randread qd32: $copies copies in $calls hipMemcpyBatchAsync/copy calls"
else
	fail "copies not batched: '$(grep 'GPU copies' "$TMPD/batched.out")'"
fi
# without a batch call every copy left after merging is a call of its own
LD_LIBRARY_PATH=$libs/../rocm5/.libs run_ok unbatched "${batch_job[@]}"
read -r copies calls merged <<<"$(calls_of "$TMPD/unbatched.out")"
if [ -n "${calls:-}" ] && [ "$copies" -ge 2048 ] &&
	[ "$calls" -eq $((copies - merged)) ]; then
	pass "without hipMemcpyBatchAsync (ROCm 5): one call per copy ($copies copies, $merged merged with a neighbour)"
else
	fail "ROCm 5 fallback: '$(grep 'GPU copies' "$TMPD/unbatched.out")'"
fi

# copies of neighbouring io_u buffers in one batch become one copy: with
# sequential 4k I/O most are neighbours; the data must survive it both ways
# (writes copy D2H before the ring, the verify reads H2D after it)
: >"$HIPDOUBLE_REPORT"
run_ok merged --name=m --filename="$f" --size=4m --bs=4k --rw=write --iodepth=32 \
	--iodepth_batch_submit=32 --direct=1 --thread --gpu=hip --transfer=bounce \
	--verify=crc32c --verify_fatal=1
read -r copies calls merged <<<"$(calls_of "$TMPD/merged.out")"
if [ -n "${merged:-}" ] && [ "$merged" -gt 0 ] &&
	! grep -q "changed while the copy was pending" "$TMPD/merged.out"; then
	pass "4k sequential writes + verify: $merged of $copies copies merged with a neighbour, verify intact"
else
	fail "no merged copies, or a torn one: '$(grep -E 'GPU copies|changed while' "$TMPD/merged.out")'"
fi

# ---- gpu_spin_us ---------------------------------------------------------------
# one 1 MiB read at a time with 2 ms copies: each wait has nothing else to
# do, so it spins gpu_spin_us and then sleeps in the runtime ("slept")
slept_of() {
	sed -n 's/.* fences ([0-9]* by the copy kernel, [0-9]* event queries, \([0-9]*\) slept).*/\1/p' "$1" | head -1
}
spin_job=(--name=s --filename="$f" --size=8m --bs=1m --rw=read --iodepth=1
	--direct=1 --thread --gpu=hip --transfer=bounce --number_ios=16)
HIPDOUBLE_DELAY_US=2000 run_ok spin-forever "${spin_job[@]}" --gpu_spin_us=-1
HIPDOUBLE_DELAY_US=2000 DBR_GPU_SPIN_US=-1 run_ok spin-none "${spin_job[@]}" --gpu_spin_us=0
forever=$(slept_of "$TMPD/spin-forever.out") none=$(slept_of "$TMPD/spin-none.out")
if [ "${forever:-x}" = 0 ] && [ "${none:-0}" -ge 1 ]; then
	pass "gpu_spin_us=-1: 0 waits slept; gpu_spin_us=0 (over DBR_GPU_SPIN_US=-1): $none of 16 slept"
else
	fail "gpu_spin_us: slept '$forever' with -1, '$none' with 0 (want 0, and some)"
fi

# ---- fences without the host word -------------------------------------------
# a runtime that refuses hipStreamWriteValue64 at the first fence: events
# take over, and the data still goes through "GPU memory" intact
: >"$HIPDOUBLE_REPORT"
HIPDOUBLE_FAIL=writevalue HIPDOUBLE_DELAY_US=50 run_ok events-after-refused-stream-write \
	--name=e --filename="$f" --size=8m --bs=64k --rw=randwrite --iodepth=16 \
	--direct=1 --thread --gpu=hip --transfer=bounce --verify=crc32c --verify_fatal=1
grep -q " [1-9][0-9]* event queries" "$TMPD/events-after-refused-stream-write.out" &&
	pass "fences fell back to event queries" ||
	fail "no event queries after the refused stream write: $(grep 'GPU copies' "$TMPD/events-after-refused-stream-write.out")"
run_ok host-word --name=e --filename="$f" --size=8m --bs=64k --rw=randwrite --iodepth=16 \
	--direct=1 --thread --gpu=hip --transfer=bounce --verify=crc32c --verify_fatal=1
grep -q " 0 event queries" "$TMPD/host-word.out" &&
	pass "with hipStreamWriteValue64, fences are polled as a host word (0 event queries)" ||
	fail "host word unused: $(grep 'GPU copies' "$TMPD/host-word.out")"

# ---- copy failures ---------------------------------------------------------
fail_job=(--name=x --filename="$f" --size=8m --bs=64k --rw=randread --iodepth=8
	--direct=1 --thread --gpu=hip --transfer=bounce --gpu_sync=1 --number_ios=256)
# (copy 1 seeds device memory; then each read copies H2D, D2H)
for at in 2 3 7 40; do
	: >"$HIPDOUBLE_REPORT"
	out=$TMPD/fail-$at.out
	HIPDOUBLE_DELAY_US=2000 HIPDOUBLE_FAIL_COPY_AT=$at dbr_fio "${fail_job[@]}" \
		--continue_on_error=all >"$out" 2>&1
	if grep -q "changed while the copy was pending" "$out"; then
		fail "copy $at fails: a buffer came back while a copy on it was pending"
	elif ! grep -qE "total=[1-9]|Input/output error" "$out"; then
		fail "copy $at fails: fio saw no error"; tail -5 "$out"
	elif ! [ -s "$HIPDOUBLE_REPORT" ] ||
	     hip_report "$HIPDOUBLE_REPORT" | grep -v "live_allocs=0 live_streams=0 live_events=0 live_host_regs=0" | grep -q .; then
		fail "copy $at fails: left behind: $(hip_report "$HIPDOUBLE_REPORT")"
	else
		pass "copy $at fails: that I/O fails, no buffer reused under a pending copy, nothing left behind"
	fi
	# one failure, one line: the runtime's call and error, not just fio's EIO
	n=$(grep -c "^dmabuf_uring: x thread 0: a GPU copy failed, gpu=hip dev=0: hipMemcpy[A-Za-z]*Async: hipErrorUnknown; .*not the drive's" "$out")
	[ "$n" -eq 1 ] && pass "copy $at fails: said once, naming the runtime call and its error" ||
		fail "copy $at fails: $n lines naming the GPU copy's failure, want one"
done
# ---- slow copies and the job's end -------------------------------------------
# 3 s copies: at the runtime's end and on SIGINT no new copies start, and
# those already running get 2 s (DBR_STOP_BOUND_NS): fio is done within
# that, not after every queued copy. The double logs each copy's start and
# end; fio left without waiting for the queued copies when, at its exit, a
# copy had started and not ended (fio waiting for all of them leaves as many
# ends as starts). Times are printed, not judged: a loaded machine under
# ASan takes seconds more to start and leave.
slow_job=(--name=s --filename="$f" --size=4m --bs=4k --rw=randread --iodepth=8
	--direct=1 --gpu=hip --transfer=bounce --time_based)
# "S E": copies started and ended so far, as the log says
copies_so_far() {
	echo "$(grep -c '^start$' "$1") $(grep -c '^end$' "$1")"
}
stopped_line="stopped with GPU copies still running 2 s after the job's end"
for mode in thread process; do
	extra=()
	[ $mode = thread ] && extra=(--thread)
	log=$TMPD/copies-$mode
	t0=$(date +%s%N)
	HIPDOUBLE_DELAY_US=3000000 HIPDOUBLE_COPY_LOG=$log dbr_fio "${slow_job[@]}" \
		"${extra[@]}" --runtime=2 >"$TMPD/slow-$mode.out" 2>&1
	rc=$?
	read -r started ended <<<"$(copies_so_far "$log")"
	ms=$(( ($(date +%s%N) - t0) / 1000000 ))
	if [ $rc -eq 0 ] && [ "$started" -gt "$ended" ] &&
	   grep -q "^dmabuf_uring: s thread 0: $stopped_line" "$TMPD/slow-$mode.out"; then
		pass "slow copies, runtime=2, $mode: fio left with $((started - ended)) copy running ($ended of $started done, $ms ms), the late I/O said once"
	else
		fail "slow copies, runtime=2, $mode: exit $rc after $ms ms, $ended of $started copies done at fio's exit: $(grep -m2 -E 'stopped with|err=' "$TMPD/slow-$mode.out")"
	fi
	# fio itself in the background, the sanitizer's runtime preloaded as
	# run_fio does (timeout passes SIGINT on)
	pre=${LD_PRELOAD:-}
	[ -n "${DBR_ASAN_PRELOAD:-}" ] && pre=$DBR_ASAN_PRELOAD${LD_PRELOAD:+:$LD_PRELOAD}
	log=$TMPD/copies-sigint-$mode
	HIPDOUBLE_DELAY_US=3000000 HIPDOUBLE_COPY_LOG=$log LD_PRELOAD=$pre \
		timeout -s KILL 60 "$FIO" --ioengine="external:$ENGINE" \
		"${slow_job[@]}" "${extra[@]}" --runtime=60 >"$TMPD/sigint-$mode.out" 2>&1 &
	pid=$!
	sleep 5
	t0=$(date +%s%N)
	kill -INT $pid
	wait $pid
	rc=$?
	read -r started ended <<<"$(copies_so_far "$log")"
	ms=$(( ($(date +%s%N) - t0) / 1000000 ))
	[ $rc -ne 137 ] && [ "$started" -gt "$ended" ] &&
	grep -q "^dmabuf_uring: s thread 0: $stopped_line" "$TMPD/sigint-$mode.out" &&
		pass "slow copies, SIGINT, $mode: fio left $ms ms after the signal (exit $rc) with $((started - ended)) copy running" ||
		fail "slow copies, SIGINT, $mode: exit $rc $ms ms after the signal, $ended of $started copies done at fio's exit: $(grep -m2 -E 'stopped with|err=' "$TMPD/sigint-$mode.out")"
done

# without continue_on_error the job stops, naming the failed I/O
out=$TMPD/fail-stop.out
if HIPDOUBLE_DELAY_US=500 HIPDOUBLE_FAIL_COPY_AT=9 dbr_fio "${fail_job[@]}" >"$out" 2>&1; then
	fail "a failed copy went unnoticed (fio exited 0)"
elif grep -q "io_u error.*Input/output error" "$out" && ! grep -q "changed while" "$out" &&
	grep -B3 "io_u error" "$out" | grep -q "a GPU copy failed.*hipErrorUnknown"; then
	pass "a failed copy stops the job: $(grep -m1 'io_u error' "$out" | cut -c1-110)"
else
	fail "failed copy: $(tail -5 "$out")"
fi
finish
