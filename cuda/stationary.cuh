// cuda/stationary.cuh — a weight-stationary epoch: ONE launch of G·CL blocks (one per SM) in
// thread-block clusters of CL trains a whole epoch of the recipe (784-256-10, batch <= 128), with
// each block's slice of the parameters and their velocity held in shared memory for the whole
// epoch. Standalone dev experiment (dev/stationary/); not yet a KernelPath. The host side (shape
// choice from the device's co-resident cluster count, prepare, launch) is cuda/stationary_host.cuh.
//
// Shape <CL, U>: U hidden units per cluster (a multiple of 4: the GEMM tiles are 4 units wide),
// G = ceil(256 / U) clusters, G·U >= 256 unit columns; the G·U − 256 columns past 256 are PAD
// units (instantiated: <8,16> G 16, <8,20> G 13 (4 pad), <4,12> G 22 (8 pad)).
//   cluster c  unit columns j in [U·c, U·c + U)
//   rank r     input rows k in [KS·r, KS·r + KS) of W1 for those units (KS = 784 / CL), and
//              their velocity; rank 0 also b1[units] (stored as row KS of its slice, so the GEMMs
//              treat b1 as the weight of an input that is 1 on every valid row);
//              owner of the W2 rows of units u ≡ r (mod CL) of the cluster and their velocity
//              (every block keeps a copy of the cluster's W2 rows, pushed by the owners);
//              batch rows [RPB·r, RPB·r + RPB) for every row-wise reduction (RPB = 128 / CL);
//   cluster 0, rank 0: b2 (a "unit" whose activation is 1) and the step loss.
//
// Pad units stay exactly 0 and never reach the real parameters. They start with W1 = b1 = 0,
// W2 row = 0 and velocity +0 (read as 0, never from memory). Then each step, by induction: their
// pre-activation partials are sums of x·(+0) with x >= 0 finite (pixels, the ones column), so +0;
// the sum of the partials is +0, ReLU gives H = +0, their logit terms fmaf(0, 0, z) = z change
// nothing; dH = 0 by the mask (h > 0 false); dW1 = Σ x·(+0) = +0, db1 likewise; the dW2 partials
// are fmaf(+0, dZ, g) from g = +0, i.e. sums of ±0 started at +0, so +0; then v = μ·(+0) − λ·(±0)
// = +0 and w = +0 + +0 = +0, bitwise (IEEE: x + y of zeros is −0 only when both are −0). The
// write-back skips columns >= 256. dev/stationary/stationary_epoch.cu checks that every pad
// entry of W1, b1, W2 and the velocities (pad_check) is bitwise 0 at the end of every epoch.
//
// One step (t), every dependency named:
//   F1  partial pre-activations of all rows from the block's K slice: thread (row b, K half s)
//       accumulates all U units over input quads c ≡ s (mod 2); P_{r,s} pushed into the
//       reducing block's shared memory (DSMEM stores, slot 2r + s)
//   cluster.sync A
//   F2  own rows: A = Σ_slot P (slot order), H = ReLU(A); partial logits of the cluster's units
//       (+ b2 in cluster 0) -> global slot [t%2][c][row]; release-add on counter[rank]
//       (while waiting: the next step's inputs, already in shared memory as bytes, become floats)
//   WAIT  acquire counter[rank] >= base + G·(t+1): every cluster's rank-r block has written its
//       slot for the rows this block reduces (the one cross-SM dependency)
//   S   own rows: z = Σ_c slot[c] (cluster order), softmax, loss, dZ = (p − onehot)/nb
//   D   own rows: dH = dZ·W2ᵀ ⊙ (H > 0) pushed to every block of the cluster; partial dW2, db2
//       and loss over own rows pushed to their owners
//   cluster.sync B
//   G   dW1 slice = X[:, slice]ᵀ·dH (with db1 in rank 0's row KS) by 4×4 tiles, batch split in
//       GS parts, summed in part order, the update in place; warp 7 afterwards: owners sum the
//       dW2 (db2, loss) partials in rank order, update, push the W2 copies
// The next step's inputs are staged as bytes by cp.async issued at the top of each step.
// Every sum has a fixed order, so reruns are bitwise identical; no float atomics.
//
// DSMEM buffers and the syncs that separate their writers from their readers (t = step):
//   Red   written F1(t+1) after B(t) | read F2(t) between A(t) and B(t)
//   dHf   written D(t) before B(t)   | read G(t) after B(t), before the reader's A(t+1)
//   W2red written D(t) before B(t)   | read by the owner in G(t), before its A(t+1)
//   Lred  written D(t) before B(t)   | read by cluster 0 rank 0 in G(t), before its A(t+1)
//   W2l   written G(t) after B(t)    | read F2/D of t (before B(t)) and of t+1 (after A(t+1))
// A writer of step t+1 passes A(t+1) (or B(t)) only after the reader arrived there, i.e. after
// the reader finished reading step t's contents; a reader of step t reads after the sync that
// follows the writes. Local buffers (Hs, dZs, lossS, Scr, Xs, Bb) are separated by __syncthreads.
#pragma once
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "submission.h"

