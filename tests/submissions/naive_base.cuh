// tests/submissions/naive_base.cuh — a second, deliberately plain implementation of
// cuda/contract/submission.h (one thread per output element, no tiling), written independently of
// cuda/kernels/stepwise.cuh. Built as is (naive.cu) it must pass the gate; each mutant_*.cu defines ONE
// of the MUTANT_* macros below, and the gate must catch it in the case named beside it.
//   MUTANT_NO_RELU_MASK     dH = dZ·W2ᵀ without ⊙(H > 0)             -> case 4 (grad-check)
//   MUTANT_FLIPPED_UPDATE   p = p − v instead of p + v               -> case 5 (step), case 6
//   MUTANT_NO_MAX_SHIFT     exp(z) without subtracting the row max     -> case 3 (loss-extreme)
//   MUTANT_DB_WRONG_AXIS    db = row sums instead of column sums     -> case 4 (grad-check)
//   MUTANT_SILENT_FORWARD   mlp_forward returns MLP_OK, writes nothing -> cases 1, 2 (poisoned NaN)
//   MUTANT_NAN_EPOCH        mlp_train_epoch's losses turn NaN on step 3 -> the run names epoch and step
//   MUTANT_FROZEN_B2        the epoch's step covers W1..W2 only (n = o.b2): b2 never moves -> case 9
//   MUTANT_TAIL_MEAN        the tail batch's loss and dZ averaged over `batch`, not its rows -> case 9
//   MUTANT_FORWARD_OVERRUN  forward's bound check `m > M` (not >=): one row past H and Z -> cases 1, 2, 10
//   MUTANT_RACY_TILE        forward's layer 1 as a shared-memory tiled GEMM missing the
//                           __syncthreads() after each tile's products -> racecheck (invoke sanitize)
//   MUTANT_SPIN_EPOCH       the epoch waits on a step counter no kernel increments -> a stage timeout
//   MUTANT_FAULT_EPOCH      the labels scratch taken as `(int*)offset`, not ws + offset -> illegal address
#include <cuda_runtime.h>
#include <math.h>

#include "submission.h"

