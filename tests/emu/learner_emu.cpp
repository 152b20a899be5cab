// tests/emu/learner_emu.cpp — a submission of tests/submissions/ on the CPU, through the transformer's
// emulation of the CUDA runtime and built-ins (cuda/transformer/emu/: each block's threads as fibers
// switched at every barrier, blocks one after another), checked against float64 the way the gate's
// cases check it. tests/test_learner_emulated.py builds it once per submission from a copy of the
// sources whose `kernel<<<grid, block, smem, stream>>>(args)` launches are rewritten to
// EMU_LAUNCH((kernel), grid, block, smem, stream, args), named by LEARNER_SOURCE.
//
// Each check prints "case N <what>: ok|FAIL <detail>", N the gate case it stands for:
//   1  forward, one row, element-wise       (784-256-10 and 37-19-3)
//   2  forward, batches 128 / 7, 129         element-wise here (the gate: norm-wise)
//   3  loss and dZ on rows of ±60, ±100 and N(0, 9) logits, against 64·u like the gate
//   4  backward with dX, every element       (batches 128 / 7, 129)
//   5  step, every element, drawn lr and momentum
//   9  one short epoch with a tail batch (300 rows at batch 128; 17 at 7, 302 at 129), every tensor,
//      the velocity and the step losses against a float64 epoch
//   10 a write into a guard band of any buffer above (the call's own case fails too)
// Bounds: a float32 sum of K products lies within (K + 2)·u·Σ|terms| of float64's (u = 2⁻²⁴), taken
// twice for second-order terms; layer by layer (each layer's reference takes the submission's own
// float input), with the propagated error of dH where the backward's products read it. The epoch:
// each tensor within 1e-3 of its float64 update, the velocity within 1e-3 of its norm, each step
// loss within 1e-4 (float32 runs part from float64 by ~1e-6 over three steps).
// Then "launches per epoch ...: N", the launches of a recipe epoch (6000 rows, batch 128) counted
// without running them, and "outputs hash: H", a hash of every epoch's outputs (two submissions
// with the same hash computed the same bits). Exit 0 when every check passes, 1 otherwise.
// The emulation runs a block's threads one after another between barriers: correct code gives its
// results; a missing barrier usually gives wrong ones (what racecheck, case 12, finds on a device).
#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cuda_runtime.h"  // the emulation: cuda/transformer/emu/ is first on the include path

// The built-ins naive_base.cuh uses beyond the emulation's. One block runs at a time: an atomic is a
// plain update.
inline float __int_as_float(int i) {
  float f;
  std::memcpy(&f, &i, 4);
  return f;
}
inline float atomicAdd(float* p, float v) {
  const float old = *p;
  *p += v;
  return old;
}

long long g_launches = 0;     // every launch, run or not
bool g_run_kernels = true;    // false: count the launches only
#define EMU_LAUNCH(kernel, grid, block, smem, stream, ...)                      \
  do {                                                                          \
    ++g_launches;                                                               \
    if (g_run_kernels) VIT_LAUNCH(kernel, grid, block, smem, stream, __VA_ARGS__); \
  } while (0)

#include LEARNER_SOURCE

namespace {

constexpr double kU = 1.0 / (1 << 24);
constexpr size_t kBand = size_t(1) << 16;  // guard words each side: past any read or write of the mutants
constexpr uint32_t kPattern = 0x7FA5A5A5u;
constexpr MlpShape kRecipe = {784, 256, 10}, kOdd = {37, 19, 3};

int g_failed = 0;
uint64_t g_hash = 1469598103934665603ull;  // FNV-1a

void hash_bytes(const void* p, size_t n) {
  const unsigned char* b = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < n; ++i) g_hash = (g_hash ^ b[i]) * 1099511628211ull;
}

void verdict(int case_id, const std::string& what, bool ok, const std::string& detail) {
  g_failed += !ok;
  std::printf("case %d %s: %s%s%s\n", case_id, what.c_str(), ok ? "ok" : "FAIL", detail.empty() ? "" : " ",
              detail.c_str());
}

std::string label(MlpShape s) {
  return std::to_string(s.in) + "-" + std::to_string(s.hidden) + "-" + std::to_string(s.out);
}

