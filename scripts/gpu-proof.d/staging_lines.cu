// SPDX-License-Identifier: MIT
/*
 * staging_lines: what the GPU reading a bounce buffer costs the CPU's next
 * write into it.
 *
 * On the bounce path an io-wq worker (or the NVMe controller) writes each
 * read's 4 KiB into page-locked staging, the resident kernel reads them
 * across PCIe, and the next read into the same I/O unit writes the same
 * lines again. On /dev/shm at 16 threads the workers spent 0.1-0.2 us more
 * CPU per read than fio's engine's (docs/perf.md), whose buffers nothing
 * else reads. This isolates that: one CPU thread writes 32 blocks of 4 KiB
 * in turn, as one ring's I/O units are (memcpy from a 256 MiB buffer, or
 * with FILE, O_DIRECT pread from it, as the worker's copy from tmpfs), and
 * publishes each block's number; mode by mode, alternating:
 *   0  no GPU;
 *   1  a GPU block follows the writes and reads each written block once,
 *      as the resident kernel's copies do (an uncached load per 16 bytes);
 *   2  the same reads from another buffer: the same PCIe traffic, no line
 *      shared with the CPU's writes.
 * 1 against 2 is what sharing the lines costs, 2 against 0 the traffic.
 *
 *   staging_lines [REPS [FILE]]
 *   nvcc -O2 staging_lines.cu -o staging_lines
 */
#ifndef _GNU_SOURCE	/* nvcc defines it for C++ */
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TOOL "staging_lines"
#include "cuda_rt_check.h"

#define BLK	4096u
#define NBUF	32u		/* blocks, as I/O units of one iodepth=32 ring */
#define SRC	(256ul << 20)	/* memcpy's source: larger than the caches */
#define MODES	3

struct shared {
	unsigned long long seq;		/* blocks written */
	unsigned long long reads;	/* blocks the GPU read */
	unsigned int stop;
};

/*
 * BLK / 16 threads: thread t reads bytes [16t, 16t + 16) of each block
 * written since it last looked, so a block's 4 KiB are in flight at once
 * across the threads, as when a warp of the resident kernel copies a
 * chunk. A block written over before the GPU got to it is skipped.
 */
