// SPDX-License-Identifier: MIT
/*
 * DBR_PROFILE's switch and the scaling of its ticks; prof.h says what is
 * timed and why.
 */
#include <stdlib.h>
#include <string.h>

#include "prof.h"

bool dbr_prof_on;

__attribute__((constructor)) static void dbr_prof_read_env(void)
{
	const char *e = getenv("DBR_PROFILE");

	dbr_prof_on = e && *e && strcmp(e, "0") != 0;
}

void dbr_prof_start(struct dbr_prof *p)
{
	memset(p, 0, sizeof(*p));
	if (!dbr_prof_on)
		return;
	p->t0_ns = dbr_prof_ns();
	p->t0_ticks = dbr_prof_ticks();
}

/* ticks per ns since dbr_prof_start: 1 where ticks are ns */
static double ticks_per_ns(const struct dbr_prof *p)
{
	uint64_t ns = dbr_prof_ns() - p->t0_ns;
	uint64_t ticks = dbr_prof_ticks() - p->t0_ticks;

	return ns && ticks ? (double)ticks / (double)ns : 1.0;
}

double dbr_prof_us_per(const struct dbr_prof *p, enum dbr_prof_part part,
		       unsigned long n)
{
	if (!n)
		return 0.0;
	return (double)p->ticks[part] / ticks_per_ns(p) / 1000.0 / (double)n;
}
