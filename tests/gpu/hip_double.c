// SPDX-License-Identifier: MIT
/*
 * A test double of the HIP runtime (libamdhip64.so), backed by host memory,
 * so that the test suite runs gpu/runtime/hip.c's real code where no AMD GPU exists.
 * Load it by putting its directory first in LD_LIBRARY_PATH.
 *
 * It implements what the provider uses, with the runtime's return codes:
 * devices, hipMalloc (a memfd mapping per allocation), hipHostRegister,
 * streams (a worker thread each, running copies in order, so copies really
 * are asynchronous to the caller), events (done once the stream got past the
 * point where they were recorded), and dma-buf export through /dev/udmabuf
 * (hipErrorNotSupported where the kernel has no udmabuf, which is what the
 * real runtime answers when the driver cannot export).
 *
 * Environment:
 *   HIPDOUBLE_DEVICES=N     devices to pretend (default 1; 0: hipErrorNoDevice)
 *   HIPDOUBLE_FAIL=a,b,...  fail these calls: init malloc hostregister stream
 *                           event export copy writevalue
 *   HIPDOUBLE_EXPORT=none   refuse export even where udmabuf exists
 *   HIPDOUBLE_MEMTYPE=host  hipPointerGetAttributes calls hipMalloc memory
 *                           host memory (as for an APU's carve-out), not
 *                           device memory
 *   HIPDOUBLE_FAIL_COPY_AT=N  the Nth copy (single or in a batch) fails
 *   HIPDOUBLE_DELAY_US=N    each copy takes at least N microseconds
 *   HIPDOUBLE_CORRUPT=N     every Nth copy into device memory flips its first
 *                           byte (a negative control for verify)
 *   HIPDOUBLE_LEAK=free     hipFree answers hipSuccess and frees nothing (a
 *                           leak the report must show)
 *   HIPDOUBLE_REPORT=FILE   append one line of counters (live objects, copies
 *                           from memory that was not hipHostRegister'ed,
 *                           allocations per device) at every release call and
 *                           at exit; a process's last line is its final state.
 *                           Per release, not only at exit: fio's job processes
 *                           leave through _exit, which runs no destructor.
 *   HIPDOUBLE_COPY_LOG=FILE append "start" when a stream begins a copy and
 *                           "end" when it has finished one, a line each: a
 *                           process that left with more starts than ends
 *                           left while a copy was still running.
 *
 * hipMemcpyBatchAsync is there as ROCm 7 has it (copies of one call run in
 * the order given here; the real one promises no order within a call), and
 * so are hipStreamWriteValue64 and hipHostGetDevicePointer.
 * hipPointerGetAttributes answers with ROCm 6's hipMemoryType numbering
 * (host 1, device 2), or ROCm 5's (host 0, device 1) in the ROCm 5 flavour.
 *
 * Built with -DHIPDOUBLE_ROCM5 it lacks hipMemGetHandleForAddressRange,
 * hipMemcpyBatchAsync and the stream memory operations, like ROCm 5; hsa_double.c then provides ROCr's
 * hsa_amd_portable_export_dmabuf.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <linux/udmabuf.h>

#include "hip_double.h"

#define MAX_DEVICES	16

enum {
	hipSuccess			= 0,
	hipErrorInvalidValue		= 1,
	hipErrorOutOfMemory		= 2,
	hipErrorNotInitialized		= 3,
	hipErrorNoDevice		= 100,
	hipErrorInvalidDevice		= 101,
	hipErrorInvalidResourceHandle	= 400,
	hipErrorNotReady		= 600,
	hipErrorHostMemoryAlreadyRegistered = 712,
	hipErrorHostMemoryNotRegistered	= 713,
	hipErrorNotSupported		= 801,
};

typedef int hipError_t;

/* ------------------------------------------------------------------------ */
/* configuration and counters                                               */

static struct {
	int devices;
	unsigned int delay_us;
	long corrupt;
	bool no_export;
	bool memtype_host;
	long fail_copy_at;
	bool leak_free;
	char fail[128];
	const char *report;
	const char *copy_log;
	const char *pci;	/* HIPDOUBLE_PCI: addr0,addr1,... */
} cfg;

