// SPDX-License-Identifier: MIT
/*
 * A thread's settings, settled at init from its options, its files, the
 * kernel and the GPU runtime: transfer path, provider and device (with
 * placement.c for gpu_dev_ids=auto and gpu_cpus=auto), gpu_sync, the spin
 * time, the results file, the option checks (config.c), and the session
 * (session.h) those settings ask for. Each says its
 * refusal in one line (dbr_fail) and what auto chose once per job.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "dbr_fio.h"
#include "dbr_uapi.h"
#include "iommu.h"
#include "peers.h"
#include "placement.h"
#include "remote.h"
#include "results.h"
#include "target.h"
#include "verify.h"

/* The provider gpu= names, NULL for auto (dbr_gpu_choice). */
static const struct gpu_provider *gpu_named(const struct dbr_options *o)
{
	return o->gpu == DBR_GPU_AUTO ? NULL : gpu_provider_nth(o->gpu - 1);
}

/* gpu='s value as the job gave it: auto, or a provider's name */
static const char *gpu_name(const struct dbr_options *o)
{
	return o->gpu == DBR_GPU_AUTO ? "auto" : gpu_named(o)->name;
}

/* gpu_cpus=auto for this thread, before fio allocates its buffers */
void dbr_pin_cpus(struct thread_data *td, struct dbr_data *dd)
{
	struct dbr_options *o = td->eo;
	char said[160];
	cpu_set_t set;

	if (dbr_cpus_plan(td, o->gpu_cpus == DBR_CPUS_AUTO, dd->sess.buf.prov,
			  dd->sess.buf.dev_id, &set, said, sizeof(said)) < 0) {
		snprintf(dd->cpus_said, sizeof(dd->cpus_said), "%s", said);
		return;
	}
	if (sched_setaffinity(0, sizeof(set), &set) < 0) {
		snprintf(dd->cpus_said, sizeof(dd->cpus_said), "CPUs unpinned: %.120s: %s",
			 said, strerror(errno));
		dbr_info("%s: thread %d: gpu_cpus=auto: %s", td->o.name,
			 td->subjob_number, dd->cpus_said);
		return;
	}
	snprintf(dd->cpus_said, sizeof(dd->cpus_said), "%s", said);
}

static bool dbr_dev_ids_auto(const struct dbr_options *o)
{
	return o->gpu_dev_ids && !strcasecmp(o->gpu_dev_ids, "auto");
}

/* gpu_dev_ids=auto: the device planned for td, and the job's line once */
static int dbr_pick_auto(struct thread_data *td,
			 const struct gpu_provider *prov, int count, int *dev)
{
	struct dbr_options *o = td->eo;
	struct dbr_auto_ask ask = {
		.prov		= prov,
		.count		= count,
		.gpu		= gpu_name(o),
		.cpus_auto	= o->gpu_cpus == DBR_CPUS_AUTO,
	};
	char line[1024];
	int ret;

	ret = dbr_place_auto(td, &ask, dev, line,
			     dbr_first_thread(td) ? sizeof(line) : 0);
	if (ret < 0)
		return dbr_fail(td, -ret, "gpu_dev_ids", strerror(-ret));
	if (dbr_first_thread(td) && line[0])
		dbr_info("%s: gpu_dev_ids=auto: %s", td->o.name, line);
	return 0;
}

/*
 * Threads in td's job: its numjobs, as the job's first thread has it (fio
 * gives each clone numjobs=1; the clones follow their first thread in fio's
 * thread list).
 */
static unsigned int dbr_job_threads(struct thread_data *td)
{
	int i = (int)td->thread_number - 1;
	struct thread_data *t = td;

	while (t->subjob_number && i > 0)
		t = tnumber_to_td(--i);
	return t->o.numjobs ? t->o.numjobs : 1;
}

unsigned int dbr_job_threads_on(struct thread_data *td, int dev)
{
	struct dbr_options *o = td->eo;
	unsigned int i, n = 0, threads = dbr_job_threads(td);
	int ids[DBR_MAX_DEV_IDS], nr;
	char quiet[8];

	if (dbr_dev_ids_auto(o))
		return 0;
	nr = dbr_parse_dev_ids(o->gpu_dev_ids, ids, DBR_MAX_DEV_IDS, quiet,
			       sizeof(quiet));
	for (i = 0; nr > 0 && i < threads; i++)
		n += dbr_pick_dev(ids, nr, i) == dev;
	return n;
}

