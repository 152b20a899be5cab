// cuda/tools/gemm_check.cu — build/gemm_check: the tiled paths' two GEMMs (cuda/kernels/tiled.cuh,
// and tiled_mma.cuh at TF32 and BF16) against float64 on the CPU, at the shapes a sweep meets and
// at odd ones, with every tile shape of the precision and several splits forced as well as the
// shape's own plan (tests/test_gpu_tiled.py runs it).
//
//   build/gemm_check [--widths 64,1000,4096,8192] [--batches 1,7,2048] [--in 784]
//                    [--precisions fp32,tf32,bf16]
//
// For each (width, batch): the forward H = ReLU(X[rows]·W1 + b1) (M = batch, N = width, K = in,
// rows a permutation of a larger X) and dW1's update W1 += (v = μv − lr·X[rows]ᵀ·dH) (M = in,
// N = width, K = batch), every output poisoned with NaN first (the update's W1 and v start from
// drawn values). Inputs are drawn from U(−1, 1) (X non-negative, as pixels are; dH of both signs).
// An output passes when |got − want| <= tol, with want in float64 and
//   forward: tol = γ(K)·Σ_k |x_k w_k| + u·|want|             (γ(K) = K·u, u = 2⁻²⁴)
//   update:  tol = lr·γ(K)·Σ_k |x_k dh_k| + 4u·(|W1| + μ|v| + lr|g|)
// (the worst-case bound of a float32 dot product of K terms, then the epilogue's roundings;
// tools/gemm_tools.h holds them, gemm_bench uses them too); at TF32 and BF16 the products' inputs
// are rounded first, which adds (2·u_p + u_p²)·Σ|terms| (u_p = 2⁻¹¹,
// 2⁻⁸; the float32 sum's bound then on the rounded terms, (1 + 2u_p + u_p²) times larger). Prints
// one line per check with the worst ratio error/tol; exits 0 when all pass, 1 when one fails,
// 2 for bad arguments, 3 without a CUDA device.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "common/cuda_check.h"
#include "paths/kernel_path.h"
#include "paths/tiled_path.h"
#include "tools/gemm_tools.h"

namespace {
using namespace mlp::tiled;
using namespace mlp::tiled::tools;
using mlp::Precision;

std::vector<int> parse_list(const char* flag, const char* v) {
  std::vector<int> out;
  std::string s(v), item;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == ',') {
      char* end = nullptr;
      const long x = std::strtol(item.c_str(), &end, 10);
      if (item.empty() || *end || x < 1 || x > 65536) {
        std::fprintf(stderr, "error: %s: '%s' is not an integer in 1..65536\n", flag, item.c_str());
        std::exit(2);
      }
      out.push_back((int)x);
      item.clear();
    } else {
      item += s[i];
    }
  }
  return out;
}

// One check's plan: the shape's own (the cost model's) with shape < 0, else the forced shape and split.
GemmPlan check_plan(int M, int N, int K, int sms, int shape, int split, Precision pr) {
  return shape < 0 ? plan_gemm(M, N, K, sms, pr) : plan_gemm_fixed(M, N, K, sms, shape, split);
}

struct Verdict {
  double worst = 0;  // max error / tol
  long bad = 0;
};

// The output rows checked: all of them up to 96, else the first and last 16, the 8 on each side of
// every 64-row boundary up to 512 (the tile edges), and every 37th row: the float64 sums stay
// seconds at width 8192 and batch 2048. Every column of a checked row is checked.
std::vector<int> checked_rows(int M) {
  std::vector<int> r;
  for (int m = 0; m < M; ++m)
    if (M <= 96 || m < 16 || m >= M - 16 || (m < 512 && (m % 64 < 8 || m % 64 >= 56)) || m % 37 == 0) r.push_back(m);
  return r;
}

