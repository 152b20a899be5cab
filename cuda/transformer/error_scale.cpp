#include "transformer/error_scale.h"

#include <algorithm>
#include <cmath>

namespace {

// |x|·|W|ᵀ + |b| for rows of x (W [out × in]).
std::vector<double> abs_linear(const double* x, int rows, int in, const double* W, const double* b, int out) {
  std::vector<double> y((size_t)rows * out);
  for (int r = 0; r < rows; ++r)
    for (int o = 0; o < out; ++o) {
      double acc = std::fabs(b[o]);
      for (int i = 0; i < in; ++i) acc += std::fabs(W[(size_t)o * in + i]) * std::fabs(x[(size_t)r * in + i]);
      y[(size_t)r * out + o] = acc;
    }
  return y;
}

// W∘W · v for rows of v (the variance a linear map carries).
std::vector<double> sq_linear(const double* v, int rows, int in, const double* W, int out) {
  std::vector<double> y((size_t)rows * out);
  for (int r = 0; r < rows; ++r)
    for (int o = 0; o < out; ++o) {
      double acc = 0;
      for (int i = 0; i < in; ++i) acc += W[(size_t)o * in + i] * W[(size_t)o * in + i] * v[(size_t)r * in + i];
      y[(size_t)r * out + o] = acc;
    }
  return y;
}

struct RowStats {
  double mean, sigma, mean_abs;
};
RowStats row_stats(const double* x, int n, double eps) {
  double mean = 0, var = 0, mean_abs = 0;
  for (int i = 0; i < n; ++i) { mean += x[i]; mean_abs += std::fabs(x[i]); }
  mean /= n;
  for (int i = 0; i < n; ++i) var += (x[i] - mean) * (x[i] - mean);
  return {mean, std::sqrt(var / n + eps), mean_abs / n};
}

// The LayerNorm's own |·|-scale |γ|·(|x − μ| + mean|x|)/σ + |β| of rows of x.
std::vector<double> ln_own(const double* x, int rows, int n, const double* gamma, const double* beta, double eps) {
  std::vector<double> L((size_t)rows * n);
  for (int r = 0; r < rows; ++r) {
    const double* xr = x + (size_t)r * n;
    const RowStats st = row_stats(xr, n, eps);
    for (int i = 0; i < n; ++i)
      L[(size_t)r * n + i] = std::fabs(gamma[i]) * (std::fabs(xr[i] - st.mean) + st.mean_abs) / st.sigma + std::fabs(beta[i]);
  }
  return L;
}

// Σ_i J_ki²·v_i for the LayerNorm's Jacobian J_ki = γ_k·(δ_ki − 1/n − x̂_k·x̂_i/n)/σ.
std::vector<double> ln_carry(const double* x, const double* v, int rows, int n, const double* gamma, double eps) {
  std::vector<double> out((size_t)rows * n), xh((size_t)n);
  for (int r = 0; r < rows; ++r) {
    const double *xr = x + (size_t)r * n, *vr = v + (size_t)r * n;
    const RowStats st = row_stats(xr, n, eps);
    for (int i = 0; i < n; ++i) xh[i] = (xr[i] - st.mean) / st.sigma;
    for (int k = 0; k < n; ++k) {
      double acc = 0;
      for (int i = 0; i < n; ++i) {
        const double j = (i == k ? 1.0 : 0.0) - 1.0 / n - xh[k] * xh[i] / n;
        acc += j * j * vr[i];
      }
      out[(size_t)r * n + k] = gamma[k] * gamma[k] / (st.sigma * st.sigma) * acc;
    }
  }
  return out;
}

// One image's scores' |·|-scale c·|q|·|k|ᵀ [H × T × T].
std::vector<double> scores_own(const VitShape& s, const double* qkv) {
  const int T = s.tokens, d = s.d, dh = s.head_dim;
  const double c = 1.0 / std::sqrt((double)dh);
  std::vector<double> L((size_t)s.heads * T * T);
  for (int h = 0; h < s.heads; ++h)
    for (int i = 0; i < T; ++i)
      for (int j = 0; j < T; ++j) {
        double acc = 0;
        for (int k = 0; k < dh; ++k)
          acc += std::fabs(qkv[(size_t)i * 3 * d + h * dh + k]) * std::fabs(qkv[(size_t)j * 3 * d + d + h * dh + k]);
        L[((size_t)h * T + i) * T + j] = c * acc;
      }
  return L;
}

// The softmax's own scale P·(1 + |s − m| + Σ_k P_k·|s_k − m|) of one row.
void softmax_own(const double* sc, const double* p, int T, double* L) {
  const double mx = *std::max_element(sc, sc + T);
  double gap = 0;
  for (int j = 0; j < T; ++j) gap += p[j] * std::fabs(sc[j] - mx);
  for (int j = 0; j < T; ++j) L[j] = p[j] * (1.0 + std::fabs(sc[j] - mx) + gap);
}

double dh_depth(const VitShape& s) { return std::max(s.head_dim + 2.0, s.tokens + 10.0); }

}  // namespace

