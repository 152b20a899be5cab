// cuda/paths/tiled_path.cu — the kernel path `tiled`: float32-accumulating register-tiled GEMMs
// (cuda/kernels/tiled.cuh) with the tile shape and split-K chosen per GEMM by the problem's shape
// (kernels/tiled_plan.h), four kernels a step, the epoch captured once into a CUDA graph:
//  1 k_tiled_gemm<RowMajor, BiasRelu>  H  = ReLU(X[order]·W1 + b1)   (the batch gathered in the load)
//  2 k_tiled_logits_loss               Z  = H·W2 + b2; loss, dZ = (softmax(Z) − onehot)/B
//  3 k_tiled_head_backward             dW2, db2, dH = (dZ·W2ᵀ) ⊙ (H > 0), db1; W2, b2, b1 updated
//  4 k_tiled_gemm<KMajor, Momentum>    dW1 = X[order]ᵀ·dH, and v = μv − lr·dW1, W1 += v in its epilogue
// No gradient buffer and no gather pass. Any shape with at most tiled::kMaxOut classes; float4
// loads where every row length is a multiple of 4, scalar loads elsewhere.
// `tiled-tf32` and `tiled-bf16` run the two GEMMs (1 and 4) on the tensor cores instead
// (k_tiled_mma, cuda/kernels/tiled_mma.cuh: the products' inputs rounded to TF32 or BF16, float32
// sums, the same epilogues); the head kernels (2, 3) stay float32 in all three.
// On a compute capability 9.0 device with an sm_90 build, `tiled-bf16` runs its two GEMMs on the
// wgmma engine instead (cuda/kernels/gemm/, issue 38) where a measurement says that pays (EnginePair
// below): then the epoch starts with two more kernels (its batches gathered into bf16 rows in epoch
// order, W1 rounded to bf16), the head backward writes dH in bf16, and dW1's momentum epilogue keeps
// W1's bf16 copy current; the products' inputs are the same bf16 roundings as k_tiled_mma's.
#include "paths/tiled_path.h"

#include "kernels/gemm/sm90_engine.h"
#include "kernels/tiled.cuh"
#include "kernels/tiled_mma.cuh"

#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <tuple>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/cuda_check.h"
#include "paths/epoch_graph.h"
#include "paths/kernel_path.h"

