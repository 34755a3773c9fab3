// SPDX-License-Identifier: MIT
/*
 * CUDA memory provider: NVIDIA GPU memory through the CUDA driver API.
 *
 * libcuda.so.1 is opened at run time, so one engine build runs on machines
 * with or without the NVIDIA driver; cuda.h is needed at build time only,
 * for the types and the versioned entry point names (cuMemAlloc is
 * cuMemAlloc_v2 in the library, and so on).
 *
 * Per fio thread: the device's primary context (retained, made current by
 * every entry point since fio may call from any thread of the job), a
 * cuMemAlloc allocation rounded to the device's allocation granularity, a
 * host shadow of the same size (anonymous pages, page-locked with
 * cuMemHostRegister so copies are DMA, and still ordinary user pages that
 * io_uring can register as a fixed buffer; cuMemHostAlloc memory is not),
 * one non-blocking stream and one event per completion marker (blocking-sync
 * events: waiting for a copy spins briefly, then sleeps).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cuda.h>

#include "provider.h"

#define CUDA_LIB	"libcuda.so.1"

/*
 * wait() spins on a marker this long, then sleeps in the driver (events are
 * CU_EVENT_BLOCKING_SYNC): a 1 MiB copy takes ~20 us at 55 GB/s, and threads
 * that spin for whole copies starve the CPU-bound side of the job.
 * DBR_CUDA_SPIN_US=N overrides it; -1 spins until done.
 */
#define CUDA_SPIN_NS	20000L

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
static long cu_spin_ns = CUDA_SPIN_NS;	/* < 0: spin until done */

/* The library stays loaded for the life of the process, as CUDA expects. */
static void cu_load(void)
{
	void *lib = dlopen(CUDA_LIB, RTLD_NOW | RTLD_LOCAL);
	const char *spin = getenv("DBR_CUDA_SPIN_US");
	size_t i;

	if (spin && *spin)
		cu_spin_ns = atol(spin) < 0 ? -1 : atol(spin) * 1000L;

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
}

static int cu_api_get(char *why, size_t len)
{
	pthread_once(&cu_once, cu_load);
	if (cu_load_err)
		snprintf(why, len, "%s", cu_load_why);
	return cu_load_err;
}

static const char *cu_name(CUresult r)
{
	const char *s = NULL;

	if (cu.GetErrorName(r, &s) != CUDA_SUCCESS || !s)
		return "unknown CUDA error";
	return s;
}

static int cu_errno(CUresult r)
{
	switch (r) {
	case CUDA_SUCCESS:
		return 0;
	case CUDA_ERROR_OUT_OF_MEMORY:
		return -ENOMEM;
	case CUDA_ERROR_NO_DEVICE:
	case CUDA_ERROR_INVALID_DEVICE:
		return -ENODEV;
	case CUDA_ERROR_NOT_SUPPORTED:
		return -EOPNOTSUPP;
	case CUDA_ERROR_INVALID_VALUE:
		return -EINVAL;
	case CUDA_ERROR_NOT_PERMITTED:
		return -EPERM;
	case CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED:
		return -EEXIST;
	default:
		return -EIO;
	}
}

/* Record "what: CUDA_ERROR_X" in b->why and turn r into a negative errno. */
static int cu_fail(struct gpu_buf *b, CUresult r, const char *what)
{
	snprintf(b->why, sizeof(b->why), "%s: %s", what, cu_name(r));
	return cu_errno(r);
}

/* ------------------------------------------------------------------------ */
/* per-buffer state                                                         */

struct cuda_priv {
	CUdevice dev;
	CUcontext ctx;
	CUdeviceptr dptr;
	size_t dsize;		/* allocated: b->size rounded to granularity */
	bool host_locked;
	CUstream stream;
	CUevent *events;
	unsigned int nr_events;
};

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

