#!/usr/bin/env bash
# stall_watchdog: a read that nothing completes (a pseudo-terminal whose
# master writes nothing for 4 s, a real request the kernel holds) gets one
# line naming the target, how long nothing completed and the oldest
# request's age, with where to look; the job then finishes when the data
# comes. stall_watchdog=0 stays silent. (--thread: fio 3.33 frees a job
# process's options twice at exit when its file is a terminal.)
. "$(dirname "$0")/../lib.sh"

command -v python3 >/dev/null || skip "no python3 to hold a pseudo-terminal"

# stalled NAME FIO-ARGS...: fio reads 4 KiB from a pty the master fills
# after 4 s
stalled() {
	local name=$1 pty
	shift
	python3 -c 'import os, sys, time
m, s = os.openpty()
print(os.ttyname(s), flush=True)
time.sleep(4)
os.write(m, b"x" * 8192)
time.sleep(5)' >"$TMPD/$name.pty" &
	at_exit "kill $! 2>/dev/null"
	for _ in $(seq 50); do [ -s "$TMPD/$name.pty" ] && break; sleep 0.1; done
	pty=$(cat "$TMPD/$name.pty")
	[ -c "$pty" ] || die "no pseudo-terminal ($pty)"
	timed_fio TERM 30 --ioengine="external:$ENGINE" --name=st --filename="$pty" \
		--size=4k --bs=4k --rw=read --gpu=host --transfer=bounce --thread "$@" \
		>"$TMPD/$name.out" 2>&1
}

stalled on --stall_watchdog=1 || fail "fio with a stalled read exited $?"
re="^dmabuf_uring: st: bounce I/O stalled: nothing completed for [1-3]\.[0-9] s with 1 request in flight on /dev/pts/[0-9]+, the oldest issued [0-9.]+ s ago\. Likely: .*see dmesg"
n=$(grep -cE "$re" "$TMPD/on.out")
[ "$n" -eq 1 ] && pass "one stall line: $(grep -m1 'stalled' "$TMPD/on.out" | cut -c1-140)" ||
	{ fail "want one stall line matching /$re/, got $n"; sed 's/^/    /' "$TMPD/on.out" | head -20; }
grep -q "err= 0" "$TMPD/on.out" && pass "the job finished once the data came" ||
	fail "the stalled job did not finish cleanly"

stalled off --stall_watchdog=0 || fail "fio with a stalled read exited $?"
! grep -q "stalled" "$TMPD/off.out" && pass "stall_watchdog=0: no line" ||
	fail "stall_watchdog=0 still spoke"
finish
