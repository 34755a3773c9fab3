// SPDX-License-Identifier: MIT
/*
 * CUDA memory provider: NVIDIA GPU memory through the CUDA driver API.
 *
 * libcuda.so.1 is opened at run time, so one engine build runs on machines
 * with or without the NVIDIA driver; cuda.h is needed at build time only,
 * for the types and the versioned entry point names (cuMemAlloc is
 * cuMemAlloc_v2 in the library, and so on).
 *
 * Per fio thread, through device.c's life cycle over this file's table of
 * driver calls: the device's primary context (retained, made current by
 * every entry point since fio may call from any thread of the job), a
 * cuMemAlloc allocation rounded to the device's allocation granularity and
 * checked to be on the device asked for, a host shadow of the same size
 * (anonymous pages, page-locked with cuMemHostRegister so copies are DMA,
 * and still ordinary user pages that io_uring can register as a fixed
 * buffer; cuMemHostAlloc memory is not), and the shared copy stream
 * (gpu/copy/stream.c): one non-blocking stream, blocking-sync events (a
 * wait spins briefly, then sleeps), cuMemcpyBatchAsync where the driver has
 * it (CUDA 12.8+), found at run time, and the copy kernels (kernels.h), JIT
 * compiled from PTX by the driver into one module per device for the
 * process, which reaches the shadow through its device mapping.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda.h>

#include "device.h"
#include "kernels.h"
#include "provider.h"
#include "runtime.h"

#define CUDA_LIB	"libcuda.so.1"

/* ------------------------------------------------------------------------ */
/* the driver API, resolved once per process                                */

/* cuda.h maps API names onto versioned symbols: resolve what it maps to. */
#define CU_SYM_STR(x)	#x
#define CU_SYM(x)	CU_SYM_STR(x)

struct cu_api {
	__typeof__(cuGetErrorName) *GetErrorName;
	__typeof__(cuInit) *Init;
	__typeof__(cuDeviceGetCount) *DeviceGetCount;
	__typeof__(cuDeviceGet) *DeviceGet;
	__typeof__(cuDeviceGetAttribute) *DeviceGetAttribute;
	__typeof__(cuDevicePrimaryCtxRetain) *PrimaryCtxRetain;
	__typeof__(cuDevicePrimaryCtxRelease) *PrimaryCtxRelease;
	__typeof__(cuCtxSetCurrent) *CtxSetCurrent;
	__typeof__(cuMemGetAllocationGranularity) *MemGetAllocationGranularity;
	__typeof__(cuMemAlloc) *MemAlloc;
	__typeof__(cuMemFree) *MemFree;
	__typeof__(cuPointerGetAttribute) *PointerGetAttribute;
	__typeof__(cuMemGetHandleForAddressRange) *MemGetHandleForAddressRange;
	__typeof__(cuMemHostRegister) *MemHostRegister;
	__typeof__(cuMemHostUnregister) *MemHostUnregister;
	__typeof__(cuMemHostGetDevicePointer) *MemHostGetDevicePointer;
	__typeof__(cuStreamCreate) *StreamCreate;
	__typeof__(cuStreamSynchronize) *StreamSynchronize;
	__typeof__(cuStreamDestroy) *StreamDestroy;
	__typeof__(cuEventCreate) *EventCreate;
	__typeof__(cuEventRecord) *EventRecord;
	__typeof__(cuEventQuery) *EventQuery;
	__typeof__(cuEventSynchronize) *EventSynchronize;
	__typeof__(cuEventDestroy) *EventDestroy;
	__typeof__(cuMemcpyHtoDAsync) *MemcpyHtoDAsync;
	__typeof__(cuMemcpyDtoHAsync) *MemcpyDtoHAsync;
	/* optional: CUDA 12.8 (with failIdx) and CUDA 13 (_v2, without) */
	CUresult (*MemcpyBatchAsync_v1)(CUdeviceptr *, CUdeviceptr *, size_t *,
					size_t, void *, size_t *, size_t,
					size_t *, CUstream);
	CUresult (*MemcpyBatchAsync_v2)(CUdeviceptr *, CUdeviceptr *, size_t *,
					size_t, void *, size_t *, size_t,
					CUstream);
	/* optional: the device's PCI address */
	CUresult (*DeviceGetPCIBusId)(char *, int, CUdevice);
	/* optional: stream memory operations (CUDA 12 names it _v2) */
	CUresult (*StreamWriteValue64)(CUstream, CUdeviceptr, cuuint64_t,
				       unsigned int);
	/* optional: the copy kernels (kernels.h) */
	__typeof__(cuModuleLoadDataEx) *ModuleLoadDataEx;
	__typeof__(cuModuleGetFunction) *ModuleGetFunction;
	__typeof__(cuModuleUnload) *ModuleUnload;
	__typeof__(cuLaunchKernel) *LaunchKernel;
};

