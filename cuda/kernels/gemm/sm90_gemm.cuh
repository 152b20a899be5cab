// cuda/kernels/gemm/sm90_gemm.cuh — k_sm90_gemm<Tile, EPI>: the GEMM engine's Hopper kernel (issue 38),
// C[M × N] = epilogue(A·B) at TF32 or BF16 with float32 sums, on warpgroup MMA (wgmma) fed by TMA.
//
// One block a 128 × BN output tile (BN 128 or 256), 384 threads in three warpgroups:
//   warpgroup 0, the producer: one thread issues the TMA loads of each K step (BK = one 128-byte
//     swizzle row: 64 bf16 or 32 tf32) into a ring of STAGES shared-memory stages; `full[s]` completes
//     when a stage's bytes have landed, `empty[s]` when both consumers have finished reading it;
//   warpgroups 1 and 2, the consumers: each owns 64 rows of the tile and its 64 × BN float32
//     accumulators in registers (BN / 2 a thread), waits for full[s], issues BK / WK wgmma
//     instructions on the stage, keeps one commit group in flight and releases the stage before.
// setmaxnreg moves registers from the producer (40) to the consumers (232).
// The tile order walks GROUP_M tile rows down each tile column before moving right, so that
// co-resident blocks share their B tiles and, within a group, their A tiles in L2.
// Split-K (Args::splits > 1): `splits` blocks a tile, each a contiguous range of K steps; each
// writes its float32 partial tile, and the last to arrive (a ticket per tile) sums them in split
// order and runs the epilogue, as k_tiled_gemm does (cuda/kernels/tiled.cuh).
//
// 3xTF32 (Args::split3_k > 0): the operands' rows hold two TF32 parts (hi in [0, K), lo in [K, 2K));
// the producer walks 3K logical columns, loading hi·hi, then hi_A·lo_B, then lo_A·hi_B boxes
// (split3_columns), into the same accumulators.
// Operands in global memory (sm90_engine.h says the contract): A (m, k) K-major [M][lda] or MN-major
// [K][lda]; B (k, n) K-major [N][ldb] or MN-major [K][ldb]. TF32 reads both K-major only (wgmma has no
// transposed tf32 form). TMA zero-fills past M, N and K, so any M, N, K >= 1 compute; the epilogue
// writes only rows < M and columns < N.
// Shared memory: stage s holds A's box(es) then B's, each 1024-byte aligned (sm90_primitives.cuh's
// descriptors say the layouts): K-major, rows of 128 bytes of K; MN-major, boxes of 64 MN by BK K.
#pragma once
#include <cuda.h>
#include <cuda_bf16.h>
#include <cstdint>
#include <type_traits>

#include "common/activations.h"  // gelu_erf
#include "common/precision.h"    // split_tf32
#include "kernels/gemm/sm90_engine.h"  // Epilogue
#include "kernels/gemm/sm90_primitives.cuh"
#include "kernels/gemm/sm90_wgmma_ops.cuh"

