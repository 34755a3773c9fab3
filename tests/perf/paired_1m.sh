#!/usr/bin/env bash
# scripts/gpu-proof's 1 MiB cases beside the ceiling loop (paired_1m), as
# bounce and procs run them, without a GPU: scripts/perf and the loop are
# stand-ins that log their calls and write figures chosen here; merge_reps.py
# and bounce_table.py are the real ones. Each repetition must be a run of its
# own followed by the loop of the same thread count, in that order; procs
# must run its job-process jobs a thread count at a time; and the table must
# pair ours with the loop of the same repetition.
. "$(dirname "$0")/../lib.sh"

command -v python3 >/dev/null || skip "python3 not installed"

proof=$SRCDIR/scripts/gpu-proof
funcs=$(sed -n '/^paired_1m() {/,/^}/p;/^bounce_1m() {/,/^}/p;/^job_for() {/,/^}/p;/^variants() {/,/^}/p' "$proof")
for f in paired_1m bounce_1m job_for variants; do
	grep -q "^$f()" <<<"$funcs" || die "$f not found in $proof"
done
eval "$funcs"
. "$SRCDIR/scripts/gpu-proof.d/procs.sh"

W=$TMPD/w top=$SRCDIR summary=$TMPD/summary RUNTIME=1
DEV=/dev/zram0 DEV_ARGS=(--destructive) READ_SPAN=$((64 << 20)) WRITE_AT=$((64 << 20))
mkdir -p "$W/jobs"
calls=$TMPD/calls
note() { :; }

# scripts/perf: one record per job and implementation, repetition 1, ours at
# 900 IOPS in repetition r1 and 1000 in the rest, fio's engine at 2000
perf_run() {
	local name=$1 impls jobs
	shift
	echo "perf $name $*" >>"$calls"
	impls=$(sed 's/.* --impl \([^ ]*\).*/\1/' <<<"$*")
	jobs=$(sed 's/.* --jobs \([^ ]*\).*/\1/' <<<"$*")
	mkdir -p "$W/perf-$name"
	python3 - "$W/perf-$name/results.json" "$name" "$impls" "$jobs" <<'PY'
import json, os, sys
out, name, impls, jobs = sys.argv[1:]
recs = []
for job in jobs.split(","):
    job = os.path.basename(job)[:-len(".fio")]
    for impl in impls.split(","):
        iops = 2000 if impl == "io_uring" else 900 if name.endswith("-r1") else 1000
        recs.append({"case": {"job": job, "impl": impl}, "rep": 1,
                     "summary": {"iops": iops}, "gpu_threads": []})
json.dump({"meta": {"repetitions": 1}, "records": recs,
           "title": "t (x, 1 rep)"}, open(out, "w"))
PY
}
perf_report() { echo "report $*" >>"$calls"; }
# the loop at 1000 IOPS, for each of DIRS
ceiling_run() {
	local d
	echo "loop $*" >>"$calls"
	for d in ${3:-read write}; do
		echo "ceiling $d $DEV: $1 threads, bs 1 MiB, qd 16: 1.05 GB/s, 1000 IOPS (1.0 s)"
	done
}

: >"$calls"
PROCS_NJ="4 16" PROCS_REPEAT=2 procs_cases zram nomps >/dev/null
seq=$(grep -v '^report' "$calls" | sed 's/ --.*//' | tr '\n' ' ')
want="perf procs-zram-4k-nomps perf procs-zram-1m-4p-nomps-r1 loop 4 $((READ_SPAN / 16)) read perf procs-zram-1m-4p-nomps-r2 loop 4 $((READ_SPAN / 16)) read perf procs-zram-1m-16p-nomps-r1 loop 16 $((READ_SPAN / 16)) read perf procs-zram-1m-16p-nomps-r2 loop 16 $((READ_SPAN / 16)) read "
[ "$seq" = "$want" ] &&
	pass "procs: the 4k run, then per process count each 1 MiB repetition followed by its loop" ||
	fail "procs: calls '$seq', want '$want'"
one=$(grep '^perf procs-zram-1m-16p-nomps-r2 ' "$calls")
[[ $one = *"--transfer bounce --runtime 1 --repeat 1 "* ]] && [[ $one = *"--jobs $W/jobs/bounce-seqread-1m-16p.fio" ]] &&
	! grep -qx thread "$W/jobs/bounce-seqread-1m-16p.fio" &&
	pass "procs: a repetition of one run, the job-process job (no thread)" ||
	fail "procs: $one"
