// cuda/kernels/tiled_mma.cuh — k_tiled_mma<Shape, A, Epi, VEC, PREC>: the tiled path's two GEMMs
// on the tensor cores, for its TF32 and BF16 paths (`tiled-tf32`, `tiled-bf16`,
// cuda/paths/tiled_path.cu). The same operands, gather, split-K and epilogues as k_tiled_gemm
// (cuda/kernels/tiled.cuh: StageLoader, epilogue_load and epilogue_finish); only the products differ: every input of
// a product is rounded to the precision's format when its fragment is read from shared memory
// (TF32: cvt.rna, nearest with ties away; BF16: cvt.rn, nearest even), each product is exact and
// every sum is float32 (the tensor cores' accumulation; common/mma.cuh).
//
// Shape (tiled_plan.h, the `mma` shapes): a BM × BN block tile of 2 × WN warps, each a WTM × WTN
// warp tile of MI × NI m16n8 fragments; K in stages of BK = 16 through two shared buffers, the
// next stage's global loads in registers while this one is multiplied (one __syncthreads a
// stage). TF32 takes two m16n8k8 steps a stage, BF16 one m16n8k16.
// Shared memory is k-major, As[k][m] and Bs[k][n], rows padded by PAD floats so that a warp's
// fragment reads hit 32 banks: lane 4g + t reads row k = t (TF32) or 2t (BF16) at column g, i.e.
// bank (k·pitch + g) mod 32, distinct for pitch ≡ 8 (TF32) or 4 (BF16, rows 2t) mod 32.
// A fragment element's place (PTX ISA, lane = 4g + t): acc[i][j][c] is output row
// wm0 + 16i + g + 8(c / 2), column wn0 + 8j + 2t + (c % 2); the epilogue takes them in pairs.
#pragma once
#include <cstdint>

#include "common/mma.cuh"
#include "kernels/tiled.cuh"

