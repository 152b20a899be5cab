// cuda/gate/cases.cu — gate cases 1–10 (cases.h). Inputs are real images or seeded random values (never
// zeros); every output buffer is poisoned with NaN (all bits set) before the call, so an output
// that is never written fails the comparison instead of passing on stale memory, and has guard
// bands (guard.h) checked after the call.
#include "gate/cases.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "gate/cpu_reference.h"
#include "common/cuda_check.h"
#include "gate/epoch_check.h"
#include "gate/guard.h"
#include "common/rng.h"
#include "common/run_stats.h"

namespace {

constexpr double kU32 = 5.9604644775390625e-08;  // float32 unit roundoff, 2^-24

std::vector<double> to_double(const float* v, size_t n) { return std::vector<double>(v, v + n); }

// A submission's status: non-OK fails the case with its name; OK is followed by a checked sync,
// so an asynchronous fault in its kernels surfaces here.
bool call_ok(int st, const char* fn, CaseResult& r) {
  if (st != MLP_OK) {
    r.passed = false;
    r.value = NAN;
    r.detail = std::string(fn) + " returned " + mlp::status_name(st);
    return false;
  }
  CUDA_CHECK(cudaDeviceSynchronize());
  return true;
}

// Guard-band hits of this process, in order: "case N: fn: <what DevBuf::check says>" (case 10).
std::vector<std::string>& guard_hits() {
  static std::vector<std::string> hits;
  return hits;
}

// After a call: every buffer's guard bands; a hit fails the case, naming the call and the buffer.
bool guards_ok(CaseResult& r, const char* fn, std::initializer_list<std::string> checks) {
  std::string all;
  for (const auto& c : checks)
    if (!c.empty()) all += (all.empty() ? "" : "; ") + c;
  if (all.empty()) return true;
  guard_hits().push_back("case " + std::to_string(r.id) + ": " + fn + ": " + all);
  r.passed = false;
  r.value = NAN;
  r.detail = std::string("guard band: ") + fn + " wrote outside its buffer: " + all;
  return false;
}

CaseResult make(int id, const char* name) {
  CaseResult r;
  r.id = id;
  r.name = name;
  r.value = NAN;
  r.limit = NAN;
  return r;
}

// Rows [0, batch) of the training set in epoch 0's order: real images, as float and double.
void take_rows(const GateInputs& g, int batch, std::vector<float>& X, std::vector<int>& y) {
  X.assign((size_t)batch * g.s.in, 0.f);
  y.assign((size_t)batch, 0);
  for (int r = 0; r < batch; ++r) {
    int idx = (*g.order0)[(size_t)r];
    std::copy(g.data->train_x.begin() + (long)idx * g.s.in, g.data->train_x.begin() + (long)(idx + 1) * g.s.in,
              X.begin() + (long)r * g.s.in);
    y[(size_t)r] = g.data->train_y[(size_t)idx];
  }
}

// |W|-forward: the magnitudes of every term that feeds each logit, the scale of the classic
// rounding bound |fl(z) − z| ≤ γ · (|W2|·(|W1|·|x| + |b1|) + |b2|).
std::vector<double> abs_forward(MlpShape s, const std::vector<double>& p, const std::vector<double>& X, int batch) {
  std::vector<double> ap(p.size());
  for (size_t i = 0; i < p.size(); ++i) ap[i] = std::fabs(p[i]);
  std::vector<double> H((size_t)batch * s.hidden), Z((size_t)batch * s.out);
  ref_forward(s, ap.data(), X.data(), batch, H.data(), Z.data());  // all terms ≥ 0: ReLU is a no-op
  return Z;
}

// Forward through the submission: logits for `batch` rows, compared with float64.
void forward_case(const GateInputs& g, int batch, CaseResult& r, bool normwise) {
  MlpShape s = g.s;
  std::vector<float> Xf;
  std::vector<int> y;
  take_rows(g, batch, Xf, y);
  DevBuf<float> dp(g.init->size(), "params"), dX(Xf.size(), "X"), dH((size_t)batch * s.hidden, "H"),
      dZ((size_t)batch * s.out, "Z");
  dp.upload(g.init->data());
  dX.upload(Xf.data());
  dH.poison();
  dZ.poison();
  if (!call_ok(mlp_forward(s, dp.p, dX.p, batch, dH.p, dZ.p, nullptr), "mlp_forward", r)) return;
  if (!guards_ok(r, "mlp_forward", {dp.check(), dX.check(), dH.check(), dZ.check()})) return;
  std::vector<float> Z = dZ.download();
  std::vector<double> P = to_double(g.init->data(), g.init->size()), X = to_double(Xf.data(), Xf.size());
  std::vector<double> Href((size_t)batch * s.hidden), Zref((size_t)batch * s.out);
  ref_forward(s, P.data(), X.data(), batch, Href.data(), Zref.data());
  std::vector<double> scale = abs_forward(s, P, X, batch);
  const double depth = (double)s.in + s.hidden + 2;
  if (!normwise) {
    // Case 1: worst element against the deterministic bound γ_depth = depth·u.
    double worst = 0;
    for (size_t i = 0; i < Z.size(); ++i) {
      double e = std::fabs((double)Z[i] - Zref[i]) / scale[i];
      worst = std::isnan(e) ? INFINITY : std::max(worst, e);
    }
    r.value = worst;
    r.limit = depth * kU32;
    r.detail = "max_k |z_k - z64_k| / (|W2|(|W1||x|+|b1|)+|b2|)_k; limit (in+hidden+2)*u, u = 2^-24";
  } else {
    // Case 2: norm-wise, against the probabilistic bound that grows with √depth (Higham & Mary
    // 2019: rounding errors of a length-n sum behave like a random walk), with a margin of 4.
    double num = 0, den = 0;
    bool nan = false;
    for (size_t i = 0; i < Z.size(); ++i) {
      double e = (double)Z[i] - Zref[i];
      nan |= std::isnan(e);
      num += e * e;
      den += scale[i] * scale[i];
    }
    r.value = nan ? INFINITY : std::sqrt(num / den);
    r.limit = 4.0 * std::sqrt(depth) * kU32;
    r.detail = "||Z - Z64||_F / ||(|W2|(|W1||X|+|b1|)+|b2|)||_F over " + std::to_string(batch) +
               " rows; limit 4*sqrt(in+hidden+2)*u";
  }
  r.passed = r.value <= r.limit;
}

}  // namespace

