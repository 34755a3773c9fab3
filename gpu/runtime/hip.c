// SPDX-License-Identifier: MIT
/*
 * HIP memory provider: AMD GPU memory through the HIP runtime.
 *
 * libamdhip64.so is opened at run time and everything used from it is
 * declared here (no HIP headers needed; Debian's ROCm 5.2 ones lack the
 * dma-buf export anyway). Export goes through
 * hipMemGetHandleForAddressRange(hipMemRangeHandleTypeDmaBufFd) where the
 * runtime has it (ROCm >= 6), else through ROCr's
 * hsa_amd_portable_export_dmabuf (libhsa-runtime64.so).
 *
 * Per fio thread, through device.c's life cycle over this file's table of
 * runtime calls: hipSetDevice on every entry point (the HIP runtime's
 * current device is per host thread), a hipMalloc allocation, a host shadow
 * of anonymous pages page-locked with hipHostRegister, and the shared copy
 * stream (gpu/copy/stream.c), with hipMemcpyBatchAsync where the runtime
 * has it (ROCm 7), found at run time.
 *
 * Only exercised against the test double in tests/gpu/ (no AMD GPU here).
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

#include "device.h"
#include "provider.h"
#include "runtime.h"

/* ------------------------------------------------------------------------ */
/* the part of the HIP / ROCr API used here, as the runtimes define it      */

typedef int hipError_t;
typedef struct ihipStream_t *hipStream_t;
typedef struct ihipEvent_t *hipEvent_t;
typedef void *hipDeviceptr_t;

enum {
	hipSuccess			= 0,
	hipErrorInvalidValue		= 1,
	hipErrorOutOfMemory		= 2,
	hipErrorNotInitialized		= 3,
	hipErrorNoDevice		= 100,
	hipErrorInvalidDevice		= 101,
	hipErrorNotReady		= 600,
	hipErrorNotSupported		= 801,
	hipErrorHostMemoryAlreadyRegistered = 712,
};

#define hipStreamNonBlocking		0x01
#define hipEventDisableTiming		0x02
#define hipHostRegisterDefault		0x00
#define hipHostRegisterMapped		0x02
#define hipMemRangeHandleTypeDmaBufFd	0x01

typedef int hsa_status_t;
#define HSA_STATUS_SUCCESS		0x0

struct hip_api {
	const char *(*GetErrorName)(hipError_t);
	hipError_t (*GetDeviceCount)(int *);
	hipError_t (*SetDevice)(int);
	hipError_t (*Malloc)(void **, size_t);
	hipError_t (*Free)(void *);
	hipError_t (*HostRegister)(void *, size_t, unsigned int);
	hipError_t (*HostUnregister)(void *);
	hipError_t (*StreamCreateWithFlags)(hipStream_t *, unsigned int);
	hipError_t (*StreamSynchronize)(hipStream_t);
	hipError_t (*StreamDestroy)(hipStream_t);
	hipError_t (*EventCreateWithFlags)(hipEvent_t *, unsigned int);
	hipError_t (*EventRecord)(hipEvent_t, hipStream_t);
	hipError_t (*EventQuery)(hipEvent_t);
	hipError_t (*EventSynchronize)(hipEvent_t);
	hipError_t (*EventDestroy)(hipEvent_t);
	hipError_t (*MemcpyHtoDAsync)(hipDeviceptr_t, void *, size_t,
				      hipStream_t);
	hipError_t (*MemcpyDtoHAsync)(void *, hipDeviceptr_t, size_t,
				      hipStream_t);
	/* optional: the device's PCI address */
	hipError_t (*DeviceGetPCIBusId)(char *, int, int);
	/* optional: what memory a pointer is (hipPointerAttribute_t *) */
	hipError_t (*PointerGetAttributes)(void *, const void *);
	/* optional: stream memory operations */
	hipError_t (*HostGetDevicePointer)(void **, void *, unsigned int);
	hipError_t (*StreamWriteValue64)(hipStream_t, void *, uint64_t,
					 unsigned int);
	/* optional: ROCm >= 7 */
	hipError_t (*MemcpyBatchAsync)(void **, void **, size_t *, size_t,
				       void *, size_t *, size_t, size_t *,
				       hipStream_t);
	/* optional: ROCm >= 6 */
	hipError_t (*MemGetHandleForAddressRange)(void *, hipDeviceptr_t,
						  size_t, int,
						  unsigned long long);
	/* optional: older ROCr */
	hsa_status_t (*hsa_export_dmabuf)(const void *, size_t, int *,
					  uint64_t *);
	hsa_status_t (*hsa_close_dmabuf)(int);
};

