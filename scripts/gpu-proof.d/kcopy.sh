# scripts/gpu-proof kcopy: the copy kernel (gpu_copy=) on the bounce path, on
# one GPU. Sourced by scripts/gpu-proof after the build ($FIO, $ENGINE, $CHECK,
# $W, $RUNS, note, section, x, data_file, zram_target, zram_half come from
# there). The bounce mode's whole matrix runs with the kernel too:
# BOUNCE_SET=gpu_copy=kernel scripts/gpu-proof bounce.
#
# Parts (COPY_PARTS, default all four, in this order):
#   check   gpu_check cuda -c kernel|auto|dma, 1 and 4 threads: a whole-buffer
#           round trip, then 600 small copies a pass both ways (3 launches a
#           pass), compared byte for byte, the scatter's bytes read once its
#           fence is seen done
#   verify  verify=crc32c with gpu_copy=kernel: bs 4k/64k/1m x iodepth
#           1/32/128 x randwrite/randrw (each write job reads its blocks back
#           through GPU memory), then a read-only verify pass per bs
#   iops    4k randread and randwrite, iodepth 32, at COPY_THREADS threads:
#           fio's io_uring engine on host memory, then this engine with each
#           gpu_copy of COPY_SET, alternating, COPY_REPEAT repetitions;
#           minimum, median and maximum IOPS, ratios to fio, copies per launch
#   sweep   randread at 16k..256k, 4 threads: gpu_copy=dma vs kernel, for
#           where the copy engines overtake the kernel (auto's 64 KiB)
# COPY_TARGETS="shm zram": an 8 GiB file in /dev/shm, and /dev/zram0 as the
# bounce mode sets it up (zram_target: ZRAM_GB, filled once).
# COPY_SET="dma kernel" (an entry MODE:HOW adds gpu_kernel=HOW, e.g. auto:launch),
# COPY_REPEAT=5, COPY_RUNTIME=3, COPY_THREADS="1 8 16", COPY_RW="randread randwrite".

kc_shm=/dev/shm/dbr-kcopy.bin
kc_zram=/dev/zram0

# kc_path TARGET: the file or device for shm or zram, "" where there is none
kc_path() {
	case $1 in
	shm)
		data_file "$kc_shm" 8
		echo "$kc_shm"
		;;
	zram)
		zram_target >&2 && echo "$kc_zram"
		;;
	esac
}

kc_check() {
	local c t

	section "kcopy: gpu_check round trips"
	for c in kernel auto dma kernel:launch; do
		for t in 1 4 16; do
			x timeout 120 "$CHECK" cuda -c ${c%%:*} -K ${c#*:} -t $t -m 64 -x skip >"$RUNS/kcopy-check-$c-$t.out" 2>&1
			note "kcopy check -c $c -t $t: exit $? $(grep -m1 'thread 0:' "$RUNS/kcopy-check-$c-$t.out" | cut -c1-400)"
		done
	done
}

kc_verify() {
	local tgt f bs qd rw out
	local opts=(--gpu=cuda --transfer=bounce --gpu_copy=kernel --direct=1 --thread
		    --verify=crc32c --verify_fatal=1 --size=256m)

	for tgt in ${COPY_TARGETS:-shm zram}; do
		f=$(kc_path "$tgt") || continue
		[ -n "$f" ] || continue
		section "kcopy: verify with gpu_copy=kernel on $f"
		for bs in 4k 64k 1m; do
			for qd in 1 32 128; do
				for rw in randwrite randrw; do
					out=$RUNS/kcopy-verify-$tgt-$rw-$bs-qd$qd.out
					dbr --name=v --filename="$f" "${opts[@]}" --rw=$rw \
						--bs=$bs --iodepth=$qd >"$out" 2>&1
					note "kcopy verify $tgt $rw bs=$bs qd=$qd: exit $? $(grep -o 'err= *[0-9]*' "$out" | head -1); $(grep -m1 -o '[0-9]* kernel launches and [0-9]* passes to the resident kernel ([0-9]* starts)' "$out")"
				done
			done
			out=$RUNS/kcopy-verify-$tgt-read-$bs.out
			dbr --name=v --filename="$f" "${opts[@]}" --rw=randwrite --bs=$bs \
				--iodepth=32 --do_verify=0 >/dev/null 2>&1
			dbr --name=v --filename="$f" "${opts[@]}" --rw=read --bs=$bs \
				--iodepth=32 --verify_only=1 >"$out" 2>&1
			note "kcopy verify $tgt read pass bs=$bs qd=32: exit $? $(grep -o 'err= *[0-9]*' "$out" | head -1); $(grep -m1 -o '[0-9]* kernel launches and [0-9]* passes to the resident kernel ([0-9]* starts)' "$out")"
		done
		# gpu_copy=auto: kernel and copy calls in the same passes
		out=$RUNS/kcopy-verify-$tgt-auto-randrw.out
		dbr --name=v --filename="$f" "${opts[@]}" --gpu_copy=auto --rw=randrw \
			--bsrange=4k-1m --iodepth=32 >"$out" 2>&1
		note "kcopy verify $tgt gpu_copy=auto randrw bs=4k-1m qd=32: exit $? $(grep -o 'err= *[0-9]*' "$out" | head -1); $(grep -m1 -o '[0-9]* GPU copies in [0-9]* runtime calls' "$out"), $(grep -m1 -o '[0-9]* kernel launches and [0-9]* passes to the resident kernel ([0-9]* starts)' "$out")"
	done
}

# kc_run OUT IMPL ARGS...: one fio run, JSON in OUT.json, our lines in OUT.err;
# prints the IOPS (reads + writes)
kc_run() {
	local out=$1 impl=$2
	local eng=(--ioengine=io_uring --fixedbufs=1 --registerfiles=1)
	shift 2

	[ "$impl" = io_uring ] ||
		eng=(--ioengine="external:$ENGINE" --gpu=cuda --transfer=bounce
		     --registerfiles --gpu_copy="${impl%%:*}")
	case $impl in
	*:*) eng+=(--gpu_kernel="${impl#*:}") ;;
	esac
	"$FIO" "${eng[@]}" "$@" --output-format=json --output="$out.json" 2>"$out.err"
	python3 -c 'import json,sys
j = json.load(open(sys.argv[1]))["jobs"][0]
print("%.0f" % (j["read"]["iops"] + j["write"]["iops"]))' "$out.json" 2>/dev/null || echo 0
}

