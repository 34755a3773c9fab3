"""The history of scripts/perf runs in one SQLite file (--db).

Every case of every run is kept with every repetition's figures and what
the run ran on (time, engine commit, machine, kernel, fio version, GPU and
driver, job options), so a new run can be judged against the last N runs of
the same machine and case (--baseline db:last:N) and a trend read over
commits (scripts/perf history).

Several CI jobs may write one file at once: the database runs in WAL mode,
each run goes in as one transaction (BEGIN IMMEDIATE, waiting up to
BUSY_TIMEOUT_S for another writer), and readers never block writers.
The schema carries its version; a file from a newer scripts/perf is
refused rather than misread.

Python's sqlite3 only. Nothing here prints; errors are DbError.
"""
import json
import sqlite3
import time

SCHEMA_VERSION = 1
BUSY_TIMEOUT_S = 60

# Figures kept as columns (the rest of a repetition's summary is kept
# whole as JSON beside them).
REP_COLUMNS = ("iops", "bw_bytes", "cpu_us_per_io", "run_cpu_us_per_io",
               "clat_mean_us", "clat_p50_us", "clat_p99_us", "clat_p99.9_us")
RUN_COLUMNS = ("time", "git_commit", "git_dirty", "machine", "kernel", "fio",
               "fio_version", "gpu", "gpu_driver", "target", "command")

SCHEMA = """
CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY,
    time TEXT NOT NULL,          -- ISO 8601, local time of the run's start
    git_commit TEXT,             -- engine source commit (NULL: not a git tree)
    git_dirty INTEGER,           -- 1: uncommitted changes beside the commit
    machine TEXT NOT NULL,       -- --machine, else the host name
    kernel TEXT, fio TEXT, fio_version TEXT,
    gpu TEXT, gpu_driver TEXT,   -- where known (nvidia-smi, rocm-smi)
    target TEXT, command TEXT,
    meta TEXT NOT NULL           -- the run's whole metadata, JSON
);
CREATE TABLE IF NOT EXISTS cases (
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    case_id TEXT NOT NULL,       -- scripts/perf's case name
    job TEXT, impl TEXT, transfer TEXT, iodepth TEXT, bs TEXT,
    options TEXT,                -- the derived fio job file of the case
    errors TEXT                  -- JSON list of failed repetitions' errors
);
CREATE TABLE IF NOT EXISTS reps (
    case_row INTEGER NOT NULL REFERENCES cases(id) ON DELETE CASCADE,
    rep INTEGER NOT NULL,
    iops REAL, bw_bytes REAL, cpu_us_per_io REAL, run_cpu_us_per_io REAL,
    clat_mean_us REAL, clat_p50_us REAL, clat_p99_us REAL,
    "clat_p99.9_us" REAL,
    summary TEXT NOT NULL        -- the repetition's whole summary, JSON
);
CREATE INDEX IF NOT EXISTS cases_by_name ON cases(case_id, run_id);
CREATE INDEX IF NOT EXISTS reps_by_case ON reps(case_row);
CREATE INDEX IF NOT EXISTS runs_by_machine ON runs(machine, id);
"""


class DbError(Exception):
    pass


def connect(path):
    """Open (creating where absent) a results database at its current
    schema. Raises DbError, naming path, for a file that is not one or
    whose schema is newer; nothing stays open then."""
    try:
        db = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S,
                             isolation_level=None)
    except sqlite3.Error as e:
        raise DbError("%s: %s" % (path, e))
    try:
        db.execute("PRAGMA busy_timeout = %d" % (BUSY_TIMEOUT_S * 1000))
        _set_wal(db)
        db.execute("PRAGMA foreign_keys = ON")
        _init_schema(db)
    except sqlite3.DatabaseError as e:
        db.close()
        raise DbError("%s: %s (give a scripts/perf results database, or a "
                      "path that does not exist yet)" % (path, e))
    except DbError as e:
        db.close()
        raise DbError("%s: %s" % (path, e))
    return db


