/* SPDX-License-Identifier: MIT */
/*
 * The copy pipeline: how an I/O moves between the ring and the GPU copies
 * around it, free of fio.
 *
 * Each I/O passes through up to three stages:
 *
 *   pre-copy  copies before the I/O (a write whose bytes start in GPU memory)
 *   ring      the READ_FIXED / WRITE_FIXED / FSYNC on the io_uring ring
 *   post-copy copies after the I/O (a read whose bytes end in GPU memory)
 *
 * and then waits, ready, until the caller collects it. Ordering rules:
 *
 *  - I/O reaches the ring in the order it was queued, as fio's own io_uring
 *    engine submits it: an I/O whose pre-copies are still running holds back
 *    everything queued after it (so an fsync never passes an earlier write).
 *  - An I/O comes back exactly once, and never while a copy on its bytes may
 *    still run: after a failed copy call the stream is drained first.
 *
 * Copies go to the pipeline's copy stream (gpu/copy/stream.h, made at init
 * over the buffer's runtime calls; none for memory that needs no copies) in
 * passes. A pass gathers the copies of every I/O that needs one, writes as fio queues them and reads as the ring
 * finishes them, and goes to the runtime when it is full (half the depth, or
 * DBR_FENCE_BYTES) or when the engine is about to wait with no older pass
 * running; one that holds reads goes, too, as soon as no older pass runs:
 * so passes grow to full size whatever fio's batching options (see
 * add_to_pass, pass_waits), one running while the next gathers. Where sending
 * a pass costs no runtime call (the resident copy kernel) it goes at once,
 * unless a round's worth of passes already waits there (flush_if_free).
 * A pass queues its copies in rounds (an I/O's second copy touches the bytes
 * of its first, so it goes in the next batch), and one fence covers up to
 * DBR_FENCE_BYTES of them.
 */
#ifndef DBR_PIPELINE_H
#define DBR_PIPELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "provider.h"
#include "ring.h"
#include "stream.h"

/*
 * copies of one pass share a fence until they move this many bytes, and a
 * pass this large goes to the runtime at once
 */
#define DBR_FENCE_BYTES		(256u << 10)
/* the most I/O a pass waits to gather (it goes at half the depth) */
#define DBR_PASS_MAX		64u
/* a sleep on the ring while copies run, when waits do not spin */
#define DBR_RING_NAP_NS		20000L

enum dbr_stage {
	DBR_IDLE,
	DBR_PRE_RING,	/* its pre-copies, or an earlier I/O, not done yet */
	DBR_IN_RING,
	DBR_POST_COPY,
	DBR_READY,
};

/* One I/O. The caller fills req (but req.owner) and off, then queues it. */
struct dbr_pio {
	struct dbr_req req;
	size_t off;		/* where its bytes sit in the buffer */
	void *user;		/* the caller's own I/O (fio's io_u) */
	/* set by the pipeline */
	enum dbr_stage stage;
	uint8_t nr_copies;
	enum gpu_copy_dir copy[2];	/* before the ring or after it */
	uint64_t ticket;	/* fence covering its copies, 0: not fenced */
	uint64_t copy_start;	/* when its copies were queued (ns) */
	int error;		/* positive errno, 0 when it succeeded */
	uint32_t resid;		/* bytes short of req.len */
	struct dbr_pio *next;
};

struct dbr_pfifo {
	struct dbr_pio *head;
	struct dbr_pio **tail;
};

struct dbr_pipe_stats {
	unsigned long copy_passes;	/* fences over a pass of copies */
	unsigned long held_back;	/* I/O that waited for an earlier one */
	unsigned long copy_errors;	/* I/O failed by a copy */
	unsigned long copied;		/* I/O whose copies completed */
	unsigned long cq_copied;	/* of them reads the kernel copied from the CQ */
	uint64_t copy_ns;	/* their time from queueing to seen done */
	uint64_t wait_ns;	/* time the caller spent blocked on copies (see
				 * dbr_pipe_wait_ns) */
};

struct dbr_pipe {
	struct dbr_ring *ring;
	struct gpu_buf *buf;
	bool p2p;		/* the ring moves GPU memory itself */
	bool sync;		/* gpu_sync: keep the host shadow in step */
	bool copies;		/* a device provider: copies exist at all */
	bool stopping;		/* the job is ending: reads start no copies */
	struct dbr_pfifo pre;	/* queued, not yet on the ring */
	struct dbr_pfifo post;	/* off the ring, copies running */
	struct dbr_pfifo ready;	/* done, not yet collected */
	struct dbr_pio **pass;	/* the open copy pass: I/O whose copies wait */
	unsigned int nr_pass, depth;
	unsigned int pass_reads;	/* of them reads (copies after the ring) */
	size_t pass_bytes;	/* what the open pass moves */
	size_t pass_max;	/* its largest I/O */
	unsigned int full_pass;	/* I/O that make a pass go at once */
	struct dbr_pipe_stats st;
	struct gpu_stream stream;	/* the buffer's copies, if it has any */
	bool stream_live;
	/* the resident kernel watches the ring's CQ and copies reads itself */
	bool cq_gpu;
	char watch_why[200];	/* asked to watch and could not: why ("" else) */
	struct dbr_req **slots;		/* tagged requests by slot */
	uint16_t *free_slots;
	unsigned int nr_free;
};

