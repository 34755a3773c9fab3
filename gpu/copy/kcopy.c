// SPDX-License-Identifier: MIT
/*
 * The copy kernel's side that knows no runtime: which copies it takes and
 * how a pass packs into launches. See kcopy.h; the kernel is in
 * kcopy_ptx.h.
 */
#include <stdio.h>

#include "kcopy.h"
#include "kcopy_ptx.h"
#include "stream.h"

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

/*
 * " (resident)", or " (a launch per pass...)" with the reason where one is
 * known: the engine chose it (b->kernel_why) or the resident kernel could
 * not be had (s->rwhy); "" before a stream is made.
 */
static const char *kernel_how(const struct gpu_stream *s,
			      const struct gpu_buf *b, char *buf, size_t len)
{
	if (!s)
		return "";
	if (s->kr.r && s->cq_mem)
		return " (resident, watching the ring's CQ: reads copied as their CQEs come)";
	if (s->kr.r)
		return " (resident)";
	if (b->kernel_mode == GPU_KERNEL_LAUNCH && b->kernel_why) {
		snprintf(buf, len, " (a launch per pass; %s)", b->kernel_why);
		return buf;
	}
	if (b->kernel_mode == GPU_KERNEL_LAUNCH || !s->rt->kernel_start)
		return " (a launch per pass)";
	snprintf(buf, len, " (a launch per pass; resident kernel: %s)",
		 s->rwhy[0] ? s->rwhy : "needs the runtime's stream writes");
	return buf;
}

void gpu_kcopy_describe(const struct gpu_stream *s, const struct gpu_buf *b,
			char *buf, size_t len)
{
	const char *why = "";
	char how[240];
	enum gpu_copy_mode got = s ? gpu_stream_copy_mode(s, &why) :
				     b->copy_mode;

	if (got == GPU_COPY_AUTO)
		snprintf(buf, len, "copy kernel%s under %u KiB, DMA from %u KiB",
			 kernel_how(s, b, how, sizeof(how)),
			 GPU_KCOPY_AUTO_MAX >> 10, GPU_KCOPY_AUTO_MAX >> 10);
	else if (got == GPU_COPY_KERNEL)
		snprintf(buf, len, "copy kernel%s (DMA for copies not %u-byte aligned)",
			 kernel_how(s, b, how, sizeof(how)), GPU_KCOPY_ALIGN);
	else if (b->copy_mode == GPU_COPY_DMA)
		snprintf(buf, len, "DMA");
	else if (!why[0])
		snprintf(buf, len, "DMA; gpu_copy=%s: gpu=%s has no copy kernel yet",
			 gpu_copy_mode_name(b->copy_mode),
			 b->prov ? b->prov->name : "?");
	else
		snprintf(buf, len, "DMA; gpu_copy=%s: the copy kernel could not be loaded: %s",
			 gpu_copy_mode_name(b->copy_mode), why);
}

const char *gpu_kcopy_ptx(void)
{
	return gpu_kcopy_ptx_text;
}
