/* SPDX-License-Identifier: MIT */
/*
 * dmabuf-doctor: says whether the p2p path of dmabuf_uring can run on this
 * machine, and exactly why not.
 *
 * The program runs in three steps:
 *  1. gather (doctor_gather.c): acquire what a real p2p job would (the target
 *     opened O_DIRECT, a small buffer from the chosen provider exported as a
 *     dma-buf, a ring, the real registration) and read sysfs/procfs, filling
 *     struct dd_facts; every acquisition is released by dd_release();
 *  2. judge (doctor_checks.c): a table of small check functions turns the facts
 *     into results, each ok / warning / fail / skip with a one-line reason
 *     and the fix;
 *  3. print (doctor_print.c): the same report as text or as one JSON object
 *     (schema in docs/doctor.md).
 */
#ifndef DBR_DOCTOR_H
#define DBR_DOCTOR_H

#include <stdbool.h>
#include <limits.h>
#include <stddef.h>

#include "iommu.h"
#include "ring.h"
#include "target.h"
#include "provider.h"
#include "topology.h"

#define DD_SCHEMA_VERSION	1
#define DD_MAX_RESULTS		32
#define DD_BDF_LEN		DBR_BDF_LEN
/* an *_err field for a step that was never attempted */
#define DD_NOT_TRIED		1
/* the probe buffer: one provider allocation unit (see gpu_buf_round) */
#define DD_PROBE_BYTES		(2UL << 20)

enum dd_status {
	DD_OK,
	DD_WARN,
	DD_FAIL,
	DD_SKIP,	/* not applicable, or a prerequisite failed */
};

/* A kernel config symbol: y / m / not set / config not readable. */
enum dd_kconf {
	DD_KCONF_UNKNOWN,
	DD_KCONF_NO,
	DD_KCONF_YES,
	DD_KCONF_MODULE,
};

struct dd_opts {
	const char *target;
	const char *gpu;	/* auto | cuda | hip | host */
	int gpu_dev;
	enum dbr_p2p_iommu p2p_iommu;	/* as fio's p2p_iommu */
	bool json;
};

/* What the machine said; -errno where a step failed, 0 where it worked. */
struct dd_facts {
	/* kernel */
	char release[65];
	int io_uring_disabled;		/* sysctl value, -1: no such sysctl */
	int ring_err;			/* dbr_ring_init */
	char ring_flags[96];		/* setup flags the kernel accepted */
	int probe_err;			/* dbr_probe_p2p: the flag probe */
	int reg_err;			/* a real dma-buf registration */
	enum dd_kconf kc_p2pdma;	/* CONFIG_PCI_P2PDMA */
	enum dd_kconf kc_token;		/* CONFIG_DMABUF_TOKEN (the series) */
	char kconfig_src[64];		/* where the config was read */
	char cmdline_iommu[256];	/* iommu settings on the command line */
	char iommu_default[32];		/* CONFIG_IOMMU_DEFAULT_* */

	/* device */
	int stat_err;			/* dbr_target_inspect */
	struct dbr_target t;
	const char *kind;		/* block device, regular file, ... */
	int open_err;			/* O_RDWR|O_DIRECT (then O_RDONLY) */
	char sysblk[PATH_MAX];		/* /sys/devices/... of the disk (realpath) */
	bool read_only;
	bool mpath_head;
	int mpath_paths;
	char transport[16];		/* pcie, tcp, rdma, loop, fc */
	long lbs;			/* logical block size, -1 unknown */
	long max_kb, max_hw_kb;		/* queue limits, -1 unknown */
	char nvme_pci[DD_BDF_LEN];	/* "" when not a PCI function */
	char nvme_sys[PATH_MAX];		/* /sys/devices/... of that function */
	int nvme_numa;

	/* IOMMU */
	int iommu_groups;		/* entries in /sys/kernel/iommu_groups */
	int iommu_group;		/* the controller's, -1 none */
	char iommu_type[24];		/* identity, DMA, DMA-FQ, ... */
	struct dbr_iommu iommu;		/* every controller's (iommu.h) */
	bool iommu_read;		/* iommu filled in */

	/* GPU */
	const char *prov_name;
	bool auto_fell_back;		/* gpu=auto found no GPU */
	char auto_why[512];		/* gpu_provider_auto's, each GPU's answer */
	int gpu_count;			/* probe: count or -errno */
	char gpu_why[192];
	int alloc_err;			/* gpu_buf_alloc of the probe buffer */
	int export_err;			/* export_dmabuf of it */
	char export_why[192];
	char exporter[64];		/* exp_name of the probe dma-buf */
	size_t export_bytes;
	char gpu_pci[DD_BDF_LEN];	/* "" unknown */
	char gpu_sys[PATH_MAX];
	int gpu_numa;

	/* topology */
	enum dbr_dist topo;		/* engine/core/topology.h's classes */
	bool topo_na;			/* --gpu host: no peer device */
	char topo_via[DD_BDF_LEN];	/* the closest common bridge */

	/* limits */
	long udmabuf_limit_mb;		/* -1 unknown */
};

struct dd_result {
	const char *id;			/* "kernel.series", stable */
	enum dd_status status;
	char reason[512];
	char fix[256];
};

struct dd_report {
	struct dd_opts opts;
	struct dd_facts f;
	struct dd_result r[DD_MAX_RESULTS];
	int nr;
	bool ready;
};

/* what the gather step holds until dd_release() */
struct dd_ctx {
	struct dd_report rep;
	const struct gpu_provider *prov;
	struct gpu_buf buf;
	bool buf_live;
	int fd;
};

/* doctor_gather.c */
void dd_gather(struct dd_ctx *c);
void dd_release(struct dd_ctx *c);

/* doctor_checks.c */
void dd_judge(struct dd_report *rep);
const char *dd_status_name(enum dd_status s);
const char *dd_errname(int err);

/* doctor_print.c */
void dd_print_text(const struct dd_report *rep);
void dd_print_json(const struct dd_report *rep);

/* doctor_sys.c: kernel config and command line (sysfs: topology.h) */
const char *dd_kconf_name(enum dd_kconf k);
enum dd_kconf dd_kconfig(const char *sym, char *src, size_t srclen);
void dd_cmdline_iommu(char *buf, size_t len);
int dd_count_dir(const char *path);

/* doctor_gpu_pci.c: the GPU's PCI address as its runtime tells it */
int dd_gpu_pci_addr(const char *prov, int dev, char *bdf, size_t len);

#endif
