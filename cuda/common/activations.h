// cuda/common/activations.h — activation functions shared by host and device code: gelu_erf, the
// exact GELU (PyTorch's default), used by the transformer's kernels and the GEMM engine's epilogue.
#pragma once
#include <cmath>

#include "contract/model.h"  // MLP_HD: host and device

namespace mlp {

// Exact GELU: 0.5·x·(1 + erf(x/√2)), in float32 with the accurate erff (no fast-math).
MLP_HD inline float gelu_erf(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f)); }

}  // namespace mlp