// A buffer with poisoned guard bands of kBand words each side (as the gate's gate/guard.h).
template <class T>
struct Buf {
  static_assert(sizeof(T) == 4, "32-bit words");
  std::vector<uint32_t> raw;
  size_t n;
  std::string name;
  Buf(size_t count, std::string nm) : raw(count + 2 * kBand, kPattern), n(count), name(std::move(nm)) {}
  T* p() { return reinterpret_cast<T*>(raw.data() + kBand); }
  void upload(const std::vector<T>& h) { std::memcpy(p(), h.data(), n * 4); }
  void poison() { std::memset(p(), 0xff, n * 4); }  // float NaN, int −1
  std::vector<T> get() {
    std::vector<T> h(n);
    std::memcpy(h.data(), p(), n * 4);
    return h;
  }
  std::string check() const {
    size_t before = 0, after = 0;
    for (size_t i = 0; i < kBand; ++i) {
      before += raw[i] != kPattern;
      after += raw[kBand + n + i] != kPattern;
    }
    if (!before && !after) return "";
    return name + ": " + std::to_string(before) + " words written before it, " + std::to_string(after) + " after";
  }
};

// After a call: its status, the guard bands of its buffers (case 10 as well as its own), and that
// its inputs still hold what was uploaded. An empty string when all is well.
template <class... B>
std::string after_call(int case_id, const std::string& what, int status, B&... bufs) {
  if (status != MLP_OK) return "returned " + std::string(mlp_status_name(status));
  std::string guard;
  for (const std::string& hit : {bufs.check()...})
    if (!hit.empty()) guard += (guard.empty() ? "" : "; ") + hit;
  if (!guard.empty()) {
    verdict(10, what + " (from case " + std::to_string(case_id) + ")", false, guard);
    return "guard band: " + guard;
  }
  return "";
}

template <class T>
std::string unchanged(const Buf<T>& b, const std::vector<T>& h) {
  return std::memcmp(reinterpret_cast<const T*>(b.raw.data() + kBand), h.data(), b.n * 4) ? "changed its input " + b.name
                                                                                          : "";
}

struct Model {
  MlpShape s;
  MlpOffsets o;
  std::vector<float> p;
};

// torch.nn.Linear's initialisation: every weight and bias of a layer uniform in ±1/√fan_in.
Model init_model(MlpShape s, std::mt19937_64& rng) {
  Model m{s, mlp_offsets(s), {}};
  m.p.resize(m.o.total);
  std::uniform_real_distribution<float> l1(-1.f / std::sqrt((float)s.in), 1.f / std::sqrt((float)s.in));
  std::uniform_real_distribution<float> l2(-1.f / std::sqrt((float)s.hidden), 1.f / std::sqrt((float)s.hidden));
  for (size_t i = 0; i < m.o.w2; ++i) m.p[i] = l1(rng);
  for (size_t i = m.o.w2; i < m.o.total; ++i) m.p[i] = l2(rng);
  return m;
}

std::vector<float> pixels(size_t n, std::mt19937_64& rng) {
  std::uniform_int_distribution<int> px(0, 255);
  std::vector<float> x(n);
  for (auto& v : x) v = (float)px(rng) / 255.f;
  return x;
}

std::vector<int> labels(size_t n, int out, std::mt19937_64& rng) {
  std::uniform_int_distribution<int> d(0, out - 1);
  std::vector<int> y(n);
  for (auto& v : y) v = d(rng);
  return y;
}

// |got − ref| / tol, infinite when got is not finite.
double ratio(double got, double ref, double tol) {
  if (!std::isfinite(got)) return INFINITY;
  const double d = std::fabs(got - ref);
  return d == 0 ? 0 : d / tol;
}

std::string worst_text(double worst) {
  char b[64];
  std::snprintf(b, sizeof b, "worst error/bound %.3g", worst);
  return b;
}

