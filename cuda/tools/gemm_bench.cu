// cuda/tools/gemm_bench.cu — build/gemm_bench: times OUR GEMM kernels at given shapes (issue 38's
// instrument): at tf32 and bf16 on a compute capability 9.0 device, the GEMM engine's wgmma kernel
// (cuda/kernels/gemm/sm90_engine.h, k_sm90_gemm) wherever it takes the layout, precision and operands;
// otherwise the tiled path's float32 SIMT GEMM (cuda/kernels/tiled.cuh k_tiled_gemm) at fp32 and its
// mma.sync GEMM (cuda/kernels/tiled_mma.cuh k_tiled_mma) at tf32 and bf16, launched through the
// path's own entry point on the plan the path runs (paths/tiled_path.h chosen_plan, launch_gemm;
// tools/gemm_tools.h PlannedGemm, shared with build/gemm_check). Each row names its kernel and plan
// (and, where the engine declined a tf32 or bf16 row on a 9.0 device, why).
//
//   build/gemm_bench --shapes MxNxK[,MxNxK...] [--precisions fp32,tf32,bf16] [--layout nn|tn|nt]
//                    [--repeats 30] [--warmup 5] [--seed 20260829] --out FILE.json
//   build/gemm_bench ... --parse-only        the request as one JSON line; no GPU is touched
//   build/gemm_bench ... --plans SMS          the engine's plan of each tf32 and bf16 row on a device of
//                                            SMS multiprocessors, a JSON line each; no GPU is touched
//
// C[M × N] = op(A)·op(B), every matrix row-major; n: the operand as used (A [M × K], B [K × N]), t:
// stored transposed (A [K × M], B [N × K]). Each layout runs one epilogue (the timing includes it;
// a_rows is null, no row gather):
//   nn  BiasRelu: C = max(A·B + bias, 0)                 (the tiled path's forward)
//   tn  Momentum: v = μv − lr·AᵀB, C += v (lr 0.1, μ 0.9) (the tiled path's dW1 and update)
//   nt  Store:    C = A·Bᵀ                               (the engine only: tf32, bf16; fp32 rows and
//       rows the engine declines are "unsupported"; the cuBLAS side still times them)
// The engine copies an MN-major operand K-major into its workspace inside the timed launch where its
// plan says (always at tf32; the row's plan names the copies).
// The engine's bf16 reads bfloat16 copies of A and B (rounded to nearest from the same draws, made
// before any timing, as cuBLAS's side reads bfloat16 tensors); its tf32 reads the float32 arrays,
// the tensor cores truncating each input's mantissa (the check's bound says so).
//
// Method (docs/formats.md "gemm_bench"): every operand drawn from a seeded hash-uniform distribution
// on the odd multiples of 2⁻²⁴ in (−1, 1) (never zero; the same bits on the host and the device);
// when one operand set (A, B, C and the epilogue's arrays) is under twice the L2 cache,
// ceil(2·L2 / set bytes) sets (at most 64) are allocated and the launches rotate over them; per
// shape and precision, the plan is chosen first (chosen_plan measures its candidates on its own
// scratch), then one checked launch, `warmup` untimed launches, and `repeats` launches each between
// a pair of CUDA events; median, mean, min, max and CV (common/run_stats.h, spec/stats.py's
// definitions); TFLOP/s = 2·M·N·K / median. The check: the first launch on set 0 (nn: C poisoned
// with NaN first) must leave every output finite, and 64 sampled outputs (the four corners among
// them) must lie within tools/gemm_tools.h's bound of a float64 product computed on the CPU from the
// same draws; the bound is printed. Every CUDA call and launch is checked.
//
// Exit status: 0 every measured row passed its check (unsupported and skipped rows do not fail), 1 a
// check failed (FILE.json is written all the same), 2 bad input (one line, nothing touched or
// written), 3 no CUDA device or a CUDA error (nothing written), 4 anything else.
// Its argument checks are tested on a CPU machine (tests/test_gemm_bench.py), its GPU tests are marked gpu.
#include <sys/stat.h>

#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/common.h"
#include "common/cuda_check.h"
#include "common/exit_status.h"
#include "common/json.h"
#include "common/precision.h"
#include "common/run_stats.h"
#include "io/bounds.h"
#include "paths/kernel_path.h"
#include "kernels/gemm/sm90_engine.h"
#include "paths/tiled_path.h"
#include "tools/gemm_tools.h"

