/* SPDX-License-Identifier: MIT */
/*
 * Job-level decisions that do not need fio: option values, the checks that
 * turn bad input into one clear message, device id selection and the
 * io_u -> registered-buffer address mapping. Unit tested on their own.
 */
#ifndef DBR_DBR_CONFIG_H
#define DBR_DBR_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum dbr_transfer {
	DBR_XFER_P2P	= 0,
	DBR_XFER_BOUNCE	= 1,
	DBR_XFER_AUTO	= 2,
};

enum dbr_gpu_sync {
	DBR_SYNC_OFF	= 0,
	DBR_SYNC_ON	= 1,
	DBR_SYNC_AUTO	= 2,
};

#define DBR_MAX_DEV_IDS	64

/* What the checks need to know about a fio job, filled in by the fio glue. */
struct dbr_job {
	enum dbr_transfer transfer;
	bool direct;
	bool hipri;
	bool does_trim;
	const char *trim_opt;	/* a trim option set, as "name=value"; or NULL */
	bool verify;
	unsigned int iodepth;	/* the ring's entries */
	size_t buf_bytes;	/* the thread's buffer area */
	size_t max_bs;		/* the largest I/O: one registered piece holds it */
	unsigned int nr_files;	/* files of the thread: p2p needs a slot each */
	unsigned int maps_per_dev; /* dma-buf registrations on its busiest device */
	int sqpoll_cpu;		/* SQ thread pinned here; < 0: not pinned */
	const char *online_cpus; /* sysfs cpu list, e.g. "0-3,8"; NULL: unknown */
};

/* fio's options that decide what a write carries (named as fio names them) */
struct dbr_buf_opts {
	bool pattern;		/* buffer_pattern */
	bool compress;		/* buffer_compress_percentage */
	bool dedupe;		/* dedupe_percentage */
	bool refill;		/* refill_buffers */
	bool scramble;		/* scramble_buffers=1 given by the user */
	bool zero;		/* zero_buffers */
};

/* What gpu_sync weighs. */
struct dbr_sync_job {
	enum dbr_gpu_sync setting;
	bool copies;		/* device memory apart from fio's buffers */
	bool verify;
	bool writes;
	struct dbr_buf_opts buf;
};