// ------------------------------------------------------------------------------------------ case 1, 2
void check_forward(int case_id, MlpShape s, int B, std::mt19937_64& rng) {
  const std::string what = "forward " + label(s) + " batch " + std::to_string(B);
  Model m = init_model(s, rng);
  const std::vector<float> X = pixels((size_t)B * s.in, rng);
  Buf<float> dP(m.o.total, "params"), dX(X.size(), "X"), dH((size_t)B * s.hidden, "H"), dZ((size_t)B * s.out, "Z");
  dP.upload(m.p);
  dX.upload(X);
  dH.poison();
  dZ.poison();
  std::string bad = after_call(case_id, what, mlp_forward(s, dP.p(), dX.p(), B, dH.p(), dZ.p(), nullptr), dP, dX, dH, dZ);
  if (bad.empty()) bad = unchanged(dP, m.p) + unchanged(dX, X);
  if (!bad.empty()) return verdict(case_id, what, false, bad);
  const std::vector<float> H = dH.get(), Z = dZ.get();
  const float *W1 = &m.p[m.o.w1], *b1 = &m.p[m.o.b1], *W2 = &m.p[m.o.w2], *b2 = &m.p[m.o.b2];
  double worst = 0;
  for (int r = 0; r < B; ++r) {
    for (int j = 0; j < s.hidden; ++j) {
      double acc = b1[j], mag = std::fabs(b1[j]);
      for (int k = 0; k < s.in; ++k) {
        const double t = (double)X[(size_t)r * s.in + k] * W1[(size_t)k * s.hidden + j];
        acc += t;
        mag += std::fabs(t);
      }
      worst = std::max(worst, ratio(H[(size_t)r * s.hidden + j], std::max(acc, 0.0), 2 * (s.in + 2) * kU * mag));
    }
    for (int k = 0; k < s.out; ++k) {  // layer 2 from the submission's own H
      double acc = b2[k], mag = std::fabs(b2[k]);
      for (int j = 0; j < s.hidden; ++j) {
        const double t = (double)H[(size_t)r * s.hidden + j] * W2[(size_t)j * s.out + k];
        acc += t;
        mag += std::fabs(t);
      }
      worst = std::max(worst, ratio(Z[(size_t)r * s.out + k], acc, 2 * (s.hidden + 2) * kU * mag));
    }
  }
  verdict(case_id, what, worst <= 1, worst_text(worst));
}

// --------------------------------------------------------------------------------------------- case 3
double ref_loss(int O, const std::vector<float>& Z, const std::vector<int>& y, std::vector<double>& dZ) {
  const int B = (int)y.size();
  double loss = 0;
  dZ.assign(Z.size(), 0);
  for (int r = 0; r < B; ++r) {
    const float* z = &Z[(size_t)r * O];
    double mx = z[0];
    for (int k = 1; k < O; ++k) mx = std::max(mx, (double)z[k]);
    double sum = 0;
    for (int k = 0; k < O; ++k) sum += std::exp(z[k] - mx);
    for (int k = 0; k < O; ++k) dZ[(size_t)r * O + k] = (std::exp(z[k] - mx) / sum - (k == y[r])) / B;
    loss += std::log(sum) - (z[y[r]] - mx);
  }
  return loss / B;
}

void check_loss(MlpShape s, std::mt19937_64& rng) {
  const std::string what = "loss " + label(s);
  const int O = s.out;
  std::vector<float> Z;
  std::vector<int> y;
  auto row = [&](auto value_of, int lab) {
    for (int k = 0; k < O; ++k) Z.push_back(value_of(k));
    y.push_back(lab);
  };
  row([](int k) { return k == 0 ? 100.f : -100.f; }, 0);
  row([&](int k) { return k == std::min(1, O - 1) ? -100.f : 100.f; }, std::min(1, O - 1));
  for (int lab = 0; lab < std::min(O, 4); ++lab) {
    row([](int) { return 60.f; }, lab);
    row([](int) { return -60.f; }, lab);
    row([&](int k) { return k == lab ? -60.f : 60.f; }, lab);
    row([&](int k) { return k == lab ? 60.f : -60.f; }, lab);
  }
  std::normal_distribution<float> n3(0.f, 3.f);
  std::uniform_int_distribution<int> d(0, O - 1);
  for (int i = 0; i < 12; ++i) row([&](int) { return n3(rng); }, d(rng));
  const int B = (int)y.size();
  Buf<float> dZd(Z.size(), "Z"), dG(Z.size(), "dZ"), dL(1, "loss");
  Buf<int> dy(y.size(), "labels");
  dZd.upload(Z);
  dy.upload(y);
  dG.poison();
  dL.poison();
  std::string bad = after_call(3, what, mlp_loss(s, dZd.p(), dy.p(), B, dG.p(), dL.p(), nullptr), dZd, dG, dL, dy);
  if (bad.empty()) bad = unchanged(dZd, Z) + unchanged(dy, y);
  if (!bad.empty()) return verdict(3, what, false, bad);
  std::vector<double> G;
  const double L = ref_loss(O, Z, y, G);
  const std::vector<float> g = dG.get();
  double e = std::isfinite(dL.get()[0]) ? std::fabs(dL.get()[0] - L) / std::fabs(L) : INFINITY;
  for (size_t i = 0; i < g.size(); ++i) e = std::max(e, std::isfinite(g[i]) ? std::fabs(g[i] - G[i]) * B : INFINITY);
  verdict(3, what, e <= 64 * kU, worst_text(e / (64 * kU)));
}

