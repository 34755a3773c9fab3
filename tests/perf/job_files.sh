#!/usr/bin/env bash
# Every shipped job file (jobs/*.fio) runs through jobs/run as shipped, on a
# loop block device and on a file, gpu=host (DBR_GPU; jobs that name
# gpu=host already do), with jobs/run's defaults for everything else: the
# one change is runtime= cut to 500 ms (a job file's own settings win over
# fio's command line, so a copy of each file is run). Every job of every
# file must finish with err=0 and I/O done; the jobs that ask for
# transfer=p2p are refused instead, with the engine's one-line reason (a
# loop device or a file is no NVMe namespace), and the bounce job beside
# them still runs. Then jobs/run as a CI perf job uses it: json+ into a
# file that parses whole.
. "$(dirname "$0")/../lib.sh"

command -v python3 >/dev/null || skip "python3 not installed"

# In the sanitizer pass fio gets the ASan runtime through a wrapper,
# jobs/run's shell does not.
fio_cmd=$FIO
if [ -n "${DBR_ASAN_PRELOAD:-}" ]; then
	fio_cmd=$TMPD/fio-asan
	printf '#!/bin/sh\nLD_PRELOAD="%s${LD_PRELOAD:+:$LD_PRELOAD}" exec "%s" "$@"\n' \
		"$DBR_ASAN_PRELOAD" "$FIO" >"$fio_cmd"
	chmod +x "$fio_cmd"
fi
export FIO=$fio_cmd DBR_ENGINE=$ENGINE DBR_GPU=host DBR_DESTRUCTIVE=1

mkdir "$TMPD/jobs"
for f in "$SRCDIR"/jobs/*.fio; do
	sed -E 's/^([[:space:]]*runtime[[:space:]]*=).*/\1250ms/' "$f" >"$TMPD/jobs/${f##*/}"
done
[ "$(ls "$TMPD/jobs" | wc -l)" -gt 10 ] || die "no job files in $SRCDIR/jobs"

# run_all KIND TARGET [VAR=VALUE...]: every job file on TARGET, then one
# look at fio's JSON of each (check_runs)
run_all() {
	local kind=$1 target=$2 f out rc
	shift 2
	: >"$TMPD/runs"
	for f in "$TMPD"/jobs/*.fio; do
		out=$TMPD/${kind// /-}.${f##*/}.out
		rc=0
		env DBR_TARGET="$target" "$@" "$SRCDIR/jobs/run" "$f" \
			--output-format=json >"$out" 2>&1 || rc=$?
		printf '%s %s\n' "$rc" "$out" >>"$TMPD/runs"
	done
	if check_runs "$target" <"$TMPD/runs" >"$TMPD/check" 2>&1; then
		sed "s/^/[$TEST_NAME] $kind: /" "$TMPD/check"
		pass "every shipped job file ($(wc -l <"$TMPD/runs")) runs through jobs/run on the $kind $target"
	else
		fail "jobs/run on the $kind $target:"
		sed 's/^/    /' "$TMPD/check"
	fi
}

# check_runs TARGET, "RC OUT" lines on stdin: in fio's JSON in each OUT,
# every job err=0 with I/O done, but a transfer=p2p job: refused
# (EOPNOTSUPP), with the engine's line, and fio's exit status says so
check_runs() {
	python3 -c '
import os, sys
sys.path.insert(0, sys.argv[1])
import perf_fio
target, failed = sys.argv[2], 0
for line in sys.stdin.read().splitlines():
    rc, out = line.split(" ", 1)
    rc, bad = int(rc), []
    name = os.path.basename(out)[:-len(".out")].split(".", 1)[1]
    text = open(out).read()
    try:
        doc, notes = perf_fio.split_output(text)
    except perf_fio.FioOutputError as e:
        doc, notes = {"jobs": []}, []
        bad.append("%s (exit %d): %s" % (e, rc, "; ".join(
            [l for l in text.splitlines()
             if l.startswith(("fio:", "jobs/run"))][:3])))
    p2p = 0
    for j in doc["jobs"]:
        ios = j["read"]["total_ios"] + j["write"]["total_ios"]
        if "p2p" in (j.get("job options", {}).get("transfer"),
                     doc.get("global options", {}).get("transfer")):
            p2p += 1
            if j["error"] != 95:
                bad.append("%s: p2p not refused (error %d)" % (j["jobname"],
                                                               j["error"]))
        elif j["error"] or not ios:
            bad.append("%s: error %d, %d I/O" % (j["jobname"], j["error"],
                                                 ios))
    if p2p and not any(l.startswith("dmabuf_uring: transfer=p2p cannot run: ")
                       and target in l for l in notes):
        bad.append("no p2p refusal naming %s" % target)
    if doc["jobs"] and (rc != 0) != bool(p2p):
        bad.append("fio exit %d" % rc)
    if bad:
        failed += 1
        print("%s: FAILED: %s" % (name, "; ".join(bad)))
        continue
    n = len(doc["jobs"])
    print("%s: %d job%s, err=0%s" % (name, n, "s" if n > 1 else "",
                                     ", p2p refused" if p2p else ""))
sys.exit(1 if failed else 0)
' "$SRCDIR/scripts" "$1"
}

