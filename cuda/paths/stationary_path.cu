// cuda/paths/stationary_path.cu — the weight-stationary epoch (cuda/kernels/stationary.cuh, host side
// cuda/paths/stationary_path.cuh) as the kernel path `stationary`: one cluster launch an epoch, each
// block's slice of W1, b1, W2 and their velocities in shared memory for the whole epoch, one
// cross-SM wait a step. Recipe shape only (784-256-10, batch <= 128) on sm_90 and newer with
// enough co-resident clusters: fit() takes the first shape of wstat::kShapes whose clusters all
// fit at once on the device as effective_limits() describes it (caps included: at most
// sms / CL clusters, and the device's own cudaOccupancyMaxActiveClusters); elsewhere the path is
// skipped with the counts, and its epoch throws SubmissionError(MLP_ERR_UNSUPPORTED) naming why.
#include <algorithm>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "common/cuda_check.h"
#include "paths/kernel_path.h"
#include "paths/stationary_path.cuh"

namespace mlp {
namespace {

// build/mlp_fit (cuda/tools/mlp_fit.cu) lists the same shapes without the kernels' host side.
constexpr bool shapes_are(std::initializer_list<wstat::Shape> want) {
  if (want.size() != sizeof(wstat::kShapes) / sizeof(wstat::kShapes[0])) return false;
  int i = 0;
  for (const wstat::Shape& w : want) {
    if (w.cl != wstat::kShapes[i].cl || w.u != wstat::kShapes[i].u) return false;
    ++i;
  }
  return true;
}
static_assert(shapes_are({{8, 16}, {8, 20}, {4, 12}}), "wstat::kShapes changed: update cuda/tools/mlp_fit.cu's list too");

// The path of a precision: `stationary` (FP32, by TF32 big + small products), `stationary-tf32`
// and `stationary-bf16` (the operands' TF32 or BF16 part alone: one MMA where the FP32 form has
// two; kernels/stationary/ops.cuh's Products).
class StationaryPath : public KernelPath {
 public:
  explicit StationaryPath(Precision precision) : precision_(precision) {}
  ~StationaryPath() override { stationary_release(&plan_); }
  StationaryPath(const StationaryPath&) = delete;
  StationaryPath& operator=(const StationaryPath&) = delete;
  std::string name() const override {
    return precision_ == Precision::FP32 ? "stationary" : std::string("stationary-") + precision_name(precision_);
  }
  std::string accumulator() const override {
    switch (precision_) {
      case Precision::TF32: return "float32 (TF32 products)";
      case Precision::BF16: return "float32 (BF16 products, on the TF32 instruction)";
      case Precision::FP32: break;
    }
    return "float32 (TF32 split products)";
  }
  Precision precision() const override { return precision_; }
  double launches_per_step(int steps) const override { return 1.0 / steps; }

  PathFit fit(const DeviceLimits& lim, MlpShape s, int batch) override {
    fitted_ = true;
    fit_shape_ = s;
    fit_batch_ = batch;
    const std::string bad = stationary_problem_unsupported(s, batch);
    if (!bad.empty()) return fit_ = PathFit{-1, "", bad};
    std::vector<KernelNeeds> needs;
    std::vector<std::string> labels;
    chosen_.clear();
    max_active_.clear();
#define MLP_WSTAT_NEEDS(A, B) add_shape<A, B>(lim, needs, labels);
    MLP_WSTAT_SHAPES(MLP_WSTAT_NEEDS)
#undef MLP_WSTAT_NEEDS
    fit_ = choose(needs, labels, lim);
    return fit_;
  }

