// SPDX-License-Identifier: MIT
/*
 * The copy stream shared by the device providers: queue, batch, fence. See
 * stream.h. Per-runtime calls come from struct gpu_runtime; nothing here
 * knows CUDA or HIP.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include "kcopy.h"
#include "resident.h"
#include "stream.h"

/*
 * The host word the stream writes each fence's ticket into. Without stream
 * memory operations it stays unmapped and fences are polled as events.
 */
static void flag_map(struct gpu_buf *b, struct gpu_stream *s)
{
	size_t page = sysconf(_SC_PAGESIZE);
	void *p;

	if (!s->rt->map_host || !s->rt->write_value)
		return;
	p = gpu_host_pages(page);
	if (p == MAP_FAILED)
		return;
	s->flag = p;
	if (s->rt->map_host(b, p, page, &s->flag_dev) < 0) {
		gpu_host_pages_free(p, page);
		s->flag = NULL;
		s->flag_dev = 0;
		b->why[0] = '\0';	/* not an error: events do the job */
	}
}

static void flag_unmap(struct gpu_stream *s)
{
	if (!s->flag)
		return;
	s->rt->unmap_host(s->flag);
	gpu_host_pages_free(s->flag, sysconf(_SC_PAGESIZE));
	s->flag = NULL;
	s->flag_dev = 0;
}

/*
 * The copy kernel, where b->copy_mode asks for it and the runtime can load
 * it; else every copy goes through the runtime's copy calls and s->kwhy
 * keeps the runtime's reason ("" where it has no kernel at all).
 */
static void kcopy_setup(struct gpu_buf *b, struct gpu_stream *s)
{
	const struct gpu_runtime *rt = s->rt;
	int ret;

	s->mode = GPU_COPY_DMA;
	if (b->copy_mode == GPU_COPY_DMA || !rt->kernel_load)
		return;
	/* a run of neighbours folds into one descriptor: all must reach */
	if (b->size / GPU_KCOPY_ALIGN >= GPU_KDESC_D2H) {
		snprintf(s->kwhy, sizeof(s->kwhy), "the %zu GiB buffer is past the 32 GiB its descriptors reach",
			 b->size >> 30);
		return;
	}
	s->kl = malloc(sizeof(*s->kl));
	ret = s->kl ? rt->host_dev_addr(b, b->host, &s->host_dev) : -ENOMEM;
	if (!ret)
		ret = rt->kernel_load(b, gpu_kcopy_ptx(), "dbr_kcopy", &s->kmod);
	if (ret < 0) {
		snprintf(s->kwhy, sizeof(s->kwhy), "%s",
			 b->why[0] ? b->why : strerror(-ret));
		b->why[0] = '\0';	/* not an error: DMA does the job */
		free(s->kl);
		s->kl = NULL;
		s->kmod = NULL;
		return;
	}
	s->mode = b->copy_mode;
	gpu_resident_setup(b, s);
}

static void stream_free(struct gpu_stream *s)
{
	unsigned int i;

	gpu_resident_free(s);
	if (s->kmod)
		s->rt->kernel_unload(s->kmod);
	free(s->kl);
	flag_unmap(s);
	for (i = 0; i < s->nr_events; i++)
		s->rt->event_destroy(s->events[i]);
	if (s->wait_event)
		s->rt->event_destroy(s->wait_event);
	if (s->stream)
		s->rt->stream_destroy(s->stream);
	free(s->events);
	free(s->queued);
	free(s->dst);
	free(s->src);
	free(s->len);
}

/*
 * One stream, nr_fences events, room to queue two copies per fence slot
 * (a bounce read with gpu_sync has two) before an early submit is needed.
 */
