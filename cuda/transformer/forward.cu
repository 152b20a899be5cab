#include "transformer/forward.h"

#include <cuda_bf16.h>

#include <cmath>
#include <cstdlib>
#include <cstring>

#include "common/common.h"
#include "common/cuda_check.h"
#include "transformer/kernels.cuh"
namespace eng = mlp::gemm::sm90;  // the engine flows' GEMMs (forward.h includes the engine)

using namespace vit;

namespace {

void* device_alloc_bytes(size_t bytes, const char* what) {
  void* p = nullptr;
  cudaError_t err = cudaMalloc(&p, bytes);
  if (err != cudaSuccess) throw_cuda(err, (std::string("cudaMalloc of ") + what).c_str(), __FILE__, __LINE__);
  return p;
}

float* device_alloc(size_t floats, const char* what) {
  return static_cast<float*>(device_alloc_bytes(floats * sizeof(float), what));
}

}  // namespace

const char* tile_name(TileKind t) {
  return t == TileKind::kBig ? "128x128" : t == TileKind::kMid ? "64x128" : "64x64";
}

const char* engine_name(GemmEngine e) {
  return e == GemmEngine::kFp32 ? "fp32" : e == GemmEngine::kTf32x3 ? "tf32x3" : "bf16";
}

const char* engine_precision(GemmEngine e) { return e == GemmEngine::kBf16 ? "bf16" : "fp32"; }

GemmEngine engine_of(const std::string& name) {
  if (name == "fp32") return GemmEngine::kFp32;
  if (name == "tf32x3") return GemmEngine::kTf32x3;
  if (name == "bf16") return GemmEngine::kBf16;
  throw UserError("--gemm " + one_line(name) +
                  ": want fp32 (CUDA-core FFMA), tf32x3 (tensor cores, float32-accurate) or bf16 (bfloat16 operands)");
}

void launch_gemm(GemmOp op, GemmEngine e, TileKind t, const GemmArgs& a, cudaStream_t st) {
  const bool ln = op == GemmOp::kLnQkv || op == GemmOp::kLnFc1Gelu;
  if (e == GemmEngine::kFp32) ln ? launch_gemm_ln(op, t, a, st) : launch_gemm_residual(op, t, a, st);
  else ln ? launch_gemm_tc_ln(op, t, a, st) : launch_gemm_tc_residual(op, t, a, st);
}

void gemm_occupancy(GemmOp op, GemmEngine e, int out[3]) {
  const bool ln = op == GemmOp::kLnQkv || op == GemmOp::kLnFc1Gelu;
  if (e == GemmEngine::kFp32) ln ? gemm_occupancy_ln(op, out) : gemm_occupancy_residual(op, out);
  else ln ? gemm_occupancy_tc_ln(op, out) : gemm_occupancy_tc_residual(op, out);
}

VitForward::VitForward(const VitShape& s, const std::vector<float>& file_params, int max_batch)
    : s_(s), max_batch_(max_batch) {
  const auto why = unsupported_reasons(s);
  if (!why.empty()) throw UserError("our kernels cannot run this config: " + why[0]);
  if (file_params.size() != n_params(s)) throw UserError("weights: wrong parameter count");
  if (patch_embed_smem_bytes(s.image, s.patch_dim, s.d) > 48 * 1024)  // the default dynamic shared memory limit
    throw UserError("our kernels cannot run this config: the patch embedding stages the image and its weight (" +
                    std::to_string(patch_embed_smem_bytes(s.image, s.patch_dim, s.d)) + " bytes) in at most 48 KiB");
  int dev = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  CUDA_CHECK(cudaDeviceGetAttribute(&sms_, cudaDevAttrMultiProcessorCount, dev));
  CUDA_CHECK(cudaDeviceGetAttribute(&cc_major_, cudaDevAttrComputeCapabilityMajor, dev));
#ifndef VIT_EMULATE
  int cc_minor = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&cc_minor, cudaDevAttrComputeCapabilityMinor, dev));
  cc_ = cc_major_ * 10 + cc_minor;
