// cuda/transformer/gemm.h — the four GEMM operations of a layer (kernels.cuh vit_gemm, one tagged
// instantiation each per tile) as host calls. Their instantiations are split over gemm_ln.cu and
// gemm_residual.cu so that the two compile in parallel.
#pragma once
#include <cuda_runtime.h>

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
constexpr int kGemmOps = 4;
// 128×128 (256 threads), 64×128 (128 threads) or 64×64 (64 threads) outputs per block.
enum class TileKind { kBig, kMid, kSmall };
constexpr int kTileM[3] = {128, 64, 64}, kTileN[3] = {128, 128, 64};  // gemm_kernel.cuh's TileBig, TileMid, TileSmall
const char* tile_name(TileKind t);
const char* gemm_op_name(GemmOp op);

// A checked launch (common/cuda_check.h CUDA_CHECK_LAUNCH); N and K must be multiples of the tile's.
void launch_gemm(GemmOp op, TileKind t, const vit::GemmArgs& a, cudaStream_t st);
// Resident blocks per SM of the operation's three tiles, from the runtime.
void gemm_occupancy(GemmOp op, int out[3]);

// gemm_ln.cu (kLnQkv, kLnFc1Gelu) and gemm_residual.cu (kAttnProj, kFc2); launch_gemm picks.
void launch_gemm_ln(GemmOp op, TileKind t, const vit::GemmArgs& a, cudaStream_t st);
void launch_gemm_residual(GemmOp op, TileKind t, const vit::GemmArgs& a, cudaStream_t st);
void gemm_occupancy_ln(GemmOp op, int out[3]);
void gemm_occupancy_residual(GemmOp op, int out[3]);
