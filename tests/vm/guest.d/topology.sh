#!/usr/bin/env bash
# gpu_dev_ids=auto against the guest's real sysfs. The rig's PCIe topology
# (tests/vm/rig, docs/vm.md):
#   pcie.0 (no NUMA node)   root port 00:04.0 -> 01:00.0 nvme0 (controller A)
#                                                01:00.1 "GPU A"
#   pxb-pcie pci0000:40,    root port 40:00.0 -> 41:00.0 nvme1 (controller B)
#     NUMA node 1           root port 40:01.0 -> 42:00.0 "GPU B"
#   pxb-pcie pci0000:80,    root port 80:00.0 -> 81:00.0 "GPU C"
#     NUMA node 1
# The "GPUs" are emulated display functions; the HIP runtime double says
# they are its devices (HIPDOUBLE_PCI). One fio run, two jobs (one thread
# each): a on nvme0n1, b on nvme1n1. Each must get the GPU nearest its
# controller, with the distance class that path really has, whichever
# device number that GPU has; dmabuf-doctor must see the same paths.
# shellcheck source=../../lib.sh
. "$SRCDIR/tests/lib.sh"

[ "${DBR_VM_TOPO:-}" = yes ] ||
	skip "the rig booted without its PCIe topology (${DBR_VM_TOPO:-DBR_VM_TOPO unset})"
use_hip_double

GA=0000:01:00.1
GB=0000:42:00.0
GC=0000:81:00.0
CA=0000:01:00.0
CB=0000:41:00.0
NA=/dev/nvme0n1
NB=/dev/nvme1n1

# ---- the topology is there, as the rig builds it --------------------------------
# where PCI function $1 sits, as the path below /sys/devices
at() { readlink -f "/sys/bus/pci/devices/$1" | sed 's|^/sys/devices/||'; }
# want_at FUNCTION PATH NUMA-NODE
want_at() {
	local got node
	got=$(at "$1")
	# without CONFIG_NUMA sysfs has no numa_node file: no node, as the
	# engine reads it (topology.c: -1)
	node=$(cat "/sys/bus/pci/devices/$1/numa_node" 2>/dev/null || echo -1)
	if [ "$got" = "$2" ] && [ "$node" = "$3" ]; then
		pass "sysfs: $1 at $got, NUMA node $node"
	else
		fail "sysfs: $1: want $2 on node $3, got '${got:-nothing}' on node '${node:-?}'"
	fi
}
# node 1 as the rig asks; -1 everywhere on a kernel without CONFIG_NUMA
node1=-1
if [ -d /sys/devices/system/node/node1 ]; then
	node1=1
else
	log "no NUMA node 1 in this kernel (CONFIG_NUMA?): every PCI function on no node"
fi
want_at $CA pci0000:00/0000:00:04.0/$CA -1
want_at $GA pci0000:00/0000:00:04.0/$GA -1
want_at $CB pci0000:40/0000:40:00.0/$CB $node1
want_at $GB pci0000:40/0000:40:01.0/$GB $node1
want_at $GC pci0000:80/0000:80:00.0/$GC $node1
for f in $GA $GB $GC; do
	[[ $(cat /sys/bus/pci/devices/$f/class) == 0x03* ]] ||
		fail "sysfs: $f is not a display function"
