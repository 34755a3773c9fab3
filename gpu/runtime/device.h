/* SPDX-License-Identifier: MIT */
/*
 * A GPU buffer's life cycle, written once for every GPU runtime: device
 * memory, the host shadow page-locked for DMA, the dma-buf export and the
 * release of all of it in reverse order. A copy stream over the buffer
 * (gpu/copy/stream.h) is its user's, made after alloc and exited before
 * free. What differs between CUDA and HIP is the device part of their table
 * of calls (struct gpu_runtime, runtime.h): cuda.c and hip.c load their
 * library, fill the table and keep their quirks (allocation granularity,
 * the device-ordinal check, the HSA export) inside their calls; their providers point alloc, export_dmabuf and free here
 * and hand the table out as their rt.
 *
 * Functions return 0 or a negative errno and leave the runtime's words in
 * b->why; nothing prints.
 */
#ifndef DBR_GPU_DEVICE_H
#define DBR_GPU_DEVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "provider.h"
#include "runtime.h"

/* One buffer's device side (b->priv of a device provider's buffer). */
struct gpu_dev {
	const struct gpu_runtime *rt;
	int handle;		/* the runtime's device handle (CUdevice) */
	void *ctx;		/* the runtime's context for it, if it has one */
	uint64_t dptr;		/* the device allocation */
	size_t dsize;		/* its size, as the runtime rounded it */
	bool host_locked;	/* the shadow is page-locked */
	bool rt_fd;		/* the dma-buf is closed through the runtime */
	unsigned long long export_flags;	/* what the export settled */
};

/*
 * Allocate b->size bytes on b->dev_id through b->prov->rt: device memory
 * (b->dev_addr) and the host shadow (b->host). On failure nothing is held
 * and b->priv is NULL.
 */
int gpu_dev_alloc(struct gpu_buf *b);
/* Export the device allocation as a dma-buf into b->dmabuf_fd. */
int gpu_dev_export(struct gpu_buf *b);
/* [off, off + len) as a dma-buf of its own into *fd (-EOPNOTSUPP: cannot). */
int gpu_dev_export_range(struct gpu_buf *b, size_t off, size_t len, int *fd);
/* Release what alloc and export acquired, in reverse order (idempotent). */
void gpu_dev_free(struct gpu_buf *b);

/* A runtime's error code and the errno it stands for. */
struct gpu_errno_map {
	int code;
	int err;
};

/* The negative errno of code (0 for 0, -EIO for a code not in the map). */
int gpu_errno_of(const struct gpu_errno_map *map, size_t n, int code);

#endif
