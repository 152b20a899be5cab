// tests/submissions/naive_base.cuh — a second, deliberately plain implementation of
// cuda/contract/submission.h (one thread per output element, no tiling), written independently of
// cuda/kernels/stepwise.cuh. Built as is (naive.cu) it must pass the gate; each mutant_*.cu defines ONE
// of the MUTANT_* macros below, and the gate must catch it in the case named beside it
// (harness/gate/course_gen.py reads them from these lines: one entry per macro, its cases after its
// last "->").
//   MUTANT_NO_RELU_MASK     dH = dZ·W2ᵀ without ⊙(H > 0)             -> case 4 (grad-check)
//   MUTANT_FLIPPED_UPDATE   p = p − v instead of p + v               -> case 5 (step), case 6
//   MUTANT_NO_MAX_SHIFT     exp(z) without subtracting the row max     -> case 3 (loss-extreme)
//   MUTANT_DB_WRONG_AXIS    db = row sums instead of column sums     -> case 4 (grad-check)
//   MUTANT_SILENT_FORWARD   mlp_forward returns MLP_OK, writes nothing -> cases 1, 2 (poisoned NaN)
//   MUTANT_NAN_EPOCH        mlp_train_epoch's losses turn NaN on step 3 -> case 7 (training stops; the run
//                           names epoch and step)
//   MUTANT_FROZEN_B2        the epoch's step covers W1..W2 only (n = o.b2): b2 never moves -> case 9
//   MUTANT_TAIL_MEAN        the tail batch's loss and dZ averaged over `batch`, not its rows -> case 9
//   MUTANT_FORWARD_OVERRUN  forward's bound check `m > M` (not >=): one row past H and Z -> cases 1, 2, 10
//   MUTANT_RACY_TILE        forward's layer 1 as a shared-memory tiled GEMM missing the
//                           __syncthreads() after each tile's products -> case 12 (racecheck; invoke sanitize)
//   MUTANT_SPIN_EPOCH       the epoch waits on a step counter no kernel increments -> case 9, by its stage's
//                           time limit (a spin)
//   MUTANT_FAULT_EPOCH      the labels scratch taken as `(int*)offset`, not ws + offset -> case 9 (an
//                           illegal address)
//   MUTANT_FIXED_HYPERPARAMS  mlp_step uses 0.1f and 0.9f, not its lr and momentum     -> cases 5, 9
//   MUTANT_STRIDE_784       forward reads X with the literal 784 as its row stride      -> case 2 (odd shape)
//   MUTANT_LEGACY_STREAM    every launch on the legacy default stream, not `stream`     -> case 13
//   MUTANT_SYNC_IN_EPOCH    cudaStreamSynchronize after every step of mlp_train_epoch   -> case 13
//   MUTANT_LEAK_EPOCH       a 64 MiB cudaMalloc in every mlp_train_epoch, never freed   -> case 13
//   MUTANT_WARP_RACE        the bias column sums as a warp-synchronous reduction without
//                           __syncwarp() (racecheck reports its hazards as warnings)    -> case 12
//   MUTANT_UNCHECKED_ARGS   mlp_forward launches whatever it is given (no NULL or batch check) -> case 14
//   VARIANT_ATOMIC_BIAS     correct, not a mutant: the bias gradients summed with atomicAdd in an order
//                           that changes with every call, so reruns differ in the last bits, every time
//                           -> passes, with the gate's nondeterminism note
//   VARIANT_TF32_PRODUCTS   every matrix product's two inputs rounded to TF32 first (round to nearest, ties
//                           away: what cvt.rna.tf32.f32 does, here in integer operations), float32 sums
//   VARIANT_BF16_PRODUCTS   the same rounded to bfloat16 (round to nearest even)
//   NAIVE_PRECISION         when defined, mlp_precision() returns it (submission.h's optional entry point):
//                           tf32_products.cu and bf16_products.cu declare what they round to and pass at
//                           it; mutant_undeclared_tf32.cu rounds to TF32 and declares nothing -> cases 1,
//                           2, 4, 9 (the float32 gate); mutant_bf16_no_relu_mask.cu declares bf16 -> case 4
// Every entry point first returns MLP_ERR_INVALID_ARGUMENT for a NULL required pointer or batch <= 0
// (case 14), before enqueuing anything. Every entry point only enqueues work on `stream`: no allocation (mlp_loss reduces its row losses in
// one block instead of keeping a scratch buffer), no host synchronisation.
#include <cuda_runtime.h>
#include <math.h>

