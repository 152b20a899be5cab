// cuda/cli/modes.h — what mlp_train does once its inputs are checked and the GPU is up, one mode per
// file; each returns the exit status (cuda/common/exit_status.h).
#pragma once
#include <string>
#include <vector>

#include "gate/cpu_reference.h"
#include "common/json.h"
#include "cli/run_context.h"
#include "paths/train_loop.h"

// cuda/cli/mode_gate.cpp: the default. Every case mlp_train runs, on every path; then writes
// OUT/init_params.npy, OUT/order.npy and OUT/run.json with its "verdict" (gate/verdict.h); 0 when
// that verdict is PASS, else 1.
int run_gate(const RunContext& ctx);

// cuda/cli/mode_stage.cpp: --stage a,b: only those stages of the gate (kStageNames, cuda/io/options.h),
// each writing OUT/stage-<name>.json: the top of run.json, "stage", "cases" (its own), and for
// train "memory", "paths", "reference_fp64", "path_failures" and OUT/init_params.npy, order.npy.
// and "verdict", the part's own (gate/verdict.h: its stage's cases, and for train its paths).
// 0 when every part's verdict is PASS, else 1.
int run_stages(const RunContext& ctx);

// Pieces of run.json the gate and the stages share (cuda/cli/mode_gate.cpp): its top (schema ..
// reference_source), "paths" of a gate run, "reference_fp64", and the trained paths that fail
// their checks (trained_path_failure).
Json gate_header(const RunContext& ctx);
std::string gate_paths_json(const RunContext& ctx, const std::vector<PathRun>& runs, const RefTrainResult& ref);
std::string reference_fp64_json(const RefTrainResult& ref);
// The first check a trained path fails, "" when none (or skipped on this device): path_failure's (it
// trained; its epoch check at its precision; its parity; its rerun), then its overfit-32 and its
// training accuracy against float64 (the gated path's are also cases 6 and 7). run.json's
// paths.<name>.passed and .failure are this.
std::string trained_path_failure(const RunContext& ctx, const PathRun& r, const RefTrainResult& ref);
std::vector<std::string> path_failures(const RunContext& ctx, const std::vector<PathRun>& runs,
                                       const RefTrainResult& ref);
// The notes of the trained paths (path_note: a submission's rerun that differed within the limit).
std::vector<std::string> path_notes(const RunContext& ctx, const std::vector<PathRun>& runs);
// run.json's "notes": each case's note, then `path_notes`.
std::string notes_json(const std::vector<CaseResult>& cases, const std::vector<std::string>& path_notes);

// cuda/cli/mode_quick.cpp: --quick (cases 1–6 and one training epoch per path, for the sanitizers)
// and --smoke (--quick without case 6 and the bitwise rerun, for racecheck). Writes nothing.
int run_quick(const RunContext& ctx);

// cuda/cli/mode_sanitizer_workload.cpp: --sanitizer-workload once|measure (gate/sanitizer_workload.h):
// one pass of the workload compute-sanitizer runs for cases 11-12; "measure" also times a pass and
// counts its launches into OUT/sanitizer-workload.json. 0 once the pass ran (the statuses are the
// cases' to judge), 3 on a CUDA error.
int run_sanitizer_workload_mode(const RunContext& ctx);

// cuda/cli/mode_perf_only.cpp: --perf-only (case 8 alone, for the sweeps): every path trains and is
// timed; then writes OUT/init_params.npy, OUT/order.npy and OUT/run.json ("mode": "perf-only").
int run_perf_only(const RunContext& ctx);

// cuda/cli/mode_profile.cpp: --profile PATH: two warm-up epochs, then one epoch of PATH inside the
// NVTX range "profile-epoch" for Nsight Systems. Writes nothing.
int run_profile(const RunContext& ctx);

// The seed's (or --init's) weights and the run's epoch orders into OUT, which the PyTorch
// baseline loads (docs/formats.md); creates OUT when missing. Called just before run.json is
// written, so a run that stops early leaves OUT as it was.
void write_init_and_order(const RunContext& ctx);
