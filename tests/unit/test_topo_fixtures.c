// SPDX-License-Identifier: MIT
/*
 * engine/topology.c against sysfs trees built in a temp dir: a two-socket
 * machine with a PCIe switch, NVMe namespaces (partition, multipath head,
 * path node), GPUs at every distance; then the same tree without NUMA
 * information.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "check.h"
#include "topology.h"

#define HB0	"devices/pci0000:00"
#define SW	HB0 "/0000:00:01.0/0000:01:00.0"
#define NVME0	SW "/0000:02:08.0/0000:03:00.0"
#define GPU_A	SW "/0000:02:10.0/0000:04:00.0"		/* switch of nvme0 */
#define GPU_B	HB0 "/0000:00:03.0/0000:05:00.0"	/* host bridge of nvme0 */
#define NVME1	HB0 "/0000:00:02.0/0000:06:00.0"
#define GPU_C	HB0 "/0000:00:02.0/0000:06:00.1"	/* root port of nvme1 */
#define GPU_D	"devices/pci0000:40/0000:40:01.0/0000:41:00.0"	/* node 0 */
#define HB1	"devices/pci0000:80"
#define GPU_E	HB1 "/0000:80:01.0/0000:81:00.0"	/* node 1 */
#define NVME2	HB1 "/0000:80:02.0/0000:82:00.0"	/* node 1 */
#define SUBSYS	"devices/virtual/nvme-subsystem/nvme-subsys7"

static char root[512];

static void put(const char *rel, const char *text)
{
	char path[PATH_MAX], *slash;
	FILE *f;

	snprintf(path, sizeof(path), "%s/sys/%s", root, rel);
	for (slash = path + strlen(root) + 1; (slash = strchr(slash, '/'));
	     slash++) {
		*slash = '\0';
		mkdir(path, 0755);
		*slash = '/';
	}
	if (!text) {
		mkdir(path, 0755);
		return;
	}
	f = fopen(path, "w");
	if (!f || fprintf(f, "%s\n", text) < 0 || fclose(f)) {
		perror(path);
		exit(99);
	}
}

/* sys/<rel> -> <root>/sys/<target> */
static void link_to(const char *rel, const char *target)
{
	char path[PATH_MAX], dest[PATH_MAX];

	put(rel, NULL);
	snprintf(path, sizeof(path), "%s/sys/%s", root, rel);
	rmdir(path);
	snprintf(dest, sizeof(dest), "%s/sys/%s", root, target);
	if (symlink(dest, path) < 0) {
		perror(path);
		exit(99);
	}
}

static void pci_fn(const char *dev, const char *bdf, const char *numa)
{
	char rel[PATH_MAX];

	snprintf(rel, sizeof(rel), "%s/numa_node", dev);
	put(rel, numa);
	snprintf(rel, sizeof(rel), "bus/pci/devices/%s", bdf);
	link_to(rel, dev);
}

/* a namespace below controller ctrl (its sysfs dir) with class and dev links */
static void disk(const char *ctrl, const char *name, const char *devt)
{
	char rel[PATH_MAX], dir[2048];

	snprintf(dir, sizeof(dir), "%s/%s", ctrl, name);
	snprintf(rel, sizeof(rel), "%s/dev", dir);
	put(rel, devt);
	snprintf(rel, sizeof(rel), "%s/device", dir);
	link_to(rel, ctrl);
	snprintf(rel, sizeof(rel), "class/block/%s", name);
	link_to(rel, dir);
	snprintf(rel, sizeof(rel), "dev/block/%s", devt);
	link_to(rel, dir);
}

