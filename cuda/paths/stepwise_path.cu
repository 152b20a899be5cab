// cuda/paths/stepwise_path.cu — launch sequences of the kernel paths. Each path's kernel list sits beside
// its code; the counts are what `invoke profile` checks against Nsight Systems.
#include "paths/kernel_path.h"
#include "paths/registry.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "common/cuda_check.h"
#include "common/declared_precision.h"
#include "kernels/stepwise.cuh"
#include "paths/epoch_graph.h"

namespace mlp {

Workspace carve_workspace(MlpShape s, int batch, float* ws) {
  const MlpWorkspaceOffsets o = mlp_workspace_offsets(s, batch);
  Workspace w;
  w.Xb = ws + o.x;
  w.yb = reinterpret_cast<int*>(ws + o.labels);  // int32 in float-sized slots
  w.H = ws + o.h;
  w.dH = ws + o.dh;
  w.Z = ws + o.z;
  w.dZ = ws + o.dz;
  w.grads = ws + o.grads;
  return w;
}

const char* status_name(int status) { return mlp_status_name(status); }

// ---- shared launches -------------------------------------------------------------------------
namespace {
constexpr int kEw = 256;  // threads of the elementwise kernels

// The stepwise GEMMs' and column sums' accumulator (MLP_ACCUM, make ACCUM=...).
std::string stepwise_accumulator() { return sizeof(Accum) == 8 ? "float64" : "float32"; }

// Multiprocessors (split-K sizes its grids by them): effective_limits(), caps included.
int sm_count() { return effective_limits().sms; }

// Launches the GEMM `kernel` of binding Op (cuda/kernels/stepwise.cuh) for the layer widths `s` and
// `batch` rows: the problem (M, N, K), the grid, the threads and the kernel's name all come from
// Op. A, B, C as GemmArgs documents them; `extra` is the epilogue's operand (the bias of
// Epi::Bias and Epi::BiasRelu, the mask of Epi::ReluMask), passed exactly when it has one.
template <class Op, class... Extra>
void gemm(void (*kernel)(GemmArgs<Op>), MlpShape s, int batch, cudaStream_t st, const float* A, const float* B,
          float* C, Extra... extra) {
  using T = typename Op::Tile;
  constexpr bool uses_bias = Op::EPI == Epi::Bias || Op::EPI == Epi::BiasRelu, uses_mask = Op::EPI == Epi::ReluMask;
  static_assert(sizeof...(Extra) == (uses_bias || uses_mask ? 1 : 0), "pass the epilogue's bias or mask, nothing else");
  const float* ops[] = {static_cast<const float*>(extra)..., nullptr};
  const GemmDims d = Op::dims(s, batch);
  const GemmLaunch g = gemm_launch<T>(d, sm_count());
  if (g.grid.y > 65535u)
    throw SubmissionError(std::string(Op::kName) + ": M = " + std::to_string(d.M) + " needs " +
                              std::to_string(g.grid.y) + " row tiles of " + std::to_string(T::BM) +
                              ", over the grid's 65535: use fewer rows or narrower layers",
                          MLP_ERR_UNSUPPORTED);
  const GemmArgs<Op> args{d, g.k_chunk, A, B, C, uses_bias ? ops[0] : nullptr, uses_mask ? ops[0] : nullptr};
  kernel<<<g.grid, tile_threads<T>(), 0, st>>>(args);
  CUDA_CHECK_LAUNCH(Op::kName);
}

void launch_gather(MlpShape s, const EpochArgs& a, int t, int nb, const Workspace& w) {
  size_t n = (size_t)nb * s.in;
  k_gather_batch<<<elementwise_blocks(n, kEw), kEw, 0, a.stream>>>(nb, s.in, a.X_all, a.labels_all,
                                                                    a.order + (size_t)t * a.batch, w.Xb, w.yb);
  CUDA_CHECK_LAUNCH("k_gather_batch");
}
}  // namespace

void launch_forward_fused(MlpShape s, const float* params, const float* X, int batch, float* H,
                          float* Z, cudaStream_t st) {
  MlpOffsets o = mlp_offsets(s);
  gemm(k_fwd_hidden_bias_relu, s, batch, st, X, params + o.w1, H, params + o.b1);
  gemm(k_fwd_logits_bias, s, batch, st, H, params + o.w2, Z, params + o.b2);
}

void launch_loss(MlpShape s, const float* Z, const int* labels, int batch, float* dZ, float* loss,
                 cudaStream_t st) {
  k_softmax_xent<<<1, kSoftmaxThreads, 0, st>>>(batch, s.out, Z, labels, dZ, loss);
  CUDA_CHECK_LAUNCH("k_softmax_xent");
}

void launch_backward_fused(MlpShape s, const float* params, const float* X, const float* H,
                           const float* dZ, int batch, float* grads, float* dH, float* dX,
                           cudaStream_t st) {
  MlpOffsets o = mlp_offsets(s);
  gemm(k_dW2, s, batch, st, H, dZ, grads + o.w2);
  k_colsum<Col::db2><<<(s.out + kColsumCols - 1) / kColsumCols, kColsumCols * kColsumSlices, 0, st>>>(batch, s.out, dZ, grads + o.b2);
  CUDA_CHECK_LAUNCH("k_colsum<db2>");
  gemm(k_dH_relu_mask, s, batch, st, dZ, params + o.w2, dH, H);
  gemm(k_dW1, s, batch, st, X, dH, grads + o.w1);
  k_colsum<Col::db1><<<(s.hidden + kColsumCols - 1) / kColsumCols, kColsumCols * kColsumSlices, 0, st>>>(batch, s.hidden, dH, grads + o.b1);
  CUDA_CHECK_LAUNCH("k_colsum<db1>");
  if (dX) {
    gemm(k_dX, s, batch, st, dH, params + o.w1, dX);
  }
}

void launch_momentum_flat(float* params, float* velocity, const float* grads, size_t n, float lr,
                          float momentum, cudaStream_t st) {
  k_momentum_flat<<<elementwise_blocks(n, kEw), kEw, 0, st>>>(n, lr, momentum, params, velocity, grads);
  CUDA_CHECK_LAUNCH("k_momentum_flat");
}

// ---- fused: 10 launches per step ---------------------------------------------------------------
//  1 k_gather_batch           Xb, yb = X_all[order], labels_all[order]
//  2 k_fwd_hidden_bias_relu   H  = ReLU(Xb·W1 + b1)
//  3 k_fwd_logits_bias        Z  = H·W2 + b2
//  4 k_softmax_xent           loss, dZ = (softmax(Z) − onehot)/B
//  5 k_dW2                    dW2 = Hᵀ·dZ
//  6 k_colsum<db2>            db2 = colsum(dZ)
//  7 k_dH_relu_mask           dH  = (dZ·W2ᵀ) ⊙ (H > 0)
//  8 k_dW1                    dW1 = Xbᵀ·dH
//  9 k_colsum<db1>            db1 = colsum(dH)
// 10 k_momentum_flat          v = μv − lr·g ; p += v   over the whole flat buffer
void fused_epoch(const EpochArgs& a) {
  const MlpShape s = a.s;
  Workspace w = carve_workspace(s, a.batch, a.workspace);
  size_t total = mlp_offsets(s).total;
  int steps = (a.n + a.batch - 1) / a.batch;
  for (int t = 0; t < steps; ++t) {
    int nb = std::min(a.batch, a.n - t * a.batch);
    launch_gather(s, a, t, nb, w);
    launch_forward_fused(s, a.params, w.Xb, nb, w.H, w.Z, a.stream);
    launch_loss(s, w.Z, w.yb, nb, w.dZ, a.step_loss + t, a.stream);
    launch_backward_fused(s, a.params, w.Xb, w.H, w.dZ, nb, w.grads, w.dH, nullptr, a.stream);
    launch_momentum_flat(a.params, a.velocity, w.grads, total, a.lr, a.momentum, a.stream);
  }
}

// ---- unfused: 17 launches per step -------------------------------------------------------------
//  1 k_gather_batch
//  2 k_fwd_hidden_gemm        A1 = Xb·W1
//  3 k_add_bias<hidden>       A1 += b1
//  4 k_relu                   H = max(A1, 0)          (in place)
//  5 k_fwd_logits_gemm        Z = H·W2
//  6 k_add_bias<logits>       Z += b2
//  7 k_softmax_xent
//  8 k_dW2
//  9 k_colsum<db2>
// 10 k_dH_gemm                dH = dZ·W2ᵀ
// 11 k_relu_mask              dH ⊙= (H > 0)
// 12 k_dW1
// 13 k_colsum<db1>
// 14–17 k_momentum_tensor<W1>, <b1>, <W2>, <b2>
namespace {
void unfused_epoch(const EpochArgs& a) {
  const MlpShape s = a.s;
  const MlpOffsets o = mlp_offsets(s);
  Workspace w = carve_workspace(s, a.batch, a.workspace);
  cudaStream_t st = a.stream;
  int steps = (a.n + a.batch - 1) / a.batch;
  for (int t = 0; t < steps; ++t) {
    int nb = std::min(a.batch, a.n - t * a.batch);
    size_t nh = (size_t)nb * s.hidden, nz = (size_t)nb * s.out;
    launch_gather(s, a, t, nb, w);
    gemm(k_fwd_hidden_gemm, s, nb, st, w.Xb, a.params + o.w1, w.H);
    k_add_bias<Layer::hidden><<<elementwise_blocks(nh), kEw, 0, st>>>(nb, s.hidden, w.H, a.params + o.b1);
    CUDA_CHECK_LAUNCH("k_add_bias<hidden>");
    k_relu<<<elementwise_blocks(nh), kEw, 0, st>>>(nh, w.H);
    CUDA_CHECK_LAUNCH("k_relu");
    gemm(k_fwd_logits_gemm, s, nb, st, w.H, a.params + o.w2, w.Z);
    k_add_bias<Layer::logits><<<elementwise_blocks(nz), kEw, 0, st>>>(nb, s.out, w.Z, a.params + o.b2);
    CUDA_CHECK_LAUNCH("k_add_bias<logits>");
    launch_loss(s, w.Z, w.yb, nb, w.dZ, a.step_loss + t, st);
    gemm(k_dW2, s, nb, st, w.H, w.dZ, w.grads + o.w2);
    k_colsum<Col::db2><<<(s.out + kColsumCols - 1) / kColsumCols, kColsumCols * kColsumSlices, 0, st>>>(nb, s.out, w.dZ, w.grads + o.b2);
    CUDA_CHECK_LAUNCH("k_colsum<db2>");
    gemm(k_dH_gemm, s, nb, st, w.dZ, a.params + o.w2, w.dH);
    k_relu_mask<<<elementwise_blocks(nh), kEw, 0, st>>>(nh, w.dH, w.H);
    CUDA_CHECK_LAUNCH("k_relu_mask");
    gemm(k_dW1, s, nb, st, w.Xb, w.dH, w.grads + o.w1);
    k_colsum<Col::db1><<<(s.hidden + kColsumCols - 1) / kColsumCols, kColsumCols * kColsumSlices, 0, st>>>(nb, s.hidden, w.dH, w.grads + o.b1);
    CUDA_CHECK_LAUNCH("k_colsum<db1>");
    auto upd = [&](auto kernel, size_t off, size_t n) {
      kernel<<<elementwise_blocks(n), kEw, 0, st>>>(n, a.lr, a.momentum, a.params + off, a.velocity + off, w.grads + off);
      CUDA_CHECK_LAUNCH("k_momentum_tensor");
    };
    upd(k_momentum_tensor<Tensor::W1>, o.w1, o.b1 - o.w1);
    upd(k_momentum_tensor<Tensor::b1>, o.b1, o.w2 - o.b1);
    upd(k_momentum_tensor<Tensor::W2>, o.w2, o.b2 - o.w2);
    upd(k_momentum_tensor<Tensor::b2>, o.b2, o.total - o.b2);
  }
}

template <class Op>
KernelUse gemm_use(void (*k)(GemmArgs<Op>)) {
  return {reinterpret_cast<const void*>(k), tile_threads<typename Op::Tile>(), Op::kName};
}
}  // namespace

PathFit fit_ordinary_launches(const std::vector<KernelUse>& uses, const DeviceLimits& lim) {
  int threads = 0;
  long long smem = 0;
  for (const KernelUse& u : uses) {
    cudaFuncAttributes fa;
    KernelNeeds k = stepwise_needs(u.name, u.threads, 0);
    const cudaError_t e = cudaFuncGetAttributes(&fa, u.fn);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      k.refused = std::string("cudaFuncGetAttributes: ") + cudaGetErrorString(e);
    } else {
      k.static_smem = (long long)fa.sharedSizeBytes;
      k.regs = fa.numRegs;
      if (fa.maxThreadsPerBlock < u.threads)
        k.refused = std::to_string(u.threads) + " threads > its maximum " + std::to_string(fa.maxThreadsPerBlock);
    }
    const std::string why = why_not(k, lim);
    if (!why.empty()) return PathFit{-1, "", std::string(u.name) + ": " + why};
    threads = std::max(threads, u.threads);
    smem = std::max(smem, k.static_smem);
  }
  return PathFit{0, "ordinary launches of <= " + std::to_string(threads) + " threads, <= " + std::to_string(smem) +
                        " B static shared/block", ""};
}

