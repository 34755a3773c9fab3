#!/usr/bin/env bash
# scripts/gpu-proof's bounce table (gpu-proof.d/bounce_table.py) from a
# synthetic results.json with exact figures: IOPS spreads, the ratios of
# repetition i to repetition i, copies per call, and the copy stage per
# copied I/O summed over a repetition's threads (median over repetitions);
# records from before the engine kept the copy stage give "-" there; ours
# with other options (a variant) in a table of its own; where the engine's
# DBR_PROFILE lines are among a record's notes, a table of per-I/O times,
# threads weighted by their I/O. And the 1 MiB cases' way: one-repetition
# runs merged (merge_reps.py), each paired with the ceiling loop's lines
# that followed it. CPU steal: the repetitions at 2% or more named, else the
# largest figure; and each job's smallest ours / fio repetition's own figure.
. "$(dirname "$0")/../lib.sh"

command -v python3 >/dev/null || skip "python3 not installed"

python3 - "$TMPD" <<'PY'
import json, os, sys
d = sys.argv[1]
def thread(copies, calls, copied, copy_us, wait_us, old=False):
    t = {"copies": copies, "copy_calls": calls, "copy_launches": 0,
         "copy_passes": 0}
    if not old:
        t.update(copied_ios=copied, copy_ns=int(copy_us * 1000 * copied),
                 copy_wait_ns=int(wait_us * 1000 * copied))
    return t
def rec(job, impl, rep, iops, threads, notes=()):
    return {"case": {"job": job, "impl": impl}, "rep": rep,
            "summary": {"iops": iops}, "gpu_threads": threads,
            "notes": list(notes)}
def prof(n, q, c, g, e, k, p, w):
    return ("dmabuf_uring: p thread 0: profile (DBR_PROFILE), per I/O queued (%d): "
            "%.2f us in queue, %.2f in commit, %.2f in getevents (of these, %.2f in "
            "%.2f io_uring_enter calls: submit 1.00 (1.10 us), submit and wait 0.03 "
            "(1.18 us); %.2f sending copy passes, %.2f waiting on copies)" %
            (n, q, c, g, e, k, p, w))
records = [
    # two threads per repetition: 20 / 40 us after queueing, 0.5 / 1.5 us
    # waited, 100 copied I/O each: 30 us and 1.0 us for the repetition
    rec("r-4k", "dbr", 1, 300e3, [thread(100, 10, 100, 20, 0.5), thread(100, 10, 100, 40, 1.5)]),
    rec("r-4k", "io_uring", 1, 400e3, []),
    # one thread: 50 us, 2.0 us; median over the two repetitions: 40 / 1.50
    rec("r-4k", "dbr", 2, 360e3, [thread(200, 40, 300, 50, 2.0)]),
    rec("r-4k", "io_uring", 2, 400e3, []),
    rec("w-4k", "dbr", 1, 100e3, [thread(10, 10, 10, 5, 0, old=True)]),
    rec("w-4k", "io_uring", 1, 200e3, []),
    # the engine on host memory beside: ours / it and it / fio, by repetition
    rec("h-4k", "dbr", 1, 240e3, []),
    rec("h-4k", "dbr-host", 1, 400e3, []),
    rec("h-4k", "io_uring", 1, 400e3, []),
    rec("h-4k", "dbr", 2, 320e3, []),
    rec("h-4k", "dbr-host", 2, 320e3, []),
    rec("h-4k", "io_uring", 2, 400e3, []),
    # profiled: repetition 1's threads weigh 1:3 (engine 2.0 and 4.0 us:
    # 3.5; enters 1.0 and 3.0: 2.5 in 1.0 and 2.0 calls: 1.75; passes 0.5;
    # waits 0.0 and 1.0: 0.75); repetition 2 one thread (5.5, 3.5 in 2.25,
    # 0.5, 1.25): the medians 4.50, 3.00 (2.00), 0.50, 1.00
    rec("p-4k", "dbr", 1, 300e3, [], [prof(100, 0.5, 0.5, 1.0, 1.0, 1.0, 0.5, 0.0),
                                      prof(300, 1.0, 1.0, 2.0, 3.0, 2.0, 0.5, 1.0),
                                      "dmabuf_uring: p: a path line"]),
    rec("p-4k", "dbr", 2, 300e3, [], [prof(50, 1.0, 0.5, 4.0, 3.5, 2.25, 0.5, 1.25)]),
    rec("p-4k", "io_uring", 1, 400e3, []),
    rec("p-4k", "io_uring", 2, 400e3, []),
    # ours with another option beside (PROCS_VARIANTS): 0.60 and 0.84 of
    # fio's engine, 0.80 and 0.93 of ours as is, by repetition
    rec("v-4k", "dbr", 1, 300e3, []),
    rec("v-4k", "dbr+gpu_spin_us=0", 1, 240e3, []),
    rec("v-4k", "io_uring", 1, 400e3, []),
    rec("v-4k", "dbr", 2, 360e3, []),
    rec("v-4k", "dbr+gpu_spin_us=0", 2, 336e3, []),
    rec("v-4k", "io_uring", 2, 400e3, []),
]
# CPU steal (scripts/perf's steal_pct): r-4k's ours, 0.4% and 6.2%
records[0]["summary"]["steal_pct"] = 0.4
records[2]["summary"]["steal_pct"] = 6.2
os.makedirs(os.path.join(d, "run"))
json.dump({"records": records}, open(os.path.join(d, "run", "results.json"), "w"))
PY
python3 "$SRCDIR/scripts/gpu-proof.d/bounce_table.py" zram="$TMPD/run" >"$TMPD/table.md" ||
	die "bounce_table.py failed"
