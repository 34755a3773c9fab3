/* SPDX-License-Identifier: MIT */
/*
 * The copy kernel (gpu_copy=auto|kernel): one launch moves a pass's small
 * copies between the host staging area and device memory, where a runtime
 * batch-copy call costs the driver per copy, not per byte. The GPU reads
 * (gathers, host->device) or writes (scatters, device->host) the
 * page-locked staging area through its device mapping; a launch carries up
 * to GPU_KCOPY_MAX descriptors (offset, length, direction) in its parameter
 * block, the offset the same on both sides, as for the copies of one io_u.
 *
 * This unit is runtime-free: which copies the kernel takes, and packing
 * them into launches. The kernel is PTX text (kcopy_ptx.h); a runtime that
 * can load and launch it fills the kernel_* entries of struct gpu_runtime,
 * and a launch's layout is gpu/runtime/kernels.h's.
 */
#ifndef DBR_GPU_KCOPY_H
#define DBR_GPU_KCOPY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels.h"
#include "provider.h"

/* Blocks one descriptor spreads over at most; longer copies loop. */
#define GPU_KCOPY_MAX_CHUNKS	1024u
/*
 * gpu_copy=auto: copies this long or longer go to the DMA engines, where a
 * runtime call per copy is cheap beside the bytes and the copy engines move
 * them at the link's rate without taking SMs.
 */
#define GPU_KCOPY_AUTO_MAX	(64u << 10)

/* One copy between the host shadow and device memory, at the same offset. */
struct gpu_copy {
	enum gpu_copy_dir dir;
	size_t off;
	size_t len;
};

/* Would the kernel take this copy, in this mode (never for GPU_COPY_DMA)? */
bool gpu_kcopy_takes(enum gpu_copy_mode mode, const struct gpu_copy *c);

/*
 * Start an empty launch between the staging area's device address
 * host_dev and device memory at dev.
 */
void gpu_kcopy_begin(struct gpu_klaunch *l, uint64_t host_dev, uint64_t dev);

/*
 * Add copy c (one gpu_kcopy_takes took) to l; false when l is full:
 * launch it, begin another, add again.
 */
bool gpu_kcopy_add(struct gpu_klaunch *l, const struct gpu_copy *c);

/* "auto", "dma", "kernel": the gpu_copy values */
const char *gpu_copy_mode_name(enum gpu_copy_mode mode);

/* The PTX text of dbr_kcopy (kcopy_ptx.h). */
const char *gpu_kcopy_ptx(void);

#endif
