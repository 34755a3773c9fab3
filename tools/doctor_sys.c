// SPDX-License-Identifier: MIT
/*
 * Small readers of sysfs and procfs for dmabuf-doctor (the PCIe path and
 * its readers live in engine/core/topology.c). Nothing here prints; errors are
 * negative errnos.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/utsname.h>

#include "doctor.h"

const char *dd_kconf_name(enum dd_kconf k)
{
	static const char *const names[] = {
		[DD_KCONF_UNKNOWN] = NULL, [DD_KCONF_NO] = "n",
		[DD_KCONF_YES] = "y", [DD_KCONF_MODULE] = "m",
	};

	return names[k];
}

int dd_count_dir(const char *path)
{
	struct dirent *de;
	DIR *d = opendir(path);
	int n = 0;

	if (!d)
		return -errno;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

/* ---- kernel config: /proc/config.gz through zlib, or /boot/config-* ---- */

/* zlib is loaded at run time, like the GPU runtimes: no build dependency. */
struct kc_reader {
	void *lib;
	void *gz;
	FILE *f;
	char *(*gzgets)(void *gz, char *buf, int len);
	int (*gzclose)(void *gz);
};

static int kc_open_gz(struct kc_reader *r, const char *path)
{
	void *(*gzopen)(const char *path, const char *mode);

	if (access(path, R_OK) < 0)
		return -errno;
	r->lib = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!r->lib)
		return -ENOENT;
	gzopen = (void *(*)(const char *, const char *))dlsym(r->lib, "gzopen");
	r->gzgets = (char *(*)(void *, char *, int))dlsym(r->lib, "gzgets");
	r->gzclose = (int (*)(void *))dlsym(r->lib, "gzclose");
	if (gzopen && r->gzgets && r->gzclose)
		r->gz = gzopen(path, "rb");
	if (r->gz)
		return 0;
	dlclose(r->lib);
	r->lib = NULL;
	return -ENOENT;
}

static int kc_open(struct kc_reader *r, char *src, size_t srclen)
{
	struct utsname u;

	memset(r, 0, sizeof(*r));
	if (!kc_open_gz(r, "/proc/config.gz")) {
		snprintf(src, srclen, "/proc/config.gz");
		return 0;
	}
	if (uname(&u) < 0)
		return -errno;
	snprintf(src, srclen, "/boot/config-%s", u.release);
	r->f = fopen(src, "re");
	if (r->f)
		return 0;
	src[0] = '\0';
	return -ENOENT;
}

static char *kc_gets(struct kc_reader *r, char *buf, int len)
{
	if (r->gz)
		return r->gzgets(r->gz, buf, len);
	return fgets(buf, len, r->f);
}

static void kc_close(struct kc_reader *r)
{
	if (r->gz)
		r->gzclose(r->gz);
	if (r->lib)
		dlclose(r->lib);
	if (r->f)
		fclose(r->f);
}

static enum dd_kconf kc_line(const char *line, const char *sym, size_t n)
{
	if (!strncmp(line, sym, n) && line[n] == '=')
		return line[n + 1] == 'm' ? DD_KCONF_MODULE :
		       line[n + 1] == 'n' ? DD_KCONF_NO : DD_KCONF_YES;
	return DD_KCONF_UNKNOWN;
}

/*
 * The state of CONFIG_<sym>; a readable config that does not mention it had
 * its dependencies off, which means "no".
 */
enum dd_kconf dd_kconfig(const char *sym, char *src, size_t srclen)
{
	enum dd_kconf k = DD_KCONF_NO;
	struct kc_reader r;
	char line[512];
	size_t n = strlen(sym);

	if (kc_open(&r, src, srclen) < 0)
		return DD_KCONF_UNKNOWN;
	while (kc_gets(&r, line, sizeof(line))) {
		enum dd_kconf v = kc_line(line, sym, n);

		if (v != DD_KCONF_UNKNOWN) {
			k = v;
			break;
		}
	}
	kc_close(&r);
	return k;
}

/* ---- kernel command line ----------------------------------------------- */

static bool is_iommu_param(const char *tok)
{
	static const char *const prefixes[] = {
		"iommu=", "iommu.", "intel_iommu=", "amd_iommu=",
		"amd_iommu_intr=", "pci=noats",
	};
	size_t i;

	for (i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (!strncmp(tok, prefixes[i], strlen(prefixes[i])))
			return true;
	return false;
}

/* The IOMMU settings of /proc/cmdline, space separated ("" when none). */
void dd_cmdline_iommu(char *buf, size_t len)
{
	char line[4096], *tok, *save = NULL;
	size_t used = 0;

	buf[0] = '\0';
	if (dbr_sys_read_str("/proc/cmdline", line, sizeof(line)) < 0)
		return;
	for (tok = strtok_r(line, " \t", &save); tok;
	     tok = strtok_r(NULL, " \t", &save)) {
		if (!strcmp(tok, "--"))	/* init's arguments follow */
			break;
		if (!is_iommu_param(tok) || used + strlen(tok) + 2 > len)
			continue;
		used += snprintf(buf + used, len - used, "%s%s",
				 used ? " " : "", tok);
	}
}
