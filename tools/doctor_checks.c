// SPDX-License-Identifier: MIT
/*
 * dmabuf-doctor, step 2: the checks. Each is a small function that reads the
 * gathered facts and fills one result: ok / warning / fail / skip, a one-line
 * reason, and the fix. Only fails make the machine "not ready"; warnings are
 * about speed (whether the bytes really go peer-to-peer), not correctness.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "doctor.h"
#include "dbr_uapi.h"

typedef void (*dd_check_fn)(const struct dd_report *rep, struct dd_result *r);

static void say(struct dd_result *r, enum dd_status s, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void fix(struct dd_result *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void say(struct dd_result *r, enum dd_status s, const char *fmt, ...)
{
	va_list ap;

	r->status = s;
	va_start(ap, fmt);
	vsnprintf(r->reason, sizeof(r->reason), fmt, ap);
	va_end(ap);
}

static void fix(struct dd_result *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->fix, sizeof(r->fix), fmt, ap);
	va_end(ap);
}

const char *dd_errname(int err)
{
	static const struct { int err; const char *name; } names[] = {
		{ EINVAL, "EINVAL" }, { EOPNOTSUPP, "EOPNOTSUPP" },
		{ ENOENT, "ENOENT" }, { EACCES, "EACCES" }, { EPERM, "EPERM" },
		{ EFAULT, "EFAULT" }, { ENODEV, "ENODEV" }, { ENOSYS, "ENOSYS" },
		{ E2BIG, "E2BIG" }, { ENOMEM, "ENOMEM" }, { EBADF, "EBADF" },
		{ ENOTTY, "ENOTTY" }, { EIO, "EIO" }, { EBUSY, "EBUSY" },
		{ EROFS, "EROFS" }, { ENXIO, "ENXIO" },
	};
	size_t i;

	if (err < 0)
		err = -err;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].err == err)
			return names[i].name;
	return "an unexpected errno";
}

const char *dd_status_name(enum dd_status s)
{
	static const char *const names[] = {
		[DD_OK] = "ok", [DD_WARN] = "warning",
		[DD_FAIL] = "fail", [DD_SKIP] = "skip",
	};

	return names[s];
}

static bool is_host(const struct dd_facts *f)
{
	return !strcmp(f->prov_name, "host");
}

/* ---- kernel ------------------------------------------------------------- */

static void check_release(const struct dd_report *rep, struct dd_result *r)
{
	say(r, DD_OK, "Linux %s (kernel.series probes it for the io_uring dma-buf series)",
	    rep->f.release);
}

static void check_io_uring(const struct dd_report *rep, struct dd_result *r)
{
	const struct dd_facts *f = &rep->f;

	if (f->ring_err < 0) {
		say(r, DD_FAIL, "cannot set up an io_uring ring: %s (%s)%s",
		    dd_errname(f->ring_err), strerror(-f->ring_err),
		    f->io_uring_disabled > 0 ? ", kernel.io_uring_disabled is set" : "");
		fix(r, f->io_uring_disabled > 0 ?
		    "sysctl -w kernel.io_uring_disabled=0 (1 allows only members of kernel.io_uring_group)" :
		    f->ring_err == -ENOMEM ? "raise the locked-memory limit (ulimit -l)" :
		    "a kernel with CONFIG_IO_URING=y");
		return;
	}
	if (f->io_uring_disabled < 0)
		say(r, DD_OK, "io_uring works (ring flags %s)", f->ring_flags);
	else
		say(r, DD_OK, "io_uring works (kernel.io_uring_disabled = %d; ring flags %s)",
		    f->io_uring_disabled, f->ring_flags);
}

static const char *no_real_registration(const struct dd_facts *f)
{
	if (f->export_err)
		return "no provider could export a dma-buf (see gpu.export)";
	if (!f->t.is_nvme_ns)
		return "the target is not an NVMe namespace (see device.nvme)";
	return "the target could not be opened (see device.odirect)";
}

