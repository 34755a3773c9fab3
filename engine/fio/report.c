// SPDX-License-Identifier: MIT
/*
 * What the engine says: its lines on fio's output (dbr_info), at a
 * thread's start the path it takes (and how its buffer registers), and at a
 * thread's end what its copies and ring did, its results record
 * (gpu_stats_file) and, from the run's last thread, the per-GPU sums
 * (results.h keeps the table).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dbr_fio.h"
#include "dbr_uapi.h"
#include "kcopy.h"
#include "peers.h"
#include "remote.h"
#include "results.h"

/* fio's main process, where it loaded the engine */
static pid_t dbr_main_pid;

__attribute__((constructor)) static void dbr_note_main(void)
{
	dbr_main_pid = getpid();
}

/* one write: the lines of several job threads never interleave */
static void dbr_write_line(int fd, const char *line)
{
	ssize_t ret = write(fd, line, strlen(line));

	(void)ret;
}

/*
 * What the engine has to say (which path runs, reissue counts) is fio's
 * normal output, as fio's own log lines are: on stdout, in --output=FILE,
 * or under fio --server sent to the client, which prints it where it prints
 * fio's output. json, json+ and terse must parse whole, there and at the
 * client (a server runs with the client's --output-format): then the line
 * goes straight to stderr (the server's, under fio --server), or, with the
 * output in --output=FILE, nowhere, as fio's own informational lines in
 * those formats (harnesses such as fio's t/run-fio-tests.py take anything
 * on stderr for an error; gpu_stats_file has the path each thread took). A job process
 * writes into --output=FILE unbuffered: fio before 3.42 loses what a job
 * process leaves in its copy of the FILE buffer, as the process _exits.
 */
void dbr_info(const char *fmt, ...)
{
	char line[768];
	va_list ap;
	int len;

	va_start(ap, fmt);
	len = snprintf(line, sizeof(line), "%s: ", DBR_NAME);
	vsnprintf(line + len, sizeof(line) - len - 1, fmt, ap);
	va_end(ap);
	strcat(line, "\n");
	if (output_format & ~FIO_OUTPUT_NORMAL) {
		if (is_backend || !f_out || f_out == stdout)
			dbr_write_line(STDERR_FILENO, line);
		return;
	}
	if (!is_backend && f_out && f_out != stdout && getpid() != dbr_main_pid) {
		dbr_write_line(fileno(f_out), line);
		return;
	}
	log_info("%s", line);
}

/* whose credentials the ring's io-wq hand-offs count on (thread_creds) */
static void say_creds(const struct dbr_ring *r, char *buf, size_t len)
{
	if (r->own_creds)
		snprintf(buf, len, "thread_creds=own");
	else if (r->own_creds_err)
		snprintf(buf, len, "thread_creds=shared (a copy of its own was refused: %s)",
			 strerror(-r->own_creds_err));
	else
		snprintf(buf, len, "thread_creds=shared");
}

/* whose GPU context the job's copies run in, for job processes (gpu_owner) */
static void say_context(const struct thread_data *td,
			const struct dbr_data *dd, char *buf, size_t len)
{
	switch (dd->ctx) {
	case DBR_CTX_OWNER:
		snprintf(buf, len, dd->sess.p2p ?
			 "; GPU memory and its dma-buf from the GPU owner (pid %ld, shared by the run's job processes)" :
			 "; copies in the GPU owner's context (pid %ld, shared by the run's job processes)",
			 gpu_remote_owner_pid());
		break;
	case DBR_CTX_MPS:
		snprintf(buf, len, "; a context of its own, shared through MPS (gpu_owner=auto: MPS serves this GPU)");
		break;
	case DBR_CTX_PROCESS:
		if (td->o.use_thread || dd->sess.p2p)
			break;
		snprintf(buf, len, "; a context of its own, which the GPU time-slices with other job processes'");
		break;
	default:
		break;
	}
}