grep -q "^report procs-zram-1m-4p-nomps --from $W/perf-procs-zram-1m-4p-nomps$" "$calls" &&
	pass "procs: the repetitions reported as one run" || fail "procs: reports $(grep '^report' "$calls" | tr '\n' ' ')"
PROCS_NJ="4 16" procs_table zram nomps >/dev/null
row=$(grep '^| zram-nomps | bounce-seqread-1m-16p |' "$summary")
# ours / fio: 0.45 and 0.50; ours / the loop: 0.90 and 1.00
[[ $row = *"| 0.47 (min 0.45) | - | - | 0.95 (min 0.90) |"* ]] &&
	pass "procs: the table pairs each repetition with its own loop ($(cut -d'|' -f7,10 <<<"$row"))" ||
	fail "procs table: $row"

: >"$calls"
PROCS_PARTS=1m PROCS_NJ=4 PROCS_REPEAT=1 procs_cases zram nomps >/dev/null
seq=$(grep -v '^report' "$calls" | sed 's/ --.*//' | tr '\n' ' ')
want="perf procs-zram-1m-4p-nomps-r1 loop 4 $((READ_SPAN / 16)) read "
[ "$seq" = "$want" ] && pass "procs: PROCS_PARTS=1m runs the 1 MiB cases alone" ||
	fail "procs, PROCS_PARTS=1m: calls '$seq', want '$want'"
: >"$calls"
PROCS_PARTS=4k PROCS_NJ=4 PROCS_REPEAT=1 procs_cases zram nomps >/dev/null
seq=$(grep -v '^report' "$calls" | sed 's/ --.*//' | tr '\n' ' ')
[ "$seq" = "perf procs-zram-4k-nomps " ] && pass "procs: PROCS_PARTS=4k runs the 4k cases alone" ||
	fail "procs, PROCS_PARTS=4k: calls '$seq'"
: >"$summary"
PROCS_PARTS=1m PROCS_NJ=4 procs_table zram nomps >/dev/null
rows=$(grep -c '^| zram-nomps |' "$summary")
grep -q '^| zram-nomps | bounce-seqread-1m-4p |' "$summary" && [ "$rows" = 1 ] &&
	pass "procs: the table of PROCS_PARTS=1m has its 1 MiB row only" ||
	fail "procs, PROCS_PARTS=1m: $rows rows: $(cat "$summary")"
# the path lines come from the runs that ran: the 1 MiB ones without 4k
mkdir -p "$W/perf-procs-zram-1m-4p-nomps-r1/runs" "$W/perf-procs-zram-1m-4p-mps-r1/runs"
echo "dmabuf_uring: pv-1m: gpu=cuda dev=0 owner" >"$W/perf-procs-zram-1m-4p-nomps-r1/runs/1.out"
echo "dmabuf_uring: pv-1m: gpu=cuda dev=0 mps" >"$W/perf-procs-zram-1m-4p-mps-r1/runs/1.out"
lines=$(PROCS_PARTS=1m procs_lines zram nomps | sed 's/^ *//')
[ "$lines" = "1 pv-1m: gpu=cuda dev=0 owner" ] && pass "procs: path lines of the 1 MiB runs, of their tag only" ||
	fail "procs, PROCS_PARTS=1m: path lines '$lines'"

: >"$calls"
# shellcheck disable=SC2034 # bounce_1m reads common
common=(--transfer bounce --repeat 5 --runtime 1) table=()
BOUNCE_THREADS=2 BOUNCE_REPEAT=2 bounce_1m zram >/dev/null
seq=$(grep -v '^report' "$calls" | sed 's/ --.*//' | tr '\n' ' ')
want="perf zram-1m-2t-r1 loop 2 $((READ_SPAN / 2)) read write perf zram-1m-2t-r2 loop 2 $((READ_SPAN / 2)) read write "
[ "$seq" = "$want" ] && grep -q '^perf zram-1m-2t-r1 .*--repeat 5 --runtime 1 --repeat 1 ' "$calls" &&
	[ "${table[*]}" = "zram=$W/perf-zram-1m-2t" ] &&
	pass "bounce: reads and writes, each repetition with the loop's read and write" ||
	fail "bounce: calls '$seq' (want '$want'), table ${table[*]}"
finish
