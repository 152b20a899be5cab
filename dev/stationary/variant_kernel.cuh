// dev/stationary/variant_kernel.cuh — k_stationary_variant<CL, U, V>: the weight-stationary epoch
// with every measured variant still selectable by its bits V (dev/stationary/variant_ops.cuh),
// the kernel as it was before the shipped form (V = kShippedV) was split into phases in
// cuda/kernels/stationary/. cuda/kernels/stationary.cuh describes the shipped form, its shape, its
// pad units and the synchronisation of every buffer; the other forms differ as follows.
//   V = 0   F1 by thread (row b, K half s): all U units over input quads c ≡ s (mod 2), one Red
//           slot per (rank, K half), so F2 sums 2·CL slots; G by 4×4 tiles (k quad × unit
//           quad), the batch in GS parts combined in Scr, the update in place in Ws/Vs; warp 7
//           does the W2 update after G; the counter with two __threadfence; inputs pixel(p).
//   kVTile  F1 tiles of 4 rows × U units over 8 K parts, G tiles of 4 inputs × U units over GP
//           batch parts, both reduce-scattered across lanes by shuffles in a fixed tree; F1
//           pushes one slot per rank, so F2 sums CL slots; warp 7 does the W2 update during G.
//   kVMma   the shipped F1 and G on the tensor cores (with kVTile's slots and W2 update).
// It stays one function, as measured: moving its CUDA-core forms into functions changes their
// machine code (docs/PERFLOG.md).
// Phase-timer hook: WSTAT_MARK is a no-op unless the includer defines it first
// (dev/stationary/probe.cuh records clock64 and %globaltimer per block, step and mark). It
// expands inside k_stationary_variant, where the template parameters CL, U, V are in scope.
#pragma once
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "kernels/stationary/layout.cuh"
#include "kernels/stationary/ops.cuh"
#include "variant_ops.cuh"

#ifndef WSTAT_MARK
#define WSTAT_MARK(t, slot) ((void)0)
#endif

