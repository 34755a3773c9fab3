// SPDX-License-Identifier: MIT
/*
 * stall_watchdog, fio side: watchdog.c watches the ring's waits without
 * fio; this arms it from the option and, when it fires, says the one line
 * that names the stalled target, the oldest request's age and where to look
 * (fio's io_us carry the file and the issue time).
 */
#include <stdio.h>
#include <unistd.h>

#include "dbr_fio.h"

/* The in-flight io_u issued first, or NULL (fio keeps no times with disable_lat). */
static struct io_u *dbr_oldest(struct thread_data *td, struct dbr_data *dd)
{
	struct io_u *old = NULL, *u;
	unsigned int i;

	if (td->o.disable_lat)
		return NULL;
	for (i = 0; i < dd->nr_ios; i++) {
		u = dd->ios[i].user;
		if (u && (u->flags & IO_U_F_FLIGHT) &&
		    (!old || u->start_time.tv_sec < old->start_time.tv_sec ||
		     (u->start_time.tv_sec == old->start_time.tv_sec &&
		      u->start_time.tv_nsec < old->start_time.tv_nsec)))
			old = u;
	}
	return old;
}

/*
 * Nothing completed for stall_watchdog seconds with I/O in flight. One
 * line: the target, the oldest request's age, what in the kernel usually
 * causes it, where to look; the job keeps waiting.
 */
static void dbr_on_stall(void *arg, uint64_t quiet_ns, unsigned int inflight)
{
	struct dbr_data *dd = arg;
	struct thread_data *td = dd->td;
	struct io_u *old = dbr_oldest(td, dd);
	char age[64] = "";

	if (old)
		snprintf(age, sizeof(age), ", the oldest issued %.1f s ago",
			 utime_since_now(&old->start_time) / 1e6);
	log_err("%s: %s: %s I/O stalled: nothing completed for %.1f s with %u request%s in flight on %s%s. %s; see dmesg, and the stacks of tasks in D state (echo w > /proc/sysrq-trigger; cat /proc/%d/task/*/stack)\n",
		DBR_NAME, td->o.name, dd->sess.p2p ? "p2p" : "bounce",
		quiet_ns / 1e9, inflight, inflight == 1 ? "" : "s",
		old ? old->file->file_name : td->files_index ? td->files[0]->file_name : "?",
		age, dd->sess.p2p ?
		"Likely: v3 of the io_uring dma-buf series hangs on I/O the block layer splits (bs over the queue's max_sectors_kb; fixed in v4: io_uring workers wait in io_dmabuf_create_map / dma_resv_wait_timeout), an IOMMU fault that dropped the controller's DMA (DMAR / AMD-Vi lines), or an NVMe timeout and controller reset" :
		"Likely: an NVMe timeout and controller reset, or a device that stopped answering",
		(int)getpid());
}

int dbr_arm_watchdog(struct thread_data *td, struct dbr_data *dd)
{
	struct dbr_options *o = td->eo;
	uint64_t ns;
	char msg[256];
	int ret;

	ret = dbr_pick_watchdog(o->watchdog_set, o->watchdog_us, dd->sess.p2p,
				&ns, msg, sizeof(msg));
	if (ret)
		return dbr_fail(td, -ret, "stall_watchdog", msg);
	if (!ns)
		return 0;
	dd->td = td;
	dbr_watch_init(&dd->watch, ns, dbr_on_stall, dd);
	dd->sess.ring.watch = &dd->watch;
	return 0;
}
