// cuda/kernels/tiled.cuh — the tiled path's kernels: float32 accumulation throughout, as PyTorch's
// FP32 GEMMs do, for shapes far from the recipe's (cuda/paths/tiled_path.cu runs them).
//   k_tiled_gemm<Shape, A, Epi, VEC>  C = op(A)·B, register-tiled SIMT: float4 global loads, a
//                                     double-buffered shared stage, an optional row gather of A
//                                     (the batch read straight through the epoch order), split-K
//                                     with a deterministic last-block reduction, and the epilogue
//                                     (bias + ReLU for H; the momentum update for W1, no gradient
//                                     buffer)
//   k_tiled_logits_loss               Z = H·W2 + b2, softmax cross-entropy: dZ and the batch's loss
//   k_tiled_head_backward             dW2, db2, dH = (dZ·W2ᵀ) ⊙ (H > 0), db1 and the W2, b2, b1
//                                     updates, reading W2 before it is updated; dH in float32, or
//                                     in bfloat16 for the GEMM engine's dW1 (DH_T)
//   k_gather_rows_bf16, k_to_bf16     the engine's bfloat16 operands (tiled-bf16 on sm_90): the
//                                     epoch's batches in order, and W1 at the epoch's start
// Every matrix is row-major (model.h's layout). Shapes: B batch rows of the step, I inputs, Hd
// hidden units, O classes.
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <type_traits>

#include "kernels/tiled_plan.h"

namespace mlp::tiled {

template <int SHAPE>
struct ShapeOf {
  static constexpr TileShape t = kTileShapes[SHAPE];
  static constexpr int BM = t.bm, BN = t.bn, BK = t.bk, TM = t.tm, TN = t.tn;
  static constexpr int TX = BN / TN, TY = BM / TM, THREADS = TX * TY;
  static constexpr int QM = TM / 4, QN = TN / 4;             // quads of 4 per thread
  static_assert(TM % 4 == 0 && TN % 4 == 0 && BK % 4 == 0, "quads of four");
};

// Four consecutive floats from p (float4 when VEC: p 16-byte aligned), the ones past `valid` as 0.
template <bool VEC>
__device__ __forceinline__ float4 load4(const float* p, int valid) {
  if (VEC) return valid >= 4 ? __ldg(reinterpret_cast<const float4*>(p)) : make_float4(0.f, 0.f, 0.f, 0.f);
  float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
  if (valid > 0) v.x = __ldg(p);
  if (valid > 1) v.y = __ldg(p + 1);
  if (valid > 2) v.z = __ldg(p + 2);
  if (valid > 3) v.w = __ldg(p + 3);
  return v;
}

// One shared-memory stage of a block's operands: the global loads of the stage after next held in
// registers (ra, rb) while the current one is multiplied, then written k-major into the other
// buffer: As[k][m] (row pitch AP) and Bs[k][n] (pitch BP). A is read through the row gather
// (a.a_rows) in either layout; everything past M, N or the split's k_end reads as 0.
// VEC: every row length and leading dimension a multiple of 4 and every base 16-byte aligned
// (tiled_path.cu checks), so a vector is wholly in range or wholly out.
template <int BM, int BN, int BK, int THREADS, int AP, int BP, ALayout AL, bool VEC>
struct StageLoader {
  static constexpr int VA = BM * BK / 4 / THREADS;  // A's 4-float vectors per thread per stage
  static constexpr int VB = BN * BK / 4 / THREADS;
  static_assert(VA * 4 * THREADS == BM * BK && VB * 4 * THREADS == BN * BK, "stage loads divide evenly");
  static_assert(AP % 4 == 0 && BP % 4 == 0, "float4 rows of the stage stay 16-byte aligned");
  float4 ra[VA], rb[VB];

