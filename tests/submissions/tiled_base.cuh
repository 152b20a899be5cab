// tests/submissions/tiled_base.cuh — a learner-style submission whose matrix products are the textbook
// shared-memory tiled GEMM: a TILE × TILE block of threads, one output element per thread, the
// TILE × TILE tiles of both inputs staged through shared memory (a column of padding against bank
// conflicts), with the transposed operands of the backward read so that consecutive threads read
// consecutive addresses. Everything else is learner_common.cuh's (its macros apply here too).
// tiled16.cu and tiled32.cu (TILE 16 and 32) and launch_heavy.cu (TILE 16 with VARIANT_ROWWISE_TAIL)
// must pass every gate case.
//
// Parameter (macro): TILE, the tile's side and the block's, 8, 16 or 32 (TILE² threads) [16].
// The defects (one per file), each with the gate cases that must fail it; harness/gate/course_gen.py
// reads them from these lines (one entry per macro, its cases after its last "->"):
//   MUTANT_TILE_NO_SYNC         no __syncthreads() after each tile's products: a fast warp stages the
//                               next tile over one a slow warp still reads -> case 12
//   MUTANT_TILE_K_EDGE          the tiles staged without the k < K check: the last tile of a K that TILE
//                               does not divide reads past each row, and past the buffer -> cases 1, 2
//   MUTANT_TILE_STORE_UNGUARDED the result stored without the m < M, n < N check: a partial tile
//                               writes past H and Z -> cases 1, 10
#ifndef TILED_BASE_CUH
#define TILED_BASE_CUH

#include "learner_common.cuh"

#ifndef TILE
#define TILE 16
#endif
static_assert(TILE == 8 || TILE == 16 || TILE == 32, "TILE: 8, 16 or 32");

#ifdef MUTANT_TILE_K_EDGE
#define TILE_K_INSIDE(k) true  // the K edge unchecked
#else
#define TILE_K_INSIDE(k) ((k) < K)
#endif

namespace learner {

template <bool TA, bool TB>
__global__ void __launch_bounds__(TILE * TILE)
    tiled_gemm(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
               Epilogue e) {
  __shared__ float As[TILE][TILE + 1];  // As[i][k] = op(A)(m0 + i, k0 + k)
  __shared__ float Bs[TILE][TILE + 1];  // Bs[k][j] = op(B)(k0 + k, n0 + j)
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int m0 = blockIdx.y * TILE, n0 = blockIdx.x * TILE;
  const int m = m0 + ty, n = n0 + tx;
  float acc = 0.f;
  for (int k0 = 0; k0 < K; k0 += TILE) {
    if (!TA) {  // A [M × K]: thread (ty, tx) stages A(m0 + ty, k0 + tx)
      const int i = m0 + ty, k = k0 + tx;
      As[ty][tx] = (i < M && TILE_K_INSIDE(k)) ? A[(size_t)i * K + k] : 0.f;
    } else {    // A stored [K × M]: thread (ty, tx) stages A(m0 + tx, k0 + ty)
      const int i = m0 + tx, k = k0 + ty;
      As[tx][ty] = (i < M && TILE_K_INSIDE(k)) ? A[(size_t)k * M + i] : 0.f;
    }
    if (!TB) {  // B [K × N]: thread (ty, tx) stages B(k0 + ty, n0 + tx)
      const int k = k0 + ty, j = n0 + tx;
      Bs[ty][tx] = (TILE_K_INSIDE(k) && j < N) ? B[(size_t)k * N + j] : 0.f;
    } else {    // B stored [N × K]: thread (ty, tx) stages B(k0 + tx, n0 + ty)
      const int k = k0 + tx, j = n0 + ty;
      Bs[tx][ty] = (TILE_K_INSIDE(k) && j < N) ? B[(size_t)j * K + k] : 0.f;
    }
    __syncthreads();
    for (int k = 0; k < TILE; ++k) acc += As[ty][k] * Bs[k][tx];
#ifndef MUTANT_TILE_NO_SYNC
    __syncthreads();  // every warp done reading before the next tile is staged
#endif
  }
#ifdef MUTANT_TILE_STORE_UNGUARDED
  C[(size_t)m * N + n] = apply_epilogue(acc, m, n, N, e);
#else
  if (m < M && n < N) C[(size_t)m * N + n] = apply_epilogue(acc, m, n, N, e);
#endif
}

template <bool TA, bool TB>
int gemm(int M, int N, int K, const float* A, const float* B, float* C, Epilogue e, cudaStream_t st) {
  const int blocks_y = (M + TILE - 1) / TILE, blocks_x = (N + TILE - 1) / TILE;
  if (blocks_y > kMaxGridY) return MLP_ERR_UNSUPPORTED;
  tiled_gemm<TA, TB><<<dim3(blocks_x, blocks_y), dim3(TILE, TILE), 0, st>>>(M, N, K, A, B, C, e);
  return launched();
}

}  // namespace learner

#endif  // TILED_BASE_CUH
