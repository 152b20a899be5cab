// cuda/gate/cases.cu — the gate's cases that judge a trained path (7 train, 8 perf), case 10 (the
// guard-band hits of this process), the table, and the path checks' verdicts. Cases 1-5 are
// gate/entry_cases.cu, 6 and 9 gate/epoch_cases.cu, 13 gate/contract.cu.
#include "gate/cases.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/run_stats.h"
#include "gate/contract.h"
#include "gate/guard.h"
#include "gate/workload.h"

using gate::make_case;

namespace {
// Guard-band hits of this process, in order: "case N: fn: <what DevBuf::check says>" (case 10).
std::vector<std::string>& guard_hits() {
  static std::vector<std::string> hits;
  return hits;
}
}  // namespace

void record_guard_hit(const std::string& hit) { guard_hits().push_back(hit); }

CaseResult case_guard_bands() {
  CaseResult r = make_case(10);
  const auto& hits = guard_hits();
  r.value = (double)hits.size();
  r.limit = 0;
  r.passed = hits.empty();
  r.detail = hits.empty() ? "every output and workspace buffer of cases 1-6, 9 and 13 has " + std::to_string(kGuard) +
                                " poisoned elements each side, intact after every call"
                          : std::to_string(hits.size()) + " call(s) wrote outside a buffer; first: " + hits.front();
  return r;
}

void print_table_header() {
  std::printf("%-2s %-18s %12s %12s  %s\n", "#", "case", "value", "limit", "verdict");
  std::fflush(stdout);
}

std::vector<CaseResult> run_entry_cases(const GateInputs& g) {
  print_table_header();
  std::vector<CaseResult> cases;
  for (auto fn : {case_onebatch_forward, case_batch_forward, case_loss_extreme, case_grad_check, case_step,
                  case_epoch_check, case_stream_contract, case_invalid_arguments}) {
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
  CaseResult c6 = make_case(6);
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
  CaseResult c = make_case(7);
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
  CaseResult c8 = make_case(8);
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

std::string path_failure(const PathRun& r, bool rerun_checked, double parity_limit, bool bitwise) {
  char b[256];
  if (!r.skipped.empty()) return "";  // did not run on this device: said in run.json, not a failure
  if (!r.ok) return "path " + r.name + ": " + r.error;
  if (r.epoch_checked && !r.epoch_check.passed)
    return "path " + r.name + ": epoch-check at its precision (" + r.precision + ") failed: " + r.epoch_check.detail;
  // NaN parity with ok set: a path that did not run on this device (skipped), not a failure.
  if (r.parity_vs_fused > parity_limit) {
    std::snprintf(b, sizeof b, "path %s: one-epoch parity vs fused %.3g > %.3g", r.name.c_str(), r.parity_vs_fused,
                  parity_limit);
    return b;
  }
  if (!rerun_checked || r.deterministic) return "";
  if (bitwise) return "path " + r.name + ": a rerun of one epoch was not bitwise identical";
  if (!(r.rerun_distance <= parity_limit)) {
    std::snprintf(b, sizeof b, "path %s: reruns of one epoch differ by %.3g of the update > %.3g", r.name.c_str(),
                  r.rerun_distance, parity_limit);
    return b;
  }
  return "";
}

std::string path_note(const PathRun& r, bool bitwise, double parity_limit) {
  if (!r.skipped.empty() || !r.ok || r.deterministic || bitwise || !(r.rerun_distance <= parity_limit)) return "";
  char b[160];
  std::snprintf(b, sizeof b, "nondeterministic: reruns differ by %.3g (limit %.3g)", r.rerun_distance, parity_limit);
  return b;
}

bool bitwise_rerun_required(const std::string& path, bool strict_determinism) {
  return path != kSubmissionPath || strict_determinism;
}
