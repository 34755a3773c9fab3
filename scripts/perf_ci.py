"""What a CI system shows of a scripts/perf run: the judgement of every case
against its baseline, a JUnit XML report and a Markdown summary.

Baselines come in three kinds, all turned into the repetitions of each case
(so every case is judged by perf_stats with n on both sides):
  - a baseline file written by --save-baseline (version 2 keeps every
    repetition; a version 1 file has medians only, and its cases are judged
    by the tolerance alone, which the report says);
  - a results directory (or its results.json) of an earlier run;
  - db:last:N, the last N runs of this machine stored in --db.

JUnit: one testsuite, a testcase per case; a regression is a <failure>
whose message names the case, the ratio, its interval and the p-value; a
case whose fio runs all failed is an <error>; "too noisy to tell" and "not
in the baseline" are <skipped> with the reason, so neither passes in
silence. The element and attribute set is the one Jenkins' and GitLab's
parsers read (testsuites > testsuite > testcase > failure|error|skipped,
system-out).

Nothing here prints.
"""
import json
import os
import socket
import xml.etree.ElementTree as ET

import perf_stats

BASELINE_VERSION = 2


class BaselineError(Exception):
    pass


# ------------------------------------------------------- run facts

def _out(cmd, cwd=None):
    """A command's first output line, or None (absent, failing, slow)."""
    import subprocess
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=20,
                           cwd=cwd)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = r.stdout.strip().splitlines()
    return lines[0].strip() if r.returncode == 0 and lines else None


def run_facts(top, fio, machine):
    """What a stored run must say it ran on: the engine's commit (and
    whether the tree had changes beside it), the machine's name, fio's
    version, the GPU and its driver where a vendor tool says."""
    facts = {"machine": machine, "fio_version": _out([fio, "--version"])}
    commit = _out(["git", "-C", top, "rev-parse", "HEAD"])
    if commit:
        facts["git_commit"] = commit
        facts["git_dirty"] = int(bool(_out(
            ["git", "-C", top, "status", "--porcelain",
             "--untracked-files=no"])))
    nv = _out(["nvidia-smi", "--query-gpu=name,driver_version",
               "--format=csv,noheader"])
    if nv:
        name, _, driver = nv.rpartition(",")
        facts["gpu"], facts["gpu_driver"] = name.strip(), driver.strip()
    return facts


# --------------------------------------------------------- baselines

def baseline_doc(agg, meta):
    """A baseline file: medians (as version 1 had them) and every
    repetition's figures, so later runs can be judged with ranks."""
    import datetime
    import perf_report
    cases = {}
    for cid, a in agg.items():
        if not a["n"]:
            continue
        c = {m: a[m] for m in perf_report.METRICS}
        c["reps"] = [{m: s.get(m) for m in perf_report.METRICS}
                     for s in a["reps"]]
        cases[cid] = c
    return {"version": BASELINE_VERSION,
            "created": datetime.datetime.now().isoformat(timespec="seconds"),
            "meta": meta, "cases": cases}