namespace {
std::vector<KernelUse> fused_kernels() {
  return {gemm_use(k_fwd_hidden_bias_relu), gemm_use(k_fwd_logits_bias), gemm_use(k_dW2), gemm_use(k_dH_relu_mask),
          gemm_use(k_dW1), {reinterpret_cast<const void*>(&k_softmax_xent), kSoftmaxThreads, "k_softmax_xent"},
          {reinterpret_cast<const void*>(&k_colsum<Col::db1>), kColsumCols * kColsumSlices, "k_colsum"},
          {reinterpret_cast<const void*>(&k_momentum_flat), kEw, "k_momentum_flat"},
          {reinterpret_cast<const void*>(&k_gather_batch), kEw, "k_gather_batch"}};
}
std::vector<KernelUse> unfused_kernels() {
  return {gemm_use(k_fwd_hidden_gemm), gemm_use(k_fwd_logits_gemm), gemm_use(k_dW2), gemm_use(k_dH_gemm),
          gemm_use(k_dW1), {reinterpret_cast<const void*>(&k_softmax_xent), kSoftmaxThreads, "k_softmax_xent"},
          {reinterpret_cast<const void*>(&k_colsum<Col::db1>), kColsumCols * kColsumSlices, "k_colsum"},
          {reinterpret_cast<const void*>(&k_add_bias<Layer::hidden>), kEw, "k_add_bias"},
          {reinterpret_cast<const void*>(&k_relu), kEw, "k_relu"},
          {reinterpret_cast<const void*>(&k_relu_mask), kEw, "k_relu_mask"},
          {reinterpret_cast<const void*>(&k_momentum_tensor<Tensor::W1>), kEw, "k_momentum_tensor"},
          {reinterpret_cast<const void*>(&k_gather_batch), kEw, "k_gather_batch"}};
}

class FusedPath : public KernelPath {
 public:
  std::string name() const override { return "fused"; }
  std::string accumulator() const override { return stepwise_accumulator(); }
  PathFit fit(const DeviceLimits& lim, MlpShape, int) override { return fit_ordinary_launches(fused_kernels(), lim); }
  double launches_per_step(int) const override { return 10; }
  void epoch(const EpochArgs& a) override { fused_epoch(a); }
};

class UnfusedPath : public KernelPath {
 public:
  std::string name() const override { return "unfused"; }
  std::string accumulator() const override { return stepwise_accumulator(); }
  PathFit fit(const DeviceLimits& lim, MlpShape, int) override { return fit_ordinary_launches(unfused_kernels(), lim); }
  double launches_per_step(int) const override { return 17; }
  void epoch(const EpochArgs& a) override { unfused_epoch(a); }
};

// ---- graph: the fused epoch's 10·steps kernels captured once, replayed per epoch ----------------
// (paths/epoch_graph.h: the order read from the graph's own buffer, re-captured on any change).
class GraphPath : public KernelPath {
 public:
  std::string name() const override { return "graph"; }
  std::string accumulator() const override { return stepwise_accumulator(); }
  PathFit fit(const DeviceLimits& lim, MlpShape, int) override {
    PathFit f = fit_ordinary_launches(fused_kernels(), lim);
    if (f.runs()) f.config = "the fused epoch as one CUDA graph: " + f.config;
    return f;
  }
  double launches_per_step(int) const override { return 10; }
  void epoch(const EpochArgs& a) override {
    if (!graph_.current(a)) graph_.capture(a, fused_epoch);
    graph_.launch(a);
  }

