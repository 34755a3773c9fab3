#!/usr/bin/env bash
# scripts/gpu-proof bounce on zram: reads read the first half of the device
# and writes go to the second (zram_target, d221a98), so that the writes'
# zeros never turn the reads' data into zero pages. Here without a GPU:
# gpu-proof's own bounce_target and job_for, taken from the script, make the
# job files for a 64 MiB file standing in for the device, and fio runs them
# with this engine (gpu=host) and fio's io_uring engine; their I/O logs must
# keep reads in the first half and writes in the second. gpu-proof procs's
# procs_job makes the same job for job processes (its `thread` dropped).
. "$(dirname "$0")/../lib.sh"

proof=$SRCDIR/scripts/gpu-proof
funcs=$(sed -n '/^bounce_target() {/,/^}/p;/^job_for() {/,/^}/p' "$proof")
grep -q '^job_for()' <<<"$funcs" && grep -q '^bounce_target()' <<<"$funcs" ||
	die "bounce_target or job_for not found in $proof"
eval "$funcs"

# what bounce_target's zram case needs from zram_target, for a file
f=$TMPD/dev.bin
truncate -s 64M "$f"
zram_target() { ZRAM_BYTES=$((64 << 20)) ZRAM_HALF=$((32 << 20)); }
note() { :; }
data_file() { :; }
W=$TMPD top=$SRCDIR
bounce_target zram || die "bounce_target zram failed"
[ "$READ_SPAN" = $((32 << 20)) ] && [ "$WRITE_AT" = $((32 << 20)) ] &&
	pass "zram: reads over the first half, writes from the second ($READ_SPAN / $WRITE_AT)" ||
	fail "zram: READ_SPAN=$READ_SPAN WRITE_AT=$WRITE_AT, want both $((32 << 20))"

rd=$(job_for bounce-randread-4k 2)
wr=$(job_for bounce-randwrite-4k 2 "$WRITE_AT")
rw=$(job_for bounce-randrw-4k 2 "$WRITE_AT")
grep -q '^offset=' "$rd" && fail "the read job has an offset: $(grep '^offset=' "$rd")" ||
	pass "the read job starts at the device's start"
for j in "$wr" "$rw"; do
	# the offset in [global], where the perf runner's options go too
	if sed -n '/^\[global\]/,/^\[/p' "$j" | grep -qx "offset=$WRITE_AT"; then
		pass "$(basename "$j"): offset=$WRITE_AT in [global]"
	else
		fail "$(basename "$j"): no offset=$WRITE_AT in [global]"
	fi
done
if grep -qx '\[bounce-randwrite-4k-2t\]' "$wr" && grep -qx 'numjobs=2' "$wr"; then
	pass "job_for names the case and sets numjobs"
else
	fail "job_for: no [bounce-randwrite-4k-2t] with numjobs=2 in $wr"
fi

. "$SRCDIR/scripts/gpu-proof.d/procs.sh"
pw=$(procs_job bounce-randwrite-4k 2 "$WRITE_AT")
if ! grep -qx thread "$pw" && grep -qx thread "$wr" &&
	grep -qx '\[bounce-randwrite-4k-2p\]' "$pw" &&
	sed -n '/^\[global\]/,/^\[/p' "$pw" | grep -qx "offset=$WRITE_AT"; then
	pass "procs_job: job_for's job as job processes ([bounce-randwrite-4k-2p], no thread, offset kept)"
else
	fail "procs_job: $(grep -n 'thread\|^\[\|^offset' "$pw" | tr '\n' ' ')"
fi

# lowest and highest byte a run's iolog touched, for ACTION (read, write);
# fio's version 3 log: time, file, action, offset, length
span_of() {
	awk -v a="$2" 'NR > 1 && NF == 5 && $3 == a {
			if (lo == "" || $4 < lo) lo = $4; if ($4 + $5 > hi) hi = $4 + $5 }
		END { if (lo == "") print "none"; else print lo, hi }' "$1"
}

# run JOBFILE IMPL LOG: the job as scripts/perf runs it (its variables in
# the environment; for fio's engine the job file's engine and this engine's
# options swapped for io_uring's), for a second instead of ten, and in one
# thread: a job's threads share its write_iolog and overwrite each other's
# lines there
run() {
	local jf=$TMPD/run.fio

	if [ "$2" = io_uring ]; then
		sed -e 's/^ioengine=.*/ioengine=io_uring\nfixedbufs=1/' \
			-e '/^gpu=/d;/^transfer=/d;/^gpu_sync=/d' "$1"
	else
		cat "$1"
	fi | sed -e 's/^runtime=.*/runtime=1/' -e 's/^numjobs=.*/numjobs=1/' >"$jf"
	DBR_ENGINE=$ENGINE DBR_GPU=host DBR_TRANSFER=bounce DBR_TARGET=$f \
		DBR_SIZE=$READ_SPAN run_fio "$jf" --write_iolog="$3" >"$3.out" 2>&1
}

half=$((32 << 20)) end=$((64 << 20))
for impl in dbr io_uring; do
	for j in "$rd" "$wr" "$rw" "$pw"; do
		name=$(basename "$j" .fio)-$impl
		log=$TMPD/$name.iolog
		run "$j" "$impl" "$log" || { show_failure "$log.out"; fail "$name: fio failed"; continue; }
		r=$(span_of "$log" read) w=$(span_of "$log" write)
		case $name in
		bounce-randread*)
			lo=${r% *} hi=${r#* }
			[ "$w" = none ] && [ "$r" != none ] && [ "$hi" -le "$half" ] &&
				pass "$name: reads in [$lo, $hi), inside the first half" ||
				fail "$name: reads $r, writes $w; want reads under $half, no writes" ;;
		*)
			lo=${w% *} hi=${w#* }
			rlo=${r% *}
			[ "$w" != none ] && [ "$lo" -ge "$half" ] && [ "$hi" -le "$end" ] &&
				{ [ "$r" = none ] || [ "$rlo" -ge "$half" ]; } &&
				pass "$name: writes in [$lo, $hi) and reads ($r) in the second half" ||
				fail "$name: writes $w, reads $r; want both within [$half, $end)" ;;
		esac
	done
done
finish
