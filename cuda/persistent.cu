// cuda/persistent.cu — the persistent path: ONE cooperative launch trains a whole epoch.
//
// Launch and synchronisation latency, not arithmetic, bounds this workload (a step is ~105 MFLOP
// in 10 small kernels), so every block of a grid of one block per SM stays resident for the whole
// epoch and the phases of a step are separated by grid-wide barriers only where the data flow
// needs one. Per step, three phases and three grid.sync():
//
//   A  forward hidden   H = ReLU(X[order]·W1 + b1)              16×16 tiles of H, K split
//                                                                over the 8 warps of a block
//   B  per batch row    z = H_r·W2 + b2, softmax, loss_r,        one row per block
//                       dZ_r = (p − onehot)/B, dH_r = (dZ_r·W2ᵀ)⊙(H_r > 0)   (row-local)
//   C  gradients fused  dW1 tile = X[order]ᵀ·dH → v = μv − lr·g; p += v   32×32 tiles of W1,
//      with the update  (the tile of i-block 0 also does db1 for its columns), dW2/db2 items,
//                       and block 0 sums the row losses into step_loss[t] (fixed order)
//
// No gradient buffer and no separate update pass: each gradient element is consumed by the
// momentum update the moment its reduction finishes. Every reduction has a fixed order (warp
// partials summed in warp order), so results are bitwise reproducible. Data written inside the
// launch (parameters, velocity, H, dH, dZ, row losses) is read with ld.global.cg, bypassing the
// non-coherent L1, so no block reads a stale copy after a grid.sync().
#include <cooperative_groups.h>

#include <algorithm>

#include "cuda_check.h"
#include "paths.h"

namespace cg = cooperative_groups;

namespace mlp {
// Not in an anonymous namespace: the kernel's name in a profile reads mlp::k_persistent_epoch.

constexpr int kThreads = 256, kWarps = kThreads / 32;
constexpr int kTileA = 16;    // H tile: 16 batch rows × 16 hidden units
constexpr int kMaxKA = 1024;  // K (input features) staged per chunk in phase A
constexpr int kTileC = 32;    // W1 tile: 32 inputs × 32 hidden units
constexpr int kRowsC = 128;   // batch rows staged per chunk in phase C
constexpr int kMaxOut = 32;   // classes a block's phase B holds in registers

struct Persist {
  int in, hidden, out, n, batch;
  float lr, mu;
  float* params;
  float* velocity;
  const float* X_all;
  const int* labels_all;
  const int* order;
  float* H;         // [batch × hidden]
  float* dH;        // [batch × hidden]
  float* dZ;        // [batch × out]
  float* row_loss;  // [batch]
  float* step_loss; // [steps]
};

__device__ __forceinline__ float ldcg(const float* p) { return __ldcg(p); }

// ---- phase A: one 16×16 tile of H ------------------------------------------------------------
// Xs[k][r] (transposed) and Ws[k][c] for a chunk of K; warp w multiplies its slice of K; lane
// (g, q) holds rows 2g, 2g+1 and columns 4q..4q+3; warp partials are summed in warp order.
__device__ void phase_a_tile(const Persist& P, float* smem, int base, int nb, int tr, int tc) {
  const int I = P.in, Hd = P.hidden;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, q = lane % 4;
  const int r0 = tr * kTileA, c0 = tc * kTileA;
  const float* W1 = P.params;
  const float* b1 = P.params + (size_t)I * Hd;
  float acc[2][4] = {};
  const int kc_max = min(I, kMaxKA);
  float* Xs = smem;                       // [kc_max][16]
  float* Ws = smem + (size_t)kc_max * kTileA;  // [kc_max][16]
  for (int k0 = 0; k0 < I; k0 += kc_max) {
    const int kc = min(kc_max, I - k0);
    for (int e = tid; e < kTileA * kc; e += kThreads) {
      int r = e / kc, k = e % kc;  // walk each X row contiguously
      int row = r0 + r;
      Xs[k * kTileA + r] = row < nb ? __ldg(P.X_all + (size_t)__ldg(P.order + base + row) * I + k0 + k) : 0.f;
    }
    for (int e = tid; e < kTileA * kc; e += kThreads) {
      int k = e / kTileA, c = e % kTileA;
      int col = c0 + c;
      Ws[k * kTileA + c] = col < Hd ? ldcg(W1 + (size_t)(k0 + k) * Hd + col) : 0.f;
    }
    __syncthreads();
    const int per = (kc + kWarps - 1) / kWarps, kb = warp * per, ke = min(kc, kb + per);
    for (int k = kb; k < ke; ++k) {
      float2 a = *reinterpret_cast<const float2*>(Xs + k * kTileA + 2 * g);
      float4 b = *reinterpret_cast<const float4*>(Ws + k * kTileA + 4 * q);
      acc[0][0] = fmaf(a.x, b.x, acc[0][0]); acc[0][1] = fmaf(a.x, b.y, acc[0][1]);
      acc[0][2] = fmaf(a.x, b.z, acc[0][2]); acc[0][3] = fmaf(a.x, b.w, acc[0][3]);
      acc[1][0] = fmaf(a.y, b.x, acc[1][0]); acc[1][1] = fmaf(a.y, b.y, acc[1][1]);
      acc[1][2] = fmaf(a.y, b.z, acc[1][2]); acc[1][3] = fmaf(a.y, b.w, acc[1][3]);
    }
    __syncthreads();
  }
  float* red = smem;  // [8 warps][16][16], reuses the staging area
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) red[warp * 256 + (2 * g + i) * kTileA + 4 * q + j] = acc[i][j];
  __syncthreads();
  {
    const int r = tid / kTileA, c = tid % kTileA, row = r0 + r, col = c0 + c;
    float v = 0.f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) v += red[w * 256 + tid];
    if (row < nb && col < Hd) P.H[(size_t)row * Hd + col] = fmaxf(v + ldcg(b1 + col), 0.f);
  }
  __syncthreads();
}

