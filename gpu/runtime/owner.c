// SPDX-License-Identifier: MIT
/*
 * The GPU owner's side of one job process (owner.h): its calls, run over
 * the real runtime in the owner's context, on a thread of their own.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include "device.h"
#include "kernels.h"
#include "owner.h"
#include "runtime.h"

/* Host memory the job process shared: its address there, and here. */
struct own_region {
	uint64_t client;
	void *mine;
	size_t len;
	bool mapped;		/* map_host (else host_register) */
};

#define OWN_REGIONS	16u

/*
 * Handles the runtime gave one job process, sorted, to be found by each call
 * that names one: a copy stream has an event per fence slot, about its
 * iodepth, so there may be thousands.
 */
struct own_set {
	uint64_t *h;
	unsigned int n, cap;
};

/* What the job process holds here, so that its leaving releases it all. */
struct own_conn {
	int sock;
	const struct gpu_runtime *rt;
	struct gpu_buf b;
	struct gpu_dev d;
	bool opened, allocated;
	struct gpu_own_ctl *ctl;
	struct own_region reg[OWN_REGIONS];
	struct own_set streams, events, mods;
	int export_fd;		/* a dma-buf the runtime closes, or -1 */
	int failed;		/* a call without a reply failed: skip the rest */
	pid_t peer;		/* the job process (SO_PEERCRED) */
	char *buf;		/* one message */
};

int gpu_owner_name(char *buf, size_t len, long run, const char *prov,
		   int dev_id)
{
	return snprintf(buf, len, "dmabuf_uring.owner.%ld.%s.%d", run, prov,
			dev_id);
}

/* ---- handles: what the runtime gave, kept to be released at the end ---- */

/* Where h is in s, or would go. */
static unsigned int set_pos(const struct own_set *s, uint64_t h)
{
	unsigned int lo = 0, hi = s->n, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (s->h[mid] < h)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static bool set_add(struct own_set *s, void *p)
{
	uint64_t h = (uint64_t)(uintptr_t)p, *grown;
	unsigned int i;

	if (s->n == s->cap) {
		grown = realloc(s->h, (s->cap ? 2 * s->cap : 16) * sizeof(*s->h));
		if (!grown)
			return false;
		s->h = grown;
		s->cap = s->cap ? 2 * s->cap : 16;
	}
	i = set_pos(s, h);
	memmove(&s->h[i + 1], &s->h[i], (s->n - i) * sizeof(*s->h));
	s->h[i] = h;
	s->n++;
	return true;
}

/* Was h handed out here, and is it still held? */
static bool set_held(const struct own_set *s, uint64_t h)
{
	unsigned int i = set_pos(s, h);

	return h && i < s->n && s->h[i] == h;
}

/* Was h handed out here (and is still held)? Then it is dropped. */
static bool set_take(struct own_set *s, uint64_t h)
{
	unsigned int i = set_pos(s, h);

	if (!h || i >= s->n || s->h[i] != h)
		return false;
	memmove(&s->h[i], &s->h[i + 1], (s->n - i - 1) * sizeof(*s->h));
	s->n--;
	return true;
}

/* ---- shared host memory ---------------------------------------------- */

static struct own_region *region_of(struct own_conn *c, uint64_t client)
{
	unsigned int i;

	for (i = 0; i < OWN_REGIONS; i++)
		if (c->reg[i].mine && c->reg[i].client == client)
			return &c->reg[i];
	return NULL;
}

/* Map the job process's memfd fd (len bytes at its address client). */
static struct own_region *region_map(struct own_conn *c, int fd,
				     uint64_t client, size_t len)
{
	struct own_region *r;
	struct stat st;
	unsigned int i;
	void *p;
	int e;

	for (i = 0, r = NULL; i < OWN_REGIONS && !r; i++)
		if (!c->reg[i].mine)
			r = &c->reg[i];
	if (!r || fd < 0) {
		snprintf(c->b.why, sizeof(c->b.why), "%s",
			 fd < 0 ? "no memory handed over with the call" :
				  "too many shared regions");
		errno = fd < 0 ? EBADF : ENOMEM;
		return NULL;
	}
	/* past a memfd's end a page would fault here, in every job's owner */
	if (fstat(fd, &st)) {
		e = errno;
		snprintf(c->b.why, sizeof(c->b.why), "fstat of the job process's memory handed over: %s",
			 strerror(e));
		errno = e;	/* do_host's answer */
		return NULL;
	}
	if (S_ISREG(st.st_mode) && (uint64_t)st.st_size < len) {
		snprintf(c->b.why, sizeof(c->b.why), "the job process's memory handed over holds %lld bytes, not the %zu it names",
			 (long long)st.st_size, len);
		errno = EINVAL;
		return NULL;
	}
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		snprintf(c->b.why, sizeof(c->b.why), "mmap of the job process's %zu KiB: %s",
			 len >> 10, strerror(errno));
		return NULL;
	}
	*r = (struct own_region){ .client = client, .mine = p, .len = len };
	return r;
}