void dbr_say_path(struct thread_data *td, struct dbr_data *dd)
{
	struct dbr_session *s = &dd->sess;
	char flags[96], copies[320], creds[96], ctx[160] = "";

	if (!dbr_first_thread(td))
		return;
	if (!s->p2p && s->split.nr > 1)
		dbr_info("%s: the %zu MiB host buffer is registered as %u fixed buffers of at most %llu MiB (io_uring's limit per buffer), each holding whole io_u buffers",
			 td->o.name, s->buf.size >> 20, s->split.nr,
			 DBR_REGBUF_MAX_BYTES >> 20);
	dbr_ring_describe(&s->ring, flags, sizeof(flags));
	say_creds(&s->ring, creds, sizeof(creds));
	gpu_stream_describe(dbr_pipe_stream(&s->pipe), &s->buf, copies,
			   sizeof(copies));
	say_context(td, dd, ctx, sizeof(ctx));
	if (s->pipe.watch_why[0])
		dbr_info("%s: gpu_watch_cq: the resident kernel does not watch the ring's CQ: %s; reads' copies go in passes",
			 td->o.name, s->pipe.watch_why);
	dbr_info("%s: gpu=%s dev=%d transfer=%s%s (%s%s%s%s), ring %s, %s%s%s",
		 td->o.name, s->buf.prov->name, s->buf.dev_id,
		 s->p2p ? "p2p" : "bounce",
		 s->sync && !s->buf.host_is_device ? " gpu_sync=1" : "",
		 s->p2p ? "NVMe DMA into the dma-buf" :
		 s->buf.host_is_device ? "host fixed buffer, no copies" :
		 "host fixed buffer + async GPU copies",
		 s->p2p ? (s->buf.export_kind[0] ? ": " : "") :
		 s->buf.host_is_device ? "" : ": ",
		 s->p2p ? s->buf.export_kind :
		 s->buf.host_is_device ? "" : copies, ctx,
		 flags, creds, dd->cpus_said[0] ? "; gpu_cpus=auto: " : "",
		 dd->cpus_said);
}

void dbr_say_split(struct thread_data *td, const struct dbr_session *s)
{
	if (!dbr_first_thread(td))
		return;
	dbr_info("%s: the kernel refused one %zu MiB dma-buf (Invalid argument: v3 to v5 of the series take at most %llu MiB): registered as %u dma-bufs of at most %llu MiB per file, each holding whole io_u buffers",
		 td->o.name, s->buf.size >> 20, DBR_REGBUF_MAX_BYTES >> 20,
		 s->split.nr, DBR_REGBUF_MAX_BYTES >> 20);
}

/*
 * fio names a failed I/O's file and offset, as if the drive failed it: when
 * GPU copies start failing, say once (until I/O completes without a copy
 * failure again) that it was the copy, and the runtime's own words.
 */
void dbr_say_copy_errors(struct thread_data *td, struct dbr_data *dd,
			 int reaped)
{
	unsigned long errs = dd->sess.pipe.st.copy_errors;
	const char *why = dd->sess.buf.why[0] ? dd->sess.buf.why :
			  "no detail from the runtime";

	/* at the stop, copies that run late fail by the deadline: dbr_say_stop */
	if (dd->sess.buf.deadline_ns)
		return;
	if (errs == dd->copy_errors_said) {
		if (reaped > 0)
			dd->copy_burst = false;
		return;
	}
	dd->copy_errors_said = errs;
	/* a lasting cause (an owner gone) fails every copy after an I/O that
	 * needed none: said again only when the reason changes */
	if (dd->copy_burst || !strcmp(dd->copy_why_said, why))
		return;
	dd->copy_burst = true;
	snprintf(dd->copy_why_said, sizeof(dd->copy_why_said), "%s", why);
	log_err("%s: %s thread %d: a GPU copy failed, gpu=%s dev=%d: %s; the I/O it carried fails, so fio's io_u error that follows is the GPU copy's, not the drive's (check the GPU: dmesg, nvidia-smi or rocm-smi)\n",
		DBR_NAME, td->o.name, td->subjob_number, dd->sess.buf.prov->name,
		dd->sess.buf.dev_id, why);
}

