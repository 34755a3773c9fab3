#!/usr/bin/env bash
# gpu_dev_ids=auto with the HIP double: its devices are placed in a sysfs
# tree built here (HIPDOUBLE_PCI), and the engine reads that tree instead of
# /sys (DBR_SYSFS_ROOT), where the test file's filesystem sits on an NVMe
# partition. Checked: the GPU each thread gets (from the double's
# allocations per device), the one line that says why, the fallbacks, ties
# spread over every job section of the run (threads or job processes; a
# stonewall starts afresh), a multipath namespace measured at its nearest
# path, and that gpu=host and an explicit list are unchanged.
. "$(dirname "$0")/../lib.sh"

use_hip_double

HB0=devices/pci0000:00
SW=$HB0/0000:00:01.0/0000:01:00.0
NVME0=$SW/0000:02:08.0/0000:03:00.0		# below the switch, node 0
NVME2=devices/pci0000:80/0000:80:02.0/0000:82:00.0	# socket 1
# hip devices 0..3: socket 1, below nvme0's switch, nvme0's host bridge,
# below nvme0's switch again
export HIPDOUBLE_DEVICES=4
pci=0000:81:00.0,0000:04:00.0,0000:05:00.0,0000:07:00.0
declare -A at=(
	[0000:81:00.0]=devices/pci0000:80/0000:80:01.0/0000:81:00.0
	[0000:04:00.0]=$SW/0000:02:10.0/0000:04:00.0
	[0000:05:00.0]=$HB0/0000:00:03.0/0000:05:00.0
	[0000:07:00.0]=$SW/0000:02:18.0/0000:07:00.0
	[0000:03:00.0]=$NVME0
	[0000:82:00.0]=$NVME2
)

# nodes 0 and 1 get the first and the last CPU this test may use
cpus=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)
cpu0=${cpus%%[-,]*}
cpu1=${cpus##*[-,]}

# fixture ROOT DISK-DIR: a sysfs tree in which this directory's filesystem
# (its st_dev) is the block device at DISK-DIR ("" for none)
fixture() {
	local root=$1 disk=$2 bdf node devt
	for bdf in "${!at[@]}"; do
		node=0
		case $bdf in 0000:8*) node=1 ;; esac
		mkdir -p "$root/sys/${at[$bdf]}" "$root/sys/bus/pci/devices"
		echo "$node" >"$root/sys/${at[$bdf]}/numa_node"
		ln -s "$root/sys/${at[$bdf]}" "$root/sys/bus/pci/devices/$bdf"
	done
	mkdir -p "$root/sys/devices/system/node/node0" "$root/sys/devices/system/node/node1"
	echo "$cpu0" >"$root/sys/devices/system/node/node0/cpulist"
	echo "$cpu1" >"$root/sys/devices/system/node/node1/cpulist"
	[ -n "$disk" ] || return 0
	devt=$(stat -c '%Hd:%Ld' "$TMPD" 2>/dev/null) ||
		devt=$(printf '%d:%d' $(($(stat -c '0x%d' "$TMPD") >> 8)) $(($(stat -c '0x%d' "$TMPD") & 255)))
	mkdir -p "$root/sys/$disk" "$root/sys/dev/block"
	ln -s "$root/sys/$disk" "$root/sys/dev/block/$devt"
}
# a partition of nvme0n1 (below the switch)
fixture "$TMPD/near" "$NVME0/nvme/nvme0/nvme0n1/nvme0n1p1"
echo 1 >"$TMPD/near/sys/$NVME0/nvme/nvme0/nvme0n1/nvme0n1p1/partition"
ln -s "$TMPD/near/sys/$NVME0/nvme/nvme0" "$TMPD/near/sys/$NVME0/nvme/nvme0/nvme0n1/device"
# nvme2n1 on socket 1
fixture "$TMPD/far" "$NVME2/nvme/nvme2/nvme2n1"
# this filesystem on no PCI controller
fixture "$TMPD/none" ""
# a multipath head node: path nvme1 on socket 1 (the lowest numbered), path
# nvme5 below nvme0's switch
SUBSYS=devices/virtual/nvme-subsystem/nvme-subsys9
fixture "$TMPD/mpath" "$SUBSYS/nvme9n1"
mkdir -p "$TMPD/mpath/sys/$NVME2/nvme/nvme1" "$TMPD/mpath/sys/$NVME0/nvme/nvme5"
ln -s "$TMPD/mpath/sys/$NVME2/nvme/nvme1" "$TMPD/mpath/sys/$SUBSYS/nvme1"
ln -s "$TMPD/mpath/sys/$NVME0/nvme/nvme5" "$TMPD/mpath/sys/$SUBSYS/nvme5"

