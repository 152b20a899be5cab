// dev/stationary/probe.cuh — dev-only phase timers for dev/stationary/variant_kernel.cuh. Include
// BEFORE variant_kernel.cuh: it defines WSTAT_MARK, which k_stationary_variant expands at each phase
// mark; only instantiations whose variant V has kVProbe record (thread 0 of each block, clock64
// and %globaltimer per (step, block, mark) into g_marks). Every other V compiles as if the hook
// were absent.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace probe {
constexpr int kVProbe = 1 << 8;  // variant bit: record the phase marks
constexpr int kMaxSteps = 64, kSlots = 16;
__device__ unsigned long long* g_marks;  // [kMaxSteps][grid][kSlots][2] (clock64, globaltimer ns)
__device__ __forceinline__ void mark(int t, int slot) {
  if (threadIdx.x == 0 && t < kMaxSteps) {
    const unsigned long long c = clock64();
    unsigned long long g;
    asm volatile("mov.u64 %0, %%globaltimer;\n" : "=l"(g));
    unsigned long long* p = g_marks + (((size_t)t * gridDim.x + blockIdx.x) * kSlots + slot) * 2;
    p[0] = c;
    p[1] = g;
  }
}
}  // namespace probe
#define WSTAT_MARK(t, slot)                                                                        \
  do {                                                                                             \
    if constexpr ((V & probe::kVProbe) != 0) probe::mark((t), (slot)); \
  } while (0)
