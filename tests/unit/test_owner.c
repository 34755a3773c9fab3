// SPDX-License-Identifier: MIT
/*
 * The GPU owner's side of one job process (gpu/runtime/owner.c), spoken to
 * over a socketpair in its own wire format, on a fake runtime that counts
 * what reaches it. What a job process names must be its own: a stream,
 * event or module it does not hold, a copy past its shared memory or its
 * device allocation, memory freed, a call the runtime lacks, a memfd
 * shorter than it says: each is refused with its reason, and nothing of it
 * reaches the runtime (in the owner's one context a bad call would crash
 * or corrupt every job process's GPU work). A valid copy still goes, and a
 * connection's end releases everything and closes every fd.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include "check.h"
#include "device.h"
#include "kernels.h"
#include "owner.h"
#include "provider.h"
#include "runtime.h"

#define DEV_BASE	0x7000000000ull
#define DEV_SIZE	(1u << 20)
#define SHARED		(64u << 10)

static struct {
	unsigned int copies, syncs, launches, frees, streams_live;
	unsigned int events_live, records;
	uint64_t last_dst, last_src, last_len;
} fk;

static int fk_probe(char *why, size_t len)
{
	(void)why;
	(void)len;
	return 1;
}

static int fk_alloc(struct gpu_buf *b, struct gpu_dev *d)
{
	(void)b;
	d->dptr = DEV_BASE;
	d->dsize = DEV_SIZE;
	return 0;
}

static void fk_free(struct gpu_dev *d)
{
	(void)d;
	fk.frees++;
}

static int fk_register(struct gpu_buf *b, void *host, size_t len)
{
	(void)b;
	(void)host;
	(void)len;
	return 0;
}

static void fk_unregister(void *host)
{
	(void)host;
}

static int fk_enter(struct gpu_buf *b)
{
	(void)b;
	return 0;
}

static int fk_stream_create(struct gpu_buf *b, void **s)
{
	(void)b;
	*s = malloc(1);
	fk.streams_live++;
	return *s ? 0 : -ENOMEM;
}

static int fk_stream_sync(struct gpu_buf *b, void *s)
{
	(void)b;
	(void)s;
	fk.syncs++;
	return 0;
}

static void fk_stream_destroy(void *s)
{
	free(s);
	fk.streams_live--;
}

static int fk_event_create(struct gpu_buf *b, void **e)
{
	(void)b;
	*e = malloc(1);
	fk.events_live++;
	return *e ? 0 : -ENOMEM;
}

static void fk_event_destroy(void *e)
{
	free(e);
	fk.events_live--;
}

static int fk_event_record(struct gpu_buf *b, void *e, void *s)
{
	(void)b;
	(void)e;
	(void)s;
	fk.records++;
	return 0;
}

static int fk_copy(struct gpu_buf *b, void *s, enum gpu_copy_dir dir,
		   uint64_t dst, uint64_t src, size_t len)
{
	(void)b;
	(void)s;
	(void)dir;
	fk.copies++;
	fk.last_dst = dst;
	fk.last_src = src;
	fk.last_len = len;
	return 0;
}

static int fk_load(struct gpu_buf *b, const char *ptx, const char *entry,
		   void **mod)
{
	(void)b;
	(void)ptx;
	(void)entry;
	*mod = malloc(1);
	return *mod ? 0 : -ENOMEM;
}

static void fk_unload(void *mod)
{
	free(mod);
}

static int fk_launch(struct gpu_buf *b, void *s, void *mod,
		     const struct gpu_klaunch *l)
{
	(void)b;
	(void)s;
	(void)mod;
	(void)l;
	fk.launches++;
	return 0;
}

/* No copy_batch, map_host, write_value, kernel_start: optional calls. */
static struct gpu_runtime fk_rt = {
	.probe		= fk_probe,
	.mem_alloc	= fk_alloc,
	.mem_free	= fk_free,
	.host_register	= fk_register,
	.host_unregister = fk_unregister,
	.enter		= fk_enter,
	.stream_create	= fk_stream_create,
	.stream_sync	= fk_stream_sync,
	.stream_destroy	= fk_stream_destroy,
	.event_create	= fk_event_create,
	.event_destroy	= fk_event_destroy,
	.event_record	= fk_event_record,
	.copy		= fk_copy,
};

static const struct gpu_provider fk_prov = { .name = "fake", .rt = &fk_rt };

/* One job process's connection to the owner, as remote.c keeps it. */
struct job {
	int sock;
	pthread_t owner;
	struct gpu_own_ctl *ctl;
	void *shared;		/* SHARED bytes handed over */
	uint64_t stream;
};