static void build_tree(bool numa)
{
	pci_fn(NVME0, "0000:03:00.0", numa ? "0" : "-1");
	pci_fn(GPU_A, "0000:04:00.0", numa ? "0" : "-1");
	pci_fn(GPU_B, "0000:05:00.0", numa ? "0" : "-1");
	pci_fn(NVME1, "0000:06:00.0", numa ? "0" : "-1");
	pci_fn(GPU_C, "0000:06:00.1", numa ? "0" : "-1");
	pci_fn(GPU_D, "0000:41:00.0", numa ? "0" : "-1");
	pci_fn(GPU_E, "0000:81:00.0", numa ? "1" : "-1");
	pci_fn(NVME2, "0000:82:00.0", numa ? "1" : "-1");
	disk(NVME0 "/nvme/nvme0", "nvme0n1", "259:0");
	put(NVME0 "/nvme/nvme0/nvme0n1/nvme0n1p1/partition", "1");
	put(NVME0 "/nvme/nvme0/nvme0n1/nvme0n1p1/dev", "259:1");
	link_to("class/block/nvme0n1p1", NVME0 "/nvme/nvme0/nvme0n1/nvme0n1p1");
	link_to("dev/block/259:1", NVME0 "/nvme/nvme0/nvme0n1/nvme0n1p1");
	disk(NVME2 "/nvme/nvme2", "nvme2n1", "259:2");
	/* nvme1 and nvme2 as the two paths of one multipath namespace */
	disk(NVME1 "/nvme/nvme1", "nvme1c1n1", "259:9");
	put(SUBSYS "/nvme7n1/dev", "259:7");
	link_to("class/block/nvme7n1", SUBSYS "/nvme7n1");
	link_to(SUBSYS "/nvme2", NVME2 "/nvme/nvme2");
	link_to(SUBSYS "/nvme1", NVME1 "/nvme/nvme1");
	put("devices/virtual/block/loop0/dev", "7:0");
	link_to("class/block/loop0", "devices/virtual/block/loop0");
	if (numa) {
		put("devices/system/node/node0/cpulist", "0-3");
		put("devices/system/node/node1/cpulist", "4-7");
	}
}

static void ctrl_is(const char *name, const char *bdf, int numa)
{
	struct dbr_blk_ctrl c;
	int ret = dbr_blk_ctrl_by_name(root, name, &c);

	CHECK(ret == 0 && !strcmp(c.pci.bdf, bdf) && c.pci.numa == numa,
	      "%s: controller %s node %d (got %d: '%s' node %d)", name, bdf,
	      numa, ret, c.pci.bdf, c.pci.numa);
}

static void test_block(void)
{
	struct dbr_blk_ctrl c;

	ctrl_is("nvme0n1", "0000:03:00.0", 0);
	CHECK(dbr_blk_ctrl_by_name(root, "nvme0n1p1", &c) == 0 &&
	      c.partition && !strcmp(c.disk, "nvme0n1") &&
	      !strcmp(c.pci.bdf, "0000:03:00.0"),
	      "partition nvme0n1p1: disk '%s', controller '%s'", c.disk,
	      c.pci.bdf);
	CHECK(dbr_blk_ctrl_by_devt(root, 259, 1, &c) == 0 && c.partition &&
	      !strcmp(c.pci.bdf, "0000:03:00.0"),
	      "259:1 is the partition, controller '%s'", c.pci.bdf);
	CHECK(dbr_blk_ctrl_by_name(root, "nvme7n1", &c) == 0 && c.mpath_head &&
	      c.mpath_paths == 2 && !strcmp(c.pci.bdf, "0000:06:00.0"),
	      "multipath head nvme7n1: %d paths, lowest nvme1 at '%s'",
	      c.mpath_paths, c.pci.bdf);
	CHECK(dbr_blk_ctrl_by_name(root, "nvme1c1n1", &c) == 0 &&
	      !c.mpath_head && !strcmp(c.pci.bdf, "0000:06:00.0"),
	      "path node nvme1c1n1: controller '%s'", c.pci.bdf);
	CHECK(dbr_blk_ctrl_by_name(root, "loop0", &c) == 0 && !c.pci.bdf[0] &&
	      c.pci.numa == -1, "loop0 has no PCI controller ('%s')",
	      c.pci.bdf);
	CHECK(dbr_blk_ctrl_by_name(root, "nvme9n1", &c) == -ENOENT,
	      "a disk that does not exist: -ENOENT");
	CHECK(dbr_blk_ctrl_by_name(root, "../nvme0n1", &c) == -EINVAL,
	      "a name with a '/': -EINVAL");
	CHECK(dbr_blk_ctrl_by_devt(root, 8, 0, &c) == -ENOENT,
	      "a dev_t sysfs does not list: -ENOENT");
}

static void test_pci(void)
{
	struct dbr_pci_fn fn;
	char bdf[DBR_BDF_LEN];

	CHECK(dbr_pci_fn_get(root, "00000000:81:00.0", &fn) == 0 &&
	      !strcmp(fn.bdf, "0000:81:00.0") && fn.numa == 1 &&
	      strstr(fn.sys, "/pci0000:80/"),
	      "runtime spelling 00000000:81:00.0 -> %s node %d", fn.bdf,
	      fn.numa);
	CHECK(dbr_bdf_normalize("0000:3B:00.0", bdf, sizeof(bdf)) == 0 &&
	      !strcmp(bdf, "0000:3b:00.0"), "upper case hex: %s", bdf);
	CHECK(dbr_pci_fn_get(root, "0000:99:00.0", &fn) == -ENOENT &&
	      fn.numa == -1, "a function sysfs does not have: -ENOENT");
	CHECK(dbr_pci_fn_get(root, "gpu0", &fn) == -EINVAL,
	      "not a PCI address: -EINVAL");
	CHECK(dbr_bdf_normalize("0000:00:00.0x", bdf, sizeof(bdf)) == -EINVAL,
	      "trailing junk: -EINVAL");
}