def load_baseline(spec, db=None, machine=None, before=None, case_ids=()):
    """{case id: {'reps': [summary] or None, 'medians': {...}}} and a
    description of where it came from. BaselineError, naming spec and
    what is wrong, for anything else (nothing is judged from half a
    document)."""
    if spec.startswith("db:"):
        return _from_db(spec, db, machine, before, case_ids)
    path = spec
    if os.path.isdir(path):
        path = os.path.join(path, "results.json")
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        raise BaselineError("%s: %s" % (spec, getattr(e, "strerror", None)
                                        or e))
    if isinstance(doc, dict) and "records" in doc:  # a results.json
        import perf_report
        check_results(doc, path)
        agg = perf_report.aggregate(doc["records"])
        return ({cid: {"reps": a["reps"], "medians": a}
                 for cid, a in agg.items() if a["n"]},
                "the results in %s" % path)
    if not isinstance(doc, dict) or "cases" not in doc:
        raise BaselineError("%s: neither a baseline (--save-baseline) nor "
                            "a results.json" % spec)
    version = doc.get("version", 1)
    if not isinstance(version, int) or version < 1:
        raise BaselineError("%s: \"version\": %s is not a baseline version"
                            % (spec, json.dumps(version)))
    if version > BASELINE_VERSION:
        raise BaselineError("%s: baseline version %s is newer than this "
                            "scripts/perf's %d" % (spec, version,
                                                   BASELINE_VERSION))
    cases = doc["cases"]
    if not isinstance(cases, dict):
        raise BaselineError("%s: \"cases\" is %s, not an object of case "
                            "figures" % (spec, _shown(cases)))
    for cid, c in cases.items():
        where = "%s: case %r" % (spec, cid)
        _check_figures(where, c)
        reps = c.get("reps")
        if reps is not None and not isinstance(reps, list):
            raise BaselineError("%s: \"reps\" is %s, not a list of "
                                "repetitions" % (where, _shown(reps)))
        for i, r in enumerate(reps or [], 1):
            _check_figures("%s, repetition %d" % (where, i), r)
    return ({cid: {"reps": c.get("reps"), "medians": c}
             for cid, c in cases.items()}, spec)


def check_results(doc, path):
    """A results.json (scripts/perf's own, or --from's) whole enough to
    report and judge: BaselineError, naming path and the part, if not."""
    if not isinstance(doc, dict) or not isinstance(doc.get("records"),
                                                    list):
        raise BaselineError("%s: no \"records\" list: not a scripts/perf "
                            "results.json" % path)
    if not isinstance(doc.get("meta", {}), dict):
        raise BaselineError("%s: \"meta\" is %s, not an object" % (
            path, _shown(doc["meta"])))
    for i, r in enumerate(doc["records"], 1):
        where = "%s: record %d" % (path, i)
        if not isinstance(r, dict) or not isinstance(r.get("id"), str) or \
                not isinstance(r.get("case"), dict):
            raise BaselineError("%s: %s, not a record (an object with "
                                "\"id\" and \"case\")" % (where, _shown(r)))
        if r.get("summary") is not None:
            _check_figures(where, r["summary"], need_iops=True)


def _check_figures(where, figures, need_iops=False):
    """One case's or repetition's figures: an object whose metrics are
    numbers (or null)."""
    import perf_report
    if not isinstance(figures, dict):
        raise BaselineError("%s: %s where its figures should be (an object "
                            "such as {\"iops\": 1000.0})" % (
                                where, _shown(figures)))
    for m in perf_report.METRICS:
        v = figures.get(m)
        if v is not None and (isinstance(v, bool) or
                              not isinstance(v, (int, float))):
            raise BaselineError("%s: %s is %s, not a number" % (
                where, m, _shown(v)))
    if need_iops and figures.get("iops") is None:
        raise BaselineError("%s: no iops figure" % where)


def _shown(value):
    """A value as the JSON file has it, cut short."""
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _from_db(spec, db, machine, before, case_ids):
    import perf_db
    kind, _, n = spec[3:].partition(":")
    if kind != "last" or not n.isdigit() or int(n) < 1:
        raise BaselineError("%s: the form is db:last:N (N >= 1 stored "
                            "runs)" % spec)
    if db is None:
        raise BaselineError("%s needs --db FILE" % spec)
    got = perf_db.baseline_reps(db, machine, case_ids, int(n), before)
    runs = sorted({r for g in got.values() for r in g["runs"]})
    return ({cid: {"reps": g["reps"], "medians": None}
             for cid, g in got.items()},
            "the last %s stored run%s of %s (run id%s %s)" % (
                n, "s" if n != "1" else "", machine,
                "s" if len(runs) != 1 else "",
                ", ".join(map(str, runs)) or "none"))


# ------------------------------------------------------------- judge

