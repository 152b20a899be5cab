// cuda/kernels/tiled_plan.h — the tiled path's GEMM tile shapes, the choice of a tile shape and a
// split-K factor for a problem (M, N, K) on a device of `sms` multiprocessors, and a GEMM's
// arguments (operand layouts, epilogues). Plain C++, no CUDA header: cuda/kernels/tiled.cuh instantiates the shapes, cuda/paths/tiled_path.cu launches the plan,
// build/mlp_host (`plan-gemm`) prints it for the CPU tests (tests/test_tiled_plan.py).
#pragma once
#include <cstddef>
#include <string>

#include "common/precision.h"  // Precision: which shapes a GEMM may take

namespace mlp::tiled {

// A block's tile: BM × BN outputs, BK deep per shared-memory stage; each thread owns TM × TN
// outputs as (TM/4) × (TN/4) quads of 4 × 4 (SIMT shapes) or, for the tensor-core shapes (`mma`:
// the TF32 and BF16 GEMMs of cuda/kernels/tiled_mma.cuh), TM·TN outputs in m16n8 fragments. `res` is the resident blocks per SM the cost model
// assumes (the kernel's __launch_bounds__ minimum), `sat` the blocks an SM needs to reach `rate`
// (its relative FMA throughput, measured shapes ranked on the H200, docs/PERFLOG.md change 14).
struct TileShape {
  int bm, bn, bk, tm, tn;
  int res, sat;
  double rate;
  const char* name;
  bool mma = false;  // a tensor-core shape: TF32 and BF16 GEMMs only; the SIMT ones: FP32 only
  constexpr int threads() const { return (bm / tm) * (bn / tn); }
};
constexpr TileShape kTileShapes[] = {
    {128, 128, 8, 8, 8, 2, 1, 1.00, "128x128x8"},   // 256 threads, 8×8 outputs each
    {128, 64, 8, 8, 8, 4, 2, 0.85, "128x64x8"},     // 128 threads, 8×8 outputs each
    {64, 64, 16, 4, 4, 3, 1, 0.70, "64x64x16"},     // 256 threads, 4×4 outputs each
    {128, 128, 16, 8, 8, 1, 1, 0.95, "128x128x16"}, // 256 threads, a deeper stage for one block an SM
    // Tensor-core shapes (rate: a guess of mma.sync's rate over FFMA's, only to rank candidates;
    // the path measures its plans): 2 × (threads / 64) warps, each a (BM/2) × (BN/WN) warp tile.
    {128, 128, 16, 8, 8, 2, 1, 3.0, "mma128x128x16", true},  // 8 warps of 64 × 32
    {64, 128, 16, 8, 8, 3, 1, 2.6, "mma64x128x16", true},    // 4 warps of 32 × 64
    {64, 64, 16, 4, 8, 4, 2, 2.2, "mma64x64x16", true},      // 4 warps of 32 × 32
};
constexpr int kNumTileShapes = sizeof(kTileShapes) / sizeof(kTileShapes[0]);
constexpr int kMaxSplit = 16;

// One GEMM launch: the tile shape, the split of K over blockIdx.z and each split's K range.
struct GemmPlan {
  int shape = 0;       // index into kTileShapes
  int split = 1;       // K splits (gridDim.z); 1: no partials
  int k_chunk = 0;     // K per split, a multiple of the shape's bk (the last split may be shorter)
  int tiles_m = 0, tiles_n = 0;
  double est_us = 0;   // the cost model's time (for the plan's printout only)
  size_t partial_floats() const;  // split-K scratch it needs (0 when split == 1)
  int tiles() const { return tiles_m * tiles_n; }
  std::string describe() const;   // "128x128x8 tiles 1x64, split-K 2 (k 392)"
};

// The plan with the least modelled time: the busiest SM's rounds of `res` co-resident blocks, each
// round at the shape's rate (scaled down when fewer than `sat` blocks share the SM), plus the
// split-K partials' round trip through L2. M, N, K >= 1, sms >= 1.
// Only the shapes of the precision's engine: SIMT for FP32, tensor-core for TF32 and BF16.
GemmPlan plan_gemm(int M, int N, int K, int sms, Precision prec = Precision::FP32);
// Whether tile shape `shape` computes at precision `prec`.
constexpr bool shape_serves(int shape, Precision prec) { return kTileShapes[shape].mma == (prec != Precision::FP32); }
// The same with the shape and split fixed (tests force every shape and split through this).
GemmPlan plan_gemm_fixed(int M, int N, int K, int sms, int shape, int split);

// How A is stored: RowMajor A[m][k] (the forward's X: M = B, K = I) or KMajor A[k][m] (dW1's Xᵀ:
// its storage rows are the batch's K rows). Either way its storage row r sits at
// A + rows[r]·lda when `rows` is given (the gather), else at A + r·lda.
enum class ALayout { RowMajor, KMajor };
enum class Epi {
  Store,     // C = acc
  BiasRelu,  // C = max(acc + bias[n], 0)
  Momentum,  // g = acc; vel = μ·vel − lr·g; C += vel   (C is the parameter tensor)
};

struct GemmArgs {
  int M, N, K, k_chunk;
  const float* A; int lda; const int* a_rows;  // A's storage rows, gathered through a_rows (nullable)
  const float* B; int ldb;                     // B [K × N]
  float* C; int ldc;                           // the output [M × N] (the parameters for Momentum)
  const float* bias;                           // BiasRelu: [N]
  float* vel; float lr, mu;                    // Momentum: the velocity [M × N], ldc too
  float* partials;                             // split-K: split × tiles × BM·BN floats
  unsigned* tickets;                           // split-K: one per tile, zero between launches
};

// The tiled path's configuration for layer widths (in, hidden) and `batch` rows by the cost model
// (build/mlp_fit prints it; the binary measures its plans, cuda/paths/tiled_path.cu).
std::string tiled_config(int in, int hidden, int batch, int sms, Precision prec = Precision::FP32);
// Why path `name` at `prec` cannot run on compute capability `cc` (major·10 + minor), or "": the
// TF32 and BF16 GEMMs' mma.sync needs 8.0 (the path's fit() and build/mlp_fit say the same).
std::string tensor_core_refusal(const std::string& name, Precision prec, int cc);

// ---- definitions (header-only, so every program that needs a plan links nothing new) -----------

inline size_t GemmPlan::partial_floats() const {
  if (split <= 1) return 0;
  const TileShape& t = kTileShapes[shape];
  return (size_t)split * (size_t)tiles() * (size_t)t.bm * (size_t)t.bn;
}

inline std::string GemmPlan::describe() const {
  std::string s = std::string(kTileShapes[shape].name) + " tiles " + std::to_string(tiles_m) + "x" +
                  std::to_string(tiles_n);
  if (split > 1) s += ", split-K " + std::to_string(split) + " (k " + std::to_string(k_chunk) + ")";
  return s;
}

inline GemmPlan plan_gemm_fixed(int M, int N, int K, int sms, int shape, int split) {
  // Model constants: an H200 SM's float32 FMA rate (51 TFLOP/s measured over 132 SMs, results/
  // ceilings.json) and the L2 bandwidth a split's partials see (both only rank candidates).
  constexpr double kSmFmaPerUs = 51e12 / 2 / 132 / 1e6;
  constexpr double kL2BytesPerUs = 4e12 / 1e6;
  constexpr double kSplitFixedUs = 2.0;  // the last block's wait and the extra pass
  const TileShape& t = kTileShapes[shape];
  GemmPlan p;
  p.shape = shape;
  p.tiles_m = (M + t.bm - 1) / t.bm;
  p.tiles_n = (N + t.bn - 1) / t.bn;
  int kc = (K + split - 1) / split;
  kc = (kc + t.bk - 1) / t.bk * t.bk;
  p.k_chunk = kc;
  p.split = (K + kc - 1) / kc;  // splits that have work
  const long long blocks = (long long)p.tiles() * p.split;
  const long long per_sm = (blocks + sms - 1) / sms;
  const double work = (double)t.bm * t.bn * kc;  // FMAs of one block
  auto round_us = [&](long long n) {
    const double r = t.rate * (n >= t.sat ? 1.0 : (double)n / t.sat);
    return (double)n * work / (r * kSmFmaPerUs);
  };
  p.est_us = (double)(per_sm / t.res) * round_us(t.res) + (per_sm % t.res ? round_us(per_sm % t.res) : 0.0);
  if (p.split > 1) p.est_us += kSplitFixedUs + (double)p.split * M * N * 8.0 / kL2BytesPerUs;
  return p;
}

inline GemmPlan plan_gemm(int M, int N, int K, int sms, Precision prec) {
  GemmPlan best;
  bool have = false;
  for (int shape = 0; shape < kNumTileShapes; ++shape)
    for (int split = 1; split <= kMaxSplit && shape_serves(shape, prec); ++split) {
      GemmPlan p = plan_gemm_fixed(M, N, K, sms, shape, split);
      if (p.split != split) continue;  // this split leaves some blocks without K
      if (!have || p.est_us < best.est_us * 0.98) best = p, have = true;  // ties: the earlier (larger tiles, fewer splits)
    }
  return best;
}

inline std::string tiled_config(int in, int hidden, int batch, int sms, Precision prec) {
  const std::string engine = prec == Precision::FP32 ? "" : std::string(precision_name(prec)) + " tensor-core GEMMs: ";
  return engine + "forward " + plan_gemm(batch, hidden, in, sms, prec).describe() + "; dW1 " +
         plan_gemm(in, hidden, batch, sms, prec).describe() +
         " (the cost model's plans); 4 kernels a step, the epoch as one CUDA graph";
}

inline std::string tensor_core_refusal(const std::string& name, Precision prec, int cc) {
  if (prec == Precision::FP32 || cc >= 80) return "";
  return name + ": its " + precision_name(prec) + " mma.sync needs compute capability 8.0, the device has " +
         std::to_string(cc / 10) + "." + std::to_string(cc % 10);
}

}  // namespace mlp::tiled
