// cuda/kernels/gemm/sm90_engine.cu — the host side of the GEMM engine's Hopper kernel (sm90_engine.h
// says the contract): the refusal, the plan (tile and transposes), the TMA tensor maps (cached per
// operand), the operands' transposes into the workspace and the launch of the k_sm90_gemm
// instantiation the problem needs.
// MLP_GEMM_SM90A (Makefile, ARCH=sm_90) says this object's device code is sm_90a, where the kernel
// has its body.
#include "kernels/gemm/sm90_engine.h"

#include <cuda.h>
#include <cudaTypedefs.h>

#include <cstdio>
#include <map>
#include <mutex>
#include <stdexcept>
#include <tuple>

#include "common/cuda_check.h"
#include "kernels/gemm/sm90_gemm.cuh"
#include "kernels/gemm/transpose.cuh"

namespace mlp::gemm::sm90 {
namespace {

#ifdef MLP_GEMM_SM90A
constexpr bool kCompiled = true;
#else
constexpr bool kCompiled = false;
#endif

size_t element_size(Precision p) { return p == Precision::BF16 ? 2 : 4; }

// The driver's cuTensorMapEncodeTiled, found once through the runtime (no -lcuda).
PFN_cuTensorMapEncodeTiled_v12000 encode_fn() {
  static PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult q;
    CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &q));
    if (q != cudaDriverEntryPointSuccess || !f)
      throw CudaError("the driver has no cuTensorMapEncodeTiled (the GEMM engine needs CUDA 12 or later)");
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(f);
  }();
  return fn;
}