#else
  cc_ = cc_major_ * 10;
#endif
  for (int e = 0; e < kFusedEngines; ++e)
    for (int op = 0; op < kGemmOps; ++op) gemm_occupancy((GemmOp)op, (GemmEngine)e, occupancy_[e][op]);
  host_params_ = device_layout(s, file_params);
  const std::vector<float>& dev_params = host_params_;
  params_ = device_alloc(dev_params.size(), "the weights");
  CUDA_CHECK(cudaMemcpy(params_, dev_params.data(), dev_params.size() * sizeof(float), cudaMemcpyHostToDevice));
  const auto layout = weight_layout(s);
  auto P = [&](const std::string& name) -> const float* { return params_ + tensor(layout, name).offset; };
  patch_w_ = P("patch.weight"); patch_b_ = P("patch.bias"); pos_ = P("pos");
  norm_w_ = P("norm.weight"); norm_b_ = P("norm.bias"); head_w_ = P("head.weight"); head_b_ = P("head.bias");
  for (int l = 0; l < s.layers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    lw_.push_back({P(p + "ln1.weight"), P(p + "ln1.bias"), P(p + "attn.qkv.weight"), P(p + "attn.qkv.bias"),
                   P(p + "attn.proj.weight"), P(p + "attn.proj.bias"), P(p + "ln2.weight"), P(p + "ln2.bias"),
                   P(p + "mlp.fc1.weight"), P(p + "mlp.fc1.bias"), P(p + "mlp.fc2.weight"), P(p + "mlp.fc2.bias")});
  }
  const size_t rows = (size_t)max_batch * s.tokens;
  images_ = device_alloc((size_t)max_batch * s.image * s.image, "the images");
  xa_ = device_alloc(rows * s.d, "x");
  xb_ = device_alloc(rows * s.d, "x after attention");
  qkv_ = device_alloc(rows * 3 * s.d, "qkv");
  heads_ = device_alloc(rows * s.d, "the heads' outputs");
  u_ = device_alloc(rows * s.mlp, "the MLP hidden");
  pooled_ = device_alloc((size_t)max_batch * s.d, "pooled");
  logits_ = device_alloc((size_t)max_batch * s.classes, "logits");
}

VitForward::~VitForward() {
  // A destructor does not throw: a failed free at exit is not acted upon.
  for (float* p : {params_, images_, xa_, xb_, qkv_, heads_, u_, pooled_, logits_})
    if (p) cudaFree(p);
  for (const Operands* o : {&split_, &bf16_})
    for (void* p : {o->ln, o->heads, o->u, o->w})
      if (p) cudaFree(p);
  for (auto& kv : engine_plans_)
    if (kv.second.workspace) cudaFree(kv.second.workspace);
}

GemmArgs VitForward::args_for(GemmOp op, int layer, int M, float* ln_out) const {
  const LayerW& w = lw_[layer];
  const VitShape& s = s_;
  GemmArgs a{};
  a.M = M;
  a.eps = s.eps;
  a.ln_out = ln_out;
  switch (op) {
    case GemmOp::kLnQkv:  // qkv = LN1(x)·Wqkv + bqkv
      a.A = xa_; a.W = w.qkv_w; a.bias = w.qkv_b; a.C = qkv_; a.N = 3 * s.d; a.K = s.d;
      a.gamma = w.ln1_w; a.beta = w.ln1_b;
      break;
    case GemmOp::kAttnProj:  // x_attn = x + o·Wo + bo
      a.A = heads_; a.W = w.proj_w; a.bias = w.proj_b; a.R = xa_; a.C = xb_; a.N = s.d; a.K = s.d;
      break;
    case GemmOp::kLnFc1Gelu:  // u = GELU(LN2(x_attn)·W1 + b1)
      a.A = xb_; a.W = w.fc1_w; a.bias = w.fc1_b; a.C = u_; a.N = s.mlp; a.K = s.d;
      a.gamma = w.ln2_w; a.beta = w.ln2_b;
      break;
    default:  // x = x_attn + u·W2 + b2, over the layer's input
      a.A = u_; a.W = w.fc2_w; a.bias = w.fc2_b; a.R = xb_; a.C = xa_; a.N = s.d; a.K = s.mlp;
      break;
  }
  return a;
}

