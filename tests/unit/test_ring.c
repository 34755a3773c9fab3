// SPDX-License-Identifier: MIT
/*
 * The ring unit against the running kernel: set-up flags (and the kernel's
 * flag for waiting task work), the buffer table,
 * fixed reads and writes through a host slot, the -EAGAIN reissue path (a
 * real request whose first completion is replaced by an injected -EAGAIN),
 * quiesce, attaching and detaching a target file, the p2p probe, a ring
 * whose thread takes credentials of its own, and that nothing leaks a
 * descriptor.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <linux/securebits.h>

#include "check.h"
#include "dbr_uapi.h"
#include "provider.h"
#include "ring.h"

#define BUF_SIZE	(256 * 1024)
#define BLK		4096

static int make_file(char *path)
{
	char block[BLK];
	int fd, i;

	fd = mkstemp(path);
	if (fd < 0)
		return -1;
	for (i = 0; i < BUF_SIZE / BLK; i++) {
		memset(block, 'a' + i % 26, sizeof(block));
		if (write(fd, block, sizeof(block)) != sizeof(block))
			return -1;
	}
	return fd;
}

/* as the engine sets up its ring: a single issuer */
static void init_ring(struct dbr_ring *r, unsigned int entries)
{
	struct dbr_ring_params p = {
		.entries = entries, .sqpoll_cpu = -1, .single_issuer = true,
	};
	char flags[128];
	int ret = dbr_ring_init(r, &p);

	dbr_ring_describe(r, flags, sizeof(flags));
	CHECK(ret == 0, "ring set up with %s (ret %d)", flags, ret);
	if (ret)
		exit(check_done("test_ring"));
}

static struct dbr_req read_req(int fd, void *buf, unsigned int len,
			       uint64_t off)
{
	struct dbr_req req = {
		.op = DBR_OP_READ, .fd = fd, .addr = (uintptr_t)buf,
		.len = len, .off = off, .buf_index = 0,
	};
	return req;
}

/* Submit and wait until one request is reaped. */
static struct dbr_req *reap_one(struct dbr_ring *r)
{
	struct dbr_req *done[4];
	int n;

	for (;;) {
		if (dbr_ring_submit(r, 1) < 0)
			return NULL;
		n = dbr_ring_reap(r, done, 1);
		if (n == 1)
			return done[0];
	}
}

static void test_table_limits(void)
{
	struct dbr_ring r;
	char small[64];

	init_ring(&r, 4);
	CHECK(dbr_ring_install_host(&r, 0, small, sizeof(small)) == -EINVAL,
	      "installing before the table exists is refused");
	CHECK(dbr_ring_register_buf_table(&r, 2) == 0, "sparse table of 2 slots");
	CHECK(dbr_ring_install_host(&r, 2, small, sizeof(small)) == -EINVAL,
	      "slot beyond the table is refused");
	/* the limit is checked before the kernel is asked: no 1 GiB needed */
	CHECK(dbr_ring_install_host(&r, 0, small, DBR_REGBUF_MAX_BYTES + 1) == -E2BIG,
	      "a buffer over 1 GiB is refused before registration");
	CHECK(dbr_ring_install_dmabuf(&r, 5, 0, 0) == -EINVAL,
	      "dma-buf slot beyond the table is refused");
	dbr_ring_exit(&r);
}

