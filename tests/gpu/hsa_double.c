// SPDX-License-Identifier: MIT
/*
 * A test double of ROCr's dma-buf export (libhsa-runtime64.so), for the
 * ROCm 5 flavour of the HIP double that lacks hipMemGetHandleForAddressRange.
 * It exports through the HIP double already loaded in the process.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include "hip_double.h"

typedef int hsa_status_t;

#define HSA_STATUS_SUCCESS			0x0
#define HSA_STATUS_ERROR			0x1000
#define HSA_STATUS_ERROR_INVALID_ARGUMENT	0x1001

hsa_status_t hsa_amd_portable_export_dmabuf(const void *ptr, size_t size,
					    int *dmabuf, uint64_t *offset)
{
	__typeof__(hipdouble_export) *exp = NULL;
	void *hip = dlopen("libamdhip64.so", RTLD_NOW | RTLD_NOLOAD);
	int ret;

	if (!hip)
		return HSA_STATUS_ERROR;
	*(void **)&exp = dlsym(hip, "hipdouble_export");
	dlclose(hip);
	if (!exp || !dmabuf || !offset)
		return HSA_STATUS_ERROR_INVALID_ARGUMENT;
	ret = exp(ptr, size, dmabuf, offset);
	if (ret == -EINVAL)
		return HSA_STATUS_ERROR_INVALID_ARGUMENT;
	return ret ? HSA_STATUS_ERROR : HSA_STATUS_SUCCESS;
}

hsa_status_t hsa_amd_portable_close_dmabuf(int dmabuf)
{
	return close(dmabuf) ? HSA_STATUS_ERROR_INVALID_ARGUMENT :
			       HSA_STATUS_SUCCESS;
}
