/* SPDX-License-Identifier: MIT */
/*
 * The copy stream of a device provider, written once for every GPU runtime:
 * copies between the host shadow and device memory are queued here, go to
 * the runtime together (its batch-copy call where it has one, found at run
 * time, else one call per copy), and a fence records one event after all of
 * them. A stream finishes in order, so one event covers every copy queued
 * before it: tickets (fence numbers) complete in order, and knowing the
 * newest complete ticket answers for all older ones without a call.
 *
 * Where the runtime has stream memory operations, a fence also has the
 * stream write its ticket into a page-locked host word, and "done yet?" is a
 * memory read: the runtime's calls take a process-wide lock, and threads that
 * poll events through it slow every other thread's copies down. A fence is
 * then that one stream write; an event is recorded only when a wait has spun
 * long enough and goes to sleep (it covers everything queued so far, so the
 * ticket waited for too).
 *
 * What differs between runtimes is a small table of calls (struct
 * gpu_runtime, gpu/runtime/runtime.h) that cuda.c and hip.c fill; device.c
 * drives its device part and the pipeline (or any other user of a device
 * buffer) holds a stream.
 */
#ifndef DBR_GPU_STREAM_H
#define DBR_GPU_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "provider.h"
#include "runtime.h"
#include "stream_state.h"

/*
 * A stream copying between b's host shadow and its device memory at
 * dev_base (b->dev_addr) through rt (b->prov->rt), with room for nr_fences
 * fences outstanding at once. It must be exited before b is freed.
 */
int gpu_stream_init(struct gpu_buf *b, struct gpu_stream *s,
		    const struct gpu_runtime *rt, uint64_t dev_base,
		    unsigned int nr_fences);
/* Copies still queued finish, then everything the stream holds goes. */
void gpu_stream_exit(struct gpu_buf *b, struct gpu_stream *s);

/*
 * Copies are queued, sent to the runtime in batches (submit), and fenced:
 * a fence returns a ticket, and tickets complete in the order they were
 * handed out. Two copies of the same bytes must be separated by a submit
 * (copies within one batch run in any order); a fence alone does not order
 * copies before it against copies after it (the resident kernel runs the
 * passes of several fences as one), so the same bytes copied again after a
 * fence need a submit in between, or the fence done. With the resident
 * kernel the copies it takes and those that go to the copy calls run on two
 * engines: copies of one length and alignment always take the same one, and
 * two copies of the same bytes that do not must be separated by a
 * completed fence.
 */
/* Queue a copy of [off, off + len) between shadow and device. */
int gpu_stream_copy(struct gpu_stream *s, enum gpu_copy_dir dir, size_t off,
		    size_t len);
/* Send the queued copies to the runtime (one batch where it can). */
int gpu_stream_submit(struct gpu_stream *s);
/* submit, then record a fence after every copy so far: *ticket */
int gpu_stream_fence(struct gpu_stream *s, uint64_t *ticket);
/* 1 when fence 'ticket' is done (and so every older one), 0 if not */
int gpu_stream_poll(struct gpu_stream *s, uint64_t ticket);
/* Block until fence 'ticket' is done (spinning b->spin_ns first). */
int gpu_stream_wait(struct gpu_stream *s, uint64_t ticket);
/* Block until nothing queued on the stream runs any more (errors). */
int gpu_stream_drain(struct gpu_stream *s);

/*
 * Would a pass of copies of up to len bytes each go to the GPU now for a
 * few stores to host memory, with no runtime call and no wait, in time for
 * the kernel's next round: the resident kernel takes copies that size and
 * fewer than a round's passes wait on its ring (gpu_kring_next_round).
 * Then there is no reason to hold copies back to gather a larger pass.
 */
bool gpu_stream_posts_free(const struct gpu_stream *s, size_t len);
/* Would such a pass go to the resident kernel at all (room there or not)? */
bool gpu_stream_posts(const struct gpu_stream *s, size_t len);

/*
 * How the stream copies: the buffer's copy_mode, or GPU_COPY_DMA where the
 * copy kernel could not be had; then *why is the runtime's reason, "" where
 * the runtime has no copy kernel.
 */
enum gpu_copy_mode gpu_stream_copy_mode(const struct gpu_stream *s,
					const char **why);

/*
 * How copies on stream s over b run (s NULL: no stream made yet, as b's
 * copy_mode asks), for the job's line: "copy kernel under 64 KiB, DMA from
 * 64 KiB", "DMA", or DMA and why the kernel asked for is not used.
 */
void gpu_stream_describe(const struct gpu_stream *s, const struct gpu_buf *b,
			 char *buf, size_t len);

#endif
