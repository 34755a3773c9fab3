// SPDX-License-Identifier: MIT
/*
 * ceiling: what this machine gives a bounce path without fio or the engine,
 * the ceiling the engine's 1 MiB figures are judged against. Each thread
 * keeps QD blocks of BS in flight over its own share of TARGET (O_DIRECT,
 * io_uring, page-locked host slots) and moves every block between GPU memory
 * and its slot with one async copy on its own stream:
 *
 *   read:  TARGET -> pinned slot (io_uring READ_FIXED), then H2D into GPU
 *          memory; the slot is read into again once its copy is done
 *   write: D2H from GPU memory into the slot, then WRITE_FIXED to TARGET
 *
 * The same bytes, the same threads, the same depth as the fio job; what it
 * leaves out is fio (its accounting, io_u handling) and the engine's
 * pipeline, so the engine's figure over this one is what the engine costs.
 *
 *   ceiling read|write TARGET THREADS BS_MIB QD SECONDS SHARE_MIB [AT_MIB]
 *   cc -O2 -I$CUDA/include ceiling.c -L$CUDA/lib64/stubs -lcuda -luring \
 *      -lpthread -o ceiling
 *
 * Thread i's share starts at AT_MIB (default 0) + i * SHARE_MIB, as fio's
 * offset and offset_increment place a job's.
 *
 * Prints one line: GB/s and IOPS over all threads.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>

#include <liburing.h>
#include <cuda.h>

#define TOOL	"ceiling"
#include "cuda_check.h"

static struct {
	bool write;
	const char *target;
	unsigned int threads, qd;
	size_t bs, share, at;
	double seconds;
} cfg;

struct worker {
	pthread_t tid;
	unsigned int index;
	uint64_t ios;
	double seconds;		/* of the I/O loop, set-up left out */
};

enum slot_state { SLOT_IO, SLOT_COPY };

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die_errno(const char *what, int err)
{
	fprintf(stderr, "%s: %s: %s\n", TOOL, what, strerror(err));
	exit(1);
}

/* the next block of this thread's share, sequentially, wrapping */
static uint64_t next_off(uint64_t *cursor, uint64_t base)
{
	uint64_t off = base + *cursor;

	*cursor = (*cursor + cfg.bs) % cfg.share;
	return off;
}

static void queue_io(struct io_uring *ring, char *host, unsigned int slot,
		     uint64_t off)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	if (cfg.write)
		io_uring_prep_write_fixed(sqe, 0, host + slot * cfg.bs, cfg.bs,
					  off, 0);
	else
		io_uring_prep_read_fixed(sqe, 0, host + slot * cfg.bs, cfg.bs,
					 off, 0);
	sqe->flags |= IOSQE_FIXED_FILE;
	io_uring_sqe_set_data64(sqe, slot);
}

static void start_copy(CUstream st, CUevent ev, CUdeviceptr dev, char *host,
		       unsigned int slot)
{
	size_t o = (size_t)slot * cfg.bs;

	if (cfg.write)
		CK(cuMemcpyDtoHAsync(host + o, dev + o, cfg.bs, st));
	else
		CK(cuMemcpyHtoDAsync(dev + o, host + o, cfg.bs, st));
	CK(cuEventRecord(ev, st));
}

