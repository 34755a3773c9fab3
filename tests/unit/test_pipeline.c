// SPDX-License-Identifier: MIT
/*
 * The copy pipeline (engine/core/pipeline.c) driven the way fio drives it, over a
 * real io_uring ring and a real file, with its real copy stream (gpu/copy/stream.c)
 * over a fake GPU runtime whose copies really move bytes between the host
 * shadow and a "device" array, but only when a fence completes: late (after
 * a number of polls), several at once, only when waited for, or failing
 * (copy, fence and poll calls, at random). Fences complete in stream order,
 * as every runtime's do.
 *
 * Checked on every run:
 *  - requests reach the ring in the order they were queued (so a sync never
 *    passes an earlier write), and a write reaches it only after its copy;
 *  - every I/O comes back exactly once, and never while a copy on its bytes
 *    is pending;
 *  - bytes written from "GPU memory" reach the file, and reads land in "GPU
 *    memory" (a write pass, then a read pass that compares);
 *  - the counters: copies per I/O, passes, I/O failed by a copy;
 *  - pass sizes: driven as fio drives it by default (a commit per I/O, a
 *    collect of one), passes grow while copies run and stay single copies
 *    only while the "GPU" is idle.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "fake_kring.h"
#include "pipeline.h"
#include "session.h"
#include "kring.h"
#include "stream.h"

#define DEPTH		8
#define BS		4096
#define NR_BLOCKS	64

/* ------------------------------------------------------------------------ */
/* the fake runtime, under the real copy stream (gpu/copy/stream.c)         */

enum fake_mode {
	FAKE_IN_ORDER	= 0,
	FAKE_LATE	= 1,	/* a fence completes only after some polls */
	FAKE_BURST	= 2,	/* progress completes several fences at once */
	FAKE_FAIL	= 4,	/* copy, fence and poll calls fail at random */
	FAKE_STUCK	= 8,	/* fences complete only when waited for */
};

#define FAKE_BASE	0x7f0000000000ull	/* the "device" address */
#define FAKE_EVENTS	64

struct fcopy {
	enum gpu_copy_dir dir;
	size_t off, len;
	uint64_t fence;		/* 0 until an event is recorded after it */
	bool done;
};

static struct {
	int mode;
	struct gpu_buf *buf;
	unsigned char *dev;
	struct fcopy *c;
	unsigned int nr, cap;
	uint64_t fences;		/* events recorded */
	uint64_t ev_fence[FAKE_EVENTS];	/* the fence an event stands for */
	unsigned int nr_events;
	bool fence_done[1 << 16];
	unsigned long calls, fails, polls;
	unsigned int seed;
} fk;

static unsigned int rnd(unsigned int n)
{
	return (unsigned int)(rand_r(&fk.seed) % n);
}

static bool inject_failure(struct gpu_buf *b)
{
	if (!(fk.mode & FAKE_FAIL) || rnd(40))
		return false;
	fk.fails++;
	snprintf(b->why, sizeof(b->why), "fake: injected failure");
	return true;
}

/* Run every copy a fence covers, in the order they were sent. */
static void complete_fence(uint64_t t)
{
	unsigned int i;

	for (i = 0; i < fk.nr; i++) {
		struct fcopy *c = &fk.c[i];
		unsigned char *h = (unsigned char *)fk.buf->host + c->off;

		if (c->fence != t || c->done)
			continue;
		if (c->dir == GPU_H2D)
			memcpy(fk.dev + c->off, h, c->len);
		else
			memcpy(h, fk.dev + c->off, c->len);
		c->done = true;
	}
	fk.fence_done[t] = true;
}

static uint64_t oldest_pending_fence(void)
{
	uint64_t t;

	for (t = 1; t <= fk.fences; t++)
		if (!fk.fence_done[t])
			return t;
	return 0;
}

/* Some progress on the "GPU", in stream order: one fence, or a burst. */
static void make_progress(void)
{
	uint64_t t = oldest_pending_fence(), last;

	if (!t)
		return;
	last = t;
	if (fk.mode & FAKE_BURST)
		last += rnd((unsigned int)(fk.fences - t + 1));
	for (; t <= last; t++)
		complete_fence(t);
}

static bool pending_on(size_t off, size_t len)
{
	unsigned int i;

	for (i = 0; i < fk.nr; i++) {
		const struct fcopy *c = &fk.c[i];

		if (!c->done && off < c->off + c->len && c->off < off + len)
			return true;
	}
	return false;
}

static int fk_enter(struct gpu_buf *b)
{
	(void)b;
	return 0;
}

static int fk_stream_create(struct gpu_buf *b, void **stream)
{
	static int streams[64];
	static unsigned int made;

	(void)b;
	*stream = &streams[made++ % 64];
	return 0;
}

/* The stream runs to the end: every copy sent completes. */
static int fk_stream_sync(struct gpu_buf *b, void *stream)
{
	unsigned int i;
	uint64_t t;

	(void)b;
	fr_join(stream);	/* the resident kernel's stream: it has left */
	for (i = 0; i < fk.nr; i++)
		if (!fk.c[i].done && !fk.c[i].fence)
			fk.c[i].fence = fk.fences + 1;	/* runs all the same */
	for (t = 1; t <= fk.fences + 1; t++)
		if (!fk.fence_done[t])
			complete_fence(t);
	fk.fence_done[fk.fences + 1] = false;
	return 0;
}

static void fk_stream_destroy(void *stream)
{
	(void)stream;
}

static int fk_event_create(struct gpu_buf *b, void **event)
{
	(void)b;
	if (fk.nr_events == FAKE_EVENTS)
		return -ENOMEM;
	*event = &fk.ev_fence[fk.nr_events++];
	return 0;
}

static void fk_event_destroy(void *event)
{
	(void)event;
}

/* A fence after every copy sent so far; done at once in order mode. */
static int fk_event_record(struct gpu_buf *b, void *event, void *stream)
{
	unsigned int i;

	(void)stream;
	if (inject_failure(b))
		return -EIO;
	fk.fences++;
	for (i = 0; i < fk.nr; i++)
		if (!fk.c[i].fence && !fk.c[i].done)
			fk.c[i].fence = fk.fences;
	*(uint64_t *)event = fk.fences;
	if (!(fk.mode & (FAKE_LATE | FAKE_BURST | FAKE_STUCK)))
		complete_fence(fk.fences);
	return 0;
}

static int fk_event_query(struct gpu_buf *b, void *event)
{
	uint64_t t = *(uint64_t *)event;

	fk.polls++;
	if (inject_failure(b))
		return -EIO;
	if (!fk.fence_done[t] && !(fk.mode & FAKE_STUCK) && rnd(3) == 0)
		make_progress();
	return fk.fence_done[t];
}

static int fk_event_sync(struct gpu_buf *b, void *event)
{
	uint64_t t = *(uint64_t *)event;

	if (inject_failure(b))
		return -EIO;
	while (!fk.fence_done[t])
		make_progress();
	return 0;
}