static void test_fixed_io(int fd, char *buf)
{
	struct dbr_ring r;
	struct dbr_req req, *done;

	init_ring(&r, 8);
	CHECK(dbr_ring_register_buf_table(&r, 1) == 0, "sparse table");
	CHECK(dbr_ring_install_host(&r, 0, buf, BUF_SIZE) == 0, "host buffer installed in slot 0");

	memset(buf, 0, BUF_SIZE);
	req = read_req(fd, buf + BLK, BLK, 3 * BLK);
	CHECK(dbr_ring_queue(&r, &req) == 0, "read queued");
	done = reap_one(&r);
	CHECK(done == &req && req.res == BLK && buf[BLK] == 'd' &&
	      buf[2 * BLK - 1] == 'd' && buf[0] == 0,
	      "READ_FIXED brought block 3 into the slot at offset 4096 (res %d)", req.res);

	memset(buf, 'Z', BLK);
	req = (struct dbr_req){ .op = DBR_OP_WRITE, .fd = fd,
				.addr = (uintptr_t)buf, .len = BLK, .off = 0 };
	dbr_ring_queue(&r, &req);
	done = reap_one(&r);
	CHECK(done == &req && req.res == BLK, "WRITE_FIXED wrote a block");
	req = (struct dbr_req){ .op = DBR_OP_FDATASYNC, .fd = fd };
	dbr_ring_queue(&r, &req);
	done = reap_one(&r);
	CHECK(done == &req && req.res == 0, "fdatasync completes");

	CHECK(dbr_ring_clear_buf(&r, 0, false) == 0, "host slot cleared");
	req = read_req(fd, buf, BLK, 0);
	dbr_ring_queue(&r, &req);
	done = reap_one(&r);
	CHECK(done == &req && req.res == -EFAULT,
	      "READ_FIXED into a cleared slot fails with EFAULT (res %d)", req.res);
	dbr_ring_exit(&r);
}

/*
 * The series may complete a request with -EAGAIN when the exporter moves the
 * memory; the ring must reissue the identical request without the caller
 * noticing. Inject that completion for a real request, then let the kernel
 * complete the reissue.
 */
static void test_eagain_reissue(int fd, char *buf)
{
	struct io_uring_sqe *sqe;
	struct dbr_req req, *done;
	struct dbr_ring r;
	unsigned int head;
	int ret;

	init_ring(&r, 8);
	dbr_ring_register_buf_table(&r, 1);
	dbr_ring_install_host(&r, 0, buf, BUF_SIZE);
	memset(buf, 0, BUF_SIZE);

	req = read_req(fd, buf, BLK, 5 * BLK);
	dbr_ring_queue(&r, &req);
	/* pretend the kernel consumed it and answered -EAGAIN */
	io_uring_submit(&r.ring);
	ret = dbr_ring_handle_cqe(&r, &req, -EAGAIN);
	CHECK(ret == 0 && req.reissues == 1 && r.reissues == 1 && r.inflight == 1,
	      "-EAGAIN is reissued, not completed (ret %d)", ret);
	/* the kernel's real completion of the original is still to come */
	r.inflight++;
	head = r.ring.sq.sqe_tail - 1;
	sqe = &r.ring.sq.sqes[head & *r.ring.sq.kring_mask];
	CHECK(sqe->opcode == IORING_OP_READ_FIXED && sqe->off == 5 * BLK &&
	      sqe->len == BLK && sqe->addr == (uintptr_t)buf &&
	      sqe->buf_index == 0 && (void *)(uintptr_t)sqe->user_data == &req,
	      "the reissued SQE is identical to the original");
	/* the original real completion is still coming: account it away */
	done = reap_one(&r);
	CHECK(done == &req && req.res == BLK, "first real completion reaped");
	done = reap_one(&r);
	CHECK(done == &req && req.res == BLK && buf[0] == 'f',
	      "the reissue completes with the data (res %d)", req.res);

	/* a request that never stops answering -EAGAIN must end, with it */
	req = read_req(fd, buf, BLK, 0);
	dbr_ring_queue(&r, &req);
	reap_one(&r);
	r.inflight++;
	req.reissues = DBR_MAX_REISSUE;
	ret = dbr_ring_handle_cqe(&r, &req, -EAGAIN);
	CHECK(ret == 1 && req.res == -EAGAIN,
	      "after %d reissues -EAGAIN reaches the caller", DBR_MAX_REISSUE);
	dbr_ring_exit(&r);
}

