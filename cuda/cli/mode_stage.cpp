// cuda/cli/mode_stage.cpp — --stage a,b (modes.h): stages of the gate, each in the process the
// supervisor (harness/gate/supervisor.py) starts for it, so that a hang or a fault fails one stage and
// the later ones still run. Each stage runs exactly what the unstaged gate (mode_gate.cpp) runs
// for its cases, with the same functions, and writes OUT/stage-<name>.json; the supervisor merges
// the parts into a run.json of the unstaged shape.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <stdexcept>

#include "common/common.h"
#include "common/exit_status.h"
#include "gate/cases.h"
#include "gate/contract.h"
#include "gate/verdict.h"
#include "cli/modes.h"
#include "cli/path_checks.h"
#include "cli/run_json.h"

namespace {

bool has(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// Case 6's path, as the unstaged gate picks it (find_gated): the gated path, else the first of --paths.
std::string overfit_path(const RunContext& ctx) {
  return has(ctx.in.names, ctx.gated) || ctx.in.names.empty() ? ctx.gated : ctx.in.names.front();
}

// Case 6 of one path as check_and_train_paths runs it: fitted at the recipe's batch first (the
// overfit's batch of 32 is then a re-fit, as there); a path the device cannot run (never the
// gated one) is not run.
CaseResult overfit_of(const RunContext& ctx, const GateInputs& g, const std::string& name) {
  std::unique_ptr<mlp::KernelPath> path = mlp::make_path(name);
  const mlp::PathFit fit = path->fit(mlp::effective_limits(), ctx.in.s, ctx.in.R.batch);
  if (!fit.runs() && name != ctx.gated) {
    CaseResult c;
    c.id = 6;
    c.name = "overfit-32";
    c.value = NAN;
    c.limit = 0.01;
    c.passed = true;
    c.detail = "not run (path skipped on this device)";
    return c;
  }
  return case_overfit32(g, *path);
}

std::vector<CaseResult> entry_cases(const GateInputs& g) {
  std::vector<CaseResult> c;
  for (auto fn : {case_onebatch_forward, case_batch_forward, case_loss_extreme, case_grad_check, case_step})
    c.push_back(fn(g));
  return c;
}

// OUT/stage-<stage>.json: `root` with the stage's cases and their verdict (gate/verdict.h: a part
// is held to its own stage's cases and, for train, its paths); returns that verdict.
GateVerdict write_part(const RunContext& ctx, const std::string& stage, const std::vector<CaseResult>& cases,
                       Json& root) {
  Json cj = Json::array();
  for (const auto& c : cases) cj.add(case_json(c));
  root.set("cases", cj.done());
  make_out_dir(ctx.in.opt.out);
  const std::string file = ctx.in.opt.out + "/stage-" + stage + ".json";
  const GateVerdict v = gate_verdict(parse_json(root.done(), file), file);
  root.set("verdict", verdict_json(v));
  write_file_atomic(file, root.done() + "\n");
  std::fprintf(stderr, "wrote %s\n", file.c_str());
  return v;
}

// One stage: its cases printed as they finish, its part written; true when its verdict passes.
bool run_stage(const RunContext& ctx, const std::string& stage) {
  const GateInputs g = gate_inputs(ctx);
  std::vector<CaseResult> cases;
  Json root = gate_header(ctx);
  root.set("stage", Json::str(stage));
  auto run = [&](CaseResult c) {
    cases.push_back(c);
    print_case(cases.back());
  };
  if (stage == "entry") {
    for (auto fn : {case_onebatch_forward, case_batch_forward, case_loss_extreme, case_grad_check, case_step})
      run(fn(g));
  } else if (stage == "epoch-check") {
    run(case_epoch_check(g));
  } else if (stage == "contract") {
    run(case_stream_contract(g));
  } else if (stage == "invalid-args") {
    run(case_invalid_arguments(g));
  } else if (stage == "overfit") {
    run(overfit_of(ctx, g, overfit_path(ctx)));
  } else if (stage == "train") {
    const Recipe& R = ctx.in.R;
    const std::vector<PathRun> runs = check_and_train_paths(ctx, g, R.epochs, false);
    const PathRun* gated_run = find_gated(runs, ctx.gated);
    const RefTrainResult ref = case7_reference(ctx.in);
    run(case_train(gated_run, ctx.gated, ref));
    run(case_perf(runs, gated_run, R.epochs));
    const std::vector<std::string> fails = path_failures(ctx, runs, ref);
    Json fj = Json::array();
    for (const auto& f : fails) {
      fj.add(Json::str(f));
      std::printf("FAIL %s\n", f.c_str());
    }
    root.set("memory", memory_watch().json())
        .set("paths", gate_paths_json(ctx, runs, ref))
        .set("reference_fp64", reference_fp64_json(ref))
        .set("path_failures", fj.done())
        .set("path_notes", notes_json({}, path_notes(ctx, runs)));
    write_init_and_order(ctx);
  } else if (stage == "guard-bands") {
    // The guarded calls of cases 1-6, 9 and 13 again, in this process (every path's overfit, as
    // check_and_train_paths runs them), then case 10 over their hits; their own rows are not
    // this stage's (the stages entry, epoch-check, contract and overfit report them).
    entry_cases(g);
    case_epoch_check(g);
    case_stream_contract(g);
    for (const auto& name : ctx.in.names) overfit_of(ctx, g, name);
    run(case_guard_bands());
  } else {
    throw std::logic_error("run_stage: unknown stage " + stage);
  }
  if (stage != "train") root.set("memory", memory_watch().json());
  return write_part(ctx, stage, cases, root).passed;
}

}  // namespace

int run_stages(const RunContext& ctx) {
  print_table_header();
  bool ok = true;
  for (const auto& stage : ctx.in.opt.stages) ok &= run_stage(ctx, stage);
  return ok ? kExitPass : kExitGateFailed;
}