namespace mlp {
namespace tiled {
namespace {

using GemmFn = void (*)(GemmArgs);

// The kernel of a tile shape at a precision: k_tiled_gemm for FP32's SIMT shapes, k_tiled_mma
// for the tensor-core shapes at TF32 or BF16; nullptr for a shape that does not serve `prec`.
template <ALayout AL, Epi EPI, bool VEC>
GemmFn pick(int shape, Precision prec) {
  if (!shape_serves(shape, prec)) return nullptr;
  constexpr Precision T = Precision::TF32, B = Precision::BF16;
  const bool tf = prec == T;
  switch (shape) {
    case 0: return k_tiled_gemm<0, AL, EPI, VEC>;
    case 1: return k_tiled_gemm<1, AL, EPI, VEC>;
    case 2: return k_tiled_gemm<2, AL, EPI, VEC>;
    case 3: return k_tiled_gemm<3, AL, EPI, VEC>;
    case 4: return tf ? k_tiled_mma<4, AL, EPI, VEC, T> : k_tiled_mma<4, AL, EPI, VEC, B>;
    case 5: return tf ? k_tiled_mma<5, AL, EPI, VEC, T> : k_tiled_mma<5, AL, EPI, VEC, B>;
    case 6: return tf ? k_tiled_mma<6, AL, EPI, VEC, T> : k_tiled_mma<6, AL, EPI, VEC, B>;
  }
  return nullptr;
}
static_assert(kNumTileShapes == 7, "pick() names every tile shape");

// The two GEMMs the path runs (and gemm_check tests): the forward with bias + ReLU, dW1 with the update.
GemmFn gemm_fn(ALayout al, Epi epi, int shape, bool vec, Precision prec) {
  if (al == ALayout::RowMajor && epi == Epi::BiasRelu)
    return vec ? pick<ALayout::RowMajor, Epi::BiasRelu, true>(shape, prec)
               : pick<ALayout::RowMajor, Epi::BiasRelu, false>(shape, prec);
  if (al == ALayout::KMajor && epi == Epi::Momentum)
    return vec ? pick<ALayout::KMajor, Epi::Momentum, true>(shape, prec)
               : pick<ALayout::KMajor, Epi::Momentum, false>(shape, prec);
  return nullptr;
}

bool aligned16(const void* p) { return p == nullptr || reinterpret_cast<uintptr_t>(p) % 16 == 0; }
}  // namespace

bool vec_ok(ALayout al, const GemmArgs& a) {
  const int a_row = al == ALayout::RowMajor ? a.K : a.M;  // A's contiguous dimension
  return a_row % 4 == 0 && a.lda % 4 == 0 && a.N % 4 == 0 && a.ldb % 4 == 0 && a.ldc % 4 == 0 &&
         aligned16(a.A) && aligned16(a.B) && aligned16(a.C) && aligned16(a.vel);  // the bias is read by scalars
}

void launch_gemm(ALayout al, Epi epi, GemmArgs a, const GemmPlan& p, size_t partial_capacity,
                 size_t ticket_capacity, cudaStream_t st, Precision prec) {
  const bool vec = vec_ok(al, a);
  GemmFn fn = gemm_fn(al, epi, p.shape, vec, prec);
  if (!fn)
    throw std::invalid_argument(std::string("tiled GEMM: no instantiation for this layout and epilogue at ") +
                                precision_name(prec) + " with tile shape " + kTileShapes[p.shape].name);
  if (p.tiles_m > 65535 || p.split > 65535)
    throw std::invalid_argument("tiled GEMM: " + std::to_string(p.tiles_m) + " row tiles or " +
                                std::to_string(p.split) + " splits exceed the grid's 65535");
  if (p.split > 1 && (p.partial_floats() > partial_capacity || (size_t)p.tiles() > ticket_capacity || !a.partials ||
                      !a.tickets))
    throw std::invalid_argument("tiled GEMM: split-K scratch too small for " + p.describe());
  a.k_chunk = p.k_chunk;
  const dim3 grid(p.tiles_n, p.tiles_m, p.split);
  fn<<<grid, kTileShapes[p.shape].threads(), 0, st>>>(a);
  CUDA_CHECK_LAUNCH(std::string(kTileShapes[p.shape].mma ? "k_tiled_mma " : "k_tiled_gemm ") + p.describe());
}

int gemm_regs(ALayout al, Epi epi, int shape, bool vec, std::string* why, Precision prec) {
  cudaFuncAttributes fa;
  const cudaError_t e = cudaFuncGetAttributes(&fa, reinterpret_cast<const void*>(gemm_fn(al, epi, shape, vec, prec)));
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    if (why) *why = std::string("cudaFuncGetAttributes: ") + cudaGetErrorString(e);
    return -1;
  }
  return fa.numRegs;
}

// ---- measured plans ---------------------------------------------------------------------------
// The first time a process meets a GEMM problem (layout, M, N, K, SMs), every candidate (each tile
// shape × splits 1, 2, 3, 4, 6, 8, 12, 16 that leave no split empty) runs on scratch operands of
// the problem's sizes (filled with 0.0115, not zeros), timed with CUDA events over 5 launches after
// a warm-up; the fastest is kept when it beats the cost model's choice (plan_gemm) by more than 3 %,
// else the model's choice stays. The answer is cached for the process, so every capture of the
// problem in one run uses the same plan (bitwise reruns hold); another process may measure another
// plan, whose sums then differ in the last bits. MLP_TILED_PLAN=model skips the measurement.
namespace {
using PlanKey = std::tuple<int, int, int, int, int, int>;  // layout, M, N, K, SMs, precision
std::map<PlanKey, GemmPlan>& plan_cache() {
  static std::map<PlanKey, GemmPlan> cache;
  return cache;
}
}  // namespace

bool measure_plans() {
  const char* v = std::getenv("MLP_TILED_PLAN");
  return !(v && std::strcmp(v, "model") == 0);
}

namespace {

// Device memory freed with its owner (the measurements' scratch, the engine's operands).
struct DeviceBuffers {
  std::vector<void*> bufs;
  DeviceBuffers() = default;
  DeviceBuffers(const DeviceBuffers&) = delete;
  DeviceBuffers& operator=(const DeviceBuffers&) = delete;
  ~DeviceBuffers() { clear(); }
  void clear() noexcept {
    for (void* p : bufs) cudaFree(p);
    bufs.clear();
  }
  template <class T>
  T* get(size_t n, int fill_byte = -1) {
    void* p = nullptr;
    CUDA_CHECK(cudaMalloc(&p, std::max<size_t>(n, 1) * sizeof(T)));
    bufs.push_back(p);
    if (fill_byte >= 0) CUDA_CHECK(cudaMemset(p, fill_byte, std::max<size_t>(n, 1) * sizeof(T)));
    return static_cast<T*>(p);
  }
};

GemmPlan measure(ALayout al, Epi epi, int M, int N, int K, int sms, Precision prec) {
  const GemmPlan model = plan_gemm(M, N, K, sms, prec);
  std::vector<GemmPlan> cands;
  for (int shape = 0; shape < kNumTileShapes; ++shape)
    for (int split : {1, 2, 3, 4, 6, 8, 12, 16}) {
      if (!shape_serves(shape, prec)) break;
      const GemmPlan p = plan_gemm_fixed(M, N, K, sms, shape, split);
      if (p.split == split && p.tiles_m <= 65535) cands.push_back(p);
    }
  size_t part = std::max<size_t>(1, model.partial_floats()), tick = std::max<size_t>(1, model.tiles());
  for (const GemmPlan& p : cands) part = std::max(part, p.partial_floats()), tick = std::max(tick, (size_t)p.tiles());
  DeviceBuffers s;
  const int a_rows_n = al == ALayout::RowMajor ? M : K;  // A's storage rows
  const int lda = al == ALayout::RowMajor ? K : M;
  GemmArgs a{};
  a.M = M; a.N = N; a.K = K;
  a.A = s.get<float>((size_t)a_rows_n * lda, 0x3c); a.lda = lda;
  {
    std::vector<int> ident(a_rows_n);
    for (int i = 0; i < a_rows_n; ++i) ident[i] = i;
    int* rows = s.get<int>(ident.size(), -1);
    CUDA_CHECK(cudaMemcpy(rows, ident.data(), ident.size() * sizeof(int), cudaMemcpyHostToDevice));
    a.a_rows = rows;
  }
  a.B = s.get<float>((size_t)K * N, 0x3c); a.ldb = N;
  a.C = s.get<float>((size_t)M * N, 0x3c); a.ldc = N;
  a.bias = s.get<float>(N, 0x3c);
  a.vel = s.get<float>((size_t)M * N, 0x3c); a.lr = 0.1f; a.mu = 0.9f;
  a.partials = s.get<float>(part, -1);
  a.tickets = s.get<unsigned>(tick, 0);
  cudaEvent_t e0, e1;
  CUDA_CHECK(cudaEventCreate(&e0));
  CUDA_CHECK(cudaEventCreate(&e1));
  auto time_us = [&](const GemmPlan& p) {
    launch_gemm(al, epi, a, p, part, tick, 0, prec);
    CUDA_CHECK(cudaEventRecord(e0, 0));
    for (int r = 0; r < 5; ++r) launch_gemm(al, epi, a, p, part, tick, 0, prec);
    CUDA_CHECK(cudaEventRecord(e1, 0));
    CUDA_CHECK(cudaEventSynchronize(e1));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
    return 1000.0 * ms / 5;
  };
  GemmPlan best = model;
  double best_us = 0;
  try {
    const double model_us = time_us(model);
    best_us = model_us;
    best.est_us = model_us;
    for (const GemmPlan& p : cands) {
      const double us = time_us(p);
      if (us < best_us && us < 0.97 * model_us) best = p, best_us = us, best.est_us = us;
    }
  } catch (...) {
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    throw;
  }
  CUDA_CHECK(cudaEventDestroy(e0));
  CUDA_CHECK(cudaEventDestroy(e1));
  return best;
}
}  // namespace

// A measurement that throws (our bug, or a device error) leaves the cost model's plan in the
// cache and its reason here: the path still runs, on plans build/gemm_check tests, and its config
// (run.json) says the measurement failed and why, instead of the path skipping itself.
std::string& measurement_failure() {
  static std::string why;
  return why;
}

GemmPlan chosen_plan(ALayout al, Epi epi, int M, int N, int K, int sms, Precision prec) {
  if (!measure_plans()) return plan_gemm(M, N, K, sms, prec);
  const PlanKey key{(int)al, M, N, K, sms, (int)prec};
  auto it = plan_cache().find(key);
  if (it != plan_cache().end()) return it->second;
  GemmPlan p;
  try {
    p = measure(al, epi, M, N, K, sms, prec);
  } catch (const std::exception& e) {
    (void)cudaGetLastError();  // a launch error of the measurement is not the next launch's
    std::fprintf(stderr, "tiled: measuring the plan of a %dx%dx%d GEMM failed: %s; the cost model's plan runs\n", M, N,
                 K, e.what());
    if (measurement_failure().empty()) measurement_failure() = e.what();
    p = plan_gemm(M, N, K, sms, prec);
  }
  plan_cache()[key] = p;
  return p;
}

// ---- the GEMM engine's pair (tiled-bf16 on sm_90) --------------------------------------------------
namespace eng = gemm::sm90;

// Where tiled-bf16's two GEMMs of the epoch's full step (nb rows) run: on the
// wgmma engine (use; its plans fwd and dw1) or on mma.sync's plans. The engine needs cc 9.0 (`cc`:
// the limits in force, so an emulated T4 or L4 runs mma.sync), an sm_90 build and a measurement:
// the first time a process meets (I, Hd, nb, SMs) both pairs run on drawn operands and must
// agree (a validation of the engine before it may run), then both are timed in a CUDA graph
// (measure_pair); the engine is kept when it is faster by more than 3 %. `why` says the outcome or
// the refusal ("" at FP32 and TF32).
struct EnginePair {
  bool use = false;
  eng::Plan fwd, dw1;
  double engine_us = 0, tiled_us = 0;  // the measured pairs: a step's two GEMMs
  double disagreement = 0;             // the pairs' results on drawn operands, relative to their magnitude
  std::string parts;                   // the check's figures, one per result (measure_pair)
  std::string why;
};

// The two tiled GEMMs of a step, as the path launches them: the forward H = ReLU(X[rows]·W1 + b1)
// and dW1 = X[rows]ᵀ·dH with the momentum update into W1 and vW1.
GemmArgs tiled_forward_args(int nb, int I, int Hd, const float* X, const int* rows, const float* W1, float* H,
                            const float* b1, float* partials, unsigned* tickets) {
  GemmArgs f{};  // H [nb × Hd] = ReLU(X[rows] [nb × I] · W1 [I × Hd] + b1)
  f.M = nb; f.N = Hd; f.K = I;
  f.A = X; f.lda = I; f.a_rows = rows;
  f.B = W1; f.ldb = Hd;
  f.C = H; f.ldc = Hd;
  f.bias = b1;
  f.partials = partials; f.tickets = tickets;
  return f;
}
GemmArgs tiled_dw1_args(int nb, int I, int Hd, const float* X, const int* rows, const float* dH, float* W1, float* vW1,
                        float lr, float mu, float* partials, unsigned* tickets) {
  GemmArgs g{};  // W1 [I × Hd] updated by dW1 = X[rows]ᵀ [I × nb] · dH [nb × Hd]
  g.M = I; g.N = Hd; g.K = nb;
  g.A = X; g.lda = I; g.a_rows = rows;
  g.B = dH; g.ldb = Hd;
  g.C = W1; g.ldc = Hd;
  g.vel = vW1; g.lr = lr; g.mu = mu;
  g.partials = partials; g.tickets = tickets;
  return g;
}

// The forward H [nb × Hd] = ReLU(Xp [nb × I] · W1b [I × Hd] + b1) and dW1 = Xpᵀ · dH16 with the
// momentum update into W1 (float32) and its bf16 copy W1b, as the engine's problems.
eng::Problem engine_forward(int nb, int I, int Hd, const __nv_bfloat16* xp, const __nv_bfloat16* w1b, float* H,
                            const float* b1) {
  eng::Problem p{};
  p.prec = Precision::BF16;
  p.M = nb; p.N = Hd; p.K = I;
  p.a = {xp, I, eng::Major::K};     // the step's rows of Xp, K-major
  p.b = {w1b, Hd, eng::Major::MN};  // W1b [I × Hd]: B (k, n) at k·Hd + n
  p.epi = eng::Epilogue::BiasRelu;
  p.C = H; p.ldc = Hd; p.bias = b1;
  return p;
}
eng::Problem engine_dw1(int nb, int I, int Hd, const __nv_bfloat16* xp, const __nv_bfloat16* dh16, float* W1, float* vW1,
                        __nv_bfloat16* w1b, float lr, float mu) {
  eng::Problem p{};
  p.prec = Precision::BF16;
  p.M = I; p.N = Hd; p.K = nb;
  p.a = {xp, I, eng::Major::MN};     // Xpᵀ: A (m, k) = Xp[k][m]
  p.b = {dh16, Hd, eng::Major::MN};  // dH16 [nb × Hd]: B (k, n) at k·Hd + n
  p.epi = eng::Epilogue::Momentum;
  p.C = W1; p.ldc = Hd; p.vel = vW1; p.lr = lr; p.mu = mu; p.c_bf16 = w1b;
  return p;
}
// The engine's plans of a step's pair (a plan reads only the operands' alignment: aligned
// stand-ins, the path's own buffers being allocated later); `why` the engine's refusal at cc, or "".
void engine_plans(int nb, int I, int Hd, int sms, int cc, eng::Plan* fwd, eng::Plan* dw1, std::string* why) {
  auto* fake16 = reinterpret_cast<__nv_bfloat16*>(uintptr_t(256));
  auto* fake = reinterpret_cast<float*>(uintptr_t(256));
  const eng::Problem pf = engine_forward(nb, I, Hd, fake16, fake16, fake, fake);
  const eng::Problem pd = engine_dw1(nb, I, Hd, fake16, fake16, fake, fake, fake16, 0.1f, 0.9f);
  *why = eng::refusal(pf, cc);
  if (why->empty()) *why = eng::refusal(pd, cc);
  *fwd = eng::plan(pf, sms);
  *dw1 = eng::plan(pd, sms);
}

namespace {

// The time of one run of `body` (microseconds): `reps` runs captured into a CUDA graph (no host gap
// between launches, as in the path's epoch graph), replayed once to warm up, then once between events.
double graph_us(const std::function<void(cudaStream_t)>& body, int reps = 5) {
  cudaStream_t st = nullptr;
  CUDA_CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  cudaGraph_t g = nullptr;
  cudaGraphExec_t ge = nullptr;
  cudaEvent_t e0 = nullptr, e1 = nullptr;
  auto cleanup = [&] {
    if (ge) cudaGraphExecDestroy(ge);
    if (g) cudaGraphDestroy(g);
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    cudaStreamDestroy(st);
  };
  try {
    CUDA_CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    try {
      for (int r = 0; r < reps; ++r) body(st);
    } catch (...) {
      cudaStreamEndCapture(st, &g);
      throw;
    }
    CUDA_CHECK(cudaStreamEndCapture(st, &g));
    CUDA_CHECK(cudaGraphInstantiate(&ge, g, 0));
    CUDA_CHECK(cudaEventCreate(&e0));
    CUDA_CHECK(cudaEventCreate(&e1));
    CUDA_CHECK(cudaGraphLaunch(ge, st));
    CUDA_CHECK(cudaEventRecord(e0, st));
    CUDA_CHECK(cudaGraphLaunch(ge, st));
    CUDA_CHECK(cudaEventRecord(e1, st));
    CUDA_CHECK(cudaEventSynchronize(e1));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
    cleanup();
    return 1000.0 * ms / reps;
  } catch (...) {
    cleanup();
    throw;
  }
}

// Both pairs of a step of nb rows on scratch operands: first checked against each other, then timed.
// The check: drawn operands (hash-uniform in (-1, 1), never all equal, so an index error shows), the
// engine's bf16 copies made by the path's own kernels; each side's forward (H) and dW1 update (the
// velocity and W1, from the same start) must agree within kAgree of the larger side's magnitude, a
// float32 summation-order difference being about K·2^-24 of it. A disagreement keeps mma.sync and
// says so (`why`). The timing: 5 launches of each pair in a CUDA graph, on the same operands.
constexpr double kAgree = 1e-3;

std::vector<float> drawn(size_t n, unsigned salt) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    uint32_t x = (uint32_t)(i * 2654435761u) ^ (salt * 0x9e3779b9u);
    x ^= x >> 16; x *= 0x7feb352du; x ^= x >> 15; x *= 0x846ca68bu; x ^= x >> 16;
    v[i] = ((float)(x >> 8) + 0.5f) / 8388608.f - 1.f;  // (-1, 1), never 0
  }
  return v;
}
template <class T>
std::vector<T> to_host(const T* d, size_t n) {
  std::vector<T> h(n);
  CUDA_CHECK(cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost));
  return h;
}
void to_device(float* d, const std::vector<float>& h) {
  CUDA_CHECK(cudaMemcpy(d, h.data(), h.size() * sizeof(float), cudaMemcpyHostToDevice));
}
// max |a - b| / max(max |a|, max |b|, tiny), NaN and infinities counted as infinite
double disagreement(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, scale = 1e-30;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(a[i]) || !std::isfinite(b[i])) return INFINITY;
    diff = std::max(diff, (double)std::fabs(a[i] - b[i]));
    scale = std::max({scale, (double)std::fabs(a[i]), (double)std::fabs(b[i])});
  }
  return diff / scale;
}

