// SPDX-License-Identifier: MIT
/*
 * dmabuf_uring: fio external ioengine moving data between an NVMe namespace
 * and GPU memory with io_uring fixed buffers.
 *
 *   ioengine=external:/path/to/libdmabuf_uring.so
 *
 * This file holds the option table, the hooks and the ops table, and only
 * translates between fio and the fio-free units of engine/core/: session.c
 * (a thread's ring, buffer, pipeline and slot registrations), pipeline.c
 * (the stages an I/O passes: copies before, the ring, copies after), ring.c
 * (the io_uring side), config.c (an io_u's place in the registered pieces);
 * and gpu/ (the memory providers in gpu/runtime/, their copy stream in
 * gpu/copy/). The rest of fio's side sits beside it in engine/fio/
 * (dbr_fio.h): settle.c settles a thread's settings at init, placement.c
 * and peers.c plan across the threads of the run, sess_errors.c says why a
 * session step failed, stall.c arms stall_watchdog and says a stall,
 * report.c says which path a thread runs and what it did at its end. It
 * reads top to bottom like the engine's life cycle: options, init,
 * iomem_alloc and iomem_free, io_u_init, post_init, open_file,
 * get_file_size and close_file, queue, commit, getevents, event, cleanup;
 * then what runs when fio loads the engine (gpu='s values, the results
 * table) and the ops table.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dbr_fio.h"
#include "dbr_uapi.h"
#include "optgroup.h"
#include "peers.h"
#include "results.h"

/* ------------------------------------------------------------------------ */
/* options                                                                  */

static int str_sqpoll_cpu_cb(void *data, unsigned long long *val)
{
	struct dbr_options *o = data;

	o->sqpoll_cpu = *val;
	o->sqpoll_cpu_set = 1;
	return 0;
}

/*
 * stall_watchdog: fio's time parser gives microseconds; given at all, it
 * replaces the path's default. fio calls back once per part of "a-b" or
 * "a,b" (its read,write pairs), so "-5" comes as -5 s and then 5 s: the
 * negative is kept, for the refusal.
 */
static int str_watchdog_cb(void *data, long long *val)
{
	struct dbr_options *o = data;

	if (o->watchdog_set && o->watchdog_us < 0)
		return 0;
	o->watchdog_us = *val;
	o->watchdog_set = 1;
	return 0;
}

