// cuda/kernels/gemm/sm90_engine.h — the GEMM engine's Hopper entry point (issue 38): one TF32 or BF16
// product with a fused epilogue on k_sm90_gemm (sm90_gemm.cuh), its plan chosen per shape.
//
//   Problem p{...};
//   std::string why = sm90::refusal(p, cc);   // "" when the engine runs p on a device of cc
//   sm90::Plan plan = sm90::plan(p, sms);      // the tile (BN 256 or 128) and the operands' transposes
//   p.workspace = <plan.workspace_bytes of the caller's device memory>;
//   sm90::clear_tickets(plan, p.workspace, stream);  // once: split-K's tickets start at zero
//   (a workspace serves one plan: another plan's partials would overwrite its tickets)
//   sm90::launch(p, plan, stream);             // throws std::invalid_argument when it refuses
//
// An MN-major operand is either read as it is (bf16 only: wgmma's transposed form) or first copied
// K-major into the caller's workspace by k_to_k_major (gemm/transpose.cuh), on the same stream,
// inside the launch: always at tf32 (wgmma has no transposed tf32), and at bf16 only where TMA
// cannot read it (the transposed reads run at the K-major rate: PERFLOG run 2).
//
// Operands (the engine converts nothing; the caller keeps them in the precision's storage):
//   BF16: __nv_bfloat16 arrays; TF32: float arrays (the tensor cores read a float's upper 19 bits:
//   its mantissa truncated to 10 bits, a relative error below 2^-10, which the checks' bounds use).
//   A (m, k): K-major at a[m·lda + k] or MN-major at a[k·lda + m];
//   B (k, n): K-major at b[n·ldb + k] or MN-major at b[k·ldb + n]. TF32 takes K-major only.
//   A K-major operand (or an MN-major one read as it is): its base 16-byte aligned and its
//   ld·element size a multiple of 16 bytes (TMA's rule); an MN-major one that breaks the rule is
//   transposed.
// Needs compute capability 9.0 and a binary built for sm_90 (this file's object is sm_90a code there,
// Makefile GEMM_GENCODE); other builds keep the symbols and refuse every problem.
#pragma once
#include <cuda_runtime.h>

#include <string>

#include "common/precision.h"

namespace mlp::gemm::sm90 {

enum class Major { K, MN };
enum class Epilogue {  // what the kernel's epilogue (sm90_gemm.cuh) writes
  Store,     // C = acc
  BiasRelu,  // C = max(acc + bias[n], 0)
  Momentum,  // g = acc; vel = mu·vel - lr·g; C += vel (C the parameters, vel beside them with ldc);
             // and, where Problem::c_bf16 is set, the updated C rounded to bfloat16 there too
  // The transformer's (both operands K-major only):
  Bias,           // C = acc + bias[n]                                                   TF32, BF16
  BiasResidual,   // C = R + (acc + bias[n]) (R [M × ldc], not C)                       TF32, BF16
  BiasGeluSplit,  // v = GELU(acc + bias[n]) (exact erf) as its two TF32 parts (common/precision.h
                  // split_tf32): hi at C[m·ldc + n], lo at C[m·ldc + N + n] (ldc >= 2N): the next
                  // product's 3xTF32 operand                                            TF32
  BiasGeluBf16,   // GELU(acc + bias[n]) rounded to bfloat16 at c_bf16[m·ldc + n] (C unused): the
                  // next product's BF16 operand                                         BF16
};

struct Operand {
  const void* p;  // the array (see the header)
  long long ld;   // elements between consecutive rows of its storage
  Major major;
};

struct Problem {
  Precision prec;   // TF32 or BF16
  int M, N, K;      // each >= 1
  Operand a, b;
  Epilogue epi;
  // 3xTF32 (TF32 only, both operands K-major, K a multiple of 32): each operand's rows hold its two
  // TF32 parts, hi in columns [0, K) and lo in [K, 2K) (split_tf32); the kernel sums hi·hi into its
  // float32 accumulators, then hi_A·lo_B and lo_A·hi_B into a second set, and adds the two at the
  // end, 3K/32 K steps on 128 × 128 tiles: float32-accurate products on the tensor cores. ld >= 2K.
  bool split3 = false;
  float* C;         // [M × ldc] float32 (the parameters for Momentum; unused by BiasGeluBf16)
  long long ldc;
  const float* bias;  // BiasRelu, Bias, BiasResidual, BiasGeluSplit: [N]
  const float* R;     // BiasResidual: [M × ldc], the residual added
  float* vel;         // Momentum: [M × ldc]
  float lr, mu;       // Momentum
  void* c_bf16;       // Momentum: NULL, or [M × ldc] __nv_bfloat16 that receives C's new values
                      // (the next product's bf16 operand: the tiled path's W1 for its forward);
                      // BiasGeluBf16: [M × ldc] __nv_bfloat16, its output
  void* workspace;    // the transposed operands (Plan::workspace_bytes; NULL when that is 0)
  size_t workspace_size;  // its bytes
};

struct Plan {
  int bn = 256;          // the tile's N (128 × bn tiles)
  int tiles = 0;         // output tiles
  int splits = 1;        // K splits: blocks a tile (tiles × splits blocks launched)
  int steps_per_split = 0;  // K steps (BK each) of a split
  bool transpose_a = false, transpose_b = false;  // copied K-major into the workspace first
  // The workspace: [A's copy][B's copy][split-K partials][split-K tickets], each 256-byte aligned.
  size_t b_offset = 0, partials_offset = 0, tickets_offset = 0;
  size_t workspace_bytes = 0;  // all of it (0: no transpose and no split)
  double model_us = 0;         // the plan's modelled time (ranks candidates; not a measurement)
  std::string describe;  // "wgmma bf16 128x256x64, 4 stages, 512 tiles, split-K 3; B copied K-major first (33.6 MB)"
};

// Whether the binary carries the engine's sm_90a kernels (false in a build for another architecture).
bool compiled();
// Why the engine cannot run p on a device of compute capability cc (major·10 + minor), or "".
std::string refusal(const Problem& p, int cc);
// The plan for p on a device of `sms` multiprocessors: the tile's BN (128 or 256) and the split of
// K with the least modelled time (waves of blocks over the SMs, each block its K steps plus a fixed
// fill, and a split's partials through L2), and which MN-major operands are transposed first.
Plan plan(const Problem& p, int sms);
// Zeroes the plan's split-K tickets in `workspace` (on `stream`): once after the workspace is
// allocated, before its first launch; every launch leaves them zero. A no-op for a plan of one split.
void clear_tickets(const Plan& plan, void* workspace, cudaStream_t stream);
// Launches p on `stream` (the launch is checked). Throws std::invalid_argument when refusal(p) is not ""
// or the workspace is smaller than the plan's. A process's first launch sets the kernels' shared
// memory limits (cudaFuncSetAttribute): make it outside a stream capture. Launches may be captured.
void launch(const Problem& p, const Plan& plan, cudaStream_t stream);

}  // namespace mlp::gemm::sm90
