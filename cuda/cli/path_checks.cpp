#include "cli/path_checks.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>

#include "gate/cpu_reference.h"

std::vector<PathRun> check_and_train_paths(const RunContext& ctx, const GateInputs& g, int epochs, bool smoke) {
  const RunInputs& in = ctx.in;
  const Recipe& R = in.R;
  const MlpShape s = in.s;
  const Dataset& data = in.data;
  const std::vector<float>& init = in.init;
  const std::vector<std::vector<int32_t>>& orders = in.orders;
  const DeviceData& dd = ctx.dd;
  std::vector<PathRun> runs;
  std::vector<float> fused_one;
  {
    std::unique_ptr<mlp::KernelPath> fused = mlp::make_path("fused");
    fused_one = one_epoch_params(*fused, R, s, init, orders[0], dd);
  }
  // ||p − q||₂ over every parameter, in float64.
  auto l2_distance = [](const std::vector<float>& p, auto const& q) {
    double d = 0;
    for (size_t i = 0; i < p.size(); ++i) d += ((double)p[i] - q[i]) * ((double)p[i] - q[i]);
    return std::sqrt(d);
  };
  const double update_norm = l2_distance(fused_one, init);
  // The float64 reference's parameters after the same epoch: every path is also measured
  // against them (float32 rounding alone lands near 1e-7 of the update).
  std::vector<double> fp64_one(init.begin(), init.end());
  {
    std::vector<double> Xtr1(data.train_x.begin(), data.train_x.begin() + (long)R.train_size * s.in);
    std::vector<double> Xte1(data.test_x.begin(), data.test_x.begin() + (long)s.in);  // evaluation unused
    ref_train(s, fp64_one, Xtr1, data.train_y, R.train_size, Xte1, data.test_y, 1, {orders[0]}, R.batch, R.lr,
              R.momentum, nullptr);
  }
  // Distance relative to the fused path's one-epoch update; NaN for a path that did not run.
  auto dist = [&](const std::vector<float>& p, auto const& q) {
    return p.empty() ? NAN : l2_distance(p, q) / update_norm;
  };
  std::fprintf(stderr, "fused: one epoch vs float64 ||dp||/||update|| = %.3g\n", dist(fused_one, fp64_one));
  ReferenceDrifts drifts(in, fused_one);
  for (const auto& name : in.names) {
    std::unique_ptr<mlp::KernelPath> path = mlp::make_path(name);
    // What the device (capped or not) lets the path run in; the gated path is never skipped.
    const mlp::PathFit fit = path->fit(mlp::effective_limits(), s, R.batch);
    if (!fit.runs() && name != ctx.gated) {
      std::printf("path %s: skipped: %s\n", name.c_str(), fit.skipped.c_str());
      std::fflush(stdout);
      PathRun skip;
      skip.name = name;
      skip.skipped = fit.skipped;
      skip.precision = mlp::precision_name(path->precision());
      skip.overfit.id = 6;
      skip.overfit.name = "overfit-32";
      skip.overfit.value = NAN;
      skip.overfit.limit = 0.01;
      skip.overfit.passed = true;
      skip.overfit.detail = "not run (path skipped on this device)";
      skip.launches_per_step = path->launches_per_step((R.train_size + R.batch - 1) / std::max(1, R.batch));
      runs.push_back(skip);
      continue;
    }
    std::fprintf(stderr, "path %s: %s\n", name.c_str(), fit.runs() ? fit.config.c_str() : fit.skipped.c_str());
    std::vector<float> p1 = one_epoch_params(*path, R, s, init, orders[0], dd);
    // --smoke skips the rerun: p2 stays empty and the line below says so instead of claiming identity.
    std::vector<float> p2 = smoke ? std::vector<float>{} : one_epoch_params(*path, R, s, init, orders[0], dd);
    const double parity = dist(p1, fused_one);
    const bool deterministic = !p1.empty() && p1 == p2;
    const double rerun = smoke || p2.empty() ? NAN : dist(p2, p1);
    const double vs64 = dist(p1, fp64_one);
    const double ref_drift = drifts.at(path->precision());  // NaN for FP32
    const double limit = parity_limit(path->precision(), ref_drift);
    std::fprintf(stderr, "path %s: one epoch vs fused ||dp||/||update|| = %.3g (limit %.3g), vs float64 %.3g; rerun bitwise %s",
                 name.c_str(), parity, limit, vs64,
                 smoke ? "skipped (--smoke)" : deterministic ? "identical" : "DIFFERENT");
    if (!smoke && !deterministic) std::fprintf(stderr, " (by %.3g of the update)", rerun);
    std::fprintf(stderr, "\n");
    if (!(parity <= limit) && !p1.empty()) {
      // Which tensor differs: the first thing to know when a path drifts from the fused one.
      const MlpOffsets o = mlp_offsets(s);
      const size_t b[5] = {o.w1, o.b1, o.w2, o.b2, o.total};
      const char* tn[4] = {"W1", "b1", "W2", "b2"};
      for (int t = 0; t < 4; ++t) {
        double d = 0, u = 0;
        size_t worst = b[t];
        double wv = -1;
        for (size_t i = b[t]; i < b[t + 1]; ++i) {
          double e = std::fabs((double)p1[i] - fused_one[i]);
          d += e * e;
          u += ((double)fused_one[i] - init[i]) * ((double)fused_one[i] - init[i]);
          if (e > wv) { wv = e; worst = i; }
        }
        std::fprintf(stderr, "    %s: ||dp||/||update|| = %.3g, worst index %zu (|dp| %.3g)\n", tn[t],
                     std::sqrt(d / u), worst - b[t], wv);
      }
    }
    CaseResult of;
    if (smoke) {
      of.id = 6; of.name = "overfit-32"; of.value = NAN; of.limit = 0.01; of.passed = true;
      of.detail = "not run (--smoke)";
      std::fprintf(stderr, "path %s: overfit-32 skipped (--smoke); training %d epochs\n", name.c_str(), epochs);
    } else {
      of = case_overfit32(g, *path);
      std::fprintf(stderr, "path %s: overfit-32 loss %.5f (%s); training %d epochs\n", name.c_str(), of.value,
                   of.passed ? "PASS" : "FAIL", epochs);
    }
    CaseResult ec;
    const bool check_epoch = path->precision() != mlp::Precision::FP32 && name != kSubmissionPath;
    if (check_epoch) {
      ec = case_path_epoch_check(g, *path);
      std::fprintf(stderr, "path %s: epoch-check at %s %.3g (limit 1) %s\n", name.c_str(),
                   mlp::precision_name(path->precision()), ec.value, ec.passed ? "PASS" : ("FAIL: " + ec.detail).c_str());
    }
    PathRun run = train_path(*path, R, s, init, orders, dd, data, epochs, true);
    run.epoch_checked = check_epoch;
    run.epoch_check = ec;
    run.overfit = of;
    run.parity_vs_fused = parity;
    run.parity_vs_fp64 = vs64;
    run.parity_limit = limit;
    run.reference_drift = ref_drift;
    run.deterministic = deterministic;
    run.rerun_distance = rerun;
    if (!run.ok) std::fprintf(stderr, "path %s failed: %s\n", name.c_str(), run.error.c_str());
    runs.push_back(run);
  }
  return runs;
}