static void region_unmap(struct own_region *r)
{
	munmap(r->mine, r->len);
	memset(r, 0, sizeof(*r));
}

/*
 * [a, a + len) of the job process's shared memory, as mapped here; 0 where
 * it is not all inside one region (len 0 counts as 1).
 */
static uint64_t client_to_mine(struct own_conn *c, uint64_t a, uint64_t len)
{
	unsigned int i;

	for (i = 0; i < OWN_REGIONS; i++) {
		const struct own_region *r = &c->reg[i];

		if (r->mine && a >= r->client && a - r->client < r->len &&
		    len <= r->len - (a - r->client))
			return (uint64_t)(uintptr_t)r->mine + (a - r->client);
	}
	return 0;
}

/* ---- calls ------------------------------------------------------------ */

/*
 * The job process's fd number nr, taken (pidfd_getfd): an io_uring's fd,
 * which no socket carries. Needs ptrace rights over it (root, or the same
 * user where Yama lets this process: the job process names it with
 * PR_SET_PTRACER). A new fd, or a negative errno with the reason in why.
 */
static int take_fd(struct own_conn *c, int nr)
{
	int pidfd, fd = -1, err = ENOSYS;

#if defined(SYS_pidfd_open) && defined(SYS_pidfd_getfd)
	pidfd = (int)syscall(SYS_pidfd_open, c->peer, 0);
	if (pidfd >= 0) {
		fd = (int)syscall(SYS_pidfd_getfd, pidfd, nr, 0);
		err = errno;
		close(pidfd);
	} else {
		err = errno;
	}
#else
	(void)nr;
#endif
	if (fd >= 0)
		return fd;
	snprintf(c->b.why, sizeof(c->b.why), "the GPU owner cannot take job process %d's io_uring fd (pidfd_getfd: %s): run fio as root, or as the same user without a ptrace restriction",
		 (int)c->peer, strerror(err));
	return -err;
}

static int do_host(struct own_conn *c, const struct gpu_own_req *q, int fd,
		   struct gpu_own_rep *p)
{
	bool map = q->op == GPU_OWN_MAP_HOST;
	struct own_region *r;
	int ret, taken = -1;

	if (map && q->a[2]) {
		taken = take_fd(c, (int)(q->a[2] - 1));
		if (taken < 0)
			return taken;
		fd = taken;
	}
	r = region_map(c, fd, q->a[0], q->a[1]);
	if (taken >= 0)
		close(taken);	/* the mapping keeps what it needs */
	if (!r)
		return -errno;
	r->mapped = map;
	ret = map ? c->rt->map_host(&c->b, r->mine, r->len, &p->v[0]) :
		    c->rt->host_register(&c->b, r->mine, r->len);
	if (ret < 0) {
		region_unmap(r);
		return ret;
	}
	if (!map)
		c->b.host = r->mine;
	p->v[map] = (uint64_t)(uintptr_t)r->mine;
	return 0;
}

static void region_release(struct own_conn *c, struct own_region *r)
{
	if (r->mapped)
		c->rt->unmap_host(r->mine);
	else
		c->rt->host_unregister(r->mine);
	if (c->b.host == r->mine)
		c->b.host = NULL;
	region_unmap(r);
}

