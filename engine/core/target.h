/* SPDX-License-Identifier: MIT */
/*
 * What kind of file an I/O target is, as far as the p2p path cares: only a
 * whole NVMe namespace block device (nvme-pci) can take a dma-buf.
 */
#ifndef DBR_TARGET_H
#define DBR_TARGET_H

#include <stdbool.h>
#include <sys/types.h>

struct dbr_target {
	bool is_blkdev;
	bool is_nvme_ns;	/* nvmeXnY, not a partition */
	bool is_partition;
	dev_t rdev;		/* the block device, for per-device limits */
	char name[64];		/* kernel name, e.g. nvme0n1, loop3 */
};

int dbr_target_inspect(const char *path, struct dbr_target *t);
const char *dbr_target_kind(const struct dbr_target *t);
long dbr_target_queue_kb(const char *root, const struct dbr_target *t,
			 const char *attr);
bool dbr_reads_done_in_issue(const char *path, bool odirect);

#endif