void measure_pair(EnginePair& e, int nb, int I, int Hd, const GemmPlan& fwd, const GemmPlan& dw1) {
  DeviceBuffers b;
  auto* xp = b.get<__nv_bfloat16>((size_t)nb * I, 0x3c);
  auto* w1b = b.get<__nv_bfloat16>((size_t)I * Hd, 0x3c);
  auto* dh16 = b.get<__nv_bfloat16>((size_t)nb * Hd, 0x3c);
  float* X = b.get<float>((size_t)nb * I, 0x3c);
  float* W1 = b.get<float>((size_t)I * Hd, 0x3c);
  float* vW1 = b.get<float>((size_t)I * Hd, 0x3c);
  float* dH = b.get<float>((size_t)nb * Hd, 0x3c);
  float* H = b.get<float>((size_t)nb * Hd, 0x3c);
  float* b1 = b.get<float>(Hd, 0x3c);
  float* H2 = b.get<float>((size_t)nb * Hd, 0x3c);     // the other side's forward (the check)
  float* W1b2 = b.get<float>((size_t)I * Hd, 0x3c);    // the other side's W1 and velocity (the check)
  float* vW12 = b.get<float>((size_t)I * Hd, 0x3c);
  int* rows = b.get<int>(nb);
  {
    std::vector<int> ident(nb);
    for (int i = 0; i < nb; ++i) ident[i] = i;
    CUDA_CHECK(cudaMemcpy(rows, ident.data(), ident.size() * sizeof(int), cudaMemcpyHostToDevice));
  }
  const size_t part = std::max({fwd.partial_floats(), dw1.partial_floats(), (size_t)1});
  const size_t tick = (size_t)std::max(fwd.tiles(), dw1.tiles());
  float* partials = b.get<float>(part);
  unsigned* tickets = b.get<unsigned>(tick, 0);
  // mma.sync's step: the forward reads W1io, then dW1 updates W1io and vW1io (as the path does).
  auto tiled_pair = [&](cudaStream_t st, float* Hout, float* W1io, float* vW1io) {
    launch_gemm(ALayout::RowMajor, Epi::BiasRelu, tiled_forward_args(nb, I, Hd, X, rows, W1io, Hout, b1, partials, tickets),
                fwd, part, tick, st, Precision::BF16);
    launch_gemm(ALayout::KMajor, Epi::Momentum,
                tiled_dw1_args(nb, I, Hd, X, rows, dH, W1io, vW1io, 0.1f, 0.9f, partials, tickets), dw1, part, tick, st,
                Precision::BF16);
  };
  eng::Problem pf = engine_forward(nb, I, Hd, xp, w1b, H, b1);
  eng::Problem pd = engine_dw1(nb, I, Hd, xp, dh16, W1, vW1, w1b, 0.1f, 0.9f);
  pf.workspace = e.fwd.workspace_bytes ? b.get<char>(e.fwd.workspace_bytes) : nullptr;
  pf.workspace_size = e.fwd.workspace_bytes;
  pd.workspace = e.dw1.workspace_bytes ? b.get<char>(e.dw1.workspace_bytes) : nullptr;
  pd.workspace_size = e.dw1.workspace_bytes;
  eng::clear_tickets(e.fwd, pf.workspace, 0);
  eng::clear_tickets(e.dw1, pd.workspace, 0);

  // The check (uncaptured: the engine's first launches set its kernels' limits, sm90_engine.h).
  {
    const std::vector<float> x = drawn((size_t)nb * I, 1), w = drawn((size_t)I * Hd, 2), v = drawn((size_t)I * Hd, 3),
                             d = drawn((size_t)nb * Hd, 4), bias = drawn(Hd, 5);
    to_device(X, x); to_device(W1, w); to_device(vW1, v); to_device(dH, d); to_device(b1, bias);
    to_device(W1b2, w); to_device(vW12, v);
    k_gather_rows_bf16<<<64, 256>>>(X, rows, nb, I, xp);
    CUDA_CHECK_LAUNCH("k_gather_rows_bf16");
    k_to_bf16<<<64, 256>>>(W1, (size_t)I * Hd, w1b);
    CUDA_CHECK_LAUNCH("k_to_bf16");
    k_to_bf16<<<64, 256>>>(dH, (size_t)nb * Hd, dh16);
    CUDA_CHECK_LAUNCH("k_to_bf16");
    eng::launch(pf, e.fwd, 0);  // H from Xp and W1b, then W1 and vW1 updated (and W1b rewritten)
    eng::launch(pd, e.dw1, 0);
    tiled_pair(0, H2, W1b2, vW12);  // mma.sync's pair from the same start, on the copies W1b2 and vW12
    CUDA_CHECK(cudaDeviceSynchronize());
    const std::vector<float> wf = to_host(W1, (size_t)I * Hd);  // the engine's W1 after its update
    const double dh = disagreement(to_host(H, (size_t)nb * Hd), to_host(H2, (size_t)nb * Hd));
    const double dv = disagreement(to_host(vW1, (size_t)I * Hd), to_host(vW12, (size_t)I * Hd));
    const double dw = disagreement(wf, to_host(W1b2, (size_t)I * Hd));
    // W1's bf16 copy that the engine's momentum epilogue writes: exactly W1 rounded to nearest
    // (the epilogue rounds the float it stores; the host's __float2bfloat16_rn is the same rounding).
    const std::vector<__nv_bfloat16> wb = to_host(w1b, (size_t)I * Hd);
    size_t off = 0;
    for (size_t i = 0; i < wf.size(); ++i) {
      const __nv_bfloat16 want = __float2bfloat16_rn(wf[i]);
      off += std::memcmp(&want, &wb[i], sizeof want) != 0;
    }
    const double dc = off ? INFINITY : 0.0;
    e.disagreement = std::max({dh, dv, dw, dc});
    char parts[160];
    std::snprintf(parts, sizeof parts, "H %.2g, velocity %.2g, W1 %.2g; bf16 copy of W1: %zu of %zu not W1 rounded", dh,
                  dv, dw, off, wf.size());
    e.parts = parts;
  }
  if (!(e.disagreement <= kAgree)) return;  // not timed: it will not run
  // The timing, on the check's operands (drawn, then updated once: finite, never zero).
  e.engine_us = graph_us([&](cudaStream_t st) {
    eng::launch(pf, e.fwd, st);
    eng::launch(pd, e.dw1, st);
  });
  e.tiled_us = graph_us([&](cudaStream_t st) { tiled_pair(st, H, W1, vW1); });
}