namespace {
using namespace mlp::tiled;
using namespace mlp::tiled::tools;
using mlp::Precision;
namespace eng = mlp::gemm::sm90;

constexpr long long kMaxDim = 1 << 20;            // each of M, N, K
constexpr long long kMaxOperand = (1LL << 31) - 1;  // elements of any one operand
constexpr int kMaxSets = 64, kSamples = 64;
constexpr float kLr = 0.1f, kMu = 0.9f;           // gemm_check's update constants
enum Operand : unsigned { kA = 1, kB, kBias, kC, kVel };

struct Shape { long long m, n, k; };
struct Request {
  std::vector<Shape> shapes;
  std::vector<Precision> precisions = {Precision::FP32, Precision::TF32, Precision::BF16};
  std::string layout = "nn", out;
  int repeats = 30, warmup = 5;
  long long seed = 20260829;
  bool parse_only = false;
  int plans_sms = 0;  // --plans: print the engine's plans for this many SMs, touch no GPU
};

constexpr const char* kUsage =
    "usage: gemm_bench --shapes MxNxK[,MxNxK...] [--precisions fp32,tf32,bf16] [--layout nn|tn|nt]\n"
    "                  [--repeats R (3-10000, default 30)] [--warmup W (0-1000, default 5)]\n"
    "                  [--seed S] --out FILE.json | --parse-only | --plans SMS (1-1024)\n";

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out(1);
  for (char c : s) {
    if (c == sep) out.emplace_back();
    else out.back().push_back(c);
  }
  return out;
}

Shape parse_shape(const std::string& item) {
  const std::vector<std::string> d = split(item, 'x');
  if (d.size() != 3) throw UserError("--shapes: " + one_line(item) + " is not MxNxK");
  Shape s{parse_integer_in(d[0], 1, kMaxDim, "--shapes " + one_line(item) + ": M"),
          parse_integer_in(d[1], 1, kMaxDim, "--shapes " + one_line(item) + ": N"),
          parse_integer_in(d[2], 1, kMaxDim, "--shapes " + one_line(item) + ": K")};
  if (s.m * s.k > kMaxOperand || s.k * s.n > kMaxOperand || s.m * s.n > kMaxOperand)
    throw UserError("--shapes " + one_line(item) + ": an operand of more than 2^31 - 1 elements");
  return s;
}