TileKind VitForward::choose(int batch, int which) const {
  if (const char* force = std::getenv("VIT_TILE")) {
    if (!std::strcmp(force, "big")) return TileKind::kBig;
    if (!std::strcmp(force, "mid")) return TileKind::kMid;
    if (!std::strcmp(force, "small")) return TileKind::kSmall;
  }
  auto it = tuned_.find({(int)engine_, batch});
  if (it != tuned_.end()) return it->second[which];
  return heuristic(batch, which);
}

TileKind VitForward::heuristic(int batch, int which) const {
  const int M = batch * s_.tokens, n[kGemmOps] = {3 * s_.d, s_.d, s_.mlp, s_.d}, N = n[which];
  // The largest tile whose blocks fill every SM to its occupancy at least once (a full first wave);
  // else the smallest (the most blocks).
  for (int t = 0; t < 2; ++t) {
    const long long blocks = (long long)((M + kTileM[t] - 1) / kTileM[t]) * (N / kTileN[t]);
    if (blocks >= (long long)sms_ * std::max(1, occupancy_[(int)engine_][which][t])) return (TileKind)t;
  }
  return TileKind::kSmall;
}

void VitForward::set_engine(GemmEngine e) {
  if (e == GemmEngine::kTf32x3 && cc_major_ < 8)
    throw UserError("--gemm tf32x3 needs TF32 tensor cores (compute capability 8.0 or later)");
  if (e == GemmEngine::kBf16 && cc_major_ < 8)
    throw UserError("--gemm bf16 needs BF16 tensor cores (compute capability 8.0 or later)");
  engine_ = e;
#ifdef VIT_EMULATE
  const char* emu = std::getenv("VIT_EMU_SPLIT3");
  const bool split = e == GemmEngine::kTf32x3 && emu && !std::strcmp(emu, "1");
#else
  const char* mma = std::getenv("VIT_TF32X3_MMA");
  const bool split = e == GemmEngine::kTf32x3 && eng::compiled() && cc_ == 90 && !(mma && !std::strcmp(mma, "1"));
#endif
  flow_ = e == GemmEngine::kBf16 ? Flow::kBf16 : split ? Flow::kSplitTf32 : Flow::kFused;
  if (flow_ != Flow::kFused && !operands().w) make_operand_buffers(flow_);
}

bool VitForward::on_wgmma_engine() const {
#ifdef VIT_EMULATE
  return false;
#else
  return flow_ == Flow::kSplitTf32 || (flow_ == Flow::kBf16 && eng::compiled() && cc_ == 90);
#endif
}

