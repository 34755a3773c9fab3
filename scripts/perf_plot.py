"""Plots of scripts/perf: a run's figures and a case's history.

Each plot is first described as data (panels of rows, or a trend of
points) and then drawn by one of two writers from that same data: with
matplotlib where it is importable (Debian's python3-matplotlib), else with
the SVG writer here (stdlib only, for bare GPU hosts). Both draw the same
panels, titles wrapped to the figure's width and a legend of only the
series drawn.

A run's plot puts no two scales on one axis: the ratio of each case to
the reference engine (the figure a regression run is about) in one panel,
then one panel per block size (IOPS for small blocks, GiB/s from 128 KiB),
then completion-latency percentiles on a log axis. Whiskers are min-max
over the repetitions.
"""
import math
import os
import textwrap

IMPL_COLOURS = {"dbr": "#1f77b4", "dbr-host": "#17becf",
                "io_uring": "#ff7f0e", "libcufile": "#2ca02c",
                "libcufile-posix": "#98df8a"}
PCT_STYLE = (("lat_p50_us", "p50", "#444444"),
             ("lat_p99_us", "p99", "#d62728"),
             ("lat_p99.9_us", "p99.9", "#9467bd"))
LARGE_BS = 128 << 10            # from here a panel shows bandwidth
WIDTH = 960                     # SVG width in px; matplotlib: WIDTH / 100 in


def have_matplotlib():
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def _colour(series):
    for key, _, c in PCT_STYLE:
        if series == key:
            return c
    return IMPL_COLOURS.get(series.split(":")[0], "#7f7f7f")


def _series_name(series):
    for key, name, _ in PCT_STYLE:
        if series == key:
            return name
    return series


# --------------------------------------------------------- run plot data

def _block_size(a):
    """The case's block size in bytes: the matrix's bs, else what fio
    moved per I/O (bytes/s over IOPS), which is the job file's bs."""
    bs = a["case"].get("bs")
    if bs:
        units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
        s = str(bs).lower().rstrip("ib")
        try:
            return int(float(s[:-1]) * units[s[-1]]) if s[-1] in units \
                else int(s)
        except (ValueError, KeyError):
            return None
    if a.get("iops") and a.get("bw_bytes"):
        return int(round(a["bw_bytes"] / a["iops"]))
    return None


def _bs_name(b):
    if b is None:
        return "bs unknown"
    for unit, shift in (("m", 20), ("k", 10)):
        if b >= 1 << shift and b % (1 << shift) == 0:
            return "bs=%d%s" % (b >> shift, unit)
    p = 1 << max(0, round(math.log2(b)))   # a mix of sizes: the nearest 2^n
    return "bs~%s" % (_bs_name(p)[3:])


def _ratio_panel(rats, reference):
    rows = [{"label": r["id"], "value": r["ratio"], "lo": r["ratio_min"],
             "hi": r["ratio_max"], "series": r["case"]["impl"],
             "text": "x%.3f" % r["ratio"]} for r in rats]
    return {"kind": "bars", "rows": rows, "ref": 1.0, "unit": "ratio",
            "title": "IOPS over %s's in the same run (median; whisker: "
                     "min-max of per-repetition ratios)" % reference}


def _size_panels(agg):
    groups = {}
    for cid, a in agg.items():
        groups.setdefault(_block_size(a), []).append((cid, a))
    panels = []
    for b in sorted(groups, key=lambda v: (v is None, v or 0)):
        large = b is not None and b >= LARGE_BS
        rows = []
        for cid, a in groups[b]:
            if large:
                vals = [s["bw_bytes"] / 2**30 for s in a["reps"]
                        if s.get("bw_bytes")]
                med = a["bw_bytes"] / 2**30 if a.get("bw_bytes") else None
                text = "%.2f GiB/s" % med if med is not None else "failed"
            else:
                vals = [s["iops"] for s in a["reps"] if s.get("iops")]
                med = a.get("iops")
                text = _fmt_iops(med) if med is not None else "failed"
            rows.append({"label": cid, "value": med if a["n"] else None,
                         "lo": min(vals) if vals else None,
                         "hi": max(vals) if vals else None,
                         "series": a["case"]["impl"], "text": text})
        panels.append({"kind": "bars", "rows": rows, "ref": None,
                       "unit": "GiB/s" if large else "IOPS",
                       "title": "%s: %s (median; whisker: min-max over "
                                "repetitions)" % (_bs_name(b), "GiB/s" if
                                                  large else "IOPS")})
    return panels


