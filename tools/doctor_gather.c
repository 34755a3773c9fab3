// SPDX-License-Identifier: MIT
/*
 * dmabuf-doctor, step 1: do what a p2p job would do, as far as it can be done
 * without I/O, and read what sysfs and procfs say. Facts only; the verdicts
 * are doctor_checks.c's. Everything acquired here is released by
 * dd_release(), in reverse order.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>

#include "doctor.h"

#define UDMABUF_LIMIT_PARAM "/sys/module/udmabuf/parameters/size_limit_mb"

/* ---- kernel ------------------------------------------------------------- */

static void gather_ring(struct dd_facts *f)
{
	/* every flag the engine may ask for: what this kernel takes */
	struct dbr_ring_params p = {
		.entries = 4, .sqpoll_cpu = -1, .single_issuer = true,
	};
	struct dbr_ring r;

	f->ring_err = dbr_ring_init(&r, &p);
	if (f->ring_err < 0)
		return;
	dbr_ring_describe(&r, f->ring_flags, sizeof(f->ring_flags));
	dbr_ring_exit(&r);
}

static void gather_kernel(struct dd_facts *f)
{
	struct utsname u;
	long v;

	if (!uname(&u))
		snprintf(f->release, sizeof(f->release), "%s", u.release);
	f->io_uring_disabled = -1;
	if (!dbr_sys_read_long("/proc/sys/kernel/io_uring_disabled", &v))
		f->io_uring_disabled = (int)v;
	gather_ring(f);
	f->probe_err = f->ring_err < 0 ? DD_NOT_TRIED : dbr_probe_p2p();
	f->kc_p2pdma = dd_kconfig("CONFIG_PCI_P2PDMA", f->kconfig_src,
				  sizeof(f->kconfig_src));
	f->kc_token = dd_kconfig("CONFIG_DMABUF_TOKEN", f->kconfig_src,
				 sizeof(f->kconfig_src));
}

/* ---- device ------------------------------------------------------------- */

/* cut a path at its last '/' */
static void to_parent(char *path)
{
	char *slash = strrchr(path, '/');

	if (slash && slash != path)
		*slash = '\0';
}

/* queue limits live on the whole disk, not on its partitions */
static void gather_queue(struct dd_facts *f)
{
	char dir[PATH_MAX], path[PATH_MAX + 64];

	snprintf(dir, sizeof(dir), "%s", f->sysblk);
	if (f->t.is_partition)
		to_parent(dir);
	snprintf(path, sizeof(path), "%s/queue/logical_block_size", dir);
	dbr_sys_read_long(path, &f->lbs);
	snprintf(path, sizeof(path), "%s/queue/max_sectors_kb", dir);
	dbr_sys_read_long(path, &f->max_kb);
	snprintf(path, sizeof(path), "%s/queue/max_hw_sectors_kb", dir);
	dbr_sys_read_long(path, &f->max_hw_kb);
}

/* The controller and its PCI function, as the engine's auto choice sees
 * them (a multipath head node: the subsystem's lowest numbered path). */
static void gather_nvme(struct dd_facts *f)
{
	char path[PATH_MAX + 16];
	struct dbr_blk_ctrl *c;
	int ret;

	if (strncmp(f->t.name, "nvme", 4))
		return;
	c = malloc(sizeof(*c));
	if (!c)
		return;
	ret = dbr_blk_ctrl_of_sys(f->sysblk, c);
	/* a head whose paths sysfs does not list: judged as in the engine */
	if (!ret || (ret == -ENODEV && c->mpath_head))
		f->iommu_read = !dbr_iommu_of_ctrl("", c, &f->iommu);
	if (!ret) {
		f->mpath_head = c->mpath_head;
		f->mpath_paths = c->mpath_paths;
		snprintf(path, sizeof(path), "%s/transport", c->ctrl);
		dbr_sys_read_str(path, f->transport, sizeof(f->transport));
		snprintf(f->nvme_pci, sizeof(f->nvme_pci), "%s", c->pci.bdf);
		snprintf(f->nvme_sys, sizeof(f->nvme_sys), "%s", c->pci.sys);
		f->nvme_numa = c->pci.numa;
	}
	free(c);
}