#define HIP_ENTRY(field, sym) { offsetof(struct hip_api, field), sym }

static const struct {
	size_t off;
	const char *sym;
} hip_syms[] = {
	HIP_ENTRY(GetErrorName, "hipGetErrorName"),
	HIP_ENTRY(GetDeviceCount, "hipGetDeviceCount"),
	HIP_ENTRY(SetDevice, "hipSetDevice"),
	HIP_ENTRY(Malloc, "hipMalloc"),
	HIP_ENTRY(Free, "hipFree"),
	HIP_ENTRY(HostRegister, "hipHostRegister"),
	HIP_ENTRY(HostUnregister, "hipHostUnregister"),
	HIP_ENTRY(StreamCreateWithFlags, "hipStreamCreateWithFlags"),
	HIP_ENTRY(StreamSynchronize, "hipStreamSynchronize"),
	HIP_ENTRY(StreamDestroy, "hipStreamDestroy"),
	HIP_ENTRY(EventCreateWithFlags, "hipEventCreateWithFlags"),
	HIP_ENTRY(EventRecord, "hipEventRecord"),
	HIP_ENTRY(EventQuery, "hipEventQuery"),
	HIP_ENTRY(EventSynchronize, "hipEventSynchronize"),
	HIP_ENTRY(EventDestroy, "hipEventDestroy"),
	HIP_ENTRY(MemcpyHtoDAsync, "hipMemcpyHtoDAsync"),
	HIP_ENTRY(MemcpyDtoHAsync, "hipMemcpyDtoHAsync"),
};

static const char *const hip_libs[] = {
	"libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5",
};

static const char *const hsa_libs[] = {
	"libhsa-runtime64.so.1", "libhsa-runtime64.so",
};

static struct hip_api hip;
static pthread_once_t hip_once = PTHREAD_ONCE_INIT;
static int hip_load_err;
static char hip_load_why[160];

static void *dlopen_first(const char *const *names, size_t n)
{
	void *lib = NULL;
	size_t i;

	for (i = 0; i < n && !lib; i++)
		lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
	return lib;
}

/* hsa_amd_portable_export_dmabuf: the ROCr that HIP itself loaded. */
static void hip_load_hsa(void)
{
	void *lib = dlopen_first(hsa_libs, sizeof(hsa_libs) / sizeof(hsa_libs[0]));

	if (!lib)
		return;
	*(void **)&hip.hsa_export_dmabuf = dlsym(lib, "hsa_amd_portable_export_dmabuf");
	*(void **)&hip.hsa_close_dmabuf = dlsym(lib, "hsa_amd_portable_close_dmabuf");
	if (!hip.hsa_export_dmabuf || !hip.hsa_close_dmabuf) {
		hip.hsa_export_dmabuf = NULL;
		hip.hsa_close_dmabuf = NULL;
		dlclose(lib);
	}
}