line() { grep "^| zram | $1 |" "$TMPD/table.md"; }
[ "$(line r-4k)" = "| zram | r-4k | 2 | 300.0k / 330.0k / 360.0k | 400.0k / 400.0k / 400.0k | 0.82 (min 0.75) | - | - | - | 7.5 (min 5.0) | 40.0 / 1.50 |" ] &&
	pass "a row: spreads, paired ratios, copies per call, the copy stage over threads and repetitions" ||
	fail "row r-4k: $(line r-4k)"
[ "$(line w-4k)" = "| zram | w-4k | 1 | 100.0k / 100.0k / 100.0k | 200.0k / 200.0k / 200.0k | 0.50 (min 0.50) | - | - | - | 1.0 (min 1.0) | - |" ] &&
	pass "records without the copy stage: -" ||
	fail "row w-4k: $(line w-4k)"
[ "$(line h-4k)" = "| zram | h-4k | 2 | 240.0k / 280.0k / 320.0k | 400.0k / 400.0k / 400.0k | 0.70 (min 0.60) | 0.80 (min 0.60) | 0.90 (min 0.80) | - | - | - |" ] &&
	pass "with gpu=host beside: ours / it and it / fio, paired by repetition" ||
	fail "row h-4k: $(line h-4k)"
grep -qxF "| zram | p-4k | dbr | 2 | 4.50 | 3.00 (2.00) | 0.50 | 1.00 |" "$TMPD/table.md" &&
	[ "$(grep -c '^| zram | p-4k |' "$TMPD/table.md")" = 2 ] &&
	pass "DBR_PROFILE lines: the second table, threads weighted by their I/O, the median over repetitions" ||
	fail "profile table: $(sed -n '/in the engine per I\/O/,$p' "$TMPD/table.md")"
grep -qxF "| zram | v-4k | dbr+gpu_spin_us=0 | 2 | 240.0k / 288.0k / 336.0k | 0.72 (min 0.60) | 0.87 (min 0.80) |" "$TMPD/table.md" &&
	[ "$(grep -c '^| zram | v-4k |' "$TMPD/table.md")" = 2 ] && [ "$(grep -c '^| zram | [a-z]-4k | dbr+' "$TMPD/table.md")" = 1 ] &&
	pass "a variant of ours: its own table, against fio's engine and ours as is, paired by repetition" ||
	fail "variants table: $(sed -n '/| variant |/,/^$/p' "$TMPD/table.md")"
grep -qxF "CPU steal of 2% or more (the VM's CPUs ran other work; those runs' rates dip): zram r-4k dbr rep 2: 6.2%" "$TMPD/table.md" &&
	pass "CPU steal: the repetition at 2% or more named" ||
	fail "steal line: $(grep -i steal "$TMPD/table.md")"
# r-4k's smallest ratio is repetition 1's (0.75, 0.4%), not the 6.2% of 2
grep -qxF "CPU steal in each job's smallest ours / fio repetition: at most 0.4% (the minima are not the neighbours')" "$TMPD/table.md" &&
	pass "CPU steal in the smallest repetitions: that repetition's figure, not the run's largest" ||
	fail "smallest-repetition line: $(grep -i smallest "$TMPD/table.md")"
head -1 "$TMPD/table.md" | grep -q "copy stage per copied I/O: done after / waited, us |$" &&
	pass "the header names the column" || fail "header: $(head -1 "$TMPD/table.md")"

