// dev/stationary/variants.cuh — launches of k_stationary_variant<CL, U, V> for the dev variants
// (dev/stationary/variant_ops.cuh's kV* bits, probe::kVProbe) with the plan of stationary_prepare,
// the phase report of a recorded epoch and the record results/stationary_phases.json. Included
// by dev/stationary/stationary_epoch.cu after probe.cuh, variant_kernel.cuh and
// cuda/paths/stationary_path.cuh.
#pragma once
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace variants {
using namespace mlp::wstat;

template <int CL, int U, int V>
cudaError_t launch(mlp::StationaryPlan* p, const Args& args) {
  using C = Cfg<CL, U>;
  static bool attr_set = false;
  if (!attr_set) {
    const cudaError_t e = cudaFuncSetAttribute(k_stationary_variant<CL, U, V>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)C::kSmemBytes);
    if (e != cudaSuccess) return e;
    attr_set = true;
  }
  cudaLaunchAttribute attr[2];
  const cudaLaunchConfig_t cfg = mlp::wstat::cluster_launch_config<CL, U>(attr, p->cooperative);
  return cudaLaunchKernelEx(&cfg, k_stationary_variant<CL, U, V>, args);
}

// stationary_epoch's semantics for variant V (the shapes <8,20> and <4,12> only).
template <int V>
int epoch(mlp::StationaryPlan* p, float* params, float* velocity, const int* labels, const int* order, int n, int batch,
          float lr, float mu, float* step_loss, int* pad_check) {
  Args args{params, velocity, p->xb, labels, order, n, batch, lr, mu, step_loss, p->slots, p->counters, p->arrivals, p->error_flag, pad_check};
  cudaError_t e = cudaErrorInvalidValue;
  if (p->cluster == 8 && p->units == 20) e = launch<8, 20, V>(p, args);
  else if (p->cluster == 4 && p->units == 12) e = launch<4, 12, V>(p, args);
  if (e != cudaSuccess) return MLP_ERR_CUDA;
  p->arrivals += (unsigned)p->clusters * (unsigned)((n + batch - 1) / batch);
  return MLP_OK;
}

using EpochFn = int (*)(mlp::StationaryPlan*, float*, float*, const int*, const int*, int, int, float, float, float*, int*);
struct Variant {
  const char* name;
  int bits;
  EpochFn fn;
};
// Variants whose sums have the same order give the same bits: the family of a variant is its
// kVTile, kVMma and kVRcp bits (the bits that change an order or a rounding); each is checked
// bitwise against the first full epoch of its family (the shipped launch's, for the shipped family).
constexpr int family(int bits) { return bits & (kVTile | kVMma | kVRcp); }
constexpr int kShip = kShippedV;
// The CUDA-core form shipped before kVMma (results of daebcbd): tile + nofence + fastconv + conv2.
constexpr int kCores = kVTile | kVNoFence | kVFastConv | kVConv2;
// (The variants measured in earlier rounds, nofence, tile+nofence and tile+nofence+fastconv, and
// their numbers are in docs/PERFLOG.md; they stay buildable by their bits.)
constexpr int kRel = kCores | kVMma | kVH2 | kVRel7;
inline const std::vector<Variant>& list() {
  static const std::vector<Variant> v = {
      {"V=0 (untiled, the first form)", 0, epoch<0>},
      {"cores: tile+nofence+fastconv+conv2", kCores, epoch<kCores>},
      {"mma: cores with tensor-core F1 and G", kCores | kVMma, epoch<kCores | kVMma>},
      {"probe cores", probe::kVProbe | kCores, epoch<probe::kVProbe | kCores>},
      {"mma+h2+rel7", kRel, epoch<kRel>},
      {"mma+h2+rel7+rcp", kRel | kVRcp, epoch<kRel | kVRcp>},
      {"shipped: mma+h2+rel7+rcp+prefetch", kShip, epoch<kShip>},
      {"probe shipped", probe::kVProbe | kShip, epoch<probe::kVProbe | kShip>},
  };
  return v;
}

