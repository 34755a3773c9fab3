// SPDX-License-Identifier: MIT
/*
 * A job process's side of the GPU owner (remote.h, owner.h): the calls of
 * struct gpu_runtime as messages, and the owner's start.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "device.h"
#include "kernels.h"
#include "owner.h"
#include "remote.h"
#include "runtime.h"

#ifndef DBR_OWNER_DIR
#define DBR_OWNER_DIR	"/usr/local/libexec/dmabuf_uring"
#endif

/* How long a job process waits for a new owner to take connections. */
#define OWNER_START_NS	10000000000ull
/*
 * How long an owner may stay stopped (SIGSTOP, a debugger) before the job
 * processes it holds give up: seconds, $DBR_GPU_OWNER_STOP_S or this.
 */
#define OWNER_STOP_S	30

static struct {
	int sock;
	pthread_mutex_t lock;
	struct gpu_own_ctl *ctl;
	const struct gpu_provider *real;
	struct gpu_provider prov;	/* real's, with the calls below */
	bool wrote;		/* a fence write was answered: the rest go unanswered */
	int dev_id;
	long pid;
} conn = { .sock = -1, .lock = PTHREAD_MUTEX_INITIALIZER };

static const struct gpu_runtime remote_rt;
static struct gpu_runtime conn_rt;	/* remote_rt, less what the real one lacks */

bool gpu_remote_is(const struct gpu_provider *prov)
{
	return prov && prov->rt == &conn_rt;
}

long gpu_remote_owner_pid(void)
{
	return conn.sock >= 0 ? conn.pid : 0;
}

/* ---- messages --------------------------------------------------------- */

/*
 * Is the owner stopped (state T or t), and for how long as this process
 * has seen it: looked at once a second at most, from a wait that would
 * otherwise wait for it without end. 0: running, or not known.
 */
