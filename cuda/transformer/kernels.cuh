// cuda/transformer/kernels.cuh — the vision transformer's forward kernels (no cuBLAS, no cuDNN). Each
// operation is its own kernel or a tagged instantiation of the one GEMM template, so an nsys kernel
// summary has one row per operation:
//
//   patch_embed_kernel            x = patches·Wpe + bpe + pos                  a block per image, a thread per channel
//   (gemm_kernel.cuh)
//   vit_gemm<LnQkv, …>            qkv = LN1(x)·Wqkv + bqkv                      LayerNorm in the prologue
//   attention_kernel              o_h = softmax(q_h·k_hᵀ/√32)·v_h               a block per (image, head), a warp per 8 queries
//   attention_bf16_kernel         the same on the tensor cores, bf16 operands   a block per (image, head), a warp per 16 queries
//   vit_gemm<AttnProjResidual, …> x = x + o·Wo + bo                             residual in the epilogue
//   vit_gemm<LnFc1Gelu, …>        u = GELU(LN2(x)·W1 + b1)                      LN prologue, GELU epilogue
//   vit_gemm<Fc2Residual, …>      x = x + u·W2 + b2                             residual in the epilogue
//   ln_operand_kernel, join_operand_kernel: the engine flows' LayerNorm and checks' tap (3xTF32 parts or bfloat16)
//   split3_gemm_kernel, bf16_gemm_kernel: the engine's GEMMs one thread an output, where the engine is absent
//   final_ln_pool_kernel          pooled = mean_t LNf(x)_t                      one block per image
//   head_kernel                   logits = pooled·Wh + bh                       a thread per logit, 4 images a block
//
// Weights are in the device layout (model.h device_layout: every Linear weight [in × out]). All
// arithmetic is float32 with the accurate library functions (expf, erff, sqrtf; no fast-math), so
// the bounds of cuda/transformer/error_scale.h hold for it.
#pragma once
#include <cuda_bf16.h>  // __nv_bfloat16 (the bf16 flow's operands)

#include "common/mma.cuh"  // the bf16 attention's mma.sync and bfloat16 pairs
#include "common/precision.h"  // split_tf32: the 3xTF32 operands; round_to_precision: bfloat16's
#include "transformer/device_util.cuh"
#include "transformer/gemm.h"  // OperandForm

