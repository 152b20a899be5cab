// cuda/kernels/stepwise.cuh — our kernels: one templated tiled matrix-multiply family with compile-time
// transposes and epilogues, a stable softmax cross-entropy, column sums, the momentum update and
// the batch gather. Every operation of a training step is its own __global__ function, so an
// Nsight Systems kernel summary shows one row per operation (the reference design merged dW1 and
// dW2 into one row because both were the same template instance).
//
// Layout: every matrix is row-major. Shapes in comments use B = batch rows, I = in (784),
// Hd = hidden (256), O = out (10). Each stepwise GEMM is bound once (an Op below: tile, operand
// storage, epilogue, kernel name, (M, N, K)); cuda/paths/stepwise_path.cu launches it from that binding.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>

#include "contract/submission.h"

namespace mlp {

// What the GEMM does to each output element before storing it.
enum class Epi {
  None,      // C = A·B
  Bias,      // C = A·B + bias[col]
  BiasRelu,  // C = max(A·B + bias[col], 0)             (forward hidden layer, fused)
  ReluMask,  // C = (A·B) ⊙ (mask[row, col] > 0)        (dH = dZ·W2ᵀ ⊙ (H > 0), fused)
};

// The accumulator of every matrix product and column sum of the stepwise paths (unfused, fused,
// graph; the persistent kernel keeps float). float64 by default: each output is then the float32
// rounding of an almost exact sum of float32 products (a product of two floats is exact in
// float64), so a pre-activation near the ReLU kink lands on the side float64 puts it on far more
// often than with a float32 sum whose error grows with the inner dimension (784): over 200 seeds
// this halves how often a float32 trainer leaves the float64 loss curve by 2% in 5 epochs
// (docs/LOSS_BAND_STUDY.md: 25% of seeds to 10%). It costs 8-13% of the stepwise paths' epoch
// time on the H200 (results/experiments/accumulate; a float64 FMA runs at half the float32 rate).
// The bias is added before the one rounding; the unfused path's separate bias pass cannot do that.
// Build with `invoke build --accumulate float` (make ACCUM=float) for the float32 variant.
#ifndef MLP_ACCUM
#define MLP_ACCUM double
#endif
using Accum = MLP_ACCUM;

// Split-K scratch in static device memory (no cudaMalloc: graph capture stays legal). A GEMM
// whose output has too few tiles to fill the GPU splits K across blockIdx.z; each block writes
// its partial tile here, and the LAST block to finish a tile (an atomic ticket) sums the
// partials in split order 0..S−1 and applies the epilogue: deterministic, no float atomics.
// One GEMM at a time per process uses it (all our GEMMs run in order on one stream).
constexpr size_t kSplitKBytes = size_t(8) << 20;  // 8 MB
constexpr size_t kSplitKElems = kSplitKBytes / sizeof(Accum);  // partials stay in Accum
constexpr int kSplitKTiles = 8192;
static __device__ Accum g_splitk_partials[kSplitKElems];
static __device__ unsigned int g_splitk_tickets[kSplitKTiles];

// C[M×N] = op(A)·op(B). A is M×K row-major, or when TA it is stored K×M (so we read Aᵀ).
// B is K×N row-major, or when TB it is stored N×K (we read Bᵀ). Tiles: BM×BN outputs per block,
// BK deep; each thread owns TM×TN outputs spread with a stride of BM/TM rows and BN/TN columns,
// so shared-memory reads of B are consecutive across a warp (no bank conflicts) and the reads of
// A are broadcasts. The next K-tile is loaded into registers while the current one is multiplied
// (one tile of latency hidden). Out-of-range rows, columns and K-tails load as zero: any shape
// works. Block z of a split-K launch covers K range [z·k_chunk, (z+1)·k_chunk). Operands are
// converted to Accum when they are staged in shared memory (once per element and block, not once
// per multiply-add); the epilogue (bias, ReLU, mask) runs in Accum and rounds once to float.
template <int BM, int BN, int BK, int TM, int TN, bool TA, bool TB, Epi EPI>
__device__ __forceinline__ void gemm_tile(int M, int N, int K, int k_chunk, const float* __restrict__ A,
                                          const float* __restrict__ B, float* __restrict__ C,
                                          const float* __restrict__ bias,
                                          const float* __restrict__ mask) {
  constexpr int TX = BN / TN, TY = BM / TM, THREADS = TX * TY;
  constexpr int LA = BM * BK / THREADS, LB = BN * BK / THREADS;  // loads per thread per K-tile
  static_assert(LA * THREADS == BM * BK && LB * THREADS == BN * BK, "tile must divide evenly");
  __shared__ Accum As[BK][BM + 1];  // k-major so the inner loop reads a row of each
  __shared__ Accum Bs[BK][BN + 1];
  const int tid = threadIdx.x, tx = tid % TX, ty = tid / TX;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int k_begin = blockIdx.z * k_chunk, k_end = min(K, k_begin + k_chunk);
  Accum acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0;

  // Loads walk the contiguous dimension of each operand's storage across consecutive threads.
  float ra[LA], rb[LB];
  auto load = [&](int k0) {
#pragma unroll
    for (int l = 0; l < LA; ++l) {
      int e = tid + l * THREADS;
      int mm = TA ? e % BM : e / BK, kk = TA ? e / BM : e % BK;
      int gm = m0 + mm, gk = k0 + kk;
      ra[l] = (gm < M && gk < k_end) ? (TA ? A[(size_t)gk * M + gm] : A[(size_t)gm * K + gk]) : 0.f;
    }
#pragma unroll
    for (int l = 0; l < LB; ++l) {
      int e = tid + l * THREADS;
      int nn = TB ? e / BK : e % BN, kk = TB ? e % BK : e / BN;
      int gn = n0 + nn, gk = k0 + kk;
      rb[l] = (gn < N && gk < k_end) ? (TB ? B[(size_t)gn * K + gk] : B[(size_t)gk * N + gn]) : 0.f;
    }
  };
  if (k_begin < k_end) load(k_begin);
  for (int k0 = k_begin; k0 < k_end; k0 += BK) {
#pragma unroll
    for (int l = 0; l < LA; ++l) {
      int e = tid + l * THREADS;
      As[TA ? e / BM : e % BK][TA ? e % BM : e / BK] = (Accum)ra[l];
    }
#pragma unroll
    for (int l = 0; l < LB; ++l) {
      int e = tid + l * THREADS;
      Bs[TB ? e % BK : e / BN][TB ? e / BK : e % BN] = (Accum)rb[l];
    }
    __syncthreads();
    if (k0 + BK < k_end) load(k0 + BK);  // in flight while this tile is multiplied
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      Accum a[TM], b[TN];
#pragma unroll
      for (int i = 0; i < TM; ++i) a[i] = As[kk][ty + i * TY];
#pragma unroll
      for (int j = 0; j < TN; ++j) b[j] = Bs[kk][tx + j * TX];
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = fma(a[i], b[j], acc[i][j]);
    }
    __syncthreads();
  }

