/* SPDX-License-Identifier: MIT */
/*
 * What differs between GPU runtimes: one table of calls that cuda.c and
 * hip.c fill (a test fills its own). device.c drives the device part of it
 * (memory, page-locking, dma-buf export); the copy stream above it
 * (gpu/copy/stream.h) drives the rest: streams, events, copies, host words
 * the stream writes, and the copy kernels (kernels.h).
 */
#ifndef DBR_GPU_RUNTIME_H
#define DBR_GPU_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#include "provider.h"

struct gpu_dev;
struct gpu_klaunch;

/*
 * One runtime's calls: the device life cycle (device.c) and the copy
 * stream (gpu/copy/stream.h). Each returns 0 or a negative errno and leaves
 * the runtime's own error name in b->why; event_query returns 1 when the
 * event completed, 0 when not yet. Addresses are device virtual addresses (unified with host
 * addresses in both CUDA and HIP). b->priv is the buffer's struct gpu_dev.
 */
struct gpu_runtime {
	/* usable devices, or a negative errno (the provider's probe) */
	int (*probe)(char *why, size_t len);
	/* optional: take the runtime's context of device b->dev_id into d */
	int (*open)(struct gpu_buf *b, struct gpu_dev *d);
	void (*close)(struct gpu_dev *d);
	/* device memory for b->size bytes into d->dptr and d->dsize */
	int (*mem_alloc)(struct gpu_buf *b, struct gpu_dev *d);
	const char *mem_alloc_name;	/* its runtime call, for messages */
	void (*mem_free)(struct gpu_dev *d);
	/* page-lock the host shadow for DMA */
	int (*host_register)(struct gpu_buf *b, void *host, size_t len);
	void (*host_unregister)(void *host);
	/* a dma-buf fd of [d->dptr, + b->size); d->rt_fd: close it below */
	int (*export)(struct gpu_buf *b, struct gpu_dev *d, int *fd);
	void (*close_dmabuf)(int fd);
	/* optional: [off, off + len) as a dma-buf of its own, closed by close(2) */
	int (*export_range)(struct gpu_buf *b, struct gpu_dev *d, size_t off,
			    size_t len, int *fd);
	/* optional: what the allocated memory is, into b->export_kind */
	void (*describe)(struct gpu_buf *b, struct gpu_dev *d);
	/* make the buffer's device (context) current on the calling thread */
	int (*enter)(struct gpu_buf *b);
	int (*stream_create)(struct gpu_buf *b, void **stream);
	int (*stream_sync)(struct gpu_buf *b, void *stream);
	void (*stream_destroy)(void *stream);
	int (*event_create)(struct gpu_buf *b, void **event);
	void (*event_destroy)(void *event);
	int (*event_record)(struct gpu_buf *b, void *event, void *stream);
	int (*event_query)(struct gpu_buf *b, void *event);
	int (*event_sync)(struct gpu_buf *b, void *event);
	int (*copy)(struct gpu_buf *b, void *stream, enum gpu_copy_dir dir,
		    uint64_t dst, uint64_t src, size_t len);
	/*
	 * Copies in any order within the call, in stream order as a whole.
	 * -ENOSYS when this runtime has no batch call (the stream then copies
	 * one by one from then on); on another error *done says how many of
	 * the first copies were queued.
	 */
	int (*copy_batch)(struct gpu_buf *b, void *stream, uint64_t *dst,
			  uint64_t *src, size_t *len, size_t n, size_t *done);
	/*
	 * Optional (NULL, or -ENOSYS at run time): page-lock host memory the
	 * device can write, and have the stream write a 64-bit value there
	 * once everything queued before has finished.
	 */
	int (*map_host)(struct gpu_buf *b, void *host, size_t len,
			uint64_t *dev_addr);
	void (*unmap_host)(void *host);
	int (*write_value)(struct gpu_buf *b, void *stream, uint64_t dev_addr,
			   uint64_t value);
	/*
	 * Optional (NULL: copies go through the calls above only): the copy
	 * kernels (kernels.h). kernel_load loads the kernel named entry from
	 * PTX text into *mod; kernel_launch queues one launch of dbr_kcopy (l) on
	 * the stream; host_dev_addr gives the device address of the
	 * page-locked host shadow. HIP could fill them with hipModuleLoadData
	 * and hipModuleLaunchKernel from a code object; it does not yet.
	 */
	int (*host_dev_addr)(struct gpu_buf *b, void *host, uint64_t *dev_addr);
	int (*kernel_load)(struct gpu_buf *b, const char *ptx,
			   const char *entry, void **mod);
	void (*kernel_unload)(void *mod);
	int (*kernel_launch)(struct gpu_buf *b, void *stream, void *mod,
			     const struct gpu_klaunch *l);
	/*
	 * Optional (NULL: the kernel is launched per pass): queue one block
	 * of GPU_KRING_THREADS running dbr_kring (kernels.h) on the stream,
	 * over the ring at device address ring, between host and dev.
	 */
	int (*kernel_start)(struct gpu_buf *b, void *stream, void *mod,
			    uint64_t ring, uint64_t host, uint64_t dev);
	/*
	 * Optional (NULL: always): 0 while what was queued can still finish, a
	 * negative errno (why in b->why) once it cannot: the GPU owner that runs
	 * the calls went away or stopped on a failed one (remote.h). Asked
	 * where a wait polls memory the GPU writes, which no call would end.
	 */
	int (*alive)(struct gpu_buf *b);
};

#endif
