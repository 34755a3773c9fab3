// SPDX-License-Identifier: MIT
/*
 * The copy pipeline between the ring and the GPU copies; see pipeline.h for
 * the stages and the ordering rules. Nothing here knows fio or a runtime:
 * the ring is ring.c's, the copies go through the pipeline's copy stream
 * (gpu/copy/stream.h) over the buffer's runtime calls.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kring.h"
#include "pipeline.h"
#include "resident.h"

/*
 * A read the kernel watching the CQ copies carries its tag (kring.h) as its
 * user_data, and the ring finds the request by the same tag (ring.h): the
 * two layouts must agree on the tag bit and the slot.
 */
_Static_assert(GPU_KRING_CQ_TAGGED == DBR_TAG_BY_SLOT &&
	       GPU_KRING_CQ_SLOTS == DBR_TAG_SLOTS,
	       "a CQ tag (kring.h) is a ring tag by slot (ring.h)");

static void pfifo_init(struct dbr_pfifo *q)
{
	q->head = NULL;
	q->tail = &q->head;
}

static void pfifo_push(struct dbr_pfifo *q, struct dbr_pio *io)
{
	io->next = NULL;
	*q->tail = io;
	q->tail = &io->next;
}

static struct dbr_pio *pfifo_pop(struct dbr_pfifo *q)
{
	struct dbr_pio *io = q->head;

	q->head = io->next;
	if (!q->head)
		q->tail = &q->head;
	return io;
}

/*
 * A pass of this many I/O goes to the runtime at once: half the depth, so
 * that two passes can be in flight and one's copies overlap the I/O of the
 * other (see add_to_pass).
 */
static unsigned int pass_threshold(unsigned int depth)
{
	unsigned int n = depth / 2;

	if (n > DBR_PASS_MAX)
		n = DBR_PASS_MAX;
	return n ? n : 1;
}

/* A copy stream with a fence per I/O, for memory that has a runtime. */
static int pipe_stream_init(struct dbr_pipe *p)
{
	struct gpu_buf *b = p->buf;
	int ret;

	if (!b->prov || !b->prov->rt)
		return 0;
	ret = gpu_stream_init(b, &p->stream, b->prov->rt, b->dev_addr,
			      p->depth);
	if (ret < 0) {
		free(p->pass);
		p->pass = NULL;
		return ret;
	}
	p->stream_live = true;
	return 0;
}

/*
 * A wait for the kernel's copies of CQEs already posted (dbr_ring_wait_gpu),
 * now and then: start the kernel again where it left, and give up at the
 * job's stop deadline as the other copy waits do.
 */
static int pipe_kick(void *arg)
{
	struct dbr_pipe *p = arg;

	if (gpu_past_deadline(p->buf))
		return -ETIMEDOUT;
	return gpu_resident_kick(p->buf, &p->stream);
}

/* Why the CQ is not watched, in p->watch_why (what == NULL: ret's words). */
static void pipe_no_watch(struct dbr_pipe *p, const char *what, int ret)
{
	snprintf(p->watch_why, sizeof(p->watch_why), "%s",
		 what && what[0] ? what : strerror(-ret));
}

/*
 * gpu_watch_cq: the resident kernel watches the ring's CQ (its rings'
 * memory mapped for the GPU) and copies each tagged read's bytes as its
 * CQE comes, so that the copy starts when the I/O ends, not when this
 * thread next gets a CPU to reap it and send a pass. Needs a ring whose
 * completions are posted as they come (cqes_at_once) and one mapping for
 * both rings (IORING_FEAT_SINGLE_MMAP). Where any of it is missing the
 * reads' copies go in passes as before.
 */