def _medians_only(a, b, tolerance, lat_tolerance):
    """A version 1 baseline: the fixed tolerance on the medians, as
    scripts/perf judged before it kept repetitions."""
    out = []
    if b.get("iops") and a["iops"]:
        ratio = a["iops"] / b["iops"]
        out.append(("iops", {"verdict": "regression" if ratio < 1 - tolerance
                             else "unchanged", "ratio": ratio,
                             "method": "medians only", "was": b["iops"],
                             "now": a["iops"], "n": a["n"], "n_base": 1}))
    p99 = "clat_p99_us"
    if lat_tolerance is not None and b.get(p99) and a.get(p99):
        ratio = a[p99] / b[p99]
        out.append((p99, {"verdict": "regression" if ratio > 1 +
                          lat_tolerance else "unchanged", "ratio": ratio,
                          "method": "medians only", "was": b[p99],
                          "now": a[p99], "n": a["n"], "n_base": 1}))
    return out


def _ranked(a, b, tolerance, lat_tolerance, alpha):
    out = []
    j = perf_stats.judge([s.get("iops") for s in a["reps"]],
                         [s.get("iops") for s in b["reps"]], tolerance,
                         alpha)
    j.update(was=_median([s.get("iops") for s in b["reps"]]), now=a["iops"])
    out.append(("iops", j))
    if lat_tolerance is not None:
        key = "clat_p99_us"
        j = perf_stats.judge([s.get(key) for s in a["reps"]],
                             [s.get(key) for s in b["reps"]], lat_tolerance,
                             alpha, higher_is_better=False)
        j.update(was=_median([s.get(key) for s in b["reps"]]), now=a[key])
        out.append((key, j))
    return out


def _median(values):
    import statistics
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


RANK = {"failed": 0, "regression": 1, "noisy": 2, "no-baseline": 3,
        "improvement": 4, "unchanged": 5}


def judge_all(agg, base, tolerance, lat_tolerance=None, alpha=0.05):
    """{case id: {'verdict', 'metrics': [(metric, judgement)]}} for every
    case run now; the case's verdict is its worst metric's."""
    out = {}
    for cid, a in agg.items():
        b = base.get(cid)
        if not a["n"]:
            metrics = [("iops", {"verdict": "failed", "n": 0,
                                 "n_base": len((b or {}).get("reps") or [])})]
        elif b is None:
            metrics = [("iops", {"verdict": "no-baseline", "n": a["n"],
                                 "n_base": 0})]
        elif b.get("reps"):
            metrics = _ranked(a, b, tolerance, lat_tolerance, alpha)
        else:
            metrics = _medians_only(a, b["medians"], tolerance,
                                    lat_tolerance)
        verdict = min((j["verdict"] for _, j in metrics), key=RANK.get,
                      default="no-baseline")
        out[cid] = {"verdict": verdict, "metrics": metrics,
                    "in_baseline": b is not None}
    return out


def metric_name(metric):
    return {"iops": "IOPS", "clat_p99_us": "p99"}.get(metric, metric)


def _fmt_val(metric, v):
    if v is None:
        return "-"
    if metric == "iops":
        return "%.1fk" % (v / 1e3) if v < 1e6 else "%.2fM" % (v / 1e6)
    return "%.1f us" % v


def metric_line(metric, j):
    """'IOPS 1.00M -> 0.90M: ratio 0.900 [0.891, 0.910] (97% CI), p=0.0079
    (exact), n=5 vs 5' and the verdict's reason."""
    name = metric_name(metric)
    if j["verdict"] == "failed":
        return "%s: every repetition failed" % name
    if j["verdict"] == "no-baseline":
        return "%s: not in the baseline" % name
    head = "%s %s -> %s" % (name, _fmt_val(metric, j.get("was")),
                            _fmt_val(metric, j.get("now")))
    if j.get("method") == "medians only":
        return ("%s (%+.1f%%): medians only (the baseline has no "
                "repetitions), judged by the tolerance alone" % (
                    head, (j["ratio"] - 1) * 100))
    return "%s: %s" % (head, perf_stats.describe(j, ""))


