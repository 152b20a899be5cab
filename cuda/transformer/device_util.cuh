// cuda/transformer/device_util.cuh — what the transformer's kernels share: the launch macro (the CPU
// emulation replaces it), float4 loads and stores, warp reductions, the exact GELU (common/activations.h).
#pragma once
#include <cuda_runtime.h>  // with -DVIT_EMULATE: cuda/transformer/emu/cuda_runtime.h, the CPU stand-in

#include <cmath>
#include <cstdint>
#include <cstdlib>

#include "common/activations.h"

#ifndef VIT_EMULATE
// A kernel launch (the emulation runs it on the CPU instead) and the dynamic shared memory array.
#define VIT_LAUNCH(kernel, grid, block, smem, stream, ...) kernel<<<(grid), (block), (smem), (stream)>>>(__VA_ARGS__)
#define VIT_DYNAMIC_SMEM(name) extern __shared__ float name[]
#endif

namespace vit {

#ifdef VIT_EMULATE
// The device faults on a float4 access that is not 16-byte aligned; the CPU would not: the emulation stops.
#define VIT_ALIGNED16(p) (reinterpret_cast<uintptr_t>(p) % 16 == 0 ? (void)0 : std::abort())
#else
#define VIT_ALIGNED16(p) ((void)0)
#endif
__device__ __forceinline__ float4 ld4(const float* p) {
  VIT_ALIGNED16(p);
  return *reinterpret_cast<const float4*>(p);
}
__device__ __forceinline__ void st4(float* p, float4 v) {
  VIT_ALIGNED16(p);
  *reinterpret_cast<float4*>(p) = v;
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

using mlp::gelu_erf;  // common/activations.h: the exact GELU, PyTorch's default

}  // namespace vit
