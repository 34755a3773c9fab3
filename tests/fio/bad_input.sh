#!/usr/bin/env bash
# Every bad input that can be reached without a GPU or an NVMe device: fio
# must exit non-zero, and the engine must print one line naming the cause
# and the fix. Cases needing NVMe live in the VM rig, GPU cases in tests/gpu.
. "$(dirname "$0")/../lib.sh"

f=$(scratch_file)
base=(--name=bad --filename="$f" --size=4m --bs=4k --iodepth=4 --rw=randread)

run_refused p2p-buffered "transfer=p2p needs direct=1" \
	"${base[@]}" --gpu=host --transfer=p2p --direct=0

# p2p on a kernel without the series and on a file; said once per job, not
# once per thread
run_refused p2p-regular-file "transfer=p2p cannot run:.*$f is not a block device.*Use transfer=bounce" \
	"${base[@]}" --gpu=host --transfer=p2p --direct=1 --numjobs=4 --thread
n=$(grep -c '^dmabuf_uring: ' "$TMPD/p2p-regular-file.out")
[ "$n" -eq 1 ] && pass "p2p refusal: one line for the job's 4 threads" ||
	fail "p2p refusal: $n dmabuf_uring lines for 4 threads, want one"
if grep -q "lacks the io_uring dma-buf series: the extended IORING_REGISTER_BUFFERS_UPDATE answered EINVAL" "$TMPD/p2p-regular-file.out"; then
	pass "p2p names the missing kernel series, as the probe found it"
elif [ "${DBR_EXPECT_SERIES:-0}" = 1 ]; then
	pass "kernel has the series: p2p does not blame it"
else
	fail "p2p on $(uname -r): the kernel reason is missing"
fi
grep -q "err=95" "$TMPD/p2p-regular-file.out" && pass "p2p refusal carries ENOTSUP (95)" ||
	fail "p2p refusal carries ENOTSUP (95)"

grep -q "released kernel" "$TMPD/p2p-regular-file.out" &&
	fail "p2p refusal: a dated claim about released kernels"

# a mistyped device name: fio lays a file out under it (in /dev) before the
# engine starts; the refusal says the name did not exist, not "not a block
# device". A new file anywhere else is one the job means: only its kind.
# new_file_refused NAME FILE WANT SHUNNED: p2p on FILE, which fio creates,
# refused with a line matching WANT and no word of SHUNNED
new_file_refused() {
	local name=$1 file=$2 want=$3 shunned=$4
	run_refused "$name" "$want" --name=bad --filename="$file" --size=64k --bs=4k \
		--rw=read --gpu=host --transfer=p2p --direct=1 "${extra[@]}"
	if grep -q "$shunned" "$TMPD/$name.out"; then
		fail "$name: says '$shunned'"
	fi
}
for mode in thread process; do
	extra=()
	[ $mode = thread ] && extra=(--thread)
	name=/dev/dbr-nvme9n9-$$-$mode
	if [ "$(id -u)" -eq 0 ] && [ -w /dev ] && [ ! -e "$name" ]; then
		at_exit "rm -f '$name'"
		new_file_refused p2p-missing-target-$mode "$name" \
			"$name did not exist, so fio created a 64 KiB regular file by that name \(check the name" \
			"$name is not a block device"
	else
		log "SKIP p2p-missing-target-$mode: a name in /dev needs root"
	fi
	new_file_refused p2p-new-file-$mode "$TMPD/new-$mode" \
		"transfer=p2p cannot run: .*$TMPD/new-$mode is not a block device" "did not exist"
done