static void series_probe_failed(const struct dd_report *rep,
				struct dd_result *r)
{
	const struct dd_facts *f = &rep->f;

	if (f->probe_err == -EINVAL) {
		say(r, DD_FAIL, "this kernel lacks the io_uring dma-buf series: the extended IORING_REGISTER_BUFFERS_UPDATE answered EINVAL");
		fix(r, "boot a kernel with the series \"Add dmabuf read/write via io_uring\" (docs/doctor.md); until then run transfer=bounce");
	} else if (f->probe_err == -EOPNOTSUPP) {
		say(r, DD_FAIL, "this kernel has the io_uring dma-buf series but not its config: the extended buffer update answered EOPNOTSUPP");
		fix(r, "rebuild the kernel with CONFIG_DMABUF_TOKEN=y; until then run transfer=bounce");
	} else {
		say(r, DD_FAIL, "the io_uring dma-buf flag probe failed: %s (%s)",
		    dd_errname(f->probe_err), strerror(-f->probe_err));
		fix(r, "see kernel.io_uring; until then run transfer=bounce");
	}
}

static void check_series(const struct dd_report *rep, struct dd_result *r)
{
	const struct dd_facts *f = &rep->f;

	if (f->probe_err == DD_NOT_TRIED) {
		say(r, DD_SKIP, "no io_uring ring to probe with (see kernel.io_uring)");
	} else if (f->probe_err < 0) {
		series_probe_failed(rep, r);
	} else if (f->reg_err == 0) {
		say(r, DD_OK, "registered a %zu MiB gpu=%s dma-buf for %s and cleared it again",
		    (f->export_bytes ? f->export_bytes : DD_PROBE_BYTES) >> 20,
		    f->prov_name, rep->opts.target);
	} else if (f->reg_err < 0) {
		say(r, DD_FAIL, "the kernel has the series but refused a gpu=%s dma-buf for %s: %s (%s)",
		    f->prov_name, rep->opts.target, dd_errname(f->reg_err),
		    strerror(-f->reg_err));
		fix(r, f->reg_err == -EOPNOTSUPP ?
		    "only nvme-pci namespaces take dma-bufs: use /dev/nvmeXnY of a PCIe controller" :
		    "check dmesg for the kernel's reason; run transfer=bounce meanwhile");
	} else {
		say(r, DD_WARN, "the kernel accepts the series' extended buffer update (flag probe) but no dma-buf was registered for real: %s",
		    no_real_registration(f));
		fix(r, "fix the failing checks below and run the doctor again");
	}
}

/* ---- device ------------------------------------------------------------- */

static void check_blockdev(const struct dd_report *rep, struct dd_result *r)
{
	const struct dd_facts *f = &rep->f;
	const char *path = rep->opts.target;

	if (f->stat_err < 0) {
		say(r, DD_FAIL, "%s: %s", path, strerror(-f->stat_err));
		fix(r, "name an existing NVMe namespace, e.g. /dev/nvme0n1 (see 'nvme list' or lsblk)");
	} else if (!f->t.is_blkdev) {
		say(r, DD_FAIL, "%s is a %s, not a block device", path,
		    f->kind ? f->kind : "file");
		fix(r, "p2p needs the raw namespace, e.g. /dev/nvme0n1; files go through transfer=bounce");
	} else {
		say(r, DD_OK, "%s is a block device (%s)", path, f->t.name);
	}
}

