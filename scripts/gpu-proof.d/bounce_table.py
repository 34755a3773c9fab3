#!/usr/bin/env python3
"""The bounce-path table of scripts/gpu-proof bounce: one row per job, target
and thread count, from the results.json of the scripts/perf runs given.

Per row: this engine into GPU memory (impl dbr), fio's io_uring engine on
host memory and, where it ran, this engine on host memory (dbr-host), each as
min / median / max IOPS over the repetitions; the ratios of repetition i of
ours to repetition i of the reference (they ran back to back), as median and
minimum, since a run that falls into a slow mode is the defect to see, and
where this engine ran on host memory too, that run against fio's (the
engine without copies: a low minimum there as well is the machine's mode,
not the copies'); and
GPU copies per runtime copy call or copy kernel launch (median over
repetitions, and the lowest); and the copy stage: the time from an I/O's
copies being queued to their being seen done, and the job threads' time
blocked on copies, per copied I/O (medians over repetitions of the run's
sums; "-" for records from before the engine kept them). Where the results
directory has a ceiling.json (merge_reps.py: the ceiling loop after each
repetition), ours against the loop's read or write of the same repetition,
as median and minimum.

Where ours also ran with other options, as implementations of their own
('dbr+gpu_spin_us=0': PROCS_VARIANTS, BOUNCE_4K_IMPLS), a table of them: per
job and variant, its IOPS and, paired by repetition as above, its ratio to
fio's engine and to ours as is.

Where the runs had DBR_PROFILE=1 in their environment, a table: per
job and implementation, the job threads' time in the engine per I/O (fio's
queue, commit and getevents calls), and of it the io_uring_enter calls, the
copy passes sent and the waits on copies (each repetition's threads weighted
by the I/O they queued; the median over repetitions).

Last, the machine's CPU steal over the runs (scripts/perf's steal_pct):
the repetitions at perf_report.STEAL_MAX_PCT or more named, else the
largest figure; a VM whose CPUs ran other work moves both engines' rates.
Then whether each job's smallest ours / fio repetition is one of them: the
jobs whose minimum came with steal at that bar or more named (with the
ratio and the larger of the two runs' figures), else the largest steal in
any job's smallest repetition, so a minimum is not blamed on neighbours
that were not there.

usage: bounce_table.py LABEL=RESULTS_DIR ...   (LABEL: the target)
"""
import json
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import perf_report  # noqa: E402  (scripts/, beside this directory)

PROFILE = re.compile(
    r"profile \(DBR_PROFILE\), per I/O queued \((\d+)\): ([\d.]+) us in queue, "
    r"([\d.]+) in commit, ([\d.]+) in getevents \(of these, ([\d.]+) in "
    r"([\d.]+) io_uring_enter calls: .*; ([\d.]+) sending copy passes, "
    r"([\d.]+) waiting on copies\)")


def copy_stage(threads):
    """(us from queueing to done, us waited) per copied I/O, or None"""
    if not threads or any("copied_ios" not in t for t in threads):
        return None
    n = sum(t["copied_ios"] for t in threads)
    if not n:
        return None
    return (sum(t["copy_ns"] for t in threads) / 1e3 / n,
            sum(t["copy_wait_ns"] for t in threads) / 1e3 / n)


def reps_by_impl(records):
    """{job: {impl: [(rep, iops, copies per call or None, copy stage or None)]}}"""
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
            (r["rep"], s["iops"], per_call, copy_stage(threads)))
    return out


def profile_of(notes):
    """(engine us, enter us, enter calls, pass us, wait us) per I/O over the
    job threads' profile lines among notes, weighted by their I/O; or None"""
    rows = [m.groups() for m in map(PROFILE.search, notes or []) if m]
    n = sum(int(r[0]) for r in rows)
    if not n:
        return None

    def mean(f):
        return sum(int(r[0]) * f(r) for r in rows) / n
    return (mean(lambda r: float(r[1]) + float(r[2]) + float(r[3])),
            mean(lambda r: float(r[4])), mean(lambda r: float(r[5])),
            mean(lambda r: float(r[6])), mean(lambda r: float(r[7])))


def profile_rows(label, records):
    """the profile table's rows: one per job and implementation profiled"""
    by = {}
    for r in records:
        p = profile_of(r.get("notes"))
        if p:
            c = r["case"]
            by.setdefault((c["job"], c["impl"]), []).append(p)
    out = []
    for (job, impl), reps in by.items():
        med = [statistics.median(p[i] for p in reps) for i in range(5)]
        out.append("| %s | %s | %s | %d | %.2f | %.2f (%.2f) | %.2f | %.2f |" %
                   (label, job, impl, len(reps), *med))
    return out


def variant_rows(label, job, impls):
    """the variants' table rows: ours with other options, one per variant"""
    return ["| %s | %s | %s | %d | %s | %s | %s |" %
            (label, job, impl, len(reps), spread([i for _, i, _, _ in reps]),
             ratio_cell(reps, impls.get("io_uring")),
             ratio_cell(reps, impls.get("dbr")))
            for impl, reps in sorted(impls.items()) if "+" in impl]


def spread(values):
    return "%s / %s / %s" % (fmt(min(values)), fmt(statistics.median(values)),
                             fmt(max(values)))


def fmt(iops):
    return "%.2fM" % (iops / 1e6) if iops >= 1e6 else "%.1fk" % (iops / 1e3)


def pair_ratios(ours, ref):
    ref_by_rep = {rep: iops for rep, iops, _, _ in ref}
    return [iops / ref_by_rep[rep] for rep, iops, _, _ in ours
            if ref_by_rep.get(rep)]


