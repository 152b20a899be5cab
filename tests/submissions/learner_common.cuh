// tests/submissions/learner_common.cuh — everything of a learner-style submission of
// cuda/contract/submission.h except its matrix products: the argument checks, the loss (one warp per
// row, shuffles), the bias gradients (a shared-memory tree reduction per column), the momentum step,
// the batch gather and the epoch loop, and the five entry points. Written independently of
// naive_base.cuh. Two family headers include it and define its GEMM, learner::gemm<TA, TB>, after it:
//   tiled_base.cuh   shared-memory tiled GEMM, one output per thread (tiled16.cu, tiled32.cu,
//                    launch_heavy.cu)
//   regtile_base.cuh register-tiled GEMM, a small block of outputs per thread (regtile.cu)
// Each of their files must pass every gate case. Every entry point only enqueues work on `stream`
// (no allocation, no host synchronisation, nothing printed; the epoch's scratch is the workspace,
// laid out as model.h's mlp_workspace_offsets says), checks every launch (MLP_ERR_CUDA), and returns
// MLP_ERR_INVALID_ARGUMENT for a null pointer, batch <= 0 or a width <= 0, as submission.h asks.
//
// Parameters (macros; defaults in brackets):
//   LC_REDUCE_THREADS  threads of a bias-gradient column's block, a power of two >= 64 [256]
//   LC_STEP_THREADS    threads per block of the momentum step [256]
// A variant, correct (not a mutant):
//   VARIANT_ROWWISE_TAIL  mlp_train_epoch runs the short last batch's forward one row at a time:
//                         2 launches a row instead of 2 a batch (222 more an epoch at the recipe's
//                         6000 = 46·128 + 112 rows); every number bitwise equal to the file without it
//                         (each output element is the same thread's same sum whatever the row count)
// The defects (one per file), each with the gate cases that must fail it; harness/gate/course_gen.py
// reads them from these lines (one entry per macro, its cases after its last "->"):
//   MUTANT_MASK_GE_ZERO     dH masked with (H >= 0), true for every unit after the ReLU -> case 4
//   MUTANT_DB_ROW_SUMS      each bias gradient summed along a row of dZ or dH, not down its column
//                           -> case 4
//   MUTANT_TAIL_MEAN_BATCH  the short last batch's loss and dZ divided by `batch`, not by its rows
//                           -> case 9
//   MUTANT_REDUCE_NO_SYNC   the column sums' tree reduction without the __syncthreads() between its
//                           levels -> case 12
//   MUTANT_STEP_GRID_FLOOR  the step's grid n / LC_STEP_THREADS blocks, rounded down: the last
//                           n mod LC_STEP_THREADS parameters never move -> cases 5, 9
//   MUTANT_GATHER_NO_ORDER  the epoch takes rows t·batch .. in file order, ignoring `order` -> case 9
//   MUTANT_LOSS_SUM         *loss is the sum of the rows' losses, not their mean (dZ still right)
//                           -> case 3
#ifndef LEARNER_COMMON_CUH
#define LEARNER_COMMON_CUH

#include <cuda_runtime.h>
#include <math.h>
#include <stddef.h>

#include "submission.h"

#ifndef LC_REDUCE_THREADS
#define LC_REDUCE_THREADS 256
#endif
#ifndef LC_STEP_THREADS
#define LC_STEP_THREADS 256
#endif
static_assert(LC_REDUCE_THREADS >= 64 && LC_REDUCE_THREADS <= 1024 &&
                  (LC_REDUCE_THREADS & (LC_REDUCE_THREADS - 1)) == 0,
              "LC_REDUCE_THREADS: a power of two in [64, 1024]");
static_assert(LC_STEP_THREADS >= 32 && LC_STEP_THREADS <= 1024, "LC_STEP_THREADS: 32 to 1024");