double parity_limit(mlp::Precision p, double drift) {
  if (p == mlp::Precision::FP32) return kParityLimit;
  return std::isfinite(drift) ? std::max(kParityLimitLowPrecision, kReferenceDriftFactor * drift) : kParityLimitLowPrecision;
}

double parity_limit_of(const PathRun& r) {
  if (std::isfinite(r.parity_limit)) return r.parity_limit;
  mlp::Precision p = mlp::Precision::FP32;
  return mlp::parse_precision(r.precision, &p) ? parity_limit(p) : kParityLimit;
}

double rounded_reference_drift(const RunInputs& in, mlp::Precision p, const std::vector<float>& fused_one) {
  if (p == mlp::Precision::FP32 || fused_one.size() != in.init.size()) return NAN;
  const MlpShape s = in.s;
  const Recipe& R = in.R;
  std::vector<double> q(in.init.begin(), in.init.end());
  std::vector<double> Xtr(in.data.train_x.begin(), in.data.train_x.begin() + (long)R.train_size * s.in);
  std::vector<double> Xte(in.data.test_x.begin(), in.data.test_x.begin() + (long)s.in);  // evaluation unused
  const RefTrainResult r = ref_train(s, q, Xtr, in.data.train_y, R.train_size, Xte, in.data.test_y, 1, {in.orders[0]},
                                     R.batch, R.lr, R.momentum, nullptr, p);
  double d = 0, u = 0;
  for (size_t i = 0; i < q.size(); ++i) {
    d += (q[i] - fused_one[i]) * (q[i] - fused_one[i]);
    u += ((double)fused_one[i] - in.init[i]) * ((double)fused_one[i] - in.init[i]);
  }
  const double drift = std::sqrt(d / u);
  std::fprintf(stderr, "parity: the rounded-input %s reference epoch (CPU, %.1f s) lands %.3g of the update from the fused path's: limit %.3g\n",
               mlp::precision_name(p), r.seconds, drift, parity_limit(p, drift));
  return drift;
}

GateInputs gate_inputs(const RunContext& ctx) {
  const RunInputs& in = ctx.in;
  return GateInputs{in.s, &in.R, &in.data, &in.init, &in.orders[0], ctx.dd.train_x, ctx.dd.train_y, in.R.seed,
                    ctx.precision};
}

GateRun run_cases_1_to_6(const RunContext& ctx, int epochs, bool smoke) {
  const GateInputs g = gate_inputs(ctx);
  GateRun gr;
  gr.gated_name = ctx.gated;
  gr.cases = run_entry_cases(g);
  gr.runs = check_and_train_paths(ctx, g, epochs, smoke);
  gr.cases.push_back(case6_row(gr.gated(), ctx.gated));
  print_case(gr.cases.back());
  return gr;
}