def _set_wal(db):
    """journal_mode = WAL. Two connections switching a new file at once
    each hold a shared lock and want the exclusive one; SQLite answers the
    second "database is locked" at once, past the busy timeout, since
    waiting would deadlock (seen once in CI: two concurrent writers). Once
    the first has switched, the file is in WAL mode and the pragma needs no
    such lock: so try again, until the busy timeout."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    while True:
        try:
            db.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def _init_schema(db):
    db.execute("BEGIN IMMEDIATE")
    try:
        for stmt in SCHEMA.split(";"):
            if stmt.strip():
                db.execute(stmt)
        rows = db.execute("SELECT version FROM schema_version").fetchall()
        if not rows:
            db.execute("INSERT INTO schema_version VALUES (?)",
                       (SCHEMA_VERSION,))
        elif rows[0][0] > SCHEMA_VERSION:
            raise DbError("schema version %d is newer than this "
                          "scripts/perf's %d: use a newer checkout" %
                          (rows[0][0], SCHEMA_VERSION))
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


def store_run(db, run, records, options=None):
    """One run in one transaction: run is RUN_COLUMNS' values (and 'meta'),
    records are scripts/perf's per-repetition records, options maps a
    case id to its job file text. Returns the run's id."""
    try:
        db.execute("BEGIN IMMEDIATE")
    except sqlite3.Error as e:
        raise DbError("cannot store the run: %s" % e)
    try:
        cur = db.execute(
            "INSERT INTO runs (%s, meta) VALUES (%s)" % (
                ", ".join(RUN_COLUMNS), ", ".join("?" * (len(RUN_COLUMNS) + 1))),
            tuple(run.get(c) for c in RUN_COLUMNS) +
            (json.dumps(run.get("meta", {}), sort_keys=True),))
        run_id = cur.lastrowid
        for cid, recs in _by_case(records).items():
            _store_case(db, run_id, cid, recs, (options or {}).get(cid))
        db.execute("COMMIT")
    except BaseException as e:
        db.execute("ROLLBACK")
        if isinstance(e, sqlite3.Error):
            raise DbError("cannot store the run: %s" % e)
        raise
    return run_id


def _by_case(records):
    out = {}
    for r in records:
        out.setdefault(r["id"], []).append(r)
    return out


def _store_case(db, run_id, cid, recs, options):
    c = recs[0]["case"]
    errors = [r["error"] for r in recs if r.get("error")]
    row = db.execute(
        "INSERT INTO cases (run_id, case_id, job, impl, transfer, iodepth, "
        "bs, options, errors) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (run_id, cid, c.get("job"), c.get("impl"), c.get("transfer"),
         c.get("iodepth"), c.get("bs"), options,
         json.dumps(errors) if errors else None)).lastrowid
    cols = ", ".join('"%s"' % m for m in REP_COLUMNS)
    for r in recs:
        s = r.get("summary")
        if not s:
            continue
        db.execute("INSERT INTO reps (case_row, rep, %s, summary) VALUES "
                   "(?, ?, %s, ?)" % (cols, ", ".join("?" * len(REP_COLUMNS))),
                   (row, r.get("rep")) + tuple(s.get(m) for m in REP_COLUMNS) +
                   (json.dumps(s, sort_keys=True),))


def baseline_reps(db, machine, case_ids, last, before=None):
    """{case id: {'runs': [run id], 'reps': [summary]}}: the repetitions of
    the last `last` stored runs of this machine that have each case (runs
    with id < before only, when given: the run being judged is not its own
    baseline)."""
    out = {}
    for cid in case_ids:
        q = ("SELECT cases.id, runs.id FROM cases JOIN runs ON "
             "runs.id = cases.run_id WHERE runs.machine = ? AND "
             "cases.case_id = ?" + (" AND runs.id < ?" if before else "") +
             " ORDER BY runs.id DESC LIMIT ?")
        args = (machine, cid) + ((before,) if before else ()) + (last,)
        rows = db.execute(q, args).fetchall()
        reps = []
        for case_row, _ in rows:
            reps += [json.loads(s) for (s,) in db.execute(
                "SELECT summary FROM reps WHERE case_row = ? ORDER BY rep",
                (case_row,))]
        if rows:
            out[cid] = {"runs": [r for _, r in rows], "reps": reps}
    return out


def history(db, machine=None, case=None, last=None):
    """[(run row as dict, {case id: [rep summary]})] oldest first: the
    stored runs (of one machine, holding one case, the last N) with their
    repetitions. case matches a case id exactly or as a substring."""
    where, args = [], []
    if machine:
        where.append("machine = ?")
        args.append(machine)
    q = "SELECT * FROM runs" + (" WHERE " + " AND ".join(where)
                                if where else "") + " ORDER BY id DESC"
    db.row_factory = sqlite3.Row
    try:
        runs = [dict(r) for r in db.execute(q, args).fetchall()]
    finally:
        db.row_factory = None
    out = []
    for run in runs:
        cases = {}
        for case_row, cid in db.execute(
                "SELECT id, case_id FROM cases WHERE run_id = ? ORDER BY id",
                (run["id"],)).fetchall():
            if case and case != cid and case not in cid:
                continue
            cases[cid] = [json.loads(s) for (s,) in db.execute(
                "SELECT summary FROM reps WHERE case_row = ? ORDER BY rep",
                (case_row,))]
        if cases:
            out.append((run, cases))
        if last and len(out) >= last:
            break
    return list(reversed(out))


def schema_version(db):
    return db.execute("SELECT version FROM schema_version").fetchone()[0]
