"""fio side of scripts/perf: derive job files, run fio, read its JSON.

Stdlib only (Debian's python3). Nothing here prints; callers report.
"""
import json
import os
import re
import resource
import subprocess
import threading

# Options only this engine knows: dropped when the same job runs on another
# engine, so fio does not refuse the job file.
DBR_ONLY_OPTIONS = {"gpu", "gpu_dev_ids", "gpu_cpus", "transfer", "gpu_sync",
                    "gpu_spin_us", "gpu_stats_file", "gpu_copy", "gpu_kernel",
                    "gpu_watch_cq", "gpu_owner",
                    "p2p_iommu", "stall_watchdog", "thread_creds"}
# io_uring options that libcufile does not know.
IOURING_OPTIONS = {"registerfiles", "sqthread_poll", "sqthread_poll_cpu",
                   "fixedbufs", "hipri", "nonvectored", "uncached",
                   "nowait", "force_async"}

# The engines a case can run on. 'dbr' is this engine; 'dbr-host' the same
# job on host memory (gpu=host: no GPU, no copies), the bounce path's own
# ceiling on a given target. Either may carry engine options of its own,
# 'dbr+gpu_watch_cq=1+gpu_kernel=launch', so that two settings alternate in
# one run as two implementations.
DBR_IMPLS = ("dbr", "dbr-host")
IMPLS = DBR_IMPLS + ("io_uring", "libcufile", "libcufile-posix")


def split_impl(impl):
    """'dbr+k=v+k2=v2' as ('dbr', {'k': 'v', 'k2': 'v2'}); ValueError where
    an option has no value or a base other than dbr's carries options."""
    base, *extra = impl.split("+")
    opts = {}
    for kv in extra:
        key, sep, value = kv.partition("=")
        if not sep or not key:
            raise ValueError("%s: '%s' is not key=value" % (impl, kv))
        opts[key] = value
    if opts and base not in DBR_IMPLS:
        raise ValueError("%s: only dbr and dbr-host take +key=value" % impl)
    return base, opts


def is_dbr(impl):
    """Does this implementation run this engine?"""
    return impl.split("+")[0] in DBR_IMPLS


class JobFileError(Exception):
    pass


def expand_env(text, env):
    """Expand ${VAR} as fio does, but refuse unset variables by name:
    fio silently substitutes an empty string, which for filename= means a
    file named after the job in the current directory."""
    missing = []

    def sub(m):
        name = m.group(1)
        if name not in env:
            missing.append(name)
            return ""
        return env[name]

    # comments are left alone, as fio does
    out = "\n".join(l if l.lstrip()[:1] in ("#", ";") else
                     re.sub(r"\$\{([^}]+)\}", sub, l)
                     for l in text.split("\n"))
    if missing:
        raise JobFileError("unset environment variable%s: %s" %
                           ("s" if len(set(missing)) > 1 else "",
                            ", ".join(sorted(set(missing)))))
    return out


def parse_job(text):
    """A fio job file as [(section, [(key, value_or_None, raw_line)])].
    Lines before the first section land in section None."""
    sections = [(None, [])]
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            sections[-1][1].append((None, None, raw))
            continue
        m = re.match(r"^\[(.+)\]$", line)
        if m:
            sections.append((m.group(1).strip(), []))
            continue
        key, sep, value = line.partition("=")
        sections[-1][1].append((key.strip(), value.strip() if sep else None,
                                raw))
    return sections


def job_option(sections, key):
    """The value a key has for the (last) job section, [global] as default."""
    value = None
    for name, lines in sections:
        if name is None:
            continue
        for k, v, _ in lines:
            if k == key:
                value = v if v is not None else ""
    return value


def job_names(sections):
    return [name for name, _ in sections if name not in (None, "global")]


