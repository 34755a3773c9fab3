/* SPDX-License-Identifier: MIT */
/*
 * The resident copy kernel (gpu_kernel=resident, and auto for job threads,
 * where the copy kernel is used): one block per copy stream that stays on the GPU and
 * takes its passes from a ring in page-locked host memory, so that sending
 * a pass is a few stores to host memory rather than a runtime call.
 *
 * Why: every runtime call takes the driver's process-wide lock. Launching
 * the copy kernel once per pass (kcopy.h) costs one call per pass, and at
 * 16 fio threads on one H200 those calls were what limited 4 KiB bounce
 * reads (about 28 us per launch per thread, waiting on the lock). A pass
 * through the ring costs no call at all: the host writes the pass's
 * descriptors and header into a slot; the kernel, polling the slot's first
 * line, moves the bytes, makes them visible to the CPU and writes the pass's
 * fence ticket and the passes done back into host memory, where the stream
 * polls them as it polls its host word.
 *
 * The kernel leaves when the stream stops, or after GPU_KRING_IDLE_NS with
 * nothing posted, so that an idle thread holds no SM and never keeps a
 * context-wide call (cuMemFree waits for every running kernel) waiting on a
 * kernel only it could stop; posting to a ring whose kernel has left starts
 * it again (one call). The first start waits for the kernel to say it runs,
 * and where it does not within GPU_KRING_START_NS (the GPU is full of
 * other resident work) the stream launches per pass instead.
 *
 * This unit is runtime-free: the ring's layout, shared with the kernel
 * (kring.cu), and the host's side of the protocol. stream.c drives it.
 */
#ifndef DBR_GPU_KRING_H
#define DBR_GPU_KRING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kcopy.h"

/* Passes posted and not yet done, at most. */
#define GPU_KRING_SLOTS		8u
/* Passes one round takes at most: the slots a poll reads (kring.cu's POLL_SLOTS). */
#define GPU_KRING_ROUND		4u
/* The kernel leaves after this long with nothing posted. */
#define GPU_KRING_IDLE_NS	2000000ull
/* A wait for a pass polls this long before it naps (stream.c)... */
#define GPU_KRING_YIELD_NS	200000ull
/* ...with a sched_yield this often. */
#define GPU_KRING_YIELD_EVERY_NS	50000ull
/* How long the first start may take to say it runs. */
#define GPU_KRING_START_NS	1000000000ull

/*
 * One pass: its descriptors (kcopy.h) and the fence ticket it ends, or 0.
 * The kernel takes the passes posted as one round, their copies in any
 * order, except that a pass marked GPU_KPASS_ORDERED starts only once every
 * pass before it is done: the host marks the first pass after a submit
 * (gpu_stream_submit), after which copies of the same bytes may follow.
 */
#define GPU_KPASS_ORDERED	1u

/*
 * How the kernel finds a pass posted: a slot's first 64-byte line holds
 * the pass's header and its first GPU_KPASS_EAGER descriptors, and every
 * 8-byte word of it carries the use of the slot it was written for
 * (gpu_kring_tag: the pass's sequence number / GPU_KRING_SLOTS, its low bit).
 * One read of the line across PCIe then both says that the pass is posted
 * and brings it, where a poll of a head word and a read of the slot after
 * it took two trips, one after the other. The GPU may see the words of a
 * line it reads as the host stores them in any order, so each one proves
 * itself; the host stores all of them at every use (a word left from two
 * uses back would carry the tag of this one) and the header word last,
 * with release semantics, after the descriptors past the line.
 */
#define GPU_KPASS_EAGER		6u
/* The tag bit: ticket's bit 0, flags' bit 31, a descriptor's off's bit 31 */
#define GPU_KRING_TAG_BIT	(1u << 31)

static inline uint32_t gpu_kring_tag(uint64_t seq)
{
	return (uint32_t)(seq / GPU_KRING_SLOTS) & 1u;
}

struct gpu_kpass {
	uint64_t ticket;	/* ticket << 1 | tag */
	uint64_t hdr;		/* n | (flags | tag << 31) << 32, stored last */
	struct gpu_kdesc d[GPU_KCOPY_MAX];	/* off | tag << 31 */
	uint32_t pad[12];	/* each slot whole 64-byte lines */
};

/*
 * What the kernel's diagnostic build (kring.cu built with DBR_KRING_STATS:
 * gpu/copy/kring-ptx --stats, loaded through $DBR_KRING_PTX) adds up in the
 * ring's stats words when it leaves: rounds, the passes and descriptors
 * they took, and by the GPU's clock the time spent reading the rounds'
 * passes, copying, fencing and telling the host, and waiting for passes.
 */
enum {
	GPU_KSTAT_ROUNDS,
	GPU_KSTAT_PASSES,
	GPU_KSTAT_DESCS,
	GPU_KSTAT_READ_NS,
	GPU_KSTAT_COPY_NS,
	GPU_KSTAT_FENCE_NS,
	GPU_KSTAT_WAIT_NS,
};

/*
 * The ring, in page-locked host memory the device maps (struct kring in
 * kring.cu). The host writes stop and the slots, the device the words
 * after stop, each side in cache lines of its own.
 */
