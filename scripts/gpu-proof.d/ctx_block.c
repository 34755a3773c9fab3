// SPDX-License-Identifier: MIT
/*
 * ctx_block: which CUDA driver calls wait for a kernel that is running on
 * another stream of the same context.
 *
 * The bounce path's resident copy kernel stays on the GPU while its job
 * thread does I/O. fio runs every job thread's engine init after it lets the
 * threads go, so one thread's setup calls can meet another thread's running
 * kernel. A call that waits for it stalls that thread until the kernel
 * leaves. For each call below, a spin kernel is started on a non-blocking
 * stream, and the call is timed while the kernel spins; a call that takes
 * about as long as the spin waited for it.
 *
 *   ctx_block [DEV [SPIN_MS]]
 *   cc -O2 -I$CUDA/include ctx_block.c -L$CUDA/lib64/stubs -lcuda -o ctx_block
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cuda.h>

#define TOOL	"ctx_block"
#include "cuda_check.h"

#define SZ	(64u << 20)

/* spin(ns): spins for ns nanoseconds of the GPU's global timer */
static const char spin_ptx[] =
	".version 7.0\n.target sm_70\n.address_size 64\n"
	".visible .entry spin(.param .u64 ns)\n{\n"
	"\t.reg .u64 %a<5>;\n\t.reg .pred %p;\n"
	"\tld.param.u64 %a1, [ns];\n\tmov.u64 %a2, %globaltimer;\n"
	"L:\n\tmov.u64 %a3, %globaltimer;\n\tsub.u64 %a4, %a3, %a2;\n"
	"\tsetp.lt.u64 %p, %a4, %a1;\n\t@%p bra L;\n\tret;\n}\n";

/* nop(): a second module's kernel, for a first launch */
static const char nop_ptx[] =
	".version 7.0\n.target sm_70\n.address_size 64\n"
	".visible .entry nop()\n{\n\tret;\n}\n";

static CUstream spin_stream;
static CUfunction spin_fn;
static uint64_t spin_ns;

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void spin_start(void)
{
	void *args[] = { &spin_ns };

	CK(cuLaunchKernel(spin_fn, 1, 1, 1, 32, 1, 1, 0, spin_stream, args, NULL));
	usleep(20000);		/* on the GPU by now */
}

/* the state each probe works on, made and undone by the probes in turn */
static CUdeviceptr dptr;
static void *hbuf, *hpinned;
static CUmodule nop_mod;
static CUfunction nop_fn;
static CUstream other;
static CUevent ev;
static CUdevice dev;

static CUresult p_alloc(void) { return cuMemAlloc(&dptr, SZ); }
static CUresult p_export(void)
{
	int fd = -1;
	CUresult r = cuMemGetHandleForAddressRange(&fd, dptr, SZ,
				CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);

	if (fd >= 0)
		close(fd);
	return r;
}
static CUresult p_attr(void)
{
	int ord = -1;

	return cuPointerGetAttribute(&ord, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, dptr);
}
static CUresult p_free(void) { return cuMemFree(dptr); }
static CUresult p_register(void) { return cuMemHostRegister(hbuf, SZ, CU_MEMHOSTREGISTER_DEVICEMAP); }
static CUresult p_unregister(void) { return cuMemHostUnregister(hbuf); }
static CUresult p_hostalloc(void) { return cuMemHostAlloc(&hpinned, SZ, CU_MEMHOSTALLOC_DEVICEMAP); }
static CUresult p_freehost(void) { return cuMemFreeHost(hpinned); }
static CUresult p_modload(void) { return cuModuleLoadData(&nop_mod, nop_ptx); }
static CUresult p_getfn(void) { return cuModuleGetFunction(&nop_fn, nop_mod, "nop"); }
static CUresult p_firstlaunch(void)
{
	CUresult r = cuLaunchKernel(nop_fn, 1, 1, 1, 32, 1, 1, 0, other, NULL, NULL);

	return r ? r : cuStreamSynchronize(other);
}
static CUresult p_modunload(void) { return cuModuleUnload(nop_mod); }
static CUresult p_streamcreate(void) { return cuStreamCreate(&other, CU_STREAM_NON_BLOCKING); }
static CUresult p_eventcreate(void) { return cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING); }
static CUresult p_eventdestroy(void) { return cuEventDestroy(ev); }
static CUresult p_streamdestroy(void) { return cuStreamDestroy(other); }
static CUresult p_memgetinfo(void)
{
	size_t f, t;

	return cuMemGetInfo(&f, &t);
}
static CUresult p_attr_dev(void)
{
	int v;

	return cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
}
static CUresult p_ctxsync(void) { return cuCtxSynchronize(); }

