// SPDX-License-Identifier: MIT
/* Placeholder until the hip provider lands: answers "not implemented". */
#include <errno.h>
#include <stdio.h>

#include "provider.h"

static int hip_probe(char *why, size_t len)
{
	snprintf(why, len, "the hip provider is not implemented yet");
	return -ENOSYS;
}

const struct gpu_provider gpu_hip_provider = {
	.name	= "hip",
	.probe	= hip_probe,
};
