#include "paths/path_fit.h"
#include "paths/registry.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "common/common.h"
#include "common/json.h"
#include "kernels/persistent_sizes.h"

namespace mlp {

namespace {
struct CapSpec {
  const char* name;
  long long lo, hi;
  const char* what;
};
constexpr CapSpec kCaps[] = {
    {"MLP_CAP_SMEM_PER_BLOCK", 1024, 1LL << 30, "bytes of shared memory per block"},
    {"MLP_CAP_SMS", 1, 1 << 20, "multiprocessors"},
    {"MLP_CAP_THREADS_PER_SM", 32, 1 << 20, "threads per multiprocessor"},
    {"MLP_CAP_CC", 50, 1000, "compute capability as major*10 + minor"},
};

std::string num(long long v) { return std::to_string(v); }
}  // namespace

std::vector<std::pair<std::string, long long>> read_caps(EnvLookup getenv) {
  std::vector<std::pair<std::string, long long>> out;
  for (const CapSpec& c : kCaps) {
    const char* v = getenv(c.name);
    if (!v) continue;
    const std::string s(v);
    bool digits = !s.empty() && s.size() <= 12;
    for (char ch : s) digits &= ch >= '0' && ch <= '9';
    const long long n = digits ? std::strtoll(s.c_str(), nullptr, 10) : -1;
    if (!digits || n < c.lo || n > c.hi)
      throw UserError(std::string(c.name) + "='" + one_line(s) + "': expected a decimal integer in [" + num(c.lo) +
                      ", " + num(c.hi) + "] (" + c.what + "), or leave it unset");
    out.emplace_back(c.name, n);
  }
  return out;
}

DeviceLimits apply_caps(DeviceLimits lim, const std::vector<std::pair<std::string, long long>>& caps) {
  for (const auto& [name, v] : caps) {
    if (name == "MLP_CAP_SMEM_PER_BLOCK") {
      lim.smem_per_block_optin = std::min(lim.smem_per_block_optin, v);
      lim.smem_per_sm = std::min(lim.smem_per_sm, v + lim.reserved_smem_per_block);
    } else if (name == "MLP_CAP_SMS") {
      lim.sms = (int)std::min<long long>(lim.sms, v);
    } else if (name == "MLP_CAP_THREADS_PER_SM") {
      lim.threads_per_sm = (int)std::min<long long>(lim.threads_per_sm, v);
    } else if (name == "MLP_CAP_CC") {
      lim.cc = (int)std::min<long long>(lim.cc, v);
      if (lim.cc < 90) lim.clusters = false;  // clusters are compute capability 9.0 and later
    }
  }
  lim.capped = caps;
  return lim;
}

int resident_blocks(const KernelNeeds& k, const DeviceLimits& lim) {
  if (k.threads < 1) return 0;
  const int warps = (k.threads + 31) / 32;
  int n = std::min(lim.max_blocks_per_sm, lim.threads_per_sm / (warps * 32));
  if (k.regs > 0) {
    const int per_warp = (k.regs * 32 + 255) / 256 * 256;  // allocated per warp in units of 256
    n = std::min(n, (lim.regs_per_sm / 4 / per_warp) * 4 / warps);  // four sub-partitions
  }
  const long long smem = k.dynamic_smem + k.static_smem + lim.reserved_smem_per_block;
  if (smem > 0) n = (int)std::min<long long>(n, lim.smem_per_sm / smem);
  if (k.device_blocks_per_sm >= 0) n = std::min(n, k.device_blocks_per_sm);
  return std::max(n, 0);
}

int resident_clusters(const KernelNeeds& k, const DeviceLimits& lim) {
  if (k.cluster < 1) return 0;
  int n = lim.sms * resident_blocks(k, lim) / k.cluster;  // clusters never span an SM's blocks twice
  if (k.device_max_clusters >= 0) n = std::min(n, k.device_max_clusters);
  return n;
}

std::string why_not(const KernelNeeds& k, const DeviceLimits& lim) {
  auto cc = [](int v) { return std::to_string(v / 10) + "." + std::to_string(v % 10); };
  if (lim.cc < k.min_cc) return "needs compute capability " + cc(k.min_cc) + ", device has " + cc(lim.cc);
  if (k.cluster > 0 && !lim.clusters) return "needs thread-block clusters (sm_90+), device has none";
  if (k.cooperative && !lim.cooperative) return "needs cooperative launch, device has none";
  if (!k.refused.empty()) return "the device refused its configuration (" + k.refused + ")";
  if (k.threads > lim.threads_per_block)
    return num(k.threads) + " threads per block > " + num(lim.threads_per_block);
  if (k.static_smem > 48 * 1024) return num(k.static_smem) + " B static shared memory per block > 49152";
  const long long smem = k.dynamic_smem + k.static_smem;
  if (smem > lim.smem_per_block_optin)
    return num(smem) + " B shared memory per block > " + num(lim.smem_per_block_optin);
  if (k.regs > 0 && k.regs * (long long)((k.threads + 31) / 32 * 32) > lim.regs_per_sm)
    return num(k.regs) + " registers x " + num(k.threads) + " threads > " + num(lim.regs_per_sm) + " per SM";
  const int blocks = resident_blocks(k, lim);
  if (blocks < std::max(1, k.blocks_per_sm))
    return num(std::max(1, k.blocks_per_sm)) + " block(s) of " + num(k.threads) + " threads and " + num(smem) +
           " B per SM needed, " + num(blocks) + " fit (" + num(lim.threads_per_sm) + " threads, " +
           num(lim.smem_per_sm) + " B shared per SM)";
  if (k.cluster > 0) {
    const int have = resident_clusters(k, lim);
    if (have < k.clusters)
      return num(k.clusters) + " co-resident clusters of " + num(k.cluster) + " needed (" + num(k.clusters * k.cluster) +
             " SMs), " + num(have) + " fit (" + num(lim.sms) + " SMs" +
             (k.device_max_clusters >= 0 ? ", device max active " + num(k.device_max_clusters) : std::string()) + ")";
  }
  return "";
}

PathFit choose(const std::vector<KernelNeeds>& candidates, const std::vector<std::string>& labels,
               const DeviceLimits& lim) {
  PathFit f;
  std::string reasons;
  std::vector<std::string> whys;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const std::string why = why_not(candidates[i], lim);
    const std::string label = i < labels.size() ? labels[i] : candidates[i].kernel;
    if (why.empty()) {
      f.choice = (int)i;
      f.config = label;
      return f;
    }
    whys.push_back(why);
    reasons += (reasons.empty() ? "" : "; ") + (candidates.size() > 1 ? label + ": " : std::string()) + why;
  }
  // One reason for every candidate (no clusters, say) is said once.
  const bool same = !whys.empty() && std::all_of(whys.begin(), whys.end(), [&](const std::string& w) { return w == whys[0]; });
  f.skipped = candidates.empty() ? "no configuration declared" : same ? whys[0] : reasons;
  return f;
}