namespace mlp {
namespace wstat {

template <int CL, int U, int V>
__global__ void __launch_bounds__(kThreads, 1) k_stationary_variant(Args a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
  // Thread-block clusters and distributed shared memory are sm_90+: the host never launches
  // this kernel below that (stationary_prepare returns UNSUPPORTED); it traps if one does.
  (void)a;
  __trap();
#else
  using C = VCfg<CL, U>;
  constexpr int KS = C::KS, KP = C::KP, RPB = C::RPB, O = kOut, NO = C::kOwn + 1;
  namespace cg = cooperative_groups;
  cg::cluster_group cluster = cg::this_cluster();
  const int rank = (int)cluster.block_rank();
  const int cid = (int)blockIdx.x / CL;
  const int tid = (int)threadIdx.x;
  extern __shared__ float4 smem4[];
  float* sm = reinterpret_cast<float*>(smem4);
  float* Xs0 = sm + C::oXs;                                     // [kXBuf][kRows][KP] inputs
  uint8_t* Bb = reinterpret_cast<uint8_t*>(sm + C::oBb);        // [kRows][XB] next inputs, bytes
  float* Ws = sm + C::oWs;                                      // [KP][U] W1 slice (+ b1 row)
  float* Vs = sm + C::oVs;                                      // [KP][U] its velocity
  float* Red = sm + C::oRed;                                    // [2·CL][RPB][U] F1 partials
  float* dHf = sm + C::odHf;                                    // dH, all rows: [kRows][U]; kVMma: [16][kNT][32] float4 B fragments
  float* Wf = sm + C::oWf;                                      // kVMma: [kKs][kNT][32] float4 F1 B fragments
  float* Scr = sm + C::oScr;                                    // [NT][20] G combine (GS = 2)
  float* Hs = sm + C::oHs;                                      // [RPB][U] H, own rows
  float* dZs = sm + C::odZs;                                    // [RPB][16] dZ, own rows
  float* lossS = sm + C::oLoss;                                 // [RPB] row losses
  float* W2l = sm + C::oW2l;                                    // [U+1][O] W2 rows (+ b2 row)
  float* W2red = sm + C::oW2red;                                // [CL][kOwn+1][O] owner's partials
  float* V2 = sm + C::oV2;                                      // [kOwn+1][O] owned W2 (+ b2) velocity
  float* Lred = sm + C::oLred;                                  // [CL] loss partials (rank 0)

  const int j0 = cid * U, k0 = rank * KS;  // first unit column, first input row
  constexpr MlpOffsets off = mlp_offsets(MlpShape{kIn, kHidden, kOut});  // model.h's layout
  float* W1 = a.params + off.w1;     // [784 × 256]
  float* b1 = a.params + off.b1;     // [256]
  float* W2 = a.params + off.w2;     // [256 × 10]
  float* b2 = a.params + off.b2;     // [10]
  float* vW1 = a.velocity + off.w1;  // the velocity, same layout
  float* vb1 = a.velocity + off.b1;
  float* vW2 = a.velocity + off.w2;
  float* vb2 = a.velocity + off.b2;
  const bool loss_owner = cid == 0 && rank == 0;

  for (int e = tid; e < KP * U; e += kThreads) {
    const int k = e / U, u = e % U, j = j0 + u;
    float w = 0.f, v = 0.f;  // pad units (j >= 256) and rows past KS: +0
    if (j < kHidden) {
      if (k < KS) {
        w = W1[(size_t)(k0 + k) * kHidden + j];
        v = vW1[(size_t)(k0 + k) * kHidden + j];
      } else if (k == KS && rank == 0) {
        w = b1[j];
        v = vb1[j];
      }
    }
    Ws[e] = w;
    Vs[e] = v;
  }
  for (int e = tid; e < (U + 1) * O; e += kThreads) {
    const int u = e / O, o = e % O;
    W2l[e] = u < U ? (j0 + u < kHidden ? W2[(j0 + u) * O + o] : 0.f) : (cid == 0 ? b2[o] : 0.f);
  }
  for (int e = tid; e < NO * O; e += kThreads) {
    const int i = e / O, o = e % O, u = rank + CL * i;  // owned unit u (i < kOwn), or b2
    V2[e] = i < C::kOwn ? (u < U && j0 + u < kHidden ? vW2[(j0 + u) * O + o] : 0.f) : (loss_owner ? vb2[o] : 0.f);
  }
  constexpr bool kMma = (V & kVMma) != 0;
  // kVRel7 needs two input buffers (with one, the conversion follows G and there is nothing to move).
  constexpr bool kRel7 = (V & kVRel7) != 0 && C::kXBuf == 2;
  static_assert((V & kVRel7) == 0 || kMma, "kVRel7: a form of the mma kernel");
  static_assert(!kMma || (V & kVTile) != 0, "kVMma keeps kVTile's slots and W2 update");
  for (int e = tid; e < C::kDhF; e += kThreads) dHf[e] = 0.f;  // kVMma: units >= U stay 0
  // kVMma: G's warps keep their C-fragment elements of the W1 slice and its velocity in registers
  // for the whole epoch: warp w < 7, m-tile mt = w + 7·i (slice rows 16·mt + g, + 8), n-tile nt
  // (units 8·nt + 2q, + 1), in the order c0..c3; entries outside [KS] × [U] are 0 and stay 0.
  [[maybe_unused]] float wr[C::kMTw][C::kNT][4], vr[C::kMTw][C::kNT][4];
  [[maybe_unused]] const int lane_g = (tid & 31) >> 2, lane_q = tid & 3, warp = tid >> 5;
  auto frag_k = [&](int mt, int i) { return 16 * mt + lane_g + 8 * (i >> 1); };
  auto frag_u = [&](int nt, int i) { return 8 * nt + 2 * lane_q + (i & 1); };
  // Both B-fragment buffers hold, per (k-step, n-tile), 32 float4s {big b0, small b0, big b1,
  // small b1}, one per lane L = 4·(n % 8) + k % 4 (b0: k % 8 < 4, b1 the others).
  // Wf (F1, W1 slice row k, unit u): lane L's float4 sits in slot wf_slot(L), which spreads the
  // update's float2 stores (lanes with equal n % 4 and k % 4) over the banks, at most 2-way;
  // a quarter-warp's loads still read 8 different bank groups.
  // dHf (G, batch row b, unit u): slot L itself; D writes it in slot order (coalesced).
  auto wf_slot = [](int L) { return L ^ ((L >> 2) & 6); };
  auto wf_index = [&](int k, int u) {
    return (((k >> 3) * C::kNT + (u >> 3)) * 32 + wf_slot(4 * (u & 7) + (k & 3))) * 4 + 2 * ((k >> 2) & 1);
  };
  // f(mi, nt, i, k, u, in) for every register element of this G warp (warp < kGWm): m-tile
  // warp + kGWm·mi, n-tile nt, C-fragment element i at slice row k, unit u; `in` when it lies in
  // the W1 slice ([KP] x [U] of an existing m-tile).
  [[maybe_unused]] auto for_each_frag = [&](auto&& f) {
#pragma unroll
    for (int mi = 0; mi < C::kMTw; ++mi)
#pragma unroll
      for (int nt = 0; nt < C::kNT; ++nt)
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const int mt = warp + C::kGWm * mi, k = frag_k(mt, i), u = frag_u(nt, i);
          f(mi, nt, i, k, u, mt < C::kMT && k < KP && u < U);
        }
  };
  if constexpr (kMma) {
    __syncthreads();  // Ws, Vs loaded
    for (int e = tid; e < C::kWfF / 2; e += kThreads) {  // every (k, u) of the fragments
      const int k = e / (8 * C::kNT), u = e % (8 * C::kNT);
      const float w = k < KP && u < U ? Ws[k * U + u] : 0.f;
      unsigned big, small;
      tf32_split(w, big, small);
      *reinterpret_cast<float2*>(Wf + wf_index(k, u)) = make_float2(__uint_as_float(big), __uint_as_float(small));
    }
    if (warp < C::kGWm) {
      for_each_frag([&](int mi, int nt, int i, int k, int u, bool in) {
        wr[mi][nt][i] = in ? Ws[k * U + u] : 0.f;
        vr[mi][nt][i] = in ? Vs[k * U + u] : 0.f;
      });
    }
  }
  const int steps = (a.n + a.batch - 1) / a.batch;
  if constexpr ((V & kVPrefetchL2) != 0) {
    for (int e = cid + C::kClusters * tid; e < a.n; e += C::kClusters * kThreads) {
      const int s = __ldg(a.order + e);
      const uint8_t* row = a.xb + ((size_t)s * CL + rank) * C::XB;
      prefetch_l2(row);
      prefetch_l2(row + C::XB - 1);  // a slice may straddle two lines
      if (rank == 0) prefetch_l2(a.labels + s);
    }
  }
  if (steps > 0) {
    const int nb0 = min(a.batch, a.n);
    stage_bytes<CL>(a, Bb, 0, nb0, rank);
    cp_async_wait_all();
    __syncthreads();
    if constexpr (kMma) convert_rows_p<CL>(Xs0, Bb, nb0, rank);
    else convert_bytes<CL>(Xs0, Bb, nb0, rank);
  }
  cluster.sync();  // every block of the cluster runs (DSMEM rule); init and step 0's inputs done

