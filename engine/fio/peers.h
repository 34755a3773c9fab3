/* SPDX-License-Identifier: MIT */
/*
 * The other threads of the run, as one thread sees them from fio's thread
 * list: fio-side (thread_data), no printing. peers.c says how each answer
 * is read and why it is safe to read it from another thread.
 */
#ifndef DBR_PEERS_H
#define DBR_PEERS_H

#include <stdbool.h>

struct thread_data;

/* the engine's ops table (fio_engine.c): a thread on it runs this engine */
extern struct ioengine_ops ioengine;

/* Thread numbers first..last: those that may run beside td (stonewalls). */
void dbr_run_window(struct thread_data *td, unsigned int *first,
		    unsigned int *last);

/* May t's file list be read from this thread (t has not begun to end)? */
bool dbr_files_readable(struct thread_data *t);

/* t's value of option name as set in its own section or command line. */
const char *dbr_opt_value(struct thread_data *t, const char *name);

/* t's value of option name beside td, whose own value is mine; NULL: unknown. */
const char *dbr_peer_opt(struct thread_data *t, struct thread_data *td,
			 const char *name, const char *mine);

/* Does t run td's engine (loaded, or named alike)? */
bool dbr_same_engine(struct thread_data *t, struct thread_data *td);

/*
 * dma-buf registrations the busiest of td's devices would carry, over the
 * threads beside td that may register; transfer: td's own transfer= name.
 */
unsigned int dbr_maps_per_dev(struct thread_data *td, const char *transfer);

/* The run's id: fio's backend process, for the results table. */
long dbr_run_of(struct thread_data *td);

/* Threads of the run on this engine (before any has ended). */
unsigned int dbr_run_threads(void);

#endif
