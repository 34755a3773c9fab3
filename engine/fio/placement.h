/* SPDX-License-Identifier: MIT */
/*
 * Where a fio thread runs: gpu_dev_ids=auto and gpu_cpus=auto, worked out
 * from sysfs (topology.h) and fio's thread list (peers.h). fio-side, no
 * printing: each answer comes with the words that say why, and the glue
 * applies it and says it. README's "GPU placement" describes the rules.
 */
#ifndef DBR_PLACEMENT_H
#define DBR_PLACEMENT_H

#include <sched.h>
#include <stdbool.h>
#include <stddef.h>

struct gpu_provider;
struct thread_data;

/*
 * Where gpu_cpus=auto (cpus_auto) puts thread t on device dev of p: 0 with
 * set filled, or < 0 to leave it alone; said gets the words either way
 * ("" when cpus_auto is off).
 */
int dbr_cpus_plan(struct thread_data *t, bool cpus_auto,
		  const struct gpu_provider *p, int dev, cpu_set_t *set,
		  char *said, size_t len);

/* What gpu_dev_ids=auto places by: the thread's provider and options. */
struct dbr_auto_ask {
	const struct gpu_provider *prov;
	int count;		/* its devices (probe) */
	const char *gpu;	/* the thread's gpu= value: "auto", "cuda", ... */
	bool cpus_auto;		/* gpu_cpus=auto: the line names the CPUs */
};

/*
 * gpu_dev_ids=auto for thread td: *dev gets its device, planned over every
 * thread that runs beside it. With len, line gets the job's placement line
 * (which thread got which device, and why). 0 or a negative errno.
 */
int dbr_place_auto(struct thread_data *td, const struct dbr_auto_ask *ask,
		   int *dev, char *line, size_t len);

#endif
