#include "gate/cpu_reference.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "common/rng.h"

std::vector<float> init_params(MlpShape s, uint64_t seed) {
  MlpOffsets o = mlp_offsets(s);
  std::vector<float> p(o.total);
  SplitMix64 rng(stream_seed(seed, kStreamInit, 0));
  auto fill = [&](size_t begin, size_t end, int fan_in) {
    double bound = 1.0 / std::sqrt((double)fan_in);
    for (size_t i = begin; i < end; ++i) p[i] = (float)((2.0 * rng.uniform() - 1.0) * bound);
  };
  fill(o.w1, o.b1, s.in);     // W1 [in × hidden]
  fill(o.b1, o.w2, s.in);     // b1 [hidden]
  fill(o.w2, o.b2, s.hidden); // W2 [hidden × out]
  fill(o.b2, o.total, s.hidden);
  return p;
}

std::vector<int32_t> epoch_order(int n, uint64_t seed, int epoch) {
  std::vector<int32_t> order((size_t)n);
  for (int i = 0; i < n; ++i) order[(size_t)i] = i;
  SplitMix64 rng(stream_seed(seed, kStreamOrder, (uint64_t)epoch));
  for (int i = n - 1; i > 0; --i) {
    // Modulo reduction: its bias is below 2^-40 for n < 2^24, far under anything measurable.
    int j = (int)(rng.next() % (uint64_t)(i + 1));
    std::swap(order[(size_t)i], order[(size_t)j]);
  }
  return order;
}

namespace {
// A matrix product's input as the reference multiplies it: itself (the float64 reference), or the
// float nearest it rounded to a lower precision (the rounded-input reference, ref_train's `inputs`).
struct Exact {
  double operator()(double x) const { return x; }
};
struct RoundedTo {
  mlp::Precision p;
  double operator()(double x) const { return (double)mlp::round_to_precision((float)x, p); }
};

template <class Q>
void forward_q(MlpShape s, const double* params, const double* X, int batch, double* H, double* Z, Q q) {
  MlpOffsets o = mlp_offsets(s);
  const double *W1 = params + o.w1, *b1 = params + o.b1, *W2 = params + o.w2, *b2 = params + o.b2;
#pragma omp parallel for schedule(static)
  for (int r = 0; r < batch; ++r) {
    double* h = H + (size_t)r * s.hidden;
    for (int j = 0; j < s.hidden; ++j) h[j] = b1[j];
    const double* x = X + (size_t)r * s.in;
    for (int i = 0; i < s.in; ++i) {
      double xi = q(x[i]);
      if (xi == 0.0) continue;  // most pixels are 0: skipping them changes nothing
      const double* w = W1 + (size_t)i * s.hidden;
      for (int j = 0; j < s.hidden; ++j) h[j] += xi * q(w[j]);
    }
    for (int j = 0; j < s.hidden; ++j) h[j] = h[j] > 0.0 ? h[j] : 0.0;
    double* z = Z + (size_t)r * s.out;
    for (int k = 0; k < s.out; ++k) z[k] = b2[k];
    for (int j = 0; j < s.hidden; ++j) {
      const double* w = W2 + (size_t)j * s.out;
      const double hj = q(h[j]);
      for (int k = 0; k < s.out; ++k) z[k] += hj * q(w[k]);
    }
  }
}

}  // namespace

void ref_forward(MlpShape s, const double* params, const double* X, int batch, double* H, double* Z) {
  forward_q(s, params, X, batch, H, Z, Exact{});
}

double ref_loss(MlpShape s, const double* Z, const int* labels, int batch, double* dZ) {
  double total = 0.0;
  for (int r = 0; r < batch; ++r) {
    const double* z = Z + (size_t)r * s.out;
    double m = *std::max_element(z, z + s.out), sum = 0.0;
    for (int k = 0; k < s.out; ++k) sum += std::exp(z[k] - m);
    total += std::log(sum) + m - z[labels[r]];
    if (dZ)
      for (int k = 0; k < s.out; ++k)
        dZ[(size_t)r * s.out + k] = (std::exp(z[k] - m) / sum - (k == labels[r] ? 1.0 : 0.0)) / batch;
  }
  return total / batch;
}

