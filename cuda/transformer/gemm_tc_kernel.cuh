// cuda/transformer/gemm_tc_kernel.cuh — the same four GEMM operations on the tensor cores with float32
// accuracy: 3xTF32. Each float32 operand x is split into x_hi = tf32(x) (round to nearest, 10 mantissa
// bits) and x_lo = tf32(x − x_hi) (x − x_hi is exact in float32), and a·b is accumulated in float32 as
// a_lo·b_hi + a_hi·b_lo + a_hi·b_hi (the small terms first): what is dropped, a_lo·b_lo and the roundings
// of the two lo parts, is below 3·2^-22·|a·b|, inside the float32 bound D·u·|A|·|W| the checks use
// (error_scale.h; D = K + 1 ≥ 129 while this adds at most 12·u per product). The tensor cores' own
// accumulation is float32 (truncating within one mma, per the studies of their numerics): one rounding
// of at most 2u per eight products, 3K/8 of them, inside the same bound.
//
// Block tile BM × BN, K in steps of BK through two shared-memory buffers (registers prefetch the next
// step, one __syncthreads per step, as the FFMA kernel). A is kept row-major [BM][BK + 4] and W [BK][BN + 8]
// so that the fragment loads (lane = 4·g + t reads A[g][t], A[g + 8][t], A[g][t + 4], A[g + 8][t + 4] and
// W[t][g], W[t + 4][g], PTX ISA "mma.m16n8k8" for .tf32) hit 32 different banks. WM × WN warps, each a
// (BM/WM) × (BN/WN) warp tile of m16n8k8 mma.sync operations; the LayerNorm prologue and the epilogues
// are the FFMA kernel's (gemm_kernel.cuh).
#pragma once
#include "common/mma.cuh"
#include "transformer/gemm_kernel.cuh"

namespace vit {

// TF32 rounding and mma.sync m16n8k8 (sm_80; an older architecture's build traps, and the host
// refuses the engine there first: VitForward::set_engine): common/mma.cuh's.
__device__ __forceinline__ uint32_t tf32_of(float x) { return mlp::mma::tf32_rna(x); }
__device__ __forceinline__ void mma_tf32(float d[4], const uint32_t a[4], const uint32_t b[2]) {
  mlp::mma::mma_m16n8k8_tf32(d, a, b);
}

// x as its tf32 high part and the tf32 of the remainder.
__device__ __forceinline__ void split_tf32(float x, uint32_t& hi, uint32_t& lo) {
  hi = tf32_of(x);
  lo = tf32_of(x - __uint_as_float(hi));
}

template <int BM_, int BN_, int WM_, int WN_, int MinBlocks_>
struct TcTile {
  static constexpr int BM = BM_, BN = BN_, BK = 16, WM = WM_, WN = WN_, kMinBlocks = MinBlocks_;
  static constexpr int kThreads = 32 * WM * WN, MI = BM / WM / 16, NI = BN / WN / 8;
  static_assert(BM % (16 * WM) == 0 && BN % (8 * WN) == 0, "whole mma tiles per warp");
  static_assert((BM * BK / 4) % kThreads == 0 && (BK * BN / 4) % kThreads == 0, "whole loads per thread");
};
using TcBig = TcTile<128, 128, 2, 4, 1>;   // 8 warps of 64 × 32
using TcMid = TcTile<64, 128, 2, 2, 2>;    // 4 warps of 32 × 64
using TcSmall = TcTile<64, 64, 2, 2, 3>;   // 4 warps of 32 × 32
static_assert(TcBig::BM == kTileM[0] && TcBig::BN == kTileN[0] && TcMid::BM == kTileM[1] && TcMid::BN == kTileN[1] &&
              TcSmall::BM == kTileM[2] && TcSmall::BN == kTileN[2], "gemm.h's tile sizes");

template <class Op, class T>
__global__ void __launch_bounds__(T::kThreads, T::kMinBlocks) vit_gemm_tc(GemmArgs a) {
  constexpr int BM = T::BM, BN = T::BN, BK = T::BK, NT = T::kThreads, MI = T::MI, NI = T::NI;
  constexpr int A_LOADS = BM * BK / 4 / NT, B_LOADS = BK * BN / 4 / NT, AP = BK + 4, BP = BN + 8;
  __shared__ __align__(16) float As[2][BM][AP];
  __shared__ __align__(16) float Bs[2][BK][BP];
  __shared__ float s_mean[Op::kLn ? BM : 1], s_rstd[Op::kLn ? BM : 1];

  const int tid = threadIdx.x, n0 = blockIdx.x * BN, m0 = blockIdx.y * BM;
  const int M = a.M, N = a.N, K = a.K;
  if constexpr (Op::kLn) {
    ln_row_stats<BM, NT>(a, m0, s_mean, s_rstd);
    __syncthreads();
  }

  float4 ra[A_LOADS], rb[B_LOADS];
  auto load = [&](int k0) {
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
#pragma unroll
    for (int i = 0; i < B_LOADS; ++i) {
      const int idx = tid + i * NT, k = idx / (BN / 4), nc = (idx % (BN / 4)) * 4;
      rb[i] = ld4(a.W + (size_t)(k0 + k) * N + n0 + nc);
    }
  };
  auto store = [&](int buf) {
#pragma unroll
    for (int i = 0; i < A_LOADS; ++i) {
      const int idx = tid + i * NT, r = idx / (BK / 4), kc = (idx % (BK / 4)) * 4;
      st4(&As[buf][r][kc], ra[i]);
    }
#pragma unroll
    for (int i = 0; i < B_LOADS; ++i) {
      const int idx = tid + i * NT, k = idx / (BN / 4), nc = (idx % (BN / 4)) * 4;
      st4(&Bs[buf][k][nc], rb[i]);
    }
  };

  const int warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
  const int wm0 = (warp / T::WN) * (BM / T::WM), wn0 = (warp % T::WN) * (BN / T::WN);
  float acc[MI][NI][4];
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j)
#pragma unroll
      for (int c = 0; c < 4; ++c) acc[i][j][c] = 0.f;

