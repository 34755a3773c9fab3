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
 * can load and launch it fills the kernel_* entries of struct gpu_runtime.
 */
#ifndef DBR_GPU_KCOPY_H
#define DBR_GPU_KCOPY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "provider.h"

struct gpu_stream;

/* Descriptors per launch: 32 + 8 x 256 bytes of the 4 KiB parameter space. */
#define GPU_KCOPY_MAX		256u
/* Streams that can share one device's module: dbr_kcopy_count[]'s size. */
#define GPU_KCOPY_SLOTS		1024u
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

/* A descriptor's len has this bit set for a device -> host copy. */
#define GPU_KDESC_D2H		(1u << 31)

/* One descriptor, in GPU_KCOPY_ALIGN units; kernel parameter 4 is 256 of them. */
struct gpu_kdesc {
	uint32_t off;
	uint32_t len;		/* | GPU_KDESC_D2H */
};

/* One launch of dbr_kcopy: its parameters, in order, then the grid. */
struct gpu_klaunch {
	uint64_t host;		/* parameter 0: the staging area's device address */
	uint64_t dev;		/* parameter 1: device memory */
	uint64_t flag;		/* parameter 2: 0, or the host word's device
				 * address: the launch writes ticket there
				 * once all its copies are done */
	uint64_t ticket;	/* parameter 3 */
	struct gpu_kdesc d[GPU_KCOPY_MAX];	/* parameter 4 */
	unsigned int n;		/* descriptors used: grid x */
	unsigned int chunks;	/* grid y: the longest copy in chunks, capped */
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

/*
 * How copies on stream s over b run (s NULL: no stream made yet, as b's
 * copy_mode asks), for the job's line: "copy kernel under 64 KiB, DMA from
 * 64 KiB", "DMA", or DMA and why the kernel asked for is not used.
 */
void gpu_kcopy_describe(const struct gpu_stream *s, const struct gpu_buf *b,
			char *buf, size_t len);

/* The PTX text of dbr_kcopy (kcopy_ptx.h). */
const char *gpu_kcopy_ptx(void);

#endif