static void pipe_watch_cq(struct dbr_pipe *p)
{
	struct dbr_ring_layout l;
	struct gpu_cq_offsets o;
	unsigned int i;
	int ret;

	if (!p->stream_live || p->p2p)
		return;
	if (p->ring->setup_flags & IORING_SETUP_DEFER_TASKRUN) {
		pipe_no_watch(p, "the ring holds completions until the thread enters (DEFER_TASKRUN)", 0);
		return;
	}
	if (dbr_ring_layout(p->ring, &l) < 0) {
		pipe_no_watch(p, "the kernel maps the SQ and CQ rings apart (no IORING_FEAT_SINGLE_MMAP)", 0);
		return;
	}
	p->slots = calloc(p->depth, sizeof(*p->slots));
	p->free_slots = calloc(p->depth, sizeof(*p->free_slots));
	if (!p->slots || !p->free_slots) {
		pipe_no_watch(p, NULL, -ENOMEM);
		goto fail;
	}
	o = (struct gpu_cq_offsets){
		.cq_tail	= l.cq_tail,
		.sq_tail	= l.sq_tail,
		.cqes		= l.cqes,
		.cq_mask	= l.cq_mask,
	};
	ret = gpu_resident_watch(p->buf, &p->stream, l.mem, l.len, l.fd, &o);
	if (ret < 0) {
		pipe_no_watch(p, ret == -ENOSYS ? "no resident copy kernel runs" :
				 p->buf->why, ret);
		p->buf->why[0] = '\0';	/* said as the watch's, not an error */
		goto fail;
	}
	for (i = 0; i < p->depth; i++)
		p->free_slots[i] = (uint16_t)i;
	p->nr_free = p->depth;
	p->cq_gpu = true;
	p->ring->gpu_done = gpu_resident_cq_done(&p->stream);
	p->ring->gpu_spin_ns = p->buf->spin_ns;
	p->ring->by_slot = p->slots;
	p->ring->kick = pipe_kick;
	p->ring->kick_arg = p;
	return;
fail:
	free(p->slots);
	free(p->free_slots);
	p->slots = NULL;
	p->free_slots = NULL;
}

int dbr_pipe_init(struct dbr_pipe *p, struct dbr_ring *ring,
		  struct gpu_buf *buf, unsigned int depth, bool p2p,
		  bool sync, bool watch)
{
	*p = (struct dbr_pipe){
		.ring	= ring,
		.buf	= buf,
		.p2p	= p2p,
		.sync	= sync,
		.copies	= dbr_pipe_copies(!buf->host_is_device, p2p, sync),
		.depth	= depth ? depth : 1,
	};
	int ret;

	p->full_pass = pass_threshold(p->depth);
	pfifo_init(&p->pre);
	pfifo_init(&p->post);
	pfifo_init(&p->ready);
	p->pass = calloc(p->depth, sizeof(*p->pass));
	if (!p->pass)
		return -ENOMEM;
	ret = pipe_stream_init(p);
	if (!ret && watch && p->depth > GPU_KRING_CQ_SLOTS)
		pipe_no_watch(p, "iodepth is over the CQ tag's slots", 0);
	else if (!ret && watch)
		pipe_watch_cq(p);
	return ret;
}

void dbr_pipe_exit(struct dbr_pipe *p)
{
	if (p->stream_live)
		gpu_stream_exit(p->buf, &p->stream);
	p->stream_live = false;
	if (p->cq_gpu) {
		p->ring->gpu_done = NULL;
		p->ring->by_slot = NULL;
		p->ring->kick = NULL;
		p->cq_gpu = false;
	}
	free(p->slots);
	free(p->free_slots);
	p->slots = NULL;
	p->free_slots = NULL;
	free(p->pass);
	p->pass = NULL;
}

bool dbr_pipe_idle(const struct dbr_pipe *p)
{
	return !dbr_ring_inflight(p->ring) && !p->pre.head && !p->post.head &&
	       !p->ready.head;
}

/* Reads end in GPU memory: their copies come after the ring. */
static bool copies_after(const struct dbr_pio *io)
{
	return io->req.op == DBR_OP_READ;
}

/*
 * bounce: the bytes pass through the host buffer, so a read lands in GPU
 * memory only after H2D and a write leaves it only after D2H. gpu_sync adds
 * the copy that keeps fio's view (verify, patterns) equal to the GPU's.
 * p2p: only gpu_sync copies.
 */
