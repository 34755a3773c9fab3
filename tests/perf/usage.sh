#!/usr/bin/env bash
# scripts/perf as a CI job runs it: what was asked is checked before the
# first fio run (counts, fractions, the baseline, the database, the JUnit
# path), each refusal one `scripts/perf: ...` line with exit 2; every run
# gets a results directory of its own; a regression exits 3 whatever fails
# after the judging. Two fio runs of 0.2 s; the rest runs no fio.
. "$(dirname "$0")/../lib.sh"

command -v python3 >/dev/null || skip "python3 not installed"
perf=$SRCDIR/scripts/perf
export FIO DBR_ENGINE=$ENGINE
run1=(--jobs overhead-4k-randread --impl dbr --runtime 0.2 --target scratch:file --size 4m)

# refused NAME REGEX ARGS...: scripts/perf ARGS exits 2 with exactly one
# line, `scripts/perf: ` and REGEX, and runs nothing (no results directory)
refused() {
	local name=$1 re=$2 out=$TMPD/$1.out rc=0
	shift 2
	rm -rf "$TMPD/o"
	"$perf" "$@" --out "$TMPD/o" >"$out" 2>&1 || rc=$?
	if [ "$rc" -eq 2 ] && [ "$(wc -l <"$out")" -eq 1 ] &&
		grep -Eq "^scripts/perf: .*$re" "$out" && [ ! -e "$TMPD/o" ]; then
		pass "$name: exit 2, nothing run: $(cat "$out")"
	else
		fail "$name: want exit 2, one line matching /$re/, no $TMPD/o (exit $rc)"
		sed 's/^/    /' "$out" | tail -8
		[ -e "$TMPD/o" ] && echo "    $TMPD/o was made"
	fi
}

# ---- counts: non-positive ones, and a matrix with nothing in it
echo '{"version": 2, "cases": {}}' >"$TMPD/empty-base.json"
refused repeat-negative "--repeat -3: give a whole number above 0" \
	"${run1[@]}" --repeat -3 --baseline "$TMPD/empty-base.json" --junit "$TMPD/j.xml"
[ ! -e "$TMPD/j.xml" ] && pass "--repeat -3: no JUnit file written" ||
	fail "--repeat -3 wrote a JUnit file"
refused repeat-zero "--repeat 0: give a whole number above 0" "${run1[@]}" --repeat 0
refused repeat-word "--repeat x: give a whole number above 0" "${run1[@]}" --repeat x
refused iodepth-zero "--iodepth 0: give a whole number above 0" "${run1[@]}" --iodepth 1,0
refused number-ios "--number-ios -1: give a whole number above 0" \
	--jobs overhead-4k-randread --number-ios -1 --target scratch:file
refused timeout "--timeout -5: give a whole number above 0" "${run1[@]}" --timeout -5
refused runtime "--runtime -1: give seconds above 0" \
	--jobs overhead-4k-randread --runtime -1 --target scratch:file
refused bs "--bs 0k: give a block size" "${run1[@]}" --bs 0k
printf '[perf]\njobs = overhead-4k-randread\nrepeat = -3\n' >"$TMPD/neg.ini"
refused config-repeat "--repeat -3: give a whole number above 0" \
	--config "$TMPD/neg.ini" --target scratch:file
if ! "$FIO" --enghelp=libcufile >/dev/null 2>&1; then
	refused empty-matrix "--impl libcufile: .* was built without libcufile .*; nothing left to run" \
		--jobs overhead-4k-randread --impl libcufile --target scratch:file
fi
rc=0
"$perf" history --db "$TMPD/none.sqlite" --last 0 >"$TMPD/last.out" 2>&1 || rc=$?
[ "$rc" -eq 2 ] && grep -q "^scripts/perf: --last 0: give a whole number above 0" "$TMPD/last.out" &&
	pass "history --last 0: exit 2" || { fail "history --last 0 (exit $rc)"; cat "$TMPD/last.out"; }

