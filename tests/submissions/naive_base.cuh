// tests/submissions/naive_base.cuh — a second, deliberately plain implementation of
// cuda/submission.h (one thread per output element, no tiling), written independently of
// cuda/kernels.cuh. Built as is (naive.cu) it must pass the gate; each mutant_*.cu defines ONE
// of the MUTANT_* macros below, and the gate must catch it in the case named beside it.
//   MUTANT_NO_RELU_MASK     dH = dZ·W2ᵀ without ⊙(H > 0)             -> case 4 (grad-check)
//   MUTANT_FLIPPED_UPDATE   p = p − v instead of p + v               -> case 5 (step), case 6
//   MUTANT_NO_MAX_SHIFT     exp(z) without subtracting the row max     -> case 3 (loss-extreme)
//   MUTANT_DB_WRONG_AXIS    db = row sums instead of column sums     -> case 4 (grad-check)
//   MUTANT_SILENT_FORWARD   mlp_forward returns MLP_OK, writes nothing -> cases 1, 2 (poisoned NaN)
//   MUTANT_NAN_EPOCH        mlp_train_epoch's losses turn NaN on step 3 -> the run names epoch and step
#include <cuda_runtime.h>
#include <math.h>

#include "submission.h"

namespace {

// C[M×N] = A[M×K]·B[K×N] with optional transposed storage, bias and masks; one thread each.
__global__ void naive_gemm(int M, int N, int K, const float* A, bool ta, const float* B, bool tb, float* C,
                           const float* bias, bool relu, const float* mask) {
  int m = blockIdx.y * blockDim.y + threadIdx.y, n = blockIdx.x * blockDim.x + threadIdx.x;
  if (m >= M || n >= N) return;
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
         bool relu, const float* mask, cudaStream_t st) {
  dim3 block(16, 16), grid((N + 15) / 16, (M + 15) / 16);
  naive_gemm<<<grid, block, 0, st>>>(M, N, K, A, ta, B, tb, C, bias, relu, mask);
  return cudaPeekAtLastError() == cudaSuccess ? MLP_OK : MLP_ERR_CUDA;
}

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
                                   float* loss) {
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
    for (int k = 0; k < O; ++k) dZ[(size_t)r * O + k] = (expf(z[k] - m) / sum - (k == y[r] ? 1.f : 0.f)) / B;
    row_loss[r] = logf(sum) - (z[y[r]] - m);  // log-sum-exp form: −log(p_y) underflows at ±60
  }
}
__global__ void naive_mean(int B, const float* row_loss, float* loss) {
  float acc = 0.f;
  for (int r = 0; r < B; ++r) acc += row_loss[r];
  *loss = acc / B;
}

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

extern "C" int mlp_forward(MlpShape s, const float* params, const float* X, int batch, float* H, float* Z,
                           cudaStream_t st) {
#ifdef MUTANT_SILENT_FORWARD
  return MLP_OK;
#endif
  MlpOffsets o = mlp_offsets(s);
  int e = gemm(batch, s.hidden, s.in, X, false, params + o.w1, false, H, params + o.b1, true, nullptr, st);
  return e ? e : gemm(batch, s.out, s.hidden, H, false, params + o.w2, false, Z, params + o.b2, false, nullptr, st);
}

extern "C" int mlp_loss(MlpShape s, const float* Z, const int* labels, int batch, float* dZ, float* loss,
                        cudaStream_t st) {
  float* rl = row_loss_scratch(batch);
  if (!rl) return MLP_ERR_CUDA;
  naive_softmax_xent<<<(batch + 127) / 128, 128, 0, st>>>(batch, s.out, Z, labels, dZ, rl, loss);
  naive_mean<<<1, 1, 0, st>>>(batch, rl, loss);
  return cudaPeekAtLastError() == cudaSuccess ? MLP_OK : MLP_ERR_CUDA;
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
  int* yb = (int*)(ws + w.labels);
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
    int e = mlp_forward(s, params, Xb, nb, H, Z, st);
    e = e ? e : mlp_loss(s, Z, yb, nb, dZ, step_loss + t, st);
#ifdef MUTANT_NAN_EPOCH
    if (t == 3) naive_poison<<<1, 1, 0, st>>>(step_loss + t);
#endif
    e = e ? e : mlp_backward(s, params, Xb, H, dZ, nb, g, dH, nullptr, st);
    e = e ? e : mlp_step(params, velocity, g, total, lr, momentum, st);
    if (e) return e;
  }
  return cudaPeekAtLastError() == cudaSuccess ? MLP_OK : MLP_ERR_CUDA;
}
