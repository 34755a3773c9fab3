// SPDX-License-Identifier: MIT
/*
 * io_uring ring, registered-buffer table and request flow for dmabuf_uring.
 * See ring.h for the contract: negative errnos, no printing.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "provider.h"
#include "ring.h"
#include "dbr_uapi.h"

/*
 * Set-up flags to try, best first. SINGLE_ISSUER + DEFER_TASKRUN lets the
 * kernel run completion work only when we ask for events, which is exactly
 * when fio asks. COOP_TASKRUN avoids IPIs on older kernels. Each older
 * kernel answers EINVAL to flags it does not know, so we step down.
 *
 * No TASKRUN_FLAG, as fio's engine asks for none: with it, each time the
 * kernel's list of deferred completions goes from empty to not, the
 * completing CPU (an io-wq worker, an NVMe interrupt) sets a bit in the
 * SQ ring's flags word, in the cache line that holds the rings' heads and
 * tails the job thread writes, and the thread's next enter clears it.
 * Without it, 4k reads on host memory at one thread ran 5-12% faster, and
 * a ring under copies, whose thread looks at the ring while it waits,
 * faster too (docs/perf.md). All the flag saved was an enter where a reap
 * found the CQ empty, which fio's calls seldom make.
 */
#define DBR_SINGLE_TASK	(IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN)

static const unsigned int setup_ladder[] = {
	DBR_SINGLE_TASK,
	IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_COOP_TASKRUN,
	IORING_SETUP_COOP_TASKRUN,
	0,
};

static int ring_try_init(struct dbr_ring *r, const struct dbr_ring_params *p,
			 unsigned int flags)
{
	struct io_uring_params up;

	memset(&up, 0, sizeof(up));
	up.flags = flags | IORING_SETUP_CQSIZE;
	/* room for every request plus reissues without CQ overflow */
	up.cq_entries = 2 * p->entries;
	if (p->iopoll)
		up.flags |= IORING_SETUP_IOPOLL;
	if (p->sqpoll) {
		up.flags |= IORING_SETUP_SQPOLL;
		if (p->sqpoll_cpu >= 0) {
			up.flags |= IORING_SETUP_SQ_AFF;
			up.sq_thread_cpu = p->sqpoll_cpu;
		}
	}
	return io_uring_queue_init_params(p->entries, &r->ring, &up);
}

/*
 * io_uring takes a reference on the submitting thread's credentials for
 * every request it hands to an io-wq worker, and drops it when the request
 * is freed. A process's threads share one struct cred, so with fio's
 * thread=1 every job thread writes the same counter twice per I/O that
 * goes to io-wq (files in memory, zram, filesystems without NOWAIT): at 16
 * threads on the H200, 4k reads from /dev/shm spent 0.4 us of kernel time
 * per read more than with a counter per thread (docs/perf.md). Any change
 * of credentials gives the thread a copy of its own; setting the "keep
 * capabilities" flag to the value it has changes nothing else. The ring's
 * io-wq workers are made from this thread later and share its copy.
 * 0, or a negative errno where the kernel refuses (seccomp, a locked
 * SECURE_KEEP_CAPS): the threads then share as before.
 */
static int ring_own_creds(void)
{
	int keep = prctl(PR_GET_KEEPCAPS, 0, 0, 0, 0);

	if (keep < 0 || prctl(PR_SET_KEEPCAPS, keep, 0, 0, 0) < 0)
		return -errno;
	return 0;
}

