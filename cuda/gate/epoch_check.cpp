#include "gate/epoch_check.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace {

constexpr double kU = 5.9604644775390625e-08;  // 2^-24
// A sum of n terms: 2·√(n+2)·u of the terms' magnitudes (rounding errors of a sum behave like a
// random walk: Higham & Mary 2019, the bound case 2 uses). The worst case n·u would call 1% of
// the pre-activations ambiguous, and their allowances would swamp the bound (tests/gate_sim).
double gam(int n) { return 2.0 * std::sqrt(n + 2.0) * kU; }

}  // namespace

EpochCheckRef epoch_check_reference(const EpochCheckInput& in) {
  const MlpShape s = in.s;
  const int I = s.in, Hd = s.hidden, O = s.out, Bmax = in.batch;
  const MlpOffsets o = mlp_offsets(s);
  EpochCheckRef r;
  r.p.assign(in.p0.begin(), in.p0.end());
  r.v.assign(in.v0.begin(), in.v0.end());
  r.ep.assign(o.total, 0.0);
  r.ev.assign(o.total, 0.0);
  const double lr = in.lr, mu = in.momentum;
  // The rounding of a matrix product's inputs, relative to its terms' magnitudes (both inputs: 2u_p),
  // and of a column sum's summands (u_p): 0 for FP32, where the terms `+ rin * mag` add exactly 0.
  const double rin = 2 * mlp::input_roundoff(in.precision), rsum = mlp::input_roundoff(in.precision);
  std::vector<double> X((size_t)Bmax * I), a((size_t)Bmax * Hd), Ea((size_t)Bmax * Hd), H(a.size()), Z((size_t)Bmax * O),
      EZ(Z.size()), dZ(Z.size()), EdZ(Z.size()), dH(a.size()), EdH(a.size()), g(o.total), Eg(o.total);
  std::vector<int> y((size_t)Bmax);
  for (int t = 0; (long)t * Bmax < in.n; ++t) {
    const int nb = std::min(Bmax, in.n - t * Bmax);
    for (int row = 0; row < nb; ++row) {
      const int idx = in.order[(size_t)t * Bmax + row];
      for (int i = 0; i < I; ++i) X[(size_t)row * I + i] = in.X_all[(size_t)idx * I + i];
      y[(size_t)row] = in.y_all[idx];
    }
    const double *W1 = &r.p[o.w1], *b1 = &r.p[o.b1], *W2 = &r.p[o.w2], *b2 = &r.p[o.b2];
    const double *EW1 = &r.ep[o.w1], *Eb1 = &r.ep[o.b1], *EW2 = &r.ep[o.w2], *Eb2 = &r.ep[o.b2];
    // Forward: a = X·W1 + b1 with its term scale; H = ReLU(a); Z = H·W2 + b2.
#pragma omp parallel for schedule(static)
    for (int row = 0; row < nb; ++row) {
      const double* x = &X[(size_t)row * I];
      for (int j = 0; j < Hd; ++j) {
        double acc = b1[j], mag = std::fabs(b1[j]), prop = Eb1[j];
        for (int i = 0; i < I; ++i) {
          const double w = W1[(size_t)i * Hd + j];
          acc += x[i] * w;
          mag += std::fabs(x[i] * w);
          prop += std::fabs(x[i]) * EW1[(size_t)i * Hd + j];
        }
        a[(size_t)row * Hd + j] = acc;
        Ea[(size_t)row * Hd + j] = gam(I + 1) * mag + prop + rin * mag;
        H[(size_t)row * Hd + j] = acc > 0 ? acc : 0;
      }
      for (int k = 0; k < O; ++k) {
        double acc = b2[k], mag = std::fabs(b2[k]), prop = Eb2[k];
        for (int j = 0; j < Hd; ++j) {
          const double h = H[(size_t)row * Hd + j], w = W2[(size_t)j * O + k];
          acc += h * w;
          mag += std::fabs(h * w);
          prop += Ea[(size_t)row * Hd + j] * std::fabs(w) + h * EW2[(size_t)j * O + k];
        }
        Z[(size_t)row * O + k] = acc;
        EZ[(size_t)row * O + k] = gam(Hd + 1) * mag + prop + rin * mag;
      }
    }
    // Loss and dZ = (softmax − onehot) / nb.
    double loss = 0, eloss = 0, lmag = 0;
    for (int row = 0; row < nb; ++row) {
      const double* z = &Z[(size_t)row * O];
      const double* ez = &EZ[(size_t)row * O];
      double m = z[0], span = 0, sum = 0;
      for (int k = 1; k < O; ++k) m = std::max(m, z[k]);
      for (int k = 0; k < O; ++k) { sum += std::exp(z[k] - m); span = std::max(span, m - z[k]); }
      const int lab = y[(size_t)row];
      const double Lr = std::log(sum) - (z[lab] - m);
      double pez = 0, prop = 0;
      for (int k = 0; k < O; ++k) {
        const double pk = std::exp(z[k] - m) / sum, d = pk - (k == lab ? 1.0 : 0.0);
        pez += pk * ez[k];
        prop += std::fabs(d) * ez[k];
      }
      const double c = (O + 8) * kU;
      for (int k = 0; k < O; ++k) {
        const double pk = std::exp(z[k] - m) / sum, d = pk - (k == lab ? 1.0 : 0.0);
        dZ[(size_t)row * O + k] = d / nb;
        EdZ[(size_t)row * O + k] = (pk * (ez[k] + pez) + pk * c * (1 + (m - z[k])) + 2 * kU * std::fabs(d)) / nb;
      }
      loss += Lr;
      lmag += std::fabs(Lr);
      eloss += prop + c * (1 + span + std::fabs(Lr));
    }
    r.loss.push_back(loss / nb);
    r.el.push_back(eloss / nb + gam(nb) * lmag / nb);
    // Backward: dW2 = Hᵀ·dZ, db2 = colsum dZ, dH = (dZ·W2ᵀ)⊙(a>0), dW1 = Xᵀ·dH, db1 = colsum dH.
#pragma omp parallel for schedule(static)
    for (int row = 0; row < nb; ++row) {
      for (int j = 0; j < Hd; ++j) {
        double acc = 0, mag = 0, prop = 0;
        for (int k = 0; k < O; ++k) {
          const double d = dZ[(size_t)row * O + k], w = W2[(size_t)j * O + k];
          acc += d * w;
          mag += std::fabs(d * w);
          prop += EdZ[(size_t)row * O + k] * std::fabs(w) + std::fabs(d) * EW2[(size_t)j * O + k];
        }
        const size_t q = (size_t)row * Hd + j;
        const double e = gam(O) * mag + prop + rin * mag;
        const bool on = a[q] > 0, ambiguous = std::fabs(a[q]) <= Ea[q];
        dH[q] = on ? acc : 0;
        EdH[q] = ambiguous ? std::fabs(acc) + e : on ? e : 0;
      }
    }
    for (int row = 0; row < nb; ++row)
      for (int j = 0; j < Hd; ++j) r.ambiguous += std::fabs(a[(size_t)row * Hd + j]) <= Ea[(size_t)row * Hd + j];
#pragma omp parallel for schedule(static)
    for (int i = 0; i < I; ++i) {
      for (int j = 0; j < Hd; ++j) {
        double acc = 0, mag = 0, prop = 0;
        for (int row = 0; row < nb; ++row) {
          const double x = std::fabs(X[(size_t)row * I + i]);
          acc += X[(size_t)row * I + i] * dH[(size_t)row * Hd + j];
          mag += x * std::fabs(dH[(size_t)row * Hd + j]);
          prop += x * EdH[(size_t)row * Hd + j];
        }
        g[o.w1 + (size_t)i * Hd + j] = acc;
        Eg[o.w1 + (size_t)i * Hd + j] = gam(nb) * mag + prop + rin * mag;
      }
    }
    for (int j = 0; j < Hd; ++j) {
      double acc = 0, mag = 0, prop = 0;
      for (int row = 0; row < nb; ++row) {
        acc += dH[(size_t)row * Hd + j];
        mag += std::fabs(dH[(size_t)row * Hd + j]);
        prop += EdH[(size_t)row * Hd + j];
      }
      g[o.b1 + j] = acc;
      Eg[o.b1 + j] = gam(nb) * mag + prop + rsum * mag;
      for (int k = 0; k < O; ++k) {
        double acc2 = 0, mag2 = 0, prop2 = 0;
        for (int row = 0; row < nb; ++row) {
          const double h = H[(size_t)row * Hd + j], d = dZ[(size_t)row * O + k];
          acc2 += h * d;
          mag2 += std::fabs(h * d);
          prop2 += Ea[(size_t)row * Hd + j] * std::fabs(d) + h * EdZ[(size_t)row * O + k];
        }
        g[o.w2 + (size_t)j * O + k] = acc2;
        Eg[o.w2 + (size_t)j * O + k] = gam(nb) * mag2 + prop2 + rin * mag2;
      }
    }
    for (int k = 0; k < O; ++k) {
      double acc = 0, mag = 0, prop = 0;
      for (int row = 0; row < nb; ++row) {
        acc += dZ[(size_t)row * O + k];
        mag += std::fabs(dZ[(size_t)row * O + k]);
        prop += EdZ[(size_t)row * O + k];
      }
      g[o.b2 + k] = acc;
      Eg[o.b2 + k] = gam(nb) * mag + prop + rsum * mag;
    }
    // Step: v = μ·v − lr·g (three roundings), p = p + v (one).
    for (size_t i = 0; i < o.total; ++i) {
      const double mv = mu * r.v[i], lg = lr * g[i];
      r.v[i] = mv - lg;
      r.ev[i] = mu * r.ev[i] + lr * Eg[i] + 3 * kU * (std::fabs(mv) + std::fabs(lg));
      r.p[i] += r.v[i];
      r.ep[i] += r.ev[i] + kU * std::fabs(r.p[i]);
    }
  }
  return r;
}

