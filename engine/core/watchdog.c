// SPDX-License-Identifier: MIT
/* The stall watchdog (watchdog.h). */
#include <time.h>

#include "watchdog.h"

#define DBR_WATCH_PERIOD_NS	1000000000ULL

void dbr_watch_init(struct dbr_watch *w, uint64_t limit_ns,
		    void (*on_stall)(void *, uint64_t, unsigned int),
		    void *arg)
{
	w->limit_ns = limit_ns;
	w->period_ns = limit_ns && limit_ns < DBR_WATCH_PERIOD_NS ? limit_ns :
		       DBR_WATCH_PERIOD_NS;
	w->quiet_from = 0;
	w->reported = false;
	w->stalls = 0;
	w->on_stall = on_stall;
	w->arg = arg;
}

uint64_t dbr_watch_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

void dbr_watch_begin(struct dbr_watch *w, uint64_t now)
{
	if (!w->quiet_from)
		w->quiet_from = now ? now : 1;
}

void dbr_watch_progress(struct dbr_watch *w)
{
	w->quiet_from = 0;
	w->reported = false;
}

int dbr_watch_quiet(struct dbr_watch *w, uint64_t now, unsigned int inflight)
{
	if (!inflight) {
		dbr_watch_progress(w);
		return 0;
	}
	dbr_watch_begin(w, now);
	if (!w->limit_ns || w->reported || now - w->quiet_from < w->limit_ns)
		return 0;
	w->reported = true;
	w->stalls++;
	if (w->on_stall)
		w->on_stall(w->arg, now - w->quiet_from, inflight);
	return 1;
}
