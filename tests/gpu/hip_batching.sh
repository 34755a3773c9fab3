#!/usr/bin/env bash
# Copy passes under fio's default batching (one io_u per commit, one per
# reap), on a target whose I/O is fast, through the HIP double's
# asynchronous copies: 4k random writes and reads at iodepth 32 must send
# several copies per runtime call, not one (the end-of-job line's "N GPU
# copies in M runtime calls"). A structural check, not a timed one: it reads
# counts, never rates.
. "$(dirname "$0")/../lib.sh"

use_hip_double

# the fastest target here: zram (memory-fast completions, as an NVMe drive's
# come fast), else a file in memory
if use_zram 64M; then
	target=$ZRAM
	run_ok fill --name=fill --filename="$target" --bs=1m --rw=write \
		--direct=1 --gpu=host --transfer=bounce --refill_buffers=1
else
	target=/dev/shm/dbr-batching-$$.bin
	at_exit "rm -f $target"
	log "no free zram device: a file in /dev/shm"
	truncate -s 64M "$target"
fi

# copies_per_call NAME FIO-ARGS...: the thread's copies / runtime calls
per_call() {
	local name=$1 out=$TMPD/$1.out
	shift
	dbr_fio --name="$name" --filename="$target" --size=64m --bs=4k \
		--iodepth=32 --direct=1 --gpu=hip --transfer=bounce --thread \
		--time_based --runtime=1 "$@" >"$out" 2>&1 ||
		{ show_failure "$out" >&2; echo 0; return; }
	sed -n 's/.* thread 0: .* \([0-9]*\) GPU copies in \([0-9]*\) runtime calls.*/\1 \2/p' "$out" |
		awk '$2 > 0 { printf "%.2f", $1 / $2; exit } END { if (!NR) print 0 }'
}

# A file in memory completes reads through io-wq, so there reads' passes
# follow how fast the workers finish, not the engine: only writes (held
# before the ring) are judged there.
rws="randwrite randread randrw"
[ -n "$ZRAM" ] || { rws=randwrite; log "SKIP randread, randrw: no zram, and a /dev/shm file's reads complete through io-wq"; }
# Copies done at once, and slow ones (5 us asked of the double, a sleep:
# with the timer's slack 50-60 us a copy), where a pass sent at every wait
# held what one wake-up brought: 1.01 copies a call for reads.
for delay in 0 5; do
	for rw in $rws; do
		r=$(HIPDOUBLE_DELAY_US=$delay per_call "$rw-$delay" --rw="$rw")
		what="$rw 4k qd32, fio's default batching, on $target, copies of ${delay} us"
		if awk -v r="$r" 'BEGIN { exit !(r >= 3) }'; then
			pass "$what: $r copies per runtime call"
		else
			fail "$what: $r copies per runtime call (want >= 3)"
		fi
	done
done

# One I/O at a time (iodepth 1): each copy must go to the runtime as soon
# as its I/O needs it (a read when it completes, a write when fio queues
# it), one call a copy: a copy held for a pass that no second I/O will ever
# fill would wait for nothing. 2000 I/O each way, fast and slow copies,
# through job threads and through the GPU owner (job processes).
qd1() {
	local name=$1 out=$TMPD/$1.out
	shift
	dbr_fio --name="$name" --filename="$target" --size=64m --bs=4k \
		--iodepth=1 --direct=1 --gpu=hip --transfer=bounce --number_ios=2000 \
		"$@" >"$out" 2>&1 || { show_failure "$out" >&2; return; }
	sed -n 's/.* thread 0: .* \([0-9]*\) GPU copies in \([0-9]*\) runtime calls.*/\1 \2/p' "$out"
}
for delay in 0 5; do
	for rw in randread randwrite; do
		for mode in --thread --gpu_owner=1; do
			r=$(HIPDOUBLE_DELAY_US=$delay qd1 "qd1-$rw-$delay${mode#--}" --rw="$rw" "$mode")
			what="$rw 4k qd1 ($mode), copies of $delay us"
			# the buffer's first fill is one copy of its own, then one a read
			if [ -n "$r" ] && set -- $r && [ "$1" -eq "$2" ] && [ "$1" -ge 2000 ]; then
				pass "$what: each of $1 copies sent on its own"
			else
				fail "$what: '${r:-no end-of-job line}' (want as many runtime calls as copies, >= 2000)"
			fi
		done
	done
done

finish
