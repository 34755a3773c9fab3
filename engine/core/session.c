// SPDX-License-Identifier: MIT
/*
 * A fio thread's I/O session: ring, buffer, pipeline and registrations set
 * up step by step and torn down once; see session.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dbr_uapi.h"
#include "session.h"
#include "stream.h"

void dbr_sess_init(struct dbr_session *s)
{
	memset(s, 0, sizeof(*s));
	s->buf.dmabuf_fd = -1;
}

static int sess_tables(struct dbr_session *s, const struct dbr_sess_cfg *c,
		       enum dbr_sess_step *step)
{
	int ret;

	/* p2p: dma-buf slots per file; bounce: host slots for all */
	*step = DBR_STEP_BUF_TABLE;
	ret = dbr_ring_register_buf_table(&s->ring, s->p2p ?
					  s->nr_slots * s->pieces : s->pieces);
	if (ret < 0 || !c->register_files)
		return ret;
	*step = DBR_STEP_FILE_TABLE;
	return dbr_ring_register_file_table(&s->ring, s->nr_slots);
}

int dbr_sess_open(struct dbr_session *s, const struct dbr_sess_cfg *c,
		  enum dbr_sess_step *step)
{
	int ret;

	s->p2p = c->p2p;
	s->sync = c->sync;
	s->watch_cq = c->watch_cq;
	s->depth = c->depth ? c->depth : 1;
	s->nr_slots = c->nr_files ? c->nr_files : 1;
	s->pieces = c->pieces ? c->pieces : 1;
	s->max_bs = c->max_bs;
	*step = DBR_STEP_MEM;
	s->slot_live = calloc(s->nr_slots, sizeof(*s->slot_live));
	if (!s->slot_live)
		return -ENOMEM;
	*step = DBR_STEP_RING;
	ret = dbr_ring_init(&s->ring, &c->ring);
	if (ret < 0)
		return ret;
	s->opened = true;
	return sess_tables(s, c, step);
}

int dbr_sess_alloc(struct dbr_session *s, size_t size,
		   enum dbr_sess_step *step)
{
	size_t area = gpu_buf_round(size);
	int ret;

	/* p2p: one dma-buf until the kernel says otherwise */
	*step = DBR_STEP_SPLIT;
	ret = dbr_split_plan(&s->split, area, s->max_bs,
			     s->p2p ? area : DBR_REGBUF_MAX_BYTES,
			     DBR_SPLIT_GRAN);
	if (ret || s->split.nr > s->pieces)
		return -E2BIG;
	*step = DBR_STEP_ALLOC;
	ret = gpu_buf_alloc(&s->buf, size);
	if (ret < 0 || !s->p2p)
		return ret;
	*step = DBR_STEP_EXPORT;
	ret = s->buf.prov->export_dmabuf(&s->buf);
	if (ret < 0)
		gpu_buf_free(&s->buf);
	return ret;
}

int dbr_sess_start(struct dbr_session *s, enum dbr_sess_step *step)
{
	unsigned int k;
	int ret;

	*step = DBR_STEP_PIPE;
	ret = dbr_pipe_init(&s->pipe, &s->ring, &s->buf, s->depth, s->p2p,
			    s->sync, s->watch_cq);
	if (ret < 0)
		return ret;
	s->pipe_ready = true;
	if (s->p2p)
		return 0;
	*step = DBR_STEP_HOST_SLOT;
	for (k = 0; k < s->split.nr; k++) {
		ret = dbr_ring_install_host(&s->ring, k,
					    (char *)s->buf.host + k * s->split.span,
					    dbr_split_len(&s->split, k));
		if (ret < 0)
			return ret;
		s->host_live++;
	}
	return 0;
}

int dbr_sess_upload(struct dbr_session *s)
{
	struct gpu_stream *st = dbr_pipe_stream(&s->pipe);
	uint64_t ticket;
	int ret;

	if (!st)
		return 0;
	ret = gpu_stream_copy(st, GPU_H2D, 0, s->buf.size);
	if (!ret)
		ret = gpu_stream_fence(st, &ticket);
	if (!ret)
		ret = gpu_stream_wait(st, ticket);
	return ret;
}

int dbr_sess_attach(struct dbr_session *s, unsigned int i, int fd)
{
	const int *fds = s->piece_fd ? s->piece_fd : &s->buf.dmabuf_fd;
	int ret;

	if (i >= s->nr_slots || !s->ring.ready)
		return -EINVAL;
	if (!s->p2p)
		return dbr_ring_attach_file(&s->ring, i, fd, -1);
	ret = dbr_ring_attach_pieces(&s->ring, i, fd, i * s->pieces, fds,
				     s->split.nr);
	if (!ret)
		s->slot_live[i] = true;
	return ret;
}

int dbr_sess_split_plan(const struct dbr_session *s, struct dbr_split *sp)
{
	int ret = dbr_split_plan(sp, s->buf.size, s->max_bs,
				 DBR_REGBUF_MAX_BYTES, DBR_SPLIT_GRAN);

	return ret || sp->nr > s->pieces ? -EINVAL : 0;
}

int dbr_sess_split_export(struct dbr_session *s, const struct dbr_split *sp,
			  unsigned int *failed)
{
	const struct gpu_provider *prov = s->buf.prov;
	unsigned int k;
	int ret = 0;

	if (!prov->export_range)
		return -EOPNOTSUPP;
	s->piece_fd = malloc(sp->nr * sizeof(*s->piece_fd));
	if (!s->piece_fd)
		return -ENOMEM;
	s->split = *sp;
	for (k = 0; k < sp->nr; k++)
		s->piece_fd[k] = -1;
	for (k = 0; !ret && k < sp->nr; k++) {
		*failed = k;
		ret = prov->export_range(&s->buf, k * sp->span,
					 dbr_split_len(sp, k), &s->piece_fd[k]);
	}
	return ret;
}

void dbr_sess_detach(struct dbr_session *s, unsigned int i)
{
	if (!s->ring.ready || i >= s->nr_slots)
		return;
	dbr_ring_detach_pieces(&s->ring, i, i * s->pieces,
			       s->slot_live[i] ? s->split.nr : 0);
	s->slot_live[i] = false;
}

/* Nothing may stay registered once the memory goes. */
static void sess_unregister(struct dbr_session *s)
{
	unsigned int i;

	if (!s->ring.ready)
		return;
	dbr_ring_quiesce(&s->ring);
	for (i = 0; s->slot_live && i < s->nr_slots; i++) {
		if (s->slot_live[i])
			dbr_ring_detach_pieces(&s->ring, i, i * s->pieces,
					       s->split.nr);
		s->slot_live[i] = false;
	}
	for (i = 0; i < s->host_live; i++)
		dbr_ring_clear_buf(&s->ring, i, false);
	s->host_live = 0;
}

static void sess_close_pieces(struct dbr_session *s)
{
	unsigned int k;

	for (k = 0; s->piece_fd && k < s->split.nr; k++)
		if (s->piece_fd[k] >= 0)
			close(s->piece_fd[k]);
	free(s->piece_fd);
	s->piece_fd = NULL;
}

void dbr_sess_close(struct dbr_session *s)
{
	sess_unregister(s);
	sess_close_pieces(s);
	/* the copy stream goes before the memory it copies */
	if (s->pipe_ready)
		dbr_pipe_exit(&s->pipe);
	s->pipe_ready = false;
	gpu_buf_free(&s->buf);
	dbr_ring_exit(&s->ring);
	free(s->slot_live);
	s->slot_live = NULL;
}
