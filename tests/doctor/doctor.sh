#!/usr/bin/env bash
# dmabuf-doctor on this machine: exit codes, the reasons it gives for "not
# ready" (kernel without the series, missing path, regular file, loop device,
# partition, GPU runtime missing, device index out of range), the JSON form
# (valid, stable keys, same verdict as the text form), and bad usage.
#
# The expected kernel reason comes from an independent witness: the engine's
# own transfer=auto line under fio, not from the doctor itself.
# shellcheck source=../lib.sh
. "$SRCDIR/tests/lib.sh"

DOCTOR=$BUILDDIR/dmabuf-doctor
[ -x "$DOCTOR" ] || die "dmabuf-doctor not built at $DOCTOR (run make)"
command -v python3 >/dev/null || skip "python3 is needed to check the JSON output"

# doctor NAME ARGS...: run it, keep stdout/stderr/exit code under $TMPD/NAME.*
# In sanitizer builds LSan stays on for the doctor (our own binary, unlike
# fio): a leak report on stderr fails the case.
doctor() {
	local name=$1 rc=0
	shift
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=1 \
		"$DOCTOR" "$@" >"$TMPD/$name.out" 2>"$TMPD/$name.err" || rc=$?
	echo "$rc" >"$TMPD/$name.rc"
}
rc_of() { cat "$TMPD/$1.rc"; }
verdict_of() { tail -n1 "$TMPD/$1.out"; }
show() { sed 's/^/    /' "$TMPD/$1.out" "$TMPD/$1.err" | tail -"${2:-30}"; }

# expect_not_ready NAME REGEX...: exit 1, last line "p2p: not ready: ..."
# matching every REGEX, and nothing on stderr (LSan/UBSan would write there)
expect_not_ready() {
	local name=$1 re v
	shift
	v=$(verdict_of "$name")
	if [ "$(rc_of "$name")" != 1 ] || [[ $v != "p2p: not ready: "* ]] ||
	   [ -s "$TMPD/$name.err" ]; then
		fail "$name: want exit 1, a 'p2p: not ready:' verdict, empty stderr (exit $(rc_of "$name"))"
		show "$name"
		return
	fi
	for re in "$@"; do
		if ! grep -Eq -- "$re" <<<"$v"; then
			fail "$name: verdict lacks /$re/: $v"
			return
		fi
	done
	pass "$name: $(cut -c1-160 <<<"$v")"
}

# check_line NAME ID STATUS REGEX: the text line of check ID (STATUS as the
# text form prints it: ok, warning, FAIL, skip)
check_line() {
	local name=$1 id=$2 st=$3 re=$4 line
	line=$(grep -E "^[a-zA-Z]+ +$id " "$TMPD/$name.out")
	if [[ $line =~ ^$st\ +$id\ +(.*)$ ]] && grep -Eq -- "$re" <<<"${BASH_REMATCH[1]}"; then
		pass "$name: $id $st"
	else
		fail "$name: want '$st $id /$re/', got: ${line:-nothing}"
	fi
}

# expect_usage NAME ARGS...: exit 2 with the usage line on stderr
expect_usage() {
	local name=$1
	shift
	doctor "$name" "$@"
	if [ "$(rc_of "$name")" = 2 ] && grep -q '^usage: dmabuf-doctor \[--json\]' "$TMPD/$name.err" &&
	   [ ! -s "$TMPD/$name.out" ]; then
		pass "usage: $name -> exit 2: $(head -n1 "$TMPD/$name.err")"
	else
		fail "usage: $name: want exit 2 and the usage line on stderr (exit $(rc_of "$name"))"
		show "$name"
	fi
}

# ---- the witness: what the engine says about this kernel -------------------
witness=$TMPD/witness.out
dbr_fio --name=w --filename="$(scratch_file w)" --size=1M --rw=read --bs=4k \
	--gpu=host --transfer=auto --direct=1 >"$witness" 2>&1 || true
if grep -q 'lacks the io_uring dma-buf series' "$witness"; then
	kernel_re='this kernel lacks the io_uring dma-buf series'
	log "the engine says this kernel lacks the series: the doctor must say so"
