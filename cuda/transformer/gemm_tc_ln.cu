// cuda/transformer/gemm_tc_ln.cu — the two GEMMs with a LayerNorm prologue on the tensor cores (3xTF32).
#include "transformer/gemm_launch.cuh"

void launch_gemm_tc_ln(GemmOp op, TileKind t, const vit::GemmArgs& a, cudaStream_t st) {
  if (op == GemmOp::kLnQkv) vit::gemm_tc<vit::LnQkv>(t, a, st);
  else vit::gemm_tc<vit::LnFc1Gelu>(t, a, st);
}

void gemm_occupancy_tc_ln(GemmOp op, int out[3]) {
  if (op == GemmOp::kLnQkv) vit::occupancy_tc<vit::LnQkv>(out);
  else vit::occupancy_tc<vit::LnFc1Gelu>(out);
}
