"""Results side of scripts/perf: aggregate repetitions, ratios between
implementations, Markdown/CSV tables, the per-GPU SVG plot. (The run plot
is perf_plot.py's; baselines and the judgement are perf_ci.py's.)

Stdlib only (Debian's python3).
"""
import csv
import io
import json
import statistics

METRICS = ("iops", "bw_bytes", "cpu_us_per_io", "run_cpu_us_per_io",
           "iowq_cpu_us_per_io", "iowq_workers", "clat_mean_us", "clat_p50_us", "clat_p99_us", "clat_p99.9_us",
           "lat_mean_us", "lat_p50_us", "lat_p99_us", "lat_p99.9_us")


def _median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def aggregate(records):
    """records: [{'id', 'case', 'rep', 'summary' | 'error'}] ->
    {id: {'case', 'n', 'reps': [summary], 'errors', median metrics,
    'iops_min', 'iops_max'}} in first-seen order."""
    out = {}
    for r in records:
        a = out.setdefault(r["id"], {"case": r["case"], "reps": [],
                                     "errors": []})
        if r.get("summary"):
            a["reps"].append(r["summary"])
        if r.get("error"):
            a["errors"].append(r["error"])
    for a in out.values():
        a["n"] = len(a["reps"])
        for m in METRICS:
            a[m] = _median([s.get(m) for s in a["reps"]])
        iops = [s["iops"] for s in a["reps"]]
        a["iops_min"] = min(iops) if iops else None
        a["iops_max"] = max(iops) if iops else None
    return out


def ratios(agg, reference="io_uring"):
    """For every case not on the reference implementation: IOPS of the
    median run over the reference's median on the same job/qd/bs, the spread
    of the per-repetition ratios (repetition i of each side ran back to
    back), and the CPU time per I/O of each side."""
    ref = {}
    for cid, a in agg.items():
        if a["case"]["impl"] == reference:
            ref[_peer_key(a["case"])] = cid
    out = []
    for cid, a in agg.items():
        c = a["case"]
        if c["impl"] == reference or _peer_key(c) not in ref:
            continue
        b = agg[ref[_peer_key(c)]]
        if not a["iops"] or not b["iops"]:
            continue
        pairs = [x["iops"] / y["iops"] for x, y in zip(a["reps"], b["reps"])
                 if y["iops"]]
        # whole-run CPU per I/O, the reference's over ours, pair by pair:
        # above 1 when this side spends less
        cpu = [y.get("run_cpu_us_per_io") / x.get("run_cpu_us_per_io")
               for x, y in zip(a["reps"], b["reps"])
               if x.get("run_cpu_us_per_io") and y.get("run_cpu_us_per_io")]
        out.append({"id": cid, "ref": ref[_peer_key(c)], "case": c,
                    "ratio": a["iops"] / b["iops"],
                    "ratio_min": min(pairs) if pairs else None,
                    "ratio_max": max(pairs) if pairs else None,
                    "n": len(pairs),
                    "cpu_us_per_io": a["cpu_us_per_io"],
                    "ref_cpu_us_per_io": b["cpu_us_per_io"],
                    "cpu_ratio": _median(cpu), "cpu_ratios": cpu})
    return out


def _peer_key(case):
    return (case["job"], case["iodepth"], case["bs"])


def _fmt(v, digits=1):
    if v is None:
        return "-"
    if isinstance(v, float):
        return "%.*f" % (digits, v)
    return str(v)


def fmt_iops(v):
    if v is None:
        return "-"
    return "%.1fk" % (v / 1e3) if v < 1e6 else "%.2fM" % (v / 1e6)


def _bw(v):
    return "-" if v is None else "%.0f" % (v / 2**20)


TABLE_COLUMNS = ("case", "n", "IOPS (median)", "IOPS min-max", "MiB/s",
                 "CPU us/IO", "io-wq us/IO", "lat mean us", "p50 us", "p99 us", "p99.9 us")