CaseResult case_onebatch_forward(const GateInputs& g) {
  CaseResult r = make(1, "onebatch-forward");
  forward_case(g, 1, r, false);
  return r;
}

CaseResult case_batch_forward(const GateInputs& g) {
  CaseResult r = make(2, "batch-forward");
  forward_case(g, g.recipe->batch, r, true);
  return r;
}

CaseResult case_loss_extreme(const GateInputs& g) {
  CaseResult r = make(3, "loss-extreme");
  const MlpShape s = g.s;
  const int O = s.out;
  // Rows of extreme logits: whole rows at +60 and −60, and mixed rows where the label sits at
  // −60 among +60 (its probability underflows float32 without the max shift) and the reverse;
  // then rows of ordinary N(0, 3²) logits.
  std::vector<float> Z;
  std::vector<int> y;
  SplitMix64 rng(stream_seed(g.seed, kStreamTest, 3));
  auto row = [&](auto value_of, int label) {
    for (int k = 0; k < O; ++k) Z.push_back(value_of(k));
    y.push_back(label);
  };
  // Two rows at ±100 as well: exp(100) overflows float32, so only a shifted softmax survives
  // them (at ±60 an unshifted log-sum-exp still fits in float32).
  row([](int k) { return k == 0 ? 100.f : -100.f; }, 0);
  row([](int k) { return k == 1 ? -100.f : 100.f; }, 1);
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
  const int B = (int)y.size();
  DevBuf<float> dZd(Z.size(), "Z"), dG(Z.size(), "dZ"), dL(1, "loss");
  DevBuf<int> dy(y.size(), "labels");
  dZd.upload(Z.data());
  dy.upload(y.data());
  dG.poison();
  dL.poison();
  if (!call_ok(mlp_loss(s, dZd.p, dy.p, B, dG.p, dL.p, nullptr), "mlp_loss", r)) return r;
  if (!guards_ok(r, "mlp_loss", {dZd.check(), dy.check(), dG.check(), dL.check()})) return r;
  std::vector<float> G = dG.download(), L = dL.download();
  std::vector<double> Zd = to_double(Z.data(), Z.size()), Gref(Z.size());
  double Lref = ref_loss(s, Zd.data(), y.data(), B, Gref.data());
  // Relative loss error, and dZ error relative to 1/B (each |dZ| ≤ 1/B); the worse of the two.
  double e_loss = std::fabs((double)L[0] - Lref) / std::fabs(Lref), e_dz = 0;
  for (size_t i = 0; i < G.size(); ++i) e_dz = std::max(e_dz, std::fabs((double)G[i] - Gref[i]) * B);
  bool finite = std::isfinite(L[0]);
  for (float v : G) finite &= std::isfinite(v);
  r.value = finite ? std::max(e_loss, e_dz) : INFINITY;
  r.limit = 64 * kU32;  // a few roundings of exp/log/division in float32, with margin
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "%d rows (logits +-60 and +-100, mixed and whole rows, and N(0,9)); loss %.9g vs %.9g; "
                "max(|dL|/L, B*max|dZ - dZ64|); limit 64*u",
                B, (double)L[0], Lref);
  r.detail = buf;
  r.passed = finite && r.value <= r.limit;
  return r;
}

