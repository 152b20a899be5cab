#include "transformer/forward.h"

#include <cmath>
#include <cstdlib>
#include <cstring>

#include "common/common.h"
#include "common/cuda_check.h"
#include "transformer/kernels.cuh"
namespace eng = mlp::gemm::sm90;  // the 3xTF32 flow's GEMMs (forward.h includes the engine)

using namespace vit;

namespace {

float* device_alloc(size_t floats, const char* what) {
  float* p = nullptr;
  cudaError_t err = cudaMalloc(&p, floats * sizeof(float));
  if (err != cudaSuccess) throw_cuda(err, (std::string("cudaMalloc of ") + what).c_str(), __FILE__, __LINE__);
  return p;
}

}  // namespace

const char* tile_name(TileKind t) {
  return t == TileKind::kBig ? "128x128" : t == TileKind::kMid ? "64x128" : "64x64";
}

const char* engine_name(GemmEngine e) { return e == GemmEngine::kFp32 ? "fp32" : "tf32x3"; }

GemmEngine engine_of(const std::string& name) {
  if (name == "fp32") return GemmEngine::kFp32;
  if (name == "tf32x3") return GemmEngine::kTf32x3;
  throw UserError("--gemm " + one_line(name) + ": want fp32 (CUDA-core FFMA) or tf32x3 (tensor cores, float32-accurate)");
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
  for (int e = 0; e < kGemmEngines; ++e)
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
  for (float* p : {params_, images_, xa_, xb_, qkv_, heads_, u_, pooled_, logits_, a2_, heads2_, u2_, wsplit_})
    if (p) cudaFree(p);  // a destructor does not throw: a failed free at exit is not acted upon
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
  engine_ = e;
#ifdef VIT_EMULATE
  const char* emu = std::getenv("VIT_EMU_SPLIT3");
  split_flow_ = e == GemmEngine::kTf32x3 && emu && !std::strcmp(emu, "1");
#else
  const char* mma = std::getenv("VIT_TF32X3_MMA");
  split_flow_ = e == GemmEngine::kTf32x3 && eng::compiled() && cc_ == 90 && !(mma && !std::strcmp(mma, "1"));
#endif
  if (split_flow_ && !wsplit_) make_split_weights();
}

