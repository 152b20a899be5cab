// cuda/common/declared_precision.h — the precision the linked submission declares through
// submission.h's optional mlp_precision(): the one place that asks it, and checks the answer.
// A submission that does not define mlp_precision() is FP32: the reference to it here is weak
// (declared_precision.cpp), so a program linked without a definition (ours, mlp_host) finds none
// and takes the default; one whose submission defines it calls that definition.
#pragma once
#include <string>

#include "common/precision.h"

namespace mlp {

struct DeclaredPrecision {
  Precision precision = Precision::FP32;
  bool declared = false;  // the submission defines mlp_precision(); false: not defined, FP32
  // "tf32, declared by mlp_precision()"; "fp32, the default: mlp_precision() not defined"
  std::string source() const;
};

// The linked submission's answer, asked once per process (later calls return the first). A value
// other than MLP_PRECISION_FP32, _TF32 or _BF16 is a UserError naming it: mlp_train prints one
// line and exits 2 (bad input) before the GPU is touched.
DeclaredPrecision declared_precision();

// The check itself, on a value mlp_precision() returned: its precision, or the UserError above.
Precision checked_declaration(int value);

}  // namespace mlp
