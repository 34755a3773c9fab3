#!/usr/bin/env bash
# fio's cmdprio_percentage, cmdprio_class, cmdprio and cmdprio_bssplit, as
# fio's io_uring engine has them (fio's own cmdprio helpers): the share of
# I/O at each priority in fio's JSON (its per-priority latency) matches
# fio's io_uring engine on the same job, and fio's own checks refuse what
# they refuse there.
. "$(dirname "$0")/../lib.sh"

command -v python3 >/dev/null || skip "python3 not installed"

f=$(scratch_file)
job=(--name=p --filename="$f" --size=4m --bs=4k --rw=randread --direct=1
	--iodepth=4 --number_ios=2000 --output-format=json)
dbr=(--gpu=host --transfer=bounce)
run_ok layout --name=lay --filename="$f" --size=4m --bs=1m --rw=write "${dbr[@]}"

# prios JSON: "class/level:count ..." of the reads, and the total
prios() {
	python3 - "$1" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["jobs"][0]["read"]
print(r["total_ios"], " ".join("%d/%d:%d" % (p["prioclass"], p["prio"], p["clat_ns"]["N"])
			       for p in sorted(r.get("prios", []), key=lambda p: (p["prioclass"], p["prio"]))))
PY
}

# within DELTA I/O of each other, priority by priority
close_to() {
	python3 - "$1" "$2" "$3" <<'PY'
import sys
def parse(s):
    return {k: int(v) for k, v in (x.split(":") for x in s.split()[1:])}
a, b, d = parse(sys.argv[1]), parse(sys.argv[2]), int(sys.argv[3])
sys.exit(0 if a.keys() == b.keys() and len(a) > 1 and all(abs(a[k] - b[k]) <= d for k in a) else 1)
PY
}

check() {
	local name=$1
	shift
	if ! dbr_fio "${dbr[@]}" "${job[@]}" "$@" \
		--output="$TMPD/$name.json" >"$TMPD/$name.out" 2>&1; then
		fail "$name: fio failed: $(grep -m1 -E 'dmabuf_uring|fio:' "$TMPD/$name.out")"
		return
	fi
	run_fio --ioengine=io_uring "${job[@]}" "$@" --output="$TMPD/$name.ctl.json" \
		>"$TMPD/$name.ctl.out" 2>&1 || { fail "$name: the io_uring control failed"; return; }
	local ours ctl
	ours=$(prios "$TMPD/$name.json") ctl=$(prios "$TMPD/$name.ctl.json")
	# 2000 I/O drawn at random: allow 5 % of them either way
	if close_to "$ours" "$ctl" 100; then
		pass "$name: I/O per priority $ours, fio's io_uring engine $ctl"
	else
		fail "$name: I/O per priority $ours, fio's io_uring engine $ctl"
	fi
}

check percentage --cmdprio_percentage=30 --cmdprio_class=1 --cmdprio=2
check bssplit --bssplit=4k/50:8k/50 --cmdprio_bssplit=4k/20:8k/80 --cmdprio_class=2

# fio's own check, as for its io_uring engine: not both at once
rc=0
dbr_fio "${dbr[@]}" "${job[@]}" --cmdprio_percentage=30 --cmdprio_bssplit=4k/20 \
	>"$TMPD/both.out" 2>&1 || rc=$?
[ $rc -ne 0 ] && grep -qi "cmdprio_percentage and cmdprio_bssplit" "$TMPD/both.out" &&
	pass "cmdprio_percentage with cmdprio_bssplit refused (exit $rc): $(grep -m1 -i 'cmdprio' "$TMPD/both.out")" ||
	fail "cmdprio_percentage with cmdprio_bssplit: exit $rc, $(head -3 "$TMPD/both.out")"
finish
