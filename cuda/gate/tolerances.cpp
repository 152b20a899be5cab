#include "gate/tolerances.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "gate/cpu_reference.h"

namespace gate {

namespace {

// "u_p = 2^-11 (tf32, declared by mlp_precision())".
std::string up_text(mlp::Precision p, const std::string& source) {
  return std::string("u_p = ") + mlp::unit_roundoff_text(p) + " (" + source + ")";
}
std::string up_text(const mlp::DeclaredPrecision& d) { return up_text(d.precision, d.source()); }
bool fp32(const mlp::DeclaredPrecision& d) { return d.precision == mlp::Precision::FP32; }

// Case 1 and 2's rounding terms. Z = H·W2 + b2 with H = ReLU(X·W1 + b1): the first product's two
// rounded inputs put H within (2u_p + u_p²)·s_h of its float32 value (s_h = |X||W1| + |b1|, the
// scale H's error is measured against; ReLU only shrinks errors); H is rounded again as the second
// product's input (u_p·|H| ≤ u_p·s_h, plus u_p of its own error) and W2 once (u_p): Z within
// 4u_p + O(u_p²) of its scale |W2|·s_h + |b2|. The limits add 3u_p to H's (2 + 1 for the
// second-order terms, ≤ 7u_p² ≪ u_p) and 5u_p to Z's (4 + 1). A rounded bias (b1 or b2 folded into
// the product) is inside the same terms. These are worst cases per element, attained only when
// every rounding goes the same way, so they hold norm-wise (case 2) as they are.
constexpr double kZRoundings = 5, kHRoundings = 3;

// Case 4's rounding term. A gradient coordinate is a sum over the batch (dW1, dW2), the hidden units
// (dX) or a column (db1, db2) of terms that went through the products before it. With rounded
// inputs each product on the way puts its output within 2u_p of its magnitude scale (the two
// inputs, first order), and those errors carry forward linearly (second order dropped): dZ depends
// on 2 products (X·W1, H·W2; the softmax's derivative maps Z's error into dZ at most at its size,
// p·(δz − Σp·δz)), dH = dZ·W2ᵀ on 3, dW1 = Xᵀ·dH and dX = dH·W1ᵀ on 4: 8 roundings, the most of
// any tensor (dW2 = Hᵀ·dZ 6, db1 7 and db2 5 counting the column sum as a product with a ones
// vector). So g lands within 8u_p of its magnitude scale M_g. Case 4 measures relative to |g64| and
// to the tensor's largest coordinate instead; a gradient is a sum of terms of mixed signs, so M_g
// exceeds |g| by the terms' cancellation, which the allowance kGradCancellation covers (a
// coordinate whose terms cancel to under half their magnitude falls on the atol floor, as the
// float32 tolerances' 1e-6 floor catches float32 sums that cancel). Both tolerances get the same
// 16·u_p: rtol = 1e-4 + 16u_p, atol = 1e-6 + 16u_p (tf32 7.9e-3 and 7.8e-3; bf16 6.3e-2 and
// 6.3e-2). tests/gate_sim/precision_sim.cpp measures what correct TF32 and BF16 arithmetic needs
// at the gate's inputs (a fraction of it) and what the mutants' defects give (many times it).
constexpr double kGradRoundings = 8, kGradCancellation = 2;

}  // namespace

ForwardLimits forward_limits(mlp::Precision p, MlpShape s, bool normwise) {
  const double depth_z = (double)s.in + s.hidden + 2, depth_h = (double)s.in + 2;
  auto bound = [&](double depth) { return normwise ? 4.0 * std::sqrt(depth) * kU32 : depth * kU32; };
  ForwardLimits l{bound(depth_z), bound(depth_h)};
  const double up = mlp::input_roundoff(p);
  if (up > 0) {  // FP32: float32's limits exactly as they were
    l.z += kZRoundings * up;
    l.h += kHRoundings * up;
  }
  return l;
}

double loss_limit() { return 64 * kU32; }

GradTolerance grad_tolerance(mlp::Precision p) {
  GradTolerance t{1e-4, 1e-6};
  const double up = mlp::input_roundoff(p);
  if (up > 0) {  // FP32: float32's 1e-4 and 1e-6 exactly as they were
    t.rtol += kGradRoundings * kGradCancellation * up;
    t.atol += kGradRoundings * kGradCancellation * up;
  }
  return t;
}

double grad_error(double got, double ref, double tmax, const GradTolerance& t, double kink) {
  const double tol = t.rtol * std::fabs(ref) + t.atol * tmax;
  // Twice the kinks' first-order allowance, as case 9 compares with twice its bound. FP32: no kink term at all.
  const double e = std::fabs(got - ref) / (kink > 0 ? tol + 2 * kink : tol);
  return std::isnan(e) ? INFINITY : e;
}

KinkAllowance kink_allowance(mlp::Precision p, MlpShape s, const std::vector<double>& P, const std::vector<double>& X,
                             const std::vector<double>& dZ, int B, bool with_dx) {
  KinkAllowance k;
  if (mlp::input_roundoff(p) <= 0) return k;
  const MlpOffsets o = mlp_offsets(s);
  const int I = s.in, Hd = s.hidden, O = s.out;
  const double lim = forward_limits(p, s, false).h;
  std::vector<double> dHu((size_t)B * Hd, 0.0);  // dZ·W2ᵀ of the ambiguous units, 0 elsewhere
  for (int r = 0; r < B; ++r)
    for (int j = 0; j < Hd; ++j) {
      double a = P[o.b1 + j], scale = std::fabs(P[o.b1 + j]);
      for (int i = 0; i < I; ++i) {
        a += X[(size_t)r * I + i] * P[o.w1 + (size_t)i * Hd + j];
        scale += std::fabs(X[(size_t)r * I + i] * P[o.w1 + (size_t)i * Hd + j]);
      }
      if (!(std::fabs(a) <= lim * scale)) continue;
      ++k.ambiguous;
      double d = 0;
      for (int c = 0; c < O; ++c) d += dZ[(size_t)r * O + c] * P[o.w2 + (size_t)j * O + c];
      dHu[(size_t)r * Hd + j] = std::fabs(d);
    }
  k.grads.assign(o.total, 0.0);
  for (int r = 0; r < B; ++r)
    for (int j = 0; j < Hd; ++j) {
      const double d = dHu[(size_t)r * Hd + j];
      if (d == 0) continue;
      k.grads[o.b1 + j] += d;
      for (int i = 0; i < I; ++i) k.grads[o.w1 + (size_t)i * Hd + j] += std::fabs(X[(size_t)r * I + i]) * d;
    }
  if (with_dx) {
    k.dX.assign((size_t)B * I, 0.0);
    for (int r = 0; r < B; ++r)
      for (int j = 0; j < Hd; ++j) {
        const double d = dHu[(size_t)r * Hd + j];
        if (d == 0) continue;
        for (int i = 0; i < I; ++i) k.dX[(size_t)r * I + i] += d * std::fabs(P[o.w1 + (size_t)i * Hd + j]);
      }
  }
  return k;
}

std::string forward_what(const mlp::DeclaredPrecision& d, bool normwise) {
  if (fp32(d))
    return normwise ? "||Z - Z64||_F / ||(|W2|(|W1||X|+|b1|)+|b2|)||_F; limit 4*sqrt(in+hidden+2)*u; H likewise"
                    : "max_k |z_k - z64_k| / (|W2|(|W1||x|+|b1|)+|b2|)_k; limit (in+hidden+2)*u, u = 2^-24; H likewise "
                      "with (in+2)*u";
  return normwise ? "||Z - Z64||_F / ||(|W2|(|W1||X|+|b1|)+|b2|)||_F; limit 4*sqrt(in+hidden+2)*u + 5*u_p, u = 2^-24 "
                    "(float32 sums), " + up_text(d) + "; H likewise with 4*sqrt(in+2)*u + 3*u_p"
                  : "max_k |z_k - z64_k| / (|W2|(|W1||x|+|b1|)+|b2|)_k; limit (in+hidden+2)*u + 5*u_p, u = 2^-24 "
                    "(float32 sums), " + up_text(d) + "; H likewise with (in+2)*u + 3*u_p";
}

std::string loss_what(const mlp::DeclaredPrecision& d) {
  const std::string base = "logits +-60 and +-100, mixed and whole rows, and N(0,9); max(|dL|/L, B*max|dZ - dZ64|); "
                           "limit 64*u";
  if (fp32(d)) return base;
  return base + ", u = 2^-24 at every precision (mlp_loss has no matrix product; " + up_text(d) + " does not apply)";
}

std::string grad_what(const mlp::DeclaredPrecision& d) {
  if (fp32(d))
    return "200 coords (50 per tensor) and every dX element: max |g-g64|/(1e-4|g64|+1e-6 max|g64_t|), limit 1";
  const GradTolerance t = grad_tolerance(d.precision);
  char rtol[32], atol[32];
  std::snprintf(rtol, sizeof rtol, "%.3g", t.rtol);
  std::snprintf(atol, sizeof atol, "%.3g", t.atol);
  return std::string("200 coords (50 per tensor) and every dX element: max |g-g64|/(rtol|g64|+atol max|g64_t|), rtol = "
                     "1e-4 + 16*u_p = ") + rtol + ", atol = 1e-6 + 16*u_p = " + atol + ", " + up_text(d) +
         "; ReLU kinks within rounding of zero allowed (twice their units' contribution), limit 1";
}

std::string step_what(const mlp::DeclaredPrecision& d) {
  const std::string base = "every element of params and velocity: max |got-ref| / (1e-6 + 1e-5|ref|), limit 1";
  if (fp32(d)) return base;
  return base + " (float32 at every precision: the update has no matrix product; " + up_text(d) + " does not apply)";
}

std::string epoch_what(const mlp::DeclaredPrecision& d) { return epoch_what(d.precision, d.source()); }

std::string epoch_what(mlp::Precision p, const std::string& source) {
  if (p == mlp::Precision::FP32)
    return "max |got-ref|/(2E) over params, velocity and step losses, E the float32 error bound propagated through "
           "every step (sums 2*sqrt(n+2)*u; ambiguous ReLU kinks allowed), limit 1";
  return "max |got-ref|/(2E) over params, velocity and step losses, E the error bound propagated through every step "
         "(sums 2*sqrt(n+2)*u, u = 2^-24; each matrix product's rounded inputs 2*u_p of its terms, each column sum "
         "u_p, " + up_text(p, source) + "; ambiguous ReLU kinks allowed), limit 1";
}

void abs_forward(MlpShape s, const std::vector<double>& p, const std::vector<double>& X, int batch,
                 std::vector<double>& H, std::vector<double>& Z) {
  std::vector<double> ap(p.size());
  for (size_t i = 0; i < p.size(); ++i) ap[i] = std::fabs(p[i]);
  H.assign((size_t)batch * s.hidden, 0);
  Z.assign((size_t)batch * s.out, 0);
  ref_forward(s, ap.data(), X.data(), batch, H.data(), Z.data());  // all terms ≥ 0: ReLU is a no-op
}

double error_of(const std::vector<float>& got, const std::vector<double>& ref, const std::vector<double>& scale,
                bool normwise) {
  double worst = 0, num = 0, den = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double e = (double)got[i] - ref[i];
    if (std::isnan(e)) return INFINITY;
    worst = std::max(worst, std::fabs(e) / scale[i]);
    num += e * e;
    den += scale[i] * scale[i];
  }
  return normwise ? std::sqrt(num / den) : worst;
}

}  // namespace gate