static int fk_copy(struct gpu_buf *b, void *stream, enum gpu_copy_dir dir,
		   uint64_t dst, uint64_t src, size_t len)
{
	uint64_t dev = dir == GPU_H2D ? dst : src;

	(void)stream;
	if (dev < FAKE_BASE || dev - FAKE_BASE + len > b->size)
		return -EINVAL;
	if (inject_failure(b))
		return -EIO;
	if (fk.nr == fk.cap) {
		fk.cap = fk.cap ? 2 * fk.cap : 1024;
		fk.c = realloc(fk.c, fk.cap * sizeof(*fk.c));
	}
	fk.c[fk.nr++] = (struct fcopy){ .dir = dir, .off = dev - FAKE_BASE,
					.len = len };
	fk.calls++;
	return 0;
}

/* no batch call: the stream sends its copies one by one */
static int fk_copy_batch(struct gpu_buf *b, void *stream, uint64_t *dst,
			 uint64_t *src, size_t *len, size_t n, size_t *done)
{
	(void)b;
	(void)stream;
	(void)dst;
	(void)src;
	(void)len;
	(void)n;
	*done = 0;
	return -ENOSYS;
}

static const struct gpu_runtime fake_rt = {
	.enter		= fk_enter,
	.stream_create	= fk_stream_create,
	.stream_sync	= fk_stream_sync,
	.stream_destroy	= fk_stream_destroy,
	.event_create	= fk_event_create,
	.event_destroy	= fk_event_destroy,
	.event_record	= fk_event_record,
	.event_query	= fk_event_query,
	.event_sync	= fk_event_sync,
	.copy		= fk_copy,
	.copy_batch	= fk_copy_batch,
};

/* host memory for the shadow, an array for the "device" */
static int fake_alloc(struct gpu_buf *b)
{
	b->host = aligned_alloc(BS, b->size);
	fk.dev = calloc(1, b->size);
	if (!b->host || !fk.dev) {
		free(b->host);
		free(fk.dev);
		b->host = NULL;
		fk.dev = NULL;
		return -ENOMEM;
	}
	b->priv = fk.dev;
	b->dev_addr = FAKE_BASE;
	b->host_is_device = false;
	return 0;
}

static void fake_free(struct gpu_buf *b)
{
	if (!b->priv)
		return;
	free(b->host);
	free(fk.dev);
	b->host = NULL;
	b->priv = NULL;
	fk.dev = NULL;
}

static const struct gpu_provider fake_provider = {
	.name	= "fake",
	.alloc	= fake_alloc,
	.free	= fake_free,
	.rt	= &fake_rt,
};

/*
 * The same runtime with the resident copy kernel under it (fake_kring.h):
 * copies it takes (small ones) go through its ring, slow when fr.delay_us
 * says so; the rest stay the copy calls' above.
 */
#define FAKE_HOST_DEV	0x7e0000000000ull	/* the shadow's device address */
#define FAKE_RING_DEV	0x7d0000000000ull
#define FAKE_CQ_DEV	0x7c0000000000ull	/* a watched ring's memory */

static uint64_t *fk_word;	/* the stream's host word */
static bool fk_refuse_cq;	/* the watched ring's mapping is refused */

static int fk_map_host(struct gpu_buf *b, void *host, size_t len,
		       uint64_t *dev_addr)
{
	if (fk_word && fr.r && fk_refuse_cq) {
		snprintf(b->why, sizeof(b->why), "no room to page-lock the rings");
		return -ENOMEM;
	}
	if (fk_word && fr.r) {	/* both mapped: a ring the kernel watches */
		fr.cq_mem = host;
		fr.cq_dev = *dev_addr = FAKE_CQ_DEV;
	} else if (len == gpu_kring_size()) {
		fr.r = host;
		*dev_addr = FAKE_RING_DEV;
	} else {
		fk_word = host;
		*dev_addr = FAKE_RING_DEV + gpu_kring_size();
	}
	return 0;
}

static void fk_unmap_host(void *host)
{
	if (host == fr.cq_mem)
		fr.cq_mem = NULL;
	else if (host == fr.r)
		fr.r = NULL;
	else
		fk_word = NULL;
}

/* In stream order: after every copy call sent so far. */
static int fk_write_value(struct gpu_buf *b, void *stream, uint64_t dev_addr,
			  uint64_t value)
{
	fk_stream_sync(b, stream);
	if (!fk_word || dev_addr != FAKE_RING_DEV + gpu_kring_size())
		return -EINVAL;
	__atomic_store_n(fk_word, value, __ATOMIC_RELEASE);
	return 0;
}

static int fk_host_dev_addr(struct gpu_buf *b, void *host, uint64_t *dev)
{
	(void)b;
	(void)host;
	*dev = FAKE_HOST_DEV;
	return 0;
}

static int fk_kernel_load(struct gpu_buf *b, const char *ptx,
			  const char *entry, void **mod)
{
	(void)b;
	if (!strcmp(entry, "dbr_kring"))
		return fr_load(ptx, mod);
	if (strcmp(entry, "dbr_kcopy") || !strstr(ptx, ".entry dbr_kcopy("))
		return -ENOENT;
	*mod = &fk;
	return 0;
}

static void fk_kernel_unload(void *mod)
{
	(void)mod;
}

/* launches per pass are not what these runs are about */
static int fk_kernel_launch(struct gpu_buf *b, void *stream, void *mod,
			    const struct gpu_klaunch *l)
{
	(void)stream;
	(void)mod;
	(void)l;
	snprintf(b->why, sizeof(b->why), "fake: no launches");
	return -EIO;
}

static int fk_kernel_start(struct gpu_buf *b, void *stream, void *mod,
			   uint64_t ring, uint64_t host, uint64_t dev)
{
	if (mod != &fr || ring != FAKE_RING_DEV || host != FAKE_HOST_DEV ||
	    dev != FAKE_BASE || !fr.r)
		fr.bad++;
	fr.host = b->host;
	fr.dev = fk.dev;
	return fr_start(stream);
}

static struct gpu_runtime fake_rrt;

/* fake_rt's calls and the resident kernel's */
static void fake_rrt_init(void)
{
	fake_rrt = fake_rt;
	fake_rrt.map_host = fk_map_host;
	fake_rrt.unmap_host = fk_unmap_host;
	fake_rrt.write_value = fk_write_value;
	fake_rrt.host_dev_addr = fk_host_dev_addr;
	fake_rrt.kernel_load = fk_kernel_load;
	fake_rrt.kernel_unload = fk_kernel_unload;
	fake_rrt.kernel_launch = fk_kernel_launch;
	fake_rrt.kernel_start = fk_kernel_start;
}

static const struct gpu_provider fake_resident_provider = {
	.name	= "fake",
	.alloc	= fake_alloc,
	.free	= fake_free,
	.rt	= &fake_rrt,
};

/* copies the pipeline asked the stream for (neighbours fold before the runtime) */
static unsigned long stream_copies(const struct dbr_pipe *p)
{
	return dbr_pipe_copy_stats(p)->copies;
}

/* ------------------------------------------------------------------------ */
/* a job: the ring, the file, the I/O slots, and what the checks saw         */