/* The libraries stay loaded for the life of the process. */
static void hip_load(void)
{
	void *lib = dlopen_first(hip_libs, sizeof(hip_libs) / sizeof(hip_libs[0]));
	size_t i;

	if (!lib) {
		snprintf(hip_load_why, sizeof(hip_load_why),
			 "libamdhip64.so not found: install ROCm's HIP runtime (hip-runtime-amd) or add its lib directory to LD_LIBRARY_PATH");
		hip_load_err = -ENOENT;
		return;
	}
	for (i = 0; i < sizeof(hip_syms) / sizeof(hip_syms[0]); i++) {
		void *fn = dlsym(lib, hip_syms[i].sym);

		if (!fn) {
			snprintf(hip_load_why, sizeof(hip_load_why),
				 "libamdhip64.so has no %s: the HIP runtime is too old; upgrade ROCm",
				 hip_syms[i].sym);
			hip_load_err = -ENOSYS;
			dlclose(lib);
			return;
		}
		memcpy((char *)&hip + hip_syms[i].off, &fn, sizeof(fn));
	}
	*(void **)&hip.MemGetHandleForAddressRange =
		dlsym(lib, "hipMemGetHandleForAddressRange");
	*(void **)&hip.MemcpyBatchAsync = dlsym(lib, "hipMemcpyBatchAsync");
	*(void **)&hip.HostGetDevicePointer = dlsym(lib, "hipHostGetDevicePointer");
	*(void **)&hip.StreamWriteValue64 = dlsym(lib, "hipStreamWriteValue64");
	*(void **)&hip.DeviceGetPCIBusId = dlsym(lib, "hipDeviceGetPCIBusId");
	*(void **)&hip.PointerGetAttributes = dlsym(lib, "hipPointerGetAttributes");
	if (!hip.MemGetHandleForAddressRange)
		hip_load_hsa();
}

static int hip_api_get(char *why, size_t len)
{
	pthread_once(&hip_once, hip_load);
	if (hip_load_err)
		snprintf(why, len, "%s", hip_load_why);
	return hip_load_err;
}

static const char *hip_name(hipError_t e)
{
	const char *s = hip.GetErrorName(e);

	return s ? s : "unknown HIP error";
}

static const struct gpu_errno_map hip_errnos[] = {
	{ hipErrorOutOfMemory,			-ENOMEM },
	{ hipErrorNoDevice,			-ENODEV },
	{ hipErrorInvalidDevice,		-ENODEV },
	{ hipErrorNotSupported,			-EOPNOTSUPP },
	{ hipErrorInvalidValue,			-EINVAL },
	{ hipErrorHostMemoryAlreadyRegistered,	-EEXIST },
};

static int hip_errno(hipError_t e)
{
	return gpu_errno_of(hip_errnos,
			    sizeof(hip_errnos) / sizeof(hip_errnos[0]), e);
}

static int hip_fail(struct gpu_buf *b, hipError_t e, const char *what)
{
	snprintf(b->why, sizeof(b->why), "%s: %s", what, hip_name(e));
	return hip_errno(e);
}

/* ------------------------------------------------------------------------ */
/* the device life cycle's calls (device.c)                                 */

static int hip_probe(char *why, size_t len)
{
	hipError_t e;
	int n = 0, ret;

	ret = hip_api_get(why, len);
	if (ret < 0)
		return ret;
	e = hip.GetDeviceCount(&n);
	if (e == hipErrorNoDevice || (e == hipSuccess && !n)) {
		snprintf(why, len, "the HIP runtime sees no AMD GPU (check rocm-smi, /dev/kfd permissions, HIP_VISIBLE_DEVICES)");
		return -ENODEV;
	}
	if (e != hipSuccess) {
		snprintf(why, len, "hipGetDeviceCount: %s (check the amdgpu driver and /dev/kfd)",
			 hip_name(e));
		return hip_errno(e) == -EIO ? -ENXIO : hip_errno(e);
	}
	return n;
}

/* The runtime's current device is per host thread: set it every time. */
static int hip_enter(struct gpu_buf *b)
{
	hipError_t e = hip.SetDevice(b->dev_id);

	return e == hipSuccess ? 0 : hip_fail(b, e, "hipSetDevice");
}

static int rt_mem_alloc(struct gpu_buf *b, struct gpu_dev *d)
{
	void *dptr = NULL;
	hipError_t e;

	e = hip.Malloc(&dptr, b->size);
	if (e != hipSuccess)
		return hip_fail(b, e, "hipMalloc");
	d->dptr = (uint64_t)(uintptr_t)dptr;
	d->dsize = b->size;
	return 0;
}

static void rt_mem_free(struct gpu_dev *d)
{
	hip.Free((void *)(uintptr_t)d->dptr);
}

