// cuda/gate/hints.h — what failed gate cases usually mean, for learners: printed under the table and
// written to run.json ("hints"), so RESULTS.md's "What to fix next" and the leaderboard carry them.
// The one owner of the hints: the supervisor, which merges stages run in separate processes, asks
// `mlp_host hints` for the merged run's (harness/gate/stages.py).
#pragma once
#include <string>
#include <vector>

#include "gate/case_result.h"

// What a stage that timed out, or died or faulted, usually means.
extern const char* const kHintTimeout;
extern const char* const kHintFault;
// A stage that exited 3 before any case: the GPU was never reached.
extern const char* const kHintNoDevice;
// Cases 11-12 without compute-sanitizer.
extern const char* const kHintNoSanitizer;

// From the mutants in tests/submissions/ and the fixes they needed. A "not implemented" case names
// the entry point to write next and nothing else. `path_failures`: the paths that fail their parity
// or rerun (cases.h path_failure); `endings`: how the stages that did not end by themselves ended
// ("timed out after 25 s", "died: SIGSEGV", "CUDA error: ..."). Every failed case that decides the
// verdict gets a hint: one without a hint of its own gets its row's detail.
std::vector<std::string> hints_for(const std::vector<CaseResult>& cases,
                                   const std::vector<std::string>& path_failures = {},
                                   const std::vector<std::string>& endings = {});
// "hint: ..." lines on stdout.
void print_hints(const std::vector<std::string>& hints);
