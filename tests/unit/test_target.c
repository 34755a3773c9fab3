// SPDX-License-Identifier: MIT
/*
 * engine/core/target.c on the files this machine has: what p2p needs of a target
 * (a whole NVMe namespace) told apart from regular files, character devices,
 * directories, missing paths and other block devices (loop). An NVMe
 * namespace is checked only where DBR_TEST_NVME names one. Then where a
 * target's reads end: in the call that issues them (the page cache: tmpfs,
 * direct=0), or in the block layer's completion (a block device's or a
 * disk filesystem's O_DIRECT reads).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <linux/magic.h>

#include "check.h"
#include "target.h"

static void test_not_block(void)
{
	char path[] = "/tmp/dbr-target.XXXXXX";
	struct dbr_target t;
	int fd = mkstemp(path);

	CHECK(fd >= 0, "scratch file");
	CHECK(dbr_target_inspect(path, &t) == 0 && !t.is_blkdev &&
	      !t.is_nvme_ns && !t.rdev && !t.name[0] &&
	      !strcmp(dbr_target_kind(&t), "not a block device"),
	      "a regular file is not a block device (%s)", dbr_target_kind(&t));
	CHECK(dbr_target_inspect("/dev/null", &t) == 0 && !t.is_blkdev,
	      "a character device is not a block device");
	CHECK(dbr_target_inspect("/tmp", &t) == 0 && !t.is_blkdev,
	      "a directory is not a block device");
	unlink(path);
	close(fd);
	memset(&t, 0x5a, sizeof(t));
	CHECK(dbr_target_inspect(path, &t) == -ENOENT && !t.is_blkdev &&
	      !t.is_nvme_ns,
	      "a missing path: -ENOENT, and nothing left of what was there");
}

/* the first loop device node the kernel knows in sysfs */
static int find_loop(char *dev, size_t len)
{
	struct stat st;
	char sys[64];
	int i;

	for (i = 0; i < 64; i++) {
		snprintf(dev, len, "/dev/loop%d", i);
		if (stat(dev, &st) < 0 || !S_ISBLK(st.st_mode))
			continue;
		snprintf(sys, sizeof(sys), "/sys/dev/block/%u:%u",
			 major(st.st_rdev), minor(st.st_rdev));
		if (access(sys, F_OK) == 0)
			return 0;
	}
	return -ENOENT;
}

static void test_loop(void)
{
	struct dbr_target t;
	struct stat st;
	char dev[32];

	if (find_loop(dev, sizeof(dev)) < 0) {
		printf("ok - SKIP: no loop device node known to sysfs\n");
		return;
	}
	stat(dev, &st);
	CHECK(dbr_target_inspect(dev, &t) == 0 && t.is_blkdev &&
	      t.rdev == st.st_rdev && !strncmp(t.name, "loop", 4) &&
	      !t.is_nvme_ns && !t.is_partition,
	      "%s: a block device named %s, not an NVMe namespace", dev, t.name);
	CHECK(!strcmp(dbr_target_kind(&t),
		      "a block device that is not an NVMe namespace"),
	      "%s is \"%s\"", dev, dbr_target_kind(&t));
}

static void test_nvme(void)
{
	const char *dev = getenv("DBR_TEST_NVME");
	struct dbr_target t;

	if (!dev || !dev[0]) {
		printf("ok - SKIP: DBR_TEST_NVME names no NVMe namespace\n");
		return;
	}
	CHECK(dbr_target_inspect(dev, &t) == 0 && t.is_blkdev &&
	      t.is_nvme_ns && !strncmp(t.name, "nvme", 4) &&
	      !strcmp(dbr_target_kind(&t), "NVMe namespace"),
	      "%s: an NVMe namespace (%s)", dev, t.name);
}

static bool on_tmpfs(const char *path)
{
	struct statfs fs;

	return statfs(path, &fs) == 0 &&
	       (fs.f_type == TMPFS_MAGIC || fs.f_type == RAMFS_MAGIC);
}

/* a scratch file in dir (path: dir's, filled in), or -1 */
static int scratch_in(const char *dir, char *path, size_t len)
{
	snprintf(path, len, "%s/dbr-target.XXXXXX", dir);
	return mkstemp(path);
}

static void test_done_in_issue(void)
{
	static const char *const disks[] = { ".", "/var/tmp", "/tmp" };
	char path[PATH_MAX], dev[32];
	unsigned int i;
	int fd;

	CHECK(!dbr_reads_done_in_issue("/dev/null", false) &&
	      !dbr_reads_done_in_issue("/dev/null", true) &&
	      !dbr_reads_done_in_issue("/tmp", true) &&
	      !dbr_reads_done_in_issue("/nonexistent/dbr", false),
	      "a character device, a directory, a missing path: not read through the page cache");
	if (!on_tmpfs("/dev/shm") || (fd = scratch_in("/dev/shm", path, sizeof(path))) < 0) {
		printf("ok - SKIP: /dev/shm is not a tmpfs this test can write to\n");
	} else {
		CHECK(dbr_reads_done_in_issue(path, true) &&
		      dbr_reads_done_in_issue(path, false),
		      "a file on tmpfs: its O_DIRECT reads copy from the page cache too");
		unlink(path);
		close(fd);
	}
	for (i = 0; i < sizeof(disks) / sizeof(disks[0]); i++)
		if (!on_tmpfs(disks[i]) &&
		    (fd = scratch_in(disks[i], path, sizeof(path))) >= 0)
			break;
	if (i == sizeof(disks) / sizeof(disks[0])) {
		printf("ok - SKIP: no directory here off tmpfs to write a file in\n");
	} else {
		CHECK(!dbr_reads_done_in_issue(path, true) &&
		      dbr_reads_done_in_issue(path, false),
		      "a file in %s (not tmpfs): O_DIRECT reads end in the block layer, buffered ones in the page cache",
		      disks[i]);
		unlink(path);
		close(fd);
	}
	if (find_loop(dev, sizeof(dev)) < 0) {
		printf("ok - SKIP: no loop device node known to sysfs\n");
		return;
	}
	CHECK(!dbr_reads_done_in_issue(dev, true) &&
	      dbr_reads_done_in_issue(dev, false),
	      "%s: O_DIRECT reads end in the block layer, buffered ones in the page cache", dev);
}

int main(void)
{
	test_not_block();
	test_loop();
	test_nvme();
	test_done_in_issue();
	return check_done("test_target");
}
