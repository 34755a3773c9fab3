/* SPDX-License-Identifier: MIT */
/*
 * sysfs trees built as fixtures, for the unit tests of the code that reads
 * /sys (topology.c, iommu.c): files and symbolic links under <root>/sys,
 * which DBR_SYSFS_ROOT points the engine at. A test fills root (mkdtemp)
 * before the first put. Failing to build the fixture is a hard error (99).
 */
#ifndef DBR_TEST_SYSFS_FIXTURE_H
#define DBR_TEST_SYSFS_FIXTURE_H

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char root[512];

/* sys/<rel> with text as its contents; text NULL: a directory */
static void put(const char *rel, const char *text)
{
	char path[PATH_MAX], *slash;
	FILE *f;

	snprintf(path, sizeof(path), "%s/sys/%s", root, rel);
	for (slash = path + strlen(root) + 1; (slash = strchr(slash, '/'));
	     slash++) {
		*slash = '\0';
		mkdir(path, 0755);
		*slash = '/';
	}
	if (!text) {
		mkdir(path, 0755);
		return;
	}
	f = fopen(path, "w");
	if (!f || fprintf(f, "%s\n", text) < 0 || fclose(f)) {
		perror(path);
		exit(99);
	}
}

/* sys/<rel> -> <root>/sys/<target> */
static void link_to(const char *rel, const char *target)
{
	char path[PATH_MAX], dest[PATH_MAX];

	put(rel, NULL);
	snprintf(path, sizeof(path), "%s/sys/%s", root, rel);
	rmdir(path);
	snprintf(dest, sizeof(dest), "%s/sys/%s", root, target);
	if (symlink(dest, path) < 0) {
		perror(path);
		exit(99);
	}
}

#endif
