#!/usr/bin/env bash
# scripts/perf itself: one real fio run (this engine and fio's io_uring on a
# scratch file) whose fio JSON+ the runner must read back exactly, then the
# report, baseline and regression paths on those results (--from, no fio),
# a failing case, a config file, and fio client/server on loopback.
# (jobs/run and the shipped job files: job_files.sh)
# No timing is judged here: figures are printed, never pass/fail.
. "$(dirname "$0")/../lib.sh"

command -v python3 >/dev/null || skip "python3 not installed"
perf=$SRCDIR/scripts/perf
export FIO DBR_ENGINE=$ENGINE

# ---- one real run: 2 implementations x 2 iodepths x 2 repetitions, with
# the three CI outputs (JUnit, Markdown summary, the results database)
out=$TMPD/run
if "$perf" --jobs overhead-4k-randread --impl dbr,io_uring --iodepth 1,4 \
	--repeat 2 --runtime 0.3 --target scratch:file --size 16m \
	--out "$out" --save-baseline "$TMPD/base.json" --db "$TMPD/perf.sqlite" \
	--junit "$TMPD/run.xml" --summary "$TMPD/run.md" \
	>"$TMPD/run.out" 2>&1; then
	pass "a 2x2 matrix with 2 repetitions ran"
else
	fail "a 2x2 matrix with 2 repetitions ran"
	tail -20 "$TMPD/run.out"
	finish
	exit 1
fi
for f in results.md results.csv results.json plot.svg; do
	[ -s "$out/$f" ] && pass "wrote $f" || fail "wrote $f"
done
grep -q '^\[ *8/8 ' "$TMPD/run.out" && pass "progress counts 8 runs" ||
	fail "progress counts 8 runs"
grep -q 'overhead-4k-randread dbr qd=4 / overhead-4k-randread io_uring qd=4: IOPS ratio [0-9.]*' \
	"$TMPD/run.out" && pass "prints the ratio to fio's io_uring" ||
	fail "prints the ratio to fio's io_uring"
grep -q '<svg' "$out/plot.svg" && grep -q '</svg>' "$out/plot.svg" &&
	pass "plot is a complete SVG" || fail "plot is a complete SVG"
if python3 - "$TMPD" "$(git -C "$SRCDIR" rev-parse HEAD 2>/dev/null)" \
	>"$TMPD/ci.out" 2>&1 <<'PY'; then
import json, sqlite3, sys, xml.etree.ElementTree as ET
d, head = sys.argv[1:]
root = ET.parse(d + "/run.xml").getroot()
(suite,) = root.findall("testsuite")
cases = suite.findall("testcase")
assert [c.get("name") for c in cases] == [
    "overhead-4k-randread %s qd=%s" % (i, q) for q in ("1", "4")
    for i in ("dbr", "io_uring")], [c.get("name") for c in cases]
assert suite.get("tests") == "4" and suite.get("failures") == "0" and \
    suite.get("errors") == "0", suite.attrib
assert all(float(c.get("time")) > 0 for c in cases)
md = open(d + "/run.md").read()
assert md.startswith("## dmabuf_uring: overhead-4k-randread"), md[:80]
assert "| overhead-4k-randread dbr qd=4 | 2 | " in md, md
db = sqlite3.connect(d + "/perf.sqlite")
(run,) = db.execute("SELECT git_commit, machine, kernel, fio_version, "
                    "command FROM runs").fetchall()
assert run[0] == (head or None) and run[1] and run[2] and \
    run[3].startswith("fio-"), run
assert db.execute("SELECT count(*) FROM reps").fetchone()[0] == 8
opts = db.execute("SELECT options FROM cases WHERE case_id = ?",
                  ("overhead-4k-randread io_uring qd=4",)).fetchone()[0]
assert "ioengine=io_uring" in opts and "iodepth=4" in opts, opts
print("ok")
PY
	pass "the run wrote all three CI outputs: JUnit (4 testcases), summary, database (8 repetitions, commit, versions, job options)"
else
	fail "the run's CI outputs (JUnit, summary, database)"
	cat "$TMPD/ci.out"
