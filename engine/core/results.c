// SPDX-License-Identifier: MIT
/*
 * Per-GPU results: one JSON line per thread, and the run's sums per GPU and
 * path in a table shared by every thread and job process of the run.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dbr_config.h"
#include "results.h"

static const char *const dir_names[DBR_NR_DIRS] = { "read", "write" };

/* fio's own arithmetic (stat.c): bytes and I/O over the direction's runtime */
uint64_t dbr_result_bw(const struct dbr_result *r, int dir)
{
	uint64_t ms = r->runtime_ms[dir];

	return ms ? 1000 * r->bytes[dir] / ms : 0;
}

double dbr_result_iops(const struct dbr_result *r, int dir)
{
	uint64_t ms = r->runtime_ms[dir];

	return ms ? 1000.0 * (double)r->ios[dir] / (double)ms : 0.0;
}

void dbr_result_set_gpu(struct dbr_result *r, const char *gpu, int dev,
			const char *pci)
{
	snprintf(r->gpu, sizeof(r->gpu), "%s", gpu);
	r->dev = dev;
	r->pci[0] = '\0';
	if (pci && pci[0] && dbr_bdf_normalize(pci, r->pci, sizeof(r->pci)) < 0)
		r->pci[0] = '\0';
}

/* ------------------------------------------------------------------------ */
/* JSON Lines                                                               */

struct jbuf {
	char *buf;
	size_t len, used;
	bool over;
};

static void jcat(struct jbuf *j, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (j->over)
		return;
	va_start(ap, fmt);
	n = vsnprintf(j->buf + j->used, j->len - j->used, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= j->len - j->used)
		j->over = true;
	else
		j->used += n;
}

/* a valid UTF-8 sequence's length at c (RFC 3629: no overlong forms, no
 * surrogates, nothing past U+10FFFF), or 0 where c starts none */
static size_t utf8_seq(const unsigned char *c)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t n, i;

	if (*c < 0x80)
		return 1;
	if (*c >= 0xc2 && *c <= 0xdf)
		n = 2;
	else if (*c >= 0xe0 && *c <= 0xef)
		n = 3;
	else if (*c >= 0xf0 && *c <= 0xf4)
		n = 4;
	else
		return 0;
	if (*c == 0xe0)
		lo = 0xa0;
	else if (*c == 0xed)
		hi = 0x9f;
	else if (*c == 0xf0)
		lo = 0x90;
	else if (*c == 0xf4)
		hi = 0x8f;
	/* stops at the NUL too: it is no continuation byte */
	for (i = 1; i < n; i++, lo = 0x80, hi = 0xbf)
		if (c[i] < lo || c[i] > hi)
			return 0;
	return n;
}

size_t dbr_json_char(const char **s, char *out)
{
	const unsigned char *c = (const unsigned char *)*s;
	size_t n = utf8_seq(c);

	if (n == 1 && (*c == '"' || *c == '\\')) {
		out[0] = '\\';
		out[1] = (char)*c;
		out[2] = '\0';
		*s += 1;
		return 2;
	}
	/* control characters, and bytes of no UTF-8 character as Latin-1 */
	if (!n || *c < 0x20) {
		snprintf(out, DBR_JSON_CHAR_MAX, "\\u%04x", *c);
		*s += 1;
		return 6;
	}
	memcpy(out, c, n);
	out[n] = '\0';
	*s += n;
	return n;
}

/* "key": "s" with JSON's escapes; an empty s as null */
static void jstr(struct jbuf *j, const char *key, const char *s)
{
	char ch[DBR_JSON_CHAR_MAX];

	if (!s[0]) {
		jcat(j, ",\"%s\":null", key);
		return;
	}
	jcat(j, ",\"%s\":\"", key);
	while (*s) {
		dbr_json_char(&s, ch);
		jcat(j, "%s", ch);
	}
	jcat(j, "\"");
}

