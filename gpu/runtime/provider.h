/* SPDX-License-Identifier: MIT */
/*
 * Memory providers: where a fio thread's I/O buffer lives on the device side.
 *
 * Every provider sits behind one ops table and is chosen by name at run time
 * (gpu=cuda|hip|host); the engine never knows which is underneath. A provider
 * is memory: it allocates, per fio thread, a host shadow (what fio reads and
 * writes) and a device allocation of the same size, exports the device
 * allocation as a dma-buf on request, frees both, and tells a device's PCI
 * address. Copies between shadow and device are not the provider's: a device
 * provider hands out its runtime's table of calls (rt, runtime.h), over which
 * a copy stream (gpu/copy/stream.h) runs; host memory is the device's and
 * needs none.
 *
 * Functions return 0 or a negative errno; a provider may leave a short
 * detail (the runtime's own error name) in buf->why for the top-level message.
 * No provider is fio-aware.
 */
#ifndef DBR_GPU_PROVIDER_H
#define DBR_GPU_PROVIDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum gpu_copy_dir {
	GPU_H2D,	/* host shadow -> device */
	GPU_D2H,	/* device -> host shadow */
};

/* How a device provider's stream copies (gpu_copy=; kcopy.h). */
enum gpu_copy_mode {
	GPU_COPY_AUTO,		/* copy kernel for small copies where it loads */
	GPU_COPY_DMA,		/* the runtime's copy calls only */
	GPU_COPY_KERNEL,	/* copy kernel for every copy it can take */
};

/* How the copy kernel runs (gpu_kernel=; kring.h). */
enum gpu_kernel_mode {
	GPU_KERNEL_RESIDENT,	/* stays on the GPU, fed through a host ring */
	GPU_KERNEL_LAUNCH,	/* one launch per pass */
};

struct gpu_provider;
struct gpu_runtime;

/* words of the resident kernel's diagnostic counts (kring.h) */
#define GPU_KSTAT_WORDS		8

/* What a buffer's copy stream did, for the end-of-job report. */
struct gpu_stream_stats {
	unsigned long copies;		/* single copies queued */
	unsigned long calls;		/* runtime copy calls (batch or single) */
	unsigned long launches;		/* copy-kernel launches */
	unsigned long passes;		/* passes posted to the resident kernel */
	unsigned long starts;		/* resident kernel starts (launches) */
	unsigned long fences;		/* fences recorded */
	unsigned long kernel_fences;	/* of them, written by a copy kernel */
	unsigned long queries;		/* event queries (no host flag) */
	unsigned long waits;		/* blocking waits for a fence */
	unsigned long merged;		/* copies folded into a neighbour's */
	uint64_t call_ns;		/* time in the runtime's copy and fence calls */
	/* what the resident kernel's diagnostic build counted (GPU_KSTAT_*,
	 * kring.h); zeros from the plain kernel */
	uint64_t kstat[GPU_KSTAT_WORDS];
};

struct gpu_buf {
	const struct gpu_provider *prov;
	void *priv;		/* provider state */
	void *host;		/* host shadow, page aligned, size bytes */
	size_t size;
	int dev_id;
	int dmabuf_fd;		/* -1 until exported */
	bool host_is_device;	/* shadow is the device memory: no copies
				 * (gpu_buf_init: a provider without a runtime) */
	long spin_ns;		/* a wait for copies spins this long, then
				 * sleeps (< 0: never sleeps); set by init */
	enum gpu_copy_mode copy_mode;	/* gpu_copy: how a copy stream over
					 * the buffer copies; set before one
					 * is made (stream.h) */
	enum gpu_kernel_mode kernel_mode;	/* gpu_kernel: likewise */
	const char *kernel_why;	/* why a launch per pass, where the engine
				 * chose it (NULL: asked for, or resident) */
	uint64_t dev_addr;	/* device address of the allocation (device
				 * providers; what a copy stream copies to) */
	uint64_t deadline_ns;	/* gpu_now_ns() after which waits for copies
				 * give up (-ETIMEDOUT); 0: never. Set when
				 * the job stops (runtime over, a signal) */
	bool abandoned;		/* copies outlived the deadline: the provider
				 * left the memory they use to the process's exit */
	/*
	 * Optional: asked while a wait for copies polls instead of sleeping
	 * in the runtime (set it for slow copies only): true once the job
	 * stops, and the deadline becomes stop_bound_ns from then.
	 */
	bool (*stop)(void *arg);
	void *stop_arg;
	uint64_t stop_bound_ns;
	char why[192];		/* runtime detail of the last failure */
	char export_kind[112];	/* what the dma-buf maps, as the runtime says
				 * (the CUDA mapping, HIP's memory type); "" */
};

