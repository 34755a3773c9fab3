/* SPDX-License-Identifier: MIT */
/*
 * A test double of the resident copy kernel (dbr_kring, gpu/copy/kring.cu) for
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

#include <liburing.h>

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
 * its arguments, sets fr.host and fr.dev and calls fr_start; a start reads
 * them, fr.r and the watched CQ's mapping once (struct fr_k), as the kernel
 * takes its arguments, so that several can run at once (fr_start_k, for
 * the CUDA driver stub, whose "device" addresses are host ones).
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
	/* a watched CQ (gpu_watch_cq): its rings' memory as mapped */
	uint8_t *cq_mem;
	uint64_t cq_dev;	/* the device address map_host gave it */
	bool hold_cq;		/* set: CQ rounds wait (atomic) */
	unsigned int cq_rounds, cq_copies;
} fr;

/* What one start works on: its arguments, and the CQ's mapping. */
struct fr_k {
	struct gpu_kring *r;
	uint8_t *host, *dev;
	uint8_t *cq_mem;	/* NULL: device addresses are host ones */
	uint64_t cq_dev;
	bool cq_mapped;		/* a watched CQ is mapped for this start */
};

/* What a start read of the watched CQ (kring.h's cq_* words). */
struct fr_cq {
	const uint32_t *tail, *sq_tail;
	const struct io_uring_cqe *cqes;
	uint32_t mask, seen;
};

static const void *fr_cq_at(const struct fr_k *k, uint64_t dev)
{
	if (!k->cq_mem)		/* device addresses are host ones */
		return (const void *)(uintptr_t)dev;
	return k->cq_mem + (dev - k->cq_dev);
}

/* As the kernel does at its start: what it watches, and from where. */
static void fr_cq_read(const struct fr_k *k, struct gpu_kring *r,
		       struct fr_cq *q)
{
	memset(q, 0, sizeof(*q));
	if (!r->cqes)
		return;
	if (!k->cq_mapped)
		fr.bad++;
	q->tail = fr_cq_at(k, r->cq_tail);
	q->sq_tail = fr_cq_at(k, r->sq_tail);
	q->cqes = fr_cq_at(k, r->cqes);
	q->mask = (uint32_t)r->cq_mask;
	q->seen = (uint32_t)__atomic_load_n(&r->cq_done, __ATOMIC_ACQUIRE);
}

/* CQEs posted the kernel has not taken */
static bool fr_cq_waiting(const struct fr_cq *q)
{
	return q->cqes && __atomic_load_n(q->tail, __ATOMIC_ACQUIRE) != q->seen;
}

/* SQEs whose CQEs the kernel has not taken: it may not leave */
static bool fr_cq_inflight(const struct fr_cq *q)
{
	return q->cqes && __atomic_load_n(q->sq_tail, __ATOMIC_ACQUIRE) != q->seen;
}

/*
 * One round over the CQ, as dbr_kring's: up to 32 CQEs from q->seen on,
 * once fr.hold_cq is clear and after fr.delay_us, the tagged reads' bytes
 * copied host -> device last first, then cq_done.
 */
static void fr_run_cq(const struct fr_k *k, struct gpu_kring *r,
		      struct fr_cq *q)
{
	uint32_t tail = __atomic_load_n(q->tail, __ATOMIC_ACQUIRE);
	uint32_t n = tail - q->seen, i;

	if (n > 32)
		n = 32;
	while (__atomic_load_n(&fr.hold_cq, __ATOMIC_ACQUIRE))
		usleep(100);
	if (fr.delay_us)
		usleep(fr.delay_us);
	for (i = n; i-- > 0;) {
		const struct io_uring_cqe *c = &q->cqes[(q->seen + i) & q->mask];
		uint64_t ud = c->user_data, off;

		if (!(ud & GPU_KRING_CQ_TAGGED) || !(ud & GPU_KRING_CQ_COPY) ||
		    c->res <= 0)
			continue;
		off = gpu_kring_cq_off(ud);
		memcpy(k->dev + off, k->host + off, ((size_t)c->res + 15) / 16 * 16);
		fr.cq_copies++;
	}
	q->seen += n;
	fr.cq_rounds++;
	__atomic_store_n(&r->cq_done, q->seen, __ATOMIC_RELEASE);
}

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

