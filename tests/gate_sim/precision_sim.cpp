// tests/gate_sim/precision_sim.cpp — the gate per precision on the CPU: tests/submissions/
// naive_base.cuh's arithmetic (one float32 FMA chain per output, in order), its matrix products'
// inputs rounded to TF32 (round to nearest, ties away: cvt.rna.tf32.f32) or bfloat16 (round to
// nearest even) by common/precision.h's round_to_precision, as tests/submissions/tf32_products.cu
// and bf16_products.cu round them, scored by
// the gate's own functions (gate/tolerances.h, gate/epoch_check.h) on the gate's inputs (cases 1,
// 2, 4 and 9 as gate/entry_cases.cu and gate/epoch_cases.cu draw them), against the limits of a
// declared precision. With the numeric defects of the mutants in tests/submissions/ at TF32 and
// BF16, and the one-epoch parity (against float64, over its update) and case 6's overfit.
//
//   precision_sim DATA                 one line per check: "ARITH DECLARED BUG CHECK VALUE"
//   precision_sim DATA --parity        also the one-epoch parity and case 6's overfit (tens of seconds)
//   precision_sim DATA --parity --train  and case 7: 20 epochs, last-5 mean test accuracy vs float64 (minutes)
//   precision_sim DATA --parity-at H,B,N  only the one-epoch parity at 784-H-10, batch B, N images,
//                                         and the rounded-input reference's (gate/cpu_reference.h)
//   precision_sim DATA --worst-case      only the bound model's worst case, attained (a few seconds):
//                                         cases 1, 2 and 9 where every term of every sum has one sign
//                                         and every product input is off by exactly lambda·u_p
//
// VALUE is the case's value over its limit (≤ 1 passes) for case1, case2, case4 and case9; for
// case4 also "case4-c": the least c with which rtol = 1e-4 + c·u_p, atol = 1e-6 + c·u_p would pass
// it (u_p of ARITH); "parity" the one-epoch distance over the update (the gate's limit 1e-2);
// "overfit" case 6's loss (limit 0.01); "train" case 7's |gap| in pp (limit 1).
// tests/test_gate_precision.py reads it.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "common/precision.h"
#include "common/rng.h"
#include "gate/cpu_reference.h"
#include "gate/epoch_check.h"
#include "gate/tolerances.h"
#include "io/dataset.h"

using mlp::Precision;

namespace {

struct Emu {
  Precision arith = Precision::FP32;
  std::string bug;  // "", or a mutant of naive_base.cuh: no_relu_mask, db_wrong_axis, frozen_b2, tail_mean,
                    // fixed_hyperparams, flipped_update
  // > 0: instead of rounding to `arith`, every product input is moved away from zero by exactly this
  // relative amount, x -> x·(1 + inflate) (the worst case of a rounding with unit roundoff `inflate`
  // when every term of a sum has one sign; --worst-case). The float32 value of x·(1 + inflate) is
  // itself rounded, so the move is inflate ± 2^-24 relative.
  double inflate = 0;
};

std::vector<float> rounded(const float* a, size_t n, const Emu& e) {
  std::vector<float> r(a, a + n);
  if (e.inflate > 0)
    for (auto& x : r) x = (float)((double)x * (1 + e.inflate));
  else
    for (auto& x : r) x = mlp::round_to_precision(x, e.arith);
  return r;
}

// naive_gemm: C[M×N] = A·B (A [M×K] or, ta, stored K×M; B [K×N] or, tb, stored N×K), one FMA chain
// per element in k order, then + bias, ReLU, mask; the inputs rounded to the arithmetic first.
void gemm(int M, int N, int K, const float* A0, bool ta, const float* B0, bool tb, float* C, const float* bias,
          bool relu, const float* mask, const Emu& e) {
  const std::vector<float> A = rounded(A0, (size_t)M * K, e), B = rounded(B0, (size_t)K * N, e);
#pragma omp parallel for schedule(static)
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      float acc = 0.f;
      for (int k = 0; k < K; ++k) {
        const float a = ta ? A[(size_t)k * M + m] : A[(size_t)m * K + k];
        const float b = tb ? B[(size_t)n * K + k] : B[(size_t)k * N + n];
        acc = std::fmaf(a, b, acc);
      }
      if (bias) acc += bias[n];
      if (relu) acc = std::fmax(acc, 0.f);
      if (mask && e.bug != "no_relu_mask" && !(mask[(size_t)m * N + n] > 0.f)) acc = 0.f;
      C[(size_t)m * N + n] = acc;
    }
}

void colsum(int rows, int cols, const float* M, float* out, const Emu& e) {
  for (int c = 0; c < cols; ++c) {
    float acc = 0.f;
    if (e.bug == "db_wrong_axis")
      for (int k = 0; k < cols; ++k) acc += c < rows ? M[(size_t)c * cols + k] : 0.f;
    else
      for (int r = 0; r < rows; ++r) {
      const float m = M[(size_t)r * cols + c];
      // --worst-case: a column sum computed as a product with a ones vector, its summands moved once
      // (the model's u_p of a column sum's terms, gate/epoch_check.h); otherwise a plain float32 sum.
      acc += e.inflate > 0 ? (float)((double)m * (1 + e.inflate)) : m;
    }
    out[c] = acc;
  }
}

