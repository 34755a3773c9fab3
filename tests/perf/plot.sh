#!/usr/bin/env bash
# The run plot, drawn by the SVG writer and (where importable) matplotlib
# from the same description: the ratio to fio's io_uring in a panel of its
# own, a panel per block size (IOPS at 4k, GiB/s at 1 MiB, never one axis
# for both), a title that says what is plotted (paths, block sizes, target,
# machine, repetitions) rather than job-file paths, every title line inside
# the page, a legend of only what is drawn, and the same panel titles from
# both writers.
. "$(dirname "$0")/../lib.sh"

command -v python3 >/dev/null || skip "python3 not installed"
export PYTHONPATH=$SRCDIR/scripts:$SRCDIR/tests/perf
export FIO DBR_ENGINE=$ENGINE

python3 - "$TMPD" <<'PY'
import sys, synth
recs = []
for rep in (1, 2, 3):
    for cid, iops, bs in (("randread-4k dbr:bounce", 1.2e6, 4096),
                          ("randread-4k io_uring", 1.6e6, 4096),
                          ("seqread-1m dbr:bounce", 30e3, 1 << 20),
                          ("seqread-1m io_uring", 40e3, 1 << 20)):
        recs.append(synth.record(cid, rep, iops * (1 + 0.01 * rep), bs))
synth.write(sys.argv[1] + "/run", recs, title="dmabuf_uring: " + ", ".join(
    "/tmp/gpu-proof/jobs/bounce-seqread-1m-%dt.fio" % t for t in (1, 4, 8))
    + " (/dev/shm/dbr-bounce.bin, 3 reps)",
    meta={"command": "synthetic", "date": "2026-01-01T00:00:00",
          "target": "/dev/shm/dbr-bounce.bin: file in tmpfs (/dev/shm)",
          "gpu": "NVIDIA H200", "cpus": 16, "kernel": "6.18.44-test",
          "repetitions": 3, "runtime per case": "1s"})
PY
check='
import sys, xml.etree.ElementTree as ET
ns = "{http://www.w3.org/2000/svg}"
root = ET.parse(sys.argv[1]).getroot()
width = float(root.get("width").rstrip("pt"))
texts = [t for t in root.iter(ns + "text")]
words = " ".join("".join(t.itertext()) for t in texts)
for want in ("IOPS over io_uring", "bs=4k: IOPS", "bs=1m: GiB/s",
             "completion latency"):
    assert want in words, (want, words[:300])
for gone in ("libcufile",):            # not run: not in the legend
    assert gone not in words, gone
print(" ".join(sorted(w for w in ("dbr", "io_uring") if w in words)))
'
if "$SRCDIR/scripts/perf" --from "$TMPD/run" --plot svg >"$TMPD/svg.log" 2>&1 &&
	python3 -c "$check" "$TMPD/run/plot.svg" >"$TMPD/svg.check" 2>&1 &&
	python3 - "$TMPD/run/plot.svg" <<'PY' >>"$TMPD/svg.check" 2>&1
import sys, xml.etree.ElementTree as ET
ns = "{http://www.w3.org/2000/svg}"
root = ET.parse(sys.argv[1]).getroot()
width = float(root.get("width"))
titles = [t for t in root.iter(ns + "text") if t.get("font-size") == "15"]
assert len(titles) >= 2, "the long title is wrapped"
for t in titles:     # bold 15 px sans-serif: at most 0.62 em a character
    assert 10 + len(t.text) * 0.62 * 15 <= width, (t.text, width)
title = " ".join(t.text for t in titles)
for want in ("dmabuf_uring bounce vs fio io_uring", "bs=4k, bs=1m",
             "a file in /dev/shm", "NVIDIA H200, 16 CPUs", "3 repetitions of 1s"):
    assert want in title, (want, title)    # what is plotted, where, how often
for gone in (".fio", "/tmp/", "dbr-bounce.bin"):
    assert gone not in title, (gone, title)  # no job or scratch file paths
bars = [r for r in root.iter(ns + "rect") if r.get("height") == "14"]
assert len(bars) == 2 + 2 + 2, len(bars)      # ratio panel + 4k + 1m
PY
then
	pass "SVG writer: ratio, 4k IOPS, 1m GiB/s and latency panels; the title says what is plotted and fits; legend: $(head -1 "$TMPD/svg.check")"
else
	fail "SVG writer"
	cat "$TMPD/svg.log" "$TMPD/svg.check"
fi

mpl=
for cand in python3 /usr/bin/python3; do
	"$cand" -c 'import matplotlib' 2>/dev/null && { mpl=$cand; break; }
done
if [ -z "$mpl" ]; then
	echo "skip - no python3 here has matplotlib: its writer is not drawn"
	finish
	exit
fi
mkdir "$TMPD/mpl" && cp "$TMPD/run/results.json" "$TMPD/mpl/"
"$mpl" "$SRCDIR/scripts/perf" --from "$TMPD/mpl" >"$TMPD/mpl.log" 2>&1 &&
	grep -q "(plot by matplotlib)" "$TMPD/mpl.log" &&
	"$mpl" -c "$check" "$TMPD/mpl/plot.svg" >"$TMPD/mpl.check" 2>&1 &&
	pass "matplotlib writer ($mpl): the same panels from the same data" ||
	{ fail "matplotlib writer"; cat "$TMPD/mpl.log" "$TMPD/mpl.check"; }
finish
