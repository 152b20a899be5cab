// cuda/gate/epoch_check.h — gate case 9's float64 side (host-only, no CUDA): a short epoch of
// mlp_train_epoch's maths in float64 from a given float32 state, and beside every value a
// first-order bound on how far a correct float32 implementation can land from it — or one that
// declares TF32 or BF16 (submission.h, mlp_precision) and rounds its products' inputs to it.
//
// The bound E is propagated through every operation of every step, in float64 absolute values:
// a sum of n terms adds γ_n·(Σ|terms|) with γ_n = 2·√(n+2)·u, u = 2⁻²⁴ (the probabilistic bound of
// any summation order, FMA or not); at a declared TF32 or BF16 each matrix product also adds
// 2·u_p·(Σ|terms|) (both inputs of every term rounded to the format, u_p = 2⁻¹¹ or 2⁻⁸, first order;
// gate/tolerances.h's model) and each column sum u_p·(Σ|terms|) (its summands rounded once, should
// it be computed as a product with a ones vector); FP32 adds nothing, and its E is float32's as
// before, bit for bit; each rounding of the update counts u·|value| in full (the update is float32
// at every precision); each input's own bound is carried through (|X|·E_W1 + E_b1 into the pre-activations,
// E_H·|W2| + |H|·E_W2 + E_b2 into the logits, the softmax's derivative into dZ, and so on into
// the gradients, the velocity and the parameters, with one rounding of each update). A ReLU
// whose float64 pre-activation lies within its bound of zero may go either way in float32: its
// dH element's bound is then its whole unmasked value (that sample's full contribution to the
// unit's gradient). Second-order terms (E·E) are left out; the gate compares with 2·E.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "common/precision.h"
#include "contract/model.h"

struct EpochCheckInput {
  MlpShape s;
  int n = 0, batch = 0;           // ceil(n / batch) steps, the last one short when batch ∤ n
  float lr = 0, momentum = 0;     // the float32 values the submission gets
  const float* X_all = nullptr;   // host [n_total × in]
  const int* y_all = nullptr;     // host [n_total]
  std::vector<int32_t> order;     // [n] rows of X_all, in step order
  std::vector<float> p0, v0;      // the starting parameters and velocity (flat layout)
  mlp::Precision precision = mlp::Precision::FP32;  // the submission's declared precision (GateInputs)
};

struct EpochCheckRef {
  std::vector<double> p, v, loss;   // float64 after the epoch; each step's mean batch loss
  std::vector<double> ep, ev, el;   // the float32 error bound of each (same shapes)
  int ambiguous = 0;                // ReLU pre-activations within their bound of zero
};

EpochCheckRef epoch_check_reference(const EpochCheckInput& in);

// max |got − ref| / (margin·E) over every parameter, velocity element and step loss (NaN or a
// missing value: infinity), the element where it sits ("W1[3,17] (param)", "b2[4] (velocity)",
// "step loss 3") and each tensor's worst, as one line.
struct EpochCheckScore {
  double worst = 0;
  std::string where, per_tensor;
};
EpochCheckScore epoch_check_score(const EpochCheckRef& ref, MlpShape s, const std::vector<float>& p,
                                  const std::vector<float>& v, const std::vector<float>& loss, double margin);
