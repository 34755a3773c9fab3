// SPDX-License-Identifier: MIT
/*
 * The IOMMU policy for p2p (see iommu.h): read each controller's group and
 * its type from sysfs, decide once for the engine and dmabuf-doctor alike.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "iommu.h"

const char *dbr_iommu_mode_name(enum dbr_iommu_mode m)
{
	static const char *const names[] = {
		[DBR_IOMMU_OFF] = "not translated",
		[DBR_IOMMU_IDENTITY] = "identity",
		[DBR_IOMMU_TRANSLATED] = "translated",
		[DBR_IOMMU_NO_GROUP] = "group not found",
	};

	return names[m];
}

/* entries of <root>/sys/kernel/iommu_groups: 0 without an IOMMU */
static int count_groups(const char *root)
{
	char path[PATH_MAX];
	struct dirent *de;
	int n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "%s/sys/kernel/iommu_groups", root);
	d = opendir(path);
	if (!d)
		return 0;
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

/* fn's group (its iommu_group link's name) and that group's type */
static void read_group(const struct dbr_pci_fn *fn, bool head, int nr_groups,
		       struct dbr_iommu_ctrl *c)
{
	char path[PATH_MAX + 32], link[PATH_MAX], *base;
	ssize_t n = -1;

	snprintf(c->bdf, sizeof(c->bdf), "%s", fn->bdf);
	c->group = -1;
	c->type[0] = '\0';
	if (fn->sys[0]) {
		snprintf(path, sizeof(path), "%s/iommu_group", fn->sys);
		n = readlink(path, link, sizeof(link) - 1);
	}
	if (n < 0) {
		c->mode = head && nr_groups > 0 ? DBR_IOMMU_NO_GROUP :
						  DBR_IOMMU_OFF;
		return;
	}
	link[n] = '\0';
	base = strrchr(link, '/');
	c->group = atoi(base ? base + 1 : link);
	snprintf(path, sizeof(path), "%s/iommu_group/type", fn->sys);
	dbr_sys_read_str(path, c->type, sizeof(c->type));
	c->mode = !strcmp(c->type, "identity") ? DBR_IOMMU_IDENTITY :
						 DBR_IOMMU_TRANSLATED;
}

int dbr_iommu_of_ctrl(const char *root, const struct dbr_blk_ctrl *bc,
		      struct dbr_iommu *io)
{
	int i;

	memset(io, 0, sizeof(*io));
	io->worst = -1;
	io->nr_groups = count_groups(root);
	io->mpath_head = bc->mpath_head;
	if (!bc->mpath_head) {
		read_group(&bc->pci, false, io->nr_groups, &io->c[0]);
		io->nr = 1;
	}
	/* a head whose paths sysfs does not list: no group can be found */
	if (bc->mpath_head && !bc->nr_paths && io->nr_groups > 0) {
		io->c[0].group = -1;
		io->c[0].mode = DBR_IOMMU_NO_GROUP;
		io->nr = 1;
	}
	for (i = 0; bc->mpath_head && i < bc->nr_paths; i++) {
		snprintf(io->c[i].name, sizeof(io->c[i].name), "%s",
			 bc->path[i].name);
		read_group(&bc->path[i].pci, true, io->nr_groups, &io->c[i]);
		io->nr++;
	}
	for (i = 0; i < io->nr; i++)
		if (io->worst < 0 || io->c[i].mode > io->c[io->worst].mode)
			io->worst = i;
	return 0;
}

enum dbr_iommu_mode dbr_iommu_mode(const struct dbr_iommu *io)
{
	return io->worst < 0 ? DBR_IOMMU_OFF : io->c[io->worst].mode;
}

/* "nvme0n1's controller 0000:01:00.0", "nvme7n1's path nvme2 (0000:82:00.0)" */
static void ctrl_name(const struct dbr_iommu *io, const char *disk, char *buf,
		      size_t len)
{
	const struct dbr_iommu_ctrl *c = &io->c[io->worst];

	if (io->mpath_head && !c->name[0])
		snprintf(buf, len, "%s's controller (sysfs lists no path of the head)",
			 disk);
	else if (io->mpath_head)
		snprintf(buf, len, "%s's path %s (%s)", disk, c->name,
			 c->bdf[0] ? c->bdf : "not on PCI");
	else
		snprintf(buf, len, "%s's controller %s", disk,
			 c->bdf[0] ? c->bdf : "(not on PCI)");
}

int dbr_iommu_verdict(const struct dbr_iommu *io, const char *disk,
		      const char *exporter, bool phys,
		      enum dbr_p2p_iommu policy, char *why, size_t len)
{
	enum dbr_iommu_mode m = dbr_iommu_mode(io);
	const struct dbr_iommu_ctrl *c;
	char who[96];

	why[0] = '\0';
	if (!phys || m == DBR_IOMMU_OFF || m == DBR_IOMMU_IDENTITY)
		return 0;
	c = &io->c[io->worst];
	ctrl_name(io, disk, who, sizeof(who));
	if (m == DBR_IOMMU_NO_GROUP) {
		snprintf(why, len, "%s is in no IOMMU group while this machine has %d, and a native-multipath head's group must be found to map a %s dma-buf's physical addresses (the kernel answers ENODEV); use a path's own namespace (boot with nvme_core.multipath=N), or intel_iommu=off / amd_iommu=off",
			 who, io->nr_groups, exporter);
		return -ENODEV;
	}
	if (policy == DBR_P2P_IOMMU_ALLOW)
		return 0;
	snprintf(why, len, "%s is in IOMMU group %d of type %s, which translates its DMA, and a %s dma-buf carries physical addresses that DMA would miss (data silently lost); boot with iommu=pt (or intel_iommu=off / amd_iommu=off), or load the IOVA == physical mapping modules (dmabuf-import, iommu-map-pa) and set p2p_iommu=allow",
		 who, c->group, c->type[0] ? c->type : "unknown", exporter);
	return -EOPNOTSUPP;
}

int dbr_iommu_check_file(const char *root, const char *path,
			 const char *exporter, bool phys,
			 enum dbr_p2p_iommu policy, char *why, size_t len)
{
	struct dbr_blk_ctrl *c;
	struct dbr_iommu *io;
	bool via_fs = false;
	int ret = -ENOMEM;

	why[0] = '\0';
	if (!phys)
		return 0;
	c = malloc(sizeof(*c));
	io = malloc(sizeof(*io));
	if (!c || !io)
		goto out;
	/*
	 * Not a block device sysfs knows: nothing to judge (other checks
	 * say), unless it is a multipath head whose paths are not listed.
	 */
	ret = dbr_blk_ctrl_of_file(root, path, c, &via_fs);
	if (ret == -ENODEV && !via_fs && c->mpath_head)
		ret = 0;
	if (ret < 0 || via_fs) {
		ret = 0;
		goto out;
	}
	dbr_iommu_of_ctrl(root, c, io);
	ret = dbr_iommu_verdict(io, c->disk, exporter, phys, policy, why, len);
out:
	free(io);
	free(c);
	return ret;
}