// A 2-D tensor map, 128-byte swizzle, zero fill past the edges: inner × outer elements, rows ld apart,
// boxes box_inner × box_outer. Cached by all of its arguments (a launch with the same operand reuses
// the map: encoding costs microseconds of host time a launch would otherwise add).
using MapKey = std::tuple<const void*, int, unsigned long long, unsigned long long, unsigned long long, unsigned, unsigned>;
const CUtensorMap& tensor_map(const void* p, Precision prec, unsigned long long inner, unsigned long long outer,
                              unsigned long long ld, unsigned box_inner, unsigned box_outer) {
  static std::mutex mu;
  static std::map<MapKey, CUtensorMap> cache;
  const MapKey key{p, (int)prec, inner, outer, ld, box_inner, box_outer};
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  if (cache.size() >= 1024) cache.clear();  // a bound on a long run's distinct operands
  CUtensorMap map;
  const cuuint64_t dims[2] = {inner, outer};
  const cuuint64_t strides[1] = {ld * element_size(prec)};
  const cuuint32_t box[2] = {box_inner, box_outer};
  const cuuint32_t elem_strides[2] = {1, 1};
  const CUresult r = encode_fn()(&map, prec == Precision::BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
                                 2, const_cast<void*>(p), dims, strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                 CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                 CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    throw CudaError("cuTensorMapEncodeTiled failed (error " + std::to_string((int)r) + ") for an operand of " +
                    std::to_string(inner) + " x " + std::to_string(outer) + ", ld " + std::to_string(ld));
  return cache.emplace(key, map).first->second;
}

// Whether TMA can read the operand as it is stored (16-byte base and row pitch).
bool tma_readable(const Operand& o, Precision prec) {
  return reinterpret_cast<uintptr_t>(o.p) % 16 == 0 && (o.ld * (long long)element_size(prec)) % 16 == 0;
}

std::string operand_refusal(const char* name, const Operand& o, Precision prec, long long rows_needed) {
  if (!o.p) return std::string(name) + " is NULL";
  if (o.ld < rows_needed) return std::string(name) + "'s ld " + std::to_string(o.ld) + " is shorter than its rows (" + std::to_string(rows_needed) + ")";
  if (o.major == Major::K && !tma_readable(o, prec))  // an MN-major one that is not is transposed
    return std::string(name) + " is K-major with a base or an ld of " + std::to_string(o.ld) +
           " elements that is not a multiple of 16 bytes (TMA)";
  return "";
}

// A transposed operand's row pitch in the workspace (elements: 16 bytes at either precision).
long long transposed_ld(int K) { return ((long long)K + 7) / 8 * 8; }
size_t transposed_bytes(int rows, int K, Precision prec) { return (size_t)rows * transposed_ld(K) * element_size(prec); }
size_t align256(size_t n) { return (n + 255) / 256 * 256; }

template <class T>
void transpose_into(const Operand& o, int K, int MN, void* dst, cudaStream_t st) {
  const dim3 grid((MN + kTransposeTile - 1) / kTransposeTile, (K + kTransposeTile - 1) / kTransposeTile);
  k_to_k_major<T><<<grid, dim3(kTransposeTile, kTransposeRows), 0, st>>>(static_cast<const T*>(o.p), o.ld, K, MN,
                                                                        static_cast<T*>(dst), transposed_ld(K));
  CUDA_CHECK_LAUNCH("k_to_k_major");
}

template <class TL, Epilogue EPI>
void launch_tile(const Problem& p, const Plan& plan, cudaStream_t st) {
  // Boxes: K-major, BK × rows of the tile; MN-major, 64 × BK, one per 64 of the tile's MN.
  // A K-major operand's stored columns: K, or both 3xTF32 parts (2K).
  const unsigned long long kcols = p.split3 ? 2ull * p.K : (unsigned long long)p.K;
  const CUtensorMap& ma = p.a.major == Major::K
                              ? tensor_map(p.a.p, p.prec, kcols, p.M, p.a.ld, TL::BK, TL::BM)
                              : tensor_map(p.a.p, p.prec, p.M, p.K, p.a.ld, TL::MN_BOX, TL::BK);
  const CUtensorMap& mb = p.b.major == Major::K
                              ? tensor_map(p.b.p, p.prec, kcols, p.N, p.b.ld, TL::BK, TL::BN)
                              : tensor_map(p.b.p, p.prec, p.N, p.K, p.b.ld, TL::MN_BOX, TL::BK);
  char* ws = static_cast<char*>(p.workspace);
  Args args{p.M, p.N, p.split3 ? 3 * p.K : p.K, p.C, p.ldc, p.bias, p.R, p.vel, p.lr, p.mu,
            static_cast<__nv_bfloat16*>(p.c_bf16), plan.splits, plan.steps_per_split,
            plan.splits > 1 ? reinterpret_cast<float*>(ws + plan.partials_offset) : nullptr,
            plan.splits > 1 ? reinterpret_cast<unsigned*>(ws + plan.tickets_offset) : nullptr,
            p.split3 ? p.K : 0};
  k_sm90_gemm<TL, EPI><<<plan.tiles * plan.splits, TL::THREADS, TL::SMEM, st>>>(ma, mb, args);
  CUDA_CHECK_LAUNCH("k_sm90_gemm");
}

// Every instantiation's dynamic shared memory limit, set once a process, at its first launch
// (cudaFuncSetAttribute is no stream operation: the first launch should not be inside a stream
// capture; sm90_engine.h says so).
// The transformer's epilogues are instantiated for tiles with both operands K-major only: bias and
// residual at TF32 and BF16, GELU-split at TF32 (and 3xTF32), GELU-bf16 at BF16.
template <class TL>
constexpr bool kTransformerEpilogues = !TL::kAMN && !TL::kBMN;

template <class TL>
void set_smem_epilogues() {
  CUDA_CHECK(cudaFuncSetAttribute(k_sm90_gemm<TL, Epilogue::Store>, cudaFuncAttributeMaxDynamicSharedMemorySize, TL::SMEM));
  CUDA_CHECK(cudaFuncSetAttribute(k_sm90_gemm<TL, Epilogue::BiasRelu>, cudaFuncAttributeMaxDynamicSharedMemorySize, TL::SMEM));
  CUDA_CHECK(cudaFuncSetAttribute(k_sm90_gemm<TL, Epilogue::Momentum>, cudaFuncAttributeMaxDynamicSharedMemorySize, TL::SMEM));
  if constexpr (kTransformerEpilogues<TL>) {
    CUDA_CHECK(cudaFuncSetAttribute(k_sm90_gemm<TL, Epilogue::Bias>, cudaFuncAttributeMaxDynamicSharedMemorySize, TL::SMEM));
    CUDA_CHECK(cudaFuncSetAttribute(k_sm90_gemm<TL, Epilogue::BiasResidual>, cudaFuncAttributeMaxDynamicSharedMemorySize, TL::SMEM));
    if constexpr (TL::kPrec == Precision::TF32)
      CUDA_CHECK(cudaFuncSetAttribute(k_sm90_gemm<TL, Epilogue::BiasGeluSplit>, cudaFuncAttributeMaxDynamicSharedMemorySize, TL::SMEM));
    else
      CUDA_CHECK(cudaFuncSetAttribute(k_sm90_gemm<TL, Epilogue::BiasGeluBf16>, cudaFuncAttributeMaxDynamicSharedMemorySize, TL::SMEM));
  }
}
template <Precision PREC, int BN>
void set_smem_majors() {
  if constexpr (PREC == Precision::BF16) {
    set_smem_epilogues<Tile<PREC, BN, true, true>>();
    set_smem_epilogues<Tile<PREC, BN, true, false>>();
    set_smem_epilogues<Tile<PREC, BN, false, true>>();
  }
  set_smem_epilogues<Tile<PREC, BN, false, false>>();
}
void set_smem_limits() {
  static std::once_flag once;
  std::call_once(once, [] {
    set_smem_majors<Precision::BF16, 256>();
    set_smem_majors<Precision::BF16, 128>();
    set_smem_majors<Precision::TF32, 256>();
    set_smem_majors<Precision::TF32, 128>();
    set_smem_epilogues<Tile<Precision::TF32, 128, false, false, true>>();  // 3xTF32
  });
}

template <class TL>
void launch_epi(const Problem& p, const Plan& plan, cudaStream_t st) {
  switch (p.epi) {
    case Epilogue::Store: return launch_tile<TL, Epilogue::Store>(p, plan, st);
    case Epilogue::BiasRelu: return launch_tile<TL, Epilogue::BiasRelu>(p, plan, st);
    case Epilogue::Momentum: return launch_tile<TL, Epilogue::Momentum>(p, plan, st);
    case Epilogue::Bias:
    case Epilogue::BiasResidual:
    case Epilogue::BiasGeluSplit:
    case Epilogue::BiasGeluBf16:
      if constexpr (kTransformerEpilogues<TL>) {
        if (p.epi == Epilogue::Bias) return launch_tile<TL, Epilogue::Bias>(p, plan, st);
        if (p.epi == Epilogue::BiasResidual) return launch_tile<TL, Epilogue::BiasResidual>(p, plan, st);
        if constexpr (TL::kPrec == Precision::TF32) {
          if (p.epi == Epilogue::BiasGeluSplit) return launch_tile<TL, Epilogue::BiasGeluSplit>(p, plan, st);
        } else {
          if (p.epi == Epilogue::BiasGeluBf16) return launch_tile<TL, Epilogue::BiasGeluBf16>(p, plan, st);
        }
      }
      throw std::invalid_argument("sm90 GEMM engine: the transformer's epilogues need K-major operands (GELU-split TF32, "
                                  "GELU-bf16 BF16)");
  }
}

template <Precision PREC, int BN>
void launch_majors(const Problem& p, const Plan& plan, cudaStream_t st) {
  const bool amn = p.a.major == Major::MN, bmn = p.b.major == Major::MN;
  if constexpr (PREC == Precision::BF16) {
    if (amn && bmn) return launch_epi<Tile<PREC, BN, true, true>>(p, plan, st);
    if (amn) return launch_epi<Tile<PREC, BN, true, false>>(p, plan, st);
    if (bmn) return launch_epi<Tile<PREC, BN, false, true>>(p, plan, st);
  }
  launch_epi<Tile<PREC, BN, false, false>>(p, plan, st);
}

// The ring's depth of the K-major tile at (precision, BN), for the plan's description.
int stages_of(Precision prec, int bn) {
  if (prec == Precision::BF16)
    return bn == 256 ? Tile<Precision::BF16, 256, false, false>::STAGES : Tile<Precision::BF16, 128, false, false>::STAGES;
  return bn == 256 ? Tile<Precision::TF32, 256, false, false>::STAGES : Tile<Precision::TF32, 128, false, false>::STAGES;
}

// The current device's compute capability (major·10 + minor), asked once per device.
int current_cc() {
  static std::mutex mu;
  static std::map<int, int> known;
  int dev = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  std::lock_guard<std::mutex> lock(mu);
  auto it = known.find(dev);
  if (it != known.end()) return it->second;
  int major = 0, minor = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
  CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
  return known[dev] = major * 10 + minor;
}

}  // namespace