namespace mlp::gemm::sm90 {

// The epilogue's arguments (the operands travel as tensor maps) and the split of K.
struct Args {
  int M, N, K;
  float* C; long long ldc;  // the output [M × ldc]
  const float* bias;        // BiasRelu, Bias, BiasResidual, BiasGeluSplit: [N]
  const float* R;           // BiasResidual: [M × ldc]
  float* vel;               // Momentum: [M × ldc]
  float lr, mu;             // Momentum
  __nv_bfloat16* c_bf16;    // Momentum: NULL, or [M × ldc] that receives C's new values in bf16;
                            // BiasGeluBf16: [M × ldc], its output
  int splits;               // K splits (blocks a tile); 1: no partials
  int steps_per_split;      // K steps (BK each) of a split; the last split may have fewer, none has 0
  float* partials;          // splits > 1: [splits × tiles × BM·BN] float32, one tile's partial a block
  unsigned* tickets;        // splits > 1: [tiles], zero before the launch, left zero after it
  int split3_k;             // 3xTF32 (Problem::split3): K of one part (K above is 3·split3_k); 0: off
};

// The element column of A's and of B's K step that starts at logical column k0: itself, or under 3xTF32
// (split3_k = K > 0, logical K 3K) the parts' columns of phase k0 / K: hi·hi, hi_A·lo_B, lo_A·hi_B.
__host__ __device__ __forceinline__ void split3_columns(int k0, int split3_k, int* a_col, int* b_col) {
  if (split3_k == 0) { *a_col = *b_col = k0; return; }
  const int phase = k0 / split3_k, kk = k0 % split3_k;
  *a_col = kk + (phase == 2 ? split3_k : 0);
  *b_col = kk + (phase == 1 ? split3_k : 0);
}

constexpr int kSmemLimit = 232448;  // an sm_90 block's dynamic shared memory (227 KiB)
constexpr int kGroupM = 8;          // tile rows walked together (the L2 order above)

// A tile configuration: precision, BN and each operand's major order.
// S3: 3xTF32 (Args::split3_k > 0) with its corrections in accumulators of their own (TF32, K-major,
// BN 128: 2 × 64 accumulators a thread).
template <Precision PREC, int BN_, bool A_MN, bool B_MN, bool S3_ = false>
struct Tile {
  static_assert(!S3_ || (PREC == Precision::TF32 && BN_ == 128 && !A_MN && !B_MN), "3xTF32 tiles: TF32, BN 128, K-major");
  static_assert(PREC == Precision::BF16 || PREC == Precision::TF32, "the wgmma engine is for tf32 and bf16");
  static_assert(PREC == Precision::BF16 || (!A_MN && !B_MN), "tf32 wgmma reads K-major operands only");
  static_assert(BN_ == 128 || BN_ == 256, "BN 128 or 256");
  using T = typename std::conditional<PREC == Precision::BF16, __nv_bfloat16, float>::type;
  static constexpr int ES = (int)sizeof(T);
  static constexpr int BM = 128, BN = BN_;
  static constexpr int BK = 128 / ES;  // one swizzle row of K
  static constexpr int WK = 32 / ES;   // one instruction's K (16 bf16, 8 tf32): 32 bytes of a row
  static constexpr int MN_BOX = 64;    // MN-major boxes: 64 elements = 128 bytes of MN
  static constexpr int A_BYTES = BM * BK * ES, B_BYTES = BN * BK * ES, STAGE_BYTES = A_BYTES + B_BYTES;
  static constexpr int STAGES = (kSmemLimit - 2048) / STAGE_BYTES > 8 ? 8 : (kSmemLimit - 2048) / STAGE_BYTES;
  static constexpr int SMEM = STAGES * STAGE_BYTES + 1024 /* alignment */ + 2 * 8 * STAGES;
  static constexpr int THREADS = 384, ACC = BN / 2;
  static constexpr bool kAMN = A_MN, kBMN = B_MN, kS3 = S3_;
  static constexpr Precision kPrec = PREC;
  static_assert(STAGES >= 3 && SMEM <= kSmemLimit, "a ring of at least three stages");
};

#ifdef MLP_SM90A
// GELU (exact erf) of x as its two TF32 parts {hi, lo}: the BiasGeluSplit epilogue's arithmetic, a call
// rather than inlined: inlined into the fully unrolled epilogue (BN/2 elements a thread) it made the
// kernel's code larger than the instruction cache, and the epilogue waited on instruction fetches
// (ncu, H100, transformer fc1 at batch 1,024: 7.9 of 12.5 cycles an instruction; PERFLOG run T2).
__device__ __noinline__ float2 gelu_split_tf32(float x) {
  float2 r;
  split_tf32(gelu_erf(x), &r.x, &r.y);
  return r;
}

// GELU (exact erf) of a column pair rounded to bfloat16: the BiasGeluBf16 epilogue's arithmetic, a
// call for the reason gelu_split_tf32 is one.
__device__ __noinline__ __nv_bfloat162 gelu_bf16x2(float x, float y) {
  return __floats2bfloat162_rn(gelu_erf(x), gelu_erf(y));
}

template <class TL>
__device__ __forceinline__ void wgmma_step(float (&d)[TL::ACC], uint64_t a, uint64_t b, int accumulate) {
  if constexpr (TL::kPrec == Precision::BF16) {
    if constexpr (TL::BN == 256) wgmma_m64n256k16_bf16<TL::kAMN, TL::kBMN>(d, a, b, accumulate);
    else wgmma_m64n128k16_bf16<TL::kAMN, TL::kBMN>(d, a, b, accumulate);
  } else {
    if constexpr (TL::BN == 256) wgmma_m64n256k8_tf32(d, a, b, accumulate);
    else wgmma_m64n128k8_tf32(d, a, b, accumulate);
  }
}
#endif

template <class TL, Epilogue EPI>
__global__ void __launch_bounds__(TL::THREADS, 1)
k_sm90_gemm(const __grid_constant__ CUtensorMap map_a,  // A's boxes (sm90_engine.cu make_map)
            const __grid_constant__ CUtensorMap map_b,  // B's boxes
            Args args) {
#ifdef MLP_SM90A
  constexpr int BM = TL::BM, BN = TL::BN, BK = TL::BK, WK = TL::WK, STAGES = TL::STAGES;
  constexpr int MN_BOX_BYTES = TL::MN_BOX * BK * TL::ES;  // one MN-major box
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + STAGES * TL::STAGE_BYTES);  // [STAGES]
  uint64_t* empty = full + STAGES;                                                  // [STAGES]
  auto stage_a = [&](int s) { return smem + s * TL::STAGE_BYTES; };
  auto stage_b = [&](int s) { return smem + s * TL::STAGE_BYTES + TL::A_BYTES; };

