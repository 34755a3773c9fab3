// SPDX-License-Identifier: MIT
/*
 * gpu_check: drive a memory provider the way the engine does, without fio:
 * through the engine's per-thread session (engine/core/session.h: ring, buffer,
 * pipeline and its copy stream, the host slot).
 *
 *   gpu_check                 every provider compiled in: those whose runtime
 *                             is present run the checks on device 0, the
 *                             others must fail their probe cleanly (a
 *                             negative errno and a reason)
 *   gpu_check PROVIDER [-d IDS] [-t THREADS] [-m MIB] [-x try|require|refuse|skip]
 *                      [-k MS] [-f] [-c auto|dma|kernel] [-K resident|launch]
 *   gpu_check ptx [kring]     print the copy kernel's PTX (kcopy_ptx.h), or
 *                             the resident kernel's (kring_ptx.h)
 *
 * Per thread (device = entry i mod n of IDS, as gpu_dev_ids): set up the
 * session, fill the shadow, copy it to the device, clear the shadow, copy it back in chunks
 * each with its own marker (polled, then waited), compare; then small
 * copies both ways, every other 4 KiB block and an odd-sized one, up to
 * 600 a pass (the copy kernel's path with gpu_copy=auto|kernel, -c: how
 * the stream copies), compared, the blocks between them untouched; export the
 * device memory as a dma-buf (-x: try, must succeed, must fail cleanly,
 * or skip) and show its /proc/self/fdinfo exporter; keep everything for -k
 * milliseconds (to watch nvidia-smi); tear the session down; check no fd
 * was leaked.
 * -f: the allocation, or else the copy stream over it, must fail cleanly
 * (failure injection).
 * Exit: 0 pass, 1 fail, 77 the provider's runtime or device is absent.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dbr_config.h"
#include "kcopy.h"
#include "kring.h"
#include "provider.h"
#include "session.h"
#include "stream.h"
#include "../fd_count.h"

#define NR_CHUNKS	4
#define NR_FENCES	300	/* room for 602 copies queued before a submit */
#define SMALL		4096u

enum export_mode { EXP_TRY, EXP_REQUIRE, EXP_REFUSE, EXP_SKIP };

static struct {
	const struct gpu_provider *prov;
	int ids[DBR_MAX_DEV_IDS];
	int nr_ids;
	int threads;
	size_t size;
	enum export_mode exp;
	int keep_ms;
	bool want_alloc_fail;
	enum gpu_copy_mode copy;
	enum gpu_kernel_mode kernel;
	pthread_barrier_t keep;
} opt = {
	.threads = 1,
	.size = 8UL << 20,
	.exp = EXP_TRY,
};

struct worker {
	pthread_t thr;
	int idx;
	int dev;
	int ret;
	char line[1024];
};

/* "exp_name: nv_dmabuf size: 8388608" from the fd's fdinfo */
static void fdinfo(int fd, char *out, size_t len)
{
	char path[64], l[256], name[64] = "?";
	unsigned long long size = 0;
	FILE *f;

	out[0] = '\0';
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(l, sizeof(l), f)) {
		sscanf(l, "exp_name: %63s", name);
		sscanf(l, "size: %llu", &size);
	}
	fclose(f);
	snprintf(out, len, "exp_name: %s size: %llu", name, size);
}

static unsigned char pattern(size_t i, int seed)
{
	return (unsigned char)(i * 7 + (i >> 12) + seed * 31);
}

/*
 * Shadow -> device -> shadow: one fence after the upload, then a fence per
 * chunk copied back (one batch each), polled newest first; 0 or <0.
 */
static int round_trip(struct gpu_stream *s, int seed, unsigned long *not_ready)
{
	struct gpu_buf *b = s->buf;
	size_t chunk = b->size / NR_CHUNKS, i;
	unsigned char *h = b->host;
	uint64_t t[NR_CHUNKS], up;
	int ret, c;

	for (i = 0; i < b->size; i++)
		h[i] = pattern(i, seed);
	ret = gpu_stream_copy(s, GPU_H2D, 0, b->size);
	if (!ret)
		ret = gpu_stream_fence(s, &up);
	if (!ret)
		ret = gpu_stream_wait(s, up);
	if (ret)
		return ret;
	memset(h, 0, b->size);
	for (c = 0; c < NR_CHUNKS; c++) {
		ret = gpu_stream_copy(s, GPU_D2H, c * chunk, chunk);
		if (!ret)
			ret = gpu_stream_fence(s, &t[c]);
		if (ret)
			return ret;
	}
	while ((ret = gpu_stream_poll(s, t[NR_CHUNKS - 1])) == 0)
		(*not_ready)++;
	if (ret < 0)
		return ret;
	for (c = 0; c < NR_CHUNKS; c++) {
		ret = gpu_stream_poll(s, t[c]);
		if (ret != 1)
			return ret < 0 ? ret : -EPROTO;
	}
	for (i = 0; i < b->size; i++)
		if (h[i] != pattern(i, seed)) {
			snprintf(b->why, sizeof(b->why), "byte %zu is 0x%02x after the round trip, want 0x%02x",
				 i, h[i], pattern(i, seed));
			return -EIO;
		}
	return 0;
}