static void plan_copies(const struct dbr_pipe *p, struct dbr_pio *io)
{
	io->nr_copies = 0;
	if (!p->copies)
		return;
	if (io->req.op == DBR_OP_WRITE) {
		if (p->sync)
			io->copy[io->nr_copies++] = GPU_H2D;
		if (!p->p2p)
			io->copy[io->nr_copies++] = GPU_D2H;
	} else if (io->req.op == DBR_OP_READ) {
		if (!p->p2p)
			io->copy[io->nr_copies++] = GPU_H2D;
		if (p->sync)
			io->copy[io->nr_copies++] = GPU_D2H;
	}
}

static void make_ready(struct dbr_pipe *p, struct dbr_pio *io)
{
	io->stage = DBR_READY;
	pfifo_push(&p->ready, io);
}

/*
 * A copy call failed: whatever was sent still runs, so the stream drains
 * before any I/O of it comes back.
 */
static void fail_copy(struct dbr_pipe *p, struct dbr_pio *io, int err)
{
	io->error = -err;
	p->st.copy_errors++;
}

static void drain(struct dbr_pipe *p)
{
	gpu_stream_drain(&p->stream);
}

/* Fence what the pass queued so far: I/O first..end-1 gets the ticket. */
static int fence_upto(struct dbr_pipe *p, unsigned int *first,
		      unsigned int end)
{
	uint64_t ticket;
	int ret;

	ret = gpu_stream_fence(&p->stream, &ticket);
	if (ret < 0)
		return ret;
	for (; *first < end; (*first)++)
		p->pass[*first]->ticket = ticket;
	return 0;
}

/*
 * Queue the copies of the I/O in p->pass, round by round (an I/O's second
 * copy touches the bytes of its first, so it must go in a later batch), and
 * fence them: once per DBR_FENCE_BYTES of the last round, so that a large
 * I/O comes back as soon as its own copy is done while small ones share a
 * fence. On failure the I/O not yet fenced fail, after the drain.
 */
static void run_pass(struct dbr_pipe *p)
{
	unsigned int i, round, rounds = 1, first = 0;
	uint64_t t0 = dbr_prof_begin(), now = gpu_now_ns();
	size_t bytes = 0;
	int ret = 0;

	for (i = 0; i < p->nr_pass; i++) {
		p->pass[i]->copy_start = now;
		if (p->pass[i]->nr_copies > rounds)
			rounds = p->pass[i]->nr_copies;
	}
	for (round = 0; round < rounds && !ret; round++) {
		if (round)
			ret = gpu_stream_submit(&p->stream);
		for (i = 0; i < p->nr_pass && !ret; i++) {
			struct dbr_pio *io = p->pass[i];

			if (round < io->nr_copies)
				ret = gpu_stream_copy(&p->stream,
						      io->copy[round], io->off,
						      io->req.len);
			if (ret || round + 1 < rounds)
				continue;
			bytes += io->req.len;
			if (bytes >= DBR_FENCE_BYTES && i + 1 < p->nr_pass) {
				ret = fence_upto(p, &first, i + 1);
				bytes = 0;
			}
		}
	}
	if (!ret)
		ret = fence_upto(p, &first, p->nr_pass);
	if (ret < 0)
		drain(p);
	for (i = first; i < p->nr_pass; i++)
		fail_copy(p, p->pass[i], ret);
	p->st.copy_passes += !ret;
	p->nr_pass = 0;
	p->pass_reads = 0;
	p->pass_bytes = 0;
	p->pass_max = 0;
	dbr_prof_end(&p->ring->prof, DBR_PROF_PASS, t0);
}

/*
 * The open pass gathers the copies of every I/O that needs one, writes as
 * they are queued and reads as the ring finishes them (a commit's submit
 * reaps too: its enter asks for completions). Where a pass costs runtime
 * calls it goes when it is full (add_to_pass), when the engine is about to
 * wait with no older pass running (dbr_pipe_getevents_copies, pass_waits)
 * or, holding reads, when no older pass runs (pass_idle_stream), never
 * otherwise: fio queues io_us one at a time and then reaps, and always
 * reaps before it sleeps (thinktime, rate) or ends. While the older pass
 * runs the open one grows, so passes settle at full size, one running
 * while the next gathers. Where it costs none (flush_if_free) it goes as
 * soon as it has copies, but while I/O waits to be collected only with
 * reads in it (reap_collecting).
 */
