// SPDX-License-Identifier: MIT
/*
 * The copy stream (gpu/stream.c) over a fake runtime table: what reaches
 * the runtime's batch call, and that the bytes land where they should.
 * The fake's "device" is an array the size of the host shadow; a batch runs
 * its copies in reverse order (a batch may run in any order), and a copy
 * that overlaps another of its own batch fails the test.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "check.h"
#include "provider.h"
#include "stream.h"

#define BUF_SIZE	(64u << 10)
#define BLK		4096u

static struct {
	uint8_t dev[BUF_SIZE];
	uint64_t dev_base;
	unsigned int batches, singles, overlaps;
	size_t last_n;			/* copies in the last batch call */
	size_t last_len[16];
	uint64_t flag_dev;
	uint64_t *flag;
} fk;

static void *addr_of(struct gpu_buf *b, uint64_t a)
{
	(void)b;
	if (a >= fk.dev_base && a < fk.dev_base + BUF_SIZE)
		return fk.dev + (a - fk.dev_base);
	return (void *)(uintptr_t)a;
}

static int fk_enter(struct gpu_buf *b) { (void)b; return 0; }
static int fk_stream_create(struct gpu_buf *b, void **s)
{
	(void)b;
	*s = &fk;
	return 0;
}
static int fk_sync(struct gpu_buf *b, void *s) { (void)b; (void)s; return 0; }
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
	gpu_stream_copy(&b, GPU_H2D, 2 * BLK, BLK);
	gpu_stream_copy(&b, GPU_H2D, 0 * BLK, BLK);
	gpu_stream_copy(&b, GPU_H2D, 1 * BLK, BLK);
	gpu_stream_copy(&b, GPU_H2D, 5 * BLK, BLK);
	gpu_stream_copy(&b, GPU_D2H, 3 * BLK, BLK);
	gpu_stream_copy(&b, GPU_D2H, 8 * BLK, BLK);
	gpu_stream_copy(&b, GPU_D2H, 7 * BLK, BLK);
	ret = gpu_stream_fence(&b, &ticket);
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
	CHECK(gpu_stream_poll(&b, ticket) == 1, "the fence completes");

	/* the same bytes twice: never one batch, never one copy */
	fk.batches = 0;
	gpu_stream_copy(&b, GPU_H2D, 10 * BLK, BLK);
	gpu_stream_copy(&b, GPU_D2H, 10 * BLK, BLK);
	gpu_stream_copy(&b, GPU_D2H, 11 * BLK, BLK);
	ret = gpu_stream_fence(&b, &ticket);
	CHECK(ret == 0 && fk.batches + fk.singles >= 2 && !fk.overlaps,
	      "a copy of bytes already queued goes in a later call (%u batch, %u single calls)",
	      fk.batches, fk.singles);
	gpu_stream_exit(&b, &s);
	munmap(host, BUF_SIZE);
}

int main(void)
{
	int before = count_fds();

	test_merge();
	CHECK(count_fds() == before, "no descriptor left open");
	return check_done("test_stream");
}
