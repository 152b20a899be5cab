// cuda/gate/workload.h — what the case files (gate/entry_cases.cu, gate/epoch_cases.cu,
// gate/contract.cu) share: the two workloads every entry-point case runs on (the recipe's shape on
// real images, and an odd shape on seeded data that catches widths and strides written as
// literals), a case's parts (one per workload, batch or hyperparameter draw) and how they make one
// row, the status and guard-band checks after a call, and the check that a call left its inputs
// as they were.
#pragma once
#include <string>
#include <vector>

#include "common/rng.h"
#include "gate/cases.h"
#include "gate/guard.h"
#include "gate/odd_shape.h"  // kOddShape, kOddBatches

namespace gate {

struct Workload {
  MlpShape s;
  std::string label;            // "784-256-10", "odd shape 37-19-3"
  bool odd = false;             // a submission may decline it (MLP_ERR_UNSUPPORTED): a note, not a failure
  const float* X = nullptr;     // host [rows × in]
  const int* y = nullptr;       // host [rows]
  int rows = 0;
  std::vector<int32_t> order;   // rows in the order the cases take them
  std::vector<float> init;      // initial parameters (flat layout)
  const float* d_X = nullptr;   // device copies of X and y
  const int* d_y = nullptr;
};
// The recipe's: real images, epoch 0's order, the seed's initial weights (g's own buffers).
Workload recipe_workload(const GateInputs& g);
// The odd shape's: 640 rows of pixel-like values k/255 and labels drawn with the seed, a seeded
// order, initial weights as the recipe draws them; made once per process.
const Workload& odd_workload(const GateInputs& g);

// Rows [0, batch) of `w` in its order, as float32 host arrays.
void take_rows(const Workload& w, int batch, std::vector<float>& X, std::vector<int>& y);

// One part of a case: a workload, batch or draw, with its own value and limit.
struct Part {
  std::string label;            // "784-256-10, batch 128"
  double value = 0, limit = 0;
  bool passed = false;
  bool declined = false;        // the odd shape, declined with MLP_ERR_UNSUPPORTED
  std::string detail;           // set when it failed without a value (a status, a guard band, an input changed)
  std::string within;           // failed at FP32 but within the limits of "tf32" (or "bf16"): case 1 and 2's parts
};
// The row of a case from its parts: it passes when every part passes or was declined; its value
// and limit are those of the part furthest over (or nearest to) its limit; `what` says how
// value and limit are defined; each part's figures follow; a declined part becomes r.note.
void combine(CaseResult& r, const std::vector<Part>& parts, const std::string& what);

// After a call: false (and part.detail set) unless it returned MLP_OK; MLP_ERR_UNSUPPORTED on an
// odd workload declines the part instead. On MLP_OK the device is synchronised (a fault in the
// submission's kernels surfaces here).
bool call_ok(int status, const char* fn, const Workload& w, Part& part);
// Guard bands of every buffer after a call: false (part.detail names the buffer) on a hit, which
// case 10 also counts.
bool guards_ok(Part& part, int case_id, const char* fn, std::initializer_list<std::string> checks);
// A call's read-only inputs: "" when every one still holds what was uploaded, else one line
// naming the input and the first element changed.
std::string inputs_changed(const char* fn, const std::vector<std::pair<const DevBuf<float>*, const float*>>& f,
                           const std::vector<std::pair<const DevBuf<int>*, const int*>>& i = {});
// The same for a device array that is not a DevBuf (the training set: `n` values from `want`).
template <class T>
std::string device_changed(const char* fn, const char* name, const T* dev, const T* want, size_t n);

// `n` values drawn uniformly from (−scale, scale) with `rng` (velocities, gradients, shifts).
std::vector<float> uniform(size_t n, double scale, SplitMix64& rng);

// A learning rate and momentum other than the recipe's, drawn with `seed` (cases 5 and 9): lr in
// [0.01, 0.5), momentum in [0.3, 0.99).
std::pair<float, float> drawn_hyperparameters(uint64_t seed);

// A row of the case table with the catalog's name for `id`, value and limit NaN.
CaseResult make_case(int id);

}  // namespace gate
