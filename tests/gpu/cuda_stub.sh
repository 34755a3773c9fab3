#!/usr/bin/env bash
# gpu/runtime/cuda.c's dma-buf export against a stub of the CUDA driver (host memory,
# tests/gpu/cuda_stub.c), where no NVIDIA GPU exists: the PCIe BAR1 mapping is
# asked for first; CUDA_ERROR_NOT_SUPPORTED (the x86 H200, driver 580) or
# CUDA_ERROR_INVALID_VALUE (a driver without the flag) fall back to the
# default mapping and say so; a GPU behind NVLink-C2C whose driver refuses
# the PCIe mapping is refused with the reason; any other error is not
# papered over. Then fio's bounce path with verify through the stub.
. "$(dirname "$0")/../lib.sh"

check=$BUILDDIR/tests/gpu/gpu_check
stub=$BUILDDIR/tests/gpu/cuda/.libs
grep -q '^#define DBR_HAVE_CUDA 1' "$BUILDDIR/config.h" || skip "built --without-cuda"
[ -x "$check" ] || die "gpu_check not built at $check"
[ -f "$stub/libcuda.so.1" ] || die "the CUDA stub is not built ($stub/libcuda.so.1)"
log=$TMPD/exports

# cudacheck NAME WANT-EXIT REGEX FLAGS-ASKED [ENV=...] -- gpu_check ARGS...
cudacheck() {
	local name=$1 want=$2 re=$3 asked=$4 rc=0 envs=() got
	shift 4
	while [ "$1" != -- ]; do envs+=("$1"); shift; done
	shift
	: >"$log"
	env LD_LIBRARY_PATH="$stub" CUDASTUB_LOG="$log" "${envs[@]}" \
		"$check" cuda "$@" >"$TMPD/$name.out" 2>&1 || rc=$?
	got=$(sed -n 's/^export flags=\([0-9]*\).*/\1/p' "$log" | tr '\n' ' ')
	if [ "$rc" -eq "$want" ] && grep -Eq "$re" "$TMPD/$name.out" &&
		[ "$got" = "$asked" ]; then
		pass "$name (flags asked: $got)"
	else
		fail "$name: want exit $want, /$re/ and flags '$asked' (exit $rc, flags '$got')"
		sed 's/^/    /' "$TMPD/$name.out"
	fi
}

cudacheck pcie-not-supported-falls-back 0 \
	"thread 0: ok: .*dma-buf fd [0-9]+: .*default mapping \(flags=0: the PCIe BAR1 flag answered CUDA_ERROR_NOT_SUPPORTED; the GPU is on PCIe, not C2C\)" \
	"1 0 " -- -x require
cudacheck pcie-invalid-value-falls-back 0 \
	"default mapping \(flags=0: the PCIe BAR1 flag answered CUDA_ERROR_INVALID_VALUE" \
	"1 0 " CUDASTUB_PCIE=invalid -- -x require
cudacheck pcie-mapping 0 \
	"thread 0: ok: .*PCIe BAR1 mapping \(CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE\)" \
	"1 " CUDASTUB_PCIE=ok -- -x require
cudacheck c2c-pcie-mapping 0 "PCIe BAR1 mapping" "1 " CUDASTUB_PCIE=ok CUDASTUB_C2C=1 -- -x require
cudacheck c2c-without-pcie-refused 0 \
	"export refused: Operation not supported \(device 0 is on NVLink-C2C and refused the PCIe BAR1 dma-buf \(CUDA_ERROR_NOT_SUPPORTED\): its default one has C2C addresses NVMe cannot reach" \
	"1 " CUDASTUB_C2C=1 -- -x refuse
cudacheck other-error-no-fallback 0 \
	"export refused: .*cuMemGetHandleForAddressRange\(DMA_BUF_FD, MAPPING_TYPE_PCIE\): CUDA_ERROR_OUT_OF_MEMORY" \
	"1 " CUDASTUB_PCIE=oom -- -x refuse

# The copy kernel's module: one per device for the process, however many
# threads (cuModuleLoadData and cuModuleUnload wait for every kernel running
# in the context, so a module per thread serialised a job's threads behind
# one another's resident kernels), unloaded once by the last; and each
# thread's stream counts its launches in a counter slot of its own (a shared
# counter let one thread's blocks complete another's fence).
: >"$log"
if env LD_LIBRARY_PATH="$stub" CUDASTUB_LOG="$log" "$check" cuda -t 4 -k 500 \
	-c kernel -K launch >"$TMPD/kmod.out" 2>&1; then
	loads=$(grep -c '^module load dbr_kcopy' "$log")
	unloads=$(grep -c '^module unload' "$log")
	pairs=$(sed -n 's/^launch slot=\([0-9]*\) thread=\([0-9]*\)/\2 \1/p' "$log" | sort -u)
	threads=$(cut -d' ' -f1 <<<"$pairs" | sort -u | wc -l)
	slots=$(cut -d' ' -f2 <<<"$pairs" | sort -u | wc -l)
	if [ "$loads" = 1 ] && [ "$unloads" = 1 ] && [ "$threads" = 4 ] &&
		[ "$slots" = 4 ] && [ "$(wc -l <<<"$pairs")" = 4 ]; then
		pass "copy kernel, 4 threads: 1 module load, 1 unload, a counter slot per thread ($(cut -d' ' -f2 <<<"$pairs" | sort -n | paste -sd,))"
	else
		fail "copy kernel, 4 threads: $loads loads, $unloads unloads, $threads threads launched over $slots slots: $(paste -sd' ' <<<"$pairs")"
	fi
	grep -q "copies verified" "$TMPD/kmod.out" && ! grep -q "copies by DMA" "$TMPD/kmod.out" &&
		pass "copy kernel through the stub: copies verified by launches" ||
		{ fail "copy kernel through the stub: copies not verified by launches"; tail -5 "$TMPD/kmod.out"; }
