# shellcheck shell=bash
# scripts/gpu-proof procs (one GPU): fio's default mode, job processes (no
# `thread`), against fio's io_uring engine on host memory: 4k randread and
# randwrite at iodepth 32 and 1 MiB sequential reads at iodepth 16, 4 and 16
# processes, on /dev/zram0 and /dev/shm, ours and fio's engine alternating
# (scripts/perf, PROCS_REPEAT repetitions, median and minimum of the
# per-repetition ratios); without MPS, then with an MPS server (PROCS_MPS=0
# skips it); fio's libcufile engine (cuda_io=posix, threads as its
# examples run it) once per case;
# for 1 MiB reads, each repetition a run of its own followed by the ceiling
# loop (paired_1m; gpu-proof.d/ceiling.c: the same bytes through pinned slots
# and DMA copies, without fio), where PCIe or host memory is the limit.
# kill -9 of the owner, of a job process and of fio mid-run, and what each
# left (processes, GPU memory per nvidia-smi, /dev/shm files; owner_kills.sh).
#   PROCS_TARGETS (zram shm), PROCS_PARTS ("verify kill 4k 1m": which parts run),
#   PROCS_NJ (4 16), PROCS_REPEAT (3), PROCS_SET
#   (engine options for ours, e.g. "gpu_owner=0"), PROCS_MPS (1),
#   PROCS_VARIANTS (ours with other options, alternating with the rest as
#   implementations of their own, e.g. "dbr+gpu_watch_cq=1"; the table
#   gives each a row against fio's engine and ours as is), PROCS_THREADS
#   (1: the 4k reads as job threads too, in the same run: fio's engine may
#   run faster as processes than as threads, and ours should gain as much).
#   PROCS_VARIANTS=dbr-host runs the engine on host memory beside (the table's
#   gpu=host columns: what job processes cost the engine without copies);
#   DBR_PROFILE=1 in the environment adds a table of where the job threads'
#   time in the engine went per I/O (bounce_table.py).
# Sourced by scripts/gpu-proof, which has built fio and the engine.

# procs_job NAME NJ [OFFSET]: gpu-proof's job_for NAME NJ [OFFSET] as job
# processes (its `thread` dropped, named NAME-<NJ>p)
procs_job() {
	local f=$W/jobs/$1-$2p.fio

	sed -e '/^thread$/d' -e "s/^\[$1-$2t\]/[$1-$2p]/" "$(job_for "$@")" >"$f"
	echo "$f"
}

# procs_part PART: is PART (verify, 4k, 1m) among PROCS_PARTS?
procs_part() {
	[[ " ${PROCS_PARTS:-verify kill 4k 1m} " = *" $1 "* ]]
}

# procs_cases TARGET TAG: the matrix on TARGET (bounce_target's variables)
procs_cases() {
	local t=$1 tag=$2 nj jobs4k=() share sets=() kv ours impl

	for kv in ${PROCS_SET:-}; do sets+=(--set "$kv"); done
	ours=dbr,io_uring$(variants "${PROCS_VARIANTS:-}")
	impl=$ours
	[ "${HAVE_CUFILE:-0}" = 1 ] && [ "$tag" = nomps ] && impl=$impl,libcufile-posix
	for nj in ${PROCS_NJ:-4 16}; do
		jobs4k+=("$(procs_job bounce-randread-4k "$nj")"
			 "$(procs_job bounce-randwrite-4k "$nj" "$WRITE_AT")")
		[ "${PROCS_THREADS:-0}" = 1 ] &&
			jobs4k+=("$(job_for bounce-randread-4k "$nj")")
	done
	procs_part 4k &&
		DBR_GPU=cuda perf_run "procs-$t-4k-$tag" --transfer bounce \
			--repeat "${PROCS_REPEAT:-3}" --runtime "$RUNTIME" "${sets[@]}" \
			--target "$DEV" --size "$READ_SPAN" "${DEV_ARGS[@]}" --impl "$impl" \
			--jobs "$(IFS=,; echo "${jobs4k[*]}")"
	# 1 MiB reads beside the ceiling loop, where PCIe or host memory and
	# not the engine is the limit: each repetition with its own loop
	procs_part 1m || return 0
	share=$((READ_SPAN / 16 >> 20 << 20))
	for nj in ${PROCS_NJ:-4 16}; do
		paired_1m "procs-$t-1m-${nj}p-$tag" "$nj" "$share" "${PROCS_REPEAT:-3}" read \
			"$ours" "$(procs_job bounce-seqread-1m "$nj")" \
			--transfer bounce --runtime "$RUNTIME" "${sets[@]}"
	done
}

