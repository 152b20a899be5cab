// cuda/tools/gemm_tools.h — what build/gemm_check (cuda/tools/gemm_check.cu) and build/gemm_bench
// (cuda/tools/gemm_bench.cu) share: a device array, one planned GEMM with its split-K scratch launched
// through the tiled path's own entry point (paths/tiled_path.h launch_gemm), and the rounding bounds an
// output of the tiled GEMMs is held to against float64.
//
// The bounds (gemm_check's since issue 29; gemm_bench reuses them for its spot-check), u = 2⁻²⁴:
//   forward (bias + ReLU):  tol = (p + (K+1)·u·(1+p))·Σ|terms| + u·|want|, Σ|terms| = |b| + Σ_k |a_k w_k|
//   update (momentum):      tol = lr·(p + K·u·(1+p))·Σ_k |a_k g_k| + 4u·(|W| + μ|v| + lr·|g|)
// with p = 2·u_p + u_p² the rounding of a product's two inputs to TF32 (u_p = 2⁻¹¹; 2⁻¹⁰ where the
// inputs are truncated, the wgmma engine's TF32) or BF16 (2⁻⁸), p = 0 at FP32: the worst-case bound of a float32 sum of K terms, the epilogue's roundings on top.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "common/cuda_check.h"
#include "common/precision.h"
#include "paths/tiled_path.h"

namespace mlp::tiled::tools {

// A device array of n T (16 bytes of slack past the end), filled from `host` when given.
template <class T = float>
struct Dev {
  T* p = nullptr;
  explicit Dev(size_t n) { CUDA_CHECK(cudaMalloc(&p, std::max<size_t>(n, 1) * sizeof(T) + 16)); }
  explicit Dev(const std::vector<T>& host) : Dev(host.size()) {
    CUDA_CHECK(cudaMemcpy(p, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  }
  Dev(const Dev&) = delete;
  Dev& operator=(const Dev&) = delete;
  ~Dev() { cudaFree(p); }
};

// One GEMM plan and its split-K scratch (the tickets zeroed), launched as the tiled path launches it.
struct PlannedGemm {
  GemmPlan p;
  Precision prec;
  Dev<float> partials;
  Dev<unsigned> tickets;
  PlannedGemm(const GemmPlan& plan, Precision pr)
      : p(plan), prec(pr), partials(plan.partial_floats()), tickets((size_t)plan.tiles()) {
    CUDA_CHECK(cudaMemset(tickets.p, 0, sizeof(unsigned) * std::max(1, p.tiles())));
  }
  // a's partials and tickets are this plan's; launch_gemm checks the launch.
  void launch(ALayout al, Epi epi, GemmArgs a, cudaStream_t st = 0) {
    a.partials = partials.p;
    a.tickets = tickets.p;
    launch_gemm(al, epi, a, p, std::max<size_t>(1, p.partial_floats()), (size_t)p.tiles(), st, prec);
  }
};

constexpr double kU = 1.0 / (1 << 24);  // float32 unit roundoff

// A product of inputs rounded to `prec` is within (1 + u_p)² − 1 of |a·b| (0 at FP32: the inputs
// are used as they are); the float32 sums' bound comes on top. `truncated`: the inputs' mantissas
// are cut, not rounded (the wgmma engine's TF32 reads a float's upper 19 bits): u_p doubles.
inline double product_rel(Precision prec, bool truncated = false) {
  const double up = prec == Precision::FP32 ? 0.0 : unit_roundoff(prec) * (truncated ? 2 : 1);
  return 2 * up + up * up;
}

// The forward's bound: `mag` = |bias| + Σ_k |a_k·b_k| over K products, `want` the float64 output.
inline double forward_tol(Precision prec, int K, double mag, double want, bool truncated = false) {
  const double pr = product_rel(prec, truncated);
  return (pr + (K + 1) * kU * (1 + pr)) * mag + kU * std::fabs(want) + 1e-30;
}

// The momentum update's bound: `mag` = Σ_k |a_k·g_k|, g the float64 gradient, W and v the values
// before the update.
inline double update_tol(Precision prec, int K, double lr, double mu, double mag, double W, double v, double g,
                         bool truncated = false) {
  const double pr = product_rel(prec, truncated);
  return lr * (pr + K * kU * (1 + pr)) * mag + 4 * kU * (std::fabs(W) + mu * std::fabs(v) + lr * std::fabs(g)) +
         1e-30;
}

// The line both programs print before their checks.
constexpr const char* kToleranceText =
    "tolerance: |got - want| <= K*u*sum|a*b| (+ epilogue roundings), u = 2^-24; at tf32 and bf16 also "
    "(2 u_p + u_p^2)*sum|a*b| for the rounded inputs (u_p = 2^-11, 2^-8; 2^-10 for the wgmma engine's tf32, "
    "whose inputs are truncated); ratio = worst error / tol";

}  // namespace mlp::tiled::tools