void forward(MlpShape s, const float* p, const float* X, int B, float* H, float* Z, const Emu& e) {
  const MlpOffsets o = mlp_offsets(s);
  gemm(B, s.hidden, s.in, X, false, p + o.w1, false, H, p + o.b1, true, nullptr, e);
  gemm(B, s.out, s.hidden, H, false, p + o.w2, false, Z, p + o.b2, false, nullptr, e);
}

float loss(MlpShape s, const float* Z, const int* y, int B, int denom, float* dZ) {
  const int O = s.out;
  std::vector<float> mine(256, 0.f);
  for (int r = 0; r < B; ++r) {
    const float* z = Z + (size_t)r * O;
    float m = z[0], sum = 0.f;
    for (int k = 1; k < O; ++k) m = std::fmax(m, z[k]);
    for (int k = 0; k < O; ++k) sum += std::exp(z[k] - m);
    for (int k = 0; k < O; ++k) dZ[(size_t)r * O + k] = (std::exp(z[k] - m) / sum - (k == y[r] ? 1.f : 0.f)) / denom;
    mine[(size_t)(r % 256)] += std::log(sum) - (z[y[r]] - m);
  }
  float acc = 0.f;
  for (float v : mine) acc += v;
  return acc / denom;
}

void backward(MlpShape s, const float* p, const float* X, const float* H, const float* dZ, int B, float* g, float* dH,
              float* dX, const Emu& e) {
  const MlpOffsets o = mlp_offsets(s);
  gemm(s.hidden, s.out, B, H, true, dZ, false, g + o.w2, nullptr, false, nullptr, e);
  colsum(B, s.out, dZ, g + o.b2, e);
  gemm(B, s.hidden, s.out, dZ, false, p + o.w2, true, dH, nullptr, false, H, e);
  gemm(s.in, s.hidden, B, X, true, dH, false, g + o.w1, nullptr, false, nullptr, e);
  colsum(B, s.hidden, dH, g + o.b1, e);
  if (dX) gemm(B, s.in, s.hidden, dH, false, p + o.w1, true, dX, nullptr, false, nullptr, e);
}

void step(size_t n, float lr, float mu, float* p, float* v, const float* g, const Emu& e) {
  if (e.bug == "fixed_hyperparams") lr = 0.1f, mu = 0.9f;
  for (size_t i = 0; i < n; ++i) {
    v[i] = mu * v[i] - lr * g[i];
    if (e.bug == "flipped_update") p[i] -= v[i];
    else p[i] += v[i];
  }
}

// mlp_train_epoch of naive_base.cuh; the last step's mean loss per step in `losses`.
void epoch(MlpShape s, std::vector<float>& p, std::vector<float>& v, const float* X_all, const int* y_all,
           const int32_t* order, int n, int batch, float lr, float mu, std::vector<float>& losses, const Emu& e) {
  const MlpOffsets o = mlp_offsets(s);
  std::vector<float> X((size_t)batch * s.in), H((size_t)batch * s.hidden), dH(H.size()), Z((size_t)batch * s.out),
      dZ(Z.size()), g(o.total);
  std::vector<int> y(batch);
  losses.clear();
  for (int t = 0; t * batch < n; ++t) {
    const int nb = std::min(batch, n - t * batch) - (e.bug == "drop_row" && batch > 1 ? 1 : 0);
    for (int r = 0; r < nb; ++r) {
      const int idx = order[(size_t)t * batch + r];
      std::memcpy(&X[(size_t)r * s.in], X_all + (size_t)idx * s.in, sizeof(float) * s.in);
      y[r] = y_all[idx];
    }
    forward(s, p.data(), X.data(), nb, H.data(), Z.data(), e);
    losses.push_back(loss(s, Z.data(), y.data(), nb, e.bug == "tail_mean" ? batch : nb, dZ.data()));
    backward(s, p.data(), X.data(), H.data(), dZ.data(), nb, g.data(), dH.data(), nullptr, e);
    if (e.bug == "drop_step" && t == 20) continue;
    step(e.bug == "frozen_b2" ? o.b2 : o.total, lr, mu, p.data(), v.data(), g.data(), e);
  }
}

// The gate's two workloads (gate/workload.cu): the recipe's real images in epoch 0's order with
// the seed's initial weights, and the odd shape's 640 seeded rows.
struct Work {
  MlpShape s;
  std::vector<float> X;
  std::vector<int> y;
  std::vector<int32_t> order;
  std::vector<float> init;
  bool odd = false;
};

Work recipe_work(const Dataset& d, uint64_t seed) {
  Work w;
  w.s = MlpShape{d.dim, 256, 10};
  w.X.assign(d.train_x.begin(), d.train_x.end());
  w.y.assign(d.train_y.begin(), d.train_y.end());
  w.order = epoch_order(d.n_train, seed, 0);
  w.init = init_params(w.s, seed);
  return w;
}

Work odd_work(uint64_t seed) {
  Work w;
  w.s = MlpShape{37, 19, 3};
  w.odd = true;
  const int rows = 640;
  SplitMix64 rng(stream_seed(seed, kStreamTest, 37));
  w.X.resize((size_t)rows * w.s.in);
  for (auto& x : w.X) x = (float)(rng.next() % 256) / 255.0f;
  w.y.resize(rows);
  for (auto& v : w.y) v = (int)(rng.next() % (uint64_t)w.s.out);
  w.order = epoch_order(rows, seed ^ 0x37u, 0);
  w.init = init_params(w.s, seed ^ 0x37u);
  return w;
}