  if (gridDim.z > 1) {
    // Split-K: publish this block's partial tile, take a ticket; the last block reduces.
    const unsigned tile = blockIdx.y * gridDim.x + blockIdx.x, tiles = gridDim.x * gridDim.y;
    Accum* mine = g_splitk_partials + ((size_t)blockIdx.z * tiles + tile) * (BM * BN);
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
      for (int j = 0; j < TN; ++j) mine[(ty + i * TY) * BN + tx + j * TX] = acc[i][j];
    __threadfence();
    __syncthreads();
    __shared__ bool last;
    if (tid == 0) last = atomicAdd(&g_splitk_tickets[tile], 1u) == gridDim.z - 1;
    __syncthreads();
    if (!last) return;
    __threadfence();
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
      for (int j = 0; j < TN; ++j) {
        Accum v = 0;
        for (unsigned z = 0; z < gridDim.z; ++z)
          v += __ldcg(g_splitk_partials + ((size_t)z * tiles + tile) * (BM * BN) + (ty + i * TY) * BN + tx + j * TX);
        acc[i][j] = v;
      }
    if (tid == 0) g_splitk_tickets[tile] = 0;  // ready for the next launch
  }

#pragma unroll
  for (int i = 0; i < TM; ++i) {
    int gm = m0 + ty + i * TY;
    if (gm >= M) continue;
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      int gn = n0 + tx + j * TX;
      if (gn >= N) continue;
      Accum v = acc[i][j];
      // bias and mask are read-only here: loaded through the non-coherent path (ld.global.nc).
      if (EPI == Epi::Bias || EPI == Epi::BiasRelu) v += (Accum)__ldg(bias + gn);
      if (EPI == Epi::BiasRelu) v = v > 0 ? v : Accum(0);
      if (EPI == Epi::ReluMask) v = __ldg(mask + (size_t)gm * N + gn) > 0.f ? v : Accum(0);
      C[(size_t)gm * N + gn] = (float)v;
    }
  }
}