#define CU_ENTRY(field, fn) { offsetof(struct cu_api, field), CU_SYM(fn) }

static const struct {
	size_t off;
	const char *sym;
} cu_syms[] = {
	CU_ENTRY(GetErrorName, cuGetErrorName),
	CU_ENTRY(Init, cuInit),
	CU_ENTRY(DeviceGetCount, cuDeviceGetCount),
	CU_ENTRY(DeviceGet, cuDeviceGet),
	CU_ENTRY(DeviceGetAttribute, cuDeviceGetAttribute),
	CU_ENTRY(PrimaryCtxRetain, cuDevicePrimaryCtxRetain),
	CU_ENTRY(PrimaryCtxRelease, cuDevicePrimaryCtxRelease),
	CU_ENTRY(CtxSetCurrent, cuCtxSetCurrent),
	CU_ENTRY(MemGetAllocationGranularity, cuMemGetAllocationGranularity),
	CU_ENTRY(MemAlloc, cuMemAlloc),
	CU_ENTRY(MemFree, cuMemFree),
	CU_ENTRY(PointerGetAttribute, cuPointerGetAttribute),
	CU_ENTRY(MemGetHandleForAddressRange, cuMemGetHandleForAddressRange),
	CU_ENTRY(MemHostRegister, cuMemHostRegister),
	CU_ENTRY(MemHostUnregister, cuMemHostUnregister),
	CU_ENTRY(MemHostGetDevicePointer, cuMemHostGetDevicePointer),
	CU_ENTRY(StreamCreate, cuStreamCreate),
	CU_ENTRY(StreamSynchronize, cuStreamSynchronize),
	CU_ENTRY(StreamDestroy, cuStreamDestroy),
	CU_ENTRY(EventCreate, cuEventCreate),
	CU_ENTRY(EventRecord, cuEventRecord),
	CU_ENTRY(EventQuery, cuEventQuery),
	CU_ENTRY(EventSynchronize, cuEventSynchronize),
	CU_ENTRY(EventDestroy, cuEventDestroy),
	CU_ENTRY(MemcpyHtoDAsync, cuMemcpyHtoDAsync),
	CU_ENTRY(MemcpyDtoHAsync, cuMemcpyDtoHAsync),
};

static struct cu_api cu;
static pthread_once_t cu_once = PTHREAD_ONCE_INIT;
static int cu_load_err;
static char cu_load_why[160];

/* The batch call's attribute, as CUDA 12.8+ lays it out (cuda.h may be
 * older than the driver): copies read their source in stream order. */
struct cu_memcpy_attr {
	int src_access_order;	/* CU_MEMCPY_SRC_ACCESS_ORDER_STREAM = 1 */
	struct { int type; int id; } src_loc, dst_loc;
	unsigned int flags;
};

static void cu_load_optional(void *lib)
{
	*(void **)&cu.DeviceGetPCIBusId = dlsym(lib, "cuDeviceGetPCIBusId");
	*(void **)&cu.StreamWriteValue64 = dlsym(lib, "cuStreamWriteValue64_v2");
	if (!cu.StreamWriteValue64)
		*(void **)&cu.StreamWriteValue64 = dlsym(lib, "cuStreamWriteValue64");
	*(void **)&cu.MemcpyBatchAsync_v2 = dlsym(lib, "cuMemcpyBatchAsync_v2");
	if (!cu.MemcpyBatchAsync_v2)
		*(void **)&cu.MemcpyBatchAsync_v1 = dlsym(lib, "cuMemcpyBatchAsync");
	*(void **)&cu.ModuleLoadDataEx = dlsym(lib, CU_SYM(cuModuleLoadDataEx));
	*(void **)&cu.ModuleGetFunction = dlsym(lib, CU_SYM(cuModuleGetFunction));
	*(void **)&cu.ModuleUnload = dlsym(lib, CU_SYM(cuModuleUnload));
	*(void **)&cu.LaunchKernel = dlsym(lib, CU_SYM(cuLaunchKernel));
}

/* The library stays loaded for the life of the process, as CUDA expects. */
static void cu_load(void)
{
	void *lib = dlopen(CUDA_LIB, RTLD_NOW | RTLD_LOCAL);
	size_t i;

	if (!lib) {
		snprintf(cu_load_why, sizeof(cu_load_why),
			 "%s not found: install the NVIDIA driver (the CUDA toolkit alone does not ship it)",
			 CUDA_LIB);
		cu_load_err = -ENOENT;
		return;
	}
	for (i = 0; i < sizeof(cu_syms) / sizeof(cu_syms[0]); i++) {
		void *fn = dlsym(lib, cu_syms[i].sym);

		if (!fn) {
			snprintf(cu_load_why, sizeof(cu_load_why),
				 "%s has no %s: the NVIDIA driver is too old (dma-buf export needs R515 or later); upgrade it",
				 CUDA_LIB, cu_syms[i].sym);
			cu_load_err = -ENOSYS;
			dlclose(lib);
			return;
		}
		memcpy((char *)&cu + cu_syms[i].off, &fn, sizeof(fn));
	}
	cu_load_optional(lib);
}