if [ "$(id -u)" -eq 0 ] && dev=$(loop_dev 16M); then
	run_refused p2p-loop-device "$(basename "$dev") is a block device that is not an NVMe namespace" \
		--name=bad --filename="$dev" --size=4m --bs=4k --rw=read --gpu=host \
		--transfer=p2p --direct=1
	# 257 dma-buf registrations on one device: refused before any is made
	run_refused p2p-too-many-maps "257 dma-buf registrations on one device.*over the kernel's 256" \
		--name=bad --filename="$dev" --size=4m --bs=4k --rw=read --gpu=host \
		--transfer=p2p --direct=1 --numjobs=257 --thread
	# two job sections on one device count together: 2 x 129 > 256 ...
	two=(--filename="$dev" --size=4m --bs=4k --rw=read --gpu=host --transfer=p2p
		--direct=1 --numjobs=129 --thread)
	run_refused p2p-too-many-maps-2-jobs "258 dma-buf registrations on one device.*over the kernel's 256" \
		--name=a "${two[@]}" --name=b "${two[@]}"
	# ... unless a stonewall keeps them apart: then the loop device is the reason
	run_refused p2p-maps-stonewalled "transfer=p2p cannot run" \
		--name=a "${two[@]}" --name=b "${two[@]}" --stonewall
	grep -q "dma-buf registrations on one device" "$TMPD/p2p-maps-stonewalled.out" &&
		fail "p2p-maps-stonewalled: jobs behind a stonewall were counted together" ||
		pass "p2p-maps-stonewalled: jobs behind a stonewall count on their own"
else
	skip_note="loop devices need root and a free loop device"
	fail "p2p-loop-device: $skip_note"
fi

# p2p needs a buffer slot per file: more files than io_uring's table holds is
# named before any file is made
run_refused p2p-too-many-files "nrfiles=16385: transfer=p2p registers a dma-buf per file and io_uring's buffer table holds 16384; lower nrfiles, or use transfer=bounce" \
	--name=bad --directory="$TMPD" --nrfiles=16385 --filesize=4k --create_on_open=1 \
	--bs=4k --rw=read --gpu=host --transfer=p2p --direct=1

run_refused hipri "hipri \(IOPOLL\) with transfer=p2p is not supported: the io_uring dma-buf series refuses polled rings; use transfer=bounce" \
	"${base[@]}" --gpu=host --transfer=p2p --direct=1 --hipri
run_refused hipri-buffered "hipri needs direct=1: the kernel polls only for O_DIRECT I/O.*set direct=1, or drop hipri" \
	"${base[@]}" --gpu=host --transfer=bounce --hipri
# a CPU this machine does not have: named, with the CPUs it has, before
# io_uring_setup answers a bare EINVAL
online=$(cat /sys/devices/system/cpu/online 2>/dev/null || echo "[0-9]")
run_refused sqpoll-cpu-missing "sqthread_poll_cpu=99999: this machine has no online CPU 99999 \(online CPUs: $online\); pick one of them" \
	"${base[@]}" --gpu=host --transfer=bounce --sqthread_poll=1 --sqthread_poll_cpu=99999
run_refused trim "trim is not supported" \
	--name=bad --filename="$f" --size=4m --bs=4k --rw=randtrim --gpu=host --transfer=bounce
# verify's trims: refused at start as trim is, before fio queues a trim and
# asserts on it (rc 134), or its job process dies and fio exits 0
for opts in "trim_percentage=50 trim_backlog=16" trim_backlog=16 trim_verify_zero=0; do
	opt=${opts%% *}
	args=()
	for o in $opts; do args+=(--"$o"); done
	for mode in thread process; do
		extra=()
		[ $mode = thread ] && extra=(--thread)
		run_refused "$opt-$mode" "trim is not supported: .* and $opt is for fio's trims of verified blocks; drop it" \
			--name=bad --filename="$f" --size=4m --bs=4k --rw=write --verify=crc32c \
			"${args[@]}" --gpu=host --transfer=bounce "${extra[@]}"
	done
done
# more I/O in flight than a ring holds: the limit and the fix, not a bare
# EINVAL from io_uring_setup
run_refused iodepth-over-ring "iodepth=65536: an io_uring ring holds at most 32768 entries; set iodepth=32768 or less" \
	"${base[@]}" --gpu=host --transfer=bounce --iodepth=65536
run_refused dev-id-out-of-range "gpu_dev_ids=0:3: device 3 does not exist, gpu=host sees 1 device" \
	"${base[@]}" --gpu=host --transfer=bounce --gpu_dev_ids=0:3 --numjobs=2 --thread
