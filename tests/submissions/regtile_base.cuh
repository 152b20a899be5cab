// tests/submissions/regtile_base.cuh — a learner-style submission whose matrix products are
// register-tiled: a block computes an RT_BM × RT_BN tile of C with (RT_BM/RT_TM)·(RT_BN/RT_TN)
// threads, each thread an RT_TM × RT_TN block of outputs held in registers; the K dimension goes by
// RT_BK-deep slabs of both inputs staged through shared memory (every thread loading several
// elements, consecutive threads consecutive addresses). Everything else is learner_common.cuh's (its
// macros apply here too). regtile.cu (the defaults) must pass every gate case.
//
// Parameters (macros; defaults in brackets): RT_BM, RT_BN, the block's tile [64, 64]; RT_BK, the
// slab's depth [8]; RT_TM, RT_TN, a thread's outputs [4, 4]. RT_TM divides RT_BM, RT_TN divides
// RT_BN, and the block has 32 to 1024 threads.
// The defects (one per file), each with the gate cases that must fail it; harness/gate/course_gen.py
// reads them from these lines (one entry per macro, its cases after its last "->"):
//   MUTANT_RT_NO_SYNC     no __syncthreads() after each slab's products: a fast warp stages the next
//                         slab over one a slow warp still reads -> case 12
//   MUTANT_RT_K_FLOOR     the K loop runs whole slabs only (k0 + RT_BK <= K): the last K mod RT_BK
//                         terms of every sum are dropped -> cases 1, 2
//   MUTANT_RT_TILE_GUARD  a thread checks only its first output's row and column before storing its
//                         RT_TM × RT_TN outputs: a partial tile writes past H and Z -> cases 1, 10
#ifndef REGTILE_BASE_CUH
#define REGTILE_BASE_CUH

#include "learner_common.cuh"

#ifndef RT_BM
#define RT_BM 64
#endif
#ifndef RT_BN
#define RT_BN 64
#endif
#ifndef RT_BK
#define RT_BK 8
#endif
#ifndef RT_TM
#define RT_TM 4
#endif
#ifndef RT_TN
#define RT_TN 4
#endif
#define RT_THREADS ((RT_BM / RT_TM) * (RT_BN / RT_TN))
static_assert(RT_BM % RT_TM == 0 && RT_BN % RT_TN == 0, "RT_TM must divide RT_BM, RT_TN RT_BN");
static_assert(RT_THREADS >= 32 && RT_THREADS <= 1024, "a block of 32 to 1024 threads");
static_assert(RT_BK >= 1 && RT_BK * (RT_BM + RT_BN) * 4 <= 48 * 1024, "the two slabs fit 48 KiB of shared memory");

namespace learner {

template <bool TA, bool TB>
__global__ void __launch_bounds__(RT_THREADS)
    regtile_gemm(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                 Epilogue e) {
  __shared__ float As[RT_BK][RT_BM];  // As[k][i] = op(A)(m0 + i, k0 + k)
  __shared__ float Bs[RT_BK][RT_BN];  // Bs[k][j] = op(B)(k0 + k, n0 + j)
  const int tid = threadIdx.x;
  const int tcol = tid % (RT_BN / RT_TN), trow = tid / (RT_BN / RT_TN);
  const int m0 = blockIdx.y * RT_BM, n0 = blockIdx.x * RT_BN;
  float acc[RT_TM][RT_TN];
#pragma unroll
  for (int i = 0; i < RT_TM; ++i)
#pragma unroll
    for (int j = 0; j < RT_TN; ++j) acc[i][j] = 0.f;
#ifdef MUTANT_RT_K_FLOOR
  for (int k0 = 0; k0 + RT_BK <= K; k0 += RT_BK) {  // whole slabs only
#else
  for (int k0 = 0; k0 < K; k0 += RT_BK) {
#endif
    // A [M × K] is contiguous along k: x walks k fastest; stored [K × M] it walks i fastest.
    for (int x = tid; x < RT_BM * RT_BK; x += RT_THREADS) {
      const int i = TA ? x % RT_BM : x / RT_BK, k = TA ? x / RT_BM : x % RT_BK;
      const int gi = m0 + i, gk = k0 + k;
      As[k][i] = (gi < M && gk < K) ? (TA ? A[(size_t)gk * M + gi] : A[(size_t)gi * K + gk]) : 0.f;
    }
    // B [K × N] is contiguous along j; stored [N × K] along k.
    for (int x = tid; x < RT_BK * RT_BN; x += RT_THREADS) {
      const int j = TB ? x / RT_BK : x % RT_BN, k = TB ? x % RT_BK : x / RT_BN;
      const int gj = n0 + j, gk = k0 + k;
      Bs[k][j] = (gk < K && gj < N) ? (TB ? B[(size_t)gj * K + gk] : B[(size_t)gk * N + gj]) : 0.f;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < RT_BK; ++k) {
      float a[RT_TM], b[RT_TN];
#pragma unroll
      for (int i = 0; i < RT_TM; ++i) a[i] = As[k][trow * RT_TM + i];
#pragma unroll
      for (int j = 0; j < RT_TN; ++j) b[j] = Bs[k][tcol * RT_TN + j];
#pragma unroll
      for (int i = 0; i < RT_TM; ++i)
#pragma unroll
        for (int j = 0; j < RT_TN; ++j) acc[i][j] += a[i] * b[j];
    }
#ifndef MUTANT_RT_NO_SYNC
    __syncthreads();  // every warp done reading before the next slab is staged
#endif
  }
#ifdef MUTANT_RT_TILE_GUARD
  if (m0 + trow * RT_TM >= M || n0 + tcol * RT_TN >= N) return;  // the first output only
#endif
#pragma unroll
  for (int i = 0; i < RT_TM; ++i)
#pragma unroll
    for (int j = 0; j < RT_TN; ++j) {
      const int m = m0 + trow * RT_TM + i, n = n0 + tcol * RT_TN + j;
#ifndef MUTANT_RT_TILE_GUARD
      if (m < M && n < N)
#endif
        C[(size_t)m * N + n] = apply_epilogue(acc[i][j], m, n, N, e);
    }
}

template <bool TA, bool TB>
int gemm(int M, int N, int K, const float* A, const float* B, float* C, Epilogue e, cudaStream_t st) {
  const int blocks_y = (M + RT_BM - 1) / RT_BM, blocks_x = (N + RT_BN - 1) / RT_BN;
  if (blocks_y > kMaxGridY) return MLP_ERR_UNSUPPORTED;
  regtile_gemm<TA, TB><<<dim3(blocks_x, blocks_y), RT_THREADS, 0, st>>>(M, N, K, A, B, C, e);
  return launched();
}

}  // namespace learner

#endif  // REGTILE_BASE_CUH