// The weights and activations of an engine flow, in its operand form: each Linear weight W [K × N]
// (device layout) as Bt [N × K] values, K-major (the 3xTF32 parts: Bt[n][k] = hi(W[k][n]),
// Bt[n][K + k] = lo(W[k][n]); bfloat16: Bt[n][k] = W[k][n] rounded to nearest even).
void VitForward::make_operand_buffers(Flow flow) {
  const VitShape& s = s_;
  const int d = s.d, m = s.mlp;
  const bool split = flow == Flow::kSplitTf32;
  const size_t vals = split ? 2 : 1, elem = split ? sizeof(float) : sizeof(__nv_bfloat16), per_value = vals * elem;
  const size_t per_layer = (size_t)3 * d * d + (size_t)d * d + (size_t)m * d + (size_t)d * m;  // values
  std::vector<float> hs(split ? per_layer * s.layers * 2 : 0);
  std::vector<__nv_bfloat16> hb(split ? 0 : per_layer * s.layers);
  const auto layout = weight_layout(s);
  auto put = [&](size_t at, const std::string& name, int K, int N) {  // at: in values
    const float* W = host_params_.data() + tensor(layout, name).offset;
    for (int k = 0; k < K; ++k)
      for (int n = 0; n < N; ++n) {
        const float w = W[(size_t)k * N + n];
        if (split) mlp::split_tf32(w, &hs[2 * at + (size_t)n * 2 * K + k], &hs[2 * at + (size_t)n * 2 * K + K + k]);
        else hb[at + (size_t)n * K + k] = __float2bfloat16_rn(w);
      }
    return at + (size_t)N * K;
  };
  Operands& o = split ? split_ : bf16_;
  o.w = device_alloc_bytes(per_layer * s.layers * per_value, split ? "the weights' TF32 parts" : "the weights in bfloat16");
  char* base = static_cast<char*>(o.w);
  o.layers.clear();
  for (int l = 0; l < s.layers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    const size_t b0 = per_layer * l, b1 = put(b0, p + "attn.qkv.weight", d, 3 * d), b2 = put(b1, p + "attn.proj.weight", d, d),
                 b3 = put(b2, p + "mlp.fc1.weight", d, m);
    put(b3, p + "mlp.fc2.weight", m, d);
    o.layers.push_back({base + b0 * per_value, base + b1 * per_value, base + b2 * per_value, base + b3 * per_value});
  }
  CUDA_CHECK(cudaMemcpy(o.w, split ? (const void*)hs.data() : (const void*)hb.data(), per_layer * s.layers * per_value,
                        cudaMemcpyHostToDevice));
  const size_t rows = (size_t)max_batch_ * s.tokens;
  o.ln = device_alloc_bytes(rows * d * per_value, "LayerNorm's operand");
  o.heads = device_alloc_bytes(rows * d * per_value, "the heads' operand");
  o.u = device_alloc_bytes(rows * m * per_value, "the MLP hidden's operand");
}

#ifndef VIT_EMULATE
namespace {
// The engine's problem of a spec at M rows: 3xTF32 (the parts K-major, ld 2K) or BF16 (ld K).
eng::Problem engine_problem(const VitForward::EngineSpec& sp, int M, bool bf16) {
  using Epi = VitForward::Epi;
  eng::Problem p{};
  p.prec = bf16 ? mlp::Precision::BF16 : mlp::Precision::TF32;
  p.M = M, p.N = sp.N, p.K = sp.K;
  const long long ld = bf16 ? sp.K : 2LL * sp.K;
  p.a = {sp.A, ld, eng::Major::K};
  p.b = {sp.B, ld, eng::Major::K};
  p.split3 = !bf16;
  p.epi = sp.epi == Epi::kBias ? eng::Epilogue::Bias
          : sp.epi == Epi::kResidual ? eng::Epilogue::BiasResidual
          : bf16 ? eng::Epilogue::BiasGeluBf16 : eng::Epilogue::BiasGeluSplit;
  if (p.epi == eng::Epilogue::BiasGeluBf16) p.c_bf16 = static_cast<__nv_bfloat16*>(sp.C);
  else p.C = static_cast<float*>(sp.C);
  p.ldc = sp.ldc, p.bias = sp.bias, p.R = sp.R;
  return p;
}
}  // namespace
#endif

VitForward::EngineSpec VitForward::engine_spec(GemmOp op, int layer) const {
  const LayerW& w = lw_[layer];
  const Operands& o = operands();
  const Operands::Layer& ow = o.layers[layer];
  const int d = s_.d, m = s_.mlp, u_ld = flow_ == Flow::kBf16 ? m : 2 * m;
  switch (op) {
    case GemmOp::kLnQkv: return {o.ln, ow.qkv, w.qkv_b, nullptr, qkv_, 3 * d, d, 3 * d, Epi::kBias};
    case GemmOp::kAttnProj: return {o.heads, ow.proj, w.proj_b, xa_, xb_, d, d, d, Epi::kResidual};
    case GemmOp::kLnFc1Gelu: return {o.ln, ow.fc1, w.fc1_b, nullptr, o.u, m, d, u_ld, Epi::kGeluOperand};
    default: return {o.u, ow.fc2, w.fc2_b, xb_, xa_, d, m, d, Epi::kResidual};
  }
}

