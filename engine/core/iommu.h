/* SPDX-License-Identifier: MIT */
/*
 * The IOMMU between a block device's controller(s) and memory, from sysfs,
 * and whether p2p may register a dma-buf for it: one policy for the engine
 * and dmabuf-doctor. No fio, no printing; errors are negative errnos.
 *
 * The dma-bufs CUDA and HIP export carry physical addresses. Where an IOMMU
 * translates for the NVMe controller (group type DMA, DMA-FQ or anything but
 * identity) its DMA to them is faulted and dropped while the I/O may still
 * complete; the backend this project follows maps them at IOVA == physical
 * address (out-of-tree modules dmabuf-import, iommu-map-pa) and otherwise
 * fails registration, and a native-multipath head whose controller's group
 * it cannot find while groups exist is refused with -ENODEV. udmabuf (host
 * memory) is mapped for the importing device through the DMA API, so it
 * works translated.
 */
#ifndef DBR_IOMMU_H
#define DBR_IOMMU_H

#include <stdbool.h>
#include <stddef.h>

#include "topology.h"

/* how one controller's DMA reaches memory, best first */
enum dbr_iommu_mode {
	DBR_IOMMU_OFF,		/* in no IOMMU group: not translated */
	DBR_IOMMU_IDENTITY,	/* group type identity (iommu=pt) */
	DBR_IOMMU_TRANSLATED,	/* DMA, DMA-FQ, unknown: translated */
	DBR_IOMMU_NO_GROUP,	/* a multipath head's path without a group
				 * while groups exist */
};

/* p2p_iommu=: who maps GPU memory into a translating IOMMU */
enum dbr_p2p_iommu {
	DBR_P2P_IOMMU_REFUSE	= 0,	/* nobody: refuse p2p of GPU memory */
	DBR_P2P_IOMMU_ALLOW	= 1,	/* the mapping modules are loaded */
};

struct dbr_iommu_ctrl {
	char name[16];		/* "nvme1"; "" for a plain namespace's */
	char bdf[DBR_BDF_LEN];	/* "" when not a PCI function */
	int group;		/* -1: none */
	char type[24];		/* identity, DMA, DMA-FQ, ...; "" unknown */
	enum dbr_iommu_mode mode;
};

struct dbr_iommu {
	int nr_groups;		/* entries in /sys/kernel/iommu_groups */
	bool mpath_head;
	int nr;			/* controllers in c[] */
	struct dbr_iommu_ctrl c[DBR_MAX_PATHS];
	int worst;		/* index of the one that decides, -1: none */
};

const char *dbr_iommu_mode_name(enum dbr_iommu_mode m);
/* Read the groups of c's controller(s) (every path of a head node). */
int dbr_iommu_of_ctrl(const char *root, const struct dbr_blk_ctrl *c,
		      struct dbr_iommu *io);
/* The decisive mode: the worst of the controllers, DBR_IOMMU_OFF if none. */
enum dbr_iommu_mode dbr_iommu_mode(const struct dbr_iommu *io);
/*
 * May a dma-buf of disk be registered? phys: the exporter hands physical
 * addresses (CUDA, HIP; not udmabuf). 0, or -EOPNOTSUPP (translated, not
 * allowed) / -ENODEV (a head's group not found), with one line into why
 * naming the controller, its group type and the fixes.
 */
int dbr_iommu_verdict(const struct dbr_iommu *io, const char *disk,
		      const char *exporter, bool phys,
		      enum dbr_p2p_iommu policy, char *why, size_t len);
/* The same for a file by path: its block device's controller(s). */
int dbr_iommu_check_file(const char *root, const char *path,
			 const char *exporter, bool phys,
			 enum dbr_p2p_iommu policy, char *why, size_t len);

#endif
