// cuda/transformer/emu/cuda_runtime.h — a CPU stand-in for the CUDA runtime and the device built-ins
// that cuda/transformer/ uses, so that build/vit_forward_emu (the same sources, compiled by g++ with
// -DVIT_EMULATE and this folder first on the include path) runs the kernels on a machine without a
// GPU (tests/test_transformer_emulated.py). Not a general emulator: each block's threads run as fibers
// (switched at every barrier) on the launching thread, block after block, so __syncthreads
// is a barrier, `__shared__` is a function-static array shared by the block's threads, and the warp
// shuffles exchange through a per-warp slot array between two warp barriers (every lane of a warp must
// take part, as on the device with a full mask). Memory is host memory; streams, events and graphs
// run in order.
#pragma once
#ifndef VIT_EMULATE
#error "cuda/transformer/emu/ is the CPU emulation: build with -DVIT_EMULATE"
#endif
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#if !defined(__x86_64__)
#include <ucontext.h>
#endif
#include <tuple>
#include <vector>

// ---------------------------------------------------------------------------------------- device side
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  constexpr dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
struct __attribute__((aligned(16))) float4 {
  float x, y, z, w;
};
struct __attribute__((aligned(8))) float2 {
  float x, y;
};
inline float __uint_as_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline uint32_t __float_as_uint(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
inline float2 make_float2(float x, float y) { return {x, y}; }

struct EmuStream {};

namespace emu {
// A fiber's saved context. On x86-64 a switch saves the callee-saved registers on the fiber's own stack
// and swaps stack pointers (ucontext's swapcontext also saves the signal mask: a system call per
// switch, ~50x slower); elsewhere ucontext.
#if defined(__x86_64__)
extern "C" void vit_emu_switch(void** save_sp, void* to_sp);
asm(R"(
  .text
  .weak vit_emu_switch
  .type vit_emu_switch, @function
vit_emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size vit_emu_switch, .-vit_emu_switch
)");
struct Context {
  void* sp = nullptr;
};
// A new fiber's stack: six zero registers, then `entry` as the return address of the first switch
// (entered with the stack 16-byte aligned less 8, as after a call).
inline void make_context(Context& c, char* stack, size_t size, void (*entry)()) {
  uintptr_t top = (reinterpret_cast<uintptr_t>(stack) + size) & ~uintptr_t(15);
  void** p = reinterpret_cast<void**>(top);
  *--p = nullptr;                          // entry's (never used) return address
  *--p = reinterpret_cast<void*>(entry);   // where the first switch returns to
  for (int i = 0; i < 6; ++i) *--p = nullptr;  // rbp rbx r12 r13 r14 r15
  c.sp = p;
}
inline void switch_context(Context& from, Context& to) { vit_emu_switch(&from.sp, to.sp); }
#else
struct Context {
  ucontext_t uc;
};
inline void make_context(Context& c, char* stack, size_t size, void (*entry)()) {
  getcontext(&c.uc);
  c.uc.uc_stack.ss_sp = stack;
  c.uc.uc_stack.ss_size = size;
  c.uc.uc_link = nullptr;
  makecontext(&c.uc, entry, 0);
}
inline void switch_context(Context& from, Context& to) { swapcontext(&from.uc, &to.uc); }
#endif

// A barrier among fibers: the last to arrive releases the others (each waits for the generation to move).
struct Barrier {
  unsigned count = 0, arrived = 0, generation = 0;
};
struct Block {
  unsigned threads = 0;
  Barrier all;
  std::vector<Barrier> warps;
  std::vector<float> slots;     // one per thread: the shuffles' exchange
  std::vector<float> mma;       // six per thread: the mma fragments' exchange
  std::vector<float> dynamic;   // extern __shared__
  std::vector<Context> ctx;  // the threads' fibers
  std::vector<char> finished;
  Context scheduler;
  unsigned current = 0;
};
inline Block* tl_block = nullptr;  // one block runs at a time, on the launching thread
inline unsigned tl_tid = 0;

inline void yield() {
  Block& b = *tl_block;
  switch_context(b.ctx[b.current], b.scheduler);
}
inline void arrive_and_wait(Barrier& br) {
  if (++br.arrived == br.count) {
    br.arrived = 0;
    ++br.generation;
    return;
  }
  const unsigned gen = br.generation;
  while (gen == br.generation) yield();
}
}  // namespace emu

inline dim3 threadIdx, blockIdx, blockDim, gridDim;

inline void __syncthreads() { emu::arrive_and_wait(emu::tl_block->all); }
// A read through the read-only cache: a plain read here.
template <class T>
inline T __ldg(const T* p) { return *p; }
// A warp barrier (every lane of the warp takes part, as with a full mask on the device).
inline void __syncwarp(unsigned = 0xffffffffu) { emu::arrive_and_wait(emu::tl_block->warps[emu::tl_tid / 32]); }

inline float emu_shuffle(float v, unsigned src_lane) {
  emu::Block& b = *emu::tl_block;
  const unsigned tid = emu::tl_tid, warp = tid / 32;
  b.slots[tid] = v;
  emu::arrive_and_wait(b.warps[warp]);
  const float r = b.slots[warp * 32 + (src_lane & 31)];
  emu::arrive_and_wait(b.warps[warp]);
  return r;
}
inline float __shfl_xor_sync(unsigned, float v, int mask) { return emu_shuffle(v, (emu::tl_tid % 32) ^ (unsigned)mask); }
inline float __shfl_sync(unsigned, float v, int lane) { return emu_shuffle(v, (unsigned)lane); }

// One block at a time on one thread: an atomic is a plain update.
inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) {
  const unsigned long long old = *p;
  *p += v;
  return old;
}