  unsigned* my_counter = a.counters + 32 * rank;

  constexpr bool kNoFence = (V & kVNoFence) != 0;
  constexpr bool kTile = (V & kVTile) != 0, kFastConv = (V & kVFastConv) != 0;
  constexpr int kF1Slots = kTile ? CL : C::kRedSlots;  // (kVMma implies kVTile)  // F1 partials per pre-activation in Red
  // The next step's inputs: bytes -> floats (rows >= nb and the padding 0, the ones column of b1).
  auto convert = [&](float* dst, int nbx) {
    if constexpr (kMma) convert_rows_p<CL>(dst, Bb, nbx, rank);
    else if constexpr ((V & kVConv2) != 0 && kFastConv) convert_rows<CL>(dst, Bb, nbx, rank);
    else convert_bytes<CL, kFastConv>(dst, Bb, nbx, rank);
  };
  // The W2 rows this rank owns, b2 (cluster 0 rank 0) and the step loss, from the dW2 partials
  // in W2red (rank order); item `it` of kW2Upd; pushes the new W2 rows to every block's W2l.
  auto w2_update = [&](int it, int t, int nb) {
    if (it < C::kOwn * O) {  // owned W2 rows: unit u = rank + CL·i
      const int i = it / O, o = it % O, u = rank + CL * i;
      if (u < U) {
        float g = 0.f;
#pragma unroll
        for (int q = 0; q < CL; ++q) g += W2red[(q * NO + i) * O + o];
        const float v = a.mu * V2[i * O + o] - a.lr * g;
        const float w = W2l[u * O + o] + v;
        V2[i * O + o] = v;
#pragma unroll
        for (int q = 0; q < CL; ++q) cluster.map_shared_rank(W2l, (unsigned)q)[u * O + o] = w;
      }
    } else if (it < NO * O) {  // b2
      if (loss_owner) {
        const int o = it - C::kOwn * O;
        float g = 0.f;
#pragma unroll
        for (int q = 0; q < CL; ++q) g += W2red[(q * NO + C::kOwn) * O + o];
        const float v = a.mu * V2[C::kOwn * O + o] - a.lr * g;
        const float w = W2l[U * O + o] + v;
        V2[C::kOwn * O + o] = v;
#pragma unroll
        for (int q = 0; q < CL; ++q) cluster.map_shared_rank(W2l, (unsigned)q)[U * O + o] = w;
      }
    } else if (loss_owner) {
      float l = 0.f;
#pragma unroll
      for (int q = 0; q < CL; ++q) l += Lred[q];
      a.step_loss[t] = l / (float)nb;
    }
  };

