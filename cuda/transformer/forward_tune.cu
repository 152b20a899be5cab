// cuda/transformer/forward_tune.cu — VitForward::tune: each GEMM's tile chosen by timing, cross-checked
// bit for bit against the heuristic tile's output (forward.h).
#include <algorithm>
#include <cstdio>

#include "common/common.h"
#include "common/cuda_check.h"
#include "transformer/forward.h"
#include "transformer/device_util.cuh"

using namespace vit;

namespace vit {
// How many of n floats differ bit for bit between a and b (the tile tuner's check: every tile sums each
// output's products in the same order, so their outputs must be equal).
__global__ void __launch_bounds__(256) count_mismatch_kernel(const float* __restrict__ a, const float* __restrict__ b,
                                                             size_t n, unsigned long long* __restrict__ count) {
  unsigned long long local = 0;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    local += __float_as_uint(a[i]) != __float_as_uint(b[i]);
  if (local) atomicAdd(count, local);
}

}  // namespace vit

namespace {

struct Scratch {
  float* p = nullptr;
  explicit Scratch(size_t floats) { CUDA_CHECK(cudaMalloc(&p, floats * sizeof(float))); }
  ~Scratch() { if (p) cudaFree(p); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
};

struct EventPair {
  cudaEvent_t a = nullptr, b = nullptr;
  EventPair() {
    CUDA_CHECK(cudaEventCreate(&a));
    CUDA_CHECK(cudaEventCreate(&b));
  }
  ~EventPair() {
    if (a) cudaEventDestroy(a);
    if (b) cudaEventDestroy(b);
  }
};

}  // namespace

VitForward::TuneReport VitForward::tune(int batch, cudaStream_t st, int reps) {
  if (batch < 1 || batch > max_batch_) throw UserError("tune: batch outside [1, max batch]");
  if (flow_ != Flow::kFused) return {"an engine flow: the wgmma engine plans each GEMM itself (or its stand-in runs): no tiles to tune", 0};
  const int M = batch * s_.tokens;
  const size_t floats = (size_t)M * std::max(3 * s_.d, s_.mlp);
  Scratch ref(floats), out(floats);
  unsigned long long* count = nullptr;
  CUDA_CHECK(cudaMalloc(&count, sizeof(unsigned long long)));
  EventPair ev;
  TuneReport rep;
  std::array<TileKind, kGemmOps> pick{};
  try {
    for (int w = 0; w < kGemmOps; ++w) {
      const GemmOp op = (GemmOp)w;
      GemmArgs a = args_for(op, 0, M);
      const size_t n = (size_t)M * a.N;
      const TileKind base = heuristic(batch, w);
      a.C = ref.p;
      launch_gemm(op, engine_, base, a, st);
      a.C = out.p;
      float ms_of[3] = {0, 0, 0};
      bool ok[3] = {false, false, false};
      rep.text += std::string(w ? "; " : "") + gemm_op_name(op) + ":";
      for (int t = 0; t < 3; ++t) {
        const TileKind k = (TileKind)t;
        launch_gemm(op, engine_, k, a, st);  // a warm-up launch, whose output is compared
        CUDA_CHECK(cudaMemsetAsync(count, 0, sizeof(unsigned long long), st));
        const int blocks = (int)std::min<size_t>((n + 255) / 256, 4096);
        VIT_LAUNCH(count_mismatch_kernel, blocks, 256, 0, st, ref.p, out.p, n, count);
        CUDA_CHECK_LAUNCH("count_mismatch_kernel");
        CUDA_CHECK(cudaEventRecord(ev.a, st));
        for (int r = 0; r < reps; ++r) launch_gemm(op, engine_, k, a, st);
        CUDA_CHECK(cudaEventRecord(ev.b, st));
        CUDA_CHECK(cudaEventSynchronize(ev.b));
        float ms = 0;
        CUDA_CHECK(cudaEventElapsedTime(&ms, ev.a, ev.b));
        ms /= reps;
        unsigned long long bad = 0;
        CUDA_CHECK(cudaMemcpy(&bad, count, sizeof bad, cudaMemcpyDeviceToHost));
        char b[96];
        std::snprintf(b, sizeof b, " %s %.4f ms%s", tile_name(k), ms, bad ? " (output differs: not used)" : "");
        rep.text += b;
        rep.mismatched += bad ? 1 : 0;
        ms_of[t] = ms;
        ok[t] = bad == 0;
      }
      pick[w] = base;
      for (int t = 0; t < 3; ++t)
        if (ok[t] && ms_of[t] < ms_of[(int)pick[w]]) pick[w] = (TileKind)t;
      rep.text += std::string(" -> ") + tile_name(pick[w]);
    }
  } catch (...) {
    cudaFree(count);
    throw;
  }
  CUDA_CHECK(cudaFree(count));
  tuned_[{(int)engine_, batch}] = pick;
  return rep;
}
