// SPDX-License-Identifier: MIT
/* Placeholder until the cuda provider lands: answers "not implemented". */
#include <errno.h>
#include <stdio.h>

#include "provider.h"

static int cuda_probe(char *why, size_t len)
{
	snprintf(why, len, "the cuda provider is not implemented yet");
	return -ENOSYS;
}

const struct gpu_provider gpu_cuda_provider = {
	.name	= "cuda",
	.probe	= cuda_probe,
};
