/* SPDX-License-Identifier: MIT */
/*
 * CKD(call): a CUDA driver call that must succeed; on failure the tool (TOOL,
 * defined before this is included) names the call and the driver's error,
 * and exits. CK is CKD unless cuda_rt_check.h, included first, made it the
 * runtime's.
 */
#ifndef GPU_PROOF_CUDA_CHECK_H
#define GPU_PROOF_CUDA_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#include <cuda.h>

#define CKD(call) do {							\
	CUresult r_ = (call);						\
	if (r_ != CUDA_SUCCESS) {					\
		const char *n_ = "?";					\
		cuGetErrorName(r_, &n_);				\
		fprintf(stderr, "%s: %s: %s\n", TOOL, #call, n_);	\
		exit(1);						\
	}								\
} while (0)

#ifndef CK
#define CK(call) CKD(call)
#endif

#endif