/*
 * Is pass seq there? As the kernel reads a slot's first line (its words in
 * any order, here the header last), every word it uses must carry the
 * pass's tag; then, past an acquire fence, so must every descriptor after
 * the line, which the host stores before the header (fr.bad counts one
 * that does not). *hdr: the header carries the tag.
 */
static bool fr_posted(struct gpu_kring *r, uint64_t seq, bool *hdr)
{
	struct gpu_kpass *p = &r->slot[seq % GPU_KRING_SLOTS];
	uint32_t tag = gpu_kring_tag(seq), n, i;
	uint64_t w[GPU_KPASS_EAGER + 2];
	bool ok;

	for (i = GPU_KPASS_EAGER + 2; i-- > 0;)
		w[i] = __atomic_load_n((uint64_t *)p + i, __ATOMIC_RELAXED);
	*hdr = w[1] >> 63 == tag;
	n = (uint32_t)w[1];
	ok = *hdr && (w[0] & 1) == tag && n <= GPU_KCOPY_MAX;
	for (i = 0; ok && i < n && i < GPU_KPASS_EAGER; i++)
		ok = (uint32_t)w[2 + i] >> 31 == tag;
	if (!ok)
		return false;
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	for (; i < n; i++)
		if (p->d[i].off >> 31 != tag)
			fr.bad++;
	return true;
}

/*
 * 0: pass seq is posted or CQEs are; 1: leave (stop, or idle with nothing
 * posted and, on a watched CQ, nothing in flight)
 */
static int fr_wait_posted(struct gpu_kring *r, uint64_t seq,
			  const struct fr_cq *q)
{
	uint64_t t0 = gpu_now_ns();
	bool hdr;

	while (!fr_posted(r, seq, &hdr) && !fr_cq_waiting(q)) {
		if (hdr)
			continue;
		if (fr_get(&r->stop))
			return 1;
		if (fr_cq_inflight(q))
			t0 = gpu_now_ns();
		if (gpu_now_ns() - t0 > fr.idle_ns) {
			fr_set(&r->running, 0);
			__atomic_thread_fence(__ATOMIC_SEQ_CST);
			if (!fr_posted(r, seq, &hdr) && !hdr &&
			    !fr_cq_inflight(q))
				return 1;
			fr_set(&r->running, 1);
			return 0;
		}
		usleep(10);
	}
	return 0;
}

/* A pass's n and flags (its header's tag taken off), its ticket. */
static uint32_t fr_n(const struct gpu_kpass *p)
{
	return (uint32_t)p->hdr;
}

static uint32_t fr_flags(const struct gpu_kpass *p)
{
	return (uint32_t)(p->hdr >> 32) & ~GPU_KRING_TAG_BIT;
}

static uint64_t fr_ticket(const struct gpu_kpass *p)
{
	return p->ticket >> 1;
}

static void fr_run_pass(const struct fr_k *k, struct gpu_kpass *p,
			uint64_t *ticket)
{
	uint64_t t = fr_ticket(p);
	unsigned int i;

	if (fr_n(p) > GPU_KCOPY_MAX || (t && t <= *ticket))
		fr.bad++;
	for (i = fr_n(p); i-- > 0;) {
		uint64_t off = (uint64_t)(p->d[i].off & ~GPU_KRING_TAG_BIT) *
			       GPU_KCOPY_ALIGN;
		size_t len = desc_len(&p->d[i]);
		bool to_host = p->d[i].len & GPU_KDESC_D2H;

		memcpy((to_host ? k->host : k->dev) + off,
		       (to_host ? k->dev : k->host) + off, len);
	}
	if (t)
		*ticket = t;
	fr.passes++;
}

/*
 * One round, as dbr_kring takes it: the passes posted from seq on, up to
 * one marked ordered after the first, as many as the kernel's poll reads
 * (POLL_SLOTS in kring.cu: 4); here the round's passes run last first, so
 * a pass the host should have marked and did not shows as bytes out of
 * order.
 */
#define FR_POLL_SLOTS	4u