void VitForward::prepare(int batch) {
  if (!on_wgmma_engine()) return;
  for (int op = 0; op < kGemmOps; ++op) engine_gemm((GemmOp)op, 0, batch * s_.tokens, nullptr, /*launch=*/false);
}

// One GEMM of an engine flow: A's and the weight's operands through the engine's product (3xTF32 or
// BF16) and the operation's epilogue, or the stand-in kernel where the engine does not run.
// launch false (prepare): only the engine's plan and workspace.
void VitForward::engine_gemm(GemmOp op, int layer, int M, cudaStream_t st, bool launch) {
  const EngineSpec sp = engine_spec(op, layer);
  const bool bf16 = flow_ == Flow::kBf16;
  if (on_wgmma_engine()) {
#ifndef VIT_EMULATE
    eng::Problem p = engine_problem(sp, M, bf16);
    const auto key = std::make_tuple((int)flow_, (int)op, M);
    auto found = engine_plans_.find(key);
    if (found == engine_plans_.end()) {
      cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
      if (launch) CUDA_CHECK(cudaStreamIsCapturing(st, &cap));
      if (cap != cudaStreamCaptureStatusNone)
        throw UserError("the GEMM engine's plan would be made inside a graph capture: call VitForward::prepare first");
      EnginePlan ep;
      ep.plan = eng::plan(p, sms_);
      if (ep.plan.workspace_bytes) {
        CUDA_CHECK(cudaMalloc(&ep.workspace, ep.plan.workspace_bytes));
        CUDA_CHECK(cudaMemset(ep.workspace, 0, ep.plan.workspace_bytes));  // split-K's tickets start at zero
      }
      found = engine_plans_.emplace(key, ep).first;
    }
    if (!launch) return;
    p.workspace = found->second.workspace, p.workspace_size = found->second.plan.workspace_bytes;
    eng::launch(p, found->second.plan, st);
    return;
#endif
  }
  if (!launch) return;
  const size_t n = (size_t)M * sp.N;
  const unsigned blocks = (unsigned)((n + 127) / 128);
  if (bf16) {
    VIT_LAUNCH(bf16_gemm_kernel, blocks, 128, 0, st, static_cast<const __nv_bfloat16*>(sp.A),
               static_cast<const __nv_bfloat16*>(sp.B), sp.bias, sp.R, sp.C, M, sp.N, sp.K, sp.ldc, (int)sp.epi);
    CUDA_CHECK_LAUNCH("bf16_gemm_kernel");
  } else {
    VIT_LAUNCH(split3_gemm_kernel, blocks, 128, 0, st, static_cast<const float*>(sp.A), static_cast<const float*>(sp.B),
               sp.bias, sp.R, static_cast<float*>(sp.C), M, sp.N, sp.K, sp.ldc, (int)sp.epi);
    CUDA_CHECK_LAUNCH("split3_gemm_kernel");
  }
}