# stall_watchdog takes fio's time units, as fio's own time options do (a
# bare number is seconds); junk is refused in one line, fio's or ours
for v in 10s 500ms 1m " 5" 0; do
	run_ok "stall-watchdog-${v// /_}" "${base[@]}" --gpu=host --transfer=bounce --stall_watchdog="$v"
done
rc=0
dbr_fio "${base[@]}" --gpu=host --transfer=bounce --stall_watchdog=abc >"$TMPD/watchdog-abc.out" 2>&1 || rc=$?
[ $rc -ne 0 ] && grep -q "failed parsing stall_watchdog=abc" "$TMPD/watchdog-abc.out" &&
	pass "stall-watchdog-abc: fio's parser refuses it (exit $rc)" ||
	fail "stall-watchdog-abc: exit $rc, $(head -3 "$TMPD/watchdog-abc.out")"
run_refused stall-watchdog-unit "stall_watchdog: 5 us \(as fio reads the value\) is out of range; want 0 \(off\), or 1 ms to 24 h in fio's time units" \
	"${base[@]}" --gpu=host --transfer=bounce --stall_watchdog=5x
run_refused stall-watchdog-negative "stall_watchdog: -5 s \(as fio reads the value\) is out of range" \
	"${base[@]}" --gpu=host --transfer=bounce --stall_watchdog=-5
run_refused stall-watchdog-too-long "stall_watchdog: 90000 s \(as fio reads the value\) is out of range" \
	"${base[@]}" --gpu=host --transfer=bounce --stall_watchdog=25h
# a device only another thread uses stops the whole job before any I/O: fio
# would run thread 0 for the whole runtime otherwise
t0=$SECONDS
run_refused dev-id-other-thread "gpu_dev_ids=0:1: device 1 does not exist, gpu=host sees 1 device.*fix gpu_dev_ids" \
	"${base[@]}" --gpu=host --transfer=bounce --gpu_dev_ids=0:1 --numjobs=2 --thread \
	--time_based --runtime=20
[ $((SECONDS - t0)) -lt 10 ] && pass "dev-id-other-thread: no thread ran ($((SECONDS - t0)) s of a 20 s runtime)" ||
	fail "dev-id-other-thread: a thread ran on for $((SECONDS - t0)) s"
n=$(grep -c '^dmabuf_uring: ' "$TMPD/dev-id-other-thread.out")
[ "$n" -eq 1 ] && pass "dev-id-other-thread: the refusal once per job" ||
	fail "dev-id-other-thread: $n dmabuf_uring lines, want one"
run_refused dev-id-garbage "gpu_dev_ids=zero: expected device ordinals" \
	"${base[@]}" --gpu=host --transfer=bounce --gpu_dev_ids=zero
run_refused dev-id-empty-entry "gpu_dev_ids=0::: an empty entry.*give one device ordinal between each ':'" \
	"${base[@]}" --gpu=host --transfer=bounce --gpu_dev_ids=0::
run_refused dev-id-trailing "gpu_dev_ids=0:: trailing ':'; drop it" \
	"${base[@]}" --gpu=host --transfer=bounce --gpu_dev_ids=0:
run_refused dev-id-too-many "more than 64 entries; list at most 64" \
	"${base[@]}" --gpu=host --transfer=bounce --gpu_dev_ids="$(printf '0:%.0s' {1..64})0"

# gpu_watch_cq=1 on gpu=host: runs, and says once that it has no effect
# there (no copies exist to watch for), not that copies go in passes
out=$TMPD/watch-cq-host.out
dbr_fio "${base[@]}" --gpu=host --transfer=bounce --gpu_watch_cq=1 --numjobs=2 --thread \
	>"$out" 2>&1 && rc=0 || rc=$?