static int do_unhost(struct own_conn *c, const struct gpu_own_req *q)
{
	struct own_region *r = region_of(c, q->a[0]);

	if (r)
		region_release(c, r);
	return 0;
}

static int do_open(struct own_conn *c, const struct gpu_own_req *q)
{
	int n, ret;

	if (c->opened)
		return -EBUSY;
	c->b.size = q->a[0];
	n = c->rt->probe(c->b.why, sizeof(c->b.why));
	if (n < 0)
		return n;
	if (c->b.dev_id >= n) {
		snprintf(c->b.why, sizeof(c->b.why), "device %d does not exist (%d visible)",
			 c->b.dev_id, n);
		return -ENODEV;
	}
	ret = c->rt->open ? c->rt->open(&c->b, &c->d) : 0;
	if (ret < 0)
		return ret;
	c->opened = true;
	return c->rt->enter(&c->b);
}

static int do_export(struct own_conn *c, const struct gpu_own_req *q,
		     int *fd_out)
{
	int fd = -1, ret;

	if (q->op == GPU_OWN_EXPORT_RANGE) {
		if (!c->rt->export_range)
			return -EOPNOTSUPP;
		ret = c->rt->export_range(&c->b, &c->d, q->a[0], q->a[1], &fd);
		*fd_out = fd;
		return ret;
	}
	if (c->export_fd >= 0)
		return -EBUSY;
	ret = c->rt->export(&c->b, &c->d, &fd);
	if (ret < 0)
		return ret;
	*fd_out = fd;
	/* the runtime closes its own: the job process gets a copy */
	if (c->d.rt_fd) {
		c->export_fd = fd;
		*fd_out = dup(fd);
	}
	return *fd_out < 0 ? -errno : 0;
}

static int do_create(struct own_conn *c, const struct gpu_own_req *q,
		     struct gpu_own_rep *p)
{
	bool stream = q->op == GPU_OWN_STREAM_CREATE;
	void *h = NULL;
	int ret;

	ret = stream ? c->rt->stream_create(&c->b, &h) :
		       c->rt->event_create(&c->b, &h);
	if (ret < 0)
		return ret;
	if (!set_add(stream ? &c->streams : &c->events, h)) {
		if (stream)
			c->rt->stream_destroy(h);
		else
			c->rt->event_destroy(h);
		snprintf(c->b.why, sizeof(c->b.why), "no memory for one more stream or event");
		return -ENOMEM;
	}
	p->v[0] = (uint64_t)(uintptr_t)h;
	return 0;
}

/*
 * Module texts, one copy of each for the owner's life: a runtime keeps one
 * module per device and text, found by the text's address (cuda.c), so every
 * job process's load of the same text must hand it the same address.
 */
static struct own_text {
	struct own_text *next;
	char text[];
} *texts;
static pthread_mutex_t texts_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *text_of(const char *ptx)
{
	struct own_text *t;
	size_t n = strlen(ptx) + 1;

	pthread_mutex_lock(&texts_lock);
	for (t = texts; t && strcmp(t->text, ptx); t = t->next)
		;
	if (!t) {
		t = malloc(sizeof(*t) + n);
		if (t) {
			memcpy(t->text, ptx, n);
			t->next = texts;
			texts = t;
		}
	}
	pthread_mutex_unlock(&texts_lock);
	return t ? t->text : NULL;
}

/* payload: the entry's name, then the module's PTX text, each NUL-ended */
static int do_load(struct own_conn *c, const char *payload, size_t plen,
		   struct gpu_own_rep *p)
{
	const char *entry = payload, *ptx, *end = payload + plen;
	void *mod = NULL;
	int ret;

	ptx = memchr(entry, 0, plen);
	if (!ptx || ++ptx >= end || !memchr(ptx, 0, end - ptx))
		return -EINVAL;
	ptx = text_of(ptx);
	if (!ptx)
		return -ENOMEM;
	ret = c->rt->kernel_load(&c->b, ptx, entry, &mod);
	if (ret < 0)
		return ret;
	if (!set_add(&c->mods, mod)) {
		c->rt->kernel_unload(mod);
		return -ENOMEM;
	}
	p->v[0] = (uint64_t)(uintptr_t)mod;
	return 0;
}