def _latency_panel(agg):
    rows = []
    for cid, a in agg.items():
        pts = [(key, a[key]) for key, _, _ in PCT_STYLE if a.get(key)]
        rows.append({"label": cid, "points": pts})
    if not any(r["points"] for r in rows):
        return None
    return {"kind": "dots", "rows": rows, "log": True, "unit": "us",
            "title": "completion latency, us (log; median over "
                     "repetitions)"}


def run_plot(agg, rats, title, reference="io_uring"):
    """The run plot's description: {'title', 'panels'}."""
    panels = []
    if rats:
        panels.append(_ratio_panel(rats, reference))
    panels += _size_panels(agg)
    lat = _latency_panel(agg)
    if lat:
        panels.append(lat)
    return {"title": title, "panels": panels}


IMPL_NAMES = {"dbr": "dmabuf_uring", "dbr-host": "dmabuf_uring gpu=host",
              "io_uring": "fio io_uring", "libcufile": "fio libcufile",
              "libcufile-posix": "fio libcufile (posix)"}


def _impl_name(case):
    name = IMPL_NAMES.get(case["impl"], case["impl"])
    return name + " " + case["transfer"] if case.get("transfer") else name


def _target_name(target):
    """A target as a storage engineer names it, not the run's scratch
    paths: scripts/perf describes its scratch targets after a ': '."""
    path, _, what = target.partition(": ")
    if path.startswith("/dev/shm/"):
        return "a file in /dev/shm"
    if "loop device" in what:
        return "%s (loop device over tmpfs)" % path
    if "zram" in what:
        return "%s (zram)" % path
    return path


def plot_title(agg, meta):
    """What a run's plot shows: the paths side by side, the block sizes,
    the target, the machine and the repetitions. The job files' names
    label the rows; their paths say nothing here."""
    paths = []
    for a in agg.values():
        name = _impl_name(a["case"])
        if name not in paths:
            paths.append(name)
    sizes = sorted({_block_size(a) for a in agg.values()},
                   key=lambda b: (b is None, b or 0))
    what = "%s, %s" % (" vs ".join(paths) or "dmabuf_uring",
                       ", ".join(_bs_name(b) for b in sizes))
    if meta.get("target"):
        what += " on " + _target_name(meta["target"])
    machine = [m for m in (meta.get("gpu"),
                           meta.get("cpus") and "%s CPUs" % meta["cpus"],
                           meta.get("kernel") and "kernel " + meta["kernel"])
               if m]
    reps = meta.get("repetitions") or max([a["n"] for a in agg.values()]
                                          or [0])
    runtime = meta.get("runtime per case", "")
    when = "%d repetition%s" % (reps, "s" if reps != 1 else "")
    if runtime[:1].isdigit():
        when += " of " + runtime
    if meta.get("date"):
        when += ", " + meta["date"][:10]
    return "; ".join([what] + ([", ".join(machine)] if machine else []) +
                     [when])


def _fmt_iops(v):
    if v is None:
        return "-"
    return "%.1fk" % (v / 1e3) if v < 1e6 else "%.2fM" % (v / 1e6)


# ------------------------------------------------------ trend plot data

def trend_plot(case, points, metric="IOPS"):
    """A case's history: points are {'label' (commit, date), 'value'
    (median), 'lo', 'hi' (min-max), 'values' (every repetition)}."""
    return {"title": "%s: %s per run over commits (median; whisker: "
                     "min-max; dots: repetitions)" % (case, metric),
            "unit": metric, "points": points}


# ---------------------------------------------------------- SVG writer

def _esc(s):
    return (str(s).replace("&", "&amp;").replace("<", "&lt;")
            .replace(">", "&gt;"))


def _wrap(text, px, font_px, bold=False):
    """Lines of text that fit px at font_px (sans-serif: about 0.55 em a
    character, 0.62 em bold)."""
    em = 0.62 if bold else 0.55
    return textwrap.wrap(text, max(10, int(px / (em * font_px)))) or [""]


def _nice_max(v):
    if v <= 0:
        return 1.0
    mag = 10 ** math.floor(math.log10(v))
    for step in (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10):
        if step * mag >= v:
            return step * mag
    return 10 * mag


def _tick(v, unit):
    if unit == "IOPS":
        return _fmt_iops(v) if v else "0"
    return "%g" % round(v, 3)


