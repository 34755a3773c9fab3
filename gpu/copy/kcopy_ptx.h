/* SPDX-License-Identifier: MIT */
/*
 * The copy kernel as PTX text, written by hand and loaded at run time
 * (cuModuleLoadDataEx: the driver compiles it for the GPU it runs on), so no
 * CUDA compiler is needed to build the engine. PTX ISA 7.0, target sm_70:
 * any driver from R450 on compiles it, for Volta and every GPU after it.
 * tests/gpu/kcopy_ptx.sh runs ptxas over it (sm_80, sm_90) where ptxas
 * exists. The CUDA C it stands for:
 *
 *	struct kdesc { uint32_t off, len; };	// 16-byte units; len's top
 *						// bit: device -> host
 *	struct kdescs { kdesc d[256]; };	// GPU_KCOPY_MAX
 *
 *	__device__ uint32_t count[1024];	// GPU_KCOPY_SLOTS: one per
 *						// stream sharing the module
 *
 *	__global__ void __launch_bounds__(256)
 *	dbr_kcopy(uint4 *host, uint4 *dev, volatile uint64_t *flag,
 *		  uint64_t ticket, kdescs k, uint32_t slot)
 *	{
 *		kdesc d = k.d[blockIdx.x];
 *		bool d2h = d.len >> 31;
 *		uint32_t len = d.len & 0x7fffffff;
 *		const uint4 *src = d2h ? dev : host;
 *		uint4 *dst = d2h ? host : dev;
 *
 *		for (uint32_t i = blockIdx.y * 256 + threadIdx.x; i < len;
 *		     i += gridDim.y * 256)
 *			dst[d.off + i] = src[d.off + i];
 *		if (d2h)
 *			__threadfence_system();
 *		else
 *			__threadfence();
 *		if (!flag)
 *			return;
 *		__syncthreads();
 *		if (threadIdx.x)
 *			return;
 *		__threadfence();
 *		if (atomicAdd(&count[slot], 1) != gridDim.x * gridDim.y - 1)
 *			return;
 *		count[slot] = 0;		// for the stream's next launch
 *		__threadfence_system();
 *		*flag = ticket;			// the fence: copies done
 *	}
 *
 * One block of 256 threads per descriptor (grid x), each thread moving 16
 * bytes a step, so a 4 KiB block is one step of one block and a warp's
 * loads and stores are 512 contiguous bytes; grid y spreads a longer copy
 * over more blocks, 4 KiB apart. host is the device address of the
 * page-locked host staging area, dev that of device memory; an io_u's
 * offset is the same in both (stream.c), so a descriptor is (offset,
 * length, direction), and one launch carries a pass's gathers (host ->
 * device) and scatters (device -> host) together.
 *
 * Why a scatter ends in membar.sys (__threadfence_system, fence.sc.sys):
 * the stream signals "copies done" by writing a ticket into a host word
 * (cuStreamWriteValue64, or an event) after the kernel, and the CPU then
 * hands the host buffer to io_uring. The kernel's stores to host memory
 * leave the SMs as PCIe writes on a path of their own; stream order says
 * the ticket is written after the kernel has finished, not that those
 * writes have reached host memory by then. membar.sys makes each thread
 * wait until its stores are visible to the whole system, the CPU included,
 * before it exits, so the kernel completes only once every byte is in host
 * memory, and a CPU that sees the ticket sees the data. A gather needs no
 * fence: its stores go to device memory, which later work on the stream
 * sees in stream order.
 *
 * A launch may also be its pass's fence (flag set): the stream would
 * otherwise write the ticket into the host word with a call of its own
 * after the launch (cuStreamWriteValue64), and the driver serialises every
 * thread's calls behind one lock, so at 16 threads the second call per pass
 * costs as much as the launch. Every block counts itself done in its
 * stream's counter (the module is the device's, loaded once per process;
 * each stream using it holds a slot of count[], and launches on a stream
 * run one after the other, so one counter serves them all) once its stores are
 * fenced (gathers at GPU scope, scatters at system scope, above) and its
 * threads have met at the barrier; the block that counts last has seen
 * every other block's count, and so everything they stored, resets the
 * counter for the next launch, fences at system scope and writes the
 * ticket. A CPU that reads the ticket sees every byte of the pass.
 */
#ifndef DBR_GPU_KCOPY_PTX_H
#define DBR_GPU_KCOPY_PTX_H

