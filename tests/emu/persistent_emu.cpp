// tests/emu/persistent_emu.cpp — build/persistent_emu: persistent2's two big products
// (cuda/kernels/persistent.cuh: phase C's W1 tile with its momentum update, and the split-K
// partials of the next step's pre-activations) on the CPU, through the transformer's emulation of
// the CUDA runtime (cuda/transformer/emu/: a block's threads as fibers), at FP32, TF32 and BF16,
// against float64 over the inputs rounded as the precision says (common/precision.h
// round_to_precision). Each phase function runs one block per tile, as the kernel's blocks do;
// the grid barriers between phases are not needed here (each check runs one phase). Shapes reach
// the 16-byte and the scalar staging and a last tile past the hidden width. Checks:
//   dW1 update  the velocity and W1 of every element, from g = Σ_r R(X)·R(dH) (R: the rounding)
//   db1         b1's update from Σ_r dH, NOT rounded (the bias gradient is no product)
//   partials    the next step's split-K pre-activations Σ_i R(X)·R(W1), from the W1 read (no
//               update before) and from the W1 just updated (phase C's hand-over)
//   rounded     at TF32 and BF16 the velocity is farther from float32's unrounded result than the
//               tolerance: the inputs really were rounded
// tests/test_persistent_emulated.py runs it; exit 0 when every check passes. The tolerance is
// printed: a float32 sum of K exact products within (K + 2)·u·Σ|terms| of float64's, u = 2⁻²⁴,
// plus the update's roundings.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>
using std::max;
using std::min;

#include "cuda_runtime.h"  // the emulation: cuda/transformer/emu/ is first on the include path
#include "kernel_builtins.h"  // __ldg, __ldcg, __threadfence, atomicAdd (tests/emu/)

#include "kernels/persistent.cuh"

