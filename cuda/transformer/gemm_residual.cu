// cuda/transformer/gemm_residual.cu — the two GEMMs with a residual epilogue: attention projection, fc2.
#include "transformer/gemm_launch.cuh"

void launch_gemm_residual(GemmOp op, TileKind t, const vit::GemmArgs& a, cudaStream_t st) {
  if (op == GemmOp::kAttnProj) vit::gemm<vit::AttnProjResidual>(t, a, st);
  else vit::gemm<vit::Fc2Residual>(t, a, st);
}

void gemm_occupancy_residual(GemmOp op, int out[3]) {
  if (op == GemmOp::kAttnProj) vit::occupancy_of<vit::AttnProjResidual>(out);
  else vit::occupancy_of<vit::Fc2Residual>(out);
}
