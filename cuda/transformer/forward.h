// cuda/transformer/forward.h — the forward pass on the device: the weights uploaded once (device
// layout), the activations for up to max_batch images, and the launch sequence of kernels.cuh
// (2 + 4·layers + 2 launches, all on one stream; capturable into a CUDA graph). Every CUDA call and
// every launch is checked (common/cuda_check.h: a CudaError naming the call).
#pragma once
#include <cuda_runtime.h>

#include <array>
#include <map>
#include <string>
#include <vector>

#include "kernels/gemm/sm90_engine.h"  // the 3xTF32 flow's plans
#include "transformer/gemm.h"
#include "transformer/model.h"

// The taps the checks read (device pointers sized for the batch, or nullptr): layer 0's two
// LayerNorm outputs and attention weights, the final LayerNorm's output.
struct ForwardTaps {
  float* ln1 = nullptr;    // [B·T × d]
  float* probs = nullptr;  // [B × H × T × T]
  float* ln2 = nullptr;    // [B·T × d]
  float* lnf = nullptr;    // [B·T × d]
};


class VitForward {
 public:
  // Uploads device_layout(file_params) and allocates every activation for max_batch images.
  VitForward(const VitShape& s, const std::vector<float>& file_params, int max_batch);
  ~VitForward();
  VitForward(const VitForward&) = delete;
  VitForward& operator=(const VitForward&) = delete;

  // The whole forward of `batch` images from d_images ([batch × image²], float32 p/255) to logits()
  // ([batch × C]). stop_after: -1 the whole forward; 0 after the embedding (x0 in x_a()); 1 after
  // layer 0 (its tensors left in the buffers below, before layer 1 overwrites them).
  void enqueue(const float* d_images, int batch, cudaStream_t stream, int stop_after = -1,
               const ForwardTaps* taps = nullptr);

  const VitShape& shape() const { return s_; }
  int max_batch() const { return max_batch_; }
  float* images() const { return images_; }   // an input buffer of max_batch images
  const float* logits() const { return logits_; }
  const float* x_a() const { return xa_; }    // a layer's input and output (x0, then x2)
  const float* x_b() const { return xb_; }    // after attention: x + o·Wo + bo
  const float* qkv() const { return qkv_; }   // [B·T × 3d]
  const float* heads() const { return heads_; }  // o, [B·T × d]
  const float* mlp_hidden() const { return u_; }  // GELU(fc1), [B·T × m]
  const float* pooled() const { return pooled_; }

  // The GEMM engine of the next enqueue() (fp32 FFMA by default; a captured graph keeps its own).
  // tf32x3 needs compute capability 8.0 (a UserError before). On a compute capability 9.0 device with
  // an sm_90 build, tf32x3 runs the 3xTF32 flow on the wgmma engine (cuda/kernels/gemm/): LayerNorm as
  // its own kernel, every GEMM's A operand kept as its two TF32 parts (kernels.cuh), the weights'
  // parts transposed once, the bias, residual and GELU in the engine's epilogues. Elsewhere tf32x3 is
  // the mma.sync kernels of gemm_tc_kernel.cuh with the LayerNorm prologue. VIT_TF32X3_MMA=1 keeps
  // the mma.sync kernels on a 9.0 device too (an A/B); under the CPU emulation VIT_EMU_SPLIT3=1 runs
  // the 3xTF32 flow with split3_gemm_kernel in the engine's place (its tests).
  void set_engine(GemmEngine e);
  GemmEngine engine() const { return engine_; }
  bool split_flow() const { return split_flow_; }
  // The engine's plans and workspace for `batch` (the 3xTF32 flow; a no-op otherwise): enqueue does
  // this itself, outside a stream capture; ForwardGraph calls it before capturing.
  void prepare(int batch);
  // GEMM `op` of `layer` in the 3xTF32 flow: its operands' parts ([rows × 2K] each), output, and epilogue.
  struct SplitSpec {
    const float *A, *B, *bias, *R;
    float* C;
    int N, K, ldc, epi;  // epi: 0 bias, 1 residual, 2 GELU split (split3_gemm_kernel's codes)
  };
  SplitSpec split_spec(GemmOp op, int layer) const;

