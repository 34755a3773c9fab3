// SPDX-License-Identifier: MIT
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <linux/magic.h>

#include "target.h"

/* nvme<ctrl>n<ns> exactly: partitions add p<N>, multipath paths c<N>. */
static bool is_nvme_ns_name(const char *name)
{
	unsigned int ctrl, ns;
	int used = 0;

	if (sscanf(name, "nvme%un%u%n", &ctrl, &ns, &used) != 2)
		return false;
	return name[used] == '\0';
}

int dbr_target_inspect(const char *path, struct dbr_target *t)
{
	char sys[96], link[512];
	struct stat st;
	const char *base;
	ssize_t n;

	memset(t, 0, sizeof(*t));
	if (stat(path, &st) < 0)
		return -errno;
	if (!S_ISBLK(st.st_mode))
		return 0;
	t->is_blkdev = true;
	t->rdev = st.st_rdev;
	snprintf(sys, sizeof(sys), "/sys/dev/block/%u:%u",
		 major(st.st_rdev), minor(st.st_rdev));
	n = readlink(sys, link, sizeof(link) - 1);
	if (n < 0)
		return 0;
	link[n] = '\0';
	base = strrchr(link, '/');
	base = base ? base + 1 : link;
	if (strlen(base) >= sizeof(t->name))
		return 0;
	strcpy(t->name, base);
	strcat(sys, "/partition");
	t->is_partition = access(sys, F_OK) == 0;
	t->is_nvme_ns = !t->is_partition && is_nvme_ns_name(t->name);
	return 0;
}

const char *dbr_target_kind(const struct dbr_target *t)
{
	if (!t->is_blkdev)
		return "not a block device";
	if (t->is_nvme_ns)
		return "NVMe namespace";
	if (t->is_partition)
		return "a partition";
	return "a block device that is not an NVMe namespace";
}

/*
 * A whole disk's queue limit attr (max_sectors_kb, max_hw_sectors_kb) in
 * KiB, under root ("" or a sysfs fixture, as topology.h), or -1 unknown.
 */
long dbr_target_queue_kb(const char *root, const struct dbr_target *t,
			 const char *attr)
{
	char path[PATH_MAX], buf[32], *end;
	long kb;
	FILE *f;

	if (!t->is_blkdev || t->is_partition)
		return -1;
	snprintf(path, sizeof(path), "%s/sys/dev/block/%u:%u/queue/%s", root,
		 major(t->rdev), minor(t->rdev), attr);
	f = fopen(path, "re");
	if (!f)
		return -1;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	fclose(f);
	kb = strtol(buf, &end, 10);
	return end == buf || kb <= 0 ? -1 : kb;
}

/*
 * Do reads of path end in the call that issues them, so that io_uring posts
 * their CQEs from there (an io-wq worker's, where the read blocks) without
 * the submitting thread? True where the page cache serves them: direct=0, or
 * a file on tmpfs or ramfs, whose O_DIRECT reads copy from it too. A block
 * device's O_DIRECT reads, and those of a file on a disk's filesystem, end
 * in the block layer's completion, which io_uring hands to the submitting
 * thread as task work: their CQEs reach the CQ only when it enters. False
 * for those, and where path cannot be looked at.
 */
bool dbr_reads_done_in_issue(const char *path, bool odirect)
{
	struct statfs fs;
	struct stat st;

	if (stat(path, &st) < 0 || !(S_ISREG(st.st_mode) || S_ISBLK(st.st_mode)))
		return false;
	if (!odirect)
		return true;
	if (S_ISBLK(st.st_mode) || statfs(path, &fs) < 0)
		return false;
	return fs.f_type == TMPFS_MAGIC || fs.f_type == RAMFS_MAGIC;
}
