#!/usr/bin/env bash
# The IOMMU policy against a real emulated IOMMU: the rig boots QEMU's
# intel-iommu (DBR_VM_IOMMU=dma: intel_iommu=on, the kernel's default
# translated domain, DMA-FQ on Debian; =pt: also iommu=pt, identity). Checks
# that the group and its type are read from the guest's sysfs, that the
# engine and dmabuf-doctor decide alike: a GPU-typed dma-buf (the HIP
# double's) refused for p2p under translation with the line naming the
# controller, its group type and the fixes, unless p2p_iommu=allow;
# transfer=auto falls back to bounce saying why; gpu=host and bounce run. On
# a series kernel gpu=host p2p writes and verifies under translation, within
# the 128 KiB max_sectors_kb a translating IOMMU leaves, and a 256 KiB job
# gets the split line.
# shellcheck source=../../lib.sh
. "$SRCDIR/tests/lib.sh"

case ${DBR_VM_IOMMU:-} in
dma | pt) ;;
*) skip "the rig booted without an emulated IOMMU (DBR_VM_IOMMU=dma or pt)" ;;
esac
NS=/dev/nvme0n1
CA=0000:01:00.0
[ -b $NS ] || skip "no $NS in this guest"
mode=${DBR_VM_MODE:-stock}
common=(--filename=$NS --direct=1 --size=8M --group_reporting=1)
want_type=DMA-FQ
[ "$DBR_VM_IOMMU" = pt ] && want_type=identity

# ---- the guest's sysfs -----------------------------------------------------------
groups=$(ls /sys/kernel/iommu_groups 2>/dev/null | wc -l)
ctrl=$(basename "$(readlink -f /sys/block/nvme0n1/device/device 2>/dev/null)")
[ -n "$ctrl" ] || ctrl=$CA
group=$(basename "$(readlink "/sys/bus/pci/devices/$ctrl/iommu_group" 2>/dev/null)")
type=$(cat "/sys/bus/pci/devices/$ctrl/iommu_group/type" 2>/dev/null)
[ "$groups" -gt 0 ] ||
	skip "DBR_VM_IOMMU=$DBR_VM_IOMMU but this kernel made no IOMMU groups (CONFIG_INTEL_IOMMU, intel_iommu=on)"
log "IOMMU: $groups groups; nvme0n1's controller $ctrl in group ${group:-none}, type ${type:-none}; $(grep -o 'intel_iommu=[^ ]*\|iommu=[^ ]*' /proc/cmdline | tr '\n' ' ')"
[ "$groups" -gt 0 ] && [ -n "$group" ] && [ "$type" = "$want_type" ] &&
	pass "sysfs: $groups IOMMU groups, $ctrl in group $group of type $type" ||
	fail "sysfs: want IOMMU groups and $ctrl in a $want_type group (groups $groups, group '${group}', type '${type}')"

# ---- the engine: a GPU's dma-buf (the HIP double) -----------------------------------
use_hip_double
iommu_re="nvme0n1's controller $ctrl is in IOMMU group $group of type $type, which translates its DMA, and a gpu=hip dma-buf carries physical addresses .*iommu=pt.*p2p_iommu=allow"
if [ "$want_type" = DMA-FQ ]; then
	run_refused hip-p2p-refused-translated "transfer=p2p cannot run: .*$iommu_re" \
		--name=hp "${common[@]}" --gpu=hip --transfer=p2p --rw=read --bs=16k
	out=$TMPD/hip-auto.out
	if dbr_fio --name=ha "${common[@]}" --gpu=hip --transfer=auto --rw=randwrite \
		--bs=16k --iodepth=8 --verify=crc32c --thread >"$out" 2>&1 &&
	   ! grep -q "err= *[1-9]" "$out" &&
	   grep -Eq "^dmabuf_uring: ha: transfer=auto -> bounce: .*$iommu_re" "$out"; then
		pass "hip-auto-falls-back: transfer=auto -> bounce naming the IOMMU, and verifies"
	else
		fail "hip-auto-falls-back: want transfer=auto -> bounce with the IOMMU reason"
		sed 's/^/    /' "$out" | tail -15
	fi
	# the mapping taken care of: the IOMMU has no word any more
	out=$TMPD/hip-allow.out
	dbr_fio --name=hp "${common[@]}" --gpu=hip --transfer=p2p --p2p_iommu=allow \
		--rw=read --bs=16k >"$out" 2>&1
	! grep -q "IOMMU group" "$out" &&
		pass "p2p_iommu=allow: no IOMMU refusal ($(grep -m1 '^dmabuf_uring' "$out" | cut -c1-90))" ||
		{ fail "p2p_iommu=allow still refused for the IOMMU"; sed 's/^/    /' "$out" | tail -5; }