done
[[ $(readlink -f /sys/class/block/nvme0n1) == */$CA/nvme/* ]] &&
	[[ $(readlink -f /sys/class/block/nvme1n1) == */$CB/nvme/* ]] &&
	pass "sysfs: nvme0n1 on controller $CA, nvme1n1 on $CB" ||
	fail "sysfs: nvme0n1/nvme1n1 are not on $CA/$CB"
[ "$FAILED" -eq 0 ] || { finish; exit; }

# ---- gpu_dev_ids=auto -----------------------------------------------------------
job=(--thread --gpu=hip --gpu_dev_ids=auto --transfer=bounce --direct=1
	--rw=randread --bs=64k --size=2M --iodepth=2
	--name=a --filename=$NA --name=b --filename=$NB)

# place NAME PCI-LIST DEV-A CLASS-A DEV-B CLASS-B: one run with the double's
# devices at PCI-LIST; job a must be on hip DEV-A, CLASS-A from nvme0n1's
# controller, b on DEV-B, CLASS-B from nvme1n1's
place() {
	local name=$1 pci=$2 out=$TMPD/$1.out j dev class ctrl disk alloc
	local -A want=([a]="$3 $4 $CA nvme0n1" [b]="$5 $6 $CB nvme1n1")
	: >"$HIPDOUBLE_REPORT"
	HIPDOUBLE_DEVICES=2 HIPDOUBLE_PCI=$pci run_ok "$name" "${job[@]}"
	for j in a b; do
		read -r dev class ctrl disk <<<"${want[$j]}"
		# two GPUs equally near: the line says they tie
		local tie=
		[ "$class" = other ] && tie="; hip 0,1 tie, spread over the run"
		if grep -qx "dmabuf_uring: $j: gpu_dev_ids=auto: thread 0 -> hip $dev: $class to $disk's controller $ctrl$tie" "$out" &&
		   grep -q "^dmabuf_uring: $j: gpu=hip dev=$dev transfer=bounce " "$out"; then
			pass "$name: job $j on $disk -> hip $dev ($(cut -d, -f$((dev + 1)) <<<"$pci")): $class"
		else
			fail "$name: job $j on $disk: want hip $dev, $class to $ctrl"
			grep '^dmabuf_uring' "$out" | sed 's/^/    /'
		fi
	done
	# the memory really went there (the double counts allocations per device)
	alloc=$(hip_report "$HIPDOUBLE_REPORT" | grep -o ' dev0=[0-9]* dev1=[0-9]*')
	local n0=0 n1=0
	[ "$3" = 0 ] && n0=$((n0 + 1)) || n1=$((n1 + 1))
	[ "$5" = 0 ] && n0=$((n0 + 1)) || n1=$((n1 + 1))
	[ "$alloc" = " dev0=$n0 dev1=$n1" ] && pass "$name: allocations$alloc" ||
		fail "$name: allocations '$alloc', want ' dev0=$n0 dev1=$n1'"
}

# GPU A shares nvme0's root port, GPU B nvme1's host bridge
place near "$GA,$GB" 0 same-root-port 1 same-host-bridge
# the same GPUs, numbered the other way round: the choices follow the GPUs
place swapped "$GB,$GA" 1 same-root-port 0 same-host-bridge
# GPU C: another host bridge on nvme1's NUMA node; without NUMA nothing
# tells it from GPU A for nvme1, a tie, which goes to the GPU job a left
# free (ties spread over the run)
if [ $node1 = 1 ]; then
	place numa "$GA,$GC" 0 same-root-port 1 same-numa-node
else
	place no-numa "$GA,$GC" 0 same-root-port 1 other
fi
# nothing near nvme0 (pcie.0 has no node, the GPUs are on node 1): a tie,
# and job a is the run's first, so it takes the first; nvme1 still gets GPU B
place far "$GC,$GB" 0 other 1 same-host-bridge

# ---- dmabuf-doctor sees the same paths ------------------------------------------
DOCTOR=$BUILDDIR/dmabuf-doctor
if [ ! -x "$DOCTOR" ]; then
	log "dmabuf-doctor not built: its topology checks not run"
elif [ ! -c /dev/udmabuf ]; then
	log "no /dev/udmabuf: the doctor's gpu=hip checks not run"
else
	# doctor NAME PCI-LIST DEV NVME STATUS REGEX: its topology.path line
	doctor() {
		local name=$1 pci=$2 dev=$3 ns=$4 st=$5 re=$6 line
		HIPDOUBLE_DEVICES=2 HIPDOUBLE_PCI=$pci "$DOCTOR" --gpu hip --gpu-dev "$dev" "$ns" \
			>"$TMPD/$name.out" 2>&1
		line=$(grep -E '^[a-zA-Z]+ +topology\.path ' "$TMPD/$name.out")
		if [[ $line =~ ^$st\ +topology\.path\ +(.*)$ ]] && grep -Eq -- "$re" <<<"${BASH_REMATCH[1]}"; then
			pass "doctor $name: $st $(cut -c1-120 <<<"${BASH_REMATCH[1]}")"
		else
			fail "doctor $name: want '$st topology.path /$re/', got: ${line:-nothing}"
			sed 's/^/    /' "$TMPD/$name.out" | tail -20
		fi
	}
	# the doctor says the engine's classes in the engine's words
	doctor near-a "$GA,$GB" 0 $NA ok "GPU $GA and NVMe $CA meet at 0000:00:04.0 \\(same-root-port\\)"
	doctor near-b "$GA,$GB" 1 $NB warning "GPU $GB and NVMe $CB meet at pci0000:40 \\(same-host-bridge\\)"
	doctor numa-b "$GA,$GC" 1 $NB warning "GPU $GC and NVMe $CB meet above the host bridges \\(same-numa-node\\)"
	grep -q "^ok  *gpu.pci  *PCI $GC, NUMA node $node1$" "$TMPD/numa-b.out" &&
		pass "doctor numa-b: gpu.pci $GC on NUMA node $node1" ||
		fail "doctor numa-b: gpu.pci: $(grep 'gpu.pci' "$TMPD/numa-b.out")"
fi

finish
