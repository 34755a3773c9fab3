/* SPDX-License-Identifier: MIT */
/*
 * A job process's GPU runtime, run by the GPU owner (owner.h says why):
 * a provider with the real one's name, probe and PCI answers, whose table
 * of calls (struct gpu_runtime) sends each call to the owner of that GPU
 * for this fio run, starting the owner where none runs yet. device.c,
 * stream.c and resident.c drive it as any runtime; host memory they hand
 * to it comes from gpu_host_pages, which is shared with the owner.
 *
 * One connection per process: fio runs one job thread in a job process.
 */
#ifndef DBR_GPU_REMOTE_H
#define DBR_GPU_REMOTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "provider.h"

/*
 * Connect this process to the owner of real's device dev_id for the fio
 * run whose backend process is run, starting it where none runs; then
 * *remote is the provider that sends real's calls there. 0, or a negative
 * errno with the reason in why (nothing held).
 */
int gpu_remote_connect(const struct gpu_provider *real, int dev_id, long run,
		       const struct gpu_provider **remote, char *why,
		       size_t len);
/* Does prov send its calls to an owner? */
bool gpu_remote_is(const struct gpu_provider *prov);
/* The owner's process id (0: not connected). */
long gpu_remote_owner_pid(void);
/*
 * The CPU time (user + system, ns) the owner's thread for this process has
 * spent on its calls so far, in *ns; 0 or a negative errno.
 */
int gpu_remote_owner_cpu(uint64_t *ns);
/* Close the connection (the owner releases what it still holds for us). */
void gpu_remote_disconnect(void);

#endif