if [ $rc -eq 0 ] && [ "$(grep -c '^dmabuf_uring: bad: gpu_watch_cq=1 has no effect with gpu=host: reads land in fio.s own buffers, so there is no copy' "$out")" -eq 1 ] &&
   ! grep -q "reads' copies" "$out"; then
	pass "gpu_watch_cq=1 on gpu=host: said once to have no effect"
else
	fail "gpu_watch_cq=1 on gpu=host: exit $rc, $(grep -m2 '^dmabuf_uring: .*gpu_watch_cq' "$out")"
fi

# fio pads the buffer area by mem_align: that is what to lower
run_refused mem-align "mem_align=1073741824 \(1024 MiB\): fio pads the thread's buffer area \(iodepth x max bs = 16 KiB\).*lower mem_align" \
	"${base[@]}" --gpu=host --transfer=bounce --mem_align=1g
# registerfiles: a table of nrfiles slots over ulimit -n says so
(ulimit -n 64 && run_refused registerfiles-ulimit "registerfiles: a fixed-file table of 100 slots \(one per file, nrfiles=100\) is over the open-file limit \(ulimit -n: 64\); raise ulimit -n, lower nrfiles" \
	--name=bad --directory="$TMPD" --nrfiles=100 --openfiles=8 --filesize=16k --bs=4k \
	--rw=randread --gpu=host --transfer=bounce --registerfiles && finish >/dev/null) &&
	pass "registerfiles-ulimit" || fail "registerfiles-ulimit"

# gpu_spin_us: microseconds or -1, nothing else
run_refused spin-us-word "gpu_spin_us=long: expected microseconds from 0 to 1000000, or -1 to spin until the copies are done" \
	"${base[@]}" --gpu=host --transfer=bounce --gpu_spin_us=long
run_refused spin-us-negative "gpu_spin_us=-5: expected microseconds" \
	"${base[@]}" --gpu=host --transfer=bounce --gpu_spin_us=-5
# ... and the environment's value is checked alike, not read as 0
DBR_GPU_SPIN_US=abc run_refused spin-us-env-word "DBR_GPU_SPIN_US=abc: expected microseconds from 0 to 1000000, or -1.*; fix it, or unset it" \
	"${base[@]}" --gpu=host --transfer=bounce
DBR_GPU_SPIN_US=5000000 run_refused spin-us-env-too-long "DBR_GPU_SPIN_US=5000000: expected microseconds from 0 to 1000000" \
	"${base[@]}" --gpu=host --transfer=bounce

# gpu_stats_file (or DBR_GPU_STATS_FILE) that cannot be appended to: named at
# start, with the fix, before the job runs (root writes anywhere, so a path
# in a directory that does not exist, and a directory)
run_refused stats-file-no-dir "gpu_stats_file=$TMPD/no-such-dir/s.jsonl: cannot append to it: No such file or directory; give a file in a writable directory, or drop gpu_stats_file" \
	"${base[@]}" --gpu=host --transfer=bounce --gpu_stats_file="$TMPD/no-such-dir/s.jsonl"
run_refused stats-file-is-dir "gpu_stats_file=$TMPD: cannot append to it: Is a directory" \
	"${base[@]}" --gpu=host --transfer=bounce --gpu_stats_file="$TMPD"
DBR_GPU_STATS_FILE=$TMPD/no-such-dir/e.jsonl run_refused stats-file-env \
	"DBR_GPU_STATS_FILE=$TMPD/no-such-dir/e.jsonl: cannot append to it: No such file or directory; point it at a file in a writable directory, or unset it" \
	"${base[@]}" --gpu=host --transfer=bounce
