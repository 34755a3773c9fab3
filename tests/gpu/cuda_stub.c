// SPDX-License-Identifier: MIT
/*
 * A stub of the CUDA driver (libcuda.so.1) for machines without an NVIDIA
 * GPU: just what gpu/runtime/cuda.c calls, backed by host memory, so that the CUDA
 * provider's allocation, copies and dma-buf export run in CI. Copies happen
 * at once and events are always done; an "exported dma-buf" is a memfd
 * (enough for the export's decisions, not for registration). Load it by
 * putting its directory first in LD_LIBRARY_PATH.
 *
 * Environment:
 *   CUDASTUB_PCIE=notsup|invalid|ok|oom  what cuMemGetHandleForAddressRange
 *                        answers to CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE:
 *                        CUDA_ERROR_NOT_SUPPORTED (the default: the x86 H200
 *                        with driver 580), CUDA_ERROR_INVALID_VALUE (a driver
 *                        without the flag), a dma-buf, or an unrelated error
 *   CUDASTUB_C2C=1       CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED=1:
 *                        the GPU is linked to the CPU by NVLink-C2C
 *   CUDASTUB_LOG=FILE    append "export flags=N" per export call, and the
 *                        module and launch lines below
 *   CUDASTUB_KRING=1     run the resident copy kernel (dbr_kring) as the
 *                        unit tests' double of it does (tests/unit/
 *                        fake_kring.h), a thread per launch on its stream,
 *                        and cuStreamWriteValue64 stores its value; without
 *                        it both are refused (CUDA_ERROR_NOT_SUPPORTED) and
 *                        the engine launches a copy kernel per pass
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include <cuda.h>

#include "provider.h"
/* the kernel double's clock; the engine's own is hidden in its library */
__attribute__((visibility("hidden"))) uint64_t gpu_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
/* the unit tests' driving half of the double (fr_start, fr_load, ...) is unused here */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "fake_kring.h"
#pragma GCC diagnostic pop

static bool kring_on(void)
{
	const char *s = getenv("CUDASTUB_KRING");

	return s && !strcmp(s, "1");
}

static const char *env(const char *name, const char *def)
{
	const char *s = getenv(name);

	return s && *s ? s : def;
}

