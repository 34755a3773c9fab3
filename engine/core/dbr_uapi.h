/* SPDX-License-Identifier: MIT */
/*
 * The io_uring dma-buf registered-buffer UAPI of the kernel series
 * "Add dmabuf read/write via io_uring" (v3..v7, not in any released kernel),
 * every value of it in one place (docs/kernel.md says what each version
 * changed). The uapi hunk is the same in v3 and v7; a zero-copy-receive
 * prototype of the same author also uses regbuf type 2, so should one be
 * renumbered, this file is the only one to change.
 *
 * No liburing release carries these definitions, so we carry them. The
 * io_uring values they build on are checked against <liburing/io_uring.h>.
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

/* register opcodes and flags the series builds on (mainline values) */
#define DBR_REGISTER_BUFFERS2		15	/* sparse table: nr, SPARSE */
#define DBR_REGISTER_BUFFERS_UPDATE	16	/* + EXTENDED: dma-buf slots */
#define DBR_REGISTER_CLONE_BUFFERS	30	/* v7: refused for a table with
						 * dma-buf slots (uncloneable);
						 * this engine never clones */
#define DBR_RSRC_REGISTER_SPARSE	(1U << 0)

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
#ifdef IORING_RSRC_REGISTER_SPARSE
_Static_assert(DBR_RSRC_REGISTER_SPARSE == IORING_RSRC_REGISTER_SPARSE,
	       "the sparse flag is mainline's");
_Static_assert(DBR_REGISTER_BUFFERS_UPDATE == IORING_REGISTER_BUFFERS_UPDATE &&
	       DBR_REGISTER_BUFFERS2 == IORING_REGISTER_BUFFERS2,
	       "the register opcodes are mainline's");
#endif
_Static_assert(sizeof(struct dbr_regbuf_desc) == 80, "regbuf_desc layout");

/*
 * Limits: an ordinary fixed buffer holds at most 1 GiB per iovec (always);
 * v3 to v5 cap one registered dma-buf at 1 GiB too (EINVAL over it), v6
 * relaxed that (the backend's documentation gives 1 TiB). Larger areas are
 * registered in pieces of at most DBR_REGBUF_MAX_BYTES (dbr_split).
 */
#define DBR_REGBUF_MAX_BYTES	(1ULL << 30)
#define DBR_MAX_MAPS_PER_DEV	256
/* registered pieces of a larger area start and end on this (dbr_split) */
#define DBR_SPLIT_GRAN		(2ULL << 20)
/* slots in one ring's buffer table (the kernel's IORING_MAX_REG_BUFFERS) */
#define DBR_MAX_REG_BUFFERS	(1U << 14)
/* SQ entries of one ring (the kernel's IORING_MAX_ENTRIES; more is EINVAL) */
#define DBR_RING_MAX_ENTRIES	(1U << 15)

#endif