  for (int t = 0; t < steps; ++t) {
    WSTAT_MARK(t, kMTop);
    const int base = t * a.batch, nb = min(a.batch, a.n - base), par = t & 1;
    const bool has_next = t + 1 < steps;
    const int nb_next = has_next ? min(a.batch, a.n - base - a.batch) : 0;
    const float* Xs = Xs0 + (C::kXBuf == 2 ? par : 0) * C::kXsF;
    const unsigned target = a.arrivals_base + (unsigned)(C::kClusters * (t + 1));
    if (has_next) stage_bytes<CL>(a, Bb, base + a.batch, nb_next, rank);  // lands during F1..S
    int ys[C::kPasses];  // labels of the rows this thread's S passes handle
#pragma unroll
    for (int p = 0; p < C::kPasses; ++p) {
      const int b = rank * RPB + (tid >> 4) + 16 * p;
      ys[p] = b < nb ? __ldg(a.labels + __ldg(a.order + base + b)) : 0;
    }

    // ---- F1: partial pre-activations of all rows from this block's K slice ----
    if constexpr (kMma) {
      // Warp w: rows [16w, 16w + 16) x all kNT n-tiles over the KPM inputs (k-steps of 8), each
      // product as p·big + p·small (two accumulators, summed at the end); the whole K slice in one
      // warp, so nothing to reduce across lanes. The 16 rows all go to rank 16w / RPB as slot
      // `rank`, times 1/255 (the inputs are p, not p/255).
      float acc[C::kNT][4], acs[C::kNT][4];  // the big parts' products, the small parts'
#pragma unroll
      for (int nt = 0; nt < C::kNT; ++nt)
#pragma unroll
        for (int i = 0; i < 4; ++i) acc[nt][i] = acs[nt][i] = 0.f;
      const int r0 = 16 * warp + lane_g;
      const float* x0 = Xs + r0 * C::KPM;
      const float* x1 = x0 + 8 * C::KPM;
      const int sw = 4 * ((r0 >> 2) & 1);  // mma_x_index's column swizzle (rows r0 and r0 + 8)
      const float4* wf = reinterpret_cast<const float4*>(Wf) + wf_slot(tid & 31);
#pragma unroll
      for (int ks = 0; ks < C::kKs; ++ks) {
        const int c0 = (8 * ks + lane_q) ^ sw, c1 = (8 * ks + lane_q + 4) ^ sw;
        const unsigned a4[4] = {__float_as_uint(x0[c0]), __float_as_uint(x1[c0]), __float_as_uint(x0[c1]),
                                __float_as_uint(x1[c1])};
#pragma unroll
        for (int nt = 0; nt < C::kNT; ++nt) {
          const float4 f = wf[(ks * C::kNT + nt) * 32];
          mma_tf32(acc[nt], a4, __float_as_uint(f.x), __float_as_uint(f.z));
          mma_tf32(acs[nt], a4, __float_as_uint(f.y), __float_as_uint(f.w));
        }
      }
#pragma unroll
      for (int nt = 0; nt < C::kNT; ++nt)
#pragma unroll
        for (int i = 0; i < 4; ++i) acc[nt][i] = (acc[nt][i] + acs[nt][i]) * kInv255;
      WSTAT_MARK(t, kMF1a);
      WSTAT_MARK(t, kMF1b);
      float* dst = cluster.map_shared_rank(Red, (unsigned)(r0 / RPB)) + (rank * RPB + r0 % RPB) * U;
#pragma unroll
      for (int nt = 0; nt < C::kNT; ++nt) {
        const int u = 8 * nt + 2 * lane_q;
        if (u < U) {
          *reinterpret_cast<float2*>(dst + u) = make_float2(acc[nt][0], acc[nt][1]);
          *reinterpret_cast<float2*>(dst + 8 * U + u) = make_float2(acc[nt][2], acc[nt][3]);
        }
      }
    } else if constexpr (kTile) {
      // Thread: 4 rows (rb, rb+1, rb+64, rb+65) x all U units over inputs k = 8m + fp; lane bits
      // 1-3 are the K part fp (lanes n, n^1 share it, so they read the same W address), bits 0
      // and 4 the row pair (rows 2 apart: the 32 scalar X loads of a warp hit 32 banks; the 8 W
      // float4 rows of a warp fall in 8 bank groups when U/4 is odd). Each part sums its inputs
      // in m order; the 8 parts are then reduce-scattered across lanes (xor 8, 4, 2), leaving
      // each lane U/2 units of one row, pushed to the reducing rank as slot `rank`.
      constexpr int kKi = KS + 1, kFM = (kKi + 7) / 8;  // inputs with a non-zero row (b1's at KS)
      const int lane = tid & 31, fp = (lane >> 1) & 7;
      const int rb = 8 * (tid >> 5) + 2 * ((lane & 1) | ((lane >> 3) & 2));
      float acc[4 * U];
#pragma unroll
      for (int e = 0; e < 4 * U; ++e) acc[e] = 0.f;
      const float* xr = Xs + rb * KP + fp;
      const float* wr = Ws + fp * U;
#pragma unroll
      for (int m = 0; m < kFM; ++m) {
        if (m + 1 < kFM || 8 * m + fp < kKi) {
          float xv[4];
#pragma unroll
          for (int i = 0; i < 4; ++i) xv[i] = xr[((i & 1) + 64 * (i >> 1)) * KP + 8 * m];
#pragma unroll
          for (int q = 0; q < C::kUq; ++q) {
            const float4 w = *reinterpret_cast<const float4*>(wr + 8 * m * U + 4 * q);
#pragma unroll
            for (int i = 0; i < 4; ++i) {
              acc[i * U + 4 * q + 0] = fmaf(xv[i], w.x, acc[i * U + 4 * q + 0]);
              acc[i * U + 4 * q + 1] = fmaf(xv[i], w.y, acc[i * U + 4 * q + 1]);
              acc[i * U + 4 * q + 2] = fmaf(xv[i], w.z, acc[i * U + 4 * q + 2]);
              acc[i * U + 4 * q + 3] = fmaf(xv[i], w.w, acc[i * U + 4 * q + 3]);
            }
          }
        }
      }
      WSTAT_MARK(t, kMF1a);
      reduce_half<4 * U>(acc, 8, (lane & 8) != 0);  // rows {0,1} | {2,3} of the tile
      reduce_half<2 * U>(acc, 4, (lane & 4) != 0);  // one row
      reduce_half<U>(acc, 2, (lane & 2) != 0);      // units [0, U/2) | [U/2, U)
      WSTAT_MARK(t, kMF1b);
      const int row = rb + ((lane >> 2) & 1) + 64 * ((lane >> 3) & 1);
      float* dst = cluster.map_shared_rank(Red, (unsigned)(row / RPB)) + (rank * RPB + row % RPB) * U +
                   (U / 2) * ((lane >> 1) & 1);
#pragma unroll
      for (int e = 0; e < U / 2; e += 2) *reinterpret_cast<float2*>(dst + e) = make_float2(acc[e], acc[e + 1]);
    } else {
      // Thread: batch row f_b (consecutive across a warp), K half f_s (warp-uniform).
      const int f_b = tid & (kRows - 1), f_s = tid >> 7;
      float acc[U];
#pragma unroll
      for (int u = 0; u < U; ++u) acc[u] = 0.f;
      const float* xr = Xs + f_b * KP;
#pragma unroll 2
      for (int c = f_s; c < C::kKqG; c += 2) {
        const float4 x4 = *reinterpret_cast<const float4*>(xr + 4 * c);
        const float xv[4] = {x4.x, x4.y, x4.z, x4.w};
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const float* wr = Ws + (4 * c + i) * U;
#pragma unroll
          for (int q = 0; q < C::kUq; ++q) {
            const float4 w = *reinterpret_cast<const float4*>(wr + 4 * q);
            acc[4 * q + 0] = fmaf(xv[i], w.x, acc[4 * q + 0]);
            acc[4 * q + 1] = fmaf(xv[i], w.y, acc[4 * q + 1]);
            acc[4 * q + 2] = fmaf(xv[i], w.z, acc[4 * q + 2]);
            acc[4 * q + 3] = fmaf(xv[i], w.w, acc[4 * q + 3]);
          }
        }
      }
      WSTAT_MARK(t, kMF1a);
      WSTAT_MARK(t, kMF1b);
      const int slot = 2 * rank + f_s;  // the reducing rank is f_b / RPB
      float* dst = cluster.map_shared_rank(Red, (unsigned)(f_b / RPB)) + (slot * RPB + f_b % RPB) * U;
#pragma unroll
      for (int q = 0; q < C::kUq; ++q)
        *reinterpret_cast<float4*>(dst + 4 * q) = make_float4(acc[4 * q], acc[4 * q + 1], acc[4 * q + 2], acc[4 * q + 3]);
    }
    WSTAT_MARK(t, kMF1);
    cluster.sync();  // A
    WSTAT_MARK(t, kMA);