CUresult cuGetErrorName(CUresult error, const char **pStr)
{
	static const struct { CUresult r; const char *name; } names[] = {
		{ CUDA_SUCCESS, "CUDA_SUCCESS" },
		{ CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE" },
		{ CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY" },
		{ CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED" },
		{ CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE" },
	};
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].r == error) {
			*pStr = names[i].name;
			return CUDA_SUCCESS;
		}
	return CUDA_ERROR_INVALID_VALUE;
}

CUresult cuInit(unsigned int Flags)
{
	(void)Flags;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count)
{
	*count = 1;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
	if (ordinal != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	*device = 0;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
	(void)dev;
	*pi = 0;
	if (attrib == CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED)
		*pi = 1;
	else if (attrib == CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED)
		*pi = !strcmp(env("CUDASTUB_C2C", "0"), "1");
	return CUDA_SUCCESS;
}

static int ctx_dummy;

CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
	(void)dev;
	*pctx = (CUcontext)&ctx_dummy;
	return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
	(void)dev;
	return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext ctx)
{
	(void)ctx;
	return CUDA_SUCCESS;
}

CUresult cuMemGetAllocationGranularity(size_t *granularity,
				       const CUmemAllocationProp *prop,
				       CUmemAllocationGranularity_flags option)
{
	(void)prop;
	(void)option;
	*granularity = 2UL << 20;
	return CUDA_SUCCESS;
}

/* device allocations: anonymous mappings, listed for cuMemFree */
struct alloc {
	CUdeviceptr base;
	size_t size;
	struct alloc *next;
};
static struct alloc *allocs;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

CUresult cuMemAlloc(CUdeviceptr *dptr, size_t bytesize)
{
	struct alloc *a = malloc(sizeof(*a));
	void *p;

	if (!a)
		return CUDA_ERROR_OUT_OF_MEMORY;
	p = mmap(NULL, bytesize, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		free(a);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	a->base = *dptr = (CUdeviceptr)(uintptr_t)p;
	a->size = bytesize;
	pthread_mutex_lock(&lock);
	a->next = allocs;
	allocs = a;
	pthread_mutex_unlock(&lock);
	return CUDA_SUCCESS;
}

CUresult cuMemFree(CUdeviceptr dptr)
{
	struct alloc **pp, *a;

	pthread_mutex_lock(&lock);
	for (pp = &allocs; (a = *pp) && a->base != dptr; pp = &a->next)
		;
	if (a)
		*pp = a->next;
	pthread_mutex_unlock(&lock);
	if (!a)
		return CUDA_ERROR_INVALID_VALUE;
	munmap((void *)(uintptr_t)a->base, a->size);
	free(a);
	return CUDA_SUCCESS;
}

CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute,
			       CUdeviceptr ptr)
{
	(void)ptr;
	if (attribute != CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL)
		return CUDA_ERROR_INVALID_VALUE;
	*(int *)data = 0;
	return CUDA_SUCCESS;
}

/* a line to CUDASTUB_LOG, where it is set */
static void stub_log(const char *fmt, ...)
{
	const char *log = getenv("CUDASTUB_LOG");
	va_list ap;
	FILE *f;

	if (!log || !(f = fopen(log, "ae")))
		return;
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fclose(f);
}

CUresult cuMemGetHandleForAddressRange(void *handle, CUdeviceptr dptr,
				       size_t size,
				       CUmemRangeHandleType handleType,
				       unsigned long long flags)
{
	const char *pcie = env("CUDASTUB_PCIE", "notsup");
	int fd;

	(void)dptr;
	stub_log("export flags=%llu size=%zu\n", flags, size);
	if (handleType != CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD || flags > 1)
		return CUDA_ERROR_INVALID_VALUE;
	if (flags == 1 && !strcmp(pcie, "notsup"))
		return CUDA_ERROR_NOT_SUPPORTED;
	if (flags == 1 && !strcmp(pcie, "invalid"))
		return CUDA_ERROR_INVALID_VALUE;
	if (flags == 1 && !strcmp(pcie, "oom"))
		return CUDA_ERROR_OUT_OF_MEMORY;
	fd = memfd_create("cuda_stub_dmabuf", MFD_CLOEXEC);
	if (fd < 0)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*(int *)handle = fd;
	return CUDA_SUCCESS;
}

CUresult cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags)
{
	(void)p;
	(void)bytesize;
	(void)Flags;
	return CUDA_SUCCESS;
}

CUresult cuMemHostUnregister(void *p)
{
	(void)p;
	return CUDA_SUCCESS;
}

CUresult cuMemHostGetDevicePointer(CUdeviceptr *pdptr, void *p,
				   unsigned int Flags)
{
	(void)Flags;
	*pdptr = (CUdeviceptr)(uintptr_t)p;
	return CUDA_SUCCESS;
}

/*
 * Streams: copies run at once; what a stream waits for is the resident
 * kernel's start running on it (a thread that leaves when stopped or idle).
 */
struct stub_stream {
	pthread_mutex_t mu;
	pthread_t th;
	bool have_th;
};
static int event_dummy;

CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
	struct stub_stream *s = calloc(1, sizeof(*s));

	(void)Flags;
	if (!s)
		return CUDA_ERROR_OUT_OF_MEMORY;
	pthread_mutex_init(&s->mu, NULL);
	*phStream = (CUstream)s;
	return CUDA_SUCCESS;
}

CUresult cuStreamSynchronize(CUstream hStream)
{
	struct stub_stream *s = (struct stub_stream *)hStream;

	if (!s)
		return CUDA_SUCCESS;
	pthread_mutex_lock(&s->mu);
	if (s->have_th)
		pthread_join(s->th, NULL);
	s->have_th = false;
	pthread_mutex_unlock(&s->mu);
	return CUDA_SUCCESS;
}

CUresult cuStreamDestroy(CUstream hStream)
{
	struct stub_stream *s = (struct stub_stream *)hStream;

	cuStreamSynchronize(hStream);
	if (s) {
		pthread_mutex_destroy(&s->mu);
		free(s);
	}
	return CUDA_SUCCESS;
}

CUresult cuStreamWriteValue64_v2(CUstream stream, CUdeviceptr addr,
				 cuuint64_t value, unsigned int flags)
{
	(void)stream;
	(void)flags;
	if (!kring_on())
		return CUDA_ERROR_NOT_SUPPORTED;
	__atomic_store_n((uint64_t *)(uintptr_t)addr, value, __ATOMIC_RELEASE);
	return CUDA_SUCCESS;
}

CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
	(void)Flags;
	*phEvent = (CUevent)&event_dummy;
	return CUDA_SUCCESS;
}

CUresult cuEventRecord(CUevent hEvent, CUstream hStream)
{
	(void)hEvent;
	(void)hStream;
	return CUDA_SUCCESS;
}

CUresult cuEventQuery(CUevent hEvent)
{
	(void)hEvent;
	return CUDA_SUCCESS;
}

CUresult cuEventSynchronize(CUevent hEvent)
{
	(void)hEvent;
	return CUDA_SUCCESS;
}

CUresult cuEventDestroy(CUevent hEvent)
{
	(void)hEvent;
	return CUDA_SUCCESS;
}

CUresult cuMemcpyHtoDAsync(CUdeviceptr dstDevice, const void *srcHost,
			   size_t ByteCount, CUstream hStream)
{
	(void)hStream;
	memcpy((void *)(uintptr_t)dstDevice, srcHost, ByteCount);
	return CUDA_SUCCESS;
}