int dbr_result_json(const struct dbr_result *r, const char *run, char *buf,
		    size_t len)
{
	struct jbuf j = { .buf = buf, .len = len };
	int d;

	jcat(&j, "{\"run\":\"%s\"", run);
	jstr(&j, "job", r->job);
	jcat(&j, ",\"thread\":%u,\"group\":%u,\"pid\":%d", r->thread,
	     r->group, r->pid);
	jstr(&j, "gpu", r->gpu);
	jcat(&j, ",\"dev\":%d", r->dev);
	jstr(&j, "pci", r->pci);
	jcat(&j, ",\"path\":\"%s\"", r->p2p ? "p2p" : "bounce");
	for (d = 0; d < DBR_NR_DIRS; d++)
		jcat(&j, ",\"%s_bytes\":%" PRIu64 ",\"%s_ios\":%" PRIu64
		     ",\"%s_runtime_ms\":%" PRIu64 ",\"%s_bw_bytes\":%" PRIu64
		     ",\"%s_iops\":%.6f",
		     dir_names[d], r->bytes[d], dir_names[d], r->ios[d],
		     dir_names[d], r->runtime_ms[d], dir_names[d],
		     dbr_result_bw(r, d), dir_names[d], dbr_result_iops(r, d));
	jcat(&j, ",\"copies\":%lu,\"copy_calls\":%lu,\"copy_launches\":%lu,\"copy_passes\":%lu,\"cq_copies\":%lu",
	     r->copies, r->copy_calls, r->copy_launches, r->copy_passes,
	     r->cq_copies);
	jcat(&j, ",\"copied_ios\":%lu,\"copy_ns\":%" PRIu64 ",\"copy_wait_ns\":%" PRIu64,
	     r->copied_ios, r->copy_ns, r->copy_wait_ns);
	jcat(&j, ",\"reissues\":%lu,\"error\":%d", r->reissues, r->error);
	if (r->owner_cpu_ns >= 0)
		jcat(&j, ",\"owner_cpu_ns\":%" PRId64, r->owner_cpu_ns);
	else
		jcat(&j, ",\"owner_cpu_ns\":null");
	if (r->io_first_ns && r->io_last_ns >= r->io_first_ns)
		jcat(&j, ",\"io_start_ms\":%.3f,\"io_end_ms\":%.3f",
		     r->io_first_ns / 1e6, r->io_last_ns / 1e6);
	else
		jcat(&j, ",\"io_start_ms\":null,\"io_end_ms\":null");
	jcat(&j, "}\n");
	return j.over ? -ENOSPC : (int)j.used;
}

/* where a UTF-8 string of n bytes may be cut to at most max bytes */
static size_t utf8_cut(const char *s, size_t n, size_t max)
{
	if (n <= max)
		return n;
	/* back over continuation bytes (10xxxxxx) to a character's start */
	while (max && ((unsigned char)s[max] & 0xc0) == 0x80)
		max--;
	return max;
}

void dbr_result_set_job(struct dbr_result *r, const char *name)
{
	size_t n = name ? strlen(name) : 0;

	n = utf8_cut(name, n, sizeof(r->job) - 1);
	if (n)
		memcpy(r->job, name, n);
	r->job[n] = '\0';
}

int dbr_results_open(const char *path)
{
	/* O_NONBLOCK: a FIFO nobody reads answers ENXIO instead of hanging */
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC |
			    O_NONBLOCK, 0644);
	struct stat st;
	int flags;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || S_ISBLK(st.st_mode) || S_ISDIR(st.st_mode) ||
	    S_ISSOCK(st.st_mode))
		goto bad;
	/* records are whole lines: a full pipe waits, as a disk would */
	flags = fcntl(fd, F_GETFL);
	if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0)
		goto bad;
	return fd;
bad:
	close(fd);
	return -EINVAL;
}

/*
 * One write with O_APPEND: a whole line, never mixed with another's. A file
 * system that fills up takes a part of it: the rest is tried, which says
 * why (ENOSPC, where a bare short count would not), and failing that the
 * part is cut off again, so the file holds whole lines only and the next
 * record, once there is room, starts a line of its own.
 */
int dbr_result_append(int fd, const struct dbr_result *r, const char *run)
{
	char line[3072];
	int len = dbr_result_json(r, run, line, sizeof(line));
	ssize_t ret, done;
	off_t start;
	int err, cut;

	if (len < 0)
		return len;
	ret = write(fd, line, len);
	if (ret == len)
		return 0;
	if (ret < 0)
		return -errno;
	/* O_APPEND left this descriptor's offset at the part's end (a FIFO
	 * has none: it takes a line this short whole) */
	start = lseek(fd, 0, SEEK_CUR) - ret;
	for (done = ret; done < len; done += ret) {
		ret = write(fd, line + done, len - done);
		if (ret <= 0)
			goto err_cut;
	}
	return 0;
err_cut:
	err = ret < 0 ? -errno : -EIO;
	/* a cut that fails as well changes nothing the caller can do */
	cut = start >= 0 ? ftruncate(fd, start) : 0;
	(void)cut;
	return err;
}

/* ------------------------------------------------------------------------ */
/* the run's table                                                          */

struct dbr_tally {
	pthread_mutex_t lock;
	long run;		/* fio's backend process; 0: none yet */
	long long started_ms;	/* realtime at the run's first join */
	unsigned int expected;	/* threads of the run */
	unsigned int done;	/* threads that ended */
	bool said;		/* the last thread took the sums */
	bool more;		/* a GPU and path that did not fit */
	unsigned int once;	/* DBR_ONCE_* lines said in this run */
	int nr;
	struct dbr_gpu_sum sums[DBR_MAX_GPU_SUMS];
};

