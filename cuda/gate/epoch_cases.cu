// cuda/gate/epoch_cases.cu — case 9 (epoch-check): the submission's mlp_train_epoch for a short epoch
// with a tail batch against float64 within the error bound propagated through every step (float32's,
// and at a declared TF32 or BF16 its products' rounded inputs too: gate/epoch_check.h), on four
// parts: the recipe as it is; the recipe's shape at a drawn learning rate and momentum from a drawn
// state; the odd shape at batches 7 and 129 (gate/workload.h).
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/cuda_check.h"
#include "common/rng.h"
#include "gate/epoch_check.h"
#include "gate/tolerances.h"
#include "gate/workload.h"

using namespace gate;

namespace {

struct EpochSpec {
  int batch = 0;
  float lr = 0, momentum = 0;
  std::vector<float> p0, v0;  // the starting parameters and velocity
  std::string label;
};

// Two full batches and a short tail batch (300 = 2·128 + 44 at the recipe's batch, 17 at batch 7).
int short_epoch_rows(int batch, int available) {
  return std::min(available, batch > 1 ? 2 * batch + std::max(1, batch * 11 / 32) : 3);
}

// `path`: the epoch of that kernel path instead of the submission's mlp_train_epoch (our TF32 and
// BF16 paths' own case 9, case_path_epoch_check).
Part epoch_part(const Workload& w, const EpochSpec& e, mlp::Precision precision, mlp::KernelPath* path = nullptr) {
  const MlpShape s = w.s;
  const int B = e.batch, n = short_epoch_rows(B, w.rows), steps = (n + B - 1) / B;
  Part part;
  char b[200];
  std::snprintf(b, sizeof b, "%s, batch %d, %d rows (tail %d), lr %.4g, momentum %.4g%s", w.label.c_str(), B, n,
                n - (steps - 1) * B, e.lr, e.momentum, e.label.c_str());
  part.label = b;
  part.limit = 1.0;
  EpochCheckInput in;
  in.s = s;
  in.n = n;
  in.batch = B;
  in.lr = e.lr;
  in.momentum = e.momentum;
  in.X_all = w.X;
  in.y_all = w.y;
  in.order.assign(w.order.begin(), w.order.begin() + n);
  in.p0 = e.p0;
  in.v0 = e.v0;
  in.precision = precision;  // the bound's rounding of the products' inputs (FP32: none)
  DevBuf<float> dp(in.p0.size(), "params"), dv(in.v0.size(), "velocity"), dws(mlp_workspace_floats(s, B), "workspace"),
      dloss((size_t)steps, "step_loss");
  DevBuf<int> dord((size_t)n, "order");
  dp.upload(in.p0.data());
  dv.upload(in.v0.data());
  dord.upload(in.order.data());
  dws.poison();
  dloss.poison();
  if (path) {
    const mlp::EpochArgs a{s, dp.p, dv.p, w.d_X, w.d_y, dord.p, n, B, in.lr, in.momentum, dws.p, dloss.p, nullptr};
    try {
      path->epoch(a);
      CUDA_CHECK(cudaDeviceSynchronize());
    } catch (const mlp::SubmissionError& e) {
      part.detail = "path " + path->name() + ": " + e.what();
      return part;
    }
  } else if (!call_ok(mlp_train_epoch(s, dp.p, dv.p, w.d_X, w.d_y, dord.p, n, B, in.lr, in.momentum, dws.p, dloss.p,
                                      nullptr),
                      "mlp_train_epoch", w, part)) {
    return part;
  }
  if (!guards_ok(part, 9, "mlp_train_epoch", {dp.check(), dv.check(), dws.check(), dloss.check(), dord.check()}))
    return part;
  part.detail = inputs_changed("mlp_train_epoch", {}, {{&dord, in.order.data()}});
  if (part.detail.empty())
    part.detail = device_changed("mlp_train_epoch", "X_all", w.d_X, w.X, (size_t)w.rows * s.in);
  if (part.detail.empty()) part.detail = device_changed("mlp_train_epoch", "labels_all", w.d_y, w.y, (size_t)w.rows);
  if (!part.detail.empty()) return part;
  const EpochCheckRef ref = epoch_check_reference(in);
  const EpochCheckScore sc = epoch_check_score(ref, s, dp.download(), dv.download(), dloss.download(), 2.0);
  part.value = sc.worst;
  part.passed = sc.worst <= 1.0;
  if (!part.passed) part.detail = "worst " + sc.where + "; per tensor: " + sc.per_tensor;
  part.label += " (" + std::to_string(ref.ambiguous) + " ambiguous ReLU kinks)";
  return part;
}


}  // namespace