static bool pass_full(const struct dbr_pipe *p)
{
	return p->nr_pass >= p->full_pass || p->pass_bytes >= DBR_FENCE_BYTES;
}

static void add_to_pass(struct dbr_pipe *p, struct dbr_pio *io)
{
	p->pass[p->nr_pass++] = io;
	p->pass_reads += copies_after(io);
	p->pass_bytes += io->req.len;
	if (io->req.len > p->pass_max)
		p->pass_max = io->req.len;
	if (pass_full(p))
		run_pass(p);
}

static void flush_pass(struct dbr_pipe *p)
{
	if (p->nr_pass)
		run_pass(p);
}

/*
 * The open pass goes at once where sending it costs no runtime call and no
 * wait and makes the kernel's next round (gpu_stream_posts_free: the
 * resident kernel, fewer than a round's passes waiting): its copies then
 * start as soon as the ring has finished the reads, while fio goes on
 * queueing, instead of when the engine next runs out of finished I/O.
 * Nothing is lost by small passes there: the kernel takes the passes posted
 * as one round. With a round's passes waiting the pass grows instead:
 * posted, it would wait for that round anyway, and passes of one copy each
 * (a collect of one I/O per call) would fill every slot of the ring.
 */
static void flush_if_free(struct dbr_pipe *p)
{
	if (p->nr_pass && gpu_stream_posts_free(&p->stream, p->pass_max))
		run_pass(p);
}

/*
 * 1 when the I/O's copies are done (or it failed), 0 while they run. A poll
 * that fails fails the I/O.
 */
static int copies_done(struct dbr_pipe *p, struct dbr_pio *io)
{
	int ret;

	if (io->error || !io->nr_copies)
		return 1;
	if (!io->ticket)
		return 0;
	ret = gpu_stream_poll(&p->stream, io->ticket);
	if (ret < 0) {
		drain(p);
		fail_copy(p, io, ret);
	}
	return ret != 0;
}

/*
 * How long copies take from queueing until the pipeline sees them done: what
 * they add to each I/O's latency. *now is read once per walk of a queue.
 */
static void account_copy(struct dbr_pipe *p, const struct dbr_pio *io,
			 uint64_t *now)
{
	if (io->error || !io->nr_copies)
		return;
	if (!*now)
		*now = gpu_now_ns();
	p->st.copy_ns += *now - io->copy_start;
	p->st.copied++;
}

/*
 * Move the head of the pre-ring queue onto the ring while its copies are
 * done: queue order is ring order. Failed I/O skips the ring.
 */
static void advance_pre(struct dbr_pipe *p)
{
	struct dbr_pio *io;
	uint64_t now = 0;
	int ret;

	while ((io = p->pre.head) &&
	       (copies_after(io) || copies_done(p, io))) {
		if (!io->error) {
			ret = dbr_ring_queue(p->ring, &io->req);
			if (ret == -EBUSY)
				return;
			if (ret < 0)
				io->error = -ret;
		}
		pfifo_pop(&p->pre);
		if (!copies_after(io))
			account_copy(p, io, &now);
		if (io->error)
			make_ready(p, io);
		else
			io->stage = DBR_IN_RING;
	}
}

/* dbr_pipe_queue's part for a pipeline with copies; io's fields are reset. */
int dbr_pipe_queue_copies(struct dbr_pipe *p, struct dbr_pio *io)
{
	int ret;

	plan_copies(p, io);
	/* the copies gpu_copy=auto gives the kernel: no other engine to fence */
	if (p->cq_gpu && io->nr_copies && io->copy[0] == GPU_H2D &&
	    copies_after(io) && p->nr_free &&
	    gpu_kcopy_takes(GPU_COPY_AUTO, &(struct gpu_copy){
			.dir = GPU_H2D, .off = io->off, .len = io->req.len })) {
		uint16_t slot = p->free_slots[--p->nr_free];

		p->slots[slot] = &io->req;
		io->req.tag = gpu_kring_cq_tag(slot, io->off, true);
		io->copy_start = gpu_now_ns();
	}
	if (io->nr_copies && !copies_after(io)) {
		add_to_pass(p, io);
	} else if (!p->pre.head) {
		ret = dbr_ring_queue(p->ring, &io->req);
		if (ret < 0)
			return ret;
		io->stage = DBR_IN_RING;
		return 0;
	}
	if (p->pre.head)
		p->st.held_back++;
	io->stage = DBR_PRE_RING;
	pfifo_push(&p->pre, io);
	return 0;
}