struct job {
	struct dbr_session s;
	struct dbr_pio io[DEPTH];
	bool busy[DEPTH];
	unsigned long qseq[DEPTH];	/* queue order of the I/O in a slot */
	unsigned long next_seq, last_ring_seq;
	int fd;
	bool check_reads;		/* compare reads in "GPU memory" */
	unsigned int max;		/* events per collect, 0: DEPTH */
	/* what the checks found */
	unsigned long out_of_order, early_write, came_back, twice,
		      with_copy_pending, errors, queue_errors, sync_ops,
		      bad_bytes;
};

static void on_ring_queue(void *arg, const struct dbr_req *req)
{
	struct job *j = arg;
	const struct dbr_pio *io = req->owner;
	unsigned int slot = (unsigned int)(io - j->io);

	if (j->qseq[slot] < j->last_ring_seq)
		j->out_of_order++;
	j->last_ring_seq = j->qseq[slot];
	/* a write's bytes must have left "GPU memory" before the ring sees it */
	if (req->op == DBR_OP_WRITE && pending_on(io->off, req->len))
		j->early_write++;
}

/* the next job_init_on's session has the resident kernel watch its CQ */
static bool job_watch;

/* The job's session as the engine sets one up: ring, buffer, pipeline, host slot. */
static void job_init_on(struct job *j, const struct gpu_provider *prov,
			int mode, bool sync, unsigned int seed)
{
	struct dbr_sess_cfg c = {
		.ring = {
			.entries = DEPTH, .sqpoll_cpu = -1, .single_issuer = true,
			.cqes_at_once = job_watch,
		},
		.depth		= DEPTH,
		.nr_files	= 1,
		.sync		= sync,
		.watch_cq	= job_watch,
	};
	char path[] = "/tmp/dbr-pipeline.XXXXXX";
	enum dbr_sess_step step = DBR_STEP_MEM;
	int ret;

	memset(j, 0, sizeof(*j));
	memset(&fk, 0, sizeof(fk));
	fk.mode = mode;
	fk.seed = seed;
	j->fd = mkstemp(path);
	unlink(path);
	CHECK(j->fd >= 0 && ftruncate(j->fd, NR_BLOCKS * BS) == 0,
	      "scratch file");
	dbr_sess_init(&j->s);
	gpu_buf_init(&j->s.buf, prov, 0, 0);
	fk.buf = &j->s.buf;
	ret = dbr_sess_open(&j->s, &c, &step);
	if (!ret)
		ret = dbr_sess_alloc(&j->s, DEPTH * BS, &step);
	if (!ret)
		ret = dbr_sess_start(&j->s, &step);
	CHECK(ret == 0, "ring, buffer, pipeline and host slot set up (%d at step %d)",
	      ret, step);
	if (ret)
		exit(check_done("test_pipeline"));
	j->s.ring.on_queue = on_ring_queue;
	j->s.ring.on_queue_arg = j;
}

static void job_init(struct job *j, int mode, bool sync, unsigned int seed)
{
	job_init_on(j, &fake_provider, mode, sync, seed);
}

static void job_exit(struct job *j)
{
	dbr_sess_close(&j->s);
	CHECK(!j->s.ring.ready && !j->s.buf.host && !fk.dev,
	      "the session's teardown released ring and buffer");
	close(j->fd);
	free(fk.c);
}

static int free_slot(struct job *j)
{
	int i;

	for (i = 0; i < DEPTH; i++)
		if (!j->busy[i])
			return i;
	return -1;
}

static unsigned char pattern(unsigned int block, size_t i)
{
	return (unsigned char)(block * 131 + i * 7 + 1);
}

/* The GPU's copy of io_u slot holds block b's bytes, as a write's source. */
static void dev_pattern(int slot, unsigned int b)
{
	size_t i;

	for (i = 0; i < BS; i++)
		fk.dev[(size_t)slot * BS + i] = pattern(b, i);
}

static void check_read(struct job *j, const struct dbr_pio *io)
{
	unsigned int block = (unsigned int)(io->req.off / BS);
	size_t i;

	for (i = 0; i < BS; i++)
		j->bad_bytes += fk.dev[io->off + i] != pattern(block, i);
}

/* Without copies the bytes land in the host buffer itself. */
static void check_host_read(struct job *j, const struct dbr_pio *io)
{
	const unsigned char *p = (const unsigned char *)j->s.buf.host + io->off;
	unsigned int block = (unsigned int)(io->req.off / BS);
	size_t i;

	for (i = 0; i < BS; i++)
		j->bad_bytes += p[i] != pattern(block, i);
}

static void collect(struct job *j, unsigned int min)
{
	struct dbr_pio *done[DEPTH];
	unsigned int max = j->max ? j->max : DEPTH;
	int n, i;

	n = dbr_pipe_getevents(&j->s.pipe, done, min < max ? min : max, max);
	if (n < 0) {
		j->errors++;
		return;
	}
	for (i = 0; i < n; i++) {
		unsigned int slot = (unsigned int)(done[i] - j->io);

		if (!j->busy[slot])
			j->twice++;
		j->busy[slot] = false;
		j->came_back++;
		if (pending_on(done[i]->off, BS))
			j->with_copy_pending++;
		if (done[i]->error)
			j->errors++;
		else if (j->check_reads && done[i]->req.op == DBR_OP_READ)
			check_read(j, done[i]);
		else if (done[i]->req.op == DBR_OP_READ && !j->s.pipe.copies)
			check_host_read(j, done[i]);
	}
}

/* Queue one I/O the way fio does, reaping first when every slot is busy. */
static struct dbr_pio *queue_op(struct job *j, enum dbr_op op,
				unsigned int block)
{
	struct dbr_pio *io;
	int slot, ret;

	while ((slot = free_slot(j)) < 0)
		collect(j, 1);
	io = &j->io[slot];
	*io = (struct dbr_pio){
		.req = { .op = op, .fd = j->fd, .len = BS,
			 .off = (uint64_t)block * BS,
			 .addr = (uintptr_t)j->s.buf.host + (size_t)slot * BS },
		.off = (size_t)slot * BS,
	};
	j->qseq[slot] = ++j->next_seq;
	j->busy[slot] = true;
	j->sync_ops += op == DBR_OP_FSYNC || op == DBR_OP_FDATASYNC;
	ret = dbr_pipe_queue(&j->s.pipe, io);
	if (ret < 0) {
		j->busy[slot] = false;
		j->queue_errors++;
		return NULL;
	}
	/* fio commits after each queue at iodepth_batch=1, and in bursts */
	if (rnd(3))
		dbr_pipe_commit(&j->s.pipe);
	if (rnd(2))
		dbr_pipe_submit(&j->s.pipe);
	return io;
}

static void drain_job(struct job *j)
{
	dbr_pipe_commit(&j->s.pipe);
	while (free_slot(j) < 0 || !dbr_pipe_idle(&j->s.pipe)) {
		unsigned int busy = 0, i;

		for (i = 0; i < DEPTH; i++)
			busy += j->busy[i];
		if (!busy)
			break;
		collect(j, busy);
	}
}