CaseResult case_epoch_check(const GateInputs& g) {
  CaseResult r = make_case(9);
  const Workload rw = recipe_workload(g);
  const Workload& ow = odd_workload(g);
  const uint64_t seed = stream_seed(g.seed, kStreamTest, 9);
  SplitMix64 rng(seed);
  std::vector<Part> parts;
  // The recipe: the initial parameters and a velocity as after some steps (the step must use it).
  EpochSpec recipe{g.recipe->batch, (float)g.recipe->lr, (float)g.recipe->momentum, rw.init,
                   uniform(rw.init.size(), 1e-3, rng), ""};
  const mlp::Precision p = g.precision.precision;
  parts.push_back(epoch_part(rw, recipe, p));
  // The recipe's shape at drawn hyperparameters from a drawn state: parameters moved by U(±0.05),
  // velocity U(±1e-2).
  const auto [lr, mu] = drawn_hyperparameters(seed + 1);
  EpochSpec moved{g.recipe->batch, lr, mu, rw.init, uniform(rw.init.size(), 1e-2, rng), ", from a drawn state"};
  const std::vector<float> shift = uniform(rw.init.size(), 0.05, rng);
  for (size_t i = 0; i < moved.p0.size(); ++i) moved.p0[i] += shift[i];
  parts.push_back(epoch_part(rw, moved, p));
  // The odd shape at batches 7 and 129, drawn hyperparameters, from its initial parameters.
  for (int b : {kOddBatches[1], kOddBatches[2]}) {
    const auto [lro, muo] = drawn_hyperparameters(seed + 2 + (uint64_t)b);
    EpochSpec odd{b, lro, muo, ow.init, uniform(ow.init.size(), 1e-3, rng), ""};
    parts.push_back(epoch_part(ow, odd, p));
  }
  combine(r, parts, epoch_what(g.precision));
  return r;
}

CaseResult case_path_epoch_check(const GateInputs& g, mlp::KernelPath& path) {
  CaseResult r = make_case(9);
  const mlp::Precision p = path.precision();
  const Workload rw = recipe_workload(g);
  const Workload& ow = odd_workload(g);
  SplitMix64 rng(stream_seed(g.seed, kStreamTest, 90));
  std::vector<Part> parts;
  EpochSpec recipe{g.recipe->batch, (float)g.recipe->lr, (float)g.recipe->momentum, rw.init,
                   uniform(rw.init.size(), 1e-3, rng), ""};
  if (path.fit(mlp::effective_limits(), rw.s, recipe.batch).runs()) parts.push_back(epoch_part(rw, recipe, p, &path));
  for (int b : {kOddBatches[1], kOddBatches[2]}) {  // the odd shape, where the path takes it
    if (!path.fit(mlp::effective_limits(), ow.s, b).runs()) continue;
    EpochSpec odd{b, (float)g.recipe->lr, (float)g.recipe->momentum, ow.init, uniform(ow.init.size(), 1e-3, rng), ""};
    parts.push_back(epoch_part(ow, odd, p, &path));
  }
  if (parts.empty()) {
    r.detail = "path " + path.name() + " fits none of case 9's shapes";
    return r;
  }
  combine(r, parts, "path " + path.name() + ": " + epoch_what(p, std::string(mlp::precision_name(p)) + ", the path's precision"));
  return r;
}

CaseResult case_overfit32(const GateInputs& g, mlp::KernelPath& path) {
  CaseResult r = make_case(6);
  const MlpShape s = g.s;
  const int n = 32, steps = 200;
  const size_t total = mlp_offsets(s).total;
  std::vector<float> zeros(total, 0.f);
  std::vector<int> order(n);
  for (int i = 0; i < n; ++i) order[(size_t)i] = (*g.order0)[(size_t)i];  // 32 real images
  DevBuf<float> dp(total, "params"), dv(total, "velocity"), dws(mlp_workspace_floats(s, n), "workspace"),
      dloss(1, "step_loss");
  DevBuf<int> dord(n, "order");
  dp.upload(g.init->data());
  dv.upload(zeros.data());
  dord.upload(order.data());
  dloss.poison();
  mlp::EpochArgs a{s, dp.p, dv.p, g.d_train_x, g.d_train_y, dord.p, n, n, (float)g.recipe->lr,
                   (float)g.recipe->momentum, dws.p, dloss.p, nullptr};
  r.limit = 0.01;
  try {
    for (int t = 0; t < steps; ++t) path.epoch(a);  // one 32-image step per call
    CUDA_CHECK(cudaDeviceSynchronize());
  } catch (const mlp::SubmissionError& e) {
    r.detail = e.what();
    return r;
  }
  Part guard;
  if (!guards_ok(guard, 6, "epoch", {dp.check(), dv.check(), dws.check(), dloss.check(), dord.check()})) {
    r.detail = guard.detail;
    return r;
  }
  const float last = dloss.download()[0];
  r.value = last;
  r.detail = "loss after 200 steps on 32 images (batch 32) of path " + path.name();
  r.passed = std::isfinite(last) && last < 0.01;
  return r;
}