using PairKey = std::tuple<int, int, int, int, int>;  // I, Hd, nb (the full step's rows), SMs, compute capability
std::map<PairKey, EnginePair>& pair_cache() {
  static std::map<PairKey, EnginePair> cache;
  return cache;
}
}  // namespace

EnginePair engine_pair(int I, int Hd, int nb, int sms, int cc, Precision prec, const GemmPlan& fwd, const GemmPlan& dw1) {
  EnginePair e;
  if (prec != Precision::BF16) return e;  // tf32 wgmma reads K-major operands only: W1 and dH are MN-major
  const PairKey key{I, Hd, nb, sms, cc};
  auto it = pair_cache().find(key);
  if (it != pair_cache().end()) return it->second;
  engine_plans(nb, I, Hd, sms, cc, &e.fwd, &e.dw1, &e.why);
  if (e.why.empty() && ((size_t)nb * I) % 8 != 0)
    e.why = "a step's rows of the bf16 batches start " + std::to_string(nb) + " x " + std::to_string(I) +
            " elements apart, not a multiple of 16 bytes (TMA)";
  if (e.why.empty() && !measure_plans()) e.why = "the engine is chosen only by measurement (MLP_TILED_PLAN=model)";
  if (e.why.empty()) {
    try {
      measure_pair(e, nb, I, Hd, fwd, dw1);
      char buf[400];
      if (!(e.disagreement <= kAgree)) {
        e.use = false;
        std::snprintf(buf, sizeof buf,
                      "the wgmma engine's results DISAGREE with mma.sync's on drawn operands (%.3g of their "
                      "magnitude, limit %.0e: %s): not used",
                      e.disagreement, kAgree, e.parts.c_str());
      } else {
        e.use = e.engine_us < 0.97 * e.tiled_us;
        std::snprintf(buf, sizeof buf,
                      "the wgmma engine's pair %.1f us against mma.sync's %.1f us a step (measured; results agree "
                      "within %.2g)",
                      e.engine_us, e.tiled_us, e.disagreement);
      }
      e.why = buf;
    } catch (const std::exception& ex) {
      (void)cudaGetLastError();
      std::fprintf(stderr, "tiled: measuring the wgmma engine at %d x %d x %d failed: %s; mma.sync runs\n", nb, Hd, I,
                   ex.what());
      e.use = false;
      e.why = std::string("measuring the wgmma engine FAILED: ") + ex.what();
    }
  }
  pair_cache()[key] = e;
  return e;
}

}  // namespace tiled