static struct fio_option options[] = {
	{
		.name	= "gpu",
		.lname	= "GPU memory provider",
		.type	= FIO_OPT_STR,
		.off1	= offsetof(struct dbr_options, gpu),
		.help	= "Where the I/O buffers live",
		.def	= "auto",
		/* then the providers' names: dbr_list_providers */
		.posval = {
			  { .ival = "auto", .oval = DBR_GPU_AUTO,
			    .help = "The first provider below with a device, else host memory" },
		},
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_IOURING,
	},
	{
		.name	= "gpu_dev_ids",
		.lname	= "GPU device ordinals",
		.type	= FIO_OPT_STR_STORE,
		.off1	= offsetof(struct dbr_options, gpu_dev_ids),
		.help	= "GPUs to use, ':' separated (thread i uses entry i mod n), or auto: the GPU nearest the controller of the thread's files",
		.def	= "0",
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_IOURING,
	},
	{
		.name	= "gpu_cpus",
		.lname	= "CPUs near the GPU",
		.type	= FIO_OPT_STR,
		.off1	= offsetof(struct dbr_options, gpu_cpus),
		.help	= "Run each thread on the CPUs of its GPU's NUMA node",
		.def	= "none",
		.posval = {
			  { .ival = "none", .oval = DBR_CPUS_NONE,
			    .help = "Leave thread placement to fio and the kernel" },
			  { .ival = "auto", .oval = DBR_CPUS_AUTO,
			    .help = "The GPU's NUMA node, unless cpus_allowed (or numa_cpu_nodes) is set" },
		},
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_IOURING,
	},
	{
		.name	= "transfer",
		.lname	= "Transfer path",
		.type	= FIO_OPT_STR,
		.off1	= offsetof(struct dbr_options, transfer),
		.help	= "How data moves between the device and GPU memory",
		.def	= "p2p",
		.posval = {
			  { .ival = "p2p", .oval = DBR_XFER_P2P,
			    .help = "NVMe DMA straight into the GPU's dma-buf" },
			  { .ival = "bounce", .oval = DBR_XFER_BOUNCE,
			    .help = "Host fixed buffer plus an async GPU copy" },
			  { .ival = "auto", .oval = DBR_XFER_AUTO,
			    .help = "p2p where the kernel and target allow it, else bounce" },
		},
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_IOURING,
	},
	{
		.name	= "p2p_iommu",
		.lname	= "p2p under a translating IOMMU",
		.type	= FIO_OPT_STR,
		.off1	= offsetof(struct dbr_options, p2p_iommu),
		.help	= "p2p of GPU memory where an IOMMU translates for the NVMe controller",
		.def	= "refuse",
		.posval = {
			  { .ival = "refuse", .oval = DBR_P2P_IOMMU_REFUSE,
			    .help = "Refuse: the controller's DMA to the GPU's physical addresses would be lost" },
			  { .ival = "allow", .oval = DBR_P2P_IOMMU_ALLOW,
			    .help = "Run: the IOVA == physical mapping modules (dmabuf-import, iommu-map-pa) are loaded" },
		},
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_IOURING,
	},
	{
		.name	= "gpu_sync",
		.lname	= "Copy GPU memory to and from fio's buffers",
		.type	= FIO_OPT_STR,
		.off1	= offsetof(struct dbr_options, gpu_sync),
		.help	= "Keep fio's host buffers and GPU memory in step (for verify and patterns)",
		.def	= "auto",
		.posval = {
			  { .ival = "auto", .oval = DBR_SYNC_AUTO,
			    .help = "On for verify, and for writes that fio's buffer options shape" },
			  { .ival = "0", .oval = DBR_SYNC_OFF,
			    .help = "Off: no CPU-side copies" },
			  { .ival = "1", .oval = DBR_SYNC_ON,
			    .help = "On" },
		},
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_IOURING,
	},
	{
		.name	= "registerfiles",
		.lname	= "Register file set",
		.type	= FIO_OPT_STR_SET,
		.off1	= offsetof(struct dbr_options, registerfiles),
		.help	= "Pre-open/register files",
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_IOURING,
	},
	{
		.name	= "sqthread_poll",
		.lname	= "Kernel SQ thread polling",
		.type	= FIO_OPT_STR_SET,
		.off1	= offsetof(struct dbr_options, sqpoll),
		.help	= "Offload submission/completion to kernel thread",
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_IOURING,
	},
	{
		.name	= "sqthread_poll_cpu",
		.lname	= "SQ Thread Poll CPU",
		.type	= FIO_OPT_INT,
		.cb	= str_sqpoll_cpu_cb,
		.help	= "What CPU to run SQ thread polling on",
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_IOURING,
	},
	{
		.name	= "hipri",
		.lname	= "High Priority",
		.type	= FIO_OPT_STR_SET,
		.off1	= offsetof(struct dbr_options, hipri),
		.help	= "Use polled IO completions (IORING_SETUP_IOPOLL; transfer=bounce only: the dma-buf series refuses polled rings)",
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_IOURING,
	},
#ifdef FIO_HAVE_IOPRIO_CLASS
	/* fio's io_uring engine's cmdprio options, with fio's own helpers */
	{
		.name	= "cmdprio_percentage",
		.lname	= "high priority percentage",
		.type	= FIO_OPT_INT,
		.off1	= offsetof(struct dbr_options,
				   cmdprio_options.percentage[DDIR_READ]),
		.off2	= offsetof(struct dbr_options,
				   cmdprio_options.percentage[DDIR_WRITE]),
		.minval	= 0,
		.maxval	= 100,
		.help	= "Send high priority I/O this percentage of the time",
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_IOURING,
	},
	{
		.name	= "cmdprio_class",
		.lname	= "Asynchronous I/O priority class",
		.type	= FIO_OPT_INT,
		.off1	= offsetof(struct dbr_options,
				   cmdprio_options.class[DDIR_READ]),
		.off2	= offsetof(struct dbr_options,
				   cmdprio_options.class[DDIR_WRITE]),
		.help	= "Set asynchronous IO priority class",
		.minval	= IOPRIO_MIN_PRIO_CLASS + 1,
		.maxval	= IOPRIO_MAX_PRIO_CLASS,
		.interval = 1,
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_IOURING,
	},
	{
		.name	= "cmdprio",
		.lname	= "Asynchronous I/O priority level",
		.type	= FIO_OPT_INT,
		.off1	= offsetof(struct dbr_options,
				   cmdprio_options.level[DDIR_READ]),
		.off2	= offsetof(struct dbr_options,
				   cmdprio_options.level[DDIR_WRITE]),
		.help	= "Set asynchronous IO priority level",
		.minval	= IOPRIO_MIN_PRIO,
		.maxval	= IOPRIO_MAX_PRIO,
		.interval = 1,
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_IOURING,
	},
	{
		.name	= "cmdprio_bssplit",
		.lname	= "Priority percentage block size split",
		.type	= FIO_OPT_STR_STORE,
		.off1	= offsetof(struct dbr_options,
				   cmdprio_options.bssplit_str),
		.help	= "Set priority percentages for different block sizes",
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_IOURING,
	},
#endif
	{
		.name	= "force_async",
		.lname	= "Force async",
		.type	= FIO_OPT_INT,
		.off1	= offsetof(struct dbr_options, force_async),
		.help	= "Send every Nth request to io_uring's async workers at once (IOSQE_ASYNC); 0: never",
		.def	= "0",
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_IOURING,
	},
	{
		.name	= "thread_creds",
		.lname	= "Credentials of each job thread",
		.type	= FIO_OPT_STR,
		.off1	= offsetof(struct dbr_options, thread_creds),
		.help	= "Whose credentials io_uring counts a reference on for every request it hands to io-wq",
		.def	= "own",
		.posval = {
			  { .ival = "own", .oval = DBR_CREDS_OWN,
			    .help = "A copy per job thread, made before its ring: the count stays on the thread's own cache line" },
			  { .ival = "shared", .oval = DBR_CREDS_SHARED,
			    .help = "The process's, shared by all its threads (as fio's io_uring engine runs)" },
		},
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_IOURING,
	},
	{
		.name	= "gpu_copy",
		.lname	= "How GPU copies run",
		.type	= FIO_OPT_STR,
		.off1	= offsetof(struct dbr_options, gpu_copy),
		.help	= "How bounce copies between host and GPU memory run",
		.def	= "auto",
		.posval = {
			  { .ival = "auto", .oval = GPU_COPY_AUTO,
			    .help = "Copy kernel for copies under 64 KiB where it loads, DMA for the rest" },
			  { .ival = "dma", .oval = GPU_COPY_DMA,
			    .help = "The runtime's copy calls (DMA engines) only" },
			  { .ival = "kernel", .oval = GPU_COPY_KERNEL,
			    .help = "Copy kernel for every 16-byte aligned copy where it loads" },
		},
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_IOURING,
	},
	{
		.name	= "gpu_owner",
		.lname	= "Whose GPU context job processes use",
		.type	= FIO_OPT_STR,
		.off1	= offsetof(struct dbr_options, gpu_owner),
		.help	= "Job processes (no thread=1): run their GPU calls in one owner process per GPU and run, or each in a context of its own",
		.def	= "auto",
		.posval = {
			  { .ival = "auto", .oval = DBR_GPU_OWNER_AUTO,
			    .help = "The owner, except where MPS serves the GPU (then a context each, shared through MPS)" },
			  { .ival = "1", .oval = 1,
			    .help = "The owner; the job fails where it cannot start" },
			  { .ival = "0", .oval = 0,
			    .help = "A context in each job process: the GPU time-slices between them" },
		},
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_IOURING,
	},
	{
		.name	= "gpu_kernel",
		.lname	= "How the copy kernel runs",
		.type	= FIO_OPT_STR,
		.off1	= offsetof(struct dbr_options, gpu_kernel),
		.help	= "How the copy kernel (gpu_copy=auto|kernel) takes its copies",
		.def	= "auto",
		.posval = {
			  { .ival = "auto", .oval = DBR_GPU_KERNEL_AUTO,
			    .help = "resident, except where job processes each have a context of their own beside one another (gpu_owner=0, no MPS: the GPU time-slices between them): launch" },
			  { .ival = "resident", .oval = GPU_KERNEL_RESIDENT,
			    .help = "One block per thread stays on the GPU and polls a ring in host memory: no runtime call per pass" },
			  { .ival = "launch", .oval = GPU_KERNEL_LAUNCH,
			    .help = "One kernel launch per pass" },
		},
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_IOURING,
	},
	{
		.name	= "gpu_watch_cq",
		.lname	= "Resident kernel watches the CQ",
		.type	= FIO_OPT_STR,
		.off1	= offsetof(struct dbr_options, gpu_watch_cq),
		.help	= "Bounce reads: the resident copy kernel watches the ring's CQ and copies each read as its CQE comes, on a ring whose completions are posted as they come (no DEFER_TASKRUN)",
		.def	= "auto",
		.posval = {
			  { .ival = "auto", .oval = DBR_WATCH_CQ_AUTO,
			    .help = "On for a job whose reads the kernel copies (its smallest read under 64 KiB, or gpu_copy=kernel) and end where they are issued (a file on tmpfs, or direct=0: io-wq posts their CQEs), where the job's threads are at least the online CPUs (they and their io-wq workers then wait for a CPU), else off (a block device's O_DIRECT reads reach the CQ only through the job's own task work)" },
			  { .ival = "1", .oval = 1,
			    .help = "On wherever the resident kernel runs" },
			  { .ival = "0", .oval = 0,
			    .help = "Off: the job thread sends each read's copy when it reaps it" },
		},
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_IOURING,
	},
	{
		.name	= "stall_watchdog",
		.lname	= "Stall watchdog",
		.type	= FIO_OPT_STR_VAL_TIME,
		.cb	= str_watchdog_cb,
		.is_seconds = 1,
		.is_time = 1,
		.help	= "Time with I/O in flight and nothing completing before one line says which target stalled and where to look (fio's time units; a bare number is seconds); 0: off (default: 30s for p2p, off for bounce)",
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_IOURING,
	},
	{
		.name	= "gpu_spin_us",
		.lname	= "Spin before sleeping for GPU copies",
		.type	= FIO_OPT_STR_STORE,
		.off1	= offsetof(struct dbr_options, spin_us),
		.help	= "Microseconds a wait for GPU copies spins before it sleeps; 0 sleeps at once, -1 spins until done (default: $DBR_GPU_SPIN_US, else 20)",
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_IOURING,
	},
	{
		.name	= "gpu_stats_file",
		.lname	= "Per-thread GPU results file",
		.type	= FIO_OPT_STR_STORE,
		.off1	= offsetof(struct dbr_options, stats_file),
		.help	= "Append one JSON line per thread (GPU, path, bytes, I/O, runtime, copies) to this file (default: $DBR_GPU_STATS_FILE)",
		.category = FIO_OPT_C_ENGINE,
		.group	= FIO_OPT_G_IOURING,
	},
	{
		.name	= NULL,
	},
};

