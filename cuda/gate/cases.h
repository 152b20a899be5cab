// cuda/gate/cases.h — the gate: cases 1–10. Cases 1–5 run against the linked submission's entry
// points, case 6 against any kernel path, case 7 compares the gated path's trained accuracy with
// the float64 reference, case 8 times every path, case 9 runs the submission's mlp_train_epoch
// for a short epoch against float64, case 10 sums the guard-band hits of cases 1–6 and 9 (every
// buffer they hand a submission has poisoned guard bands, cuda/gate/guard.h; a hit also fails the
// case that made the call). Every case but 8 decides the verdict (gate/verdict.h); case 8 is
// recorded (every path timed with finite results) but decides nothing. Each returns a verdict
// with the measured value and the limit it was held to, both printed.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "common/declared_precision.h"
#include "gate/case_result.h"
#include "gate/cpu_reference.h"
#include "io/dataset.h"
#include "io/inputs.h"
#include "paths/kernel_path.h"
#include "paths/registry.h"
#include "io/recipe.h"
#include "paths/train_loop.h"

// Everything the cases need, already on the device where they run there.
struct GateInputs {
  MlpShape s;
  const Recipe* recipe;
  const Dataset* data;
  const std::vector<float>* init;          // initial parameters (host)
  const std::vector<int32_t>* order0;      // epoch 0's order (host)
  const float* d_train_x;                  // device copies of the training set
  const int* d_train_y;
  uint64_t seed;
  // The linked submission's precision (mlp_precision(), common/declared_precision.h): the one
  // owner of the gate's precision; cases 1, 2, 4 and 9 derive their limits from it
  // (gate/tolerances.h), cases 3 and 5 name it and keep float32's.
  mlp::DeclaredPrecision precision;
};

CaseResult case_onebatch_forward(const GateInputs& g);
CaseResult case_batch_forward(const GateInputs& g);
CaseResult case_loss_extreme(const GateInputs& g);
CaseResult case_grad_check(const GateInputs& g);
CaseResult case_step(const GateInputs& g);
// 32 images, 200 steps of `path` (one 32-image epoch each), final loss < 0.01.
CaseResult case_overfit32(const GateInputs& g, mlp::KernelPath& path);

// Case 14 (cuda/gate/invalid_args.cu): every entry point with each required pointer NULL and with
// batch 0 and −1 returns MLP_ERR_INVALID_ARGUMENT without enqueuing or writing anything.
CaseResult case_invalid_arguments(const GateInputs& g);

// Case 9: 2 full batches and a tail batch (300 rows at batch 128) of mlp_train_epoch from the
// initial parameters and a seeded velocity U(±1e-3); every parameter, velocity element and step
// loss against float64 within twice the propagated bound of cuda/gate/epoch_check.h (float32's, plus
// the declared precision's rounding of the products' inputs: GateInputs::precision).
CaseResult case_epoch_check(const GateInputs& g);
// Case 9 on a kernel path's own epoch at the path's precision (KernelPath::precision(): our TF32
// and BF16 paths' gate, as the declared precision's is a submission's): the recipe's part, and the
// odd shape's at batches 7 and 129 where the path fits them. Cases 1-5 need entry points, which a
// whole-epoch path does not have.
CaseResult case_path_epoch_check(const GateInputs& g, mlp::KernelPath& path);
// Case 10: the guard-band hits of this process so far (0 passes).
CaseResult case_guard_bands();
// A guard-band hit found outside cases.cu ("case 13: H [..]: ..."), counted by case 10.
void record_guard_hit(const std::string& hit);

// The table's header line on stdout.
void print_table_header();
// Prints the table's header, then runs and prints the cases of the submission's entry points:
// 1–5, 9 and 13 (the stages entry, epoch-check and contract in one process).
std::vector<CaseResult> run_entry_cases(const GateInputs& g);
// One row of the table on stdout (SKIP for a case that was not run).
void print_case(const CaseResult& c);

// The gated path's run ("fused", or "submission" for a learner's file); when --paths leaves it
// out, the first path run; nullptr when none ran.
const PathRun* find_gated(const std::vector<PathRun>& runs, const std::string& gated);
// Case 6's row: the gated run's overfit-32 verdict.
CaseResult case6_row(const PathRun* gated_run, const std::string& gated);

// Case 7's float64 reference from the same initial weights and order: trained in this run
// (same-run, progress on stderr) or read from DATA/reference (--reference shipped).
RefTrainResult case7_reference(const RunInputs& in);
// Case 7: |mean test accuracy of the last 5 epochs of `r` − float64's| ≤ 1 pp. The mean of the
// last five, not the last epoch alone: at lr 0.1 and momentum 0.9 the float32 and float64 runs
// follow one trajectory for the first epochs and then drift apart chaotically, and a single
// epoch's test accuracy swings by up to 4 pp from one epoch to the next (measured on the H200
// with PyTorch and with our paths), so a last-epoch comparison would pass or fail correct code by
// chance. Both are printed. `r` nullptr: the gated path did not run.
CaseResult case_train(const PathRun* r, const std::string& gated, const RefTrainResult& ref);
// Case 8: every path timed (epochs 1.. after the warm-up) with finite results; its value is the
// gated path's median epoch time.
CaseResult case_perf(const std::vector<PathRun>& runs, const PathRun* gated_run, int epochs);

// Why a trained path fails the gate ("" when it does not, or was skipped on this device): it did not train, its one-epoch
// parity with the fused path exceeds `parity_limit`, or (when checked) its rerun differed.
// `bitwise`: the rerun must be bitwise identical (bitwise_rerun_required); else a rerun within
// `parity_limit` of the first run passes with path_note's note.
std::string path_failure(const PathRun& r, bool rerun_checked, double parity_limit, bool bitwise);
// "nondeterministic: reruns differ by 3.1e-07 (limit 1e-02)" for a path whose rerun differed but
// passed; "" otherwise.
std::string path_note(const PathRun& r, bool bitwise, double parity_limit);
// Our paths keep the bitwise rerun; a linked submission only with --strict-determinism.
bool bitwise_rerun_required(const std::string& path, bool strict_determinism);
