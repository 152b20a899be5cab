// cuda/kernels/stationary/layout.cuh — where the weight-stationary epoch keeps its data: Cfg<CL, U>
// (every constant derived from the shape, the shared memory layout), Block<CL, U> (a block's place
// in the grid and its pointers into that layout; every phase takes it first), Lanes (a thread's
// MMA lane coordinates and G's register fragments) and the index map of Wf, F1's B fragments.
#pragma once
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/stationary/ops.cuh"

namespace mlp {
namespace wstat {

// Everything derived from the shape <CL, U>.
template <int CL, int U_>
struct Cfg : Slice<CL> {
  using S = Slice<CL>;
  static constexpr int U = U_;                      // unit columns per cluster
  static constexpr int kClusters = (kHidden + U - 1) / U;  // G
  static constexpr int kGrid = kClusters * CL;      // blocks, one per SM
  static constexpr int KS = S::KS, KP = S::KP, XB = S::XB, kKq = S::kKq, kKqG = S::kKqG;
  static constexpr int KPM = S::KPM, kKs = S::kKs;
  static constexpr int RPB = kRows / CL;            // batch rows each block reduces
  static constexpr int kUq = U / 4;                 // unit quads
  static constexpr int kRedSlots = 2 * CL;          // Red's slots (F1 uses CL, see the layout below)
  static constexpr int kOwn = (U + CL - 1) / CL;    // W2 rows a rank owns at most
  static constexpr int NT = kKqG * kUq;             // 4×4 tiles of the W1 slice (Scr's size)
  static constexpr int GS = 2 * NT <= kThreads ? 2 : 1;  // batch parts of the untiled G (Scr's size)
  static constexpr int kScrStride = 20;             // Scr's row stride (floats)
  static constexpr int kPasses = RPB / 16;          // S: 16 rows a pass
  static constexpr int kW2Items = (U + 1) * kOut;   // D: partial dW2 (U units) and db2 outputs
  static constexpr int kW2Upd = (kOwn + 1) * kOut + 1;  // warp 7 in G: owned rows, b2, loss
  static_assert(U % 4 == 0 && U >= 4 && kClusters * U >= kHidden && (kClusters - 1) * U < kHidden, "units");
  static_assert(kW2Items + 1 <= kThreads && RPB % 16 == 0 && kPasses >= 1, "mappings");
  // The MMAs: n-tiles of 8 units, G's m-tiles of 16 slice rows over 7 warps (warp 7 stays free),
  // the F1 B fragments (Wf) and G's (dHf, in slot order).
  static constexpr int kNT = (U + 7) / 8;
  static constexpr int kMT = (KS + 1 + 15) / 16;
  static constexpr int kGWm = 7;
  static constexpr int kMTw = (kMT + kGWm - 1) / kGWm;
  static constexpr int kWfF = kKs * kNT * 32 * 4;   // Wf: [kKs][kNT][32 lanes] float4
  static constexpr int kDhF = kRows / 8 * kNT * 32 * 4;  // dHf: [16][kNT][32] float4 (>= [kRows][U])
  static_assert(16 * kMT <= KPM + 8 && kDhF >= kRows * U, "mma shape");
  static_assert(kRows == 8 * 16 && RPB % 16 == 0, "F1 gives warp w the rows [16w, 16w + 16)");
  using Regs = float[kMTw][kNT][4];  // a G warp's C-fragment elements of the W1 slice (or velocity)
  using Acc = float[kNT][4];         // G's accumulators of one m-tile
  // Shared memory (floats; every region a multiple of 4 floats, so 16-byte aligned). Red's 2·CL
  // slots and Scr serve dev/stationary/'s CUDA-core forms (their F1 pushes a partial per (rank,
  // K half), their G combines two batch parts in Scr); this kernel uses CL slots of Red and not
  // Scr. Keeping them keeps one layout for every form and the shared memory size this kernel was
  // measured with.
  static constexpr int kXsF = kRows * (KPM > KP ? KPM : KP);  // one input buffer, either stride
  static constexpr int kScrF = GS == 2 ? NT * kScrStride : 0;
  static constexpr int kRest = kRows * XB / 4       // Bb: next step's inputs as bytes
                               + 2 * KP * U         // Ws, Vs
                               + kRedSlots * RPB * U  // Red
                               + kDhF               // dHf
                               + kWfF               // Wf
                               + kScrF              // Scr
                               + RPB * U + RPB * kOutPad + r4(RPB)  // Hs, dZs, lossS
                               + r4((U + 1) * kOut) + r4(CL * (kOwn + 1) * kOut) + r4((kOwn + 1) * kOut) + r4(CL);
  // Two input buffers (the next step's converted while waiting) when they fit, else one.
  static constexpr int kXBuf = (2 * kXsF + kRest) * 4 <= 227 * 1024 ? 2 : 1;
  static constexpr int oXs = 0;
  static constexpr int oBb = oXs + kXBuf * kXsF;
  static constexpr int oWs = oBb + kRows * XB / 4;
  static constexpr int oVs = oWs + KP * U;
  static constexpr int oRed = oVs + KP * U;
  static constexpr int odHf = oRed + kRedSlots * RPB * U;
  static constexpr int oWf = odHf + kDhF;
  static constexpr int oScr = oWf + kWfF;
  static constexpr int oHs = oScr + kScrF;
  static constexpr int odZs = oHs + RPB * U;
  static constexpr int oLoss = odZs + RPB * kOutPad;
  static constexpr int oW2l = oLoss + r4(RPB);
  static constexpr int oW2red = oW2l + r4((U + 1) * kOut);
  static constexpr int oV2 = oW2red + r4(CL * (kOwn + 1) * kOut);
  static constexpr int oLred = oV2 + r4((kOwn + 1) * kOut);
  static constexpr int kFloats = oLred + r4(CL);
  static constexpr size_t kSmemBytes = (size_t)kFloats * 4;
  static_assert(kSmemBytes <= 227 * 1024, "shared memory");
};

// One block's place in the grid and its pointers into the shared memory of Cfg's layout.
template <int CL, int U>
struct Block {
  int rank;         // in the cluster: input rows [KS·rank, +KS), batch rows [RPB·rank, +RPB)
  int cid;          // the cluster: unit columns [U·cid, +U)
  int tid;          // the thread
  int j0, k0;       // the slice's first unit column (U·cid) and first input row (KS·rank)
  float* Xs0;       // [kXBuf][kRows][KPM] inputs (mma_x_index layout)
  uint8_t* Bb;      // [kRows][XB] next inputs, bytes
  float* Ws;        // [KP][U] W1 slice (+ b1 row), at launch and at the end (in G's registers between)
  float* Vs;        // [KP][U] its velocity, likewise
  float* Red;       // [CL][RPB][U] F1 partials of the own rows, slot = sending rank
  float* dHf;       // [16][kNT][32] float4: dH of all rows as G's B fragments (big, small parts)
  float* Wf;        // [kKs][kNT][32] float4: the W1 slice as F1's B fragments
  float* Hs;        // [RPB][U] H, own rows
  float* dZs;       // [RPB][16] dZ, own rows
  float* lossS;     // [RPB] row losses
  float* W2l;       // [U+1][O] W2 rows (+ b2 row)
  float* W2red;     // [CL][kOwn+1][O] owner's partials
  float* V2;        // [kOwn+1][O] owned W2 (+ b2) velocity
  float* Lred;      // [CL] loss partials (rank 0)
  bool loss_owner;  // cluster 0 rank 0: b2 and the step loss
};

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900  // clusters: sm_90+ device code and the host pass
template <int CL, int U>
__device__ __forceinline__ Block<CL, U> this_block(const cooperative_groups::cluster_group& cluster) {
  using C = Cfg<CL, U>;
  extern __shared__ float4 smem4[];
  float* sm = reinterpret_cast<float*>(smem4);
  const int rank = (int)cluster.block_rank(), cid = (int)blockIdx.x / CL;
  return Block<CL, U>{rank,          cid,           (int)threadIdx.x, cid * U,          rank * C::KS,
                      sm + C::oXs,   reinterpret_cast<uint8_t*>(sm + C::oBb), sm + C::oWs,  sm + C::oVs,
                      sm + C::oRed,  sm + C::odHf,  sm + C::oWf,      sm + C::oHs,      sm + C::odZs,
                      sm + C::oLoss, sm + C::oW2l,  sm + C::oW2red,   sm + C::oV2,      sm + C::oLred,
                      cid == 0 && rank == 0};
}
#endif

// A thread's MMA lane coordinates g = lane / 4, q = lane % 4, and its warp. G's warps w < 7 keep,
// for m-tile mt = w + 7·mi (slice rows 16·mt + g, + 8) and n-tile nt (units 8·nt + 2q, + 1), the
// C-fragment elements c0..c3 of the W1 slice and of its velocity in registers for the whole
// epoch (Cfg::Regs); entries outside [KS + 1] × [U] are 0 and stay 0.
struct Lanes {
  int g, q, warp;
  __device__ int frag_k(int mt, int i) const { return 16 * mt + g + 8 * (i >> 1); }  // element i's slice row
  __device__ int frag_u(int nt, int i) const { return 8 * nt + 2 * q + (i & 1); }     // element i's unit
};
__device__ __forceinline__ Lanes lanes_of(int tid) {
  Lanes L;
  L.g = (tid & 31) >> 2;
  L.q = tid & 3;
  L.warp = tid >> 5;
  return L;
}

// f(mi, nt, i, k, u, in) for every register element of a G warp (warp < kGWm): m-tile
// warp + kGWm·mi, n-tile nt, C-fragment element i at slice row k, unit u; `in` when it lies in
// the W1 slice ([KP] x [U] of an existing m-tile).
template <int CL, int U, class F>
__device__ __forceinline__ void for_each_frag(const Lanes& L, F&& f) {
  using C = Cfg<CL, U>;
#pragma unroll
  for (int mi = 0; mi < C::kMTw; ++mi)
#pragma unroll
    for (int nt = 0; nt < C::kNT; ++nt)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int mt = L.warp + C::kGWm * mi, k = L.frag_k(mt, i), u = L.frag_u(nt, i);
        f(mi, nt, i, k, u, mt < C::kMT && k < C::KP && u < U);
      }
}

// Both B-fragment buffers hold, per (k-step, n-tile), 32 float4s {big b0, small b0, big b1,
// small b1}, one per lane L = 4·(n % 8) + k % 4 (b0: k % 8 < 4, b1 the others).
// Wf (F1, W1 slice row k, unit u): lane L's float4 sits in slot wf_slot(L), which spreads the
// update's float2 stores (lanes with equal n % 4 and k % 4) over the banks, at most 2-way;
// a quarter-warp's loads still read 8 different bank groups.
// dHf (G, batch row b, unit u): slot L itself; D writes it in slot order (coalesced).
__device__ __forceinline__ int wf_slot(int L) { return L ^ ((L >> 2) & 6); }
template <int CL, int U>
__device__ __forceinline__ int wf_index(int k, int u) {
  using C = Cfg<CL, U>;
  return (((k >> 3) * C::kNT + (u >> 3)) * 32 + wf_slot(4 * (u & 7) + (k & 3))) * 4 + 2 * ((k >> 2) & 1);
}

}  // namespace wstat
}  // namespace mlp
