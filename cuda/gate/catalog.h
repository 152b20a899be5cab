// cuda/gate/catalog.h — the one owner of the gate's lists: every case (id, name, the stage that runs
// it, whether it decides the verdict, the entry point a "not implemented" case asks for next) and
// every stage (its cases, in the order the supervisor runs them, who runs it, its time-limit
// floor and its GPU work in epochs, and whether it needs the GPU to itself). `mlp_host catalog`
// prints both as JSON (catalog_json); the Python side (spec/catalog.py) reads that output instead
// of keeping copies. Plain data and lookups: no CUDA, no other header of ours.
#pragma once
#include <string>
#include <vector>

struct CaseInfo {
  int id;
  const char* name;
  const char* stage;         // the stage that runs it (StageInfo::name)
  bool decides;              // counts for the verdict (case 8 is timing only)
  const char* entry_point;   // "mlp_forward (stage 1)": what to write next when it is not implemented ("" none)
  const char* checks;        // one line: what it holds the submission to
};

struct StageInfo {
  const char* name;
  std::vector<int> cases;    // in run order
  const char* runner;        // "mlp_train" (mlp_train --stage NAME) or "compute-sanitizer" (the tool on `mlp_train --sanitizer-workload once`, gate/sanitizer_workload.h)
  double floor_s;            // the time limit's floor, seconds
  double epochs;             // its GPU work in our fastest path's epochs (per trained path for guard-bands; the
                             // train stage's limit is the whole run's, harness/gate/child.py)
  bool exclusive;            // needs the GPU to itself: it times epochs or reads the device's free memory
};

// Every case, in the order the table prints them (entry, epoch-check, contract, overfit, train,
// guard-bands, then the sanitizer cases).
const std::vector<CaseInfo>& gate_cases();
// Every stage, in the order the supervisor runs them.
const std::vector<StageInfo>& gate_stages();
// The stages `mlp_train --stage` runs (runner "mlp_train"), in order.
std::vector<std::string> binary_stage_names();
// The case of `id`; nullptr when there is none.
const CaseInfo* find_case(int id);
// Throws UserError naming the flag unless every name is a binary stage.
void check_stage_names(const std::vector<std::string>& names, const std::string& flag);
// The catalog as one JSON object: {"cases": [...], "stages": [...]}.
std::string catalog_json();