/*
 * [a, a + len) inside this job process's device allocation: the copy's
 * device side. In the one context the owner shares, past its end would be
 * another job process's memory.
 */
static bool is_dev(const struct own_conn *c, uint64_t a, uint64_t len)
{
	return c->allocated && a >= c->d.dptr && a - c->d.dptr < c->d.dsize &&
	       len <= c->d.dsize - (a - c->d.dptr);
}

/*
 * A batched copy's direction, and its host side as mapped here: the side in
 * the device allocation is the device's, the other must be in the shared
 * host memory. Both ways at once (a host address that is also a device
 * address) cannot be told.
 */
static int dir_of(struct own_conn *c, uint64_t *dst, uint64_t *src,
		  uint64_t len, bool *h2d)
{
	uint64_t to = is_dev(c, *dst, len) ? client_to_mine(c, *src, len) : 0,
		 from = is_dev(c, *src, len) ? client_to_mine(c, *dst, len) : 0;

	*h2d = to;
	if (!to != !from) {
		*(to ? src : dst) = to ? to : from;
		return 0;
	}
	snprintf(c->b.why, sizeof(c->b.why), "a copy of %llu bytes from 0x%llx to 0x%llx is neither inside the shared host memory and the device allocation, nor only one way",
		 (unsigned long long)len, (unsigned long long)*src,
		 (unsigned long long)*dst);
	return -EFAULT;
}

/* A copy's host side (the job process's address) as mapped here. */
static int copy_addrs(struct own_conn *c, uint64_t *dst, uint64_t *src,
		      uint64_t len, bool h2d)
{
	uint64_t *host = h2d ? src : dst, mine = client_to_mine(c, *host, len);

	if (!mine || !is_dev(c, h2d ? *dst : *src, len)) {
		snprintf(c->b.why, sizeof(c->b.why), "a copy of %llu bytes at host address 0x%llx and device address 0x%llx is outside the memory the job process shared or its device allocation",
			 (unsigned long long)len, (unsigned long long)*host,
			 (unsigned long long)(h2d ? *dst : *src));
		return -EFAULT;
	}
	*host = mine;
	return 0;
}


static int do_batch(struct own_conn *c, const struct gpu_own_req *q,
		    const struct gpu_own_copy *cp)
{
	uint64_t dst[GPU_OWN_BATCH], src[GPU_OWN_BATCH];
	size_t len[GPU_OWN_BATCH], done = 0;
	bool h2d[GPU_OWN_BATCH];
	unsigned int i;
	int ret;

	if (q->n > GPU_OWN_BATCH)
		return -EINVAL;
	for (i = 0; i < q->n; i++) {
		dst[i] = cp[i].dst;
		src[i] = cp[i].src;
		len[i] = cp[i].len;
		ret = dir_of(c, &dst[i], &src[i], len[i], &h2d[i]);
		if (ret < 0)
			return ret;
	}
	ret = c->rt->copy_batch ?
	      c->rt->copy_batch(&c->b, (void *)(uintptr_t)q->a[0], dst, src,
				len, q->n, &done) : -ENOSYS;
	if (ret != -ENOSYS)
		return ret;
	/* a runtime without the batch call: one call a copy */
	for (i = 0; i < q->n; i++) {
		ret = c->rt->copy(&c->b, (void *)(uintptr_t)q->a[0],
				  h2d[i] ? GPU_H2D : GPU_D2H,
				  dst[i], src[i], len[i]);
		if (ret < 0)
			return ret;
	}
	return 0;
}

static int do_launch(struct own_conn *c, const struct gpu_own_req *q,
		     const struct gpu_klaunch *l, size_t plen)
{
	if (plen < sizeof(*l) || !l->n || l->n > GPU_KCOPY_MAX) {
		snprintf(c->b.why, sizeof(c->b.why), "a copy kernel launch of %u copies (at most %u)",
			 plen < sizeof(*l) ? 0 : l->n, GPU_KCOPY_MAX);
		return -EINVAL;
	}
	return c->rt->kernel_launch(&c->b, (void *)(uintptr_t)q->a[0],
				    (void *)(uintptr_t)q->a[1], l);
}

