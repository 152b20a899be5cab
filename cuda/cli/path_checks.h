// cuda/cli/path_checks.h — the per-path part of a gate run (full or --quick/--smoke): each path's
// one-epoch parameters against the fused path's and float64's (with a per-tensor diagnosis when
// it drifts), a bitwise rerun, case 6 (overfit-32), then `epochs` timed training epochs.
#pragma once
#include <vector>

#include "gate/cases.h"
#include "cli/run_context.h"
#include "paths/train_loop.h"

// One epoch of any path from the initial state must land within this distance of the fused
// path's parameters, relative to the size of the epoch's update. Float32 summation order alone
// moves it by ~3e-7, but a ReLU whose pre-activation sits within rounding of zero can flip in one
// implementation and not the other, and the trajectories then part: measured on the H200 at seed
// 20260829, the unfused path (and the fused path built with float32 accumulation) flips unit 96
// of sample 120 at step 28 (pre-activation -3.6e-7 on a term scale of 4.4, i.e. 8e-8 relative)
// and ends the epoch 3.4e-3 from float64 while the persistent path ends 3.8e-7 from it. Real
// defects land far above the limit: dropping one row per step gives 9e-2, dropping one step's
// gradient 1.5e-2 (numpy experiments, PERFLOG.md).
constexpr double kParityLimit = 1e-2;

// The limit for a path whose products' inputs are rounded to `p` (common/precision.h): FP32 exactly
// kParityLimit; TF32 and BF16 kPrecisionParityLimit. Not u_p-scaled, by measurement: on the H200
// (f8ecd3a, docs/PERFLOG.md) one epoch at the recipe lands 0.044-0.049 of the update from the
// fused path for stationary-tf32, tiled-tf32 and tiled-bf16 alike (the trajectories part at ReLU
// kinks within the epoch, so the distance saturates instead of growing with u_p; at 4,096 x 2,048
// it is 7.3e-4 at TF32 and 2.5e-3 at BF16, about u_p). Since float32's defects of the note above
// move it by 1.5e-2 to 9e-2, at these precisions parity catches only gross defects; the fine check
// is case 9's epoch at the precision's u (precision_epoch_check, gate/cases.h).
constexpr double kPrecisionParityLimit = 0.1;
inline double parity_limit(mlp::Precision p) { return p == mlp::Precision::FP32 ? kParityLimit : kPrecisionParityLimit; }
// The limit of a path run by its recorded precision ("fp32" where none is recorded).
inline double parity_limit(const PathRun& r) {
  mlp::Precision p = mlp::Precision::FP32;
  if (!r.precision.empty()) mlp::parse_precision(r.precision, &p);
  return parity_limit(p);
}

// Every path of ctx.in.names, in order. `smoke`: no rerun and no case 6 (reported as not run).
std::vector<PathRun> check_and_train_paths(const RunContext& ctx, const GateInputs& g, int epochs, bool smoke);

// The first part of a gate run, full or quick: cases 1–5 (printed), every path checked and
// trained for `epochs` epochs, then case 6's row (printed).
struct GateRun {
  std::vector<CaseResult> cases;  // cases 1–6
  std::vector<PathRun> runs;      // one per path, in order
  const PathRun* gated() const { return find_gated(runs, gated_name); }
  std::string gated_name;
};
GateRun run_cases_1_to_6(const RunContext& ctx, int epochs, bool smoke);
