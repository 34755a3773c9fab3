#!/usr/bin/env bash
# make check: the VM rig (tests/vm/rig) with Debian trixie's stock kernel, or
# with KERNEL=/path/bzImage [MODULES=dir] from the environment; then a second,
# short boot of the same kernel under QEMU's emulated IOMMU that runs
# guest.d/iommu alone (DBR_VM_IOMMU=dma by default, =pt for identity; =off
# leaves the boot out). See docs/vm.md.
# 0 pass, 77 skip (QEMU, busybox-static or the kernel package missing), else fail.
set -euo pipefail
if [ "${DBR_SKIP_VM:-0}" = 1 ]; then
	echo "SKIP: vm: DBR_SKIP_VM=1 (sanitizer pass): the VM rig runs in the non-sanitizer pass only"
	exit 77
fi
rc=0
DBR_VM_IOMMU= bash "$SRCDIR/tests/vm/rig" || rc=$?
iommu=${DBR_VM_IOMMU:-dma}
if [ "$rc" -ne 0 ] || [ "$iommu" = off ] ||
	{ [ -n "${DBR_VM_CASES:-}" ] && ! [[ guest.d/iommu =~ $DBR_VM_CASES ]]; }; then
	exit "$rc"
fi
DBR_VM_IOMMU=$iommu DBR_VM_CASES='guest.d/iommu' exec bash "$SRCDIR/tests/vm/rig"