static int do_copy(struct own_conn *c, const struct gpu_own_req *q)
{
	uint64_t dst = q->a[2], src = q->a[3];
	int ret;

	ret = copy_addrs(c, &dst, &src, q->a[4], q->a[1] == GPU_H2D);
	return ret < 0 ? ret :
	       c->rt->copy(&c->b, (void *)(uintptr_t)q->a[0],
			   (enum gpu_copy_dir)q->a[1], dst, src, q->a[4]);
}

static int do_start(struct own_conn *c, const struct gpu_own_req *q)
{
	return c->rt->kernel_start(&c->b, (void *)(uintptr_t)q->a[0],
				   (void *)(uintptr_t)q->a[1], q->a[2], q->a[3],
				   q->a[4]);
}

/* Calls with no reply: what they do, 0 or the error to say. */
static int do_async(struct own_conn *c, const struct gpu_own_req *q,
		    const void *payload, size_t plen)
{
	void *s = (void *)(uintptr_t)q->a[0];

	switch (q->op) {
	case GPU_OWN_STREAM_DESTROY:
		if (set_take(&c->streams, q->a[0]))
			c->rt->stream_destroy(s);
		return 0;
	case GPU_OWN_EVENT_DESTROY:
		if (set_take(&c->events, q->a[0]))
			c->rt->event_destroy(s);
		return 0;
	case GPU_OWN_KERNEL_UNLOAD:
		if (set_take(&c->mods, q->a[0]))
			c->rt->kernel_unload(s);
		return 0;
	case GPU_OWN_HOST_UNREGISTER:
	case GPU_OWN_UNMAP_HOST:
		return do_unhost(c, q);
	case GPU_OWN_MEM_FREE:
		if (c->allocated)
			c->rt->mem_free(&c->d);
		c->allocated = false;
		c->d.dptr = c->d.dsize = 0;
		c->b.dev_addr = 0;
		return 0;
	}
	if (c->failed)		/* nothing runs after a failed copy or fence */
		return 0;
	switch (q->op) {
	case GPU_OWN_EVENT_RECORD:
		return c->rt->event_record(&c->b, s, (void *)(uintptr_t)q->a[1]);
	case GPU_OWN_COPY:
		return do_copy(c, q);
	case GPU_OWN_COPY_BATCH:
		if (plen < q->n * sizeof(struct gpu_own_copy))
			return -EINVAL;
		return do_batch(c, q, payload);
	case GPU_OWN_WRITE_VALUE:
		return c->rt->write_value(&c->b, (void *)(uintptr_t)q->a[0],
					  q->a[1], q->a[2]);
	case GPU_OWN_KERNEL_LAUNCH:
		return do_launch(c, q, payload, plen);
	}
	return -EINVAL;
}

static uint64_t tv_ns(const struct timeval *tv)
{
	return (uint64_t)tv->tv_sec * 1000000000ull + (uint64_t)tv->tv_usec * 1000ull;
}

/*
 * The CPU this thread spent for its job process: fio's cpu line counts the
 * job process alone, and the calls it sends here are part of its I/O.
 */
static int thread_cpu(struct gpu_own_rep *p)
{
	struct rusage ru;

	if (getrusage(RUSAGE_THREAD, &ru))
		return -errno;
	p->v[0] = tv_ns(&ru.ru_utime);
	p->v[1] = tv_ns(&ru.ru_stime);
	return 0;
}

/* Calls with a reply. */
static int do_call(struct own_conn *c, const struct gpu_own_req *q,
		   const void *payload, size_t plen, int fd,
		   struct gpu_own_rep *p, int *fd_out)
{
	void *h = (void *)(uintptr_t)q->a[0];
	int ret;

