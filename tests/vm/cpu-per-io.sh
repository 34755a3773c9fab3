#!/usr/bin/env bash
# CPU per I/O in the VM rig's guest (docs/perf.md, "p2p in the VM rig"): one
# job, 4k random reads at iodepth 32 from /dev/nvme0n1 (direct=1, one thread
# pinned to CPU 0, registered file), run by three engines in turn, alternating
# repetitions:
#   hip-p2p   this engine, gpu=hip through the HIP runtime double, transfer=p2p
#             gpu_sync=0 (the double's udmabuf dma-buf registered for the device)
#   host-p2p  this engine, gpu=host transfer=p2p
#   io_uring  fio's io_uring engine, fixedbufs=1 registerfiles=1
# A guest script for the rig, on a kernel with the io_uring dma-buf series:
#   KERNEL=.../bzImage DBR_VM_GUEST=tests/vm/cpu-per-io.sh tests/vm/rig
# DBR_GUEST_REPS (5) and DBR_GUEST_IOS (20000) set the repetitions and I/Os
# per engine and run (the rig passes DBR_GUEST_* into the guest). For
# each run: fio's own usr+sys CPU per I/O, and the guest's whole-system busy
# time per I/O from /proc/stat (io-wq workers and interrupts included). TCG
# emulates the CPU and QEMU's NVMe model runs outside the guest: the figures
# compare the engines with each other, they are no absolute cost.
# shellcheck source=../lib.sh
. "$SRCDIR/tests/lib.sh"

NS=/dev/nvme0n1
reps=${DBR_GUEST_REPS:-5}
ios=${DBR_GUEST_IOS:-20000}
for _ in $(seq 1 100); do [ -b $NS ] && break; sleep 0.2; done
[ -b $NS ] || die "no $NS"
use_hip_double
job=(--name=cpu --filename=$NS --direct=1 --rw=randread --bs=4k --iodepth=32
     --norandommap --randrepeat=0 --number_ios="$ios" --thread --registerfiles=1
     --cpus_allowed=0 --output-format=json)
log "kernel $(uname -r), $(nproc) CPUs; $reps repetitions of $ios 4k random reads at qd32 per engine"

busy() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 }' /proc/stat; }
results=$TMPD/cpu.tsv
: >"$results"
run_one() {
	local what=$1 json=$TMPD/$1.json b0 b1
	shift
	b0=$(busy)
	# json on stdout, the engine's lines on stderr (none with --output=FILE)
	if ! run_fio "$@" "${job[@]}" >"$json" 2>"$TMPD/$what.log"; then
		fail "$what: fio failed"
		sed 's/^/    /' "$TMPD/$what.log" | tail -10
		return
	fi
	b1=$(busy)
	python3 - "$what" "$json" "$((b1 - b0))" "$(getconf CLK_TCK)" >>"$results" <<'EOF'
import json, sys
what, path, jiffies, hz = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
j = json.load(open(path))["jobs"][0]
ios = j["read"]["total_ios"]
run_us = j["job_runtime"] * 1000.0
fio_us = (j["usr_cpu"] + j["sys_cpu"]) / 100.0 * run_us / ios
sys_us = jiffies * 1e6 / hz / ios
print("%s\t%d\t%.0f\t%.2f\t%.2f" % (what, ios, ios / (run_us / 1e6), fio_us, sys_us))
EOF
}
for r in $(seq 1 "$reps"); do
	run_one hip-p2p --ioengine="external:$ENGINE" --gpu=hip --transfer=p2p --gpu_sync=0
	run_one host-p2p --ioengine="external:$ENGINE" --gpu=host --transfer=p2p
	run_one io_uring --ioengine=io_uring --fixedbufs=1
	log "repetition $r: $(tail -3 "$results" | awk '{ printf "%s %.2f/%.2f us  ", $1, $4, $5 }')"
done
for what in hip-p2p host-p2p; do
	log "$what: $(grep -h -m1 'transfer=p2p' "$TMPD/$what.log" | cut -c1-200)"
done
python3 - "$results" <<'EOF'
import statistics, sys
rows = [l.split("\t") for l in open(sys.argv[1]) if l.strip()]
print("engine     runs  IOPS(med)  fio CPU us/IO med (min)  guest busy us/IO med (min)")
base = None
for what in ("hip-p2p", "host-p2p", "io_uring"):
    r = [x for x in rows if x[0] == what]
    if not r:
        continue
    iops = statistics.median(float(x[2]) for x in r)
    f = [float(x[3]) for x in r]
    s = [float(x[4]) for x in r]
    print("%-9s  %4d  %9.0f  %10.2f (%.2f)  %18.2f (%.2f)" % (
        what, len(r), iops, statistics.median(f), min(f), statistics.median(s), min(s)))
EOF
[ "$(wc -l <"$results")" -eq $((3 * reps)) ] && pass "cpu-per-io: $((3 * reps)) runs"
finish
