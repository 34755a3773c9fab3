#!/usr/bin/env bash
# force_async=N as fio's io_uring engine has it: every Nth request the engine
# prepares (reads, writes and syncs alike) carries IOSQE_ASYNC, so io_uring
# hands it to an io-wq worker without trying it inline; 0 (the default) sets
# it on none. Checked in what reached the kernel (tracefs).
. "$(dirname "$0")/../lib.sh"

trace_ok || skip "tracefs io_uring events not available (needs root and tracefs)"

f=$(scratch_file)
run_ok layout --name=lay --filename="$f" --size=4m --bs=1m --rw=write \
	--gpu=host --transfer=bounce

# marks SQES: the SQEs as "OPCODE:A" (IOSQE_ASYNC set) or "OPCODE:-", one line
# each, in the order the kernel saw them
marks() {
	local op flags
	while read -r op flags; do
		if (((16#${flags#0x} & 0x10) != 0)); then echo "$op:A"; else echo "$op:-"; fi
	done <"$1"
}

# every Nth line of MARKS (and only those) is async: prints the count of SQEs
# when so, nothing otherwise. An FSYNC counts, but its mark says nothing:
# the kernel always sends fsync to io-wq and marks it so itself.
every_nth() {
	awk -v n="$2" '{ want = (n && NR % n == 0) ? "A" : "-"; split($0, f, ":")
		if (f[1] != "FSYNC" && f[2] != want) bad = 1 }
		END { if (!bad && NR > 0) print NR }' "$1"
}

# trace_job NAME ENGINE-ARGS...: the job's SQE marks in $TMPD/NAME.marks
trace_job() {
	local name=$1
	shift
	submit_trace "$TMPD/$name.sqes" "$TMPD/$name.out" run_fio "${job[@]}" "$@" ||
		{ fail "$name: fio failed: $(tail -3 "$TMPD/$name.out")"; return 1; }
	marks "$TMPD/$name.sqes" >"$TMPD/$name.marks"
}

dbr=(--ioengine="external:$ENGINE" --gpu=host --transfer=bounce)

# reads: every 3rd async, none without the option
job=(--name=r --filename="$f" --size=4m --bs=4k --rw=randread --iodepth=8
	--direct=1 --number_ios=300 --thread)
for n in 0 3; do
	if trace_job "reads-$n" "${dbr[@]}" --force_async=$n; then
		c=$(every_nth "$TMPD/reads-$n.marks" $n)
		[ -n "$c" ] && pass "force_async=$n: of $c reads, $([ "$n" = 0 ] && echo none || echo "exactly every ${n}rd") went in with IOSQE_ASYNC" ||
			fail "force_async=$n: async marks $(head -9 "$TMPD/reads-$n.marks" | tr '\n' ' ')..."
	fi
done

# writes and fsyncs (fsync=4): the count runs over both (as in fio's engine,
# so the writes after an odd number of fsyncs change step), the kernel sees
# them in the order fio queued them (its write_iolog). How many fsyncs there
# are depends on timing: fio queues another while the last is in flight.
job=(--name=w --filename="$f" --size=1m --bs=4k --rw=write --iodepth=4
	--direct=1 --fsync=4 --thread --write_iolog="$TMPD/writes.iolog")
if trace_job writes "${dbr[@]}" --force_async=2; then
	c=$(every_nth "$TMPD/writes.marks" 2)
	s=$(grep -c '^FSYNC:' "$TMPD/writes.marks")
	awk '$3 == "write" {print "WRITE_FIXED"} $3 == "sync" {print "FSYNC"}' \
		"$TMPD/writes.iolog" >"$TMPD/writes.queued"
	if [ -n "$c" ] && [ "$s" -gt 0 ] &&
	   cut -d: -f1 "$TMPD/writes.marks" | cmp -s - "$TMPD/writes.queued"; then
		pass "force_async=2, writes and fsyncs: every 2nd of $c SQEs ($s fsyncs) async, in fio's queue order"
	else
		fail "force_async=2, writes: kernel saw $(head -8 "$TMPD/writes.marks" | tr '\n' ' ')..., fio queued $(head -8 "$TMPD/writes.queued" | tr '\n' ' ')..."
	fi
fi

finish
