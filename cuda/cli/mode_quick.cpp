#include <cstdio>

#include "common/exit_status.h"
#include "gate/hints.h"
#include "cli/modes.h"
#include "cli/path_checks.h"

int run_quick(const RunContext& ctx) {
  GateRun gr = run_cases_1_to_6(ctx, 1, ctx.in.opt.smoke);
  gr.cases.push_back(case_guard_bands());
  print_case(gr.cases.back());
  bool ok = true;
  for (const auto& c : gr.cases) ok &= c.passed;
  std::vector<std::string> path_fails;
  for (const auto& r : gr.runs) {
    ok &= r.ok && r.overfit.passed;
    const std::string f = path_failure(r, !ctx.in.opt.smoke, parity_limit_of(r),
                                       bitwise_rerun_required(r.name, ctx.in.opt.strict_determinism));
    if (!f.empty()) path_fails.push_back(f);
  }
  ok &= path_fails.empty();
  print_hints(hints_for(gr.cases));
  for (const auto& f : path_fails) std::printf("FAIL %s\n", f.c_str());
  std::printf("quick run: %s\n", ok ? "all passed" : "FAILED");
  return ok ? kExitPass : kExitGateFailed;
}