/* every other block from `from` on (at most 600), and one odd-sized copy */
static int small_copies(struct gpu_stream *s, enum gpu_copy_dir dir,
			size_t from, uint64_t *t)
{
	struct gpu_buf *b = s->buf;
	size_t off;
	int ret = 0, n = 0;

	for (off = from; !ret && off + SMALL <= b->size && n < 600;
	     off += 2 * SMALL, n++)
		ret = gpu_stream_copy(s, dir, off, SMALL);
	if (!ret)
		ret = gpu_stream_copy(s, dir, SMALL + 8, 100);	/* in a gap: DMA */
	if (!ret)
		ret = gpu_stream_fence(s, t);
	return ret;
}

static bool small_copied(size_t i, size_t from, size_t end)
{
	if (i >= SMALL + 8 && i < SMALL + 108)
		return true;
	return i >= from && i < end && ((i - from) / SMALL) % 2 == 0;
}

/*
 * Small copies there and back: the shadow's pattern to the device, the
 * shadow cleared, the blocks copied back; the scatter's bytes must be in
 * host memory once its fence says done (polled, not waited).
 */
static int small_trip(struct gpu_stream *s, int seed, unsigned long *not_ready)
{
	struct gpu_buf *b = s->buf;
	size_t from = 4 * SMALL, end, i;
	unsigned char *h = b->host;
	uint64_t t;
	int ret;

	end = from + 2 * SMALL * 600;
	for (i = 0; i < b->size; i++)
		h[i] = pattern(i, seed + 1);
	ret = small_copies(s, GPU_H2D, from, &t);
	if (!ret)
		ret = gpu_stream_wait(s, t);
	if (ret)
		return ret;
	memset(h, 0, b->size);
	ret = small_copies(s, GPU_D2H, from, &t);
	while (!ret && (ret = gpu_stream_poll(s, t)) == 0)
		(*not_ready)++;
	if (ret < 0)
		return ret;
	for (i = 0; i < b->size; i++) {
		unsigned char want = small_copied(i, from, end) ?
				     pattern(i, seed + 1) : 0;

		if (h[i] != want) {
			snprintf(b->why, sizeof(b->why), "small copies: byte %zu is 0x%02x, want 0x%02x",
				 i, h[i], want);
			return -EIO;
		}
	}
	return 0;
}

/* "copies by copy kernel ..., 4 kernel launches, 0 passes ..., 3 runtime calls" */
static void copy_summary(const struct gpu_stream *s, char *out, size_t len)
{
	const struct gpu_stream_stats *st = &s->st;
	char how[320];

	gpu_stream_describe(s, s->buf, how, sizeof(how));
	snprintf(out, len, "copies by %s, %lu kernel launches, %lu passes to the resident kernel (%lu starts), %lu runtime calls",
		 how, st->launches, st->passes, st->starts, st->calls);
}

static int check_export(struct gpu_buf *b, char *out, size_t len)
{
	char info[160];
	int ret;

	if (opt.exp == EXP_SKIP) {
		snprintf(out, len, "export not tried");
		return 0;
	}
	ret = b->prov->export_dmabuf(b);
	if (ret) {
		snprintf(out, len, "export refused: %s (%s)%s%s", strerror(-ret),
			 b->why[0] ? b->why : "no detail",
			 b->export_kind[0] ? "; memory: " : "", b->export_kind);
		if (opt.exp == EXP_REQUIRE || (opt.exp == EXP_REFUSE && !b->why[0]))
			return -1;
		return 0;
	}
	fdinfo(b->dmabuf_fd, info, sizeof(info));
	snprintf(out, len, "dma-buf fd %d: %s%s%s", b->dmabuf_fd,
		 info[0] ? info : "(no fdinfo)", b->export_kind[0] ? "; " : "",
		 b->export_kind);
	return opt.exp == EXP_REFUSE ? -1 : 0;
}