else
	out=$TMPD/hip-pt.out
	dbr_fio --name=hp "${common[@]}" --gpu=hip --transfer=p2p --rw=read --bs=16k >"$out" 2>&1
	! grep -q "IOMMU group" "$out" &&
		pass "identity (iommu=pt): a GPU's dma-buf is not refused for the IOMMU" ||
		{ fail "iommu=pt: refused for the IOMMU"; sed 's/^/    /' "$out" | tail -5; }
fi

# ---- dmabuf-doctor says the same ------------------------------------------------------
DOCTOR=$BUILDDIR/dmabuf-doctor
"$DOCTOR" --gpu hip $NS >"$TMPD/doctor.out" 2>&1
line=$(grep -E '^[a-zA-Z]+ +iommu.group ' "$TMPD/doctor.out")
if [ "$want_type" = DMA-FQ ]; then
	[[ $line =~ ^FAIL\ +iommu.group\ +(.*)$ ]] && grep -Eq "$iommu_re" <<<"${BASH_REMATCH[1]}" &&
		pass "doctor --gpu hip: iommu.group FAIL with the engine's line" ||
		fail "doctor --gpu hip: want 'FAIL iommu.group' with the engine's line, got: ${line:-nothing}"
	"$DOCTOR" --gpu hip --p2p-iommu allow $NS >"$TMPD/doctor-allow.out" 2>&1
	grep -Eq '^warning +iommu.group .*p2p_iommu=allow' "$TMPD/doctor-allow.out" &&
		pass "doctor --p2p-iommu allow: a warning, as the engine runs" ||
		fail "doctor --p2p-iommu allow: $(grep 'iommu.group' "$TMPD/doctor-allow.out")"
else
	[[ $line =~ ^ok\ +iommu.group\ +.*type\ identity ]] &&
		pass "doctor --gpu hip: iommu.group ok (identity)" ||
		fail "doctor --gpu hip: want 'ok iommu.group ... identity', got: ${line:-nothing}"
fi
"$DOCTOR" --gpu host $NS >"$TMPD/doctor-host.out" 2>&1
grep -Eq '^ok +iommu.group ' "$TMPD/doctor-host.out" &&
	pass "doctor --gpu host: iommu.group ok (udmabuf maps through the DMA API)" ||
	fail "doctor --gpu host: $(grep 'iommu.group' "$TMPD/doctor-host.out")"

# ---- what runs under translation --------------------------------------------------------
run_ok host-bounce-verify --name=hb "${common[@]}" --gpu=host --transfer=bounce \
	--rw=randwrite --bs=16k --iodepth=16 --verify=crc32c
run_ok hip-bounce-verify --name=gb "${common[@]}" --gpu=hip --transfer=bounce \
	--rw=randwrite --bs=64k --iodepth=8 --verify=crc32c --thread
if [ "$mode" = p2p ]; then
	max_kb=$(cat /sys/block/nvme0n1/queue/max_sectors_kb)
	bs=$((max_kb < 128 ? max_kb : 128))k
	run_ok host-p2p-verify-$type-bs$bs --name=hp "${common[@]}" --gpu=host --transfer=p2p \
		--rw=randwrite --bs=$bs --iodepth=8 --verify=crc32c
	if [ "$max_kb" -lt 256 ]; then
		# v3 may hang on the split I/O: bounded, and the watchdog speaks
		timeout 60 "$FIO" --ioengine="external:$ENGINE" --name=sp "${common[@]}" \
			--gpu=host --transfer=p2p --rw=read --bs=256k --number_ios=1 \
			--stall_watchdog=5 >"$TMPD/split.out" 2>&1
		grep -q "^dmabuf_uring: sp: bs=256 KiB is over nvme0n1's max_sectors_kb=$max_kb: the block layer splits" "$TMPD/split.out" &&
			pass "bs=256k over max_sectors_kb=$max_kb: the split line ($(grep -c 'stalled' "$TMPD/split.out") stall lines)" ||
			{ fail "bs=256k: no split line"; sed 's/^/    /' "$TMPD/split.out" | tail -5; }
	fi
fi
finish
