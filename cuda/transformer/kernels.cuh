// cuda/transformer/kernels.cuh — the vision transformer's forward kernels (no cuBLAS, no cuDNN). Each
// operation is its own kernel or a tagged instantiation of the one GEMM template, so an nsys kernel
// summary has one row per operation:
//
//   patch_embed_kernel            x = patches·Wpe + bpe + pos                  one block per image
//   vit_gemm<LnQkv, …>            qkv = LN1(x)·Wqkv + bqkv                      LayerNorm in the prologue
//   attention_kernel              o_h = softmax(q_h·k_hᵀ/√32)·v_h               one block per (image, head)
//   vit_gemm<AttnProjResidual, …> x = x + o·Wo + bo                             residual in the epilogue
//   vit_gemm<LnFc1Gelu, …>        u = GELU(LN2(x)·W1 + b1)                      LN prologue, GELU epilogue
//   vit_gemm<Fc2Residual, …>      x = x + u·W2 + b2                             residual in the epilogue
//   final_ln_pool_kernel          pooled = mean_t LNf(x)_t                      one block per image
//   head_kernel                   logits = pooled·Wh + bh                       one thread per logit
//
// Weights are in the device layout (model.h device_layout: every Linear weight [in × out]). All
// arithmetic is float32 with the accurate library functions (expf, erff, sqrtf; no fast-math), so
// the bounds of cuda/transformer/error_scale.h hold for it.
#pragma once
#include <cuda_runtime.h>  // with -DVIT_EMULATE: cuda/transformer/emu/cuda_runtime.h, the CPU stand-in

#include <cmath>
#include <cstdint>

#ifndef VIT_EMULATE
// A kernel launch (the emulation runs it on the CPU instead) and the dynamic shared memory array.
#define VIT_LAUNCH(kernel, grid, block, smem, stream, ...) kernel<<<(grid), (block), (smem), (stream)>>>(__VA_ARGS__)
#define VIT_DYNAMIC_SMEM(name) extern __shared__ float name[]
#endif

namespace vit {

__device__ __forceinline__ float4 ld4(const float* p) { return *reinterpret_cast<const float4*>(p); }
__device__ __forceinline__ void st4(float* p, float4 v) { *reinterpret_cast<float4*>(p) = v; }

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

// Exact GELU, PyTorch's default: 0.5·x·(1 + erf(x/√2)).
__device__ __forceinline__ float gelu_erf(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f)); }

// ------------------------------------------------------------------------------------------ patch embedding
// One block per image: its pixels into shared memory, then each thread computes outputs (t, c) with
// consecutive threads on consecutive channels (coalesced stores, the weight column read along c).
__global__ void __launch_bounds__(256) patch_embed_kernel(const float* __restrict__ images, const float* __restrict__ w,
                                                          const float* __restrict__ bias, const float* __restrict__ pos,
                                                          float* __restrict__ x, int image, int patch, int d) {
  VIT_DYNAMIC_SMEM(pix);  // image² floats
  const int b = blockIdx.x, n_pix = image * image, grid = image / patch, tokens = grid * grid, pd = patch * patch;
  const float* img = images + (size_t)b * n_pix;
  for (int i = threadIdx.x; i < n_pix; i += blockDim.x) pix[i] = img[i];
  __syncthreads();
  float* out = x + (size_t)b * tokens * d;
  for (int idx = threadIdx.x; idx < tokens * d; idx += blockDim.x) {
    const int t = idx / d, c = idx % d, py = t / grid, px = t % grid;
    float acc = 0.f;
    for (int p = 0; p < pd; ++p) {
      const int dy = p / patch, dx = p % patch;
      acc = fmaf(pix[(py * patch + dy) * image + px * patch + dx], w[p * d + c], acc);
    }
    out[idx] = acc + bias[c] + pos[idx];
  }
}

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

