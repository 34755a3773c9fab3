#!/usr/bin/env bash
# The regression decision (scripts/perf_stats.py) and what CI shows of it
# (--junit, --summary), on synthetic result sets whose answer is known:
# a 10 % loss with n = 5 and 1 % noise must be flagged (exit 3, a JUnit
# failure naming case, ratio, interval and p); +-5 % noise with no shift
# must not be; n = 2 must say "too noisy to tell" (never a silent pass); a
# case whose fio runs failed is a JUnit error; p99 is judged when asked;
# a medians-only baseline is judged by the tolerance alone and says so.
# Every p-value here comes from the pure-Python code (the python3 on PATH
# may have no scipy; stats_scipy.sh checks both agree where it has).
. "$(dirname "$0")/../lib.sh"

command -v python3 >/dev/null || skip "python3 not installed"
perf=$SRCDIR/scripts/perf
synth=$SRCDIR/tests/perf/synth.py
export FIO DBR_ENGINE=$ENGINE
export PYTHONPATH=$SRCDIR/scripts:$SRCDIR/tests/perf

# ---- the decision itself, over many seeded sets
if python3 - >"$TMPD/unit.out" 2>&1 <<'PY'; then
import random
import perf_stats as s
rnd = random.Random(22)
def noisy(n, scale, noise):
    return [1e6 * scale * (1 + rnd.uniform(-noise, noise)) for _ in range(n)]
flagged = sum(s.judge(noisy(5, 0.9, 0.01), noisy(5, 1.0, 0.01), 0.05,
                      backend="python")["verdict"] == "regression"
              for _ in range(200))
assert flagged == 200, "10%% loss, n=5, 1%% noise: %d/200 flagged" % flagged
quiet = [s.judge(noisy(5, 1.0, 0.05), noisy(5, 1.0, 0.05), 0.05,
                 backend="python") for _ in range(500)]
wolf = [j for j in quiet if j["verdict"] == "regression"]
assert not wolf, ("+-5%% noise, no shift: %d/500 flagged" % len(wolf), wolf[0])
# the fixed 5 %% threshold on medians that this replaces cries wolf there
median_wolf = sum(sorted(a)[2] / sorted(b)[2] < 0.95 for a, b in
                  ((noisy(5, 1, 0.05), noisy(5, 1, 0.05)) for _ in range(500)))
j = s.judge([1e6, 1.01e6], [1.2e6, 1.21e6], 0.05, backend="python")
assert j["verdict"] == "noisy" and j["needed"] == 4, j
assert abs(j["smallest_p"] - 1 / 3) < 1e-12, j
assert s.judge([1.0] * 3, [1.0] * 3, 0.05)["verdict"] == "noisy"
assert s.repetitions_needed(0.05) == 4 and s.repetitions_needed(0.01) == 5
# exact p-values a table gives: n=5/5 apart: 2/252; ties: U with midranks
assert abs(s.mann_whitney([1, 2, 3, 4, 5], [6, 7, 8, 9, 10], "python")["p"]
           - 2 / 252) < 1e-15
assert s.mann_whitney([1, 1, 2], [1, 2, 2], "python")["u"] == 3.0
# the interval holds the estimate; n=5/5 at alpha 0.05 reaches 96.8 %%
r, lo, hi, conf = s.ratio_interval([0.9, 0.91, 0.92, 0.93, 0.94],
                                   [1.0, 1.01, 1.02, 1.03, 1.04])
assert lo <= r <= hi and abs(conf - (1 - 2 * 4 / 252)) < 1e-12, (r, lo, hi, conf)
print("ok: 200/200 losses flagged, 0/500 noise sets flagged (a fixed 5%% "
      "threshold on the medians flagged %d/500)" % median_wolf)
PY
	pass "decision: $(tail -1 "$TMPD/unit.out")"
else
	fail "decision on synthetic sets"
	cat "$TMPD/unit.out"
fi

# ---- through scripts/perf: baseline and current result directories
c4="rr dbr:bounce"
c5="rr io_uring"
python3 "$synth" "$TMPD/base" 1 "$c4=1e6*1/0.01/5" "$c5=2e6*1/0.01/5"
python3 "$synth" "$TMPD/loss" 2 "$c4=1e6*0.9/0.01/5" "$c5=2e6*1/0.01/5"
python3 "$synth" "$TMPD/noise" 3 "$c4=1e6*1/0.05/5" "$c5=2e6*1/0.05/5"
python3 "$synth" "$TMPD/two" 4 "$c4=1e6*0.8/0.01/2" "$c5=2e6*1/0.01/2"
python3 "$synth" "$TMPD/failed" 5 "$c4=1e6*1/0/0" "$c5=2e6*1/0.01/5"

