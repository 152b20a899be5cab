// cuda/paths/persistent_path.cu — the persistent paths: ONE cooperative launch trains a whole epoch.
//   persistent   k_persistent_epoch: three phases and three grid barriers a step (where shared
//                memory is 64 KB a block, k_persistent_epoch_k512: phase A stages 512 inputs a chunk)
//   persistent2  k_persistent2_epoch: two barriers a step (opt-in: only with --paths persistent2)
//   persistent2-tf32, persistent2-bf16  the same epoch with the big products' inputs rounded to TF32
//                or BF16 (k_persistent2_epoch_tf32 / _bf16; opt-in), float32 sums
// The phases and their tiles are in cuda/kernels/persistent.cuh, the launch in cuda/paths/persistent_path.h;
// docs/PERFLOG.md has what each change measured, dev/persistent_phases.cu where the time goes.
#include "paths/persistent_path.h"

namespace mlp {

__global__ void __launch_bounds__(kThreads, 1) k_persistent_epoch(Persist P) {
  extern __shared__ float4 smem_raw[];  // persistent_smem_bytes(P.s.in, false), 16-byte aligned
  persistent_epoch(P, reinterpret_cast<float*>(smem_raw));
}

// The same epoch with phase A staging kSmallKA inputs a chunk (64 KB of shared memory per block:
// sm_75 and devices capped to it). Same arithmetic, another summation order in phase A.
__global__ void __launch_bounds__(kThreads, 1) k_persistent_epoch_k512(Persist P) {
  extern __shared__ float4 smem_raw[];
  persistent_epoch<StagingShipped, kSmallKA>(P, reinterpret_cast<float*>(smem_raw));
}

__global__ void __launch_bounds__(kThreads, 1) k_persistent2_epoch(Persist P) {
  extern __shared__ float4 smem_raw[];
  persistent2_epoch(P, reinterpret_cast<float*>(smem_raw));
}

__global__ void __launch_bounds__(kThreads, 1) k_persistent2_epoch_tf32(Persist P) {
  extern __shared__ float4 smem_raw[];
  persistent2_epoch<StagingShipped, Precision::TF32>(P, reinterpret_cast<float*>(smem_raw));
}

__global__ void __launch_bounds__(kThreads, 1) k_persistent2_epoch_bf16(Persist P) {
  extern __shared__ float4 smem_raw[];
  persistent2_epoch<StagingShipped, Precision::BF16>(P, reinterpret_cast<float*>(smem_raw));
}

std::unique_ptr<KernelPath> make_persistent_path() {
  return std::make_unique<PersistentPath>(
      "persistent",
      std::vector<PersistentKernel>{{kMaxKA, reinterpret_cast<const void*>(&k_persistent_epoch)},
                                    {kSmallKA, reinterpret_cast<const void*>(&k_persistent_epoch_k512)}},
      false);
}
std::unique_ptr<KernelPath> make_persistent2_path(Precision precision) {
  switch (precision) {
    case Precision::TF32:
      return std::make_unique<PersistentPath>("persistent2-tf32", reinterpret_cast<const void*>(&k_persistent2_epoch_tf32),
                                              true, Precision::TF32);
    case Precision::BF16:
      return std::make_unique<PersistentPath>("persistent2-bf16", reinterpret_cast<const void*>(&k_persistent2_epoch_bf16),
                                              true, Precision::BF16);
    default:
      return std::make_unique<PersistentPath>("persistent2", reinterpret_cast<const void*>(&k_persistent2_epoch), true);
  }
}

}  // namespace mlp