void dbr_say_stop(struct thread_data *td, struct dbr_data *dd)
{
	if (!dd->late && !dd->sess.buf.abandoned)
		return;
	dbr_info("%s thread %d: stopped with GPU copies still running %llu s after the job's end (runtime or signal): %lu I/O given back as not transferred%s",
		 td->o.name, td->subjob_number,
		 (unsigned long long)(DBR_STOP_BOUND_NS / 1000000000ull), dd->late,
		 dd->sess.buf.abandoned ? "; the memory those copies use is left to the process's exit" : "");
}

/* the copy stream's counters, live or as iomem_free left them */
static const struct gpu_stream_stats *dbr_copy_stats(struct dbr_data *dd)
{
	return dbr_pipe_copy_stats(&dd->sess.pipe);
}

static double per_unit_us(uint64_t ns, unsigned long n)
{
	return n ? (double)ns / 1000.0 / (double)n : 0.0;
}

/*
 * What the thread's copies and the ring did: copies per runtime call shows
 * how well copies were batched, fences how often the engine asked the GPU
 * "done yet?", held back how often ordering made an I/O wait.
 */

void dbr_say_counts(struct thread_data *td, struct dbr_data *dd)
{
	const struct gpu_stream_stats *cs = dbr_copy_stats(dd);
	const struct dbr_pipe_stats *ps = &dd->sess.pipe.st;
	const struct dbr_ring *ring = &dd->sess.ring;

	if (!dd->sess.opened || (!ring->reissues && !cs->copies && !ps->cq_copied))
		return;
	dbr_info("%s thread %u: %lu -EAGAIN reissue%s, %lu GPU copies in %lu runtime calls (%lu merged with a neighbour; %.2f us in the runtime per copy), %lu kernel launches and %lu passes to the resident kernel (%lu starts), copies done %.1f us after queueing (mean), %.2f us waited on copies per copied I/O, %lu fences (%lu by the copy kernel, %lu event queries, %lu slept), %lu I/O held for order, %lu failed by a copy",
		 td->o.name, td->subjob_number, ring->reissues,
		 ring->reissues == 1 ? "" : "s", cs->copies, cs->calls,
		 cs->merged, per_unit_us(cs->call_ns, cs->copies), cs->launches,
		 cs->passes, cs->starts,
		 per_unit_us(ps->copy_ns, ps->copied),
		 per_unit_us(dbr_pipe_wait_ns(&dd->sess.pipe), ps->copied), cs->fences,
		 cs->kernel_fences, cs->queries, cs->waits, ps->held_back,
		 ps->copy_errors);
	if (ps->cq_copied)
		dbr_info("%s thread %u: %lu reads copied by the resident kernel from the ring's CQ (gpu_watch_cq), no pass or runtime call each; waits for them yielded the CPU %lu times (past gpu_spin_us)",
			 td->o.name, td->subjob_number, ps->cq_copied,
			 dd->sess.ring.gpu_yields);
}

/*
 * fio's cpu line counts the job process alone; its GPU calls run in the
 * owner's thread for it, whose CPU is part of the job's cost per I/O. Asked
 * for once, before the session closes (the owner's thread for the job
 * process ends with it).
 */
void dbr_keep_owner_cpu(struct dbr_data *dd)
{
	uint64_t ns;

	if (dd->ctx != DBR_CTX_OWNER || dd->owner_cpu_asked)
		return;
	dd->owner_cpu_asked = true;
	if (gpu_remote_owner_cpu(&ns) == 0)
		dd->owner_cpu_ns = (int64_t)ns;
}

void dbr_say_owner_cpu(struct thread_data *td, struct dbr_data *dd)
{
	uint64_t ios = td->ts.total_io_u[DDIR_READ] +
		       td->ts.total_io_u[DDIR_WRITE];

	if (dd->owner_cpu_ns < 0)
		return;
	dbr_info("%s thread %u: the GPU owner's thread for this job process spent %.2f us of CPU per I/O (%.1f ms in all), which fio's cpu line for the job does not count",
		 td->o.name, td->subjob_number,
		 per_unit_us((uint64_t)dd->owner_cpu_ns, ios),
		 dd->owner_cpu_ns / 1e6);
}