# a FIFO nobody reads: refused at once (open would block fio for ever,
# deaf to SIGINT); with a reader, the records go through it
mkfifo "$TMPD/fifo"
for how in option env; do
	rc=0
	if [ $how = option ]; then
		timed_fio KILL 30 --ioengine="external:$ENGINE" "${base[@]}" --gpu=host \
			--transfer=bounce --gpu_stats_file="$TMPD/fifo" >"$TMPD/fifo-$how.out" 2>&1 || rc=$?
	else
		DBR_GPU_STATS_FILE=$TMPD/fifo timed_fio KILL 30 --ioengine="external:$ENGINE" \
			"${base[@]}" --gpu=host --transfer=bounce >"$TMPD/fifo-$how.out" 2>&1 || rc=$?
	fi
	if [ $rc -ne 0 ] && [ $rc -ne 137 ] &&
	   grep -q "^dmabuf_uring: .*fifo: cannot append to it: a FIFO with no reader.*start its reader first, or give a regular file" "$TMPD/fifo-$how.out"; then
		pass "stats-file-fifo-$how (exit $rc): $(grep -m1 '^dmabuf_uring: ' "$TMPD/fifo-$how.out" | cut -c1-150)"
	else
		fail "stats-file-fifo-$how: exit $rc (137: fio hung in open), $(grep -m1 '^dmabuf_uring' "$TMPD/fifo-$how.out")"
	fi
done
# the reader: this shell, holding the FIFO open read-write from here on
exec 3<>"$TMPD/fifo"
if timed_fio KILL 30 --ioengine="external:$ENGINE" "${base[@]}" --gpu=host --transfer=bounce \
	--gpu_stats_file="$TMPD/fifo" >"$TMPD/fifo-read.out" 2>&1; then
	timeout 5 head -1 <&3 >"$TMPD/fifo.read"
	grep -q '"job":"bad"' "$TMPD/fifo.read" && pass "stats-file-fifo with a reader: the record went through it" ||
		fail "stats-file-fifo with a reader: no record read"
else
	fail "stats-file-fifo with a reader: fio failed: $(grep -m1 'dmabuf_uring\|err=' "$TMPD/fifo-read.out")"
fi
exec 3>&-
# a block device is not a results file: appending would write on the disk
if dev=$(loop_dev 16M); then
	run_refused stats-file-blockdev "gpu_stats_file=$dev: cannot append to it: not a file" \
		"${base[@]}" --gpu=host --transfer=bounce --gpu_stats_file="$dev"
fi
# a record that cannot be written at the end is a lost result: non-zero exit
rc=0
dbr_fio "${base[@]}" --gpu=host --transfer=bounce --gpu_stats_file=/dev/full \
	>"$TMPD/stats-full.out" 2>&1 || rc=$?
if [ $rc -ne 0 ] && grep -q "^dmabuf_uring: gpu_stats_file=/dev/full: writing thread 0's record failed: No space left on device; the record is lost" "$TMPD/stats-full.out"; then
	pass "stats-file-full: exit $rc, $(grep -m1 '^dmabuf_uring: ' "$TMPD/stats-full.out" | cut -c1-120)"
else
	fail "stats-file-full: exit $rc, $(grep -m1 '^dmabuf_uring' "$TMPD/stats-full.out")"
fi
# a file system that fills up mid-record: the errno said is ENOSPC (not a
# short write's EIO), the file keeps whole lines only, and the next run's
# record, once there is room, is a line of its own (an 8 KiB tmpfs: a page
# taken by pad, 3939 bytes of whole lines in the other, a record of ~1.2 KiB)
# whole_lines FILE: every line of FILE is a JSON object (strict UTF-8); the
# last one's "job" on stdout, as JSON with ASCII escapes ("bad")
whole_lines() {
	python3 -c 'import json, sys
recs = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8", errors="strict")]
assert all(isinstance(r, dict) for r in recs)
print(json.dumps(recs[-1].get("job", "")))' "$1"
}
small=$TMPD/small
mkdir "$small"
if ! command -v python3 >/dev/null; then
	log "SKIP stats-file-enospc: python3 is needed to read the records"
elif ! mount -t tmpfs -o size=8k dbr-small "$small" 2>"$TMPD/mount.err"; then
	log "SKIP stats-file-enospc: cannot mount an 8 KiB tmpfs ($(head -1 "$TMPD/mount.err"); the test needs root)"