static int open_target(struct dd_ctx *c)
{
	struct dd_facts *f = &c->rep.f;

	f->open_err = 0;
	c->fd = open(c->rep.opts.target, O_RDWR | O_DIRECT | O_CLOEXEC);
	if (c->fd >= 0)
		return 0;
	f->open_err = -errno;
	if (f->open_err != -EACCES && f->open_err != -EROFS &&
	    f->open_err != -EPERM)
		return f->open_err;
	c->fd = open(c->rep.opts.target, O_RDONLY | O_DIRECT | O_CLOEXEC);
	if (c->fd < 0)
		return f->open_err;
	f->read_only = true;
	f->open_err = 0;
	return 0;
}

static const char *file_kind(const char *path)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return NULL;
	if (S_ISBLK(st.st_mode))
		return "block device";
	if (S_ISREG(st.st_mode))
		return "regular file";
	if (S_ISDIR(st.st_mode))
		return "directory";
	if (S_ISCHR(st.st_mode))
		return "character device";
	return "special file";
}

static void gather_device(struct dd_ctx *c)
{
	struct dd_facts *f = &c->rep.f;
	char path[64];

	f->open_err = DD_NOT_TRIED;
	f->stat_err = dbr_target_inspect(c->rep.opts.target, &f->t);
	f->kind = file_kind(c->rep.opts.target);
	if (f->stat_err < 0 || !f->t.is_blkdev)
		return;
	open_target(c);
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u",
		 major(f->t.rdev), minor(f->t.rdev));
	if (!realpath(path, f->sysblk))
		return;
	gather_queue(f);
	gather_nvme(f);
}

/* ---- IOMMU -------------------------------------------------------------- */

static void gather_iommu(struct dd_facts *f)
{
	char path[96];

	f->iommu_groups = dd_count_dir("/sys/kernel/iommu_groups");
	dd_cmdline_iommu(f->cmdline_iommu, sizeof(f->cmdline_iommu));
	if (dd_kconfig("CONFIG_IOMMU_DEFAULT_PASSTHROUGH", path, sizeof(path)) == DD_KCONF_YES)
		snprintf(f->iommu_default, sizeof(f->iommu_default), "passthrough");
	else if (dd_kconfig("CONFIG_IOMMU_DEFAULT_DMA_LAZY", path, sizeof(path)) == DD_KCONF_YES)
		snprintf(f->iommu_default, sizeof(f->iommu_default), "DMA-FQ (lazy)");
	else if (dd_kconfig("CONFIG_IOMMU_DEFAULT_DMA_STRICT", path, sizeof(path)) == DD_KCONF_YES)
		snprintf(f->iommu_default, sizeof(f->iommu_default), "DMA (strict)");
	f->iommu_group = -1;
	if (!f->iommu_read || f->iommu.worst < 0)
		return;
	f->iommu_group = f->iommu.c[f->iommu.worst].group;
	snprintf(f->iommu_type, sizeof(f->iommu_type), "%s",
		 f->iommu.c[f->iommu.worst].type);
}

/* ---- GPU ---------------------------------------------------------------- */

/* exp_name and size of a dma-buf, from /proc/self/fdinfo */
static void dmabuf_fdinfo(struct dd_facts *f, int fd)
{
	char path[64], line[256];
	FILE *fi;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	fi = fopen(path, "re");
	if (!fi)
		return;
	while (fgets(line, sizeof(line), fi)) {
		unsigned long long sz;

		if (sscanf(line, "exp_name: %63s", f->exporter) == 1)
			continue;
		if (sscanf(line, "size: %llu", &sz) == 1)
			f->export_bytes = (size_t)sz;
	}
	fclose(fi);
}

static const struct gpu_provider *pick_provider(struct dd_ctx *c)
{
	struct dd_facts *f = &c->rep.f;
	const struct gpu_provider *p;

	if (strcmp(c->rep.opts.gpu, "auto"))
		return gpu_provider_by_name(c->rep.opts.gpu);
	/* where it falls back to host, auto_why says what each GPU answered */
	p = gpu_provider_auto(f->auto_why, sizeof(f->auto_why));
	f->auto_fell_back = p == &gpu_host_provider;
	return p;
}

