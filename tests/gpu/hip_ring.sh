#!/usr/bin/env bash
# The ring's set-up flags follow the path (ring.h, taskrun_flag): a ring
# under GPU copies (gpu=hip transfer=bounce, through the HIP double) is set
# up without IORING_SETUP_TASKRUN_FLAG, a ring without copies (gpu=host)
# with it, both with SINGLE_ISSUER and DEFER_TASKRUN. Read from the engine's
# path line ("..., ring FLAGS"), on a kernel that takes all three.
. "$(dirname "$0")/../lib.sh"

use_hip_double

f=$(scratch_file)
truncate -s 4M "$f"

# ring_of NAME GPU: the flags the path line names, from a short read job
ring_of() {
	local out=$TMPD/$1.out
	dbr_fio --name="$1" --filename="$f" --size=4m --bs=4k --iodepth=8 \
		--rw=randread --direct=1 --gpu="$2" --transfer=bounce --thread \
		>"$out" 2>&1 || { show_failure "$out" >&2; return; }
	sed -n "s/^dmabuf_uring: $1: gpu=.*, ring \([A-Z_|]*\)\$/\1/p" "$out" | head -1
}

host=$(ring_of host host)
case "|$host|" in
*"|TASKRUN_FLAG|"*) ;;
*) skip "this kernel does not take TASKRUN_FLAG beside DEFER_TASKRUN (ring ${host:-unknown})" ;;
esac
pass "gpu=host (no copies): ring $host"

hip=$(ring_of hip hip)
case "|$hip|" in
*"|TASKRUN_FLAG|"*) fail "gpu=hip bounce (copies): ring $hip, want no TASKRUN_FLAG" ;;
*"|SINGLE_ISSUER|DEFER_TASKRUN|"*) pass "gpu=hip bounce (copies): ring $hip, no TASKRUN_FLAG" ;;
*) fail "gpu=hip bounce (copies): ring ${hip:-unknown}, want SINGLE_ISSUER|DEFER_TASKRUN" ;;
esac

finish