#include "submission.h"

#ifdef MUTANT_LEGACY_STREAM
#define ON(st) ((void)(st), cudaStream_t{0})  // the legacy default stream, whatever the caller passed
#else
#define ON(st) st
#endif

namespace {

// A matrix product's input as the variant rounds it (the value itself without a VARIANT_*_PRODUCTS).
// Every product of this file is naive_gemm's (the column sums are sums, not products).
__device__ __forceinline__ float product_input(float x) {
#if defined(VARIANT_TF32_PRODUCTS) || defined(VARIANT_BF16_PRODUCTS)
  unsigned b = __float_as_uint(x);
  if ((b & 0x7f800000u) == 0x7f800000u) return x;  // infinity and NaN as they are
#if defined(VARIANT_TF32_PRODUCTS)
  b = (b + 0x1000u) & ~0x1fffu;                    // 10 explicit mantissa bits, half-way away from zero
#else
  b = (b + 0x7fffu + ((b >> 16) & 1u)) & 0xffff0000u;  // 7 explicit mantissa bits, half-way to even
#endif
  return __uint_as_float(b);
#else
  return x;
#endif
}

// C[M×N] = A[M×K]·B[K×N] with optional transposed storage, bias and masks; one thread each.
// `lda`: A's row stride when it is not transposed (K, unless a mutant says otherwise).
__global__ void naive_gemm(int M, int N, int K, const float* A, bool ta, const float* B, bool tb, float* C,
                           const float* bias, bool relu, const float* mask, bool off_by_one, int lda) {
  int m = blockIdx.y * blockDim.y + threadIdx.y, n = blockIdx.x * blockDim.x + threadIdx.x;
  if ((off_by_one ? m > M : m >= M) || n >= N) return;
  float acc = 0.f;
  for (int k = 0; k < K; ++k) {
    float a = product_input(ta ? A[(size_t)k * M + m] : A[(size_t)m * lda + k]);
    float b = product_input(tb ? B[(size_t)n * K + k] : B[(size_t)k * N + n]);
    acc += a * b;
  }
  if (bias) acc += bias[n];
  if (relu) acc = fmaxf(acc, 0.f);
#ifndef MUTANT_NO_RELU_MASK
  if (mask && !(mask[(size_t)m * N + n] > 0.f)) acc = 0.f;
#endif
  C[(size_t)m * N + n] = acc;
}

int gemm(int M, int N, int K, const float* A, bool ta, const float* B, bool tb, float* C, const float* bias,
         bool relu, const float* mask, cudaStream_t st, bool off_by_one = false, int lda = 0) {
  dim3 block(16, 16), grid((N + 15) / 16, (M + 16) / 16);
  naive_gemm<<<grid, block, 0, ON(st)>>>(M, N, K, A, ta, B, tb, C, bias, relu, mask, off_by_one, lda ? lda : K);
  return cudaPeekAtLastError() == cudaSuccess ? MLP_OK : MLP_ERR_CUDA;
}

#ifdef MUTANT_RACY_TILE
// H = ReLU(X·W1 + b1) with 16×16 tiles of X and W1 in shared memory. The __syncthreads() after
// the products is missing: a fast warp loads the next tile over one a slow warp still reads.
__global__ void tiled_relu_gemm(int M, int N, int K, const float* A, const float* B, const float* bias, float* C) {
  __shared__ float As[16][16], Bs[16][16];
  int ty = threadIdx.y, tx = threadIdx.x, m = blockIdx.y * 16 + ty, n = blockIdx.x * 16 + tx;
  float acc = 0.f;
  for (int k0 = 0; k0 < K; k0 += 16) {
    As[ty][tx] = (m < M && k0 + tx < K) ? A[(size_t)m * K + k0 + tx] : 0.f;
    Bs[ty][tx] = (k0 + ty < K && n < N) ? B[(size_t)(k0 + ty) * N + n] : 0.f;
    __syncthreads();
    for (int k = 0; k < 16; ++k) acc += As[ty][k] * Bs[k][tx];
    // (missing) __syncthreads();
  }
  if (m < M && n < N) C[(size_t)m * N + n] = fmaxf(acc + bias[n], 0.f);
}
#endif

#ifdef MUTANT_SPIN_EPOCH
// Waits until the step counter reaches `target`; nothing ever increments it.
__global__ void wait_for_step(const volatile int* counter, int target) {
  while (*counter < target) {
  }
}
#endif

#ifdef MUTANT_WARP_RACE
// out[c] = Σ_r M[r, c], one block of 64 threads per column: each thread sums rows r ≡ t (mod 64),
// then a tree whose last six steps run in one warp without __syncwarp() between them (the lanes
// of a warp are not in lockstep since Volta: each step reads what another lane writes in it).
__global__ void warp_sync_colsum(int rows, int cols, const float* M, float* out) {
  __shared__ volatile float s[64];
  const int c = blockIdx.x, t = threadIdx.x;
  float acc = 0.f;
  for (int r = t; r < rows; r += 64) acc += M[(size_t)r * cols + c];
  s[t] = acc;
  __syncthreads();
  if (t < 32) {
    s[t] += s[t + 32];
    s[t] += s[t + 16];
    s[t] += s[t + 8];
    s[t] += s[t + 4];
    s[t] += s[t + 2];
    s[t] += s[t + 1];
  }
  if (t == 0) out[c] = s[0];
}
#endif

#ifdef VARIANT_ATOMIC_BIAS
// out[c] += M[r, c] for every row with atomicAdd, one thread per column adding the rows in turn from
// row `first`, wrapping around. Atomics from many threads add in whatever order the hardware takes
// them, which may or may not differ between two runs; here the order is forced to differ: `first`
// changes with every call (bias_sum's counter), so a rerun of an epoch adds every bias gradient in
// other orders, and its last bits differ every time, not by chance. `out` is zeroed first.
__global__ void atomic_colsum(int rows, int cols, const float* M, float* out, int first) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= cols) return;
  for (int k = 0; k < rows; ++k) atomicAdd(&out[c], M[(size_t)((first + k) % rows) * cols + c]);
}
#endif

