// SPDX-License-Identifier: MIT
/*
 * The PCI address of a GPU as its runtime tells it, through the provider's
 * pci_addr op (cuDeviceGetPCIBusId, hipDeviceGetPCIBusId), in sysfs's
 * spelling. Device ordinals are the runtime's, as for the providers, in the
 * same process environment (CUDA_VISIBLE_DEVICES, HIP_VISIBLE_DEVICES).
 */
#include <errno.h>

#include "doctor.h"

int dd_gpu_pci_addr(const char *prov, int dev, char *bdf, size_t len)
{
	const struct gpu_provider *p = gpu_provider_by_name(prov);
	char raw[64] = "";
	int ret;

	bdf[0] = '\0';
	if (!p || !p->pci_addr)
		return -ENODEV;
	ret = p->pci_addr(dev, raw, sizeof(raw));
	if (ret < 0)
		return ret;
	return dbr_bdf_normalize(raw, bdf, len);
}