int dbr_pipe_commit_copies(struct dbr_pipe *p)
{
	advance_pre(p);
	return 0;
}

static void set_result(struct dbr_pio *io)
{
	int res = io->req.res;
	bool rw = io->req.op == DBR_OP_READ || io->req.op == DBR_OP_WRITE;

	if (res < 0)
		io->error = -res;
	else if (rw && (uint32_t)res < io->req.len)
		io->resid = io->req.len - res;
}

/* Off the ring: reads that end in GPU memory join the open copy pass. */
static void finish_ring_io(struct dbr_pipe *p, struct dbr_pio *io)
{
	set_result(io);
	if (io->req.tag) {	/* the kernel watching the CQ copied it */
		uint64_t now = 0;

		p->free_slots[p->nr_free++] = gpu_kring_cq_slot(io->req.tag);
		io->req.tag = 0;
		p->st.cq_copied += !io->error;
		if (io->nr_copies < 2 || io->error) {
			account_copy(p, io, &now);
			make_ready(p, io);
			return;
		}
		/* gpu_sync: the copy back to fio's view goes as before */
		io->copy[0] = io->copy[1];
		io->nr_copies = 1;
	}
	if (io->error || !io->nr_copies || !copies_after(io) || p->stopping) {
		make_ready(p, io);
		return;
	}
	io->stage = DBR_POST_COPY;
	pfifo_push(&p->post, io);
	add_to_pass(p, io);
}

/*
 * Everything the ring has finished (enter: ask the kernel for completions
 * it holds back first, where the CQ looks empty); reads' copies join the
 * open pass.
 */
static void reap_ring(struct dbr_pipe *p, bool enter)
{
	struct dbr_req *done[64];
	int n, i;

	do {
		n = enter ? dbr_ring_reap(p->ring, done, 64) :
			    dbr_ring_reap_cq(p->ring, done, 64);
		for (i = 0; i < n; i++)
			finish_ring_io(p, done[i]->owner);
	} while (n == 64);
}

/*
 * With copies, what the submit's enter found finished (it asks for the
 * completions too, so the CQ holds them without another enter) starts its
 * copies now; writes queued since the last pass start theirs.
 */
int dbr_pipe_submit(struct dbr_pipe *p)
{
	int ret = dbr_ring_submit(p->ring, 0);

	if (ret < 0 || !p->copies || !p->stream_live)
		return ret;
	if (dbr_ring_inflight(p->ring))
		reap_ring(p, false);
	flush_if_free(p);
	return ret;
}

static void advance_post(struct dbr_pipe *p)
{
	uint64_t now = 0;

	while (p->post.head && copies_done(p, p->post.head)) {
		account_copy(p, p->post.head, &now);
		make_ready(p, pfifo_pop(&p->post));
	}
}

static unsigned int collect(struct dbr_pipe *p, struct dbr_pio **done,
			    unsigned int max)
{
	unsigned int n = 0;

	while (p->ready.head && n < max) {
		done[n] = pfifo_pop(&p->ready);
		done[n++]->stage = DBR_IDLE;
	}
	return n;
}

/*
 * While a copy runs and the ring has I/O out, spin a while on both (from
 * t0, when the wait began): the copy may finish, or the ring may finish I/O
 * whose copies should start now rather than after this one. 1 when either
 * happened.
 */
static int spin_both(struct dbr_pipe *p, uint64_t ticket, uint64_t t0)
{
	unsigned int polls = 0;
	int ret;

	while (dbr_ring_inflight(p->ring)) {
		ret = gpu_stream_poll(&p->stream, ticket);
		if (ret)
			return ret;
		/* the ring's look is an enter (deferred task work) */
		if (!gpu_poll_look(&polls))
			continue;
		if (dbr_ring_ready(p->ring))
			return 1;
		if (gpu_spin_over(t0, p->buf->spin_ns))
			break;
	}
	return 0;
}

