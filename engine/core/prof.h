/* SPDX-License-Identifier: MIT */
/*
 * Where a job thread's own time goes, per I/O: DBR_PROFILE=1 in the
 * environment times fio's queue, commit and getevents calls into the
 * engine, the copy passes sent inside them and every io_uring_enter (each
 * liburing call that enters) by why the engine entered, and each thread's
 * end-of-job lines then say it (report.c). Without it each site costs a
 * load and a branch that is never taken.
 *
 * Why: the job thread is what limits the bounce path from a few threads
 * on, and a profiler sees the engine's code and the kernel's but not which
 * of the engine's calls into the kernel paid for which (H200, /dev/shm 4k
 * reads, one thread: the one enter per read took 1.32 us in fast runs and
 * 1.72-2.42 us in slow ones while the engine's own code stayed at 0.3-0.6
 * us; docs/perf.md).
 *
 * Times are the thread's wall time in each part, a wait in the kernel
 * included; a submit under sqthread_poll, which need not enter, counts as
 * one all the same. They are read from the CPU's time-stamp counter on
 * x86-64, a few nanoseconds a read (a clock read costs 20-40 in a guest),
 * and scaled to nanoseconds against the monotonic clock at the end;
 * elsewhere from the monotonic clock itself.
 */
#ifndef DBR_PROF_H
#define DBR_PROF_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

enum dbr_prof_part {
	DBR_PROF_QUEUE,		/* fio's queue calls */
	DBR_PROF_COMMIT,	/* its commit calls */
	DBR_PROF_GETEVENTS,	/* its getevents calls */
	DBR_PROF_PASS,		/* copy passes sent, inside the calls above */
	/* io_uring_enter, by why the engine entered */
	DBR_PROF_SUBMIT,	/* submit (and run what completed) */
	DBR_PROF_WAIT,		/* submit and wait for completions */
	DBR_PROF_REAP,		/* run what completed, the CQ looking empty */
	DBR_PROF_LOOK,		/* a copy wait's look at the ring */
	DBR_PROF_NAP,		/* a copy wait's sleep on the ring */
	DBR_PROF_NR,
};
#define DBR_PROF_FIRST_ENTER	DBR_PROF_SUBMIT

/* One thread's figures; t0_* mark where they began (scaling ticks to ns). */
struct dbr_prof {
	uint64_t ticks[DBR_PROF_NR];
	unsigned long calls[DBR_PROF_NR];
	uint64_t t0_ticks, t0_ns;
};

/* DBR_PROFILE=1 was set when the engine was loaded */
extern bool dbr_prof_on;

static inline uint64_t dbr_prof_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static inline uint64_t dbr_prof_ticks(void)
{
#if defined(__x86_64__)
	return __rdtsc();
#else
	return dbr_prof_ns();
#endif
}

/* A timed part begins: its start, 0 when not profiling. */
static inline uint64_t dbr_prof_begin(void)
{
	return dbr_prof_on ? dbr_prof_ticks() : 0;
}

static inline void dbr_prof_end(struct dbr_prof *p, enum dbr_prof_part part,
				uint64_t t0)
{
	if (!dbr_prof_on)
		return;
	p->ticks[part] += dbr_prof_ticks() - t0;
	p->calls[part]++;
}

/* Start counting (the ring's set-up). */
void dbr_prof_start(struct dbr_prof *p);
/* ns of part, per n I/O */
double dbr_prof_us_per(const struct dbr_prof *p, enum dbr_prof_part part,
		       unsigned long n);

#endif