def _legend(series, x, y, s):
    for name in series:
        c = _colour(name)
        s.append('<rect x="%d" y="%d" width="12" height="12" fill="%s"/>'
                 '<text x="%d" y="%d">%s</text>' % (
                     x, y - 10, c, x + 16, y, _esc(_series_name(name))))
        x += 22 + int(7 * len(_series_name(name))) + 18
    return x


class _Svg:
    """Panels stacked down one page: label column, plot area, value text."""
    label_w, plot_w, row_h = 330, 440, 20

    def __init__(self, title):
        self.s, self.y = [], 0
        self.series = []
        for line in _wrap(title, WIDTH - 20, 15, True):
            self.y += 20
            self.s.append('<text x="10" y="%d" font-size="15" '
                          'font-weight="bold">%s</text>' % (self.y,
                                                             _esc(line)))
        self.y += 12

    def _seen(self, series):
        if series not in self.series:
            self.series.append(series)

    def heading(self, text):
        for line in _wrap(text, WIDTH - 20, 12, True):
            self.y += 16
            self.s.append('<text x="10" y="%d" font-weight="bold">%s</text>'
                          % (self.y, _esc(line)))
        self.y += 8

    def axis(self, ticks, top, bottom):
        for x, label in ticks:
            self.s.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" '
                          'stroke="#ddd"/>' % (x, top, x, bottom))
            self.s.append('<text x="%.1f" y="%d" text-anchor="middle">%s'
                          '</text>' % (x, bottom + 14, _esc(label)))

    def bars(self, p):
        self.heading(p["title"])
        rows = p["rows"]
        hi = max([r["hi"] or r["value"] or 0 for r in rows] + [p["ref"] or 0])
        xmax = _nice_max(hi * 1.02)
        x0 = self.label_w

        def xv(v):
            return x0 + self.plot_w * v / xmax

        top, bottom = self.y, self.y + self.row_h * len(rows)
        self.axis([(xv(xmax * i / 4), _tick(xmax * i / 4, p["unit"]))
                   for i in range(5)], top, bottom)
        for i, r in enumerate(rows):
            y = top + i * self.row_h
            self.s.append('<text x="%d" y="%d" text-anchor="end">%s</text>'
                          % (x0 - 8, y + 14, _esc(r["label"])))
            if r["value"] is None:
                self.s.append('<text x="%d" y="%d" fill="#d62728">failed'
                              '</text>' % (x0 + 4, y + 14))
                continue
            self._seen(r["series"])
            self.s.append('<rect x="%d" y="%d" width="%.1f" height="%d" '
                          'fill="%s"/>' % (x0, y + 3, xv(r["value"]) - x0,
                                           self.row_h - 6,
                                           _colour(r["series"])))
            end = xv(r["value"])
            if r["lo"] is not None and r["hi"] is not None:
                mid = y + self.row_h // 2
                self.s.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" '
                              'stroke="black"/>' % (xv(r["lo"]), mid,
                                                    xv(r["hi"]), mid))
                end = max(end, xv(r["hi"]))
            self.s.append('<text x="%.1f" y="%d">%s</text>' % (
                end + 4, y + 15, _esc(r["text"])))
        if p["ref"] is not None:
            self.s.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" '
                          'stroke="black" stroke-dasharray="4 3"/>' % (
                              xv(p["ref"]), top - 4, xv(p["ref"]), bottom))
        self.y = bottom + 34

    def dots(self, p):
        self.heading(p["title"])
        rows = p["rows"]
        vals = [v for r in rows for _, v in r["points"]]
        lo = 10 ** math.floor(math.log10(min(vals)))
        hi = 10 ** math.ceil(math.log10(max(vals)))
        hi = hi if hi > lo else lo * 10
        x0 = self.label_w

        def xv(v):
            return x0 + self.plot_w * (math.log10(v) - math.log10(lo)) / (
                math.log10(hi) - math.log10(lo))

        top, bottom = self.y, self.y + self.row_h * len(rows)
        ticks, d = [], lo
        while d <= hi * 1.0001:
            ticks.append((xv(d), "%g" % d))
            d *= 10
        self.axis(ticks, top, bottom)
        for i, r in enumerate(rows):
            y = top + i * self.row_h
            self.s.append('<text x="%d" y="%d" text-anchor="end">%s</text>'
                          % (x0 - 8, y + 14, _esc(r["label"])))
            for key, v in r["points"]:
                self._seen(key)
                self.s.append('<circle cx="%.1f" cy="%d" r="4" fill="%s"/>'
                              % (xv(v), y + self.row_h // 2, _colour(key)))
        self.y = bottom + 34

    def finish(self):
        self.y += 6
        _legend(self.series, 10, self.y, self.s)
        height = self.y + 14
        head = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" '
                'height="%d" font-family="sans-serif" font-size="12">' % (
                    WIDTH, height),
                '<rect width="100%" height="100%" fill="white"/>']
        return "\n".join(head + self.s + ["</svg>"]) + "\n"


def svg_run(plot):
    """The run plot as SVG text, stdlib only."""
    w = _Svg(plot["title"])
    for p in plot["panels"]:
        (w.bars if p["kind"] == "bars" else w.dots)(p)
    return w.finish()


def svg_trend(plot):
    """A case's trend as SVG text: median line, min-max whiskers, a dot per
    repetition, one x position per stored run (labelled by commit)."""
    pts = plot["points"]
    s, y = [], 0
    for line in _wrap(plot["title"], WIDTH - 20, 15, True):
        y += 20
        s.append('<text x="10" y="%d" font-size="15" font-weight="bold">%s'
                 '</text>' % (y, _esc(line)))
    top, h, x0, w = y + 20, 300, 170, WIDTH - 200
    ymax = _nice_max(max([p["hi"] or p["value"] or 0 for p in pts] + [1e-9])
                     * 1.05)

    def xv(i):
        return x0 + (w * (i + 0.5) / len(pts))

    def yv(v):
        return top + h - h * v / ymax

    for i in range(5):
        v = ymax * i / 4
        s.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>'
                 '<text x="%d" y="%.1f" text-anchor="end">%s</text>' % (
                     x0, yv(v), x0 + w, yv(v), x0 - 6, yv(v) + 4,
                     _esc(_tick(v, plot["unit"]))))
    line = []
    for i, p in enumerate(pts):
        for v in p["values"]:
            s.append('<circle cx="%.1f" cy="%.1f" r="2.5" fill="#aaaaaa"/>'
                     % (xv(i), yv(v)))
        if p["value"] is None:
            continue
        if p["lo"] is not None:
            s.append('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" '
                     'stroke="black"/>' % (xv(i), yv(p["lo"]), xv(i),
                                           yv(p["hi"])))
        line.append("%.1f,%.1f" % (xv(i), yv(p["value"])))
        s.append('<circle cx="%.1f" cy="%.1f" r="4" fill="%s"/>' % (
            xv(i), yv(p["value"]), IMPL_COLOURS["dbr"]))
        s.append('<text x="%.1f" y="%d" text-anchor="end" transform="rotate('
                 '-40 %.1f %d)">%s</text>' % (xv(i), top + h + 16, xv(i),
                                               top + h + 16,
                                               _esc(p["label"])))
    if len(line) > 1:
        s.append('<polyline fill="none" stroke="%s" points="%s"/>' % (
            IMPL_COLOURS["dbr"], " ".join(line)))
    height = top + h + 150
    head = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
            'font-family="sans-serif" font-size="12">' % (WIDTH, height),
            '<rect width="100%" height="100%" fill="white"/>']
    return "\n".join(head + s + ["</svg>"]) + "\n"