  load(0);
  store(0);
  __syncthreads();
  const int steps = K / BK;
  for (int kt = 0; kt < steps; ++kt) {
    const int buf = kt & 1;
    if (kt + 1 < steps) load((kt + 1) * BK);
#pragma unroll
    for (int kk = 0; kk < BK; kk += 8) {
      uint32_t bh[NI][2], bl[NI][2];
#pragma unroll
      for (int j = 0; j < NI; ++j) {
        split_tf32(Bs[buf][kk + t][wn0 + j * 8 + g], bh[j][0], bl[j][0]);
        split_tf32(Bs[buf][kk + t + 4][wn0 + j * 8 + g], bh[j][1], bl[j][1]);
      }
#pragma unroll
      for (int i = 0; i < MI; ++i) {
        const int r = wm0 + i * 16 + g;
        uint32_t ah[4], al[4];
        split_tf32(As[buf][r][kk + t], ah[0], al[0]);
        split_tf32(As[buf][r + 8][kk + t], ah[1], al[1]);
        split_tf32(As[buf][r][kk + t + 4], ah[2], al[2]);
        split_tf32(As[buf][r + 8][kk + t + 4], ah[3], al[3]);
#pragma unroll
        for (int j = 0; j < NI; ++j) {
          mma_tf32(acc[i][j], al, bh[j]);
          mma_tf32(acc[i][j], ah, bl[j]);
          mma_tf32(acc[i][j], ah, bh[j]);
        }
      }
    }
    if (kt + 1 < steps) store(buf ^ 1);
    __syncthreads();
  }

#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int m = m0 + wm0 + i * 16 + g + 8 * half;
      if (m >= M) continue;
#pragma unroll
      for (int j = 0; j < NI; ++j) {
        const int n = n0 + wn0 + j * 8 + 2 * t;
        float2 c;
        c.x = epilogue<Op>(a, acc[i][j][2 * half], m, n);
        c.y = epilogue<Op>(a, acc[i][j][2 * half + 1], m, n + 1);
        *reinterpret_cast<float2*>(a.C + (size_t)m * N + n) = c;
      }
    }
}

}  // namespace vit