def table_rows(agg):
    for cid, a in agg.items():
        yield (cid, a["n"], fmt_iops(a["iops"]),
               "%s-%s" % (fmt_iops(a["iops_min"]), fmt_iops(a["iops_max"]))
               if a["n"] else "failed: " + "; ".join(a["errors"])[:80],
               _bw(a["bw_bytes"]), _fmt(a["cpu_us_per_io"], 2),
               _fmt(a["iowq_cpu_us_per_io"], 2), _fmt(a["lat_mean_us"]),
               _fmt(a["lat_p50_us"]),
               _fmt(a["lat_p99_us"]), _fmt(a["lat_p99.9_us"]))


def ratio_line(r):
    spread = ""
    if r["ratio_min"] is not None and r["n"] > 1:
        spread = " (per-repetition %.3f-%.3f, n=%d)" % (
            r["ratio_min"], r["ratio_max"], r["n"])
    cpu = ""
    if r["cpu_us_per_io"] and r["ref_cpu_us_per_io"]:
        cpu = "; CPU/IO %.2f vs %.2f us" % (r["cpu_us_per_io"],
                                            r["ref_cpu_us_per_io"])
    if r.get("cpu_ratio"):
        cpu += ("; whole-run CPU per I/O, the reference's over this: "
                "median %.3f (per-repetition %s)" % (
                    r["cpu_ratio"],
                    " ".join("%.3f" % c for c in r["cpu_ratios"])))
    return "%s / %s: IOPS ratio %.3f%s%s" % (r["id"], r["ref"], r["ratio"],
                                             spread, cpu)


# ------------------------------------------------------- threads together

TOGETHER_MIN = 0.9      # the engine's per-GPU line warns below it too


def together(threads):
    """The share of a thread's I/O time, on average, during which all of a
    run's threads (the engine's records, io_start_ms/io_end_ms) were doing
    I/O at once; None with fewer than two timed threads. fio adds its
    threads' rates up as if they ran together: well below 1 they did not
    (threads that ran one after another give 0), and the sum is no rate the
    device was driven at."""
    w = [(t["io_start_ms"], t["io_end_ms"]) for t in threads or ()
         if t.get("io_start_ms") is not None and t.get("io_end_ms") is not None
         and t["io_end_ms"] > t["io_start_ms"]]
    if len(w) < 2:
        return None
    mean = sum(e - s for s, e in w) / len(w)
    both = min(e for _, e in w) - max(s for s, _ in w)
    return max(both, 0.0) / mean


def apart(records):
    """{case id: [(rep, share)]} for the repetitions whose threads were
    together for under TOGETHER_MIN of their time."""
    out = {}
    for r in records:
        share = together(r.get("gpu_threads"))
        if share is not None and share < TOGETHER_MIN:
            out.setdefault(r["id"], []).append((r["rep"], share))
    return out


def apart_lines(records):
    return ["%s: its threads did I/O together for only %s of their time in "
            "repetition%s %s: the IOPS fio adds up there are no rate reached "
            "at once" % (cid, "/".join("%.0f%%" % (100 * s) for _, s in reps),
                         "s" if len(reps) > 1 else "",
                         ", ".join(str(n) for n, _ in reps))
            for cid, reps in apart(records).items()]


STEAL_MAX_PCT = 2.0     # CPU steal (percent of the machine's CPU time) named


def steal_named(pct):
    """Is a run's steal_pct (None: not read) one to name?"""
    return pct is not None and pct >= STEAL_MAX_PCT


def stolen(records):
    """{case id: [(rep, percent)]} for the repetitions in which a hypervisor
    took at least STEAL_MAX_PCT of the machine's CPU time (the record's
    steal_pct: scripts/perf reads /proc/stat around each run)."""
    out = {}
    for r in records:
        pct = (r.get("summary") or {}).get("steal_pct")
        if steal_named(pct):
            out.setdefault(r["id"], []).append((r["rep"], pct))
    return out


def steal_lines(records):
    return ["%s: the hypervisor ran other work for %s of this machine's CPU "
            "time in repetition%s %s: its rates dip with that, and its ratios "
            "say as much of the neighbours as of the engines" % (
                cid, "/".join("%.1f%%" % p for _, p in reps),
                "s" if len(reps) > 1 else "",
                ", ".join(str(n) for n, _ in reps))
            for cid, reps in stolen(records).items()]