struct gpu_kring {
	uint64_t stop;		/* 1: leave once every posted pass is done */
	/*
	 * An io_uring CQ the kernel watches (cqes 0: none), read at each
	 * start: device addresses of its tail, of the SQ's tail, of its
	 * CQEs, and its mask. CQEs whose user_data gpu_kring_cq_tag made
	 * have their read's bytes copied host -> device by the kernel, which
	 * then says how many CQEs it has seen (cq_done) once their copies are
	 * visible.
	 */
	uint64_t cq_tail, sq_tail, cqes, cq_mask;
	uint64_t pad0[11];
	uint64_t tail;		/* passes done */
	uint64_t ticket;	/* newest ticket done */
	uint64_t running;	/* 1 from a start until the kernel leaves */
	uint64_t starts;	/* times the kernel started */
	uint64_t cq_done;	/* CQEs of the watched CQ seen and copied */
	uint64_t pad1[3];
	uint64_t stats[GPU_KSTAT_WORDS];	/* the diagnostic build's */
	struct gpu_kpass slot[GPU_KRING_SLOTS];
};

/*
 * user_data of an SQE whose read's bytes the kernel copies to the device
 * once its CQE is posted: the tag bit (no pointer has it), slot (the
 * host's index of the request), and the offset in 16-byte units.
 */
#define GPU_KRING_CQ_TAGGED	(1ull << 63)
#define GPU_KRING_CQ_COPY	(1ull << 16)
#define GPU_KRING_CQ_OFF_SHIFT	17
/* Requests a tag can name: its slot is the low 16 bits. */
#define GPU_KRING_CQ_SLOTS	(1u << 16)

static inline uint64_t gpu_kring_cq_tag(uint16_t slot, size_t off, bool copy)
{
	return GPU_KRING_CQ_TAGGED | (uint64_t)(off / 16) << GPU_KRING_CQ_OFF_SHIFT |
	       (copy ? GPU_KRING_CQ_COPY : 0) | slot;
}

static inline uint16_t gpu_kring_cq_slot(uint64_t tag)
{
	return (uint16_t)tag;
}

static inline size_t gpu_kring_cq_off(uint64_t tag)
{
	return (size_t)((tag & ~GPU_KRING_CQ_TAGGED) >> GPU_KRING_CQ_OFF_SHIFT) * 16;
}

/* The host's side of one ring. */
struct gpu_kring_host {
	struct gpu_kring *r;	/* NULL: no resident kernel */
	uint64_t r_dev;		/* its device address */
	uint64_t posted;	/* passes posted */
	uint32_t n;		/* descriptors in the open pass */
	uint32_t flags;		/* the open pass's */
	uint64_t last_ticket;	/* newest ticket posted */
	bool open;		/* slot posted % SLOTS is being filled */
	bool dirty;		/* passes posted since last_ticket */
	bool order_next;	/* the next pass with copies is ordered */
};

/*
 * The PTX text of dbr_kring: kring_ptx.h's, or where $DBR_KRING_PTX names a
 * file, that file's, read once for the process (the runtime keeps a module
 * per text). NULL with *why set where that file cannot be read.
 */
const char *gpu_kring_ptx(char *why, size_t len);

/* Bytes to map for a ring, a whole number of pages. */
size_t gpu_kring_size(void);

/* A fresh ring in r (zeroed memory of gpu_kring_size bytes). */
void gpu_kring_init(struct gpu_kring_host *k, struct gpu_kring *r,
		    uint64_t r_dev);

/* Is there a slot free for the next pass (none open)? */
bool gpu_kring_room(const struct gpu_kring_host *k);

/*
 * Would a pass posted now make the kernel's next round: one is open, or
 * fewer passes than a round takes (GPU_KRING_ROUND) are posted and not
 * done. Past that a pass posted now waits a round more anyway, and passes
 * of a copy or two each, one per collect, would fill every slot.
 */
bool gpu_kring_next_round(const struct gpu_kring_host *k);

/*
 * Add copy c (one gpu_kcopy_takes took) to the open pass, opening one
 * first; false when the open pass is full or no slot is free (post, wait
 * for room, add again). The caller checks room before opening.
 */
bool gpu_kring_add(struct gpu_kring_host *k, const struct gpu_copy *c);

/*
 * Post the open pass (an empty one when none is open and ticket is set: the
 * caller checks room first, as before opening one), ending fence 'ticket'
 * (0: none). true when no kernel runs to take it: the caller starts one.
 */
bool gpu_kring_post(struct gpu_kring_host *k, uint64_t ticket);

/*
 * Work for the kernel went where it looks (a pass posted, or SQEs into a
 * watched ring): true when no kernel runs to take it, the caller starts
 * one. The kernel going idle stores running = 0, fences and looks once
 * more at the next slot's header and the watched SQ's tail; this fences
 * and looks at running, so one of the two sees the other.
 */
bool gpu_kring_kick(struct gpu_kring_host *k);

/* Copies added from now on run after every pass posted so far. */
void gpu_kring_order(struct gpu_kring_host *k);

/* The newest ticket done through the ring, as the kernel last said. */
uint64_t gpu_kring_ticket(const struct gpu_kring_host *k);

/* Every pass posted is done. */
bool gpu_kring_idle(const struct gpu_kring_host *k);

/* Times the kernel has started. */
uint64_t gpu_kring_starts(const struct gpu_kring_host *k);

/* Ask the kernel to leave once the passes posted are done. */
void gpu_kring_stop(struct gpu_kring_host *k);

#endif