// cvt.rna.tf32.f32: round to nearest (ties away from zero) to 10 mantissa bits, the low 13 bits zero.
inline uint32_t emu_tf32_rna(float x) { return (__float_as_uint(x) + 0x1000u) & 0xffffe000u; }

// One warp-wide mma.sync of K-deep products: each lane's 4 A and 2 B registers exchanged through
// the block's `mma` slots, then for each of its outputs (d0, d1 at (g, 2t + {0, 1}), d2, d3 at
// (g + 8, 2t + {0, 1}), lane = 4·g + t) the sum over k of A(row, k)·B(k, col) in double, rounded
// once (the tensor cores round less well; the bounds allow for it). A(w, row, k) and B(w, k, col)
// read an element from the warp's 32 × 6 exchanged words w (lane-major, a0..a3 then b0, b1).
template <int K, class FA, class FB>
inline void emu_mma_exchange(float d[4], const uint32_t a[4], const uint32_t b[2], FA A, FB B) {
  emu::Block& blk = *emu::tl_block;
  const unsigned tid = emu::tl_tid, warp = tid / 32, lane = tid % 32;
  float* mine = &blk.mma[tid * 6];
  for (int i = 0; i < 4; ++i) mine[i] = __uint_as_float(a[i]);
  mine[4] = __uint_as_float(b[0]);
  mine[5] = __uint_as_float(b[1]);
  emu::arrive_and_wait(blk.warps[warp]);
  const float* w = &blk.mma[warp * 32 * 6];
  const int g = (int)lane / 4, t = (int)lane % 4;
  float out[4];
  for (int c = 0; c < 4; ++c) {
    const int row = g + 8 * (c / 2), col = 2 * t + c % 2;
    double acc = d[c];
    for (int k = 0; k < K; ++k) acc += A(w, row, k) * B(w, k, col);
    out[c] = (float)acc;
  }
  emu::arrive_and_wait(blk.warps[warp]);
  for (int c = 0; c < 4; ++c) d[c] = out[c];
}

// mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32, d = a·b + d, from the PTX ISA's fragment layout
// (lane = 4·g + t): a0 (g, t), a1 (g + 8, t), a2 (g, t + 4), a3 (g + 8, t + 4) of A [16 × 8]; b0 (t, g),
// b1 (t + 4, g) of B [8 × 8]; d as emu_mma_exchange says.
inline void emu_mma_tf32(float d[4], const uint32_t a[4], const uint32_t b[2]) {
  emu_mma_exchange<8>(
      d, a, b, [](const float* w, int row, int k) { return (double)w[((row % 8) * 4 + k % 4) * 6 + row / 8 + 2 * (k / 4)]; },
      [](const float* w, int k, int n) { return (double)w[(n * 4 + k % 4) * 6 + 4 + k / 4]; });
}

