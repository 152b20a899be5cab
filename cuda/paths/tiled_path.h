// cuda/paths/tiled_path.h — the tiled paths' launches (cuda/kernels/tiled.cuh, tiled_mma.cuh) for
// callers other than the paths themselves: build/gemm_check (cuda/tools/gemm_check.cu) runs each
// GEMM at forced tile shapes and splits, at each precision, against float64; build/gemm_bench
// (cuda/tools/gemm_bench.cu) times them on the plans the path runs (chosen_plan).
#pragma once
#include <cuda_runtime.h>

#include <string>

#include "kernels/tiled_plan.h"

namespace mlp::tiled {

// Whether `a` may take the float4 instantiation: every row length and leading dimension a
// multiple of 4 and every base pointer 16-byte aligned (else the scalar one runs).
bool vec_ok(ALayout al, const GemmArgs& a);
// Launches the GEMM of layout `al` and epilogue `epi` on `st` with plan `p` (its tile shape,
// split and K chunk; a.k_chunk is set from it). With p.split > 1, a.partials holds
// p.partial_floats() floats and a.tickets p.tiles() zeroed counters. Throws CudaError, or
// std::invalid_argument for a grid past CUDA's limits or scratch it was not given.
// `prec` picks the kernel of a tensor-core shape (TF32 or BF16); FP32 plans take SIMT shapes.
void launch_gemm(ALayout al, Epi epi, GemmArgs a, const GemmPlan& p, size_t partial_capacity,
                 size_t ticket_capacity, cudaStream_t st, Precision prec = Precision::FP32);
// The plan the path runs for a problem: measured once per process (tiled_path.cu says how), or
// the cost model's with MLP_TILED_PLAN=model.
GemmPlan chosen_plan(ALayout al, Epi epi, int M, int N, int K, int sms, Precision prec = Precision::FP32);
// Whether chosen_plan measures its plans (false with MLP_TILED_PLAN=model), and the first reason a
// measurement of this process failed ("" when none did; chosen_plan then kept the cost model's plan).
bool measure_plans();
std::string& measurement_failure();
// The registers of the instantiation (cudaFuncGetAttributes), for the fit; -1 with `why` set when
// the device refuses it.
int gemm_regs(ALayout al, Epi epi, int shape, bool vec, std::string* why, Precision prec = Precision::FP32);

}  // namespace mlp::tiled
