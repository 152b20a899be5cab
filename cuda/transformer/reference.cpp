#include "transformer/reference.h"

#include <algorithm>
#include <cmath>

RefWeights ref_weights(const VitShape& s, const std::vector<float>& file_params) {
  RefWeights w;
  w.all.assign(file_params.begin(), file_params.end());
  const auto layout = weight_layout(s);
  auto P = [&](const std::string& name) -> const double* { return w.all.data() + tensor(layout, name).offset; };
  w.patch_w = P("patch.weight");
  w.patch_b = P("patch.bias");
  w.pos = P("pos");
  for (int l = 0; l < s.layers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    w.layers.push_back({P(p + "ln1.weight"), P(p + "ln1.bias"), P(p + "attn.qkv.weight"), P(p + "attn.qkv.bias"),
                        P(p + "attn.proj.weight"), P(p + "attn.proj.bias"), P(p + "ln2.weight"), P(p + "ln2.bias"),
                        P(p + "mlp.fc1.weight"), P(p + "mlp.fc1.bias"), P(p + "mlp.fc2.weight"), P(p + "mlp.fc2.bias")});
  }
  w.norm_w = P("norm.weight");
  w.norm_b = P("norm.bias");
  w.head_w = P("head.weight");
  w.head_b = P("head.bias");
  return w;
}

void ref_linear(const double* x, int rows, int in, const double* W, const double* b, int out, double* y) {
  for (int r = 0; r < rows; ++r)
    for (int o = 0; o < out; ++o) {
      double acc = b[o];
      for (int i = 0; i < in; ++i) acc += W[(size_t)o * in + i] * x[(size_t)r * in + i];
      y[(size_t)r * out + o] = acc;
    }
}

void ref_layernorm(const double* x, int rows, int n, const double* gamma, const double* beta, double eps, double* y) {
  for (int r = 0; r < rows; ++r) {
    const double* xr = x + (size_t)r * n;
    double mean = 0, var = 0;
    for (int i = 0; i < n; ++i) mean += xr[i];
    mean /= n;
    for (int i = 0; i < n; ++i) var += (xr[i] - mean) * (xr[i] - mean);
    var /= n;
    const double sigma = std::sqrt(var + eps);
    for (int i = 0; i < n; ++i) y[(size_t)r * n + i] = (xr[i] - mean) / sigma * gamma[i] + beta[i];
  }
}

double ref_gelu(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }

double ref_gelu_slope(double x) {
  const double cdf = 0.5 * (1.0 + std::erf(x / std::sqrt(2.0)));
  const double pdf = std::exp(-0.5 * x * x) / std::sqrt(2.0 * M_PI);
  return cdf + x * pdf;
}

// Multi-head self-attention of one image: qkv [T × 3d] -> scores, probs [H × T × T], heads [T × d].
void ref_attention(const VitShape& s, const double* qkv, double* scores, double* probs, double* heads) {
  const int T = s.tokens, d = s.d, dh = s.head_dim;
  const double scale = 1.0 / std::sqrt((double)dh);
  for (int h = 0; h < s.heads; ++h) {
    for (int i = 0; i < T; ++i) {
      const double* q = qkv + (size_t)i * 3 * d + h * dh;
      double* srow = scores + ((size_t)h * T + i) * T;
      double* prow = probs + ((size_t)h * T + i) * T;
      double mx = -INFINITY;
      for (int j = 0; j < T; ++j) {
        const double* k = qkv + (size_t)j * 3 * d + d + h * dh;
        double dot = 0;
        for (int c = 0; c < dh; ++c) dot += q[c] * k[c];
        srow[j] = dot * scale;
        mx = std::max(mx, srow[j]);
      }
      double z = 0;
      for (int j = 0; j < T; ++j) z += prow[j] = std::exp(srow[j] - mx);
      for (int j = 0; j < T; ++j) prow[j] /= z;
      for (int c = 0; c < dh; ++c) {
        double o = 0;
        for (int j = 0; j < T; ++j) o += prow[j] * qkv[(size_t)j * 3 * d + 2 * d + h * dh + c];
        heads[(size_t)i * d + h * dh + c] = o;
      }
    }
  }
}