else
	at_exit "umount '$small'"
	head -c 4096 /dev/zero >"$small/pad"
	for i in $(seq 39); do printf '{"pad":"%090d"}\n' 0; done >"$small/s.jsonl"
	rc=0
	dbr_fio "${base[@]}" --gpu=host --transfer=bounce --gpu_stats_file="$small/s.jsonl" \
		>"$TMPD/stats-enospc.out" 2>&1 || rc=$?
	size=$(stat -c %s "$small/s.jsonl")
	if [ $rc -ne 0 ] && grep -q "^dmabuf_uring: gpu_stats_file=$small/s.jsonl: writing thread 0's record failed: No space left on device; the record is lost" "$TMPD/stats-enospc.out"; then
		pass "stats-file-enospc: exit $rc, the errno said is ENOSPC"
	else
		fail "stats-file-enospc: exit $rc, $(grep -m1 '^dmabuf_uring: gpu_stats' "$TMPD/stats-enospc.out")"
	fi
	[ "$size" = 3939 ] && whole_lines "$small/s.jsonl" >/dev/null 2>"$TMPD/enospc.err" &&
		pass "stats-file-enospc: no part of the record left ($size bytes, whole lines)" ||
		fail "stats-file-enospc: $size bytes (3939 before), $(tail -c 80 "$small/s.jsonl" | tr -d '\n')"
	rm "$small/pad"
	if dbr_fio "${base[@]}" --gpu=host --transfer=bounce --gpu_stats_file="$small/s.jsonl" \
		>"$TMPD/stats-roomy.out" 2>&1 && [ "$(whole_lines "$small/s.jsonl")" = '"bad"' ]; then
		pass "stats-file-enospc: with room again, the next run's record is a line of its own"
	else
		fail "stats-file-enospc: the next run's record: $(tail -c 120 "$small/s.jsonl")"
	fi
fi
# a job name that is not UTF-8 (byte 0xff): the record is still UTF-8 JSON,
# the byte as U+00FF
if command -v python3 >/dev/null; then
	dbr_fio --name=$'j\xffk' --filename="$f" --size=4m --bs=4k --iodepth=4 --rw=randread \
		--gpu=host --transfer=bounce --gpu_stats_file="$TMPD/latin1.jsonl" >"$TMPD/latin1.out" 2>&1
	job=$(whole_lines "$TMPD/latin1.jsonl" 2>"$TMPD/latin1.err")
	[ "$job" = '"j\u00ffk"' ] && pass "stats-file-latin1: a 0xff in the job name is written as \\u00ff" ||
		fail "stats-file-latin1: '$job' $(tail -1 "$TMPD/latin1.err")"
fi
[ ! -e "$TMPD/no-such-dir" ] && ! grep -q "per GPU:" "$TMPD/stats-file-no-dir.out" &&
	pass "stats-file-no-dir: nothing created, no per-GPU line" ||
	fail "stats-file-no-dir: something was created or a per-GPU line printed"

# fio's error record (err=N/file:F:L, func=X) names the line that refused, not
# a helper every refusal goes through
record_names_caller() {
	local rec line func src
	rec=$(grep -o 'file:[^,]*engine/[a-z_/]*\.c:[0-9]*, func=[^,]*' "$TMPD/$1.out" | head -1)
	src=${rec#file:}
	src=${src%%:*}
	src=$SRCDIR/engine/${src##*engine/}
	line=${rec%%, func=*}
	line=${line##*:}
	func=${rec#*func=}
	if [ -n "$rec" ] && sed -n "${line},$((line + 2))p" "$src" | grep -qF "\"$func\""; then
		pass "$1: fio's error record names the refusing line ($line, func=$func)"
	else
		fail "$1: fio's error record names '${rec:-nothing}', not the line that refused"
	fi
}
record_names_caller hipri
record_names_caller dev-id-garbage
record_names_caller stats-file-no-dir

# values fio's own parser rejects: non-zero exit is all we can ask
for opt in --transfer=dma --gpu=opencl --gpu_sync=2; do
	if dbr_fio "${base[@]}" "$opt" >"$TMPD/parse.out" 2>&1; then
		fail "fio accepted $opt"
	else
		pass "fio's option parser rejects $opt"
	fi
done
finish
