// SPDX-License-Identifier: MIT
/*
 * engine/core/topology.c against sysfs trees built in a temp dir: a two-socket
 * machine with a PCIe switch, NVMe namespaces (partition, multipath heads,
 * path node), GPUs at every distance; then the same tree without NUMA
 * information. And gpu_dev_ids=auto's run-wide assignment.
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
#include "sysfs_fixture.h"
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
/* nvme8n1: a multipath namespace with a path below each of two root ports
 * of host bridge 0, each behind a switch with a GPU of its own */
#define RP4_SW	HB0 "/0000:00:04.0/0000:08:00.0"
#define NVME3	RP4_SW "/0000:09:00.0/0000:0a:00.0"
#define GPU_F	RP4_SW "/0000:09:01.0/0000:0b:00.0"	/* near nvme3 */
#define RP5_SW	HB0 "/0000:00:05.0/0000:0c:00.0"
#define NVME4	RP5_SW "/0000:0d:00.0/0000:0e:00.0"
#define GPU_G	RP5_SW "/0000:0d:01.0/0000:0f:00.0"	/* near nvme4 */
#define SUBSYS8	"devices/virtual/nvme-subsystem/nvme-subsys8"

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
	pci_fn(NVME3, "0000:0a:00.0", numa ? "0" : "-1");
	pci_fn(GPU_F, "0000:0b:00.0", numa ? "0" : "-1");
	pci_fn(NVME4, "0000:0e:00.0", numa ? "0" : "-1");
	pci_fn(GPU_G, "0000:0f:00.0", numa ? "0" : "-1");
	put(NVME3 "/nvme/nvme3/dev", "240:3");
	put(NVME4 "/nvme/nvme4/dev", "240:4");
	put(SUBSYS8 "/nvme8n1/dev", "259:8");
	link_to("class/block/nvme8n1", SUBSYS8 "/nvme8n1");
	/* the higher numbered path listed first, as readdir may */
	link_to(SUBSYS8 "/nvme4", NVME4 "/nvme/nvme4");
	link_to(SUBSYS8 "/nvme3", NVME3 "/nvme/nvme3");
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
	CHECK(c.nr_paths == 2 && !strcmp(c.path[0].name, "nvme1") &&
	      !strcmp(c.path[0].pci.bdf, "0000:06:00.0") &&
	      !strcmp(c.path[1].name, "nvme2") &&
	      !strcmp(c.path[1].pci.bdf, "0000:82:00.0") &&
	      c.path[1].pci.numa == 1,
	      "multipath head nvme7n1: paths %s at '%s', %s at '%s'",
	      c.path[0].name, c.path[0].pci.bdf, c.path[1].name,
	      c.path[1].pci.bdf);
	CHECK(dbr_blk_ctrl_by_name(root, "nvme8n1", &c) == 0 && c.mpath_head &&
	      c.nr_paths == 2 && !strcmp(c.path[0].name, "nvme3") &&
	      !strcmp(c.path[1].name, "nvme4") &&
	      !strcmp(c.path[1].pci.bdf, "0000:0e:00.0") &&
	      !strcmp(c.pci.bdf, "0000:0a:00.0"),
	      "multipath head nvme8n1: paths in number order (%s, %s)",
	      c.path[0].name, c.path[1].name);
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

/* from a GPU to a disk (the nearest of a head node's paths: *path) */
static enum dbr_dist dist_path(const char *disk_name, const char *gpu,
			       int *path)
{
	struct dbr_blk_ctrl c;
	struct dbr_pci_fn fn;

	*path = -2;
	if (dbr_blk_ctrl_by_name(root, disk_name, &c) ||
	    dbr_pci_fn_get(root, gpu, &fn))
		return (enum dbr_dist)-1;
	return dbr_dist_to_blk(&fn, &c, path);
}

static enum dbr_dist dist(const char *disk_name, const char *gpu)
{
	int path;

