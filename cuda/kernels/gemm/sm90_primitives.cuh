// cuda/kernels/gemm/sm90_primitives.cuh — the Hopper (sm_90a) building blocks of the GEMM engine's
// mainloop, each one PTX instruction or a short loop of one:
//   mbarrier_init / arrive / arrive_expect_tx / wait     the shared-memory ring's full and empty barriers
//   tma_load_2d(dst, map, c0, c1, bar)                    one TMA box into shared memory, completing on bar
//   smem_desc<MAJOR>(p, lbo, sbo)                         a wgmma operand descriptor, 128-byte swizzle
//   wgmma_fence / wgmma_commit / wgmma_wait<N>            the warpgroup MMA's ordering
//   reg_alloc<N> / reg_dealloc<N>                         setmaxnreg: registers move between warpgroups
//   fence_operand(x)                                      keeps the compiler from moving x across them
// Only compiled where the architecture has them (MLP_SM90A: sm_90a); elsewhere the engine's kernel
// body is empty and its host side refuses the device first (sm90_engine.cu).
#pragma once
#include <cuda.h>  // CUtensorMap
#include <cstdint>

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define MLP_SM90A 1
#endif

namespace mlp::gemm::sm90 {

__device__ __forceinline__ uint32_t smem_u32(const void* p) { return (uint32_t)__cvta_generic_to_shared(p); }

#ifdef MLP_SM90A
__device__ __forceinline__ void mbarrier_init(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(bar)), "r"(count) : "memory");
}
// Makes the initialised barriers visible to the async proxy (TMA) and the other threads.
__device__ __forceinline__ void fence_barrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\nfence.proxy.async.shared::cta;" ::: "memory");
}
__device__ __forceinline__ void mbarrier_arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_u32(bar)) : "memory");
}
// This thread's arrival, and `bytes` more transaction bytes the barrier's phase waits for.
__device__ __forceinline__ void mbarrier_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(bar)), "r"(bytes) : "memory");
}
// Waits until the barrier's phase of parity `parity` has completed.
__device__ __forceinline__ void mbarrier_wait(uint64_t* bar, uint32_t parity) {
  const uint32_t addr = smem_u32(bar);
  uint32_t done = 0;
  do {
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(addr), "r"(parity)
        : "memory");
  } while (!done);
}
// The box of `map` at coordinates (c0 innermost, c1) into dst (1024-byte aligned for the 128-byte
// swizzle); its bytes count against bar's transaction count.
__device__ __forceinline__ void tma_load_2d(void* dst, const CUtensorMap* map, int c0, int c1, uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" ::"r"(
          smem_u32(dst)),
      "l"((uint64_t)map), "r"(c0), "r"(c1), "r"(smem_u32(bar))
      : "memory");
}
__device__ __forceinline__ void prefetch_tensor_map(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"((uint64_t)map) : "memory");
}
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}
// A barrier of `threads` threads (a multiple of 32) on hardware barrier `id` (1-15; 0 is __syncthreads'):
// the consumer warpgroups' own, after the producer has returned.
__device__ __forceinline__ void named_barrier_sync(uint32_t id, uint32_t threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
template <int N>
__device__ __forceinline__ void reg_alloc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(N));
}
template <int N>
__device__ __forceinline__ void reg_dealloc() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(N));
}
#endif

__device__ __forceinline__ void fence_operand(float& x) { asm volatile("" : "+f"(x)::"memory"); }

// A wgmma shared-memory matrix descriptor (PTX ISA, "Matrix Descriptor Format" of wgmma): the start
// address, the leading and stride byte offsets (each >> 4, 14 bits) and the 128-byte swizzle mode
// (layout type 1 in bits 62-63); base offset 0 (every tile is 1024-byte aligned).
//   K-major tile (rows of 128 bytes of K, 8-row swizzle atoms of 1024 bytes): SBO = 1024, the step
//     from one 8-row group to the next; LBO unused (one instruction's K stays within a row).
//   MN-major tile (TMA boxes of 64 MN elements by BK rows of K, one box per 64 of MN): SBO = 1024,
//     the step between 8-row groups along K; LBO = one box's bytes, the step between 64-element
//     groups along MN.
__device__ __forceinline__ uint64_t smem_desc(const void* p, uint32_t lbo_bytes, uint32_t sbo_bytes) {
  const uint64_t addr = smem_u32(p);
  return ((addr & 0x3FFFF) >> 4) | ((uint64_t)((lbo_bytes & 0x3FFFF) >> 4) << 16) |
         ((uint64_t)((sbo_bytes & 0x3FFFF) >> 4) << 32) | (1ULL << 62);
}

}  // namespace mlp::gemm::sm90