  // The tile of this block (the grouped order of the header) and its split's K steps: blocks
  // 0 .. tiles-1 take split 0, the next `tiles` split 1, and so on.
  const int tiles_m = (args.M + BM - 1) / BM, tiles_n = (args.N + BN - 1) / BN, tiles = tiles_m * tiles_n;
  const int tile = blockIdx.x % tiles, split = blockIdx.x / tiles;
  const int per_group = kGroupM * tiles_n, group = tile / per_group;
  const int first_m = group * kGroupM, rows_in_group = min(tiles_m - first_m, kGroupM);
  const int tm = first_m + (tile % per_group) % rows_in_group, tn = (tile % per_group) / rows_in_group;
  const int m0 = tm * BM, n0 = tn * BN;
  const int k_first = split * args.steps_per_split;
  const int k_steps = min((args.K + BK - 1) / BK - k_first, args.steps_per_split);  // this split's
  const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;

  if (threadIdx.x == 0) {
    prefetch_tensor_map(&map_a);
    prefetch_tensor_map(&map_b);
    for (int s = 0; s < STAGES; ++s) {
      mbarrier_init(&full[s], 1);   // the producer's arrive.expect_tx, then the bytes
      mbarrier_init(&empty[s], 2);  // one arrival per consumer warpgroup
    }
    fence_barrier_init();
  }
  __syncthreads();

  if (wg == 0) {  // ---- the producer
    reg_dealloc<40>();
    if (tid == 0) {
      for (int i = 0; i < k_steps; ++i) {
        const int s = i % STAGES;
        int ka, kb;  // the K columns of this step's A and B boxes
        split3_columns((k_first + i) * BK, args.split3_k, &ka, &kb);
        if (i >= STAGES) mbarrier_wait(&empty[s], ((i / STAGES) - 1) & 1);
        mbarrier_arrive_expect_tx(&full[s], TL::STAGE_BYTES);
        if constexpr (TL::kAMN) {
#pragma unroll
          for (int c = 0; c < BM / TL::MN_BOX; ++c) tma_load_2d(stage_a(s) + c * MN_BOX_BYTES, &map_a, m0 + c * TL::MN_BOX, ka, &full[s]);
        } else {
          tma_load_2d(stage_a(s), &map_a, ka, m0, &full[s]);
        }
        if constexpr (TL::kBMN) {
#pragma unroll
          for (int c = 0; c < BN / TL::MN_BOX; ++c) tma_load_2d(stage_b(s) + c * MN_BOX_BYTES, &map_b, n0 + c * TL::MN_BOX, kb, &full[s]);
        } else {
          tma_load_2d(stage_b(s), &map_b, kb, n0, &full[s]);
        }
      }
    }
    return;
  }

