#!/usr/bin/env bash
# The guest suite: runs inside the rig's VM (tests/vm/rig), chrooted into the
# host's root, against the emulated NVMe controller:
#   /dev/nvme0n1, /dev/nvme0n2  raw namespaces (256 MiB, 128 MiB)
#   /dev/nvme0n3p1              a partition, for the bad-input cases
#   /dev/nvme1n1                a second controller's (with DBR_VM_TOPO=yes:
#                               guest.d/topology.sh)
# (tests/vm/nvme-names has given them these names before this runs)
# Decides from the engine's own probe (transfer=auto) whether this kernel has
# the io_uring dma-buf series, says which case it is in, and runs:
#   stock kernel:  p2p must refuse cleanly; udmabuf, the host fixed-buffer
#                  path with verify, the bad inputs
#   series kernel: p2p for real (verify, several bs/iodepths, nrfiles>1,
#                  numjobs>1) on top of the same
# Environment from the rig: FIO ENGINE SRCDIR BUILDDIR, DBR_VM_EXPECT
# (p2p|stock), DBR_VM_CASES (regex of case names to run), DBR_VM_KERNEL.
set -uo pipefail
# shellcheck source=../lib.sh
. "$SRCDIR/tests/lib.sh"

NS1=/dev/nvme0n1
NS2=/dev/nvme0n2
PART=/dev/nvme0n3p1
SKIPPED=0
skip_case() { SKIPPED=$((SKIPPED + 1)); echo "skip - $*"; }
# want NAME: whether DBR_VM_CASES selects this case
want() { [ -z "${DBR_VM_CASES:-}" ] || [[ $1 =~ $DBR_VM_CASES ]]; }

# Every job: the emulated device, O_DIRECT, host memory (udmabuf dma-bufs for
# p2p), small sizes (TCG runs at a fraction of native speed).
common=(--direct=1 --gpu=host --size=16M --group_reporting=1)

# ---- what this VM offers ------------------------------------------------------
log "kernel $(uname -r) ($DBR_VM_KERNEL), $(nproc) CPUs"
# namespaces appear asynchronously after the driver binds: wait a little
for _ in $(seq 1 100); do
	[ -b $NS1 ] && [ -b $NS2 ] && break
	sleep 0.2
done
[ -b $NS1 ] && [ -b $NS2 ] ||
	die "no $NS1/$NS2: the kernel has no nvme driver (built in, or in MODULES=)"
log "$NS1: $(cat /sys/block/nvme0n1/device/model 2>/dev/null | tr -s ' '), max_sectors_kb $(cat /sys/block/nvme0n1/queue/max_sectors_kb)"
have_udmabuf=0
[ -c /dev/udmabuf ] && have_udmabuf=1
log "/dev/udmabuf: $([ $have_udmabuf = 1 ] && echo "yes (size_limit_mb $(cat /sys/module/udmabuf/parameters/size_limit_mb 2>/dev/null))" || echo "no (kernel lacks CONFIG_UDMABUF)")"

# ---- the engine's probe decides the case ----------------------------------------
probe_out=$TMPD/probe.out
dbr_fio --name=probe --filename=$NS1 --transfer=auto --rw=read --bs=4k \
	"${common[@]}" --size=64k >"$probe_out" 2>&1 || true
if grep -q 'transfer=auto -> p2p' "$probe_out"; then
	mode=p2p
	log "CASE: series kernel: the probe says p2p can run here, so p2p runs for real"
elif grep -q 'transfer=auto -> bounce' "$probe_out"; then
	mode=stock
	log "CASE: stock kernel: $(grep -m1 'transfer=auto -> bounce' "$probe_out" | cut -c1-200)"
	log "      p2p must refuse cleanly; the other paths run"
else
	sed 's/^/    /' "$probe_out"
	die "the engine's probe (transfer=auto) said neither p2p nor bounce"
fi
if [ -n "${DBR_VM_EXPECT:-}" ]; then
	if [ "$DBR_VM_EXPECT" = "$mode" ]; then
		pass "probe: case is '$mode' as DBR_VM_EXPECT asks"
	else
		fail "probe: DBR_VM_EXPECT=$DBR_VM_EXPECT but the probe found '$mode'"
		sed 's/^/    /' "$probe_out" | tail -10
	fi
fi
export DBR_VM_MODE=$mode

# ---- udmabuf: host memory exported as a dma-buf, for real ---------------------
if want udmabuf; then
	if [ $have_udmabuf = 0 ]; then
		skip_case "udmabuf: this kernel has no /dev/udmabuf"
	elif [ ! -x "$BUILDDIR/tests/unit/test_host" ]; then
		skip_case "udmabuf: $BUILDDIR/tests/unit/test_host not built (make check builds it)"
	elif out=$("$BUILDDIR/tests/unit/test_host" 2>&1) &&
	     grep -q '^ok - exported through /dev/udmabuf' <<<"$out"; then
		pass "udmabuf: the host provider exports its memfd through /dev/udmabuf (unit test_host in the guest)"
	else
		fail "udmabuf: test_host in the guest"
		sed 's/^/    /' <<<"$out" | tail -20
	fi
