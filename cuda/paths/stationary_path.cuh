// cuda/paths/stationary_path.cuh — the host side of the weight-stationary epoch (cuda/kernels/stationary.cuh):
// choosing the shape <CL, U> from the device's co-resident cluster count, packing the inputs as
// bytes, the launch.
#pragma once
#include <cuda_runtime.h>

#include <string>

#include "common/precision.h"  // Precision: which form of the kernel
#include "kernels/stationary.cuh"

namespace mlp {
// What stationary_prepare chose and allocated; stationary_epoch uses it.
struct StationaryPlan {
  int cluster = 0;           // blocks per cluster (CL)
  int units = 0;             // unit columns per cluster (U)
  int clusters = 0;          // G = ceil(256 / U)
  int max_active_clusters = 0;  // cudaOccupancyMaxActiveClusters for that shape
  bool cooperative = true;   // launched with the cooperative attribute (false when refused)
  Precision precision = Precision::FP32;  // the kernel's form: FP32 (TF32 split products), TF32, BF16
  size_t smem = 0;           // dynamic shared memory per block (bytes)
  int n_total = 0;
  uint8_t* xb = nullptr;     // [n_total][cluster][XB] packed input bytes
  float* slots = nullptr;    // [2][clusters][128][10] partial logits
  unsigned* counters = nullptr;  // [cluster][32]
  int* error_flag = nullptr;     // [1]
  unsigned arrivals = 0;     // each counter's value (mod 2^32) after the launches so far
  std::string what;          // "clusters of 8 x 13 (20 units each, 4 pad), ..." for logs
  std::string tried;         // every candidate shape and its max active clusters (also on failure)
};

inline void stationary_release(StationaryPlan* p) {
  if (!p) return;
  cudaFree(p->xb);
  cudaFree(p->slots);
  cudaFree(p->counters);
  cudaFree(p->error_flag);
  const std::string tried = p->tried;
  *p = StationaryPlan{};
  p->tried = tried;
}

namespace wstat {
// The instantiated shapes, in order of preference (fastest first, by the reasoning in
// docs/PERFLOG.md): <8,16> (16 clusters, no pad; needs 16 co-resident clusters of 8), <8,20>
// (13 clusters, 4 pad units), <4,12> (22 clusters, 8 pad units; more FMAs per block).
struct Shape {
  int cl, u;
};
constexpr Shape kShapes[] = {{8, 16}, {8, 20}, {4, 12}};

// A launch of C::kGrid blocks of kThreads in clusters of CL with C::kSmemBytes of dynamic shared
// memory on `stream`; attr (2 entries) holds the cluster shape and the cooperative attribute,
// which numAttrs includes only when `cooperative`. Shared by the launch, the occupancy query and
// dev/stationary/'s launches.
template <int CL, int U>
inline cudaLaunchConfig_t cluster_launch_config(cudaLaunchAttribute (&attr)[2], bool cooperative,
                                                cudaStream_t stream = nullptr) {
  using C = Cfg<CL, U>;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(C::kGrid);
  cfg.blockDim = dim3(kThreads);
  cfg.dynamicSmemBytes = C::kSmemBytes;
  cfg.stream = stream;
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = CL;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  attr[1].id = cudaLaunchAttributeCooperative;
  attr[1].val.cooperative = 1;
  cfg.attrs = attr;
  cfg.numAttrs = cooperative ? 2 : 1;
  return cfg;
}

// The epoch kernel of a shape in the form of a precision: FP32 the split products, TF32 and BF16
// one MMA of the operands in that format (ops.cuh's Products).
template <int CL, int U>
inline void (*epoch_kernel(Precision p))(Args) {
  switch (p) {
    case Precision::TF32: return k_stationary_epoch<CL, U, Products::kTF32>;
    case Precision::BF16: return k_stationary_epoch<CL, U, Products::kBF16>;
    case Precision::FP32: break;
  }
  return k_stationary_epoch<CL, U, Products::kSplit>;
}

// Every form gets the shape's dynamic shared memory; the count is the FP32 form's (the same
// shared memory and block, one block an SM, so the same co-residency).
template <int CL, int U>
inline cudaError_t max_clusters(int* out) {
  using C = Cfg<CL, U>;
  cudaError_t e = cudaSuccess;
  for (Precision p : {Precision::FP32, Precision::TF32, Precision::BF16}) {
    e = cudaFuncSetAttribute(epoch_kernel<CL, U>(p), cudaFuncAttributeMaxDynamicSharedMemorySize, (int)C::kSmemBytes);
    if (e != cudaSuccess) return e;
  }
  cudaLaunchAttribute attr[2];
  const cudaLaunchConfig_t cfg = cluster_launch_config<CL, U>(attr, /*cooperative=*/false);
  return cudaOccupancyMaxActiveClusters(out, k_stationary_epoch<CL, U>, &cfg);
}

template <int CL, int U>
inline int prepare_as(StationaryPlan* p, const float* X_all, int n_total, cudaStream_t stream) {
  using C = Cfg<CL, U>;
  p->cluster = CL;
  p->units = U;
  p->clusters = C::kClusters;
  p->smem = C::kSmemBytes;
  p->n_total = n_total;
  if (cudaMalloc(&p->xb, (size_t)n_total * CL * C::XB) != cudaSuccess ||
      cudaMalloc(&p->slots, sizeof(float) * 2 * C::kClusters * kRows * kOut) != cudaSuccess ||
      cudaMalloc(&p->counters, sizeof(unsigned) * 32 * CL) != cudaSuccess ||
      cudaMalloc(&p->error_flag, sizeof(int)) != cudaSuccess ||
      cudaMemsetAsync(p->counters, 0, sizeof(unsigned) * 32 * CL, stream) != cudaSuccess ||
      cudaMemsetAsync(p->error_flag, 0, sizeof(int), stream) != cudaSuccess ||
      cudaMemsetAsync(p->slots, 0, sizeof(float) * 2 * C::kClusters * kRows * kOut, stream) != cudaSuccess)
    return MLP_ERR_CUDA;
  int* bad = nullptr;
  int bad_h = 0;
  if (cudaMalloc(&bad, sizeof(int)) != cudaSuccess) return MLP_ERR_CUDA;
  bool ok = cudaMemsetAsync(bad, 0, sizeof(int), stream) == cudaSuccess;
  if (ok) {
    k_stationary_pack<CL><<<1024, 256, 0, stream>>>(X_all, n_total, p->xb, bad);
    ok = cudaPeekAtLastError() == cudaSuccess &&
         cudaMemcpyAsync(&bad_h, bad, sizeof(int), cudaMemcpyDeviceToHost, stream) == cudaSuccess &&
         cudaStreamSynchronize(stream) == cudaSuccess;
  }
  cudaFree(bad);
  if (!ok) return MLP_ERR_CUDA;
  if (bad_h) return MLP_ERR_UNSUPPORTED;  // X_all is not float32(p)/255 for bytes p
  p->arrivals = 0;
  p->what = "clusters of " + std::to_string(CL) + " x " + std::to_string(C::kClusters) + " (" + std::to_string(U) +
            " units each, " + std::to_string(C::kClusters * U - kHidden) + " pad), " + std::to_string(C::kGrid) +
            " blocks, " + std::to_string(C::kSmemBytes) + " B shared/block, " + std::to_string(C::kXBuf) +
            " input buffer(s)";
  return MLP_OK;
}

template <int CL, int U>
inline cudaError_t launch_as(StationaryPlan* p, const Args& args, cudaStream_t stream) {
  cudaLaunchAttribute attr[2];
  cudaLaunchConfig_t cfg = cluster_launch_config<CL, U>(attr, p->cooperative, stream);
  void (*kernel)(Args) = epoch_kernel<CL, U>(p->precision);
  cudaError_t e = cudaLaunchKernelEx(&cfg, kernel, args);
  if (e != cudaSuccess && p->cooperative) {
    // The cooperative attribute with clusters refused: co-residency then rests on the occupancy
    // check in stationary_prepare (all clusters fit at once) and the wait's timeout.
    (void)cudaGetLastError();
    p->cooperative = false;
    cfg.numAttrs = 1;
    e = cudaLaunchKernelEx(&cfg, kernel, args);
  }
  return e;
}

// Dispatch over the instantiated shapes (kShapes); an unknown (cl, u) is cudaErrorInvalidValue.
#define MLP_WSTAT_SHAPES(X) X(8, 16) X(8, 20) X(4, 12)
inline cudaError_t max_clusters_for(int cl, int u, int* m, int* need) {
#define MLP_WSTAT_CASE(A, B) \
  if (cl == A && u == B) return *need = Cfg<A, B>::kClusters, max_clusters<A, B>(m);
  MLP_WSTAT_SHAPES(MLP_WSTAT_CASE)
#undef MLP_WSTAT_CASE
  return cudaErrorInvalidValue;
}
inline int prepare_for(int cl, int u, StationaryPlan* p, const float* X_all, int n_total, cudaStream_t stream) {
#define MLP_WSTAT_CASE(A, B) \
  if (cl == A && u == B) return prepare_as<A, B>(p, X_all, n_total, stream);
  MLP_WSTAT_SHAPES(MLP_WSTAT_CASE)
#undef MLP_WSTAT_CASE
  return MLP_ERR_INVALID_ARGUMENT;
}
inline cudaError_t launch_for(StationaryPlan* p, const Args& args, cudaStream_t stream) {
#define MLP_WSTAT_CASE(A, B) \
  if (p->cluster == A && p->units == B) return launch_as<A, B>(p, args, stream);
  MLP_WSTAT_SHAPES(MLP_WSTAT_CASE)
#undef MLP_WSTAT_CASE
  return cudaErrorInvalidValue;
}
}  // namespace wstat

// Chooses the shape: the first of wstat::kShapes (restricted to clusters of `force_cluster`
// when it is 8 or 4) whose G clusters can all be resident at once; allocates the plan's buffers
// and packs X_all [n_total × 784] (float32 p/255) into bytes. Synchronises `stream`. Outside the
// timed epoch. p->tried lists every candidate with its max active clusters, also on failure.
// MLP_ERR_UNSUPPORTED: not the recipe's shape, batch > 128, no clusters, too few co-resident
// clusters for every candidate, or X_all not 8-bit pixels over 255.
inline int stationary_prepare(StationaryPlan* p, MlpShape s, const float* X_all, int n_total, int batch,
                              cudaStream_t stream, int force_cluster = 0) {
  if (!p || !X_all || n_total < 1 || batch < 1) return MLP_ERR_INVALID_ARGUMENT;
  if (s.in != wstat::kIn || s.hidden != wstat::kHidden || s.out != wstat::kOut || batch > wstat::kRows)
    return MLP_ERR_UNSUPPORTED;
  if (force_cluster != 0 && force_cluster != 8 && force_cluster != 4) return MLP_ERR_INVALID_ARGUMENT;
  int dev = 0, major = 0, cluster_ok = 0;
  if (cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&cluster_ok, cudaDevAttrClusterLaunch, dev) != cudaSuccess)
    return MLP_ERR_CUDA;
  p->tried.clear();
  stationary_release(p);
  if (major < 9 || !cluster_ok) return MLP_ERR_UNSUPPORTED;
  // The softmax's IEEE divisions may call their slow path, whose stack frame grows under
  // compute-sanitizer's instrumentation past the default 1 KB: make sure of kStackBytes.
  size_t stack = 0;
  if (cudaDeviceGetLimit(&stack, cudaLimitStackSize) != cudaSuccess) return MLP_ERR_CUDA;
  if (stack < wstat::kStackBytes && cudaDeviceSetLimit(cudaLimitStackSize, wstat::kStackBytes) != cudaSuccess)
    return MLP_ERR_CUDA;
  for (const wstat::Shape sh : wstat::kShapes) {
    if (force_cluster != 0 && sh.cl != force_cluster) continue;
    // A shape the device cannot take (too little shared memory, say) counts as 0 clusters.
    int m = 0, need = 0;
    if (wstat::max_clusters_for(sh.cl, sh.u, &m, &need) != cudaSuccess) m = 0, (void)cudaGetLastError();
    p->tried += (p->tried.empty() ? "" : "; ") + std::string("<") + std::to_string(sh.cl) + "," + std::to_string(sh.u) +
                "> needs " + std::to_string(need) + ", max active " + std::to_string(m);
    if (m < need) continue;
    const int st = wstat::prepare_for(sh.cl, sh.u, p, X_all, n_total, stream);
    p->max_active_clusters = m;
    if (st != MLP_OK) stationary_release(p);
    return st;
  }
  return MLP_ERR_UNSUPPORTED;
}

