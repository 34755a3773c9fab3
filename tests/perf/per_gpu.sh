#!/usr/bin/env bash
# scripts/perf's per-GPU table and plot: from a synthetic results.json
# (exact figures, no fio), where only cases on more than one GPU get rows and
# a results.md without such cases is what it was before; then a real run of
# jobs/multi-gpu.fio on the HIP double's two devices, whose table must carry
# the engine's records of that run, and a gpu=host run, which gets none.
. "$(dirname "$0")/../lib.sh"

command -v python3 >/dev/null || skip "python3 not installed"
perf=$SRCDIR/scripts/perf
export FIO DBR_ENGINE=$ENGINE

# ---- synthetic: case "multi" on hip 0 and 1 (2 repetitions), case "single"
# on hip 0 only; the same records without gpu_threads as the old output
python3 - "$TMPD" <<'PY'
import json, os, sys
d = sys.argv[1]
def thread(dev, t, iops, bw, copies):
    return {"run": "1-1", "job": "j", "thread": t, "pid": 1, "gpu": "hip",
            "dev": dev, "pci": "0000:0%d:00.0" % (4 + dev), "path": "bounce",
            "read_bytes": bw, "read_ios": 10, "read_runtime_ms": 1000,
            "read_bw_bytes": bw, "read_iops": iops, "write_bytes": 0,
            "write_ios": 0, "write_runtime_ms": 0, "write_bw_bytes": 0,
            "write_iops": 0.0, "copies": copies, "copy_calls": 1,
            "reissues": 0, "error": 0}
def rec(cid, rep, threads):
    case = {"job": cid, "impl": "dbr", "transfer": "bounce", "iodepth": "8",
            "bs": "1m"}
    return {"id": cid + " dbr:bounce", "case": case, "rep": rep,
            "summary": {"iops": 1000.0 * rep, "bw_bytes": 2**30},
            "gpu_threads": threads}
G = 2**30
records = [
    # rep 1: hip 0 has threads 0,2, hip 1 threads 1,3
    rec("multi", 1, [thread(0, 0, 100.0, G, 10), thread(1, 1, 200.0, 2 * G, 20),
                     thread(0, 2, 300.0, G, 30), thread(1, 3, 400.0, 2 * G, 40)]),
    rec("multi", 2, [thread(0, 0, 500.0, 3 * G, 50), thread(1, 1, 600.0, 2 * G, 60),
                     thread(0, 2, 700.0, 3 * G, 70), thread(1, 3, 800.0, 2 * G, 80)]),
    rec("single", 1, [thread(0, 0, 100.0, G, 10), thread(0, 1, 100.0, G, 10)]),
]
meta = {"command": "synthetic"}
for name, recs in (("both", records), ("single", records[2:])):
    os.makedirs(os.path.join(d, name))
    json.dump({"meta": meta, "records": recs, "title": "t"},
              open(os.path.join(d, name, "results.json"), "w"))
    old = [dict((k, v) for k, v in r.items() if k != "gpu_threads") for r in recs]
    os.makedirs(os.path.join(d, name + "-old"))
    json.dump({"meta": meta, "records": old, "title": "t"},
              open(os.path.join(d, name + "-old", "results.json"), "w"))
PY
for n in both single both-old single-old; do
	"$perf" --from "$TMPD/$n" >"$TMPD/$n.out" 2>&1 || fail "--from $n: exit $?"
done
# medians over 2 repetitions: hip 0 IOPS (400, 1200) -> 800, GiB/s (2, 6) -> 4,
# copies (40, 120) -> 80; hip 1 IOPS (600, 1400) -> 1000, 4 GiB/s, copies 100
want0="| multi dbr:bounce | hip 0 | 0000:04:00.0 | bounce | 2 | 2 | 0.8k | 4.00 | 80 |"
want1="| multi dbr:bounce | hip 1 | 0000:05:00.0 | bounce | 2 | 2 | 1.0k | 4.00 | 100 |"
md=$TMPD/both/results.md
grep -qF "$want0" "$md" && grep -qF "$want1" "$md" &&
	[ "$(grep -c '^| multi dbr:bounce | hip' "$md")" -eq 2 ] &&
	! grep -q '^| single dbr:bounce | hip' "$md" &&
	pass "per-GPU table: the 2-GPU case's medians per GPU, no rows for the 1-GPU case" ||
	{ fail "per-GPU table"; sed -n '/Per GPU/,$p' "$md"; }
grep -q '</svg>' "$TMPD/both/gpu.svg" && grep -q 'multi dbr:bounce: hip 1 bounce' "$TMPD/both/gpu.svg" &&
	grep -q '4.00 GiB/s, 1.0k IOPS, 2 threads, 100 copies' "$TMPD/both/gpu.svg" &&
	pass "gpu.svg: a bar per GPU of the 2-GPU case" ||
	fail "gpu.svg: a bar per GPU of the 2-GPU case"
[ ! -e "$TMPD/single/gpu.svg" ] && ! grep -q "Per GPU" "$TMPD/single/results.md" &&
	pass "1-GPU results: no per-GPU table, no gpu.svg" ||
	fail "1-GPU results: no per-GPU table, no gpu.svg"
for n in both single; do
	python3 -c '
import sys
new, old = (open(p).read() for p in sys.argv[1:])
sys.exit(new.split("\n## Per GPU")[0] != old)' "$TMPD/$n/results.md" "$TMPD/$n-old/results.md" &&
		pass "$n: the rest of results.md is what it is without engine records" ||
		{ fail "$n: results.md changed beyond the per-GPU table"; diff "$TMPD/$n/results.md" "$TMPD/$n-old/results.md"; }
done

