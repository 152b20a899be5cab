// cuda/transformer/gemm_kernel.cuh — the one GEMM template of the transformer's layers and its four
// tagged operations (gemm.h launches them; one nsys row per operation and tile).
#pragma once
#include "transformer/device_util.cuh"
#include "transformer/gemm.h"

namespace vit {

// ------------------------------------------------------------------------------------------ the GEMM
// C[M × N] = prologue(A)[M × K] · W[K × N] + bias, then the epilogue. Register-tiled SIMT SGEMM: a
// block computes a BM × BN tile, each thread TM × TN outputs in groups of 4 rows × 4 columns spread
// over the tile (so its shared-memory reads and global stores are float4s), K in steps of BK through
// two shared-memory buffers (the next step's global loads are in registers while this one computes:
// one __syncthreads per step). With a LayerNorm prologue the block first computes each of its rows'
// mean and 1/σ (one warp per row, a float4 per lane per 128 columns, two passes in registers), and
// normalises A as it stages it; the block of column 0 can also write the normalised rows (`ln_out`,
// the checks' tap). N must be a multiple of BN and K of BK (and of 128 with the prologue); M is any.
enum class Epi { kBias, kBiasGelu, kBiasResidual };


// The operations (tags): one nsys row each.
struct LnQkv { static constexpr bool kLn = true; static constexpr Epi kEpi = Epi::kBias; static constexpr const char* kName = "ln1+qkv"; };
struct AttnProjResidual { static constexpr bool kLn = false; static constexpr Epi kEpi = Epi::kBiasResidual; static constexpr const char* kName = "attn-proj+residual"; };
struct LnFc1Gelu { static constexpr bool kLn = true; static constexpr Epi kEpi = Epi::kBiasGelu; static constexpr const char* kName = "ln2+fc1+gelu"; };
struct Fc2Residual { static constexpr bool kLn = false; static constexpr Epi kEpi = Epi::kBiasResidual; static constexpr const char* kName = "fc2+residual"; };

template <int BM_, int BN_, int BK_, int TM_, int TN_, int MinBlocks_>
struct Tile {
  static constexpr int BM = BM_, BN = BN_, BK = BK_, TM = TM_, TN = TN_, kMinBlocks = MinBlocks_;
  static constexpr int TX = BN / TN, TY = BM / TM, kThreads = TX * TY;
  static_assert(TM % 4 == 0 && TN % 4 == 0 && BK % 4 == 0, "float4 groups");
  static_assert((BM * BK / 4) % kThreads == 0 && (BK * BN / 4) % kThreads == 0, "whole loads per thread");
};
using TileBig = Tile<128, 128, 8, 8, 8, 2>;   // 256 threads, 64 outputs each
using TileMid = Tile<64, 128, 16, 8, 8, 3>;    // 128 threads
using TileSmall = Tile<64, 64, 16, 8, 8, 6>;   // 64 threads: small M·N, more blocks
static_assert(TileBig::BM == kTileM[0] && TileBig::BN == kTileN[0] && TileMid::BM == kTileM[1] &&
              TileMid::BN == kTileN[1] && TileSmall::BM == kTileM[2] && TileSmall::BN == kTileN[2], "gemm.h's tile sizes");

// Each of the block's rows' mean and 1/sqrt(var + eps) (one warp per row, a float4 per lane per 128
// columns, the two passes in registers); rows past M get zeros. The caller synchronises after it.
template <int BM, int NT>
__device__ __forceinline__ void ln_row_stats(const GemmArgs& a, int m0, float* s_mean, float* s_rstd) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int r = warp; r < BM; r += NT / 32) {
    const int m = m0 + r;
    float mean = 0.f, rstd = 0.f;
    if (m < a.M) {
      float4 v[4];
      warp_ln_row(a.A + (size_t)m * a.K, a.K, a.eps, lane, v, mean, rstd);
    }
    if (lane == 0) { s_mean[r] = mean; s_rstd[r] = rstd; }
  }
}

// The LayerNorm of four of row m's values at column k: (v − mean)·rstd·γ + β; the block of column 0
// writes them to ln_out when it is set (each A element is staged once per block).
__device__ __forceinline__ float4 ln_apply(const GemmArgs& a, float4 v, float mean, float rstd, int m, int k) {
  v = ln4(v, mean, rstd, ld4(a.gamma + k), ld4(a.beta + k));
  if (a.ln_out && blockIdx.x == 0) st4(a.ln_out + (size_t)m * a.K + k, v);
  return v;
}

// The epilogue of one output value: bias, then GELU or the residual.
template <class Op>
__device__ __forceinline__ float epilogue(const GemmArgs& a, float acc, int m, int n) {
  float c = acc + a.bias[n];
  if constexpr (Op::kEpi == Epi::kBiasGelu) c = gelu_erf(c);
  else if constexpr (Op::kEpi == Epi::kBiasResidual) c += a.R[(size_t)m * a.N + n];
  return c;
}