void take(const Work& w, int B, std::vector<float>& X, std::vector<int>& y) {
  X.assign((size_t)B * w.s.in, 0.f);
  y.assign(B, 0);
  for (int r = 0; r < B; ++r) {
    const int idx = w.order[(size_t)r % w.order.size()];
    std::memcpy(&X[(size_t)r * w.s.in], &w.X[(size_t)idx * w.s.in], sizeof(float) * w.s.in);
    y[r] = w.y[idx];
  }
}

std::vector<float> uniform(size_t n, double scale, SplitMix64& rng) {  // gate/workload.cu's
  std::vector<float> v(n);
  for (auto& x : v) x = (float)((rng.uniform() * 2 - 1) * scale);
  return v;
}
std::pair<float, float> drawn_hyperparameters(uint64_t seed) {  // gate/workload.cu's
  SplitMix64 rng(seed);
  const float lr = (float)(0.01 + 0.49 * rng.uniform()), mu = (float)(0.3 + 0.69 * rng.uniform());
  return {lr, mu};
}

// Cases 1 and 2: the worst part's max(Z's value / limit, H's value / limit).
double forward_ratio(const Work& w, int B, bool normwise, Precision declared, const Emu& e) {
  std::vector<float> Xf;
  std::vector<int> y;
  take(w, B, Xf, y);
  std::vector<float> H((size_t)B * w.s.hidden), Z((size_t)B * w.s.out);
  forward(w.s, w.init.data(), Xf.data(), B, H.data(), Z.data(), e);
  std::vector<double> P(w.init.begin(), w.init.end()), X(Xf.begin(), Xf.end()), Hr(H.size()), Zr(Z.size()), Hs, Zs;
  ref_forward(w.s, P.data(), X.data(), B, Hr.data(), Zr.data());
  gate::abs_forward(w.s, P, X, B, Hs, Zs);
  const gate::ForwardLimits l = gate::forward_limits(declared, w.s, normwise);
  return std::max(gate::error_of(Z, Zr, Zs, normwise) / l.z, gate::error_of(H, Hr, Hs, normwise) / l.h);
}

// Case 4's part (gate/entry_cases.cu grad_part): the value over 200 coordinates and dX, and the
// least c that would pass it.
struct GradScore {
  double ratio = 0, c_needed = 0;
};
GradScore grad_score(const Work& w, int B, bool with_dx, uint64_t seed, Precision declared, const Emu& e) {
  const MlpShape s = w.s;
  const MlpOffsets o = mlp_offsets(s);
  std::vector<float> Xf;
  std::vector<int> y;
  take(w, B, Xf, y);
  std::vector<float> H((size_t)B * s.hidden), Z((size_t)B * s.out), dZ(Z.size()), g(o.total), dH(H.size()), dX(Xf.size());
  forward(s, w.init.data(), Xf.data(), B, H.data(), Z.data(), e);
  loss(s, Z.data(), y.data(), B, B, dZ.data());
  backward(s, w.init.data(), Xf.data(), H.data(), dZ.data(), B, g.data(), dH.data(), with_dx ? dX.data() : nullptr, e);
  std::vector<double> P(w.init.begin(), w.init.end()), X(Xf.begin(), Xf.end()), Hr(H.size()), Zr(Z.size()),
      G(Z.size()), ref(o.total), dXr(X.size());
  ref_forward(s, P.data(), X.data(), B, Hr.data(), Zr.data());
  ref_loss(s, Zr.data(), y.data(), B, G.data());
  ref_backward(s, P.data(), X.data(), Hr.data(), G.data(), B, ref.data(), dXr.data());
  const gate::GradTolerance t = gate::grad_tolerance(declared);
  const gate::KinkAllowance kink = gate::kink_allowance(declared, s, P, X, G, B, with_dx);
  const double up = mlp::unit_roundoff(e.arith == Precision::FP32 ? Precision::TF32 : e.arith);
  GradScore sc;
  auto score = [&](double got, double want, double tmax, double k) {
    sc.ratio = std::max(sc.ratio, gate::grad_error(got, want, tmax, t, k));
    const double need =
        (std::fabs(got - want) - 2 * k - 1e-4 * std::fabs(want) - 1e-6 * tmax) / (up * (std::fabs(want) + tmax));
    sc.c_needed = std::max(sc.c_needed, std::isnan(need) ? INFINITY : need);
  };
  const size_t begin[4] = {o.w1, o.b1, o.w2, o.b2}, end[4] = {o.b1, o.w2, o.b2, o.total};
  SplitMix64 rng(seed);
  for (int k = 0; k < 4; ++k) {
    double tmax = 0;
    for (size_t i = begin[k]; i < end[k]; ++i) tmax = std::max(tmax, std::fabs(ref[i]));
    for (int q = 0; q < 50; ++q) {
      const size_t i = begin[k] + (size_t)(rng.next() % (uint64_t)(end[k] - begin[k]));
      score(g[i], ref[i], tmax, kink.grads.empty() ? 0 : kink.grads[i]);
    }
  }
  if (with_dx) {
    double xmax = 0;
    for (double v : dXr) xmax = std::max(xmax, std::fabs(v));
    for (size_t i = 0; i < dX.size(); ++i) score(dX[i], dXr[i], xmax, kink.dX.empty() ? 0 : kink.dX[i]);
  }
  return sc;
}

