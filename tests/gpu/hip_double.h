/* SPDX-License-Identifier: MIT */
/* What the HIP runtime double shares with the ROCr double. */
#ifndef DBR_HIP_DOUBLE_H
#define DBR_HIP_DOUBLE_H

#include <stddef.h>
#include <stdint.h>

/*
 * Export [ptr, ptr + size) of a hipMalloc allocation as a dma-buf through
 * /dev/udmabuf: 0 and *fd, or -EOPNOTSUPP (no udmabuf, or refused on
 * request), -EINVAL (not device memory), another negative errno.
 */
int hipdouble_export(const void *ptr, size_t size, int *fd, uint64_t *off);

#endif