static int cu_api_get(char *why, size_t len)
{
	pthread_once(&cu_once, cu_load);
	if (cu_load_err)
		snprintf(why, len, "%s", cu_load_why);
	return cu_load_err;
}

/* CUDA_ERROR_STUB_LIBRARY, which headers before CUDA 11.1 lack */
#define CU_STUB_LIBRARY	34

/*
 * The error's name, from the driver where it knows it, else its number
 * (the toolkit's stub library knows none: it answers everything with 34).
 */
static const char *cu_name(CUresult r)
{
	static __thread char num[48];
	const char *s = NULL;

	if ((int)r == CU_STUB_LIBRARY)
		return "CUDA_ERROR_STUB_LIBRARY (34)";
	if (cu.GetErrorName(r, &s) == CUDA_SUCCESS && s)
		return s;
	snprintf(num, sizeof(num), "CUDA error %d", (int)r);
	return num;
}

static const struct gpu_errno_map cu_errnos[] = {
	{ CUDA_ERROR_OUT_OF_MEMORY,		-ENOMEM },
	{ CUDA_ERROR_NO_DEVICE,			-ENODEV },
	{ CUDA_ERROR_INVALID_DEVICE,		-ENODEV },
	{ CUDA_ERROR_NOT_SUPPORTED,		-EOPNOTSUPP },
	{ CUDA_ERROR_INVALID_VALUE,		-EINVAL },
	{ CUDA_ERROR_NOT_PERMITTED,		-EPERM },
	{ CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, -EEXIST },
};

static int cu_errno(CUresult r)
{
	return gpu_errno_of(cu_errnos, sizeof(cu_errnos) / sizeof(cu_errnos[0]),
			    (int)r);
}

/* Record "what: CUDA_ERROR_X" in b->why and turn r into a negative errno. */
static int cu_fail(struct gpu_buf *b, CUresult r, const char *what)
{
	snprintf(b->why, sizeof(b->why), "%s: %s", what, cu_name(r));
	return cu_errno(r);
}

/* ------------------------------------------------------------------------ */
/* the device life cycle's calls (device.c)                                 */

static int cuda_probe(char *why, size_t len)
{
	CUresult r;
	int n = 0, ret;

	ret = cu_api_get(why, len);
	if (ret < 0)
		return ret;
	r = cu.Init(0);
	if (r == CUDA_ERROR_NO_DEVICE) {
		snprintf(why, len, "cuInit: %s (no NVIDIA GPU visible: check nvidia-smi and CUDA_VISIBLE_DEVICES)",
			 cu_name(r));
		return -ENODEV;
	}
	if ((int)r == CU_STUB_LIBRARY) {
		snprintf(why, len, "cuInit: %s: the libcuda.so.1 loaded is the CUDA toolkit's stub, not the driver's (check LD_LIBRARY_PATH for .../lib64/stubs, and ldconfig -p | grep libcuda)",
			 cu_name(r));
		return -ENXIO;
	}
	if (r != CUDA_SUCCESS) {
		snprintf(why, len, "cuInit: %s (check the driver with nvidia-smi)",
			 cu_name(r));
		return cu_errno(r) == -EIO ? -ENXIO : cu_errno(r);
	}
	r = cu.DeviceGetCount(&n);
	if (r != CUDA_SUCCESS) {
		snprintf(why, len, "cuDeviceGetCount: %s", cu_name(r));
		return cu_errno(r);
	}
	if (!n) {
		snprintf(why, len, "the NVIDIA driver reports no devices (check nvidia-smi and CUDA_VISIBLE_DEVICES)");
		return -ENODEV;
	}
	return n;
}

/*
 * Every entry point runs on whatever thread fio calls it from, so the
 * context is made current each time; the thread remembers which one it made
 * current, which saves a driver call per copy, fence and poll.
 */
static __thread CUcontext cu_current;

static int cuda_enter(struct gpu_buf *b)
{
	struct gpu_dev *d = b->priv;
	CUresult r;

	if (cu_current == d->ctx)
		return 0;
	r = cu.CtxSetCurrent(d->ctx);
	if (r != CUDA_SUCCESS)
		return cu_fail(b, r, "cuCtxSetCurrent");
	cu_current = d->ctx;
	return 0;
}