	switch (q->op) {
	case GPU_OWN_OPEN:
		return do_open(c, q);
	case GPU_OWN_MEM_ALLOC:
		if (c->allocated)
			return -EBUSY;
		c->b.size = q->a[0];
		ret = c->rt->mem_alloc(&c->b, &c->d);
		if (ret < 0)
			return ret;
		c->allocated = true;
		c->b.dev_addr = c->d.dptr;
		p->v[0] = c->d.dptr;
		p->v[1] = c->d.dsize;
		return 0;
	case GPU_OWN_HOST_REGISTER:
	case GPU_OWN_MAP_HOST:
		return do_host(c, q, fd, p);
	case GPU_OWN_HOST_DEV_ADDR:
		h = (void *)(uintptr_t)client_to_mine(c, q->a[0], 1);
		return h ? c->rt->host_dev_addr(&c->b, h, &p->v[0]) : -EFAULT;
	case GPU_OWN_EXPORT:
	case GPU_OWN_EXPORT_RANGE:
		return do_export(c, q, fd_out);
	case GPU_OWN_DESCRIBE:
		if (c->rt->describe)
			c->rt->describe(&c->b, &c->d);
		snprintf(p->why, sizeof(p->why), "%s", c->b.export_kind);
		return 0;
	case GPU_OWN_STREAM_CREATE:
	case GPU_OWN_EVENT_CREATE:
		return do_create(c, q, p);
	case GPU_OWN_STREAM_SYNC:
		return c->failed ? c->failed : c->rt->stream_sync(&c->b, h);
	case GPU_OWN_EVENT_QUERY:
		return c->failed ? c->failed : c->rt->event_query(&c->b, h);
	case GPU_OWN_EVENT_SYNC:
		return c->failed ? c->failed : c->rt->event_sync(&c->b, h);
	case GPU_OWN_KERNEL_LOAD:
		return do_load(c, payload, plen, p);
	case GPU_OWN_KERNEL_START:
		return c->failed ? c->failed : do_start(c, q);
	case GPU_OWN_WRITE_VALUE:
		return c->failed ? c->failed :
		       c->rt->write_value(&c->b, h, q->a[1], q->a[2]);
	case GPU_OWN_CPU:
		return thread_cpu(p);
	}
	(void)plen;
	return -EINVAL;
}

/* The handle sets a call's a[0] and a[1] must be in (NULL: none). */
static void handles_of(struct own_conn *c, uint32_t op, struct own_set *want[2])
{
	want[0] = want[1] = NULL;
	switch (op) {
	case GPU_OWN_STREAM_SYNC:
	case GPU_OWN_COPY:
	case GPU_OWN_COPY_BATCH:
	case GPU_OWN_WRITE_VALUE:
		want[0] = &c->streams;
		break;
	case GPU_OWN_EVENT_QUERY:
	case GPU_OWN_EVENT_SYNC:
		want[0] = &c->events;
		break;
	case GPU_OWN_EVENT_RECORD:
		want[0] = &c->events;
		want[1] = &c->streams;
		break;
	case GPU_OWN_KERNEL_LAUNCH:
	case GPU_OWN_KERNEL_START:
		want[0] = &c->streams;
		want[1] = &c->mods;
		break;
	}
}

/* Does the runtime have what the call needs? (Optional calls may be NULL.) */
static bool runtime_has(const struct gpu_runtime *rt, uint32_t op)
{
	switch (op) {
	case GPU_OWN_MAP_HOST:
		return rt->map_host && rt->unmap_host;
	case GPU_OWN_HOST_DEV_ADDR:
		return rt->host_dev_addr;
	case GPU_OWN_WRITE_VALUE:
		return rt->write_value;
	case GPU_OWN_KERNEL_LOAD:
		return rt->kernel_load && rt->kernel_unload;
	case GPU_OWN_KERNEL_LAUNCH:
		return rt->kernel_launch;
	case GPU_OWN_KERNEL_START:
		return rt->kernel_start;
	}
	return true;
}

/*
 * What a call names must be this job process's, and the runtime must have
 * the call: a stale handle, or a call the runtime lacks, would crash the
 * owner, and with it every job process's GPU work.
 */