static void *serve(void *arg)
{
	gpu_owner_serve((int)(intptr_t)arg, &fk_rt, &fk_prov, 0);
	return NULL;
}

static void send_fd(int sock, const struct gpu_own_req *q, const void *pl,
		    size_t plen, int fd)
{
	struct iovec iov[2] = { { (void *)q, q ? sizeof(*q) : 0 }, { (void *)pl, plen } };

	if (gpu_own_send(sock, iov, plen ? 2 : 1, fd) < 0)
		perror("sendmsg");
}

/* A call with a reply: its ret, the reply in *p. */
static int call(struct job *j, struct gpu_own_req q, const void *pl,
		size_t plen, int fd, struct gpu_own_rep *p)
{
	struct gpu_own_rep r;

	if (!p)
		p = &r;
	send_fd(j->sock, &q, pl, plen, fd);
	if (recv(j->sock, p, sizeof(*p), 0) != (ssize_t)sizeof(*p))
		return -EPIPE;
	return p->ret;
}

/* A call without one; then a call with one, so that it has been run. */
static int post(struct job *j, struct gpu_own_req q, const void *pl,
		size_t plen)
{
	send_fd(j->sock, &q, pl, plen, -1);
	call(j, (struct gpu_own_req){ .op = GPU_OWN_CPU }, NULL, 0, -1, NULL);
	return __atomic_load_n(&j->ctl->err, __ATOMIC_ACQUIRE);
}

static int memfd_of(size_t len, void **map)
{
	int fd = memfd_create("test_owner", MFD_CLOEXEC);

	if (fd < 0 || ftruncate(fd, (off_t)len) < 0)
		return -1;
	*map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	return *map == MAP_FAILED ? -1 : fd;
}

/* HELLO, OPEN, MEM_ALLOC, HOST_REGISTER of SHARED bytes, a stream. */
static int job_start(struct job *j)
{
	struct gpu_own_rep p;
	int sv[2], fd, ret;
	void *ctl;

	memset(j, 0, sizeof(*j));
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	j->sock = sv[0];
	pthread_create(&j->owner, NULL, serve, (void *)(intptr_t)sv[1]);
	fd = memfd_of(sizeof(struct gpu_own_ctl), &ctl);
	j->ctl = ctl;
	ret = call(j, (struct gpu_own_req){ .op = GPU_OWN_HELLO, .a = { GPU_OWN_PROTO } },
		   NULL, 0, fd, NULL);
	close(fd);
	if (!ret)
		ret = call(j, (struct gpu_own_req){ .op = GPU_OWN_OPEN, .a = { DEV_SIZE } },
			   NULL, 0, -1, NULL);
	if (!ret)
		ret = call(j, (struct gpu_own_req){ .op = GPU_OWN_MEM_ALLOC, .a = { DEV_SIZE } },
			   NULL, 0, -1, NULL);
	fd = memfd_of(SHARED, &j->shared);
	if (!ret)
		ret = call(j, (struct gpu_own_req){ .op = GPU_OWN_HOST_REGISTER,
			   .a = { (uint64_t)(uintptr_t)j->shared, SHARED } },
			   NULL, 0, fd, NULL);
	close(fd);
	if (!ret)
		ret = call(j, (struct gpu_own_req){ .op = GPU_OWN_STREAM_CREATE },
			   NULL, 0, -1, &p);
	j->stream = p.v[0];
	return ret;
}

/* The job process leaves: the owner releases what it held. */
static void job_end(struct job *j)
{
	close(j->sock);
	pthread_join(j->owner, NULL);
	munmap(j->ctl, sizeof(*j->ctl));
	munmap(j->shared, SHARED);
}

static struct gpu_own_req copy_req(struct job *j, uint64_t stream,
				   uint64_t dev, uint64_t host_off, uint64_t len)
{
	return (struct gpu_own_req){ .op = GPU_OWN_COPY,
		.a = { stream, GPU_H2D, dev, (uint64_t)(uintptr_t)j->shared + host_off, len } };
}

