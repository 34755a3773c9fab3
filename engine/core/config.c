// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dbr_config.h"
#include "dbr_uapi.h"
#include "kcopy.h"
#include "provider.h"
#include "stream.h"

const char *dbr_transfer_name(enum dbr_transfer t)
{
	switch (t) {
	case DBR_XFER_P2P:	return "p2p";
	case DBR_XFER_BOUNCE:	return "bounce";
	case DBR_XFER_AUTO:	return "auto";
	}
	return "?";
}

/*
 * Refuse what cannot work before anything is allocated. Returns 0, or a
 * negative errno with a one-line message naming the cause and the fix.
 */
int dbr_check_job(const struct dbr_job *j, char *msg, size_t len)
{
	if (j->hipri && j->transfer == DBR_XFER_P2P) {
		snprintf(msg, len, "hipri (IOPOLL) with transfer=p2p is not supported: the io_uring dma-buf series refuses polled rings; use transfer=bounce for a polled ring, or drop hipri");
		return -EINVAL;
	}
	if (j->hipri && !j->direct) {
		snprintf(msg, len, "hipri needs direct=1: the kernel polls only for O_DIRECT I/O (buffered I/O on a polled ring fails each request); set direct=1, or drop hipri");
		return -EINVAL;
	}
	if (j->does_trim) {
		snprintf(msg, len, "trim is not supported: this engine moves data between a device and GPU memory; use rw=read/write/randrw (or ioengine=io_uring for trim)");
		return -EOPNOTSUPP;
	}
	/* fio would queue trims of verified blocks later, and abort on them */
	if (j->trim_opt) {
		snprintf(msg, len, "trim is not supported: this engine moves data between a device and GPU memory, and %s is for fio's trims of verified blocks; drop it (or use ioengine=io_uring for trim)",
			 j->trim_opt);
		return -EOPNOTSUPP;
	}
	if (j->iodepth > DBR_RING_MAX_ENTRIES) {
		snprintf(msg, len, "iodepth=%u: an io_uring ring holds at most %u entries; set iodepth=%u or less (numjobs adds rings for more I/O in flight)",
			 j->iodepth, DBR_RING_MAX_ENTRIES, DBR_RING_MAX_ENTRIES);
		return -EINVAL;
	}
	if (j->transfer == DBR_XFER_P2P && !j->direct) {
		snprintf(msg, len, "transfer=p2p needs direct=1: the kernel registers dma-bufs only for O_DIRECT block devices; set direct=1 (or transfer=bounce for buffered I/O)");
		return -EINVAL;
	}
	if (j->max_bs > DBR_REGBUF_MAX_BYTES - DBR_SPLIT_GRAN) {
		snprintf(msg, len, "bs=%zu MiB: one I/O must fit a registered buffer, at most %llu MiB; lower bs",
			 j->max_bs >> 20,
			 (DBR_REGBUF_MAX_BYTES - DBR_SPLIT_GRAN) >> 20);
		return -E2BIG;
	}
	if (j->transfer == DBR_XFER_P2P && j->nr_files > DBR_MAX_REG_BUFFERS) {
		snprintf(msg, len, "nrfiles=%u: transfer=p2p registers a dma-buf per file and io_uring's buffer table holds %u; lower nrfiles, or use transfer=bounce (one buffer slot for all files)",
			 j->nr_files, DBR_MAX_REG_BUFFERS);
		return -E2BIG;
	}
	if (j->transfer != DBR_XFER_BOUNCE &&
	    j->maps_per_dev > DBR_MAX_MAPS_PER_DEV) {
		snprintf(msg, len, "%u dma-buf registrations on one device (the files on it of every job running together, numjobs included) is over the kernel's %d per device; lower numjobs or nrfiles, or keep jobs apart with stonewall",
			 j->maps_per_dev, DBR_MAX_MAPS_PER_DEV);
		return -E2BIG;
	}
	if (j->sqpoll_cpu >= 0 && j->online_cpus &&
	    !dbr_cpu_listed(j->online_cpus, j->sqpoll_cpu)) {
		snprintf(msg, len, "sqthread_poll_cpu=%d: this machine has no online CPU %d (online CPUs: %s); pick one of them, or drop sqthread_poll_cpu",
			 j->sqpoll_cpu, j->sqpoll_cpu, j->online_cpus);
		return -EINVAL;
	}
	return 0;
}

