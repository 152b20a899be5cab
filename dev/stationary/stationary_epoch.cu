// dev/stationary/stationary_epoch.cu — standalone check and benchmark of cuda/kernels/stationary.cuh
// and of the dev variants (dev/stationary/variant_kernel.cuh).
//
//   1. data: data/train6000-* IDX files (float32(p)/255 as cuda/io/dataset.cpp loads them), else
//      seeded random bytes over 255; initial parameters as torch.nn.Linear (uniform ±1/√fan_in,
//      SplitMix64), each epoch's order a seeded Fisher–Yates shuffle
//   2. the byte conversion: pixel(p) == float32(p)/255 bitwise for all 256 bytes, host and device
//   3. a short run (3 full steps and a tail of 112, non-zero initial velocity) against a float64
//      CPU reference of the same steps: every parameter, velocity and step loss
//   4. one full epoch (47 steps) against float64 (the gate's one-epoch parity limit) and a
//      bitwise rerun; the pad units (shapes with G·U > 256) bitwise 0 after each of those epochs
//   5. timing: full epochs by CUDA events, warm-up excluded: median, CV, µs per step
//   6. the dev variants (variant_ops.cuh's kV* bits; variants.cuh): each checked
//      as 3.-4. (and bitwise against the first epoch of its summation-order family: tiled or not),
//      then timed the same way; the probe variants (phase marks, dev/stationary/probe.cuh) print a
//      phase table of one epoch; `probe shipped`'s goes to results/stationary_phases.json
// With --check-shipped only 1. and check_shipped.cuh's comparison run: the shipped kernel against
// the variant kernel built with the shipped bits, bitwise, over N epochs (--epochs, default 3).
// Exit status: 0 PASS, 1 a check failed, 2 bad arguments, 3 a CUDA error or unsupported device.
//
// Build: make build/stationary_epoch (the project's NVCCFLAGS), or the nvcc line of
//        dev/stationary/README.md
// Run:   build/stationary_epoch [--data DIR] [--cluster 8|4] [--epochs N] [--json PATH] [--commit STR]
//        build/stationary_epoch --check-shipped [--data DIR] [--cluster 8|4] [--epochs N]
//        (--cluster: only shapes <8,U> or <4,U>; --json: the phase/variant record, default
//        results/stationary_phases.json, written for <8,20>; --commit: its "commit" field, else null)
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "../../cuda/common/rng.h"
#include "probe.cuh"  // defines WSTAT_MARK before the variant kernel
#include "variant_kernel.cuh"
#include "../../cuda/paths/stationary_path.cuh"
#include "variants.cuh"
#include "check_shipped.cuh"