// ------------------------------------------------------------------------------------------ one operation

LocalBound local_embed(const VitShape& s, const RefWeights& w, const std::vector<double>& patches) {
  const int T = s.tokens, d = s.d;
  LocalBound b;
  b.depth = s.patch_dim + 2;
  b.ref.resize((size_t)T * d);
  ref_linear(patches.data(), T, s.patch_dim, w.patch_w, w.patch_b, d, b.ref.data());
  b.scale = abs_linear(patches.data(), T, s.patch_dim, w.patch_w, w.patch_b, d);
  for (size_t i = 0; i < b.ref.size(); ++i) {
    b.ref[i] += w.pos[i];
    b.scale[i] += std::fabs(w.pos[i]);
  }
  return b;
}

LocalBound local_layernorm(const std::vector<double>& x, int rows, int n, const double* gamma, const double* beta,
                           double eps) {
  LocalBound b;
  b.depth = n + 8;
  b.ref.resize((size_t)rows * n);
  ref_layernorm(x.data(), rows, n, gamma, beta, eps, b.ref.data());
  b.scale = ln_own(x.data(), rows, n, gamma, beta, eps);
  return b;
}

double OperandRounding::worst_extra(bool rounded_out) const {
  const double u_op = rel / 16777216.0;  // in absolute terms
  return rel > 0 ? (2 * u_op + u_op * u_op) * 16777216.0 + (rounded_out ? rel : 0.0) : 0.0;
}

double OperandRounding::var_extra(bool rounded_out) const { return rel * rel * (rounded_out ? 3.0 : 2.0); }

LocalBound local_linear(const std::vector<double>& x, int rows, int in, const double* W, const double* b, int out,
                        const std::vector<double>* residual, bool gelu, OperandRounding op) {
  LocalBound r;
  r.depth = in + (residual ? 2 : 1);
  if (op.rel > 0) {
    r.var_depth = r.depth + op.var_extra(gelu);
    r.depth += op.worst_extra(gelu);
  }
  r.ref.resize((size_t)rows * out);
  ref_linear(x.data(), rows, in, W, b, out, r.ref.data());
  r.scale = abs_linear(x.data(), rows, in, W, b, out);
  for (size_t i = 0; i < r.ref.size(); ++i) {
    if (residual) {
      r.ref[i] += (*residual)[i];
      r.scale[i] += std::fabs((*residual)[i]);
    }
    if (gelu) {
      const double h = r.ref[i];
      r.scale[i] = std::fabs(ref_gelu_slope(h)) * r.scale[i] + std::fabs(h);
      r.ref[i] = ref_gelu(h);
    }
  }
  return r;
}

LocalBound local_attention_probs(const VitShape& s, const double* qkv, OperandRounding op) {
  const int T = s.tokens, H = s.heads;
  LocalBound b;
  b.depth = dh_depth(s);
  if (op.rel > 0) {  // q and k rounded: the scores' share of the |·|-scale is the larger part of it
    b.var_depth = b.depth + op.var_extra(false);
    b.depth += op.worst_extra(false);
  }
  std::vector<double> scores((size_t)H * T * T), heads((size_t)T * s.d);
  b.ref.resize(scores.size());
  ref_attention(s, qkv, scores.data(), b.ref.data(), heads.data());
  const std::vector<double> ls = scores_own(s, qkv);
  b.scale.resize(scores.size());
  for (int row = 0; row < H * T; ++row) {
    const double *p = &b.ref[(size_t)row * T], *l = &ls[(size_t)row * T];
    double pl = 0;
    for (int j = 0; j < T; ++j) pl += p[j] * l[j];
    softmax_own(&scores[(size_t)row * T], p, T, &b.scale[(size_t)row * T]);
    for (int j = 0; j < T; ++j) b.scale[(size_t)row * T + j] += p[j] * (l[j] + pl);
  }
  return b;
}

