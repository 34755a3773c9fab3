/* SPDX-License-Identifier: MIT */
/*
 * Where a block device's controller and a GPU sit on the PCIe tree, from
 * sysfs alone: shared by the engine (gpu_dev_ids=auto, gpu_cpus=auto) and
 * dmabuf-doctor. No fio, no printing; errors are negative errnos.
 *
 * Every lookup takes a sysfs root: "" for the machine's own /sys, a
 * directory holding a sys/ tree built as a fixture for tests (the engine
 * takes it from DBR_SYSFS_ROOT, which only tests set).
 */
#ifndef DBR_TOPOLOGY_H
#define DBR_TOPOLOGY_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#define DBR_BDF_LEN	16	/* "0000:00:00.0" */
#define DBR_TOPO_MAX_GPUS	64
#define DBR_MAX_PATHS	8	/* paths of a multipath head node kept */

/*
 * Where two PCI functions meet, closest first: the one vocabulary of
 * gpu_dev_ids=auto (which ranks GPUs by it) and dmabuf-doctor (which says
 * what it means for p2p); dbr_dist_name gives its word.
 */
enum dbr_dist {
	DBR_DIST_SWITCH,	/* below one PCIe switch */
	DBR_DIST_ROOT_PORT,	/* below one root port */
	DBR_DIST_HOST_BRIDGE,	/* one host bridge, different root ports */
	DBR_DIST_NUMA,		/* different host bridges, one NUMA node
				 * (both known) */
	DBR_DIST_OTHER,		/* other sockets, or no NUMA information */
	DBR_DIST_UNKNOWN,	/* a PCI path is not known */
};

/* A PCI function: its address, /sys/devices path and NUMA node (-1: none). */
struct dbr_pci_fn {
	char bdf[DBR_BDF_LEN];
	char sys[PATH_MAX];
	int numa;
};

/* One path (controller) of a multipath head node. */
struct dbr_blk_path {
	char name[16];		/* "nvme1" */
	struct dbr_pci_fn pci;	/* bdf "" when the controller is not PCI */
};

/*
 * The controller behind a block device, as sysfs shows it. A multipath
 * head node reaches its namespace through several controllers: ctrl and
 * pci are the lowest-numbered one on PCI (else the lowest-numbered), path[]
 * lists them all (the DBR_MAX_PATHS lowest-numbered), lowest first.
 */
struct dbr_blk_ctrl {
	char disk[64];		/* the whole disk: nvme0n1 for nvme0n1p2 */
	char ctrl[PATH_MAX];	/* its controller's sysfs directory */
	struct dbr_pci_fn pci;	/* bdf "" when the controller is not PCI */
	bool partition;
	bool mpath_head;	/* an nvme-subsystem head node */
	int mpath_paths;	/* controllers behind a head node */
	int nr_paths;		/* entries in path[]; 0 but for a head node */
	struct dbr_blk_path path[DBR_MAX_PATHS];
};

const char *dbr_sysfs_root(void);

int dbr_sys_read_str(const char *path, char *buf, size_t len);
int dbr_sys_read_long(const char *path, long *val);

int dbr_bdf_normalize(const char *in, char *bdf, size_t len);
int dbr_bdf_of_path(const char *syspath, char *bdf, size_t len);
int dbr_pci_sys_path(const char *root, const char *bdf, char *buf,
		     size_t len);
int dbr_pci_numa(const char *root, const char *bdf);
int dbr_pci_fn_get(const char *root, const char *addr, struct dbr_pci_fn *fn);

int dbr_blk_ctrl_by_name(const char *root, const char *name,
			 struct dbr_blk_ctrl *c);
int dbr_blk_ctrl_by_devt(const char *root, unsigned int major,
			 unsigned int minor, struct dbr_blk_ctrl *c);
int dbr_blk_ctrl_of_sys(const char *sysblk, struct dbr_blk_ctrl *c);
int dbr_blk_ctrl_of_file(const char *root, const char *path,
			 struct dbr_blk_ctrl *c, bool *via_fs);

const char *dbr_dist_name(enum dbr_dist d);
enum dbr_dist dbr_dist_classify(const char *a, const char *b, int numa_a,
				int numa_b, char *via, size_t len);
enum dbr_dist dbr_dist_of(const struct dbr_pci_fn *a,
			  const struct dbr_pci_fn *b);
enum dbr_dist dbr_dist_to_blk(const struct dbr_pci_fn *gpu,
			      const struct dbr_blk_ctrl *c, int *path);
void dbr_gpu_dists_add(const struct dbr_pci_fn *gpus, int nr_gpus,
		       const struct dbr_blk_ctrl *c, enum dbr_dist *dist);
int dbr_dist_ties(const enum dbr_dist *dist, int nr_gpus);

/* One thread of a run, as gpu_dev_ids=auto places it (dbr_gpu_assign). */
struct dbr_gpu_want {
	const enum dbr_dist *dist;	/* to each GPU; NULL: not placed */
	bool stonewall;			/* starts once all before it ended */
};

int dbr_gpu_assign(const struct dbr_gpu_want *want, int nr, int nr_gpus,
		   int *dev);

int dbr_numa_cpulist(const char *root, int node, char *buf, size_t len);

#endif