namespace vit {

// ------------------------------------------------------------------------------------------ patch embedding
// One block per image, a thread per channel c (blockDim = d): the image's pixels and the patch weight
// (pd × d) in shared memory; the thread sums kPatchTokens tokens together (independent FMA chains),
// each product a broadcast pixel times the weight word of its channel (conflict-free), p = 0 .. pd-1
// in order.
constexpr int kPatchTokens = 8;
inline size_t patch_embed_smem_bytes(int image, int patch_dim, int d) {
  return ((size_t)image * image + (size_t)patch_dim * d) * sizeof(float);
}

__global__ void __launch_bounds__(512) patch_embed_kernel(const float* __restrict__ images, const float* __restrict__ w,
                                                          const float* __restrict__ bias, const float* __restrict__ pos,
                                                          float* __restrict__ x, int image, int patch, int d) {
  VIT_DYNAMIC_SMEM(smem);
  const int b = blockIdx.x, n_pix = image * image, grid = image / patch, tokens = grid * grid, pd = patch * patch;
  float* pix = smem;         // [image²] this image's pixels
  float* ws = smem + n_pix;  // [pd × d] the patch weight, as in global memory
  const float* img = images + (size_t)b * n_pix;
  // The staging loops unrolled so that their loads are in flight together: at one block an SM (batch
  // 128) a load, then its store, a loop turn at a time, waited a memory round trip each (PERFLOG T6).
#pragma unroll 8
  for (int i = threadIdx.x; i < n_pix; i += blockDim.x) pix[i] = __ldg(img + i);
#pragma unroll 8
  for (int i = threadIdx.x; i < pd * d; i += blockDim.x) ws[i] = __ldg(w + i);
  __syncthreads();
  const int c = threadIdx.x;  // blockDim.x == d
  const float bc = bias[c];
  float* out = x + (size_t)b * tokens * d;
  for (int t0 = 0; t0 < tokens; t0 += kPatchTokens) {
    const float* top[kPatchTokens];  // each token's patch, its top-left pixel (past the last token: the last)
#pragma unroll
    for (int g = 0; g < kPatchTokens; ++g) {
      const int t = t0 + g < tokens ? t0 + g : tokens - 1, py = t / grid, px = t - py * grid;
      top[g] = pix + py * patch * image + px * patch;
    }
    float acc[kPatchTokens];
#pragma unroll
    for (int g = 0; g < kPatchTokens; ++g) acc[g] = 0.f;
    for (int dy = 0; dy < patch; ++dy)
      for (int dx = 0; dx < patch; ++dx) {
        const float wv = ws[(dy * patch + dx) * d + c];
#pragma unroll
        for (int g = 0; g < kPatchTokens; ++g) acc[g] = fmaf(top[g][dy * image + dx], wv, acc[g]);
      }
#pragma unroll
    for (int g = 0; g < kPatchTokens; ++g)
      if (t0 + g < tokens) out[(size_t)(t0 + g) * d + c] = acc[g] + bc + pos[(size_t)(t0 + g) * d + c];
  }
}

// ------------------------------------------------------------------------------------------ engine operands
// The engine flows (forward.cu enqueue_layer_engine) keep each GEMM's A operand in its form
// (gemm.h OperandForm): kSplitTf32, row m of an [M × 2K] float array holding the value's two TF32
// parts, hi in [0, K) and lo in [K, 2K) (common/precision.h split_tf32); kBf16, row m of an [M × K]
// __nv_bfloat16 array, each value rounded to nearest even.

// The bits of a float rounded to bfloat16 (to nearest even; NaN and infinities kept), in the low half.
__device__ __forceinline__ uint32_t bf16_bits(float x) {
  return __float_as_uint(mlp::round_to_precision(x, mlp::Precision::BF16)) >> 16;
}

// Elements (row, c .. c + 3) of a K-column operand in form F (c a multiple of 4): 16-byte stores of the
// TF32 parts, one 8-byte store of the four bfloat16s.
template <OperandForm F>
__device__ __forceinline__ void store_operand4(void* out, size_t row, int K, int c, float4 yv) {
  if constexpr (F == OperandForm::kSplitTf32) {
    float* hi_row = static_cast<float*>(out) + row * 2 * K;
    const float y[4] = {yv.x, yv.y, yv.z, yv.w};
    float hi[4], lo[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) mlp::split_tf32(y[e], &hi[e], &lo[e]);
    st4(hi_row + c, make_float4(hi[0], hi[1], hi[2], hi[3]));
    st4(hi_row + K + c, make_float4(lo[0], lo[1], lo[2], lo[3]));
  } else {
    float2* at = reinterpret_cast<float2*>(static_cast<__nv_bfloat16*>(out) + row * K + c);
    *at = make_float2(__uint_as_float(bf16_bits(yv.x) | bf16_bits(yv.y) << 16),
                      __uint_as_float(bf16_bits(yv.z) | bf16_bits(yv.w) << 16));
  }
}

// Element (row, c) of a K-column operand in form F, as the float the GEMM multiplies (hi + lo; the
// bfloat16's value).
template <OperandForm F>
__device__ __forceinline__ float load_operand(const void* in, size_t row, int K, int c) {
  if constexpr (F == OperandForm::kSplitTf32) {
    const float* a = static_cast<const float*>(in) + row * 2 * K;
    return a[c] + a[K + c];
  } else {
    return __bfloat162float(static_cast<const __nv_bfloat16*>(in)[row * K + c]);
  }
}

// ------------------------------------------------------------------------------------------ attention
// One block per (head, image), a warp per 8 query rows (ceil(T / 8) warps): that head's q, k, v
// (T × 32 each) into shared memory, k transposed (kT[c][j], rows of 65 so that the transposing
// stores spread over the banks; lane j reads column j, conflict-free). Each warp holds the scores of
// its 8 queries against keys lane and lane + 32 (T ≤ 64) in registers, 16 accumulators: a step over
// 4 channels reads 8 query float4s (broadcasts) and 8 key words for 64 FMAs. The row maximum and
// the sum of exponentials are warp reductions over the whole row in registers, so the softmax is the
// exact max-subtracted one (no online rescale). The 8 rows of probabilities go to the warp's slice
// of shared memory; then lane c accumulates o[i][c] = Σ_j p_ij·v[j][c] for the 8 rows, a step over
// 4 keys reading 8 probability float4s (broadcasts) and 4 value words for 32 FMAs, and stores
// coalesced 128-byte rows. Every sum runs in the order of the one-query-a-warp kernel this replaced
// (channels 0..31 for a score, keys 0..T-1 for an output; the padded keys add p = 0 times v = 0),
// so the results are bitwise that kernel's. `out` ([B·T × d], float32), `split` ([B·T × 2d], the 3xTF32
// flow's operand of the projection: hi in [0, d), lo in [d, 2d)) and `probs` (the checks' tap:
// [B × H × T × T]) may each be nullptr.
constexpr int kAttnMaxTokens = 64, kHeadDim = 32, kAttnRows = 8 /* queries a warp */, kAttnKeyStride = kAttnMaxTokens + 1;
__host__ __device__ inline int attn_warps(int T) { return (T + kAttnRows - 1) / kAttnRows; }
inline int attn_threads(int T) { return 32 * attn_warps(T); }
inline size_t attn_smem_bytes(int T) {
  const int tq = attn_warps(T) * kAttnRows, tk = (T + 3) / 4 * 4;
  return ((size_t)tq * kHeadDim + (size_t)kHeadDim * kAttnKeyStride + (size_t)tk * kHeadDim +
          (size_t)attn_warps(T) * kAttnRows * kAttnMaxTokens) * sizeof(float);
}

__global__ void __launch_bounds__(32 * kAttnMaxTokens / kAttnRows)
attention_kernel(const float* __restrict__ qkv, float* __restrict__ out, float* __restrict__ split, float* __restrict__ probs, int T,
                 int d, float scale) {
  VIT_DYNAMIC_SMEM(smem);
  const int warps = attn_warps(T), tq = warps * kAttnRows, tk = (T + 3) / 4 * 4;
  float* qs = smem;                            // [tq][32]        query rows; rows past T zero
  float* kT = qs + tq * kHeadDim;              // [32][65]        keys transposed; keys past T zero
  float* vs = kT + kHeadDim * kAttnKeyStride;  // [tk][32]        value rows; rows past T zero
  float* ps = vs + tk * kHeadDim;              // [warps][8][64]  each warp's probabilities
  const int h = blockIdx.x, heads = gridDim.x, b = blockIdx.y, tid = threadIdx.x, nthreads = blockDim.x;
  const float* base = qkv + (size_t)b * T * 3 * d + h * kHeadDim;
  constexpr int kQuads = kHeadDim / 4;
  const float4 zero = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll 2
  for (int idx = tid; idx < tq * kQuads; idx += nthreads) {  // q (tq rows), v (tk rows)
    const int t = idx / kQuads, c = (idx % kQuads) * 4;
    st4(&qs[t * kHeadDim + c], t < T ? ld4(base + (size_t)t * 3 * d + c) : zero);
    if (t < tk) st4(&vs[t * kHeadDim + c], t < T ? ld4(base + (size_t)t * 3 * d + 2 * d + c) : zero);
  }
#pragma unroll 3
  for (int idx = tid; idx < kAttnMaxTokens * kQuads; idx += nthreads) {  // k, transposed, 64 keys
    const int t = idx / kQuads, c = (idx % kQuads) * 4;
    const float4 v = t < T ? ld4(base + (size_t)t * 3 * d + d + c) : zero;
    kT[(c + 0) * kAttnKeyStride + t] = v.x;
    kT[(c + 1) * kAttnKeyStride + t] = v.y;
    kT[(c + 2) * kAttnKeyStride + t] = v.z;
    kT[(c + 3) * kAttnKeyStride + t] = v.w;
  }
  __syncthreads();
  const int warp = tid / 32, lane = tid % 32, i0 = warp * kAttnRows, j0 = lane, j1 = lane + 32;
  float s0[kAttnRows], s1[kAttnRows];  // the scores of keys j0 and j1 for queries i0 + r
#pragma unroll
  for (int r = 0; r < kAttnRows; ++r) s0[r] = s1[r] = 0.f;
#pragma unroll 2
  for (int c = 0; c < kHeadDim; c += 4) {
    float4 q[kAttnRows];
#pragma unroll
    for (int r = 0; r < kAttnRows; ++r) q[r] = ld4(&qs[(i0 + r) * kHeadDim + c]);
    const float* kc = kT + c * kAttnKeyStride;
    const float ka[4] = {kc[j0], kc[kAttnKeyStride + j0], kc[2 * kAttnKeyStride + j0], kc[3 * kAttnKeyStride + j0]};
    const float kb[4] = {kc[j1], kc[kAttnKeyStride + j1], kc[2 * kAttnKeyStride + j1], kc[3 * kAttnKeyStride + j1]};
#pragma unroll
    for (int r = 0; r < kAttnRows; ++r) {
      s0[r] = fmaf(q[r].x, ka[0], s0[r]); s1[r] = fmaf(q[r].x, kb[0], s1[r]);
      s0[r] = fmaf(q[r].y, ka[1], s0[r]); s1[r] = fmaf(q[r].y, kb[1], s1[r]);
      s0[r] = fmaf(q[r].z, ka[2], s0[r]); s1[r] = fmaf(q[r].z, kb[2], s1[r]);
      s0[r] = fmaf(q[r].w, ka[3], s0[r]); s1[r] = fmaf(q[r].w, kb[3], s1[r]);
    }
  }
  float* pw = ps + warp * kAttnRows * kAttnMaxTokens;  // this warp's [8][64]
#pragma unroll
  for (int r = 0; r < kAttnRows; ++r) {
    const float a0 = j0 < T ? s0[r] * scale : -INFINITY, a1 = j1 < T ? s1[r] * scale : -INFINITY;
    const float mx = warp_max(fmaxf(a0, a1));
    const float e0 = j0 < T ? expf(a0 - mx) : 0.f, e1 = j1 < T ? expf(a1 - mx) : 0.f;
    const float z = warp_sum(e0 + e1);
    const float p0 = e0 / z, p1 = e1 / z;
    pw[r * kAttnMaxTokens + j0] = p0;
    pw[r * kAttnMaxTokens + j1] = p1;
    const int i = i0 + r;
    if (probs && i < T) {
      float* prow = probs + (((size_t)b * heads + h) * T + i) * T;
      if (j0 < T) prow[j0] = p0;
      if (j1 < T) prow[j1] = p1;
    }
  }
  __syncwarp();
  float o[kAttnRows];
#pragma unroll
  for (int r = 0; r < kAttnRows; ++r) o[r] = 0.f;
  for (int j = 0; j < tk; j += 4) {
    const float v0 = vs[(j + 0) * kHeadDim + lane], v1 = vs[(j + 1) * kHeadDim + lane];
    const float v2 = vs[(j + 2) * kHeadDim + lane], v3 = vs[(j + 3) * kHeadDim + lane];
#pragma unroll
    for (int r = 0; r < kAttnRows; ++r) {
      const float4 p = ld4(&pw[r * kAttnMaxTokens + j]);
      o[r] = fmaf(p.x, v0, o[r]);
      o[r] = fmaf(p.y, v1, o[r]);
      o[r] = fmaf(p.z, v2, o[r]);
      o[r] = fmaf(p.w, v3, o[r]);
    }
  }
#pragma unroll
  for (int r = 0; r < kAttnRows; ++r)
    if (i0 + r < T) {
      const size_t row = (size_t)b * T + i0 + r;
      if (out) out[row * d + h * kHeadDim + lane] = o[r];
      if (split) mlp::split_tf32(o[r], &split[row * 2 * d + h * kHeadDim + lane], &split[row * 2 * d + d + h * kHeadDim + lane]);
    }
}

// ------------------------------------------------------------------------------------------ attention (bf16)
// The bf16 engine's attention on the tensor cores (mma.sync m16n8k16: bfloat16 operands, float32 sums),
// o_h = softmax(q_h·k_hᵀ/√32)·v_h as the float32 kernel above computes it, with q, k, P and v rounded to
// bfloat16 before their products. A block of 4 warps per (head, image), warp w owning query rows
// 16w .. 16w + 15 (T ≤ 64). q, k and v go to shared memory as bfloat16 pairs (rows past T zero; v
// transposed, so that a B fragment of P·v is one word; rows padded to conflict-free fragment reads).
// S = q·kᵀ in 8-key tiles (ceil(T/8) of them) of float32 accumulators; each row's exact max-subtracted
// softmax in float32 on the fragments (a lane holds 2 columns a tile of rows g and g + 8, a quad a whole
// row: two shuffles per reduction); two adjacent S tiles, rounded to bfloat16, are one A fragment of
// P·v (keys 16s .. 16s + 15); o in 4 tiles of 8 channels. Writes the projection's bf16 operand
// ([B·T × d]); `out` (the float32 heads) and `probs` (the float32 weights) are the checks' taps and may
// be nullptr.
constexpr int kAttnMmaThreads = 32 * kAttnMaxTokens / 16;
constexpr int kAttnQkWords = kHeadDim / 2 + 4;         // a q or k row: 16 words of bf16 pairs, 4 of padding
constexpr int kAttnVtWords = kAttnMaxTokens / 2 + 4;   // a row of vᵀ (one channel): 32 words, 4 of padding

__global__ void __launch_bounds__(kAttnMmaThreads)
attention_bf16_kernel(const float* __restrict__ qkv, float* __restrict__ out, __nv_bfloat16* __restrict__ operand,
                      float* __restrict__ probs, int T, int d, float scale) {
  __shared__ uint32_t qs[kAttnMaxTokens * kAttnQkWords];  // [64][20]  q rows as bf16 pairs
  __shared__ uint32_t ks[kAttnMaxTokens * kAttnQkWords];  // [64][20]  k rows
  __shared__ uint32_t vt[kHeadDim * kAttnVtWords];        // [32][36]  vᵀ: channel c's keys as bf16 pairs
  __nv_bfloat16* vt16 = reinterpret_cast<__nv_bfloat16*>(vt);
  const int h = blockIdx.x, heads = gridDim.x, b = blockIdx.y, tid = threadIdx.x;
  const float* base = qkv + (size_t)b * T * 3 * d + h * kHeadDim;
  constexpr int kQuads = kHeadDim / 4;
  const float4 zero = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll 4
  for (int idx = tid; idx < kAttnMaxTokens * kQuads; idx += kAttnMmaThreads) {
    const int t = idx / kQuads, c = (idx % kQuads) * 4;
    const float* row = base + (size_t)t * 3 * d + c;
    const float4 q = t < T ? ld4(row) : zero, k = t < T ? ld4(row + d) : zero, v = t < T ? ld4(row + 2 * d) : zero;
    qs[t * kAttnQkWords + c / 2] = mlp::mma::pack_bf16x2(q.x, q.y);
    qs[t * kAttnQkWords + c / 2 + 1] = mlp::mma::pack_bf16x2(q.z, q.w);
    ks[t * kAttnQkWords + c / 2] = mlp::mma::pack_bf16x2(k.x, k.y);
    ks[t * kAttnQkWords + c / 2 + 1] = mlp::mma::pack_bf16x2(k.z, k.w);
    vt16[(c + 0) * 2 * kAttnVtWords + t] = __float2bfloat16_rn(v.x);
    vt16[(c + 1) * 2 * kAttnVtWords + t] = __float2bfloat16_rn(v.y);
    vt16[(c + 2) * 2 * kAttnVtWords + t] = __float2bfloat16_rn(v.z);
    vt16[(c + 3) * 2 * kAttnVtWords + t] = __float2bfloat16_rn(v.w);
  }
  __syncthreads();
  const int warp = tid / 32, lane = tid % 32, g = lane / 4, tq = lane % 4, r0 = 16 * warp + g;
  const int ntiles = (T + 7) / 8;
  float sc[kAttnMaxTokens / 8][4];  // S tile j: (r0, 8j + 2tq + {0,1}) in [0], [1]; row r0 + 8 in [2], [3]
#pragma unroll
  for (int j = 0; j < kAttnMaxTokens / 8; ++j) sc[j][0] = sc[j][1] = sc[j][2] = sc[j][3] = 0.f;
#pragma unroll
  for (int kk = 0; kk < kHeadDim / 16; ++kk) {  // channels 16kk .. 16kk + 15
    const int w0 = 8 * kk + tq;
    const uint32_t a[4] = {qs[r0 * kAttnQkWords + w0], qs[(r0 + 8) * kAttnQkWords + w0], qs[r0 * kAttnQkWords + w0 + 4],
                           qs[(r0 + 8) * kAttnQkWords + w0 + 4]};
#pragma unroll
    for (int j = 0; j < kAttnMaxTokens / 8; ++j)
      if (j < ntiles) {
        const uint32_t bb[2] = {ks[(8 * j + g) * kAttnQkWords + w0], ks[(8 * j + g) * kAttnQkWords + w0 + 4]};
        mlp::mma::mma_m16n8k16_bf16(sc[j], a, bb);
      }
  }
#pragma unroll
  for (int hh = 0; hh < 2; ++hh) {  // rows r0 and r0 + 8
    float mx = -INFINITY;
#pragma unroll
    for (int j = 0; j < kAttnMaxTokens / 8; ++j)
#pragma unroll
      for (int q = 0; q < 2; ++q) {
        const int key = 8 * j + 2 * tq + q;
        sc[j][2 * hh + q] = key < T ? sc[j][2 * hh + q] * scale : -INFINITY;
        mx = fmaxf(mx, sc[j][2 * hh + q]);
      }
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    float z = 0.f;
#pragma unroll
    for (int j = 0; j < kAttnMaxTokens / 8; ++j)
#pragma unroll
      for (int q = 0; q < 2; ++q) {
        const int key = 8 * j + 2 * tq + q;
        const float e = key < T ? expf(sc[j][2 * hh + q] - mx) : 0.f;
        sc[j][2 * hh + q] = e;
        z += e;
      }
    z += __shfl_xor_sync(0xffffffffu, z, 1);
    z += __shfl_xor_sync(0xffffffffu, z, 2);
    const int i = r0 + 8 * hh;
    float* prow = probs && i < T ? probs + (((size_t)b * heads + h) * T + i) * T : nullptr;
#pragma unroll
    for (int j = 0; j < kAttnMaxTokens / 8; ++j)
#pragma unroll
      for (int q = 0; q < 2; ++q) {
        const int key = 8 * j + 2 * tq + q;
        sc[j][2 * hh + q] = sc[j][2 * hh + q] / z;
        if (prow && key < T) prow[key] = sc[j][2 * hh + q];
      }
  }
  float o[kHeadDim / 8][4];
#pragma unroll
  for (int n = 0; n < kHeadDim / 8; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.f;
#pragma unroll
  for (int kk = 0; kk < kAttnMaxTokens / 16; ++kk) {  // keys 16kk .. 16kk + 15: S tiles 2kk and 2kk + 1
    if (16 * kk >= T) break;
    const uint32_t a[4] = {mlp::mma::pack_bf16x2(sc[2 * kk][0], sc[2 * kk][1]), mlp::mma::pack_bf16x2(sc[2 * kk][2], sc[2 * kk][3]),
                           mlp::mma::pack_bf16x2(sc[2 * kk + 1][0], sc[2 * kk + 1][1]),
                           mlp::mma::pack_bf16x2(sc[2 * kk + 1][2], sc[2 * kk + 1][3])};
#pragma unroll
    for (int n = 0; n < kHeadDim / 8; ++n) {
      const uint32_t bb[2] = {vt[(8 * n + g) * kAttnVtWords + 8 * kk + tq], vt[(8 * n + g) * kAttnVtWords + 8 * kk + tq + 4]};
      mlp::mma::mma_m16n8k16_bf16(o[n], a, bb);
    }
  }
#pragma unroll
  for (int hh = 0; hh < 2; ++hh) {
    const int i = r0 + 8 * hh;
    if (i >= T) continue;
    const size_t row = (size_t)b * T + i;
#pragma unroll
    for (int n = 0; n < kHeadDim / 8; ++n) {
      const int c = h * kHeadDim + 8 * n + 2 * tq;
      if (out) {
        out[row * d + c] = o[n][2 * hh];
        out[row * d + c + 1] = o[n][2 * hh + 1];
      }
      *reinterpret_cast<uint32_t*>(operand + row * d + c) = mlp::mma::pack_bf16x2(o[n][2 * hh], o[n][2 * hh + 1]);
    }
  }
}

// ------------------------------------------------------------------------------------------ engine flows
// ln_operand_kernel: a warp per row, LayerNorm(x) with the two passes of the LN prologue (mean, then the
// mean square of x - mean, both warp sums; float4 per lane per 128 columns), written in form F into
// `operand` (the next GEMM's A, [M × d] values); `ln_out` ([M × d] float32, the checks' tap) may be nullptr.
constexpr int kLnOperandThreads = 256;

template <OperandForm F>
__global__ void __launch_bounds__(kLnOperandThreads) ln_operand_kernel(const float* __restrict__ x, const float* __restrict__ gamma,
                                                                       const float* __restrict__ beta, void* __restrict__ operand,
                                                                       float* __restrict__ ln_out, int M, int d, float eps) {
  const int row = blockIdx.x * (kLnOperandThreads / 32) + threadIdx.x / 32, lane = threadIdx.x % 32, nv = d / 128;
  if (row >= M) return;  // whole warps leave together
  float4 v[4];
  float mean, rstd;
  warp_ln_row(x + (size_t)row * d, d, eps, lane, v, mean, rstd);
#pragma unroll
  for (int j = 0; j < 4; ++j)
    if (j < nv) {
      const int c = (j * 32 + lane) * 4;
      const float4 yv = ln4(v[j], mean, rstd, ld4(gamma + c), ld4(beta + c));
      if (ln_out) st4(ln_out + (size_t)row * d + c, yv);
      store_operand4<F>(operand, (size_t)row, d, c, yv);
    }
}

// join_operand_kernel: x[m][c] = the value of an [M × n] operand in form F (the checks' view of an
// operand that the flow keeps only in its form).
template <OperandForm F>
__global__ void join_operand_kernel(const void* __restrict__ operand, float* __restrict__ x, int M, int n) {
  const size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= (size_t)M * n) return;
  x[idx] = load_operand<F>(operand, idx / n, n, (int)(idx % n));
}

// split3_gemm_kernel: the wgmma engine's 3xTF32 GEMM and its three transformer epilogues, one thread an
// output, for builds without the engine (the CPU emulation's tests of this flow's indexing; never timed).
// A [M × 2K] and Bt [N × 2K] hold the parts as above; C = epi(Σ hi·hi + (Σ hi_A·lo_B + Σ lo_A·hi_B)),
// the products and the corrections in sums of their own as in the engine (within a sum the engine's
// tensor cores add in their own order). epi 0: + bias; 1: R + (acc + bias); 2: GELU(acc + bias) split,
// hi at C[m·ldc + n], lo at C[m·ldc + N + n].
__global__ void split3_gemm_kernel(const float* __restrict__ A, const float* __restrict__ Bt, const float* __restrict__ bias,
                                   const float* __restrict__ R, float* __restrict__ C, int M, int N, int K, int ldc, int epi) {
  const size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= (size_t)M * N) return;
  const int m = (int)(idx / N), n = (int)(idx % N);
  const float* a = A + (size_t)m * 2 * K;
  const float* b = Bt + (size_t)n * 2 * K;
  float big = 0.f, small = 0.f;
  for (int k = 0; k < K; ++k) big = fmaf(a[k], b[k], big);
  for (int k = 0; k < K; ++k) small = fmaf(a[k], b[K + k], small);
  for (int k = 0; k < K; ++k) small = fmaf(a[K + k], b[k], small);
  const float acc = big + small;
  float* c = C + (size_t)m * ldc;
  if (epi == 0) c[n] = acc + bias[n];
  else if (epi == 1) c[n] = R[(size_t)m * ldc + n] + (acc + bias[n]);
  else mlp::split_tf32(gelu_erf(acc + bias[n]), &c[n], &c[N + n]);
}