else
	fail "gpu_check cuda -t 4 -c kernel -K launch on the stub failed"
	tail -10 "$TMPD/kmod.out"
fi

# the provider's copy path under fio, through the stub's "device" memory
f=$(scratch_file)
LD_LIBRARY_PATH=$stub run_ok bounce-verify-through-stub --name=cuda --filename="$f" \
	--size=16m --bs=64k --iodepth=16 --rw=randwrite --gpu=cuda --transfer=bounce \
	--verify=crc32c --verify_fatal=1 --direct=1 --thread

# job processes through the GPU owner (gpu/owner.c): the copy kernel's
# module text goes to the owner, which loads it and launches it per pass on
# the shared staging pages (the stub refuses the resident kernel), with
# 4 KiB writes verified through the stub's "device" memory
: >"$log"
LD_LIBRARY_PATH=$stub CUDASTUB_LOG=$log run_ok processes-through-owner --name=cuda \
	--filename="$f" --size=8m --bs=4k --iodepth=8 --rw=randwrite --gpu=cuda \
	--transfer=bounce --verify=crc32c --verify_fatal=1 --direct=1 --numjobs=2 \
	--offset_increment=8m
if grep -q "copies in the GPU owner's context" "$TMPD/processes-through-owner.out" &&
	grep -q '^module load dbr_kcopy' "$log" && grep -q '^launch slot=' "$log"; then
	pass "processes-through-owner: the owner loaded the copy kernel and launched it ($(grep -c '^launch' "$log") launches)"
else
	fail "processes-through-owner: no owner or no kernel launches: $(grep -m1 'gpu=cuda dev=' "$TMPD/processes-through-owner.out")"
fi
# the copy kernel's module loaded once for the device, for both job
# processes (the runtime keeps a module per text), and the resident
# kernel's text loaded as its own module, not taken for the copy kernel's
# (the owner once held both texts at one address); the stub refuses to
# start the resident kernel, so each process may load and drop it
loads=$(grep '^module load' "$log" | sort | uniq -c | awk '{ printf "%s:%s ", $4, $1 }')
case $loads in
"dbr_kcopy:1 dbr_kring:"[12]" ")
	pass "processes-through-owner: module loads $loads" ;;
*)	fail "processes-through-owner: module loads $loads, want dbr_kcopy:1 and dbr_kring:1 or 2" ;;
esac

# The resident kernel run by the stub (CUDASTUB_KRING=1: fake_kring.h's
# double, a thread per launch), with verify through "device" memory: as job
# threads; watching the ring's CQ; and as job processes through the GPU
# owner, whose kernel watches each job process's CQ in rings it maps from
# the job's ring fd, taken by number (no socket carries an io_uring fd)
# kring_case NAME WANT-CQ FIO-ARGS...: passes to the resident kernel in
# every job's line, and with WANT-CQ=1 reads copied from the CQ in each
kring_case() {
	local name=$1 want_cq=$2 out=$TMPD/$1.out n passes cq
	shift 2
	CUDASTUB_KRING=1 LD_LIBRARY_PATH=$stub run_ok "$name" --name=cuda \
		--filename="$f" --size=8m --offset_increment=8m --bs=4k --iodepth=8 \
		--rw=randwrite --gpu=cuda --transfer=bounce --direct=1 \
		--verify=crc32c --verify_fatal=1 --numjobs=2 "$@"
	n=$(grep -c '^dmabuf_uring: cuda thread [01]: 0 -EAGAIN' "$out")
	passes=$(grep -c 'passes to the resident kernel ([1-9]' "$out")
	cq=$(grep -c 'reads copied by the resident kernel from the ring.s CQ' "$out")
	if [ "$n" = 2 ] && [ "$passes" = 2 ] &&
		{ [ "$want_cq" = 0 ] || [ "$cq" = 2 ]; }; then
		pass "$name: both jobs' copies through the resident kernel ($(grep -m1 -o '[0-9]* passes to the resident kernel' "$out")$([ "$want_cq" = 1 ] && echo ", $(grep -m1 -o '[0-9]* reads copied by the resident kernel' "$out") from the CQ"))"
	else
		fail "$name: $n job lines, $passes with passes to the resident kernel, $cq with reads from the CQ"
		grep -m3 '^dmabuf_uring' "$out" | cut -c1-300
	fi
}
kring_case kring-threads 0 --thread --gpu_watch_cq=0
kring_case kring-threads-watch 1 --thread --gpu_watch_cq=1
kring_case kring-owner-watch 1 --gpu_watch_cq=1
# gpu_spin_us=0: the waits on the kernel's copies from the CQ yield the CPU
# from the start, and each job's line counts the yields
kring_case kring-threads-watch-yield 1 --thread --gpu_watch_cq=1 --gpu_spin_us=0
y=$(grep -o 'yielded the CPU [0-9]* times' "$TMPD/kring-threads-watch-yield.out" | grep -vc ' 0 times')
[ "$y" = 2 ] &&
	pass "kring-threads-watch-yield: gpu_spin_us=0: both jobs' waits yielded ($(grep -m1 -o 'yielded the CPU [0-9]* times' "$TMPD/kring-threads-watch-yield.out"))" ||
	fail "kring-threads-watch-yield: $y of 2 job lines with yields: $(grep -o 'yielded the CPU [0-9]* times' "$TMPD/kring-threads-watch-yield.out" | tr '\n' ' ')"