/* The provider gpu= names and the device of this thread on it. */
int dbr_pick_provider(struct thread_data *td,
		      const struct gpu_provider **provp, int *dev)
{
	struct dbr_options *o = td->eo;
	const struct gpu_provider *prov;
	int ids[DBR_MAX_DEV_IDS], nr, count;
	char why[512] = "", msg[640];

	if (o->gpu == DBR_GPU_AUTO) {
		prov = gpu_provider_auto(why, sizeof(why));
		if (dbr_first_thread(td) && why[0])
			dbr_info("%s: gpu=auto -> %s (%s)", td->o.name,
				 prov->name, why);
		why[0] = '\0';
	} else
		prov = gpu_named(o);
	if (!prov) {
		snprintf(msg, sizeof(msg), "gpu=%s: provider not compiled in; rebuild with ./configure --with-%s, or use gpu=host",
			 gpu_name(o), gpu_name(o));
		return dbr_fail(td, ENOTSUP, "gpu provider", msg);
	}
	count = prov->probe(why, sizeof(why));
	if (count <= 0) {
		snprintf(msg, sizeof(msg), "gpu=%s: %s; use gpu=host to run without a GPU",
			 prov->name, why[0] ? why : "no usable device");
		return dbr_fail(td, count ? -count : ENODEV, "gpu provider",
				msg);
	}
	*provp = prov;
	if (dbr_dev_ids_auto(o))
		return dbr_pick_auto(td, prov, count, dev);
	nr = dbr_parse_dev_ids(o->gpu_dev_ids, ids, DBR_MAX_DEV_IDS, msg,
			       sizeof(msg));
	if (nr < 0)
		return dbr_fail(td, EINVAL, "gpu_dev_ids", msg);
	/* any thread's missing device stops them all, before any I/O */
	*dev = dbr_missing_dev(ids, nr, dbr_job_threads(td), count);
	if (*dev >= 0) {
		snprintf(msg, sizeof(msg), "gpu_dev_ids=%s: device %d does not exist, gpu=%s sees %d device%s (0..%d); fix gpu_dev_ids",
			 o->gpu_dev_ids, *dev, prov->name, count,
			 count == 1 ? "" : "s", count - 1);
		return dbr_fail_job(td, ENODEV, "gpu_dev_ids", msg);
	}
	*dev = dbr_pick_dev(ids, nr, td->subjob_number);
	return 0;
}
/* First file that p2p cannot register against, or NULL. */
static struct fio_file *dbr_non_nvme_file(struct thread_data *td,
					  struct dbr_target *t)
{
	struct fio_file *f;
	unsigned int i;

	for_each_file(td, f, i) {
		if (dbr_target_inspect(f->file_name, t) < 0 || !t->is_nvme_ns)
			return f;
	}
	return NULL;
}

/*
 * The IOMMU's word on p2p for td's files (iommu.h): the first refusal, or 0.
 * gpu=auto is settled only where it matters: host memory runs translated.
 */
static int dbr_iommu_blocker(struct thread_data *td, char *why, size_t len)
{
	struct dbr_options *o = td->eo;
	char exporter[16], quiet[512];
	struct fio_file *f;
	unsigned int i;
	int ret = 0;

	if (gpu_named(o) == &gpu_host_provider)
		return 0;
	snprintf(exporter, sizeof(exporter), "gpu=%s", gpu_name(o));
	for_each_file(td, f, i) {
		ret = dbr_iommu_check_file(dbr_sysfs_root(), f->file_name,
					   exporter, true, o->p2p_iommu, why,
					   len);
		if (ret)
			break;
	}
	if (ret && o->gpu == DBR_GPU_AUTO &&
	    gpu_provider_auto(quiet, sizeof(quiet)) == &gpu_host_provider)
		ret = 0;
	return ret;
}

/* What the transfer decision needs to know, gathered from fio and the kernel. */
static void dbr_p2p_facts(struct thread_data *td, struct dbr_p2p_facts *pf,
			  struct dbr_target *t, char *iommu_why, size_t len)
{
	struct fio_file *f = dbr_non_nvme_file(td, t);

	pf->probe = dbr_probe_p2p();
	pf->direct = td->o.odirect;
	pf->bad_file = f ? f->file_name : NULL;
	pf->bad_kind = f ? dbr_target_kind(t) : NULL;
	pf->iommu_err = dbr_iommu_blocker(td, iommu_why, len);
	pf->iommu_why = iommu_why;
	pf->bad_created = f && FILE_ENG_DATA(f) == &dbr_created_mark;
	pf->bad_size = f ? f->real_file_size : 0;
}

