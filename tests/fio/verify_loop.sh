#!/usr/bin/env bash
# The host fixed-buffer path on a real block device: a loop device with
# direct I/O, verify=crc32c over sequential, random and mixed workloads.
. "$(dirname "$0")/../lib.sh"

[ "$(id -u)" -eq 0 ] || skip "loop devices need root"
command -v losetup >/dev/null || skip "losetup not installed (util-linux)"
dev=$(loop_dev 96M) || skip "no free loop device (losetup --find failed)"
log "target $dev"

common=(--name=loop --filename="$dev" --size=64m --gpu=host --transfer=bounce
	--direct=1 --verify=crc32c --verify_fatal=1)
run_ok loop-seqwrite-128k-qd4 "${common[@]}" --rw=write --bs=128k --iodepth=4
run_ok loop-randwrite-4k-qd32 "${common[@]}" --rw=randwrite --bs=4k --iodepth=32
run_ok loop-randrw-16k-qd128 "${common[@]}" --rw=randrw --bs=16k --iodepth=128
run_ok loop-randwrite-512-qd8 "${common[@]}" --rw=randwrite --bs=512 --iodepth=8 --size=4m
run_ok loop-registerfiles "${common[@]}" --rw=randwrite --bs=4k --iodepth=16 --registerfiles
run_ok loop-auto "${common[@]}" --rw=randwrite --bs=4k --iodepth=16 --transfer=auto
grep -q "transfer=auto -> bounce:.*$(basename "$dev") is a block device that is not an NVMe namespace" \
	"$TMPD/loop-auto.out" && pass "auto explains why a loop device gets bounce" ||
	fail "auto explains why a loop device gets bounce"
finish