	return dist_path(disk_name, gpu, &path);
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

/* a multipath namespace is as near a GPU as the nearest of its paths */
static void path_is(const char *disk_name, const char *gpu, enum dbr_dist want,
		    int want_path)
{
	int path;
	enum dbr_dist got = dist_path(disk_name, gpu, &path);

	CHECK(got == want && path == want_path,
	      "%s - GPU %s: %s through path %d (got %s through %d)", disk_name,
	      gpu, dbr_dist_name(want), want_path, got <= DBR_DIST_UNKNOWN ?
	      dbr_dist_name(got) : "lookup failed", path);
}

static void test_mpath(void)
{
	/* nvme7n1: nvme1 on node 0, nvme2 on node 1 */
	path_is("nvme7n1", "0000:06:00.1", DBR_DIST_ROOT_PORT, 0);
	path_is("nvme7n1", "0000:81:00.0", DBR_DIST_HOST_BRIDGE, 1);
	/* nvme8n1: each GPU below the switch of one path */
	path_is("nvme8n1", "0000:0b:00.0", DBR_DIST_SWITCH, 0);
	path_is("nvme8n1", "0000:0f:00.0", DBR_DIST_SWITCH, 1);
	path_is("nvme8n1", "0000:04:00.0", DBR_DIST_HOST_BRIDGE, 0);
	/* a plain namespace has no path index */
	path_is("nvme0n1", "0000:04:00.0", DBR_DIST_SWITCH, -1);
}

/* dbr_gpu_assign over threads whose distance rows are d[i] */
static void assign(const enum dbr_dist (*d)[4], const bool *stonewall, int nr,
		   int nr_gpus, int *dev)
{
	struct dbr_gpu_want w[16];
	int i;

	for (i = 0; i < nr; i++) {
		w[i].dist = d[i][0] == (enum dbr_dist)-1 ? NULL : d[i];
		w[i].stonewall = stonewall && stonewall[i];
	}
	if (dbr_gpu_assign(w, nr, nr_gpus, dev) < 0)
		for (i = 0; i < nr; i++)
			dev[i] = -9;
}

static bool devs_are(const int *dev, const int *want, int nr)
{
	return !memcmp(dev, want, (size_t)nr * sizeof(*dev));
}

#define S	DBR_DIST_SWITCH
#define H	DBR_DIST_HOST_BRIDGE
#define N	DBR_DIST_NUMA
#define O	DBR_DIST_OTHER
#define U	DBR_DIST_UNKNOWN
#define SKIP	((enum dbr_dist)-1)

static void test_assign(void)
{
	/* two job sections of two threads each, both drives equally far
	 * from GPUs 0 and 1 */
	static const enum dbr_dist even[4][4] = {
		{ H, H }, { H, H }, { H, H }, { H, H } };
	/* two sections of one thread each: per section both took GPU 0 */
	static const enum dbr_dist one_each[2][4] = { { O, O }, { O, O } };
	/* three threads per section, as before: 1,3,1 and 1,3,1 */
	static const enum dbr_dist three[6][4] = {
		{ O, S, O, S }, { O, S, O, S }, { O, S, O, S },
		{ O, S, O, S }, { O, S, O, S }, { O, S, O, S } };
	/* thread 0 near GPU 2 only; the others tie between 0 and 2 */
	static const enum dbr_dist mixed[4][4] = {
		{ O, O, S, N }, { H, N, H, O }, { H, N, H, O }, { H, N, H, O } };
	/* one GPU closer than the rest for every thread */
	static const enum dbr_dist crowd[3][4] = {
		{ N, S, N }, { N, S, N }, { O, H, N } };
	/* a thread that is not auto's (another engine, a list) in between */
	static const enum dbr_dist gap[3][4] = {
		{ N, N }, { SKIP }, { N, N } };
	static const enum dbr_dist unknown[5][4] = {
		{ U, U, U }, { U, U, U }, { U, U, U }, { U, U, U }, { U, U, U } };
	static const bool wall[6] = { false, false, false, true, false, false };
	int dev[6], again[6];

	assign(even, NULL, 4, 2, dev);
	CHECK(devs_are(dev, (int[]){ 0, 1, 0, 1 }, 4),
	      "2 sections x 2 threads, 2 GPUs tie: 0,1,0,1 (got %d,%d,%d,%d)",
	      dev[0], dev[1], dev[2], dev[3]);
	assign(one_each, NULL, 2, 2, dev);
	CHECK(devs_are(dev, (int[]){ 0, 1 }, 2),
	      "2 sections x 1 thread: GPUs 0 and 1 (got %d,%d)", dev[0], dev[1]);
	assign(three, NULL, 6, 4, dev);
	CHECK(devs_are(dev, (int[]){ 1, 3, 1, 3, 1, 3 }, 6),
	      "2 sections x 3 threads, GPUs 1 and 3 tie: 3 each (got %d,%d,%d,%d,%d,%d)",
	      dev[0], dev[1], dev[2], dev[3], dev[4], dev[5]);
	assign(three, wall, 6, 4, dev);
	CHECK(devs_are(dev, (int[]){ 1, 3, 1, 1, 3, 1 }, 6),
	      "a stonewall before the second section starts the counts afresh (got %d,%d,%d,%d,%d,%d)",
	      dev[0], dev[1], dev[2], dev[3], dev[4], dev[5]);
	assign(mixed, NULL, 4, 4, dev);
	CHECK(devs_are(dev, (int[]){ 2, 0, 0, 2 }, 4),
	      "thread 0 on its one same-switch GPU 2 counts for the tie of 0 and 2 after it (got %d,%d,%d,%d)",
	      dev[0], dev[1], dev[2], dev[3]);
	CHECK(dbr_dist_ties(mixed[0], 4) == 1 && dbr_dist_ties(mixed[1], 4) == 2,
	      "ties: one GPU at same-switch, two at same-host-bridge");
	assign(crowd, NULL, 3, 3, dev);
	CHECK(devs_are(dev, (int[]){ 1, 1, 1 }, 3),
	      "the closest GPU wins however loaded (got %d,%d,%d)", dev[0],
	      dev[1], dev[2]);
	assign(gap, NULL, 3, 2, dev);
	CHECK(devs_are(dev, (int[]){ 0, -1, 1 }, 3),
	      "a thread auto does not place: -1, and it counts for nothing (got %d,%d,%d)",
	      dev[0], dev[1], dev[2]);
	assign(unknown, NULL, 5, 3, dev);
	CHECK(devs_are(dev, (int[]){ 0, 1, 2, 0, 1 }, 5),
	      "nothing known: round-robin over the run (got %d,%d,%d,%d,%d)",
	      dev[0], dev[1], dev[2], dev[3], dev[4]);
	/* every thread works it out alone: the same rows, the same plan */
	assign(three, NULL, 6, 4, dev);
	assign(three, NULL, 6, 4, again);
	CHECK(devs_are(dev, again, 6), "the same run, the same assignment");
	CHECK(dbr_gpu_assign(NULL, 0, 0, dev) == -EINVAL, "no GPUs: -EINVAL");
	CHECK(dbr_gpu_assign(NULL, 0, DBR_TOPO_MAX_GPUS + 1, dev) == -EINVAL,
	      "more GPUs than it ranks: -EINVAL");
}

static void fn_of(const char *disk_name, struct dbr_blk_ctrl *c)
{
	if (dbr_blk_ctrl_by_name(root, disk_name, c))
		memset(c, 0, sizeof(*c));
}

/* the distance rows the engine builds from a thread's files */
static void test_gpu_dists(void)
{
	static const char *const addr[] = {
		"0000:81:00.0", "0000:05:00.0", "0000:04:00.0", "0000:41:00.0",
		"0000:0b:00.0", "0000:0f:00.0",
	};
	static struct dbr_blk_ctrl c0, c1, c8;
	struct dbr_pci_fn gpus[6];
	struct dbr_gpu_want w[4];
	enum dbr_dist d[4][6];
	int i, g, dev[4];

	for (i = 0; i < 6; i++)
		dbr_pci_fn_get(root, addr[i], &gpus[i]);
	fn_of("nvme0n1p1", &c0);
	fn_of("nvme1c1n1", &c1);
	fn_of("nvme8n1", &c8);
	for (i = 0; i < 4; i++)
		for (g = 0; g < 6; g++)
			d[i][g] = DBR_DIST_SWITCH;
	/* thread 0 on nvme0n1p1; thread 1 on it and nvme1c1n1: a GPU counts
	 * at its farthest; threads 2 and 3 on the multipath nvme8n1 */
	dbr_gpu_dists_add(gpus, 6, &c0, d[0]);
	dbr_gpu_dists_add(gpus, 6, &c0, d[1]);
	dbr_gpu_dists_add(gpus, 6, &c1, d[1]);
	dbr_gpu_dists_add(gpus, 6, &c8, d[2]);
	dbr_gpu_dists_add(gpus, 6, &c8, d[3]);
	CHECK(d[0][2] == DBR_DIST_SWITCH && d[0][1] == DBR_DIST_HOST_BRIDGE &&
	      d[0][0] == DBR_DIST_OTHER, "nvme0n1p1: GPU 2 same-switch");
	CHECK(d[1][2] == DBR_DIST_HOST_BRIDGE && d[1][1] == DBR_DIST_HOST_BRIDGE,
	      "nvme0n1p1 + nvme1c1n1: GPUs 1 and 2 at the farthest, same-host-bridge");
	CHECK(d[2][4] == DBR_DIST_SWITCH && d[2][5] == DBR_DIST_SWITCH &&
	      d[2][2] == DBR_DIST_HOST_BRIDGE,
	      "nvme8n1: GPUs 4 and 5 both same-switch, each through its own path");
	for (i = 0; i < 4; i++) {
		w[i].dist = d[i];
		w[i].stonewall = false;
	}
	CHECK(dbr_gpu_assign(w, 4, 6, dev) == 0 && dev[0] == 2 &&
	      dev[1] == 1 && dev[2] == 4 && dev[3] == 5,
	      "threads take GPUs 2, 1 (2 already has one), 4, 5 (got %d,%d,%d,%d)",
	      dev[0], dev[1], dev[2], dev[3]);
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
		test_mpath();
		test_gpu_dists();
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
	test_assign();
	return check_done("test_topo_fixtures");
}
