// tests/emu/tiled_emu.cpp — build/tiled_emu: the tiled path's kernels (cuda/kernels/tiled.cuh) on the
// CPU, through the transformer's emulation of the CUDA runtime and built-ins (cuda/transformer/emu/:
// each block's threads as fibers, blocks one after another), against float64 at small shapes
// chosen to reach every branch: each tile shape, unsplit and split-K (the last-block sum and its
// ticket reset), float4 and scalar loads, row gathers, the head kernels' hidden-unit splits, row
// blocks and dZ chunks, 3 and 10 classes. tests/test_tiled_emulated.py runs it; exit 0 when every
// check passes, 1 otherwise. The tolerances are printed: a float32 sum of K products within
// (K + 2)·u·Σ|terms| of float64's, u = 2⁻²⁴, plus the epilogue's roundings.
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

#include "kernels/tiled.cuh"
#include "kernels/tiled_mma.cuh"

namespace {
using namespace mlp::tiled;
using mlp::Precision;
using mlp::precision_name;
using mlp::unit_roundoff;
constexpr double kU = 1.0 / (1 << 24);
int g_failed = 0, g_checks = 0;

void verdict(const std::string& what, double worst) {
  ++g_checks;
  const bool ok = worst <= 1.0;
  g_failed += !ok;
  std::printf("%-64s %s  worst error/tol %.3f\n", what.c_str(), ok ? "ok  " : "FAIL", worst);
}
double ratio(double got, double want, double tol) {
  return std::isfinite(got) ? std::fabs(got - want) / (tol + 1e-30) : INFINITY;
}

template <ALayout AL, Epi EPI, bool VEC, Precision PREC>
void launch(const GemmArgs& a, const GemmPlan& p) {
  GemmArgs b = a;
  b.k_chunk = p.k_chunk;
  void (*fn)(GemmArgs) = nullptr;
  if constexpr (PREC == Precision::FP32) {
    switch (p.shape) {
      case 0: fn = k_tiled_gemm<0, AL, EPI, VEC>; break;
      case 1: fn = k_tiled_gemm<1, AL, EPI, VEC>; break;
      case 2: fn = k_tiled_gemm<2, AL, EPI, VEC>; break;
      case 3: fn = k_tiled_gemm<3, AL, EPI, VEC>; break;
    }
  } else {
    switch (p.shape) {
      case 4: fn = k_tiled_mma<4, AL, EPI, VEC, PREC>; break;
      case 5: fn = k_tiled_mma<5, AL, EPI, VEC, PREC>; break;
      case 6: fn = k_tiled_mma<6, AL, EPI, VEC, PREC>; break;
    }
  }
  if (!fn) {
    std::printf("no kernel for tile shape %d at %s\n", p.shape, precision_name(PREC));
    ++g_failed;
    return;
  }
  emu::launch(dim3(p.tiles_n, p.tiles_m, p.split), dim3(kTileShapes[p.shape].threads()), 0, nullptr, [=] { fn(b); });
}

// What a product of inputs rounded to `prec` may be off by, relative to |x·w|: (1 + u_p)² − 1 (0 at
// FP32, where the inputs are used as they are).
double product_rel(Precision prec) {
  const double up = prec == Precision::FP32 ? 0.0 : unit_roundoff(prec);
  return 2 * up + up * up;
}

// H = ReLU(X[rows]·W + b) of M rows (gathered from M + 3), then dW1's update of W [K' × N] by
// X[rows]ᵀ·G: both GEMMs of the path at one shape, with a forced tile shape and split, at `PREC`
// (k_tiled_gemm for FP32, k_tiled_mma for TF32 and BF16). The tolerance adds the rounded inputs'
// product error product_rel(PREC)·Σ|x·w| to float32's sum bound; at TF32 and BF16 the check also
// asks that the result is NOT float32's: somewhere its error must lie outside float32's own bound
// (K + 2)·u·Σ|x·w| (a kernel that skipped the rounding would pass the bound but fail this).
template <bool VEC, Precision PREC = Precision::FP32>
void check_gemms(int M, int N, int K, int shape, int split, std::mt19937& rng) {
  const double pr = product_rel(PREC), up = PREC == Precision::FP32 ? 0.0 : unit_roundoff(PREC);
  const std::string tag = std::string(" ") + precision_name(PREC);
  std::uniform_real_distribution<float> u01(0.f, 1.f), u11(-1.f, 1.f);
  const int n_rows = M + 3;
  std::vector<float> X((size_t)n_rows * K), W((size_t)K * N), b(N), H((size_t)M * N, NAN);
  for (auto& x : X) x = u01(rng);
  for (auto& x : W) x = 0.1f * u11(rng);
  for (auto& x : b) x = 0.1f * u11(rng);
  std::vector<int> rows(M);
  for (int i = 0; i < M; ++i) rows[i] = (i * 5 + 2) % n_rows;
  const GemmPlan pf = plan_gemm_fixed(M, N, K, 4, shape, split);
  std::vector<float> part(std::max<size_t>(1, pf.partial_floats()));
  std::vector<unsigned> tick(pf.tiles(), 0);
  GemmArgs a{};
  a.M = M; a.N = N; a.K = K; a.A = X.data(); a.lda = K; a.a_rows = rows.data();
  a.B = W.data(); a.ldb = N; a.C = H.data(); a.ldc = N; a.bias = b.data();
  a.partials = part.data(); a.tickets = tick.data();
  launch<ALayout::RowMajor, Epi::BiasRelu, VEC, PREC>(a, pf);
  double worst = 0, rounded = 0;  // rounded: the largest error over float32's bound where the output is not clipped
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      double s = b[n], mag = std::fabs(b[n]);
      for (int k = 0; k < K; ++k) s += (double)X[(size_t)rows[m] * K + k] * W[(size_t)k * N + n],
                                  mag += std::fabs((double)X[(size_t)rows[m] * K + k] * W[(size_t)k * N + n]);
      const float got = H[(size_t)m * N + n];
      worst = std::max(worst, ratio(got, std::max(s, 0.0), (pr + (K + 2) * kU * (1 + pr)) * mag));
      if (s > 0 && got > 0 && up > 0) rounded = std::max(rounded, std::fabs(got - s) / ((K + 2) * kU * mag));
    }
  for (unsigned t : tick) worst = t ? INFINITY : worst;  // every ticket back at zero
  const std::string what = "forward " + std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K) + " " +
                           pf.describe() + (VEC ? " float4" : " scalar") + tag;
  verdict(what, worst);
  if (up > 0) verdict(what + ": rounded, not float32", rounded > 1 ? 0.0 : INFINITY);

  // dW1: M' = K (the inputs), K' = M (the batch rows), N as above.
  const int Mi = K, Kb = M;
  std::vector<float> G((size_t)Kb * N), P((size_t)Mi * N), V((size_t)Mi * N);
  for (auto& x : G) x = 0.01f * u11(rng);
  for (auto& x : P) x = 0.05f * u11(rng);
  for (auto& x : V) x = 0.01f * u11(rng);
  const std::vector<float> P0 = P, V0 = V;
  const GemmPlan pd = plan_gemm_fixed(Mi, N, Kb, 4, shape, split);
  std::vector<float> part2(std::max<size_t>(1, pd.partial_floats()));
  std::vector<unsigned> tick2(pd.tiles(), 0);
  GemmArgs d{};
  d.M = Mi; d.N = N; d.K = Kb; d.A = X.data(); d.lda = K; d.a_rows = rows.data();
  d.B = G.data(); d.ldb = N; d.C = P.data(); d.ldc = N; d.vel = V.data(); d.lr = 0.1f; d.mu = 0.9f;
  d.partials = part2.data(); d.tickets = tick2.data();
  launch<ALayout::KMajor, Epi::Momentum, VEC, PREC>(d, pd);
  worst = 0;
  rounded = 0;
  for (int m = 0; m < Mi; ++m)
    for (int n = 0; n < N; ++n) {
      double g = 0, mag = 0;
      for (int k = 0; k < Kb; ++k) g += (double)X[(size_t)rows[k] * K + m] * G[(size_t)k * N + n],
                                   mag += std::fabs((double)X[(size_t)rows[k] * K + m] * G[(size_t)k * N + n]);
      const size_t i = (size_t)m * N + n;
      const double v = 0.9 * V0[i] - 0.1 * g;
      const double tol = 0.1 * (pr + (Kb + 2) * kU * (1 + pr)) * mag +
                         4 * kU * (std::fabs(P0[i]) + std::fabs(V0[i]) + std::fabs(g));
      worst = std::max({worst, ratio(V[i], v, tol), ratio(P[i], P0[i] + v, tol)});
      const double tol32 = 0.1 * (Kb + 2) * kU * mag + 4 * kU * (std::fabs(P0[i]) + std::fabs(V0[i]) + std::fabs(g));
      if (up > 0) rounded = std::max(rounded, std::fabs(V[i] - v) / tol32);
    }
  for (unsigned t : tick2) worst = t ? INFINITY : worst;
  const std::string what2 = "dW1     " + std::to_string(Mi) + "x" + std::to_string(N) + "x" + std::to_string(Kb) + " " +
                            pd.describe() + (VEC ? " float4" : " scalar") + tag;
  verdict(what2, worst);
  if (up > 0) verdict(what2 + ": rounded, not float32", rounded > 1 ? 0.0 : INFINITY);
}