static uint64_t stopped_ns(void)
{
	static uint64_t since, last;
	uint64_t now = gpu_now_ns();
	char path[40], buf[256], *p;
	ssize_t n;
	int fd;

	if (now - last < 1000000000ull)
		return since ? now - since : 0;
	last = now;
	snprintf(path, sizeof(path), "/proc/%ld/stat", conn.pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = '\0';
	p = strrchr(buf, ')');	/* the name may hold spaces and parentheses */
	if (!p || (p[2] != 'T' && p[2] != 't'))
		since = 0;
	else if (!since)
		since = now;
	return since ? now - since : 0;
}

static uint64_t stop_limit_ns(void)
{
	const char *env = getenv("DBR_GPU_OWNER_STOP_S");
	long s = env && *env ? atol(env) : OWNER_STOP_S;

	return (uint64_t)(s > 0 ? s : OWNER_STOP_S) * 1000000000ull;
}

/* An owner stopped past the limit fails the wait: -ETIMEDOUT, and why. */
static int owner_stopped(char *why, size_t len)
{
	uint64_t ns = stopped_ns();

	if (ns < stop_limit_ns())
		return 0;
	if (why)
		snprintf(why, len, "the GPU owner (pid %ld) has been stopped for %llu s (SIGSTOP or a debugger) and holds this job's GPU work: kill -CONT it sooner, or run the jobs with thread=1",
			 conn.pid, (unsigned long long)(ns / 1000000000ull));
	return -ETIMEDOUT;
}

static void why_gone(char *why, size_t len)
{
	snprintf(why, len, "the GPU owner process (pid %ld) of %s %d went away (killed, or it failed: DBR_GPU_OWNER_STDERR=1 shows its words): this job's GPU work is lost",
		 conn.pid, conn.real ? conn.real->name : "?", conn.dev_id);
}

/* The owner stopped on a call that had no reply: its error, once seen. */
static int async_error(struct gpu_buf *b)
{
	int err = conn.ctl ? __atomic_load_n(&conn.ctl->err, __ATOMIC_ACQUIRE) : 0;

	if (err && b)
		snprintf(b->why, sizeof(b->why), "%s", conn.ctl->why);
	return err;
}

static int send_req(const struct gpu_own_req *q, const void *payload,
		    size_t plen, int fd)
{
	struct iovec iov[2] = { { (void *)q, sizeof(*q) },
				{ (void *)payload, plen } };

	return gpu_own_send(conn.sock, iov, plen ? 2 : 1, fd) < 0 ? -EPIPE : 0;
}

/*
 * Wait for the reply: without end while the owner runs (a page-lock of many
 * GiB takes seconds), but not past the limit while it is stopped.
 */
static int wait_reply(char *why, size_t len)
{
	struct pollfd pfd = { .fd = conn.sock, .events = POLLIN };
	int n, ret;

	for (;;) {
		n = poll(&pfd, 1, 1000);
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return -EPIPE;
		ret = owner_stopped(why, len);
		if (ret)
			return ret;
	}
}

static int recv_rep(struct gpu_own_rep *p, int *fd, char *why, size_t len)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { p, sizeof(*p) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
			    .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm;
	ssize_t n;
	int got;

	n = wait_reply(why, len);
	if (n < 0)
		return (int)n;
	do
		n = recvmsg(conn.sock, &m, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	cm = n >= 0 ? CMSG_FIRSTHDR(&m) : NULL;
	if (cm && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
		memcpy(&got, CMSG_DATA(cm), sizeof(int));
		if (fd && n == (ssize_t)sizeof(*p))
			*fd = got;
		else
			close(got);
	}
	return n == (ssize_t)sizeof(*p) ? 0 : -EPIPE;
}

/*
 * A call and its reply (p NULL: a call without one). The owner's words go
 * to b->why where it has them.
 */
static int call(struct gpu_buf *b, struct gpu_own_req *q, const void *payload,
		size_t plen, int fd, struct gpu_own_rep *p, int *fd_out)
{
	int ret;

	ret = async_error(b);
	if (ret)
		return ret;
	pthread_mutex_lock(&conn.lock);
	ret = send_req(q, payload, plen, fd);
	if (!ret && p)
		ret = recv_rep(p, fd_out, b ? b->why : NULL, b ? sizeof(b->why) : 0);
	pthread_mutex_unlock(&conn.lock);
	if (ret == -ETIMEDOUT)
		return ret;
	if (ret < 0) {
		if (b)
			why_gone(b->why, sizeof(b->why));
		return ret;
	}
	if (p && p->ret < 0 && b)
		snprintf(b->why, sizeof(b->why), "%s", p->why);
	return p ? p->ret : 0;
}

#define REQ(code, ...)	((struct gpu_own_req){ .op = (code), .a = { __VA_ARGS__ } })

/* A call with nothing but its arguments and a plain answer. */
static int call0(struct gpu_buf *b, struct gpu_own_req q)
{
	struct gpu_own_rep p;

	return call(b, &q, NULL, 0, -1, &p, NULL);
}

/* A call without a reply. */
static void post0(struct gpu_own_req q)
{
	call(NULL, &q, NULL, 0, -1, NULL, NULL);
}

int gpu_remote_owner_cpu(uint64_t *ns)
{
	struct gpu_own_rep p;
	int ret;

	if (conn.sock < 0)
		return -ENOTCONN;
	ret = call(NULL, &(struct gpu_own_req){ .op = GPU_OWN_CPU }, NULL, 0,
		   -1, &p, NULL);
	if (ret < 0)
		return ret;
	*ns = p.v[0] + p.v[1];
	return 0;
}

/* ---- host memory shared with the owner -------------------------------- */

static int share(struct gpu_buf *b, enum gpu_own_op op, void *host,
		 size_t len, struct gpu_own_rep *p)
{
	struct gpu_own_req q = REQ(op, (uint64_t)(uintptr_t)host, len);
	int fd = gpu_host_pages_fd(host), lent = gpu_host_pages_lent_fd(host);

	/* an io_uring's rings: the owner takes the ring's fd by its number */
	if (lent >= 0 && op == GPU_OWN_MAP_HOST) {
		q.a[2] = (uint64_t)lent + 1;
		return call(b, &q, NULL, 0, -1, p, NULL);
	}
	if (fd < 0) {
		snprintf(b->why, sizeof(b->why), "host memory at %p is not shared with the GPU owner",
			 host);
		return -EOPNOTSUPP;
	}
	return call(b, &q, NULL, 0, fd, p, NULL);
}

/* ---- the runtime's calls ---------------------------------------------- */

static int r_probe(char *why, size_t len)
{
	return conn.real->probe(why, len);
}

static int r_open(struct gpu_buf *b, struct gpu_dev *d)
{
	(void)d;
	return call0(b, REQ(GPU_OWN_OPEN, b->size));
}

static void r_close(struct gpu_dev *d)
{
	(void)d;
	post0(REQ(GPU_OWN_CLOSE));
}

static int r_mem_alloc(struct gpu_buf *b, struct gpu_dev *d)
{
	struct gpu_own_req q = REQ(GPU_OWN_MEM_ALLOC, b->size);
	struct gpu_own_rep p;
	int ret;

	ret = call(b, &q, NULL, 0, -1, &p, NULL);
	if (ret < 0)
		return ret;
	d->dptr = p.v[0];
	d->dsize = p.v[1];
	return 0;
}

static void r_mem_free(struct gpu_dev *d)
{
	(void)d;
	post0(REQ(GPU_OWN_MEM_FREE));
}

static int r_host_register(struct gpu_buf *b, void *host, size_t len)
{
	struct gpu_own_rep p;

	return share(b, GPU_OWN_HOST_REGISTER, host, len, &p);
}

static void r_unshare(enum gpu_own_op op, void *host)
{
	post0(REQ(op, (uint64_t)(uintptr_t)host));
}

static void r_host_unregister(void *host)
{
	r_unshare(GPU_OWN_HOST_UNREGISTER, host);
}

static int r_map_host(struct gpu_buf *b, void *host, size_t len,
		      uint64_t *dev_addr)
{
	struct gpu_own_rep p;
	int ret = share(b, GPU_OWN_MAP_HOST, host, len, &p);

	*dev_addr = ret < 0 ? 0 : p.v[0];
	return ret;
}

static void r_unmap_host(void *host)
{
	r_unshare(GPU_OWN_UNMAP_HOST, host);
}

static int r_host_dev_addr(struct gpu_buf *b, void *host, uint64_t *dev_addr)
{
	struct gpu_own_req q = REQ(GPU_OWN_HOST_DEV_ADDR, (uint64_t)(uintptr_t)host);
	struct gpu_own_rep p;
	int ret = call(b, &q, NULL, 0, -1, &p, NULL);

	*dev_addr = ret < 0 ? 0 : p.v[0];
	return ret;
}

static int r_export(struct gpu_buf *b, struct gpu_dev *d, int *fd)
{
	struct gpu_own_req q = REQ(GPU_OWN_EXPORT);
	struct gpu_own_rep p;
	int ret;

	*fd = -1;
	ret = call(b, &q, NULL, 0, -1, &p, fd);
	d->rt_fd = false;	/* our copy of the owner's: close(2) */
	return ret < 0 ? ret : (*fd < 0 ? -EBADF : 0);
}

static int r_export_range(struct gpu_buf *b, struct gpu_dev *d, size_t off,
			  size_t len, int *fd)
{
	struct gpu_own_req q = REQ(GPU_OWN_EXPORT_RANGE, off, len);
	struct gpu_own_rep p;
	int ret;

	(void)d;
	*fd = -1;
	ret = call(b, &q, NULL, 0, -1, &p, fd);
	return ret < 0 ? ret : (*fd < 0 ? -EBADF : 0);
}

static void r_close_dmabuf(int fd)
{
	close(fd);
}

static void r_describe(struct gpu_buf *b, struct gpu_dev *d)
{
	struct gpu_own_req q = REQ(GPU_OWN_DESCRIBE);
	struct gpu_own_rep p;

	(void)d;
	if (call(b, &q, NULL, 0, -1, &p, NULL) == 0)
		snprintf(b->export_kind, sizeof(b->export_kind), "%.*s",
			 (int)sizeof(b->export_kind) - 1, p.why);
}

/* The owner's thread for this process keeps the context current. */
static int r_enter(struct gpu_buf *b)
{
	return async_error(b);
}

static int r_create(struct gpu_buf *b, enum gpu_own_op op, void **h)
{
	struct gpu_own_req q = REQ(op);
	struct gpu_own_rep p;
	int ret = call(b, &q, NULL, 0, -1, &p, NULL);

	*h = ret < 0 ? NULL : (void *)(uintptr_t)p.v[0];
	return ret;
}

static int r_stream_create(struct gpu_buf *b, void **stream)
{
	return r_create(b, GPU_OWN_STREAM_CREATE, stream);
}

static int r_event_create(struct gpu_buf *b, void **event)
{
	return r_create(b, GPU_OWN_EVENT_CREATE, event);
}

static int r_stream_sync(struct gpu_buf *b, void *stream)
{
	return call0(b, REQ(GPU_OWN_STREAM_SYNC, (uint64_t)(uintptr_t)stream));
}

static void r_stream_destroy(void *stream)
{
	post0(REQ(GPU_OWN_STREAM_DESTROY, (uint64_t)(uintptr_t)stream));
}

static void r_event_destroy(void *event)
{
	post0(REQ(GPU_OWN_EVENT_DESTROY, (uint64_t)(uintptr_t)event));
}

static int r_event_record(struct gpu_buf *b, void *event, void *stream)
{
	struct gpu_own_req q = REQ(GPU_OWN_EVENT_RECORD, (uint64_t)(uintptr_t)event,
				   (uint64_t)(uintptr_t)stream);

	return call(b, &q, NULL, 0, -1, NULL, NULL);
}

static int r_event_query(struct gpu_buf *b, void *event)
{
	return call0(b, REQ(GPU_OWN_EVENT_QUERY, (uint64_t)(uintptr_t)event));
}

static int r_event_sync(struct gpu_buf *b, void *event)
{
	return call0(b, REQ(GPU_OWN_EVENT_SYNC, (uint64_t)(uintptr_t)event));
}

static int r_copy(struct gpu_buf *b, void *stream, enum gpu_copy_dir dir,
		  uint64_t dst, uint64_t src, size_t len)
{
	struct gpu_own_req q = REQ(GPU_OWN_COPY, (uint64_t)(uintptr_t)stream,
				   dir, dst, src, len);

	return call(b, &q, NULL, 0, -1, NULL, NULL);
}

static int r_copy_batch(struct gpu_buf *b, void *stream, uint64_t *dst,
			uint64_t *src, size_t *len, size_t n, size_t *done)
{
	struct gpu_own_copy c[GPU_OWN_BATCH];
	struct gpu_own_req q = REQ(GPU_OWN_COPY_BATCH, (uint64_t)(uintptr_t)stream);
	size_t i;
	int ret;

	*done = 0;
	if (n > GPU_OWN_BATCH)
		return -EINVAL;
	for (i = 0; i < n; i++)
		c[i] = (struct gpu_own_copy){ dst[i], src[i], len[i] };
	q.n = (uint32_t)n;
	ret = call(b, &q, c, n * sizeof(c[0]), -1, NULL, NULL);
	*done = ret < 0 ? 0 : n;
	return ret;
}

/*
 * A stream's first fence write waits for its answer: a runtime without the
 * call (or whose call fails) has the stream fence with events instead. The
 * rest go without one, and a failure stops the owner's work for us.
 */
static int r_write_value(struct gpu_buf *b, void *stream, uint64_t dev_addr,
			 uint64_t value)
{
	struct gpu_own_req q = REQ(GPU_OWN_WRITE_VALUE, (uint64_t)(uintptr_t)stream,
				   dev_addr, value, !conn.wrote);
	struct gpu_own_rep p;
	int ret;

	if (conn.wrote)
		return call(b, &q, NULL, 0, -1, NULL, NULL);
	ret = call(b, &q, NULL, 0, -1, &p, NULL);
	conn.wrote = !ret;
	return ret;
}

static int r_kernel_load(struct gpu_buf *b, const char *ptx, const char *entry,
			 void **mod)
{
	struct gpu_own_req q = REQ(GPU_OWN_KERNEL_LOAD);
	size_t ne = strlen(entry) + 1, np = strlen(ptx) + 1;
	struct gpu_own_rep p;
	char *msg;
	int ret;

	*mod = NULL;
	if (ne + np > GPU_OWN_MSG_MAX - sizeof(q)) {
		snprintf(b->why, sizeof(b->why), "the %s module's text (%zu bytes) is over what one message to the GPU owner carries",
			 entry, np);
		return -E2BIG;
	}
	msg = malloc(ne + np);
	if (!msg)
		return -ENOMEM;
	memcpy(msg, entry, ne);
	memcpy(msg + ne, ptx, np);
	ret = call(b, &q, msg, ne + np, -1, &p, NULL);
	free(msg);
	if (!ret)
		*mod = (void *)(uintptr_t)p.v[0];
	return ret;
}

static void r_kernel_unload(void *mod)
{
	post0(REQ(GPU_OWN_KERNEL_UNLOAD, (uint64_t)(uintptr_t)mod));
}

static int r_kernel_launch(struct gpu_buf *b, void *stream, void *mod,
			   const struct gpu_klaunch *l)
{
	struct gpu_own_req q = REQ(GPU_OWN_KERNEL_LAUNCH, (uint64_t)(uintptr_t)stream,
				   (uint64_t)(uintptr_t)mod);

	q.n = 1;
	return call(b, &q, l, sizeof(*l), -1, NULL, NULL);
}

static int r_kernel_start(struct gpu_buf *b, void *stream, void *mod,
			  uint64_t ring, uint64_t host, uint64_t dev)
{
	struct gpu_own_req q = REQ(GPU_OWN_KERNEL_START, (uint64_t)(uintptr_t)stream,
				   (uint64_t)(uintptr_t)mod, ring, host, dev);
	struct gpu_own_rep p;

	return call(b, &q, NULL, 0, -1, &p, NULL);
}

/* The owner is there, and has not stopped on a failed call. */
static int r_alive(struct gpu_buf *b)
{
	struct pollfd pfd = { .fd = conn.sock, .events = POLLRDHUP };
	int ret = async_error(b);

	if (ret)
		return ret;
	if (poll(&pfd, 1, 0) > 0 && (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR))) {
		why_gone(b->why, sizeof(b->why));
		return -EPIPE;
	}
	return owner_stopped(b->why, sizeof(b->why));
}

static const struct gpu_runtime remote_rt = {
	.probe		= r_probe,
	.open		= r_open,
	.close		= r_close,
	.mem_alloc	= r_mem_alloc,
	.mem_alloc_name	= "the GPU owner's allocation",
	.mem_free	= r_mem_free,
	.host_register	= r_host_register,
	.host_unregister = r_host_unregister,
	.export		= r_export,
	.close_dmabuf	= r_close_dmabuf,
	.export_range	= r_export_range,
	.describe	= r_describe,
	.enter		= r_enter,
	.stream_create	= r_stream_create,
	.stream_sync	= r_stream_sync,
	.stream_destroy	= r_stream_destroy,
	.event_create	= r_event_create,
	.event_destroy	= r_event_destroy,
	.event_record	= r_event_record,
	.event_query	= r_event_query,
	.event_sync	= r_event_sync,
	.copy		= r_copy,
	.copy_batch	= r_copy_batch,
	.map_host	= r_map_host,
	.unmap_host	= r_unmap_host,
	.write_value	= r_write_value,
	.host_dev_addr	= r_host_dev_addr,
	.kernel_load	= r_kernel_load,
	.kernel_unload	= r_kernel_unload,
	.kernel_launch	= r_kernel_launch,
	.kernel_start	= r_kernel_start,
	.alive		= r_alive,
};

/* ---- the connection and the owner's start ------------------------------- */

/* remote_rt, without the optional calls the real runtime does not have. */
static void rt_like(const struct gpu_runtime *real)
{
	conn_rt = remote_rt;
#define LIKE(f)	do { if (!real->f) conn_rt.f = NULL; } while (0)
	LIKE(export_range);
	LIKE(describe);
	LIKE(map_host);
	LIKE(unmap_host);
	LIKE(write_value);
	LIKE(host_dev_addr);
	LIKE(kernel_load);
	LIKE(kernel_unload);
	LIKE(kernel_launch);
	LIKE(kernel_start);
#undef LIKE
}

/* The owner program: $DBR_GPU_OWNER, beside the engine, or where installed. */
static int owner_path(char *buf, size_t len)
{
	static const char *const beside[] = { "", "/.." };
	const char *env = getenv("DBR_GPU_OWNER");
	Dl_info info;
	unsigned int i;
	char *slash;

	if (env && *env)
		return snprintf(buf, len, "%s", env) < (int)len ? 0 : -ENAMETOOLONG;
	if (dladdr((void *)owner_path, &info) && info.dli_fname &&
	    (slash = strrchr(info.dli_fname, '/'))) {
		for (i = 0; i < sizeof(beside) / sizeof(beside[0]); i++) {
			snprintf(buf, len, "%.*s%s/%s", (int)(slash - info.dli_fname),
				 info.dli_fname, beside[i], GPU_OWN_PROGRAM);
			if (!access(buf, X_OK))
				return 0;
		}
	}
	snprintf(buf, len, "%s/%s", DBR_OWNER_DIR, GPU_OWN_PROGRAM);
	return access(buf, X_OK) ? -errno : 0;
}

/* In the child: a session of its own, no fds but 0-2, then the program. */
static void exec_owner(const char *path, char *const argv[], int err_fd)
{
	sigset_t none;
	int fd, e;

	setsid();
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	/* a fio run with stdio closed gave the pipe fd 0-2: move it above, or
	 * /dev/null takes its place and a failed exec reads as a start */
	if (err_fd < 3 && (err_fd = fcntl(err_fd, F_DUPFD_CLOEXEC, 3)) < 0)
		_exit(127);
	fd = open("/dev/null", O_RDWR);
	if (fd >= 0) {
		dup2(fd, 0);
		dup2(fd, 1);
		if (!getenv("DBR_GPU_OWNER_STDERR"))
			dup2(fd, 2);
	}
	/* fio's files and rings are not its: keep only the pipe, as fd 3 */
	if (dup2(err_fd, 3) < 0 || fcntl(3, F_SETFD, FD_CLOEXEC) < 0)
		_exit(127);
	err_fd = 3;
	if (syscall(SYS_close_range, 4u, ~0u, 0u) < 0)
		for (fd = 4; fd < 65536; fd++)
			close(fd);
	execv(path, argv);
	e = errno;
	if (write(err_fd, &e, sizeof(e)) < 0)
		_exit(127);
	_exit(127);
}

/* Start an owner, detached from this process: 0 once it runs (or -errno). */
static int spawn_owner(const char *path, const char *prov, int dev_id,
		       long run)
{
	char dev[16], runs[24];
	char *const argv[] = { (char *)GPU_OWN_PROGRAM, (char *)prov, dev, runs, NULL };
	int pfd[2], e = 0, status;
	ssize_t n;
	pid_t pid;

	snprintf(dev, sizeof(dev), "%d", dev_id);
	snprintf(runs, sizeof(runs), "%ld", run);
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid == 0) {
		close(pfd[0]);
		if (fork() == 0)
			exec_owner(path, argv, pfd[1]);
		_exit(0);
	}
	close(pfd[1]);
	if (pid > 0)
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
	else
		e = errno;
	/* the pipe closes at the program's start, or carries exec's errno */
	if (!e) {
		while ((n = read(pfd[0], &e, sizeof(e))) < 0 && errno == EINTR)
			;
		if (n != sizeof(e))
			e = 0;
	}
	close(pfd[0]);
	return -e;
}

