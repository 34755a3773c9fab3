#!/usr/bin/env bash
# The ring's set-up flags are fio's engine's on every path (ring.c says
# why): SINGLE_ISSUER and DEFER_TASKRUN, no IORING_SETUP_TASKRUN_FLAG, for
# a ring under GPU copies (gpu=hip transfer=bounce, through the HIP double)
# and one without (gpu=host). Read from the engine's path line ("..., ring
# FLAGS, thread_creds=..."), on a kernel that takes both. And the thread's
# credentials (thread_creds, ring.c says why): a copy of its own by
# default, the process's with thread_creds=shared, a value fio refuses
# otherwise.
. "$(dirname "$0")/../lib.sh"

use_hip_double

f=$(scratch_file)
truncate -s 4M "$f"

# path_of NAME GPU [OPTION...]: the path line's part from "ring " on
# ("FLAGS, thread_creds=..."), from a short read job of two threads
path_of() {
	local out=$TMPD/$1.out
	dbr_fio --name="$1" --filename="$f" --size=4m --bs=4k --iodepth=8 \
		--rw=randread --direct=1 --gpu="$2" --transfer=bounce --thread \
		--numjobs=2 "${@:3}" >"$out" 2>&1 || { show_failure "$out" >&2; return; }
	sed -n "s/^dmabuf_uring: $1: gpu=.*, ring \([A-Z_|]*, .*\)\$/\1/p" "$out" | head -1
}
ring_of() { echo "${1%%, *}"; }
creds_of() { echo "${1#*, }"; }

# want_fio_flags WHAT RING: pass when RING is SINGLE_ISSUER|DEFER_TASKRUN alone
want_fio_flags() {
	case "|$2|" in
	*"|TASKRUN_FLAG|"*) fail "$1: ring $2, want no TASKRUN_FLAG" ;;
	*"|SINGLE_ISSUER|DEFER_TASKRUN|"*) pass "$1: ring $2, no TASKRUN_FLAG" ;;
	*) fail "$1: ring ${2:-unknown}, want SINGLE_ISSUER|DEFER_TASKRUN" ;;
	esac
}

host=$(ring_of "$(path_of host host)")
case "|$host|" in
*"|DEFER_TASKRUN|"*) ;;
*) skip "this kernel does not take DEFER_TASKRUN (ring ${host:-unknown})" ;;
esac
want_fio_flags "gpu=host (no copies)" "$host"

hip_path=$(path_of hip hip)
want_fio_flags "gpu=hip bounce (copies)" "$(ring_of "$hip_path")"

# the credentials: the hip job's by default, and a job with shared ones
own=$(creds_of "$hip_path")
case $own in
thread_creds=own) pass "default: $own" ;;
"thread_creds=shared (a copy of its own was refused"*) skip "the kernel refuses a thread its own credentials here: $own" ;;
*) fail "default: '${own:-no path line}', want thread_creds=own" ;;
esac
shared=$(creds_of "$(path_of shared hip --thread_creds=shared)")
[ "$shared" = thread_creds=shared ] && pass "thread_creds=shared: $shared" ||
	fail "thread_creds=shared: '${shared:-no path line}'"
if dbr_fio --name=bad --filename="$f" --size=4m --gpu=hip --thread \
	--thread_creds=bogus >"$TMPD/bogus.out" 2>&1; then
	fail "thread_creds=bogus accepted"
elif grep -q "failed parsing thread_creds=bogus" "$TMPD/bogus.out"; then
	pass "thread_creds=bogus: fio refuses it and lists own, shared"
else
	fail "thread_creds=bogus: $(head -3 "$TMPD/bogus.out")"
fi

finish
