// cuda/transformer/error_scale.h — the float32 rounding bounds the checks hold the device's forward to,
// in the style of the MLP gate's (cuda/gate/entry_cases.cu forward_part: |W|-forward scales,
// γ_n = n·u, the probabilistic 4·√n·u), u = 2^-24.
//
// 1. One operation, from the device's own float32 inputs to it (rigorous to first order). Its float64
//    value y64 = op(x_f32) and its |·|-scale L (the magnitudes of every term that feeds each output):
//        |y_f32 − y64| ≤ D·u·L element by element (worst case, γ_D)      ‖y_f32 − y64‖₂/‖L‖₂ ≲ 4·√D·u
//    with D the operation's reduction length plus its few extra roundings:
//      linear y = x·Wᵀ + b             D = in + 1     L = |x|·|W|ᵀ + |b|
//      + residual r                     D = in + 2     L = |x|·|W|ᵀ + |b| + |r|
//      + GELU (erff: 2 ulp)             D = in + 1     L = |gelu'(h)|·(|x|·|W|ᵀ + |b|) + |h|
//      LayerNorm over n (two-pass)      D = n + 8      L = |γ|·(|x − μ| + mean|x|)/σ + |β|,  σ = √(var + ε)
//      softmax(c·q·kᵀ), max-subtracted  D = max(dh + 2, T + 10)
//                                                      L = P·(Ls + Σ_k P·Ls + 1 + |s − m| + Σ_k P·|s − m|),
//                                                      Ls = c·|q|·|k|ᵀ (expf: 2 ulp)
//      P·v                              D = T + 1      L = P·|v|
//      mean over T tokens of a LayerNorm  D = max(n + 8, T + 1)   L = mean_t (L_LN + |y|)
//    The embedding's pixels are exact (float32(p)/255 in both): D = Pd + 2, L = |P|·|Wpe|ᵀ + |bpe| + |pos|.
//    A GEMM of the bf16 engine (and its attention's q·kᵀ and P·v) rounds both operands to bfloat16 (unit roundoff u_op = 2^-8) before its
//    float32 products: each product x·w off by at most (2·u_op + u_op²)·|x·w|, so the linear rows'
//    worst-case D gains ρ = (2·u_op + u_op²)/u, and fc1's GELU, written as bfloat16, u_op/u more;
//    as independent zero-mean errors of standard deviation u_op each, their variance depth (the
//    normwise limit's and part 2's) gains 2·(u_op/u)² (+ (u_op/u)² for GELU's output). A float32
//    engine's u_op is 0: nothing changes.
//
// 2. The whole forward from the images (layer one's output, the logits). Carrying worst-case bounds
//    through the layers multiplies them by |W| at every GEMM (the |W|-forward scale grows ~10x per
//    GEMM here: ~1e12 at the logits, a vacuous bound), so the end-to-end checks use the probabilistic
//    model instead: every rounding an independent, zero-mean error, each operation adding variance
//    D·(u·L)² (its Higham–Mary √D·u·L as a standard deviation) and carrying its inputs' variances
//    through its squared Jacobian, R²_out = (J∘J)·R²_in + D·L² (first order; the covariances left
//    out). The checks hold ‖y_f32 − y64‖₂/‖u·R‖₂ ≤ 4 and max |y_f32 − y64|/(u·R) ≤ 8.
#pragma once
#include <vector>

#include "transformer/reference.h"

// One operation's float64 value and |·|-scale on some rows, and its depths: D for the worst case, and
// the variance's (the normwise limit 4·√D_var·u), which differ only where operands are rounded.
struct LocalBound {
  std::vector<double> ref, scale;
  double depth = 0;
  double var_depth = 0;  // 0: the same as depth
  double normwise_depth() const { return var_depth > 0 ? var_depth : depth; }
};

// The rounding of a GEMM's operands before its products, in units of float32's u (error_scale.h part 1):
// 0 for the float32 engines (fp32, tf32x3: float32-accurate products), 2^16 for bf16 (u_op = 2^-8).
struct OperandRounding {
  double rel = 0;  // u_op / u
  double worst_extra(bool rounded_out) const;  // ρ (+ u_op/u for an output rounded to the operands' form)
  double var_extra(bool rounded_out) const;    // 2·(u_op/u)² (+ (u_op/u)²)
};

LocalBound local_embed(const VitShape& s, const RefWeights& w, const std::vector<double>& patches);
LocalBound local_layernorm(const std::vector<double>& x, int rows, int n, const double* gamma, const double* beta,
                           double eps);
// y = x·Wᵀ + b (+ r when r is not null), or GELU(x·Wᵀ + b) with `gelu`; `op`: the GEMM's operand
// rounding (a GELU output then rounded likewise).
LocalBound local_linear(const std::vector<double>& x, int rows, int in, const double* W, const double* b, int out,
                        const std::vector<double>* residual = nullptr, bool gelu = false, OperandRounding op = {});
// One image's attention weights [H × T × T] from its qkv [T × 3d], and its heads [T × d] from given
// weights [H × T × T] and that qkv's v; `op`: the rounding of q and k, and of P and v, before their
// products (the bf16 engine's attention on the tensor cores).
LocalBound local_attention_probs(const VitShape& s, const double* qkv, OperandRounding op = {});
LocalBound local_attention_heads(const VitShape& s, const double* probs, const double* qkv, OperandRounding op = {});
// One image's pooled [d] = mean over tokens of LN(x) (x [T × d]).
LocalBound local_ln_pool(const VitShape& s, const double* x, const double* gamma, const double* beta);

// The end-to-end standard deviations R (in units of u) of every tensor of ImageTrace.
struct LayerRms {
  std::vector<double> ln1, qkv, scores, probs, heads, x_attn, ln2, fc1, u, x_out;
};
struct ImageRms {
  std::vector<double> x0;
  std::vector<LayerRms> layers;
  std::vector<double> lnf, pooled, logits;
};
// `op`: the operand rounding of the four GEMMs and the attention's two products (the head's GEMM is
// float32 on every engine).
void rms_image(const VitShape& s, const RefWeights& w, const ImageTrace& tr, ImageRms& r, OperandRounding op = {});

constexpr double kNormwiseSigmas = 4, kWorstSigmas = 8;  // the end-to-end limits, in units of u·R