static int check_call(struct own_conn *c, const struct gpu_own_req *q)
{
	struct own_set *want[2];
	int i;

	if (!runtime_has(c->rt, q->op)) {
		snprintf(c->b.why, sizeof(c->b.why), "the GPU owner's runtime has no call for request %u",
			 q->op);
		return -EOPNOTSUPP;
	}
	handles_of(c, q->op, want);
	for (i = 0; i < 2; i++)
		if (want[i] && !set_held(want[i], q->a[i])) {
			snprintf(c->b.why, sizeof(c->b.why), "request %u names a %s this job process does not hold (0x%llx)",
				 q->op, want[i] == &c->streams ? "stream" :
				 want[i] == &c->events ? "event" : "module",
				 (unsigned long long)q->a[i]);
			return -EBADF;
		}
	return 0;
}

/* ---- the connection ---------------------------------------------------- */

static bool has_reply(const struct gpu_own_req *q)
{
	if (q->op == GPU_OWN_WRITE_VALUE)
		return q->a[3];		/* the stream's first: it may fall back */
	switch (q->op) {
	case GPU_OWN_STREAM_DESTROY:
	case GPU_OWN_EVENT_DESTROY:
	case GPU_OWN_EVENT_RECORD:
	case GPU_OWN_COPY:
	case GPU_OWN_COPY_BATCH:
	case GPU_OWN_KERNEL_UNLOAD:
	case GPU_OWN_KERNEL_LAUNCH:
	case GPU_OWN_HOST_UNREGISTER:
	case GPU_OWN_UNMAP_HOST:
	case GPU_OWN_MEM_FREE:
	case GPU_OWN_CLOSE:
		return false;
	}
	return true;
}