// out[c] = Σ_r M[r, c] (rows × cols).
__global__ void naive_colsum(int rows, int cols, const float* M, float* out) {
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= cols) return;
  float acc = 0.f;
#ifdef MUTANT_DB_WRONG_AXIS
  for (int k = 0; k < cols; ++k) acc += (c < rows) ? M[(size_t)c * cols + k] : 0.f;  // sums a row
#else
  for (int r = 0; r < rows; ++r) acc += M[(size_t)r * cols + c];
#endif
  out[c] = acc;
}

// One block: thread t takes rows t, t + 256, ..., then thread 0 sums the threads' losses in order.
constexpr int kLossThreads = 256;
__global__ void naive_softmax_xent(int B, int O, const float* Z, const int* y, float* dZ, float* loss, int denom) {
  __shared__ float partial[kLossThreads];
  float mine = 0.f;
  for (int r = threadIdx.x; r < B; r += kLossThreads) {
    const float* z = Z + (size_t)r * O;
#ifdef MUTANT_NO_MAX_SHIFT
    float m = 0.f;
#else
    float m = z[0];
    for (int k = 1; k < O; ++k) m = fmaxf(m, z[k]);
#endif
    float sum = 0.f;
    for (int k = 0; k < O; ++k) sum += expf(z[k] - m);
    for (int k = 0; k < O; ++k) dZ[(size_t)r * O + k] = (expf(z[k] - m) / sum - (k == y[r] ? 1.f : 0.f)) / denom;
    mine += logf(sum) - (z[y[r]] - m);  // log-sum-exp form: −log(p_y) underflows at ±60
  }
  partial[threadIdx.x] = mine;
  __syncthreads();
  if (threadIdx.x == 0) {
    float acc = 0.f;
    for (int t = 0; t < kLossThreads; ++t) acc += partial[t];
    *loss = acc / denom;
  }
}

int loss_rows(MlpShape s, const float* Z, const int* labels, int batch, int denom, float* dZ, float* loss,
              cudaStream_t st);

__global__ void naive_poison(float* x) { *x = __int_as_float(0x7fc00000); }  // a quiet NaN

__global__ void naive_momentum(size_t n, float lr, float mu, float* p, float* v, const float* g) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i >= n) return;
  v[i] = mu * v[i] - lr * g[i];
#ifdef MUTANT_FLIPPED_UPDATE
  p[i] -= v[i];
#else
  p[i] += v[i];
#endif
}

