#!/usr/bin/env bash
# The GPU owner (gpu_owner, gpu/owner.h) through the HIP double: job
# processes of one run send their GPU calls to one dbr-gpu-owner process,
# which alone calls the runtime (the double's report lines come from its pid
# only) and releases everything; data written through GPU memory verifies;
# the owner leaves with the run; job threads keep their process's context;
# gpu_owner=0 and an owner that cannot start are said once per run; an
# owner killed mid-run stops the jobs with its line within seconds; a job
# process killed has what it held freed at once while the others go on;
# fio killed takes its owner and job processes with it.
. "$(dirname "$0")/../lib.sh"

use_hip_double
[ -x "$BUILDDIR/dbr-gpu-owner" ] || die "dbr-gpu-owner not built in $BUILDDIR"

f=$(scratch_file)
truncate -s 64M "$f"
job=(--name=o --filename="$f" --direct=1 --gpu=hip --transfer=bounce --bs=4k)

# owner_pid FILE: the owner's pid from the job's path line
owner_pid() {
	sed -n "s/.*the GPU owner's context (pid \([0-9]*\),.*/\1/p" "$1" | head -1
}

# gone, owner_of, owner_serving and kill_run: gpu-proof's, here with the
# double's device memory (the memfds it maps, named hip_double) as the GPU
# memory a process holds
# shellcheck disable=SC2034 # owner_kills.sh's
GPU_HELD_UNIT=KiB
gpu_held() {
	local s=0 range name
	# shellcheck disable=SC2034 # the fields between are not used
	while read -r range _ _ _ _ name; do
		[[ $name = *memfd:hip_double* ]] &&
			s=$((s + 0x${range#*-} - 0x${range%-*}))
	done 2>/dev/null <"/proc/$1/maps"
	echo $((s / 1024))
}
. "$SRCDIR/scripts/gpu-proof.d/owner_kills.sh"

# 1. four job processes, randrw with crc32c verify through GPU memory
out=$TMPD/procs.out
if dbr_fio "${job[@]}" --rw=randrw --verify=crc32c --iodepth=8 --numjobs=4 \
	--size=16m --offset_increment=16m --gpu_stats_file="$TMPD/procs.jsonl" \
	>"$out" 2>&1 && ! grep -q "err= *[1-9]" "$out"; then
	pass "4 job processes verify through the owner"
else
	fail "4 job processes verify through the owner"
	show_failure "$out"
fi
p=$(owner_pid "$out")
if [ -n "$p" ]; then
	pass "the path line names the owner (pid $p)"
else
	fail "no owner in the path line: $(grep -m1 '^dmabuf_uring: o: gpu=' "$out")"
fi
# the double reports at each release, from the process that calls it
pids=$(hip_report "$HIPDOUBLE_REPORT" | awk '{ print $1 }' | sort -u | tr '\n' ' ')
if [ -n "$p" ] && [ "$pids" = "pid=$p " ]; then
	pass "only the owner called the runtime ($pids)"
else
	fail "runtime calls from $pids, want the owner's pid=$p alone"
fi
last=$(hip_report "$HIPDOUBLE_REPORT" | grep "^pid=$p ")
if echo "$last" | grep -q 'live_allocs=0 live_streams=0 live_events=0 live_host_regs=0 ' &&
	echo "$last" | grep -q 'unpinned_copies=0 '; then
	pass "the owner released every job process's memory, streams and events"
else
	fail "the owner's last report: $last"
fi
if [ -n "$p" ] && gone "$p" 3; then
	pass "the owner left with the run"
else
	fail "owner $p still runs 3 s after fio"
fi

# the owner's CPU for each job process: said, and in its record (fio's cpu
# line counts the job process alone)
cpu_line="^dmabuf_uring: o thread [0-3]: the GPU owner's thread for this job process spent [0-9.]* us of CPU per I/O"
n=$(grep -c "$cpu_line" "$out")
if [ "$n" -eq 4 ] && ! grep "$cpu_line" "$out" | grep -q " spent 0.00 us" &&
	python3 - "$TMPD/procs.jsonl" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
assert len(recs) == 4 and all(r["owner_cpu_ns"] > 0 for r in recs), recs
PY
then
	pass "the owner's CPU for each job process: said ($(grep -m1 "$cpu_line" "$out" | sed 's/.*spent \([0-9.]*\) us.*/\1/') us per I/O) and in its record"
else
	fail "the owner's CPU: $n lines, want 4 with a figure above 0, and each record's owner_cpu_ns above 0"
fi

# iodepth 256 through the owner: an event per fence slot (the owner once
# kept 64 handles a job process, and iodepth 64 failed there)
out=$TMPD/deep.out
if dbr_fio "${job[@]}" --rw=randrw --verify=crc32c --iodepth=256 --numjobs=2 \
	--size=8m --offset_increment=16m >"$out" 2>&1 && ! grep -q "err= *[1-9]" "$out" &&
	grep -q "copies in the GPU owner's context" "$out"; then
	pass "2 job processes at iodepth 256 verify through the owner"
else
	fail "2 job processes at iodepth 256 through the owner: $(grep -m1 -E '^dmabuf_uring|err= *[1-9]' "$out")"
	show_failure "$out"
fi

# 2. job threads: the process's own context, no owner
out=$TMPD/threads.out
: >"$HIPDOUBLE_REPORT"
run_ok "threads" "${job[@]}" --rw=randread --iodepth=4 --numjobs=2 \
	--size=8m --thread --gpu_stats_file="$TMPD/threads.jsonl"
if grep -q "GPU owner" "$out"; then
	fail "job threads went to an owner: $(grep -m1 'GPU owner' "$out")"
elif ! python3 -c 'import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
assert len(recs) == 2 and all(r["owner_cpu_ns"] is None for r in recs), recs' \
	"$TMPD/threads.jsonl"; then
	fail "job threads: their records' owner_cpu_ns is not null"
else
	pass "job threads keep their process's context (no owner CPU in their records)"
fi

# scripts/perf counts the owner's CPU in the jobs' and the whole run's CPU
# per I/O: job processes through the owner against the same job as threads
if command -v python3 >/dev/null; then
	sed -e '/^thread$/d' -e 's/^\[bounce-randread-4k-4t\]/[procs]/' \
		"$SRCDIR/jobs/bounce-randread-4k-4t.fio" >"$TMPD/procs.fio"
	if DBR_ENGINE=$ENGINE FIO=$FIO DBR_GPU=hip "$SRCDIR/scripts/perf" \
		--jobs "$TMPD/procs.fio" --impl dbr --transfer bounce --runtime 0.3 \
		--target scratch:file --size 4m --out "$TMPD/perf" >"$TMPD/perf.out" 2>&1 &&
		python3 - "$TMPD/perf/results.json" <<'PY'
import json, sys
rec = json.load(open(sys.argv[1]))["records"][0]
s, threads = rec["summary"], rec["gpu_threads"]
owner_us = sum(t["owner_cpu_ns"] for t in threads) / 1e3 / s["ios"]
assert len(threads) == 4 and owner_us > 0, threads
assert abs(s["owner_cpu_us_per_io"] - owner_us) < 1e-6 * owner_us, (s, owner_us)
assert s["cpu_us_per_io"] > s["owner_cpu_us_per_io"], s
assert s["run_cpu_us_per_io"] > s["owner_cpu_us_per_io"], s
PY
	then
		pass "scripts/perf: the owner's CPU in the jobs' and the run's CPU per I/O ($(grep -o 'GPU owner [0-9.]* us/IO' "$TMPD/perf.out" | head -1))"
	else
		fail "scripts/perf: the owner's CPU not counted"
		tail -5 "$TMPD/perf.out"
	fi
fi

# 3. gpu_owner=0: a context per process, said once for the run
out=$TMPD/own.out
run_ok "own" "${job[@]}" --rw=randread --iodepth=4 --numjobs=3 --size=8m \
	--gpu_owner=0 --name=o2 "${job[@]:1}" --rw=randread --iodepth=4 \
	--numjobs=2 --size=8m --gpu_owner=0
n=$(grep -c "job processes open a hip context each (gpu_owner=0)" "$out")
if [ "$n" -eq 1 ] && grep -q "a context of its own, which the GPU time-slices" "$out"; then
	pass "gpu_owner=0 is said once for the run's 5 processes"
else
	fail "gpu_owner=0: the time-slice line $n times, want 1"
	show_failure "$out"
fi

# 4. an owner that cannot start: auto falls back and says so; 1 refuses
out=$TMPD/nostart.out
DBR_GPU_OWNER=$TMPD/no-such-owner run_ok "nostart" "${job[@]}" --rw=randread \
	--iodepth=4 --numjobs=2 --size=8m
if [ "$(grep -c 'the GPU owner could not start' "$out")" -eq 1 ]; then
	pass "gpu_owner=auto without an owner runs, and says why once"
else
	fail "gpu_owner=auto without an owner: $(grep -m1 '^dmabuf_uring' "$out")"
fi
DBR_GPU_OWNER=$TMPD/no-such-owner run_refused "owner=1 without an owner" \
	"gpu_owner=1: the GPU owner of hip 0 could not start: .*could not start" \
	"${job[@]}" --rw=randread --iodepth=4 --numjobs=2 --size=8m --gpu_owner=1

# 5-7. gpu-proof procs's kills, as it runs them on a GPU machine: the owner
# killed mid-run (the jobs stop with its line within seconds), a job process
# killed (the owner releases what it held for that one at once and serves
# the others on; fio 3.33 itself aborts at its end when a job process died
# so, whatever the engine), fio killed (the owner and the job processes are
# gone within seconds); and nothing left behind by any
. "$SRCDIR/scripts/gpu-proof.d/procs.sh"
dbr() { dbr_fio "$@"; }
note() { echo "$*"; }
# shellcheck disable=SC2034 # procs_kills's
top=$SRCDIR RUNS=$TMPD DEV=$TMPD/kill.bin READ_SPAN=$((96 << 20))
truncate -s 96M "$DEV"
DBR_GPU=hip procs_kills file >"$TMPD/kills.out"
# the owner gone fails every later copy, also after reads that completed
# without one: each job process says it once (4k reads, 8 processes: 12
# lines once)
g=$TMPD/kill-many.bin
truncate -s 64M "$g"
KILL_OUT=$TMPD/kill-many.out HIPDOUBLE_DELAY_US=200 kill_run owner "$g" 8 \
	dbr_fio --name=o --filename="$g" "${job[@]:2}" --rw=randread --iodepth=16 \
	--numjobs=8 --size=8m --offset_increment=8m --time_based --runtime=60 >/dev/null
n=$(grep -c "a GPU copy failed" "$TMPD/kill-many.out")
t=$(grep -o "^dmabuf_uring: o thread [0-9]*: a GPU copy failed" "$TMPD/kill-many.out" | sort -u | wc -l)
if [ "$n" -ge 1 ] && [ "$n" -eq "$t" ]; then
	pass "the owner killed under 8 job processes: $n said its line, once each"
else
	fail "the owner killed under 8 job processes: $n copy failure lines from $t of them, want one each"
fi
for what in owner job fio; do
	line=$(grep -m1 "kill -9 $what:" "$TMPD/kills.out")
	case $line in
	*": ok: "*) pass "kill -9 of $what: ${line#*ok: kill -9 "$what": }" ;;
	*)
		fail "kill -9 of $what: ${line:-no line}"
		show_failure "$TMPD/procs-kill-$what-file.out"
		;;
	esac
done

# beside_owner_name OUT CMD...: CMD with the pid of the fio run to come
# added (the owner's socket name carries it) in the background; then that
# run, 2 job processes with gpu_owner=1 a second later, into OUT; its status
pre=${DBR_ASAN_PRELOAD:+$DBR_ASAN_PRELOAD${LD_PRELOAD:+:$LD_PRELOAD}}
beside_owner_name() {
	local out=$1
	shift
	(
		me=$BASHPID	# fio's pid once exec'd; expanded here, not in the child
		"$@" "$me" &
		exec env ${pre:+LD_PRELOAD=$pre} "$FIO" --ioengine="external:$ENGINE" \
			"${job[@]}" --rw=randread --iodepth=4 --numjobs=2 --size=8m \
			--gpu_owner=1 --startdelay=1
	) >"$out" 2>&1
}

# as_other CMD...: CMD as uid 65534 (nobody); other_ok: can this test do it
as_other() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
other_ok() {
	[ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null && [ -x /usr/bin/python3 ]
}

# 8. an owner leaving as job processes come (a second after the last of a
# stonewall group): their connections close unanswered, and they start a new
# owner instead of running without one. A socket by the owner's name that
# takes no connection stands in for the owner on its way out: it closes
# once both job processes wait on it (it says how many, on stderr).
cat >"$TMPD/leaving.py" <<'PY'
import socket, sys, time
name = "dmabuf_uring.owner.%s.hip.0" % sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.bind("\0" + name)
s.listen(64)
waiting, t0 = 0, time.time()
while waiting < int(sys.argv[1]) and time.time() - t0 < 30:
    time.sleep(0.05)
    with open("/proc/net/unix") as f:
        waiting = sum(l.split()[-1] == "@" + name for l in f) - 1
s.close()
print("waiting", waiting, file=sys.stderr)
PY
out=$TMPD/leaving.out
rc=0
beside_owner_name "$out" python3 "$TMPD/leaving.py" 2 || rc=$?
if [ "$rc" -eq 0 ] && grep -q "copies in the GPU owner's context" "$out" &&
	grep -qx "waiting 2" "$out"; then
	pass "an owner leaving as 2 job processes came: they started another"
else
	fail "an owner leaving as job processes came: exit $rc, $(grep -m1 '^waiting' "$out"), $(grep -m1 '^dmabuf_uring' "$out")"
	show_failure "$out"
fi

# 9. the owner takes fio's CPUs and nice value, not those of the job
# process that started it (fio pins and renices each before the engine's
# init): with cpus_allowed_policy=split it ran every job process's copies on
# the first one's CPU
if [ "$(nproc)" -lt 2 ]; then
	log "SKIP the owner's CPUs: one CPU here, nothing to pin apart"
else
	g=$TMPD/pinned.bin
	truncate -s 16M "$g"
	dbr_fio --name=o --filename="$g" "${job[@]:2}" --rw=randread --iodepth=4 \
		--numjobs=2 --size=8m --time_based --runtime=4 --cpus_allowed=0-1 \
		--cpus_allowed_policy=split --nice=5 >"$TMPD/pinned.out" 2>&1 &
	sh_pid=$!
	o=$(owner_serving "$g" 2)
	main=$(pgrep -f -o -- "--filename=$g")
	mine=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' "/proc/$o/status" 2>/dev/null)
	fios=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' "/proc/$main/status" 2>/dev/null)
	onice=$(ps -o ni= -p "$o" 2>/dev/null | tr -d ' ')
	fnice=$(ps -o ni= -p "$main" 2>/dev/null | tr -d ' ')
	wait "$sh_pid" 2>/dev/null
	if [ -n "$o" ] && [ -n "$mine" ] && [ "$mine" = "$fios" ] && [ "$onice" = "$fnice" ]; then
		pass "the owner runs on fio's CPUs ($mine) at fio's nice value ($onice), not the first job process's"
	else
		fail "the owner (pid ${o:-none}) runs on CPUs ${mine:-?} at nice ${onice:-?}; fio on ${fios:-?} at ${fnice:-?}"
	fi
fi

# 10. the owner's name held by another user's process: the job process
# does not hand it its memory, and says who holds it
if ! other_ok; then
	log "SKIP a squatted owner name: needs root, setpriv and /usr/bin/python3 to bind it as another user"
else
	cat >"$TMPD/squat.py" <<'PY'
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.bind("\0dmabuf_uring.owner.%s.hip.0" % sys.argv[1])
s.listen(64)
time.sleep(30)
PY
	out=$TMPD/squat.out
	rc=0
	# the script as an argument: $TMPD is not the other user's to read
	beside_owner_name "$out" as_other /usr/bin/python3 -c "$(cat "$TMPD/squat.py")" || rc=$?
	pkill -u 65534 -f "dmabuf_uring.owner"
	if [ "$rc" -ne 0 ] && grep -q "the GPU owner's socket name is held by pid [0-9]* of user 65534" "$out"; then
		pass "an owner name held by another user: refused ($(grep -m1 -o 'held by pid [0-9]* of user 65534' "$out"))"
	else
		fail "an owner name held by another user: exit $rc, $(grep -m1 '^dmabuf_uring' "$out")"
		show_failure "$out"
	fi
fi

# 11. a connection the owner refuses (another user's) does not count as
# a job process served: the owner still waits for the one that started it
# (it left at once: "served", and a second past its last job process)
if ! other_ok; then
	log "SKIP a refused connection: needs root, setpriv and /usr/bin/python3 to connect as another user"
else
	sleep 60 &
	run=$!
	"$BUILDDIR/dbr-gpu-owner" hip 0 "$run" &
	o=$!
	sleep 0.5
	as_other /usr/bin/python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect("\0dmabuf_uring.owner.%s.hip.0" % sys.argv[1])
s.recv(1)' "$run" 2>/dev/null
	sleep 2
	if kill -0 "$o" 2>/dev/null; then
		pass "a refused connection: the owner still waits for its first job process"
	else
		fail "a refused connection: the owner left at once"
	fi
	kill "$run" 2>/dev/null
	gone "$o" 3 || kill -9 "$o"
	wait "$o" "$run" 2>/dev/null
fi

# 12. an owner stopped (SIGSTOP, a debugger) past DBR_GPU_OWNER_STOP_S
# (30 s; 2 here): the jobs waiting on it stop with its line, not a hang
g=$TMPD/stopped.bin
truncate -s 16M "$g"
out=$TMPD/stopped.out
DBR_GPU_OWNER_STOP_S=2 HIPDOUBLE_DELAY_US=200 dbr_fio --name=o --filename="$g" \
	"${job[@]:2}" --rw=randread --iodepth=8 --numjobs=2 --size=16m \
	--time_based --runtime=60 >"$out" 2>&1 &
sh_pid=$!
o=$(owner_serving "$g" 2)
if [ -z "$o" ]; then
	fail "an owner stopped: no owner serving the 2 job processes"
	pkill -9 -f -- "--filename=$g"
else
	sleep 1
	kill -STOP "$o"
	t0=$SECONDS
	if ! gone "$sh_pid" 20; then
		fail "an owner stopped: fio still runs 20 s later"
		pkill -9 -f -- "--filename=$g"
	elif grep -q "the GPU owner (pid $o) has been stopped for [0-9]* s" "$out"; then
		pass "an owner stopped: fio stopped $((SECONDS - t0)) s later with its line"
	else
		fail "an owner stopped: $(grep -m1 'GPU owner' "$out")"
		show_failure "$out"
	fi
	kill -CONT "$o"
	gone "$o" 5 || fail "an owner stopped, then let go on: still there 5 s after its job processes"
fi
wait "$sh_pid" 2>/dev/null

finish
