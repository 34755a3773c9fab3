// SPDX-License-Identifier: MIT
/*
 * Per-GPU results without fio: the JSON line (escapes, fio's arithmetic),
 * the run's table added up by forked processes the way fio's job processes
 * add to it (one of them, the last, gets the sums), a new run starting
 * afresh, O_APPEND lines that never interleave, the open error with no
 * descriptor left behind, and the threads' I/O windows: a GPU's line warns
 * when its threads did not do their I/O together.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "results.h"

static struct dbr_result result_on(int dev, unsigned int thread)
{
	struct dbr_result r = {
		.thread = thread, .pid = 1, .dev = dev, .p2p = false,
		.bytes = { 4096 * 100, 0 }, .ios = { 100, 0 },
		.runtime_ms = { 50, 0 }, .copies = 100, .copy_calls = 10,
		.owner_cpu_ns = -1,
	};

	snprintf(r.job, sizeof(r.job), "job");
	snprintf(r.gpu, sizeof(r.gpu), "hip");
	snprintf(r.pci, sizeof(r.pci), "0000:%02x:00.0", (unsigned char)(4 + dev));
	return r;
}

/* a long job name stays valid UTF-8: cut only at a character's end */
static void test_job_name(void)
{
	struct dbr_result r = result_on(0, 0);
	char name[400], buf[4096];
	size_t i, n;
	int len;

	/* 100 bytes of two-byte characters: fio keeps 128, so must we */
	for (i = 0; i < 50; i++)
		memcpy(name + 2 * i, "\xc3\xa9", 2);
	name[100] = '\0';
	dbr_result_set_job(&r, name);
	CHECK(!strcmp(r.job, name), "a 100-byte name is kept whole");
	len = dbr_result_json(&r, "1-2", buf, sizeof(buf));
	CHECK(len > 0 && strstr(buf, name), "and written whole");
	/* 1 + 3-byte characters past the buffer: cut before a partial one */
	name[0] = 'x';
	for (i = 0; i < 130; i++)
		memcpy(name + 1 + 3 * i, "\xe2\x82\xac", 3);
	name[1 + 3 * 130] = '\0';
	dbr_result_set_job(&r, name);
	n = strlen(r.job);
	CHECK(n < sizeof(r.job) && n > 200 && (n - 1) % 3 == 0 &&
	      !strncmp(r.job, name, n), "a 391-byte name is cut at a character's end (%zu bytes)", n);
	dbr_result_set_job(&r, NULL);
	CHECK(!r.job[0], "no name: empty");
}

static void test_json(void)
{
	struct dbr_result r = result_on(1, 3);
	char buf[1024];
	int len;

	snprintf(r.job, sizeof(r.job), "a\"b\\c\nd");
	r.bytes[DBR_WR] = 1000;
	r.ios[DBR_WR] = 3;
	r.runtime_ms[DBR_WR] = 7;
	len = dbr_result_json(&r, "12-34", buf, sizeof(buf));
	CHECK(len > 0 && buf[len - 1] == '\n' && !memchr(buf, '\n', len - 1),
	      "one line, newline-terminated: %.*s", len > 0 ? len - 1 : 0, buf);
	CHECK(strstr(buf, "\"job\":\"a\\\"b\\\\c\\u000ad\""),
	      "quotes, backslashes and control characters escaped");
	CHECK(strstr(buf, "\"run\":\"12-34\"") && strstr(buf, "\"gpu\":\"hip\",\"dev\":1,\"pci\":\"0000:05:00.0\",\"path\":\"bounce\""),
	      "run, GPU, PCI address and path");
	/* fio: bw_bytes = 1000 * bytes / runtime (integer), iops in double */
	CHECK(strstr(buf, "\"read_bytes\":409600,\"read_ios\":100,\"read_runtime_ms\":50,\"read_bw_bytes\":8192000,\"read_iops\":2000.000000"),
	      "read figures as fio works them out");
	CHECK(strstr(buf, "\"write_bw_bytes\":142857,\"write_iops\":428.571429"),
	      "write figures as fio works them out");
	r.copied_ios = 90;
	r.cq_copies = 40;
	r.copy_ns = 2250000;
	r.copy_wait_ns = 36000;
	len = dbr_result_json(&r, "12-34", buf, sizeof(buf));
	CHECK(len > 0 && strstr(buf, "\"copies\":100,\"copy_calls\":10,\"copy_launches\":0,\"copy_passes\":0,\"cq_copies\":40,\"copied_ios\":90,\"copy_ns\":2250000,\"copy_wait_ns\":36000,\"reissues\":0"),
	      "copies, the I/O they served, their latency and the waiting, summed: %s", buf);
	CHECK(strstr(buf, "\"error\":0,\"owner_cpu_ns\":null,"),
	      "no GPU owner: its CPU is null, not 0: %s", buf);
	r.owner_cpu_ns = 1234567;
	len = dbr_result_json(&r, "12-34", buf, sizeof(buf));
	CHECK(len > 0 && strstr(buf, "\"owner_cpu_ns\":1234567,"),
	      "the GPU owner's CPU for the job: %s", buf);
	r.owner_cpu_ns = -1;
	r.gpu[0] = '\0';
	r.pci[0] = '\0';
	r.dev = -1;
	len = dbr_result_json(&r, "1-2", buf, sizeof(buf));
	CHECK(len > 0 && strstr(buf, "\"gpu\":null,\"dev\":-1,\"pci\":null"),
	      "a thread without a GPU: null");
	CHECK(dbr_result_json(&r, "1-2", buf, 40) == -ENOSPC,
	      "a line that does not fit: -ENOSPC");
	len = dbr_result_json(&r, "1-2", buf, sizeof(buf));
	CHECK(len > 0 && strstr(buf, "\"io_start_ms\":null,\"io_end_ms\":null}"),
	      "no I/O window: null");
	r.io_first_ns = 5000250000ULL;
	r.io_last_ns = 6000500000ULL;
	len = dbr_result_json(&r, "1-2", buf, sizeof(buf));
	CHECK(len > 0 && strstr(buf, "\"io_start_ms\":5000.250,\"io_end_ms\":6000.500}"),
	      "the I/O window in CLOCK_MONOTONIC milliseconds: %s", buf);
}

