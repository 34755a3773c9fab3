/* SPDX-License-Identifier: MIT */
/*
 * The copy kernels as a runtime launches them: dbr_kcopy's parameters and
 * grid, and dbr_kring's block. Which copies go to a kernel and how a pass
 * is packed or posted is the copy stream's (gpu/copy/kcopy.h, kring.h); a
 * runtime that fills the kernel_* calls of struct gpu_runtime (runtime.h)
 * needs only this.
 */
#ifndef DBR_GPU_KERNELS_H
#define DBR_GPU_KERNELS_H

#include <stdint.h>

/* Descriptors per launch: 32 + 8 x 256 bytes of the 4 KiB parameter space. */
#define GPU_KCOPY_MAX		256u
/* Streams that can share one device's module: dbr_kcopy_count[]'s size. */
#define GPU_KCOPY_SLOTS		1024u
/* Offsets and lengths in units of the kernel's 16-byte loads and stores. */
#define GPU_KCOPY_ALIGN		16u
/* What one block moves per step (256 threads x 16 bytes): grid y units. */
#define GPU_KCOPY_CHUNK		4096u

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

/* The block of dbr_kring, the resident kernel (gpu/copy/kring.h). */
#define GPU_KRING_THREADS	512u

#endif
