// cuda/kernels/stationary/ops.cuh — the weight-stationary epoch's constants, input slice (Slice),
// kernel arguments (Args) and primitives: the counter's release/acquire, cp.async byte staging,
// the TF32 split, the operand forms (Products) and m16n8k8 MMA, the byte -> float conversion of the staged inputs, and the input
// packing kernel k_stationary_pack. The kernel is cuda/kernels/stationary.cuh.
#pragma once
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "common/mma.cuh"  // mma::tf32_rna, mma::pack_bf16x2
#include "contract/submission.h"

namespace mlp {
namespace wstat {
constexpr int kIn = 784, kHidden = 256, kOut = 10;  // the recipe's widths (only these)
constexpr int kRows = 128;                           // largest batch; the per-step row buffers
constexpr int kThreads = 256;                        // threads per block
constexpr int kOutPad = 16;                          // dZ row stride in shared memory
constexpr float kInv255 = 1.0f / 255.0f;
// A grid wait longer than 60 s traps (the blocks were not all resident). Generous so that
// compute-sanitizer's tools, which slow the kernel down by orders of magnitude, never trip it.
constexpr unsigned long long kWaitTimeoutNs = 60000000000ull;
constexpr size_t kStackBytes = 4096;  // per-thread stack stationary_prepare makes sure of (the
                                      // IEEE division's slow path under racecheck's instrumentation)

constexpr int r4(int x) { return (x + 3) / 4 * 4; }  // rounded up to a multiple of 4

// The input slice of a rank, from the cluster size CL alone (also the packed input layout).
template <int CL>
struct Slice {
  static constexpr int KS = kIn / CL;              // input rows per block
  static constexpr int kKp0 = (KS + 1 + 3) / 4 * 4;
  // Rows of the W1 slice in shared memory (Ws, Vs: KS inputs, b1's row KS, zero padding), an odd
  // multiple of 4; also the input row stride of dev/stationary/'s CUDA-core forms, whose F1 reads
  // 8 consecutive rows a quarter-warp (one float4 each) from 8 different bank groups.
  static constexpr int KP = kKp0 % 8 == 0 ? kKp0 + 4 : kKp0;
  static constexpr int XB = (KP + 15) / 16 * 16;   // bytes per (sample, rank) in the packed X
  static constexpr int kKq = KP / 4;               // quads of a KP row
  static constexpr int kKqG = (KS + 1 + 3) / 4;    // quads with a non-zero row (KS inputs and b1's)
  // Row stride of the staged inputs (floats): KS + 1 rounded up to whole k-steps of 8 and
  // ≡ 8 (mod 32), so that F1's and G's fragment patterns read conflict-free under the swizzle of
  // mma_x_index (<8,·>: 104, <4,·>: 200).
  static constexpr int kKm0 = (KS + 1 + 7) / 8 * 8;
  static constexpr int KPM = kKm0 + (40 - kKm0 % 32) % 32;
  static constexpr int kKs = KPM / 8;              // F1's k-steps of 8 inputs
  static_assert(kIn % CL == 0 && kKqG <= kKq && XB >= KP, "slice");
  static_assert(KPM % 32 == 8 && KPM >= KS + 1 && XB * 1 >= (KS + 3) / 4 * 4, "mma slice");
};

struct Args {
  float* params;           // flat parameters (submission.h layout), read at start, written at end
  float* velocity;         // flat velocity, same layout
  const uint8_t* xb;       // packed inputs [n_total][CL][XB] bytes (stationary_prepare)
  const int* labels;       // [n_total] int32
  const int* order;        // [n] this epoch's row order
  int n, batch;            // samples this epoch, rows per step (<= kRows)
  float lr, mu;            // SGD: v = mu·v − lr·g; p = p + v
  float* step_loss;        // [ceil(n / batch)] each step's mean loss
  float* slots;            // [2][clusters][kRows][kOut] partial logits, by step parity
  unsigned* counters;      // [CL][32] arrival counters, one 128-byte line per rank
  unsigned arrivals_base;  // each counter's value before this launch
  int* error_flag;         // set to 1 before a trap when a grid wait times out
  int* pad_check;          // [2]: += pad entries seen, += those not bitwise 0 (end of the epoch)
};

// Exactly float32(p) / 255.0f, the loader's value (cuda/io/dataset.cpp), for p in 0..255: the
// product with the rounded reciprocal and one Newton correction (verified for all 256 bytes on
// the host and on the device by dev/stationary/stationary_epoch.cu).
__host__ __device__ __forceinline__ float pixel(unsigned p) {
  const float f = (float)p;
#ifdef __CUDA_ARCH__
  const float q = __fmul_rn(f, kInv255);
#else
  const float q = f * kInv255;
#endif
  const float e = fmaf(-q, 255.0f, f);
  return fmaf(e, kInv255, q);
}

// float(p) for byte i of w without the int->float conversion unit, exactly: 0x4B0000pp is the
// float 2^23 + p.
__device__ __forceinline__ float byte_as_float(unsigned w, int i) {
  return __fsub_rn(__uint_as_float(__byte_perm(w, 0x4B000000u, 0x7540u | (unsigned)i)), 8388608.0f);
}

__device__ __forceinline__ void cp_async16(void* smem_dst, const void* gsrc) {
  const unsigned d = (unsigned)__cvta_generic_to_shared(smem_dst);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(d), "l"(__cvta_generic_to_global(gsrc)) : "memory");
}
__device__ __forceinline__ void prefetch_l2(const void* p) {
  asm volatile("prefetch.global.L2 [%0];\n" ::"l"(__cvta_generic_to_global(p)));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_all;\n" ::: "memory"); }
__device__ __forceinline__ void red_release_add(unsigned* p, unsigned v) {
  asm volatile("red.release.gpu.global.add.u32 [%0], %1;\n" ::"l"(__cvta_generic_to_global(p)), "r"(v) : "memory");
}
__device__ __forceinline__ unsigned ld_acquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(v) : "l"(__cvta_generic_to_global(p)) : "memory");
  return v;
}
__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;\n" : "=l"(t));
  return t;
}