// Tile shapes per operation (threads = (BM/TM)·(BN/TN) = 256 for each).
struct TileRowsThin { static constexpr int BM = 16, BN = 32, BK = 32, TM = 1, TN = 2; };  // K small, many tiles
struct TileNarrowN  { static constexpr int BM = 32, BN = 16, BK = 32, TM = 2, TN = 1; };  // N = out (10)
struct TileSquare   { static constexpr int BM = 32, BN = 32, BK = 32, TM = 2, TN = 2; };  // large M and N
template <class T> constexpr int tile_threads() { return (T::BM / T::TM) * (T::BN / T::TN); }

// The problem of one GEMM, C[M×N] = op(A)[M×K]·op(B)[K×N], in this one order everywhere: the
// grid (x: N tiles, y: M tiles, z: K splits) and the kernel both read it.
struct GemmDims { int M, N, K; };

// Each stepwise GEMM is bound once, in an Op: its tile, the storage of its operands, its
// epilogue, its kernel's name and its problem (M, N, K) from the layer widths and the batch rows.
// Its kernel takes GemmArgs<Op>, so the launch (gemm() in cuda/paths/stepwise_path.cu) derives the grid, the
// threads and the name from the same Op the kernel computes with; they cannot disagree.
template <class Op>
struct GemmArgs {
  GemmDims d;          // the problem, Op::dims(shape, batch)
  int k_chunk;         // K per blockIdx.z (K itself when K is not split)
  const float* A;      // Op::TA ? stored [K × M] : [M × K]
  const float* B;      // Op::TB ? stored [N × K] : [K × N]
  float* C;            // [M × N], written
  const float* bias;   // [N]      Epi::Bias and Epi::BiasRelu only, else nullptr
  const float* mask;   // [M × N]  Epi::ReluMask only, else nullptr
};

template <class Op>
__device__ __forceinline__ void gemm_op(const GemmArgs<Op>& a) {
  using T = typename Op::Tile;
  gemm_tile<T::BM, T::BN, T::BK, T::TM, T::TN, Op::TA, Op::TB, Op::EPI>(a.d.M, a.d.N, a.d.K, a.k_chunk, a.A, a.B,
                                                                       a.C, a.bias, a.mask);
}