static struct {
	long live_allocs, live_streams, live_events, live_host_regs;
	long copies, unpinned_copies, exports, to_dev, copy_calls;
	long allocs_on[MAX_DEVICES];
} cnt;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static __thread int cur_dev;

static bool fails(const char *what)
{
	const char *p = cfg.fail;
	size_t n = strlen(what);

	while ((p = strstr(p, what))) {
		if ((p == cfg.fail || p[-1] == ',') && (p[n] == ',' || !p[n]))
			return true;
		p += n;
	}
	return false;
}

__attribute__((constructor)) static void double_init(void)
{
	const char *s;

	s = getenv("HIPDOUBLE_DEVICES");
	cfg.devices = s ? atoi(s) : 1;
	if (cfg.devices < 0 || cfg.devices > MAX_DEVICES)
		cfg.devices = MAX_DEVICES;
	s = getenv("HIPDOUBLE_DELAY_US");
	cfg.delay_us = s ? (unsigned int)atoi(s) : 0;
	s = getenv("HIPDOUBLE_CORRUPT");
	cfg.corrupt = s ? atol(s) : 0;
	s = getenv("HIPDOUBLE_EXPORT");
	cfg.no_export = s && !strcmp(s, "none");
	s = getenv("HIPDOUBLE_MEMTYPE");
	cfg.memtype_host = s && !strcmp(s, "host");
	s = getenv("HIPDOUBLE_FAIL_COPY_AT");
	cfg.fail_copy_at = s ? atol(s) : 0;
	s = getenv("HIPDOUBLE_FAIL");
	snprintf(cfg.fail, sizeof(cfg.fail), "%s", s ? s : "");
	s = getenv("HIPDOUBLE_LEAK");
	cfg.leak_free = s && !strcmp(s, "free");
	cfg.report = getenv("HIPDOUBLE_REPORT");
	cfg.pci = getenv("HIPDOUBLE_PCI");
	cfg.copy_log = getenv("HIPDOUBLE_COPY_LOG");
}