/* JSON of any bytes: valid UTF-8 whole, every other byte as \u00XX */
static void test_json_utf8(void)
{
	static const struct { const char *in, *want; } cases[] = {
		{ "a\xff" "b", "a\\u00ffb" },
		{ "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80" },
		/* a character cut short, then an ASCII byte */
		{ "\xe2\x82" "x", "\\u00e2\\u0082x" },
		/* overlong NUL, a surrogate, past U+10FFFF, a lone continuation */
		{ "\xc0\x80", "\\u00c0\\u0080" },
		{ "\xed\xa0\x80", "\\u00ed\\u00a0\\u0080" },
		{ "\xf4\x90\x80\x80", "\\u00f4\\u0090\\u0080\\u0080" },
		{ "\x80", "\\u0080" },
		/* a character cut by the string's end */
		{ "\xc3", "\\u00c3" },
		{ "\"\\\x01\x7f", "\\\"\\\\\\u0001\x7f" },
	};
	char out[64], ch[DBR_JSON_CHAR_MAX];
	const char *s;
	size_t i, n;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		out[0] = '\0';
		for (s = cases[i].in; *s;) {
			n = dbr_json_char(&s, ch);
			CHECK(n == strlen(ch) && n < DBR_JSON_CHAR_MAX,
			      "case %zu: one character's text, %zu bytes", i, n);
			strcat(out, ch);
		}
		CHECK(!strcmp(out, cases[i].want), "case %zu: '%s', want '%s'",
		      i, out, cases[i].want);
	}
}

/* The last of nr processes to end gets the sums: it exits 10, others 0. */
static int child_ends(long run, int nr, int i)
{
	struct dbr_result r = result_on(i % 2, i);
	struct dbr_gpu_sum sums[DBR_MAX_GPU_SUMS];
	bool more = false;
	int n;

	dbr_tally_join(run, nr);
	usleep(1000 * (i % 3));
	n = dbr_tally_end(run, nr, &r, sums, DBR_MAX_GPU_SUMS, &more);
	if (!n)
		return 0;
	if (n != 2 || more || sums[0].dev != 0 || sums[1].dev != 1)
		return 1;
	if (sums[0].threads != (unsigned int)(nr + 1) / 2 ||
	    sums[1].threads != (unsigned int)nr / 2)
		return 2;
	if (sums[0].bytes[DBR_RD] != sums[0].threads * 409600ULL ||
	    sums[1].copies != sums[1].threads * 100UL ||
	    sums[0].bw[DBR_RD] != sums[0].threads * 8192000ULL ||
	    strcmp(sums[1].pci, "0000:05:00.0"))
		return 3;
	return 10;
}

