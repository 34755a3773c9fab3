/* SPDX-License-Identifier: MIT */
/*
 * The io_uring side of dmabuf_uring, free of fio: ring set-up with what the
 * running kernel offers, the registered-buffer table (host iovecs and
 * dma-bufs), request submission and completion reaping with transparent
 * reissue of -EAGAIN completions.
 *
 * Every function returns 0 (or a count) on success and a negative errno on
 * failure; nothing here prints. The caller composes the user's message.
 */
#ifndef DBR_RING_H
#define DBR_RING_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <liburing.h>

#include "prof.h"
#include "watchdog.h"

/* consecutive -EAGAIN completions of one request before we give up on it */
#define DBR_MAX_REISSUE		1024

enum dbr_op {
	DBR_OP_READ,
	DBR_OP_WRITE,
	DBR_OP_FSYNC,
	DBR_OP_FDATASYNC,
	DBR_OP_SYNC_FILE_RANGE,	/* off/len: the range; sync_flags: SYNC_FILE_RANGE_* */
};

/*
 * One I/O as the ring sees it. The owner keeps it alive until it is reaped.
 * For dma-buf slots addr is a byte offset inside the dma-buf, for host slots a
 * user address.
 */
struct dbr_req {
	enum dbr_op op;
	int fd;			/* fd, or fixed-file index when fixed_file */
	bool fixed_file;
	bool force_async;	/* IOSQE_ASYNC: straight to io-wq */
	uint16_t buf_index;
	uint32_t len;
	uint64_t addr;
	uint64_t off;
	unsigned int sync_flags;	/* DBR_OP_SYNC_FILE_RANGE's flags */
	uint16_t ioprio;	/* reads and writes: the SQE's I/O priority */
	int res;		/* CQE result once reaped */
	unsigned int reissues;	/* -EAGAIN reissues of this request */
	struct dbr_req *next;	/* on the ring's stash while quiescing */
	void *owner;
	uint64_t tag;		/* user_data where not 0 (DBR_TAG_BY_SLOT) */
};

/*
 * A request's user_data is its address, or where its owner set req->tag,
 * that tag: DBR_TAG_BY_SLOT set (no address has bit 63) and the request's
 * index in r->by_slot in the low 16 bits. The bits between are the owner's
 * (what a watcher of the CQ reads in them).
 */
#define DBR_TAG_BY_SLOT		(1ull << 63)
/* Requests a tag can name. */
#define DBR_TAG_SLOTS		(1u << 16)

static inline uint16_t dbr_tag_slot(uint64_t tag)
{
	return (uint16_t)tag;
}

struct dbr_ring_params {
	unsigned int entries;
	bool sqpoll;
	int sqpoll_cpu;		/* < 0: let the kernel pick */
	bool single_issuer;	/* all submissions come from the creating task */
	bool iopoll;		/* IORING_SETUP_IOPOLL: polled completions (hipri) */
	/*
	 * Give the creating thread its own copy of its credentials first
	 * (dbr_ring_init says why); dbr_ring.own_creds says whether it took.
	 */
	bool own_creds;
	/*
	 * No DEFER_TASKRUN: completions reach the CQ as they happen (from the
	 * io-wq worker that finished the I/O), not when the thread enters, so
	 * that a watcher of the CQ (the pipeline's GPU copy kernel) sees them
	 * at once.
	 */
	bool cqes_at_once;
};

struct dbr_ring {
	struct io_uring ring;
	unsigned int setup_flags;	/* what the kernel accepted */
	bool own_creds;			/* the thread's credentials are its own */
	int own_creds_err;		/* why not, where they were asked for */
	unsigned int nr_bufs;		/* size of the sparse buffer table */
	unsigned int nr_files;		/* size of the sparse file table */
	unsigned int inflight;		/* in the kernel, SQEs or CQEs pending */
	unsigned int unsubmitted;	/* prepared SQEs not yet submitted */
	unsigned long reissues;		/* -EAGAIN reissues over the ring's life */
	struct dbr_req *stash;		/* completions reaped by quiesce */
	struct dbr_req **stash_tail;
	bool ready;
	/* NULL, or a stall watchdog over the blocking waits (watchdog.h) */
	struct dbr_watch *watch;
	/* called for each request as it enters the SQ (tests watch order) */
	void (*on_queue)(void *arg, const struct dbr_req *req);
	void *on_queue_arg;
	/* DBR_PROFILE's figures for the thread that owns the ring (prof.h) */
	struct dbr_prof prof;
	/*
	 * A watcher of the CQ (the pipeline's GPU copy kernel) finishes the
	 * work of CQEs as they come: CQEs below *gpu_done are done, that work
	 * and all; those past it are not reaped yet. A tagged user_data names
	 * its request by_slot[dbr_tag_slot()]; kick starts the watcher again
	 * where a wait finds it gone.
	 */
	const uint64_t *gpu_done;
	uint64_t gpu_wait_ns;	/* spent waiting on the kernel's copies */
	long gpu_spin_ns;	/* that wait spins this long, then yields the
				 * CPU between looks (< 0: spins only) */
	unsigned long gpu_yields;	/* the yields it made */
	struct dbr_req **by_slot;
	int (*kick)(void *arg);
	void *kick_arg;
};