bool compiled() { return kCompiled; }

std::string refusal(const Problem& p, int cc) {
  if (!kCompiled) return "the GEMM engine's wgmma kernels are built only for sm_90 (invoke build --arch sm_90)";
  if (cc != 90) return "the GEMM engine's wgmma kernels need compute capability 9.0, the device has " +
                       std::to_string(cc / 10) + "." + std::to_string(cc % 10);
  if (p.prec != Precision::TF32 && p.prec != Precision::BF16) return "the GEMM engine computes tf32 and bf16 only";
  if (p.M < 1 || p.N < 1 || p.K < 1) return "M, N and K must be at least 1";
  const bool transformer_epi = p.epi == Epilogue::Bias || p.epi == Epilogue::BiasResidual || p.epi == Epilogue::BiasGeluSplit ||
                               p.epi == Epilogue::BiasGeluBf16;
  const bool k_major = p.a.major == Major::K && p.b.major == Major::K;
  if (p.split3 && (p.prec != Precision::TF32 || !k_major || p.K % 32))
    return "3xTF32 (split3) needs TF32, both operands K-major and K a multiple of 32";
  if (transformer_epi && !k_major) return "the bias, residual and GELU epilogues need both operands K-major";
  if (p.epi == Epilogue::BiasGeluSplit && p.prec != Precision::TF32) return "the GELU-split epilogue runs at TF32 only";
  if (p.epi == Epilogue::BiasGeluBf16 && p.prec != Precision::BF16) return "the GELU-bf16 epilogue runs at BF16 only";
  const long long k_stored = p.split3 ? 2LL * p.K : p.K;  // a K-major row's columns
  std::string why = operand_refusal("A", p.a, p.prec, p.a.major == Major::K ? k_stored : p.M);
  if (why.empty()) why = operand_refusal("B", p.b, p.prec, p.b.major == Major::K ? k_stored : p.N);
  if (!why.empty()) return why;
  if (p.epi == Epilogue::BiasGeluBf16) {
    if (!p.c_bf16 || p.ldc < p.N) return "the GELU-bf16 epilogue's c_bf16 is NULL or its ldc is shorter than N";
  } else if (!p.C || p.ldc < p.N) {
    return "C is NULL or its ldc is shorter than N";
  }
  if (p.epi == Epilogue::BiasGeluSplit && p.ldc < 2LL * p.N) return "the GELU-split epilogue needs ldc >= 2N (hi, then lo)";
  if ((p.epi == Epilogue::BiasRelu || transformer_epi) && !p.bias) return "a bias epilogue needs its bias";
  if (p.epi == Epilogue::BiasResidual && (!p.R || p.R == p.C)) return "the residual epilogue needs its R, apart from C";
  if (p.epi == Epilogue::Momentum && !p.vel) return "the momentum epilogue needs its velocity";
  return "";
}