  // The tile each GEMM runs with at `batch`: "fp32: ln1+qkv=128x128 (occupancy 2), ..." — tuned (below)
  // for the engine and batch when tune() ran, else the heuristic: the largest tile whose blocks fill
  // every SM to its occupancy once, else the smallest. VIT_TILE=big|mid|small forces one.
  std::string tile_plan(int batch) const;

  // Times every tile of each of layer 0's GEMMs at `batch` on the current engine (`reps` launches each,
  // from the buffers a forward left) and keeps the fastest whose output equals the heuristic tile's bit
  // for bit (each output's products are summed in the same order whatever the tile); a tile whose output
  // differs is never kept and counted. Needs a forward at `batch` first. Returns "op: tile ms, ...".
  struct TuneReport {
    std::string text;
    int mismatched = 0;
  };
  TuneReport tune(int batch, cudaStream_t stream, int reps = 5);

 private:
  void enqueue_layer_split(int l, int batch, cudaStream_t st, const ForwardTaps& tp, bool tap, bool join_taps);
  void split_gemm(GemmOp op, int layer, int M, cudaStream_t st, bool launch = true);
  void make_split_weights();
  TileKind choose(int batch, int which) const;
  TileKind heuristic(int batch, int which) const;
  vit::GemmArgs args_for(GemmOp op, int layer, int M, float* ln_out = nullptr) const;

  VitShape s_;
  int max_batch_ = 0, sms_ = 0, cc_major_ = 0;
  int occupancy_[kGemmEngines][kGemmOps][3] = {};  // [engine][op][tile]: resident blocks per SM
  GemmEngine engine_ = GemmEngine::kFp32;
  std::map<std::pair<int, int>, std::array<TileKind, kGemmOps>> tuned_;  // (engine, batch) -> each op's tile
  float* params_ = nullptr;
  // Device pointers of the weights, looked up once (enqueue does no name lookups).
  struct LayerW {
    const float *ln1_w, *ln1_b, *qkv_w, *qkv_b, *proj_w, *proj_b, *ln2_w, *ln2_b, *fc1_w, *fc1_b, *fc2_w, *fc2_b;
  };
  std::vector<LayerW> lw_;
  const float *patch_w_ = nullptr, *patch_b_ = nullptr, *pos_ = nullptr, *norm_w_ = nullptr, *norm_b_ = nullptr;
  const float *head_w_ = nullptr, *head_b_ = nullptr;
  float *images_ = nullptr, *xa_ = nullptr, *xb_ = nullptr, *qkv_ = nullptr, *heads_ = nullptr, *u_ = nullptr;
  float *pooled_ = nullptr, *logits_ = nullptr;
  // The 3xTF32 flow (split_flow_): A operands as two TF32 parts side by side, [rows × 2K] each.
  bool split_flow_ = false;
  int cc_ = 0;                     // compute capability, major·10 + minor
  std::vector<float> host_params_;  // the device layout, kept for the weights' parts
  float *a2_ = nullptr;             // [B·T × 2d]    LN1(x) or LN2(x_attn)
  float *heads2_ = nullptr;         // [B·T × 2d]    the heads' outputs
  float *u2_ = nullptr;             // [B·T × 2m]    GELU(fc1)
  float *wsplit_ = nullptr;         // every layer's weights transposed, [N × 2K] each
  struct SplitW {
    const float *qkv, *proj, *fc1, *fc2;  // [3d × 2d], [d × 2d], [m × 2d], [d × 2m]
  };
  std::vector<SplitW> sw_;
  // The engine's plan and workspace of each (operation, M), made at their first use outside a capture:
  // a plan's split-K tickets live in its own workspace (every launch leaves them zero, and another
  // plan's partials would overwrite them).
  struct EnginePlan {
    mlp::gemm::sm90::Plan plan;
    void* workspace = nullptr;
  };
  std::map<std::pair<int, int>, EnginePlan> engine_plans_;
};

// A CUDA graph of one enqueue() at a batch: captured once, launched per timed forward.
class ForwardGraph {
 public:
  ForwardGraph(VitForward& f, const float* d_images, int batch, cudaStream_t stream);
  ~ForwardGraph();
  ForwardGraph(const ForwardGraph&) = delete;
  ForwardGraph& operator=(const ForwardGraph&) = delete;
  void launch(cudaStream_t stream);

 private:
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};