# ----------------------------------------------------------------- per GPU

def _gpu_buckets(threads):
    """One repetition's engine records (one per fio thread) added up per
    GPU and path. Rates are each thread's own (its bytes or I/O over its
    runtime, as fio works out a job's), added up as fio's per-job figures
    add up."""
    out = {}
    for t in threads:
        if not t.get("gpu"):
            continue            # refused before it had a GPU
        # stonewalled groups ran one after the other: their rates do not add
        path = t["path"] + (" (group %d)" % t["group"] if t.get("group")
                            else "")
        b = out.setdefault((t["gpu"], t["dev"], path), {
            "pci": t.get("pci"), "threads": 0, "iops": 0.0, "bw_bytes": 0,
            "bytes": 0, "copies": 0})
        b["threads"] += 1
        for d in ("read", "write"):
            b["iops"] += t.get(d + "_iops", 0.0)
            b["bw_bytes"] += t.get(d + "_bw_bytes", 0)
            b["bytes"] += t.get(d + "_bytes", 0)
        b["copies"] += t.get("copies", 0)
    return out


def per_gpu(records):
    """{case id: [row]} for the cases whose engine records (gpu_threads)
    name more than one GPU; a row per GPU and path with its thread count
    and the median over repetitions of IOPS, bytes/s and copies."""
    reps = {}
    for r in records:
        if r.get("gpu_threads") and r.get("summary"):
            reps.setdefault(r["id"], []).append(_gpu_buckets(
                r["gpu_threads"]))
    out = {}
    for cid, runs in reps.items():
        keys = sorted({k for b in runs for k in b})
        if len({(g, d) for g, d, _ in keys}) < 2:
            continue
        rows = []
        for k in keys:
            vals = [b[k] for b in runs if k in b]
            rows.append({"gpu": k[0], "dev": k[1], "path": k[2],
                         "pci": vals[0]["pci"],
                         "threads": vals[0]["threads"], "n": len(vals),
                         "iops": _median([v["iops"] for v in vals]),
                         "bw_bytes": _median([v["bw_bytes"] for v in vals]),
                         "copies": _median([v["copies"] for v in vals])})
        out[cid] = rows
    return out


GPU_COLUMNS = ("case", "GPU", "PCI", "path", "threads", "n", "IOPS (median)",
               "GiB/s (median)", "GPU copies (median)")


def _count(v):
    """a count, or the median of an even number of them"""
    return "%d" % v if v == int(v) else "%.1f" % v


def gpu_rows(gpus):
    for cid, rows in gpus.items():
        for g in rows:
            yield (cid, "%s %d" % (g["gpu"], g["dev"]), g["pci"] or "-",
                   g["path"], g["threads"], g["n"], fmt_iops(g["iops"]),
                   "%.2f" % (g["bw_bytes"] / 2**30), _count(g["copies"]))


def markdown(agg, rats, meta, gpus=None, apart=None, steal=None):
    out = io.StringIO()
    out.write("# scripts/perf results\n\n")
    for k, v in meta.items():
        out.write("- %s: `%s`\n" % (k, v) if k == "command" else
                  "- %s: %s\n" % (k, v))
    out.write("\n| %s |\n|%s\n" % (" | ".join(TABLE_COLUMNS),
                                   "---|" * len(TABLE_COLUMNS)))
    for row in table_rows(agg):
        out.write("| %s |\n" % " | ".join(str(c) for c in row))
    out.write("\nLatency is fio's lat, slat + clat: from the io_u's start to "
              "its completion. fio's io_uring engine starts clat after the "
              "enter that submits; this engine at iodepth 1 submits in the "
              "enter that waits, so clat alone would compare unlike spans "
              "(results.json has both).\n")
    if rats:
        out.write("\n## Ratios (median IOPS over the reference's)\n\n")
        for r in rats:
            out.write("- %s\n" % ratio_line(r))
    if apart:
        out.write("\n## Threads not together (the engine's I/O windows)\n\n")
        for line in apart:
            out.write("- **%s**\n" % line)
    if steal:
        out.write("\n## CPU steal (a VM's CPUs lent elsewhere)\n\n")
        for line in steal:
            out.write("- **%s**\n" % line)
    if gpus:
        out.write("\n## Per GPU (cases on more than one GPU; plot: gpu.svg)"
                  "\n\n| %s |\n|%s\n" % (" | ".join(GPU_COLUMNS),
                                          "---|" * len(GPU_COLUMNS)))
        for row in gpu_rows(gpus):
            out.write("| %s |\n" % " | ".join(str(c) for c in row))
    return out.getvalue()