# the path lines of TARGET's runs under TAG: how the job processes' copies
# ran (the 4k run's, else the 1 MiB runs')
procs_lines() {
	local d dirs=("$W/perf-procs-$1-4k-$2")

	procs_part 4k || dirs=("$W/perf-procs-$1-1m-"*"p-$2-r"*)
	for d in "${dirs[@]}"; do cat "$d"/runs/*.out 2>/dev/null; done |
		grep "^dmabuf_uring: .*gpu=cuda" |
		sed 's/^dmabuf_uring: //' | sort | uniq -c | head -6 | tee -a "$summary"
}

# the bounce table of one run's cases: ratios per repetition, and per copied
# read how long after queueing its copy was seen done and how long the job
# process waited on copies (a spin, where the kernel watches the CQ)
procs_table() {
	local nj dirs=()

	procs_part 4k && dirs+=("$1-$2=$W/perf-procs-$1-4k-$2")
	for nj in ${PROCS_NJ:-4 16}; do
		procs_part 1m && dirs+=("$1-$2=$W/perf-procs-$1-1m-${nj}p-$2")
	done
	python3 "$top/scripts/gpu-proof.d/bounce_table.py" "${dirs[@]}" | tee -a "$summary"
}

mps_start() {
	command -v nvidia-cuda-mps-control >/dev/null || return 1
	nvidia-cuda-mps-control -d || return 1
	sleep 1
}

mps_stop() {
	echo quit | nvidia-cuda-mps-control 2>/dev/null
	sleep 1
}

# verify through GPU memory from 8 job processes: randrw, bssplit 4k-1m,
# crc32c, each process its own share of TARGET's read span
procs_verify() {
	local share=$((READ_SPAN / 8 >> 20 << 20)) out=$RUNS/procs-verify-$1.out sets=() kv

	for kv in ${PROCS_SET:-}; do sets+=("--$kv"); done
	x dbr --name=pv --filename="$DEV" --size="$((share > 512 << 20 ? 512 << 20 : share))" \
		--offset_increment="$share" --gpu=cuda --transfer=bounce --direct=1 \
		--rw=randrw --bssplit=4k/50:64k/30:1m/20 --iodepth=32 --numjobs=8 \
		--verify=crc32c --verify_fatal=1 "${sets[@]}" >"$out" 2>&1
	note "procs verify $1: 8 job processes, randrw bssplit 4k/64k/1m crc32c: exit $?, $(grep -c 'err= 0' "$out") of 8 err=0; $(grep -o "copies in the GPU owner's context[^)]*)" "$out" | head -1)"
}

# kill -9 of the owner, of one of 3 job processes, of fio, each in the
# middle of a run of its own (1 MiB reads at iodepth 32: 32 MiB of GPU memory
# a job process), and what each left behind; non-zero if a promise broke.
# GPU memory before and after the three, where nvidia-smi says it.
procs_kills() {
	local share=$((READ_SPAN / 3 >> 20 << 20)) what line bad=0 used rt

	. "$top/scripts/gpu-proof.d/owner_kills.sh"
	used=$(gpu_used)
	for what in owner job fio; do
		rt=60
		[ "$what" = job ] && rt=6
		if line=$(KILL_OUT=$RUNS/procs-kill-$what-$1.out kill_run "$what" "$DEV" 3 \
			dbr --name=pk --filename="$DEV" --size="$((share > 1 << 30 ? 1 << 30 : share))" \
			--offset_increment="$share" --gpu="${DBR_GPU:-cuda}" --transfer=bounce \
			--direct=1 --rw=randread --bs=1m --iodepth=32 --numjobs=3 \
			--time_based --runtime="$rt"); then
			note "procs kill $1: ok: $line"
		else
			note "procs kill $1: BROKEN: $line"
			bad=1
		fi
	done
	[ -n "$used" ] && note "procs kill $1: GPU memory used before the kills: $used MiB, after: $(gpu_used) MiB"
	return "$bad"
}

proof_procs() {
	local t

	section "job processes (no thread) vs fio io_uring on host memory"
	for t in ${PROCS_TARGETS:-zram shm}; do
		bounce_target "$t" || continue
		section "procs $t, no MPS"
		procs_part verify && procs_verify "$t"
		procs_part kill && procs_kills "$t"
		procs_cases "$t" nomps
		procs_lines "$t" nomps
		procs_table "$t" nomps
		if [ "${PROCS_MPS:-1}" = 1 ] && mps_start; then
			section "procs $t, MPS"
			procs_cases "$t" mps
			procs_lines "$t" mps
			procs_table "$t" mps
			mps_stop
		fi
		section "procs $t: owners left behind (none expected)"
		if pgrep -a dbr-gpu-owner >"$W/owners-left"; then
			note "owners left: $(cat "$W/owners-left")"
		else
			note "owners left: none"
		fi
	done
	rm -f /dev/shm/dbr-bounce.bin
}