else
	kernel_re=''
	log "the engine did not refuse for the kernel: not asserting the kernel reason"
fi

# ---- bad usage -----------------------------------------------------------------
expect_usage no-args
expect_usage bad-gpu --gpu nvidia /dev/null
expect_usage gpu-missing-value /dev/null --gpu
expect_usage bad-dev-word --gpu-dev one /dev/null
expect_usage bad-dev-negative --gpu-dev -1 /dev/null
expect_usage bad-dev-trailing --gpu-dev 1x /dev/null
expect_usage unknown-long --frobnicate /dev/null
expect_usage unknown-short -x /dev/null
expect_usage two-devices /dev/null /dev/zero
expect_usage bad-p2p-iommu --p2p-iommu maybe /dev/null
expect_usage empty-device --gpu host ''
grep -q "^dmabuf-doctor: an empty device path" "$TMPD/empty-device.err" &&
	pass "usage: an empty device path is named as such" ||
	fail "usage: empty-device: $(head -n1 "$TMPD/empty-device.err")"
doctor help --help
if [ "$(rc_of help)" = 0 ] && grep -q '^usage: dmabuf-doctor' "$TMPD/help.out"; then
	pass "usage: --help -> exit 0, usage on stdout"
else
	fail "usage: --help"
	show help
fi

# ---- not ready, and why ----------------------------------------------------------
doctor missing --gpu host /dev/dbr-doctor-no-such-device
expect_not_ready missing "$kernel_re" '/dev/dbr-doctor-no-such-device: No such file or directory'
check_line missing device.nvme skip 'not a block device'
check_line missing kernel.io_uring ok 'io_uring works'
check_line missing kernel.release ok "Linux $(uname -r) \\(kernel.series probes it"
grep -q "released kernel" "$TMPD/missing.out" &&
	fail "missing: a dated claim about released kernels"

img=$TMPD/file.img
truncate -s 8M "$img"
doctor file --gpu host "$img"
expect_not_ready file "$kernel_re" "$img is a regular file, not a block device"
doctor dir --gpu host "$TMPD"
expect_not_ready dir "is a directory, not a block device"

if [ "$(id -u)" -eq 0 ] && loop=$(loop_dev 64M); then
	name=$(basename "$loop")
	doctor loop --gpu host "$loop"
	expect_not_ready loop "$kernel_re" "$loop \\($name\\) is not an NVMe namespace"
	check_line loop device.blockdev ok "is a block device \\($name\\)"
	check_line loop device.odirect ok 'O_RDWR\|O_DIRECT'
	check_line loop device.block_size ok "logical block size $(blockdev --getss "$loop") bytes"
	check_line loop device.max_sectors ok "max_sectors_kb $(cat /sys/block/"$name"/queue/max_sectors_kb),"
	check_line loop device.multipath skip 'not an NVMe namespace'
	check_line loop gpu.runtime ok 'gpu=host'
	if [ -c /dev/udmabuf ]; then
		check_line loop gpu.export ok 'exported a 2 MiB dma-buf'
	else
		check_line loop gpu.export FAIL '/dev/udmabuf'
		expect_not_ready loop 'gpu=host cannot export a dma-buf'
	fi
	doctor loop-json --json --gpu host "$loop"
	doctor loop-dev --gpu host --gpu-dev 3 "$loop"
	expect_not_ready loop-dev '--gpu-dev 3: gpu=host has 1 device \(0\.\.0\)'

	# a partition: an MBR with one partition, seen through losetup -P
	pimg=$TMPD/part.img
	truncate -s 16M "$pimg"
	python3 - "$pimg" <<-'EOF'
		import struct, sys
		mbr = bytearray(512)
		mbr[446:462] = struct.pack('<B3sB3sII', 0, b'\0\0\0', 0x83, b'\0\0\0', 2048, 16384)
		mbr[510:512] = b'\x55\xaa'
		with open(sys.argv[1], 'r+b') as f:
		    f.write(mbr)
	EOF
	if pdev=$(losetup --find --show -P "$pimg" 2>/dev/null); then
		at_exit "losetup -d $pdev"
		for _ in 1 2 3 4 5 6 7 8 9 10; do [ -b "${pdev}p1" ] && break; sleep 0.2; done
		if [ -b "${pdev}p1" ]; then
			doctor part --gpu host "${pdev}p1"
			expect_not_ready part "${pdev}p1 \\($(basename "$pdev")p1\\) is a partition, not an NVMe namespace"
			check_line part device.max_sectors ok "max_sectors_kb $(cat /sys/block/"$(basename "$pdev")"/queue/max_sectors_kb),"
		else
			log "no ${pdev}p1 appeared (this kernel reads no MBR): partition case not run"
		fi
	fi
