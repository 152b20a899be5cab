// cuda/transformer/reference.h — the float64 CPU reference of the forward pass (model.h's equations,
// plain loops over one image, the weights in the file layout: a Linear's weight [out × in]). It keeps
// every intermediate of every layer, which the checks compare with the device's and from which
// error_scale.h derives each one's rounding bound. tests/test_transformer_reference.py checks it
// against PyTorch's modules in float64.
#pragma once
#include <vector>

#include "transformer/model.h"

// The weights as float64, with a pointer per tensor (file layout).
struct RefWeights {
  struct Layer {
    const double *ln1_w, *ln1_b, *qkv_w, *qkv_b, *proj_w, *proj_b, *ln2_w, *ln2_b, *fc1_w, *fc1_b, *fc2_w, *fc2_b;
  };
  std::vector<double> all;
  const double *patch_w = nullptr, *patch_b = nullptr, *pos = nullptr;
  std::vector<Layer> layers;
  const double *norm_w = nullptr, *norm_b = nullptr, *head_w = nullptr, *head_b = nullptr;
};
RefWeights ref_weights(const VitShape& s, const std::vector<float>& file_params);

struct LayerTrace {
  std::vector<double> x_in;    // [T × d]   the layer's input
  std::vector<double> ln1;     // [T × d]   LN1(x_in)
  std::vector<double> qkv;     // [T × 3d]  q | k | v
  std::vector<double> scores;  // [H × T × T]  q·kᵀ/√dh
  std::vector<double> probs;   // [H × T × T]  softmax over the last index
  std::vector<double> heads;   // [T × d]   o = [o_0 … o_H−1]
  std::vector<double> x_attn;  // [T × d]   x_in + o·Woᵀ + bo
  std::vector<double> ln2;     // [T × d]
  std::vector<double> fc1;     // [T × m]   LN2(x_attn)·W1ᵀ + b1, before GELU
  std::vector<double> u;       // [T × m]   GELU(fc1)
  std::vector<double> x_out;   // [T × d]   x_attn + u·W2ᵀ + b2
};

struct ImageTrace {
  std::vector<double> patches;  // [T × Pd]  the pixels, float32(p)/255 as double (exact)
  std::vector<double> x0;       // [T × d]   the embedding
  std::vector<LayerTrace> layers;
  std::vector<double> lnf;      // [T × d]   the final LayerNorm
  std::vector<double> pooled;   // [d]
  std::vector<double> logits;   // [C]
};

// One image ([image²] float32 pixels) through the whole model in float64.
void ref_image(const VitShape& s, const RefWeights& w, const float* image, ImageTrace& tr);

// The building blocks (row-major, one image), shared with error_scale.cpp.
// y[r][o] = b[o] + Σ_i W[o][i]·x[r][i]                     x [rows × in], W [out × in]
void ref_linear(const double* x, int rows, int in, const double* W, const double* b, int out, double* y);
// y[r] = (x[r] − mean)/sqrt(var + eps)·γ + β over n columns (biased variance)
void ref_layernorm(const double* x, int rows, int n, const double* gamma, const double* beta, double eps, double* y);
// One image's attention from its qkv [T × 3d]: scores and probs [H × T × T], heads [T × d].
void ref_attention(const VitShape& s, const double* qkv, double* scores, double* probs, double* heads);
// One image's patches [T × Pd] from its pixels (exact as doubles).
std::vector<double> ref_patches(const VitShape& s, const float* image);
double ref_gelu(double x);        // 0.5·x·(1 + erf(x/√2))
double ref_gelu_slope(double x);  // its derivative Φ(x) + x·φ(x)