// Grid and K-chunk of one GEMM: when the output has fewer tiles than two per SM, split K (at
// most 8 ways, each chunk a whole number of K-tiles) within the scratch's capacity.
struct GemmLaunch { dim3 grid; int k_chunk; };
template <class T> inline GemmLaunch gemm_launch(GemmDims d, int sm_count) {
  const int M = d.M, N = d.N, K = d.K;
  unsigned tn = (unsigned)((N + T::BN - 1) / T::BN), tm = (unsigned)((M + T::BM - 1) / T::BM);
  int tiles = (int)(tn * tm), split = 1;
  if (tiles < 2 * sm_count && tiles <= kSplitKTiles) {
    split = std::min(8, std::max(1, 2 * sm_count / tiles));
    int chunk = ((K + split - 1) / split + T::BK - 1) / T::BK * T::BK;
    split = (K + chunk - 1) / chunk;
    while (split > 1 && (size_t)split * tiles * T::BM * T::BN > kSplitKElems) --split;
  }
  int chunk = ((K + split - 1) / split + T::BK - 1) / T::BK * T::BK;
  return {dim3(tn, tm, (unsigned)split), split > 1 ? chunk : K};
}

// The bindings. B = batch rows, I = in, Hd = hidden, O = out; A, B, C as in GemmArgs.
template <class TILE, bool TRANS_A, bool TRANS_B, Epi EPILOGUE>
struct GemmOp {
  using Tile = TILE;
  static constexpr bool TA = TRANS_A, TB = TRANS_B;
  static constexpr Epi EPI = EPILOGUE;
};
// ---- forward ---------------------------------------------------------------------------------
// H[B×Hd] = ReLU(X[B×I]·W1[I×Hd] + b1)                     fused: bias and ReLU in the epilogue
struct OpFwdHiddenBiasRelu : GemmOp<TileSquare, false, false, Epi::BiasRelu> {
  static constexpr const char* kName = "k_fwd_hidden_bias_relu";
  static constexpr GemmDims dims(MlpShape s, int b) { return {b, s.hidden, s.in}; }
};
// A1[B×Hd] = X·W1                                           unfused: bias and ReLU are passes
struct OpFwdHiddenGemm : GemmOp<TileSquare, false, false, Epi::None> {
  static constexpr const char* kName = "k_fwd_hidden_gemm";
  static constexpr GemmDims dims(MlpShape s, int b) { return {b, s.hidden, s.in}; }
};
// Z[B×O] = H[B×Hd]·W2[Hd×O] + b2                            fused: bias in the epilogue
struct OpFwdLogitsBias : GemmOp<TileNarrowN, false, false, Epi::Bias> {
  static constexpr const char* kName = "k_fwd_logits_bias";
  static constexpr GemmDims dims(MlpShape s, int b) { return {b, s.out, s.hidden}; }
};
// Z[B×O] = H·W2                                             unfused
struct OpFwdLogitsGemm : GemmOp<TileNarrowN, false, false, Epi::None> {
  static constexpr const char* kName = "k_fwd_logits_gemm";
  static constexpr GemmDims dims(MlpShape s, int b) { return {b, s.out, s.hidden}; }
};
// ---- backward --------------------------------------------------------------------------------
// dW2[Hd×O] = Hᵀ·dZ   (H stored B×Hd, so A is transposed)
struct OpDW2 : GemmOp<TileNarrowN, true, false, Epi::None> {
  static constexpr const char* kName = "k_dW2";
  static constexpr GemmDims dims(MlpShape s, int b) { return {s.hidden, s.out, b}; }
};
// dH[B×Hd] = (dZ[B×O]·W2ᵀ) ⊙ (H > 0)   (W2 stored Hd×O, so B is transposed)   fused mask
struct OpDHReluMask : GemmOp<TileRowsThin, false, true, Epi::ReluMask> {
  static constexpr const char* kName = "k_dH_relu_mask";
  static constexpr GemmDims dims(MlpShape s, int b) { return {b, s.hidden, s.out}; }
};
// dH[B×Hd] = dZ·W2ᵀ                                          unfused: the mask is a pass
struct OpDHGemm : GemmOp<TileRowsThin, false, true, Epi::None> {
  static constexpr const char* kName = "k_dH_gemm";
  static constexpr GemmDims dims(MlpShape s, int b) { return {b, s.hidden, s.out}; }
};
// dW1[I×Hd] = Xᵀ·dH   (X stored B×I)
struct OpDW1 : GemmOp<TileSquare, true, false, Epi::None> {
  static constexpr const char* kName = "k_dW1";
  static constexpr GemmDims dims(MlpShape s, int b) { return {s.in, s.hidden, b}; }
};
// dX[B×I] = dH·W1ᵀ   (W1 stored I×Hd), only when a caller asks for it
struct OpDX : GemmOp<TileRowsThin, false, true, Epi::None> {
  static constexpr const char* kName = "k_dX";
  static constexpr GemmDims dims(MlpShape s, int b) { return {b, s.in, s.hidden}; }
};

