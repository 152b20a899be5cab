// tests/gate_sim/epoch_check_sim.cpp — gate case 9's tolerance checked on the CPU: a float32
// epoch written like tests/submissions/naive_base.cuh (float sums, in order), run from case 9's
// state, scored against cuda/epoch_check's float64 reference and bound; and the epoch bugs case
// 9 exists for. Prints "VARIANT worst WHERE" per line (tests/test_gate_epoch_check.py).
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "gate/cpu_reference.h"
#include "io/dataset.h"
#include "gate/epoch_check.h"
#include "common/rng.h"

namespace {

// variant: "ok", "frozen_b2" (the step skips b2), "tail_mean" (the tail batch's loss and dZ
// divided by the full batch), "fma_order" (sums in reverse order: another correct float32 order)
void f32_epoch(const std::string& variant, MlpShape s, const EpochCheckInput& in, std::vector<float>& p,
               std::vector<float>& v, std::vector<float>& losses) {
  const MlpOffsets o = mlp_offsets(s);
  const int I = s.in, Hd = s.hidden, O = s.out;
  p = in.p0;
  v = in.v0;
  const bool rev = variant == "fma_order";
  for (int t = 0; (long)t * in.batch < in.n; ++t) {
    const int nb = std::min(in.batch, in.n - t * in.batch);
    const int denom = variant == "tail_mean" ? in.batch : nb;
    std::vector<float> X((size_t)nb * I), H((size_t)nb * Hd), Z((size_t)nb * O), dZ(Z.size()), dH(H.size()),
        g(o.total);
    std::vector<int> y(nb);
    for (int r = 0; r < nb; ++r) {
      int idx = in.order[(size_t)t * in.batch + r];
      std::memcpy(&X[(size_t)r * I], in.X_all + (size_t)idx * I, sizeof(float) * I);
      y[r] = in.y_all[idx];
    }
    for (int r = 0; r < nb; ++r) {
      for (int j = 0; j < Hd; ++j) {
        float acc = 0;
        for (int q = 0; q < I; ++q) { int i = rev ? I - 1 - q : q; acc = std::fmaf(X[(size_t)r * I + i], p[o.w1 + (size_t)i * Hd + j], acc); }
        acc += p[o.b1 + j];
        H[(size_t)r * Hd + j] = acc > 0 ? acc : 0;
      }
      for (int k = 0; k < O; ++k) {
        float acc = 0;
        for (int j = 0; j < Hd; ++j) acc += H[(size_t)r * Hd + j] * p[o.w2 + (size_t)j * O + k];
        Z[(size_t)r * O + k] = acc + p[o.b2 + k];
      }
    }
    float lsum = 0;
    for (int r = 0; r < nb; ++r) {
      const float* z = &Z[(size_t)r * O];
      float m = z[0], sum = 0;
      for (int k = 1; k < O; ++k) m = std::fmax(m, z[k]);
      for (int k = 0; k < O; ++k) sum += std::exp(z[k] - m);
      for (int k = 0; k < O; ++k) dZ[(size_t)r * O + k] = (std::exp(z[k] - m) / sum - (k == y[r] ? 1.f : 0.f)) / denom;
      lsum += std::log(sum) - (z[y[r]] - m);
    }
    losses.push_back(lsum / denom);
    for (int r = 0; r < nb; ++r)
      for (int j = 0; j < Hd; ++j) {
        float acc = 0;
        for (int k = 0; k < O; ++k) acc += dZ[(size_t)r * O + k] * p[o.w2 + (size_t)j * O + k];
        dH[(size_t)r * Hd + j] = H[(size_t)r * Hd + j] > 0 ? acc : 0;
      }
    for (int i = 0; i < I; ++i)
      for (int j = 0; j < Hd; ++j) {
        float acc = 0;
        for (int r = 0; r < nb; ++r) acc += X[(size_t)r * I + i] * dH[(size_t)r * Hd + j];
        g[o.w1 + (size_t)i * Hd + j] = acc;
      }
    for (int j = 0; j < Hd; ++j) {
      float acc = 0;
      for (int r = 0; r < nb; ++r) acc += dH[(size_t)r * Hd + j];
      g[o.b1 + j] = acc;
      for (int k = 0; k < O; ++k) {
        float a2 = 0;
        for (int r = 0; r < nb; ++r) a2 += H[(size_t)r * Hd + j] * dZ[(size_t)r * O + k];
        g[o.w2 + (size_t)j * O + k] = a2;
      }
    }
    for (int k = 0; k < O; ++k) {
      float acc = 0;
      for (int r = 0; r < nb; ++r) acc += dZ[(size_t)r * O + k];
      g[o.b2 + k] = acc;
    }
    const size_t n_upd = variant == "frozen_b2" ? o.b2 : o.total;
    for (size_t i = 0; i < n_upd; ++i) {
      v[i] = in.momentum * v[i] - in.lr * g[i];
      p[i] += v[i];
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string data = argc > 1 ? argv[1] : "data";
  const Dataset d = load_dataset(data, false);
  const MlpShape s{d.dim, 256, 10};
  const uint64_t seed = 20260829;  // recipe.toml's seed
  EpochCheckInput in;
  in.s = s;
  in.batch = 128;
  in.n = 2 * 128 + 44;  // case 9: two full batches and a tail batch
  in.lr = 0.1f;
  in.momentum = 0.9f;
  in.X_all = d.train_x.data();
  in.y_all = d.train_y.data();
  std::vector<int32_t> order = epoch_order(d.n_train, seed, 0);
  in.order.assign(order.begin(), order.begin() + in.n);
  in.p0 = init_params(s, seed);
  SplitMix64 rng(stream_seed(seed, kStreamTest, 9));
  in.v0.resize(in.p0.size());
  for (auto& x : in.v0) x = (float)((rng.uniform() * 2 - 1) * 1e-3);
  const EpochCheckRef ref = epoch_check_reference(in);
  std::printf("ambiguous %d\n", ref.ambiguous);
  for (const char* variant : {"ok", "fma_order", "frozen_b2", "tail_mean"}) {
    std::vector<float> p, v, l;
    f32_epoch(variant, s, in, p, v, l);
    EpochCheckScore sc = epoch_check_score(ref, s, p, v, l, 2.0);
    std::printf("%s %.6g %s | %s\n", variant, sc.worst, sc.where.c_str(), sc.per_tensor.c_str());
  }
  return 0;
}