/* Settle transfer=auto (and say which, once per job); refuse p2p that
 * cannot run. */
static int dbr_pick_transfer(struct thread_data *td, enum dbr_transfer *xfer)
{
	enum dbr_transfer want = *xfer;
	struct dbr_p2p_facts pf;
	struct dbr_target t;
	char why[1024], iommu_why[512], msg[1408];
	int err;

	if (want == DBR_XFER_BOUNCE)
		return 0;
	dbr_p2p_facts(td, &pf, &t, iommu_why, sizeof(iommu_why));
	err = dbr_settle_transfer(&pf, xfer, why, sizeof(why));
	if (want == DBR_XFER_AUTO) {
		/* p2p is said once the GPU is known to export (dbr_auto_export) */
		if (dbr_first_thread(td) && *xfer != DBR_XFER_P2P)
			dbr_info("%s: transfer=auto -> %s%s%s", td->o.name,
				 dbr_transfer_name(*xfer), why[0] ? ": " : "", why);
		return 0;
	}
	if (!err)
		return 0;
	snprintf(msg, sizeof(msg), "transfer=p2p cannot run: %s. Use transfer=bounce (or transfer=auto) here; 'dmabuf-doctor %s' checks everything p2p needs",
		 why, td->files_index ? td->files[0]->file_name : "/dev/nvmeXnY");
	return dbr_fail_job(td, err, "p2p", msg);
}

/*
 * p2p I/O larger than a target's max_sectors_kb: one line per job and
 * target (a translating IOMMU lowers the limit to 128 KiB, for one).
 */
static void dbr_say_splits(struct thread_data *td)
{
	char msg[512];
	struct fio_file *f;
	struct dbr_target t;
	unsigned int i;

	if (!dbr_first_thread(td))
		return;
	for_each_file(td, f, i) {
		if (dbr_target_inspect(f->file_name, &t) < 0 || !t.is_nvme_ns)
			continue;
		if (dbr_split_warning(t.name, td_max_bs(td),
			dbr_target_queue_kb(dbr_sysfs_root(), &t, "max_sectors_kb"),
			dbr_target_queue_kb(dbr_sysfs_root(), &t, "max_hw_sectors_kb"),
			msg, sizeof(msg)))
			dbr_info("%s: %s", td->o.name, msg);
	}
}

/*
 * transfer=auto that the kernel and the files allow p2p for: p2p only where
 * the GPU can export a dma-buf, else bounce, with the reason (once per job).
 */
void dbr_auto_export(struct thread_data *td, const struct gpu_provider *prov,
		     int dev, bool *p2p)
{
	char why[256] = "";
	int ret = prov->dmabuf_ok ? prov->dmabuf_ok(dev, why, sizeof(why)) : 0;

	if (ret < 0)
		*p2p = false;
	if (!dbr_first_thread(td))
		return;
	if (ret < 0)
		dbr_info("%s: transfer=auto -> bounce: gpu=%s device %d cannot export its memory as a dma-buf: %s",
			 td->o.name, prov->name, dev, why[0] ? why : strerror(-ret));
	else
		dbr_info("%s: transfer=auto -> p2p", td->o.name);
}

/* Files the thread may open: a fixed-file slot each, and for p2p a buffer slot */
static unsigned int dbr_nr_files(struct thread_data *td)
{
	unsigned int n = td->files_index > td->o.nr_files ? td->files_index :
			 td->o.nr_files;

	return n ? n : 1;
}

/*
 * A verify option that has fio trim blocks of a job that does not trim
 * (fio queues those trims as the job writes, then asserts on them), as
 * "name=value" into buf; NULL when none is set. trim_verify_zero means
 * something only for such trims: set at all, it asks for them.
 */
static const char *dbr_trim_opt(struct thread_data *td, char *buf, size_t len)
{
	struct thread_options *to = &td->o;

	if (to->trim_percentage)
		snprintf(buf, len, "trim_percentage=%u", to->trim_percentage);
	else if (to->trim_backlog)
		snprintf(buf, len, "trim_backlog=%llu",
			 (unsigned long long)to->trim_backlog);
	else if (fio_option_is_set(to, trim_zero))
		snprintf(buf, len, "trim_verify_zero=%u", to->trim_zero);
	else
		return NULL;
	return buf;
}

/* The option checks for transfer path xfer (config.c); *maps: p2p
 * registrations on the thread's busiest device. */