def write_csv(path, agg):
    dims = ("job", "impl", "transfer", "iodepth", "bs")
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(("id",) + dims + ("n",) + METRICS + ("iops_min",
                                                       "iops_max"))
        for cid, a in agg.items():
            w.writerow((cid,) + tuple(a["case"].get(d) for d in dims) +
                       (a["n"],) + tuple(a[m] for m in METRICS) +
                       (a["iops_min"], a["iops_max"]))


# ------------------------------------------------------------ GPU plot

def _esc(s):
    return (str(s).replace("&", "&amp;").replace("<", "&lt;")
            .replace(">", "&gt;"))


def _nice_max(v):
    if v <= 0:
        return 1.0
    mag = 10 ** len(str(int(v))) / 10
    for step in (1, 2, 2.5, 5, 10):
        if step * mag >= v:
            return step * mag
    return 10 * mag


GPU_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
               "#8c564b", "#e377c2", "#7f7f7f")


def svg_gpu_plot(gpus, title):
    """One bar per GPU and path of each multi-GPU case: median GiB/s, with
    IOPS, threads and copies at the bar's end; a colour per GPU ordinal."""
    rows = [(cid, g) for cid, gs in gpus.items() for g in gs]
    label_w, bar_w, row_h, top = 360, 420, 22, 58
    width = label_w + bar_w + 300
    height = top + row_h * len(rows) + 40
    xmax = _nice_max(max([g["bw_bytes"] / 2**30 for _, g in rows] + [0.001]))

    def xb(v):
        return label_w + bar_w * v / xmax

    s = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
         'font-family="sans-serif" font-size="12">' % (width, height),
         '<rect width="100%" height="100%" fill="white"/>',
         '<text x="10" y="20" font-size="15" font-weight="bold">%s: per GPU'
         '</text>' % _esc(title),
         '<text x="%d" y="44" font-weight="bold">GiB/s per GPU and path '
         '(median over repetitions)</text>' % label_w]
    y_end = top + row_h * len(rows)
    for i in range(5):
        v = xmax * i / 4
        s.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>'
                 % (xb(v), top - 4, xb(v), y_end))
        s.append('<text x="%.1f" y="%d" text-anchor="middle">%g</text>'
                 % (xb(v), y_end + 16, round(v, 3)))
    for i, (cid, g) in enumerate(rows):
        y = top + i * row_h
        gib = g["bw_bytes"] / 2**30
        s.append('<text x="%d" y="%d" text-anchor="end">%s</text>'
                 % (label_w - 8, y + 14, _esc("%s: %s %d %s" % (
                     cid, g["gpu"], g["dev"], g["path"]))))
        s.append('<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"/>'
                 % (label_w, y + 3, xb(gib) - label_w, row_h - 6,
                    GPU_COLOURS[g["dev"] % len(GPU_COLOURS)]))
        s.append('<text x="%.1f" y="%d">%s</text>' % (
            xb(gib) + 4, y + 15, _esc("%.2f GiB/s, %s IOPS, %d thread%s, "
                                      "%s copies" % (
                                          gib, fmt_iops(g["iops"]),
                                          g["threads"],
                                          "s" if g["threads"] != 1 else "",
                                          _count(g["copies"])))))
    s.append("</svg>")
    return "\n".join(s) + "\n"


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=1, sort_keys=True)
        f.write("\n")