  __device__ __forceinline__ void load(const GemmArgs& a, int tid, int m0, int n0, int k0, int k_end) {
#pragma unroll
    for (int l = 0; l < VA; ++l) {
      const int v = tid + l * THREADS;
      if (AL == ALayout::RowMajor) {  // vector (m, k..k+3)
        const int m = v / (BK / 4), k = k0 + (v % (BK / 4)) * 4, gm = m0 + m;
        const int valid = gm < a.M ? k_end - k : 0;
        const float* row = a.A + (size_t)(a.a_rows ? a.a_rows[gm < a.M ? gm : 0] : gm) * a.lda;
        ra[l] = load4<VEC>(row + k, valid);
      } else {                        // vector (k, m..m+3)
        const int kr = v / (BM / 4), m = (v % (BM / 4)) * 4, gk = k0 + kr, gm = m0 + m;
        const int valid = gk < k_end ? a.M - gm : 0;
        const float* row = a.A + (size_t)(a.a_rows ? a.a_rows[gk < k_end ? gk : 0] : gk) * a.lda;
        ra[l] = load4<VEC>(row + gm, valid);
      }
    }
#pragma unroll
    for (int l = 0; l < VB; ++l) {  // vector (k, n..n+3)
      const int v = tid + l * THREADS;
      const int kr = v / (BN / 4), n = (v % (BN / 4)) * 4, gk = k0 + kr, gn = n0 + n;
      const int valid = gk < k_end ? a.N - gn : 0;
      rb[l] = load4<VEC>(a.B + (size_t)(gk < k_end ? gk : 0) * a.ldb + gn, valid);
    }
  }
  // As, Bs: this stage's buffers, BK rows of AP and BP floats.
  __device__ __forceinline__ void stage(float* As, float* Bs, int tid) const {
#pragma unroll
    for (int l = 0; l < VA; ++l) {
      const int v = tid + l * THREADS;
      if (AL == ALayout::RowMajor) {
        const int m = v / (BK / 4), k = (v % (BK / 4)) * 4;
        As[(k + 0) * AP + m] = ra[l].x;
        As[(k + 1) * AP + m] = ra[l].y;
        As[(k + 2) * AP + m] = ra[l].z;
        As[(k + 3) * AP + m] = ra[l].w;
      } else {
        const int kr = v / (BM / 4), m = (v % (BM / 4)) * 4;
        *reinterpret_cast<float4*>(&As[kr * AP + m]) = ra[l];
      }
    }
#pragma unroll
    for (int l = 0; l < VB; ++l) {
      const int v = tid + l * THREADS;
      const int kr = v / (BN / 4), n = (v % (BN / 4)) * 4;
      *reinterpret_cast<float4*>(&Bs[kr * BP + n]) = rb[l];
    }
  }
};

// The epilogue of W (2 or 4) consecutive outputs v of row gm from column gn (gm < M, gn < N), in
// two halves so that a kernel can issue a chunk's loads together before any of its stores:
// epilogue_load reads what the epilogue needs (BiasRelu: the bias; Momentum: the parameters in C
// and the velocity), epilogue_finish computes and stores (bias + ReLU; the momentum update of the
// parameters in C, v the gradient; or a plain store). A load cannot pass an earlier store to a
// pointer the compiler cannot prove apart from it, so loads and stores interleaved per output
// would wait a memory round trip each (PERFLOG "tiled epilogues in chunks").
// VEC: one float2 or float4 access each (gn a multiple of W; N, ldc multiples of 4), else scalars.
template <int W>
struct EpiIn {
  float p[W];  // Momentum: the parameters (C); BiasRelu: the bias
  float v[W];  // Momentum: the velocity
};

template <bool VEC, int W>
__device__ __forceinline__ void vload(const float* p, int valid, float (&out)[W]) {
  using VecT = typename std::conditional<W == 4, float4, float2>::type;
  if (VEC) {
    const VecT x = *reinterpret_cast<const VecT*>(p);
    out[0] = x.x; out[1] = x.y;
    if constexpr (W == 4) { out[2] = x.z; out[3] = x.w; }
  } else {
#pragma unroll
    for (int q = 0; q < W; ++q) out[q] = q < valid ? p[q] : 0.f;
  }
}
template <bool VEC, int W>
__device__ __forceinline__ void vstore(float* p, int valid, const float (&in)[W]) {
  using VecT = typename std::conditional<W == 4, float4, float2>::type;
  if (VEC) {
    VecT x;
    x.x = in[0]; x.y = in[1];
    if constexpr (W == 4) { x.z = in[2]; x.w = in[3]; }
    *reinterpret_cast<VecT*>(p) = x;
  } else {
#pragma unroll
    for (int q = 0; q < W; ++q)
      if (q < valid) p[q] = in[q];
  }
}

template <Epi EPI, bool VEC, int W>
__device__ __forceinline__ void epilogue_load(const GemmArgs& a, int gm, int gn, EpiIn<W>& in) {
  static_assert(W == 2 || W == 4, "pairs or quads");
  const int valid = min(W, a.N - gn);
  if constexpr (EPI == Epi::Momentum) {
    vload<VEC, W>(a.C + (size_t)gm * a.ldc + gn, valid, in.p);
    vload<VEC, W>(a.vel + (size_t)gm * a.ldc + gn, valid, in.v);
  } else if constexpr (EPI == Epi::BiasRelu) {
#pragma unroll
    for (int q = 0; q < W; ++q) in.p[q] = q < valid ? __ldg(a.bias + gn + q) : 0.f;
  }
}

template <Epi EPI, bool VEC, int W>
__device__ __forceinline__ void epilogue_finish(const GemmArgs& a, int gm, int gn, float (&v)[W], const EpiIn<W>& in) {
  float* c = a.C + (size_t)gm * a.ldc + gn;
  const int valid = min(W, a.N - gn);
  if constexpr (EPI == Epi::Momentum) {
    float pv[W], vv[W];
#pragma unroll
    for (int q = 0; q < W; ++q) {
      vv[q] = a.mu * in.v[q] - a.lr * v[q];  // the formula of k_momentum_flat
      pv[q] = in.p[q] + vv[q];
    }
    vstore<VEC, W>(a.vel + (size_t)gm * a.ldc + gn, valid, vv);
    vstore<VEC, W>(c, valid, pv);
    return;
  }
  if constexpr (EPI == Epi::BiasRelu) {
#pragma unroll
    for (int q = 0; q < W; ++q) v[q] = q < valid ? fmaxf(v[q] + in.p[q], 0.f) : 0.f;
  }
  vstore<VEC, W>(c, valid, v);
}

template <int SHAPE, ALayout AL, Epi EPI, bool VEC>
__global__ void __launch_bounds__(ShapeOf<SHAPE>::THREADS, kTileShapes[SHAPE].res)
k_tiled_gemm(GemmArgs a) {
  using S = ShapeOf<SHAPE>;
  constexpr int BM = S::BM, BN = S::BN, BK = S::BK, TX = S::TX, QM = S::QM, QN = S::QN;
  static_assert(!kTileShapes[SHAPE].mma, "a SIMT shape (the tensor-core ones run k_tiled_mma)");
  __shared__ __align__(16) float As[2][BK][BM];  // k-major: a thread reads quads of m
  __shared__ __align__(16) float Bs[2][BK][BN];
  const int tid = threadIdx.x, tx = tid % TX, ty = tid / TX;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int k_begin = blockIdx.z * a.k_chunk, k_end = min(a.K, k_begin + a.k_chunk);

  StageLoader<BM, BN, BK, S::THREADS, BM, BN, AL, VEC> L;
  float acc[S::TM][S::TN];
#pragma unroll
  for (int i = 0; i < S::TM; ++i)
#pragma unroll
    for (int j = 0; j < S::TN; ++j) acc[i][j] = 0.f;

  const int stages = k_end > k_begin ? (k_end - k_begin + BK - 1) / BK : 0;
  if (stages > 0) {
    L.load(a, tid, m0, n0, k_begin, k_end);
    L.stage(&As[0][0][0], &Bs[0][0][0], tid);
  }
  __syncthreads();
  for (int s = 0; s < stages; ++s) {
    const int buf = s & 1;
    if (s + 1 < stages) L.load(a, tid, m0, n0, k_begin + (s + 1) * BK, k_end);  // in flight while this stage is multiplied
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      float av[S::TM], bv[S::TN];
#pragma unroll
      for (int q = 0; q < QM; ++q) {
        const float4 x = *reinterpret_cast<const float4*>(&As[buf][kk][q * (BM / QM) + ty * 4]);
        av[q * 4 + 0] = x.x; av[q * 4 + 1] = x.y; av[q * 4 + 2] = x.z; av[q * 4 + 3] = x.w;
      }
#pragma unroll
      for (int q = 0; q < QN; ++q) {
        const float4 x = *reinterpret_cast<const float4*>(&Bs[buf][kk][q * (BN / QN) + tx * 4]);
        bv[q * 4 + 0] = x.x; bv[q * 4 + 1] = x.y; bv[q * 4 + 2] = x.z; bv[q * 4 + 3] = x.w;
      }
#pragma unroll
      for (int i = 0; i < S::TM; ++i)
#pragma unroll
        for (int j = 0; j < S::TN; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
    }
    if (s + 1 < stages) L.stage(&As[buf ^ 1][0][0], &Bs[buf ^ 1][0][0], tid);  // its last readers passed the barrier below
    __syncthreads();
  }

  // Output element (i, j) of this thread: row m0 + row_of(i), column n0 + col_of(j).
  auto row_of = [&](int i) { return (i / 4) * (BM / QM) + ty * 4 + (i % 4); };
  auto col_of = [&](int j) { return (j / 4) * (BN / QN) + tx * 4 + (j % 4); };

  if (gridDim.z > 1) {
    // Split-K: publish this block's partial tile, take the tile's ticket; the last block sums the
    // partials in split order 0..S−1 (the same sum whichever block is last) and runs the epilogue.
    const unsigned tile = blockIdx.y * gridDim.x + blockIdx.x, tiles = gridDim.x * gridDim.y;
    float* mine = a.partials + ((size_t)blockIdx.z * tiles + tile) * (BM * BN);
#pragma unroll
    for (int i = 0; i < S::TM; ++i)
#pragma unroll
      for (int j = 0; j < S::TN; j += 4)
        *reinterpret_cast<float4*>(&mine[row_of(i) * BN + col_of(j)]) =
            make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]);
    __threadfence();
    __syncthreads();
    __shared__ bool last;
    if (tid == 0) last = atomicAdd(&a.tickets[tile], 1u) == gridDim.z - 1;
    __syncthreads();
    if (!last) return;
    __threadfence();
#pragma unroll
    for (int i = 0; i < S::TM; ++i)
#pragma unroll
      for (int j = 0; j < S::TN; ++j) acc[i][j] = 0.f;
    for (unsigned z = 0; z < gridDim.z; ++z) {
      const float* part = a.partials + ((size_t)z * tiles + tile) * (BM * BN);
#pragma unroll
      for (int i = 0; i < S::TM; ++i)
#pragma unroll
        for (int j = 0; j < S::TN; j += 4) {
          const float4 p = __ldcg(reinterpret_cast<const float4*>(&part[row_of(i) * BN + col_of(j)]));
          acc[i][j] += p.x; acc[i][j + 1] += p.y; acc[i][j + 2] += p.z; acc[i][j + 3] += p.w;
        }
    }
    if (tid == 0) a.tickets[tile] = 0;  // ready for the next launch (graph replays reuse it)
  }

  // Epilogue: quads of four consecutive columns, a float4 each when VEC, in chunks of RC rows:
  // the chunk's loads first, then its stores (epilogue_load's comment says why).
  constexpr int RC = 2;
  static_assert(S::TM % RC == 0, "whole row chunks");