static int try_connect(const char *name)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	size_t n = strlen(name);
	int fd, ret;

	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	memcpy(a.sun_path + 1, name, n);	/* abstract: sun_path[0] is NUL */
	ret = connect(fd, (struct sockaddr *)&a,
		      (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n));
	if (!ret)
		return fd;
	ret = -errno;
	close(fd);
	return ret;
}

/* Connect, starting the owner where none takes the call yet. */
static int reach_owner(const char *name, const char *prov, int dev_id,
		       long run, char *why, size_t len)
{
	char path[4096];
	uint64_t t0;
	int fd, ret;

	fd = try_connect(name);
	if (fd >= 0)
		return fd;
	ret = owner_path(path, sizeof(path));
	if (ret < 0) {
		snprintf(why, len, "the %s program is not beside the engine nor in %s (set DBR_GPU_OWNER to its path)",
			 GPU_OWN_PROGRAM, DBR_OWNER_DIR);
		return ret;
	}
	ret = spawn_owner(path, prov, dev_id, run);
	if (ret < 0) {
		snprintf(why, len, "%s could not start: %s", path, strerror(-ret));
		return ret;
	}
	for (t0 = gpu_now_ns(); gpu_now_ns() - t0 < OWNER_START_NS; gpu_nap(5000000)) {
		fd = try_connect(name);
		if (fd >= 0)
			return fd;
	}
	snprintf(why, len, "%s started but took no connection in %llu s",
		 path, OWNER_START_NS / 1000000000ull);
	return -ETIMEDOUT;
}