static enum dbr_dist dist(const char *disk_name, const char *gpu)
{
	struct dbr_blk_ctrl c;
	struct dbr_pci_fn fn;

	if (dbr_blk_ctrl_by_name(root, disk_name, &c) ||
	    dbr_pci_fn_get(root, gpu, &fn))
		return (enum dbr_dist)-1;
	return dbr_dist_of(&c.pci, &fn);
}

static void dist_is(const char *disk_name, const char *gpu, enum dbr_dist want)
{
	enum dbr_dist got = dist(disk_name, gpu);

	CHECK(got == want, "%s - GPU %s: %s (got %s)", disk_name, gpu,
	      dbr_dist_name(want), got <= DBR_DIST_UNKNOWN ?
	      dbr_dist_name(got) : "lookup failed");
}

static void test_distance(void)
{
	dist_is("nvme0n1p1", "0000:04:00.0", DBR_DIST_SWITCH);
	dist_is("nvme1c1n1", "0000:06:00.1", DBR_DIST_ROOT_PORT);
	dist_is("nvme0n1", "0000:05:00.0", DBR_DIST_HOST_BRIDGE);
	dist_is("nvme0n1", "0000:41:00.0", DBR_DIST_NUMA);
	dist_is("nvme0n1", "0000:81:00.0", DBR_DIST_OTHER);
	/* cross-socket: the drive on node 1 is near GPU E, far from A */
	dist_is("nvme2n1", "0000:81:00.0", DBR_DIST_HOST_BRIDGE);
	dist_is("nvme2n1", "0000:04:00.0", DBR_DIST_OTHER);
	dist_is("nvme7n1", "0000:06:00.1", DBR_DIST_ROOT_PORT);
	dist_is("loop0", "0000:04:00.0", DBR_DIST_UNKNOWN);
}

static void test_pick(void)
{
	enum dbr_dist d[] = { DBR_DIST_OTHER, DBR_DIST_HOST_BRIDGE,
			      DBR_DIST_SWITCH, DBR_DIST_NUMA };
	enum dbr_dist tie[] = { DBR_DIST_NUMA, DBR_DIST_SWITCH, DBR_DIST_OTHER,
				DBR_DIST_SWITCH };
	enum dbr_dist none[] = { DBR_DIST_UNKNOWN, DBR_DIST_UNKNOWN,
				 DBR_DIST_UNKNOWN };
	unsigned int i;

	for (i = 0; i < 3; i++)
		CHECK(dbr_dist_pick(d, 4, i) == 2,
		      "thread %u takes the one same-switch GPU", i);
	CHECK(dbr_dist_pick(tie, 4, 0) == 1 && dbr_dist_pick(tie, 4, 1) == 3 &&
	      dbr_dist_pick(tie, 4, 2) == 1 && dbr_dist_pick(tie, 4, 3) == 3,
	      "two same-switch GPUs: threads alternate between 1 and 3");
	CHECK(dbr_dist_pick(none, 3, 4) == 1,
	      "nothing known: round-robin (thread 4 of 3 devices -> 1)");
	CHECK(dbr_dist_pick(d, 0, 0) == -EINVAL, "no devices: -EINVAL");
}

static void fn_of(const char *disk_name, struct dbr_pci_fn *fn)
{
	struct dbr_blk_ctrl c;

	if (dbr_blk_ctrl_by_name(root, disk_name, &c) == 0)
		*fn = c.pci;
	else
		memset(fn, 0, sizeof(*fn));
}