// The weights' TF32 parts for the 3xTF32 flow, each Linear weight W [K × N] (device layout) as
// Bt [N × 2K]: Bt[n][k] = hi(W[k][n]), Bt[n][K + k] = lo(W[k][n]); and the split activations.
void VitForward::make_split_weights() {
  const VitShape& s = s_;
  const int d = s.d, m = s.mlp;
  const size_t per_layer = (size_t)3 * d * 2 * d + (size_t)d * 2 * d + (size_t)m * 2 * d + (size_t)d * 2 * m;
  std::vector<float> host(per_layer * s.layers);
  const auto layout = weight_layout(s);
  auto put = [&](size_t at, const std::string& name, int K, int N) {
    const float* W = host_params_.data() + tensor(layout, name).offset;
    for (int k = 0; k < K; ++k)
      for (int n = 0; n < N; ++n) mlp::split_tf32(W[(size_t)k * N + n], &host[at + (size_t)n * 2 * K + k], &host[at + (size_t)n * 2 * K + K + k]);
    return at + (size_t)N * 2 * K;
  };
  wsplit_ = device_alloc(host.size(), "the weights' TF32 parts");
  sw_.clear();
  for (int l = 0; l < s.layers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    const size_t base = per_layer * l, o_proj = put(base, p + "attn.qkv.weight", d, 3 * d),
                 o_fc1 = put(o_proj, p + "attn.proj.weight", d, d), o_fc2 = put(o_fc1, p + "mlp.fc1.weight", d, m);
    put(o_fc2, p + "mlp.fc2.weight", m, d);
    sw_.push_back({wsplit_ + base, wsplit_ + o_proj, wsplit_ + o_fc1, wsplit_ + o_fc2});
  }
  CUDA_CHECK(cudaMemcpy(wsplit_, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
  const size_t rows = (size_t)max_batch_ * s.tokens;
  a2_ = device_alloc(rows * 2 * d, "LayerNorm's TF32 parts");
  heads2_ = device_alloc(rows * 2 * d, "the heads' TF32 parts");
  u2_ = device_alloc(rows * 2 * m, "the MLP hidden's TF32 parts");
}

#ifndef VIT_EMULATE
namespace {
// The engine's 3xTF32 problem of a spec at M rows (K-major parts, ld 2K).
eng::Problem engine_problem(const VitForward::SplitSpec& sp, int M) {
  eng::Problem p{};
  p.prec = mlp::Precision::TF32;
  p.M = M, p.N = sp.N, p.K = sp.K;
  p.a = {sp.A, 2LL * sp.K, eng::Major::K};
  p.b = {sp.B, 2LL * sp.K, eng::Major::K};
  p.split3 = true;
  p.epi = sp.epi == 0 ? eng::Epilogue::Bias : sp.epi == 1 ? eng::Epilogue::BiasResidual : eng::Epilogue::BiasGeluSplit;
  p.C = sp.C, p.ldc = sp.ldc, p.bias = sp.bias, p.R = sp.R;
  return p;
}
}  // namespace
#endif

VitForward::SplitSpec VitForward::split_spec(GemmOp op, int layer) const {
  const LayerW& w = lw_[layer];
  const SplitW& sw = sw_[layer];
  const int d = s_.d, m = s_.mlp;
  switch (op) {
    case GemmOp::kLnQkv: return {a2_, sw.qkv, w.qkv_b, nullptr, qkv_, 3 * d, d, 3 * d, 0};
    case GemmOp::kAttnProj: return {heads2_, sw.proj, w.proj_b, xa_, xb_, d, d, d, 1};
    case GemmOp::kLnFc1Gelu: return {a2_, sw.fc1, w.fc1_b, nullptr, u2_, m, d, 2 * m, 2};
    default: return {u2_, sw.fc2, w.fc2_b, xb_, xa_, d, m, d, 1};
  }
}

void VitForward::prepare(int batch) {
  if (!split_flow_) return;
  for (int op = 0; op < kGemmOps; ++op) split_gemm((GemmOp)op, 0, batch * s_.tokens, nullptr, /*launch=*/false);
}

// One GEMM of the 3xTF32 flow: A's and the weight's parts through the engine's 3xTF32 product and the
// operation's epilogue. launch false (prepare): only the plan and the workspace.
void VitForward::split_gemm(GemmOp op, int layer, int M, cudaStream_t st, bool launch) {
  const SplitSpec sp = split_spec(op, layer);
#ifndef VIT_EMULATE
  eng::Problem p = engine_problem(sp, M);
  auto found = engine_plans_.find({(int)op, M});
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
    found = engine_plans_.emplace(std::make_pair((int)op, M), ep).first;
  }
  if (!launch) return;
  p.workspace = found->second.workspace, p.workspace_size = found->second.plan.workspace_bytes;
  eng::launch(p, found->second.plan, st);
#else
  if (!launch) return;
  const size_t n = (size_t)M * sp.N;
  VIT_LAUNCH(split3_gemm_kernel, (unsigned)((n + 127) / 128), 128, 0, st, sp.A, sp.B, sp.bias, sp.R, sp.C, M, sp.N, sp.K,
             sp.ldc, sp.epi);
  CUDA_CHECK_LAUNCH("split3_gemm_kernel");
#endif
}

// A layer of the 3xTF32 flow (set_engine says when it runs): LayerNorm as its own kernel, the
// GEMMs on the engine with their epilogues. join_taps: the checks read heads() and mlp_hidden(),
// which this flow keeps only split: the attention then writes its float32 heads too, and the MLP
// hidden's hi + lo are joined into mlp_hidden() (the value fc2 multiplies, within the tensor cores'
// reading of each part).
void VitForward::enqueue_layer_split(int l, int batch, cudaStream_t st, const ForwardTaps& tp, bool tap, bool join_taps) {
  const VitShape& s = s_;
  const int M = batch * s.tokens;
  const LayerW& w = lw_[l];
  const unsigned ln_blocks = (unsigned)((M + kLnSplitThreads / 32 - 1) / (kLnSplitThreads / 32));
  VIT_LAUNCH(ln_split_kernel, ln_blocks, kLnSplitThreads, 0, st, xa_, w.ln1_w, w.ln1_b, a2_, tap ? tp.ln1 : nullptr, M, s.d, s.eps);
  CUDA_CHECK_LAUNCH("ln_split_kernel");
  split_gemm(GemmOp::kLnQkv, l, M, st);
  // The float32 heads only for the checks (heads()): the projection reads their parts.
  VIT_LAUNCH(attention_kernel, dim3(s.heads, batch), attn_threads(s.tokens), attn_smem_bytes(s.tokens), st, qkv_,
             join_taps ? heads_ : nullptr, heads2_, tap ? tp.probs : nullptr, s.tokens, s.d, 1.0f / std::sqrt((float)s.head_dim));
  CUDA_CHECK_LAUNCH("attention_kernel");
  split_gemm(GemmOp::kAttnProj, l, M, st);
  VIT_LAUNCH(ln_split_kernel, ln_blocks, kLnSplitThreads, 0, st, xb_, w.ln2_w, w.ln2_b, a2_, tap ? tp.ln2 : nullptr, M, s.d, s.eps);
  CUDA_CHECK_LAUNCH("ln_split_kernel");
  split_gemm(GemmOp::kLnFc1Gelu, l, M, st);
  if (join_taps) {
    const size_t n = (size_t)M * s.mlp;
    VIT_LAUNCH(join_split_kernel, (unsigned)((n + 255) / 256), 256, 0, st, u2_, u_, M, s.mlp);
    CUDA_CHECK_LAUNCH("join_split_kernel");
  }
  split_gemm(GemmOp::kFc2, l, M, st);
}

std::string VitForward::tile_plan(int batch) const {
  if (split_flow_) {
#ifndef VIT_EMULATE
    std::string out = "tf32x3 on the wgmma engine (3xTF32 operands, LayerNorm its own kernel):";
    for (int w = 0; w < kGemmOps; ++w)
      out += std::string(w ? ", " : " ") + gemm_op_name((GemmOp)w) + "=" +
             eng::plan(engine_problem(split_spec((GemmOp)w, 0), batch * s_.tokens), sms_).describe;
    return out;
#else
    return "tf32x3, the 3xTF32 flow: ln1+qkv=split3_gemm_kernel (emulated engine), attn-proj+residual=split3_gemm_kernel, "
           "ln2+fc1+gelu=split3_gemm_kernel, fc2+residual=split3_gemm_kernel";
#endif
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
    if (split_flow_) {
      enqueue_layer_split(l, batch, st, tp, tap, tap && taps != nullptr);
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