static int rt_host_register(struct gpu_buf *b, void *host, size_t len)
{
	hipError_t e = hip.HostRegister(host, len, hipHostRegisterDefault);

	return e == hipSuccess ? 0 :
	       hip_fail(b, e, "hipHostRegister of the host buffer (raise ulimit -l?)");
}

static void rt_host_unregister(void *host)
{
	hip.HostUnregister(host);
}

/* older ROCr: the export through hsa_amd_portable_export_dmabuf */
static int hip_export_hsa(struct gpu_buf *b, struct gpu_dev *d, int *fd)
{
	uint64_t off = 0;
	hsa_status_t st;

	st = hip.hsa_export_dmabuf((void *)(uintptr_t)d->dptr, b->size, fd,
				   &off);
	if (st != HSA_STATUS_SUCCESS) {
		snprintf(b->why, sizeof(b->why), "hsa_amd_portable_export_dmabuf: status 0x%x (the amdgpu driver needs dma-buf export)",
			 (unsigned int)st);
		return -EOPNOTSUPP;
	}
	if (off) {
		/* the ring addresses the dma-buf from its start */
		hip.hsa_close_dmabuf(*fd);
		*fd = -1;
		snprintf(b->why, sizeof(b->why), "hsa_amd_portable_export_dmabuf: allocation starts %llu bytes into the dma-buf",
			 (unsigned long long)off);
		return -EINVAL;
	}
	d->rt_fd = true;
	return 0;
}

static int rt_export(struct gpu_buf *b, struct gpu_dev *d, int *fd)
{
	hipError_t e;

	if (!hip.MemGetHandleForAddressRange) {
		if (hip.hsa_export_dmabuf)
			return hip_export_hsa(b, d, fd);
		snprintf(b->why, sizeof(b->why), "this ROCm has neither hipMemGetHandleForAddressRange (ROCm >= 6) nor hsa_amd_portable_export_dmabuf; upgrade ROCm");
		return -EOPNOTSUPP;
	}
	e = hip.MemGetHandleForAddressRange(fd, (void *)(uintptr_t)d->dptr,
					    b->size,
					    hipMemRangeHandleTypeDmaBufFd, 0);
	return e == hipSuccess ? 0 :
	       hip_fail(b, e, "hipMemGetHandleForAddressRange(DmaBuf)");
}

static void rt_close_dmabuf(int fd)
{
	hip.hsa_close_dmabuf(fd);
}

/* [off, off + len) as a dma-buf of its own (ROCm >= 6 only) */
static int rt_export_range(struct gpu_buf *b, struct gpu_dev *d, size_t off,
			   size_t len, int *fd)
{
	hipError_t e;

	*fd = -1;
	if (!hip.MemGetHandleForAddressRange) {
		snprintf(b->why, sizeof(b->why), "ROCm 5's hsa_amd_portable_export_dmabuf exports whole allocations only: ROCm >= 6 exports ranges");
		return -EOPNOTSUPP;
	}
	e = hip.MemGetHandleForAddressRange(fd,
					    (char *)(uintptr_t)d->dptr + off,
					    len, hipMemRangeHandleTypeDmaBufFd,
					    0);
	if (e != hipSuccess) {
		*fd = -1;
		return hip_fail(b, e, "hipMemGetHandleForAddressRange(DmaBuf)");
	}
	return 0;
}

/* hipPointerAttribute_t's head: the same fields in ROCm 5 and 6 */
struct hip_ptr_attr {
	int type;		/* hipMemoryType (ROCm 5 also names it memoryType) */
	int device;
	void *device_ptr;
	void *host_ptr;
	int is_managed;
	unsigned int allocation_flags;
	char pad[64];		/* room for fields a newer runtime adds */
};

/*
 * What the runtime says the allocated memory is, into b->export_kind.
 * hipMemoryType was renumbered in ROCm 6 to match CUDA's (host 1, device 2,
 * managed 3; ROCm 5: host 0, device 1, managed 4): a runtime with
 * hipMemGetHandleForAddressRange is ROCm >= 6.
 */