fi

# the runner's figures must be fio's own: read each saved fio output here
# independently and compare (IOPS, I/O count, p99 from fio's percentiles)
if python3 - "$out" <<'PY' >"$TMPD/parse.out" 2>&1; then
import csv, json, os, re, sys
out = sys.argv[1]
res = json.load(open(os.path.join(out, "results.json")))
assert len(res["records"]) == 8, len(res["records"])
for r in res["records"]:
    text = open(r["output"]).read()
    doc = json.loads(text[re.search(r"^\{", text, re.M).start():].rsplit("}", 1)[0] + "}")
    (job,) = doc["jobs"]
    s = r["summary"]
    assert job["job options"]["ioengine"] in ("io_uring",) or \
        job["job options"]["ioengine"].startswith("external:"), job["job options"]
    assert abs(s["iops"] - job["read"]["iops"]) < 1e-6, (s["iops"], job["read"]["iops"])
    assert s["ios"] == job["read"]["total_ios"] > 0
    # p99 from merged bins vs fio's own p99 (fio reports the bin value too)
    assert s["clat_p99_us"] * 1000 == job["read"]["clat_ns"]["percentile"]["99.000000"], \
        (s["clat_p99_us"], job["read"]["clat_ns"]["percentile"]["99.000000"])
    assert s["clat_p50_us"] <= s["clat_p99_us"] <= s["clat_p99.9_us"]
    # total latency (lat_percentiles=1, which scripts/perf sets): fio's own
    # p99, and never below clat's
    assert s["lat_p99_us"] * 1000 == job["read"]["lat_ns"]["percentile"]["99.000000"], \
        (s["lat_p99_us"], job["read"]["lat_ns"]["percentile"]["99.000000"])
    assert s["lat_mean_us"] >= s["clat_mean_us"], (s["lat_mean_us"], s["clat_mean_us"])
    assert s["cpu_us_per_io"] > 0
    # the machine's CPU steal over the run, read from /proc/stat
    assert s["steal_pct"] is not None and 0 <= s["steal_pct"] <= 100, s["steal_pct"]
rows = list(csv.DictReader(open(os.path.join(out, "results.csv"))))
assert [r["id"] for r in rows] == [
    "overhead-4k-randread %s qd=%s" % (i, q) for q in ("1", "4")
    for i in ("dbr", "io_uring")], [r["id"] for r in rows]
assert all(r["n"] == "2" for r in rows)
print("ok")
PY
	pass "summaries equal fio's own JSON+ figures (IOPS, I/Os, clat and lat p99)"
else
	fail "summaries equal fio's own JSON+ figures"
	cat "$TMPD/parse.out"
