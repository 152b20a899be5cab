#include "common/declared_precision.h"

#include "common/common.h"
#include "contract/submission.h"

// mlp_precision() is optional (submission.h): a weak reference, null when no object linked into
// this program defines it. A definition in the submission's object (or anywhere else linked in)
// takes its place; nothing else of ours refers to the symbol, so no definition is ever required.
#pragma weak mlp_precision

static_assert(MLP_PRECISION_FP32 == (int)mlp::Precision::FP32 && MLP_PRECISION_TF32 == (int)mlp::Precision::TF32 &&
                  MLP_PRECISION_BF16 == (int)mlp::Precision::BF16,
              "submission.h's MlpPrecision values are mlp::Precision's (common/precision.h)");

namespace mlp {

std::string DeclaredPrecision::source() const {
  return std::string(precision_name(precision)) +
         (declared ? ", declared by mlp_precision()" : ", the default: mlp_precision() not defined");
}

Precision checked_declaration(int value) {
  Precision p = Precision::FP32;
  if (!precision_of_value(value, &p))
    throw UserError("the submission's mlp_precision() returned " + std::to_string(value) +
                    ", which is no precision: return MLP_PRECISION_FP32 (0), MLP_PRECISION_TF32 (1) or "
                    "MLP_PRECISION_BF16 (2), or leave it undefined for FP32 (cuda/contract/submission.h)");
  return p;
}

DeclaredPrecision declared_precision() {
  static const DeclaredPrecision answer = [] {
    DeclaredPrecision d;
    if (&mlp_precision != nullptr) {
      d.precision = checked_declaration(mlp_precision());
      d.declared = true;
    }
    return d;
  }();
  return answer;
}

}  // namespace mlp
