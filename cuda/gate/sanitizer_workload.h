// cuda/gate/sanitizer_workload.h — the workload compute-sanitizer runs for cases 11 (memcheck) and 12
// (racecheck): every entry point of the linked submission, and its epoch, on each code path the gate's
// cases reach, with the fewest calls and rows that reach them (racecheck's plan fewer still: kRace). A sanitizer's cost grows with the
// work it instruments (racecheck: every shared-memory access of every launch), so the workload is
// bounded by construction instead of being whole stages of the gate.
//
//   the recipe's shape (real images, the seed's initial weights, epoch 0's order), batch B (the
//   recipe's) and a tail T = max(1, min(13, B - 1)) (13 at B = 128: short of every tile; a row-at-a-time
//   tail costs racecheck a block's whole K loop per row, so the tail is no longer than that needs):
//     forward, loss, backward with dX, step at B; forward, loss, backward without dX at T;
//     mlp_train_epoch over B + T rows (one full step and one short one)
//   the odd shape 37-19-3 (gate/odd_shape.h, seeded data), batches 7 and 129 (one tile row and past it):
//     forward, loss, backward with dX, step at 7; forward, loss, backward without dX at 129;
//     mlp_train_epoch over 7 + 3 rows at batch 7 and over 129 + 7 rows at batch 129
//
// Each call takes the previous calls' outputs as its inputs (H and Z from forward, dZ from loss,
// grads from backward), so every value is a real one, never zeros. Buffers are exactly their size
// (plain cudaMalloc, no guard bands): an index past a buffer is an error memcheck names. A status
// other than MLP_OK is recorded and the calls go on (the odd shape declined with
// MLP_ERR_UNSUPPORTED skips its other calls); the cases judge statuses, the sanitizers only errors.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "gate/cases.h"

struct SanitizerWorkload {
  int calls = 0;                     // entry-point calls in one pass
  // each call's wall seconds, launch to synchronisation (measure: the timed pass's); under a
  // sanitizer, which calls its time goes to
  std::vector<std::pair<std::string, double>> call_seconds;
  std::vector<std::string> statuses; // "label: status" of each call not MLP_OK
  // measure only (run_sanitizer_workload(g, true)):
  double seconds = 0;                // one eager pass after a warm-up one, synchronised after each call
  int launches = -1;                 // kernel nodes of the pass captured into a CUDA graph; -1 when it
                                     // could not be captured (`capture` says why)
  int memory_ops = -1;               // memset and memcpy nodes of that graph
  std::string capture = "";          // "ok", or why the capture failed
};

// How the workload runs (--sanitizer-workload once|race|measure):
//   kOnce     the whole workload, one pass (memcheck's);
//   kRace     racecheck's plan: the odd shape's calls first; then, where the submission takes the
//             odd shape, only the recipe's epoch over one full batch; where it declines it, the recipe's
//             calls of kOnce. Racecheck costs a launch a whole block's K loop whatever its rows (a
//             13-row forward at the recipe's 784 columns costs it as much as a 128-row one: seconds
//             apiece for 32x32 tiles, docs/PERFLOG.md), while a kernel's shared-memory protocol is the
//             same at every size: the odd shape reaches every entry point's full and partial tiles and
//             its tail steps (3 and 7 rows), the recipe's full step the code the recipe's shape
//             selects. Assumed, and the one path it gives up: an entry point's code that only the
//             recipe's shape selects and the epoch never runs (memcheck, and cases 1-5, still run it);
//   kMeasure  the whole workload unsanitized: a warm-up pass, a timed pass (its call_seconds) and a
//             captured pass for the launch count (the limits of both tools derive from it).
enum class WorkloadRun { kOnce, kRace, kMeasure };

// One pass of the workload (kOnce, kRace: what a sanitizer runs), printing a line per call as it ends
// ("sanitizer workload: call N LABEL: S s"); kMeasure: silently, as above.
SanitizerWorkload run_sanitizer_workload(const GateInputs& g, WorkloadRun run);
// The workload's calls as one line, for the sanitizer cases' rows.
std::string sanitizer_workload_words(const GateInputs& g, WorkloadRun run);