static void log_copy(const char *what)
{
	int fd;

	if (!cfg.copy_log)
		return;
	fd = open(cfg.copy_log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	if (write(fd, what, strlen(what)) < 0)
		fprintf(stderr, "HIP double: cannot write %s\n", cfg.copy_log);
	close(fd);
}

/* One line of counters, appended in one write (processes share the file). */
static void report(const char *at)
{
	char line[512];
	size_t n;
	int fd, i;

	if (!cfg.report)
		return;
	pthread_mutex_lock(&lock);
	n = (size_t)snprintf(line, sizeof(line), "pid=%d live_allocs=%ld live_streams=%ld live_events=%ld live_host_regs=%ld copies=%ld unpinned_copies=%ld exports=%ld",
			     (int)getpid(), cnt.live_allocs,
			     __atomic_load_n(&cnt.live_streams, __ATOMIC_RELAXED),
			     __atomic_load_n(&cnt.live_events, __ATOMIC_RELAXED),
			     cnt.live_host_regs, cnt.copies, cnt.unpinned_copies,
			     __atomic_load_n(&cnt.exports, __ATOMIC_RELAXED));
	for (i = 0; i < cfg.devices && n < sizeof(line); i++)
		n += (size_t)snprintf(line + n, sizeof(line) - n, " dev%d=%ld",
				      i, cnt.allocs_on[i]);
	pthread_mutex_unlock(&lock);
	if (n < sizeof(line))
		n += (size_t)snprintf(line + n, sizeof(line) - n, " at=%s\n", at);
	if (n >= sizeof(line))
		n = sizeof(line) - 1;
	fd = open(cfg.report, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	if (write(fd, line, n) != (ssize_t)n)
		fprintf(stderr, "HIP double: short write to %s\n", cfg.report);
	close(fd);
}

__attribute__((destructor)) static void double_report(void)
{
	report("exit");
}

/* ------------------------------------------------------------------------ */
/* errors and devices                                                       */

const char *hipGetErrorName(hipError_t e)
{
	switch (e) {
	case hipSuccess: return "hipSuccess";
	case hipErrorInvalidValue: return "hipErrorInvalidValue";
	case hipErrorOutOfMemory: return "hipErrorOutOfMemory";
	case hipErrorNotInitialized: return "hipErrorNotInitialized";
	case hipErrorNoDevice: return "hipErrorNoDevice";
	case hipErrorInvalidDevice: return "hipErrorInvalidDevice";
	case hipErrorInvalidResourceHandle: return "hipErrorInvalidResourceHandle";
	case hipErrorNotReady: return "hipErrorNotReady";
	case hipErrorHostMemoryAlreadyRegistered: return "hipErrorHostMemoryAlreadyRegistered";
	case hipErrorHostMemoryNotRegistered: return "hipErrorHostMemoryNotRegistered";
	case hipErrorNotSupported: return "hipErrorNotSupported";
	default: return "hipErrorUnknown";
	}
}

/*
 * Device dev's entry of HIPDOUBLE_PCI (comma separated, one per device), so
 * tests can place devices in a sysfs tree built as a fixture; without it,
 * hipErrorNotSupported, as for a device that is not on PCI.
 */
hipError_t hipDeviceGetPCIBusId(char *buf, int len, int dev)
{
	const char *p = cfg.pci;
	size_t n;
	int i;

	if (!buf || len <= 0 || dev < 0 || dev >= cfg.devices)
		return hipErrorInvalidValue;
	for (i = 0; p && i < dev; i++) {
		p = strchr(p, ',');
		p = p ? p + 1 : NULL;
	}
	if (!p || !*p || *p == ',')
		return hipErrorNotSupported;
	n = strcspn(p, ",");
	if (n >= (size_t)len)
		return hipErrorInvalidValue;
	memcpy(buf, p, n);
	buf[n] = '\0';
	return hipSuccess;
}

hipError_t hipGetDeviceCount(int *count)
{
	if (!count)
		return hipErrorInvalidValue;
	*count = 0;
	if (fails("init"))
		return hipErrorNotInitialized;
	if (!cfg.devices)
		return hipErrorNoDevice;
	*count = cfg.devices;
	return hipSuccess;
}

hipError_t hipSetDevice(int dev)
{
	if (dev < 0 || dev >= cfg.devices)
		return hipErrorInvalidDevice;
	cur_dev = dev;
	return hipSuccess;
}

/* ------------------------------------------------------------------------ */
/* memory: device allocations are memfd mappings (udmabuf can export them)  */

struct range {
	char *base;
	size_t size;
	int memfd;		/* device allocations only */
	int dev;
	struct range *next;
};

static struct range *dev_mem, *host_regs;

static struct range *find(struct range *list, const void *p, size_t len)
{
	const char *c = p;

	for (; list; list = list->next)
		if (c >= list->base && len <= list->size &&
		    (size_t)(c - list->base) <= list->size - len)
			return list;
	return NULL;
}

static struct range *unlink_base(struct range **list, const void *base)
{
	struct range **pp, *r;

	for (pp = list; (r = *pp); pp = &r->next)
		if (r->base == base) {
			*pp = r->next;
			return r;
		}
	return NULL;
}

hipError_t hipMalloc(void **ptr, size_t size)
{
	struct range *r;

	if (!ptr)
		return hipErrorInvalidValue;
	*ptr = NULL;
	if (!size)
		return hipSuccess;
	if (fails("malloc"))
		return hipErrorOutOfMemory;
	r = calloc(1, sizeof(*r));
	if (!r)
		return hipErrorOutOfMemory;
	r->size = size;
	r->dev = cur_dev;
	r->memfd = memfd_create("hip_double", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (r->memfd < 0 || ftruncate(r->memfd, size) < 0)
		goto err;
	r->base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED,
		       r->memfd, 0);
	if (r->base == MAP_FAILED)
		goto err;
	/* uninitialised, like device memory: not zeroes */
	memset(r->base, 0xa5, size);
	pthread_mutex_lock(&lock);
	r->next = dev_mem;
	dev_mem = r;
	cnt.live_allocs++;
	cnt.allocs_on[r->dev]++;
	pthread_mutex_unlock(&lock);
	*ptr = r->base;
	return hipSuccess;
err:
	if (r->memfd >= 0)
		close(r->memfd);
	free(r);
	return hipErrorOutOfMemory;
}

hipError_t hipFree(void *ptr)
{
	struct range *r;

	if (!ptr)
		return hipSuccess;
	if (cfg.leak_free) {
		report("hipFree(leaked)");
		return hipSuccess;
	}
	pthread_mutex_lock(&lock);
	r = unlink_base(&dev_mem, ptr);
	if (r)
		cnt.live_allocs--;
	pthread_mutex_unlock(&lock);
	if (!r)
		return hipErrorInvalidValue;
	munmap(r->base, r->size);
	close(r->memfd);
	free(r);
	report("hipFree");
	return hipSuccess;
}

hipError_t hipHostRegister(void *ptr, size_t size, unsigned int flags)
{
	struct range *r;
	hipError_t e = hipSuccess;

	(void)flags;
	if (!ptr || !size)
		return hipErrorInvalidValue;
	if (fails("hostregister"))
		return hipErrorOutOfMemory;
	r = calloc(1, sizeof(*r));
	if (!r)
		return hipErrorOutOfMemory;
	r->base = ptr;
	r->size = size;
	r->memfd = -1;
	pthread_mutex_lock(&lock);
	if (find(host_regs, ptr, 1) || find(host_regs, (char *)ptr + size - 1, 1)) {
		e = hipErrorHostMemoryAlreadyRegistered;
	} else {
		r->next = host_regs;
		host_regs = r;
		cnt.live_host_regs++;
	}
	pthread_mutex_unlock(&lock);
	if (e)
		free(r);
	return e;
}

hipError_t hipHostUnregister(void *ptr)
{
	struct range *r;

	pthread_mutex_lock(&lock);
	r = unlink_base(&host_regs, ptr);
	if (r)
		cnt.live_host_regs--;
	pthread_mutex_unlock(&lock);
	if (!r)
		return hipErrorHostMemoryNotRegistered;
	free(r);
	report("hipHostUnregister");
	return hipSuccess;
}

/* The double's own export, shared with the ROCr double. */
int hipdouble_export(const void *ptr, size_t size, int *fd, uint64_t *off)
{
	struct udmabuf_create create = { .flags = UDMABUF_FLAGS_CLOEXEC };
	struct range *r;
	int dev, ret;

	if (fails("export") || cfg.no_export)
		return -EOPNOTSUPP;
	pthread_mutex_lock(&lock);
	r = find(dev_mem, ptr, size);
	pthread_mutex_unlock(&lock);
	if (!r)
		return -EINVAL;
	dev = open("/dev/udmabuf", O_RDWR | O_CLOEXEC);
	if (dev < 0)
		return -EOPNOTSUPP;
	create.memfd = (uint32_t)r->memfd;
	create.offset = (uint64_t)((const char *)ptr - r->base);
	create.size = size;
	ret = fcntl(r->memfd, F_ADD_SEALS, F_SEAL_SHRINK);
	if (!ret)
		ret = ioctl(dev, UDMABUF_CREATE, &create);
	if (ret < 0)
		ret = -errno;
	close(dev);
	if (ret < 0)
		return ret;
	*fd = ret;
	if (off)
		*off = 0;
	__atomic_add_fetch(&cnt.exports, 1, __ATOMIC_RELAXED);
	return 0;
}

/* hipPointerAttribute_t's head, the same in ROCm 5 and 6 */
struct hip_ptr_attr {
	int type;		/* hipMemoryType (ROCm 5: memoryType) */
	int device;
	void *device_ptr;
	void *host_ptr;
	int is_managed;
	unsigned int allocation_flags;
};

#ifdef HIPDOUBLE_ROCM5
enum { MEM_HOST = 0, MEM_DEVICE = 1 };
#else
enum { MEM_HOST = 1, MEM_DEVICE = 2 };
#endif

hipError_t hipPointerGetAttributes(struct hip_ptr_attr *a, const void *ptr)
{
	struct range *r, *h;

	if (!a || !ptr)
		return hipErrorInvalidValue;
	memset(a, 0, sizeof(*a));
	pthread_mutex_lock(&lock);
	r = find(dev_mem, ptr, 1);
	h = r ? NULL : find(host_regs, ptr, 1);
	pthread_mutex_unlock(&lock);
	if (!r && !h)
		return hipErrorInvalidValue;
	a->type = r && !cfg.memtype_host ? MEM_DEVICE : MEM_HOST;
	a->device = r ? r->dev : cur_dev;
	a->device_ptr = (void *)ptr;
	a->host_ptr = h || cfg.memtype_host ? (void *)ptr : NULL;
	return hipSuccess;
}

#ifndef HIPDOUBLE_ROCM5
hipError_t hipMemGetHandleForAddressRange(void *handle, void *ptr, size_t size,
					  int type, unsigned long long flags)
{
	int ret;

	if (!handle || type != 1 || flags)
		return hipErrorInvalidValue;
	ret = hipdouble_export(ptr, size, handle, NULL);
	if (ret == -EOPNOTSUPP)
		return hipErrorNotSupported;
	return ret ? hipErrorInvalidValue : hipSuccess;
}
#endif

/* ------------------------------------------------------------------------ */
/* streams: a worker thread per stream runs its copies in order             */

struct copy_op {
	void *dst;
	const void *src;
	size_t len;
	uint64_t src_sum;	/* the source as it was when queued */
	bool sum_at_start;	/* an earlier copy writes it: sum when run */
	bool corrupt;
	bool is_value;		/* hipStreamWriteValue64: store value at dst */
	uint64_t value;
	struct copy_op *next;
};

/*
 * A GPU reads a copy's source when the copy runs, not when it is queued: a
 * caller that changes the source in between (say, reuses a buffer whose copy
 * is still pending) gets torn data. The double says so on stderr.
 */
static uint64_t sum_bytes(const void *p, size_t len)
{
	const unsigned char *c = p;
	uint64_t h = 1469598103934665603ULL, w;
	size_t i;

	for (i = 0; i + 8 <= len; i += 8) {
		memcpy(&w, c + i, 8);
		h = (h ^ w) * 1099511628211ULL;
	}
	for (; i < len; i++)
		h = (h ^ c[i]) * 1099511628211ULL;
	return h;
}

struct ihipStream_t {
	pthread_t worker;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct copy_op *head, **tail;
	uint64_t submitted, completed;
	bool stop;
};

struct ihipEvent_t {
	struct ihipStream_t *s;
	uint64_t target;
};

typedef struct ihipStream_t *hipStream_t;
typedef struct ihipEvent_t *hipEvent_t;

/* Does a copy still pending on the stream write into [p, p + len)? */
static bool writes_to(const struct copy_op *op, const void *p, size_t len)
{
	const char *c = p;

	for (; op; op = op->next)
		if (c < (const char *)op->dst + op->len &&
		    (const char *)op->dst < c + len)
			return true;
	return false;
}

static void *stream_worker(void *arg)
{
	struct ihipStream_t *s = arg;
	struct copy_op *op;

	pthread_mutex_lock(&s->mu);
	for (;;) {
		while (!s->head && !s->stop)
			pthread_cond_wait(&s->cv, &s->mu);
		if (!s->head)
			break;
		op = s->head;
		pthread_mutex_unlock(&s->mu);
		if (op->is_value) {
			__atomic_store_n((uint64_t *)op->dst, op->value,
					 __ATOMIC_RELEASE);
			goto done;
		}
		if (op->sum_at_start)
			op->src_sum = sum_bytes(op->src, op->len);
		log_copy("start\n");
		if (cfg.delay_us)
			usleep(cfg.delay_us);
		if (sum_bytes(op->src, op->len) != op->src_sum)
			fprintf(stderr, "hip_double: the source of a %zu-byte copy changed while the copy was pending\n",
				op->len);
		memcpy(op->dst, op->src, op->len);
		if (op->corrupt && op->len)
			*(unsigned char *)op->dst ^= 0xff;
		log_copy("end\n");
done:
		pthread_mutex_lock(&s->mu);
		s->head = op->next;
		if (!s->head)
			s->tail = &s->head;
		s->completed++;
		free(op);
		pthread_cond_broadcast(&s->cv);
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

hipError_t hipStreamCreateWithFlags(hipStream_t *stream, unsigned int flags)
{
	struct ihipStream_t *s;

	(void)flags;
	if (!stream)
		return hipErrorInvalidValue;
	if (fails("stream"))
		return hipErrorOutOfMemory;
	s = calloc(1, sizeof(*s));
	if (!s)
		return hipErrorOutOfMemory;
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	s->tail = &s->head;
	if (pthread_create(&s->worker, NULL, stream_worker, s)) {
		free(s);
		return hipErrorOutOfMemory;
	}
	__atomic_add_fetch(&cnt.live_streams, 1, __ATOMIC_RELAXED);
	*stream = s;
	return hipSuccess;
}

static void stream_wait_for(struct ihipStream_t *s, uint64_t target)
{
	pthread_mutex_lock(&s->mu);
	while (s->completed < target)
		pthread_cond_wait(&s->cv, &s->mu);
	pthread_mutex_unlock(&s->mu);
}

hipError_t hipStreamSynchronize(hipStream_t s)
{
	uint64_t target;

	if (!s)
		return hipErrorInvalidResourceHandle;
	pthread_mutex_lock(&s->mu);
	target = s->submitted;
	pthread_mutex_unlock(&s->mu);
	stream_wait_for(s, target);
	return hipSuccess;
}

hipError_t hipStreamDestroy(hipStream_t s)
{
	if (!s)
		return hipErrorInvalidResourceHandle;
	hipStreamSynchronize(s);
	pthread_mutex_lock(&s->mu);
	s->stop = true;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	pthread_join(s->worker, NULL);
	pthread_cond_destroy(&s->cv);
	pthread_mutex_destroy(&s->mu);
	free(s);
	__atomic_sub_fetch(&cnt.live_streams, 1, __ATOMIC_RELAXED);
	report("hipStreamDestroy");
	return hipSuccess;
}

/*
 * Append an operation to the stream's queue for its worker. A copy's source
 * is summed now, unless an operation still pending writes to it: then when
 * the copy starts.
 */
static void stream_push(struct ihipStream_t *s, struct copy_op *op)
{
	pthread_mutex_lock(&s->mu);
	if (!op->is_value) {
		op->sum_at_start = writes_to(s->head, op->src, op->len);
		if (!op->sum_at_start)
			op->src_sum = sum_bytes(op->src, op->len);
	}
	*s->tail = op;
	s->tail = &op->next;
	s->submitted++;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

static hipError_t queue_copy(void *dst, const void *src, size_t len,
			     hipStream_t s, const void *dev, const void *host)
{
	bool pinned, corrupt = false;
	struct copy_op *op;

	if (!s)
		return hipErrorInvalidResourceHandle;
	if (fails("copy"))
		return hipErrorInvalidValue;
	pthread_mutex_lock(&lock);
	if (cfg.fail_copy_at && ++cnt.copy_calls == cfg.fail_copy_at) {
		/* what a GPU fault looks like: an error fio does not stop on */
		pthread_mutex_unlock(&lock);
		return 999;	/* hipErrorUnknown */
	}
	/* the device side must lie inside one allocation, as on a GPU */
	if (!find(dev_mem, dev, len)) {
		pthread_mutex_unlock(&lock);
		return hipErrorInvalidValue;
	}
	pinned = find(host_regs, host, len);
	cnt.copies++;
	if (!pinned)
		cnt.unpinned_copies++;
	if (dst == dev && cfg.corrupt)
		corrupt = ++cnt.to_dev % cfg.corrupt == 0;
	pthread_mutex_unlock(&lock);
	op = calloc(1, sizeof(*op));
	if (!op)
		return hipErrorOutOfMemory;
	op->dst = dst;
	op->src = src;
	op->len = len;
	op->corrupt = corrupt;
	stream_push(s, op);
	return hipSuccess;
}

hipError_t hipMemcpyHtoDAsync(void *dst, void *src, size_t len, hipStream_t s)
{
	return queue_copy(dst, src, len, s, dst, src);
}

hipError_t hipMemcpyDtoHAsync(void *dst, void *src, size_t len, hipStream_t s)
{
	return queue_copy(dst, src, len, s, src, dst);
}

#ifndef HIPDOUBLE_ROCM5
/* Host memory is its own device address here. */
hipError_t hipHostGetDevicePointer(void **dev, void *host, unsigned int flags)
{
	bool registered;

	if (!dev || flags)
		return hipErrorInvalidValue;
	pthread_mutex_lock(&lock);
	registered = find(host_regs, host, 1) != NULL;
	pthread_mutex_unlock(&lock);
	if (!registered)
		return hipErrorHostMemoryNotRegistered;
	*dev = host;
	return hipSuccess;
}

/* Store value at ptr once every earlier operation on the stream is done. */
hipError_t hipStreamWriteValue64(hipStream_t s, void *ptr, uint64_t value,
				 unsigned int flags)
{
	struct copy_op *op;

	if (!s)
		return hipErrorInvalidResourceHandle;
	if (!ptr || flags || ((uintptr_t)ptr & 7))
		return hipErrorInvalidValue;
	if (fails("writevalue"))
		return hipErrorNotSupported;
	op = calloc(1, sizeof(*op));
	if (!op)
		return hipErrorOutOfMemory;
	op->dst = ptr;
	op->is_value = true;
	op->value = value;
	stream_push(s, op);
	return hipSuccess;
}

/* hipMemcpyAttributes as ROCm 7 lays it out; only the access order counts */
struct hip_memcpy_attr {
	int src_access_order;
	struct { int type; int id; } src_loc, dst_loc;
	unsigned int flags;
};

static bool is_device(const void *p)
{
	bool dev;

	pthread_mutex_lock(&lock);
	dev = find(dev_mem, p, 1) != NULL;
	pthread_mutex_unlock(&lock);
	return dev;
}

/* Each copy as its own async copy, direction from where the pointers lie. */
hipError_t hipMemcpyBatchAsync(void **dsts, void **srcs, size_t *sizes,
			       size_t count, struct hip_memcpy_attr *attrs,
			       size_t *attr_idxs, size_t nr_attrs,
			       size_t *fail_idx, hipStream_t s)
{
	size_t i;
	hipError_t e;

	if (fail_idx)
		*fail_idx = SIZE_MAX;
	if (!count || !dsts || !srcs || !sizes || !attrs || !attr_idxs ||
	    !nr_attrs || nr_attrs > count || attr_idxs[0] ||
	    !attrs[0].src_access_order)
		return hipErrorInvalidValue;
	for (i = 0; i < count; i++) {
		bool to_dev = is_device(dsts[i]);

		e = queue_copy(dsts[i], srcs[i], sizes[i], s,
			       to_dev ? dsts[i] : srcs[i],
			       to_dev ? srcs[i] : dsts[i]);
		if (e != hipSuccess) {
			if (fail_idx)
				*fail_idx = i;
			return e;
		}
	}
	return hipSuccess;
}
#endif

/* ------------------------------------------------------------------------ */
/* events                                                                   */

hipError_t hipEventCreateWithFlags(hipEvent_t *ev, unsigned int flags)
{
	(void)flags;
	if (!ev)
		return hipErrorInvalidValue;
	if (fails("event"))
		return hipErrorOutOfMemory;
	*ev = calloc(1, sizeof(**ev));
	if (!*ev)
		return hipErrorOutOfMemory;
	__atomic_add_fetch(&cnt.live_events, 1, __ATOMIC_RELAXED);
	return hipSuccess;
}

hipError_t hipEventRecord(hipEvent_t ev, hipStream_t s)
{
	if (!ev || !s)
		return hipErrorInvalidResourceHandle;
	pthread_mutex_lock(&s->mu);
	ev->s = s;
	ev->target = s->submitted;
	pthread_mutex_unlock(&s->mu);
	return hipSuccess;
}

hipError_t hipEventQuery(hipEvent_t ev)
{
	bool done;

	if (!ev)
		return hipErrorInvalidResourceHandle;
	if (!ev->s)
		return hipSuccess;	/* never recorded: complete */
	pthread_mutex_lock(&ev->s->mu);
	done = ev->s->completed >= ev->target;
	pthread_mutex_unlock(&ev->s->mu);
	return done ? hipSuccess : hipErrorNotReady;
}

hipError_t hipEventSynchronize(hipEvent_t ev)
{
	if (!ev)
		return hipErrorInvalidResourceHandle;
	if (ev->s)
		stream_wait_for(ev->s, ev->target);
	return hipSuccess;
}

hipError_t hipEventDestroy(hipEvent_t ev)
{
	if (!ev)
		return hipErrorInvalidResourceHandle;
	free(ev);
	__atomic_sub_fetch(&cnt.live_events, 1, __ATOMIC_RELAXED);
	report("hipEventDestroy");
	return hipSuccess;
}
