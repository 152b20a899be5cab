// cuda/kernels/tiled_mma.cuh — k_tiled_mma<Shape, A, Epi, VEC, PREC>: the tiled path's two GEMMs
// on the tensor cores, for its TF32 and BF16 paths (`tiled-tf32`, `tiled-bf16`,
// cuda/paths/tiled_path.cu). The same operands, gather, split-K and epilogues as k_tiled_gemm
// (cuda/kernels/tiled.cuh: StageLoader, epilogue_store); only the products differ: every input of
// a product is rounded to the precision's format when its fragment is read from shared memory
// (TF32: cvt.rna, nearest with ties away; BF16: cvt.rn, nearest even), each product is exact and
// every sum is float32 (the tensor cores' accumulation; kernels/mma.cuh).
//
// Shape (tiled_plan.h, the `mma` shapes): a BM × BN block tile of 2 × WN warps, each a WTM × WTN
// warp tile of MI × NI m16n8 fragments; K in stages of BK = 16 through two shared buffers, the
// next stage's global loads in registers while this one is multiplied (one __syncthreads a
// stage). TF32 takes two m16n8k8 steps a stage, BF16 one m16n8k16.
// The stage is stored already rounded and in fragment order, so that a lane reads each fragment
// with one 16-byte load (lane = 4g + t, PTX ISA fragment layouts):
//   A, TF32: word ((kb·BM/16 + mb)·32 + lane)·4 + q holds A(16mb + g + 8(q % 2), 8kb + t + 4(q / 2)),
//            a0..a3 of m-tile mb, k-step kb;
//   A, BF16: word (mb·32 + lane)·4 + q holds A(16mb + g + 8(q % 2), 2t + 8(q / 2) + {0, 1}) (low
//            half the even k), a0..a3 of m-tile mb;
//   B:       word ((kb·BN/16 + nb/2)·32 + lane)·4 + 2(nb % 2) + h holds n-tile nb's b_h: TF32
//            B(8kb + t + 4h, 8nb + g), BF16 B(2t + 8h + {0, 1}, 8nb + g): two n-tiles a load.
// Consecutive lanes read consecutive 16 bytes: no bank conflicts. The stores scatter (each element
// once a stage, each fragment read by every warp of its row or column of warps).
// A fragment element's place (PTX ISA): acc[i][j][c] is output row wm0 + 16i + g + 8(c / 2),
// column wn0 + 8j + 2t + (c % 2); the epilogue takes them in pairs.
#pragma once
#include <cstdint>

