# shellcheck shell=bash
# scripts/gpu-proof kvariants (one GPU): the resident kernel built other ways,
# side by side with the engine's own (kring_ptx.h), with gpu=host (no copy)
# and with fio's io_uring engine on host memory, on /dev/zram0: 4k randread
# and randwrite at iodepth 1, one thread, then 4k randread at iodepth 32
# with KVAR_THREADS threads (that nothing is lost at depth). Cases
# alternate, KVAR_REPEAT times; each line gives IOPS and lat (slat + clat)
# p50 / p99 / p99.9 in us. First each build moves data right: crc32c
# verify of randrw, 4k and 64k, at iodepth 1 and 32, with and without the
# CQ watch, 4 threads.
#   KVAR_DEFS  NAME:FLAGS entries, FLAGS nvcc's -D options joined by commas,
#              e.g. "s2:-DPOLL_SLOTS=2" (kring.cu's #ifndef knobs, or
#              a knob added to try an idea)
#   KVAR_REPEAT (3), KVAR_THREADS (16), KVAR_WATCHED (builds whose iodepth 1
#   reads also run with gpu_watch_cq=1: "engine")
# Sourced by scripts/gpu-proof, which has built fio and the engine.

# kvar_ptx NAME FLAGS: $W/kvar-NAME.ptx, kring.cu built with FLAGS
kvar_ptx() {
	local defs

	IFS=, read -ra defs <<<"$2"
	"$CUDA/bin/nvcc" -ptx -O3 -arch=compute_75 "${defs[@]}" \
		-o "$W/kvar-$1.ptx" "$top/gpu/copy/kring.cu"
}

# kvar_run VARIANT RW QD NJ [WATCH]: one fio run, its line (WATCH:
# gpu_watch_cq, default 0 at iodepth 1 and auto deeper)
kvar_run() {
	local v=$1 rw=$2 qd=$3 nj=$4 env=() watch=${5:-} how
	local out=$RUNS/kvar-$1-$2-qd$3${5:+-w$5}.out

	case $v in
	fio)	how=(--ioengine=io_uring --fixedbufs=1 --registerfiles=1) ;;
	host)	how=(--ioengine="external:$ENGINE" --gpu=host --transfer=bounce) ;;
	*)	how=(--ioengine="external:$ENGINE" --gpu=cuda --transfer=bounce
		     --gpu_watch_cq="${watch:-$([ "$qd" = 1 ] && echo 0 || echo auto)}")
		[ "$v" != engine ] && env=(DBR_KRING_PTX="$W/kvar-$v.ptx") ;;
	esac
	env "${env[@]}" "$FIO" "${how[@]}" --name=kv --filename=/dev/zram0 \
		--size=$((ZRAM_HALF / nj >> 20))m \
		--offset_increment=$((ZRAM_HALF / nj >> 20))m --direct=1 --thread \
		--rw="$rw" --bs=4k --iodepth="$qd" --numjobs="$nj" --norandommap \
		--randrepeat=0 --time_based --runtime="$RUNTIME" --group_reporting \
		--lat_percentiles=1 --output-format=json+ --output="$out.json" >"$out" 2>&1
	python3 - "$out.json" "$v${watch:+,w$watch}" "$rw" "$qd" "$nj" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))["jobs"][0]
d = j["read"] if j["read"]["io_bytes"] else j["write"]
p = d["lat_ns"]["percentile"]
print("kvar %-10s %-9s qd%-2s %2st: %8.1fk IOPS  lat p50 %6.2f p99 %6.2f p99.9 %7.2f mean %6.2f us" % (
    sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], d["iops"] / 1e3,
    p["50.000000"] / 1e3, p["99.000000"] / 1e3, p["99.900000"] / 1e3,
    d["lat_ns"]["mean"] / 1e3))
EOF
}

# kvar_verify VARIANT: crc32c through GPU memory with that build
kvar_verify() {
	local v=$1 qd w out env=() rc ok

	[ "$v" != engine ] && env=(DBR_KRING_PTX="$W/kvar-$v.ptx")
	for qd in 1 32; do
		for w in 0 1; do
			out=$RUNS/kvar-verify-$v-qd$qd-w$w.out
			env "${env[@]}" "$FIO" --ioengine="external:$ENGINE" --name=kvv \
				--filename=/dev/zram0 --offset="$ZRAM_HALF" --size=64m \
				--offset_increment=64m --gpu=cuda --transfer=bounce \
				--gpu_copy=kernel --gpu_kernel=resident --gpu_watch_cq="$w" \
				--direct=1 --thread --rw=randrw --bssplit=4k/70:64k/30 \
				--iodepth="$qd" --numjobs=4 --verify=crc32c --verify_fatal=1 \
				>"$out" 2>&1
			rc=$?
			ok=$(grep -c 'err= 0' "$out")
			note "kvar verify $v qd$qd watch=$w: exit $rc, $ok of 4 err=0"
		done
	done
}

proof_kvariants() {
	local kv names=(fio host engine) r v rw

	section "the resident kernel, other builds side by side"
	zram_target || return 1
	for kv in ${KVAR_DEFS:-}; do
		kvar_ptx "${kv%%:*}" "${kv#*:}" || { note "kvariants: ${kv%%:*} not built"; continue; }
		names+=("${kv%%:*}")
	done
	for v in "${names[@]}"; do
		[ "$v" = host ] || [ "$v" = fio ] || kvar_verify "$v"
	done
	for r in $(seq "${KVAR_REPEAT:-3}"); do
		for rw in randread randwrite; do
			for v in "${names[@]}"; do
				kvar_run "$v" "$rw" 1 1 | tee -a "$summary"
				[ "$rw" = randread ] && [[ " ${KVAR_WATCHED:-engine} " = *" $v "* ]] &&
					kvar_run "$v" "$rw" 1 1 1 | tee -a "$summary"
			done
		done
		for v in "${names[@]}"; do
			[ "$v" = host ] && continue
			kvar_run "$v" randread 32 "${KVAR_THREADS:-16}" | tee -a "$summary"
		done
	done
}
