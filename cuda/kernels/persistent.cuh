// cuda/kernels/persistent.cuh — the device side of the persistent kernels: tile constants, the kernels'
// argument, each phase's work item and the two epoch loops. cuda/paths/persistent_path.cu defines the
// shipped kernels from them, cuda/paths/persistent_path.h launches them, and dev/persistent_phases.cu
// includes both to time the same phases in other combinations.
//
// Launch and synchronisation latency, not arithmetic, bounds this workload (a step is ~105 MFLOP
// in 10 small kernels), so every block of a grid of one block per SM stays resident for the whole
// epoch and the phases of a step are separated by grid-wide barriers only where the data flow
// needs one. Per step, three phases and three grid.sync():
//
//   A  forward hidden   H = ReLU(X[order]·W1 + b1)              16×16 tiles of H, K split
//                                                                over the 8 warps of a block
//   B  per batch row    z = H_r·W2 + b2, softmax, loss_r,        one row per block
//                       dZ_r = (p − onehot)/B, dH_r = (dZ_r·W2ᵀ)⊙(H_r > 0)   (row-local)
//   C  gradients fused  dW1 tile = X[order]ᵀ·dH → v = μv − lr·g; p += v   32×32 tiles of W1,
//      with the update  (the tile of i-block 0 also does db1 for its columns), dW2/db2 items,
//                       and the last block sums the row losses into step_loss[t] (fixed order)
//
// persistent2 has two barriers a step instead (persistent2_epoch below). Its TF32 and BF16 forms
// (persistent2_epoch<S, PREC>) round the inputs of the two big products, the forward's X and W1
// and dW1's X and dH, to the precision's format as they are staged in shared memory (the host's
// round_to_precision, common/precision.h), and keep every sum in float32: a product of two such
// inputs is exact in float32, so each product and sum is what the tensor cores' TF32 or BF16 MMA
// computes. The head (logits, softmax, dZ, dH, dW2, db2) and db1 stay float32, as in tiled-tf32.
//
// No gradient buffer and no separate update pass: each gradient element is consumed by the
// momentum update the moment its reduction finishes. Every reduction has a fixed order (warp
// partials summed in warp order), so results are bitwise reproducible. Data written inside the
// launch (parameters, velocity, H, dH, dZ, row losses) is read with ld.global.cg, bypassing the
// non-coherent L1, so no block reads a stale copy after a grid.sync().
#pragma once
#include <cooperative_groups.h>

#include "contract/model.h"
#include "paths/kernel_path.h"
#include "kernels/persistent_sizes.h"

