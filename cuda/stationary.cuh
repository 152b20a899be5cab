// cuda/stationary.cuh — a weight-stationary epoch: ONE launch of 128 blocks (one per SM) in
// thread-block clusters trains a whole epoch of the recipe (784-256-10, batch <= 128), with each
// block's slice of the parameters and their velocity held in shared memory for the whole epoch.
// Standalone dev experiment (dev/stationary/); not yet a KernelPath. The host side (plan,
// prepare, epoch launch) is cuda/stationary_host.cuh.
//
// Ownership, for clusters of CL blocks (CL = 8: 16 clusters; fallback CL = 4: 32 clusters):
//   cluster c  hidden units j in [U·c, U·c + U),  U = 256 / (128 / CL) = 2·CL
//   rank r     input rows k in [KS·r, KS·r + KS) of W1 for those units (KS = 784 / CL), and
//              their velocity; rank 0 also b1[units] (stored as row KS of its slice, so the GEMMs
//              treat b1 as the weight of an input that is 1 on every valid row);
//              W2 rows of units 2r, 2r+1 of the cluster and their velocity (owner; every block
//              of the cluster keeps a copy of the cluster's W2 rows, pushed by the owners);
//              batch rows [RPB·r, RPB·r + RPB) for every row-wise reduction (RPB = 128 / CL);
//   cluster 0, rank 0: b2 (a "unit" whose activation is 1) and the step loss.
//
// One step (t), every dependency named:
//   F1  partial pre-activations of all rows from the block's K slice: P_r = X[:, slice]·W1[slice]
//       (+ b1 in rank 0), pushed into the reducing block's shared memory (DSMEM stores)
//   cluster.sync A
//   F2  own rows: A = Σ_r P_r (rank order), H = ReLU(A); partial logits of the cluster's units
//       (+ b2 in cluster 0) -> global slot [t%2][c][row]; release-add on counter[rank]
//       (while waiting: the next step's inputs, already in shared memory as bytes, become floats)
//   WAIT  acquire counter[rank] >= base + clusters·(t+1): every cluster's rank-r block has
//       written its slot for the rows this block reduces (the one cross-SM dependency)
//   S   own rows: z = Σ_c slot[c] (cluster order), softmax, loss, dZ = (p − onehot)/nb
//   D   own rows: dH = dZ·W2ᵀ ⊙ (H > 0) pushed to every block of the cluster; partial dW2, db2
//       and loss over own rows pushed to their owners
//   cluster.sync B
//   G   dW1 slice = X[:, slice]ᵀ·dH (with db1 in rank 0's row KS), the update in place; warp 7
//       meanwhile: owners sum dW2 (db2, loss) partials in rank order, update, push W2 copies
// The next step's inputs are staged as bytes by cp.async issued at the top of each step.
// Every sum has a fixed order, so reruns are bitwise identical; no float atomics.
//
// DSMEM buffers and the syncs that separate their writers from their readers (t = step):
//   Red   written F1(t+1) after B(t) | read F2(t) between A(t) and B(t)
//   dHf   written D(t) before B(t)   | read G(t) after B(t), before the reader's A(t+1)
//   W2red written D(t) before B(t)   | read by the owner in G(t), before its A(t+1)
//   W2l   written G(t) after B(t)    | read F2/D of t (before B(t)) and of t+1 (after A(t+1))
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
constexpr int kBlocks = 128;                         // blocks in the grid, one per SM
constexpr int kThreads = 256;                        // threads per block
constexpr int kOutPad = 16;                          // dZ row stride in shared memory
constexpr int kRedSlots = 8;                         // partials per pre-activation (F1 -> F2)
constexpr float kInv255 = 1.0f / 255.0f;
constexpr unsigned long long kWaitTimeoutNs = 4000000000ull;  // a grid wait longer than 4 s traps

constexpr int r4(int x) { return (x + 3) / 4 * 4; }  // rounded up to a multiple of 4