/* One message and the fd it carries (-1: none); its length, 0 at the end. */
static ssize_t recv_msg(int sock, char *buf, size_t len, int *fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { buf, len };
	struct msghdr m = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf, .msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *cm;
	ssize_t n;

	*fd = -1;
	do
		n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	cm = n >= 0 ? CMSG_FIRSTHDR(&m) : NULL;
	if (cm && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
		memcpy(fd, CMSG_DATA(cm), sizeof(int));
	if (n <= 0 && *fd >= 0) {	/* an empty message's fd is no call's */
		close(*fd);
		*fd = -1;
	}
	return n < 0 ? 0 : n;
}

ssize_t gpu_own_send(int sock, struct iovec *iov, int n, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct msghdr m = { .msg_iov = iov, .msg_iovlen = (size_t)n };
	struct cmsghdr *cm;
	ssize_t ret;

	if (fd >= 0) {
		m.msg_control = cbuf;
		m.msg_controllen = sizeof(cbuf);
		cm = CMSG_FIRSTHDR(&m);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	}
	do
		ret = sendmsg(sock, &m, MSG_NOSIGNAL);
	while (ret < 0 && errno == EINTR);
	return ret;
}

/* A reply, with fd passed along where it is one. */
static void send_rep(int sock, const struct gpu_own_rep *p, int fd)
{
	struct iovec iov = { (void *)p, sizeof(*p) };

	gpu_own_send(sock, &iov, 1, fd);
}

/* A call without a reply failed: say so on the control page, run no more. */
static void async_failed(struct own_conn *c, int ret)
{
	c->failed = ret;
	if (!c->ctl)
		return;
	snprintf(c->ctl->why, sizeof(c->ctl->why), "%s", c->b.why);
	__atomic_store_n(&c->ctl->err, ret, __ATOMIC_RELEASE);
}

static int hello(struct own_conn *c, const struct gpu_own_req *q, int fd)
{
	void *p;

	if (c->ctl) {
		snprintf(c->b.why, sizeof(c->b.why), "a second HELLO on one connection");
		return -EPROTO;
	}
	if (q->a[0] != GPU_OWN_PROTO) {
		snprintf(c->b.why, sizeof(c->b.why), "the owner program speaks version %u, the engine %llu: install both from one build",
			 GPU_OWN_PROTO, (unsigned long long)q->a[0]);
		return -EPROTO;
	}
	p = fd < 0 ? MAP_FAILED : mmap(NULL, sizeof(*c->ctl), PROT_READ | PROT_WRITE,
				       MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		snprintf(c->b.why, sizeof(c->b.why), "the job process's control page cannot be mapped: %s",
			 fd < 0 ? "none came with HELLO" : strerror(errno));
		return -EINVAL;
	}
	c->ctl = p;
	c->ctl->pid = (uint32_t)getpid();
	return 0;
}

/* One message: run it, and reply where the call returns something. */
static void serve_one(struct own_conn *c, size_t n, int fd)
{
	const struct gpu_own_req *q = (const void *)c->buf;
	const void *payload = q + 1;
	size_t plen = n - sizeof(*q);
	struct gpu_own_rep p = { 0 };
	int ret, fd_out = -1;

	c->b.why[0] = '\0';
	if (q->op != GPU_OWN_HELLO && q->op != GPU_OWN_OPEN && c->opened)
		c->rt->enter(&c->b);
	if (!has_reply(q)) {
		ret = check_call(c, q);
		if (!ret)
			ret = do_async(c, q, payload, plen);
		if (ret < 0 && !c->failed)
			async_failed(c, ret);
	} else {
		ret = check_call(c, q);
		if (!ret)
			ret = q->op == GPU_OWN_HELLO ? hello(c, q, fd) :
			      do_call(c, q, payload, plen, fd, &p, &fd_out);
		p.ret = ret;
		if (ret < 0)
			snprintf(p.why, sizeof(p.why), "%s", c->b.why);
		send_rep(c->sock, &p, fd_out);
	}
	if (fd_out >= 0)
		close(fd_out);
	if (fd >= 0)
		close(fd);
}

/*
 * Let what the job process queued finish: a resident kernel of its leaves
 * by itself once nothing is posted for its idle time (kring.h), and no one
 * posts any more.
 */
static void drain_streams(struct own_conn *c)
{
	unsigned int i;

	for (i = 0; i < c->streams.n; i++)
		c->rt->stream_sync(&c->b, (void *)(uintptr_t)c->streams.h[i]);
}

/* Whatever the job process left: released in reverse order of its getting. */
static void release_all(struct own_conn *c)
{
	unsigned int i;

	if (c->opened)
		c->rt->enter(&c->b);
	drain_streams(c);
	for (i = 0; i < c->events.n; i++)
		c->rt->event_destroy((void *)(uintptr_t)c->events.h[i]);
	for (i = 0; i < c->streams.n; i++)
		c->rt->stream_destroy((void *)(uintptr_t)c->streams.h[i]);
	for (i = 0; i < c->mods.n; i++)
		c->rt->kernel_unload((void *)(uintptr_t)c->mods.h[i]);
	free(c->events.h);
	free(c->streams.h);
	free(c->mods.h);
	for (i = 0; i < OWN_REGIONS; i++)
		if (c->reg[i].mine)
			region_release(c, &c->reg[i]);
	if (c->export_fd >= 0)
		c->rt->close_dmabuf(c->export_fd);
	if (c->allocated)
		c->rt->mem_free(&c->d);
	if (c->opened && c->rt->close)
		c->rt->close(&c->d);
	if (c->ctl)
		munmap(c->ctl, sizeof(*c->ctl));
}

static pid_t peer_of(int sock)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	return getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cred, &len) ? 0 :
	       cred.pid;
}

void gpu_owner_serve(int sock, const struct gpu_runtime *rt,
		     const struct gpu_provider *prov, int dev_id)
{
	struct own_conn *c = calloc(1, sizeof(*c));
	ssize_t n;
	int fd;

	if (c)
		c->buf = malloc(GPU_OWN_MSG_MAX);
	if (!c || !c->buf)
		goto out;
	c->sock = sock;
	c->rt = rt;
	c->peer = peer_of(sock);
	c->d.rt = rt;
	c->export_fd = -1;
	gpu_buf_init(&c->b, prov, dev_id, gpu_spin_ns());
	c->b.priv = &c->d;
	while ((n = recv_msg(sock, c->buf, GPU_OWN_MSG_MAX, &fd)) > 0) {
		const struct gpu_own_req *q = (const void *)c->buf;

		if ((size_t)n < sizeof(*q) || q->op == GPU_OWN_CLOSE) {
			if (fd >= 0)
				close(fd);
			break;
		}
		serve_one(c, n, fd);
	}
	release_all(c);
out:
	if (c)
		free(c->buf);
	free(c);
	close(sock);
}