static void check_nvme(const struct dd_report *rep, struct dd_result *r)
{
	const struct dd_facts *f = &rep->f;
	const char *path = rep->opts.target;

	if (!f->t.is_blkdev) {
		say(r, DD_SKIP, "not a block device");
	} else if (f->t.is_partition) {
		say(r, DD_FAIL, "%s (%s) is a partition, not an NVMe namespace",
		    path, f->t.name);
		fix(r, "use the whole namespace (e.g. /dev/nvme0n1) and keep the job inside the partition with offset= and size=");
	} else if (!f->t.is_nvme_ns) {
		say(r, DD_FAIL, "%s (%s) is not an NVMe namespace", path, f->t.name);
		fix(r, "only nvme-pci namespaces such as /dev/nvme0n1 take dma-bufs; other devices go through transfer=bounce");
	} else if (f->transport[0] && strcmp(f->transport, "pcie")) {
		say(r, DD_FAIL, "%s is an NVMe-over-%s namespace, not nvme-pci",
		    path, f->transport);
		fix(r, "only nvme-pci namespaces take dma-bufs; use a local PCIe drive, or transfer=bounce");
	} else {
		say(r, DD_OK, "%s is an NVMe namespace of PCIe controller %s",
		    f->t.name, f->nvme_pci[0] ? f->nvme_pci : "(unknown)");
	}
}

static void check_multipath(const struct dd_report *rep, struct dd_result *r)
{
	const struct dd_facts *f = &rep->f;

	if (!f->t.is_nvme_ns) {
		say(r, DD_SKIP, "not an NVMe namespace");
	} else if (!f->mpath_head) {
		say(r, DD_OK, "%s is not a multipath head node", f->t.name);
	} else if (f->reg_err == 0) {
		say(r, DD_OK, "%s is a multipath head node over %d path(s); the kernel registered a dma-buf for it",
		    f->t.name, f->mpath_paths);
	} else {
		say(r, DD_WARN, "%s is a native-multipath head node over %d path(s): the series was tested on plain namespaces",
		    f->t.name, f->mpath_paths);
		fix(r, "if registration fails, boot with nvme_core.multipath=N to get the per-controller namespace");
	}
}

static void check_odirect(const struct dd_report *rep, struct dd_result *r)
{
	const struct dd_facts *f = &rep->f;

	if (!f->t.is_blkdev) {
		say(r, DD_SKIP, "not a block device");
	} else if (f->open_err < 0) {
		say(r, DD_FAIL, "open(%s, O_RDWR|O_DIRECT): %s", rep->opts.target,
		    strerror(-f->open_err));
		fix(r, f->open_err == -EINVAL ?
		    "the device does not support O_DIRECT; p2p needs it (direct=1)" :
		    "run as root, or give the user read/write access to the device (e.g. the disk group)");
	} else if (f->read_only) {
		say(r, DD_WARN, "opened O_DIRECT read-only: write jobs will fail to open %s",
		    rep->opts.target);
		fix(r, "run as root, or give the user write access to the device, for write jobs");
	} else {
		say(r, DD_OK, "opens O_RDWR|O_DIRECT (fio: direct=1, which p2p requires)");
	}
}

static void check_block_size(const struct dd_report *rep, struct dd_result *r)
{
	const struct dd_facts *f = &rep->f;

	if (!f->t.is_blkdev)
		say(r, DD_SKIP, "not a block device");
	else if (f->lbs <= 0)
		say(r, DD_WARN, "logical block size unknown (no queue/logical_block_size in sysfs)");
	else
		say(r, DD_OK, "logical block size %ld bytes: bs and offsets must be multiples of it",
		    f->lbs);
}

static void check_max_sectors(const struct dd_report *rep, struct dd_result *r)
{
	const struct dd_facts *f = &rep->f;

	if (!f->t.is_blkdev) {
		say(r, DD_SKIP, "not a block device");
		return;
	}
	if (f->max_kb <= 0) {
		say(r, DD_WARN, "max_sectors_kb unknown (not in sysfs)");
		return;
	}
	say(r, DD_OK, "max_sectors_kb %ld, max_hw_sectors_kb %ld: larger I/Os are split (with v3 of the series keep bs <= %ld KiB)",
	    f->max_kb, f->max_hw_kb, f->max_kb);
	if (f->max_hw_kb > f->max_kb)
		fix(r, "echo %ld > /sys/block/%s/queue/max_sectors_kb allows single I/Os up to the hardware limit",
		    f->max_hw_kb, f->t.name);
}

/* ---- IOMMU and kernel config -------------------------------------------- */