static const char *const step_names[] = {
	[DBR_STEP_MEM]		= "session memory",
	[DBR_STEP_RING]		= "io_uring_setup",
	[DBR_STEP_BUF_TABLE]	= "the buffer table",
	[DBR_STEP_FILE_TABLE]	= "the file table",
	[DBR_STEP_ALLOC]	= "alloc",
	[DBR_STEP_EXPORT]	= "export",
	[DBR_STEP_PIPE]		= "copy stream",
	[DBR_STEP_HOST_SLOT]	= "host slot",
};

/*
 * The engine's session for one thread on w->dev: ring, buffer, pipeline
 * with its copy stream, the host buffer registered. 0 when set up; with -f,
 * 1 when the provider's part of it (alloc, or the copy stream over it)
 * failed cleanly; else -1.
 */
static int set_up(struct worker *w, struct dbr_session *s)
{
	struct dbr_sess_cfg c = {
		.ring = { .entries = 4, .sqpoll_cpu = -1 },
		.depth = NR_FENCES,
		.nr_files = 1,
	};
	enum dbr_sess_step step;
	struct gpu_buf *b = &s->buf;
	int ret;

	dbr_sess_init(s);
	gpu_buf_init(b, opt.prov, w->dev, gpu_spin_ns());
	b->copy_mode = opt.copy;
	b->kernel_mode = opt.kernel;
	ret = dbr_sess_open(s, &c, &step);
	if (!ret)
		ret = dbr_sess_alloc(s, opt.size, &step);
	if (!ret)
		ret = dbr_sess_start(s, &step);
	if (!ret) {
		if (!opt.want_alloc_fail)
			return 0;
		snprintf(w->line, sizeof(w->line), "alloc and copy stream succeeded, a failure was expected");
		return -1;
	}
	snprintf(w->line, sizeof(w->line), "%s %zu MiB on device %d failed: %s (%s)",
		 step_names[step], b->size >> 20, w->dev, strerror(-ret),
		 b->why[0] ? b->why : "no detail");
	if (!opt.want_alloc_fail || !b->why[0])
		return -1;
	if (step == DBR_STEP_ALLOC)
		return b->priv ? -1 : 1;
	return step == DBR_STEP_PIPE ? 1 : -1;
}

/* The copies, on the session's copy stream. */
static int run_copies(struct dbr_session *ss, int seed,
		      unsigned long *not_ready, char *how, size_t len,
		      const char **step)
{
	struct gpu_stream *s = dbr_pipe_stream(&ss->pipe);
	int ret;

	*step = "the round trip";
	ret = round_trip(s, seed, not_ready);
	if (!ret) {
		*step = "the small copies";
		ret = small_trip(s, seed, not_ready);
	}
	if (!ret)
		copy_summary(s, how, len);
	return ret;
}

static int run_one(struct worker *w, struct dbr_session *s)
{
	struct gpu_buf *b = &s->buf;
	unsigned long not_ready = 0;
	char exp[384], how[512] = "";
	const char *step;
	int ret;

	ret = set_up(w, s);
	if (ret)
		return ret > 0 ? 0 : -1;
	if (dbr_pipe_stream(&s->pipe)) {
		ret = run_copies(s, w->idx, &not_ready, how, sizeof(how), &step);
		if (ret) {
			snprintf(w->line, sizeof(w->line), "copies failed in %s: %s (%s)",
				 step, strerror(-ret), b->why[0] ? b->why : "no detail");
			return ret;
		}
	}
	ret = check_export(b, exp, sizeof(exp));
	snprintf(w->line, sizeof(w->line), "%zu MiB on device %d, copies %s (%lu polls not ready%s%s), %s",
		 b->size >> 20, w->dev,
		 dbr_pipe_stream(&s->pipe) ? "verified" : "not needed",
		 not_ready, how[0] ? "; " : "", how, exp);
	return ret;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct dbr_session s;

	w->ret = run_one(w, &s);
	if (opt.keep_ms) {
		pthread_barrier_wait(&opt.keep);
		usleep(opt.keep_ms * 1000);
	}
	dbr_sess_close(&s);
	if (s.buf.priv || s.buf.host || s.buf.dmabuf_fd >= 0 || s.ring.ready) {
		snprintf(w->line + strlen(w->line), sizeof(w->line) - strlen(w->line),
			 "; the teardown left state behind");
		w->ret = -1;
	}
	return NULL;
}