if dev=$(loop_dev 64M); then
	run_all "loop device" "$dev"
	# scripts/perf gives such a job the same slices (DBR_NUMJOBS=2: 50% each)
	rc=0
	DBR_NUMJOBS=2 DBR_GPU_IDS=0 "$SRCDIR/scripts/perf" --jobs multi-gpu \
		--target "$dev" --runtime 0.25 --out "$TMPD/perf-mg" >"$TMPD/perf-mg.out" 2>&1 || rc=$?
	[ "$rc" -eq 0 ] && grep -q "^offset_increment=50%$" "$TMPD"/perf-mg/runs/*.fio &&
		pass "scripts/perf --jobs multi-gpu on $dev, 2 threads: 50% slices each, exit 0" ||
		{ fail "scripts/perf --jobs multi-gpu on $dev (exit $rc)"; grep -E "FAILED|^scripts/perf:" "$TMPD/perf-mg.out"; }
else
	log "SKIP the loop device: losetup could not make one ($( [ "$(id -u)" -eq 0 ] && echo "no free loop device or no loop support" || echo "needs root"))"
fi
# 64 MiB for each thread's slice of multi-gpu.fio, and for the rest
run_all file "$TMPD/data.bin" DBR_SIZE=64m

# jobs/run's own refusal of a bad DBR_NUMJOBS, in one line, exit 2
rc=0
DBR_NUMJOBS=0 DBR_TARGET=$TMPD/data.bin "$SRCDIR/jobs/run" "$TMPD/jobs/multi-gpu.fio" \
	>"$TMPD/numjobs.out" 2>&1 || rc=$?
[ "$rc" -eq 2 ] && [ "$(cat "$TMPD/numjobs.out")" = "jobs/run: DBR_NUMJOBS=0: give a whole number above 0" ] &&
	pass "DBR_NUMJOBS=0: jobs/run refuses it in one line, exit 2" ||
	{ fail "DBR_NUMJOBS=0 (exit $rc)"; cat "$TMPD/numjobs.out"; }

# ---- jobs/run, as a CI perf job would use it: json+ into a file that parses
# whole (this fio's format), and stderr without a line of ours (json into a
# file: the engine says nothing, as fio says nothing of its own)
if DBR_TARGET=$TMPD/jobs-run.bin DBR_SIZE=4m \
	"$SRCDIR/jobs/run" "$SRCDIR/jobs/verify.fio" --output-format=json+ \
	--output="$TMPD/jobs-run.json" >"$TMPD/jobs-run.out" 2>"$TMPD/jobs-run.err" &&
	python3 - "$TMPD/jobs-run.json" "$fio_cmd" >"$TMPD/jobs-run.parse" 2>&1 <<'PY'
import json, subprocess, sys
doc = json.load(open(sys.argv[1]))       # the whole file
version = subprocess.run([sys.argv[2], "--version"], capture_output=True,
                         text=True).stdout.strip()
assert doc["fio version"] == version, (doc["fio version"], version)
assert doc["global options"]["ioengine"].startswith("external:"), doc["global options"]
names = [j["jobname"] for j in doc["jobs"]]
assert names == ["verify-seqwrite-1m", "verify-randwrite-4k", "verify-randrw-16k"], names
for j in doc["jobs"]:
    assert j["error"] == 0, (j["jobname"], j["error"])
    assert j["write"]["total_ios"] > 0 and "bins" in j["write"]["clat_ns"], j["jobname"]
PY
then
	! grep -q "^dmabuf_uring:" "$TMPD/jobs-run.err" &&
		pass "jobs/run jobs/verify.fio: json+ file parses whole, 3 jobs verified, no line of ours on stderr" ||
		{ fail "jobs/run: lines of ours on stderr with json+ into a file"; cat "$TMPD/jobs-run.err"; }
else
	fail "jobs/run jobs/verify.fio with json+ into a file"
	cat "$TMPD/jobs-run.parse" 2>/dev/null
	tail -n 5 "$TMPD/jobs-run.out" "$TMPD/jobs-run.err"
fi
finish
