// SPDX-License-Identifier: MIT
/*
 * The PCIe path between a block device's controller and a GPU, read from
 * sysfs (see topology.h). Moved here from dmabuf-doctor so that the engine
 * and the doctor read the tree the same way.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "topology.h"

#define DBR_MAX_DEPTH	16

const char *dbr_sysfs_root(void)
{
	const char *root = getenv("DBR_SYSFS_ROOT");

	return root ? root : "";
}

int dbr_sys_read_str(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	while (n > 0 && isspace((unsigned char)buf[n - 1]))
		buf[--n] = '\0';
	return 0;
}

int dbr_sys_read_long(const char *path, long *val)
{
	char buf[32], *end;
	int ret = dbr_sys_read_str(path, buf, sizeof(buf));

	if (ret < 0)
		return ret;
	errno = 0;
	*val = strtol(buf, &end, 10);
	if (errno || end == buf)
		return -EINVAL;
	return 0;
}

/* ---- PCI functions ------------------------------------------------------ */

/* "00000000:3B:00.0" (as runtimes write it) -> "0000:3b:00.0" (as sysfs) */
int dbr_bdf_normalize(const char *in, char *bdf, size_t len)
{
	unsigned int dom, bus, slot, fn;
	int used = 0;

	/* the function is one digit: "0x" would pass for a hex number */
	if (sscanf(in, "%x:%x:%x.%x%n", &dom, &bus, &slot, &fn, &used) != 4 ||
	    in[used] || in[used - 2] != '.' || dom > 0xffff || bus > 0xff ||
	    slot > 0x1f || fn > 7)
		return -EINVAL;
	snprintf(bdf, len, "%04x:%02x:%02x.%x", dom, bus, slot, fn);
	return 0;
}

/* "0000:3b:00.0" and nothing else */
static bool is_bdf(const char *s, size_t n)
{
	static const char pat[] = "xxxx:xx:xx.x";
	size_t i;

	if (n != sizeof(pat) - 1)
		return false;
	for (i = 0; i < n; i++) {
		if (pat[i] == 'x' ? !isxdigit((unsigned char)s[i]) :
				    s[i] != pat[i])
			return false;
	}
	return true;
}

/* The last BDF component of a resolved path, or NULL. */
static const char *last_bdf(const char *real)
{
	const char *p, *found = NULL;

	for (p = real; p && *p; p = strchr(p, '/')) {
		const char *c = *p == '/' ? p + 1 : p;
		const char *end = strchrnul(c, '/');

		if (is_bdf(c, (size_t)(end - c)))
			found = c;
		p = end;
	}
	return found;
}

/* The PCI function a sysfs device sits below: the last BDF on its path. */
int dbr_bdf_of_path(const char *syspath, char *bdf, size_t len)
{
	char real[PATH_MAX];
	const char *found;

	if (!realpath(syspath, real))
		return -errno;
	found = last_bdf(real);
	if (!found || len <= 12)
		return -ENODEV;
	snprintf(bdf, len, "%.12s", found);
	return 0;
}

int dbr_pci_sys_path(const char *root, const char *bdf, char *buf,
		     size_t len)
{
	char path[PATH_MAX], real[PATH_MAX];

	snprintf(path, sizeof(path), "%s/sys/bus/pci/devices/%s", root, bdf);
	if (!realpath(path, real))
		return -errno;
	if (strlen(real) >= len)
		return -ENAMETOOLONG;
	strcpy(buf, real);
	return 0;
}

/* -1 where sysfs has no node (one-node machines, VMs) */
static int numa_of_sys(const char *sys)
{
	char path[PATH_MAX + 16];
	long node;

	snprintf(path, sizeof(path), "%s/numa_node", sys);
	if (dbr_sys_read_long(path, &node) < 0 || node < 0)
		return -1;
	return (int)node;
}

int dbr_pci_numa(const char *root, const char *bdf)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/sys/bus/pci/devices/%s", root, bdf);
	return numa_of_sys(path);
}

/* A PCI function by address in any spelling a runtime uses. */
int dbr_pci_fn_get(const char *root, const char *addr, struct dbr_pci_fn *fn)
{
	int ret = dbr_bdf_normalize(addr, fn->bdf, sizeof(fn->bdf));

	fn->sys[0] = '\0';
	fn->numa = -1;
	if (ret < 0)
		return ret;
	ret = dbr_pci_sys_path(root, fn->bdf, fn->sys, sizeof(fn->sys));
	if (ret < 0)
		return ret;
	fn->numa = numa_of_sys(fn->sys);
	return 0;
}