static void test_gpu_pick(void)
{
	static const char *const addr[] = {
		"0000:81:00.0", "0000:05:00.0", "0000:04:00.0", "0000:41:00.0",
	};
	struct dbr_pci_fn gpus[4], ctrls[2];
	enum dbr_dist d = DBR_DIST_UNKNOWN;
	int i, dev;

	for (i = 0; i < 4; i++)
		dbr_pci_fn_get(root, addr[i], &gpus[i]);
	fn_of("nvme0n1p1", &ctrls[0]);
	fn_of("nvme1c1n1", &ctrls[1]);
	dev = dbr_gpu_pick(gpus, 4, ctrls, 1, 5, &d);
	CHECK(dev == 2 && d == DBR_DIST_SWITCH,
	      "nvme0n1p1: GPU 2 below its switch (got %d, %s)", dev,
	      dbr_dist_name(d));
	/* both controllers: A is same-switch to one, same-host-bridge to the
	 * other, B same-host-bridge to both: a tie, spread by thread */
	CHECK(dbr_gpu_pick(gpus, 4, ctrls, 2, 0, &d) == 1 &&
	      d == DBR_DIST_HOST_BRIDGE &&
	      dbr_gpu_pick(gpus, 4, ctrls, 2, 1, &d) == 2,
	      "two controllers: the farthest counts, threads 0/1 take GPUs 1/2");
	CHECK(dbr_gpu_pick(gpus, 4, ctrls, 0, 6, &d) == 2 &&
	      d == DBR_DIST_UNKNOWN, "no controller: round-robin (6 mod 4)");
	memset(gpus, 0, sizeof(gpus));
	CHECK(dbr_gpu_pick(gpus, 4, ctrls, 1, 3, &d) == 3 &&
	      d == DBR_DIST_UNKNOWN, "no GPU PCI paths: round-robin");
}

/* a regular file reaches the controller of its filesystem's disk */
static void test_file(void)
{
	char path[PATH_MAX], rel[64];
	struct dbr_blk_ctrl c;
	struct stat st;
	bool via_fs = false;
	int ret;

	snprintf(path, sizeof(path), "%s/sys", root);
	if (stat(path, &st) < 0)
		return;
	snprintf(rel, sizeof(rel), "dev/block/%u:%u", major(st.st_dev),
		 minor(st.st_dev));
	link_to(rel, NVME0 "/nvme/nvme0/nvme0n1/nvme0n1p1");
	ret = dbr_blk_ctrl_of_file(root, path, &c, &via_fs);
	CHECK(ret == 0 && via_fs && !strcmp(c.pci.bdf, "0000:03:00.0"),
	      "a directory on %s: via its filesystem, controller '%s' (%d)",
	      rel, c.pci.bdf, ret);
	snprintf(path, sizeof(path), "%s/not-yet-created", root);
	CHECK(dbr_blk_ctrl_of_file(root, path, &c, &via_fs) == 0 && via_fs &&
	      !strcmp(c.pci.bdf, "0000:03:00.0"),
	      "a file fio has not created yet: its directory's filesystem");
	CHECK(dbr_blk_ctrl_of_file(root, "/dev/null", &c, &via_fs) == -ENODEV,
	      "a character device: -ENODEV");
	CHECK(dbr_blk_ctrl_of_file(root, "/nonexistent/dir/f", &c,
				   &via_fs) == -ENOENT,
	      "a directory that does not exist: -ENOENT");
}

static void test_cpus(bool numa)
{
	char buf[64];

	if (numa) {
		CHECK(dbr_numa_cpulist(root, 1, buf, sizeof(buf)) == 0 &&
		      !strcmp(buf, "4-7"), "node 1 cpus: '%s'", buf);
	} else {
		CHECK(dbr_numa_cpulist(root, 0, buf, sizeof(buf)) == -ENOENT,
		      "no node directories: -ENOENT");
	}
	CHECK(dbr_numa_cpulist(root, -1, buf, sizeof(buf)) == -ENOENT,
	      "node -1: -ENOENT");
}

static void test_no_numa(void)
{
	ctrl_is("nvme0n1", "0000:03:00.0", -1);
	dist_is("nvme0n1", "0000:04:00.0", DBR_DIST_SWITCH);
	/* without nodes, another host bridge may be another socket */
	dist_is("nvme0n1", "0000:41:00.0", DBR_DIST_OTHER);
	dist_is("nvme0n1", "0000:81:00.0", DBR_DIST_OTHER);
	test_cpus(false);
}

static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st; (void)flag; (void)ftw;
	return remove(path);
}

static void with_tree(bool numa)
{
	snprintf(root, sizeof(root), "%s/dbr-topo.XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(root)) {
		perror("mkdtemp");
		exit(99);
	}
	build_tree(numa);
	if (numa) {
		test_block();
		test_pci();
		test_distance();
		test_cpus(true);
		test_gpu_pick();
		test_file();
	} else {
		test_no_numa();
	}
	nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

int main(void)
{
	with_tree(true);
	with_tree(false);
	test_pick();
	return check_done("test_topo_fixtures");
}