static void test_quiesce(int fd, char *buf)
{
	struct dbr_req reqs[4], *done[8];
	struct dbr_ring r;
	int i, n;

	init_ring(&r, 8);
	dbr_ring_register_buf_table(&r, 1);
	dbr_ring_install_host(&r, 0, buf, BUF_SIZE);
	for (i = 0; i < 4; i++) {
		reqs[i] = read_req(fd, buf + i * BLK, BLK, i * BLK);
		dbr_ring_queue(&r, &reqs[i]);
	}
	CHECK(dbr_ring_quiesce(&r) == 0 && r.inflight == 0,
	      "quiesce waits for everything in flight");
	n = dbr_ring_reap(&r, done, 8);
	CHECK(n == 4, "completions gathered by quiesce are reaped later (%d)", n);
	dbr_ring_exit(&r);
}

/* fsync through fixed-file slot: 0 when a file is there, -EBADF when not */
static int fsync_fixed(struct dbr_ring *r, unsigned int slot)
{
	struct dbr_req req = { .op = DBR_OP_FSYNC, .fd = (int)slot,
			       .fixed_file = true };

	if (dbr_ring_queue(r, &req) < 0 || reap_one(r) != &req)
		return -EIO;
	return req.res;
}

/*
 * A file whose dma-buf registration fails must not stay in the fixed-file
 * table: its fd gets closed, and the table would keep the file open.
 */
static void test_attach_file(int fd)
{
	struct dbr_ring r;
	int ret;

	init_ring(&r, 4);
	dbr_ring_register_buf_table(&r, 1);
	CHECK(dbr_ring_register_file_table(&r, 1) == 0, "sparse file table");
	CHECK(dbr_ring_attach_file(&r, 0, fd, -1) == 0 && fsync_fixed(&r, 0) == 0,
	      "an attached file is reachable through its fixed-file slot");
	CHECK(dbr_ring_detach_file(&r, 0, false) == 0 && fsync_fixed(&r, 0) == -EBADF,
	      "a detached file is gone from the fixed-file slot");
	/* a regular file is no dma-buf: every kernel refuses the install */
	ret = dbr_ring_attach_file(&r, 0, fd, fd);
	CHECK(ret < 0, "a dma-buf the kernel refuses fails the attach (%s)",
	      strerror(-ret));
	ret = fsync_fixed(&r, 0);
	CHECK(ret == -EBADF,
	      "the failed attach left nothing in the fixed-file slot (fsync through it: %s)",
	      ret ? strerror(-ret) : "ok, the file is still there");
	dbr_ring_exit(&r);
}

/* A file with its dma-buf in pieces (dbr_split): all or nothing. */
static void test_attach_pieces(int fd)
{
	int fds[3] = { fd, fd, fd };
	struct dbr_ring r;
	int ret;

	init_ring(&r, 4);
	CHECK(dbr_ring_register_buf_table(&r, 6) == 0 &&
	      dbr_ring_register_file_table(&r, 2) == 0, "tables: 6 buffer slots, 2 files");
	CHECK(dbr_ring_attach_pieces(&r, 1, fd, 3, fds, 0) == 0 &&
	      fsync_fixed(&r, 1) == 0, "no pieces: the file alone is attached");
	CHECK(dbr_ring_detach_pieces(&r, 1, 3, 0) == 0 && fsync_fixed(&r, 1) == -EBADF,
	      "and detached");
	ret = dbr_ring_attach_pieces(&r, 1, fd, 3, fds, 3);
	CHECK(ret < 0 && fsync_fixed(&r, 1) == -EBADF,
	      "pieces the kernel refuses: the attach fails (%s) and the file slot is empty",
	      strerror(-ret));
	dbr_ring_exit(&r);
}

static int alarm_fd = -1;

static void on_alarm(int sig)
{
	(void)sig;
	if (write(alarm_fd, "x", 1) < 0)
		_exit(99);
}

/*
 * Closing a file that has no dma-buf slot changes no buffer registration:
 * it must not wait for the I/O in flight on the ring (a read from an empty
 * pipe here; if detach waits, an alarm feeds the pipe after 2 s so the test
 * ends, and fails).
 */
