// SPDX-License-Identifier: MIT
/*
 * engine/core/iommu.c against sysfs trees built in a temp dir: controllers in
 * IOMMU groups of type DMA, DMA-FQ and identity, one in no group, and
 * native-multipath heads (a path without a group; a translated path); then
 * the same controllers on a machine without IOMMU groups. The verdict p2p
 * gets for GPU memory and for host memory, with p2p_iommu=refuse and allow.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "sysfs_fixture.h"
#include "dbr_config.h"
#include "iommu.h"

#define HB	"devices/pci0000:00"
#define NVME0	HB "/0000:00:01.0/0000:01:00.0"	/* DMA-FQ, group 3 */
#define NVME1	HB "/0000:00:02.0/0000:02:00.0"	/* DMA, group 4 */
#define NVME2	HB "/0000:00:03.0/0000:03:00.0"	/* identity, group 5 */
#define NVME3	HB "/0000:00:04.0/0000:04:00.0"	/* no group */
#define NVME4	HB "/0000:00:05.0/0000:05:00.0"	/* identity, group 6 */
#define NVME5	HB "/0000:00:06.0/0000:06:00.0"	/* no group */
#define NVME6	HB "/0000:00:07.0/0000:07:00.0"	/* DMA, group 7 */
#define SUBSYS7	"devices/virtual/nvme-subsystem/nvme-subsys7"
#define SUBSYS8	"devices/virtual/nvme-subsystem/nvme-subsys8"

/* a controller at dev (bdf) with namespace disk; group < 0: none */
static void ctrl(const char *dev, const char *bdf, const char *name,
		 int group, const char *type, bool groups)
{
	char rel[PATH_MAX + 64], dir[1024];

	snprintf(rel, sizeof(rel), "%s/numa_node", dev);
	put(rel, "-1");
	snprintf(rel, sizeof(rel), "bus/pci/devices/%s", bdf);
	link_to(rel, dev);
	snprintf(dir, sizeof(dir), "%s/nvme/%s", dev, name);
	snprintf(rel, sizeof(rel), "%s/dev", dir);
	put(rel, "240:0");
	if (group < 0 || !groups)
		return;
	snprintf(rel, sizeof(rel), "kernel/iommu_groups/%d/type", group);
	put(rel, type);
	snprintf(rel, sizeof(rel), "%s/iommu_group", dev);
	snprintf(dir, sizeof(dir), "kernel/iommu_groups/%d", group);
	link_to(rel, dir);
}

static void ns(const char *dev, const char *ctrl_name, const char *disk)
{
	char rel[PATH_MAX + 64], dir[2048], c[1024];

	snprintf(c, sizeof(c), "%s/nvme/%s", dev, ctrl_name);
	snprintf(dir, sizeof(dir), "%s/%s", c, disk);
	snprintf(rel, sizeof(rel), "%s/dev", dir);
	put(rel, "259:0");
	snprintf(rel, sizeof(rel), "%s/device", dir);
	link_to(rel, c);
	snprintf(rel, sizeof(rel), "class/block/%s", disk);
	link_to(rel, dir);
}

static void head(const char *subsys, const char *disk, const char *p1,
		 const char *d1, const char *p2, const char *d2)
{
	char rel[PATH_MAX], dest[PATH_MAX];

	snprintf(rel, sizeof(rel), "%s/%s/dev", subsys, disk);
	put(rel, "259:7");
	snprintf(rel, sizeof(rel), "class/block/%s", disk);
	snprintf(dest, sizeof(dest), "%s/%s", subsys, disk);
	link_to(rel, dest);
	snprintf(rel, sizeof(rel), "%s/%s", subsys, p1);
	snprintf(dest, sizeof(dest), "%s/nvme/%s", d1, p1);
	link_to(rel, dest);
	snprintf(rel, sizeof(rel), "%s/%s", subsys, p2);
	snprintf(dest, sizeof(dest), "%s/nvme/%s", d2, p2);
	link_to(rel, dest);
}

static void build_tree(bool groups)
{
	ctrl(NVME0, "0000:01:00.0", "nvme0", 3, "DMA-FQ", groups);
	ctrl(NVME1, "0000:02:00.0", "nvme1", 4, "DMA", groups);
	ctrl(NVME2, "0000:03:00.0", "nvme2", 5, "identity", groups);
	ctrl(NVME3, "0000:04:00.0", "nvme3", -1, NULL, groups);
	ctrl(NVME4, "0000:05:00.0", "nvme4", 6, "identity", groups);
	ctrl(NVME5, "0000:06:00.0", "nvme5", -1, NULL, groups);
	ctrl(NVME6, "0000:07:00.0", "nvme6", 7, "DMA", groups);
	ns(NVME0, "nvme0", "nvme0n1");
	ns(NVME1, "nvme1", "nvme1n1");
	ns(NVME2, "nvme2", "nvme2n1");
	ns(NVME3, "nvme3", "nvme3n1");
	/* nvme7n1: a head over nvme4 (identity) and nvme5 (no group) */
	head(SUBSYS7, "nvme7n1", "nvme4", NVME4, "nvme5", NVME5);
	/* nvme8n1: a head over nvme4 (identity) and nvme6 (DMA) */
	head(SUBSYS8, "nvme8n1", "nvme4", NVME4, "nvme6", NVME6);
	/* nvme9n1: a head whose subsystem lists no path at all */
	put("devices/virtual/nvme-subsystem/nvme-subsys9/nvme9n1/dev", "259:9");
	link_to("class/block/nvme9n1", "devices/virtual/nvme-subsystem/nvme-subsys9/nvme9n1");
	if (!groups)
		put("kernel/iommu_groups", NULL);
}