/* The request a CQE completes. */
static inline struct dbr_req *dbr_cqe_req(const struct dbr_ring *r,
					  const struct io_uring_cqe *cqe)
{
	uint64_t ud = cqe->user_data;

	if (ud & DBR_TAG_BY_SLOT)
		return r->by_slot[dbr_tag_slot(ud)];
	return (struct dbr_req *)(uintptr_t)ud;
}

/* The CQ's last CQE the caller may reap, +1: its tail, or the GPU's count. */
static inline unsigned int dbr_cq_limit(const struct dbr_ring *r)
{
	if (r->gpu_done)
		return (unsigned int)__atomic_load_n(r->gpu_done, __ATOMIC_ACQUIRE);
	return io_uring_smp_load_acquire(r->ring.cq.ktail);
}

/* CQEs the caller may reap. */
static inline unsigned int dbr_cq_ready(const struct dbr_ring *r)
{
	return dbr_cq_limit(r) - *r->ring.cq.khead;
}

int dbr_ring_init(struct dbr_ring *r, const struct dbr_ring_params *p);
void dbr_ring_exit(struct dbr_ring *r);

int dbr_ring_register_buf_table(struct dbr_ring *r, unsigned int nr);
int dbr_ring_register_file_table(struct dbr_ring *r, unsigned int nr);
int dbr_ring_set_file(struct dbr_ring *r, unsigned int slot, int fd);
int dbr_ring_install_host(struct dbr_ring *r, unsigned int slot,
			  void *addr, size_t len);
int dbr_ring_install_dmabuf(struct dbr_ring *r, unsigned int slot,
			    int dmabuf_fd, int target_fd);
int dbr_ring_clear_buf(struct dbr_ring *r, unsigned int slot, bool dmabuf);
int dbr_ring_attach_pieces(struct dbr_ring *r, unsigned int file_slot, int fd,
			   unsigned int buf_slot, const int *dmabuf_fds,
			   unsigned int nr);
int dbr_ring_detach_pieces(struct dbr_ring *r, unsigned int file_slot,
			   unsigned int buf_slot, unsigned int nr);
/* one dma-buf (dmabuf_fd >= 0) or none, in buffer slot = file slot */
int dbr_ring_attach_file(struct dbr_ring *r, unsigned int slot, int fd,
			 int dmabuf_fd);
int dbr_ring_detach_file(struct dbr_ring *r, unsigned int slot, bool dmabuf);

int dbr_probe_p2p(void);

int dbr_ring_submit(struct dbr_ring *r, unsigned int wait_nr);
/* dbr_ring_wait for a watched CQ: nr CQEs posted, then copied. */
int dbr_ring_wait_gpu(struct dbr_ring *r, unsigned int nr);
int dbr_ring_handle_cqe(struct dbr_ring *r, struct dbr_req *req, int res);
int dbr_ring_reap(struct dbr_ring *r, struct dbr_req **done, unsigned int max);
/*
 * The same without entering the kernel: what the CQ holds now (right after
 * an enter that asked for completions, all there is to have).
 */
int dbr_ring_reap_cq(struct dbr_ring *r, struct dbr_req **done,
		     unsigned int max);
struct dbr_req *dbr_ring_next_slow(struct dbr_ring *r, bool flush);

/* Fill sqe from req: the one translation, for queueing and for reissue. */
static inline void dbr_prep_sqe(struct io_uring_sqe *sqe,
				const struct dbr_req *req)
{
	void *addr = (void *)(uintptr_t)req->addr;

	switch (req->op) {
	case DBR_OP_READ:
		io_uring_prep_read_fixed(sqe, req->fd, addr, req->len,
					 req->off, req->buf_index);
		break;
	case DBR_OP_WRITE:
		io_uring_prep_write_fixed(sqe, req->fd, addr, req->len,
					  req->off, req->buf_index);
		break;
	case DBR_OP_FSYNC:
		io_uring_prep_fsync(sqe, req->fd, 0);
		break;
	case DBR_OP_FDATASYNC:
		io_uring_prep_fsync(sqe, req->fd, IORING_FSYNC_DATASYNC);
		break;
	case DBR_OP_SYNC_FILE_RANGE:
		io_uring_prep_sync_file_range(sqe, req->fd, req->len, req->off,
					      (int)req->sync_flags);
		break;
	}
	sqe->ioprio = req->ioprio;
	io_uring_sqe_set_flags(sqe, (req->fixed_file ? IOSQE_FIXED_FILE : 0) |
				    (req->force_async ? IOSQE_ASYNC : 0));
	io_uring_sqe_set_data64(sqe, req->tag ? req->tag : (uintptr_t)req);
}

