// SPDX-License-Identifier: MIT
/*
 * cuda_calls: what the bounce path's copy passes cost in the CUDA driver.
 *
 * 1. CPU time per call, one thread, the stream kept busy: a single 4 KiB and
 *    a 64 KiB cuMemcpyHtoDAsync, cuMemcpyBatchAsync of 1..16 copies of
 *    4 KiB, and the two ways to fence a pass: cuStreamWriteValue64 into a
 *    mapped host word (what gpu/copy/stream.c uses) and cuEventRecord (plus a
 *    cuEventQuery to poll it).
 * 2. Passes per second when 1, 2, 4 and 8 threads each issue passes as fast
 *    as the GPU takes them (a pass: a batch of 2 copies and a stream write,
 *    as a 4k job's pass looks after merging), on the device's primary
 *    context as the engine does, then with a context per thread.
 *
 *   cuda_calls [DEV]
 *   cc -O2 -I$CUDA/include cuda_calls.c -L$CUDA/lib64/stubs -lcuda -lpthread -o cuda_calls
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <cuda.h>

#define SZ		4096
#define MAXB		16
#define CALLS		20000
#define PASSES		100000
#define INFLIGHT	8	/* passes a thread lets run ahead */

#define TOOL	"cuda_calls"
#include "cuda_check.h"

static double now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

/* one thread's stream, buffers and host word the stream writes */
struct lane {
	CUstream s;
	void *host;
	CUdeviceptr dev, flag_dev;
	volatile uint64_t *flag;
	CUdeviceptr dst[MAXB], src[MAXB];
	size_t len[MAXB];
};

static void lane_init(struct lane *l)
{
	int i;

	CK(cuStreamCreate(&l->s, CU_STREAM_NON_BLOCKING));
	CK(cuMemHostAlloc(&l->host, 2 * MAXB * SZ, 0));
	CK(cuMemAlloc(&l->dev, 2 * MAXB * SZ));
	CK(cuMemHostAlloc((void **)&l->flag, 4096, CU_MEMHOSTALLOC_DEVICEMAP));
	CK(cuMemHostGetDevicePointer(&l->flag_dev, (void *)l->flag, 0));
	*l->flag = 0;
	/* every other block: copies that do not continue one another */
	for (i = 0; i < MAXB; i++) {
		l->dst[i] = l->dev + 2 * i * SZ;
		l->src[i] = (CUdeviceptr)((char *)l->host + 2 * i * SZ);
		l->len[i] = SZ;
	}
}

static void batch(struct lane *l, size_t n)
{
	CUmemcpyAttributes at = { .srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM };
	size_t ai = 0;

	CK(cuMemcpyBatchAsync(l->dst, l->src, l->len, n, &at, &ai, 1, l->s));
}

/* the stream writes ticket t into the host word */
static void fence(struct lane *l, uint64_t t)
{
	CK(cuStreamWriteValue64(l->s, l->flag_dev, t, 0));
}

/* keep at most lag passes queued: wait until the word says t - lag */
static void pace(struct lane *l, uint64_t t, uint64_t lag)
{
	while (t > lag && *l->flag < t - lag)
		;
}

static void per_call_costs(void)
{
	struct lane l;
	CUevent ev;
	double t, h4 = 0, h64 = 0, wv = 0, er = 0, eq = 0;
	size_t n;
	int i;

	lane_init(&l);
	CK(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
	for (i = 0; i < CALLS; i++) {
		t = now_us();
		CK(cuMemcpyHtoDAsync(l.dev, l.host, SZ, l.s));
		h4 += now_us() - t;
		t = now_us();
		CK(cuMemcpyHtoDAsync(l.dev, l.host, 16 * SZ, l.s));
		h64 += now_us() - t;
		t = now_us();
		CK(cuEventRecord(ev, l.s));
		er += now_us() - t;
		t = now_us();
		(void)cuEventQuery(ev);
		eq += now_us() - t;
		t = now_us();
		fence(&l, i + 1);
		wv += now_us() - t;
		pace(&l, i + 1, INFLIGHT);
	}
	CK(cuStreamSynchronize(l.s));
	printf("cuda_calls: us per call: cuMemcpyHtoDAsync 4 KiB %.2f, 64 KiB %.2f; cuStreamWriteValue64 %.2f; cuEventRecord %.2f, cuEventQuery %.2f\n",
	       h4 / CALLS, h64 / CALLS, wv / CALLS, er / CALLS, eq / CALLS);
	for (n = 1; n <= MAXB; n *= 2) {
		double tb = 0;

		for (i = 0; i < CALLS; i++) {
			t = now_us();
			batch(&l, n);
			tb += now_us() - t;
			if (i % 64 == 63)
				CK(cuStreamSynchronize(l.s));
		}
		CK(cuStreamSynchronize(l.s));
		printf("cuda_calls: cuMemcpyBatchAsync of %2zu copies: %.2f us per call\n",
		       n, tb / CALLS);
	}
}

static CUdevice dev;
static CUcontext primary;
static int own_ctx;

struct runner {
	pthread_t th;
	double us;
};

static void *issue_passes(void *arg)
{
	struct runner *r = arg;
	struct lane l;
	CUcontext c = primary;
	double t0;
	uint64_t i;

	if (own_ctx) {
		CUctxCreateParams p = { 0 };

		CK(cuCtxCreate(&c, &p, 0, dev));
	} else {
		CK(cuCtxSetCurrent(c));
	}
	lane_init(&l);
	t0 = now_us();
	for (i = 1; i <= PASSES; i++) {
		batch(&l, 2);
		fence(&l, i);
		pace(&l, i, INFLIGHT);
	}
	CK(cuStreamSynchronize(l.s));
	r->us = now_us() - t0;
	if (own_ctx)
		CK(cuCtxDestroy(c));
	return NULL;
}

static void pass_rates(void)
{
	struct runner r[8];
	int nt, i;

	for (own_ctx = 0; own_ctx < 2; own_ctx++) {
		for (nt = 1; nt <= 8; nt *= 2) {
			double worst = 0;

			for (i = 0; i < nt; i++)
				pthread_create(&r[i].th, NULL, issue_passes, &r[i]);
			for (i = 0; i < nt; i++) {
				pthread_join(r[i].th, NULL);
				if (r[i].us > worst)
					worst = r[i].us;
			}
			printf("cuda_calls: %d thread%s, %s: %.0fk passes/s in all (%.1f us per pass per thread)\n",
			       nt, nt > 1 ? "s" : "",
			       own_ctx ? "a context each" : "primary context",
			       nt * (double)PASSES / worst * 1e3, worst / PASSES);
		}
	}
}

int main(int argc, char **argv)
{
	CK(cuInit(0));
	CK(cuDeviceGet(&dev, argc > 1 ? atoi(argv[1]) : 0));
	CK(cuDevicePrimaryCtxRetain(&primary, dev));
	CK(cuCtxSetCurrent(primary));
	per_call_costs();
	pass_rates();
	return 0;
}
