// cuda/transformer/model.h — the vision transformer's shapes and its weight layout: the one owner on
// the binary's side (spec/transformer.py holds the Python side; `vit_forward layout` prints this one
// and tests/test_transformer_config.py compares them).
//
// The model (transformer.toml), per image of 28×28 float32 pixels p/255:
//   patches  P [T × Pd]      T = (28/4)² = 49 tokens, Pd = 4·4 = 16 pixels each (row-major in the patch)
//   embed    x = P·Wpeᵀ + bpe + pos                              [T × d]     d = 128
//   each layer (pre-LN), l = 0..L−1:
//     qkv    = LN1(x)·Wqkvᵀ + bqkv                              [T × 3d]    q | k | v, head h at h·32
//     attn   A_h = softmax(q_h·k_hᵀ / √32) [T × T];  o_h = A_h·v_h  [T × 32], o = [o_0 … o_3]  [T × d]
//     x      = x + o·Woᵀ + bo                                     [T × d]
//     u      = GELU(LN2(x)·W1ᵀ + b1)                              [T × m]     m = 512, GELU exact (erf)
//     x      = x + u·W2ᵀ + b2                                     [T × d]
//   pooled   = mean over tokens of LNf(x)                         [d]
//   logits   = pooled·Whᵀ + bh                                    [C]         C = 10
// LayerNorm: (x − mean)/sqrt(var + eps)·γ + β over d, biased variance, eps 1e-5.
//
// The weight file (params.npy, float32, flat) holds the tensors below back to back in this order, each
// in PyTorch's shape (a Linear's weight is [out × in], row-major). The device copy transposes every
// Linear weight to [in × out] (device_layout), so a GEMM's B tile is read along its output columns.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "transformer/config.h"

struct VitShape {
  int image = 0, patch = 0, grid = 0, tokens = 0, patch_dim = 0;
  int d = 0, heads = 0, head_dim = 0, mlp = 0, layers = 0, classes = 0;
  float eps = 0;
  double eps64 = 0;
};
VitShape shape_of(const VitConfig& c);

// Why our kernels cannot run a shape (empty: they can): spec/transformer.py kernel_support's lines.
std::vector<std::string> unsupported_reasons(const VitShape& s);

struct TensorSpec {
  std::string name;
  std::vector<int> shape;  // PyTorch's
  size_t offset = 0, count = 0;  // in floats, in params.npy
  bool linear_weight = false;    // [out × in]: transposed on the device
};

//   patch.weight [d × Pd]  patch.bias [d]  pos [T × d]
//   layers.l.{ln1.weight [d], ln1.bias [d], attn.qkv.weight [3d × d], attn.qkv.bias [3d],
//             attn.proj.weight [d × d], attn.proj.bias [d], ln2.weight [d], ln2.bias [d],
//             mlp.fc1.weight [m × d], mlp.fc1.bias [m], mlp.fc2.weight [d × m], mlp.fc2.bias [d]}
//   norm.weight [d]  norm.bias [d]  head.weight [C × d]  head.bias [C]
std::vector<TensorSpec> weight_layout(const VitShape& s);
size_t n_params(const VitShape& s);
// One image's multiply-adds × 2 (GEMMs and the two attention products: spec/transformer.py forward_flop).
double forward_flop(const VitShape& s);

// Index of a tensor by name in weight_layout(s) (a UserError when absent).
const TensorSpec& tensor(const std::vector<TensorSpec>& layout, const std::string& name);

// The file layout's params with every Linear weight transposed to [in × out]; same offsets.
std::vector<float> device_layout(const VitShape& s, const std::vector<float>& file_params);

// Seeded random weights (SplitMix64, cuda/common/rng.h): Linear weights U(±1/√in), biases U(±0.1),
// pos U(±0.5), LayerNorm γ = 1 + U(±0.25), β = U(±0.1): the numerics checks' other weights.
std::vector<float> random_params(const VitShape& s, uint64_t seed);

// `vit_forward layout`: {"n_params": N, "tensors": [{"name", "shape", "offset", "count"}, ...]}.
std::string layout_json(const VitShape& s);
