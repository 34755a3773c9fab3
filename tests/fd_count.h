/* SPDX-License-Identifier: MIT */
/* Open descriptors of this process, to prove error paths close theirs. */
#ifndef DBR_TEST_FD_COUNT_H
#define DBR_TEST_FD_COUNT_H

#include <dirent.h>

static inline int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1;	/* the DIR's own fd */
}

#endif