#pragma unroll
  for (int i0 = 0; i0 < S::TM; i0 += RC) {
    EpiIn<4> in[RC][QN];
#pragma unroll
    for (int ii = 0; ii < RC; ++ii)
#pragma unroll
      for (int jq = 0; jq < QN; ++jq) {
        const int gm = m0 + row_of(i0 + ii), gn = n0 + col_of(4 * jq);
        if (gm < a.M && gn < a.N) epilogue_load<EPI, VEC, 4>(a, gm, gn, in[ii][jq]);
      }
#pragma unroll
    for (int ii = 0; ii < RC; ++ii)
#pragma unroll
      for (int jq = 0; jq < QN; ++jq) {
        const int i = i0 + ii, j = 4 * jq, gm = m0 + row_of(i), gn = n0 + col_of(j);
        if (gm >= a.M || gn >= a.N) continue;
        float v[4] = {acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]};
        epilogue_finish<EPI, VEC, 4>(a, gm, gn, v, in[ii][jq]);
      }
  }
}

// ---- the head: logits, loss, and the small layer's backward ------------------------------------
// Both kernels are latency-bound at the shapes they meet (a few MB of H, a W2 of Hd × O): each
// spreads its work over about two blocks an SM (the host's head_grid) and issues its loads in
// groups of kUnroll before using them.
constexpr int kMaxOut = 16;        // classes the head kernels hold in registers (the path refuses more)
constexpr int kHeadThreads = 256;  // k_tiled_logits_loss
constexpr int kHeadRows = 4;       // batch rows per k_tiled_logits_loss block (blockIdx.x)
constexpr int kBackThreads = 128;  // k_tiled_head_backward: one hidden unit per thread (blockIdx.x)
constexpr int kBackChunk = 64;     // k_tiled_head_backward stages dZ in chunks of this many rows
constexpr int kBackMaxSplit = 16;  // row blocks a column at most: the last block's sum stays short
constexpr int kUnroll = 8;

