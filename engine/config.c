// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dbr_config.h"
#include "dbr_uapi.h"

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
	if (j->hipri) {
		snprintf(msg, len, "hipri (IOPOLL) is not supported: the io_uring dma-buf series refuses polled rings and fixed buffers gain nothing from it; drop hipri");
		return -EINVAL;
	}
	if (j->does_trim) {
		snprintf(msg, len, "trim is not supported: this engine moves data between a device and GPU memory; use rw=read/write/randrw (or ioengine=io_uring for trim)");
		return -EOPNOTSUPP;
	}
	if (j->transfer == DBR_XFER_P2P && !j->direct) {
		snprintf(msg, len, "transfer=p2p needs direct=1: the kernel registers dma-bufs only for O_DIRECT block devices; set direct=1 (or transfer=bounce for buffered I/O)");
		return -EINVAL;
	}
	if (j->buf_bytes > DBR_REGBUF_MAX_BYTES) {
		snprintf(msg, len, "the thread's buffer area (%zu MiB = iodepth x max bs) is over the 1024 MiB a registered buffer may hold; lower iodepth or bs, or split the work over numjobs",
			 j->buf_bytes >> 20);
		return -E2BIG;
	}
	if (j->transfer != DBR_XFER_BOUNCE &&
	    j->maps_per_dev > DBR_MAX_MAPS_PER_DEV) {
		snprintf(msg, len, "%u dma-buf registrations on one device (numjobs x files on it) is over the kernel's %d per device; lower numjobs or nrfiles",
			 j->maps_per_dev, DBR_MAX_MAPS_PER_DEV);
		return -E2BIG;
	}
	return 0;
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
		if (end == p || errno || v < 0 || v > 4095 ||
		    (*end && *end != ':')) {
			snprintf(msg, len, "gpu_dev_ids=%s: expected device ordinals separated by ':', e.g. gpu_dev_ids=0:1",
				 s);
			return -EINVAL;
		}
		if (n == max) {
			snprintf(msg, len, "gpu_dev_ids=%s: more than %d entries",
				 s, max);
			return -EINVAL;
		}
		ids[n++] = (int)v;
		p = *end ? end + 1 : end;
		if (*end && !*p) {
			snprintf(msg, len, "gpu_dev_ids=%s: trailing ':'", s);
			return -EINVAL;
		}
	}
	return n;
}

/* Thread i of a job (its numjobs clone index) uses entry i mod n. */
int dbr_pick_dev(const int *ids, int n, unsigned int thread_idx)
{
	return ids[thread_idx % (unsigned int)n];
}

bool dbr_gpu_sync_on(enum dbr_gpu_sync s, bool verify)
{
	return s == DBR_SYNC_ON || (s == DBR_SYNC_AUTO && verify);
}
