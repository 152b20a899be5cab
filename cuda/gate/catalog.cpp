#include "gate/catalog.h"

#include <algorithm>

#include "common/common.h"
#include "common/json.h"

const std::vector<CaseInfo>& gate_cases() {
  static const std::vector<CaseInfo> cases = {
      {1, "onebatch-forward", "entry", true, "mlp_forward (stage 1)",
       "one row's H and Z against float64, element-wise, at the recipe's shape and an odd one"},
      {2, "batch-forward", "entry", true, "mlp_forward (stage 1)",
       "a batch's H and Z against float64, norm-wise, at the recipe's shape and an odd one (batches 7, 129)"},
      {3, "loss-extreme", "entry", true, "mlp_loss (stage 2)",
       "loss and dZ for logits of +-60 and +-100 and ordinary ones, at both shapes"},
      {4, "grad-check", "entry", true, "mlp_backward (stage 3)",
       "200 gradient coordinates against float64 and central differences, dX when asked, at both shapes"},
      {5, "step", "entry", true, "mlp_step (stage 4)",
       "every parameter and velocity element, at the recipe's lr and momentum and at drawn ones"},
      {9, "epoch-check", "epoch-check", true, "mlp_train_epoch (stage 5)",
       "a short epoch with a tail batch against float64 within its propagated rounding bound (float32's, and the "
       "declared precision's), at the recipe, at drawn hyperparameters from a drawn state, and at the odd shape"},
      {13, "stream-contract", "contract", true, "",
       "every entry point captured into a CUDA graph on the caller's stream: no other stream, host synchronisation "
       "or allocation inside, nothing printed, and no device-memory growth over repeated calls"},
      {14, "invalid-args", "invalid-args", true, "",
       "every entry point with each required pointer NULL, and with batch 0 and -1, returns "
       "MLP_ERR_INVALID_ARGUMENT without enqueuing or writing anything"},
      {6, "overfit-32", "overfit", true, "mlp_train_epoch (stage 5)", "200 steps on 32 images: loss < 0.01"},
      {7, "train", "train", true, "mlp_train_epoch (stage 5)",
       "the recipe's 20 epochs: mean test accuracy of the last 5 within 1 pp of float64's"},
      {8, "perf", "train", false, "", "every path timed (epochs after the warm-up), finite"},
      {10, "guard-bands", "guard-bands", true, "", "no write outside any buffer in cases 1-6, 9 and 13"},
      {11, "memcheck", "memcheck", true, "",
       "compute-sanitizer memcheck on the sanitizer workload (every entry point, two short epochs, both shapes; "
       "exact-size buffers): 0 errors"},
      {12, "racecheck", "racecheck", true, "",
       "compute-sanitizer racecheck on the sanitizer workload's racecheck plan (the odd shape's calls, then the "
       "recipe's epoch over one batch, or all the recipe's calls where the odd shape is declined): 0 hazards, "
       "warnings included"},
  };
  return cases;
}

const std::vector<StageInfo>& gate_stages() {
  // The limits: max(floor, 30 s of setup + 50 x our fastest epoch x `epochs`) (harness/gate/stages.py);
  // 200 overfit steps of 32 images are about 5 epochs' steps; guard-bands repeats cases 1-6, 9 and 13
  // for every trained path; the sanitizer stages scale the unsanitized time (harness/gate/sanitizer_cases.py).
  static const std::vector<StageInfo> stages = {
      {"entry", {1, 2, 3, 4, 5}, "mlp_train", 30.0, 1.0, false},
      {"epoch-check", {9}, "mlp_train", 30.0, 1.0, false},
      {"contract", {13}, "mlp_train", 30.0, 2.0, true},
      {"invalid-args", {14}, "mlp_train", 30.0, 0.0, false},
      {"overfit", {6}, "mlp_train", 30.0, 5.0, false},
      {"train", {7, 8}, "mlp_train", 120.0, 0.0, true},
      {"guard-bands", {10}, "mlp_train", 30.0, 6.0, false},
      {"memcheck", {11}, "compute-sanitizer", 120.0, 0.0, false},
      {"racecheck", {12}, "compute-sanitizer", 300.0, 0.0, false},
  };
  return stages;
}

std::vector<std::string> binary_stage_names() {
  std::vector<std::string> names;
  for (const auto& st : gate_stages())
    if (std::string(st.runner) == "mlp_train") names.push_back(st.name);
  return names;
}

const CaseInfo* find_case(int id) {
  for (const auto& c : gate_cases())
    if (c.id == id) return &c;
  return nullptr;
}

void check_stage_names(const std::vector<std::string>& names, const std::string& flag) {
  const std::vector<std::string> known = binary_stage_names();
  for (const auto& n : names)
    if (std::find(known.begin(), known.end(), n) == known.end()) {
      std::string have;
      for (const auto& k : known) have += (have.empty() ? "" : ", ") + k;
      throw UserError(flag + ": no stage named '" + n + "' (have: " + have + ")");
    }
}

std::string catalog_json() {
  Json cases = Json::array();
  for (const auto& c : gate_cases())
    cases.add(Json::object().set("id", Json::num(c.id)).set("name", Json::str(c.name)).set("stage", Json::str(c.stage))
                  .set("decides", Json::boolean(c.decides)).set("entry_point", Json::str(c.entry_point))
                  .set("checks", Json::str(c.checks)).done());
  Json stages = Json::array();
  for (const auto& s : gate_stages()) {
    Json ids = Json::array();
    for (int i : s.cases) ids.add(Json::num(i));
    stages.add(Json::object().set("name", Json::str(s.name)).set("cases", ids.done()).set("runner", Json::str(s.runner))
                   .set("floor_s", Json::num(s.floor_s)).set("epochs", Json::num(s.epochs))
                   .set("exclusive", Json::boolean(s.exclusive)).done());
  }
  return Json::object().set("cases", cases.done()).set("stages", stages.done()).done();
}
