// SPDX-License-Identifier: MIT
/*
 * pingpong: the floor of one copy through a resident kernel, at depth 1.
 *
 * A 4k read at iodepth 1 on the bounce path waits for: the GPU to see the
 * pass (its poll of host memory), the 4 KiB read across PCIe into device
 * memory, a system-scope fence, and the CPU to see the GPU's word. This
 * runs only that, with no ring, no fio and no io_uring: one CPU thread
 * posts a sequence number and spins until a resident kernel writes it
 * back, N times per case, and prints the round trip's p50 / p99 / mean.
 *   signal  the GPU writes the number back: the poll and the trip back
 *   h2d     first 4 KiB host -> device (the CPU wrote them just before,
 *           as a read's bytes are): a read's copy
 *   d2h     first 4 KiB device -> host: a write's copy
 * each with K polls in flight (one warp's loads of the post word issued
 * 1/K of a trip apart), the fence either fence.sc.sys then a relaxed
 * store (sc) or a release store (rel), and the 4 KiB moved by one warp (8
 * loads in flight a lane) or by 8 (one each). Then, with K=1 and one warp,
 * PAIRS CPU threads at once, each with a block of its own (its own words
 * and 4 KiB), as PAIRS job threads at depth 1 are: the first one's trips
 * are timed. Cases alternate, REPS times.
 *
 * Then the same 4 KiB by the copy engine, no kernel, the CPU waiting:
 *   dma-h2d sync      cudaMemcpy from pinned memory (returns once landed)
 *   dma-h2d flag      cuMemcpyHtoDAsync, cuStreamWriteValue64 of the trip's
 *                     number into a host word, spin on it: gpu_copy=dma's way
 *   dma-h2d pageable  cudaMemcpy from malloc'd memory, as fio's libcufile
 *                     engine (cuda_io=posix) copies a read: CUDA may return
 *                     once the bytes are staged, before they land
 *   dma-d2h sync, dma-d2h flag   the same, device -> pinned host memory
 *
 *   pingpong [REPS [N [PAIRS]]]     (PAIRS: 4 unless given, at most MAXP)
 *   nvcc -O2 pingpong.cu -L$CUDA/lib64/stubs -lcuda -lpthread -o pingpong
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TOOL "pingpong"
#include "cuda_rt_check.h"
#include "cuda_check.h"

#define BLK	4096u
#define NSRC	64u	/* blocks the CPU writes from, in turn */
#define MAXP	16	/* CPU thread and block pairs at most */

struct ctl {
	uint64_t post, pad0[7];		/* CPU writes */
	uint64_t done, pad1[7];		/* GPU writes */
	uint64_t stop, pad2[7];		/* CPU writes */
};

enum { SIGNAL, H2D, D2H, MODES };
static const char *const mode_name[MODES] = { "signal", "h2d", "d2h" };

static __device__ __forceinline__ uint64_t ld_relaxed(const uint64_t *p)
{
	uint64_t v;

	asm volatile("ld.relaxed.sys.global.u64 %0, [%1];"
		     : "=l"(v) : "l"(p) : "memory");
	return v;
}

static __device__ __forceinline__ void st_relaxed(uint64_t *p, uint64_t v)
{
	asm volatile("st.relaxed.sys.global.u64 [%0], %1;"
		     :: "l"(p), "l"(v) : "memory");
}

static __device__ __forceinline__ void st_release(uint64_t *p, uint64_t v)
{
	asm volatile("st.release.sys.global.u64 [%0], %1;"
		     :: "l"(p), "l"(v) : "memory");
}

/* Wait for c->post past last with K loads of it in flight; 0: stop. */
template <int K>
static __device__ uint64_t wait_post(struct ctl *c, uint64_t last,
				     unsigned int gap_ns)
{
	uint64_t v[K];
	unsigned int n = 0;

#pragma unroll
	for (int k = 0; k < K; k++) {
		v[k] = ld_relaxed(&c->post);
		if (k + 1 < K)
			__nanosleep(gap_ns);
	}
	for (;;) {
#pragma unroll
		for (int k = 0; k < K; k++) {
			if (v[k] != last) {
				asm volatile("fence.acq_rel.sys;" ::: "memory");
				return v[k];
			}
			v[k] = ld_relaxed(&c->post);
		}
		if (++n % 256 == 0 && ld_relaxed(&c->stop))
			return 0;
	}
}

/*
 * Warp 0 waits for the post; the block's W warps then copy 4 KiB, 4096 / W
 * bytes each, meet, and thread 0 fences and answers: as dbr_kring's rounds.
 * Block i serves pair i: c[i] and the i-th 4 KiB of host and dev.
 */
