// cuda/transformer/gemm_launch.cuh — the launch and occupancy of one tagged GEMM (gemm_ln.cu and
// gemm_residual.cu instantiate it for their operations).
#pragma once
#include <string>

#include "common/common.h"
#include "common/cuda_check.h"
#include "transformer/gemm_tc_kernel.cuh"

namespace vit {

// The FFMA kernel (Tc = false) or the 3xTF32 one (Tc = true) of an operation at a tile.
template <class Op, class T, bool Tc>
void run_gemm(const GemmArgs& a, cudaStream_t st) {
  if (a.N % T::BN || a.K % T::BK) throw UserError(std::string(Op::kName) + ": N or K is not a multiple of the tile");
  const dim3 grid(a.N / T::BN, (a.M + T::BM - 1) / T::BM);
  if constexpr (Tc) VIT_LAUNCH((vit_gemm_tc<Op, T>), grid, T::kThreads, 0, st, a);
  else VIT_LAUNCH((vit_gemm<Op, T>), grid, T::kThreads, 0, st, a);
  CUDA_CHECK_LAUNCH(Op::kName);
}

template <class Op>
void gemm(TileKind t, const GemmArgs& a, cudaStream_t st) {
  switch (t) {
    case TileKind::kBig: run_gemm<Op, TileBig, false>(a, st); break;
    case TileKind::kMid: run_gemm<Op, TileMid, false>(a, st); break;
    default: run_gemm<Op, TileSmall, false>(a, st); break;
  }
}

template <class Op>
void gemm_tc(TileKind t, const GemmArgs& a, cudaStream_t st) {
  switch (t) {
    case TileKind::kBig: run_gemm<Op, TcBig, true>(a, st); break;
    case TileKind::kMid: run_gemm<Op, TcMid, true>(a, st); break;
    default: run_gemm<Op, TcSmall, true>(a, st); break;
  }
}

template <class Op>
void occupancy_of(int out[3]) {
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&out[0], vit_gemm<Op, TileBig>, TileBig::kThreads, 0));
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&out[1], vit_gemm<Op, TileMid>, TileMid::kThreads, 0));
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&out[2], vit_gemm<Op, TileSmall>, TileSmall::kThreads, 0));
}

template <class Op>
void occupancy_tc(int out[3]) {
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&out[0], vit_gemm_tc<Op, TcBig>, TcBig::kThreads, 0));
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&out[1], vit_gemm_tc<Op, TcMid>, TcMid::kThreads, 0));
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&out[2], vit_gemm_tc<Op, TcSmall>, TcSmall::kThreads, 0));
}

}  // namespace vit