static void *work(void *arg)
{
	struct worker *w = arg;
	unsigned int qd = cfg.qd, i, busy_copies = 0;
	uint64_t base = cfg.at + w->index * cfg.share, cursor = 0;
	enum slot_state *state = calloc(qd, sizeof(*state));
	CUevent *ev = calloc(qd, sizeof(*ev));
	size_t len = (size_t)qd * cfg.bs;
	struct io_uring ring;
	struct iovec iov;
	CUdeviceptr dev;
	CUcontext ctx;
	CUstream st;
	CUdevice d;
	char *host;
	double t0, end;
	int fd, ret;

	CK(cuDeviceGet(&d, 0));
	CK(cuDevicePrimaryCtxRetain(&ctx, d));
	CK(cuCtxSetCurrent(ctx));
	CK(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
	CK(cuMemAlloc(&dev, len));
	host = mmap(NULL, len, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (host == MAP_FAILED)
		die_errno("mmap", errno);
	CK(cuMemHostRegister(host, len, 0));
	for (i = 0; i < qd; i++)
		CK(cuEventCreate(&ev[i], CU_EVENT_DISABLE_TIMING));
	fd = open(cfg.target, (cfg.write ? O_WRONLY : O_RDONLY) | O_DIRECT);
	if (fd < 0)
		die_errno(cfg.target, errno);
	ret = io_uring_queue_init(qd, &ring, IORING_SETUP_SINGLE_ISSUER);
	if (ret < 0)
		die_errno("io_uring_queue_init", -ret);
	iov = (struct iovec){ host, len };
	if ((ret = io_uring_register_buffers(&ring, &iov, 1)) < 0 ||
	    (ret = io_uring_register_files(&ring, &fd, 1)) < 0)
		die_errno("io_uring_register", -ret);

	/* writes start with a copy out of GPU memory, reads with the read */
	for (i = 0; i < qd; i++) {
		if (cfg.write) {
			state[i] = SLOT_COPY;
			start_copy(st, ev[i], dev, host, i);
			busy_copies++;
		} else {
			state[i] = SLOT_IO;
			queue_io(&ring, host, i, next_off(&cursor, base));
		}
	}
	io_uring_submit(&ring);
	t0 = now();
	end = t0 + cfg.seconds;
	while (now() < end) {
		struct io_uring_cqe *cqe;
		unsigned int head, seen = 0;

		/* copies done: reads' slots read again, writes' slots go out */
		for (i = 0; i < qd && busy_copies; i++) {
			if (state[i] != SLOT_COPY || cuEventQuery(ev[i]) != CUDA_SUCCESS)
				continue;
			busy_copies--;
			state[i] = SLOT_IO;
			if (!cfg.write)
				w->ios++;
			queue_io(&ring, host, i, next_off(&cursor, base));
		}
		if (busy_copies)
			io_uring_submit(&ring);
		else
			io_uring_submit_and_wait(&ring, 1);
		io_uring_for_each_cqe(&ring, head, cqe) {
			unsigned int slot = (unsigned int)cqe->user_data;

			if (cqe->res != (int)cfg.bs)
				die_errno("I/O", cqe->res < 0 ? -cqe->res : EIO);
			if (cfg.write)
				w->ios++;
			state[slot] = SLOT_COPY;
			start_copy(st, ev[slot], dev, host, slot);
			busy_copies++;
			seen++;
		}
		io_uring_cq_advance(&ring, seen);
	}
	w->seconds = now() - t0;
	CK(cuStreamSynchronize(st));
	io_uring_queue_exit(&ring);
	close(fd);
	for (i = 0; i < qd; i++)
		cuEventDestroy(ev[i]);
	cuMemHostUnregister(host);
	munmap(host, len);
	cuMemFree(dev);
	cuStreamDestroy(st);
	cuDevicePrimaryCtxRelease(d);
	free(state);
	free(ev);
	return NULL;
}

int main(int argc, char **argv)
{
	double iops = 0, longest = 0;
	struct worker *w;
	unsigned int i;

	if ((argc != 8 && argc != 9) ||
	    (strcmp(argv[1], "read") && strcmp(argv[1], "write"))) {
		fprintf(stderr, "usage: %s read|write TARGET THREADS BS_MIB QD SECONDS SHARE_MIB [AT_MIB]\n",
			TOOL);
		return 2;
	}
	cfg.write = !strcmp(argv[1], "write");
	cfg.target = argv[2];
	cfg.threads = (unsigned int)atoi(argv[3]);
	cfg.bs = (size_t)atoi(argv[4]) << 20;
	cfg.qd = (unsigned int)atoi(argv[5]);
	cfg.seconds = atof(argv[6]);
	cfg.share = (size_t)atol(argv[7]) << 20;
	cfg.at = argc == 9 ? (size_t)atol(argv[8]) << 20 : 0;
	if (!cfg.threads || !cfg.bs || !cfg.qd || cfg.share < cfg.bs) {
		fprintf(stderr, "%s: threads, bs and qd must be > 0, share >= bs\n",
			TOOL);
		return 2;
	}
	CK(cuInit(0));
	w = calloc(cfg.threads, sizeof(*w));
	for (i = 0; i < cfg.threads; i++) {
		w[i].index = i;
		pthread_create(&w[i].tid, NULL, work, &w[i]);
	}
	/* each thread's rate over its own loop, added up as fio adds jobs */
	for (i = 0; i < cfg.threads; i++) {
		pthread_join(w[i].tid, NULL);
		iops += w[i].ios / w[i].seconds;
		if (w[i].seconds > longest)
			longest = w[i].seconds;
	}
	printf("ceiling %s %s: %u threads, bs %zu MiB, qd %u: %.2f GB/s, %.0f IOPS (%.1f s)\n",
	       argv[1], cfg.target, cfg.threads, cfg.bs >> 20, cfg.qd,
	       iops * cfg.bs / 1e9, iops, longest);
	free(w);
	return 0;
}