/* ------------------------------------------------------------------------ */
/* runs                                                                     */

/*
 * Write every block from "GPU memory" with an fsync after every third
 * write, then read every block back into "GPU memory" and compare there.
 */
static void run_data(const char *name, int mode, bool sync, unsigned int seed)
{
	unsigned long copies;
	unsigned int b, order[NR_BLOCKS];
	struct job j;

	job_init(&j, mode, sync, seed);
	for (b = 0; b < NR_BLOCKS; b++) {
		int slot;

		while ((slot = free_slot(&j)) < 0)
			collect(&j, 1);
		dev_pattern(slot, b);
		/* fio's view, for gpu_sync: the same bytes */
		memcpy((char *)j.s.buf.host + (size_t)slot * BS,
		       fk.dev + (size_t)slot * BS, BS);
		queue_op(&j, DBR_OP_WRITE, b);
		if (b % 3 == 2)
			queue_op(&j, DBR_OP_FSYNC, 0);
	}
	drain_job(&j);
	for (b = 0; b < NR_BLOCKS; b++)
		order[b] = b;
	for (b = NR_BLOCKS - 1; b > 0; b--) {
		unsigned int k = rnd(b + 1), t = order[b];

		order[b] = order[k];
		order[k] = t;
	}
	j.check_reads = true;
	for (b = 0; b < NR_BLOCKS; b++)
		queue_op(&j, DBR_OP_READ, order[b]);
	drain_job(&j);
	copies = stream_copies(&j.s.pipe);
	CHECK(!j.out_of_order && !j.early_write,
	      "%s: ring order is queue order, %lu syncs after their writes, no write before its copy",
	      name, j.sync_ops);
	CHECK(j.came_back == 2 * NR_BLOCKS + j.sync_ops && !j.twice &&
	      !j.with_copy_pending,
	      "%s: %lu I/O back exactly once (%lu twice), none with a copy pending (%lu)",
	      name, j.came_back, j.twice, j.with_copy_pending);
	CHECK(!j.bad_bytes && !j.errors && !j.queue_errors,
	      "%s: data through \"GPU memory\" both ways: %lu bad bytes, %lu errors",
	      name, j.bad_bytes, j.errors + j.queue_errors);
	CHECK(copies == (sync ? 4u : 2u) * NR_BLOCKS &&
	      j.s.pipe.st.copy_passes <= fk.fences && !j.s.pipe.st.copy_errors,
	      "%s: %lu copies (%s per I/O), %lu passes, %lu fences, %lu runtime copy calls",
	      name, copies, sync ? "2" : "1", j.s.pipe.st.copy_passes,
	      (unsigned long)fk.fences, fk.calls);
	job_exit(&j);
}

/*
 * No copies (gpu=host: the host buffer is the device's): the ring's
 * completions go straight to the caller. Collected one at a time, as fio
 * asks by default, and in batches; with a quiesce (what registering a file
 * does) now and then, so some come back through the ring's stash.
 */
static void run_no_copies(unsigned int max)
{
	unsigned int b, i;
	struct job j;
	int slot;

	job_init(&j, FAKE_IN_ORDER, false, 7 + max);
	dbr_pipe_exit(&j.s.pipe);
	j.s.buf.host_is_device = true;
	CHECK(dbr_pipe_init(&j.s.pipe, &j.s.ring, &j.s.buf, DEPTH, false, false, false) == 0 &&
	      !j.s.pipe.copies, "no copies: pipeline set up without a copy stage");
	j.max = max;
	for (b = 0; b < NR_BLOCKS; b++) {
		while ((slot = free_slot(&j)) < 0)
			collect(&j, 1);
		for (i = 0; i < BS; i++)
			((unsigned char *)j.s.buf.host)[(size_t)slot * BS + i] =
				pattern(b, i);
		queue_op(&j, DBR_OP_WRITE, b);
		if (b % 5 == 4)
			queue_op(&j, DBR_OP_FDATASYNC, 0);
	}
	drain_job(&j);
	for (b = 0; b < NR_BLOCKS; b++) {
		queue_op(&j, DBR_OP_READ, (b * 37) % NR_BLOCKS);
		if (b % 9 == 8) {
			dbr_pipe_submit(&j.s.pipe);
			dbr_ring_quiesce(&j.s.ring);
		}
	}
	drain_job(&j);
	CHECK(!j.out_of_order && j.came_back == 2 * NR_BLOCKS + j.sync_ops &&
	      !j.twice && dbr_pipe_idle(&j.s.pipe),
	      "no copies, %u per collect: ring order is queue order, %lu I/O back exactly once (%lu twice)",
	      max, j.came_back, j.twice);
	CHECK(!j.bad_bytes && !j.errors && !j.queue_errors && !fk.nr,
	      "no copies, %u per collect: data both ways, %lu bad bytes, %lu errors, %u copies",
	      max, j.bad_bytes, j.errors + j.queue_errors, fk.nr);
	job_exit(&j);
}

/*
 * Which pipelines have a copy stage: device memory with bounce, or with p2p
 * and gpu_sync; p2p without gpu_sync plans no copy and takes the direct path
 * off the ring, as host memory does.
 */
static void run_copy_stage(void)
{
	static const struct { bool host, p2p, sync, copies; } c[] = {
		{ false, false, false, true }, { false, false, true, true },
		{ false, true, true, true }, { false, true, false, false },
		{ true, false, false, false }, { true, true, true, false },
	};
	unsigned int i;
	struct job j;

	job_init(&j, FAKE_IN_ORDER, false, 9);
	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		dbr_pipe_exit(&j.s.pipe);
		j.s.buf.host_is_device = c[i].host;
		CHECK(dbr_pipe_init(&j.s.pipe, &j.s.ring, &j.s.buf, DEPTH, c[i].p2p,
				    c[i].sync, false) == 0 &&
		      j.s.pipe.copies == c[i].copies,
		      "%s memory, %s, gpu_sync=%d: %s", c[i].host ? "host" : "device",
		      c[i].p2p ? "p2p" : "bounce", c[i].sync,
		      c[i].copies ? "copy stage" : "direct path, no copy stage");
	}
	job_exit(&j);
}

/* Random writes, reads and syncs with copies that fail now and then. */
static void run_failures(const char *name, int mode, unsigned int seed)
{
	unsigned long ops = 0;
	struct job j;

	job_init(&j, mode | FAKE_FAIL, false, seed);
	for (ops = 0; ops < 3000; ops++) {
		unsigned int r = rnd(10);

		queue_op(&j, r < 4 ? DBR_OP_WRITE : r < 8 ? DBR_OP_READ :
			 r == 8 ? DBR_OP_FSYNC : DBR_OP_FDATASYNC,
			 rnd(NR_BLOCKS));
	}
	drain_job(&j);
	CHECK(!j.out_of_order && !j.early_write,
	      "%s: ring order is queue order under failures", name);
	CHECK(j.came_back + j.queue_errors == ops && !j.twice &&
	      !j.with_copy_pending,
	      "%s: all back exactly once (%lu back, %lu twice), none with a copy pending (%lu)",
	      name, j.came_back, j.twice, j.with_copy_pending);
	CHECK(fk.fails > 0 && j.s.pipe.st.copy_errors > 0 && j.errors > 0,
	      "%s: %lu injected failures failed %lu I/O (%lu errors seen)",
	      name, fk.fails, j.s.pipe.st.copy_errors, j.errors);
	job_exit(&j);
}