/* Every entry point runs on whatever thread fio calls it from. */
static int cuda_enter(struct gpu_buf *b, struct cuda_priv *cp)
{
	CUresult r = cu.CtxSetCurrent(cp->ctx);

	return r == CUDA_SUCCESS ? 0 : cu_fail(b, r, "cuCtxSetCurrent");
}

static int cuda_open_ctx(struct gpu_buf *b, struct cuda_priv *cp)
{
	CUresult r;
	int ret;

	ret = cuda_probe(b->why, sizeof(b->why));
	if (ret < 0)
		return ret;
	if (b->dev_id < 0 || b->dev_id >= ret) {
		snprintf(b->why, sizeof(b->why), "device %d does not exist (%d visible)",
			 b->dev_id, ret);
		return -ENODEV;
	}
	r = cu.DeviceGet(&cp->dev, b->dev_id);
	if (r != CUDA_SUCCESS)
		return cu_fail(b, r, "cuDeviceGet");
	r = cu.PrimaryCtxRetain(&cp->ctx, cp->dev);
	if (r != CUDA_SUCCESS)
		return cu_fail(b, r, "cuDevicePrimaryCtxRetain");
	ret = cuda_enter(b, cp);
	if (ret < 0) {
		cu.PrimaryCtxRelease(cp->dev);
		cp->ctx = NULL;
	}
	return ret;
}

static void cuda_close_ctx(struct cuda_priv *cp)
{
	if (!cp->ctx)
		return;
	cu.CtxSetCurrent(NULL);
	cu.PrimaryCtxRelease(cp->dev);
	cp->ctx = NULL;
}

/* cuMemAlloc's rounding: the device's minimum allocation granularity. */
static size_t cuda_granularity(struct cuda_priv *cp)
{
	CUmemAllocationProp prop = {
		.type		= CU_MEM_ALLOCATION_TYPE_PINNED,
		.location	= {
			.type	= CU_MEM_LOCATION_TYPE_DEVICE,
			.id	= cp->dev,
		},
	};
	size_t gran = 0;

	if (cu.MemGetAllocationGranularity(&gran, &prop,
			CU_MEM_ALLOC_GRANULARITY_MINIMUM) != CUDA_SUCCESS ||
	    !gran || (gran & (gran - 1)))
		gran = 2UL << 20;
	return gran;
}

/* Device memory, page aligned (dma-buf export needs it) and on dev_id. */
static int cuda_alloc_device(struct gpu_buf *b, struct cuda_priv *cp)
{
	size_t gran = cuda_granularity(cp), page = sysconf(_SC_PAGESIZE);
	int ordinal = -1;
	CUresult r;

	cp->dsize = (b->size + gran - 1) & ~(gran - 1);
	r = cu.MemAlloc(&cp->dptr, cp->dsize);
	if (r != CUDA_SUCCESS) {
		cp->dptr = 0;
		return cu_fail(b, r, "cuMemAlloc");
	}
	if (cp->dptr & (page - 1)) {
		snprintf(b->why, sizeof(b->why), "cuMemAlloc returned 0x%llx, not aligned to the %zu-byte page dma-buf export needs",
			 (unsigned long long)cp->dptr, page);
		goto err_free;
	}
	r = cu.PointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
				   cp->dptr);
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
	cu.MemFree(cp->dptr);
	cp->dptr = 0;
	return -EIO;
}

/* The shadow: ordinary pages (io_uring pins them too), page-locked for DMA. */
static int cuda_alloc_host(struct gpu_buf *b, struct cuda_priv *cp)
{
	CUresult r;
	int ret;

	ret = gpu_shadow_map(b);
	if (ret < 0)
		return ret;
	r = cu.MemHostRegister(b->host, b->size, 0);
	if (r != CUDA_SUCCESS) {
		ret = cu_fail(b, r, "cuMemHostRegister of the host buffer (raise ulimit -l?)");
		gpu_shadow_unmap(b);
		return ret;
	}
	cp->host_locked = true;
	return 0;
}