  // ---- the consumers: warpgroup c = wg - 1 owns rows 64c .. 64c + 63 of the tile
  reg_alloc<232>();
  const int c = wg - 1;
  // acc: the products (3xTF32: hi·hi); acc2 (S3): the corrections hi_A·lo_B + lo_A·hi_B, added to acc
  // after the mainloop. The tensor cores truncate as they accumulate: each correction step added onto
  // the large sum would lose up to an ulp of it, biased towards zero (PERFLOG transformer run T4).
  float acc[TL::ACC], acc2[TL::kS3 ? TL::ACC : 1];
#pragma unroll
  for (int r = 0; r < TL::ACC; ++r) acc[r] = 0.f;
#pragma unroll
  for (int r = 0; r < (TL::kS3 ? TL::ACC : 1); ++r) acc2[r] = 0.f;
  auto fence_all = [&] {
#pragma unroll
    for (int r = 0; r < TL::ACC; ++r) fence_operand(acc[r]);
    if constexpr (TL::kS3) {
#pragma unroll
      for (int r = 0; r < TL::ACC; ++r) fence_operand(acc2[r]);
    }
  };
  // Descriptor of step kk of stage s (sm90_primitives.cuh smem_desc): K-major moves 32 bytes along
  // the 128-byte row; MN-major moves WK rows of 128 bytes (whole 8-row groups).
  auto desc_a = [&](int s, int kk) {
    if constexpr (TL::kAMN) return smem_desc(stage_a(s) + c * MN_BOX_BYTES + kk * WK * 128, MN_BOX_BYTES, 1024);
    else return smem_desc(stage_a(s) + c * 64 * 128 + kk * 32, 16, 1024);
  };
  auto desc_b = [&](int s, int kk) {
    if constexpr (TL::kBMN) return smem_desc(stage_b(s) + kk * WK * 128, MN_BOX_BYTES, 1024);
    else return smem_desc(stage_b(s) + kk * 32, 16, 1024);
  };
  // Steps [i0, i1) of this split into the accumulators d (3xTF32: acc for the products' steps, then
  // acc2 for the corrections': two loops, so that no branch chooses between accumulator sets inside one
  // and the wgmma groups of a loop stay in flight together).
  auto run_steps = [&](float (&d)[TL::ACC], int i0, int i1) {
    for (int i = i0; i < i1; ++i) {
      const int s = i % STAGES;
      mbarrier_wait(&full[s], (i / STAGES) & 1);
#pragma unroll
      for (int r = 0; r < TL::ACC; ++r) fence_operand(d[r]);
      wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < BK / WK; ++kk) wgmma_step<TL>(d, desc_a(s, kk), desc_b(s, kk), 1);
      wgmma_commit();
      wgmma_wait<1>();  // the previous step's group is done: its stage may be refilled
#pragma unroll
      for (int r = 0; r < TL::ACC; ++r) fence_operand(d[r]);
      if (i > 0 && tid == 0) mbarrier_arrive(&empty[(i - 1) % STAGES]);
    }
  };
  if constexpr (TL::kS3) {
    const int products = min(max(args.split3_k / BK - k_first, 0), k_steps);  // this split's hi·hi steps
    run_steps(acc, 0, products);
    wgmma_wait<0>();  // acc's last group done before acc2's begin (their registers apart)
    run_steps(acc2, products, k_steps);
  } else {
    run_steps(acc, 0, k_steps);
  }
  wgmma_wait<0>();
  fence_all();
  if constexpr (TL::kS3) {
#pragma unroll
    for (int r = 0; r < TL::ACC; ++r) acc[r] += acc2[r];
  }

  if (args.splits > 1) {
    // Split-K: publish this split's partial tile (element r of consumer thread ct at r·256 + ct:
    // coalesced), take the tile's ticket; the last of its splits to arrive sums every split's
    // partial in split order 0 .. splits-1 (the same sum whichever block is last: bitwise
    // reruns hold) and runs the epilogue.
    const int ct = threadIdx.x - 128;  // 0 .. 255, the consumers
    float* mine = args.partials + ((size_t)split * tiles + tile) * (BM * BN);
#pragma unroll
    for (int r = 0; r < TL::ACC; ++r) __stcg(mine + r * 256 + ct, acc[r]);
    __threadfence();
    named_barrier_sync(1, 256);
    __shared__ int last;
    if (ct == 0) last = atomicAdd(&args.tickets[tile], 1u) == (unsigned)args.splits - 1;
    named_barrier_sync(1, 256);
    if (!last) return;
    __threadfence();
#pragma unroll
    for (int r = 0; r < TL::ACC; ++r) acc[r] = 0.f;
    for (int z = 0; z < args.splits; ++z) {
      const float* part = args.partials + ((size_t)z * tiles + tile) * (BM * BN);
#pragma unroll
      for (int r = 0; r < TL::ACC; ++r) acc[r] += __ldcg(part + r * 256 + ct);
    }
    if (ct == 0) args.tickets[tile] = 0;  // ready for the next launch (graph replays reuse it)
  }

  // ---- the epilogue, from the accumulators' fragment layout (sm90_wgmma_ops.cuh): thread (warp, g, t)
  // of consumer c holds rows row0 and row0 + 8 (h = 0, 1) at columns n0 + 8j + 2t and + 1, j < BN/8,
  // in acc[4j + 2h] and acc[4j + 2h + 1]. In chunks of JC column pairs: first every load the chunk's
  // epilogue needs (bias; the momentum's velocity and parameters), then the arithmetic and the
  // stores, so that a chunk's loads are in flight together (a load may not pass an earlier store the
  // compiler cannot prove apart from it: loads interleaved with stores cost a memory round trip per
  // column pair, PERFLOG run 2).
  constexpr bool kBias = EPI == Epilogue::BiasRelu || EPI == Epilogue::Bias || EPI == Epilogue::BiasResidual ||
                        EPI == Epilogue::BiasGeluSplit || EPI == Epilogue::BiasGeluBf16;
  constexpr bool kTwoLoads = EPI == Epilogue::Momentum;  // vel and C a column
  constexpr int JC = kTwoLoads || EPI == Epilogue::BiasResidual ? 4 : 8;  // column pairs a chunk (registers)
  static_assert((BN / 8) % JC == 0, "whole chunks");
  const int warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
  const int row0 = m0 + 64 * c + 16 * warp + g;
  const bool aligned_pairs = (args.ldc % 2) == 0 && reinterpret_cast<uintptr_t>(args.C) % 8 == 0 &&
                             (EPI != Epilogue::Momentum || reinterpret_cast<uintptr_t>(args.vel) % 8 == 0) &&
                             (EPI != Epilogue::BiasResidual || reinterpret_cast<uintptr_t>(args.R) % 8 == 0) &&
                             (EPI != Epilogue::BiasGeluSplit || args.N % 2 == 0);
