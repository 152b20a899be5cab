// cuda/cli/run_json.h — the pieces of results/run.json (docs/formats.md) shared by the gate run and
// the perf-only run: the GPU, the recipe, one case, one path's timing and curves, the hints.
#pragma once
#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "gate/case_result.h"
#include "common/json.h"
#include "io/recipe.h"
#include "paths/train_loop.h"

std::string utc_now();                               // "2026-11-30T19:00:00Z"
std::string command_line(int argc, char** argv);     // argv joined by spaces
std::string run_id_json(const std::string& run_id);  // the --run-id string, or null
std::string gpu_json(const cudaDeviceProp& prop);
// "device_limits": the limits the paths were fitted to, and the MLP_CAP_* caps in force.
std::string device_limits_json();
std::string recipe_json(const Recipe& R, int n_test, size_t n_params);
std::string case_json(const CaseResult& c);
// A JSON array of strings (run.json's "hints", "path_failures").
std::string strings_json(const std::vector<std::string>& v);
// Timing, accuracy and loss of one path's run (the gate adds its verdicts to these); "config"
// (what it ran in; null when skipped) and, only for a path that did not fit, "skipped" (why).
Json& add_path_run(Json& o, const PathRun& r);
