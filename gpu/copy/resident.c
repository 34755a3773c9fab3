// SPDX-License-Identifier: MIT
/*
 * The copy stream's second engine: the resident copy kernel (kring.h), fed
 * through its ring, beside the runtime's copy calls on the stream itself.
 * See resident.h; the ring's protocol is kring.c, the kernel kring.cu.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "kring.h"
#include "resident.h"
#include "runtime.h"
#include "stream_state.h"

/* What gpu_resident_setup got, released in reverse order (r_dev: ring mapped). */
static void resident_free(struct gpu_stream *s, void *r, uint64_t r_dev)
{
	if (s->kstream)
		s->rt->stream_destroy(s->kstream);
	if (s->rmod)
		s->rt->kernel_unload(s->rmod);
	if (r_dev)
		s->rt->unmap_host(r);
	if (r)
		gpu_host_pages_free(r, gpu_kring_size());
	s->kstream = NULL;
	s->rmod = NULL;
	s->kr.r = NULL;
}

/* Start the resident kernel (again); the first start must say it runs. */
static int resident_start(struct gpu_buf *b, struct gpu_stream *s)
{
	uint64_t t0, before = gpu_kring_starts(&s->kr);
	int ret;

	ret = s->rt->enter(b);
	if (!ret)
		ret = s->rt->kernel_start(b, s->kstream, s->rmod, s->kr.r_dev,
					  s->host_dev, s->dev_base);
	if (ret < 0)
		return ret;
	s->st.starts++;
	if (before)	/* it has run before: no need to watch it start */
		return 0;
	for (t0 = gpu_now_ns(); gpu_kring_starts(&s->kr) == before;)
		if (gpu_now_ns() - t0 > GPU_KRING_START_NS)
			return -ETIMEDOUT;
	return 0;
}

/*
 * Started once here, so that a kernel that cannot get onto the GPU is found
 * now, not with copies posted (it leaves again when idle).
 */
void gpu_resident_setup(struct gpu_buf *b, struct gpu_stream *s)
{
	size_t len = gpu_kring_size();
	const char *ptx;
	uint64_t r_dev = 0;
	void *r;
	int ret;

	if (b->kernel_mode != GPU_KERNEL_RESIDENT || !s->rt->kernel_start ||
	    !s->flag)
		return;
	r = gpu_host_pages(len);
	if (r == MAP_FAILED) {
		snprintf(s->rwhy, sizeof(s->rwhy), "ring: %s", strerror(errno));
		return;
	}
	ret = s->rt->map_host(b, r, len, &r_dev);
	ptx = ret ? NULL : gpu_kring_ptx(b->why, sizeof(b->why));
	if (!ret && !ptx)
		ret = -ENOENT;
	if (!ret)
		ret = s->rt->kernel_load(b, ptx, "dbr_kring", &s->rmod);
	if (!ret)
		ret = s->rt->stream_create(b, &s->kstream);
	if (ret < 0)
		s->kstream = NULL;
	gpu_kring_init(&s->kr, r, r_dev);
	/* the copy calls' fences are stream writes: they must work */
	if (!ret)
		ret = s->rt->write_value(b, s->stream, s->flag_dev, 0);
	if (!ret)
		ret = resident_start(b, s);
	if (!ret)
		return;
	snprintf(s->rwhy, sizeof(s->rwhy), "%s",
		 ret == -ETIMEDOUT ? "did not start within 1 s (the GPU is full of other work)" :
		 b->why[0] ? b->why : strerror(-ret));
	b->why[0] = '\0';	/* not an error: launches do the job */
	if (ret == -ETIMEDOUT) {
		/* it may start later: it finds stop set and leaves; keep its ring */
		gpu_kring_stop(&s->kr);
		s->kr.r = NULL;
		s->kstream = NULL;
		return;
	}
	resident_free(s, r, r_dev);
}

/* The watched rings' memory released (the kernel has left). */
static void unwatch(struct gpu_stream *s)
{
	s->rt->unmap_host(s->cq_mem);
	gpu_host_pages_return(s->cq_mem);
	s->cq_mem = NULL;
}

int gpu_resident_watch(struct gpu_buf *b, struct gpu_stream *s, void *mem,
		       size_t len, int fd, const struct gpu_cq_offsets *o)
{
	struct gpu_kring *r = s->kr.r;
	uint64_t dev;
	int ret;

	if (!r || s->cq_mem)
		return -ENOSYS;
	/* a GPU owner maps the rings from the ring's fd, handed over */
	ret = gpu_host_pages_lend(mem, len, fd);
	if (!ret)
		ret = s->rt->map_host(b, mem, len, &dev);
	if (ret < 0) {
		gpu_host_pages_return(mem);
		return ret;
	}
	/* the kernel reads what it watches when it starts: start it again */
	gpu_resident_leave(b, s);
	r->cq_tail = dev + o->cq_tail;
	r->sq_tail = dev + o->sq_tail;
	r->cqes = dev + o->cqes;
	r->cq_mask = o->cq_mask;
	r->cq_done = 0;
	__atomic_store_n(&r->stop, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&r->running, 1, __ATOMIC_RELAXED);
	s->cq_mem = mem;
	ret = resident_start(b, s);
	if (!ret)
		return 0;
	/* passes as before: the next post starts a kernel watching nothing */
	r->cqes = 0;
	__atomic_store_n(&r->running, 0, __ATOMIC_RELEASE);
	unwatch(s);
	b->why[0] = '\0';
	return ret;
}