/*
 * Does a pipeline copy? Only for memory apart from the host's, and there
 * for bounce or gpu_sync: p2p without gpu_sync plans no copy (the direct
 * path). The session's ring set-up asks too, before the memory exists.
 */
static inline bool dbr_pipe_copies(bool device_memory, bool p2p, bool sync)
{
	return device_memory && (!p2p || sync);
}

/*
 * watch: have the resident kernel watch the ring's CQ and copy reads as
 * their CQEs come (gpu_watch_cq; the ring set up with cqes_at_once), where
 * it runs; else, or where that cannot be set up, reads' copies go in
 * passes as the thread reaps them.
 */
int dbr_pipe_init(struct dbr_pipe *p, struct dbr_ring *ring,
		  struct gpu_buf *buf, unsigned int depth, bool p2p,
		  bool sync, bool watch);
/* Copies still running finish; then the stream and the pass go (idempotent). */
void dbr_pipe_exit(struct dbr_pipe *p);

/* Time blocked on copies: the pipeline's waits and the watched ring's. */
static inline uint64_t dbr_pipe_wait_ns(const struct dbr_pipe *p)
{
	return p->st.wait_ns + (p->ring ? p->ring->gpu_wait_ns : 0);
}

/* The copy stream, NULL for memory without one (host memory). */
static inline struct gpu_stream *dbr_pipe_stream(struct dbr_pipe *p)
{
	return p->stream_live ? &p->stream : NULL;
}

/* What the copy stream did: zeros without one, kept after exit. */
static inline const struct gpu_stream_stats *
dbr_pipe_copy_stats(const struct dbr_pipe *p)
{
	return &p->stream.st;
}

int dbr_pipe_queue_copies(struct dbr_pipe *p, struct dbr_pio *io);
int dbr_pipe_commit_copies(struct dbr_pipe *p);

/*
 * Take one I/O: 0 when taken, -EBUSY when the ring has no room (try again
 * after collecting), another negative errno when it cannot run (not taken).
 * Inline down to the SQE for a pipeline without copies (host memory is the
 * device's), where every I/O goes straight to the ring; the copy stages are
 * out of line.
 */
static inline int dbr_pipe_queue(struct dbr_pipe *p, struct dbr_pio *io)
{
	int ret;

	io->req.owner = io;
	io->req.tag = 0;
	io->error = 0;
	io->resid = 0;
	io->ticket = 0;
	if (p->copies)
		return dbr_pipe_queue_copies(p, io);
	/* no copy stage: nothing can be held before the ring */
	io->nr_copies = 0;
	ret = dbr_ring_queue(p->ring, &io->req);
	if (!ret)
		io->stage = DBR_IN_RING;
	return ret;
}

/* Start the pre-copies queued so far and move what may onto the ring. */
static inline int dbr_pipe_commit(struct dbr_pipe *p)
{
	return p->copies ? dbr_pipe_commit_copies(p) : 0;
}
/* Hand what is on the ring to the kernel. */
int dbr_pipe_submit(struct dbr_pipe *p);
/*
 * Collect between min and max finished I/O into done[], blocking until min
 * are there (or nothing is left in flight). Returns the count, or a negative
 * errno when waiting failed (-ETIME and -EINTR are not failures: the count
 * so far is returned).
 */
int dbr_pipe_getevents_direct(struct dbr_pipe *p, struct dbr_pio **done,
			      unsigned int min, unsigned int max);
int dbr_pipe_getevents_copies(struct dbr_pipe *p, struct dbr_pio **done,
			      unsigned int min, unsigned int max);
/*
 * Without copies only the ring holds I/O: a path of its own, whose frame
 * does not pay for the stages it never walks.
 */
static inline int dbr_pipe_getevents(struct dbr_pipe *p, struct dbr_pio **done,
				     unsigned int min, unsigned int max)
{
	if (p->copies)
		return dbr_pipe_getevents_copies(p, done, min, max);
	return dbr_pipe_getevents_direct(p, done, min, max);
}
bool dbr_pipe_idle(const struct dbr_pipe *p);

#endif