/* ---- block devices ------------------------------------------------------ */

static void to_parent(char *path)
{
	char *slash = strrchr(path, '/');

	if (slash && slash != path)
		*slash = '\0';
}

static bool has_file(const char *dir, const char *name)
{
	char path[PATH_MAX + 64];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return access(path, F_OK) == 0;
}

/* "nvme3": a controller's name, as a subsystem lists it */
static int ctrl_number(const char *name)
{
	unsigned int n;
	int used = 0;

	if (sscanf(name, "nvme%u%n", &n, &used) != 1 || name[used] ||
	    n > INT_MAX)
		return -1;
	return (int)n;
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/* The PCI function a controller's sysfs directory sits below: "" if none. */
static void ctrl_pci_fn(const char *ctrl, struct dbr_pci_fn *fn)
{
	const char *bdf = last_bdf(ctrl);
	size_t n;

	fn->bdf[0] = fn->sys[0] = '\0';
	fn->numa = -1;
	if (!bdf)
		return;
	snprintf(fn->bdf, sizeof(fn->bdf), "%.12s", bdf);
	n = (size_t)(bdf - ctrl) + 12;
	snprintf(fn->sys, sizeof(fn->sys), "%.*s", (int)n, ctrl);
	fn->numa = numa_of_sys(fn->sys);
}

/*
 * A multipath head node is a child of its nvme-subsystem, which lists the
 * controllers (paths) it spans: every one into c->path[], lowest numbered
 * first; c->ctrl is the lowest numbered on PCI (else the lowest).
 */
static int mpath_ctrl(const char *disk_dir, struct dbr_blk_ctrl *c)
{
	char subsys[PATH_MAX], path[PATH_MAX + 64], real[PATH_MAX];
	int nums[64], nr = 0, i, k = 0;
	struct dirent *de;
	DIR *d;

	snprintf(subsys, sizeof(subsys), "%s", disk_dir);
	to_parent(subsys);
	d = opendir(subsys);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		int n = ctrl_number(de->d_name);

		if (n < 0)
			continue;
		c->mpath_paths++;
		if (nr < (int)(sizeof(nums) / sizeof(nums[0])))
			nums[nr++] = n;
	}
	closedir(d);
	qsort(nums, (size_t)nr, sizeof(nums[0]), cmp_int);
	for (i = 0; i < nr && c->nr_paths < DBR_MAX_PATHS; i++) {
		struct dbr_blk_path *p = &c->path[c->nr_paths];

		snprintf(path, sizeof(path), "%s/nvme%d", subsys, nums[i]);
		if (!realpath(path, real))
			continue;
		snprintf(p->name, sizeof(p->name), "nvme%d", nums[i]);
		ctrl_pci_fn(real, &p->pci);
		c->nr_paths++;
	}
	if (!c->nr_paths)
		return -ENODEV;
	while (k < c->nr_paths - 1 && !c->path[k].pci.sys[0])
		k++;
	if (!c->path[k].pci.sys[0])
		k = 0;
	snprintf(path, sizeof(path), "%s/%s", subsys, c->path[k].name);
	return realpath(path, c->ctrl) ? 0 : -errno;
}

/* The controller: the disk's device link, else the disk's parent. */
static int direct_ctrl(const char *disk_dir, struct dbr_blk_ctrl *c)
{
	char path[PATH_MAX + 16];

	snprintf(path, sizeof(path), "%s/device", disk_dir);
	if (realpath(path, c->ctrl))
		return 0;
	snprintf(c->ctrl, sizeof(c->ctrl), "%s", disk_dir);
	to_parent(c->ctrl);
	return 0;
}

/*
 * From a block device's sysfs directory (any of /sys/dev/block/M:m,
 * /sys/class/block/NAME or what they resolve to) to its controller.
 */
int dbr_blk_ctrl_of_sys(const char *sysblk, struct dbr_blk_ctrl *c)
{
	char disk[PATH_MAX];
	int ret;

	memset(c, 0, sizeof(*c));
	c->pci.numa = -1;
	if (!realpath(sysblk, disk))
		return -errno;
	c->partition = has_file(disk, "partition");
	if (c->partition)
		to_parent(disk);
	snprintf(c->disk, sizeof(c->disk), "%s", strrchr(disk, '/') + 1);
	c->mpath_head = strstr(disk, "/nvme-subsystem/") != NULL;
	ret = c->mpath_head ? mpath_ctrl(disk, c) : direct_ctrl(disk, c);
	if (ret < 0)
		return ret;
	ctrl_pci_fn(c->ctrl, &c->pci);
	return 0;
}