# --------------------------------------------------- matplotlib writer

def _mpl():
    import matplotlib
    matplotlib.use("Agg")
    # text stays text in the SVG: searchable, selectable, smaller
    matplotlib.rcParams["svg.fonttype"] = "none"
    import matplotlib.pyplot as plt
    return plt


def _mpl_bars(ax, p, seen):
    rows = p["rows"]
    ys = list(range(len(rows)))[::-1]
    for y, r in zip(ys, rows):
        if r["value"] is None:
            ax.text(0, y, " failed", va="center", color="#d62728")
            continue
        seen.setdefault(r["series"], None)
        ax.barh(y, r["value"], color=_colour(r["series"]), height=0.7)
        end = r["value"]
        if r["lo"] is not None and r["hi"] is not None:
            ax.plot([r["lo"], r["hi"]], [y, y], color="black", lw=1)
            end = max(end, r["hi"])
        ax.text(end, y, " " + r["text"], va="center", fontsize=8)
    if p["ref"] is not None:
        ax.axvline(p["ref"], color="black", ls="--", lw=0.8)
    hi = max([r["hi"] or r["value"] or 0 for r in rows] + [p["ref"] or 0])
    ax.set_xlim(0, hi * 1.25 or 1)
    if p["unit"] == "IOPS":
        from matplotlib.ticker import FuncFormatter
        ax.xaxis.set_major_formatter(FuncFormatter(
            lambda v, _: _fmt_iops(v) if v else "0"))