int dbr_split_warning(const char *disk, size_t max_bs, long max_kb,
		      long max_hw_kb, char *msg, size_t len)
{
	msg[0] = '\0';
	if (max_kb <= 0 || max_bs <= (size_t)max_kb << 10)
		return 0;
	snprintf(msg, len, "bs=%zu KiB is over %s's max_sectors_kb=%ld: the block layer splits each larger p2p I/O, and v3 of the io_uring dma-buf series hangs on split dma-buf I/O (fixed in v4); on a v3 kernel keep bs <= %ld KiB",
		 max_bs >> 10, disk, max_kb, max_kb);
	if (max_hw_kb > max_kb && max_bs <= (size_t)max_hw_kb << 10)
		dbr_cat(msg, len, ", or raise the limit: echo %ld > /sys/block/%s/queue/max_sectors_kb (max_hw_sectors_kb=%ld)",
			max_hw_kb, disk, max_hw_kb);
	else if (max_hw_kb > 0)
		dbr_cat(msg, len, " (the controller's max_hw_sectors_kb=%ld)",
			max_hw_kb);
	return 1;
}

int dbr_split_plan(struct dbr_split *s, size_t size, size_t max_bs,
		   size_t cap, size_t gran)
{
	memset(s, 0, sizeof(*s));
	if (!size || !gran)
		return -E2BIG;
	s->size = size;
	s->cap = cap;
	/* one piece holds every I/O: no overlap to leave */
	if (size <= cap) {
		s->span = cap;
		s->nr = 1;
		return 0;
	}
	if (cap < gran || max_bs > cap - gran) {
		memset(s, 0, sizeof(*s));
		return -E2BIG;
	}
	/* whatever starts before the next piece ends inside this one */
	s->span = (cap - max_bs) / gran * gran;
	s->nr = 1;
	if (size > cap)
		s->nr += (unsigned int)((size - cap + s->span - 1) / s->span);
	return 0;
}

size_t dbr_split_len(const struct dbr_split *s, unsigned int k)
{
	size_t start = (size_t)k * s->span;

	if (k >= s->nr || start >= s->size)
		return 0;
	return s->size - start < s->cap ? s->size - start : s->cap;
}

/*
 * The CPUs the kernel may run an SQ thread on, as sysfs lists them ("0-3,8");
 * without sysfs, 0..n-1 of the CPUs online now. Returns 0 or a negative errno.
 */
int dbr_online_cpus(char *buf, size_t len)
{
	FILE *f = fopen("/sys/devices/system/cpu/online", "re");
	long n;

	if (f) {
		bool ok = fgets(buf, (int)len, f) != NULL;

		fclose(f);
		if (ok) {
			buf[strcspn(buf, "\n")] = '\0';
			return 0;
		}
	}
	n = sysconf(_SC_NPROCESSORS_ONLN);
	if (n < 1)
		return -ENOENT;
	snprintf(buf, len, n == 1 ? "0" : "0-%ld", n - 1);
	return 0;
}

/* Is cpu in a sysfs cpu list such as "0-3,8,10-11"? */
bool dbr_cpu_listed(const char *list, int cpu)
{
	const char *p = list;

	while (p && *p) {
		char *end;
		long lo = strtol(p, &end, 10), hi = lo;

		if (end == p)
			return false;
		if (*end == '-') {
			p = end + 1;
			hi = strtol(p, &end, 10);
			if (end == p)
				return false;
		}
		if (cpu >= lo && cpu <= hi)
			return true;
		p = *end == ',' ? end + 1 : NULL;
	}
	return false;
}

/*
 * Registrations on the busiest of a thread's devices. mine: the devices of
 * its files (0: not a block device); all: one entry per dma-buf registration
 * of every thread that may run beside it, its own included.
 */
unsigned int dbr_busiest_dev(const dev_t *mine, unsigned int nr_mine,
			     const dev_t *all, unsigned int nr_all)
{
	unsigned int i, j, n, most = 0;

	for (i = 0; i < nr_mine; i++) {
		bool again = !mine[i];

		for (j = 0; j < i && !again; j++)
			again = mine[j] == mine[i];
		if (again)
			continue;
		for (n = 0, j = 0; j < nr_all; j++)
			n += all[j] == mine[i];
		if (n > most)
			most = n;
	}
	return most;
}

/* "0:1:3" -> {0, 1, 3}; returns the count or -EINVAL with a message. */
int dbr_parse_dev_ids(const char *s, int *ids, int max, char *msg, size_t len)
{
	const char *p = s;
	int n = 0;

	if (!s || !*s) {
		ids[0] = 0;
		return 1;
	}
	while (*p) {
		char *end;
		long v;

		errno = 0;
		v = strtol(p, &end, 10);
		if (*p == ':') {
			snprintf(msg, len, "gpu_dev_ids=%s: an empty entry (two ':' in a row, or a leading one); give one device ordinal between each ':', e.g. gpu_dev_ids=0:1",
				 s);
			return -EINVAL;
		}
		if (end == p || errno || v < 0 || v > 4095 ||
		    (*end && *end != ':')) {
			snprintf(msg, len, "gpu_dev_ids=%s: expected device ordinals separated by ':', e.g. gpu_dev_ids=0:1, or auto",
				 s);
			return -EINVAL;
		}
		if (n == max) {
			snprintf(msg, len, "gpu_dev_ids=%.200s...: more than %d entries; list at most %d (thread i uses entry i mod n, so the list repeats itself for more threads)",
				 s, max, max);
			return -EINVAL;
		}
		ids[n++] = (int)v;
		p = *end ? end + 1 : end;
		if (*end && !*p) {
			snprintf(msg, len, "gpu_dev_ids=%s: trailing ':'; drop it, e.g. gpu_dev_ids=0:1",
				 s);
			return -EINVAL;
		}
	}
	return n;
}