static void test_copies(void)
{
	unsigned int copies;
	struct job j;
	int ret;

	CHECK(job_start(&j) == 0, "a job process's start: HELLO, OPEN, alloc, register, stream");
	ret = post(&j, copy_req(&j, j.stream, DEV_BASE + 4096, 4096, 4096), NULL, 0);
	CHECK(ret == 0 && fk.copies == 1 && fk.last_len == 4096 &&
	      fk.last_dst == DEV_BASE + 4096 && fk.last_src != (uint64_t)(uintptr_t)j.shared + 4096,
	      "a copy inside both reaches the runtime, its host side as the owner maps it");
	job_end(&j);

	copies = fk.copies;
	job_start(&j);
	ret = post(&j, copy_req(&j, j.stream, DEV_BASE, SHARED - 4096, 8192), NULL, 0);
	CHECK(ret == -EFAULT && fk.copies == copies && strstr(j.ctl->why, "outside the memory"),
	      "a copy past the shared memory's end: %d (%s)", ret, j.ctl->why);
	job_end(&j);

	job_start(&j);
	ret = post(&j, copy_req(&j, j.stream, DEV_BASE + DEV_SIZE - 4096, 0, 8192), NULL, 0);
	CHECK(ret == -EFAULT && fk.copies == copies,
	      "a copy past the device allocation's end (another job's memory in the shared context): %d", ret);
	job_end(&j);

	job_start(&j);
	ret = post(&j, (struct gpu_own_req){ .op = GPU_OWN_MEM_FREE }, NULL, 0);
	ret = ret ? ret : post(&j, copy_req(&j, j.stream, DEV_BASE, 0, 4096), NULL, 0);
	CHECK(ret == -EFAULT && fk.copies == copies,
	      "a copy into device memory the job process freed: %d", ret);
	job_end(&j);

	job_start(&j);
	ret = post(&j, copy_req(&j, j.stream + 64, DEV_BASE, 0, 4096), NULL, 0);
	CHECK(ret == -EBADF && fk.copies == copies && strstr(j.ctl->why, "stream this job process does not hold"),
	      "a copy on a stream the job process does not hold: %d (%s)", ret, j.ctl->why);
	job_end(&j);
}

static void test_calls(void)
{
	struct gpu_own_rep p;
	struct job j, k;
	unsigned int syncs = fk.syncs;
	void *m;
	int ret, fd;

	job_start(&j);
	job_start(&k);
	ret = call(&j, (struct gpu_own_req){ .op = GPU_OWN_STREAM_SYNC, .a = { k.stream } },
		   NULL, 0, -1, &p);
	CHECK(ret == -EBADF && fk.syncs == syncs,
	      "a sync of another job process's stream: %d (%s)", ret, p.why);
	ret = call(&j, (struct gpu_own_req){ .op = GPU_OWN_STREAM_SYNC, .a = { j.stream } },
		   NULL, 0, -1, &p);
	CHECK(ret == 0 && fk.syncs == syncs + 1, "a sync of its own stream: %d", ret);
	post(&j, (struct gpu_own_req){ .op = GPU_OWN_STREAM_DESTROY, .a = { j.stream } }, NULL, 0);
	ret = call(&j, (struct gpu_own_req){ .op = GPU_OWN_STREAM_SYNC, .a = { j.stream } },
		   NULL, 0, -1, &p);
	CHECK(ret == -EBADF && fk.syncs == syncs + 1,
	      "a sync of a stream it destroyed: %d", ret);

	ret = call(&j, (struct gpu_own_req){ .op = GPU_OWN_KERNEL_LOAD }, "e\0t", 4, -1, &p);
	CHECK(ret == -EOPNOTSUPP && strstr(p.why, "no call"),
	      "a module load on a runtime without one: %d (%s)", ret, p.why);
	ret = call(&j, (struct gpu_own_req){ .op = GPU_OWN_OPEN, .a = { DEV_SIZE } },
		   NULL, 0, -1, &p);
	CHECK(ret == -EBUSY, "a second OPEN: %d", ret);
	fd = memfd_of(sizeof(struct gpu_own_ctl), &m);
	ret = call(&j, (struct gpu_own_req){ .op = GPU_OWN_HELLO, .a = { GPU_OWN_PROTO } },
		   NULL, 0, fd, &p);
	CHECK(ret == -EPROTO, "a second HELLO: %d (%s)", ret, p.why);
	close(fd);
	munmap(m, sizeof(struct gpu_own_ctl));

	fd = memfd_of(4096, &m);
	ret = call(&j, (struct gpu_own_req){ .op = GPU_OWN_HOST_REGISTER,
		   .a = { (uint64_t)(uintptr_t)m, SHARED } }, NULL, 0, fd, &p);
	CHECK(ret == -EINVAL && strstr(p.why, "holds 4096 bytes"),
	      "a memfd of 4 KiB handed over as %u KiB: %d (%s)", SHARED >> 10, ret, p.why);
	close(fd);
	munmap(m, 4096);
	job_end(&k);
	job_end(&j);
}

