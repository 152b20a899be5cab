// cuda/gate/entry_cases.cu — cases 1-5, one entry point each, on both workloads (gate/workload.h).
// Inputs are real images or seeded values (never zeros); every output buffer is poisoned with NaN
// (all bits set) before the call, so an output never written fails the comparison; every buffer
// has guard bands (gate/guard.h) checked after the call, and every read-only input is checked to
// be unchanged.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/cuda_check.h"
#include "common/rng.h"
#include "gate/cpu_reference.h"
#include "gate/tolerances.h"
#include "gate/workload.h"

using namespace gate;

namespace {

std::vector<double> to_double(const float* v, size_t n) { return std::vector<double>(v, v + n); }

// One forward part: Z (the value) and H against float64, relative to the magnitude scale of the
// classic rounding bound |fl(z) − z| ≤ γ · (|W2|·(|W1|·|x| + |b1|) + |b2|) (gate/tolerances.h
// abs_forward); case 1 element-wise against γ_depth = depth·u, case 2 norm-wise against 4·√depth·u
// (Higham & Mary 2019: rounding errors of a length-n sum behave like a random walk), depth in +
// hidden + 2 for Z and in + 2 for H; at a declared TF32 or BF16 each plus its inputs' rounding
// (forward_limits: 5·u_p for Z, 3·u_p for H).
Part forward_part(const Workload& w, int case_id, int batch, bool normwise, mlp::Precision precision) {
  const MlpShape s = w.s;
  Part part;
  part.label = w.label + ", batch " + std::to_string(batch);
  std::vector<float> Xf;
  std::vector<int> y;
  take_rows(w, batch, Xf, y);
  DevBuf<float> dp(w.init.size(), "params"), dX(Xf.size(), "X"), dH((size_t)batch * s.hidden, "H"),
      dZ((size_t)batch * s.out, "Z");
  dp.upload(w.init.data());
  dX.upload(Xf.data());
  dH.poison();
  dZ.poison();
  const ForwardLimits lim = forward_limits(precision, s, normwise);
  part.limit = lim.z;
  if (!call_ok(mlp_forward(s, dp.p, dX.p, batch, dH.p, dZ.p, nullptr), "mlp_forward", w, part)) return part;
  if (!guards_ok(part, case_id, "mlp_forward", {dp.check(), dX.check(), dH.check(), dZ.check()})) return part;
  part.detail = inputs_changed("mlp_forward", {{&dp, w.init.data()}, {&dX, Xf.data()}});
  if (!part.detail.empty()) return part;
  std::vector<double> P = to_double(w.init.data(), w.init.size()), X = to_double(Xf.data(), Xf.size());
  std::vector<double> Href((size_t)batch * s.hidden), Zref((size_t)batch * s.out), Hs, Zs;
  ref_forward(s, P.data(), X.data(), batch, Href.data(), Zref.data());
  abs_forward(s, P, X, batch, Hs, Zs);
  part.value = error_of(dZ.download(), Zref, Zs, normwise);
  const double eh = error_of(dH.download(), Href, Hs, normwise);
  part.passed = part.value <= part.limit;
  if (!(eh <= lim.h)) {
    char b[160];
    std::snprintf(b, sizeof b, "H (post-ReLU) error %.3g > limit %.3g (Z: %.3g)", eh, lim.h, part.value);
    part.passed = false;
    part.detail = b;
  }
  // Over float32's limits but within a lower precision's: what rounding the products' inputs looks like.
  if (!part.passed && precision == mlp::Precision::FP32)
    for (mlp::Precision lower : {mlp::Precision::TF32, mlp::Precision::BF16}) {
      const ForwardLimits l = forward_limits(lower, s, normwise);
      if (part.value <= l.z && eh <= l.h) {
        part.within = mlp::precision_name(lower);
        break;
      }
    }
  return part;
}

// Cases 1 and 2 at FP32 whose every failed part is within a lower precision's limits: the row says
// so (hints.cpp keys its precision hint on kWithinLowerPrecision).
void note_lower_precision(CaseResult& r, const std::vector<Part>& parts) {
  if (r.passed) return;
  std::string worst;
  for (const Part& p : parts) {
    if (p.passed || p.declined) continue;
    if (p.within.empty()) return;  // a failure no rounding explains
    if (worst.empty() || p.within == "bf16") worst = p.within;
  }
  if (!worst.empty())
    r.detail += "; every error over float32's limit is within " + worst + "'s (" + kWithinLowerPrecision +
                "? declare it: mlp_precision(), submission.h)";
}

}  // namespace