// One epoch (submission.h's mlp_train_epoch semantics, at the recipe's shape): params and
// velocity updated in place, step_loss[t] the mean loss of step t. `pad_check` (optional, [2]
// ints on the device): += pad entries seen, += those not bitwise 0. Asynchronous on `stream`.
inline int stationary_epoch(StationaryPlan* p, float* params, float* velocity, const int* labels,
                            const int* order, int n_samples, int batch, float lr, float momentum,
                            float* step_loss, cudaStream_t stream, int* pad_check = nullptr) {
  if (!p || !p->xb || !params || !velocity || !labels || !order || !step_loss || n_samples < 1 || batch < 1)
    return MLP_ERR_INVALID_ARGUMENT;
  if (batch > wstat::kRows || n_samples > p->n_total) return MLP_ERR_UNSUPPORTED;
  wstat::Args args{params, velocity, p->xb, labels, order, n_samples, batch, lr, momentum, step_loss,
                  p->slots, p->counters, p->arrivals, p->error_flag, pad_check};
  const cudaError_t e = wstat::launch_for(p, args, stream);
  if (e != cudaSuccess) return MLP_ERR_CUDA;
  const unsigned steps = (unsigned)((n_samples + batch - 1) / batch);
  p->arrivals += (unsigned)p->clusters * steps;
  return MLP_OK;
}

}  // namespace mlp