/* the device's primary context, retained for the buffer's life */
static int rt_open(struct gpu_buf *b, struct gpu_dev *d)
{
	CUcontext ctx;
	CUdevice dev;
	CUresult r;

	r = cu.DeviceGet(&dev, b->dev_id);
	if (r != CUDA_SUCCESS)
		return cu_fail(b, r, "cuDeviceGet");
	r = cu.PrimaryCtxRetain(&ctx, dev);
	if (r != CUDA_SUCCESS)
		return cu_fail(b, r, "cuDevicePrimaryCtxRetain");
	d->handle = dev;
	d->ctx = ctx;
	return 0;
}

static void rt_close(struct gpu_dev *d)
{
	if (!d->ctx)
		return;
	cu.CtxSetCurrent(NULL);
	cu_current = NULL;
	cu.PrimaryCtxRelease(d->handle);
	d->ctx = NULL;
}

/* cuMemAlloc's rounding: the device's minimum allocation granularity. */
static size_t cuda_granularity(struct gpu_dev *d)
{
	CUmemAllocationProp prop = {
		.type		= CU_MEM_ALLOCATION_TYPE_PINNED,
		.location	= {
			.type	= CU_MEM_LOCATION_TYPE_DEVICE,
			.id	= d->handle,
		},
	};
	size_t gran = 0;

	if (cu.MemGetAllocationGranularity(&gran, &prop,
			CU_MEM_ALLOC_GRANULARITY_MINIMUM) != CUDA_SUCCESS ||
	    !gran || (gran & (gran - 1)))
		gran = 2UL << 20;
	return gran;
}

/* Device memory on dev_id: the driver must say the allocation is there. */
static int rt_mem_alloc(struct gpu_buf *b, struct gpu_dev *d)
{
	size_t gran = cuda_granularity(d);
	CUdeviceptr dptr = 0;
	int ordinal = -1;
	CUresult r;

	d->dsize = (b->size + gran - 1) & ~(gran - 1);
	r = cu.MemAlloc(&dptr, d->dsize);
	if (r != CUDA_SUCCESS)
		return cu_fail(b, r, "cuMemAlloc");
	d->dptr = dptr;
	r = cu.PointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
				   dptr);
	if (r != CUDA_SUCCESS) {
		cu_fail(b, r, "cuPointerGetAttribute(DEVICE_ORDINAL)");
		goto err_free;
	}
	if (ordinal != b->dev_id) {
		snprintf(b->why, sizeof(b->why), "memory for device %d landed on device %d",
			 b->dev_id, ordinal);
		goto err_free;
	}
	return 0;

err_free:
	cu.MemFree(dptr);
	d->dptr = 0;
	return -EIO;
}

static void rt_mem_free(struct gpu_dev *d)
{
	cu.MemFree(d->dptr);
}

/* DEVICEMAP: the copy kernel reaches the shadow through its mapping */
static int rt_host_register(struct gpu_buf *b, void *host, size_t len)
{
	CUresult r = cu.MemHostRegister(host, len, CU_MEMHOSTREGISTER_DEVICEMAP);

	return r == CUDA_SUCCESS ? 0 :
	       cu_fail(b, r, "cuMemHostRegister of the host buffer (raise ulimit -l?)");
}

static void rt_host_unregister(void *host)
{
	cu.MemHostUnregister(host);
}

/*
 * CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE (CUDA 12.8+, driver 570.86+),
 * spelled out for older cuda.h: a dma-buf of the GPU's PCIe BAR1 addresses.
 * On Grace-Hopper and Grace-Blackwell flags=0 gives one of C2C addresses,
 * which an NVMe controller cannot reach; x86 drivers may refuse the flag
 * (CUDA_ERROR_NOT_SUPPORTED on an H200 with driver 580), and flags=0 is
 * PCIe there anyway.
 */
#define DBR_CU_DMABUF_PCIE	0x1ULL

/*
 * Is the GPU linked to the CPU by NVLink-C2C? cuda.h documents
 * CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED as "link between the
 * device and the host supports all native atomic operations": a property
 * of the link itself, which PCIe does not have (PCIe atomics are a subset)
 * and C2C does. (PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES is also set
 * there, but it describes address translation, not the link.)
 */
static bool cuda_c2c(struct gpu_dev *d)
{
	int atomics = 0;

	return cu.DeviceGetAttribute(&atomics,
			CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED,
			d->handle) == CUDA_SUCCESS && atomics == 1;
}

static CUresult cuda_handle(struct gpu_dev *d, size_t off, size_t len,
			    unsigned long long flags, int *fd)
{
	CUresult r = cu.MemGetHandleForAddressRange(fd, d->dptr + off, len,
					CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD,
					flags);

	if (r != CUDA_SUCCESS)
		*fd = -1;
	return r;
}

/* [off, off + len) as a dma-buf with the mapping flags the export settled */
static int rt_export_range(struct gpu_buf *b, struct gpu_dev *d, size_t off,
			   size_t len, int *fd)
{
	CUresult r = cuda_handle(d, off, len, d->export_flags, fd);

	return r == CUDA_SUCCESS ? 0 :
	       cu_fail(b, r, "cuMemGetHandleForAddressRange(DMA_BUF_FD)");
}