int gpu_stream_init(struct gpu_buf *b, struct gpu_stream *s,
		    const struct gpu_runtime *rt, uint64_t dev_base,
		    unsigned int nr_fences)
{
	int ret;

	*s = (struct gpu_stream){ .buf = b, .rt = rt, .dev_base = dev_base };
	nr_fences = nr_fences ? nr_fences : 1;
	s->cap = 2 * nr_fences + 2;
	s->events = calloc(nr_fences, sizeof(*s->events));
	s->queued = calloc(s->cap, sizeof(*s->queued));
	s->dst = calloc(s->cap, sizeof(*s->dst));
	s->src = calloc(s->cap, sizeof(*s->src));
	s->len = calloc(s->cap, sizeof(*s->len));
	ret = -ENOMEM;
	if (!s->events || !s->queued || !s->dst || !s->src || !s->len)
		goto err;
	ret = rt->stream_create(b, &s->stream);
	if (ret < 0) {
		s->stream = NULL;
		goto err;
	}
	for (; s->nr_events < nr_fences; s->nr_events++) {
		ret = rt->event_create(b, &s->events[s->nr_events]);
		if (ret < 0)
			goto err;
	}
	ret = rt->event_create(b, &s->wait_event);
	if (ret < 0) {
		s->wait_event = NULL;
		goto err;
	}
	flag_map(b, s);
	kcopy_setup(b, s);
	return 0;
err:
	stream_free(s);
	return ret;
}

/*
 * With a deadline: poll until every fenced copy is done (a pass is always
 * fenced), or give up at the deadline with -ETIMEDOUT, copies still running.
 */
static int drain_by_deadline(struct gpu_buf *b, struct gpu_stream *s)
{
	int ret;

	s->nr_queued = 0;
	while ((ret = gpu_stream_poll(s, s->issued)) == 0 || !gpu_resident_idle(s)) {
		if (ret < 0)
			return ret;
		if (gpu_past_deadline(b))
			return -ETIMEDOUT;
		gpu_nap(50000);
	}
	return ret < 0 ? ret : 0;
}

/*
 * Copies still queued on the stream finish before anything is released;
 * past b's deadline they are left running and b->abandoned says so (the
 * provider then releases nothing they may touch).
 */
void gpu_stream_exit(struct gpu_buf *b, struct gpu_stream *s)
{
	struct gpu_stream *kept;

	if (b->deadline_ns && s->stream && drain_by_deadline(b, s) == -ETIMEDOUT) {
		b->abandoned = true;
		if (s->kr.r)
			gpu_kring_stop(&s->kr);
		/*
		 * s lives in its owner's state, which fio frees: what the
		 * running copies use stays reachable through a copy of it
		 */
		kept = malloc(sizeof(*kept));
		if (kept) {
			*kept = *s;
			gpu_keep_for_exit(kept);
		}
		return;
	}
	b->abandoned = false;
	if (s->stream)
		s->rt->stream_sync(b, s->stream);
	gpu_resident_leave(b, s);
	stream_free(s);
}

static bool overlaps(const struct gpu_copy *c, size_t off, size_t len)
{
	return off < c->off + c->len && c->off < off + len;
}

/* A queued copy touching the same bytes: the two must not share a batch. */
static bool conflicts(const struct gpu_stream *s, size_t off, size_t len)
{
	unsigned int i;

	for (i = 0; i < s->nr_queued; i++)
		if (overlaps(&s->queued[i], off, len))
			return true;
	return false;
}

int gpu_stream_copy(struct gpu_stream *s, enum gpu_copy_dir dir, size_t off,
		    size_t len)
{
	struct gpu_buf *b = s->buf;
	int ret;

	if (off > b->size || len > b->size - off)
		return -EINVAL;
	if (s->nr_queued == s->cap || conflicts(s, off, len)) {
		ret = gpu_stream_submit(s);
		if (ret < 0)
			return ret;
	}
	s->queued[s->nr_queued++] = (struct gpu_copy){ dir, off, len };
	s->st.copies++;
	return 0;
}

static void copy_addrs(const struct gpu_stream *s, const struct gpu_buf *b,
		       const struct gpu_copy *c, uint64_t *dst, uint64_t *src)
{
	uint64_t host = (uint64_t)(uintptr_t)b->host + c->off;
	uint64_t dev = s->dev_base + c->off;

	*dst = c->dir == GPU_H2D ? dev : host;
	*src = c->dir == GPU_H2D ? host : dev;
}