// Every flag checked before anything else happens; a bad one is a UserError (one line, exit 2).
Request parse(int argc, char** argv) {
  Request r;
  bool have_shapes = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--parse-only") { r.parse_only = true; continue; }
    if (a != "--shapes" && a != "--precisions" && a != "--layout" && a != "--repeats" && a != "--warmup" &&
        a != "--seed" && a != "--out" && a != "--plans")
      throw UserError("unknown argument " + one_line(a) + " (gemm_bench --help)");
    if (i + 1 >= argc) throw UserError(a + ": missing its value");
    const std::string v = argv[++i];
    if (a == "--shapes") {
      r.shapes.clear();
      for (const std::string& item : split(v, ',')) {
        const Shape s = parse_shape(item);
        for (const Shape& t : r.shapes)
          if (t.m == s.m && t.n == s.n && t.k == s.k) throw UserError("--shapes: " + one_line(item) + " given twice");
        r.shapes.push_back(s);
      }
      have_shapes = true;
    } else if (a == "--precisions") {
      r.precisions.clear();
      for (const std::string& item : split(v, ',')) {
        Precision p;
        if (!mlp::parse_precision(item, &p)) throw UserError("--precisions: " + one_line(item) + " is not fp32, tf32 or bf16");
        if (std::find(r.precisions.begin(), r.precisions.end(), p) != r.precisions.end())
          throw UserError("--precisions: " + item + " given twice");
        r.precisions.push_back(p);
      }
    } else if (a == "--layout") {
      if (v != "nn" && v != "tn" && v != "nt") throw UserError("--layout: " + one_line(v) + " is not nn, tn or nt");
      r.layout = v;
    } else if (a == "--repeats") {
      r.repeats = (int)parse_integer_in(v, 3, 10000, "--repeats");
    } else if (a == "--warmup") {
      r.warmup = (int)parse_integer_in(v, 0, 1000, "--warmup");
    } else if (a == "--seed") {
      r.seed = parse_integer_in(v, 0, (1LL << 53) - 1, "--seed");
    } else if (a == "--plans") {
      r.plans_sms = (int)parse_integer_in(v, 1, 1024, "--plans");
    } else {
      r.out = v;
    }
  }
  if (!have_shapes) throw UserError("--shapes is required");
  if (r.out.empty() && !r.parse_only && !r.plans_sms) throw UserError("--out FILE.json is required (or --parse-only, --plans)");
  if (!r.out.empty()) {  // the output's folder must exist and the output must not be one
    struct stat st;
    if (stat(r.out.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
      throw UserError("--out " + one_line(r.out) + ": not a regular file");
    const size_t slash = r.out.find_last_of('/');
    const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : r.out.substr(0, slash);
    if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      throw UserError("--out " + one_line(r.out) + ": its folder " + one_line(dir) + " does not exist");
  }
  return r;
}

std::string request_json(const Request& r) {
  Json shapes = Json::array(), precs = Json::array();
  for (const Shape& s : r.shapes)
    shapes.add(Json::array().add(Json::num(s.m)).add(Json::num(s.n)).add(Json::num(s.k)).done());
  for (Precision p : r.precisions) precs.add(Json::str(mlp::precision_name(p)));
  return Json::object().set("shapes", shapes.done()).set("precisions", precs.done()).set("layout", Json::str(r.layout))
      .set("repeats", Json::num(r.repeats)).set("warmup", Json::num(r.warmup)).set("seed", Json::num(r.seed))
      .set("out", r.out.empty() ? "null" : Json::str(r.out)).done();
}

// ---- the draws: a counter-based hash, the same bits on the host (the check) and the device ----------
__host__ __device__ inline uint64_t mix64(uint64_t x) {  // splitmix64's finaliser
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
// Element i of stream s: an odd multiple of 2⁻²⁴ in (−1, 1), times `scale` (a power of two). Every
// step is exact in float32, so the host and the device agree bit for bit.
__host__ __device__ inline float draw(uint64_t s, uint64_t i, float scale) {
  const long long r = (long long)(mix64(s ^ mix64(i)) >> 40);  // 24 bits
  return (float)(2 * r - 16777215) * 5.9604644775390625e-8f * scale;
}
uint64_t stream_of(long long seed, int set, Operand op) { return mix64((uint64_t)seed * 131 + (uint64_t)set * 8 + op); }

__global__ void k_fill(float* p, size_t n, uint64_t s, float scale) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    p[i] = draw(s, i, scale);
}
__global__ void k_count_nonfinite(const float* p, size_t n, unsigned long long* count) {
  unsigned long long local = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    local += !isfinite(p[i]);
  if (local) atomicAdd(count, local);
}
__global__ void k_to_bf16(const float* in, __nv_bfloat16* out, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    out[i] = __float2bfloat16_rn(in[i]);
}
void fill(float* p, size_t n, uint64_t s, float scale) {
  k_fill<<<(unsigned)std::min<size_t>((n + 255) / 256, 4096), 256>>>(p, n, s, scale);
  CUDA_CHECK_LAUNCH("k_fill");
}
unsigned long long nonfinite(const float* p, size_t n, unsigned long long* d_count) {
  CUDA_CHECK(cudaMemset(d_count, 0, sizeof(unsigned long long)));
  k_count_nonfinite<<<(unsigned)std::min<size_t>((n + 255) / 256, 4096), 256>>>(p, n, d_count);
  CUDA_CHECK_LAUNCH("k_count_nonfinite");
  unsigned long long h = 0;
  CUDA_CHECK(cudaMemcpy(&h, d_count, sizeof h, cudaMemcpyDeviceToHost));
  return h;
}

// ---- one shape's operand sets ----------------------------------------------------------------------
enum class Layout { NN, TN, NT };
Layout layout_of(const std::string& s) { return s == "tn" ? Layout::TN : s == "nt" ? Layout::NT : Layout::NN; }

// The engine's problem of a row: the layout's operand orders and epilogue (the file's header), with
// A and B at the given addresses and the epilogue's arrays left to the caller.
eng::Problem layout_problem(Shape s, Layout lay, Precision prec, const void* A, const void* B) {
  eng::Problem p{};
  p.prec = prec;
  p.M = (int)s.m; p.N = (int)s.n; p.K = (int)s.k;
  switch (lay) {
    case Layout::NN: p.a = {A, s.k, eng::Major::K}; p.b = {B, s.n, eng::Major::MN}; p.epi = eng::Epilogue::BiasRelu; break;
    case Layout::TN: p.a = {A, s.m, eng::Major::MN}; p.b = {B, s.n, eng::Major::MN}; p.epi = eng::Epilogue::Momentum; break;
    case Layout::NT: p.a = {A, s.k, eng::Major::K}; p.b = {B, s.k, eng::Major::K}; p.epi = eng::Epilogue::Store; break;
  }
  p.ldc = s.n;
  return p;
}

struct Sets {
  const Shape s;
  const Layout lay;
  int n = 1;
  size_t a, b, c, bias, vel;           // floats of each array of a set
  std::vector<float*> bufs;            // set i: bufs[5i .. 5i+4] = A, B, bias, C, vel (nullptr when unused)
  std::vector<__nv_bfloat16*> halves;  // set i: halves[2i], [2i+1] = A, B in bfloat16 (make_bf16, once)
  void* workspace = nullptr;           // the engine's transposed operands (every set's launches share it)
  size_t workspace_size = 0;
  Sets(Shape sh, Layout l) : s(sh), lay(l) {
    a = (size_t)s.m * s.k; b = (size_t)s.k * s.n; c = (size_t)s.m * s.n;
    bias = lay == Layout::NN ? (size_t)s.n : 0; vel = lay == Layout::TN ? c : 0;
  }
  size_t set_bytes() const { return 4 * (a + b + c + bias + vel); }
  size_t bf16_bytes() const { return 2 * (a + b); }  // a set's bfloat16 copies, when made
  float* get(int set, Operand op) const { return bufs[(size_t)set * 5 + (op - 1)]; }
  void allocate(int sets, long long seed) {
    n = sets;
    for (int i = 0; i < n; ++i)
      for (Operand op : {kA, kB, kBias, kC, kVel}) {  // get()'s order: the enum's
        const size_t len = op == kA ? a : op == kB ? b : op == kC ? c : op == kBias ? bias : vel;
        float* p = nullptr;
        if (len) {
          CUDA_CHECK(cudaMalloc(&p, len * sizeof(float)));
          bufs.push_back(p);
          refill(i, op, seed, p, len);
        } else {
          bufs.push_back(nullptr);
        }
      }
  }
  void make_bf16() {
    if (!halves.empty()) return;
    for (int i = 0; i < n; ++i)
      for (Operand op : {kA, kB}) {
        const size_t len = op == kA ? a : b;
        __nv_bfloat16* p = nullptr;
        CUDA_CHECK(cudaMalloc(&p, len * sizeof(__nv_bfloat16)));
        halves.push_back(p);
        k_to_bf16<<<(unsigned)std::min<size_t>((len + 255) / 256, 4096), 256>>>(get(i, op), p, len);
        CUDA_CHECK_LAUNCH("k_to_bf16");
      }
  }
  void reserve_workspace(size_t bytes) {
    if (bytes <= workspace_size) return;
    if (workspace) CUDA_CHECK(cudaFree(workspace));
    workspace = nullptr;
    workspace_size = 0;
    CUDA_CHECK(cudaMalloc(&workspace, bytes));
    workspace_size = bytes;
  }
  void refill(int set, Operand op, long long seed, float* p, size_t len) const {
    fill(p, len, stream_of(seed, set, op), op == kVel ? 0.125f : 1.0f);
  }
  ~Sets() {
    for (float* p : bufs)
      if (p) cudaFree(p);
    for (__nv_bfloat16* p : halves) cudaFree(p);
    if (workspace) cudaFree(workspace);
  }
  GemmArgs args(int set) const {  // the tiled kernels' (nn and tn)
    const bool tn = lay == Layout::TN;
    GemmArgs g{};
    g.M = (int)s.m; g.N = (int)s.n; g.K = (int)s.k;
    g.A = get(set, kA); g.lda = tn ? (int)s.m : (int)s.k; g.a_rows = nullptr;
    g.B = get(set, kB); g.ldb = (int)s.n;
    g.C = get(set, kC); g.ldc = (int)s.n;
    g.bias = get(set, kBias); g.vel = get(set, kVel); g.lr = kLr; g.mu = kMu;
    return g;
  }
  // The engine's problem on set `set`: each layout's operands in their major orders.
  eng::Problem problem(int set, Precision prec) const {
    const bool half = prec == Precision::BF16;
    const void* A = half ? (halves.empty() ? nullptr : (const void*)halves[2 * (size_t)set]) : (const void*)get(set, kA);
    const void* B = half ? (halves.empty() ? nullptr : (const void*)halves[2 * (size_t)set + 1]) : (const void*)get(set, kB);
    eng::Problem p = layout_problem(s, lay, prec, A, B);
    p.C = get(set, kC);
    p.bias = get(set, kBias); p.vel = get(set, kVel); p.lr = kLr; p.mu = kMu;
    p.workspace = workspace; p.workspace_size = workspace_size;
    return p;
  }
};

// Set 0's values as the host draws them (the check's float64 product).
struct HostDraws {
  long long seed; Shape s; Layout lay;
  float A(long long m, long long k) const {
    return draw(stream_of(seed, 0, kA), lay == Layout::TN ? k * s.m + m : m * s.k + k, 1.f);
  }
  float B(long long k, long long n) const {
    return draw(stream_of(seed, 0, kB), lay == Layout::NT ? n * s.k + k : k * s.n + n, 1.f);
  }
  float C(long long i) const { return draw(stream_of(seed, 0, kC), i, 1.f); }
  float bias(long long n) const { return draw(stream_of(seed, 0, kBias), n, 1.f); }
  float vel(long long i) const { return draw(stream_of(seed, 0, kVel), i, 0.125f); }
};

struct Check {
  int samples = 0;
  long bad = 0;
  unsigned long long nonfinite = 0;
  double worst = 0;  // max error / tol
  bool passed() const { return bad == 0 && nonfinite == 0; }
};

float read_one(const float* p, size_t i) {
  float v = 0;
  CUDA_CHECK(cudaMemcpy(&v, p + i, sizeof v, cudaMemcpyDeviceToHost));
  return v;
}

// The first launch on set 0 against float64 (the header says what is checked); `truncated`: the
// kernel truncates its tf32 inputs (gemm_tools.h product_rel).
Check check_first_launch(const std::function<void(int)>& launch, Sets& sets, Precision prec, bool truncated,
                         long long seed, unsigned long long* d_count) {
  const Shape s = sets.s;
  const bool tn = sets.lay == Layout::TN;
  if (tn) {  // the update reads C and vel: set 0 back to its draws
    sets.refill(0, kC, seed, sets.get(0, kC), sets.c);
    sets.refill(0, kVel, seed, sets.get(0, kVel), sets.vel);
  } else {
    CUDA_CHECK(cudaMemset(sets.get(0, kC), 0xff, sets.c * sizeof(float)));  // NaN: every output must be written
  }
  launch(0);
  CUDA_CHECK(cudaDeviceSynchronize());
  Check ck;
  ck.nonfinite = nonfinite(sets.get(0, kC), sets.c, d_count) + (tn ? nonfinite(sets.get(0, kVel), sets.vel, d_count) : 0);
  std::vector<std::pair<long long, long long>> at = {{0, 0}, {0, s.n - 1}, {s.m - 1, 0}, {s.m - 1, s.n - 1}};
  std::mt19937_64 rng((uint64_t)seed ^ 0x5bd1e995);
  while ((long long)at.size() < std::min<long long>(kSamples, s.m * s.n))
    at.push_back({(long long)(rng() % (uint64_t)s.m), (long long)(rng() % (uint64_t)s.n)});
  const HostDraws h{seed, s, sets.lay};
  for (auto [m, n] : at) {
    double sum = 0, mag = 0;
    for (long long k = 0; k < s.k; ++k) {
      const double t = (double)h.A(m, k) * h.B(k, n);
      sum += t;
      mag += std::fabs(t);
    }
    const size_t i = (size_t)m * s.n + n;
    double ratio;
    if (tn) {
      const double W = h.C(i), V = h.vel(i), v = kMu * V - kLr * sum, want = W + v;
      const double tol = update_tol(prec, (int)s.k, kLr, kMu, mag, W, V, sum, truncated);
      const double gw = read_one(sets.get(0, kC), i), gv = read_one(sets.get(0, kVel), i);
      ratio = std::isfinite(gw) && std::isfinite(gv) ? std::max(std::fabs(gw - want), std::fabs(gv - v)) / tol : INFINITY;
    } else {
      const bool relu = sets.lay == Layout::NN;  // nt: C = the product
      const double b = relu ? h.bias(n) : 0.0, pre = sum + b, want = relu && pre <= 0 ? 0 : pre;
      const double got = read_one(sets.get(0, kC), i);
      ratio = std::isfinite(got) ? std::fabs(got - want) / forward_tol(prec, (int)s.k, mag + std::fabs(b), want, truncated)
                                 : INFINITY;
    }
    ++ck.samples;
    if (!(ratio <= 1)) ++ck.bad;
    if (!(ratio <= ck.worst)) ck.worst = ratio;
  }
  return ck;
}

struct Row {
  Shape s;
  Precision prec;
  std::string status = "ok", why, plan, kernel;
  Check check;
  EpochStats t{};
  int sets = 1;
  size_t set_bytes = 0;
};

std::string row_json(const Row& r, const Request& q) {
  const double flop = 2.0 * (double)r.s.m * (double)r.s.n * (double)r.s.k;
  Json o = Json::object();
  o.set("M", Json::num(r.s.m)).set("N", Json::num(r.s.n)).set("K", Json::num(r.s.k))
      .set("layout", Json::str(q.layout)).set("precision", Json::str(mlp::precision_name(r.prec)))
      .set("status", Json::str(r.status)).set("flop", Json::num(flop));
  if (!r.why.empty()) o.set("why", Json::str(r.why));
  if (r.status == "unsupported" || r.status == "skipped") return o.done();
  o.set("kernel", Json::str(r.kernel))
      .set("epilogue", Json::str(q.layout == "tn" ? "momentum" : q.layout == "nt" ? "store" : "bias_relu"))
      .set("plan", Json::str(r.plan))
      .set("median_ms", Json::num(r.t.median)).set("mean_ms", Json::num(r.t.mean)).set("min_ms", Json::num(r.t.min))
      .set("max_ms", Json::num(r.t.max)).set("cv_pct", Json::num(r.t.cv))
      .set("tflops", Json::num(flop / (r.t.median * 1e-3) / 1e12)).set("repeats", Json::num(q.repeats))
      .set("warmup", Json::num(q.warmup)).set("sets", Json::num(r.sets)).set("set_bytes", Json::num((long long)r.set_bytes))
      .set("check", Json::object().set("passed", Json::boolean(r.check.passed())).set("samples", Json::num(r.check.samples))
                        .set("bad", Json::num((long long)r.check.bad)).set("nonfinite", Json::num((long long)r.check.nonfinite))
                        .set("worst_ratio", Json::num(r.check.worst)).done());
  return o.done();
}

// One (shape, precision): the kernel and its plan, the check, the timed launches.
void measure_row(Row& row, Sets& sets, const Request& q, int sms, int cc, unsigned long long* d_count) {
  const Shape s = row.s;
  const Precision prec = row.prec;
  std::function<void(int)> launch;
  std::unique_ptr<PlannedGemm> g;
  bool truncated = false;
  std::string declined = "the engine computes tf32 and bf16";
  if (prec != Precision::FP32) {
    if (prec == Precision::BF16 && cc == 90 && eng::compiled()) sets.make_bf16();
    declined = eng::refusal(sets.problem(0, prec), cc);
  }
  if (declined.empty()) {
    const eng::Plan plan = eng::plan(sets.problem(0, prec), sms);
    sets.reserve_workspace(plan.workspace_bytes);  // before any launch: none is timed with an allocation
    eng::clear_tickets(plan, sets.workspace, 0);
    row.kernel = "k_sm90_gemm";
    row.plan = plan.describe;
    truncated = prec == Precision::TF32;
    launch = [&sets, prec, plan](int set) { eng::launch(sets.problem(set, prec), plan, 0); };
  } else if (sets.lay == Layout::NT) {
    row.status = "unsupported";
    row.why = "no nt kernel of ours for this row: " + declined;
    return;
  } else {
    const bool tn = sets.lay == Layout::TN;
    const ALayout al = tn ? ALayout::KMajor : ALayout::RowMajor;
    const Epi epi = tn ? Epi::Momentum : Epi::BiasRelu;
    const GemmPlan plan = chosen_plan(al, epi, (int)s.m, (int)s.n, (int)s.k, sms, prec);
    row.kernel = prec == Precision::FP32 ? "k_tiled_gemm" : "k_tiled_mma";
    row.plan = plan.describe() + (!measure_plans() ? " (the cost model's plan)"
                                  : measurement_failure().empty() ? " (measured plan)"
                                  : " (a plan measurement of this process FAILED: " + measurement_failure() + ")");
    if (prec != Precision::FP32 && cc == 90) row.plan += "; the wgmma engine declined: " + declined;
    g = std::make_unique<PlannedGemm>(plan, prec);
    PlannedGemm* gp = g.get();
    launch = [&sets, gp, al, epi](int set) { gp->launch(al, epi, sets.args(set)); };
  }
  try {
    row.check = check_first_launch(launch, sets, prec, truncated, q.seed, d_count);
  } catch (const std::invalid_argument& e) {  // launch_gemm: a grid past CUDA's limits
    row.status = "unsupported";
    row.why = e.what();
    return;
  }
  if (!row.check.passed()) row.status = "failed";
  int next = 1 % sets.n;
  for (int w = 0; w < q.warmup; ++w, next = (next + 1) % sets.n) launch(next);
  std::vector<cudaEvent_t> ev(2 * (size_t)q.repeats);
  for (auto& e : ev) CUDA_CHECK(cudaEventCreate(&e));
  std::vector<double> ms(q.repeats);
  try {
    for (int r = 0; r < q.repeats; ++r, next = (next + 1) % sets.n) {
      CUDA_CHECK(cudaEventRecord(ev[2 * r], 0));
      launch(next);
      CUDA_CHECK(cudaEventRecord(ev[2 * r + 1], 0));
    }
    CUDA_CHECK(cudaEventSynchronize(ev.back()));
    for (int r = 0; r < q.repeats; ++r) {
      float t = 0;
      CUDA_CHECK(cudaEventElapsedTime(&t, ev[2 * r], ev[2 * r + 1]));
      ms[r] = t;
    }
  } catch (...) {
    for (auto& e : ev) cudaEventDestroy(e);
    throw;
  }
  for (auto& e : ev) CUDA_CHECK(cudaEventDestroy(e));
  row.t = summarise_epochs(ms);
}

std::string shape_text(const Shape& s) {
  return std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k);
}