int dbr_check_job(const struct dbr_job *j, char *msg, size_t len);
/* Append to the string in buf (len bytes in all), cut where it ends. */
void dbr_cat(char *buf, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * A thread's buffer area as registered buffers of at most DBR_REGBUF_MAX_BYTES
 * each (ordinary fixed buffers always, dma-bufs where the kernel caps them):
 * piece k starts at k * span and is min(cap, size - k * span) long; pieces
 * overlap by at least the largest I/O, so every io_u buffer lies whole in
 * the piece dbr_split_piece names. One piece when size fits.
 */
struct dbr_split {
	size_t size;		/* the area, bytes */
	size_t cap;		/* most bytes of one piece */
	size_t span;		/* distance between the pieces' starts */
	unsigned int nr;	/* pieces */
};

/* gran: pieces start and end on it (2 MiB: every provider's export unit) */
int dbr_split_plan(struct dbr_split *s, size_t size, size_t max_bs,
		   size_t cap, size_t gran);
size_t dbr_split_len(const struct dbr_split *s, unsigned int k);

/* The piece an I/O at off (bytes into the area) goes through. */
static inline unsigned int dbr_split_piece(const struct dbr_split *s,
					   size_t off)
{
	size_t k;

	if (s->nr == 1)
		return 0;
	k = off / s->span;
	return k < s->nr ? (unsigned int)k : s->nr - 1;
}
int dbr_online_cpus(char *buf, size_t len);
bool dbr_cpu_listed(const char *list, int cpu);
unsigned int dbr_busiest_dev(const dev_t *mine, unsigned int nr_mine,
			     const dev_t *all, unsigned int nr_all);
int dbr_parse_dev_ids(const char *s, int *ids, int max, char *msg, size_t len);
/* gpu_kernel=auto: the option value beside gpu_kernel_mode's two */
#define DBR_GPU_KERNEL_AUTO	2u

/*
 * gpu_kernel settled (opt: GPU_KERNEL_RESIDENT, GPU_KERNEL_LAUNCH or
 * DBR_GPU_KERNEL_AUTO). auto is resident unless the thread is a job process
 * and gpu_procs (job processes of this engine that may run at once, itself
 * included) is over one: without MPS a GPU runs one process's kernels at a
 * time and time-slices between processes, so kernels that stay resident
 * would each get the GPU for a slice of milliseconds in turn. *why: the
 * reason for the line, where auto chose to launch.
 */
unsigned int dbr_kernel_mode(unsigned int opt, bool as_process,
			     unsigned int gpu_procs, const char **why);

/* gpu_owner=auto: the option value beside 0 and 1 */
#define DBR_GPU_OWNER_AUTO	2u

/* Whose GPU context a thread's copies run in (gpu_owner). */
enum dbr_context {
	DBR_CTX_NONE,		/* host memory: no GPU context at all */
	DBR_CTX_PROCESS,	/* the thread's process's: job threads share it */
	DBR_CTX_OWNER,		/* the GPU owner's, for every job process (gpu/owner.h) */
	DBR_CTX_MPS,		/* the job process's own, shared through MPS */
};

/*
 * gpu_owner settled (opt: 0, 1 or DBR_GPU_OWNER_AUTO) for a thread that is
 * a job process (as_process) of a GPU runtime (device; mps: an MPS server
 * serves its GPU). A job process's own context gets the GPU in time slices
 * with every other process's (without MPS), so job processes use the owner
 * unless gpu_owner=0, or auto finds MPS serving the GPU.
 */
enum dbr_context dbr_context_of(unsigned int opt, bool as_process, bool device,
				bool mps);

/* gpu_watch_cq=auto: the option value beside 0 and 1 */
#define DBR_WATCH_CQ_AUTO	2u

/*
 * gpu_watch_cq settled (opt: 0, 1 or DBR_WATCH_CQ_AUTO) for a thread whose
 * bounce reads the resident kernel copies (can: false for anything else).
 * auto is on for a job whose reads the kernel copies (reads:
 * dbr_reads_to_kernel) and end where they are issued (done_in_issue:
 * dbr_reads_done_in_issue on each of its files) where the engine's job
 * threads that may run at once (threads) are at least the online CPUs
 * (cpus). Each thread and its io-wq workers then wait for a CPU about as
 * long as they run, and a copy the kernel starts from a CQE an io-wq worker
 * posted does not wait for the thread to get one back. Below that the
 * thread gets to its reads at once, and the ring that defers completions to
 * it (DEFER_TASKRUN) keeps its cache lines on its CPU: watching cost 4k
 * reads from /dev/shm 7-25% at 1 to 8 threads on the H200's 16 cores and
 * gained 6-32% at 16 (docs/perf.md). Reads the block layer completes reach
 * the CQ only through the thread's own task work, so watching starts no copy
 * earlier and only loses DEFER_TASKRUN's batching: 16 job processes reading
 * /dev/zram0 ran 0.70-0.75x of fio's engine watched, 0.83-0.86x not. Off,
 * too, for a job that only writes or whose reads all go by DMA.
 */
bool dbr_watch_cq(unsigned int opt, bool can, bool reads, bool done_in_issue,
		  unsigned int threads, long cpus);

/*
 * Would the resident kernel copy a job's reads, by gpu_kcopy_takes' rule on
 * its smallest (min_bs)? Under gpu_copy=auto a job of 64 KiB reads and up
 * copies them all by DMA: watching its CQ would only cost its ring
 * DEFER_TASKRUN. (copy_mode: enum gpu_copy_mode.)
 */
bool dbr_reads_to_kernel(unsigned int copy_mode, unsigned long long min_bs);

int dbr_pick_dev(const int *ids, int n, unsigned int thread_idx);
int dbr_missing_dev(const int *ids, int n, unsigned int nr_threads, int count);
/*
 * stall_watchdog as fio's time parser gave it (us: microseconds; set: the
 * job gave it at all): 0 is off, else from 1 ms to a day; unset, 30 s for
 * p2p and off for bounce, whose waits it would otherwise time. *ns gets it;
 * -EINVAL with a message for anything else (fio reads an unknown unit as
 * microseconds: "5x" lands under 1 ms, and is refused there).
 */
int dbr_pick_watchdog(bool set, long long us, bool p2p, uint64_t *ns,
		      char *msg, size_t len);
const char *dbr_buf_option(const struct dbr_buf_opts *b);
int dbr_gpu_sync_on(const struct dbr_sync_job *j, char *msg, size_t len);
const char *dbr_transfer_name(enum dbr_transfer t);
/*
 * p2p I/O over a target's max_sectors_kb is split by the block layer, and
 * v3 of the series hangs on split dma-buf I/O: 1 and one line into msg
 * when max_bs is over max_kb (KiB; max_hw_kb < 0: unknown), else 0.
 */
int dbr_split_warning(const char *disk, size_t max_bs, long max_kb,
		      long max_hw_kb, char *msg, size_t len);

/* What decides whether p2p can run, as the fio glue found it. */
struct dbr_p2p_facts {
	int probe;		/* dbr_probe_p2p(): 0, or the kernel's -errno */
	bool direct;		/* direct=1 */
	const char *bad_file;	/* first file p2p cannot take, or NULL */
	const char *bad_kind;	/* what that file is (dbr_target_kind) */
	int iommu_err;		/* dbr_iommu_verdict of the first file it
				 * refuses (-EOPNOTSUPP, -ENODEV), or 0 */
	const char *iommu_why;	/* its reason */
	bool bad_created;	/* it did not exist: fio laid it out as a file */
	uint64_t bad_size;	/* then its size */
};

/*
 * Why p2p cannot run, every reason in one line into why (empty when it can):
 * ENOTSUP (the kernel), the IOMMU's errno (EOPNOTSUPP, ENODEV), EINVAL (the
 * job), or 0.
 */
int dbr_p2p_blockers(const struct dbr_p2p_facts *pf, char *why, size_t len);
/*
 * Settle *xfer: auto becomes p2p or bounce; p2p and bounce stay. Returns
 * what dbr_p2p_blockers said (0 for bounce), with its reasons in why.
 */
int dbr_settle_transfer(const struct dbr_p2p_facts *pf, enum dbr_transfer *xfer,
			char *why, size_t len);

/*
 * Address of an io_u's buffer as the ring wants it: for a dma-buf slot the
 * byte offset inside the dma-buf (the kernel's registered base is 0), for a
 * host slot the user address itself.
 */
static inline uint64_t dbr_io_addr(bool dmabuf, const void *base,
				   const void *buf)
{
	if (dmabuf)
		return (uint64_t)((const char *)buf - (const char *)base);
	return (uint64_t)(uintptr_t)buf;
}

#endif
