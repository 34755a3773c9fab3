#!/usr/bin/env bash
# The per-GPU line sums its threads' rates as fio's group figures do, which
# means something only when the threads did their I/O at the same time. Each
# thread's record (gpu_stats_file) carries its I/O window (first commit,
# last reaped I/O), and the line says so when the threads were together for
# under 90% of their time. Threads started together: no such words, windows
# that overlap. A second job held back by startdelay until the first has
# ended: the line says so, and the windows do not overlap.
. "$(dirname "$0")/../lib.sh"

command -v python3 >/dev/null || skip "python3 not installed"

f=$(scratch_file)
truncate -s 64m "$f"
job=(--filename="$f" --size=64m --gpu=host --transfer=bounce --direct=1
	--rw=randread --bs=4k --iodepth=8 --time_based --runtime=1 --thread)

# windows FILE: "OVERLAP_MS N" of the records in FILE (gpu_stats_file)
windows() {
	python3 - "$1" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
assert all(r["io_start_ms"] is not None and r["io_end_ms"] > r["io_start_ms"] for r in recs), recs
print("%.0f %d" % (min(r["io_end_ms"] for r in recs) - max(r["io_start_ms"] for r in recs), len(recs)))
PY
}

# together: two threads of one job
out=$TMPD/together.out
if dbr_fio --name=t "${job[@]}" --numjobs=2 --gpu_stats_file="$TMPD/together.jsonl" \
	>"$out" 2>&1 && ! grep -q "err= *[1-9]" "$out"; then
	line=$(grep -m1 '^dmabuf_uring: per GPU:' "$out")
	read -r overlap n < <(windows "$TMPD/together.jsonl")
	if [ "$n" = 2 ] && [ "$overlap" -gt 500 ] && [[ "$line" == *"2 threads"* ]] &&
		[[ "$line" != *together* ]]; then
		pass "two threads started together: windows overlap ${overlap} ms, no warning: ${line:0:120}"
	else
		fail "two threads started together: want overlapping windows ($overlap ms of $n records) and no warning: $line"
	fi
else
	fail "two threads started together: fio failed"
	show_failure "$out"
fi

# apart: the second job starts after the first has ended (same group)
out=$TMPD/apart.out
if dbr_fio --gpu_stats_file="$TMPD/apart.jsonl" --name=a "${job[@]}" \
	--name=b "${job[@]}" --startdelay=2 >"$out" 2>&1 && ! grep -q "err= *[1-9]" "$out"; then
	line=$(grep -m1 '^dmabuf_uring: per GPU:' "$out")
	read -r overlap n < <(windows "$TMPD/apart.jsonl")
	if [ "$n" = 2 ] && [ "$overlap" -lt 0 ] &&
		[[ "$line" == *"; but its threads did I/O together for only 0% of their time"* ]]; then
		pass "second job a startdelay later: windows ${overlap} ms apart, and the line says so"
	else
		fail "second job a startdelay later: want windows apart ($overlap ms of $n records) and the warning: $line"
	fi
else
	fail "second job a startdelay later: fio failed"
	show_failure "$out"
fi
finish