int run(const Request& q) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    print_error("gemm_bench", "error", "no CUDA device");
    return kExitCudaError;
  }
  cudaDeviceProp prop;
  CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  const int cc = prop.major * 10 + prop.minor, sms = std::max(1, mlp::effective_limits().sms);
  const size_t l2 = (size_t)std::max(prop.l2CacheSize, 1);
  std::printf("gemm_bench: %s (cc %d.%d, %d SMs, L2 %zu bytes), layout %s, %d warm-up + %d timed launches\n%s\n",
              prop.name, prop.major, prop.minor, sms, l2, q.layout.c_str(), q.warmup, q.repeats, kToleranceText);
  unsigned long long* d_count = nullptr;
  CUDA_CHECK(cudaMalloc(&d_count, sizeof(unsigned long long)));
  Json rows = Json::array();
  bool failed = false;
  for (const Shape& s : q.shapes) {
    Sets sets(s, layout_of(q.layout));
    // A set's device bytes (its bfloat16 copies included where a bf16 row may make them).
    const bool copies = cc == 90 && std::find(q.precisions.begin(), q.precisions.end(), Precision::BF16) != q.precisions.end();
    const size_t sb = sets.set_bytes() + (copies ? sets.bf16_bytes() : 0);
    int n_sets = sb >= 2 * l2 ? 1 : (int)std::min<size_t>(kMaxSets, (2 * l2 + sb - 1) / sb);
    size_t free_b = 0, total_b = 0;
    CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
    // chosen_plan's measurement allocates about one more set of its own; leave a tenth free.
    while (n_sets > 1 && (double)(n_sets + 1) * sb > 0.9 * free_b) --n_sets;
    std::string skip;
    if ((double)(n_sets + 1) * sb > 0.9 * free_b)
      skip = "needs about " + std::to_string(2 * sb >> 20) + " MiB of device memory, " + std::to_string(free_b >> 20) +
             " MiB free";
    if (skip.empty()) sets.allocate(n_sets, q.seed);
    for (Precision prec : q.precisions) {
      Row row;
      row.s = s;
      row.prec = prec;
      row.sets = n_sets;
      row.set_bytes = sb;
      const std::string refusal = tensor_core_refusal("gemm_bench", prec, cc);
      if (!skip.empty() || !refusal.empty()) {
        row.status = !refusal.empty() ? "unsupported" : "skipped";
        row.why = skip.empty() ? refusal : skip;
      } else {
        measure_row(row, sets, q, sms, cc, d_count);
      }
      failed |= row.status == "failed";
      const double flop = 2.0 * (double)s.m * (double)s.n * (double)s.k;
      if (row.status == "ok" || row.status == "failed")
        std::printf("%s %s %-18s %-11s %-58s median %9.4f ms  CV %5.2f%%  %8.2f TFLOP/s  check %s (worst ratio %.3f, %d samples, "
                    "%llu non-finite), %d set%s\n",
                    q.layout.c_str(), mlp::precision_name(prec), shape_text(s).c_str(), row.kernel.c_str(), row.plan.c_str(), row.t.median,
                    row.t.cv, flop / (row.t.median * 1e-3) / 1e12, row.check.passed() ? "ok" : "FAILED", row.check.worst,
                    row.check.samples, row.check.nonfinite, n_sets, n_sets == 1 ? "" : "s");
      else
        std::printf("%s %s %-18s %s: %s\n", q.layout.c_str(), mlp::precision_name(prec), shape_text(s).c_str(),
                    row.status.c_str(), row.why.c_str());
      std::fflush(stdout);
      rows.add(row_json(row, q));
    }
  }
  CUDA_CHECK(cudaFree(d_count));
  const std::string doc = Json::object().set("schema", Json::num(1)).set("side", Json::str("ours"))
      .set("tool", Json::str("build/gemm_bench")).set("gpu", Json::str(prop.name))
      .set("compute_capability", Json::str(std::to_string(prop.major) + "." + std::to_string(prop.minor)))
      .set("sm_count", Json::num(sms)).set("l2_bytes", Json::num((long long)l2)).set("layout", Json::str(q.layout))
      .set("repeats", Json::num(q.repeats)).set("warmup", Json::num(q.warmup)).set("seed", Json::num(q.seed))
      .set("tolerance", Json::str(kToleranceText)).set("passed", Json::boolean(!failed)).set("rows", rows.done()).done();
  write_file_atomic(q.out, doc + "\n");
  std::printf("gemm_bench: %zu rows -> %s%s\n", q.shapes.size() * q.precisions.size(), q.out.c_str(),
              failed ? " (a check FAILED)" : "");
  return failed ? kExitGateFailed : kExitPass;
}
}  // namespace