CaseResult case_onebatch_forward(const GateInputs& g) {
  CaseResult r = make_case(1);
  const Workload rw = recipe_workload(g);
  const mlp::Precision p = g.precision.precision;
  const std::vector<Part> parts = {forward_part(rw, 1, 1, false, p), forward_part(odd_workload(g), 1, 1, false, p)};
  combine(r, parts, forward_what(g.precision, false));
  note_lower_precision(r, parts);
  return r;
}

CaseResult case_batch_forward(const GateInputs& g) {
  CaseResult r = make_case(2);
  const Workload rw = recipe_workload(g);
  const Workload& ow = odd_workload(g);
  const mlp::Precision p = g.precision.precision;
  std::vector<Part> parts = {forward_part(rw, 2, g.recipe->batch, true, p)};
  for (int b : {kOddBatches[1], kOddBatches[2]}) parts.push_back(forward_part(ow, 2, b, true, p));
  combine(r, parts, forward_what(g.precision, true));
  note_lower_precision(r, parts);
  return r;
}

namespace {

// Rows of extreme logits for `O` classes: whole rows at +60 and −60, mixed rows where the label
// sits at −60 among +60 (its probability underflows float32 without the max shift) and the
// reverse, two rows at ±100 (exp(100) overflows float32: only a shifted softmax survives them);
// then rows of ordinary N(0, 3²) logits.
void extreme_rows(int O, uint64_t seed, std::vector<float>& Z, std::vector<int>& y) {
  SplitMix64 rng(seed);
  auto row = [&](auto value_of, int label) {
    for (int k = 0; k < O; ++k) Z.push_back(value_of(k));
    y.push_back(label);
  };
  row([](int k) { return k == 0 ? 100.f : -100.f; }, 0);
  row([&](int k) { return k == std::min(1, O - 1) ? -100.f : 100.f; }, std::min(1, O - 1));
  for (int label = 0; label < std::min(O, 4); ++label) {
    row([](int) { return 60.f; }, label);
    row([](int) { return -60.f; }, label);
    row([&](int k) { return k == label ? -60.f : 60.f; }, label);
    row([&](int k) { return k == label ? 60.f : -60.f; }, label);
    row([](int k) { return k % 2 ? 60.f : -60.f; }, label);
  }
  for (int i = 0; i < 12; ++i) {
    row([&](int) {
      double u1 = rng.uniform() + 1e-300, u2 = rng.uniform();
      return (float)(3.0 * std::sqrt(-2 * std::log(u1)) * std::cos(6.283185307179586 * u2));
    }, (int)(rng.next() % (uint64_t)O));
  }
}

// Relative loss error, and dZ error relative to 1/B (each |dZ| ≤ 1/B); the worse of the two,
// against 64·u (a few roundings of exp/log/division in float32, with margin), at every declared
// precision (mlp_loss has no matrix product: gate/tolerances.h loss_limit).
Part loss_part(const Workload& w, uint64_t seed) {
  const MlpShape s = w.s;
  Part part;
  part.label = w.label;
  part.limit = loss_limit();
  std::vector<float> Z;
  std::vector<int> y;
  extreme_rows(s.out, seed, Z, y);
  const int B = (int)y.size();
  part.label += ", " + std::to_string(B) + " rows";
  DevBuf<float> dZd(Z.size(), "Z"), dG(Z.size(), "dZ"), dL(1, "loss");
  DevBuf<int> dy(y.size(), "labels");
  dZd.upload(Z.data());
  dy.upload(y.data());
  dG.poison();
  dL.poison();
  if (!call_ok(mlp_loss(s, dZd.p, dy.p, B, dG.p, dL.p, nullptr), "mlp_loss", w, part)) return part;
  if (!guards_ok(part, 3, "mlp_loss", {dZd.check(), dy.check(), dG.check(), dL.check()})) return part;
  part.detail = inputs_changed("mlp_loss", {{&dZd, Z.data()}}, {{&dy, y.data()}});
  if (!part.detail.empty()) return part;
  std::vector<float> G = dG.download(), L = dL.download();
  std::vector<double> Zd = to_double(Z.data(), Z.size()), Gref(Z.size());
  const double Lref = ref_loss(s, Zd.data(), y.data(), B, Gref.data());
  double e_loss = std::fabs((double)L[0] - Lref) / std::fabs(Lref), e_dz = 0;
  for (size_t i = 0; i < G.size(); ++i) e_dz = std::max(e_dz, std::fabs((double)G[i] - Gref[i]) * B);
  bool finite = std::isfinite(L[0]);
  for (float v : G) finite &= std::isfinite(v);
  part.value = finite ? std::max(e_loss, e_dz) : INFINITY;
  part.passed = finite && part.value <= part.limit;
  return part;
}

}  // namespace