/* ------------------------------------------------------------------------ */
/* init: the thread's settings (settle.c), its state and ring               */

static int dbr_alloc_state(struct thread_data *td, struct dbr_data *dd)
{
	unsigned int depth = td->o.iodepth;

	dd->nr_ios = depth;
	dd->ios = calloc(depth, sizeof(*dd->ios));
	dd->events = calloc(depth, sizeof(*dd->events));
	dd->queued = calloc(depth, sizeof(*dd->queued));
	if (!dd->ios || !dd->events || !dd->queued)
		return -ENOMEM;
	return 0;
}

static void dbr_free_state(struct dbr_data *dd)
{
	free(dd->ios);
	free(dd->events);
	free(dd->queued);
	free(dd);
}

/*
 * The session's ring: dma-buf slots per file for p2p, host slots else; the
 * stall watchdog on its waits.
 */
static int dbr_open_session(struct thread_data *td, struct dbr_data *dd,
			    bool p2p, bool sync)
{
	struct dbr_sess_cfg c;
	enum dbr_sess_step step;
	int ret;

	dbr_sess_cfg_of(td, dd->nr_ios, p2p, sync,
			dbr_pick_watch(td, &dd->sess.buf, p2p), &c);
	ret = dbr_sess_open(&dd->sess, &c, &step);
	if (ret)
		return dbr_open_failed(td, &c, step, ret);
	return dbr_arm_watchdog(td, dd);
}

