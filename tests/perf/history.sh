#!/usr/bin/env bash
# --db and scripts/perf history: two stored runs read back exactly from
# the SQLite file (schema version, WAL, run facts, every repetition, the
# job options), the trend table and a plot per case from them,
# --baseline db:last:N judging against exactly the last N runs of this
# machine, two writers at once leaving every run whole (and the switch to
# WAL tried again while another connection makes it), and a database
# from a newer schema refused. Synthetic results (--from): no fio runs.
. "$(dirname "$0")/../lib.sh"

command -v python3 >/dev/null || skip "python3 not installed"
perf=$SRCDIR/scripts/perf
synth=$SRCDIR/tests/perf/synth.py
export FIO DBR_ENGINE=$ENGINE
export PYTHONPATH=$SRCDIR/scripts:$SRCDIR/tests/perf
db=$TMPD/perf.sqlite
c="rr dbr:bounce"

python3 "$synth" "$TMPD/r1" 1 "$c=1e6*1/0.01/5" "rr io_uring=2e6*1/0.01/5"
python3 "$synth" "$TMPD/r2" 2 "$c=1e6*0.98/0.01/5" "rr io_uring=2e6*1/0.01/5"
python3 "$synth" "$TMPD/r3" 3 "$c=1e6*0.8/0.01/5"
python3 "$synth" "$TMPD/r4" 4 "$c=1e6*0.8/0.01/5"
store() { # NAME EXTRA...: --from NAME into the database
	local name=$1
	shift
	"$perf" --from "$TMPD/$name" --out "$TMPD/$name.out" --plot svg \
		--db "$db" --machine ci-a "$@" >"$TMPD/$name.log" 2>&1
}
store r1 && store r2 &&
	grep -q "^stored as run 2 of ci-a in $db" "$TMPD/r2.log" &&
	pass "two runs stored" || { fail "two runs stored"; cat "$TMPD/r2.log"; }

if python3 - "$db" "$TMPD" >"$TMPD/rt.out" 2>&1 <<'PY'; then
import json, sqlite3, sys
db, d = sys.argv[1:]
con = sqlite3.connect(db)
assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
assert con.execute("SELECT version FROM schema_version").fetchall() == [(1,)]
runs = con.execute("SELECT id, machine, time, command FROM runs ORDER BY id").fetchall()
assert [(r[0], r[1]) for r in runs] == [(1, "ci-a"), (2, "ci-a")], runs
for run_id, name in ((1, "r1"), (2, "r2")):
    recs = json.load(open("%s/%s/results.json" % (d, name)))["records"]
    for r in recs:
        got = con.execute(
            "SELECT reps.iops, reps.clat_p99_us, reps.summary FROM reps "
            "JOIN cases ON cases.id = reps.case_row WHERE cases.run_id = ? "
            "AND cases.case_id = ? AND reps.rep = ?",
            (run_id, r["id"], r["rep"])).fetchall()
        assert len(got) == 1, (run_id, r["id"], r["rep"], got)
        iops, p99, summary = got[0]
        assert iops == r["summary"]["iops"] and p99 == r["summary"]["clat_p99_us"]
        assert json.loads(summary) == r["summary"]
    n = con.execute("SELECT count(*) FROM reps JOIN cases ON cases.id = "
                    "reps.case_row WHERE run_id = ?", (run_id,)).fetchone()[0]
    assert n == len(recs) == 10, n
print("ok")
PY
	pass "round trip: WAL, schema version 1, every repetition's figures equal to results.json"
else
	fail "database round trip"
	cat "$TMPD/rt.out"
fi