// ---- phase B: one batch row --------------------------------------------------------------------
__device__ void phase_b_row(const Persist& P, float* smem, int base, int nb, int r) {
  const int Hd = P.hidden, O = P.out;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const float* W2 = P.params + (size_t)P.in * Hd + Hd;
  const float* b2 = W2 + (size_t)Hd * O;
  float part[kMaxOut];
#pragma unroll
  for (int k = 0; k < kMaxOut; ++k) part[k] = 0.f;
  for (int j = tid; j < Hd; j += kThreads) {
    float h = ldcg(P.H + (size_t)r * Hd + j);
#pragma unroll
    for (int k = 0; k < kMaxOut; ++k)
      if (k < O) part[k] = fmaf(h, ldcg(W2 + (size_t)j * O + k), part[k]);
  }
  float* red = smem;             // [8 warps][kMaxOut]
  float* zs = smem + kWarps * kMaxOut;  // [kMaxOut] logits, then dZ
#pragma unroll
  for (int k = 0; k < kMaxOut; ++k) {
    if (k >= O) break;
    float v = part[k];
    for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
    if (lane == 0) red[warp * kMaxOut + k] = v;
  }
  __syncthreads();
  if (tid < O) {
    float z = ldcg(b2 + tid);
    for (int w = 0; w < kWarps; ++w) z += red[w * kMaxOut + tid];
    zs[tid] = z;
  }
  __syncthreads();
  if (tid == 0) {
    const int y = __ldg(P.labels_all + __ldg(P.order + base + r));
    float m = zs[0];
    for (int k = 1; k < O; ++k) m = fmaxf(m, zs[k]);
    float sum = 0.f;
    for (int k = 0; k < O; ++k) sum += expf(zs[k] - m);
    P.row_loss[r] = logf(sum) - (zs[y] - m);
    const float inv = 1.f / sum, invB = 1.f / (float)nb;
    for (int k = 0; k < O; ++k) {
      float d = (expf(zs[k] - m) * inv - (k == y ? 1.f : 0.f)) * invB;
      zs[k] = d;
      P.dZ[(size_t)r * O + k] = d;
    }
  }
  __syncthreads();
  for (int j = tid; j < Hd; j += kThreads) {
    float acc = 0.f;
    for (int k = 0; k < O; ++k) acc = fmaf(zs[k], ldcg(W2 + (size_t)j * O + k), acc);
    P.dH[(size_t)r * Hd + j] = ldcg(P.H + (size_t)r * Hd + j) > 0.f ? acc : 0.f;
  }
  __syncthreads();
}

__device__ __forceinline__ void momentum(const Persist& P, size_t idx, float g) {
  float v = P.mu * ldcg(P.velocity + idx) - P.lr * g;
  P.velocity[idx] = v;
  P.params[idx] = ldcg(P.params + idx) + v;
}

