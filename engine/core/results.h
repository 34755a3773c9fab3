/* SPDX-License-Identifier: MIT */
/*
 * Per-GPU results: what each fio thread moved, on which GPU and path, as one
 * JSON line per thread (gpu_stats_file) and as a per-GPU summary at the end
 * of the run.
 *
 * The summary is added up in a small table that the engine maps shared and
 * anonymous when fio loads it, in fio's main process: job threads share it,
 * and job processes, forked from that process, inherit the same pages. So
 * one table sees every thread of the run whether it runs as a thread or a
 * process (fio keeps its own thread_data in shared memory for the same
 * reason). The last thread of the run to end gets the sums and says them.
 *
 * No fio here: the glue fills struct dbr_result from fio's counters.
 * Functions return 0 (or a count) or a negative errno; nothing prints.
 */
#ifndef DBR_RESULTS_H
#define DBR_RESULTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "topology.h"

enum { DBR_RD, DBR_WR, DBR_NR_DIRS };

/* room for a job name: fio's reports keep 128 bytes of it */
#define DBR_JOB_NAME_LEN	256

/* One thread's results, from fio's own counters where fio has them. */
struct dbr_result {
	char job[DBR_JOB_NAME_LEN];	/* fio's job name, cut at a character */
	unsigned int thread;		/* numjobs clone index */
	unsigned int group;		/* fio's group id: stonewalled jobs
					 * run apart, so their rates do not add */
	int pid;			/* the job process (or fio's, for threads) */
	char gpu[8];			/* provider name; "" when none was picked */
	int dev;			/* device ordinal; -1 when none */
	char pci[DBR_BDF_LEN];		/* "" when the runtime does not say */
	bool p2p;
	uint64_t bytes[DBR_NR_DIRS];	/* fio's io_bytes */
	uint64_t ios[DBR_NR_DIRS];	/* fio's total_ios */
	uint64_t runtime_ms[DBR_NR_DIRS];	/* fio's runtime per direction */
	unsigned long copies;		/* GPU copies (bounce, gpu_sync) */
	unsigned long copy_calls;	/* runtime calls that carried them */
	unsigned long copy_launches;	/* copy-kernel launches that did */
	unsigned long copy_passes;	/* passes the resident kernel took */
	unsigned long cq_copies;	/* reads it copied from the CQ */
	/* I/O whose copies ran; their time from queueing to seen done, and
	 * the thread's time blocked on copies, both summed (what limits 4k
	 * bounce reads at low thread counts) */
	unsigned long copied_ios;
	uint64_t copy_ns;
	uint64_t copy_wait_ns;
	unsigned long reissues;		/* -EAGAIN reissues */
	/* CPU time of the GPU owner's thread for the job process (-1: the
	 * job did not run through an owner) */
	int64_t owner_cpu_ns;
	int error;			/* fio's td->error */
	/* CLOCK_MONOTONIC: the thread's first commit and last reaped I/O (0:
	 * none), to tell whether a run's threads did their I/O together */
	uint64_t io_first_ns;
	uint64_t io_last_ns;
};

/* A GPU and path: the threads that ran on it, added up. */
struct dbr_gpu_sum {
	unsigned int group;		/* fio's group id */
	char gpu[8];
	int dev;
	char pci[DBR_BDF_LEN];
	bool p2p;
	unsigned int threads;
	unsigned int failed;		/* threads that ended with an error */
	uint64_t bytes[DBR_NR_DIRS];
	uint64_t ios[DBR_NR_DIRS];
	/* each thread's rate (its bytes or I/O over its own runtime, as fio
	 * works out a job's), added up as fio's per-job figures add up */
	uint64_t bw[DBR_NR_DIRS];
	double iops[DBR_NR_DIRS];
	unsigned long copies;
	unsigned long copy_calls;
	unsigned long copy_launches;
	unsigned long copy_passes;
	/* the threads' I/O windows: how long all of them were at it at once */
	unsigned int timed;		/* threads with a window */
	uint64_t latest_first_ns;
	uint64_t earliest_last_ns;
	double window_ns;		/* the windows' lengths, added up */
};