int dbr_ring_init(struct dbr_ring *r, const struct dbr_ring_params *p)
{
	size_t i;
	int ret = -EINVAL;

	memset(r, 0, sizeof(*r));
	r->stash_tail = &r->stash;
	dbr_prof_start(&r->prof);
	/* before the ring: the workers it makes copy this thread's creds */
	if (p->own_creds) {
		r->own_creds_err = ring_own_creds();
		r->own_creds = !r->own_creds_err;
	}
	for (i = 0; i < sizeof(setup_ladder) / sizeof(setup_ladder[0]); i++) {
		unsigned int flags = setup_ladder[i];

		/* SQPOLL submits from its own thread: no single issuer */
		if (p->sqpoll || !p->single_issuer)
			flags &= ~DBR_SINGLE_TASK;
		/*
		 * COOP_TASKRUN stays: io-wq hands each finished request back
		 * through task work, which would otherwise signal the thread
		 * (an IPI) once per I/O
		 */
		if (p->cqes_at_once && (flags & IORING_SETUP_DEFER_TASKRUN))
			continue;
		ret = ring_try_init(r, p, flags);
		if (ret != -EINVAL)
			break;
	}
	if (ret < 0)
		return ret;
	r->setup_flags = r->ring.flags;
	r->ready = true;
	/*
	 * Every enter looks the ring's fd up, and in a process whose threads
	 * share the file table (fio with thread=1, or any job thread beside
	 * fio's main one) that takes and drops a file reference each time. A
	 * registered ring fd skips that. It is valid only in this task, as a
	 * single issuer is; where the kernel lacks it (before 5.18) enters
	 * keep using the fd.
	 */
	if (p->single_issuer)
		io_uring_register_ring_fd(&r->ring);
	return 0;
}

void dbr_ring_exit(struct dbr_ring *r)
{
	if (!r->ready)
		return;
	io_uring_queue_exit(&r->ring);
	r->ready = false;
}

int dbr_ring_register_buf_table(struct dbr_ring *r, unsigned int nr)
{
	int ret = io_uring_register_buffers_sparse(&r->ring, nr);

	if (ret < 0)
		return ret;
	r->nr_bufs = nr;
	return 0;
}

int dbr_ring_register_file_table(struct dbr_ring *r, unsigned int nr)
{
	int ret = io_uring_register_files_sparse(&r->ring, nr);

	if (ret < 0)
		return ret;
	r->nr_files = nr;
	return 0;
}

int dbr_ring_set_file(struct dbr_ring *r, unsigned int slot, int fd)
{
	int ret;

	if (slot >= r->nr_files)
		return -EINVAL;
	ret = io_uring_register_files_update(&r->ring, slot, &fd, 1);
	return ret < 0 ? ret : 0;
}

int dbr_ring_install_host(struct dbr_ring *r, unsigned int slot,
			  void *addr, size_t len)
{
	struct iovec iov = { .iov_base = addr, .iov_len = len };
	__u64 tag = 0;
	int ret;

	if (slot >= r->nr_bufs)
		return -EINVAL;
	if (len > DBR_REGBUF_MAX_BYTES)
		return -E2BIG;
	ret = io_uring_register_buffers_update_tag(&r->ring, slot, &iov,
						   &tag, 1);
	return ret < 0 ? ret : 0;
}

/* The series' extended update: one descriptor into one slot. */
static int update_extended(int ring_fd, unsigned int slot,
			   const struct dbr_regbuf_desc *desc)
{
	struct dbr_rsrc_update2 up = {
		.offset	= slot,
		.flags	= DBR_RSRC_UPDATE_EXTENDED,
		.data	= (__u64)(uintptr_t)desc,
		.nr	= 1,
	};
	int ret;

	ret = syscall(__NR_io_uring_register, ring_fd,
		      DBR_REGISTER_BUFFERS_UPDATE, &up, sizeof(up));
	return ret < 0 ? -errno : ret;
}

int dbr_ring_install_dmabuf(struct dbr_ring *r, unsigned int slot,
			    int dmabuf_fd, int target_fd)
{
	struct dbr_regbuf_desc desc = {
		.type		= DBR_REGBUF_TYPE_DMABUF,
		.dmabuf_fd	= dmabuf_fd,
		.target_fd	= target_fd,
	};
	int ret;

	if (slot >= r->nr_bufs)
		return -EINVAL;
	ret = update_extended(r->ring.ring_fd, slot, &desc);
	if (ret < 0)
		return ret;
	return ret == 1 ? 0 : -EIO;
}