fi
grep -q "ioengine=io_uring" "$out"/runs/*io_uring_qd_4.rep1.fio &&
	grep -q "fixedbufs=1" "$out"/runs/*io_uring_qd_4.rep1.fio &&
	! grep -Eq "^(gpu|transfer)=" "$out"/runs/*io_uring_qd_4.rep1.fio &&
	pass "the io_uring case runs with fixedbufs, without this engine's options" ||
	fail "the io_uring case runs with fixedbufs, without this engine's options"

# ---- baselines, from the stored results (no fio)
"$perf" --from "$out" --baseline "$TMPD/base.json" >"$TMPD/same.out" 2>&1
rc=$?
[ "$rc" -eq 0 ] && grep -q "no regression" "$TMPD/same.out" &&
	pass "same results against their own baseline: exit 0" ||
	{ fail "same results against their own baseline: exit 0 (got $rc)"; tail "$TMPD/same.out"; }

# a baseline 25% faster on one case: with 2 repetitions a side no rank
# test can tell, and the run says so; a medians-only (version 1) baseline
# is judged by the tolerance alone and names the case with the amount
python3 - "$TMPD/base.json" "$TMPD/fast.json" "$TMPD/fast-v1.json" <<'PY'
import json, sys
b = json.load(open(sys.argv[1]))
c = b["cases"]["overhead-4k-randread dbr qd=4"]
c["iops"] = c["iops"] / 0.75
for r in c["reps"]:
    r["iops"] = r["iops"] / 0.75
json.dump(b, open(sys.argv[2], "w"))
b["version"] = 1
for c in b["cases"].values():
    del c["reps"]
json.dump(b, open(sys.argv[3], "w"))
PY
"$perf" --from "$out" --baseline "$TMPD/fast.json" --tolerance 10% >"$TMPD/noisy.out" 2>&1
rc=$?
[ "$rc" -eq 0 ] && grep -q "^  overhead-4k-randread dbr qd=4: IOPS .*n=2 vs 2: too noisy to tell" "$TMPD/noisy.out" &&
	pass "2 repetitions a side: too noisy to tell, said, exit 0" ||
	{ fail "2 repetitions a side: too noisy to tell (got $rc)"; cat "$TMPD/noisy.out"; }
"$perf" --from "$out" --baseline "$TMPD/fast-v1.json" --tolerance 10% >"$TMPD/reg.out" 2>&1
rc=$?
[ "$rc" -eq 3 ] && pass "a regression exits 3" || fail "a regression exits 3 (got $rc)"
grep -q "^REGRESSION" "$TMPD/reg.out" &&
	grep -Eq "^  overhead-4k-randread dbr qd=4: REGRESSION; IOPS .* \(-25\.0%\): medians only" "$TMPD/reg.out" &&
	[ "$(grep -c '^  overhead.*: REGRESSION' "$TMPD/reg.out")" -eq 2 ] &&
	[ "$(grep -c '^  overhead' "$TMPD/reg.out")" -eq 5 ] &&
	pass "names the one regressed case and by how much: $(grep -m1 '^  overhead.*REGRESSION' "$TMPD/reg.out")" ||
	{ fail "names the regressed case and by how much"; cat "$TMPD/reg.out"; }
"$perf" --from "$out" --baseline "$TMPD/fast-v1.json" --tolerance 30% >"$TMPD/tol.out" 2>&1
rc=$?
[ "$rc" -eq 0 ] && pass "within the tolerance (30% > 25%): exit 0" ||
	fail "within the tolerance: exit 0 (got $rc)"

# ---- a case that fails is reported, the run exits 1
"$perf" --jobs overhead-4k-randread --impl dbr --transfer p2p --runtime 0.2 \
	--target scratch:file --size 4m --out "$TMPD/p2p" >"$TMPD/p2p.out" 2>&1
rc=$?
[ "$rc" -eq 1 ] && grep -q "FAILED: .*p2p" "$TMPD/p2p.out" &&
	pass "a failing case (p2p on a file) exits 1 with the engine's reason" ||
	{ fail "a failing case exits 1 with the engine's reason (got $rc)"; tail -5 "$TMPD/p2p.out"; }

# ---- a config file describes the matrix (dry run: commands only)
cat >"$TMPD/perf.ini" <<INI
[perf]
jobs = randread-like
impl = dbr, io_uring
transfer = bounce, auto
iodepth = 1, 16
bs = 4k, 64k
repeat = 2
INI
cp "$SRCDIR/jobs/overhead-4k-randread.fio" "$TMPD/randread-like.fio"
sed -i "s|^jobs = .*|jobs = $TMPD/randread-like.fio|" "$TMPD/perf.ini"
"$perf" --config "$TMPD/perf.ini" --target scratch:file --dry-run \
	--out "$TMPD/dry" >"$TMPD/dry.out" 2>&1
# (2 transfers + io_uring) x 2 qd x 2 bs x 2 repetitions
n=$(grep -c -- "--output-format=json+" "$TMPD/dry.out")
[ "$n" -eq 24 ] && pass "config file: 3 x 2 x 2 cases x 2 repetitions = 24 runs" ||
	fail "config file: want 24 runs, got $n"

# ---- two settings of the engine as two implementations: dbr+key=value
"$perf" --jobs overhead-4k-randread --impl dbr,dbr+gpu_watch_cq=1+gpu_spin_us=5 \
	--target scratch:file --dry-run --out "$TMPD/var" >"$TMPD/var.out" 2>&1
plain=$(ls "$TMPD"/var/runs/*dbr.rep1.fio 2>/dev/null | head -1)
variant=$(ls "$TMPD"/var/runs/*gpu_watch_cq*rep1.fio 2>/dev/null | head -1)
if [ -n "$plain" ] && [ -n "$variant" ] &&
	grep -q '^gpu_watch_cq=1$' "$variant" && grep -q '^gpu_spin_us=5$' "$variant" &&
	! grep -q gpu_watch_cq "$plain"; then
	pass "dbr+gpu_watch_cq=1+gpu_spin_us=5: its job file has both options, plain dbr's has neither"
else
	fail "dbr+option variant: want job files with and without the options"
	ls "$TMPD/var/runs" 2>&1 | head -5; tail -3 "$TMPD/var.out"
fi

# ---- the CI matrix file (jobs/ci-perf.ini): 2 jobs x 2 engines x 2
# iodepths x 5 repetitions
"$perf" --config "$SRCDIR/jobs/ci-perf.ini" --target scratch:file --dry-run \
	--out "$TMPD/ci-dry" >"$TMPD/ci-dry.out" 2>&1
n=$(grep -c -- "--output-format=json+" "$TMPD/ci-dry.out")
[ "$n" -eq 40 ] && pass "jobs/ci-perf.ini: 2 x 2 x 2 cases x 5 repetitions = 40 runs" ||
	{ fail "jobs/ci-perf.ini: want 40 runs, got $n"; tail -3 "$TMPD/ci-dry.out"; }

# ---- fio client/server on loopback: the JSON has client_stats
port=$((20000 + RANDOM % 20000))
run_fio --server=ip:127.0.0.1,$port --daemonize="$TMPD/server.pid" >/dev/null 2>&1 &&
	at_exit 'kill $(cat "$TMPD/server.pid") 2>/dev/null'
sleep 1
if [ -s "$TMPD/server.pid" ]; then
	"$perf" --jobs overhead-4k-randread --impl dbr --runtime 0.3 \
		--target scratch:file --size 16m \
		--hosts "ip:127.0.0.1,$port" --out "$TMPD/cs" >"$TMPD/cs.out" 2>&1
	rc=$?
	[ "$rc" -eq 0 ] && grep -q '"hosts": \[' "$TMPD/cs/results.json" &&
		grep -q "hosts: ip:127.0.0.1,$port" "$TMPD/cs/results.md" &&
		python3 -c "
import json,sys; r=json.load(open('$TMPD/cs/results.json'))['records'][0]['summary']
assert r['ios'] > 0 and r['hosts'] != ['local'], r
assert r['steal_pct'] is None, r" &&
		pass "client/server run through --hosts (fio's client_stats parsed; no local CPU steal for it)" ||
		{ fail "client/server run through --hosts (exit $rc)"; tail -8 "$TMPD/cs.out"; }
else
	fail "fio --server did not start"
fi
# ---- fio's io_uring engine gets none of this engine's own options: every
# option in the engine's table that fio's io_uring engine does not know
# (fio --enghelp=io_uring) is one the runner drops for it
"$FIO" --enghelp=io_uring 2>/dev/null | awk 'NF { print $1 }' >"$TMPD/iouring-opts"
if python3 - "$SRCDIR" "$TMPD/iouring-opts" >"$TMPD/opts.out" 2>&1 <<'PY'; then
import re, sys
src, iou = sys.argv[1:]
sys.path.insert(0, src + "/scripts")
import perf_fio
ours = set(re.findall(r'\.name\s*=\s*"([a-z_0-9]+)"', open(src + "/engine/fio/fio_engine.c").read()))
known = set(open(iou).read().split())
assert known and "registerfiles" in known, known
missing = sorted(ours - known - perf_fio.DBR_ONLY_OPTIONS)
assert not missing, "not dropped for fio's io_uring engine: %s" % missing
print(len(ours - known))
PY
	pass "the runner drops all $(cat "$TMPD/opts.out") of the engine's own options for fio's io_uring engine"
else
	fail "engine options passed to fio's io_uring engine: $(tail -1 "$TMPD/opts.out")"
fi
finish
