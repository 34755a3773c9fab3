/* SPDX-License-Identifier: MIT */
/*
 * The copy stream's state (stream.h has its calls). A header of its own
 * because the stream drives its resident kernel through resident.c, which
 * keeps its part of this state (the ring, the kernel's module and stream,
 * the copy calls' last fence) but calls nothing of the stream's: it reads
 * the struct from here, and stream.c alone calls resident.c.
 */
#ifndef DBR_GPU_STREAM_STATE_H
#define DBR_GPU_STREAM_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kring.h"
#include "provider.h"
#include "runtime.h"

struct gpu_klaunch;

struct gpu_stream {
	struct gpu_buf *buf;	/* the buffer it copies within */
	const struct gpu_runtime *rt;
	uint64_t dev_base;	/* device address of the allocation */
	void *stream;
	void **events;		/* ticket t uses events[(t - 1) % nr_events] */
	unsigned int nr_events;
	void *wait_event;	/* recorded by a wait that sleeps (host flag) */
	uint64_t issued;	/* newest ticket handed out */
	uint64_t done;		/* every ticket <= done has completed */
	struct gpu_copy *queued;	/* not yet sent to the runtime */
	unsigned int nr_queued, cap;
	uint64_t *dst, *src;	/* batch-call scratch, cap entries each */
	size_t *len;
	bool no_batch;		/* runtime lacks the batch call */
	uint64_t *flag;		/* newest ticket done, written by the stream */
	uint64_t flag_dev;	/* its device address; 0: not mapped */
	void *kmod;		/* copy kernel loaded (NULL: DMA only) */
	struct gpu_klaunch *kl;	/* the launch being packed */
	uint64_t host_dev;	/* device address of b->host, for the kernel */
	enum gpu_copy_mode mode;	/* b->copy_mode, DMA without the kernel */
	char kwhy[192];		/* why the kernel could not be had */
	/* the resident kernel (kr.r NULL: launches per pass, or none) */
	struct gpu_kring_host kr;
	void *rmod;		/* dbr_kring loaded */
	void *kstream;		/* the stream it runs on */
	uint64_t d_last;	/* newest ticket the copy calls' stream writes */
	bool d_dirty;		/* copy calls sent since d_last */
	char rwhy[192];		/* why it is launched per pass instead */
	void *cq_mem;		/* a watched ring's memory, mapped (resident.h) */
	struct gpu_stream_stats st;
};

/*
 * 0, or why what is queued will never finish (struct gpu_runtime's alive):
 * here, not in stream.c, as resident.c's waits ask it too.
 */
static inline int gpu_stream_alive(struct gpu_stream *s)
{
	return s->rt->alive ? s->rt->alive(s->buf) : 0;
}

#endif