# two one-repetition runs, each with the ceiling loop's lines after it
python3 - "$TMPD" <<'PY'
import json, os, sys
d = sys.argv[1]
loop = {1: (4000, 8000), 2: (5000, 5000)}
ours = {1: (3800, 7200), 2: (5000, 4000)}
for rep in (1, 2):
    r = os.path.join(d, "r%d" % rep)
    os.makedirs(r)
    recs = [{"case": {"job": "seqread-1m-1t", "impl": "dbr"}, "rep": 1,
             "summary": {"iops": ours[rep][0], "steal_pct": 0.7 * rep}, "gpu_threads": []},
            {"case": {"job": "seqwrite-1m-1t", "impl": "dbr"}, "rep": 1,
             "summary": {"iops": ours[rep][1]}, "gpu_threads": []}]
    json.dump({"meta": {"repetitions": 1}, "records": recs,
               "title": "t (x, 1 rep)"}, open(os.path.join(r, "results.json"), "w"))
    with open(os.path.join(r, "ceiling.txt"), "w") as f:
        f.write("ceiling read /dev/zram0: 1 threads, bs 1 MiB, qd 16: 4.19 GB/s, %d IOPS (1.0 s)\n" % loop[rep][0])
        f.write("ceiling write /dev/zram0: 1 threads, bs 1 MiB, qd 16: 8.39 GB/s, %d IOPS (1.0 s)\n" % loop[rep][1])
PY
python3 "$SRCDIR/scripts/gpu-proof.d/merge_reps.py" "$TMPD/m" "$TMPD/r1" "$TMPD/r2" ||
	die "merge_reps.py failed"
python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))
assert sorted(r["rep"] for r in d["records"]) == [1, 1, 2, 2], d["records"]
assert d["meta"]["repetitions"] == 2 and d["title"] == "t (x, 2 reps)", d' "$TMPD/m/results.json" &&
	pass "merged: repetition i is the i-th run" || fail "merged results.json"
python3 "$SRCDIR/scripts/gpu-proof.d/bounce_table.py" zram="$TMPD/m" >"$TMPD/t2.md" ||
	die "bounce_table.py failed on the merged run"
# reads 0.95 and 1.00, writes 0.90 and 0.80: paired by repetition, not by rank
line() { grep "^| zram | $1 |" "$TMPD/t2.md"; }
line seqread-1m-1t | grep -qF "| - | - | 0.97 (min 0.95) |" &&
	line seqwrite-1m-1t | grep -qF "| - | - | 0.85 (min 0.80) |" &&
	pass "ours / the ceiling loop of the same repetition" ||
	fail "ceiling column: $(cat "$TMPD/t2.md")"
grep -qxF "CPU steal: at most 1.4% in any run" "$TMPD/t2.md" &&
	pass "CPU steal under 2% everywhere: the largest figure" ||
	fail "steal line: $(grep -i steal "$TMPD/t2.md")"
# a job whose smallest repetition (0.50) ran beside steal of 2.5% in fio's run
python3 - "$TMPD" <<'PY'
import json, os, sys
d = os.path.join(sys.argv[1], "s")
os.makedirs(d)
runs = [("dbr", 1, 200e3, 0.1), ("io_uring", 1, 400e3, 2.5),
        ("dbr", 2, 380e3, 0.0), ("io_uring", 2, 400e3, 0.0)]
json.dump({"records": [{"case": {"job": "x-4k", "impl": i}, "rep": rep,
                        "summary": {"iops": iops, "steal_pct": st}, "gpu_threads": []}
                       for i, rep, iops, st in runs]}, open(os.path.join(d, "results.json"), "w"))
PY
python3 "$SRCDIR/scripts/gpu-proof.d/bounce_table.py" zram="$TMPD/s" >"$TMPD/t3.md" ||
	die "bounce_table.py failed on the stolen run"
grep -qxF "Smallest ours / fio repetitions with CPU steal of 2% or more (those minima say as much of the neighbours): zram x-4k rep 1: 0.50, 2.5%" "$TMPD/t3.md" &&
	pass "a smallest repetition with CPU steal: named, with its ratio and the larger figure" ||
	fail "smallest-repetition line: $(grep -i smallest "$TMPD/t3.md")"
cp -r "$TMPD/m" "$TMPD/again"
if python3 "$SRCDIR/scripts/gpu-proof.d/merge_reps.py" "$TMPD/m3" "$TMPD/again" 2>"$TMPD/err"; then
	fail "merge_reps.py took a run of two repetitions"
elif grep -q "more than one repetition" "$TMPD/err"; then
	pass "a run of several repetitions is refused"
else
	fail "merge of a merged run: $(cat "$TMPD/err")"
fi
finish