static void dbr_end(struct thread_data *td, struct dbr_data *dd);

static int dbr_init(struct thread_data *td)
{
	struct dbr_options *o = td->eo;
	const struct gpu_provider *prov;
	struct dbr_data *dd;
	long spin_ns;
	bool p2p, sync;
	int dev;

	dd = calloc(1, sizeof(*dd));
	if (!dd)
		return dbr_fail(td, ENOMEM, "init", "out of memory");
	td->io_ops_data = dd;
	dbr_sess_init(&dd->sess);
	dd->stats_fd = -1;
	dd->owner_cpu_ns = -1;
	if (dbr_alloc_state(td, dd) < 0) {
		dbr_fail(td, ENOMEM, "init", "out of memory");
		goto err;
	}
	dbr_tally_join(dbr_run_of(td), dbr_run_threads());
	if (dbr_open_stats(td, dd) || dbr_pick_spin(td, &spin_ns))
		goto err;
	/* fio's helper says what is wrong with a cmdprio option itself */
	if (fio_cmdprio_init(td, &dd->cmdprio, &o->cmdprio_options)) {
		td_verror(td, EINVAL, "cmdprio");
		goto err;
	}
	if (dbr_pick_path(td, &dd->maps_per_dev, &p2p) ||
	    dbr_pick_provider(td, &prov, &dev))
		goto err;
	if (o->transfer == DBR_XFER_AUTO && p2p)
		dbr_auto_export(td, prov, dev, &p2p);
	if (dbr_pick_context(td, dd, &prov, dev, p2p))
		goto err;
	gpu_buf_init(&dd->sess.buf, prov, dev, spin_ns);
	dd->sess.buf.copy_mode = o->gpu_copy;
	dbr_pick_kernel(td, &dd->sess.buf, dd->ctx);
	dbr_pin_cpus(td, dd);
	if (dbr_pick_sync(td, prov, &sync) ||
	    dbr_open_session(td, dd, p2p, sync))
		goto err;
	return 0;
err:
	dbr_end(td, dd);
	return 1;
}

