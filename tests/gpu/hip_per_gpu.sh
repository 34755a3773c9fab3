#!/usr/bin/env bash
# Per-GPU results (gpu_stats_file and the "per GPU:" lines) with the HIP
# double's two devices, gpu_dev_ids=0:1, numjobs=4 on a real file, as job
# threads and as job processes, and with gpu=host: every thread's JSON line
# equals fio's own figures for that job in fio's --output-format=json (which
# must still parse whole), the per-GPU lines carry the right thread counts,
# bytes and copy counts (those of the per-thread lines), and bytes per GPU
# add up to fio's total.
. "$(dirname "$0")/../lib.sh"

command -v python3 >/dev/null || skip "python3 not installed"
use_hip_double
export HIPDOUBLE_DEVICES=2 HIPDOUBLE_PCI=0000:04:00.0,0000:0a:00.0

f=$(scratch_file)
job=(--name=a --filename="$f" --size=8m --transfer=bounce --direct=1 --rw=randrw
	--bs=16k --iodepth=4 --numjobs=4)

# check NAME GPU NR-GPUS: fio's JSON on stdout ($NAME.json), the engine's
# lines on stderr ($NAME.err), the records in $NAME.jsonl
check() {
	local name=$1 gpu=$2 ngpus=$3
	if python3 - "$TMPD/$name" "$gpu" "$ngpus" "$HIPDOUBLE_PCI" >"$TMPD/$name.check" 2>&1 <<'PY'; then
import collections, json, re, sys
base, gpu, ngpus, pcis = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4].split(",")
doc = json.load(open(base + ".json"))           # fio's stdout, whole
err = open(base + ".err").read()
recs = [json.loads(l) for l in open(base + ".jsonl")]
jobs = doc["jobs"]
assert len(jobs) == 4 and len(recs) == 4, (len(jobs), len(recs))
assert len({r["run"] for r in recs}) == 1, "one run id"
assert sorted(r["thread"] for r in recs) == [0, 1, 2, 3]

def fio_fig(j):
    return tuple((j[d]["io_bytes"], j[d]["total_ios"], j[d]["runtime"],
                  j[d]["bw_bytes"], round(j[d]["iops"], 3)) for d in ("read", "write"))
def rec_fig(r):
    return tuple((r[d + "_bytes"], r[d + "_ios"], r[d + "_runtime_ms"],
                  r[d + "_bw_bytes"], round(r[d + "_iops"], 3)) for d in ("read", "write"))
# fio's JSON does not say which clone a job is: the figures must match as sets
assert sorted(map(fio_fig, jobs)) == sorted(map(rec_fig, recs)), \
    (sorted(map(fio_fig, jobs)), sorted(map(rec_fig, recs)))
for r in recs:
    assert r["gpu"] == gpu and r["path"] == "bounce" and r["error"] == 0, r
    assert r["dev"] == (r["thread"] % 2 if ngpus == 2 else 0), r
    assert r["pci"] == (pcis[r["dev"]] if gpu == "hip" else None), r

# per-thread lines: "a thread N: ... C GPU copies in K runtime calls"
per_thread = {int(m.group(1)): (int(m.group(2)), int(m.group(3))) for m in re.finditer(
    r"^dmabuf_uring: a thread (\d+): .*?(\d+) GPU copies in (\d+) runtime calls", err, re.M)}
for r in recs:
    assert per_thread.get(r["thread"], (0, 0)) == (r["copies"], r["copy_calls"]), (r, per_thread)
assert (len(per_thread) == 4) == (gpu == "hip"), per_thread
# "... copies done L us after queueing (mean), W us waited on copies per
# copied I/O": the record's sums over the I/O copied, as the line prints them
timing = {int(m.group(1)): (m.group(2), m.group(3)) for m in re.finditer(
    r"^dmabuf_uring: a thread (\d+): .*copies done ([\d.]+) us after queueing \(mean\), "
    r"([\d.]+) us waited on copies per copied I/O", err, re.M)}
for r in recs:
    n = r["copied_ios"]
    if gpu != "hip":
        assert n == 0 and r["copy_ns"] == 0 and r["copy_wait_ns"] == 0, r
        continue
    assert 0 < n <= r["read_ios"] + r["write_ios"] and r["copy_ns"] > 0, r
    assert timing[r["thread"]] == ("%.1f" % (r["copy_ns"] / 1e3 / n),
                                   "%.2f" % (r["copy_wait_ns"] / 1e3 / n)), (r, timing)

lines = re.findall(r"^dmabuf_uring: per GPU: (.*)$", err, re.M)
assert len(lines) == ngpus, lines
total = 0
for line in lines:
    m = re.match(r"(\w+) (\d+)(?: \(([0-9a-f:.]+)\))? bounce: (\d+) threads?, read ([\d.]+) MiB in (\d+) I/O "
                 r"\(([\d.k]+) IOPS, [\d.]+ MiB/s\), write ([\d.]+) MiB in (\d+) I/O .*, "
                 r"(?:(\d+) GPU copies in (\d+) runtime calls|no GPU copies)"
                 # jobs this short start further apart than they run together
                 r"(?:; but its threads did I/O together for only \d+% of their time, .*)?$", line)
    assert m, line
    dev = int(m.group(2))
    mine = [r for r in recs if r["dev"] == dev]
    assert m.group(1) == gpu and int(m.group(4)) == len(mine) == 4 // ngpus, line
    assert m.group(3) == (pcis[dev] if gpu == "hip" else None), line
    rb, wb = (sum(r[d + "_bytes"] for r in mine) for d in ("read", "write"))
    assert m.group(5) == "%.2f" % (rb / 2**20) and m.group(8) == "%.2f" % (wb / 2**20), (line, rb, wb)
    assert int(m.group(6)) == sum(r["read_ios"] for r in mine), line
    copies = sum(per_thread.get(r["thread"], (0, 0))[0] for r in mine)
    assert int(m.group(10) or 0) == copies and (copies > 0) == (gpu == "hip"), (line, copies)
    total += rb + wb