namespace mlp {

namespace wstat {
constexpr int kIn = 784, kHidden = 256, kOut = 10;  // the recipe's widths (only these)
constexpr int kRows = 128;                           // largest batch; the per-step row buffers
constexpr int kThreads = 256;                        // threads per block
constexpr int kOutPad = 16;                          // dZ row stride in shared memory
constexpr float kInv255 = 1.0f / 255.0f;
constexpr unsigned long long kWaitTimeoutNs = 4000000000ull;  // a grid wait longer than 4 s traps

constexpr int r4(int x) { return (x + 3) / 4 * 4; }  // rounded up to a multiple of 4

// The input slice of a rank, from the cluster size CL alone (also the packed input layout).
template <int CL>
struct Slice {
  static constexpr int KS = kIn / CL;              // input rows per block
  static constexpr int kKp0 = (KS + 1 + 3) / 4 * 4;
  // Row stride of the staged inputs (floats): KS inputs, the ones column (b1), zero padding; an
  // odd multiple of 4 so the 8 consecutive rows a quarter-warp reads in F1 (one float4 each) fall
  // in 8 different bank groups.
  static constexpr int KP = kKp0 % 8 == 0 ? kKp0 + 4 : kKp0;
  static constexpr int XB = (KP + 15) / 16 * 16;   // bytes per (sample, rank) in the packed X
  static constexpr int kKq = KP / 4;               // input quads staged
  static constexpr int kKqG = (KS + 1 + 3) / 4;    // input quads with a non-zero row (F1, G)
  static_assert(kIn % CL == 0 && kKqG <= kKq && XB >= KP, "slice");
};

// Everything derived from the shape <CL, U>.
template <int CL, int U_>
struct Cfg : Slice<CL> {
  using S = Slice<CL>;
  static constexpr int CLs = CL;
  static constexpr int U = U_;                      // unit columns per cluster
  static constexpr int kClusters = (kHidden + U - 1) / U;  // G
  static constexpr int kGrid = kClusters * CL;      // blocks, one per SM
  static constexpr int KS = S::KS, KP = S::KP, XB = S::XB, kKq = S::kKq, kKqG = S::kKqG;
  static constexpr int RPB = kRows / CL;            // batch rows each block reduces
  static constexpr int kUq = U / 4;                 // unit quads
  static constexpr int kRedSlots = 2 * CL;          // F1 partials per pre-activation (rank, K half)
  static constexpr int kOwn = (U + CL - 1) / CL;    // W2 rows a rank owns at most
  static constexpr int NT = kKqG * kUq;             // G: 4×4 tiles of the W1 slice
  static constexpr int GS = 2 * NT <= kThreads ? 2 : 1;  // G: batch parts (threads GS·NT)
  static constexpr int kScrStride = 20;             // G: combine scratch row stride (floats)
  static constexpr int kPasses = RPB / 16;          // S: 16 rows a pass
  static constexpr int kW2Items = (U + 1) * kOut;   // D: partial dW2 (U units) and db2 outputs
  static constexpr int kW2Upd = (kOwn + 1) * kOut + 1;  // warp 7 in G: owned rows, b2, loss
  static_assert(U % 4 == 0 && U >= 4 && kClusters * U >= kHidden && (kClusters - 1) * U < kHidden, "units");
  static_assert(kThreads == 2 * kRows, "F1: one thread per (row, K half)");
  static_assert(GS * NT <= kThreads && kRows % GS == 0, "G tiles");
  static_assert(kW2Items + 1 <= kThreads && RPB % 16 == 0 && kPasses >= 1, "mappings");
  // Shared memory (floats; every region a multiple of 4 floats, so 16-byte aligned).
  static constexpr int kXsF = kRows * KP;
  static constexpr int kScrF = GS == 2 ? NT * kScrStride : 0;
  static constexpr int kRest = kRows * XB / 4       // Bb: next step's inputs as bytes
                               + 2 * KP * U         // Ws, Vs
                               + kRedSlots * RPB * U  // Red
                               + kRows * U          // dHf
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
  static constexpr int oScr = odHf + kRows * U;
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

struct Args {
  float* params;           // flat parameters (submission.h layout), read at start, written at end
  float* velocity;         // flat velocity, same layout
  const uint8_t* xb;       // packed inputs [n_total][CL][XB] bytes (stationary_prepare)
  const int* labels;       // [n_total] int32
  const int* order;        // [n] this epoch's row order
  int n, batch;            // samples this epoch, rows per step (<= kRows)
  float lr, mu;            // SGD: v = mu·v − lr·g; p = p + v
  float* step_loss;        // [ceil(n / batch)] each step's mean loss
  float* slots;            // [2][clusters][kRows][kOut] partial logits, by step parity
  unsigned* counters;      // [CL][32] arrival counters, one 128-byte line per rank
  unsigned arrivals_base;  // each counter's value before this launch
  int* error_flag;         // set to 1 before a trap when a grid wait times out
  int* pad_check;          // [2]: += pad entries seen, += those not bitwise 0 (end of the epoch)
};

// Exactly float32(p) / 255.0f, the loader's value (cuda/dataset.cpp), for p in 0..255: the
// product with the rounded reciprocal and one Newton correction (verified for all 256 bytes on
// the host and on the device by dev/stationary/stationary_epoch.cu).
__host__ __device__ __forceinline__ float pixel(unsigned p) {
  const float f = (float)p;
#ifdef __CUDA_ARCH__
  const float q = __fmul_rn(f, kInv255);
#else
  const float q = f * kInv255;
#endif
  const float e = fmaf(-q, 255.0f, f);
  return fmaf(e, kInv255, q);
}

__device__ __forceinline__ void cp_async16(void* smem_dst, const void* gsrc) {
  const unsigned d = (unsigned)__cvta_generic_to_shared(smem_dst);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(d), "l"(__cvta_generic_to_global(gsrc)) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_all;\n" ::: "memory"); }
__device__ __forceinline__ void red_release_add(unsigned* p, unsigned v) {
  asm volatile("red.release.gpu.global.add.u32 [%0], %1;\n" ::"l"(__cvta_generic_to_global(p)), "r"(v) : "memory");
}
__device__ __forceinline__ unsigned ld_acquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(v) : "l"(__cvta_generic_to_global(p)) : "memory");
  return v;
}
__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;\n" : "=l"(t));
  return t;
}

// cp.async of step rows [base, base + nb) of this rank's packed slice into Bb[kRows][XB].
template <int CL>
__device__ __forceinline__ void stage_bytes(const Args& a, uint8_t* Bb, int base, int nb, int rank) {
  using C = Slice<CL>;
  constexpr int kChunks = C::XB / 16;
  for (int e = threadIdx.x; e < nb * kChunks; e += kThreads) {
    const int b = e / kChunks, q = e % kChunks;
    const int s = __ldg(a.order + base + b);
    cp_async16(Bb + b * C::XB + 16 * q, a.xb + ((size_t)s * CL + rank) * C::XB + 16 * q);
  }
  cp_async_commit();
}

// Bb bytes -> Xs[kRows][KP] floats; rows >= nb and inputs >= KS are 0, except the ones column
// (input KS) of rank 0's valid rows, which carries b1.
template <int CL>
__device__ __forceinline__ void convert_bytes(float* Xs, const uint8_t* Bb, int nb, int rank) {
  using C = Slice<CL>;
  for (int e = threadIdx.x; e < kRows * C::kKq; e += kThreads) {
    const int b = e / C::kKq, q = e % C::kKq, k = 4 * q;
    float v[4] = {0.f, 0.f, 0.f, 0.f};
    if (b < nb) {
      const unsigned w = *reinterpret_cast<const unsigned*>(Bb + b * C::XB + k);
#pragma unroll
      for (int i = 0; i < 4; ++i)
        v[i] = k + i < C::KS ? pixel((w >> (8 * i)) & 0xffu) : (k + i == C::KS && rank == 0 ? 1.f : 0.f);
    }
    *reinterpret_cast<float4*>(Xs + b * C::KP + k) = make_float4(v[0], v[1], v[2], v[3]);
  }
}

template <int CL, int U>
__global__ void __launch_bounds__(kThreads, 1) k_stationary_epoch(Args a) {
  using C = Cfg<CL, U>;
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
  float* dHf = sm + C::odHf;                                    // [kRows][U] dH, all rows
  float* Scr = sm + C::oScr;                                    // [NT][20] G combine (GS = 2)
  float* Hs = sm + C::oHs;                                      // [RPB][U] H, own rows
  float* dZs = sm + C::odZs;                                    // [RPB][16] dZ, own rows
  float* lossS = sm + C::oLoss;                                 // [RPB] row losses
  float* W2l = sm + C::oW2l;                                    // [U+1][O] W2 rows (+ b2 row)
  float* W2red = sm + C::oW2red;                                // [CL][kOwn+1][O] owner's partials
  float* V2 = sm + C::oV2;                                      // [kOwn+1][O] owned W2 (+ b2) velocity
  float* Lred = sm + C::oLred;                                  // [CL] loss partials (rank 0)

  const int j0 = cid * U, k0 = rank * KS;  // first unit column, first input row
  float* W1 = a.params;
  float* b1 = W1 + kIn * kHidden;
  float* W2 = b1 + kHidden;
  float* b2 = W2 + kHidden * O;
  float* vW1 = a.velocity;
  float* vb1 = vW1 + kIn * kHidden;
  float* vW2 = vb1 + kHidden;
  float* vb2 = vW2 + kHidden * O;
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
  const int steps = (a.n + a.batch - 1) / a.batch;
  if (steps > 0) {
    const int nb0 = min(a.batch, a.n);
    stage_bytes<CL>(a, Bb, 0, nb0, rank);
    cp_async_wait_all();
    __syncthreads();
    convert_bytes<CL>(Xs0, Bb, nb0, rank);
  }
  cluster.sync();  // every block of the cluster runs (DSMEM rule); init and step 0's inputs done

  unsigned* my_counter = a.counters + 32 * rank;
  // F1 mapping: batch row f_b (consecutive across a warp), K half f_s (warp-uniform).
  const int f_b = tid & (kRows - 1), f_s = tid >> 7;

  for (int t = 0; t < steps; ++t) {
    const int base = t * a.batch, nb = min(a.batch, a.n - base), par = t & 1;
    const bool has_next = t + 1 < steps;
    const int nb_next = has_next ? min(a.batch, a.n - base - a.batch) : 0;
    const float* Xs = Xs0 + (C::kXBuf == 2 ? par : 0) * C::kXsF;
    if (has_next) stage_bytes<CL>(a, Bb, base + a.batch, nb_next, rank);  // lands during F1..S
    int ys[C::kPasses];  // labels of the rows this thread's S passes handle
#pragma unroll
    for (int p = 0; p < C::kPasses; ++p) {
      const int b = rank * RPB + (tid >> 4) + 16 * p;
      ys[p] = b < nb ? __ldg(a.labels + __ldg(a.order + base + b)) : 0;
    }

    // ---- F1: partial pre-activations of all rows from this block's K slice ----
    {
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
      const int slot = 2 * rank + f_s;  // the reducing rank is f_b / RPB
      float* dst = cluster.map_shared_rank(Red, (unsigned)(f_b / RPB)) + (slot * RPB + f_b % RPB) * U;
#pragma unroll
      for (int q = 0; q < C::kUq; ++q)
        *reinterpret_cast<float4*>(dst + 4 * q) = make_float4(acc[4 * q], acc[4 * q + 1], acc[4 * q + 2], acc[4 * q + 3]);
    }
    cluster.sync();  // A

    // ---- F2: own rows' H, partial logits to the global slot, release ----
    for (int e = tid; e < RPB * U; e += kThreads) {
      const int row = e / U, u = e % U;
      float s = 0.f;
#pragma unroll
      for (int q = 0; q < C::kRedSlots; ++q) s += Red[(q * RPB + row) * U + u];
      Hs[e] = rank * RPB + row < nb ? fmaxf(s, 0.f) : 0.f;
    }
    __syncthreads();
    for (int e = tid; e < RPB * O; e += kThreads) {
      const int row = e / O, o = e % O, b = rank * RPB + row;
      if (b < nb) {
        float z = W2l[U * O + o];  // b2 in cluster 0, else 0
#pragma unroll
        for (int u = 0; u < U; ++u) z = fmaf(Hs[row * U + u], W2l[u * O + o], z);
        a.slots[(((size_t)par * C::kClusters + cid) * kRows + b) * O + o] = z;
      }
    }
    __syncthreads();
    if (tid == 0) {
      __threadfence();
      red_release_add(my_counter, 1u);
    }
    if constexpr (C::kXBuf == 2) {
      if (has_next) {  // the next step's inputs become floats while the other clusters catch up
        cp_async_wait_all();
        __syncthreads();
        convert_bytes<CL>(Xs0 + (par ^ 1) * C::kXsF, Bb, nb_next, rank);
      }
    }

    // ---- WAIT: every cluster's slot for this rank's rows ----
    if (tid == 0) {
      const unsigned target = a.arrivals_base + (unsigned)(C::kClusters * (t + 1));
      const unsigned long long t0 = global_ns();
      unsigned spins = 0;
      while ((int)(ld_acquire(my_counter) - target) < 0) {
        if ((++spins & 1023u) == 0 && global_ns() - t0 > kWaitTimeoutNs) {
          atomicExch(a.error_flag, 1);
          __trap();
        }
      }
      __threadfence();
    }
    __syncthreads();

    // ---- S: logits, softmax, loss, dZ of own rows (16 lanes a row) ----
#pragma unroll
    for (int p = 0; p < C::kPasses; ++p) {
      const int row = (tid >> 4) + 16 * p, o = tid & 15, b = rank * RPB + row;
      const bool valid = b < nb, lane_o = o < O;
      float z = 0.f;
      if (valid && lane_o) {
        const float* src = a.slots + ((size_t)par * C::kClusters * kRows + b) * O + o;
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
      const float zy = __shfl_sync(0xffffffffu, z, (tid & 16) + y);
      const float loss = logf(sum) - (zy - m);
      const float d = (ex / sum - (o == y ? 1.f : 0.f)) / (float)nb;
      if (lane_o) dZs[row * kOutPad + o] = valid ? d : 0.f;
      if (o == 0) lossS[row] = valid ? loss : 0.f;
    }
    __syncthreads();

    // ---- D: dH of own rows to every block; dW2, db2 and loss partials to their owners ----
    for (int e = tid; e < RPB * U; e += kThreads) {
      const int row = e / U, u = e % U;
      float acc = 0.f;
#pragma unroll
      for (int o = 0; o < O; ++o) acc = fmaf(dZs[row * kOutPad + o], W2l[u * O + o], acc);
      const float dh = Hs[e] > 0.f ? acc : 0.f;
#pragma unroll
      for (int q = 0; q < CL; ++q) cluster.map_shared_rank(dHf, (unsigned)q)[(rank * RPB + row) * U + u] = dh;
    }
    if (tid < C::kW2Items) {
      const int u = tid / O, o = tid % O;
      float g = 0.f;
#pragma unroll 4
      for (int row = 0; row < RPB; ++row) g = fmaf(u < U ? Hs[row * U + u] : 1.f, dZs[row * kOutPad + o], g);
      const int owner = u < U ? u % CL : 0, which = u < U ? u / CL : C::kOwn;
      cluster.map_shared_rank(W2red, (unsigned)owner)[(rank * NO + which) * O + o] = g;
    } else if (tid == C::kW2Items) {
      float l = 0.f;
      for (int row = 0; row < RPB; ++row) l += lossS[row];
      cluster.map_shared_rank(Lred, 0u)[rank] = l;
    }
    cluster.sync();  // B

    // ---- G: dW1 slice (and db1) by 4×4 tiles, batch in GS parts; then warp 7: W2, b2, loss ----
    float acc[4][4];
    const int g_h = tid / C::NT, g_tile = tid % C::NT, g_kq = g_tile / C::kUq, g_uq = g_tile % C::kUq;
    if (tid < C::GS * C::NT) {
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = 0.f;
      const float* xp = Xs + 4 * g_kq;
      const float* dp = dHf + 4 * g_uq;
      constexpr int kPart = kRows / C::GS;
      const int rb = kPart * g_h;
#pragma unroll 4
      for (int b = rb; b < rb + kPart; ++b) {
        const float4 xv = *reinterpret_cast<const float4*>(xp + b * KP);
        const float4 dv = *reinterpret_cast<const float4*>(dp + b * U);
        const float xr[4] = {xv.x, xv.y, xv.z, xv.w}, dr[4] = {dv.x, dv.y, dv.z, dv.w};
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
          for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(xr[i], dr[j], acc[i][j]);
      }
      if (C::GS == 2 && g_h == 1)
#pragma unroll
        for (int i = 0; i < 4; ++i)
          *reinterpret_cast<float4*>(Scr + g_tile * C::kScrStride + 4 * i) =
              make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
    }
    if (tid >= kThreads - 32) {
      for (int it = tid - (kThreads - 32); it < C::kW2Upd; it += 32) {
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
      }
    }
    __syncthreads();
    if (tid < C::NT) {  // sum the parts (fixed order), then the update in place
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        float g[4] = {acc[i][0], acc[i][1], acc[i][2], acc[i][3]};
        if constexpr (C::GS == 2) {
          const float4 o4 = *reinterpret_cast<const float4*>(Scr + g_tile * C::kScrStride + 4 * i);
          g[0] += o4.x; g[1] += o4.y; g[2] += o4.z; g[3] += o4.w;
        }
        float* wp = Ws + (4 * g_kq + i) * U + 4 * g_uq;
        float* vp = Vs + (4 * g_kq + i) * U + 4 * g_uq;
        float4 w4 = *reinterpret_cast<float4*>(wp), v4 = *reinterpret_cast<float4*>(vp);
        v4.x = a.mu * v4.x - a.lr * g[0]; v4.y = a.mu * v4.y - a.lr * g[1];
        v4.z = a.mu * v4.z - a.lr * g[2]; v4.w = a.mu * v4.w - a.lr * g[3];
        w4.x += v4.x; w4.y += v4.y; w4.z += v4.z; w4.w += v4.w;
        *reinterpret_cast<float4*>(wp) = w4;
        *reinterpret_cast<float4*>(vp) = v4;
      }
    }
    if constexpr (C::kXBuf == 1) {
      if (has_next) {  // one input buffer: G is done reading it
        cp_async_wait_all();
        __syncthreads();
        convert_bytes<CL>(Xs0, Bb, nb_next, rank);
      }
    }
    __syncthreads();
  }
  cluster.sync();  // no block exits while another may still push into its shared memory

  int pad_seen = 0, pad_bad = 0;  // pad entries of this block, and those not bitwise 0
  for (int e = tid; e < KP * U; e += kThreads) {
    const int k = e / U, u = e % U, j = j0 + u;
    if (j >= kHidden) {
      ++pad_seen;
      pad_bad += (__float_as_uint(Ws[e]) | __float_as_uint(Vs[e])) != 0u;
    } else if (k < KS) {
      W1[(size_t)(k0 + k) * kHidden + j] = Ws[e];
      vW1[(size_t)(k0 + k) * kHidden + j] = Vs[e];
    } else if (k == KS && rank == 0) {
      b1[j] = Ws[e];
      vb1[j] = Vs[e];
    }
  }
  for (int e = tid; e < NO * O; e += kThreads) {
    const int i = e / O, o = e % O, u = rank + CL * i;
    if (i < C::kOwn) {
      if (u >= U) continue;
      if (j0 + u >= kHidden) {
        ++pad_seen;
        pad_bad += (__float_as_uint(W2l[u * O + o]) | __float_as_uint(V2[e])) != 0u;
      } else {
        W2[(j0 + u) * O + o] = W2l[u * O + o];
        vW2[(j0 + u) * O + o] = V2[e];
      }
    } else if (loss_owner) {
      b2[o] = W2l[U * O + o];
      vb2[o] = V2[e];
    }
  }
  if (a.pad_check && pad_seen) {
    atomicAdd(a.pad_check, pad_seen);
    atomicAdd(a.pad_check + 1, pad_bad);
  }
}

// Packs X_all (float32 p/255) into [n][CL][XB] bytes; flags any value that is not exactly
// pixel(p) for a byte p.
template <int CL>
__global__ void k_stationary_pack(const float* X, int n, uint8_t* xb, int* bad) {
  using C = Slice<CL>;
  const size_t total = (size_t)n * CL * C::XB;
  for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += (size_t)gridDim.x * blockDim.x) {
    const int q = (int)(e % C::XB), r = (int)((e / C::XB) % CL);
    const size_t s = e / ((size_t)C::XB * CL);
    unsigned p = 0;
    if (q < C::KS) {
      const float x = X[s * kIn + (size_t)r * C::KS + q];
      const int pi = __float2int_rn(x * 255.0f);
      p = (unsigned)min(max(pi, 0), 255);
      if (__float_as_uint(pixel(p)) != __float_as_uint(x)) atomicExch(bad, 1);
    }
    xb[e] = (uint8_t)p;
  }
}
}  // namespace wstat

}  // namespace mlp
