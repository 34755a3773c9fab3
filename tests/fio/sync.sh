#!/usr/bin/env bash
# fio's fsync= and fdatasync= requests go through the ring as
# IORING_OP_FSYNC, sync_file_range= as IORING_OP_SYNC_FILE_RANGE (in the
# order fio queued them, seen in tracefs where it is there), and fio
# accounts them.
. "$(dirname "$0")/../lib.sh"

f=$(scratch_file)
job=(--name=s --filename="$f" --size=4m --bs=4k --iodepth=8 --rw=randwrite
	--direct=1 --output-format=json)
common=("${job[@]}" --gpu=host --transfer=bounce)

# sync latency samples: fio counts fsync and fdatasync alike there
sync_ios() {
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["jobs"][0]["sync"]["lat_ns"]["N"])' "$1"
}

for kind in fsync fdatasync; do
	out=$TMPD/$kind.json
	if dbr_fio "${common[@]}" --$kind=4 --output="$out" >"$TMPD/$kind.log" 2>&1; then
		n=$(sync_ios "$out")
		# 1024 writes, a sync every 4
		[ "$n" -ge 200 ] && pass "$kind=4: $n syncs issued and completed" ||
			fail "$kind=4: only $n syncs"
	else
		fail "$kind=4: fio failed"
		tail -10 "$TMPD/$kind.log"
	fi
done
# sync_file_range=write:4: fio's io_uring engine runs it, so must we, and
# each one reaches the kernel where fio queued it (its write_iolog)
out=$TMPD/sfr.json
if control_fails sfr "${job[@]}" --rw=write --sync_file_range=write:4; then
	not_judged sfr
elif dbr_fio "${common[@]}" --rw=write --sync_file_range=write:4 --output="$out" \
	>"$TMPD/sfr.log" 2>&1; then
	n=$(sync_ios "$out")
	[ "$n" -ge 200 ] && pass "sync_file_range=write:4: $n issued and completed" ||
		fail "sync_file_range=write:4: only $n"
else
	fail "sync_file_range=write:4: fio failed: $(grep -m1 'err=' "$TMPD/sfr.log")"
fi
sfr=(--name=t --filename="$f" --size=256k --bs=4k --rw=write --iodepth=8
	--direct=1 --thread --sync_file_range=wait_before,write:3)
if control_fails sfr-order "${sfr[@]}"; then
	not_judged sfr-order
elif trace_ok; then
	if submit_trace "$TMPD/t.sqes" "$TMPD/t.out" dbr_fio "${sfr[@]}" \
		--gpu=host --transfer=bounce --write_iolog="$TMPD/t.iolog"; then
		cut -d' ' -f1 "$TMPD/t.sqes" >"$TMPD/t.ops"
		awk '$3 == "write" {print "WRITE_FIXED"}
		     $3 == "sync_file_range" {print "SYNC_FILE_RANGE"}' \
			"$TMPD/t.iolog" >"$TMPD/t.queued"
		s=$(grep -c SYNC_FILE_RANGE "$TMPD/t.ops")
		[ "$s" -gt 0 ] && cmp -s "$TMPD/t.ops" "$TMPD/t.queued" &&
			pass "sync_file_range: $s reach the kernel as IORING_OP_SYNC_FILE_RANGE, in fio's queue order" ||
			fail "sync_file_range: kernel saw $(head -8 "$TMPD/t.ops" | tr '\n' ' ')..., fio queued $(head -8 "$TMPD/t.queued" | tr '\n' ' ')..."
	else
		fail "sync_file_range traced: fio failed: $(tail -3 "$TMPD/t.out")"
	fi
else
	log "SKIP sync_file_range order: tracefs io_uring events not available"
fi
run_ok end-fsync --name=e --filename="$f" --size=4m --bs=64k --rw=write \
	--gpu=host --transfer=bounce --end_fsync=1
finish