// The last block of `blocks` to reach this (ticket counts arrivals) returns true, after every
// other block's writes before its call are visible; it resets the ticket for the next launch.
__device__ __forceinline__ bool last_block(unsigned* ticket, unsigned blocks) {
  __shared__ bool last;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {
    last = atomicAdd(ticket, 1u) == blocks - 1;
    if (last) *ticket = 0;
  }
  __syncthreads();
  if (last) __threadfence();
  return last;
}

// Z = H·W2 + b2 for kHeadRows rows a block, the hidden units split over blockIdx.y (each block
// writes its partial logits); the last block of a row group sums the splits in order, then per row
// the softmax cross-entropy: dZ = (softmax(Z) − onehot(y)) / B and the row's loss; the last row
// group sums the groups' losses in order into *loss (the batch mean). Labels are read through the
// epoch order. OM: the classes held in registers (O <= OM).
template <int OM>
__global__ void __launch_bounds__(kHeadThreads)
k_tiled_logits_loss(int B, int Hd, int O,
                    const float* __restrict__ H,        // [B × Hd] post-ReLU activations
                    const float* __restrict__ W2,       // [Hd × O]
                    const float* __restrict__ b2,       // [O]
                    const int* __restrict__ labels_all, // [n_total]
                    const int* __restrict__ rows,       // [B] this step's rows of the epoch order
                    float* __restrict__ dZ,             // [B × O]
                    float* __restrict__ zpart,          // [gridDim.y × B × OM] scratch
                    float* __restrict__ group_loss,     // [gridDim.x] scratch
                    unsigned* __restrict__ tickets,     // [gridDim.x + 1], zero between launches
                    float* __restrict__ loss) {         // one float: the batch's mean loss
  constexpr int R = kHeadRows, WARPS = kHeadThreads / 32;
  __shared__ float red[WARPS][R][OM];
  __shared__ float zrow[R][OM];
  __shared__ float row_loss[R];
  const int r0 = blockIdx.x * R, lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int jc = (Hd + gridDim.y - 1) / gridDim.y, j_begin = blockIdx.y * jc, j_end = min(Hd, j_begin + jc);
  float acc[R][OM];
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int o = 0; o < OM; ++o) acc[r][o] = 0.f;
#pragma unroll 2
  for (int j = j_begin + threadIdx.x; j < j_end; j += kHeadThreads) {
    float w[OM], h[R];
#pragma unroll
    for (int o = 0; o < OM; ++o) w[o] = o < O ? __ldg(W2 + (size_t)j * O + o) : 0.f;
#pragma unroll
    for (int r = 0; r < R; ++r) h[r] = r0 + r < B ? __ldg(H + (size_t)(r0 + r) * Hd + j) : 0.f;
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
      for (int o = 0; o < OM; ++o) acc[r][o] = fmaf(h[r], w[o], acc[r][o]);
  }
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int o = 0; o < OM; ++o) {
      float v = acc[r][o];
#pragma unroll
      for (int d = 16; d > 0; d >>= 1) v += __shfl_xor_sync(0xffffffffu, v, d);
      if (lane == 0) red[warp][r][o] = v;
    }
  __syncthreads();
  if (threadIdx.x < R * OM) {
    const int r = threadIdx.x / OM, o = threadIdx.x % OM;
    float z = 0.f;
    for (int w = 0; w < WARPS; ++w) z += red[w][r][o];
    if (r0 + r < B) zpart[((size_t)blockIdx.y * B + r0 + r) * OM + o] = z;
  }
  if (!last_block(tickets + blockIdx.x, gridDim.y)) return;
  if (threadIdx.x < R * OM) {
    const int r = threadIdx.x / OM, o = threadIdx.x % OM;
    float z = 0.f;
    if (r0 + r < B)
      for (unsigned y = 0; y < gridDim.y; ++y) z += __ldcg(zpart + ((size_t)y * B + r0 + r) * OM + o);
    zrow[r][o] = o < O ? z + __ldg(b2 + o) : 0.f;
  }
  __syncthreads();
  if (threadIdx.x < R) {
    const int r = threadIdx.x, gr = r0 + r;
    row_loss[r] = 0.f;
    if (gr < B) {
      const float* z = zrow[r];
      float m = z[0];
      for (int o = 1; o < O; ++o) m = fmaxf(m, z[o]);
      float sum = 0.f;
      for (int o = 0; o < O; ++o) sum += expf(z[o] - m);
      const int y = __ldg(labels_all + rows[gr]);
      row_loss[r] = logf(sum) - (z[y] - m);
      const float inv = 1.f / sum, invB = 1.f / (float)B;
      for (int o = 0; o < O; ++o) dZ[(size_t)gr * O + o] = (expf(z[o] - m) * inv - (o == y ? 1.f : 0.f)) * invB;
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    float l = 0.f;
    for (int r = 0; r < R; ++r) l += row_loss[r];
    group_loss[blockIdx.x] = l;
  }
  if (!last_block(tickets + gridDim.x, gridDim.x)) return;
  // Thread t sums groups t, t + 256, ... in order; then a fixed tree over the threads.
  __shared__ float tree[kHeadThreads];
  float l = 0.f;
  for (unsigned b = threadIdx.x; b < gridDim.x; b += kHeadThreads) l += __ldcg(group_loss + b);
  tree[threadIdx.x] = l;
  __syncthreads();
  for (int w = kHeadThreads / 2; w > 0; w >>= 1) {
    if (threadIdx.x < w) tree[threadIdx.x] += tree[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) *loss = tree[0] / (float)B;
}

// One hidden unit j per thread, `rb` batch rows per block (blockIdx.y): dH[r][j] =
// (Σ_o dZ[r][o]·W2[j][o]) when H[r][j] > 0, else 0, with the W2 of before this step; this block's
// part of dW2[j][·] = Σ_r H[r][j]·dZ[r][·] and of db1[j] = Σ_r dH[r][j] go to the partials
// ([y][o][j], o = O for db1), and the last block of a column of blocks sums them in row-block
// order and updates W2[j][·] and b1[j] (their velocities read before the ticket, so the update
// waits on no load of its own). A block of its own, the last column's row block 0 (gridDim.x = cols + 1:
// HeadGrid::back_x), sums db2 = Σ_r dZ[r][·] (in a fixed order) and updates b2 beside the others:
// dZ is the previous kernel's, so it need not wait for the reduction. OM: the classes held in
// registers (O <= OM).
template <int OM, class DH_T = float>
__global__ void __launch_bounds__(kBackThreads)
k_tiled_head_backward(int B, int Hd, int O, int rb, float lr, float mu,
                      const float* __restrict__ H,   // [B × Hd]
                      const float* __restrict__ dZ,  // [B × O]
                      float* __restrict__ W2, float* __restrict__ vW2,  // [Hd × O] and its velocity
                      float* __restrict__ b1, float* __restrict__ vb1,  // [Hd]
                      float* __restrict__ b2, float* __restrict__ vb2,  // [O]
                      DH_T* __restrict__ dH,         // [B × Hd] float, or bf16 (rounded to nearest)
                      float* __restrict__ part,      // [gridDim.y × (O + 1) × Hd] scratch
                      unsigned* __restrict__ tickets) {  // [gridDim.x], zero between launches
  if (blockIdx.x == gridDim.x - 1) {  // the db2 block: thread t sums rows t, t + kBackThreads, ...;
    if (blockIdx.y != 0) return;      // then class by class over the threads in order
    __shared__ float colsum[kBackThreads][OM + 1];
    float s[OM];
#pragma unroll
    for (int o = 0; o < OM; ++o) s[o] = 0.f;
    for (int r = threadIdx.x; r < B; r += kBackThreads)
#pragma unroll
      for (int o = 0; o < OM; ++o) s[o] += o < O ? dZ[(size_t)r * O + o] : 0.f;
#pragma unroll
    for (int o = 0; o < OM; ++o) colsum[threadIdx.x][o] = s[o];
    __syncthreads();
    if (threadIdx.x < O) {
      const int o = threadIdx.x;
      float g = 0.f;
      for (int t = 0; t < kBackThreads; ++t) g += colsum[t][o];
      const float v = mu * vb2[o] - lr * g;
      vb2[o] = v;
      b2[o] += v;
    }
    return;
  }
  __shared__ float dz[kBackChunk][OM];
  const int j = blockIdx.x * kBackThreads + threadIdx.x, r_begin = blockIdx.y * rb;
  const int r_end = min(B, r_begin + rb);
  const size_t plane = (size_t)Hd;  // one (y, o) plane of the partials
  float w[OM], g[OM];  // W2[j][·], this block's dW2[j][·]
#pragma unroll
  for (int o = 0; o < OM; ++o) w[o] = o < O && j < Hd ? W2[(size_t)j * O + o] : 0.f, g[o] = 0.f;
  float gb = 0.f;
  for (int r0 = r_begin; r0 < r_end; r0 += kBackChunk) {  // dZ staged a chunk of rows at a time
    const int nr = min(kBackChunk, r_end - r0);
    __syncthreads();
    for (int e = threadIdx.x; e < kBackChunk * OM; e += kBackThreads) {
      const int r = e / OM, o = e % OM;
      dz[r][o] = r < nr && o < O ? dZ[(size_t)(r0 + r) * O + o] : 0.f;
    }
    __syncthreads();
    if (j >= Hd) continue;
    for (int r8 = 0; r8 < nr; r8 += kUnroll) {
      float h[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) h[u] = r8 + u < nr ? H[(size_t)(r0 + r8 + u) * Hd + j] : 0.f;
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        if (r8 + u >= nr) break;
        const int r = r8 + u;
        float d = 0.f;
#pragma unroll
        for (int o = 0; o < OM; ++o) {
          g[o] = fmaf(h[u], dz[r][o], g[o]);
          d = fmaf(dz[r][o], w[o], d);
        }
        d = h[u] > 0.f ? d : 0.f;
        if constexpr (std::is_same<DH_T, float>::value) dH[(size_t)(r0 + r) * Hd + j] = d;
        else dH[(size_t)(r0 + r) * Hd + j] = __float2bfloat16_rn(d);
        gb += d;
      }
    }
  }
  if (j < Hd) {
    float* p = part + (size_t)blockIdx.y * (O + 1) * plane + j;
#pragma unroll
    for (int o = 0; o < OM; ++o)
      if (o < O) p[o * plane] = g[o];
    p[O * plane] = gb;
  }
  // The update's own operands, read while the ticket's fence and atomic are in flight: vW2[j][·],
  // vb1[j] and b1[j] (only the last block of this column writes them, after every block's arrival).
  float vw[OM];
#pragma unroll
  for (int o = 0; o < OM; ++o) vw[o] = o < O && j < Hd ? vW2[(size_t)j * O + o] : 0.f;
  const float vb = j < Hd ? vb1[j] : 0.f, bb = j < Hd ? b1[j] : 0.f;
  if (!last_block(tickets + blockIdx.x, gridDim.y)) return;
  if (j < Hd) {
    float g[OM];
    float gb = 0.f;
#pragma unroll
    for (int o = 0; o < OM; ++o) g[o] = 0.f;
    [[maybe_unused]] constexpr int kSplitsInFlight = OM > 10 ? 2 : 4;  // (O + 1) loads each: within the registers at OM 16
#pragma unroll kSplitsInFlight
    for (unsigned y = 0; y < gridDim.y; ++y) {  // unrolled: several splits' loads in flight, summed in order
      const float* p = part + (size_t)y * (O + 1) * plane + j;
#pragma unroll
      for (int o = 0; o < OM; ++o)
        if (o < O) g[o] += __ldcg(p + o * plane);
      gb += __ldcg(p + O * plane);
    }
#pragma unroll
    for (int o = 0; o < OM; ++o) {
      if (o >= O) continue;
      const size_t i = (size_t)j * O + o;
      const float v = mu * vw[o] - lr * g[o];
      vW2[i] = v;
      W2[i] = w[o] + v;
    }
    const float v = mu * vb - lr * gb;
    vb1[j] = v;
    b1[j] = bb + v;
  }
}