/*
 * The PCIe BAR1 mapping first; where the driver has no such flag
 * (CUDA_ERROR_NOT_SUPPORTED, CUDA_ERROR_INVALID_VALUE) the default one,
 * unless the GPU sits behind C2C, where the default carries addresses the
 * NVMe controller cannot reach. b->export_kind says which.
 */
static int cuda_export_mapped(struct gpu_buf *b, struct gpu_dev *d, int *fd)
{
	CUresult r, r0;

	r = cuda_handle(d, 0, b->size, DBR_CU_DMABUF_PCIE, fd);
	if (r == CUDA_SUCCESS) {
		d->export_flags = DBR_CU_DMABUF_PCIE;
		snprintf(b->export_kind, sizeof(b->export_kind),
			 "PCIe BAR1 mapping (CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE)");
		return 0;
	}
	if (r != CUDA_ERROR_NOT_SUPPORTED && r != CUDA_ERROR_INVALID_VALUE)
		return cu_fail(b, r, "cuMemGetHandleForAddressRange(DMA_BUF_FD, MAPPING_TYPE_PCIE)");
	if (cuda_c2c(d)) {
		snprintf(b->why, sizeof(b->why), "device %d is on NVLink-C2C and refused the PCIe BAR1 dma-buf (%s): its default one has C2C addresses NVMe cannot reach; needs CUDA 12.8+, driver 570.86+",
			 b->dev_id, cu_name(r));
		return -EOPNOTSUPP;
	}
	r0 = cuda_handle(d, 0, b->size, 0, fd);
	if (r0 != CUDA_SUCCESS)
		return cu_fail(b, r0, "cuMemGetHandleForAddressRange(DMA_BUF_FD)");
	d->export_flags = 0;
	snprintf(b->export_kind, sizeof(b->export_kind),
		 "default mapping (flags=0: the PCIe BAR1 flag answered %s; the GPU is on PCIe, not C2C)",
		 cu_name(r));
	return 0;
}

static int rt_export(struct gpu_buf *b, struct gpu_dev *d, int *fd)
{
	int supported = 0;
	CUresult r;

	r = cu.DeviceGetAttribute(&supported,
				  CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED,
				  d->handle);
	if (r != CUDA_SUCCESS)
		return cu_fail(b, r, "cuDeviceGetAttribute(DMA_BUF_SUPPORTED)");
	if (!supported) {
		snprintf(b->why, sizeof(b->why), "device %d cannot export dma-bufs (CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED=0: needs the open kernel modules, nvidia-open, and a Turing or newer GPU)",
			 b->dev_id);
		return -EOPNOTSUPP;
	}
	return cuda_export_mapped(b, d, fd);
}

/* ------------------------------------------------------------------------ */
/* the copy stream's calls (stream.c)                                       */

static int rt_stream_create(struct gpu_buf *b, void **stream)
{
	CUresult r = cu.StreamCreate((CUstream *)stream, CU_STREAM_NON_BLOCKING);

	return r == CUDA_SUCCESS ? 0 : cu_fail(b, r, "cuStreamCreate");
}

static int rt_stream_sync(struct gpu_buf *b, void *stream)
{
	CUresult r = cu.StreamSynchronize(stream);

	return r == CUDA_SUCCESS ? 0 : cu_fail(b, r, "cuStreamSynchronize");
}

static void rt_stream_destroy(void *stream)
{
	cu.StreamDestroy(stream);
}

static int rt_event_create(struct gpu_buf *b, void **event)
{
	CUresult r = cu.EventCreate((CUevent *)event, CU_EVENT_DISABLE_TIMING |
				    CU_EVENT_BLOCKING_SYNC);

	return r == CUDA_SUCCESS ? 0 : cu_fail(b, r, "cuEventCreate");
}

static void rt_event_destroy(void *event)
{
	cu.EventDestroy(event);
}

static int rt_event_record(struct gpu_buf *b, void *event, void *stream)
{
	CUresult r = cu.EventRecord(event, stream);

	return r == CUDA_SUCCESS ? 0 : cu_fail(b, r, "cuEventRecord");
}

static int rt_event_query(struct gpu_buf *b, void *event)
{
	CUresult r = cu.EventQuery(event);

	if (r == CUDA_ERROR_NOT_READY)
		return 0;
	return r == CUDA_SUCCESS ? 1 : cu_fail(b, r, "cuEventQuery");
}

static int rt_event_sync(struct gpu_buf *b, void *event)
{
	CUresult r = cu.EventSynchronize(event);

	return r == CUDA_SUCCESS ? 0 : cu_fail(b, r, "cuEventSynchronize");
}