Plan plan(const Problem& p, int sms) {
  sms = sms < 1 ? 1 : sms;
  Plan pl;
  // Transposes: an MN-major operand is copied K-major first at tf32 (wgmma reads tf32 K-major only)
  // or where TMA cannot read it; a bf16 one TMA can read is read as it is (run 2, PERFLOG, H100,
  // nsys: the transposed reads ran at the K-major rate, nn 4096^3 231 us against 233 us after a 35 us
  // copy, so a copy never pays).
  const bool amn = p.a.major == Major::MN, bmn = p.b.major == Major::MN;
  pl.transpose_a = amn && (p.prec == Precision::TF32 || !tma_readable(p.a, p.prec));
  pl.transpose_b = bmn && (p.prec == Precision::TF32 || !tma_readable(p.b, p.prec));
  const double rate = p.prec == Precision::TF32 ? 300e12 : 600e12;  // tf32 wgmma: half bf16's rate

  // Tile and split: the modelled time of each (BN, splits) is the waves of blocks over the SMs times
  // a block's time (its K steps at an SM's share of `rate`, plus kBlockUs of pipeline fill and
  // epilogue, plus writing its partial tile when split), plus the last block's sum of the
  // partials, read at kSmL2Bw by one SM. Ties keep BN 256 (A reloaded half as often) and fewer splits.
  constexpr double kBlockUs = 1.5, kSmL2Bw = 150e9;
  constexpr int kMaxSplits = 16;
  const int bk = 128 / (int)element_size(p.prec);
  const int k_steps = ((p.split3 ? 3 * p.K : p.K) + bk - 1) / bk;  // 3xTF32: three products of K
  const int tiles_m = (p.M + 127) / 128;
  double best = 0;
  bool have = false;
  for (int bn : {256, 128}) {
    if (bn == 256 && (p.N <= 128 || p.split3)) continue;  // 3xTF32: 128 x 128 tiles (two accumulator sets)
    const int tiles = tiles_m * ((p.N + bn - 1) / bn);
    const double step_us = 2.0 * 128 * bn * bk / (rate / sms) * 1e6;
    const double partial_us = 128.0 * bn * 4 / kSmL2Bw * 1e6;
    for (int s = 1; s <= kMaxSplits && s <= k_steps; ++s) {
      const int sps = (k_steps + s - 1) / s;
      if ((k_steps + sps - 1) / sps != s) continue;  // a split would have no K
      const long long blocks = (long long)tiles * s;
      const long long waves = (blocks + sms - 1) / sms;
      const double t = waves * (sps * step_us + kBlockUs + (s > 1 ? partial_us : 0)) + (s > 1 ? s * partial_us : 0);
      if (!have || t < best * 0.97) {
        best = t, have = true;
        pl.bn = bn, pl.tiles = tiles, pl.splits = s, pl.steps_per_split = sps, pl.model_us = t;
      }
    }
  }
  // The workspace: the copies, then split-K's partials and tickets.
  size_t off = 0;
  if (pl.transpose_a) off = align256(transposed_bytes(p.M, p.K, p.prec));
  pl.b_offset = off;
  if (pl.transpose_b) off = align256(off + transposed_bytes(p.N, p.K, p.prec));
  if (pl.splits > 1) {
    pl.partials_offset = off;
    off = align256(off + (size_t)pl.splits * pl.tiles * 128 * pl.bn * sizeof(float));
    pl.tickets_offset = off;
    off = align256(off + (size_t)pl.tiles * sizeof(unsigned));
  }
  pl.workspace_bytes = off;
  const int stages = stages_of(p.prec, pl.bn);
  pl.describe = std::string("wgmma ") + (p.split3 ? "3xtf32" : precision_name(p.prec)) + " 128x" + std::to_string(pl.bn) + "x" + std::to_string(bk) +
                ", " + std::to_string(stages) + " stages, " + std::to_string(pl.tiles) + " tiles";
  if (pl.splits > 1) pl.describe += ", split-K " + std::to_string(pl.splits) + " (" + std::to_string(pl.steps_per_split) + " steps)";
  if (pl.transpose_a || pl.transpose_b) {
    char mb[32];
    std::snprintf(mb, sizeof mb, "%.1f", (pl.transpose_b ? pl.b_offset + transposed_bytes(p.N, p.K, p.prec) : pl.b_offset) / 1e6);
    pl.describe += std::string("; ") + (pl.transpose_a && pl.transpose_b ? "A and B" : pl.transpose_a ? "A" : "B") +
                   " copied K-major first (" + mb + " MB)";
  }
  return pl;
}