EpochCheckScore epoch_check_score(const EpochCheckRef& ref, MlpShape s, const std::vector<float>& p,
                                  const std::vector<float>& v, const std::vector<float>& loss, double margin) {
  const MlpOffsets o = mlp_offsets(s);
  const size_t b[5] = {o.w1, o.b1, o.w2, o.b2, o.total};
  const char* tn[4] = {"W1", "b1", "W2", "b2"};
  const int cols[4] = {s.hidden, 1, s.out, 1};
  EpochCheckScore sc;
  auto ratio = [&](double got, double want, double e) {
    const double d = std::fabs(got - want), tol = margin * e;
    if (std::isnan(d)) return (double)INFINITY;
    return d == 0 ? 0.0 : tol > 0 ? d / tol : (double)INFINITY;
  };
  auto name = [&](int t, size_t i, const char* what) {
    char buf[96];
    const size_t k = i - b[t];
    if (cols[t] > 1) std::snprintf(buf, sizeof buf, "%s[%zu,%zu] (%s)", tn[t], k / cols[t], k % cols[t], what);
    else std::snprintf(buf, sizeof buf, "%s[%zu] (%s)", tn[t], k, what);
    return std::string(buf);
  };
  for (int t = 0; t < 4; ++t) {
    double tw = 0;
    for (size_t i = b[t]; i < b[t + 1]; ++i) {
      const double rp = i < p.size() ? ratio(p[i], ref.p[i], ref.ep[i]) : INFINITY;
      const double rv = i < v.size() ? ratio(v[i], ref.v[i], ref.ev[i]) : INFINITY;
      const double w = std::max(rp, rv);
      tw = std::max(tw, w);
      if (w > sc.worst || (sc.where.empty() && w >= sc.worst)) {
        sc.worst = w;
        sc.where = name(t, i, rp >= rv ? "param" : "velocity");
      }
    }
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s%s %.3g", sc.per_tensor.empty() ? "" : ", ", tn[t], tw);
    sc.per_tensor += buf;
  }
  double lw = 0;
  for (size_t t = 0; t < ref.loss.size(); ++t) {
    const double w = t < loss.size() ? ratio(loss[t], ref.loss[t], ref.el[t]) : INFINITY;
    lw = std::max(lw, w);
    if (w > sc.worst) { sc.worst = w; sc.where = "step loss " + std::to_string(t); }
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, ", step losses %.3g", lw);
  sc.per_tensor += buf;
  return sc;
}