int dbr_ring_clear_buf(struct dbr_ring *r, unsigned int slot, bool dmabuf)
{
	struct dbr_regbuf_desc desc = { .type = DBR_REGBUF_TYPE_EMPTY };
	struct iovec iov = { 0 };
	__u64 tag = 0;
	int ret;

	if (slot >= r->nr_bufs)
		return -EINVAL;
	if (dmabuf)
		ret = update_extended(r->ring.ring_fd, slot, &desc);
	else
		ret = io_uring_register_buffers_update_tag(&r->ring, slot,
							   &iov, &tag, 1);
	return ret < 0 ? ret : 0;
}

/*
 * A target file opened: its fixed-file entry in file_slot (when the ring has
 * a file table) and the nr dma-bufs bound to it (the pieces of one area, see
 * dbr_split) in buffer slots buf_slot.., on a quiet ring. All or nothing:
 * when a dma-buf cannot be installed, what was installed goes again and so
 * does the file entry (the caller closes fd, and the table would keep the
 * file open).
 */
int dbr_ring_attach_pieces(struct dbr_ring *r, unsigned int file_slot, int fd,
			   unsigned int buf_slot, const int *dmabuf_fds,
			   unsigned int nr)
{
	unsigned int k = 0;
	int ret;

	if (r->nr_files) {
		ret = dbr_ring_set_file(r, file_slot, fd);
		if (ret < 0)
			return ret;
	}
	if (!nr)
		return 0;
	ret = dbr_ring_quiesce(r);
	for (; !ret && k < nr; k++)
		ret = dbr_ring_install_dmabuf(r, buf_slot + k, dmabuf_fds[k],
					      fd);
	if (!ret)
		return 0;
	while (k-- > 1)
		dbr_ring_clear_buf(r, buf_slot + k - 1, true);
	if (r->nr_files)
		dbr_ring_set_file(r, file_slot, -1);
	return ret;
}

int dbr_ring_attach_file(struct dbr_ring *r, unsigned int slot, int fd,
			 int dmabuf_fd)
{
	return dbr_ring_attach_pieces(r, slot, fd, slot, &dmabuf_fd,
				      dmabuf_fd >= 0 ? 1 : 0);
}

/*
 * Undo dbr_ring_attach_pieces (nr dma-bufs installed from buf_slot). Only
 * the dma-bufs need a quiet ring; a fixed-file entry may change under I/O
 * (requests in flight hold their own reference to the file).
 */
int dbr_ring_detach_pieces(struct dbr_ring *r, unsigned int file_slot,
			   unsigned int buf_slot, unsigned int nr)
{
	unsigned int k;
	int ret = 0, ret2;

	if (nr)
		ret = dbr_ring_quiesce(r);
	for (k = 0; k < nr; k++) {
		ret2 = dbr_ring_clear_buf(r, buf_slot + k, true);
		ret = ret ? ret : ret2;
	}
	if (r->nr_files) {
		ret2 = dbr_ring_set_file(r, file_slot, -1);
		ret = ret ? ret : ret2;
	}
	return ret;
}

int dbr_ring_detach_file(struct dbr_ring *r, unsigned int slot, bool dmabuf)
{
	return dbr_ring_detach_pieces(r, slot, slot, dmabuf ? 1 : 0);
}

/*
 * Does this kernel speak the series' extended buffer update? Clearing an
 * empty slot with an EMPTY descriptor is harmless everywhere: kernels without
 * the series reject the non-zero flags word with EINVAL, kernels built
 * without its config answer EOPNOTSUPP. Returns 0 when supported, else the
 * kernel's negative errno.
 */
int dbr_probe_p2p(void)
{
	struct dbr_ring_params p = { .entries = 2, .sqpoll_cpu = -1 };
	struct dbr_regbuf_desc desc = { .type = DBR_REGBUF_TYPE_EMPTY };
	struct dbr_ring r;
	int ret;

	ret = dbr_ring_init(&r, &p);
	if (ret < 0)
		return ret;
	ret = dbr_ring_register_buf_table(&r, 1);
	if (!ret)
		ret = update_extended(r.ring.ring_fd, 0, &desc);
	dbr_ring_exit(&r);
	return ret < 0 ? ret : 0;
}

