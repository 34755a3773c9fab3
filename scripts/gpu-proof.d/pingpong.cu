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
 * loads in flight a lane) or by 8 (one each). Cases alternate, REPS times.
 *
 *   pingpong [REPS [N]]
 *   nvcc -O2 pingpong.cu -o pingpong
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TOOL "pingpong"
#include "cuda_rt_check.h"

#define BLK	4096u
#define NSRC	64u	/* blocks the CPU writes from, in turn */

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
 */
template <int K>
__global__ void pp(struct ctl *c, uint4 *host, uint4 *dev, int mode,
		   int rel, unsigned int gap_ns)
{
	__shared__ uint64_t posted;
	uint32_t t = threadIdx.x, units = BLK / 16 / blockDim.x, k;
	uint64_t seq = 0;
	uint4 v[8];

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
	char *src;
	uint64_t *lat;
};

/* One case: N round trips; prints p50 / p99 / mean in us. */
static void run_case(struct bufs *b, int mode, int k, int rel, int warps,
		     int n)
{
	unsigned int threads = 32 * warps;
	unsigned int gap = 900 / k;	/* about a trip across PCIe, over K */
	double sum = 0;
	int i;

	memset(b->c, 0, sizeof(*b->c));
	switch (k) {
	case 1: pp<1><<<1, threads>>>(b->dc, b->dhost, b->dev, mode, rel, gap); break;
	case 2: pp<2><<<1, threads>>>(b->dc, b->dhost, b->dev, mode, rel, gap); break;
	default: pp<4><<<1, threads>>>(b->dc, b->dhost, b->dev, mode, rel, gap); break;
	}
	CK(cudaGetLastError());
	for (i = 1; i <= n; i++) {
		uint64_t t0;

		if (mode == H2D)	/* the read's bytes, as the kernel writes them */
			memcpy(b->host, b->src + (i % NSRC) * BLK, BLK);
		t0 = now_ns();
		__atomic_store_n(&b->c->post, (uint64_t)i, __ATOMIC_RELEASE);
		while (__atomic_load_n(&b->c->done, __ATOMIC_ACQUIRE) != (uint64_t)i)
			__builtin_ia32_pause();
		b->lat[i - 1] = now_ns() - t0;
		sum += b->lat[i - 1];
	}
	__atomic_store_n(&b->c->stop, 1, __ATOMIC_RELEASE);
	CK(cudaDeviceSynchronize());
	qsort(b->lat, n, sizeof(*b->lat), cmp_u64);
	printf("pingpong %-6s K=%d fence=%-3s warps=%d p50 %5.2f p99 %5.2f mean %5.2f us\n",
	       mode_name[mode], k, rel ? "rel" : "sc", warps, b->lat[n / 2] / 1e3,
	       b->lat[n * 99 / 100] / 1e3, sum / n / 1e3);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	int reps = argc > 1 ? atoi(argv[1]) : 3, n = argc > 2 ? atoi(argv[2]) : 20000;
	static const int ks[] = { 1, 2, 4 };
	struct bufs b;
	int r, mode, ki, rel, w;

	CK(cudaSetDevice(0));
	CK(cudaHostAlloc((void **)&b.c, sizeof(*b.c), cudaHostAllocMapped));
	CK(cudaHostGetDevicePointer((void **)&b.dc, b.c, 0));
	CK(cudaHostAlloc((void **)&b.host, BLK, cudaHostAllocMapped));
	CK(cudaHostGetDevicePointer((void **)&b.dhost, b.host, 0));
	CK(cudaMalloc((void **)&b.dev, BLK));
	b.src = (char *)malloc(NSRC * BLK);
	b.lat = (uint64_t *)malloc(n * sizeof(*b.lat));
	if (!b.src || !b.lat)
		return 1;
	memset(b.src, 0x5a, NSRC * BLK);
	for (r = 0; r < reps; r++)
		for (mode = 0; mode < MODES; mode++)
			for (ki = 0; ki < 3; ki++)
				for (rel = 0; rel < 2; rel++)
					for (w = 1; w <= 8; w *= 8)
						run_case(&b, mode, ks[ki], rel, w, n);
	return 0;
}