/*
 * What the resident kernel's diagnostic build (DBR_KRING_PTX, gpu-proof
 * rounds) counted: its rounds and where a round's time went, by the GPU's
 * clock. Nothing from the plain kernel.
 */
void dbr_say_kernel_rounds(struct thread_data *td, struct dbr_data *dd)
{
	const uint64_t *k = dbr_copy_stats(dd)->kstat;
	unsigned long n = (unsigned long)k[GPU_KSTAT_ROUNDS];

	if (!n)
		return;
	dbr_info("%s thread %u: resident kernel (diagnostic build): %lu rounds of %.2f passes and %.2f copies; a round read its passes in %.2f us, copied in %.2f us, fenced and told the host in %.2f us; %.2f us waiting for passes between rounds",
		 td->o.name, td->subjob_number, n,
		 (double)k[GPU_KSTAT_PASSES] / n, (double)k[GPU_KSTAT_DESCS] / n,
		 per_unit_us(k[GPU_KSTAT_READ_NS], n),
		 per_unit_us(k[GPU_KSTAT_COPY_NS], n),
		 per_unit_us(k[GPU_KSTAT_FENCE_NS], n),
		 per_unit_us(k[GPU_KSTAT_WAIT_NS], n));
}

/*
 * DBR_PROFILE=1 (prof.h): the job thread's time in the engine per I/O it
 * queued, by fio's calls, and its io_uring_enter calls by why they were
 * made, each with what it took.
 */
void dbr_say_profile(struct thread_data *td, struct dbr_data *dd)
{
	const struct dbr_prof *p = &dd->sess.ring.prof;
	unsigned long n = p->calls[DBR_PROF_QUEUE];
	double enters = 0.0, enter_us = 0.0;
	char by[256];
	size_t len = 0;
	int i;
	static const char *const why[DBR_PROF_NR] = {
		[DBR_PROF_SUBMIT] = "submit",
		[DBR_PROF_WAIT] = "submit and wait",
		[DBR_PROF_REAP] = "reap",
		[DBR_PROF_LOOK] = "copy wait's look",
		[DBR_PROF_NAP] = "copy wait's sleep",
	};

	if (!dbr_prof_on || !dd->sess.opened || !n)
		return;
	by[0] = '\0';
	for (i = DBR_PROF_FIRST_ENTER; i < DBR_PROF_NR; i++) {
		enters += (double)p->calls[i] / (double)n;
		enter_us += dbr_prof_us_per(p, i, n);
		if (p->calls[i] && len < sizeof(by))
			len += (size_t)snprintf(by + len, sizeof(by) - len, "%s%s %.2f (%.2f us)",
						len ? ", " : "", why[i],
						(double)p->calls[i] / (double)n,
						dbr_prof_us_per(p, i, n));
	}
	dbr_info("%s thread %u: profile (DBR_PROFILE), per I/O queued (%lu): %.2f us in queue, %.2f in commit, %.2f in getevents (of these, %.2f in %.2f io_uring_enter calls: %s; %.2f sending copy passes, %.2f waiting on copies)",
		 td->o.name, td->subjob_number, n,
		 dbr_prof_us_per(p, DBR_PROF_QUEUE, n),
		 dbr_prof_us_per(p, DBR_PROF_COMMIT, n),
		 dbr_prof_us_per(p, DBR_PROF_GETEVENTS, n), enter_us, enters,
		 by[0] ? by : "none", dbr_prof_us_per(p, DBR_PROF_PASS, n),
		 per_unit_us(dbr_pipe_wait_ns(&dd->sess.pipe), n));
}

/* r's GPU: the provider's name, the device and its PCI address */
static void dbr_result_of_gpu(struct dbr_result *r,
			      const struct gpu_provider *p, int dev)
{
	char pci[64];

	if (!p->pci_addr || p->pci_addr(dev, pci, sizeof(pci)))
		pci[0] = '\0';
	dbr_result_set_gpu(r, p->name, dev, pci);
}