static void cuda_free_host(struct gpu_buf *b, struct cuda_priv *cp)
{
	if (cp->host_locked)
		cu.MemHostUnregister(b->host);
	cp->host_locked = false;
	gpu_shadow_unmap(b);
}

static void cuda_free_sync(struct cuda_priv *cp)
{
	unsigned int i;

	for (i = 0; i < cp->nr_events; i++)
		cu.EventDestroy(cp->events[i]);
	free(cp->events);
	cp->events = NULL;
	cp->nr_events = 0;
	if (cp->stream)
		cu.StreamDestroy(cp->stream);
	cp->stream = NULL;
}

/* One in-order stream per thread, one event per completion marker. */
static int cuda_alloc_sync(struct gpu_buf *b, struct cuda_priv *cp,
			   unsigned int nr_marks)
{
	CUresult r;

	r = cu.StreamCreate(&cp->stream, CU_STREAM_NON_BLOCKING);
	if (r != CUDA_SUCCESS) {
		cp->stream = NULL;
		return cu_fail(b, r, "cuStreamCreate");
	}
	cp->events = calloc(nr_marks, sizeof(*cp->events));
	if (!cp->events) {
		cuda_free_sync(cp);
		return -ENOMEM;
	}
	for (; cp->nr_events < nr_marks; cp->nr_events++) {
		r = cu.EventCreate(&cp->events[cp->nr_events],
				   CU_EVENT_DISABLE_TIMING | CU_EVENT_BLOCKING_SYNC);
		if (r != CUDA_SUCCESS) {
			cuda_free_sync(cp);
			return cu_fail(b, r, "cuEventCreate");
		}
	}
	return 0;
}

static int cuda_alloc(struct gpu_buf *b, unsigned int nr_marks)
{
	struct cuda_priv *cp;
	int ret;

	cp = calloc(1, sizeof(*cp));
	if (!cp)
		return -ENOMEM;
	ret = cuda_open_ctx(b, cp);
	if (ret < 0)
		goto err_free;
	ret = cuda_alloc_device(b, cp);
	if (ret < 0)
		goto err_ctx;
	ret = cuda_alloc_host(b, cp);
	if (ret < 0)
		goto err_dev;
	ret = cuda_alloc_sync(b, cp, nr_marks ? nr_marks : 1);
	if (ret < 0)
		goto err_host;
	b->priv = cp;
	b->host_is_device = false;
	return 0;

err_host:
	cuda_free_host(b, cp);
err_dev:
	cu.MemFree(cp->dptr);
err_ctx:
	cuda_close_ctx(cp);
err_free:
	free(cp);
	return ret;
}

static int cuda_export(struct gpu_buf *b)
{
	struct cuda_priv *cp = b->priv;
	int supported = 0, fd = -1, ret;
	CUresult r;

	ret = cuda_enter(b, cp);
	if (ret < 0)
		return ret;
	r = cu.DeviceGetAttribute(&supported,
				  CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, cp->dev);
	if (r != CUDA_SUCCESS)
		return cu_fail(b, r, "cuDeviceGetAttribute(DMA_BUF_SUPPORTED)");
	if (!supported) {
		snprintf(b->why, sizeof(b->why), "device %d cannot export dma-bufs (CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED=0: needs the open kernel modules, nvidia-open, and a Turing or newer GPU)",
			 b->dev_id);
		return -EOPNOTSUPP;
	}
	r = cu.MemGetHandleForAddressRange(&fd, cp->dptr, b->size,
					   CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD,
					   0);
	if (r != CUDA_SUCCESS)
		return cu_fail(b, r, "cuMemGetHandleForAddressRange(DMA_BUF_FD)");
	b->dmabuf_fd = fd;
	return 0;
}

