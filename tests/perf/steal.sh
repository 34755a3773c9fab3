#!/usr/bin/env bash
# CPU steal in scripts/perf: /proc/stat's first line read into (steal,
# total) ticks, the share between two readings, and results.md naming the
# repetitions in which a hypervisor took STEAL_MAX_PCT or more of the
# machine's CPU time (synthetic results.json: exact figures, no fio).
. "$(dirname "$0")/../lib.sh"

command -v python3 >/dev/null || skip "python3 not installed"
perf=$SRCDIR/scripts/perf

# ---- reading /proc/stat: a fixture line, a malformed one, a missing file
printf 'cpu  100 5 50 800 10 1 4 30 7 0\ncpu0 50 2 25 400 5 0 2 15 3 0\n' >"$TMPD/stat"
printf 'intr 1 2 3\n' >"$TMPD/bad"
if python3 - "$SRCDIR/scripts" "$TMPD" >"$TMPD/ticks.out" 2>&1 <<'PY'; then
import os, sys
sys.path.insert(0, sys.argv[1])
import perf_fio as f
d = sys.argv[2]
# user..steal add up (guest is inside user); steal is the eighth
assert f.cpu_ticks(os.path.join(d, "stat")) == (30, 1000), f.cpu_ticks(os.path.join(d, "stat"))
assert f.cpu_ticks(os.path.join(d, "bad")) is None
assert f.cpu_ticks(os.path.join(d, "absent")) is None
assert f.steal_share((30, 1000), (80, 2000)) == 0.05
assert f.steal_share(None, (80, 2000)) is None
assert f.steal_share((30, 1000), (30, 1000)) is None
now = f.cpu_ticks()
assert now is not None and 0 <= now[0] <= now[1], now
print("ok")
PY
	pass "/proc/stat read into steal and total ticks; a share between readings; malformed or absent: none"
else
	fail "/proc/stat read into steal and total ticks"
	cat "$TMPD/ticks.out"
fi

# ---- the report: case "noisy" lost 7.3% in repetition 2 and 0.5% in 1;
# case "quiet" 1.9% (under the bar) and no figure at all (an old record)
python3 - "$TMPD/r" "$SRCDIR/tests/perf" <<'PY'
import sys
sys.path.insert(0, sys.argv[2])
import synth
recs = []
for cid, steal in (("noisy dbr:bounce", (0.5, 7.3)), ("quiet dbr:bounce", (1.9, None))):
    for rep, pct in enumerate(steal, 1):
        r = synth.record(cid, rep, 1000.0)
        if pct is not None:
            r["summary"]["steal_pct"] = pct
        recs.append(r)
synth.write(sys.argv[1], recs)
PY
"$perf" --from "$TMPD/r" >"$TMPD/r.out" 2>&1 || fail "--from: exit $?"
md=$TMPD/r/results.md
grep -qF "**noisy dbr:bounce: the hypervisor ran other work for 7.3% of this machine's CPU time in repetition 2:" "$md" &&
	[ "$(grep -c 'the hypervisor ran other work' "$md")" -eq 1 ] &&
	pass "results.md names the repetition with 7.3% steal, not those under 2% or without a figure" ||
	{ fail "results.md: want only noisy's repetition 2 named"; cat "$md"; }

# ---- without steal the section is absent
python3 - "$TMPD/q" "$SRCDIR/tests/perf" <<'PY'
import sys
sys.path.insert(0, sys.argv[2])
import synth
r = synth.record("calm dbr:bounce", 1, 1000.0)
r["summary"]["steal_pct"] = 0.0
synth.write(sys.argv[1], [r])
PY
"$perf" --from "$TMPD/q" >"$TMPD/q.out" 2>&1 || fail "--from calm: exit $?"
! grep -q "CPU steal" "$TMPD/q/results.md" &&
	pass "no steal: no CPU steal section" ||
	fail "no steal: results.md still has a CPU steal section"

finish
