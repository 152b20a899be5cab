// cuda/kernels/stationary/slice.cuh — a block's parameter slice at the two ends of the epoch:
// load_slice and init_fragments at launch (Ws, Vs, W2l, V2 from global memory, then F1's Wf and
// G's registers), store_slice at the end (back to global memory, every pad entry checked), and
// Tensors, where the recipe's tensors lie in params and velocity.
#pragma once
#include <cuda_runtime.h>

#include "contract/model.h"
#include "kernels/stationary/layout.cuh"

namespace mlp {
namespace wstat {

// The recipe's tensors in params and velocity (model.h's layout).
struct Tensors {
  float *W1, *b1, *W2, *b2;      // [784 × 256], [256], [256 × 10], [10]
  float *vW1, *vb1, *vW2, *vb2;  // their velocity, same layout
};
__device__ __forceinline__ Tensors tensors(const Args& a) {
  constexpr MlpOffsets off = mlp_offsets(MlpShape{kIn, kHidden, kOut});
  return Tensors{a.params + off.w1,   a.params + off.b1,   a.params + off.w2,   a.params + off.b2,
                 a.velocity + off.w1, a.velocity + off.b1, a.velocity + off.w2, a.velocity + off.b2};
}

// At launch. Ws, Vs: the block's W1 slice (rows [k0, k0 + KS) of its U unit columns from j0), b1
// as row KS on rank 0, and their velocity; W2l: the cluster's W2 rows and b2 (cluster 0) as row U;
// V2: the velocity of the W2 rows this rank owns and of b2 (loss owner). Pad units (j >= 256), rows
// past KS and b2 outside cluster 0 are +0. dHf is zeroed (D skips units >= U: theirs stay 0).
template <int CL, int U>
__device__ __forceinline__ void load_slice(const Block<CL, U>& B, const Args& a) {
  using C = Cfg<CL, U>;
  constexpr int KS = C::KS, KP = C::KP, O = kOut, NO = C::kOwn + 1;
  const int j0 = B.j0, k0 = B.k0;
  const Tensors g = tensors(a);
  for (int e = B.tid; e < KP * U; e += kThreads) {
    const int k = e / U, u = e % U, j = j0 + u;
    float v = 0.f, w = 0.f;  // pad units (j >= 256) and rows past KS: +0
    if (j < kHidden) {
      if (k < KS) {
        w = g.W1[(size_t)(k0 + k) * kHidden + j];
        v = g.vW1[(size_t)(k0 + k) * kHidden + j];
      } else if (k == KS && B.rank == 0) {
        w = g.b1[j];
        v = g.vb1[j];
      }
    }
    B.Ws[e] = w;
    B.Vs[e] = v;
  }
  for (int e = B.tid; e < (U + 1) * O; e += kThreads) {
    const int u = e / O, o = e % O;
    B.W2l[e] = u < U ? (j0 + u < kHidden ? g.W2[(j0 + u) * O + o] : 0.f) : (B.cid == 0 ? g.b2[o] : 0.f);
  }
  for (int e = B.tid; e < NO * O; e += kThreads) {
    const int i = e / O, o = e % O, u = B.rank + CL * i;  // owned unit u (i < kOwn), or b2
    B.V2[e] = i < C::kOwn ? (u < U && j0 + u < kHidden ? g.vW2[(j0 + u) * O + o] : 0.f) : (B.loss_owner ? g.vb2[o] : 0.f);
  }
  for (int e = B.tid; e < C::kDhF; e += kThreads) B.dHf[e] = 0.f;
}

// After load_slice: Wf = the W1 slice as F1's B fragments of form P (operand_parts), and each G
// warp's register elements of the slice (wr) and of its velocity (vr).
template <Products P, int CL, int U>
__device__ __forceinline__ void init_fragments(const Block<CL, U>& B, const Lanes& L, typename Cfg<CL, U>::Regs& wr,
                                               typename Cfg<CL, U>::Regs& vr) {
  using C = Cfg<CL, U>;
  constexpr int KP = C::KP;
  __syncthreads();  // Ws, Vs loaded
  for (int e = B.tid; e < C::kWfF / 2; e += kThreads) {  // every (k, u) of the fragments
    const int k = e / (8 * C::kNT), u = e % (8 * C::kNT);
    const float w = k < KP && u < U ? B.Ws[k * U + u] : 0.f;
    unsigned big, small;
    operand_parts<P>(w, big, small);
    *reinterpret_cast<float2*>(B.Wf + wf_index<CL, U>(k, u)) = make_float2(__uint_as_float(big), __uint_as_float(small));
  }
  if (L.warp < C::kGWm) {
    for_each_frag<CL, U>(L, [&](int mi, int nt, int i, int k, int u, bool in) {
      wr[mi][nt][i] = in ? B.Ws[k * U + u] : 0.f;
      vr[mi][nt][i] = in ? B.Vs[k * U + u] : 0.f;
    });
  }
}

// At the end of the epoch (after the last cluster barrier): the registers' W1 slice and velocity
// back to Ws, Vs, then everything to params and velocity. Pad entries are not written; each is
// counted into a.pad_check[0], and into a.pad_check[1] when not bitwise 0 (a.pad_check optional).
template <int CL, int U>
__device__ __forceinline__ void store_slice(const Block<CL, U>& B, const Lanes& L, const Args& a,
                                            const typename Cfg<CL, U>::Regs& wr, const typename Cfg<CL, U>::Regs& vr) {
  using C = Cfg<CL, U>;
  constexpr int KS = C::KS, KP = C::KP, O = kOut, NO = C::kOwn + 1;
  if (L.warp < C::kGWm) {
    for_each_frag<CL, U>(L, [&](int mi, int nt, int i, int k, int u, bool in) {
      if (in) {
        B.Ws[k * U + u] = wr[mi][nt][i];
        B.Vs[k * U + u] = vr[mi][nt][i];
      }
    });
  }
  __syncthreads();

  const int j0 = B.j0, k0 = B.k0;
  const Tensors g = tensors(a);
  int pad_bad = 0, pad_seen = 0;  // this block's pad entries not bitwise 0, and all of them
  for (int e = B.tid; e < KP * U; e += kThreads) {
    const int k = e / U, u = e % U, j = j0 + u;
    if (j >= kHidden) {
      ++pad_seen;
      pad_bad += (__float_as_uint(B.Ws[e]) | __float_as_uint(B.Vs[e])) != 0u;
    } else if (k < KS) {
      g.W1[(size_t)(k0 + k) * kHidden + j] = B.Ws[e];
      g.vW1[(size_t)(k0 + k) * kHidden + j] = B.Vs[e];
    } else if (k == KS && B.rank == 0) {
      g.b1[j] = B.Ws[e];
      g.vb1[j] = B.Vs[e];
    }
  }
  for (int e = B.tid; e < NO * O; e += kThreads) {
    const int i = e / O, o = e % O, u = B.rank + CL * i;
    if (i < C::kOwn) {
      if (u >= U) continue;
      if (j0 + u >= kHidden) {
        ++pad_seen;
        pad_bad += (__float_as_uint(B.W2l[u * O + o]) | __float_as_uint(B.V2[e])) != 0u;
      } else {
        g.W2[(j0 + u) * O + o] = B.W2l[u * O + o];
        g.vW2[(j0 + u) * O + o] = B.V2[e];
      }
    } else if (B.loss_owner) {
      g.b2[o] = B.W2l[U * O + o];
      g.vb2[o] = B.V2[e];
    }
  }
  if (a.pad_check && pad_seen) {
    atomicAdd(a.pad_check, pad_seen);
    atomicAdd(a.pad_check + 1, pad_bad);
  }
}

}  // namespace wstat
}  // namespace mlp
