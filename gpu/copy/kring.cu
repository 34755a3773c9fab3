// SPDX-License-Identifier: MIT
/*
 * dbr_kring: the resident copy kernel (kring.h says why and how the host
 * side drives it). This file is the kernel's source; the engine loads the
 * PTX that gpu/copy/kring-ptx makes of it (gpu/copy/kring_ptx.h, committed, so no
 * CUDA compiler is needed to build the engine; tests/gpu/kcopy_ptx.sh
 * checks the two agree where nvcc exists).
 *
 * One block per copy stream polls the stream's ring of passes in
 * page-locked host memory, reading the first lines of its next slots in
 * one trip across PCIe (kring.h: each word carries the slot's use). It
 * takes the passes found posted (up to one that must wait for those before
 * it) as one round, moves every descriptor's bytes,
 * in 4 KiB chunks dealt round the block's warps, makes them visible to the
 * whole system, and then says so in host memory: the passes done (tail),
 * the newest fence ticket done (ticket). It leaves when
 * the host asks (stop, once every posted pass is done) or after a while
 * with nothing to do (idle), so that a thread that no longer copies holds
 * no SM and no context-wide call (cuMemFree waits for running kernels)
 * waits on a kernel nobody will stop.
 */
#include <stdint.h>

#define KRING_SLOTS	8u		/* GPU_KRING_SLOTS */
#define KDESC_MAX	256u		/* GPU_KCOPY_MAX */
#define KDESC_D2H	(1u << 31)	/* GPU_KDESC_D2H */
#define TAG_BIT		(1u << 31)	/* GPU_KRING_TAG_BIT */
#define THREADS		512u		/* GPU_KRING_THREADS */
#define WARPS		(THREADS / 32u)
#define CHUNK		256u		/* 16-byte units a warp moves a step: 4 KiB */
#define IDLE_NS		2000000ull	/* GPU_KRING_IDLE_NS */
#define KPASS_ORDERED	1u		/* GPU_KPASS_ORDERED */
#define EAGER		6u		/* GPU_KPASS_EAGER */
#define LINE_WORDS	8u		/* 8-byte words in a slot's first line */
#ifndef POLL_SLOTS
#define POLL_SLOTS	4u		/* slots a poll reads the first line of */
#endif

struct kdesc {
	uint32_t off, len;	/* off | tag << 31, len | KDESC_D2H */
};

/* struct gpu_kpass in kring.h */
struct kpass {
	uint64_t ticket;	/* ticket << 1 | tag */
	uint64_t hdr;		/* n | (flags | tag << 31) << 32 */
	struct kdesc d[KDESC_MAX];
	uint32_t pad[12];
};

/* struct gpu_kring in kring.h */
struct kring {
	uint64_t stop;					/* host writes */
	uint64_t cq_tail, sq_tail, cqes, cq_mask;	/* the watched CQ */
	uint64_t pad0[11];
	uint64_t tail, ticket, running, starts;		/* device writes */
	uint64_t cq_done, pad1[3];
	uint64_t stats[8];				/* GPU_KSTAT_* */
	struct kpass slot[KRING_SLOTS];
};

/* user_data of a CQE the kernel copies for (gpu_kring_cq_tag) */
#define CQ_TAGGED	(1ull << 63)
#define CQ_COPY		(1ull << 16)
#define CQ_OFF_SHIFT	17
#define CQ_TAKE		32u	/* CQEs a round takes at most */

/* The ring's CQ as the kernel sees it (zeros: none watched). */
struct cqw {
	const uint32_t *tail, *sq_tail;
	const uint4 *cqes;		/* 16-byte CQEs */
	uint32_t mask, seen;		/* CQEs seen so far (wraps as tail) */
};

/* gpu_kring_tag: the low bit of the slot's use */
static __device__ __forceinline__ uint32_t tag_of(uint64_t seq)
{
	return (uint32_t)(seq / KRING_SLOTS) & 1u;
}

static __device__ __forceinline__ uint64_t ld_acquire(const uint64_t *p)
{
	uint64_t v;

	asm volatile("ld.acquire.sys.global.u64 %0, [%1];"
		     : "=l"(v) : "l"(p) : "memory");
	return v;
}

