#include <cstdio>

#include "exit_status.h"
#include "hints.h"
#include "modes.h"
#include "path_checks.h"

int run_quick(const RunContext& ctx) {
  GateRun gr = run_cases_1_to_6(ctx, 1, ctx.in.opt.smoke);
  bool ok = true;
  for (const auto& c : gr.cases) ok &= c.passed;
  for (const auto& r : gr.runs) ok &= r.ok && r.overfit.passed;
  print_hints(hints_for(gr.cases));
  std::printf("quick run: %s\n", ok ? "all passed" : "FAILED");
  return ok ? kExitPass : kExitGateFailed;
}