namespace mlp {
// Not in an anonymous namespace: the kernels' names in a profile read mlp::k_persistent_epoch.
namespace cg = cooperative_groups;

// Tile constants (kThreads, kTileA, kMaxKA, ...) and the shared-memory sizes: persistent_sizes.h.
static_assert(kRecipeShape.out <= kMaxOut, "the recipe's classes must fit phase B's registers");
static_assert(kRecipeShape.in % 4 == 0 && kRecipeShape.hidden % 4 == 0,
              "the recipe's widths take the 16-byte staging (multiples of 4 floats)");
static_assert(mlp_offsets(kRecipeShape).w1 == 0, "the phases index W1's element (i, j) of params as i·hidden + j");

// The kernel's argument. Every pointer is a device pointer; the kernel writes params, velocity,
// H, dH, dZ, row_loss, step_loss and partials, and reads them back with ld.global.cg.
struct Persist {
  MlpShape s;              // layer widths; mlp_offsets(s) locates each tensor in params/velocity
  int n, batch;            // samples this epoch, rows per step (the last step may be short)
  float lr, mu;            // learning rate, momentum
  float* params;           // [n_params]       flat, parameter layout (model.h), updated in place
  float* velocity;         // [n_params]       momentum velocity, same layout
  const float* X_all;      // [n_total × in]   every training image
  const int* labels_all;   // [n_total]
  const int* order;        // [n]              this epoch's row order
  float* H;                // [batch × hidden] post-ReLU activations of the step
  float* dH;               // [batch × hidden]
  float* dZ;               // [batch × out]
  float* row_loss;         // [batch]          each row's loss, summed by step_loss_sum
  float* step_loss;        // [steps]          each step's mean loss
  float* partials;         // persistent2 only: [in-tiles × batch × hidden] split-K pre-activations
};

// How phase C and persistent2's next-batch staging load global data into shared memory. The
// shipped kernels use StagingShipped: 16-byte loads wherever the widths allow, else the scalar
// form (the fallback for widths that are not multiples of 4). dev/persistent_phases.cu forces
// the scalar form to time it (v3's phase-C staging, v4's next-batch staging); layout and values
// are the same either way, so results are bitwise the same.
struct StagingShipped {
  static constexpr bool kScalarC = false;     // phase C: X and dH chunks
  static constexpr bool kScalarNext = false;  // persistent2: the next batch's X chunks
};

__device__ __forceinline__ float ldcg(const float* p) { return __ldcg(p); }

// A big product's input as its path's precision takes it: unchanged at FP32, else rounded.
template <Precision PREC>
__device__ __forceinline__ float rin(float x) {
  if constexpr (PREC == Precision::FP32) return x;
  else return round_to_precision(x, PREC);
}
template <Precision PREC>
__device__ __forceinline__ float4 rin4(float4 v) {
  return make_float4(rin<PREC>(v.x), rin<PREC>(v.y), rin<PREC>(v.z), rin<PREC>(v.w));
}

// ---- phase A: one 16×16 tile of H ------------------------------------------------------------
// Xs[k][r] (transposed) and Ws[k][c] for a chunk of K; warp w multiplies its slice of K; lane
// (g, q) holds rows 2g, 2g+1 and columns 4q..4q+3; warp partials are summed in warp order.
// Staging uses 16-byte loads when the widths allow (784 and 256 do), scalar loads otherwise.
// KA: input features staged per chunk (kMaxKA shipped; kSmallKA where shared memory is 64 KB).
template <int KA = kMaxKA>
__device__ inline void phase_a_tile(const Persist& P, float* smem, int base, int nb, int tr, int tc) {
  const int I = P.s.in, Hd = P.s.hidden;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, q = lane % 4;
  const int r0 = tr * kTileA, c0 = tc * kTileA;
  const MlpOffsets off = mlp_offsets(P.s);
  const float* W1 = P.params + off.w1;  // [I × Hd]
  const float* b1 = P.params + off.b1;  // [Hd]
  const bool vec = (I % 4 == 0) && (Hd % 4 == 0);
  const int out_col = c0 + tid % kTileA;
  const float bias = out_col < Hd ? ldcg(b1 + out_col) : 0.f;  // loaded now, used after the reduction
  float acc[2][4] = {};
  const int kc_max = min(I, KA);
  float* Xs = smem;                            // [kc_max][16]
  float* Ws = smem + (size_t)kc_max * kTileA;  // [kc_max][16]
  for (int k0 = 0; k0 < I; k0 += kc_max) {
    const int kc = min(kc_max, I - k0);
    if (vec) {
      // Lane l loads a float4 of row l % 16, so the transposed shared-memory stores of a warp
      // land in consecutive words (global reads: 16 rows × 32 bytes, whole sectors).
      const int kq = kc / 4;  // float4s per staged X row (kc is a multiple of 4 here)
      for (int e = tid; e < kTileA * kq; e += kThreads) {
        const int r = e % kTileA, v = e / kTileA, row = r0 + r;
        float4 x = row < nb ? __ldg(reinterpret_cast<const float4*>(
                                  P.X_all + (size_t)__ldg(P.order + base + row) * I + k0) + v)
                            : make_float4(0.f, 0.f, 0.f, 0.f);
        Xs[(4 * v + 0) * kTileA + r] = x.x;
        Xs[(4 * v + 1) * kTileA + r] = x.y;
        Xs[(4 * v + 2) * kTileA + r] = x.z;
        Xs[(4 * v + 3) * kTileA + r] = x.w;
      }
      for (int e = tid; e < kc * 4; e += kThreads) {  // 4 float4s per W1 row segment
        const int k = e / 4, v = e % 4, col = c0 + 4 * v;
        float4 w = col < Hd ? __ldcg(reinterpret_cast<const float4*>(W1 + (size_t)(k0 + k) * Hd + col))
                            : make_float4(0.f, 0.f, 0.f, 0.f);
        *reinterpret_cast<float4*>(Ws + k * kTileA + 4 * v) = w;
      }
    } else {
      for (int r = 0; r < kTileA; ++r) {
        const int row = r0 + r;
        const float* src = row < nb ? P.X_all + (size_t)__ldg(P.order + base + row) * I + k0 : nullptr;
        for (int k = tid; k < kc; k += kThreads) Xs[k * kTileA + r] = src ? __ldg(src + k) : 0.f;
      }
      for (int k = 0; k < kc; ++k)
        for (int c = tid; c < kTileA; c += kThreads)
          Ws[k * kTileA + c] = c0 + c < Hd ? ldcg(W1 + (size_t)(k0 + k) * Hd + c0 + c) : 0.f;
    }
    __syncthreads();
    const int per = (kc + kWarps - 1) / kWarps, kb = warp * per, ke = min(kc, kb + per);
#pragma unroll 4
    for (int k = kb; k < ke; ++k) {
      float2 a = *reinterpret_cast<const float2*>(Xs + k * kTileA + 2 * g);
      float4 b = *reinterpret_cast<const float4*>(Ws + k * kTileA + 4 * q);
      acc[0][0] = fmaf(a.x, b.x, acc[0][0]); acc[0][1] = fmaf(a.x, b.y, acc[0][1]);
      acc[0][2] = fmaf(a.x, b.z, acc[0][2]); acc[0][3] = fmaf(a.x, b.w, acc[0][3]);
      acc[1][0] = fmaf(a.y, b.x, acc[1][0]); acc[1][1] = fmaf(a.y, b.y, acc[1][1]);
      acc[1][2] = fmaf(a.y, b.z, acc[1][2]); acc[1][3] = fmaf(a.y, b.w, acc[1][3]);
    }
    __syncthreads();
  }
  float* red = smem;  // [8 warps][16][16], reuses the staging area
#pragma unroll
  for (int i = 0; i < 2; ++i)
    *reinterpret_cast<float4*>(red + warp * 256 + (2 * g + i) * kTileA + 4 * q) =
        make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
  __syncthreads();
  {
    const int r = tid / kTileA, c = tid % kTileA, row = r0 + r, col = c0 + c;
    float v = 0.f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) v += red[w * 256 + tid];
    if (row < nb && col < Hd) P.H[(size_t)row * Hd + col] = fmaxf(v + bias, 0.f);
  }
  __syncthreads();
}