static int rt_copy(struct gpu_buf *b, void *stream, enum gpu_copy_dir dir,
		   uint64_t dst, uint64_t src, size_t len)
{
	CUresult r;

	if (dir == GPU_H2D)
		r = cu.MemcpyHtoDAsync(dst, (void *)(uintptr_t)src, len, stream);
	else
		r = cu.MemcpyDtoHAsync((void *)(uintptr_t)dst, src, len, stream);
	if (r == CUDA_SUCCESS)
		return 0;
	return cu_fail(b, r, dir == GPU_H2D ? "cuMemcpyHtoDAsync" :
					      "cuMemcpyDtoHAsync");
}

/* Host and device addresses are unified: one call takes both directions. */
static int rt_copy_batch(struct gpu_buf *b, void *stream, uint64_t *dst,
			 uint64_t *src, size_t *len, size_t n, size_t *done)
{
	struct cu_memcpy_attr attr = { .src_access_order = 1 };
	size_t attr_idx = 0, fail_idx = SIZE_MAX;
	CUresult r;

	*done = 0;
	if (cu.MemcpyBatchAsync_v2)
		r = cu.MemcpyBatchAsync_v2((CUdeviceptr *)dst,
					   (CUdeviceptr *)src, len, n, &attr,
					   &attr_idx, 1, stream);
	else if (cu.MemcpyBatchAsync_v1)
		r = cu.MemcpyBatchAsync_v1((CUdeviceptr *)dst,
					   (CUdeviceptr *)src, len, n, &attr,
					   &attr_idx, 1, &fail_idx, stream);
	else
		return -ENOSYS;
	if (r == CUDA_SUCCESS)
		return 0;
	if (fail_idx < n)
		*done = fail_idx;
	return cu_fail(b, r, "cuMemcpyBatchAsync");
}

static int rt_map_host(struct gpu_buf *b, void *host, size_t len,
		       uint64_t *dev_addr)
{
	CUdeviceptr d = 0;
	CUresult r;

	r = cu.MemHostRegister(host, len, CU_MEMHOSTREGISTER_DEVICEMAP);
	if (r != CUDA_SUCCESS)
		return cu_fail(b, r, "cuMemHostRegister(DEVICEMAP)");
	r = cu.MemHostGetDevicePointer(&d, host, 0);
	if (r != CUDA_SUCCESS) {
		cu.MemHostUnregister(host);
		return cu_fail(b, r, "cuMemHostGetDevicePointer");
	}
	*dev_addr = d;
	return 0;
}

static void rt_unmap_host(void *host)
{
	cu.MemHostUnregister(host);
}

static int rt_write_value(struct gpu_buf *b, void *stream, uint64_t dev_addr,
			  uint64_t value)
{
	CUresult r;

	if (!cu.StreamWriteValue64)
		return -ENOSYS;
	r = cu.StreamWriteValue64(stream, dev_addr, value,
				  CU_STREAM_WRITE_VALUE_DEFAULT);
	return r == CUDA_SUCCESS ? 0 : cu_fail(b, r, "cuStreamWriteValue64");
}

/*
 * A copy kernel (kernels.h): one module per device and kernel for the
 * whole process, shared by every stream on that device and unloaded when the
 * last lets go. cuModuleLoadData and cuModuleUnload wait for every kernel
 * running in the context (scripts/gpu-proof.d/ctx_block.c, on the H200): a
 * job thread loading its own module while another thread's resident kernel
 * ran waited for that thread's whole run, so the job's threads ran one after
 * another, each for its full runtime, and fio added up their rates.
 */
struct cu_kcopy {
	CUmodule mod;
	CUfunction fn;		/* dbr_kcopy or dbr_kring */
	int dev;		/* the device's ordinal */
	const char *ptx;	/* the PTX text it came from (static) */
	unsigned int users;
	/* dbr_kcopy counts a fencing launch's blocks in its stream's slot of
	 * dbr_kcopy_count[] (kcopy_ptx.h): the slots the users hold */
	uint32_t slots[GPU_KCOPY_SLOTS / 32];
	struct cu_kcopy *next;
};

/* What a stream holds: the device's module and its own counter slot. */
struct cu_kuse {
	struct cu_kcopy *k;
	uint32_t slot;
};

static pthread_mutex_t kmods_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cu_kcopy *kmods;

static int rt_host_dev_addr(struct gpu_buf *b, void *host, uint64_t *dev_addr)
{
	CUdeviceptr d = 0;
	CUresult r = cu.MemHostGetDevicePointer(&d, host, 0);

	if (r != CUDA_SUCCESS)
		return cu_fail(b, r, "cuMemHostGetDevicePointer of the host buffer");
	*dev_addr = d;
	return 0;
}

static struct cu_kcopy *kmod_find(int dev, const char *ptx)
{
	struct cu_kcopy *k;