// cp.async of step rows [base, base + nb) of this rank's packed slice into Bb[kRows][XB].
template <int CL>
__device__ __forceinline__ void stage_bytes(const Args& a, uint8_t* Bb, int base, int nb, int rank) {
  using C = Slice<CL>;
  constexpr int kChunks = C::XB / 16;
  for (int e = threadIdx.x; e < nb * kChunks; e += kThreads) {
    const int b = e / kChunks, q = e % kChunks;
    const int s = __ldg(a.order + base + b);
    cp_async16(Bb + b * C::XB + 16 * q, a.xb + ((size_t)s * CL + rank) * C::XB + 16 * q);
  }
  cp_async_commit();
}

// f(std::integral_constant<int, B + I>) for each I, in order (compile-time indices).
template <int B, class F, int... I>
__device__ __forceinline__ void for_each_const(F& f, std::integer_sequence<int, I...>) {
  (f(std::integral_constant<int, B + I>{}), ...);
}

// ---- tensor-core products in TF32 with a two-term split (docs/PERFLOG.md) ----
// The staged inputs hold the pixel byte p itself as a float (exact in TF32: 8 significant bits);
// the 1/255 is applied to the products' results. A float w in registers or shared memory is used
// as big + small with big = tf32(w), small = tf32(w − big) (both rounded to nearest, ties away):
// |w − big − small| <= 2^-22·|w|, so p·w costs two MMAs at nearly float32 accuracy, with the full
// float32 exponent range (no scaling).
using mma::tf32_rna;  // x rounded to TF32 (cvt.rna.tf32.f32), common/mma.cuh
__device__ __forceinline__ void tf32_split(float x, unsigned& big, unsigned& small) {
  big = tf32_rna(x);
  small = tf32_rna(x - __uint_as_float(big));
}
// What F1 and G multiply (the kernel's template choice, one per path):
//   kSplit  stationary (FP32): every non-pixel operand as TF32 big + small, two MMAs a product
//   kTF32   stationary-tf32:   big = tf32(w) alone, one MMA (TF32 products)
//   kBF16   stationary-bf16:   big = bf16(w) alone (nearest even), one MMA. A bfloat16 value is
//           exact in TF32 (the same 8-bit exponent, 7 of TF32's 10 mantissa bits), so the TF32
//           instruction multiplies BF16 operands exactly with float32 sums: the products are
//           BF16's. (Not m16n8k16.bf16, whose fragments would need another layout of Xs, Wf and
//           dHf; MMA issue does not bound this epoch: stationary-tf32, with half of stationary's
//           MMAs, is no faster, docs/PERFLOG.md run 6.)
// The pixels (A of both GEMMs) are exact in every form: integers 0..255 have 8 significant bits.
enum class Products { kSplit, kTF32, kBF16 };
// w's parts as the form P multiplies them: big (and, kSplit only, small; the single-MMA forms
// never read it).
template <Products P>
__device__ __forceinline__ void operand_parts(float w, unsigned& big, unsigned& small) {
  if constexpr (P == Products::kBF16) {
    big = mma::pack_bf16x2(0.f, w) & 0xffff0000u;  // bf16(w) in the high half: bf16(w) as a float
    small = 0u;
  } else {
    tf32_split(w, big, small);
  }
}
// c += a·b for one m16n8k8 tile (PTX ISA fragments, g = lane / 4, q = lane % 4):
// a0 (g, q), a1 (g+8, q), a2 (g, q+4), a3 (g+8, q+4); b0 (k q, n g), b1 (k q+4, n g);
// c0 (g, 2q), c1 (g, 2q+1), c2 (g+8, 2q), c3 (g+8, 2q+1).
__device__ __forceinline__ void mma_tf32(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
// Where input (row b, column k) of the staged inputs lives (floats, row stride KPM): column bit 2
// flipped on rows with bit 2 set. F1 reads (row g, column q) patterns and G (row q, column g)
// patterns; with KPM ≡ 8 (mod 32) both fall in 32 different banks under this swizzle.
template <int KPM>
__host__ __device__ constexpr int mma_x_index(int b, int k) {
  return b * KPM + (k ^ (4 * ((b >> 2) & 1)));
}

// One (row, half) unit of the next inputs' conversion, Bb bytes -> Xs: quads [0, kQ0) (h = 0) or
// [kQ0, kQ) (h = 1) of the row, every word loaded before the first store (the compiler cannot
// reorder a load of Bb past a store to Xs: both are shared memory), every column test a constant.
// float(p) at mma_x_index (stride KPM; the swizzle flips bit 0 of the quad index, so stores stay
// float4); rows >= nb and columns > KS are 0; column KS is 255 on rank 0's valid rows (b1's input:
// 255 · b1 / 255).
template <int CL>
__device__ __forceinline__ void convert_row_half(float* Xs, const uint8_t* Bb, int nb, int rank, int row, int h) {
  using C = Slice<CL>;
  constexpr int kStride = C::KPM, kQ = kStride / 4, kQ0 = (kQ + 1) / 2;
  const int swq = (row >> 2) & 1;
  const bool valid = row < nb;
  const unsigned* src = reinterpret_cast<const unsigned*>(Bb + row * C::XB);
  float* dst = Xs + row * kStride;
  const float ones = valid && rank == 0 ? 255.f : 0.f;
  unsigned w[kQ0];
  auto load = [&](auto qc) {
    constexpr int j = decltype(qc)::value;
    const int q = j + h * kQ0;
    w[j] = valid && 4 * q < C::KS ? src[q] : 0u;  // bytes past KS in the packed slice are 0
  };
  auto quad = [&](auto qc) {
    constexpr int q = decltype(qc)::value, k = 4 * q, j = q >= kQ0 ? q - kQ0 : q;
    float v[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) v[i] = k + i < C::KS ? byte_as_float(w[j], i) : (k + i == C::KS ? ones : 0.f);
    *reinterpret_cast<float4*>(dst + 4 * (q ^ swq)) = make_float4(v[0], v[1], v[2], v[3]);
  };
  for_each_const<0>(load, std::make_integer_sequence<int, kQ0>{});
  if (h == 0) for_each_const<0>(quad, std::make_integer_sequence<int, kQ0>{});
  else for_each_const<kQ0>(quad, std::make_integer_sequence<int, kQ - kQ0>{});
}
// The conversion on all 256 threads, thread (row tid/2, half tid%2).
template <int CL>
__device__ __forceinline__ void convert_rows_p(float* Xs, const uint8_t* Bb, int nb, int rank) {
  static_assert(kThreads == 2 * kRows, "convert_rows_p: two threads a row");
  convert_row_half<CL>(Xs, Bb, nb, rank, (int)threadIdx.x >> 1, (int)threadIdx.x & 1);
}

// convert_rows_p's result (the same bits) on threads [0, NT) only, by quads: thread tid converts
// quads tid, tid + NT, ... of the [kRows][KPM / 4] quads, every word loaded before the first store
// (warps 0-6 while warp 7 releases the counter).
template <int CL, int NT>
__device__ __forceinline__ void convert_quads_p(float* Xs, const uint8_t* Bb, int nb, int rank) {
  using C = Slice<CL>;
  constexpr int kQ = C::KPM / 4, kTotal = kRows * kQ, kJ = (kTotal + NT - 1) / NT;
  const int tid = (int)threadIdx.x;
  unsigned w[kJ];
#pragma unroll
  for (int j = 0; j < kJ; ++j) {
    const int e = tid + NT * j, row = e / kQ, q = e % kQ;
    w[j] = e < kTotal && row < nb && 4 * q < C::KS ? reinterpret_cast<const unsigned*>(Bb + row * C::XB)[q] : 0u;
  }
#pragma unroll
  for (int j = 0; j < kJ; ++j) {
    const int e = tid + NT * j, row = e / kQ, q = e % kQ, k = 4 * q;
    if (e < kTotal) {
      const float ones = row < nb && rank == 0 ? 255.f : 0.f;
      float v[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) v[i] = k + i < C::KS ? byte_as_float(w[j], i) : (k + i == C::KS ? ones : 0.f);
      *reinterpret_cast<float4*>(Xs + row * C::KPM + 4 * (q ^ ((row >> 2) & 1))) = make_float4(v[0], v[1], v[2], v[3]);
    }
  }
}

// Packs X_all (float32 p/255) into [n][CL][XB] bytes; flags any value that is not exactly
// pixel(p) for a byte p.
template <int CL>
__global__ void k_stationary_pack(const float* X, int n, uint8_t* xb, int* bad) {
  using C = Slice<CL>;
  const size_t total = (size_t)n * CL * C::XB;
  for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += (size_t)gridDim.x * blockDim.x) {
    const int q = (int)(e % C::XB), r = (int)((e / C::XB) % CL);
    const size_t s = e / ((size_t)C::XB * CL);
    unsigned p = 0;
    if (q < C::KS) {
      const float x = X[s * kIn + (size_t)r * C::KS + q];
      const int pi = __float2int_rn(x * 255.0f);
      p = (unsigned)min(max(pi, 0), 255);
      if (__float_as_uint(pixel(p)) != __float_as_uint(x)) atomicExch(bad, 1);
    }
    xb[e] = (uint8_t)p;
  }
}
}  // namespace wstat
}  // namespace mlp