int dbr_blk_ctrl_by_name(const char *root, const char *name,
			 struct dbr_blk_ctrl *c)
{
	char path[PATH_MAX];

	if (!*name || strchr(name, '/'))
		return -EINVAL;
	snprintf(path, sizeof(path), "%s/sys/class/block/%s", root, name);
	return dbr_blk_ctrl_of_sys(path, c);
}

int dbr_blk_ctrl_by_devt(const char *root, unsigned int major,
			 unsigned int minor, struct dbr_blk_ctrl *c)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/sys/dev/block/%u:%u", root, major,
		 minor);
	return dbr_blk_ctrl_of_sys(path, c);
}

/*
 * The controller a file's I/O reaches: a block device's own; for a regular
 * file (or one not created yet: its directory) the disk of its filesystem,
 * *via_fs set. -ENODEV where that is no block device sysfs lists (tmpfs,
 * overlay...).
 */
int dbr_blk_ctrl_of_file(const char *root, const char *path,
			 struct dbr_blk_ctrl *c, bool *via_fs)
{
	char dir[PATH_MAX];
	struct stat st;
	dev_t dev;
	int ret;

	snprintf(dir, sizeof(dir), "%s", path);
	if (stat(path, &st) < 0) {
		if (errno != ENOENT)
			return -errno;
		if (strrchr(dir, '/'))
			to_parent(dir);
		else
			snprintf(dir, sizeof(dir), ".");
		if (stat(dir, &st) < 0)
			return -errno;
	}
	*via_fs = !S_ISBLK(st.st_mode);
	if (!*via_fs)
		dev = st.st_rdev;
	else if (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode))
		dev = st.st_dev;
	else
		return -ENODEV;
	ret = dbr_blk_ctrl_by_devt(root, major(dev), minor(dev), c);
	return ret == -ENOENT ? -ENODEV : ret;
}

/* ---- topology ----------------------------------------------------------- */

/*
 * Split .../devices/pci0000:00/0000:00:01.0/.../0000:05:00.0 into its
 * components from the host bridge down; returns the count.
 */
static int split_pci_path(const char *path, char comp[][24], int max)
{
	const char *p = strstr(path, "/devices/pci");
	int n = 0;

	if (p)
		p += strlen("/devices");
	while (p && *p == '/' && n < max) {
		const char *c = p + 1, *end = strchrnul(c, '/');
		size_t len = (size_t)(end - c);

		if (!len || len >= sizeof(comp[0]))
			break;
		memcpy(comp[n], c, len);
		comp[n++][len] = '\0';
		p = end;
	}
	return n;
}

/*
 * Where two PCI functions meet, from their /sys/devices paths: the deepest
 * common ancestor is the host bridge (component 0), a root port (1) or a
 * switch port (2 and deeper). via gets that ancestor's name.
 */
enum dbr_dist dbr_dist_classify(const char *a, const char *b, int numa_a,
				int numa_b, char *via, size_t len)
{
	char ca[DBR_MAX_DEPTH][24], cb[DBR_MAX_DEPTH][24];
	int na = split_pci_path(a, ca, DBR_MAX_DEPTH);
	int nb = split_pci_path(b, cb, DBR_MAX_DEPTH);
	int k = 0;

	via[0] = '\0';
	if (na < 2 || nb < 2)
		return DBR_DIST_UNKNOWN;
	/* ancestors only: the last component is the function itself */
	while (k < na - 1 && k < nb - 1 && !strcmp(ca[k], cb[k]))
		k++;
	if (k == 0)
		return numa_a >= 0 && numa_a == numa_b ? DBR_DIST_NUMA :
							 DBR_DIST_OTHER;
	snprintf(via, len, "%s", ca[k - 1]);
	if (k == 1)
		return DBR_DIST_HOST_BRIDGE;
	return k == 2 ? DBR_DIST_ROOT_PORT : DBR_DIST_SWITCH;
}

const char *dbr_dist_name(enum dbr_dist d)
{
	static const char *const names[] = {
		[DBR_DIST_SWITCH] = "same-switch",
		[DBR_DIST_ROOT_PORT] = "same-root-port",
		[DBR_DIST_HOST_BRIDGE] = "same-host-bridge",
		[DBR_DIST_NUMA] = "same-numa-node",
		[DBR_DIST_OTHER] = "other",
		[DBR_DIST_UNKNOWN] = "unknown",
	};

	return names[d];
}