LocalBound local_attention_heads(const VitShape& s, const double* probs, const double* qkv, OperandRounding op) {
  const int T = s.tokens, d = s.d, dh = s.head_dim;
  LocalBound b;
  b.depth = T + 1;
  if (op.rel > 0) {  // P and v rounded
    b.var_depth = b.depth + op.var_extra(false);
    b.depth += op.worst_extra(false);
  }
  b.ref.assign((size_t)T * d, 0);
  b.scale.assign((size_t)T * d, 0);
  for (int h = 0; h < s.heads; ++h)
    for (int i = 0; i < T; ++i)
      for (int c = 0; c < dh; ++c) {
        double o = 0, a = 0;
        for (int j = 0; j < T; ++j) {
          const double p = probs[((size_t)h * T + i) * T + j], v = qkv[(size_t)j * 3 * d + 2 * d + h * dh + c];
          o += p * v;
          a += std::fabs(p) * std::fabs(v);
        }
        b.ref[(size_t)i * d + h * dh + c] = o;
        b.scale[(size_t)i * d + h * dh + c] = a;
      }
  return b;
}

LocalBound local_ln_pool(const VitShape& s, const double* x, const double* gamma, const double* beta) {
  const int T = s.tokens, d = s.d;
  std::vector<double> y((size_t)T * d);
  ref_layernorm(x, T, d, gamma, beta, s.eps64, y.data());
  const std::vector<double> L = ln_own(x, T, d, gamma, beta, s.eps64);
  LocalBound b;
  b.depth = std::max(d + 8.0, T + 1.0);
  b.ref.assign(d, 0);
  b.scale.assign(d, 0);
  for (int t = 0; t < T; ++t)
    for (int c = 0; c < d; ++c) {
      b.ref[c] += y[(size_t)t * d + c];
      b.scale[c] += L[(size_t)t * d + c] + std::fabs(y[(size_t)t * d + c]);
    }
  for (int c = 0; c < d; ++c) {
    b.ref[c] /= T;
    b.scale[c] /= T;
  }
  return b;
}

// ------------------------------------------------------------------------------------------ end to end

namespace {

std::vector<double> plus_own(std::vector<double> var, const std::vector<double>& own, double depth) {
  for (size_t i = 0; i < var.size(); ++i) var[i] += depth * own[i] * own[i];
  return var;
}

std::vector<double> root(std::vector<double> v) {
  for (double& x : v) x = std::sqrt(x);
  return v;
}

}  // namespace

