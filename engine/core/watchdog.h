/* SPDX-License-Identifier: MIT */
/*
 * A stall watchdog for a ring's blocking waits: when I/O is in flight and
 * nothing completes for limit_ns, on_stall is called once for that quiet
 * stretch (the caller composes the user's line), and the wait goes on.
 * The ring arms it (dbr_ring.watch); blocked waits then wake every
 * period_ns to look. No fio, no printing.
 */
#ifndef DBR_WATCHDOG_H
#define DBR_WATCHDOG_H

#include <stdbool.h>
#include <stdint.h>

struct dbr_watch {
	uint64_t limit_ns;	/* quiet this long with I/O in flight: a stall */
	uint64_t period_ns;	/* a blocked wait wakes this often to look */
	uint64_t quiet_from;	/* the current quiet stretch began, 0: none */
	bool reported;		/* on_stall was called for this stretch */
	unsigned long stalls;	/* stretches reported */
	void (*on_stall)(void *arg, uint64_t quiet_ns, unsigned int inflight);
	void *arg;
};

/* limit_ns 0: never fires */
void dbr_watch_init(struct dbr_watch *w, uint64_t limit_ns,
		    void (*on_stall)(void *, uint64_t, unsigned int),
		    void *arg);
uint64_t dbr_watch_now(void);
/* a blocking wait starts at now (the stretch starts unless one runs) */
void dbr_watch_begin(struct dbr_watch *w, uint64_t now);
/* a completion came: the stretch ends */
void dbr_watch_progress(struct dbr_watch *w);
/* a wait timed out at now with inflight requests out: 1 when it reported */
int dbr_watch_quiet(struct dbr_watch *w, uint64_t now, unsigned int inflight);

#endif