namespace {

// C[M×N] = A[M×K]·B[K×N] with optional transposed storage, bias and masks; one thread each.
__global__ void naive_gemm(int M, int N, int K, const float* A, bool ta, const float* B, bool tb, float* C,
                           const float* bias, bool relu, const float* mask, bool off_by_one) {
  int m = blockIdx.y * blockDim.y + threadIdx.y, n = blockIdx.x * blockDim.x + threadIdx.x;
  if ((off_by_one ? m > M : m >= M) || n >= N) return;
  float acc = 0.f;
  for (int k = 0; k < K; ++k) {
    float a = ta ? A[(size_t)k * M + m] : A[(size_t)m * K + k];
    float b = tb ? B[(size_t)n * K + k] : B[(size_t)k * N + n];
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
         bool relu, const float* mask, cudaStream_t st, bool off_by_one = false) {
  dim3 block(16, 16), grid((N + 15) / 16, (M + 16) / 16);
  naive_gemm<<<grid, block, 0, st>>>(M, N, K, A, ta, B, tb, C, bias, relu, mask, off_by_one);
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

// One thread per row, then thread 0 sums the row losses in order.
__global__ void naive_softmax_xent(int B, int O, const float* Z, const int* y, float* dZ, float* row_loss,
                                   float* loss, int denom) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r < B) {
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
    row_loss[r] = logf(sum) - (z[y[r]] - m);  // log-sum-exp form: −log(p_y) underflows at ±60
  }
}
__global__ void naive_mean(int B, const float* row_loss, float* loss, int denom) {
  float acc = 0.f;
  for (int r = 0; r < B; ++r) acc += row_loss[r];
  *loss = acc / denom;
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

float* row_loss_scratch(int batch) {  // grows as needed; freed at exit by the driver
  static float* p = nullptr;
  static int cap = 0;
  if (batch > cap) {
    if (p) cudaFree(p);
    if (cudaMalloc(&p, sizeof(float) * (size_t)batch) != cudaSuccess) return nullptr;
    cap = batch;
  }
  return p;
}

}  // namespace

#ifdef MUTANT_FORWARD_OVERRUN
constexpr bool kOffByOne = true;
#else
constexpr bool kOffByOne = false;
#endif

extern "C" int mlp_forward(MlpShape s, const float* params, const float* X, int batch, float* H, float* Z,
                           cudaStream_t st) {
#ifdef MUTANT_SILENT_FORWARD
  return MLP_OK;
#endif
  MlpOffsets o = mlp_offsets(s);
#ifdef MUTANT_RACY_TILE
  tiled_relu_gemm<<<dim3((s.hidden + 15) / 16, (batch + 15) / 16), dim3(16, 16), 0, st>>>(batch, s.hidden, s.in, X,
                                                                                        params + o.w1, params + o.b1, H);
  int e = cudaPeekAtLastError() == cudaSuccess ? MLP_OK : MLP_ERR_CUDA;
#else
  int e = gemm(batch, s.hidden, s.in, X, false, params + o.w1, false, H, params + o.b1, true, nullptr, st, kOffByOne);
#endif
  return e ? e
           : gemm(batch, s.out, s.hidden, H, false, params + o.w2, false, Z, params + o.b2, false, nullptr, st,
                  kOffByOne);
}

namespace {
int loss_rows(MlpShape s, const float* Z, const int* labels, int batch, int denom, float* dZ, float* loss,
              cudaStream_t st) {
  float* rl = row_loss_scratch(batch);
  if (!rl) return MLP_ERR_CUDA;
  naive_softmax_xent<<<(batch + 127) / 128, 128, 0, st>>>(batch, s.out, Z, labels, dZ, rl, loss, denom);
  naive_mean<<<1, 1, 0, st>>>(batch, rl, loss, denom);
  return cudaPeekAtLastError() == cudaSuccess ? MLP_OK : MLP_ERR_CUDA;
}
}  // namespace

extern "C" int mlp_loss(MlpShape s, const float* Z, const int* labels, int batch, float* dZ, float* loss,
                        cudaStream_t st) {
  return loss_rows(s, Z, labels, batch, batch, dZ, loss, st);
}

extern "C" int mlp_backward(MlpShape s, const float* params, const float* X, const float* H, const float* dZ,
                            int batch, float* grads, float* dH, float* dX, cudaStream_t st) {
  MlpOffsets o = mlp_offsets(s);
  int e = gemm(s.hidden, s.out, batch, H, true, dZ, false, grads + o.w2, nullptr, false, nullptr, st);
  naive_colsum<<<(s.out + 127) / 128, 128, 0, st>>>(batch, s.out, dZ, grads + o.b2);
  e = e ? e : gemm(batch, s.hidden, s.out, dZ, false, params + o.w2, true, dH, nullptr, false, H, st);
  e = e ? e : gemm(s.in, s.hidden, batch, X, true, dH, false, grads + o.w1, nullptr, false, nullptr, st);
  naive_colsum<<<(s.hidden + 127) / 128, 128, 0, st>>>(batch, s.hidden, dH, grads + o.b1);
  if (!e && dX) e = gemm(batch, s.in, s.hidden, dH, false, params + o.w1, true, dX, nullptr, false, nullptr, st);
  return e ? e : (cudaPeekAtLastError() == cudaSuccess ? MLP_OK : MLP_ERR_CUDA);
}

extern "C" int mlp_step(float* params, float* velocity, const float* grads, size_t n, float lr, float momentum,
                        cudaStream_t st) {
  naive_momentum<<<(unsigned)((n + 255) / 256), 256, 0, st>>>(n, lr, momentum, params, velocity, grads);
  return cudaPeekAtLastError() == cudaSuccess ? MLP_OK : MLP_ERR_CUDA;
}

extern "C" int mlp_train_epoch(MlpShape s, float* params, float* velocity, const float* X_all,
                               const int* labels_all, const int* order, int n, int batch, float lr, float momentum,
                               float* ws, float* step_loss, cudaStream_t st) {
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
  for (int t = 0; t * batch < n; ++t) {
    int nb = n - t * batch < batch ? n - t * batch : batch;
    naive_gather<<<dim3((unsigned)((s.in + 255) / 256), (unsigned)nb), 256, 0, st>>>(nb, s.in, X_all, labels_all,
                                                                                   order + (size_t)t * batch, Xb, yb);
#ifdef MUTANT_SPIN_EPOCH
    wait_for_step<<<1, 1, 0, st>>>((const int*)(ws + w.labels), t + 1 << 20);  // labels < 10: never reached
#endif
    int e = mlp_forward(s, params, Xb, nb, H, Z, st);
#ifdef MUTANT_TAIL_MEAN
    e = e ? e : loss_rows(s, Z, yb, nb, batch, dZ, step_loss + t, st);  // the mean over `batch`, not nb
#else
    e = e ? e : mlp_loss(s, Z, yb, nb, dZ, step_loss + t, st);
#endif
#ifdef MUTANT_NAN_EPOCH
    if (t == 3) naive_poison<<<1, 1, 0, st>>>(step_loss + t);
#endif
    e = e ? e : mlp_backward(s, params, Xb, H, dZ, nb, g, dH, nullptr, st);
#ifdef MUTANT_FROZEN_B2
    e = e ? e : mlp_step(params, velocity, g, mlp_offsets(s).b2, lr, momentum, st);  // stops before b2
#else
    e = e ? e : mlp_step(params, velocity, g, total, lr, momentum, st);
#endif
    if (e) return e;
  }
  return cudaPeekAtLastError() == cudaSuccess ? MLP_OK : MLP_ERR_CUDA;
}