/* The control page: this process's memfd page the owner writes its errors to. */
static int ctl_page(int *fd)
{
	void *p;

	*fd = memfd_create("dmabuf_uring-owner-ctl", MFD_CLOEXEC);
	if (*fd < 0)
		return -errno;
	if (ftruncate(*fd, sizeof(struct gpu_own_ctl)) < 0)
		goto err;
	p = mmap(NULL, sizeof(struct gpu_own_ctl), PROT_READ | PROT_WRITE,
		 MAP_SHARED, *fd, 0);
	if (p == MAP_FAILED)
		goto err;
	conn.ctl = p;
	return 0;
err:
	close(*fd);
	return -errno;
}

/*
 * An abstract socket's name has no permissions: whoever binds it first
 * answers. Only an owner of this user (or root's) gets this process's memory.
 */
static int peer_is_ours(char *why, size_t len)
{
	struct ucred cr;
	socklen_t n = sizeof(cr);

	if (getsockopt(conn.sock, SOL_SOCKET, SO_PEERCRED, &cr, &n) < 0)
		return -errno;
	if (cr.uid == getuid() || cr.uid == 0)
		return 0;
	snprintf(why, len, "the GPU owner's socket name is held by pid %d of user %u, not by this user's dbr-gpu-owner: end that process, or set gpu_owner=0",
		 (int)cr.pid, (unsigned int)cr.uid);
	return -EPERM;
}

