// cuda/persistent_path.h — a persistent kernel as a KernelPath: the dynamic shared memory it
// needs, one block of kThreads per SM, one cooperative launch an epoch. cuda/persistent.cu makes
// the shipped paths with it, dev/persistent_phases.cu its variants.
#pragma once
#include <algorithm>
#include <string>
#include <utility>

#include "cuda_check.h"
#include "persistent.cuh"

namespace mlp {

// Dynamic shared memory of a block for `in` input features: the largest of the phases' staging.
inline size_t persistent_smem_bytes(int in) {
  size_t a = 2 * (size_t)std::min(in, kMaxKA) * kTileA * sizeof(float);           // phase A: Xs, Ws
  a = std::max(a, (size_t)kWarps * 256 * sizeof(float));                          //   its reduction
  size_t b = (size_t)(kWarps + 1) * kMaxOut * sizeof(float);                      // phase B
  size_t c = std::max((size_t)kRowsC * (kTileC + kTileCJ), (size_t)kWarps * 1024) * sizeof(float);  // C: W1 tile
  c = std::max(c, (size_t)kRowsC * (kTileC + kMaxOut) * sizeof(float));           // C: W2 item
  c = std::max(c, (size_t)kPersist2Floats * sizeof(float));                       // persistent2
  return std::max(a, std::max(b, c));
}

// A kernel of signature `void(Persist)` as a path: one cooperative launch an epoch, one block of
// kThreads per SM. `two_barriers`: the kernel is persistent2's (it needs the partials buffer).
class PersistentPath : public KernelPath {
 public:
  PersistentPath(std::string name, const void* kernel, bool two_barriers)
      : name_(std::move(name)), kernel_(kernel), two_barriers_(two_barriers) {}
  ~PersistentPath() override {
    if (partials_) cudaFree(partials_);
  }
  PersistentPath(const PersistentPath&) = delete;
  PersistentPath& operator=(const PersistentPath&) = delete;
  std::string name() const override { return name_; }
  double launches_per_step(int steps) const override { return 1.0 / steps; }
  void epoch(const EpochArgs& a) override {
    if (a.s.out > kMaxOut || a.s.out < 1)
      throw SubmissionError("persistent path supports at most " + std::to_string(kMaxOut) + " classes", MLP_ERR_UNSUPPORTED);
    const size_t smem = persistent_smem_bytes(a.s.in);
    if (!configured_) {
      int dev = 0, sms = 0, coop = 0, per_sm = 0;
      CUDA_CHECK(cudaGetDevice(&dev));
      CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
      CUDA_CHECK(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev));
      if (!coop) throw SubmissionError("persistent path: device has no cooperative launch", MLP_ERR_UNSUPPORTED);
      CUDA_CHECK(cudaFuncSetAttribute(kernel_, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
      CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel_, kThreads, smem));
      if (per_sm < 1) throw SubmissionError("persistent path: kernel does not fit on an SM", MLP_ERR_UNSUPPORTED);
      blocks_ = sms;  // one block per SM: the barrier's cost grows with the block count
      configured_ = true;
    }
    if (two_barriers_) {
      const size_t need = (size_t)((a.s.in + kTileC - 1) / kTileC) * a.batch * a.s.hidden;
      if (need > partials_floats_) {
        if (partials_) CUDA_CHECK(cudaFree(partials_));
        partials_ = nullptr;
        CUDA_CHECK(cudaMalloc(&partials_, need * sizeof(float)));
        partials_floats_ = need;
      }
    }
    Workspace w = carve_workspace(a.s, a.batch, a.workspace);
    Persist P{a.s, a.n, a.batch, a.lr, a.momentum, a.params, a.velocity, a.X_all, a.labels_all, a.order,
              w.H, w.dH, w.dZ, w.grads /* row losses: the first `batch` floats */, a.step_loss, partials_};
    void* args[] = {&P};
    CUDA_CHECK(cudaLaunchCooperativeKernel(kernel_, dim3((unsigned)blocks_), dim3(kThreads), args, smem, a.stream));
    CUDA_CHECK_LAUNCH(name_ + " kernel");
  }

 private:
  std::string name_;
  const void* kernel_;
  bool two_barriers_;
  bool configured_ = false;
  int blocks_ = 0;
  float* partials_ = nullptr;
  size_t partials_floats_ = 0;
};

}  // namespace mlp