static const struct probe {
	const char *name;
	CUresult (*fn)(void);
} probes[] = {
	{ "cuStreamCreate", p_streamcreate },
	{ "cuEventCreate", p_eventcreate },
	{ "cuMemAlloc 64 MiB", p_alloc },
	{ "cuPointerGetAttribute", p_attr },
	{ "cuMemGetHandleForAddressRange (dma-buf)", p_export },
	{ "cuMemHostRegister 64 MiB", p_register },
	{ "cuMemHostAlloc 64 MiB", p_hostalloc },
	{ "cuModuleLoadData (PTX)", p_modload },
	{ "cuModuleGetFunction", p_getfn },
	{ "first cuLaunchKernel of it (+ its sync)", p_firstlaunch },
	{ "cuMemGetInfo", p_memgetinfo },
	{ "cuDeviceGetAttribute", p_attr_dev },
	{ "cuModuleUnload", p_modunload },
	{ "cuMemFreeHost", p_freehost },
	{ "cuMemHostUnregister", p_unregister },
	{ "cuMemFree", p_free },
	{ "cuEventDestroy", p_eventdestroy },
	{ "cuStreamDestroy", p_streamdestroy },
	{ "cuCtxSynchronize (waits, by definition)", p_ctxsync },
};

int main(int argc, char **argv)
{
	int ordinal = argc > 1 ? atoi(argv[1]) : 0;
	unsigned int spin_ms = argc > 2 ? atoi(argv[2]) : 500, i;
	const char *mode = getenv("CUDA_MODULE_LOADING");
	CUmodule spin_mod;
	CUcontext ctx;

	spin_ns = (uint64_t)spin_ms * 1000000;
	hbuf = aligned_alloc(4096, SZ);
	if (!hbuf)
		return 1;
	memset(hbuf, 1, SZ);
	CK(cuInit(0));
	CK(cuDeviceGet(&dev, ordinal));
	CK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CK(cuCtxSetCurrent(ctx));
	CK(cuModuleLoadData(&spin_mod, spin_ptx));
	CK(cuModuleGetFunction(&spin_fn, spin_mod, "spin"));
	CK(cuStreamCreate(&spin_stream, CU_STREAM_NON_BLOCKING));
	spin_start();		/* loads spin before the probes */
	CK(cuStreamSynchronize(spin_stream));
	printf("%s: device %d, a %u ms spin kernel on its own stream; "
	       "CUDA_MODULE_LOADING=%s\n", TOOL, ordinal, spin_ms, mode ? mode : "(unset)");
	for (i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
		double t0, ms;
		CUresult r;

		spin_start();
		t0 = now_ms();
		r = probes[i].fn();
		ms = now_ms() - t0;
		CK(cuStreamSynchronize(spin_stream));
		printf("%-44s %8.2f ms  %s%s\n", probes[i].name, ms,
		       ms > spin_ms / 2 ? "WAITS for the running kernel" : "runs beside it",
		       r ? " (call failed)" : "");
	}
	CK(cuModuleUnload(spin_mod));
	CK(cuStreamDestroy(spin_stream));
	CK(cuDevicePrimaryCtxRelease(dev));
	free(hbuf);
	return 0;
}