// Each checked row's ratios error/tol through `ratio(m, n)`, rows in parallel.
template <class F>
Verdict verdict(int M, int N, F ratio) {
  const std::vector<int> rows = checked_rows(M);
  std::vector<double> worst(rows.size(), 0);
  std::vector<long> bad(rows.size(), 0);
#pragma omp parallel for schedule(dynamic)
  for (long i = 0; i < (long)rows.size(); ++i)
    for (int n = 0; n < N; ++n) {
      const double r = ratio(rows[i], n);
      if (!(r <= 1)) ++bad[i];
      if (!(r <= worst[i])) worst[i] = r;
    }
  Verdict v;
  for (size_t i = 0; i < rows.size(); ++i) {
    v.bad += bad[i];
    if (!(worst[i] <= v.worst)) v.worst = worst[i];
  }
  return v;
}

// One forward check: rows of X (n_rows × K) gathered through `rows` (M of them).
Verdict check_forward(int M, int N, int K, int shape, int split, int sms, Precision prec, std::mt19937& rng,
                      std::string* plan) {
  const int n_rows = M + 5;
  std::uniform_real_distribution<float> u01(0.f, 1.f), u11(-1.f, 1.f);
  std::vector<float> X((size_t)n_rows * K), W((size_t)K * N), b(N), H((size_t)M * N);
  for (auto& x : X) x = u01(rng);
  for (auto& x : W) x = u11(rng) * 0.1f;
  for (auto& x : b) x = u11(rng) * 0.1f;
  std::vector<int> rows(M);
  for (int i = 0; i < M; ++i) rows[i] = (int)((i * 7919L + 3) % n_rows);
  Dev<> dX(X), dW(W), db(b), dH(H.size());
  Dev<int> drows(rows);
  CUDA_CHECK(cudaMemset(dH.p, 0xff, H.size() * 4));  // NaN
  PlannedGemm g(check_plan(M, N, K, sms, shape, split, prec), prec);
  *plan = g.p.describe();
  GemmArgs a{};
  a.M = M; a.N = N; a.K = K;
  a.A = dX.p; a.lda = K; a.a_rows = drows.p;
  a.B = dW.p; a.ldb = N; a.C = dH.p; a.ldc = N; a.bias = db.p;
  for (int rep = 0; rep < 2; ++rep)  // twice: the tickets must be back at zero after a launch
    g.launch(ALayout::RowMajor, Epi::BiasRelu, a);
  CUDA_CHECK(cudaDeviceSynchronize());
  CUDA_CHECK(cudaMemcpy(H.data(), dH.p, H.size() * 4, cudaMemcpyDeviceToHost));
  return verdict(M, N, [&](int m, int n) {
    double s = b[n], mag = std::fabs((double)b[n]);
    const float* x = X.data() + (size_t)rows[m] * K;
    for (int k = 0; k < K; ++k) {
      s += (double)x[k] * W[(size_t)k * N + n];
      mag += std::fabs((double)x[k] * W[(size_t)k * N + n]);
    }
    const double want = s > 0 ? s : 0, got = H[(size_t)m * N + n];
    const double tol = forward_tol(prec, K, mag, want);
    return std::isfinite(got) ? std::fabs(got - want) / tol : INFINITY;
  });
}

// One update check: X (n_rows × M) gathered through `rows` (K of them) as Xᵀ; dH [K × N].
Verdict check_update(int M, int N, int K, int shape, int split, int sms, Precision prec, std::mt19937& rng,
                     std::string* plan) {
  const int n_rows = K + 5;
  const float lr = 0.1f, mu = 0.9f;
  std::uniform_real_distribution<float> u01(0.f, 1.f), u11(-1.f, 1.f);
  std::vector<float> X((size_t)n_rows * M), G((size_t)K * N), W((size_t)M * N), V((size_t)M * N);
  for (auto& x : X) x = u01(rng);
  for (auto& x : G) x = u11(rng) * 0.01f;
  for (auto& x : W) x = u11(rng) * 0.05f;
  for (auto& x : V) x = u11(rng) * 0.01f;
  std::vector<int> rows(K);
  for (int i = 0; i < K; ++i) rows[i] = (int)((i * 104729L + 1) % n_rows);
  Dev<> dX(X), dG(G), dW(W), dV(V);
  Dev<int> drows(rows);
  PlannedGemm g(check_plan(M, N, K, sms, shape, split, prec), prec);
  *plan = g.p.describe();
  GemmArgs a{};
  a.M = M; a.N = N; a.K = K;
  a.A = dX.p; a.lda = M; a.a_rows = drows.p;
  a.B = dG.p; a.ldb = N; a.C = dW.p; a.ldc = N; a.vel = dV.p; a.lr = lr; a.mu = mu;
  g.launch(ALayout::KMajor, Epi::Momentum, a);
  CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<float> W1(W.size()), V1(V.size());
  CUDA_CHECK(cudaMemcpy(W1.data(), dW.p, W.size() * 4, cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(V1.data(), dV.p, V.size() * 4, cudaMemcpyDeviceToHost));
  return verdict(M, N, [&](int m, int n) {
    double g = 0, mag = 0;
    for (int k = 0; k < K; ++k) {
      const double t = (double)X[(size_t)rows[k] * M + m] * G[(size_t)k * N + n];
      g += t;
      mag += std::fabs(t);
    }
    const size_t i = (size_t)m * N + n;
    const double vel = mu * (double)V[i] - lr * g, want = W[i] + vel;
    const double tol = update_tol(prec, K, lr, mu, mag, W[i], V[i], g);
    const double rw = std::isfinite(W1[i]) ? std::fabs(W1[i] - want) / tol : INFINITY;
    const double rv = std::isfinite(V1[i]) ? std::fabs(V1[i] - vel) / tol : INFINITY;
    return std::max(rw, rv);
  });
}
}  // namespace