/* where the shared mapping could not be made: this process's threads only */
static struct dbr_tally local_tally = { .lock = PTHREAD_MUTEX_INITIALIZER };
static struct dbr_tally *tally = &local_tally;

int dbr_tally_map(void)
{
	pthread_mutexattr_t attr;
	struct dbr_tally *t;
	int ret;

	t = mmap(NULL, sizeof(*t), PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (t == MAP_FAILED)
		return -errno;
	pthread_mutexattr_init(&attr);
	ret = pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
	/* a job process killed inside the lock must not hang the others */
	if (!ret)
		ret = pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
	if (!ret)
		ret = pthread_mutex_init(&t->lock, &attr);
	pthread_mutexattr_destroy(&attr);
	if (ret) {
		munmap(t, sizeof(*t));
		return -ret;
	}
	tally = t;
	return 0;
}

bool dbr_tally_once(unsigned int bit)
{
	return !(__atomic_fetch_or(&tally->once, bit, __ATOMIC_RELAXED) & bit);
}

void dbr_tally_unmap(void)
{
	if (tally == &local_tally)
		return;
	pthread_mutex_destroy(&tally->lock);
	munmap(tally, sizeof(*tally));
	tally = &local_tally;
}

static struct dbr_tally *tally_lock(void)
{
	struct dbr_tally *t = tally;

	if (pthread_mutex_lock(&t->lock) == EOWNERDEAD)
		pthread_mutex_consistent(&t->lock);
	return t;
}

static void tally_unlock(struct dbr_tally *t)
{
	pthread_mutex_unlock(&t->lock);
}

/* the first thread of a run starts the table afresh (fio --server runs many) */
static void tally_join_locked(struct dbr_tally *t, long run,
			      unsigned int expected)
{
	struct timespec now;

	if (t->run == run)
		return;
	clock_gettime(CLOCK_REALTIME, &now);
	t->run = run;
	t->started_ms = (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000;
	t->expected = expected;
	t->done = 0;
	t->said = false;
	t->more = false;
	t->nr = 0;
	memset(t->sums, 0, sizeof(t->sums));
}

void dbr_tally_join(long run, unsigned int expected)
{
	struct dbr_tally *t = tally_lock();

	tally_join_locked(t, run, expected);
	tally_unlock(t);
}

void dbr_tally_run_id(char *buf, size_t len)
{
	struct dbr_tally *t = tally_lock();

	snprintf(buf, len, "%ld-%lld", t->run, t->started_ms);
	tally_unlock(t);
}

static struct dbr_gpu_sum *tally_sum_of(struct dbr_tally *t,
					const struct dbr_result *r)
{
	struct dbr_gpu_sum *s;
	int i;

	for (i = 0; i < t->nr; i++) {
		s = &t->sums[i];
		if (s->group == r->group && !strcmp(s->gpu, r->gpu) &&
		    s->dev == r->dev && s->p2p == r->p2p)
			return s;
	}
	if (t->nr == DBR_MAX_GPU_SUMS) {
		t->more = true;
		return NULL;
	}
	s = &t->sums[t->nr++];
	s->group = r->group;
	memcpy(s->gpu, r->gpu, sizeof(s->gpu));
	s->dev = r->dev;
	s->p2p = r->p2p;
	return s;
}

/* s's threads were all doing I/O from the latest first to the earliest last */
static void tally_window(struct dbr_gpu_sum *s, const struct dbr_result *r)
{
	if (!r->io_first_ns || r->io_last_ns < r->io_first_ns)
		return;
	if (!s->timed || r->io_first_ns > s->latest_first_ns)
		s->latest_first_ns = r->io_first_ns;
	if (!s->timed || r->io_last_ns < s->earliest_last_ns)
		s->earliest_last_ns = r->io_last_ns;
	s->window_ns += (double)(r->io_last_ns - r->io_first_ns);
	s->timed++;
}

/*
 * The share of a thread's I/O time, on average, that all of s's threads
 * spent doing I/O at once; 1 with fewer than two timed threads. fio adds
 * up its threads' rates as if they ran together: well below 1, they did
 * not, and the sum is not a rate the device was ever driven at.
 */
double dbr_gpu_sum_together(const struct dbr_gpu_sum *s)
{
	double mean;

	if (s->timed < 2)
		return 1;
	mean = s->window_ns / s->timed;
	if (mean <= 0)
		return 1;
	if (s->earliest_last_ns <= s->latest_first_ns)
		return 0;
	return (double)(s->earliest_last_ns - s->latest_first_ns) / mean;
}

static void tally_add(struct dbr_tally *t, const struct dbr_result *r)
{
	struct dbr_gpu_sum *s;
	int d;

	/* a thread refused before it had a GPU has nothing to add */
	if (!r->gpu[0] || !(s = tally_sum_of(t, r)))
		return;
	if (!s->pci[0])
		memcpy(s->pci, r->pci, sizeof(s->pci));
	s->threads++;
	s->failed += r->error != 0;
	for (d = 0; d < DBR_NR_DIRS; d++) {
		s->bytes[d] += r->bytes[d];
		s->ios[d] += r->ios[d];
		s->bw[d] += dbr_result_bw(r, d);
		s->iops[d] += dbr_result_iops(r, d);
	}
	s->copies += r->copies;
	s->copy_calls += r->copy_calls;
	s->copy_launches += r->copy_launches;
	s->copy_passes += r->copy_passes;
	tally_window(s, r);
}

static int sum_cmp(const void *a, const void *b)
{
	const struct dbr_gpu_sum *x = a, *y = b;
	int c = strcmp(x->gpu, y->gpu);

	if (x->group != y->group)
		return x->group < y->group ? -1 : 1;
	if (c)
		return c;
	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	return (int)x->p2p - (int)y->p2p;
}

int dbr_tally_end(long run, unsigned int expected, const struct dbr_result *r,
		  struct dbr_gpu_sum *out, int max, bool *more)
{
	struct dbr_tally *t = tally_lock();
	int n = 0;

	tally_join_locked(t, run, expected);
	if (r)
		tally_add(t, r);
	t->done++;
	if (!t->said && t->done >= t->expected) {
		t->said = true;
		n = t->nr < max ? t->nr : max;
		memcpy(out, t->sums, n * sizeof(*out));
		*more = t->more || t->nr > max;
	}
	tally_unlock(t);
	qsort(out, n, sizeof(*out), sum_cmp);
	return n;
}

/* ------------------------------------------------------------------------ */
/* the summary line                                                         */

static void cat_size(char *buf, size_t len, double bytes, const char *per)
{
	if (bytes >= (double)(1ULL << 30))
		dbr_cat(buf, len, "%.2f GiB%s", bytes / (1ULL << 30), per);
	else
		dbr_cat(buf, len, "%.2f MiB%s", bytes / (1ULL << 20), per);
}

static void cat_iops(char *buf, size_t len, double iops)
{
	if (iops >= 1e6)
		dbr_cat(buf, len, "%.2fM IOPS", iops / 1e6);
	else if (iops >= 1e4)
		dbr_cat(buf, len, "%.1fk IOPS", iops / 1e3);
	else
		dbr_cat(buf, len, "%.0f IOPS", iops);
}

void dbr_gpu_sum_line(const struct dbr_gpu_sum *s, bool groups, char *buf,
		      size_t len)
{
	double together;
	bool any = false;
	int d;

	buf[0] = '\0';
	if (groups)
		dbr_cat(buf, len, "group %u: ", s->group);
	dbr_cat(buf, len, "%s %d", s->gpu, s->dev);
	if (s->pci[0])
		dbr_cat(buf, len, " (%s)", s->pci);
	dbr_cat(buf, len, " %s: %u thread%s", s->p2p ? "p2p" : "bounce",
	    s->threads, s->threads == 1 ? "" : "s");
	if (s->failed)
		dbr_cat(buf, len, " (%u failed)", s->failed);
	for (d = 0; d < DBR_NR_DIRS; d++) {
		if (!s->ios[d])
			continue;
		any = true;
		dbr_cat(buf, len, ", %s ", dir_names[d]);
		cat_size(buf, len, (double)s->bytes[d], "");
		dbr_cat(buf, len, " in %" PRIu64 " I/O (", s->ios[d]);
		cat_iops(buf, len, s->iops[d]);
		dbr_cat(buf, len, ", ");
		cat_size(buf, len, (double)s->bw[d], "/s");
		dbr_cat(buf, len, ")");
	}
	if (!any)
		dbr_cat(buf, len, ", no I/O");
	if (s->copies)
		dbr_cat(buf, len, ", %lu GPU copies in %lu runtime calls", s->copies,
		    s->copy_calls);
	if (s->copy_launches)
		dbr_cat(buf, len, " and %lu kernel launches", s->copy_launches);
	if (s->copy_passes)
		dbr_cat(buf, len, " and %lu passes to the resident kernel",
			s->copy_passes);
	if (!s->copies)
		dbr_cat(buf, len, ", no GPU copies");
	together = dbr_gpu_sum_together(s);
	if (together < DBR_TOGETHER_MIN)
		dbr_cat(buf, len, "; but its threads did I/O together for only %.0f%% of their time, so these sums are not a rate reached at once (threads that started late or ran one after another)",
			100 * together);
}
