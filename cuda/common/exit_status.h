// cuda/common/exit_status.h — the exit statuses of mlp_train and mlp_host, one meaning each (printed by
// --help, documented in docs/formats.md; harness/run.py reads a run.json only after 0 or 1).
#pragma once

enum ExitStatus {
  kExitPass = 0,        // every gate case passed (or the mode finished: --profile, a passing --quick)
  kExitGateFailed = 1,  // a gate case failed (FAIL in the table); --perf-only: a path failed to train
  kExitBadInput = 2,    // a flag, file, recipe or data file: one line naming it, nothing run or written
  kExitCudaError = 3,   // no CUDA device, no code for this GPU, or a CUDA fault
  kExitInternal = 4,    // anything else, std::bad_alloc (out of host memory) included
};

constexpr const char* kExitStatusHelp =
    "exit status: 0 every gate case passed (or the mode finished: --profile, a passing --quick)\n"
    "             1 the gate failed: a case failed; --perf-only: a path failed to train\n"
    "             2 bad input: a flag, file, recipe or data file (one line naming it; nothing written)\n"
    "             3 CUDA error: no device, no code for this GPU (rebuild with --arch), or a CUDA fault\n"
    "             4 internal error: anything else, out of host memory (std::bad_alloc) included\n";
