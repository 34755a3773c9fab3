// SPDX-License-Identifier: MIT
/*
 * engine/core/session.c over real io_uring, real files and the host provider, as
 * the engine's hooks drive it: set-up step by step, the slot bookkeeping of
 * bounce (a fixed-file slot per file, one host buffer slot) and of p2p (a
 * buffer slot per file, its dma-buf installed all or nothing), and the one
 * teardown from whatever step was reached, twice over, with no descriptor
 * left open.
 *
 * A p2p registration that succeeds needs a kernel with the io_uring dma-buf
 * series, /dev/udmabuf and an NVMe namespace (DBR_TEST_NVME, opened
 * O_DIRECT); elsewhere the refusals are checked and the rest says SKIP.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "session.h"

#define BS	4096

static int scratch(const char *tag, int fill)
{
	char path[64], buf[BS];
	int fd;

	snprintf(path, sizeof(path), "/tmp/dbr-session-%s.XXXXXX", tag);
	fd = mkstemp(path);
	if (fd < 0)
		return -1;
	unlink(path);
	memset(buf, fill, sizeof(buf));
	if (pwrite(fd, buf, sizeof(buf), 0) != (ssize_t)sizeof(buf)) {
		close(fd);
		return -1;
	}
	return fd;
}

static void cfg_of(struct dbr_sess_cfg *c, bool p2p, unsigned int nr_files)
{
	*c = (struct dbr_sess_cfg){
		.ring = { .entries = 8, .sqpoll_cpu = -1, .single_issuer = true },
		.depth		= 8,
		.nr_files	= nr_files,
		.register_files	= true,
		.p2p		= p2p,
	};
}

/* One 4 KiB read of fixed file 'slot' into the host slot, through the pipeline. */
static int read_fixed(struct dbr_session *s, unsigned int slot)
{
	struct dbr_pio io = {
		.req = { .op = DBR_OP_READ, .fd = (int)slot, .fixed_file = true,
			 .len = BS, .addr = (uintptr_t)s->buf.host },
	}, *done[1];
	int ret;

	ret = dbr_pipe_queue(&s->pipe, &io);
	if (!ret)
		ret = dbr_pipe_commit(&s->pipe);
	if (!ret)
		ret = dbr_pipe_submit(&s->pipe);
	if (ret >= 0)
		ret = dbr_pipe_getevents(&s->pipe, done, 1, 1);
	if (ret != 1)
		return ret < 0 ? ret : -EIO;
	return io.error ? -io.error : 0;
}

static void test_bounce(void)
{
	int fds = count_fds(), f0 = scratch("a", 0x11), f1 = scratch("b", 0x22);
	struct dbr_session s;
	struct dbr_sess_cfg c;
	enum dbr_sess_step step = DBR_STEP_MEM;
	int ret;

	cfg_of(&c, false, 2);
	dbr_sess_init(&s);
	gpu_buf_init(&s.buf, &gpu_host_provider, 0, gpu_spin_ns());
	ret = dbr_sess_open(&s, &c, &step);
	if (!ret)
		ret = dbr_sess_alloc(&s, 1 << 20, &step);
	if (!ret)
		ret = dbr_sess_start(&s, &step);
	CHECK(!ret && f0 >= 0 && f1 >= 0, "bounce: session set up (%d%s)", ret,
	      ret ? ", see the step" : "");
	if (ret)
		goto out;
	CHECK(s.ring.nr_bufs == 1 && s.ring.nr_files == 2 &&
	      s.host_live == 1 && !dbr_pipe_stream(&s.pipe),
	      "bounce: one host buffer slot for all, a file slot per file, no copy stream for host memory");
	CHECK(dbr_sess_upload(&s) == 0, "bounce: the initial upload needs nothing on host memory");
	CHECK(dbr_sess_attach(&s, 0, f0) == 0 && dbr_sess_attach(&s, 1, f1) == 0 &&
	      !s.slot_live[0] && !s.slot_live[1],
	      "bounce: both files attached, no dma-buf slot live");
	CHECK(dbr_sess_attach(&s, 2, f0) == -EINVAL,
	      "a file beyond the table is refused");
	ret = read_fixed(&s, 1);
	CHECK(!ret && ((unsigned char *)s.buf.host)[0] == 0x22 &&
	      ((unsigned char *)s.buf.host)[BS - 1] == 0x22,
	      "bounce: a read of fixed file 1 lands in the host slot with file 1's bytes (%d)",
	      ret);
	dbr_sess_detach(&s, 1);
	dbr_sess_detach(&s, 1);
	CHECK(read_fixed(&s, 1) == -EBADF, "bounce: detached, fixed file 1 is gone (EBADF)");
out:
	dbr_sess_close(&s);
	dbr_sess_close(&s);
	CHECK(!s.ring.ready && !s.buf.host && !s.buf.priv && !s.slot_live &&
	      !s.pipe_ready && !s.host_live,
	      "bounce: the teardown, twice, released ring, buffer, pipeline and slots");
	dbr_sess_detach(&s, 0);
	close(f0);
	close(f1);
	CHECK(count_fds() == fds, "bounce: no descriptor left open");
}