grep -q "copies in the GPU owner's context" "$TMPD/kring-owner-watch.out" &&
	grep -q "resident, watching the ring's CQ" "$TMPD/kring-owner-watch.out" &&
	pass "kring-owner-watch: the path line says the owner's kernel watches the CQ" ||
	fail "kring-owner-watch: the path line: $(grep -m1 'gpu=cuda dev=' "$TMPD/kring-owner-watch.out")"

# gpu_watch_cq=auto at as many job threads as CPUs: on for a file on tmpfs,
# whose reads end in the call that issues them (io-wq posts their CQEs); off
# for a block device's O_DIRECT reads, which reach the CQ only through the
# job thread's own task work (the ring keeps DEFER_TASKRUN)
# auto_watch_case NAME FILE WANT-CQ
auto_watch_case() {
	local name=$1 out=$TMPD/$1.out nj cq ring
	nj=$(getconf _NPROCESSORS_ONLN)
	CUDASTUB_KRING=1 LD_LIBRARY_PATH=$stub run_ok "$name" --name=cuda \
		--filename="$2" --size=4m --offset_increment=4m --bs=4k --iodepth=8 \
		--rw=randrw --gpu=cuda --transfer=bounce --direct=1 --thread \
		--verify=crc32c --verify_fatal=1 --numjobs="$nj"
	cq=$(grep -c 'reads copied by the resident kernel from the ring.s CQ' "$out")
	ring=$(grep -m1 -o 'ring [A-Z_|]*' "$out")
	if { [ "$3" = 1 ] && [ "$cq" = "$nj" ] && [[ $ring != *DEFER_TASKRUN* ]]; } ||
		{ [ "$3" = 0 ] && [ "$cq" = 0 ] && [[ $ring = *DEFER_TASKRUN* ]]; }; then
		pass "$name: $nj job threads, $cq of them read from the CQ, $ring"
	else
		fail "$name: want the CQ watched: $3; $cq of $nj job lines read from it, $ring"
	fi
}
if [ "$(getconf _NPROCESSORS_ONLN)" -gt 8 ]; then
	log "SKIP auto-watch: $(getconf _NPROCESSORS_ONLN) CPUs; auto watches only at as many job threads, and more than 8 on the stub's kernel threads would make this test slow"
else
	if [ "$(stat -f -c %T /dev/shm 2>/dev/null)" = tmpfs ] && shm=$(mktemp /dev/shm/dbr-cuda-stub.XXXXXX); then
		at_exit "rm -f $shm"
		auto_watch_case auto-watch-tmpfs "$shm" 1
	else
		log "SKIP auto-watch-tmpfs: no tmpfs at /dev/shm"
	fi
	if dev=$(loop_dev 64M); then
		auto_watch_case auto-watch-blkdev "$dev" 0
	else
		log "SKIP auto-watch-blkdev: no loop device (needs root)"
	fi
fi

# DBR_KRING_PTX (the resident kernel's diagnostic build, gpu-proof rounds)
# naming a file that is not there, or one that is not the kernel's PTX: the
# job runs, launching the copy kernel per pass, and its line says why
# kring_ptx_case NAME FILE WHY
kring_ptx_case() {
	local want="resident kernel: DBR_KRING_PTX=$2: $3"

	DBR_KRING_PTX=$2 LD_LIBRARY_PATH=$stub run_ok "$1" --name=cuda \
		--filename="$f" --size=4m --bs=4k --iodepth=8 --rw=randread \
		--gpu=cuda --transfer=bounce --direct=1 --thread
	grep -qF "$want" "$TMPD/$1.out" &&
		pass "$1: the job's line says '$want'" ||
		{ fail "$1: no '$want'"; grep -m3 'copy kernel' "$TMPD/$1.out"; }
}
kring_ptx_case kring-ptx-missing "$TMPD/none.ptx" "No such file or directory"
echo "// not a kernel" >"$TMPD/other.ptx"
kring_ptx_case kring-ptx-other "$TMPD/other.ptx" "no dbr_kring entry in it"
finish