f=$(scratch_file)
job=(--name=a --filename="$f" --size=8m --gpu=hip --transfer=bounce --direct=1
	--rw=randwrite --bs=16k --iodepth=4 --numjobs=4 --thread --gpu_dev_ids=auto)
allocs() { hip_report "$HIPDOUBLE_REPORT" | grep -o ' dev0=.* at' | sed 's/ at$//'; }

# want NAME ALLOCS LINE-REGEX: the devices that got memory, and the line
want() {
	local name=$1 alloc=$2 re=$3 got
	got=$(allocs)
	[ "$got" = "$alloc" ] && pass "$name: allocations$got" ||
		fail "$name: allocations '$got', want '$alloc'"
	grep -qE "^dmabuf_uring: a: gpu_dev_ids=auto: $re" "$TMPD/$name.out" &&
		pass "$name: $(grep -m1 'gpu_dev_ids=auto' "$TMPD/$name.out" | cut -c1-160)" ||
		{ fail "$name: no line matching /$re/"; grep dmabuf_uring "$TMPD/$name.out" | sed 's/^/    /'; }
	[ "$(grep -c 'gpu_dev_ids=auto' "$TMPD/$name.out")" -eq 1 ] ||
		fail "$name: want one gpu_dev_ids=auto line for the job"
	: >"$HIPDOUBLE_REPORT"
}

: >"$HIPDOUBLE_REPORT"
near="same-switch to nvme0n1's controller 0000:03:00.0, via the filesystem"
tie="hip 1,3 tie, spread over the run"
DBR_SYSFS_ROOT=$TMPD/near HIPDOUBLE_PCI=$pci run_ok switch "${job[@]}"
want switch " dev0=0 dev1=2 dev2=0 dev3=2" \
	"threads 0,2 -> hip 1, threads 1,3 -> hip 3: $near; $tie\$"