static void test_detach_no_quiesce(int fd, char *buf)
{
	struct sigaction sa = { .sa_handler = on_alarm };
	struct dbr_req req, *done;
	struct dbr_ring r;
	int p[2], ret;

	if (pipe(p) < 0) {
		CHECK(0, "pipe: %s", strerror(errno));
		return;
	}
	alarm_fd = p[1];
	sigaction(SIGALRM, &sa, NULL);
	init_ring(&r, 4);
	dbr_ring_register_buf_table(&r, 1);
	dbr_ring_install_host(&r, 0, buf, BUF_SIZE);
	dbr_ring_register_file_table(&r, 1);
	dbr_ring_attach_file(&r, 0, fd, -1);
	req = read_req(p[0], buf, 1, 0);
	dbr_ring_queue(&r, &req);
	dbr_ring_submit(&r, 0);
	alarm(2);
	ret = dbr_ring_detach_file(&r, 0, false);
	alarm(0);
	CHECK(ret == 0 && r.inflight == 1,
	      "detaching a file without a dma-buf leaves the I/O in flight alone (in flight: %u)",
	      r.inflight);
	if (r.inflight) {
		if (write(p[1], "y", 1) != 1)
			CHECK(0, "feeding the pipe: %s", strerror(errno));
		done = reap_one(&r);
	} else if (dbr_ring_reap(&r, &done, 1) != 1) {
		done = NULL;	/* quiesce kept it: it must be reaped there */
	}
	CHECK(done == &req && req.res == 1, "the pipe read completes (res %d)", req.res);
	dbr_ring_exit(&r);
	close(p[0]);
	close(p[1]);
}

/* the watchdog's arithmetic, with time given */
static void test_watch_logic(void)
{
	const uint64_t ms = 1000000;
	struct dbr_watch w;

	dbr_watch_init(&w, 500 * ms, NULL, NULL);
	CHECK(w.period_ns == 500 * ms, "a limit under a second is also the period");
	dbr_watch_begin(&w, 1000 * ms);
	CHECK(dbr_watch_quiet(&w, 1400 * ms, 3) == 0, "400 ms quiet: no stall yet");
	CHECK(dbr_watch_quiet(&w, 1500 * ms, 3) == 1 && w.stalls == 1,
	      "500 ms quiet with I/O out: a stall");
	CHECK(dbr_watch_quiet(&w, 2500 * ms, 3) == 0 && w.stalls == 1,
	      "the same stretch is reported once");
	dbr_watch_progress(&w);
	dbr_watch_begin(&w, 3000 * ms);
	CHECK(dbr_watch_quiet(&w, 3600 * ms, 0) == 0,
	      "nothing in flight: never a stall");
	CHECK(dbr_watch_quiet(&w, 3700 * ms, 1) == 0 &&
	      dbr_watch_quiet(&w, 4200 * ms, 1) == 1 && w.stalls == 2,
	      "after a completion a new stretch counts afresh");
	dbr_watch_init(&w, 0, NULL, NULL);
	dbr_watch_begin(&w, 1);
	CHECK(dbr_watch_quiet(&w, 3600000 * ms, 1) == 0, "limit 0: off");
}

struct stall_seen {
	int calls;
	uint64_t quiet_ns;
	unsigned int inflight;
	int wake_fd;
};

/* the stall is reported, then ended: the request gets its data */
static void on_stall(void *arg, uint64_t quiet_ns, unsigned int inflight)
{
	struct stall_seen *s = arg;

	s->calls++;
	s->quiet_ns = quiet_ns;
	s->inflight = inflight;
	if (write(s->wake_fd, "x", 1) != 1)
		s->calls = -100;
}

