// dev/stationary/variant_ops.cuh — what dev/stationary/variant_kernel.cuh's variants add to
// cuda/kernels/stationary/: the variant bits (kV*; kShippedV, the bits of the shipped kernel), the
// phase marks (Mark), VCfg (Cfg plus the constants of the register-tiled CUDA-core forms) and the
// primitives only the CUDA-core forms use (pixel_of_byte, reduce_half, the conversions to
// pixel(p) = float32(p)/255 at row stride KP).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <utility>

#include "kernels/stationary/layout.cuh"

namespace mlp {
namespace wstat {

// Variant bits (k_stationary_variant's template parameter V; 0 = the first form, the untiled
// CUDA-core kernel). A bit marked "same bits" keeps every sum's order; kVTile, kVMma and kVRcp
// each make a new order or rounding, so the variants fall into families of equal results
// (variants.cuh's family()); dev/stationary/stationary_epoch.cu checks and times each.
constexpr int kVNoFence = 2;  // counter form without the two __threadfence (bar.sync + red.release,
                              // ld.acquire + bar.sync, as CUTLASS's generic barrier)
constexpr int kVTile = 16;    // register-tiled F1 and G (a new, fixed summation order: results
                              // differ from V = 0 in the last bits; see "kVTile" in the kernel);
                              // the W2 update on warp 7, which G leaves free, beside G
constexpr int kVFastConv = 32;  // the next inputs' conversion without I2F (pixel_of_byte; same bits)
constexpr int kVConv2 = 128;    // with kVFastConv: the conversion by (row, half), every word loaded
                                // before the first store, every column test a constant
                                // (convert_rows; same bits)
constexpr int kVMma = 512;      // with kVTile: F1 and G on the tensor cores (TF32 m16n8k8, every
                                // operand split in two; a new summation order)
                                // (bit 256 is dev/stationary/probe.cuh's kVProbe)
constexpr int kVH2 = 4096;      // F2's H by unit pairs, one pass of RPB·U/2 threads (same bits)
constexpr int kVRel7 = 8192;    // warp 7 releases the counter and polls it; warps 0-6 convert the
                                // next inputs meanwhile (the block barrier after the logits covers
                                // the copies), so the conversion no longer waits for the release's
                                // fence (same bits)
constexpr int kVPrefetchL2 = 65536;  // at launch, block (c, r) prefetches into L2 its slice of the
                                     // epoch's rows e ≡ c (mod G) and their labels, so an epoch that
                                     // starts with a cold L2 (the gate evaluates between epochs)
                                     // does not stage from HBM (same bits)
constexpr int kVRcp = 32768;    // S: one correctly rounded reciprocal of the softmax sum and of nb
                                // instead of two IEEE divisions (a new rounding of dZ)
// The bits whose variant is the shipped kernel (cuda/kernels/stationary.cuh): same results, bit
// for bit (`build/stationary_epoch --check-shipped` runs both).
constexpr int kShippedV = kVTile | kVNoFence | kVFastConv | kVConv2 | kVMma | kVH2 | kVRel7 | kVRcp | kVPrefetchL2;

// Phase marks (WSTAT_MARK slots), in the order a step passes them.
// kMF1a / kMF1b split F1 into products | shuffle reduce | DSMEM push, kMGa G into products | reduce.
enum Mark : int { kMTop, kMF1a, kMF1b, kMF1, kMA, kMH, kMLogits, kMArrive, kMConvert, kMDone, kMS, kMD, kMB, kMGa, kMG, kMEnd, kMarks };

// Cfg plus what the CUDA-core forms need: kVTile's G batch parts per input quad (lanes) and the
// warps its G uses (warp 7 stays free).
template <int CL, int U_>
struct VCfg : Cfg<CL, U_> {
  using Base = Cfg<CL, U_>;
  static constexpr int kGP = Base::kKqG * 8 <= kThreads - 32 ? 8 : 4;
  static constexpr int kGWarps = (Base::kKqG * kGP + 31) / 32;
  static_assert(Base::kKqG * kGP <= kThreads - 32, "kVTile: G leaves warp 7 free");
  static_assert(kThreads == 256 && kRows == 128 && U_ % 4 == 0, "kVTile: F1's row mapping");
  static_assert(kThreads == 2 * kRows, "F1: one thread per (row, K half)");
  static_assert(Base::GS * Base::NT <= kThreads && kRows % Base::GS == 0, "G tiles");
};

// pixel(p) of byte i of w: byte_as_float, then the same two roundings as pixel(), bit for bit.
__device__ __forceinline__ float pixel_of_byte(unsigned w, int i) {
  const float f = byte_as_float(w, i);
  const float q = __fmul_rn(f, kInv255);
  const float e = fmaf(-q, 255.0f, f);
  return fmaf(e, kInv255, q);
}

// One level of a butterfly reduce-scatter across the lanes `off` apart: v[0, N) of this lane and
// its partner -> v[0, N/2) = this lane's half (the upper one when `hi`) of the pairwise sums. The
// two lanes add the same two floats (commutative), so the result does not depend on which lane
// computes it; every index is a compile-time constant (registers, no local memory).
template <int N, int M>
__device__ __forceinline__ void reduce_half(float (&v)[M], int off, bool hi) {
  static_assert(N % 2 == 0 && N <= M, "reduce_half");
#pragma unroll
  for (int i = 0; i < N / 2; ++i) {
    const float send = hi ? v[i] : v[N / 2 + i];
    const float keep = hi ? v[N / 2 + i] : v[i];
    v[i] = keep + __shfl_xor_sync(0xffffffffu, send, off);
  }
}

// kVConv2's (row, half) unit of the conversion, as cuda/kernels/stationary/ops.cuh's
// convert_row_half but to pixel(p) at row stride KP (no swizzle); the ones column KS is 1 on
// rank 0's valid rows (b1's input).
template <int CL>
__device__ __forceinline__ void convert_row_half_pixel(float* Xs, const uint8_t* Bb, int nb, int rank, int row, int h) {
  using C = Slice<CL>;
  constexpr int kStride = C::KP, kQ = kStride / 4, kQ0 = (kQ + 1) / 2;
  const bool valid = row < nb;
  const unsigned* src = reinterpret_cast<const unsigned*>(Bb + row * C::XB);
  float* dst = Xs + row * kStride;
  const float ones = valid && rank == 0 ? 1.f : 0.f;
  unsigned w[kQ0];
  auto load = [&](auto qc) {
    constexpr int j = decltype(qc)::value;
    const int q = j + h * kQ0;
    w[j] = valid && q < kQ && 4 * q < C::KS ? src[q] : 0u;  // bytes past KS in the packed slice are 0
  };
  auto quad = [&](auto qc) {
    constexpr int q = decltype(qc)::value, k = 4 * q, j = q >= kQ0 ? q - kQ0 : q;
    float v[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) v[i] = k + i < C::KS ? pixel_of_byte(w[j], i) : (k + i == C::KS ? ones : 0.f);
    *reinterpret_cast<float4*>(dst + 4 * q) = make_float4(v[0], v[1], v[2], v[3]);
  };
  for_each_const<0>(load, std::make_integer_sequence<int, kQ0>{});
  if (h == 0) for_each_const<0>(quad, std::make_integer_sequence<int, kQ0>{});
  else for_each_const<kQ0>(quad, std::make_integer_sequence<int, kQ - kQ0>{});
}

// kVConv2: convert_bytes<CL, true>'s result (the same bits), unrolled, thread (row tid/2, half tid%2).
template <int CL>
__device__ __forceinline__ void convert_rows(float* Xs, const uint8_t* Bb, int nb, int rank) {
  static_assert(kThreads == 2 * kRows, "convert_rows: two threads a row");
  convert_row_half_pixel<CL>(Xs, Bb, nb, rank, (int)threadIdx.x >> 1, (int)threadIdx.x & 1);
}

// Bb bytes -> Xs[kRows][KP] floats; rows >= nb and inputs >= KS are 0, except the ones column
// (input KS) of rank 0's valid rows, which carries b1. kFast: pixel_of_byte (no I2F; same bits).
template <int CL, bool kFast = false>
__device__ __forceinline__ void convert_bytes(float* Xs, const uint8_t* Bb, int nb, int rank) {
  using C = Slice<CL>;
  for (int e = threadIdx.x; e < kRows * C::kKq; e += kThreads) {
    const int b = e / C::kKq, q = e % C::kKq, k = 4 * q;
    float v[4] = {0.f, 0.f, 0.f, 0.f};
    if (b < nb) {
      const unsigned w = *reinterpret_cast<const unsigned*>(Bb + b * C::XB + k);
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const float x = kFast ? pixel_of_byte(w, i) : pixel((w >> (8 * i)) & 0xffu);
        v[i] = k + i < C::KS ? x : (k + i == C::KS && rank == 0 ? 1.f : 0.f);
      }
    }
    *reinterpret_cast<float4*>(Xs + b * C::KP + k) = make_float4(v[0], v[1], v[2], v[3]);
  }
}

}  // namespace wstat
}  // namespace mlp