void rms_image(const VitShape& s, const RefWeights& w, const ImageTrace& tr, ImageRms& r, OperandRounding op) {
  const int T = s.tokens, d = s.d, m = s.mlp, H = s.heads, dh = s.head_dim;
  // Variances in units of u², rooted at the end of each tensor.
  const double gx = op.var_extra(false);  // each product's operands' rounding (0 at float32)
  const LocalBound e = local_embed(s, w, tr.patches);
  std::vector<double> vx = plus_own(std::vector<double>(e.scale.size(), 0.0), e.scale, e.depth);
  r.x0 = root(vx);
  r.layers.assign(s.layers, LayerRms{});
  for (int l = 0; l < s.layers; ++l) {
    const LayerTrace& L = tr.layers[l];
    const RefWeights::Layer& lw = w.layers[l];
    LayerRms& R = r.layers[l];
    std::vector<double> v_ln1 = plus_own(ln_carry(L.x_in.data(), vx.data(), T, d, lw.ln1_w, s.eps64),
                                         ln_own(L.x_in.data(), T, d, lw.ln1_w, lw.ln1_b, s.eps64), d + 8.0);
    std::vector<double> v_qkv = plus_own(sq_linear(v_ln1.data(), T, d, lw.qkv_w, 3 * d),
                                         abs_linear(L.ln1.data(), T, d, lw.qkv_w, lw.qkv_b, 3 * d), d + 1.0 + gx);
    // scores, weights and heads, head by head
    const double c = 1.0 / std::sqrt((double)dh);
    const std::vector<double> ls = scores_own(s, L.qkv.data());
    std::vector<double> v_s((size_t)H * T * T), v_p((size_t)H * T * T), v_o((size_t)T * d, 0.0), own(T);
    for (int h = 0; h < H; ++h)
      for (int i = 0; i < T; ++i) {
        const size_t row = ((size_t)h * T + i) * T;
        for (int j = 0; j < T; ++j) {
          double acc = 0;
          for (int k = 0; k < dh; ++k) {
            const size_t qi = (size_t)i * 3 * d + h * dh + k, ki = (size_t)j * 3 * d + d + h * dh + k;
            acc += L.qkv[ki] * L.qkv[ki] * v_qkv[qi] + L.qkv[qi] * L.qkv[qi] * v_qkv[ki];
          }
          v_s[row + j] = c * c * acc + (dh + 2.0 + gx) * ls[row + j] * ls[row + j];
        }
        const double* p = &L.probs[row];
        softmax_own(&L.scores[row], p, T, own.data());
        for (int j = 0; j < T; ++j) {
          double acc = 0;
          for (int k = 0; k < T; ++k) {
            const double jac = p[j] * ((j == k ? 1.0 : 0.0) - p[k]);
            acc += jac * jac * v_s[row + k];
          }
          v_p[row + j] = acc + (T + 10.0) * own[j] * own[j];
        }
        for (int k = 0; k < dh; ++k) {
          double acc = 0, a = 0;
          for (int j = 0; j < T; ++j) {
            const size_t vi = (size_t)j * 3 * d + 2 * d + h * dh + k;
            acc += L.qkv[vi] * L.qkv[vi] * v_p[row + j] + p[j] * p[j] * v_qkv[vi];
            a += p[j] * std::fabs(L.qkv[vi]);
          }
          v_o[(size_t)i * d + h * dh + k] = acc + (T + 1.0 + gx) * a * a;
        }
      }
    std::vector<double> own_attn = abs_linear(L.heads.data(), T, d, lw.proj_w, lw.proj_b, d);
    for (size_t i = 0; i < own_attn.size(); ++i) own_attn[i] += std::fabs(L.x_in[i]);
    std::vector<double> v_attn = plus_own(sq_linear(v_o.data(), T, d, lw.proj_w, d), own_attn, d + 2.0 + gx);
    for (size_t i = 0; i < v_attn.size(); ++i) v_attn[i] += vx[i];
    std::vector<double> v_ln2 = plus_own(ln_carry(L.x_attn.data(), v_attn.data(), T, d, lw.ln2_w, s.eps64),
                                         ln_own(L.x_attn.data(), T, d, lw.ln2_w, lw.ln2_b, s.eps64), d + 8.0);
    std::vector<double> v_fc1 = plus_own(sq_linear(v_ln2.data(), T, d, lw.fc1_w, m),
                                         abs_linear(L.ln2.data(), T, d, lw.fc1_w, lw.fc1_b, m), d + 1.0 + gx);
    std::vector<double> v_u(v_fc1.size());
    for (size_t i = 0; i < v_u.size(); ++i) {
      const double g = ref_gelu_slope(L.fc1[i]);
      v_u[i] = g * g * v_fc1[i] + 8.0 * L.fc1[i] * L.fc1[i];
    }
    std::vector<double> own_out = abs_linear(L.u.data(), T, m, lw.fc2_w, lw.fc2_b, d);
    for (size_t i = 0; i < own_out.size(); ++i) own_out[i] += std::fabs(L.x_attn[i]);
    std::vector<double> v_out = plus_own(sq_linear(v_u.data(), T, m, lw.fc2_w, d), own_out, m + 2.0 + gx);
    for (size_t i = 0; i < v_out.size(); ++i) v_out[i] += v_attn[i];
    R.ln1 = root(v_ln1); R.qkv = root(v_qkv); R.scores = root(v_s); R.probs = root(v_p); R.heads = root(v_o);
    R.x_attn = root(v_attn); R.ln2 = root(v_ln2); R.fc1 = root(v_fc1); R.u = root(v_u); R.x_out = root(v_out);
    vx = v_out;
  }
  const std::vector<double>& x_last = s.layers ? tr.layers.back().x_out : tr.x0;
  std::vector<double> v_lnf = plus_own(ln_carry(x_last.data(), vx.data(), T, d, w.norm_w, s.eps64),
                                       ln_own(x_last.data(), T, d, w.norm_w, w.norm_b, s.eps64), d + 8.0);
  std::vector<double> v_pool(d, 0.0), mean_abs(d, 0.0);
  for (int t = 0; t < T; ++t)
    for (int c = 0; c < d; ++c) {
      v_pool[c] += v_lnf[(size_t)t * d + c] / ((double)T * T);
      mean_abs[c] += std::fabs(tr.lnf[(size_t)t * d + c]) / T;
    }
  v_pool = plus_own(v_pool, mean_abs, T + 1.0);
  std::vector<double> v_logits = plus_own(sq_linear(v_pool.data(), 1, d, w.head_w, s.classes),
                                          abs_linear(tr.pooled.data(), 1, d, w.head_w, w.head_b, s.classes), d + 1.0);
  r.lnf = root(v_lnf);
  r.pooled = root(v_pool);
  r.logits = root(v_logits);
}