static int dbr_check(struct thread_data *td, enum dbr_transfer xfer,
		     unsigned int *maps)
{
	struct dbr_options *o = td->eo;
	char msg[384], cpus[128], trim[48];
	struct dbr_job j = {
		.transfer	= xfer,
		.direct		= td->o.odirect,
		.hipri		= o->hipri,
		.does_trim	= td_trim(td),
		.trim_opt	= dbr_trim_opt(td, trim, sizeof(trim)),
		.verify		= td->o.verify != VERIFY_NONE,
		.iodepth	= td->o.iodepth,
		.buf_bytes	= (size_t)td->o.iodepth * td_max_bs(td),
		.max_bs		= td_max_bs(td),
		.nr_files	= dbr_nr_files(td),
		.maps_per_dev	= xfer == DBR_XFER_P2P ?
				  dbr_maps_per_dev(td, dbr_transfer_name(o->transfer)) : 0,
		.sqpoll_cpu	= o->sqpoll && o->sqpoll_cpu_set ?
				  (int)o->sqpoll_cpu : -1,
		.online_cpus	= cpus,
	};
	int ret;

	if (j.sqpoll_cpu >= 0 && dbr_online_cpus(cpus, sizeof(cpus)) < 0)
		j.online_cpus = NULL;	/* unknown: the kernel will say */
	ret = dbr_check_job(&j, msg, sizeof(msg));
	*maps = j.maps_per_dev;
	return ret ? dbr_fail(td, -ret, "option check", msg) : 0;
}

/*
 * The transfer path: option mistakes first (the checks for the path the
 * option names), then what the machine cannot do (transfer=auto settled,
 * p2p that cannot run refused), then the checks for the path auto chose;
 * p2p's I/O that the block layer will split said once.
 */
int dbr_pick_path(struct thread_data *td, unsigned int *maps, bool *p2p)
{
	struct dbr_options *o = td->eo;
	enum dbr_transfer xfer = o->transfer;

	if (xfer != DBR_XFER_AUTO && dbr_check(td, xfer, maps))
		return 1;
	if (dbr_pick_transfer(td, &xfer))
		return 1;
	if (o->transfer == DBR_XFER_AUTO && dbr_check(td, xfer, maps))
		return 1;
	*p2p = xfer == DBR_XFER_P2P;
	if (*p2p)
		dbr_say_splits(td);
	return 0;
}

/*
 * Pieces the thread's area may register as (dbr_split), before fio asks for
 * it: iodepth x max bs plus fio's alignment padding, as providers round it.
 */
static unsigned int dbr_pieces_max(struct thread_data *td)
{
	size_t area = (size_t)td->o.iodepth * td_max_bs(td) + td->o.mem_align +
		      2 * (size_t)page_size;
	struct dbr_split s;

	if (dbr_split_plan(&s, gpu_buf_round(area), td_max_bs(td),
			   DBR_REGBUF_MAX_BYTES, DBR_SPLIT_GRAN))
		return 1;
	return s.nr;
}

void dbr_sess_cfg_of(struct thread_data *td, unsigned int depth, bool p2p,
		     bool sync, bool watch, struct dbr_sess_cfg *c)
{
	struct dbr_options *o = td->eo;

	*c = (struct dbr_sess_cfg){
		.ring = {
			.entries	= td->o.iodepth,
			.sqpoll		= o->sqpoll,
			.sqpoll_cpu	= o->sqpoll_cpu_set ?
					  (int)o->sqpoll_cpu : -1,
			/* fio submits and reaps from the job's own thread */
			.single_issuer	= td->o.io_submit_mode != IO_MODE_OFFLOAD,
			.iopoll		= o->hipri,
			.own_creds	= o->thread_creds == DBR_CREDS_OWN,
			.cqes_at_once	= watch,
		},
		.watch_cq	= watch,
		.depth		= depth,
		.nr_files	= dbr_nr_files(td),
		.register_files	= o->registerfiles,
		.p2p		= p2p,
		.sync		= sync,
		.pieces		= dbr_pieces_max(td),
		.max_bs		= td_max_bs(td),
	};
}

/* Settle gpu_sync for the provider picked: refuse verify without it, and
 * say (once per job) when fio's buffer options turn it on or go unheard. */
