// cuda/gate/tolerances.h — the limits of the gate's entry-point cases (1-5) as functions of the
// linked submission's declared precision (GateInputs::precision), the words each row prints for
// them, and the scores cases 1, 2 and 4 compare with them. Host-only: build/mlp_host prints the
// limits (`mlp_host tolerances`) and tests/gate_sim scores emulated arithmetic with these very
// functions. Case 9's bound is gate/epoch_check.h's, on the same model.
//
// The model. Every sum accumulates in float32 at least (u = 2^-24): that is the float32 gate,
// whose bounds stay as they were. A submission that declares TF32 or BF16 (submission.h,
// mlp_precision) also rounds both inputs of each matrix product to that format first (round to
// nearest: relative error at most u_p, 2^-11 or 2^-8; common/precision.h's input_roundoff, 0 for
// FP32). A product term x̃·w̃ then lies within (2·u_p + u_p²)·|x·w| of x·w, however long the sum
// it is part of, so the inputs' rounding ADDS a term k·u_p to each bound, k counting the roundings
// a value has been through on its way (two per product it depends on), plus one u_p of allowance
// for the second-order terms; it does not multiply the sum's depth, which only float32's u does.
// For FP32 the added term is left out altogether: every limit is float32's, bit for bit, and every
// row prints what it printed before.
#pragma once
#include <string>
#include <vector>

#include "common/declared_precision.h"
#include "contract/model.h"

namespace gate {

constexpr double kU32 = 5.9604644775390625e-08;  // float32 unit roundoff, 2^-24

// Cases 1 (element-wise) and 2 (norm-wise): the limits of Z's and H's error relative to their
// magnitude scales, at layer widths `s`.
struct ForwardLimits {
  double z = 0, h = 0;
};
ForwardLimits forward_limits(mlp::Precision p, MlpShape s, bool normwise);

// Case 3: the loss and dZ, float32 at every precision (mlp_loss has no matrix product): 64·u.
double loss_limit();

// Case 4: a coordinate passes when |g − g64| ≤ rtol·|g64| + atol·max|g64| (over its tensor).
struct GradTolerance {
  double rtol = 0, atol = 0;
};
GradTolerance grad_tolerance(mlp::Precision p);
// At a declared TF32 or BF16 a pre-activation within its rounding bound of zero (|a64| ≤ H's
// element-wise limit · its scale |X||W1| + |b1|) may land on either side of the ReLU's kink, and its
// unit's mask with it: each coordinate of dW1, db1 and dX then also allows the whole contribution
// of such units (|x|·|dZ·W2ᵀ|, |dZ·W2ᵀ|, |dZ·W2ᵀ|·|W1|), as case 9 does (gate/epoch_check.h). dW2
// and db2 need none (a flipped unit's H is within its bound of 0 either way). Empty vectors for
// FP32: no allowance, float32's case 4 exactly as it was.
struct KinkAllowance {
  std::vector<double> grads;  // flat parameter layout (W1 and b1 filled)
  std::vector<double> dX;     // [batch × in], when asked
  int ambiguous = 0;          // pre-activations within their bound of zero
};
KinkAllowance kink_allowance(mlp::Precision p, MlpShape s, const std::vector<double>& params,
                             const std::vector<double>& X, const std::vector<double>& dZ, int batch, bool with_dx);
// |got − ref| / (rtol·|ref| + atol·tmax + 2·kink); NaN: infinity.
double grad_error(double got, double ref, double tmax, const GradTolerance& t, double kink = 0);

// Case 5: every element within 1e-6 + 1e-5·|ref|, float32 at every precision (the update has no
// matrix product).
constexpr double kStepAtol = 1e-6, kStepRtol = 1e-5;

// What cases 1 and 2 add to a float32 row that fails within a lower precision's limits (the
// precision hint of gate/hints.cpp looks for it).
constexpr const char* kWithinLowerPrecision = "products' inputs rounded to a lower precision";

// The words of each row: how its value and limit are defined, the precision and its unit
// roundoff named. For FP32 exactly the float32 gate's words ("...; limit (in+hidden+2)*u, u = 2^-24; ...").
std::string forward_what(const mlp::DeclaredPrecision& d, bool normwise);
std::string loss_what(const mlp::DeclaredPrecision& d);
std::string grad_what(const mlp::DeclaredPrecision& d);
std::string step_what(const mlp::DeclaredPrecision& d);
std::string epoch_what(const mlp::DeclaredPrecision& d);
// The same for precision `p` named by `source` ("tf32, the path's precision": a kernel path's own).
std::string epoch_what(mlp::Precision p, const std::string& source);

// The scores of cases 1 and 2. abs_forward: the forward pass on |params| (every term ≥ 0), the
// magnitude scale of each hidden unit and logit; error_of: the worst element-wise
// |got − ref| / scale (NaN: infinity), or the norm-wise ||got − ref|| / ||scale||.
void abs_forward(MlpShape s, const std::vector<double>& p, const std::vector<double>& X, int batch,
                 std::vector<double>& H, std::vector<double>& Z);
double error_of(const std::vector<float>& got, const std::vector<double>& ref, const std::vector<double>& scale,
                bool normwise);

}  // namespace gate