static void test_tally_processes(void)
{
	int nr = 5, i, status, last = 0, bad = 0;
	pid_t pid;

	for (i = 0; i < nr; i++) {
		pid = fork();
		if (pid == 0)
			_exit(child_ends(4242, nr, i));
	}
	while ((pid = wait(&status)) > 0) {
		if (!WIFEXITED(status) || (WEXITSTATUS(status) &&
					   WEXITSTATUS(status) != 10))
			bad++;
		last += WIFEXITED(status) && WEXITSTATUS(status) == 10;
	}
	CHECK(last == 1 && !bad,
	      "5 job processes: exactly one, the last, gets the sums per GPU (%d did, %d wrong)",
	      last, bad);
}

static void test_new_run(void)
{
	struct dbr_result r = result_on(0, 0);
	struct dbr_gpu_sum sums[4];
	bool more = false;
	char id[48];
	int n;

	/* an earlier run left half done (fio --server runs many) */
	dbr_tally_join(777, 3);
	dbr_tally_end(777, 3, &r, sums, 4, &more);
	dbr_tally_join(778, 2);
	dbr_tally_run_id(id, sizeof(id));
	CHECK(!strncmp(id, "778-", 4), "run id names the run: %s", id);
	n = dbr_tally_end(778, 2, &r, sums, 4, &more);
	CHECK(n == 0, "first of two threads: no sums yet");
	n = dbr_tally_end(778, 2, NULL, sums, 4, &more);
	CHECK(n == 1 && sums[0].threads == 1 && !more,
	      "a new run starts afresh; a thread with no results only counts");
	n = dbr_tally_end(778, 2, &r, sums, 4, &more);
	CHECK(n == 0, "the sums are said once");
}

static void test_more_than_fit(void)
{
	struct dbr_gpu_sum sums[2];
	bool more = false;
	int i, n = 0;

	dbr_tally_join(900, 3);
	for (i = 0; i < 3; i++) {
		struct dbr_result r = result_on(i, i);

		n = dbr_tally_end(900, 3, &r, sums, 2, &more);
	}
	CHECK(n == 2 && more, "sums that do not fit the caller's array: said so");
}

static void test_line(void)
{
	struct dbr_result r = result_on(1, 0);
	struct dbr_gpu_sum sums[1];
	bool more;
	char line[512];

	r.error = 5;
	dbr_tally_join(1000, 1);
	dbr_tally_end(1000, 1, &r, sums, 1, &more);
	dbr_gpu_sum_line(&sums[0], false, line, sizeof(line));
	CHECK(!strcmp(line, "hip 1 (0000:05:00.0) bounce: 1 thread (1 failed), read 0.39 MiB in 100 I/O (2000 IOPS, 7.81 MiB/s), 100 GPU copies in 10 runtime calls"),
	      "summary line: %s", line);
}

/*
 * Stonewalled groups run one after the other: the same GPU in two groups is
 * two sums (their rates would not add), in group order, and names its group.
 */
static void test_groups(void)
{
	struct dbr_result a = result_on(1, 0), b = result_on(1, 1);
	struct dbr_gpu_sum sums[4];
	bool more;
	char line[512];
	int n;

	a.group = 1;
	b.group = 0;
	dbr_tally_join(1100, 2);
	dbr_tally_end(1100, 2, &a, sums, 4, &more);
	n = dbr_tally_end(1100, 2, &b, sums, 4, &more);
	CHECK(n == 2 && sums[0].group == 0 && sums[1].group == 1 &&
	      sums[0].threads == 1 && sums[1].threads == 1,
	      "one GPU in two groups: two sums, group 0 first (%d sums)", n);
	dbr_gpu_sum_line(&sums[1], true, line, sizeof(line));
	CHECK(!strncmp(line, "group 1: hip 1 ", 15), "the line names its group: %s",
	      line);
}

/*
 * Three threads on one GPU, each with a 1 s I/O window: fio adds their
 * rates up as if they ran at once. Windows that overlap (started 10 ms
 * apart) give no warning; windows one after another (the resident kernel's
 * module loads once serialised a job's threads so) make the line say so.
 */
static void windows_sum(long run, const uint64_t *first, struct dbr_gpu_sum *s)
{
	struct dbr_result r[3];
	bool more;
	int i;

	dbr_tally_join(run, 3);
	for (i = 0; i < 3; i++) {
		r[i] = result_on(0, i);
		r[i].io_first_ns = first[i];
		r[i].io_last_ns = first[i] + 1000000000ULL;
		dbr_tally_end(run, 3, &r[i], s, 1, &more);
	}
}