__global__ void naive_gather(int nb, int I, const float* X, const int* y, const int* order, float* Xb, int* yb) {
  int r = blockIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c < I) Xb[(size_t)r * I + c] = X[(size_t)order[r] * I + c];
  if (c == 0) yb[r] = y[order[r]];
}

}  // namespace

#ifdef MUTANT_FORWARD_OVERRUN
constexpr bool kOffByOne = true;
#else
constexpr bool kOffByOne = false;
#endif

extern "C" int mlp_forward(MlpShape s, const float* params, const float* X, int batch, float* H, float* Z,
                           cudaStream_t st) {
#ifndef MUTANT_UNCHECKED_ARGS
  if (!params || !X || !H || !Z || batch <= 0) return MLP_ERR_INVALID_ARGUMENT;
#endif
#ifdef MUTANT_SILENT_FORWARD
  return MLP_OK;
#endif
  MlpOffsets o = mlp_offsets(s);
#ifdef MUTANT_RACY_TILE
  tiled_relu_gemm<<<dim3((s.hidden + 15) / 16, (batch + 15) / 16), dim3(16, 16), 0, ON(st)>>>(batch, s.hidden, s.in, X,
                                                                                        params + o.w1, params + o.b1, H);
  int e = cudaPeekAtLastError() == cudaSuccess ? MLP_OK : MLP_ERR_CUDA;
#else
#ifdef MUTANT_STRIDE_784
  const int x_stride = 784;  // the recipe's width, written in
#else
  const int x_stride = s.in;
#endif
  int e = gemm(batch, s.hidden, s.in, X, false, params + o.w1, false, H, params + o.b1, true, nullptr, st, kOffByOne,
               x_stride);
#endif
  return e ? e
           : gemm(batch, s.out, s.hidden, H, false, params + o.w2, false, Z, params + o.b2, false, nullptr, st,
                  kOffByOne);
}

namespace {
int loss_rows(MlpShape s, const float* Z, const int* labels, int batch, int denom, float* dZ, float* loss,
              cudaStream_t st) {
  naive_softmax_xent<<<1, kLossThreads, 0, ON(st)>>>(batch, s.out, Z, labels, dZ, loss, denom);
  return cudaPeekAtLastError() == cudaSuccess ? MLP_OK : MLP_ERR_CUDA;
}
}  // namespace

extern "C" int mlp_loss(MlpShape s, const float* Z, const int* labels, int batch, float* dZ, float* loss,
                        cudaStream_t st) {
  if (!Z || !labels || !dZ || !loss || batch <= 0) return MLP_ERR_INVALID_ARGUMENT;
  return loss_rows(s, Z, labels, batch, batch, dZ, loss, st);
}

namespace {
// db = column sums of `M` [rows × cols] into out.
void bias_sum(int rows, int cols, const float* M, float* out, cudaStream_t st) {
#if defined(MUTANT_WARP_RACE)
  warp_sync_colsum<<<cols, 64, 0, ON(st)>>>(rows, cols, M, out);
#elif defined(VARIANT_ATOMIC_BIAS)
  static unsigned calls = 0;  // every call starts its sums at another row (a multiplicative hash of the count)
  const int first = (int)((++calls * 2654435761u) % (unsigned)rows);
  cudaMemsetAsync(out, 0, sizeof(float) * (size_t)cols, ON(st));
  atomic_colsum<<<(unsigned)((cols + 127) / 128), 128, 0, ON(st)>>>(rows, cols, M, out, first);
#else
  naive_colsum<<<(cols + 127) / 128, 128, 0, ON(st)>>>(rows, cols, M, out);
#endif
}
}  // namespace

extern "C" int mlp_backward(MlpShape s, const float* params, const float* X, const float* H, const float* dZ,
                            int batch, float* grads, float* dH, float* dX, cudaStream_t st) {
  if (!params || !X || !H || !dZ || !grads || !dH || batch <= 0) return MLP_ERR_INVALID_ARGUMENT;
  MlpOffsets o = mlp_offsets(s);
  int e = gemm(s.hidden, s.out, batch, H, true, dZ, false, grads + o.w2, nullptr, false, nullptr, st);
  bias_sum(batch, s.out, dZ, grads + o.b2, st);
  e = e ? e : gemm(batch, s.hidden, s.out, dZ, false, params + o.w2, true, dH, nullptr, false, H, st);
  e = e ? e : gemm(s.in, s.hidden, batch, X, true, dH, false, grads + o.w1, nullptr, false, nullptr, st);
  bias_sum(batch, s.hidden, dH, grads + o.b1, st);
  if (!e && dX) e = gemm(batch, s.in, s.hidden, dH, false, params + o.w1, true, dX, nullptr, false, nullptr, st);
  return e ? e : (cudaPeekAtLastError() == cudaSuccess ? MLP_OK : MLP_ERR_CUDA);
}