// ---- phase C: one 32×32 tile of W1 (gradient, then the update) -------------------------------
// Xs[r][i] and Ds[r][j] for a chunk of batch rows; warp w takes 1/8 of the rows; lane (gi, gj)
// holds inputs 4gi..4gi+3 and hidden units 8gj..8gj+7; warp partials summed in warp order.
__device__ void phase_c_w1_tile(const Persist& P, float* smem, int base, int nb, int ti, int tj) {
  const int I = P.in, Hd = P.hidden;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, gi = lane / 4, gj = lane % 4;
  const int i0 = ti * kTileC, j0 = tj * kTileC;
  float acc[4][8] = {};
  float colsum = 0.f;  // db1 for column j0 + tid (tiles with ti == 0, tid < 32)
  float* Xs = smem;                     // [kRowsC][32]
  float* Ds = smem + kRowsC * kTileC;   // [kRowsC][32]
  for (int rc = 0; rc < nb; rc += kRowsC) {
    const int rows = min(kRowsC, nb - rc);
    for (int e = tid; e < kRowsC * kTileC; e += kThreads) {
      int r = e / kTileC, c = e % kTileC;
      int i = i0 + c, j = j0 + c;
      bool ok = r < rows;
      Xs[e] = ok && i < I ? __ldg(P.X_all + (size_t)__ldg(P.order + base + rc + r) * I + i) : 0.f;
      Ds[e] = ok && j < Hd ? ldcg(P.dH + (size_t)(rc + r) * Hd + j) : 0.f;
    }
    __syncthreads();
    const int per = kRowsC / kWarps, rb = warp * per;
    for (int r = rb; r < rb + per; ++r) {
      float4 a = *reinterpret_cast<const float4*>(Xs + r * kTileC + 4 * gi);
      float4 b0 = *reinterpret_cast<const float4*>(Ds + r * kTileC + 8 * gj);
      float4 b1 = *reinterpret_cast<const float4*>(Ds + r * kTileC + 8 * gj + 4);
      const float av[4] = {a.x, a.y, a.z, a.w}, bv[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
      for (int x = 0; x < 4; ++x)
#pragma unroll
        for (int y = 0; y < 8; ++y) acc[x][y] = fmaf(av[x], bv[y], acc[x][y]);
    }
    if (ti == 0 && tid < kTileC)
      for (int r = 0; r < kRowsC; ++r) colsum += Ds[r * kTileC + tid];
    __syncthreads();
  }
  float* red = smem;  // [8 warps][32][32], reuses the staging area
#pragma unroll
  for (int x = 0; x < 4; ++x)
#pragma unroll
    for (int y = 0; y < 8; ++y) red[warp * 1024 + (4 * gi + x) * kTileC + 8 * gj + y] = acc[x][y];
  __syncthreads();
  for (int o = tid; o < kTileC * kTileC; o += kThreads) {
    const int i = i0 + o / kTileC, j = j0 + o % kTileC;
    float g = 0.f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) g += red[w * 1024 + o];
    if (i < I && j < Hd) momentum(P, (size_t)i * Hd + j, g);
  }
  if (ti == 0 && tid < kTileC && j0 + tid < Hd) momentum(P, (size_t)I * Hd + j0 + tid, colsum);  // b1
  __syncthreads();
}

// dW2 for 32 hidden units (all classes) and, for the first item, db2; the K loop runs over the
// batch rows in order, one output per thread at a time.
__device__ void phase_c_w2_item(const Persist& P, int nb, int item) {
  const int I = P.in, Hd = P.hidden, O = P.out;
  const size_t w2 = (size_t)I * Hd + Hd, b2 = w2 + (size_t)Hd * O;
  for (int o = threadIdx.x; o < kTileC * O; o += kThreads) {
    const int j = item * kTileC + o / O, k = o % O;
    if (j >= Hd) continue;
    float g = 0.f;
    for (int r = 0; r < nb; ++r) g = fmaf(ldcg(P.H + (size_t)r * Hd + j), ldcg(P.dZ + (size_t)r * O + k), g);
    momentum(P, w2 + (size_t)j * O + k, g);
  }
  if (item == 0 && (int)threadIdx.x < O) {
    float g = 0.f;
    for (int r = 0; r < nb; ++r) g += ldcg(P.dZ + (size_t)r * O + threadIdx.x);
    momentum(P, b2 + threadIdx.x, g);
  }
}