static void test_launch(void)
{
	struct gpu_own_rep p;
	struct gpu_klaunch *l = calloc(1, sizeof(*l));
	uint64_t mod;
	struct job j;
	int ret;

	fk_rt.kernel_load = fk_load;
	fk_rt.kernel_unload = fk_unload;
	fk_rt.kernel_launch = fk_launch;
	job_start(&j);
	ret = call(&j, (struct gpu_own_req){ .op = GPU_OWN_KERNEL_LOAD }, "e\0t", 4, -1, &p);
	mod = p.v[0];
	CHECK(ret == 0 && mod, "a module load where the runtime has one: %d", ret);
	l->n = GPU_KCOPY_MAX + 1;
	ret = post(&j, (struct gpu_own_req){ .op = GPU_OWN_KERNEL_LAUNCH, .a = { j.stream, mod } },
		   l, sizeof(*l));
	CHECK(ret == -EINVAL && !fk.launches, "a launch of %u copies: %d (%s)", l->n, ret, j.ctl->why);
	job_end(&j);

	job_start(&j);
	call(&j, (struct gpu_own_req){ .op = GPU_OWN_KERNEL_LOAD }, "e\0t", 4, -1, &p);
	l->n = 1;
	ret = post(&j, (struct gpu_own_req){ .op = GPU_OWN_KERNEL_LAUNCH, .a = { j.stream, p.v[0] + 8 } },
		   l, sizeof(*l));
	CHECK(ret == -EBADF && !fk.launches, "a launch of a module it does not hold: %d", ret);
	job_end(&j);

	job_start(&j);
	call(&j, (struct gpu_own_req){ .op = GPU_OWN_KERNEL_LOAD }, "e\0t", 4, -1, &p);
	ret = post(&j, (struct gpu_own_req){ .op = GPU_OWN_KERNEL_LAUNCH, .a = { j.stream, p.v[0] } },
		   l, sizeof(*l));
	CHECK(ret == 0 && fk.launches == 1, "a launch of 1 copy on its own stream and module: %d", ret);
	job_end(&j);
	free(l);
	fk_rt.kernel_load = NULL;
	fk_rt.kernel_unload = NULL;
	fk_rt.kernel_launch = NULL;
}

/*
 * A copy stream has an event per fence slot, about its iodepth: a job
 * process at iodepth 300 holds 300 events (64 were the most once), each
 * found by the calls that name it, and released at its end.
 */
static void test_many_events(void)
{
	struct gpu_own_rep p;
	uint64_t ev[300];
	unsigned int i, made = 0;
	struct job j;
	int ret;

	job_start(&j);
	for (i = 0; i < 300; i++)
		if (!call(&j, (struct gpu_own_req){ .op = GPU_OWN_EVENT_CREATE }, NULL, 0, -1, &p)) {
			ev[i] = p.v[0];
			made++;
		}
	CHECK(made == 300, "300 events for one job process: %u made", made);
	ret = 0;
	for (i = 0; i < 300 && !ret; i += 37)
		ret = post(&j, (struct gpu_own_req){ .op = GPU_OWN_EVENT_RECORD, .a = { ev[i], j.stream } },
			   NULL, 0);
	CHECK(ret == 0 && fk.records == 9, "records on events across them: %d, %u recorded", ret, fk.records);
	post(&j, (struct gpu_own_req){ .op = GPU_OWN_EVENT_DESTROY, .a = { ev[150] } }, NULL, 0);
	ret = post(&j, (struct gpu_own_req){ .op = GPU_OWN_EVENT_RECORD, .a = { ev[150], j.stream } },
		   NULL, 0);
	CHECK(ret == -EBADF && fk.records == 9, "a record on an event it destroyed: %d", ret);
	job_end(&j);
	CHECK(fk.events_live == 0, "its end releases every event: %u left", fk.events_live);
}

/* An empty message with an fd (the owner's end), every fd closed, all freed. */
static void test_release(void)
{
	unsigned int frees = fk.frees;
	int fds = count_fds(), fd;
	struct job j;
	void *m;

	job_start(&j);
	fd = memfd_of(4096, &m);
	send_fd(j.sock, NULL, NULL, 0, fd);
	close(fd);
	munmap(m, 4096);
	job_end(&j);
	CHECK(count_fds() == fds && fk.frees == frees + 1 && fk.streams_live == 0,
	      "a job process's end: %d fds open against %d before, its memory freed, %u streams left",
	      count_fds(), fds, fk.streams_live);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);	/* a crash in the owner keeps what was said */
	test_copies();
	test_calls();
	test_launch();
	test_many_events();
	test_release();
	return check_done("test_owner");
}
