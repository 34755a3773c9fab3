#!/usr/bin/env python3
"""The bounce-path table of scripts/gpu-proof bounce: one row per job, target
and thread count, from the results.json of the scripts/perf runs given.

Per row: this engine into GPU memory (impl dbr), fio's io_uring engine on
host memory and, where it ran, this engine on host memory (dbr-host), each as
min / median / max IOPS over the repetitions; the ratios of repetition i of
ours to repetition i of the reference (they ran back to back), as median and
minimum, since a run that falls into a slow mode is the defect to see; and
GPU copies per runtime copy call or copy kernel launch (median over
repetitions, and the lowest).

usage: bounce_table.py LABEL=RESULTS_DIR ...   (LABEL: the target)
"""
import json
import os
import statistics
import sys


def reps_by_impl(records):
    """{job: {impl: [(rep, iops, copies per call or None)]}}"""
    out = {}
    for r in records:
        s = r.get("summary")
        if not s or not s.get("iops"):
            continue
        threads = r.get("gpu_threads") or []
        copies = sum(t.get("copies", 0) for t in threads)
        # a copy kernel launch, or a pass to the resident kernel, sends
        # copies as a runtime copy call does
        calls = sum(t.get("copy_calls", 0) + t.get("copy_launches", 0) +
                    t.get("copy_passes", 0)
                    for t in threads)
        per_call = copies / calls if calls else None
        c = r["case"]
        out.setdefault(c["job"], {}).setdefault(c["impl"], []).append(
            (r["rep"], s["iops"], per_call))
    return out


def spread(values):
    return "%s / %s / %s" % (fmt(min(values)), fmt(statistics.median(values)),
                             fmt(max(values)))


def fmt(iops):
    return "%.2fM" % (iops / 1e6) if iops >= 1e6 else "%.1fk" % (iops / 1e3)


def pair_ratios(ours, ref):
    ref_by_rep = {rep: iops for rep, iops, _ in ref}
    return [iops / ref_by_rep[rep] for rep, iops, _ in ours
            if ref_by_rep.get(rep)]


def ratio_cell(ours, ref):
    r = pair_ratios(ours, ref) if ours and ref else []
    if not r:
        return "-"
    return "%.2f (min %.2f)" % (statistics.median(r), min(r))


def row(label, job, impls):
    ours = impls.get("dbr", [])
    fio = impls.get("io_uring", [])
    host = impls.get("dbr-host", [])
    per_call = [p for _, _, p in ours if p is not None]
    calls = ("%.1f (min %.1f)" % (statistics.median(per_call), min(per_call))
             if per_call else "-")
    return "| %s | %s | %d | %s | %s | %s | %s | %s |" % (
        label, job, len(ours), spread([i for _, i, _ in ours]) if ours else "-",
        spread([i for _, i, _ in fio]) if fio else "-", ratio_cell(ours, fio),
        ratio_cell(ours, host), calls)


def main(argv):
    print("| target | job | n | ours IOPS min / median / max | "
          "fio io_uring IOPS | ours / fio, median (min) | "
          "ours / gpu=host, median (min) | copies per runtime call or launch |")
    print("|---|---|---|---|---|---|---|---|")
    for arg in argv:
        label, _, path = arg.partition("=")
        try:
            with open(os.path.join(path, "results.json")) as f:
                records = json.load(f)["records"]
        except (OSError, ValueError) as e:
            print("| %s | (no results: %s) |" % (label, e))
            continue
        for job, impls in reps_by_impl(records).items():
            print(row(label, job, impls))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