struct GemmArgs {
  const float* A;      // [M × K]
  const float* W;      // [K × N]
  const float* bias;   // [N]
  const float* R;      // [M × N], the residual (kBiasResidual)
  float* C;            // [M × N]
  int M, N, K;
  const float* gamma;  // [K], the LayerNorm prologue
  const float* beta;
  float eps;
  float* ln_out;       // [M × K] or nullptr
};

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

  if constexpr (Op::kLn) {  // each row's mean and 1/sqrt(var + eps): one warp per row
    const int warp = tid / 32, lane = tid % 32, nv = K / 128;
    for (int r = warp; r < BM; r += NT / 32) {
      const int m = m0 + r;
      float mean = 0.f, rstd = 0.f;
      if (m < M) {
        const float* row = a.A + (size_t)m * K;
        float4 v[4];
        float s = 0.f;
#pragma unroll
        for (int j = 0; j < 4; ++j)
          if (j < nv) {
            v[j] = ld4(row + (j * 32 + lane) * 4);
            s += (v[j].x + v[j].y) + (v[j].z + v[j].w);
          }
        mean = warp_sum(s) / (float)K;
        float q = 0.f;
#pragma unroll
        for (int j = 0; j < 4; ++j)
          if (j < nv) {
            const float dx = v[j].x - mean, dy = v[j].y - mean, dz = v[j].z - mean, dw = v[j].w - mean;
            q += (dx * dx + dy * dy) + (dz * dz + dw * dw);
          }
        rstd = 1.0f / sqrtf(warp_sum(q) / (float)K + a.eps);
      }
      if (lane == 0) { s_mean[r] = mean; s_rstd[r] = rstd; }
    }
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
        if constexpr (Op::kLn) {
          const float mean = s_mean[r], rstd = s_rstd[r];
          const float4 g = ld4(a.gamma + k0 + kc), be = ld4(a.beta + k0 + kc);
          v.x = fmaf((v.x - mean) * rstd, g.x, be.x);
          v.y = fmaf((v.y - mean) * rstd, g.y, be.y);
          v.z = fmaf((v.z - mean) * rstd, g.z, be.z);
          v.w = fmaf((v.w - mean) * rstd, g.w, be.w);
          if (a.ln_out && blockIdx.x == 0) st4(a.ln_out + (size_t)m * K + k0 + kc, v);
        }
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

// ------------------------------------------------------------------------------------------ attention
// One block of 4 warps per (head, image): that head's q, k, v (T × 32 each) into shared memory (k's
// rows padded to 33, so lane j reading key row j is conflict-free). Each warp takes query rows
// i = warp, warp + 4, …: lane j holds the scores of keys j and j + 32 in registers (T ≤ 64), the row
// maximum and the sum of exponentials are warp reductions, and with the whole row in registers the
// softmax is the exact max-subtracted one (numerically stable; no running rescale is needed, which an
// online softmax does when the keys stream through in blocks). Then lane c accumulates
// o[i][c] = Σ_j p_j·v[j][c], p_j broadcast by shuffle: one coalesced 128-byte row store per query.
// `probs` (the checks' tap: [B × H × T × T]) may be nullptr.
constexpr int kAttnMaxTokens = 64, kHeadDim = 32, kAttnThreads = 128;

__global__ void __launch_bounds__(kAttnThreads) attention_kernel(const float* __restrict__ qkv, float* __restrict__ out,
                                                                 float* __restrict__ probs, int T, int d, float scale) {
  __shared__ __align__(16) float qs[kAttnMaxTokens][kHeadDim];
  __shared__ float ks[kAttnMaxTokens][kHeadDim + 1];
  __shared__ __align__(16) float vs[kAttnMaxTokens][kHeadDim];
  const int h = blockIdx.x, heads = gridDim.x, b = blockIdx.y, tid = threadIdx.x;
  const float* base = qkv + (size_t)b * T * 3 * d + h * kHeadDim;
  for (int idx = tid; idx < 3 * T * (kHeadDim / 4); idx += kAttnThreads) {
    const int which = idx / (T * (kHeadDim / 4)), rem = idx % (T * (kHeadDim / 4));
    const int t = rem / (kHeadDim / 4), c = (rem % (kHeadDim / 4)) * 4;
    const float4 v = ld4(base + (size_t)t * 3 * d + which * d + c);
    if (which == 0) st4(&qs[t][c], v);
    else if (which == 2) st4(&vs[t][c], v);
    else { ks[t][c] = v.x; ks[t][c + 1] = v.y; ks[t][c + 2] = v.z; ks[t][c + 3] = v.w; }
  }
  __syncthreads();
  const int warp = tid / 32, lane = tid % 32, j0 = lane, j1 = lane + 32;
  for (int i = warp; i < T; i += kAttnThreads / 32) {
    float s0 = -INFINITY, s1 = -INFINITY;
    if (j0 < T) {
      float dot = 0.f;
#pragma unroll
      for (int c = 0; c < kHeadDim; ++c) dot = fmaf(qs[i][c], ks[j0][c], dot);
      s0 = dot * scale;
    }
    if (j1 < T) {
      float dot = 0.f;
#pragma unroll
      for (int c = 0; c < kHeadDim; ++c) dot = fmaf(qs[i][c], ks[j1][c], dot);
      s1 = dot * scale;
    }
    const float mx = warp_max(fmaxf(s0, s1));
    const float e0 = j0 < T ? expf(s0 - mx) : 0.f, e1 = j1 < T ? expf(s1 - mx) : 0.f;
    const float z = warp_sum(e0 + e1);
    const float p0 = e0 / z, p1 = e1 / z;
    if (probs) {
      float* prow = probs + (((size_t)b * heads + h) * T + i) * T;
      if (j0 < T) prow[j0] = p0;
      if (j1 < T) prow[j1] = p1;
    }
    float o = 0.f;
    for (int j = 0; j < T; ++j) {
      const float pj = __shfl_sync(0xffffffffu, j < 32 ? p0 : p1, j & 31);
      o = fmaf(pj, vs[j][lane], o);
    }
    out[((size_t)b * T + i) * d + h * kHeadDim + lane] = o;
  }
}

// ------------------------------------------------------------------------------------------ final LN + pool
// One block of 8 warps per image: warp w normalises tokens w, w + 8, … (the LN prologue's two passes
// in registers) and sums them per lane; the warps' partial sums meet in shared memory in a fixed
// order (deterministic), divided by T. `ln_out` ([B·T × d], the checks' tap) may be nullptr.
constexpr int kPoolThreads = 256;

__global__ void __launch_bounds__(kPoolThreads) final_ln_pool_kernel(const float* __restrict__ x, const float* __restrict__ gamma,
                                                                     const float* __restrict__ beta, float* __restrict__ pooled,
                                                                     float* __restrict__ ln_out, int T, int d, float eps) {
  __shared__ __align__(16) float part[kPoolThreads / 32][512];
  const int b = blockIdx.x, warp = threadIdx.x / 32, lane = threadIdx.x % 32, nv = d / 128;
  float4 sum[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) sum[j] = make_float4(0.f, 0.f, 0.f, 0.f);
  for (int t = warp; t < T; t += kPoolThreads / 32) {
    const float* row = x + ((size_t)b * T + t) * d;
    float4 v[4];
    float s = 0.f;
#pragma unroll
    for (int j = 0; j < 4; ++j)
      if (j < nv) { v[j] = ld4(row + (j * 32 + lane) * 4); s += (v[j].x + v[j].y) + (v[j].z + v[j].w); }
    const float mean = warp_sum(s) / (float)d;
    float q = 0.f;
#pragma unroll
    for (int j = 0; j < 4; ++j)
      if (j < nv) {
        const float dx = v[j].x - mean, dy = v[j].y - mean, dz = v[j].z - mean, dw = v[j].w - mean;
        q += (dx * dx + dy * dy) + (dz * dz + dw * dw);
      }
    const float rstd = 1.0f / sqrtf(warp_sum(q) / (float)d + eps);
#pragma unroll
    for (int j = 0; j < 4; ++j)
      if (j < nv) {
        const int c = (j * 32 + lane) * 4;
        const float4 g = ld4(gamma + c), be = ld4(beta + c);
        float4 y;
        y.x = fmaf((v[j].x - mean) * rstd, g.x, be.x);
        y.y = fmaf((v[j].y - mean) * rstd, g.y, be.y);
        y.z = fmaf((v[j].z - mean) * rstd, g.z, be.z);
        y.w = fmaf((v[j].w - mean) * rstd, g.w, be.w);
        if (ln_out) st4(ln_out + ((size_t)b * T + t) * d + c, y);
        sum[j].x += y.x; sum[j].y += y.y; sum[j].z += y.z; sum[j].w += y.w;
      }
  }
#pragma unroll
  for (int j = 0; j < 4; ++j)
    if (j < nv) st4(&part[warp][(j * 32 + lane) * 4], sum[j]);
  __syncthreads();
  for (int c = threadIdx.x; c < d; c += kPoolThreads) {
    float s = 0.f;
#pragma unroll
    for (int w = 0; w < kPoolThreads / 32; ++w) s += part[w][c];
    pooled[(size_t)b * d + c] = s / (float)T;
  }
}

// ------------------------------------------------------------------------------------------ head
// logits[b][k] = Σ_c pooled[b][c]·Wh[c][k] + bh[k]: one thread per logit (B·C threads, d terms each).
__global__ void __launch_bounds__(256) head_kernel(const float* __restrict__ pooled, const float* __restrict__ w,
                                                   const float* __restrict__ bias, float* __restrict__ logits, int B, int d,
                                                   int C) {
  const int idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= B * C) return;
  const int b = idx / C, k = idx % C;
  const float* p = pooled + (size_t)b * d;
  float acc = 0.f;
  for (int c = 0; c < d; ++c) acc = fmaf(p[c], w[c * C + k], acc);
  logits[idx] = acc + bias[k];
}

}  // namespace vit
