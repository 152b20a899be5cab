#include <cmath>
#include <cstdio>

#include "common/common.h"
#include "common/exit_status.h"
#include "gate/hints.h"
#include "gate/verdict.h"
#include "cli/modes.h"
#include "io/npy.h"
#include "cli/path_checks.h"
#include "cli/run_json.h"
#include "common/run_stats.h"

void write_init_and_order(const RunContext& ctx) {
  const RunInputs& in = ctx.in;
  make_out_dir(in.opt.out);
  write_npy_f32(in.opt.out + "/init_params.npy", in.init, {mlp_offsets(in.s).total});
  std::vector<int32_t> flat;
  for (int e = 0; e < in.R.epochs; ++e) flat.insert(flat.end(), in.orders[(size_t)e].begin(), in.orders[(size_t)e].end());
  write_npy_i32(in.opt.out + "/order.npy", flat, {(size_t)in.R.epochs, (size_t)in.R.train_size});
}

Json gate_header(const RunContext& ctx) {
  const RunInputs& in = ctx.in;
  Json root = Json::object();
  root.set("schema", Json::num(1)).set("date_utc", Json::str(utc_now())).set("run_id", run_id_json(in.opt.run_id))
      .set("gpu", gpu_json(ctx.prop)).set("device_limits", device_limits_json())
      .set("submission", Json::str(ctx.submission))
      .set("gated_path", Json::str(ctx.gated)).set("run_command", Json::str(ctx.command))
      .set("recipe", recipe_json(in.R, in.data.n_test, mlp_offsets(in.s).total))
      .set("reference_source", Json::str(in.opt.reference))
      // The precision the gate held cases 1-5 and 9 to (the submission's mlp_precision(), FP32 by
      // default) and its unit roundoff u_p (2^-24 for fp32).
      .set("gate_precision", Json::str(mlp::precision_name(ctx.precision.precision)))
      .set("gate_unit_roundoff", Json::num(mlp::unit_roundoff(ctx.precision.precision)))
      .set("gate_precision_declared", Json::boolean(ctx.precision.declared));
  return root;
}

std::string gate_paths_json(const RunContext& ctx, const std::vector<PathRun>& runs, const RefTrainResult& ref) {
  Json pj = Json::object();
  for (const auto& r : runs) {
    if (!r.skipped.empty()) {  // did not run on this device: the reason, no timings or verdicts
      Json o = Json::object();
      pj.set(r.name, add_path_run(o, r).done());
      continue;
    }
    CaseResult acc = case_train(&r, ctx.gated, ref);
    const double limit = parity_limit_of(r);
    const std::string failure = trained_path_failure(ctx, r, ref);
    Json o = Json::object();
    add_path_run(o, r)
        .set("passed", Json::boolean(failure.empty()))
        .set("failure", Json::str(failure))
        .set("parity_vs_fused", Json::num(r.parity_vs_fused))
        .set("parity_vs_fp64", Json::num(r.parity_vs_fp64))
        .set("parity_limit", Json::num(limit))
        .set("parity_reference_drift", Json::num(r.reference_drift))
        .set("deterministic", Json::boolean(r.deterministic))
        .set("rerun_distance", Json::num(r.rerun_distance))
        .set("bitwise_rerun_required", Json::boolean(bitwise_rerun_required(r.name, ctx.in.opt.strict_determinism)))
        .set("overfit_loss", Json::num(r.overfit.value))
        .set("accuracy_gap_pp", Json::num(acc.value))
        .set("test_accuracy_last5_mean", Json::num(last5_mean(r.test_accuracy_per_epoch)));
    const std::string note = path_note(r, bitwise_rerun_required(r.name, ctx.in.opt.strict_determinism), limit);
    if (!note.empty()) o.set("note", Json::str(note));
    pj.set(r.name, o.done());
  }
  return pj.done();
}

std::string reference_fp64_json(const RefTrainResult& ref) {
  Json refj = Json::object();
  refj.set("test_accuracy", Json::num(ref.test_accuracy_per_epoch.back()))
      .set("test_accuracy_last5_mean", Json::num(last5_mean(ref.test_accuracy_per_epoch)))
      .set("test_accuracy_per_epoch", Json::nums(ref.test_accuracy_per_epoch))
      .set("loss_per_epoch", Json::nums(ref.loss_per_epoch)).set("train_seconds", Json::num(ref.seconds));
  return refj.done();
}

