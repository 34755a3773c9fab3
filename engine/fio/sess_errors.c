// SPDX-License-Identifier: MIT
/*
 * A failed step of a thread's session (session.h), said: session.c returns
 * a negative errno, the step and the runtime's words and prints nothing;
 * here they become the one line a user reads (dbr_fail), naming the cause
 * in the job's terms (iodepth, bs, mem_align, ulimit, registerfiles) and
 * the fix. Each returns 1, as the hooks do on failure.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "dbr_fio.h"
#include "dbr_uapi.h"

/* init: registerfiles' file table; EMFILE is the open-file limit's doing */
static int dbr_file_table_failed(struct thread_data *td,
				 const struct dbr_sess_cfg *c, int ret)
{
	struct rlimit rl = { 0 };
	char msg[384];

	if (ret != -EMFILE) {
		snprintf(msg, sizeof(msg), "registerfiles: %s; drop registerfiles",
			 strerror(-ret));
		return dbr_fail(td, -ret, "register files", msg);
	}
	getrlimit(RLIMIT_NOFILE, &rl);
	snprintf(msg, sizeof(msg), "registerfiles: a fixed-file table of %u slots (one per file, nrfiles=%u) is over the open-file limit (ulimit -n: %llu); raise ulimit -n, lower nrfiles, or drop registerfiles",
		 c->nr_files, td->o.nr_files, (unsigned long long)rl.rlim_cur);
	return dbr_fail(td, EMFILE, "register files", msg);
}

int dbr_open_failed(struct thread_data *td, const struct dbr_sess_cfg *c,
		    enum dbr_sess_step step, int ret)
{
	char msg[384];

	switch (step) {
	case DBR_STEP_RING:
		snprintf(msg, sizeof(msg), "io_uring_setup: %s%s", strerror(-ret),
			 ret == -EPERM ? " (io_uring is disabled: check sysctl kernel.io_uring_disabled)" :
			 ret == -ENOMEM ? " (raise ulimit -l)" :
			 ret == -EINVAL && c->ring.sqpoll_cpu >= 0 ? " (the SQ thread may only run on a CPU of fio's cpuset: check sqthread_poll_cpu)" : "");
		return dbr_fail(td, -ret, "io_uring_setup", msg);
	case DBR_STEP_BUF_TABLE:
		snprintf(msg, sizeof(msg), "registering a sparse buffer table: %s (io_uring needs Linux >= 5.19)",
			 strerror(-ret));
		return dbr_fail(td, -ret, "register buffers", msg);
	case DBR_STEP_FILE_TABLE:
		return dbr_file_table_failed(td, c, ret);
	default:
		return dbr_fail(td, ENOMEM, "init", "out of memory");
	}
}

/*
 * Why the buffer area does not fit the buffer table, and the fix: most
 * often fio's mem_align padding, which is then what to lower.
 */
static void dbr_area_msg(struct thread_data *td, size_t total, unsigned int nr,
			 unsigned int room, char *msg, size_t len)
{
	size_t area = (size_t)td->o.iodepth * td_max_bs(td);
	size_t align = td->o.mem_align;

	if (align && total - area >= align)
		snprintf(msg, len, "mem_align=%zu (%zu MiB): fio pads the thread's buffer area (iodepth x max bs = %zu KiB) by the alignment, to %zu MiB, which needs %u registered pieces where the table has room for %u; lower mem_align (the buffer is page aligned without it)",
			 align, align >> 20, area >> 10,
			 gpu_buf_round(total) >> 20, nr, room);
	else
		snprintf(msg, len, "the %zu MiB buffer area (iodepth x max bs = %zu MiB) needs %u registered pieces, the table has room for %u; lower iodepth or bs, or split the work over numjobs",
			 gpu_buf_round(total) >> 20, area >> 20, nr, room);
}

/*
 * Did the GPU run out of memory for the thread's buffer? The runtime's
 * allocation call said so (its host registration saying ENOMEM is the
 * locked-memory limit, which its own words name).
 */
static bool dbr_gpu_oom(const struct gpu_buf *b, int ret)
{
	static const char *const allocs[] = { "cuMemAlloc:", "hipMalloc:" };
	size_t i;

	if (ret != -ENOMEM)
		return false;
	for (i = 0; i < sizeof(allocs) / sizeof(allocs[0]); i++)
		if (!strncmp(b->why, allocs[i], strlen(allocs[i])))
			return true;
	return false;
}

/* What the job asked of the GPU that had no room, and what to lower. */
static void dbr_oom_msg(struct thread_data *td, const struct gpu_buf *b,
			char *msg, size_t len)
{
	unsigned int n = dbr_job_threads_on(td, b->dev_id);

	dbr_cat(msg, len, "; that is one thread's buffer (iodepth %u x max bs %llu KiB, plus fio's alignment, in 2 MiB units)",
		td->o.iodepth, (unsigned long long)td_max_bs(td) >> 10);
	if (n > 1)
		dbr_cat(msg, len, ", and %u threads of this job use device %d: %zu MiB in all",
			n, b->dev_id, n * (b->size >> 20));
	dbr_cat(msg, len, "; lower iodepth, bs or numjobs, or spread the threads over more GPUs with gpu_dev_ids");
}