namespace {
using namespace tiled;

// The plans of one (shape, batch, n): the full steps' GEMMs and the short last step's, and where the
// pair runs (`engine`, measured for the full step; the short step follows it: W1's bf16 copy is kept
// by the engine's dW1 alone, so either every step runs on the engine or none does).
struct StepPlans {
  GemmPlan fwd, dw1;
  EnginePair engine;
};
StepPlans plans_for(MlpShape s, int nb, int sms, Precision prec) {
  return {chosen_plan(ALayout::RowMajor, Epi::BiasRelu, nb, s.hidden, s.in, sms, prec),
          chosen_plan(ALayout::KMajor, Epi::Momentum, s.in, s.hidden, nb, sms, prec), {}};
}
StepPlans full_plans(MlpShape s, int batch, int sms, int cc, Precision prec) {
  StepPlans p = plans_for(s, batch, sms, prec);
  p.engine = engine_pair(s.in, s.hidden, batch, sms, cc, prec, p.fwd, p.dw1);
  return p;
}
StepPlans tail_plans(MlpShape s, int nb, int sms, int cc, Precision prec, const StepPlans& full) {
  StepPlans p = plans_for(s, nb, sms, prec);
  if (full.engine.use) {
    p.engine.use = true;
    engine_plans(nb, s.in, s.hidden, sms, cc, &p.engine.fwd, &p.engine.dw1, &p.engine.why);
  }
  return p;
}
std::string describe(const StepPlans& p, Precision prec) {
  const std::string how = !measure_plans()                ? " (the cost model's plans)"
                          : measurement_failure().empty() ? " (measured plans)"
                                                          : " (measured plans; a measurement FAILED, the cost model's plan "
                                                            "in its place: " + measurement_failure() + ")";
  if (p.engine.use)
    return std::string(precision_name(prec)) + " tensor-core GEMMs on the wgmma engine (" + p.engine.why + "): forward " +
           p.engine.fwd.describe + "; dW1 " + p.engine.dw1.describe +
           "; 4 kernels a step and 2 an epoch (the bf16 batches, W1 in bf16), the epoch as one CUDA graph";
  const std::string engine = prec == Precision::FP32 ? "" : std::string(precision_name(prec)) + " tensor-core GEMMs: ";
  const std::string declined = p.engine.why.empty() ? "" : "; not on the wgmma engine: " + p.engine.why;
  return engine + "forward " + p.fwd.describe() + "; dW1 " + p.dw1.describe() + how + declined +
         "; 4 kernels a step, the epoch as one CUDA graph";
}

class TiledPath : public KernelPath {
 public:
  explicit TiledPath(Precision prec) : prec_(prec) {}
  ~TiledPath() override { release(); }
  std::string name() const override {
    return prec_ == Precision::FP32 ? "tiled" : std::string("tiled-") + precision_name(prec_);
  }
  std::string accumulator() const override { return products_accumulator(prec_); }
  Precision precision() const override { return prec_; }
  double launches_per_step(int) const override { return 4; }