static __device__ __forceinline__ uint64_t ld_relaxed(const uint64_t *p)
{
	uint64_t v;

	asm volatile("ld.relaxed.sys.global.u64 %0, [%1];"
		     : "=l"(v) : "l"(p) : "memory");
	return v;
}

static __device__ __forceinline__ uint32_t ld_relaxed32(const uint32_t *p)
{
	uint32_t v;

	asm volatile("ld.relaxed.sys.global.u32 %0, [%1];"
		     : "=r"(v) : "l"(p) : "memory");
	return v;
}

/*
 * After a relaxed load that saw a release store, an acquire pattern: what
 * the host stored before it is seen by what follows.
 */
static __device__ __forceinline__ void fence_acquire(void)
{
	asm volatile("fence.acq_rel.sys;" ::: "memory");
}

static __device__ __forceinline__ void st_relaxed(uint64_t *p, uint64_t v)
{
	asm volatile("st.relaxed.sys.global.u64 [%0], %1;"
		     :: "l"(p), "l"(v) : "memory");
}

static __device__ __forceinline__ uint64_t now_ns(void)
{
	uint64_t t;

	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

/* The round's passes, as read from their slots. */
struct round {
	struct kdesc d[POLL_SLOTS][KDESC_MAX];
	struct kdesc cq_d[CQ_TAKE];
	uint32_t cq_n;		/* CQEs this round takes */
	uint32_t n[POLL_SLOTS], flags[POLL_SLOTS];
	uint64_t ticket[POLL_SLOTS];
	uint32_t take;		/* passes this round copies; 0: leave */
};

/*
 * Warp 0, one poll: lane l reads word l % LINE_WORDS of the first line of
 * pass seq + l / LINE_WORDS, all in one trip across PCIe. A pass is there
 * when every word of its line that it uses carries its tag (a descriptor
 * past its n is not looked at), and the round takes the passes there from
 * seq on, up to the first after seq that is to run after those before it;
 * their lines go into w, and the lanes that read their headers fence, so
 * that what the host stored before a header is seen after the block meets.
 * Returns the passes taken; *hdr: pass seq's header word carries its tag.
 */
static __device__ uint32_t poll_lines(struct kring *r, struct round *w,
				      uint64_t seq, bool *hdr)
{
	uint32_t lane = threadIdx.x, j = lane / LINE_WORDS, i = lane % LINE_WORDS;
	uint32_t tag = tag_of(seq + j), n, flags, stale, take;
	uint64_t v = 0, h;
	bool fresh;

	if (j < POLL_SLOTS)
		v = ld_relaxed((const uint64_t *)&r->slot[(seq + j) % KRING_SLOTS] + i);
	h = __shfl_sync(~0u, v, j * LINE_WORDS + 1);
	n = (uint32_t)h;
	flags = (uint32_t)(h >> 32);
	if (i == 0)
		fresh = (v & 1) == tag;
	else if (i == 1)
		fresh = flags >> 31 == tag;
	else
		fresh = i - 2 >= n || (uint32_t)v >> 31 == tag;
	stale = __ballot_sync(~0u, j >= POLL_SLOTS || !fresh ||
				   (i == 1 && j && (flags & KPASS_ORDERED)));
	*hdr = !(stale & 2);
	take = stale ? (__ffs(stale) - 1) / LINE_WORDS : 32 / LINE_WORDS;
	if (j >= take)
		return take;
	if (i == 0) {
		w->ticket[j] = v >> 1;
	} else if (i == 1) {
		w->n[j] = min(n, KDESC_MAX);
		w->flags[j] = flags;
		fence_acquire();
	} else if (i - 2 < n) {
		w->d[j][i - 2].off = (uint32_t)v & ~TAG_BIT;
		w->d[j][i - 2].len = (uint32_t)(v >> 32);
	}
	return take;
}

/*
 * Warp 0, after a look that found CQEs past q->seen: take up to CQ_TAKE of
 * them, one a lane, as descriptors of host -> device copies (the read's
 * bytes, res of them, at the offset its user_data carries). Lane 0 saw the
 * tail with a relaxed load; it fences, and the warp meets, before any lane
 * reads a CQE the kernel stored before that tail.
 */
static __device__ uint32_t cq_take(struct cqw *q, struct round *w,
				   uint32_t tail)
{
	uint32_t lane = threadIdx.x, n = min(tail - q->seen, CQ_TAKE);

	if (lane == 0)
		fence_acquire();
	__syncwarp();
	if (lane < n) {
		uint4 v = __ldcv(&q->cqes[(q->seen + lane) & q->mask]);
		uint64_t ud = v.x | (uint64_t)v.y << 32;
		int32_t res = (int32_t)v.z;
		bool copy = (ud & CQ_TAGGED) && (ud & CQ_COPY) && res > 0;

		w->cq_d[lane].off = copy ? (uint32_t)(ud >> CQ_OFF_SHIFT) : 0;
		w->cq_d[lane].len = copy ? ((uint32_t)res + 15) / 16 : 0;
	}
	q->seen += n;
	return n;
}

/* Lane 0's loads of the CQ's and the SQ's tails (none: no CQ watched). */
static __device__ __forceinline__ void cq_load(const struct cqw *q,
					       uint32_t *ct, uint32_t *st)
{
	if (q->cqes && threadIdx.x == 0) {
		*ct = ld_relaxed32(q->tail);
		*st = ld_relaxed32(q->sq_tail);
	}
}

/*
 * Warp 0, one look: the pass slots' first lines and, on a watched ring, the
 * CQ's and the SQ's tails (*st, to all lanes) in the same trip, and the
 * CQEs past q->seen taken (*ncq). Returns the passes taken.
 */
static __device__ uint32_t look(struct kring *r, struct round *w, uint64_t seq,
				struct cqw *q, uint32_t *ncq, uint32_t *st,
				bool *hdr)
{
	uint32_t take, ct = 0, s = 0;

	cq_load(q, &ct, &s);
	take = poll_lines(r, w, seq, hdr);
	ct = __shfl_sync(~0u, ct, 0);
	*st = __shfl_sync(~0u, s, 0);
	*ncq = ct != q->seen ? cq_take(q, w, ct) : 0;
	return take;
}

#define STOP_POLLS	16

/*
 * Warp 0: poll until a pass is there (the passes taken) or CQEs (*ncq), or
 * 0: leave (stop asked, or idle too long with nothing posted and nothing
 * in flight on a watched ring). Every poll is a read across
 * PCIe (about a microsecond), so nothing else is read on the way: stop and
 * the clock are looked at every STOP_POLLS polls only. Going idle is said
 * first and the slot looked at once more after a system-wide fence, as the
 * host posts, fences and then looks whether a kernel runs: one of the two
 * sees the other. A header seen with its tag keeps the kernel on while the
 * rest of its line is still on the way.
 */
static __device__ uint32_t wait_round(struct kring *r, struct round *w,
				      uint64_t seq, struct cqw *q,
				      uint32_t *ncq)
{
	uint64_t t0 = now_ns();
	unsigned int polls = 0;
	uint32_t take, st;
	int leave;
	bool hdr;

	for (;;) {
		take = look(r, w, seq, q, ncq, &st, &hdr);
		if (take || *ncq)
			return take + *ncq;
		if (++polls % STOP_POLLS || hdr)
			continue;
		leave = 0;
		if (threadIdx.x == 0)
			leave = ld_acquire(&r->stop) ? 1 :
				now_ns() - t0 > IDLE_NS ? 2 : 0;
		leave = __shfl_sync(~0u, leave, 0);
		if (leave == 1)
			return 0;
		if (leave && st != q->seen)	/* reads in flight */
			leave = 0;
		if (!leave)
			continue;
		if (threadIdx.x == 0)
			st_relaxed(&r->running, 0);
		__threadfence_system();
		take = look(r, w, seq, q, ncq, &st, &hdr);
		if (!take && !hdr && !*ncq && st == q->seen)
			return 0;
		if (threadIdx.x == 0)
			st_relaxed(&r->running, 1);
		if (take || *ncq)
			return take + *ncq;
		t0 = now_ns();
	}
}

/*
 * One warp moves one 4 KiB chunk, [u, min(u + CHUNK, end)) in 16-byte
 * units: eight loads in flight per lane, then eight stores. Host memory is
 * read around the caches (the CPU or a device wrote it since), device
 * memory at L2 (where the copy engines and other SMs write it).
 */
static __device__ __forceinline__ void copy_chunk(const uint4 *src, uint4 *dst,
						  uint32_t u, uint32_t end,
						  bool d2h, uint32_t lane)
{
	uint4 v[8];
	uint32_t k;

#pragma unroll
	for (k = 0; k < 8; k++) {
		uint32_t i = u + k * 32 + lane;

		if (i < end)
			v[k] = d2h ? __ldcg(src + i) : __ldcv(src + i);
	}
#pragma unroll
	for (k = 0; k < 8; k++) {
		uint32_t i = u + k * 32 + lane;

		if (i < end)
			dst[i] = v[k];
	}
}

/*
 * A pass's chunks dealt round the warps: warp w takes the round's chunks w,
 * w + WARPS, ..., counted on from the passes before it in the round (*c:
 * this warp's next chunk, *base: the chunks before this pass).
 */
static __device__ void copy_pass(const struct kdesc *d, uint32_t n,
				 uint4 *host, uint4 *dev, uint32_t *c,
				 uint32_t *base)
{
	uint32_t lane = threadIdx.x % 32, i;

	for (i = 0; i < n; i++) {
		bool d2h = d[i].len & KDESC_D2H;
		uint32_t len = d[i].len & ~KDESC_D2H;
		uint32_t end = d[i].off + len;
		uint32_t chunks = (len + CHUNK - 1) / CHUNK;

		for (; *c < *base + chunks; *c += WARPS)
			copy_chunk(d2h ? dev : host, d2h ? host : dev,
				   d[i].off + (*c - *base) * CHUNK, end, d2h,
				   lane);
		*base += chunks;
	}
}

/*
 * The descriptors of the taken passes past their first lines, which the
 * header lanes' fences ordered after the headers.
 */
static __device__ void read_rest(struct kring *r, struct round *w,
				 uint64_t seq)
{
	bool more = false;
	uint32_t j, i;

	for (j = 0; j < w->take; j++) {
		const struct kpass *p = &r->slot[(seq + j) % KRING_SLOTS];

		more |= w->n[j] > EAGER;
		for (i = EAGER + threadIdx.x; i < w->n[j]; i += THREADS) {
			uint2 v = __ldcv((const uint2 *)&p->d[i]);

			w->d[j][i].off = v.x & ~TAG_BIT;
			w->d[j][i].len = v.y;
		}
	}
	if (more)
		__syncthreads();
}

/*
 * A round: the passes poll_lines took, copied as one, then the block meets
 * and thread 0 alone fences at system scope before it tells the host the
 * newest ticket and the passes done: fences are cumulative, so the barrier
 * orders every thread's stores (device memory for gathers, host memory for
 * scatters) before that fence, and a CPU that reads the ticket with acquire
 * semantics sees all of them. Passes are taken together because each costs
 * trips across PCIe (a microsecond or more each, one after the other: read
 * the slots' lines, read the data, fence) that one pass at a time would
 * pay for every pass; copies of one pass never overlap, and the host marks
 * a pass whose copies may overlap an earlier one's (KPASS_ORDERED).
 */
/*
 * Built with -DDBR_KRING_STATS (gpu/copy/kring-ptx --stats, loaded through
 * $DBR_KRING_PTX), thread 0 sums what each round's phases took by the GPU's
 * clock and adds the sums to the ring's stats words when the kernel leaves
 * (GPU_KSTAT_* in kring.h): a diagnostic build, since the clock reads and
 * the stores are work the plain kernel does not do.
 */
#ifdef DBR_KRING_STATS
#define KSTAT_WORDS	8	/* GPU_KSTAT_WORDS */
enum {			/* GPU_KSTAT_* */
	KS_ROUNDS, KS_PASSES, KS_DESCS, KS_READ_NS, KS_COPY_NS, KS_FENCE_NS,
	KS_WAIT_NS,
};
struct kstat {
	uint64_t v[KSTAT_WORDS], mark;
};

static __device__ void kstat_begin(struct kring *r, struct kstat *k)
{
	for (int i = 0; i < KSTAT_WORDS; i++)
		k->v[i] = __ldcv(&r->stats[i]);
	k->mark = now_ns();
}

/* the time since the last mark into word i */
static __device__ void kstat_lap(struct kstat *k, int i)
{
	uint64_t t = now_ns();

	k->v[i] += t - k->mark;
	k->mark = t;
}

static __device__ void kstat_round(struct kstat *k, const struct round *w)
{
	k->v[KS_ROUNDS]++;
	k->v[KS_PASSES] += w->take;
	for (uint32_t j = 0; j < w->take; j++)
		k->v[KS_DESCS] += w->n[j];
}

static __device__ void kstat_end(struct kring *r, const struct kstat *k)
{
	for (int i = 0; i < KSTAT_WORDS; i++)
		st_relaxed(&r->stats[i], k->v[i]);
	__threadfence_system();
}
#define KSTAT(stmt)	do { if (threadIdx.x == 0) { stmt; } } while (0)
#else
#define KSTAT(stmt)	do { } while (0)
#endif

extern "C" __global__ void __launch_bounds__(THREADS)
dbr_kring(struct kring *r, uint4 *host, uint4 *dev)
{
	__shared__ struct round w;
	uint64_t seq = __ldcv(&r->tail), ticket;
	uint32_t j, c, base, take, ncq;
	struct cqw q = { 0 };
#ifdef DBR_KRING_STATS
	struct kstat ks;
#endif

	if (threadIdx.x < 32) {
		q.cqes = (const uint4 *)__ldcv(&r->cqes);
		q.tail = (const uint32_t *)__ldcv(&r->cq_tail);
		q.sq_tail = (const uint32_t *)__ldcv(&r->sq_tail);
		q.mask = (uint32_t)__ldcv(&r->cq_mask);
		q.seen = (uint32_t)__ldcv(&r->cq_done);
	}
	if (threadIdx.x == 0) {
		st_relaxed(&r->starts, __ldcv(&r->starts) + 1);
		st_relaxed(&r->running, 1);
	}
	KSTAT(kstat_begin(r, &ks));
	for (;;) {
		if (threadIdx.x < 32) {
			take = wait_round(r, &w, seq, &q, &ncq);
			if (threadIdx.x == 0) {
				w.take = take - ncq;
				w.cq_n = ncq;
			}
		}
		KSTAT(kstat_lap(&ks, KS_WAIT_NS));
		__syncthreads();
		/*
		 * kept: once past the barrier after the copies, warp 0 may
		 * write the next round's passes into w
		 */
		take = w.take;
		ncq = w.cq_n;
		if (!take && !ncq) {
			KSTAT(kstat_end(r, &ks));
			return;
		}
		read_rest(r, &w, seq);
		KSTAT(kstat_lap(&ks, KS_READ_NS));
		c = threadIdx.x / 32;
		base = 0;
		for (j = 0; j < take; j++)
			copy_pass(w.d[j], w.n[j], host, dev, &c, &base);
		copy_pass(w.cq_d, ncq, host, dev, &c, &base);
		__syncthreads();
		KSTAT(kstat_lap(&ks, KS_COPY_NS));
		seq += take;
		if (threadIdx.x == 0) {
			for (ticket = 0, j = 0; j < take; j++)
				ticket = max(ticket, w.ticket[j]);
			__threadfence_system();
			if (ticket)
				st_relaxed(&r->ticket, ticket);
			if (take)
				st_relaxed(&r->tail, seq);
			if (ncq)
				st_relaxed(&r->cq_done, q.seen);
		}
		KSTAT(kstat_lap(&ks, KS_FENCE_NS));
		KSTAT(kstat_round(&ks, &w));
	}
}
