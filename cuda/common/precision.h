// cuda/common/precision.h — the arithmetic precisions a path or a submission may declare: the one
// owner of their names and unit roundoffs. FP32 is every product in float32; TF32 and BF16 round
// each matrix product's inputs to that format (10 and 7 explicit mantissa bits) and accumulate
// in float32; weights, momentum and the update stay float32 in all three. Plain C++, no CUDA header.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>

#include "contract/model.h"  // MLP_HD: host and device (round_to_precision is also the persistent kernels')

namespace mlp {

enum class Precision { FP32 = 0, TF32 = 1, BF16 = 2 };

// "fp32", "tf32", "bf16" (run.json, the report, --precision; spec/schema.py PRECISIONS).
inline const char* precision_name(Precision p) {
  switch (p) {
    case Precision::FP32: return "fp32";
    case Precision::TF32: return "tf32";
    case Precision::BF16: return "bf16";
  }
  return "unknown";
}

// The unit roundoff u of a product's inputs in the format, round to nearest: 2^-24 (float32's
// 24-bit significand), 2^-11 (TF32's 11), 2^-8 (bfloat16's 8).
inline double unit_roundoff(Precision p) {
  switch (p) {
    case Precision::FP32: return 5.9604644775390625e-08;  // 2^-24
    case Precision::TF32: return 4.8828125e-04;           // 2^-11
    case Precision::BF16: return 3.90625e-03;             // 2^-8
  }
  return 0;
}
inline const char* unit_roundoff_text(Precision p) {
  switch (p) {
    case Precision::FP32: return "2^-24";
    case Precision::TF32: return "2^-11";
    case Precision::BF16: return "2^-8";
  }
  return "?";
}

// The rounding a matrix product's inputs undergo before the product, relative, round to nearest:
// 0 for FP32 (the inputs are the float32 values themselves: nothing more is rounded than float32
// arithmetic rounds), unit_roundoff(p) for TF32 and BF16. The gate's tolerances add this term to
// their float32 ones (gate/tolerances.h), so an FP32 submission's limits are exactly float32's.
inline double input_roundoff(Precision p) { return p == Precision::FP32 ? 0.0 : unit_roundoff(p); }

// run.json's `accumulator` of a path whose products take inputs of precision p and sum in float32:
// "float32", "float32 (TF32 products)", "float32 (BF16 products)" (tests/test_gpu_precision_paths.py
// reads the precision's name in it). Paths with another arithmetic (stationary's split) say their own.
inline std::string products_accumulator(Precision p) {
  switch (p) {
    case Precision::TF32: return "float32 (TF32 products)";
    case Precision::BF16: return "float32 (BF16 products)";
    case Precision::FP32: break;
  }
  return "float32";
}

// The precision of a name, or false for any other name.
inline bool parse_precision(const std::string& s, Precision* out) {
  for (Precision p : {Precision::FP32, Precision::TF32, Precision::BF16})
    if (s == precision_name(p)) {
      *out = p;
      return true;
    }
  return false;
}

// The precision of its enum value (submission.h's MLP_PRECISION_*, which equal these), or false
// for any other value.
inline bool precision_of_value(int v, Precision* out) {
  for (Precision p : {Precision::FP32, Precision::TF32, Precision::BF16})
    if (v == (int)p) {
      *out = p;
      return true;
    }
  return false;
}

// x rounded to the format of p, as a float: TF32 to nearest with ties away from zero (what
// cvt.rna.tf32.f32 does), bfloat16 to nearest even (cvt.rn.bf16.f32); FP32, NaN and infinities
// unchanged. The host's rounding of a product's input (gate/cpu_reference.h's rounded-input
// reference) and the persistent precision paths' (kernels/persistent.cuh, on any architecture);
// tests/submissions/naive_base.cuh rounds with the same integer operations.
MLP_HD inline float round_to_precision(float x, Precision p) {
  if (p == Precision::FP32 || x != x || x - x != 0.f) return x;
  uint32_t b;
  std::memcpy(&b, &x, 4);
  if (p == Precision::TF32) b = (b + 0x1000u) & ~0x1FFFu;              // 10 mantissa bits, ties away
  else b = (b + 0x7FFFu + ((b >> 16) & 1u)) & 0xFFFF0000u;            // 7 mantissa bits, ties even
  float y;
  std::memcpy(&y, &b, 4);
  return y;
}

// The two TF32 parts of x for a float32-accurate product on TF32 tensor cores (3xTF32: a·b ≈ hi_a·hi_b
// + hi_a·lo_b + lo_a·hi_b): hi = x rounded to TF32, lo = (x - hi) rounded to TF32 (x - hi is exact in
// float32). hi + lo is x within 2^-22·|x|; both are TF32 values, so the tensor cores read them unchanged.
// On the device (sm_80 and later) each rounding is one cvt.rna.tf32.f32, the same rounding as
// round_to_precision's (to nearest, ties away from zero) for every finite x.
MLP_HD inline void split_tf32(float x, float* hi, float* lo) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  uint32_t h, l;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(h) : "f"(x));
  *hi = __uint_as_float(h);
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(l) : "f"(x - *hi));
  *lo = __uint_as_float(l);
#else
  *hi = round_to_precision(x, Precision::TF32);
  *lo = round_to_precision(x - *hi, Precision::TF32);
#endif
}

}  // namespace mlp