static uint64_t head_ticket(const struct dbr_pio *io)
{
	return io && !io->error ? io->ticket : 0;
}

/* The oldest fence a queue head waits on; 0: none. */
static uint64_t wait_ticket(const struct dbr_pipe *p)
{
	uint64_t post = head_ticket(p->post.head);
	uint64_t pre = head_ticket(p->pre.head);

	if (post && pre)
		return post < pre ? post : pre;
	return post ? post : pre;
}

/* Waiting for a fence failed: every I/O it covers fails, after the drain. */
static void fail_fenced(struct dbr_pipe *p, uint64_t ticket, int err)
{
	struct dbr_pfifo *q[] = { &p->post, &p->pre };
	struct dbr_pio *io;
	unsigned int i;

	drain(p);
	for (i = 0; i < 2; i++)
		for (io = q[i]->head; io; io = io->next)
			if (io->ticket && io->ticket <= ticket && !io->error)
				fail_copy(p, io, err);
}

/*
 * Block for the copies of fence 'ticket' (the wait began at t0). With ring
 * I/O out, never on the copy alone: spin on both a while, then sleep on the
 * ring for as long again, and let the caller look at both once more, so
 * that reads finishing meanwhile start their copies without waiting for
 * this one. With no ring I/O, on the oldest copy (its stream finishes in
 * order).
 */
static int wait_copies(struct dbr_pipe *p, uint64_t ticket, uint64_t t0)
{
	long spin = p->buf->spin_ns;
	int ret;

	ret = dbr_ring_submit(p->ring, 0);
	if (ret < 0)
		return ret;
	ret = spin_both(p, ticket, t0);
	if (!ret && dbr_ring_inflight(p->ring))
		return dbr_ring_wait_timeout(p->ring,
					     spin > 0 ? spin : DBR_RING_NAP_NS);
	if (!ret)
		ret = gpu_stream_wait(&p->stream, ticket);
	if (ret < 0)
		fail_fenced(p, ticket, ret);
	return 0;
}

/*
 * Block for progress: on the oldest copy a queue head waits on (the time
 * counted: what copies cost the caller in waiting), or with no copy, on
 * the ring.
 */
static int wait_progress(struct dbr_pipe *p)
{
	uint64_t ticket = wait_ticket(p), t0;
	int ret;

	if (!ticket && p->cq_gpu)
		return dbr_ring_wait(p->ring, 1);
	if (!ticket)
		return dbr_ring_submit(p->ring, dbr_ring_inflight(p->ring) ? 1 : 0);
	t0 = gpu_now_ns();
	ret = wait_copies(p, ticket, t0);
	p->st.wait_ns += gpu_now_ns() - t0;
	return ret;
}

/*
 * The open pass waits for the older one where sending it costs a runtime
 * call (no resident kernel takes it) and the engine is about to wait on
 * copies already sent: queued behind those it would start no sooner, and
 * reads the ring finishes meanwhile join it. Sent at every wait instead,
 * a pass took what one wake-up brought, a read or two when copies are
 * slow (the HIP double's 4k reads on zram at 5 us a copy: 1.01 copies a
 * runtime call). It goes when it is full, or once the older pass is
 * done: holding reads, at once (pass_idle_stream); else at the next wait
 * with no older pass running.
 */
static bool pass_waits(const struct dbr_pipe *p)
{
	return wait_ticket(p) && !gpu_stream_posts(&p->stream, p->pass_max);
}

/*
 * With no copy of the pipeline's still running the stream is idle, and an
 * open pass holding reads goes now: they wait for nothing else.
 */
static void pass_idle_stream(struct dbr_pipe *p)
{
	if (p->pass_reads && !wait_ticket(p))
		run_pass(p);
}

/* A wait that ended early (timeout, signal) is no error: loop again. */
static bool wait_failed(int ret)
{
	return ret < 0 && ret != -ETIME && ret != -EINTR;
}

/*
 * Nothing queued may stay unsubmitted past a getevents call, and what was
 * collected goes back even when waiting failed.
 */