else
	log "not root or no loop device: loop and partition cases not run"
fi

# gpu=cuda on a machine without the NVIDIA driver: the runtime check fails
doctor cuda --gpu cuda "$img"
if command -v nvidia-smi >/dev/null; then
	log "nvidia-smi present: not asserting the missing-runtime case"
else
	expect_not_ready cuda 'gpu=cuda: '
	check_line cuda gpu.export skip 'no device'
	check_line cuda topology.path skip ''
fi

# a GPU provider's probe/alloc/export, as with CUDA on a GPU machine: the HIP
# runtime double (host memory; make check builds it), two devices
hiplibs=$BUILDDIR/tests/gpu/.libs
if [ -f "$hiplibs/libamdhip64.so" ]; then
	LD_LIBRARY_PATH=$hiplibs HIPDOUBLE_DEVICES=2 HIPDOUBLE_REPORT=$TMPD/hip.report \
		doctor hip --gpu hip --gpu-dev 1 "$img"
	check_line hip gpu.runtime ok 'gpu=hip: runtime found, 2 devices'
	check_line hip gpu.device ok 'device 1 of 2'
	if [ -c /dev/udmabuf ]; then
		check_line hip gpu.export ok 'exported a 2 MiB dma-buf from gpu=hip device 1'
	else
		check_line hip gpu.export FAIL 'gpu=hip cannot export a dma-buf: .*hipErrorNotSupported'
	fi
	check_line hip gpu.pci warning 'PCI address unknown'
	check_line hip kernel.p2pdma warning 'CONFIG_PCI_P2PDMA|kernel config'
	if hip_report "$TMPD/hip.report" |
	   grep -q 'live_allocs=0 live_streams=0 live_events=0 live_host_regs=0.* dev1=1'; then
		pass "hip: one allocation on device 1, nothing left behind ($(hip_report "$TMPD/hip.report"))"
	else
		fail "hip: the double's report: $(hip_report "$TMPD/hip.report")"
	fi
	LD_LIBRARY_PATH=$hiplibs HIPDOUBLE_DEVICES=0 doctor hip0 --gpu hip "$img"
	expect_not_ready hip0 'gpu=hip: '
	check_line hip0 gpu.export skip 'no device'
	LD_LIBRARY_PATH=$hiplibs doctor hip-auto "$img"
	if head -n1 "$TMPD/hip-auto.out" | grep -q 'gpu=auto (provider hip, device 0)'; then
		pass "hip-auto: --gpu auto picks the HIP double's device"
	else
		fail "hip-auto: $(head -n1 "$TMPD/hip-auto.out")"
	fi
else
	log "no HIP runtime double at $hiplibs (make check builds it): HIP cases not run"
fi

# ---- JSON ---------------------------------------------------------------------------
# a path that is not UTF-8 (byte 0xff): the JSON is still UTF-8, the byte
# as U+00FF wherever the path appears (strict decode)
latin1=$TMPD/img-$'\xff'
truncate -s 8M "$latin1"
doctor latin1-json --json --gpu host "$latin1"
if out=$(python3 - "$TMPD/latin1-json.out" "$TMPD/img-" <<-'EOF' 2>&1
	import json, sys
	doc = json.loads(open(sys.argv[1], "rb").read().decode("utf-8", errors="strict"))
	path = doc["facts"]["device"]["path"]
	assert path == sys.argv[2] + "\u00ff", ascii(path)
	assert any("\u00ff" in c["reason"] for c in doc["checks"]), "no reason names the path"
	print(ascii(path))
	EOF
); then
	pass "json: a 0xff byte in the path as U+00FF: $out"