int dbr_pick_sync(struct thread_data *td, const struct gpu_provider *prov,
		  bool *sync)
{
	struct dbr_options *o = td->eo;
	struct thread_options *to = &td->o;
	struct dbr_sync_job j = {
		.setting	= o->gpu_sync,
		.copies		= prov != &gpu_host_provider,
		.verify		= to->verify != VERIFY_NONE,
		.writes		= td_write(td),
		.buf = {
			.pattern	= to->buffer_pattern_bytes > 0,
			.compress	= to->compress_percentage > 0,
			.dedupe		= to->dedupe_percentage > 0,
			.refill		= to->refill_buffers,
			.scramble	= to->scramble_buffers &&
					  fio_option_is_set(to, scramble_buffers),
			.zero		= to->zero_buffers,
		},
	};
	char msg[384];
	int ret = dbr_gpu_sync_on(&j, msg, sizeof(msg));

	if (ret < 0)
		return dbr_fail(td, -ret, "gpu_sync", msg);
	*sync = ret;
	if (msg[0] && dbr_first_thread(td))
		dbr_info("%s: %s", td->o.name, msg);
	return 0;
}

/* gpu_stats_file, else $DBR_GPU_STATS_FILE: opened now so a bad path stops
 * the job before it runs, not after */
int dbr_open_stats(struct thread_data *td, struct dbr_data *dd)
{
	struct dbr_options *o = td->eo;
	const char *env = getenv("DBR_GPU_STATS_FILE");
	const char *path = o->stats_file && o->stats_file[0] ? o->stats_file : env;
	char msg[640];

	if (!path || !path[0])
		return 0;
	dd->stats_fd = dbr_results_open(path);
	dd->stats_path = path;
	if (dd->stats_fd >= 0)
		return 0;
	snprintf(msg, sizeof(msg), "%s=%.400s: cannot append to it: %s; %s",
		 path == env ? "DBR_GPU_STATS_FILE" : "gpu_stats_file", path,
		 dd->stats_fd == -ENXIO ? "a FIFO with no reader (fio would wait for one for ever)" :
		 dd->stats_fd == -EINVAL ? "not a file (a block device, socket or directory)" :
		 strerror(-dd->stats_fd),
		 dd->stats_fd == -ENXIO ? "start its reader first, or give a regular file" :
		 path == env ?
		 "point it at a file in a writable directory, or unset it" :
		 "give a file in a writable directory, or drop gpu_stats_file");
	return dbr_fail(td, -dd->stats_fd, "gpu_stats_file", msg);
}

/* gpu_spin_us, else $DBR_GPU_SPIN_US or the default (gpu_spin_ns) */
int dbr_pick_spin(struct thread_data *td, long *spin_ns)
{
	struct dbr_options *o = td->eo;
	const char *name = "gpu_spin_us", *val = o->spin_us;
	char msg[256];
	int ret;

	*spin_ns = gpu_spin_ns();
	/* the environment's value is checked as the option's is */
	if (!val) {
		val = gpu_spin_env(&name);
		if (!val)
			return 0;
	}
	ret = gpu_parse_spin_us(name, val, spin_ns, msg, sizeof(msg));
	return ret ? dbr_fail(td, -ret, "gpu_spin_us", msg) : 0;
}

/* Do all of td's files' reads end where they are issued (no task work)? */
static bool reads_done_in_issue(struct thread_data *td)
{
	struct fio_file *f;
	unsigned int i;

	for_each_file(td, f, i)
		if (!dbr_reads_done_in_issue(f->file_name, td->o.odirect))
			return false;
	return true;
}

/*
 * Watch the CQ where asked, or (auto) where this job's reads go to the
 * kernel and end where they are issued, and job threads of this engine that
 * may run beside td (its run window, itself included) are at least the
 * online CPUs.
 */
bool dbr_pick_watch(struct thread_data *td, const struct gpu_buf *b, bool p2p)
{
	struct dbr_options *o = td->eo;
	unsigned int first, last, i, threads = 0;
	/* through a GPU owner its kernel maps this process's rings from the
	 * ring's fd, handed over (gpu_resident_watch) */
	bool reads, can = !p2p && !b->host_is_device && b->prov && b->prov->rt &&
		   b->prov->rt->kernel_start && b->kernel_mode == GPU_KERNEL_RESIDENT &&
		   b->copy_mode != GPU_COPY_DMA;

	if (o->gpu_watch_cq == 1 && !can && dbr_first_thread(td))
		dbr_info(b->host_is_device ?
			 "%s: gpu_watch_cq=1 has no effect with gpu=host: reads land in fio's own buffers, so there is no copy to start from the CQ" :
			 "%s: gpu_watch_cq=1: no resident copy kernel of this process takes this job's copies (p2p, HIP, gpu_copy=dma, or launches per pass): reads' copies go in passes",
			 td->o.name);
	dbr_run_window(td, &first, &last);
	for (i = first; i <= last && i < thread_number; i++)
		threads += dbr_same_engine(tnumber_to_td(i), td);
	reads = td_read(td) &&
		dbr_reads_to_kernel(b->copy_mode, td->o.min_bs[DDIR_READ]);
	return dbr_watch_cq(o->gpu_watch_cq, can, reads,
			    reads && reads_done_in_issue(td), threads,
			    sysconf(_SC_NPROCESSORS_ONLN));
}

