/* SPDX-License-Identifier: MIT */
/*
 * Minimal TAP-style checks for the unit tests: each CHECK prints ok/not ok,
 * check_done() prints the tally and returns the exit status automake wants.
 */
#ifndef DBR_TEST_CHECK_H
#define DBR_TEST_CHECK_H

#include <stdio.h>

#include "../fd_count.h"

static int checks_passed, checks_failed;

#define CHECK(cond, ...)						\
	do {								\
		if (cond) {						\
			checks_passed++;				\
			printf("ok - ");				\
		} else {						\
			checks_failed++;				\
			printf("not ok - %s:%d: ", __FILE__, __LINE__);	\
		}							\
		printf(__VA_ARGS__);					\
		printf("\n");						\
	} while (0)

static inline int check_done(const char *name)
{
	printf("%s: %d passed, %d failed\n", name, checks_passed,
	       checks_failed);
	return checks_failed ? 1 : 0;
}

#endif
