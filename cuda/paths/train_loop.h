// cuda/paths/train_loop.h — training and timing a kernel path on the device: the device state of one
// run (TrainState), the timed epoch loop (train_path), one epoch's parameters for the parity and
// rerun checks (one_epoch_params), and the device-memory watch run.json records.
#pragma once
#include <cuda_runtime.h>

#include <cmath>
#include <string>
#include <vector>

#include "gate/case_result.h"
#include "io/dataset.h"
#include "paths/device.h"
#include "paths/kernel_path.h"
#include "io/recipe.h"

// Device memory: free bytes after the context exists, and the lowest free seen while training
// (each path's state allocated), so peak_used = what this run's buffers took at most.
struct MemoryWatch {
  size_t total = 0, free_before = 0, min_free = 0;
  void start();
  void sample();
  std::string json() const;
};
// The process's one watch (started by mlp_train once the context exists; sampled by train_path).
MemoryWatch& memory_watch();

// One path's training run, as run.json records it.
struct PathRun {
  std::string name;
  std::string config;   // the configuration it ran in (PathFit::config)
  std::string accumulator;  // KernelPath::accumulator()
  std::string precision;    // precision_name(KernelPath::precision()): "fp32", "tf32", "bf16"
  std::string skipped;  // why it did not run on this device ("" when it ran): nothing else is set
  double parity_vs_fused = NAN;  // ||p - p_fused|| / ||p_fused - p_init|| after one epoch
  double parity_vs_fp64 = NAN;   // the same against the float64 reference's epoch
  double parity_limit = NAN;     // the limit parity_vs_fused was judged at (cli/path_checks.h parity_limit)
  double reference_drift = NAN;  // TF32/BF16: the rounded-input reference's own distance from the fused path
  bool deterministic = false;    // two one-epoch runs from the same state: bitwise equal
  double rerun_distance = NAN;   // ||p_run1 - p_run2|| / ||p_fused - p_init|| of those two runs
  double launches_per_step = 0;
  bool ok = true;             // trained every epoch without error or non-finite loss
  std::string error;
  std::vector<double> epoch_ms, loss_per_epoch, test_accuracy_per_epoch;
  CaseResult overfit;
  // Case 9 on the path's own epoch at its precision (gate/cases.h case_path_epoch_check): run for
  // our TF32 and BF16 paths by the gate (epoch_checked), not for FP32 ones or a submission.
  bool epoch_checked = false;
  CaseResult epoch_check;
  double mean = NAN, median = NAN, min = NAN, max = NAN, cv = NAN;  // epochs 1.. (run_stats.h)
};

// Device state of one training run: parameters from `init`, zero velocity, the workspace, the
// per-step losses and the first `epochs` epoch orders. Freed on scope exit, also on a throw.
struct TrainState {
  MlpShape s;
  int n, batch, steps;
  float *params = nullptr, *velocity = nullptr, *ws = nullptr, *step_loss = nullptr;
  int* order = nullptr;
  TrainState(const Recipe& R, MlpShape shape, const std::vector<float>& init,
             const std::vector<std::vector<int32_t>>& orders, int epochs);
  ~TrainState();
  TrainState(const TrainState&) = delete;
  TrainState& operator=(const TrainState&) = delete;
  // Arguments of epoch e on `stream`.
  mlp::EpochArgs epoch(const Recipe& R, const DeviceData& dd, int e, cudaStream_t stream) const;

 private:
  void release() noexcept;  // frees every buffer (the destructor, and a constructor that throws)
};

// Trains `epochs` epochs of one path from the initial parameters (first fitted to
// mlp::effective_limits(): a path that does not fit comes back with .skipped set); times each epoch with CUDA
// events around its enqueued work; evaluates on the test set after each epoch (not timed). A
// submission's error or a non-finite loss ends the run with ok = false; a CUDA fault throws.
PathRun train_path(mlp::KernelPath& path, const Recipe& R, MlpShape s, const std::vector<float>& init,
                   const std::vector<std::vector<int32_t>>& orders, const DeviceData& dd, const Dataset& data,
                   int epochs, bool progress, bool check_loss = true);

// Parameters after ONE epoch (order 0) of `path` from the initial state: for the parity check
// against the fused path and the bitwise determinism check. Empty when the path failed or does
// not fit the device.
std::vector<float> one_epoch_params(mlp::KernelPath& path, const Recipe& R, MlpShape s, const std::vector<float>& init,
                                    const std::vector<int32_t>& order0, const DeviceData& dd);