// cvt.rn.bf16x2.f32 d, hi, lo: each float rounded to nearest even to bfloat16 (its top 16 bits),
// `hi` in the upper half and `lo` in the lower; a NaN stays a quiet NaN.
inline uint32_t emu_bf16_rn(float x) {
  const uint32_t u = __float_as_uint(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (u >> 16) | 0x40u;
  return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
}
inline uint32_t emu_pack_bf16x2(float lo, float hi) { return (emu_bf16_rn(hi) << 16) | emu_bf16_rn(lo); }
// Half `hi` (0 low, 1 high) of a word of two bfloat16, as a float.
inline double emu_bf16_half(float word, int hi) {
  return __uint_as_float(((__float_as_uint(word) >> (16 * hi)) & 0xffffu) << 16);
}

// mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32, d = a·b + d, from the PTX ISA's fragment
// layout (lane = 4·g + t; each register two bfloat16, the lower column or row in the low half):
// a0 (g, 2t..2t+1), a1 (g + 8, 2t..), a2 (g, 2t + 8..), a3 (g + 8, 2t + 8..) of A [16 × 16];
// b0 (2t..2t+1, g), b1 (2t + 8.., g) of B [16 × 8]; d as emu_mma_exchange says.
inline void emu_mma_bf16(float d[4], const uint32_t a[4], const uint32_t b[2]) {
  emu_mma_exchange<16>(
      d, a, b,
      [](const float* w, int row, int k) {  // register row/8 + 2·(k/8) of lane 4·(row%8) + (k%8)/2
        return emu_bf16_half(w[((row % 8) * 4 + (k % 8) / 2) * 6 + row / 8 + 2 * (k / 8)], k % 2);
      },
      [](const float* w, int k, int n) { return emu_bf16_half(w[(n * 4 + (k % 8) / 2) * 6 + 4 + k / 8], k % 2); });
}

#define VIT_DYNAMIC_SMEM(name) float* name = emu::tl_block->dynamic.data()

// ---------------------------------------------------------------------------------------- runtime
enum cudaError_t {
  cudaSuccess = 0,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidDeviceFunction = 98,
  cudaErrorNoKernelImageForDevice = 209,
  cudaErrorUnsupportedPtxVersion = 222,
};
enum cudaMemcpyKind { cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2, cudaMemcpyDeviceToDevice = 3 };
enum cudaDeviceAttr { cudaDevAttrMultiProcessorCount = 16, cudaDevAttrComputeCapabilityMajor = 75 };
enum cudaStreamCaptureMode { cudaStreamCaptureModeThreadLocal = 1 };
constexpr unsigned cudaStreamNonBlocking = 1;

struct EmuEvent { std::chrono::steady_clock::time_point t; };
struct EmuGraph { std::vector<std::function<void()>> launches; };
using cudaStream_t = EmuStream*;
using cudaEvent_t = EmuEvent*;
using cudaGraph_t = EmuGraph*;
using cudaGraphExec_t = EmuGraph*;
struct cudaDeviceProp {
  char name[256] = "CPU emulation (cuda/transformer/emu)";
};

namespace emu {
inline EmuGraph*& capturing() {
  static EmuGraph* g = nullptr;
  return g;
}
inline int sms() {
  static const int n = [] {
    const char* v = std::getenv("VIT_EMU_SMS");
    return v ? std::atoi(v) : 4;
  }();
  return n;
}

// Runs `body` for every thread of every block of the grid: a block's threads are fibers on the
// calling thread, switched round-robin at every barrier until all have returned.
inline const std::function<void()>* tl_body = nullptr;
inline void fiber_main() {
  (*tl_body)();
  Block& b = *tl_block;
  b.finished[b.current] = 1;
  switch_context(b.ctx[b.current], b.scheduler);  // never resumed
  std::abort();
}

// One block.
inline void run_block(dim3 idx, dim3 grid, dim3 block, size_t smem,
                                                const std::function<void()>& body, std::vector<char>& stacks) {
  constexpr size_t kStack = 64 * 1024;
  const unsigned nt = block.x * block.y * block.z;
  if (stacks.size() < nt * kStack) stacks.resize(nt * kStack);
  Block b;
  b.threads = nt;
  b.all.count = nt;
  b.warps.resize((nt + 31) / 32);
  for (unsigned w = 0; w < b.warps.size(); ++w) b.warps[w].count = std::min(32u, nt - 32 * w);
  b.slots.assign(nt, 0.f);
  b.mma.assign((size_t)nt * 6, 0.f);
  b.dynamic.assign(smem / sizeof(float) + 1, 0.f);
  b.ctx.resize(nt);
  b.finished.assign(nt, 0);
  tl_block = &b;
  tl_body = &body;
  blockIdx = idx;
  blockDim = block;
  gridDim = grid;
  for (unsigned t = 0; t < nt; ++t) make_context(b.ctx[t], stacks.data() + t * kStack, kStack, fiber_main);
  for (unsigned left = nt; left > 0;)
    for (unsigned t = 0; t < nt; ++t) {
      if (b.finished[t]) continue;
      b.current = t;
      tl_tid = t;
      threadIdx = dim3(t % block.x, (t / block.x) % block.y, t / (block.x * block.y));
      switch_context(b.scheduler, b.ctx[t]);  // back at the fiber's next barrier, or at its end
      if (b.finished[t]) --left;
    }
}

inline void run_grid(dim3 grid, dim3 block, size_t smem, const std::function<void()>& body) {
  static std::vector<char> stacks;  // the fibers' stacks, reused by every block
  for (unsigned bz = 0; bz < grid.z; ++bz)
    for (unsigned by = 0; by < grid.y; ++by)
      for (unsigned bx = 0; bx < grid.x; ++bx) run_block(dim3(bx, by, bz), grid, block, smem, body, stacks);
}

inline void launch(dim3 grid, dim3 block, size_t smem, EmuStream*, std::function<void()> body) {
  if (EmuGraph* g = capturing()) {
    g->launches.push_back([=] { run_grid(grid, block, smem, body); });
    return;
  }
  run_grid(grid, block, smem, body);
}
}  // namespace emu

// The arguments are evaluated (copied) at the launch, as on the device.
#define VIT_LAUNCH(kernel, grid, block, smem, stream, ...) \
  emu::launch(dim3(grid), dim3(block), (smem), (stream), [args_ = std::make_tuple(__VA_ARGS__)] { std::apply(kernel, args_); })

inline const char* cudaGetErrorName(cudaError_t e) { return e == cudaSuccess ? "cudaSuccess" : "cudaErrorEmulated"; }
inline const char* cudaGetErrorString(cudaError_t e) { return e == cudaSuccess ? "no error" : "emulated error"; }
inline cudaError_t cudaPeekAtLastError() { return cudaSuccess; }
inline cudaError_t cudaGetLastError() { return cudaSuccess; }
template <class T>
cudaError_t cudaMalloc(T** p, size_t bytes) {
  *p = static_cast<T*>(std::malloc(bytes ? bytes : 1));
  if (!*p) return cudaErrorMemoryAllocation;
  std::memset(*p, 0xff, bytes);  // NaN: an output never written fails its check
  return cudaSuccess;
}
inline cudaError_t cudaFree(void* p) { std::free(p); return cudaSuccess; }
inline cudaError_t cudaMemset(void* p, int v, size_t bytes) {
  std::memset(p, v, bytes);
  return cudaSuccess;
}
inline cudaError_t cudaMemsetAsync(void* p, int v, size_t bytes, cudaStream_t = nullptr) { return cudaMemset(p, v, bytes); }
inline cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind) {
  std::memmove(dst, src, bytes);
  return cudaSuccess;
}
inline cudaError_t cudaGetDevice(int* d) { *d = 0; return cudaSuccess; }
inline cudaError_t cudaDeviceGetAttribute(int* v, cudaDeviceAttr a, int) {
  *v = a == cudaDevAttrComputeCapabilityMajor ? 9 : emu::sms();
  return cudaSuccess;
}
inline cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int) { *p = cudaDeviceProp{}; return cudaSuccess; }
inline cudaError_t cudaDeviceSynchronize() { return cudaSuccess; }
inline cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned) { *s = new EmuStream; return cudaSuccess; }
inline cudaError_t cudaStreamDestroy(cudaStream_t s) { delete s; return cudaSuccess; }
inline cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
inline cudaError_t cudaEventCreate(cudaEvent_t* e) { *e = new EmuEvent; return cudaSuccess; }
inline cudaError_t cudaEventDestroy(cudaEvent_t e) { delete e; return cudaSuccess; }
inline cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t = nullptr) {
  e->t = std::chrono::steady_clock::now();
  return cudaSuccess;
}
inline cudaError_t cudaEventSynchronize(cudaEvent_t) { return cudaSuccess; }
inline cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t a, cudaEvent_t b) {
  *ms = std::chrono::duration<float, std::milli>(b->t - a->t).count();
  return cudaSuccess;
}
inline cudaError_t cudaStreamBeginCapture(cudaStream_t, cudaStreamCaptureMode) {
  emu::capturing() = new EmuGraph;
  return cudaSuccess;
}
inline cudaError_t cudaStreamEndCapture(cudaStream_t, cudaGraph_t* g) {
  *g = emu::capturing();
  emu::capturing() = nullptr;
  return cudaSuccess;
}
inline cudaError_t cudaGraphInstantiate(cudaGraphExec_t* e, cudaGraph_t g, unsigned long long) {
  *e = new EmuGraph(*g);
  return cudaSuccess;
}
inline cudaError_t cudaGraphLaunch(cudaGraphExec_t e, cudaStream_t) {
  for (auto& l : e->launches) l();
  return cudaSuccess;
}
inline cudaError_t cudaGraphDestroy(cudaGraph_t g) { delete g; return cudaSuccess; }
inline cudaError_t cudaGraphExecDestroy(cudaGraphExec_t e) { delete e; return cudaSuccess; }
template <class K>
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* n, K, int threads, size_t) {
  *n = threads >= 256 ? 2 : threads >= 128 ? 3 : 6;
  return cudaSuccess;
}