#pragma unroll
  for (int j0 = 0; j0 < BN / 8; j0 += JC) {
    float bias_v[JC][2];       // the bias epilogues: bias[col], bias[col + 1]
    float vel_v[2][JC][2];     // Momentum: vel at (row0 + 8h, col + q); BiasResidual: R there
    float par_v[2][JC][2];     // Momentum: C (the parameters) likewise
#pragma unroll
    for (int jj = 0; jj < JC; ++jj) {
      const int col = n0 + 8 * (j0 + jj) + 2 * t;
      if constexpr (kBias) {
#pragma unroll
        for (int q = 0; q < 2; ++q) bias_v[jj][q] = col + q < args.N ? __ldg(args.bias + col + q) : 0.f;
      }
      if constexpr (EPI == Epilogue::Momentum || EPI == Epilogue::BiasResidual) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int row = row0 + 8 * h;
#pragma unroll
          for (int q = 0; q < 2; ++q) {
            const bool in = row < args.M && col + q < args.N;
            const size_t at = (size_t)row * args.ldc + col + q;
            if constexpr (EPI == Epilogue::Momentum) {
              vel_v[h][jj][q] = in ? args.vel[at] : 0.f;
              par_v[h][jj][q] = in ? args.C[at] : 0.f;
            } else {
              vel_v[h][jj][q] = in ? __ldg(args.R + at) : 0.f;
            }
          }
        }
      }
    }
