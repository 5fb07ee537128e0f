package cuda

// CopyPagesKernel is the entry point of CopyPagesPTX.
const CopyPagesKernel = "rkv_copy_pages"

// CopyPagesPTX is the page copy kernel, written as PTX text so no nvcc is
// needed at build time; the driver JIT-compiles it for the GPU at hand
// (cuModuleLoadData). One kernel serves gather, scatter and device-to-device
// copies of scattered pages:
//
//	rkv_copy_pages(dst, src, dst_pages, src_pages, page_words, n)
//
// grid row y < n copies page src_pages[y] of src (pages of page_words
// 16-byte words) to page dst_pages[y] of dst, the threads of the row
// striding over the page's words with 16-byte loads and stores. dst and
// src are device addresses (device memory, or pinned host memory mapped
// into the device's address space, so a gather writes host pages
// directly); the page lists are u32 arrays the device can read.
//
// Targets sm_70 with PTX ISA 7.0 so any driver from CUDA 11 on can JIT it
// for Volta and later (an H200 is sm_90).
const CopyPagesPTX = `//
// radixkv page copy kernel (hand-written PTX).
//
.version 7.0
.target sm_70
.address_size 64

.visible .entry rkv_copy_pages(
	.param .u64 rkv_copy_pages_dst,
	.param .u64 rkv_copy_pages_src,
	.param .u64 rkv_copy_pages_dst_pages,
	.param .u64 rkv_copy_pages_src_pages,
	.param .u64 rkv_copy_pages_page_words,
	.param .u32 rkv_copy_pages_n
)
{
	.reg .pred 	%p<3>;
	.reg .b32 	%r<16>;
	.reg .b64 	%rd<24>;

	ld.param.u64 	%rd1, [rkv_copy_pages_dst];
	ld.param.u64 	%rd2, [rkv_copy_pages_src];
	ld.param.u64 	%rd3, [rkv_copy_pages_dst_pages];
	ld.param.u64 	%rd4, [rkv_copy_pages_src_pages];
	ld.param.u64 	%rd5, [rkv_copy_pages_page_words];
	ld.param.u32 	%r1, [rkv_copy_pages_n];
	mov.u32 	%r2, %ctaid.y;
	setp.ge.u32 	%p1, %r2, %r1;
	@%p1 bra 	$L_done;
	cvta.to.global.u64 	%rd1, %rd1;
	cvta.to.global.u64 	%rd2, %rd2;
	cvta.to.global.u64 	%rd3, %rd3;
	cvta.to.global.u64 	%rd4, %rd4;
	mul.wide.u32 	%rd6, %r2, 4;
	add.s64 	%rd7, %rd3, %rd6;
	ld.global.u32 	%r3, [%rd7];
	add.s64 	%rd8, %rd4, %rd6;
	ld.global.u32 	%r4, [%rd8];
	shl.b64 	%rd9, %rd5, 4;
	cvt.u64.u32 	%rd10, %r3;
	mul.lo.s64 	%rd11, %rd10, %rd9;
	add.s64 	%rd12, %rd1, %rd11;
	cvt.u64.u32 	%rd13, %r4;
	mul.lo.s64 	%rd14, %rd13, %rd9;
	add.s64 	%rd15, %rd2, %rd14;
	mov.u32 	%r5, %ctaid.x;
	mov.u32 	%r6, %ntid.x;
	mov.u32 	%r7, %tid.x;
	mad.lo.s32 	%r8, %r5, %r6, %r7;
	mov.u32 	%r9, %nctaid.x;
	mul.lo.s32 	%r10, %r9, %r6;
	cvt.u64.u32 	%rd16, %r8;
	cvt.u64.u32 	%rd17, %r10;
$L_loop:
	setp.ge.u64 	%p2, %rd16, %rd5;
	@%p2 bra 	$L_done;
	shl.b64 	%rd18, %rd16, 4;
	add.s64 	%rd19, %rd15, %rd18;
	ld.global.v4.u32 	{%r11, %r12, %r13, %r14}, [%rd19];
	add.s64 	%rd20, %rd12, %rd18;
	st.global.v4.u32 	[%rd20], {%r11, %r12, %r13, %r14};
	add.s64 	%rd16, %rd16, %rd17;
	bra.uni 	$L_loop;
$L_done:
	ret;
}
`