fi

# ---- the host fixed-buffer path (transfer=bounce) on the NVMe device ---------------
if want bounce; then
	run_ok bounce-write-verify-4k-qd16 --name=b1 --filename=$NS1 --transfer=bounce \
		--rw=write --bs=4k --iodepth=16 --verify=crc32c "${common[@]}"
	run_ok bounce-randwrite-verify-128k-qd4 --name=b2 --filename=$NS1 --transfer=bounce \
		--rw=randwrite --bs=128k --iodepth=4 --verify=crc32c "${common[@]}"
	run_ok bounce-randrw-verify-16k-qd32 --name=b3 --filename=$NS1 --transfer=bounce \
		--rw=randrw --bs=16k --iodepth=32 --verify=crc32c "${common[@]}"
	run_ok bounce-nrfiles2-verify --name=b4 --filename=$NS1:$NS2 --nrfiles=2 \
		--transfer=bounce --rw=randwrite --bs=8k --iodepth=8 --verify=crc32c "${common[@]}"
	run_ok bounce-numjobs2-thread-verify --name=b5 --filename=$NS1 --transfer=bounce \
		--rw=randwrite --bs=4k --iodepth=8 --numjobs=2 --offset_increment=16M \
		--thread --verify=crc32c "${common[@]}"
fi

# ---- transfer=auto picks the right path and runs ---------------------------------
if want auto; then
	out=$TMPD/auto.out
	if dbr_fio --name=auto --filename=$NS1 --transfer=auto --rw=randwrite --bs=16k \
		--iodepth=8 --verify=crc32c "${common[@]}" >"$out" 2>&1 &&
	   ! grep -q "err= *[1-9]" "$out" &&
	   grep -q "transfer=auto -> $([ $mode = p2p ] && echo p2p || echo bounce)" "$out"; then
		pass "auto: transfer=auto -> $([ $mode = p2p ] && echo p2p || echo bounce) and verifies"
	else
		fail "auto: transfer=auto on $NS1"
		sed 's/^/    /' "$out" | tail -20
	fi
fi

# ---- p2p: dma-bufs registered for the NVMe device ----------------------------------
# A buffer area over 1 GiB, registered in pieces of at most 1 GiB where the
# kernel refuses it whole (tests/vm/over-1g.sh).
# shellcheck source=over-1g.sh
. "$SRCDIR/tests/vm/over-1g.sh"
p2p_over_1g() {
	local limit_mb avail_mb need_mb bs_kb depth area_mb said out=$TMPD/p2p-over-1g.out
	over_1g_plan 1
	if [ "$limit_mb" -le "$area_mb" ]; then
		skip_case "p2p-over-1g: udmabuf.size_limit_mb=$limit_mb is under the ${area_mb} MiB area (the rig's DBR_VM_UDMABUF_MB)"
		return
	elif [ "$avail_mb" -lt "$need_mb" ]; then
		skip_case "p2p-over-1g: ${avail_mb} MiB available, the ${area_mb} MiB area needs $need_mb (DBR_VM_MEM=4G)"
		return
	fi
	if ! dbr_fio --name=p11 --filename=$NS1 --transfer=p2p --rw=randwrite --bs=${bs_kb}k \
		--iodepth=$depth --verify=crc32c "${common[@]}" --size=64M >"$out" 2>&1 ||
	   grep -q "err= *[1-9]" "$out"; then
		fail "p2p-over-1g: a ${area_mb} MiB area (bs=${bs_kb}k iodepth=$depth) does not run and verify"
		show_failure "$out"
	elif said=$(over_1g_said p11 "$out"); then
		pass "p2p-over-1g: $said, bs=${bs_kb}k iodepth=$depth, verifies"
	else
		fail "p2p-over-1g: a ${area_mb} MiB area (bs=${bs_kb}k iodepth=$depth): want the split line and a verified run"
		show_failure "$out"
	fi
}
if want p2p && [ $mode = stock ]; then
	run_refused p2p-refused-stock-kernel \
		'transfer=p2p cannot run: this kernel lacks the io_uring dma-buf series.*transfer=bounce' \
		--name=p --filename=$NS1 --transfer=p2p --rw=read --bs=4k "${common[@]}"
elif want p2p && [ $have_udmabuf = 0 ]; then
	fail "p2p: the probe says p2p can run but there is no /dev/udmabuf for gpu=host (CONFIG_UDMABUF)"
