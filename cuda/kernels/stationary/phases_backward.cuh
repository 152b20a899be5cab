// cuda/kernels/stationary/phases_backward.cuh — a step's second half: S (softmax, loss and dZ of
// the own rows from every cluster's logits), D (dH to every block of the cluster as G's B
// fragments; the dW2, db2 and loss partials to their owners) and G (dW1 of the slice on the
// tensor cores and its update in registers on warps 0-6, the W2 / b2 update and the step loss on
// warp 7).
#pragma once
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <cmath>

#include "kernels/stationary/layout.cuh"

// Clusters (cooperative_groups::cluster_group) exist in sm_90+ device code and in the host pass only;
// the kernel traps below sm_90 without calling these.
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
namespace mlp {
namespace wstat {

// S: own rows' logits z = Σ_c slot[c] (cluster order), softmax, loss, dZ = (p − onehot)/nb, with
// one correctly rounded reciprocal of the softmax sum and of nb; 16 lanes a row, kPasses passes.
// dZ and the row losses of rows >= nb are 0.
template <int CL, int U>
__device__ __forceinline__ void s_softmax(const Block<CL, U>& B, const Args& a, int nb, int par,
                                          const int (&ys)[Cfg<CL, U>::kPasses]) {
  using C = Cfg<CL, U>;
  constexpr int RPB = C::RPB, O = kOut;
#pragma unroll
  for (int p = 0; p < C::kPasses; ++p) {
    const int row = (B.tid >> 4) + 16 * p, o = B.tid & 15, b = B.rank * RPB + row;
    const bool valid = b < nb, lane_o = o < O;
    float z = 0.f;
    if (valid && lane_o) {
      const size_t si = ((size_t)par * C::kClusters * kRows + b) * O + o;
      const float* src = a.slots + si;
#pragma unroll
      for (int c = 0; c < C::kClusters; ++c) z += __ldcg(src + (size_t)c * kRows * O);
    }
    float m = lane_o ? z : -INFINITY;
#pragma unroll
    for (int off = 8; off > 0; off >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
    const float ex = lane_o ? expf(z - m) : 0.f;
    float sum = ex;
#pragma unroll
    for (int off = 8; off > 0; off >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, off);
    const int y = ys[p];
    const float zy = __shfl_sync(0xffffffffu, z, (B.tid & 16) + y);
    const float loss = logf(sum) - (zy - m);
    const float d = (ex * __frcp_rn(sum) - (o == y ? 1.f : 0.f)) * __frcp_rn((float)nb);
    if (lane_o) B.dZs[row * kOutPad + o] = valid ? d : 0.f;
    if (o == 0) B.lossS[row] = valid ? loss : 0.f;
  }
}

// D: own rows' dH = dZ·W2ᵀ ⊙ (H > 0), as G's operand parts of form P (operand_parts: TF32 big and
// small, or big alone), to every block of the cluster in dHf's slot order: item e = float2 {big, small}, consecutive threads write consecutive
// float2s (coalesced DSMEM stores); units >= U are skipped (0). Then the partial dW2 and db2 of the
// own rows to their owners' W2red, and the own rows' loss sum to rank 0's Lred.
template <Products P, int CL, int U>
__device__ __forceinline__ void d_push(const Block<CL, U>& B) {
  using C = Cfg<CL, U>;
  constexpr int RPB = C::RPB, O = kOut, NO = C::kOwn + 1;
  cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
  constexpr int kItems = RPB / 8 * C::kNT * 64;
  float* dst0 = B.dHf + B.rank * (RPB / 8) * C::kNT * 128;
  for (int e = B.tid; e < kItems; e += kThreads) {
    const int hf = e & 1, L = (e >> 1) & 31, nt = (e >> 6) % C::kNT, ksl = (e >> 6) / C::kNT;
    const int u = 8 * nt + (L >> 2), row = 8 * ksl + (L & 3) + 4 * hf;
    if (u < U) {
      float acc = 0.f;
#pragma unroll
      for (int o = 0; o < O; ++o) acc = fmaf(B.dZs[row * kOutPad + o], B.W2l[u * O + o], acc);
      const float dh = B.Hs[row * U + u] > 0.f ? acc : 0.f;
      unsigned big, small;
      operand_parts<P>(dh, big, small);
      const float2 bs = make_float2(__uint_as_float(big), __uint_as_float(small));
#pragma unroll
      for (int q = 0; q < CL; ++q) *reinterpret_cast<float2*>(cluster.map_shared_rank(dst0, (unsigned)q) + 2 * e) = bs;
    }
  }
  if (B.tid < C::kW2Items) {
    const int u = B.tid / O, o = B.tid % O;
    float g = 0.f;
#pragma unroll 4
    for (int row = 0; row < RPB; ++row) g = fmaf(u < U ? B.Hs[row * U + u] : 1.f, B.dZs[row * kOutPad + o], g);
    const int owner = u < U ? u % CL : 0, which = u < U ? u / CL : C::kOwn;
    cluster.map_shared_rank(B.W2red, (unsigned)owner)[(B.rank * NO + which) * O + o] = g;
  } else if (B.tid == C::kW2Items) {
    float l = 0.f;
    for (int row = 0; row < RPB; ++row) l += B.lossS[row];
    cluster.map_shared_rank(B.Lred, 0u)[B.rank] = l;
  }
}

// Item `it` of kW2Upd (warp 7 in G, w2_updates): the W2 rows this rank owns, b2 (cluster 0 rank
// 0) and the step loss, from the partials in W2red and Lred (rank order); the new W2 rows and b2
// are pushed to every block's W2l.
template <int CL, int U>
__device__ __forceinline__ void w2_update(const Block<CL, U>& B, const Args& a, int it, int t, int nb) {
  using C = Cfg<CL, U>;
  constexpr int O = kOut, NO = C::kOwn + 1;
  cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
  if (it < C::kOwn * O) {  // owned W2 rows: unit u = rank + CL·i
    const int i = it / O, o = it % O, u = B.rank + CL * i;
    if (u < U) {
      float g = 0.f;
#pragma unroll
      for (int q = 0; q < CL; ++q) g += B.W2red[(q * NO + i) * O + o];
      const float v = a.mu * B.V2[i * O + o] - a.lr * g;
      const float w = B.W2l[u * O + o] + v;
      B.V2[i * O + o] = v;
#pragma unroll
      for (int q = 0; q < CL; ++q) cluster.map_shared_rank(B.W2l, (unsigned)q)[u * O + o] = w;
    }
  } else if (it < NO * O) {  // b2
    if (B.loss_owner) {
      const int o = it - C::kOwn * O;
      float g = 0.f;
#pragma unroll
      for (int q = 0; q < CL; ++q) g += B.W2red[(q * NO + C::kOwn) * O + o];
      const float v = a.mu * B.V2[C::kOwn * O + o] - a.lr * g;
      const float w = B.W2l[U * O + o] + v;
      B.V2[C::kOwn * O + o] = v;
#pragma unroll
      for (int q = 0; q < CL; ++q) cluster.map_shared_rank(B.W2l, (unsigned)q)[U * O + o] = w;
    }
  } else if (B.loss_owner) {
    float l = 0.f;
#pragma unroll
    for (int q = 0; q < CL; ++q) l += B.Lred[q];
    a.step_loss[t] = l / (float)nb;
  }
}

// Warp 7 in G: its lanes take the kW2Upd items of w2_update in turn.
template <int CL, int U>
__device__ __forceinline__ void w2_updates(const Block<CL, U>& B, const Args& a, int t, int nb) {
  for (int it = B.tid - (kThreads - 32); it < Cfg<CL, U>::kW2Upd; it += 32) w2_update(B, a, it, t, nb);
}

// G's products of m-tile mt (A = Xᵀ, exact p; rows of the m-tile past KPM read as 0) with dH's big
// parts (acc) and small parts (acs; the single-MMA forms: even k-steps into acc, odd into acs) over the 128 batch rows,
// k-steps of 8.
template <Products P, int CL, int U>
__device__ __forceinline__ void g_products(const Block<CL, U>& B, const Lanes& L, const float* Xs, int mt,
                                           typename Cfg<CL, U>::Acc& acc, typename Cfg<CL, U>::Acc& acs) {
  using C = Cfg<CL, U>;
  const int lane_g = L.g, lane_q = L.q;
  const int k0 = 16 * mt + lane_g, k1 = k0 + 8;
  const float4* df = reinterpret_cast<const float4*>(B.dHf) + (B.tid & 31);
  const bool ok0 = k0 < C::KPM, ok1 = k1 < C::KPM;
#pragma unroll 4
  for (int ks = 0; ks < kRows / 8; ++ks) {
    const int b0 = 8 * ks + lane_q, b1 = b0 + 4;  // b0 has bit 2 clear, b1 set
    const float* xa = Xs + b0 * C::KPM;
    const float* xb = Xs + b1 * C::KPM;
    const unsigned a4[4] = {ok0 ? __float_as_uint(xa[k0]) : 0u, ok1 ? __float_as_uint(xa[k1]) : 0u,
                            ok0 ? __float_as_uint(xb[k0 ^ 4]) : 0u, ok1 ? __float_as_uint(xb[k1 ^ 4]) : 0u};
#pragma unroll
    for (int nt = 0; nt < C::kNT; ++nt) {
      const float4 f = df[(ks * C::kNT + nt) * 32];
      if constexpr (P == Products::kSplit) {
        mma_tf32(acc[nt], a4, __float_as_uint(f.x), __float_as_uint(f.z));
        mma_tf32(acs[nt], a4, __float_as_uint(f.y), __float_as_uint(f.w));
      } else {  // two chains, as in F1
        mma_tf32(ks % 2 == 0 ? acc[nt] : acs[nt], a4, __float_as_uint(f.x), __float_as_uint(f.z));
      }
    }
  }
}

// G of m-tile mt = warp + 7·mi of a warp w < 7: acc, acs get its products, then its dW1 (with db1
// in rank 0's row KS) updates the elements of wr[mi], vr[mi] (v = μ·v − λ·g/255, w += v), and
// their F1 fragments go to Wf.
template <Products P, int CL, int U>
__device__ __forceinline__ void g_mtile(const Block<CL, U>& B, const Lanes& L, const Args& a, const float* Xs, int mi,
                                        typename Cfg<CL, U>::Acc& acc, typename Cfg<CL, U>::Acc& acs,
                                        typename Cfg<CL, U>::Regs& wr, typename Cfg<CL, U>::Regs& vr) {
  using C = Cfg<CL, U>;
  constexpr int KS = C::KS;
  const int mt = L.warp + C::kGWm * mi;
#pragma unroll
  for (int nt = 0; nt < C::kNT; ++nt)
#pragma unroll
    for (int i = 0; i < 4; ++i) acc[nt][i] = acs[nt][i] = 0.f;
  g_products<P>(B, L, Xs, mt, acc, acs);
#pragma unroll
  for (int nt = 0; nt < C::kNT; ++nt)
#pragma unroll
    for (int i = 0; i < 4; ++i) acc[nt][i] += acs[nt][i];
#pragma unroll
  for (int nt = 0; nt < C::kNT; ++nt)
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int k = L.frag_k(mt, i), u = L.frag_u(nt, i);
      if (k <= KS && u < U) {
        float& v = vr[mi][nt][i];
        float& w = wr[mi][nt][i];
        v = a.mu * v - a.lr * (acc[nt][i] * kInv255);
        w += v;
        unsigned big, small;
        operand_parts<P>(w, big, small);
        *reinterpret_cast<float2*>(B.Wf + wf_index<CL, U>(k, u)) = make_float2(__uint_as_float(big), __uint_as_float(small));
      }
    }
}

// G, after barrier B: warp w < 7 takes m-tiles mt = w + 7·mi of the slice rows x kNT n-tiles of
// units (g_mtile; acc, acs are its accumulators), warp 7 does the W2 update meanwhile.
template <Products P, int CL, int U>
__device__ __forceinline__ void g_update(const Block<CL, U>& B, const Lanes& L, const Args& a, const float* Xs,
                                         typename Cfg<CL, U>::Acc& acc, typename Cfg<CL, U>::Acc& acs,
                                         typename Cfg<CL, U>::Regs& wr, typename Cfg<CL, U>::Regs& vr, int t, int nb) {
  using C = Cfg<CL, U>;
  if (L.warp < C::kGWm) {
#pragma unroll
    for (int mi = 0; mi < C::kMTw; ++mi) {
      if (L.warp + C::kGWm * mi < C::kMT) {
        g_mtile<P>(B, L, a, Xs, mi, acc, acs, wr, vr);
      }
    }
  } else {
    w2_updates(B, a, t, nb);
  }
}

}  // namespace wstat
}  // namespace mlp
#endif