CaseResult case_grad_check(const GateInputs& g) {
  CaseResult r = make(4, "grad-check");
  const MlpShape s = g.s;
  const MlpOffsets o = mlp_offsets(s);
  const int B = g.recipe->batch;
  std::vector<float> Xf;
  std::vector<int> y;
  take_rows(g, B, Xf, y);
  DevBuf<float> dp(o.total, "params"), dX(Xf.size(), "X"), dH((size_t)B * s.hidden, "H"), dZ((size_t)B * s.out, "Z"),
      dG((size_t)B * s.out, "dZ"), dL(1, "loss"), dgrad(o.total, "grads"), dHs((size_t)B * s.hidden, "dH_scratch");
  DevBuf<int> dy(y.size(), "labels");
  dp.upload(g.init->data());
  dX.upload(Xf.data());
  dy.upload(y.data());
  dgrad.poison();
  if (!call_ok(mlp_forward(s, dp.p, dX.p, B, dH.p, dZ.p, nullptr), "mlp_forward", r)) return r;
  if (!guards_ok(r, "mlp_forward", {dp.check(), dX.check(), dH.check(), dZ.check()})) return r;
  if (!call_ok(mlp_loss(s, dZ.p, dy.p, B, dG.p, dL.p, nullptr), "mlp_loss", r)) return r;
  if (!guards_ok(r, "mlp_loss", {dZ.check(), dy.check(), dG.check(), dL.check()})) return r;
  if (!call_ok(mlp_backward(s, dp.p, dX.p, dH.p, dG.p, B, dgrad.p, dHs.p, nullptr, nullptr), "mlp_backward", r))
    return r;
  if (!guards_ok(r, "mlp_backward", {dp.check(), dX.check(), dH.check(), dG.check(), dgrad.check(), dHs.check()}))
    return r;
  std::vector<float> grad = dgrad.download();

  std::vector<double> P = to_double(g.init->data(), o.total), X = to_double(Xf.data(), Xf.size());
  std::vector<double> H((size_t)B * s.hidden), Z((size_t)B * s.out), G(Z.size()), ref(o.total);
  ref_forward(s, P.data(), X.data(), B, H.data(), Z.data());
  ref_loss(s, Z.data(), y.data(), B, G.data());
  ref_backward(s, P.data(), X.data(), H.data(), G.data(), B, ref.data());

  // 200 coordinates: 50 from each tensor, drawn with the seed.
  const size_t begin[4] = {o.w1, o.b1, o.w2, o.b2}, end[4] = {o.b1, o.w2, o.b2, o.total};
  const char* tname[4] = {"W1", "b1", "W2", "b2"};
  SplitMix64 rng(stream_seed(g.seed, kStreamTest, 4));
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
      size_t i = begin[t] + (size_t)(rng.next() % (uint64_t)(end[t] - begin[t]));
      // GPU float32 against float64 analytic: rtol 1e-4 with a floor of 1e-6 of the tensor's
      // largest gradient (float32 sums of up to `batch` terms lose a few ulps).
      double eg = std::fabs((double)grad[i] - ref[i]) / (1e-4 * std::fabs(ref[i]) + 1e-6 * tmax);
      if (std::isnan(eg)) eg = INFINITY;
      if (eg > worst_gpu) { worst_gpu = eg; worst_at = std::string(tname[t]) + "[" + std::to_string(i - begin[t]) + "]"; }
      // float64 analytic against central differences in float64, step 1e-5: truncation
      // O(h²) ≈ 1e-10 and rounding ε·L/h ≈ 1e-11 sit far below the 1e-8 floor.
      const double h = 1e-5;
      double keep = P[i];
      P[i] = keep + h;
      double lp = loss_at(P);
      P[i] = keep - h;
      double lm = loss_at(P);
      P[i] = keep;
      double fd = (lp - lm) / (2 * h);
      worst_fd = std::max(worst_fd, std::fabs(fd - ref[i]) / (1e-5 * std::fabs(ref[i]) + 1e-8));
    }
  }
  r.value = std::max(worst_gpu, worst_fd);
  r.limit = 1.0;
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "200 coords (50 per tensor), batch %d; GPU vs fp64: max |g-g64|/(1e-4|g64|+1e-6 max|g64_t|) = %.3g "
                "(worst %s); fp64 vs central diff (h=1e-5): max |fd-g64|/(1e-5|g64|+1e-8) = %.3g; both <= 1",
                B, worst_gpu, worst_at.c_str(), worst_fd);
  r.detail = buf;
  r.passed = worst_gpu <= 1.0 && worst_fd <= 1.0;
  return r;
}