 private:
  EpochGraph graph_;
};

// A linked learner submission: its mlp_train_epoch is the whole path.
class SubmissionPath : public KernelPath {
 public:
  std::string name() const override { return kSubmissionPath; }
  std::string accumulator() const override { return "unknown"; }
  // What the submission declares (mlp_precision(), optional; FP32 when not defined).
  Precision precision() const override { return declared_precision().precision; }
  PathFit fit(const DeviceLimits&, MlpShape, int) override { return PathFit{0, "the submission's own launches", ""}; }
  double launches_per_step(int) const override { return -1; }
  void epoch(const EpochArgs& a) override {
    int st = mlp_train_epoch(a.s, a.params, a.velocity, a.X_all, a.labels_all, a.order, a.n, a.batch, a.lr,
                             a.momentum, a.workspace, a.step_loss, a.stream);
    if (st != MLP_OK) throw SubmissionError(std::string("mlp_train_epoch returned ") + status_name(st), st);
  }
};
}  // namespace

std::unique_ptr<KernelPath> make_path(const std::string& name) {
  if (name == "fused") return std::make_unique<FusedPath>();
  if (name == "unfused") return std::make_unique<UnfusedPath>();
  if (name == "graph") return std::make_unique<GraphPath>();
  if (name == "persistent") return make_persistent_path();
  if (name == "persistent2") return make_persistent2_path();
  if (name == "persistent2-tf32") return make_persistent2_path(Precision::TF32);
  if (name == "persistent2-bf16") return make_persistent2_path(Precision::BF16);
  if (name == "stationary") return make_stationary_path();
  if (name == "tiled") return make_tiled_path();
  if (name == "stationary-tf32") return make_stationary_path(Precision::TF32);
  if (name == "stationary-bf16") return make_stationary_path(Precision::BF16);
  if (name == "tiled-tf32") return make_tiled_path(Precision::TF32);
  if (name == "tiled-bf16") return make_tiled_path(Precision::BF16);
  if (name == kSubmissionPath) return std::make_unique<SubmissionPath>();
  return nullptr;  // every name of paths/registry.h has a branch above (tests/test_catalog.py)
}

