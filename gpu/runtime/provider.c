// SPDX-License-Identifier: MIT
/*
 * The provider registry (every provider gpu= can name), the buffer life
 * cycle shared by all providers, and the clock and spin setting of the
 * waits for copies.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include "provider.h"

/*
 * Every provider gpu= can name: device providers in the order gpu=auto
 * tries them, host memory (which always works) last. A runtime left out at
 * configure time is still here (absent.c), to say how to get it.
 */
static const struct gpu_provider *const providers[] = {
	&gpu_cuda_provider,
	&gpu_hip_provider,
	&gpu_host_provider,
};

#define NR_PROVIDERS (sizeof(providers) / sizeof(providers[0]))

const struct gpu_provider *gpu_provider_nth(unsigned int i)
{
	return i < NR_PROVIDERS ? providers[i] : NULL;
}

const char *gpu_provider_names(char *buf, size_t len, const char *sep,
			       const char *last)
{
	size_t i, used = 0;

	buf[0] = '\0';
	for (i = 0; i < NR_PROVIDERS; i++)
		used += snprintf(buf + used, used < len ? len - used : 0, "%s%s",
				 !i ? "" : i + 1 < NR_PROVIDERS ? sep : last,
				 providers[i]->name);
	return buf;
}

const struct gpu_provider *gpu_provider_by_name(const char *name)
{
	size_t i;

	for (i = 0; i < NR_PROVIDERS; i++)
		if (!strcmp(providers[i]->name, name))
			return providers[i];
	return NULL;
}

/*
 * The first provider whose runtime is present with at least one device;
 * why collects what each one passed over said, e.g. "cuda: libcuda.so.1 not
 * found; hip: ...".
 */
const struct gpu_provider *gpu_provider_auto(char *why, size_t len)
{
	char one[192];
	size_t i, used = 0;

	why[0] = '\0';
	for (i = 0; i < NR_PROVIDERS; i++) {
		one[0] = '\0';
		if (providers[i]->probe(one, sizeof(one)) > 0)
			return providers[i];
		used += snprintf(why + used, used < len ? len - used : 0,
				 "%s%s: %s", used ? "; " : "", providers[i]->name,
				 one[0] ? one : "no device");
	}
	return &gpu_host_provider;
}

/*
 * dma-buf export wants page-aligned sizes; CUDA's exporter wants the
 * allocation granularity (2 MiB), which every provider can live with.
 */
size_t gpu_buf_round(size_t size)
{
	const size_t gran = 2UL << 20;

	return (size + gran - 1) & ~(gran - 1);
}

void gpu_buf_init(struct gpu_buf *b, const struct gpu_provider *prov,
		  int dev_id, long spin_ns)
{
	memset(b, 0, sizeof(*b));
	b->prov = prov;
	/* a provider without a runtime hands out host memory as the device's */
	b->host_is_device = !prov->rt;
	b->dev_id = dev_id;
	b->dmabuf_fd = -1;
	b->spin_ns = spin_ns;
}

int gpu_buf_alloc(struct gpu_buf *b, size_t size)
{
	b->size = gpu_buf_round(size);
	/* providers left out at configure time have no alloc */
	if (!b->prov->alloc)
		return -ENOTSUP;
	return b->prov->alloc(b);
}

void gpu_buf_free(struct gpu_buf *b)
{
	if (b->prov && b->prov->free)
		b->prov->free(b);
}

/* what copies that outlived their job still use: reachable until exit */
static void *abandoned[64];
static unsigned int nr_abandoned;

void gpu_keep_for_exit(void *p)
{
	unsigned int i = __atomic_fetch_add(&nr_abandoned, 1, __ATOMIC_RELAXED);

	if (i < sizeof(abandoned) / sizeof(abandoned[0]))
		abandoned[i] = p;
}

void gpu_keep_abandoned(struct gpu_buf *b)
{
	gpu_keep_for_exit(b->priv);
	b->priv = NULL;
}

/* ---- host pages a runtime may page-lock ---- */

bool gpu_host_shared;

static struct { void *p; size_t len; int fd; bool lent; } shared[8];
static pthread_mutex_t shared_lock = PTHREAD_MUTEX_INITIALIZER;

/* In the table, under shared_lock: 1, or 0 where it is full. */
static int remember(void *p, size_t len, int fd, bool lent)
{
	unsigned int i;

	for (i = 0; i < sizeof(shared) / sizeof(shared[0]); i++)
		if (!shared[i].p) {
			shared[i].p = p;
			shared[i].len = len;
			shared[i].fd = fd;
			shared[i].lent = lent;
			return 1;
		}
	return 0;
}

/* Pages of a memfd, remembered with it so that it can be handed over. */
static void *shared_pages(size_t len)
{
	void *p = MAP_FAILED;
	int fd, kept;

	fd = memfd_create("dmabuf_uring-shared", MFD_CLOEXEC);
	if (fd < 0)
		return MAP_FAILED;
	if (!ftruncate(fd, len))
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	pthread_mutex_lock(&shared_lock);
	kept = p != MAP_FAILED && remember(p, len, fd, false);
	pthread_mutex_unlock(&shared_lock);
	if (kept)
		return p;
	if (p != MAP_FAILED)
		munmap(p, len);
	close(fd);
	errno = ENOMEM;
	return MAP_FAILED;
}