/* An fsync queued while writes wait for slow copies must wait too. */
static void run_sync_behind_slow_writes(void)
{
	struct job j;
	int i;

	job_init(&j, FAKE_STUCK, false, 7);
	for (i = 0; i < DEPTH / 2; i++) {
		queue_op(&j, DBR_OP_WRITE, (unsigned int)i);
		queue_op(&j, DBR_OP_FSYNC, 0);
	}
	dbr_pipe_commit(&j.s.pipe);
	CHECK(j.s.ring.inflight == 0 && j.s.pipe.st.held_back == DEPTH - 1,
	      "a write's copy pending holds back all %d after it: %u on the ring, %lu held",
	      DEPTH - 1, j.s.ring.inflight, j.s.pipe.st.held_back);
	drain_job(&j);
	CHECK(!j.out_of_order && j.came_back == DEPTH && !j.errors,
	      "then all %lu reach the ring in queue order and come back", j.came_back);
	job_exit(&j);
}

/*
 * Queue one I/O of op on block b and commit it as fio does when that took
 * its last free io_u: commit leaves the submit to the getevents that follows.
 */
static void queue_held(struct job *j, enum dbr_op op, unsigned int b)
{
	int slot = free_slot(j);

	j->io[slot] = (struct dbr_pio){
		.req = { .op = op, .fd = j->fd, .len = BS,
			 .off = (uint64_t)b * BS,
			 .addr = (uintptr_t)j->s.buf.host + (size_t)slot * BS },
		.off = (size_t)slot * BS,
	};
	j->qseq[slot] = ++j->next_seq;
	j->busy[slot] = true;
	CHECK(dbr_pipe_queue(&j->s.pipe, &j->io[slot]) == 0, "queued");
	dbr_pipe_commit(&j->s.pipe);
}

/* Queue one I/O of op on block b, commit and submit it, as fio does. */
static void queue_committed(struct job *j, enum dbr_op op, unsigned int b)
{
	queue_held(j, op, b);
	dbr_pipe_submit(&j->s.pipe);
}

/* An fsync as fio's fsync=N queues one, once an io_u is free. */
static void queue_sync(struct job *j)
{
	while (free_slot(j) < 0)
		collect(j, 1);
	queue_committed(j, DBR_OP_FSYNC, 0);
	j->sync_ops++;
}

/*
 * When a pass of writes goes: below full size it waits while the engine
 * need not (commits, a reap that has what it needs), goes at once when
 * full, and goes before the engine waits on it, so no copy waits on
 * anything but copies sent.
 */
static void run_write_pass_rule(void)
{
	unsigned int full, i;
	struct dbr_pio *done[DEPTH];
	struct job j;
	int n;

	job_init(&j, FAKE_STUCK, false, 13);
	full = j.s.pipe.full_pass;
	for (i = 0; i + 1 < full; i++)
		queue_committed(&j, DBR_OP_WRITE, i);
	n = dbr_pipe_getevents(&j.s.pipe, done, 0, DEPTH);
	CHECK(n == 0 && j.s.pipe.st.copy_passes == 0 && stream_copies(&j.s.pipe) == 0 &&
	      !j.s.pipe.st.wait_ns,
	      "writes: %u committed and a reap that need not wait: no copy sent (%lu passes), no time waited",
	      full - 1, j.s.pipe.st.copy_passes);
	queue_committed(&j, DBR_OP_WRITE, i++);
	CHECK(j.s.pipe.st.copy_passes == 1 && stream_copies(&j.s.pipe) == full,
	      "writes: the %uth fills the pass, sent at once: %lu pass of %lu copies",
	      full, j.s.pipe.st.copy_passes, stream_copies(&j.s.pipe));
	queue_committed(&j, DBR_OP_WRITE, i++);
	collect(&j, 1);
	CHECK(j.s.pipe.st.copy_passes == 2 && stream_copies(&j.s.pipe) == full + 1 &&
	      j.s.pipe.st.wait_ns > 0,
	      "writes: one more, then a reap that must wait: sent before the wait on it (%lu passes, %lu copies), the wait counted (%llu ns)",
	      j.s.pipe.st.copy_passes, stream_copies(&j.s.pipe),
	      (unsigned long long)j.s.pipe.st.wait_ns);
	drain_job(&j);
	CHECK(!j.out_of_order && !j.early_write && !j.errors &&
	      j.came_back == full + 1 && !j.with_copy_pending,
	      "writes: then all %lu back once, in order, none with a copy pending",
	      j.came_back);
	job_exit(&j);
}

/*
 * When a pass of reads goes (copy calls, no resident kernel): at once when
 * no copy of the pipeline runs; while one runs, it gathers what the ring
 * finishes, through reaps and through a wait on the running pass, until
 * it is full or that pass is done (pass_waits, pass_idle_stream).
 */
static void run_read_pass_rule(void)
{
	struct dbr_pio *done[DEPTH];
	unsigned int full, i, b = 0;
	struct job j;

	job_init(&j, FAKE_STUCK, false, 13);
	full = j.s.pipe.full_pass;
	for (i = 0; i + 1 < full; i++)
		queue_committed(&j, DBR_OP_READ, b++);
	dbr_pipe_getevents(&j.s.pipe, done, 0, DEPTH);
	CHECK(j.s.pipe.st.copy_passes == 1 && stream_copies(&j.s.pipe) == full - 1 &&
	      !j.s.pipe.st.wait_ns,
	      "reads: %u off the ring, no copy running: sent at the reap as one pass (%lu passes, %lu copies), no time waited",
	      full - 1, j.s.pipe.st.copy_passes, stream_copies(&j.s.pipe));
	for (i = 0; i + 1 < full; i++)
		queue_committed(&j, DBR_OP_READ, b++);
	dbr_pipe_getevents(&j.s.pipe, done, 0, DEPTH);
	CHECK(j.s.pipe.st.copy_passes == 1 && j.s.pipe.nr_pass == full - 1 &&
	      !j.s.pipe.st.wait_ns,
	      "reads: %u more while that pass runs: they gather in the open pass (%u there, %lu passes)",
	      full - 1, j.s.pipe.nr_pass, j.s.pipe.st.copy_passes);
	queue_committed(&j, DBR_OP_READ, b++);
	dbr_pipe_getevents(&j.s.pipe, done, 0, DEPTH);
	CHECK(j.s.pipe.st.copy_passes == 2 && stream_copies(&j.s.pipe) == 2 * full - 1,
	      "reads: the %uth fills the open pass, sent at once: %lu passes of %lu copies",
	      full, j.s.pipe.st.copy_passes, stream_copies(&j.s.pipe));
	queue_committed(&j, DBR_OP_READ, b++);
	collect(&j, 1);
	CHECK(j.s.pipe.st.wait_ns > 0 && j.came_back >= 1,
	      "reads: one more, then a reap that must wait: it waits on the running pass (%llu ns) and hands back %lu",
	      (unsigned long long)j.s.pipe.st.wait_ns, j.came_back);
	drain_job(&j);
	CHECK(!j.out_of_order && !j.errors && j.came_back == b &&
	      !j.with_copy_pending && stream_copies(&j.s.pipe) == b,
	      "reads: then all %lu back once, in order, none with a copy pending, one copy each (%lu)",
	      j.came_back, stream_copies(&j.s.pipe));
	job_exit(&j);
}