inline double median(std::vector<double> x) {
  if (x.empty()) return 0;
  std::sort(x.begin(), x.end());
  const size_t n = x.size();
  return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

struct PhaseRow {
  const char* name;
  double slowest_us, mean_us;
};
struct PhaseTable {
  std::vector<PhaseRow> rows;  // marks 1 .. kMarks-1
  double step_us = 0, skew_us = 0;
};

// The phase table of one recorded epoch: marks [steps][grid][kSlots][2] (clock64, ns); printed
// and returned.
inline PhaseTable report(const std::vector<unsigned long long>& mk, int steps, int grid, int cl) {
  PhaseTable out;
  static const char* names[kMarks] = {"top",
                                      "F1: products (+top of step)",
                                      "F1: shuffle reduce",
                                      "F1: DSMEM push",
                                      "cluster barrier A",
                                      "F2: H = ReLU(sum)",
                                      "F2: logits to slots (+sync)",
                                      "release (fence, red)",
                                      "next inputs to floats",
                                      "counter wait (acquire)",
                                      "S: slots, softmax, dZ",
                                      "D: dH, dW2 pushes",
                                      "cluster barrier B",
                                      "G: dW1 products",
                                      "G: shuffle reduce",
                                      "update (+W2 beside)"};
  // (kVTile: "G" is thread 0's products and shuffles, "update" its update and the wait for the
  // other warps, warp 7's W2 update included.)
  auto at = [&](int t, int b, int m, int w) { return mk[(((size_t)t * grid + b) * probe::kSlots + m) * 2 + w]; };
  const int st = std::min(steps, probe::kMaxSteps);
  // Cycles per ns per block, over the whole recorded epoch (clock64 is per SM; %globaltimer global).
  std::vector<double> ghz((size_t)grid);
  double gran = 1e300;
  for (int b = 0; b < grid; ++b) {
    const double dc = (double)(at(st - 1, b, kMEnd, 0) - at(0, b, kMTop, 0));
    const double dn = (double)(at(st - 1, b, kMEnd, 1) - at(0, b, kMTop, 1));
    ghz[(size_t)b] = dn > 0 ? dc / dn : 1.98;
    for (int t = 0; t < st; ++t)
      for (int m = 1; m < kMarks; ++m) {
        const double d = (double)(at(t, b, m, 1) - at(t, b, m - 1, 1));
        if (d > 0) gran = std::min(gran, d);
      }
  }
  double gm = 0;
  for (double g : ghz) gm += g;
  gm /= grid;
  std::printf("  phases (clock64 of thread 0 after each phase's barrier; %d steps; SM clock %.3f GHz from clock64/globaltimer;\n"
              "  globaltimer: smallest non-zero step %.0f ns): median over steps of the slowest block | the mean block, us\n",
              st, gm, gran);
  double s_slow = 0, s_mean = 0;
  for (int m = 1; m < kMarks; ++m) {
    std::vector<double> slow, mean;
    for (int t = 0; t < st; ++t) {
      double mx = 0, sum = 0;
      for (int b = 0; b < grid; ++b) {
        const double us = (double)(at(t, b, m, 0) - at(t, b, m - 1, 0)) / ghz[(size_t)b] / 1000.0;
        mx = std::max(mx, us);
        sum += us;
      }
      slow.push_back(mx);
      mean.push_back(sum / grid);
    }
    const double a = median(slow), b = median(mean);
    s_slow += a;
    s_mean += b;
    std::printf("    %-30s %7.3f | %7.3f\n", names[m], a, b);
    out.rows.push_back(PhaseRow{names[m], a, b});
  }
  std::vector<double> step_us, skew, skew_all, lat;
  for (int t = 0; t < st; ++t) {
    double worst = 0, lo = 1e300, hi = 0, l = 0;
    for (int r = 0; r < cl; ++r) {
      double rlo = 1e300, rhi = 0, dlo = 1e300;
      for (int b = r; b < grid; b += cl) {
        const double ar = (double)at(t, b, kMArrive, 1), dn = (double)at(t, b, kMDone, 1);
        rlo = std::min(rlo, ar); rhi = std::max(rhi, ar); dlo = std::min(dlo, dn);
      }
      worst = std::max(worst, rhi - rlo);
      lo = std::min(lo, rlo); hi = std::max(hi, rhi);
      l = std::max(l, dlo - rhi);
    }
    skew.push_back(worst / 1000.0);
    skew_all.push_back((hi - lo) / 1000.0);
    lat.push_back(l / 1000.0);
    if (t > 0) {
      double mx = 0;
      for (int b = 0; b < grid; ++b) mx = std::max(mx, (double)(at(t, b, kMTop, 1) - at(t - 1, b, kMTop, 1)));
      step_us.push_back(mx / 1000.0);
    }
  }
  std::printf("    %-30s %7.3f | %7.3f   (step top to top, slowest block, globaltimer: %.3f)\n", "sum", s_slow, s_mean, median(step_us));
  std::printf("  arrival skew at the counter wait (globaltimer, median over steps): within a rank group %.3f us, whole grid %.3f us;\n"
              "  last arrival -> first block past the wait (worst rank group) %.3f us\n",
              median(skew), median(skew_all), median(lat));
  out.step_us = median(step_us);
  out.skew_us = median(skew);
  return out;
}

// results/stationary_phases.json (docs/formats.md): temp file, then rename.
inline bool write_phases_json(const std::string& path, const char* commit, double step_us, const PhaseTable& pt,
                              const std::vector<std::string>& names, const std::vector<double>& us,
                              const std::vector<double>& cv, const std::vector<bool>& shipped) {
  const std::string tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "w");
  if (!f) return false;
  std::fprintf(f, "{\"schema\": 1, \"source\": \"dev/stationary/stationary_epoch.cu\", \"kernel\": \"stationary\", \"shape\": \"<8,20>\",\n");
  if (commit) std::fprintf(f, " \"commit\": \"%s\",", commit);
  else std::fprintf(f, " \"commit\": null,");
  std::fprintf(f, " \"step_us\": %.4f,\n \"phases\": [", step_us);
  for (size_t i = 0; i < pt.rows.size(); ++i)
    std::fprintf(f, "%s\n  {\"name\": \"%s\", \"slowest_us\": %.4f, \"mean_us\": %.4f}", i ? "," : "", pt.rows[i].name,
                 pt.rows[i].slowest_us, pt.rows[i].mean_us);
  std::fprintf(f, "],\n \"wait_skew_us\": %.4f,\n \"variants\": [", pt.skew_us);
  bool first = true;
  for (size_t i = 0; i < names.size(); ++i) {
    if (us[i] < 0) continue;  // failed a check: not timed
    std::fprintf(f, "%s\n  {\"name\": \"%s\", \"us_per_step\": %.4f, \"cv_pct\": %.3f, \"shipped\": %s}", first ? "" : ",",
                 names[i].c_str(), us[i], cv[i], shipped[i] ? "true" : "false");
    first = false;
  }
  std::fprintf(f, "]}\n");
  const bool ok = std::fflush(f) == 0 && !std::ferror(f);
  if (std::fclose(f) != 0 || !ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return false;
  }
  return true;
}
}  // namespace variants
