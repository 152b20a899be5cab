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
#include "paths/tiled_path.h"

#include "kernels/tiled.cuh"
#include "kernels/tiled_mma.cuh"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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

struct Scratch {
  std::vector<void*> bufs;
  ~Scratch() {
    for (void* p : bufs) cudaFree(p);
  }
  template <class T>
  T* get(size_t n, int fill_byte) {
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
  Scratch s;
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

}  // namespace tiled

namespace {
using namespace tiled;

// The plans and scratch of one (shape, batch, n): the full steps' GEMMs and the short last step's.
struct StepPlans {
  GemmPlan fwd, dw1;
};
StepPlans plans_for(MlpShape s, int nb, int sms, Precision prec) {
  return {chosen_plan(ALayout::RowMajor, Epi::BiasRelu, nb, s.hidden, s.in, sms, prec),
          chosen_plan(ALayout::KMajor, Epi::Momentum, s.in, s.hidden, nb, sms, prec)};
}
std::string describe(const StepPlans& p, Precision prec) {
  const std::string how = !measure_plans()                ? " (the cost model's plans)"
                          : measurement_failure().empty() ? " (measured plans)"
                                                          : " (measured plans; a measurement FAILED, the cost model's plan "
                                                            "in its place: " + measurement_failure() + ")";
  const std::string engine = prec == Precision::FP32 ? "" : std::string(precision_name(prec)) + " tensor-core GEMMs: ";
  return engine + "forward " + p.fwd.describe() + "; dW1 " + p.dw1.describe() + how +
         "; 4 kernels a step, the epoch as one CUDA graph";
}

class TiledPath : public KernelPath {
 public:
  explicit TiledPath(Precision prec) : prec_(prec) {}
  ~TiledPath() override { release(); }
  std::string name() const override {
    return prec_ == Precision::FP32 ? "tiled" : std::string("tiled-") + precision_name(prec_);
  }
  std::string accumulator() const override {
    return prec_ == Precision::TF32   ? "float32 (TF32 products)"
           : prec_ == Precision::BF16 ? "float32 (BF16 products)"
                                      : "float32";
  }
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
    const StepPlans p = plans_for(s, batch, std::max(1, lim.sms), prec_);
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
    StepPlans full = plans_for(s, a.batch, sms, prec_), tail = plans_for(s, last, sms, prec_);
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
    for (int t = 0; t < steps; ++t) {
      const int nb = std::min(a.batch, a.n - t * a.batch);
      const StepPlans& p = nb == a.batch ? full : tail;
      const int* rows = a.order + (size_t)t * a.batch;
      GemmArgs f{};  // H [nb × Hd] = ReLU(X[rows] [nb × I] · W1 [I × Hd] + b1)
      f.M = nb; f.N = s.hidden; f.K = s.in;
      f.A = a.X_all; f.lda = s.in; f.a_rows = rows;
      f.B = a.params + o.w1; f.ldb = s.hidden;
      f.C = w.H; f.ldc = s.hidden;
      f.bias = a.params + o.b1;
      f.partials = partials_; f.tickets = tickets_;
      launch_gemm(ALayout::RowMajor, Epi::BiasRelu, f, p.fwd, partial_cap_, ticket_cap_, st, prec_);

      const HeadGrid hg = head_grid(nb, s.hidden, sms);
      auto logits = narrow ? k_tiled_logits_loss<10> : k_tiled_logits_loss<kMaxOut>;
      logits<<<dim3(hg.groups, hg.ksplit), kHeadThreads, 0, st>>>(nb, s.hidden, s.out, w.H, a.params + o.w2,
                                                                  a.params + o.b2, a.labels_all, rows, w.dZ, zpart,
                                                                  group_loss, logit_tickets, a.step_loss + t);
      CUDA_CHECK_LAUNCH("k_tiled_logits_loss");

      auto backward = narrow ? k_tiled_head_backward<10> : k_tiled_head_backward<kMaxOut>;
      backward<<<dim3(hg.cols, hg.ysplit), kBackThreads, 0, st>>>(
          nb, s.hidden, s.out, hg.rb, a.lr, a.momentum, w.H, w.dZ, a.params + o.w2, a.velocity + o.w2,
          a.params + o.b1, a.velocity + o.b1, a.params + o.b2, a.velocity + o.b2, w.dH, back_part, back_tickets);
      CUDA_CHECK_LAUNCH("k_tiled_head_backward");

      GemmArgs g{};  // W1 [I × Hd] updated by dW1 = X[rows]ᵀ [I × nb] · dH [nb × Hd]
      g.M = s.in; g.N = s.hidden; g.K = nb;
      g.A = a.X_all; g.lda = s.in; g.a_rows = rows;
      g.B = w.dH; g.ldb = s.hidden;
      g.C = a.params + o.w1; g.ldc = s.hidden;
      g.vel = a.velocity + o.w1; g.lr = a.lr; g.mu = a.momentum;
      g.partials = partials_; g.tickets = tickets_;
      launch_gemm(ALayout::KMajor, Epi::Momentum, g, p.dw1, partial_cap_, ticket_cap_, st, prec_);
    }
  }

  const Precision prec_;  // the GEMMs' products: FP32 SIMT, or TF32 / BF16 on the tensor cores
  EpochGraph graph_;
  float* partials_ = nullptr;
  unsigned* tickets_ = nullptr;
  float* head_part_ = nullptr;
  size_t partial_cap_ = 0, ticket_cap_ = 0;
  struct HeadScratch { size_t back_floats = 0, z_floats = 0; int groups = 0; } head_;
};
}  // namespace

std::unique_ptr<KernelPath> make_tiled_path(Precision prec) { return std::make_unique<TiledPath>(prec); }

}  // namespace mlp