  PathFit fit(const DeviceLimits& lim, MlpShape s, int batch) override {
    const std::string me = name();
    if (s.out > kMaxOut)
      return PathFit{-1, "", me + ": " + std::to_string(s.out) + " classes, over the " + std::to_string(kMaxOut) +
                                 " its head kernels hold in registers"};
    if (s.in < 1 || s.hidden < 1 || s.out < 1 || batch < 1) return PathFit{-1, "", me + ": empty shape"};
    const std::string refusal = tensor_core_refusal(me, prec_, lim.cc);
    if (!refusal.empty()) return PathFit{-1, "", refusal};
    const StepPlans p = full_plans(s, batch, std::max(1, lim.sms), lim.cc, prec_);
    std::vector<KernelUse> uses;
    const char* fwd_name = prec_ == Precision::FP32 ? "k_tiled_gemm (forward)" : "k_tiled_mma (forward)";
    const char* dw1_name = prec_ == Precision::FP32 ? "k_tiled_gemm (dW1)" : "k_tiled_mma (dW1)";
    for (bool vec : {true, false}) {
      uses.push_back({reinterpret_cast<const void*>(gemm_fn(ALayout::RowMajor, Epi::BiasRelu, p.fwd.shape, vec, prec_)),
                      kTileShapes[p.fwd.shape].threads(), fwd_name});
      uses.push_back({reinterpret_cast<const void*>(gemm_fn(ALayout::KMajor, Epi::Momentum, p.dw1.shape, vec, prec_)),
                      kTileShapes[p.dw1.shape].threads(), dw1_name});
    }
    const bool narrow = s.out <= 10;
    uses.push_back({narrow ? reinterpret_cast<const void*>(&k_tiled_logits_loss<10>)
                           : reinterpret_cast<const void*>(&k_tiled_logits_loss<kMaxOut>),
                    kHeadThreads, "k_tiled_logits_loss"});
    uses.push_back({narrow ? reinterpret_cast<const void*>(&k_tiled_head_backward<10>)
                           : reinterpret_cast<const void*>(&k_tiled_head_backward<kMaxOut>),
                    kBackThreads, "k_tiled_head_backward"});
    if (p.engine.use)  // the engine's own kernels are checked by its refusal (sm90_engine.h)
      uses.push_back({narrow ? reinterpret_cast<const void*>(&k_tiled_head_backward<10, __nv_bfloat16>)
                             : reinterpret_cast<const void*>(&k_tiled_head_backward<kMaxOut, __nv_bfloat16>),
                      kBackThreads, "k_tiled_head_backward (bf16 dH)"});
    const PathFit ordinary = fit_ordinary_launches(uses, lim);
    if (!ordinary.runs()) return ordinary;
    if (p.fwd.tiles_m > 65535 || p.dw1.tiles_m > 65535)
      return PathFit{-1, "", "tiled: the grid's 65535 row tiles are too few for this shape"};
    return PathFit{0, describe(p, prec_), ""};
  }