__global__ void __launch_bounds__(kThreads, 1) k_persistent_epoch(Persist P) {
  extern __shared__ float4 smem_raw[];
  float* smem = reinterpret_cast<float*>(smem_raw);
  cg::grid_group grid = cg::this_grid();
  const int steps = (P.n + P.batch - 1) / P.batch;
  const int a_tiles_c = (P.hidden + kTileA - 1) / kTileA;
  const int c_tiles_i = (P.in + kTileC - 1) / kTileC, c_tiles_j = (P.hidden + kTileC - 1) / kTileC;
  const int w2_items = (P.hidden + kTileC - 1) / kTileC;
  for (int t = 0; t < steps; ++t) {
    const int base = t * P.batch, nb = min(P.batch, P.n - base);
    const int a_tiles = ((nb + kTileA - 1) / kTileA) * a_tiles_c;
    for (int item = blockIdx.x; item < a_tiles; item += gridDim.x)
      phase_a_tile(P, smem, base, nb, item / a_tiles_c, item % a_tiles_c);
    grid.sync();
    for (int r = blockIdx.x; r < nb; r += gridDim.x) phase_b_row(P, smem, base, nb, r);
    grid.sync();
    const int c_items = c_tiles_i * c_tiles_j + w2_items;
    for (int item = blockIdx.x; item < c_items; item += gridDim.x) {
      if (item < c_tiles_i * c_tiles_j)
        phase_c_w1_tile(P, smem, base, nb, item / c_tiles_j, item % c_tiles_j);
      else
        phase_c_w2_item(P, nb, item - c_tiles_i * c_tiles_j);
    }
    if (blockIdx.x == gridDim.x - 1 && threadIdx.x == 0) {
      float s = 0.f;
      for (int r = 0; r < nb; ++r) s += ldcg(P.row_loss + r);
      P.step_loss[t] = s / (float)nb;
    }
    grid.sync();
  }
}

namespace {
size_t smem_bytes(int in) {
  size_t a = 2 * (size_t)std::min(in, kMaxKA) * kTileA * sizeof(float);
  a = std::max(a, (size_t)kWarps * 256 * sizeof(float));
  size_t b = (size_t)(kWarps + 1) * kMaxOut * sizeof(float);
  size_t c = std::max((size_t)2 * kRowsC * kTileC, (size_t)kWarps * 1024) * sizeof(float);
  return std::max(a, std::max(b, c));
}

class PersistentPath : public KernelPath {
 public:
  std::string name() const override { return "persistent"; }
  double launches_per_step(int steps) const override { return 1.0 / steps; }
  void epoch(const EpochArgs& a) override {
    if (a.s.out > kMaxOut || a.s.out < 1)
      throw SubmissionError("persistent path supports at most " + std::to_string(kMaxOut) + " classes", MLP_ERR_UNSUPPORTED);
    const size_t smem = smem_bytes(a.s.in);
    if (!configured_) {
      int dev = 0, sms = 0, coop = 0, per_sm = 0;
      CUDA_CHECK(cudaGetDevice(&dev));
      CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
      CUDA_CHECK(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev));
      if (!coop) throw SubmissionError("persistent path: device has no cooperative launch", MLP_ERR_UNSUPPORTED);
      CUDA_CHECK(cudaFuncSetAttribute(k_persistent_epoch, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
      CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k_persistent_epoch, kThreads, smem));
      if (per_sm < 1) throw SubmissionError("persistent path: kernel does not fit on an SM", MLP_ERR_UNSUPPORTED);
      blocks_ = sms;  // one block per SM: the barrier's cost grows with the block count
      configured_ = true;
    }
    Workspace w = carve_workspace(a.s, a.batch, a.workspace);
    Persist P{a.s.in, a.s.hidden, a.s.out, a.n, a.batch, a.lr, a.momentum, a.params, a.velocity, a.X_all,
              a.labels_all, a.order, w.H, w.dH, w.dZ, w.grads /* row losses: first `batch` floats */, a.step_loss};
    void* args[] = {&P};
    CUDA_CHECK(cudaLaunchCooperativeKernel((const void*)k_persistent_epoch, dim3((unsigned)blocks_), dim3(kThreads),
                                           args, smem, a.stream));
    CUDA_CHECK_LAUNCH("k_persistent_epoch");
  }

 private:
  bool configured_ = false;
  int blocks_ = 0;
};

}  // namespace

std::unique_ptr<KernelPath> make_persistent_path() { return std::make_unique<PersistentPath>(); }

}  // namespace mlp