namespace learner {

constexpr int kMaxGridY = 65535;  // gridDim.y's limit: a GEMM's row blocks
constexpr int kMaxGridX = 0x7fffffff;

// What a GEMM does to each sum before storing it: C = relu?(acc + bias[n]), then zeroed where
// mask[m, n] <= 0 (dH = (dZ·W2ᵀ) ⊙ (H > 0), H being the post-ReLU activations).
struct Epilogue {
  const float* bias;  // [N] or null
  bool relu;
  const float* mask;  // [M × N] or null
};

__device__ __forceinline__ float apply_epilogue(float acc, int m, int n, int N, const Epilogue& e) {
  if (e.bias) acc += e.bias[n];
  if (e.relu) acc = fmaxf(acc, 0.f);
#ifdef MUTANT_MASK_GE_ZERO
  if (e.mask && !(e.mask[(size_t)m * N + n] >= 0.f)) acc = 0.f;  // every post-ReLU unit passes
#else
  if (e.mask && !(e.mask[(size_t)m * N + n] > 0.f)) acc = 0.f;
#endif
  return acc;
}

// C [M × N] = op(A)·op(B) with the epilogue, enqueued on `st`. op(A) is A [M × K] (row-major) or,
// with TA, A stored as [K × M]; op(B) is B [K × N] or, with TB, B stored as [N × K]. The family
// header defines it; MLP_OK, MLP_ERR_UNSUPPORTED (a grid over the device's limits) or MLP_ERR_CUDA.
template <bool TA, bool TB>
int gemm(int M, int N, int K, const float* A, const float* B, float* C, Epilogue e, cudaStream_t st);

// The status of the launch just made (a bad configuration, a missing kernel image, a fault).
inline int launched() { return cudaGetLastError() == cudaSuccess ? MLP_OK : MLP_ERR_CUDA; }

inline bool bad_shape(MlpShape s) { return s.in <= 0 || s.hidden <= 0 || s.out <= 0; }

// ---------------------------------------------------------------------------------------------- loss
// One block of kLossWarps warps; warp w takes rows w, w + kLossWarps, ...: the row's max and the sum
// of exp(z − max) by butterfly shuffles (every lane ends with both), dZ written lane-strided, the
// row's loss log(sum) − (z_label − max) added by lane 0; then thread 0 adds the warps' sums in order.
constexpr int kLossWarps = 8;
__global__ void __launch_bounds__(kLossWarps * 32)
    softmax_xent(int rows, int O, const float* Z, const int* y, float* dZ, float* loss, int denom) {
  __shared__ float warp_loss[kLossWarps];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  float mine = 0.f;  // lane 0: this warp's rows' losses
  for (int r = warp; r < rows; r += kLossWarps) {
    const float* z = Z + (size_t)r * O;
    float mx = -INFINITY;
    for (int k = lane; k < O; k += 32) mx = fmaxf(mx, z[k]);
    for (int off = 16; off > 0; off /= 2) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));
    float sum = 0.f;
    for (int k = lane; k < O; k += 32) sum += expf(z[k] - mx);
    for (int off = 16; off > 0; off /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, off);
    const int label = y[r];
    for (int k = lane; k < O; k += 32)
      dZ[(size_t)r * O + k] = (expf(z[k] - mx) / sum - (k == label ? 1.f : 0.f)) / (float)denom;
    if (lane == 0) mine += logf(sum) - (z[label] - mx);
  }
  if (lane == 0) warp_loss[warp] = mine;
  __syncthreads();
  if (threadIdx.x == 0) {
    float total = 0.f;
    for (int w = 0; w < kLossWarps; ++w) total += warp_loss[w];
#ifdef MUTANT_LOSS_SUM
    *loss = total;  // the sum over the rows, not their mean
#else
    *loss = total / (float)denom;
#endif
  }
}

// The mean over `denom` rows of `rows` rows' losses (denom == rows but for MUTANT_TAIL_MEAN_BATCH).
inline int loss_rows(MlpShape s, const float* Z, const int* labels, int rows, int denom, float* dZ, float* loss,
                     cudaStream_t st) {
  softmax_xent<<<1, kLossWarps * 32, 0, st>>>(rows, s.out, Z, labels, dZ, loss, denom);
  return launched();
}

// ------------------------------------------------------------------------------------- column sums
// out[c] = Σ_r M[r, c] (M [rows × cols]): block c, each thread a strided partial sum over the rows,
// then a tree over the block's partials in shared memory.
__global__ void __launch_bounds__(LC_REDUCE_THREADS) column_sums(int rows, int cols, const float* M, float* out) {
  __shared__ float part[LC_REDUCE_THREADS];
  const int c = blockIdx.x, t = threadIdx.x;
  float acc = 0.f;
#ifdef MUTANT_DB_ROW_SUMS
  if (c < rows)
    for (int k = t; k < cols; k += LC_REDUCE_THREADS) acc += M[(size_t)c * cols + k];  // row c, not column c
#else
  for (int r = t; r < rows; r += LC_REDUCE_THREADS) acc += M[(size_t)r * cols + c];
#endif
  part[t] = acc;
  __syncthreads();
  for (int stride = LC_REDUCE_THREADS / 2; stride > 0; stride /= 2) {
    if (t < stride) part[t] += part[t + stride];
#ifndef MUTANT_REDUCE_NO_SYNC
    __syncthreads();
#endif
  }
  if (t == 0) out[c] = part[0];
}