  void epoch(const EpochArgs& a) override {
    if (!graph_.current(a)) capture(a);
    graph_.launch(a);
  }

 private:
  // The scratch (the graph keeps its own order buffer and stream).
  void release() noexcept {
    for (void* p : {(void*)partials_, (void*)tickets_, (void*)head_part_})
      if (p) cudaFree(p);
    partials_ = nullptr;
    tickets_ = nullptr;
    head_part_ = nullptr;
    engine_bufs_.clear();
    xp16_ = w1b_ = dh16_ = nullptr;
    for (void*& w : eng_ws_) w = nullptr;
  }

  // The graph of one epoch of `a` (paths/epoch_graph.h), with the scratch sized for this epoch's plans.
  void capture(const EpochArgs& a) {
    const MlpShape s = a.s;
    if (s.out > kMaxOut) throw SubmissionError("tiled path skipped: more than 16 classes", MLP_ERR_UNSUPPORTED);
    CUDA_CHECK(cudaStreamSynchronize(a.stream));
    graph_.release();
    release();
    const int sms = std::max(1, effective_limits().sms);
    const int steps = (a.n + a.batch - 1) / a.batch;
    const int last = a.n - (steps - 1) * a.batch;
    const int cc = effective_limits().cc;
    const StepPlans full = full_plans(s, a.batch, sms, cc, prec_), tail = tail_plans(s, last, sms, cc, prec_, full);
    partial_cap_ = std::max({full.fwd.partial_floats(), full.dw1.partial_floats(), tail.fwd.partial_floats(),
                             tail.dw1.partial_floats(), (size_t)1});
    ticket_cap_ = (size_t)std::max({full.fwd.tiles(), full.dw1.tiles(), tail.fwd.tiles(), tail.dw1.tiles()});
    // Head scratch, the larger of the full and the short step's needs: the backward's partials,
    // the logits' partial sums, the row groups' losses; tickets after the GEMMs': the logits'
    // (groups + 1), then the backward's (cols).
    const HeadGrid hf = head_grid(a.batch, s.hidden, sms), ht = head_grid(last, s.hidden, sms);
    head_.back_floats = (size_t)std::max(hf.ysplit, ht.ysplit) * (s.out + 1) * s.hidden;
    head_.z_floats = std::max((size_t)hf.ksplit * a.batch, (size_t)ht.ksplit * last) * kMaxOut;
    head_.groups = std::max(hf.groups, ht.groups);
    const size_t tickets = ticket_cap_ + (size_t)head_.groups + 1 + (size_t)hf.cols;
    const size_t head_floats = head_.back_floats + head_.z_floats + (size_t)head_.groups;
    CUDA_CHECK(cudaMalloc(&partials_, sizeof(float) * partial_cap_));
    CUDA_CHECK(cudaMalloc(&tickets_, sizeof(unsigned) * tickets));
    CUDA_CHECK(cudaMalloc(&head_part_, sizeof(float) * head_floats));
    CUDA_CHECK(cudaMemsetAsync(tickets_, 0, sizeof(unsigned) * tickets, a.stream));
    if (full.engine.use) {  // the engine's bf16 operands and a workspace per plan (tickets each)
      xp16_ = engine_bufs_.get<__nv_bfloat16>((size_t)a.n * s.in);
      w1b_ = engine_bufs_.get<__nv_bfloat16>((size_t)s.in * s.hidden);
      dh16_ = engine_bufs_.get<__nv_bfloat16>((size_t)a.batch * s.hidden);
      const gemm::sm90::Plan* plans[4] = {&full.engine.fwd, &full.engine.dw1, &tail.engine.fwd, &tail.engine.dw1};
      for (int i = 0; i < 4; ++i) {
        eng_ws_[i] = plans[i]->workspace_bytes ? engine_bufs_.get<char>(plans[i]->workspace_bytes) : nullptr;
        gemm::sm90::clear_tickets(*plans[i], eng_ws_[i], a.stream);
      }
    }
    CUDA_CHECK(cudaStreamSynchronize(a.stream));
    graph_.capture(a, [&](const EpochArgs& g) { enqueue_epoch(g, full, tail, sms); });
  }