std::string trained_path_failure(const RunContext& ctx, const PathRun& r, const RefTrainResult& ref) {
  const std::string f =
      path_failure(r, true, parity_limit_of(r), bitwise_rerun_required(r.name, ctx.in.opt.strict_determinism));
  if (!f.empty() || !r.skipped.empty()) return f;
  if (!r.overfit.passed) return "path " + r.name + ": overfit-32 failed: " + r.overfit.detail;
  const CaseResult acc = case_train(&r, ctx.gated, ref);
  if (!acc.passed) return "path " + r.name + ": training accuracy failed: " + acc.detail;
  return "";
}

std::vector<std::string> path_failures(const RunContext& ctx, const std::vector<PathRun>& runs,
                                       const RefTrainResult& ref) {
  std::vector<std::string> fails;
  for (const auto& r : runs) {
    const std::string f = trained_path_failure(ctx, r, ref);
    if (!f.empty()) fails.push_back(f);
  }
  return fails;
}

GateVerdict decide_written(const Json& doc, const std::string& where) {
  return gate_verdict(parse_json(doc.done(), where), where);
}

std::vector<std::string> path_notes(const RunContext& ctx, const std::vector<PathRun>& runs) {
  std::vector<std::string> notes;
  for (const auto& r : runs) {
    const std::string n = path_note(r, bitwise_rerun_required(r.name, ctx.in.opt.strict_determinism), parity_limit_of(r));
    if (!n.empty()) notes.push_back("path " + r.name + ": " + n);
  }
  return notes;
}

// The notes of a run: each case's (a declined odd shape) and each path's, in order.
std::string notes_json(const std::vector<CaseResult>& cases, const std::vector<std::string>& path_notes) {
  Json a = Json::array();
  for (const auto& c : cases)
    if (!c.note.empty()) a.add(Json::str("case " + std::to_string(c.id) + " " + c.name + ": " + c.note));
  for (const auto& n : path_notes) a.add(Json::str(n));
  return a.done();
}

int run_gate(const RunContext& ctx) {
  const RunInputs& in = ctx.in;
  const Recipe& R = in.R;
  GateRun gr = run_cases_1_to_6(ctx, R.epochs, false);
  std::vector<CaseResult>& cases = gr.cases;
  const PathRun* gated_run = gr.gated();

  const RefTrainResult ref = case7_reference(in);
  cases.push_back(case_train(gated_run, ctx.gated, ref));
  print_case(cases.back());
  cases.push_back(case_perf(gr.runs, gated_run, R.epochs));
  print_case(cases.back());
  cases.push_back(case_guard_bands());
  print_case(cases.back());
  // Every trained path's checks are the verdict's too: none may fail beside "gate: PASS".
  const std::vector<std::string> path_fails = path_failures(ctx, gr.runs, ref);

  // run.json (docs/formats.md), decided by the verdict's one owner (gate/verdict.h) from the very
  // evidence it holds: the cases, the paths and their failures.
  Json cj = Json::array();
  for (const auto& c : cases) cj.add(case_json(c));
  const std::string paths = gate_paths_json(ctx, gr.runs, ref);
  const std::string run_json = in.opt.out + "/run.json";
  const GateVerdict v = decide_written(Json::object().set("gated_path", Json::str(ctx.gated)).set("cases", cj.done())
                                           .set("paths", paths).set("path_failures", strings_json(path_fails)),
                                       run_json);
  Json root = gate_header(ctx);
  root.set("memory", memory_watch().json())
      .set("cases", cj.done()).set("hints", strings_json(v.hints))
      .set("notes", notes_json(cases, path_notes(ctx, gr.runs))).set("paths", paths)
      .set("reference_fp64", reference_fp64_json(ref)).set("path_failures", strings_json(path_fails))
      .set("verdict", verdict_json(v));
  write_init_and_order(ctx);
  write_file_atomic(run_json, root.done() + "\n");
  std::fprintf(stderr, "wrote %s\n", run_json.c_str());

  print_hints(v.hints);
  for (const auto& f : path_fails) std::printf("FAIL %s\n", f.c_str());
  std::printf("gate: %s\n", v.passed ? "PASS (cases 1-7, 9, 10, 13, 14; every path's checks)" : "FAIL");
  const bool ok = v.passed;
  return ok ? kExitPass : kExitGateFailed;
}