	for (k = kmods; k; k = k->next)
		if (k->dev == dev && k->ptx == ptx)
			return k;
	return NULL;
}

/* The driver compiles the PTX for this GPU; its first complaint goes in why. */
static int kmod_load(struct gpu_buf *b, const char *ptx, const char *entry,
		     struct cu_kcopy **out)
{
	char log[96] = "";
	CUjit_option opt[] = { CU_JIT_ERROR_LOG_BUFFER,
			       CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES };
	void *val[] = { log, (void *)(uintptr_t)sizeof(log) };
	struct cu_kcopy *k;
	CUresult r;

	k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	r = cu.ModuleLoadDataEx(&k->mod, ptx, 2, opt, val);
	if (r != CUDA_SUCCESS) {
		log[strcspn(log, "\n")] = '\0';
		snprintf(b->why, sizeof(b->why), "cuModuleLoadDataEx: %s%s%s",
			 cu_name(r), log[0] ? ": " : "", log);
		free(k);
		return cu_errno(r);
	}
	r = cu.ModuleGetFunction(&k->fn, k->mod, entry);
	if (r != CUDA_SUCCESS) {
		cu.ModuleUnload(k->mod);
		free(k);
		return cu_fail(b, r, "cuModuleGetFunction");
	}
	k->dev = b->dev_id;
	k->ptx = ptx;
	*out = k;
	return 0;
}

/* A free counter slot of k's, taken; -1: every slot is held. */
static int kmod_take_slot(struct cu_kcopy *k)
{
	unsigned int i;

	for (i = 0; i < GPU_KCOPY_SLOTS; i++)
		if (!(k->slots[i / 32] & (1u << (i % 32)))) {
			k->slots[i / 32] |= 1u << (i % 32);
			return (int)i;
		}
	return -1;
}

/* The device's module for ptx, loaded by the first stream that asks. */
static int rt_kernel_load(struct gpu_buf *b, const char *ptx,
			  const char *entry, void **mod)
{
	struct cu_kuse *u;
	struct cu_kcopy *k;
	int ret = 0, slot;

	if (!cu.ModuleLoadDataEx || !cu.ModuleGetFunction ||
	    !cu.ModuleUnload || !cu.LaunchKernel) {
		snprintf(b->why, sizeof(b->why), "%s lacks cuModuleLoadDataEx or cuLaunchKernel",
			 CUDA_LIB);
		return -ENOSYS;
	}
	u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	pthread_mutex_lock(&kmods_lock);
	k = kmod_find(b->dev_id, ptx);
	if (!k) {
		ret = kmod_load(b, ptx, entry, &k);
		if (!ret) {
			k->next = kmods;
			kmods = k;
		}
	}
	slot = ret ? -1 : kmod_take_slot(k);
	if (!ret && slot < 0) {
		snprintf(b->why, sizeof(b->why), "%u copy streams already use the copy kernel on device %d",
			 GPU_KCOPY_SLOTS, b->dev_id);
		ret = -EBUSY;
	}
	if (!ret) {
		k->users++;
		u->k = k;
		u->slot = (uint32_t)slot;
		*mod = u;
	}
	pthread_mutex_unlock(&kmods_lock);
	if (ret)
		free(u);
	return ret;
}

/*
 * The slot goes back with its count at 0 (every fencing launch's last block
 * resets it); the last stream to let go unloads the module: no kernel of it
 * runs by then.
 */
static void rt_kernel_unload(void *mod)
{
	struct cu_kuse *u = mod;
	struct cu_kcopy *k = u->k, **p;

	pthread_mutex_lock(&kmods_lock);
	k->slots[u->slot / 32] &= ~(1u << (u->slot % 32));
	free(u);
	if (--k->users == 0) {
		for (p = &kmods; *p != k; p = &(*p)->next)
			;
		*p = k->next;
		cu.ModuleUnload(k->mod);
		free(k);
	}
	pthread_mutex_unlock(&kmods_lock);
}

static int rt_kernel_launch(struct gpu_buf *b, void *stream, void *mod,
			    const struct gpu_klaunch *l)
{
	struct cu_kuse *u = mod;
	void *args[] = { (void *)&l->host, (void *)&l->dev, (void *)&l->flag,
			 (void *)&l->ticket, (void *)l->d, &u->slot };
	CUresult r;

	r = cu.LaunchKernel(u->k->fn, l->n, l->chunks, 1,
			    GPU_KCOPY_CHUNK / GPU_KCOPY_ALIGN, 1, 1, 0, stream,
			    args, NULL);
	return r == CUDA_SUCCESS ? 0 : cu_fail(b, r, "cuLaunchKernel");
}