static inline int getevents_end(struct dbr_pipe *p, unsigned int n, int ret)
{
	if (!wait_failed(ret) && dbr_ring_unsubmitted(p->ring))
		ret = dbr_ring_submit(p->ring, 0);
	return n || !wait_failed(ret) ? (int)n : ret;
}

/*
 * Up to max of the ring's completions straight into done[], for a pipeline
 * without copies: each is finished as it comes off the ring, and what does
 * not fit stays in the CQ for the next call. The kernel is asked for more
 * only when the CQ is empty from the start.
 */
static unsigned int reap_direct(struct dbr_pipe *p, struct dbr_pio **done,
				unsigned int max)
{
	struct dbr_req *req;
	struct dbr_pio *io;
	unsigned int n = 0;

	while (n < max && (req = dbr_ring_next(p->ring, !n))) {
		io = req->owner;
		set_result(io);
		io->stage = DBR_IDLE;
		done[n++] = io;
	}
	return n;
}

/*
 * No copies (host memory is the device's): only the ring holds I/O, so
 * there are no stages to walk; wait on the ring and hand over what it
 * finished. One enter submits what commit left and waits, as below.
 */
int dbr_pipe_getevents_direct(struct dbr_pipe *p, struct dbr_pio **done,
			      unsigned int min, unsigned int max)
{
	unsigned int n = 0;
	int ret;

	/* past the first round n < min: what is still to wait for */
	do {
		ret = dbr_ring_wait(p->ring, min - n);
		if (wait_failed(ret))
			break;
		n += reap_direct(p, done + n, max - n);
	} while (n < min && dbr_ring_inflight(p->ring));
	return getevents_end(p, n, ret);
}

/*
 * Reads the ring has finished start their copies now, even while earlier
 * I/O waits to be collected: fio collects one I/O a call by default, and
 * reads left on the ring until the ready queue emptied had the whole depth
 * finish, copy and come back in step, the copies' time a wait every round
 * (H200, zram, 4k reads at 8 threads: 0.64 of fio before, 0.78 after).
 * With I/O ready, what commit left goes in first, in the enter that also
 * runs the kernel's deferred completions, and the reap only reads the CQ;
 * then only a pass that holds reads goes: writes' copies sent a collect at
 * a time, a copy a pass, cost more than their early start gained (4k
 * writes on zram at 1-8 threads: 0.86-0.89 of fio at 4fef272, which sent
 * them so, against 1.00-1.08 at 52f422a).
 */
static int reap_collecting(struct dbr_pipe *p)
{
	bool ready = p->ready.head;
	int ret;

	if (ready && dbr_ring_unsubmitted(p->ring)) {
		ret = dbr_ring_submit(p->ring, 0);
		if (ret < 0)
			return ret;
	}
	reap_ring(p, !ready);
	if (!ready || p->pass_reads)
		flush_if_free(p);
	return 0;
}

int dbr_pipe_getevents_copies(struct dbr_pipe *p, struct dbr_pio **done,
			      unsigned int min, unsigned int max)
{
	unsigned int n = 0;
	int ret = 0;

	for (;;) {
		advance_pre(p);
		/*
		 * Only ring I/O outstanding: submit what commit left and wait
		 * for what is needed in one enter, rather than a non-blocking
		 * reap's enter and then a waiting one.
		 */
		if (!p->pre.head && !p->post.head && !p->ready.head) {
			ret = dbr_ring_wait(p->ring, min > n ? min - n : 0);
			if (wait_failed(ret))
				break;
		}
		ret = reap_collecting(p);
		if (wait_failed(ret))
			break;
		advance_post(p);
		pass_idle_stream(p);
		n += collect(p, done + n, max - n);
		if (n >= min || dbr_pipe_idle(p))
			break;
		/*
		 * about to wait: nothing may wait on a copy not yet sent, but
		 * on one sent the open pass may grow (pass_waits)
		 */
		if (p->nr_pass && !pass_waits(p)) {
			flush_pass(p);
			continue;
		}
		ret = wait_progress(p);
		if (wait_failed(ret))
			break;
	}
	return getevents_end(p, n, ret);
}