extern "C" int mlp_step(float* params, float* velocity, const float* grads, size_t n, float lr, float momentum,
                        cudaStream_t st) {
  if (!params || !velocity || !grads) return MLP_ERR_INVALID_ARGUMENT;
#ifdef MUTANT_FIXED_HYPERPARAMS
  lr = 0.1f, momentum = 0.9f;  // the recipe's values, whatever the caller passed
#endif
  naive_momentum<<<(unsigned)((n + 255) / 256), 256, 0, ON(st)>>>(n, lr, momentum, params, velocity, grads);
  return cudaPeekAtLastError() == cudaSuccess ? MLP_OK : MLP_ERR_CUDA;
}

extern "C" int mlp_train_epoch(MlpShape s, float* params, float* velocity, const float* X_all,
                               const int* labels_all, const int* order, int n, int batch, float lr, float momentum,
                               float* ws, float* step_loss, cudaStream_t st) {
  if (!params || !velocity || !X_all || !labels_all || !order || !ws || !step_loss || batch <= 0)
    return MLP_ERR_INVALID_ARGUMENT;
  const MlpWorkspaceOffsets w = mlp_workspace_offsets(s, batch);  // model.h
  float* Xb = ws + w.x;
#ifdef MUTANT_FAULT_EPOCH
  int* yb = (int*)(w.labels);  // the offset itself, not ws + offset
#else
  int* yb = (int*)(ws + w.labels);
#endif
  float* H = ws + w.h;
  float* dH = ws + w.dh;
  float* Z = ws + w.z;
  float* dZ = ws + w.dz;
  float* g = ws + w.grads;
  size_t total = mlp_offsets(s).total;
#ifdef MUTANT_LEAK_EPOCH
  void* leak = nullptr;
  cudaMalloc(&leak, 64u << 20);  // never freed
#endif
  for (int t = 0; t * batch < n; ++t) {
    int nb = n - t * batch < batch ? n - t * batch : batch;
    naive_gather<<<dim3((unsigned)((s.in + 255) / 256), (unsigned)nb), 256, 0, ON(st)>>>(nb, s.in, X_all, labels_all,
                                                                                   order + (size_t)t * batch, Xb, yb);
#ifdef MUTANT_SPIN_EPOCH
    wait_for_step<<<1, 1, 0, ON(st)>>>((const int*)(ws + w.labels), t + 1 << 20);  // labels < 10: never reached
#endif
    int e = mlp_forward(s, params, Xb, nb, H, Z, st);
#ifdef MUTANT_TAIL_MEAN
    e = e ? e : loss_rows(s, Z, yb, nb, batch, dZ, step_loss + t, st);  // the mean over `batch`, not nb
#else
    e = e ? e : mlp_loss(s, Z, yb, nb, dZ, step_loss + t, st);
#endif
#ifdef MUTANT_NAN_EPOCH
    if (t == 3) naive_poison<<<1, 1, 0, ON(st)>>>(step_loss + t);
#endif
    e = e ? e : mlp_backward(s, params, Xb, H, dZ, nb, g, dH, nullptr, st);
#ifdef MUTANT_FROZEN_B2
    e = e ? e : mlp_step(params, velocity, g, mlp_offsets(s).b2, lr, momentum, st);  // stops before b2
#else
    e = e ? e : mlp_step(params, velocity, g, total, lr, momentum, st);
#endif
    if (e) return e;
#ifdef MUTANT_SYNC_IN_EPOCH
    cudaStreamSynchronize(st);  // waits for the step: the host blocks inside the epoch
#endif
  }
  return cudaPeekAtLastError() == cudaSuccess ? MLP_OK : MLP_ERR_CUDA;
}

#ifdef NAIVE_PRECISION
// The precision naive_gemm rounds its inputs to (submission.h, mlp_precision: optional).
extern "C" int mlp_precision(void) { return NAIVE_PRECISION; }
#endif