static int rt_kernel_start(struct gpu_buf *b, void *stream, void *mod,
			   uint64_t ring, uint64_t host, uint64_t dev)
{
	struct cu_kuse *u = mod;
	void *args[] = { &ring, &host, &dev };
	CUresult r;

	r = cu.LaunchKernel(u->k->fn, 1, 1, 1, GPU_KRING_THREADS, 1, 1, 0, stream,
			    args, NULL);
	return r == CUDA_SUCCESS ? 0 : cu_fail(b, r, "cuLaunchKernel(dbr_kring)");
}

static const struct gpu_runtime cuda_runtime = {
	.probe		= cuda_probe,
	.open		= rt_open,
	.close		= rt_close,
	.mem_alloc	= rt_mem_alloc,
	.mem_alloc_name	= "cuMemAlloc",
	.mem_free	= rt_mem_free,
	.host_register	= rt_host_register,
	.host_unregister = rt_host_unregister,
	.export		= rt_export,
	.export_range	= rt_export_range,
	.enter		= cuda_enter,
	.stream_create	= rt_stream_create,
	.stream_sync	= rt_stream_sync,
	.stream_destroy	= rt_stream_destroy,
	.event_create	= rt_event_create,
	.event_destroy	= rt_event_destroy,
	.event_record	= rt_event_record,
	.event_query	= rt_event_query,
	.event_sync	= rt_event_sync,
	.copy		= rt_copy,
	.copy_batch	= rt_copy_batch,
	.map_host	= rt_map_host,
	.unmap_host	= rt_unmap_host,
	.write_value	= rt_write_value,
	.host_dev_addr	= rt_host_dev_addr,
	.kernel_load	= rt_kernel_load,
	.kernel_unload	= rt_kernel_unload,
	.kernel_launch	= rt_kernel_launch,
	.kernel_start	= rt_kernel_start,
};

static int cuda_pci_addr(int dev, char *buf, size_t len)
{
	char why[160];
	CUdevice cudev;
	int ret = cu_api_get(why, sizeof(why));

	if (ret < 0)
		return ret;
	if (!cu.DeviceGetPCIBusId)
		return -ENOSYS;
	if (len > INT_MAX)
		len = INT_MAX;
	if (cu.Init(0) != CUDA_SUCCESS || cu.DeviceGet(&cudev, dev) != CUDA_SUCCESS)
		return -ENODEV;
	return cu_errno(cu.DeviceGetPCIBusId(buf, (int)len, cudev));
}

static int cuda_dmabuf_ok(int dev, char *why, size_t len)
{
	CUdevice cudev;
	CUresult r;
	int ok = 0, ret = cu_api_get(why, len);

	if (ret < 0)
		return ret;
	r = cu.DeviceGet(&cudev, dev);
	if (r == CUDA_SUCCESS)
		r = cu.DeviceGetAttribute(&ok, CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED,
					  cudev);
	if (r != CUDA_SUCCESS) {
		snprintf(why, len, "cuDeviceGetAttribute(DMA_BUF_SUPPORTED): %s",
			 cu_name(r));
		return cu_errno(r);
	}
	if (ok)
		return 0;
	snprintf(why, len, "CUDA device %d cannot export dma-bufs (CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED=0: needs the open kernel modules, nvidia-open, and a Turing or newer GPU)",
		 dev);
	return -EOPNOTSUPP;
}

/*
 * Does an MPS server serve device dev (contexts made on it are shared
 * through MPS, so job processes' kernels run together, not in turns)?
 * CU_DEVICE_ATTRIBUTE_MPS_ENABLED (133, CUDA 12.4 on); a driver without it
 * answers INVALID_VALUE: -ENOSYS, not known.
 */
#define DBR_CU_ATTR_MPS_ENABLED	((CUdevice_attribute)133)

static int cuda_mps(int dev)
{
	CUdevice cudev;
	CUresult r;
	int on = 0;

	if (cu_api_get(NULL, 0) < 0)
		return -ENOSYS;
	r = cu.DeviceGet(&cudev, dev);
	if (r == CUDA_SUCCESS)
		r = cu.DeviceGetAttribute(&on, DBR_CU_ATTR_MPS_ENABLED, cudev);
	return r != CUDA_SUCCESS ? -ENOSYS : !!on;
}

const struct gpu_provider gpu_cuda_provider = {
	.name		= "cuda",
	.help		= "NVIDIA GPU memory (libcuda.so.1)",
	.runtime	= "NVIDIA (libcuda.so.1)",
	.export_needs	= "NVIDIA's open kernel modules and a GPU with CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED; else transfer=bounce",
	.probe		= cuda_probe,
	.alloc		= gpu_dev_alloc,
	.export_dmabuf	= gpu_dev_export,
	.export_range	= gpu_dev_export_range,
	.free		= gpu_dev_free,
	.pci_addr	= cuda_pci_addr,
	.dmabuf_ok	= cuda_dmabuf_ok,
	.mps		= cuda_mps,
	.rt		= &cuda_runtime,
};
