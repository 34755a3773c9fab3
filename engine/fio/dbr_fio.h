/* SPDX-License-Identifier: MIT */
/*
 * What the fio glue's files share: the option struct, a thread's state, and
 * the engine's voice on fio's output. fio_engine.c holds the option table,
 * the hooks and the ops table; settle.c settles a thread's settings at init
 * (transfer path, provider and device, gpu_sync, spin time, checks, the
 * session they ask for); sess_errors.c says why a session step failed;
 * stall.c arms stall_watchdog and says a stall; report.c says which path a
 * thread runs and what it did at its end; placement.c and peers.c plan
 * across the threads of the run. The fio-free units (engine/core/, gpu/)
 * never include this: only the engine's library has engine/fio/ on its
 * include path (Makefile.am), and tests/layout.sh checks the layers.
 */
#ifndef DBR_FIO_H
#define DBR_FIO_H

#include <stdbool.h>

#include "fio.h"
#include "engines/cmdprio.h"

#include "dbr_config.h"
#include "iommu.h"
#include "pipeline.h"
#include "provider.h"
#include "ring.h"
#include "session.h"

#define DBR_NAME	"dmabuf_uring"

/* ------------------------------------------------------------------------ */
/* options (fio_engine.c's table fills the struct)                         */

/*
 * gpu=: auto, or n for provider n - 1 of the registry (gpu_provider_nth):
 * fio_engine.c lists the registry's names as the option's values.
 */
enum dbr_gpu_choice {
	DBR_GPU_AUTO,
};

enum dbr_gpu_cpus {
	DBR_CPUS_NONE,
	DBR_CPUS_AUTO,
};

enum dbr_thread_creds {
	DBR_CREDS_OWN,
	DBR_CREDS_SHARED,
};

struct dbr_options {
	void *pad;		/* fio keeps its td pointer here */
	unsigned int gpu;
	char *gpu_dev_ids;
	unsigned int gpu_cpus;
	unsigned int transfer;
	unsigned int p2p_iommu;
	unsigned int gpu_sync;
	unsigned int registerfiles;
	unsigned int sqpoll;
	unsigned int sqpoll_cpu;
	unsigned int sqpoll_cpu_set;
	unsigned int hipri;
	unsigned int force_async;
	unsigned int thread_creds;
	unsigned int gpu_copy;
	unsigned int gpu_kernel;
	unsigned int gpu_watch_cq;
	unsigned int gpu_owner;
	long long watchdog_us;	/* stall_watchdog, by fio's time parser */
	unsigned int watchdog_set;
	char *stats_file;
	char *spin_us;
	struct cmdprio_options cmdprio_options;	/* fio's cmdprio* options */
};

/* ------------------------------------------------------------------------ */
/* per-thread state                                                         */

struct dbr_data {
	struct dbr_session sess;	/* ring, buffer, pipeline, slots */
	unsigned int maps_per_dev;	/* p2p: registrations on the busiest device */
	struct dbr_watch watch;	/* stall_watchdog over the ring's waits */
	struct thread_data *td;	/* for the watchdog's line */
	struct dbr_pio *ios;	/* indexed by io_u->index */
	unsigned int nr_ios;
	struct dbr_pio **events;
	struct io_u **queued;	/* since the last commit, for issue times */
	unsigned int nr_queued;
	unsigned int prepped;	/* force_async: requests since the last async one */
	struct cmdprio cmdprio;	/* cmdprio_percentage/_bssplit, as fio's io_uring */
	unsigned long copy_errors_said;	/* the pipeline's copy_errors, as seen */
	bool copy_burst;	/* copies failing: said once until they work */
	char copy_why_said[192];	/* the reason last said ("": none yet) */
	unsigned long late;	/* I/O given back without their copies at the stop */
	int stats_fd;		/* gpu_stats_file, or -1 */
	const char *stats_path;	/* its name (the option's or the environment's) */
	bool ended;		/* dbr_end ran: results counted, all released */
	/* CPU time the GPU owner's thread spent on this process's calls
	 * (job processes through gpu_owner; -1: none) */
	int64_t owner_cpu_ns;
	bool owner_cpu_asked;
	/*
	 * The thread's I/O window (io_start_ms / io_end_ms in its record,
	 * whether a GPU's threads ran together), on the coarse clock: the
	 * last stamp is taken at every getevents that reaps, an I/O's worth
	 * of calls at fio's default batching, where the fine clock cost 0.9%
	 * of the process's samples (gpu=host, 4k reads on zram, 1 thread); a
	 * tick is well inside what the window is judged by (runs of a second
	 * and more, a 90% overlap).
	 */
	uint64_t io_first_ns;	/* gpu_coarse_ns at the first commit (0: none) */
	uint64_t io_last_ns;	/* and at the last getevents that reaped */
	char cpus_said[200];	/* gpu_cpus=auto: where the thread runs */
	enum dbr_context ctx;	/* whose GPU context its copies run in */
};

