// tests/emu/kernel_builtins.h — the CUDA built-ins our path kernels (cuda/kernels/tiled.cuh,
// persistent.cuh) use beyond those of the transformer's CPU emulation (cuda/transformer/emu/
// cuda_runtime.h, included first). One block runs at a time there, so a fence is nothing and an
// atomic is a plain update. Included by tests/emu/tiled_emu.cpp and tests/emu/persistent_emu.cpp.
#pragma once

// __ldg: cuda_runtime.h has it.
inline float __ldcg(const float* p) { return *p; }
inline float4 __ldcg(const float4* p) { return *p; }
inline void __threadfence() {}
inline unsigned atomicAdd(unsigned* p, unsigned v) {
  const unsigned old = *p;
  *p += v;
  return old;
}