template <class Op, class T>
__global__ void __launch_bounds__(T::kThreads, T::kMinBlocks) vit_gemm(GemmArgs a) {
  constexpr int BM = T::BM, BN = T::BN, BK = T::BK, TM = T::TM, TN = T::TN, NT = T::kThreads, TX = T::TX, TY = T::TY;
  constexpr int kPad = 4;  // As rows of BM + 4: the transposed stores spread over more banks
  constexpr int A_LOADS = BM * BK / 4 / NT, B_LOADS = BK * BN / 4 / NT;
  __shared__ __align__(16) float As[2][BK][BM + kPad];
  __shared__ __align__(16) float Bs[2][BK][BN];
  __shared__ float s_mean[Op::kLn ? BM : 1], s_rstd[Op::kLn ? BM : 1];

  const int tid = threadIdx.x, n0 = blockIdx.x * BN, m0 = blockIdx.y * BM;
  const int M = a.M, N = a.N, K = a.K;

  if constexpr (Op::kLn) {
    ln_row_stats<BM, NT>(a, m0, s_mean, s_rstd);
    __syncthreads();
  }

  float4 ra[A_LOADS], rb[B_LOADS];
  auto load_a = [&](int k0) {
#pragma unroll
    for (int i = 0; i < A_LOADS; ++i) {
      const int idx = tid + i * NT, r = idx / (BK / 4), kc = (idx % (BK / 4)) * 4, m = m0 + r;
      float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
      if (m < M) {
        v = ld4(a.A + (size_t)m * K + k0 + kc);
        if constexpr (Op::kLn) v = ln_apply(a, v, s_mean[r], s_rstd[r], m, k0 + kc);
      }
      ra[i] = v;
    }
  };
  auto store_a = [&](int buf) {
#pragma unroll
    for (int i = 0; i < A_LOADS; ++i) {
      const int idx = tid + i * NT, r = idx / (BK / 4), kc = (idx % (BK / 4)) * 4;
      As[buf][kc + 0][r] = ra[i].x;
      As[buf][kc + 1][r] = ra[i].y;
      As[buf][kc + 2][r] = ra[i].z;
      As[buf][kc + 3][r] = ra[i].w;
    }
  };
  auto load_b = [&](int k0) {
#pragma unroll
    for (int i = 0; i < B_LOADS; ++i) {
      const int idx = tid + i * NT, k = idx / (BN / 4), nc = (idx % (BN / 4)) * 4;
      rb[i] = ld4(a.W + (size_t)(k0 + k) * N + n0 + nc);
    }
  };
  auto store_b = [&](int buf) {
#pragma unroll
    for (int i = 0; i < B_LOADS; ++i) {
      const int idx = tid + i * NT, k = idx / (BN / 4), nc = (idx % (BN / 4)) * 4;
      st4(&Bs[buf][k][nc], rb[i]);
    }
  };

  const int tx = tid % TX, ty = tid / TX;
  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.f;

  load_a(0);
  load_b(0);
  store_a(0);
  store_b(0);
  __syncthreads();
  const int steps = K / BK;
  for (int kt = 0; kt < steps; ++kt) {
    const int buf = kt & 1;
    if (kt + 1 < steps) {
      load_a((kt + 1) * BK);
      load_b((kt + 1) * BK);
    }
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      float af[TM], bf[TN];
#pragma unroll
      for (int g = 0; g < TM / 4; ++g) {
        const float4 v = ld4(&As[buf][k][g * 4 * TY + ty * 4]);
        af[g * 4 + 0] = v.x; af[g * 4 + 1] = v.y; af[g * 4 + 2] = v.z; af[g * 4 + 3] = v.w;
      }
#pragma unroll
      for (int g = 0; g < TN / 4; ++g) {
        const float4 v = ld4(&Bs[buf][k][g * 4 * TX + tx * 4]);
        bf[g * 4 + 0] = v.x; bf[g * 4 + 1] = v.y; bf[g * 4 + 2] = v.z; bf[g * 4 + 3] = v.w;
      }
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(af[i], bf[j], acc[i][j]);
    }
    if (kt + 1 < steps) {
      store_a(buf ^ 1);
      store_b(buf ^ 1);
    }
    __syncthreads();
  }

#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int m = m0 + (i / 4) * 4 * TY + ty * 4 + (i % 4);
    if (m >= M) continue;
#pragma unroll
    for (int g = 0; g < TN / 4; ++g) {
      const int n = n0 + g * 4 * TX + tx * 4;
      const float4 bv = ld4(a.bias + n);
      float4 c = make_float4(acc[i][g * 4 + 0] + bv.x, acc[i][g * 4 + 1] + bv.y, acc[i][g * 4 + 2] + bv.z,
                             acc[i][g * 4 + 3] + bv.w);
      if constexpr (Op::kEpi == Epi::kBiasGelu) {
        c.x = gelu_erf(c.x); c.y = gelu_erf(c.y); c.z = gelu_erf(c.z); c.w = gelu_erf(c.w);
      } else if constexpr (Op::kEpi == Epi::kBiasResidual) {
        const float4 r = ld4(a.R + (size_t)m * N + n);
        c.x += r.x; c.y += r.y; c.z += r.z; c.w += r.w;
      }
      st4(a.C + (size_t)m * N + n, c);
    }
  }
}

}  // namespace vit
