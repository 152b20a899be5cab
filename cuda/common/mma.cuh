// cuda/common/mma.cuh — the tensor-core primitives every TF32 and BF16 GEMM of ours uses (the tiled
// paths' cuda/kernels/tiled_mma.cuh, the transformer's cuda/transformer/gemm_tc_kernel.cuh):
// operand rounding and one warp-wide mma.sync each,
//   tf32_rna(x)               x rounded to TF32, nearest with ties away (cvt.rna.tf32.f32)
//   pack_bf16x2(lo, hi)       two floats rounded to bfloat16, nearest even, lo in the low half
//   mma_m16n8k8_tf32(d, a, b)  d[16×8] += a[16×8]·b[8×8], TF32 inputs, float32 accumulation
//   mma_m16n8k16_bf16(d, a, b) d[16×8] += a[16×16]·b[16×8], BF16 inputs, float32 accumulation
// Fragment layouts are the PTX ISA's (lane = 4·g + t): d0, d1 at (g, 2t + {0, 1}), d2, d3 at
// (g + 8, 2t + {0, 1}). Both need sm_80: an older architecture's build keeps the kernels but they
// trap (the caller's host side refuses such a device first). Built with -DVIT_EMULATE, the CPU
// emulation of cuda/transformer/emu/ runs them instead.
#pragma once
#include <cstdint>

namespace mlp::mma {

#ifdef VIT_EMULATE
__device__ __forceinline__ uint32_t tf32_rna(float x) { return emu_tf32_rna(x); }
__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) { return emu_pack_bf16x2(lo, hi); }
__device__ __forceinline__ void mma_m16n8k8_tf32(float d[4], const uint32_t a[4], const uint32_t b[2]) {
  emu_mma_tf32(d, a, b);
}
__device__ __forceinline__ void mma_m16n8k16_bf16(float d[4], const uint32_t a[4], const uint32_t b[2]) {
  emu_mma_bf16(d, a, b);
}
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
__device__ __forceinline__ uint32_t tf32_rna(float x) { return __float_as_uint(x); }
__device__ __forceinline__ uint32_t pack_bf16x2(float, float) { return 0u; }
__device__ __forceinline__ void mma_m16n8k8_tf32(float*, const uint32_t*, const uint32_t*) { __trap(); }
__device__ __forceinline__ void mma_m16n8k16_bf16(float*, const uint32_t*, const uint32_t*) { __trap(); }
#else
__device__ __forceinline__ uint32_t tf32_rna(float x) {
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return r;
}
__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) {
  uint32_t r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));  // the first source: the upper half
  return r;
}
__device__ __forceinline__ void mma_m16n8k8_tf32(float d[4], const uint32_t a[4], const uint32_t b[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
__device__ __forceinline__ void mma_m16n8k16_bf16(float d[4], const uint32_t a[4], const uint32_t b[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
#endif

}  // namespace mlp::mma
