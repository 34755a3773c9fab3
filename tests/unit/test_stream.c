// SPDX-License-Identifier: MIT
/*
 * The copy stream (gpu/copy/stream.c) over a fake runtime table: what reaches
 * the runtime's batch call, and that the bytes land where they should.
 * The fake's "device" is an array the size of the host shadow; a batch runs
 * its copies in reverse order (a batch may run in any order), and a copy
 * that overlaps another of its own batch fails the test. The fake's copy
 * kernel (gpu_copy=auto|kernel) runs each launch's descriptors in reverse
 * order too, through a device mapping of the host shadow at an address of
 * its own, so a launch that used the host address would miss.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "fake_kring.h"
#include "kcopy.h"
#include "kring.h"
#include "kring_ptx.h"
#include "provider.h"
#include "stream.h"

#define BUF_SIZE	(1u << 20)
#define BLK		4096u
#define HOST_DEV	(1ull << 41)	/* the fake's device address of b->host */
#define MAX_LAUNCHES	8

static struct {
	uint8_t dev[BUF_SIZE];
	uint64_t dev_base;
	unsigned int batches, singles, overlaps;
	size_t last_n;			/* copies in the last batch call */
	size_t last_len[16];
	uint64_t flag_dev;
	uint64_t *flag;
	/* copy kernels */
	unsigned int loads, unloads, launches, bad_launches;
	int load_ret, launch_ret;	/* fail on request */
	struct {
		unsigned int n, d2h, chunks;
		bool fence;		/* the launch wrote a ticket */
	} l[MAX_LAUNCHES];
	/* the host word a stream polls, where the runtime maps one */
	uint64_t *word;
	unsigned int writes, kernel_writes;	/* stream writes, by launches */
} fk;

#define WORD_DEV	(1ull << 42)	/* the fake's device address of it */

static void *addr_of(struct gpu_buf *b, uint64_t a)
{
	if (a >= fk.dev_base && a < fk.dev_base + BUF_SIZE)
		return fk.dev + (a - fk.dev_base);
	if (a >= HOST_DEV && a < HOST_DEV + BUF_SIZE)
		return (uint8_t *)b->host + (a - HOST_DEV);
	return (void *)(uintptr_t)a;
}

static int fk_enter(struct gpu_buf *b) { (void)b; return 0; }
static int fk_stream_create(struct gpu_buf *b, void **s)
{
	static int streams[64];
	static unsigned int made;

	(void)b;
	*s = &streams[made++ % 64];
	return 0;
}
static int fk_sync(struct gpu_buf *b, void *s)
{
	(void)b;
	fr_join(s);
	return 0;
}
static void fk_stream_destroy(void *s) { (void)s; }
static int fk_event_create(struct gpu_buf *b, void **e)
{
	(void)b;
	*e = &fk;
	return 0;
}
static void fk_event_destroy(void *e) { (void)e; }
static int fk_event_record(struct gpu_buf *b, void *e, void *s)
{
	(void)b; (void)e; (void)s;
	return 0;
}
static int fk_event_query(struct gpu_buf *b, void *e)
{
	(void)b; (void)e;
	return 1;
}
static int fk_event_sync(struct gpu_buf *b, void *e)
{
	(void)b; (void)e;
	return 0;
}

static int fk_copy(struct gpu_buf *b, void *s, enum gpu_copy_dir dir,
		   uint64_t dst, uint64_t src, size_t len)
{
	(void)s; (void)dir;
	fk.singles++;
	memcpy(addr_of(b, dst), addr_of(b, src), len);
	return 0;
}

static bool ranges_overlap(uint64_t a, size_t al, uint64_t b, size_t bl)
{
	return a < b + bl && b < a + al;
}

static int fk_copy_batch(struct gpu_buf *b, void *s, uint64_t *dst,
			 uint64_t *src, size_t *len, size_t n, size_t *done)
{
	size_t i, j;

	(void)s;
	fk.batches++;
	fk.last_n = n;
	for (i = 0; i < n && i < 16; i++)
		fk.last_len[i] = len[i];
	for (i = 0; i < n; i++)
		for (j = i + 1; j < n; j++)
			if (ranges_overlap(dst[i], len[i], dst[j], len[j]) ||
			    ranges_overlap(dst[i], len[i], src[j], len[j]) ||
			    ranges_overlap(src[i], len[i], dst[j], len[j]))
				fk.overlaps++;
	for (i = n; i-- > 0;)
		memcpy(addr_of(b, dst[i]), addr_of(b, src[i]), len[i]);
	*done = n;
	return 0;
}

static int fk_host_dev_addr(struct gpu_buf *b, void *host, uint64_t *dev)
{
	(void)b; (void)host;
	*dev = HOST_DEV;
	return 0;
}

#define RING_DEV	(1ull << 43)	/* the fake's device address of the ring */

static int fk_kernel_start(struct gpu_buf *b, void *stream, void *mod,
			   uint64_t ring, uint64_t host, uint64_t dev)
{
	if (mod != &fr || ring != RING_DEV || host != HOST_DEV ||
	    dev != fk.dev_base || !fr.r)
		fr.bad++;
	fr.host = b->host;
	fr.dev = fk.dev;
	return fr_start(stream);
}

static int fk_kernel_load(struct gpu_buf *b, const char *ptx,
			  const char *entry, void **mod)
{
	if (fk.load_ret) {
		snprintf(b->why, sizeof(b->why), "fakeModuleLoad: NO_JIT");
		return fk.load_ret;
	}
	if (!strcmp(entry, "dbr_kring"))
		return fr_load(ptx, mod);
	if (strcmp(entry, "dbr_kcopy") || !strstr(ptx, ".entry dbr_kcopy("))
		return -ENOENT;
	fk.loads++;
	*mod = &fk;
	return 0;
}

static void fk_kernel_unload(void *mod)
{
	(void)mod;
	fk.unloads++;
}

/*
 * What the kernel does, descriptor by descriptor (last first), after the
 * checks a GPU would make: a grid of n x chunks blocks, 16-byte units, a
 * gather reading the mapped shadow, a scatter writing it.
 */
