// SPDX-License-Identifier: MIT
/*
 * cuda_bw: host<->GPU copy bandwidth with the CUDA driver API, the limit the
 * bounce path is measured against. Per device: a 256 MiB device buffer and a
 * host buffer of anonymous pages, page-locked with cuMemHostRegister exactly
 * as gpu/runtime/cuda.c does; GB/s of H2D and D2H copies on one stream, then H2D
 * from the same pages before they were registered (pageable, for contrast).
 * Also prints each device's memory in use (cuMemGetInfo), which the
 * multi-GPU check samples.
 *
 *   cuda_bw [DEV ...]      (default: every device)
 *   cuda_bw --load SECONDS [DEV]
 *                          keep DEV's copy engine reading pinned host memory
 *                          flat out for SECONDS: the host-memory load that a
 *                          bounce path shares, to measure fio beside it
 *   cc -O2 -I$CUDA/include cuda_bw.c -L$CUDA/lib64/stubs -lcuda -o cuda_bw
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>

#include <cuda.h>

#define SIZE	(256UL << 20)
#define REPS	16

#define TOOL	"cuda_bw"
#include "cuda_check.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double run(CUstream s, CUdeviceptr d, void *h, int h2d)
{
	double t;
	int i;

	if (h2d)	/* warm up */
		CK(cuMemcpyHtoDAsync(d, h, SIZE, s));
	else
		CK(cuMemcpyDtoHAsync(h, d, SIZE, s));
	CK(cuStreamSynchronize(s));
	t = now();
	for (i = 0; i < REPS; i++) {
		if (h2d)
			CK(cuMemcpyHtoDAsync(d, h, SIZE, s));
		else
			CK(cuMemcpyDtoHAsync(h, d, SIZE, s));
	}
	CK(cuStreamSynchronize(s));
	return (double)SIZE * REPS / (now() - t) / 1e9;
}

/* What both measurements use: the primary context, a stream, 256 MiB each side. */
struct bench {
	CUdevice dev;
	CUcontext ctx;
	CUstream s;
	CUdeviceptr d;
	void *h;		/* anonymous pages, not yet page-locked */
};

static void bench_open(int ordinal, struct bench *b)
{
	CK(cuDeviceGet(&b->dev, ordinal));
	CK(cuDevicePrimaryCtxRetain(&b->ctx, b->dev));
	CK(cuCtxSetCurrent(b->ctx));
	CK(cuStreamCreate(&b->s, CU_STREAM_NON_BLOCKING));
	CK(cuMemAlloc(&b->d, SIZE));
	b->h = mmap(NULL, SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (b->h == MAP_FAILED)
		exit(1);
	memset(b->h, 1, SIZE);
}

static void bench_close(struct bench *b)
{
	CK(cuMemHostUnregister(b->h));
	munmap(b->h, SIZE);
	CK(cuMemFree(b->d));
	CK(cuStreamDestroy(b->s));
	CK(cuDevicePrimaryCtxRelease(b->dev));
}

static void one_device(int ordinal)
{
	double h2d, d2h, pageable;
	size_t free_b, total_b;
	struct bench b;
	char name[128];

	bench_open(ordinal, &b);
	CK(cuDeviceGetName(name, sizeof(name), b.dev));
	pageable = run(b.s, b.d, b.h, 1);
	CK(cuMemHostRegister(b.h, SIZE, 0));
	h2d = run(b.s, b.d, b.h, 1);
	d2h = run(b.s, b.d, b.h, 0);
	CK(cuMemGetInfo(&free_b, &total_b));
	printf("cuda_bw: device %d (%s): pinned H2D %.1f GB/s, pinned D2H %.1f GB/s, pageable H2D %.1f GB/s (256 MiB x %d, one stream); %zu MiB of %zu MiB in use\n",
	       ordinal, name, h2d, d2h, pageable, REPS, (total_b - free_b) >> 20,
	       total_b >> 20);
	bench_close(&b);
}

/* H2D copies of 256 MiB back to back until 'secs' have passed. */
static void load(double secs, int ordinal)
{
	struct bench b;
	double t0, t;
	long n = 0;
	int i;

	bench_open(ordinal, &b);
	CK(cuMemHostRegister(b.h, SIZE, 0));
	t0 = now();
	do {
		for (i = 0; i < 8; i++, n++)
			CK(cuMemcpyHtoDAsync(b.d, b.h, SIZE, b.s));
		CK(cuStreamSynchronize(b.s));
		t = now();
	} while (t - t0 < secs);
	printf("cuda_bw: load on device %d: pinned H2D %.1f GB/s for %.1f s\n",
	       ordinal, (double)SIZE * n / (t - t0) / 1e9, t - t0);
	bench_close(&b);
}

int main(int argc, char **argv)
{
	int n, i;

	CK(cuInit(0));
	if (argc > 2 && !strcmp(argv[1], "--load")) {
		load(atof(argv[2]), argc > 3 ? atoi(argv[3]) : 0);
		return 0;
	}
	CK(cuDeviceGetCount(&n));
	if (argc > 1) {
		for (i = 1; i < argc; i++)
			one_device(atoi(argv[i]));
		return 0;
	}
	for (i = 0; i < n; i++)
		one_device(i);
	return 0;
}
