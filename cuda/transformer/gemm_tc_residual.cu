// cuda/transformer/gemm_tc_residual.cu — the two GEMMs with a residual epilogue on the tensor cores (3xTF32).
#include "transformer/gemm_launch.cuh"

void launch_gemm_tc_residual(GemmOp op, TileKind t, const vit::GemmArgs& a, cudaStream_t st) {
  if (op == GemmOp::kAttnProj) vit::gemm_tc<vit::AttnProjResidual>(t, a, st);
  else vit::gemm_tc<vit::Fc2Residual>(t, a, st);
}

void gemm_occupancy_tc_residual(GemmOp op, int out[3]) {
  if (op == GemmOp::kAttnProj) vit::occupancy_tc<vit::AttnProjResidual>(out);
  else vit::occupancy_tc<vit::Fc2Residual>(out);
}
