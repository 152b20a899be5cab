// cuda/transformer/checks.h — `vit_forward check`: the device's forward against the float64 reference
// (reference.h) on the same weights and test images, each tensor against its rounding bound
// (error_scale.h), printed like the gate's cases (check, value, limit, PASS/FAIL) and returned as JSON.
#pragma once
#include <string>
#include <vector>

#include "transformer/forward.h"
#include "transformer/error_scale.h"  // OperandRounding
#include "transformer/reference.h"

struct CheckRow {
  std::string name;     // "L1.ln1", "logits", ...
  std::string measure;  // "worst" (max |x − x64| / S) or "normwise" (‖x − x64‖₂ / ‖S‖₂)
  double value = 0, limit = 0, depth = 0;
  bool passed = false;
  std::string detail;   // the definition of the limit
};

struct CheckInputs {
  const VitShape* s = nullptr;
  const std::vector<float>* params = nullptr;  // file layout
  const std::vector<float>* images = nullptr;  // the test images, [n × image²]
  int n_images = 0;
  int layer_batch = 32;    // images for layer one's sub-operations
  int logits_batch = 256;  // images for the full forward's logits
  std::vector<int> explain;  // test images whose logits and bounds are reported (the accuracy comparison's)
};

struct CheckReport {
  std::vector<CheckRow> rows;
  bool passed = false;
  int argmax_agree = 0, argmax_n = 0;  // the logits batch: our top-1 against float64's
  std::string explain_json = "[]";     // [{"index", "ours": [...], "ref": [...], "bound": [...]}]
  double ref_seconds = 0;
};

// The rounding of an engine's GEMM operands (error_scale.h): bfloat16's for bf16, none for fp32 and
// tf32x3 (float32-accurate products).
OperandRounding operand_rounding(GemmEngine e);

// Runs everything on the device of `f` (its engine's bounds: operand_rounding) (whose max_batch covers the batches) and the CPU reference
// (OpenMP over images); prints the table to stdout.
CheckReport run_checks(VitForward& f, const CheckInputs& in);

std::string check_rows_json(const std::vector<CheckRow>& rows);