judge() { # NAME EXTRA-ARGS...: --from NAME against base, JUnit and summary
	local name=$1
	shift
	"$perf" --from "$TMPD/$name" --out "$TMPD/$name.out" --plot svg \
		--baseline "$TMPD/base" --junit "$TMPD/$name.xml" \
		--summary "$TMPD/$name.md" "$@" >"$TMPD/$name.log" 2>&1
}

judge loss --summary-plot-url https://ci.example/plot.svg
rc=$?
line=$(grep "^  $c4: REGRESSION" "$TMPD/loss.log" | head -1)
[ "$rc" -eq 3 ] && [[ $line == *"ratio 0.9"*"["*"]"*"p=0.00794"*"n=5 vs 5"* ]] &&
	pass "10% loss, n=5: exit 3, named: ${line:2:110}..." ||
	{ fail "10% loss, n=5: exit 3 and named (rc $rc)"; cat "$TMPD/loss.log"; }
grep -q "^  $c5: no change beyond noise" "$TMPD/loss.log" &&
	pass "the unchanged case beside it is not flagged" ||
	fail "the unchanged case beside it is not flagged"

judge noise
rc=$?
[ "$rc" -eq 0 ] && grep -q "^no regression against" "$TMPD/noise.log" &&
	pass "+-5% noise, no shift, n=5: no regression, exit 0" ||
	{ fail "+-5% noise: no regression (rc $rc)"; cat "$TMPD/noise.log"; }

judge two
rc=$?
[ "$rc" -eq 0 ] && grep -q "^  $c4: .*n=2 vs 5: too noisy to tell" "$TMPD/two.log" &&
	grep -q "^too noisy to tell (more repetitions needed): $c4, $c5" "$TMPD/two.log" &&
	pass "n=2 (a 20% loss): too noisy to tell, said per case, not a regression" ||
	{ fail "n=2: too noisy to tell (rc $rc)"; cat "$TMPD/two.log"; }

judge failed
rc=$?
[ "$rc" -eq 3 ] && pass "a case that failed now (in the baseline): exit 3, as before" ||
	fail "a case that failed now: exit 3 (got $rc)"

# ---- the JUnit files: the structure JUnit consumers read, and each verdict
if python3 - "$TMPD" "$c4" "$c5" >"$TMPD/junit.out" 2>&1 <<'PY'; then
import sys, xml.etree.ElementTree as ET
d, c4, c5 = sys.argv[1:]
def check(path):
    """testsuites > testsuite > testcase, counts that add up, at most one
    outcome per testcase, each with a message; what Jenkins/GitLab read."""
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites", root.tag
    suites = list(root)
    assert suites and all(s.tag == "testsuite" for s in suites)
    out = {}
    for s in suites:
        cases = s.findall("testcase")
        assert int(s.get("tests")) == len(cases)
        for attr, tag in (("failures", "failure"), ("errors", "error"),
                          ("skipped", "skipped")):
            assert int(s.get(attr)) == len(s.findall("testcase/" + tag)), attr
            assert int(root.get(attr)) == int(s.get(attr))
        float(s.get("time")); assert s.get("name") and s.get("timestamp")
        for p in s.findall("properties/property"):
            assert p.get("name") and p.get("value") is not None
        for tc in cases:
            assert tc.get("name") and tc.get("classname")
            float(tc.get("time"))
            kids = [k.tag for k in tc]
            assert set(kids) <= {"failure", "error", "skipped", "system-out",
                                 "system-err", "properties"}, kids
            outcome = [k for k in tc if k.tag in ("failure", "error", "skipped")]
            assert len(outcome) <= 1, kids
            for k in outcome:
                assert k.get("message"), k.tag
            out[tc.get("name")] = (outcome[0].tag, outcome[0].get("message")) \
                if outcome else ("pass", None)
    return out
loss = check(d + "/loss.xml")
kind, msg = loss[c4]
assert kind == "failure", loss
for want in (c4, "ratio 0.9", "[", "CI", "p=0.00794", "n=5 vs 5"):
    assert want in msg, (want, msg)
assert loss[c5][0] == "pass", loss
assert all(k == "pass" for k, _ in check(d + "/noise.xml").values())
two = check(d + "/two.xml")
assert two[c4][0] == "skipped" and "too noisy to tell" in two[c4][1], two
failed = check(d + "/failed.xml")
assert failed[c4][0] == "error" and "synthetic failure" in failed[c4][1], failed
print("ok")
PY
	pass "JUnit: valid structure; failure names case/ratio/interval/p, noisy is skipped, failed run is an error"