/* ------------------------------------------------------------------------ */
/* memory: host shadow + device allocation, registered once per thread      */

static int dbr_iomem_alloc(struct thread_data *td, size_t total_mem)
{
	struct dbr_data *dd = td->io_ops_data;
	enum dbr_sess_step step;
	int ret;

	ret = dbr_sess_alloc(&dd->sess, total_mem, &step);
	if (ret < 0)
		return dbr_alloc_failed(td, &dd->sess, total_mem, step, ret);
	td->orig_buffer = dd->sess.buf.host;
	return 0;
}

/* Runs before cleanup: the session goes whole (registrations, stream, memory, ring). */
static void dbr_iomem_free(struct thread_data *td)
{
	struct dbr_data *dd = td->io_ops_data;

	if (!dd)
		return;
	dbr_keep_owner_cpu(dd);
	dbr_sess_close(&dd->sess);
	td->orig_buffer = NULL;
}

static int dbr_io_u_init(struct thread_data *td, struct io_u *io_u)
{
	struct dbr_data *dd = td->io_ops_data;

	if (io_u->index >= dd->nr_ios)
		return 1;
	dd->ios[io_u->index].user = io_u;
	return 0;
}

/* Device memory starts as a copy of fio's buffers, so un-synced writes carry
 * fio's data, not whatever the allocator left there. */
static int dbr_seed_device(struct thread_data *td, struct dbr_data *dd)
{
	int ret = dbr_sess_upload(&dd->sess);

	return ret ? dbr_upload_failed(td, &dd->sess.buf, ret) : 0;
}

static int dbr_post_init(struct thread_data *td)
{
	struct dbr_data *dd = td->io_ops_data;
	enum dbr_sess_step step;
	int ret;

	/* fio 3.33 calls post_init even when iomem_alloc failed */
	if (!td->orig_buffer)
		return 1;
	ret = dbr_sess_start(&dd->sess, &step);
	if (ret < 0)
		return dbr_start_failed(td, &dd->sess.buf, step, ret);
	if (dbr_seed_device(td, dd))
		return 1;
	dbr_say_path(td, dd);
	return 0;
}

/* ------------------------------------------------------------------------ */
/* files: a dma-buf slot is bound to one file                               */

/*
 * The kernel refused one dma-buf that large (v3 to v5 of the series cap it
 * at 1 GiB): export the area again as pieces of at most 1 GiB, each holding
 * whole io_u buffers, and say so once. Every piece is a mapping on the
 * device, so the per-device count is checked again.
 */
static int dbr_split_dmabuf(struct thread_data *td, struct dbr_data *dd)
{
	struct dbr_session *s = &dd->sess;
	struct dbr_split sp;
	unsigned int failed = 0;
	int ret;

	if (dbr_sess_split_plan(s, &sp))
		return -EINVAL;
	if (dd->maps_per_dev * sp.nr > DBR_MAX_MAPS_PER_DEV)
		return dbr_split_refused(td, s, &sp, dd->maps_per_dev);
	ret = dbr_sess_split_export(s, &sp, &failed);
	if (ret < 0)
		return dbr_split_failed(td, s, failed, ret);
	dbr_say_split(td, s);
	return 0;
}

static int dbr_attach_file(struct thread_data *td, struct dbr_data *dd,
			   struct fio_file *f)
{
	struct dbr_session *s = &dd->sess;
	int ret;

