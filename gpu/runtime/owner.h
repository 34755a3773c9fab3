/* SPDX-License-Identifier: MIT */
/*
 * The GPU owner: one process per GPU and fio run that holds the GPU's
 * context for every job process of the run (gpu_owner=, remote.h).
 *
 * Why: fio runs jobs as processes unless a job says thread, and each
 * process that opens a GPU context of its own gets the GPU in time slices
 * with every other process's context (without MPS): a job process's copies
 * then wait for its turn, 0.8 ms at 4 processes and 3.1 ms at 16 on an H100
 * (0.04-0.10x of fio's io_uring engine). Contexts of one process share the
 * GPU without slices, so the owner runs every job process's runtime calls
 * in its own context, one thread per job process, and the resident copy
 * kernel (kring.h) of each job process reads that process's ring in host
 * memory that both processes map: a 4 KiB bounce copy costs the job
 * process a few stores, as with job threads, and no call at all.
 *
 * What a job process shares with its owner are memfd pages (the host
 * shadow, the fence words, the kernel's ring, a control page), handed over
 * with SCM_RIGHTS and page-locked by the owner. Every other call goes as one
 * message on a SOCK_SEQPACKET socket bound in the abstract namespace (no
 * file anywhere), named after fio's process, the runtime and the device.
 * Calls that return something wait for the owner's reply; copies, fences
 * and kernel starts do not: the owner runs them in order, and the first one
 * that fails stops its thread's work for that job process (no fence after
 * it completes) and is said on the control page, where the job process
 * looks at every call and while a wait naps.
 *
 * This header is the wire format, shared by remote.c (the job process's
 * side) and owner.c (the owner's); nothing in it knows fio.
 */
#ifndef DBR_GPU_OWNER_H
#define DBR_GPU_OWNER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Bumped whenever a message changes: a job process and an owner of
 * different builds refuse each other. */
#define GPU_OWN_PROTO		2u

/* The owner program, found beside the engine (remote.c says where else). */
#define GPU_OWN_PROGRAM		"dbr-gpu-owner"

/* Calls: one request, and a reply where the call returns something. */
enum gpu_own_op {
	GPU_OWN_HELLO = 1,	/* a[0] proto, a[1] dev_id; fd: control page */
	GPU_OWN_OPEN,		/* a[0] size: probe, open, enter */
	GPU_OWN_CLOSE,
	GPU_OWN_MEM_ALLOC,	/* -> v[0] dptr, v[1] dsize */
	GPU_OWN_MEM_FREE,
	GPU_OWN_HOST_REGISTER,	/* fd, a[0] client address, a[1] len -> v[0] owner address */
	GPU_OWN_HOST_UNREGISTER,	/* a[0] client address */
	GPU_OWN_MAP_HOST,	/* fd, a[0], a[1] -> v[0] device address, v[1] owner address;
				 * a[2] 1 + the number of the job process's fd
				 * to take instead (an io_uring's, pidfd_getfd:
				 * no socket carries one), else 0 */
	GPU_OWN_UNMAP_HOST,	/* a[0] client address */
	GPU_OWN_HOST_DEV_ADDR,	/* a[0] owner address -> v[0] device address */
	GPU_OWN_EXPORT,		/* -> fd, v[0] rt_fd */
	GPU_OWN_EXPORT_RANGE,	/* a[0] off, a[1] len -> fd */
	GPU_OWN_DESCRIBE,	/* -> why: the export kind */
	GPU_OWN_STREAM_CREATE,	/* -> v[0] handle */
	GPU_OWN_STREAM_SYNC,	/* a[0] stream */
	GPU_OWN_STREAM_DESTROY,	/* a[0] stream (no reply) */
	GPU_OWN_EVENT_CREATE,	/* -> v[0] handle */
	GPU_OWN_EVENT_DESTROY,	/* a[0] event (no reply) */
	GPU_OWN_EVENT_RECORD,	/* a[0] event, a[1] stream (no reply) */
	GPU_OWN_EVENT_QUERY,	/* a[0] event -> ret 1 done, 0 not yet */
	GPU_OWN_EVENT_SYNC,	/* a[0] event */
	GPU_OWN_COPY,		/* a[0] stream, a[1] dir, a[2] dst, a[3] src, a[4] len (no reply) */
	GPU_OWN_COPY_BATCH,	/* a[0] stream, n; payload n x {dst, src, len} (no reply) */
	GPU_OWN_WRITE_VALUE,	/* a[0] stream, a[1] device address, a[2] value;
				 * a[3] 1: reply (a stream's first, which may
				 * fail and fall back to events), 0: none */
	GPU_OWN_KERNEL_LOAD,	/* payload: entry name, PTX text -> v[0] module */
	GPU_OWN_KERNEL_UNLOAD,	/* a[0] module (no reply) */
	GPU_OWN_KERNEL_LAUNCH,	/* a[0] stream, a[1] module; payload struct gpu_klaunch (no reply) */
	GPU_OWN_KERNEL_START,	/* a[0] stream, a[1] module, a[2] ring, a[3] host, a[4] dev
				 * (a reply: where it cannot start, passes are launched) */
	GPU_OWN_CPU,		/* -> v[0] user, v[1] system CPU time (ns) of the
				 * owner's thread for this job process */
	GPU_OWN_OPS
};

#define GPU_OWN_ARGS		6
/* Copies one COPY_BATCH carries at most (a pass holds 256). */
#define GPU_OWN_BATCH		256u

struct gpu_own_req {
	uint32_t op;
	uint32_t n;		/* payload entries */
	uint64_t a[GPU_OWN_ARGS];
};

struct gpu_own_copy {
	uint64_t dst, src, len;
};

/*
 * The largest request: a module's PTX text (the resident kernel's is 43
 * KiB; a datagram this size fits the socket's default buffer, 208 KiB).
 */
#define GPU_OWN_MSG_MAX	(128u << 10)

struct gpu_own_rep {
	int32_t ret;		/* 0 or a negative errno (or a count, a flag) */
	uint32_t pad;
	uint64_t v[2];
	char why[192];		/* the runtime's words where ret < 0 */
};

/*
 * The control page: a job process's memfd page the owner maps. The owner
 * says here that its thread for the job process stopped on a failed call
 * that had no reply (err, then why, stored before err).
 */
struct gpu_own_ctl {
	int32_t err;		/* 0, or the negative errno of that call */
	uint32_t pid;		/* the owner's process id */
	char why[192];
};

/*
 * The owner's side (owner.c): serve one job process's connection over the
 * real runtime rt until the job process leaves or its socket closes, then
 * release whatever it left behind (streams, events, modules, page-locked
 * memory, device memory, the context) in reverse order.
 */
struct gpu_runtime;
struct gpu_provider;
void gpu_owner_serve(int sock, const struct gpu_runtime *rt,
		     const struct gpu_provider *prov, int dev_id);

/*
 * One message of iov[0..n) on sock, with fd (-1: none) passed along
 * (SCM_RIGHTS): sendmsg's result, retried on EINTR. Both sides send so.
 */
struct iovec;
ssize_t gpu_own_send(int sock, struct iovec *iov, int n, int fd);

/* The socket's name in the abstract namespace, without its leading NUL. */
int gpu_owner_name(char *buf, size_t len, long run, const char *prov,
		   int dev_id);

#endif