refused impl-option "--impl dbr\+gpu_watch_cq: 'gpu_watch_cq' is not key=value" \
	"${run1[@]}" --impl dbr+gpu_watch_cq
refused impl-option-base "--impl io_uring\+sqthread_poll=1: only dbr and dbr-host take \+key=value" \
	"${run1[@]}" --impl io_uring+sqthread_poll=1

# ---- values that were tracebacks
refused tolerance "--tolerance abc: give a fraction below 100%" "${run1[@]}" --tolerance abc
refused lat-tolerance "--lat-tolerance x%: give a fraction" "${run1[@]}" --lat-tolerance x%
refused alpha "--alpha x: give a level between 0 and 1" "${run1[@]}" --alpha x
refused size "--size 4q: give a size" --jobs overhead-4k-randread --target scratch:file --size 4q
refused option "unrecognized arguments: --bogus \(see scripts/perf --help\)" "${run1[@]}" --bogus

# ---- the baseline and the database, read before the first fio run (of
# 30 s: refused() sees that no results directory, made before fio runs,
# was made)
echo '{"cases": {"x": 5}}' >"$TMPD/five.json"
echo '{"version": 2, "cases": {"x": {"iops": "fast"}}}' >"$TMPD/word.json"
echo '{"records": [{"id": 1}]}' >"$TMPD/rec.json"
echo '[1, 2]' >"$TMPD/list.json"
echo 'not a database' >"$TMPD/junk.sqlite"
long=(--jobs overhead-4k-randread --impl dbr --runtime 30 --target scratch:file --size 4m)
refused baseline-case "--baseline $TMPD/five.json: case 'x': 5 where its figures should be" \
	"${long[@]}" --baseline "$TMPD/five.json"
refused baseline-figure "case 'x': iops is \"fast\", not a number" "${long[@]}" --baseline "$TMPD/word.json"
refused baseline-records "record 1: \{\"id\": 1\}, not a record" "${long[@]}" --baseline "$TMPD/rec.json"
refused baseline-list "list.json: neither a baseline" "${long[@]}" --baseline "$TMPD/list.json"
refused baseline-absent "nothere.json: No such file or directory" "${long[@]}" --baseline "$TMPD/nothere.json"
refused baseline-db-form "--baseline db:first:2: the form is db:last:N" \
	"${long[@]}" --db "$TMPD/perf.sqlite" --baseline db:first:2
refused db-junk "--db $TMPD/junk.sqlite: file is not a database" "${long[@]}" --db "$TMPD/junk.sqlite"
refused db-dir "--db /nonexistent/p.sqlite: unable to open database file" \
	"${long[@]}" --db /nonexistent/p.sqlite
refused junit "--junit /nonexistent/j.xml: cannot write it: No such file or directory" \
	"${long[@]}" --junit /nonexistent/j.xml
refused summary "--summary $TMPD: cannot write it: Is a directory" "${long[@]}" --summary "$TMPD"

# ---- results directories: two runs started at once get one each
mkdir "$TMPD/cwd"
(
	cd "$TMPD/cwd" || exit 1
	for i in 1 2 3; do
		"$perf" "${run1[@]}" --dry-run >"$TMPD/dry$i.out" 2>&1 &
	done
	wait
)
n=$(ls -d "$TMPD"/cwd/results/perf-* 2>/dev/null | wc -l)
each=$(for d in "$TMPD"/cwd/results/perf-*; do ls "$d/runs" | wc -l; done | sort -u | tr '\n' ' ')
[ "$n" -eq 3 ] && [ "$each" = "2 " ] &&
	pass "3 runs started at once: 3 results directories, each with its own run ($(basename "$(ls -d "$TMPD"/cwd/results/perf-* | head -1)"))" ||
	{ fail "3 runs at once: want 3 directories of 2 files each, got $n ($each)"; cat "$TMPD"/dry?.out; }