// Case 9's part (gate/epoch_cases.cu epoch_part): worst |got − ref| / (2E); ambiguous kinks.
// The float64 reference and its bound depend on the inputs and the declared precision only: made
// once for each (part, declared precision) and kept.
const EpochCheckRef& cached_reference(const EpochCheckInput& in, int part) {
  static std::map<std::pair<int, int>, EpochCheckRef> refs;
  const auto key = std::make_pair(part, (int)in.precision);
  auto it = refs.find(key);
  if (it == refs.end()) it = refs.emplace(key, epoch_check_reference(in)).first;
  return it->second;
}

double epoch_ratio(const Work& w, int part_id, int B, float lr, float mu, const std::vector<float>& p0,
                   const std::vector<float>& v0, Precision declared, const Emu& e, int* ambiguous) {
  const int n = std::min((int)w.order.size(), B > 1 ? 2 * B + std::max(1, B * 11 / 32) : 3);
  EpochCheckInput in;
  in.s = w.s;
  in.n = n;
  in.batch = B;
  in.lr = lr;
  in.momentum = mu;
  in.X_all = w.X.data();
  in.y_all = w.y.data();
  in.order.assign(w.order.begin(), w.order.begin() + n);
  in.p0 = p0;
  in.v0 = v0;
  in.precision = declared;
  std::vector<float> p = p0, v = v0, losses;
  epoch(w.s, p, v, w.X.data(), w.y.data(), in.order.data(), n, B, lr, mu, losses, e);
  const EpochCheckRef& ref = cached_reference(in, part_id);
  if (ambiguous) *ambiguous = std::max(*ambiguous, ref.ambiguous);
  const EpochCheckScore sc = epoch_check_score(ref, w.s, p, v, losses, 2.0);
  if (std::getenv("PRECISION_SIM_DEBUG"))
    std::fprintf(stderr, "  %s %s %s B=%d: %.3g at %s; %s\n", mlp::precision_name(e.arith), mlp::precision_name(declared),
                 e.bug.c_str(), B, sc.worst, sc.where.c_str(), sc.per_tensor.c_str());
  return sc.worst;
}

const char* name(Precision p) { return mlp::precision_name(p); }

void line(Precision arith, Precision declared, const std::string& bug, const char* check, double v) {
  std::printf("%s %s %s %s %.6g\n", name(arith), name(declared), bug.empty() ? "ok" : bug.c_str(), check, v);
  std::fflush(stdout);
}

// ---- --worst-case: the bound model's worst case, attained ----------------------------------------
// The model (gate/tolerances.h, gate/epoch_check.h): every product input is rounded with relative
// error at most u_p, so every product term lies within (1 + u_p)² − 1 of itself; the limits add up
// those terms' magnitudes. That sum is attained where every term of every sum has one sign and every
// input errs by exactly u_p away from zero (Emu::inflate = u_p): nothing cancels. These instances are
// built so; with inflate = λ·u_p the same arithmetic errs λ times as far (λ > 1: more rounding than
// the declared format does, a defect). tests/test_gate_precision.py reads the lines.
//
// Forward (cases 1 and 2): the gate's inputs X (images, every pixel >= 0) and the magnitudes of the
// seed's initial weights, |W1| |b1| |W2| |b2|: every pre-activation is positive, so the ReLU passes
// every unit, and the errors are, exactly (float32's own sums aside),
//   H: ((1+λu_p)² − 1)·(X·|W1|)            (one product, both inputs moved)
//   Z: ((1+λu_p)⁴ − 1)·(X·|W1|)·|W2| + ((1+λu_p)² − 1)·|b1|·|W2|   (H's error carried, H and W2 moved again)
// printed as "case1-z@SHAPE" (the gate's error_of over abs_forward's scales, what case 1 compares
// with its limit) beside "case1-z-model@SHAPE" (the formula above over the same scales); the same
// for h, and for case 2 (norm-wise) at batches 128 (recipe) and 129 (odd shape).
struct Rel {
  double z = 0, h = 0;
};

double rel_error(const std::vector<double>& err, const std::vector<double>& scale, bool normwise) {
  double worst = 0, num = 0, den = 0;
  for (size_t i = 0; i < err.size(); ++i) {
    worst = std::max(worst, std::fabs(err[i]) / scale[i]);
    num += err[i] * err[i];
    den += scale[i] * scale[i];
  }
  return normwise ? std::sqrt(num / den) : worst;
}