// --------------------------------------------------------------------------------------------- case 4
void check_backward(MlpShape s, int B, std::mt19937_64& rng) {
  const std::string what = "backward " + label(s) + " batch " + std::to_string(B) + ", dX";
  Model m = init_model(s, rng);
  const float *W1 = &m.p[m.o.w1], *b1 = &m.p[m.o.b1], *W2 = &m.p[m.o.w2], *b2 = &m.p[m.o.b2];
  const std::vector<float> X = pixels((size_t)B * s.in, rng);
  const std::vector<int> y = labels(B, s.out, rng);
  std::vector<float> H((size_t)B * s.hidden), Z((size_t)B * s.out), dZ;
  for (int r = 0; r < B; ++r) {
    for (int j = 0; j < s.hidden; ++j) {
      double acc = b1[j];
      for (int k = 0; k < s.in; ++k) acc += (double)X[(size_t)r * s.in + k] * W1[(size_t)k * s.hidden + j];
      H[(size_t)r * s.hidden + j] = (float)std::max(acc, 0.0);
    }
    for (int k = 0; k < s.out; ++k) {
      double acc = b2[k];
      for (int j = 0; j < s.hidden; ++j) acc += (double)H[(size_t)r * s.hidden + j] * W2[(size_t)j * s.out + k];
      Z[(size_t)r * s.out + k] = (float)acc;
    }
  }
  std::vector<double> dZ64;
  ref_loss(s.out, Z, y, dZ64);
  for (double v : dZ64) dZ.push_back((float)v);
  Buf<float> dP(m.o.total, "params"), dX(X.size(), "X"), dH(H.size(), "H"), dG(dZ.size(), "dZ");
  Buf<float> dgr(m.o.total, "grads"), dHs(H.size(), "dH_scratch"), ddX(X.size(), "dX");
  dP.upload(m.p);
  dX.upload(X);
  dH.upload(H);
  dG.upload(dZ);
  dgr.poison();
  dHs.poison();
  ddX.poison();
  std::string bad = after_call(4, what,
                               mlp_backward(s, dP.p(), dX.p(), dH.p(), dG.p(), B, dgr.p(), dHs.p(), ddX.p(), nullptr),
                               dP, dX, dH, dG, dgr, dHs, ddX);
  if (bad.empty()) bad = unchanged(dP, m.p) + unchanged(dX, X) + unchanged(dH, H) + unchanged(dG, dZ);
  if (!bad.empty()) return verdict(4, what, false, bad);
  const std::vector<float> g = dgr.get(), gx = ddX.get();
  // dH in float64 and the bound on a float32 dH's error (what the products after it read).
  std::vector<double> dHr((size_t)B * s.hidden), edH((size_t)B * s.hidden);
  for (int r = 0; r < B; ++r)
    for (int j = 0; j < s.hidden; ++j) {
      double acc = 0, mag = 0;
      for (int k = 0; k < s.out; ++k) {
        const double t = (double)dZ[(size_t)r * s.out + k] * W2[(size_t)j * s.out + k];
        acc += t;
        mag += std::fabs(t);
      }
      const bool on = H[(size_t)r * s.hidden + j] > 0;
      dHr[(size_t)r * s.hidden + j] = on ? acc : 0;
      edH[(size_t)r * s.hidden + j] = on ? 2 * (s.out + 2) * kU * mag : 0;
    }
  double worst = 0;
  auto term = [&](double got, double ref, double tol) { worst = std::max(worst, ratio(got, ref, tol + 1e-300)); };
  for (int j = 0; j < s.hidden; ++j)  // dW2 = Hᵀ·dZ, db2
    for (int k = 0; k < s.out; ++k) {
      double acc = 0, mag = 0;
      for (int r = 0; r < B; ++r) {
        const double t = (double)H[(size_t)r * s.hidden + j] * dZ[(size_t)r * s.out + k];
        acc += t;
        mag += std::fabs(t);
      }
      term(g[m.o.w2 + (size_t)j * s.out + k], acc, 2 * (B + 2) * kU * mag);
    }
  for (int k = 0; k < s.out; ++k) {
    double acc = 0, mag = 0;
    for (int r = 0; r < B; ++r) acc += dZ[(size_t)r * s.out + k], mag += std::fabs(dZ[(size_t)r * s.out + k]);
    term(g[m.o.b2 + k], acc, 2 * (B + 2) * kU * mag);
  }
  for (int i = 0; i < s.in; ++i)  // dW1 = Xᵀ·dH
    for (int j = 0; j < s.hidden; ++j) {
      double acc = 0, mag = 0, prop = 0;
      for (int r = 0; r < B; ++r) {
        const double x = X[(size_t)r * s.in + i], t = x * dHr[(size_t)r * s.hidden + j];
        acc += t;
        mag += std::fabs(t);
        prop += std::fabs(x) * edH[(size_t)r * s.hidden + j];
      }
      term(g[m.o.w1 + (size_t)i * s.hidden + j], acc, 2 * (B + 2) * kU * mag + 2 * prop);
    }
  for (int j = 0; j < s.hidden; ++j) {  // db1
    double acc = 0, mag = 0, prop = 0;
    for (int r = 0; r < B; ++r) {
      acc += dHr[(size_t)r * s.hidden + j];
      mag += std::fabs(dHr[(size_t)r * s.hidden + j]);
      prop += edH[(size_t)r * s.hidden + j];
    }
    term(g[m.o.b1 + j], acc, 2 * (B + 2) * kU * mag + 2 * prop);
  }
  for (int r = 0; r < B; ++r)  // dX = dH·W1ᵀ
    for (int i = 0; i < s.in; ++i) {
      double acc = 0, mag = 0, prop = 0;
      for (int j = 0; j < s.hidden; ++j) {
        const double w = W1[(size_t)i * s.hidden + j], t = dHr[(size_t)r * s.hidden + j] * w;
        acc += t;
        mag += std::fabs(t);
        prop += std::fabs(w) * edH[(size_t)r * s.hidden + j];
      }
      term(gx[(size_t)r * s.in + i], acc, 2 * (s.hidden + 2) * kU * mag + 2 * prop);
    }
  verdict(4, what, worst <= 1, worst_text(worst));
}