static int io_of(const char *disk, struct dbr_iommu *io)
{
	struct dbr_blk_ctrl c;
	int ret = dbr_blk_ctrl_by_name(root, disk, &c);

	return ret ? ret : dbr_iommu_of_ctrl(root, &c, io);
}

/* disk's verdict: errno, and why holds each of want[] (NULL-ended) */
static void verdict_is(const char *disk, bool phys, enum dbr_p2p_iommu pol,
		       int want_ret, const char *const *want)
{
	struct dbr_iommu io;
	char why[512];
	bool has = true;
	int ret, i;

	ret = io_of(disk, &io);
	if (!ret)
		ret = dbr_iommu_verdict(&io, disk, "gpu=cuda", phys, pol, why,
					sizeof(why));
	for (i = 0; want && want[i]; i++)
		has = has && strstr(why, want[i]);
	if (!want)
		has = !why[0];
	CHECK(ret == want_ret && has,
	      "%s %s p2p_iommu=%s: %d (want %d): '%s'", disk,
	      phys ? "GPU memory" : "host memory",
	      pol ? "allow" : "refuse", ret, want_ret, why);
}

static void mode_is(const char *disk, enum dbr_iommu_mode want, int group,
		    const char *type)
{
	struct dbr_iommu io;
	const struct dbr_iommu_ctrl *c;
	int ret = io_of(disk, &io);

	c = io.worst >= 0 ? &io.c[io.worst] : NULL;
	CHECK(!ret && dbr_iommu_mode(&io) == want && c && c->group == group &&
	      !strcmp(c->type, type),
	      "%s: %s, group %d type '%s' (got %d: %s, group %d type '%s')",
	      disk, dbr_iommu_mode_name(want), group, type, ret,
	      dbr_iommu_mode_name(dbr_iommu_mode(&io)), c ? c->group : -9,
	      c ? c->type : "");
}

static void test_pathless_head(bool groups);

static void test_groups(void)
{
	static const char *const fq[] = { "nvme0n1's controller 0000:01:00.0",
		"IOMMU group 3 of type DMA-FQ", "gpu=cuda", "iommu=pt",
		"dmabuf-import, iommu-map-pa", "p2p_iommu=allow", NULL };
	static const char *const strict[] = { "0000:02:00.0", "type DMA,",
		NULL };
	static const char *const lost[] = { "nvme7n1's path nvme5 (0000:06:00.0)",
		"no IOMMU group while this machine has 5", "ENODEV",
		"nvme_core.multipath=N", NULL };
	static const char *const path_dma[] = { "nvme8n1's path nvme6 (0000:07:00.0)",
		"type DMA,", NULL };
	struct dbr_iommu io;

	mode_is("nvme0n1", DBR_IOMMU_TRANSLATED, 3, "DMA-FQ");
	mode_is("nvme1n1", DBR_IOMMU_TRANSLATED, 4, "DMA");
	mode_is("nvme2n1", DBR_IOMMU_IDENTITY, 5, "identity");
	mode_is("nvme3n1", DBR_IOMMU_OFF, -1, "");
	mode_is("nvme7n1", DBR_IOMMU_NO_GROUP, -1, "");
	mode_is("nvme8n1", DBR_IOMMU_TRANSLATED, 7, "DMA");
	CHECK(!io_of("nvme8n1", &io) && io.mpath_head && io.nr == 2 &&
	      io.nr_groups == 5 && !strcmp(io.c[0].name, "nvme4") &&
	      io.c[0].mode == DBR_IOMMU_IDENTITY,
	      "nvme8n1: two paths, nvme4 identity, 5 groups (%d, %d)", io.nr,
	      io.nr_groups);

	verdict_is("nvme0n1", true, DBR_P2P_IOMMU_REFUSE, -EOPNOTSUPP, fq);
	verdict_is("nvme1n1", true, DBR_P2P_IOMMU_REFUSE, -EOPNOTSUPP, strict);
	verdict_is("nvme0n1", true, DBR_P2P_IOMMU_ALLOW, 0, NULL);
	verdict_is("nvme0n1", false, DBR_P2P_IOMMU_REFUSE, 0, NULL);
	verdict_is("nvme2n1", true, DBR_P2P_IOMMU_REFUSE, 0, NULL);
	verdict_is("nvme3n1", true, DBR_P2P_IOMMU_REFUSE, 0, NULL);
	verdict_is("nvme7n1", true, DBR_P2P_IOMMU_REFUSE, -ENODEV, lost);
	/* allow cannot help: without the group there is nothing to map into */
	verdict_is("nvme7n1", true, DBR_P2P_IOMMU_ALLOW, -ENODEV, lost);
	verdict_is("nvme7n1", false, DBR_P2P_IOMMU_REFUSE, 0, NULL);
	verdict_is("nvme8n1", true, DBR_P2P_IOMMU_REFUSE, -EOPNOTSUPP, path_dma);
	verdict_is("nvme8n1", true, DBR_P2P_IOMMU_ALLOW, 0, NULL);
	test_pathless_head(true);
}