struct gpu_provider {
	const char *name;
	/*
	 * For messages: what gpu=name gives (fio's option help), the driver
	 * and runtime to install ("NVIDIA (libcuda.so.1)"; NULL: none, or not
	 * in this build), and what a dma-buf export needs where it fails.
	 */
	const char *help;
	const char *runtime;
	const char *export_needs;
	/* Number of usable devices, or a negative errno (runtime missing...). */
	int (*probe)(char *why, size_t len);
	/*
	 * Allocate shadow and device memory of b->size bytes on b->dev_id. On
	 * failure nothing is held.
	 */
	int (*alloc)(struct gpu_buf *b);
	/* Export the device allocation as a dma-buf into b->dmabuf_fd. */
	int (*export_dmabuf)(struct gpu_buf *b);
	/*
	 * Optional (NULL, or -EOPNOTSUPP where the runtime cannot): export
	 * [off, off + len) of it as a dma-buf of its own into *fd, which the
	 * caller closes (close(2)) before free. off and len are multiples of
	 * 2 MiB (gpu_buf_round's unit).
	 */
	int (*export_range)(struct gpu_buf *b, size_t off, size_t len,
			    int *fd);
	/* Release everything alloc and export_dmabuf acquired. */
	void (*free)(struct gpu_buf *b);
	/*
	 * Optional (NULL, or -ENOSYS where the runtime lacks the call): the
	 * PCI address of device dev as the runtime writes it
	 * ("00000000:3B:00.0"); topology.h normalizes it. After probe.
	 */
	int (*pci_addr)(int dev, char *buf, size_t len);
	/*
	 * Optional (NULL: only an export tells): can device dev export its
	 * memory as a dma-buf at all? 0, or a negative errno with the reason
	 * in why. After probe; allocates nothing.
	 */
	int (*dmabuf_ok)(int dev, char *why, size_t len);
	/*
	 * Optional: 1 where an MPS server shares device dev between processes,
	 * 0 where not, -ENOSYS where the runtime cannot say. After probe.
	 */
	int (*mps)(int dev);
	/* the runtime's calls a copy stream runs over; NULL: no copies */
	const struct gpu_runtime *rt;
};

extern const struct gpu_provider gpu_host_provider;
extern const struct gpu_provider gpu_cuda_provider;
extern const struct gpu_provider gpu_hip_provider;

/*
 * The registry (provider.c): every provider gpu= can name, in the order
 * gpu=auto tries them, host memory last. A runtime is added there.
 */
/* Provider i of the registry, NULL past the last. */
const struct gpu_provider *gpu_provider_nth(unsigned int i);
const struct gpu_provider *gpu_provider_by_name(const char *name);
/*
 * The registry's names into buf, separated by sep and the last two by last:
 * "cuda|hip|host", "cuda, hip or host". Returns buf.
 */
const char *gpu_provider_names(char *buf, size_t len, const char *sep,
			       const char *last);
const struct gpu_provider *gpu_provider_auto(char *why, size_t len);

/*
 * A buffer on device dev_id of prov whose copy waits spin spin_ns (the
 * caller's setting, else gpu_spin_ns()); nothing is allocated yet.
 */
void gpu_buf_init(struct gpu_buf *b, const struct gpu_provider *prov,
		  int dev_id, long spin_ns);
/* Allocate size bytes (rounded: gpu_buf_round). */
int gpu_buf_alloc(struct gpu_buf *b, size_t size);
void gpu_buf_free(struct gpu_buf *b);
/*
 * b->abandoned: the provider keeps what its copies may still touch (priv,
 * its stream and memory) for the process's exit; referenced from here.
 */
