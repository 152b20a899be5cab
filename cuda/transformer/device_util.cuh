// cuda/transformer/device_util.cuh — what the transformer's kernels share: the launch macro (the CPU
// emulation replaces it), float4 loads and stores, warp reductions, a row's LayerNorm, the exact GELU
// (common/activations.h).
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

// One row's LayerNorm statistics by a warp, the two passes every LayerNorm of ours computes (d a
// multiple of 128, at most 512): the row's float4s v[j] = row[4·(32j + lane) ..] for j < d/128, the
// mean (a warp sum), then 1/sqrt(the mean square of x − mean + eps) (a warp sum).
__device__ __forceinline__ void warp_ln_row(const float* row, int d, float eps, int lane, float4 (&v)[4], float& mean,
                                            float& rstd) {
  const int nv = d / 128;
  float s = 0.f;
#pragma unroll
  for (int j = 0; j < 4; ++j)
    if (j < nv) {
      v[j] = ld4(row + (j * 32 + lane) * 4);
      s += (v[j].x + v[j].y) + (v[j].z + v[j].w);
    }
  mean = warp_sum(s) / (float)d;
  float q = 0.f;
#pragma unroll
  for (int j = 0; j < 4; ++j)
    if (j < nv) {
      const float dx = v[j].x - mean, dy = v[j].y - mean, dz = v[j].z - mean, dw = v[j].w - mean;
      q += (dx * dx + dy * dy) + (dz * dz + dw * dw);
    }
  rstd = 1.0f / sqrtf(warp_sum(q) / (float)d + eps);
}

// LayerNorm of four values: (v − mean)·rstd·γ + β, each one fmaf.
__device__ __forceinline__ float4 ln4(float4 v, float mean, float rstd, float4 g, float4 be) {
  return make_float4(fmaf((v.x - mean) * rstd, g.x, be.x), fmaf((v.y - mean) * rstd, g.y, be.y),
                     fmaf((v.z - mean) * rstd, g.z, be.z), fmaf((v.w - mean) * rstd, g.w, be.w));
}

}  // namespace vit
