// cuda/stationary_host.cuh — the host side of the weight-stationary epoch (cuda/stationary.cuh):
// choosing the cluster shape, the co-residency check, packing the inputs as bytes, the launch.
#pragma once
#include <cuda_runtime.h>

#include <string>

#include "stationary.cuh"

namespace mlp {
// What stationary_prepare chose and allocated; stationary_epoch uses it.
struct StationaryPlan {
  int cluster = 0;           // blocks per cluster (8, or 4 as the fallback)
  int clusters = 0;          // 128 / cluster
  int max_active_clusters = 0;  // cudaOccupancyMaxActiveClusters for that shape
  bool cooperative = true;   // launched with the cooperative attribute (false when refused)
  size_t smem = 0;           // dynamic shared memory per block (bytes)
  int n_total = 0;
  uint8_t* xb = nullptr;     // [n_total][cluster][XB] packed input bytes
  float* slots = nullptr;    // [2][clusters][128][10]
  unsigned* counters = nullptr;  // [cluster][32]
  int* error_flag = nullptr;     // [1]
  unsigned arrivals = 0;     // each counter's value (mod 2^32) after the launches so far
  std::string what;          // "clusters of 8 × 16, ..." for logs
};

inline void stationary_release(StationaryPlan* p) {
  if (!p) return;
  cudaFree(p->xb);
  cudaFree(p->slots);
  cudaFree(p->counters);
  cudaFree(p->error_flag);
  *p = StationaryPlan{};
}

namespace wstat {
template <int CL>
inline cudaError_t max_clusters(int* out) {
  using C = Cfg<CL>;
  cudaError_t e = cudaFuncSetAttribute(k_stationary_epoch<CL>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)C::kSmemBytes);
  if (e != cudaSuccess) return e;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(kBlocks);
  cfg.blockDim = dim3(kThreads);
  cfg.dynamicSmemBytes = C::kSmemBytes;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = CL;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  return cudaOccupancyMaxActiveClusters(out, k_stationary_epoch<CL>, &cfg);
}

template <int CL>
inline int prepare_as(StationaryPlan* p, const float* X_all, int n_total, cudaStream_t stream) {
  using C = Cfg<CL>;
  p->cluster = CL;
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
  p->what = "clusters of " + std::to_string(CL) + " x " + std::to_string(C::kClusters) + ", " +
            std::to_string(C::kSmemBytes) + " B shared/block, " + std::to_string(C::kXBuf) + " input buffer(s)";
  return MLP_OK;
}

template <int CL>
inline cudaError_t launch_as(StationaryPlan* p, const Args& args, cudaStream_t stream) {
  using C = Cfg<CL>;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(kBlocks);
  cfg.blockDim = dim3(kThreads);
  cfg.dynamicSmemBytes = C::kSmemBytes;
  cfg.stream = stream;
  cudaLaunchAttribute attr[2];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = CL;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  attr[1].id = cudaLaunchAttributeCooperative;
  attr[1].val.cooperative = 1;
  cfg.attrs = attr;
  cfg.numAttrs = p->cooperative ? 2 : 1;
  cudaError_t e = cudaLaunchKernelEx(&cfg, k_stationary_epoch<CL>, args);
  if (e != cudaSuccess && p->cooperative) {
    // The cooperative attribute with clusters refused: co-residency then rests on the occupancy
    // check in stationary_prepare (all clusters fit at once) and the wait's timeout.
    (void)cudaGetLastError();
    p->cooperative = false;
    cfg.numAttrs = 1;
    e = cudaLaunchKernelEx(&cfg, k_stationary_epoch<CL>, args);
  }
  return e;
}
}  // namespace wstat

// Chooses the cluster shape (8, else 4; `force_cluster` 8 or 4 to pick one), checks that every
// cluster of it can be resident at once, allocates the plan's buffers and packs X_all
// [n_total × 784] (float32 p/255) into bytes. Synchronises `stream`. Outside the timed epoch.
// MLP_ERR_UNSUPPORTED: not the recipe's shape, batch > 128, no clusters, too few co-resident
// clusters, or X_all not 8-bit pixels over 255.
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
  if (major < 9 || !cluster_ok) return MLP_ERR_UNSUPPORTED;
  stationary_release(p);
  // A shape the device cannot take (too little shared memory, say) counts as 0 clusters.
  int m8 = 0, m4 = 0;
  if (force_cluster != 4 && wstat::max_clusters<8>(&m8) != cudaSuccess) m8 = 0, (void)cudaGetLastError();
  if (force_cluster != 8 && wstat::max_clusters<4>(&m4) != cudaSuccess) m4 = 0, (void)cudaGetLastError();
  int st;
  if (force_cluster != 4 && m8 >= wstat::Cfg<8>::kClusters) {
    st = wstat::prepare_as<8>(p, X_all, n_total, stream);
    p->max_active_clusters = m8;
  } else if (force_cluster != 8 && m4 >= wstat::Cfg<4>::kClusters) {
    st = wstat::prepare_as<4>(p, X_all, n_total, stream);
    p->max_active_clusters = m4;
  } else {
    return MLP_ERR_UNSUPPORTED;
  }
  if (st != MLP_OK) stationary_release(p);
  return st;
}

// One epoch (submission.h's mlp_train_epoch semantics, at the recipe's shape): params and
// velocity updated in place, step_loss[t] the mean loss of step t. Asynchronous on `stream`.
inline int stationary_epoch(StationaryPlan* p, float* params, float* velocity, const int* labels,
                            const int* order, int n_samples, int batch, float lr, float momentum,
                            float* step_loss, cudaStream_t stream) {
  if (!p || !p->xb || !params || !velocity || !labels || !order || !step_loss || n_samples < 1 || batch < 1)
    return MLP_ERR_INVALID_ARGUMENT;
  if (batch > wstat::kRows || n_samples > p->n_total) return MLP_ERR_UNSUPPORTED;
  wstat::Args args{params, velocity, p->xb, labels, order, n_samples, batch, lr, momentum, step_loss,
                  p->slots, p->counters, p->arrivals, p->error_flag};
  const cudaError_t e = p->cluster == 8 ? wstat::launch_as<8>(p, args, stream) : wstat::launch_as<4>(p, args, stream);
  if (e != cudaSuccess) return MLP_ERR_CUDA;
  const unsigned steps = (unsigned)((n_samples + batch - 1) / batch);
  p->arrivals += (unsigned)p->clusters * steps;
  return MLP_OK;
}

}  // namespace mlp