int main(int argc, char** argv) {
  std::vector<int> widths = {64, 1000, 4096, 8192}, batches = {1, 7, 2048};
  std::vector<Precision> precisions = {Precision::FP32, Precision::TF32, Precision::BF16};
  int in = 784;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc || (a != "--widths" && a != "--batches" && a != "--in" && a != "--precisions")) {
      std::fprintf(stderr, "usage: gemm_check [--widths a,b] [--batches a,b] [--in N] [--precisions fp32,tf32,bf16]\n");
      return 2;
    }
    if (a == "--widths") widths = parse_list("--widths", argv[++i]);
    else if (a == "--batches") batches = parse_list("--batches", argv[++i]);
    else if (a == "--precisions") {
      precisions.clear();
      const std::string list = argv[++i];
      size_t pos = 0;
      while (pos <= list.size()) {
        const size_t end = std::min(list.find(',', pos), list.size());
        Precision p;
        if (!mlp::parse_precision(list.substr(pos, end - pos), &p)) {
          std::fprintf(stderr, "error: --precisions: %s is not fp32, tf32 or bf16\n", list.substr(pos, end - pos).c_str());
          return 2;
        }
        precisions.push_back(p);
        pos = end + 1;
      }
    } else in = parse_list("--in", argv[++i]).at(0);
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "error: no CUDA device\n");
    return 3;
  }
  try {
    const int sms = mlp::effective_limits().sms;
    std::mt19937 rng(20260829);
    long failed = 0, checks = 0;
    std::printf("%s\n", kToleranceText);
    for (Precision prec : precisions)
      for (int w : widths)
        for (int b : batches) {
          // The shape's own plan, then every tile shape of the precision unsplit and split in 3.
          std::vector<std::pair<int, int>> forced = {{-1, 0}};
          for (int sh = 0; sh < kNumTileShapes; ++sh)
            if (shape_serves(sh, prec)) forced.push_back({sh, 1}), forced.push_back({sh, 3});
          for (auto [shape, split] : forced)
            for (int which = 0; which < 2; ++which) {
              std::string plan;
              const Verdict v = which == 0 ? check_forward(b, w, in, shape, split, sms, prec, rng, &plan)
                                           : check_update(in, w, b, shape, split, sms, prec, rng, &plan);
              ++checks;
              failed += v.bad > 0;
              std::printf("%-7s %s width %5d batch %5d in %4d  %-44s %s  worst ratio %.3f%s\n",
                          which == 0 ? "forward" : "dW1", mlp::precision_name(prec), w, b, in,
                          (shape < 0 ? "plan " + plan : plan).c_str(), v.bad ? "FAIL" : "ok  ", v.worst,
                          v.bad ? (" (" + std::to_string(v.bad) + " outputs)").c_str() : "");
              std::fflush(stdout);
            }
        }
    std::printf("%ld of %ld checks failed\n", failed, checks);
    return failed ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
