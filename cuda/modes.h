// cuda/modes.h — what mlp_train does once its inputs are checked and the GPU is up, one mode per
// file; each returns the exit status (cuda/exit_status.h).
#pragma once
#include "run_context.h"

// cuda/mode_gate.cpp: the default. Cases 1–8 on every path; then writes OUT/init_params.npy,
// OUT/order.npy and OUT/run.json; 0 when cases 1–7 pass, else 1.
int run_gate(const RunContext& ctx);

// cuda/mode_quick.cpp: --quick (cases 1–6 and one training epoch per path, for the sanitizers)
// and --smoke (--quick without case 6 and the bitwise rerun, for racecheck). Writes nothing.
int run_quick(const RunContext& ctx);

// cuda/mode_perf_only.cpp: --perf-only (case 8 alone, for the sweeps): every path trains and is
// timed; then writes OUT/init_params.npy, OUT/order.npy and OUT/run.json ("mode": "perf-only").
int run_perf_only(const RunContext& ctx);

// cuda/mode_profile.cpp: --profile PATH: two warm-up epochs, then one epoch of PATH inside the
// NVTX range "profile-epoch" for Nsight Systems. Writes nothing.
int run_profile(const RunContext& ctx);

// The seed's (or --init's) weights and the run's epoch orders into OUT, which the PyTorch
// baseline loads (docs/formats.md); creates OUT when missing. Called just before run.json is
// written, so a run that stops early leaves OUT as it was.
void write_init_and_order(const RunContext& ctx);