else
	fail "JUnit files"
	cat "$TMPD/junit.out"
fi

# ---- the summaries (Markdown for $GITHUB_STEP_SUMMARY)
grep -q "^\*\*1 regression\*\* against the results in $TMPD/base/results.json" "$TMPD/loss.md" &&
	grep -q "^| $c4 | 5 | .* | 0\.9[0-9]* \[0\.[0-9]*, 0\.[0-9]*\] | 0\.00794 (5/5) | \*\*REGRESSION\*\* |$" "$TMPD/loss.md" &&
	grep -q "^\*\*No regression\*\*" "$TMPD/noise.md" &&
	grep -q "^!\[synthetic\](https://ci.example/plot.svg)$" "$TMPD/loss.md" &&
	! grep -q "^!\[" "$TMPD/noise.md" &&
	grep -q "too noisy to tell (needs >= 4 repetitions per side)" "$TMPD/two.md" &&
	grep -q "^rr dbr:bounce .* 0\.[0-9]* (" "$TMPD/loss.md" &&
	pass "summary: outcome line, a row per case with ratio [CI], p and verdict, the ratio chart, the plot where served" ||
	{ fail "summary Markdown"; cat "$TMPD/loss.md"; }

# ---- p99 judged the same way when asked: a 10 % loss is a 10 % p99 rise
judge loss --tolerance 50% --lat-tolerance 5%
rc=$?
grep -q "^  $c4: REGRESSION; IOPS .*; p99 .* ratio 1\.1[0-9]* .*p=0.00794" "$TMPD/loss.log" &&
	[ "$rc" -eq 3 ] &&
	pass "--lat-tolerance 5%: the p99 rise is the regression (IOPS within 50%)" ||
	{ fail "--lat-tolerance: p99 judged (rc $rc)"; cat "$TMPD/loss.log"; }

# ---- a baseline file keeps every repetition; a version 1 file has medians
"$perf" --from "$TMPD/base" --out "$TMPD/base.out" --plot svg \
	--save-baseline "$TMPD/base.json" >/dev/null 2>&1
"$perf" --from "$TMPD/loss" --out "$TMPD/loss2.out" --plot svg \
	--baseline "$TMPD/base.json" >"$TMPD/file.log" 2>&1
rc=$?
[ "$rc" -eq 3 ] && grep -q "^  $c4: REGRESSION.*n=5 vs 5" "$TMPD/file.log" &&
	pass "--save-baseline keeps the repetitions: judged with ranks (exit 3)" ||
	{ fail "baseline file with repetitions (rc $rc)"; cat "$TMPD/file.log"; }
python3 -c "
import json, sys
b = json.load(open(sys.argv[1]))
b['version'] = 1
for c in b['cases'].values():
    del c['reps']
json.dump(b, open(sys.argv[2], 'w'))" "$TMPD/base.json" "$TMPD/v1.json"
"$perf" --from "$TMPD/two" --out "$TMPD/two2.out" --plot svg \
	--baseline "$TMPD/v1.json" >"$TMPD/v1.log" 2>&1
rc=$?
[ "$rc" -eq 3 ] && grep -q "^  $c4: REGRESSION; IOPS .* (-20\.[0-9]%): medians only" "$TMPD/v1.log" &&
	pass "version 1 baseline (medians only): the tolerance alone, and it says so" ||
	{ fail "version 1 baseline (rc $rc)"; cat "$TMPD/v1.log"; }

# ---- bad input: one line naming the cause, exit 2 (usage)
"$perf" --from "$TMPD/loss" --baseline db:last:3 >"$TMPD/bad1.log" 2>&1
rc1=$?
"$perf" --from "$TMPD/loss" --alpha 2 >"$TMPD/bad2.log" 2>&1
rc2=$?
"$perf" --from "$TMPD/loss" --baseline "$TMPD/nothere" >"$TMPD/bad3.log" 2>&1
rc3=$?
[ "$rc1$rc2$rc3" = 222 ] && grep -q "db:last:3 reads the stored history: add --db FILE" "$TMPD/bad1.log" &&
	grep -q "alpha 2: give a level between 0 and 1" "$TMPD/bad2.log" &&
	grep -q "baseline $TMPD/nothere: .*No such file" "$TMPD/bad3.log" &&
	pass "bad --baseline / --alpha: one line naming the fix, exit 2" ||
	{ fail "bad input ($rc1 $rc2 $rc3)"; cat "$TMPD"/bad?.log; }
finish