# a given --out that holds files: refused, untouched; --overwrite replaces
# what a run wrote there and nothing else
o=$TMPD/out
rc=0
"$perf" "${run1[@]}" --out "$o" --save-baseline "$TMPD/base.json" >"$TMPD/first.out" 2>&1 || rc=$?
[ "$rc" -eq 0 ] || { fail "a 0.2 s run (exit $rc)"; tail "$TMPD/first.out"; finish; exit 1; }
touch "$o/runs/stale.rep9.json" "$o/notes.txt"
rc=0
"$perf" "${run1[@]}" --out "$o" >"$TMPD/again.out" 2>&1 || rc=$?
[ "$rc" -eq 2 ] && [ "$(wc -l <"$TMPD/again.out")" -eq 1 ] &&
	grep -q "^scripts/perf: --out $o holds files (an earlier run's?): give a new directory, or add --overwrite" "$TMPD/again.out" &&
	[ -e "$o/runs/stale.rep9.json" ] && [ -s "$o/results.json" ] &&
	pass "an --out with files: exit 2, left as it was" ||
	{ fail "an --out with files (exit $rc)"; cat "$TMPD/again.out"; }
rc=0
"$perf" "${run1[@]}" --out "$o" --overwrite >"$TMPD/over.out" 2>&1 || rc=$?
[ "$rc" -eq 0 ] && [ ! -e "$o/runs/stale.rep9.json" ] && [ -e "$o/notes.txt" ] &&
	[ "$(ls "$o/runs" | grep -c '\.json$')" -eq 1 ] && [ -s "$o/results.json" ] &&
	pass "--overwrite: the earlier run's files replaced, another file kept" ||
	{ fail "--overwrite (exit $rc)"; ls -R "$o"; tail -3 "$TMPD/over.out"; }

# ---- a regression exits 3 even where an output cannot be written after
# the judging (/dev/full opens, and refuses the write). The baseline is
# this very run at twice its IOPS, so the regression does not hang on how
# fast two runs on a loaded machine happened to be.
"$perf" --from "$o" --save-baseline "$TMPD/now.json" >"$TMPD/now.out" 2>&1 ||
	{ fail "--from --save-baseline"; tail -3 "$TMPD/now.out"; }
python3 - "$TMPD/now.json" "$TMPD/fast.json" <<'PY'
import json, sys
b = json.load(open(sys.argv[1]))
b["version"] = 1
for c in b["cases"].values():
    del c["reps"]
    c["iops"] *= 2
json.dump(b, open(sys.argv[2], "w"))
PY
rc=0
"$perf" --from "$o" --baseline "$TMPD/fast.json" --junit /dev/full \
	--summary /dev/full >"$TMPD/full.out" 2>&1 || rc=$?
[ "$rc" -eq 3 ] && grep -q "^REGRESSION against" "$TMPD/full.out" &&
	grep -q "^scripts/perf: --junit /dev/full: cannot write it: No space left on device$" "$TMPD/full.out" &&
	grep -q "^scripts/perf: --summary /dev/full: cannot write it: No space left on device$" "$TMPD/full.out" &&
	! grep -q Traceback "$TMPD/full.out" &&
	pass "a regression with an unwritable JUnit file: exit 3, and it says the file was not written" ||
	{ fail "a regression with an unwritable JUnit file (exit $rc, want 3)"; tail -12 "$TMPD/full.out"; }
rc=0
"$perf" --from "$o" --junit /dev/full >"$TMPD/full0.out" 2>&1 || rc=$?
[ "$rc" -eq 1 ] && grep -q "^scripts/perf: --junit /dev/full: cannot write it" "$TMPD/full0.out" &&
	pass "no regression, an unwritable JUnit file: exit 1" ||
	{ fail "no regression, an unwritable JUnit file (exit $rc, want 1)"; tail -5 "$TMPD/full0.out"; }
finish