// --------------------------------------------------------------------------------------------- case 5
void check_step(MlpShape s, std::mt19937_64& rng) {
  const size_t n = mlp_offsets(s).total;
  std::uniform_real_distribution<float> u(-1.f, 1.f), lr_d(0.01f, 0.3f), mu_d(0.5f, 0.99f);
  const float lr = lr_d(rng), mu = mu_d(rng);
  std::vector<float> p(n), v(n), g(n);
  for (size_t i = 0; i < n; ++i) p[i] = u(rng), v[i] = 0.1f * u(rng), g[i] = u(rng);
  const std::string what = "step n " + std::to_string(n);
  Buf<float> dp(n, "params"), dv(n, "velocity"), dg(n, "grads");
  dp.upload(p);
  dv.upload(v);
  dg.upload(g);
  std::string bad = after_call(5, what, mlp_step(dp.p(), dv.p(), dg.p(), n, lr, mu, nullptr), dp, dv, dg);
  if (bad.empty()) bad = unchanged(dg, g);
  if (!bad.empty()) return verdict(5, what, false, bad);
  const std::vector<float> P = dp.get(), V = dv.get();
  double worst = 0;
  for (size_t i = 0; i < n; ++i) {
    const double vr = (double)mu * v[i] - (double)lr * g[i], pr = p[i] + vr;
    worst = std::max(worst, ratio(V[i], vr, 1e-6 + 1e-5 * std::fabs(vr)));
    worst = std::max(worst, ratio(P[i], pr, 1e-6 + 1e-5 * std::fabs(pr)));
  }
  verdict(5, what, worst <= 1, worst_text(worst));
}