/* How far apart two PCI functions are, as gpu_dev_ids=auto ranks them. */
enum dbr_dist dbr_dist_of(const struct dbr_pci_fn *a,
			  const struct dbr_pci_fn *b)
{
	char via[DBR_BDF_LEN];

	if (!a->sys[0] || !b->sys[0])
		return DBR_DIST_UNKNOWN;
	return dbr_dist_classify(a->sys, b->sys, a->numa, b->numa, via,
				 sizeof(via));
}

/*
 * How far a GPU is from a block device: from a multipath head node, the
 * nearest of its paths (*path gets its index; -1 for one controller).
 * That is the path the I/O takes as far as the kernel decides it: with
 * nvme_core's default "numa" iopolicy the head sends each I/O down the
 * optimized path whose controller is nearest the submitting CPU's NUMA
 * node, and gpu_cpus=auto runs the thread on its GPU's node. Two paths on
 * one node tie for the kernel, though, and the round-robin and queue-depth
 * policies use every path, so this is the best case of what the GPU's I/O
 * crosses.
 */
enum dbr_dist dbr_dist_to_blk(const struct dbr_pci_fn *gpu,
			      const struct dbr_blk_ctrl *c, int *path)
{
	enum dbr_dist best = DBR_DIST_UNKNOWN, d;
	int i;

	*path = -1;
	if (!c->nr_paths)
		return dbr_dist_of(gpu, &c->pci);
	for (i = 0; i < c->nr_paths; i++) {
		d = dbr_dist_of(gpu, &c->path[i].pci);
		if (*path < 0 || d < best) {
			best = d;
			*path = i;
		}
	}
	return best;
}

/*
 * One more of a thread's block devices into dist, its distance to each GPU:
 * a GPU counts at the farthest of the thread's devices. Start from
 * DBR_DIST_SWITCH (the closest); a thread with no device is all unknown.
 */
void dbr_gpu_dists_add(const struct dbr_pci_fn *gpus, int nr_gpus,
		       const struct dbr_blk_ctrl *c, enum dbr_dist *dist)
{
	enum dbr_dist d;
	int g, path;

	for (g = 0; g < nr_gpus; g++) {
		d = dbr_dist_to_blk(&gpus[g], c, &path);
		if (d > dist[g])
			dist[g] = d;
	}
}

/* How many GPUs share the closest class in dist. */
int dbr_dist_ties(const enum dbr_dist *dist, int nr_gpus)
{
	enum dbr_dist best = DBR_DIST_UNKNOWN;
	int g, ties = 0;

	for (g = 0; g < nr_gpus; g++)
		if (dist[g] < best)
			best = dist[g];
	for (g = 0; g < nr_gpus; g++)
		ties += dist[g] == best;
	return ties;
}

/*
 * gpu_dev_ids=auto for the threads of a run, in fio's thread order: each
 * goes to the closest GPU for its own files; among GPUs equally close, to
 * the one with the fewest threads so far (the lowest index on equal
 * counts). A thread with stonewall starts once every thread before it has
 * ended, so it starts the counts afresh. dev[i] gets thread i's device, -1
 * where want[i].dist is NULL. The same input gives the same answer in
 * every thread, whatever order they start in. -EINVAL for no GPUs.
 */
int dbr_gpu_assign(const struct dbr_gpu_want *want, int nr, int nr_gpus,
		   int *dev)
{
	unsigned int load[DBR_TOPO_MAX_GPUS];
	int i, g;

	if (nr_gpus <= 0 || nr_gpus > DBR_TOPO_MAX_GPUS)
		return -EINVAL;
	memset(load, 0, sizeof(load));
	for (i = 0; i < nr; i++) {
		const enum dbr_dist *d = want[i].dist;
		int best = 0;

		if (want[i].stonewall)
			memset(load, 0, sizeof(load));
		dev[i] = -1;
		if (!d)
			continue;
		for (g = 1; g < nr_gpus; g++)
			if (d[g] < d[best] ||
			    (d[g] == d[best] && load[g] < load[best]))
				best = g;
		dev[i] = best;
		load[best]++;
	}
	return 0;
}

/* The CPUs of a NUMA node, as sysfs lists them ("0-15,32-47"). */
int dbr_numa_cpulist(const char *root, int node, char *buf, size_t len)
{
	char path[PATH_MAX];
	int ret;

	if (node < 0)
		return -ENOENT;
	snprintf(path, sizeof(path), "%s/sys/devices/system/node/node%d/cpulist",
		 root, node);
	ret = dbr_sys_read_str(path, buf, len);
	if (!ret && !buf[0])
		return -ENOENT;
	return ret;
}
