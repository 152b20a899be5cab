// cuda/gate/hints.h — what failed gate cases usually mean, for learners: printed under the table and
// written to run.json ("hints"), so RESULTS.md's "What to fix next" carries them.
#pragma once
#include <string>
#include <vector>

#include "gate/case_result.h"

// From the mutants in tests/submissions/ and the fixes they needed. A "not implemented" case
// names the stage to write next, one stage at a time.
std::vector<std::string> hints_for(const std::vector<CaseResult>& cases);
// "hint: ..." lines on stdout.
void print_hints(const std::vector<std::string>& hints);