/*
 * The first entry that names no device (count devices seen) among those the
 * nr_threads threads of a job use (thread i: entry i mod n), or -1.
 */
int dbr_missing_dev(const int *ids, int n, unsigned int nr_threads, int count)
{
	unsigned int i;

	for (i = 0; i < nr_threads && i < (unsigned int)n; i++)
		if (ids[i] >= count)
			return ids[i];
	return -1;
}

#define DBR_WATCHDOG_P2P_S	30
#define DBR_WATCHDOG_MIN_US	1000LL
#define DBR_WATCHDOG_MAX_US	(86400LL * 1000000)

int dbr_pick_watchdog(bool set, long long us, bool p2p, uint64_t *ns,
		      char *msg, size_t len)
{
	if (!set) {
		*ns = p2p ? DBR_WATCHDOG_P2P_S * 1000000000ULL : 0;
		return 0;
	}
	if (us && (us < DBR_WATCHDOG_MIN_US || us > DBR_WATCHDOG_MAX_US)) {
		/* the value as fio read it, in the unit that says it whole */
		bool s = !(us % 1000000), ms = !(us % 1000);

		snprintf(msg, len, "stall_watchdog: %lld %s (as fio reads the value) is out of range; want 0 (off), or 1 ms to 24 h in fio's time units (us, ms, s, m, h; a bare number is seconds), e.g. stall_watchdog=30s",
			 s ? us / 1000000 : ms ? us / 1000 : us,
			 s ? "s" : ms ? "ms" : "us");
		return -EINVAL;
	}
	*ns = (uint64_t)us * 1000;
	return 0;
}

/* Thread i of a job (its numjobs clone index) uses entry i mod n. */
unsigned int dbr_kernel_mode(unsigned int opt, bool as_process,
			     unsigned int gpu_procs, const char **why)
{
	*why = NULL;
	if (opt != DBR_GPU_KERNEL_AUTO)
		return opt;
	if (!as_process || gpu_procs <= 1)
		return GPU_KERNEL_RESIDENT;
	*why = "gpu_kernel=auto: job processes with a GPU context each, which the GPU time-slices; thread=1, gpu_owner=auto (the default) or MPS keeps it resident";
	return GPU_KERNEL_LAUNCH;
}

enum dbr_context dbr_context_of(unsigned int opt, bool as_process, bool device,
				bool mps)
{
	if (!device)
		return DBR_CTX_NONE;
	if (!as_process || !opt)
		return DBR_CTX_PROCESS;
	if (opt == DBR_GPU_OWNER_AUTO && mps)
		return DBR_CTX_MPS;
	return DBR_CTX_OWNER;
}

bool dbr_watch_cq(unsigned int opt, bool can, bool reads, bool done_in_issue,
		  unsigned int threads, long cpus)
{
	if (!can || !opt)
		return false;
	if (opt != DBR_WATCH_CQ_AUTO)
		return true;
	return reads && done_in_issue && cpus > 0 &&
	       threads >= (unsigned long)cpus;
}

bool dbr_reads_to_kernel(unsigned int copy_mode, unsigned long long min_bs)
{
	struct gpu_copy c = { .dir = GPU_H2D, .len = min_bs };

	return gpu_kcopy_takes((enum gpu_copy_mode)copy_mode, &c);
}

int dbr_pick_dev(const int *ids, int n, unsigned int thread_idx)
{
	return ids[thread_idx % (unsigned int)n];
}

/* The first of fio's buffer options that decides what writes carry, or NULL. */
const char *dbr_buf_option(const struct dbr_buf_opts *b)
{
	return b->pattern ? "buffer_pattern" :
	       b->compress ? "buffer_compress_percentage" :
	       b->dedupe ? "dedupe_percentage" :
	       b->refill ? "refill_buffers" :
	       b->scramble ? "scramble_buffers" :
	       b->zero ? "zero_buffers" : NULL;
}

