// SPDX-License-Identifier: MIT
/*
 * The PCI address of a GPU as its runtime tells it. The provider interface
 * (gpu/provider.h) has no such question, so the doctor asks the runtime
 * directly, through the same libraries the providers load: libcuda.so.1
 * (cuDeviceGetPCIBusId) and libamdhip64.so (hipDeviceGetPCIBusId). Device
 * ordinals are the runtime's, as for the providers, in the same process
 * environment (CUDA_VISIBLE_DEVICES, HIP_VISIBLE_DEVICES).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "doctor.h"

typedef int (*init_fn)(unsigned int flags);
typedef int (*get_fn)(int *dev, int ordinal);
typedef int (*busid_fn)(char *buf, int len, int dev);

static void *open_lib(const char *const *names)
{
	void *h = NULL;

	for (; *names && !h; names++)
		h = dlopen(*names, RTLD_NOW | RTLD_LOCAL);
	return h;
}

static int cuda_busid(void *lib, int dev, char *out, int len)
{
	init_fn cu_init = (init_fn)dlsym(lib, "cuInit");
	get_fn cu_get = (get_fn)dlsym(lib, "cuDeviceGet");
	busid_fn cu_busid = (busid_fn)dlsym(lib, "cuDeviceGetPCIBusId");
	int cudev;

	if (!cu_init || !cu_get || !cu_busid)
		return -ENOSYS;
	if (cu_init(0) || cu_get(&cudev, dev) || cu_busid(out, len, cudev))
		return -ENODEV;
	return 0;
}

static int hip_busid(void *lib, int dev, char *out, int len)
{
	busid_fn hip_busid = (busid_fn)dlsym(lib, "hipDeviceGetPCIBusId");

	if (!hip_busid)
		return -ENOSYS;
	return hip_busid(out, len, dev) ? -ENODEV : 0;
}

int dd_gpu_pci_addr(const char *prov, int dev, char *bdf, size_t len)
{
	static const char *const cuda_libs[] = { "libcuda.so.1", NULL };
	static const char *const hip_libs[] = {
		"libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5", NULL,
	};
	bool cuda = !strcmp(prov, "cuda");
	char raw[64] = "";
	void *lib;
	int ret;

	bdf[0] = '\0';
	if (!cuda && strcmp(prov, "hip"))
		return -ENODEV;
	lib = open_lib(cuda ? cuda_libs : hip_libs);
	if (!lib)
		return -ENOENT;
	ret = cuda ? cuda_busid(lib, dev, raw, sizeof(raw)) :
		     hip_busid(lib, dev, raw, sizeof(raw));
	dlclose(lib);
	if (ret < 0)
		return ret;
	return dbr_bdf_normalize(raw, bdf, len);
}