namespace mlp::tiled {

template <int SHAPE>
struct MmaShapeOf {
  static constexpr TileShape t = kTileShapes[SHAPE];
  static constexpr int BM = t.bm, BN = t.bn, BK = t.bk, THREADS = t.threads();
  static constexpr int WARPS = THREADS / 32, WM = 2, WN = WARPS / WM;
  static constexpr int WTM = BM / WM, WTN = BN / WN;  // a warp's tile
  static constexpr int MI = WTM / 16, NI = WTN / 8;   // its m16n8 fragments
  static_assert(t.mma && BK == 16 && THREADS % 64 == 0, "a tensor-core shape: BK 16, an even number of warps");
  static_assert(WM * WN == WARPS && WTM % 16 == 0 && WTN % 8 == 0, "whole fragments per warp");
};

template <int SHAPE, ALayout AL, Epi EPI, bool VEC, Precision PREC>
__global__ void __launch_bounds__(MmaShapeOf<SHAPE>::THREADS, kTileShapes[SHAPE].res)
k_tiled_mma(GemmArgs a) {
  using S = MmaShapeOf<SHAPE>;
  static_assert(PREC == Precision::TF32 || PREC == Precision::BF16, "FP32 runs k_tiled_gemm");
  constexpr int BM = S::BM, BN = S::BN, BK = S::BK, MI = S::MI, NI = S::NI;
  constexpr int PAD = PREC == Precision::BF16 ? 4 : 8, AP = BM + PAD, BP = BN + PAD;
  __shared__ __align__(16) float As[2][BK][AP];
  __shared__ __align__(16) float Bs[2][BK][BP];
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int wm0 = (warp / S::WN) * S::WTM, wn0 = (warp % S::WN) * S::WTN;
  const int k_begin = blockIdx.z * a.k_chunk, k_end = min(a.K, k_begin + a.k_chunk);

  StageLoader<BM, BN, BK, S::THREADS, AP, BP, AL, VEC> L;
  float acc[MI][NI][4];
  auto zero_acc = [&] {
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
      for (int j = 0; j < NI; ++j)
#pragma unroll
        for (int c = 0; c < 4; ++c) acc[i][j][c] = 0.f;
  };
  zero_acc();

  const int stages = k_end > k_begin ? (k_end - k_begin + BK - 1) / BK : 0;
  if (stages > 0) {
    L.load(a, tid, m0, n0, k_begin, k_end);
    L.stage(&As[0][0][0], &Bs[0][0][0], tid);
  }
  __syncthreads();
  for (int s = 0; s < stages; ++s) {
    const int buf = s & 1;
    if (s + 1 < stages) L.load(a, tid, m0, n0, k_begin + (s + 1) * BK, k_end);
    if constexpr (PREC == Precision::TF32) {
#pragma unroll
      for (int kk = 0; kk < BK; kk += 8) {
        uint32_t bf[NI][2];  // b0 (k t, n g), b1 (k t + 4, n g)
#pragma unroll
        for (int j = 0; j < NI; ++j) {
          const int n = wn0 + j * 8 + g;
          bf[j][0] = mma::tf32_rna(Bs[buf][kk + t][n]);
          bf[j][1] = mma::tf32_rna(Bs[buf][kk + t + 4][n]);
        }
#pragma unroll
        for (int i = 0; i < MI; ++i) {
          const int r = wm0 + i * 16 + g;  // a0 (g, t), a1 (g + 8, t), a2 (g, t + 4), a3 (g + 8, t + 4)
          const uint32_t af[4] = {mma::tf32_rna(As[buf][kk + t][r]), mma::tf32_rna(As[buf][kk + t][r + 8]),
                                  mma::tf32_rna(As[buf][kk + t + 4][r]), mma::tf32_rna(As[buf][kk + t + 4][r + 8])};
#pragma unroll
          for (int j = 0; j < NI; ++j) mma::mma_m16n8k8_tf32(acc[i][j], af, bf[j]);
        }
      }
    } else {
      uint32_t bf[NI][2];  // b0 (k 2t, 2t + 1; n g), b1 (k 2t + 8, 2t + 9; n g)
#pragma unroll
      for (int j = 0; j < NI; ++j) {
        const int n = wn0 + j * 8 + g;
        bf[j][0] = mma::pack_bf16x2(Bs[buf][2 * t][n], Bs[buf][2 * t + 1][n]);
        bf[j][1] = mma::pack_bf16x2(Bs[buf][2 * t + 8][n], Bs[buf][2 * t + 9][n]);
      }
#pragma unroll
      for (int i = 0; i < MI; ++i) {
        const int r = wm0 + i * 16 + g;  // a0 (g; 2t, 2t + 1), a1 (g + 8; ...), a2 (g; 2t + 8, 2t + 9), a3 (g + 8; ...)
        const uint32_t af[4] = {mma::pack_bf16x2(As[buf][2 * t][r], As[buf][2 * t + 1][r]),
                                mma::pack_bf16x2(As[buf][2 * t][r + 8], As[buf][2 * t + 1][r + 8]),
                                mma::pack_bf16x2(As[buf][2 * t + 8][r], As[buf][2 * t + 9][r]),
                                mma::pack_bf16x2(As[buf][2 * t + 8][r + 8], As[buf][2 * t + 9][r + 8])};
#pragma unroll
        for (int j = 0; j < NI; ++j) mma::mma_m16n8k16_bf16(acc[i][j], af, bf[j]);
      }
    }
    if (s + 1 < stages) L.stage(&As[buf ^ 1][0][0], &Bs[buf ^ 1][0][0], tid);
    __syncthreads();
  }

  auto row_of = [&](int i, int h) { return wm0 + i * 16 + g + 8 * h; };  // h: fragment half (c / 2)
  auto col_of = [&](int j) { return wn0 + j * 8 + 2 * t; };

  if (gridDim.z > 1) {
    // Split-K, as k_tiled_gemm: publish the partial tile, the tile's last block sums the partials
    // in split order 0..S−1 (the same sum whichever block is last) and runs the epilogue.
    const unsigned tile = blockIdx.y * gridDim.x + blockIdx.x, tiles = gridDim.x * gridDim.y;
    float* mine = a.partials + ((size_t)blockIdx.z * tiles + tile) * (BM * BN);
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int j = 0; j < NI; ++j)
          *reinterpret_cast<float2*>(&mine[row_of(i, h) * BN + col_of(j)]) =
              make_float2(acc[i][j][2 * h], acc[i][j][2 * h + 1]);
    if (!last_block(&a.tickets[tile], gridDim.z)) return;
    zero_acc();
    for (unsigned z = 0; z < gridDim.z; ++z) {
      const float* part = a.partials + ((size_t)z * tiles + tile) * (BM * BN);
#pragma unroll
      for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int h = 0; h < 2; ++h)
#pragma unroll
          for (int j = 0; j < NI; ++j) {
            const float* p = &part[row_of(i, h) * BN + col_of(j)];
            acc[i][j][2 * h] += __ldcg(p);
            acc[i][j][2 * h + 1] += __ldcg(p + 1);
          }
    }
  }

  // The epilogue in pairs, a row of the warp tile (NI pairs) a chunk: its loads first, then its
  // stores (tiled.cuh epilogue_load says why).
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int gm = m0 + row_of(i, h);
      if (gm >= a.M) continue;
      EpiIn<2> in[NI];
#pragma unroll
      for (int j = 0; j < NI; ++j) {
        const int gn = n0 + col_of(j);
        if (gn < a.N) epilogue_load<EPI, VEC, 2>(a, gm, gn, in[j]);
      }
#pragma unroll
      for (int j = 0; j < NI; ++j) {
        const int gn = n0 + col_of(j);
        if (gn >= a.N) continue;
        float v[2] = {acc[i][j][2 * h], acc[i][j][2 * h + 1]};
        epilogue_finish<EPI, VEC, 2>(a, gm, gn, v, in[j]);
      }
    }
}

}  // namespace mlp::tiled