void worst_forward(const Work& w, int B, bool normwise, const Emu& e, Rel& got, Rel& model) {
  const MlpShape s = w.s;
  const MlpOffsets o = mlp_offsets(s);
  std::vector<float> Xf;
  std::vector<int> y;
  take(w, B, Xf, y);
  std::vector<float> P(w.init.size());
  for (size_t i = 0; i < P.size(); ++i) P[i] = std::fabs(w.init[i]);
  std::vector<float> H((size_t)B * s.hidden), Z((size_t)B * s.out);
  forward(s, P.data(), Xf.data(), B, H.data(), Z.data(), e);
  std::vector<double> Pd(P.begin(), P.end()), X(Xf.begin(), Xf.end()), Hr(H.size()), Zr(Z.size()), Hs, Zs;
  ref_forward(s, Pd.data(), X.data(), B, Hr.data(), Zr.data());
  gate::abs_forward(s, Pd, X, B, Hs, Zs);
  got.z = gate::error_of(Z, Zr, Zs, normwise);
  got.h = gate::error_of(H, Hr, Hs, normwise);
  const double f2 = std::pow(1 + e.inflate, 2) - 1, f4 = std::pow(1 + e.inflate, 4) - 1;
  std::vector<double> prod(H.size()), eh(H.size()), ez(Z.size());
  for (int r = 0; r < B; ++r)
    for (int j = 0; j < s.hidden; ++j) {
      double acc = 0;
      for (int i = 0; i < s.in; ++i) acc += X[(size_t)r * s.in + i] * Pd[o.w1 + (size_t)i * s.hidden + j];
      prod[(size_t)r * s.hidden + j] = acc;
      eh[(size_t)r * s.hidden + j] = f2 * acc;
    }
  for (int r = 0; r < B; ++r)
    for (int k = 0; k < s.out; ++k) {
      double a = 0, b = 0;
      for (int j = 0; j < s.hidden; ++j) {
        a += prod[(size_t)r * s.hidden + j] * Pd[o.w2 + (size_t)j * s.out + k];
        b += Pd[o.b1 + j] * Pd[o.w2 + (size_t)j * s.out + k];
      }
      ez[(size_t)r * s.out + k] = f4 * a + f2 * b;
    }
  model.h = rel_error(eh, Hs, normwise);
  model.z = rel_error(ez, Zs, normwise);
}

// Epoch (case 9): one step of the recipe's lr and momentum on 32 training images of one class y (the
// class of epoch 0's first image; the first 32 of it in epoch 0's order), velocity drawn as case 9
// draws it; W1 and b1 the magnitudes of the seed's initial weights, and a head whose signs follow the
// loss's derivative dL/dz_k = p_k − [k = y]: column y of W2 and b2 negative, the others positive, all
// scaled by 1/32 so that the logits are about ±1 (and the softmax far from saturating: there its
// derivative's bound, p_k·(|δz_k| + Σ p·|δz|), is loose). Every row then has the same signs
// everywhere: every logit's error has the sign of dL/dz_k, every dZ column one sign, every dH
// element is positive, and the column sums are computed as products with a ones vector (their
// summands moved once: the model's u_p of a column sum). Step 0's loss error is then the whole
// first-order bound of the loss (gate/epoch_check.cpp: Σ_k |p_k − [k=y]|·E_z,k, E_z,k =
// 2u_p·(|H|·|W2| + |b2|)_k + Σ_j E_a,j·|W2_jk|, E_a,j = 2u_p·(|X|·|W1| + |b1|)_j), and so are W2's
// (H·dZ's terms, each one sign) and b2's (dZ's column sums), up to the biases' share of the
// magnitudes, float32's terms of the bound and second-order terms: the gate's value for each,
// |got − ref| / (2E), is λ/2. One step: a second one at this lr would start from a saturated softmax.
// Printed: "case9" (the gate's value: the worst over every parameter, velocity element and step
// loss), "case9-W1", "-b1", "-W2", "-b2", "-loss" (each tensor's worst, epoch_check_score's), and the
// terms the model leaves out: "case9-fp32-share" (the part of the loss bound that float32's terms
// make: the FP32 bound over this one), "case9-zmax" (max |z|, float64), "case9-bias-share" (the
// largest share of |b1| in a pre-activation's magnitude, and of |b2| in a logit's),
// "case9-ambiguous" (ReLU kinks within their bound: none, every pre-activation is far above zero).
struct EpochWorst {
  double worst = 0, fp32_share = 0, zmax = 0, bias_share = 0;
  std::vector<std::pair<std::string, double>> tensors;  // W1, b1, W2, b2, loss: each one's worst
  int ambiguous = 0;
  std::string where;
};