// The head at B rows, Hd units, O classes on `sms` emulated SMs: logits and loss, then the
// backward with the updates of W2, b1, b2, each against float64.
template <int OM>
void check_head(int B, int Hd, int O, int sms, std::mt19937& rng) {
  std::uniform_real_distribution<float> u01(0.f, 1.f), u11(-1.f, 1.f);
  const HeadGrid hg = head_grid(B, Hd, sms);
  const int n_total = B + 5;
  std::vector<float> H((size_t)B * Hd), W2((size_t)Hd * O), b2(O), dZ((size_t)B * O, NAN);
  for (auto& h : H) h = std::max(0.f, u11(rng));  // about half exactly zero, as after a ReLU
  for (auto& w : W2) w = 0.1f * u11(rng);
  for (auto& x : b2) x = 0.1f * u11(rng);
  std::vector<int> labels(n_total), rows(B);
  for (int i = 0; i < n_total; ++i) labels[i] = (i * 7 + 1) % O;
  for (int i = 0; i < B; ++i) rows[i] = (i * 3 + 1) % n_total;
  std::vector<float> zpart((size_t)hg.ksplit * B * kMaxOut), group_loss(hg.groups);
  std::vector<unsigned> tickets(hg.groups + 1, 0);
  float loss = NAN;
  emu::launch(dim3(hg.groups, hg.ksplit), dim3(kHeadThreads), 0, nullptr, [&] {
    k_tiled_logits_loss<OM>(B, Hd, O, H.data(), W2.data(), b2.data(), labels.data(), rows.data(), dZ.data(),
                            zpart.data(), group_loss.data(), tickets.data(), &loss);
  });
  double worst = 0, loss64 = 0;
  std::vector<double> dZ64((size_t)B * O);
  for (int r = 0; r < B; ++r) {
    std::vector<double> z(O);
    double mag = 0;
    for (int o = 0; o < O; ++o) {
      z[o] = b2[o];
      for (int j = 0; j < Hd; ++j) z[o] += (double)H[(size_t)r * Hd + j] * W2[(size_t)j * O + o],
                                   mag = std::max(mag, std::fabs((double)H[(size_t)r * Hd + j] * W2[(size_t)j * O + o]) * Hd);
    }
    const double m = *std::max_element(z.begin(), z.end());
    double s = 0;
    for (double v : z) s += std::exp(v - m);
    const int y = labels[rows[r]];
    loss64 += std::log(s) - (z[y] - m);
    // dZ moves by at most the logits' error (softmax is 1-Lipschitz per logit) over B, plus roundings.
    const double tol = ((Hd + 2) * kU * mag + 16 * kU) / B;
    for (int o = 0; o < O; ++o) {
      dZ64[(size_t)r * O + o] = (std::exp(z[o] - m) / s - (o == y)) / B;
      worst = std::max(worst, ratio(dZ[(size_t)r * O + o], dZ64[(size_t)r * O + o], tol));
    }
  }
  loss64 /= B;
  worst = std::max(worst, ratio(loss, loss64, 1e-5 * std::fabs(loss64)));
  for (unsigned t : tickets) worst = t ? INFINITY : worst;
  verdict("logits+loss B " + std::to_string(B) + " Hd " + std::to_string(Hd) + " O " + std::to_string(O) + " (" +
              std::to_string(hg.groups) + " groups x " + std::to_string(hg.ksplit) + " splits), tol in dZ (Hd+2)u|z|/B",
          worst);

  // The backward from the kernel's own dZ (checked above).
  std::vector<float> vW2((size_t)Hd * O), b1(Hd), vb1(Hd), vb2(O), dH((size_t)B * Hd, NAN);
  for (auto& x : vW2) x = 0.01f * u11(rng);
  for (auto& x : b1) x = 0.1f * u11(rng);
  for (auto& x : vb1) x = 0.01f * u11(rng);
  for (auto& x : vb2) x = 0.01f * u11(rng);
  const std::vector<float> W20 = W2, vW20 = vW2, b10 = b1, vb10 = vb1, b20 = b2, vb20 = vb2;
  std::vector<float> part((size_t)hg.ysplit * (O + 1) * Hd);
  std::vector<unsigned> back_tickets(hg.cols, 0);
  const float lr = 0.1f, mu = 0.9f;
  emu::launch(dim3(hg.back_x(), hg.ysplit), dim3(kBackThreads), 0, nullptr, [&] {
    k_tiled_head_backward<OM>(B, Hd, O, hg.rb, lr, mu, H.data(), dZ.data(), W2.data(), vW2.data(), b1.data(),
                              vb1.data(), b2.data(), vb2.data(), dH.data(), part.data(), back_tickets.data());
  });
  worst = 0;
  auto upd = [&](float p, float v, double p0, double v0, double g, double tol) {
    const double vv = mu * v0 - lr * g;
    return std::max(ratio(v, vv, tol), ratio(p, p0 + vv, tol));
  };
  for (int j = 0; j < Hd; ++j) {
    double gb = 0, gbmag = 0;
    for (int r = 0; r < B; ++r) {
      double d = 0, dmag = 0;
      for (int o = 0; o < O; ++o) d += (double)dZ[(size_t)r * O + o] * W20[(size_t)j * O + o],
                                  dmag += std::fabs((double)dZ[(size_t)r * O + o] * W20[(size_t)j * O + o]);
      d = H[(size_t)r * Hd + j] > 0 ? d : 0;
      worst = std::max(worst, ratio(dH[(size_t)r * Hd + j], d, (O + 2) * kU * dmag));
      gb += d;
      gbmag += dmag;
    }
    worst = std::max(worst, upd(b1[j], vb1[j], b10[j], vb10[j], gb,
                                lr * (B + O + 4) * kU * gbmag + 4 * kU * (std::fabs(b10[j]) + std::fabs(vb10[j]) + 1e-3)));
    for (int o = 0; o < O; ++o) {
      double g = 0, mag = 0;
      for (int r = 0; r < B; ++r) g += (double)H[(size_t)r * Hd + j] * dZ[(size_t)r * O + o],
                                  mag += std::fabs((double)H[(size_t)r * Hd + j] * dZ[(size_t)r * O + o]);
      const size_t i = (size_t)j * O + o;
      worst = std::max(worst, upd(W2[i], vW2[i], W20[i], vW20[i], g,
                                  lr * (B + 2) * kU * mag + 4 * kU * (std::fabs(W20[i]) + std::fabs(vW20[i]) + 1e-3)));
    }
  }
  for (int o = 0; o < O; ++o) {
    double g = 0, mag = 0;
    for (int r = 0; r < B; ++r) g += dZ[(size_t)r * O + o], mag += std::fabs((double)dZ[(size_t)r * O + o]);
    worst = std::max(worst, upd(b2[o], vb2[o], b20[o], vb20[o], g,
                                lr * (B + 2) * kU * mag + 4 * kU * (std::fabs(b20[o]) + std::fabs(vb20[o]) + 1e-3)));
  }
  for (unsigned t : back_tickets) worst = t ? INFINITY : worst;
  // The bf16-dH variant (the GEMM engine's dW1 operand) from the same state: the same sums, so dH is
  // the float run's rounded to nearest bf16, bit for bit, and every update is the float run's.
  {
    std::vector<float> W2b = W20, vW2b = vW20, b1b = b10, vb1b = vb10, b2b = b20, vb2b = vb20;
    std::vector<__nv_bfloat16> dH16((size_t)B * Hd, __nv_bfloat16{0x7fc0});  // poisoned: NaN
    std::vector<float> part_b(part.size());
    std::vector<unsigned> tickets_b(hg.cols, 0);
    emu::launch(dim3(hg.back_x(), hg.ysplit), dim3(kBackThreads), 0, nullptr, [&] {
      k_tiled_head_backward<OM, __nv_bfloat16>(B, Hd, O, hg.rb, lr, mu, H.data(), dZ.data(), W2b.data(), vW2b.data(),
                                               b1b.data(), vb1b.data(), b2b.data(), vb2b.data(), dH16.data(),
                                               part_b.data(), tickets_b.data());
    });
    size_t differ = 0;
    for (size_t i = 0; i < dH16.size(); ++i) differ += dH16[i].bits != emu_bf16_rn(dH[i]);
    differ += W2b != W2 || vW2b != vW2 || b1b != b1 || vb1b != vb1 || b2b != b2 || vb2b != vb2;
    for (unsigned t : tickets_b) differ += t != 0;
    verdict("head backward with bf16 dH: dH = bf16_rn(float dH) bitwise, the same updates (" + std::to_string(differ) +
                " differ)", differ ? INFINITY : 0.0);
  }
  verdict("head backward B " + std::to_string(B) + " Hd " + std::to_string(Hd) + " O " + std::to_string(O) + " (" +
              std::to_string(hg.cols) + " cols x " + std::to_string(hg.ysplit) + " row blocks of " + std::to_string(hg.rb) + ")",
          worst);
}
// The engine's bf16 operands: k_gather_rows_bf16 (rows gathered through an order, rounded to nearest
// even) and k_to_bf16, bit for bit against the emulation's cvt.rn, over more elements than the grid's
// threads (the grid-stride loops), from NaN-poisoned outputs.
void check_bf16_operands(std::mt19937& rng) {
  std::uniform_real_distribution<float> u11(-1.f, 1.f);
  const int n_src = 23, cols = 37, n = 19;
  std::vector<float> src((size_t)n_src * cols);
  for (auto& x : src) x = u11(rng) * 3.7f;
  std::vector<int> rows(n);
  for (int r = 0; r < n; ++r) rows[r] = (r * 5 + 3) % n_src;
  std::vector<__nv_bfloat16> dst((size_t)n * cols, __nv_bfloat16{0x7fc0}), flat(src.size(), __nv_bfloat16{0x7fc0});
  emu::launch(dim3(3), dim3(64), 0, nullptr, [&] { k_gather_rows_bf16(src.data(), rows.data(), n, cols, dst.data()); });
  emu::launch(dim3(2), dim3(64), 0, nullptr, [&] { k_to_bf16(src.data(), src.size(), flat.data()); });
  size_t differ = 0;
  for (int r = 0; r < n; ++r)
    for (int c = 0; c < cols; ++c) differ += dst[(size_t)r * cols + c].bits != emu_bf16_rn(src[(size_t)rows[r] * cols + c]);
  for (size_t i = 0; i < src.size(); ++i) differ += flat[i].bits != emu_bf16_rn(src[i]);
  verdict("bf16 operands: the gathered rows and W1 = bf16_rn of their floats (" + std::to_string(differ) + " differ)",
          differ ? INFINITY : 0.0);
}
}  // namespace