/*
 * fio's default batching, one I/O per commit and one per collect: the reads
 * the ring finished since the engine last waited go to the runtime as one
 * pass, with slow copies and with copies done at once.
 */
static void run_pass_growth(const char *name, int mode, enum dbr_op op)
{
	unsigned long passes, copies;
	unsigned int b;
	struct job j;
	int slot;

	job_init(&j, mode, false, 11);
	for (b = 0; b < 4 * NR_BLOCKS; b++) {
		while ((slot = free_slot(&j)) < 0)
			collect(&j, 1);
		j.io[slot] = (struct dbr_pio){
			.req = { .op = op, .fd = j.fd, .len = BS,
				 .off = (uint64_t)(b % NR_BLOCKS) * BS,
				 .addr = (uintptr_t)j.s.buf.host +
					 (size_t)slot * BS },
			.off = (size_t)slot * BS,
		};
		j.qseq[slot] = ++j.next_seq;
		j.busy[slot] = true;
		CHECK(dbr_pipe_queue(&j.s.pipe, &j.io[slot]) == 0, "queued");
		dbr_pipe_commit(&j.s.pipe);
		dbr_pipe_submit(&j.s.pipe);
	}
	drain_job(&j);
	passes = j.s.pipe.st.copy_passes;
	copies = stream_copies(&j.s.pipe);
	CHECK(!j.out_of_order && !j.early_write && !j.errors &&
	      j.came_back == 4 * NR_BLOCKS && !j.with_copy_pending,
	      "%s: order kept, all back once, no copy pending", name);
	CHECK(passes && copies >= 2 * passes && passes <= fk.fences,
	      "%s: a commit and a collect per I/O: %lu copies in %lu passes (>= 2 per pass)",
	      name, copies, passes);
	job_exit(&j);
}

/*
 * With the resident kernel (slow: 2 ms a round), where a pass costs no
 * runtime call: reads the ring has finished go to it when the engine first
 * sees them, at a commit's submit or a reap that need not wait, where the
 * copy calls' passes wait to fill (run_pass_rule); writes' copies go at
 * their commit. Then fio's default batching, a commit per I/O and a collect
 * of one, writes every block from "GPU memory" and reads it back there in
 * another order: bytes where they belong (a write that reached the ring
 * before its copy, or a read back before its copy, would show), ring order
 * queue order, each I/O back once, the ring never over-full.
 */
static void run_resident(void)
{
	struct dbr_pio *done[DEPTH];
	const struct gpu_stream_stats *cs;
	unsigned int b, full, spins;
	struct job j;
	int slot;

	fake_rrt_init();
	fr_reset(2000, 1000000000);
	job_init_on(&j, &fake_resident_provider, FAKE_IN_ORDER, false, 17);
	cs = dbr_pipe_copy_stats(&j.s.pipe);
	CHECK(j.s.pipe.stream.kr.r && fr.starts == 1,
	      "resident: the stream runs the resident kernel (%u starts)", fr.starts);
	full = j.s.pipe.full_pass;
	for (b = 0; b + 1 < full; b++)
		queue_committed(&j, DBR_OP_READ, b);
	for (spins = 0; j.s.ring.inflight && spins < 100000; spins++)
		dbr_pipe_getevents(&j.s.pipe, done, 0, DEPTH);
	CHECK(!j.s.ring.inflight && cs->passes >= 1 && stream_copies(&j.s.pipe) == full - 1,
	      "resident: %u reads off the ring, reaps that need not wait: their %lu copies already posted in %lu passes",
	      full - 1, stream_copies(&j.s.pipe), cs->passes);
	drain_job(&j);
	CHECK(j.came_back == full - 1 && !j.errors, "resident: and back (%lu)",
	      j.came_back);
	j.came_back = 0;
	for (b = 0; b < NR_BLOCKS; b++) {
		while ((slot = free_slot(&j)) < 0)
			collect(&j, 1);
		dev_pattern(slot, b);
		memset((char *)j.s.buf.host + (size_t)slot * BS, 0xee, BS);
		queue_committed(&j, DBR_OP_WRITE, b);
		if (b % 3 == 2)
			queue_sync(&j);
	}
	drain_job(&j);
	j.check_reads = true;
	for (b = 0; b < NR_BLOCKS; b++) {
		while (free_slot(&j) < 0)
			collect(&j, 1);
		queue_committed(&j, DBR_OP_READ, (b * 37) % NR_BLOCKS);
	}
	drain_job(&j);
	CHECK(!j.out_of_order && j.came_back == 2 * NR_BLOCKS + j.sync_ops &&
	      !j.twice && !j.bad_bytes && !j.errors,
	      "resident: %lu I/O back once (%lu twice) in queue order, %lu fsyncs after their writes, %lu bad bytes, %lu errors",
	      j.came_back, j.twice, j.sync_ops, j.bad_bytes, j.errors);
	CHECK(!fr.bad && fr.most_posted <= GPU_KRING_SLOTS && cs->passes > 2 &&
	      !fk.calls,
	      "resident: %lu passes, at most %u posted at once, no copy call (%lu)",
	      cs->passes, fr.most_posted, fk.calls);
	job_exit(&j);
	CHECK(!fr.have_th, "resident: the kernel left with the stream");
}

/* Every block of the job's file holds pattern(block, i), written past the pipeline. */
static void fill_file(struct job *j)
{
	unsigned char buf[BS];
	unsigned int b;
	size_t i;

	for (b = 0; b < NR_BLOCKS; b++) {
		for (i = 0; i < BS; i++)
			buf[i] = pattern(b, i);
		CHECK(pwrite(j->fd, buf, BS, (off_t)b * BS) == BS, "block %u written", b);
	}
}

/*
 * gpu_watch_cq: the resident kernel watches the ring's CQ and copies each
 * read as its CQE comes (the fake: a round of up to 32 CQEs after
 * fr.delay_us, copied last first). A slow kernel: reads whose CQEs are
 * posted do not come back before their copies (the reap stops at the
 * kernel's count), then all do, bytes where they belong. Then writes
 * (through passes), fsyncs and reads mixed, collected one a call as fio
 * does: ring order queue order, each back once, reads from the CQ and
 * writes through passes. Last, the kernel leaves when idle and the next
 * wait for a copy starts it again.
 */