CaseResult case_step(const GateInputs& g) {
  CaseResult r = make(5, "step");
  const size_t n = mlp_offsets(g.s).total;
  const float lr = (float)g.recipe->lr, mu = (float)g.recipe->momentum;
  SplitMix64 rng(stream_seed(g.seed, kStreamTest, 5));
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
  if (!call_ok(mlp_step(dp.p, dv.p, dg.p, n, lr, mu, nullptr), "mlp_step", r)) return r;
  if (!guards_ok(r, "mlp_step", {dp.check(), dv.check(), dg.check()})) return r;
  std::vector<float> P = dp.download(), V = dv.download();
  // float64 of the same float32 inputs and the same float32 lr and μ.
  double worst = 0;
  for (size_t i = 0; i < n; ++i) {
    double vr = (double)mu * v[i] - (double)lr * gr[i], pr = (double)p[i] + vr;
    double ev = std::fabs(V[i] - vr) / (1e-6 + 1e-5 * std::fabs(vr));
    double ep = std::fabs(P[i] - pr) / (1e-6 + 1e-5 * std::fabs(pr));
    double e = std::max(ev, ep);
    worst = std::isnan(e) ? INFINITY : std::max(worst, e);
  }
  r.value = worst;
  r.limit = 1.0;
  r.detail = "every element of params and velocity: max |got-ref| / (1e-6 + 1e-5|ref|) over " + std::to_string(n) +
             " values; limit 1";
  r.passed = worst <= 1.0;
  return r;
}

CaseResult case_overfit32(const GateInputs& g, mlp::KernelPath& path) {
  CaseResult r = make(6, "overfit-32");
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
  try {
    for (int t = 0; t < steps; ++t) path.epoch(a);  // one 32-image step per call
    CUDA_CHECK(cudaDeviceSynchronize());
  } catch (const mlp::SubmissionError& e) {
    r.detail = e.what();
    return r;
  }
  if (!guards_ok(r, "epoch", {dp.check(), dv.check(), dws.check(), dloss.check(), dord.check()})) return r;
  float last = dloss.download()[0];
  r.value = last;
  r.limit = 0.01;
  r.detail = "loss after 200 steps on 32 images (batch 32) of path " + path.name();
  r.passed = std::isfinite(last) && last < 0.01;
  return r;
}

