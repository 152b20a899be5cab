// cuda/tools/mlp_fit.cu — build/mlp_fit: which configuration each kernel path gets on a device
// described by its limits, without a GPU (the same fit functions as mlp_train, cuda/paths/path_fit.h;
// no CUDA call is made). For the CPU tests and harness/studies/arch_resources.py's path table.
//
//   build/mlp_fit --cc 75 --sms 40 --smem-per-block 65536 --smem-per-sm 65536 --reserved 0
//                 --threads-per-sm 1024 [--max-blocks-per-sm 16] [--clusters 0|1] [--caps-from-env]
//
// prints one JSON object {"<path>": {"config": str|null, "skipped": str|null}, ...,
// "device_limits": {...}}; `--caps-from-env` applies the MLP_CAP_* variables first (a bad one:
// one line, exit 2). Registers are not known here (0): every kernel's launch bounds keep them
// within 64K per block (tests/test_arch_resources.py checks that per architecture).
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/common.h"
#include "common/json.h"
#include "paths/path_fit.h"
#include "kernels/stationary.cuh"
#include "kernels/tiled_plan.h"

using namespace mlp;

namespace {
constexpr int kStepwiseThreads = 256;  // the stepwise kernels' largest block (launch bounds, kEw)

std::string fit_json(const PathFit& f) {
  return Json::object()
      .set("config", f.runs() ? Json::str(f.config) : "null")
      .set("skipped", f.runs() ? "null" : Json::str(f.skipped))
      .done();
}

template <int CL, int U>
void add_stationary(std::vector<KernelNeeds>& n, std::vector<std::string>& l) {
  using C = wstat::Cfg<CL, U>;
  n.push_back(stationary_needs(CL, U, C::kClusters, (long long)C::kSmemBytes));
  l.push_back(stationary_label(CL, U, C::kClusters, (long long)C::kSmemBytes));
}

long long arg_num(const std::string& flag, const char* v) {
  char* end = nullptr;
  const long long n = v ? std::strtoll(v, &end, 10) : -1;
  if (!v || !*v || *end || n < 0) throw UserError(flag + ": expected a non-negative integer");
  return n;
}
}  // namespace

int main(int argc, char** argv) {
  try {
    DeviceLimits lim;
    lim.cooperative = true;
    bool from_env = false, have_cc = false;
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      if (a == "--caps-from-env") { from_env = true; continue; }
      const char* v = i + 1 < argc ? argv[++i] : nullptr;
      const long long n = arg_num(a, v);
      if (a == "--cc") lim.cc = (int)n, have_cc = true;
      else if (a == "--sms") lim.sms = (int)n;
      else if (a == "--smem-per-block") lim.smem_per_block_optin = n;
      else if (a == "--smem-per-sm") lim.smem_per_sm = n;
      else if (a == "--reserved") lim.reserved_smem_per_block = n;
      else if (a == "--threads-per-sm") lim.threads_per_sm = (int)n;
      else if (a == "--max-blocks-per-sm") lim.max_blocks_per_sm = (int)n;
      else if (a == "--clusters") lim.clusters = n != 0;
      else throw UserError("unknown option " + a);
    }
    if (!have_cc || !lim.sms || !lim.smem_per_block_optin || !lim.smem_per_sm || !lim.threads_per_sm)
      throw UserError("give --cc, --sms, --smem-per-block, --smem-per-sm and --threads-per-sm");
    if (from_env) lim = apply_caps(lim, read_caps([](const char* n) -> const char* { return std::getenv(n); }));

    Json out = Json::object();
    PathFit persistent2_fit;  // persistent2-tf32 and -bf16: the same kernel shape, last in the registry
    const PathFit step = choose({stepwise_needs("stepwise kernels", kStepwiseThreads, 0)}, {"ordinary launches"}, lim);
    out.set("unfused", fit_json(step)).set("fused", fit_json(step)).set("graph", fit_json(step));
    for (bool two : {false, true}) {
      std::vector<KernelNeeds> n;
      std::vector<std::string> l;
      for (const PersistentCandidate& c : persistent_candidates(kRecipeShape, two)) {
        n.push_back(c.needs);
        l.push_back(c.label);
      }
      const PathFit f = choose(n, l, lim);
      out.set(two ? "persistent2" : "persistent", fit_json(f));
      if (two) persistent2_fit = f;
    }
    std::vector<KernelNeeds> n;
    std::vector<std::string> l;
    add_stationary<8, 16>(n, l);  // wstat::kShapes, in its order (stationary_path.cu asserts it)
    add_stationary<8, 20>(n, l);
    add_stationary<4, 12>(n, l);
    const PathFit stationary = choose(n, l, lim);
    out.set("stationary", fit_json(stationary));
    out.set("stationary-tf32", fit_json(stationary));  // the same kernel shape with one MMA a product
    out.set("stationary-bf16", fit_json(stationary));
    // tiled: ordinary launches of at most 256 threads and its GEMMs' 32 KiB of static shared memory;
    // tiled-tf32 and tiled-bf16 the same with the tensor-core GEMMs' 34 KiB (two stages of 16 rows of
    // 128 + 8 floats for each operand), on compute capability 8.0 and later.
    using mlp::Precision;
    for (Precision prec : {Precision::FP32, Precision::TF32, Precision::BF16}) {
      const std::string name = prec == Precision::FP32 ? "tiled" : std::string("tiled-") + mlp::precision_name(prec);
      const size_t smem = prec == Precision::FP32 ? 32769 : 2 * 2 * 16 * (128 + 8) * sizeof(float);
      PathFit fit = choose({stepwise_needs("tiled kernels", 256, smem)}, {"ordinary launches"}, lim);
      const std::string refusal = mlp::tiled::tensor_core_refusal(name, prec, lim.cc);
      if (!refusal.empty()) fit = PathFit{-1, "", refusal};
      if (fit.runs()) fit.config = mlp::tiled::tiled_config(kRecipeShape.in, kRecipeShape.hidden, kRecipeBatch, lim.sms, prec);
      out.set(name, fit_json(fit));
    }
    // the same kernel shape as persistent2's, its staged inputs rounded (kernels/persistent.cuh)
    out.set("persistent2-tf32", fit_json(persistent2_fit)).set("persistent2-bf16", fit_json(persistent2_fit));
    out.set("device_limits", device_limits_json(lim));
    std::printf("%s\n", out.done().c_str());
    return 0;
  } catch (const UserError& e) {
    std::fprintf(stderr, "mlp_fit: error: %s\n", one_line(e.what()).c_str());
    return 2;
  }
}
