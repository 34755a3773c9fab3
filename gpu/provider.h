/* SPDX-License-Identifier: MIT */
/*
 * Memory providers: where a fio thread's I/O buffer lives on the device side.
 *
 * Every provider sits behind one ops table and is chosen by name at run time
 * (gpu=cuda|hip|host); the engine never knows which is underneath. A provider
 * allocates, per fio thread, a host shadow (what fio reads and writes) and a
 * device allocation of the same size, exports the device allocation as a
 * dma-buf on request, and copies between the two asynchronously on one
 * in-order stream per thread. Copies are queued, sent to the runtime in
 * batches (submit), and fenced: a fence returns a ticket, and tickets complete
 * in the order they were handed out. Two copies of the same bytes must be
 * separated by a submit (copies within one batch run in any order).
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

struct gpu_provider;
struct gpu_stream;

/* What a buffer's copy stream did, for the end-of-job report. */
struct gpu_stream_stats {
	unsigned long copies;		/* single copies queued */
	unsigned long calls;		/* runtime copy calls (batch or single) */
	unsigned long launches;		/* copy-kernel launches */
	unsigned long fences;		/* fences recorded */
	unsigned long kernel_fences;	/* of them, written by a copy kernel */
	unsigned long queries;		/* event queries (no host flag) */
	unsigned long waits;		/* blocking waits for a fence */
	unsigned long merged;		/* copies folded into a neighbour's */
	uint64_t call_ns;		/* time in the runtime's copy and fence calls */
};

struct gpu_buf {
	const struct gpu_provider *prov;
	void *priv;		/* provider state */
	void *host;		/* host shadow, page aligned, size bytes */
	size_t size;
	int dev_id;
	int dmabuf_fd;		/* -1 until exported */
	bool host_is_device;	/* shadow is the device memory: no copies */
	long spin_ns;		/* a wait for copies spins this long, then
				 * sleeps (< 0: never sleeps); set by init */
	enum gpu_copy_mode copy_mode;	/* gpu_copy; set by the caller
					 * between gpu_buf_init and alloc */
	struct gpu_stream *stream;	/* device providers' copy stream */
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
	/* Number of usable devices, or a negative errno (runtime missing...). */
	int (*probe)(char *why, size_t len);
	/*
	 * Allocate shadow and device memory of b->size bytes on b->dev_id, with
	 * room for nr_fences fences outstanding at once. On failure nothing is
	 * held.
	 */
	int (*alloc)(struct gpu_buf *b, unsigned int nr_fences);
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
	/* Queue a copy of [off, off + len) between shadow and device. */
	int (*copy)(struct gpu_buf *b, enum gpu_copy_dir dir, size_t off,
		    size_t len);
	/* Send the queued copies to the runtime (one batch where it can). */
	int (*submit)(struct gpu_buf *b);
	/* submit, then record a fence after every copy so far: *ticket */
	int (*fence)(struct gpu_buf *b, uint64_t *ticket);
	/* 1 when fence 'ticket' is done (and so every older one), 0 if not */
	int (*poll)(struct gpu_buf *b, uint64_t ticket);
	/* Block until fence 'ticket' is done. */
	int (*wait)(struct gpu_buf *b, uint64_t ticket);
	/* Block until nothing queued on the stream runs any more (errors). */
	int (*drain)(struct gpu_buf *b);
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
};

extern const struct gpu_provider gpu_host_provider;
extern const struct gpu_provider gpu_cuda_provider;
extern const struct gpu_provider gpu_hip_provider;

const struct gpu_provider *gpu_provider_by_name(const char *name);
const struct gpu_provider *gpu_provider_auto(char *why, size_t len);

/*
 * A buffer on device dev_id of prov whose copy waits spin spin_ns (the
 * caller's setting, else gpu_spin_ns()); nothing is allocated yet.
 */
void gpu_buf_init(struct gpu_buf *b, const struct gpu_provider *prov,
		  int dev_id, long spin_ns);
/* Allocate size bytes (gpu_buf_round) with room for nr_fences fences. */
int gpu_buf_alloc(struct gpu_buf *b, size_t size, unsigned int nr_fences);
void gpu_buf_free(struct gpu_buf *b);
/*
 * b->abandoned: the provider keeps what its copies may still touch (priv,
 * its stream and memory) for the process's exit; referenced from here.
 */
void gpu_keep_abandoned(struct gpu_buf *b);

/*
 * The host shadow of a device provider: anonymous, page-aligned pages that
 * the runtime then page-locks for DMA and io_uring registers as a fixed
 * buffer. gpu_shadow_map fills b->host (b->why on failure).
 */
int gpu_shadow_map(struct gpu_buf *b);
void gpu_shadow_unmap(struct gpu_buf *b);

/* The copy stream's counters (b->stream set: a device provider). */
const struct gpu_stream_stats *gpu_buf_stats(const struct gpu_buf *b);

/*
 * How the stream copies: b->copy_mode, or GPU_COPY_DMA where the copy
 * kernel could not be had; then *why is the runtime's reason, "" where the
 * runtime has no copy kernel. No stream: b->copy_mode, *why "".
 */
enum gpu_copy_mode gpu_buf_copy_mode(const struct gpu_buf *b,
				     const char **why);

/*
 * Nanoseconds a wait for copies spins before it sleeps, < 0: no sleep; from
 * $DBR_GPU_SPIN_US (microseconds) or the default: what gpu_buf_init gets
 * where the caller has no setting of its own.
 */
long gpu_spin_ns(void);
/* CLOCK_MONOTONIC in nanoseconds */
uint64_t gpu_now_ns(void);
/* Has a wait that started spinning at t0 (gpu_now_ns) spun spin ns? */
bool gpu_spin_over(uint64_t t0, long spin);

/* Round a buffer size up to what every provider can allocate and export. */
size_t gpu_buf_round(size_t size);

#endif