const uint64_t *gpu_resident_cq_done(const struct gpu_stream *s)
{
	return s->cq_mem ? &s->kr.r->cq_done : NULL;
}

int gpu_resident_kick(struct gpu_buf *b, struct gpu_stream *s)
{
	if (!s->cq_mem || !gpu_kring_kick(&s->kr))
		return 0;
	return resident_start(b, s);
}

bool gpu_resident_idle(const struct gpu_stream *s)
{
	return !s->kr.r || gpu_kring_idle(&s->kr);
}

void gpu_resident_leave(struct gpu_buf *b, struct gpu_stream *s)
{
	if (!s->kr.r)
		return;
	gpu_kring_stop(&s->kr);
	s->rt->stream_sync(b, s->kstream);
}

/* Post the open pass to the resident kernel, starting it where it left. */
static int resident_send(struct gpu_buf *b, struct gpu_stream *s, uint64_t ticket)
{
	s->st.passes++;
	if (gpu_kring_post(&s->kr, ticket))
		return resident_start(b, s);
	return 0;
}

/*
 * All GPU_KRING_SLOTS passes are in flight: wait for the oldest, polling
 * (a round takes microseconds) for GPU_KRING_YIELD_NS before napping: a
 * 5 us nap may last the thread's timer slack longer, 50 us by default. With
 * passes of one copy each filling every slot and a nap per wait here, 4k
 * writes on zram ran at a sixth of their rate (H200); with this poll and
 * passes posted only for the kernel's next round (gpu_stream_posts_free)
 * they did not.
 */
static int resident_wait_room(struct gpu_buf *b, struct gpu_stream *s)
{
	uint64_t t0 = gpu_now_ns();
	unsigned int polls = 0;
	int ret;

	while (!gpu_kring_room(&s->kr)) {
		if (!gpu_poll_look(&polls))
			continue;
		if (gpu_past_deadline(b))
			return -ETIMEDOUT;
		if (gpu_now_ns() - t0 < GPU_KRING_YIELD_NS)
			continue;
		ret = gpu_stream_alive(s);
		if (ret < 0)
			return ret;
		gpu_nap(5000);
	}
	return 0;
}

int gpu_resident_post(struct gpu_buf *b, struct gpu_stream *s,
			 const struct gpu_copy *q, unsigned int n,
			 uint64_t ticket, bool *signalled)
{
	unsigned int i;
	int ret = 0;

	for (i = 0; i < n && !ret; i++) {
		while (!ret && !gpu_kring_add(&s->kr, &q[i]))
			ret = s->kr.open ? resident_send(b, s, 0) :
					   resident_wait_room(b, s);
	}
	if (!ret && s->kr.open) {
		ret = resident_send(b, s, ticket);
		*signalled = !ret && ticket;
	}
	return ret;
}

/*
 * A fence over two engines: the copy calls' stream writes ticket t where
 * calls were sent since its last fence, and the ring carries t where it
 * was posted to since its last one (gpu_stream_poll reads both).
 */
int gpu_resident_fence(struct gpu_buf *b, struct gpu_stream *s, uint64_t t,
			  bool signalled)
{
	int ret = 0;

	if (s->d_dirty) {
		ret = s->rt->write_value(b, s->stream, s->flag_dev, t);
		if (ret < 0)
			return ret;
		s->d_last = t;
		s->d_dirty = false;
	}
	if (!signalled && s->kr.dirty) {
		/* an empty pass takes a slot like any other */
		ret = resident_wait_room(b, s);
		if (!ret)
			ret = resident_send(b, s, t);
		signalled = !ret;
	}
	s->st.kernel_fences += signalled;
	return ret;
}

/*
 * An engine that said it is done with the newest ticket it was given is
 * done with every ticket so far; else with the ticket it said.
 */
static uint64_t done_through(const struct gpu_stream *s, uint64_t seen,
			     uint64_t last)
{
	return seen >= last ? s->issued : seen;
}

uint64_t gpu_resident_done(const struct gpu_stream *s)
{
	uint64_t d = done_through(s, __atomic_load_n(s->flag, __ATOMIC_ACQUIRE),
				  s->d_last);
	uint64_t k = done_through(s, gpu_kring_ticket(&s->kr),
				  s->kr.last_ticket);

	return d < k ? d : k;
}

uint64_t gpu_resident_yield_ns(const struct gpu_stream *s)
{
	return s->kr.r && s->buf->spin_ns ? GPU_KRING_YIELD_NS : 0;
}

void gpu_resident_free(struct gpu_stream *s)
{
	if (!s->kr.r)
		return;
	/* the kernel has left: what a diagnostic build counted is final */
	memcpy(s->st.kstat, s->kr.r->stats, sizeof(s->st.kstat));
	if (s->cq_mem)
		unwatch(s);
	resident_free(s, s->kr.r, s->kr.r_dev);
}
