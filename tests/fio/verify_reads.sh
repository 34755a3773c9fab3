#!/usr/bin/env bash
# fio's verify phase reaches the kernel as reads. fio turns a write io_u into
# a verify read after the engine's ->prep (backend.c do_verify with
# experimental_verify=1), so an engine that built its request in ->prep
# would write the expected data back and "verify" nothing; this engine
# builds each request from the io_u at ->queue. Seen in what reached the
# kernel (tracefs): every write, then a read of each block.
. "$(dirname "$0")/../lib.sh"

trace_ok || skip "tracefs io_uring events not available (needs root and tracefs)"

f=$(scratch_file)
blocks=256
job=(--name=v --filename="$f" --size=$((blocks * 4))k --bs=4k --rw=write --iodepth=8
	--direct=1 --do_verify=1 --verify=crc32c --verify_fatal=1 --thread)

# ops SQES: the opcodes in the order the kernel saw them, runs counted
ops() {
	awk '{ print $1 }' "$1" | uniq -c | awk '{ printf "%s%s x%s", sep, $2, $1; sep = ", " }'
}

for ev in 0 1; do
	name=experimental_verify-$ev
	if ! submit_trace "$TMPD/$name.sqes" "$TMPD/$name.out" \
		dbr_fio "${job[@]}" --gpu=host --transfer=bounce --experimental_verify=$ev ||
		grep -q "err= *[1-9]" "$TMPD/$name.out"; then
		fail "$name: fio failed: $(tail -3 "$TMPD/$name.out")"
		continue
	fi
	got=$(ops "$TMPD/$name.sqes")
	want="WRITE_FIXED x$blocks, READ_FIXED x$blocks"
	[ "$got" = "$want" ] && pass "$name: the kernel saw $got" ||
		fail "$name: the kernel saw $got, want $want"
done

# fio's own engine on the same job, for the record (not judged): where it
# prepares its SQE in ->prep, its experimental verify phase writes
name=control
if submit_trace "$TMPD/$name.sqes" "$TMPD/$name.out" \
	run_fio "${job[@]}" --ioengine=io_uring --fixedbufs=1 --experimental_verify=1; then
	log "$("$FIO" --version)'s io_uring engine, experimental_verify=1: the kernel saw $(ops "$TMPD/$name.sqes")"
fi
finish