int dbr_alloc_failed(struct thread_data *td, const struct dbr_session *s,
		     size_t total, enum dbr_sess_step step, int ret)
{
	const struct gpu_buf *b = &s->buf;
	const char *name = b->prov->name;
	const char *why = b->why[0] ? b->why : strerror(-ret);
	char msg[640];

	switch (step) {
	case DBR_STEP_SPLIT:
		dbr_area_msg(td, total, s->split.nr, s->pieces, msg,
			     sizeof(msg));
		return dbr_fail(td, E2BIG, "iomem_alloc", msg);
	case DBR_STEP_EXPORT:
		snprintf(msg, sizeof(msg), "gpu=%s: exporting %zu MiB as a dma-buf failed: %s; use transfer=bounce, or run 'dmabuf-doctor --gpu %s' on the target for the full check",
			 name, b->size >> 20, why, name);
		return dbr_fail(td, -ret, "dma-buf export", msg);
	default:
		snprintf(msg, sizeof(msg), "gpu=%s: allocating %zu MiB on device %d failed: %s",
			 name, b->size >> 20, b->dev_id, why);
		if (dbr_gpu_oom(b, ret))
			dbr_oom_msg(td, b, msg, sizeof(msg));
		return dbr_fail(td, -ret, "gpu alloc", msg);
	}
}

int dbr_start_failed(struct thread_data *td, const struct gpu_buf *b,
		     enum dbr_sess_step step, int ret)
{
	char msg[384];

	if (step == DBR_STEP_HOST_SLOT) {
		snprintf(msg, sizeof(msg), "registering the %zu MiB host buffer with io_uring failed: %s%s",
			 b->size >> 20, strerror(-ret),
			 ret == -ENOMEM ? " (locked-memory limit: raise ulimit -l or run as root)" : "");
		return dbr_fail(td, -ret, "register buffer", msg);
	}
	/* the runtime's call and words, whatever its errno (ENOMEM too) */
	snprintf(msg, sizeof(msg), "gpu=%s: setting up the copy stream on device %d failed: %s",
		 b->prov->name, b->dev_id, b->why[0] ? b->why : strerror(-ret));
	return dbr_fail(td, -ret, "gpu stream", msg);
}

int dbr_upload_failed(struct thread_data *td, const struct gpu_buf *b,
		      int ret)
{
	char msg[256];

	snprintf(msg, sizeof(msg), "gpu=%s: initial copy into device memory failed: %s",
		 b->prov->name, b->why[0] ? b->why : strerror(-ret));
	return dbr_fail(td, -ret, "gpu copy", msg);
}

int dbr_split_refused(struct thread_data *td, const struct dbr_session *s,
		      const struct dbr_split *sp, unsigned int maps)
{
	char msg[512];

	snprintf(msg, sizeof(msg), "the kernel takes dma-bufs of at most %llu MiB, so each %zu MiB registration is %u pieces: %u registrations on one device x %u = %u mappings, over the kernel's %d per device; lower iodepth x bs to 1 GiB a thread, or numjobs/nrfiles",
		 DBR_REGBUF_MAX_BYTES >> 20, s->buf.size >> 20, sp->nr,
		 maps, sp->nr, maps * sp->nr, DBR_MAX_MAPS_PER_DEV);
	return dbr_fail(td, E2BIG, "register dma-buf", msg);
}

int dbr_split_failed(struct thread_data *td, const struct dbr_session *s,
		     unsigned int failed, int ret)
{
	const struct gpu_provider *prov = s->buf.prov;
	char msg[512];

	if (ret == -EOPNOTSUPP && !prov->export_range) {
		snprintf(msg, sizeof(msg), "the kernel takes dma-bufs of at most %llu MiB and gpu=%s cannot export a %zu MiB area in pieces; lower iodepth x bs to 1 GiB a thread",
			 DBR_REGBUF_MAX_BYTES >> 20, prov->name,
			 s->buf.size >> 20);
		return dbr_fail(td, E2BIG, "register dma-buf", msg);
	}
	if (ret == -ENOMEM && !s->piece_fd)
		return dbr_fail(td, ENOMEM, "register dma-buf", "out of memory");
	snprintf(msg, sizeof(msg), "gpu=%s: exporting piece %u of the %zu MiB area as a dma-buf failed: %s; lower iodepth x bs to 1 GiB a thread",
		 prov->name, failed, s->buf.size >> 20,
		 s->buf.why[0] ? s->buf.why : strerror(-ret));
	return dbr_fail(td, -ret, "dma-buf export", msg);
}

int dbr_attach_failed(struct thread_data *td, const struct dbr_session *s,
		      const struct fio_file *f, int ret)
{
	char msg[512];

	if (!s->p2p) {
		snprintf(msg, sizeof(msg), "registerfiles: registering %s as a fixed file failed: %s; drop registerfiles",
			 f->file_name, strerror(-ret));
		return dbr_fail(td, -ret, "register file", msg);
	}
	snprintf(msg, sizeof(msg), "registering the %zu MiB %s dma-buf for %s%s failed: %s%s",
		 s->buf.size >> 20, s->buf.prov->name, f->file_name,
		 s->ring.nr_files ? " (and the file, registerfiles)" : "",
		 strerror(-ret),
		 ret == -EOPNOTSUPP ? " (the target's driver cannot map dma-bufs: only nvme-pci namespaces can; use transfer=bounce)" :
		 ret == -EINVAL ? " (the kernel refused the descriptor: the target must be opened O_DIRECT and the dma-buf within the kernel's size limit)" :
		 ret == -ENODEV ? " (the kernel found no IOMMU group for the target's controller: see p2p_iommu)" :
		 ret == -ENOMEM ? " (raise ulimit -l)" : "");
	return dbr_fail(td, -ret, "register dma-buf", msg);
}
