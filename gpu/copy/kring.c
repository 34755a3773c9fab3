// SPDX-License-Identifier: MIT
/*
 * The host's side of the resident copy kernel's ring. See kring.h; the
 * kernel is kring.cu (as PTX in kring_ptx.h).
 *
 * Order on the host: a pass's descriptors and ticket are plain stores into
 * its slot, each tagged with the slot's use (kring.h), then its header word
 * is stored with release semantics, so a kernel that sees the header's tag
 * and fences (fence.acq_rel.sys) sees the whole pass, and the bytes the
 * pass's copies read. What the kernel writes (tail, ticket) is read with
 * acquire semantics, so the bytes it stored before them (fenced at system
 * scope) are seen too.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kring.h"
#include "kring_ptx.h"

_Static_assert(offsetof(struct gpu_kring, tail) == 128 &&
	       offsetof(struct gpu_kring, cq_done) == 160 &&
	       offsetof(struct gpu_kring, stats) == 192 &&
	       offsetof(struct gpu_kring, slot) == 256 &&
	       sizeof(struct gpu_kpass) == 16 + 8 * GPU_KCOPY_MAX + 48 &&
	       sizeof(struct gpu_kpass) % 64 == 0 &&
	       offsetof(struct gpu_kpass, d[GPU_KPASS_EAGER]) == 64,
	       "struct gpu_kring is struct kring in kring.cu");

static struct {
	pthread_once_t once;
	const char *text;	/* what gpu_kring_ptx hands out */
	int err;		/* why DBR_KRING_PTX's file could not be read */
} kring_src = { .once = PTHREAD_ONCE_INIT };

/* $DBR_KRING_PTX's file, kept for the process: modules are made from it */
static void kring_src_read(void)
{
	const char *path = getenv("DBR_KRING_PTX");
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	kring_src.text = gpu_kring_ptx_text;
	if (!path || !*path)
		return;
	f = fopen(path, "re");
	if (!f) {
		kring_src.err = errno;
		kring_src.text = NULL;
		return;
	}
	if (getdelim(&text, &len, '\0', f) < 0)
		kring_src.err = ferror(f) ? EIO : ENOEXEC;	/* empty: no entry */
	else if (!strstr(text, ".entry dbr_kring("))
		kring_src.err = ENOEXEC;
	fclose(f);
	if (kring_src.err) {
		free(text);
		kring_src.text = NULL;
		return;
	}
	kring_src.text = text;
}

const char *gpu_kring_ptx(char *why, size_t len)
{
	pthread_once(&kring_src.once, kring_src_read);
	if (!kring_src.text)
		snprintf(why, len, "DBR_KRING_PTX=%s: %s", getenv("DBR_KRING_PTX"),
			 kring_src.err == ENOEXEC ? "no dbr_kring entry in it" :
			 strerror(kring_src.err));
	return kring_src.text;
}

size_t gpu_kring_size(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	return (sizeof(struct gpu_kring) + page - 1) / page * page;
}

/* A tag as the bit a descriptor's off and a header's flags carry it in */
static uint32_t tag_bit(uint32_t tag)
{
	return tag ? GPU_KRING_TAG_BIT : 0;
}

/*
 * Seal a slot's first line for a pass of n descriptors (stored already)
 * with tag: the line's words the pass leaves unused, then its ticket, then
 * the header word, last and with release semantics.
 */
static void seal_line(struct gpu_kpass *p, uint32_t n, uint32_t flags,
		      uint64_t ticket, uint32_t tag)
{
	uint32_t i;

	for (i = n; i < GPU_KPASS_EAGER; i++)
		p->d[i] = (struct gpu_kdesc){ .off = tag_bit(tag) };
	p->ticket = ticket << 1 | tag;
	__atomic_store_n(&p->hdr, n | (uint64_t)(flags | tag_bit(tag)) << 32,
			 __ATOMIC_RELEASE);
}