CaseResult case_epoch_check(const GateInputs& g) {
  CaseResult r = make(9, "epoch-check");
  const MlpShape s = g.s;
  const int B = g.recipe->batch;
  // Two full batches and a short tail batch (300 = 2·128 + 44 at the recipe's batch).
  const int n = std::min(g.recipe->train_size, B > 1 ? 2 * B + std::max(1, B * 11 / 32) : 3);
  const int steps = (n + B - 1) / B;
  EpochCheckInput in;
  in.s = s;
  in.n = n;
  in.batch = B;
  in.lr = (float)g.recipe->lr;
  in.momentum = (float)g.recipe->momentum;
  in.X_all = g.data->train_x.data();
  in.y_all = g.data->train_y.data();
  in.order.assign(g.order0->begin(), g.order0->begin() + n);
  in.p0 = *g.init;
  SplitMix64 rng(stream_seed(g.seed, kStreamTest, 9));  // a velocity as after some steps: the step must use it
  in.v0.resize(in.p0.size());
  for (auto& x : in.v0) x = (float)((rng.uniform() * 2 - 1) * 1e-3);
  DevBuf<float> dp(in.p0.size(), "params"), dv(in.v0.size(), "velocity"), dws(mlp_workspace_floats(s, B), "workspace"),
      dloss((size_t)steps, "step_loss");
  DevBuf<int> dord((size_t)n, "order");
  dp.upload(in.p0.data());
  dv.upload(in.v0.data());
  dord.upload(in.order.data());
  dws.poison();
  dloss.poison();
  if (!call_ok(mlp_train_epoch(s, dp.p, dv.p, g.d_train_x, g.d_train_y, dord.p, n, B, in.lr, in.momentum, dws.p,
                               dloss.p, nullptr),
               "mlp_train_epoch", r))
    return r;
  if (!guards_ok(r, "mlp_train_epoch", {dp.check(), dv.check(), dws.check(), dloss.check(), dord.check()})) return r;
  const EpochCheckRef ref = epoch_check_reference(in);
  const EpochCheckScore sc = epoch_check_score(ref, s, dp.download(), dv.download(), dloss.download(), 2.0);
  r.value = sc.worst;
  r.limit = 1.0;
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "%d steps (%d rows, batch %d, tail %d) from the initial state, velocity U(+-1e-3): max |got-ref|/(2E) "
                "over params, velocity and step losses, E the float32 error bound propagated through every step "
                "(sums 2*sqrt(n+2)*u, %d ambiguous ReLU kinks allowed); worst %s; per tensor: %s",
                steps, n, B, n - (steps - 1) * B, ref.ambiguous, sc.where.c_str(), sc.per_tensor.c_str());
  r.detail = buf;
  r.passed = sc.worst <= 1.0;
  return r;
}

CaseResult case_guard_bands() {
  CaseResult r = make(10, "guard-bands");
  const auto& hits = guard_hits();
  r.value = (double)hits.size();
  r.limit = 0;
  r.passed = hits.empty();
  r.detail = hits.empty() ? "every output and workspace buffer of cases 1-6 and 9 has " + std::to_string(kGuard) +
                                " poisoned elements each side, intact after every call"
                          : std::to_string(hits.size()) + " call(s) wrote outside a buffer; first: " + hits.front();
  return r;
}

void print_table_header() {
  std::printf("%-2s %-18s %12s %12s  %s\n", "#", "case", "value", "limit", "verdict");
  std::fflush(stdout);
}

std::vector<CaseResult> run_cases_1_to_5(const GateInputs& g) {
  print_table_header();
  std::vector<CaseResult> cases;
  for (auto fn : {case_onebatch_forward, case_batch_forward, case_loss_extreme, case_grad_check, case_step,
                  case_epoch_check}) {
    cases.push_back(fn(g));
    print_case(cases.back());
  }
  return cases;
}

void print_case(const CaseResult& c) {
  std::printf("%-2d %-18s %12.4g %12.4g  %s   %s\n", c.id, c.name.c_str(), c.value, c.limit,
              !c.passed ? "FAIL" : (std::isnan(c.value) && c.detail.rfind("not run", 0) == 0) ? "SKIP" : "PASS",
              c.detail.c_str());
  std::fflush(stdout);
}

const PathRun* find_gated(const std::vector<PathRun>& runs, const std::string& gated) {
  for (const auto& r : runs)
    if (r.name == gated) return &r;
  return runs.empty() ? nullptr : &runs.front();
}

CaseResult case6_row(const PathRun* gated_run, const std::string& gated) {
  CaseResult c6 = make(6, "overfit-32");
  c6.limit = 0.01;
  if (gated_run) c6 = gated_run->overfit;
  else c6.detail = "path " + gated + " not run (--paths)";
  return c6;
}