/*
 * dbr_ring_submit's blocking wait with the watchdog armed: the same one
 * enter, woken each watch period to tell the watchdog how long nothing
 * has completed. Returns 0 once a completion can be reaped.
 */
static int submit_watched(struct dbr_ring *r, unsigned int wait_nr)
{
	struct dbr_watch *w = r->watch;
	struct io_uring_cqe *cqe;
	uint64_t t0;
	int ret;

	dbr_watch_begin(w, dbr_watch_now());
	for (;;) {
		struct __kernel_timespec ts = {
			.tv_sec = (long long)(w->period_ns / 1000000000ULL),
			.tv_nsec = (long long)(w->period_ns % 1000000000ULL),
		};

		t0 = dbr_prof_begin();
		ret = io_uring_submit_and_wait_timeout(&r->ring, &cqe, wait_nr,
						       &ts, NULL);
		dbr_prof_end(&r->prof, DBR_PROF_WAIT, t0);
		if (ret != -ETIME && ret != -EINTR)
			break;
		/* what was queued went in with the first enter */
		r->unsubmitted = 0;
		if (dbr_cq_ready(r) || !r->inflight)
			break;
		dbr_watch_quiet(w, dbr_watch_now(), r->inflight);
	}
	if (ret < 0 && ret != -ETIME && ret != -EINTR)
		return ret;
	r->unsubmitted = 0;
	dbr_watch_progress(w);
	return 0;
}

/* Submit what is queued, and wait for wait_nr completions in one enter. */
int dbr_ring_submit(struct dbr_ring *r, unsigned int wait_nr)
{
	uint64_t t0;
	int ret;

	if (!r->unsubmitted && !wait_nr)
		return 0;
	if (wait_nr && r->watch)
		return submit_watched(r, wait_nr);
	do {
		t0 = dbr_prof_begin();
		/*
		 * With DEFER_TASKRUN completions reach the CQ only when we
		 * enter with GETEVENTS: do that in the submit enter too, so
		 * the next reap finds them without an enter of its own (as
		 * task work run at syscall exit does for rings without it).
		 */
		if (!wait_nr && (r->setup_flags & IORING_SETUP_DEFER_TASKRUN))
			ret = io_uring_submit_and_get_events(&r->ring);
		else
			ret = io_uring_submit_and_wait(&r->ring, wait_nr);
		dbr_prof_end(&r->prof, wait_nr ? DBR_PROF_WAIT : DBR_PROF_SUBMIT,
			     t0);
	} while (ret == -EINTR);
	if (ret < 0)
		return ret;
	r->unsubmitted -= (unsigned int)ret < r->unsubmitted ?
			  (unsigned int)ret : r->unsubmitted;
	return ret;
}

/* Start the watcher again where it has left (a look, mostly). */
static int ring_kick(struct dbr_ring *r)
{
	return r->kick ? r->kick(r->kick_arg) : 0;
}

/*
 * Spin until the GPU's count has passed nr CQEs from head. Nothing wakes a
 * sleeper when the GPU writes host memory, so the wait never sleeps; past
 * gpu_spin_ns (gpu_spin_over's clock, as the pipeline's copy waits) it
 * yields between looks, so that the io-wq workers finishing this thread's
 * reads (or another job's) get the CPU it would burn, and kicks at every
 * yield, which may give the CPU away for a while.
 */
static int wait_gpu_count(struct dbr_ring *r, unsigned int head,
			  unsigned int nr)
{
	uint64_t t0 = gpu_now_ns();
	unsigned int polls = 0;
	bool yield = !r->gpu_spin_ns;
	int ret;

	while (dbr_cq_limit(r) - head < nr) {
		if (yield) {
			ret = ring_kick(r);
			if (ret < 0)
				return ret;
			sched_yield();
			r->gpu_yields++;
			continue;
		}
		if (!gpu_poll_look(&polls))
			continue;
		if (polls % 256 == 0) {
			ret = ring_kick(r);
			if (ret < 0)
				return ret;
		}
		yield = gpu_spin_over(t0, r->gpu_spin_ns);
	}
	r->gpu_wait_ns += gpu_now_ns() - t0;
	return 0;
}

