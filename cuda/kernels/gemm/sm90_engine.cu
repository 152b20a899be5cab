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

// A transposed operand's row pitch in the workspace (elements: 16 bytes at either precision) and
// where B's copy starts (after A's, 256-byte aligned).
long long transposed_ld(int K) { return ((long long)K + 7) / 8 * 8; }
size_t transposed_bytes(int rows, int K, Precision prec) { return (size_t)rows * transposed_ld(K) * element_size(prec); }
size_t b_offset(const Plan& pl, const Problem& p) {
  return pl.transpose_a ? (transposed_bytes(p.M, p.K, p.prec) + 255) / 256 * 256 : 0;
}

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
  const CUtensorMap& ma = p.a.major == Major::K
                              ? tensor_map(p.a.p, p.prec, p.K, p.M, p.a.ld, TL::BK, TL::BM)
                              : tensor_map(p.a.p, p.prec, p.M, p.K, p.a.ld, TL::MN_BOX, TL::BK);
  const CUtensorMap& mb = p.b.major == Major::K
                              ? tensor_map(p.b.p, p.prec, p.K, p.N, p.b.ld, TL::BK, TL::BN)
                              : tensor_map(p.b.p, p.prec, p.N, p.K, p.b.ld, TL::MN_BOX, TL::BK);
  static bool attribute_set = false;  // per instantiation
  if (!attribute_set) {
    CUDA_CHECK(cudaFuncSetAttribute(k_sm90_gemm<TL, EPI>, cudaFuncAttributeMaxDynamicSharedMemorySize, TL::SMEM));
    attribute_set = true;
  }
  Args args{p.M, p.N, p.K, p.C, p.ldc, p.bias, p.vel, p.lr, p.mu};
  k_sm90_gemm<TL, EPI><<<plan.tiles, TL::THREADS, TL::SMEM, st>>>(ma, mb, args);
  CUDA_CHECK_LAUNCH("k_sm90_gemm");
}