	if (f->fileno >= (int)s->nr_slots)
		return dbr_fail(td, EINVAL, "open_file", "file index beyond the buffer table");
	ret = dbr_sess_attach(s, f->fileno, f->fd);
	if (ret == -EINVAL && s->p2p && !s->piece_fd &&
	    s->buf.size > DBR_REGBUF_MAX_BYTES) {
		if (dbr_split_dmabuf(td, dd))
			return 1;
		ret = dbr_sess_attach(s, f->fileno, f->fd);
	}
	return ret ? dbr_attach_failed(td, s, f, ret) : 0;
}

static int dbr_open_file(struct thread_data *td, struct fio_file *f)
{
	struct dbr_data *dd = td->io_ops_data;
	int ret;

	ret = generic_open_file(td, f);
	/* fio also opens block devices to size them, before init */
	if (ret || !dd)
		return ret;
	if (!dd->sess.ring.nr_files && !dd->sess.p2p)
		return 0;
	if (!dbr_attach_file(td, dd, f))
		return 0;
	/* keep the error that brought us here, not the close's */
	if (generic_close_file(td, f))
		log_err("%s: closing %s failed too\n", DBR_NAME, f->file_name);
	return 1;
}

const char dbr_created_mark;

/* A file missing now is one fio creates before init: mark it, for the
 * message that blames the name. */
static int dbr_get_file_size(struct thread_data *td, struct fio_file *f)
{
	int ret = generic_get_file_size(td, f);

	if (ret && td->error == ENOENT && f->filetype == FIO_TYPE_FILE)
		FILE_SET_ENG_DATA(f, (void *)&dbr_created_mark);
	return ret;
}

static int dbr_close_file(struct thread_data *td, struct fio_file *f)
{
	struct dbr_data *dd = td->io_ops_data;

	if (dd && f->fileno >= 0)
		dbr_sess_detach(&dd->sess, f->fileno);
	return generic_close_file(td, f);
}

/* ------------------------------------------------------------------------ */
/* I/O                                                                      */

static enum dbr_op dbr_op_of(const struct io_u *io_u)
{
	switch (io_u->ddir) {
	case DDIR_READ:
		return DBR_OP_READ;
	case DDIR_WRITE:
		return DBR_OP_WRITE;
	case DDIR_DATASYNC:
		return DBR_OP_FDATASYNC;
	case DDIR_SYNC_FILE_RANGE:
		return DBR_OP_SYNC_FILE_RANGE;
	default:
		return DBR_OP_FSYNC;
	}
}

static void dbr_prep_req(struct thread_data *td, struct dbr_data *dd,
			 struct dbr_pio *io)
{
	struct dbr_options *o = td->eo;
	struct io_u *io_u = io->user;
	struct fio_file *f = io_u->file;
	struct dbr_req *req = &io->req;
	unsigned int k;

	req->op = dbr_op_of(io_u);
	req->fixed_file = o->registerfiles;
	req->fd = o->registerfiles ? (int)f->fileno : f->fd;
	req->off = io_u->offset;
	req->len = io_u->xfer_buflen;
	if (io_u->ddir == DDIR_SYNC_FILE_RANGE) {
		/* what fio's io_uring engine asks for: the range written since */
		req->off = f->first_write;
		req->len = (uint32_t)(f->last_write - f->first_write);
		req->sync_flags = td->o.sync_file_range;
	}
	/* the piece of the area (dbr_split) that holds this io_u's buffer */
	io->off = (char *)io_u->xfer_buf - (char *)dd->sess.buf.host;
	k = dbr_split_piece(&dd->sess.split, io->off);
	req->buf_index = dd->sess.p2p ? f->fileno * dd->sess.pieces + k : k;
	req->addr = dbr_io_addr(dd->sess.p2p, td->orig_buffer, io_u->xfer_buf) -
		    (dd->sess.p2p ? (uint64_t)k * dd->sess.split.span : 0);
	/* as fio's io_uring engine: fio's prio/prioclass, or cmdprio's pick */
	req->ioprio = 0;
	if (ddir_rw(io_u->ddir)) {
		if (dd->cmdprio.mode != CMDPRIO_MODE_NONE)
			fio_cmdprio_set_ioprio(td, &dd->cmdprio, io_u);
		req->ioprio = io_u->ioprio;
	}
	/* as fio's io_uring engine counts it: every Nth request prepared */
	req->force_async = false;
	if (o->force_async && ++dd->prepped == o->force_async) {
		dd->prepped = 0;
		req->force_async = true;
	}
}

static enum fio_q_status dbr_queue_io(struct thread_data *td,
				      struct dbr_data *dd, struct io_u *io_u)
{
	struct dbr_pio *io = &dd->ios[io_u->index];
	int ret;