static void rt_describe(struct gpu_buf *b, struct gpu_dev *d)
{
	bool rocm6 = hip.MemGetHandleForAddressRange != NULL;
	struct hip_ptr_attr a = { .type = -1 };
	const char *kind;

	if (!hip.PointerGetAttributes ||
	    hip.PointerGetAttributes(&a, (void *)(uintptr_t)d->dptr) != hipSuccess) {
		snprintf(b->export_kind, sizeof(b->export_kind),
			 "memory type unknown (no hipPointerGetAttributes answer)");
		return;
	}
	if (a.type == (rocm6 ? 2 : 1))
		kind = "VRAM (hipMemoryTypeDevice)";
	else if (a.type == (rocm6 ? 1 : 0))
		kind = "host memory (hipMemoryTypeHost): the NVMe controller DMAs into system memory, not into the GPU";
	else if (a.type == (rocm6 ? 3 : 4))
		kind = "managed memory (hipMemoryTypeManaged): it may be in system memory, not in the GPU";
	else
		kind = NULL;
	if (kind)
		snprintf(b->export_kind, sizeof(b->export_kind), "%s", kind);
	else
		snprintf(b->export_kind, sizeof(b->export_kind),
			 "memory type %d (hipPointerGetAttributes)", a.type);
}

/* ------------------------------------------------------------------------ */
/* the copy stream's calls (stream.c)                                       */

/* hipMemcpyAttributes, laid out as ROCm 7 has it (CUDA's twin) */
struct hip_memcpy_attr {
	int src_access_order;	/* hipMemcpySrcAccessOrderStream = 1 */
	struct { int type; int id; } src_loc, dst_loc;
	unsigned int flags;
};

static int rt_stream_create(struct gpu_buf *b, void **stream)
{
	hipError_t e = hip.StreamCreateWithFlags((hipStream_t *)stream,
						 hipStreamNonBlocking);

	return e == hipSuccess ? 0 : hip_fail(b, e, "hipStreamCreateWithFlags");
}

static int rt_stream_sync(struct gpu_buf *b, void *stream)
{
	hipError_t e = hip.StreamSynchronize(stream);

	return e == hipSuccess ? 0 : hip_fail(b, e, "hipStreamSynchronize");
}

static void rt_stream_destroy(void *stream)
{
	hip.StreamDestroy(stream);
}

static int rt_event_create(struct gpu_buf *b, void **event)
{
	hipError_t e = hip.EventCreateWithFlags((hipEvent_t *)event,
						hipEventDisableTiming);

	return e == hipSuccess ? 0 : hip_fail(b, e, "hipEventCreateWithFlags");
}

static void rt_event_destroy(void *event)
{
	hip.EventDestroy(event);
}

static int rt_event_record(struct gpu_buf *b, void *event, void *stream)
{
	hipError_t e = hip.EventRecord(event, stream);

	return e == hipSuccess ? 0 : hip_fail(b, e, "hipEventRecord");
}

static int rt_event_query(struct gpu_buf *b, void *event)
{
	hipError_t e = hip.EventQuery(event);

	if (e == hipErrorNotReady)
		return 0;
	return e == hipSuccess ? 1 : hip_fail(b, e, "hipEventQuery");
}

static int rt_event_sync(struct gpu_buf *b, void *event)
{
	hipError_t e = hip.EventSynchronize(event);

	return e == hipSuccess ? 0 : hip_fail(b, e, "hipEventSynchronize");
}

static int rt_copy(struct gpu_buf *b, void *stream, enum gpu_copy_dir dir,
		   uint64_t dst, uint64_t src, size_t len)
{
	void *d = (void *)(uintptr_t)dst, *s = (void *)(uintptr_t)src;
	hipError_t e;

	if (dir == GPU_H2D)
		e = hip.MemcpyHtoDAsync(d, s, len, stream);
	else
		e = hip.MemcpyDtoHAsync(d, s, len, stream);
	if (e == hipSuccess)
		return 0;
	return hip_fail(b, e, dir == GPU_H2D ? "hipMemcpyHtoDAsync" :
					       "hipMemcpyDtoHAsync");
}