/*
 * Keep fio's buffers and GPU memory in step around each I/O? 1 or 0, or
 * -EINVAL when the job cannot work without it (verify checks fio's buffers).
 * gpu_sync=auto turns on for verify and for writes whose contents fio's
 * buffer options decide; fio's default scrambling of a few bytes per write
 * does not count (the data a GPU job writes is the GPU's, as fio's own
 * mem=cudamalloc has it). msg says why when a line is worth it, else "".
 */
int dbr_gpu_sync_on(const struct dbr_sync_job *j, char *msg, size_t len)
{
	const char *opt = j->writes ? dbr_buf_option(&j->buf) : NULL;

	msg[0] = '\0';
	if (!j->copies)		/* fio's buffers are the device memory */
		return 0;
	if (j->setting == DBR_SYNC_ON)
		return 1;
	if (j->setting == DBR_SYNC_OFF) {
		if (j->verify) {
			snprintf(msg, len, "gpu_sync=0 with verify: fio checks its host buffers, which gpu_sync=0 leaves out of step with GPU memory, so every block would fail verify; set gpu_sync=1 (or leave gpu_sync=auto), or drop verify");
			return -EINVAL;
		}
		if (opt)
			snprintf(msg, len, "gpu_sync=0: %s has no effect, writes carry what GPU memory holds; set gpu_sync=1 (or auto) to write fio's buffer contents",
				 opt);
		return 0;
	}
	if (j->verify)
		return 1;
	if (!opt)
		return 0;
	snprintf(msg, len, "gpu_sync=auto -> 1: %s decides what is written, so each write copies fio's buffer into GPU memory first",
		 opt);
	return 1;
}

static void vcat(char *buf, size_t len, const char *fmt, va_list ap)
{
	size_t used = strlen(buf);

	if (used < len)
		vsnprintf(buf + used, len - used, fmt, ap);
}

void dbr_cat(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vcat(buf, len, fmt, ap);
	va_end(ap);
}

static void add_reason(char *buf, size_t len, const char *fmt, ...)
{
	size_t used = strlen(buf);
	va_list ap;

	if (used && used + 7 < len)
		strcpy(buf + used, "; and ");
	va_start(ap, fmt);
	vcat(buf, len, fmt, ap);
	va_end(ap);
}

/* What the probe for the series found (dbr_probe_p2p), in dmabuf-doctor's words. */
static void probe_reason(int probe, char *why, size_t len)
{
	if (probe == -EINVAL)
		add_reason(why, len, "this kernel lacks the io_uring dma-buf series: the extended IORING_REGISTER_BUFFERS_UPDATE answered EINVAL");
	else if (probe == -EOPNOTSUPP)
		add_reason(why, len, "this kernel has the io_uring dma-buf series but not its config (CONFIG_DMABUF_TOKEN): the extended IORING_REGISTER_BUFFERS_UPDATE answered EOPNOTSUPP");
	else
		add_reason(why, len, "the probe for the io_uring dma-buf series failed: %s",
			   strerror(-probe));
}

/* The kernel comes first: where it lacks the series, that is the reason. */
int dbr_p2p_blockers(const struct dbr_p2p_facts *pf, char *why, size_t len)
{
	why[0] = '\0';
	if (pf->probe < 0)
		probe_reason(pf->probe, why, len);
	if (!pf->direct)
		add_reason(why, len, "direct=0 (dma-bufs are registered only for O_DIRECT block devices)");
	/* a name under /dev that did not exist is a mistyped device; any
	 * other name is a file the job means, and only its kind matters */
	if (pf->bad_file && pf->bad_created &&
	    !strncmp(pf->bad_file, "/dev/", 5))
		add_reason(why, len, "%s did not exist, so fio created a %llu KiB regular file by that name (check the name, e.g. ls /dev/nvme*n*, and delete that file)",
			   pf->bad_file, (unsigned long long)(pf->bad_size >> 10));
	else if (pf->bad_file)
		add_reason(why, len, "%s is %s (only nvme-pci namespaces such as /dev/nvme0n1 take dma-bufs)",
			   pf->bad_file, pf->bad_kind);
	if (pf->iommu_err)
		add_reason(why, len, "%s", pf->iommu_why);
	return pf->probe < 0 ? ENOTSUP : pf->iommu_err ? -pf->iommu_err :
	       why[0] ? EINVAL : 0;
}

int dbr_settle_transfer(const struct dbr_p2p_facts *pf, enum dbr_transfer *xfer,
			char *why, size_t len)
{
	int err;

	why[0] = '\0';
	if (*xfer == DBR_XFER_BOUNCE)
		return 0;
	err = dbr_p2p_blockers(pf, why, len);
	if (*xfer == DBR_XFER_AUTO)
		*xfer = err ? DBR_XFER_BOUNCE : DBR_XFER_P2P;
	return err;
}