// --plans: the engine's plan of every tf32 and bf16 row (operands at 256-byte aligned stand-in
// addresses: a plan reads only their alignment), a JSON line each.
void print_plans(const Request& q) {
  const void* fake = reinterpret_cast<const void*>(uintptr_t(256));
  for (const Shape& s : q.shapes)
    for (Precision prec : q.precisions) {
      if (prec == Precision::FP32) continue;
      const eng::Plan pl = eng::plan(layout_problem(s, layout_of(q.layout), prec, fake, fake), q.plans_sms);
      Json o = Json::object();
      o.set("M", Json::num(s.m)).set("N", Json::num(s.n)).set("K", Json::num(s.k)).set("layout", Json::str(q.layout))
          .set("precision", Json::str(mlp::precision_name(prec))).set("sms", Json::num(q.plans_sms))
          .set("bn", Json::num(pl.bn)).set("tiles", Json::num(pl.tiles)).set("splits", Json::num(pl.splits))
          .set("steps_per_split", Json::num(pl.steps_per_split))
          .set("transpose_a", Json::boolean(pl.transpose_a)).set("transpose_b", Json::boolean(pl.transpose_b))
          .set("b_offset", Json::num((long long)pl.b_offset)).set("partials_offset", Json::num((long long)pl.partials_offset))
          .set("tickets_offset", Json::num((long long)pl.tickets_offset))
          .set("workspace_bytes", Json::num((long long)pl.workspace_bytes)).set("model_us", Json::num(pl.model_us))
          .set("describe", Json::str(pl.describe));
      std::printf("%s\n", o.done().c_str());
    }
}

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::printf("%s", kUsage);
      return kExitPass;
    }
  Request q;
  try {
    q = parse(argc, argv);
  } catch (const UserError& e) {
    print_error("gemm_bench", "error", e.what());
    return kExitBadInput;
  }
  if (q.parse_only) {
    std::printf("%s\n", request_json(q).c_str());
    return kExitPass;
  }
  if (q.plans_sms) {
    print_plans(q);
    return kExitPass;
  }
  try {
    return run(q);
  } catch (const CudaError& e) {
    print_error("gemm_bench", "CUDA error", e.what());
    return kExitCudaError;
  } catch (const UserError& e) {  // the output could not be written
    print_error("gemm_bench", "error", e.what());
    return kExitInternal;
  } catch (const std::exception& e) {
    print_error("gemm_bench", "internal error", e.what());
    return kExitInternal;
  }
}