// bf16_gemm_kernel: the engine's BF16 GEMM and its transformer epilogues, one thread an output, for
// builds or devices without the engine (the CPU emulation; a GPU other than compute capability 9.0,
// where it is a correct but untuned stand-in). A [M × K] and Bt [N × K] bfloat16, K-major; the
// products of the bfloat16 values summed in float32 in k order. epi 0: C = acc + bias; 1: C = R +
// (acc + bias); 2: GELU(acc + bias) rounded to bfloat16 into C's __nv_bfloat16 [M × ldc].
__global__ void bf16_gemm_kernel(const __nv_bfloat16* __restrict__ A, const __nv_bfloat16* __restrict__ Bt,
                                 const float* __restrict__ bias, const float* __restrict__ R, void* __restrict__ C, int M, int N,
                                 int K, int ldc, int epi) {
  const size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= (size_t)M * N) return;
  const int m = (int)(idx / N), n = (int)(idx % N);
  const __nv_bfloat16* a = A + (size_t)m * K;
  const __nv_bfloat16* b = Bt + (size_t)n * K;
  float acc = 0.f;
  for (int k = 0; k < K; ++k) acc = fmaf(__bfloat162float(a[k]), __bfloat162float(b[k]), acc);
  const size_t at = (size_t)m * ldc + n;
  if (epi == 0) static_cast<float*>(C)[at] = acc + bias[n];
  else if (epi == 1) static_cast<float*>(C)[at] = R[at] + (acc + bias[n]);
  else static_cast<__nv_bfloat16*>(C)[at] = __float2bfloat16_rn(gelu_erf(acc + bias[n]));
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
    float4 v[4];
    float mean, rstd;
    warp_ln_row(x + ((size_t)b * T + t) * d, d, eps, lane, v, mean, rstd);
