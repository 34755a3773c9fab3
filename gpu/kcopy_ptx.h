/* SPDX-License-Identifier: MIT */
/*
 * The copy kernels as PTX text, written by hand and loaded at run time
 * (cuModuleLoadData: the driver compiles it for the GPU it runs on), so no
 * CUDA compiler is needed to build the engine. PTX ISA 7.0 / sm_70: any
 * driver from R450 on JITs it, for Volta and every GPU after it.
 * tests/gpu/kcopy_ptx.sh runs ptxas over it (sm_80, sm_90) where ptxas
 * exists. The CUDA C it stands for:
 *
 *	struct kdesc { uint32_t off, len; };	// 16-byte units
 *	struct kdescs { kdesc d[256]; };	// GPU_KCOPY_MAX
 *
 *	__device__ void body(const uint4 *src, uint4 *dst, const kdescs &k)
 *	{
 *		kdesc d = k.d[blockIdx.x];
 *
 *		for (uint32_t i = blockIdx.y * 256 + threadIdx.x; i < d.len;
 *		     i += gridDim.y * 256)
 *			dst[d.off + i] = src[d.off + i];
 *	}
 *	__global__ void __launch_bounds__(256)
 *	dbr_gather(const uint4 *src, uint4 *dst, kdescs k)
 *	{
 *		body(src, dst, k);
 *	}
 *	__global__ void __launch_bounds__(256)
 *	dbr_scatter(const uint4 *src, uint4 *dst, kdescs k)
 *	{
 *		body(src, dst, k);
 *		__threadfence_system();
 *	}
 *
 * One block of 256 threads per descriptor (grid x), each thread moving 16
 * bytes per step, so one 4 KiB block is one step of one block and a warp's
 * loads and stores are 512 contiguous bytes; grid y spreads a longer copy
 * over more blocks, 4 KiB apart. src and dst are the two sides' base
 * addresses: gather (host->device) reads the host staging area through its
 * device mapping and writes device memory, scatter the other way round. The
 * offset of an io_u is the same on both sides (stream.c), so a descriptor
 * is (offset, length) and one kernel parameter block carries a pass.
 *
 * Why scatter ends in membar.sys (__threadfence_system, fence.sc.sys): the
 * stream signals "copies done" by writing a ticket into a host word
 * (cuStreamWriteValue64) after the kernel, and the CPU then hands the host
 * buffer to io_uring. The kernel's stores to host memory leave the SMs as
 * PCIe writes through a path of their own; stream order says the ticket is
 * written after the kernel has finished, not that the kernel's writes have
 * reached host memory by then. membar.sys makes each thread wait until its
 * stores are visible to the whole system (the CPU included) before it
 * exits, so the kernel completes only after every byte is in host memory,
 * and a CPU that sees the ticket sees the data. Gather needs no fence: its
 * stores go to device memory, which the stream's later work and the next
 * kernel see in stream order.
 */
#ifndef DBR_GPU_KCOPY_PTX_H
#define DBR_GPU_KCOPY_PTX_H

#define GPU_KCOPY_BODY(name, label, fence)				\
	".visible .entry " name "(\n"					\
	"	.param .u64 " name "_src,\n"				\
	"	.param .u64 " name "_dst,\n"				\
	"	.param .align 4 .b8 " name "_desc[2048]\n"		\
	")\n"								\
	".maxntid 256, 1, 1\n"						\
	"{\n"								\
	"	.reg .pred	%p<3>;\n"				\
	"	.reg .b32	%r<16>;\n"				\
	"	.reg .b64	%rd<12>;\n"				\
	/* the block's descriptor: desc[ctaid.x] */			\
	"	ld.param.u64	%rd1, [" name "_src];\n"		\
	"	ld.param.u64	%rd2, [" name "_dst];\n"		\
	"	mov.b64		%rd3, " name "_desc;\n"			\
	"	mov.u32		%r1, %ctaid.x;\n"			\
	"	mul.wide.u32	%rd4, %r1, 8;\n"			\
	"	add.s64		%rd5, %rd3, %rd4;\n"			\
	"	ld.param.u32	%r2, [%rd5];\n"		/* off */	\
	"	ld.param.u32	%r3, [%rd5+4];\n"	/* len */	\
	/* i = ctaid.y * 256 + tid.x; step = nctaid.y * 256 */		\
	"	mov.u32		%r4, %ctaid.y;\n"			\
	"	shl.b32		%r5, %r4, 8;\n"				\
	"	mov.u32		%r6, %tid.x;\n"				\
	"	add.s32		%r7, %r5, %r6;\n"			\
	"	mov.u32		%r8, %nctaid.y;\n"			\
	"	shl.b32		%r9, %r8, 8;\n"				\
	"	cvta.to.global.u64	%rd6, %rd1;\n"			\
	"	cvta.to.global.u64	%rd7, %rd2;\n"			\
	"	setp.ge.u32	%p1, %r7, %r3;\n"			\
	"	@%p1 bra	" label "_done;\n"			\
	label "_loop:\n"						\
	"	add.s32		%r10, %r7, %r2;\n"			\
	"	mul.wide.u32	%rd8, %r10, 16;\n"			\
	"	add.s64		%rd9, %rd6, %rd8;\n"			\
	"	add.s64		%rd10, %rd7, %rd8;\n"			\
	"	ld.global.v4.u32	{%r11, %r12, %r13, %r14}, [%rd9];\n" \
	"	st.global.v4.u32	[%rd10], {%r11, %r12, %r13, %r14};\n" \
	"	add.s32		%r7, %r7, %r9;\n"			\
	"	setp.lt.u32	%p2, %r7, %r3;\n"			\
	"	@%p2 bra	" label "_loop;\n"			\
	label "_done:\n"						\
	fence								\
	"	ret;\n"							\
	"}\n"

static const char gpu_kcopy_ptx_text[] =
	".version 7.0\n"
	".target sm_70\n"
	".address_size 64\n"
	"\n"
	GPU_KCOPY_BODY("dbr_gather", "$G", "")
	"\n"
	GPU_KCOPY_BODY("dbr_scatter", "$S", "	membar.sys;\n");

#undef GPU_KCOPY_BODY

#endif