def impl_overrides(impl, engine_path):
    """Options that put a job on one implementation, and the options to
    drop from it."""
    impl, extra = split_impl(impl)
    if impl == "dbr":
        return dict({"ioengine": "external:" + engine_path}, **extra), set()
    if impl == "dbr-host":
        return dict({"ioengine": "external:" + engine_path, "gpu": "host"},
                    **extra), set()
    if impl == "io_uring":
        # fio's own engine at its best on host memory: fixed buffers and
        # registered files, as the overhead comparison asks
        return ({"ioengine": "io_uring", "fixedbufs": "1",
                 "registerfiles": "1"}, DBR_ONLY_OPTIONS)
    if impl in ("libcufile", "libcufile-posix"):
        # GPUDirect Storage through cuFile (cuda_io=cufile), or the same
        # engine's POSIX mode (pageable host buffer + cudaMemcpy) where
        # cuFile cannot register the file; gpu_dev_ids has the same syntax.
        # cudaMalloc per process does not scale: threads, as fio's examples
        mode = "posix" if impl.endswith("posix") else "cufile"
        return ({"ioengine": "libcufile", "cuda_io": mode, "thread": "1"},
                (DBR_ONLY_OPTIONS - {"gpu_dev_ids"}) | IOURING_OPTIONS)
    raise ValueError("unknown implementation %r" % impl)


def derive_job(text, overrides, drop=(), env=None, header=""):
    """A self-contained job file: ${VAR} expanded, options in drop removed
    everywhere, and overrides appended to [global] and to every job section
    (a job section's own setting would otherwise win over [global])."""
    text = expand_env(text, os.environ if env is None else env)
    sections = parse_job(text)
    override_keys = set(overrides)
    out = [header] if header else []
    for name, lines in sections:
        if name is not None:
            out.append("[%s]" % name)
        for k, v, raw in lines:
            if k is not None and (k in drop or k in override_keys):
                continue
            out.append(raw)
        if name is not None:
            for k, v in overrides.items():
                out.append(k if v is None else "%s=%s" % (k, v))
    if not any(name == "global" for name, _ in sections) and overrides:
        glob = ["[global]"] + ["%s=%s" % kv for kv in overrides.items()]
        out = out[:1 if header else 0] + glob + out[1 if header else 0:]
    return "\n".join(out) + "\n"