else
	fail "json: latin1-json: $(tail -n1 <<<"$out")"
fi
doctor file-json --json --gpu host "$img"
json_cases=(file-json)
[ -f "$TMPD/loop-json.out" ] && json_cases+=(loop-json)
for j in "${json_cases[@]}"; do
	text=${j%-json}
	if [ "$(rc_of "$j")" = 1 ] && python3 -m json.tool "$TMPD/$j.out" >/dev/null; then
		pass "json: $j is valid JSON (python3 -m json.tool), exit 1"
	else
		fail "json: $j: want valid JSON and exit 1 (exit $(rc_of "$j"))"
		show "$j"
		continue
	fi
	if out=$(python3 - "$TMPD/$j.out" "$(verdict_of "$text")" "$kernel_re" <<-'EOF' 2>&1
		import json, sys
		doc = json.load(open(sys.argv[1]))
		text_verdict, kernel_re = sys.argv[2], sys.argv[3]
		ids = ["kernel.release", "kernel.io_uring", "kernel.series", "kernel.p2pdma",
		       "device.blockdev", "device.nvme", "device.multipath", "device.odirect",
		       "device.block_size", "device.max_sectors", "iommu.group", "iommu.cmdline",
		       "gpu.runtime", "gpu.device", "gpu.export", "gpu.pci", "topology.path",
		       "limits.regbuf", "limits.maps", "limits.udmabuf"]
		assert doc["schema"] == 1, doc["schema"]
		assert doc["tool"] == "dmabuf-doctor"
		assert doc["ready"] is False
		assert [c["id"] for c in doc["checks"]] == ids, [c["id"] for c in doc["checks"]]
		for c in doc["checks"]:
		    assert set(c) == {"id", "status", "reason", "fix"}, c
		    assert c["status"] in ("ok", "warning", "fail", "skip"), c
		    assert c["reason"] and "\n" not in c["reason"], c
		fails = [c["reason"] for c in doc["checks"] if c["status"] == "fail"]
		assert doc["reasons"] == fails and fails, (doc["reasons"], fails)
		assert doc["verdict"] == "p2p: not ready: " + "; ".join(fails)
		assert doc["verdict"] == text_verdict, (doc["verdict"], text_verdict)
		f = doc["facts"]
		assert set(f) == {"kernel", "device", "iommu", "gpu", "topology", "limits"}, set(f)
		assert f["kernel"]["ring"] == "ok"
		if kernel_re:
		    assert f["kernel"]["series_probe"] == "EINVAL", f["kernel"]
		    assert f["kernel"]["registration"] is None
		    st = {c["id"]: c for c in doc["checks"]}["kernel.series"]
		    assert st["status"] == "fail" and st["fix"], st
		assert f["gpu"]["requested"] == "host" and f["gpu"]["provider"] == "host"
		assert f["gpu"]["devices"] == 1 and f["gpu"]["pci"] is None
		assert f["topology"]["relation"] == "not-applicable"
		assert f["limits"]["regbuf_max_bytes"] == 1 << 30
		assert f["limits"]["maps_per_device"] == 256
		d = f["device"]
		if d["kind"] == "block device":
		    assert d["nvme_namespace"] is False and d["odirect_open"] == "ok", d
		    assert d["logical_block_size"] >= 512 and d["max_sectors_kb"] > 0, d
		else:
		    assert d["kind"] == "regular file" and d["odirect_open"] is None, d
		    assert d["logical_block_size"] is None, d
		print("checks:", len(ids), "fails:", len(fails))
	EOF
	); then
		pass "json: $j: keys, statuses, reasons and verdict as the text form ($out)"
	else
		fail "json: $j"
		sed 's/^/    /' <<<"$out"
	fi
done

finish