CaseResult case_loss_extreme(const GateInputs& g) {
  CaseResult r = make_case(3);
  const uint64_t seed = stream_seed(g.seed, kStreamTest, 3);
  combine(r, {loss_part(recipe_workload(g), seed), loss_part(odd_workload(g), seed + 1)}, loss_what(g.precision));
  return r;
}

namespace {

// Gradients through the submission's forward, loss and backward at `batch` rows, against float64
// on 200 coordinates (50 per tensor, drawn with the seed): rtol 1e-4 with a floor of 1e-6 of the
// tensor's largest gradient (float32 sums of up to `batch` terms lose a few ulps); at a declared
// TF32 or BF16 each plus 16·u_p, and the ReLU kinks within rounding of zero allowed
// (gate/tolerances.h: grad_tolerance, kink_allowance). With `with_dx` also dX = dH·W1ᵀ, every
// element, against the same bound. `fd_check`: the float64 analytic gradient against central
// differences in float64 too (step 1e-5: truncation O(h²) ≈ 1e-10 and rounding ε·L/h ≈ 1e-11 sit
// far below the 1e-8 floor), which checks the reference itself.
Part grad_part(const Workload& w, int B, bool with_dx, bool fd_check, uint64_t seed, mlp::Precision precision,
               std::string& fd_note) {
  const MlpShape s = w.s;
  const MlpOffsets o = mlp_offsets(s);
  Part part;
  part.label = w.label + ", batch " + std::to_string(B) + (with_dx ? ", dX" : "");
  part.limit = 1.0;
  std::vector<float> Xf;
  std::vector<int> y;
  take_rows(w, B, Xf, y);
  DevBuf<float> dp(o.total, "params"), dX(Xf.size(), "X"), dH((size_t)B * s.hidden, "H"), dZ((size_t)B * s.out, "Z"),
      dG((size_t)B * s.out, "dZ"), dL(1, "loss"), dgrad(o.total, "grads"), dHs((size_t)B * s.hidden, "dH_scratch"),
      ddX(Xf.size(), "dX");
  DevBuf<int> dy(y.size(), "labels");
  dp.upload(w.init.data());
  dX.upload(Xf.data());
  dy.upload(y.data());
  dgrad.poison();
  ddX.poison();
  if (!call_ok(mlp_forward(s, dp.p, dX.p, B, dH.p, dZ.p, nullptr), "mlp_forward", w, part)) return part;
  if (!guards_ok(part, 4, "mlp_forward", {dp.check(), dX.check(), dH.check(), dZ.check()})) return part;
  if (!call_ok(mlp_loss(s, dZ.p, dy.p, B, dG.p, dL.p, nullptr), "mlp_loss", w, part)) return part;
  if (!guards_ok(part, 4, "mlp_loss", {dZ.check(), dy.check(), dG.check(), dL.check()})) return part;
  const std::vector<float> H_in = dH.download(), dZ_in = dG.download();
  if (!call_ok(mlp_backward(s, dp.p, dX.p, dH.p, dG.p, B, dgrad.p, dHs.p, with_dx ? ddX.p : nullptr, nullptr),
               "mlp_backward", w, part))
    return part;
  if (!guards_ok(part, 4, "mlp_backward",
                 {dp.check(), dX.check(), dH.check(), dG.check(), dgrad.check(), dHs.check(), ddX.check()}))
    return part;
  part.detail = inputs_changed("mlp_backward", {{&dp, w.init.data()}, {&dX, Xf.data()}, {&dH, H_in.data()},
                                                {&dG, dZ_in.data()}});
  if (!part.detail.empty()) return part;
  const std::vector<float> grad = dgrad.download();
  std::vector<double> P = to_double(w.init.data(), o.total), X = to_double(Xf.data(), Xf.size());
  std::vector<double> H((size_t)B * s.hidden), Z((size_t)B * s.out), G(Z.size()), ref(o.total), dXref(X.size());
  ref_forward(s, P.data(), X.data(), B, H.data(), Z.data());
  ref_loss(s, Z.data(), y.data(), B, G.data());
  ref_backward(s, P.data(), X.data(), H.data(), G.data(), B, ref.data(), dXref.data());
  const GradTolerance tol = grad_tolerance(precision);
  const KinkAllowance kink = kink_allowance(precision, s, P, X, G, B, with_dx);  // empty for FP32
  if (precision != mlp::Precision::FP32) part.label += " (" + std::to_string(kink.ambiguous) + " ambiguous ReLU kinks)";

  const size_t begin[4] = {o.w1, o.b1, o.w2, o.b2}, end[4] = {o.b1, o.w2, o.b2, o.total};
  const char* tname[4] = {"W1", "b1", "W2", "b2"};
  SplitMix64 rng(seed);
  double worst_gpu = 0, worst_fd = 0;
  std::string worst_at;
  std::vector<double> Hs(H.size()), Zs(Z.size());
  auto loss_at = [&](std::vector<double>& Pm) {
    ref_forward(s, Pm.data(), X.data(), B, Hs.data(), Zs.data());
    return ref_loss(s, Zs.data(), y.data(), B, nullptr);
  };
  for (int t = 0; t < 4; ++t) {
    double tmax = 0;
    for (size_t i = begin[t]; i < end[t]; ++i) tmax = std::max(tmax, std::fabs(ref[i]));
    for (int k = 0; k < 50; ++k) {
      const size_t i = begin[t] + (size_t)(rng.next() % (uint64_t)(end[t] - begin[t]));
      const double eg = grad_error(grad[i], ref[i], tmax, tol, kink.grads.empty() ? 0 : kink.grads[i]);
      if (eg > worst_gpu) { worst_gpu = eg; worst_at = std::string(tname[t]) + "[" + std::to_string(i - begin[t]) + "]"; }
      if (!fd_check) continue;
      const double h = 1e-5, keep = P[i];
      P[i] = keep + h;
      const double lp = loss_at(P);
      P[i] = keep - h;
      const double lm = loss_at(P);
      P[i] = keep;
      worst_fd = std::max(worst_fd, std::fabs((lp - lm) / (2 * h) - ref[i]) / (1e-5 * std::fabs(ref[i]) + 1e-8));
    }
  }
  if (with_dx) {
    const std::vector<float> dx = ddX.download();
    double xmax = 0;
    for (double v : dXref) xmax = std::max(xmax, std::fabs(v));
    for (size_t i = 0; i < dx.size(); ++i) {
      const double e = grad_error(dx[i], dXref[i], xmax, tol, kink.dX.empty() ? 0 : kink.dX[i]);
      if (e > worst_gpu) { worst_gpu = e; worst_at = "dX[" + std::to_string(i) + "]"; }
    }
  }
  part.value = std::max(worst_gpu, worst_fd);
  part.passed = worst_gpu <= 1.0 && worst_fd <= 1.0;
  if (fd_check) {
    char b[120];
    std::snprintf(b, sizeof b, "fp64 vs central differences (h=1e-5): %.3g", worst_fd);
    fd_note = b;
  }
  if (!part.passed && worst_fd <= 1.0) part.detail = "worst at " + worst_at + ": " + std::to_string(worst_gpu);
  return part;
}

}  // namespace

