/* SPDX-License-Identifier: MIT */
/*
 * One fio thread's I/O session, free of fio: its ring (with the buffer and
 * file tables), its buffer (host shadow and device memory, exported for
 * p2p), its pipeline (with the copy stream over the buffer's runtime) and
 * its slot registrations (the host buffer for bounce, a dma-buf bound to
 * each target file for p2p), each registered in pieces where it is larger
 * than the kernel takes in one (dbr_split): buffer slot k for bounce,
 * file i's slots i * pieces + k for p2p.
 *
 * It is set up in the steps fio's hooks come in: open (init), alloc
 * (iomem_alloc), start and upload (post_init), attach and detach (a target
 * file opened and closed). One call tears it down, in reverse order,
 * whichever step was reached, and may be called again: registrations, the
 * pipeline and its stream, the buffer, the ring. Counters (the ring's
 * reissues, the pipeline's and the stream's) stay readable after it.
 *
 * Functions return 0 or a negative errno; where a call has several steps,
 * *step says which one failed, and buf.why holds the runtime's words. The
 * caller composes the user's message. Nothing prints.
 */
#ifndef DBR_SESSION_H
#define DBR_SESSION_H

#include <stdbool.h>
#include <stddef.h>

#include "dbr_config.h"
#include "pipeline.h"
#include "provider.h"
#include "ring.h"

/* What a session is asked for. */
struct dbr_sess_cfg {
	struct dbr_ring_params ring;
	unsigned int depth;	/* I/O in flight at most (fio's iodepth) */
	unsigned int nr_files;	/* target files: a fixed-file slot each, and
				 * for p2p a buffer slot each */
	bool register_files;	/* a fixed-file table (registerfiles) */
	bool p2p;		/* a dma-buf per file, else the host slot 0 */
	bool sync;		/* gpu_sync: keep the shadow in step */
	bool watch_cq;		/* the resident kernel watches the CQ (gpu_watch_cq) */
	unsigned int pieces;	/* buffer slots per file at most (dbr_split) */
	size_t max_bs;		/* the largest I/O: a piece holds whole ones */
};

/* The step of a set-up call that failed. */
enum dbr_sess_step {
	DBR_STEP_MEM,		/* the session's own memory */
	DBR_STEP_RING,		/* io_uring_setup */
	DBR_STEP_BUF_TABLE,	/* the sparse buffer table */
	DBR_STEP_FILE_TABLE,	/* the sparse file table */
	DBR_STEP_SPLIT,		/* the area needs more pieces than slots */
	DBR_STEP_ALLOC,		/* the buffer */
	DBR_STEP_EXPORT,	/* its dma-buf (p2p) */
	DBR_STEP_PIPE,		/* the pipeline and its copy stream */
	DBR_STEP_HOST_SLOT,	/* the host buffer in slot 0 (bounce) */
};

struct dbr_session {
	struct dbr_ring ring;
	struct gpu_buf buf;	/* named with gpu_buf_init before alloc */
	struct dbr_pipe pipe;
	bool p2p;
	bool sync;
	bool watch_cq;
	unsigned int depth;
	unsigned int nr_slots;	/* files: fixed-file slots, p2p buffer slots */
	bool *slot_live;	/* p2p: the dma-buf pieces of file i installed */
	unsigned int pieces;	/* buffer slots per file in the table */
	size_t max_bs;
	struct dbr_split split;	/* the registered pieces of the buffer area:
				 * bounce's host buffer in pieces of at most
				 * 1 GiB; p2p's dma-buf whole, or split where
				 * the kernel refuses one that large */
	int *piece_fd;		/* p2p split: a dma-buf per piece, else NULL */
	unsigned int host_live;	/* bounce: pieces of the host buffer registered */
	bool opened;		/* the ring was set up (stays set) */
	bool pipe_ready;
};

/* An empty session: dbr_sess_close on it does nothing. */
void dbr_sess_init(struct dbr_session *s);

/* The ring with a buffer slot per file (p2p) or one (bounce), and files. */
int dbr_sess_open(struct dbr_session *s, const struct dbr_sess_cfg *c,
		  enum dbr_sess_step *step);

/* The buffer, size bytes (rounded), exported as a dma-buf for p2p. */
int dbr_sess_alloc(struct dbr_session *s, size_t size,
		   enum dbr_sess_step *step);

/* The pipeline (and copy stream), and for bounce the host buffer's pieces. */
int dbr_sess_start(struct dbr_session *s, enum dbr_sess_step *step);

/* Device memory from the whole host shadow, before any I/O (no stream: 0). */
int dbr_sess_upload(struct dbr_session *s);

/*
 * Target file i opened as fd: its fixed-file slot (with a file table) and,
 * for p2p, its dma-buf slot; all or nothing.
 */
int dbr_sess_attach(struct dbr_session *s, unsigned int i, int fd);

/*
 * p2p, where the kernel refused the dma-buf whole (EINVAL over its size
 * cap): the plan of pieces of at most 1 GiB (-EINVAL: none fits the table),
 * then the buffer exported again as those pieces (-EOPNOTSUPP: the
 * provider cannot; *failed: the piece that failed). Attach again after.
 */
int dbr_sess_split_plan(const struct dbr_session *s, struct dbr_split *sp);
int dbr_sess_split_export(struct dbr_session *s, const struct dbr_split *sp,
			  unsigned int *failed);

/* Undo dbr_sess_attach of file i (nothing once the ring is gone). */
void dbr_sess_detach(struct dbr_session *s, unsigned int i);

/* Everything released in reverse order; idempotent. */
void dbr_sess_close(struct dbr_session *s);

#endif
