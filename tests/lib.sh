# Shared helpers for the shell tests. Sourced, not run.
#
# Environment (set by make check, or by hand):
#   FIO      the fio binary built from the tree the engine was compiled against
#   ENGINE   path to libdmabuf_uring.so
#   SRCDIR   source tree, BUILDDIR build tree
#   KEEP_TMPD=1  leave the test's scratch directory behind (to look at a
#            failure: fio's output, traces, logs)
# Exit codes follow automake: 0 pass, 77 skip, 99 hard error, else fail.

set -u

: "${SRCDIR:=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
: "${BUILDDIR:=$SRCDIR}"
# make check passes the fio configure found; by hand, a configured BUILDDIR's
: "${FIO:=$(sed -n 's/^FIO_BIN = //p' "$BUILDDIR/Makefile" 2>/dev/null)}"
: "${FIO:=$SRCDIR/build-deps/fio-3.33/fio}"
: "${ENGINE:=$BUILDDIR/.libs/libdmabuf_uring.so}"


TEST_NAME=$(basename "$0" .sh)
TMPD=$(mktemp -d "${TMPDIR:-/tmp}/dbr-$TEST_NAME.XXXXXX")
TMPD=$(cd "$TMPD" && pwd)
_cleanups=()
_cleanup() {
	local i dev
	for ((i = ${#_cleanups[@]} - 1; i >= 0; i--)); do eval "${_cleanups[i]}" || true; done
	# loop devices made in $(...) subshells, where at_exit cannot reach us
	if [ -f "$TMPD/.loops" ]; then
		while read -r dev; do losetup -d "$dev" 2>/dev/null || true; done <"$TMPD/.loops"
	fi
	[ -n "${KEEP_TMPD:-}" ] || { cd / && rm -rf "$TMPD"; }
}
trap _cleanup EXIT
at_exit() { _cleanups+=("$*"); }

PASSED=0
FAILED=0
log() { echo "[$TEST_NAME] $*"; }
skip() { echo "SKIP: $TEST_NAME: $*"; exit 77; }
die() { echo "ERROR: $TEST_NAME: $*"; exit 99; }
pass() { PASSED=$((PASSED + 1)); echo "ok - $*"; }
fail() { FAILED=$((FAILED + 1)); echo "not ok - $*"; }
# finish: exit status from the checks made
finish() {
	echo "$TEST_NAME: $PASSED passed, $FAILED failed"
	[ "$FAILED" -eq 0 ]
}

[ -x "$FIO" ] || die "fio not found at $FIO (run scripts/get-fio, or set FIO)"
[ -f "$ENGINE" ] || die "engine not built at $ENGINE (run make)"
FIO=$(realpath "$FIO") ENGINE=$(realpath "$ENGINE")
SRCDIR=$(realpath "$SRCDIR") BUILDDIR=$(realpath "$BUILDDIR")

# Tests run in their scratch directory: what fio leaves in its working
# directory (*-verify.state of every verify job, a client's copies of
# them) goes with it, never into the build tree.
cd "$TMPD" || die "cannot enter $TMPD"

# fio itself. In the sanitizer pass fio is not instrumented but loads the
# instrumented engine, so the ASan runtime is preloaded into fio (and only
# into fio: bash, python and the rest are not ours to check).
run_fio() {
	if [ -n "${DBR_ASAN_PRELOAD:-}" ]; then
		LD_PRELOAD="$DBR_ASAN_PRELOAD${LD_PRELOAD:+:$LD_PRELOAD}" "$FIO" "$@"
	else
		"$FIO" "$@"
	fi
}

# timed_fio SIGNAL SECONDS FIO-ARGS...: run_fio under timeout, which cannot
# run a shell function: the same preload, by env
timed_fio() {
	local sig=$1 secs=$2
	local pre=${DBR_ASAN_PRELOAD:+$DBR_ASAN_PRELOAD${LD_PRELOAD:+:$LD_PRELOAD}}
	shift 2
	timeout -s "$sig" "$secs" env ${pre:+LD_PRELOAD=$pre} "$FIO" "$@"
}

# fio with this engine; extra arguments are fio options
dbr_fio() {
	run_fio --ioengine="external:$ENGINE" "$@"
}

# control_fails NAME JOB-ARGS...: does fio's own io_uring engine (fixed
# buffers, registered files) fail this job with this fio? Its error (fio's
# "error=..." words) in $TMPD/NAME.ctl-error. Where it does, a check of this
# engine on the job proves nothing either way (fio 3.41 issues some
# sync_file_range ranges the kernel refuses, now and then): not_judged.
control_fails() {
	local name=$1 out=$TMPD/$1.ctl
	shift
	if run_fio --ioengine=io_uring --fixedbufs=1 --registerfiles=1 "$@" \
		>"$out" 2>&1 && ! grep -q "err= *[1-9]" "$out"; then
		return 1
	fi
	# a control refused for its options is this test's own mistake
	grep -o -m1 'error=[A-Za-z ]*' "$out" >"$out-error" ||
		die "$name: fio's io_uring engine did not run the control: $(grep -m1 -iE 'error|bad option|invalid' "$out")"
	return 0
}

# not_judged NAME: say that fio's own engine fails the job control_fails ran,
# so this fio cannot judge this engine on it (counted neither way)
not_judged() {
	log "SKIP $1: fio $("$FIO" --version)'s own io_uring engine fails this job too ($(cat "$TMPD/$1.ctl-error")): not judged on this fio"
}

# run_ok NAME FIO-ARGS...: fio must exit 0 with no error in its output
run_ok() {
	local name=$1 out=$TMPD/$1.out
	shift
	if dbr_fio "$@" >"$out" 2>&1 && ! grep -q "err= *[1-9]" "$out"; then
		pass "$name"
	else
		fail "$name"
		show_failure "$out"
	fi
}

# what explains a failed fio run: its error and verify lines (which fio
# prints before its statistics), then the end of the output
show_failure() {
	grep -E "^(dmabuf_uring|fio|verify|[a-z0-9_-]+: \(groupid)|err=|error" "$1" | head -15 | sed 's/^/    ! /'
	tail -15 "$1" | sed 's/^/    /'
}

# run_refused NAME REGEX FIO-ARGS...: fio must exit non-zero and print a
# dmabuf_uring line matching REGEX (one line: cause and fix)
run_refused() {
	local name=$1 re=$2 out=$TMPD/$1.out rc=0
	shift 2
	dbr_fio "$@" >"$out" 2>&1 || rc=$?
	if [ "$rc" -ne 0 ] && grep -E "^dmabuf_uring: .*$re" "$out" >/dev/null; then
		pass "$name (exit $rc): $(grep -m1 '^dmabuf_uring: ' "$out" | cut -c1-150)"
	else
		fail "$name: want a non-zero exit and a dmabuf_uring line matching /$re/ (exit $rc)"
		sed 's/^/    /' "$out" | tail -20
	fi
}

# use_hip_double: run gpu=hip against the HIP runtime double (tests/gpu/):
# its libraries first in LD_LIBRARY_PATH ($libs), its report in
# $HIPDOUBLE_REPORT; SKIP on a build without the HIP provider
use_hip_double() {
	libs=$BUILDDIR/tests/gpu/.libs
	grep -q '^#define DBR_HAVE_HIP 1' "$BUILDDIR/config.h" || skip "built --without-hip"
	[ -f "$libs/libamdhip64.so" ] || die "the HIP double is not built ($libs/libamdhip64.so)"
	export LD_LIBRARY_PATH=$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	export HIPDOUBLE_REPORT=$TMPD/report
}

# hip_report FILE: the HIP double's last report line of each process (it
# appends one at every release and at exit: fio's job processes leave
# through _exit, past any destructor)
hip_report() {
	awk '{ last[$1] = $0 } END { for (p in last) print last[p] }' "$1" 2>/dev/null
}

# ---- tracefs: what reached the kernel, in order ------------------------------
tracefs=/sys/kernel/tracing
trace_ok() {
	[ "$(id -u)" -eq 0 ] || return 1
	[ -d "$tracefs/instances" ] || mount -t tracefs nodev "$tracefs" 2>/dev/null
	[ -d "$tracefs/events/io_uring/io_uring_submit_req" ]
}

# submit_trace SQES OUT CMD...: run CMD (output to OUT) and write the SQEs it
# submitted to SQES in order, one "OPCODE FLAGS" line each (FLAGS: the
# request's flags in hex; IOSQE_* are its low bits). A tracefs instance of
# our own, our pids only; of the rings seen, the one with the most SQEs.
submit_trace() {
	local sqes=$1 out=$2 inst=$tracefs/instances/dbr-trace-$$ rc=0
	shift 2
	mkdir "$inst" || return 1
	echo 1 >"$inst/options/event-fork"
	(
		# the filter first: an event enabled with no pid filter records
		# every process on the machine
		echo "$BASHPID" >"$inst/set_event_pid"
		echo 1 >"$inst/events/io_uring/io_uring_submit_req/enable"
		"$@"
	) >"$out" 2>&1 || rc=$?
	echo 0 >"$inst/events/io_uring/io_uring_submit_req/enable"
	# a pid that another test's process reuses could slip into the filter
	awk '/io_uring_submit_req/ {
		for (i = 1; i < NF; i++) {
			if ($i == "ring") r = $(i + 1)
			if ($i == "opcode") o = $(i + 1)
			if ($i == "flags") f = $(i + 1)
		}
		sub(",", "", r); sub(",", "", o); sub(",", "", f)
		n[r]++; sq[r] = sq[r] o " " f "\n"
	} END { for (r in n) if (n[r] > best) { best = n[r]; b = r }; printf "%s", sq[b] }' \
		"$inst/trace" >"$sqes"
	rmdir "$inst"
	return $rc
}

# a scratch file of SIZE (fio lays it out itself when absent)
scratch_file() { echo "$TMPD/${1:-data}.bin"; }

# use_zram SIZE: ZRAM=/dev/zram0 set to SIZE, where the kernel has zram and
# nobody uses it (disksize 0), reset at exit; else ZRAM is empty. A block
# device as fast as memory (io_uring hands its I/O to io-wq workers, as it
# does a tmpfs file's).
use_zram() {
	local z=/sys/block/zram0
	ZRAM=
	[ -w "$z/disksize" ] && [ "$(cat "$z/disksize")" = 0 ] || return 1
	echo "$1" >"$z/disksize" 2>/dev/null || return 1
	at_exit "echo 1 >$z/reset"
	ZRAM=/dev/zram0
}

# a loop block device over a scratch file; prints the device
loop_dev() {
	local size=${1:-64M} img=$TMPD/loop-$RANDOM.img dev
	[ "$(id -u)" -eq 0 ] || return 1
	truncate -s "$size" "$img"
	dev=$(losetup --find --show --direct-io=on "$img" 2>/dev/null) ||
		dev=$(losetup --find --show "$img" 2>/dev/null) || return 1
	# called as dev=$(loop_dev), a subshell: leave the device for _cleanup
	echo "$dev" >>"$TMPD/.loops"
	echo "$dev"
}