inline int bias_grad(int rows, int cols, const float* M, float* out, cudaStream_t st) {
  column_sums<<<cols, LC_REDUCE_THREADS, 0, st>>>(rows, cols, M, out);
  return launched();
}

// ----------------------------------------------------------------------------------- momentum step
__global__ void __launch_bounds__(LC_STEP_THREADS)
    momentum_step(size_t n, float lr, float mu, float* p, float* v, const float* g) {
  const size_t i = blockIdx.x * (size_t)LC_STEP_THREADS + threadIdx.x;
  if (i >= n) return;
  const float vi = mu * v[i] - lr * g[i];
  v[i] = vi;
  p[i] += vi;
}

inline int step(float* params, float* velocity, const float* grads, size_t n, float lr, float mu, cudaStream_t st) {
#ifdef MUTANT_STEP_GRID_FLOOR
  const size_t blocks = n / LC_STEP_THREADS;  // rounded down: the last partial block is never launched
#else
  const size_t blocks = (n + LC_STEP_THREADS - 1) / LC_STEP_THREADS;
#endif
  if (blocks > (size_t)kMaxGridX) return MLP_ERR_UNSUPPORTED;
  momentum_step<<<(unsigned)blocks, LC_STEP_THREADS, 0, st>>>(n, lr, mu, params, velocity, grads);
  return launched();
}

// ---------------------------------------------------------------------------------------- the epoch
// Rows order[first .. first + rows − 1] of X_all and labels_all into Xb [rows × in] and yb: block r
// copies row r.
constexpr int kGatherThreads = 128;
__global__ void __launch_bounds__(kGatherThreads)
    gather_rows(int in, const float* X_all, const int* labels_all, const int* order, int first, float* Xb, int* yb) {
  const int r = blockIdx.x;
#ifdef MUTANT_GATHER_NO_ORDER
  const size_t src = (size_t)(first + r);  // the file's order, not the epoch's
#else
  const size_t src = (size_t)order[first + r];
#endif
  for (int c = threadIdx.x; c < in; c += kGatherThreads) Xb[(size_t)r * in + c] = X_all[src * in + c];
  if (threadIdx.x == 0) yb[r] = labels_all[src];
}

// H = ReLU(X·W1 + b1), Z = H·W2 + b2 for `rows` rows (arguments already checked).
inline int forward_rows(MlpShape s, const float* params, const float* X, int rows, float* H, float* Z,
                        cudaStream_t st) {
  const MlpOffsets o = mlp_offsets(s);
  int e = gemm<false, false>(rows, s.hidden, s.in, X, params + o.w1, H, Epilogue{params + o.b1, true, nullptr}, st);
  if (e) return e;
  return gemm<false, false>(rows, s.out, s.hidden, H, params + o.w2, Z, Epilogue{params + o.b2, false, nullptr}, st);
}

inline int backward_rows(MlpShape s, const float* params, const float* X, const float* H, const float* dZ, int rows,
                         float* grads, float* dH, float* dX, cudaStream_t st) {
  const MlpOffsets o = mlp_offsets(s);
  const Epilogue plain{nullptr, false, nullptr};
  int e = gemm<true, false>(s.hidden, s.out, rows, H, dZ, grads + o.w2, plain, st);              // dW2 = Hᵀ·dZ
  if (!e) e = bias_grad(rows, s.out, dZ, grads + o.b2, st);                                     // db2
  if (!e) e = gemm<false, true>(rows, s.hidden, s.out, dZ, params + o.w2, dH, Epilogue{nullptr, false, H}, st);
  if (!e) e = gemm<true, false>(s.in, s.hidden, rows, X, dH, grads + o.w1, plain, st);          // dW1 = Xᵀ·dH
  if (!e) e = bias_grad(rows, s.hidden, dH, grads + o.b1, st);                                  // db1
  if (!e && dX) e = gemm<false, true>(rows, s.in, s.hidden, dH, params + o.w1, dX, plain, st);  // dX = dH·W1ᵀ
  return e;
}

