/* SPDX-License-Identifier: MIT */
/*
 * The resident copy kernel as an engine of the copy stream (stream.c). Where
 * gpu_kernel=resident (or auto for job threads), the runtime can start the kernel
 * (struct gpu_runtime's kernel_start) and the stream has its host word, the
 * copies the kernel takes go to it through its ring (kring.h) and the rest
 * to the runtime's copy calls on the stream. Each engine runs in order and
 * fences itself: the ring carries the ticket of a fence its passes end, the
 * stream writes it into the host word for the copy calls, and a fence is
 * done once both are (gpu_resident_done).
 *
 * Internal to gpu/copy/: the stream calls these only where s->kr.r is set
 * (gpu_resident_setup succeeded), except setup, free, idle and leave.
 */
#ifndef DBR_GPU_RESIDENT_H
#define DBR_GPU_RESIDENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gpu_buf;
struct gpu_copy;
struct gpu_stream;

/*
 * Map the ring, load dbr_kring, make its stream and start it; on any
 * failure s->kr.r stays NULL (passes are launched) and s->rwhy says why.
 */
void gpu_resident_setup(struct gpu_buf *b, struct gpu_stream *s);
/* Release what setup got (the kernel has left: gpu_resident_leave). */
void gpu_resident_free(struct gpu_stream *s);
/* Where an io_uring's tails and CQEs sit in its rings' memory. */
struct gpu_cq_offsets {
	size_t cq_tail, sq_tail, cqes;
	uint32_t cq_mask;
};

/*
 * Have the resident kernel watch an io_uring's CQ (its rings' memory mem,
 * len bytes, mapped here from offset 0 of the ring's fd, which a GPU owner
 * maps the same way) and copy the reads whose user_data
 * gpu_kring_cq_tag made as their CQEs come. 0, or a negative errno (no
 * resident kernel: -ENOSYS).
 */
int gpu_resident_watch(struct gpu_buf *b, struct gpu_stream *s, void *mem,
		       size_t len, int fd, const struct gpu_cq_offsets *o);
/* The kernel's count of CQEs seen and copied, NULL when none is watched. */
const uint64_t *gpu_resident_cq_done(const struct gpu_stream *s);
/* SQEs went in: start the kernel again where it left. */
int gpu_resident_kick(struct gpu_buf *b, struct gpu_stream *s);

/* Every pass posted, fenced or not, is done (true without a ring). */
bool gpu_resident_idle(const struct gpu_stream *s);
/* Ask the kernel to leave once its passes are done, and wait for it. */
void gpu_resident_leave(struct gpu_buf *b, struct gpu_stream *s);
/*
 * The kernel's copies q[0, n) as passes of the ring, the last ending fence
 * 'ticket' where there is one (*signalled); starts the kernel where it left.
 */
int gpu_resident_post(struct gpu_buf *b, struct gpu_stream *s,
		      const struct gpu_copy *q, unsigned int n,
		      uint64_t ticket, bool *signalled);
/*
 * Fence t over both engines: the stream writes t where copy calls were sent
 * since its last fence, the ring carries t (an empty pass if need be) where
 * it was posted to since its last one and no pass of this send carried it.
 */
int gpu_resident_fence(struct gpu_buf *b, struct gpu_stream *s, uint64_t t,
		       bool signalled);
/* The newest ticket both engines are done with, as far as they said. */
uint64_t gpu_resident_done(const struct gpu_stream *s);
/*
 * How long a wait that spun goes on yielding before it naps: a pass takes
 * microseconds, a nap at least the timer's slack (50 us), and no runtime
 * call can sleep until a ring moves. 0 where gpu_spin_us=0 asks to sleep
 * at once, or there is no ring.
 */
uint64_t gpu_resident_yield_ns(const struct gpu_stream *s);

#endif
