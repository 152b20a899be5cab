// cuda/transformer/gemm_ln.cu — the two GEMMs with a LayerNorm prologue: LN1 + QKV, LN2 + fc1 + GELU.
#include "transformer/gemm_launch.cuh"

void launch_gemm_ln(GemmOp op, TileKind t, const vit::GemmArgs& a, cudaStream_t st) {
  if (op == GemmOp::kLnQkv) vit::gemm<vit::LnQkv>(t, a, st);
  else vit::gemm<vit::LnFc1Gelu>(t, a, st);
}

void gemm_occupancy_ln(GemmOp op, int out[3]) {
  if (op == GemmOp::kLnQkv) vit::occupancy_of<vit::LnQkv>(out);
  else vit::occupancy_of<vit::LnFc1Gelu>(out);
}

const char* gemm_op_name(GemmOp op) {
  switch (op) {
    case GemmOp::kLnQkv: return vit::LnQkv::kName;
    case GemmOp::kAttnProj: return vit::AttnProjResidual::kName;
    case GemmOp::kLnFc1Gelu: return vit::LnFc1Gelu::kName;
    default: return vit::Fc2Residual::kName;
  }
}