#include "kernels/mma.cuh"
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
  constexpr bool kBf16 = PREC == Precision::BF16;
  constexpr int BM = S::BM, BN = S::BN, BK = S::BK, MI = S::MI, NI = S::NI;
  constexpr int AW = kBf16 ? BK * BM / 2 : BK * BM, BW = kBf16 ? BK * BN / 2 : BK * BN;  // 32-bit words a stage
  static_assert(NI % 2 == 0, "B fragments are read two n-tiles at a time");
  __shared__ __align__(16) uint32_t As[2][AW];
  __shared__ __align__(16) uint32_t Bs[2][BW];
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int wm0 = (warp / S::WN) * S::WTM, wn0 = (warp % S::WN) * S::WTN;
  const int k_begin = blockIdx.z * a.k_chunk, k_end = min(a.K, k_begin + a.k_chunk);

  StageLoader<BM, BN, BK, S::THREADS, BM, BN, AL, VEC> L;
  // Writes the loaded stage into buffer `buf`, rounded, in fragment order (the layout above).
  auto stage = [&](int buf) {
    uint32_t* as = As[buf];
    uint32_t* bs = Bs[buf];
    if constexpr (kBf16) {
      uint16_t* ah = reinterpret_cast<uint16_t*>(as);
      uint16_t* bh = reinterpret_cast<uint16_t*>(bs);
      L.visit(
          tid,
          [&](int k, int m, float x) {
            const int q = (m % 16) / 8 + 2 * (k / 8), ln = 4 * (m % 8) + (k % 8) / 2;
            ah[((((m / 16) * 32 + ln) * 4 + q) * 2) + k % 2] = (uint16_t)(mma::pack_bf16x2(x, x) & 0xffffu);
          },
          [&](int k, int n, float x) {
            const int q = k / 8 + 2 * ((n / 8) % 2), ln = 4 * (n % 8) + (k % 8) / 2;
            bh[(((((n / 16) * 32 + ln) * 4 + q) * 2)) + k % 2] = (uint16_t)(mma::pack_bf16x2(x, x) & 0xffffu);
          });
    } else {
      L.visit(
          tid,
          [&](int k, int m, float x) {
            const int q = (m % 16) / 8 + 2 * ((k % 8) / 4), ln = 4 * (m % 8) + k % 4;
            as[(((k / 8) * (BM / 16) + m / 16) * 32 + ln) * 4 + q] = mma::tf32_rna(x);
          },
          [&](int k, int n, float x) {
            const int q = (k % 8) / 4 + 2 * ((n / 8) % 2), ln = 4 * (n % 8) + k % 4;
            bs[(((k / 8) * (BN / 16) + n / 16) * 32 + ln) * 4 + q] = mma::tf32_rna(x);
          });
    }
  };

  float acc[MI][NI][4];
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j)
#pragma unroll
      for (int c = 0; c < 4; ++c) acc[i][j][c] = 0.f;

  const int stages = k_end > k_begin ? (k_end - k_begin + BK - 1) / BK : 0;
  if (stages > 0) {
    L.load(a, tid, m0, n0, k_begin, k_end);
    stage(0);
  }
  __syncthreads();
  constexpr int KSTEPS = kBf16 ? 1 : 2;  // MMA k-steps a stage: one of 16 (BF16), two of 8 (TF32)
  for (int s = 0; s < stages; ++s) {
    const int buf = s & 1;
    if (s + 1 < stages) L.load(a, tid, m0, n0, k_begin + (s + 1) * BK, k_end);
    const uint4* af = reinterpret_cast<const uint4*>(As[buf]);
    const uint4* bf4 = reinterpret_cast<const uint4*>(Bs[buf]);
#pragma unroll
    for (int kb = 0; kb < KSTEPS; ++kb) {
      uint32_t bf[NI][2];
#pragma unroll
      for (int jp = 0; jp < NI / 2; ++jp) {
        const uint4 v = bf4[(kb * (BN / 16) + wn0 / 16 + jp) * 32 + lane];
        bf[2 * jp][0] = v.x; bf[2 * jp][1] = v.y; bf[2 * jp + 1][0] = v.z; bf[2 * jp + 1][1] = v.w;
      }
#pragma unroll
      for (int i = 0; i < MI; ++i) {
        const uint4 v = af[(kb * (BM / 16) + wm0 / 16 + i) * 32 + lane];
        const uint32_t fa[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
        for (int j = 0; j < NI; ++j) {
          if constexpr (kBf16) mma::mma_m16n8k16_bf16(acc[i][j], fa, bf[j]);
          else mma::mma_m16n8k8_tf32(acc[i][j], fa, bf[j]);
        }
      }
    }
    if (s + 1 < stages) stage(buf ^ 1);
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
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
      for (int j = 0; j < NI; ++j)
#pragma unroll
        for (int c = 0; c < 4; ++c) acc[i][j][c] = 0.f;
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

#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int gm = m0 + row_of(i, h);
      if (gm >= a.M) continue;
#pragma unroll
      for (int j = 0; j < NI; ++j) {
        const int gn = n0 + col_of(j);
        if (gn >= a.N) continue;
        float v[2] = {acc[i][j][2 * h], acc[i][j][2 * h + 1]};
        epilogue_store<EPI, VEC, 2>(a, gm, gn, v);
      }
    }
}

}  // namespace mlp::tiled