int main() {
  std::mt19937 rng(20260829);
  std::printf("tolerance: float32 sums within (K + 2)*u*sum|terms| of float64 (u = 2^-24), plus the epilogues' roundings;\n"
              "  at tf32 (u_p = 2^-11) and bf16 (u_p = 2^-8) also (2 u_p + u_p^2)*sum|terms| for the rounded inputs\n");
  for (int shape = 0; shape < kNumTileShapes; ++shape)
    for (int split : {1, 3}) {
      if (shape_serves(shape, Precision::FP32)) {
        check_gemms<false>(7, 19, 37, shape, split, rng);   // odd widths: scalar loads and tails
        check_gemms<true>(130, 68, 64, shape, split, rng);  // multiples of 4: float4, two row tiles of 64
      } else {
        for (Precision p : {Precision::TF32, Precision::BF16}) {
          if (p == Precision::TF32) {
            check_gemms<false, Precision::TF32>(7, 19, 37, shape, split, rng);
            check_gemms<true, Precision::TF32>(130, 68, 64, shape, split, rng);
          } else {
            check_gemms<false, Precision::BF16>(7, 19, 37, shape, split, rng);
            check_gemms<true, Precision::BF16>(130, 68, 64, shape, split, rng);
          }
        }
      }
    }
  check_head<10>(7, 300, 3, 4, rng);     // 3 classes in the 10-class kernel; hidden units over 2 splits
  check_head<10>(130, 64, 10, 4, rng);   // 6 row blocks of 24 rows
  check_head<kMaxOut>(37, 130, 13, 4, rng);
  check_head<10>(1100, 8, 10, 4, rng);   // row blocks of 144 rows: dZ staged in 3 chunks
  check_bf16_operands(rng);
  std::printf("%d of %d checks failed\n", g_failed, g_checks);
  return g_failed ? 1 : 0;
}