void *gpu_host_pages(size_t len)
{
	void *p;

	if (gpu_host_shared)
		return shared_pages(len);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	if (p != MAP_FAILED && len >= (2u << 20))
		/* fewer TLB misses for the DMA engine and the CPU alike */
		madvise(p, len, MADV_HUGEPAGE);
	return p;
}

void gpu_host_pages_free(void *p, size_t len)
{
	unsigned int i;

	pthread_mutex_lock(&shared_lock);
	for (i = 0; i < sizeof(shared) / sizeof(shared[0]); i++)
		if (shared[i].p == p && !shared[i].lent) {
			close(shared[i].fd);
			shared[i].p = NULL;
		}
	pthread_mutex_unlock(&shared_lock);
	munmap(p, len);
}

int gpu_host_pages_lend(void *p, size_t len, int fd)
{
	int ok;

	if (!gpu_host_shared)
		return 0;
	pthread_mutex_lock(&shared_lock);
	ok = remember(p, len, fd, true);
	pthread_mutex_unlock(&shared_lock);
	return ok ? 0 : -ENOMEM;
}

void gpu_host_pages_return(void *p)
{
	unsigned int i;

	pthread_mutex_lock(&shared_lock);
	for (i = 0; i < sizeof(shared) / sizeof(shared[0]); i++)
		if (shared[i].p == p && shared[i].lent)
			shared[i].p = NULL;
	pthread_mutex_unlock(&shared_lock);
}

/* The fd behind p in the table, lent or not as asked, else -1. */
static int fd_of(const void *p, bool lent)
{
	unsigned int i;
	int fd = -1;

	pthread_mutex_lock(&shared_lock);
	for (i = 0; i < sizeof(shared) / sizeof(shared[0]); i++)
		if (shared[i].p == p && shared[i].lent == lent)
			fd = shared[i].fd;
	pthread_mutex_unlock(&shared_lock);
	return fd;
}

int gpu_host_pages_lent_fd(const void *p)
{
	return fd_of(p, true);
}

int gpu_host_pages_fd(const void *p)
{
	return fd_of(p, false);
}

int gpu_shadow_map(struct gpu_buf *b)
{
	int ret;

	b->host = gpu_host_pages(b->size);
	if (b->host == MAP_FAILED) {
		ret = -errno;
		b->host = NULL;
		snprintf(b->why, sizeof(b->why), "mmap of the %zu MiB host buffer: %s",
			 b->size >> 20, strerror(-ret));
		return ret;
	}
	return 0;
}

void gpu_shadow_unmap(struct gpu_buf *b)
{
	if (b->host)
		gpu_host_pages_free(b->host, b->size);
	b->host = NULL;
}

/*
 * How long a wait for copies spins before it sleeps in the runtime: a 1 MiB
 * copy takes ~20 us at 55 GB/s, a batch of 4 KiB copies less, and threads
 * that spin for whole copies starve the CPU-bound side of the job.
 * DBR_GPU_SPIN_US=N overrides it (DBR_CUDA_SPIN_US, its older name, too);
 * -1 spins until done.
 */
#define GPU_SPIN_NS	20000L

const char *gpu_spin_env(const char **name)
{
	static const char *const names[] = { "DBR_GPU_SPIN_US", "DBR_CUDA_SPIN_US" };
	const char *val;
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		val = getenv(names[i]);
		if (val && *val) {
			*name = names[i];
			return val;
		}
	}
	return NULL;
}

int gpu_parse_spin_us(const char *name, const char *s, long *ns, char *msg,
		      size_t len)
{
	bool env = strcmp(name, "gpu_spin_us") != 0;
	char *end;
	long v;

	errno = 0;
	v = s ? strtol(s, &end, 10) : 0;
	if (!s || end == s || *end || errno || v < -1 || v > 1000000) {
		snprintf(msg, len, "%s=%s: expected microseconds from 0 to 1000000, or -1 to spin until the copies are done%s",
			 name, s ? s : "", env ? "; fix it, or unset it" : "");
		return -EINVAL;
	}
	*ns = v < 0 ? -1 : v * 1000L;
	return 0;
}

long gpu_spin_ns(void)
{
	static long ns = -2;
	const char *name, *env;
	char msg[256];

	if (ns != -2)
		return ns;
	ns = GPU_SPIN_NS;
	env = gpu_spin_env(&name);
	if (env && gpu_parse_spin_us(name, env, &ns, msg, sizeof(msg)) < 0)
		ns = GPU_SPIN_NS;
	return ns;
}

static uint64_t clock_ns(clockid_t clock)
{
	struct timespec t;

	clock_gettime(clock, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

uint64_t gpu_now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

uint64_t gpu_coarse_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC_COARSE);
}

bool gpu_past_deadline(const struct gpu_buf *b)
{
	return b->deadline_ns && gpu_now_ns() >= b->deadline_ns;
}

void gpu_nap(long ns)
{
	struct timespec ts = { .tv_nsec = ns };

	nanosleep(&ts, NULL);
}

/* Has a wait that started spinning at t0 spun for spin ns (< 0: never)? */
bool gpu_spin_over(uint64_t t0, long spin)
{
	return spin >= 0 && gpu_now_ns() - t0 >= (uint64_t)spin;
}