CUresult cuMemcpyDtoHAsync(void *dstHost, CUdeviceptr srcDevice,
			   size_t ByteCount, CUstream hStream)
{
	(void)hStream;
	memcpy(dstHost, (const void *)(uintptr_t)srcDevice, ByteCount);
	return CUDA_SUCCESS;
}

/*
 * Modules and launches. dbr_kcopy (gpu/copy/kcopy_ptx.h) runs at once on the
 * host, as the copies above do: its descriptors move 16-byte units between
 * the staging area and "device" memory (both host memory here), and a
 * fencing launch writes its ticket into the host word. The resident one
 * runs on a thread of its own where CUDASTUB_KRING=1 (fake_kring.h), and
 * is refused otherwise. With CUDASTUB_LOG: "module load ENTRY",
 * "module unload" and, per launch, "launch slot=N thread=T", so a test
 * can count loads and see which counter slot each thread's stream got.
 */
static int kcopy_fn, kring_fn;

CUresult cuModuleLoadDataEx(CUmodule *module, const void *image,
			    unsigned int numOptions, CUjit_option *options,
			    void **optionValues)
{
	(void)numOptions;
	(void)options;
	(void)optionValues;
	*module = calloc(1, 16);
	if (!*module)
		return CUDA_ERROR_OUT_OF_MEMORY;
	stub_log("module load %s\n", strstr(image, ".entry dbr_kring") ?
		 "dbr_kring" : "dbr_kcopy");
	return CUDA_SUCCESS;
}

CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
	(void)hmod;
	*hfunc = (CUfunction)(strcmp(name, "dbr_kcopy") ? &kring_fn : &kcopy_fn);
	return CUDA_SUCCESS;
}

CUresult cuModuleUnload(CUmodule hmod)
{
	free(hmod);
	stub_log("module unload\n");
	return CUDA_SUCCESS;
}

/*
 * dbr_kring(ring, host, dev), all "device" addresses that are host ones
 * here: a thread after the kernel before it on the stream.
 */
static CUresult start_kring(CUstream hStream, void **kernelParams)
{
	struct stub_stream *s = (struct stub_stream *)hStream;
	struct fr_k k = {
		.r = (struct gpu_kring *)(uintptr_t)*(uint64_t *)kernelParams[0],
		.host = (uint8_t *)(uintptr_t)*(uint64_t *)kernelParams[1],
		.dev = (uint8_t *)(uintptr_t)*(uint64_t *)kernelParams[2],
		.cq_mapped = true,
	};
	int ret;

	if (!s)
		return CUDA_ERROR_INVALID_VALUE;
	fr.idle_ns = 2000000;		/* GPU_KRING_IDLE_NS */
	pthread_mutex_lock(&s->mu);
	ret = fr_start_k(&k, &s->th, &s->have_th);
	pthread_mutex_unlock(&s->mu);
	stub_log("launch dbr_kring thread=%lu\n", (unsigned long)pthread_self());
	return ret ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS;
}

CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX,
			unsigned int gridDimY, unsigned int gridDimZ,
			unsigned int blockDimX, unsigned int blockDimY,
			unsigned int blockDimZ, unsigned int sharedMemBytes,
			CUstream hStream, void **kernelParams, void **extra)
{
	const struct { uint32_t off, len; } *d;
	char *host, *dev;
	uint64_t flag;
	unsigned int i;

	(void)gridDimY; (void)gridDimZ; (void)blockDimX; (void)blockDimY;
	(void)blockDimZ; (void)sharedMemBytes; (void)extra;
	if (f == (CUfunction)&kring_fn && kring_on())
		return start_kring(hStream, kernelParams);
	if (f != (CUfunction)&kcopy_fn)
		return CUDA_ERROR_NOT_SUPPORTED;
	d = kernelParams[4];	/* dbr_kcopy's descriptors (dbr_kring has 3 arguments) */
	host = (char *)(uintptr_t)*(uint64_t *)kernelParams[0];
	dev = (char *)(uintptr_t)*(uint64_t *)kernelParams[1];
	flag = *(uint64_t *)kernelParams[2];
	for (i = 0; i < gridDimX; i++) {
		uint32_t len = d[i].len & 0x7fffffffu;
		size_t off = (size_t)d[i].off * 16;

		if (d[i].len >> 31)
			memcpy(host + off, dev + off, (size_t)len * 16);
		else
			memcpy(dev + off, host + off, (size_t)len * 16);
	}
	if (flag)
		*(volatile uint64_t *)(uintptr_t)flag = *(uint64_t *)kernelParams[3];
	stub_log("launch slot=%u thread=%lu\n", *(uint32_t *)kernelParams[5],
		 (unsigned long)pthread_self());
	return CUDA_SUCCESS;
}