/*
 * One line naming cause and fix, then fio's own error record; evaluates to 1.
 * A macro so that td_verror's file:line in the record is the caller's.
 */
#define dbr_fail(td, err, func, msg) ({				\
	log_err("%s: %s\n", DBR_NAME, (msg));			\
	td_verror((td), (err), (func));				\
	1;							\
})

static inline bool dbr_first_thread(struct thread_data *td)
{
	return td->subjob_number == 0;
}

/*
 * dbr_fail for a refusal every thread of the job makes alike (the job's
 * options, the machine): the line once per job, the record on every thread.
 */
#define dbr_fail_job(td, err, func, msg) ({			\
	if (dbr_first_thread(td))				\
		log_err("%s: %s\n", DBR_NAME, (msg));		\
	td_verror((td), (err), (func));				\
	1;							\
})

/* ------------------------------------------------------------------------ */
/* report.c: the engine's lines, and a thread's end                         */

/* One line of ours, where fio's output format lets it go (report.c). */
void dbr_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* post_init, the first thread of a job: the path, ring and copies it runs */
void dbr_say_path(struct thread_data *td, struct dbr_data *dd);

/* p2p, the first thread of a job: the dma-buf re-exported as s->split's pieces */
void dbr_say_split(struct thread_data *td, const struct dbr_session *s);

/* After a reap of n: a burst of failed GPU copies said once, when it starts. */
void dbr_say_copy_errors(struct thread_data *td, struct dbr_data *dd, int n);

/*
 * The job stops (runtime over, a signal): reads start no more GPU copies,
 * and waits for copies already sent give up this long after the stop.
 */
#define DBR_STOP_BOUND_NS	(2000ull * 1000 * 1000)

/* After the thread's memory went: what the stop left undone, when anything. */
void dbr_say_stop(struct thread_data *td, struct dbr_data *dd);

/* What the thread's copies and the ring did, in one line (when any). */
void dbr_say_counts(struct thread_data *td, struct dbr_data *dd);
/* What the resident kernel's diagnostic build counted (when it ran). */
void dbr_say_kernel_rounds(struct thread_data *td, struct dbr_data *dd);
/* Through the GPU owner: the CPU its thread spent for this job process,
 * asked for before the session closes (into dd->owner_cpu_ns), and said */
void dbr_keep_owner_cpu(struct dbr_data *dd);
void dbr_say_owner_cpu(struct thread_data *td, struct dbr_data *dd);
/* Where the thread's time in the engine went per I/O (DBR_PROFILE=1). */
void dbr_say_profile(struct thread_data *td, struct dbr_data *dd);

/*
 * The thread's results into the run's table and gpu_stats_file (dd NULL:
 * a thread that never got its state); the run's last thread says the sums.
 */
void dbr_end_results(struct thread_data *td, struct dbr_data *dd);

/* ------------------------------------------------------------------------ */
/* sess_errors.c: a failed session step (session.h) said; each returns 1     */

/* dbr_sess_open's step failed, asked for c */
int dbr_open_failed(struct thread_data *td, const struct dbr_sess_cfg *c,
		    enum dbr_sess_step step, int ret);
/* dbr_sess_alloc's step failed for fio's total bytes */
int dbr_alloc_failed(struct thread_data *td, const struct dbr_session *s,
		     size_t total, enum dbr_sess_step step, int ret);
