#!/usr/bin/env bash
# DBR_PROFILE=1: each job thread's end-of-job line of where its time in the
# engine went per I/O (prof.h). Without it no such line; with it one per
# thread, counting the I/O the thread queued, its io_uring_enter calls
# inside the time of fio's calls that made them, and copy passes only
# where there are copies (the HIP double's bounce path; gpu=host has none).
# Counts and sums are checked, never rates.
. "$(dirname "$0")/../lib.sh"

use_hip_double
target=$(scratch_file)
truncate -s 16M "$target"

# prof NAME FIO-ARGS...: run one job; its output in $TMPD/NAME.out
prof() {
	local name=$1
	shift
	dbr_fio --name="$name" --filename="$target" --size=16m --bs=4k \
		--rw=randread --iodepth=8 --direct=1 --transfer=bounce --thread \
		--time_based --runtime=1 "$@" >"$TMPD/$name.out" 2>&1 ||
		{ show_failure "$TMPD/$name.out"; return 1; }
}

# fields NAME: each profile line as "queued queue commit getevents
# enter_us enters passes waits" (us per I/O; enters per I/O)
fields() {
	sed -n 's/.* profile (DBR_PROFILE), per I\/O queued (\([0-9]*\)): \([0-9.]*\) us in queue, \([0-9.]*\) in commit, \([0-9.]*\) in getevents (of these, \([0-9.]*\) in \([0-9.]*\) io_uring_enter calls: .*; \([0-9.]*\) sending copy passes, \([0-9.]*\) waiting on copies)$/\1 \2 \3 \4 \5 \6 \7 \8/p' \
		"$TMPD/$1.out"
}

# issued NAME: the reads fio issued (its "issued rwts: total=R,...")
issued() {
	sed -n 's/.*issued rwts: total=\([0-9]*\),.*/\1/p' "$TMPD/$1.out" | head -1
}

# off_ok NAME: the job ran and said nothing of a profile
off_ok() {
	local n

	n=$(grep -c 'profile (DBR_PROFILE)' "$TMPD/$1.out")
	[ "$n" -eq 0 ] && pass "$1: no profile line" || fail "$1: $n profile lines (want none)"
}
if prof no-profile --gpu=host; then off_ok no-profile; else fail "no DBR_PROFILE: the job failed"; fi
if DBR_PROFILE=0 prof profile-0 --gpu=host; then off_ok profile-0; else fail "DBR_PROFILE=0: the job failed"; fi

export DBR_PROFILE=1

# host memory: no copies, so no passes and no copy waits; one thread's I/O
# queued at least what fio issued (a queue call fio retries counts again)
if prof host1 --gpu=host; then
	read -r q qu co ge eu en pa wa <<<"$(fields host1)"
	i=$(issued host1)
	if [ -n "$q" ] && [ -n "$i" ] && [ "$q" -ge "$i" ] && [ "$i" -gt 0 ]; then
		pass "gpu=host: $q I/O queued, fio issued $i"
	else
		fail "gpu=host: queued '${q:-no line}' against fio's issued '${i:-?}'"
	fi
	if awk -v qu="$qu" -v co="$co" -v ge="$ge" -v eu="$eu" -v en="$en" -v pa="$pa" -v wa="$wa" \
		'BEGIN { exit !(en > 0 && eu > 0 && eu <= qu + co + ge + 0.01 && pa == 0 && wa == 0) }'; then
		pass "gpu=host: $en enters per I/O taking $eu us, inside $qu + $co + $ge us of fio's calls; no copy passes"
	else
		fail "gpu=host: enters $en ($eu us) against fio's calls $qu + $co + $ge us, passes $pa, waits $wa"
	fi
else
	fail "gpu=host: the job failed"
fi

# two threads: a line each
if prof host2 --gpu=host --numjobs=2; then
	n=$(fields host2 | wc -l)
	[ "$n" -eq 2 ] && pass "two threads: two profile lines" ||
		fail "two threads: $n profile lines (want 2)"
else
	fail "two threads: the job failed"
fi

# the bounce path through the HIP double: copy passes are sent and timed
if prof hip --gpu=hip; then
	read -r q qu co ge eu en pa wa <<<"$(fields hip)"
	if awk -v q="${q:-0}" -v qu="$qu" -v co="$co" -v ge="$ge" -v pa="$pa" -v wa="$wa" \
		'BEGIN { exit !(q > 0 && pa > 0 && pa <= qu + co + ge + 0.01 && wa <= ge + 0.01) }'; then
		pass "gpu=hip bounce: $pa us sending copy passes and $wa us waiting on copies per I/O"
	else
		fail "gpu=hip bounce: passes '${pa:-no line}' and waits '$wa' us per I/O against fio's calls $qu + $co + $ge us (want passes > 0, both inside)"
	fi
else
	fail "gpu=hip bounce: the job failed"
fi

finish