  void epoch(const EpochArgs& a) override {
    if (!fitted_ || a.s.in != fit_shape_.in || a.s.hidden != fit_shape_.hidden || a.s.out != fit_shape_.out ||
        a.batch != fit_batch_) {
      const int packed_choice = fit_.runs() ? fit_.choice : -1;
      fit(effective_limits(), a.s, a.batch);
      // The packed bytes depend on X_all and the shape's cluster size only: a re-fit for another
      // batch (case 6's 32 rows) that keeps the shape keeps them.
      if (!fit_.runs() || fit_.choice != packed_choice) packed_x_ = nullptr;
    }
    if (!fit_.runs()) throw SubmissionError("stationary path skipped: " + fit_.skipped, MLP_ERR_UNSUPPORTED);
    // The inputs are packed as bytes once per X_all (outside every timed epoch but the first,
    // which train_path never times): rows [0, max(order) + 1), read off this call's order, so a
    // short epoch over a few rows of the train set (case 6's 32 images) packs every row its order
    // names. Assumed: later calls with the same X_all index no row past the packed ones (the
    // training orders are permutations of the train rows, and the first call of a run is one).
    if (a.X_all != packed_x_ || a.n > plan_.n_total) {
      // The shape fit() chose (stationary_prepare's own choice would ignore the caps).
      const wstat::Shape sh = chosen_[(size_t)fit_.choice];
      std::vector<int> order((size_t)a.n);
      CUDA_CHECK(cudaMemcpyAsync(order.data(), a.order, order.size() * sizeof(int), cudaMemcpyDeviceToHost, a.stream));
      CUDA_CHECK(cudaStreamSynchronize(a.stream));
      int rows = a.n;
      for (int r : order) {
        if (r < 0) throw SubmissionError("stationary path: a negative row in the order", MLP_ERR_INVALID_ARGUMENT);
        rows = std::max(rows, r + 1);
      }
      stationary_release(&plan_);
      const int st = wstat::prepare_for(sh.cl, sh.u, &plan_, a.X_all, rows, a.stream);
      if (st != MLP_OK) {
        stationary_release(&plan_);
        packed_x_ = nullptr;
        throw SubmissionError("stationary path: " + std::string(status_name(st)) +
                                  (st == MLP_ERR_UNSUPPORTED ? " (the inputs are not 8-bit pixels over 255)" : ""),
                              st);
      }
      plan_.max_active_clusters = max_active_[(size_t)fit_.choice];
      packed_x_ = a.X_all;
    }
    plan_.precision = precision_;
    const int st = stationary_epoch(&plan_, a.params, a.velocity, a.labels_all, a.order, a.n, a.batch, a.lr,
                                    a.momentum, a.step_loss, a.stream);
    if (st != MLP_OK) throw SubmissionError("stationary path: epoch returned " + std::string(status_name(st)), st);
  }

 private:
  // One shape's needs: shared memory and clusters from Cfg, registers from the kernel and, where
  // the limits allow the shape at all, the device's own co-resident cluster count.
  template <int CL, int U>
  void add_shape(const DeviceLimits& lim, std::vector<KernelNeeds>& needs, std::vector<std::string>& labels) {
    using C = wstat::Cfg<CL, U>;
    KernelNeeds k = stationary_needs(CL, U, C::kClusters, (long long)C::kSmemBytes);
    int m = -1, need = 0;
    if (why_not(k, lim).empty()) {
      cudaFuncAttributes fa;
      cudaError_t e = cudaFuncGetAttributes(&fa, wstat::epoch_kernel<CL, U>(precision_));
      if (e == cudaSuccess) {
        k.regs = fa.numRegs;
        k.static_smem = (long long)fa.sharedSizeBytes;
        e = wstat::max_clusters_for(CL, U, &m, &need);
      }
      if (e != cudaSuccess) {
        (void)cudaGetLastError();
        k.refused = cudaGetErrorString(e);
        m = -1;
      }
      k.device_max_clusters = m;
    }
    needs.push_back(k);
    labels.push_back(stationary_label(CL, U, C::kClusters, (long long)C::kSmemBytes));
    chosen_.push_back(wstat::Shape{CL, U});
    max_active_.push_back(m);
  }

  const Precision precision_;
  bool fitted_ = false;
  MlpShape fit_shape_{};
  int fit_batch_ = 0;
  PathFit fit_;
  std::vector<wstat::Shape> chosen_;  // candidate i's shape
  std::vector<int> max_active_;       // candidate i's device answer (-1: not asked)
  StationaryPlan plan_;
  const float* packed_x_ = nullptr;  // the X_all that plan_.xb packs
};

}  // namespace

std::unique_ptr<KernelPath> make_stationary_path(Precision precision) {
  return std::make_unique<StationaryPath>(precision);
}

}  // namespace mlp