// Fixed-order warp sum (a butterfly: every lane ends with the same, reproducible value).
__device__ __forceinline__ float warp_sum(float v) {
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

// ---- phase B: one batch row --------------------------------------------------------------------
// persistent2 passes from_partials: the row's pre-activations are the sum of the in-tiles'
// partials (fixed order) plus b1, and the row's H is written here.
__device__ inline void phase_b_row(const Persist& P, float* smem, int base, int nb, int r, bool from_partials = false) {
  const int Hd = P.s.hidden, O = P.s.out;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const MlpOffsets off = mlp_offsets(P.s);
  const float* b1 = P.params + off.b1;  // [Hd]
  const float* W2 = P.params + off.w2;  // [Hd × O]
  const float* b2 = P.params + off.b2;  // [O]
  // b2 and the label are loaded first, off the critical path. When each thread owns one hidden
  // unit (hidden <= 256), its W2 row and h stay in registers for the dH pass.
  const float bias = (warp == 0 && lane < O) ? ldcg(b2 + lane) : 0.f;
  const int y = warp == 0 ? __ldg(P.labels_all + __ldg(P.order + base + r)) : 0;
  const bool one_unit = Hd <= kThreads;
  float part[kMaxOut], w2r[kMaxOut];
  float h_own = 0.f;
#pragma unroll
  for (int k = 0; k < kMaxOut; ++k) part[k] = w2r[k] = 0.f;
  const int in_tiles = (P.s.in + kTileC - 1) / kTileC;
  for (int j = tid; j < Hd; j += kThreads) {
    float h;
    if (from_partials) {
      float a = ldcg(b1 + j);
      for (int ti = 0; ti < in_tiles; ++ti) a += ldcg(P.partials + ((size_t)ti * P.batch + r) * Hd + j);
      h = fmaxf(a, 0.f);
      P.H[(size_t)r * Hd + j] = h;
    } else {
      h = ldcg(P.H + (size_t)r * Hd + j);
    }
    h_own = h;
#pragma unroll
    for (int k = 0; k < kMaxOut; ++k)
      if (k < O) {
        w2r[k] = ldcg(W2 + (size_t)j * O + k);
        part[k] = fmaf(h, w2r[k], part[k]);
      }
  }
  float* red = smem;                    // [8 warps][kMaxOut]
  float* zs = smem + kWarps * kMaxOut;  // [kMaxOut] dZ of this row
#pragma unroll
  for (int k = 0; k < kMaxOut; ++k) {
    if (k >= O) break;
    float v = warp_sum(part[k]);
    if (lane == 0) red[warp * kMaxOut + k] = v;
  }
  __syncthreads();
  if (warp == 0) {
    // Lane k holds logit k: max, exp-sum and the label's logit by fixed butterflies.
    float z = -INFINITY;
    if (lane < O) {
      z = bias;
      for (int w = 0; w < kWarps; ++w) z += red[w * kMaxOut + lane];
    }
    float m = z;
    for (int off = 16; off > 0; off >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
    const float e = lane < O ? expf(z - m) : 0.f;
    const float sum = warp_sum(e);
    const float zy = __shfl_sync(0xffffffffu, z, y);
    if (lane == 0) P.row_loss[r] = logf(sum) - (zy - m);
    if (lane < O) {
      const float d = (e / sum - (lane == y ? 1.f : 0.f)) / (float)nb;
      zs[lane] = d;
      P.dZ[(size_t)r * O + lane] = d;
    }
  }
  __syncthreads();
  if (one_unit) {
    if (tid < Hd) {
      float acc = 0.f;
#pragma unroll
      for (int k = 0; k < kMaxOut; ++k)
        if (k < O) acc = fmaf(zs[k], w2r[k], acc);
      P.dH[(size_t)r * Hd + tid] = h_own > 0.f ? acc : 0.f;
    }
  } else {
    for (int j = tid; j < Hd; j += kThreads) {
      float acc = 0.f;
      for (int k = 0; k < O; ++k) acc = fmaf(zs[k], ldcg(W2 + (size_t)j * O + k), acc);
      P.dH[(size_t)r * Hd + j] = ldcg(P.H + (size_t)r * Hd + j) > 0.f ? acc : 0.f;
    }
  }
  __syncthreads();
}

// The momentum update of one element whose velocity and parameter were loaded earlier: each
// phase loads them at its start, so the L2 round trip overlaps the staging and the arithmetic
// instead of following the reduction (a load after a store cannot be hoisted by the compiler).
struct Owned {
  float v = 0.f, p = 0.f;
};
__device__ __forceinline__ Owned prefetch(const Persist& P, size_t idx) { return {ldcg(P.velocity + idx), ldcg(P.params + idx)}; }
__device__ __forceinline__ float momentum(const Persist& P, size_t idx, Owned o, float g) {
  const float v = P.mu * o.v - P.lr * g;
  P.velocity[idx] = v;
  P.params[idx] = o.p + v;
  return o.p + v;
}

// Stages rows [rc, rc + rows) of the batch starting at `base`, inputs [i0, i0 + 32), into
// Xs[kRowsC][kTileC] (zeros past `rows` and past I) for phase C and persistent2's next batch.
// vec (I % 4 == 0): 16-byte loads, 4 a thread, each behind one order lookup, instead of 16
// scalar loads behind 16 lookups; same layout and values, so results are bitwise the same.
// PREC: the inputs rounded to the path's precision as they are stored (rin).
template <Precision PREC = Precision::FP32>
__device__ __forceinline__ void stage_x_chunk(const Persist& P, float* Xs, int base, int rc, int rows, int i0,
                                              bool vec) {
  const int I = P.s.in, tid = threadIdx.x;
  if (vec) {
    constexpr int kXq = kTileC / 4;  // float4s per staged row
    for (int e = tid; e < kRowsC * kXq; e += kThreads) {
      const int r = e / kXq, v = e % kXq, i = i0 + 4 * v;
      const float4 x = r < rows && i < I
                           ? __ldg(reinterpret_cast<const float4*>(
                                 P.X_all + (size_t)__ldg(P.order + base + rc + r) * I + i))
                           : make_float4(0.f, 0.f, 0.f, 0.f);
      *reinterpret_cast<float4*>(Xs + r * kTileC + 4 * v) = rin4<PREC>(x);
    }
  } else {
    for (int e = tid; e < kRowsC * kTileC; e += kThreads) {
      const int r = e / kTileC, i = i0 + e % kTileC;
      Xs[e] = r < rows && i < I ? rin<PREC>(__ldg(P.X_all + (size_t)__ldg(P.order + base + rc + r) * I + i)) : 0.f;
    }
  }
}

// persistent2: the split-K pre-activations of one W1 tile for the batch starting at `base`:
//   partials[ti][r][j] = Σ_{i in tile ti} X[order[base + r]][i] · W1[i][j],  j in tile tj.
// The W1 tile comes from shared memory when the caller has just updated it (wn_ready), else it
// is read. Warp w takes rows 16w..16w+15 of a 128-row chunk; lane l units 2l, 2l+1.
template <class S = StagingShipped, Precision PREC = Precision::FP32>
__device__ void partial_tile(const Persist& P, float* smem, int ti, int tj, int base, int nb, bool wn_ready) {
  const int I = P.s.in, Hd = P.s.hidden, tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int i0 = ti * kTileC, j0 = tj * kTileCJ;
  float* Wn = smem + kWnOffset;
  float* Xn = smem + kXnOffset;
  if (!wn_ready) {
    for (int e = tid; e < kTileC * kTileCJ; e += kThreads) {
      const int i = i0 + e / kTileCJ, j = j0 + e % kTileCJ;
      Wn[e] = i < I && j < Hd ? rin<PREC>(ldcg(P.params + (size_t)i * Hd + j)) : 0.f;
    }
  }
  // v5: the next batch's inputs staged with 16-byte loads (v4's phase-C staging, stage_x_chunk).
  const bool vec = (I % 4 == 0) && !S::kScalarNext;
  for (int rc = 0; rc < nb; rc += kRowsC) {
    stage_x_chunk<PREC>(P, Xn, base, rc, min(kRowsC, nb - rc), i0, vec);
    __syncthreads();
    float acc[16][2] = {};
#pragma unroll 4
    for (int i = 0; i < kTileC; ++i) {
      const float2 w = *reinterpret_cast<const float2*>(Wn + i * kTileCJ + 2 * lane);
#pragma unroll
      for (int rr = 0; rr < 16; ++rr) {
        const float x = Xn[(16 * warp + rr) * kTileC + i];
        acc[rr][0] = fmaf(x, w.x, acc[rr][0]);
        acc[rr][1] = fmaf(x, w.y, acc[rr][1]);
      }
    }
#pragma unroll
    for (int rr = 0; rr < 16; ++rr) {
      const int r = rc + 16 * warp + rr, j = j0 + 2 * lane;
      if (r >= nb) continue;
      float* dst = P.partials + ((size_t)ti * P.batch + r) * Hd + j;
      if (j < Hd) dst[0] = acc[rr][0];
      if (j + 1 < Hd) dst[1] = acc[rr][1];
    }
    __syncthreads();
  }
}

// ---- phase C: one 32×64 tile of W1 (gradient, then the update) -------------------------------
// Xs[r][i] (32 inputs) and Ds[r][j] (64 hidden units) for a chunk of batch rows. Warps 0–3 take
// hidden units 0–31 of the tile, warps 4–7 units 32–63; within a group each warp takes a quarter
// of the rows; lane (gi, gj) holds inputs 4gi..4gi+3 and units 8gj..8gj+7. The four partials of
// each output are summed in warp order. Tiles of input block 0 also reduce db1 for their units.
template <class S = StagingShipped, Precision PREC = Precision::FP32>
__device__ void phase_c_w1_tile(const Persist& P, float* smem, int base, int nb, int ti, int tj,
                                int next_base = 0, int next_nb = 0) {
  const int I = P.s.in, Hd = P.s.hidden;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, gi = lane / 4, gj = lane % 4;
  const int half = warp / 4, quarter = warp % 4;
  const int i0 = ti * kTileC, j0 = tj * kTileCJ;
  constexpr int kOwn = kTileC * kTileCJ / kThreads;  // W1 elements this thread updates
  Owned own[kOwn];
#pragma unroll
  for (int q = 0; q < kOwn; ++q) {
    const int o = tid + q * kThreads, i = i0 + o / kTileCJ, j = j0 + o % kTileCJ;
    if (i < I && j < Hd) own[q] = prefetch(P, (size_t)i * Hd + j);
  }
  const size_t b1 = mlp_offsets(P.s).b1;  // W1 is at 0: its element (i, j) is i·Hd + j
  const bool does_b1 = ti == 0 && tid < kTileCJ && j0 + tid < Hd;
  const Owned own_b1 = does_b1 ? prefetch(P, b1 + j0 + tid) : Owned{};
  float acc[4][8] = {};
  float colsum = 0.f;  // db1 for unit j0 + tid (tiles with ti == 0, tid < 64)
  float* Xs = smem;                     // [kRowsC][32]
  float* Ds = smem + kRowsC * kTileC;   // [kRowsC][64]
  // v4: 16-byte staging when the widths allow (784 and 256 do): 4 float4 loads of X and 8 of dH
  // per thread instead of 48 and 32 scalar loads (each X load behind its own order lookup). The
  // shared-memory layout and the values are those of the scalar form, so results are bitwise
  // the same. I % 4 == 0 and Hd % 4 == 0 make every float4 wholly inside or wholly outside.
  const bool vec = (I % 4 == 0) && (Hd % 4 == 0) && !S::kScalarC;
  for (int rc = 0; rc < nb; rc += kRowsC) {
    const int rows = min(kRowsC, nb - rc);
    stage_x_chunk<PREC>(P, Xs, base, rc, rows, i0, vec);
    if (vec) {
      constexpr int kDq = kTileCJ / 4;  // float4s per staged row
      for (int e = tid; e < kRowsC * kDq; e += kThreads) {
        const int r = e / kDq, v = e % kDq, j = j0 + 4 * v;
        const float4 d = r < rows && j < Hd
                             ? __ldcg(reinterpret_cast<const float4*>(P.dH + (size_t)(rc + r) * Hd + j))
                             : make_float4(0.f, 0.f, 0.f, 0.f);
        *reinterpret_cast<float4*>(Ds + r * kTileCJ + 4 * v) = rin4<PREC>(d);
      }
    } else {
      for (int e = tid; e < kRowsC * kTileCJ; e += kThreads) {
        const int r = e / kTileCJ, c = e % kTileCJ, j = j0 + c;
        Ds[e] = r < rows && j < Hd ? rin<PREC>(ldcg(P.dH + (size_t)(rc + r) * Hd + j)) : 0.f;
      }
    }
    __syncthreads();
    const int per = kRowsC / 4, rb = quarter * per;
    const float* D = Ds + half * kTileC + 8 * gj;
#pragma unroll 2
    for (int r = rb; r < rb + per; ++r) {
      float4 a = *reinterpret_cast<const float4*>(Xs + r * kTileC + 4 * gi);
      float4 b0 = *reinterpret_cast<const float4*>(D + r * kTileCJ);
      float4 b1 = *reinterpret_cast<const float4*>(D + r * kTileCJ + 4);
      const float av[4] = {a.x, a.y, a.z, a.w}, bv[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
      for (int x = 0; x < 4; ++x)
#pragma unroll
        for (int y = 0; y < 8; ++y) acc[x][y] = fmaf(av[x], bv[y], acc[x][y]);
    }
    if (ti == 0 && tid < kTileCJ) {
      if constexpr (PREC == Precision::FP32) {
        for (int r = 0; r < kRowsC; ++r) colsum += Ds[r * kTileCJ + tid];
      } else {  // db1 from dH itself (Ds holds it rounded for the product), in the same order
        for (int r = 0; r < kRowsC; ++r)
          colsum += r < rows && j0 + tid < Hd ? ldcg(P.dH + (size_t)(rc + r) * Hd + j0 + tid) : 0.f;
      }
    }
    __syncthreads();
  }
  float* red = smem;  // [8 warps][32][32], reuses the staging area
#pragma unroll
  for (int x = 0; x < 4; ++x) {
    float* dst = red + warp * 1024 + (4 * gi + x) * kTileC + 8 * gj;
    *reinterpret_cast<float4*>(dst) = make_float4(acc[x][0], acc[x][1], acc[x][2], acc[x][3]);
    *reinterpret_cast<float4*>(dst + 4) = make_float4(acc[x][4], acc[x][5], acc[x][6], acc[x][7]);
  }
  __syncthreads();
#pragma unroll
  for (int q = 0; q < kOwn; ++q) {
    const int o = tid + q * kThreads;
    const int i = o / kTileCJ, jj = o % kTileCJ, h = jj / kTileC, j = jj % kTileC;
    float g = 0.f;
#pragma unroll
    for (int w = 0; w < 4; ++w) g += red[(h * 4 + w) * 1024 + i * kTileC + j];
    const bool inside = i0 + i < I && j0 + jj < Hd;
    const float w_new = inside ? momentum(P, (size_t)(i0 + i) * Hd + j0 + jj, own[q], g) : 0.f;
    if (next_nb > 0) smem[kWnOffset + i * kTileCJ + jj] = rin<PREC>(w_new);  // persistent2: the next step's W1 tile
  }
  if (does_b1) momentum(P, b1 + j0 + tid, own_b1, colsum);
  __syncthreads();
  if (next_nb > 0) partial_tile<S, PREC>(P, smem, ti, tj, next_base, next_nb, /*wn_ready=*/true);
}

// dW2 for 32 hidden units (all classes) and, for the first item, db2: H[:, units] and dZ staged
// in shared memory, each output summed over the batch rows in order.
__device__ inline void phase_c_w2_item(const Persist& P, float* smem, int nb, int item) {
  const int Hd = P.s.hidden, O = P.s.out, tid = threadIdx.x;
  const MlpOffsets off = mlp_offsets(P.s);
  const size_t w2 = off.w2, b2 = off.b2;  // W2 [Hd × O], b2 [O] in params and velocity
  const int j0 = item * kTileC;
  float* Hs = smem;                        // [kRowsC][32]
  float* Zs = smem + kRowsC * kTileC;      // [kRowsC][kMaxOut]
  float g0 = 0.f, g1 = 0.f, gb = 0.f;      // outputs tid and tid + 256 (32 × O ≤ 512 for O ≤ 16)
  const int outputs = kTileC * O;
  Owned own[2];
  for (int o = tid, slot = 0; o < outputs && slot < 2; o += kThreads, ++slot)
    if (j0 + o / O < Hd) own[slot] = prefetch(P, w2 + (size_t)(j0 + o / O) * O + o % O);
  const Owned own_b2 = (item == 0 && tid < O) ? prefetch(P, b2 + tid) : Owned{};
  for (int rc = 0; rc < nb; rc += kRowsC) {
    const int rows = min(kRowsC, nb - rc);
    for (int e = tid; e < kRowsC * kTileC; e += kThreads) {
      const int r = e / kTileC, j = j0 + e % kTileC;
      Hs[e] = r < rows && j < Hd ? ldcg(P.H + (size_t)(rc + r) * Hd + j) : 0.f;
    }
    for (int e = tid; e < kRowsC * O; e += kThreads) {
      const int r = e / O;
      Zs[e] = r < rows ? ldcg(P.dZ + (size_t)(rc + r) * O + e % O) : 0.f;
    }
    __syncthreads();
    for (int o = tid, slot = 0; o < outputs && slot < 2; o += kThreads, ++slot) {
      const int j = o / O, k = o % O;
      float g = 0.f;
      for (int r = 0; r < kRowsC; ++r) g = fmaf(Hs[r * kTileC + j], Zs[r * O + k], g);
      if (slot == 0) g0 += g; else g1 += g;
    }
    if (item == 0 && tid < O)
      for (int r = 0; r < kRowsC; ++r) gb += Zs[r * O + tid];
    __syncthreads();
  }
  for (int o = tid, slot = 0; o < outputs && slot < 2; o += kThreads, ++slot) {
    const int j = j0 + o / O, k = o % O;
    if (j < Hd) momentum(P, w2 + (size_t)j * O + k, own[slot], slot == 0 ? g0 : g1);
  }
  if (item == 0 && tid < O) momentum(P, b2 + tid, own_b2, gb);
}

// The step's mean loss: one warp sums the row losses, each lane its rows in order, then a
// fixed butterfly.
__device__ inline void step_loss_sum(const Persist& P, int nb, int t) {
  if (threadIdx.x >= 32) return;
  float s = 0.f;
  for (int r = threadIdx.x; r < nb; r += 32) s += ldcg(P.row_loss + r);
  s = warp_sum(s);
  if (threadIdx.x == 0) P.step_loss[t] = s / (float)nb;
}

// The shipped epoch of three barriers a step (k_persistent_epoch; KA: phase A's K chunk).
template <class S = StagingShipped, int KA = kMaxKA>
__device__ __forceinline__ void persistent_epoch(const Persist& P, float* smem) {
  cg::grid_group grid = cg::this_grid();
  const int steps = (P.n + P.batch - 1) / P.batch;
  const int a_tiles_c = (P.s.hidden + kTileA - 1) / kTileA;  // H tiles across hidden units
  const int c_tiles_i = (P.s.in + kTileC - 1) / kTileC, c_tiles_j = (P.s.hidden + kTileCJ - 1) / kTileCJ;
  const int w1_items = c_tiles_i * c_tiles_j, w2_items = (P.s.hidden + kTileC - 1) / kTileC;
  for (int t = 0; t < steps; ++t) {
    const int base = t * P.batch, nb = min(P.batch, P.n - base);
    const int a_tiles = ((nb + kTileA - 1) / kTileA) * a_tiles_c;
    for (int item = blockIdx.x; item < a_tiles; item += gridDim.x)
      phase_a_tile<KA>(P, smem, base, nb, item / a_tiles_c, item % a_tiles_c);
    grid.sync();
    for (int r = blockIdx.x; r < nb; r += gridDim.x) phase_b_row(P, smem, base, nb, r);
    grid.sync();
    for (int item = blockIdx.x; item < w1_items + w2_items; item += gridDim.x) {
      if (item < w1_items)
        phase_c_w1_tile<S>(P, smem, base, nb, item / c_tiles_j, item % c_tiles_j);
      else
        phase_c_w2_item(P, smem, nb, item - w1_items);
    }
    if (blockIdx.x == gridDim.x - 1) step_loss_sum(P, nb, t);
    grid.sync();
  }
}

// persistent2: two grid barriers a step instead of three. The phase that updates a W1 tile also
// computes that tile's split-K share of the NEXT step's pre-activations (from the new weights and
// the next batch), so the next step's first phase only sums the shares, adds b1, applies the ReLU
// and goes on to the logits, softmax, dZ and dH of its row:
//   prologue  partials of step 0 from the initial W1                          | grid.sync
//   per step  Y: rows (H from partials, logits, softmax, dZ, dH)               | grid.sync
//             X: W1 tiles (gradient, update, next step's partials), W2 items  | grid.sync
template <class S = StagingShipped, Precision PREC = Precision::FP32>
__device__ __forceinline__ void persistent2_epoch(const Persist& P, float* smem) {
  cg::grid_group grid = cg::this_grid();
  const int steps = (P.n + P.batch - 1) / P.batch;
  const int c_tiles_i = (P.s.in + kTileC - 1) / kTileC, c_tiles_j = (P.s.hidden + kTileCJ - 1) / kTileCJ;
  const int w1_items = c_tiles_i * c_tiles_j, w2_items = (P.s.hidden + kTileC - 1) / kTileC;
  for (int item = blockIdx.x; item < w1_items; item += gridDim.x)
    partial_tile<S, PREC>(P, smem, item / c_tiles_j, item % c_tiles_j, 0, min(P.batch, P.n), /*wn_ready=*/false);
  grid.sync();
  for (int t = 0; t < steps; ++t) {
    const int base = t * P.batch, nb = min(P.batch, P.n - base);
    const int next_base = base + P.batch, next_nb = t + 1 < steps ? min(P.batch, P.n - next_base) : 0;
    for (int r = blockIdx.x; r < nb; r += gridDim.x) phase_b_row(P, smem, base, nb, r, /*from_partials=*/true);
    grid.sync();
    for (int item = blockIdx.x; item < w1_items + w2_items; item += gridDim.x) {
      if (item < w1_items)
        phase_c_w1_tile<S, PREC>(P, smem, base, nb, item / c_tiles_j, item % c_tiles_j, next_base, next_nb);
      else
        phase_c_w2_item(P, smem, nb, item - w1_items);
    }
    if (blockIdx.x == gridDim.x - 1) step_loss_sum(P, nb, t);
    grid.sync();
  }
}

}  // namespace mlp
