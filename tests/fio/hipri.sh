#!/usr/bin/env bash
# hipri on the bounce path: a polled ring (IORING_SETUP_IOPOLL), as fio's
# io_uring engine makes one, so bounce has the polled baseline fio's engine
# has. Where the device has no poll queues the kernel fails each request
# with EOPNOTSUPP: for both engines alike, which is what is checked then.
. "$(dirname "$0")/../lib.sh"

f=$(scratch_file)
run_ok layout --name=lay --filename="$f" --size=4m --bs=1m --rw=write --gpu=host \
	--transfer=bounce
job=(--name=h --filename="$f" --size=4m --bs=4k --rw=randread --direct=1 --iodepth=8
	--number_ios=512 --hipri)

# err= of a run: fio's error number for the job (0 when it ran)
err_of() { sed -n 's/^h: (groupid=0, jobs=1): err= *\([0-9]*\).*/\1/p' "$1" | head -1; }

for mode in thread process; do
	extra=()
	[ $mode = thread ] && extra=(--thread)
	rc=0 crc=0
	dbr_fio "${job[@]}" "${extra[@]}" --gpu=host --transfer=bounce \
		>"$TMPD/ours-$mode.out" 2>&1 || rc=$?
	run_fio --ioengine=io_uring --fixedbufs "${job[@]}" "${extra[@]}" \
		>"$TMPD/ctl-$mode.out" 2>&1 || crc=$?
	ours=$(err_of "$TMPD/ours-$mode.out") ctl=$(err_of "$TMPD/ctl-$mode.out")
	if ! grep -q "^dmabuf_uring: h: gpu=host dev=0 transfer=bounce .*ring IOPOLL" "$TMPD/ours-$mode.out"; then
		fail "hipri, $mode: the ring is not polled: $(grep -m1 '^dmabuf_uring' "$TMPD/ours-$mode.out")"
	elif [ "$rc" = "$crc" ] && [ -n "$ours" ] && [ "$ours" = "$ctl" ]; then
		pass "hipri, $mode: a polled ring, as fio's io_uring engine has it (exit $rc, err=$ours for both)"
	else
		fail "hipri, $mode: exit $rc err=$ours, fio's io_uring engine exit $crc err=$ctl"
	fi
done
finish