// A layer of an engine flow (set_engine says when it runs): LayerNorm as its own kernel, the GEMMs on
// the engine with their epilogues. join_taps: the checks read heads() and mlp_hidden(), which this
// flow keeps only in its operand form: the attention then writes its float32 heads too, and the MLP
// hidden's operand is read back into mlp_hidden() (the value fc2 multiplies: hi + lo, within the
// tensor cores' reading of each part; the bfloat16 value).
void VitForward::enqueue_layer_engine(int l, int batch, cudaStream_t st, const ForwardTaps& tp, bool tap, bool join_taps) {
  const VitShape& s = s_;
  const int M = batch * s.tokens;
  const LayerW& w = lw_[l];
  const Operands& o = operands();
  const bool bf16 = flow_ == Flow::kBf16;
  const unsigned ln_blocks = (unsigned)((M + kLnOperandThreads / 32 - 1) / (kLnOperandThreads / 32));
  auto layernorm = [&](const float* x, const float* g, const float* b, float* ln_tap) {
    if (bf16) VIT_LAUNCH(ln_operand_kernel<OperandForm::kBf16>, ln_blocks, kLnOperandThreads, 0, st, x, g, b, o.ln, ln_tap, M, s.d, s.eps);
    else VIT_LAUNCH(ln_operand_kernel<OperandForm::kSplitTf32>, ln_blocks, kLnOperandThreads, 0, st, x, g, b, o.ln, ln_tap, M, s.d, s.eps);
    CUDA_CHECK_LAUNCH("ln_operand_kernel");
  };
  layernorm(xa_, w.ln1_w, w.ln1_b, tap ? tp.ln1 : nullptr);
  engine_gemm(GemmOp::kLnQkv, l, M, st);
  // The float32 heads only for the checks (heads()): the projection reads their operand.
  const float scale = 1.0f / std::sqrt((float)s.head_dim);
  float* heads32 = join_taps ? heads_ : nullptr;
  float* probs = tap ? tp.probs : nullptr;
  if (bf16)  // on the tensor cores, q, k, P and v rounded to bfloat16 (the bf16 engine's bounds allow for it)
    VIT_LAUNCH(attention_bf16_kernel, dim3(s.heads, batch), kAttnMmaThreads, 0, st, qkv_, heads32,
               static_cast<__nv_bfloat16*>(o.heads), probs, s.tokens, s.d, scale);
  else
    VIT_LAUNCH(attention_kernel, dim3(s.heads, batch), attn_threads(s.tokens), attn_smem_bytes(s.tokens), st, qkv_, heads32,
               static_cast<float*>(o.heads), probs, s.tokens, s.d, scale);
  CUDA_CHECK_LAUNCH("attention_kernel");
  engine_gemm(GemmOp::kAttnProj, l, M, st);
  layernorm(xb_, w.ln2_w, w.ln2_b, tap ? tp.ln2 : nullptr);
  engine_gemm(GemmOp::kLnFc1Gelu, l, M, st);
  if (join_taps) {
    const size_t n = (size_t)M * s.mlp;
    if (bf16) VIT_LAUNCH(join_operand_kernel<OperandForm::kBf16>, (unsigned)((n + 255) / 256), 256, 0, st, o.u, u_, M, s.mlp);
    else VIT_LAUNCH(join_operand_kernel<OperandForm::kSplitTf32>, (unsigned)((n + 255) / 256), 256, 0, st, o.u, u_, M, s.mlp);
    CUDA_CHECK_LAUNCH("join_operand_kernel");
  }
  engine_gemm(GemmOp::kFc2, l, M, st);
}

std::string VitForward::tile_plan(int batch) const {
  if (flow_ != Flow::kFused) {
    const bool bf16 = flow_ == Flow::kBf16;
    const std::string what = bf16 ? "bf16, the bfloat16 flow (bfloat16 operands, LayerNorm its own kernel)"
                                  : "tf32x3, the 3xTF32 flow (3xTF32 operands, LayerNorm its own kernel)";
    std::string out;
#ifndef VIT_EMULATE
    if (on_wgmma_engine()) {
      out = what + " on the wgmma engine:";
      for (int w = 0; w < kGemmOps; ++w)
        out += std::string(w ? ", " : " ") + gemm_op_name((GemmOp)w) + "=" +
               eng::plan(engine_problem(engine_spec((GemmOp)w, 0), batch * s_.tokens, bf16), sms_).describe;
      return out;
    }
#endif
    const char* kernel = bf16 ? "bf16_gemm_kernel" : "split3_gemm_kernel";
    out = what + " on " + kernel + ", one thread an output (no wgmma engine here: correct, not tuned):";
    for (int w = 0; w < kGemmOps; ++w) out += std::string(w ? ", " : " ") + gemm_op_name((GemmOp)w) + "=" + kernel;
    return out;
  }
  const bool tuned = tuned_.count({(int)engine_, batch}) > 0;
  std::string out = std::string(engine_name(engine_)) + (tuned ? " (tuned):" : ":");
  for (int w = 0; w < kGemmOps; ++w) {
    const TileKind t = choose(batch, w);
    out += std::string(w ? ", " : " ") + gemm_op_name((GemmOp)w) + "=" + tile_name(t) + " (occupancy " +
           std::to_string(occupancy_[(int)engine_][w][(int)t]) + ")";
  }
  return out;
}

