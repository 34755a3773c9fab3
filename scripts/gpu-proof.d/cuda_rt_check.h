/* SPDX-License-Identifier: MIT */
/*
 * CK(call): a CUDA runtime call that must succeed; on failure the tool
 * (TOOL, defined before this is included) names the call and the runtime's
 * error, and exits. cuda_check.h is the driver API's.
 */
#ifndef GPU_PROOF_CUDA_RT_CHECK_H
#define GPU_PROOF_CUDA_RT_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime.h>

#define CK(call) do {							\
	cudaError_t e_ = (call);					\
	if (e_ != cudaSuccess) {					\
		fprintf(stderr, "%s: %s: %s\n", TOOL, #call,		\
			cudaGetErrorString(e_));			\
		exit(1);						\
	}								\
} while (0)

#endif
