// cuda/kernels/stationary/phases_forward.cuh — a step's first half and the input staging around
// it: the epoch's inputs prefetched into L2 and step 0's staged (at launch), the step's labels,
// F1 (partial pre-activations on the tensor cores, pushed to the reducing blocks), F2 (H, then the
// partial logits to the global slots), the release on the rank's counter (with the next step's
// conversion) and the wait for every cluster's logits.
#pragma once
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include "kernels/stationary/layout.cuh"

// Clusters (cooperative_groups::cluster_group) exist in sm_90+ device code and in the host pass only;
// the kernel traps below sm_90 without calling these.
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
namespace mlp {
namespace wstat {

// At launch: block (c, r) prefetches into L2 its slice of the epoch's rows e ≡ c (mod G) and,
// rank 0, their labels, so that an epoch that starts with a cold L2 (the gate evaluates between
// epochs) does not stage from HBM.
template <int CL, int U>
__device__ __forceinline__ void prefetch_epoch_inputs(const Block<CL, U>& B, const Args& a) {
  using C = Cfg<CL, U>;
  for (int e = B.cid + C::kClusters * B.tid; e < a.n; e += C::kClusters * kThreads) {
    const int s = __ldg(a.order + e);
    const uint8_t* row = a.xb + ((size_t)s * CL + B.rank) * C::XB;
    prefetch_l2(row);
    prefetch_l2(row + C::XB - 1);  // a slice may straddle two lines
    if (B.rank == 0) prefetch_l2(a.labels + s);
  }
}

// At launch: step 0's inputs staged and converted into input buffer 0.
template <int CL, int U>
__device__ __forceinline__ void stage_first_inputs(const Block<CL, U>& B, const Args& a) {
  const int nb0 = min(a.batch, a.n);
  stage_bytes<CL>(a, B.Bb, 0, nb0, B.rank);
  cp_async_wait_all();
  __syncthreads();
  convert_rows_p<CL>(B.Xs0, B.Bb, nb0, B.rank);
}

// ys[p]: the label of the row this thread's S pass p handles (0 past nb).
template <int CL, int U>
__device__ __forceinline__ void step_labels(const Block<CL, U>& B, const Args& a, int base, int nb,
                                            int (&ys)[Cfg<CL, U>::kPasses]) {
  using C = Cfg<CL, U>;
#pragma unroll
  for (int p = 0; p < C::kPasses; ++p) {
    const int b = B.rank * C::RPB + (B.tid >> 4) + 16 * p;
    ys[p] = b < nb ? __ldg(a.labels + __ldg(a.order + base + b)) : 0;
  }
}

// F1: partial pre-activations of all rows from this block's K slice. Warp w: rows [16w, 16w + 16)
// x all kNT n-tiles over the KPM inputs (k-steps of 8), each product as p·big + p·small (two
// accumulators, summed at the end; the single-MMA forms P: p·big alone, TF32 or BF16 products); the whole K slice in
// one warp, so nothing to reduce across lanes. The 16 rows all go to rank 16w / RPB as Red slot
// `rank`, times 1/255 (the inputs are p, not p/255).
template <Products P, int CL, int U>
__device__ __forceinline__ void f1_partials(const Block<CL, U>& B, const Lanes& L, const float* Xs) {
  using C = Cfg<CL, U>;
  constexpr int RPB = C::RPB;
  const int warp = L.warp, lane_g = L.g, lane_q = L.q;
  float acc[C::kNT][4], acs[C::kNT][4];  // the big parts' products, the small parts'
#pragma unroll
  for (int nt = 0; nt < C::kNT; ++nt)
#pragma unroll
    for (int i = 0; i < 4; ++i) acc[nt][i] = acs[nt][i] = 0.f;
  const int r0 = 16 * warp + lane_g;
  const float* x0 = Xs + r0 * C::KPM;
  const float* x1 = x0 + 8 * C::KPM;
  const int sw = 4 * ((r0 >> 2) & 1);  // mma_x_index's column swizzle (rows r0 and r0 + 8)
  const float4* wf = reinterpret_cast<const float4*>(B.Wf) + wf_slot(B.tid & 31);
#pragma unroll
  for (int ks = 0; ks < C::kKs; ++ks) {
    const int c0 = (8 * ks + lane_q) ^ sw, c1 = (8 * ks + lane_q + 4) ^ sw;
    const unsigned a4[4] = {__float_as_uint(x0[c0]), __float_as_uint(x1[c0]), __float_as_uint(x0[c1]),
                            __float_as_uint(x1[c1])};
#pragma unroll
    for (int nt = 0; nt < C::kNT; ++nt) {
      const float4 f = wf[(ks * C::kNT + nt) * 32];
      if constexpr (P == Products::kSplit) {
        mma_tf32(acc[nt], a4, __float_as_uint(f.x), __float_as_uint(f.z));
        mma_tf32(acs[nt], a4, __float_as_uint(f.y), __float_as_uint(f.w));
      } else {  // two chains of MMAs still (even k-steps into acc, odd into acs): one chain of
                // dependent MMAs ran slower than the split's two (0.439 against 0.388 ms, PERFLOG)
        mma_tf32(ks % 2 == 0 ? acc[nt] : acs[nt], a4, __float_as_uint(f.x), __float_as_uint(f.z));
      }
    }
  }
#pragma unroll
  for (int nt = 0; nt < C::kNT; ++nt)
#pragma unroll
    for (int i = 0; i < 4; ++i) acc[nt][i] = (acc[nt][i] + acs[nt][i]) * kInv255;
  float* dst = cooperative_groups::this_cluster().map_shared_rank(B.Red, (unsigned)(r0 / RPB)) +
               (B.rank * RPB + r0 % RPB) * U;
#pragma unroll
  for (int nt = 0; nt < C::kNT; ++nt) {
    const int u = 8 * nt + 2 * lane_q;
    if (u < U) {
      *reinterpret_cast<float2*>(dst + u) = make_float2(acc[nt][0], acc[nt][1]);
      *reinterpret_cast<float2*>(dst + 8 * U + u) = make_float2(acc[nt][2], acc[nt][3]);
    }
  }
}

// F2, after barrier A: own rows' A = Σ_slot Red (slot order), H = ReLU(A) (0 on rows >= nb), by
// unit pairs in one pass of RPB·U/2 threads.
template <int CL, int U>
__device__ __forceinline__ void f2_hidden(const Block<CL, U>& B, int nb) {
  using C = Cfg<CL, U>;
  constexpr int RPB = C::RPB;
  static_assert(U % 2 == 0, "F2's H by unit pairs");
  for (int e = B.tid; e < RPB * U / 2; e += kThreads) {
    const int row = 2 * e / U;
    float2 s = make_float2(0.f, 0.f);
#pragma unroll
    for (int q = 0; q < CL; ++q) {
      const float2 r = *reinterpret_cast<const float2*>(B.Red + q * RPB * U + 2 * e);
      s.x += r.x;
      s.y += r.y;
    }
    const bool ok = B.rank * RPB + row < nb;
    *reinterpret_cast<float2*>(B.Hs + 2 * e) = make_float2(ok ? fmaxf(s.x, 0.f) : 0.f, ok ? fmaxf(s.y, 0.f) : 0.f);
  }
}

// F2, after H: own rows' partial logits of the cluster's units (+ b2 in cluster 0) -> global slot
// [par][cid][row].
template <int CL, int U>
__device__ __forceinline__ void f2_logits(const Block<CL, U>& B, const Args& a, int nb, int par) {
  using C = Cfg<CL, U>;
  constexpr int RPB = C::RPB, O = kOut;
  for (int e = B.tid; e < RPB * O; e += kThreads) {
    const int row = e / O, o = e % O, b = B.rank * RPB + row;
    if (b < nb) {
      float z = B.W2l[U * O + o];  // b2 in cluster 0, else 0
#pragma unroll
      for (int u = 0; u < U; ++u) z = fmaf(B.Hs[row * U + u], B.W2l[u * O + o], z);
      const size_t si = (((size_t)par * C::kClusters + B.cid) * kRows + b) * O + o;
      a.slots[si] = z;
    }
  }
}

// After the logits: the block barrier, then the release-add on the rank's counter (bar.sync +
// red.release.gpu, as CUTLASS's generic barrier). Two input buffers: every thread first waits for
// its own copies of the next inputs, so the barrier covers them too, and warp 7 releases while
// warps 0-6 convert them into the other buffer. One buffer: thread 0 releases (the conversion
// follows G, which reads the buffer).
template <int CL, int U>
__device__ __forceinline__ void arrive(const Block<CL, U>& B, const Lanes& L, unsigned* counter, bool has_next, int nb_next, int par) {
  using C = Cfg<CL, U>;
  if constexpr (C::kXBuf == 2) cp_async_wait_all();
  __syncthreads();
  if constexpr (C::kXBuf == 2) {
    if (L.warp == 7) {
      if (B.tid == kThreads - 32) red_release_add(counter, 1u);
    } else if (has_next) {
      convert_quads_p<CL, kThreads - 32>(B.Xs0 + (par ^ 1) * C::kXsF, B.Bb, nb_next, B.rank);
    }
  } else {
    if (B.tid == 0) red_release_add(counter, 1u);
  }
}

// WAIT: the releasing thread polls the counter (ld.acquire.gpu) until every cluster's rank-r block
// has written its slot for the rows this block reduces (the one cross-SM dependency), then the
// block barrier. A wait longer than kWaitTimeoutNs sets a.error_flag and traps.
template <int CL, int U>
__device__ __forceinline__ void wait_arrivals(const Block<CL, U>& B, const Args& a, const unsigned* counter,
                                              unsigned target) {
  using C = Cfg<CL, U>;
  if (B.tid == (C::kXBuf == 2 ? kThreads - 32 : 0)) {
    const unsigned long long t0 = global_ns();
    unsigned spins = 0;
    while ((int)(ld_acquire(counter) - target) < 0) {
      if ((++spins & 1023u) == 0 && global_ns() - t0 > kWaitTimeoutNs) {
        atomicExch(a.error_flag, 1);
        __trap();
      }
    }
  }
  __syncthreads();
}

}  // namespace wstat
}  // namespace mlp
#endif