# ---- synthetic: threads' I/O windows (io_start_ms/io_end_ms). Case "apart"
# ran its two threads one after the other in repetition 2 (the windows do
# not overlap) and 10 ms apart in repetition 1; case "close" always 10 ms
# apart. Only "apart" repetition 2 is named, as 0% together.
python3 - "$TMPD/windows" <<'PY'
import json, os, sys
d = sys.argv[1]
def thread(t, start):
    return {"run": "1-1", "job": "j", "thread": t, "gpu": "hip", "dev": 0,
            "path": "bounce", "read_iops": 100.0, "read_bw_bytes": 1,
            "read_bytes": 1, "copies": 1, "io_start_ms": start,
            "io_end_ms": start + 1000.0}
def rec(cid, rep, starts):
    return {"id": cid + " dbr:bounce", "rep": rep,
            "case": {"job": cid, "impl": "dbr", "transfer": "bounce",
                     "iodepth": "8", "bs": "4k"},
            "summary": {"iops": 200.0, "bw_bytes": 2},
            "gpu_threads": [thread(i, s) for i, s in enumerate(starts)]}
os.makedirs(d)
json.dump({"meta": {"command": "synthetic"}, "title": "t", "records": [
    rec("apart", 1, (5000.0, 5010.0)), rec("apart", 2, (5000.0, 6000.0)),
    rec("close", 1, (5000.0, 5010.0)), rec("close", 2, (7000.0, 7010.0))]},
    open(os.path.join(d, "results.json"), "w"))
PY
"$perf" --from "$TMPD/windows" >"$TMPD/windows.out" 2>&1 || fail "--from windows: exit $?"
md=$TMPD/windows/results.md
grep -qF "**apart dbr:bounce: its threads did I/O together for only 0% of their time in repetition 2:" "$md" &&
	[ "$(grep -c 'did I/O together for only' "$md")" -eq 1 ] &&
	pass "threads one after another: that case and repetition named, the overlapping ones not" ||
	{ fail "threads one after another: want only apart's repetition 2 named"; sed -n '/not together/,$p' "$md"; }

# ---- real runs
if grep -q '^#define DBR_HAVE_HIP 1' "$BUILDDIR/config.h"; then
	use_hip_double
	export HIPDOUBLE_DEVICES=2 HIPDOUBLE_PCI=0000:04:00.0,0000:0a:00.0
	out=$TMPD/multi
	if DBR_GPU=hip DBR_GPU_IDS=0:1 DBR_NUMJOBS=4 DBR_TRANSFER=bounce \
		"$perf" --jobs multi-gpu --impl dbr --runtime 0.3 --repeat 2 \
		--target scratch:file --size 4m --out "$out" >"$TMPD/multi.out" 2>&1; then
		pass "multi-gpu.fio on 2 HIP double devices ran"
	else
		fail "multi-gpu.fio on 2 HIP double devices ran"
		tail -20 "$TMPD/multi.out"
	fi
	# the table's rows equal the records the engine wrote in that run
	if python3 - "$out" >"$TMPD/multi.check" 2>&1 <<'PY'; then
import json, os, re, statistics, sys
out = sys.argv[1]
res = json.load(open(os.path.join(out, "results.json")))
md = open(os.path.join(out, "results.md")).read()
assert len(res["records"]) == 2
for r in res["records"]:
    t = r["gpu_threads"]
    assert len(t) == 4 and sorted(x["dev"] for x in t) == [0, 0, 1, 1], t
    # the engine's bytes are fio's: its records add up to fio's total
    text = open(r["output"]).read()
    doc = json.loads(text[re.search(r"^\{", text, re.M).start():].rsplit("}", 1)[0] + "}")
    fio_bytes = sum(j[d]["io_bytes"] for j in doc["jobs"] for d in ("read", "write"))
    assert sum(x["read_bytes"] + x["write_bytes"] for x in t) == fio_bytes > 0
    files = [f for f in os.listdir(os.path.join(out, "runs")) if f.endswith(".gpu.jsonl")]
    assert len(files) == 2, files
for dev, pci in ((0, "0000:04:00.0"), (1, "0000:0a:00.0")):
    copies = statistics.median(sum(x["copies"] for x in r["gpu_threads"] if x["dev"] == dev)
                               for r in res["records"])
    row = "| multi-gpu dbr | hip %d | %s | bounce | 2 | 2 | " % (dev, pci)
    line = [l for l in md.splitlines() if l.startswith(row)]
    want = "%d" % copies if copies == int(copies) else "%.1f" % copies
    assert len(line) == 1 and line[0].endswith("| %s |" % want) and copies > 0, (line, copies)
    print(line[0])
assert os.path.exists(os.path.join(out, "gpu.svg"))
PY
		pass "per-GPU rows from the run's engine records: $(tr '\n' ' ' <"$TMPD/multi.check" | cut -c1-200)"
	else
		fail "per-GPU rows from the run's engine records"
		cat "$TMPD/multi.check"
		sed -n '/Per GPU/,$p' "$out/results.md"
	fi
else
	echo "note: built --without-hip: the 2-GPU run is left out"
fi

out=$TMPD/host
DBR_GPU=host DBR_GPU_IDS=0 DBR_NUMJOBS=2 DBR_TRANSFER=bounce \
	"$perf" --jobs multi-gpu --impl dbr --runtime 0.2 --target scratch:file \
	--size 4m --out "$out" >"$TMPD/host.out" 2>&1 || fail "gpu=host run: exit $?"
grep -q '"gpu_threads"' "$out/results.json" && ! grep -q "Per GPU" "$out/results.md" &&
	[ ! -e "$out/gpu.svg" ] &&
	pass "gpu=host (one device): records kept, no per-GPU table or plot" ||
	fail "gpu=host (one device): records kept, no per-GPU table or plot"

finish