def verdict_word(v):
    return {"regression": "REGRESSION", "improvement": "faster",
            "unchanged": "no change beyond noise and tolerance",
            "noisy": "too noisy to tell", "failed": "FAILED",
            "no-baseline": "not in the baseline"}[v]


def case_line(cid, result):
    """The case, its verdict, and each metric's figures (a noisy metric's
    line says why it cannot tell by itself)."""
    v = result["verdict"]
    if v in ("no-baseline", "failed"):
        return "%s: %s" % (cid, verdict_word(v))
    lines = "; ".join(metric_line(m, j) for m, j in result["metrics"])
    return "%s: %s" % (cid, lines if v == "noisy" else
                       "%s; %s" % (verdict_word(v), lines))


def regressions(results):
    return [cid for cid, r in results.items()
            if r["verdict"] == "regression" or
            (r["verdict"] == "failed" and r["in_baseline"])]


# ------------------------------------------------------------ JUnit

def _case_figures(a):
    import perf_report
    rows = ["%s=%s" % (k, perf_report._fmt(a.get(k), 2)) for k in
            ("iops", "bw_bytes", "cpu_us_per_io", "clat_p99_us")]
    reps = ", ".join(perf_report.fmt_iops(s.get("iops")) for s in a["reps"])
    return "n=%d; medians: %s; IOPS per repetition: %s" % (
        a["n"], " ".join(rows), reps or "-")


def junit(agg, results, meta, title, tolerance, wall=None):
    """The JUnit XML document (bytes) for this run; results may be None
    (no baseline given: a case passes when fio ran it)."""
    wall = wall or {}
    suite = ET.Element("testsuite", name=title, hostname=meta.get(
        "machine") or socket.gethostname(), timestamp=meta.get("date", ""))
    props = ET.SubElement(suite, "properties")
    for k, v in meta.items():
        ET.SubElement(props, "property", name=str(k), value=str(v))
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for cid, a in agg.items():
        counts["tests"] += 1
        tc = ET.SubElement(suite, "testcase", name=cid,
                           classname="perf." + a["case"]["job"],
                           time="%.3f" % wall.get(cid, 0.0))
        r = (results or {}).get(cid)
        kind, msg = _junit_outcome(cid, a, r, tolerance)
        if kind:
            counts[{"failure": "failures", "error": "errors",
                    "skipped": "skipped"}[kind]] += 1
            el = ET.SubElement(tc, kind, message=msg)
            if kind != "skipped":
                el.set("type", "regression" if kind == "failure" else "fio")
                el.text = msg + ("\n" + "\n".join(a["errors"])
                                 if a["errors"] else "")
        ET.SubElement(tc, "system-out").text = _case_figures(a)
    total = sum(float(t.get("time")) for t in suite.iter("testcase"))
    for k, v in counts.items():
        suite.set(k, str(v))
    suite.set("time", "%.3f" % total)
    root = ET.Element("testsuites", name="scripts/perf", time="%.3f" % total,
                      **{k: str(v) for k, v in counts.items()})
    root.append(suite)
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n"


def _junit_outcome(cid, a, r, tolerance):
    """(element or None, message) for one case."""
    if not a["n"]:
        return "error", "%s: every fio run failed: %s" % (
            cid, "; ".join(a["errors"])[:500])
    if r is None:
        return None, ""
    if r["verdict"] == "regression":
        bad = [(m, j) for m, j in r["metrics"] if j["verdict"] == "regression"]
        return "failure", "%s: regression beyond the %.1f%% tolerance: %s" % (
            cid, tolerance * 100, "; ".join(metric_line(m, j)
                                            for m, j in bad))
    if r["verdict"] in ("noisy", "no-baseline"):
        return "skipped", case_line(cid, r)
    return None, ""


# ----------------------------------------------------------- summary