RefTrainResult case7_reference(const RunInputs& in) {
  const Recipe& R = in.R;
  RefTrainResult ref;
  if (in.opt.reference == "shipped") {
    std::fprintf(stderr, "float64 reference: shipped %s/reference (not retrained)\n", in.opt.data.c_str());
    ref.loss_per_epoch = in.shipped.loss_per_epoch;
    ref.test_accuracy_per_epoch = in.shipped.test_accuracy_per_epoch;
    return ref;
  }
  std::fprintf(stderr, "float64 CPU reference: %d epochs, trained in this run\n", R.epochs);
  std::vector<double> P(in.init.begin(), in.init.end());
  std::vector<double> Xtr(in.data.train_x.begin(), in.data.train_x.begin() + (long)R.train_size * in.s.in);
  std::vector<double> Xte(in.data.test_x.begin(), in.data.test_x.end());
  std::vector<std::vector<int32_t>> ref_orders(in.orders.begin(), in.orders.begin() + R.epochs);
  return ref_train(in.s, P, Xtr, in.data.train_y, R.train_size, Xte, in.data.test_y, in.data.n_test, ref_orders,
                   R.batch, R.lr, R.momentum, [](int e, double loss, double acc, double secs) {
                     std::fprintf(stderr, "  fp64       epoch %2d  loss %.4f  test acc %.2f%%  (%.1f s)\n", e + 1,
                                  loss, 100 * acc, secs);
                   });
}

CaseResult case_train(const PathRun* r, const std::string& gated, const RefTrainResult& ref) {
  CaseResult c = make(7, "train");
  c.limit = 1.0;
  if (!r) { c.detail = "path " + gated + " not run (--paths)"; return c; }
  if (!r->ok) { c.detail = "path " + r->name + ": " + r->error; return c; }
  const double ref_acc = ref.test_accuracy_per_epoch.back(), ref_tail = last5_mean(ref.test_accuracy_per_epoch);
  const double acc = r->test_accuracy_per_epoch.back(), tail = last5_mean(r->test_accuracy_per_epoch);
  c.value = 100.0 * std::fabs(tail - ref_tail);
  char b[320];
  std::snprintf(b, sizeof b,
                "|mean test acc of the last 5 epochs: %s %.2f%% - fp64 %.2f%%| in pp (last epoch: %.2f%% vs %.2f%%)",
                r->name.c_str(), 100 * tail, 100 * ref_tail, 100 * acc, 100 * ref_acc);
  c.detail = b;
  c.passed = c.value <= c.limit;
  return c;
}

CaseResult case_perf(const std::vector<PathRun>& runs, const PathRun* gated_run, int epochs) {
  CaseResult c8 = make(8, "perf");
  c8.value = gated_run ? gated_run->median : NAN;
  c8.passed = !runs.empty();
  std::string perf_detail = "median epoch ms (epochs 1.." + std::to_string(epochs - 1) + "; CV %):";
  for (const auto& r : runs) {
    if (!r.skipped.empty()) {  // did not run on this device (run.json says why)
      perf_detail += " " + r.name + " skipped";
      continue;
    }
    c8.passed &= r.ok && std::isfinite(r.median);
    char b[96];
    std::snprintf(b, sizeof b, " %s %.3f (%.1f%%)", r.name.c_str(), r.median, r.cv);
    perf_detail += b;
  }
  c8.detail = perf_detail;
  return c8;
}

bool gate_passed(const std::vector<CaseResult>& cases) {
  bool ok = true;
  for (const auto& c : cases)
    if (c.id != 8) ok &= c.passed;
  return ok;
}

std::string path_failure(const PathRun& r, bool rerun_checked, double parity_limit) {
  char b[256];
  if (!r.skipped.empty()) return "";  // did not run on this device: said in run.json, not a failure
  if (!r.ok) return "path " + r.name + ": " + r.error;
  // NaN parity with ok set: a path that did not run on this device (skipped), not a failure.
  if (r.parity_vs_fused > parity_limit) {
    std::snprintf(b, sizeof b, "path %s: one-epoch parity vs fused %.3g > %.0e", r.name.c_str(), r.parity_vs_fused,
                  parity_limit);
    return b;
  }
  if (rerun_checked && !r.deterministic) return "path " + r.name + ": a rerun of one epoch was not bitwise identical";
  return "";
}