void clear_tickets(const Plan& plan, void* workspace, cudaStream_t st) {
  if (plan.splits <= 1) return;
  if (!workspace) throw std::invalid_argument("sm90 GEMM engine: clear_tickets needs the plan's workspace");
  CUDA_CHECK(cudaMemsetAsync(static_cast<char*>(workspace) + plan.tickets_offset, 0, (size_t)plan.tiles * sizeof(unsigned), st));
}

void launch(const Problem& p, const Plan& plan, cudaStream_t st) {
  const std::string why = refusal(p, current_cc());
  if (!why.empty()) throw std::invalid_argument("sm90 GEMM engine: " + why);
  if (plan.workspace_bytes && (!p.workspace || p.workspace_size < plan.workspace_bytes))
    throw std::invalid_argument("sm90 GEMM engine: the plan needs " + std::to_string(plan.workspace_bytes) +
                                " bytes of workspace, the problem has " + std::to_string(p.workspace ? p.workspace_size : 0));
  set_smem_limits();
  Problem q = p;  // the operands as the kernel reads them
  char* ws = static_cast<char*>(p.workspace);
  if (plan.transpose_a) {
    if (p.prec == Precision::BF16) transpose_into<__nv_bfloat16>(p.a, p.K, p.M, ws, st);
    else transpose_into<float>(p.a, p.K, p.M, ws, st);
    q.a = {ws, transposed_ld(p.K), Major::K};
  }
  if (plan.transpose_b) {
    char* dst = ws + plan.b_offset;
    if (p.prec == Precision::BF16) transpose_into<__nv_bfloat16>(p.b, p.K, p.N, dst, st);
    else transpose_into<float>(p.b, p.K, p.N, dst, st);
    q.b = {dst, transposed_ld(p.K), Major::K};
  }
  if (p.prec == Precision::BF16) {
    if (plan.bn == 256) launch_majors<Precision::BF16, 256>(q, plan, st);
    else launch_majors<Precision::BF16, 128>(q, plan, st);
  } else if (p.split3) {
    launch_epi<Tile<Precision::TF32, 128, false, false, true>>(q, plan, st);  // plan(): bn 128
  } else {
    if (plan.bn == 256) launch_majors<Precision::TF32, 256>(q, plan, st);
    else launch_majors<Precision::TF32, 128>(q, plan, st);
  }
}

}  // namespace mlp::gemm::sm90