CaseResult case_grad_check(const GateInputs& g) {
  CaseResult r = make_case(4);
  const Workload rw = recipe_workload(g);
  const Workload& ow = odd_workload(g);
  const uint64_t seed = stream_seed(g.seed, kStreamTest, 4);
  const mlp::Precision p = g.precision.precision;
  std::string fd_note, unused;
  std::vector<Part> parts = {grad_part(rw, g.recipe->batch, false, true, seed, p, fd_note),
                             grad_part(rw, g.recipe->batch, true, false, seed, p, unused)};
  for (int b : {kOddBatches[1], kOddBatches[2]})
    parts.push_back(grad_part(ow, b, true, false, seed + (uint64_t)b, p, unused));
  combine(r, parts, grad_what(g.precision) + "; " + fd_note);
  return r;
}

namespace {

// v = μ·v − lr·g, p = p + v over n elements, in float64 from the same float32 inputs and the same
// float32 lr and μ: every element within 1e-6 + 1e-5|ref| (kStepAtol, kStepRtol), at every declared
// precision (the update has no matrix product).
Part step_part(const std::string& label, size_t n, float lr, float mu, uint64_t seed) {
  Part part;
  char b[96];
  std::snprintf(b, sizeof b, "%s (%zu values), lr %.4g, momentum %.4g", label.c_str(), n, lr, mu);
  part.label = b;
  part.limit = 1.0;
  SplitMix64 rng(seed);
  std::vector<float> p(n), v(n), gr(n);
  for (size_t i = 0; i < n; ++i) {
    p[i] = (float)(rng.uniform() * 2 - 1);
    v[i] = (float)((rng.uniform() * 2 - 1) * 0.1);
    gr[i] = (float)((rng.uniform() * 2 - 1) * 0.5);
  }
  DevBuf<float> dp(n, "params"), dv(n, "velocity"), dg(n, "grads");
  dp.upload(p.data());
  dv.upload(v.data());
  dg.upload(gr.data());
  Workload any;  // mlp_step has no shape: it may not decline
  if (!call_ok(mlp_step(dp.p, dv.p, dg.p, n, lr, mu, nullptr), "mlp_step", any, part)) return part;
  if (!guards_ok(part, 5, "mlp_step", {dp.check(), dv.check(), dg.check()})) return part;
  part.detail = inputs_changed("mlp_step", {{&dg, gr.data()}});
  if (!part.detail.empty()) return part;
  const std::vector<float> P = dp.download(), V = dv.download();
  double worst = 0;
  for (size_t i = 0; i < n; ++i) {
    const double vr = (double)mu * v[i] - (double)lr * gr[i], pr = (double)p[i] + vr;
    const double e = std::max(std::fabs(V[i] - vr) / (kStepAtol + kStepRtol * std::fabs(vr)),
                              std::fabs(P[i] - pr) / (kStepAtol + kStepRtol * std::fabs(pr)));
    worst = std::isnan(e) ? INFINITY : std::max(worst, e);
  }
  part.value = worst;
  part.passed = worst <= 1.0;
  return part;
}

}  // namespace

CaseResult case_step(const GateInputs& g) {
  CaseResult r = make_case(5);
  const size_t n = mlp_offsets(g.s).total, n_odd = mlp_offsets(kOddShape).total;
  const uint64_t seed = stream_seed(g.seed, kStreamTest, 5);
  const auto [lr1, mu1] = drawn_hyperparameters(seed + 1);
  const auto [lr2, mu2] = drawn_hyperparameters(seed + 2);
  combine(r, {step_part("the recipe's parameters", n, (float)g.recipe->lr, (float)g.recipe->momentum, seed),
              step_part("the recipe's parameters", n, lr1, mu1, seed + 3),
              step_part("the odd shape's parameters", n_odd, lr2, mu2, seed + 4)},
          step_what(g.precision));
  return r;
}