static const char gpu_kcopy_ptx_text[] =
	".version 7.0\n"
	".target sm_70\n"
	".address_size 64\n"
	"\n"
	".global .align 4 .u32 dbr_kcopy_count[1024];\n"
	"\n"
	".visible .entry dbr_kcopy(\n"
	"	.param .u64 dbr_kcopy_host,\n"
	"	.param .u64 dbr_kcopy_dev,\n"
	"	.param .u64 dbr_kcopy_flag,\n"
	"	.param .u64 dbr_kcopy_ticket,\n"
	"	.param .align 4 .b8 dbr_kcopy_desc[2048],\n"
	"	.param .u32 dbr_kcopy_slot\n"
	")\n"
	".maxntid 256, 1, 1\n"
	"{\n"
	"	.reg .pred	%p<4>;\n"
	"	.reg .b32	%r<17>;\n"
	"	.reg .b64	%rd<14>;\n"
	/* the block's descriptor, desc[ctaid.x]: off, len | d2h << 31 */
	"	ld.param.u64	%rd1, [dbr_kcopy_host];\n"
	"	ld.param.u64	%rd2, [dbr_kcopy_dev];\n"
	"	mov.b64		%rd3, dbr_kcopy_desc;\n"
	"	mov.u32		%r1, %ctaid.x;\n"
	"	mul.wide.u32	%rd4, %r1, 8;\n"
	"	add.s64		%rd5, %rd3, %rd4;\n"
	"	ld.param.u32	%r2, [%rd5];\n"
	"	ld.param.u32	%r3, [%rd5+4];\n"
	"	and.b32		%r4, %r3, 2147483647;\n"
	"	setp.lt.s32	%p3, %r3, 0;\n"		/* d2h */
	/* src, dst: host -> device, or the other way for d2h */
	"	cvta.to.global.u64	%rd1, %rd1;\n"
	"	cvta.to.global.u64	%rd2, %rd2;\n"
	"	selp.b64	%rd6, %rd2, %rd1, %p3;\n"
	"	selp.b64	%rd7, %rd1, %rd2, %p3;\n"
	/* i = ctaid.y * 256 + tid.x, step nctaid.y * 256, while i < len */
	"	mov.u32		%r5, %ctaid.y;\n"
	"	shl.b32		%r6, %r5, 8;\n"
	"	mov.u32		%r7, %tid.x;\n"
	"	add.s32		%r8, %r6, %r7;\n"
	"	mov.u32		%r9, %nctaid.y;\n"
	"	shl.b32		%r10, %r9, 8;\n"
	"	setp.ge.u32	%p1, %r8, %r4;\n"
	"	@%p1 bra	$Ldone;\n"
	"$Lloop:\n"
	"	add.s32		%r11, %r8, %r2;\n"
	"	mul.wide.u32	%rd8, %r11, 16;\n"
	"	add.s64		%rd9, %rd6, %rd8;\n"
	"	add.s64		%rd10, %rd7, %rd8;\n"
	"	ld.global.v4.u32	{%r12, %r13, %r14, %r15}, [%rd9];\n"
	"	st.global.v4.u32	[%rd10], {%r12, %r13, %r14, %r15};\n"
	"	add.s32		%r8, %r8, %r10;\n"
	"	setp.lt.u32	%p2, %r8, %r4;\n"
	"	@%p2 bra	$Lloop;\n"
	"$Ldone:\n"
	/* a scatter's stores visible to the CPU before the kernel ends */
	"	@%p3 membar.sys;\n"
	"	@!%p3 membar.gl;\n"
	/* a fencing launch: the block that counts last writes the ticket */
	"	ld.param.u64	%rd11, [dbr_kcopy_flag];\n"
	"	setp.eq.u64	%p1, %rd11, 0;\n"
	"	@%p1 bra	$Lret;\n"
	"	bar.sync	0;\n"
	"	setp.ne.u32	%p2, %r7, 0;\n"
	"	@%p2 bra	$Lret;\n"
	/* as a grid barrier counts: the block's stores, then its count */
	"	membar.gl;\n"
	"	ld.param.u32	%r16, [dbr_kcopy_slot];\n"
	"	mov.u64		%rd12, dbr_kcopy_count;\n"
	"	mul.wide.u32	%rd13, %r16, 4;\n"
	"	add.s64		%rd12, %rd12, %rd13;\n"
	"	mov.u32		%r12, %nctaid.x;\n"
	"	mul.lo.u32	%r13, %r12, %r9;\n"
	"	sub.u32		%r13, %r13, 1;\n"
	"	atom.global.add.u32	%r14, [%rd12], 1;\n"
	"	setp.ne.u32	%p2, %r14, %r13;\n"
	"	@%p2 bra	$Lret;\n"
	"	st.global.u32	[%rd12], 0;\n"
	"	membar.sys;\n"
	"	ld.param.u64	%rd10, [dbr_kcopy_ticket];\n"
	"	cvta.to.global.u64	%rd11, %rd11;\n"
	"	st.volatile.global.u64	[%rd11], %rd10;\n"
	"$Lret:\n"
	"	ret;\n"
	"}\n";

#endif