def fio_has_engine(fio, name):
    """Was fio built with this engine? (libcufile needs CUDA at fio's build)"""
    try:
        r = subprocess.run([fio, "--enghelp=" + name], capture_output=True,
                           text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0


def fio_command(fio, jobfile, hosts=()):
    """fio's command line for one case; with hosts, fio's client/server
    mode drives `fio --server` on each of them with the same job."""
    cmd = [fio, "--output-format=json+"]
    if not hosts:
        return cmd + [jobfile]
    for h in hosts:
        cmd += ["--client=" + h, jobfile]
    return cmd


def fio_env(cmd, extra=None):
    """The environment for fio: ours plus extra. In make check's sanitizer
    pass (DBR_ASAN_PRELOAD set) fio, not instrumented itself, loads an
    ASan-built engine, so the ASan runtime is preloaded into it; a --client
    fio never loads the engine and runs as it is."""
    pre = os.environ.get("DBR_ASAN_PRELOAD")
    client = any(a.startswith("--client") for a in cmd)
    if (not pre or client) and not extra:
        return None
    env = dict(os.environ)
    env.update(extra or {})
    if pre and not client:
        env["LD_PRELOAD"] = pre + (":" + env["LD_PRELOAD"]
                                   if env.get("LD_PRELOAD") else "")
    return env


def read_gpu_records(path):
    """The engine's per-thread records (gpu_stats_file: JSON Lines), or
    None where the run left none. A line that does not parse is skipped:
    the records are a detail of the run, fio's JSON is its result."""
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    out = []
    for line in lines:
        try:
            out.append(json.loads(line))
        except ValueError:
            pass
    return out or None


def owner_cpu_s(records):
    """CPU seconds the GPU owner spent for the run's job processes (their
    records' owner_cpu_ns), or None where no job ran through an owner. The
    owner is no child of fio, so neither fio's JSON nor the whole run's
    rusage has it."""
    ns = [r["owner_cpu_ns"] for r in records or ()
          if r.get("owner_cpu_ns") is not None]
    return sum(ns) / 1e9 if ns else None


def _children_cpu():
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _proc_tree(root):
    """root and every process below it (fio forks job processes)."""
    pids, todo = [], [root]
    while todo:
        pid = todo.pop()
        pids.append(pid)
        try:
            for t in os.listdir("/proc/%d/task" % pid):
                with open("/proc/%d/task/%s/children" % (pid, t)) as f:
                    todo.extend(int(c) for c in f.read().split())
        except OSError:
            pass
    return pids


def _task_ticks(pid):
    """{(pid, tid): (comm, utime+stime in clock ticks)} for one process."""
    out = {}
    try:
        tids = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return out
    for t in tids:
        try:
            with open("/proc/%d/task/%s/stat" % (pid, t)) as f:
                stat = f.read()
        except OSError:
            continue
        comm = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        out[(pid, t)] = (comm, int(fields[11]) + int(fields[12]))
    return out


class TaskSampler:
    """CPU time of fio's threads by kind, sampled from /proc while it runs:
    io_uring's io-wq workers (iou-wrk-*) do the I/O a ring punts to them
    (every read of a file without NOWAIT support, such as /dev/shm or
    zram), and that work is not in fio's own per-job CPU figures. Workers
    exit with their ring, so the last sample stands for them: up to one
    interval of their time is missed."""

    def __init__(self, pid, interval=0.2):
        self.pid, self.interval = pid, interval
        self.seen, self.max_workers = {}, 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _sample(self):
        workers = 0
        for pid in _proc_tree(self.pid):
            for key, (comm, ticks) in _task_ticks(pid).items():
                self.seen[key] = (comm, ticks)
                workers += comm.startswith("iou-wrk")
        self.max_workers = max(self.max_workers, workers)

    def _run(self):
        while not self.stop.wait(self.interval):
            self._sample()

    def finish(self):
        self.stop.set()
        self.thread.join()
        hz = os.sysconf("SC_CLK_TCK")
        iowq = sum(t for c, t in self.seen.values() if c.startswith("iou-wrk"))
        return {"iowq_cpu_s": iowq / hz, "iowq_workers": self.max_workers}


PROC_STAT = "/proc/stat"


def cpu_ticks(path=None):
    """(steal, total): clock ticks of all CPUs since boot from /proc/stat's
    first line (user, nice, system, idle, iowait, irq, softirq, steal; guest
    time is inside user); None where it cannot be read."""
    try:
        with open(path or PROC_STAT) as f:
            fields = f.readline().split()
    except OSError:
        return None
    if len(fields) < 9 or fields[0] != "cpu":
        return None
    ticks = [int(v) for v in fields[1:9]]
    return ticks[7], sum(ticks)


def steal_share(before, after):
    """The share of the machine's CPU time between two cpu_ticks readings
    that a hypervisor gave to something else (steal): a VM's CPUs were not
    its own for that long, and fio's rates dip with it. None without both
    readings or with no time between them."""
    if not before or not after or after[1] <= before[1]:
        return None
    return (after[0] - before[0]) / (after[1] - before[1])


def run_fio(cmd, timeout, env=None):
    """Run fio; returns (exit status, combined output, CPU seconds, task
    figures). The CPU time is user+sys of the whole fio process, every
    thread of it: the job threads that fio's own JSON counts, but also fio's
    main thread and the kernel's io_uring workers (io-wq threads belong to
    the process whose ring punted the I/O), which the JSON's usr_cpu/sys_cpu
    leave out. The task figures (TaskSampler) split out the io-wq workers;
    steal_share is the machine's CPU steal over the run (steal_share()).
    env: variables to add to fio's environment."""
    before = _children_cpu()
    ticks = cpu_ticks()
    try:
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True,
                             env=fio_env(cmd, env))
    except OSError as e:
        return 127, "scripts/perf: cannot run fio: %s\n" % e, None, {}
    sampler = TaskSampler(p.pid)
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        out, _ = p.communicate()
        sampler.finish()
        return 124, (out or "") + "\nscripts/perf: fio ran past %ds\n" % timeout, None, {}
    except BaseException:
        # the caller stops (a signal, Ctrl-C): fio first, so that nothing
        # holds the target when the caller removes a scratch device
        stop_fio(p)
        sampler.finish()
        raise
    tasks = sampler.finish()
    tasks["steal_share"] = steal_share(ticks, cpu_ticks())
    return p.returncode, out, _children_cpu() - before, tasks