static void run_watch_cq(void)
{
	struct dbr_pio *done[DEPTH];
	unsigned int b, i, reads = 0;
	unsigned long passes;
	struct job j;
	int n, slot;

	fake_rrt_init();
	fr_reset(20000, 1000000000);
	job_watch = true;
	job_init_on(&j, &fake_resident_provider, FAKE_IN_ORDER, false, 29);
	job_watch = false;
	CHECK(j.s.pipe.cq_gpu && j.s.pipe.stream.cq_mem && fr.cq_mem &&
	      !(j.s.ring.setup_flags & IORING_SETUP_DEFER_TASKRUN) &&
	      fr.starts == 2,
	      "watch cq: the kernel watches a ring that posts completions at once (flags %#x, %u starts)",
	      j.s.ring.setup_flags, fr.starts);
	fill_file(&j);
	j.check_reads = true;
	__atomic_store_n(&fr.hold_cq, true, __ATOMIC_RELEASE);
	for (b = 0; b < DEPTH; b++)
		queue_committed(&j, DBR_OP_READ, b);
	dbr_pipe_submit(&j.s.pipe);
	for (i = 0; i < 10000 && io_uring_cq_ready(&j.s.ring.ring) < DEPTH; i++)
		usleep(100);
	n = dbr_pipe_getevents(&j.s.pipe, done, 0, DEPTH);
	CHECK(io_uring_cq_ready(&j.s.ring.ring) == DEPTH && n == 0 &&
	      j.s.ring.inflight == DEPTH,
	      "watch cq: %u CQEs posted, the kernel's copies held: %d back", DEPTH, n);
	for (i = 0; i < (unsigned int)(n > 0 ? n : 0); i++) {	/* so that the drain ends */
		j.busy[done[i] - j.io] = false;
		j.came_back++;
	}
	__atomic_store_n(&fr.hold_cq, false, __ATOMIC_RELEASE);
	drain_job(&j);
	reads += DEPTH;
	CHECK(j.came_back == DEPTH && !j.bad_bytes && !j.errors && !j.twice &&
	      fr.cq_copies == DEPTH && !stream_copies(&j.s.pipe),
	      "watch cq: then all %lu back, %lu bad bytes, %u copied from the CQ, %lu through passes",
	      j.came_back, j.bad_bytes, fr.cq_copies, stream_copies(&j.s.pipe));
	CHECK(dbr_pipe_wait_ns(&j.s.pipe) >= 10000000,
	      "watch cq: the wait on the kernel's 20 ms round counted as a copy wait (%.1f ms)",
	      dbr_pipe_wait_ns(&j.s.pipe) / 1e6);

	fr.delay_us = 300;
	passes = dbr_pipe_copy_stats(&j.s.pipe)->passes;
	j.max = 1;
	for (b = 0; b < NR_BLOCKS; b++) {
		while ((slot = free_slot(&j)) < 0)
			collect(&j, 1);
		if (b % 4 == 1) {
			dev_pattern(slot, b);
			queue_committed(&j, DBR_OP_WRITE, b);
		} else {
			queue_committed(&j, DBR_OP_READ, (b * 37) % NR_BLOCKS);
			reads++;
		}
		if (b % 5 == 4)
			queue_sync(&j);
	}
	drain_job(&j);
	CHECK(!j.out_of_order && !j.early_write && !j.twice && !j.bad_bytes &&
	      !j.errors && j.came_back == NR_BLOCKS + DEPTH + j.sync_ops,
	      "watch cq: reads, writes and fsyncs mixed: %lu back once in queue order, %lu bad bytes, %lu errors",
	      j.came_back, j.bad_bytes, j.errors);
	CHECK(fr.cq_copies == reads && j.s.pipe.st.cq_copied == reads &&
	      dbr_pipe_copy_stats(&j.s.pipe)->passes > passes && !fr.bad,
	      "watch cq: %u reads copied from the CQ (%lu counted), writes in %lu passes, %u bad",
	      fr.cq_copies, j.s.pipe.st.cq_copied,
	      dbr_pipe_copy_stats(&j.s.pipe)->passes - passes, fr.bad);

	fr.idle_ns = 1000000;
	fr.delay_us = 0;
	for (i = 0; i < 2000 && __atomic_load_n(&j.s.pipe.stream.kr.r->running,
						__ATOMIC_ACQUIRE); i++)
		usleep(1000);
	i = fr.starts;
	CHECK(!__atomic_load_n(&j.s.pipe.stream.kr.r->running, __ATOMIC_ACQUIRE),
	      "watch cq: idle, the kernel left");
	for (b = 0; b < DEPTH; b++)
		queue_committed(&j, DBR_OP_READ, b + 3);
	drain_job(&j);
	CHECK(fr.starts > i && !j.bad_bytes && !j.errors &&
	      fr.cq_copies == reads + DEPTH,
	      "watch cq: reads after it left: the kernel started again (%u starts), all copied",
	      fr.starts - i);
	job_exit(&j);
	CHECK(!fr.have_th && !fr.cq_mem, "watch cq: the kernel left, the ring unmapped");
}

/*
 * gpu_spin_us over a watched CQ's wait, which nothing wakes when the GPU's
 * count moves: -1 spins to the end, 0 yields the CPU between looks from
 * the start, a bound spins that long first. The fake's rounds take 5 ms;
 * under each setting every read comes back, bytes intact.
 */
static void run_watch_spin(void)
{
	static const struct {
		long spin_ns;
		bool yields;
		const char *what;
	} c[] = {
		{ -1, false, "-1 spins only" },
		{ 0, true, "0 yields from the start" },
		{ 1000000, true, "1000 us spins, then yields" },
		{ 200000000, false, "200000 us outlasts the 5 ms rounds" },
	};
	unsigned long yields;
	unsigned int b, i;
	struct job j;

	fake_rrt_init();
	fr_reset(5000, 1000000000);
	job_watch = true;
	job_init_on(&j, &fake_resident_provider, FAKE_IN_ORDER, false, 37);
	job_watch = false;
	fill_file(&j);
	j.check_reads = true;
	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		j.s.ring.gpu_spin_ns = c[i].spin_ns;
		yields = j.s.ring.gpu_yields;
		for (b = 0; b < DEPTH; b++)
			queue_committed(&j, DBR_OP_READ, (b * 7 + i) % NR_BLOCKS);
		drain_job(&j);
		yields = j.s.ring.gpu_yields - yields;
		CHECK(j.s.pipe.cq_gpu && (yields > 0) == c[i].yields &&
		      !j.bad_bytes && !j.errors && fr.cq_copies == (i + 1) * DEPTH,
		      "watch spin: gpu_spin_us=%s: %lu yields, %u reads copied from the CQ, %lu bad bytes",
		      c[i].what, yields, fr.cq_copies, j.bad_bytes);
	}
	job_exit(&j);
}

/*
 * gpu_watch_cq asked for, and the runtime refuses to map the rings (a GPU
 * owner that cannot take the ring's fd says so the same way): the reason is
 * kept for the job's line, and reads' copies go in passes, data intact.
 */