EpochWorst worst_epoch(const Dataset& d, uint64_t seed, Precision declared, const Emu& e) {
  const MlpShape s{d.dim, 256, 10};
  const MlpOffsets o = mlp_offsets(s);
  const int batch = 32, n = 32;  // one step
  const std::vector<int32_t> all = epoch_order(d.n_train, seed, 0);
  const int label = d.train_y[(size_t)all[0]];
  EpochCheckInput in;
  in.s = s;
  in.n = n;
  in.batch = batch;
  in.lr = 0.1f;
  in.momentum = 0.9f;
  in.X_all = d.train_x.data();
  in.y_all = d.train_y.data();
  for (int32_t idx : all)
    if (d.train_y[(size_t)idx] == label && (int)in.order.size() < n) in.order.push_back(idx);
  in.p0 = init_params(s, seed);
  for (size_t i = o.w1; i < o.w2; ++i) in.p0[i] = std::fabs(in.p0[i]);
  for (size_t i = o.w2; i < o.total; ++i) {
    const int k = (int)((i < o.b2 ? i - o.w2 : i - o.b2) % (size_t)s.out);
    in.p0[i] = std::fabs(in.p0[i]) / 32 * (k == label ? -1.f : 1.f);
  }
  SplitMix64 rng(stream_seed(seed, kStreamTest, 9));
  in.v0 = uniform(in.p0.size(), 1e-3, rng);
  in.precision = declared;
  std::vector<float> p = in.p0, v = in.v0, losses;
  epoch(s, p, v, d.train_x.data(), d.train_y.data(), in.order.data(), n, batch, in.lr, in.momentum, losses, e);
  const EpochCheckRef ref = epoch_check_reference(in);
  const EpochCheckScore sc = epoch_check_score(ref, s, p, v, losses, 2.0);
  EpochWorst w;
  w.worst = sc.worst;
  w.where = sc.where + "; " + sc.per_tensor;
  // sc.per_tensor: "W1 0.487, b1 0.384, W2 0.499, b2 0.496, step losses 0.495".
  for (const char* t : {"W1 ", "b1 ", "W2 ", "b2 ", "step losses "}) {
    const size_t at = sc.per_tensor.find(t);
    const double v = at == std::string::npos ? NAN : std::atof(sc.per_tensor.c_str() + at + std::strlen(t));
    w.tensors.emplace_back(std::string(t) == "step losses " ? "loss" : std::string(t, 2), v);
  }
  w.ambiguous = ref.ambiguous;
  EpochCheckInput f32 = in;
  f32.precision = Precision::FP32;
  w.fp32_share = epoch_check_reference(f32).el[0] / ref.el[0];
  std::vector<double> P(in.p0.begin(), in.p0.end()), X((size_t)batch * s.in), H((size_t)batch * s.hidden),
      Z((size_t)batch * s.out);
  for (int r = 0; r < batch; ++r)
    for (int i = 0; i < s.in; ++i) X[(size_t)r * s.in + i] = d.train_x[(size_t)in.order[(size_t)r] * s.in + i];
  ref_forward(s, P.data(), X.data(), batch, H.data(), Z.data());
  std::vector<double> Ha, Za;
  gate::abs_forward(s, P, X, batch, Ha, Za);
  for (size_t i = 0; i < Z.size(); ++i) {
    w.zmax = std::max(w.zmax, std::fabs(Z[i]));
    w.bias_share = std::max(w.bias_share, std::fabs(P[o.b2 + i % (size_t)s.out]) / Za[i]);
  }
  for (size_t i = 0; i < Ha.size(); ++i) w.bias_share = std::max(w.bias_share, P[o.b1 + i % (size_t)s.hidden] / Ha[i]);
  return w;
}

std::string lambda_name(double lambda) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "worst%g", lambda);
  return buf;
}