/* a head with no listed path: found by sysfs, its group never is */
static void test_pathless_head(bool groups)
{
	struct dbr_blk_ctrl c;
	struct dbr_iommu io;
	char why[512];
	int ret;

	ret = dbr_blk_ctrl_by_name(root, "nvme9n1", &c);
	CHECK(ret == -ENODEV && c.mpath_head, "nvme9n1: a head without paths (%d)", ret);
	dbr_iommu_of_ctrl(root, &c, &io);
	ret = dbr_iommu_verdict(&io, "nvme9n1", "gpu=cuda", true,
				DBR_P2P_IOMMU_REFUSE, why, sizeof(why));
	if (groups)
		CHECK(ret == -ENODEV && strstr(why, "nvme9n1's controller (sysfs lists no path of the head) is in no IOMMU group"),
		      "a head without paths while groups exist: ENODEV: %s", why);
	else
		CHECK(ret == 0, "a head without paths, no groups: p2p (%d)", ret);
}

static void test_no_groups(void)
{
	mode_is("nvme0n1", DBR_IOMMU_OFF, -1, "");
	mode_is("nvme7n1", DBR_IOMMU_OFF, -1, "");
	verdict_is("nvme0n1", true, DBR_P2P_IOMMU_REFUSE, 0, NULL);
	verdict_is("nvme7n1", true, DBR_P2P_IOMMU_REFUSE, 0, NULL);
	test_pathless_head(false);
}

/* a regular file is judged by other checks: the IOMMU has no word */
static void test_file(void)
{
	char path[600], why[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/file", root);
	f = fopen(path, "w");
	if (f)
		fclose(f);
	CHECK(dbr_iommu_check_file(root, path, "gpu=hip", true,
				   DBR_P2P_IOMMU_REFUSE, why, sizeof(why)) == 0 &&
	      !why[0], "a regular file: no IOMMU verdict ('%s')", why);
}

/* the transfer decision carries the IOMMU's reason and errno */
static void test_blockers(void)
{
	struct dbr_p2p_facts pf = {
		.direct = true, .iommu_err = -EOPNOTSUPP,
		.iommu_why = "nvme0n1's controller 0000:01:00.0 is in IOMMU group 3",
	};
	enum dbr_transfer x = DBR_XFER_AUTO;
	char why[1024];
	int ret;

	ret = dbr_settle_transfer(&pf, &x, why, sizeof(why));
	CHECK(ret == EOPNOTSUPP && x == DBR_XFER_BOUNCE &&
	      strstr(why, "IOMMU group 3"),
	      "transfer=auto under a translating IOMMU -> bounce, saying why: %d '%s'",
	      ret, why);
	pf.iommu_err = -ENODEV;
	x = DBR_XFER_P2P;
	ret = dbr_settle_transfer(&pf, &x, why, sizeof(why));
	CHECK(ret == ENODEV && x == DBR_XFER_P2P,
	      "transfer=p2p, a head's group not found: ENODEV (%d)", ret);
	pf.probe = -EINVAL;
	ret = dbr_settle_transfer(&pf, &x, why, sizeof(why));
	CHECK(ret == ENOTSUP && strstr(why, "lacks the io_uring dma-buf series") &&
	      strstr(why, "; and nvme0n1's controller"),
	      "no series and an IOMMU refusal: ENOTSUP, both reasons: '%s'", why);
}

static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st; (void)flag; (void)ftw;
	return remove(path);
}

static void with_tree(bool groups)
{
	snprintf(root, sizeof(root), "%s/dbr-iommu.XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(root)) {
		perror("mkdtemp");
		exit(99);
	}
	build_tree(groups);
	if (groups) {
		test_groups();
		test_file();
	} else {
		test_no_groups();
	}
	nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

int main(void)
{
	with_tree(true);
	with_tree(false);
	test_blockers();
	return check_done("test_iommu");
}