static void run_watch_refused(void)
{
	unsigned int b;
	struct job j;

	fake_rrt_init();
	fr_reset(0, 1000000000);
	fk_refuse_cq = true;
	job_watch = true;
	job_init_on(&j, &fake_resident_provider, FAKE_IN_ORDER, false, 31);
	job_watch = false;
	fk_refuse_cq = false;
	CHECK(!j.s.pipe.cq_gpu && !j.s.pipe.stream.cq_mem &&
	      !strcmp(j.s.pipe.watch_why, "no room to page-lock the rings"),
	      "watch refused: not watched, the runtime's reason kept ('%s')",
	      j.s.pipe.watch_why);
	fill_file(&j);
	j.check_reads = true;
	for (b = 0; b < DEPTH; b++)
		queue_committed(&j, DBR_OP_READ, b);
	drain_job(&j);
	CHECK(!j.bad_bytes && !j.errors && !fr.cq_copies &&
	      dbr_pipe_copy_stats(&j.s.pipe)->passes > 0,
	      "watch refused: reads copied in passes (%lu), %lu bad bytes",
	      dbr_pipe_copy_stats(&j.s.pipe)->passes, j.bad_bytes);
	job_exit(&j);
}

/* I/O done and waiting to be collected */
static unsigned int ready_count(const struct job *j)
{
	const struct dbr_pio *io;
	unsigned int n = 0;

	for (io = j->s.pipe.ready.head; io; io = io->next)
		n++;
	return n;
}

/*
 * A job over the resident kernel collecting one I/O a call, with n I/O of
 * op queued, committed and all ready, none collected: true when they got
 * there. With I/O ready a reap reads only the CQ, so the loop also enters
 * (dbr_ring_ready), as the next submit would, for what the kernel holds back.
 */
static bool ready_job(struct job *j, enum dbr_op op, unsigned int n,
		      unsigned int seed)
{
	unsigned int b, tries;

	fake_rrt_init();
	fr_reset(0, 1000000000);
	job_init_on(j, &fake_resident_provider, FAKE_IN_ORDER, false, seed);
	j->max = 1;
	for (b = 0; b < n; b++)
		queue_committed(j, op, b);
	/*
	 * until all n are ready, not until the queues look empty: the writes'
	 * check after this loop once failed in a loaded 2-CPU run of the suite
	 * (fio 3.41 build)
	 */
	for (tries = 0; tries < 10000 && ready_count(j) < n; tries++) {
		dbr_ring_ready(&j->s.ring);
		dbr_pipe_getevents(&j->s.pipe, NULL, 0, 0);
		usleep(1000);
	}
	return !j->s.ring.inflight && !j->s.pipe.pre.head &&
	       !j->s.pipe.post.head && ready_count(j) == n;
}

/*
 * fio collects one I/O a call by default and queues one after each: reads
 * the ring finishes while earlier I/O still waits to be collected must
 * start their copies then, not once the ready queue is empty (which had a
 * whole depth of reads finish, copy and come back in step, the copies' time
 * a wait every round). Reads whose copies are done wait ready; collects of
 * one, each followed by a read queued and committed as fio does, must post
 * the copies of the reads they queued while I/O is still ready.
 */
static void run_reap_while_ready(void)
{
	unsigned int b = DEPTH, tries;
	unsigned long posted;
	struct job j;

	CHECK(ready_job(&j, DBR_OP_READ, DEPTH, 19),
	      "reap while ready: %u reads copied and ready, none collected",
	      DEPTH);
	posted = stream_copies(&j.s.pipe);
	for (tries = 0; tries < DEPTH / 2; tries++) {
		collect(&j, 1);
		queue_held(&j, DBR_OP_READ, b++);
		usleep(2000);
	}
	CHECK(stream_copies(&j.s.pipe) > posted && j.s.pipe.ready.head,
	      "reap while ready: collects of one with a read queued after each: %lu of their %u reads' copies posted, I/O still ready",
	      stream_copies(&j.s.pipe) - posted, tries);
	drain_job(&j);
	CHECK(!j.out_of_order && j.came_back == b && !j.twice && !j.errors &&
	      !j.with_copy_pending,
	      "reap while ready: then all %lu back once, in order, none with a copy pending",
	      j.came_back);
	job_exit(&j);
}

/*
 * The same hand-over with writes: a collect of one while I/O is ready
 * reaps no read, so the writes queued meanwhile keep gathering in the open
 * pass (posted one collect at a time, a copy a pass, they cost more than
 * their early start gained on the H200); it goes once nothing is ready,
 * before the engine waits.
 */
static void run_writes_gather_while_ready(void)
{
	unsigned int b = DEPTH, tries, held;
	unsigned long passes;
	struct job j;

	CHECK(ready_job(&j, DBR_OP_WRITE, DEPTH, 23),
	      "writes gather: %u writes copied, written and ready, none collected",
	      DEPTH);
	held = j.s.pipe.full_pass - 1;	/* one more would fill the pass */
	passes = j.s.pipe.st.copy_passes;
	for (tries = 0; tries < held; tries++) {
		collect(&j, 1);
		queue_held(&j, DBR_OP_WRITE, b++);
		usleep(1000);
	}
	CHECK(j.s.pipe.st.copy_passes == passes && j.s.pipe.nr_pass == held &&
	      j.s.pipe.ready.head,
	      "writes gather: %u collects of one with a write queued after each, I/O still ready: %lu passes sent, %u copies gathering",
	      held, j.s.pipe.st.copy_passes - passes, j.s.pipe.nr_pass);
	drain_job(&j);
	CHECK(!j.out_of_order && !j.early_write && j.came_back == b && !j.twice &&
	      !j.errors && j.s.pipe.st.copy_passes > passes,
	      "writes gather: then all %lu back once, in queue order, none on the ring before its copy, the gathered pass sent",
	      j.came_back);
	job_exit(&j);
}

int main(void)
{
	int before = count_fds();

	run_sync_behind_slow_writes();
	run_data("in order", FAKE_IN_ORDER, false, 1);
	run_data("late", FAKE_LATE, false, 2);
	run_data("in bursts", FAKE_BURST, false, 3);
	run_data("late+bursts gpu_sync", FAKE_LATE | FAKE_BURST, true, 4);
	run_failures("failing", FAKE_IN_ORDER, 5);
	run_failures("failing+bursts", FAKE_BURST | FAKE_LATE, 6);
	run_no_copies(1);
	run_no_copies(DEPTH);
	run_copy_stage();
	run_write_pass_rule();
	run_read_pass_rule();
	run_pass_growth("reads, slow copies", FAKE_STUCK, DBR_OP_READ);
	run_pass_growth("reads, fast copies", FAKE_IN_ORDER, DBR_OP_READ);
	run_resident();
	run_watch_cq();
	run_watch_spin();
	run_watch_refused();
	run_reap_while_ready();
	run_writes_gather_while_ready();
	CHECK(count_fds() == before, "no descriptor left open (%d before, %d after)",
	      before, count_fds());
	return check_done("test_pipeline");
}
