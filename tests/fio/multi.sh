#!/usr/bin/env bash
# Several files and several fio threads/processes: a buffer slot per file,
# a ring per thread, fixed files, SQPOLL, and fio's fork and thread modes.
. "$(dirname "$0")/../lib.sh"

d=$TMPD/files
mkdir -p "$d"
common=(--directory="$d" --size=8m --gpu=host --transfer=bounce --direct=1
	--verify=crc32c --verify_fatal=1 --bs=4k --iodepth=16)

run_ok nrfiles-4 --name=nf "${common[@]}" --nrfiles=4 --rw=randwrite \
	--file_service_type=roundrobin
run_ok nrfiles-3-openfiles-1 --name=of "${common[@]}" --nrfiles=3 --openfiles=1 \
	--rw=randwrite --file_service_type=sequential
run_ok numjobs-4-threads --name=th "${common[@]}" --numjobs=4 --thread --rw=randrw
run_ok numjobs-3-processes --name=pr "${common[@]}" --numjobs=3 --rw=randwrite
run_ok numjobs-2-nrfiles-2-registerfiles --name=rf "${common[@]}" --numjobs=2 --thread \
	--nrfiles=2 --registerfiles --rw=randwrite
run_ok sqthread-poll --name=sq "${common[@]}" --rw=randwrite --sqthread_poll \
	--sqthread_poll_cpu=0
run_ok two-jobs-one-file --name=a "${common[@]}" --filename=shared.bin --rw=randwrite \
	--name=b --directory="$d" --filename=shared.bin --size=8m --gpu=host \
	--transfer=bounce --direct=1 --rw=read --bs=64k --iodepth=4 --stonewall
# more files than io_uring's buffer table holds (16384): bounce registers one
# slot for all of them, so this runs (files created as fio opens them)
many=(--directory="$d" --nrfiles=16385 --filesize=4k --openfiles=64 --create_on_open=1
	--io_size=256k --gpu=host --transfer=bounce --rw=write --bs=4k --iodepth=4 --thread)
run_ok nrfiles-16385-bounce --name=many "${many[@]}"
run_ok nrfiles-16385-bounce-registerfiles --name=manyrf "${many[@]}" --registerfiles

# each thread names its path once per job: the first clone only
n=$(grep -c "^dmabuf_uring: th: gpu=host" "$TMPD/numjobs-4-threads.out" || true)
[ "$n" -eq 1 ] && pass "the path is reported once per job, not per thread" ||
	fail "the path is reported once per job ($n lines)"
finish