def stop_fio(p, grace=10):
    """SIGTERM, on which fio ends its jobs and reports; SIGKILL where it
    has not exited in grace seconds. Its output is read meanwhile (a full
    pipe would hold it)."""
    try:
        p.terminate()
        p.communicate(timeout=grace)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()


class FioOutputError(Exception):
    pass


def split_output(text):
    """fio's JSON document and the lines around it (engine notes such as
    'dmabuf_uring: ... transfer=bounce', errors, client prefixes)."""
    m = re.search(r"^\{", text, re.M)
    if not m:
        raise FioOutputError("no JSON in fio's output")
    try:
        doc, end = json.JSONDecoder().raw_decode(text[m.start():])
    except ValueError as e:
        raise FioOutputError("fio's JSON does not parse: %s" % e)
    notes = text[:m.start()] + text[m.start() + end:]
    return doc, [l for l in notes.splitlines() if l.strip()]


# Latency percentiles reported (from merged histogram bins).
PERCENTILES = (50.0, 99.0, 99.9)


def _percentile_from_bins(bins, pct):
    total = sum(bins.values())
    if not total:
        return None
    want = total * pct / 100.0
    seen = 0
    for value in sorted(bins):
        seen += bins[value]
        if seen >= want:
            return value
    return max(bins)


def summarize(doc):
    """One case's figures from fio's JSON(+): totals over every job (and
    every client), latency percentiles from the merged histograms so they
    are exact for the whole case, not an average of per-job ones: clat
    (issue to completion) and, where the job had lat_percentiles=1, lat
    (slat + clat: the io_u's whole time in the engine). Only lat compares
    engines: fio's io_uring engine issues in its commit, after the enter
    that submits, so its clat leaves the submission out, while this engine
    at iodepth 1 submits in the enter that waits, and its clat has it."""
    jobs = doc.get("jobs")
    if jobs is None:
        jobs = [j for j in doc.get("client_stats", [])
                if j.get("jobname") != "All clients"]
    if not jobs:
        raise FioOutputError("fio's JSON has no jobs")
    s = {"iops": 0.0, "bw_bytes": 0.0, "ios": 0, "read_iops": 0.0,
         "write_iops": 0.0, "cpu_s": 0.0, "errors": [], "jobs": len(jobs),
         "hosts": sorted({j.get("hostname", "local") for j in jobs})}
    hist = {"clat": ({}, []), "lat": ({}, [])}
    for j in jobs:
        if j.get("error"):
            s["errors"].append("%s: error %s" % (j.get("jobname"),
                                                  j.get("error")))
        runtime_s = 0.0
        for ddir in ("read", "write"):
            d = j.get(ddir) or {}
            s["iops"] += d.get("iops", 0.0)
            s[ddir + "_iops"] += d.get("iops", 0.0)
            s["bw_bytes"] += d.get("bw_bytes", 0)
            s["ios"] += d.get("total_ios", 0)
            runtime_s = max(runtime_s, d.get("runtime", 0) / 1000.0)
            for kind, (bins, means) in hist.items():
                lat = d.get(kind + "_ns") or {}
                for k, v in (lat.get("bins") or {}).items():
                    bins[int(k)] = bins.get(int(k), 0) + v
                if lat.get("N"):
                    means.append((lat["mean"], lat["N"]))
        run_s = j.get("job_runtime", 0) / 1000.0 or runtime_s
        s["cpu_s"] += (j.get("usr_cpu", 0) + j.get("sys_cpu", 0)) / 100.0 * run_s
    # CPU time of the job threads per I/O: robust against other load on the
    # machine, which IOPS is not (fio measures it per job with getrusage)
    s["cpu_us_per_io"] = s["cpu_s"] * 1e6 / s["ios"] if s["ios"] else None
    for kind, (bins, means) in hist.items():
        for p in PERCENTILES:
            v = _percentile_from_bins(bins, p)
            s["%s_p%g_us" % (kind, p)] = v / 1000.0 if v is not None else None
        n = sum(c for _, c in means)
        s[kind + "_mean_us"] = (sum(m * c for m, c in means) / n / 1000.0
                                if n else None)
    del s["cpu_s"]
    return s