static int cuda_copy(struct gpu_buf *b, enum gpu_copy_dir dir, size_t off,
		     size_t len)
{
	struct cuda_priv *cp = b->priv;
	void *host = (char *)b->host + off;
	CUresult r;
	int ret;

	if (off > b->size || len > b->size - off)
		return -EINVAL;
	ret = cuda_enter(b, cp);
	if (ret < 0)
		return ret;
	if (dir == GPU_H2D)
		r = cu.MemcpyHtoDAsync(cp->dptr + off, host, len, cp->stream);
	else
		r = cu.MemcpyDtoHAsync(host, cp->dptr + off, len, cp->stream);
	if (r != CUDA_SUCCESS)
		return cu_fail(b, r, dir == GPU_H2D ? "cuMemcpyHtoDAsync" :
						      "cuMemcpyDtoHAsync");
	return 0;
}

static int cuda_mark(struct gpu_buf *b, unsigned int mark)
{
	struct cuda_priv *cp = b->priv;
	CUresult r;
	int ret;

	if (mark >= cp->nr_events)
		return -EINVAL;
	ret = cuda_enter(b, cp);
	if (ret < 0)
		return ret;
	r = cu.EventRecord(cp->events[mark], cp->stream);
	return r == CUDA_SUCCESS ? 0 : cu_fail(b, r, "cuEventRecord");
}

static int cuda_poll(struct gpu_buf *b, unsigned int mark)
{
	struct cuda_priv *cp = b->priv;
	CUresult r;
	int ret;

	if (mark >= cp->nr_events)
		return -EINVAL;
	ret = cuda_enter(b, cp);
	if (ret < 0)
		return ret;
	r = cu.EventQuery(cp->events[mark]);
	if (r == CUDA_SUCCESS)
		return 1;
	if (r == CUDA_ERROR_NOT_READY)
		return 0;
	return cu_fail(b, r, "cuEventQuery");
}

/* Spin on the event for up to cu_spin_ns, then sleep in the driver. */
static CUresult cuda_event_wait(CUevent ev)
{
	struct timespec t0, t;
	CUresult r;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		r = cu.EventQuery(ev);
		if (r != CUDA_ERROR_NOT_READY)
			return r;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (cu_spin_ns >= 0 &&
		    (t.tv_sec - t0.tv_sec) * 1000000000L +
		    (t.tv_nsec - t0.tv_nsec) >= cu_spin_ns)
			return cu.EventSynchronize(ev);
	}
}

static int cuda_wait(struct gpu_buf *b, unsigned int mark)
{
	struct cuda_priv *cp = b->priv;
	CUresult r;
	int ret;

	if (mark >= cp->nr_events)
		return -EINVAL;
	ret = cuda_enter(b, cp);
	if (ret < 0)
		return ret;
	r = cuda_event_wait(cp->events[mark]);
	return r == CUDA_SUCCESS ? 0 : cu_fail(b, r, "cuEventSynchronize");
}

/* Reverse order of cuda_alloc; copies still queued are drained first. */
static void cuda_free(struct gpu_buf *b)
{
	struct cuda_priv *cp = b->priv;

	if (!cp)
		return;
	cu.CtxSetCurrent(cp->ctx);
	if (cp->stream)
		cu.StreamSynchronize(cp->stream);
	cuda_free_sync(cp);
	if (b->dmabuf_fd >= 0)
		close(b->dmabuf_fd);
	b->dmabuf_fd = -1;
	cuda_free_host(b, cp);
	cu.MemFree(cp->dptr);
	cuda_close_ctx(cp);
	free(cp);
	b->priv = NULL;
}

const struct gpu_provider gpu_cuda_provider = {
	.name		= "cuda",
	.probe		= cuda_probe,
	.alloc		= cuda_alloc,
	.export_dmabuf	= cuda_export,
	.copy		= cuda_copy,
	.mark		= cuda_mark,
	.poll		= cuda_poll,
	.wait		= cuda_wait,
	.free		= cuda_free,
};