// One kernel per Op, named as its Op says (tests/test_gemm_bindings.py checks the names), so a
// profile has one row per operation.
__global__ void k_fwd_hidden_bias_relu(GemmArgs<OpFwdHiddenBiasRelu> a) { gemm_op(a); }
__global__ void k_fwd_hidden_gemm(GemmArgs<OpFwdHiddenGemm> a) { gemm_op(a); }
__global__ void k_fwd_logits_bias(GemmArgs<OpFwdLogitsBias> a) { gemm_op(a); }
__global__ void k_fwd_logits_gemm(GemmArgs<OpFwdLogitsGemm> a) { gemm_op(a); }
__global__ void k_dW2(GemmArgs<OpDW2> a) { gemm_op(a); }
__global__ void k_dH_relu_mask(GemmArgs<OpDHReluMask> a) { gemm_op(a); }
__global__ void k_dH_gemm(GemmArgs<OpDHGemm> a) { gemm_op(a); }
__global__ void k_dW1(GemmArgs<OpDW1> a) { gemm_op(a); }
__global__ void k_dX(GemmArgs<OpDX> a) { gemm_op(a); }

// Column sums over the batch: out[c] = Σ_r M[r, c]. A block of 256 threads covers 32 columns:
// 8 row slices each sum their rows in order, then the 8 partials are added in slice order —
// deterministic, no atomics. Tagged so db1 and db2 get their own profiler rows.
enum class Col { db1, db2 };
constexpr int kColsumCols = 32, kColsumSlices = 8;
template <Col TAG>
__global__ void __launch_bounds__(kColsumCols * kColsumSlices)
k_colsum(int rows, int cols,
         const float* __restrict__ M,  // [rows × cols]
         float* __restrict__ out) {    // [cols]
  __shared__ Accum part[kColsumSlices][kColsumCols];
  const int cl = threadIdx.x % kColsumCols, slice = threadIdx.x / kColsumCols;
  const int c = blockIdx.x * kColsumCols + cl;
  const int per = (rows + kColsumSlices - 1) / kColsumSlices, r0 = slice * per, r1 = min(rows, r0 + per);
  Accum acc = 0;
  if (c < cols)
    for (int r = r0; r < r1; ++r) acc += (Accum)M[(size_t)r * cols + c];
  part[slice][cl] = acc;
  __syncthreads();
  if (slice == 0 && c < cols) {
    Accum s = 0;
#pragma unroll
    for (int k = 0; k < kColsumSlices; ++k) s += part[k][cl];
    out[c] = (float)s;
  }
}