static void test_together(void)
{
	static const uint64_t close[3] = { 1000000000, 1010000000, 1005000000 };
	static const uint64_t serial[3] = { 1000000000, 2000000000, 3000000000 };
	struct dbr_gpu_sum s;
	char line[768];

	windows_sum(1200, close, &s);
	dbr_gpu_sum_line(&s, false, line, sizeof(line));
	CHECK(s.timed == 3 && dbr_gpu_sum_together(&s) > 0.98 &&
	      dbr_gpu_sum_together(&s) < 0.991 && !strstr(line, "together"),
	      "windows 10 ms apart: together %.3f, no warning: %s",
	      dbr_gpu_sum_together(&s), line);
	windows_sum(1300, serial, &s);
	dbr_gpu_sum_line(&s, false, line, sizeof(line));
	CHECK(dbr_gpu_sum_together(&s) == 0 &&
	      strstr(line, "; but its threads did I/O together for only 0% of their time"),
	      "windows one after another: together %.3f, and the line says so: %s",
	      dbr_gpu_sum_together(&s), line);
}

static void test_append(void)
{
	char path[] = "/tmp/dbr-results-XXXXXX", line[2048];
	int nr = 4, per = 300, i, j, fd, before = count_fds(), lines = 0, whole = 0;
	FILE *f;

	fd = mkstemp(path);
	close(fd);
	for (i = 0; i < nr; i++) {
		if (fork() == 0) {
			struct dbr_result r = result_on(i % 2, i);
			int out = dbr_results_open(path);

			for (j = 0; j < per && out >= 0; j++)
				if (dbr_result_append(out, &r, "1-1") < 0)
					_exit(1);
			_exit(out < 0);
		}
	}
	while (wait(NULL) > 0)
		;
	f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f)) {
		size_t n = strlen(line);

		lines++;
		whole += !strncmp(line, "{\"run\":\"1-1\",", 13) &&
			 n > 2 && !strcmp(line + n - 2, "}\n");
	}
	if (f)
		fclose(f);
	unlink(path);
	CHECK(lines == nr * per && whole == lines,
	      "4 processes x 300 appends: %d lines, %d whole", lines, whole);
	CHECK(dbr_results_open("/nonexistent-dir/stats.jsonl") == -ENOENT,
	      "a missing directory: -ENOENT");
	CHECK(dbr_results_open("/tmp") == -EISDIR, "a directory: -EISDIR");
	CHECK(count_fds() == before, "no descriptor left behind (%d, was %d)",
	      count_fds(), before);
}

/*
 * A record the file cannot take whole (here a file size limit that cuts
 * the write short, as a full file system does): the real errno, and the
 * file as it was, so the next record starts a line of its own.
 */
static void test_append_cut(void)
{
	char path[] = "/tmp/dbr-results-XXXXXX";
	struct dbr_result r = result_on(0, 0);
	struct stat st;
	int fd, status = -1;
	pid_t pid;

	fd = mkstemp(path);
	CHECK(fd >= 0 && write(fd, "{}\n", 3) == 3, "a file with one line");
	close(fd);
	pid = fork();
	if (pid == 0) {
		struct rlimit rl = { .rlim_cur = 103, .rlim_max = RLIM_INFINITY };
		int out = dbr_results_open(path), ret;

		/* past the limit: EFBIG, not the signal that kills */
		signal(SIGXFSZ, SIG_IGN);
		if (out < 0 || setrlimit(RLIMIT_FSIZE, &rl) < 0)
			_exit(2);
		ret = dbr_result_append(out, &r, "1-1");
		_exit(ret == -EFBIG ? 0 : 1);
	}
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "a write cut short: its errno, EFBIG (status %d)", status);
	CHECK(stat(path, &st) == 0 && st.st_size == 3,
	      "and no part of the record left in the file (%lld bytes, 3 before)",
	      (long long)st.st_size);
	unlink(path);
}

int main(void)
{
	test_job_name();
	test_json();
	test_json_utf8();
	test_append_cut();
	CHECK(dbr_tally_map() == 0, "the shared table maps");
	test_tally_processes();
	test_new_run();
	test_more_than_fit();
	test_line();
	test_groups();
	test_together();
	test_append();
	dbr_tally_unmap();
	return check_done("test_results");
}
