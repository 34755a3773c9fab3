#!/usr/bin/env bash
# make check: the VM rig (tests/vm/rig) with Debian trixie's stock kernel, or
# with KERNEL=/path/bzImage [MODULES=dir] from the environment. See docs/vm.md.
# 0 pass, 77 skip (QEMU, busybox-static or the kernel package missing), else fail.
set -euo pipefail
if [ "${DBR_SKIP_VM:-0}" = 1 ]; then
	echo "SKIP: vm: DBR_SKIP_VM=1 (sanitizer pass): the VM rig runs in the non-sanitizer pass only"
	exit 77
fi
exec bash "$SRCDIR/tests/vm/rig"
