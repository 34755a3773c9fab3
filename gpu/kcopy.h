/* SPDX-License-Identifier: MIT */
/*
 * The copy kernels (gpu_copy=auto|kernel): one launch moves a pass's small
 * copies between the host staging area and device memory, where a runtime
 * batch-copy call costs the driver about as much per copy as per byte. The
 * GPU reads (gather, host->device) or writes (scatter, device->host) the
 * page-locked staging area through its device mapping; each launch carries
 * up to GPU_KCOPY_MAX descriptors (offset, length) in its parameter block,
 * the same offset on both sides, as copies of one io_u have.
 *
 * This unit is runtime-free: which copies a kernel takes, and packing them
 * into launches. The kernels are PTX text (kcopy_ptx.h); a runtime that can
 * load and launch them fills the kernel_* entries of struct gpu_runtime.
 */
#ifndef DBR_GPU_KCOPY_H
#define DBR_GPU_KCOPY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "provider.h"

/* Descriptors per launch: 16 + 8 x 256 bytes of the 4 KiB parameter space. */
#define GPU_KCOPY_MAX		256u
/* Offsets and lengths in units of the kernel's 16-byte loads and stores. */
#define GPU_KCOPY_ALIGN		16u
/* What one block moves per step (256 threads x 16 bytes): grid y units. */
#define GPU_KCOPY_CHUNK		4096u
/* Blocks one descriptor spreads over at most; longer copies loop. */
#define GPU_KCOPY_MAX_CHUNKS	1024u
/*
 * gpu_copy=auto: copies this long or longer go to the DMA engines, where a
 * runtime call per copy is cheap beside the bytes and the copy engines move
 * them at the link's rate without taking SMs.
 */
#define GPU_KCOPY_AUTO_MAX	(64u << 10)

struct gpu_copy;

/* One descriptor, in GPU_KCOPY_ALIGN units; kernel parameter 2 is 256 of them. */
struct gpu_kdesc {
	uint32_t off;
	uint32_t len;
};

/* One launch: kernel parameters first, in the kernels' order, then the grid. */
struct gpu_klaunch {
	uint64_t src;		/* parameter 0: base address read from */
	uint64_t dst;		/* parameter 1: base address written to */
	struct gpu_kdesc d[GPU_KCOPY_MAX];	/* parameter 2 */
	enum gpu_copy_dir dir;	/* GPU_H2D: dbr_gather, GPU_D2H: dbr_scatter */
	unsigned int n;		/* descriptors used: grid x */
	unsigned int chunks;	/* grid y: the longest copy in chunks, capped */
};

/* Would a kernel take this copy, in this mode (never for GPU_COPY_DMA)? */
bool gpu_kcopy_takes(enum gpu_copy_mode mode, const struct gpu_copy *c);

/*
 * Start an empty launch in direction dir between the staging area's device
 * address host_dev and device memory at dev.
 */
void gpu_kcopy_begin(struct gpu_klaunch *l, enum gpu_copy_dir dir,
		     uint64_t host_dev, uint64_t dev);

/*
 * Add copy c (one gpu_kcopy_takes took) to l; false when l is full or goes
 * the other way: launch it, begin another, add again.
 */
bool gpu_kcopy_add(struct gpu_klaunch *l, const struct gpu_copy *c);

/* "auto", "dma", "kernel": the gpu_copy values */
const char *gpu_copy_mode_name(enum gpu_copy_mode mode);

/*
 * How b's copies run, for the job's line: "copy kernel under 64 KiB, DMA
 * from 64 KiB", "DMA", or DMA and why the kernel asked for is not used.
 */
void gpu_kcopy_describe(const struct gpu_buf *b, char *buf, size_t len);

/* The PTX text of dbr_gather and dbr_scatter (kcopy_ptx.h). */
const char *gpu_kcopy_ptx(void);

#endif