// Everything derived from the cluster size CL.
template <int CL>
struct Cfg {
  static constexpr int kClusters = kBlocks / CL;
  static constexpr int U = kHidden / kClusters;    // hidden units per cluster
  static constexpr int KS = kIn / CL;              // input rows per block
  static constexpr int kKp0 = (KS + 1 + 3) / 4 * 4;
  // Row stride of the staged inputs (floats): KS inputs, the ones column (b1), zero padding; an
  // odd multiple of 4 so the 8 rows a quarter-warp reads in F1 fall in 8 different bank groups.
  static constexpr int KP = kKp0 % 8 == 0 ? kKp0 + 4 : kKp0;
  static constexpr int XB = (KP + 15) / 16 * 16;  // bytes per (sample, rank) in the packed X
  static constexpr int RPB = kRows / CL;          // batch rows each block reduces
  static constexpr int kUq = U / 4;               // unit quads
  static constexpr int kKSplit = kThreads / (64 * kUq);  // F1: K split across thread groups
  static constexpr int kKq = KP / 4;              // input quads
  static constexpr int NT = kKq * kUq;            // G: 4×4 tiles of the W1 slice
  static constexpr int kScrStride = 20;           // G: combine scratch row stride (floats)
  static constexpr int kPasses = RPB / 16;        // S: 16 rows a pass
  static constexpr int kW2Items = (U + 1) * kOut; // D: partial dW2 (U units) and db2 outputs
  static_assert(kIn % CL == 0 && kHidden % kClusters == 0 && U % 4 == 0, "cluster shape");
  static_assert(RPB * U == kThreads, "F2/D map one thread to each (own row, unit)");
  static_assert(CL * kKSplit == kRedSlots && kKSplit >= 1, "F1 partial slots");
  static_assert(2 * NT <= kThreads - 32, "G leaves warp 7 free for the W2 update");
  static_assert(kW2Items + 1 <= kThreads && RPB % 16 == 0 && XB >= KP, "mappings");
  // Shared memory (floats; every region a multiple of 4 floats, so 16-byte aligned).
  static constexpr int kXsF = kRows * KP;
  static constexpr int kRest = kRows * XB / 4      // Bb: next step's inputs as bytes
                               + 2 * KP * U        // Ws, Vs
                               + kRedSlots * RPB * U  // Red
                               + kRows * U         // dHf
                               + NT * kScrStride   // Scr
                               + RPB * U + RPB * kOutPad + r4(RPB)  // Hs, dZs, lossS
                               + r4((U + 1) * kOut) + r4(CL * 3 * kOut) + r4(3 * kOut) + r4(CL);
  // Two input buffers (the next step's converted while waiting) when they fit, else one.
  static constexpr int kXBuf = (2 * kXsF + kRest) * 4 <= 227 * 1024 ? 2 : 1;
  static constexpr int oXs = 0;
  static constexpr int oBb = oXs + kXBuf * kXsF;
  static constexpr int oWs = oBb + kRows * XB / 4;
  static constexpr int oVs = oWs + KP * U;
  static constexpr int oRed = oVs + KP * U;
  static constexpr int odHf = oRed + kRedSlots * RPB * U;
  static constexpr int oScr = odHf + kRows * U;
  static constexpr int oHs = oScr + NT * kScrStride;
  static constexpr int odZs = oHs + RPB * U;
  static constexpr int oLoss = odZs + RPB * kOutPad;
  static constexpr int oW2l = oLoss + r4(RPB);
  static constexpr int oW2red = oW2l + r4((U + 1) * kOut);
  static constexpr int oV2 = oW2red + r4(CL * 3 * kOut);
  static constexpr int oLred = oV2 + r4(3 * kOut);
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
  using C = Cfg<CL>;
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
  using C = Cfg<CL>;
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

template <int CL>
__global__ void __launch_bounds__(kThreads, 1) k_stationary_epoch(Args a) {
  using C = Cfg<CL>;
  constexpr int U = C::U, KS = C::KS, KP = C::KP, RPB = C::RPB, O = kOut;
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
  float* Red = sm + C::oRed;                                    // [8][RPB][U] F1 partials
  float* dHf = sm + C::odHf;                                    // [kRows][U] dH, all rows
  float* Scr = sm + C::oScr;                                    // [NT][20] G combine
  float* Hs = sm + C::oHs;                                      // [RPB][U] H, own rows
  float* dZs = sm + C::odZs;                                    // [RPB][16] dZ, own rows
  float* lossS = sm + C::oLoss;                                 // [RPB] row losses
  float* W2l = sm + C::oW2l;                                    // [U+1][O] W2 rows (+ b2 row)
  float* W2red = sm + C::oW2red;                                // [CL][3][O] owner's partials
  float* V2 = sm + C::oV2;                                      // [3][O] owned W2 (+ b2) velocity
  float* Lred = sm + C::oLred;                                  // [CL] loss partials (rank 0)

  const int j0 = cid * U, k0 = rank * KS;  // first hidden unit, first input row
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
    const int k = e / U, u = e % U;
    float w = 0.f, v = 0.f;
    if (k < KS) {
      w = W1[(size_t)(k0 + k) * kHidden + j0 + u];
      v = vW1[(size_t)(k0 + k) * kHidden + j0 + u];
    } else if (k == KS && rank == 0) {
      w = b1[j0 + u];
      v = vb1[j0 + u];
    }
    Ws[e] = w;
    Vs[e] = v;
  }
  for (int e = tid; e < (U + 1) * O; e += kThreads) {
    const int j = e / O, o = e % O;
    W2l[e] = j < U ? W2[(j0 + j) * O + o] : (cid == 0 ? b2[o] : 0.f);
  }
  for (int e = tid; e < 3 * O; e += kThreads) {
    const int uu = e / O, o = e % O;
    V2[e] = uu < 2 ? vW2[(j0 + 2 * rank + uu) * O + o] : (loss_owner ? vb2[o] : 0.f);
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
  // F1 mapping: K-split group s, rows bp and bp + 64, units 4uq..4uq+3.
  const int f_s = tid / (64 * C::kUq), f_tile = tid % (64 * C::kUq);
  const int f_uq = f_tile % C::kUq, f_bp = f_tile / C::kUq;
  // F2/D mapping: own row row2 (batch row b2g), unit u2.
  const int row2 = tid / U, u2 = tid % U, b2g = rank * RPB + row2;

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
      float acc0[4] = {0.f, 0.f, 0.f, 0.f}, acc1[4] = {0.f, 0.f, 0.f, 0.f};
      const float* xa = Xs + f_bp * KP;
      const float* xc = Xs + (f_bp + 64) * KP;
      const float* wcol = Ws + 4 * f_uq;
#pragma unroll 5
      for (int c = f_s; c < C::kKq; c += C::kKSplit) {
        const float4 x0 = *reinterpret_cast<const float4*>(xa + 4 * c);
        const float4 x1 = *reinterpret_cast<const float4*>(xc + 4 * c);
        const float xv0[4] = {x0.x, x0.y, x0.z, x0.w}, xv1[4] = {x1.x, x1.y, x1.z, x1.w};
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const float4 w = *reinterpret_cast<const float4*>(wcol + (4 * c + i) * U);
          acc0[0] = fmaf(xv0[i], w.x, acc0[0]); acc0[1] = fmaf(xv0[i], w.y, acc0[1]);
          acc0[2] = fmaf(xv0[i], w.z, acc0[2]); acc0[3] = fmaf(xv0[i], w.w, acc0[3]);
          acc1[0] = fmaf(xv1[i], w.x, acc1[0]); acc1[1] = fmaf(xv1[i], w.y, acc1[1]);
          acc1[2] = fmaf(xv1[i], w.z, acc1[2]); acc1[3] = fmaf(xv1[i], w.w, acc1[3]);
        }
      }
      const int slot = rank * C::kKSplit + f_s;
      const int bA = f_bp, bB = f_bp + 64;  // their reducing ranks: b / RPB
      *reinterpret_cast<float4*>(cluster.map_shared_rank(Red, (unsigned)(bA / RPB)) + (slot * RPB + bA % RPB) * U +
                                 4 * f_uq) = make_float4(acc0[0], acc0[1], acc0[2], acc0[3]);
      *reinterpret_cast<float4*>(cluster.map_shared_rank(Red, (unsigned)(bB / RPB)) + (slot * RPB + bB % RPB) * U +
                                 4 * f_uq) = make_float4(acc1[0], acc1[1], acc1[2], acc1[3]);
    }
    cluster.sync();  // A

    // ---- F2: own rows' H, partial logits to the global slot, release ----
    float h;
    {
      float s = 0.f;
#pragma unroll
      for (int q = 0; q < kRedSlots; ++q) s += Red[(q * RPB + row2) * U + u2];
      h = b2g < nb ? fmaxf(s, 0.f) : 0.f;
      Hs[row2 * U + u2] = h;
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
    {
      float acc = 0.f;
#pragma unroll
      for (int o = 0; o < O; ++o) acc = fmaf(dZs[row2 * kOutPad + o], W2l[u2 * O + o], acc);
      const float dh = h > 0.f ? acc : 0.f;
#pragma unroll
      for (int q = 0; q < CL; ++q) cluster.map_shared_rank(dHf, (unsigned)q)[b2g * U + u2] = dh;
    }
    if (tid < C::kW2Items) {
      const int u = tid / O, o = tid % O;
      float g = 0.f;
#pragma unroll 4
      for (int row = 0; row < RPB; ++row) g = fmaf(u < U ? Hs[row * U + u] : 1.f, dZs[row * kOutPad + o], g);
      const int owner = u < U ? u / 2 : 0, which = u < U ? u % 2 : 2;
      cluster.map_shared_rank(W2red, (unsigned)owner)[(rank * 3 + which) * O + o] = g;
    } else if (tid == C::kW2Items) {
      float l = 0.f;
      for (int row = 0; row < RPB; ++row) l += lossS[row];
      cluster.map_shared_rank(Lred, 0u)[rank] = l;
    }
    cluster.sync();  // B

    // ---- G: dW1 slice (and db1) by 4×4 tiles, batch split in halves; warp 7: W2, b2, loss ----
    float acc[4][4];
    const int g_h = tid / C::NT, g_tile = tid % C::NT, g_kq = g_tile / C::kUq, g_uq = g_tile % C::kUq;
    if (tid < 2 * C::NT) {
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = 0.f;
      const float* xp = Xs + 4 * g_kq;
      const float* dp = dHf + 4 * g_uq;
      const int rb = 64 * g_h;
#pragma unroll 4
      for (int b = rb; b < rb + 64; ++b) {
        const float4 xv = *reinterpret_cast<const float4*>(xp + b * KP);
        const float4 dv = *reinterpret_cast<const float4*>(dp + b * U);
        const float xr[4] = {xv.x, xv.y, xv.z, xv.w}, dr[4] = {dv.x, dv.y, dv.z, dv.w};
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
          for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(xr[i], dr[j], acc[i][j]);
      }
      if (g_h == 1)
#pragma unroll
        for (int i = 0; i < 4; ++i)
          *reinterpret_cast<float4*>(Scr + g_tile * C::kScrStride + 4 * i) =
              make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
    } else if (tid >= kThreads - 32) {
      const int lane = tid - (kThreads - 32);
      if (lane < 2 * O) {  // the two owned W2 rows
        const int uu = lane / O, o = lane % O, j = 2 * rank + uu;
        float g = 0.f;
#pragma unroll
        for (int q = 0; q < CL; ++q) g += W2red[(q * 3 + uu) * O + o];
        const float v = a.mu * V2[uu * O + o] - a.lr * g;
        const float w = W2l[j * O + o] + v;
        V2[uu * O + o] = v;
#pragma unroll
        for (int q = 0; q < CL; ++q) cluster.map_shared_rank(W2l, (unsigned)q)[j * O + o] = w;
      } else if (lane < 3 * O && loss_owner) {  // b2
        const int o = lane - 2 * O;
        float g = 0.f;
#pragma unroll
        for (int q = 0; q < CL; ++q) g += W2red[(q * 3 + 2) * O + o];
        const float v = a.mu * V2[2 * O + o] - a.lr * g;
        const float w = W2l[U * O + o] + v;
        V2[2 * O + o] = v;
#pragma unroll
        for (int q = 0; q < CL; ++q) cluster.map_shared_rank(W2l, (unsigned)q)[U * O + o] = w;
      } else if (lane == 3 * O && loss_owner) {
        float l = 0.f;
#pragma unroll
        for (int q = 0; q < CL; ++q) l += Lred[q];
        a.step_loss[t] = l / (float)nb;
      }
    }
    __syncthreads();
    if (tid < C::NT) {  // sum the halves (fixed order), then the update in place
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const float4 o4 = *reinterpret_cast<const float4*>(Scr + g_tile * C::kScrStride + 4 * i);
        const float g[4] = {acc[i][0] + o4.x, acc[i][1] + o4.y, acc[i][2] + o4.z, acc[i][3] + o4.w};
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

  for (int e = tid; e < KP * U; e += kThreads) {
    const int k = e / U, u = e % U;
    if (k < KS) {
      W1[(size_t)(k0 + k) * kHidden + j0 + u] = Ws[e];
      vW1[(size_t)(k0 + k) * kHidden + j0 + u] = Vs[e];
    } else if (k == KS && rank == 0) {
      b1[j0 + u] = Ws[e];
      vb1[j0 + u] = Vs[e];
    }
  }
  for (int e = tid; e < 3 * O; e += kThreads) {
    const int uu = e / O, o = e % O;
    if (uu < 2) {
      const int j = 2 * rank + uu;
      W2[(j0 + j) * O + o] = W2l[j * O + o];
      vW2[(j0 + j) * O + o] = V2[e];
    } else if (loss_owner) {
      b2[o] = W2l[U * O + o];
      vb2[o] = V2[e];
    }
  }
}

// Packs X_all (float32 p/255) into [n][CL][XB] bytes; flags any value that is not exactly
// pixel(p) for a byte p.
template <int CL>
__global__ void k_stationary_pack(const float* X, int n, uint8_t* xb, int* bad) {
  using C = Cfg<CL>;
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