__global__ void follow(const uint4 *blocks, struct shared *sh, unsigned int *sink)
{
	unsigned long long done = 0, now, reads = 0;
	unsigned int acc = 0, n, j;
	uint4 v[8];

	for (;;) {
		now = *(volatile unsigned long long *)&sh->seq;
		if (now == done) {
			if (*(volatile unsigned int *)&sh->stop)
				break;
			continue;
		}
		if (now - done > NBUF)
			done = now - NBUF;
		/* up to 8 blocks' loads in flight before any is used */
		for (; done < now; done += n, reads += n) {
			n = now - done < 8 ? (unsigned int)(now - done) : 8;
			for (j = 0; j < n; j++)
				v[j] = __ldcv(blocks + ((done + j) % NBUF) * (BLK / 16) +
					      threadIdx.x);
			for (j = 0; j < n; j++)
				acc ^= v[j].x ^ v[j].w;
		}
	}
	sink[threadIdx.x] = acc;	/* keeps the loads */
	if (!threadIdx.x)
		sh->reads = reads;
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

struct rig {
	char *stage, *other, *src;
	struct shared *sh;
	unsigned int *sink;
	int fd;
	size_t file_blocks;
	long writes;
};

/* One block's write into staging, as the worker's copy or pread. */
static void write_block(struct rig *g, long i)
{
	char *dst = g->stage + (i % NBUF) * BLK;
	off_t at = (off_t)(i * 7919 % (g->fd >= 0 ? g->file_blocks : SRC / BLK)) * BLK;

	if (g->fd < 0) {
		memcpy(dst, g->src + at, BLK);
		return;
	}
	if (pread(g->fd, dst, BLK, at) != BLK) {
		perror("staging_lines: pread");
		exit(1);
	}
}

/* ns per block written in mode m; *read_frac: the blocks the GPU read */
static double measure(struct rig *g, int m, double *read_frac)
{
	cudaStream_t st;
	double t0 = 0, t;
	long i, warm = g->writes / 10;

	memset(g->sh, 0, sizeof(*g->sh));
	CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
	if (m)
		follow<<<1, BLK / 16, 0, st>>>((const uint4 *)(m == 1 ? g->stage : g->other),
					       g->sh, g->sink);
	CK(cudaGetLastError());
	for (i = 0; i < g->writes; i++) {
		if (i == warm)
			t0 = now_s();
		write_block(g, i);
		__atomic_store_n(&g->sh->seq, (unsigned long long)i + 1, __ATOMIC_RELEASE);
	}
	t = now_s() - t0;
	__atomic_store_n(&g->sh->stop, 1, __ATOMIC_RELEASE);
	CK(cudaStreamSynchronize(st));
	CK(cudaStreamDestroy(st));
	*read_frac = m ? (double)g->sh->reads / g->writes : 0;
	return t / (g->writes - warm) * 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* one CPU for the writer, the one it runs on, for steadier figures */
static void pin_here(void)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(sched_getcpu(), &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

int main(int argc, char **argv)
{
	int reps = argc > 1 ? atoi(argv[1]) : 7, r, m;
	struct rig g;
	double ns[MODES][64], d10[64], d12[64], frac;

	memset(&g, 0, sizeof(g));
	g.fd = -1;
	if (reps < 1 || reps > 64) {
		fprintf(stderr, "staging_lines: REPS is 1..64\n");
		return 2;
	}
	if (argc > 2) {
		g.fd = open(argv[2], O_RDONLY | O_DIRECT);
		if (g.fd < 0) {
			fprintf(stderr, "staging_lines: %s: %s\n", argv[2], strerror(errno));
			return 1;
		}
		g.file_blocks = lseek(g.fd, 0, SEEK_END) / BLK;
		if (!g.file_blocks) {
			fprintf(stderr, "staging_lines: %s: under 4 KiB\n", argv[2]);
			return 1;
		}
	} else {
		g.src = (char *)malloc(SRC);
		if (!g.src)
			return 1;
		memset(g.src, 1, SRC);
	}
	g.writes = g.fd >= 0 ? 1000000 : 2000000;
	CK(cudaHostAlloc((void **)&g.stage, NBUF * BLK, cudaHostAllocMapped));
	CK(cudaHostAlloc((void **)&g.other, NBUF * BLK, cudaHostAllocMapped));
	CK(cudaHostAlloc((void **)&g.sh, sizeof(*g.sh), cudaHostAllocMapped));
	CK(cudaMalloc((void **)&g.sink, BLK / 16 * sizeof(*g.sink)));
	memset(g.stage, 0, NBUF * BLK);
	memset(g.other, 0, NBUF * BLK);
	pin_here();
	printf("staging_lines: %s into %u blocks of 4 KiB, %ld a run\n",
	       g.fd >= 0 ? "O_DIRECT pread" : "memcpy", NBUF, g.writes);
	for (r = 0; r < reps; r++) {
		printf("rep %d:", r + 1);
		for (m = 0; m < MODES; m++) {
			ns[m][r] = measure(&g, m, &frac);
			printf("  mode %d %.1f ns a block", m, ns[m][r]);
			if (m)
				printf(" (GPU read %.0f%%)", 100 * frac);
		}
		printf("\n");
		d10[r] = ns[1][r] - ns[0][r];
		d12[r] = ns[1][r] - ns[2][r];
	}
	printf("median: no GPU %.1f, GPU reads the lines %.1f, GPU reads other lines %.1f ns a block;"
	       " per repetition, reads of the lines against none %+.1f, against other lines %+.1f\n",
	       median(ns[0], reps), median(ns[1], reps), median(ns[2], reps),
	       median(d10, reps), median(d12, reps));
	CK(cudaFreeHost(g.stage));
	CK(cudaFreeHost(g.other));
	CK(cudaFreeHost(g.sh));
	CK(cudaFree(g.sink));
	free(g.src);
	if (g.fd >= 0)
		close(g.fd);
	return 0;
}