inline int train_epoch(MlpShape s, float* params, float* velocity, const float* X_all, const int* labels_all,
                       const int* order, int n, int batch, float lr, float mu, float* ws, float* step_loss,
                       cudaStream_t st) {
  const MlpWorkspaceOffsets w = mlp_workspace_offsets(s, batch);
  float* Xb = ws + w.x;
  int* yb = reinterpret_cast<int*>(ws + w.labels);
  float* H = ws + w.h;
  float* dH = ws + w.dh;
  float* Z = ws + w.z;
  float* dZ = ws + w.dz;
  float* grads = ws + w.grads;
  const size_t total = mlp_offsets(s).total;
  for (int t = 0; (long long)t * batch < n; ++t) {
    const int first = t * batch, rows = n - first < batch ? n - first : batch;
    gather_rows<<<rows, kGatherThreads, 0, st>>>(s.in, X_all, labels_all, order, first, Xb, yb);
    int e = launched();
#ifdef VARIANT_ROWWISE_TAIL
    if (!e && rows < batch) {  // the short last batch, one row at a time
      for (int r = 0; r < rows && !e; ++r)
        e = forward_rows(s, params, Xb + (size_t)r * s.in, 1, H + (size_t)r * s.hidden, Z + (size_t)r * s.out, st);
    } else if (!e) {
      e = forward_rows(s, params, Xb, rows, H, Z, st);
    }
#else
    if (!e) e = forward_rows(s, params, Xb, rows, H, Z, st);
#endif
#ifdef MUTANT_TAIL_MEAN_BATCH
    if (!e) e = loss_rows(s, Z, yb, rows, batch, dZ, step_loss + t, st);  // divided by batch, not rows
#else
    if (!e) e = loss_rows(s, Z, yb, rows, rows, dZ, step_loss + t, st);
#endif
    if (!e) e = backward_rows(s, params, Xb, H, dZ, rows, grads, dH, nullptr, st);
    if (!e) e = step(params, velocity, grads, total, lr, mu, st);
    if (e) return e;
  }
  return MLP_OK;
}

}  // namespace learner

// ---------------------------------------------------------------------------------- entry points
extern "C" int mlp_forward(MlpShape s, const float* params, const float* X, int batch, float* H, float* Z,
                           cudaStream_t stream) {
  if (learner::bad_shape(s) || batch <= 0 || !params || !X || !H || !Z) return MLP_ERR_INVALID_ARGUMENT;
  return learner::forward_rows(s, params, X, batch, H, Z, stream);
}

extern "C" int mlp_loss(MlpShape s, const float* Z, const int* labels, int batch, float* dZ, float* loss,
                        cudaStream_t stream) {
  if (learner::bad_shape(s) || batch <= 0 || !Z || !labels || !dZ || !loss) return MLP_ERR_INVALID_ARGUMENT;
  return learner::loss_rows(s, Z, labels, batch, batch, dZ, loss, stream);
}

extern "C" int mlp_backward(MlpShape s, const float* params, const float* X, const float* H, const float* dZ,
                            int batch, float* grads, float* dH_scratch, float* dX, cudaStream_t stream) {
  if (learner::bad_shape(s) || batch <= 0 || !params || !X || !H || !dZ || !grads || !dH_scratch)
    return MLP_ERR_INVALID_ARGUMENT;
  return learner::backward_rows(s, params, X, H, dZ, batch, grads, dH_scratch, dX, stream);
}

extern "C" int mlp_step(float* params, float* velocity, const float* grads, size_t n, float lr, float momentum,
                        cudaStream_t stream) {
  if (!params || !velocity || !grads || n == 0) return MLP_ERR_INVALID_ARGUMENT;
  return learner::step(params, velocity, grads, n, lr, momentum, stream);
}

extern "C" int mlp_train_epoch(MlpShape s, float* params, float* velocity, const float* X_all,
                               const int* labels_all, const int* order, int n_samples, int batch, float lr,
                               float momentum, float* workspace, float* step_loss, cudaStream_t stream) {
  if (learner::bad_shape(s) || batch <= 0 || n_samples <= 0 || !params || !velocity || !X_all || !labels_all ||
      !order || !workspace || !step_loss)
    return MLP_ERR_INVALID_ARGUMENT;
  return learner::train_epoch(s, params, velocity, X_all, labels_all, order, n_samples, batch, lr, momentum,
                              workspace, step_loss, stream);
}

#endif  // LEARNER_COMMON_CUH
