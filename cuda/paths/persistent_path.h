// cuda/paths/persistent_path.h — a persistent kernel as a KernelPath: the dynamic shared memory it
// needs, one block of kThreads per SM, one cooperative launch an epoch. cuda/paths/persistent_path.cu makes
// the shipped paths with it, dev/persistent_phases.cu its variants.
#pragma once
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "common/cuda_check.h"
#include "kernels/persistent.cuh"

namespace mlp {

// A kernel of signature `void(Persist)` as a path: one cooperative launch an epoch, one block of
// kThreads per SM (the SM count of effective_limits(), caps included). `two_barriers`: the kernel
// is persistent2's (it needs the partials buffer). `kernels`: one per K chunk of phase A the
// path may run (persistent: kMaxKA, the shipped one, then kSmallKA for 64 KB of shared memory per
// block; persistent2: one kernel, ka 0); fit() takes the first whose needs the device meets.
struct PersistentKernel {
  int ka;            // phase A's K chunk (0: no phase A)
  const void* fn;
};

class PersistentPath : public KernelPath {
 public:
  // precision: the inputs of its big products (persistent2's TF32 and BF16 forms round them).
  PersistentPath(std::string name, std::vector<PersistentKernel> kernels, bool two_barriers,
                 Precision precision = Precision::FP32)
      : name_(std::move(name)), kernels_(std::move(kernels)), two_barriers_(two_barriers), precision_(precision) {}
  PersistentPath(std::string name, const void* kernel, bool two_barriers, Precision precision = Precision::FP32)
      : PersistentPath(std::move(name), {{two_barriers ? 0 : kMaxKA, kernel}}, two_barriers, precision) {}
  ~PersistentPath() override {
    if (partials_) cudaFree(partials_);
  }
  PersistentPath(const PersistentPath&) = delete;
  PersistentPath& operator=(const PersistentPath&) = delete;
  std::string name() const override { return name_; }
  std::string accumulator() const override { return products_accumulator(precision_); }
  Precision precision() const override { return precision_; }
  double launches_per_step(int steps) const override { return 1.0 / steps; }

  PathFit fit(const DeviceLimits& lim, MlpShape s, int batch) override {
    fitted_ = true;
    fit_shape_ = s;
    fit_batch_ = batch;
    kernel_ = nullptr;
    if (s.out > kMaxOut || s.out < 1)
      return fit_ = PathFit{-1, "", "supports 1 to " + std::to_string(kMaxOut) + " classes, got " + std::to_string(s.out)};
    std::vector<KernelNeeds> needs;
    std::vector<std::string> labels;
    std::vector<const void*> fns;
    for (const PersistentCandidate& c : persistent_candidates(s, two_barriers_)) {
      const void* fn = nullptr;
      for (const PersistentKernel& k : kernels_)
        if (k.ka == c.ka) fn = k.fn;
      if (!fn) continue;  // a dev path of one kernel: only its own chunk
      KernelNeeds k = c.needs;
      if (why_not(k, lim).empty()) ask_device(fn, k);  // the device's answers only where the limits allow it
      needs.push_back(k);
      labels.push_back(c.label);
      fns.push_back(fn);
    }
    fit_ = choose(needs, labels, lim);
    if (fit_.runs()) {
      kernel_ = fns[(size_t)fit_.choice];
      smem_ = (size_t)needs[(size_t)fit_.choice].dynamic_smem;
      blocks_ = lim.sms;  // one block per SM: the barrier's cost grows with the block count
    }
    return fit_;
  }

  void epoch(const EpochArgs& a) override {
    if (!fitted_ || a.s.in != fit_shape_.in || a.s.hidden != fit_shape_.hidden || a.s.out != fit_shape_.out ||
        a.batch != fit_batch_)
      fit(effective_limits(), a.s, a.batch);
    if (!fit_.runs()) throw SubmissionError(name_ + " path skipped: " + fit_.skipped, MLP_ERR_UNSUPPORTED);
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
    const cudaError_t e = cudaLaunchCooperativeKernel(kernel_, dim3((unsigned)blocks_), dim3(kThreads), args, smem_, a.stream);
    if (e == cudaErrorCooperativeLaunchTooLarge || e == cudaErrorInvalidConfiguration ||
        e == cudaErrorLaunchOutOfResources || e == cudaErrorInvalidValue) {
      (void)cudaGetLastError();  // a refused launch configuration: not a fault of the context
      throw SubmissionError(name_ + " path: the device refused the launch (" + std::to_string(blocks_) + " blocks, " +
                                std::to_string(smem_) + " B shared/block): " + cudaGetErrorString(e),
                            MLP_ERR_UNSUPPORTED);
    }
    CUDA_CHECK(e);
    CUDA_CHECK_LAUNCH(name_ + " kernel");
  }

 private:
  // Registers and static shared memory, the opt-in for the dynamic shared memory and the
  // device's occupancy answer; a refusal is recorded in k.refused (and the error cleared).
  static void ask_device(const void* fn, KernelNeeds& k) {
    cudaFuncAttributes fa;
    cudaError_t e = cudaFuncGetAttributes(&fa, fn);
    if (e == cudaSuccess) {
      k.regs = fa.numRegs;
      k.static_smem = (long long)fa.sharedSizeBytes;
      e = cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)k.dynamic_smem);
    }
    int per_sm = 0;
    if (e == cudaSuccess)
      e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fn, k.threads, (size_t)k.dynamic_smem);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      k.refused = cudaGetErrorString(e);
      return;
    }
    k.device_blocks_per_sm = per_sm;
  }

  std::string name_;
  std::vector<PersistentKernel> kernels_;
  bool two_barriers_;
  Precision precision_;
  bool fitted_ = false;
  MlpShape fit_shape_{};
  int fit_batch_ = 0;
  PathFit fit_;
  const void* kernel_ = nullptr;
  size_t smem_ = 0;
  int blocks_ = 0;
  float* partials_ = nullptr;
  size_t partials_floats_ = 0;
};

}  // namespace mlp
