// SPDX-License-Identifier: MIT
/*
 * Small readers of sysfs and procfs for dmabuf-doctor, and the PCIe topology
 * classification. Nothing here prints; errors are negative errnos.
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

const char *dd_topo_name(enum dd_topo t)
{
	static const char *const names[] = {
		[DD_TOPO_UNKNOWN] = "unknown",
		[DD_TOPO_NA] = "not-applicable",
		[DD_TOPO_SWITCH] = "same-switch",
		[DD_TOPO_ROOT_PORT] = "same-root-port",
		[DD_TOPO_ROOT_COMPLEX] = "same-root-complex",
		[DD_TOPO_HOST_BRIDGES] = "different-host-bridges",
		[DD_TOPO_SOCKETS] = "different-sockets",
	};

	return names[t];
}

const char *dd_kconf_name(enum dd_kconf k)
{
	static const char *const names[] = {
		[DD_KCONF_UNKNOWN] = NULL, [DD_KCONF_NO] = "n",
		[DD_KCONF_YES] = "y", [DD_KCONF_MODULE] = "m",
	};

	return names[k];
}

int dd_read_str(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	while (n > 0 && isspace((unsigned char)buf[n - 1]))
		buf[--n] = '\0';
	return 0;
}

int dd_read_long(const char *path, long *val)
{
	char buf[32], *end;
	int ret = dd_read_str(path, buf, sizeof(buf));

	if (ret < 0)
		return ret;
	errno = 0;
	*val = strtol(buf, &end, 10);
	if (errno || end == buf)
		return -EINVAL;
	return 0;
}

/* "0000:3b:00.0" and nothing else */
static bool is_bdf(const char *s, size_t n)
{
	static const char pat[] = "xxxx:xx:xx.x";
	size_t i;

	if (n != sizeof(pat) - 1)
		return false;
	for (i = 0; i < n; i++) {
		if (pat[i] == 'x' ? !isxdigit((unsigned char)s[i]) :
				    s[i] != pat[i])
			return false;
	}
	return true;
}

/* The PCI function a sysfs device sits below: the last BDF on its path. */
int dd_bdf_of_path(const char *syspath, char *bdf, size_t len)
{
	char real[PATH_MAX];
	const char *p, *found = NULL;

	if (!realpath(syspath, real))
		return -errno;
	for (p = real; p && *p; p = strchr(p, '/')) {
		const char *c = *p == '/' ? p + 1 : p;
		const char *end = strchrnul(c, '/');

		if (is_bdf(c, (size_t)(end - c)))
			found = c;
		p = end;
	}
	if (!found || len <= 12)
		return -ENODEV;
	snprintf(bdf, len, "%.12s", found);
	return 0;
}

int dd_pci_sys_path(const char *bdf, char *buf, size_t len)
{
	char path[96], real[PATH_MAX];

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s", bdf);
	if (!realpath(path, real))
		return -errno;
	if (strlen(real) >= len)
		return -ENAMETOOLONG;
	strcpy(buf, real);
	return 0;
}

int dd_pci_numa(const char *bdf)
{
	char path[96];
	long node;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/numa_node", bdf);
	if (dd_read_long(path, &node) < 0)
		return -1;
	return (int)node;
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
	if (dd_read_str("/proc/cmdline", line, sizeof(line)) < 0)
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

/* ---- PCIe topology ------------------------------------------------------ */

#define DD_MAX_DEPTH	16

/*
 * Split /sys/devices/pci0000:00/0000:00:01.0/.../0000:05:00.0 into its
 * components from the host bridge down; returns the count.
 */
static int split_pci_path(const char *path, char comp[][24], int max)
{
	const char *p = strstr(path, "/pci");
	int n = 0;

	while (p && *p == '/' && n < max) {
		const char *c = p + 1, *end = strchrnul(c, '/');
		size_t len = (size_t)(end - c);

		if (!len || len >= sizeof(comp[0]))
			break;
		memcpy(comp[n], c, len);
		comp[n++][len] = '\0';
		p = end;
	}
	return n;
}

/*
 * Where two PCI functions meet, from their /sys/devices paths: the deepest
 * common ancestor is the host bridge (component 0), a root port (1) or a
 * switch port (2 and deeper). via gets that ancestor's name.
 */
enum dd_topo dd_topo_classify(const char *a, const char *b, int numa_a,
			      int numa_b, char *via, size_t len)
{
	char ca[DD_MAX_DEPTH][24], cb[DD_MAX_DEPTH][24];
	int na = split_pci_path(a, ca, DD_MAX_DEPTH);
	int nb = split_pci_path(b, cb, DD_MAX_DEPTH);
	int k = 0;

	via[0] = '\0';
	if (na < 2 || nb < 2)
		return DD_TOPO_UNKNOWN;
	/* ancestors only: the last component is the function itself */
	while (k < na - 1 && k < nb - 1 && !strcmp(ca[k], cb[k]))
		k++;
	if (k == 0)
		return numa_a >= 0 && numa_b >= 0 && numa_a != numa_b ?
		       DD_TOPO_SOCKETS : DD_TOPO_HOST_BRIDGES;
	snprintf(via, len, "%s", ca[k - 1]);
	if (k == 1)
		return DD_TOPO_ROOT_COMPLEX;
	return k == 2 ? DD_TOPO_ROOT_PORT : DD_TOPO_SWITCH;
}
