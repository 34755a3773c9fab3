/* SPDX-License-Identifier: MIT */
/*
 * The io_uring dma-buf registered-buffer UAPI of the kernel series
 * "Add dmabuf read/write via io_uring" (v3..v7, not in any released kernel).
 *
 * No liburing release carries these definitions, so we carry the few we use.
 * Everything else (opcodes, rsrc_register, the sparse flag) comes from
 * <liburing/io_uring.h>.
 */
#ifndef DBR_UAPI_H
#define DBR_UAPI_H

#include <stdint.h>
#include <linux/types.h>

/*
 * io_uring_rsrc_update2 as the series defines it: the word that older kernels
 * call "resv" (and require to be zero) becomes "flags".
 */
struct dbr_rsrc_update2 {
	__u32 offset;
	__u32 flags;
	__u64 data;
	__u64 tags;
	__u32 nr;
	__u32 resv2;
};

/* flags of dbr_rsrc_update2: data points to dbr_regbuf_desc[nr] */
#define DBR_RSRC_UPDATE_EXTENDED	(1U << 1)

enum {
	DBR_REGBUF_TYPE_EMPTY	= 0,
	DBR_REGBUF_TYPE_UADDR	= 1,
	DBR_REGBUF_TYPE_DMABUF	= 2,
};

/* One slot's descriptor; 80 bytes. For a dma-buf, size and uaddr stay 0. */
struct dbr_regbuf_desc {
	__u32 type;
	__u32 flags;
	__u64 size;
	__u64 uaddr;
	__s32 dmabuf_fd;
	__s32 target_fd;
	__u64 resv[6];
};

_Static_assert(sizeof(struct dbr_rsrc_update2) == 32, "rsrc_update2 layout");
_Static_assert(sizeof(struct dbr_regbuf_desc) == 80, "regbuf_desc layout");

/*
 * Limits the series imposes that we check before asking the kernel, so the
 * user gets a message naming the limit instead of a bare EINVAL.
 * v3 capped one registered dma-buf at 1 GiB; ordinary fixed buffers have
 * always been capped at 1 GiB per iovec.
 */
#define DBR_REGBUF_MAX_BYTES	(1ULL << 30)
#define DBR_MAX_MAPS_PER_DEV	256
/* registered pieces of a larger area start and end on this (dbr_split) */
#define DBR_SPLIT_GRAN		(2ULL << 20)
/* slots in one ring's buffer table (the kernel's IORING_MAX_REG_BUFFERS) */
#define DBR_MAX_REG_BUFFERS	(1U << 14)

#endif
