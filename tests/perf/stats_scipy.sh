#!/usr/bin/env bash
# perf_stats' pure-Python Mann-Whitney U (what a bare GPU host runs)
# against scipy.stats (what scripts/perf uses where scipy is importable),
# on many random sets: exact p-values without ties, the normal
# approximation with tie correction on larger tied sets, exact p-values
# with ties against scipy's exact permutation test; and the same verdicts
# from both. Skipped only where no python3 here has scipy
# (scripts/packages.txt lists python3-scipy, so CI has it).
. "$(dirname "$0")/../lib.sh"

py=
for cand in python3 /usr/bin/python3; do
	if command -v "$cand" >/dev/null && "$cand" -c 'import scipy.stats' 2>/dev/null; then
		py=$cand
		break
	fi
done
[ -n "$py" ] || skip "no python3 here has scipy (apt-get install python3-scipy)"
export PYTHONPATH=$SRCDIR/scripts

if "$py" - >"$TMPD/agree.out" 2>&1 <<'PY'; then
import random
import numpy as np
from scipy import stats
import perf_stats as s
rnd = random.Random(2222)
worst = {"exact": 0.0, "normal": 0.0, "ties": 0.0}
for _ in range(400):      # no ties, up to 60 values in all: exact
    n1, n2 = rnd.randint(1, 30), rnd.randint(1, 30)
    x = [rnd.gauss(0, 1) for _ in range(n1)]
    y = [rnd.gauss(rnd.choice((0, 0.5, 2)), 1) for _ in range(n2)]
    a = s.mann_whitney(x, y, "python")
    b = stats.mannwhitneyu(x, y, alternative="two-sided", method="exact")
    assert a["method"] == "exact"
    worst["exact"] = max(worst["exact"], abs(a["p"] - b.pvalue))
for _ in range(400):      # ties, more than 60 values: normal
    n1, n2 = rnd.randint(25, 50), rnd.randint(36, 50)
    x = [round(rnd.gauss(0, 1), 1) for _ in range(n1)]
    y = [round(rnd.gauss(rnd.choice((0, 0.3)), 1), 1) for _ in range(n2)]
    a = s.mann_whitney(x, y, "python")
    b = stats.mannwhitneyu(x, y, alternative="two-sided", method="asymptotic")
    assert a["method"] == "normal"
    worst["normal"] = max(worst["normal"], abs(a["p"] - b.pvalue))
def u(x, y, axis):
    return stats.mannwhitneyu(x, y, axis=axis, method="asymptotic").statistic
for _ in range(150):      # ties, small: exact permutation distribution
    n1, n2 = rnd.randint(2, 6), rnd.randint(2, 6)
    x = [rnd.randint(0, 4) for _ in range(n1)]
    y = [rnd.randint(1, 5) for _ in range(n2)]
    a = s.mann_whitney(x, y, "python")
    b = stats.permutation_test((x, y), u, permutation_type="independent",
                               n_resamples=np.inf, alternative="two-sided",
                               vectorized=True)
    worst["ties"] = max(worst["ties"], abs(a["p"] - min(1.0, b.pvalue)))
assert all(v < 1e-9 for v in worst.values()), worst
same = 0
for _ in range(300):      # the verdicts scripts/perf prints
    n = rnd.randint(2, 8)
    shift = rnd.choice((0.85, 0.9, 0.97, 1.0, 1.1))
    x = [1e6 * shift * (1 + rnd.uniform(-0.03, 0.03)) for _ in range(n)]
    y = [1e6 * (1 + rnd.uniform(-0.03, 0.03)) for _ in range(rnd.randint(2, 8))]
    a, b = s.judge(x, y, 0.05, backend="python"), s.judge(x, y, 0.05)
    assert b["backend"] == "scipy", b
    assert a["verdict"] == b["verdict"] and abs(a["p"] - b["p"]) < 1e-9, (a, b)
    same += 1
print("ok: largest difference in p: exact %.1e, normal %.1e, exact with "
      "ties %.1e; %d/300 verdicts the same (scipy %s)" % (
          worst["exact"], worst["normal"], worst["ties"], same,
          __import__("scipy").__version__))
PY
	pass "$py: $(tail -1 "$TMPD/agree.out")"
else
	fail "$py: pure-Python Mann-Whitney U against scipy"
	cat "$TMPD/agree.out"
fi

# scripts/perf under that python says where its p-values came from
export PYTHONPATH=$SRCDIR/tests/perf
"$py" "$SRCDIR/tests/perf/synth.py" "$TMPD/a" 1 "j dbr=1e6*1/0.01/5"
"$py" "$SRCDIR/tests/perf/synth.py" "$TMPD/b" 2 "j dbr=1e6*0.9/0.01/5"
FIO=$FIO DBR_ENGINE=$ENGINE "$py" "$SRCDIR/scripts/perf" --from "$TMPD/b" \
	--out "$TMPD/b.out" --baseline "$TMPD/a" >"$TMPD/perf.log" 2>&1
rc=$?
[ "$rc" -eq 3 ] && grep -q "p-values by scipy" "$TMPD/perf.log" &&
	pass "scripts/perf under $py: p-values by scipy, the 10% loss flagged" ||
	{ fail "scripts/perf under $py (rc $rc)"; cat "$TMPD/perf.log"; }
finish