#define DBR_MAX_GPU_SUMS	64

/* fio's figures for one direction: bytes/s (integer, as fio) and IOPS */
uint64_t dbr_result_bw(const struct dbr_result *r, int dir);
double dbr_result_iops(const struct dbr_result *r, int dir);

/*
 * r's GPU fields: provider name, device, and its PCI address as the runtime
 * writes it ("00000000:3B:00.0"; NULL or "" when not known).
 */
void dbr_result_set_gpu(struct dbr_result *r, const char *gpu, int dev,
			const char *pci);

/*
 * r as one JSON object and a newline into buf (len bytes); run names the fio
 * run (dbr_tally_run_id). The length, or -ENOSPC.
 */
int dbr_result_json(const struct dbr_result *r, const char *run, char *buf,
		    size_t len);

/*
 * One character of a string as JSON text, for every JSON string writer
 * (records, dmabuf-doctor --json): out (DBR_JSON_CHAR_MAX bytes) gets it,
 * NUL-terminated, and *s moves past it; the return is its length. Valid
 * UTF-8 passes through whole; '"', '\\' and control characters are escaped;
 * a byte of no valid UTF-8 character (a name in Latin-1, a stray 0xff)
 * becomes \u00XX, the Latin-1 character of that byte, so the text is always
 * valid UTF-8 JSON whatever bytes a name or path holds.
 */
#define DBR_JSON_CHAR_MAX	8
size_t dbr_json_char(const char **s, char *out);

/*
 * The job name into r, whole where it fits, else cut at the end of a UTF-8
 * character (so the record stays valid UTF-8).
 */
void dbr_result_set_job(struct dbr_result *r, const char *name);

/*
 * Open path for appending records: an fd, or a negative errno. Never blocks:
 * a FIFO without a reader is -ENXIO; anything but a regular file or a FIFO
 * (a directory, a device) is -EINVAL.
 */
int dbr_results_open(const char *path);

/* r as one line, in one write (O_APPEND: lines never interleave). */
int dbr_result_append(int fd, const struct dbr_result *r, const char *run);

/*
 * The shared table. dbr_tally_map runs where fio loads the engine (before
 * it forks job processes); without it the table is this process's alone.
 */
int dbr_tally_map(void);
void dbr_tally_unmap(void);

/*
 * A thread of run 'run' (fio's backend process id) starts: the first of a
 * run empties the table and records 'expected', the run's thread count.
 */
void dbr_tally_join(long run, unsigned int expected);
/*
 * true for the first caller in the run to ask with this bit (one of
 * DBR_ONCE_*), false for every later one: a line said once per run, not
 * once per job process.
 */
#define DBR_ONCE_SLICED		1u	/* job processes in GPU time slices */
bool dbr_tally_once(unsigned int bit);

/* The run's id for records: "<pid>-<ms since the epoch at its first join>" */
void dbr_tally_run_id(char *buf, size_t len);

/*
 * A thread of the run ends with result r (NULL: it moved nothing). For the
 * last thread of the run: the number of sums copied to out (at most max,
 * sorted by GPU and path), with *more set when some did not fit the table;
 * else 0.
 */
int dbr_tally_end(long run, unsigned int expected, const struct dbr_result *r,
		  struct dbr_gpu_sum *out, int max, bool *more);

/* Below this share of together time the per-GPU line warns (results.c). */
#define DBR_TOGETHER_MIN	0.9
double dbr_gpu_sum_together(const struct dbr_gpu_sum *s);

/* One sum as a line of words (no prefix, no newline); groups: name its group. */
void dbr_gpu_sum_line(const struct dbr_gpu_sum *s, bool groups, char *buf,
		      size_t len);

#endif
