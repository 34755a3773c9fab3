// SPDX-License-Identifier: MIT
/*
 * batch_race: gpu_check's DMA copies (gpu_copy=dma) without the engine.
 *
 * Each thread does what one of gpu_check's does, straight on the driver:
 * its own 8 MiB of device memory, 8 MiB of page-locked host memory mapped
 * for the device, a non-blocking stream and a host word written by
 * cuStreamWriteValue64; then, ITER times, the whole buffer up in one copy
 * and back in four fenced chunks, and 600 scattered 4 KiB copies plus one
 * of 100 bytes each way in one cuMemcpyBatchAsync, every byte compared.
 * ORDER is where the 100-byte copy goes in the batch:
 *   first    where gpu_check's sorted queue put it (by offset) before the
 *            engine put the largest copy first: on the H200 (driver
 *            580.159) every thread of 8 or 16 fails with
 *            CUDA_ERROR_LAUNCH_FAILED and the kernel logs Xid 13/32; 1 or 2
 *            threads, or the same batch without the up-and-back copies
 *            beside it, pass
 *   second   the engine's order now (gpu/copy/stream.c largest_first): passes
 *   last     passes
 *
 *   batch_race [THREADS [ITER [first|second|last]]]
 *   cc -O2 -I$CUDA/include batch_race.c -L$CUDA/lib64/stubs -lcuda -lpthread -o batch_race
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

#define SZ	(8u << 20)
#define SMALL	4096u
#define NSMALL	600

static CUcontext ctx;
static int iters = 100;
static int odd_at;		/* the 100-byte copy's index in the batch */

struct worker {
	int id;
	char why[160];
};

static int fail(struct worker *w, const char *what, CUresult r)
{
	const char *n = "?";

	cuGetErrorName(r, &n);
	snprintf(w->why, sizeof(w->why), "%s: %s", what, n);
	return -1;
}