template <class TL>
void launch_epi(const Problem& p, const Plan& plan, cudaStream_t st) {
  switch (p.epi) {
    case Epilogue::Store: return launch_tile<TL, Epilogue::Store>(p, plan, st);
    case Epilogue::BiasRelu: return launch_tile<TL, Epilogue::BiasRelu>(p, plan, st);
    case Epilogue::Momentum: return launch_tile<TL, Epilogue::Momentum>(p, plan, st);
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
  std::string why = operand_refusal("A", p.a, p.prec, p.a.major == Major::K ? p.K : p.M);
  if (why.empty()) why = operand_refusal("B", p.b, p.prec, p.b.major == Major::K ? p.K : p.N);
  if (!why.empty()) return why;
  if (!p.C || p.ldc < p.N) return "C is NULL or its ldc is shorter than N";
  if (p.epi == Epilogue::BiasRelu && !p.bias) return "the bias + ReLU epilogue needs its bias";
  if (p.epi == Epilogue::Momentum && !p.vel) return "the momentum epilogue needs its velocity";
  return "";
}

Plan plan(const Problem& p, int sms) {
  auto tiles = [&](int bn) { return ((p.M + 127) / 128) * ((p.N + bn - 1) / bn); };
  Plan pl;
  // Modelled time: the waves of tiles over the SMs times a tile's work (BN 128 half of BN 256's);
  // a tie takes 256, whose tiles reload A half as often.
  auto waves = [&](int bn) { return (tiles(bn) + sms - 1) / sms; };
  pl.bn = p.N > 128 && 2 * waves(256) <= waves(128) ? 256 : 128;
  pl.tiles = tiles(pl.bn);
  // Transposes: every MN-major operand at tf32 or where TMA cannot read it; at bf16 otherwise the
  // cheaper of reading it transposed and copying it first, by a model from run 1 (PERFLOG, H100):
  // the K-major kernel at kRate, the transposed forms at kRateBmn (B only) and kRateAmn (A), a copy
  // costing a launch and its bytes twice at kCopyBw.
  constexpr double kRate = 600e12, kRateBmn = 0.84 * kRate, kRateAmn = 0.48 * kRate, kCopyBw = 2.5e12, kLaunch = 4e-6;
  const bool amn = p.a.major == Major::MN, bmn = p.b.major == Major::MN;
  const bool must_a = amn && (p.prec == Precision::TF32 || !tma_readable(p.a, p.prec));
  const bool must_b = bmn && (p.prec == Precision::TF32 || !tma_readable(p.b, p.prec));
  const double flop = 2.0 * p.M * p.N * p.K;
  double best = 0;
  bool have = false;
  for (int ta = 0; ta <= (amn ? 1 : 0); ++ta)
    for (int tb = 0; tb <= (bmn ? 1 : 0); ++tb) {
      if ((must_a && !ta) || (must_b && !tb)) continue;
      const bool a_read_mn = amn && !ta, b_read_mn = bmn && !tb;
      double t = flop / (a_read_mn ? kRateAmn : b_read_mn ? kRateBmn : kRate);
      if (ta) t += kLaunch + 2.0 * transposed_bytes(p.M, p.K, p.prec) / kCopyBw;
      if (tb) t += kLaunch + 2.0 * transposed_bytes(p.N, p.K, p.prec) / kCopyBw;
      if (!have || t < best) best = t, have = true, pl.transpose_a = ta, pl.transpose_b = tb;
    }
  pl.workspace_bytes = b_offset(pl, p) + (pl.transpose_b ? transposed_bytes(p.N, p.K, p.prec) : 0);
  const int bk = 128 / (int)element_size(p.prec);
  const int stages = stages_of(p.prec, pl.bn);
  pl.describe = std::string("wgmma ") + precision_name(p.prec) + " 128x" + std::to_string(pl.bn) + "x" + std::to_string(bk) +
                ", " + std::to_string(stages) + " stages, " + std::to_string(pl.tiles) + " tiles";
  if (pl.transpose_a || pl.transpose_b) {
    char mb[32];
    std::snprintf(mb, sizeof mb, "%.1f", pl.workspace_bytes / 1e6);
    pl.describe += std::string("; ") + (pl.transpose_a && pl.transpose_b ? "A and B" : pl.transpose_a ? "A" : "B") +
                   " copied K-major first (" + mb + " MB)";
  }
  return pl;
}

void launch(const Problem& p, const Plan& plan, cudaStream_t st) {
  const std::string why = refusal(p, current_cc());
  if (!why.empty()) throw std::invalid_argument("sm90 GEMM engine: " + why);
  if (plan.workspace_bytes && (!p.workspace || p.workspace_size < plan.workspace_bytes))
    throw std::invalid_argument("sm90 GEMM engine: the plan needs " + std::to_string(plan.workspace_bytes) +
                                " bytes of workspace, the problem has " + std::to_string(p.workspace ? p.workspace_size : 0));
  Problem q = p;  // the operands as the kernel reads them
  char* ws = static_cast<char*>(p.workspace);
  if (plan.transpose_a) {
    if (p.prec == Precision::BF16) transpose_into<__nv_bfloat16>(p.a, p.K, p.M, ws, st);
    else transpose_into<float>(p.a, p.K, p.M, ws, st);
    q.a = {ws, transposed_ld(p.K), Major::K};
  }
  if (plan.transpose_b) {
    char* dst = ws + b_offset(plan, p);
    if (p.prec == Precision::BF16) transpose_into<__nv_bfloat16>(p.b, p.K, p.N, dst, st);
    else transpose_into<float>(p.b, p.K, p.N, dst, st);
    q.b = {dst, transposed_ld(p.K), Major::K};
  }
  if (p.prec == Precision::BF16) {
    if (plan.bn == 256) launch_majors<Precision::BF16, 256>(q, plan, st);
    else launch_majors<Precision::BF16, 128>(q, plan, st);
  } else {
    if (plan.bn == 256) launch_majors<Precision::TF32, 256>(q, plan, st);
    else launch_majors<Precision::TF32, 128>(q, plan, st);
  }
}

}  // namespace mlp::gemm::sm90