# ---- ties spread over the whole run, not each job section alone ------------
# the double's allocations per device, summed over its processes
alloc_sum() {
	hip_report "$HIPDOUBLE_REPORT" | grep -o ' dev0=.* at' | sed 's/ at$//' |
		awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); n[i] += kv[2] } }
		     END { for (i = 1; i <= 4; i++) printf " dev%d=%d", i - 1, n[i] }'
}
# sections NAME ALLOCS 'JOB=REGEX'...: the summed allocations, and each
# job's one gpu_dev_ids=auto line
sections() {
	local name=$1 alloc=$2 got jr j re
	shift 2
	got=$(alloc_sum)
	[ "$got" = "$alloc" ] && pass "$name: allocations$got" ||
		fail "$name: allocations '$got', want '$alloc'"
	for jr in "$@"; do
		j=${jr%%=*} re=${jr#*=}
		if [ "$(grep -cE "^dmabuf_uring: $j: gpu_dev_ids=auto: $re" "$TMPD/$name.out")" -eq 1 ]; then
			pass "$name: $(grep -m1 "^dmabuf_uring: $j: gpu_dev_ids=auto" "$TMPD/$name.out" | cut -c1-120)"
		else
			fail "$name: job $j: want one line matching /$re/"
			grep "gpu_dev_ids=auto" "$TMPD/$name.out" | sed 's/^/    /'
		fi
	done
	: >"$HIPDOUBLE_REPORT"
}
sec=(--filename="$f" --size=8m --gpu=hip --transfer=bounce --direct=1
	--rw=randwrite --bs=16k --iodepth=4 --gpu_dev_ids=auto)
# two sections of one thread each, hip 1 and 3 equally near: one each
# (per section, both took hip 1)
DBR_SYSFS_ROOT=$TMPD/near HIPDOUBLE_PCI=$pci run_ok two-sections --thread \
	--name=a "${sec[@]}" --name=b "${sec[@]}"
sections two-sections " dev0=0 dev1=1 dev2=0 dev3=1" \
	"a=thread 0 -> hip 1: $near; $tie\$" "b=thread 0 -> hip 3: $near; $tie\$"
# three threads each: 1,3,1 then 3,1,3, three per GPU (per section: 4 and 2)
DBR_SYSFS_ROOT=$TMPD/near HIPDOUBLE_PCI=$pci run_ok two-sections-x3 --thread \
	--name=a "${sec[@]}" --numjobs=3 --name=b "${sec[@]}" --numjobs=3
sections two-sections-x3 " dev0=0 dev1=3 dev2=0 dev3=3" \
	"a=threads 0,2 -> hip 1, thread 1 -> hip 3: $near; $tie\$" \
	"b=threads 0,2 -> hip 3, thread 1 -> hip 1: $near; $tie\$"
# job processes work it out the same way, each in its own process
DBR_SYSFS_ROOT=$TMPD/near HIPDOUBLE_PCI=$pci run_ok two-sections-procs \
	--name=a "${sec[@]}" --numjobs=3 --name=b "${sec[@]}" --numjobs=3
sections two-sections-procs " dev0=0 dev1=3 dev2=0 dev3=3" \
	"a=threads 0,2 -> hip 1, thread 1 -> hip 3: $near; $tie\$" \
	"b=threads 0,2 -> hip 3, thread 1 -> hip 1: $near; $tie\$"
# b waits for a (stonewall): it starts the counts afresh
DBR_SYSFS_ROOT=$TMPD/near HIPDOUBLE_PCI=$pci run_ok stonewall --thread \
	--name=a "${sec[@]}" --numjobs=3 --name=b "${sec[@]}" --numjobs=3 --stonewall
sections stonewall " dev0=0 dev1=4 dev2=0 dev3=2" \
	"a=threads 0,2 -> hip 1, thread 1 -> hip 3: $near; $tie\$" \
	"b=threads 0,2 -> hip 1, thread 1 -> hip 3: $near; $tie\$"
# a section with an explicit list in between counts for nothing
DBR_SYSFS_ROOT=$TMPD/near HIPDOUBLE_PCI=$pci run_ok list-between --thread \
	--name=a "${sec[@]}" --name=m "${sec[@]}" --gpu_dev_ids=1 --name=b "${sec[@]}"
sections list-between " dev0=0 dev1=2 dev2=0 dev3=1" \
	"a=thread 0 -> hip 1: $near; $tie\$" "b=thread 0 -> hip 3: $near; $tie\$"

# gpu_dev_ids=auto in a job file's [global] section: fio keeps [global]'s
# options out of each job's option list, so a job learns its peers' value
# from its own (it once saw no peers and put every thread on hip 1)
jf=$TMPD/global.fio
{
	echo "[global]"
	for o in "${sec[@]}"; do echo "${o#--}"; done
	echo "numjobs=3"
	echo "[a]"
	echo "[b]"
} >"$jf"
DBR_SYSFS_ROOT=$TMPD/near HIPDOUBLE_PCI=$pci run_ok global-section --thread "$jf"
sections global-section " dev0=0 dev1=3 dev2=0 dev3=3" \
	"a=threads 0,2 -> hip 1, thread 1 -> hip 3: $near; $tie\$" \
	"b=threads 0,2 -> hip 3, thread 1 -> hip 1: $near; $tie\$"
DBR_SYSFS_ROOT=$TMPD/near HIPDOUBLE_PCI=$pci run_ok global-section-procs "$jf"
sections global-section-procs " dev0=0 dev1=3 dev2=0 dev3=3" \
	"a=threads 0,2 -> hip 1, thread 1 -> hip 3: $near; $tie\$" \
	"b=threads 0,2 -> hip 3, thread 1 -> hip 1: $near; $tie\$"

DBR_SYSFS_ROOT=$TMPD/far HIPDOUBLE_PCI=$pci run_ok cross-socket "${job[@]}"
want cross-socket " dev0=4 dev1=0 dev2=0 dev3=0" \
	"threads 0,1,2,3 -> hip 0: same-host-bridge to nvme2n1's controller 0000:82:00.0, via the filesystem\$"

# the namespace is as near a GPU as the nearest of its paths, and says which
DBR_SYSFS_ROOT=$TMPD/mpath HIPDOUBLE_PCI=$pci run_ok multipath "${job[@]}"
want multipath " dev0=0 dev1=2 dev2=0 dev3=2" \
	"threads 0,2 -> hip 1, threads 1,3 -> hip 3: same-switch to nvme9n1's path nvme5 at 0000:03:00.0 \\(the nearest of 2\\), via the filesystem; $tie\$"

DBR_SYSFS_ROOT=$TMPD/none HIPDOUBLE_PCI=$pci run_ok no-controller "${job[@]}"
want no-controller " dev0=1 dev1=1 dev2=1 dev3=1" \
	"thread 0 -> hip 0, thread 1 -> hip 1, thread 2 -> hip 2, thread 3 -> hip 3: round-robin: $f is on no PCI controller\$"

DBR_SYSFS_ROOT=$TMPD/near run_ok no-pci-addresses "${job[@]}"
want no-pci-addresses " dev0=1 dev1=1 dev2=1 dev3=1" \
	"thread 0 -> hip 0, .*, thread 3 -> hip 3: round-robin: gpu=hip tells no PCI address for its devices\$"

# an explicit list keeps its meaning
DBR_SYSFS_ROOT=$TMPD/near HIPDOUBLE_PCI=$pci run_ok explicit-list \
	"${job[@]}" --gpu_dev_ids=2
got=$(allocs)
[ "$got" = " dev0=0 dev1=0 dev2=4 dev3=0" ] && ! grep -q "gpu_dev_ids=auto" "$TMPD/explicit-list.out" &&
	pass "gpu_dev_ids=2: every thread on device 2, no auto line" ||
	fail "gpu_dev_ids=2: allocations '$got'"
: >"$HIPDOUBLE_REPORT"

# gpu_cpus=auto: the thread runs on its GPU's node, said in the same line
DBR_SYSFS_ROOT=$TMPD/far HIPDOUBLE_PCI=$pci run_ok cpus-auto "${job[@]}" \
	--numjobs=2 --gpu_cpus=auto
want cpus-auto " dev0=2 dev1=0 dev2=0 dev3=0" \
	"threads 0,1 -> hip 0: same-host-bridge to .*; CPUs $cpu1 of node 1\$"
DBR_SYSFS_ROOT=$TMPD/far HIPDOUBLE_PCI=$pci run_ok cpus-allowed "${job[@]}" \
	--numjobs=2 --gpu_cpus=auto --cpus_allowed="$cpu0"
want cpus-allowed " dev0=2 dev1=0 dev2=0 dev3=0" \
	"threads 0,1 -> hip 0: .*; CPUs as cpus_allowed says\$"
# an explicit list: the job's path line says it
DBR_SYSFS_ROOT=$TMPD/near HIPDOUBLE_PCI=$pci run_ok cpus-list "${job[@]}" \
	--numjobs=1 --gpu_dev_ids=1 --gpu_cpus=auto
grep -q "^dmabuf_uring: a: gpu=hip dev=1 transfer=bounce .*; gpu_cpus=auto: CPUs $cpu0 of node 0$" \
	"$TMPD/cpus-list.out" && pass "gpu_dev_ids=1 gpu_cpus=auto: said in the path line" ||
	{ fail "gpu_dev_ids=1 gpu_cpus=auto: no line"; grep dmabuf_uring "$TMPD/cpus-list.out"; }
: >"$HIPDOUBLE_REPORT"
# and the kernel has it: the job's thread runs on node 1's CPU only
if [ "$cpu0" != "$cpu1" ]; then
	DBR_SYSFS_ROOT=$TMPD/far HIPDOUBLE_PCI=$pci dbr_fio "${job[@]}" --numjobs=1 \
		--gpu_cpus=auto --rw=randread --time_based --runtime=3 >"$TMPD/pinned.out" 2>&1 &
	bg=$!
	pinned=
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		sleep 0.2
		for pid in $(pgrep -f "filename=$f" || true); do
			pinned+=$(grep -h '^Cpus_allowed_list' /proc/"$pid"/task/*/status 2>/dev/null |
				awk '{ print $2 }' | grep -x "$cpu1" || true)
		done
		[ -n "$pinned" ] && break
	done
	wait "$bg" || true
	[ -n "$pinned" ] && pass "a job thread runs on CPU $cpu1 only (node 1)" ||
		fail "no thread of the job pinned to CPU $cpu1"
	: >"$HIPDOUBLE_REPORT"
fi

# gpu=host has one device: auto is harmless
run_ok host-auto --name=a --filename="$f" --size=8m --gpu=host --transfer=bounce \
	--direct=1 --rw=randread --bs=16k --numjobs=2 --thread --gpu_dev_ids=auto
grep -q "^dmabuf_uring: a: gpu_dev_ids=auto: threads 0,1 -> host 0: gpu=host has one device$" \
	"$TMPD/host-auto.out" && pass "gpu=host: auto says it has one device" ||
	{ fail "gpu=host: no auto line"; grep dmabuf_uring "$TMPD/host-auto.out"; }

run_refused auto-misspelt "gpu_dev_ids=automatic: expected device ordinals.*or auto" \
	--name=a --filename="$f" --size=8m --gpu=host --transfer=bounce --direct=1 \
	--rw=read --gpu_dev_ids=automatic

finish