/* the verdict p2p jobs get (engine/core/iommu.c): a refusal fails here too */
static void iommu_translated(const struct dd_report *rep, struct dd_result *r)
{
	const struct dd_facts *f = &rep->f;
	char exporter[16], why[sizeof(r->reason)];
	int ret;

	snprintf(exporter, sizeof(exporter), "gpu=%s", f->prov_name);
	ret = dbr_iommu_verdict(&f->iommu, f->t.name, exporter, !is_host(f),
				rep->opts.p2p_iommu, why, sizeof(why));
	if (ret < 0) {
		say(r, DD_FAIL, "%s", why);
		fix(r, ret == -ENODEV ?
		    "nvme_core.multipath=N on the kernel command line gives each path a namespace of its own" :
		    "iommu=pt (intel_iommu=on iommu=pt, or amd_iommu=pt) on the kernel command line gives identity mappings; with the mapping modules loaded, fio's p2p_iommu=allow (here --p2p-iommu allow)");
	} else if (is_host(f) && dbr_iommu_mode(&f->iommu) == DBR_IOMMU_NO_GROUP) {
		say(r, DD_OK, "%s: a multipath path's controller is in no IOMMU group (%d on this machine): fine for host memory (udmabuf maps it through the DMA API)",
		    f->t.name, f->iommu_groups);
	} else if (is_host(f)) {
		say(r, DD_OK, "controller %s: IOMMU group %d, type %s (translated): fine for host memory (udmabuf maps it through the DMA API)",
		    f->nvme_pci, f->iommu_group, f->iommu_type);
	} else {
		say(r, DD_WARN, "controller %s: IOMMU group %d, type %s (translated): p2p_iommu=allow says the mapping modules map GPU memory at IOVA == physical address; ACS may route p2p through the root complex",
		    f->nvme_pci, f->iommu_group, f->iommu_type);
		fix(r, "iommu=pt on the kernel command line gives identity mappings and no mapping work");
	}
}

static void check_iommu_group(const struct dd_report *rep, struct dd_result *r)
{
	const struct dd_facts *f = &rep->f;
	enum dbr_iommu_mode m = dbr_iommu_mode(&f->iommu);

	if (!f->nvme_pci[0] && f->iommu_groups <= 0)
		say(r, DD_OK, "no IOMMU groups on this machine: DMA is not translated");
	else if (!f->iommu_read || (!f->nvme_pci[0] && m != DBR_IOMMU_NO_GROUP))
		say(r, DD_SKIP, "no NVMe PCI controller to look up (%d IOMMU groups on this machine)",
		    f->iommu_groups);
	else if (m == DBR_IOMMU_OFF)
		say(r, DD_OK, "controller %s is in no IOMMU group: its DMA is not translated",
		    f->nvme_pci);
	else if (m == DBR_IOMMU_IDENTITY)
		say(r, DD_OK, "controller %s: IOMMU group %d, type identity (passthrough): peer addresses need no mapping",
		    f->nvme_pci, f->iommu_group);
	else
		iommu_translated(rep, r);
}

static void check_iommu_cmdline(const struct dd_report *rep,
				struct dd_result *r)
{
	const struct dd_facts *f = &rep->f;

	if (f->cmdline_iommu[0])
		say(r, DD_OK, "kernel command line: %s", f->cmdline_iommu);
	else
		say(r, DD_OK, "no iommu settings on the kernel command line (kernel default: %s)",
		    f->iommu_default[0] ? f->iommu_default : "unknown");
}