void worst_case(const Dataset& d, uint64_t seed) {
  const Work rw = recipe_work(d, seed), ow = odd_work(seed);
  struct Run {
    Precision unit, declared;  // inputs moved by lambda·u_p of `unit`; the gate's limits of `declared`
    double lambda;
    bool forward, epoch;
  };
  const Precision T = Precision::TF32, B16 = Precision::BF16;
  const std::vector<Run> runs = {
      {T, T, 1, true, true},        {B16, B16, 1, true, true},        // legal: the model's worst case
      {T, T, 1.75, true, false},    {B16, B16, 1.75, true, false},    // cases 1-2: past the one u_p allowance
      {T, T, 2.5, false, true},     {B16, B16, 2.5, false, true},     // case 9: past the gate's 2·E
      {B16, T, 1, true, true},                                         // bfloat16's worst case declared tf32
  };
  for (const Run& r : runs) {
    const Emu e{Precision::FP32, "", r.lambda * mlp::unit_roundoff(r.unit)};
    const std::string bug = lambda_name(r.lambda);
    if (r.forward) {
      for (const Work* w : {&rw, &ow}) {
        const std::string at = "@" + std::to_string(w->s.in) + "-" + std::to_string(w->s.hidden) + "-" +
                               std::to_string(w->s.out);
        for (int c = 1; c <= 2; ++c) {
          Rel got, model;
          worst_forward(*w, c == 1 ? 1 : (w->odd ? 129 : 128), c == 2, e, got, model);
          const std::string k = "case" + std::to_string(c);
          line(r.unit, r.declared, bug, (k + "-z" + at).c_str(), got.z);
          line(r.unit, r.declared, bug, (k + "-z-model" + at).c_str(), model.z);
          line(r.unit, r.declared, bug, (k + "-h" + at).c_str(), got.h);
          line(r.unit, r.declared, bug, (k + "-h-model" + at).c_str(), model.h);
        }
      }
    }
    if (r.epoch) {
      const EpochWorst w = worst_epoch(d, seed, r.declared, e);
      if (std::getenv("PRECISION_SIM_DEBUG"))
        std::fprintf(stderr, "  %s %s %s: %.4g at %s\n", name(r.unit), name(r.declared), bug.c_str(), w.worst,
                     w.where.c_str());
      line(r.unit, r.declared, bug, "case9", w.worst);
      for (const auto& [t, v] : w.tensors) line(r.unit, r.declared, bug, ("case9-" + t).c_str(), v);
      line(r.unit, r.declared, bug, "case9-fp32-share", w.fp32_share);
      line(r.unit, r.declared, bug, "case9-zmax", w.zmax);
      line(r.unit, r.declared, bug, "case9-bias-share", w.bias_share);
      line(r.unit, r.declared, bug, "case9-ambiguous", w.ambiguous);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string data = argc > 1 ? argv[1] : "data";
  bool parity = false, train = false;
  for (int i = 2; i < argc; ++i) {
    parity |= std::string(argv[i]) == "--parity";
    train |= std::string(argv[i]) == "--train";
  }
  const Dataset d = load_dataset(data, false);
  const uint64_t seed = 20260829;  // recipe.toml's
  for (int i = 2; i < argc; ++i)
    if (std::string(argv[i]) == "--worst-case") {
      worst_case(d, seed);
      return 0;
    }
  for (int i = 2; i + 1 < argc; ++i) {
    if (std::string(argv[i]) != "--parity-at") continue;
    // One epoch at another shape (784-H-10, batch B, the first N train images, the recipe's lr and
    // momentum) in each arithmetic against float64's, over float64's update: how far correct
    // rounding alone carries a trajectory there (tests/test_gpu_tiled.py's tensor-core parity).
    int H = 0, B = 0, N = 0;
    if (std::sscanf(argv[i + 1], "%d,%d,%d", &H, &B, &N) != 3 || H < 1 || B < 1 || N < 1 || N > d.n_train) {
      std::fprintf(stderr, "error: --parity-at H,B,N: got %s\n", argv[i + 1]);
      return 2;
    }
    const MlpShape s{d.dim, H, 10};
    const std::vector<float> init = init_params(s, seed);
    const std::vector<int32_t> order = epoch_order(N, seed, 0);
    std::vector<double> P(init.begin(), init.end());
    std::vector<double> Xtr(d.train_x.begin(), d.train_x.begin() + (size_t)N * s.in);
    std::vector<int> ytr(d.train_y.begin(), d.train_y.begin() + N);
    std::vector<double> Xte(d.test_x.begin(), d.test_x.begin() + s.in);
    ref_train(s, P, Xtr, ytr, N, Xte, d.test_y, 1, {order}, B, 0.1, 0.9, nullptr);
    for (Precision a : {Precision::TF32, Precision::BF16}) {  // the rounded-input reference (float64 sums)
      std::vector<double> Q(init.begin(), init.end());
      ref_train(s, Q, Xtr, ytr, N, Xte, d.test_y, 1, {order}, B, 0.1, 0.9, nullptr, a);
      double dist = 0, upd = 0;
      for (size_t k = 0; k < P.size(); ++k) {
        dist += (Q[k] - P[k]) * (Q[k] - P[k]);
        upd += (P[k] - init[k]) * (P[k] - init[k]);
      }
      line(a, a, "", "reference-at", std::sqrt(dist / upd));
    }
    for (Precision a : {Precision::FP32, Precision::TF32, Precision::BF16}) {
      std::vector<float> p = init, v(init.size(), 0.f), losses;
      epoch(s, p, v, d.train_x.data(), d.train_y.data(), order.data(), N, B, 0.1f, 0.9f, losses, Emu{a, ""});
      double dist = 0, upd = 0;
      for (size_t k = 0; k < P.size(); ++k) {
        dist += (p[k] - P[k]) * (p[k] - P[k]);
        upd += (P[k] - init[k]) * (P[k] - init[k]);
      }
      line(a, a, "", "parity-at", std::sqrt(dist / upd));
    }
    return 0;
  }
  const Work rw = recipe_work(d, seed), ow = odd_work(seed);

  // Case 9's four starting states, drawn as gate/epoch_cases.cu draws them.
  struct Spec { const Work* w; int batch; float lr, mu; std::vector<float> p0, v0; };
  std::vector<Spec> specs;
  {
    const uint64_t s9 = stream_seed(seed, kStreamTest, 9);
    SplitMix64 rng(s9);
    specs.push_back({&rw, 128, 0.1f, 0.9f, rw.init, uniform(rw.init.size(), 1e-3, rng)});
    const auto [lr, mu] = drawn_hyperparameters(s9 + 1);
    Spec moved{&rw, 128, lr, mu, rw.init, uniform(rw.init.size(), 1e-2, rng)};
    const std::vector<float> shift = uniform(rw.init.size(), 0.05, rng);
    for (size_t i = 0; i < moved.p0.size(); ++i) moved.p0[i] += shift[i];
    specs.push_back(moved);
    for (int b : {7, 129}) {
      const auto [lro, muo] = drawn_hyperparameters(s9 + 2 + (uint64_t)b);
      specs.push_back({&ow, b, lro, muo, ow.init, uniform(ow.init.size(), 1e-3, rng)});
    }
  }
  const uint64_t s4 = stream_seed(seed, kStreamTest, 4);

  struct Run { Precision arith, declared; std::string bug; bool entry, epoch9, parity; };
  const Precision F = Precision::FP32, T = Precision::TF32, B16 = Precision::BF16;
  const std::vector<Run> runs = {
      {F, F, "", true, true, true},           // the float32 gate's own margins
      {F, F, "drop_row", false, true, true}, {T, T, "drop_row", false, true, true}, {B16, B16, "drop_row", false, true, true},
      {F, F, "drop_step", false, false, true}, {T, T, "drop_step", false, false, true}, {B16, B16, "drop_step", false, false, true},
      {T, T, "", true, true, true},           // tf32_products.cu
      {B16, B16, "", true, true, true},       // bf16_products.cu
      {T, F, "", true, true, false},          // mutant_undeclared_tf32.cu: the FP32 gate
      {B16, F, "", true, true, false},        // the same at bfloat16
      {T, B16, "", true, true, false},        // tf32 declared bf16: looser, passes
      {B16, T, "", true, true, false},        // bf16 declared tf32: rounds more than declared
      {T, T, "no_relu_mask", true, true, false}, {B16, B16, "no_relu_mask", true, true, false},
      {T, T, "db_wrong_axis", true, true, false}, {B16, B16, "db_wrong_axis", true, true, false},
      {T, T, "frozen_b2", false, true, false}, {B16, B16, "frozen_b2", false, true, false},
      {T, T, "tail_mean", false, true, false}, {B16, B16, "tail_mean", false, true, false},
      {T, T, "fixed_hyperparams", false, true, false}, {B16, B16, "fixed_hyperparams", false, true, false},
      {T, T, "flipped_update", false, true, false}, {B16, B16, "flipped_update", false, true, false},
  };
  for (const Run& r : runs) {
    const Emu e{r.arith, r.bug};
    if (r.entry) {
      line(r.arith, r.declared, r.bug, "case1",
           std::max(forward_ratio(rw, 1, false, r.declared, e), forward_ratio(ow, 1, false, r.declared, e)));
      line(r.arith, r.declared, r.bug, "case2",
           std::max({forward_ratio(rw, 128, true, r.declared, e), forward_ratio(ow, 7, true, r.declared, e),
                     forward_ratio(ow, 129, true, r.declared, e)}));
      GradScore worst;
      for (const GradScore& g : {grad_score(rw, 128, false, s4, r.declared, e), grad_score(rw, 128, true, s4, r.declared, e),
                                 grad_score(ow, 7, true, s4 + 7, r.declared, e),
                                 grad_score(ow, 129, true, s4 + 129, r.declared, e)}) {
        worst.ratio = std::max(worst.ratio, g.ratio);
        worst.c_needed = std::max(worst.c_needed, g.c_needed);
      }
      line(r.arith, r.declared, r.bug, "case4", worst.ratio);
      line(r.arith, r.declared, r.bug, "case4-c", worst.c_needed);
    }
    if (r.epoch9) {
      double worst = 0;
      int ambiguous = 0;
      for (size_t k = 0; k < specs.size(); ++k) {
        const Spec& sp = specs[k];
        worst = std::max(worst, epoch_ratio(*sp.w, (int)k, sp.batch, sp.lr, sp.mu, sp.p0, sp.v0, r.declared, e,
                                            &ambiguous));
      }
      line(r.arith, r.declared, r.bug, "case9", worst);
      line(r.arith, r.declared, r.bug, "case9-ambiguous", ambiguous);
    }
    if (r.parity && parity) {
      // One epoch of the recipe from the initial state, against float64's, over float64's update
      // (the gate measures against the fused path's, which is float64's within 1e-7 to 3e-3).
      const MlpShape s = rw.s;
      std::vector<float> p = rw.init, v(rw.init.size(), 0.f), losses;
      epoch(s, p, v, rw.X.data(), rw.y.data(), rw.order.data(), d.n_train, 128, 0.1f, 0.9f, losses, e);
      std::vector<double> P(rw.init.begin(), rw.init.end());
      std::vector<double> Xtr(d.train_x.begin(), d.train_x.end()), Xte(d.test_x.begin(), d.test_x.begin() + s.in);
      ref_train(s, P, Xtr, d.train_y, d.n_train, Xte, d.test_y, 1, {rw.order}, 128, 0.1, 0.9, nullptr);
      double dist = 0, upd = 0;
      for (size_t i = 0; i < P.size(); ++i) {
        dist += (p[i] - P[i]) * (p[i] - P[i]);
        upd += (P[i] - rw.init[i]) * (P[i] - rw.init[i]);
      }
      line(r.arith, r.declared, r.bug, "parity", std::sqrt(dist / upd));
      // Case 6: 200 steps of the first 32 images of epoch 0's order, batch 32, from zero velocity.
      std::vector<float> po = rw.init, vo(rw.init.size(), 0.f), lo;
      for (int t = 0; t < 200; ++t) epoch(s, po, vo, rw.X.data(), rw.y.data(), rw.order.data(), 32, 32, 0.1f, 0.9f, lo, e);
      line(r.arith, r.declared, r.bug, "overfit", lo.back());
      if (train) {
        // Case 7: the recipe's 20 epochs, last-5 mean test accuracy against float64's.
        std::vector<float> pt = rw.init, vt(rw.init.size(), 0.f), lt;
        std::vector<double> P64(rw.init.begin(), rw.init.end()), Xte_all(d.test_x.begin(), d.test_x.end());
        std::vector<std::vector<int32_t>> orders;
        for (int ep = 0; ep < 20; ++ep) orders.push_back(epoch_order(d.n_train, seed, ep));
        const RefTrainResult ref = ref_train(s, P64, Xtr, d.train_y, d.n_train, Xte_all, d.test_y, d.n_test, orders, 128,
                                             0.1, 0.9, nullptr);
        double acc_sum = 0, ref_sum = 0;
        for (int ep = 0; ep < 20; ++ep) {
          epoch(s, pt, vt, rw.X.data(), rw.y.data(), orders[ep].data(), d.n_train, 128, 0.1f, 0.9f, lt, Emu{r.arith, ""});
          if (ep < 15) continue;
          std::vector<double> Pd(pt.begin(), pt.end());
          acc_sum += ref_evaluate(s, Pd.data(), Xte_all.data(), d.test_y.data(), d.n_test).accuracy;
          ref_sum += ref.test_accuracy_per_epoch[(size_t)ep];
        }
        line(r.arith, r.declared, r.bug, "train", 100 * std::fabs(acc_sum - ref_sum) / 5);
      }
    }
  }
  return 0;
}