static int fk_kernel_launch(struct gpu_buf *b, void *s, void *mod,
			    const struct gpu_klaunch *l)
{
	unsigned int i, j, d2h = 0;

	(void)s;
	if (fk.launch_ret) {
		snprintf(b->why, sizeof(b->why), "fakeLaunchKernel: LAUNCH_FAILED");
		return fk.launch_ret;
	}
	if (mod != &fk || !l->n || l->n > GPU_KCOPY_MAX || !l->chunks ||
	    l->chunks > GPU_KCOPY_MAX_CHUNKS || l->host != HOST_DEV ||
	    l->dev != fk.dev_base)
		fk.bad_launches++;
	for (i = 0; i < l->n; i++)
		for (j = i + 1; j < l->n; j++)
			if (ranges_overlap(l->d[i].off * GPU_KCOPY_ALIGN,
					   desc_len(&l->d[i]),
					   l->d[j].off * GPU_KCOPY_ALIGN,
					   desc_len(&l->d[j])))
				fk.overlaps++;
	for (i = l->n; i-- > 0;) {
		uint64_t off = (uint64_t)l->d[i].off * GPU_KCOPY_ALIGN;
		size_t len = desc_len(&l->d[i]);
		bool to_host = l->d[i].len & GPU_KDESC_D2H;

		if (!len || (len > (size_t)l->chunks * GPU_KCOPY_CHUNK &&
			     l->chunks < GPU_KCOPY_MAX_CHUNKS))
			fk.bad_launches++;	/* grid y too small for it */
		d2h += to_host;
		memcpy(addr_of(b, (to_host ? l->host : l->dev) + off),
		       addr_of(b, (to_host ? l->dev : l->host) + off), len);
	}
	/* a fencing launch: its ticket, once its copies (above) are done */
	if (l->flag) {
		if (l->flag != WORD_DEV || !fk.word || !l->ticket)
			fk.bad_launches++;
		else
			*fk.word = l->ticket;
		fk.kernel_writes++;
	}
	if (fk.launches < MAX_LAUNCHES) {
		fk.l[fk.launches].n = l->n;
		fk.l[fk.launches].d2h = d2h;
		fk.l[fk.launches].chunks = l->chunks;
		fk.l[fk.launches].fence = l->flag != 0;
	}
	fk.launches++;
	return 0;
}

static int fk_map_host(struct gpu_buf *b, void *host, size_t len,
		       uint64_t *dev_addr)
{
	(void)b;
	if (len == gpu_kring_size()) {
		fr.r = host;
		*dev_addr = RING_DEV;
		return 0;
	}
	fk.word = host;
	*dev_addr = WORD_DEV;
	return 0;
}

static void fk_unmap_host(void *host)
{
	if (host == fr.r)
		fr.r = NULL;
	else
		fk.word = NULL;
}

/* The stream's own write of a ticket, in stream order: here, at once. */
static int fk_write_value(struct gpu_buf *b, void *s, uint64_t dev_addr,
			  uint64_t value)
{
	(void)b; (void)s;
	if (dev_addr != WORD_DEV || !fk.word)
		return -EINVAL;
	*fk.word = value;
	fk.writes++;
	return 0;
}

static const struct gpu_runtime fake_rt = {
	.enter		= fk_enter,
	.stream_create	= fk_stream_create,
	.stream_sync	= fk_sync,
	.stream_destroy	= fk_stream_destroy,
	.event_create	= fk_event_create,
	.event_destroy	= fk_event_destroy,
	.event_record	= fk_event_record,
	.event_query	= fk_event_query,
	.event_sync	= fk_event_sync,
	.copy		= fk_copy,
	.copy_batch	= fk_copy_batch,
};

/* The same runtime with the copy kernel: fake_rt and four calls more. */
static struct gpu_runtime fake_krt;

static void fake_krt_init(void)
{
	fake_krt = fake_rt;
	fake_krt.host_dev_addr = fk_host_dev_addr;
	fake_krt.kernel_load = fk_kernel_load;
	fake_krt.kernel_unload = fk_kernel_unload;
	fake_krt.kernel_launch = fk_kernel_launch;
}

static void fill(uint8_t *p, size_t len, uint8_t seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (uint8_t)(seed + i * 7);
}