	fio_ro_check(td, io_u);

	if (io_u->ddir == DDIR_TRIM) {
		io_u->error = EOPNOTSUPP;
		return FIO_Q_COMPLETED;
	}
	dbr_prep_req(td, dd, io);
	ret = dbr_pipe_queue(&dd->sess.pipe, io);
	if (ret == -EBUSY)
		return FIO_Q_BUSY;
	if (ret < 0) {
		io_u->error = -ret;
		return FIO_Q_COMPLETED;
	}
	dd->queued[dd->nr_queued++] = io_u;
	return FIO_Q_QUEUED;
}

static enum fio_q_status dbr_queue(struct thread_data *td, struct io_u *io_u)
{
	struct dbr_data *dd = td->io_ops_data;
	uint64_t t0 = dbr_prof_begin();
	enum fio_q_status ret = dbr_queue_io(td, dd, io_u);

	dbr_prof_end(&dd->sess.ring.prof, DBR_PROF_QUEUE, t0);
	return ret;
}

/*
 * The io_us queued since the last submission are in the engine's hands now:
 * their issue time (fio's slat ends, clat starts) and fio's submit count.
 */
static void dbr_mark_issued(struct thread_data *td, struct dbr_data *dd)
{
	struct timespec now;
	unsigned int i;

	if (fio_fill_issue_time(td)) {
		fio_gettime(&now, NULL);
		for (i = 0; i < dd->nr_queued; i++) {
			dd->queued[i]->issue_time = now;
			io_u_queued(td, dd->queued[i]);
		}
		if (td->o.read_iolog_file)
			td->last_issue = now;
	}
	io_u_mark_submit(td, dd->nr_queued);
	dd->nr_queued = 0;
}

static int dbr_commit_queued(struct thread_data *td, struct dbr_data *dd)
{
	int ret;

	if (!dd->io_first_ns)
		dd->io_first_ns = gpu_coarse_ns();
	dbr_pipe_commit(&dd->sess.pipe);
	/*
	 * No free io_u left: fio cannot go on without reaping, so its next
	 * call is getevents, which submits these and waits in one enter
	 * (fio's io_uring engine enters here and again there), and marks
	 * them issued just before. An SQPOLL thread wants the SQ tail now.
	 */
	if (io_u_qempty(&td->io_u_freelist) &&
	    !(dd->sess.ring.setup_flags & IORING_SETUP_SQPOLL))
		return 0;
	ret = dbr_pipe_submit(&dd->sess.pipe);
	if (ret < 0)
		return ret;
	dbr_mark_issued(td, dd);
	return 0;
}

static int dbr_commit(struct thread_data *td)
{
	struct dbr_data *dd = td->io_ops_data;
	uint64_t t0;
	int ret;

	if (!dd->nr_queued)
		return 0;
	t0 = dbr_prof_begin();
	ret = dbr_commit_queued(td, dd);
	dbr_prof_end(&dd->sess.ring.prof, DBR_PROF_COMMIT, t0);
	return ret;
}

/* Is the job ending: a signal, or its runtime over (as fio's own check)? */
static bool dbr_job_stopping(void *arg)
{
	struct thread_data *td = arg;

	if (td->terminate)
		return true;
	if (!td->o.timeout || in_ramp_time(td))
		return false;
	return utime_since_now(&td->epoch) >= td->o.timeout;
}

static int dbr_getevents(struct thread_data *td, unsigned int min,
			 unsigned int max, const struct timespec *t)
{
	struct dbr_data *dd = td->io_ops_data;
	uint64_t t0 = dbr_prof_begin();
	int ret;

	(void)t;
	/*
	 * Waits for copies poll and ask dbr_job_stopping (from the job's
	 * first getevents on: its clock runs then); at the job's end reads
	 * start no new copies, and the old ones get a bound.
	 */
	if (dd->sess.pipe.copies && !dd->sess.buf.stop) {
		dd->sess.buf.stop_bound_ns = DBR_STOP_BOUND_NS;
		dd->sess.buf.stop_arg = td;
		dd->sess.buf.stop = dbr_job_stopping;
	}
	if (td->terminate && dd->sess.pipe.copies && !dd->sess.pipe.stopping) {
		dd->sess.pipe.stopping = true;
		dd->sess.buf.deadline_ns = gpu_now_ns() + DBR_STOP_BOUND_NS;
	}
	/* what commit left unsubmitted goes in with this call's first enter */
	if (dd->nr_queued)
		dbr_mark_issued(td, dd);
	ret = dbr_pipe_getevents(&dd->sess.pipe, dd->events, min, max);
	if (ret < 0)
		td_verror(td, -ret, "getevents");
	else if (ret)
		dd->io_last_ns = gpu_coarse_ns();
	if (dd->sess.pipe.copies)
		dbr_say_copy_errors(td, dd, ret);
	dbr_prof_end(&dd->sess.ring.prof, DBR_PROF_GETEVENTS, t0);
	return ret;
}