template <int K>
__global__ void pp(struct ctl *c, uint4 *host, uint4 *dev, int mode,
		   int rel, unsigned int gap_ns)
{
	__shared__ uint64_t posted;
	uint32_t t = threadIdx.x, units = BLK / 16 / blockDim.x, k;
	uint64_t seq = 0;
	uint4 v[8];

	c += blockIdx.x;
	host += blockIdx.x * (BLK / 16);
	dev += blockIdx.x * (BLK / 16);

	for (;;) {
		if (t < 32) {
			seq = wait_post<K>(c, seq, gap_ns);
			if (t == 0)
				posted = seq;
		}
		__syncthreads();
		seq = posted;
		if (!seq)
			return;
		if (mode != SIGNAL) {
			const uint4 *src = mode == H2D ? host : dev;
			uint4 *dst = mode == H2D ? dev : host;

#pragma unroll
			for (k = 0; k < 8; k++)
				if (k < units)
					v[k] = mode == H2D ? __ldcv(src + k * blockDim.x + t) :
							     __ldcg(src + k * blockDim.x + t);
#pragma unroll
			for (k = 0; k < 8; k++)
				if (k < units)
					dst[k * blockDim.x + t] = v[k];
		}
		__syncthreads();
		if (t == 0) {
			if (rel) {
				st_release(&c->done, seq);
			} else {
				__threadfence_system();
				st_relaxed(&c->done, seq);
			}
		}
	}
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

struct bufs {
	struct ctl *c, *dc;
	uint4 *host, *dhost, *dev;
	char *src, *pageable;
	uint64_t *lat;
	cudaStream_t s;
};

/* p50 / p99 / mean of n round trips in b->lat, under a case's name */
static void report(struct bufs *b, const char *name, int n)
{
	double sum = 0;
	int i;

	for (i = 0; i < n; i++)
		sum += b->lat[i];
	qsort(b->lat, n, sizeof(*b->lat), cmp_u64);
	printf("pingpong %-32s p50 %5.2f p99 %5.2f mean %5.2f us\n", name,
	       b->lat[n / 2] / 1e3, b->lat[n * 99 / 100] / 1e3, sum / n / 1e3);
	fflush(stdout);
}

enum { DMA_H2D_SYNC, DMA_H2D_FLAG, DMA_H2D_PAGEABLE, DMA_D2H_SYNC,
       DMA_D2H_FLAG, DMA_CASES };
static const char *const dma_name[DMA_CASES] = {
	"dma-h2d sync", "dma-h2d flag", "dma-h2d pageable", "dma-d2h sync",
	"dma-d2h flag",
};

/* One copy-engine trip of case d, numbered i; returns when the CPU may go on */
static void dma_trip(struct bufs *b, int d, uint64_t i)
{
	volatile uint64_t *flag = &b->c->done;

	switch (d) {
	case DMA_H2D_SYNC:
		CK(cudaMemcpy(b->dev, b->host, BLK, cudaMemcpyHostToDevice));
		break;
	case DMA_H2D_PAGEABLE:
		CK(cudaMemcpy(b->dev, b->pageable, BLK, cudaMemcpyHostToDevice));
		break;
	case DMA_D2H_SYNC:
		CK(cudaMemcpy(b->host, b->dev, BLK, cudaMemcpyDeviceToHost));
		break;
	default:
		if (d == DMA_H2D_FLAG)
			CKD(cuMemcpyHtoDAsync((CUdeviceptr)b->dev, b->host, BLK, b->s));
		else
			CKD(cuMemcpyDtoHAsync(b->host, (CUdeviceptr)b->dev, BLK, b->s));
		CKD(cuStreamWriteValue64(b->s, (CUdeviceptr)&b->dc->done, i, 0));
		while (*flag != i)
			__builtin_ia32_pause();
	}
}

static void run_dma_case(struct bufs *b, int d, int n)
{
	int i;

	b->c->done = 0;
	for (i = 1; i <= n; i++) {
		uint64_t t0;

		if (d == DMA_H2D_SYNC || d == DMA_H2D_FLAG)
			memcpy(b->host, b->src + (i % NSRC) * BLK, BLK);
		else if (d == DMA_H2D_PAGEABLE)
			memcpy(b->pageable, b->src + (i % NSRC) * BLK, BLK);
		t0 = now_ns();
		dma_trip(b, d, (uint64_t)i);
		b->lat[i - 1] = now_ns() - t0;
	}
	CK(cudaDeviceSynchronize());
	report(b, dma_name[d], n);
}

/* One CPU thread's side of a case: pair p's n trips, timed into lat */
struct trips {
	struct bufs *b;
	int p, mode, n;
	uint64_t *lat;
};

static void *run_trips(void *arg)
{
	struct trips *tr = (struct trips *)arg;
	struct ctl *c = tr->b->c + tr->p;
	char *host = (char *)tr->b->host + (size_t)tr->p * BLK;
	int i;

	for (i = 1; i <= tr->n; i++) {
		uint64_t t0;

		if (tr->mode == H2D)	/* the read's bytes, as the kernel writes them */
			memcpy(host, tr->b->src + (i % NSRC) * BLK, BLK);
		t0 = now_ns();
		__atomic_store_n(&c->post, (uint64_t)i, __ATOMIC_RELEASE);
		while (__atomic_load_n(&c->done, __ATOMIC_ACQUIRE) != (uint64_t)i)
			__builtin_ia32_pause();
		if (tr->lat)
			tr->lat[i - 1] = now_ns() - t0;
	}
	return NULL;
}

/*
 * One case: N round trips of each of PAIRS CPU threads at once, the first
 * one's timed; prints its p50 / p99 / mean in us.
 */
static void run_case(struct bufs *b, int mode, int k, int rel, int warps,
		     int pairs, int n)
{
	unsigned int threads = 32 * warps;
	unsigned int gap = 900 / k;	/* about a trip across PCIe, over K */
	struct trips tr[MAXP];
	pthread_t th[MAXP];
	char name[64];
	int p;

	memset(b->c, 0, MAXP * sizeof(*b->c));
	switch (k) {
	case 1: pp<1><<<pairs, threads>>>(b->dc, b->dhost, b->dev, mode, rel, gap); break;
	case 2: pp<2><<<pairs, threads>>>(b->dc, b->dhost, b->dev, mode, rel, gap); break;
	default: pp<4><<<pairs, threads>>>(b->dc, b->dhost, b->dev, mode, rel, gap); break;
	}
	CK(cudaGetLastError());
	for (p = 0; p < pairs; p++) {
		tr[p] = (struct trips){ b, p, mode, n, p ? NULL : b->lat };
		if (p && pthread_create(&th[p], NULL, run_trips, &tr[p]))
			exit(1);
	}
	run_trips(&tr[0]);
	for (p = 1; p < pairs; p++)
		pthread_join(th[p], NULL);
	for (p = 0; p < pairs; p++)
		__atomic_store_n(&b->c[p].stop, 1, __ATOMIC_RELEASE);
	CK(cudaDeviceSynchronize());
	snprintf(name, sizeof(name), "%s K=%d fence=%s warps=%d pairs=%d",
		 mode_name[mode], k, rel ? "rel" : "sc", warps, pairs);
	report(b, name, n);
}

int main(int argc, char **argv)
{
	int reps = argc > 1 ? atoi(argv[1]) : 3, n = argc > 2 ? atoi(argv[2]) : 20000;
	int pairs = argc > 3 ? atoi(argv[3]) : 4;
	static const int ks[] = { 1, 2, 4 };
	struct bufs b;
	int r, mode, ki, rel, w, d;

	CK(cudaSetDevice(0));
	if (pairs < 1 || pairs > MAXP)
		pairs = 4;
	CK(cudaHostAlloc((void **)&b.c, MAXP * sizeof(*b.c), cudaHostAllocMapped));
	CK(cudaHostGetDevicePointer((void **)&b.dc, b.c, 0));
	CK(cudaHostAlloc((void **)&b.host, MAXP * BLK, cudaHostAllocMapped));
	CK(cudaHostGetDevicePointer((void **)&b.dhost, b.host, 0));
	CK(cudaMalloc((void **)&b.dev, MAXP * BLK));
	CK(cudaStreamCreateWithFlags(&b.s, cudaStreamNonBlocking));
	b.src = (char *)malloc(NSRC * BLK);
	b.pageable = (char *)malloc(BLK);
	b.lat = (uint64_t *)malloc(n * sizeof(*b.lat));
	if (!b.src || !b.pageable || !b.lat)
		return 1;
	memset(b.src, 0x5a, NSRC * BLK);
	for (r = 0; r < reps; r++)
		for (mode = 0; mode < MODES; mode++)
			for (ki = 0; ki < 3; ki++)
				for (rel = 0; rel < 2; rel++)
					for (w = 1; w <= 8; w *= 8)
						run_case(&b, mode, ks[ki], rel, w, 1, n);
	for (r = 0; r < reps; r++)
		for (mode = 0; mode < MODES; mode++)
			run_case(&b, mode, 1, 0, 1, pairs, n);
	for (r = 0; r < reps; r++)
		for (d = 0; d < DMA_CASES; d++)
			run_dma_case(&b, d, n);
	return 0;
}