/*
 * A watched CQ: enter while fewer than nr CQEs are posted (the kernel waits
 * for them), then wait while the GPU copies, starting its kernel where it
 * has left.
 */
int dbr_ring_wait_gpu(struct dbr_ring *r, unsigned int nr)
{
	int ret;

	if (r->unsubmitted) {
		ret = dbr_ring_submit(r, 0);
		if (ret < 0)
			return ret;
	}
	while (!r->stash && dbr_cq_ready(r) < nr) {
		unsigned int head = *r->ring.cq.khead;

		if (io_uring_cq_ready(&r->ring) < nr)
			ret = dbr_ring_submit(r, nr);
		else	/* posted: the GPU's count alone, not the ring's line */
			ret = wait_gpu_count(r, head, nr);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/*
 * Account one completion. A -EAGAIN is part of the series' contract (the
 * exporter may have moved the memory): the identical request goes back into
 * the SQ and the caller sees nothing. Returns 1 when req is complete, 0 when
 * it was reissued, or a negative errno when it could not be reissued.
 */
int dbr_ring_handle_cqe(struct dbr_ring *r, struct dbr_req *req, int res)
{
	if (res == -EAGAIN && req->reissues < DBR_MAX_REISSUE) {
		int ret = dbr_queue_sqe(r, req);

		if (ret < 0) {
			req->res = res;
			r->inflight--;
			return ret;
		}
		req->reissues++;
		r->reissues++;
		return 0;
	}
	req->res = res;
	r->inflight--;
	return 1;
}

static unsigned int pop_stash(struct dbr_ring *r, struct dbr_req **done,
			      unsigned int max)
{
	unsigned int n = 0;

	while (r->stash && n < max) {
		done[n++] = r->stash;
		r->stash = r->stash->next;
	}
	if (!r->stash)
		r->stash_tail = &r->stash;
	return n;
}

/* rings whose completions show only after an enter: deferred task work, polling */
#define DBR_ENTER_TO_REAP	(IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_IOPOLL)

/* With the CQ empty and I/O out, could an enter bring completions? */
static bool enter_would_reap(const struct dbr_ring *r)
{
	return (r->setup_flags & DBR_ENTER_TO_REAP) && r->inflight &&
	       !io_uring_cq_ready(&r->ring);
}

/*
 * Collect up to max completed requests without blocking. With DEFER_TASKRUN
 * the kernel posts completions only when asked, so ask first when the CQ
 * looks empty.
 */
static unsigned int reap_cqes(struct dbr_ring *r, struct dbr_req **done,
			      unsigned int max, bool flush)
{
	struct io_uring_cqe *cqe;
	unsigned int n = 0, head, seen = 0, limit;

	if (flush && enter_would_reap(r)) {
		uint64_t t0 = dbr_prof_begin();

		io_uring_get_events(&r->ring);
		dbr_prof_end(&r->prof, DBR_PROF_REAP, t0);
	}

	limit = dbr_cq_limit(r);
	io_uring_for_each_cqe(&r->ring, head, cqe) {
		struct dbr_req *req = dbr_cqe_req(r, cqe);
		int ret;

		if (n == max || head == limit)
			break;
		seen++;
		ret = dbr_ring_handle_cqe(r, req, cqe->res);
		if (ret != 0)
			done[n++] = req;
	}
	io_uring_cq_advance(&r->ring, seen);
	return n;
}

int dbr_ring_wait_timeout(struct dbr_ring *r, long ns)
{
	struct __kernel_timespec ts = {
		.tv_sec = ns / 1000000000L,
		.tv_nsec = ns % 1000000000L,
	};
	struct io_uring_cqe *cqe;
	uint64_t t0;
	int ret;

	if (r->stash || dbr_cq_ready(r))
		return dbr_ring_submit(r, 0);
	t0 = dbr_prof_begin();
	ret = io_uring_submit_and_wait_timeout(&r->ring, &cqe, 1, &ts, NULL);
	dbr_prof_end(&r->prof, DBR_PROF_NAP, t0);
	if (ret >= 0)
		r->unsubmitted = 0;
	return ret == -ETIME || ret == -EINTR ? 0 : ret;
}

unsigned int dbr_ring_ready(struct dbr_ring *r)
{
	if (r->stash)
		return 1;
	if (enter_would_reap(r)) {
		uint64_t t0 = dbr_prof_begin();

		io_uring_get_events(&r->ring);
		dbr_prof_end(&r->prof, DBR_PROF_LOOK, t0);
	}
	return dbr_cq_ready(r);
}

int dbr_ring_reap(struct dbr_ring *r, struct dbr_req **done, unsigned int max)
{
	unsigned int n = pop_stash(r, done, max);

	return n + reap_cqes(r, done + n, max - n, true);
}

int dbr_ring_reap_cq(struct dbr_ring *r, struct dbr_req **done,
		     unsigned int max)
{
	unsigned int n = pop_stash(r, done, max);

	return n + reap_cqes(r, done + n, max - n, false);
}

/* dbr_ring_next's out-of-line part: the stash, reissues, an empty CQ. */
struct dbr_req *dbr_ring_next_slow(struct dbr_ring *r, bool flush)
{
	struct dbr_req *req;

	if (r->stash) {
		req = r->stash;
		r->stash = req->next;
		if (!r->stash)
			r->stash_tail = &r->stash;
		return req;
	}
	if (!flush && !dbr_cq_ready(r))
		return NULL;
	return reap_cqes(r, &req, 1, true) ? req : NULL;
}

/*
 * Wait until nothing is in flight, keeping the completions for later reaps.
 * Registration changes need a quiet device.
 */
int dbr_ring_quiesce(struct dbr_ring *r)
{
	struct dbr_req *done[64];
	int ret, n, i;

	while (r->inflight) {
		ret = dbr_ring_submit(r, 1);
		if (ret < 0)
			return ret;
		n = reap_cqes(r, done, 64, true);
		for (i = 0; i < n; i++) {
			done[i]->next = NULL;
			*r->stash_tail = done[i];
			r->stash_tail = &done[i]->next;
		}
	}
	return 0;
}

int dbr_ring_layout(const struct dbr_ring *r, struct dbr_ring_layout *l)
{
	const struct io_uring *ring = &r->ring;
	size_t page = (size_t)sysconf(_SC_PAGESIZE), len;
	char *mem = ring->sq.ring_ptr;

	if (ring->cq.ring_ptr != ring->sq.ring_ptr)
		return -ENOTSUP;
	len = ring->sq.ring_sz > ring->cq.ring_sz ? ring->sq.ring_sz :
						     ring->cq.ring_sz;
	l->mem = mem;
	l->len = (len + page - 1) / page * page;
	l->fd = ring->ring_fd;
	l->cq_tail = (size_t)((char *)ring->cq.ktail - mem);
	l->sq_tail = (size_t)((char *)ring->sq.ktail - mem);
	l->cqes = (size_t)((char *)ring->cq.cqes - mem);
	l->cq_mask = ring->cq.ring_mask;
	return 0;
}

void dbr_ring_describe(const struct dbr_ring *r, char *buf, size_t len)
{
	static const struct { unsigned int flag; const char *name; } names[] = {
		{ IORING_SETUP_SQPOLL, "SQPOLL" },
		{ IORING_SETUP_IOPOLL, "IOPOLL" },
		{ IORING_SETUP_SINGLE_ISSUER, "SINGLE_ISSUER" },
		{ IORING_SETUP_DEFER_TASKRUN, "DEFER_TASKRUN" },
		{ IORING_SETUP_COOP_TASKRUN, "COOP_TASKRUN" },
		{ IORING_SETUP_TASKRUN_FLAG, "TASKRUN_FLAG" },
	};
	size_t i, used = 0;

	buf[0] = '\0';
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!(r->setup_flags & names[i].flag))
			continue;
		used += snprintf(buf + used, used < len ? len - used : 0,
				 "%s%s", used ? "|" : "", names[i].name);
	}
	if (!used)
		snprintf(buf, len, "none");
}