/* A live p2p slot: only with the series, udmabuf and an NVMe namespace. */
static void p2p_live(struct dbr_session *s)
{
	const char *dev = getenv("DBR_TEST_NVME");
	int fd;

	if (dbr_probe_p2p() < 0 || !dev || !dev[0]) {
		printf("ok - SKIP: a live p2p slot needs the io_uring dma-buf series and DBR_TEST_NVME\n");
		return;
	}
	fd = open(dev, O_RDWR | O_DIRECT);
	CHECK(fd >= 0 && dbr_sess_attach(s, 1, fd) == 0 && s->slot_live[1],
	      "p2p: %s attached, its dma-buf slot live", dev);
	dbr_sess_close(s);
	CHECK(!s->slot_live && !s->ring.ready,
	      "p2p: the teardown cleared the live slot before the memory went");
	if (fd >= 0)
		close(fd);
}

static void test_p2p(void)
{
	int fds = count_fds(), f0 = scratch("p", 0x33);
	struct dbr_session s;
	struct dbr_sess_cfg c;
	enum dbr_sess_step step = DBR_STEP_MEM;
	int ret;

	cfg_of(&c, true, 2);
	dbr_sess_init(&s);
	gpu_buf_init(&s.buf, &gpu_host_provider, 0, gpu_spin_ns());
	ret = dbr_sess_open(&s, &c, &step);
	CHECK(!ret && s.ring.nr_bufs == 2 && s.ring.nr_files == 2,
	      "p2p: a buffer slot and a file slot per file (%d)", ret);
	ret = ret ? ret : dbr_sess_alloc(&s, 1 << 20, &step);
	if (ret && step == DBR_STEP_EXPORT) {
		CHECK(!s.buf.host && !s.buf.priv && s.buf.dmabuf_fd == -1,
		      "p2p: the export failed (%s), and the buffer went with it",
		      s.buf.why);
		goto out;
	}
	CHECK(!ret && s.buf.dmabuf_fd >= 0, "p2p: buffer exported as a dma-buf (%d)",
	      ret);
	if (ret)
		goto out;
	ret = dbr_sess_start(&s, &step);
	CHECK(!ret && !s.host_live, "p2p: started, no host slot (%d)", ret);
	ret = dbr_sess_attach(&s, 0, f0);
	CHECK(ret < 0 && !s.slot_live[0],
	      "p2p: a regular file's dma-buf slot is refused (%s), nothing live",
	      strerror(-ret));
	p2p_live(&s);
out:
	dbr_sess_close(&s);
	dbr_sess_close(&s);
	CHECK(!s.ring.ready && !s.buf.host && s.buf.dmabuf_fd == -1 && !s.slot_live,
	      "p2p: the teardown, twice, released everything");
	close(f0);
	CHECK(count_fds() == fds, "p2p: no descriptor left open");
}

/* The teardown from each step that can fail first. */
static void test_failed_steps(void)
{
	int fds = count_fds();
	struct dbr_session s;
	struct dbr_sess_cfg c;
	enum dbr_sess_step step = DBR_STEP_MEM;
	int ret;

	dbr_sess_init(&s);
	CHECK(dbr_sess_attach(&s, 0, 0) == -EINVAL, "attach before open is refused");
	dbr_sess_close(&s);
	CHECK(!s.opened, "an empty session closes");

	cfg_of(&c, false, 1);
	c.ring.entries = 0;
	dbr_sess_init(&s);
	ret = dbr_sess_open(&s, &c, &step);
	CHECK(ret < 0 && step == DBR_STEP_RING && !s.opened,
	      "a ring the kernel refuses: step io_uring_setup (%s)", strerror(-ret));
	dbr_sess_close(&s);

	/* bounce: 1 PiB in 1 GiB host pieces is more than one slot */
	cfg_of(&c, false, 1);
	dbr_sess_init(&s);
	gpu_buf_init(&s.buf, &gpu_host_provider, 0, gpu_spin_ns());
	ret = dbr_sess_open(&s, &c, &step);
	if (!ret)
		ret = dbr_sess_alloc(&s, (size_t)1 << 50, &step);
	CHECK(ret == -E2BIG && step == DBR_STEP_SPLIT && !s.buf.host &&
	      s.split.nr > s.pieces,
	      "an area of more pieces than the table has: step split, nothing allocated (%u pieces, %u slots)",
	      s.split.nr, s.pieces);
	dbr_sess_close(&s);

	/* p2p: one dma-buf of 1 PiB fits the table, but not the machine */
	cfg_of(&c, true, 1);
	dbr_sess_init(&s);
	gpu_buf_init(&s.buf, &gpu_host_provider, 0, gpu_spin_ns());
	ret = dbr_sess_open(&s, &c, &step);
	if (!ret)
		ret = dbr_sess_alloc(&s, (size_t)1 << 50, &step);
	CHECK(ret < 0 && step == DBR_STEP_ALLOC && !s.buf.host && !s.buf.priv,
	      "a buffer the machine cannot give: step alloc, nothing held (%s)",
	      strerror(-ret));
	dbr_sess_close(&s);
	CHECK(!s.ring.ready && count_fds() == fds,
	      "after each failed step the teardown leaves no descriptor open");
}

int main(void)
{
	test_failed_steps();
	test_bounce();
	test_p2p();
	return check_done("test_session");
}
