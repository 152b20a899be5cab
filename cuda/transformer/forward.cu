#include "transformer/forward.h"

#include <cmath>
#include <cstdlib>
#include <cstring>

#include "common/common.h"
#include "common/cuda_check.h"
#include "transformer/kernels.cuh"

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
  int dev = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  CUDA_CHECK(cudaDeviceGetAttribute(&sms_, cudaDevAttrMultiProcessorCount, dev));
  CUDA_CHECK(cudaDeviceGetAttribute(&cc_major_, cudaDevAttrComputeCapabilityMajor, dev));
  for (int e = 0; e < kGemmEngines; ++e)
    for (int op = 0; op < kGemmOps; ++op) gemm_occupancy((GemmOp)op, (GemmEngine)e, occupancy_[e][op]);
  const std::vector<float> dev_params = device_layout(s, file_params);
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
  for (float* p : {params_, images_, xa_, xb_, qkv_, heads_, u_, pooled_, logits_})
    if (p) cudaFree(p);  // a destructor does not throw: a failed free at exit is not acted upon
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
}

std::string VitForward::tile_plan(int batch) const {
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

  VIT_LAUNCH(patch_embed_kernel, batch, 256, (size_t)s.image * s.image * sizeof(float), st, d_images, patch_w_,
             patch_b_, pos_, xa_, s.image, s.patch, s.d);
  CUDA_CHECK_LAUNCH("patch_embed_kernel");
  if (stop_after == 0) return;

  const float scale = 1.0f / std::sqrt((float)s.head_dim);
  for (int l = 0; l < s.layers; ++l) {
    const bool tap = l == 0;
    launch_gemm(GemmOp::kLnQkv, engine_, choose(batch, 0), args_for(GemmOp::kLnQkv, l, M, tap ? tp.ln1 : nullptr), st);
    float* probs = tap ? tp.probs : nullptr;
    VIT_LAUNCH(attention_kernel, dim3(s.heads, batch), kAttnThreads, 0, st, qkv_, heads_, probs, s.tokens, s.d, scale);
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
  const int n = batch * s.classes;
  VIT_LAUNCH(head_kernel, (n + 255) / 256, 256, 0, st, pooled_, head_w_, head_b_, logits_, batch, s.d, s.classes);
  CUDA_CHECK_LAUNCH("head_kernel");
}

ForwardGraph::ForwardGraph(VitForward& f, const float* d_images, int batch, cudaStream_t stream) {
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
