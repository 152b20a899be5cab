// cuda/transformer/gemm.h — the four GEMM operations of a layer as host calls, on either engine: FFMA on
// the CUDA cores (gemm_kernel.cuh vit_gemm) or 3xTF32 on the tensor cores (gemm_tc_kernel.cuh vit_gemm_tc),
// one tagged instantiation per operation, engine and tile. The instantiations are split over
// gemm_ln.cu, gemm_residual.cu (FFMA) and gemm_tc_ln.cu, gemm_tc_residual.cu (3xTF32), which compile in
// parallel.
#pragma once
#include <cuda_runtime.h>

#include <string>

namespace vit {

// C[M × N] = prologue(A)[M × K] · W[K × N] + bias, then the epilogue (kernels.cuh).
struct GemmArgs {
  const float* A;      // [M × K]
  const float* W;      // [K × N]
  const float* bias;   // [N]
  const float* R;      // [M × N], the residual (kBiasResidual)
  float* C;            // [M × N]
  int M, N, K;
  const float* gamma;  // [K], the LayerNorm prologue
  const float* beta;
  float eps;
  float* ln_out;       // [M × K] or nullptr
};

}  // namespace vit

enum class GemmOp { kLnQkv, kAttnProj, kLnFc1Gelu, kFc2 };
// fp32: float32 FFMA on the CUDA cores; tf32x3: float32-accurate products on the tensor cores; bf16:
// every GEMM's operands rounded to bfloat16, their products summed in float32 (the wgmma engine on a
// compute capability 9.0 device with an sm_90 build, else bf16_gemm_kernel, an untuned stand-in);
// LayerNorm, softmax, GELU, the residual stream and the head stay float32 on every engine.
enum class GemmEngine { kFp32, kTf32x3, kBf16 };
constexpr int kGemmEngines = 3;
constexpr int kFusedEngines = 2;  // fp32 and tf32x3 have the fused kernels of gemm_kernel.cuh / gemm_tc_kernel.cuh
const char* engine_name(GemmEngine e);
// "fp32", "tf32x3" or "bf16" -> the engine (a UserError for anything else).
GemmEngine engine_of(const std::string& name);
// The precision an engine's results are checked and compared at: "fp32" (fp32, tf32x3) or "bf16".
const char* engine_precision(GemmEngine e);
// How an engine flow keeps a GEMM's A operand (kernels.cuh store_operand): two TF32 parts of each
// float32 value side by side ([M × 2K] floats; tf32x3 on the engine), or bfloat16 ([M × K]; bf16).
enum class OperandForm { kSplitTf32, kBf16 };
constexpr int kGemmOps = 4;
// 128×128 (256 threads), 64×128 (128 threads) or 64×64 (64 threads) outputs per block.
enum class TileKind { kBig, kMid, kSmall };
constexpr int kTileM[3] = {128, 64, 64}, kTileN[3] = {128, 128, 64};  // gemm_kernel.cuh's TileBig, TileMid, TileSmall
const char* tile_name(TileKind t);
const char* gemm_op_name(GemmOp op);

// A checked launch (common/cuda_check.h CUDA_CHECK_LAUNCH); N and K must be multiples of the tile's.
void launch_gemm(GemmOp op, GemmEngine e, TileKind t, const vit::GemmArgs& a, cudaStream_t st);
// Resident blocks per SM of the operation's three tiles on the engine, from the runtime.
void gemm_occupancy(GemmOp op, GemmEngine e, int out[3]);

// One per file: launch_gemm picks.
void launch_gemm_ln(GemmOp op, TileKind t, const vit::GemmArgs& a, cudaStream_t st);
void launch_gemm_residual(GemmOp op, TileKind t, const vit::GemmArgs& a, cudaStream_t st);
void launch_gemm_tc_ln(GemmOp op, TileKind t, const vit::GemmArgs& a, cudaStream_t st);
void launch_gemm_tc_residual(GemmOp op, TileKind t, const vit::GemmArgs& a, cudaStream_t st);
void gemm_occupancy_ln(GemmOp op, int out[3]);
void gemm_occupancy_residual(GemmOp op, int out[3]);
void gemm_occupancy_tc_ln(GemmOp op, int out[3]);
void gemm_occupancy_tc_residual(GemmOp op, int out[3]);