"$perf" history --db "$db" --case "$c" --plot svg --out "$TMPD/hist" >"$TMPD/hist.log" 2>&1
rc=$?
svg="$TMPD/hist/rr_dbr_bounce.svg"
[ "$rc" -eq 0 ] && [ "$(grep -c "^| [12] | 2026-01-01T00:00:00 | ci-a | " "$TMPD/hist.log")" -eq 2 ] &&
	grep -q "^| 2 | .* | 5 | 9[0-9.]*k | .* | -[0-9.]*% |$" "$TMPD/hist.log" &&
	! grep -q "io_uring" "$TMPD/hist.log" &&
	python3 -c "
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
ns = '{http://www.w3.org/2000/svg}'
assert root.tag == ns + 'svg'
assert len(root.findall(ns + 'polyline')) == 1       # the median line
assert len([c for c in root.iter(ns + 'circle') if c.get('r') == '4']) == 2
assert len([c for c in root.iter(ns + 'circle') if c.get('r') == '2.5']) == 10
" "$svg" &&
	pass "history --case: trend table of the two runs (change on the second), plot with 2 medians and 10 repetitions" ||
	{ fail "history table and plot (rc $rc)"; cat "$TMPD/hist.log"; }
"$perf" history --db "$db" --metric ratio --plot svg --out "$TMPD/hist-r" >"$TMPD/hist-r.log" 2>&1
rc=$?
[ "$rc" -eq 0 ] && grep -q "^## $c: IOPS over io_uring's" "$TMPD/hist-r.log" &&
	[ "$(grep -c "^| [12] | .* | 5 | 0\.[45][0-9]* | " "$TMPD/hist-r.log")" -eq 2 ] &&
	! grep -q "^## rr io_uring" "$TMPD/hist-r.log" && [ -s "$TMPD/hist-r/rr_dbr_bounce.svg" ] &&
	pass "history --metric ratio: the case over io_uring in each run (0.5), repetition by repetition" ||
	{ fail "history --metric ratio (rc $rc)"; cat "$TMPD/hist-r.log"; }
mpl=
for cand in python3 /usr/bin/python3; do
	"$cand" -c 'import matplotlib' 2>/dev/null && { mpl=$cand; break; }
done
if [ -n "$mpl" ]; then
	"$mpl" "$perf" history --db "$db" --out "$TMPD/hist-mpl" >"$TMPD/hist-mpl.log" 2>&1 &&
		grep -q "rr dbr:bounce: IOPS per run over commits" "$TMPD/hist-mpl/rr_dbr_bounce.svg" &&
		[ -s "$TMPD/hist-mpl/rr_io_uring.svg" ] &&
		pass "history under $mpl: a matplotlib plot per case" ||
		{ fail "history with matplotlib"; cat "$TMPD/hist-mpl.log"; }
else
	echo "skip - no python3 here has matplotlib: the matplotlib trend plot is not drawn"
fi

# db:last:N: r3 and r4 are 20 % down; r3 against the last 2 runs (r1 r2,
# 10 repetitions) is a regression, r4 against the last 1 (r3) is not
store r3 --baseline db:last:2
rc=$?
grep -q "against the last 2 stored runs of ci-a (run ids 1, 2)" "$TMPD/r3.log" &&
	grep -q "^  $c: REGRESSION.*n=5 vs 10" "$TMPD/r3.log" && [ "$rc" -eq 3 ] &&
	grep -q "^stored as run 3 of ci-a" "$TMPD/r3.log" &&
	pass "db:last:2: the last 2 runs of that case (10 repetitions): regression, exit 3, stored" ||
	{ fail "db:last:2 (rc $rc)"; cat "$TMPD/r3.log"; }
store r4 --baseline db:last:1
rc=$?
grep -q "against the last 1 stored run of ci-a (run id 3)" "$TMPD/r4.log" &&
	grep -q "^  $c: no change beyond noise" "$TMPD/r4.log" && [ "$rc" -eq 0 ] &&
	pass "db:last:1 judges against the run before only: unchanged" ||
	{ fail "db:last:1 (rc $rc)"; cat "$TMPD/r4.log"; }
"$perf" --from "$TMPD/r4" --out "$TMPD/r4c.out" --plot svg --db "$db" --machine ci-b \
	--baseline db:last:3 >"$TMPD/r4c.log" 2>&1
grep -q "^  $c: not in the baseline" "$TMPD/r4c.log" &&
	pass "another machine's runs are not its baseline" ||
	{ fail "baseline per machine"; cat "$TMPD/r4c.log"; }