    // ---- F2: own rows' H, partial logits to the global slot, release ----
    if constexpr ((V & kVH2) != 0) {
      static_assert(U % 2 == 0, "kVH2: unit pairs");
      for (int e = tid; e < RPB * U / 2; e += kThreads) {
        const int row = 2 * e / U;
        float2 s = make_float2(0.f, 0.f);
#pragma unroll
        for (int q = 0; q < kF1Slots; ++q) {
          const float2 r = *reinterpret_cast<const float2*>(Red + q * RPB * U + 2 * e);
          s.x += r.x;
          s.y += r.y;
        }
        const bool ok = rank * RPB + row < nb;
        *reinterpret_cast<float2*>(Hs + 2 * e) = make_float2(ok ? fmaxf(s.x, 0.f) : 0.f, ok ? fmaxf(s.y, 0.f) : 0.f);
      }
    } else {
      for (int e = tid; e < RPB * U; e += kThreads) {
        const int row = e / U, u = e % U;
        float s = 0.f;
#pragma unroll
        for (int q = 0; q < kF1Slots; ++q) s += Red[(q * RPB + row) * U + u];
        Hs[e] = rank * RPB + row < nb ? fmaxf(s, 0.f) : 0.f;
      }
    }
    __syncthreads();
    WSTAT_MARK(t, kMH);
    for (int e = tid; e < RPB * O; e += kThreads) {
      const int row = e / O, o = e % O, b = rank * RPB + row;
      if (b < nb) {
        float z = W2l[U * O + o];  // b2 in cluster 0, else 0
#pragma unroll
        for (int u = 0; u < U; ++u) z = fmaf(Hs[row * U + u], W2l[u * O + o], z);
        const size_t si = (((size_t)par * C::kClusters + cid) * kRows + b) * O + o;
        a.slots[si] = z;
      }
    }
    if constexpr (kRel7) cp_async_wait_all();  // the next inputs' bytes (see the release below)
    __syncthreads();
    WSTAT_MARK(t, kMLogits);
    if constexpr (kRel7) {
      // The block barrier after the logits also covers every thread's copies of the next inputs
      // (each waited for its own before it): warp 7 releases while warps 0-6 convert.
      WSTAT_MARK(t, kMArrive);  // (thread 0 releases nothing here; warp 7 does)
      if (warp == 7) {
        if (tid == kThreads - 32) red_release_add(my_counter, 1u);
      } else if (has_next) {
        convert_quads_p<CL, kThreads - 32>(Xs0 + (par ^ 1) * C::kXsF, Bb, nb_next, rank);
      }
    } else {
      if (tid == 0) {
        if constexpr (!kNoFence) __threadfence();
        red_release_add(my_counter, 1u);
      }
      WSTAT_MARK(t, kMArrive);
      if constexpr (C::kXBuf == 2) {
        if (has_next) {  // the next step's inputs become floats while the other clusters catch up
          cp_async_wait_all();
          __syncthreads();
          convert(Xs0 + (par ^ 1) * C::kXsF, nb_next);
        }
      }
    }
    WSTAT_MARK(t, kMConvert);

    // ---- WAIT: every cluster's slot for this rank's rows (the one cross-SM dependency) ----
    {
      if (tid == (kRel7 ? kThreads - 32 : 0)) {
        const unsigned long long t0 = global_ns();
        unsigned spins = 0;
        while ((int)(ld_acquire(my_counter) - target) < 0) {
          if ((++spins & 1023u) == 0 && global_ns() - t0 > kWaitTimeoutNs) {
            atomicExch(a.error_flag, 1);
            __trap();
          }
        }
        if constexpr (!kNoFence) __threadfence();
      }
      __syncthreads();
    }
    WSTAT_MARK(t, kMDone);

    // Phases S, D, G and the end of the step (one function, two files: see the file itself).
#include "variant_kernel_sdg.inc"
#endif
}

}  // namespace wstat
}  // namespace mlp
