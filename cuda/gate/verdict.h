// cuda/gate/verdict.h — the gate's one verdict, PASS or FAIL, of a run.json document (docs/formats.md).
// Its one owner: mlp_train decides the run.json and stage parts it writes with it (cli/mode_gate.cpp,
// cli/mode_stage.cpp) and exits by it; the supervisor, the sanitizer cases, RESULTS.md, each
// submission's RESULTS.md and the leaderboard ask it of the documents they merge or read
// (`mlp_host verdict`, spec/verdict.py). No other code decides PASS or FAIL.
//
// The rule. A run passes when nothing below fails:
//   - every case that decides the verdict (the catalog's; all but 8) has a row with "passed": true;
//     a row false or null (not run), or a required case with no row, fails. The required cases are
//     the deciding cases of the stages the document ran: a stage part's ("stage": NAME) its stage's;
//     a supervised run's, those of every stage its supervisor block records (the sanitizer stages
//     when they ran); otherwise (the binary deciding the run.json it writes, one process) every stage
//     mlp_train runs today; and always those its own recorded verdict required (the gate of its day);
//   - every trained path passes its checks: a record under "paths" that is not skipped has
//     "passed": true, and no string of "path_failures" (top level or the supervisor block's) names
//     it; the gated path skipped fails too;
//   - every stage ended by itself: no supervisor stage record of mlp_train's ended other than
//     "exited 0" or "exited 1", no "stage_failures" entry, and (one process, no stages) the
//     supervisor's "ended" is "exited 0" or "exited 1". A sanitizer stage's case row speaks for it.
// The hints are cuda/gate/hints.h's over the same evidence.
#pragma once
#include <string>
#include <vector>

#include "common/json_read.h"

struct GateVerdict {
  bool passed = false;
  std::vector<std::string> reasons;        // what failed, in this order: cases (table order), paths, stages
  std::vector<int> failed_cases;           // deciding cases that failed, were not run or have no row
  std::vector<std::string> failed_paths;   // trained paths that fail a check
  std::vector<std::string> failed_stages;  // stages that did not end by themselves
  std::vector<int> required_cases;         // the deciding cases the document had to have
  std::vector<std::string> hints;          // hints_for over the same cases, path failures and endings
  // The hint a one-line output shows beside FAIL: the first hint ("" on PASS); a FAIL always has one.
  std::string first_hint() const;
};

// The verdict of `run` (a run.json or a stage part, parsed); `where` names it in errors. A document
// that is not an object, or whose "cases" is not an array, is a UserError.
GateVerdict gate_verdict(const JsonValue& run, const std::string& where);
// {"passed", "word", "first_hint", "reasons", "failed_cases", "failed_paths", "failed_stages",
//  "required_cases", "hints"}: run.json's "verdict" (docs/formats.md).
std::string verdict_json(const GateVerdict& v);
// "PASS" or "FAIL".
const char* verdict_word(const GateVerdict& v);