void VitForward::enqueue(const float* d_images, int batch, cudaStream_t st, int stop_after, const ForwardTaps* taps) {
  if (batch < 1 || batch > max_batch_) throw UserError("batch " + std::to_string(batch) + " is outside [1, max batch]");
  const VitShape& s = s_;
  const int M = batch * s.tokens;
  const ForwardTaps none;
  const ForwardTaps& tp = taps ? *taps : none;

  VIT_LAUNCH(patch_embed_kernel, batch, s.d, patch_embed_smem_bytes(s.image, s.patch_dim, s.d), st, d_images, patch_w_,
             patch_b_, pos_, xa_, s.image, s.patch, s.d);
  CUDA_CHECK_LAUNCH("patch_embed_kernel");
  if (stop_after == 0) return;

  const float scale = 1.0f / std::sqrt((float)s.head_dim);
  for (int l = 0; l < s.layers; ++l) {
    const bool tap = l == 0;
    if (flow_ != Flow::kFused) {
      enqueue_layer_engine(l, batch, st, tp, tap, tap && taps != nullptr);
      if (stop_after == l + 1) return;
      continue;
    }
    launch_gemm(GemmOp::kLnQkv, engine_, choose(batch, 0), args_for(GemmOp::kLnQkv, l, M, tap ? tp.ln1 : nullptr), st);
    float* probs = tap ? tp.probs : nullptr;
    VIT_LAUNCH(attention_kernel, dim3(s.heads, batch), attn_threads(s.tokens), attn_smem_bytes(s.tokens), st, qkv_, heads_,
               nullptr, probs, s.tokens, s.d, scale);
    CUDA_CHECK_LAUNCH("attention_kernel");
    launch_gemm(GemmOp::kAttnProj, engine_, choose(batch, 1), args_for(GemmOp::kAttnProj, l, M), st);
    launch_gemm(GemmOp::kLnFc1Gelu, engine_, choose(batch, 2), args_for(GemmOp::kLnFc1Gelu, l, M, tap ? tp.ln2 : nullptr),
                st);
    launch_gemm(GemmOp::kFc2, engine_, choose(batch, 3), args_for(GemmOp::kFc2, l, M), st);
    if (stop_after == l + 1) return;
  }

  float* lnf = tp.lnf;
  VIT_LAUNCH(final_ln_pool_kernel, batch, kPoolThreads, 0, st, xa_, norm_w_, norm_b_, pooled_, lnf, s.tokens, s.d, s.eps);
  CUDA_CHECK_LAUNCH("final_ln_pool_kernel");
  VIT_LAUNCH(head_kernel, (batch + kHeadImages - 1) / kHeadImages, kHeadThreads, head_smem_bytes(s.d), st, pooled_, head_w_,
             head_b_, logits_, batch, s.d, s.classes);
  CUDA_CHECK_LAUNCH("head_kernel");
}

ForwardGraph::ForwardGraph(VitForward& f, const float* d_images, int batch, cudaStream_t stream) {
  f.prepare(batch);
  CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  try {
    f.enqueue(d_images, batch, stream);
  } catch (...) {
    cudaGraph_t broken = nullptr;
    cudaStreamEndCapture(stream, &broken);  // ends the capture; the error already thrown is the one reported
    if (broken) cudaGraphDestroy(broken);
    throw;
  }
  CUDA_CHECK(cudaStreamEndCapture(stream, &graph_));
  CUDA_CHECK(cudaGraphInstantiate(&exec_, graph_, 0));
}

ForwardGraph::~ForwardGraph() {
  if (exec_) cudaGraphExecDestroy(exec_);
  if (graph_) cudaGraphDestroy(graph_);
}

void ForwardGraph::launch(cudaStream_t stream) { CUDA_CHECK(cudaGraphLaunch(exec_, stream)); }