static uint64_t fr_run_round(const struct fr_k *k, uint64_t seq,
			     uint64_t *ticket)
{
	struct gpu_kring *r = k->r;
	uint64_t take, j, last = *ticket, posted;
	bool hdr;

	__atomic_add_fetch(&fr.begun, 1, __ATOMIC_RELEASE);
	for (posted = 1; posted < GPU_KRING_SLOTS; posted++)
		if (!fr_posted(r, seq + posted, &hdr))
			break;
	if (posted > fr.most_posted)
		fr.most_posted = (unsigned int)posted;
	for (take = 1; take < posted && take < FR_POLL_SLOTS; take++)
		if (fr_flags(&r->slot[(seq + take) % GPU_KRING_SLOTS]) & GPU_KPASS_ORDERED)
			break;
	if (fr.delay_us)
		usleep(fr.delay_us);
	for (j = take; j-- > 0;) {
		uint64_t t = last;

		/* the host refills a slot only once the kernel is done with it */
		if (!fr_posted(r, seq + j, &hdr))
			fr.bad++;
		fr_run_pass(k, &r->slot[(seq + j) % GPU_KRING_SLOTS], &t);
		if (t > *ticket)
			*ticket = t;
	}
	fr.rounds++;
	if (*ticket > last)
		fr_set(&r->ticket, *ticket);
	fr_set(&r->tail, seq + take);
	return take;
}

/* A start: its arguments, and the start before it on its stream. */
struct fr_launch {
	struct fr_k k;
	pthread_t prev;
	bool have_prev;
};

static void *fr_kernel(void *arg)
{
	struct fr_launch *l = arg;
	struct fr_k k = l->k;
	struct gpu_kring *r = k.r;
	uint64_t seq, ticket = 0;
	struct fr_cq q;
	bool hdr;

	if (l->have_prev)
		pthread_join(l->prev, NULL);
	free(l);
	seq = fr_get(&r->tail);
	fr_cq_read(&k, r, &q);
	fr_set(&r->starts, fr_get(&r->starts) + 1);
	fr_set(&r->running, 1);
	while (!fr_wait_posted(r, seq, &q)) {
		uint64_t first = seq;
		unsigned int j;

		if (fr_cq_waiting(&q))
			fr_run_cq(&k, r, &q);
		if (!fr_posted(r, seq, &hdr))
			continue;
		seq += fr_run_round(&k, seq, &ticket);
		if (!fr.stats)
			continue;
		/* the diagnostic build's counts; a microsecond per phase */
		r->stats[GPU_KSTAT_ROUNDS]++;
		r->stats[GPU_KSTAT_PASSES] += seq - first;
		for (j = 0; j < seq - first; j++)
			r->stats[GPU_KSTAT_DESCS] +=
				fr_n(&r->slot[(first + j) % GPU_KRING_SLOTS]);
		r->stats[GPU_KSTAT_READ_NS] += 1000;
		r->stats[GPU_KSTAT_COPY_NS] += 1000;
		r->stats[GPU_KSTAT_FENCE_NS] += 1000;
	}
	return NULL;
}

/*
 * A start of k after the one running as *th where *have_th (a stream runs
 * its launches one after the other); *th becomes this one. 0 or -EAGAIN.
 */
static int fr_start_k(const struct fr_k *k, pthread_t *th, bool *have_th)
{
	struct fr_launch *l = malloc(sizeof(*l));

	if (!l)
		return -EAGAIN;
	*l = (struct fr_launch){ .k = *k, .prev = *th, .have_prev = *have_th };
	*have_th = !pthread_create(th, NULL, fr_kernel, l);
	if (*have_th)
		return 0;
	if (l->have_prev)
		pthread_join(l->prev, NULL);
	free(l);
	return -EAGAIN;
}

/*
 * One start of the kernel on stream (after the ones before it, as a
 * stream runs them), unless fr.never_start: the start is accepted and
 * the kernel never runs.
 */
static int fr_start(void *stream)
{
	struct fr_k k = { .r = fr.r, .host = fr.host, .dev = fr.dev,
			  .cq_mem = fr.cq_mem, .cq_dev = fr.cq_dev,
			  .cq_mapped = fr.cq_mem != NULL };

	fr.starts++;
	if (fr.never_start)
		return 0;
	fr.stream = stream;
	return fr_start_k(&k, &fr.th, &fr.have_th);
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
	fr.cq_rounds = fr.cq_copies = 0;
	fr.hold_cq = false;
	fr.never_start = false;
	fr.stats = false;
	fr.delay_us = delay_us;
	fr.idle_ns = idle_ns;
}

#endif