def _summary_cells(r):
    """(ratio [interval], p, verdict) cells of one case's table row; one
    line per metric judged."""
    if r is None:
        return "-", "-", "-"
    ratios, ps = [], []
    for m, j in r["metrics"]:
        if j.get("ratio") is None:
            continue
        name = "" if m == "iops" else metric_name(m) + " "
        if j.get("low") is not None:
            ratios.append("%s%.3f [%.3f, %.3f]" % (name, j["ratio"], j["low"],
                                                   j["high"]))
            ps.append("%s (%d/%d)" % (perf_stats.fmt_p(j["p"]), j["n"],
                                      j["n_base"]))
        else:
            ratios.append("%s%.3f" % (name, j["ratio"]))
            ps.append("medians only")
    verdict = verdict_word(r["verdict"])
    if r["verdict"] == "noisy":
        needed = max(j.get("needed") or 0 for _, j in r["metrics"])
        verdict += " (needs >= %d repetitions per side)" % needed
    return ("<br>".join(ratios) or "-", "<br>".join(ps) or "-",
            "**%s**" % verdict if r["verdict"] == "regression" else verdict)


def _bar(ratio, width=24):
    """A text bar for ratio (1.0 at three quarters of width)."""
    n = max(0, min(width, int(round(ratio * width * 0.75))))
    return "\u2588" * n + " " * (width - n)


def summary(agg, rats, results, meta, title, baseline_desc, tolerance,
            plot_name="plot.svg", plot_url=None):
    """Markdown for $GITHUB_STEP_SUMMARY or a merge-request comment: the
    outcome first, the table, the ratios as a text chart (which renders
    everywhere, where an image of the job's own may not), the plot's
    name among the artifacts (and the image itself where plot_url says
    where CI serves it), and the run's details folded away."""
    import perf_report
    out = ["## %s" % title, ""]
    if results is not None:
        tally = {}
        for r in results.values():
            tally[r["verdict"]] = tally.get(r["verdict"], 0) + 1
        regs = regressions(results)
        out.append("**%s** against %s (tolerance %.1f%%; %s)" % (
            "%d regression%s" % (len(regs), "s" if len(regs) != 1 else "")
            if regs else "No regression", baseline_desc, tolerance * 100,
            ", ".join("%d %s" % (n, verdict_word(v)) for v, n in
                      sorted(tally.items(), key=lambda kv: RANK[kv[0]]))))
        out.append("")
    out.append("| case | n | IOPS (median) | min-max | p99 us | vs baseline "
               "| p (n now/base) | verdict |")
    out.append("|---|---|---|---|---|---|---|---|")
    for cid, a in agg.items():
        r = (results or {}).get(cid)
        ratio, p, verdict = _summary_cells(r)
        if not a["n"]:
            verdict = "FAILED: " + "; ".join(a["errors"])[:200]
        out.append("| %s | %d | %s | %s | %s | %s | %s | %s |" % (
            cid, a["n"], perf_report.fmt_iops(a["iops"]),
            "%s-%s" % (perf_report.fmt_iops(a["iops_min"]),
                       perf_report.fmt_iops(a["iops_max"])) if a["n"] else "-",
            perf_report._fmt(a["clat_p99_us"]), ratio, p,
            verdict.replace("|", "/")))
    if rats:
        out += ["", "IOPS over the reference engine's, same run "
                "(median; per-repetition min-max):", "", "```"]
        w = max(len(r["id"]) for r in rats)
        for r in rats:
            out.append("%-*s %s%s %.3f (%s-%s)" % (
                w, r["id"], _bar(r["ratio"]), ">" if r["ratio"] > 4 / 3.0
                else " ", r["ratio"],
                perf_report._fmt(r["ratio_min"], 3),
                perf_report._fmt(r["ratio_max"], 3)))
        out.append("```")
    out.append("")
    if plot_url:                # where CI serves the artifact (GitLab)
        out += ["![%s](%s)" % (title.replace("]", ")"), plot_url), ""]
    out += ["Plot: `%s` in the job's artifacts." % plot_name, "",
            "<details><summary>run details</summary>", ""]
    for k, v in meta.items():
        out.append("- %s: %s" % (k, ("`%s`" % v) if k == "command" else v))
    out += ["", "</details>", ""]
    return "\n".join(out)