# two writers at once: every run whole, the file sound
cdb=$TMPD/concurrent.sqlite
python3 - "$cdb" "$TMPD/r1" >"$TMPD/conc.out" 2>&1 <<'PY'
import json, multiprocessing, sys
import perf_db
def writer(k):
    db = perf_db.connect(sys.argv[1])
    recs = json.load(open(sys.argv[2] + "/results.json"))["records"]
    for i in range(25):
        perf_db.store_run(db, {"time": "t", "machine": "w%d" % k,
                               "meta": {"i": i}}, recs)
    db.close()
ps = [multiprocessing.Process(target=writer, args=(k,)) for k in (1, 2)]
[p.start() for p in ps]
[p.join() for p in ps]
assert all(p.exitcode == 0 for p in ps), [p.exitcode for p in ps]
db = perf_db.connect(sys.argv[1])
assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
for k in (1, 2):
    assert db.execute("SELECT count(*) FROM runs WHERE machine = ?",
                      ("w%d" % k,)).fetchone()[0] == 25
assert db.execute("SELECT count(*) FROM reps").fetchone()[0] == 50 * 10
print("ok")
PY
[ "$(tail -1 "$TMPD/conc.out")" = ok ] &&
	pass "two writers, 25 runs each at once: 50 whole runs, integrity_check ok" ||
	{ fail "two concurrent writers"; cat "$TMPD/conc.out"; }

# Two connections switching a new file to WAL at once: SQLite answers one
# "database is locked" at once (waiting would deadlock), which the
# two-writer check above hit once in a CI run; connect tries the switch
# again. Over a connection that
# is locked twice, then not: three tries; any other error: raised.
python3 - >"$TMPD/wal.out" 2>&1 <<'PY'
import sqlite3, perf_db
class Conn:
    def __init__(self, errors):
        self.errors, self.tries = list(errors), 0
    def execute(self, sql):
        assert sql == "PRAGMA journal_mode = WAL", sql
        self.tries += 1
        if self.errors:
            raise sqlite3.OperationalError(self.errors.pop(0))
c = Conn(["database is locked"] * 2)
perf_db._set_wal(c)
assert c.tries == 3, c.tries
c = Conn(["disk I/O error"])
try:
    perf_db._set_wal(c)
    raise SystemExit("disk I/O error not raised")
except sqlite3.OperationalError:
    pass
assert c.tries == 1, c.tries
print("ok")
PY
[ "$(tail -1 "$TMPD/wal.out")" = ok ] &&
	pass "the switch to WAL tried again while locked, any other error raised" ||
	{ fail "the switch to WAL: $(tail -3 "$TMPD/wal.out")"; }

# a database from a newer scripts/perf, and a file that is not one
python3 -c "
import sqlite3, sys
c = sqlite3.connect(sys.argv[1]); c.execute('UPDATE schema_version SET version = 99'); c.commit()" "$cdb"
"$perf" --from "$TMPD/r1" --out "$TMPD/new.out" --plot svg --db "$cdb" >"$TMPD/new.log" 2>&1
rc1=$?
echo "not a database" >"$TMPD/junk.sqlite"
"$perf" history --db "$TMPD/junk.sqlite" >"$TMPD/junk.log" 2>&1
rc2=$?
"$perf" history --db "$TMPD/absent.sqlite" >"$TMPD/absent.log" 2>&1
rc3=$?
[ "$rc1$rc2$rc3" = 222 ] &&
	grep -q "schema version 99 is newer than this scripts/perf's 1: use a newer checkout" "$TMPD/new.log" &&
	grep -q "junk.sqlite: file is not a database" "$TMPD/junk.log" &&
	grep -q "absent.sqlite: no such file (a run with --db creates it)" "$TMPD/absent.log" &&
	pass "newer schema, not a database, no file: one line each, exit 2" ||
	{ fail "bad databases ($rc1 $rc2 $rc3)"; cat "$TMPD/new.log" "$TMPD/junk.log" "$TMPD/absent.log"; }
finish
