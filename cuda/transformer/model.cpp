#include "transformer/model.h"

#include <cmath>

#include "common/common.h"
#include "common/json.h"
#include "common/rng.h"

VitShape shape_of(const VitConfig& c) {
  VitShape s;
  s.image = c.image_size;
  s.patch = c.patch;
  s.grid = c.image_size / c.patch;
  s.tokens = s.grid * s.grid;
  s.patch_dim = c.patch * c.patch;
  s.d = c.d_model;
  s.heads = c.heads;
  s.head_dim = c.d_model / c.heads;
  s.mlp = c.mlp_dim;
  s.layers = c.layers;
  s.classes = c.classes;
  s.eps = (float)c.ln_eps;
  s.eps64 = c.ln_eps;
  return s;
}

std::vector<std::string> unsupported_reasons(const VitShape& s) {
  std::vector<std::string> out;
  if (s.head_dim != 32)
    out.push_back("head dim d_model/heads = " + std::to_string(s.head_dim) +
                  ": the attention kernel holds one dim per lane (32)");
  if (s.tokens > 64)
    out.push_back(std::to_string(s.tokens) + " tokens: the attention kernel holds at most 64 keys per row (two per lane)");
  if (s.d % 128 || s.d > 512)
    out.push_back("d_model " + std::to_string(s.d) +
                  ": the LayerNorm prologues take 128, 256, 384 or 512 (a float4 per lane per 128)");
  if (s.mlp % 128) out.push_back("mlp_dim " + std::to_string(s.mlp) + ": the GEMM tiles need a multiple of 128");
  return out;
}

std::vector<TensorSpec> weight_layout(const VitShape& s) {
  std::vector<TensorSpec> out;
  size_t offset = 0;
  auto add = [&](const std::string& name, std::vector<int> shape, bool linear = false) {
    size_t count = 1;
    for (int x : shape) count *= (size_t)x;
    out.push_back({name, shape, offset, count, linear});
    offset += count;
  };
  const int d = s.d, m = s.mlp;
  add("patch.weight", {d, s.patch_dim}, true);
  add("patch.bias", {d});
  add("pos", {s.tokens, d});
  for (int l = 0; l < s.layers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    add(p + "ln1.weight", {d});
    add(p + "ln1.bias", {d});
    add(p + "attn.qkv.weight", {3 * d, d}, true);
    add(p + "attn.qkv.bias", {3 * d});
    add(p + "attn.proj.weight", {d, d}, true);
    add(p + "attn.proj.bias", {d});
    add(p + "ln2.weight", {d});
    add(p + "ln2.bias", {d});
    add(p + "mlp.fc1.weight", {m, d}, true);
    add(p + "mlp.fc1.bias", {m});
    add(p + "mlp.fc2.weight", {d, m}, true);
    add(p + "mlp.fc2.bias", {d});
  }
  add("norm.weight", {d});
  add("norm.bias", {d});
  add("head.weight", {s.classes, d}, true);
  add("head.bias", {s.classes});
  return out;
}

size_t n_params(const VitShape& s) {
  const auto l = weight_layout(s);
  return l.back().offset + l.back().count;
}

double forward_flop(const VitShape& s) {
  const double t = s.tokens, d = s.d;
  const double per_layer = 2 * t * d * 3 * d + 2.0 * 2 * s.heads * t * t * s.head_dim + 2 * t * d * d + 2.0 * 2 * t * d * s.mlp;
  return 2 * t * s.patch_dim * d + s.layers * per_layer + 2 * d * s.classes;
}

const TensorSpec& tensor(const std::vector<TensorSpec>& layout, const std::string& name) {
  for (const auto& t : layout)
    if (t.name == name) return t;
  throw UserError("no weight tensor " + name + " in the layout");
}

std::vector<float> device_layout(const VitShape& s, const std::vector<float>& file_params) {
  std::vector<float> dev(file_params);
  for (const auto& t : weight_layout(s)) {
    if (!t.linear_weight) continue;
    const int out = t.shape[0], in = t.shape[1];
    const float* src = file_params.data() + t.offset;
    float* dst = dev.data() + t.offset;
    for (int o = 0; o < out; ++o)
      for (int i = 0; i < in; ++i) dst[(size_t)i * out + o] = src[(size_t)o * in + i];
  }
  return dev;
}

std::vector<float> random_params(const VitShape& s, uint64_t seed) {
  std::vector<float> p(n_params(s));
  SplitMix64 rng(stream_seed(seed, kStreamInit, 31));
  auto uni = [&](double a) { return (float)((2 * rng.uniform() - 1) * a); };
  for (const auto& t : weight_layout(s)) {
    float* w = p.data() + t.offset;
    const std::string& n = t.name;
    const bool ln_gamma = n.find("ln1.weight") != std::string::npos || n.find("ln2.weight") != std::string::npos ||
                          n == "norm.weight";
    for (size_t i = 0; i < t.count; ++i) {
      if (t.linear_weight) w[i] = uni(1.0 / std::sqrt((double)t.shape[1]));
      else if (ln_gamma) w[i] = 1.0f + uni(0.25);
      else if (n == "pos") w[i] = uni(0.5);
      else w[i] = uni(0.1);  // biases and LayerNorm β
    }
  }
  return p;
}

std::string layout_json(const VitShape& s) {
  Json a = Json::array();
  for (const auto& t : weight_layout(s)) {
    Json shape = Json::array();
    for (int x : t.shape) shape.add(Json::num(x));
    a.add(Json::object()
              .set("name", Json::str(t.name))
              .set("shape", shape.done())
              .set("offset", Json::num((long long)t.offset))
              .set("count", Json::num((long long)t.count))
              .done());
  }
  return Json::object().set("n_params", Json::num((long long)n_params(s))).set("tensors", a.done()).done();
}