std::vector<double> ref_patches(const VitShape& s, const float* image) {
  // Token t = (py, px) on the grid, value p = (dy, dx) inside its patch, both row-major.
  std::vector<double> out((size_t)s.tokens * s.patch_dim);
  for (int t = 0; t < s.tokens; ++t)
    for (int p = 0; p < s.patch_dim; ++p) {
      const int y = (t / s.grid) * s.patch + p / s.patch, x = (t % s.grid) * s.patch + p % s.patch;
      out[(size_t)t * s.patch_dim + p] = image[y * s.image + x];
    }
  return out;
}

void ref_image(const VitShape& s, const RefWeights& w, const float* image, ImageTrace& tr) {
  const int T = s.tokens, d = s.d, m = s.mlp, Pd = s.patch_dim, H = s.heads;
  tr.patches = ref_patches(s, image);
  tr.x0.assign((size_t)T * d, 0);
  ref_linear(tr.patches.data(), T, Pd, w.patch_w, w.patch_b, d, tr.x0.data());
  for (size_t i = 0; i < tr.x0.size(); ++i) tr.x0[i] += w.pos[i];

  tr.layers.assign(s.layers, LayerTrace{});
  const std::vector<double>* x = &tr.x0;
  for (int l = 0; l < s.layers; ++l) {
    LayerTrace& L = tr.layers[l];
    const RefWeights::Layer& lw = w.layers[l];
    L.x_in = *x;
    L.ln1.resize((size_t)T * d);
    ref_layernorm(L.x_in.data(), T, d, lw.ln1_w, lw.ln1_b, s.eps64, L.ln1.data());
    L.qkv.resize((size_t)T * 3 * d);
    ref_linear(L.ln1.data(), T, d, lw.qkv_w, lw.qkv_b, 3 * d, L.qkv.data());
    L.scores.resize((size_t)H * T * T);
    L.probs.resize((size_t)H * T * T);
    L.heads.resize((size_t)T * d);
    ref_attention(s, L.qkv.data(), L.scores.data(), L.probs.data(), L.heads.data());
    L.x_attn.resize((size_t)T * d);
    ref_linear(L.heads.data(), T, d, lw.proj_w, lw.proj_b, d, L.x_attn.data());
    for (size_t i = 0; i < L.x_attn.size(); ++i) L.x_attn[i] += L.x_in[i];
    L.ln2.resize((size_t)T * d);
    ref_layernorm(L.x_attn.data(), T, d, lw.ln2_w, lw.ln2_b, s.eps64, L.ln2.data());
    L.fc1.resize((size_t)T * m);
    ref_linear(L.ln2.data(), T, d, lw.fc1_w, lw.fc1_b, m, L.fc1.data());
    L.u.resize(L.fc1.size());
    for (size_t i = 0; i < L.u.size(); ++i) L.u[i] = ref_gelu(L.fc1[i]);
    L.x_out.resize((size_t)T * d);
    ref_linear(L.u.data(), T, m, lw.fc2_w, lw.fc2_b, d, L.x_out.data());
    for (size_t i = 0; i < L.x_out.size(); ++i) L.x_out[i] += L.x_attn[i];
    x = &L.x_out;
  }
  tr.lnf.resize((size_t)T * d);
  ref_layernorm(x->data(), T, d, w.norm_w, w.norm_b, s.eps64, tr.lnf.data());
  tr.pooled.assign(d, 0);
  for (int t = 0; t < T; ++t)
    for (int c = 0; c < d; ++c) tr.pooled[c] += tr.lnf[(size_t)t * d + c];
  for (int c = 0; c < d; ++c) tr.pooled[c] /= T;
  tr.logits.resize(s.classes);
  ref_linear(tr.pooled.data(), 1, d, w.head_w, w.head_b, s.classes, tr.logits.data());
}