def ratio_cell(ours, ref):
    r = pair_ratios(ours, ref) if ours and ref else []
    if not r:
        return "-"
    return "%.2f (min %.2f)" % (statistics.median(r), min(r))


def ceiling_cell(job, ours, ceil):
    """ours / the ceiling loop's run of the same repetition, for a 1 MiB
    read (seqread) or write (seqwrite) job"""
    kind = "read" if "seqread" in job else "write" if "seqwrite" in job else None
    loop = [(int(rep), iops, None, None)
            for rep, iops in ceil.get(kind, {}).items()] if kind else []
    return ratio_cell(ours, loop)


def row(label, job, impls, ceil):
    ours = impls.get("dbr", [])
    fio = impls.get("io_uring", [])
    host = impls.get("dbr-host", [])
    per_call = [p for _, _, p, _ in ours if p is not None]
    calls = ("%.1f (min %.1f)" % (statistics.median(per_call), min(per_call))
             if per_call else "-")
    stage = [c for _, _, _, c in ours if c is not None]
    copy = ("%.1f / %.2f" % (statistics.median(c[0] for c in stage),
                             statistics.median(c[1] for c in stage))
            if stage else "-")
    return "| %s | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s |" % (
        label, job, len(ours), spread([i for _, i, _, _ in ours]) if ours else "-",
        spread([i for _, i, _, _ in fio]) if fio else "-", ratio_cell(ours, fio),
        ratio_cell(ours, host), ratio_cell(host, fio),
        ceiling_cell(job, ours, ceil), calls, copy)


def steals(label, records):
    """(what, percent) for each repetition with a steal figure"""
    return [("%s %s %s rep %d" % (label, r["case"]["job"], r["case"]["impl"],
                                  r["rep"]), r["summary"]["steal_pct"])
            for r in records
            if (r.get("summary") or {}).get("steal_pct") is not None]


def print_steal(stolen):
    worst = ["%s: %.1f%%" % s for s in stolen
             if perf_report.steal_named(s[1])]
    if worst:
        print("\nCPU steal of %.0f%% or more (the VM's CPUs ran other work; "
              "those runs' rates dip): %s" % (perf_report.STEAL_MAX_PCT,
                                               ", ".join(worst)))
    elif stolen:
        print("\nCPU steal: at most %.1f%% in any run" %
              max(p for _, p in stolen))


def smallest_reps(label, records):
    """(what, ratio, steal) for each job's smallest ours / fio repetition
    where either run has a steal figure; steal is the larger of the two"""
    runs = {(r["case"]["job"], r["case"]["impl"], r["rep"]): r["summary"]
            for r in records if (r.get("summary") or {}).get("iops")}
    lowest = {}
    for (job, impl, rep), s in runs.items():
        ref = runs.get((job, "io_uring", rep))
        if impl == "dbr" and ref:
            pair = (s["iops"] / ref["iops"], rep)
            lowest[job] = min(lowest.get(job, pair), pair)
    out = []
    for job, (ratio, rep) in sorted(lowest.items()):
        figs = [runs[(job, i, rep)].get("steal_pct")
                for i in ("dbr", "io_uring")]
        figs = [p for p in figs if p is not None]
        if figs:
            out.append(("%s %s rep %d" % (label, job, rep), ratio, max(figs)))
    return out


def print_smallest(smallest):
    """whether each job's lowest ratio came with the neighbours' work"""
    hit = ["%s: %.2f, %.1f%%" % s for s in smallest
           if perf_report.steal_named(s[2])]
    if hit:
        print("Smallest ours / fio repetitions with CPU steal of %.0f%% or "
              "more (those minima say as much of the neighbours): %s" %
              (perf_report.STEAL_MAX_PCT, ", ".join(hit)))
    elif smallest:
        print("CPU steal in each job's smallest ours / fio repetition: at "
              "most %.1f%% (the minima are not the neighbours')" %
              max(p for _, _, p in smallest))


def main(argv):
    print("| target | job | n | ours IOPS min / median / max | "
          "fio io_uring IOPS | ours / fio, median (min) | "
          "ours / gpu=host, median (min) | gpu=host / fio, median (min) | "
          "ours / ceiling loop, median (min) | "
          "copies per runtime call or launch | "
          "copy stage per copied I/O: done after / waited, us |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    profiled, variants, stolen, smallest = [], [], [], []
    for arg in argv:
        label, _, path = arg.partition("=")
        try:
            with open(os.path.join(path, "results.json")) as f:
                records = json.load(f)["records"]
        except (OSError, ValueError) as e:
            print("| %s | (no results: %s) |" % (label, e))
            continue
        try:
            with open(os.path.join(path, "ceiling.json")) as f:
                ceil = json.load(f)
        except (OSError, ValueError):
            ceil = {}
        for job, impls in reps_by_impl(records).items():
            print(row(label, job, impls, ceil))
            variants += variant_rows(label, job, impls)
        profiled += profile_rows(label, records)
        stolen += steals(label, records)
        smallest += smallest_reps(label, records)
    if variants:
        print("\n| target | job | variant | n | IOPS min / median / max | "
              "variant / fio, median (min) | variant / ours, median (min) |")
        print("|---|---|---|---|---|---|---|")
        print("\n".join(variants))
    if profiled:
        print("\n| target | job | impl | n | in the engine per I/O, us | "
              "of it in io_uring_enter, us (calls) | sending copy passes, us | "
              "waiting on copies, us |")
        print("|---|---|---|---|---|---|---|---|")
        print("\n".join(profiled))
    print_steal(stolen)
    print_smallest(smallest)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