#define TRY(w, call) do { CUresult r_ = (call); \
	if (r_ != CUDA_SUCCESS) return fail((w), #call, r_); } while (0)

/* wait for the stream's host word to reach v */
static int fence(struct worker *w, CUstream s, volatile uint64_t *word,
		 CUdeviceptr word_dev, uint64_t v)
{
	TRY(w, cuStreamWriteValue64(s, word_dev, v, CU_STREAM_WRITE_VALUE_DEFAULT));
	while (*word < v) {
		CUresult r = cuStreamQuery(s);

		if (r != CUDA_SUCCESS && r != CUDA_ERROR_NOT_READY)
			return fail(w, "cuStreamQuery", r);
	}
	return 0;
}

static int scatter(struct worker *w, CUstream s, char *h, CUdeviceptr d,
		   int d2h)
{
	CUdeviceptr dst[NSMALL + 1], src[NSMALL + 1];
	size_t lens[NSMALL + 1], attr_idx = 0, i;
	CUmemcpyAttributes attr = { .srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM };

	for (i = 0; i <= NSMALL; i++) {
		/* k: the block, NSMALL for the odd copy */
		size_t k = i == (size_t)odd_at ? NSMALL : i - (i > (size_t)odd_at);
		size_t off = k < NSMALL ? 4 * SMALL + 2 * SMALL * k : SMALL + 8;

		lens[i] = k < NSMALL ? SMALL : 100;
		dst[i] = d2h ? (CUdeviceptr)(uintptr_t)(h + off) : d + off;
		src[i] = d2h ? d + off : (CUdeviceptr)(uintptr_t)(h + off);
	}
	TRY(w, cuMemcpyBatchAsync(dst, src, lens, NSMALL + 1, &attr, &attr_idx, 1, s));
	return 0;
}

static int round_trip(struct worker *w, CUstream s, char *h, CUdeviceptr d,
		      volatile uint64_t *word, CUdeviceptr word_dev, uint64_t *t,
		      int it)
{
	size_t i, c = SZ / 4;

	for (i = 0; i < SZ; i++)
		h[i] = (char)(i * 7 + it + w->id);
	/* up in one copy, back in four, each fenced by its own stream write */
	TRY(w, cuMemcpyHtoDAsync(d, h, SZ, s));
	if (fence(w, s, word, word_dev, ++*t))
		return -1;
	for (i = 0; i < 4; i++) {
		TRY(w, cuMemcpyDtoHAsync(h + i * c, d + i * c, c, s));
		TRY(w, cuStreamWriteValue64(s, word_dev, ++*t, CU_STREAM_WRITE_VALUE_DEFAULT));
	}
	if (fence(w, s, word, word_dev, ++*t))
		return -1;
	if (scatter(w, s, h, d, 0) || fence(w, s, word, word_dev, ++*t))
		return -1;
	memset(h, 0, SZ);
	if (scatter(w, s, h, d, 1) || fence(w, s, word, word_dev, ++*t))
		return -1;
	for (i = 4 * SMALL; i < 4 * SMALL + 2 * SMALL * NSMALL; i += 2 * SMALL)
		if (h[i] != (char)(i * 7 + it + w->id) ||
		    h[i + SMALL - 1] != (char)((i + SMALL - 1) * 7 + it + w->id)) {
			snprintf(w->why, sizeof(w->why), "iteration %d: byte %zu wrong", it, i);
			return -1;
		}
	return 0;
}

static int work(struct worker *w)
{
	CUdeviceptr d, word_dev;
	CUstream s;
	uint64_t t = 0;
	char *h = aligned_alloc(4096, SZ);
	uint64_t *word = aligned_alloc(4096, 4096);
	int it, ret = 0;

	if (!h || !word)
		return -1;
	*word = 0;
	TRY(w, cuCtxSetCurrent(ctx));
	TRY(w, cuMemAlloc(&d, SZ));
	TRY(w, cuMemHostRegister(h, SZ, CU_MEMHOSTREGISTER_DEVICEMAP));
	TRY(w, cuMemHostRegister(word, 4096, CU_MEMHOSTREGISTER_DEVICEMAP));
	TRY(w, cuMemHostGetDevicePointer(&word_dev, word, 0));
	TRY(w, cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	for (it = 0; it < iters && !ret; it++)
		ret = round_trip(w, s, h, d, word, word_dev, &t, it);
	TRY(w, cuStreamSynchronize(s));
	TRY(w, cuStreamDestroy(s));
	TRY(w, cuMemHostUnregister(word));
	TRY(w, cuMemHostUnregister(h));
	TRY(w, cuMemFree(d));
	free(word);
	free(h);
	return ret;
}

static void *worker_main(void *arg)
{
	return (void *)(intptr_t)work(arg);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 16, i, bad = 0;
	pthread_t th[64];
	struct worker w[64];
	CUdevice dev;

	setvbuf(stdout, NULL, _IOLBF, 0);	/* a GPU fault may end the process */
	iters = argc > 2 ? atoi(argv[2]) : 100;
	odd_at = argc <= 3 || !strcmp(argv[3], "first") ? 0 :
		 !strcmp(argv[3], "second") ? 1 : NSMALL;
	if (n < 1 || n > 64)
		return 2;
	if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev))
		return 1;
	for (i = 0; i < n; i++) {
		w[i].id = i;
		w[i].why[0] = '\0';
		pthread_create(&th[i], NULL, worker_main, &w[i]);
	}
	for (i = 0; i < n; i++) {
		void *rc;

		pthread_join(th[i], &rc);
		if (rc) {
			bad++;
			printf("batch_race: thread %d: %s\n", i, w[i].why);
		}
	}
	printf("batch_race: %d threads x %d round trips, the 100-byte copy %s in each batch: %d failed\n",
	       n, iters, !odd_at ? "first" : odd_at == 1 ? "second" : "last", bad);
	cuDevicePrimaryCtxRelease(dev);
	return bad ? 1 : 0;
}