/*
 * Job processes that will share the GPU in time slices (their own
 * contexts, no MPS): one line for the run, with the figure and the fixes.
 */
static void say_sliced(struct thread_data *td, const struct gpu_provider *prov,
		       const char *cause)
{
	if (!dbr_tally_once(DBR_ONCE_SLICED))
		return;
	dbr_info("%s: job processes open a %s context each (%s), and the GPU runs one process's context at a time: expect 0.04-0.10x of fio's io_uring engine at 4-16 processes (H100); run the jobs with thread=1, leave gpu_owner=auto, or start MPS (nvidia-cuda-mps-control -d)",
		 td->o.name, prov->name, cause);
}

/* The owner of this thread's GPU for the run, started where need be. */
static int use_owner(struct thread_data *td, struct dbr_data *dd,
		     const struct gpu_provider **provp, int dev, bool p2p)
{
	struct dbr_options *o = td->eo;
	const struct gpu_provider *remote;
	char why[400], msg[640];
	int ret;

	ret = gpu_remote_connect(*provp, dev, dbr_run_of(td), &remote, why,
				 sizeof(why));
	if (!ret) {
		*provp = remote;
		return 0;
	}
	if (o->gpu_owner == 1) {
		snprintf(msg, sizeof(msg), "gpu_owner=1: the GPU owner of %s %d could not start: %s; set gpu_owner=0 (a context in each job process), or run the jobs with thread=1",
			 (*provp)->name, dev, why);
		return dbr_fail(td, -ret, "gpu_owner", msg);
	}
	dd->ctx = DBR_CTX_PROCESS;
	snprintf(msg, sizeof(msg), "the GPU owner could not start: %s", why);
	if (!p2p)
		say_sliced(td, *provp, msg);
	return 0;
}

int dbr_pick_context(struct thread_data *td, struct dbr_data *dd,
		     const struct gpu_provider **provp, int dev, bool p2p)
{
	struct dbr_options *o = td->eo;
	const struct gpu_provider *prov = *provp;
	bool mps = prov->mps && prov->mps(dev) == 1;

	/*
	 * p2p too: the owner's memory is exported and its dma-buf handed over,
	 * so a job process holds no context of its own (GPU memory, a start),
	 * and gpu_sync's copies are not time-sliced. Without the owner p2p
	 * copies nothing unless gpu_sync is on: no time-slice line for it.
	 */
	dd->ctx = dbr_context_of(o->gpu_owner, !td->o.use_thread,
				 prov->rt != NULL, mps);
	if (dd->ctx == DBR_CTX_OWNER)
		return use_owner(td, dd, provp, dev, p2p);
	if (dd->ctx == DBR_CTX_PROCESS && !td->o.use_thread && !p2p)
		say_sliced(td, prov, "gpu_owner=0");
	return 0;
}

/*
 * gpu_kernel settled (dbr_kernel_mode): job processes of this engine that
 * may run beside td (its run window, itself included) share the GPU by
 * time slices, unless they share one context (the GPU owner's) or MPS.
 */
void dbr_pick_kernel(struct thread_data *td, struct gpu_buf *b,
		     enum dbr_context ctx)
{
	struct dbr_options *o = td->eo;
	unsigned int first, last, i, procs = 0;

	dbr_run_window(td, &first, &last);
	for (i = first; i <= last && i < thread_number; i++) {
		struct thread_data *t = tnumber_to_td(i);

		procs += !t->o.use_thread && dbr_same_engine(t, td);
	}
	if (ctx == DBR_CTX_OWNER || ctx == DBR_CTX_MPS)
		procs = 1;
	b->kernel_mode = dbr_kernel_mode(o->gpu_kernel, !td->o.use_thread,
					 procs, &b->kernel_why);
}