static void check_p2pdma(const struct dd_report *rep, struct dd_result *r)
{
	const struct dd_facts *f = &rep->f;

	if (f->kc_p2pdma == DD_KCONF_UNKNOWN) {
		say(r, is_host(f) ? DD_OK : DD_WARN,
		    "CONFIG_PCI_P2PDMA unknown: the kernel config is not readable%s",
		    is_host(f) ? " (not needed for gpu=host)" : "");
		fix(r, "modprobe configs (for /proc/config.gz), or install /boot/config-%s",
		    f->release);
	} else if (f->kc_p2pdma == DD_KCONF_YES) {
		say(r, DD_OK, "CONFIG_PCI_P2PDMA=y (%s)", f->kconfig_src);
	} else if (is_host(f)) {
		say(r, DD_OK, "CONFIG_PCI_P2PDMA is not set (%s); not needed for gpu=host",
		    f->kconfig_src);
	} else {
		say(r, DD_WARN, "CONFIG_PCI_P2PDMA is not set (%s): the NVMe controller cannot reach GPU memory peer-to-peer; data may go through host memory",
		    f->kconfig_src);
		fix(r, "a kernel built with CONFIG_PCI_P2PDMA=y");
	}
}

/* ---- GPU ---------------------------------------------------------------- */

/* "NVIDIA (libcuda.so.1) or ROCm (libamdhip64.so)": the GPU runtimes built in */
static const char *runtimes(char *buf, size_t len)
{
	const struct gpu_provider *p;
	size_t used = 0;
	unsigned int i;

	buf[0] = '\0';
	for (i = 0; (p = gpu_provider_nth(i)); i++)
		if (p->runtime)
			used += snprintf(buf + used, used < len ? len - used : 0,
					 "%s%s", used ? " or " : "", p->runtime);
	return buf[0] ? buf : "a GPU";
}

static void check_gpu_runtime(const struct dd_report *rep, struct dd_result *r)
{
	const struct dd_facts *f = &rep->f;

	const struct gpu_provider *p = gpu_provider_by_name(f->prov_name);
	char rts[192];

	if (f->auto_fell_back) {
		say(r, DD_WARN, "gpu=auto found no GPU device (%s); using host memory",
		    f->auto_why[0] ? f->auto_why : "no runtime");
		fix(r, "install the driver and runtime of %s, or say --gpu host",
		    runtimes(rts, sizeof(rts)));
	} else if (is_host(f)) {
		say(r, DD_OK, "gpu=host: host memory (memfd, exported by /dev/udmabuf), no GPU runtime needed");
	} else if (f->gpu_count < 0) {
		say(r, DD_FAIL, "gpu=%s: %s", f->prov_name,
		    f->gpu_why[0] ? f->gpu_why : strerror(-f->gpu_count));
		if (p && p->runtime)
			fix(r, "install the %s driver and runtime, or use --gpu host",
			    p->runtime);
		else
			fix(r, "rebuild dmabuf_uring with ./configure --with-%s, or use --gpu host",
			    f->prov_name);
	} else if (f->gpu_count == 0) {
		say(r, DD_FAIL, "gpu=%s: the runtime sees no device", f->prov_name);
		fix(r, "check the driver (nvidia-smi / rocm-smi) and CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES");
	} else {
		say(r, DD_OK, "gpu=%s: runtime found, %d device%s", f->prov_name,
		    f->gpu_count, f->gpu_count == 1 ? "" : "s");
	}
}

static void check_gpu_device(const struct dd_report *rep, struct dd_result *r)
{
	const struct dd_facts *f = &rep->f;
	int dev = rep->opts.gpu_dev;

	if (f->gpu_count <= 0)
		say(r, DD_SKIP, "no device (see gpu.runtime)");
	else if (dev >= f->gpu_count) {
		say(r, DD_FAIL, "--gpu-dev %d: gpu=%s has %d device%s (0..%d)",
		    dev, f->prov_name, f->gpu_count,
		    f->gpu_count == 1 ? "" : "s", f->gpu_count - 1);
		fix(r, "pick a device from 0 to %d (fio: gpu_dev_ids)",
		    f->gpu_count - 1);
	} else
		say(r, DD_OK, "device %d of %d", dev, f->gpu_count);
}

static const char *export_fix(const struct dd_facts *f)
{
	const struct gpu_provider *p = gpu_provider_by_name(f->prov_name);

	return p && p->export_needs ? p->export_needs : "transfer=bounce";
}