/* req into the next SQE, unsubmitted: -EBUSY when the SQ is full */
static inline int dbr_queue_sqe(struct dbr_ring *r, const struct dbr_req *req)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&r->ring);

	if (!sqe)
		return -EBUSY;
	dbr_prep_sqe(sqe, req);
	r->unsubmitted++;
	return 0;
}

/*
 * Queue one request; it reaches the kernel on the next dbr_ring_submit().
 * -EBUSY when the SQ is full. Inline, as dbr_ring_next is: every I/O passes
 * here once, and a call chain down to the SQE cost more than filling it.
 */
static inline int dbr_ring_queue(struct dbr_ring *r, struct dbr_req *req)
{
	int ret;

	req->res = 0;
	req->reissues = 0;
	ret = dbr_queue_sqe(r, req);
	if (ret)
		return ret;
	r->inflight++;
	if (r->on_queue)
		r->on_queue(r->on_queue_arg, req);
	return 0;
}

/*
 * Inline, as liburing's own CQ helpers are: fio asks for one event per
 * getevents call by default, so what a call costs, an I/O costs.
 *
 * Submit what is queued and block until nr completions can be reaped (at
 * most what is in flight), entering the kernel only when the CQ holds fewer:
 * one enter that both flushes deferred completions and waits, instead of a
 * non-blocking reap's enter followed by a waiting one.
 */
static inline int dbr_ring_wait(struct dbr_ring *r, unsigned int nr)
{
	if (nr > r->inflight)
		nr = r->inflight;
	if (!r->unsubmitted && (r->stash || dbr_cq_ready(r) >= nr))
		return 0;
	if (r->gpu_done)
		return dbr_ring_wait_gpu(r, nr);
	return dbr_ring_submit(r, nr);
}

/*
 * The next completed request, or NULL when none is there, without blocking;
 * flush: when the CQ looks empty, first ask the kernel for completions it
 * still holds (DEFER_TASKRUN), which costs an enter. Here only the common
 * case: a CQE that needs no reissue, none stashed; the rest is out of line.
 */
static inline struct dbr_req *dbr_ring_next(struct dbr_ring *r, bool flush)
{
	struct io_uring *ring = &r->ring;
	unsigned int head = *ring->cq.khead;
	struct io_uring_cqe *cqe;
	struct dbr_req *req;

	/*
	 * The CQ head read as io_uring_for_each_cqe reads it, not through
	 * io_uring_peek_cqe: that one also skips liburing's internal timeout
	 * CQEs, which only kernels without IORING_FEAT_EXT_ARG (< 5.11) post,
	 * and the registered buffer table needs 5.19.
	 */
	if (r->stash || head == dbr_cq_limit(r))
		return dbr_ring_next_slow(r, flush);
	cqe = &ring->cq.cqes[io_uring_cqe_index(ring, head, ring->cq.ring_mask)];
	if (cqe->res == -EAGAIN)
		return dbr_ring_next_slow(r, flush);
	req = dbr_cqe_req(r, cqe);
	req->res = cqe->res;
	io_uring_cq_advance(ring, 1);
	r->inflight--;
	return req;
}

int dbr_ring_quiesce(struct dbr_ring *r);
/* Submit, then sleep until a completion can be reaped or ns have passed. */
int dbr_ring_wait_timeout(struct dbr_ring *r, long ns);
/* Completions waiting to be reaped, asking the kernel for them first. */
unsigned int dbr_ring_ready(struct dbr_ring *r);

/* requests the kernel has not finished, or whose CQEs are not reaped yet */
static inline unsigned int dbr_ring_inflight(const struct dbr_ring *r)
{
	return r->inflight;
}

/* requests queued on the SQ and not yet handed to the kernel */
static inline unsigned int dbr_ring_unsubmitted(const struct dbr_ring *r)
{
	return r->unsubmitted;
}

/* Where the SQ's and CQ's words sit in the rings' one mapping. */
struct dbr_ring_layout {
	void *mem;		/* the mapping, len bytes (whole pages) */
	size_t len;
	int fd;			/* the ring's fd, which maps it from offset 0 */
	size_t cq_tail, sq_tail, cqes;	/* offsets in it */
	uint32_t cq_mask;
};

/* -ENOTSUP where the kernel mapped the SQ and CQ apart (no SINGLE_MMAP) */
int dbr_ring_layout(const struct dbr_ring *r, struct dbr_ring_layout *l);

/* human-readable names of the setup flags the kernel accepted */
void dbr_ring_describe(const struct dbr_ring *r, char *buf, size_t len);

#endif
