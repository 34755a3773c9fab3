// SPDX-License-Identifier: MIT
/*
 * The copy kernel's side that knows no runtime: which copies it takes and
 * how a pass packs into launches. See kcopy.h; the kernel is in
 * kcopy_ptx.h.
 */
#include "kcopy.h"
#include "kcopy_ptx.h"

_Static_assert(sizeof(((struct gpu_klaunch *)0)->d) == 2048,
	       "kernel parameter 4 is .b8 dbr_kcopy_desc[2048] in kcopy_ptx.h");

/*
 * The kernel moves 16 bytes at a time, so both ends of a copy must be
 * 16-byte aligned (fio's io_u buffers are page aligned, their lengths
 * multiples of 512 unless bs says otherwise), and a descriptor's 32 bits
 * must reach it; the rest goes to DMA, as do, in auto mode, copies long
 * enough for the copy engines to win.
 */
bool gpu_kcopy_takes(enum gpu_copy_mode mode, const struct gpu_copy *c)
{
	if (mode == GPU_COPY_DMA || !c->len)
		return false;
	if ((c->off | c->len) % GPU_KCOPY_ALIGN)
		return false;
	if ((c->off + c->len) / GPU_KCOPY_ALIGN > UINT32_MAX ||
	    c->len / GPU_KCOPY_ALIGN >= GPU_KDESC_D2H)
		return false;
	return mode == GPU_COPY_KERNEL || c->len < GPU_KCOPY_AUTO_MAX;
}

void gpu_kcopy_begin(struct gpu_klaunch *l, uint64_t host_dev, uint64_t dev)
{
	l->host = host_dev;
	l->dev = dev;
	l->flag = 0;
	l->ticket = 0;
	l->n = 0;
	l->chunks = 0;
}

bool gpu_kcopy_add(struct gpu_klaunch *l, const struct gpu_copy *c)
{
	size_t chunks = (c->len + GPU_KCOPY_CHUNK - 1) / GPU_KCOPY_CHUNK;
	uint32_t len = (uint32_t)(c->len / GPU_KCOPY_ALIGN);

	if (l->n == GPU_KCOPY_MAX)
		return false;
	l->d[l->n++] = (struct gpu_kdesc){
		.off = (uint32_t)(c->off / GPU_KCOPY_ALIGN),
		.len = c->dir == GPU_D2H ? len | GPU_KDESC_D2H : len,
	};
	if (chunks > GPU_KCOPY_MAX_CHUNKS)
		chunks = GPU_KCOPY_MAX_CHUNKS;
	if (chunks > l->chunks)
		l->chunks = (unsigned int)chunks;
	return true;
}

const char *gpu_copy_mode_name(enum gpu_copy_mode mode)
{
	switch (mode) {
	case GPU_COPY_AUTO:	return "auto";
	case GPU_COPY_DMA:	return "dma";
	case GPU_COPY_KERNEL:	return "kernel";
	}
	return "?";
}

const char *gpu_kcopy_ptx(void)
{
	return gpu_kcopy_ptx_text;
}