/* A read of an empty pipe never completes on its own: a real stall. */
static void test_watchdog(char *buf)
{
	struct stall_seen seen = { 0 };
	struct dbr_watch w;
	struct dbr_ring r;
	struct dbr_req req, *done;
	int p[2];

	if (pipe(p) < 0) {
		CHECK(0, "pipe: %s", strerror(errno));
		return;
	}
	seen.wake_fd = p[1];
	init_ring(&r, 4);
	dbr_watch_init(&w, 200 * 1000000ULL, on_stall, &seen);
	r.watch = &w;
	CHECK(dbr_ring_register_buf_table(&r, 1) == 0 &&
	      dbr_ring_install_host(&r, 0, buf, BUF_SIZE) == 0, "host buffer");
	req = read_req(p[0], buf, 1, 0);
	CHECK(dbr_ring_queue(&r, &req) == 0, "read of an empty pipe queued");
	done = reap_one(&r);
	CHECK(seen.calls == 1 && seen.quiet_ns >= 200 * 1000000ULL &&
	      seen.inflight == 1,
	      "a stall of %.0f ms with %u in flight reported once (%d calls)",
	      seen.quiet_ns / 1e6, seen.inflight, seen.calls);
	CHECK(done == &req && req.res == 1 && !w.reported,
	      "the wait went on and got the completion (res %d)", req.res);
	/* data waiting: no stall */
	CHECK(write(p[1], "y", 1) == 1, "a byte in the pipe");
	req = read_req(p[0], buf, 1, 0);
	dbr_ring_queue(&r, &req);
	done = reap_one(&r);
	CHECK(done == &req && req.res == 1 && seen.calls == 1,
	      "a read that completes at once is no stall (%d calls)", seen.calls);
	dbr_ring_exit(&r);
	close(p[0]);
	close(p[1]);
}

/*
 * A read that completes through io-wq comes back as deferred task work, and
 * with no TASKRUN_FLAG (ring.c says why) nothing in the SQ ring says so:
 * dbr_ring_ready must enter for it whenever the CQ is empty. Polling only
 * dbr_ring_ready, a ring that waited for a flag would never reap it
 * (bounded at 5 s).
 */
static void test_io_wq_ready(int fd, char *buf)
{
	struct dbr_ring r;
	struct dbr_req req, *done[2];
	unsigned int ready = 0;
	uint64_t t0;
	int n;

	init_ring(&r, 8);
	CHECK(!(r.setup_flags & IORING_SETUP_TASKRUN_FLAG),
	      "the ring is set up without TASKRUN_FLAG");
	dbr_ring_register_buf_table(&r, 1);
	dbr_ring_install_host(&r, 0, buf, BUF_SIZE);
	memset(buf, 0, BLK);
	req = read_req(fd, buf, BLK, 5 * BLK);
	req.force_async = true;
	dbr_ring_queue(&r, &req);
	CHECK(dbr_ring_submit(&r, 0) >= 0, "a read for io-wq submitted");
	t0 = gpu_now_ns();
	while (!(ready = dbr_ring_ready(&r)) && gpu_now_ns() - t0 < 5000000000ull)
		;
	n = dbr_ring_reap(&r, done, 2);
	CHECK(ready == 1 && n == 1 && done[0] == &req && req.res == BLK &&
	      buf[0] == 'f', "polling dbr_ring_ready alone reaped the io-wq read (ready %u, %d reaped, res %d)",
	      ready, n, req.res);
	dbr_ring_exit(&r);
}

/* a ring as the engine sets one up by default: thread_creds=own */
static const struct dbr_ring_params own_creds_ring = {
	.entries = 8, .sqpoll_cpu = -1, .single_issuer = true,
	.own_creds = true,
};

struct creds_case {
	int fd;
	char *buf;
	int keep;		/* the thread's keep-capabilities flag before */
};

/*
 * own_creds, in a thread of its own (the test's main thread keeps the
 * process's): the ring says the copy took, the copy changes nothing the
 * thread is (ids, the keep-capabilities flag it had, 0 or 1), and a read
 * through io-wq, whose worker runs with the copy, still reads the file.
 */