#pragma unroll
    for (int j = 0; j < 4; ++j)
      if (j < nv) {
        const int c = (j * 32 + lane) * 4;
        const float4 y = ln4(v[j], mean, rstd, ld4(gamma + c), ld4(beta + c));
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
// logits[b][k] = Σ_c pooled[b][c]·Wh[c][k] + bh[k]: a block per kHeadImages images, their pooled rows in
// shared memory, a thread per logit (consecutive threads on consecutive k: the weight row read
// coalesced), the sum over c in order; the loop unrolled so that the weight loads are in flight together.
constexpr int kHeadImages = 4, kHeadThreads = 128;
inline size_t head_smem_bytes(int d) { return (size_t)kHeadImages * d * sizeof(float); }

__global__ void __launch_bounds__(kHeadThreads) head_kernel(const float* __restrict__ pooled, const float* __restrict__ w,
                                                            const float* __restrict__ bias, float* __restrict__ logits, int B,
                                                            int d, int C) {
  VIT_DYNAMIC_SMEM(ps);  // [kHeadImages × d] the block's pooled rows
  const int b0 = blockIdx.x * kHeadImages, nb = B - b0 < kHeadImages ? B - b0 : kHeadImages;
  for (int i = threadIdx.x; i < nb * d; i += blockDim.x) ps[i] = pooled[(size_t)b0 * d + i];
  __syncthreads();
  for (int idx = threadIdx.x; idx < nb * C; idx += blockDim.x) {
    const int bi = idx / C, k = idx - bi * C;
    const float* p = ps + bi * d;
    float acc = 0.f;
#pragma unroll 8
    for (int c = 0; c < d; ++c) acc = fmaf(p[c], __ldg(w + (size_t)c * C + k), acc);
    logits[(size_t)(b0 + bi) * C + k] = acc + bias[k];
  }
}

}  // namespace vit