static int hello(char *why, size_t len)
{
	struct gpu_own_req q = REQ(GPU_OWN_HELLO, GPU_OWN_PROTO, conn.dev_id);
	struct gpu_own_rep p;
	int fd, ret;

	ret = peer_is_ours(why, len);
	if (ret < 0)
		return ret;
	ret = ctl_page(&fd);
	if (ret < 0)
		return ret;
	ret = send_req(&q, NULL, 0, fd);
	if (!ret)
		ret = recv_rep(&p, NULL, NULL, 0);
	close(fd);
	if (!ret && p.ret < 0) {
		snprintf(why, len, "%s", p.why);
		return p.ret;
	}
	if (ret < 0) {
		snprintf(why, len, "the GPU owner closed the connection at its start (it was leaving as this job process came, three times running)");
		return -ECONNRESET;
	}
	conn.pid = conn.ctl->pid;
	/* where Yama restricts ptrace to descendants, let the owner take this
	 * process's ring fd (pidfd_getfd); EINVAL without Yama: nothing to do */
	prctl(PR_SET_PTRACER, (unsigned long)conn.pid, 0, 0, 0);
	return ret;
}

void gpu_remote_disconnect(void)
{
	if (conn.sock >= 0)
		close(conn.sock);
	if (conn.ctl)
		munmap(conn.ctl, sizeof(*conn.ctl));
	conn.sock = -1;
	conn.ctl = NULL;
	gpu_host_shared = false;
}

