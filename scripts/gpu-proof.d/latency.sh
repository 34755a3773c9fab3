# shellcheck shell=bash
# scripts/gpu-proof latency (one GPU): one I/O at a time. 4k randread and
# randwrite at iodepth 1, at 1 and 4 job threads, on /dev/zram0 and /dev/shm:
# ours into GPU memory (gpu=cuda transfer=bounce), the same engine on host
# memory (dbr-host: no copy at all, so the difference is the copy's share),
# fio's io_uring engine, and fio's libcufile engine (cuda_io=posix: pread
# into a host buffer, then cudaMemcpy) for the 1-thread reads, alternating
# (scripts/perf, LAT_REPEAT repetitions); latency p50/p99/p99.9 (fio's
# lat: slat + clat, as engines that submit at different points compare) per
# case in scripts/perf's results table (results.md).
# First the floor without fio: gpu-proof.d/pingpong.cu, a post and a
# resident kernel's answer, with and without a 4 KiB copy (LAT_FLOOR=0
# skips it).
#   LAT_TARGETS (zram shm), LAT_THREADS (1 4), LAT_REPEAT (5), LAT_SET
#   (engine options for ours, e.g. "gpu_watch_cq=1"), LAT_VARIANTS (ours
#   with other options beside, e.g. "dbr+gpu_watch_cq=1").
# Sourced by scripts/gpu-proof, which has built fio and the engine.

# lat_job NAME NJ [OFFSET]: jobs/NAME.fio at iodepth 1 for NJ threads
lat_job() {
	local f=$W/jobs/$1-qd1-$2t.fio at=()

	[ "${3:-0}" != 0 ] && at=(-e "/^\[global\]/a offset=$3")
	mkdir -p "$W/jobs"
	sed -e "s/\${DBR_NUMJOBS}/$2/" -e "s/^\[$1\]/[$1-qd1-$2t]/" \
		-e 's/^iodepth=.*/iodepth=1/' "${at[@]}" "$top/jobs/$1.fio" >"$f"
	echo "$f"
}

# the round trip of a post and a resident kernel's answer, no fio
lat_floor() {
	section "the floor: a resident kernel's answer to one post (pingpong)"
	cu_tool pingpong || return
	x "$W/pingpong" "${LAT_FLOOR_REPS:-3}" | tee -a "$summary"
}

proof_latency() {
	local t nj jobs sets=() kv impl

	[ "${LAT_FLOOR:-1}" = 0 ] || lat_floor

	for kv in ${LAT_SET:-}; do sets+=(--set "$kv"); done
	section "one I/O at a time: the copy's share of a 4k read and write"
	for t in ${LAT_TARGETS:-zram shm}; do
		bounce_target "$t" || continue
		for nj in ${LAT_THREADS:-1 4}; do
			jobs=("$(lat_job bounce-randread-4k "$nj")"
			      "$(lat_job bounce-randwrite-4k "$nj" "$WRITE_AT")")
			impl=dbr,dbr-host,io_uring$(variants "${LAT_VARIANTS:-}")
			[ "${HAVE_CUFILE:-0}" = 1 ] && [ "$nj" = 1 ] &&
				impl=$impl,libcufile-posix
			section "latency $t, $nj thread(s)"
			DBR_GPU=cuda perf_run "lat-$t-${nj}t" --transfer bounce \
				--repeat "${LAT_REPEAT:-5}" --runtime "$RUNTIME" \
				"${sets[@]}" --target "$DEV" --size "$READ_SPAN" \
				"${DEV_ARGS[@]}" --impl "$impl" \
				--jobs "$(IFS=,; echo "${jobs[*]}")"
			sed -n '/^| case/,/^$/p' "$W/perf-lat-$t-${nj}t/results.md" |
				tee -a "$summary"
		done
	done
	rm -f /dev/shm/dbr-bounce.bin
}
