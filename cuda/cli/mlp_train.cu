// cuda/cli/mlp_train.cu — mlp_train: gates the linked submission (cases 1–7), times every kernel
// path (case 8) and writes results/run.json. Parse (cuda/io/options.h) → load and check every input
// before the GPU is touched (cuda/io/inputs.h) → bring up the GPU (cuda/paths/device.h) → one mode
// (cuda/cli/modes.h). Exit statuses: cuda/common/exit_status.h.
#include <cstdio>
#include <new>
#include <string>
#include <vector>

#include "common/common.h"
#include "common/cuda_check.h"
#include "common/declared_precision.h"
#include "paths/device.h"
#include "cli/gpu_section.h"
#include "common/exit_status.h"
#include "io/inputs.h"
#include "cli/modes.h"
#include "io/options.h"
#include "paths/kernel_path.h"
#include "paths/registry.h"
#include "cli/run_json.h"
#include "cli/submission_info.h"
#include "paths/train_loop.h"

namespace {

int run_main(int argc, char** argv) {
  const Options opt = parse_args(std::vector<std::string>(argv + 1, argv + argc));
  if (opt.help) {
    std::fputs(usage().c_str(), stdout);
    return kExitPass;
  }
  // The opt-in paths run only when named in --paths or --profile (paths/registry.h).
  const PathCatalog catalog{default_path_names(linked_submission_is_external()), opt_in_path_names()};
  // The submission's declared precision: an answer out of range is bad input, before anything is read.
  const mlp::DeclaredPrecision precision = mlp::declared_precision();
  // The course's scheduler may hand this run the GPU alone for its work (cli/gpu_section.h).
  GpuSection section = GpuSection::from_env();
  const RunInputs in = load_inputs(opt, catalog);
  if (precision.precision != mlp::Precision::FP32)
    std::fprintf(stderr, "submission: %s: cases 1, 2, 4 and 9 at its tolerances (u_p = %s)\n",
                 precision.source().c_str(), mlp::unit_roundoff_text(precision.precision));

  const cudaDeviceProp prop = select_device();
  std::fprintf(stderr, "GPU: %s (sm_%d%d, %d SMs)\n", prop.name, prop.major, prop.minor, prop.multiProcessorCount);
  CUDA_CHECK(cudaFree(nullptr));  // the context exists before the memory baseline is read
  section.begin();                // the start above runs beside others; from here the GPU is ours alone
  memory_watch().start();
  const DeviceData dd(in.data);
  // The gated path: the submission's own epoch when a learner's file is linked, else our fused path.
  const RunContext ctx{in, prop, dd, linked_submission_source(), linked_submission_is_external() ? kSubmissionPath : "fused",
                       command_line(argc, argv), precision};

  const int status = !opt.profile.empty()             ? run_profile(ctx)
                     : !opt.stages.empty()              ? run_stages(ctx)
                     : !opt.sanitizer_workload.empty()  ? run_sanitizer_workload_mode(ctx)
                     : opt.quick                        ? run_quick(ctx)
                     : opt.perf_only                    ? run_perf_only(ctx)
                                                        : run_gate(ctx);
  section.end();  // the GPU shared again: what is left is the process's exit
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run_main(argc, argv);
  } catch (const UserError& e) {
    print_error("mlp_train", "error", e.what());
    return kExitBadInput;
  } catch (const CudaError& e) {
    print_error("mlp_train", "CUDA error", e.what());
    return kExitCudaError;
  } catch (const std::bad_alloc& e) {
    print_error("mlp_train", "internal error", std::string("out of host memory (") + e.what() + ")");
    return kExitInternal;
  } catch (const std::exception& e) {
    print_error("mlp_train", "internal error", e.what());
    return kExitInternal;
  } catch (...) {
    print_error("mlp_train", "internal error", "unknown exception");
    return kExitInternal;
  }
}
