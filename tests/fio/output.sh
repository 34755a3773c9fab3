#!/usr/bin/env bash
# Output that machines read: with --output-format=json, json+ or terse, on
# stdout or in --output=FILE, fio's output holds no line of ours and parses
# whole; with it on stdout the engine's lines reach people on stderr, with it
# in a file nothing of ours goes anywhere (fio says nothing of its own there
# either, and harnesses read stderr as errors). Jobs as
# processes and as threads: fio before 3.42 drops what a job process logged
# from --output=FILE, but a thread's lines land there (and from 3.42 on a
# process's too). Normal output keeps the lines with fio's, on stdout or in
# the file.
. "$(dirname "$0")/../lib.sh"

command -v python3 >/dev/null || skip "python3 not installed"

f=$(scratch_file)
job=(--name=o --filename="$f" --size=1m --bs=4k --iodepth=4 --rw=randwrite
	--gpu=host --transfer=auto --direct=1 --verify=crc32c)
# the two lines this job makes the engine say
auto_re='^dmabuf_uring: o: transfer=auto -> bounce'
path_re='^dmabuf_uring: o: gpu=host dev=0 transfer=bounce'

# parses FORMAT FILE: FILE is exactly one run's output in FORMAT, of job o,
# without error
parses() {
	python3 - "$1" "$2" <<'PY'
import json, sys
fmt, path = sys.argv[1], sys.argv[2]
text = open(path).read()
if fmt.startswith("json"):
    doc = json.loads(text)          # the whole file, nothing before or after
    (job,) = doc["jobs"]
    assert job["jobname"] == "o" and job["error"] == 0, (job["jobname"], job["error"])
    assert job["write"]["total_ios"] == 256, job["write"]["total_ios"]
    # json+ adds the latency histogram bins
    assert ("bins" in job["write"]["clat_ns"]) == (fmt == "json+"), fmt
else:
    lines = text.splitlines()
    assert len(lines) == 1, lines
    fields = lines[0].split(";")
    assert fields[0] == "3" and fields[1].startswith("fio-"), fields[:2]
    assert fields[2] == "o" and fields[4] == "0", fields[2:5]
PY
}

# ours FILE: how many lines of ours FILE holds
ours() { grep -c '^dmabuf_uring:' "$1" || true; }

for fmt in json json+ terse; do
	for mode in process thread; do
		extra=()
		[ "$mode" = thread ] && extra=(--thread)
		for dest in stdout file; do
			name=$fmt-$mode-$dest
			out=$TMPD/$name.out err=$TMPD/$name.err res=$out
			args=("${job[@]}" "${extra[@]}" --output-format="$fmt")
			[ "$dest" = file ] && res=$TMPD/$name.res && args+=(--output="$res")
			rm -f "$f"
			if ! dbr_fio "${args[@]}" >"$out" 2>"$err"; then
				fail "$name: fio failed"
				cat "$out" "$err" | tail -10 | sed 's/^/    /'
				continue
			fi
			if [ "$(ours "$out")" -eq 0 ] && [ "$(ours "$res")" -eq 0 ] &&
				parses "$fmt" "$res" >"$TMPD/$name.parse" 2>&1; then
				pass "$name: fio's $fmt output alone, and it parses"
			else
				fail "$name: lines of ours on stdout/in the file, or it does not parse"
				sed 's/^/    /' "$TMPD/$name.parse"
				grep -h '^dmabuf_uring:' "$out" "$res" | sed 's/^/    ! /'
			fi
			# output on stdout: the lines on stderr; into a file:
			# none at all, as fio says none of its own there
			want=1
			[ "$dest" = file ] && want=0
			if [ "$(grep -c "$auto_re" "$err")" -eq $want ] &&
				[ "$(grep -c "$path_re" "$err")" -eq $want ] &&
				{ [ $want = 1 ] || [ ! -s "$err" ]; }; then
				pass "$name: the engine's two lines on stderr $want time(s) each$([ $want = 0 ] && echo ", stderr empty")"
			else
				fail "$name: the engine's two lines on stderr $want time(s) each"
				sed 's/^/    /' "$err"
			fi
		done
	done
done

# normal output: the lines stay with fio's on stdout, not twice on stderr
rm -f "$f"
if dbr_fio "${job[@]}" >"$TMPD/normal.out" 2>"$TMPD/normal.err" &&
	[ "$(grep -c "$path_re" "$TMPD/normal.out")" -eq 1 ] &&
	[ "$(grep -c "$auto_re" "$TMPD/normal.out")" -eq 1 ] &&
	[ "$(ours "$TMPD/normal.err")" -eq 0 ]; then
	pass "normal output: the engine's lines on stdout with fio's"
else
	fail "normal output: the engine's lines on stdout with fio's"
	cat "$TMPD/normal.out" "$TMPD/normal.err" | head -20 | sed 's/^/    /'
fi
# normal output into a file: the lines in that file, as fio's own log lines
# are, once each, and stderr stays empty (fio's t/run-fio-tests.py asks
# that of every job), for job processes and threads on every fio version
for mode in process thread; do
	extra=()
	[ "$mode" = thread ] && extra=(--thread)
	rm -f "$f"
	res=$TMPD/normal-$mode.res
	if dbr_fio "${job[@]}" "${extra[@]}" --output="$res" >"$TMPD/normal-$mode.out" \
		2>"$TMPD/normal-$mode.err" && [ ! -s "$TMPD/normal-$mode.err" ] &&
		[ "$(grep -c "$path_re" "$res")" -eq 1 ] && [ "$(grep -c "$auto_re" "$res")" -eq 1 ] &&
		grep -q "^o: (groupid=0" "$res"; then
		pass "normal output into a file, $mode: the engine's lines in the file, stderr empty"
	else
		fail "normal output into a file, $mode: the engine's lines in the file, stderr empty"
		cat "$TMPD/normal-$mode.err" "$res" | head -20 | sed 's/^/    /'
	fi
done

# a refusal with json into a file: the reason reaches people on stderr
if dbr_fio "${job[@]}" --transfer=p2p --output-format=json --output="$TMPD/bad.res" \
	>"$TMPD/bad.out" 2>"$TMPD/bad.err"; then
	fail "p2p refusal with json into a file: fio exited 0"
else
	grep -q '^dmabuf_uring: transfer=p2p cannot run' "$TMPD/bad.err" &&
		pass "p2p refusal with json into a file: the reason on stderr" ||
		{ fail "p2p refusal with json into a file: the reason on stderr"; cat "$TMPD/bad.err"; }
	log "the file after the refusal (fio's business): $(ours "$TMPD/bad.res") line(s) of ours"
fi
finish