static int rt_copy_batch(struct gpu_buf *b, void *stream, uint64_t *dst,
			 uint64_t *src, size_t *len, size_t n, size_t *done)
{
	struct hip_memcpy_attr attr = { .src_access_order = 1 };
	size_t attr_idx = 0, fail_idx = SIZE_MAX;
	hipError_t e;

	*done = 0;
	if (!hip.MemcpyBatchAsync)
		return -ENOSYS;
	/* addresses are 64-bit on every platform HIP runs on */
	e = hip.MemcpyBatchAsync((void **)dst, (void **)src, len, n, &attr,
				 &attr_idx, 1, &fail_idx, stream);
	if (e == hipSuccess)
		return 0;
	if (fail_idx < n)
		*done = fail_idx;
	return hip_fail(b, e, "hipMemcpyBatchAsync");
}

static int rt_map_host(struct gpu_buf *b, void *host, size_t len,
		       uint64_t *dev_addr)
{
	void *d = NULL;
	hipError_t e;

	if (!hip.HostGetDevicePointer || !hip.StreamWriteValue64)
		return -ENOSYS;
	e = hip.HostRegister(host, len, hipHostRegisterMapped);
	if (e != hipSuccess)
		return hip_fail(b, e, "hipHostRegister(Mapped)");
	e = hip.HostGetDevicePointer(&d, host, 0);
	if (e != hipSuccess) {
		hip.HostUnregister(host);
		return hip_fail(b, e, "hipHostGetDevicePointer");
	}
	*dev_addr = (uint64_t)(uintptr_t)d;
	return 0;
}

static void rt_unmap_host(void *host)
{
	hip.HostUnregister(host);
}

static int rt_write_value(struct gpu_buf *b, void *stream, uint64_t dev_addr,
			  uint64_t value)
{
	hipError_t e;

	e = hip.StreamWriteValue64(stream, (void *)(uintptr_t)dev_addr, value, 0);
	return e == hipSuccess ? 0 : hip_fail(b, e, "hipStreamWriteValue64");
}

static const struct gpu_runtime hip_runtime = {
	.probe		= hip_probe,
	.mem_alloc	= rt_mem_alloc,
	.mem_alloc_name	= "hipMalloc",
	.mem_free	= rt_mem_free,
	.host_register	= rt_host_register,
	.host_unregister = rt_host_unregister,
	.export		= rt_export,
	.close_dmabuf	= rt_close_dmabuf,
	.export_range	= rt_export_range,
	.describe	= rt_describe,
	.enter		= hip_enter,
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
};

static int hip_pci_addr(int dev, char *buf, size_t len)
{
	char why[160];
	int ret = hip_api_get(why, sizeof(why));

	if (ret < 0)
		return ret;
	if (!hip.DeviceGetPCIBusId)
		return -ENOSYS;
	if (len > INT_MAX)
		len = INT_MAX;
	return hip_errno(hip.DeviceGetPCIBusId(buf, (int)len, dev));
}

static int hip_dmabuf_ok(int dev, char *why, size_t len)
{
	int ret = hip_api_get(why, len);

	(void)dev;
	if (ret < 0)
		return ret;
	if (hip.MemGetHandleForAddressRange || hip.hsa_export_dmabuf)
		return 0;
	snprintf(why, len, "this ROCm has neither hipMemGetHandleForAddressRange (ROCm >= 6) nor hsa_amd_portable_export_dmabuf");
	return -EOPNOTSUPP;
}

const struct gpu_provider gpu_hip_provider = {
	.name		= "hip",
	.help		= "AMD GPU memory (libamdhip64.so)",
	.runtime	= "ROCm (libamdhip64.so)",
	.export_needs	= "ROCm >= 6 (hipMemGetHandleForAddressRange) with amdgpu; else transfer=bounce",
	.probe		= hip_probe,
	.alloc		= gpu_dev_alloc,
	.export_dmabuf	= gpu_dev_export,
	.export_range	= gpu_dev_export_range,
	.free		= gpu_dev_free,
	.pci_addr	= hip_pci_addr,
	.dmabuf_ok	= hip_dmabuf_ok,
	.rt		= &hip_runtime,
};