/* Queue copies, fence, and see what one batch call got. */
static void test_merge(void)
{
	struct gpu_stream s;
	struct gpu_buf b;
	uint64_t ticket;
	uint8_t *host = mmap(NULL, BUF_SIZE, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int ret;

	memset(&b, 0, sizeof(b));
	b.host = host;
	b.size = BUF_SIZE;
	b.spin_ns = -1;
	fk.dev_base = 1ull << 40;
	ret = gpu_stream_init(&b, &s, &fake_rt, fk.dev_base, 8);
	CHECK(ret == 0, "stream over the fake runtime (%d)", ret);
	if (ret)
		return;
	fill(host, BUF_SIZE, 1);
	fill(fk.dev, BUF_SIZE, 100);
	/*
	 * H2D blocks 2,0,1 (neighbours, queued out of order) and 5; D2H blocks
	 * 3 and 7,8: 0-2 fold into one copy, 7-8 into another, 3 stays alone
	 * beside H2D 2 (another direction), 5 stays alone (4 is not copied).
	 */
	gpu_stream_copy(&s, GPU_H2D, 2 * BLK, BLK);
	gpu_stream_copy(&s, GPU_H2D, 0 * BLK, BLK);
	gpu_stream_copy(&s, GPU_H2D, 1 * BLK, BLK);
	gpu_stream_copy(&s, GPU_H2D, 5 * BLK, BLK);
	gpu_stream_copy(&s, GPU_D2H, 3 * BLK, BLK);
	gpu_stream_copy(&s, GPU_D2H, 8 * BLK, BLK);
	gpu_stream_copy(&s, GPU_D2H, 7 * BLK, BLK);
	ret = gpu_stream_fence(&s, &ticket);
	CHECK(ret == 0 && fk.batches == 1 && fk.last_n == 4 && !fk.overlaps,
	      "7 copies reach the runtime as 4 in one batch call (got %zu in %u calls)",
	      fk.last_n, fk.batches);
	CHECK(fk.last_len[0] == 3 * BLK && fk.last_len[1] == BLK &&
	      fk.last_len[2] == BLK && fk.last_len[3] == 2 * BLK,
	      "H2D 0-2 as one, H2D 5, D2H 3, D2H 7-8 as one");
	CHECK(s.st.copies == 7 && s.st.merged == 3 && s.st.calls == 1,
	      "counters: 7 copies, 3 merged, 1 call");
	CHECK(!memcmp(fk.dev, host, 3 * BLK) &&
	      !memcmp(fk.dev + 5 * BLK, host + 5 * BLK, BLK),
	      "H2D bytes landed in device memory");
	CHECK(!memcmp(host + 3 * BLK, fk.dev + 3 * BLK, BLK) &&
	      !memcmp(host + 7 * BLK, fk.dev + 7 * BLK, 2 * BLK),
	      "D2H bytes landed in the host shadow");
	CHECK(fk.dev[4 * BLK] != host[4 * BLK] && fk.dev[6 * BLK] != host[6 * BLK],
	      "blocks between the copies were not touched");
	CHECK(gpu_stream_poll(&s, ticket) == 1, "the fence completes");

	/* the same bytes twice: never one batch, never one copy */
	fk.batches = 0;
	gpu_stream_copy(&s, GPU_H2D, 10 * BLK, BLK);
	gpu_stream_copy(&s, GPU_D2H, 10 * BLK, BLK);
	gpu_stream_copy(&s, GPU_D2H, 11 * BLK, BLK);
	ret = gpu_stream_fence(&s, &ticket);
	CHECK(ret == 0 && fk.batches + fk.singles >= 2 && !fk.overlaps,
	      "a copy of bytes already queued goes in a later call (%u batch, %u single calls)",
	      fk.batches, fk.singles);

	/*
	 * The largest copy leads the batch, though by offset a small one
	 * comes first (docs/gpu.md: that order faulted the H200)
	 */
	fk.batches = 0;
	gpu_stream_copy(&s, GPU_H2D, 12 * BLK + 8, 100);
	gpu_stream_copy(&s, GPU_H2D, 14 * BLK, BLK);
	gpu_stream_copy(&s, GPU_H2D, 16 * BLK, BLK);
	gpu_stream_copy(&s, GPU_H2D, 17 * BLK, BLK);
	ret = gpu_stream_fence(&s, &ticket);
	CHECK(ret == 0 && fk.batches == 1 && fk.last_n == 3 &&
	      fk.last_len[0] == 2 * BLK,
	      "a batch of 100 bytes, 4 KiB and 8 KiB starts with the 8 KiB (got %zu first of %zu)",
	      fk.last_len[0], fk.last_n);
	CHECK(!memcmp(fk.dev + 12 * BLK + 8, host + 12 * BLK + 8, 100) &&
	      !memcmp(fk.dev + 14 * BLK, host + 14 * BLK, BLK) &&
	      !memcmp(fk.dev + 16 * BLK, host + 16 * BLK, 2 * BLK),
	      "every copy of the reordered batch landed");
	gpu_stream_exit(&b, &s);
	munmap(host, BUF_SIZE);
}

static struct gpu_provider fake_prov = { .name = "fake" };

/* A stream over rt in the given copy mode, on a fresh shadow; 0 or <0. */
static int open_stream(struct gpu_buf *b, struct gpu_stream *s,
		       const struct gpu_runtime *rt, enum gpu_copy_mode mode,
		       unsigned int nr_fences)
{
	int ret;

	memset(b, 0, sizeof(*b));
	b->prov = &fake_prov;
	b->host = mmap(NULL, BUF_SIZE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	b->size = BUF_SIZE;
	b->spin_ns = -1;
	b->copy_mode = mode;
	fk.dev_base = 1ull << 40;
	fk.batches = fk.singles = fk.overlaps = 0;
	fk.launches = fk.bad_launches = 0;
	fill(b->host, BUF_SIZE, 1);
	fill(fk.dev, BUF_SIZE, 100);
	ret = gpu_stream_init(b, s, rt, fk.dev_base, nr_fences);
	if (ret)
		munmap(b->host, BUF_SIZE);
	return ret;
}

static void close_stream(struct gpu_buf *b, struct gpu_stream *s)
{
	gpu_stream_exit(b, s);
	munmap(b->host, BUF_SIZE);
}

static bool same(const struct gpu_buf *b, size_t off, size_t len)
{
	return !memcmp(fk.dev + off, (uint8_t *)b->host + off, len);
}

/* Which copies a kernel takes, and how a launch fills. */
static void test_kcopy_units(void)
{
	struct gpu_copy c4k = { GPU_H2D, 8 * BLK, BLK };
	struct gpu_copy big = { GPU_H2D, 0, GPU_KCOPY_AUTO_MAX };
	struct gpu_copy under = { GPU_H2D, 0, GPU_KCOPY_AUTO_MAX - 16 };
	struct gpu_copy odd_off = { GPU_H2D, BLK + 8, BLK };
	struct gpu_copy odd_len = { GPU_D2H, BLK, 100 };
	struct gpu_copy none = { GPU_H2D, BLK, 0 };
	struct gpu_copy far = { GPU_H2D, 64ull << 30, BLK };
	static struct gpu_klaunch l;
	struct gpu_copy c = { GPU_D2H, 0, 16 };
	unsigned int i;
	bool ok = true;

	CHECK(gpu_kcopy_takes(GPU_COPY_AUTO, &c4k) &&
	      gpu_kcopy_takes(GPU_COPY_KERNEL, &c4k) &&
	      !gpu_kcopy_takes(GPU_COPY_DMA, &c4k),
	      "a 4 KiB copy: kernel in auto and kernel mode, never with gpu_copy=dma");
	CHECK(!gpu_kcopy_takes(GPU_COPY_AUTO, &big) &&
	      gpu_kcopy_takes(GPU_COPY_AUTO, &under) &&
	      gpu_kcopy_takes(GPU_COPY_KERNEL, &big),
	      "auto: DMA from %u KiB on, kernel below; kernel mode takes it",
	      GPU_KCOPY_AUTO_MAX >> 10);
	CHECK(!gpu_kcopy_takes(GPU_COPY_KERNEL, &odd_off) &&
	      !gpu_kcopy_takes(GPU_COPY_KERNEL, &odd_len) &&
	      !gpu_kcopy_takes(GPU_COPY_KERNEL, &none),
	      "offsets or lengths not 16-byte aligned, and empty copies, go to DMA");
	CHECK(!gpu_kcopy_takes(GPU_COPY_KERNEL, &far),
	      "an end past what 32-bit descriptors reach goes to DMA");

	gpu_kcopy_begin(&l, HOST_DEV, 1ull << 40);
	CHECK(l.host == HOST_DEV && l.dev == 1ull << 40 && !l.n,
	      "a launch between the mapped shadow and device memory");
	for (i = 0; i < GPU_KCOPY_MAX; i++) {
		c.off = i * 32;
		c.dir = i % 3 ? GPU_H2D : GPU_D2H;
		ok &= gpu_kcopy_add(&l, &c);
	}
	c.off = GPU_KCOPY_MAX * 32;
	CHECK(ok && l.n == GPU_KCOPY_MAX && !gpu_kcopy_add(&l, &c),
	      "a launch takes %u copies of either direction, not one more",
	      GPU_KCOPY_MAX);
	CHECK(l.d[3].off == 3 * 32 / 16 && l.d[3].len == (1 | GPU_KDESC_D2H) &&
	      l.d[4].off == 4 * 32 / 16 && l.d[4].len == 1 && l.chunks == 1,
	      "descriptors in 16-byte units, the top bit of len for device -> host, one chunk of grid y");
	gpu_kcopy_begin(&l, HOST_DEV, 1ull << 40);
	c = (struct gpu_copy){ GPU_H2D, 0, 3 * GPU_KCOPY_CHUNK + 16 };
	gpu_kcopy_add(&l, &c);
	c.len = (size_t)GPU_KCOPY_MAX_CHUNKS * GPU_KCOPY_CHUNK * 4;
	gpu_kcopy_add(&l, &c);
	CHECK(l.n == 2 && l.d[0].len == (3 * GPU_KCOPY_CHUNK + 16) / 16 &&
	      l.chunks == GPU_KCOPY_MAX_CHUNKS,
	      "grid y: the longest copy in 4 KiB chunks, capped at %u (got %u)",
	      GPU_KCOPY_MAX_CHUNKS, l.chunks);
}

/*
 * gpu_copy=auto: small aligned copies go by kernel, both directions in one
 * launch, neighbours folded; large or misaligned ones share one batch
 * call; bytes land.
 */
static void test_kernel_auto(void)
{
	struct gpu_stream s;
	struct gpu_buf b;
	uint64_t ticket;
	unsigned int i;
	char how[320];
	int ret;

	fk.loads = fk.unloads = 0;
	ret = open_stream(&b, &s, &fake_krt, GPU_COPY_AUTO, 16);
	CHECK(ret == 0 && fk.loads == 1, "stream with copy kernels (%d)", ret);
	if (ret)
		return;
	gpu_stream_describe(&s, &b, how, sizeof(how));
	CHECK(!strcmp(how, "copy kernel (a launch per pass) under 64 KiB, DMA from 64 KiB"),
	      "the job's line: %s", how);
	gpu_stream_copy(&s, GPU_H2D, 4 * BLK, BLK);
	gpu_stream_copy(&s, GPU_H2D, 0 * BLK, BLK);
	gpu_stream_copy(&s, GPU_H2D, 2 * BLK, 2 * 512);
	gpu_stream_copy(&s, GPU_D2H, 6 * BLK, BLK);
	gpu_stream_copy(&s, GPU_H2D, 16 * BLK, 16 * BLK);	/* 64 KiB */
	gpu_stream_copy(&s, GPU_D2H, 40 * BLK + 8, 100);	/* misaligned */
	for (i = 0; i < 16; i++)	/* 4 KiB reads side by side: 64 KiB */
		gpu_stream_copy(&s, GPU_H2D, (64 + (i * 7) % 16) * BLK, BLK);
	ret = gpu_stream_fence(&s, &ticket);
	CHECK(ret == 0 && fk.launches == 1 && !fk.bad_launches && !fk.overlaps,
	      "20 small copies in 1 launch (%u, %u bad)", fk.launches,
	      fk.bad_launches);
	CHECK(fk.l[0].n == 5 && fk.l[0].d2h == 1 && fk.l[0].chunks == 16,
	      "in it 4 gathers, one of them 16 neighbours folded (grid y 16), and 1 scatter (%u, %u, %u)",
	      fk.l[0].n, fk.l[0].d2h, fk.l[0].chunks);
	CHECK(fk.batches == 1 && fk.last_n == 2 && !fk.singles,
	      "the 64 KiB and the misaligned copy in one batch call (%u batches of %zu, %u singles)",
	      fk.batches, fk.last_n, fk.singles);
	CHECK(s.st.copies == 22 && s.st.merged == 15 && s.st.calls == 1 &&
	      s.st.launches == 1,
	      "counters: 22 copies, 15 merged, 1 runtime call, 1 kernel launch");
	CHECK(same(&b, 0, BLK) && same(&b, 2 * BLK, 1024) &&
	      same(&b, 4 * BLK, BLK) && same(&b, 16 * BLK, 16 * BLK) &&
	      same(&b, 64 * BLK, 16 * BLK),
	      "H2D bytes landed in device memory");
	CHECK(same(&b, 6 * BLK, BLK) && same(&b, 40 * BLK + 8, 100),
	      "D2H bytes landed in the host shadow");
	CHECK(!same(&b, 1 * BLK, BLK) && !same(&b, 2 * BLK + 1024, 16) &&
	      !same(&b, 40 * BLK, 8) && !same(&b, 40 * BLK + 108, 8),
	      "bytes beside the copies were not touched");
	CHECK(gpu_stream_poll(&s, ticket) == 1, "the fence completes");
	close_stream(&b, &s);
	CHECK(fk.unloads == 1, "the module is unloaded with the stream");
}

/* More copies than one launch carries: launches of 256. */
static void test_kernel_split(void)
{
	struct gpu_stream s;
	struct gpu_buf b;
	uint64_t ticket;
	unsigned int i;
	int ret;

	ret = open_stream(&b, &s, &fake_krt, GPU_COPY_KERNEL, 160);
	CHECK(ret == 0, "stream, kernel mode, room for 322 queued copies");
	if (ret)
		return;
	/* 300 gathers of 16 bytes 32 apart (none fold), 10 scatters, 1 MiB */
	for (i = 0; i < 300; i++)
		gpu_stream_copy(&s, GPU_H2D, i * 32, 16);
	for (i = 0; i < 10; i++)
		gpu_stream_copy(&s, GPU_D2H, (BUF_SIZE / 2) + i * 64, 32);
	ret = gpu_stream_fence(&s, &ticket);
	CHECK(ret == 0 && s.st.merged == 0 && fk.launches == 2 &&
	      !fk.bad_launches && !fk.overlaps && !fk.batches && !fk.singles,
	      "310 copies in 2 launches, no runtime call (%u launches, %u bad, %u calls)",
	      fk.launches, fk.bad_launches, fk.batches + fk.singles);
	CHECK(fk.l[0].n == GPU_KCOPY_MAX && !fk.l[0].d2h &&
	      fk.l[1].n == 310 - GPU_KCOPY_MAX && fk.l[1].d2h == 10,
	      "launches of %u and %u descriptors, the 10 scatters in the second",
	      fk.l[0].n, fk.l[1].n);
	ret = 1;
	for (i = 0; i < 300; i++)
		ret &= same(&b, i * 32, 16) && !same(&b, i * 32 + 16, 16);
	for (i = 0; i < 10; i++)
		ret &= same(&b, BUF_SIZE / 2 + i * 64, 32);
	CHECK(ret, "every copy's bytes landed, the gaps between them untouched");

	/* the whole buffer in one copy: one descriptor over 256 chunks */
	fk.launches = 0;
	fill(b.host, BUF_SIZE, 7);
	gpu_stream_copy(&s, GPU_H2D, 0, BUF_SIZE);
	ret = gpu_stream_fence(&s, &ticket);
	CHECK(ret == 0 && fk.launches == 1 && fk.l[0].n == 1 &&
	      fk.l[0].chunks == BUF_SIZE / GPU_KCOPY_CHUNK && same(&b, 0, BUF_SIZE),
	      "kernel mode: a 1 MiB copy in one launch, grid y %u", fk.l[0].chunks);
	close_stream(&b, &s);
}

/*
 * A pass the kernel takes whole is fenced by its last launch, which writes
 * the ticket into the host word itself; a pass with copies for the copy
 * calls, or a fence with nothing queued, gets the stream's own write.
 */
static void test_kernel_fence(void)
{
	/* the copy-kernel runtime with stream memory operations too */
	struct gpu_runtime fake_kwrt = fake_krt;
	struct gpu_stream s;
	struct gpu_buf b;
	uint64_t t1, t2, t3, t4;
	unsigned int i;
	int ret;

	fake_kwrt.map_host = fk_map_host;
	fake_kwrt.unmap_host = fk_unmap_host;
	fake_kwrt.write_value = fk_write_value;
	fk.writes = fk.kernel_writes = 0;
	ret = open_stream(&b, &s, &fake_kwrt, GPU_COPY_AUTO, 16);
	CHECK(ret == 0 && fk.word, "stream with copy kernels and a host word (%d)",
	      ret);
	if (ret)
		return;
	for (i = 0; i < 8; i++)
		gpu_stream_copy(&s, i & 1 ? GPU_D2H : GPU_H2D, i * 2 * BLK, BLK);
	ret = gpu_stream_fence(&s, &t1);
	CHECK(ret == 0 && fk.launches == 1 && fk.l[0].fence && !fk.writes &&
	      !fk.bad_launches && *fk.word == t1 && gpu_stream_poll(&s, t1) == 1,
	      "8 small copies: 1 launch that writes ticket %lu itself, no stream write (%u)",
	      (unsigned long)t1, fk.writes);
	gpu_stream_copy(&s, GPU_H2D, 32 * BLK, BLK);
	gpu_stream_copy(&s, GPU_H2D, 64 * BLK, 16 * BLK);	/* 64 KiB: DMA */
	ret = gpu_stream_fence(&s, &t2);
	CHECK(ret == 0 && fk.launches == 2 && !fk.l[1].fence &&
	      fk.writes == 1 && *fk.word == t2 && t2 == t1 + 1,
	      "a pass with a copy for the copy calls: the launch does not fence, the stream writes ticket %lu",
	      (unsigned long)t2);
	ret = gpu_stream_fence(&s, &t3);
	CHECK(ret == 0 && fk.writes == 2 && *fk.word == t3,
	      "a fence with nothing queued: the stream's write");
	close_stream(&b, &s);

	/* over one launch's worth: only the last launch fences */
	ret = open_stream(&b, &s, &fake_kwrt, GPU_COPY_KERNEL, 160);
	CHECK(ret == 0, "stream, kernel mode, with a host word");
	if (ret)
		return;
	fk.writes = fk.kernel_writes = 0;
	for (i = 0; i < 300; i++)
		gpu_stream_copy(&s, GPU_H2D, i * 32, 16);
	ret = gpu_stream_fence(&s, &t4);
	CHECK(ret == 0 && fk.launches == 2 && !fk.l[0].fence && fk.l[1].fence &&
	      fk.kernel_writes == 1 && !fk.writes && *fk.word == t4 &&
	      s.st.kernel_fences == 1 && s.st.fences == 1,
	      "300 copies in 2 launches: the second writes the ticket, the first does not");
	close_stream(&b, &s);
}

/* gpu_copy=dma never loads the kernels; a runtime without them cannot. */
static void test_kernel_not_asked(void)
{
	struct gpu_stream s;
	struct gpu_buf b;
	uint64_t ticket;
	char how[320];
	int ret;

	fk.loads = 0;
	ret = open_stream(&b, &s, &fake_krt, GPU_COPY_DMA, 8);
	if (ret)
		return;
	gpu_stream_copy(&s, GPU_H2D, 0, BLK);
	gpu_stream_copy(&s, GPU_H2D, 2 * BLK, BLK);
	ret = gpu_stream_fence(&s, &ticket);
	gpu_stream_describe(&s, &b, how, sizeof(how));
	CHECK(ret == 0 && !fk.loads && !fk.launches && fk.batches == 1 &&
	      !strcmp(how, "DMA"),
	      "gpu_copy=dma: no module, one batch call (%s)", how);
	close_stream(&b, &s);

	ret = open_stream(&b, &s, &fake_rt, GPU_COPY_KERNEL, 8);
	if (ret)
		return;
	gpu_stream_copy(&s, GPU_H2D, 0, BLK);
	ret = gpu_stream_fence(&s, &ticket);
	gpu_stream_describe(&s, &b, how, sizeof(how));
	CHECK(ret == 0 && !fk.launches && fk.singles == 1 && same(&b, 0, BLK) &&
	      !strcmp(how, "DMA; gpu_copy=kernel: gpu=fake has no copy kernel yet"),
	      "a runtime without kernels copies by DMA and says so: %s", how);
	close_stream(&b, &s);
}

/*
 * The module does not load (old driver, no JIT): DMA, the reason for the
 * job's line, b->why clear, nothing held. A launch that fails fails the
 * submit like a copy call that fails.
 */
static void test_kernel_fallback(void)
{
	struct gpu_stream s;
	struct gpu_buf b;
	uint64_t ticket;
	char how[320];
	int ret;

	fk.loads = fk.unloads = 0;
	fk.load_ret = -EINVAL;
	ret = open_stream(&b, &s, &fake_krt, GPU_COPY_AUTO, 8);
	fk.load_ret = 0;
	CHECK(ret == 0 && !b.why[0], "the stream opens when the module does not load");
	if (ret)
		return;
	gpu_stream_copy(&s, GPU_H2D, 0, BLK);
	gpu_stream_copy(&s, GPU_D2H, 2 * BLK, BLK);
	ret = gpu_stream_fence(&s, &ticket);
	gpu_stream_describe(&s, &b, how, sizeof(how));
	CHECK(ret == 0 && !fk.launches && fk.batches == 1 && same(&b, 0, BLK) &&
	      same(&b, 2 * BLK, BLK), "copies go by DMA instead");
	CHECK(!strcmp(how, "DMA; gpu_copy=auto: the copy kernel could not be loaded: fakeModuleLoad: NO_JIT"),
	      "the job's line says why: %s", how);
	close_stream(&b, &s);
	CHECK(!fk.unloads, "nothing to unload");

	ret = open_stream(&b, &s, &fake_krt, GPU_COPY_AUTO, 8);
	if (ret)
		return;
	fk.launch_ret = -EIO;
	gpu_stream_copy(&s, GPU_H2D, 0, BLK);
	ret = gpu_stream_fence(&s, &ticket);
	fk.launch_ret = 0;
	CHECK(ret == -EIO && !strcmp(b.why, "fakeLaunchKernel: LAUNCH_FAILED") &&
	      !s.st.launches && !s.st.fences,
	      "a failed launch fails the fence with the runtime's reason (%d)", ret);
	CHECK(gpu_stream_drain(&s) == 0 && s.nr_queued == 0,
	      "the stream drains after it");
	gpu_stream_copy(&s, GPU_H2D, 4 * BLK, BLK);
	CHECK(gpu_stream_fence(&s, &ticket) == 0 && s.st.launches == 1 &&
	      same(&b, 4 * BLK, BLK), "and copies by kernel again");
	close_stream(&b, &s);
}

/* The copy-kernel runtime with stream writes and the resident kernel. */
static struct gpu_runtime fake_rrt;

static void fake_rrt_init(void)
{
	fake_rrt = fake_krt;
	fake_rrt.map_host = fk_map_host;
	fake_rrt.unmap_host = fk_unmap_host;
	fake_rrt.write_value = fk_write_value;
	fake_rrt.kernel_start = fk_kernel_start;
}

static void resident_reset(long delay_us, uint64_t idle_ns)
{
	fr_reset(delay_us, idle_ns);
	fk.writes = fk.kernel_writes = 0;
}

/*
 * gpu_kernel=resident: started once when the stream is made; a pass's small
 * copies go through the ring and its large one to the copy calls, and the
 * fence is done only once both engines are: with a slow kernel the copy
 * calls' half alone does not complete it.
 */
/* Does every word of the slot's first line carry tag (kring.h)? */
static bool line_tagged(const struct gpu_kpass *p, uint32_t tag)
{
	unsigned int i;

	if ((p->ticket & 1) != tag || p->hdr >> 63 != tag)
		return false;
	for (i = 0; i < GPU_KPASS_EAGER; i++)
		if (p->d[i].off >> 31 != tag)
			return false;
	return true;
}

/*
 * The ring's protocol on the host, without a kernel: a fresh ring's lines
 * carry no tag of a first use, and every pass posted leaves every word of
 * its slot's first line, used or not, and every descriptor past it, with
 * its tag, since a word left from two uses back would pass for this one.
 * Passes of 9, 1, 3 and 0 descriptors go round the slots three times.
 */
static void test_kring_tags(void)
{
	static const unsigned int sizes[] = { 9, 1, 3, 0 };
	struct gpu_kring *r = calloc(1, gpu_kring_size());
	struct gpu_kring_host k;
	unsigned int s, i, bad = 0, fresh = 0;
	uint64_t seq;

	gpu_kring_init(&k, r, 1);
	for (s = 0; s < GPU_KRING_SLOTS; s++)
		fresh += line_tagged(&r->slot[s], gpu_kring_tag(s));
	__atomic_store_n(&r->running, 1, __ATOMIC_RELAXED);
	for (seq = 0; seq < 3 * GPU_KRING_SLOTS; seq++) {
		struct gpu_kpass *p = &r->slot[seq % GPU_KRING_SLOTS];
		unsigned int n = sizes[seq % 4];

		for (i = 0; i < n; i++) {
			struct gpu_copy c = { .dir = i & 1 ? GPU_D2H : GPU_H2D,
					      .off = (size_t)(seq * 16 + i) * BLK,
					      .len = BLK };

			gpu_kring_add(&k, &c);
		}
		gpu_kring_post(&k, n ? 0 : seq + 1);
		bad += !line_tagged(p, gpu_kring_tag(seq)) ||
		       (uint32_t)p->hdr != n ||
		       (p->ticket >> 1) != (n ? 0 : seq + 1);
		for (i = 0; i < n; i++)
			bad += (p->d[i].off & ~GPU_KRING_TAG_BIT) != (seq * 16 + i) * BLK / 16 ||
			       p->d[i].off >> 31 != gpu_kring_tag(seq) ||
			       p->d[i].len != (BLK / 16 | (i & 1 ? GPU_KDESC_D2H : 0));
		__atomic_store_n(&r->tail, seq + 1, __ATOMIC_RELEASE);
	}
	CHECK(!fresh && !bad,
	      "ring tags: no fresh line passes for a first use (%u did), each pass's words carry its tag (%u wrong)",
	      fresh, bad);
	free(r);
}

static void test_resident(void)
{
	struct gpu_stream s;
	struct gpu_buf b;
	char how[256];
	uint64_t t;
	unsigned int i;
	int ret;

	resident_reset(20000, 1000000000);
	ret = open_stream(&b, &s, &fake_rrt, GPU_COPY_AUTO, 16);
	CHECK(ret == 0 && s.kr.r && fr.starts == 1 && s.st.starts == 1,
	      "a stream with the resident kernel, started once (%d, %u starts)",
	      ret, fr.starts);
	if (ret)
		return;
	fk.writes = 0;	/* the stream tried its stream write once */
	CHECK(gpu_stream_posts_free(&s, BLK) && !gpu_stream_posts_free(&s, 16 * BLK),
	      "a pass of 4 KiB copies posts free, one of 64 KiB goes to the copy calls");
	gpu_stream_describe(&s, &b, how, sizeof(how));
	CHECK(!strcmp(how, "copy kernel (resident) under 64 KiB, DMA from 64 KiB"),
	      "the job's line: %s", how);
	for (i = 0; i < 20; i++)
		gpu_stream_copy(&s, i & 1 ? GPU_D2H : GPU_H2D, i * 2 * BLK, BLK);
	gpu_stream_copy(&s, GPU_H2D, 64 * BLK, 16 * BLK);	/* DMA */
	ret = gpu_stream_fence(&s, &t);
	CHECK(ret == 0 && fk.batches + fk.singles == 1 && fk.writes == 1 &&
	      !fk.launches && s.st.passes == 1 && s.st.kernel_fences == 1,
	      "20 small copies in 1 pass to the ring, the large one in 1 call fenced by 1 stream write (%u calls, %u writes, %lu passes)",
	      fk.batches + fk.singles, fk.writes, s.st.passes);
	CHECK(*fk.word == t && gpu_stream_poll(&s, t) == 0,
	      "the copy calls are done, the kernel not yet: the fence is not done");
	ret = gpu_stream_wait(&s, t);
	for (i = 0; i < 20 && same(&b, i * 2 * BLK, BLK); i++)
		;
	CHECK(ret == 0 && gpu_stream_poll(&s, t) == 1 && i == 20 &&
	      same(&b, 64 * BLK, 16 * BLK),
	      "waited for: every byte where it belongs (%d, %u blocks)", ret, i);
	CHECK(fk.dev[41 * BLK] != ((uint8_t *)b.host)[41 * BLK],
	      "blocks between the copies were not touched");
	/*
	 * fences posted while the kernel is busy: a round takes as many as
	 * its poll reads the lines of (4)
	 */
	fr.rounds = fr.passes = 0;
	fr.begun = 0;
	for (i = 0; i < 6; i++) {
		gpu_stream_copy(&s, GPU_H2D, (100 + i) * BLK, BLK);
		ret = gpu_stream_fence(&s, &t);
		while (!i && !__atomic_load_n(&fr.begun, __ATOMIC_ACQUIRE))
			usleep(100);
	}
	ret = ret ? ret : gpu_stream_wait(&s, t);
	CHECK(ret == 0 && fr.passes == 6 && fr.rounds == 3 &&
	      same(&b, 100 * BLK, 6 * BLK),
	      "6 fences, the last 5 while the kernel copies the first: 6 passes in 3 rounds of at most 4 (%u), every block copied",
	      fr.rounds);
	close_stream(&b, &s);
	CHECK(!fr.have_th && !fr.bad, "the kernel left at the stream's end (%u refused)",
	      fr.bad);
}

/*
 * More passes than the ring has slots, from a slow kernel: the host waits
 * for room and never has more than GPU_KRING_SLOTS posted; the same bytes
 * copied in, then out, in passes one after the other, in that order.
 */
static void test_resident_full(void)
{
	struct gpu_stream s;
	struct gpu_buf b;
	uint64_t t;
	unsigned int i;
	uint8_t was[BLK];
	int ret;

	resident_reset(2000, 1000000000);
	ret = open_stream(&b, &s, &fake_rrt, GPU_COPY_AUTO, 64);
	CHECK(ret == 0 && s.kr.r, "stream with the resident kernel (%d)", ret);
	if (ret)
		return;
	memcpy(was, b.host, BLK);
	for (i = 0; i < 3 * GPU_KRING_SLOTS; i++) {
		gpu_stream_copy(&s, GPU_H2D, (i + 1) * BLK, BLK);
		gpu_stream_submit(&s);
	}
	gpu_stream_copy(&s, GPU_H2D, 0, BLK);
	gpu_stream_submit(&s);
	gpu_stream_copy(&s, GPU_D2H, 0, BLK);
	ret = gpu_stream_fence(&s, &t);
	if (!ret)
		ret = gpu_stream_wait(&s, t);
	CHECK(ret == 0 && s.st.passes == 3 * GPU_KRING_SLOTS + 2 &&
	      fr.most_posted <= GPU_KRING_SLOTS && !fr.bad,
	      "%lu passes, at most %u posted at once (%d)", s.st.passes,
	      fr.most_posted, ret);
	CHECK(same(&b, 0, (3 * GPU_KRING_SLOTS + 1) * BLK) &&
	      !memcmp(b.host, was, BLK),
	      "in, then out, in the order sent: the block came back as it went");
	/*
	 * a full ring of unfenced passes, then a fence with nothing queued:
	 * its empty pass waits for a slot too, overwriting none in flight
	 */
	fr.delay_us = 20000;
	for (i = 0; i < GPU_KRING_SLOTS; i++) {
		if (i == GPU_KRING_ROUND - 1 || i == GPU_KRING_ROUND)
			CHECK(gpu_kring_room(&s.kr) &&
			      gpu_stream_posts_free(&s, BLK) == (i < GPU_KRING_ROUND),
			      "%u passes in flight, slots free: a pass %s (it %s the next round)",
			      i, i < GPU_KRING_ROUND ? "posts free" : "does not post free",
			      i < GPU_KRING_ROUND ? "makes" : "would wait past");
		gpu_stream_copy(&s, GPU_H2D, (40 + i) * BLK, BLK);
		gpu_stream_submit(&s);
	}
	CHECK(!gpu_stream_posts_free(&s, BLK),
	      "every slot in flight: a pass does not post free");
	ret = gpu_stream_fence(&s, &t);
	if (!ret)
		ret = gpu_stream_wait(&s, t);
	CHECK(ret == 0 && same(&b, 40 * BLK, GPU_KRING_SLOTS * BLK) && !fr.bad,
	      "a fence on a full ring of unfenced passes: every one of them copied (%d)",
	      ret);
	close_stream(&b, &s);
}

/*
 * The kernel leaves when idle and the next pass starts it again; a kernel
 * that never gets onto the GPU is found when the stream is made, which
 * then launches per pass, as gpu_kernel=launch asks for.
 */
static void test_resident_restart(void)
{
	struct gpu_stream s;
	struct gpu_buf b;
	char how[256];
	uint64_t t;
	int ret;

	resident_reset(0, 1000000);
	ret = open_stream(&b, &s, &fake_rrt, GPU_COPY_AUTO, 16);
	CHECK(ret == 0 && s.kr.r, "stream with the resident kernel (%d)", ret);
	if (ret)
		return;
	usleep(20000);
	CHECK(!fr_get(&fr.r->running), "idle for 20 ms: the kernel left");
	gpu_stream_copy(&s, GPU_H2D, 0, BLK);
	ret = gpu_stream_fence(&s, &t);
	if (!ret)
		ret = gpu_stream_wait(&s, t);
	CHECK(ret == 0 && fr.starts == 2 && s.st.starts == 2 && same(&b, 0, BLK),
	      "the next pass started it again and was copied (%u starts)",
	      fr.starts);
	close_stream(&b, &s);

	resident_reset(0, 1000000000);
	fr.never_start = true;
	ret = open_stream(&b, &s, &fake_rrt, GPU_COPY_AUTO, 16);
	gpu_stream_describe(&s, &b, how, sizeof(how));
	CHECK(ret == 0 && !s.kr.r && !strcmp(how, "copy kernel (a launch per pass; resident kernel: did not start within 1 s (the GPU is full of other work)) under 64 KiB, DMA from 64 KiB"),
	      "a kernel that never runs: launches instead: %s", how);
	gpu_stream_copy(&s, GPU_H2D, 0, BLK);
	ret = gpu_stream_fence(&s, &t);
	CHECK(ret == 0 && fk.launches == 1 && gpu_stream_poll(&s, t) == 1 &&
	      same(&b, 0, BLK), "its copies went by launch (%u)", fk.launches);
	close_stream(&b, &s);

	resident_reset(0, 1000000000);
	memset(&b, 0, sizeof(b));
	b.kernel_mode = GPU_KERNEL_LAUNCH;
	ret = gpu_stream_init(&b, &s, &fake_rrt, fk.dev_base, 4);
	CHECK(ret == 0 && !s.kr.r && !fr.starts && !gpu_stream_posts_free(&s, BLK),
	      "gpu_kernel=launch: no resident kernel, no pass posts free");
	if (!ret)
		gpu_stream_exit(&b, &s);
}

/*
 * What a diagnostic build of the kernel counts reaches the stream's
 * statistics when the stream ends (the engine's rounds line reads them),
 * and the kernel was loaded from $DBR_KRING_PTX's file (main set it).
 */
static void test_resident_stats(void)
{
	struct gpu_stream s;
	struct gpu_buf b;
	uint64_t t;
	unsigned int i;
	int ret;

	resident_reset(0, 1000000000);
	fr.stats = true;
	ret = open_stream(&b, &s, &fake_rrt, GPU_COPY_AUTO, 16);
	CHECK(ret == 0 && s.kr.r && fr.ptx && strstr(fr.ptx, "dbr-test: from DBR_KRING_PTX"),
	      "the resident kernel loaded from DBR_KRING_PTX's file (%d)", ret);
	if (ret)
		return;
	for (i = 0; i < 3 && !ret; i++) {
		gpu_stream_copy(&s, GPU_H2D, i * 4 * BLK, BLK);
		gpu_stream_copy(&s, GPU_H2D, (i * 4 + 2) * BLK, BLK);
		ret = gpu_stream_fence(&s, &t);
		if (!ret)
			ret = gpu_stream_wait(&s, t);
	}
	CHECK(ret == 0 && !s.st.kstat[GPU_KSTAT_ROUNDS], "nothing counted while it runs");
	close_stream(&b, &s);
	CHECK(s.st.kstat[GPU_KSTAT_ROUNDS] == fr.rounds && fr.rounds >= 1 &&
	      s.st.kstat[GPU_KSTAT_PASSES] == fr.passes &&
	      s.st.kstat[GPU_KSTAT_DESCS] == 6 &&
	      s.st.kstat[GPU_KSTAT_READ_NS] == 1000 * fr.rounds,
	      "its counts in the stream's statistics at the end: %llu rounds, %llu passes, %llu descriptors",
	      (unsigned long long)s.st.kstat[GPU_KSTAT_ROUNDS],
	      (unsigned long long)s.st.kstat[GPU_KSTAT_PASSES],
	      (unsigned long long)s.st.kstat[GPU_KSTAT_DESCS]);
}

/*
 * $DBR_KRING_PTX: a file with the built-in text and a mark of its own, set
 * before any stream reads the text (it is read once for the process).
 */
static void use_kring_ptx_file(char *path)
{
	int fd = mkstemp(path);
	FILE *f = fd < 0 ? NULL : fdopen(fd, "w");

	CHECK(f != NULL, "a PTX file for DBR_KRING_PTX");
	if (!f)
		return;
	fprintf(f, "// dbr-test: from DBR_KRING_PTX\n%s", gpu_kring_ptx_text);
	fclose(f);
	setenv("DBR_KRING_PTX", path, 1);
}

int main(void)
{
	int before = count_fds();

	char ptx_path[] = "/tmp/dbr-kring-ptx.XXXXXX";

	fake_krt_init();
	fake_rrt_init();
	use_kring_ptx_file(ptx_path);
	test_merge();
	test_kcopy_units();
	test_kernel_auto();
	test_kernel_split();
	test_kernel_fence();
	test_kernel_not_asked();
	test_kernel_fallback();
	test_kring_tags();
	test_resident();
	test_resident_full();
	test_resident_restart();
	test_resident_stats();
	unlink(ptx_path);
	CHECK(count_fds() == before, "no descriptor left open");
	return check_done("test_stream");
}