DeviceLimits query_device_limits() {
  int dev = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  auto attr = [dev](cudaDeviceAttr a) {
    int v = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&v, a, dev));
    return v;
  };
  DeviceLimits l;
  l.cc = attr(cudaDevAttrComputeCapabilityMajor) * 10 + attr(cudaDevAttrComputeCapabilityMinor);
  l.sms = attr(cudaDevAttrMultiProcessorCount);
  l.smem_per_block_optin = attr(cudaDevAttrMaxSharedMemoryPerBlockOptin);
  l.smem_per_sm = attr(cudaDevAttrMaxSharedMemoryPerMultiprocessor);
  l.reserved_smem_per_block = attr(cudaDevAttrReservedSharedMemoryPerBlock);
  l.threads_per_sm = attr(cudaDevAttrMaxThreadsPerMultiProcessor);
  l.threads_per_block = attr(cudaDevAttrMaxThreadsPerBlock);
  l.regs_per_sm = attr(cudaDevAttrMaxRegistersPerMultiprocessor);
  l.max_blocks_per_sm = attr(cudaDevAttrMaxBlocksPerMultiprocessor);
  l.cooperative = attr(cudaDevAttrCooperativeLaunch) != 0;
  l.clusters = l.cc >= 90 && attr(cudaDevAttrClusterLaunch) != 0;
  return l;
}