KernelNeeds stepwise_needs(const std::string& kernel, int threads, long long static_smem) {
  KernelNeeds k;
  k.kernel = kernel;
  k.threads = threads;
  k.static_smem = static_smem;
  return k;
}

std::vector<PersistentCandidate> persistent_candidates(MlpShape s, bool two_barriers) {
  std::vector<PersistentCandidate> out;
  auto add = [&](int ka) {
    PersistentCandidate c;
    c.ka = ka;
    c.needs.kernel = two_barriers ? "k_persistent2_epoch" : "k_persistent_epoch";
    c.needs.dynamic_smem = (long long)persistent_smem_bytes(s.in, two_barriers, ka ? ka : kMaxKA);
    c.needs.threads = kThreads;
    c.needs.cooperative = true;
    c.needs.blocks_per_sm = 1;
    const std::string bytes = num(c.needs.dynamic_smem) + " B shared/block";
    c.label = ka ? "K chunk " + num(ka) + " (" + bytes + ")" : bytes;
    out.push_back(c);
  };
  if (two_barriers) {
    add(0);
  } else {
    add(kMaxKA);
    if (s.in > kSmallKA) add(kSmallKA);  // at s.in <= 512 both chunks stage the same
  }
  return out;
}

KernelNeeds stationary_needs(int cl, int u, int clusters, long long smem) {
  KernelNeeds k;
  k.kernel = "k_stationary_epoch<" + num(cl) + "," + num(u) + ">";
  k.dynamic_smem = smem;
  k.threads = 256;
  k.min_cc = 90;
  k.blocks_per_sm = 0;
  k.cluster = cl;
  k.clusters = clusters;
  return k;
}

std::string stationary_label(int cl, int u, int clusters, long long smem) {
  return "<" + num(cl) + "," + num(u) + ">: " + num(clusters) + " clusters of " + num(cl) + " (" +
         num(smem) + " B shared/block)";
}

std::string stationary_problem_unsupported(MlpShape s, int batch) {
  if (s.in != 784 || s.hidden != 256 || s.out != 10)
    return "needs the 784-256-10 shape, got " + num(s.in) + "-" + num(s.hidden) + "-" + num(s.out);
  if (batch > 128) return "needs batch <= 128, got " + num(batch);
  return "";
}

std::string device_limits_json(const DeviceLimits& lim) {
  Json caps = Json::object();
  for (const auto& [name, v] : lim.capped) caps.set(name, Json::num(v));
  return Json::object()
      .set("smem_per_block_optin", Json::num(lim.smem_per_block_optin)).set("sms", Json::num(lim.sms))
      .set("threads_per_sm", Json::num(lim.threads_per_sm))
      .set("compute_capability", Json::str(std::to_string(lim.cc / 10) + "." + std::to_string(lim.cc % 10)))
      .set("smem_per_sm", Json::num(lim.smem_per_sm)).set("cooperative", Json::boolean(lim.cooperative))
      .set("clusters", Json::boolean(lim.clusters)).set("capped", caps.done())
      .done();
}

}  // namespace mlp

std::string path_registry_json() {
  Json a = Json::array();
  for (const auto& p : path_registry())
    a.add(Json::object().set("name", Json::str(p.name)).set("default", Json::boolean(p.in_default_set))
              .set("what", Json::str(p.what)).done());
  return a.done();
}