static int run_provider(void)
{
	char why[192] = "";
	struct worker *w;
	int i, n, fds, fails = 0;

	n = opt.prov->probe(why, sizeof(why));
	if (n <= 0) {
		printf("gpu_check: %s: probe: %s: %s\n", opt.prov->name,
		       strerror(n ? -n : ENODEV), why[0] ? why : "no reason given");
		return n < 0 && why[0] ? 77 : 1;
	}
	printf("gpu_check: %s: %d device%s\n", opt.prov->name, n, n == 1 ? "" : "s");
	fds = count_fds();
	w = calloc(opt.threads, sizeof(*w));
	if (!w)
		return 1;
	if (opt.keep_ms)
		pthread_barrier_init(&opt.keep, NULL, opt.threads);
	for (i = 0; i < opt.threads; i++) {
		w[i].idx = i;
		w[i].dev = dbr_pick_dev(opt.ids, opt.nr_ids, i);
		if (pthread_create(&w[i].thr, NULL, worker_main, &w[i]))
			return 1;
	}
	for (i = 0; i < opt.threads; i++) {
		pthread_join(w[i].thr, NULL);
		printf("gpu_check: %s thread %d: %s: %s\n", opt.prov->name, i,
		       w[i].ret ? "FAIL" : "ok", w[i].line);
		fails += !!w[i].ret;
	}
	if (opt.keep_ms)
		pthread_barrier_destroy(&opt.keep);
	free(w);
	if (count_fds() != fds) {
		printf("gpu_check: %s: %d fds open before, %d after\n",
		       opt.prov->name, fds, count_fds());
		fails++;
	}
	return fails ? 1 : 0;
}

/* No arguments: every provider compiled in, present or cleanly absent. */
static int self_test(void)
{
	unsigned int i;
	int ret = 0, r;

	for (i = 0; (opt.prov = gpu_provider_nth(i)); i++) {
		r = run_provider();
		if (r == 77)
			continue;
		ret |= r;
	}
	return ret;
}

static int parse(int argc, char **argv)
{
	char msg[256];
	int c;

	opt.prov = gpu_provider_by_name(argv[1]);
	if (!opt.prov) {
		fprintf(stderr, "gpu_check: no provider %s\n", argv[1]);
		return -1;
	}
	optind = 2;
	while ((c = getopt(argc, argv, "d:t:m:x:k:fc:K:")) != -1) {
		switch (c) {
		case 'd':
			opt.nr_ids = dbr_parse_dev_ids(optarg, opt.ids,
						       DBR_MAX_DEV_IDS, msg,
						       sizeof(msg));
			if (opt.nr_ids < 0) {
				fprintf(stderr, "gpu_check: %s\n", msg);
				return -1;
			}
			break;
		case 't':
			opt.threads = atoi(optarg) > 0 ? atoi(optarg) : 1;
			break;
		case 'm':
			opt.size = (size_t)atoi(optarg) << 20;
			break;
		case 'x':
			opt.exp = !strcmp(optarg, "require") ? EXP_REQUIRE :
				  !strcmp(optarg, "refuse") ? EXP_REFUSE :
				  !strcmp(optarg, "skip") ? EXP_SKIP : EXP_TRY;
			break;
		case 'k':
			opt.keep_ms = atoi(optarg);
			break;
		case 'f':
			opt.want_alloc_fail = true;
			break;
		case 'c':
			opt.copy = !strcmp(optarg, "dma") ? GPU_COPY_DMA :
				   !strcmp(optarg, "kernel") ? GPU_COPY_KERNEL :
				   GPU_COPY_AUTO;
			break;
		case 'K':
			opt.kernel = !strcmp(optarg, "launch") ? GPU_KERNEL_LAUNCH :
				     GPU_KERNEL_RESIDENT;
			break;
		default:
			return -1;
		}
	}
	return 0;
}

/* gpu_check ptx [kring]: the copy kernel's PTX, or what the engine loads as the resident one */
static int print_ptx(bool kring)
{
	char why[256];
	const char *ptx = kring ? gpu_kring_ptx(why, sizeof(why)) : gpu_kcopy_ptx();

	if (!ptx) {
		fprintf(stderr, "gpu_check: %s\n", why);
		return 1;
	}
	return fputs(ptx, stdout) < 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	opt.nr_ids = 1;		/* device 0 unless -d says otherwise */
	if (argc < 2)
		return self_test();
	if (!strcmp(argv[1], "ptx"))
		return print_ptx(argc > 2 && !strcmp(argv[2], "kring"));
	if (parse(argc, argv))
		return 2;
	return run_provider();
}
