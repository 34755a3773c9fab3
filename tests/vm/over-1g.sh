# Sourced by the guest's p2p cases (guest.sh, guest.d/gpu_hip.sh): the job
# for a buffer area just over 1 GiB on /dev/nvme0n1, which v3 to v5 of the
# series refuse as one dma-buf (EINVAL) and the engine registers in pieces.
# bs stays within max_sectors_kb, so no I/O is split.
#
# over_1g_plan COPIES: sets bs_kb, depth and area_mb (the job), limit_mb
# (udmabuf.size_limit_mb, which must be over the area: the rig's
# DBR_VM_UDMABUF_MB), avail_mb (the guest's MemAvailable) and need_mb (COPIES
# areas of memory and 768 MiB for the rest: DBR_VM_MEM=4G).
over_1g_plan() {
	local max_kb

	max_kb=$(cat /sys/block/nvme0n1/queue/max_sectors_kb)
	bs_kb=$((max_kb < 4096 ? max_kb : 4096))
	depth=$((1040 * 1024 / bs_kb))
	area_mb=$((depth * bs_kb / 1024))
	limit_mb=$(cat /sys/module/udmabuf/parameters/size_limit_mb 2>/dev/null || echo 0)
	avail_mb=$(awk '/^MemAvailable:/ { print int($2 / 1024) }' /proc/meminfo)
	need_mb=$(($1 * area_mb + 768))
}

# over_1g_said JOB OUT: what job JOB's output OUT says of the area, as words
# for a pass line: the kernel refused it whole and it went in as pieces of at
# most 1 GiB (the split line's numbers), or the kernel took it whole. Fails
# where a refusal is said without the split.
over_1g_said() {
	if grep -Eq "^dmabuf_uring: $1: the kernel refused one [0-9]+ MiB dma-buf .*registered as [0-9]+ dma-bufs of at most 1024 MiB" "$2"; then
		grep -Eo 'refused one [0-9]+ MiB dma-buf|registered as [0-9]+ dma-bufs' "$2" | paste -sd' ' -
	elif ! grep -q "refused one" "$2"; then
		echo "this kernel takes the ${area_mb} MiB dma-buf whole (no split)"
	else
		return 1
	fi
}