// Numerically stable softmax cross-entropy over B rows of O logits, one block:
//   loss_i = log Σ_k exp(z_ik − m_i) − (z_i,y − m_i),  m_i = max_k z_ik
//   dZ_ik = (softmax_ik − [k = y_i]) / B,  *loss = mean_i loss_i
// Each thread sums its rows in order, then a fixed tree: the loss is bitwise deterministic.
constexpr int kSoftmaxThreads = 256;
__global__ void __launch_bounds__(kSoftmaxThreads)
k_softmax_xent(int B, int O,
               const float* __restrict__ Z,       // [B × O] logits
               const int* __restrict__ labels,    // [B], each in [0, O)
               float* __restrict__ dZ,            // [B × O]
               float* __restrict__ loss) {        // one float: the batch's mean loss
  __shared__ float partial[kSoftmaxThreads];
  float my = 0.f;
  const float invB = 1.f / (float)B;
  for (int r = threadIdx.x; r < B; r += blockDim.x) {
    const float* z = Z + (size_t)r * O;
    float m = z[0];
    for (int k = 1; k < O; ++k) m = fmaxf(m, z[k]);
    float sum = 0.f;
    for (int k = 0; k < O; ++k) sum += expf(z[k] - m);
    int y = labels[r];
    my += logf(sum) - (z[y] - m);
    float inv = 1.f / sum;
    for (int k = 0; k < O; ++k) dZ[(size_t)r * O + k] = (expf(z[k] - m) * inv - (k == y ? 1.f : 0.f)) * invB;
  }
  partial[threadIdx.x] = my;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) *loss = partial[0] * invB;
}

// v = μ·v − lr·g ; p = p + v over n floats, grid-stride. One launch over the whole flat buffer:
// p parameters, v velocity, g gradients, each [n] in the parameter layout (model.h).
__global__ void k_momentum_flat(size_t n, float lr, float mu, float* __restrict__ p,
                                float* __restrict__ v, const float* __restrict__ g) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    float vi = mu * v[i] - lr * g[i];
    v[i] = vi;
    p[i] += vi;
  }
}
// The same update tensor by tensor (the unfused path launches it four times, p, v and g pointing
// at one tensor of each buffer); tagged so each tensor gets its own profiler row.
enum class Tensor { W1, b1, W2, b2 };
template <Tensor TAG>
__global__ void k_momentum_tensor(size_t n, float lr, float mu, float* __restrict__ p,
                                  float* __restrict__ v, const float* __restrict__ g) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    float vi = mu * v[i] - lr * g[i];
    v[i] = vi;
    p[i] += vi;
  }
}

// Unfused epilogue passes, tagged per layer: C [rows × cols] += bias [cols]; C = max(C, 0) over
// n floats; dH ⊙= (H > 0) over n floats (dH and H [batch × hidden]).
enum class Layer { hidden, logits };
template <Layer TAG>
__global__ void k_add_bias(int rows, int cols, float* __restrict__ C, const float* __restrict__ bias) {
  size_t n = (size_t)rows * cols;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    C[i] += bias[i % cols];
}
__global__ void k_relu(size_t n, float* __restrict__ C) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    C[i] = fmaxf(C[i], 0.f);
}
__global__ void k_relu_mask(size_t n, float* __restrict__ dH, const float* __restrict__ H) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    dH[i] = H[i] > 0.f ? dH[i] : 0.f;
}

// Xb[r, :] = X_all[order[r], :], yb[r] = labels_all[order[r]] for the nb rows of one batch.
__global__ void k_gather_batch(int nb, int I,
                               const float* __restrict__ X_all,     // [n_total × I]
                               const int* __restrict__ labels_all,  // [n_total]
                               const int* __restrict__ order,       // [nb] this batch's rows
                               float* __restrict__ Xb,              // [nb × I]
                               int* __restrict__ yb) {              // [nb]
  size_t n = (size_t)nb * I;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    int r = (int)(i / I), c = (int)(i % I);
    int src = order[r];
    Xb[i] = X_all[(size_t)src * I + c];
    if (c == 0) yb[r] = labels_all[src];
  }
}

// Grid for a grid-stride elementwise kernel over n items (capped: the loops cover the rest).
inline unsigned elementwise_blocks(size_t n, int threads = 256) {
  size_t b = (n + threads - 1) / threads;
  return (unsigned)(b < 1024 ? (b ? b : 1) : 1024);
}

}  // namespace mlp