def _mpl_dots(ax, p, seen):
    rows = p["rows"]
    ys = list(range(len(rows)))[::-1]
    for y, r in zip(ys, rows):
        for key, v in r["points"]:
            seen.setdefault(key, None)
            ax.plot([v], [y], "o", color=_colour(key), ms=5)
    ax.set_xscale("log")


def mpl_run(plot, path):
    """The run plot through matplotlib, written to path (format from its
    extension: .svg, .png)."""
    plt = _mpl()
    heights = [max(1.0, 0.28 * len(p["rows"]) + 0.9) for p in plot["panels"]]
    title = "\n".join(_wrap(plot["title"], WIDTH - 40, 15))
    fig, axes = plt.subplots(len(heights), 1, squeeze=False,
                             figsize=(WIDTH / 100.0, sum(heights) + 1.2 +
                                      0.25 * title.count("\n")),
                             gridspec_kw={"height_ratios": heights})
    seen = {}
    for ax, p in zip(axes[:, 0], plot["panels"]):
        (_mpl_bars if p["kind"] == "bars" else _mpl_dots)(ax, p, seen)
        ax.set_yticks(list(range(len(p["rows"])))[::-1])
        ax.set_yticklabels([r["label"] for r in p["rows"]], fontsize=8)
        ax.set_title("\n".join(_wrap(p["title"], WIDTH - 360, 11)),
                     fontsize=9, loc="left")
        ax.grid(axis="x", color="#dddddd")
        ax.set_axisbelow(True)
    fig.suptitle(title, fontsize=11, x=0.01, ha="left")
    handles = [plt.Line2D([], [], marker="s" if k in IMPL_COLOURS or ":" in k
                          else "o", ls="", color=_colour(k), ms=8)
               for k in seen]
    if handles:
        fig.legend(handles, [_series_name(k) for k in seen], loc="lower left",
                   ncol=len(handles), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.04, 1, 0.97))
    fig.savefig(path)
    plt.close(fig)


def mpl_trend(plot, path):
    """A case's trend through matplotlib, written to path."""
    plt = _mpl()
    pts = plot["points"]
    fig, ax = plt.subplots(figsize=(WIDTH / 100.0, 4.6))
    xs = list(range(len(pts)))
    for x, p in zip(xs, pts):
        ax.plot([x] * len(p["values"]), p["values"], ".", color="#aaaaaa")
        if p["lo"] is not None:
            ax.plot([x, x], [p["lo"], p["hi"]], color="black", lw=1)
    med = [(x, p["value"]) for x, p in zip(xs, pts) if p["value"] is not None]
    ax.plot([x for x, _ in med], [v for _, v in med], "o-",
            color=IMPL_COLOURS["dbr"])
    ax.set_xticks(xs)
    ax.set_xticklabels([p["label"] for p in pts], rotation=40, ha="right",
                       fontsize=8)
    ax.set_ylim(0, max([p["hi"] or p["value"] or 0 for p in pts] + [1e-9])
                * 1.1)
    if plot["unit"] == "IOPS":
        from matplotlib.ticker import FuncFormatter
        ax.yaxis.set_major_formatter(FuncFormatter(
            lambda v, _: _fmt_iops(v) if v else "0"))
    ax.set_ylabel(plot["unit"])
    ax.grid(axis="y", color="#dddddd")
    ax.set_title("\n".join(_wrap(plot["title"], WIDTH - 40, 11)),
                 fontsize=10, loc="left")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


# ------------------------------------------------------------- entry

def write(plot, path, kind="run", backend=None):
    """Draw plot into path with matplotlib where importable (or where
    backend says), else the SVG writer. Returns the writer used."""
    use_mpl = backend == "matplotlib" or (backend is None and
                                          have_matplotlib())
    if kind == "run" and not plot["panels"]:
        use_mpl = False         # nothing ran: a page with the title only
    if use_mpl:
        (mpl_run if kind == "run" else mpl_trend)(plot, path)
        return "matplotlib"
    if not path.endswith(".svg"):
        path = os.path.splitext(path)[0] + ".svg"
    with open(path, "w") as f:
        f.write((svg_run if kind == "run" else svg_trend)(plot))
    return "svg"