// --------------------------------------------------------------------------------------------- case 9
// One epoch in float64 from the same float32 state: the rows order[t·batch ..], forward, the mean
// loss over the step's rows, backward, v = μ·v − lr·g, p = p + v.
void ref_epoch(MlpShape s, std::vector<double>& p, std::vector<double>& v, const std::vector<float>& Xall,
               const std::vector<int>& yall, const std::vector<int>& order, int batch, double lr, double mu,
               std::vector<double>& losses) {
  const MlpOffsets o = mlp_offsets(s);
  const int n = (int)order.size();
  for (int first = 0; first < n; first += batch) {
    const int B = std::min(batch, n - first);
    std::vector<double> H((size_t)B * s.hidden), dZ((size_t)B * s.out), g(o.total, 0.0), dH((size_t)B * s.hidden);
    double loss = 0;
    for (int r = 0; r < B; ++r) {
      const float* x = &Xall[(size_t)order[first + r] * s.in];
      for (int j = 0; j < s.hidden; ++j) {
        double acc = p[o.b1 + j];
        for (int k = 0; k < s.in; ++k) acc += x[k] * p[o.w1 + (size_t)k * s.hidden + j];
        H[(size_t)r * s.hidden + j] = std::max(acc, 0.0);
      }
      std::vector<double> z(s.out);
      double mx = -INFINITY, sum = 0;
      for (int k = 0; k < s.out; ++k) {
        double acc = p[o.b2 + k];
        for (int j = 0; j < s.hidden; ++j) acc += H[(size_t)r * s.hidden + j] * p[o.w2 + (size_t)j * s.out + k];
        z[k] = acc;
        mx = std::max(mx, acc);
      }
      for (int k = 0; k < s.out; ++k) sum += std::exp(z[k] - mx);
      const int lab = yall[order[first + r]];
      for (int k = 0; k < s.out; ++k) dZ[(size_t)r * s.out + k] = (std::exp(z[k] - mx) / sum - (k == lab)) / B;
      loss += std::log(sum) - (z[lab] - mx);
    }
    losses.push_back(loss / B);
    for (int r = 0; r < B; ++r) {
      const float* x = &Xall[(size_t)order[first + r] * s.in];
      for (int k = 0; k < s.out; ++k) {
        const double d = dZ[(size_t)r * s.out + k];
        g[o.b2 + k] += d;
        for (int j = 0; j < s.hidden; ++j) g[o.w2 + (size_t)j * s.out + k] += H[(size_t)r * s.hidden + j] * d;
      }
      for (int j = 0; j < s.hidden; ++j) {
        double acc = 0;
        for (int k = 0; k < s.out; ++k) acc += dZ[(size_t)r * s.out + k] * p[o.w2 + (size_t)j * s.out + k];
        const double d = H[(size_t)r * s.hidden + j] > 0 ? acc : 0;
        g[o.b1 + j] += d;
        for (int i = 0; i < s.in; ++i) g[o.w1 + (size_t)i * s.hidden + j] += x[i] * d;
      }
    }
    for (size_t i = 0; i < o.total; ++i) {
      v[i] = mu * v[i] - lr * g[i];
      p[i] += v[i];
    }
  }
}