/* The thread's results, in fio's own figures: what fio's report says of it */
static void dbr_result_of(struct thread_data *td, struct dbr_data *dd,
			  struct dbr_result *r)
{
	const struct gpu_stream_stats *cs = dbr_copy_stats(dd);
	const struct dbr_pipe_stats *ps = &dd->sess.pipe.st;
	static const int ddir[DBR_NR_DIRS] = { DDIR_READ, DDIR_WRITE };
	int d;

	memset(r, 0, sizeof(*r));
	dbr_result_set_job(r, td->o.name);
	r->thread = td->subjob_number;
	r->group = td->groupid;
	r->pid = getpid();
	r->dev = -1;
	if (dd->sess.buf.prov)
		dbr_result_of_gpu(r, dd->sess.buf.prov, dd->sess.buf.dev_id);
	r->p2p = dd->sess.p2p;
	for (d = 0; d < DBR_NR_DIRS; d++) {
		r->bytes[d] = td->io_bytes[ddir[d]];
		r->ios[d] = td->ts.total_io_u[ddir[d]];
		r->runtime_ms[d] = td->ts.runtime[ddir[d]];
	}
	r->copies = cs->copies;
	r->copy_calls = cs->calls;
	r->copy_launches = cs->launches;
	r->copy_passes = cs->passes;
	r->cq_copies = ps->cq_copied;
	r->copied_ios = ps->copied;
	r->copy_ns = ps->copy_ns;
	r->copy_wait_ns = dbr_pipe_wait_ns(&dd->sess.pipe);
	r->reissues = dd->sess.ring.reissues;
	r->owner_cpu_ns = dd->owner_cpu_ns;
	r->error = td->error;
	r->io_first_ns = dd->io_first_ns;
	r->io_last_ns = dd->io_last_ns;
}

static void dbr_say_sums(const struct dbr_gpu_sum *s, int n, bool more)
{
	char line[512];
	bool moved = false, groups = false;
	int i;

	for (i = 0; i < n; i++) {
		moved = moved || s[i].ios[DBR_RD] || s[i].ios[DBR_WR];
		groups = groups || s[i].group != s[0].group;
	}
	if (!moved)
		return;
	/* stonewalled groups ran one after the other: a line per group */
	for (i = 0; i < n; i++) {
		dbr_gpu_sum_line(&s[i], groups, line, sizeof(line));
		dbr_info("per GPU: %s", line);
	}
	if (more)
		dbr_info("per GPU: more GPU and path pairs than the %d said; gpu_stats_file has every thread",
			 DBR_MAX_GPU_SUMS);
}

/*
 * Every thread's results go into the run's table once (dd NULL: a thread
 * that never got its state); the last thread of the run says the sums. The
 * record goes to gpu_stats_file.
 */
void dbr_end_results(struct thread_data *td, struct dbr_data *dd)
{
	struct dbr_gpu_sum *sums;
	struct dbr_result r;
	char run[48];
	bool more = false;
	int n, ret;

	/* a thread with stats_fd joined the run in init: the run id is set */
	if (dd)
		dbr_result_of(td, dd, &r);
	if (dd && dd->stats_fd >= 0) {
		dbr_tally_run_id(run, sizeof(run));
		ret = dbr_result_append(dd->stats_fd, &r, run);
		/* a lost record is a failed run, as a lost fio result is */
		if (ret < 0) {
			log_err("%s: gpu_stats_file=%.400s: writing thread %u's record failed: %s; the record is lost: make room there, or point gpu_stats_file elsewhere\n",
				DBR_NAME, dd->stats_path, td->subjob_number,
				strerror(-ret));
			td_verror(td, -ret, "gpu_stats_file");
		}
	}
	sums = calloc(DBR_MAX_GPU_SUMS, sizeof(*sums));
	n = dbr_tally_end(dbr_run_of(td), dbr_run_threads(), dd ? &r : NULL,
			  sums, sums ? DBR_MAX_GPU_SUMS : 0, &more);
	if (n > 0)
		dbr_say_sums(sums, n, more);
	free(sums);
}