// The GEMM engine's bfloat16 operands (cuda/paths/tiled_path.cu, tiled-bf16 on sm_90), rounded to
// nearest as k_tiled_mma rounds its loads: dst[r][c] = src[rows[r]][c] for r < n (the epoch's
// batches one after another, so a step's rows are contiguous for TMA), and dst[i] = src[i].
// (Templates only so that this header may be included by several objects.)
template <class T = __nv_bfloat16>
__global__ void k_gather_rows_bf16(const float* __restrict__ src,  // [any × cols]
                                   const int* __restrict__ rows,   // [n] the epoch order
                                   int n, int cols,
                                   T* __restrict__ dst) {  // [n × cols]
  const size_t total = (size_t)n * cols;
  for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += (size_t)gridDim.x * blockDim.x) {
    const size_t r = e / cols, c = e % cols;
    dst[e] = __float2bfloat16_rn(__ldg(src + (size_t)rows[r] * cols + c));
  }
}
template <class T = __nv_bfloat16>
__global__ void k_to_bf16(const float* __restrict__ src, size_t count, T* __restrict__ dst) {
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += (size_t)gridDim.x * blockDim.x)
    dst[i] = __float2bfloat16_rn(src[i]);
}

// The head kernels' grids for a step of nb rows on `sms` multiprocessors: about two blocks an SM.
struct HeadGrid {
  int groups, ksplit;   // k_tiled_logits_loss: row groups of kHeadRows × splits of the hidden units
  int cols, rb, ysplit; // k_tiled_head_backward: column blocks × row blocks of rb rows
  int back_x() const { return cols + 1; }  // its grid's x: the column blocks and the db2 block
};
inline HeadGrid head_grid(int nb, int Hd, int sms) {
  HeadGrid g;
  g.groups = (nb + kHeadRows - 1) / kHeadRows;
  g.ksplit = std::max(1, std::min((2 * sms + g.groups - 1) / g.groups, (Hd + kHeadThreads - 1) / kHeadThreads));
  g.cols = (Hd + kBackThreads - 1) / kBackThreads;
  const int want = std::min(kBackMaxSplit, std::max(1, (2 * sms + g.cols - 1) / g.cols));
  g.rb = (nb + want - 1) / want;
  g.rb = std::max(kUnroll, (g.rb + kUnroll - 1) / kUnroll * kUnroll);
  g.ysplit = (nb + g.rb - 1) / g.rb;
  return g;
}

}  // namespace mlp::tiled