static int submit_one_by_one(struct gpu_buf *b, struct gpu_stream *s,
			     unsigned int first, unsigned int *sent)
{
	unsigned int i;
	int ret;

	for (i = first; i < s->nr_queued; i++) {
		const struct gpu_copy *c = &s->queued[i];

		ret = s->rt->copy(b, s->stream, c->dir, s->dst[i], s->src[i],
				  c->len);
		if (ret < 0)
			return ret;
		s->st.calls++;
		*sent = i + 1;
	}
	return 0;
}

/* One batch call for what is queued; a runtime without it copies singly. */
static int submit_batch(struct gpu_buf *b, struct gpu_stream *s,
			unsigned int *sent)
{
	size_t done = 0;
	int ret;

	if (s->nr_queued > 1 && !s->no_batch) {
		ret = s->rt->copy_batch(b, s->stream, s->dst, s->src, s->len,
					s->nr_queued, &done);
		if (ret == -ENOSYS) {
			s->no_batch = true;
		} else {
			if (!ret)
				done = s->nr_queued;
			*sent = done;
			s->st.calls += !ret;
			return ret;
		}
	}
	return submit_one_by_one(b, s, 0, sent);
}

static int by_dir_off(const void *a, const void *b)
{
	const struct gpu_copy *x = a, *y = b;

	if (x->dir != y->dir)
		return x->dir < y->dir ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

/*
 * Fold copies that continue one another into one. The runtime's cost is per
 * copy, not per byte, until copies are large, and fio lays its io_u buffers
 * out back to back, so small I/O finishing together often sit side by side.
 * Copies of one batch never overlap (gpu_stream_copy) and run in any order,
 * so one copy over a run of them does exactly what they would.
 */
static unsigned int coalesce_run(struct gpu_stream *s, struct gpu_copy *q,
				 unsigned int n)
{
	unsigned int i, m = 0;

	if (n < 2)
		return n;
	qsort(q, n, sizeof(*q), by_dir_off);
	for (i = 1; i < n; i++) {
		if (q[i].dir == q[m].dir && q[m].off + q[m].len == q[i].off)
			q[m].len += q[i].len;
		else
			q[++m] = q[i];
	}
	s->st.merged += n - (m + 1);
	return m + 1;
}

/*
 * The largest copy first. On the H200 (driver 580.159), a
 * cuMemcpyBatchAsync whose first copy is small (100-128 bytes) before 600
 * of 4 KiB, from 8 or 16 threads while other threads' streams run multi-MiB
 * copies, faults the GPU (Xid 13/32, CUDA_ERROR_LAUNCH_FAILED) in every
 * thread; the same batch with a 4 KiB copy first never did
 * (scripts/gpu-proof.d/batch_race.c, orders first and second). The
 * copies of a batch never overlap and run in any order, so which goes
 * first is free.
 */
static void largest_first(struct gpu_copy *q, unsigned int n)
{
	unsigned int i, big = 0;
	struct gpu_copy t;

	for (i = 1; i < n; i++)
		if (q[i].len > q[big].len)
			big = i;
	t = q[0];
	q[0] = q[big];
	q[big] = t;
}

static void coalesce(struct gpu_stream *s)
{
	s->nr_queued = coalesce_run(s, s->queued, s->nr_queued);
	if (s->nr_queued > 1)
		largest_first(s->queued, s->nr_queued);
}

/* Launch what l holds, if anything. */
static int launch_packed(struct gpu_buf *b, struct gpu_stream *s)
{
	struct gpu_klaunch *l = s->kl;
	int ret;

	if (!l->n)
		return 0;
	ret = s->rt->kernel_launch(b, s->stream, s->kmod, l);
	s->st.launches += !ret;
	gpu_kcopy_begin(l, s->host_dev, s->dev_base);
	return ret;
}

/*
 * The kernel's copies q[0, n) as launches of up to GPU_KCOPY_MAX; given a
 * ticket (every queued copy is the kernel's) and the stream's host word,
 * the last launch writes it (*signalled).
 */
static int launch_passes(struct gpu_buf *b, struct gpu_stream *s,
			 const struct gpu_copy *q, unsigned int n,
			 uint64_t ticket, bool *signalled)
{
	struct gpu_klaunch *l = s->kl;
	unsigned int i;
	int ret;

	gpu_kcopy_begin(l, s->host_dev, s->dev_base);
	for (i = 0; i < n; i++) {
		if (gpu_kcopy_add(l, &q[i]))
			continue;
		ret = launch_packed(b, s);
		if (ret < 0)
			return ret;
		gpu_kcopy_add(l, &q[i]);
	}
	if (ticket && s->flag && l->n) {
		l->flag = s->flag_dev;
		l->ticket = ticket;
	}
	*signalled = l->flag != 0;
	ret = launch_packed(b, s);
	if (ret < 0)
		*signalled = false;
	return ret;
}

/*
 * The copies the kernel takes (chosen by each copy's own length, before
 * neighbours fold: a run of 4 KiB reads stays the kernel's) leave the
 * queue as passes of up to GPU_KCOPY_MAX, both directions together,
 * posted to the resident kernel or launched; the rest stay queued for the
 * copy calls. Launches and calls share the stream, so a fence after them
 * covers both; the resident kernel is an engine of its own and fences its
 * passes itself. Given a ticket, where the kernel takes every queued copy
 * and the stream has its host word (resident: wherever the kernel has
 * copies), the last pass is the fence too: it writes the ticket itself
 * (*signalled), and the stream-write call after it is saved (kcopy_ptx.h
 * says why that matters).
 */
static int submit_kernel(struct gpu_buf *b, struct gpu_stream *s,
			 uint64_t ticket, bool *signalled)
{
	struct gpu_copy *q = s->queued, t;
	unsigned int i, nk = 0, n;
	int ret;

	for (i = 0; i < s->nr_queued; i++) {
		if (!gpu_kcopy_takes(s->mode, &q[i]))
			continue;
		t = q[nk];
		q[nk++] = q[i];
		q[i] = t;
	}
	n = coalesce_run(s, q, nk);
	if (s->kr.r)
		ret = gpu_resident_post(b, s, q, n, ticket, signalled);
	else
		ret = launch_passes(b, s, q, n,
				    nk == s->nr_queued ? ticket : 0, signalled);
	memmove(q, q + nk, (s->nr_queued - nk) * sizeof(*q));
	s->nr_queued -= nk;
	return ret;
}

/*
 * Send what is queued: the kernel's copies, then the copy calls' (ticket
 * and *signalled: see submit_kernel). On failure the copies not sent are
 * dropped: the caller fails the I/O they belonged to, after draining what
 * was sent (gpu_stream_drain).
 */
static int stream_send(struct gpu_buf *b, struct gpu_stream *s,
		       uint64_t ticket, bool *signalled)
{
	unsigned int i, sent = 0;
	uint64_t t0;
	int ret;

	*signalled = false;
	if (!s->nr_queued)
		return 0;
	/* posting to the resident kernel is stores to host memory, no call */
	if (s->kr.r) {
		ret = submit_kernel(b, s, ticket, signalled);
		if (ret < 0 || !s->nr_queued) {
			s->nr_queued = 0;
			return ret;
		}
	}
	t0 = gpu_now_ns();
	ret = s->rt->enter(b);
	if (!ret && s->kmod && !s->kr.r)
		ret = submit_kernel(b, s, ticket, signalled);
	coalesce(s);
	for (i = 0; !ret && i < s->nr_queued; i++) {
		copy_addrs(s, b, &s->queued[i], &s->dst[i], &s->src[i]);
		s->len[i] = s->queued[i].len;
	}
	if (!ret && s->nr_queued) {
		ret = submit_batch(b, s, &sent);
		s->d_dirty |= sent > 0;
	}
	s->nr_queued = 0;
	s->st.call_ns += gpu_now_ns() - t0;
	return ret;
}

int gpu_stream_submit(struct gpu_stream *s)
{
	bool signalled;
	int ret = stream_send(s->buf, s, 0, &signalled);

	/* what is queued next may copy the same bytes: after, not beside */
	if (s->kr.r)
		gpu_kring_order(&s->kr);
	return ret;
}

bool gpu_stream_posts(const struct gpu_stream *s, size_t len)
{
	struct gpu_copy c = { .off = 0, .len = len };

	return s->kr.r && gpu_kcopy_takes(s->mode, &c);
}

bool gpu_stream_posts_free(const struct gpu_stream *s, size_t len)
{
	return gpu_stream_posts(s, len) && gpu_kring_next_round(&s->kr);
}

enum gpu_copy_mode gpu_stream_copy_mode(const struct gpu_stream *s,
					const char **why)
{
	*why = s->kwhy;
	return s->mode;
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

void gpu_stream_describe(const struct gpu_stream *s, const struct gpu_buf *b,
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

static void *ticket_event(const struct gpu_stream *s, uint64_t ticket)
{
	return s->events[(ticket - 1) % s->nr_events];
}

/*
 * The runtime refused the stream write: fences already handed out have no
 * event behind them, so let the stream finish them before events take over.
 */
static int flag_give_up(struct gpu_buf *b, struct gpu_stream *s)
{
	int ret;

	flag_unmap(s);
	b->why[0] = '\0';
	ret = s->rt->stream_sync(b, s->stream);
	if (!ret)
		s->done = s->issued;
	return ret;
}

/* A fence as an event, polled and waited for through the runtime. */
static int fence_event(struct gpu_buf *b, struct gpu_stream *s, uint64_t t)
{
	int ret;

	/* an event is reused only once the fence it held has completed */
	if (t > s->nr_events && s->done < t - s->nr_events) {
		ret = gpu_stream_wait(s, t - s->nr_events);
		if (ret < 0)
			return ret;
	}
	return s->rt->event_record(b, ticket_event(s, t), s->stream);
}

/*
 * A fence on the one stream: the last launch wrote the ticket
 * (signalled), or a stream write does, or (no host word) an event.
 */
static int fence_stream(struct gpu_buf *b, struct gpu_stream *s, uint64_t t,
			bool signalled)
{
	int ret = 0;

	s->st.kernel_fences += signalled;
	if (s->flag && !signalled &&
	    s->rt->write_value(b, s->stream, s->flag_dev, t) < 0)
		ret = flag_give_up(b, s);
	if (!ret && !s->flag)
		ret = fence_event(b, s, t);
	return ret;
}

int gpu_stream_fence(struct gpu_stream *s, uint64_t *ticket)
{
	struct gpu_buf *b = s->buf;
	uint64_t t = s->issued + 1, t0;
	bool signalled, timed;
	int ret;

	ret = stream_send(b, s, t, &signalled);
	if (ret < 0)
		return ret;
	/* the ring alone (nothing sent to the copy calls) makes no runtime call */
	timed = !s->kr.r || s->d_dirty;
	t0 = timed ? gpu_now_ns() : 0;
	ret = s->kr.r ? gpu_resident_fence(b, s, t, signalled) :
			fence_stream(b, s, t, signalled);
	if (timed)
		s->st.call_ns += gpu_now_ns() - t0;
	if (ret < 0)
		return ret;
	s->issued = t;
	s->st.fences++;
	*ticket = t;
	return 0;
}

/* Stream order: a completed fence completes every older one. */
static void fence_done(struct gpu_stream *s, uint64_t ticket)
{
	if (ticket > s->done)
		s->done = ticket;
}

int gpu_stream_poll(struct gpu_stream *s, uint64_t ticket)
{
	struct gpu_buf *b = s->buf;
	int ret;

	if (ticket <= s->done)
		return 1;
	if (ticket > s->issued)
		return -EINVAL;
	if (s->kr.r) {
		fence_done(s, gpu_resident_done(s));
		return s->done >= ticket;
	}
	if (s->flag) {
		uint64_t seen = __atomic_load_n(s->flag, __ATOMIC_ACQUIRE);

		fence_done(s, seen);
		return seen >= ticket;
	}
	s->st.queries++;
	ret = s->rt->enter(b);
	if (!ret)
		ret = s->rt->event_query(b, ticket_event(s, ticket));
	if (ret == 1)
		fence_done(s, ticket);
	return ret;
}

/*
 * Sleep in the runtime until 'ticket' is done: on its own event, or with the
 * host flag on an event recorded now, after everything queued so far.
 */
static int sleep_for(struct gpu_buf *b, struct gpu_stream *s, uint64_t ticket)
{
	void *ev = s->flag ? s->wait_event : ticket_event(s, ticket);
	int ret = s->rt->enter(b);

	s->st.waits++;
	if (!ret && s->flag)
		ret = s->rt->event_record(b, ev, s->stream);
	if (!ret)
		ret = s->rt->event_sync(b, ev);
	if (!ret)
		fence_done(s, ticket);
	return ret;
}

/*
 * With b->stop, or for the resident kernel (no runtime call waits for a
 * ring): poll instead of sleeping in the runtime (which no stop can wake).
 * A resident pass first gets GPU_KRING_YIELD_NS of polling with the CPU's
 * pause hint, and a sched_yield every GPU_KRING_YIELD_EVERY_NS so that a
 * CPU shared with other threads is let go now and then; a sched_yield per
 * poll was a system call each time (H200, zram, 4k randread, 16 threads:
 * 2.88 us of CPU per I/O against 3.00, IOPS the same within the runs'
 * spread). Then 20 us naps for the first millisecond, then, for a copy that
 * slow, 200 us naps that also ask whether the job stops; from then on give
 * up stop_bound_ns later.
 */
static int wait_napping(struct gpu_stream *s, uint64_t ticket)
{
	struct gpu_buf *b = s->buf;
	uint64_t t0 = gpu_now_ns(), yield = gpu_resident_yield_ns(s), now;
	uint64_t yielded = t0;
	unsigned int polls = 0;
	int ret;

	while ((ret = gpu_stream_poll(s, ticket)) == 0) {
		if (!gpu_poll_look(&polls))
			continue;
		now = gpu_now_ns();
		if (now - t0 < yield) {
			if (now - yielded >= GPU_KRING_YIELD_EVERY_NS) {
				sched_yield();
				yielded = now;
			}
			continue;
		}
		ret = gpu_stream_alive(s);
		if (ret < 0)
			return ret;
		if (now - t0 < yield + 1000000) {
			gpu_nap(20000);
			continue;
		}
		if (!b->deadline_ns && b->stop && b->stop(b->stop_arg))
			b->deadline_ns = gpu_now_ns() + b->stop_bound_ns;
		if (gpu_past_deadline(b))
			return -ETIMEDOUT;
		gpu_nap(200000);
	}
	return ret < 0 ? ret : 0;
}

/* Spin on the fence for up to b->spin_ns, then sleep in the runtime. */
int gpu_stream_wait(struct gpu_stream *s, uint64_t ticket)
{
	struct gpu_buf *b = s->buf;
	uint64_t t0 = gpu_now_ns();
	unsigned int polls = 0;
	int ret;

	while ((ret = gpu_stream_poll(s, ticket)) == 0) {
		/* stopping: never sleep past the deadline in the runtime */
		if (b->deadline_ns) {
			if (gpu_past_deadline(b))
				return -ETIMEDOUT;
			gpu_nap(50000);
			continue;
		}
		if (b->spin_ns && !gpu_poll_look(&polls))
			continue;
		if (gpu_spin_over(t0, b->spin_ns))
			return b->stop || s->kr.r ? wait_napping(s, ticket) :
			       sleep_for(b, s, ticket);
	}
	return ret < 0 ? ret : 0;
}

int gpu_stream_drain(struct gpu_stream *s)
{
	struct gpu_buf *b = s->buf;
	int ret = s->rt->enter(b);

	if (!ret && b->deadline_ns)
		return drain_by_deadline(b, s);
	s->nr_queued = 0;
	if (!ret)
		ret = s->rt->stream_sync(b, s->stream);
	while (!ret && !gpu_resident_idle(s) && !(ret = gpu_stream_alive(s)))
		gpu_nap(20000);
	if (!ret)
		fence_done(s, s->issued);
	return ret;
}
