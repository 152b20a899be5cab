// cuda/cli/mode_sanitizer_workload.cpp — --sanitizer-workload once|race|measure (modes.h): the workload of
// gate/sanitizer_workload.h, and for "measure" its time and launches as
//   OUT/sanitizer-workload.json {"calls", "launches", "memory_ops", "seconds", "capture", "statuses",
//                                "call_seconds", "workload", "race_workload"}
// (docs/formats.md), which harness/gate/sanitizer_cases.py derives the sanitizers' time limits from.
#include <cstdio>

#include "common/common.h"
#include "common/exit_status.h"
#include "common/json.h"
#include "cli/modes.h"
#include "cli/path_checks.h"
#include "gate/sanitizer_workload.h"
#include "io/options.h"

int run_sanitizer_workload_mode(const RunContext& ctx) {
  const GateInputs g = gate_inputs(ctx);
  const std::string& mode = ctx.in.opt.sanitizer_workload;
  const bool measure = mode == "measure";
  const WorkloadRun run = measure ? WorkloadRun::kMeasure : mode == "race" ? WorkloadRun::kRace : WorkloadRun::kOnce;
  const SanitizerWorkload w = run_sanitizer_workload(g, run);
  std::printf("sanitizer workload: %d calls", w.calls);
  if (measure) std::printf(", %d launches, %d memory operations, %.3f s (%s)", w.launches, w.memory_ops, w.seconds,
                           w.capture.c_str());
  std::printf("\n");
  for (const auto& s : w.statuses) std::printf("sanitizer workload: not ok: %s\n", s.c_str());
  if (measure) {
    Json st = Json::array();
    for (const auto& s : w.statuses) st.add(Json::str(s));
    Json per_call = Json::array();
    for (const auto& c : w.call_seconds)
      per_call.add(Json::object().set("call", Json::str(c.first)).set("seconds", Json::num(c.second)).done());
    make_out_dir(ctx.in.opt.out);
    const std::string file = ctx.in.opt.out + "/sanitizer-workload.json";
    write_file_atomic(file, Json::object()
                                .set("calls", Json::num(w.calls)).set("launches", Json::num(w.launches))
                                .set("memory_ops", Json::num(w.memory_ops)).set("seconds", Json::num(w.seconds))
                                .set("capture", Json::str(w.capture)).set("statuses", st.done())
                                .set("call_seconds", per_call.done())
                                .set("workload", Json::str(sanitizer_workload_words(g, WorkloadRun::kOnce)))
                                .set("race_workload", Json::str(sanitizer_workload_words(g, WorkloadRun::kRace))).done() + "\n");
    std::fprintf(stderr, "wrote %s\n", file.c_str());
  }
  std::fflush(stdout);
  return kExitPass;
}