namespace {
constexpr int kIn = 784, kHid = 256, kOut = 10, kBatch = 128;
constexpr float kLr = 0.1f, kMu = 0.9f;
constexpr uint64_t kSeed = 20260829;
const MlpOffsets kOff = mlp_offsets(MlpShape{kIn, kHid, kOut});

#define CK(call)                                                                                     \
  do {                                                                                               \
    cudaError_t e_ = (call);                                                                         \
    if (e_ != cudaSuccess) {                                                                         \
      std::fprintf(stderr, "stationary_epoch: %s:%d: %s failed: %s (%s)\n", __FILE__, __LINE__, #call, \
                   cudaGetErrorName(e_), cudaGetErrorString(e_));                                    \
      std::exit(3);                                                                                  \
    }                                                                                                \
  } while (0)

bool g_fail = false, g_quiet = false;  // g_quiet: verdicts counted, not printed (variants)
double g_worst = 0;                   // largest value / limit of the verdicts since reset
void verdict(const char* what, double value, double limit) {
  const bool ok = std::isfinite(value) && value <= limit;
  if (!ok) g_fail = true;
  g_worst = std::max(g_worst, std::isfinite(value) ? value / limit : INFINITY);
  if (g_quiet) return;
  std::printf("  %-44s %.3e  (limit %.3e)  %s\n", what, value, limit, ok ? "PASS" : "FAIL");
}

// IDX files as cuda/io/dataset.cpp reads them; false when absent.
bool load_idx(const std::string& path, int want_dims, std::vector<uint8_t>& data, int& count) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  std::vector<uint8_t> b((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  auto be32 = [&](size_t o) { return (uint32_t)b[o] << 24 | (uint32_t)b[o + 1] << 16 | (uint32_t)b[o + 2] << 8 | b[o + 3]; };
  if (b.size() < 8 || be32(0) != (0x800u | (uint32_t)want_dims)) return false;
  size_t n = 1, header = 4 + 4 * (size_t)want_dims;
  for (int d = 0; d < want_dims; ++d) n *= be32(4 + 4 * (size_t)d);
  if (b.size() != header + n) return false;
  count = (int)be32(4);
  data.assign(b.begin() + (long)header, b.end());
  return true;
}

// One step of the recipe in float64 on rows order[base .. base + nb).
struct Ref {
  std::vector<double> p, v;
  double min_margin = 1e300;  // smallest |pre-activation| / its term scale seen (ReLU kink distance)
  double step(const std::vector<float>& X, const std::vector<int>& y, const int* rows, int nb) {
    const double* W1 = p.data() + kOff.w1; const double* b1 = p.data() + kOff.b1;
    const double* W2 = p.data() + kOff.w2; const double* b2 = p.data() + kOff.b2;
    std::vector<double> A((size_t)nb * kHid), S((size_t)nb * kHid), H((size_t)nb * kHid), dZ((size_t)nb * kOut);
    std::vector<double> g(kOff.total, 0.0), dH((size_t)nb * kHid);
    double loss = 0;
    for (int r = 0; r < nb; ++r) {
      const float* x = X.data() + (size_t)rows[r] * kIn;
      double* a = A.data() + (size_t)r * kHid; double* s = S.data() + (size_t)r * kHid;
      for (int j = 0; j < kHid; ++j) { a[j] = b1[j]; s[j] = std::fabs(b1[j]); }
      for (int k = 0; k < kIn; ++k) {
        const double xk = x[k];
        if (xk == 0) continue;
        for (int j = 0; j < kHid; ++j) { a[j] += xk * W1[(size_t)k * kHid + j]; s[j] += std::fabs(xk * W1[(size_t)k * kHid + j]); }
      }
      for (int j = 0; j < kHid; ++j) {
        H[(size_t)r * kHid + j] = a[j] > 0 ? a[j] : 0;
        if (s[j] > 0) min_margin = std::min(min_margin, std::fabs(a[j]) / s[j]);
      }
      double z[kOut], m = -1e300;
      for (int o = 0; o < kOut; ++o) {
        z[o] = b2[o];
        for (int j = 0; j < kHid; ++j) z[o] += H[(size_t)r * kHid + j] * W2[j * kOut + o];
        m = std::max(m, z[o]);
      }
      double se = 0;
      for (int o = 0; o < kOut; ++o) se += std::exp(z[o] - m);
      const int lab = y[(size_t)rows[r]];
      loss += std::log(se) - (z[lab] - m);
      for (int o = 0; o < kOut; ++o) dZ[(size_t)r * kOut + o] = (std::exp(z[o] - m) / se - (o == lab)) / nb;
    }
    double* gW1 = g.data() + kOff.w1; double* gb1 = g.data() + kOff.b1;
    double* gW2 = g.data() + kOff.w2; double* gb2 = g.data() + kOff.b2;
    for (int r = 0; r < nb; ++r) {
      for (int j = 0; j < kHid; ++j) {
        double acc = 0;
        for (int o = 0; o < kOut; ++o) {
          acc += dZ[(size_t)r * kOut + o] * W2[j * kOut + o];
          gW2[j * kOut + o] += H[(size_t)r * kHid + j] * dZ[(size_t)r * kOut + o];
        }
        dH[(size_t)r * kHid + j] = A[(size_t)r * kHid + j] > 0 ? acc : 0;
        gb1[j] += dH[(size_t)r * kHid + j];
      }
      for (int o = 0; o < kOut; ++o) gb2[o] += dZ[(size_t)r * kOut + o];
      const float* x = X.data() + (size_t)rows[r] * kIn;
      for (int k = 0; k < kIn; ++k) {
        const double xk = x[k];
        if (xk == 0) continue;
        for (int j = 0; j < kHid; ++j) gW1[(size_t)k * kHid + j] += xk * dH[(size_t)r * kHid + j];
      }
    }
    for (size_t i = 0; i < kOff.total; ++i) {
      v[i] = (double)kMu * v[i] - (double)kLr * g[i];
      p[i] += v[i];
    }
    return loss / nb;
  }
};

// ‖a − b‖ / ‖b‖ over [lo, hi).
double rel_norm(const std::vector<double>& a, const std::vector<double>& b, size_t lo, size_t hi) {
  double num = 0, den = 0;
  for (size_t i = lo; i < hi; ++i) { num += (a[i] - b[i]) * (a[i] - b[i]); den += b[i] * b[i]; }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

// out[p] = pixel(p), out[256 + p] = pixel_of_byte (the kVFastConv form) of byte p % 4 of a word.
__global__ void k_pixel_selftest(float* out) {
  const unsigned p = threadIdx.x, i = p % 4, w = (p << (8 * i)) | (0xA5u << (8 * ((i + 1) % 4)));
  out[p] = mlp::wstat::pixel(p);
  out[256 + p] = mlp::wstat::pixel_of_byte(w, (int)i);
}

// kVMma's fragment layout (cuda/kernels/stationary_ops.cuh mma_tf32): one warp, C = A·B for A [16][8],
// B [8][8] of small integers (exact in TF32 and in the float32 sums), loaded by the documented
// fragment positions; c[lane * 4 + i] as mma_tf32 leaves it.
__global__ void k_mma_selftest(const float* A, const float* B, float* c) {
  const int lane = threadIdx.x, g = lane >> 2, q = lane & 3;
  const unsigned a[4] = {__float_as_uint(A[g * 8 + q]), __float_as_uint(A[(g + 8) * 8 + q]),
                         __float_as_uint(A[g * 8 + q + 4]), __float_as_uint(A[(g + 8) * 8 + q + 4])};
  float acc[4] = {0.f, 0.f, 0.f, 0.f};
  mlp::wstat::mma_tf32(acc, a, __float_as_uint(B[q * 8 + g]), __float_as_uint(B[(q + 4) * 8 + g]));
  for (int i = 0; i < 4; ++i) c[lane * 4 + i] = acc[i];
}

struct Dev {
  float *params, *velocity, *X, *loss;
  int *labels, *order, *pad;
};
int g_pad_seen = 0, g_pad_bad = 0;  // pad entries checked at the end of run_epoch's epochs, and not bitwise 0

// Runs one epoch of n samples from (p0, v0) with `order_h`; returns params, velocity, losses.
variants::EpochFn g_fn = nullptr;  // the variant run_epoch launches (nullptr: mlp::stationary_epoch, the host API)
void run_epoch(mlp::StationaryPlan& plan, Dev& d, const std::vector<float>& p0, const std::vector<float>& v0,
               const std::vector<int>& order_h, int n, std::vector<float>& p, std::vector<float>& v, std::vector<float>& loss) {
  const int steps = (n + kBatch - 1) / kBatch;
  CK(cudaMemcpy(d.params, p0.data(), p0.size() * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(d.velocity, v0.data(), v0.size() * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(d.order, order_h.data(), (size_t)n * 4, cudaMemcpyHostToDevice));
  std::vector<float> nan_loss((size_t)steps, NAN);
  CK(cudaMemcpy(d.loss, nan_loss.data(), (size_t)steps * 4, cudaMemcpyHostToDevice));
  CK(cudaMemset(d.pad, 0, 2 * sizeof(int)));
  const int st = g_fn == nullptr ? mlp::stationary_epoch(&plan, d.params, d.velocity, d.labels, d.order, n, kBatch, kLr, kMu, d.loss, 0, d.pad)
                                 : g_fn(&plan, d.params, d.velocity, d.labels, d.order, n, kBatch, kLr, kMu, d.loss, d.pad);
  if (st != MLP_OK) {
    std::fprintf(stderr, "stationary_epoch: launch failed (status %d): %s\n", st, cudaGetErrorString(cudaGetLastError()));
    std::exit(3);
  }
  const cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) {
    std::fprintf(stderr, "stationary_epoch: epoch failed: %s (a trap here means a grid wait timed out: blocks not co-resident?)\n",
                 cudaGetErrorString(e));
    std::exit(3);
  }
  p.resize(p0.size()); v.resize(v0.size()); loss.resize((size_t)steps);
  CK(cudaMemcpy(p.data(), d.params, p.size() * 4, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(v.data(), d.velocity, v.size() * 4, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(loss.data(), d.loss, loss.size() * 4, cudaMemcpyDeviceToHost));
  int pad[2] = {0, 0};
  CK(cudaMemcpy(pad, d.pad, sizeof pad, cudaMemcpyDeviceToHost));
  g_pad_seen += pad[0];
  g_pad_bad += pad[1];
}

// Compares a device run with float64 over every tensor: Δparams and velocity norm-wise, the worst
// element relative to its tensor's largest reference value, and each step loss.
void compare(const char* label, const std::vector<float>& p0, const std::vector<float>& p, const std::vector<float>& v,
             const std::vector<float>& loss, const Ref& ref, const std::vector<double>& ref_loss, double tol) {
  const char* names[4] = {"W1", "b1", "W2", "b2"};
  const size_t lo[4] = {kOff.w1, kOff.b1, kOff.w2, kOff.b2}, hi[4] = {kOff.b1, kOff.w2, kOff.b2, kOff.total};
  std::vector<double> dg(p.size()), dr(p.size()), vg(v.begin(), v.end());
  for (size_t i = 0; i < p.size(); ++i) { dg[i] = (double)p[i] - p0[i]; dr[i] = ref.p[i] - p0[i]; }
  if (!g_quiet) std::printf("%s (tolerance %.3e; worst element / largest |ref| in brackets, for information)\n", label, tol);
  for (int t = 0; t < 4; ++t) {
    double worst = 0, big = 0;
    for (size_t i = lo[t]; i < hi[t]; ++i) { worst = std::max(worst, std::fabs(dg[i] - dr[i])); big = std::max(big, std::fabs(dr[i])); }
    char what[96];
    std::snprintf(what, sizeof what, "%s update |dP-dRef|/|dRef| [%.1e]", names[t], big > 0 ? worst / big : worst);
    verdict(what, rel_norm(dg, dr, lo[t], hi[t]), tol);
    worst = big = 0;
    for (size_t i = lo[t]; i < hi[t]; ++i) { worst = std::max(worst, std::fabs(vg[i] - ref.v[i])); big = std::max(big, std::fabs(ref.v[i])); }
    std::snprintf(what, sizeof what, "%s velocity |v-vRef|/|vRef| [%.1e]", names[t], big > 0 ? worst / big : worst);
    verdict(what, rel_norm(vg, ref.v, lo[t], hi[t]), tol);
  }
  double worst_loss = 0;
  for (size_t t = 0; t < loss.size(); ++t) worst_loss = std::max(worst_loss, std::fabs(loss[t] - ref_loss[t]) / std::fabs(ref_loss[t]));
  char what[96];
  std::snprintf(what, sizeof what, "step losses (%zu), worst relative", loss.size());
  verdict(what, worst_loss, tol);
  if (!g_quiet) std::printf("  closest ReLU kink in float64: |a|/scale = %.2e (float32 resolves ~6e-8)\n", ref.min_margin);
}
}  // namespace

int main(int argc, char** argv) {
  std::string data = "data", json = "results/stationary_phases.json";
  const char* commit = nullptr;
  int force_cluster = 0, epochs = 0;  // epochs 0: the mode's default (30 timed, 3 checked)
  bool check_shipped = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--check-shipped") check_shipped = true;
    else if (a == "--data" && i + 1 < argc) data = argv[++i];
    else if (a == "--cluster" && i + 1 < argc) force_cluster = std::atoi(argv[++i]);
    else if (a == "--epochs" && i + 1 < argc) epochs = std::atoi(argv[++i]);
    else if (a == "--json" && i + 1 < argc) json = argv[++i];
    else if (a == "--commit" && i + 1 < argc) commit = argv[++i];
    else {
      std::fprintf(stderr, "usage: stationary_epoch [--check-shipped] [--data DIR] [--cluster 8|4] [--epochs N] [--json PATH] [--commit STR]\n");
      return 2;
    }
  }
  if (commit && (!*commit || std::strpbrk(commit, "\"\\\n"))) {
    std::fprintf(stderr, "stationary_epoch: --commit takes a non-empty string without quotes or backslashes\n");
    return 2;
  }
  if (epochs == 0) epochs = check_shipped ? 3 : 30;
  if ((force_cluster != 0 && force_cluster != 8 && force_cluster != 4) || epochs < (check_shipped ? 1 : 20)) {
    std::fprintf(stderr, "stationary_epoch: --cluster takes 8 or 4, --epochs at least 20 (with --check-shipped: 1)\n");
    return 2;
  }

  // ---- 1. data, parameters, orders ----
  std::vector<uint8_t> pix, lab;
  int n_img = 0, n_lab = 0;
  int n_total = 6000;
  const bool real = load_idx(data + "/train6000-images-idx3-ubyte", 3, pix, n_img) &&
                    load_idx(data + "/train6000-labels-idx1-ubyte", 1, lab, n_lab) && n_img == n_lab && n_img >= 6000;
  if (!real) {
    SplitMix64 r(kSeed ^ 0x5157);
    pix.resize((size_t)n_total * kIn);
    lab.resize((size_t)n_total);
    for (auto& b : pix) b = (uint8_t)(r.next() >> 56);
    for (auto& l : lab) l = (uint8_t)(r.next() % kOut);
  }
  std::vector<float> X((size_t)n_total * kIn);
  for (size_t i = 0; i < X.size(); ++i) X[i] = (float)pix[i] / 255.0f;  // cuda/io/dataset.cpp's formula
  std::vector<int> y(lab.begin(), lab.begin() + n_total);
  for (int l : y)
    if (l < 0 || l >= kOut) { std::fprintf(stderr, "stationary_epoch: label %d out of range 0..9\n", l); return 2; }
  std::printf("data: %s, %d samples\n", real ? (data + "/train6000-*").c_str() : "seeded random bytes/255", n_total);

  std::vector<float> p0(kOff.total), vz(kOff.total, 0.f), vr(kOff.total);
  {
    SplitMix64 r(stream_seed(kSeed, kStreamInit, 0));
    auto fill = [&](size_t lo, size_t hi, double bound) {
      for (size_t i = lo; i < hi; ++i) p0[i] = (float)((2 * r.uniform() - 1) * bound);
    };
    fill(kOff.w1, kOff.w2, 1 / std::sqrt((double)kIn));  // W1 and b1: fan_in 784
    fill(kOff.w2, kOff.total, 1 / std::sqrt((double)kHid));
    for (auto& v : vr) v = (float)((2 * r.uniform() - 1) * 1e-3);
  }
  auto make_order = [&](int epoch) {
    std::vector<int> o((size_t)n_total);
    for (int i = 0; i < n_total; ++i) o[(size_t)i] = i;
    SplitMix64 r(stream_seed(kSeed, kStreamOrder, (uint64_t)epoch));
    for (int i = n_total - 1; i > 0; --i) std::swap(o[(size_t)i], o[(size_t)(r.next() % (uint64_t)(i + 1))]);
    return o;
  };

  Dev d{};
  CK(cudaMalloc(&d.params, kOff.total * 4));
  CK(cudaMalloc(&d.velocity, kOff.total * 4));
  CK(cudaMalloc(&d.X, X.size() * 4));
  CK(cudaMalloc(&d.labels, (size_t)n_total * 4));
  CK(cudaMalloc(&d.order, (size_t)n_total * 4));
  CK(cudaMalloc(&d.loss, 64 * 4));
  CK(cudaMalloc(&d.pad, 2 * sizeof(int)));
  CK(cudaMemcpy(d.X, X.data(), X.size() * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(d.labels, y.data(), y.size() * 4, cudaMemcpyHostToDevice));
  if (check_shipped) {
    mlp::StationaryPlan plan;
    const int st = mlp::stationary_prepare(&plan, MlpShape{kIn, kHid, kOut}, d.X, n_total, kBatch, 0, force_cluster);
    std::printf("shapes <CL,U> tried (clusters needed, co-resident at most): %s\n", plan.tried.c_str());
    if (st != MLP_OK) return std::fprintf(stderr, "stationary check: prepare failed (status %d)\n", st), 3;
    std::vector<std::vector<int>> orders;
    for (int e = 0; e < epochs; ++e) orders.push_back(make_order(e));
    const int rc = check::shipped_vs_variant(plan, check::Device{d.params, d.velocity, d.loss, d.labels, d.order}, p0, vr,
                                             orders, kBatch, kLr, kMu);
    mlp::stationary_release(&plan);
    return rc;
  }

  // ---- 2. the byte conversion ----
  {
    int host_bad = 0;
    for (unsigned p = 0; p < 256; ++p) {
      const float a = mlp::wstat::pixel(p), b = (float)p / 255.0f;
      host_bad += std::memcmp(&a, &b, 4) != 0;
    }
    float* dp = nullptr;
    CK(cudaMalloc(&dp, 512 * 4));
    k_pixel_selftest<<<1, 256>>>(dp);
    CK(cudaGetLastError());
    std::vector<float> got(512);
    CK(cudaMemcpy(got.data(), dp, 512 * 4, cudaMemcpyDeviceToHost));
    CK(cudaFree(dp));
    int dev_bad = 0;
    for (unsigned p = 0; p < 256; ++p) {
      const float b = (float)p / 255.0f;
      dev_bad += (std::memcmp(&got[p], &b, 4) != 0) + (std::memcmp(&got[256 + p], &b, 4) != 0);
    }
    std::printf("byte conversion: pixel(p) and pixel_of_byte == float(p)/255 bitwise for all 256 bytes: host %d, device %d mismatches  %s\n",
                host_bad, dev_bad, host_bad + dev_bad == 0 ? "PASS" : "FAIL");
    if (host_bad + dev_bad) g_fail = true;
  }
  {  // the tensor-core fragment layout kVMma relies on
    std::vector<float> A(128), B(64), c(128);
    for (int i = 0; i < 128; ++i) A[(size_t)i] = (float)((i * 7) % 11 - 5);
    for (int i = 0; i < 64; ++i) B[(size_t)i] = (float)((i * 5) % 13 - 6);
    float* dm = nullptr;
    CK(cudaMalloc(&dm, (128 + 64 + 128) * 4));
    CK(cudaMemcpy(dm, A.data(), 128 * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dm + 128, B.data(), 64 * 4, cudaMemcpyHostToDevice));
    k_mma_selftest<<<1, 32>>>(dm, dm + 128, dm + 192);
    CK(cudaGetLastError());
    CK(cudaMemcpy(c.data(), dm + 192, 128 * 4, cudaMemcpyDeviceToHost));
    CK(cudaFree(dm));
    int bad = 0;
    for (int lane = 0; lane < 32; ++lane)
      for (int i = 0; i < 4; ++i) {
        const int r = lane / 4 + 8 * (i / 2), col = 2 * (lane % 4) + i % 2;
        double ref = 0;
        for (int k = 0; k < 8; ++k) ref += (double)A[(size_t)r * 8 + k] * B[(size_t)k * 8 + col];
        bad += (double)c[(size_t)lane * 4 + i] != ref;
      }
    std::printf("tensor cores: mma.m16n8k8 tf32 fragment layout (16x8x8 integer product, exact): %d of 128 wrong  %s\n", bad,
                bad == 0 ? "PASS" : "FAIL");
    if (bad) g_fail = true;
  }

  mlp::StationaryPlan plan;
  const int st = mlp::stationary_prepare(&plan, MlpShape{kIn, kHid, kOut}, d.X, n_total, kBatch, 0, force_cluster);
  std::printf("shapes <CL,U> tried (clusters needed, co-resident at most): %s\n", plan.tried.empty() ? "none" : plan.tried.c_str());
  if (st != MLP_OK) {
    std::fprintf(stderr, "stationary_epoch: prepare: %s (status %d; needs sm_90+, clusters, and every cluster of one shape co-resident: %s)\n",
                 st == MLP_ERR_UNSUPPORTED ? "unsupported" : "CUDA error", st, plan.tried.empty() ? "no shape tried" : plan.tried.c_str());
    return 3;
  }
  {
    cudaFuncAttributes fa{};
    if (plan.cluster == 8 && plan.units == 16) CK(cudaFuncGetAttributes(&fa, mlp::wstat::k_stationary_epoch<8, 16>));
    else if (plan.cluster == 8) CK(cudaFuncGetAttributes(&fa, mlp::wstat::k_stationary_epoch<8, 20>));
    else CK(cudaFuncGetAttributes(&fa, mlp::wstat::k_stationary_epoch<4, 12>));
    std::printf("config: %s; max active clusters %d; %d registers/thread, %zu B local (spills)\n", plan.what.c_str(),
                plan.max_active_clusters, fa.numRegs, (size_t)fa.localSizeBytes);
    if (fa.localSizeBytes) std::printf("  warning: the kernel uses local memory (spills)\n");
  }

  // ---- 3.-4. float64 references (once), then the checks of the shipped launch ----
  const double eps = std::ldexp(1.0, -24), terms = std::sqrt((double)(kIn + kHid + 2));
  const int n_short = 3 * kBatch + 112, steps_short = 4, steps_full = (n_total + kBatch - 1) / kBatch;
  const std::vector<int> order0 = make_order(0);
  Ref ref_s{std::vector<double>(p0.begin(), p0.end()), std::vector<double>(vr.begin(), vr.end())};
  Ref ref_f{std::vector<double>(p0.begin(), p0.end()), std::vector<double>(kOff.total, 0.0)};
  std::vector<double> rl_s, rl_f;
  for (int t = 0; t < steps_short; ++t) rl_s.push_back(ref_s.step(X, y, order0.data() + t * kBatch, std::min(kBatch, n_short - t * kBatch)));
  for (int t = 0; t < steps_full; ++t) rl_f.push_back(ref_f.step(X, y, order0.data() + t * kBatch, std::min(kBatch, n_total - t * kBatch)));
  // Norm-wise float32 sums of ~√(784+256+2) terms a step (the gate's case-2 scale), times 16 for
  // the gradient products and the momentum recursion, per step.
  const double tol_s = 16.0 * steps_short * terms * eps;
  std::vector<float> pe, ve, le;  // the shipped launch's full epoch (timing starts from it)
  struct Bits { std::vector<float> p, v, l; };
  std::vector<std::pair<int, Bits>> fam_ref;  // per summation-order family: its first full epoch
  // Short run, full epoch, bitwise rerun, pad entries; returns false when a check failed.
  auto checks = [&](bool first, int family) {
    const bool fail_before = g_fail;
    g_fail = false;
    g_worst = 0;
    g_pad_seen = g_pad_bad = 0;
    {
      std::vector<float> p, v, loss;
      run_epoch(plan, d, p0, vr, order0, n_short, p, v, loss);
      compare("short run: 4 steps (3 x 128 + 112), v0 != 0, against float64", p0, p, v, loss, ref_s, rl_s, tol_s);
    }
    std::vector<float> p1, v1, l1;
    run_epoch(plan, d, p0, vz, order0, n_total, p1, v1, l1);
    std::vector<double> dg(p1.size()), dr(p1.size());
    for (size_t i = 0; i < p1.size(); ++i) { dg[i] = (double)p1[i] - p0[i]; dr[i] = ref_f.p[i] - p0[i]; }
    if (!g_quiet) std::printf("full epoch: %d steps against float64 (the gate's one-epoch parity limit 1e-2 of the update)\n", steps_full);
    verdict("all parameters |dP-dRef|/|dRef|", rel_norm(dg, dr, 0, p1.size()), 1e-2);
    double wl = 0;
    for (int t = 0; t < steps_full; ++t) wl = std::max(wl, std::fabs(l1[(size_t)t] - rl_f[(size_t)t]) / rl_f[(size_t)t]);
    verdict("step losses, worst relative", wl, 1e-2);
    if (!g_quiet)
      std::printf("  step loss 0 %.6f (float64 %.6f), step %d %.6f (float64 %.6f); closest kink %.2e\n", l1[0], rl_f[0], steps_full - 1,
                  l1[(size_t)steps_full - 1], rl_f[(size_t)steps_full - 1], ref_f.min_margin);
    std::vector<float> p2, v2, l2;
    run_epoch(plan, d, p0, vz, order0, n_total, p2, v2, l2);
    auto same_as = [](const std::vector<float>& a, const std::vector<float>& b) {
      return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * 4) == 0;
    };
    const bool same = same_as(p1, p2) && same_as(v1, v2) && same_as(l1, l2);
    if (!same) g_fail = true;
    if (first) pe = p1, ve = v1, le = l1;
    const Bits* ref = nullptr;
    for (const auto& fr : fam_ref)
      if (fr.first == family) ref = &fr.second;
    if (!ref) fam_ref.push_back({family, Bits{p1, v1, l1}}), ref = &fam_ref.back().second;
    const bool as_shipped = same_as(p1, ref->p) && same_as(v1, ref->v) && same_as(l1, ref->l);
    if (!as_shipped) g_fail = true;
    const int pad_units = plan.clusters * plan.units - kHid;
    const bool pad_ok = pad_units == 0 || (g_pad_seen > 0 && g_pad_bad == 0);
    if (!pad_ok) g_fail = true;
    if (!g_quiet) {
      std::printf("  bitwise rerun (params, velocity, step losses): %s\n", same ? "identical  PASS" : "DIFFERENT  FAIL");
      // Pad units (G·U − 256 columns past 256): every entry of their W1 slice, b1, W2 rows and
      // velocities, at the end of each of the 3 epochs above, must be bitwise 0 (the header's proof).
      if (pad_units == 0) std::printf("pad units: none in this shape (0 entries checked)\n");
      else std::printf("pad units: %d; %d entries checked over 3 epochs, %d not bitwise 0  %s\n", pad_units, g_pad_seen, g_pad_bad, pad_ok ? "PASS" : "FAIL");
    } else {
      std::printf("  checks: worst value/limit %.1e over the short run and full epoch, rerun %s, bits %s the %s family's, pad %d of %d not 0  %s\n",
                  g_worst, same ? "identical" : "DIFFERENT", as_shipped ? "equal to" : "DIFFERENT from",
                  family & mlp::wstat::kVMma ? "mma" : family ? "tiled" : "untiled", g_pad_bad, g_pad_seen, g_fail ? "FAIL" : "PASS");
    }
    const bool ok = !g_fail;
    g_fail = g_fail || fail_before;
    return ok;
  };
  checks(true, variants::family(mlp::wstat::kShippedV));

  // ---- 5. timing: training continues from epoch 0's result, a new order each epoch ----
  const int warm = 3;
  std::vector<int*> d_orders;
  for (int e = 0; e < warm + epochs; ++e) {
    const std::vector<int> o_h = make_order(1 + e);
    int* o = nullptr;
    CK(cudaMalloc(&o, (size_t)n_total * 4));
    CK(cudaMemcpy(o, o_h.data(), (size_t)n_total * 4, cudaMemcpyHostToDevice));
    d_orders.push_back(o);
  }
  // Median ms, CV % of `epochs` epochs after `warm` warm-up of the launch g_fn.
  auto timing = [&](double* cv_out) {
    CK(cudaMemcpy(d.params, pe.data(), pe.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d.velocity, ve.data(), ve.size() * 4, cudaMemcpyHostToDevice));
    std::vector<cudaEvent_t> ev((size_t)(warm + epochs) + 1);
    for (auto& e : ev) CK(cudaEventCreate(&e));
    CK(cudaEventRecord(ev[0], 0));
    for (int e = 0; e < warm + epochs; ++e) {
      const int st = g_fn == nullptr
                         ? mlp::stationary_epoch(&plan, d.params, d.velocity, d.labels, d_orders[(size_t)e], n_total, kBatch, kLr, kMu, d.loss, 0)
                         : g_fn(&plan, d.params, d.velocity, d.labels, d_orders[(size_t)e], n_total, kBatch, kLr, kMu, d.loss, nullptr);
      if (st != MLP_OK) {
        std::fprintf(stderr, "stationary_epoch: launch failed: %s\n", cudaGetErrorString(cudaGetLastError()));
        std::exit(3);
      }
      CK(cudaEventRecord(ev[(size_t)e + 1], 0));
    }
    CK(cudaDeviceSynchronize());
    std::vector<double> ms;
    for (int e = warm; e < warm + epochs; ++e) {
      float m = 0;
      CK(cudaEventElapsedTime(&m, ev[(size_t)e], ev[(size_t)e + 1]));
      ms.push_back(m);
    }
    for (auto& e : ev) CK(cudaEventDestroy(e));
    std::vector<float> lz((size_t)steps_full);
    CK(cudaMemcpy(lz.data(), d.loss, lz.size() * 4, cudaMemcpyDeviceToHost));
    if (!std::all_of(lz.begin(), lz.end(), [](float l) { return std::isfinite(l); }))
      g_fail = true, std::printf("  last epoch's losses NOT FINITE  FAIL\n");
    double mean = 0, var = 0;
    for (double m : ms) mean += m;
    mean /= ms.size();
    for (double m : ms) var += (m - mean) * (m - mean);
    *cv_out = 100.0 * std::sqrt(var / ms.size()) / mean;
    return variants::median(ms);
  };
  double shipped_ms = -1, shipped_cv = 0;
  {
    double cv = 0;
    const double med = timing(&cv);
    std::printf("timing (the shipped launch, V=%#x): %d epochs after %d warm-up: median %.4f ms, CV %.2f%%, %.2f us/step\n",
                mlp::wstat::kShippedV, epochs, warm, med, cv, 1000.0 * med / steps_full);
    shipped_ms = med, shipped_cv = cv;
    std::printf("  launch: %s\n", plan.cooperative ? "cooperative attribute + clusters" : "clusters (cooperative attribute refused)");
  }

  // ---- 6. variants (cuda/kernels/stationary.cuh's kV* bits): checks, then timing, one after another ----
  const bool have_variants = (plan.cluster == 8 && plan.units == 20) || (plan.cluster == 4 && plan.units == 12);
  if (!have_variants) std::printf("variants: not instantiated for <%d,%d>\n", plan.cluster, plan.units);
  std::vector<double> v_med((size_t)variants::list().size(), -1), v_cv(v_med.size(), 0);
  variants::PhaseTable shipped_phases;
  bool have_phases = false;
  // The probe variants' mark buffer, set before any of them runs (every probe launch writes it).
  std::vector<unsigned long long> mk((size_t)probe::kMaxSteps * plan.clusters * plan.cluster * probe::kSlots * 2, 0);
  unsigned long long* dm = nullptr;
  CK(cudaMalloc(&dm, mk.size() * 8));
  CK(cudaMemset(dm, 0, mk.size() * 8));
  CK(cudaMemcpyToSymbol(probe::g_marks, &dm, sizeof dm));
  for (size_t i = 0; have_variants && i < variants::list().size(); ++i) {
    const variants::Variant& vv = variants::list()[i];
    g_fn = vv.fn;
    g_quiet = true;
    std::printf("variant %-32s (V=%#x)\n", vv.name, vv.bits);
    const bool ok = checks(false, variants::family(vv.bits));
    g_quiet = false;
    if (!ok) continue;
    v_med[i] = timing(&v_cv[i]);
    if (vv.bits & probe::kVProbe) {  // one more epoch, recorded, from the trained state
      CK(cudaMemset(dm, 0, mk.size() * 8));
      if (g_fn(&plan, d.params, d.velocity, d.labels, d_orders[0], n_total, kBatch, kLr, kMu, d.loss, nullptr) != MLP_OK) return 3;
      CK(cudaDeviceSynchronize());
      CK(cudaMemcpy(mk.data(), dm, mk.size() * 8, cudaMemcpyDeviceToHost));
      const variants::PhaseTable pt = variants::report(mk, steps_full, plan.clusters * plan.cluster, plan.cluster);
      if ((vv.bits & ~probe::kVProbe) == mlp::wstat::kShippedV) shipped_phases = pt, have_phases = true;
    }
  }
  CK(cudaFree(dm));
  g_fn = nullptr;
  if (have_variants) {
    std::printf("variants timed one after another (%d epochs after %d warm-up each), median:\n", epochs, warm);
    for (size_t i = 0; i < v_med.size(); ++i) {
      if (v_med[i] < 0) std::printf("  %-32s FAIL (not timed)\n", variants::list()[i].name);
      else std::printf("  %-32s %.4f ms  %6.2f us/step  CV %.2f%%  %+.1f%% vs V=0\n", variants::list()[i].name, v_med[i],
                       1000.0 * v_med[i] / steps_full, v_cv[i], v_med[0] > 0 ? 100.0 * (v_med[i] / v_med[0] - 1) : 0.0);
    }
  }
  // results/stationary_phases.json: the shipped launch (host API) and every timed variant, the
  // phase table of `probe shipped` (written only for <8,20> with that probe passed).
  if (have_variants && have_phases && plan.cluster == 8 && plan.units == 20) {
    std::vector<std::string> names{"stationary (host API)"};
    std::vector<double> us{1000.0 * shipped_ms / steps_full}, cvs{shipped_cv};
    std::vector<bool> shipped{true};
    for (size_t i = 0; i < v_med.size(); ++i) {
      names.push_back(variants::list()[i].name);
      us.push_back(v_med[i] < 0 ? -1 : 1000.0 * v_med[i] / steps_full);
      cvs.push_back(v_cv[i]);
      shipped.push_back(false);
    }
    if (variants::write_phases_json(json, commit, shipped_phases.step_us, shipped_phases, names, us, cvs, shipped))
      std::printf("wrote %s\n", json.c_str());
    else
      g_fail = true, std::printf("could not write %s  FAIL\n", json.c_str());
  } else {
    std::printf("%s not written (needs <8,20> and a passing `probe shipped`)\n", json.c_str());
  }
  for (int* o : d_orders) CK(cudaFree(o));
  mlp::stationary_release(&plan);
  CK(cudaFree(d.params)); CK(cudaFree(d.velocity)); CK(cudaFree(d.X));
  CK(cudaFree(d.labels)); CK(cudaFree(d.order)); CK(cudaFree(d.loss)); CK(cudaFree(d.pad));
  std::printf("%s\n", g_fail ? "FAIL" : "PASS");
  return g_fail ? 1 : 0;
}