void gpu_kring_init(struct gpu_kring_host *k, struct gpu_kring *r,
		    uint64_t r_dev)
{
	unsigned int s;

	*k = (struct gpu_kring_host){ .r = r, .r_dev = r_dev };
	/*
	 * each line as an empty pass of the slot's use before the first, so
	 * that no word of fresh memory passes for pass 0..GPU_KRING_SLOTS-1
	 */
	for (s = 0; s < GPU_KRING_SLOTS; s++)
		seal_line(&r->slot[s], 0, 0, 0,
			  gpu_kring_tag(s - (uint64_t)GPU_KRING_SLOTS));
}

static uint64_t load_acquire(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

/* One pass is open, or fewer than max posted are not done yet. */
static bool waiting_under(const struct gpu_kring_host *k, uint64_t max)
{
	return k->open || k->posted - load_acquire(&k->r->tail) < max;
}

bool gpu_kring_room(const struct gpu_kring_host *k)
{
	return waiting_under(k, GPU_KRING_SLOTS);
}

bool gpu_kring_next_round(const struct gpu_kring_host *k)
{
	return waiting_under(k, GPU_KRING_ROUND);
}

static struct gpu_kpass *open_pass(const struct gpu_kring_host *k)
{
	return &k->r->slot[k->posted % GPU_KRING_SLOTS];
}

bool gpu_kring_add(struct gpu_kring_host *k, const struct gpu_copy *c)
{
	struct gpu_kpass *p = open_pass(k);
	uint32_t len = (uint32_t)(c->len / GPU_KCOPY_ALIGN);

	if (!k->open) {
		if (!gpu_kring_room(k))
			return false;
		k->n = 0;
		k->flags = k->order_next ? GPU_KPASS_ORDERED : 0;
		k->order_next = false;
		k->open = true;
	}
	if (k->n == GPU_KCOPY_MAX)
		return false;
	/* off < 2^31 units: kcopy_setup takes no buffer of 32 GiB or more */
	p->d[k->n++] = (struct gpu_kdesc){
		.off = (uint32_t)(c->off / GPU_KCOPY_ALIGN) |
		       tag_bit(gpu_kring_tag(k->posted)),
		.len = c->dir == GPU_D2H ? len | GPU_KDESC_D2H : len,
	};
	return true;
}

bool gpu_kring_kick(struct gpu_kring_host *k)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (load_acquire(&k->r->running))
		return false;
	/* the start to come: no second one before the kernel has run */
	__atomic_store_n(&k->r->running, 1, __ATOMIC_RELAXED);
	return true;
}

/*
 * The kernel, going idle, stores running = 0, fences and looks at the next
 * slot's header once more; the host stores the header, fences and looks at
 * running. With both fences sequentially consistent one of the two sees
 * the other's store, so a pass is never left in a ring whose kernel has
 * gone.
 */
bool gpu_kring_post(struct gpu_kring_host *k, uint64_t ticket)
{
	if (!k->open) {
		if (!ticket)
			return false;
		k->n = 0;
		k->flags = 0;	/* no copies: nothing to order */
	}
	seal_line(open_pass(k), k->n, k->flags, ticket, gpu_kring_tag(k->posted));
	k->open = false;
	k->posted++;
	k->dirty = !ticket;
	if (ticket)
		k->last_ticket = ticket;
	return gpu_kring_kick(k);
}

void gpu_kring_order(struct gpu_kring_host *k)
{
	k->order_next = true;
}

uint64_t gpu_kring_ticket(const struct gpu_kring_host *k)
{
	return load_acquire(&k->r->ticket);
}

bool gpu_kring_idle(const struct gpu_kring_host *k)
{
	return load_acquire(&k->r->tail) == k->posted;
}

uint64_t gpu_kring_starts(const struct gpu_kring_host *k)
{
	return load_acquire(&k->r->starts);
}

void gpu_kring_stop(struct gpu_kring_host *k)
{
	__atomic_store_n(&k->r->stop, 1, __ATOMIC_RELEASE);
}