/* dbr_sess_start's step failed */
int dbr_start_failed(struct thread_data *td, const struct gpu_buf *b,
		     enum dbr_sess_step step, int ret);
/* dbr_sess_upload failed */
int dbr_upload_failed(struct thread_data *td, const struct gpu_buf *b,
		      int ret);
/* the split dma-buf's sp->nr pieces x maps registrations: over the kernel's
 * mappings per device */
int dbr_split_refused(struct thread_data *td, const struct dbr_session *s,
		      const struct dbr_split *sp, unsigned int maps);
/* dbr_sess_split_export failed at piece failed */
int dbr_split_failed(struct thread_data *td, const struct dbr_session *s,
		     unsigned int failed, int ret);
/* dbr_sess_attach of file f failed */
int dbr_attach_failed(struct thread_data *td, const struct dbr_session *s,
		      const struct fio_file *f, int ret);

/* ------------------------------------------------------------------------ */
/* stall.c: stall_watchdog's fio side                                       */

/*
 * stall_watchdog (on by default for p2p only) armed on the session's ring,
 * so that a stall says one line naming the oldest io_u's file. 0, or 1 for
 * a bad value (dbr_fail said why).
 */
int dbr_arm_watchdog(struct thread_data *td, struct dbr_data *dd);

/* ------------------------------------------------------------------------ */
/* settle.c: a thread's settings, at init; each 0 or 1 (dbr_fail said why)  */

/* gpu_spin_us, else $DBR_GPU_SPIN_US or the default */
int dbr_pick_spin(struct thread_data *td, long *spin_ns);
/* gpu_stats_file, else $DBR_GPU_STATS_FILE, opened into dd->stats_fd */
int dbr_open_stats(struct thread_data *td, struct dbr_data *dd);
/* the transfer path into *p2p: option checks, transfer=auto settled, p2p
 * that cannot run refused; *maps: p2p registrations on the thread's
 * busiest device */
int dbr_pick_path(struct thread_data *td, unsigned int *maps, bool *p2p);
/* transfer=auto settled to p2p: bounce where the GPU cannot export */
void dbr_auto_export(struct thread_data *td, const struct gpu_provider *prov,
		     int dev, bool *p2p);
/* threads of td's job on device dev, by gpu_dev_ids; 0: not known (auto) */
unsigned int dbr_job_threads_on(struct thread_data *td, int dev);
/* the provider gpu= names and the thread's device on it */
int dbr_pick_provider(struct thread_data *td,
		      const struct gpu_provider **provp, int *dev);
/*
 * gpu_owner settled into dd->ctx: for a job process of a GPU runtime, the
 * GPU owner is reached (started where need be) and *provp becomes the
 * provider that sends its calls there; where it cannot start, auto falls
 * back to a context of the process's own and says so once per run.
 */
int dbr_pick_context(struct thread_data *td, struct dbr_data *dd,
		     const struct gpu_provider **provp, int dev, bool p2p);
/* gpu_kernel settled into b->kernel_mode (and b->kernel_why) */
void dbr_pick_kernel(struct thread_data *td, struct gpu_buf *b,
		     enum dbr_context ctx);
/* gpu_watch_cq settled for the thread's buffer and path (dbr_watch_cq) */
bool dbr_pick_watch(struct thread_data *td, const struct gpu_buf *b, bool p2p);
/* gpu_cpus=auto applied (never fails: dd->cpus_said says what it did) */
void dbr_pin_cpus(struct thread_data *td, struct dbr_data *dd);
/* gpu_sync settled for provider prov into *sync */
int dbr_pick_sync(struct thread_data *td, const struct gpu_provider *prov,
		  bool *sync);
/* the session the thread's settings ask for: depth I/O slots, p2p or
 * bounce, gpu_sync */
void dbr_sess_cfg_of(struct thread_data *td, unsigned int depth, bool p2p,
		     bool sync, bool watch, struct dbr_sess_cfg *c);
/*
 * fio sizes a thread's files (get_file_size) before it lays out the ones
 * missing: a file it created carries this mark in its engine_data.
 */
extern const char dbr_created_mark;

#endif
