#!/usr/bin/env bash
# gpu=hip in the VM rig's guest, through the HIP runtime double (built by make
# check: host memory, dma-buf export through the guest's /dev/udmabuf), on the
# emulated NVMe namespace with O_DIRECT:
#   both kernels:  the provider exports a real dma-buf (ROCm 6 call and the
#                  ROCm 5 / ROCr fallback); bounce with verify=crc32c
#   stock kernel:  transfer=p2p refuses cleanly
#   series kernel: transfer=p2p for real: the double's udmabuf dma-buf
#                  registered for /dev/nvme0n1, verify through "GPU" memory
# shellcheck source=../../lib.sh
. "$SRCDIR/tests/lib.sh"

NS=/dev/nvme0n1
libs=$BUILDDIR/tests/gpu/.libs
check=$BUILDDIR/tests/gpu/gpu_check
[ -f "$libs/libamdhip64.so" ] && [ -x "$check" ] ||
	skip "the HIP double or gpu_check is not built (make check builds them)"
[ -b $NS ] || skip "no $NS in this guest"
export LD_LIBRARY_PATH=$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export HIPDOUBLE_REPORT=$TMPD/report
mode=${DBR_VM_MODE:-stock}
common=(--filename=$NS --size=16M --direct=1 --gpu=hip --thread)

if [ -c /dev/udmabuf ]; then
	if "$check" hip -x require -t 2 -m 8 >"$TMPD/export.out" 2>&1 &&
	   grep -q "exp_name: udmabuf" "$TMPD/export.out"; then
		pass "hip export: $(grep -m1 'dma-buf fd' "$TMPD/export.out" | sed 's/.*dma-buf/dma-buf/')"
	else
		fail "hip export through udmabuf"; cat "$TMPD/export.out"
	fi
	if LD_LIBRARY_PATH=$BUILDDIR/tests/gpu/rocm5/.libs "$check" hip -x require \
		>"$TMPD/rocm5.out" 2>&1 && grep -q "exp_name: udmabuf" "$TMPD/rocm5.out"; then
		pass "hip export, ROCm 5 flavour: through hsa_amd_portable_export_dmabuf"
	else
		fail "hip export, ROCm 5 flavour"; cat "$TMPD/rocm5.out"
	fi
else
	log "no /dev/udmabuf in this kernel: export cases not run"
fi

run_ok hip-bounce-verify-nvme --name=hb "${common[@]}" --transfer=bounce \
	--rw=randwrite --bs=16k --iodepth=16 --verify=crc32c --verify_fatal=1
run_ok hip-bounce-read-verify-nvme --name=hb "${common[@]}" --transfer=bounce \
	--rw=randwrite --bs=16k --iodepth=8 --verify=crc32c --verify_fatal=1 --verify_only=1

if [ "$mode" = p2p ]; then
	run_ok hip-p2p-verify-nvme --name=hp "${common[@]}" --transfer=p2p \
		--rw=randwrite --bs=16k --iodepth=16 --verify=crc32c --verify_fatal=1
	grep -q "gpu=hip dev=0 transfer=p2p" "$TMPD/hip-p2p-verify-nvme.out" &&
		pass "p2p ran with the HIP provider's dma-buf" ||
		fail "p2p with gpu=hip: path line missing"
	run_ok hip-p2p-read-nosync --name=hp "${common[@]}" --transfer=p2p --gpu_sync=0 \
		--rw=randread --bs=64k --iodepth=8
	# job processes (no --thread): the GPU owner allocates and exports, the
	# dma-buf comes over the socket and each job process registers it with
	# its own ring; only the owner calls the runtime; writes verified
	out=$TMPD/hip-p2p-processes.out
	: >"$HIPDOUBLE_REPORT"
	run_ok hip-p2p-processes --name=hq --filename=$NS --size=8M --direct=1 \
		--gpu=hip --transfer=p2p --rw=randwrite --bs=16k --iodepth=8 \
		--numjobs=2 --offset_increment=8M --verify=crc32c --verify_fatal=1
	owner=$(sed -n "s/.*dma-buf from the GPU owner (pid \([0-9]*\),.*/\1/p" "$out" | head -1)
	pids=$(hip_report "$HIPDOUBLE_REPORT" | awk '{ print $1 }' | sort -u | tr '\n' ' ')
	if [ -n "$owner" ] && [ "$pids" = "pid=$owner " ] &&
		[ "$(grep -c '^hq: (groupid=0, jobs=1): err= 0' "$out")" = 2 ]; then
		pass "p2p as 2 job processes: the owner's dma-buf, only the owner called the runtime ($pids)"
	else
		fail "p2p as job processes: owner '$owner', runtime calls from '$pids': $(grep -m1 'gpu=hip dev=0' "$out" | cut -c1-200)"
	fi
	# an area over 1 GiB (tests/vm/over-1g.sh): the double exports the pieces
	# (hipMemGetHandleForAddressRange on sub-ranges); "GPU" memory and the
	# host shadow both need the memory
	# shellcheck source=../over-1g.sh
	. "$SRCDIR/tests/vm/over-1g.sh"
	over_1g_plan 2
	if [ "$limit_mb" -le "$area_mb" ] || [ "$avail_mb" -lt "$need_mb" ]; then
		log "hip-p2p-over-1g not run: udmabuf.size_limit_mb=$limit_mb, $avail_mb MiB available; a ${area_mb} MiB area needs the limit over it and $need_mb MiB (the rig's DBR_VM_MEM=4G)"
	else
		run_ok hip-p2p-over-1g --name=hg "${common[@]}" --transfer=p2p --rw=randwrite \
			--bs=${bs_kb}k --iodepth=$depth --verify=crc32c --verify_fatal=1 --size=64M
		out=$TMPD/hip-p2p-over-1g.out
		if said=$(over_1g_said hg "$out"); then
			pass "hip-p2p-over-1g: $said"
		else
			fail "hip-p2p-over-1g: no split line"
		fi
	fi
else
	run_refused hip-p2p-refused "transfer=p2p cannot run: this kernel lacks the io_uring dma-buf series" \
		--name=hp "${common[@]}" --transfer=p2p --rw=read --bs=16k --iodepth=4
fi
finish
