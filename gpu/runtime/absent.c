// SPDX-License-Identifier: MIT
/*
 * Providers left out at configure time still answer by name, so gpu=cuda on
 * a build without CUDA says what to rebuild instead of "unknown value".
 */
#include <errno.h>
#include <stdio.h>

#include <config.h>
#include "provider.h"

#if !defined(DBR_HAVE_CUDA) || !defined(DBR_HAVE_HIP)
#define ABSENT_HELP	"Not in this build (reconfigure with its --with-... switch)"

static int absent_probe(char *why, size_t len)
{
	snprintf(why, len, "this build of dmabuf_uring has no such provider (reconfigure with its --with-... switch)");
	return -ENOTSUP;
}
#endif

#ifndef DBR_HAVE_CUDA
const struct gpu_provider gpu_cuda_provider = {
	.name	= "cuda",
	.help	= ABSENT_HELP,
	.probe	= absent_probe,
};
#endif

#ifndef DBR_HAVE_HIP
const struct gpu_provider gpu_hip_provider = {
	.name	= "hip",
	.help	= ABSENT_HELP,
	.probe	= absent_probe,
};
#endif