static struct io_u *dbr_event(struct thread_data *td, int event)
{
	struct dbr_data *dd = td->io_ops_data;
	struct dbr_pio *io = dd->events[event];
	struct io_u *io_u = io->user;

	io_u->error = io->error;
	io_u->resid = io->error ? 0 : io->resid;
	/* its copy missed the stop's deadline: nothing moved, and no error */
	if (io->error == ETIMEDOUT && dd->sess.buf.deadline_ns) {
		io_u->error = 0;
		io_u->resid = io_u->xfer_buflen;
		dd->late++;
	}
	return io_u;
}

/* ------------------------------------------------------------------------ */
/* teardown                                                                 */

/*
 * The thread's end, once: its results counted and said, then everything it
 * holds released. A failed init ends the thread at once; fio's cleanup then
 * finds it ended and frees the state alone.
 */
static void dbr_end(struct thread_data *td, struct dbr_data *dd)
{
	if (dd->ended)
		return;
	dd->ended = true;
	dbr_keep_owner_cpu(dd);
	dbr_say_counts(td, dd);
	dbr_say_kernel_rounds(td, dd);
	dbr_say_owner_cpu(td, dd);
	dbr_say_profile(td, dd);
	dbr_end_results(td, dd);
	if (dd->stats_fd >= 0)
		close(dd->stats_fd);
	dbr_sess_close(&dd->sess);
	dbr_say_stop(td, dd);
	fio_cmdprio_cleanup(&dd->cmdprio);
}

/* dd NULL: init never ran (or got no memory), the thread counts all the same */
static void dbr_cleanup(struct thread_data *td)
{
	struct dbr_data *dd = td->io_ops_data;

	if (!dd) {
		dbr_end_results(td, NULL);
		return;
	}
	dbr_end(td, dd);
	dbr_free_state(dd);
	td->io_ops_data = NULL;
}

/*
 * gpu='s values after auto, from the provider registry (provider.c): value
 * n for provider n - 1 (dbr_gpu_choice), in gpu=auto's order. Filled when
 * the engine loads, before fio reads its options.
 */
static void dbr_list_providers(void)
{
	const struct gpu_provider *p;
	struct fio_option *o;
	unsigned int i;

	for (o = options; o->name && strcmp(o->name, "gpu"); o++)
		;
	if (!o->name)
		return;
	for (i = 0; (p = gpu_provider_nth(i)) && i + 1 < PARSE_MAX_VP; i++)
		o->posval[i + 1] = (struct value_pair){
			.ival = p->name, .oval = i + 1, .help = p->help,
		};
}

/*
 * fio loads the engine in its main process, before it forks job processes:
 * the results table mapped here is the one every thread and process of the
 * run adds to (results.h). Without it, threads of one process still add up.
 */
__attribute__((constructor)) static void dbr_load(void)
{
	dbr_list_providers();
	(void)dbr_tally_map();
}

__attribute__((destructor)) static void dbr_unload(void)
{
	dbr_tally_unmap();
}

/* ------------------------------------------------------------------------ */

/* fio looks the engine up by this symbol name: the one the .so exports */
__attribute__((visibility("default"))) struct ioengine_ops ioengine = {
	.name			= DBR_NAME,
	.version		= FIO_IOOPS_VERSION,
	.flags			= FIO_NO_OFFLOAD | FIO_ASYNCIO_SETS_ISSUE_TIME,
	.init			= dbr_init,
	.post_init		= dbr_post_init,
	.io_u_init		= dbr_io_u_init,
	.iomem_alloc		= dbr_iomem_alloc,
	.iomem_free		= dbr_iomem_free,
	.open_file		= dbr_open_file,
	.close_file		= dbr_close_file,
	.get_file_size		= dbr_get_file_size,
	.queue			= dbr_queue,
	.commit			= dbr_commit,
	.getevents		= dbr_getevents,
	.event			= dbr_event,
	.cleanup		= dbr_cleanup,
	.option_struct_size	= sizeof(struct dbr_options),
	.options		= options,
};
