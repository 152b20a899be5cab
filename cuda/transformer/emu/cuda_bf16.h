// cuda/transformer/emu/cuda_bf16.h — the CPU emulation's bfloat16 (cuda_runtime.h here says what the
// emulation is): __nv_bfloat16 as its 16 bits (a float's upper half), __float2bfloat16_rn rounding to
// nearest even as cvt.rn does (cuda_runtime.h emu_bf16_rn), and __bfloat162float exact.
#pragma once
#include <cstdint>

#include "transformer/emu/cuda_runtime.h"  // emu_bf16_rn, __uint_as_float

struct __nv_bfloat16 {
  uint16_t bits;
};
inline __nv_bfloat16 __float2bfloat16_rn(float x) { return __nv_bfloat16{(uint16_t)emu_bf16_rn(x)}; }
inline float __bfloat162float(__nv_bfloat16 b) { return __uint_as_float((uint32_t)b.bits << 16); }
