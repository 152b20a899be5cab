// cuda/transformer/forward.h — the forward pass on the device: the weights uploaded once (device
// layout), the activations for up to max_batch images, and the launch sequence of kernels.cuh
// (2 + 4·layers + 2 launches, all on one stream; capturable into a CUDA graph). Every CUDA call and
// every launch is checked (common/cuda_check.h: a CudaError naming the call).
#pragma once
#include <cuda_runtime.h>

#include <array>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/gemm/sm90_engine.h"  // the engine flows' plans
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
  // tf32x3 needs compute capability 8.0 (a UserError before). The engine flows (engine_flow()):
  //   tf32x3 on a compute capability 9.0 device with an sm_90 build: the 3xTF32 flow on the wgmma engine
  //     (cuda/kernels/gemm/): every GEMM's A operand kept as its two TF32 parts (kernels.cuh), the
  //     weights' parts transposed once, the bias, residual and GELU in the engine's epilogues.
  //     Elsewhere tf32x3 is the mma.sync kernels of gemm_tc_kernel.cuh with the LayerNorm prologue.
  //     VIT_TF32X3_MMA=1 keeps the mma.sync kernels on a 9.0 device too (an A/B); under the CPU
  //     emulation VIT_EMU_SPLIT3=1 runs the 3xTF32 flow with split3_gemm_kernel in the engine's place.
  //   bf16 everywhere: the same flow with bfloat16 operands ([M × K]) and weights; the wgmma engine
  //     where it runs, else bf16_gemm_kernel (the emulation; other GPUs: correct, not tuned).
  // In both LayerNorm runs as its own kernel (ln_operand_kernel) and the attention writes the
  // projection's operand.
  void set_engine(GemmEngine e);
  GemmEngine engine() const { return engine_; }
  bool engine_flow() const { return flow_ != Flow::kFused; }
  // The engine's plans and workspace for `batch` (the engine flows; a no-op otherwise): enqueue does
  // this itself, outside a stream capture; ForwardGraph calls it before capturing.
  void prepare(int batch);
  // GEMM `op` of `layer` in an engine flow: its operands in the flow's form (K-major: A [M × K] values,
  // the weight transposed [N × K] values), its output and epilogue.
  enum class Epi { kBias, kResidual, kGeluOperand };  // split3_gemm_kernel's and bf16_gemm_kernel's epi codes 0, 1, 2
  struct EngineSpec {
    const void *A, *B;
    const float *bias, *R;  // [N]; the residual [M × ldc] (kResidual)
    void* C;                // float32 [M × ldc]; kGeluOperand: the next GEMM's A operand, in the flow's form
    int N, K, ldc;
    Epi epi;
  };
  EngineSpec engine_spec(GemmOp op, int layer) const;

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
  enum class Flow { kFused, kSplitTf32, kBf16 };  // the fused kernels; the engine flows' operand forms
  void enqueue_layer_engine(int l, int batch, cudaStream_t st, const ForwardTaps& tp, bool tap, bool join_taps);
  void engine_gemm(GemmOp op, int layer, int M, cudaStream_t st, bool launch = true);
  void make_operand_buffers(Flow flow);
  bool on_wgmma_engine() const;  // the engine flow's GEMMs on the wgmma engine (else the stand-in kernels)
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
  // The engine flows: each GEMM's A operand and weight in the flow's form (gemm.h OperandForm).
  Flow flow_ = Flow::kFused;
  int cc_ = 0;                     // compute capability, major·10 + minor
  std::vector<float> host_params_;  // the device layout, kept for the weights' operand forms
  struct Operands {
    void* ln = nullptr;     // [B·T × d]  LN1(x) or LN2(x_attn)
    void* heads = nullptr;  // [B·T × d]  the heads' outputs
    void* u = nullptr;      // [B·T × m]  GELU(fc1)
    void* w = nullptr;      // every layer's weights transposed, [N × K] each
    struct Layer {
      const void *qkv, *proj, *fc1, *fc2;  // [3d × d], [d × d], [m × d], [d × m]
    };
    std::vector<Layer> layers;
  };
  Operands split_, bf16_;  // the 3xTF32 parts (each value two floats), bfloat16
  const Operands& operands() const { return flow_ == Flow::kBf16 ? bf16_ : split_; }
  // The engine's plan and workspace of each (operation, M), made at their first use outside a capture:
  // a plan's split-K tickets live in its own workspace (every launch leaves them zero, and another
  // plan's partials would overwrite them).
  struct EnginePlan {
    mlp::gemm::sm90::Plan plan;
    void* workspace = nullptr;
  };
  std::map<std::tuple<int, int, int>, EnginePlan> engine_plans_;  // (flow, operation, M)
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
