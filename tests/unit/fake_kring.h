/* SPDX-License-Identifier: MIT */
/*
 * A test double of the resident copy kernel (dbr_kring, gpu/kring.cu) for
 * the unit tests that drive a copy stream with gpu_kernel=resident: a
 * thread per start that takes the ring's passes as the kernel does and
 * copies between a test's host shadow and its "device" array. Static: each
 * test includes it once.
 */
#ifndef DBR_TEST_FAKE_KRING_H
#define DBR_TEST_FAKE_KRING_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kcopy.h"
#include "kring.h"
#include "provider.h"

static size_t desc_len(const struct gpu_kdesc *d)
{
	return (size_t)(d->len & ~GPU_KDESC_D2H) * GPU_KCOPY_ALIGN;
}

/*
 * The resident kernel's fake: each start is a thread that, as dbr_kring
 * does, first waits for the one before it (a stream runs its launches one
 * after the other), then takes the ring's passes in rounds (fr_run_round),
 * each after fr.delay_us, copying descriptors last first; it leaves on stop or
 * after fr.idle_ns with nothing posted, saying so first as the kernel does.
 * It counts what a GPU would refuse in fr.bad. A test's kernel_start checks
 * its arguments, sets fr.host and fr.dev and calls fr_start.
 */
static struct {
	struct gpu_kring *r;
	uint8_t *host, *dev;	/* what descriptors' offsets count from */
	pthread_t th;
	bool have_th;
	void *stream;		/* the stream the kernel was started on */
	unsigned int loads, starts, passes, rounds, bad, most_posted;
	unsigned int begun;	/* rounds begun (atomic) */
	bool never_start;	/* the start is accepted, the kernel never runs */
	bool stats;		/* count as the diagnostic build does */
	const char *ptx;	/* the text the kernel was last loaded from */
	long delay_us;
	uint64_t idle_ns;
} fr;

static int fr_load(const char *ptx, void **mod)
{
	if (!strstr(ptx, ".entry dbr_kring("))
		return -ENOENT;
	fr.loads++;
	fr.ptx = ptx;
	*mod = &fr;
	return 0;
}

static uint64_t fr_get(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static void fr_set(uint64_t *p, uint64_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

/* 0: pass seq is posted; 1: leave (stop, or idle with nothing posted) */
static int fr_wait_posted(struct gpu_kring *r, uint64_t seq)
{
	uint64_t t0 = gpu_now_ns();

	while (fr_get(&r->head) == seq) {
		if (fr_get(&r->stop))
			return 1;
		if (gpu_now_ns() - t0 > fr.idle_ns) {
			fr_set(&r->running, 0);
			__atomic_thread_fence(__ATOMIC_SEQ_CST);
			if (fr_get(&r->head) == seq)
				return 1;
			fr_set(&r->running, 1);
			return 0;
		}
		usleep(10);
	}
	return 0;
}

static void fr_run_pass(struct gpu_kpass *p, uint64_t *ticket)
{
	unsigned int i;

	if (p->n > GPU_KCOPY_MAX || (p->ticket && p->ticket <= *ticket))
		fr.bad++;
	for (i = p->n; i-- > 0;) {
		uint64_t off = (uint64_t)p->d[i].off * GPU_KCOPY_ALIGN;
		size_t len = desc_len(&p->d[i]);
		bool to_host = p->d[i].len & GPU_KDESC_D2H;

		memcpy((to_host ? fr.host : fr.dev) + off,
		       (to_host ? fr.dev : fr.host) + off, len);
	}
	if (p->ticket)
		*ticket = p->ticket;
	fr.passes++;
}

/*
 * One round, as dbr_kring takes it: every pass posted, up to one marked
 * ordered after the first; here the round's passes run last first, so a
 * pass the host should have marked and did not shows as bytes out of order.
 */
static uint64_t fr_run_round(struct gpu_kring *r, uint64_t seq, uint64_t head,
			     uint64_t *ticket)
{
	uint64_t take, j, last = *ticket;

	__atomic_add_fetch(&fr.begun, 1, __ATOMIC_RELEASE);
	if (head - seq > GPU_KRING_SLOTS)
		fr.bad++;
	if (head - seq > fr.most_posted)
		fr.most_posted = (unsigned int)(head - seq);
	for (take = 1; take < head - seq && take < GPU_KRING_SLOTS; take++)
		if (r->slot[(seq + take) % GPU_KRING_SLOTS].flags & GPU_KPASS_ORDERED)
			break;
	if (fr.delay_us)
		usleep(fr.delay_us);
	for (j = take; j-- > 0;) {
		uint64_t t = last;

		fr_run_pass(&r->slot[(seq + j) % GPU_KRING_SLOTS], &t);
		if (t > *ticket)
			*ticket = t;
	}
	fr.rounds++;
	if (*ticket > last)
		fr_set(&r->ticket, *ticket);
	fr_set(&r->tail, seq + take);
	return take;
}

static void *fr_kernel(void *prev)
{
	struct gpu_kring *r = fr.r;
	uint64_t seq, ticket = 0, head;

	if (prev) {
		pthread_join(*(pthread_t *)prev, NULL);
		free(prev);
	}
	seq = fr_get(&r->tail);
	fr_set(&r->starts, fr_get(&r->starts) + 1);
	fr_set(&r->running, 1);
	while (!fr_wait_posted(r, seq)) {
		uint64_t first = seq;
		unsigned int j;

		head = fr_get(&r->head);
		seq += fr_run_round(r, seq, head, &ticket);
		if (!fr.stats)
			continue;
		/* the diagnostic build's counts; a microsecond per phase */
		r->stats[GPU_KSTAT_ROUNDS]++;
		r->stats[GPU_KSTAT_PASSES] += seq - first;
		for (j = 0; j < seq - first; j++)
			r->stats[GPU_KSTAT_DESCS] +=
				r->slot[(first + j) % GPU_KRING_SLOTS].n;
		r->stats[GPU_KSTAT_READ_NS] += 1000;
		r->stats[GPU_KSTAT_COPY_NS] += 1000;
		r->stats[GPU_KSTAT_FENCE_NS] += 1000;
	}
	return NULL;
}

/*
 * One start of the kernel on stream (after the ones before it, as a
 * stream runs them), unless fr.never_start: the start is accepted and
 * the kernel never runs.
 */
static int fr_start(void *stream)
{
	pthread_t *prev = NULL;

	fr.starts++;
	if (fr.never_start)
		return 0;
	fr.stream = stream;
	if (fr.have_th) {
		prev = malloc(sizeof(*prev));
		*prev = fr.th;
	}
	fr.have_th = !pthread_create(&fr.th, NULL, fr_kernel, prev);
	return fr.have_th ? 0 : -EAGAIN;
}

/* A wait for the kernel's stream: for every start so far to have left. */
static void fr_join(void *stream)
{
	if (!fr.have_th || stream != fr.stream)
		return;
	pthread_join(fr.th, NULL);
	fr.have_th = false;
}

static void fr_reset(long delay_us, uint64_t idle_ns)
{
	fr.starts = fr.passes = fr.rounds = fr.bad = fr.most_posted = 0;
	fr.never_start = false;
	fr.stats = false;
	fr.delay_us = delay_us;
	fr.idle_ns = idle_ns;
}

#endif