namespace {
template <class Q>
void backward_q(MlpShape s, const double* params, const double* X, const double* H, const double* dZ, int batch,
                double* grads, double* dX, Q q) {
  MlpOffsets o = mlp_offsets(s);
  const double *W1 = params + o.w1, *W2 = params + o.w2;
  double *dW1 = grads + o.w1, *db1 = grads + o.b1, *dW2 = grads + o.w2, *db2 = grads + o.b2;
  std::vector<double> dH((size_t)batch * s.hidden);
  // dH = (dZ·W2ᵀ) ⊙ (H > 0)
#pragma omp parallel for schedule(static)
  for (int r = 0; r < batch; ++r)
    for (int j = 0; j < s.hidden; ++j) {
      double acc = 0.0;
      for (int k = 0; k < s.out; ++k) acc += q(dZ[(size_t)r * s.out + k]) * q(W2[(size_t)j * s.out + k]);
      dH[(size_t)r * s.hidden + j] = H[(size_t)r * s.hidden + j] > 0.0 ? acc : 0.0;
    }
  // dW2 = Hᵀ·dZ [hidden × out]
#pragma omp parallel for schedule(static)
  for (int j = 0; j < s.hidden; ++j)
    for (int k = 0; k < s.out; ++k) {
      double acc = 0.0;
      for (int r = 0; r < batch; ++r) acc += q(H[(size_t)r * s.hidden + j]) * q(dZ[(size_t)r * s.out + k]);
      dW2[(size_t)j * s.out + k] = acc;
    }
  // db2 = colsum(dZ), db1 = colsum(dH)
  for (int k = 0; k < s.out; ++k) {
    double acc = 0.0;
    for (int r = 0; r < batch; ++r) acc += dZ[(size_t)r * s.out + k];
    db2[k] = acc;
  }
  for (int j = 0; j < s.hidden; ++j) {
    double acc = 0.0;
    for (int r = 0; r < batch; ++r) acc += dH[(size_t)r * s.hidden + j];
    db1[j] = acc;
  }
  // dW1 = Xᵀ·dH [in × hidden]: each thread owns whole rows i, summing over r in order.
#pragma omp parallel for schedule(static)
  for (int i = 0; i < s.in; ++i) {
    double* g = dW1 + (size_t)i * s.hidden;
    for (int j = 0; j < s.hidden; ++j) g[j] = 0.0;
    for (int r = 0; r < batch; ++r) {
      double xi = q(X[(size_t)r * s.in + i]);
      if (xi == 0.0) continue;
      const double* d = dH.data() + (size_t)r * s.hidden;
      for (int j = 0; j < s.hidden; ++j) g[j] += xi * q(d[j]);
    }
  }
  if (dX) {
    // dX = dH·W1ᵀ [batch × in]
#pragma omp parallel for schedule(static)
    for (int r = 0; r < batch; ++r)
      for (int i = 0; i < s.in; ++i) {
        double acc = 0.0;
        for (int j = 0; j < s.hidden; ++j) acc += q(dH[(size_t)r * s.hidden + j]) * q(W1[(size_t)i * s.hidden + j]);
        dX[(size_t)r * s.in + i] = acc;
      }
  }
}

}  // namespace

void ref_backward(MlpShape s, const double* params, const double* X, const double* H, const double* dZ,
                  int batch, double* grads, double* dX) {
  backward_q(s, params, X, H, dZ, batch, grads, dX, Exact{});
}

void ref_step(double* params, double* velocity, const double* grads, size_t n, double lr, double momentum) {
  for (size_t i = 0; i < n; ++i) {
    velocity[i] = momentum * velocity[i] - lr * grads[i];
    params[i] += velocity[i];
  }
}

EvalResult ref_evaluate(MlpShape s, const double* params, const double* X, const int* y, int n) {
  const int chunk = 1000;
  std::vector<double> H((size_t)chunk * s.hidden), Z((size_t)chunk * s.out);
  int correct = 0;
  double loss = 0.0;
  for (int b0 = 0; b0 < n; b0 += chunk) {
    int nb = std::min(chunk, n - b0);
    ref_forward(s, params, X + (size_t)b0 * s.in, nb, H.data(), Z.data());
    loss += ref_loss(s, Z.data(), y + b0, nb, nullptr) * nb;
    for (int r = 0; r < nb; ++r) {
      const double* z = Z.data() + (size_t)r * s.out;
      if ((int)(std::max_element(z, z + s.out) - z) == y[b0 + r]) ++correct;
    }
  }
  return {(double)correct / n, loss / n};
}

RefTrainResult ref_train(MlpShape s, std::vector<double>& params, const std::vector<double>& X, const std::vector<int>& y,
                         int n_train, const std::vector<double>& X_test, const std::vector<int>& y_test, int n_test,
                         const std::vector<std::vector<int32_t>>& orders, int batch, double lr, double momentum,
                         const std::function<void(int, double, double, double)>& progress, mlp::Precision inputs) {
  auto t0 = std::chrono::steady_clock::now();
  MlpOffsets o = mlp_offsets(s);
  std::vector<double> velocity(o.total, 0.0), grads(o.total);
  std::vector<double> Xb((size_t)batch * s.in), H((size_t)batch * s.hidden), Z((size_t)batch * s.out), dZ(Z.size());
  std::vector<int> yb((size_t)batch);
  RefTrainResult res;
  for (size_t e = 0; e < orders.size(); ++e) {
    double loss_sum = 0.0;
    for (int b0 = 0; b0 < n_train; b0 += batch) {
      int nb = std::min(batch, n_train - b0);
      for (int r = 0; r < nb; ++r) {
        int idx = orders[e][(size_t)(b0 + r)];
        std::copy(X.begin() + (long)idx * s.in, X.begin() + (long)(idx + 1) * s.in, Xb.begin() + (long)r * s.in);
        yb[(size_t)r] = y[(size_t)idx];
      }
      auto step_with = [&](auto q) {  // forward, loss, gradients with the products' inputs as q makes them
        forward_q(s, params.data(), Xb.data(), nb, H.data(), Z.data(), q);
        loss_sum += ref_loss(s, Z.data(), yb.data(), nb, dZ.data()) * nb;
        backward_q(s, params.data(), Xb.data(), H.data(), dZ.data(), nb, grads.data(), nullptr, q);
      };
      if (inputs == mlp::Precision::FP32) step_with(Exact{});
      else step_with(RoundedTo{inputs});
      ref_step(params.data(), velocity.data(), grads.data(), o.total, lr, momentum);
    }
    EvalResult ev = ref_evaluate(s, params.data(), X_test.data(), y_test.data(), n_test);
    res.loss_per_epoch.push_back(loss_sum / n_train);
    res.test_accuracy_per_epoch.push_back(ev.accuracy);
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (progress) progress((int)e, loss_sum / n_train, ev.accuracy, secs);
  }
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return res;
}
