#!/usr/bin/env bash
# fio's fsync= and fdatasync= requests go through the ring as
# IORING_OP_FSYNC, and fio accounts them.
. "$(dirname "$0")/../lib.sh"

f=$(scratch_file)
common=(--name=s --filename="$f" --size=4m --bs=4k --iodepth=8 --rw=randwrite
	--gpu=host --transfer=bounce --direct=1 --output-format=json)

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
run_ok end-fsync --name=e --filename="$f" --size=4m --bs=64k --rw=write \
	--gpu=host --transfer=bounce --end_fsync=1
finish