namespace {
DeviceLimits g_limits;
bool g_limits_set = false;
}  // namespace
void set_effective_limits(const DeviceLimits& lim) {
  g_limits = lim;
  g_limits_set = true;
}
const DeviceLimits& effective_limits() {
  if (!g_limits_set) set_effective_limits(query_device_limits());
  return g_limits;
}

const void* probe_kernel() { return reinterpret_cast<const void*>(&k_momentum_flat); }

namespace {
__global__ void k_hold(long long cycles) {
  const long long t0 = clock64();
  while (clock64() - t0 < cycles) {
  }
}
}  // namespace

void hold_stream(cudaStream_t stream) {
  k_hold<<<1, 1, 0, stream>>>(kHoldCycles);
  CUDA_CHECK(cudaGetLastError());
}

GpuEval evaluate_on_device(MlpShape s, const float* params, const float* X, const int* labels_host, int n,
                           float* scratch, int chunk, cudaStream_t st) {
  float* H = scratch;
  float* Z = scratch + (size_t)chunk * s.hidden;
  std::vector<float> z((size_t)chunk * s.out);
  int correct = 0;
  double loss = 0.0;
  for (int r0 = 0; r0 < n; r0 += chunk) {
    int nb = std::min(chunk, n - r0);
    launch_forward_fused(s, params, X + (size_t)r0 * s.in, nb, H, Z, st);
    CUDA_CHECK(cudaMemcpyAsync(z.data(), Z, sizeof(float) * (size_t)nb * s.out, cudaMemcpyDeviceToHost, st));
    CUDA_CHECK(cudaStreamSynchronize(st));
    for (int r = 0; r < nb; ++r) {
      const float* zr = z.data() + (size_t)r * s.out;
      int arg = (int)(std::max_element(zr, zr + s.out) - zr);
      int y = labels_host[r0 + r];
      correct += arg == y;
      double m = zr[arg], sum = 0.0;
      for (int k = 0; k < s.out; ++k) sum += std::exp((double)zr[k] - m);
      loss += std::log(sum) + m - zr[y];
    }
  }
  return {(double)correct / n, loss / n};
}

}  // namespace mlp
