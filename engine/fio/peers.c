// SPDX-License-Identifier: MIT
/*
 * The threads of the run beside one thread: which of them may run at the
 * same time (the run window), their engine options as fio parsed them, their
 * files, and how many dma-buf registrations they would put on a device.
 * Read from fio's thread list alone, so every thread of a run works the
 * same answers out, whichever starts first.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "fio.h"

#include "dbr_config.h"
#include "peers.h"
#include "target.h"

/*
 * Threads that may run beside td: fio starts a job with stonewall only once
 * every job before it has ended, so those between the stonewalls around td.
 * (tnumber_to_td rather than for_each_td, whose form changed after 3.33.)
 */
void dbr_run_window(struct thread_data *td, unsigned int *first,
		    unsigned int *last)
{
	unsigned int i;
	bool seen = false;

	*first = 0;
	*last = thread_number ? thread_number - 1 : 0;
	for (i = 0; i < thread_number; i++) {
		struct thread_data *t = tnumber_to_td(i);

		if (i && t->o.stonewall) {
			if (seen) {
				*last = i - 1;
				return;
			}
			*first = i;
		}
		seen = seen || t == td;
	}
}

/*
 * May t's file list be read from another thread? A job thread frees it as it
 * ends (close_and_free_files, after TD_FINISHING), so one that is ending
 * counts as having no files. A job process's list here is this process's
 * own copy (or fio's, in the parent), which stays.
 */
bool dbr_files_readable(struct thread_data *t)
{
	return !t->o.use_thread || t->runstate < TD_FINISHING;
}

/*
 * The last value fio parsed for t's option name in t's own job section or on
 * the command line, NULL where it was not set there ([global]'s options fio
 * keeps to itself: see dbr_peer_opt). Another job's engine options
 * are read from here, not its td->eo: fio frees that in the parent as soon
 * as it has forked the job's process, so later job processes would read
 * freed memory; the option list lives as long as the run.
 */
const char *dbr_opt_value(struct thread_data *t, const char *name)
{
	const char *val = NULL;
	struct flist_head *n;

	flist_for_each(n, &t->opt_list) {
		struct print_option *p;

		p = flist_entry(n, struct print_option, list);
		if (p->name && !strcmp(p->name, name))
			val = p->value;
	}
	return val;
}

/*
 * t's value of option name as seen beside td, whose own value is mine. An
 * option t's section does not set comes from [global]: where td's section
 * does not set it either, td's value came from there too, so it is mine.
 * NULL: not known (fio keeps [global]'s option list to itself).
 */
const char *dbr_peer_opt(struct thread_data *t, struct thread_data *td,
			 const char *name, const char *mine)
{
	const char *val = dbr_opt_value(t, name);

	if (val || dbr_opt_value(td, name))
		return val;
	return mine;
}

bool dbr_same_engine(struct thread_data *t, struct thread_data *td)
{
	return t->io_ops == &ioengine ||
	       (t->o.ioengine && td->o.ioengine &&
		!strcmp(t->o.ioengine, td->o.ioengine));
}

/*
 * Does t run td's engine on a path that may register dma-bufs? Its transfer
 * option is read from fio's option list (dbr_opt_value: t->eo may be freed
 * already); unset means the default, p2p.
 */
static bool dbr_registers_dmabufs(struct thread_data *t,
				  struct thread_data *td, const char *mine)
{
	const char *xfer;

	if (!dbr_same_engine(t, td) || !t->o.odirect)
		return false;
	xfer = dbr_peer_opt(t, td, "transfer", mine);
	return !xfer || strcasecmp(xfer, "bounce");
}

/* The device of each of t's block-device files, appended at devs[n]. */
static unsigned int dbr_file_devs(struct thread_data *t, dev_t *devs,
				  unsigned int n)
{
	struct fio_file *f;
	unsigned int i;

	if (!dbr_files_readable(t))
		return n;
	for_each_file(t, f, i) {
		struct dbr_target tg;

		if (!dbr_target_inspect(f->file_name, &tg) && tg.is_blkdev)
			devs[n++] = tg.rdev;
	}
	return n;
}

/*
 * dma-buf registrations the busiest of td's devices would carry: one per
 * file on it of every thread of the run that may register beside td (its
 * numjobs clones and other job sections alike).
 */
unsigned int dbr_maps_per_dev(struct thread_data *td,
			      const char *transfer)
{
	unsigned int i, first, last, nr_mine, nr_all = 0, cap = 0, most = 0;
	dev_t *mine, *all;

	dbr_run_window(td, &first, &last);
	for (i = first; i <= last && i < thread_number; i++)
		cap += tnumber_to_td(i)->files_index;
	mine = calloc(td->files_index + 1, sizeof(*mine));
	all = calloc(cap + 1, sizeof(*all));
	if (!mine || !all)
		goto out;
	nr_mine = dbr_file_devs(td, mine, 0);
	for (i = first; nr_mine && i <= last && i < thread_number; i++) {
		struct thread_data *t = tnumber_to_td(i);

		if (t == td || dbr_registers_dmabufs(t, td, transfer))
			nr_all = dbr_file_devs(t, all, nr_all);
	}
	most = dbr_busiest_dev(mine, nr_mine, all, nr_all);
out:
	free(mine);
	free(all);
	return most;
}

/* fio's backend process: job threads run in it, job processes are its children */
long dbr_run_of(struct thread_data *td)
{
	return td->o.use_thread ? (long)getpid() : (long)getppid();
}

/* Threads of the run on this engine (before any has ended: fio drops a
 * thread's io_ops when it ends). */
unsigned int dbr_run_threads(void)
{
	unsigned int i, n = 0;

	for (i = 0; i < thread_number; i++)
		n += tnumber_to_td(i)->io_ops == &ioengine;
	return n;
}