  // One epoch's launches on a.stream, reading the order from a.order (the graph's own, in a capture).
  void enqueue_epoch(const EpochArgs& a, const StepPlans& full, const StepPlans& tail, int sms) {
    const MlpShape s = a.s;
    const MlpOffsets o = mlp_offsets(s);
    const Workspace w = carve_workspace(s, a.batch, a.workspace);
    cudaStream_t st = a.stream;
    const int steps = (a.n + a.batch - 1) / a.batch;
    unsigned* logit_tickets = tickets_ + ticket_cap_;
    unsigned* back_tickets = logit_tickets + head_.groups + 1;
    float* back_part = head_part_;
    float* zpart = back_part + head_.back_floats;
    float* group_loss = zpart + head_.z_floats;
    const bool narrow = s.out <= 10;
    const bool engine = full.engine.use;
    if (engine) {  // the epoch's batches as bf16 rows in epoch order, and W1 in bf16
      const size_t n_x = (size_t)a.n * s.in, n_w = (size_t)s.in * s.hidden;
      const int gx = (int)std::min<size_t>((size_t)sms * 8, (n_x + 255) / 256);
      const int gw = (int)std::min<size_t>((size_t)sms * 8, (n_w + 255) / 256);
      k_gather_rows_bf16<<<gx, 256, 0, st>>>(a.X_all, a.order, a.n, s.in, xp16_);
      CUDA_CHECK_LAUNCH("k_gather_rows_bf16");
      k_to_bf16<<<gw, 256, 0, st>>>(a.params + o.w1, n_w, w1b_);
      CUDA_CHECK_LAUNCH("k_to_bf16");
    }
    for (int t = 0; t < steps; ++t) {
      const int nb = std::min(a.batch, a.n - t * a.batch);
      const StepPlans& p = nb == a.batch ? full : tail;
      const int* rows = a.order + (size_t)t * a.batch;
      const __nv_bfloat16* xp = engine ? xp16_ + (size_t)t * a.batch * s.in : nullptr;  // this step's rows
      void* ws_fwd = eng_ws_[nb == a.batch ? 0 : 2];
      void* ws_dw1 = eng_ws_[nb == a.batch ? 1 : 3];
      if (engine) {
        gemm::sm90::Problem f = engine_forward(nb, s.in, s.hidden, xp, w1b_, w.H, a.params + o.b1);
        f.workspace = ws_fwd; f.workspace_size = p.engine.fwd.workspace_bytes;
        gemm::sm90::launch(f, p.engine.fwd, st);
      } else {
        launch_gemm(ALayout::RowMajor, Epi::BiasRelu,
                    tiled_forward_args(nb, s.in, s.hidden, a.X_all, rows, a.params + o.w1, w.H, a.params + o.b1,
                                       partials_, tickets_),
                    p.fwd, partial_cap_, ticket_cap_, st, prec_);
      }

      const HeadGrid hg = head_grid(nb, s.hidden, sms);
      auto logits = narrow ? k_tiled_logits_loss<10> : k_tiled_logits_loss<kMaxOut>;
      logits<<<dim3(hg.groups, hg.ksplit), kHeadThreads, 0, st>>>(nb, s.hidden, s.out, w.H, a.params + o.w2,
                                                                  a.params + o.b2, a.labels_all, rows, w.dZ, zpart,
                                                                  group_loss, logit_tickets, a.step_loss + t);
      CUDA_CHECK_LAUNCH("k_tiled_logits_loss");

      auto backward = [&](auto kernel, auto* dH) {  // dH: float, or bf16 for the engine's dW1
        kernel<<<dim3(hg.back_x(), hg.ysplit), kBackThreads, 0, st>>>(
            nb, s.hidden, s.out, hg.rb, a.lr, a.momentum, w.H, w.dZ, a.params + o.w2, a.velocity + o.w2,
            a.params + o.b1, a.velocity + o.b1, a.params + o.b2, a.velocity + o.b2, dH, back_part, back_tickets);
      };
      if (engine)
        backward(narrow ? k_tiled_head_backward<10, __nv_bfloat16> : k_tiled_head_backward<kMaxOut, __nv_bfloat16>, dh16_);
      else
        backward(narrow ? k_tiled_head_backward<10> : k_tiled_head_backward<kMaxOut>, w.dH);
      CUDA_CHECK_LAUNCH("k_tiled_head_backward");

      if (engine) {
        gemm::sm90::Problem g = engine_dw1(nb, s.in, s.hidden, xp, dh16_, a.params + o.w1, a.velocity + o.w1, w1b_,
                                           a.lr, a.momentum);
        g.workspace = ws_dw1; g.workspace_size = p.engine.dw1.workspace_bytes;
        gemm::sm90::launch(g, p.engine.dw1, st);
      } else {
        launch_gemm(ALayout::KMajor, Epi::Momentum,
                    tiled_dw1_args(nb, s.in, s.hidden, a.X_all, rows, w.dH, a.params + o.w1, a.velocity + o.w1, a.lr,
                                   a.momentum, partials_, tickets_),
                    p.dw1, partial_cap_, ticket_cap_, st, prec_);
      }
    }
  }

  const Precision prec_;  // the GEMMs' products: FP32 SIMT, or TF32 / BF16 on the tensor cores
  EpochGraph graph_;
  float* partials_ = nullptr;
  unsigned* tickets_ = nullptr;
  float* head_part_ = nullptr;
  size_t partial_cap_ = 0, ticket_cap_ = 0;
  struct HeadScratch { size_t back_floats = 0, z_floats = 0; int groups = 0; } head_;
  // The wgmma engine's operands (tiled-bf16 on sm_90, StepPlans::engine): the epoch's batches in
  // bf16 in epoch order [n × I], W1 in bf16 [I × Hd] (kept by dW1's epilogue), dH in bf16
  // [batch × Hd]; the workspaces of the full step's forward and dW1 plans, then the short step's.
  DeviceBuffers engine_bufs_;
  __nv_bfloat16 *xp16_ = nullptr, *w1b_ = nullptr, *dh16_ = nullptr;
  void* eng_ws_[4] = {nullptr, nullptr, nullptr, nullptr};
};
}  // namespace

std::unique_ptr<KernelPath> make_tiled_path(Precision prec) { return std::make_unique<TiledPath>(prec); }

}  // namespace mlp