void check_epoch(MlpShape s, int n, int batch, bool drawn_state, std::mt19937_64& rng) {
  const std::string what = "epoch " + label(s) + ", batch " + std::to_string(batch) + ", " + std::to_string(n) +
                           " rows (tail " + std::to_string(n % batch ? n % batch : batch) + ")" +
                           (drawn_state ? ", from a drawn state" : "");
  Model m = init_model(s, rng);
  const int total_rows = n + 23;  // more rows than the epoch takes: `order` picks n of them
  const std::vector<float> Xall = pixels((size_t)total_rows * s.in, rng);
  const std::vector<int> yall = labels(total_rows, s.out, rng);
  std::vector<int> order(total_rows);
  for (int i = 0; i < total_rows; ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), rng);
  order.resize(n);
  std::vector<float> v(m.o.total, 0.f);
  float lr = 0.1f, mu = 0.9f;
  if (drawn_state) {
    std::uniform_real_distribution<float> u(-1e-2f, 1e-2f), lr_d(0.02f, 0.2f), mu_d(0.5f, 0.95f);
    for (auto& x : v) x = u(rng);
    lr = lr_d(rng);
    mu = mu_d(rng);
  }
  const int steps = (n + batch - 1) / batch;
  Buf<float> dp(m.o.total, "params"), dv(m.o.total, "velocity"), dX(Xall.size(), "X_all"),
      dws(mlp_workspace_floats(s, batch), "workspace"), dl(steps, "step_loss");
  Buf<int> dy(yall.size(), "labels_all"), dord(order.size(), "order");
  dp.upload(m.p);
  dv.upload(v);
  dX.upload(Xall);
  dy.upload(yall);
  dord.upload(order);
  dws.poison();
  dl.poison();
  std::string bad = after_call(9, what,
                               mlp_train_epoch(s, dp.p(), dv.p(), dX.p(), dy.p(), dord.p(), n, batch, lr, mu, dws.p(),
                                               dl.p(), nullptr),
                               dp, dv, dX, dy, dord, dws, dl);
  if (bad.empty()) bad = unchanged(dX, Xall) + unchanged(dy, yall) + unchanged(dord, order);
  if (!bad.empty()) return verdict(9, what, false, bad);
  const std::vector<float> P = dp.get(), V = dv.get(), L = dl.get();
  hash_bytes(P.data(), P.size() * 4);
  hash_bytes(V.data(), V.size() * 4);
  hash_bytes(L.data(), L.size() * 4);
  std::vector<double> p(m.p.begin(), m.p.end()), vr(v.begin(), v.end()), losses;
  ref_epoch(s, p, vr, Xall, yall, order, batch, lr, mu, losses);
  // Each tensor's distance from float64's, relative to float64's update of it.
  const size_t cut[] = {m.o.w1, m.o.b1, m.o.w2, m.o.b2, m.o.total};
  const char* names[] = {"W1", "b1", "W2", "b2"};
  double worst = 0;
  std::string where;
  for (int t = 0; t < 4; ++t) {
    double d = 0, upd = 0;
    for (size_t i = cut[t]; i < cut[t + 1]; ++i) {
      d += (P[i] - p[i]) * (P[i] - p[i]);
      upd += (p[i] - m.p[i]) * (p[i] - m.p[i]);
    }
    const double r = std::isfinite(d) ? std::sqrt(d / upd) / 1e-3 : INFINITY;
    if (!(r <= worst)) worst = r, where = names[t];
  }
  double dv2 = 0, vn = 0;
  for (size_t i = 0; i < V.size(); ++i) dv2 += (V[i] - vr[i]) * (V[i] - vr[i]), vn += vr[i] * vr[i];
  const double rv = std::isfinite(dv2) ? std::sqrt(dv2 / vn) / 1e-3 : INFINITY;
  if (!(rv <= worst)) worst = rv, where = "velocity";
  for (int t = 0; t < steps; ++t) {
    const double r = std::isfinite(L[t]) ? std::fabs(L[t] - losses[t]) / std::fabs(losses[t]) / 1e-4 : INFINITY;
    if (!(r <= worst)) worst = r, where = "step loss " + std::to_string(t);
  }
  verdict(9, what, worst <= 1, worst_text(worst) + " (" + where + ")");
}

// The launches of one recipe epoch (6000 rows, batch 128: 46 full batches and 112 rows), counted
// without running the kernels.
long long launches_per_recipe_epoch() {
  const int n = 6000, batch = 128;
  static float f[1];
  static int i[1];
  g_run_kernels = false;
  g_launches = 0;
  const int status = mlp_train_epoch(kRecipe, f, f, f, i, i, n, batch, 0.1f, 0.9f, f, f, nullptr);
  g_run_kernels = true;
  return status == MLP_OK ? g_launches : -1;
}

}  // namespace

int main() {
  std::mt19937_64 rng(40);
  check_forward(1, kRecipe, 1, rng);
  check_forward(1, kOdd, 1, rng);
  check_forward(2, kRecipe, 128, rng);
  check_forward(2, kOdd, 7, rng);
  check_forward(2, kOdd, 129, rng);
  check_loss(kRecipe, rng);
  check_loss(kOdd, rng);
  check_backward(kRecipe, 128, rng);
  check_backward(kOdd, 7, rng);
  check_backward(kOdd, 129, rng);
  check_step(kRecipe, rng);
  check_step(kOdd, rng);
  check_epoch(kRecipe, 300, 128, false, rng);
  check_epoch(kRecipe, 300, 128, true, rng);
  check_epoch(kOdd, 17, 7, true, rng);
  check_epoch(kOdd, 302, 129, true, rng);
  std::printf("launches per epoch (784-256-10, 6000 rows, batch 128): %lld\n", launches_per_recipe_epoch());
  std::printf("outputs hash: %016" PRIx64 "\n", g_hash);
  std::printf("%s\n", g_failed ? "FAILED" : "all passed");
  return g_failed ? 1 : 0;
}