static void check_gpu_export(const struct dd_report *rep, struct dd_result *r)
{
	const struct dd_facts *f = &rep->f;
	const char *why = f->export_why;

	if (f->alloc_err == DD_NOT_TRIED) {
		say(r, DD_SKIP, "no device to allocate on (see gpu.runtime, gpu.device)");
	} else if (f->alloc_err < 0) {
		say(r, DD_FAIL, "gpu=%s: allocating %lu MiB on device %d failed: %s",
		    f->prov_name, DD_PROBE_BYTES >> 20, rep->opts.gpu_dev,
		    why[0] ? why : strerror(-f->alloc_err));
		fix(r, "check free device memory and the driver's state");
	} else if (f->export_err < 0) {
		say(r, DD_FAIL, "gpu=%s cannot export a dma-buf: %s", f->prov_name,
		    why[0] ? why : strerror(-f->export_err));
		fix(r, "%s", export_fix(f));
	} else {
		say(r, DD_OK, "exported a %zu MiB dma-buf from gpu=%s device %d (exporter %s)",
		    f->export_bytes >> 20, f->prov_name, rep->opts.gpu_dev,
		    f->exporter[0] ? f->exporter : "unknown");
	}
}

static void check_gpu_pci(const struct dd_report *rep, struct dd_result *r)
{
	const struct dd_facts *f = &rep->f;

	if (is_host(f))
		say(r, DD_SKIP, "gpu=host: no GPU");
	else if (f->gpu_count <= rep->opts.gpu_dev)
		say(r, DD_SKIP, "no device (see gpu.runtime, gpu.device)");
	else if (!f->gpu_pci[0]) {
		say(r, DD_WARN, "PCI address unknown: the %s runtime did not tell it",
		    f->prov_name);
		fix(r, "without it the topology check cannot run: compare by hand with lspci -tv");
	} else
		say(r, DD_OK, "PCI %s, NUMA node %d", f->gpu_pci, f->gpu_numa);
}

/* ---- topology ----------------------------------------------------------- */

static const char *const topo_meaning[] = {
	[DBR_DIST_SWITCH] = "p2p stays inside the switch: full link bandwidth, the best case",
	[DBR_DIST_ROOT_PORT] = "p2p turns around at the root port: near full link bandwidth",
	[DBR_DIST_HOST_BRIDGE] = "p2p is forwarded by the CPU's root complex: bandwidth depends on the CPU, and the kernel allows it only on host bridges it knows",
	[DBR_DIST_NUMA] = "p2p crosses the CPU's internal fabric between host bridges: often slow, sometimes refused",
	[DBR_DIST_OTHER] = "p2p crosses the inter-socket link (or the NUMA nodes are not known): expect low bandwidth, or the kernel refuses and data goes through memory",
};

static void topo_unknown(const struct dd_report *rep, struct dd_result *r)
{
	const struct dd_facts *f = &rep->f;

	if (!f->nvme_pci[0])
		say(r, DD_SKIP, "no NVMe PCI controller (see device.nvme)");
	else if (f->gpu_count <= rep->opts.gpu_dev)
		say(r, DD_SKIP, "no GPU (see gpu.runtime)");
	else {
		say(r, DD_WARN, "unknown: the GPU's PCI path is not known (see gpu.pci)");
		fix(r, "compare the PCI paths by hand: lspci -tv (nvidia-smi topo -m on NVIDIA)");
	}
}