#pragma unroll
    for (int jj = 0; jj < JC; ++jj) {
      const int j = j0 + jj, col = n0 + 8 * j + 2 * t;
      if (col >= args.N) continue;
      const int valid = min(2, args.N - col);
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = row0 + 8 * h;
        if (row >= args.M) continue;
        float v[2] = {acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]};
        if constexpr (EPI == Epilogue::BiasGeluBf16) {  // into c_bf16 alone
          __nv_bfloat16* brow = args.c_bf16 + (size_t)row * args.ldc;
          const __nv_bfloat162 g = gelu_bf16x2(v[0] + bias_v[jj][0], v[1] + bias_v[jj][1]);
          const bool pair = valid == 2 && args.ldc % 2 == 0 && reinterpret_cast<uintptr_t>(args.c_bf16) % 4 == 0;
          if (pair) {
            *reinterpret_cast<__nv_bfloat162*>(brow + col) = g;
          } else {
            brow[col] = g.x;
            if (valid == 2) brow[col + 1] = g.y;
          }
          continue;
        }
        float* crow = args.C + (size_t)row * args.ldc;
        if constexpr (EPI == Epilogue::BiasRelu) {
#pragma unroll
          for (int q = 0; q < 2; ++q) v[q] = fmaxf(v[q] + bias_v[jj][q], 0.f);
        }
        if constexpr (EPI == Epilogue::Bias) {
#pragma unroll
          for (int q = 0; q < 2; ++q) v[q] = v[q] + bias_v[jj][q];
        }
        if constexpr (EPI == Epilogue::BiasResidual) {
#pragma unroll
          for (int q = 0; q < 2; ++q) v[q] = vel_v[h][jj][q] + (v[q] + bias_v[jj][q]);
        }
        if constexpr (EPI == Epilogue::BiasGeluSplit) {
          float lo[2];
#pragma unroll
          for (int q = 0; q < 2; ++q) {
            const float2 parts = gelu_split_tf32(v[q] + bias_v[jj][q]);
            v[q] = parts.x, lo[q] = parts.y;
          }
          if (aligned_pairs && valid == 2) {
            *reinterpret_cast<float2*>(crow + args.N + col) = make_float2(lo[0], lo[1]);
          } else {
            crow[args.N + col] = lo[0];
            if (valid == 2) crow[args.N + col + 1] = lo[1];
          }
        }
        if constexpr (EPI == Epilogue::Momentum) {
          float* vrow = args.vel + (size_t)row * args.ldc;
#pragma unroll
          for (int q = 0; q < 2; ++q)
            if (q < valid) {
              const float vel = args.mu * vel_v[h][jj][q] - args.lr * v[q];  // k_momentum_flat's formula
              vrow[col + q] = vel;
              v[q] = par_v[h][jj][q] + vel;
            }
        }
        if (aligned_pairs && valid == 2) {
          *reinterpret_cast<float2*>(crow + col) = make_float2(v[0], v[1]);
        } else {
          crow[col] = v[0];
          if (valid == 2) crow[col + 1] = v[1];
        }
        if constexpr (EPI == Epilogue::Momentum) {
          if (args.c_bf16) {
            __nv_bfloat16* brow = args.c_bf16 + (size_t)row * args.ldc;
            brow[col] = __float2bfloat16_rn(v[0]);
            if (valid == 2) brow[col + 1] = __float2bfloat16_rn(v[1]);
          }
        }
      }
    }
  }
#endif
}

}  // namespace mlp::gemm::sm90