static void *own_creds_thread(void *arg)
{
	struct creds_case *c = arg;
	uid_t ids[3], now[3];
	struct dbr_ring r;
	struct dbr_req req;

	CHECK(prctl(PR_SET_KEEPCAPS, c->keep, 0, 0, 0) == 0,
	      "keep-capabilities flag set to %d", c->keep);
	getresuid(&ids[0], &ids[1], &ids[2]);
	CHECK(dbr_ring_init(&r, &own_creds_ring) == 0, "ring with own_creds set up");
	CHECK(r.own_creds && !r.own_creds_err,
	      "the thread's credentials are its own (err %d)", r.own_creds_err);
	getresuid(&now[0], &now[1], &now[2]);
	CHECK(prctl(PR_GET_KEEPCAPS, 0, 0, 0, 0) == c->keep &&
	      !memcmp(ids, now, sizeof(ids)),
	      "the copy left the keep-capabilities flag at %d and the ids as they were",
	      c->keep);
	dbr_ring_register_buf_table(&r, 1);
	dbr_ring_install_host(&r, 0, c->buf, BUF_SIZE);
	memset(c->buf, 0, BLK);
	req = read_req(c->fd, c->buf, BLK, 7 * BLK);
	req.force_async = true;
	dbr_ring_queue(&r, &req);
	CHECK(reap_one(&r) == &req && req.res == BLK && c->buf[0] == 'h',
	      "an io-wq read under the copy read the file (res %d)", req.res);
	dbr_ring_exit(&r);
	return NULL;
}

/*
 * Where the kernel refuses the copy (here the thread's SECURE_KEEP_CAPS
 * locked, which needs CAP_SETPCAP), the ring still comes up, says why, and
 * the thread keeps the credentials it shares.
 */
static void *refused_creds_thread(void *arg)
{
	struct dbr_ring r;

	(void)arg;
	if (prctl(PR_SET_SECUREBITS, SECBIT_KEEP_CAPS_LOCKED, 0, 0, 0) < 0) {
		printf("# SKIP: cannot lock SECURE_KEEP_CAPS (%s): refusal untested\n",
		       strerror(errno));
		return NULL;
	}
	CHECK(dbr_ring_init(&r, &own_creds_ring) == 0, "ring set up where the copy is refused");
	CHECK(!r.own_creds && r.own_creds_err == -EPERM,
	      "the ring says the copy was refused (err %d)", r.own_creds_err);
	dbr_ring_exit(&r);
	return NULL;
}

static void test_own_creds(int fd, char *buf)
{
	struct creds_case c = { .fd = fd, .buf = buf };
	int mine = prctl(PR_GET_KEEPCAPS, 0, 0, 0, 0);
	pthread_t t;

	for (c.keep = 0; c.keep < 2; c.keep++) {
		CHECK(pthread_create(&t, NULL, own_creds_thread, &c) == 0,
		      "thread for own_creds (keep %d)", c.keep);
		pthread_join(t, NULL);
	}
	CHECK(pthread_create(&t, NULL, refused_creds_thread, NULL) == 0,
	      "thread for a refused copy");
	pthread_join(t, NULL);
	CHECK(prctl(PR_GET_KEEPCAPS, 0, 0, 0, 0) == mine,
	      "the main thread's keep-capabilities flag is still %d", mine);
}

static void test_probe(void)
{
	int ret = dbr_probe_p2p();

	CHECK(ret == 0 || ret == -EINVAL || ret == -EOPNOTSUPP,
	      "p2p probe answers: %s", ret == 0 ? "series present" :
	      ret == -EINVAL ? "no series (EINVAL)" : "series without config (EOPNOTSUPP)");
}

int main(void)
{
	char path[] = "/tmp/dbr-ring-XXXXXX";
	int fds_before = count_fds();
	char *buf;
	int fd;

	fd = make_file(path);
	if (fd < 0) {
		printf("SKIP: cannot create a scratch file in /tmp\n");
		return 77;
	}
	unlink(path);
	buf = mmap(NULL, BUF_SIZE, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	test_table_limits();
	test_fixed_io(fd, buf);
	test_eagain_reissue(fd, buf);
	test_quiesce(fd, buf);
	test_attach_file(fd);
	test_attach_pieces(fd);
	test_detach_no_quiesce(fd, buf);
	test_io_wq_ready(fd, buf);
	test_own_creds(fd, buf);
	test_probe();
	test_watch_logic();
	test_watchdog(buf);
	munmap(buf, BUF_SIZE);
	close(fd);
	CHECK(count_fds() == fds_before, "no descriptor leaked (%d before, %d after)",
	      fds_before, count_fds());
	return check_done("test_ring");
}