void gpu_keep_abandoned(struct gpu_buf *b);
/* Keep p (memory abandoned copies may still use) reachable until exit. */
void gpu_keep_for_exit(void *p);

/*
 * The host shadow of a device provider: anonymous, page-aligned pages that
 * the runtime then page-locks for DMA and io_uring registers as a fixed
 * buffer. gpu_shadow_map fills b->host (b->why on failure).
 */
int gpu_shadow_map(struct gpu_buf *b);
void gpu_shadow_unmap(struct gpu_buf *b);

/*
 * Host pages a runtime may page-lock (the shadow, fence words, the resident
 * kernel's ring): anonymous memory, or where gpu_host_shared is set (the
 * process's runtime is its GPU owner's, remote.h) pages of a memfd that
 * gpu_host_pages_fd hands over. MAP_FAILED with errno on failure.
 */
extern bool gpu_host_shared;
void *gpu_host_pages(size_t len);
void gpu_host_pages_free(void *p, size_t len);
/* The memfd behind pages gpu_host_pages gave while shared, else -1. */
int gpu_host_pages_fd(const void *p);
/*
 * Pages mapped elsewhere from offset 0 of fd (an io_uring's rings, which no
 * socket carries: the owner takes the fd by its number, pidfd_getfd), made
 * known while shared; gpu_host_pages_return forgets them, leaving them
 * mapped. 0 or a negative errno; nothing to do (0) where not shared.
 */
int gpu_host_pages_lend(void *p, size_t len, int fd);
void gpu_host_pages_return(void *p);
/* The fd behind pages lent (gpu_host_pages_lend), else -1. */
int gpu_host_pages_lent_fd(const void *p);

/*
 * Nanoseconds a wait for copies spins before it sleeps, < 0: no sleep; from
 * $DBR_GPU_SPIN_US (microseconds) or the default: what gpu_buf_init gets
 * where the caller has no setting of its own. A value gpu_parse_spin_us
 * refuses counts as unset here (fio's engine refuses the job for it).
 */
long gpu_spin_ns(void);
/*
 * The environment's spin setting: $DBR_GPU_SPIN_US, else $DBR_CUDA_SPIN_US
 * (its older name); NULL where neither is set, else *name says which.
 */
const char *gpu_spin_env(const char **name);
/*
 * A spin setting (name: fio's option gpu_spin_us, or the environment
 * variable it came from): microseconds a wait for GPU copies spins before
 * it sleeps, -1 to spin until they are done; *ns gets it in nanoseconds
 * (-1 stays -1). At most a second: a longer spin is a mistake for -1.
 * -EINVAL with the reason in msg for anything else.
 */
int gpu_parse_spin_us(const char *name, const char *s, long *ns, char *msg,
		      size_t len);
/* CLOCK_MONOTONIC in nanoseconds */
uint64_t gpu_now_ns(void);
/*
 * The same clock as of the kernel's last tick (1-4 ms old), for stamps
 * read once an I/O that need no finer grain: a fraction of the cost.
 */
uint64_t gpu_coarse_ns(void);
/* Has b's deadline passed (the job is stopping and its copies are late)? */
bool gpu_past_deadline(const struct gpu_buf *b);
/* Sleep ns nanoseconds (under a second). */
void gpu_nap(long ns);
/*
 * A poll loop for copies reads their host word each time round, and what
 * costs more (the clock, a system call) only every this many times.
 */
#define GPU_POLL_LOOK_EVERY	16u

/* A poll loop's pause: the CPU's spin-wait hint, where it has one. */
static inline void gpu_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

/*
 * A poll loop's turn: true every GPU_POLL_LOOK_EVERY-th call, when the loop
 * looks at what costs more; else the pause hint, and false.
 */
static inline bool gpu_poll_look(unsigned int *polls)
{
	if (++*polls % GPU_POLL_LOOK_EVERY) {
		gpu_pause();
		return false;
	}
	return true;
}

/* Has a wait that started spinning at t0 (gpu_now_ns) spun spin ns? */
bool gpu_spin_over(uint64_t t0, long spin);

/* Round a buffer size up to what every provider can allocate and export. */
size_t gpu_buf_round(size_t size);

#endif