static void export_probe_buf(struct dd_ctx *c)
{
	struct dd_facts *f = &c->rep.f;

	gpu_buf_init(&c->buf, c->prov, c->rep.opts.gpu_dev, gpu_spin_ns());
	f->alloc_err = gpu_buf_alloc(&c->buf, DD_PROBE_BYTES);
	if (f->alloc_err < 0) {
		snprintf(f->export_why, sizeof(f->export_why), "%s", c->buf.why);
		return;
	}
	c->buf_live = true;
	f->export_err = c->prov->export_dmabuf(&c->buf);
	snprintf(f->export_why, sizeof(f->export_why), "%s", c->buf.why);
	if (!f->export_err)
		dmabuf_fdinfo(f, c->buf.dmabuf_fd);
}

static void gather_gpu_pci(struct dd_facts *f, int dev)
{
	if (dd_gpu_pci_addr(f->prov_name, dev, f->gpu_pci,
			    sizeof(f->gpu_pci)) < 0)
		return;
	dbr_pci_sys_path("", f->gpu_pci, f->gpu_sys, sizeof(f->gpu_sys));
	f->gpu_numa = dbr_pci_numa("", f->gpu_pci);
}

static void gather_gpu(struct dd_ctx *c)
{
	struct dd_facts *f = &c->rep.f;
	int dev = c->rep.opts.gpu_dev;

	f->alloc_err = f->export_err = DD_NOT_TRIED;
	f->gpu_numa = -1;
	c->prov = pick_provider(c);
	f->prov_name = c->prov->name;
	f->gpu_count = c->prov->probe(f->gpu_why, sizeof(f->gpu_why));
	if (f->gpu_count <= dev)
		return;
	if (c->prov->alloc && c->prov->export_dmabuf && c->prov->free)
		export_probe_buf(c);
	if (c->prov != &gpu_host_provider)
		gather_gpu_pci(f, dev);
}

/* ---- the series, for real ---------------------------------------------- */

/*
 * Register the probe dma-buf against the target, as the engine would, then
 * clear the slot. Only where the flag probe passed and the target is an
 * NVMe namespace: elsewhere the kernel's errno would not say anything new.
 */
static void gather_registration(struct dd_ctx *c)
{
	struct dbr_ring_params p = { .entries = 2, .sqpoll_cpu = -1 };
	struct dd_facts *f = &c->rep.f;
	struct dbr_ring r;

	f->reg_err = DD_NOT_TRIED;
	if (f->probe_err || f->export_err || !f->t.is_nvme_ns || c->fd < 0)
		return;
	f->reg_err = dbr_ring_init(&r, &p);
	if (f->reg_err < 0)
		return;
	f->reg_err = dbr_ring_register_buf_table(&r, 1);
	if (!f->reg_err)
		f->reg_err = dbr_ring_install_dmabuf(&r, 0, c->buf.dmabuf_fd,
						     c->fd);
	if (!f->reg_err)
		dbr_ring_clear_buf(&r, 0, true);
	dbr_ring_exit(&r);
}

/* ---- topology and limits ------------------------------------------------ */

static void gather_topology(struct dd_ctx *c)
{
	struct dd_facts *f = &c->rep.f;

	f->topo = DBR_DIST_UNKNOWN;
	if (c->prov == &gpu_host_provider)
		f->topo_na = true;
	else if (f->gpu_sys[0] && f->nvme_sys[0])
		f->topo = dbr_dist_classify(f->gpu_sys, f->nvme_sys, f->gpu_numa,
					   f->nvme_numa, f->topo_via,
					   sizeof(f->topo_via));
	if (dbr_sys_read_long(UDMABUF_LIMIT_PARAM, &f->udmabuf_limit_mb) < 0)
		f->udmabuf_limit_mb = -1;
}

void dd_gather(struct dd_ctx *c)
{
	struct dd_facts *f = &c->rep.f;

	c->fd = -1;
	f->lbs = f->max_kb = f->max_hw_kb = -1;
	f->nvme_numa = -1;
	f->topo = DBR_DIST_UNKNOWN;
	gather_kernel(f);
	gather_device(c);
	gather_iommu(f);
	gather_gpu(c);
	gather_registration(c);
	gather_topology(c);
}

void dd_release(struct dd_ctx *c)
{
	if (c->buf_live)
		gpu_buf_free(&c->buf);
	c->buf_live = false;
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}