int gpu_remote_connect(const struct gpu_provider *real, int dev_id, long run,
		       const struct gpu_provider **remote, char *why,
		       size_t len)
{
	char name[100];
	int ret, tries;

	if (conn.sock >= 0) {
		if (conn.real != real || conn.dev_id != dev_id) {
			snprintf(why, len, "this process already uses the owner of %s %d",
				 conn.real->name, conn.dev_id);
			return -EBUSY;
		}
		*remote = &conn.prov;
		return 0;
	}
	gpu_owner_name(name, sizeof(name), run, real->name, dev_id);
	/*
	 * An owner leaves a second after its last job process (a stonewall
	 * group's end): one that was leaving as this process connected closes
	 * the connection unanswered. Then another is started, as by the first.
	 */
	for (tries = 0; tries < 3; tries++) {
		ret = reach_owner(name, real->name, dev_id, run, why, len);
		if (ret < 0)
			return ret;
		conn.sock = ret;
		conn.real = real;
		conn.dev_id = dev_id;
		ret = hello(why, len);
		if (ret != -ECONNRESET)
			break;
		gpu_remote_disconnect();
	}
	if (ret < 0) {
		gpu_remote_disconnect();
		return ret;
	}
	rt_like(real->rt);
	conn.prov = *real;
	conn.prov.rt = &conn_rt;
	gpu_host_shared = true;
	*remote = &conn.prov;
	return 0;
}