elif want p2p; then
	run_ok p2p-write-verify-4k-qd1 --name=p1 --filename=$NS1 --transfer=p2p \
		--rw=write --bs=4k --iodepth=1 --verify=crc32c "${common[@]}" --size=4M
	run_ok p2p-write-verify-128k-qd8 --name=p2 --filename=$NS1 --transfer=p2p \
		--rw=write --bs=128k --iodepth=8 --verify=crc32c "${common[@]}"
	run_ok p2p-randwrite-verify-512k-qd4 --name=p3 --filename=$NS1 --transfer=p2p \
		--rw=randwrite --bs=512k --iodepth=4 --verify=crc32c "${common[@]}"
	run_ok p2p-randrw-verify-16k-qd32 --name=p4 --filename=$NS1 --transfer=p2p \
		--rw=randrw --bs=16k --iodepth=32 --verify=crc32c "${common[@]}"
	run_ok p2p-bsrange-verify --name=p5 --filename=$NS1 --transfer=p2p \
		--rw=randwrite --bsrange=4k-64k --iodepth=16 --verify=crc32c "${common[@]}"
	# read back what the bounce path wrote: both paths see the same bytes
	run_ok p2p-write-then-bounce-verify --name=p6 --filename=$NS1 --transfer=p2p \
		--rw=write --bs=64k --iodepth=8 --do_verify=0 --verify=crc32c "${common[@]}"
	run_ok p2p-read-verify-only --name=p6 --filename=$NS1 --transfer=bounce \
		--rw=read --bs=64k --iodepth=8 --verify_only=1 --verify=crc32c "${common[@]}"
	run_ok p2p-nrfiles2-verify --name=p7 --filename=$NS1:$NS2 --nrfiles=2 \
		--transfer=p2p --rw=randwrite --bs=8k --iodepth=8 --verify=crc32c "${common[@]}"
	# numjobs: each job its own region (offset_increment), else they overwrite
	# each other's blocks and verify fails by design
	run_ok p2p-numjobs2-verify --name=p8 --filename=$NS1 --transfer=p2p \
		--rw=randwrite --bs=4k --iodepth=8 --numjobs=2 --offset_increment=16M \
		--verify=crc32c "${common[@]}"
	run_ok p2p-numjobs2-thread-nrfiles2-registerfiles --name=p9 --filename=$NS1:$NS2 \
		--nrfiles=2 --transfer=p2p --rw=randrw --bs=32k --iodepth=16 --numjobs=2 \
		--offset_increment=8M --thread --registerfiles=1 --verify=crc32c \
		"${common[@]}" --size=8M
	run_ok p2p-read-4k-qd32-noverify --name=p10 --filename=$NS1 --transfer=p2p \
		--rw=randread --bs=4k --iodepth=32 "${common[@]}"
	p2p_over_1g
fi

# ---- bad inputs that need a real NVMe device -----------------------------------------
if want bad; then
	# the kernel reason (stock) comes first; the target/direct reason must be there too
	run_refused bad-p2p-direct0 'direct=0|needs direct=1' \
		--name=x --filename=$NS1 --transfer=p2p --direct=0 --gpu=host --rw=read --bs=4k --size=1M
	if [ -b $PART ]; then
		run_refused bad-p2p-nvme-partition "$PART is a partition" \
			--name=x --filename=$PART --transfer=p2p --rw=read --bs=4k "${common[@]}" --size=1M
	else
		skip_case "bad-p2p-nvme-partition: no $PART (sfdisk missing on the host?)"
	fi
	if dev=$(loop_dev 32M); then
		run_refused bad-p2p-loop "$dev is a block device that is not an NVMe namespace" \
			--name=x --filename="$dev" --transfer=p2p --rw=read --bs=4k "${common[@]}" --size=1M
	else
		skip_case "bad-p2p-loop: no loop device in this kernel"
	fi
	f=$TMPD/plain.bin
	truncate -s 4M "$f"
	run_refused bad-p2p-regular-file "$f is not a block device" \
		--name=x --filename="$f" --transfer=p2p --rw=read --bs=4k "${common[@]}" --size=1M
	# one job, two files, only one of them an NVMe namespace
	run_refused bad-p2p-mixed-files "$f is not a block device" \
		--name=x --filename="$NS1:$f" --nrfiles=2 --transfer=p2p --rw=read --bs=4k \
		"${common[@]}" --size=1M
fi

# ---- EXTRA GUEST TESTS: drop a *.sh into tests/vm/guest.d/ -------------------------
# Each runs here, in the guest, with bash and the environment above (FIO
# ENGINE SRCDIR BUILDDIR TMPDIR, DBR_VM_MODE=p2p|stock); it may source
# tests/lib.sh. Exit 0 pass, 77 skip (say "SKIP: why"), anything else fails.
for t in "$SRCDIR"/tests/vm/guest.d/*.sh; do
	[ -f "$t" ] || continue
	name=guest.d/$(basename "$t" .sh)
	want "$name" || continue
	out=$TMPD/$(basename "$t").out
	rc=0
	bash "$t" >"$out" 2>&1 || rc=$?
	sed 's/^/    /' "$out"
	case $rc in
	0) pass "$name" ;;
	77) skip_case "$name: $(grep -m1 '^SKIP' "$out" || echo 'skipped')" ;;
	*) fail "$name (exit $rc)" ;;
	esac
done

log "case: $mode kernel; $SKIPPED case(s) skipped"
finish