fio_total = sum(j[d]["io_bytes"] for j in jobs for d in ("read", "write"))
assert total == fio_total > 0, (total, fio_total)
print("%d GPU(s), %d bytes = fio's total; %s" % (ngpus, total, " | ".join(lines)))
PY
		pass "$name: $(tail -1 "$TMPD/$name.check" | cut -c1-200)"
	else
		fail "$name"
		sed 's/^/    /' "$TMPD/$name.check" | tail -15
		grep dmabuf_uring "$TMPD/$name.err" | sed 's/^/    /'
	fi
}

for mode in thread process; do
	m=()
	[ $mode = thread ] && m=(--thread)
	for gpu in hip host; do
		name=$gpu-$mode ids=0:1 n=2
		[ $gpu = host ] && ids=0 n=1
		: >"$TMPD/$name.jsonl"
		dbr_fio "${job[@]}" "${m[@]}" --gpu=$gpu --gpu_dev_ids=$ids \
			--gpu_stats_file="$TMPD/$name.jsonl" --output-format=json \
			>"$TMPD/$name.json" 2>"$TMPD/$name.err" ||
			fail "$name: fio exit $?"
		check "$name" $gpu $n
	done
done

# normal output: the lines are with fio's on stdout; the file comes from
# the environment (what scripts/perf sets) when the option is not given
: >"$TMPD/env.jsonl"
DBR_GPU_STATS_FILE=$TMPD/env.jsonl dbr_fio "${job[@]}" --thread --gpu=hip \
	--gpu_dev_ids=0:1 >"$TMPD/normal.out" 2>&1
n=$(grep -c "^dmabuf_uring: per GPU: hip [01] (0000:0[4a]:00.0) bounce: 2 threads, read" "$TMPD/normal.out")
[ "$n" -eq 2 ] && [ "$(wc -l <"$TMPD/env.jsonl")" -eq 4 ] &&
	pass "normal output: two per-GPU lines; DBR_GPU_STATS_FILE got 4 records" ||
	{ fail "normal output: $n per-GPU lines, $(wc -l <"$TMPD/env.jsonl") records"; grep dmabuf "$TMPD/normal.out"; }
# the lines come before fio's report, and once
last=$(grep -n "per GPU:" "$TMPD/normal.out" | tail -1 | cut -d: -f1)
first=$(grep -n "Run status group" "$TMPD/normal.out" | head -1 | cut -d: -f1)
[ -n "$last" ] && [ -n "$first" ] && [ "$last" -lt "$first" ] &&
	pass "per-GPU lines come before fio's run status" ||
	fail "per-GPU lines (line $last) before fio's run status (line $first)"

# two job sections behind a stonewall: one summary at the end of the run, a
# line per group and GPU (the groups ran one after the other, so their rates
# do not add up), each with that group's one thread on the GPU
dbr_fio "${job[@]}" --numjobs=2 --gpu=hip --gpu_dev_ids=0:1 --name=b --stonewall \
	--filename="$f" --size=8m --transfer=bounce --direct=1 --rw=read --bs=64k \
	--numjobs=2 --gpu=hip --gpu_dev_ids=1:0 >"$TMPD/two.out" 2>&1
n=$(grep -cE "^dmabuf_uring: per GPU: group [01]: hip [01] .* bounce: 1 thread," "$TMPD/two.out")
[ "$n" -eq 4 ] && [ "$(grep -c "per GPU:" "$TMPD/two.out")" -eq 4 ] &&
	grep -q "per GPU: group 0: hip 0 .*, read .*, write " "$TMPD/two.out" &&
	grep -q "per GPU: group 1: hip 1 .*, read 8.00 MiB in 128 I/O" "$TMPD/two.out" &&
	! grep -q "per GPU: group 1: .*, write " "$TMPD/two.out" &&
	pass "two jobs, stonewalled: one summary for the run, a line per group and GPU" ||
	{ fail "two jobs, stonewalled: $n lines"; grep dmabuf "$TMPD/two.out"; }

# a device that only threads 1 and 3 would use stops the whole job (every
# thread checks every entry): no thread runs, no thread is counted on a GPU
dbr_fio "${job[@]}" --gpu=hip --gpu_dev_ids=0:5 >"$TMPD/half.out" 2>&1 &&
	fail "gpu_dev_ids=0:5 with 2 devices ran"
! grep -q "per GPU:" "$TMPD/half.out" && ! grep -q "err= 0" "$TMPD/half.out" &&
	pass "threads 1,3's device 5 missing: no thread ran, no per-GPU line" ||
	{ fail "half refused: a thread ran or was counted"; grep dmabuf "$TMPD/half.out"; }
dbr_fio "${job[@]}" --gpu=hip --gpu_dev_ids=5 >"$TMPD/refused.out" 2>&1 &&
	fail "gpu_dev_ids=5 with 2 devices ran"
grep -q "device 5 does not exist" "$TMPD/refused.out" &&
	! grep -q "per GPU:" "$TMPD/refused.out" &&
	pass "a run refused at start prints no per-GPU line" ||
	{ fail "a refused run: per-GPU lines or no refusal"; grep dmabuf "$TMPD/refused.out"; }

finish