# kc_table FILE: "target rw bs threads impl rep iops launches calls copies"
# lines -> min / median / max per case and ratios to fio's median
kc_table() {
	python3 - "$1" <<'PY' | tee -a "$summary"
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
cases, order = {}, []
for t, rw, bs, nj, impl, rep, iops, la, ca, co in rows:
	k = (t, rw, bs, nj)
	if k not in cases:
		cases[k] = {}
		order.append(k)
	cases[k].setdefault(impl, []).append((float(iops), int(la), int(ca), int(co)))
print("| target | job | threads | engine | IOPS min / median / max | median / fio | min / fio median | copies per launch, per call |")
print("|---|---|---|---|---|---|---|---|")
for k in order:
	fio = cases[k].get("io_uring")
	fmed = statistics.median(r[0] for r in fio) if fio else 0
	for impl, rs in cases[k].items():
		v = [r[0] for r in rs]
		med = statistics.median(v)
		la, ca, co = (sum(r[i] for r in rs) for i in (1, 2, 3))
		per = "-" if impl == "io_uring" else "%s, %s" % (
			"%.1f" % (co / la) if la else "-", "%.1f" % (co / ca) if ca else "-")
		rat = lambda x: "%.2f" % (x / fmed) if fmed else "-"
		print("| %s | %s %s | %s | %s | %.0fk / %.0fk / %.0fk | %s | %s | %s |" % (
			k[0], k[1], k[2], k[3], "fio io_uring" if impl == "io_uring" else "gpu_copy=" + impl,
			min(v) / 1e3, med / 1e3, max(v) / 1e3, rat(med), rat(min(v)), per))
PY
}

# counters from our end-of-job lines: "launches calls copies", summed; a
# pass to the resident kernel counts as a launch
kc_counts() {
	sed -n 's/.* \([0-9]*\) GPU copies in \([0-9]*\) runtime calls (.*), \([0-9]*\) kernel launches and \([0-9]*\) passes to the resident kernel.*/\3 \4 \2 \1/p' "$1" |
		awk '{ l += $1 + $2; c += $3; n += $4 } END { printf "%d %d %d", l, c, n }'
}

# kc_matrix NAME BSLIST RWLIST THREADS IMPLS REPEAT
kc_matrix() {
	local name=$1 bss=$2 rws=$3 njs=$4 impls=$5 reps=$6
	local res=$W/kcopy-$name.txt tgt f rw bs nj rep impl out iops size span
	: >"$res"
	for tgt in ${COPY_TARGETS:-shm zram}; do
		f=$(kc_path "$tgt") || continue
		[ -n "$f" ] || continue
		# MiB to spread over: the file, or zram's data half (zram_target)
		span=8192
		[ "$tgt" = zram ] && span=$(($(zram_half) >> 20))
		for rw in $rws; do for bs in $bss; do for nj in $njs; do
			size=$((span / nj))m
			for rep in $(seq 1 "$reps"); do for impl in $impls; do
				out=$RUNS/kcopy-$name-$tgt-$rw-$bs-$nj-$impl-$rep
				iops=$(kc_run "$out" "$impl" --name=k --filename="$f" \
					--rw="$rw" --bs="$bs" --iodepth=32 --numjobs="$nj" \
					--size="$size" --offset_increment="$size" --direct=1 \
					--thread --norandommap --randrepeat=0 --time_based \
					--runtime="${COPY_RUNTIME:-3}" --group_reporting)
				echo "$tgt $rw $bs $nj $impl $rep $iops $(kc_counts "$out.err")" >>"$res"
				echo "$tgt $rw bs=$bs threads=$nj $impl #$rep: $iops IOPS"
			done; done
		done; done; done
	done
	kc_table "$res"
}

proof_kcopy() {
	local part set=${COPY_SET:-dma kernel}

	for part in ${COPY_PARTS:-check verify iops sweep}; do
		case $part in
		check)	kc_check ;;
		verify)	kc_verify ;;
		iops)
			section "kcopy: 4k IOPS, fio io_uring vs gpu_copy=${set// /|}"
			kc_matrix iops 4k "${COPY_RW:-randread randwrite}" "${COPY_THREADS:-1 8 16}" \
				"io_uring $set" "${COPY_REPEAT:-5}"
			;;
		sweep)
			section "kcopy: randread 16k..256k, 4 threads, gpu_copy=dma vs kernel"
			COPY_TARGETS=shm kc_matrix sweep "16k 32k 64k 128k 256k" randread 4 \
				"dma kernel" 2
			;;
		*)	echo "COPY_PARTS: no part $part (check verify iops sweep)"; exit 2 ;;
		esac
	done
	rm -f "$kc_shm"
}
