#!/usr/bin/env bash
# dmabuf-doctor in the VM rig's guest, against the emulated NVMe controller.
#   stock kernel:  not ready, and the kernel is the only reason; every device
#                  check of /dev/nvme0n1 ok; udmabuf exports (gpu=host)
#   series kernel: ready: a udmabuf dma-buf really registered for /dev/nvme0n1
# Both: the partition /dev/nvme0n3p1 is refused as a partition; with the HIP
# runtime double (built by make check) the doctor goes through a GPU
# provider's probe/alloc/export as it will with CUDA on a GPU machine.
# shellcheck source=../../lib.sh
. "$SRCDIR/tests/lib.sh"

DOCTOR=$BUILDDIR/dmabuf-doctor
NS=/dev/nvme0n1
PART=/dev/nvme0n3p1
[ -x "$DOCTOR" ] || skip "dmabuf-doctor not built at $DOCTOR"
[ -b $NS ] || skip "no $NS in this guest"
mode=${DBR_VM_MODE:-stock}

# doctor NAME ARGS...: output in $TMPD/NAME.out, exit code in $TMPD/NAME.rc
doctor() {
	local name=$1 rc=0
	shift
	"$DOCTOR" "$@" >"$TMPD/$name.out" 2>&1 || rc=$?
	echo "$rc" >"$TMPD/$name.rc"
}

# check_line NAME ID STATUS REGEX (STATUS as printed: ok warning FAIL skip)
check_line() {
	local name=$1 id=$2 st=$3 re=$4 line
	line=$(grep -E "^[a-zA-Z]+ +$id " "$TMPD/$name.out")
	if [[ $line =~ ^$st\ +$id\ +(.*)$ ]] && grep -Eq -- "$re" <<<"${BASH_REMATCH[1]}"; then
		pass "$name: $id $st: $(cut -c1-110 <<<"${BASH_REMATCH[1]}")"
	else
		fail "$name: want '$st $id /$re/', got: ${line:-nothing}"
	fi
}

# expect NAME EXIT VERDICT-REGEX
expect() {
	local name=$1 want=$2 re=$3 v
	v=$(tail -n1 "$TMPD/$name.out")
	if [ "$(cat "$TMPD/$name.rc")" = "$want" ] && grep -Eq -- "$re" <<<"$v"; then
		pass "$name: exit $want: $(cut -c1-150 <<<"$v")"
	else
		fail "$name: want exit $want and /$re/ (exit $(cat "$TMPD/$name.rc"))"
		sed 's/^/    /' "$TMPD/$name.out"
	fi
}

# ---- the namespace, gpu=host ----------------------------------------------------
doctor ns --gpu host $NS
for id in device.blockdev device.nvme device.odirect device.block_size device.max_sectors; do
	check_line ns $id ok ''
done
check_line ns device.nvme ok 'NVMe namespace of PCIe controller [0-9a-f]{4}:'
check_line ns device.multipath ok 'not a multipath head node'
if [ -c /dev/udmabuf ]; then
	check_line ns gpu.export ok 'exported a 2 MiB dma-buf .*exporter udmabuf'
	check_line ns limits.udmabuf ok 'udmabuf.size_limit_mb = [0-9]+'
fi
if [ "$mode" = stock ]; then
	check_line ns kernel.series FAIL 'lacks the io_uring dma-buf series'
	if [ -c /dev/udmabuf ]; then
		# the kernel is the one and only reason
		expect ns 1 '^p2p: not ready: this kernel lacks the io_uring dma-buf series[^;]*$'
	else
		expect ns 1 '^p2p: not ready: this kernel lacks the io_uring dma-buf series'
	fi
else
	check_line ns kernel.series ok "registered a 2 MiB gpu=host dma-buf for $NS"
	expect ns 0 '^p2p: ready$'
fi

doctor ns-json --json --gpu host $NS
if python3 - "$TMPD/ns-json.out" "$mode" <<-'EOF'
	import json, sys
	doc = json.load(open(sys.argv[1]))
	d = doc["facts"]["device"]
	assert d["nvme_namespace"] and d["transport"] == "pcie" and d["pci"], d
	assert d["logical_block_size"] in (512, 4096) and d["max_sectors_kb"] > 0, d
	k = doc["facts"]["kernel"]
	if sys.argv[2] == "p2p":
	    assert doc["ready"] and k["series_probe"] == "ok" and k["registration"] == "ok", k
	else:
	    assert not doc["ready"] and k["series_probe"] == "EINVAL", k
EOF
then
	pass "ns-json: facts of $NS as expected for a $mode kernel"
else
	fail "ns-json"
	sed 's/^/    /' "$TMPD/ns-json.out" | head -60
fi

# ---- a partition ------------------------------------------------------------------
if [ -b $PART ]; then
	doctor part --gpu host $PART
	expect part 1 "$PART \\(nvme0n3p1\\) is a partition, not an NVMe namespace"
fi

# ---- a GPU provider: the HIP runtime double ------------------------------------------
libs=$BUILDDIR/tests/gpu/.libs
if [ -f "$libs/libamdhip64.so" ] && [ -c /dev/udmabuf ]; then
	LD_LIBRARY_PATH=$libs doctor hip --gpu hip $NS
	check_line hip gpu.runtime ok 'gpu=hip: runtime found, 1 device'
	check_line hip gpu.export ok 'exported a 2 MiB dma-buf from gpu=hip'
	if [ "$mode" = p2p ]; then
		check_line hip kernel.series ok "registered a 2 MiB gpu=hip dma-buf for $NS"
		expect hip 0 '^p2p: ready$'
	else
		expect hip 1 '^p2p: not ready: this kernel lacks the io_uring dma-buf series[^;]*$'
	fi
fi

finish