static void check_topology(const struct dd_report *rep, struct dd_result *r)
{
	const struct dd_facts *f = &rep->f;
	enum dbr_dist t = f->topo;

	if (f->topo_na) {
		say(r, DD_OK, "gpu=host: the NVMe controller writes system memory, no peer device");
	} else if (t == DBR_DIST_UNKNOWN) {
		topo_unknown(rep, r);
	} else if (t == DBR_DIST_SWITCH || t == DBR_DIST_ROOT_PORT) {
		say(r, DD_OK, "GPU %s and NVMe %s meet at %s (%s): %s", f->gpu_pci,
		    f->nvme_pci, f->topo_via, dbr_dist_name(t), topo_meaning[t]);
	} else {
		say(r, DD_WARN, "GPU %s and NVMe %s meet %s%s (%s): %s", f->gpu_pci,
		    f->nvme_pci, f->topo_via[0] ? "at " : "above the host bridges",
		    f->topo_via, dbr_dist_name(t), topo_meaning[t]);
		fix(r, "put the drive and the GPU below one PCIe switch, or pick a GPU near the drive (--gpu-dev, fio gpu_dev_ids)");
	}
}

/* ---- limits ------------------------------------------------------------- */

static void check_regbuf(const struct dd_report *rep, struct dd_result *r)
{
	(void)rep;
	say(r, DD_OK, "an ordinary fixed buffer holds at most %llu MiB, and so does a dma-buf before v6 of the series: a larger thread's area (iodepth x max bs) is registered in pieces, each holding whole io_u buffers",
	    DBR_REGBUF_MAX_BYTES >> 20);
}

static void check_maps(const struct dd_report *rep, struct dd_result *r)
{
	(void)rep;
	say(r, DD_OK, "at most %d dma-buf mappings per device: numjobs x files on one device must fit",
	    DBR_MAX_MAPS_PER_DEV);
}

static void check_udmabuf(const struct dd_report *rep, struct dd_result *r)
{
	const struct dd_facts *f = &rep->f;

	if (!is_host(f)) {
		say(r, DD_SKIP, "gpu=%s does not use udmabuf", f->prov_name);
	} else if (f->udmabuf_limit_mb > 0) {
		say(r, DD_OK, "udmabuf.size_limit_mb = %ld: with gpu=host one fio thread's buffer may be up to %ld MiB",
		    f->udmabuf_limit_mb, f->udmabuf_limit_mb);
		fix(r, "raise it with udmabuf.size_limit_mb=N on the kernel command line (or modprobe udmabuf size_limit_mb=N)");
	} else if (f->export_err) {
		say(r, DD_SKIP, "udmabuf is not available (see gpu.export)");
	} else {
		say(r, DD_WARN, "udmabuf.size_limit_mb unknown (64 MiB by default)");
	}
}

static const struct dd_check {
	const char *id;
	dd_check_fn fn;
} checks[] = {
	{ "kernel.release",	check_release },
	{ "kernel.io_uring",	check_io_uring },
	{ "kernel.series",	check_series },
	{ "kernel.p2pdma",	check_p2pdma },
	{ "device.blockdev",	check_blockdev },
	{ "device.nvme",	check_nvme },
	{ "device.multipath",	check_multipath },
	{ "device.odirect",	check_odirect },
	{ "device.block_size",	check_block_size },
	{ "device.max_sectors",	check_max_sectors },
	{ "iommu.group",	check_iommu_group },
	{ "iommu.cmdline",	check_iommu_cmdline },
	{ "gpu.runtime",	check_gpu_runtime },
	{ "gpu.device",		check_gpu_device },
	{ "gpu.export",		check_gpu_export },
	{ "gpu.pci",		check_gpu_pci },
	{ "topology.path",	check_topology },
	{ "limits.regbuf",	check_regbuf },
	{ "limits.maps",	check_maps },
	{ "limits.udmabuf",	check_udmabuf },
};

_Static_assert(sizeof(checks) / sizeof(checks[0]) <= DD_MAX_RESULTS,
	       "room for every check");

void dd_judge(struct dd_report *rep)
{
	size_t i;

	rep->ready = true;
	for (i = 0; i < sizeof(checks) / sizeof(checks[0]); i++) {
		struct dd_result *r = &rep->r[rep->nr++];

		memset(r, 0, sizeof(*r));
		r->id = checks[i].id;
		checks[i].fn(rep, r);
		if (r->status == DD_FAIL)
			rep->ready = false;
	}
}