namespace {
using mlp::Precision;
constexpr double kU = 1.0 / (1 << 24);
int g_failed = 0, g_checks = 0;

void verdict(const std::string& what, double worst, bool want_over = false) {
  ++g_checks;
  const bool ok = want_over ? worst > 1.0 : worst <= 1.0;
  g_failed += !ok;
  std::printf("%-72s %s  worst error/tol %.3f%s\n", what.c_str(), ok ? "ok  " : "FAIL", worst,
              want_over ? " (must be over 1)" : "");
}

std::vector<float> draw(size_t n, std::mt19937& rng, float lo = -1.f, float hi = 1.f) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// One block of kThreads running body (a phase function) with a block's shared memory.
template <class F>
void one_block(F body) {
  emu::run_grid(dim3(1), dim3(mlp::kThreads), 0, [&] { body(); });
}

struct Case {
  int I, Hd, nb, next_nb;
};

template <Precision PREC>
void run_case(const Case& c) {
  const char* pname = mlp::precision_name(PREC);
  auto R = [](float x) { return (double)mlp::round_to_precision(x, PREC); };
  std::mt19937 rng(1234u + c.I * 7 + c.Hd);
  const MlpShape s{c.I, c.Hd, 3};
  const MlpOffsets off = mlp_offsets(s);
  const int n_total = 320, base = 5, next_base = base + c.nb;
  const int batch = max(c.nb, c.next_nb);
  std::vector<int> order(n_total);
  for (int i = 0; i < n_total; ++i) order[i] = (i * 37 + 11) % n_total;
  const std::vector<float> X = draw((size_t)n_total * c.I, rng);
  const std::vector<float> p0 = draw(off.total, rng, -0.5f, 0.5f), v0 = draw(off.total, rng, -0.05f, 0.05f);
  const std::vector<float> dH = draw((size_t)batch * c.Hd, rng, -0.2f, 0.2f);
  std::vector<float> params = p0, velocity = v0, dh = dH;
  const int ti_n = (c.I + mlp::kTileC - 1) / mlp::kTileC, tj_n = (c.Hd + mlp::kTileCJ - 1) / mlp::kTileCJ;
  std::vector<float> partials((size_t)ti_n * batch * c.Hd, NAN);  // poisoned: every written value is checked
  std::vector<float> smem(mlp::kPersist2Floats + 1024, NAN);
  mlp::Persist P{};
  P.s = s;
  P.n = n_total;
  P.batch = batch;
  P.lr = 0.1f;
  P.mu = 0.9f;
  P.params = params.data();
  P.velocity = velocity.data();
  P.X_all = X.data();
  P.order = order.data();
  P.dH = dh.data();
  P.partials = partials.data();
  const std::string shape = std::to_string(c.I) + "x" + std::to_string(c.Hd) + ", " + std::to_string(c.nb) + " rows (X " +
                            (c.I % 4 == 0 ? "16-byte" : "scalar") + ", dH " +
                            (c.I % 4 == 0 && c.Hd % 4 == 0 ? "16-byte" : "scalar") + ")";

  // The next step's partials from the W1 in `w` (float32 as stored), checked against float64.
  auto check_partials = [&](const std::vector<float>& w, const std::string& what) {
    double worst = 0, worst_unrounded = 0;
    for (int ti = 0; ti < ti_n; ++ti)
      for (int r = 0; r < c.next_nb; ++r)
        for (int j = 0; j < c.Hd; ++j) {
          double ref = 0, mag = 0, ref32 = 0;
          const int i_end = min(c.I, (ti + 1) * mlp::kTileC);
          for (int i = ti * mlp::kTileC; i < i_end; ++i) {
            const float x = X[(size_t)order[next_base + r] * c.I + i], wv = w[(size_t)i * c.Hd + j];
            ref += R(x) * R(wv);
            ref32 += (double)x * wv;
            mag += std::fabs(R(x) * R(wv));
          }
          const double got = partials[((size_t)ti * batch + r) * c.Hd + j];
          const double tol = (mlp::kTileC + 2) * kU * mag + 1e-30;
          worst = max(worst, std::isfinite(got) ? std::fabs(got - ref) / tol : INFINITY);
          worst_unrounded = max(worst_unrounded, std::fabs(got - ref32) / tol);
        }
    verdict(std::string(pname) + " partials " + what + ", " + shape, worst);
    if (PREC != Precision::FP32)
      verdict(std::string(pname) + " partials " + what + " from rounded inputs, " + shape, worst_unrounded, true);
  };

  // 1. partial_tile alone (the epoch's prologue: W1 read from params).
  for (int ti = 0; ti < ti_n; ++ti)
    for (int tj = 0; tj < tj_n; ++tj)
      one_block([&] { mlp::partial_tile<mlp::StagingShipped, PREC>(P, smem.data(), ti, tj, next_base, c.next_nb, false); });
  check_partials(params, "from W1 read");

  // 2. phase C on every tile with the hand-over to the next step's partials.
  std::fill(partials.begin(), partials.end(), NAN);
  for (int ti = 0; ti < ti_n; ++ti)
    for (int tj = 0; tj < tj_n; ++tj)
      one_block([&] {
        mlp::phase_c_w1_tile<mlp::StagingShipped, PREC>(P, smem.data(), base, c.nb, ti, tj, next_base, c.next_nb);
      });
  double worst_v = 0, worst_p = 0, worst_unrounded = 0;
  for (int i = 0; i < c.I; ++i)
    for (int j = 0; j < c.Hd; ++j) {
      double g = 0, mag = 0, g32 = 0;
      for (int r = 0; r < c.nb; ++r) {
        const float x = X[(size_t)order[base + r] * c.I + i], d = dH[(size_t)r * c.Hd + j];
        g += R(x) * R(d);
        g32 += (double)x * d;
        mag += std::fabs(R(x) * R(d));
      }
      const size_t at = (size_t)i * c.Hd + j;
      const double v_ref = 0.9 * (double)v0[at] - 0.1 * g, p_ref = p0[at] + v_ref;
      const double tol_v = 0.1 * (c.nb + 2) * kU * mag + 4 * kU * (0.9 * std::fabs(v0[at]) + 0.1 * std::fabs(g)) + 1e-30;
      const double tol_p = tol_v + 2 * kU * (std::fabs(p0[at]) + std::fabs(v_ref));
      worst_v = max(worst_v, std::fabs(velocity[at] - v_ref) / tol_v);
      worst_p = max(worst_p, std::fabs(params[at] - p_ref) / tol_p);
      worst_unrounded = max(worst_unrounded, std::fabs(velocity[at] - (0.9 * (double)v0[at] - 0.1 * g32)) / tol_v);
    }
  verdict(std::string(pname) + " dW1 update: velocity, " + shape, worst_v);
  verdict(std::string(pname) + " dW1 update: W1, " + shape, worst_p);
  if (PREC != Precision::FP32)
    verdict(std::string(pname) + " dW1 from rounded inputs, not float32's, " + shape, worst_unrounded, true);
  double worst_b1 = 0;
  for (int j = 0; j < c.Hd; ++j) {
    double g = 0, mag = 0;
    for (int r = 0; r < c.nb; ++r) {
      g += dH[(size_t)r * c.Hd + j];  // not rounded: db1 is no product
      mag += std::fabs(dH[(size_t)r * c.Hd + j]);
    }
    const size_t at = off.b1 + j;
    const double v_ref = 0.9 * (double)v0[at] - 0.1 * g;
    const double tol = 0.1 * (c.nb + 2) * kU * mag + 4 * kU * (0.9 * std::fabs(v0[at]) + 0.1 * std::fabs(g)) + 1e-30;
    worst_b1 = max(worst_b1, std::fabs(velocity[at] - v_ref) / tol);
  }
  verdict(std::string(pname) + " db1 update from dH itself, " + shape, worst_b1);
  // Nothing but W1 and b1 moved (W2, b2 are phase C's W2 items', not run here).
  bool others = true;
  for (size_t k = off.w2; k < off.total; ++k) others = others && params[k] == p0[k] && velocity[k] == v0[k];
  verdict(std::string(pname) + " W2 and b2 untouched by the W1 tiles, " + shape, others ? 0.0 : INFINITY);
  check_partials(params, "from the updated W1 (phase C's hand-over)");
}

}  // namespace

int main() {
  std::printf("persistent2's big products on the emulated device against float64; tolerance (K+2)*u*sum|terms| "
              "(+ the update's roundings), u = 2^-24, over inputs rounded as each precision says\n");
  const Case cases[] = {{40, 70, 20, 15}, {37, 64, 33, 9}, {64, 128, 129, 128}};
  for (const Case& c : cases) {
    run_case<Precision::FP32>(c);
    run_case<Precision::TF32>(c);
    run_case<Precision::BF16>(c);
  }
  std::printf("%d of %d checks passed\n", g_checks - g_failed, g_checks);
  return g_failed ? 1 : 0;
}
