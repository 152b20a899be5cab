// cuda/kernels/gemm/transpose.cuh — k_to_k_major<T>: an MN-major GEMM operand copied K-major, for the
// engine's kernels that read K-major only (sm90_engine.cu; tf32 always, bf16 where the plan says).
//   src (k, mn) at src[k·ld + mn], K × MN; dst (mn, k) at dst[mn·ldt + k]. Values copied unchanged.
// One 32 × 32 tile a block of 32 × 8 threads: coalesced reads along MN, coalesced writes along K,
// through a shared tile padded by one column (no bank conflicts on the transposed read).
#pragma once
#include <cstddef>

namespace mlp::gemm {

constexpr int kTransposeTile = 32, kTransposeRows = 8;  // the tile's side; the block's thread rows

template <class T>
__global__ void __launch_bounds__(kTransposeTile * kTransposeRows)
k_to_k_major(const T* __restrict__ src,  // [K][ld], MN-major
             long long ld, int K, int MN,
             T* __restrict__ dst,         // [MN][ldt], K-major
             long long ldt) {
  __shared__ T tile[kTransposeTile][kTransposeTile + 1];
  const int mn0 = blockIdx.x * kTransposeTile, k0 = blockIdx.y * kTransposeTile;
  for (int r = threadIdx.y; r < kTransposeTile; r += kTransposeRows) {
    const int k = k0 + r, mn = mn0 + threadIdx.x;
    if (k < K && mn < MN) tile[r][threadIdx.x] = src[(size_t)k * ld + mn];
  }
  __syncthreads();
  for (int r = threadIdx.y; r < kTransposeTile; r += kTransposeRows) {
    const int mn = mn0 + r, k = k0 + threadIdx.x;
    if (mn < MN && k < K) dst[(size_t)mn * ldt + k] = tile[threadIdx.x][r];
  }
}

}  // namespace mlp::gemm
